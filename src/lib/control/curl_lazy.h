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

/*
 * ctl_curl_load — open libcurl and resolve every function below (once; thread-safe). Returns
 * 0 on success; otherwise -1 and a static message in *why (dlerror's text).
 */
int ctl_curl_load(const char **why);

CURLcode ctl_curl_global_init(long flags);
void ctl_curl_global_cleanup(void);
CURL *ctl_curl_easy_init(void);
CURLcode ctl_curl_easy_setopt(CURL *h, CURLoption option, ...);
CURLcode ctl_curl_easy_getinfo(CURL *h, CURLINFO info, ...);
void ctl_curl_easy_cleanup(CURL *h);
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
