/*
 * The telemetry collector, the pfi_telemetry object every reader fills (telemetry/internal.h):
 * entities, fields, series and their samples, range checks, time handling (nominal times,
 * backward jumps, midnight), notes and the quoting they use, and the summary notes.
 * Integration over time is energy.c's; reading a file is read.c's.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/hidx.h"
#include "core/memory.h"
#include "telemetry/internal.h"

/* A set of names by hash: the entities' (names[] unused: the names are tm->entities[i].name)
 * and the items dropped past a limit ("e:" or "f:" before the name). */
struct tm_names {
    hidx ix;
    char **names;
    size_t n, cap;
};

static void names_free(struct tm_names *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n; i++)
        pfi_free(t->names[i]);
    pfi_free(t->names);
    hidx_free(&t->ix);
    pfi_free(t);
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

pfi_error pfi_telemetry_create(const pfi_telemetry_options *opt, pfi_telemetry **out)
{
    *out = NULL;
    pfi_telemetry_options o = {.keep_series = true};
    if (opt != NULL)
        o = *opt;
    if (!(o.interval_s >= 0) || !(o.max_power_w >= 0))
        return PFI_ERR_INVALID_ARGUMENT;
    pfi_telemetry *tm = pfi_calloc(1, sizeof *tm);
    if (tm == NULL)
        return PFI_ERR_NOMEM;
    tm->opt = o;
    tm->opt.host = o.host ? tm_strndup(o.host, strlen(o.host)) : NULL;
    tm->opt.csv_fields = o.csv_fields ? tm_strndup(o.csv_fields, strlen(o.csv_fields)) : NULL;
    tm->fields = pfi_calloc(PFI_TELEMETRY_MAX_FIELDS, sizeof *tm->fields);
    tm->notes = pfi_calloc(PFI_TELEMETRY_MAX_NOTES, sizeof *tm->notes);
    if (tm->fields == NULL || tm->notes == NULL || (o.host && !tm->opt.host) ||
        (o.csv_fields && !tm->opt.csv_fields)) {
        pfi_telemetry_destroy(tm);
        return PFI_ERR_NOMEM;
    }
    tm->max_limit_w = o.max_power_w;
    tm->zone_last_utc = NAN;
    tm->opt.timezone = NULL; /* not kept: the zone is loaded here */
    if (o.timezone != NULL && o.timezone[0] != '\0') {
        pfi_error ze = tm_zone_load(o.timezone, &tm->zone);
        if (ze != PFI_OK) {
            pfi_telemetry_destroy(tm);
            return ze == PFI_ERR_NOMEM ? ze : PFI_ERR_INVALID_ARGUMENT;
        }
        snprintf(tm->time_zone, sizeof tm->time_zone, "%s", o.timezone);
    }
    if (o.host != NULL && o.host[0] != '\0' &&
        (tm->file_host = tm_strndup(o.host, strlen(o.host))) == NULL) {
        pfi_telemetry_destroy(tm);
        return PFI_ERR_NOMEM;
    }
    *out = tm;
    return PFI_OK;
}

void pfi_telemetry_destroy(pfi_telemetry *tm)
{
    if (tm == NULL)
        return;
    for (size_t i = 0; i < tm->n_entities; i++) {
        pfi_free(tm->entities[i].name);
        pfi_free(tm->entities[i].bus);
        pfi_free(tm->entities[i].host);
        pfi_free(tm->entities[i].uuid);
    }
    if (tm->file_names != NULL)
        for (size_t i = 0; i < tm->n_files; i++)
            pfi_free(tm->file_names[i]);
    pfi_free(tm->file_names);
    pfi_free(tm->file_host);
    tm_zone_free(tm->zone);
    names_free(tm->ent_index);
    names_free(tm->dropped_names);
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
        tm_stream_free(tm->series[i].stream);
    }
    pfi_free(tm->series);
    tm_stream_red_free(tm->stream_red);
    tm_spec_free(tm->spec);
    if (tm->notes != NULL)
        for (size_t i = 0; i < tm->n_notes; i++)
            pfi_free(tm->notes[i]);
    pfi_free(tm->notes);
    pfi_free(tm->map);
    pfi_free((char *)tm->opt.host);
    pfi_free((char *)tm->opt.csv_fields);
    pfi_free(tm);
}

