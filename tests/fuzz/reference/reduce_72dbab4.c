/* Reference copy (see reference.h): src/lib/telemetry/reduce.c at 72dbab4. */
#include "fuzz/reference/reference.h"
/*
 * Run reduction: job power on an aligned time grid, energy, per-run telemetry features.
 */
/* (_GNU_SOURCE: defined by the build of the harness) */
#include "pfi/reduce.h"

#include "pfi/featmap.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/memory.h"

#define MAX_BINS 20000000
/* The counter is used when its mean power is within this factor of the measured mean power. */
#define PFI_RED_COUNTER_RATIO 2.0

void pfi_reduce_options_init(pfi_reduce_options *o)
{
    *o = (pfi_reduce_options){.q = PFI_STEADY_DEFAULT_Q};
}

static long pick_power(const pfi_telemetry *tm, const char *want)
{
    if (want != NULL)
        return pfi_telemetry_field_find(tm, want);
    static const char *const pref[] = {"power_avg_w", "power_w", "power_energy_w"};
    for (size_t i = 0; i < 3; i++)
        if (pfi_telemetry_has_field(tm, pref[i]))
            return pfi_telemetry_field_find(tm, pref[i]);
    return -1;
}

/*
 * The median of s's sampling steps in *out (NaN when it has none): positive steps between
 * consecutive samples, never across a break. A step over a missing value is two sampling
 * steps; taking it would stretch the grid until the hole shares a bin with a valid sample.
 */
static pfi_error median_spacing(const pfi_telemetry_series *s, double *out)
{
    *out = NAN;
    if (s == NULL || s->n < 2)
        return PFI_OK;
    size_t n = s->n - 1;
    double *d = pfi_malloc(n * sizeof *d);
    if (d == NULL)
        return PFI_ERR_NOMEM; /* not NaN: the grid would silently fall back to 1 s */
    size_t k = 0;
    for (size_t i = 1; i < s->n; i++)
        if (!s->brk[i] && s->t_s[i] > s->t_s[i - 1])
            d[k++] = s->t_s[i] - s->t_s[i - 1];
    double m = NAN;
    if (k > 0) {
        gsl_sort(d, 1, k);
        m = gsl_stats_median_from_sorted_data(d, 1, k);
    }
    pfi_free(d);
    *out = m;
    return PFI_OK;
}

/*
 * The time grid of the job power (out->align_s, out->align_note), in this order:
 *   1. o->align_s (--align), then the collector's options.interval_s (--interval): given by
 *      the user, used as they are;
 *   2. nominal times without an interval: 1 s, the spacing those times were made with (the
 *      collector noted the assumption);
 *   3. the median sampling step (median_spacing) of the first of the job's GPUs whose power
 *      series has one — gpu0's in the usual case. When an earlier GPU has no two consecutive
 *      samples (a single row, or only holes between them), the step of the next GPU that has
 *      them is the step the data supports, and the note says whose it is: a GPU with one row
 *      must not make the grid 1 s when the others were sampled every 5 s;
 *   4. no GPU has two consecutive samples: nothing to measure; 1 s, said in the note.
 */
static pfi_error grid_step(const pfi_telemetry *tm, const pfi_reduce_options *o, const size_t *gpus,
                           size_t ng, size_t fp, pfi_reduced *out)
{
    double align = o->align_s > 0 ? o->align_s : tm->opt.interval_s;
    if (!(align > 0) && tm->time_nominal)
        align = 1.0;
    size_t g = 0;
    for (; !(align > 0) && g < ng; g++)
        if (median_spacing(pfi_telemetry_series_get(tm, gpus[g], fp), &align) != PFI_OK)
            return PFI_ERR_NOMEM;
    if (!(align > 0)) {
        align = 1.0;
        snprintf(out->align_note, sizeof out->align_note,
                 "no GPU has two consecutive %s samples and no interval was given: grid 1 s "
                 "assumed (--interval or --align sets it)",
                 tm->fields[fp].name);
    } else if (g > 1) {
        snprintf(out->align_note, sizeof out->align_note,
                 "%s has no two consecutive %s samples: grid %.4g s, the median sampling "
                 "step of %s",
                 tm->entities[gpus[0]].name, tm->fields[fp].name, align,
                 tm->entities[gpus[g - 1]].name);
    }
    out->align_s = align;
    return PFI_OK;
}

