/*
 * The controller's input files: agents, schedule, policy (pfi/control_files.h).
 * Line-oriented, bounded, strict: anything not documented is an error naming the line.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl_internal.h"
#include "core/memory.h"
#include "pfi/control.h" /* pfi_ctl_prior_pfi, pfi_curve_source_name */
#include "pfi/control_files.h"
#include "pfi/topology.h" /* PFI_TOPO_MAX_W, pfi_band_parse */

#define MAX_LINE 1024
#define MAX_TOKENS 16

pfi_error ctl_fail(pfi_diag *d, long line, pfi_error e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_diag_vset(d, NULL, line, NULL, fmt, ap);
    va_end(ap);
    return e;
}

/* Iterate over lines of text[0..len); tokens split on blanks; comments and blank lines
 * skipped. cb gets the tokens; returns an error to stop. */
typedef pfi_error (*line_cb)(void *ctx, long line, char **tok, size_t ntok, pfi_diag *d);

static pfi_error each_line(const char *text, size_t len, line_cb cb, void *ctx, pfi_diag *d)
{
    size_t pos = 0;
    long line = 0;
    char buf[MAX_LINE + 1];
    while (pos < len) {
        line++;
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        size_t l = end - pos;
        if (l > MAX_LINE)
            return ctl_fail(d, line, PFI_ERR_PARSE, "line longer than %d bytes", MAX_LINE);
        memcpy(buf, text + pos, l);
        buf[l] = '\0';
        pos = end + 1;
        if (memchr(buf, '\0', l) != NULL)
            return ctl_fail(d, line, PFI_ERR_PARSE, "NUL byte in line");
        if (l > 0 && buf[l - 1] == '\r')
            buf[--l] = '\0';
        char *tok[MAX_TOKENS];
        size_t nt = 0;
        char *p = buf;
        for (;;) {
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p == '\0' || *p == '#')
                break;
            if (nt == MAX_TOKENS)
                return ctl_fail(d, line, PFI_ERR_PARSE, "more than %d fields", MAX_TOKENS);
            tok[nt++] = p;
            while (*p != '\0' && *p != ' ' && *p != '\t')
                p++;
            if (*p == '\0')
                break;
            *p++ = '\0';
        }
        if (nt == 0)
            continue;
        pfi_error e = cb(ctx, line, tok, nt, d);
        if (e != PFI_OK)
            return e;
    }
    return PFI_OK;
}

/* A whole-string finite number. */
bool ctl_parse_num(const char *s, double *out)
{
    if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end != '\0' || errno != 0 || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/* Copy src into dst of size n; false when it does not fit. */
bool ctl_copy(char *dst, size_t n, const char *src)
{
    size_t l = strlen(src);
    if (l >= n)
        return false;
    memcpy(dst, src, l + 1);
    return true;
}

/* Growable array of fixed-size items with a hard cap. */
typedef struct vec {
    void *items;
    size_t n, cap, size, max;
} vec;

static pfi_error vec_push(vec *v, const void *item, long line, pfi_diag *d)
{
    if (v->n == v->max)
        return ctl_fail(d, line, PFI_ERR_LIMIT, "more than %zu entries", v->max);
    if (v->n == v->cap) {
        size_t nc = v->cap ? 2 * v->cap : 8;
        void *p = pfi_realloc(v->items, nc * v->size);
        if (p == NULL)
            return PFI_ERR_NOMEM;
        v->items = p;
        v->cap = nc;
    }
    memcpy((char *)v->items + v->n * v->size, item, v->size);
    v->n++;
    return PFI_OK;
}

/* ---- agents ------------------------------------------------------------------------------ */

static pfi_error agent_line(void *ctx, long line, char **tok, size_t nt, pfi_diag *d)
{
    vec *v = ctx;
    if (nt > 2)
        return ctl_fail(d, line, PFI_ERR_PARSE, "expected 'URL [TOKEN]', found %zu fields", nt);
    if (strncmp(tok[0], "http://", 7) != 0 && strncmp(tok[0], "https://", 8) != 0)
        return ctl_fail(d, line, PFI_ERR_PARSE, "'%.64s' is not an http:// or https:// URL",
                        tok[0]);
    pfi_ctl_agent_spec a;
    memset(&a, 0, sizeof a);
    size_t l = strlen(tok[0]);
    while (l > 0 && tok[0][l - 1] == '/')
        tok[0][--l] = '\0';
    if (!ctl_copy(a.url, sizeof a.url, tok[0]))
        return ctl_fail(d, line, PFI_ERR_PARSE, "URL longer than %d bytes", PFI_CTL_URL_LEN - 1);
    if (strchr(a.url + 8, '/') == NULL && strlen(a.url) <= 8)
        return ctl_fail(d, line, PFI_ERR_PARSE, "URL without a host");
    if (nt == 2 && strcmp(tok[1], "-") != 0 && !ctl_copy(a.token, sizeof a.token, tok[1]))
        return ctl_fail(d, line, PFI_ERR_PARSE, "token longer than %d bytes",
                        PFI_CTL_TOKEN_LEN - 1);
    const pfi_ctl_agent_spec *have = v->items;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(have[i].url, a.url) == 0)
            return ctl_fail(d, line, PFI_ERR_PARSE, "agent %s listed twice", a.url);
    return vec_push(v, &a, line, d);
}

