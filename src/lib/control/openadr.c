/*
 * An OpenADR 3 client (pfi/openadr.h): the site's level table, events as intervals with
 * targets, the intervals as the controller's schedule, reports of measured power, and the
 * VTN's REST API with OAuth2 client credentials over libcurl (loaded lazily, curl_lazy.h).
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "control/curl_lazy.h"
#include "core/memory.h"
#include "pfi/atomic_file.h"
#include "pfi/openadr.h"
#include "pfi/value.h"

#define LEVELS_MAX 64
#define OPEN_ENDED_S (10.0 * 365 * 86400) /* an open-ended interval: 10 years */
#define MAX_BODY (16u << 20)              /* the most of one answer kept (16 MiB) */
#define TOKEN_MARGIN_S 10.0
#define EVENTS_PAGE 50 /* GET /events limit: the spec's maximum */

/* ---- level table ------------------------------------------------------------------------- */

/* A budget "5200W", "5.2kW", "1MW" (case-insensitive units) in W; false if it is not one. */
static bool parse_watts(const char *s, double *w)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno != 0 || !isfinite(v) || v <= 0)
        return false;
    while (*end == ' ')
        end++;
    double mult = strcasecmp(end, "W") == 0    ? 1
                  : strcasecmp(end, "kW") == 0 ? 1e3
                  : strcasecmp(end, "MW") == 0 ? 1e6
                                               : NAN;
    if (isnan(mult))
        return false;
    *w = v * mult;
    return true;
}

pfi_error pfi_oadr_levels_parse(const char *text, size_t len, pfi_oadr_level **out, size_t *n,
                                pfi_diag *diag)
{
    *out = NULL;
    *n = 0;
    pfi_oadr_level *lv = pfi_calloc(LEVELS_MAX, sizeof *lv);
    if (lv == NULL)
        return PFI_ERR_NOMEM;
    size_t k = 0;
    long line = 0;
    size_t i = 0;
    pfi_error e = PFI_OK;
    while (i < len) {
        line++;
        size_t j = i;
        while (j < len && text[j] != '\n')
            j++;
        char buf[256];
        size_t m = j - i;
        if (m >= sizeof buf) {
            pfi_diag_set(diag, NULL, line, NULL, "line longer than %zu bytes", sizeof buf - 1);
            e = PFI_ERR_PARSE;
            goto fail;
        }
        memcpy(buf, text + i, m);
        buf[m] = '\0';
        i = j + 1;
        if (memchr(buf, '\0', m) != NULL) {
            pfi_diag_set(diag, NULL, line, NULL, "a NUL byte: expected text");
            e = PFI_ERR_PARSE;
            goto fail;
        }
        char *hash = strchr(buf, '#');
        if (hash != NULL)
            *hash = '\0';
        char *p = buf;
        while (isspace((unsigned char)*p))
            p++;
        size_t q = strlen(p);
        while (q > 0 && isspace((unsigned char)p[q - 1]))
            p[--q] = '\0';
        if (*p == '\0')
            continue;
        char *end;
        errno = 0;
        long level = strtol(p, &end, 10);
        if (end == p || errno != 0 || level < 0 || !isspace((unsigned char)*end)) {
            pfi_diag_set(diag, NULL, line, "level",
                         "expected \"LEVEL TARGET\": LEVEL an integer >= 0, TARGET a reduction "
                         "(30%%, 0.3) or a budget (5200W, 5.2kW)");
            e = PFI_ERR_PARSE;
            goto fail;
        }
        while (isspace((unsigned char)*end))
            end++;
        double red = NAN, bw = NAN;
        char why[160];
        if (!parse_watts(end, &bw) && pfi_reduction_parse(end, &red, why, sizeof why) != 0) {
            pfi_diag_set(diag, NULL, line, "target",
                         "level %ld: expected a reduction (30%%, 0.3) or a budget (5200W, 5.2kW)",
                         level);
            e = PFI_ERR_PARSE;
            goto fail;
        }
        for (size_t t = 0; t < k; t++)
            if (lv[t].level == level) {
                pfi_diag_set(diag, NULL, line, "level", "level %ld given twice", level);
                e = PFI_ERR_PARSE;
                goto fail;
            }
        if (k == LEVELS_MAX) {
            pfi_diag_set(diag, NULL, line, NULL, "more than %d levels", LEVELS_MAX);
            e = PFI_ERR_LIMIT;
            goto fail;
        }
        lv[k++] = (pfi_oadr_level){level, isnan(bw) ? red : NAN, bw};
    }
    if (k == 0) {
        pfi_diag_set(diag, NULL, 0, NULL, "no level: expected \"LEVEL TARGET\" lines");
        e = PFI_ERR_EMPTY;
        goto fail;
    }
    *out = lv;
    *n = k;
    return PFI_OK;
fail:
    pfi_free(lv);
    return e;
}

/* ---- time ---------------------------------------------------------------------------------- */

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant's days_from_civil). */
static long days_from_civil(long y, long m, long d)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static bool digits(const char *s, int n, long *v)
{
    long x = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        x = x * 10 + (s[i] - '0');
    }
    *v = x;
    return true;
}

