/*
 * libcurl through dlopen (see curl_lazy.h). Each forwarding function loads the library on
 * first use; when it cannot be loaded, init functions fail (CURLE_FAILED_INIT, NULL) and the
 * controller reports the error instead of the process failing to start.
 */
#define _GNU_SOURCE
#include "control/curl_lazy.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* The functions used, resolved once. */
static struct {
    CURLcode (*global_init)(long);
    void (*global_cleanup)(void);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    char *(*easy_escape)(CURL *, const char *, int);
    void (*free)(void *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned, int, int *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLMcode (*multi_cleanup)(CURLM *);
} fn;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool loaded;
static const char *load_error = "libcurl.so.4 not loaded";

static void load(void)
{
    void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        load_error = dlerror();
        return;
    }
    /* POSIX: a void * from dlsym converts to a function pointer through this cast */
#define RESOLVE(field, name)                                                                   \
    do {                                                                                       \
        *(void **)(&fn.field) = dlsym(lib, name);                                              \
        if (fn.field == NULL) {                                                                \
            load_error = "libcurl.so.4 lacks " name;                                           \
            return;                                                                            \
        }                                                                                      \
    } while (0)
    RESOLVE(global_init, "curl_global_init");
    RESOLVE(global_cleanup, "curl_global_cleanup");
    RESOLVE(easy_init, "curl_easy_init");
    RESOLVE(easy_setopt, "curl_easy_setopt");
    RESOLVE(easy_getinfo, "curl_easy_getinfo");
    RESOLVE(easy_cleanup, "curl_easy_cleanup");
    RESOLVE(easy_strerror, "curl_easy_strerror");
    RESOLVE(easy_escape, "curl_easy_escape");
    RESOLVE(free, "curl_free");
    RESOLVE(slist_append, "curl_slist_append");
    RESOLVE(slist_free_all, "curl_slist_free_all");
    RESOLVE(multi_init, "curl_multi_init");
    RESOLVE(multi_setopt, "curl_multi_setopt");
    RESOLVE(multi_add_handle, "curl_multi_add_handle");
    RESOLVE(multi_remove_handle, "curl_multi_remove_handle");
    RESOLVE(multi_perform, "curl_multi_perform");
    RESOLVE(multi_poll, "curl_multi_poll");
    RESOLVE(multi_info_read, "curl_multi_info_read");
    RESOLVE(multi_cleanup, "curl_multi_cleanup");
#undef RESOLVE
    loaded = true;
}

int ctl_curl_load(const char **why)
{
    pthread_once(&once, load);
    if (why != NULL)
        *why = loaded ? NULL : load_error;
    return loaded ? 0 : -1;
}

CURLcode ctl_curl_global_init(long flags)
{
    return ctl_curl_load(NULL) == 0 ? fn.global_init(flags) : CURLE_FAILED_INIT;
}

void ctl_curl_global_cleanup(void)
{
    if (ctl_curl_load(NULL) == 0)
        fn.global_cleanup();
}

CURL *ctl_curl_easy_init(void)
{
    return ctl_curl_load(NULL) == 0 ? fn.easy_init() : NULL;
}

/*
 * libcurl's own rule for an option's argument type: the option number's range
 * (CURLOPTTYPE_*: long, object pointer, function pointer, curl_off_t, blob).
 */
CURLcode ctl_curl_easy_setopt(CURL *h, CURLoption option, ...)
{
    if (ctl_curl_load(NULL) != 0)
        return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, option);
    CURLcode rc;
    if (option < CURLOPTTYPE_OBJECTPOINT)
        rc = fn.easy_setopt(h, option, va_arg(ap, long));
    else if (option < CURLOPTTYPE_FUNCTIONPOINT)
        rc = fn.easy_setopt(h, option, va_arg(ap, void *));
    else if (option < CURLOPTTYPE_OFF_T)
        rc = fn.easy_setopt(h, option, va_arg(ap, void (*)(void)));
    else if (option < CURLOPTTYPE_BLOB)
        rc = fn.easy_setopt(h, option, va_arg(ap, curl_off_t));
    else
        rc = fn.easy_setopt(h, option, va_arg(ap, void *));
    va_end(ap);
    return rc;
}

