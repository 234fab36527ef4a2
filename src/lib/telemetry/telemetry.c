/*
 * The telemetry collector: entities, fields, series, range checks, notes, time handling
 * (integration over time: tm_energy.c). The readers (read_smi.c, read_dcgm.c) feed it through
 * tm_internal.h.
 */
#define _GNU_SOURCE /* memmem, gmtime_r */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/memory.h"
#include "telemetry/internal.h"
#include "telemetry/scan.h"

/*
 * Source names -> canonical field. Names from nvidia-smi --help-query-gpu, nvidia-smi dmon
 * headers, dcgmi dmon -l short names and dcgm-exporter DCGM_FI_* metrics; DCGM ids from
 * dcgm_fields.h. The canonical name carries the unit.
 */
static const struct field_alias {
    const char *source, *canonical;
    pfi_tm_kind kind;
    int dcgm_id;
} aliases[] = {
    {"power.draw", "power_w", PFI_KIND_POWER_W, 155},
    {"power.draw.average", "power_avg_w", PFI_KIND_POWER_W, 155},
    {"power.draw.instant", "power_instant_w", PFI_KIND_POWER_W, 157},
    {"power.limit", "power_limit_w", PFI_KIND_LIMIT_W, 160},
    {"enforced.power.limit", "enforced_limit_w", PFI_KIND_LIMIT_W, 164},
    {"power.default_limit", "default_limit_w", PFI_KIND_LIMIT_W, 163},
    {"power.min_limit", "min_limit_w", PFI_KIND_LIMIT_W, 161},
    {"power.max_limit", "max_limit_w", PFI_KIND_LIMIT_W, 162},
    {"utilization.gpu", "gpu_util_pct", PFI_KIND_PERCENT, 203},
    {"utilization.memory", "mem_copy_util_pct", PFI_KIND_PERCENT, 204},
    {"temperature.gpu", "temp_c", PFI_KIND_OTHER, 150},
    {"temperature.memory", "mem_temp_c", PFI_KIND_OTHER, 140},
    {"clocks.current.sm", "sm_clock_mhz", PFI_KIND_OTHER, 100},
    {"clocks.sm", "sm_clock_mhz", PFI_KIND_OTHER, 100},
    {"clocks.current.memory", "mem_clock_mhz", PFI_KIND_OTHER, 101},
    {"clocks.mem", "mem_clock_mhz", PFI_KIND_OTHER, 101},
    {"memory.used", "fb_used_mib", PFI_KIND_OTHER, 252},
    {"fan.speed", "fan_pct", PFI_KIND_PERCENT, 0},
    /* dmon */
    {"pwr", "power_w", PFI_KIND_POWER_W, 155},
    {"gtemp", "temp_c", PFI_KIND_OTHER, 150},
    {"temp", "temp_c", PFI_KIND_OTHER, 150},
    {"mtemp", "mem_temp_c", PFI_KIND_OTHER, 140},
    {"sm", "gpu_util_pct", PFI_KIND_PERCENT, 203},
    {"mem", "mem_copy_util_pct", PFI_KIND_PERCENT, 204},
    {"enc", "enc_util_pct", PFI_KIND_PERCENT, 206},
    {"dec", "dec_util_pct", PFI_KIND_PERCENT, 207},
    {"jpg", "jpg_util_pct", PFI_KIND_PERCENT, 0},
    {"ofa", "ofa_util_pct", PFI_KIND_PERCENT, 0},
    {"mclk", "mem_clock_mhz", PFI_KIND_OTHER, 101},
    {"pclk", "sm_clock_mhz", PFI_KIND_OTHER, 100},
    {"pviol", "power_violation_pct", PFI_KIND_PERCENT, 240},
    {"fb", "fb_used_mib", PFI_KIND_OTHER, 252},
    /* dcgmi dmon short names */
    {"POWER", "power_w", PFI_KIND_POWER_W, 155},
    {"TOTEC", "energy_mj", PFI_KIND_ENERGY_MJ, 156},
    {"POWINST", "power_instant_w", PFI_KIND_POWER_W, 157},
    {"PMLMT", "power_limit_w", PFI_KIND_LIMIT_W, 160},
    {"PMMAX", "max_limit_w", PFI_KIND_LIMIT_W, 162},
    {"EPLMT", "enforced_limit_w", PFI_KIND_LIMIT_W, 164},
    {"TMPTR", "temp_c", PFI_KIND_OTHER, 150},
    {"MMTMP", "mem_temp_c", PFI_KIND_OTHER, 140},
    {"GPUTL", "gpu_util_pct", PFI_KIND_PERCENT, 203},
    {"MCUTL", "mem_copy_util_pct", PFI_KIND_PERCENT, 204},
    {"FBUSD", "fb_used_mib", PFI_KIND_OTHER, 252},
    {"SMCLK", "sm_clock_mhz", PFI_KIND_OTHER, 100},
    {"MMCLK", "mem_clock_mhz", PFI_KIND_OTHER, 101},
    {"GRACT", "gr_active", PFI_KIND_RATIO, 1001},
    {"SMACT", "sm_active", PFI_KIND_RATIO, 1002},
    {"SMOCC", "sm_occupancy", PFI_KIND_RATIO, 1003},
    {"TENSO", "tensor_active", PFI_KIND_RATIO, 1004},
    {"DRAMA", "dram_active", PFI_KIND_RATIO, 1005},
    /* dcgm-exporter */
    {"DCGM_FI_DEV_POWER_USAGE", "power_w", PFI_KIND_POWER_W, 155},
    {"DCGM_FI_DEV_POWER_USAGE_INSTANT", "power_instant_w", PFI_KIND_POWER_W, 157},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "energy_mj", PFI_KIND_ENERGY_MJ, 156},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT", "power_limit_w", PFI_KIND_LIMIT_W, 160},
    {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "enforced_limit_w", PFI_KIND_LIMIT_W, 164},
    {"DCGM_FI_DEV_GPU_UTIL", "gpu_util_pct", PFI_KIND_PERCENT, 203},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "mem_copy_util_pct", PFI_KIND_PERCENT, 204},
    {"DCGM_FI_DEV_GPU_TEMP", "temp_c", PFI_KIND_OTHER, 150},
    {"DCGM_FI_DEV_MEMORY_TEMP", "mem_temp_c", PFI_KIND_OTHER, 140},
    {"DCGM_FI_DEV_SM_CLOCK", "sm_clock_mhz", PFI_KIND_OTHER, 100},
    {"DCGM_FI_DEV_MEM_CLOCK", "mem_clock_mhz", PFI_KIND_OTHER, 101},
    {"DCGM_FI_DEV_FB_USED", "fb_used_mib", PFI_KIND_OTHER, 252},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gr_active", PFI_KIND_RATIO, 1001},
    {"DCGM_FI_PROF_SM_ACTIVE", "sm_active", PFI_KIND_RATIO, 1002},
    {"DCGM_FI_PROF_SM_OCCUPANCY", "sm_occupancy", PFI_KIND_RATIO, 1003},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "tensor_active", PFI_KIND_RATIO, 1004},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "dram_active", PFI_KIND_RATIO, 1005},
    /* nvidia-smi -q */
    {"Power Draw", "power_w", PFI_KIND_POWER_W, 155},
    {"Average Power Draw", "power_avg_w", PFI_KIND_POWER_W, 155},
    {"Instantaneous Power Draw", "power_instant_w", PFI_KIND_POWER_W, 157},
    {"Power Limit", "power_limit_w", PFI_KIND_LIMIT_W, 160},
    {"Current Power Limit", "enforced_limit_w", PFI_KIND_LIMIT_W, 164},
    {"Enforced Power Limit", "enforced_limit_w", PFI_KIND_LIMIT_W, 164},
    {"Requested Power Limit", "requested_limit_w", PFI_KIND_LIMIT_W, 160},
    {"Default Power Limit", "default_limit_w", PFI_KIND_LIMIT_W, 163},
    {"Min Power Limit", "min_limit_w", PFI_KIND_LIMIT_W, 161},
    {"Max Power Limit", "max_limit_w", PFI_KIND_LIMIT_W, 162},
    /* nvidia-smi -q -x element names (case-21: renamed and split across drivers) */
    {"power_draw", "power_w", PFI_KIND_POWER_W, 155},
    {"average_power_draw", "power_avg_w", PFI_KIND_POWER_W, 155},
    {"instant_power_draw", "power_instant_w", PFI_KIND_POWER_W, 157},
    {"power_limit", "power_limit_w", PFI_KIND_LIMIT_W, 160},
    {"current_power_limit", "enforced_limit_w", PFI_KIND_LIMIT_W, 164},
    {"enforced_power_limit", "enforced_limit_w", PFI_KIND_LIMIT_W, 164},
    {"requested_power_limit", "requested_limit_w", PFI_KIND_LIMIT_W, 160},
    {"default_power_limit", "default_limit_w", PFI_KIND_LIMIT_W, 163},
    {"min_power_limit", "min_limit_w", PFI_KIND_LIMIT_W, 161},
    {"max_power_limit", "max_limit_w", PFI_KIND_LIMIT_W, 162},
};

