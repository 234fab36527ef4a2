/*
 * pfid's HTTP API (docs/agent-api.md) on the shared server (pfi/http.h): its routes,
 * which requests need the bearer token, and the handlers of each route.
 *
 * Limits are explicit: a thread pool of cfg.threads, at most cfg.max_connections
 * connections, an idle timeout, and a body cap — the declared Content-Length is checked
 * before any byte of the body is read (413 at once), and a chunked body is cut off when it
 * passes the cap. Unauthenticated writes are answered before their body is read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "pfi/http.h"
#include "request.h"

enum route {
    R_NONE = 0,
    R_HEALTHZ,
    R_METRICS,
    R_STATE,
    R_CAPS_PUT,
    R_CAPS_DELETE,
    R_TPUT,
    R_CLOCK
};

/* Reply with body (malloc'ed, freed here; NULL: out of memory, answered 500). */
static pfi_http_next respond(pfi_http_request *rq, unsigned status, char *body, const char *type)
{
    static const char oom[] = "{\"error\": \"out of memory\"}";
    if (body == NULL)
        status = 500;
    pfi_http_header h[] = {{"Content-Type", type},
                           {"Cache-Control", "no-store"},
                           {status == 401 ? "WWW-Authenticate" : NULL, "Bearer"},
                           {NULL, NULL}};
    pfi_http_next next = pfi_http_reply(rq, status, body != NULL ? body : oom, h);
    free(body);
    return next;
}