/* One row of a GPU's power series on the way to the grid: a valid sample or a missing one. */
typedef struct grid_row {
    double t, v;
    unsigned g;     /* index into the job's GPUs */
    unsigned valid; /* 1: v is a sample; 0: a missing value's timestamp */
    size_t i;       /* index in that GPU's valid samples or missing times */
} grid_row;

/* Time order; within one time, by GPU, the valid sample before a missing one, file order. */
static int grid_row_cmp(const void *pa, const void *pb)
{
    const grid_row *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->g != b->g)
        return a->g < b->g ? -1 : 1;
    if (a->valid != b->valid)
        return a->valid > b->valid ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* A duration in the unit a reader thinks in: "3.5 s", "12 min", "9 days", "54.99 years". */
static const char *fmt_duration(char *buf, size_t cap, double s)
{
    if (s < 120)
        snprintf(buf, cap, "%.4g s", s);
    else if (s < 7200)
        snprintf(buf, cap, "%.4g min", s / 60);
    else if (s < 172800)
        snprintf(buf, cap, "%.4g h", s / 3600);
    else if (s < 730 * 86400.0)
        snprintf(buf, cap, "%.4g days", s / 86400);
    else
        snprintf(buf, cap, "%.4g years", s / (365.25 * 86400));
    return buf;
}

/* A sample time as written: a date and time (naive local, as the readers keep it), or
 * seconds when the times are relative to the first sample. */
static const char *fmt_time(char *buf, size_t cap, const pfi_telemetry *tm, double t)
{
    struct tm b;
    time_t tt = (time_t)floor(t);
    if (tm->time_relative || !(fabs(t) < 1e15) || gmtime_r(&tt, &b) == NULL)
        snprintf(buf, cap, "t=%.6g s", t);
    else
        snprintf(buf, cap, "%04d-%02d-%02d %02d:%02d:%02d", b.tm_year + 1900, b.tm_mon + 1,
                 b.tm_mday, b.tm_hour, b.tm_min, b.tm_sec);
    return buf;
}

/*
 * Why the grid is refused (pfi_reduced.grid_error): the span, the step, the points it would
 * need against the limit, and the cause the data shows. r[0..n) sorted by time. The largest
 * step between consecutive rows splits them in two. Nominal times (from 0) beside
 * timestamps make two groups that no step can join: said first. Else, when one side holds
 * at most one row per GPU (one capture loop) and the other side alone fits, that side is a
 * far-off time (an unset clock, a wrong date) and is named — GPU, sample number, time;
 * otherwise the times form two groups or one long span, and a coarser step that would fit
 * is said.
 */
