/*
 * The Prometheus HTTP API reader (PFI_TELEMETRY_PROM_API): the JSON that /api/v1/query and
 * /api/v1/query_range answer (https://prometheus.io/docs/prometheus/latest/querying/api/),
 * "vector" results (one sample per series, [time, "value"]) and "matrix" results (a
 * "values" list per series), read as telemetry with the exposition reader's identity rules
 * (prometheus.c: (Hostname, UUID), else gpu; pfid's families mapped): "NaN" and the
 * infinities are missing; a counter's reset is the counter's (energy.c); a series absent at
 * a time leaves that GPU's timestamp incomplete; a series without __name__ (a function's
 * result, e.g. increase()) names no field: skipped with a note. Samples are taken in time
 * order, so two series for one GPU and metric at one time are duplicates (one kept, never
 * summed). A sample's time is epoch seconds (a number, or a decimal string) from 1970 to the
 * year 9999: anything else ("NaN", a date text, null) refuses the answer, naming the sample's
 * JSON path (jansson keeps no line numbers). The document is parsed whole by jansson (it is one
 * JSON value).
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "telemetry/internal.h"
#include "telemetry/timecheck.h"

/* One sample of the document, before it is stored in time order. */
typedef struct api_sample {
    double t, v;
    size_t ent, fid;
    pfi_value_status st;
    size_t order; /* document order, the tie-break: the first series of a duplicate wins */
} api_sample;

static int api_sample_cmp(const void *pa, const void *pb)
{
    const api_sample *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* jansson's reader callback: the line reader's buffered bytes, then the rest of the file. */
typedef struct api_src {
    tm_lines *r;
    bool buffered_done;
} api_src;

static size_t api_read(void *buf, size_t len, void *arg)
{
    api_src *s = arg;
    if (!s->buffered_done) {
        size_t n;
        const char *p = tm_lines_peek(s->r, &n);
        if (n > 0) {
            if (n > len)
                n = len;
            memcpy(buf, p, n);
            tm_lines_skip(s->r, n, 0);
            return n;
        }
        s->buffered_done = true;
    }
    if (s->r->eof)
        return 0;
    size_t got = fread(buf, 1, len, s->r->f);
    if (got == 0 && ferror(s->r->f))
        return (size_t)-1;
    return got;
}

static const char *label(json_t *metric, const char *a, const char *b)
{
    const char *v = json_string_value(json_object_get(metric, a));
    return v != NULL ? v : b ? json_string_value(json_object_get(metric, b)) : NULL;
}

/* A pair's time jt into *t: a JSON number, or a string holding a plain decimal number
 * (digits, one optional '.'), in epoch seconds within tm_epoch_valid. false for anything
 * else ("NaN", "+Inf", an RFC 3339 text, null, a time before 1970 or past the year 9999). */
static bool api_time(json_t *jt, double *t)
{
    if (json_is_number(jt)) {
        *t = json_number_value(jt);
        return tm_epoch_valid(*t);
    }
    const char *s = json_string_value(jt);
    if (s == NULL)
        return false;
    size_t n = strlen(s), digits = 0, dots = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= '0' && s[i] <= '9')
            digits++;
        else if (s[i] == '.' && dots++ == 0)
            continue;
        else
            return false;
    }
    return digits > 0 && tm_parse_number(s, n, t) == PFI_VALUE_OK && tm_epoch_valid(*t);
}

/* The text of a pair's time jt for a refusal, into buf[size]. */
static const char *api_time_text(json_t *jt, char *buf, size_t size)
{
    if (json_is_number(jt))
        snprintf(buf, size, "%.17g", json_number_value(jt));
    else if (json_is_string(jt)) {
        char q[TM_QUOTE_LEN];
        const char *s = json_string_value(jt);
        snprintf(buf, size, "\"%s\"", tm_quote(q, s, strlen(s), 40));
    } else
        snprintf(buf, size, "%s",
                 json_is_null(jt)      ? "null"
                 : json_is_boolean(jt) ? "a boolean"
                                       : "not a value");
    return buf;
}