/* Every CURLINFO takes a pointer to where the answer goes. */
CURLcode ctl_curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
    if (ctl_curl_load(NULL) != 0)
        return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, info);
    CURLcode rc = fn.easy_getinfo(h, info, va_arg(ap, void *));
    va_end(ap);
    return rc;
}

void ctl_curl_easy_cleanup(CURL *h)
{
    if (ctl_curl_load(NULL) == 0)
        fn.easy_cleanup(h);
}

const char *ctl_curl_easy_strerror(CURLcode code)
{
    return ctl_curl_load(NULL) == 0 ? fn.easy_strerror(code) : load_error;
}

char *ctl_curl_easy_escape(CURL *h, const char *s, int len)
{
    return ctl_curl_load(NULL) == 0 ? fn.easy_escape(h, s, len) : NULL;
}

void ctl_curl_free(void *p)
{
    if (ctl_curl_load(NULL) == 0)
        fn.free(p);
}

struct curl_slist *ctl_curl_slist_append(struct curl_slist *list, const char *s)
{
    return ctl_curl_load(NULL) == 0 ? fn.slist_append(list, s) : NULL;
}

void ctl_curl_slist_free_all(struct curl_slist *list)
{
    if (ctl_curl_load(NULL) == 0)
        fn.slist_free_all(list);
}

CURLM *ctl_curl_multi_init(void)
{
    return ctl_curl_load(NULL) == 0 ? fn.multi_init() : NULL;
}

CURLMcode ctl_curl_multi_setopt(CURLM *m, CURLMoption option, ...)
{
    if (ctl_curl_load(NULL) != 0)
        return CURLM_INTERNAL_ERROR;
    va_list ap;
    va_start(ap, option);
    CURLMcode rc;
    if (option < CURLOPTTYPE_OBJECTPOINT)
        rc = fn.multi_setopt(m, option, va_arg(ap, long));
    else if (option < CURLOPTTYPE_FUNCTIONPOINT)
        rc = fn.multi_setopt(m, option, va_arg(ap, void *));
    else if (option < CURLOPTTYPE_OFF_T)
        rc = fn.multi_setopt(m, option, va_arg(ap, void (*)(void)));
    else
        rc = fn.multi_setopt(m, option, va_arg(ap, curl_off_t));
    va_end(ap);
    return rc;
}

CURLMcode ctl_curl_multi_add_handle(CURLM *m, CURL *h)
{
    return ctl_curl_load(NULL) == 0 ? fn.multi_add_handle(m, h) : CURLM_INTERNAL_ERROR;
}

CURLMcode ctl_curl_multi_remove_handle(CURLM *m, CURL *h)
{
    return ctl_curl_load(NULL) == 0 ? fn.multi_remove_handle(m, h) : CURLM_INTERNAL_ERROR;
}

CURLMcode ctl_curl_multi_perform(CURLM *m, int *running)
{
    return ctl_curl_load(NULL) == 0 ? fn.multi_perform(m, running) : CURLM_INTERNAL_ERROR;
}

CURLMcode ctl_curl_multi_poll(CURLM *m, struct curl_waitfd *extra, unsigned n, int timeout_ms,
                              int *numfds)
{
    return ctl_curl_load(NULL) == 0 ? fn.multi_poll(m, extra, n, timeout_ms, numfds)
                                    : CURLM_INTERNAL_ERROR;
}

CURLMsg *ctl_curl_multi_info_read(CURLM *m, int *left)
{
    return ctl_curl_load(NULL) == 0 ? fn.multi_info_read(m, left) : NULL;
}

CURLMcode ctl_curl_multi_cleanup(CURLM *m)
{
    return ctl_curl_load(NULL) == 0 ? fn.multi_cleanup(m) : CURLM_INTERNAL_ERROR;
}