static void grid_limit_note(const pfi_telemetry *tm, const size_t *gpus, size_t ng, size_t fp,
                            const grid_row *r, size_t n, double t0, double tmax, double align,
                            double need, double limit, pfi_reduced *out)
{
    char d1[48], a[80], b[80];
    int len = snprintf(out->grid_error, sizeof out->grid_error,
                       "the samples span %s (%s to %s); at grid step %.4g s that is %.4g grid "
                       "points, over the limit of %.0f for %zu power rows",
                       fmt_duration(d1, sizeof d1, tmax - t0), fmt_time(a, sizeof a, tm, t0),
                       fmt_time(b, sizeof b, tm, tmax), align, need, limit, n);
    if (len < 0 || (size_t)len >= sizeof out->grid_error)
        return;
    char *p = out->grid_error + len;
    size_t cap = sizeof out->grid_error - (size_t)len;
    size_t k = 0; /* the largest step is between r[k-1] and r[k] */
    double dmax = -1;
    for (size_t i = 1; i < n; i++)
        if (r[i].t - r[i - 1].t > dmax) {
            dmax = r[i].t - r[i - 1].t;
            k = i;
        }
    size_t left = k, right = n - k;
    bool lone_left = left <= right;
    size_t m = lone_left ? left : right;
    double rest = lone_left ? r[n - 1].t - r[k].t : r[k - 1].t - r[0].t;
    double step = (tmax - t0) / (limit - 1);
    double mag = pow(10, floor(log10(step)) - 1);
    step = ceil(step / mag) * mag; /* two significant digits, rounded up */
    if (k > 0 && dmax > 0.5 * (tmax - t0) && tm->time_nominal) {
        snprintf(p, cap,
                 ": the times fall in two groups %s apart (%zu rows to %s, %zu from "
                 "%s): nominal times (sample index x interval, from t=0, for a file "
                 "without timestamps) do not mix with timestamps; reduce such files "
                 "on their own",
                 fmt_duration(d1, sizeof d1, dmax), left, fmt_time(a, sizeof a, tm, r[k - 1].t),
                 right, fmt_time(b, sizeof b, tm, r[k].t));
    } else if (k > 0 && m <= ng && rest / align + 1 <= limit) {
        const grid_row *o = lone_left ? &r[0] : &r[n - 1];
        const pfi_telemetry_series *s = pfi_telemetry_series_get(tm, gpus[o->g], fp);
        char sample[96];
        if (o->valid)
            snprintf(sample, sizeof sample, "sample %zu of %zu", o->i + 1, s->n);
        else
            snprintf(sample, sizeof sample, "missing-value row %zu of %zu", o->i + 1, s->n_miss);
        snprintf(p, cap,
                 ": %s's %s %s (%s)%s lies %s %s the other %zu rows: a far-off time "
                 "(a clock not yet set, a wrong date); correct or remove that row",
                 tm->entities[gpus[o->g]].name, tm->fields[fp].name, sample,
                 fmt_time(a, sizeof a, tm, o->t), m > 1 ? " with its loop" : "",
                 fmt_duration(d1, sizeof d1, dmax), lone_left ? "before" : "after", n - m);
    } else if (k > 0 && dmax > 0.5 * (tmax - t0)) {
        snprintf(p, cap,
                 ": the times fall in two groups %s apart (%zu rows to %s, %zu from "
                 "%s); reduce each capture on its own (trim the file), or give "
                 "--align %.2g or coarser",
                 fmt_duration(d1, sizeof d1, dmax), left, fmt_time(a, sizeof a, tm, r[k - 1].t),
                 right, fmt_time(b, sizeof b, tm, r[k].t), step);
    } else {
        snprintf(p, cap, ": give --align %.2g or coarser, or trim the file", step);
    }
}

/* Mean of one field over the job's GPUs (each GPU's mean after warm-up, then averaged). */
static bool field_mean(const pfi_telemetry *tm, size_t f, double t0, double warmup_s, double *out)
{
    double sum = 0;
    size_t ng = 0;
    for (size_t e = 0; e < tm->n_entities; e++) {
        if (!tm->entities[e].is_gpu)
            continue;
        const pfi_telemetry_series *s = pfi_telemetry_series_get(tm, e, f);
        if (s == NULL)
            continue;
        double gs = 0;
        size_t gn = 0;
        for (size_t i = 0; i < s->n; i++) {
            if (s->t_s[i] - t0 < warmup_s)
                continue;
            gs += s->value[i];
            gn++;
        }
        if (gn > 0) {
            sum += gs / (double)gn;
            ng++;
        }
    }
    if (ng == 0)
        return false;
    *out = sum / (double)ng;
    return true;
}

static void add_feature(pfi_reduced *out, const char *name, double v)
{
    if (out->n_features >= PFI_MAX_FEATURES)
        return;
    snprintf(out->feature_name[out->n_features], sizeof out->feature_name[0], "%.63s", name);
    out->feature_value[out->n_features++] = v;
}

