/*
 * The Prometheus text exposition format (0.0.4) reader, for what dcgm-exporter serves: one
 * file is one scrape. Layout: https://prometheus.io/docs/instrumenting/exposition_formats/
 * and shared/cases README "Formats confirmed from real output". What looks like a scrape is
 * decided in detect.c. A sample timestamp is an integer of epoch milliseconds (the format's
 * int64) from 1970 to the year 9999; any other is refused on its line.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "telemetry/internal.h"
#include "telemetry/span.h"
#include "telemetry/timecheck.h"

#define MAX_LABELS                                                                                 \
    64 /* labels kept per sample; past it, only the identity labels (no limit on                   \
          the labels a series may have: Kubernetes scrapes carry 18 and more) */
#define LABEL_LEN 256

/* The labels pfi reads: a sample's identity and its duplicate rule. */
static bool identity_label(span n)
{
    static const char *const keep[] = {"UUID",     "uuid",     "gpu", "Hostname",
                                       "hostname", "GPU_I_ID", "pod", "__name__"};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        if (span_eq(n, keep[i]))
            return true;
    return false;
}

typedef struct label {
    span name;
    char value[LABEL_LEN];
} label;

/* Parse {a="x",b="y\"z"} starting at s[*i] == '{'. Values are unescaped (\\ \" \n). */
static bool parse_labels(const char *s, size_t n, size_t *i, label *lab, size_t *nl)
{
    size_t p = *i + 1, k = 0;
    for (;;) {
        while (p < n && (s[p] == ' ' || s[p] == ','))
            p++;
        if (p < n && s[p] == '}') {
            *i = p + 1;
            *nl = k;
            return true;
        }
        size_t b = p;
        while (p < n && ((s[p] >= 'a' && s[p] <= 'z') || (s[p] >= 'A' && s[p] <= 'Z') ||
                         (s[p] >= '0' && s[p] <= '9') || s[p] == '_'))
            p++;
        if (p == b || p + 1 >= n || s[p] != '=' || s[p + 1] != '"')
            return false;
        span lname = {s + b, p - b};
        p += 2;
        size_t vl = 0;
        char tmp[LABEL_LEN];
        for (;;) {
            if (p >= n)
                return false;
            char c = s[p++];
            if (c == '"')
                break;
            if (c == '\\') {
                if (p >= n)
                    return false;
                char d = s[p++];
                c = d == 'n' ? '\n' : d;
            }
            if (vl + 1 < LABEL_LEN)
                tmp[vl++] = c;
        }
        tmp[vl] = '\0';
        if (k < MAX_LABELS) {
            lab[k].name = lname;
            memcpy(lab[k].value, tmp, vl + 1);
            k++;
        } else if (identity_label(lname)) {
            /* Full: an identity label takes the place of one pfi does not read. */
            for (size_t q = MAX_LABELS; q-- > 0;)
                if (!identity_label(lab[q].name)) {
                    lab[q].name = lname;
                    memcpy(lab[q].value, tmp, vl + 1);
                    break;
                }
        }
    }
}

static const char *label_get(const label *lab, size_t nl, const char *name)
{
    for (size_t i = 0; i < nl; i++)
        if (span_eq(lab[i].name, name))
            return lab[i].value;
    return NULL;
}

/* The scrape being read: its number and times, and what its samples so far said. */
typedef struct prom_scrape {
    long index;       /* scrapes read before this one: tm_put's row (duplicates) */
    double t_nominal; /* index x the nominal interval; NaN until a sample needs it (a
                         timestamped scrape never assumes an interval) */
    double t_stamp;   /* the first sample timestamp of this scrape; NaN: none yet */
    bool power_seen;  /* a power or energy sample */
    size_t n_samples; /* per-GPU samples */
    size_t ent;       /* the last entity (tm_entity's hint) */
} prom_scrape;

/* One sample line: name{labels} value [timestamp]. */
typedef struct prom_line {
    span metric;
    label lab[MAX_LABELS];
    size_t nl;   /* labels in lab */
    span tok[2]; /* the value, and the timestamp (ms) when k == 2 */
    size_t k;
} prom_line;

/* Line s[0..n) into *pl: true for a sample line. Blank lines and comments (HELP, TYPE)
 * give false silently; a line that is neither gives false with a note, counted skipped. */