void tm_note(pfi_telemetry *tm, const char *fmt, ...)
{
    if (tm->n_notes >= PFI_TELEMETRY_MAX_NOTES) {
        tm->n_notes_dropped++;
        return;
    }
    char buf[PFI_TELEMETRY_NOTE_LEN];
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
void tm_tool_error(pfi_telemetry *tm, const char *name, long line, const char *s, size_t n)
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

void pfi_telemetry_set_sink(pfi_telemetry *tm, pfi_telemetry_sample_fn fn, void *ctx)
{
    tm->sink = fn;
    tm->sink_ctx = ctx;
    tm->sink_counts = false; /* (only pfi_reduce_stream_begin's sink counts: tm_spec_valid) */
    tm->sink_all = fn != NULL && fn == tm_stream_sample_warm;
}

pfi_error pfi_telemetry_set_host(pfi_telemetry *tm, const char *host)
{
    char *h = NULL;
    if (host != NULL && host[0] != '\0' && (h = tm_strndup(host, strlen(host))) == NULL)
        return PFI_ERR_NOMEM;
    pfi_free(tm->file_host);
    tm->file_host = h;
    return PFI_OK;
}

/* Whether s[0..n) is a GPU or MIG UUID as nvidia-smi and DCGM print it. */
static bool is_uuid(const char *s, size_t n)
{
    return n > 8 && (memcmp(s, "GPU-", 4) == 0 || memcmp(s, "MIG-", 4) == 0);
}

/* The identity of a new entity from its key: the host before the last '/' (else the file's),
 * the UUID after it when it is one. */
static pfi_error entity_identity(pfi_telemetry *tm, pfi_telemetry_entity *e)
{
    const char *slash = strrchr(e->name, '/');
    const char *local = slash ? slash + 1 : e->name;
    if (slash != NULL && slash > e->name)
        e->host = tm_strndup(e->name, (size_t)(slash - e->name));
    else if (slash == NULL && tm->file_host != NULL)
        e->host = tm_strndup(tm->file_host, strlen(tm->file_host));
    if (is_uuid(local, strlen(local)))
        e->uuid = tm_strndup(local, strlen(local));
    bool want_host = (slash != NULL && slash > e->name) || (slash == NULL && tm->file_host);
    return (want_host && e->host == NULL) || (is_uuid(local, strlen(local)) && e->uuid == NULL)
               ? PFI_ERR_NOMEM
               : PFI_OK;
}

static pfi_error entity_find(pfi_telemetry *tm, const char *name, size_t len, size_t *id);

/* The entity of a reader's name: the file's host put before an index name ("gpu0" read from
 * node-a's file is "node-a/gpu0"); a UUID, or a name that carries its host, is the key as
 * it stands. */
pfi_error tm_entity(pfi_telemetry *tm, const char *name, size_t len, size_t *id)
{
    if (tm->file_host == NULL || memchr(name, '/', len) != NULL || is_uuid(name, len))
        return entity_find(tm, name, len, id);
    char key[512];
    int w = snprintf(key, sizeof key, "%s/%.*s", tm->file_host, (int)len, name);
    if (w < 0 || (size_t)w >= sizeof key)
        return entity_find(tm, name, len, id);
    return entity_find(tm, key, (size_t)w, id);
}

void tm_too_many_columns(pfi_telemetry *tm, const char *name, long line, int max, const char *what,
                         const char *src)
{
    tm_note(tm,
            "%s:%ld: more than %d columns: line skipped, the rest is read (%s in %s: raise it "
            "and rebuild)",
            name, line, max, what, src);
    tm->n_skipped++;
}

/* The key an entity_find looks up. */
typedef struct ent_key {
    const pfi_telemetry *tm;
    const char *name;
    size_t len;
} ent_key;

static bool ent_eq(const void *ctx, size_t ix)
{
    const ent_key *k = ctx;
    const char *e = k->tm->entities[ix].name;
    return strncmp(e, k->name, k->len) == 0 && e[k->len] == '\0';
}

static bool dropped_eq(const void *ctx, size_t ix)
{
    const ent_key *k = ctx;
    const char *d = k->tm->dropped_names->names[ix];
    return strncmp(d, k->name, k->len) == 0 && d[k->len] == '\0';
}

/* Whether the item named "<kind>:name" was dropped past a limit before; else, when add,
 * remember it (a set: each one counted once). Memory short: it is not remembered (counted
 * again, no other harm). */
static bool dropped_seen(pfi_telemetry *tm, char kind, const char *name, size_t len, bool add)
{
    char key[520];
    int w = snprintf(key, sizeof key, "%c:%.*s", kind, (int)(len < 500 ? len : 500), name);
    size_t kn = w > 0 && (size_t)w < sizeof key ? (size_t)w : sizeof key - 1;
    uint64_t h = hidx_hash(key, kn, HIDX_SEED);
    struct tm_names *d = tm->dropped_names;
    ent_key k = {tm, key, kn};
    if (d != NULL && hidx_find(&d->ix, h, dropped_eq, &k) != SIZE_MAX)
        return true;
    if (!add)
        return false;
    if (d == NULL && (d = tm->dropped_names = pfi_calloc(1, sizeof *d)) == NULL)
        return false;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 16;
        char **nn = pfi_realloc(d->names, cap * sizeof *nn);
        if (nn == NULL)
            return false;
        d->names = nn;
        d->cap = cap;
    }
    char *c = tm_strndup(key, kn);
    if (c == NULL)
        return false;
    if (hidx_add(&d->ix, h, d->n) != PFI_OK) {
        pfi_free(c);
        return false;
    }
    d->names[d->n++] = c;
    return false;
}

/* The file being read, for a note ("" when not known). */
static const char *file_now(const pfi_telemetry *tm)
{
    return tm->file_names != NULL && tm->n_files > 0 ? tm->file_names[tm->n_files - 1] : "";
}

/* A GPU or other entity past PFI_TELEMETRY_MAX_ENTITIES: its samples are dropped, the rest of
 * the input read; a note for the first one, each counted once (n_entities_dropped). */