/* RFC 3339 date-time "2023-06-15T09:30:00[.fff](Z|±HH:MM)" as Unix seconds. */
static bool parse_datetime(const char *s, double *t)
{
    long y, mo, d, h, mi, sec;
    if (strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
        s[7] != '-' || !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
        !digits(s + 17, 2, &sec))
        return false;
    if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 60)
        return false;
    /* the month's length (February 29 only in a leap year): never rolled into the next */
    if (d >
        days_from_civil(mo == 12 ? y + 1 : y, mo == 12 ? 1 : mo + 1, 1) - days_from_civil(y, mo, 1))
        return false;
    const char *p = s + 19;
    double frac = 0;
    if (*p == '.') {
        double scale = 0.1;
        p++;
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p)) {
            frac += (*p - '0') * scale;
            scale /= 10;
            p++;
        }
    }
    double off = 0;
    if ((*p == 'Z' || *p == 'z') && p[1] == '\0')
        off = 0;
    else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
        long oh, om;
        if (!digits(p + 1, 2, &oh) || !digits(p + 4, 2, &om) || oh > 23 || om > 59)
            return false;
        off = (*p == '-' ? -1 : 1) * (oh * 3600.0 + om * 60.0);
    } else
        return false;
    *t = (double)days_from_civil(y, mo, d) * 86400.0 + h * 3600.0 + mi * 60.0 + sec + frac - off;
    return true;
}

/* ISO 8601 duration "PnYnMnWnDTnHnMnS" (Y 365 d, M 30 d) in seconds; negative refused. */
static bool parse_duration(const char *s, double *out)
{
    if (*s != 'P')
        return false;
    const char *p = s + 1;
    bool in_time = false, any = false;
    double total = 0;
    while (*p != '\0') {
        if (*p == 'T') {
            if (in_time)
                return false;
            in_time = true;
            p++;
            continue;
        }
        char *end;
        if (!isdigit((unsigned char)*p))
            return false;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno != 0 || !isfinite(v) || v > 1e9)
            return false;
        char u = *end;
        double mult = !in_time ? (u == 'Y'   ? 365 * 86400.0
                                  : u == 'M' ? 30 * 86400.0
                                  : u == 'W' ? 7 * 86400.0
                                  : u == 'D' ? 86400.0
                                             : NAN)
                               : (u == 'H'   ? 3600.0
                                  : u == 'M' ? 60.0
                                  : u == 'S' ? 1.0
                                             : NAN);
        if (isnan(mult))
            return false;
        total += v * mult;
        any = true;
        p = end + 1;
    }
    if (!any)
        return false;
    *out = total;
    return true;
}

/* ---- events ------------------------------------------------------------------------------- */

typedef struct notes {
    char *text;
    size_t len, cap;
    bool nomem;
} notes;

