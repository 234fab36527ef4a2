/*
 * Grid events as schedules (pfi/grid.h): CSV and JSON power-target timelines, a target
 * derived from a measured cluster power trace, and time compression for replays.
 */
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl_internal.h"
#include "core/memory.h"
#include "pfi/csv.h"
#include "pfi/grid.h"
#include "pfi/topology.h"

#define TRACE_MAX_SAMPLES 1000000
#define TRACE_MIN_SAMPLES 20

const char *pfi_grid_form_name(pfi_grid_schedule_form f)
{
    static const char *const names[] = {"text", "csv", "json", "trace"};
    return (unsigned)f < 4 ? names[f] : "unknown";
}

bool pfi_grid_schedule_speed(pfi_ctl_event *ev, size_t n, double speed)
{
    if (!(speed > 0) || !isfinite(speed))
        return false;
    for (size_t i = 0; i < n; i++) {
        ev[i].start_s /= speed;
        ev[i].end_s /= speed;
        ev[i].ramp_s /= speed;
    }
    return true;
}

/* ---- events: growth, checks ------------------------------------------------------------- */

typedef struct evec {
    pfi_ctl_event *v;
    size_t n, cap;
} evec;

static pfi_error evec_push(evec *e, const pfi_ctl_event *ev, long line, pfi_diag *d)
{
    if (e->n == PFI_CTL_MAX_EVENTS)
        return ctl_fail(d, line, PFI_ERR_LIMIT, "more than %d events", PFI_CTL_MAX_EVENTS);
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 16;
        pfi_ctl_event *v = pfi_realloc(e->v, cap * sizeof *v);
        if (v == NULL)
            return PFI_ERR_NOMEM;
        e->v = v;
        e->cap = cap;
    }
    e->v[e->n++] = *ev;
    return PFI_OK;
}

/* One event's own checks (line, or the event's index for JSON, in the message). */
static pfi_error event_check(const pfi_ctl_event *ev, long line, pfi_diag *d)
{
    if (!(ev->start_s >= 0) || !(ev->end_s > ev->start_s) || !(ev->end_s <= PFI_CTL_MAX_EVENT_S))
        return ctl_fail(d, line, PFI_ERR_PARSE,
                        "start_s and end_s: expected seconds with 0 <= start_s < end_s <= %.0f "
                        "(a year)",
                        PFI_CTL_MAX_EVENT_S);
    if (!(ev->ramp_s >= 0) || !isfinite(ev->ramp_s))
        return ctl_fail(d, line, PFI_ERR_PARSE, "ramp_s: expected seconds >= 0");
    if (ev->ramp_s > ev->end_s - ev->start_s)
        return ctl_fail(d, line, PFI_ERR_PARSE,
                        "ramp_s %g is longer than its event (%g s, start_s to end_s): expected "
                        "0 <= ramp_s <= end_s - start_s",
                        ev->ramp_s, ev->end_s - ev->start_s);
    if (isnan(ev->reduction) == isnan(ev->budget_w))
        return ctl_fail(d, line, PFI_ERR_PARSE,
                        "expected exactly one target: budget_w, reduction_pct or target");
    if (!isnan(ev->reduction) && !(ev->reduction >= 0 && ev->reduction <= 1))
        return ctl_fail(d, line, PFI_ERR_PARSE, "reduction_pct: expected 0 to 100");
    if (!isnan(ev->budget_w) && !(ev->budget_w > 0 && ev->budget_w <= PFI_TOPO_MAX_W))
        return ctl_fail(d, line, PFI_ERR_PARSE, "budget_w %g: expected watts > 0 and <= %g",
                        ev->budget_w, PFI_TOPO_MAX_W);
    return PFI_OK;
}

static int cmp_start(const void *a, const void *b)
{
    const pfi_ctl_event *x = a, *y = b;
    return (x->start_s > y->start_s) - (x->start_s < y->start_s);
}

/* Sort, refuse overlaps and an empty list; hand the events over. */
static pfi_error evec_finish(evec *e, pfi_ctl_event **out, size_t *n, pfi_diag *d)
{
    if (e->n == 0)
        return ctl_fail(d, 0, PFI_ERR_EMPTY, "no event in the schedule");
    qsort(e->v, e->n, sizeof *e->v, cmp_start);
    for (size_t i = 1; i < e->n; i++)
        if (e->v[i].start_s < e->v[i - 1].end_s)
            return ctl_fail(d, 0, PFI_ERR_PARSE, "events starting at %g s and %g s overlap",
                            e->v[i - 1].start_s, e->v[i].start_s);
    *out = e->v;
    *n = e->n;
    e->v = NULL;
    return PFI_OK;
}

