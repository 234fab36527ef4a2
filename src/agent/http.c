/*
 * The HTTP front of pfid (libmicrohttpd): routing, bearer-token checks, body limits.
 *
 * Limits are explicit: a thread pool of cfg.threads, at most cfg.max_connections
 * connections, an idle timeout, and a body cap — the declared Content-Length is checked
 * before any byte of the body is read (413 at once), and a chunked body is cut off when it
 * passes the cap. Unauthenticated writes are answered before their body is read.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "request.h"

enum route {
    R_NONE = 0,
    R_HEALTHZ,
    R_METRICS,
    R_STATE,
    R_CAPS_PUT,
    R_CAPS_DELETE,
    R_TPUT
};

typedef struct req_ctx {
    enum route route;
    char job[PFID_ID_MAX];
    char *body;
    size_t len, cap;
    bool too_big;
} req_ctx;

bool pfid_token_equal(const char *given, size_t given_len, const char *secret,
                      size_t secret_len)
{
    volatile unsigned char diff = given_len != secret_len;
    for (size_t i = 0; i < secret_len; i++) {
        unsigned char g = i < given_len ? (unsigned char)given[i] : 0;
        diff |= (unsigned char)(g ^ (unsigned char)secret[i]);
    }
    return secret_len > 0 && diff == 0;
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, char *body,
                            const char *type)
{
    if (body == NULL) {
        static char oom[] = "{\"error\": \"out of memory\"}";
        body = strdup(oom);
        status = 500;
        if (body == NULL)
            return MHD_NO;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == 401)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *fmt,
                                  ...) __attribute__((format(printf, 3, 4)));
static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *fmt,
                                  ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return respond(c, status, pfid_error_json(msg), "application/json");
}

/* Route of (method, url); *allow is set for a known path with the wrong method. */
static enum route route_of(const char *method, const char *url, char *job, const char **allow)
{
    *allow = NULL;
    bool get = strcmp(method, "GET") == 0;
    if (strcmp(url, "/healthz") == 0)
        return get ? R_HEALTHZ : (*allow = "GET", R_NONE);
    if (strcmp(url, "/metrics") == 0)
        return get ? R_METRICS : (*allow = "GET", R_NONE);
    if (strcmp(url, "/v1/state") == 0)
        return get ? R_STATE : (*allow = "GET", R_NONE);
    if (strcmp(url, "/v1/caps") == 0) {
        if (strcmp(method, "PUT") == 0)
            return R_CAPS_PUT;
        if (strcmp(method, "DELETE") == 0)
            return R_CAPS_DELETE;
        *allow = "PUT, DELETE";
        return R_NONE;
    }
    static const char pre[] = "/v1/jobs/", post[] = "/throughput";
    size_t n = strlen(url), np = sizeof pre - 1, ns = sizeof post - 1;
    if (n > np + ns && strncmp(url, pre, np) == 0 && strcmp(url + n - ns, post) == 0 &&
        n - np - ns < PFID_ID_MAX) {
        memcpy(job, url + np, n - np - ns);
        job[n - np - ns] = '\0';
        if (!pfid_valid_id(job))
            return R_NONE;
        if (strcmp(method, "POST") == 0)
            return R_TPUT;
        *allow = "POST";
    }
    return R_NONE;
}

static bool authorised(pfid_agent *a, struct MHD_Connection *c)
{
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    h += 7;
    while (*h == ' ')
        h++;
    pthread_mutex_lock(&a->snap_lock); /* the token may be replaced by SIGHUP */
    bool ok = pfid_token_equal(h, strlen(h), a->token, a->token_len);
    pthread_mutex_unlock(&a->snap_lock);
    return ok;
}

static enum MHD_Result healthz(pfid_agent *a, struct MHD_Connection *c)
{
    pthread_mutex_lock(&a->snap_lock);
    double age = pfid_mono_s() - a->heartbeat_mono_s;
    pthread_mutex_unlock(&a->snap_lock);
    double stale = a->cfg.stale_s > 0 ? a->cfg.stale_s : 3 * a->cfg.interval_s;
    if (age > stale) {
        char msg[128];
        snprintf(msg, sizeof msg, "stalled: last sampling round %.1f s ago\n", age);
        return respond(c, 503, strdup(msg), "text/plain; charset=utf-8");
    }
    return respond(c, 200, strdup("ok\n"), "text/plain; charset=utf-8");
}