static pfi_error entity_over_limit(pfi_telemetry *tm, const char *name, size_t len)
{
    tm->n_limit_rows++;
    if (!dropped_seen(tm, 'e', name, len, true)) {
        if (tm->n_entities_dropped++ == 0)
            tm_note(tm,
                    "%s: more than %d GPUs and other entities in one run: '%.*s' and any "
                    "later new ones are not read, the rest is (PFI_TELEMETRY_MAX_ENTITIES in "
                    "pfi/telemetry.h: raise it and rebuild, or ingest the nodes' files as "
                    "separate runs)",
                    file_now(tm), PFI_TELEMETRY_MAX_ENTITIES, (int)(len < 200 ? len : 200), name);
    }
    return PFI_ERR_LIMIT;
}

static pfi_error entity_find(pfi_telemetry *tm, const char *name, size_t len, size_t *id)
{
    /* Rows cycle through the GPUs in order: the hint (the last row's entity) and the slot
     * after it are tried first, then the index by name. */
    static const size_t none = (size_t)-1;
    size_t n = tm->n_entities;
    if (*id != none && *id < n) {
        for (size_t k = 0, i = *id; k < 2 && k < n; k++, i = i + 1 < n ? i + 1 : 0) {
            const char *e = tm->entities[i].name;
            if (strncmp(e, name, len) == 0 && e[len] == '\0') {
                *id = i;
                return PFI_OK;
            }
        }
    }
    uint64_t h = hidx_hash(name, len, HIDX_SEED);
    ent_key key = {tm, name, len};
    if (tm->ent_index != NULL) {
        size_t i = hidx_find(&tm->ent_index->ix, h, ent_eq, &key);
        if (i != SIZE_MAX) {
            *id = i;
            return PFI_OK;
        }
    }
    if (n >= PFI_TELEMETRY_MAX_ENTITIES)
        return entity_over_limit(tm, name, len);
    if (tm->ent_index == NULL && (tm->ent_index = pfi_calloc(1, sizeof *tm->ent_index)) == NULL)
        return PFI_ERR_NOMEM;
    if (n == tm->entities_cap) {
        size_t cap = n ? 2 * n : 16;
        pfi_telemetry_entity *ne = pfi_realloc(tm->entities, cap * sizeof *ne);
        if (ne == NULL)
            return PFI_ERR_NOMEM;
        tm->entities = ne;
        int *nm = pfi_realloc(tm->map, cap * PFI_TELEMETRY_MAX_FIELDS * sizeof *nm);
        if (nm == NULL)
            return PFI_ERR_NOMEM;
        tm->map = nm;
        tm->entities_cap = cap;
    }
    pfi_telemetry_entity *e = &tm->entities[n];
    memset(e, 0, sizeof *e);
    e->name = tm_strndup(name, len);
    if (e->name == NULL)
        return PFI_ERR_NOMEM;
    e->lost_t_s = NAN;
    e->last_good_t_s = NAN;
    e->last_t = NAN;
    /* NVSwitches and MIG instances ("GPU-I 3" of dcgmi, "<host>/<UUID>/GI3", "MIG-...") are
     * entities but not GPUs: a job's GPUs are physical GPUs, each counted once. */
    const char *loc = strrchr(e->name, '/');
    loc = loc ? loc + 1 : e->name;
    e->is_gpu = !(strncmp(loc, "Switch", 6) == 0 || strncmp(loc, "GPU-I ", 6) == 0 ||
                  strncmp(loc, "GPU-CI ", 7) == 0 || strncmp(loc, "MIG-", 4) == 0 ||
                  strncmp(loc, "GI", 2) == 0);
    e->prior_lo = e->prior_hi = NAN;
    e->last_step_s = NAN;
    if (entity_identity(tm, e) != PFI_OK || hidx_add(&tm->ent_index->ix, h, n) != PFI_OK) {
        pfi_free(e->name);
        pfi_free(e->host);
        pfi_free(e->uuid);
        return PFI_ERR_NOMEM;
    }
    for (size_t f = 0; f < PFI_TELEMETRY_MAX_FIELDS; f++)
        tm->map[n * PFI_TELEMETRY_MAX_FIELDS + f] = -1;
    tm->n_entities++;
    *id = n;
    return PFI_OK;
}