static void note(notes *nt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(notes *nt, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    size_t k = strlen(line);
    if (nt->len + k + 2 > nt->cap) {
        size_t nc = nt->cap ? nt->cap * 2 : 1024;
        while (nc < nt->len + k + 2)
            nc *= 2;
        char *q = pfi_realloc(nt->text, nc);
        if (q == NULL) {
            nt->nomem = true;
            return;
        }
        nt->text = q;
        nt->cap = nc;
    }
    memcpy(nt->text + nt->len, line, k);
    nt->len += k;
    nt->text[nt->len++] = '\n';
    nt->text[nt->len] = '\0';
}

/* A string member or NULL; a member of another type is an error (false). */
static bool opt_string(json_t *o, const char *key, const char **s)
{
    json_t *v = json_object_get(o, key);
    *s = NULL;
    if (v == NULL || json_is_null(v))
        return true;
    if (!json_is_string(v))
        return false;
    *s = json_string_value(v);
    return true;
}

/* An objectID: 1..128 of [A-Za-z0-9_-] (oadr3.0.1.yaml). */
static bool valid_id(const char *s)
{
    size_t k = strlen(s);
    if (k == 0 || k >= PFI_OADR_ID_LEN)
        return false;
    for (size_t i = 0; i < k; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

/* An intervalPeriod: start (required by the spec; may inherit) and duration (PT0S). */
static bool parse_period(json_t *p, double *start, double *dur, bool *has_start, bool *has_dur,
                         const char **bad)
{
    *has_start = *has_dur = false;
    if (p == NULL || json_is_null(p))
        return true;
    if (!json_is_object(p)) {
        *bad = "intervalPeriod: expected an object";
        return false;
    }
    const char *s;
    if (!opt_string(p, "start", &s)) {
        *bad = "intervalPeriod.start: expected a date-time string";
        return false;
    }
    if (s != NULL) {
        if (!parse_datetime(s, start)) {
            *bad = "intervalPeriod.start: expected an RFC 3339 date-time (2023-06-15T09:30:00Z)";
            return false;
        }
        *has_start = true;
    }
    if (!opt_string(p, "duration", &s)) {
        *bad = "intervalPeriod.duration: expected a duration string";
        return false;
    }
    if (s != NULL) {
        if (!parse_duration(s, dur)) {
            *bad = "intervalPeriod.duration: expected an ISO 8601 duration (PT1H)";
            return false;
        }
        *has_dur = true;
    }
    return true;
}

typedef struct ivec {
    pfi_oadr_interval *v;
    size_t n, cap;
} ivec;

static pfi_error ivec_push(ivec *iv, const pfi_oadr_interval *x)
{
    if (iv->n == PFI_OADR_MAX_INTERVALS)
        return PFI_ERR_LIMIT;
    if (iv->n == iv->cap) {
        size_t nc = iv->cap ? iv->cap * 2 : 16;
        pfi_oadr_interval *q = pfi_realloc(iv->v, nc * sizeof *q);
        if (q == NULL)
            return PFI_ERR_NOMEM;
        iv->v = q;
        iv->cap = nc;
    }
    iv->v[iv->n++] = *x;
    return PFI_OK;
}

/* The first value of payload type `type` in an interval's payloads: 1 found (*v), 0 absent,
 * -1 present but not a number. */
static int payload_value(json_t *payloads, const char *type, double *v)
{
    size_t i;
    json_t *p;
    json_array_foreach(payloads, i, p)
    {
        json_t *t = json_object_get(p, "type");
        if (!json_is_string(t) || strcmp(json_string_value(t), type) != 0)
            continue;
        json_t *vals = json_object_get(p, "values");
        json_t *v0 = json_array_get(vals, 0);
        if (!json_is_number(v0))
            return -1;
        *v = json_number_value(v0);
        return isfinite(*v) ? 1 : -1;
    }
    return 0;
}

/* One event's intervals into iv. */
static pfi_error parse_event(json_t *ev, size_t k, const pfi_oadr_level *levels, size_t nl,
                             ivec *iv, notes *nt, pfi_diag *diag)
{
    pfi_oadr_interval base;
    memset(&base, 0, sizeof base);
    base.priority = LONG_MAX;
    const char *id, *prog, *mod, *bad = NULL;
    if (!json_is_object(ev)) {
        pfi_diag_set(diag, NULL, 0, NULL, "event %zu: expected an object", k);
        return PFI_ERR_PARSE;
    }
    if (!opt_string(ev, "id", &id) || id == NULL || !valid_id(id)) {
        pfi_diag_set(diag, NULL, 0, "id", "event %zu: expected an id of 1 to 128 of [A-Za-z0-9_-]",
                     k);
        return PFI_ERR_PARSE;
    }
    if (!opt_string(ev, "programID", &prog) || prog == NULL || !valid_id(prog)) {
        pfi_diag_set(diag, NULL, 0, "programID", "event %s: expected a programID", id);
        return PFI_ERR_PARSE;
    }
    if (!opt_string(ev, "modificationDateTime", &mod)) {
        pfi_diag_set(diag, NULL, 0, "modificationDateTime", "event %s: expected a string", id);
        return PFI_ERR_PARSE;
    }
    snprintf(base.event_id, sizeof base.event_id, "%s", id);
    snprintf(base.program_id, sizeof base.program_id, "%s", prog);
    snprintf(base.modified, sizeof base.modified, "%s", mod != NULL ? mod : "");
    json_t *pr = json_object_get(ev, "priority");
    if (pr != NULL && !json_is_null(pr)) {
        if (!json_is_integer(pr) || json_integer_value(pr) < 0) {
            pfi_diag_set(diag, NULL, 0, "priority", "event %s: expected an integer >= 0", id);
            return PFI_ERR_PARSE;
        }
        base.priority = (long)json_integer_value(pr);
    }
    /* units of IMPORT_CAPACITY_LIMIT (payloadDescriptors) */
    double limit_mult = 1e3;
    bool limit_units_ok = true;
    char limit_units[64] = "KW (default)";
    json_t *pds = json_object_get(ev, "payloadDescriptors");
    if (pds != NULL && !json_is_null(pds) && !json_is_array(pds)) {
        pfi_diag_set(diag, NULL, 0, "payloadDescriptors", "event %s: expected an array", id);
        return PFI_ERR_PARSE;
    }
    size_t i;
    json_t *pd;
    json_array_foreach(pds, i, pd)
    {
        json_t *t = json_object_get(pd, "payloadType");
        if (!json_is_string(t) || strcmp(json_string_value(t), "IMPORT_CAPACITY_LIMIT") != 0)
            continue;
        const char *u;
        if (!opt_string(pd, "units", &u)) {
            pfi_diag_set(diag, NULL, 0, "payloadDescriptors.units", "event %s: expected a string",
                         id);
            return PFI_ERR_PARSE;
        }
        if (u == NULL)
            continue;
        snprintf(limit_units, sizeof limit_units, "%s", u);
        limit_mult = strcasecmp(u, "W") == 0    ? 1
                     : strcasecmp(u, "KW") == 0 ? 1e3
                     : strcasecmp(u, "MW") == 0 ? 1e6
                                                : NAN;
        limit_units_ok = !isnan(limit_mult);
    }
    double ev_start = NAN, ev_dur = 0;
    bool hs, hd;
    if (!parse_period(json_object_get(ev, "intervalPeriod"), &ev_start, &ev_dur, &hs, &hd, &bad)) {
        pfi_diag_set(diag, NULL, 0, "intervalPeriod", "event %s: %s", id, bad);
        return PFI_ERR_PARSE;
    }
    json_t *ivs = json_object_get(ev, "intervals");
    if (!json_is_array(ivs)) {
        pfi_diag_set(diag, NULL, 0, "intervals", "event %s: expected an array of intervals", id);
        return PFI_ERR_PARSE;
    }
    double next = ev_start; /* where an interval without its own start begins */
    json_t *in;
    json_array_foreach(ivs, i, in)
    {
        json_t *iid = json_object_get(in, "id");
        if (!json_is_object(in) || !json_is_integer(iid)) {
            pfi_diag_set(diag, NULL, 0, "intervals.id",
                         "event %s, interval %zu: expected an object with an integer id", id, i);
            return PFI_ERR_PARSE;
        }
        long ivid = (long)json_integer_value(iid);
        double s = next, d = ev_dur, s1, d1;
        if (!parse_period(json_object_get(in, "intervalPeriod"), &s1, &d1, &hs, &hd, &bad)) {
            pfi_diag_set(diag, NULL, 0, "intervalPeriod", "event %s, interval %ld: %s", id, ivid,
                         bad);
            return PFI_ERR_PARSE;
        }
        if (hs)
            s = s1;
        if (hd)
            d = d1;
        if (isnan(s)) {
            pfi_diag_set(diag, NULL, 0, "intervalPeriod.start",
                         "event %s, interval %ld: no start (neither the interval nor the event "
                         "has an intervalPeriod with a start)",
                         id, ivid);
            return PFI_ERR_PARSE;
        }
        double span = (d <= 0 || d >= 9999 * 365 * 86400.0) ? OPEN_ENDED_S : d;
        next = s + span;
        json_t *pl = json_object_get(in, "payloads");
        if (!json_is_array(pl)) {
            pfi_diag_set(diag, NULL, 0, "payloads",
                         "event %s, interval %ld: expected an array of payloads", id, ivid);
            return PFI_ERR_PARSE;
        }
        pfi_oadr_interval x = base;
        x.interval_id = ivid;
        x.start_unix_s = s;
        x.end_unix_s = s + span;
        x.reduction = x.budget_w = NAN;
        double v;
        int has_limit = payload_value(pl, "IMPORT_CAPACITY_LIMIT", &v);
        int has_simple = 0;
        if (has_limit == 1) {
            if (!limit_units_ok) {
                note(nt,
                     "event %s interval %ld: IMPORT_CAPACITY_LIMIT in units '%s' ignored "
                     "(expected W, KW or MW)",
                     id, ivid, limit_units);
                continue;
            }
            if (!(v > 0)) {
                note(nt, "event %s interval %ld: IMPORT_CAPACITY_LIMIT %g ignored (not > 0)", id,
                     ivid, v);
                continue;
            }
            x.budget_w = v * limit_mult;
        } else if (has_limit == -1) {
            pfi_diag_set(diag, NULL, 0, "payloads.values",
                         "event %s, interval %ld: IMPORT_CAPACITY_LIMIT: expected a number", id,
                         ivid);
            return PFI_ERR_PARSE;
        } else if ((has_simple = payload_value(pl, "SIMPLE", &v)) == 1) {
            if (v != floor(v) || v < 0 || v > 1e9) {
                note(nt, "event %s interval %ld: SIMPLE level %g ignored (not an integer >= 0)", id,
                     ivid, v);
                continue;
            }
            const pfi_oadr_level *row = NULL;
            for (size_t t = 0; t < nl; t++)
                if (levels[t].level == (long)v)
                    row = &levels[t];
            if (row == NULL) {
                if (v != 0)
                    note(nt,
                         "event %s interval %ld: SIMPLE level %ld ignored (%s; add it to "
                         "--levels)",
                         id, ivid, (long)v, nl == 0 ? "no level table" : "not in the table");
                continue;
            }
            x.reduction = row->reduction;
            x.budget_w = row->budget_w;
        } else if (has_simple == -1) {
            pfi_diag_set(diag, NULL, 0, "payloads.values",
                         "event %s, interval %ld: SIMPLE: expected a number", id, ivid);
            return PFI_ERR_PARSE;
        }
        if (has_limit == 0 && has_simple == 0) {
            size_t q;
            json_t *p;
            json_array_foreach(pl, q, p)
            {
                json_t *t = json_object_get(p, "type");
                const char *tn = json_is_string(t) ? json_string_value(t) : "(no type)";
                note(nt, "event %s interval %ld: payload %.64s ignored (%s)", id, ivid, tn,
                     strcmp(tn, "CHARGE_STATE_SETPOINT") == 0
                         ? "a storage setpoint: pfi controls GPU power, not a battery"
                         : "pfi follows IMPORT_CAPACITY_LIMIT and SIMPLE only");
            }
            continue;
        }
        pfi_error e = ivec_push(iv, &x);
        if (e != PFI_OK) {
            if (e == PFI_ERR_LIMIT)
                pfi_diag_set(diag, NULL, 0, NULL, "more than %d intervals", PFI_OADR_MAX_INTERVALS);
            return e;
        }
    }
    return PFI_OK;
}

pfi_error pfi_oadr_events_parse(const char *json, size_t len, const pfi_oadr_level *levels,
                                size_t n_levels, pfi_oadr_interval **out, size_t *n,
                                char **notes_out, pfi_diag *diag)
{
    *out = NULL;
    *n = 0;
    if (notes_out != NULL)
        *notes_out = NULL;
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL) {
        pfi_diag_set(diag, NULL, je.line > 0 ? je.line : 0, NULL, "events: not JSON: %s", je.text);
        return PFI_ERR_PARSE;
    }
    if (!json_is_array(root) && !json_is_object(root)) {
        json_decref(root);
        pfi_diag_set(diag, NULL, 0, NULL, "events: expected an array of event objects");
        return PFI_ERR_PARSE;
    }
    ivec iv = {0};
    notes nt = {0};
    pfi_error e = PFI_OK;
    if (json_is_object(root))
        e = parse_event(root, 0, levels, n_levels, &iv, &nt, diag);
    else {
        size_t k;
        json_t *ev;
        json_array_foreach(root, k, ev)
        {
            if ((e = parse_event(ev, k, levels, n_levels, &iv, &nt, diag)) != PFI_OK)
                break;
        }
    }
    json_decref(root);
    if (e == PFI_OK && nt.nomem)
        e = PFI_ERR_NOMEM;
    if (e != PFI_OK) {
        pfi_free(iv.v);
        pfi_free(nt.text);
        return e;
    }
    *out = iv.v;
    *n = iv.n;
    if (notes_out != NULL)
        *notes_out = nt.text;
    else
        pfi_free(nt.text);
    return PFI_OK;
}

/* ---- timeline ------------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Whether interval a's target wins over b's where they overlap (see pfi_oadr_timeline). */
static bool wins(const pfi_oadr_interval *a, const pfi_oadr_interval *b)
{
    if (a->priority != b->priority)
        return a->priority < b->priority;
    bool ab = !isnan(a->budget_w), bb = !isnan(b->budget_w);
    if (ab != bb)
        return ab;
    return ab ? a->budget_w < b->budget_w : a->reduction > b->reduction;
}

pfi_error pfi_oadr_timeline(const pfi_oadr_interval *iv, size_t n, double epoch_unix_s,
                            double now_unix_s, double ramp_s, pfi_ctl_event **out, size_t *n_out,
                            pfi_diag *diag)
{
    *out = NULL;
    *n_out = 0;
    if (!isfinite(epoch_unix_s) || !isfinite(now_unix_s) || !isfinite(ramp_s) || ramp_s < 0) {
        pfi_diag_set(diag, NULL, 0, NULL,
                     "timeline: epoch, now and ramp must be finite, ramp >= 0");
        return PFI_ERR_INVALID_ARGUMENT;
    }
    if (n == 0)
        return PFI_OK;
    /* every boundary, clipped to [max(epoch, now-ignored ends), ...) */
    double *cut = pfi_malloc(2 * n * sizeof *cut);
    pfi_ctl_event *ev = pfi_malloc(2 * n * sizeof *ev);
    if (cut == NULL || ev == NULL) {
        pfi_free(cut);
        pfi_free(ev);
        return PFI_ERR_NOMEM;
    }
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(iv[i].end_unix_s > now_unix_s) || !(iv[i].end_unix_s > iv[i].start_unix_s))
            continue;
        cut[nc++] = fmax(iv[i].start_unix_s, epoch_unix_s);
        cut[nc++] = fmax(iv[i].end_unix_s, epoch_unix_s);
    }
    qsort(cut, nc, sizeof *cut, cmp_double);
    size_t ne = 0;
    pfi_error e = PFI_OK;
    for (size_t c = 0; c + 1 < nc; c++) {
        double a = cut[c], b = cut[c + 1];
        if (!(b > a))
            continue;
        const pfi_oadr_interval *best = NULL;
        for (size_t i = 0; i < n; i++) {
            if (!(iv[i].end_unix_s > now_unix_s) || iv[i].start_unix_s > a || iv[i].end_unix_s < b)
                continue;
            if (best == NULL || wins(&iv[i], best))
                best = &iv[i];
        }
        if (best == NULL)
            continue;
        double s = a - epoch_unix_s, t = b - epoch_unix_s;
        pfi_ctl_event *last = ne > 0 ? &ev[ne - 1] : NULL;
        bool same = last != NULL && last->end_s == s &&
                    ((isnan(best->budget_w) && isnan(last->budget_w) &&
                      last->reduction == best->reduction) ||
                     (!isnan(best->budget_w) && last->budget_w == best->budget_w));
        if (same) {
            last->end_s = t;
            continue;
        }
        if (ne == PFI_CTL_MAX_EVENTS) {
            pfi_diag_set(diag, NULL, 0, NULL, "timeline: more than %d pieces", PFI_CTL_MAX_EVENTS);
            e = PFI_ERR_LIMIT;
            break;
        }
        bool continues = last != NULL && last->end_s == s;
        ev[ne++] = (pfi_ctl_event){s, t, continues ? 0 : fmin(ramp_s, t - s), best->reduction,
                                   best->budget_w};
    }
    pfi_free(cut);
    if (e != PFI_OK || ne == 0) {
        pfi_free(ev);
        return e;
    }
    *out = ev;
    *n_out = ne;
    return PFI_OK;
}

