/*
 * libcurl through dlopen (see curl_lazy.h). Each forwarding function loads the library on
 * first use; when it cannot be loaded, init functions fail (CURLE_FAILED_INIT, NULL) and the
 * controller reports the error instead of the process failing to start.
 */
#define PFI_CURL_LAZY_IMPL
#include "control/curl_lazy.h"

#include <stdarg.h>

#include "core/dl.h"

/* Every function used: the field of curl_lazy_fns and libcurl's symbol. */
#define CURL_LAZY_FUNCTIONS(X)                                                                     \
    X(global_init, curl_global_init)                                                               \
    X(global_cleanup, curl_global_cleanup)                                                         \
    X(easy_init, curl_easy_init)                                                                   \
    X(easy_setopt, curl_easy_setopt)                                                               \
    X(easy_getinfo, curl_easy_getinfo)                                                             \
    X(easy_cleanup, curl_easy_cleanup)                                                             \
    X(easy_perform, curl_easy_perform)                                                             \
    X(easy_strerror, curl_easy_strerror)                                                           \
    X(easy_escape, curl_easy_escape)                                                               \
    X(free, curl_free)                                                                             \
    X(slist_append, curl_slist_append)                                                             \
    X(slist_free_all, curl_slist_free_all)                                                         \
    X(multi_init, curl_multi_init)                                                                 \
    X(multi_setopt, curl_multi_setopt)                                                             \
    X(multi_add_handle, curl_multi_add_handle)                                                     \
    X(multi_remove_handle, curl_multi_remove_handle)                                               \
    X(multi_perform, curl_multi_perform)                                                           \
    X(multi_poll, curl_multi_poll)                                                                 \
    X(multi_info_read, curl_multi_info_read)                                                       \
    X(multi_cleanup, curl_multi_cleanup)

/* Where each function goes; each pointer's type must be the installed header's declaration of
 * the function it holds (checked at compile time). */
#define SYMBOL(field, sym) DL_SYMBOL(curl_lazy_fns, field, #sym, sym),
static const dl_symbol curl_symbols[] = {CURL_LAZY_FUNCTIONS(SYMBOL)};
#undef SYMBOL

DL_OPENER(ctl_curl_open, curl_lazy_fns, NULL, curl_symbols)

/* The process's library: opened once, never closed. */
DL_ONCE_LOADER(ctl_curl_load, ctl_curl_open, curl_lazy_fns, fn, PFI_CURL_SONAME)

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

CURLcode ctl_curl_easy_perform(CURL *h)
{
    return ctl_curl_load(NULL) == 0 ? fn.easy_perform(h) : CURLE_FAILED_INIT;
}

const char *ctl_curl_easy_strerror(CURLcode code)
{
    const char *why;
    return ctl_curl_load(&why) == 0 ? fn.easy_strerror(code) : why;
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