void pfi_tm_field_info(const char *name, const char **canonical, pfi_tm_kind *kind,
                       int *dcgm_id)
{
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        if (strcmp(aliases[i].source, name) == 0) {
            *canonical = aliases[i].canonical;
            *kind = aliases[i].kind;
            *dcgm_id = aliases[i].dcgm_id;
            return;
        }
    }
    *canonical = name;
    *kind = PFI_KIND_OTHER;
    *dcgm_id = 0;
}

static const char *const format_names[] = {"auto",       "nvidia-smi-csv", "dmon",
                                           "nvidia-smi-q", "dcgmi-dmon",   "prometheus",
                                           "nvidia-smi-xml"};
#define N_FORMATS (int)(sizeof format_names / sizeof format_names[0])

const char *pfi_tm_format_name(pfi_tm_format f)
{
    return (int)f >= 0 && (int)f < N_FORMATS ? format_names[f] : "unknown";
}

bool pfi_tm_format_parse(const char *name, pfi_tm_format *out)
{
    for (int i = 0; i < N_FORMATS; i++) {
        if (strcmp(name, format_names[i]) == 0) {
            *out = (pfi_tm_format)i;
            return true;
        }
    }
    return false;
}

char *tm_strndup(const char *s, size_t n)
{
    char *p = pfi_malloc(n + 1);
    if (p != NULL) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

pfi_error pfi_tm_create(const pfi_tm_options *opt, pfi_tm **out)
{
    *out = NULL;
    pfi_tm_options o = {.keep_series = true};
    if (opt != NULL)
        o = *opt;
    if (!(o.interval_s >= 0) || !(o.max_power_w >= 0))
        return PFI_ERR_INVALID_ARGUMENT;
    pfi_tm *tm = pfi_calloc(1, sizeof *tm);
    if (tm == NULL)
        return PFI_ERR_NOMEM;
    tm->opt = o;
    tm->opt.host = o.host ? tm_strndup(o.host, strlen(o.host)) : NULL;
    tm->opt.csv_fields = o.csv_fields ? tm_strndup(o.csv_fields, strlen(o.csv_fields)) : NULL;
    tm->fields = pfi_calloc(PFI_TM_MAX_FIELDS, sizeof *tm->fields);
    tm->notes = pfi_calloc(PFI_TM_MAX_NOTES, sizeof *tm->notes);
    if (tm->fields == NULL || tm->notes == NULL || (o.host && !tm->opt.host) ||
        (o.csv_fields && !tm->opt.csv_fields)) {
        pfi_tm_destroy(tm);
        return PFI_ERR_NOMEM;
    }
    tm->max_limit_w = o.max_power_w;
    *out = tm;
    return PFI_OK;
}

void pfi_tm_destroy(pfi_tm *tm)
{
    if (tm == NULL)
        return;
    for (size_t i = 0; i < tm->n_entities; i++) {
        pfi_free(tm->entities[i].name);
        pfi_free(tm->entities[i].bus);
    }
    pfi_free(tm->entities);
    if (tm->fields != NULL) {
        for (size_t i = 0; i < tm->n_fields; i++) {
            pfi_free(tm->fields[i].name);
            pfi_free(tm->fields[i].source);
        }
    }
    pfi_free(tm->fields);
    for (size_t i = 0; i < tm->n_series; i++) {
        pfi_free(tm->series[i].t_s);
        pfi_free(tm->series[i].value);
        pfi_free(tm->series[i].brk);
        pfi_free(tm->series[i].miss_t);
    }
    pfi_free(tm->series);
    if (tm->notes != NULL)
        for (size_t i = 0; i < tm->n_notes; i++)
            pfi_free(tm->notes[i]);
    pfi_free(tm->notes);
    pfi_free(tm->map);
    pfi_free((char *)tm->opt.host);
    pfi_free((char *)tm->opt.csv_fields);
    pfi_free(tm);
}

void tm_note(pfi_tm *tm, const char *fmt, ...)
{
    if (tm->n_notes >= PFI_TM_MAX_NOTES) {
        tm->n_notes_dropped++;
        return;
    }
    char buf[PFI_TM_NOTE_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *p = tm_strndup(buf, strlen(buf));
    if (p == NULL) {
        tm->n_notes_dropped++;
        return;
    }
    tm->notes[tm->n_notes++] = p;
}

/* The first tool sentence is kept verbatim (tm->tool_error, for callers that match on it);
 * the notes quote it escaped and cut (pfi_escape), and only the first TM_TOOL_NOTES of a
 * file: a binary file read as text would otherwise print its bytes line after line. */
void tm_tool_error(pfi_tm *tm, const char *name, long line, const char *s, size_t n)
{
    int w = n > 200 ? 200 : (int)n;
    tm->n_tool_errors++;
    if (tm->tool_error[0] == '\0')
        snprintf(tm->tool_error, sizeof tm->tool_error, "%.*s", w, s);
    if (++tm->file_tool_errors > TM_TOOL_NOTES)
        return;
    char q[TM_QUOTE_LEN];
    tm_note(tm, "%s:%ld: the tool reported: %s", name, line, tm_quote(q, s, n, 160));
}

pfi_error tm_entity(pfi_tm *tm, const char *name, size_t len, size_t *id)
{
    /* Linear scan from the most recent hit: GPU counts per file are small (<= a few hundred)
     * and rows cycle through them in order, so the next entity is usually the next slot. */
    static const size_t none = (size_t)-1;
    size_t n = tm->n_entities;
    size_t start = (*id != none && *id < n) ? *id : 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = (start + k) % n;
        const char *e = tm->entities[i].name;
        if (strncmp(e, name, len) == 0 && e[len] == '\0') {
            *id = i;
            return PFI_OK;
        }
    }
    if (n >= PFI_TM_MAX_ENTITIES)
        return PFI_ERR_LIMIT;
    if (n == tm->entities_cap) {
        size_t cap = n ? 2 * n : 16;
        pfi_tm_entity *ne = pfi_realloc(tm->entities, cap * sizeof *ne);
        if (ne == NULL)
            return PFI_ERR_NOMEM;
        tm->entities = ne;
        int *nm = pfi_realloc(tm->map, cap * PFI_TM_MAX_FIELDS * sizeof *nm);
        if (nm == NULL)
            return PFI_ERR_NOMEM;
        tm->map = nm;
        tm->entities_cap = cap;
    }
    pfi_tm_entity *e = &tm->entities[n];
    memset(e, 0, sizeof *e);
    e->name = tm_strndup(name, len);
    if (e->name == NULL)
        return PFI_ERR_NOMEM;
    e->lost_t_s = NAN;
    e->last_good_t_s = NAN;
    e->last_t = NAN;
    e->is_gpu = !(len >= 6 && strncmp(name, "Switch", 6) == 0);
    for (size_t f = 0; f < PFI_TM_MAX_FIELDS; f++)
        tm->map[n * PFI_TM_MAX_FIELDS + f] = -1;
    tm->n_entities++;
    *id = n;
    return PFI_OK;
}

pfi_error tm_field(pfi_tm *tm, const char *source, size_t len, size_t *id)
{
    char name[256];
    if (len >= sizeof name)
        len = sizeof name - 1;
    memcpy(name, source, len);
    name[len] = '\0';
    const char *canon;
    pfi_tm_kind kind;
    int dcgm;
    pfi_tm_field_info(name, &canon, &kind, &dcgm);
    for (size_t i = 0; i < tm->n_fields; i++) {
        if (strcmp(tm->fields[i].name, canon) == 0) {
            *id = i;
            return PFI_OK;
        }
    }
    if (tm->n_fields >= PFI_TM_MAX_FIELDS)
        return PFI_ERR_LIMIT;
    pfi_tm_field *f = &tm->fields[tm->n_fields];
    f->name = tm_strndup(canon, strlen(canon));
    f->source = tm_strndup(name, strlen(name));
    if (f->name == NULL || f->source == NULL) {
        pfi_free(f->name);
        pfi_free(f->source);
        f->name = f->source = NULL;
        return PFI_ERR_NOMEM;
    }
    f->kind = kind;
    f->dcgm_id = dcgm;
    *id = tm->n_fields++;
    return PFI_OK;
}

static pfi_error series_of(pfi_tm *tm, size_t e, size_t f, pfi_tm_series **out)
{
    int *slot = &tm->map[e * PFI_TM_MAX_FIELDS + f];
    if (*slot >= 0) {
        *out = &tm->series[*slot];
        return PFI_OK;
    }
    if (tm->n_series == tm->series_cap) {
        size_t cap = tm->series_cap ? 2 * tm->series_cap : 64;
        pfi_tm_series *ns = pfi_realloc(tm->series, cap * sizeof *ns);
        if (ns == NULL)
            return PFI_ERR_NOMEM;
        tm->series = ns;
        tm->series_cap = cap;
    }
    pfi_tm_series *s = &tm->series[tm->n_series];
    memset(s, 0, sizeof *s);
    s->entity = e;
    s->field = f;
    s->range_max = NAN;
    s->last_good_t_s = NAN;
    s->first_missing_t_s = NAN;
    s->last_row = -1;
    s->last_t = NAN;
    *slot = (int)tm->n_series++;
    *out = s;
    return PFI_OK;
}

static pfi_error grow(pfi_tm_series *s)
{
    size_t cap = s->cap ? 2 * s->cap : 64;
    double *t = pfi_realloc(s->t_s, cap * sizeof *t);
    if (t == NULL)
        return PFI_ERR_NOMEM;
    s->t_s = t;
    double *v = pfi_realloc(s->value, cap * sizeof *v);
    if (v == NULL)
        return PFI_ERR_NOMEM;
    s->value = v;
    unsigned char *b = pfi_realloc(s->brk, cap);
    if (b == NULL)
        return PFI_ERR_NOMEM;
    s->brk = b;
    s->cap = cap;
    return PFI_OK;
}

/*
 * Keep the time of a row whose value of s was not stored (missing, blank, glitch), so the
 * reduction can make that timestamp incomplete: without it a one-GPU run's hole left no
 * trace on the grid. Power and energy fields only (what the reduction bins), and only times
 * that are known; bounded like the samples.
 */
static pfi_error keep_miss(pfi_tm *tm, pfi_tm_series *s, double t)
{
    pfi_tm_kind kind = tm->fields[s->field].kind;
    if (!tm->opt.keep_series || isnan(t) ||
        (kind != PFI_KIND_POWER_W && kind != PFI_KIND_ENERGY_MJ))
        return PFI_OK;
    if (tm->n_miss_stored >= PFI_TM_MAX_SAMPLES)
        return PFI_ERR_LIMIT;
    if (s->n_miss == s->miss_cap) {
        size_t cap = s->miss_cap ? 2 * s->miss_cap : 16;
        double *m = pfi_realloc(s->miss_t, cap * sizeof *m);
        if (m == NULL)
            return PFI_ERR_NOMEM;
        s->miss_t = m;
        s->miss_cap = cap;
    }
    s->miss_t[s->n_miss++] = t;
    tm->n_miss_stored++;
    return PFI_OK;
}

pfi_error tm_put_miss_time(pfi_tm *tm, size_t e, size_t f, double t)
{
    pfi_tm_series *s;
    pfi_error err = series_of(tm, e, f, &s);
    return err != PFI_OK ? err : keep_miss(tm, s, t);
}

pfi_error tm_put(pfi_tm *tm, size_t e, size_t f, double t, pfi_value_status st, double v,
                 long row, bool pod)
{
    pfi_tm_series *s;
    pfi_error err = series_of(tm, e, f, &s);
    if (err != PFI_OK)
        return err;
    pfi_tm_kind kind = tm->fields[f].kind;
    if (row >= 0 && s->last_row == row) {
        /* A second series for the same (entity, metric) in one scrape: a duplicate. Keep one:
         * the one with pod labels if only one has them, else the first. Never add. */
        s->n_duplicate++;
        if (st == PFI_VALUE_OK && pod && !s->last_pod && tm->opt.keep_series && s->n > 0 &&
            s->t_s[s->n - 1] == t && !tm_out_of_range(tm, kind, v) && !tm_is_dcgm_blank(v)) {
            s->sum += v - s->value[s->n - 1];
            s->value[s->n - 1] = v;
            s->last_pod = true;
        }
        return PFI_OK;
    }
    s->last_row = row;
    s->last_pod = pod;
    if (st == PFI_VALUE_OK && tm_is_dcgm_blank(v))
        st = PFI_VALUE_MISSING;
    if (st == PFI_VALUE_OK && tm_out_of_range(tm, kind, v)) {
        s->n_range++;
        if (isnan(s->range_max) || v > s->range_max)
            s->range_max = v;
        s->pending_break = true;
        return keep_miss(tm, s, t);
    }
    if (st != PFI_VALUE_OK) {
        s->n_missing++;
        if (!isnan(s->last_good_t_s) && isnan(s->first_missing_t_s))
            s->first_missing_t_s = t;
        s->pending_break = true;
        return keep_miss(tm, s, t);
    }
    /* dcgm_id 162 is max_limit_w (every alias of it); no string compare per sample. */
    if (kind == PFI_KIND_LIMIT_W && tm->fields[f].dcgm_id == 162 &&
        tm->opt.max_power_w == 0 && v > tm->max_limit_w)
        tm->max_limit_w = v;
    s->n_valid++;
    s->sum += v;
    s->last_good_t_s = t;
    if (tm->opt.keep_series) {
        if (tm->n_stored >= PFI_TM_MAX_SAMPLES)
            return PFI_ERR_LIMIT;
        if (s->n == s->cap && (err = grow(s)) != PFI_OK)
            return err;
        bool brk = s->n == 0 || s->pending_break || !(t > s->last_t);
        s->t_s[s->n] = t;
        s->value[s->n] = v;
        s->brk[s->n] = brk;
        s->n++;
        tm->n_stored++;
    }
    s->pending_break = false;
    s->last_t = t;
    return PFI_OK;
}

double tm_interval(pfi_tm *tm)
{
    if (tm->opt.interval_s > 0)
        return tm->opt.interval_s;
    if (!tm->interval_assumed) {
        tm->interval_assumed = true;
        tm_note(tm, "no timestamps and no --interval: 1 s assumed (the dmon/dcgmi default); "
                    "times are nominal");
    }
    return 1.0;
}

double tm_row_time(pfi_tm *tm, size_t e, bool has_t, double t, bool tod, long line,
                   const char *name)
{
    pfi_tm_entity *en = &tm->entities[e];
    en->rows++;
    if (!has_t) {
        tm->time_nominal = true;
        tm->time_relative = true;
        return (double)(en->rows - 1) * tm_interval(tm);
    }
    if (tod)
        t += en->day_offset_s;
    if (!isnan(en->last_t) && t < en->last_t) {
        double wrapped = t + 86400.0;
        double step = tm->opt.interval_s > 0 ? tm->opt.interval_s : 1.0;
        if (tod && wrapped > en->last_t && wrapped - en->last_t <= 2 * step + 1.0) {
            tm_note(tm, "%s:%ld: time went from %.0f s to %.0f s of the day: taken as a "
                        "midnight rollover (+24 h)", name, line, fmod(en->last_t, 86400.0),
                    fmod(t, 86400.0));
            t = wrapped;
            en->day_offset_s += 86400.0;
        } else {
            en->segment++;
            tm_note(tm, "%s:%ld: %s: time jumped back %.3f s (clock change?): series split "
                        "into a new segment", name, line, en->name, en->last_t - t);
            for (size_t f = 0; f < tm->n_fields; f++) {
                int k = tm->map[e * PFI_TM_MAX_FIELDS + f];
                if (k >= 0)
                    tm->series[k].pending_break = true;
            }
        }
    }
    en->last_t = t;
    return t;
}

void tm_mark_lost(pfi_tm *tm, size_t e, double t)
{
    pfi_tm_entity *en = &tm->entities[e];
    if (!en->lost) {
        en->lost = true;
        en->lost_t_s = t;
    }
}

long pfi_tm_field_find(const pfi_tm *tm, const char *name)
{
    for (size_t i = 0; i < tm->n_fields; i++)
        if (strcmp(tm->fields[i].name, name) == 0)
            return (long)i;
    return -1;
}

const pfi_tm_series *pfi_tm_series_get(const pfi_tm *tm, size_t entity, size_t field)
{
    if (entity >= tm->n_entities || field >= tm->n_fields)
        return NULL;
    int k = tm->map[entity * PFI_TM_MAX_FIELDS + field];
    return k < 0 ? NULL : &tm->series[k];
}

bool pfi_tm_has_field(const pfi_tm *tm, const char *name)
{
    long f = pfi_tm_field_find(tm, name);
    if (f < 0)
        return false;
    for (size_t e = 0; e < tm->n_entities; e++) {
        const pfi_tm_series *s = pfi_tm_series_get(tm, e, (size_t)f);
        if (s != NULL && s->n_valid > 0)
            return true;
    }
    return false;
}

long tm_days_from_civil(long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long)doe - 719468;
}