/* Appends "; "-separated text to the energy note. */
static void energy_note(pfi_reduced *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void energy_note(pfi_reduced *out, const char *fmt, ...)
{
    size_t len = strlen(out->energy_note), cap = sizeof out->energy_note;
    if (len > 0 && len + 2 < cap) {
        memcpy(out->energy_note + len, "; ", 3);
        len += 2;
    }
    if (len + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->energy_note + len, cap - len, fmt, ap);
    va_end(ap);
}

/* Time span of a set of series (min and max sample time; unsorted after a backwards jump). */
static void span_of(const pfi_telemetry_series *s, double *lo, double *hi)
{
    for (size_t i = 0; s != NULL && i < s->n; i++) {
        if (s->t_s[i] < *lo)
            *lo = s->t_s[i];
        if (s->t_s[i] > *hi)
            *hi = s->t_s[i];
    }
}

/*
 * The counter of one GPU against its measured power over the same time (the mean of the
 * power samples within the counter's first..last sample): true when they agree within
 * PFI_RED_COUNTER_RATIO either way, or when there is nothing to compare with.
 */
static bool counter_plausible(const pfi_telemetry_series *es, const pfi_telemetry_series *ps,
                              double ej, double cov, double *pc, double *pm)
{
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    size_t n = 0;
    span_of(es, &lo, &hi);
    for (size_t i = 0; ps != NULL && i < ps->n; i++)
        if (ps->t_s[i] >= lo && ps->t_s[i] <= hi) {
            sum += ps->value[i];
            n++;
        }
    if (n == 0 || !(cov > 0) || !(sum > 0))
        return true;
    *pc = ej / cov;
    *pm = sum / (double)n;
    return *pc >= *pm / PFI_RED_COUNTER_RATIO && *pc <= *pm * PFI_RED_COUNTER_RATIO;
}

/*
 * Job energy (pfi_reduced.energy_j, _method, _note; flags TIME_GAP, ENERGY_PARTIAL): the
 * counter when every GPU has one that agrees with its measured power, else power trapezoids;
 * unavailable (NaN) when a GPU of the job has nothing to integrate.
 */
static void reduce_energy(const pfi_telemetry *tm, const size_t *gpus, size_t ng, size_t fp,
                          size_t job_gpus, pfi_reduced *out)
{
    long fe = pfi_telemetry_field_find(tm, "energy_mj");
    for (size_t g = 0; g < ng; g++) {
        const pfi_telemetry_series *ps = pfi_telemetry_series_get(tm, gpus[g], fp);
        const pfi_telemetry_series *es =
            fe >= 0 ? pfi_telemetry_series_get(tm, gpus[g], (size_t)fe) : NULL;
        if ((ps != NULL && pfi_telemetry_gaps(ps, NULL, NULL) > 0) ||
            (es != NULL && pfi_telemetry_gaps(es, NULL, NULL) > 0))
            out->flags |= PFI_RED_TIME_GAP;
    }
    if (job_gpus > ng) {
        energy_note(out, "the telemetry has %zu of the job's %zu GPUs", ng, job_gpus);
        return;
    }
    bool derived = strcmp(tm->fields[fp].name, "power_energy_w") == 0;
    /* The counter: every GPU has one with an integrable step, and none disagrees grossly
     * with the power measured beside it. */
    bool counter = fe >= 0;
    for (size_t g = 0; counter && g < ng; g++) {
        const pfi_telemetry_series *es = pfi_telemetry_series_get(tm, gpus[g], (size_t)fe);
        counter = es != NULL && es->n >= 2;
    }
    /* Partial: a GPU whose integrated time falls short of the span of the job's samples by
     * over half a grid step (a hole, a gap, a GPU that started late or was lost). */
    double lo = INFINITY, hi = -INFINITY, least = INFINITY;
    size_t lg = 0;
    for (size_t g = 0; g < ng; g++)
        span_of(pfi_telemetry_series_get(tm, gpus[g], counter ? (size_t)fe : fp), &lo, &hi);
    double ej = 0;
    for (size_t g = 0; counter && g < ng; g++) {
        const pfi_telemetry_series *es = pfi_telemetry_series_get(tm, gpus[g], (size_t)fe);
        double cov = 0, e = pfi_telemetry_counter_delta(es, &cov, NULL) / 1000.0, pc = NAN,
               pm = NAN;
        if (!(cov > 0)) {
            counter = false;
        } else if (!derived && !counter_plausible(es, pfi_telemetry_series_get(tm, gpus[g], fp), e,
                                                  cov, &pc, &pm)) {
            counter = false;
            energy_note(out,
                        "the energy counter disagrees with the measured power (%s: "
                        "%.4g W from the counter, %.4g W measured): not used",
                        tm->entities[gpus[g]].name, pc, pm);
        }
        ej += e;
        if (cov < least) {
            least = cov;
            lg = g;
        }
    }
    if (!counter) {
        ej = 0;
        least = lo = INFINITY;
        hi = -INFINITY;
        for (size_t g = 0; g < ng; g++)
            span_of(pfi_telemetry_series_get(tm, gpus[g], fp), &lo, &hi);
        for (size_t g = 0; g < ng; g++) {
            const pfi_telemetry_series *ps = pfi_telemetry_series_get(tm, gpus[g], fp);
            const char *name = tm->entities[gpus[g]].name;
            double cov = 0;
            if (ps == NULL || ps->n == 0) {
                energy_note(out, "%s has no power samples", name);
                return;
            }
            ej += pfi_telemetry_integrate(ps, &cov);
            if (!(cov > 0)) {
                energy_note(out, "%s has no two consecutive power samples to integrate", name);
                return;
            }
            if (cov < least) {
                least = cov;
                lg = g;
            }
        }
    }
    double tol = out->align_s > 0 ? 0.5 * out->align_s : 0;
    if (hi - lo - least > tol) {
        out->flags |= PFI_RED_ENERGY_PARTIAL;
        energy_note(out, "partial: %s covers %.4g of %.4g s", tm->entities[gpus[lg]].name, least,
                    hi - lo);
    }
    out->energy_j = ej;
    snprintf(out->energy_method, sizeof out->energy_method, "%s",
             counter ? "counter" : "power-trapezoid");
}

/* The job's GPUs (entities that are GPUs) into gpus[], their number returned; the flags the
 * collector's state sets (nominal time, tool errors, a GPU lost, another GPU count than the
 * job's), and out->n_gpus. */
static size_t job_gpus(const pfi_telemetry *tm, const pfi_reduce_options *o, size_t *gpus,
                       pfi_reduced *out)
{
    if (tm->time_nominal)
        out->flags |= PFI_RED_NOMINAL_TIME;
    if (tm->n_tool_errors > 0)
        out->flags |= PFI_RED_TOOL_ERROR;
    size_t ng = 0;
    for (size_t e = 0; e < tm->n_entities; e++) {
        if (!tm->entities[e].is_gpu)
            continue;
        gpus[ng++] = e;
        if (tm->entities[e].lost)
            out->flags |= PFI_RED_GPU_LOST;
    }
    out->n_gpus = ng;
    if (o->gpus > 0 && ng != o->gpus)
        out->flags |= PFI_RED_GPU_COUNT;
    return ng;
}

/* The earliest sample of any series; INFINITY when there is none. */
static double first_sample_time(const pfi_telemetry *tm)
{
    double t0 = INFINITY;
    for (size_t i = 0; i < tm->n_series; i++)
        if (tm->series[i].n > 0 && tm->series[i].t_s[0] < t0)
            t0 = tm->series[i].t_s[0];
    return t0;
}

/* Every row of the power field fp of the job's GPUs, valid or missing (rows of them), in
 * time order (not file order: a backwards clock jump splits a series), to find the capture
 * loops: *r (owned by the caller, pfi_free), *n of them. */
static pfi_error grid_rows(const pfi_telemetry *tm, const size_t *gpus, size_t ng, size_t fp,
                           size_t rows, grid_row **r_out, size_t *n_out)
{
    grid_row *r = pfi_malloc(rows * sizeof *r);
    if (r == NULL)
        return PFI_ERR_NOMEM;
    size_t n = 0;
    for (size_t g = 0; g < ng; g++) {
        const pfi_telemetry_series *s = pfi_telemetry_series_get(tm, gpus[g], fp);
        for (size_t i = 0; s != NULL && i < s->n + s->n_miss; i++) {
            bool valid = i < s->n;
            r[n++] = (grid_row){.t = valid ? s->t_s[i] : s->miss_t[i - s->n],
                                .v = valid ? s->value[i] : NAN,
                                .g = (unsigned)g,
                                .valid = valid,
                                .i = valid ? i : i - s->n};
        }
    }
    qsort(r, n, sizeof *r, grid_row_cmp);
    *r_out = r;
    *n_out = n;
    return PFI_OK;
}

/* The job power's bins: per bin the sum of the GPUs' samples, their count, whether a GPU has
 * a row there (valid or not), and per capture loop its time from t0; stamp and last are the
 * binning's per-GPU scratch (ng each). */
typedef struct power_bins {
    size_t nb;
    bool per_loop;      /* a bin per capture loop (no --align), at lt[bin] */
    double *lt;         /* nb loop times from t0 when per_loop, else NULL */
    double *sum;        /* nb */
    unsigned *cnt;      /* nb */
    unsigned char *row; /* nb */
    size_t *stamp, *last;
} power_bins;

static void power_bins_free(power_bins *b)
{
    pfi_free(b->lt);
    pfi_free(b->sum);
    pfi_free(b->cnt);
    pfi_free(b->row);
    pfi_free(b->stamp);
    pfi_free(b->last);
    *b = (power_bins){0};
}

/* nb bins (and lt when per_loop) and the scratch for ng GPUs; PFI_ERR_NOMEM frees them all. */
static pfi_error power_bins_alloc(power_bins *b, size_t nb, bool per_loop, size_t ng)
{
    *b = (power_bins){.nb = nb, .per_loop = per_loop};
    b->lt = per_loop ? pfi_malloc(nb * sizeof *b->lt) : NULL;
    if (per_loop && b->lt == NULL)
        return PFI_ERR_NOMEM;
    b->sum = pfi_calloc(nb, sizeof *b->sum);
    b->cnt = pfi_calloc(nb, sizeof *b->cnt);
    b->row = pfi_calloc(nb, 1);
    b->stamp = pfi_malloc(ng * sizeof *b->stamp);
    b->last = pfi_malloc(ng * sizeof *b->last);
    if (b->sum == NULL || b->cnt == NULL || b->row == NULL || b->stamp == NULL || b->last == NULL) {
        power_bins_free(b);
        return PFI_ERR_NOMEM;
    }
    return PFI_OK;
}

/*
 * Capture loops: in time order, a row joins the loop of the row before it when it is within
 * half a grid step of the loop's first row and its GPU has no row in that loop yet; else it
 * starts the next loop. A loop goes whole to the bin of its first row, so GPUs read a few ms
 * apart never straddle a bin edge. Without --align each loop is a bin of its own (at its
 * first row's time); with it, loops are binned on that grid. r[0..n) sorted (grid_rows).
 */
static void bin_capture_loops(const grid_row *r, size_t n, size_t ng, double t0, double align,
                              power_bins *b)
{
    for (size_t g = 0; g < ng; g++)
        b->stamp[g] = b->last[g] = SIZE_MAX;
    size_t loop = 0, bin = 0;
    double first = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (!(r[i].t - first <= 0.5 * align) || b->stamp[r[i].g] == loop) {
            loop++;
            first = r[i].t;
            if (b->per_loop) {
                bin = loop - 1;
                b->lt[bin] = r[i].t - t0;
            } else {
                bin = (size_t)floor((r[i].t - t0) / align + 0.5);
                if (bin >= b->nb)
                    bin = b->nb - 1;
            }
        }
        b->stamp[r[i].g] = loop;
        b->row[bin] = 1;
        /* One sample per GPU per bin: the first valid one. A missing value's bin lacks this
         * GPU unless the GPU has a valid sample there too. */
        if (!r[i].valid || b->last[r[i].g] == bin)
            continue;
        b->last[r[i].g] = bin;
        b->sum[bin] += r[i].v;
        b->cnt[bin]++;
    }
}