/* "30%" or "5200W" into ev. */
static bool parse_target(const char *s, pfi_ctl_event *ev)
{
    size_t l = strlen(s);
    char num[64];
    if (l < 2 || l >= sizeof num)
        return false;
    memcpy(num, s, l - 1);
    num[l - 1] = '\0';
    double x;
    if (!ctl_parse_num(num, &x))
        return false;
    if (s[l - 1] == '%')
        ev->reduction = x / 100.0;
    else if (s[l - 1] == 'W' || s[l - 1] == 'w')
        ev->budget_w = x;
    else
        return false;
    return true;
}

/* ---- CSV: timelines and traces ------------------------------------------------------------ */

typedef struct csv_text {
    FILE *f;
    pfi_csv_reader *r;
} csv_text;

static pfi_error csv_text_open(const char *text, size_t len, csv_text *c, pfi_diag *d)
{
    c->r = NULL;
    c->f = fmemopen((void *)text, len, "r");
    if (c->f == NULL)
        return PFI_ERR_NOMEM;
    pfi_error e = pfi_csv_open_stream(c->f, "schedule", &c->r, d);
    if (e != PFI_OK) {
        fclose(c->f);
        c->f = NULL;
    }
    return e;
}

static void csv_text_close(csv_text *c)
{
    pfi_csv_close(c->r);
    if (c->f != NULL)
        fclose(c->f);
}

/* The index of column name among the header's fields, or -1. */
static int col(const char *const *h, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(h[i], name) == 0)
            return (int)i;
    return -1;
}

enum { C_START, C_END, C_RAMP, C_BUDGET, C_RED, C_TARGET, C_N };

/* The header's fields joined by commas into buf[n] (cut with " ..."), for a message. */
static const char *header_text(const char *const *h, size_t nh, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < nh && used + 1 < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? "," : "", h[i]);
        used += w > 0 ? (size_t)w : 0;
    }
    if (used >= n && n > 5)
        memcpy(buf + n - 5, " ...", 5);
    return buf;
}