/* ---- lines ---- */

#define TM_BLOCK (1u << 18)

pfi_error tm_lines_init(tm_lines *r, FILE *f)
{
    memset(r, 0, sizeof *r);
    r->f = f;
    r->buf = pfi_malloc(TM_BLOCK + PFI_TM_MAX_LINE + 1 + TM_LINE_PAD);
    if (r->buf == NULL)
        return PFI_ERR_NOMEM;
    memset(r->buf, 0, TM_LINE_PAD);
    return PFI_OK;
}

void tm_lines_free(tm_lines *r)
{
    pfi_free(r->buf);
    r->buf = NULL;
}

pfi_error tm_lines_next(tm_lines *r, const char **s, size_t *n, bool *eof)
{
    for (;;) {
        char *start = r->buf + r->pos;
        size_t avail = r->len - r->pos;
        char *nl = avail ? memchr(start, '\n', avail) : NULL;
        if (nl != NULL || (r->eof && avail > 0)) {
            size_t len = nl ? (size_t)(nl - start) : avail;
            if (len + 1 > PFI_TM_MAX_LINE) {
                r->line++; /* the error is about this line: count it first */
                return PFI_ERR_LINE_TOO_LONG;
            }
            r->pos += nl ? len + 1 : len;
            if (len > 0 && start[len - 1] == '\r')
                len--;
            r->line++;
            *s = start;
            *n = len;
            *eof = false;
            return PFI_OK;
        }
        if (r->eof) {
            *eof = true;
            return PFI_OK;
        }
        if (avail >= PFI_TM_MAX_LINE) {
            r->line++;
            return PFI_ERR_LINE_TOO_LONG;
        }
        memmove(r->buf, start, avail);
        r->pos = 0;
        r->len = avail;
        size_t got = fread(r->buf + r->len, 1, TM_BLOCK, r->f);
        r->len += got;
        memset(r->buf + r->len, 0, TM_LINE_PAD); /* the readers' over-read guarantee */
        if (got < TM_BLOCK) {
            if (ferror(r->f)) {
                r->err = errno;
                return PFI_ERR_IO;
            }
            r->eof = true;
        }
        tm_lines_bom(r);
    }
}