static bool prom_parse_line(pfi_telemetry *tm, const char *s, size_t n, const char *name, long line,
                            prom_line *pl)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    if (i == n || s[i] == '#')
        return false; /* HELP / TYPE / comments: metadata */
    size_t b = i;
    while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                     (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == ':'))
        i++;
    pl->metric = (span){s + b, i - b};
    pl->nl = 0;
    if (pl->metric.n == 0 || (i < n && s[i] == '{' && !parse_labels(s, n, &i, pl->lab, &pl->nl))) {
        tm_note(tm, "%s:%ld: not a Prometheus sample line: skipped", name, line);
        tm->n_skipped++;
        return false;
    }
    pl->k = span_split_ws(s + i, n - i, pl->tok, 2);
    if (pl->k < 1 || pl->k > 2) {
        tm_note(tm, "%s:%ld: expected a value (and optional timestamp): skipped", name, line);
        tm->n_skipped++;
        return false;
    }
    return true;
}

/* The entity of a sample, "<host>/<UUID>" or "<host>/gpu<gpu>", in ename[size]: false when
 * the labels name no GPU (the exporter's own metrics). */
static bool prom_entity_name(const pfi_telemetry *tm, const prom_line *pl, char *ename, size_t size,
                             bool device_level)
{
    const char *uuid = label_get(pl->lab, pl->nl, "UUID");
    if (uuid == NULL)
        uuid = label_get(pl->lab, pl->nl, "uuid");
    const char *gpu = label_get(pl->lab, pl->nl, "gpu");
    if (uuid == NULL && gpu == NULL)
        return false;
    const char *host = label_get(pl->lab, pl->nl, "hostname");
    if (host == NULL)
        host = label_get(pl->lab, pl->nl, "Hostname");
    if (host == NULL)
        host = tm->opt.host ? tm->opt.host : "";
    if (uuid != NULL)
        snprintf(ename, size, "%s/%s", host, uuid);
    else
        snprintf(ename, size, "%s/gpu%s", host, gpu);
    /* A MIG instance's own metrics are its own (UUID, GPU instance); the device's are the
     * physical GPU's. */
    const char *gi = label_get(pl->lab, pl->nl, "GPU_I_ID");
    if (gi != NULL && gi[0] != '\0' && !device_level) {
        size_t used = strlen(ename);
        snprintf(ename + used, size - used, "/GI%s", gi);
    }
    return true;
}

/* The sample value: NaN and the infinities are missing values. */
static pfi_value_status prom_value(span x, double *v)
{
    if (span_eq(x, "NaN") || span_eq(x, "+Inf") || span_eq(x, "-Inf") || span_eq(x, "Inf"))
        return PFI_VALUE_MISSING;
    return tm_parse_number(x.s, x.n, v);
}

/* The scrape's nominal time (its index x the interval), taken when first needed: only then is
 * an interval assumed and said (tm_interval). */
static double prom_nominal(pfi_telemetry *tm, prom_scrape *sc)
{
    if (isnan(sc->t_nominal))
        sc->t_nominal = (double)sc->index * tm_interval(tm);
    return sc->t_nominal;
}

/* A sample timestamp x: epoch milliseconds, an integer (the exposition format's int64),
 * 0 to TM_TIME_END_S in ms, into *ms. false for anything else: a fraction, an exponent, a
 * sign, a word, a time before 1970 or after the year 9999. */
static bool prom_stamp_ms(span x, double *ms)
{
    if (x.n == 0 || x.n > 15)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < x.n; i++) {
        if (x.s[i] < '0' || x.s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(x.s[i] - '0');
    }
    *ms = (double)v; /* (exact: below 2^53) */
    return *ms < TM_TIME_END_S * 1000.0;
}

/* The sample's time into *t: its own timestamp (ms) when it has one, else the scrape's
 * nominal time (a sample without a timestamp makes the times nominal). false, with diag
 * naming the line, for a timestamp that is no time: never a nominal time in its place. */
static bool prom_sample_time(pfi_telemetry *tm, prom_scrape *sc, const prom_line *pl, long line,
                             pfi_diag *diag, double *t)
{
    if (pl->k == 2) {
        double ms;
        if (!prom_stamp_ms(pl->tok[1], &ms)) {
            if (diag != NULL) {
                char q[TM_QUOTE_LEN];
                diag->line = line;
                snprintf(diag->message, sizeof diag->message,
                         "timestamp: '%s' is not a valid time (" TM_EPOCH_MS_EXPECTED ")",
                         tm_quote(q, pl->tok[1].s, pl->tok[1].n, 40));
            }
            return false;
        }
        *t = ms / 1000.0;
        tm->prom_stamped = true;
        tm->time_utc = true; /* epoch milliseconds: UTC, no zone to apply */
        if (isnan(sc->t_stamp))
            sc->t_stamp = *t;
    } else {
        *t = prom_nominal(tm, sc);
        tm->time_nominal = true;
        tm->time_relative = true;
    }
    return true;
}