static pfi_error load_csv_timeline(csv_text *c, const char *const *hdr, size_t nh, long hline,
                                   evec *ev, pfi_diag *d)
{
    static const char *const names[C_N] = {"start_s",  "end_s",         "ramp_s",
                                           "budget_w", "reduction_pct", "target"};
    int ix[C_N];
    for (int k = 0; k < C_N; k++)
        ix[k] = col(hdr, nh, names[k]);
    for (size_t i = 0; i < nh; i++) {
        bool known = false;
        for (int k = 0; k < C_N; k++)
            known = known || ix[k] == (int)i;
        if (!known)
            return ctl_fail(d, hline, PFI_ERR_PARSE,
                            "unknown column '%s' (expected start_s, end_s, ramp_s, budget_w, "
                            "reduction_pct, target)",
                            hdr[i]);
    }
    if (ix[C_START] < 0 || ix[C_END] < 0 || (ix[C_BUDGET] < 0 && ix[C_RED] < 0 && ix[C_TARGET] < 0))
        return ctl_fail(d, hline, PFI_ERR_PARSE,
                        "expected columns start_s, end_s and budget_w, reduction_pct or target");
    for (;;) {
        const char *const *f;
        const size_t *lens;
        size_t nf;
        long line;
        bool eof;
        pfi_error e = pfi_csv_next(c->r, &f, &lens, &nf, &line, &eof, d);
        if (e != PFI_OK || eof)
            return e;
        if (nf != nh)
            return ctl_fail(d, line, PFI_ERR_PARSE, "expected %zu fields, got %zu", nh, nf);
        pfi_ctl_event x = {0, 0, 0, NAN, NAN};
        double *num[C_N] = {&x.start_s, &x.end_s, &x.ramp_s, &x.budget_w, &x.reduction, NULL};
        for (int k = 0; k < C_TARGET; k++) {
            if (ix[k] < 0 || f[ix[k]][0] == '\0') {
                if (k == C_START || k == C_END)
                    return ctl_fail(d, line, PFI_ERR_PARSE, "%s: empty (expected seconds)",
                                    names[k]);
                continue;
            }
            if (!ctl_parse_num(f[ix[k]], num[k]))
                return ctl_fail(d, line, PFI_ERR_PARSE, "%s: '%s' is not a number", names[k],
                                f[ix[k]]);
        }
        if (!isnan(x.reduction))
            x.reduction /= 100.0;
        if (ix[C_TARGET] >= 0 && f[ix[C_TARGET]][0] != '\0') {
            if (!isnan(x.reduction) || !isnan(x.budget_w))
                return ctl_fail(d, line, PFI_ERR_PARSE,
                                "expected exactly one target: budget_w, reduction_pct or target");
            if (!parse_target(f[ix[C_TARGET]], &x))
                return ctl_fail(d, line, PFI_ERR_PARSE,
                                "target: '%s' (expected like '30%%' or '5200W')", f[ix[C_TARGET]]);
        }
        if ((e = event_check(&x, line, d)) != PFI_OK || (e = evec_push(ev, &x, line, d)) != PFI_OK)
            return e;
    }
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant's days_from_civil). */
static long days_from_civil(long y, long m, long dd)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + dd - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* n digits at *s into *v; advances. */
static bool digits(const char **s, int n, long *v)
{
    *v = 0;
    for (int i = 0; i < n; i++, (*s)++) {
        if (!isdigit((unsigned char)**s))
            return false;
        *v = 10 * *v + (**s - '0');
    }
    return true;
}

/* "HH:MM[:SS[.fff]]" at *s into seconds of the day; advances. */
static bool clock_of(const char **s, double *sec)
{
    long h, m, sc = 0;
    if (!digits(s, 2, &h) || *(*s)++ != ':' || !digits(s, 2, &m) || h > 23 || m > 59)
        return false;
    double frac = 0;
    if (**s == ':') {
        (*s)++;
        if (!digits(s, 2, &sc) || sc > 60)
            return false;
        if (**s == '.') { /* digits only: ".5e3" is no fraction of a second */
            (*s)++;
            if (!isdigit((unsigned char)**s))
                return false;
            for (double scale = 0.1; isdigit((unsigned char)**s); (*s)++, scale /= 10)
                frac += (**s - '0') * scale;
        }
    }
    *sec = (double)(h * 3600 + m * 60 + sc) + frac;
    return true;
}

/* A trace timestamp: ISO 8601 date-time with optional offset (Unix s, *clock false), or a
   clock of the day (s since midnight, *clock true). */
static bool parse_time(const char *s, double *t, bool *clock)
{
    const char *p = s;
    double sec;
    if (strlen(s) <= 8 && strchr(s, '-') == NULL) {
        *clock = true;
        if (isdigit((unsigned char)p[0]) && p[1] == ':') { /* "H:MM" */
            char buf[16];
            snprintf(buf, sizeof buf, "0%s", s);
            p = buf;
            return clock_of(&p, t) && *p == '\0';
        }
        return clock_of(&p, t) && *p == '\0';
    }
    *clock = false;
    long y, mo, dd;
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
        !digits(&p, 2, &dd) || mo < 1 || mo > 12 || dd < 1 || (*p != ' ' && *p != 'T'))
        return false;
    /* the month's length (February 29 only in a leap year): never rolled into the next */
    if (dd >
        days_from_civil(mo == 12 ? y + 1 : y, mo == 12 ? 1 : mo + 1, 1) - days_from_civil(y, mo, 1))
        return false;
    p++;
    if (!clock_of(&p, &sec))
        return false;
    double off = 0;
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1;
        long oh, om = 0;
        if (!digits(&p, 2, &oh))
            return false;
        if (*p == ':')
            p++;
        if (*p != '\0' && !digits(&p, 2, &om))
            return false;
        if (oh > 23 || om > 59) /* "+99:99" is no offset */
            return false;
        off = sign * (double)(oh * 3600 + om * 60);
    }
    if (*p != '\0')
        return false;
    *t = (double)days_from_civil(y, mo, dd) * 86400.0 + sec - off;
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[a..b) (scratch: tmp). */
static double median_of(const double *v, size_t a, size_t b, double *tmp)
{
    size_t m = b - a;
    memcpy(tmp, v + a, m * sizeof *tmp);
    qsort(tmp, m, sizeof *tmp, cmp_double);
    return m % 2 ? tmp[m / 2] : 0.5 * (tmp[m / 2 - 1] + tmp[m / 2]);
}