/* One [time, "value"] pair into out: 1 when it is one, 0 when it is not a pair (or its value
 * is not one), -1 when its time is no time (*why: the refusal, the pair's own path before it
 * is added by the caller). */
static int api_pair(json_t *pair, double *t, double *v, pfi_value_status *st, char *why,
                    size_t why_size)
{
    if (!json_is_array(pair) || json_array_size(pair) != 2)
        return 0;
    json_t *jt = json_array_get(pair, 0), *jv = json_array_get(pair, 1);
    if (!api_time(jt, t)) {
        char buf[TM_QUOTE_LEN + 8];
        snprintf(why, why_size, "time %s is not a valid time (%s)",
                 api_time_text(jt, buf, sizeof buf), TM_EPOCH_S_EXPECTED);
        return -1;
    }
    if (!json_is_string(jv))
        return 0;
    const char *s = json_string_value(jv);
    size_t n = strlen(s);
    *v = NAN;
    if (strcmp(s, "NaN") == 0 || strcmp(s, "+Inf") == 0 || strcmp(s, "-Inf") == 0 ||
        strcmp(s, "Inf") == 0)
        *st = PFI_VALUE_MISSING;
    else
        *st = tm_parse_number(s, n, v);
    return *st != PFI_VALUE_INVALID;
}

/* The samples of one result series (vector: "value"; matrix: "values") appended to *a. */
static pfi_error api_series(pfi_telemetry *tm, json_t *res, size_t ri, bool matrix, api_sample **a,
                            size_t *n, size_t *cap, size_t *no_name, size_t *bad, size_t *ent_hint,
                            pfi_diag *diag)
{
    json_t *metric = json_object_get(res, "metric");
    if (!json_is_object(metric)) {
        (*bad)++;
        return PFI_OK;
    }
    const char *mname = label(metric, "__name__", NULL);
    const char *uuid = label(metric, "UUID", "uuid"), *gpu = label(metric, "gpu", NULL);
    if (uuid == NULL && gpu == NULL)
        return PFI_OK; /* not a per-GPU series */
    if (mname == NULL) {
        (*no_name)++;
        return PFI_OK;
    }
    const char *as;
    size_t as_n;
    double scale;
    if (!tm_prom_metric_field(mname, strlen(mname), &as, &as_n, &scale))
        return PFI_OK;
    const char *host = label(metric, "Hostname", "hostname");
    if (host == NULL)
        host = tm->opt.host ? tm->opt.host : "";
    char ename[640];
    if (uuid != NULL)
        snprintf(ename, sizeof ename, "%.256s/%.256s", host, uuid);
    else
        snprintf(ename, sizeof ename, "%.256s/gpu%.64s", host, gpu);
    size_t ent, fid;
    pfi_error e = tm_entity(tm, ename, strlen(ename), ent_hint);
    if (e == PFI_ERR_LIMIT)
        return PFI_OK; /* past the entity limit (noted): the series is not read */
    if (e != PFI_OK)
        return e;
    ent = *ent_hint;
    if ((e = tm_field(tm, as, as_n, &fid)) == PFI_ERR_LIMIT)
        return PFI_OK; /* past the field limit (noted): the series is not read */
    if (e != PFI_OK)
        return e;
    json_t *vals = matrix ? json_object_get(res, "values") : NULL;
    size_t m = matrix ? json_array_size(vals) : 1;
    for (size_t i = 0; i < m; i++) {
        api_sample s = {.ent = ent, .fid = fid, .order = *n};
        char why[320];
        int ok = api_pair(matrix ? json_array_get(vals, i) : json_object_get(res, "value"), &s.t,
                          &s.v, &s.st, why, sizeof why);
        if (ok < 0) { /* never a sample at a time that is none */
            if (diag != NULL) {
                char path[64];
                if (matrix)
                    snprintf(path, sizeof path, "data.result[%zu].values[%zu]", ri, i);
                else
                    snprintf(path, sizeof path, "data.result[%zu].value", ri);
                snprintf(diag->message, sizeof diag->message, "%s (%s %s): %s", path, mname,
                         uuid != NULL ? uuid : gpu, why);
            }
            return PFI_ERR_PARSE;
        }
        if (ok == 0) {
            (*bad)++;
            continue;
        }
        tm->time_utc = true; /* epoch seconds: UTC, no zone to apply */
        if (s.st == PFI_VALUE_OK && scale != 1 && !tm_is_dcgm_blank(s.v))
            s.v *= scale;
        if (*n == *cap) {
            size_t nc = *cap ? 2 * *cap : 256;
            api_sample *na = pfi_realloc(*a, nc * sizeof *na);
            if (na == NULL)
                return PFI_ERR_NOMEM;
            *a = na;
            *cap = nc;
        }
        (*a)[(*n)++] = s;
    }
    return PFI_OK;
}