/* Store the sample (entity ent, field fid, at t) with the scrape as its row: a second
 * series for the same GPU and metric in one scrape is a duplicate (noted once per series). */
static pfi_error prom_store(pfi_telemetry *tm, prom_scrape *sc, const prom_line *pl, size_t ent,
                            size_t fid, double t, pfi_value_status st, double v, const char *ename,
                            const char *name, long line)
{
    const char *pod = label_get(pl->lab, pl->nl, "pod");
    pfi_telemetry_kind kind = tm->fields[fid].kind;
    if (kind == PFI_KIND_POWER_W || kind == PFI_KIND_ENERGY_MJ)
        sc->power_seen = true;
    const pfi_telemetry_series *old = pfi_telemetry_series_get(tm, ent, fid);
    size_t dup_before = old ? old->n_duplicate : 0;
    tm->line_now = line;
    pfi_error e = tm_put(tm, ent, fid, t, st, v, sc->index, pod != NULL && pod[0] != '\0');
    if (e != PFI_OK)
        return e;
    const pfi_telemetry_series *now = pfi_telemetry_series_get(tm, ent, fid);
    if (now != NULL && now->n_duplicate > dup_before && now->n_duplicate == 1)
        tm_note(tm,
                "%s:%ld: duplicate series for %s %s (two sources, e.g. two "
                "exporters): one kept, never summed",
                name, line, ename, tm->fields[fid].source);
    if (tm->entities[ent].last_t != t) { /* a row: one entity's samples of one time */
        tm->entities[ent].rows++;
        tm->entities[ent].last_t = t;
        tm->n_rows++;
    }
    sc->n_samples++;
    return PFI_OK;
}

/* pfid's own /metrics (src/agent/metrics.c): each per-GPU family as the DCGM field it is and
 * the factor to that field's unit, so that pfi reads its own agent's output like
 * dcgm-exporter's. pfid families not here (pfi_gpu_up, timestamps, the job's) are not
 * telemetry samples. */