void pfid_throughput_post(pfid_agent *a, const char *job, const char *req, size_t len,
                          int *status, char **body)
{
    double t;
    char msg[600];
    if (!pfid_throughput_parse(req, len, &t, msg, sizeof msg)) {
        *status = 400;
        *body = pfid_error_json(msg);
        return;
    }
    pthread_mutex_lock(&a->snap_lock);
    char ids[PFID_MAX_JOBS][PFID_ID_MAX];
    size_t n = pfid_jobs_list(a, ids, PFID_MAX_JOBS);
    bool known = false;
    for (size_t k = 0; k < n && !known; k++)
        known = strcmp(ids[k], job) == 0;
    pfid_job_tput *slot = known ? pfid_tput_slot(a, job, true) : NULL;
    if (slot != NULL) {
        slot->tok_s = t;
        slot->mono_s = pfid_mono_s();
    }
    pthread_mutex_unlock(&a->snap_lock);
    if (!known) {
        snprintf(msg, sizeof msg, "no job %s on this node", job);
        *status = 404;
        *body = pfid_error_json(msg);
        return;
    }
    if (slot == NULL) {
        *status = 507;
        *body = pfid_error_json("too many jobs");
        return;
    }
    snprintf(msg, sizeof msg, "{\"job\":\"%s\",\"throughput_tok_s\":%.17g}", job, t);
    *status = 200;
    *body = strdup(msg);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *data_size, void **con_cls)
{
    (void)version;
    pfid_agent *a = cls;
    req_ctx *rq = *con_cls;
    if (rq == NULL) {
        char job[PFID_ID_MAX] = "";
        const char *allow;
        enum route r = route_of(method, url, job, &allow);
        if (r == R_NONE && allow != NULL) {
            struct MHD_Response *resp;
            char *b = pfid_error_json("method not allowed");
            if (b == NULL)
                return MHD_NO;
            resp = MHD_create_response_from_buffer(strlen(b), b, MHD_RESPMEM_MUST_FREE);
            if (resp == NULL) {
                free(b);
                return MHD_NO;
            }
            MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
            MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
            enum MHD_Result ret = MHD_queue_response(c, 405, resp);
            MHD_destroy_response(resp);
            return ret;
        }
        if (r == R_NONE)
            return send_error(c, 404, "no such resource: %s %.200s", method, url);
        bool write = r == R_CAPS_PUT || r == R_CAPS_DELETE || r == R_TPUT;
        bool needs_auth = write || (a->cfg.auth_reads && (r == R_METRICS || r == R_STATE));
        if (needs_auth && !authorised(a, c)) {
            LOG_INFO("%s %s: 401 (missing or wrong bearer token)", method, url);
            return send_error(c, 401, a->token_len == 0
                                          ? "writes are disabled: no token is configured"
                                          : "missing or wrong bearer token");
        }
        if (r == R_HEALTHZ)
            return healthz(a, c);
        if (r == R_METRICS) {
            size_t len;
            char *m = pfid_metrics_render(a, &len);
            return respond(c, 200, m, "text/plain; version=0.0.4; charset=utf-8");
        }
        if (r == R_STATE)
            return respond(c, 200, pfid_state_render(a), "application/json");
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl != NULL) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(cl, &end, 10);
            if (*end != '\0' || errno != 0 || n > a->cfg.max_body)
                return send_error(c, 413, "request body over %zu bytes", a->cfg.max_body);
        }
        rq = calloc(1, sizeof *rq);
        if (rq == NULL)
            return MHD_NO;
        rq->route = r;
        memcpy(rq->job, job, sizeof job);
        *con_cls = rq;
        return MHD_YES;
    }
    if (*data_size > 0) {
        if (!rq->too_big && rq->len + *data_size > a->cfg.max_body) {
            rq->too_big = true;
            free(rq->body);
            rq->body = NULL;
        }
        if (!rq->too_big) {
            if (rq->len + *data_size + 1 > rq->cap) {
                size_t nc = rq->len + *data_size + 1;
                char *nb = realloc(rq->body, nc);
                if (nb == NULL)
                    return MHD_NO;
                rq->body = nb;
                rq->cap = nc;
            }
            memcpy(rq->body + rq->len, data, *data_size);
            rq->len += *data_size;
        }
        *data_size = 0;
        return MHD_YES;
    }
    if (rq->too_big)
        return send_error(c, 413, "request body over %zu bytes", a->cfg.max_body);
    int status = 500;
    char *body = NULL;
    const char *b = rq->body ? rq->body : "";
    switch (rq->route) {
    case R_CAPS_PUT:
        pfid_caps_put(a, b, rq->len, &status, &body);
        break;
    case R_CAPS_DELETE:
        pfid_caps_delete(a, &status, &body);
        break;
    case R_TPUT:
        pfid_throughput_post(a, rq->job, b, rq->len, &status, &body);
        break;
    default:
        break;
    }
    if (status >= 400)
        LOG_INFO("%s %s: %d", method, url, status);
    return respond(c, (unsigned)status, body, "application/json");
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    req_ctx *rq = *con_cls;
    if (rq != NULL) {
        free(rq->body);
        free(rq);
        *con_cls = NULL;
    }
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && msg[n - 1] == '\n')
        msg[--n] = '\0';
    LOG_WARN("http: %s", msg);
}

