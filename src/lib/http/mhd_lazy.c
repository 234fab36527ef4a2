/*
 * libmicrohttpd through dlopen (see mhd_lazy.h). The library is opened the first time a
 * server starts; when it cannot be loaded, pfi_http_server_start fails with PFI_ERR_UNAVAILABLE
 * and a message naming the library and dlerror's reason, instead of every `pfi` command
 * failing to start (or paying for GnuTLS) when it is there.
 */
#define _GNU_SOURCE
#define PFI_MHD_LAZY_IMPL
#include "http/mhd_lazy.h"

#include "core/dl.h"

/* Every function used: the field of mhd_lazy_fns and libmicrohttpd's symbol. */
#define MHD_LAZY_FUNCTIONS(X)                                                                      \
    X(start_daemon_va, MHD_start_daemon_va)                                                        \
    X(stop_daemon, MHD_stop_daemon)                                                                \
    X(get_daemon_info, MHD_get_daemon_info)                                                        \
    X(lookup_connection_value, MHD_lookup_connection_value)                                        \
    X(lookup_connection_value_n, MHD_lookup_connection_value_n)                                    \
    X(create_response_from_buffer, MHD_create_response_from_buffer)                                \
    X(add_response_header, MHD_add_response_header)                                                \
    X(queue_response, MHD_queue_response)                                                          \
    X(destroy_response, MHD_destroy_response)

/* Where each function goes; each pointer's type must be the installed header's declaration of
 * the function it holds (checked at compile time). */
#define SYMBOL(field, sym) DL_SYMBOL(mhd_lazy_fns, field, #sym, sym),
static const dl_symbol mhd_symbols[] = {MHD_LAZY_FUNCTIONS(SYMBOL)};
#undef SYMBOL

DL_OPENER(mhd_lazy_open, mhd_lazy_fns, "not libmicrohttpd?", mhd_symbols)

/* The process's library: opened once, never closed. */
DL_ONCE_LOADER(mhd_lazy_load, mhd_lazy_open, mhd_lazy_fns, fn, PFI_MHD_SONAME)

struct MHD_Daemon *mhd_lazy_start_daemon(unsigned int flags, uint16_t port,
                                         MHD_AcceptPolicyCallback apc, void *apc_cls,
                                         MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
    if (mhd_lazy_load(NULL) != 0)
        return NULL;
    va_list ap;
    va_start(ap, dh_cls);
    struct MHD_Daemon *d = fn.start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
    va_end(ap);
    return d;
}

void mhd_lazy_stop_daemon(struct MHD_Daemon *daemon)
{
    if (mhd_lazy_load(NULL) == 0)
        fn.stop_daemon(daemon);
}

const union MHD_DaemonInfo *mhd_lazy_get_daemon_info(struct MHD_Daemon *daemon,
                                                     enum MHD_DaemonInfoType info_type, ...)
{
    return mhd_lazy_load(NULL) == 0 ? fn.get_daemon_info(daemon, info_type) : NULL;
}

const char *mhd_lazy_lookup_connection_value(struct MHD_Connection *connection,
                                             enum MHD_ValueKind kind, const char *key)
{
    return mhd_lazy_load(NULL) == 0 ? fn.lookup_connection_value(connection, kind, key) : NULL;
}

enum MHD_Result mhd_lazy_lookup_connection_value_n(struct MHD_Connection *connection,
                                                   enum MHD_ValueKind kind, const char *key,
                                                   size_t key_size, const char **value_ptr,
                                                   size_t *value_size_ptr)
{
    return mhd_lazy_load(NULL) == 0 ? fn.lookup_connection_value_n(connection, kind, key, key_size,
                                                                   value_ptr, value_size_ptr)
                                    : MHD_NO;
}

struct MHD_Response *mhd_lazy_create_response_from_buffer(size_t size, void *buffer,
                                                          enum MHD_ResponseMemoryMode mode)
{
    return mhd_lazy_load(NULL) == 0 ? fn.create_response_from_buffer(size, buffer, mode) : NULL;
}

enum MHD_Result mhd_lazy_add_response_header(struct MHD_Response *response, const char *header,
                                             const char *content)
{
    return mhd_lazy_load(NULL) == 0 ? fn.add_response_header(response, header, content) : MHD_NO;
}

enum MHD_Result mhd_lazy_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                        struct MHD_Response *response)
{
    return mhd_lazy_load(NULL) == 0 ? fn.queue_response(connection, status_code, response) : MHD_NO;
}

void mhd_lazy_destroy_response(struct MHD_Response *response)
{
    if (mhd_lazy_load(NULL) == 0)
        fn.destroy_response(response);
}