/* A UTF-8 byte order mark (Windows editors, PowerShell's Out-File) is not text: dropped
 * before the first line of every reader, whatever the format. */
void tm_lines_bom(tm_lines *r)
{
    if (r->started)
        return;
    r->started = true;
    if (r->len - r->pos >= 3 && memcmp(r->buf + r->pos, "\xEF\xBB\xBF", 3) == 0)
        r->pos += 3;
}

/* A read failure with its reason: the directory given as a file (EISDIR) says so. */
void tm_lines_io_diag(const tm_lines *r, pfi_diag *diag)
{
    if (diag == NULL || diag->message[0] != '\0')
        return;
    if (r->err == EISDIR)
        snprintf(diag->message, sizeof diag->message, "is a directory, expected a file");
    else
        snprintf(diag->message, sizeof diag->message, "cannot read: %s",
                 strerror(r->err ? r->err : EIO));
}

char *tm_quote(char buf[TM_QUOTE_LEN], const char *s, size_t n, size_t max)
{
    return pfi_escape(buf, TM_QUOTE_LEN, s, n, max);
}

/* ---- numbers ---- */

/*
 * Fast path (Clinger): at most 15 significant digits and a decimal exponent within 22 give
 * an exactly representable mantissa and power of ten, so one multiply or divide is correctly
 * rounded. Anything else goes to pfi_value_parse (strtod_l in the C locale).
 */
