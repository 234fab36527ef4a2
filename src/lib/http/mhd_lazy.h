/*
 * libmicrohttpd, loaded on first use. Only pfid and `pfi control --listen` serve HTTP, and
 * linking libmicrohttpd into the `pfi` binary made every command load it and, through it,
 * GnuTLS with its own dependencies (nettle, gmp, p11-kit, idn2...) at start-up. So, as for libcurl
 * (src/lib/control/curl_lazy.h), libxml2 and NVML, the library is opened with
 * dlopen("libmicrohttpd.so.12") when a server first starts; the types and constants still
 * come from <microhttpd.h>. Include this header instead of <microhttpd.h>: the MHD_* names
 * below then call the loader's forwarding functions. Only the server (http/server.c) does.
 */
#ifndef PFI_LIB_HTTP_MHD_LAZY_H
#define PFI_LIB_HTTP_MHD_LAZY_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#define PFI_MHD_SONAME "libmicrohttpd.so.12"

/* The libmicrohttpd functions the server calls, as resolved from one opened library. */
typedef struct mhd_lazy_fns {
    void *lib; /* dlopen handle */
    struct MHD_Daemon *(*start_daemon_va)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                          MHD_AccessHandlerCallback, void *, va_list);
    void (*stop_daemon)(struct MHD_Daemon *);
    const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType,
                                                   ...);
    const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind,
                                           const char *);
    enum MHD_Result (*lookup_connection_value_n)(struct MHD_Connection *, enum MHD_ValueKind,
                                                 const char *, size_t, const char **, size_t *);
    struct MHD_Response *(*create_response_from_buffer)(size_t, void *,
                                                        enum MHD_ResponseMemoryMode);
    enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
    enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
    void (*destroy_response)(struct MHD_Response *);
} mhd_lazy_fns;

/*
 * mhd_lazy_open — dlopen soname and resolve every function above into *fns; no global state
 * (the process-wide loader below calls it with PFI_MHD_SONAME; tests pass other names).
 * Returns 0 on success; otherwise -1, *fns zeroed, nothing left open, and why (why_size
 * bytes, may be 0) holds the reason: dlerror's text, or which function the library lacks.
 */
int mhd_lazy_open(const char *soname, mhd_lazy_fns *fns, char *why, size_t why_size);

/*
 * mhd_lazy_load — open libmicrohttpd (PFI_MHD_SONAME) for the process, once (thread-safe,
 * pthread_once; never closed). Returns 0 on success; otherwise -1 and a static message in
 * *why (may be NULL). Later calls give the first call's result.
 */
int mhd_lazy_load(const char **why);

/*
 * Forwarders: each loads the library if need be; when it cannot be loaded, they fail as the
 * real function fails (NULL, MHD_NO) or do nothing, so the server calls mhd_lazy_load first
 * to report why. mhd_lazy_get_daemon_info passes no arguments after info_type on: only the
 * information types that take none (MHD_DAEMON_INFO_BIND_PORT) may be asked for.
 */
struct MHD_Daemon *mhd_lazy_start_daemon(unsigned int flags, uint16_t port,
                                         MHD_AcceptPolicyCallback apc, void *apc_cls,
                                         MHD_AccessHandlerCallback dh, void *dh_cls, ...);
void mhd_lazy_stop_daemon(struct MHD_Daemon *daemon);
const union MHD_DaemonInfo *mhd_lazy_get_daemon_info(struct MHD_Daemon *daemon,
                                                     enum MHD_DaemonInfoType info_type, ...);
const char *mhd_lazy_lookup_connection_value(struct MHD_Connection *connection,
                                             enum MHD_ValueKind kind, const char *key);
enum MHD_Result mhd_lazy_lookup_connection_value_n(struct MHD_Connection *connection,
                                                   enum MHD_ValueKind kind, const char *key,
                                                   size_t key_size, const char **value_ptr,
                                                   size_t *value_size_ptr);
struct MHD_Response *mhd_lazy_create_response_from_buffer(size_t size, void *buffer,
                                                          enum MHD_ResponseMemoryMode mode);
enum MHD_Result mhd_lazy_add_response_header(struct MHD_Response *response, const char *header,
                                             const char *content);
enum MHD_Result mhd_lazy_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                        struct MHD_Response *response);
void mhd_lazy_destroy_response(struct MHD_Response *response);

/* mhd_lazy.c itself needs the real declarations (to check the types above against them). */
#ifndef PFI_MHD_LAZY_IMPL
#define MHD_start_daemon mhd_lazy_start_daemon
#define MHD_stop_daemon mhd_lazy_stop_daemon
#define MHD_get_daemon_info mhd_lazy_get_daemon_info
#define MHD_lookup_connection_value mhd_lazy_lookup_connection_value
#define MHD_lookup_connection_value_n mhd_lazy_lookup_connection_value_n
#define MHD_create_response_from_buffer mhd_lazy_create_response_from_buffer
#define MHD_add_response_header mhd_lazy_add_response_header
#define MHD_queue_response mhd_lazy_queue_response
#define MHD_destroy_response mhd_lazy_destroy_response
#endif

#endif
