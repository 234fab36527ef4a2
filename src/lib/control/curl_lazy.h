/*
 * libcurl, loaded on first use. The controller is the only part of pfi that speaks HTTP as a
 * client, and linking libcurl into the one `pfi` binary made every command pay for loading
 * it and its TLS, LDAP and Kerberos dependencies (≈ 8 ms per process). So, as for NVML, the
 * library is opened with dlopen("libcurl.so.4") when the controller first needs it; the types
 * and constants still come from <curl/curl.h>. Include this header instead of <curl/curl.h>:
 * the curl_* names below then call the loader's forwarding functions.
 */
#ifndef PFI_CTL_CURL_LAZY_H
#define PFI_CTL_CURL_LAZY_H

#define CURL_DISABLE_TYPECHECK /* the forwarding functions are plain prototypes */
#include <curl/curl.h>
#include <stddef.h>

#define PFI_CURL_SONAME "libcurl.so.4"

/* The libcurl functions the controller calls, as resolved from one opened library. */
typedef struct curl_lazy_fns {
    void *lib; /* dlopen handle */
    CURLcode (*global_init)(long);
    void (*global_cleanup)(void);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    CURLcode (*easy_perform)(CURL *); /* one blocking transfer (pfi/openadr.h's client) */
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
} curl_lazy_fns;

/*
 * ctl_curl_open — dlopen soname and resolve every function above into *fns; no global state
 * (ctl_curl_load calls it with PFI_CURL_SONAME). Returns 0 on success; otherwise -1, *fns
 * zeroed, nothing left open, and why (why_size bytes, may be 0) holds the reason, naming
 * soname: dlerror's text, or which function the library lacks.
 */
int ctl_curl_open(const char *soname, curl_lazy_fns *fns, char *why, size_t why_size);

/*
 * ctl_curl_load — open libcurl and resolve its functions (once; thread-safe). Returns
 * 0 on success; otherwise -1 and a static message in *why, naming PFI_CURL_SONAME (dlerror's
 * text, or which function the library lacks). Later calls give the first call's result.
 */
int ctl_curl_load(const char **why);

CURLcode ctl_curl_global_init(long flags);
void ctl_curl_global_cleanup(void);
CURL *ctl_curl_easy_init(void);
CURLcode ctl_curl_easy_setopt(CURL *h, CURLoption option, ...);
CURLcode ctl_curl_easy_getinfo(CURL *h, CURLINFO info, ...);
void ctl_curl_easy_cleanup(CURL *h);
CURLcode ctl_curl_easy_perform(CURL *h);
const char *ctl_curl_easy_strerror(CURLcode code);
char *ctl_curl_easy_escape(CURL *h, const char *s, int len);
void ctl_curl_free(void *p);
struct curl_slist *ctl_curl_slist_append(struct curl_slist *list, const char *s);
void ctl_curl_slist_free_all(struct curl_slist *list);
CURLM *ctl_curl_multi_init(void);
CURLMcode ctl_curl_multi_setopt(CURLM *m, CURLMoption option, ...);
CURLMcode ctl_curl_multi_add_handle(CURLM *m, CURL *h);
CURLMcode ctl_curl_multi_remove_handle(CURLM *m, CURL *h);
CURLMcode ctl_curl_multi_perform(CURLM *m, int *running);
CURLMcode ctl_curl_multi_poll(CURLM *m, struct curl_waitfd *extra, unsigned n, int timeout_ms,
                              int *numfds);
CURLMsg *ctl_curl_multi_info_read(CURLM *m, int *left);
CURLMcode ctl_curl_multi_cleanup(CURLM *m);

/* curl_lazy.c itself needs the real declarations (to check its pointers' types against them). */
#ifndef PFI_CURL_LAZY_IMPL
/* curl.h wraps these three in argument-count macros; replace them with the forwarders */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt
#define curl_global_init ctl_curl_global_init
#define curl_global_cleanup ctl_curl_global_cleanup
#define curl_easy_init ctl_curl_easy_init
#define curl_easy_setopt ctl_curl_easy_setopt
#define curl_easy_getinfo ctl_curl_easy_getinfo
#define curl_easy_cleanup ctl_curl_easy_cleanup
#define curl_easy_perform ctl_curl_easy_perform
#define curl_easy_strerror ctl_curl_easy_strerror
#define curl_easy_escape ctl_curl_easy_escape
#define curl_free ctl_curl_free
#define curl_slist_append ctl_curl_slist_append
#define curl_slist_free_all ctl_curl_slist_free_all
#define curl_multi_init ctl_curl_multi_init
#define curl_multi_setopt ctl_curl_multi_setopt
#define curl_multi_add_handle ctl_curl_multi_add_handle
#define curl_multi_remove_handle ctl_curl_multi_remove_handle
#define curl_multi_perform ctl_curl_multi_perform
#define curl_multi_poll ctl_curl_multi_poll
#define curl_multi_info_read ctl_curl_multi_info_read
#define curl_multi_cleanup ctl_curl_multi_cleanup
#endif

#endif