pfi_error pfi_oadr_schedule_write(const pfi_ctl_event *ev, size_t n, const char *path,
                                  pfi_diag *diag)
{
    pfi_atomic_file a;
    pfi_error e = pfi_atomic_open(&a, path, diag);
    if (e != PFI_OK)
        return e;
    fprintf(a.f, "{\"events\": [");
    for (size_t i = 0; i < n; i++) {
        fprintf(a.f, "%s\n  {\"start_s\": %.17g, \"end_s\": %.17g, \"ramp_s\": %.17g, ",
                i ? "," : "", ev[i].start_s, ev[i].end_s, ev[i].ramp_s);
        if (!isnan(ev[i].budget_w))
            fprintf(a.f, "\"budget_w\": %.17g}", ev[i].budget_w);
        else
            fprintf(a.f, "\"reduction_pct\": %.17g}", ev[i].reduction * 100);
    }
    fprintf(a.f, "%s]}\n", n ? "\n" : "");
    return pfi_atomic_commit(&a, diag);
}

/* ---- reports ------------------------------------------------------------------------------ */

static void format_utc(double t, char *buf, size_t len)
{
    time_t s = (time_t)floor(t);
    struct tm tm;
    if (gmtime_r(&s, &tm) == NULL)
        snprintf(buf, len, "1970-01-01T00:00:00Z");
    else
        strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

char *pfi_oadr_report_json(const pfi_oadr_interval *iv, size_t n, const double *measured_w,
                           const char *client_name)
{
    if (n == 0 || client_name == NULL)
        return NULL;
    json_t *ints = json_array();
    for (size_t i = 0; i < n && ints != NULL; i++) {
        if (isnan(measured_w[i]))
            continue;
        char start[40], dur[48];
        format_utc(iv[i].start_unix_s, start, sizeof start);
        snprintf(dur, sizeof dur, "PT%.0fS", round(iv[i].end_unix_s - iv[i].start_unix_s));
        json_t *x =
            json_pack("{s:I, s:{s:s, s:s}, s:[{s:s, s:[f]}]}", "id", (json_int_t)iv[i].interval_id,
                      "intervalPeriod", "start", start, "duration", dur, "payloads", "type",
                      "DEMAND", "values", measured_w[i] / 1e3);
        if (x == NULL || json_array_append_new(ints, x) != 0) {
            json_decref(ints);
            ints = NULL;
        }
    }
    if (ints == NULL)
        return NULL;
    if (json_array_size(ints) == 0) {
        json_decref(ints);
        return NULL;
    }
    json_t *r = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:[{s:s, s:s, s:s, s:s}], s:[{s:s, s:o}]}", "objectType",
        "REPORT", "programID", iv[0].program_id, "eventID", iv[0].event_id, "clientName",
        client_name, "reportName", "pfi measured power", "payloadDescriptors", "objectType",
        "REPORT_PAYLOAD_DESCRIPTOR", "payloadType", "DEMAND", "readingType", "AVERAGE", "units",
        "KW", "resources", "resourceName", "AGGREGATED_REPORT", "intervals", ints);
    if (r == NULL)
        return NULL;
    char *s = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    return s;
}