/* The event in a trace (see pfi_grid_trace_info). */
static pfi_error trace_event(const double *t, const double *p, size_t n, double *tmp,
                             pfi_grid_trace_info *ti, pfi_ctl_event *ev, pfi_diag *d)
{
    double l0 = median_of(p, 0, TRACE_MIN_SAMPLES, tmp);
    size_t best_a = 0, best_n = 0;
    for (size_t i = 0; i < n;) {
        if (!(p[i] < 0.9 * l0)) {
            i++;
            continue;
        }
        size_t a = i;
        while (i < n && p[i] < 0.9 * l0)
            i++;
        if (i - a > best_n) {
            best_a = a;
            best_n = i - a;
        }
    }
    if (best_n == 0)
        return ctl_fail(d, 0, PFI_ERR_EMPTY,
                        "no event in the trace: power never falls below 90 %% of its first "
                        "samples' median (%.0f W)",
                        l0);
    if (best_a == 0)
        return ctl_fail(d, 0, PFI_ERR_PARSE,
                        "the trace starts inside the event: no pre-event "
                        "window");
    size_t b = best_a + best_n; /* one past the run */
    double ev_w = median_of(p, best_a, b, tmp);
    /* the ramp starts at the last sample before the run at >= 98 % of the pre-event level,
       that level being the median of the (up to) 30 samples before the ramp; two passes */
    size_t rs = best_a - 1;
    double pre = l0;
    for (int pass = 0; pass < 2; pass++) {
        rs = best_a - 1;
        while (rs > 0 && p[rs] < 0.98 * pre)
            rs--;
        size_t w0 = rs + 1 > 30 ? rs + 1 - 30 : 0;
        pre = median_of(p, w0, rs + 1, tmp);
    }
    size_t hs = best_a, he = b - 1;
    while (hs < b && p[hs] > 1.02 * ev_w)
        hs++;
    while (he > hs && p[he] > 1.02 * ev_w)
        he--;
    size_t rec = b;
    while (rec < n && p[rec] < 0.9 * pre)
        rec++;
    ti->samples = n;
    ti->pre_event_w = pre;
    ti->event_w = ev_w;
    ti->reduction = 1 - ev_w / pre;
    ti->ramp_start_s = t[rs] - t[0];
    ti->hold_start_s = t[hs] - t[0];
    ti->hold_end_s = t[he] - t[0];
    ti->recovered_s = rec < n ? t[rec] - t[0] : NAN;
    ev->start_s = ti->ramp_start_s;
    ev->end_s = ti->hold_end_s;
    ev->ramp_s = ti->hold_start_s - ti->ramp_start_s;
    ev->reduction = ti->reduction;
    ev->budget_w = NAN;
    if (!(ev->end_s > ev->start_s) || !(ev->reduction > 0 && ev->reduction < 1))
        return ctl_fail(d, 0, PFI_ERR_EMPTY, "no held event in the trace");
    return PFI_OK;
}

