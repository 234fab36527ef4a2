/*
 * pfi control — the closed-loop cluster controller (pfi/control.h), its small HTTP API
 * (PUT /v1/budget, GET /metrics) and `pfi control status`; pfi report — the audit log as a
 * figure.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "control_topo.h"
#include "grid_cli.h"
#include "pfi/audit.h"
#include "pfi/conf.h"
#include "pfi/control.h"
#include "pfi/grid.h"
#include "pfi/http.h"
#include "pfi/memory.h"
#include "pfi/topology.h"
#include "pfi/value.h"
#include "slurm_ctl.h"

static volatile sig_atomic_t g_stop, g_reload;
static void on_signal(int s)
{
    (void)s;
    g_stop = 1;
}
static void on_hup(int s)
{
    (void)s;
    g_reload = 1;
}

/* SIGHUP asks for a reload, every time: sigaction, not signal(), which under strict POSIX
 * feature macros resets the handler after the first delivery (System V semantics). */
static void take_sighup(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_hup;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGHUP, &sa, NULL);
}

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the controller's HTTP API ------------------------------------------------------------ */

#define API_MAX_BODY 4096 /* bytes of a PUT /v1/budget body */
#define API_MAX_BANDS 256 /* jobs whose band PUT /v1/jobs/ID set */

typedef struct api_state {
    pthread_mutex_t mu;
    const char *db; /* --db: a PUT's budget is stored there before it is answered (NULL) */
    const pfi_http_tokens *tokens; /* writes need a control token (none: writes refused) */
    bool budget_set;               /* a PUT /v1/budget is in force */
    bool event;
    double budget_w, reduction;
    unsigned long target_seq; /* PUTs that changed the target: the loop starts a period */
    pthread_cond_t changed;   /* signalled with target_seq (CLOCK_MONOTONIC) */
    pfi_ctl_report last;
    unsigned long periods; /* periods published (0: none yet, last is empty) */
    double top_limit_w;    /* --topology's top level's limit (NaN: none): the most it draws */
    char *jobs_text;       /* per-job metric lines of the last period (owned) */
    char *agents_text;     /* per-agent metric lines (refusals by reason, up) (owned) */
    char band_job[API_MAX_BANDS][PFI_CTL_ID_LEN]; /* PUT /v1/jobs/ID {"band": B}: in force */
    double band[API_MAX_BANDS];                   /* from the next period, over every other */
    size_t n_band;                                /* source (api_apply_bands) */
    pfi_ctl_rule *band_rules; /* the loop's: the rules with those bands (owned) */
} api_state;

/* ---- durable intent (DESIGN §10) ----------------------------------------------------------
 * The target in force — a PUT /v1/budget, or the command line's --budget-w / --reduction /
 * --schedule with its timing — is one row of ctl_intent in the --db, written (its own
 * connection, so the API thread can write it before answering) whenever it changes, and read
 * back by a controller restarted on the same --db. */