/* ---- the client ---------------------------------------------------------------------------- */

struct pfi_oadr_client {
    char *vtn_url, *token_url, *client_id, *client_secret, *scope;
    double timeout_s;
    char *token;
    double token_expires; /* monotonic s; INFINITY: no expiry given */
};

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

pfi_error pfi_oadr_client_create(const pfi_oadr_client_config *cfg, pfi_oadr_client **out,
                                 pfi_diag *diag)
{
    *out = NULL;
    if (cfg == NULL || cfg->vtn_url == NULL || cfg->vtn_url[0] == '\0' || cfg->client_id == NULL ||
        cfg->client_id[0] == '\0' || cfg->client_secret == NULL || cfg->client_secret[0] == '\0' ||
        !(cfg->timeout_s > 0) || !isfinite(cfg->timeout_s)) {
        pfi_diag_set(diag, NULL, 0, NULL,
                     "openadr: a VTN URL, client id and secret and a timeout > 0 are needed");
        return PFI_ERR_INVALID_ARGUMENT;
    }
    const char *why;
    if (ctl_curl_load(&why) != 0) {
        pfi_diag_set(diag, NULL, 0, NULL, "%s", why);
        return PFI_ERR_UNAVAILABLE;
    }
    pfi_oadr_client *c = pfi_calloc(1, sizeof *c);
    if (c == NULL)
        return PFI_ERR_NOMEM;
    size_t ul = strlen(cfg->vtn_url);
    while (ul > 0 && cfg->vtn_url[ul - 1] == '/')
        ul--;
    c->vtn_url = pfi_malloc(ul + 1);
    if (c->vtn_url != NULL) {
        memcpy(c->vtn_url, cfg->vtn_url, ul);
        c->vtn_url[ul] = '\0';
    }
    if (cfg->token_url != NULL && cfg->token_url[0] != '\0')
        c->token_url = pfi_strdup(cfg->token_url);
    else if (c->vtn_url != NULL && (c->token_url = pfi_malloc(ul + 12)) != NULL)
        snprintf(c->token_url, ul + 12, "%s/auth/token", c->vtn_url);
    c->client_id = pfi_strdup(cfg->client_id);
    c->client_secret = pfi_strdup(cfg->client_secret);
    c->scope = cfg->scope != NULL ? pfi_strdup(cfg->scope) : NULL;
    c->timeout_s = cfg->timeout_s;
    if (c->vtn_url == NULL || c->token_url == NULL || c->client_id == NULL ||
        c->client_secret == NULL || (cfg->scope != NULL && c->scope == NULL)) {
        pfi_oadr_client_destroy(c);
        return PFI_ERR_NOMEM;
    }
    *out = c;
    return PFI_OK;
}