/* "host:port" or "[v6]:port" into a sockaddr. */
static bool parse_listen(const char *s, struct sockaddr_storage *ss, bool *v6)
{
    char host[128];
    const char *port;
    if (s[0] == '[') {
        const char *e = strchr(s, ']');
        if (e == NULL || e[1] != ':' || (size_t)(e - s - 1) >= sizeof host)
            return false;
        memcpy(host, s + 1, (size_t)(e - s - 1));
        host[e - s - 1] = '\0';
        port = e + 2;
    } else {
        const char *e = strrchr(s, ':');
        if (e == NULL || (size_t)(e - s) >= sizeof host)
            return false;
        memcpy(host, s, (size_t)(e - s));
        host[e - s] = '\0';
        port = e + 1;
    }
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host[0] ? host : NULL, port, &hints, &res) != 0 || res == NULL)
        return false;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *v6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    return true;
}

static void write_port_file(const char *path, unsigned port)
{
    char tmp[PFID_PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (f == NULL || fprintf(f, "%u\n", port) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        LOG_ERROR("cannot write port file %s: %s", path, strerror(errno));
        unlink(tmp);
    }
}

struct MHD_Daemon *pfid_http_start(pfid_agent *a)
{
    struct sockaddr_storage ss;
    bool v6 = false;
    if (!parse_listen(a->cfg.listen, &ss, &v6)) {
        LOG_ERROR("listen: '%s' is not ADDRESS:PORT (numeric, e.g. 127.0.0.1:9400)",
                  a->cfg.listen);
        return NULL;
    }
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (v6)
        flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, handle, a,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, a,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)a->cfg.threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)a->cfg.max_connections,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(a->cfg.conn_timeout_s + 0.5),
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768,
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)(256 * 1024),
        MHD_OPTION_NOTIFY_COMPLETED, completed, a,
        MHD_OPTION_END);
    if (d == NULL) {
        LOG_ERROR("cannot listen on %s (address in use, or not an address of this host?)",
                  a->cfg.listen);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = info ? info->port : 0;
    LOG_INFO("listening on %s (port %u), %u thread(s), %u connection(s) at most", a->cfg.listen,
             port, a->cfg.threads, a->cfg.max_connections);
    if (a->cfg.port_file[0] != '\0')
        write_port_file(a->cfg.port_file, port);
    return d;
}

void pfid_http_stop(struct MHD_Daemon *d)
{
    if (d != NULL)
        MHD_stop_daemon(d);
}