pfi_value_status tm_parse_number(const char *text, size_t len, double *out)
{
    while (len > 0 && (*text == ' ' || *text == '\t')) {
        text++;
        len--;
    }
    while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
        len--;
    size_t i = 0;
    bool neg = false;
    if (i < len && (text[i] == '-' || text[i] == '+')) {
        neg = text[i] == '-';
        i++;
    }
    uint64_t mant = 0;
    int digits = 0, frac = 0;
    bool any = false, dot = false;
    for (; i < len; i++) {
        char c = text[i];
        if (c >= '0' && c <= '9') {
            any = true;
            if (mant == 0 && c == '0') {
                if (dot)
                    frac++;
                continue;
            }
            if (++digits > 15)
                break;
            mant = mant * 10 + (uint64_t)(c - '0');
            if (dot)
                frac++;
        } else if (c == '.' && !dot) {
            dot = true;
        } else {
            break;
        }
    }
    if (i == len && any && frac <= 22) {
        double v = (double)mant / tm_pow10(frac);
        *out = neg ? -v : v;
        return PFI_VALUE_OK;
    }
    return pfi_value_parse(text, len, out);
}

/* ---- dispatch ---- */

/*
 * Detection is conservative: a file that is not telemetry must end in "format not
 * recognised" with what was seen, never in a reader that turns every line into a note and
 * then gives advice about a tool the file never came from. `why` (may be NULL) gets the
 * reason when the result is PFI_TM_AUTO and there was something to read.
 */

/* Bytes that text output of nvidia-smi / dcgmi / an exporter never holds: NUL, C0 controls
 * other than tab, newline, CR, FF, VT and ESC (terminal colours are still text), and DEL.
 * Bytes >= 0x80 count only when they do not form valid UTF-8. */
static size_t non_text_bytes(const unsigned char *s, size_t n, size_t *first_nul)
{
    size_t bad = 0;
    *first_nul = (size_t)-1;
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c < 0x80) {
            if (c == 0 && *first_nul == (size_t)-1)
                *first_nul = i;
            if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' &&
                 c != 0x1B) ||
                c == 0x7F)
                bad++;
            i++;
            continue;
        }
        size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                   : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        size_t k = 1;
        while (len > 0 && k < len && i + k < n && (s[i + k] & 0xC0) == 0x80)
            k++;
        if (len == 0 || (k < len && i + k < n)) {
            bad++; /* a stray or truncated sequence (one cut by the end of head is fine) */
            i++;
        } else {
            i += k;
        }
    }
    return bad;
}

static bool prom_name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

/* 2: "# HELP" / "# TYPE"; 1: a sample line, name{labels} value [timestamp]; 0: other. */
static int prom_line_kind(const char *l, size_t len)
{
    if (len >= 7 && (memcmp(l, "# HELP ", 7) == 0 || memcmp(l, "# TYPE ", 7) == 0))
        return 2;
    size_t i = 0;
    if (len == 0 || !prom_name_char(l[0], true))
        return 0;
    while (i < len && prom_name_char(l[i], false))
        i++;
    if (i < len && l[i] == '{') {
        bool quoted = false;
        for (i++; i < len; i++) {
            if (quoted && l[i] == '\\')
                i++;
            else if (l[i] == '"')
                quoted = !quoted;
            else if (!quoted && l[i] == '}')
                break;
        }
        if (i >= len)
            return 0;
        i++;
    }
    if (i >= len || (l[i] != ' ' && l[i] != '\t'))
        return 0;
    while (i < len && (l[i] == ' ' || l[i] == '\t'))
        i++;
    if (i >= len)
        return 0;
    char c = l[i];
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'N' || c == 'I';
}