static void wipe_free(char *s)
{
    if (s == NULL)
        return;
    volatile char *p = s;
    while (*p != '\0')
        *p++ = '\0';
    pfi_free(s);
}

void pfi_oadr_client_destroy(pfi_oadr_client *c)
{
    if (c == NULL)
        return;
    pfi_free(c->vtn_url);
    pfi_free(c->token_url);
    pfi_free(c->client_id);
    wipe_free(c->client_secret);
    pfi_free(c->scope);
    wipe_free(c->token);
    pfi_free(c);
}

typedef struct body {
    char *p;
    size_t len, cap;
    bool too_big;
} body;

static size_t on_data(char *p, size_t sz, size_t nm, void *ud)
{
    body *b = ud;
    size_t k = sz * nm;
    if (b->len + k > MAX_BODY) {
        b->too_big = true;
        return 0;
    }
    if (b->len + k + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->len + k + 1)
            nc *= 2;
        char *q = pfi_realloc(b->p, nc);
        if (q == NULL)
            return 0;
        b->p = q;
        b->cap = nc;
    }
    memcpy(b->p + b->len, p, k);
    b->len += k;
    b->p[b->len] = '\0';
    return k;
}

/* One transfer: POST body (content_type) or GET; *status the HTTP status (0: none). */
static pfi_error transfer(const pfi_oadr_client *c, const char *url, const char *auth,
                          const char *content_type, const char *payload, long *status, body *b,
                          pfi_diag *diag)
{
    *status = 0;
    CURL *h = curl_easy_init();
    if (h == NULL)
        return PFI_ERR_NOMEM;
    long ms = (long)(c->timeout_s * 1000);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms > 0 ? ms : 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms > 0 ? ms : 1L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    struct curl_slist *hd = curl_slist_append(NULL, "Expect:");
    hd = curl_slist_append(hd, "Accept: application/json");
    char line[4200];
    if (auth != NULL) {
        snprintf(line, sizeof line, "Authorization: Bearer %s", auth);
        hd = curl_slist_append(hd, line);
    }
    if (payload != NULL) {
        snprintf(line, sizeof line, "Content-Type: %s", content_type);
        hd = curl_slist_append(hd, line);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
    } else
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    CURLcode rc = curl_easy_perform(h);
    memset(line, 0, sizeof line);
    pfi_error e = PFI_OK;
    if (rc != CURLE_OK) {
        pfi_diag_set(diag, url, 0, NULL, "%s",
                     b->too_big ? "answer larger than 16 MiB" : curl_easy_strerror(rc));
        e = b->too_big ? PFI_ERR_LIMIT : PFI_ERR_IO;
    } else
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    return e;
}

