/*
 * Integration over a series' time: time gaps, power trapezoids, energy-counter deltas and
 * the power derived from the counter. Every integral here skips breaks (missing values,
 * segment splits) and time gaps (pfi_telemetry_gaps), so none spans a hole in the data.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "telemetry/internal.h"

/* A step i (from sample i-1 to i) that the rule may look at: positive and not a break. */
static bool clean_step(const pfi_telemetry_series *s, size_t i)
{
    return !s->brk[i] && s->t_s[i] > s->t_s[i - 1];
}

static uint64_t step_key(const pfi_telemetry_series *s, size_t i)
{
    double d = s->t_s[i] - s->t_s[i - 1];
    uint64_t k;
    memcpy(&k, &d, sizeof k); /* positive doubles order as their bit patterns */
    return k;
}

/* One more clean step d (> 0) of a streamed series into its table (internal.h). */
static pfi_error stream_step_add(pfi_telemetry *tm, tm_stream *st, double d)
{
    uint64_t k;
    memcpy(&k, &d, sizeof k);
    if (st->n_keys + 1 > st->slots / 2 && st->slots < 2 * TM_STREAM_STEPS) {
        size_t slots = st->slots ? 2 * st->slots : 16;
        tm_stream_step *ent = pfi_calloc(slots, sizeof *ent);
        if (ent == NULL)
            return PFI_ERR_NOMEM;
        for (size_t i = 0; i < st->slots; i++) {
            if (st->ent[i].key == 0)
                continue;
            size_t h = (size_t)((st->ent[i].key * 0x9E3779B97F4A7C15u) >> 32) & (slots - 1);
            while (ent[h].key != 0)
                h = (h + 1) & (slots - 1);
            ent[h] = st->ent[i];
        }
        pfi_free(st->ent);
        st->ent = ent;
        st->slots = slots;
        st->last_key = st->key2 = 0; /* their slots moved */
    }
    size_t h = (size_t)((k * 0x9E3779B97F4A7C15u) >> 32) & (st->slots - 1);
    while (st->ent[h].key != 0 && st->ent[h].key != k)
        h = (h + 1) & (st->slots - 1);
    if (st->ent[h].key == 0) {
        if (st->n_keys == TM_STREAM_STEPS) {
            tm->counted_inexact = true; /* too many distinct steps: read again, stored */
            return PFI_OK;
        }
        st->ent[h].key = k;
        st->n_keys++;
    }
    st->ent[h].cnt++;
    st->n_clean++;
    if (k != st->last_key) { /* the two steps counted last (tm_put_stream's fast case) */
        st->key2 = st->last_key;
        st->slot2 = st->last_slot;
    }
    st->last_key = k;
    st->last_slot = h;
    st->lo = k < st->lo ? k : st->lo;
    st->hi = k > st->hi ? k : st->hi;
    return PFI_OK;
}

pfi_error tm_stream_valid(pfi_telemetry *tm, pfi_telemetry_series *s, double t, double v)
{
    tm_stream *st = s->stream;
    bool brk = s->n_valid == 1 || s->pending_break || !(t > s->last_t);
    if (tm->sink != NULL && !tm->sink_counts)
        return tm->sink(tm->sink_ctx, (size_t)(s - tm->series), t, v, true, brk);
    if (tm->sink != NULL) /* the first read's: counted as well */
        (void)tm->sink(tm->sink_ctx, (size_t)(s - tm->series), t, v, true, brk);
    if (!st->derived && (isnan(t) || !(isnan(st->last_row_t) || t > st->last_row_t)))
        tm->counted_inexact = true;
    st->last_row_t = t;
    st->t_min = t < st->t_min ? t : st->t_min;
    st->t_max = t > st->t_max ? t : st->t_max;
    return brk ? PFI_OK : stream_step_add(tm, st, t - s->last_t);
}

pfi_error tm_stream_missing(pfi_telemetry *tm, pfi_telemetry_series *s, double t)
{
    tm_stream *st = s->stream;
    if (tm->sink != NULL && !tm->sink_counts)
        return tm->sink(tm->sink_ctx, (size_t)(s - tm->series), t, NAN, false, true);
    if (tm->sink != NULL)
        (void)tm->sink(tm->sink_ctx, (size_t)(s - tm->series), t, NAN, false, true);
    if (!st->derived && !(isnan(st->last_row_t) || t > st->last_row_t))
        tm->counted_inexact = true;
    st->last_row_t = t;
    st->m_min = t < st->m_min ? t : st->m_min;
    st->m_max = t > st->m_max ? t : st->m_max;
    return PFI_OK;
}

static int step_cmp(const void *pa, const void *pb)
{
    const tm_stream_step *a = pa, *b = pb;
    return a->key < b->key ? -1 : a->key > b->key;
}

void tm_stream_finish(tm_stream *st)
{
    if (st == NULL || st->sorted)
        return;
    size_t w = 0;
    for (size_t i = 0; i < st->slots; i++)
        if (st->ent[i].key != 0)
            st->ent[w++] = st->ent[i];
    if (w > 1)
        qsort(st->ent, w, sizeof *st->ent, step_cmp);
    st->sorted = true;
}

