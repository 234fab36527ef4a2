/*
 * libmicrohttpd through dlopen (see mhd_lazy.h). The library is opened the first time a
 * server starts; when it cannot be loaded, pfi_http_server_start fails with PFI_ERR_UNAVAILABLE
 * and a message naming the library and dlerror's reason, instead of every `pfi` command
 * failing to start (or paying for GnuTLS) when it is there.
 */
#define _GNU_SOURCE
#define PFI_MHD_LAZY_IMPL
#include "http/mhd_lazy.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/*
 * Each pointer's type must be the installed header's declaration of the function it holds:
 * checked at compile time. _Generic does not evaluate its operand, so these name the real
 * libmicrohttpd symbols without making libpfi reference (link against) them.
 */
#define SAME_TYPE(field, sym)                                                                      \
    _Static_assert(_Generic(&sym, __typeof__(((mhd_lazy_fns *)0)->field) : 1, default : 0),        \
                   #sym " does not match mhd_lazy_fns." #field)
SAME_TYPE(start_daemon_va, MHD_start_daemon_va);
SAME_TYPE(stop_daemon, MHD_stop_daemon);
SAME_TYPE(get_daemon_info, MHD_get_daemon_info);
SAME_TYPE(lookup_connection_value, MHD_lookup_connection_value);
SAME_TYPE(create_response_from_buffer, MHD_create_response_from_buffer);
SAME_TYPE(add_response_header, MHD_add_response_header);
SAME_TYPE(queue_response, MHD_queue_response);
SAME_TYPE(destroy_response, MHD_destroy_response);
#undef SAME_TYPE

/* Where each function goes: its symbol and the field of mhd_lazy_fns that holds it. */
#define FIELD(field, sym)                                                                          \
    {                                                                                              \
#sym, offsetof(mhd_lazy_fns, field)                                                        \
    }
static const struct {
    const char *name;
    size_t offset;
} symbols[] = {
    FIELD(start_daemon_va, MHD_start_daemon_va),
    FIELD(stop_daemon, MHD_stop_daemon),
    FIELD(get_daemon_info, MHD_get_daemon_info),
    FIELD(lookup_connection_value, MHD_lookup_connection_value),
    FIELD(create_response_from_buffer, MHD_create_response_from_buffer),
    FIELD(add_response_header, MHD_add_response_header),
    FIELD(queue_response, MHD_queue_response),
    FIELD(destroy_response, MHD_destroy_response),
};
#undef FIELD

int mhd_lazy_open(const char *soname, mhd_lazy_fns *fns, char *why, size_t why_size)
{
    memset(fns, 0, sizeof *fns);
    snprintf(why, why_size, "%s", "");
    dlerror(); /* clear a stale error */
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *e = dlerror();
        /* dlerror's text names the file; make sure the message does too */
        if (e != NULL && strstr(e, soname) != NULL)
            snprintf(why, why_size, "%s", e);
        else
            snprintf(why, why_size, "%s: %s", soname, e != NULL ? e : "cannot be opened");
        return -1;
    }
    for (size_t k = 0; k < sizeof symbols / sizeof symbols[0]; k++) {
        void *p = dlsym(lib, symbols[k].name);
        if (p == NULL) {
            snprintf(why, why_size, "%s lacks %s (not libmicrohttpd?)", soname, symbols[k].name);
            dlclose(lib);
            memset(fns, 0, sizeof *fns);
            return -1;
        }
        /* POSIX: a function's address from dlsym is stored as the function pointer it is */
        memcpy((char *)fns + symbols[k].offset, &p, sizeof p);
    }
    fns->lib = lib;
    return 0;
}

/* The process's library: opened once, never closed. */
static mhd_lazy_fns fn;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_error[512] = PFI_MHD_SONAME " not loaded";

static void load(void)
{
    loaded = mhd_lazy_open(PFI_MHD_SONAME, &fn, load_error, sizeof load_error) == 0;
}

int mhd_lazy_load(const char **why)
{
    pthread_once(&once, load);
    if (why != NULL)
        *why = loaded ? NULL : load_error;
    return loaded ? 0 : -1;
}

struct MHD_Daemon *pfi_mhd_start_daemon(unsigned int flags, uint16_t port,
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

void pfi_mhd_stop_daemon(struct MHD_Daemon *daemon)
{
    if (mhd_lazy_load(NULL) == 0)
        fn.stop_daemon(daemon);
}

const union MHD_DaemonInfo *pfi_mhd_get_daemon_info(struct MHD_Daemon *daemon,
                                                    enum MHD_DaemonInfoType info_type, ...)
{
    return mhd_lazy_load(NULL) == 0 ? fn.get_daemon_info(daemon, info_type) : NULL;
}

const char *pfi_mhd_lookup_connection_value(struct MHD_Connection *connection,
                                            enum MHD_ValueKind kind, const char *key)
{
    return mhd_lazy_load(NULL) == 0 ? fn.lookup_connection_value(connection, kind, key) : NULL;
}

struct MHD_Response *pfi_mhd_create_response_from_buffer(size_t size, void *buffer,
                                                         enum MHD_ResponseMemoryMode mode)
{
    return mhd_lazy_load(NULL) == 0 ? fn.create_response_from_buffer(size, buffer, mode) : NULL;
}

enum MHD_Result pfi_mhd_add_response_header(struct MHD_Response *response, const char *header,
                                            const char *content)
{
    return mhd_lazy_load(NULL) == 0 ? fn.add_response_header(response, header, content) : MHD_NO;
}

enum MHD_Result pfi_mhd_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                       struct MHD_Response *response)
{
    return mhd_lazy_load(NULL) == 0 ? fn.queue_response(connection, status_code, response) : MHD_NO;
}

void pfi_mhd_destroy_response(struct MHD_Response *response)
{
    if (mhd_lazy_load(NULL) == 0)
        fn.destroy_response(response);
}