static const struct pfid_metric {
    const char *metric, *as;
    double scale;
} pfid_metrics[] = {
    {"pfi_gpu_power_watts", "DCGM_FI_DEV_POWER_USAGE", 1},
    {"pfi_gpu_energy_joules_total", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 1000},
    {"pfi_gpu_power_cap_watts", "DCGM_FI_DEV_POWER_MGMT_LIMIT", 1},
    {"pfi_gpu_power_cap_enforced_watts", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", 1},
    {"pfi_gpu_power_cap_max_watts", "power.max_limit", 1},
    {"pfi_gpu_sm_clock_hertz", "DCGM_FI_DEV_SM_CLOCK", 1e-6},
    {"pfi_gpu_memory_clock_hertz", "DCGM_FI_DEV_MEM_CLOCK", 1e-6},
    {"pfi_gpu_temperature_celsius", "DCGM_FI_DEV_GPU_TEMP", 1},
    {"pfi_gpu_utilization_ratio", "DCGM_FI_DEV_GPU_UTIL", 100},
    {"pfi_gpu_dram_active_ratio", "DCGM_FI_PROF_DRAM_ACTIVE", 1},
    {"pfi_gpu_tensor_active_ratio", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1},
    {"pfi_gpu_sm_active_ratio", "DCGM_FI_PROF_SM_ACTIVE", 1},
    {"pfi_gpu_clock_event_reasons", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 1},
};

/* The field of metric m: pfid's families through pfid_metrics (*scale their factor; false
 * for the pfid families that are not samples), every other name as it stands. */
bool tm_prom_metric_field(const char *mtext, size_t mlen, const char **as_s, size_t *as_n,
                          double *scale)
{
    span m = {mtext, mlen};
    *as_s = mtext;
    *as_n = mlen;
    *scale = 1;
    if (!(m.n > 8 && memcmp(m.s, "pfi_gpu_", 8) == 0))
        return true;
    for (size_t i = 0; i < sizeof pfid_metrics / sizeof pfid_metrics[0]; i++)
        if (span_eq(m, pfid_metrics[i].metric)) {
            *as_s = pfid_metrics[i].as;
            *as_n = strlen(pfid_metrics[i].as);
            *scale = pfid_metrics[i].scale;
            return true;
        }
    return false;
}

/* One parsed sample line: its entity and field (made even when the value is then
 * rejected), its value and time, stored. */
static pfi_error prom_sample(pfi_telemetry *tm, prom_scrape *sc, const prom_line *pl,
                             const char *name, long line, pfi_diag *diag)
{
    span as;
    double scale;
    if (!tm_prom_metric_field(pl->metric.s, pl->metric.n, &as.s, &as.n, &scale))
        return PFI_OK;
    pfi_error e;
    size_t fid;
    if ((e = tm_field(tm, as.s, as.n, &fid)) != PFI_OK)
        return e == PFI_ERR_LIMIT ? PFI_OK : e; /* past the field limit (noted): not read */
    const pfi_telemetry_field *fl = &tm->fields[fid];
    bool device = tm_device_level(fl->kind, fl->dcgm_id);
    char ename[3 * LABEL_LEN + 16];
    if (!prom_entity_name(tm, pl, ename, sizeof ename, device))
        return PFI_OK; /* not a per-GPU metric (exporter self-metrics) */
    if ((e = tm_entity(tm, ename, strlen(ename), &sc->ent)) != PFI_OK)
        return e == PFI_ERR_LIMIT ? PFI_OK : e; /* past the entity limit (noted): not read */
    /* The device's metric on a second MIG instance's series of this scrape: the same
     * reading again, taken once (not a duplicate source). */
    const char *gi = label_get(pl->lab, pl->nl, "GPU_I_ID");
    const pfi_telemetry_series *ds = pfi_telemetry_series_get(tm, sc->ent, fid);
    if (device && gi != NULL && ds != NULL && ds->last_row == sc->index)
        return PFI_OK;
    double v = NAN;
    pfi_value_status st = prom_value(pl->tok[0], &v);
    if (st == PFI_VALUE_OK && scale != 1 && !tm_is_dcgm_blank(v))
        v *= scale;
    if (st == PFI_VALUE_INVALID) {
        tm_note(tm, "%s:%ld: '%.*s' is not a sample value: skipped", name, line,
                (int)(pl->tok[0].n > 40 ? 40 : pl->tok[0].n), pl->tok[0].s);
        tm->n_skipped++;
        return PFI_OK;
    }
    /* A NaN or +-Inf sample is missing: its series' first one is named by file and line (the
     * summary's "not available" note counts them, with no line). */
    if (st == PFI_VALUE_MISSING && (ds == NULL || ds->n_missing == 0))
        tm_note(tm,
                "%s:%ld: %s: %s is '%.*s': a missing sample (the series' first; all are "
                "counted in its \"not available\" note)",
                name, line, ename, fl->name, (int)(pl->tok[0].n > 40 ? 40 : pl->tok[0].n),
                pl->tok[0].s);
    double t;
    if (!prom_sample_time(tm, sc, pl, line, diag, &t))
        return PFI_ERR_PARSE;
    return prom_store(tm, sc, pl, sc->ent, fid, t, st, v, ename, name, line);
}

/*
 * A scrape without power samples: a note, and a hole for every GPU already known, never
 * integrated across. Its time is the scrape's: nominal, or the timestamp its other samples
 * carry; when the scrapes are timestamped and this one says nothing, the time is not known
 * (NaN): a break, but no timestamp of the grid (a nominal time there would be on another
 * clock).
 */
static pfi_error prom_power_hole(pfi_telemetry *tm, prom_scrape *sc, const char *name)
{
    tm_note(tm,
            "%s: no power samples in this scrape (%zu GPU samples): "
            "DCGM_FI_DEV_POWER_USAGE / DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION absent; "
            "add them to the exporter's counters CSV",
            name, sc->n_samples);
    double t_hole = !isnan(sc->t_stamp) ? sc->t_stamp
                    : tm->prom_stamped  ? NAN
                                        : prom_nominal(tm, sc);
    long fp = pfi_telemetry_field_find(tm, "power_w");
    for (size_t en = 0; fp >= 0 && en < tm->n_entities; en++) {
        pfi_error e = tm_put(tm, en, (size_t)fp, t_hole, PFI_VALUE_MISSING, NAN, sc->index, false);
        if (e != PFI_OK)
            return e;
    }
    return PFI_OK;
}

pfi_error tm_read_prom(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag)
{
    prom_scrape sc = {.index = (long)tm->n_scrapes++, .t_stamp = NAN, .ent = (size_t)-1};
    sc.t_nominal = NAN;
    prom_line pl;
    for (;;) {
        const char *s;
        size_t n;
        bool eof;
        pfi_error e = tm_lines_next(r, &s, &n, &eof);
        if (e != PFI_OK)
            return e;
        if (eof)
            break;
        if (prom_parse_line(tm, s, n, name, r->line, &pl) &&
            (e = prom_sample(tm, &sc, &pl, name, r->line, diag)) != PFI_OK)
            return e;
    }
    return sc.power_seen ? PFI_OK : prom_power_hole(tm, &sc, name);
}