void tm_stream_free(tm_stream *st)
{
    if (st != NULL)
        pfi_free(st->ent);
    pfi_free(st);
}

/* The rank-th smallest clean step of a streamed series (its table sorted). */
static double stream_select(const tm_stream *st, size_t rank)
{
    size_t i = 0;
    while (rank >= st->ent[i].cnt) {
        rank -= st->ent[i].cnt;
        i++;
    }
    double d;
    memcpy(&d, &st->ent[i].key, sizeof d);
    return d;
}

size_t tm_clean_steps(const pfi_telemetry_series *s, uint64_t *lo, uint64_t *hi)
{
    if (s->stream != NULL) {
        *lo = s->stream->lo;
        *hi = s->stream->hi;
        return s->stream->n_clean;
    }
    size_t m = 0;
    *lo = UINT64_MAX;
    *hi = 0;
    for (size_t i = 1; i < s->n; i++) {
        if (!clean_step(s, i))
            continue;
        uint64_t k = step_key(s, i);
        *lo = k < *lo ? k : *lo;
        *hi = k > *hi ? k : *hi;
        m++;
    }
    return m;
}

/*
 * A radix selection over the steps' bit patterns, one byte per pass: the candidates are the
 * steps that share the bytes in which the smallest and the largest candidate agree; a pass
 * counts them by their first byte past those (and keeps each byte value's smallest and
 * largest step), and the byte value holding the rank-th candidate leaves the candidates of
 * the next pass. It ends when the smallest and largest candidate are equal: a regular
 * series takes no pass, a jittered one two or three.
 */
double tm_clean_step_select(const pfi_telemetry_series *s, size_t rank, uint64_t lo, uint64_t hi)
{
    if (s->stream != NULL)
        return stream_select(s->stream, rank);
    while (lo != hi) {
        int shift = 56;
        while (((lo ^ hi) >> shift) == 0)
            shift -= 8;
        uint64_t mask = shift == 56 ? 0 : ~(uint64_t)0 << (shift + 8), prefix = lo & mask;
        size_t hist[256] = {0};
        uint64_t bmin[256], bmax[256];
        for (size_t b = 0; b < 256; b++) {
            bmin[b] = UINT64_MAX;
            bmax[b] = 0;
        }
        for (size_t i = 1; i < s->n; i++) {
            if (!clean_step(s, i))
                continue;
            uint64_t k = step_key(s, i);
            if ((k & mask) != prefix)
                continue;
            unsigned b = (unsigned)(k >> shift) & 0xff;
            hist[b]++;
            bmin[b] = k < bmin[b] ? k : bmin[b];
            bmax[b] = k > bmax[b] ? k : bmax[b];
        }
        unsigned b = 0;
        while (rank >= hist[b]) {
            rank -= hist[b];
            b++;
        }
        lo = bmin[b];
        hi = bmax[b];
    }
    double d;
    memcpy(&d, &lo, sizeof d);
    return d;
}

/* The lower median of the clean steps, exactly, without allocating (tm_clean_step_select).
 * NaN when there is no clean step. */
static double median_step(const pfi_telemetry_series *s)
{
    uint64_t lo, hi;
    size_t m = tm_clean_steps(s, &lo, &hi);
    return m == 0 ? NAN : tm_clean_step_select(s, (m - 1) / 2, lo, hi);
}

/* The longest step not integrated over: PFI_TELEMETRY_GAP_FACTOR x the median step (INFINITY when
 * the series has no clean step). */
static double gap_limit(const pfi_telemetry_series *s, double *step_s)
{
    double m = median_step(s);
    if (step_s != NULL)
        *step_s = m;
    return isnan(m) ? INFINITY : PFI_TELEMETRY_GAP_FACTOR * m;
}

double tm_gap_limit(const pfi_telemetry_series *s)
{
    return tm_series_len(s) >= 2 ? gap_limit(s, NULL) : INFINITY;
}

size_t pfi_telemetry_gaps(const pfi_telemetry_series *s, double *step_s, double *longest_s)
{
    size_t len = tm_series_len(s);
    double lim = len >= 2 ? gap_limit(s, step_s) : INFINITY;
    if (len < 2 && step_s != NULL)
        *step_s = NAN;
    size_t n = 0;
    double longest = NAN;
    for (size_t i = 0; s->stream != NULL && i < s->stream->n_keys; i++) {
        double dt;
        memcpy(&dt, &s->stream->ent[i].key, sizeof dt);
        if (dt > lim) {
            n += s->stream->ent[i].cnt;
            if (isnan(longest) || dt > longest)
                longest = dt;
        }
    }
    for (size_t i = 1; i < s->n; i++) {
        if (!clean_step(s, i))
            continue;
        double dt = s->t_s[i] - s->t_s[i - 1];
        if (dt > lim) {
            n++;
            if (isnan(longest) || dt > longest)
                longest = dt;
        }
    }
    if (longest_s != NULL)
        *longest_s = longest;
    return n;
}