pfi_error pfi_ctl_agents_parse(const char *text, size_t len, pfi_ctl_agent_spec **out, size_t *n,
                               pfi_diag *diag)
{
    *out = NULL;
    *n = 0;
    vec v = {NULL, 0, 0, sizeof(pfi_ctl_agent_spec), PFI_CTL_MAX_AGENTS};
    pfi_error e = each_line(text, len, agent_line, &v, diag);
    if (e == PFI_OK && v.n == 0)
        e = ctl_fail(diag, 0, PFI_ERR_EMPTY, "no agent listed");
    if (e != PFI_OK) {
        pfi_free(v.items);
        return e;
    }
    *out = v.items;
    *n = v.n;
    return PFI_OK;
}

/* ---- schedule ---------------------------------------------------------------------------- */

/* The headers a schedule may begin with, for a message about a file that is not one. */
#define SCHEDULE_FORMS                                                                             \
    "expected a text schedule (lines 'START END TARGET [RAMP]'), a CSV header with start_s, "      \
    "end_s and budget_w, reduction_pct or target, a JSON timeline or a trace header "              \
    "timestamp,total"

static pfi_error event_line(void *ctx, long line, char **tok, size_t nt, pfi_diag *d)
{
    vec *v = ctx;
    double x;
    /* a first line that begins with a name, not a number (nor inf or nan: a bad START), is
     * another file's header (a jobs CSV, a telemetry CSV without timestamp) given as the
     * schedule: say which header was expected */
    char *end;
    if (v->n == 0 && isalpha((unsigned char)tok[0][0]) && (strtod(tok[0], &end), *end != '\0')) {
        char head[64] = "";
        size_t used = 0;
        for (size_t i = 0; i < nt && used < sizeof head; i++) {
            int w = snprintf(head + used, sizeof head - used, "%s%s", i ? " " : "", tok[i]);
            used += w > 0 ? (size_t)w : 0;
        }
        return ctl_fail(d, line, PFI_ERR_PARSE,
                        "header '%s%s' is not a schedule's: " SCHEDULE_FORMS, head,
                        used >= sizeof head ? " ..." : "");
    }
    if (nt < 3 || nt > 4)
        return ctl_fail(d, line, PFI_ERR_PARSE,
                        "expected 'START END TARGET [RAMP]' (seconds, '30%%' or '5200W')");
    pfi_ctl_event ev = {0, 0, 0, NAN, NAN};
    if (!ctl_parse_num(tok[0], &ev.start_s) || !ctl_parse_num(tok[1], &ev.end_s) ||
        ev.start_s < 0 || !(ev.end_s > ev.start_s) || !(ev.end_s <= PFI_CTL_MAX_EVENT_S))
        return ctl_fail(d, line, PFI_ERR_PARSE,
                        "START and END must be seconds with 0 <= START < END <= %.0f (a year)",
                        PFI_CTL_MAX_EVENT_S);
    if (nt == 4 && (!ctl_parse_num(tok[3], &ev.ramp_s) || ev.ramp_s < 0))
        return ctl_fail(d, line, PFI_ERR_PARSE, "RAMP must be seconds >= 0");
    if (nt == 4 && ev.ramp_s > ev.end_s - ev.start_s)
        return ctl_fail(d, line, PFI_ERR_PARSE,
                        "RAMP %g is longer than its event (%g s, START to END): expected "
                        "0 <= RAMP <= END - START",
                        ev.ramp_s, ev.end_s - ev.start_s);
    size_t l = strlen(tok[2]);
    char num[64];
    if (l < 2 || l >= sizeof num)
        return ctl_fail(d, line, PFI_ERR_PARSE, "TARGET must be like '30%%' or '5200W'");
    memcpy(num, tok[2], l - 1);
    num[l - 1] = '\0';
    if (tok[2][l - 1] == '%') {
        if (!ctl_parse_num(num, &x) || x < 0 || x > 100)
            return ctl_fail(d, line, PFI_ERR_PARSE, "a reduction must be 0%% to 100%%");
        ev.reduction = x / 100.0;
    } else if (tok[2][l - 1] == 'W' || tok[2][l - 1] == 'w') {
        if (!ctl_parse_num(num, &x) || !(x > 0 && x <= PFI_TOPO_MAX_W))
            return ctl_fail(d, line, PFI_ERR_PARSE,
                            "budget_w %g: expected watts > 0 and <= %g (a budget's bound, as "
                            "pfi allocate --budget-w)",
                            x, PFI_TOPO_MAX_W);
        ev.budget_w = x;
    } else {
        return ctl_fail(d, line, PFI_ERR_PARSE, "TARGET must end in '%%' or 'W'");
    }
    return vec_push(v, &ev, line, d);
}