/* The job power's steady state (out->power, pfi_steady_state) over the complete bins (every
 * GPU has a sample; the others counted in out->n_incomplete, flag INCOMPLETE); no complete
 * bin flags NO_POWER. */
static pfi_error steady_power(const power_bins *b, size_t ng, double align,
                              const pfi_reduce_options *o, pfi_reduced *out)
{
    size_t nb = b->nb;
    double *tv = pfi_malloc(nb * sizeof *tv), *pv = pfi_malloc(nb * sizeof *pv);
    double *work = pfi_malloc(nb * sizeof *work);
    pfi_error e = PFI_OK;
    if (tv == NULL || pv == NULL || work == NULL) {
        e = PFI_ERR_NOMEM;
    } else {
        size_t k = 0;
        for (size_t i = 0; i < nb; i++) {
            if (!b->row[i])
                continue;
            out->n_bins++;
            if (b->cnt[i] < ng) {
                out->n_incomplete++;
                continue;
            }
            out->n_complete++;
            tv[k] = b->per_loop ? b->lt[i] : (double)i * align;
            pv[k++] = b->sum[i];
        }
        e = pfi_steady_state(tv, pv, NULL, k, o->warmup_s, o->q, work, &out->power);
        if (e == PFI_ERR_EMPTY) {
            out->flags |= PFI_RED_NO_POWER;
            e = PFI_OK;
        }
    }
    if (out->n_incomplete > 0)
        out->flags |= PFI_RED_INCOMPLETE;
    pfi_free(tv);
    pfi_free(pv);
    pfi_free(work);
    return e;
}