/* Store the intent: source "api" or "command-line", its JSON. false with err on failure. */
static bool intent_save(const char *db, const char *source, const char *json, char *err, size_t n)
{
    sqlite3 *s = NULL;
    bool ok =
        sqlite3_open_v2(db, &s, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) == SQLITE_OK;
    sqlite3_stmt *st = NULL;
    if (ok) {
        sqlite3_busy_timeout(s, 2000);
        ok = sqlite3_exec(
                 s,
                 "CREATE TABLE IF NOT EXISTS ctl_intent(id INTEGER PRIMARY KEY CHECK(id = 1),"
                 " set_wall REAL, source TEXT, intent TEXT)",
                 NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_prepare_v2(s, "INSERT OR REPLACE INTO ctl_intent VALUES(1, ?, ?, ?)", -1, &st,
                                NULL) == SQLITE_OK;
    }
    if (ok) {
        sqlite3_bind_double(st, 1, now_wall());
        sqlite3_bind_text(st, 2, source, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, json, -1, SQLITE_STATIC);
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    if (!ok)
        snprintf(err, n, "%s: %s", db, s ? sqlite3_errmsg(s) : "cannot open");
    sqlite3_finalize(st);
    sqlite3_close(s);
    return ok;
}

/* The stored intent: its source (into source[n]), JSON (malloc'ed, *json) and when it was
 * set. false when there is none. */
static bool intent_load(const char *db, char *source, size_t n, char **json, double *set_wall)
{
    sqlite3 *s = NULL;
    sqlite3_stmt *st = NULL;
    bool ok = false;
    *json = NULL;
    if (sqlite3_open_v2(db, &s, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(s, "SELECT set_wall, source, intent FROM ctl_intent WHERE id = 1", -1,
                           &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 1) != NULL &&
        sqlite3_column_text(st, 2) != NULL) {
        *set_wall = sqlite3_column_double(st, 0);
        snprintf(source, n, "%s", (const char *)sqlite3_column_text(st, 1));
        *json = strdup((const char *)sqlite3_column_text(st, 2));
        ok = *json != NULL;
    }
    sqlite3_finalize(st);
    sqlite3_close(s);
    return ok;
}

/* Reply with body (malloc'ed, freed here; NULL: out of memory, the connection is closed). */
static pfi_http_next api_reply(pfi_http_request *rq, unsigned status, const char *type, char *body)
{
    if (body == NULL)
        return PFI_HTTP_CLOSE;
    pfi_http_header h[] = {{"Content-Type", type}, {NULL, NULL}};
    pfi_http_next next = pfi_http_reply(rq, status, body, h);
    free(body);
    return next;
}

/* A JSON number, or null for a missing value. */
static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static pfi_http_next api_error(pfi_http_request *rq, unsigned status, const char *msg)
{
    json_t *o = json_pack("{s:s}", "error", msg);
    char *b = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return api_reply(rq, status, "application/json", b);
}

/* Whether the JSON object o (or a non-object: false) has a key not in known (NULL-ended):
   then *ret is the 400 answer naming it and what was expected (expected: the known keys in
   words). */
static bool api_unknown_key(pfi_http_request *rq, json_t *o, const char *const *known,
                            const char *expected, pfi_http_next *ret)
{
    const char *key;
    json_t *val;
    json_object_foreach(o, key, val)
    {
        size_t k = 0;
        while (known[k] != NULL && strcmp(key, known[k]) != 0)
            k++;
        if (known[k] == NULL) {
            char sk[CLI_SAFE_CELL], m[CLI_SAFE_CELL + 96];
            snprintf(m, sizeof m, "unknown key '%s': expected %s",
                     cli_safe(sk, sizeof sk, key, strlen(key)), expected);
            *ret = api_error(rq, 400, m);
            return true;
        }
    }
    return false;
}

static void metric(char **b, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void metric(char **b, size_t *len, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(*b + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (w < 0)
            return;
        if ((size_t)w < *cap - *len) {
            *len += (size_t)w;
            return;
        }
        char *q = realloc(*b, *cap * 2);
        if (q == NULL)
            return;
        *b = q;
        *cap *= 2;
    }
}

static void gauge(char **b, size_t *len, size_t *cap, const char *name, const char *help, double v)
{
    metric(b, len, cap, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
    if (isfinite(v))
        metric(b, len, cap, "%s %.17g\n", name, v);
}

/* The limits that bound the period's allocation (r->bound, the audit log's bound column:
 * "site budget (measured)", "rack 'r1' (reserve 4000 W, line 3)", "ramp", ...), one series a
 * limit, labelled with its kind (reserve, measured; ramp: a ramp held the caps back; other)
 * and the limit as the column names it. Items end at ", " outside parentheses and quotes (a
 * level's NAME holds no space). No series when nothing bound. */
static void bound_metrics(char **b, size_t *len, size_t *cap, const char *bound)
{
    metric(b, len, cap,
           "# HELP pfi_ctl_limit_bound 1 for each limit that bound the period's allocation "
           "(the audit log's bound column), by kind: reserve, measured, ramp\n"
           "# TYPE pfi_ctl_limit_bound gauge\n");
    for (const char *p = bound; *p != '\0';) {
        const char *q = p, *open = NULL;
        int depth = 0;
        bool quote = false;
        for (; *q != '\0'; q++) {
            if (*q == '\'') {
                quote = !quote;
            } else if (quote) {
                continue;
            } else if (*q == '(') {
                if (depth++ == 0 && open == NULL)
                    open = q + 1; /* the first parenthesis: its first word is the kind */
            } else if (*q == ')' && depth > 0) {
                depth--;
            } else if (depth == 0 && q[0] == ',' && q[1] == ' ') {
                break;
            }
        }
        const char *kind = strncmp(p, "ramp", 4) == 0 ? "ramp" : "other";
        if (kind[0] == 'o' && open != NULL && strncmp(open, "reserve", 7) == 0)
            kind = "reserve";
        else if (kind[0] == 'o' && open != NULL && strncmp(open, "measured", 8) == 0)
            kind = "measured";
        char lab[4 * 160 + 4]; /* the item as a label value: \\, \" and \n escaped */
        size_t n = 0;
        for (const char *c = p; c < q && n + 3 < sizeof lab; c++) {
            if (*c == '\\' || *c == '"')
                lab[n++] = '\\';
            if (*c == '\n') {
                lab[n++] = '\\';
                lab[n++] = 'n';
            } else {
                lab[n++] = *c;
            }
        }
        lab[n] = '\0';
        metric(b, len, cap, "pfi_ctl_limit_bound{kind=\"%s\",limit=\"%s\"} 1\n", kind, lab);
        p = *q != '\0' ? q + 2 : q;
    }
}

/* GET /metrics: the last period's report and per-job caps, Prometheus text. */
static pfi_http_next api_metrics(api_state *s, pfi_http_request *rq)
{
    size_t cap = 4096, len = 0;
    char *o = malloc(cap);
    if (o == NULL)
        return PFI_HTTP_CLOSE;
    o[0] = '\0';
    pthread_mutex_lock(&s->mu);
    const pfi_ctl_report *r = &s->last;
    gauge(&o, &len, &cap, "pfi_ctl_event_active", "1 while a power event is in force", r->event);
    gauge(&o, &len, &cap, "pfi_ctl_budget_watts", "cluster power budget", r->budget_w);
    gauge(&o, &len, &cap, "pfi_ctl_measured_watts", "measured cluster GPU power", r->measured_w);
    gauge(&o, &len, &cap, "pfi_ctl_reserved_watts", "power held for silent agents", r->reserved_w);
    gauge(&o, &len, &cap, "pfi_ctl_predicted_watts",
          "curves' prediction at the caps the readings were taken under", r->predicted_w);
    gauge(&o, &len, &cap, "pfi_ctl_correction_watts", "feedback correction", r->correction_w);
    gauge(&o, &len, &cap, "pfi_ctl_tokens_per_second", "measured tokens/s of all jobs",
          r->tput_tok_s);
    gauge(&o, &len, &cap, "pfi_ctl_agents_up", "agents answering", (double)r->agents_up);
    gauge(&o, &len, &cap, "pfi_ctl_stale_seconds",
          "s since every GPU last had a trustworthy power reading (0: fresh)", r->stale_s);
    gauge(&o, &len, &cap, "pfi_ctl_stale_gpus", "GPUs whose power reading is stale everywhere",
          (double)r->stale_gpus);
    gauge(&o, &len, &cap, "pfi_ctl_prometheus_stale_gpus",
          "GPUs whose Prometheus reading is stale (the agents' used)", (double)r->prom_stale_gpus);
    gauge(&o, &len, &cap, "pfi_ctl_glitch_gpus", "GPUs whose reading was impossible (rejected)",
          (double)r->glitch_gpus);
    gauge(&o, &len, &cap, "pfi_ctl_competing_gpus", "GPUs whose limit changed under the controller",
          (double)r->competing);
    gauge(&o, &len, &cap, "pfi_ctl_caps_refused", "cap requests refused this period",
          (double)r->refused);
    gauge(&o, &len, &cap, "pfi_ctl_budget_infeasible",
          "1 while the budget is below what the jobs' floors need", r->infeasible);
    gauge(&o, &len, &cap, "pfi_ctl_increases_held",
          "1 while increases are held for want of trustworthy readings", r->held);
    bound_metrics(&o, &len, &cap, r->bound);
    if (s->jobs_text != NULL)
        metric(&o, &len, &cap, "%s", s->jobs_text);
    if (s->agents_text != NULL)
        metric(&o, &len, &cap, "%s", s->agents_text);
    pthread_mutex_unlock(&s->mu);
    return api_reply(rq, 200, "text/plain; version=0.0.4; charset=utf-8", o);
}

/* PUT /v1/budget: {"budget_w": W}, {"reduction": r} or {"event": false}, in force from the
 * next period on; a PUT that changes the target wakes the loop, which starts that period at
 * once where it may (control_loop). The token is checked before the body's size. */
static pfi_http_next api_budget(api_state *s, pfi_http_request *rq, const char *body, size_t len,
                                bool too_big)
{
    /* the bearer token was checked from the headers (api_head) */
    if (too_big)
        return api_error(rq, 413, "body larger than 4096 bytes");
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    json_t *bw = json_object_get(o, "budget_w"), *rd = json_object_get(o, "reduction"),
           *ev = json_object_get(o, "event");
    /* a key of none of the three (a typo: "budget_W") would change nothing: refused */
    static const char *const known[] = {"budget_w", "reduction", "event", NULL};
    pfi_http_next ret;
    if (api_unknown_key(rq, o, known, "budget_w, reduction or event", &ret)) {
        /* ret: the 400 naming the key */
    } else if (!json_is_object(o) || (bw && !json_is_number(bw)) || (rd && !json_is_number(rd)) ||
               (ev && !json_is_boolean(ev)) || (bw && rd) ||
               (!bw && !rd && !(ev && json_is_false(ev)))) {
        ret = api_error(rq, 400,
                        "expected {\"budget_w\": W} or {\"reduction\": r} or {\"event\": false}");
    } else if ((bw && !(json_number_value(bw) >= 1 && json_number_value(bw) <= PFI_TOPO_MAX_W)) ||
               (rd && !(json_number_value(rd) >= 0 && json_number_value(rd) <= 1))) {
        ret = api_error(rq, 422, "budget_w must be >= 1 W and <= 1e12 W and reduction in [0, 1]");
    } else {
        /* durable before it is answered: a controller killed right after the 200 resumes it */
        char *js = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        char err[300] = "";
        if (s->db != NULL && (js == NULL || !intent_save(s->db, "api", js, err, sizeof err))) {
            free(js);
            fprintf(stderr, "pfi control: PUT /v1/budget not stored (%s): refused\n", err);
            json_decref(o);
            return api_error(rq, 503, "the budget could not be stored in the controller's --db");
        }
        free(js);
        bool event = !(ev && json_is_false(ev));
        double budget_w = bw ? json_number_value(bw) : NAN,
               reduction = rd ? json_number_value(rd) : NAN;
        pthread_mutex_lock(&s->mu);
        if (!s->budget_set || s->event != event ||
            !(s->budget_w == budget_w || (isnan(s->budget_w) && isnan(budget_w))) ||
            !(s->reduction == reduction || (isnan(s->reduction) && isnan(reduction)))) {
            s->target_seq++; /* a new target: the loop may start a period now (control_loop) */
            pthread_cond_broadcast(&s->changed);
        }
        s->budget_set = true;
        s->event = event;
        s->budget_w = budget_w;
        s->reduction = reduction;
        pthread_mutex_unlock(&s->mu);
        ret = api_reply(rq, 200, "application/json", strdup("{\"ok\":true}"));
    }
    json_decref(o);
    return ret;
}

/* PUT /v1/jobs/ID: {"band": B} (a number in [-1e6, 1e6], as --policy's band=; higher is cut
 * last) sets job ID's priority band from the next period on, over its --policy line's and its
 * --qos-band's; {"band": null} drops it. Unknown keys, a band not a number: 400; out of
 * range: 422; over API_MAX_BANDS jobs: 422. The token was checked from the headers. */
static pfi_http_next api_job(api_state *s, pfi_http_request *rq, const char *id, const char *body,
                             size_t len, bool too_big)
{
    if (too_big)
        return api_error(rq, 413, "body larger than 4096 bytes");
    size_t il = strlen(id);
    bool id_ok = il > 0 && il < PFI_CTL_ID_LEN;
    for (size_t k = 0; id_ok && k < il; k++)
        id_ok = id[k] > ' ' && id[k] < 0x7f && id[k] != '/' && id[k] != '%' && id[k] != '?';
    if (!id_ok)
        return api_error(rq, 400, "expected PUT /v1/jobs/ID with ID a job id (printable, no '/')");
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    json_t *b = json_object_get(o, "band");
    static const char *const known[] = {"band", NULL};
    pfi_http_next ret;
    if (api_unknown_key(rq, o, known, "band", &ret)) {
        /* ret: the 400 naming the key */
    } else if (!json_is_object(o) || b == NULL || !(json_is_number(b) || json_is_null(b))) {
        ret = api_error(rq, 400, "expected {\"band\": B} (a number) or {\"band\": null}");
    } else if (json_is_number(b) && !pfi_band_valid(json_number_value(b))) {
        char m[128], bt[PFI_BAND_TEXT]; /* every band's rule and words (pfi/topology.h) */
        snprintf(m, sizeof m, "band %s: " PFI_BAND_RULE, pfi_band_format(json_number_value(b), bt));
        ret = api_error(rq, 422, m);
    } else {
        pthread_mutex_lock(&s->mu);
        size_t k = 0;
        while (k < s->n_band && strcmp(s->band_job[k], id) != 0)
            k++;
        bool full = k == s->n_band && k == API_MAX_BANDS && !json_is_null(b);
        if (!full && json_is_null(b) && k < s->n_band) { /* dropped: the last one moves here */
            s->n_band--;
            memcpy(s->band_job[k], s->band_job[s->n_band], sizeof s->band_job[k]);
            s->band[k] = s->band[s->n_band];
        } else if (!full && !json_is_null(b)) {
            if (k == s->n_band)
                snprintf(s->band_job[s->n_band++], PFI_CTL_ID_LEN, "%s", id);
            s->band[k] = json_number_value(b);
        }
        pthread_mutex_unlock(&s->mu);
        char sid[CLI_SAFE_CELL];
        cli_safe(sid, sizeof sid, id, il);
        if (full) {
            ret = api_error(rq, 422, "at most 256 jobs' bands may be set through the API");
        } else {
            if (json_is_null(b))
                fprintf(stderr,
                        "pfi control: PUT /v1/jobs/%s: its API band dropped (from the "
                        "next period)\n",
                        sid);
            else
                fprintf(stderr, "pfi control: PUT /v1/jobs/%s: band %s (from the next period)\n",
                        sid, pfi_band_format(json_number_value(b), (char[PFI_BAND_TEXT]){0}));
            ret = api_reply(rq, 200, "application/json", strdup("{\"ok\":true}"));
        }
    }
    json_decref(o);
    return ret;
}

/* GET /v1/status: the last period as a parent controller reads it (pfi/control.h,
 * pfi_ctl_child_status_parse): {"t_s", "event", "budget_w", "measured_w", "reserved_w",
 * "min_w", "max_w", "ramp_limited", "periods"} and, when the jobs' range is known by band,
 * "bands": [{"band", "min_w", "max_w"}, ...] ascending; a missing value is null. */
static pfi_http_next api_status(api_state *s, pfi_http_request *rq)
{
    pthread_mutex_lock(&s->mu);
    const pfi_ctl_report *r = &s->last;
    double max_w = r->ref_w;
    if (isfinite(s->top_limit_w) && !(max_w <= s->top_limit_w))
        max_w = s->top_limit_w;
    json_t *o =
        json_pack("{s:o,s:b,s:o,s:o,s:o,s:o,s:o,s:b,s:I}", "t_s", jnum(r->t_s), "event", r->event,
                  "budget_w", jnum(r->budget_w), "measured_w", jnum(r->measured_w), "reserved_w",
                  jnum(r->reserved_w), "min_w", jnum(r->min_w), "max_w", jnum(max_w),
                  "ramp_limited", r->ramp_limited, "periods", (json_int_t)s->periods);
    json_t *bands = o && r->n_bands > 0 ? json_array() : NULL;
    for (size_t k = 0; bands != NULL && k < r->n_bands; k++)
        json_array_append_new(bands,
                              json_pack("{s:f,s:o,s:o}", "band", r->bands[k].band, "min_w",
                                        jnum(r->bands[k].min_w), "max_w", jnum(r->bands[k].max_w)));
    if (bands != NULL)
        json_object_set_new(o, "bands", bands);
    json_t *jb = o && s->n_band > 0 ? json_object() : NULL; /* PUT /v1/jobs/ID's bands */
    for (size_t k = 0; jb != NULL && k < s->n_band; k++)
        json_object_set_new(jb, s->band_job[k], json_real(s->band[k]));
    if (jb != NULL)
        json_object_set_new(o, "job_bands", jb);
    pthread_mutex_unlock(&s->mu);
    char *b = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (b == NULL)
        return PFI_HTTP_CLOSE;
    return api_reply(rq, 200, "application/json", b);
}

/* A declared body over the bound is refused at once; every other request reads its body. */
static pfi_http_next api_head(void *cls, pfi_http_request *rq)
{
    const api_state *s = cls;
    /* an unauthenticated write is refused before its body is read (pfi/http.h); strict:
     * "Bearer TOKEN" and nothing else; a read-scoped token may not write (403) */
    if (strcmp(pfi_http_request_method(rq), "PUT") == 0 &&
        (strcmp(pfi_http_request_url(rq), "/v1/budget") == 0 ||
         strncmp(pfi_http_request_url(rq), "/v1/jobs/", 9) == 0)) {
        const char *h = NULL;
        size_t hl = 0;
        const pfi_http_token *t =
            pfi_http_request_header_n(rq, "Authorization", &h, &hl) && s->tokens != NULL
                ? pfi_http_tokens_match(s->tokens, h, hl)
                : NULL;
        if (t == NULL)
            return api_error(rq, 401, "missing or wrong bearer token");
        if (t->scope != PFI_HTTP_SCOPE_CONTROL)
            return api_error(rq, 403, "this token may read, not write (scope read)");
        char sn[CLI_SAFE_CELL]; /* the token's name from the token file, escaped */
        fprintf(stderr, "pfi control: PUT %s by token %s\n",
                pfi_http_request_url(rq)[4] == 'b' ? "/v1/budget" : "/v1/jobs/ID",
                cli_safe(sn, sizeof sn, t->name, strlen(t->name)));
    }
    if (pfi_http_request_body_over(rq, API_MAX_BODY))
        return api_error(rq, 413, "body larger than 4096 bytes");
    return PFI_HTTP_READ_BODY;
}

static pfi_http_next api_body(void *cls, pfi_http_request *rq, const char *body, size_t len,
                              bool too_big)
{
    api_state *s = cls;
    const char *method = pfi_http_request_method(rq), *url = pfi_http_request_url(rq);
    if (strcmp(method, "GET") == 0 && strcmp(url, "/metrics") == 0)
        return api_metrics(s, rq);
    if (strcmp(method, "GET") == 0 && strcmp(url, "/v1/status") == 0)
        return api_status(s, rq);
    if (strcmp(url, "/v1/budget") == 0 && strcmp(method, "PUT") == 0)
        return api_budget(s, rq, body, len, too_big);
    if (strncmp(url, "/v1/jobs/", 9) == 0)
        return strcmp(method, "PUT") == 0 ? api_job(s, rq, url + 9, body, len, too_big)
                                          : api_error(rq, 405, "method not allowed (PUT only)");
    if (strcmp(url, "/v1/budget") == 0 || strcmp(url, "/metrics") == 0 ||
        strcmp(url, "/v1/status") == 0)
        return api_error(rq, 405,
                         strcmp(url, "/v1/budget") == 0 ? "method not allowed (PUT /v1/budget)"
                                                        : "method not allowed (GET only)");
    return api_error(rq, 404,
                     "no such endpoint (GET /metrics, GET /v1/status, PUT /v1/budget, "
                     "PUT /v1/jobs/ID)");
}

/* Serve the API on 127.0.0.1:port (loopback only). PFI_EXIT_OK, or an exit code (the error
 * printed). */
static int api_listen(api_state *api, long port, pfi_http_server **out)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    pfi_http_server_config hc = {.addr = (const struct sockaddr *)&sa,
                                 .max_connections = 64,
                                 .idle_timeout_s = 10,
                                 .max_per_client = 16,
                                 .body_timeout_s = 10,
                                 .max_body = API_MAX_BODY,
                                 .on_head = api_head,
                                 .on_body = api_body,
                                 .cls = api};
    pfi_diag d;
    pfi_error e = pfi_http_server_start(&hc, out, &d);
    if (e == PFI_ERR_UNAVAILABLE) {
        cli_error("%s", d.message);
        return PFI_EXIT_DATA;
    }
    if (e != PFI_OK) {
        cli_error("cannot listen on port %ld", port);
        return PFI_EXIT_DATA;
    }
    if (port == 0)
        fprintf(stderr, "pfi control: listening on 127.0.0.1:%u\n", pfi_http_server_port(*out));
    return PFI_EXIT_OK;
}

/* ---- pfi control -------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pfi control --agents FILE (--budget-w W | --reduction R | --schedule FILE |"
            " --listen PORT\n"
            "                   | --topology FILE) [OPTIONS]\n"
            "       pfi control --children FILE (--budget-w W | --schedule FILE) [OPTIONS]\n"
            "       pfi control --config FILE [OPTIONS]\n"
            "       pfi control --config FILE --check\n"
            "       pfi control status --db FILE [--json]\n"
            "\n"
            "Keep the cluster's GPU power under a grid power budget with the most tokens/s:\n"
            "every period read the agents (and Prometheus), estimate each job's curve,\n"
            "allocate, push caps (decreases first, confirmed, then increases), audit.\n"
            "\n"
            "options:\n"
            "  --config FILE        options from a file, pfid.conf's syntax: one 'key = value'\n"
            "                       a line, the key a long option below (budget_w or\n"
            "                       budget-w), a flag true or false; the command line\n"
            "                       overrides it; SIGHUP re-reads it\n"
            "  --check              check the config, the files it names (agents, schedule,\n"
            "                       policy, tiers, tokens: readable, parsed, tokens 16+\n"
            "                       bytes, agents file with tokens not readable by others),\n"
            "                       the --db (writable, no other program's file), --topology\n"
            "                       levels with a limit that no agent's URL host names, and\n"
            "                       exit 0 (valid) or 2; contacts no agent\n"
            "  --agents FILE        one agent a line: URL [TOKEN]\n"
            "  --budget-w W         cluster budget in watts (from --start for --duration)\n"
            "  --reduction R        shed R of the reference power (0.3 or 30%%)\n"
            "  --schedule FILE      events: START END TARGET [RAMP] (s since --epoch), a CSV\n"
            "                       or JSON timeline, or a measured power trace\n"
            "                       (timestamp,total): see 'pfi schedule --help'\n"
            "  --speed N            replay the schedule N times faster (60: a minute a second),\n"
            "                       in [0.0001, 10000]\n"
            "  --tiers FILE         flexibility tiers, CSV job,tier[,allowance]: Flex 1/2/3\n"
            "                       may lose 10/25/50%% of life-average tokens/s, spent\n"
            "                       across the event (floors from what each has lost)\n"
            "  --non-gpu-w W        every node's non-GPU power (W, one node an agent): targets\n"
            "                       are then facility power, and the GPUs get what is left;\n"
            "                       a node whose pfid has node_power_file counts its measured\n"
            "                       non-GPU power instead of W\n"
            "  --start S            event start, s since --epoch (0)\n"
            "  --duration S         event length, s (until stopped)\n"
            "  --ramp S             ramp into the event over S s (0)\n"
            "  --epoch T            Unix time the schedule counts from (now); a restarted\n"
            "                       controller given the same epoch continues the event\n"
            "  --run-for S          stop after S s (until SIGINT/SIGTERM)\n"
            "  --clock emulated[:S] the agents' emulated clock (pfid clock = emulated), the\n"
            "                       schedule's time (S s after --epoch first, 0): each\n"
            "                       period moves every agent's clock to it (POST\n"
            "                       /v1/clock) and runs at once; a replay on emulated GPUs\n"
            "                       is then the same run however loaded the host (not\n"
            "                       with --prometheus; S <= 1e9)\n"
            "  --period S           control period (5)\n");
    pfi_ctl_config c;
    pfi_ctl_config_init(&c);
    cli_names names;
    cli_strategy_names(&names);
    cli_usage_list(f, "  --strategy NAME      ", 23, 80, &names,
                   &(cli_list_style){.sep = ", ", .first = pfi_strategy_name(c.strategy)}, NULL);
    fprintf(f,
            "  --objective NAME     what oracle and pfi-model maximise, each job's tokens/s T\n"
            "                       times its policy weight and: tokens (1, the default),\n"
            "                       weighted (its GPUs / T_ref: the weighted performance),\n"
            "                       mean (1 / T_ref: the jobs' mean performance), balanced\n"
            "                       (the two's sum); T_ref its reference tokens/s\n"
            "  --policy FILE        per-job SLA floors, weights and priority bands:\n"
            "                       JOB floor=F weight=W band=B (higher bands cut last)\n"
            "  --topology FILE      the power tree (see 'pfi allocate --help'): a GPU sits\n"
            "                       under the level named as its agent's hostname; every\n"
            "                       level's limit held each period (reserve: the caps' sum;\n"
            "                       measured: predicted power less the margin), in and out\n"
            "                       of events; ramp=W/s on a level bounds its power's moves;\n"
            "                       the audit log's bound column names the levels that bound\n"
            "  --ramp-w-per-s UP[:DOWN]  the site's ramp: measured power rises at most UP and\n"
            "                       falls at most DOWN W/s (one number: both); a scheduled\n"
            "                       budget is ramped to ahead of its start so that it is met\n"
            "                       then; a limit wins over a ramp, a ramp over the budget\n"
            "                       (stderr says when the ramp cannot reach it: exit 5)\n"
            "  --children FILE      instead of --agents (not with --topology, --db or\n"
            "                       --listen: the children keep those): a site controller\n"
            "                       over child\n"
            "                       controllers, one a line: URL TOKEN (their --listen and\n"
            "                       --token-file); the budget split over the ranges they\n"
            "                       report by priority band (GET /v1/status): the lowest\n"
            "                       band cut first across the site; a silent child keeps\n"
            "                       its last budget, counted as spent (exit 6)\n"
            "  --margin F           safety margin, fraction of the budget (0.03)\n"
            "  --facility-limit-w W after the event, raise caps only under W\n"
            "  --db FILE            audit log (SQLite)\n"
            "  --store FILE         run store with measured sweeps (group = job id)\n"
            "  --model FILE         `pfi fit` model applied to live features\n"
            "  --prometheus URL     telemetry from a Prometheus server\n"
            "  --prom-power M, --prom-energy M, --prom-host-label L, --prom-uuid-label L,\n"
            "  --prom-join-label L, --prom-features NAME=METRIC,...\n"
            "  --listen PORT        serve GET /metrics, GET /v1/status, PUT /v1/budget and\n"
            "                       PUT /v1/jobs/ID {\"band\": B} (a job's band, over the\n"
            "                       policy's and --qos-band's) on 127.0.0.1:PORT\n"
            "  --token-file FILE    bearer token for the PUTs\n"
            "  --keep-caps-on-exit  leave the caps in force when stopped (says which, and until\n"
            "                       when: the lease, then the agents' lease_policy); the\n"
            "                       default puts every GPU back on its original limit\n"
            "  --stale-after S      a reading older than S s is stale (two scrape\n"
            "                       intervals for Prometheus, max(2, 2 x period) for agents)\n"
            "  --prom-scrape-interval S  Prometheus' scrape interval (learnt otherwise)\n"
            "  --controller-id ID   who holds the agents' leases (fencing; pfi-control)\n"
            "  --quiet              no per-period lines\n" CLI_SLURM_USAGE
            "  -h, --help           this help\n"
            "\n"
            "Prints one line a period (a value the period lacks, e.g. the budget outside an\n"
            "event, or an agent's measurement while it does not answer, is '-').\n"
            "`pfi control status` prints the audit log's last period.\n"
            "\n"
            "SIGHUP: the config file (and the command line over it) and the schedule file are\n"
            "read again and the new target is in force from the next period; said on stderr\n"
            "and in that period's audit note. Options other than the target (budget-w,\n"
            "reduction, schedule, speed, start, duration, ramp, epoch) take effect at restart\n"
            "(each change is named). A config that does not parse is refused, loudly, and\n"
            "the running one kept.\n"
            "\n"
            "Failures are loud: a refused cap (HTTP 401/403/409/5xx), an unreachable agent,\n"
            "an infeasible budget, stale or impossible readings and a competing actuator\n"
            "each print one line a period on stderr (agent and reason), count in /metrics\n"
            "(pfi_ctl_cap_refusals_total{agent,reason}, pfi_ctl_stale_seconds, ...) and show\n"
            "in `pfi control status`. Without trustworthy readings the caps stay at the last\n"
            "safe ones (decreases only), never uncapped.\n"
            "\n"
            "Exit codes: 0 stopped by --run-for or a signal with no fault (--check: valid),\n"
            "1 bad or missing input file, 2 bad command line or config (--check: not valid),\n"
            "3 audit log (--db) not written, 4 internal\n"
            "error, 5 the budget could not be met for two periods in a row (infeasible, caps\n"
            "refused, a ramp too slow to reach it, measured power more than 1 %% over it\n"
            "from an event's third period on; with --children: held and minimum\n"
            "budgets above it),\n"
            "6 ran degraded (stale or impossible readings, agents unreachable, a competing\n"
            "actuator; with --children: a child did not answer).\n");
}

/* "123 W", or missing when w is not a number (the summary's prose) */
static cli_numtext watts(double w, const char *missing)
{
    cli_numtext t = cli_num(w, 'f', 0, missing);
    if (isfinite(w))
        snprintf(t.s + strlen(t.s), sizeof t.s - strlen(t.s), " W");
    return t;
}

/* --reduction: "30%" or "0.3", one parser for every command (pfi_reduction_parse). */
static bool parse_reduction(const char *s, double *r)
{
    char why[256];
    if (pfi_reduction_parse(s, r, why, sizeof why) == PFI_VALUE_OK)
        return true;
    cli_error("%s", why);
    return false;
}

enum {
    O_AGENTS = 256,
    O_BUDGET,
    O_REDUCTION,
    O_SCHEDULE,
    O_START,
    O_DURATION,
    O_RAMP,
    O_EPOCH,
    O_RUNFOR,
    O_PERIOD,
    O_STRATEGY,
    O_OBJECTIVE,
    O_POLICY,
    O_MARGIN,
    O_FACILITY,
    O_DB,
    O_STORE,
    O_MODEL,
    O_PROM,
    O_PPOWER,
    O_PENERGY,
    O_PHOST,
    O_PUUID,
    O_PJOIN,
    O_PFEAT,
    O_LISTEN,
    O_TOKEN,
    O_RELEASE,
    O_KEEP,
    O_STALE,
    O_PSCRAPE,
    O_CTLID,
    O_QUIET,
    O_SPEED,
    O_NON_GPU,
    O_TIERS,
    O_TOPOLOGY,
    O_RAMP_RATE,
    O_CHILDREN,
    O_CONFIG,
    O_CHECK,
    O_CLOCK,
    O_HELP,
    O_SLURM /* the CLI_SLURM_OPTIONS: O_SLURM .. O_SLURM + 4 */
};

static const struct option opts[] = {{"agents", required_argument, NULL, O_AGENTS},
                                     {"budget-w", required_argument, NULL, O_BUDGET},
                                     {"reduction", required_argument, NULL, O_REDUCTION},
                                     {"schedule", required_argument, NULL, O_SCHEDULE},
                                     {"start", required_argument, NULL, O_START},
                                     {"duration", required_argument, NULL, O_DURATION},
                                     {"ramp", required_argument, NULL, O_RAMP},
                                     {"epoch", required_argument, NULL, O_EPOCH},
                                     {"run-for", required_argument, NULL, O_RUNFOR},
                                     {"period", required_argument, NULL, O_PERIOD},
                                     {"strategy", required_argument, NULL, O_STRATEGY},
                                     {"objective", required_argument, NULL, O_OBJECTIVE},
                                     {"policy", required_argument, NULL, O_POLICY},
                                     {"margin", required_argument, NULL, O_MARGIN},
                                     {"facility-limit-w", required_argument, NULL, O_FACILITY},
                                     {"db", required_argument, NULL, O_DB},
                                     {"store", required_argument, NULL, O_STORE},
                                     {"model", required_argument, NULL, O_MODEL},
                                     {"prometheus", required_argument, NULL, O_PROM},
                                     {"prom-power", required_argument, NULL, O_PPOWER},
                                     {"prom-energy", required_argument, NULL, O_PENERGY},
                                     {"prom-host-label", required_argument, NULL, O_PHOST},
                                     {"prom-uuid-label", required_argument, NULL, O_PUUID},
                                     {"prom-join-label", required_argument, NULL, O_PJOIN},
                                     {"prom-features", required_argument, NULL, O_PFEAT},
                                     {"listen", required_argument, NULL, O_LISTEN},
                                     {"token-file", required_argument, NULL, O_TOKEN},
                                     {"release-on-exit", no_argument, NULL, O_RELEASE},
                                     {"keep-caps-on-exit", no_argument, NULL, O_KEEP},
                                     {"stale-after", required_argument, NULL, O_STALE},
                                     {"prom-scrape-interval", required_argument, NULL, O_PSCRAPE},
                                     {"controller-id", required_argument, NULL, O_CTLID},
                                     {"quiet", no_argument, NULL, O_QUIET},
                                     {"speed", required_argument, NULL, O_SPEED},
                                     {"non-gpu-w", required_argument, NULL, O_NON_GPU},
                                     {"tiers", required_argument, NULL, O_TIERS},
                                     {"topology", required_argument, NULL, O_TOPOLOGY},
                                     {"ramp-w-per-s", required_argument, NULL, O_RAMP_RATE},
                                     {"children", required_argument, NULL, O_CHILDREN},
                                     {"config", required_argument, NULL, O_CONFIG},
                                     {"check", no_argument, NULL, O_CHECK},
                                     {"clock", required_argument, NULL, O_CLOCK},
                                     {"help", no_argument, NULL, O_HELP},
                                     CLI_SLURM_OPTIONS(O_SLURM),
                                     {NULL, 0, NULL, 0}};

static int load_file(const char *what, const char *path, char **text, size_t *len)
{
    *text = cli_read_text(path, 16u << 20, len); /* a small file (16 MiB) */
    if (*text == NULL) {
        cli_error("%s %s: %s", what, path, cli_input_why());
        return PFI_EXIT_DATA;
    }
    return PFI_EXIT_OK;
}

/* What the command line asked for. */
typedef struct control_opts {
    pfi_ctl_config cfg;
    const char *agents_path, *sched_path, *policy_path, *token_path;
    const char *tiers_path; /* --tiers: flexibility tiers (grid_cli.h) */
    const char *topo_path;  /* --topology: the power tree (pfi/topology.h) */
    bool children;          /* --children: agents_path lists child controllers */
    double budget_w, reduction, start, duration, ramp, epoch, run_for;
    double speed;            /* --speed: the schedule's times divided by it (1) */
    double non_gpu_w;        /* --non-gpu-w: per node (agent); targets are facility power (NaN) */
    long listen_port;        /* -1: no --listen */
    bool keep, quiet;        /* keep: --keep-caps-on-exit */
    int targets;             /* how many of --budget-w, --reduction and --schedule were given */
    bool cmd_target;         /* the target came from the command line (over the config's) */
    cli_slurm *slurm;        /* --slurm, --slurm-suspend (slurm_ctl.h) */
    const char *config_path; /* --config (NULL none) */
    bool check;              /* --check */
    bool epoch_given;        /* --epoch (or epoch in the config) */
    bool clock_emulated;     /* --clock emulated[:S]: the agents' emulated clock */
    double clock_start;      /* its schedule time at the first period (s since --epoch) */
    char **owned;            /* the config's values the fields above point into (owned) */
    size_t n_owned;
} control_opts;

/* The input files, read and parsed (owned; inputs_free). */
typedef struct control_inputs {
    char *atext, *stext, *ptext;
    pfi_http_tokens *tokens; /* --token-file (NULL none) */
    pfi_ctl_agent_spec *agents;
    pfi_ctl_event *events;
    pfi_ctl_rule *rules;
    size_t na, ne, nr;
    grid_tiers *tiers;        /* --tiers (its rules replace the policy's); NULL without */
    pfi_topology *topo;       /* --topology (NULL without) */
    unsigned char *topo_said; /* [na + 1]: what cli_topo_period said (owned) */
} control_inputs;

/* One option's value (getopt's c, its argument arg) into o; false when arg is not valid. */
static bool control_option(control_opts *o, int c, const char *arg)
{
    pfi_ctl_config *cfg = &o->cfg;
    if (c >= O_SLURM && c < O_SLURM + 5)
        return cli_slurm_option(o->slurm, c - O_SLURM, arg);
    switch (c) {
    case O_AGENTS:
        if (o->children)
            return false;
        o->agents_path = arg;
        return true;
    case O_BUDGET:
        /* at most a topology limit (PFI_TOPO_MAX_W); at least 1 W (a budget of 1e-300 W is a
         * typo, and the settlement's excess over it a percentage of 1e305) */
        return cli_parse_double(arg, &o->budget_w) && o->budget_w >= 1 &&
               o->budget_w <= PFI_TOPO_MAX_W;
    case O_REDUCTION:
        return parse_reduction(arg, &o->reduction);
    case O_SCHEDULE:
        o->sched_path = arg;
        return true;
    case O_TIERS:
        o->tiers_path = arg;
        return true;
    case O_TOPOLOGY:
        o->topo_path = arg;
        return true;
    case O_CHILDREN:
        if (o->agents_path != NULL)
            return false;
        o->agents_path = arg;
        o->children = true;
        return true;
    case O_RAMP_RATE: { /* UP[:DOWN] W/s */
        char *colon = strchr(arg, ':');
        if (colon == NULL)
            return cli_parse_double(arg, &cfg->ramp_up_w_per_s) && cfg->ramp_up_w_per_s > 0 &&
                   cli_parse_double(arg, &cfg->ramp_down_w_per_s);
        char up[64];
        if ((size_t)(colon - arg) >= sizeof up)
            return false;
        memcpy(up, arg, (size_t)(colon - arg));
        up[colon - arg] = '\0';
        return cli_parse_double(up, &cfg->ramp_up_w_per_s) && cfg->ramp_up_w_per_s > 0 &&
               cli_parse_double(colon + 1, &cfg->ramp_down_w_per_s) && cfg->ramp_down_w_per_s > 0;
    }
    case O_NON_GPU:
        return cli_parse_double(arg, &o->non_gpu_w) && o->non_gpu_w >= 0 && isfinite(o->non_gpu_w);
    case O_SPEED:
        /* as pfi schedule's and pfi report --settlement's (1e-300: event ends past a year) */
        return cli_parse_double(arg, &o->speed) && o->speed >= 1e-4 && o->speed <= 1e4;
    case O_START:
        return cli_parse_double(arg, &o->start) && o->start >= 0 && o->start <= PFI_CTL_MAX_EVENT_S;
    case O_DURATION:
        return cli_parse_double(arg, &o->duration) && o->duration > 0 &&
               o->duration <= PFI_CTL_MAX_EVENT_S;
    case O_RAMP:
        return cli_parse_double(arg, &o->ramp) && o->ramp >= 0 && o->ramp <= PFI_CTL_MAX_EVENT_S;
    case O_EPOCH:
        o->epoch_given = true;
        return cli_parse_double(arg, &o->epoch) && o->epoch > 0 &&
               o->epoch < 253402300800.0; /* a Unix time before the year 10000 */
    case O_RUNFOR:
        return cli_parse_double(arg, &o->run_for) && o->run_for > 0 &&
               o->run_for <= PFI_CTL_MAX_EVENT_S;
    case O_CLOCK: /* wall, emulated or emulated:S */
        o->clock_start = 0;
        if (strcmp(arg, "wall") == 0 || strcmp(arg, "emulated") == 0) {
            o->clock_emulated = arg[0] == 'e';
            return true;
        }
        o->clock_emulated = true;
        /* S within what an agent's clock takes (POST /v1/clock: t_s <= 1e9 s) */
        return strncmp(arg, "emulated:", 9) == 0 && cli_parse_double(arg + 9, &o->clock_start) &&
               o->clock_start >= 0 && o->clock_start <= 1e9;
    case O_PERIOD:
        return cli_parse_double(arg, &cfg->period_s) && cfg->period_s >= 0.05;
    case O_STRATEGY:
        return pfi_strategy_parse(arg, &cfg->strategy) == PFI_OK;
    case O_OBJECTIVE: {
        static const char *const names[] = {"tokens", "weighted", "mean", "balanced"};
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            if (strcmp(arg, names[k]) == 0) {
                cfg->objective = (pfi_ctl_objective)k;
                return true;
            }
        return false;
    }
    case O_POLICY:
        o->policy_path = arg;
        return true;
    case O_MARGIN:
        return cli_parse_double(arg, &cfg->margin) && cfg->margin >= 0 && cfg->margin < 0.5;
    case O_FACILITY:
        return cli_parse_double(arg, &cfg->facility_limit_w) && cfg->facility_limit_w > 0;
    case O_DB:
        cfg->audit_path = arg;
        return true;
    case O_STORE:
        cfg->store_path = arg;
        return true;
    case O_MODEL:
        cfg->model_path = arg;
        return true;
    case O_PROM:
        cfg->prom.url = arg;
        return true;
    case O_PPOWER:
        cfg->prom.power_metric = arg;
        return true;
    case O_PENERGY:
        cfg->prom.energy_metric = arg;
        return true;
    case O_PHOST:
        cfg->prom.host_label = arg;
        return true;
    case O_PUUID:
        cfg->prom.uuid_label = arg;
        return true;
    case O_PJOIN:
        cfg->prom.up_join_label = arg;
        return true;
    case O_PFEAT:
        cfg->prom.feature_metrics = arg;
        return true;
    case O_LISTEN: {
        size_t p;
        bool ok = cli_parse_size(arg, &p) && p < 65536;
        o->listen_port = (long)p;
        return ok;
    }
    case O_TOKEN:
        o->token_path = arg;
        return true;
    case O_RELEASE:
        o->keep = false; /* the default; kept for scripts that ask for it */
        return true;
    case O_KEEP:
        o->keep = true;
        return true;
    case O_STALE:
        return cli_parse_double(arg, &cfg->stale_after_s) && cfg->stale_after_s > 0;
    case O_PSCRAPE:
        return cli_parse_double(arg, &cfg->prom.scrape_interval_s) &&
               cfg->prom.scrape_interval_s > 0;
    case O_CTLID:
        cfg->controller_id = arg;
        return strlen(arg) > 0 && strlen(arg) < 128 &&
               strspn(arg,
                      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:@+=-") ==
                   strlen(arg);
    case O_QUIET:
        o->quiet = true;
        return true;
    default:
        return false;
    }
}

static void opts_free(control_opts *o)
{
    for (size_t k = 0; k < o->n_owned; k++)
        free(o->owned[k]);
    free(o->owned);
    o->owned = NULL;
    o->n_owned = 0;
}

/* A copy of s that lives as long as o (the config's values). NULL: out of memory. */
static const char *opts_keep(control_opts *o, const char *s)
{
    char **q = realloc(o->owned, (o->n_owned + 1) * sizeof *q);
    if (q == NULL)
        return NULL;
    o->owned = q;
    if ((q[o->n_owned] = strdup(s)) == NULL)
        return NULL;
    return q[o->n_owned++];
}

/* The targets (--budget-w, --reduction, --schedule) were given where it asks: the command
 * line's replace the config's. */
static bool is_target(int c)
{
    return c == O_BUDGET || c == O_REDUCTION || c == O_SCHEDULE;
}

/* One `key = value` of the --config file (pfi_conf_parse): the key is a long option, '_' for
 * '-'; a flag's value is true or false. */
static pfi_error conf_take(void *ctx, const char *key, const char *value, pfi_diag *d)
{
    control_opts *o = ctx;
    char name[64];
    size_t n = strlen(key);
    const struct option *op = NULL;
    if (n < sizeof name) {
        for (size_t k = 0; k <= n; k++)
            name[k] = key[k] == '_' ? '-' : key[k];
        for (const struct option *p = opts; p->name != NULL && op == NULL; p++)
            if (strcmp(p->name, name) == 0 && p->val != O_CONFIG && p->val != O_CHECK &&
                p->val != O_HELP)
                op = p;
    }
    if (op == NULL) {
        snprintf(d->message, sizeof d->message,
                 "unknown key '%.60s' (a key is a long option of pfi control, e.g. budget_w or "
                 "budget-w; see 'pfi control --help')",
                 key);
        return PFI_ERR_INVALID_ARGUMENT;
    }
    const char *arg = NULL;
    if (op->has_arg == no_argument) {
        if (strcmp(value, "false") == 0 || strcmp(value, "no") == 0 || strcmp(value, "0") == 0)
            return PFI_OK; /* a flag is off unless given */
        if (strcmp(value, "true") != 0 && strcmp(value, "yes") != 0 && strcmp(value, "1") != 0) {
            snprintf(d->message, sizeof d->message,
                     "%s: bad value '%.100s': expected true or false", key, value);
            return PFI_ERR_VALUE;
        }
    } else if ((arg = opts_keep(o, value)) == NULL) {
        return PFI_ERR_NOMEM;
    }
    if (!control_option(o, op->val, arg)) {
        snprintf(d->message, sizeof d->message, "%s: bad value '%.100s' (see 'pfi control --help')",
                 key, value);
        return PFI_ERR_VALUE;
    }
    return PFI_OK;
}

/* --config FILE into o. PFI_EXIT_OK, or PFI_EXIT_USAGE (a bad config; printed with its
 * line) or PFI_EXIT_DATA (the file cannot be read). */
static int control_config(control_opts *o, const char *path)
{
    size_t len = 0;
    char *text = cli_read_head(path, PFI_CONF_MAX_BYTES + 1, &len); /* larger: the parse says */
    if (text == NULL) {
        cli_error("--config %s: %s", path,
                  errno == EISDIR ? "is a directory, not a config file" : cli_input_why());
        return PFI_EXIT_DATA;
    }
    pfi_diag d;
    pfi_diag_clear(&d);
    snprintf(d.file, sizeof d.file, "%s", path);
    pfi_error e = pfi_conf_parse(text, len, conf_take, o, &d);
    free(text);
    if (e == PFI_ERR_NOMEM)
        return cli_report(e, &d);
    if (e != PFI_OK) {
        cli_report(e, &d);
        return PFI_EXIT_USAGE;
    }
    return PFI_EXIT_OK;
}

/*
 * The config file (--config), then the command line over it, into *o (its slurm state is
 * slurm, initialised here). PFI_EXIT_OK with *done false: go on; with *done true: --help was
 * printed. Otherwise the usage error's exit code (the error printed). opts_free(o) after,
 * either way.
 */
static int control_options(int argc, char **argv, control_opts *o, bool *done, cli_slurm *slurm)
{
    *done = false;
    memset(o, 0, sizeof *o);
    pfi_ctl_config_init(&o->cfg);
    o->budget_w = o->reduction = NAN;
    o->duration = o->run_for = INFINITY;
    o->epoch = now_wall();
    o->listen_port = -1;
    o->speed = 1;
    o->non_gpu_w = NAN;
    cli_slurm_init(slurm);
    o->slurm = slurm;
    int c;
    opterr = 0;
    /* first the config file's name (and --help): the file is read before the other options,
     * which override it */
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h' || c == O_HELP) {
            usage(stdout);
            *done = true;
            return PFI_EXIT_OK;
        }
        if (c == O_CONFIG)
            o->config_path = optarg;
        o->check = o->check || c == O_CHECK;
    }
    int rc;
    if (o->config_path != NULL && (rc = control_config(o, o->config_path)) != PFI_EXIT_OK)
        return rc;
    bool cmd_target = false;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == '?' || c == ':')
            return cli_usage_getopt(opts, "h", c, argv);
        if (c == O_CONFIG)
            continue;
        if (c == O_CHECK) {
            o->check = true;
            continue;
        }
        if (is_target(c) && !cmd_target) { /* the command line's target replaces the file's */
            cmd_target = o->cmd_target = true;
            o->budget_w = o->reduction = NAN;
            o->sched_path = NULL;
        }
        if ((c == O_AGENTS && o->children) ||
            (c == O_CHILDREN && o->agents_path != NULL && !o->children)) {
            cli_error("--agents and --children exclude each other (a controller "
                      "drives agents or child controllers, not both)");
            return PFI_EXIT_USAGE;
        }
        bool ok = control_option(o, c, optarg);
        if (!ok && c == O_SLURM + 4)
            return PFI_EXIT_USAGE; /* --qos-band said what is wrong, in one line */
        if (!ok)
            return cli_usage_bad_value(cli_option_name(opts, c), optarg,
                                       c == O_BUDGET  ? "watts from 1 to 1e12"
                                       : c == O_SPEED ? "a number in [0.0001, 10000]"
                                       : c == O_START || c == O_DURATION || c == O_RAMP ||
                                               c == O_RUNFOR
                                           ? "seconds, at most 31536000 (a year)"
                                           : NULL);
    }
    if (o->children && (o->cfg.audit_path != NULL || o->listen_port >= 0)) {
        /* the site keeps no audit log and serves no API: each rack's --db records its own */
        cli_error("--children excludes %s (a site controller keeps no %s: each child "
                  "controller's own --db and --listen do)",
                  o->cfg.audit_path != NULL ? "--db" : "--listen",
                  o->cfg.audit_path != NULL ? "audit log" : "API");
        return PFI_EXIT_USAGE;
    }
    if (o->children && o->topo_path != NULL) {
        cli_error("--children and --topology exclude each other (the children hold "
                  "their own trees' limits)");
        return PFI_EXIT_USAGE;
    }
    if (optind < argc)
        return cli_usage_unexpected(argv[optind]);
    if (o->clock_emulated && isinf(o->run_for) && !o->check) {
        /* the emulated clock runs as fast as the host goes: without an end it would spin */
        cli_error("--clock emulated needs --run-for S (the emulated clock runs its "
                  "periods back to back, with no wall clock to stop it)");
        return PFI_EXIT_USAGE;
    }
    if (o->clock_emulated && (o->cfg.prom.url != NULL || o->children)) {
        cli_error("--clock emulated excludes %s (%s runs on the wall clock)",
                  o->children ? "--children" : "--prometheus",
                  o->children ? "a child controller" : "Prometheus' scraping");
        return PFI_EXIT_USAGE;
    }
    if (o->cfg.model_path != NULL && o->cfg.prom.url == NULL) {
        cli_error("--model needs --prometheus URL (the model reads live features "
                  "from Prometheus; the agents do not export them)");
        return PFI_EXIT_USAGE;
    }
    o->slurm->db = o->cfg.audit_path;
    o->targets = !isnan(o->budget_w) + !isnan(o->reduction) + (o->sched_path != NULL);
    if (o->targets > 1) { /* a conflict, said as one (the command line's or the config's) */
        const char *given[3];
        int k = 0;
        if (!isnan(o->budget_w))
            given[k++] = "--budget-w";
        if (!isnan(o->reduction))
            given[k++] = "--reduction";
        if (o->sched_path != NULL)
            given[k++] = "--schedule";
        cli_error("give one target: %s and %s%s%s both given", given[0], given[1],
                  k > 2 ? " and " : "", k > 2 ? given[2] : "");
        return PFI_EXIT_USAGE;
    }
    if (o->agents_path == NULL || (o->targets == 0 && o->listen_port < 0 && o->topo_path == NULL)) {
        cli_error("--agents and one of --budget-w, --reduction, --schedule (or "
                  "--listen for PUT /v1/budget, or --topology to hold its limits) are required");
        return PFI_EXIT_USAGE;
    }
    return PFI_EXIT_OK;
}

/* A parse error in the file at path, reported with its name (the parsers read text). */
static int report_file(pfi_error e, pfi_diag *d, const char *path)
{
    snprintf(d->file, sizeof d->file, "%s", path);
    return cli_report(e, d);
}

/* Read and parse the agents, schedule and policy files and the token. PFI_EXIT_OK, or the
 * exit code of the first that fails (the error printed); what was read is in *in either way. */
static int control_read_inputs(const control_opts *o, control_inputs *in, int *problems)
{
    int rc;
    size_t len;
    pfi_diag d;
    pfi_error e;
    /* the agents file holds the agents' tokens: read without blocking (a FIFO is refused)
     * and, when it does hold one, it should be the user's alone */
    char *at = NULL;
    if ((e = pfi_http_secret_read(o->agents_path, false, &at, &len, &d)) != PFI_OK) {
        cli_error("%s file: %s", o->children ? "children" : "agents", d.message);
        return PFI_EXIT_DATA;
    }
    /* all len bytes (a NUL inside is the parser's to refuse, naming its line: strdup would
     * stop there while len goes on) */
    in->atext = malloc(len + 1);
    if (in->atext != NULL) {
        memcpy(in->atext, at, len);
        in->atext[len] = '\0';
    }
    pfi_free(at);
    if (in->atext == NULL)
        return PFI_EXIT_INTERNAL;
    if ((e = pfi_ctl_agents_parse(in->atext, len, &in->agents, &in->na, &d)) != PFI_OK)
        return report_file(e, &d, o->agents_path);
    bool tokens = false;
    for (size_t k = 0; k < in->na; k++)
        tokens = tokens || in->agents[k].token[0] != '\0';
    /* each token as long as pfid wants its own: under --check a problem; on a run a child
     * controller's is refused (a rack's control token, which the rack's own pfi control
     * already warns of), an agent's is left to pfid (which warns of its own short ones) */
    bool short_child = false;
    for (size_t k = 0; k < in->na; k++) {
        size_t tl = strlen(in->agents[k].token);
        if (!(tl > 0 && tl < PFI_HTTP_TOKEN_MIN_BYTES))
            continue;
        if (!o->check && !o->children)
            continue;
        short_child = short_child || o->children;
        if (o->check)
            ++*problems;
        char su[CLI_SAFE_CELL]; /* the URL as the file has it, escaped (cli_safe) */
        fprintf(stderr,
                "pfi control: %s file %s: the token of %s %s is short (%zu bytes, under %d): "
                "use 32 random bytes or more\n",
                o->children ? "children" : "agents", o->agents_path,
                o->children ? "child" : "agent",
                cli_safe(su, sizeof su, in->agents[k].url, strlen(in->agents[k].url)), tl,
                PFI_HTTP_TOKEN_MIN_BYTES);
    }
    if (short_child && !o->check)
        return PFI_EXIT_DATA; /* an input refused, as a file that does not parse */
    struct stat ast;          /* a warning on a run; an error (a failed check) under --check */
    if (tokens && stat(o->agents_path, &ast) == 0 && (ast.st_mode & 077) != 0 && ++*problems)
        fprintf(stderr,
                "pfi control: %sagents file %s holds tokens and is readable by others "
                "(mode %03o): chmod 600 %s\n",
                o->check ? "" : "warning: ", o->agents_path, (unsigned)(ast.st_mode & 0777),
                o->agents_path);
    if (o->sched_path != NULL) {
        if ((rc = load_file("schedule", o->sched_path, &in->stext, &len)) != 0)
            return rc;
        /* a text, CSV or JSON timeline, or a measured power trace (pfi/grid.h) */
        if ((e = pfi_grid_schedule_load(in->stext, len, &in->events, &in->ne, NULL, NULL, &d)) !=
            PFI_OK)
            return report_file(e, &d, o->sched_path);
        pfi_grid_schedule_speed(in->events, in->ne, o->speed);
    }
    if (o->policy_path != NULL) {
        if ((rc = load_file("policy", o->policy_path, &in->ptext, &len)) != 0)
            return rc;
        if ((e = pfi_ctl_policy_parse(in->ptext, len, &in->rules, &in->nr, &d)) != PFI_OK)
            return report_file(e, &d, o->policy_path);
    }
    FILE *tsp = NULL; /* a pipe: bounded by PFI_MAX_INPUT_BYTES (cli.h) */
    if (o->topo_path != NULL && (rc = cli_input_spool("topology", o->topo_path, &tsp)) != 0)
        return rc;
    if (o->topo_path != NULL) {
        e = tsp != NULL ? pfi_topology_read_stream(tsp, o->topo_path, &in->topo, &d)
                        : pfi_topology_read(o->topo_path, &in->topo, &d);
        if (tsp != NULL)
            fclose(tsp);
        if (e != PFI_OK)
            return cli_report(e, &d);
    }
    if (o->tiers_path != NULL) { /* after the policy: each tier job gets its own rule */
        if ((in->tiers = calloc(1, sizeof *in->tiers)) == NULL)
            return PFI_EXIT_INTERNAL;
        if ((rc = grid_tiers_load(o->tiers_path, in->rules, in->nr, in->tiers)) != 0)
            return rc;
    } else if (o->slurm->on) { /* the jobs' --pfi-flex tiers are accounted the same way */
        if ((in->tiers = calloc(1, sizeof *in->tiers)) == NULL)
            return PFI_EXIT_INTERNAL;
        if ((rc = grid_tiers_init(in->tiers, in->rules, in->nr)) != 0)
            return rc;
    }
    if (o->token_path != NULL) {
        /* as pfid's: one token a line, named, scoped; the user's file alone, not a FIFO */
        in->tokens = malloc(sizeof *in->tokens);
        if (in->tokens == NULL)
            return PFI_EXIT_INTERNAL;
        if ((e = pfi_http_tokens_load(o->token_path, in->tokens, &d)) != PFI_OK) {
            cli_error("%s", d.message);
            return PFI_EXIT_DATA;
        }
        /* the same minimum length pfid applies to the same file */
        for (size_t k = pfi_http_tokens_short(in->tokens, 0); k < in->tokens->n;
             k = pfi_http_tokens_short(in->tokens, k + 1), ++*problems) {
            char sn[CLI_SAFE_CELL]; /* the token's name from the file, escaped */
            const char *tn = in->tokens->t[k].name;
            fprintf(stderr,
                    "pfi control: warning: token %s in %s is short (%zu bytes, under %d): use "
                    "32 random bytes or more\n",
                    cli_safe(sn, sizeof sn, tn, strlen(tn)), o->token_path, in->tokens->t[k].len,
                    PFI_HTTP_TOKEN_MIN_BYTES);
        }
    } else if (o->listen_port >= 0) {
        /* reads need no token; every write does: said, and counted as a problem by --check */
        fprintf(stderr, "pfi control: warning: --listen without --token-file: every PUT "
                        "/v1/budget is refused (401); the API serves GET only\n");
        ++*problems;
    }
    return PFI_EXIT_OK;
}

static void inputs_free(control_inputs *in)
{
    free(in->atext);
    free(in->stext);
    free(in->ptext);
    free(in->tokens);
    pfi_free(in->agents);
    pfi_free(in->events);
    pfi_free(in->rules);
    if (in->tiers != NULL)
        grid_tiers_free(in->tiers);
    free(in->tiers);
    pfi_topology_destroy(in->topo);
    free(in->topo_said);
}

/*
 * The period's target at schedule time t_sched: a PUT /v1/budget in force wins; else the
 * schedule; else --budget-w / --reduction between --start and its end, ramped in. Returns
 * whether an event is in force; *bw or *red (NaN: not given) is its target.
 */
/* The schedule's (or --budget-w / --reduction's) target at schedule time t with reference
 * power ref: whether an event is in force, its *bw or *red (the other NaN). */
static bool scheduled_target(const control_opts *o, const control_inputs *in, double ref, double t,
                             double *bw, double *red)
{
    *bw = *red = NAN;
    if (in->events != NULL)
        return pfi_ctl_schedule_at(in->events, in->ne, t, ref, red, bw);
    bool event = o->targets > 0 && t >= o->start && t < o->start + o->duration;
    if (event) {
        double kk = o->ramp > 0 ? fmin(1, (t - o->start) / o->ramp) : 1;
        if (!isnan(o->reduction))
            *red = kk * o->reduction;
        else
            *bw = isfinite(ref) && ref > o->budget_w ? ref + kk * (o->budget_w - ref) : o->budget_w;
    }
    return event;
}

static bool period_target(const control_opts *o, const control_inputs *in, api_state *api,
                          double t_sched, double non_gpu_w, double *bw, double *red)
{
    bool event = false;
    double ref = api->last.ref_w > 0 ? api->last.ref_w : NAN;
    if (!isnan(non_gpu_w)) /* targets on facility power ramp from the facility's reference */
        ref += non_gpu_w;
    *bw = *red = NAN;
    pthread_mutex_lock(&api->mu);
    bool api_set = api->budget_set;
    if (api_set) {
        event = api->event;
        *bw = api->budget_w;
        *red = api->reduction;
    }
    pthread_mutex_unlock(&api->mu);
    if (api_set)
        return event;
    return scheduled_target(o, in, ref, t_sched, bw, red);
}

/*
 * With a ramp (--ramp-w-per-s, a topology level's ramp): the budget to hold now so that
 * every scheduled budget ahead can be met falling no faster than the ramps allow (the last
 * period's allowed fall rate): the fall starts before the event's start when it must, so
 * that the caps for each budget are in force a period before it (they are measured then).
 * The horizon is the time to fall from the reference to 0, sampled in 4 096 steps (at most a
 * day). A PUT /v1/budget has no future: no lead. *event, *bw, *red updated; true when the
 * lead is what binds now.
 */
static bool ramp_lead(const control_opts *o, const control_inputs *in, api_state *api,
                      double t_sched, bool *event, double *bw, double *red)
{
    double rate = api->last.ramp_down_w_per_s, ref = api->last.ref_w;
    pthread_mutex_lock(&api->mu);
    bool api_set = api->budget_set;
    pthread_mutex_unlock(&api->mu);
    if (api_set || o->targets == 0 || !(rate > 0) || !isfinite(rate) || !(ref > 0))
        return false;
    double now_w = !*event ? INFINITY : isnan(*bw) ? (1 - *red) * ref : *bw;
    double horizon = fmin(86400.0, ref / rate), step = fmax(o->cfg.period_s, horizon / 4096);
    double tw[4097], bwk[4097];
    size_t n = 0;
    for (double tau = t_sched + step; tau <= t_sched + horizon + step && n < 4097; tau += step) {
        double b, r;
        if (!scheduled_target(o, in, ref, tau, &b, &r))
            continue;
        tw[n] = tau;
        bwk[n++] = isnan(b) ? (1 - r) * ref : b;
    }
    /* the caps set now are measured a period later, and the allocation holds the budget
     * less the margin: the deadline is a period early, the rate on the budget scaled up */
    double m = 1 - o->cfg.margin;
    /* and 10 % slack on the rate: the allowed rate moves with the powers' shares */
    double lead = pfi_ctl_ramp_lead(t_sched + o->cfg.period_s, now_w, tw, bwk, n, 0.9 * rate / m);
    if (!(lead < now_w - 0.5) || !(lead * m < ref))
        return false;
    *event = true;
    *bw = lead;
    *red = NAN;
    return true;
}

/* The command line's (and config's) target stored in the --db as the intent. PFI_EXIT_OK, or
 * PFI_EXIT_OUTPUT (printed). */
static int intent_store_cmdline(const control_opts *o, const control_inputs *in)
{
    int rc = PFI_EXIT_OK;
    json_t *w = json_pack("{s:f,s:f,s:f,s:f}", "start_s", o->start, "ramp_s", o->ramp, "epoch",
                          o->epoch, "duration_s", isfinite(o->duration) ? o->duration : 1e300);
    if (isfinite(o->budget_w))
        json_object_set_new(w, "budget_w", json_real(o->budget_w));
    if (isfinite(o->reduction))
        json_object_set_new(w, "reduction", json_real(o->reduction));
    if (in->stext != NULL)
        json_object_set_new(w, "schedule", json_string(in->stext));
    char *t = json_dumps(w, JSON_COMPACT | JSON_SORT_KEYS);
    char err[300] = "";
    if (t == NULL || !intent_save(o->cfg.audit_path, "command-line", t, err, sizeof err)) {
        cli_error("cannot store the target in %s: %s", o->cfg.audit_path, err);
        rc = PFI_EXIT_OUTPUT;
    }
    free(t);
    json_decref(w);
    return rc;
}

/*
 * The intent across restarts: a PUT /v1/budget stored in the --db is resumed (it wins over
 * the command line, as it did before the restart); a command-line target is stored, and one
 * stored is resumed by a controller started without any (--listen only). Said on stderr.
 * PFI_EXIT_OK or an exit code (the error printed).
 */
static int control_intent(control_opts *o, control_inputs *in, api_state *api)
{
    char source[32], *js = NULL;
    double set_wall = NAN;
    bool have = intent_load(o->cfg.audit_path, source, sizeof source, &js, &set_wall);
    json_t *j = have ? json_loads(js, 0, NULL) : NULL;
    free(js);
    int rc = PFI_EXIT_OK;
    if (j != NULL && strcmp(source, "api") == 0) {
        json_t *bw = json_object_get(j, "budget_w"), *rd = json_object_get(j, "reduction"),
               *ev = json_object_get(j, "event");
        api->budget_set = true;
        api->event = !(ev && json_is_false(ev));
        api->budget_w = json_is_number(bw) ? json_number_value(bw) : NAN;
        api->reduction = json_is_number(rd) ? json_number_value(rd) : NAN;
        fprintf(stderr,
                "pfi control: resumed from %s the target PUT /v1/budget set %.0f s ago: %s\n",
                o->cfg.audit_path, now_wall() - set_wall,
                !api->event               ? "no event"
                : isfinite(api->budget_w) ? "budget_w"
                                          : "reduction");
    } else if (j != NULL && o->targets == 0 && strcmp(source, "command-line") == 0) {
        json_t *v;
        double *num[] = {&o->budget_w, &o->reduction, &o->start, &o->duration, &o->ramp, &o->epoch};
        const char *key[] = {"budget_w", "reduction", "start_s", "duration_s", "ramp_s", "epoch"};
        for (size_t k = 0; k < 6; k++)
            if (json_is_number(v = json_object_get(j, key[k])))
                *num[k] = json_number_value(v);
        if (json_is_string(v = json_object_get(j, "schedule"))) {
            pfi_diag d;
            in->stext = strdup(json_string_value(v));
            if (in->stext == NULL || pfi_ctl_schedule_parse(in->stext, strlen(in->stext),
                                                            &in->events, &in->ne, &d) != PFI_OK) {
                cli_error("the schedule stored in %s cannot be read", o->cfg.audit_path);
                rc = PFI_EXIT_DATA;
            }
        }
        o->targets = 1;
        fprintf(stderr, "pfi control: resumed from %s the command line's target (epoch %.0f)\n",
                o->cfg.audit_path, o->epoch);
    } else if (o->targets > 0) {
        rc = intent_store_cmdline(o, in);
    }
    json_decref(j);
    return rc;
}

/* Hand the period's report and per-job caps to the API's GET /metrics. */
static void api_publish(api_state *api, const pfi_ctl_report *r, pfi_ctl *ctl)
{
    size_t cap = 1024, l = 0;
    char *jt = malloc(cap);
    if (jt != NULL) {
        jt[0] = '\0';
        metric(
            &jt, &l, &cap,
            "# HELP pfi_ctl_job_cap_watts per-GPU cap of a job as the period left it (confirmed)\n"
            "# TYPE pfi_ctl_job_cap_watts gauge\n");
        for (size_t i = 0; i < pfi_ctl_job_count(ctl); i++) {
            pfi_ctl_job_view v;
            pfi_ctl_job_get(ctl, i, &v);
            if (v.gpus > 0 && isfinite(v.cap_w))
                metric(&jt, &l, &cap, "pfi_ctl_job_cap_watts{job=\"%s\"} %.1f\n", v.id, v.cap_w);
        }
    }
    size_t acap = 1024, al = 0;
    char *at = malloc(acap);
    if (at != NULL) {
        at[0] = '\0';
        metric(&at, &al, &acap,
               "# HELP pfi_ctl_cap_refusals_total requests an agent failed, by reason\n"
               "# TYPE pfi_ctl_cap_refusals_total counter\n");
        for (size_t a = 0; a < r->agents; a++) {
            pfi_ctl_agent_view v;
            pfi_ctl_agent_get(ctl, a, &v);
            for (int k = 0; k < PFI_CTL_N_REASONS; k++)
                metric(&at, &al, &acap,
                       "pfi_ctl_cap_refusals_total{agent=\"%s\",reason=\"%s\"} %lu\n", v.url,
                       pfi_ctl_reason_name((pfi_ctl_reason)k), v.refusals[k]);
        }
        metric(&at, &al, &acap,
               "# HELP pfi_ctl_agent_up 1 when the agent answered this period\n"
               "# TYPE pfi_ctl_agent_up gauge\n");
        for (size_t a = 0; a < r->agents; a++) {
            pfi_ctl_agent_view v;
            pfi_ctl_agent_get(ctl, a, &v);
            metric(&at, &al, &acap, "pfi_ctl_agent_up{agent=\"%s\"} %d\n", v.url, v.up ? 1 : 0);
        }
    }
    pthread_mutex_lock(&api->mu);
    api->last = *r;
    api->periods++;
    free(api->jobs_text);
    api->jobs_text = jt;
    free(api->agents_text);
    api->agents_text = at;
    pthread_mutex_unlock(&api->mu);
}

/* The period's line (no budget outside an event, no measurement before the agents answer:
 * "-"). */
static void print_period(const pfi_ctl_report *r)
{
    char note[4 * sizeof r->note + 4]; /* names and agents' words in it escaped (cli_safe) */
    /* no agent answered: nothing was measured ('-'), not 0 W */
    printf("%8.2f %5s %9s %9s %9s %9s %10s %3zu/%-2zu %s\n", r->t_s,
           r->lead    ? "lead"
           : r->event ? "yes"
                      : "no",
           cli_num(r->budget_w, 'f', 0, "-").s,
           cli_num(r->agents_up > 0 ? r->measured_w : NAN, 'f', 0, "-").s,
           cli_num(r->reserved_w, 'f', 0, "-").s, cli_num(r->predicted_w, 'f', 0, "-").s,
           cli_num(r->tput_tok_s, 'f', 0, "-").s, r->agents_up, r->agents,
           cli_safe(note, sizeof note, r->note, strlen(r->note)));
    fflush(stdout);
}

/* Exit codes of a run that was not clean (documented in usage). */
#define CTL_EXIT_BUDGET 5 /* the budget could not be met: infeasible, caps refused */
#define CTL_EXIT_DEGRADED                                                                          \
    6 /* controlled through faults: stale or impossible readings,                                  \
         agents unreachable, a competing actuator */

/* The period's failures, loudly: one stderr line per failing agent with its reason, one for
 * the cluster's faults. Returns the exit code they call for (0 none). */
static int report_faults(pfi_ctl *ctl, const pfi_ctl_report *r, bool in_event, unsigned *unmet_run)
{
    for (size_t a = 0; a < r->agents; a++) {
        pfi_ctl_agent_view v;
        pfi_ctl_agent_get(ctl, a, &v);
        char su[CLI_SAFE_CELL], sf[CLI_SAFE_CELL]; /* from the agents file, the network */
        if (v.fault[0] != '\0')
            fprintf(stderr, "pfi control: t=%.2f agent %s: %s\n", r->t_s,
                    cli_safe(su, sizeof su, v.url, strlen(v.url)),
                    cli_safe(sf, sizeof sf, v.fault, strlen(v.fault)));
    }
    /* ramping ahead of an event is no event yet: its budget cannot be missed */
    bool unmet = r->event && in_event && (r->infeasible || r->refused > 0);
    /* measured over the budget three periods in a row (the library counts them) */
    bool over = r->event && in_event && isfinite(r->over_w);
    char f[256];
    pfi_ctl_report q = *r;
    if (!in_event && q.ramp_limited) /* falling ahead of an event at the ramp's rate: no fault */
        q.infeasible = false;
    if (pfi_ctl_report_faults(&q, f, sizeof f))
        fprintf(stderr, "pfi control: t=%.2f %s%s\n", r->t_s, f,
                unmet || over ? ": the budget is not met" : "");
    *unmet_run = unmet ? *unmet_run + 1 : 0;
    int lvl = PFI_EXIT_OK;
    if (r->stale_gpus + r->prom_stale_gpus + r->glitch_gpus + r->competing + r->unreachable +
                r->refused >
            0 ||
        r->held)
        lvl = CTL_EXIT_DEGRADED;
    /* two event periods in a row: one alone is the allocation moving (an event's first
     * period against tier floors), said on stderr but no failure of the run */
    if (*unmet_run >= 2 || over)
        lvl = CTL_EXIT_BUDGET;
    return lvl;
}

/* Sleep until monotonic time next, waking every 50 ms for a signal. */
static void sleep_until(double next)
{
    while (!g_stop && now_mono() < next) {
        double dt = fmin(0.05, next - now_mono());
        if (dt <= 0)
            break;
        struct timespec ts = {(time_t)dt, (long)((dt - floor(dt)) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/*
 * Sleep until monotonic time next, as sleep_until, or until a PUT /v1/budget changes the
 * target (api->target_seq moves past seen), but not before monotonic time earliest. true when
 * a new target ended the sleep early (*seen updated), false at next or on a signal.
 */
static bool sleep_until_target(double next, api_state *api, unsigned long *seen, double earliest)
{
    pthread_mutex_lock(&api->mu);
    bool woke = false;
    for (;;) {
        double now = now_mono();
        if (g_stop || now >= next)
            break;
        if (api->target_seq != *seen && now >= earliest) {
            *seen = api->target_seq;
            woke = true;
            break;
        }
        double until = fmin(next, now + 0.05); /* signals: every 50 ms */
        if (api->target_seq != *seen)
            until = fmin(until, earliest);
        struct timespec ts = {(time_t)until, (long)((until - floor(until)) * 1e9)};
        pthread_cond_timedwait(&api->changed, &api->mu, &ts);
    }
    pthread_mutex_unlock(&api->mu);
    return woke;
}

/* The target in force may start a period between ticks (control_loop): not with ramps (the
 * ramps' steps are a period's worth of W/s), tier accounting (a period's seconds) or the
 * emulated clock (no ticks to wait for). */
static bool starts_on_change(const control_opts *o, const control_inputs *in)
{
    if (o->clock_emulated || in->tiers != NULL || isfinite(o->cfg.ramp_up_w_per_s) ||
        isfinite(o->cfg.ramp_down_w_per_s))
        return false;
    for (size_t a = 0; in->topo != NULL && a < in->topo->n; a++)
        if (isfinite(in->topo->ramp_up_w_per_s[a]) || isfinite(in->topo->ramp_down_w_per_s[a]))
            return false;
    return true;
}

static bool same_text(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool same_num(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
}

/* The target in words, for the reload's lines ("budget 3000 W", "reduction 30 %",
 * "schedule FILE", "none (PUT /v1/budget)", "none (the --topology tree's limits only)"). */
static void target_text(const control_opts *o, char *buf, size_t n)
{
    if (o->sched_path != NULL)
        snprintf(buf, n, "schedule %s", o->sched_path);
    else if (!isnan(o->budget_w))
        snprintf(buf, n, "budget %.0f W", o->budget_w);
    else if (!isnan(o->reduction))
        snprintf(buf, n, "reduction %.4g %%", 100 * o->reduction);
    else
        snprintf(buf, n,
                 o->listen_port >= 0 ? "none (PUT /v1/budget)"
                                     : "none (the --topology tree's limits only)");
}

/*
 * The nodes' non-GPU power for a facility target (NaN: --non-gpu-w not given): each agent's
 * measured one (its pfid's node_power_file, as the last period read it), else --non-gpu-w.
 * *measured: how many agents were measured.
 */
static double facility_non_gpu_w(const control_opts *o, pfi_ctl *ctl, size_t na, size_t *measured)
{
    *measured = 0;
    if (isnan(o->non_gpu_w))
        return NAN;
    double sum = 0;
    for (size_t a = 0; a < na; a++) {
        pfi_ctl_agent_view v;
        pfi_ctl_agent_get(ctl, a, &v);
        if (isfinite(v.non_gpu_w)) {
            sum += v.non_gpu_w;
            ++*measured;
        } else {
            sum += o->non_gpu_w;
        }
    }
    return sum;
}

/*
 * SIGHUP, at a period boundary: the config file and the command line over it again, and the
 * schedule file. The target (budget-w, reduction, schedule, speed, start, duration, ramp,
 * epoch) is taken; every other option that changed is named and keeps its running value
 * until a restart. A config or schedule that does not parse is refused and the running
 * configuration kept. Said on stderr and in the next period's audit note.
 */
static void control_reload(int argc, char **argv, control_opts *o, control_inputs *in, pfi_ctl *ctl,
                           api_state *api)
{
    static cli_slurm scratch; /* --slurm changes at restart: the running state is kept */
    control_opts n;
    bool done;
    char note[160];
    fprintf(stderr, "pfi control: SIGHUP: reloading %s\n",
            o->config_path != NULL ? o->config_path : "the command line (no --config)");
    int rc = control_options(argc, argv, &n, &done, &scratch);
    bool bad_schedule = false;
    pfi_ctl_event *ev = NULL;
    size_t ne = 0, len = 0;
    char *stext = NULL;
    if (rc == PFI_EXIT_OK && !done && n.sched_path != NULL) {
        pfi_diag d;
        rc = load_file("schedule", n.sched_path, &stext, &len);
        if (rc == PFI_EXIT_OK &&
            pfi_grid_schedule_load(stext, len, &ev, &ne, NULL, NULL, &d) != PFI_OK)
            rc = report_file(PFI_ERR_PARSE, &d, n.sched_path);
        bad_schedule = rc != PFI_EXIT_OK;
        if (rc == PFI_EXIT_OK)
            pfi_grid_schedule_speed(ev, ne, n.speed);
    }
    if (rc != PFI_EXIT_OK || done) {
        fprintf(stderr, "pfi control: SIGHUP: reload REFUSED (above): the running configuration "
                        "is kept\n");
        snprintf(note, sizeof note, "config reload refused (bad %s); the running one kept",
                 bad_schedule ? "schedule" : "config");
        pfi_ctl_note(ctl, note);
        free(stext);
        pfi_free(ev);
        opts_free(&n);
        return;
    }
    /* what only a restart changes: named, the running value kept */
    struct {
        const char *name;
        bool changed;
    } fixed[] = {
        {"agents", !same_text(n.agents_path, o->agents_path)},
        {"db", !same_text(n.cfg.audit_path, o->cfg.audit_path)},
        {"listen", n.listen_port != o->listen_port},
        {"token-file", !same_text(n.token_path, o->token_path)},
        {"period", !same_num(n.cfg.period_s, o->cfg.period_s)},
        {"strategy", n.cfg.strategy != o->cfg.strategy},
        {"objective", n.cfg.objective != o->cfg.objective},
        {"margin", !same_num(n.cfg.margin, o->cfg.margin)},
        {"policy", !same_text(n.policy_path, o->policy_path)},
        {"tiers", !same_text(n.tiers_path, o->tiers_path)},
        {"store", !same_text(n.cfg.store_path, o->cfg.store_path)},
        {"model", !same_text(n.cfg.model_path, o->cfg.model_path)},
        {"prometheus", !same_text(n.cfg.prom.url, o->cfg.prom.url)},
        {"non-gpu-w", !same_num(n.non_gpu_w, o->non_gpu_w)},
        {"facility-limit-w", !same_num(n.cfg.facility_limit_w, o->cfg.facility_limit_w)},
        {"stale-after", !same_num(n.cfg.stale_after_s, o->cfg.stale_after_s)},
        {"controller-id", !same_text(n.cfg.controller_id, o->cfg.controller_id)},
        {"run-for", !same_num(n.run_for, o->run_for)},
        {"clock",
         n.clock_emulated != o->clock_emulated || !same_num(n.clock_start, o->clock_start)},
        {"keep-caps-on-exit", n.keep != o->keep},
        {"slurm", scratch.on != o->slurm->on || scratch.suspend != o->slurm->suspend},
        {"topology", !same_text(n.topo_path, o->topo_path)},
        {"ramp-w-per-s", !same_num(n.cfg.ramp_up_w_per_s, o->cfg.ramp_up_w_per_s) ||
                             !same_num(n.cfg.ramp_down_w_per_s, o->cfg.ramp_down_w_per_s)},
    };
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
        if (fixed[k].changed)
            fprintf(stderr,
                    "pfi control: SIGHUP: %s changed: takes effect at restart (the running "
                    "value is kept)\n",
                    fixed[k].name);
    if (n.cmd_target && o->config_path != NULL) {
        char t[200];
        target_text(&n, t, sizeof t);
        fprintf(stderr,
                "pfi control: SIGHUP: the command line's target (%s) overrides the target "
                "in %s\n",
                t, o->config_path);
    }
    /* the target: taken (its strings live in n's owned values, moved to o); a config without
     * one (--listen only) keeps the running target, e.g. one resumed from the --db */
    if (n.targets > 0) {
        o->budget_w = n.budget_w;
        o->reduction = n.reduction;
        o->sched_path = n.sched_path;
        o->speed = n.speed;
        o->start = n.start;
        o->duration = n.duration;
        o->ramp = n.ramp;
        if (n.epoch_given)
            o->epoch = n.epoch;
        o->targets = n.targets;
    }
    char **q = realloc(o->owned, (o->n_owned + n.n_owned + 1) * sizeof *q);
    if (q != NULL) {
        o->owned = q;
        memcpy(q + o->n_owned, n.owned, n.n_owned * sizeof *q);
        o->n_owned += n.n_owned;
        free(n.owned);
        n.owned = NULL;
        n.n_owned = 0;
    } /* else: n's strings are leaked rather than freed under o's pointers */
    if (n.targets > 0) {
        free(in->stext);
        pfi_free(in->events);
        in->stext = stext;
        in->events = ev;
        in->ne = ne;
    }
    char what[96];
    target_text(o, what, sizeof what);
    pthread_mutex_lock(&api->mu);
    bool api_set = api->budget_set;
    pthread_mutex_unlock(&api->mu);
    fprintf(stderr, "pfi control: SIGHUP: config reloaded: target %s%s\n", what,
            api_set ? " (a PUT /v1/budget is in force and still wins)" : "");
    snprintf(note, sizeof note, "config reloaded: %s", what);
    pfi_ctl_note(ctl, note);
    if (o->cfg.audit_path != NULL && !api_set && o->targets > 0)
        intent_store_cmdline(o, in); /* a restart resumes the new target */
}

/* PUT /v1/jobs/ID's bands over the rules in force (this period's --slurm ones, else the
 * tiers' or the policy's), handed to the controller; untouched while none was ever set. */
static void api_apply_bands(api_state *api, const control_opts *o, const control_inputs *in,
                            pfi_ctl *ctl)
{
    const pfi_ctl_rule *base = o->slurm->on && o->slurm->rules != NULL ? o->slurm->rules
                               : in->tiers != NULL                     ? in->tiers->rules
                                                                       : in->rules;
    size_t nb = o->slurm->on && o->slurm->rules != NULL ? o->slurm->nr
                : in->tiers != NULL                     ? in->tiers->n_rules
                                                        : in->nr;
    static char job[API_MAX_BANDS][PFI_CTL_ID_LEN]; /* the loop's thread only */
    double band[API_MAX_BANDS];
    pthread_mutex_lock(&api->mu);
    size_t n = api->n_band;
    memcpy(job, api->band_job, n * sizeof job[0]);
    memcpy(band, api->band, n * sizeof band[0]);
    pthread_mutex_unlock(&api->mu);
    if (n == 0 && api->band_rules == NULL)
        return;
    pfi_ctl_rule *m = NULL;
    size_t nm = cli_rules_set_bands(base, nb, (const char(*)[PFI_CTL_ID_LEN])job, band, n, &m);
    if (m == NULL)
        return; /* out of memory: the last rules stay */
    pfi_ctl_set_rules(ctl, m, nm);
    free(api->band_rules);
    api->band_rules = m;
}

/*
 * The control loop: one step a period until --run-for, SIGINT or SIGTERM; SIGHUP reloads
 * (control_reload) at the next period boundary. PFI_EXIT_OK, or the exit code of a step that
 * failed (reported).
 */
static int control_loop(int argc, char **argv, control_opts *o, control_inputs *in, pfi_ctl *ctl,
                        api_state *api, int *worst)
{
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    take_sighup();
    double period_s = o->cfg.period_s;
    double t_start = now_mono(), wall0 = now_wall();
    /* schedule time at t_start; on the emulated clock (--clock emulated:S) S, exactly */
    double offset = o->clock_emulated ? o->clock_start : wall0 - o->epoch;
    /* tick k at grid0 + k periods; a PUT /v1/budget that changes the target starts the next
     * period at once (at most one a tenth of a period after the last): the grid moves there,
     * so a rack under a site controller acts on a new share in its own step's time, not
     * after up to a period (issue 18 item 7); not where periods must be whole
     * (starts_on_change) */
    double grid0 = t_start;
    bool on_change = starts_on_change(o, in);
    unsigned long seen = 0;
    bool prom_was_down = false;
    unsigned unmet_run = 0;     /* event periods in a row with the budget not met */
    bool was_leading = false;   /* the ramp's lead held the budget last period */
    size_t measured_before = 0; /* agents whose node power was measured last period */
    if (!isnan(o->non_gpu_w))
        fprintf(stderr,
                "pfi control: targets are facility power: %zu nodes x %.0f W non-GPU = %.0f W "
                "come off every budget before the GPUs' share\n",
                in->na, o->non_gpu_w, o->non_gpu_w * (double)in->na);
    if (!o->quiet)
        printf("%8s %5s %9s %9s %9s %9s %10s %6s %s\n", "t_s", "event", "budget_w", "measured",
               "reserved", "predicted", "tokens/s", "agents", "note");
    for (unsigned long k = 0; !g_stop; k++) {
        /* the controller's time: the monotonic clock's, or the emulated clock's k periods */
        double tick = grid0 + (double)k * period_s;
        double t_now = o->clock_emulated ? (double)k * period_s : tick - t_start;
        if (g_reload) {
            g_reload = 0;
            control_reload(argc, argv, o, in, ctl, api);
            offset = o->clock_emulated ? o->clock_start : wall0 - o->epoch;
        }
        double t_sched = t_now + offset;
        if (t_now >= o->run_for)
            break;
        pthread_mutex_lock(&api->mu);
        seen = api->target_seq; /* read below (period_target) */
        pthread_mutex_unlock(&api->mu);
        double bw, red;
        size_t measured;
        double non_gpu = facility_non_gpu_w(o, ctl, in->na, &measured);
        if (measured != measured_before && !isnan(non_gpu))
            fprintf(stderr,
                    "pfi control: non-GPU power: %zu of %zu nodes measured (node_power_file), "
                    "the rest %.0f W each: %.0f W\n",
                    measured, in->na, o->non_gpu_w, non_gpu);
        measured_before = measured;
        bool event = period_target(o, in, api, t_sched, non_gpu, &bw, &red);
        /* the caps set now hold until the next tick: inside an event, the lower of the
         * targets at this tick and the next (a ramp down is met through the period, not a
         * period late) */
        double bw2, red2;
        if (event && period_target(o, in, api, t_sched + period_s, non_gpu, &bw2, &red2)) {
            if (!isnan(red) && !isnan(red2) && red2 > red)
                red = red2;
            else if (!isnan(bw) && !isnan(bw2) && bw2 < bw)
                bw = bw2;
        }
        if (event && !isnan(non_gpu)) /* a facility target: the GPUs get the rest */
            pfi_grid_facility_target(non_gpu, api->last.ref_w, &bw, &red);
        bool in_event = event; /* the schedule's (or the API's) own event */
        bool leading = isnan(o->non_gpu_w) && ramp_lead(o, in, api, t_sched, &event, &bw, &red);
        if (leading && !was_leading)
            fprintf(stderr,
                    "pfi control: t=%.2f ramping ahead of the schedule: %.0f W now so that its "
                    "budgets are met falling at %.0f W/s\n",
                    t_now, bw, api->last.ramp_down_w_per_s);
        was_leading = leading;
        pfi_ctl_report r;
        pfi_diag d;
        if (o->slurm->on)
            cli_slurm_before(o->slurm, ctl, in->tiers, t_now);
        api_apply_bands(api, o, in, ctl);
        pfi_ctl_set_lead(ctl, leading && !in_event); /* inside an event: the event */
        pfi_error e = pfi_ctl_step(ctl, t_now, event, bw, red, &r, &d);
        if (e != PFI_OK)
            return cli_report(e, &d);
        if (in->topo_said != NULL) /* hostnames that name no level, limits nothing sits under */
            cli_topo_period(in->topo, ctl, in->na, in->topo_said);
        if (in->tiers != NULL) /* job-average accounting: next period's floors */
            grid_tiers_period(in->tiers, ctl, period_s,
                              event ? grid_event_left_s(in->events, in->ne, t_sched, o->targets,
                                                        o->start, o->duration)
                                    : INFINITY);
        if (o->slurm->on)
            cli_slurm_after(o->slurm, ctl, &r, t_now);
        char note[4 * sizeof r.note + 4];
        if (r.prom_failed && !prom_was_down)
            fprintf(stderr, "pfi control: %s\n",
                    cli_safe(note, sizeof note, r.note, strlen(r.note)));
        else if (!r.prom_failed && prom_was_down)
            fprintf(stderr, "pfi control: Prometheus answers again; using it\n");
        prom_was_down = r.prom_failed;
        if (r.event && in_event && r.ramp_limited && r.infeasible)
            fprintf(stderr,
                    "pfi control: t=%.2f ramp: the budget %.0f W cannot be met falling at the "
                    "ramps' %.0f W/s: falling as fast as allowed\n",
                    r.t_s, r.budget_w, r.ramp_down_w_per_s);
        int lvl = report_faults(ctl, &r, in_event, &unmet_run);
        /* 5 (budget not met) outranks 6 (degraded) */
        if (lvl == CTL_EXIT_BUDGET || (lvl != PFI_EXIT_OK && *worst == PFI_EXIT_OK))
            *worst = lvl;
        api_publish(api, &r, ctl);
        if (!o->quiet)
            print_period(&r);
        if (o->clock_emulated) /* emulated: the next period at once */
            continue;
        if (!on_change)
            sleep_until(tick + period_s);
        else if (sleep_until_target(tick + period_s, api, &seen, tick + 0.1 * period_s))
            grid0 = now_mono() - (double)(k + 1) * period_s; /* period k + 1 starts now */
    }
    if (in->tiers != NULL && in->tiers->n > 0)
        grid_tiers_summary(stderr, in->tiers);
    return PFI_EXIT_OK;
}

/*
 * --children: a site controller over child controllers (pfi/control.h, pfi_ctl_parent): each
 * period the target (as for agents) split among them over their feasible ranges, one line a
 * period and one a child. Exit codes as the agents' loop: 5 the budget could not be met for
 * two event periods in a row (the silent children's held budgets and the others' minima
 * exceed it), 6 a child did not answer in some period.
 */
static int parent_loop(const control_opts *o, const control_inputs *in, api_state *api)
{
    pfi_ctl_parent *p = NULL;
    pfi_diag d;
    pfi_error e = pfi_ctl_parent_create(in->agents, in->na, o->cfg.http_timeout_s, &p, &d);
    if (e != PFI_OK)
        return cli_report(e, &d);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    double period_s = o->cfg.period_s, t_start = now_mono(), offset = now_wall() - o->epoch;
    double last_max = NAN;
    int worst = PFI_EXIT_OK, rc = PFI_EXIT_OK;
    unsigned unmet_run = 0;
    if (!o->quiet)
        printf("%8s %5s %9s %9s %9s %6s %s\n", "t_s", "event", "budget_w", "measured", "held", "up",
               "shares_w / note");
    for (unsigned long k = 0; !g_stop; k++) {
        double tick = t_start + (double)k * period_s;
        if (tick - t_start >= o->run_for)
            break;
        double bw, red;
        bool event = period_target(o, in, api, tick - t_start + offset, NAN, &bw, &red);
        if (event && isnan(bw)) /* a reduction of the children's most */
            bw = isfinite(last_max) ? (1 - red) * last_max : NAN;
        pfi_ctl_parent_report r;
        if ((e = pfi_ctl_parent_step(p, tick - t_start, event && isfinite(bw), bw, &r, &d)) !=
            PFI_OK) {
            rc = cli_report(e, &d);
            break;
        }
        if (r.up == r.children)
            last_max = r.max_w;
        char shares[512] = "";
        size_t l = 0;
        for (size_t i = 0; i < r.children; i++) {
            pfi_ctl_child_view v;
            pfi_ctl_parent_child_get(p, i, &v);
            if (!v.up && !v.answered && isnan(v.accepted_w))
                fprintf(stderr,
                        "pfi control: t=%.2f child %s: %s (silent %lu period(s)); it never "
                        "answered: nothing held\n",
                        r.t_s, v.url, v.fault, v.silent);
            else if (!v.up)
                fprintf(stderr,
                        "pfi control: t=%.2f child %s: %s (silent %lu period(s)); its "
                        "%s W held\n",
                        r.t_s, v.url, v.fault, v.silent, cli_num(v.accepted_w, 'f', 0, "-").s);
            if (l < sizeof shares)
                l += (size_t)snprintf(shares + l, sizeof shares - l, "%s%s", i ? "," : "",
                                      cli_num(v.up ? v.share_w : v.accepted_w, 'f', 0, "-").s);
        }
        if (!o->quiet) {
            printf("%8.2f %5s %9s %9s %9s %3zu/%-2zu %s %s\n", r.t_s, r.event ? "yes" : "no",
                   cli_num(r.budget_w, 'f', 0, "-").s, cli_num(r.measured_w, 'f', 0, "-").s,
                   cli_num(r.held_w, 'f', 0, "-").s, r.up, r.children, shares, r.note);
            fflush(stdout);
        }
        unmet_run = r.event && !r.feasible ? unmet_run + 1 : 0;
        if (unmet_run >= 2)
            worst = CTL_EXIT_BUDGET;
        else if (r.up < r.children && worst == PFI_EXIT_OK)
            worst = CTL_EXIT_DEGRADED;
        sleep_until(t_start + (double)(k + 1) * period_s);
    }
    pfi_ctl_parent_destroy(p);
    if (rc == PFI_EXIT_OK && worst != PFI_EXIT_OK) {
        fprintf(stderr, "pfi control: exit %d: %s\n", worst,
                worst == CTL_EXIT_BUDGET ? "the budget could not be met in some period (above)"
                                         : "a child did not answer in some period (above)");
        rc = worst;
    }
    return rc;
}

/* On exit (the default): every GPU back on its original limit; the agents that did not
 * confirm are named. */
static void control_release(pfi_ctl *ctl, size_t n_agents)
{
    bool all;
    pfi_diag d;
    pfi_ctl_release(ctl, &all, &d);
    for (size_t a = 0; !all && a < n_agents; a++) {
        pfi_ctl_agent_view v;
        pfi_ctl_agent_get(ctl, a, &v);
        if (v.fault[0] != '\0')
            fprintf(stderr, "pfi control: release: agent %s: %s\n", v.url, v.fault);
    }
    if (!all)
        fprintf(stderr, "pfi control: not every agent confirmed the release: their caps stay until "
                        "their lease ends (see 'pfi control status')\n");
    else
        fprintf(stderr, "pfi control: caps released: every GPU back on its original limit\n");
}

/* --keep-caps-on-exit: which caps stay, and until when (the lease, then the agents'
 * lease_policy: restore at once, or hold for up to their hold_max). */
static void control_keep_note(pfi_ctl *ctl, const pfi_ctl_config *cfg)
{
    double lease = isfinite(cfg->lease_s) ? cfg->lease_s : fmax(30.0, 6 * cfg->period_s);
    time_t until = (time_t)(now_wall() + lease);
    struct tm tm;
    char when[32];
    gmtime_r(&until, &tm);
    strftime(when, sizeof when, "%H:%M:%SZ", &tm);
    for (size_t i = 0; i < pfi_ctl_job_count(ctl); i++) {
        pfi_ctl_job_view v;
        pfi_ctl_job_get(ctl, i, &v);
        if (v.gpus > 0 && isfinite(v.cap_w))
            fprintf(stderr, "pfi control: --keep-caps-on-exit: job %s keeps %.0f W per GPU\n", v.id,
                    v.cap_w);
    }
    fprintf(stderr,
            "pfi control: --keep-caps-on-exit: the caps stay until the agents' lease ends at "
            "%s (%.0f s), then each agent restores them or, with lease_policy=hold, holds them "
            "up to its hold_max; 'pfi restore' or DELETE /v1/caps releases them sooner\n",
            when, lease);
}

/* The audit log at path can be written: the file, or a new one in its directory. false with
 * why (errno's text, naming what) otherwise. */
static bool db_writable(const char *path, char *why, size_t n)
{
    /* tried, not asked (access() says yes to root on a read-only mount's directory) */
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            snprintf(why, n, "is a directory");
            return false;
        }
        if (!S_ISREG(st.st_mode)) { /* /dev/full: SQLite would make FILE-journal beside it */
            snprintf(why, n, "is not a regular file (a device, a FIFO)");
            return false;
        }
        int fd = open(path, O_WRONLY | O_APPEND | O_NONBLOCK);
        if (fd < 0) {
            snprintf(why, n, "cannot be written: %s", strerror(errno));
            return false;
        }
        close(fd);
        return true;
    }
    char probe[1100];
    snprintf(probe, sizeof probe, "%.1000s.pfi-check-XXXXXX", path);
    int fd = mkstemp(probe);
    if (fd < 0) {
        snprintf(why, n, "cannot be created: %s", strerror(errno));
        return false;
    }
    close(fd);
    unlink(probe);
    return true;
}

/* --check: the config and every file it names, as a start would read them, and the --db;
 * contacts no agent, touches no GPU. 0 valid, 2 not (each problem printed). */
static int control_check(control_opts *o)
{
    control_inputs in;
    memset(&in, 0, sizeof in);
    int problems = 0;
    int rc = control_read_inputs(o, &in, &problems);
    char why[600];
    const char *readable[] = {o->cfg.store_path, o->cfg.model_path};
    const char *what[] = {"--store", "--model"};
    for (int k = 0; k < 2; k++)
        if (readable[k] != NULL && access(readable[k], R_OK) != 0) {
            cli_error("%s %s: %s", what[k], readable[k], strerror(errno));
            problems++;
        }
    pfi_diag ad;
    if (o->cfg.audit_path != NULL && !db_writable(o->cfg.audit_path, why, sizeof why)) {
        cli_error("--db %s %s", o->cfg.audit_path, why);
        problems++;
    } else if (o->cfg.audit_path != NULL && pfi_audit_check(o->cfg.audit_path, &ad) != PFI_OK) {
        cli_error("--db: %s", ad.message); /* a start refuses it: so does the check */
        problems++;
    }
    if (rc == PFI_EXIT_OK && in.topo != NULL && cli_topo_check(in.topo, in.agents, in.na) > 0)
        problems++; /* a limited level no agent sits under holds nothing */
    size_t na = in.na;
    inputs_free(&in);
    if (rc != PFI_EXIT_OK || problems > 0) {
        fprintf(stderr, "pfi control: --check: the configuration is not valid (above)\n");
        return PFI_EXIT_USAGE;
    }
    char t[96];
    target_text(o, t, sizeof t);
    printf("pfi control: configuration valid: %zu agent(s), target %s, period %g s%s%s\n", na, t,
           o->cfg.period_s, o->cfg.audit_path ? ", audit log " : "",
           o->cfg.audit_path ? o->cfg.audit_path : "");
    if (o->slurm != NULL && o->slurm->on) { /* --qos-band and --slurm-suspend turn it on */
        char q[96] = "";
        if (o->slurm->nqos > 0)
            snprintf(q, sizeof q, ", a job's band from its QOS (--qos-band: %zu QOS named)",
                     o->slurm->nqos);
        printf("pfi control: Slurm (--slurm%s): running jobs from %s --json every period%s%s\n",
               o->slurm->nqos ? ", turned on by --qos-band" : "", o->slurm->squeue, q,
               o->slurm->suspend ? ", jobs suspended when caps alone cannot meet the budget" : "");
    }
    return PFI_EXIT_OK;
}

int cmd_control(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "status") == 0) {
        cli_set_command("control status");
        return cmd_control_status(argc - 1, argv + 1);
    }
    control_opts o;
    bool done;
    static cli_slurm slurm;
    int rc = control_options(argc, argv, &o, &done, &slurm);
    if (rc != PFI_EXIT_OK || done) {
        opts_free(&o);
        return o.check && rc != PFI_EXIT_OK ? PFI_EXIT_USAGE : rc;
    }
    if (o.check) {
        rc = control_check(&o);
        opts_free(&o);
        return rc;
    }
    take_sighup(); /* a reload asked for before the first period waits for it */
    control_inputs in;
    memset(&in, 0, sizeof in);
    pfi_ctl *ctl = NULL;
    pfi_http_server *srv = NULL;
    api_state api;
    memset(&api, 0, sizeof api);
    pthread_mutex_init(&api.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* sleep_until_target's deadlines */
    pthread_cond_init(&api.changed, &ca);
    pthread_condattr_destroy(&ca);
    int warnings = 0;
    if ((rc = control_read_inputs(&o, &in, &warnings)) != PFI_EXIT_OK)
        goto out;
    if (o.children) { /* a controller of controllers */
        rc = parent_loop(&o, &in, &api);
        goto out;
    }
    o.cfg.agents = in.agents;
    o.cfg.n_agents = in.na;
    o.cfg.rules = in.rules;
    o.cfg.n_rules = in.nr;
    o.cfg.topology = in.topo;
    if (in.tiers != NULL) { /* the policy's rules and one per tier job */
        o.cfg.rules = in.tiers->rules;
        o.cfg.n_rules = in.tiers->n_rules;
    }
    if (o.clock_emulated) { /* controller time 0: its Unix time, and the schedule's = the
                               agents' clock */
        o.cfg.clock_unix_s = o.epoch + o.clock_start;
        o.cfg.clock_start_s = o.clock_start;
    }
    pfi_diag d;
    /* another program's file: refused (exit 1) before anything is written; what fails after
       is the audit log not written (exit 3) */
    bool foreign = o.cfg.audit_path != NULL && pfi_audit_check(o.cfg.audit_path, &d) != PFI_OK;
    pfi_error e = foreign ? PFI_ERR_IO : pfi_ctl_create(&o.cfg, &ctl, &d);
    char why[600];
    if (e == PFI_ERR_IO && o.cfg.audit_path != NULL && !foreign &&
        !db_writable(o.cfg.audit_path, why, sizeof why)) {
        cli_error("--db %s %s: the audit log cannot be written", o.cfg.audit_path, why);
        rc = PFI_EXIT_OUTPUT; /* documented: 3 audit not written */
        goto out;
    }
    if (e == PFI_ERR_IO && o.cfg.audit_path != NULL && !foreign &&
        strncmp(d.message, "audit log: ", 11) == 0) { /* a full disk, a device (/dev/full) */
        cli_error("%s", d.message);                   /* "audit log: FILE: what: why" */
        rc = PFI_EXIT_OUTPUT;
        goto out;
    }
    if (e != PFI_OK) {
        rc = cli_report(e, &d);
        goto out;
    }
    if (in.topo != NULL)
        in.topo_said = calloc(in.na + 1, 1);
    api.tokens = in.tokens;
    api.last.budget_w = NAN;
    api.top_limit_w = NAN;
    for (size_t a = 0, tops = 0; in.topo != NULL && a < in.topo->n; a++)
        if (in.topo->parent[a] == PFI_TOPO_NONE)
            api.top_limit_w = ++tops == 1 ? in.topo->limit_w[a] : NAN;
    api.db = o.cfg.audit_path;
    if (o.cfg.audit_path != NULL && (rc = control_intent(&o, &in, &api)) != PFI_EXIT_OK)
        goto out;
    if (o.listen_port >= 0 && (rc = api_listen(&api, o.listen_port, &srv)) != PFI_EXIT_OK)
        goto out;
    int worst = PFI_EXIT_OK;
    rc = control_loop(argc, argv, &o, &in, ctl, &api, &worst);
    if (rc == PFI_EXIT_OK && worst != PFI_EXIT_OK) {
        fprintf(stderr, "pfi control: exit %d: %s\n", worst,
                worst == CTL_EXIT_BUDGET ? "the budget could not be met in some period (above)"
                                         : "ran degraded in some period (above)");
        rc = worst;
    }
    cli_slurm_finish(o.slurm); /* the jobs it suspended are resumed */
    if (ctl != NULL && !o.keep)
        control_release(ctl, in.na);
    else if (ctl != NULL)
        control_keep_note(ctl, &o.cfg);
out:
    pfi_http_server_stop(srv);
    pfi_ctl_destroy(ctl);
    free(api.band_rules);
    free(api.jobs_text);
    free(api.agents_text);
    pthread_cond_destroy(&api.changed);
    pthread_mutex_destroy(&api.mu);
    inputs_free(&in);
    opts_free(&o);
    return rc;
}

/* ---- pfi report --------------------------------------------------------------------------- */

/* The power-swing figures (pfi/audit.h) of a run's measured power (reserve for silent agents
 * included, as in the figure) over its periods' times, in event time: the log's seconds x
 * speed (a replay speed times faster; 1: the log's own). PFI_EXIT_OK or an exit code. */
static int report_swing(const pfi_audit_period *p, size_t n, double speed, pfi_power_swing *sw)
{
    double *t = malloc((2 * n + 1) * sizeof *t);
    if (t == NULL)
        return PFI_EXIT_INTERNAL;
    double *w = t + n;
    for (size_t i = 0; i < n; i++) {
        t[i] = p[i].t_s * speed;
        w[i] = p[i].measured_w + (isfinite(p[i].reserved_w) ? p[i].reserved_w : 0);
    }
    pfi_diag d;
    pfi_error e = pfi_power_swing_compute(t, w, n, 0.1, 20, sw, &d);
    free(t);
    if (e == PFI_ERR_EMPTY) /* one period: every figure stays missing */
        return PFI_EXIT_OK;
    return e == PFI_OK ? PFI_EXIT_OK : cli_report(e, &d);
}

int cmd_report(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* pfi report --job ID: a Slurm job's accounting */
        if (strcmp(argv[i], "--job") == 0 || strncmp(argv[i], "--job=", 6) == 0) {
            cli_set_command("report --job");
            return cli_slurm_report(argc, argv);
        }
    if (settle_requested(argc, argv)) { /* pfi report --settlement (report_settle.c) */
        cli_set_command("report --settlement");
        return cmd_settlement(argc, argv);
    }
    const char *out = NULL, *title = NULL;
    const char *dbs[6];
    size_t nd = 0;
    bool json = false;
    double speed = 1; /* --speed: the log's seconds x speed are event seconds */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: pfi report AUDIT.db [AUDIT.db ...] (-o FIGURE.png|.svg | --json) "
                   "[--title T]\n                  [--speed N]\n\nPlot the budget, measured power "
                   "and tokens/s of the latest "
                   "controller run\nin each audit log (one per strategy: up to 6), and print "
                   "its figures:\nmean tokens/s and largest excess in the event, and the "
                   "measured power's\nswings: the largest ramp (W/s, between periods), the "
                   "dynamic range (max - min,\nW) and the 0.1-20 Hz oscillation energy: the "
                   "series resampled at its median\nperiod, mean removed, GSL's real FFT, the "
                   "bins with 0.1 <= |f| <= 20 Hz summed\n(|X_k|^2 / N^2: the band's share of "
                   "the variance, W^2; rms its root, W);\nundefined ('-', null) when the "
                   "series is sampled below 0.2 Hz.\n"
                   "  -o, --output FILE  the figure (.png or .svg)\n"
                   "  --title T          its title\n"
                   "  --speed N          the log was a replay N times faster (pfi control\n"
                   "                     --speed): the swings in event time, the log's\n"
                   "                     seconds x N (a ramp / N); in [0.0001, 10000] (1)\n"
                   "  --json             one JSON object a log on stdout (no figure unless -o)\n"
                   "With --settlement: the event's settlement (pfi report --settlement -h).\n"
                   "With --job ID: a Slurm job's pfi accounting (energy, time under caps,\n"
                   "caps applied, tokens lost; pfi report --job --help).\n"
                   "\nExit codes: 0 success, 1 audit log missing or unreadable, 2 bad command "
                   "line,\n3 figure not written, 4 internal error.\n");
            return PFI_EXIT_OK;
        } else if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) &&
                   i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(argv[i], "--title") == 0 && i + 1 < argc) {
            title = argv[++i];
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--speed") == 0 && i + 1 < argc) {
            i++;
            if (!cli_parse_double(argv[i], &speed) || !(speed >= 1e-4) || !(speed <= 1e4))
                return cli_usage_bad_value("speed", argv[i], "a number in [0.0001, 10000]");
        } else if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0 ||
                   strcmp(argv[i], "--title") == 0 || strcmp(argv[i], "--speed") == 0) {
            return cli_usage_missing(argv[i]);
        } else if (argv[i][0] == '-') {
            return cli_usage_unknown(argv[i]);
        } else if (nd < 6) {
            dbs[nd++] = argv[i];
        } else {
            cli_error("at most 6 audit logs");
            return PFI_EXIT_USAGE;
        }
    }
    if (nd == 0 || (out == NULL && !json)) { /* say only what is missing */
        cli_error("%s required", nd == 0 && out == NULL && !json
                                     ? "an audit log and -o FIGURE (or --json) are"
                                 : nd == 0 ? "an audit log is"
                                           : "-o FIGURE (or --json) is");
        return PFI_EXIT_USAGE;
    }
    pfi_audit_period *p[6] = {NULL};
    size_t n[6];
    int rc = PFI_EXIT_OK;
    pfi_diag d;
    for (size_t k = 0; k < nd; k++) {
        pfi_error e = pfi_audit_read(dbs[k], 0, &p[k], &n[k], &d);
        if (e != PFI_OK) {
            rc = cli_report(e, &d);
            goto done;
        }
    }
    pfi_error e = out != NULL
                      ? pfi_audit_plot((const pfi_audit_period *const *)p, n, nd, title, out, &d)
                      : PFI_OK;
    if (e != PFI_OK) {
        rc = cli_report(e, &d);
        if (rc == PFI_EXIT_DATA)
            rc = PFI_EXIT_OUTPUT;
        goto done;
    }
    for (size_t k = 0; k < nd; k++) {
        double peak_over = 0, tsum = 0;
        size_t ne = 0, nt = 0, n_over = 0;
        for (size_t i = 0; i < n[k]; i++)
            if (p[k][i].event && isfinite(p[k][i].budget_w)) {
                ne++;
                /* a period's power and tokens/s are read at its tick, before its caps: those
                 * of event period i are what period i + 1 read (the last period's: none).
                 * The first event period's shows the caps coming down: the excess counts
                 * from the second on */
                if (i + 1 == n[k])
                    continue;
                const pfi_audit_period *r = &p[k][i + 1];
                double tot = r->measured_w + r->reserved_w;
                if (i >= 1 && p[k][i - 1].event) {
                    peak_over = fmax(peak_over, tot - p[k][i].budget_w);
                    n_over++;
                }
                if (isfinite(r->tput_tok_s)) {
                    tsum += r->tput_tok_s;
                    nt++;
                }
            }
        pfi_power_swing sw;
        if ((rc = report_swing(p[k], n[k], speed, &sw)) != PFI_EXIT_OK)
            goto done;
        if (json) {
            json_t *o = json_pack(
                "{s:s,s:s,s:I,s:I,s:o,s:o,s:{s:f,s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:[f,f],s:o,s:o}}",
                "audit_log", dbs[k], "strategy", p[k][0].strategy, "periods", (json_int_t)n[k],
                "event_periods", (json_int_t)ne, "mean_tput_tok_s",
                jnum(nt ? tsum / (double)nt : NAN), "largest_excess_w",
                jnum(n_over > 0 ? peak_over : NAN), "swing", "speed", speed, "samples",
                (json_int_t)sw.n, "missing", (json_int_t)sw.n_missing, "period_s", jnum(sw.dt_s),
                "max_ramp_w_per_s", jnum(sw.max_ramp_w_per_s), "dynamic_range_w",
                jnum(sw.dynamic_range_w), "min_w", jnum(sw.min_w), "max_w", jnum(sw.max_w),
                "band_hz", sw.band_lo_hz, sw.band_hi_hz, "osc_energy_w2", jnum(sw.osc_energy_w2),
                "osc_rms_w", jnum(sw.osc_rms_w));
            char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
            json_decref(o);
            if (txt == NULL) {
                rc = PFI_EXIT_INTERNAL;
                goto done;
            }
            printf("%s\n", txt);
            free(txt);
            continue;
        }
        char st[4 * sizeof p[k][0].strategy + 4]; /* the log's strategy, escaped (cli_safe) */
        printf("%s: %s, %zu periods, %zu in the event, mean tokens/s in the event %s, "
               "largest excess over the budget from its second period %s\n",
               dbs[k], cli_safe(st, sizeof st, p[k][0].strategy, strlen(p[k][0].strategy)), n[k],
               ne, cli_num(nt ? tsum / (double)nt : NAN, 'f', 0, "undefined").s,
               watts(n_over > 0 ? peak_over : NAN, "undefined").s);
        /* a replay's swings in event time, and said so (a grid operator reads real seconds) */
        char when[96] = "";
        if (speed != 1)
            snprintf(when, sizeof when, " in event time (the log's seconds x %g, a replay)", speed);
        printf("  power swings%s: max ramp %s W/s, dynamic range %s W (%s - %s), ", when,
               cli_num(sw.max_ramp_w_per_s, 'f', 1, "-").s,
               cli_num(sw.dynamic_range_w, 'f', 0, "-").s, cli_num(sw.min_w, 'f', 0, "-").s,
               cli_num(sw.max_w, 'f', 0, "-").s);
        if (sw.band_hi_used_hz <= sw.band_lo_hz) /* sampled too slowly: no band to cover */
            printf("0.1-20 Hz oscillation undefined (sampled below 0.2 Hz)");
        else
            printf("0.1-%s Hz oscillation %s W^2 (rms %s W)",
                   cli_num(sw.band_hi_used_hz, 'g', 3, "-").s,
                   cli_num(sw.osc_energy_w2, 'f', 1, "-").s, cli_num(sw.osc_rms_w, 'f', 1, "-").s);
        printf(" over %zu periods of %s s\n", sw.n, cli_num(sw.dt_s, 'g', 3, "-").s);
    }
    if (out != NULL && !json)
        printf("figure: %s\n", out);
done:
    for (size_t k = 0; k < nd; k++)
        pfi_free(p[k]);
    return rc;
}