/* A CSV header cell as nvidia-smi prints it: lower-case dotted names, an optional [unit]. */
static bool smi_header_cell(const char *s, size_t n, size_t *name_len)
{
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    const char *br = memchr(s, '[', n);
    size_t m = br ? (size_t)(br - s) : n;
    while (m > 0 && s[m - 1] == ' ')
        m--;
    if (m == 0)
        return false;
    for (size_t j = 0; j < m; j++) {
        char c = s[j];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == ' '))
            return false;
    }
    *name_len = m;
    return true;
}

/* Whether name is an nvidia-smi --query-gpu field (--help-query-gpu): the groups of dotted
 * names, and the undotted ones that no other table uses. "timestamp", "index" and "name"
 * alone do not make a table nvidia-smi output. */
static bool smi_query_field(const char *s, size_t n)
{
    static const char *const plain[] = {
        "uuid",         "serial",           "driver_version", "pstate",         "vbios_version",
        "compute_mode", "persistence_mode", "display_mode",   "display_active", "compute_cap"};
    static const char *const groups[] = {
        "power",         "enforced",      "clocks",       "clocks_throttle_reasons",
        "clocks_event_reasons", "utilization", "temperature", "memory",
        "fan",           "pci",           "pcie",         "ecc",
        "retired_pages", "remapped_rows", "encoder",      "driver_model",
        "gom",           "inforom",       "mig",          "accounting",
        "protected_memory", "reset_status", "module",     "gpu_recovery_action",
        "platform",      "fabric",        "vgpu_driver_capability", "vgpu_device_capability",
        "addressing_mode"};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (strlen(plain[i]) == n && memcmp(plain[i], s, n) == 0)
            return true;
    const char *dot = memchr(s, '.', n);
    if (dot == NULL)
        return false;
    size_t g = (size_t)(dot - s);
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (strlen(groups[i]) == g && memcmp(groups[i], s, g) == 0)
            return true;
    return false;
}

/* An nvidia-smi dmon header: '#', blanks, then "gpu", "Date" or "Time" (# gpu pwr ...,
 * #Date Time gpu ..., #Time gpu ..., any case). Else false, and why says what was seen. */
static bool dmon_header(const char *l, size_t len, char *why, size_t wlen)
{
    size_t a = 1;
    while (a < len && (l[a] == ' ' || l[a] == '\t'))
        a++;
    size_t b = a;
    while (b < len && l[b] != ' ' && l[b] != '\t')
        b++;
    static const char *const words[] = {"gpu", "date", "time"};
    for (size_t k = 0; k < 3; k++)
        if (b - a == strlen(words[k]) && strncasecmp(l + a, words[k], b - a) == 0)
            return true;
    if (why != NULL && wlen > 0) {
        char q[TM_QUOTE_LEN];
        snprintf(why, wlen, "a first line '%s' that starts with '#' but is not an nvidia-smi "
                            "dmon header (# gpu ..., #Date Time gpu ..., #Time gpu ...)",
                 tm_quote(q, l, len, 60));
    }
    return false;
}

/* A first line that is a CSV header naming no nvidia-smi query field: true, with the names
 * seen in why. A first line of data (a headerless CSV), or a header naming one: false. */
static bool csv_foreign_header(const char *l, size_t len, char *why, size_t wlen)
{
    char seen[200] = "";
    size_t used = 0, cells = 0;
    bool known = false, data = false;
    for (size_t i = 0; i <= len;) {
        size_t j = i;
        while (j < len && l[j] != ',')
            j++;
        size_t a = i;
        while (a < j && (l[a] == ' ' || l[a] == '\t'))
            a++;
        size_t m;
        if (!smi_header_cell(l + a, j - a, &m)) {
            /* Not a header cell of nvidia-smi's: a first line of data (a headerless CSV
             * has numbers, times, [N/A]) when it starts like one, else a foreign name. */
            char c = a < j ? l[a] : ' ';
            data |= (c >= '0' && c <= '9') || c == '-' || c == '[' || c == '.';
            m = j - a;
            while (m > 0 && (l[a + m - 1] == ' ' || l[a + m - 1] == '\t'))
                m--;
        } else {
            known |= smi_query_field(l + a, m);
        }
        if (used + m + 3 < sizeof seen)
            used += (size_t)snprintf(seen + used, sizeof seen - used, "%s%.*s",
                                     cells ? ", " : "", (int)m, l + a);
        else if (used + 5 < sizeof seen && seen[used - 1] != '.')
            used += (size_t)snprintf(seen + used, sizeof seen - used, ", ...");
        cells++;
        i = j + 1;
    }
    if (known || data)
        return false;
    if (why != NULL)
        snprintf(why, wlen,
                 "a CSV whose header (%s) names no nvidia-smi query field: not nvidia-smi "
                 "--query-gpu output; pass --format if it is telemetry in another layout, or "
                 "--format nvidia-smi-csv --fields for a headerless nvidia-smi CSV",
                 seen);
    return true;
}

/* Prometheus only when at least half of the lines that say anything (comments other than
 * HELP / TYPE say nothing) are exposition lines; a last line cut by the end of head is left
 * out. */
static bool prom_enough(const char *head, size_t n, bool cut, char *why, size_t wlen)
{
    size_t good = 0, total = 0, i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && head[j] != '\n')
            j++;
        if (j == n && cut && i > 0)
            break;
        size_t k = i, e = j;
        while (k < e && (head[k] == ' ' || head[k] == '\t'))
            k++;
        while (e > k && (head[e - 1] == '\r' || head[e - 1] == ' ' || head[e - 1] == '\t'))
            e--;
        if (e > k && !(head[k] == '#' && prom_line_kind(head + k, e - k) == 0)) {
            total++;
            good += prom_line_kind(head + k, e - k) > 0;
        }
        i = j + 1;
    }
    if (good > 0 && 2 * good >= total)
        return true;
    if (why != NULL)
        snprintf(why, wlen,
                 "%zu of the first %zu lines look like Prometheus exposition lines "
                 "(# HELP / # TYPE, or name{labels} value)",
                 good, total);
    return false;
}

