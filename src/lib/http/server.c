/*
 * The embedded HTTP server (pfi/http.h) over libmicrohttpd (through http/mhd_lazy.h):
 * start and stop, the two-phase request handling (headers, then the body collected up to a
 * bound), replies, the one bearer-token check, and listen-address parsing.
 */
#define _GNU_SOURCE
#include "pfi/http.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/memory.h"
#include "http/mhd_lazy.h"

struct pfi_http_server {
    struct MHD_Daemon *daemon;
    pfi_http_server_config cfg; /* addr is not used after the start */
};

/* What a handler sees: one call's connection, method and path (on the caller's stack). */
struct pfi_http_request {
    struct MHD_Connection *conn;
    const char *method, *url;
};

/* A request whose body is being read (libmicrohttpd's per-request pointer). */
typedef struct body_buf {
    char *data; /* NUL-terminated once anything is in; NULL when empty or dropped */
    size_t len, cap;
    bool too_big;
    double start_s; /* monotonic s the headers were in (the body's deadline counts from it) */
} body_buf;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The body's bytes go into b until max_body would be passed; then it is dropped, and only
 * too_big remains. false when out of memory. */
static bool body_append(body_buf *b, const char *data, size_t n, size_t max_body)
{
    if (!b->too_big && b->len + n > max_body) {
        b->too_big = true;
        pfi_free(b->data);
        b->data = NULL;
        b->len = b->cap = 0;
    }
    if (b->too_big)
        return true;
    if (b->len + n + 1 > b->cap) {
        /* grow geometrically (a body comes in many small pieces), never past the bound */
        size_t cap = b->cap < 4096 ? 4096 : 2 * b->cap;
        if (cap < b->len + n + 1)
            cap = b->len + n + 1;
        if (cap > max_body + 1)
            cap = max_body + 1;
        char *p = pfi_realloc(b->data, cap);
        if (p == NULL)
            return false;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}

/* *con_cls of a request without a body whose head waits for libmicrohttpd's second call */
static char head_deferred;

/*
 * libmicrohttpd calls this once with the headers (*con_cls NULL), then once per piece of the
 * body (*size > 0), then once more with *size 0 when the body is complete. A request without
 * a body (a GET: no Content-Length, no Transfer-Encoding) is answered on that last call, not
 * on the first: libmicrohttpd closes the connection after an answer queued with the headers
 * (a controller polling 1 000 agents then opened 1 000 connections a round), and keeps it
 * open after one queued later.
 */
static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version, const char *data,
                                 size_t *size, void **con_cls)
{
    (void)version;
    pfi_http_server *s = cls;
    pfi_http_request rq = {.conn = c, .method = method, .url = url};
    if (*con_cls == NULL && *size == 0 &&
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH) == NULL &&
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) ==
            NULL) {
        *con_cls = &head_deferred;
        return MHD_YES;
    }
    if (*con_cls == &head_deferred) {
        *con_cls = NULL; /* nothing to free */
        pfi_http_next next = s->cfg.on_head ? s->cfg.on_head(s->cfg.cls, &rq) : PFI_HTTP_READ_BODY;
        if (next == PFI_HTTP_READ_BODY) /* the body, complete: empty */
            next = s->cfg.on_body(s->cfg.cls, &rq, "", 0, false);
        return next == PFI_HTTP_ANSWERED ? MHD_YES : MHD_NO;
    }
    body_buf *b = *con_cls;
    if (b == NULL) {
        pfi_http_next next = s->cfg.on_head ? s->cfg.on_head(s->cfg.cls, &rq) : PFI_HTTP_READ_BODY;
        if (next != PFI_HTTP_READ_BODY)
            return next == PFI_HTTP_ANSWERED ? MHD_YES : MHD_NO;
        b = pfi_calloc(1, sizeof *b);
        if (b == NULL)
            return MHD_NO;
        b->start_s = mono_s();
        *con_cls = b;
        return MHD_YES;
    }
    if (s->cfg.body_timeout_s > 0 && mono_s() - b->start_s > s->cfg.body_timeout_s)
        return MHD_NO; /* a body that trickles past its deadline: the slot goes back */
    if (*size > 0) {
        if (!body_append(b, data, *size, s->cfg.max_body))
            return MHD_NO;
        *size = 0;
        return MHD_YES;
    }
    pfi_http_next next =
        s->cfg.on_body(s->cfg.cls, &rq, b->data ? b->data : "", b->len, b->too_big);
    return next == PFI_HTTP_ANSWERED ? MHD_YES : MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    body_buf *b = *con_cls;
    if (b != NULL && *con_cls != (void *)&head_deferred) {
        pfi_free(b->data);
        pfi_free(b);
        *con_cls = NULL;
    }
}