/*
 * The job power of field fp (out->power_field, align_s, power, the bin counts): the grid
 * step (grid_step), every row in time order, the grid bounded (a huge time span with few
 * samples is refused, not allocated, and the reason said: grid_error, PFI_ERR_LIMIT), the
 * capture loops binned, the steady state of the complete bins. *t0 moves to the earliest
 * power row when that is earlier.
 */
static pfi_error reduce_job_power(const pfi_telemetry *tm, const pfi_reduce_options *o,
                                  const size_t *gpus, size_t ng, size_t fp, double *t0,
                                  pfi_reduced *out)
{
    snprintf(out->power_field, sizeof out->power_field, "%s", tm->fields[fp].name);
    if (grid_step(tm, o, gpus, ng, fp, out) != PFI_OK)
        return PFI_ERR_NOMEM;
    double align = out->align_s;
    /* The grid spans every row of the power field, valid or not: a missing value at the
     * start or end is a timestamp too. */
    size_t total = 0, rows = 0;
    for (size_t g = 0; g < ng; g++) {
        const pfi_telemetry_series *s = pfi_telemetry_series_get(tm, gpus[g], fp);
        if (s != NULL) {
            total += s->n;
            rows += s->n + s->n_miss;
        }
    }
    if (total == 0) {
        out->flags |= PFI_RED_NO_POWER;
        return PFI_OK;
    }
    grid_row *r;
    size_t n;
    if (grid_rows(tm, gpus, ng, fp, rows, &r, &n) != PFI_OK)
        return PFI_ERR_NOMEM;
    if (r[0].t < *t0)
        *t0 = r[0].t;
    double tmax = r[n - 1].t;
    double nbd = floor((tmax - *t0) / align + 0.5) + 1;
    double cap_bins = (double)rows * 16 + 1048576;
    double limit = cap_bins < MAX_BINS - 1 ? cap_bins : MAX_BINS - 1;
    if (!(nbd >= 1 && nbd <= limit)) {
        grid_limit_note(tm, gpus, ng, fp, r, n, *t0, tmax, align, nbd, limit, out);
        pfi_free(r);
        return PFI_ERR_LIMIT;
    }
    bool per_loop = !(o->align_s > 0);
    power_bins b;
    if (power_bins_alloc(&b, per_loop ? n : (size_t)nbd, per_loop, ng) != PFI_OK) {
        pfi_free(r);
        return PFI_ERR_NOMEM;
    }
    bin_capture_loops(r, n, ng, *t0, align, &b);
    pfi_free(r);
    pfi_error e = steady_power(&b, ng, align, o, out);
    power_bins_free(&b);
    return e;
}