static pfi_tm_format detect(const char *head, size_t n, bool cut, char *why, size_t wlen)
{
    if (why != NULL && wlen > 0)
        why[0] = '\0';
    if (n >= 2 && ((unsigned char)head[0] == 0xFF && (unsigned char)head[1] == 0xFE)) {
        if (why != NULL)
            snprintf(why, wlen, "UTF-16 text (a PowerShell redirect?): convert it to UTF-8, "
                                "e.g. iconv -f UTF-16 -t UTF-8");
        return PFI_TM_AUTO;
    }
    size_t i = n >= 3 && memcmp(head, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    size_t nul, bad = non_text_bytes((const unsigned char *)head + i, n - i, &nul);
    /* A NUL on the first line (ELF, UTF-16 without a mark, archives), or 30 % not text. A
     * NUL further on alone is not enough: a log cut by a crash can end in zero blocks. */
    const char *nl = memchr(head + i, '\n', n - i);
    size_t line1 = nl ? (size_t)(nl - head) : n;
    if ((nul != (size_t)-1 && nul + i < line1) || bad * 10 > (n - i) * 3) {
        if (why != NULL) {
            char q[TM_QUOTE_LEN];
            size_t show = n - i < 16 ? n - i : 16;
            int w = snprintf(why, wlen, "not a text file: starts with '%s'",
                             tm_quote(q, head + i, show, 64));
            if (w > 0 && (size_t)w < wlen && nul != (size_t)-1)
                w += snprintf(why + w, wlen - (size_t)w, ", a NUL byte at offset %zu",
                              nul + i);
            if (w > 0 && (size_t)w < wlen)
                snprintf(why + w, wlen - (size_t)w, ", %zu of the first %zu bytes are not text",
                         bad, n - i);
        }
        return PFI_TM_AUTO;
    }
    /* The first non-blank line that says which format it is. */
    while (i < n) {
        size_t j = i;
        while (j < n && head[j] != '\n')
            j++;
        size_t k = i;
        while (k < j && (head[k] == ' ' || head[k] == '\t' || head[k] == '\r'))
            k++;
        if (k < j) {
            const char *l = head + k;
            size_t len = j - k;
            while (len > 0 && l[len - 1] == '\r')
                len--;
            if (len >= 7 && (memcmp(l, "#Entity", 7) == 0 ||
                             (len >= 8 && memcmp(l, "# Entity", 8) == 0)))
                return PFI_TM_DCGMI_DMON;
            /* JSON (an object, or an array of objects or strings) is no telemetry format
             * pfi reads. */
            size_t b = 1;
            while (b < len && (l[b] == ' ' || l[b] == '\t'))
                b++;
            if (l[0] == '{' || (l[0] == '[' && (b == len || l[b] == '{' || l[b] == '"'))) {
                if (why != NULL && wlen > 0) {
                    char q[TM_QUOTE_LEN];
                    snprintf(why, wlen, "JSON (first line '%s'), not a telemetry format pfi "
                                        "reads", tm_quote(q, l, len, 60));
                }
                return PFI_TM_AUTO;
            }
            bool prom = (len >= 6 && (memcmp(l, "# HELP", 6) == 0 ||
                                      memcmp(l, "# TYPE", 6) == 0)) ||
                        (len >= 7 && memcmp(l, "DCGM_FI", 7) == 0) ||
                        (prom_line_kind(l, len) == 1 && memchr(l, '{', len) != NULL) ||
                        (l[0] != '#' && l[0] != '<' && memchr(l, ',', len) == NULL &&
                         memchr(l, '{', len) != NULL);
            if (prom)
                return prom_enough(head + i, n - i, cut, why, wlen) ? PFI_TM_PROM
                                                                    : PFI_TM_AUTO;
            if (l[0] == '#')
                return dmon_header(l, len, why, wlen) ? PFI_TM_SMI_DMON : PFI_TM_AUTO;
            if (l[0] == '<')
                return PFI_TM_SMI_XML;
            if (len >= 6 && memcmp(l, "======", 6) == 0)
                return PFI_TM_SMI_QUERY;
            if (memchr(l, ',', len) != NULL)
                return csv_foreign_header(l, len, why, wlen) ? PFI_TM_AUTO : PFI_TM_SMI_CSV;
        }
        i = j + 1;
    }
    return PFI_TM_AUTO;
}

/* The first non-blank line of head, quoted for a message. */
static void first_line(const char *head, size_t n, char out[TM_QUOTE_LEN])
{
    size_t i = 0;
    while (i < n && (head[i] == '\n' || head[i] == '\r' || head[i] == ' ' || head[i] == '\t'))
        i++;
    size_t j = i;
    while (j < n && head[j] != '\n' && head[j] != '\r')
        j++;
    tm_quote(out, head + i, j - i, 60);
}

pfi_tm_format pfi_tm_detect(const char *head, size_t n)
{
    return detect(head, n, false, NULL, 0);
}

pfi_error pfi_tm_read_stream(pfi_tm *tm, FILE *f, const char *name, pfi_tm_format fmt,
                             pfi_diag *diag)
{
    if (diag != NULL) {
        pfi_diag_clear(diag);
        snprintf(diag->file, sizeof diag->file, "%s", name);
    }
    tm_lines r;
    pfi_error e = tm_lines_init(&r, f);
    if (e != PFI_OK)
        return e;
    /* Fill the first block, detect, then parse from the start of the buffer. A forced
     * format is detected too: when its reader finds almost nothing, what the file looks
     * like is the better explanation. */
    size_t got = fread(r.buf, 1, 1u << 16, f);
    r.len = got;
    memset(r.buf + got, 0, TM_LINE_PAD);
    if (got < (1u << 16)) {
        if (ferror(f)) {
            r.err = errno;
            tm_lines_io_diag(&r, diag);
            tm_lines_free(&r);
            return PFI_ERR_IO;
        }
        r.eof = true;
    }
    tm_lines_bom(&r);
    char why[400], first[TM_QUOTE_LEN];
    pfi_tm_format seen = detect(r.buf, got, !r.eof, why, sizeof why);
    first_line(r.buf + r.pos, got - r.pos, first);
    pfi_tm_format forced = fmt;
    if (fmt == PFI_TM_AUTO) {
        fmt = seen;
        /* An empty scrape in a series of Prometheus scrapes is still a scrape: it takes its
         * time slot and leaves a hole (case-15), instead of pulling later scrapes earlier. */
        if (fmt == PFI_TM_AUTO && got == 0 && tm->last_format == PFI_TM_PROM)
            fmt = PFI_TM_PROM;
        if (fmt == PFI_TM_AUTO) {
            tm_lines_free(&r);
            if (got == r.pos) { /* nothing, or a byte order mark alone */
                tm->n_files++;
                tm_note(tm, "%s: empty file: no samples", name);
                return PFI_OK;
            }
            if (diag != NULL && why[0] != '\0')
                snprintf(diag->message, sizeof diag->message,
                         "telemetry format not recognised: %s", why);
            else if (diag != NULL)
                snprintf(diag->message, sizeof diag->message,
                         "telemetry format not recognised (first line: '%s'); pass --format "
                         "(nvidia-smi-csv, dmon, nvidia-smi-q, dcgmi-dmon, prometheus, "
                         "nvidia-smi-xml)", first);
            return PFI_ERR_PARSE;
        }
    }
    size_t rows0 = tm->n_rows, skipped0 = tm->n_skipped, tool0 = tm->n_tool_errors;
    size_t notes0 = tm->n_notes, dropped0 = tm->n_notes_dropped;
    bool had_tool_error = tm->tool_error[0] != '\0';
    tm->last_format = fmt;
    tm->n_files++;
    tm->file_tool_errors = 0;
    switch (fmt) {
    case PFI_TM_SMI_CSV:
        e = tm_read_smi_csv(tm, &r, name, diag);
        break;
    case PFI_TM_SMI_DMON:
        e = tm_read_dmon(tm, &r, name, diag);
        break;
    case PFI_TM_SMI_QUERY:
        e = tm_read_smi_query(tm, &r, name, diag);
        break;
    case PFI_TM_DCGMI_DMON:
        e = tm_read_dcgmi(tm, &r, name, diag);
        break;
    case PFI_TM_PROM:
        e = tm_read_prom(tm, &r, name, diag);
        break;
    case PFI_TM_SMI_XML:
        e = tm_read_smi_xml(tm, &r, name, diag);
        break;
    default:
        e = PFI_ERR_INVALID_ARGUMENT;
    }
    /* (the readers count a tool line as skipped too) */
    size_t rows = tm->n_rows - rows0, bad = tm->n_skipped - skipped0;
    if (tm->n_tool_errors - tool0 > bad)
        bad = tm->n_tool_errors - tool0;
    bool mismatch = false;
    if ((e == PFI_OK || e == PFI_ERR_LIMIT || e == PFI_ERR_LINE_TOO_LONG || e == PFI_ERR_PARSE) &&
        forced != PFI_TM_AUTO && seen != forced && bad >= 4 && rows * 10 < bad) {
        /* --format named a reader and almost nothing in the file is its input: the notes
         * (each line quoted as tool text or a bad row) say nothing the error does not. */
        for (size_t k = notes0; k < tm->n_notes; k++)
            pfi_free(tm->notes[k]);
        tm->n_notes = notes0;
        tm->n_notes_dropped = dropped0;
        if (!had_tool_error)
            tm->tool_error[0] = '\0';
        tm->file_tool_errors = 0;
        mismatch = true;
        if (diag != NULL) {
            diag->column[0] = '\0';
            bool binary = strncmp(why, "not a text file", 15) == 0;
            int w = snprintf(diag->message, sizeof diag->message,
                             "does not look like %s output: %zu of %zu lines read as samples"
                             "%s%.80s%s; ",
                             pfi_tm_format_name(forced), rows, rows + bad,
                             binary ? "" : " (line 1: '", binary ? "" : first,
                             binary ? "" : "')");
            size_t used = w > 0 && (size_t)w < sizeof diag->message ? (size_t)w
                                                                     : sizeof diag->message;
            char *rest = diag->message + used;
            size_t room = sizeof diag->message - used;
            if (room > 0 && seen != PFI_TM_AUTO)
                snprintf(rest, room, "it looks like %s: pass --format %s, or leave --format out",
                         pfi_tm_format_name(seen), pfi_tm_format_name(seen));
            else if (room > 0 && why[0] != '\0')
                snprintf(rest, room, "%s", why);
            else if (room > 0)
                snprintf(rest, room, "nor like any format pfi reads: check the file and "
                                     "--format");
        }
        e = PFI_ERR_PARSE;
    }
    if (e != PFI_OK && !mismatch && diag != NULL && diag->line == 0)
        diag->line = r.line;
    if (mismatch && diag != NULL)
        diag->line = 0; /* about the file, not the line where the reader stopped */
    if (e == PFI_ERR_LINE_TOO_LONG)
        tm_line_too_long_diag(diag);
    if (e == PFI_ERR_IO)
        tm_lines_io_diag(&r, diag);
    if (tm->file_tool_errors > TM_TOOL_NOTES)
        tm_note(tm, "%s: ... and %zu more lines the tool reported (not shown)", name,
                tm->file_tool_errors - TM_TOOL_NOTES);
    tm_lines_free(&r);
    return e;
}

void tm_line_too_long_diag(pfi_diag *diag)
{
    if (diag != NULL && diag->message[0] == '\0')
        snprintf(diag->message, sizeof diag->message,
                 "line longer than %d bytes (%d KiB): expected one record per line; is this "
                 "the right file?",
                 PFI_TM_MAX_LINE - 1, PFI_TM_MAX_LINE / 1024);
}

pfi_error pfi_tm_read_file(pfi_tm *tm, const char *path, pfi_tm_format fmt, pfi_diag *diag)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        if (diag != NULL) {
            pfi_diag_clear(diag);
            snprintf(diag->file, sizeof diag->file, "%s", path);
            snprintf(diag->message, sizeof diag->message, "cannot open: %s", strerror(errno));
        }
        return PFI_ERR_IO;
    }
    pfi_error e = pfi_tm_read_stream(tm, f, path, fmt, diag);
    fclose(f);
    return e;
}