/* libmicrohttpd's error log, one line at a time, to the owner's log function. */
static void on_log(void *cls, const char *fmt, va_list ap)
{
    pfi_http_server *s = cls;
    if (s->cfg.log == NULL) /* libmicrohttpd logs only with MHD_USE_ERROR_LOG: not reached */
        return;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && line[n - 1] == '\n')
        line[--n] = '\0';
    s->cfg.log(s->cfg.cls, line);
}

pfi_error pfi_http_server_start(const pfi_http_server_config *cfg, pfi_http_server **out,
                                pfi_diag *d)
{
    *out = NULL;
    if (cfg->addr == NULL || cfg->on_body == NULL ||
        (cfg->addr->sa_family != AF_INET && cfg->addr->sa_family != AF_INET6)) {
        pfi_diag_set(d, NULL, 0, NULL, "http server: no IPv4 or IPv6 address, or no handler");
        return PFI_ERR_INVALID_ARGUMENT;
    }
    const char *why;
    if (mhd_lazy_load(&why) != 0) {
        pfi_diag_set(d, NULL, 0, NULL,
                     "the HTTP server needs libmicrohttpd (%s), which cannot be loaded: %s",
                     PFI_MHD_SONAME, why);
        return PFI_ERR_UNAVAILABLE;
    }
    pfi_http_server *s = pfi_calloc(1, sizeof *s);
    if (s == NULL)
        return PFI_ERR_NOMEM;
    s->cfg = *cfg;
    s->cfg.addr = NULL;
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD;
    if (cfg->log != NULL)
        flags |= MHD_USE_ERROR_LOG;
    if (cfg->addr->sa_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* the options the caller set; unset ones keep libmicrohttpd's defaults */
    struct {
        enum MHD_OPTION option;
        size_t value;
    } set[] = {
        {MHD_OPTION_THREAD_POOL_SIZE, cfg->threads},
        {MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections},
        {MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout_s},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->max_per_client},
        /* strict HTTP/1.1 parsing of what clients send (no bare LF, no junk in headers) */
        {MHD_OPTION_STRICT_FOR_CLIENT, 1},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, cfg->connection_memory_b},
        {MHD_OPTION_THREAD_STACK_SIZE, cfg->thread_stack_b},
    };
    struct MHD_OptionItem opt[sizeof set / sizeof set[0] + 1];
    size_t n = 0;
    for (size_t k = 0; k < sizeof set / sizeof set[0]; k++)
        if (set[k].value > 0)
            opt[n++] = (struct MHD_OptionItem){
                .option = set[k].option, .value = (intptr_t)set[k].value, .ptr_value = NULL};
    opt[n] = (struct MHD_OptionItem){.option = MHD_OPTION_END, .value = 0, .ptr_value = NULL};
    /* the port argument is unused: MHD_OPTION_SOCK_ADDR gives it (without that option
     * libmicrohttpd would bind every interface). The logger comes first: libmicrohttpd
     * warns on stderr, with its own logger, about one that is not the first option. */
    s->daemon =
        MHD_start_daemon(flags, 0, NULL, NULL, on_access, s, MHD_OPTION_EXTERNAL_LOGGER, on_log, s,
                         MHD_OPTION_SOCK_ADDR, cfg->addr, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
                         s, MHD_OPTION_ARRAY, opt, MHD_OPTION_END);
    if (s->daemon == NULL) {
        pfi_free(s);
        pfi_diag_set(d, NULL, 0, NULL, "http server: cannot listen");
        return PFI_ERR_IO;
    }
    *out = s;
    return PFI_OK;
}