static pfi_http_next send_error(pfi_http_request *rq, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static pfi_http_next send_error(pfi_http_request *rq, unsigned status, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return respond(rq, status, pfid_error_json(msg), "application/json");
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
    if (strcmp(url, "/v1/clock") == 0)
        return strcmp(method, "POST") == 0 ? R_CLOCK : (*allow = "POST", R_NONE);
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

/* The scope the request's token grants (NONE: no or a wrong token), its name into
 * name[64] for the logs. Strict: "Bearer TOKEN" and nothing else (pfi_http_tokens_match). */
static pfi_http_scope authorised(pfid_agent *a, const pfi_http_request *rq, char *name)
{
    const char *h = NULL;
    size_t hl = 0;
    name[0] = '\0';
    if (!pfi_http_request_header_n(rq, "Authorization", &h, &hl))
        return PFI_HTTP_SCOPE_NONE;
    pthread_mutex_lock(&a->snap_lock); /* the tokens may be replaced by SIGHUP */
    const pfi_http_token *t = pfi_http_tokens_match(&a->tokens, h, hl);
    pfi_http_scope s = t != NULL ? t->scope : PFI_HTTP_SCOPE_NONE;
    if (t != NULL)
        snprintf(name, 64, "%s", t->name);
    pthread_mutex_unlock(&a->snap_lock);
    return s;
}

static pfi_http_next healthz(pfid_agent *a, pfi_http_request *rq)
{
    pthread_mutex_lock(&a->snap_lock);
    double age = pfid_mono_s() - a->heartbeat_mono_s;
    pthread_mutex_unlock(&a->snap_lock);
    double stale = a->cfg.stale_s > 0 ? a->cfg.stale_s : 3 * a->cfg.interval_s;
    if (age > stale) {
        char msg[128];
        snprintf(msg, sizeof msg, "stalled: last sampling round %.1f s ago\n", age);
        return respond(rq, 503, strdup(msg), "text/plain; charset=utf-8");
    }
    return respond(rq, 200, strdup("ok\n"), "text/plain; charset=utf-8");
}

void pfid_throughput_post(pfid_agent *a, const char *job, const char *req, size_t len, int *status,
                          char **body)
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

/* 405 with the methods the path takes. */
static pfi_http_next method_not_allowed(pfi_http_request *rq, const char *allow)
{
    char *b = pfid_error_json("method not allowed");
    if (b == NULL)
        return PFI_HTTP_CLOSE;
    pfi_http_header h[] = {{"Allow", allow}, {"Content-Type", "application/json"}, {NULL, NULL}};
    pfi_http_next next = pfi_http_reply(rq, 405, b, h);
    free(b);
    return next;
}

/*
 * The headers are in: unknown routes and methods, the token, the reads (answered now) and
 * the declared body length; a write goes on to read its body (on_body).
 */
static pfi_http_next on_head(void *cls, pfi_http_request *rq)
{
    pfid_agent *a = cls;
    const char *method = pfi_http_request_method(rq), *url = pfi_http_request_url(rq);
    char job[PFID_ID_MAX] = "";
    const char *allow;
    enum route r = route_of(method, url, job, &allow);
    if (r == R_NONE && allow != NULL)
        return method_not_allowed(rq, allow);
    if (r == R_NONE)
        return send_error(rq, 404, "no such resource: %s %.200s", method, url);
    bool write = r == R_CAPS_PUT || r == R_CAPS_DELETE || r == R_TPUT || r == R_CLOCK;
    bool needs_auth = write || (a->cfg.auth_reads && (r == R_METRICS || r == R_STATE));
    char who[64];
    pfi_http_scope scope = needs_auth ? authorised(a, rq, who) : PFI_HTTP_SCOPE_NONE;
    if (needs_auth && scope == PFI_HTTP_SCOPE_NONE) {
        LOG_INFO("%s %s: 401 (missing or wrong bearer token)", method, url);
        return send_error(rq, 401,
                          a->tokens.n == 0 ? "writes are disabled: no token is configured"
                                           : "missing or wrong bearer token");
    }
    if (write && scope != PFI_HTTP_SCOPE_CONTROL) {
        LOG_WARN("%s %s: 403 (token %s has scope read)", method, url, who);
        return send_error(rq, 403, "token %s may read, not write (scope read)", who);
    }
    if (write)
        LOG_INFO("%s %s by token %s", method, url, who);
    if (r == R_HEALTHZ)
        return healthz(a, rq);
    if (r == R_METRICS) {
        size_t len;
        char *m = pfid_metrics_render(a, &len);
        return respond(rq, 200, m, "text/plain; version=0.0.4; charset=utf-8");
    }
    if (r == R_STATE)
        return respond(rq, 200, pfid_state_render(a), "application/json");
    if (pfi_http_request_body_over(rq, a->cfg.max_body))
        return send_error(rq, 413, "request body over %zu bytes", a->cfg.max_body);
    return PFI_HTTP_READ_BODY;
}

/* A write's body is in: run it. Its route is found again from the method and path (the
 * same answer as on_head's, which let it through). */
static pfi_http_next on_body(void *cls, pfi_http_request *rq, const char *body, size_t len,
                             bool too_big)
{
    pfid_agent *a = cls;
    const char *method = pfi_http_request_method(rq), *url = pfi_http_request_url(rq);
    if (too_big)
        return send_error(rq, 413, "request body over %zu bytes", a->cfg.max_body);
    char job[PFID_ID_MAX] = "";
    const char *allow;
    int status = 500;
    char *reply = NULL;
    switch (route_of(method, url, job, &allow)) {
    case R_CAPS_PUT:
        pfid_caps_put(a, body, len, &status, &reply);
        break;
    case R_CAPS_DELETE:
        pfid_caps_delete(a, pfi_http_request_header(rq, "X-Pfi-Lease"), &status, &reply);
        break;
    case R_TPUT:
        pfid_throughput_post(a, job, body, len, &status, &reply);
        break;
    case R_CLOCK:
        pfid_clock_post(a, body, len, &status, &reply);
        break;
    default:
        break;
    }
    if (status >= 400)
        LOG_INFO("%s %s: %d", method, url, status);
    return respond(rq, (unsigned)status, reply, "application/json");
}

static void server_log(void *cls, const char *line)
{
    (void)cls;
    LOG_WARN("http: %s", line);
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

struct pfi_http_server *pfid_http_start(pfid_agent *a)
{
    struct sockaddr_storage ss;
    if (!pfi_http_address_parse(a->cfg.listen, &ss)) {
        LOG_ERROR("listen: '%s' is not ADDRESS:PORT (numeric, e.g. 127.0.0.1:9400)", a->cfg.listen);
        return NULL;
    }
    pfi_http_server_config hc = {.addr = (const struct sockaddr *)&ss,
                                 .threads = a->cfg.threads,
                                 .max_connections = a->cfg.max_connections,
                                 .idle_timeout_s = (unsigned)(a->cfg.conn_timeout_s + 0.5),
                                 .max_per_client = a->cfg.max_per_client,
                                 .body_timeout_s = a->cfg.conn_timeout_s,
                                 .connection_memory_b = 32768,
                                 .thread_stack_b = 256 * 1024,
                                 .max_body = a->cfg.max_body,
                                 .on_head = on_head,
                                 .on_body = on_body,
                                 .log = server_log,
                                 .cls = a};
    pfi_http_server *s;
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = pfi_http_server_start(&hc, &s, &d);
    if (e == PFI_ERR_UNAVAILABLE) {
        LOG_ERROR("%s", d.message);
        return NULL;
    }
    if (e != PFI_OK) {
        LOG_ERROR("cannot listen on %s (address in use, or not an address of this host?)",
                  a->cfg.listen);
        return NULL;
    }
    unsigned port = pfi_http_server_port(s);
    LOG_INFO("listening on %s (port %u), %u thread(s), %u connection(s) at most", a->cfg.listen,
             port, a->cfg.threads, a->cfg.max_connections);
    if (a->cfg.port_file[0] != '\0')
        write_port_file(a->cfg.port_file, port);
    return s;
}

void pfid_http_stop(struct pfi_http_server *s)
{
    pfi_http_server_stop(s);
}