pfi_error tm_field(pfi_telemetry *tm, const char *source, size_t len, size_t *id)
{
    char name[256];
    if (len >= sizeof name)
        len = sizeof name - 1;
    memcpy(name, source, len);
    name[len] = '\0';
    const char *canon;
    pfi_telemetry_kind kind;
    int dcgm;
    pfi_telemetry_field_info(name, &canon, &kind, &dcgm);
    for (size_t i = 0; i < tm->n_fields; i++) {
        if (strcmp(tm->fields[i].name, canon) == 0) {
            *id = i;
            return PFI_OK;
        }
    }
    /* Past the limit this field (column, metric family) is not read, the rest is; the last
     * slot is kept for the power derived from the energy counter (energy.c, reduce.c). */
    bool derived = strcmp(canon, "power_energy_w") == 0;
    if (tm->n_fields >= PFI_TELEMETRY_MAX_FIELDS - (derived ? 0 : 1)) {
        if (!dropped_seen(tm, 'f', canon, strlen(canon), true) && tm->n_fields_dropped++ == 0)
            tm_note(tm,
                    "%s: more than %d distinct fields: '%.200s' and any later new ones are "
                    "not read, the rest is (PFI_TELEMETRY_MAX_FIELDS in pfi/telemetry.h, less "
                    "one kept for the power derived from energy: query fewer fields, or raise "
                    "it and rebuild)",
                    file_now(tm), PFI_TELEMETRY_MAX_FIELDS - 1, canon);
        return PFI_ERR_LIMIT;
    }
    pfi_telemetry_field *f = &tm->fields[tm->n_fields];
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

static pfi_error series_of(pfi_telemetry *tm, size_t e, size_t f, pfi_telemetry_series **out);

pfi_error tm_series(pfi_telemetry *tm, size_t e, size_t f, pfi_telemetry_series **out)
{
    return series_of(tm, e, f, out);
}

static pfi_error series_of(pfi_telemetry *tm, size_t e, size_t f, pfi_telemetry_series **out)
{
    int *slot = &tm->map[e * PFI_TELEMETRY_MAX_FIELDS + f];
    if (*slot >= 0) {
        *out = &tm->series[*slot];
        return PFI_OK;
    }
    if (tm->n_series == tm->series_cap) {
        size_t cap = tm->series_cap ? 2 * tm->series_cap : 64;
        pfi_telemetry_series *ns = pfi_realloc(tm->series, cap * sizeof *ns);
        if (ns == NULL)
            return PFI_ERR_NOMEM;
        tm->series = ns;
        tm->series_cap = cap;
    }
    pfi_telemetry_series *s = &tm->series[tm->n_series];
    memset(s, 0, sizeof *s);
    s->entity = e;
    s->field = f;
    s->range_max = NAN;
    s->last_good_t_s = NAN;
    s->first_missing_t_s = NAN;
    s->last_row = -1;
    s->last_t = NAN;
    s->t_first = NAN;
    s->t_hi = -INFINITY;
    pfi_telemetry_kind kind = tm->fields[f].kind;
    s->counted = tm->opt.keep_series && tm->opt.count_means_only && kind != PFI_KIND_POWER_W &&
                 kind != PFI_KIND_ENERGY_MJ;
    s->changes_only = s->counted && (kind == PFI_KIND_LIMIT_W ||
                                     strcmp(tm->fields[f].name, "clock_event_reasons") == 0);
    s->times_only = tm->derive_times_only;
    s->counted = s->counted || s->times_only;
    if (tm->opt.keep_series && tm->opt.count_means_only && tm->opt.stream_power &&
        (kind == PFI_KIND_POWER_W || kind == PFI_KIND_ENERGY_MJ)) {
        if ((s->stream = pfi_calloc(1, sizeof *s->stream)) == NULL)
            return PFI_ERR_NOMEM;
        *s->stream = (tm_stream){.lo = UINT64_MAX,
                                 .t_min = INFINITY,
                                 .t_max = -INFINITY,
                                 .m_min = INFINITY,
                                 .m_max = -INFINITY,
                                 .last_row_t = NAN,
                                 .derived = strcmp(tm->fields[f].name, "power_energy_w") == 0};
        s->counted = true;
    }
    *slot = (int)tm->n_series++;
    *out = s;
    return PFI_OK;
}

static pfi_error grow(pfi_telemetry_series *s)
{
    size_t cap = s->cap ? 2 * s->cap : 64;
    double *t = pfi_realloc(s->t_s, cap * sizeof *t);
    if (t == NULL)
        return PFI_ERR_NOMEM;
    s->t_s = t;
    double *v = s->times_only ? NULL : pfi_realloc(s->value, cap * sizeof *v);
    if (v == NULL && !s->times_only)
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
static pfi_error keep_miss(pfi_telemetry *tm, pfi_telemetry_series *s, double t)
{
    pfi_telemetry_kind kind = tm->fields[s->field].kind;
    if (!tm->opt.keep_series || isnan(t) ||
        (kind != PFI_KIND_POWER_W && kind != PFI_KIND_ENERGY_MJ))
        return PFI_OK;
    if (s->stream != NULL) {
        pfi_error err = tm_stream_missing(tm, s, t);
        if (err != PFI_OK)
            return err;
    }
    if (tm->n_miss_stored >= PFI_TELEMETRY_MAX_SAMPLES)
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

pfi_error tm_put_miss_time(pfi_telemetry *tm, size_t e, size_t f, double t)
{
    pfi_telemetry_series *s;
    pfi_error err = series_of(tm, e, f, &s);
    return err != PFI_OK ? err : keep_miss(tm, s, t);
}

pfi_error tm_put(pfi_telemetry *tm, size_t e, size_t f, double t, pfi_value_status st, double v,
                 long row, bool pod)
{
    pfi_telemetry_series *s;
    pfi_error err = series_of(tm, e, f, &s);
    if (err != PFI_OK)
        return err;
    pfi_telemetry_kind kind = tm->fields[f].kind;
    if (row >= 0 && s->last_row == row) {
        /* A second series for the same (entity, metric) in one scrape: a duplicate. Keep one:
         * the one with pod labels if only one has them, else the first. Never add. */
        s->n_duplicate++;
        if (s->counted && st == PFI_VALUE_OK && pod && !s->last_pod)
            tm->counted_inexact = true; /* the stored path would replace the last value */
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
    if (st == PFI_VALUE_OK && tm_is_dcgm_blank(v)) {
        s->n_blank[tm_dcgm_blank_code(v)]++;
        st = PFI_VALUE_MISSING;
    }
    if (st == PFI_VALUE_OK && tm_out_of_range(tm, kind, v)) {
        s->n_range++;
        if (isnan(s->range_max) || v > s->range_max) {
            s->range_max = v;
            s->range_line = tm->n_files > 0 ? tm->line_now : 0;
            s->range_file = tm->n_files > 0 ? tm->n_files - 1 : 0;
        }
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
    if (kind == PFI_KIND_LIMIT_W && tm->fields[f].dcgm_id == 162 && tm->opt.max_power_w == 0 &&
        v > tm->max_limit_w)
        tm->max_limit_w = v;
    s->n_valid++;
    s->sum += v;
    s->last_good_t_s = t;
    if (s->counted) {
        if (tm->n_stored >= PFI_TELEMETRY_MAX_SAMPLES)
            return PFI_ERR_LIMIT;
        /* A look-up by time over changes only is the look-up over every sample while the
         * times ascend; a time back would make the two differ. */
        if (s->changes_only && s->n_valid > 1 && !(t >= s->last_t))
            tm->counted_inexact = true;
        tm_count_only(tm, s, t);
        if (s->stream != NULL && (err = tm_stream_valid(tm, s, t, v)) != PFI_OK)
            return err;
        if (s->stream == NULL && tm->sink_all &&
            (err = tm->sink(tm->sink_ctx, (size_t)(s - tm->series), t, v, true, false)) != PFI_OK)
            return err; /* the second read: the warm-up sums (pfi_reduce_stream) */
        if (s->times_only || (s->changes_only && (s->n == 0 || v != s->value[s->n - 1]))) {
            if (tm->spec != NULL && s->changes_only)
                tm_spec_change(tm, s->entity, t);
            if (s->n == s->cap && (err = grow(s)) != PFI_OK)
                return err;
            s->t_s[s->n] = t;
            if (!s->times_only)
                s->value[s->n] = v;
            s->brk[s->n] = s->n == 0 || s->pending_break || !(t > s->last_t);
            s->n++;
        }
    } else if (tm->opt.keep_series) {
        if (tm->n_stored >= PFI_TELEMETRY_MAX_SAMPLES)
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

double tm_local_time(pfi_telemetry *tm, double local)
{
    if (tm->zone == NULL)
        return local;
    tm->time_utc = true;
    tm->n_zone_local++;
    double u[2], r;
    int m = tm_zone_to_utc(tm->zone, local, u);
    double last = tm->zone_last_utc;
    if (m == 1) {
        r = u[0];
    } else if (m == 2) {
        /* The repeated hour: the first pass, unless the file was already past it (a minute
         * of slack for GPUs read out of order within one loop). */
        tm->n_zone_repeated++;
        r = !isnan(last) && u[0] < last - 60 ? u[1] : u[0];
    } else {
        /* The skipped hour (a clock that did not move on at spring-forward): as if it had,
         * at the offset before the change. */
        if (tm->n_zone_skipped++ == 0)
            tm_note(tm,
                    "local times inside the skipped hour of a spring-forward in %s: read at "
                    "the offset before the change",
                    tm->time_zone);
        r = local - tm_zone_offset(tm->zone, local - 86400.0);
    }
    tm->zone_last_utc = r;
    return r;
}

double tm_interval(pfi_telemetry *tm)
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

/*
 * Two files claiming one GPU (host, UUID or index) over overlapping times: the second is
 * refused (tm->conflict, read.c turns it into the file's error) naming both. Times from
 * files read one after the other that do not overlap are one GPU's capture in pieces.
 */
static bool file_claim(pfi_telemetry *tm, pfi_telemetry_entity *en, double t, long line)
{
    bool first = en->file_no != tm->n_files;
    if (first) {
        if (en->file_no != 0) {
            if (isnan(en->prior_lo) || en->file_lo < en->prior_lo)
                en->prior_lo = en->file_lo;
            if (isnan(en->prior_hi) || en->file_hi > en->prior_hi) {
                en->prior_hi = en->file_hi;
                en->prior_file = en->file;
            }
        }
        en->file_no = tm->n_files;
        en->file = tm->file_names && tm->n_files > 0 ? tm->file_names[tm->n_files - 1] : NULL;
        en->file_lo = en->file_hi = t;
        en->shift_s = 0;
        en->last_step_s = NAN;
    }
    if (t < en->file_lo)
        en->file_lo = t;
    if (t > en->file_hi)
        en->file_hi = t;
    if (!isnan(en->prior_lo) && t >= en->prior_lo && t <= en->prior_hi && tm->conflict[0] == '\0') {
        tm->conflict_line = line; /* the first overlapping row, not the file's end */
        snprintf(tm->conflict, sizeof tm->conflict,
                 "GPU %s is in both %s and %s over overlapping times (one host's GPU "
                 "cannot be measured twice): give each node's file its host (--host, "
                 "--host-pattern, a hostname column) or leave one file out",
                 en->name, en->prior_file ? en->prior_file : "?", en->file ? en->file : "?");
    }
    return first;
}

/* A row at time t (the GPU's previous at prev) that may be implausibly far: kept so that
 * its exclusion can name its line. */
static void far_candidate(pfi_telemetry *tm, double prev, double t, long line)
{
    if (!(t < TM_PLAUSIBLE_FROM_S || isnan(prev) || fabs(t - prev) > TM_PLAUSIBLE_SPAN_S) ||
        tm->n_far_rows >= sizeof tm->far_rows / sizeof tm->far_rows[0] || tm->n_files == 0)
        return;
    tm->far_rows[tm->n_far_rows].line = line;
    tm->far_rows[tm->n_far_rows].file = tm->n_files - 1;
    tm->far_rows[tm->n_far_rows].t = t;
    tm->n_far_rows++;
}

double tm_row_time(pfi_telemetry *tm, size_t e, bool has_t, double t, bool tod, long line,
                   const char *name)
{
    pfi_telemetry_entity *en = &tm->entities[e];
    en->rows++;
    tm->line_now = line;
    if (!has_t) {
        tm->time_nominal = true;
        tm->time_relative = true;
        return (double)(en->rows - 1) * tm_interval(tm);
    }
    if (tod)
        t += en->day_offset_s;
    if (file_claim(tm, en, t, line) && !isnan(en->last_t)) {
        /* The GPU's rows from an earlier file: a new piece, never integrated across. */
        for (size_t f = 0; f < tm->n_fields; f++) {
            int k = tm->map[e * PFI_TELEMETRY_MAX_FIELDS + f];
            if (k >= 0)
                tm->series[k].pending_break = true;
        }
        far_candidate(tm, NAN, t, line);
        en->last_t = t;
        return t;
    }
    t += en->shift_s;
    if (!isnan(en->last_t) && t < en->last_t) {
        double wrapped = t + 86400.0;
        double step = tm->opt.interval_s > 0 ? tm->opt.interval_s : 1.0;
        if (tod && wrapped > en->last_t && wrapped - en->last_t <= 2 * step + 1.0) {
            tm_note(tm,
                    "%s:%ld: time went from %.0f s to %.0f s of the day: taken as a "
                    "midnight rollover (+24 h)",
                    name, line, fmod(en->last_t, 86400.0), fmod(t, 86400.0));
            t = wrapped;
            en->day_offset_s += 86400.0;
        } else {
            en->segment++;
            /* A clock stepped back (NTP, a zone change) by up to a day: the later rows were
             * taken later, so they follow the last one by the GPU's own step and share no
             * time bin with the earlier rows. A longer jump (a clock not yet set, dated
             * 1970) is not moved: the reduction refuses the far-off time and names it. */
            double back = en->last_t - t;
            bool place = back <= 86400.0;
            tm_note(tm,
                    "%s:%ld: %s: time jumped back %.3f s (clock change?): series split "
                    "into a new segment%s",
                    name, line, en->name, back,
                    place ? ", placed after the previous one in file order (never summed "
                            "with it as simultaneous)"
                          : "");
            if (place) {
                double st = en->last_step_s > 0 ? en->last_step_s : step;
                en->shift_s += back + st;
                t += back + st;
            }
            for (size_t f = 0; f < tm->n_fields; f++) {
                int k = tm->map[e * PFI_TELEMETRY_MAX_FIELDS + f];
                if (k >= 0)
                    tm->series[k].pending_break = true;
            }
        }
    }
    far_candidate(tm, en->last_t, t, line);
    if (!isnan(en->last_t) && t > en->last_t)
        en->last_step_s = t - en->last_t;
    en->last_t = t;
    return t;
}

void tm_mark_lost(pfi_telemetry *tm, size_t e, double t)
{
    pfi_telemetry_entity *en = &tm->entities[e];
    if (!en->lost) {
        en->lost = true;
        en->lost_t_s = t;
    }
}

long pfi_telemetry_field_find(const pfi_telemetry *tm, const char *name)
{
    for (size_t i = 0; i < tm->n_fields; i++)
        if (strcmp(tm->fields[i].name, name) == 0)
            return (long)i;
    return -1;
}

const pfi_telemetry_series *pfi_telemetry_series_get(const pfi_telemetry *tm, size_t entity,
                                                     size_t field)
{
    if (entity >= tm->n_entities || field >= tm->n_fields)
        return NULL;
    int k = tm->map[entity * PFI_TELEMETRY_MAX_FIELDS + field];
    return k < 0 ? NULL : &tm->series[k];
}

bool pfi_telemetry_has_field(const pfi_telemetry *tm, const char *name)
{
    long f = pfi_telemetry_field_find(tm, name);
    if (f < 0)
        return false;
    for (size_t e = 0; e < tm->n_entities; e++) {
        const pfi_telemetry_series *s = pfi_telemetry_series_get(tm, e, (size_t)f);
        if (s != NULL && s->n_valid > 0)
            return true;
    }
    return false;
}

char *tm_quote(char buf[TM_QUOTE_LEN], const char *s, size_t n, size_t max)
{
    return pfi_escape(buf, TM_QUOTE_LEN, s, n, max);
}

/* The mean of field name over GPU entities' valid samples (NaN when none). */
static double field_mean_all(const pfi_telemetry *tm, const char *name)
{
    long f = pfi_telemetry_field_find(tm, name);
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; f >= 0 && i < tm->n_series; i++)
        if (tm->series[i].field == (size_t)f && tm->entities[tm->series[i].entity].is_gpu) {
            sum += tm->series[i].sum;
            n += tm->series[i].n_valid;
        }
    return n > 0 ? sum / (double)n : NAN;
}

/*
 * A DCGM profiling field (1001-1012) that is exactly 0 on every GPU for the whole run while
 * the GPUs are busy (utilization >= 10 %, or power >= 30 % of the max limit without a
 * utilization field) is the profiling module not collecting, not an idle engine: its samples
 * become missing, with a note.
 */
static void zero_profiling(pfi_telemetry *tm)
{
    double util = field_mean_all(tm, "gpu_util_pct");
    double pw = field_mean_all(tm, "power_w");
    if (isnan(pw))
        pw = field_mean_all(tm, "power_avg_w");
    bool busy = util >= 10 || (isnan(util) && tm->max_limit_w > 0 && pw >= 0.3 * tm->max_limit_w);
    if (!busy)
        return;
    for (size_t f = 0; f < tm->n_fields; f++) {
        const pfi_telemetry_field *fl = &tm->fields[f];
        if (fl->dcgm_id < 1001 || fl->dcgm_id > 1012)
            continue;
        size_t n = 0;
        bool zero = true;
        for (size_t i = 0; i < tm->n_series && zero; i++) {
            const pfi_telemetry_series *s = &tm->series[i];
            if (s->field != f || !tm->entities[s->entity].is_gpu)
                continue;
            n += s->n_valid;
            zero = s->n_valid == 0 || s->sum == 0;
        }
        if (!zero || n == 0)
            continue;
        for (size_t i = 0; i < tm->n_series; i++) {
            pfi_telemetry_series *s = &tm->series[i];
            if (s->field != f)
                continue;
            s->n_missing += s->n_valid;
            tm->n_stored -= s->counted ? s->n_valid : s->n;
            s->t_first = NAN;
            s->n_valid = s->n = 0;
            s->sum = 0;
            s->wsum = 0; /* the warm-up's sums too (pfi_reduce_stream) */
            s->wn = 0;
            s->last_good_t_s = NAN;
        }
        if (isnan(util))
            tm_note(tm,
                    "%s: exactly 0 on every GPU for the whole run (%zu samples) while the GPUs "
                    "drew %.0f W on average: the DCGM profiling module was not collecting; "
                    "taken as missing, not as 0",
                    fl->name, n, pw);
        else
            tm_note(tm,
                    "%s: exactly 0 on every GPU for the whole run (%zu samples) while the GPUs "
                    "were %.0f %% busy: the DCGM profiling module was not collecting; taken as "
                    "missing, not as 0",
                    fl->name, n, util);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static bool far_time(double t, double median)
{
    return t < TM_PLAUSIBLE_FROM_S || fabs(t - median) > TM_PLAUSIBLE_SPAN_S;
}

/* Samples at implausible wall-clock times — before 2000, or more than a year from the
 * median of all sample times — are excluded (never integrated: they would stretch the
 * grid and the energy span over decades), each such row named by its line when known, and
 * counted. Nothing for relative or nominal times (a median before 2000). */
static void drop_far_times(pfi_telemetry *tm)
{
    size_t n = 0;
    for (size_t i = 0; i < tm->n_series; i++)
        n += tm->series[i].n;
    if (n == 0 || tm->time_relative)
        return;
    double *all = pfi_malloc(n * sizeof *all);
    if (all == NULL) {
        tm_note(tm, "out of memory: sample times not checked for implausible dates");
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < tm->n_series; i++)
        for (size_t j = 0; j < tm->series[i].n; j++)
            all[k++] = tm->series[i].t_s[j];
    qsort(all, n, sizeof *all, cmp_double);
    double median = n % 2 ? all[n / 2] : 0.5 * (all[n / 2 - 1] + all[n / 2]);
    pfi_free(all);
    if (median < TM_PLAUSIBLE_FROM_S)
        return;
    size_t dropped = 0;
    for (size_t i = 0; i < tm->n_series; i++) {
        pfi_telemetry_series *s = &tm->series[i];
        size_t w = 0;
        bool brk_next = false;
        for (size_t j = 0; j < s->n; j++) {
            if (far_time(s->t_s[j], median)) {
                s->n_valid--;
                s->sum -= s->value[j];
                brk_next = true;
                dropped++;
                continue;
            }
            s->t_s[w] = s->t_s[j];
            s->value[w] = s->value[j];
            s->brk[w] = s->brk[j] || brk_next || w == 0;
            brk_next = false;
            w++;
        }
        tm->n_stored -= s->n - w;
        s->n = w;
        size_t wm = 0;
        for (size_t j = 0; j < s->n_miss; j++)
            if (!far_time(s->miss_t[j], median))
                s->miss_t[wm++] = s->miss_t[j];
        tm->n_miss_stored -= s->n_miss - wm;
        s->n_miss = wm;
    }
    if (dropped == 0)
        return;
    char a[64];
    time_t mt = (time_t)median;
    struct tm g;
    gmtime_r(&mt, &g);
    strftime(a, sizeof a, "%Y-%m-%d %H:%M:%S", &g);
    for (size_t i = 0; i < tm->n_far_rows; i++) {
        double t = tm->far_rows[i].t;
        if (!far_time(t, median))
            continue;
        char b[64] = "out of calendar range";
        time_t tt = (time_t)t;
        if (t > -1e11 && t < 1e12 && gmtime_r(&tt, &g) != NULL)
            strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S", &g);
        tm_note(tm,
                "%s:%ld: time %s is implausible (before 2000, or more than a year from the "
                "median time %s): row excluded, never integrated",
                tm->file_names[tm->far_rows[i].file], tm->far_rows[i].line, b, a);
    }
    tm_note(tm,
            "%zu sample%s at implausible times (before 2000, or more than a year from the "
            "median time %s) excluded",
            dropped, dropped == 1 ? "" : "s", a);
}

void pfi_telemetry_summarize(pfi_telemetry *tm)
{
    drop_far_times(tm);
    zero_profiling(tm);
    tm_note_gaps(tm);
    for (size_t i = 0; i < tm->n_series; i++) {
        const pfi_telemetry_series *s = &tm->series[i];
        const char *en = tm->entities[s->entity].name;
        const pfi_telemetry_field *f = &tm->fields[s->field];
        size_t total = s->n_valid + s->n_missing + s->n_range;
        char why[160] = "";
        static const char *const reason[PFI_DCGM_BLANK_KINDS] = {
            "blank", "not found", "not supported", "not permissioned", "other blank code"};
        size_t used = 0;
        for (int k = 0; k < PFI_DCGM_BLANK_KINDS; k++) {
            if (s->n_blank[k] == 0 || used >= sizeof why)
                continue;
            int w = snprintf(why + used, sizeof why - used, "%s%zu %s",
                             used ? ", " : "; DCGM: ", s->n_blank[k], reason[k]);
            used += w > 0 ? (size_t)w : 0;
        }
        if (s->n_missing > 0)
            tm_note(tm, "%s: %s not available (%zu of %zu samples missing%s)%s", en, f->name,
                    s->n_missing, total, why,
                    f->kind == PFI_KIND_RATIO
                        ? ": another profiler may hold the GPU performance counters, or the "
                          "DCGM profiling module is not loaded / not permitted"
                        : "");
        if (s->n_range > 0 && s->range_max < 0)
            tm_note(tm,
                    "%s: %zu of %zu %s samples negative (largest %.17g): negative values are "
                    "refused, dropped as out of range, not clamped",
                    en, s->n_range, total, f->name, s->range_max);
        else if (s->n_range > 0) {
            /* Named by the line of its largest value, like the other cell notes: FILE:LINE:
             * FIELD, then the range it left (the power's: the bound of tm_power_hi). */
            char where[PFI_TELEMETRY_NOTE_LEN / 2] = "", range[96];
            double lo, hi;
            tm_kind_range(tm, f->kind, &lo, &hi);
            const char *unit = f->kind == PFI_KIND_POWER_W || f->kind == PFI_KIND_LIMIT_W ? " W"
                               : f->kind == PFI_KIND_PERCENT                              ? " %"
                                                                                          : "";
            if (isinf(hi))
                snprintf(range, sizeof range, "range >= %g%s", lo, unit);
            else if (f->kind == PFI_KIND_POWER_W)
                snprintf(range, sizeof range, "range %g..%g%s per GPU: %s", lo, hi, unit,
                         tm->max_limit_w > 0 ? "twice the max power limit"
                                             : "no max limit column or --max-power");
            else
                snprintf(range, sizeof range, "range %g..%g%s", lo, hi, unit);
            if (s->range_line > 0 && s->range_file < tm->n_files)
                snprintf(where, sizeof where, "%s:%ld: %s: ", tm->file_names[s->range_file],
                         s->range_line, f->name);
            tm_note(tm,
                    "%s%s: %zu of %zu %s samples out of range (max seen %.17g%s; %s): dropped, "
                    "not clamped",
                    where, en, s->n_range, total, f->name, s->range_max,
                    where[0] ? " on that line" : "", range);
        }
        if (s->n_duplicate > 0)
            tm_note(tm, "%s: %zu duplicate %s samples dropped (kept one per scrape)", en,
                    s->n_duplicate, f->name);
    }
    for (size_t e = 0; e < tm->n_entities; e++) {
        const pfi_telemetry_entity *en = &tm->entities[e];
        if (en->lost && isnan(en->lost_t_s)) /* marked by the kernel log (pfi/kernlog.h) */
            tm_note(tm,
                    "%s: GPU lost: last good sample at t=%.3f s, time of the loss not "
                    "known on the telemetry clock",
                    en->name, en->last_good_t_s);
        else if (en->lost)
            tm_note(tm,
                    "%s: GPU lost (fell off the bus): last good sample at t=%.3f s, "
                    "first lost at t=%.3f s",
                    en->name, en->last_good_t_s, en->lost_t_s);
    }
}