unsigned pfi_http_server_port(const pfi_http_server *s)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info != NULL ? info->port : 0;
}

void pfi_http_server_stop(pfi_http_server *s)
{
    if (s == NULL)
        return;
    MHD_stop_daemon(s->daemon);
    pfi_free(s);
}

const char *pfi_http_request_method(const pfi_http_request *rq)
{
    return rq->method;
}

const char *pfi_http_request_url(const pfi_http_request *rq)
{
    return rq->url;
}

const char *pfi_http_request_header(const pfi_http_request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

bool pfi_http_request_header_n(const pfi_http_request *rq, const char *name, const char **value,
                               size_t *len)
{
    *value = NULL;
    *len = 0;
    return MHD_lookup_connection_value_n(rq->conn, MHD_HEADER_KIND, name, strlen(name), value,
                                         len) == MHD_YES &&
           *value != NULL;
}

bool pfi_http_request_body_over(const pfi_http_request *rq, size_t max)
{
    const char *cl = pfi_http_request_header(rq, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl == NULL)
        return false;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(cl, &end, 10);
    return *end != '\0' || errno != 0 || n > max;
}

pfi_http_next pfi_http_reply(pfi_http_request *rq, unsigned status, const char *body,
                             const pfi_http_header *headers)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (r == NULL)
        return PFI_HTTP_CLOSE;
    for (const pfi_http_header *h = headers; h != NULL && h->name != NULL; h++)
        if (MHD_add_response_header(r, h->name, h->value) != MHD_YES) {
            /* out of memory, or a header libmicrohttpd refuses: no reply without it */
            MHD_destroy_response(r);
            return PFI_HTTP_CLOSE;
        }
    enum MHD_Result ret = MHD_queue_response(rq->conn, status, r);
    MHD_destroy_response(r);
    return ret == MHD_YES ? PFI_HTTP_ANSWERED : PFI_HTTP_CLOSE;
}

bool pfi_http_token_equal(const char *given, size_t given_len, const char *secret,
                          size_t secret_len)
{
    /* volatile: the compiler may not end the loop at the first difference */
    volatile unsigned char diff = given_len != secret_len;
    for (size_t i = 0; i < secret_len; i++) {
        unsigned char g = i < given_len ? (unsigned char)given[i] : 0;
        diff |= (unsigned char)(g ^ (unsigned char)secret[i]);
    }
    return secret_len > 0 && diff == 0;
}

bool pfi_http_bearer_ok(const char *authorization, const char *secret, size_t secret_len)
{
    const char *h = authorization;
    if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    h += 7;
    while (*h == ' ')
        h++;
    return pfi_http_token_equal(h, strlen(h), secret, secret_len);
}

bool pfi_http_address_parse(const char *text, struct sockaddr_storage *ss)
{
    char host[128];
    const char *port;
    if (text[0] == '[') {
        const char *e = strchr(text, ']');
        if (e == NULL || e[1] != ':' || (size_t)(e - text - 1) >= sizeof host)
            return false;
        memcpy(host, text + 1, (size_t)(e - text - 1));
        host[e - text - 1] = '\0';
        port = e + 2;
    } else {
        const char *e = strrchr(text, ':');
        if (e == NULL || (size_t)(e - text) >= sizeof host)
            return false;
        memcpy(host, text, (size_t)(e - text));
        host[e - text] = '\0';
        port = e + 1;
    }
    /* the port is 1 to 5 digits up to 65535: glibc's getaddrinfo takes "" and wraps 70000 */
    size_t np = strspn(port, "0123456789");
    if (np == 0 || np > 5 || port[np] != '\0' || strtol(port, NULL, 10) > 65535)
        return false;
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host[0] ? host : NULL, port, &hints, &res) != 0 || res == NULL)
        return false;
    memset(ss, 0, sizeof *ss);
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return true;
}