static int cmp_event(const void *a, const void *b)
{
    const pfi_ctl_event *x = a, *y = b;
    return (x->start_s > y->start_s) - (x->start_s < y->start_s);
}

pfi_error pfi_ctl_schedule_parse(const char *text, size_t len, pfi_ctl_event **out, size_t *n,
                                 pfi_diag *diag)
{
    *out = NULL;
    *n = 0;
    vec v = {NULL, 0, 0, sizeof(pfi_ctl_event), PFI_CTL_MAX_EVENTS};
    pfi_error e = each_line(text, len, event_line, &v, diag);
    if (e == PFI_OK && v.n == 0)
        e = ctl_fail(diag, 0, PFI_ERR_EMPTY, "no event in the schedule");
    if (e == PFI_OK) {
        pfi_ctl_event *ev = v.items;
        qsort(ev, v.n, sizeof *ev, cmp_event);
        for (size_t i = 1; i < v.n; i++)
            if (ev[i].start_s < ev[i - 1].end_s) {
                e = ctl_fail(diag, 0, PFI_ERR_PARSE, "events starting at %g s and %g s overlap",
                             ev[i - 1].start_s, ev[i].start_s);
                break;
            }
    }
    if (e != PFI_OK) {
        pfi_free(v.items);
        return e;
    }
    *out = v.items;
    *n = v.n;
    return PFI_OK;
}

bool pfi_ctl_schedule_at(const pfi_ctl_event *ev, size_t n, double t_s, double ref_w,
                         double *reduction, double *budget_w)
{
    *reduction = NAN;
    *budget_w = NAN;
    for (size_t i = 0; i < n; i++) {
        if (t_s < ev[i].start_s || t_s >= ev[i].end_s)
            continue;
        double k = ev[i].ramp_s > 0 ? (t_s - ev[i].start_s) / ev[i].ramp_s : 1.0;
        if (k > 1)
            k = 1;
        if (!isnan(ev[i].reduction)) {
            *reduction = k * ev[i].reduction;
        } else if (isfinite(ref_w) && ref_w > ev[i].budget_w) {
            *budget_w = ref_w + k * (ev[i].budget_w - ref_w);
        } else {
            *budget_w = ev[i].budget_w;
        }
        return true;
    }
    return false;
}

/* ---- policy ------------------------------------------------------------------------------ */

/* The rules read so far (v) and the line of each (lines: longs). */
typedef struct rules_read {
    vec v, lines;
} rules_read;