double pfi_telemetry_integrate(const pfi_telemetry_series *s, double *covered_s)
{
    double lim = s->n >= 2 ? gap_limit(s, NULL) : INFINITY;
    double sum = 0, cov = 0;
    for (size_t i = 1; i < s->n; i++) {
        if (s->brk[i])
            continue;
        double dt = s->t_s[i] - s->t_s[i - 1];
        if (dt > lim)
            continue; /* a time gap */
        sum += 0.5 * (s->value[i] + s->value[i - 1]) * dt;
        cov += dt;
    }
    if (covered_s != NULL)
        *covered_s = cov;
    return sum;
}

double pfi_telemetry_counter_delta(const pfi_telemetry_series *s, double *covered_s,
                                   size_t *n_resets)
{
    double lim = s->n >= 2 ? gap_limit(s, NULL) : INFINITY;
    double sum = 0, cov = 0;
    size_t resets = 0;
    for (size_t i = 1; i < s->n; i++) {
        if (s->brk[i])
            continue;
        double d = s->value[i] - s->value[i - 1];
        if (d < 0) {
            resets++;
            continue;
        }
        double dt = s->t_s[i] - s->t_s[i - 1];
        if (dt > lim)
            continue; /* a time gap: what the counter gained there is not the run's */
        sum += d;
        cov += dt;
    }
    if (covered_s != NULL)
        *covered_s = cov;
    if (n_resets != NULL)
        *n_resets = resets;
    return sum;
}

static pfi_error derive_power(pfi_telemetry *tm, size_t fe, size_t fp);

pfi_error pfi_telemetry_derive_power_from_energy(pfi_telemetry *tm)
{
    long fe = pfi_telemetry_field_find(tm, "energy_mj");
    if (fe < 0 || tm->stream_red != NULL) /* streamed: pfi_reduce_stream derived it */
        return PFI_OK;
    static const char name[] = "power_energy_w";
    size_t fp;
    pfi_error err = tm_field(tm, name, sizeof name - 1, &fp);
    if (err != PFI_OK)
        return err;
    tm->fields[fp].kind = PFI_KIND_POWER_W;
    /* Beside a measured power field (which pfi_reduce_power takes first) the derived power
     * feeds only its mean and its gap note: with count_means_only its values are not kept. */
    tm->derive_times_only =
        tm->opt.keep_series && tm->opt.count_means_only &&
        (pfi_telemetry_has_field(tm, "power_avg_w") || pfi_telemetry_has_field(tm, "power_w"));
    err = derive_power(tm, (size_t)fe, fp);
    tm->derive_times_only = false;
    return err;
}

/* pfi_telemetry_derive_power_from_energy's loop: field fp from the counter fe, per GPU. */
static pfi_error derive_power(pfi_telemetry *tm, size_t fe, size_t fp)
{
    pfi_error err;
    tm->line_now = 0; /* a derived sample comes from two rows: its notes name no line */
    for (size_t e = 0; e < tm->n_entities; e++) {
        int k = tm->map[e * PFI_TELEMETRY_MAX_FIELDS + fe];
        if (k < 0)
            continue;
        double lim = tm->series[k].n >= 2 ? gap_limit(&tm->series[k], NULL) : INFINITY;
        bool first = true;
        for (size_t i = 1;; i++) {
            const pfi_telemetry_series *s = &tm->series[k]; /* re-fetched: tm_put may realloc */
            if (i >= s->n)
                break;
            double dt = s->t_s[i] - s->t_s[i - 1];
            double de = s->value[i] - s->value[i - 1];
            double t = s->t_s[i];
            bool ok = !s->brk[i] && dt > 0 && dt <= lim && de >= 0;
            if (!ok && first)
                continue;
            first = false;
            err = tm_put(tm, e, fp, t, ok ? PFI_VALUE_OK : PFI_VALUE_MISSING,
                         ok ? tm_derived_power_w(de, dt) : NAN, -1, false);
            if (err != PFI_OK)
                return err;
        }
        /* A row without a counter value has no power either: its time goes along, so the
         * reduction finds that timestamp incomplete as it would for a missing power value. */
        for (size_t i = 0; i < tm->series[k].n_miss; i++)
            if ((err = tm_put_miss_time(tm, e, fp, tm->series[k].miss_t[i])) != PFI_OK)
                return err;
    }
    return PFI_OK;
}

void tm_note_gaps(pfi_telemetry *tm)
{
    for (size_t i = 0; i < tm->n_series; i++) {
        const pfi_telemetry_series *s = &tm->series[i];
        pfi_telemetry_kind kind = tm->fields[s->field].kind;
        if (kind != PFI_KIND_POWER_W && kind != PFI_KIND_ENERGY_MJ)
            continue; /* the integrated quantities only: a gap in a mean does no harm */
        double step, longest;
        size_t n = pfi_telemetry_gaps(s, &step, &longest);
        if (n > 0)
            tm_note(tm,
                    "%s: %s: %zu time gap%s longer than %gx the median sampling step "
                    "(%.3g s), longest %.4g s: not integrated across",
                    tm->entities[s->entity].name, tm->fields[s->field].name, n, n == 1 ? "" : "s",
                    PFI_TELEMETRY_GAP_FACTOR, step, longest);
    }
}