/* a=b&c=d, form-encoded (application/x-www-form-urlencoded, RFC 6749 §4.4.2). */
static char *token_form(const pfi_oadr_client *c)
{
    CURL *h = curl_easy_init();
    if (h == NULL)
        return NULL;
    char *id = curl_easy_escape(h, c->client_id, 0);
    char *sec = curl_easy_escape(h, c->client_secret, 0);
    char *sc = c->scope != NULL ? curl_easy_escape(h, c->scope, 0) : NULL;
    char *out = NULL;
    if (id != NULL && sec != NULL && (c->scope == NULL || sc != NULL)) {
        size_t k = strlen(id) + strlen(sec) + (sc ? strlen(sc) : 0) + 96;
        if ((out = pfi_malloc(k)) != NULL)
            snprintf(out, k, "grant_type=client_credentials&client_id=%s&client_secret=%s%s%s", id,
                     sec, sc ? "&scope=" : "", sc ? sc : "");
    }
    if (sec != NULL)
        memset(sec, 0, strlen(sec));
    curl_free(id);
    curl_free(sec);
    curl_free(sc);
    curl_easy_cleanup(h);
    return out;
}

static pfi_error fetch_token(pfi_oadr_client *c, pfi_diag *diag)
{
    wipe_free(c->token);
    c->token = NULL;
    char *form = token_form(c);
    if (form == NULL)
        return PFI_ERR_NOMEM;
    body b = {0};
    long status;
    pfi_error e = transfer(c, c->token_url, NULL, "application/x-www-form-urlencoded", form,
                           &status, &b, diag);
    wipe_free(form);
    if (e != PFI_OK) {
        pfi_free(b.p);
        return e;
    }
    if (status == 400 || status == 401 || status == 403) {
        json_t *j = b.p != NULL ? json_loadb(b.p, b.len, 0, NULL) : NULL;
        json_t *er = json_object_get(j, "error");
        pfi_diag_set(diag, c->token_url, 0, NULL,
                     "the token URL refused the client credentials (HTTP %ld%s%s): check "
                     "client_id and client_secret",
                     status, json_is_string(er) ? ", " : "",
                     json_is_string(er) ? json_string_value(er) : "");
        json_decref(j);
        pfi_free(b.p);
        return PFI_ERR_NO_PERMISSION;
    }
    if (status < 200 || status > 299) {
        pfi_diag_set(diag, c->token_url, 0, NULL, "token request: HTTP %ld", status);
        pfi_free(b.p);
        return PFI_ERR_IO;
    }
    json_t *j = b.p != NULL ? json_loadb(b.p, b.len, 0, NULL) : NULL;
    pfi_free(b.p);
    json_t *at = json_object_get(j, "access_token");
    json_t *ex = json_object_get(j, "expires_in");
    if (!json_is_string(at) || json_string_length(at) == 0 || json_string_length(at) > 4096 ||
        strpbrk(json_string_value(at), "\r\n") != NULL) {
        json_decref(j);
        pfi_diag_set(diag, c->token_url, 0, "access_token",
                     "token answer: expected JSON with an access_token of 1 to 4096 bytes");
        return PFI_ERR_PARSE;
    }
    c->token = pfi_strdup(json_string_value(at));
    c->token_expires = json_is_number(ex) ? mono_s() + json_number_value(ex) : INFINITY;
    json_decref(j);
    return c->token != NULL ? PFI_OK : PFI_ERR_NOMEM;
}