static pfi_error rule_line(void *ctx, long line, char **tok, size_t nt, pfi_diag *d)
{
    rules_read *rr = ctx;
    vec *v = &rr->v;
    pfi_ctl_rule r;
    memset(&r, 0, sizeof r);
    r.floor_frac = NAN;
    r.weight = NAN;
    r.band = NAN; /* not given: band 0, and a --qos-band mapping may give one */
    bool have_band = false;
    if (!ctl_copy(r.job, sizeof r.job, tok[0]))
        return ctl_fail(d, line, PFI_ERR_PARSE, "job id longer than %d bytes", PFI_CTL_ID_LEN - 1);
    if (nt < 2)
        return ctl_fail(d, line, PFI_ERR_PARSE,
                        "expected 'JOB key=value ...' (floor, weight, band, class)");
    for (size_t i = 1; i < nt; i++) {
        char *eq = strchr(tok[i], '=');
        if (eq == NULL)
            return ctl_fail(d, line, PFI_ERR_PARSE, "'%.64s' is not key=value", tok[i]);
        *eq = '\0';
        const char *key = tok[i], *val = eq + 1;
        double x;
        if (strcmp(key, "floor") == 0) {
            if (!isnan(r.floor_frac) || !ctl_parse_num(val, &x) || x < 0 || x > 1)
                return ctl_fail(d, line, PFI_ERR_PARSE,
                                "floor must be given once, a fraction in [0, 1]");
            r.floor_frac = x;
        } else if (strcmp(key, "weight") == 0) {
            if (!isnan(r.weight) || !ctl_parse_num(val, &x) || x < 0 || x > 1e6)
                return ctl_fail(d, line, PFI_ERR_PARSE,
                                "weight must be given once, a number in [0, 1e6]");
            r.weight = x;
        } else if (strcmp(key, "band") == 0) {
            if (have_band)
                return ctl_fail(d, line, PFI_ERR_PARSE, "band must be given once");
            pfi_band_status bs = pfi_band_parse(val, strlen(val), &x); /* every band's reading */
            if (bs == PFI_BAND_NOT_NUMBER)                             /* the jobs file's words */
                return ctl_fail(d, line, PFI_ERR_PARSE, "band '%.32s' " PFI_BAND_NAN_RULE, val);
            if (bs != PFI_BAND_OK)
                return ctl_fail(d, line, PFI_ERR_PARSE, "band '%.32s': " PFI_BAND_RULE, val);
            r.band = x;
            have_band = true;
        } else if (strcmp(key, "class") == 0) {
            if (r.job_class[0] != '\0' ||
                (strcmp(val, "dense") != 0 && strcmp(val, "moe-pt") != 0 &&
                 strcmp(val, "moe-ft") != 0 && strcmp(val, "dense-ft") != 0))
                return ctl_fail(d, line, PFI_ERR_PARSE,
                                "class must be given once: dense, dense-ft, moe-pt or moe-ft");
            ctl_copy(r.job_class, sizeof r.job_class, val);
        } else {
            return ctl_fail(d, line, PFI_ERR_PARSE,
                            "unknown key '%.32s' (floor, weight, band, class)", key);
        }
    }
    /* one rule a job: two (two bands, say) would leave one of them unsaid: both lines named */
    const pfi_ctl_rule *have = v->items;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(have[i].job, r.job) == 0)
            return ctl_fail(d, line, PFI_ERR_PARSE,
                            "job '%s' has two rules: at line %ld and at line %ld (give each job "
                            "one line)",
                            r.job, ((const long *)rr->lines.items)[i], line);
    pfi_error e = vec_push(v, &r, line, d);
    return e != PFI_OK ? e : vec_push(&rr->lines, &line, line, d);
}

pfi_error pfi_ctl_policy_parse(const char *text, size_t len, pfi_ctl_rule **out, size_t *n,
                               pfi_diag *diag)
{
    *out = NULL;
    *n = 0;
    rules_read rr = {{NULL, 0, 0, sizeof(pfi_ctl_rule), PFI_CTL_MAX_RULES},
                     {NULL, 0, 0, sizeof(long), PFI_CTL_MAX_RULES}};
    pfi_error e = each_line(text, len, rule_line, &rr, diag);
    pfi_free(rr.lines.items);
    if (e != PFI_OK) {
        pfi_free(rr.v.items);
        return e;
    }
    *out = rr.v.items;
    *n = rr.v.n;
    return PFI_OK;
}

const pfi_ctl_rule *pfi_ctl_policy_find(const pfi_ctl_rule *r, size_t n, const char *job)
{
    const pfi_ctl_rule *any = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(r[i].job, job) == 0)
            return &r[i];
        if (strcmp(r[i].job, "*") == 0)
            any = &r[i];
    }
    return any;
}

double pfi_ctl_prior_pfi(const char *c)
{
    if (c == NULL)
        return 1.43;
    if (strcmp(c, "dense") == 0 || strcmp(c, "dense-ft") == 0)
        return 1.27;
    if (strcmp(c, "moe-pt") == 0)
        return 1.43;
    if (strcmp(c, "moe-ft") == 0)
        return 2.10;
    return 1.43;
}

const char *pfi_curve_source_name(pfi_curve_source s)
{
    switch (s) {
    case PFI_CURVE_STORE:
        return "store";
    case PFI_CURVE_MODEL:
        return "model";
    case PFI_CURVE_PRIOR:
        return "prior";
    }
    return "unknown";
}

double ctl_window_median(double *h, size_t *n, double v)
{
    h[*n % CTL_REF_WINDOW] = v;
    (*n)++;
    size_t m = *n < CTL_REF_WINDOW ? *n : CTL_REF_WINDOW;
    double s[CTL_REF_WINDOW];
    for (size_t i = 0; i < m; i++) { /* insertion sort: at most CTL_REF_WINDOW values */
        size_t k = i;
        for (; k > 0 && s[k - 1] > h[i]; k--)
            s[k] = s[k - 1];
        s[k] = h[i];
    }
    return m % 2 ? s[m / 2] : 0.5 * (s[m / 2 - 1] + s[m / 2]);
}