/* The features (out->feature_*): every field's mean over the job's GPUs after warm-up
 * (field_mean; energy counters left out), then each product "name=a*b" of o->products
 * (PFI_DEFAULT_PRODUCTS when NULL) of two fields that have a mean, as fractions.
 * PFI_ERR_INVALID_ARGUMENT for a product without '=' and '*' after it. */
static pfi_error reduce_features(const pfi_telemetry *tm, const pfi_reduce_options *o, double t0,
                                 pfi_reduced *out)
{
    for (size_t f = 0; f < tm->n_fields; f++) {
        double m;
        if (tm->fields[f].kind == PFI_KIND_ENERGY_MJ)
            continue;
        if (field_mean(tm, f, t0, o->warmup_s, &m))
            add_feature(out, tm->fields[f].name, m);
    }
    const char *prod = o->products ? o->products : PFI_DEFAULT_PRODUCTS;
    while (*prod) {
        size_t len = strcspn(prod, ",");
        char spec[192];
        snprintf(spec, sizeof spec, "%.*s", (int)(len < 190 ? len : 190), prod);
        prod += len + (prod[len] == ',');
        char *eq = strchr(spec, '='), *star = strchr(spec, '*');
        if (eq == NULL || star == NULL || star < eq)
            return PFI_ERR_INVALID_ARGUMENT;
        *eq = *star = '\0';
        long fa = pfi_telemetry_field_find(tm, eq + 1), fb = pfi_telemetry_field_find(tm, star + 1);
        double a, b;
        if (fa < 0 || fb < 0 || !field_mean(tm, (size_t)fa, t0, o->warmup_s, &a) ||
            !field_mean(tm, (size_t)fb, t0, o->warmup_s, &b))
            continue;
        /* Products are of fractions: the percent conversion of the feature table. */
        a *= pfi_featmap_fraction_scale(tm->fields[fa].kind);
        b *= pfi_featmap_fraction_scale(tm->fields[fb].kind);
        add_feature(out, spec, a * b);
    }
    return PFI_OK;
}

pfi_error pfi_reduce_power(const pfi_telemetry *tm, const pfi_reduce_options *o, pfi_reduced *out)
{
    memset(out, 0, sizeof *out);
    out->power.mean = out->power.se = NAN;
    out->energy_j = NAN;
    out->align_s = NAN;
    if (!(o->q > 0 && o->q <= 1) || !(o->warmup_s >= 0) || !(o->align_s >= 0))
        return PFI_ERR_INVALID_ARGUMENT;
    size_t gpus[PFI_TELEMETRY_MAX_ENTITIES];
    size_t ng = job_gpus(tm, o, gpus, out);
    double t0 = first_sample_time(tm);
    long fp = pick_power(tm, o->power_field);
    if (fp < 0 || ng == 0) {
        out->flags |= PFI_RED_NO_POWER;
    } else {
        pfi_error e = reduce_job_power(tm, o, gpus, ng, (size_t)fp, &t0, out);
        if (e != PFI_OK)
            return e;
        reduce_energy(tm, gpus, ng, (size_t)fp, o->gpus, out);
    }
    return reduce_features(tm, o, isfinite(t0) ? t0 : 0, out);
}