pfi_error pfi_oadr_request(pfi_oadr_client *c, const char *path, const char *req_body,
                           char **answer, size_t *alen, pfi_diag *diag)
{
    if (answer != NULL)
        *answer = NULL;
    if (alen != NULL)
        *alen = 0;
    size_t k = strlen(c->vtn_url) + strlen(path) + 1;
    char *url = pfi_malloc(k);
    if (url == NULL)
        return PFI_ERR_NOMEM;
    snprintf(url, k, "%s%s", c->vtn_url, path);
    pfi_error e = PFI_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (c->token == NULL || mono_s() + TOKEN_MARGIN_S >= c->token_expires)
            if ((e = fetch_token(c, diag)) != PFI_OK)
                break;
        body b = {0};
        long status;
        e = transfer(c, url, c->token, "application/json", req_body, &status, &b, diag);
        if (e != PFI_OK) {
            pfi_free(b.p);
            break;
        }
        if (status == 401 && attempt == 0) { /* expired or revoked: one fresh token */
            pfi_free(b.p);
            wipe_free(c->token);
            c->token = NULL;
            continue;
        }
        if (status == 401 || status == 403) {
            pfi_diag_set(diag, url, 0, NULL, "the VTN refused the token (HTTP %ld)%s", status,
                         status == 401 ? " even freshly issued" : ": not allowed for this client");
            pfi_free(b.p);
            e = PFI_ERR_NO_PERMISSION;
            break;
        }
        if (status < 200 || status > 299) {
            pfi_diag_set(diag, url, 0, NULL, "HTTP %ld", status);
            pfi_free(b.p);
            e = PFI_ERR_IO;
            break;
        }
        if (answer != NULL) {
            if (b.p == NULL && (b.p = pfi_strdup("")) == NULL) {
                e = PFI_ERR_NOMEM;
                break;
            }
            *answer = b.p;
            if (alen != NULL)
                *alen = b.len;
        } else
            pfi_free(b.p);
        break;
    }
    pfi_free(url);
    return e;
}

pfi_error pfi_oadr_program_id(pfi_oadr_client *c, const char *program_name, char *id,
                              pfi_diag *diag)
{
    id[0] = '\0';
    char *ans;
    size_t len;
    pfi_error e = pfi_oadr_request(c, "/programs", NULL, &ans, &len, diag);
    if (e != PFI_OK)
        return e;
    json_t *j = json_loadb(ans, len, 0, NULL);
    pfi_free(ans);
    if (!json_is_array(j)) {
        json_decref(j);
        pfi_diag_set(diag, NULL, 0, NULL, "GET /programs: expected a JSON array of programs");
        return PFI_ERR_PARSE;
    }
    size_t i;
    json_t *p;
    e = PFI_ERR_EMPTY;
    json_array_foreach(j, i, p)
    {
        json_t *nm = json_object_get(p, "programName");
        json_t *pid = json_object_get(p, "id");
        if (json_is_string(nm) && strcmp(json_string_value(nm), program_name) == 0) {
            if (!json_is_string(pid) || !valid_id(json_string_value(pid))) {
                pfi_diag_set(diag, NULL, 0, "id", "program %s: expected an objectID", program_name);
                e = PFI_ERR_PARSE;
            } else {
                snprintf(id, PFI_OADR_ID_LEN, "%s", json_string_value(pid));
                e = PFI_OK;
            }
            break;
        }
    }
    if (e == PFI_ERR_EMPTY)
        pfi_diag_set(diag, NULL, 0, "programName",
                     "the VTN has no program named '%.128s' (of %zu listed)", program_name,
                     json_array_size(j));
    json_decref(j);
    return e;
}

pfi_error pfi_oadr_events_get(pfi_oadr_client *c, const char *program_id, char **json, size_t *len,
                              pfi_diag *diag)
{
    *json = NULL;
    *len = 0;
    CURL *h = curl_easy_init();
    if (h == NULL)
        return PFI_ERR_NOMEM;
    char *esc = curl_easy_escape(h, program_id, 0);
    curl_easy_cleanup(h);
    if (esc == NULL)
        return PFI_ERR_NOMEM;
    json_t *all = json_array();
    pfi_error e = all != NULL ? PFI_OK : PFI_ERR_NOMEM;
    /* pages of EVENTS_PAGE (the spec's largest limit) until a short one */
    for (int page = 0; e == PFI_OK; page++) {
        if (page == PFI_OADR_MAX_INTERVALS / EVENTS_PAGE) {
            pfi_diag_set(diag, NULL, 0, NULL, "GET /events: more than %d events",
                         PFI_OADR_MAX_INTERVALS);
            e = PFI_ERR_LIMIT;
            break;
        }
        char path[512];
        snprintf(path, sizeof path, "/events?programID=%.300s&skip=%d&limit=%d", esc,
                 page * EVENTS_PAGE, EVENTS_PAGE);
        char *ans;
        size_t alen;
        if ((e = pfi_oadr_request(c, path, NULL, &ans, &alen, diag)) != PFI_OK)
            break;
        json_error_t je;
        json_t *j = json_loadb(ans, alen, 0, &je);
        pfi_free(ans);
        if (!json_is_array(j)) {
            pfi_diag_set(diag, NULL, 0, NULL, "GET /events: expected a JSON array of events%s%s",
                         j == NULL ? ": " : "", j == NULL ? je.text : "");
            json_decref(j);
            e = PFI_ERR_PARSE;
            break;
        }
        size_t got = json_array_size(j);
        if (json_array_extend(all, j) != 0)
            e = PFI_ERR_NOMEM;
        json_decref(j);
        if (got < EVENTS_PAGE)
            break;
    }
    curl_free(esc);
    if (e == PFI_OK) {
        *json = json_dumps(all, JSON_COMPACT);
        if (*json == NULL)
            e = PFI_ERR_NOMEM;
        else
            *len = strlen(*json);
    }
    json_decref(all);
    return e;
}