void pfi_tm_summarize(pfi_tm *tm)
{
    tm_note_gaps(tm);
    for (size_t i = 0; i < tm->n_series; i++) {
        const pfi_tm_series *s = &tm->series[i];
        const char *en = tm->entities[s->entity].name;
        const pfi_tm_field *f = &tm->fields[s->field];
        size_t total = s->n_valid + s->n_missing + s->n_range;
        if (s->n_missing > 0)
            tm_note(tm, "%s: %s not available (%zu of %zu samples missing)%s", en, f->name,
                    s->n_missing, total,
                    f->kind == PFI_KIND_RATIO
                        ? ": another profiler may hold the GPU performance counters, or the "
                          "DCGM profiling module is not loaded / not permitted"
                        : "");
        if (s->n_range > 0)
            tm_note(tm, "%s: %zu of %zu %s samples out of range (max seen %.17g): dropped, "
                        "not clamped", en, s->n_range, total, f->name, s->range_max);
        if (s->n_duplicate > 0)
            tm_note(tm, "%s: %zu duplicate %s samples dropped (kept one per scrape)", en,
                    s->n_duplicate, f->name);
    }
    for (size_t e = 0; e < tm->n_entities; e++) {
        const pfi_tm_entity *en = &tm->entities[e];
        if (en->lost && isnan(en->lost_t_s)) /* marked by the kernel log (pfi/kernlog.h) */
            tm_note(tm, "%s: GPU lost: last good sample at t=%.3f s, time of the loss not "
                        "known on the telemetry clock", en->name, en->last_good_t_s);
        else if (en->lost)
            tm_note(tm, "%s: GPU lost (fell off the bus): last good sample at t=%.3f s, "
                        "first lost at t=%.3f s", en->name, en->last_good_t_s, en->lost_t_s);
    }
}