pfi_error tm_read_prom_api(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag)
{
    api_src src = {.r = r};
    json_error_t jerr;
    json_t *root = json_load_callback(api_read, &src, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        if (diag != NULL)
            snprintf(diag->message, sizeof diag->message,
                     "Prometheus API answer: not JSON at line %d, column %d: %s", jerr.line,
                     jerr.column, jerr.text);
        return PFI_ERR_PARSE;
    }
    pfi_error e = PFI_OK;
    const char *status = json_string_value(json_object_get(root, "status"));
    json_t *data = json_object_get(root, "data");
    const char *type = json_string_value(json_object_get(data, "resultType"));
    json_t *result = json_object_get(data, "result");
    if (status != NULL && strcmp(status, "success") != 0) {
        const char *msg = json_string_value(json_object_get(root, "error"));
        const char *et = json_string_value(json_object_get(root, "errorType"));
        char line[PFI_TELEMETRY_NOTE_LEN];
        snprintf(line, sizeof line, "Prometheus: %s: %s", et ? et : "error", msg ? msg : status);
        tm_tool_error(tm, name, 1, line, strlen(line));
        json_decref(root);
        return PFI_OK;
    }
    bool matrix = type != NULL && strcmp(type, "matrix") == 0;
    if (type == NULL || !json_is_array(result) || (!matrix && strcmp(type, "vector") != 0)) {
        if (diag != NULL)
            snprintf(diag->message, sizeof diag->message,
                     "Prometheus API answer: resultType '%s' is not telemetry (a vector or a "
                     "matrix of per-GPU series is)",
                     type ? type : "(none)");
        json_decref(root);
        return PFI_ERR_PARSE;
    }
    api_sample *a = NULL;
    size_t n = 0, cap = 0, no_name = 0, bad = 0, hint = (size_t)-1;
    for (size_t i = 0; e == PFI_OK && i < json_array_size(result); i++)
        e = api_series(tm, json_array_get(result, i), i, matrix, &a, &n, &cap, &no_name, &bad,
                       &hint, diag);
    json_decref(root);
    if (e == PFI_OK && n > 0)
        qsort(a, n, sizeof *a, api_sample_cmp);
    /* In time order, one row per distinct time: two series of one GPU and metric there are
     * duplicates (tm_put's row check). */
    long row = 0;
    for (size_t i = 0; e == PFI_OK && i < n; i++) {
        if (i > 0 && a[i].t != a[i - 1].t)
            row++;
        pfi_telemetry_entity *en = &tm->entities[a[i].ent];
        if (en->last_t != a[i].t) {
            en->rows++;
            en->last_t = a[i].t;
            tm->n_rows++;
        }
        e = tm_put(tm, a[i].ent, a[i].fid, a[i].t, a[i].st, a[i].v, row, false);
    }
    pfi_free(a);
    if (no_name > 0)
        tm_note(tm,
                "%s: %zu series without __name__ (a function's result, e.g. increase()): no "
                "field to read them as: skipped (query the raw metric, or label_replace a "
                "__name__)",
                name, no_name);
    if (bad > 0) {
        tm_note(tm, "%s: %zu samples that are not [time, \"value\"] pairs: skipped", name, bad);
        tm->n_skipped += bad;
    }
    return e;
}