static pfi_error load_trace(csv_text *c, const char *const *hdr, size_t nh, long hline, evec *ev,
                            pfi_grid_trace_info *ti, pfi_diag *d)
{
    int it = col(hdr, nh, "timestamp"), ip = col(hdr, nh, "total");
    char found[96];
    /* a telemetry CSV (nvidia-smi's begins with timestamp) given as the schedule lands here */
    if (it < 0 || ip < 0)
        return ctl_fail(d, hline, PFI_ERR_PARSE,
                        "header '%s' is not a trace's: expected a trace header timestamp,total "
                        "(W), or a schedule's (pfi schedule --help)",
                        header_text(hdr, nh, found, sizeof found));
    double *t = NULL, *p = NULL;
    size_t n = 0, cap = 0;
    pfi_error e = PFI_OK;
    bool first_clock = false;
    double day = 0, first_unix = NAN;
    for (;;) {
        const char *const *f;
        const size_t *lens;
        size_t nf;
        long line;
        bool eof;
        if ((e = pfi_csv_next(c->r, &f, &lens, &nf, &line, &eof, d)) != PFI_OK || eof)
            break;
        if (nf != nh) {
            e = ctl_fail(d, line, PFI_ERR_PARSE, "expected %zu fields, got %zu", nh, nf);
            break;
        }
        double tv, pv;
        bool clock;
        if (!parse_time(f[it], &tv, &clock)) {
            e = ctl_fail(d, line, PFI_ERR_PARSE,
                         "timestamp: '%s' (expected ISO 8601 like 2025-05-04 14:40:00-07:00, "
                         "or HH:MM)",
                         f[it]);
            break;
        }
        if (!ctl_parse_num(f[ip], &pv) || !(pv >= 0)) {
            e = ctl_fail(d, line, PFI_ERR_PARSE, "total: '%s' (expected watts >= 0)", f[ip]);
            break;
        }
        if (n == 0) {
            first_clock = clock;
            first_unix = clock ? NAN : tv;
        } else if (clock != first_clock) {
            e = ctl_fail(d, line, PFI_ERR_PARSE, "timestamp: dates and clocks mixed");
            break;
        }
        if (clock && n > 0 && t[n - 1] - (tv + day) > 43200)
            day += 86400; /* past midnight: a clock more than 12 h back is the next day */
        tv += day;
        if (n > 0 && !(tv > t[n - 1])) {
            e = ctl_fail(d, line, PFI_ERR_PARSE, "timestamp: '%s' is not after the previous one",
                         f[it]);
            break;
        }
        if (n == TRACE_MAX_SAMPLES) {
            e = ctl_fail(d, line, PFI_ERR_LIMIT, "more than %d samples", TRACE_MAX_SAMPLES);
            break;
        }
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 512;
            double *t2 = pfi_realloc(t, nc * sizeof *t2);
            if (t2 != NULL)
                t = t2;
            double *p2 = t2 ? pfi_realloc(p, nc * sizeof *p2) : NULL;
            if (p2 == NULL) {
                e = PFI_ERR_NOMEM;
                break;
            }
            p = p2;
            cap = nc;
        }
        t[n] = tv;
        p[n] = pv;
        n++;
    }
    if (e == PFI_OK && n < TRACE_MIN_SAMPLES)
        e = ctl_fail(d, 0, PFI_ERR_PARSE, "a trace needs at least %d samples, got %zu",
                     TRACE_MIN_SAMPLES, n);
    double *tmp = e == PFI_OK ? pfi_malloc(n * sizeof *tmp) : NULL;
    if (e == PFI_OK && tmp == NULL)
        e = PFI_ERR_NOMEM;
    pfi_grid_trace_info info;
    memset(&info, 0, sizeof info);
    pfi_ctl_event x;
    if (e == PFI_OK)
        e = trace_event(t, p, n, tmp, &info, &x, d);
    if (e == PFI_OK) {
        info.first_unix_s = first_unix;
        if (ti != NULL)
            *ti = info;
        e = evec_push(ev, &x, 0, d);
    }
    pfi_free(tmp);
    pfi_free(t);
    pfi_free(p);
    return e;
}

/* ---- JSON timelines ------------------------------------------------------------------------ */

static bool json_num(json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL)
        return true;
    if (!json_is_number(v))
        return false;
    *out = json_number_value(v);
    return isfinite(*out);
}

static pfi_error load_json(const char *text, size_t len, evec *ev, pfi_diag *d)
{
    json_error_t je;
    unsigned long jf = pfi_json_failures();
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (pfi_json_failed(jf)) {
        json_decref(root);
        return PFI_ERR_NOMEM;
    }
    if (root == NULL)
        return ctl_fail(d, je.line, PFI_ERR_PARSE, "not JSON: %s", je.text);
    json_t *arr = json_is_array(root) ? root : json_object_get(root, "events");
    pfi_error e = PFI_OK;
    if (json_is_object(root) && json_object_size(root) != 1)
        e = ctl_fail(d, 0, PFI_ERR_PARSE, "expected an object with only \"events\"");
    else if (!json_is_array(arr))
        e = ctl_fail(d, 0, PFI_ERR_PARSE, "expected an array of events or {\"events\": [...]}");
    for (size_t i = 0; e == PFI_OK && i < json_array_size(arr); i++) {
        json_t *o = json_array_get(arr, i);
        long at = (long)i + 1;
        if (!json_is_object(o)) {
            e = ctl_fail(d, 0, PFI_ERR_PARSE, "event %ld: expected an object", at);
            break;
        }
        const char *key;
        json_t *val;
        json_object_foreach(o, key, val)
        {
            if (strcmp(key, "start_s") && strcmp(key, "end_s") && strcmp(key, "ramp_s") &&
                strcmp(key, "budget_w") && strcmp(key, "reduction_pct") && strcmp(key, "target"))
                e = ctl_fail(d, 0, PFI_ERR_PARSE,
                             "event %ld: unknown key \"%s\" (expected start_s, end_s, ramp_s, "
                             "budget_w, reduction_pct, target)",
                             at, key);
        }
        if (e != PFI_OK)
            break;
        pfi_ctl_event x = {NAN, NAN, 0, NAN, NAN};
        double red = NAN;
        if (!json_num(o, "start_s", &x.start_s) || !json_num(o, "end_s", &x.end_s) ||
            !json_num(o, "ramp_s", &x.ramp_s) || !json_num(o, "budget_w", &x.budget_w) ||
            !json_num(o, "reduction_pct", &red)) {
            e = ctl_fail(d, 0, PFI_ERR_PARSE,
                         "event %ld: start_s, end_s, ramp_s, budget_w and "
                         "reduction_pct must be numbers",
                         at);
            break;
        }
        x.reduction = red / 100.0;
        json_t *tg = json_object_get(o, "target");
        if (tg != NULL) {
            if (!isnan(x.reduction) || !isnan(x.budget_w) || !json_is_string(tg) ||
                !parse_target(json_string_value(tg), &x)) {
                e = ctl_fail(d, 0, PFI_ERR_PARSE,
                             "event %ld: target must be a string like \"30%%\" or \"5200W\", "
                             "and the only target",
                             at);
                break;
            }
        }
        if ((e = event_check(&x, 0, d)) != PFI_OK) {
            char msg[sizeof d->message];
            snprintf(msg, sizeof msg, "%s", d != NULL ? d->message : "");
            e = ctl_fail(d, 0, e, "event %ld: %s", at, msg);
            break;
        }
        e = evec_push(ev, &x, 0, d);
    }
    json_decref(root);
    return e;
}

/* ---- the entry point ------------------------------------------------------------------------ */

pfi_error pfi_grid_schedule_load(const char *text, size_t len, pfi_ctl_event **out, size_t *n,
                                 pfi_grid_schedule_form *form, pfi_grid_trace_info *trace,
                                 pfi_diag *diag)
{
    *out = NULL;
    *n = 0;
    size_t i = 0;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        i = 3;
    while (i < len && isspace((unsigned char)text[i]))
        i++;
    pfi_grid_schedule_form f = PFI_GRID_FORM_TEXT;
    if (i < len && (text[i] == '{' || text[i] == '['))
        f = PFI_GRID_FORM_JSON;
    else {
        size_t e = i;
        while (e < len && text[e] != '\n')
            e++;
        char first[512];
        size_t m = e - i < sizeof first - 1 ? e - i : sizeof first - 1;
        memcpy(first, text + i, m);
        first[m] = '\0';
        if (strstr(first, "timestamp") != NULL)
            f = PFI_GRID_FORM_TRACE;
        else if (strstr(first, "start_s") != NULL)
            f = PFI_GRID_FORM_CSV;
    }
    if (form != NULL)
        *form = f;
    if (f == PFI_GRID_FORM_TEXT)
        return pfi_ctl_schedule_parse(text, len, out, n, diag);
    evec ev = {NULL, 0, 0};
    pfi_error e = PFI_OK;
    if (f == PFI_GRID_FORM_JSON) {
        e = load_json(text, len, &ev, diag);
    } else {
        csv_text c;
        if ((e = csv_text_open(text, len, &c, diag)) != PFI_OK)
            return e;
        const char *const *h;
        const size_t *lens;
        size_t nh;
        long line;
        bool eof;
        e = pfi_csv_next(c.r, &h, &lens, &nh, &line, &eof, diag);
        if (e == PFI_OK && eof)
            e = ctl_fail(diag, 0, PFI_ERR_EMPTY, "no event in the schedule");
        /* the header's fields are valid until the next record: keep copies */
        char *hdr[64];
        size_t nkeep = 0;
        if (e == PFI_OK && nh > 64)
            e = ctl_fail(diag, line, PFI_ERR_PARSE, "more than 64 columns");
        for (size_t k = 0; e == PFI_OK && k < nh; k++) {
            hdr[k] = pfi_strdup(h[k]);
            if (hdr[k] == NULL)
                e = PFI_ERR_NOMEM;
            else
                nkeep++;
        }
        if (e == PFI_OK)
            e = f == PFI_GRID_FORM_TRACE
                    ? load_trace(&c, (const char *const *)hdr, nh, line, &ev, trace, diag)
                    : load_csv_timeline(&c, (const char *const *)hdr, nh, line, &ev, diag);
        for (size_t k = 0; k < nkeep; k++)
            pfi_free(hdr[k]);
        csv_text_close(&c);
    }
    if (e == PFI_OK)
        e = evec_finish(&ev, out, n, diag);
    pfi_free(ev.v);
    return e;
}
