/*
 * Run reduction: job power on an aligned time grid, energy, per-run telemetry features.
 */
#define _GNU_SOURCE /* memmem, gmtime_r */
#include "pfi/reduce.h"

#include "pfi/featmap.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/memory.h"
#include "core/topq.h"
#include "telemetry/internal.h"

#define MAX_BINS 20000000
/* The counter is used when its mean power is within this factor of the measured mean power. */
#define PFI_RED_COUNTER_RATIO 2.0

/*
 * pfi_reduce_stream's results for pfi_reduce_power (tm->stream_red): the options and the job's
 * GPUs they were made for, the job power's part of pfi_reduced (jp) and t_0 after it, and per
 * job GPU g the sums reduce_energy takes from the stored series: the counter's increase (mJ)
 * and the time it covers (pfi_telemetry_counter_delta), the trapezoids and their time
 * (pfi_telemetry_integrate), the power samples within the counter's span (counter_plausible).
 */
typedef struct tm_stream_red {
    pfi_reduce_options o;
    size_t ng;
    size_t *gpus;
    long fp;
    bool job;  /* jp holds the job power (a power field, GPUs, samples) */
    double t0; /* the reduction's t_0 after the job power */
    pfi_reduced jp;
    pfi_error jp_err; /* the steady state's error, returned by pfi_reduce_power */
    double *csum, *ccov, *pi, *picov, *psum;
    size_t *pn;
} tm_stream_red;

void tm_stream_red_free(tm_stream_red *r)
{
    if (r == NULL)
        return;
    pfi_free(r->gpus);
    pfi_free(r->csum);
    pfi_free(r->ccov);
    pfi_free(r->pi);
    pfi_free(r->picov);
    pfi_free(r->psum);
    pfi_free(r->pn);
    pfi_free(r);
}

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
 * The median of k steps is the middle one, or the mean of the two middle ones for even k
 * (gsl_stats_median_from_sorted_data's definition), found by selection, not a sort.
 */
static pfi_error median_spacing(const pfi_telemetry_series *s, double *out)
{
    *out = NAN;
    if (s == NULL || tm_series_len(s) < 2)
        return PFI_OK;
    uint64_t lo, hi;
    size_t k = tm_clean_steps(s, &lo, &hi);
    if (k == 0)
        return PFI_OK;
    double a = tm_clean_step_select(s, (k - 1) / 2, lo, hi);
    *out = k % 2 ? a : (a + tm_clean_step_select(s, k / 2, lo, hi)) / 2.0;
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
    unsigned excl;  /* PFI_RED_CAP_LOST / PFI_RED_THROTTLED: the sample is not steady state */
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
        if (s->counted && warmup_s > 0 && tm->warm_s == warmup_s) {
            gs = s->wsum; /* the second read's, from the same t0 (pfi_reduce_power checks) */
            gn = s->wn;
        } else if (s->counted) { /* summed in sample order as it came: the loop's sum */
            gs = s->sum;
            gn = s->n_valid;
        }
        for (size_t i = 0; !s->counted && i < s->n; i++) {
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
    if (s != NULL && s->stream != NULL && s->n_valid > 0) { /* min and max kept as they came */
        *lo = s->stream->t_min < *lo ? s->stream->t_min : *lo;
        *hi = s->stream->t_max > *hi ? s->stream->t_max : *hi;
    }
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
                              const tm_stream_red *sr, size_t g, double ej, double cov, double *pc,
                              double *pm)
{
    double lo = INFINITY, hi = -INFINITY, sum = sr != NULL ? sr->psum[g] : 0;
    size_t n = sr != NULL ? sr->pn[g] : 0;
    span_of(es, &lo, &hi);
    for (size_t i = 0; sr == NULL && ps != NULL && i < ps->n; i++)
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
static void reduce_energy(const pfi_telemetry *tm, const tm_stream_red *sr, const size_t *gpus,
                          size_t ng, size_t fp, size_t job_gpus, pfi_reduced *out)
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
        counter = es != NULL && tm_series_len(es) >= 2;
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
        double cov = sr != NULL ? sr->ccov[g] : 0, pc = NAN, pm = NAN,
               e = (sr != NULL ? sr->csum[g] : pfi_telemetry_counter_delta(es, &cov, NULL)) /
                   1000.0;
        if (!(cov > 0)) {
            counter = false;
        } else if (!derived && !counter_plausible(es, pfi_telemetry_series_get(tm, gpus[g], fp), sr,
                                                  g, e, cov, &pc, &pm)) {
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
            if (ps == NULL || tm_series_len(ps) == 0) {
                energy_note(out, "%s has no power samples", name);
                return;
            }
            if (sr != NULL) {
                ej += sr->pi[g];
                cov = sr->picov[g];
            } else {
                ej += pfi_telemetry_integrate(ps, &cov);
            }
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
        if (tm->series[i].counted ? tm->series[i].n_valid > 0 && tm->series[i].t_first < t0
                                  : tm->series[i].n > 0 && tm->series[i].t_s[0] < t0)
            t0 = tm->series[i].counted ? tm->series[i].t_first : tm->series[i].t_s[0];
    return t0;
}

/*
 * Why GPU e's power sample at t is not steady state at the run's cap (DESIGN §9): the
 * enforced limit (enforced_limit_w, else power_limit_w) at t — its last sample at or before
 * t — differs from the cap (o->cap_w, else the GPU's first limit sample) by more than
 * max(1 W, 0.5 %): PFI_RED_CAP_LOST; its clock event reasons (DCGM 112, NVML
 * nvmlClocksEventReasons) at t hold a reason other than the software power cap, idle or the
 * application clocks (PFI_RED_THROTTLE_MASK: HW slowdown, sync boost, SW / HW thermal, HW
 * power brake): PFI_RED_THROTTLED. 0 when the telemetry has neither field.
 */
typedef struct excl_series {
    const pfi_telemetry_series *limit, *reasons; /* NULL: the GPU has none */
} excl_series;

static excl_series excl_series_of(const pfi_telemetry *tm, size_t e)
{
    long lf = pfi_telemetry_field_find(tm, "enforced_limit_w");
    const pfi_telemetry_series *ls = lf >= 0 ? pfi_telemetry_series_get(tm, e, (size_t)lf) : NULL;
    if (ls == NULL || ls->n == 0) {
        lf = pfi_telemetry_field_find(tm, "power_limit_w");
        ls = lf >= 0 ? pfi_telemetry_series_get(tm, e, (size_t)lf) : NULL;
    }
    long rf = pfi_telemetry_field_find(tm, "clock_event_reasons");
    return (excl_series){ls, rf >= 0 ? pfi_telemetry_series_get(tm, e, (size_t)rf) : NULL};
}

/* The last sample of s at or before t + 1e-6 (times ascending): its index; s->n when none. */
static inline __attribute__((always_inline)) size_t excl_at(const pfi_telemetry_series *s, double t)
{
    if (s->n == 0 || !(s->t_s[0] <= t + 1e-6))
        return s->n;
    size_t lo = 0, hi = s->n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->t_s[mid] <= t + 1e-6)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static inline __attribute__((always_inline)) unsigned
sample_excluded(const excl_series *xs, const pfi_reduce_options *o, double t)
{
    unsigned x = 0;
    const pfi_telemetry_series *s = xs->limit;
    size_t i;
    if (s != NULL && (i = excl_at(s, t)) < s->n) {
        double cap = o->cap_w > 0 ? o->cap_w : s->value[0];
        double tol = cap * 0.005 > 1.0 ? cap * 0.005 : 1.0;
        if (fabs(s->value[i] - cap) > tol)
            x |= PFI_RED_CAP_LOST;
    }
    s = xs->reasons;
    if (s != NULL && (i = excl_at(s, t)) < s->n) {
        double v = s->value[i];
        if (v >= 0 && v < 18446744073709551616.0 &&
            ((unsigned long long)v & PFI_RED_THROTTLE_MASK) != 0)
            x |= PFI_RED_THROTTLED;
    }
    return x;
}

/* Every row of the power field fp of the job's GPUs, valid or missing (rows of them), in
 * time order (not file order: a backwards clock jump splits a series), to find the capture
 * loops: *r (owned by the caller, pfi_free), *n of them. */
static pfi_error grid_rows(const pfi_telemetry *tm, const pfi_reduce_options *o, const size_t *gpus,
                           size_t ng, size_t fp, size_t rows, grid_row **r_out, size_t *n_out)
{
    grid_row *r = pfi_malloc(rows * sizeof *r);
    if (r == NULL)
        return PFI_ERR_NOMEM;
    size_t n = 0;
    for (size_t g = 0; g < ng; g++) {
        const pfi_telemetry_series *s = pfi_telemetry_series_get(tm, gpus[g], fp);
        excl_series xs = excl_series_of(tm, gpus[g]);
        for (size_t i = 0; s != NULL && i < s->n + s->n_miss; i++) {
            bool valid = i < s->n;
            r[n++] = (grid_row){.t = valid ? s->t_s[i] : s->miss_t[i - s->n],
                                .v = valid ? s->value[i] : NAN,
                                .g = (unsigned)g,
                                .valid = valid,
                                .i = valid ? i : i - s->n,
                                .excl = valid ? sample_excluded(&xs, o, s->t_s[i]) : 0};
        }
    }
    qsort(r, n, sizeof *r, grid_row_cmp);
    *r_out = r;
    *n_out = n;
    return PFI_OK;
}

/*
 * The rows of the job's GPUs in time order without sorting them. Each GPU's valid samples and
 * its missing-value times are runs in file order; when every run is in time order (no
 * backward clock jump, no NaN time: checked), merging the 2 x ng runs by grid_row_cmp's key
 * (time, GPU, valid before missing, index: unique per row) gives exactly the order qsort
 * gives, in O(rows log ng) and no memory per row. Otherwise the rows are sorted as before
 * (grid_rows) and read from that array.
 */
typedef struct row_run {
    const double *t, *v; /* v NULL: a run of missing-value times */
    size_t n, i;
    unsigned g;
    excl_series xs; /* the GPU's limit and reasons series (sample_excluded) */
} row_run;

/* A run in the merge's heap: its next row's time and rank (GPU, valid before missing). */
typedef struct heap_item {
    double t;
    size_t rank, run;
} heap_item;

typedef struct row_merge {
    const pfi_reduce_options *o; /* the run's cap (sample_excluded) */
    row_run *run;                /* the runs that have rows */
    heap_item *heap;             /* a binary min-heap of the runs, by their next row */
    size_t nh;
    grid_row *sorted;     /* the fallback: every row, sorted (NULL when merging) */
    size_t n_sorted, pos; /* its rows, the next one */
    double t_min, t_max;  /* the earliest and latest row */
} row_merge;

static void row_merge_free(row_merge *m)
{
    pfi_free(m->run);
    pfi_free(m->heap);
    pfi_free(m->sorted);
    *m = (row_merge){0};
}

/* grid_row_cmp's order on the next rows of two runs: by time, then by rank. Two runs never
 * tie on both (one run per GPU and kind), and inside a run the index grows with the time. */
static bool item_before(const heap_item *a, const heap_item *b)
{
    return a->t < b->t || (a->t == b->t && a->rank < b->rank);
}

static void heap_down(row_merge *m, size_t k)
{
    heap_item x = m->heap[k];
    for (;;) {
        size_t l = 2 * k + 1, best = l;
        if (l >= m->nh)
            break;
        if (l + 1 < m->nh && item_before(&m->heap[l + 1], &m->heap[l]))
            best = l + 1;
        if (!item_before(&m->heap[best], &x))
            break;
        m->heap[k] = m->heap[best];
        k = best;
    }
    m->heap[k] = x;
}

/* A run in time order, no time NaN. */
static bool run_sorted(const double *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (isnan(t[i]) || (i > 0 && t[i] < t[i - 1]))
            return false;
    return true;
}

/* The merge of field fp's rows of the job's GPUs (rows of them, at least one). */
static pfi_error row_merge_init(row_merge *m, const pfi_telemetry *tm, const pfi_reduce_options *o,
                                const size_t *gpus, size_t ng, size_t fp, size_t rows)
{
    *m = (row_merge){.o = o, .t_min = INFINITY, .t_max = -INFINITY};
    m->run = pfi_malloc(2 * ng * sizeof *m->run);
    m->heap = pfi_malloc(2 * ng * sizeof *m->heap);
    if (m->run == NULL || m->heap == NULL) {
        row_merge_free(m);
        return PFI_ERR_NOMEM;
    }
    bool sorted = true;
    size_t nr = 0;
    for (size_t g = 0; g < ng; g++) {
        const pfi_telemetry_series *s = pfi_telemetry_series_get(tm, gpus[g], fp);
        if (s == NULL)
            continue;
        if (s->n > 0)
            m->run[nr++] = (row_run){.t = s->t_s,
                                     .v = s->value,
                                     .n = s->n,
                                     .g = (unsigned)g,
                                     .xs = excl_series_of(tm, gpus[g])};
        if (s->n_miss > 0)
            m->run[nr++] = (row_run){.t = s->miss_t, .n = s->n_miss, .g = (unsigned)g};
    }
    for (size_t k = 0; k < nr && sorted; k++) {
        sorted = run_sorted(m->run[k].t, m->run[k].n);
        if (m->run[k].t[0] < m->t_min)
            m->t_min = m->run[k].t[0];
        if (m->run[k].t[m->run[k].n - 1] > m->t_max)
            m->t_max = m->run[k].t[m->run[k].n - 1];
    }
    if (!sorted) {
        if (grid_rows(tm, o, gpus, ng, fp, rows, &m->sorted, &m->n_sorted) != PFI_OK) {
            row_merge_free(m);
            return PFI_ERR_NOMEM;
        }
        m->t_min = m->sorted[0].t;
        m->t_max = m->sorted[m->n_sorted - 1].t;
        return PFI_OK;
    }
    for (size_t k = 0; k < nr; k++)
        m->heap[k] = (heap_item){
            .t = m->run[k].t[0], .rank = 2 * (size_t)m->run[k].g + (m->run[k].v == NULL), .run = k};
    m->nh = nr;
    for (size_t k = nr / 2; k-- > 0;)
        heap_down(m, k);
    return PFI_OK;
}

/* The next row in time order into *r; false after the last. */
static bool row_merge_next(row_merge *m, grid_row *r)
{
    if (m->sorted != NULL) {
        if (m->pos == m->n_sorted)
            return false;
        *r = m->sorted[m->pos++];
        return true;
    }
    if (m->nh == 0)
        return false;
    row_run *u = &m->run[m->heap[0].run];
    *r = (grid_row){.t = u->t[u->i],
                    .v = u->v ? u->v[u->i] : NAN,
                    .g = u->g,
                    .valid = u->v != NULL,
                    .i = u->i,
                    .excl = u->v ? sample_excluded(&u->xs, m->o, u->t[u->i]) : 0};
    if (++u->i == u->n)
        m->heap[0] = m->heap[--m->nh];
    else
        m->heap[0].t = u->t[u->i];
    if (m->nh > 1)
        heap_down(m, 0);
    return true;
}

/*
 * The job power's bins as they are made, in time order: the bin being filled (its sum of
 * the GPUs' samples, their count, its time from t0) and every complete bin so far (every GPU
 * has a sample), into the top-q summary top (pfi_topq: each distinct sum with its count, its
 * lower values folded away past max_distinct; exact whatever the order, so the stored and
 * streamed reads give the same bits). The warm-up is applied as the bins come (their times
 * ascend): a bin less than the warm-up after the first kept bin is counted, not summarised.
 * stamp and last are the binning's per-GPU scratch (ng each).
 */
typedef struct power_bins {
    size_t ng, nb; /* GPUs; the grid's bins (with --align; bins past the end go to the last) */
    bool per_loop; /* a bin per capture loop (no --align), at its first row's time */
    double warmup; /* the warm-up, s (0: none) */
    double t0, align;
    size_t loop, bin;       /* capture loops so far, the bin being filled */
    double first;           /* time of the current loop's first row */
    double sum, bt;         /* the bin being filled: its sum, its time from t0 */
    double last_complete_t; /* time from t0 of the last complete bin, excluded or not */
    unsigned cnt;
    unsigned excl;   /* the bin being filled: PFI_RED_CAP_LOST / _THROTTLED of its samples */
    pfi_topq top;    /* the kept bins' sums after the warm-up */
    size_t k;        /* complete bins kept (not excluded), warm-up included */
    size_t n_warmup; /* of them, in the warm-up */
    double t_first;  /* time of the first kept bin */
    size_t *stamp, *last;
    bool track;       /* keep the loop rule's decisions on the time (a guessed align) */
    double join_max;  /* the largest row-to-loop distance that joined the loop */
    double split_min; /* the smallest that started a new one */
} power_bins;

/* Distinct bin sums a streamed read keeps (pfi_topq's max_distinct: 4 MiB at most); the
 * stored read keeps every one. */
#define STREAM_TOPQ_DISTINCT ((size_t)1 << 17)

static void power_bins_free(power_bins *b)
{
    pfi_topq_free(&b->top);
    pfi_free(b->stamp);
    pfi_free(b->last);
    *b = (power_bins){0};
}

/* max_distinct: pfi_topq's (SIZE_MAX for the stored read, STREAM_TOPQ_DISTINCT streamed). */
static pfi_error power_bins_init(power_bins *b, size_t ng, size_t nb, bool per_loop, double warmup,
                                 double t0, double align, size_t max_distinct)
{
    *b = (power_bins){.ng = ng,
                      .nb = nb,
                      .per_loop = per_loop,
                      .warmup = warmup > 0 ? warmup : 0,
                      .t0 = t0,
                      .align = align,
                      .first = -INFINITY};
    b->stamp = pfi_malloc(ng * sizeof *b->stamp);
    b->last = pfi_malloc(ng * sizeof *b->last);
    if (b->stamp == NULL || b->last == NULL || pfi_topq_init(&b->top, max_distinct) != PFI_OK) {
        power_bins_free(b);
        return PFI_ERR_NOMEM;
    }
    for (size_t g = 0; g < ng; g++)
        b->stamp[g] = b->last[g] = SIZE_MAX;
    return PFI_OK;
}

/* The bin being filled is done: counted (out->n_bins, n_incomplete, n_complete) and, when
 * complete, kept. */
static pfi_error power_bins_close(power_bins *b, pfi_reduced *out)
{
    out->n_bins++;
    if (b->cnt < b->ng) {
        out->n_incomplete++;
        return PFI_OK;
    }
    out->n_complete++;
    b->last_complete_t = b->bt;
    if (b->excl) { /* the cap did not hold, or something else throttled: left out */
        out->n_cap_lost += (b->excl & PFI_RED_CAP_LOST) != 0;
        out->n_throttled += (b->excl & PFI_RED_THROTTLED) != 0;
        out->n_excluded++;
        out->flags |= b->excl;
        return PFI_OK;
    }
    /* pfi_steady_state's warm-up: the time from the first kept bin's (times ascend). */
    if (b->k++ == 0)
        b->t_first = b->bt;
    if (b->warmup > 0 && b->bt - b->t_first < b->warmup) {
        b->n_warmup++;
        return PFI_OK;
    }
    return pfi_topq_add(&b->top, b->sum);
}

/*
 * Capture loops: in time order, a row joins the loop of the row before it when it is within
 * half a grid step of the loop's first row and its GPU has no row in that loop yet; else it
 * starts the next loop. A loop goes whole to the bin of its first row, so GPUs read a few ms
 * apart never straddle a bin edge. Without --align each loop is a bin of its own (at its
 * first row's time); with it, loops are binned on that grid (bin numbers never decrease in
 * time order, so a bin is done when the next one starts). One row r, the next in time order.
 */
static inline __attribute__((always_inline)) pfi_error
power_bins_add(power_bins *b, const grid_row *r, pfi_reduced *out)
{
    if (b->track && b->first != -INFINITY) {
        double x = r->t - b->first;
        if (!(x <= 0.5 * b->align))
            b->split_min = x < b->split_min ? x : b->split_min;
        else
            b->join_max = x > b->join_max ? x : b->join_max;
    }
    if (!(r->t - b->first <= 0.5 * b->align) || b->stamp[r->g] == b->loop) {
        b->loop++;
        b->first = r->t;
        size_t bin;
        if (b->per_loop) {
            bin = b->loop - 1;
        } else {
            bin = (size_t)floor((r->t - b->t0) / b->align + 0.5);
            if (bin >= b->nb)
                bin = b->nb - 1;
        }
        if (b->loop == 1 || bin != b->bin) {
            if (b->loop > 1 && power_bins_close(b, out) != PFI_OK)
                return PFI_ERR_NOMEM;
            b->bin = bin;
            b->sum = 0;
            b->cnt = 0;
            b->excl = 0;
            b->bt = b->per_loop ? r->t - b->t0 : (double)bin * b->align;
        }
    }
    b->stamp[r->g] = b->loop;
    /* One sample per GPU per bin: the first valid one. A missing value's bin lacks this
     * GPU unless the GPU has a valid sample there too. */
    if (!r->valid || b->last[r->g] == b->bin)
        return PFI_OK;
    b->last[r->g] = b->bin;
    b->excl |= r->excl;
    b->sum += r->v;
    b->cnt++;
    return PFI_OK;
}

/* The job power's steady state (out->power: pfi_steady_state's result, from the bins'
 * summary) over the complete bins (the others counted in out->n_incomplete, flag
 * INCOMPLETE); no complete bin flags NO_POWER. *inexact (may be NULL: never, the stored
 * read's summary keeps every value) when the summary folded away values the top q needed. */
static pfi_error steady_power(power_bins *b, const pfi_reduce_options *o, pfi_reduced *out,
                              bool *inexact)
{
    pfi_error e = PFI_OK;
    out->power = (pfi_steady){.mean = NAN, .se = NAN};
    if (!(o->q > 0 && o->q <= 1) || !(o->warmup_s >= 0)) {
        e = PFI_ERR_INVALID_ARGUMENT; /* as pfi_steady_state: no counts */
    } else {
        out->power.n_warmup = b->n_warmup;
        out->power.n_missing = (size_t)b->top.n_miss;
        out->power.n_valid = (size_t)b->top.n;
    }
    if (e != PFI_OK) {
    } else if (b->top.n == 0) {
        e = PFI_ERR_EMPTY;
    } else {
        bool exact;
        double mean, se;
        size_t m;
        e = pfi_topq_result(&b->top, o->q, &m, &mean, &se, &exact);
        if (e != PFI_OK)
            return e;
        if (!exact) {
            if (inexact != NULL)
                *inexact = true;
            return PFI_OK;
        }
        out->power.m = m;
        out->power.mean = mean;
        if (m >= 2)
            out->power.se = pfi_se_rounded(se, mean);
    }
    /* Too few timestamps left where the cap held: no steady state at this cap. A warm-up
     * that drops every complete timestamp, excluded or not, is no power (the warm-up's
     * fault, said as such), never cap-short. */
    bool warmup_all = o->warmup_s > 0 && out->n_complete > 0 && b->last_complete_t < o->warmup_s;
    if (out->n_excluded > 0 && !warmup_all && (e == PFI_ERR_EMPTY || 2 * b->k < out->n_complete)) {
        out->flags |= PFI_RED_CAP_SHORT;
        out->power.mean = out->power.se = NAN;
        e = PFI_OK;
    }
    if (e == PFI_ERR_EMPTY) {
        out->flags |= PFI_RED_NO_POWER;
        e = PFI_OK;
    }
    if (out->n_incomplete > 0)
        out->flags |= PFI_RED_INCOMPLETE;
    return e;
}

/*
 * The job power of field fp (out->power_field, align_s, power, the bin counts): the grid
 * step (grid_step), every row in time order (row_merge), the grid bounded (a huge time span
 * with few samples is refused, not allocated, and the reason said: grid_error,
 * PFI_ERR_LIMIT), the capture loops binned as they come, the steady state of the complete
 * bins. *t0 moves to the earliest power row when that is earlier.
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
    row_merge m;
    if (row_merge_init(&m, tm, o, gpus, ng, fp, rows) != PFI_OK)
        return PFI_ERR_NOMEM;
    if (m.t_min < *t0)
        *t0 = m.t_min;
    double tmax = m.t_max;
    double nbd = floor((tmax - *t0) / align + 0.5) + 1;
    double cap_bins = (double)rows * 16 + 1048576;
    double limit = cap_bins < MAX_BINS - 1 ? cap_bins : MAX_BINS - 1;
    if (!(nbd >= 1 && nbd <= limit)) {
        grid_row *r = m.sorted;
        size_t n = m.n_sorted;
        m.sorted = NULL;
        pfi_error e = r != NULL ? PFI_OK : grid_rows(tm, o, gpus, ng, fp, rows, &r, &n);
        if (e == PFI_OK)
            grid_limit_note(tm, gpus, ng, fp, r, n, *t0, tmax, align, nbd, limit, out);
        pfi_free(r);
        row_merge_free(&m);
        return e == PFI_OK ? PFI_ERR_LIMIT : e;
    }
    bool per_loop = !(o->align_s > 0);
    power_bins b;
    if (power_bins_init(&b, ng, per_loop ? 0 : (size_t)nbd, per_loop, o->warmup_s, *t0, align,
                        SIZE_MAX) != PFI_OK) {
        row_merge_free(&m);
        return PFI_ERR_NOMEM;
    }
    pfi_error e = PFI_OK;
    grid_row r;
    while (e == PFI_OK && row_merge_next(&m, &r))
        e = power_bins_add(&b, &r, out);
    row_merge_free(&m);
    if (e == PFI_OK)
        e = power_bins_close(&b, out); /* the last bin (there is a row: total > 0) */
    if (e == PFI_OK)
        e = steady_power(&b, o, out, NULL);
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

/*
 * options.stream_power's second read (pfi_reduce_stream). The rows of the job's GPUs' power
 * series reach the binning in the order row_merge gives: each GPU's rows come in strictly
 * increasing time (pass 1 checked it), so the merge by (time, GPU) of the GPUs' queues is
 * that order; a row leaves when every GPU still to send rows has sent one at or after its
 * time (lower bound: the GPU's last row). The queues hold what waits: a few capture loops
 * normally; STREAM_WINDOW rows at most (a GPU silent for long), else counted_inexact.
 */
#define STREAM_WINDOW ((size_t)1 << 20)

typedef struct stream_row {
    double t, v;
    bool valid;
} stream_row;

typedef struct stream_queue {
    stream_row *r; /* a ring of cap rows, n from head */
    size_t cap, head, n;
    size_t pushed, expected; /* rows so far, rows pass 1 counted */
} stream_queue;

/* A row of the in-order merge (stream_pass.fifo): a row and its GPU. */
typedef struct stream_frow {
    double t, v;
    unsigned g;
    bool valid;
} stream_frow;

/* A GPU in the merge's heap: its queue's first row's time. */
typedef struct stream_head {
    double t;
    size_t g;
} stream_head;

/* The first read's look-ups of a GPU's limit and clock reasons (spec_row_ok, stream_emit):
 * xs taken while tm->series is base; sample_excluded's answer x for every row time t with
 * t + 1e-6 in [lo, hi) while the series hold ln and rn samples — between two of their
 * stored times excl_at finds the same sample (the times ascend: else the read is redone). */
typedef struct excl_memo {
    const pfi_telemetry_series *base;
    size_t ln, rn;
    double lo, hi;
    unsigned x;
} excl_memo;

/* Per series of tm what its samples feed: the job GPU g's power rows (pg), the counter of
 * entity e (ee: its increase, the derived power). */
typedef struct stream_series {
    long g, e, cg; /* power of job GPU g; counter of entity e, job GPU cg (-1: none) */
    int dk;        /* the first read's counter: its derived series in the shadow (-1: none yet) */
    bool have_prev, first;
    double tp, vp, lim; /* the previous sample; the series' gap limit (tm_gap_limit) */
    double elo, ehi;    /* power: the counter's span (counter_plausible) */
} stream_series;

typedef struct stream_pass {
    pfi_telemetry *tm;
    const pfi_reduce_options *o;
    tm_stream_red *red;
    size_t n_series, ng, fpd;
    stream_series *ss;
    stream_queue *q;
    /* While every row has come in (time, GPU) order — a capture's rows, loop after loop —
     * the merge's order is the order they came in: they wait in one ring (fifo, fn rows
     * from fhead) instead of the GPUs' queues and heap; the first row out of that order
     * moves them there (stream_unfifo) for good. */
    bool heap_mode;
    stream_frow *fifo;
    size_t fcap, fhead, fn;
    double f_t; /* the last row's time and GPU (f_g == SIZE_MAX: none yet) */
    size_t f_g;
    excl_series *xs;
    double *lt; /* a min tree over the GPUs' lower bounds: size 2 x leaves */
    size_t leaves;
    stream_head *heap; /* GPUs with queued rows, by (head time, GPU) */
    size_t nh;
    size_t buffered;
    bool overflow;
    power_bins b;
    pfi_error err;
    /* The first read's guess (tm_spec): */
    bool spec;       /* rows leave only once the grid step is guessed (b.align) */
    bool eof;        /* the read is over: nothing more can come */
    bool dead;       /* the guess cannot hold: pass 2 does the work */
    long *xs_idx;    /* per GPU: xs[g]'s two series as indices in tm->series (-1: none;
                        -2: not taken yet): tm->series moves while it is read */
    double last_out; /* the last row's time out of the merge */
    double *emitted; /* per GPU: its last row's time out of the merge (-INFINITY) */
    excl_memo *memo; /* per GPU (the first read's; NULL: none) */
    /* spec_push's in-order ring (spec, !eof, !heap_mode): only lt's leaves are kept (the
     * tree above them is remade by lt_rebuild before anything else reads it); nblock is how
     * many GPUs hold the ring's first row back — !(thr < leaf), thr its time + 1e-6 —
     * counted again when that row changes (cnt_ok false) and lowered as GPUs pass it. The
     * first row leaves when nblock is 0: exactly when thr < lt's minimum. */
    bool cnt_ok;
    size_t nblock;
    double thr;
    /* spec_push's direct mode (spec, !heap_mode; once the step is guessed and the first
     * loop closed): the ring holds one row, the last, and it goes to the bins when the next
     * comes (its own row read whole by then), in (time, GPU) order — anything else kills
     * the guess — instead of waiting for every GPU to be past it. What that wait protected
     * is checked as it was: a limit or clock-reason change at or before a row out
     * (tm_spec_change, emitted), a GPU's limit series taken at its first row (spec_finish),
     * a GPU after the first loop (spec_gpu): each kills the guess and the second read gives
     * the figures; a guess that survives took every look-up on what the ring's would. */
    bool direct;
    /* A warm-up (o->warmup_s > 0, the second read only): every series' valid samples at
     * least the warm-up after t0w (the reduction's t_0, known before this read) summed into
     * tm's wsum and wn in file order, as field_mean sums the stored samples; seen counts
     * every series' valid samples, checked against the first read's n_valid. */
    bool warm;
    double t0w;
    size_t *seen;
} stream_pass;

static inline __attribute__((always_inline)) void lt_set(stream_pass *p, size_t g, double t)
{
    size_t k = p->leaves + g;
    p->lt[k] = t;
    for (k /= 2; k >= 1; k /= 2)
        p->lt[k] = p->lt[2 * k] < p->lt[2 * k + 1] ? p->lt[2 * k] : p->lt[2 * k + 1];
}

/* lt's inner nodes made again from its leaves (after spec_push kept the leaves only). */
static void lt_rebuild(stream_pass *p)
{
    for (size_t k = p->leaves - 1; k >= 1; k--)
        p->lt[k] = p->lt[2 * k] < p->lt[2 * k + 1] ? p->lt[2 * k] : p->lt[2 * k + 1];
}

static bool q_before(const stream_head *a, const stream_head *b)
{
    return a->t < b->t || (a->t == b->t && a->g < b->g);
}

static void q_down(stream_pass *p, size_t k)
{
    stream_head x = p->heap[k];
    for (;;) {
        size_t l = 2 * k + 1, best = l;
        if (l >= p->nh)
            break;
        if (l + 1 < p->nh && q_before(&p->heap[l + 1], &p->heap[l]))
            best = l + 1;
        if (!q_before(&p->heap[best], &x))
            break;
        p->heap[k] = p->heap[best];
        k = best;
    }
    p->heap[k] = x;
}

static void q_up(stream_pass *p, size_t k)
{
    stream_head x = p->heap[k];
    while (k > 0 && q_before(&x, &p->heap[(k - 1) / 2])) {
        p->heap[k] = p->heap[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    p->heap[k] = x;
}

/* A row of GPU g at t leaves the first read's merge: its GPU's limit and clock-reason series
 * taken at its first row (excl_series_of; the same at the end, checked there), its time kept
 * for tm_spec_change (a later change at or before it would have changed its look-up). */
static inline bool spec_row_ok(stream_pass *p, size_t g, double t)
{
    long *ix = &p->xs_idx[2 * g];
    if (ix[0] == -1 && ix[1] == -1) { /* neither series (the common dmon capture) */
        p->xs[g] = (excl_series){NULL, NULL};
        if (!p->eof)
            p->emitted[g] = t;
        return true;
    }
    if (ix[0] == -2) {
        excl_series xs = excl_series_of(p->tm, p->red->gpus[g]);
        ix[0] = xs.limit ? (long)(xs.limit - p->tm->series) : -1;
        ix[1] = xs.reasons ? (long)(xs.reasons - p->tm->series) : -1;
    }
    excl_memo *m = &p->memo[g];
    if (m->base != p->tm->series) { /* (taken again when tm->series moved) */
        p->xs[g] = (excl_series){ix[0] >= 0 ? &p->tm->series[ix[0]] : NULL,
                                 ix[1] >= 0 ? &p->tm->series[ix[1]] : NULL};
        m->base = p->tm->series;
        m->lo = INFINITY; /* (no time in it) */
        m->hi = -INFINITY;
    }
    if (p->eof)
        return true;
    p->emitted[g] = t;
    return true;
}

/* sample_excluded for GPU g at t, with the stretch of times around t that give the same
 * answer kept in its memo (out of stream_emit's line: once per change of the answer's
 * stretch). */
static __attribute__((noinline)) unsigned excl_memo_fill(stream_pass *p, size_t g, double t)
{
    const excl_series *xs = &p->xs[g];
    excl_memo *m = &p->memo[g];
    double u = t + 1e-6, lo = -INFINITY, hi = INFINITY;
    bool keep = true;
    const pfi_telemetry_series *ser[2] = {xs->limit, xs->reasons};
    for (int j = 0; j < 2; j++) {
        const pfi_telemetry_series *s = ser[j];
        if (s == NULL || s->n == 0)
            continue;
        size_t i = excl_at(s, t);
        double a = i < s->n ? s->t_s[i] : -INFINITY;
        double b = i < s->n ? (i + 1 < s->n ? s->t_s[i + 1] : INFINITY) : s->t_s[0];
        keep &= !isnan(a) && !isnan(b); /* (a NaN time: excl_at's answer is its path's) */
        lo = a > lo ? a : lo;
        hi = b < hi ? b : hi;
    }
    unsigned x = sample_excluded(xs, p->o, t);
    m->ln = xs->limit != NULL ? xs->limit->n : 0;
    m->rn = xs->reasons != NULL ? xs->reasons->n : 0;
    if (keep && lo <= u && u < hi) { /* (a NaN row time: nothing kept) */
        m->lo = lo;
        m->hi = hi;
        m->x = x;
    } else {
        m->lo = INFINITY;
        m->hi = -INFINITY;
    }
    return x;
}

/* One row out of the merge, in order, into the bins. */
static inline __attribute__((always_inline)) pfi_error stream_emit(stream_pass *p, size_t g,
                                                                   double t, double v, bool valid)
{
    if (p->spec && !spec_row_ok(p, g, t)) {
        p->dead = true;
        return PFI_OK;
    }
    p->last_out = t;
    unsigned excl = 0;
    const excl_series *xs = &p->xs[g];
    if (valid && (xs->limit != NULL || xs->reasons != NULL)) {
        const excl_memo *m = p->memo != NULL ? &p->memo[g] : NULL;
        double u = t + 1e-6;
        if (m == NULL)
            excl = sample_excluded(xs, p->o, t);
        else if (m->lo <= u && u < m->hi && m->ln == (xs->limit != NULL ? xs->limit->n : 0) &&
                 m->rn == (xs->reasons != NULL ? xs->reasons->n : 0))
            excl = m->x; /* the same sample of each as the last row's look-up */
        else
            excl = excl_memo_fill(p, g, t);
    }
    grid_row gr = {.t = t, .v = v, .g = (unsigned)g, .valid = valid, .excl = excl};
    return power_bins_add(&p->b, &gr, &p->red->jp);
}

static inline __attribute__((always_inline)) pfi_error stream_drain(stream_pass *p)
{
    /* The first read's rows wait until every GPU is past t + 1e-6 (the rows that give the
     * limits at t are then in: sample_excluded looks 1e-6 ahead) and the step is guessed. */
    bool ahead = p->spec && !p->eof;
    if (!p->heap_mode) { /* the in-order ring: its first row is the heap's least */
        if (p->spec && !(p->b.align > 0))
            return PFI_OK;
        /* (neither the bound nor the step moves while rows leave: stream_emit sets neither) */
        const double lim = p->lt[1];
        while (p->fn > 0) {
            const stream_frow *r = &p->fifo[p->fhead];
            if (!(ahead ? r->t + 1e-6 < lim : r->t <= lim))
                break;
            stream_frow x = *r;
            p->fhead = p->fhead + 1 == p->fcap ? 0 : p->fhead + 1;
            p->fn--;
            p->buffered--;
            pfi_error e = stream_emit(p, x.g, x.t, x.v, x.valid);
            if (e != PFI_OK || p->dead)
                return e;
        }
        return PFI_OK;
    }
    while (p->nh > 0 && !(p->spec && !(p->b.align > 0)) &&
           (ahead ? p->heap[0].t + 1e-6 < p->lt[1] : p->heap[0].t <= p->lt[1])) {
        size_t g = p->heap[0].g;
        stream_queue *q = &p->q[g];
        stream_row r = q->r[q->head];
        q->head = q->head + 1 == q->cap ? 0 : q->head + 1;
        q->n--;
        p->buffered--;
        if (q->n == 0)
            p->heap[0] = p->heap[--p->nh];
        else
            p->heap[0].t = q->r[q->head].t;
        if (p->nh > 1)
            q_down(p, 0);
        pfi_error e = stream_emit(p, g, r.t, r.v, r.valid);
        if (e != PFI_OK || p->dead)
            return e;
    }
    return PFI_OK;
}

/* Row (t, v, valid) of GPU g into its queue (the heap's merge), no drain. */
static pfi_error stream_enqueue(stream_pass *p, size_t g, double t, double v, bool valid)
{
    stream_queue *q = &p->q[g];
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 16;
        stream_row *r = pfi_malloc(cap * sizeof *r);
        if (r == NULL)
            return PFI_ERR_NOMEM;
        for (size_t i = 0; i < q->n; i++)
            r[i] = q->r[(q->head + i) % q->cap];
        pfi_free(q->r);
        q->r = r;
        q->cap = cap;
        q->head = 0;
    }
    q->r[(q->head + q->n) % q->cap] = (stream_row){t, v, valid};
    q->n++;
    if (q->n == 1) {
        p->heap[p->nh++] = (stream_head){t, g};
        q_up(p, p->nh - 1);
    }
    return PFI_OK;
}

/* A row out of (time, GPU) order: the ring's rows (in that order, so each GPU's in its
 * own) go to the GPUs' queues, and the heap merges from now on. */
static pfi_error stream_unfifo(stream_pass *p)
{
    p->heap_mode = true;
    for (; p->fn > 0; p->fn--) {
        const stream_frow *r = &p->fifo[p->fhead];
        pfi_error e = stream_enqueue(p, r->g, r->t, r->v, r->valid);
        if (e != PFI_OK)
            return e;
        p->fhead = p->fhead + 1 == p->fcap ? 0 : p->fhead + 1;
    }
    pfi_free(p->fifo);
    p->fifo = NULL;
    p->fcap = p->fhead = 0;
    return PFI_OK;
}

/* The in-order ring, full, made twice as large (out of stream_push's line: rare). */
static __attribute__((noinline)) pfi_error stream_fifo_grow(stream_pass *p)
{
    size_t cap = p->fcap ? 2 * p->fcap : 64;
    stream_frow *r = pfi_malloc(cap * sizeof *r);
    if (r == NULL)
        return PFI_ERR_NOMEM;
    for (size_t i = 0; i < p->fn; i++)
        r[i] = p->fifo[(p->fhead + i) % p->fcap];
    pfi_free(p->fifo);
    p->fifo = r;
    p->fcap = cap;
    p->fhead = 0;
    return PFI_OK;
}

static inline __attribute__((always_inline)) pfi_error stream_push(stream_pass *p, size_t g,
                                                                   double t, double v, bool valid)
{
    stream_queue *q = &p->q[g];
    if (q->pushed == q->expected || p->buffered >= STREAM_WINDOW) {
        p->overflow = true; /* more rows than pass 1 saw, or a GPU silent too long */
        return PFI_ERR_LIMIT;
    }
    pfi_error e;
    if (!p->heap_mode && p->f_g != SIZE_MAX && !(t > p->f_t || (t == p->f_t && g > p->f_g)) &&
        (e = stream_unfifo(p)) != PFI_OK)
        return e;
    if (!p->heap_mode) {
        if (p->fn == p->fcap && (e = stream_fifo_grow(p)) != PFI_OK)
            return e;
        size_t k = p->fhead + p->fn;
        p->fifo[k >= p->fcap ? k - p->fcap : k] = (stream_frow){t, v, (unsigned)g, valid};
        p->fn++;
        p->f_t = t;
        p->f_g = g;
    } else if ((e = stream_enqueue(p, g, t, v, valid)) != PFI_OK) {
        return e;
    }
    p->buffered++;
    lt_set(p, g, ++q->pushed == q->expected ? INFINITY : t);
    return stream_drain(p);
}

/* The GPUs that hold the ring's first row back (spec_push): nblock and thr made again. */
static __attribute__((noinline)) void spec_count(stream_pass *p)
{
    double thr = p->fifo[p->fhead].t + 1e-6;
    size_t n = 0;
    for (size_t g = 0; g < p->ng; g++)
        n += !(thr < p->lt[p->leaves + g]);
    p->thr = thr;
    p->nblock = n;
    p->cnt_ok = true;
}

/* spec_push's switch to its direct mode (once): the ring's rows out, in order, and row
 * (t, v, valid) of GPU g (after them in (time, GPU) order: spec_push checked it) kept as
 * the ring's only row. The rows leave before every GPU is past them; each one's own row was
 * read whole before this one came, and what comes later and would have changed a look-up
 * kills the guess (stream_pass.direct). */
static __attribute__((noinline)) pfi_error spec_go_direct(stream_pass *p, size_t g, double t,
                                                          double v, bool valid)
{
    pfi_error err;
    if (p->fcap == 0 && (err = stream_fifo_grow(p)) != PFI_OK)
        return err; /* (never: rows went through the ring before the first loop closed) */
    while (p->fn > 0) {
        stream_frow x = p->fifo[p->fhead];
        p->fhead = p->fhead + 1 == p->fcap ? 0 : p->fhead + 1;
        p->fn--;
        p->buffered--;
        pfi_error e = stream_emit(p, x.g, x.t, x.v, x.valid);
        if (e != PFI_OK || p->dead)
            return e;
    }
    p->direct = true;
    p->cnt_ok = false;
    p->fhead = 0; /* (fcap >= 64: rows went through the ring) */
    p->fifo[0] = (stream_frow){t, v, (unsigned)g, valid};
    p->fn = 1;
    p->buffered++;
    p->f_t = t;
    p->f_g = g;
    return PFI_OK;
}

/*
 * stream_push for the first read (spec, before eof): while the rows come in (time, GPU) order
 * the ring's first row leaves exactly when stream_drain would let it (every GPU's last row
 * past its time + 1e-6), found from the count of GPUs not yet past it instead of the min
 * tree's update and test per row; anything else (a row out of that order, a NaN time, the
 * heap's merge) goes to stream_push with the tree made whole first.
 */
static inline __attribute__((always_inline)) pfi_error spec_push(stream_pass *p, size_t g, double t,
                                                                 double v, bool valid)
{
    if (p->direct) { /* the ring holds the last row alone (spec_finish drains it at eof) */
        if (!(t > p->f_t || (t == p->f_t && g > p->f_g))) {
            p->dead = true; /* out of (time, GPU) order (or a NaN time): the second read */
            return PFI_OK;
        }
        stream_frow *r = &p->fifo[p->fhead];
        stream_frow x = *r;
        *r = (stream_frow){t, v, (unsigned)g, valid};
        p->f_t = t;
        p->f_g = g;
        return stream_emit(p, x.g, x.t, x.v, x.valid);
    }
    stream_queue *q = &p->q[g];
    if (p->heap_mode || p->eof || !(t == t) ||
        (p->f_g != SIZE_MAX && !(t > p->f_t || (t == p->f_t && g > p->f_g)))) {
        if (!p->heap_mode) {
            lt_rebuild(p);
            p->cnt_ok = false;
        }
        return stream_push(p, g, t, v, valid);
    }
    if (q->pushed == q->expected || p->buffered >= STREAM_WINDOW) {
        p->overflow = true; /* as stream_push */
        return PFI_ERR_LIMIT;
    }
    pfi_error e;
    if (p->red->jp.n_bins > 0 && p->b.align > 0) /* (n_bins: rows left, so the step is known) */
        return spec_go_direct(p, g, t, v, valid);
    if (p->fn == p->fcap && (e = stream_fifo_grow(p)) != PFI_OK)
        return e;
    size_t k = p->fhead + p->fn;
    p->fifo[k >= p->fcap ? k - p->fcap : k] = (stream_frow){t, v, (unsigned)g, valid};
    if (p->fn++ == 0)
        p->cnt_ok = false; /* a new first row */
    p->f_t = t;
    p->f_g = g;
    p->buffered++;
    double *leaf = &p->lt[p->leaves + g];
    double nv = ++q->pushed == q->expected ? INFINITY : t;
    if (p->cnt_ok && !(p->thr < *leaf) && p->thr < nv)
        p->nblock--; /* (a GPU's bound only grows here: none starts holding back) */
    *leaf = nv;
    if (!(p->b.align > 0))
        return PFI_OK; /* (stream_drain: nothing leaves before the step is guessed) */
    for (;;) {
        if (!p->cnt_ok)
            spec_count(p);
        if (p->nblock != 0)
            return PFI_OK;
        stream_frow x = p->fifo[p->fhead];
        p->fhead = p->fhead + 1 == p->fcap ? 0 : p->fhead + 1;
        p->buffered--;
        if (--p->fn == 0)
            p->cnt_ok = false;
        else if (!(p->fifo[p->fhead].t + 1e-6 == p->thr))
            p->cnt_ok = false; /* the next row's threshold is another */
        if ((e = stream_emit(p, x.g, x.t, x.v, x.valid)) != PFI_OK || p->dead)
            return e;
        if (p->fn == 0)
            return PFI_OK;
    }
}

/* The sink of the second read: one sample of series k of tm. */
static pfi_error stream_sample(void *ctx, size_t k, double t, double v, bool valid, bool brk)
{
    stream_pass *p = ctx;
    if (k >= p->n_series)
        return PFI_OK;
    if (p->warm && valid) {
        pfi_telemetry_series *ws = &p->tm->series[k];
        p->seen[k]++;
        if (!(t - p->t0w < p->o->warmup_s)) { /* field_mean's test, negated */
            ws->wsum += v;
            ws->wn++;
        }
    }
    stream_series *x = &p->ss[k];
    if (x->g >= 0) { /* a job GPU's power */
        size_t g = (size_t)x->g;
        if (valid) {
            double dt = t - x->tp;
            if (x->have_prev && !brk && !(dt > x->lim)) { /* pfi_telemetry_integrate */
                p->red->pi[g] += 0.5 * (v + x->vp) * dt;
                p->red->picov[g] += dt;
            }
            if (t >= x->elo && t <= x->ehi) { /* counter_plausible */
                p->red->psum[g] += v;
                p->red->pn[g]++;
            }
            x->have_prev = true;
            x->tp = t;
            x->vp = v;
        }
        /* No valid power at all: no bins (reduce_job_power stops before the merge too). */
        return p->red->job ? stream_push(p, g, t, v, valid) : PFI_OK;
    }
    if (x->e < 0 || !valid)
        return PFI_OK;
    /* The counter of entity e: pfi_telemetry_counter_delta, then derive_power (energy.c). */
    if (x->have_prev) {
        double dt = t - x->tp, de = v - x->vp;
        if (x->cg >= 0 && !brk && !(de < 0) && !(dt > x->lim)) {
            p->red->csum[x->cg] += de;
            p->red->ccov[x->cg] += dt;
        }
        bool ok = !brk && dt > 0 && dt <= x->lim && de >= 0;
        if (ok || !x->first) {
            x->first = false;
            p->tm->line_now = 0; /* derived: its notes name no line (as derive_power) */
            double d = ok ? tm_derived_power_w(de, dt) : NAN;
            int kd = p->tm->map[(size_t)x->e * PFI_TELEMETRY_MAX_FIELDS + p->fpd];
            size_t nv = kd >= 0 ? p->tm->series[kd].n_valid : 0;
            pfi_error e = tm_put(p->tm, (size_t)x->e, p->fpd, t,
                                 ok ? PFI_VALUE_OK : PFI_VALUE_MISSING, d, -1, false);
            if (e != PFI_OK)
                return e;
            kd = p->tm->map[(size_t)x->e * PFI_TELEMETRY_MAX_FIELDS + p->fpd];
            if (p->warm && kd >= 0 && p->tm->series[kd].n_valid > nv &&
                !(t - p->t0w < p->o->warmup_s)) { /* stored: its warm-up sums as above */
                p->tm->series[kd].wsum += d;
                p->tm->series[kd].wn++;
            }
        }
    }
    x->have_prev = true;
    x->tp = t;
    x->vp = v;
    return PFI_OK;
}

pfi_error tm_stream_sample_warm(void *ctx, size_t k, double t, double v, bool valid, bool brk)
{
    return stream_sample(ctx, k, t, v, valid, brk);
}

static void stream_pass_free(stream_pass *p)
{
    for (size_t g = 0; p->q != NULL && g < p->ng; g++)
        pfi_free(p->q[g].r);
    pfi_free(p->q);
    pfi_free(p->fifo);
    pfi_free(p->ss);
    pfi_free(p->xs);
    pfi_free(p->lt);
    pfi_free(p->heap);
    pfi_free(p->seen);
    power_bins_free(&p->b);
}

/* Pass 1's checks that the stored path would not drop or reorder what the second read
 * streams: no implausible date in any series, stored, counted or streamed (drop_far_times
 * drops nothing when every time lies within a year of every other and after 2000), the earliest
 * sample not a profiling field's (which the summary may take as missing, moving t_0). False: read
 * again, stored. */
static bool stream_eligible(const pfi_telemetry *tm)
{
    double lo = INFINITY, hi = -INFINITY, prof = INFINITY, other = INFINITY;
    for (size_t i = 0; i < tm->n_series; i++) {
        const pfi_telemetry_series *s = &tm->series[i];
        const tm_stream *st = s->stream;
        for (size_t j = 0; j < s->n; j++) {
            lo = s->t_s[j] < lo ? s->t_s[j] : lo;
            hi = s->t_s[j] > hi ? s->t_s[j] : hi;
        }
        for (size_t j = 0; j < s->n_miss; j++) {
            lo = s->miss_t[j] < lo ? s->miss_t[j] : lo;
            hi = s->miss_t[j] > hi ? s->miss_t[j] : hi;
        }
        if (st != NULL) {
            lo = st->t_min < lo ? st->t_min : lo;
            hi = st->t_max > hi ? st->t_max : hi;
        } else if (s->counted && s->n_valid > 0) { /* its times lie in [t_first, t_hi] */
            lo = s->t_first < lo ? s->t_first : lo;
            hi = s->t_hi > hi ? s->t_hi : hi;
        }
        pfi_telemetry_kind kind = tm->fields[s->field].kind;
        const char *name = tm->fields[s->field].name;
        if (st == NULL && (kind == PFI_KIND_POWER_W || kind == PFI_KIND_ENERGY_MJ ||
                           strcmp(name, "energy_mj") == 0 || strcmp(name, "power_w") == 0 ||
                           strcmp(name, "power_avg_w") == 0))
            return false; /* a series the reduction reads by name or kind that was counted
                             (a column named like a canonical field, of no known kind; a
                             field that became power later): the stored read has its samples */
        double f = s->counted ? s->t_first : s->n > 0 ? s->t_s[0] : INFINITY;
        int id = tm->fields[s->field].dcgm_id;
        if (s->n_valid > 0 && id >= 1001 && id <= 1012)
            prof = f < prof ? f : prof;
        else if (s->n_valid > 0)
            other = f < other ? f : other;
    }
    if (!tm->time_relative && lo <= hi &&
        (lo < TM_PLAUSIBLE_FROM_S || hi - lo > TM_PLAUSIBLE_SPAN_S || isnan(lo) || isnan(hi)))
        return false;
    return !(prof < other);
}

/* The job power part of pass 2, before the read: the grid step, the span of the rows, the
 * grid bounded (false: over the limit, read again stored for the stored path's message),
 * the bins and the merge's queues. */
static pfi_error stream_job_init(stream_pass *p, const size_t *gpus, size_t ng, size_t fp, long fe,
                                 bool *fits)
{
    pfi_telemetry *tm = p->tm;
    tm_stream_red *red = p->red;
    const pfi_reduce_options *o = p->o;
    *fits = true;
    snprintf(red->jp.power_field, sizeof red->jp.power_field, "%s", tm->fields[fp].name);
    if (grid_step(tm, o, gpus, ng, fp, &red->jp) != PFI_OK)
        return PFI_ERR_NOMEM;
    double align = red->jp.align_s;
    size_t total = 0, rows = 0;
    double t_min = INFINITY, t_max = -INFINITY;
    p->q = pfi_calloc(ng, sizeof *p->q);
    p->xs = pfi_calloc(ng, sizeof *p->xs);
    for (p->leaves = 1; p->leaves < ng; p->leaves *= 2)
        ;
    p->lt = pfi_malloc(2 * p->leaves * sizeof *p->lt);
    p->heap = pfi_malloc(ng * sizeof *p->heap);
    if (p->q == NULL || p->xs == NULL || p->lt == NULL || p->heap == NULL)
        return PFI_ERR_NOMEM;
    for (size_t k = 0; k < 2 * p->leaves; k++)
        p->lt[k] = INFINITY;
    for (size_t g = 0; g < ng; g++) {
        const pfi_telemetry_series *s = pfi_telemetry_series_get(tm, gpus[g], fp);
        p->xs[g] = excl_series_of(tm, gpus[g]);
        if (s == NULL)
            continue;
        if (s->stream == NULL) {
            *fits = false;
            return PFI_OK;
        }
        size_t k = (size_t)(s - tm->series);
        p->ss[k].g = (long)g;
        const pfi_telemetry_series *es =
            fe >= 0 ? pfi_telemetry_series_get(tm, gpus[g], (size_t)fe) : NULL;
        p->ss[k].elo = INFINITY;
        p->ss[k].ehi = -INFINITY;
        span_of(es, &p->ss[k].elo, &p->ss[k].ehi);
        p->ss[k].lim = tm_gap_limit(s);
        total += s->n_valid;
        rows += s->n_valid + s->n_miss;
        p->q[g].expected = s->n_valid + s->n_miss;
        if (p->q[g].expected > 0)
            lt_set(p, g, -INFINITY);
        const tm_stream *st = s->stream;
        t_min = st->t_min < t_min ? st->t_min : t_min;
        t_min = st->m_min < t_min ? st->m_min : t_min;
        t_max = st->t_max > t_max ? st->t_max : t_max;
        t_max = st->m_max > t_max ? st->m_max : t_max;
    }
    red->t0 = first_sample_time(tm);
    if (total == 0) {
        red->jp.flags |= PFI_RED_NO_POWER;
        return PFI_OK;
    }
    red->job = true;
    if (t_min < red->t0)
        red->t0 = t_min;
    double nbd = floor((t_max - red->t0) / align + 0.5) + 1;
    double cap_bins = (double)rows * 16 + 1048576;
    double limit = cap_bins < MAX_BINS - 1 ? cap_bins : MAX_BINS - 1;
    if (!(nbd >= 1 && nbd <= limit)) {
        *fits = false;
        return PFI_OK;
    }
    bool per_loop = !(o->align_s > 0);
    return power_bins_init(&p->b, ng, per_loop ? 0 : (size_t)nbd, per_loop, o->warmup_s, red->t0,
                           align, STREAM_TOPQ_DISTINCT);
}

/* The power derived from the counter (pfi_telemetry_derive_power_from_energy's field and
 * series): its field, and its series made now, empty, in entity order — the order the stored
 * path makes them in; those left empty are taken out again by stream_derived_end. */
static pfi_error stream_derived_begin(stream_pass *p, size_t fe)
{
    pfi_telemetry *tm = p->tm;
    static const char name[] = "power_energy_w";
    pfi_error err = tm_field(tm, name, sizeof name - 1, &p->fpd);
    if (err != PFI_OK)
        return err;
    tm->fields[p->fpd].kind = PFI_KIND_POWER_W;
    for (size_t e = 0; e < tm->n_entities; e++) {
        int k = tm->map[e * PFI_TELEMETRY_MAX_FIELDS + fe];
        if (k < 0)
            continue;
        stream_series *x = &p->ss[k];
        x->e = (long)e;
        x->first = true;
        x->lim = tm_gap_limit(&tm->series[k]);
        for (size_t g = 0; g < p->ng; g++)
            if (p->red->gpus[g] == e)
                x->cg = (long)g;
        pfi_telemetry_series *d;
        if ((err = tm_series(tm, e, p->fpd, &d)) != PFI_OK)
            return err;
    }
    return PFI_OK;
}

/* After the read: the counter's missing-value times go along (derive_power), the derived
 * series that got nothing are taken out, the rest's step tables sorted. */
static pfi_error stream_derived_end(stream_pass *p, size_t fe, size_t base)
{
    pfi_telemetry *tm = p->tm;
    pfi_error err;
    for (size_t e = 0; e < tm->n_entities; e++) {
        int k = tm->map[e * PFI_TELEMETRY_MAX_FIELDS + fe];
        for (size_t i = 0; k >= 0 && i < tm->series[k].n_miss; i++)
            if ((err = tm_put_miss_time(tm, e, p->fpd, tm->series[k].miss_t[i])) != PFI_OK)
                return err;
    }
    size_t w = base;
    for (size_t i = base; i < tm->n_series; i++) {
        pfi_telemetry_series *s = &tm->series[i];
        int *slot = &tm->map[s->entity * PFI_TELEMETRY_MAX_FIELDS + s->field];
        if (s->n_valid + s->n_missing + s->n_range + s->n_miss == 0) {
            tm_stream_free(s->stream);
            pfi_free(s->t_s);
            pfi_free(s->value);
            pfi_free(s->brk);
            pfi_free(s->miss_t);
            *slot = -1;
            continue;
        }
        tm_stream_finish(s->stream);
        tm->series[w] = *s;
        *slot = (int)w++;
    }
    tm->n_series = w;
    return PFI_OK;
}

/*
 * The first read's guess (pfi_reduce_stream_begin): while the files are read the first time,
 * the job power, trapezoids, counter increases and derived power are made as in the second
 * read, with what is not known before the end guessed — each series' gap limit (10 x its
 * first clean step), the grid step (the interval, 1 s for nominal times, else the first clean
 * step of a GPU's power), the GPUs (as they appear), the power field (the one power field seen)
 * — and the decisions those guesses took kept (the loop rule's distances, every distinct
 * step). At the end pfi_reduce_stream checks each decision against the true value: when every
 * one is the same, the sums are the second read's, bit for bit, and there is no second read.
 * Otherwise (or a GPU appearing after the first loop closed, a window full, --align) the
 * guess is dropped and the second read made.
 */
#define SPEC_MAX_GPUS 1024

typedef struct tm_spec {
    stream_pass p;
    pfi_reduce_options o;
    long fp;      /* the power field seen (-1: none yet) */
    long *gpu_of; /* per entity: its job GPU, -1 none */
    size_t n_gpu_of;
    long last_gpu_entity; /* GPUs must appear in entity order */
    size_t ss_cap;
    bool *seen;            /* per series: its role taken */
    pfi_telemetry *shadow; /* the derived power's series, made here, moved to tm at the end */
    size_t fpd_s;
    double derived_max;
} tm_spec;

void tm_spec_free(tm_spec *sp)
{
    if (sp == NULL)
        return;
    stream_pass_free(&sp->p);
    pfi_free(sp->p.xs_idx);
    pfi_free(sp->p.emitted);
    pfi_free(sp->p.memo);
    tm_stream_red_free(sp->p.red);
    pfi_free(sp->gpu_of);
    pfi_free(sp->seen);
    pfi_telemetry_destroy(sp->shadow);
    pfi_free(sp);
}

void tm_spec_change(pfi_telemetry *tm, size_t e, double t)
{
    tm_spec *sp = tm->spec;
    if (sp == NULL || sp->p.dead || e >= sp->n_gpu_of || sp->gpu_of[e] < 0)
        return;
    if (t <= sp->p.emitted[sp->gpu_of[e]] + 1e-6)
        sp->p.dead = true; /* a row out already took the value before this change */
}

/* Entity e's job GPU, made now when it is a GPU not yet seen; -1 (and the guess dead) when it
 * cannot be one of the merge's. */
static long spec_gpu(tm_spec *sp, size_t e)
{
    stream_pass *p = &sp->p;
    if (e >= sp->n_gpu_of) {
        size_t n = 2 * e + 16;
        long *m = pfi_realloc(sp->gpu_of, n * sizeof *m);
        if (m == NULL)
            return -1;
        for (size_t i = sp->n_gpu_of; i < n; i++)
            m[i] = -1;
        sp->gpu_of = m;
        sp->n_gpu_of = n;
    }
    if (sp->gpu_of[e] >= 0)
        return sp->gpu_of[e];
    if ((long)e <= sp->last_gpu_entity || p->ng == SPEC_MAX_GPUS || p->red->jp.n_bins > 0)
        return -1;
    size_t g = p->ng++;
    p->red->gpus[g] = e;
    p->b.ng = p->ng;
    p->q[g].expected = SIZE_MAX;
    if (p->ng > p->leaves) { /* the tree over as many leaves as GPUs (lt holds 2 x n) */
        size_t leaves = 2 * p->leaves;
        for (size_t i = 0; i < leaves; i++)
            p->lt[leaves + i] = i < p->leaves ? p->lt[p->leaves + i] : INFINITY;
        p->leaves = leaves;
        for (size_t k = leaves - 1; k >= 1; k--)
            p->lt[k] = p->lt[2 * k] < p->lt[2 * k + 1] ? p->lt[2 * k] : p->lt[2 * k + 1];
    }
    lt_set(p, g, -INFINITY);
    p->cnt_ok = false; /* a GPU that holds every row back (spec_push) */
    sp->gpu_of[e] = (long)g;
    sp->last_gpu_entity = (long)e;
    return (long)g;
}

/* What series k feeds, taken at its first sample (spec_one tests seen[k] first: this is
 * out of its line). */
static __attribute__((noinline)) bool spec_role(tm_spec *sp, size_t k)
{
    pfi_telemetry *tm = sp->p.tm;
    if (k >= sp->ss_cap) {
        size_t n = 2 * k + 16;
        stream_series *ss = pfi_realloc(sp->p.ss, n * sizeof *ss);
        bool *seen = pfi_realloc(sp->seen, n * sizeof *seen);
        if (ss != NULL)
            sp->p.ss = ss;
        if (seen != NULL)
            sp->seen = seen;
        if (ss == NULL || seen == NULL)
            return false;
        for (size_t i = sp->ss_cap; i < n; i++)
            seen[i] = false;
        sp->ss_cap = n;
    }
    if (sp->seen[k])
        return true;
    sp->seen[k] = true;
    stream_series *x = &sp->p.ss[k];
    *x = (stream_series){.g = -1, .e = -1, .cg = -1, .dk = -1, .first = true, .lim = NAN};
    const pfi_telemetry_series *s = &tm->series[k];
    const pfi_telemetry_field *f = &tm->fields[s->field];
    bool gpu = tm->entities[s->entity].is_gpu;
    if (f->kind == PFI_KIND_POWER_W && gpu) {
        if (sp->fp >= 0 && sp->fp != (long)s->field)
            return false; /* two power fields: which is the job's is known at the end */
        sp->fp = (long)s->field;
        return (x->g = spec_gpu(sp, s->entity)) >= 0;
    }
    if (f->kind == PFI_KIND_ENERGY_MJ && strcmp(f->name, "energy_mj") == 0) {
        x->e = (long)s->entity;
        return !gpu || (x->cg = spec_gpu(sp, s->entity)) >= 0;
    }
    return true;
}

/* The shadow collector's entities up to e made, named by their numbers (out of
 * spec_one's line: once per entity). */
static __attribute__((noinline)) pfi_error spec_shadow_entities(pfi_telemetry *sh, size_t e)
{
    pfi_error err = PFI_OK;
    char name[32];
    while (err == PFI_OK && sh->n_entities <= e) {
        size_t id = (size_t)-1; /* (tm_entity reads it as a hint: none) */
        int n = snprintf(name, sizeof name, "%zu", sh->n_entities);
        err = tm_entity(sh, name, (size_t)n, &id);
    }
    return err;
}

/* The first read's sink: stream_sample's work with the guesses (tm_spec_sample, and
 * tm_spec_valid for the readers' common sample). */
static inline __attribute__((always_inline)) void spec_one(tm_spec *sp, size_t k, double t,
                                                           double v, bool valid, bool brk)
{
    stream_pass *p = &sp->p;
    if (p->dead)
        return;
    if (!(k < sp->ss_cap && sp->seen[k]) && !spec_role(sp, k)) {
        p->dead = true;
        return;
    }
    stream_series *x = &p->ss[k];
    if (!brk && valid && isnan(x->lim))
        x->lim = PFI_TELEMETRY_GAP_FACTOR * (t - x->tp);
    if (x->g >= 0) {
        size_t g = (size_t)x->g;
        if (!(p->b.align > 0)) {
            const pfi_telemetry *tm = p->tm;
            p->b.align = tm->opt.interval_s > 0 ? tm->opt.interval_s
                         : tm->time_nominal     ? 1.0
                         : valid && !brk        ? t - x->tp
                                                : NAN;
        }
        if (valid) {
            double dt = t - x->tp;
            if (x->have_prev && !brk && !(dt > x->lim)) {
                p->red->pi[g] += 0.5 * (v + x->vp) * dt;
                p->red->picov[g] += dt;
            }
            x->have_prev = true;
            x->tp = t;
            x->vp = v;
        }
        if (t < p->last_out) {
            p->dead = true;
            return;
        }
        pfi_error e = spec_push(p, g, t, v, valid);
        if (e != PFI_OK || p->overflow)
            p->dead = true;
        return;
    }
    if (x->e < 0 || !valid)
        return;
    if (x->have_prev) {
        double dt = t - x->tp, de = v - x->vp;
        if (x->cg >= 0 && !brk && !(de < 0) && !(dt > x->lim)) {
            p->red->csum[x->cg] += de;
            p->red->ccov[x->cg] += dt;
        }
        bool ok = !brk && dt > 0 && dt <= x->lim && de >= 0;
        if (ok || !x->first) {
            x->first = false;
            pfi_telemetry *sh = sp->shadow;
            pfi_error e =
                sh->n_entities <= (size_t)x->e ? spec_shadow_entities(sh, (size_t)x->e) : PFI_OK;
            double d = ok ? tm_derived_power_w(de, dt) : NAN;
            if (ok && !(d <= sp->derived_max))
                sp->derived_max = d;
            /* tm_put_ok(sh, ...): tm_put(..., PFI_VALUE_OK, d, -1, false) inlined; once the
             * derived series is there (a streamed series: it stays one), its common case —
             * d within the power range, no DCGM blank — straight to tm_put_stream, which is
             * where tm_put_ok's look-ups (the series, the field's range) would lead. */
            if (e == PFI_OK && ok && x->dk >= 0 && d >= 0 && d <= tm_power_hi(sh) &&
                d < 2147483632.0) {
                e = tm_put_stream(sh, (size_t)x->e, sp->fpd_s, (size_t)x->dk, &sh->series[x->dk], t,
                                  d);
            } else if (e == PFI_OK) {
                e = ok ? tm_put_ok(sh, (size_t)x->e, sp->fpd_s, t, d)
                       : tm_put(sh, (size_t)x->e, sp->fpd_s, t, PFI_VALUE_MISSING, d, -1, false);
                int kd = sh->map[(size_t)x->e * PFI_TELEMETRY_MAX_FIELDS + sp->fpd_s];
                if (e == PFI_OK && kd >= 0 && sh->opt.keep_series && sh->series[kd].counted &&
                    sh->series[kd].stream != NULL)
                    x->dk = kd;
            }
            if (e != PFI_OK)
                p->dead = true;
        }
    }
    x->have_prev = true;
    x->tp = t;
    x->vp = v;
}

pfi_error tm_spec_sample(void *ctx, size_t k, double t, double v, bool valid, bool brk)
{
    spec_one(ctx, k, t, v, valid, brk);
    return PFI_OK;
}

pfi_error tm_spec_valid(void *ctx, size_t k, double t, double v)
{
    spec_one(ctx, k, t, v, true, false);
    return PFI_OK;
}

void tm_spec_valid_n(void *ctx, const tm_spec_in *in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        spec_one(ctx, in[i].k, in[i].t, in[i].v, true, false);
}

pfi_error pfi_reduce_stream_begin(pfi_telemetry *tm, const pfi_reduce_options *o)
{
    if (!tm->opt.stream_power || o->align_s > 0 || o->warmup_s != 0)
        return PFI_OK; /* (--align: t_0 is not known before the end; the second read) */
    tm_spec *sp = pfi_calloc(1, sizeof *sp);
    if (sp == NULL)
        return PFI_ERR_NOMEM;
    *sp = (tm_spec){.o = *o, .fp = -1, .last_gpu_entity = -1, .derived_max = -INFINITY};
    stream_pass *p = &sp->p;
    *p = (stream_pass){.tm = tm, .o = &sp->o, .spec = true, .last_out = -INFINITY, .f_g = SIZE_MAX};
    size_t n = SPEC_MAX_GPUS;
    pfi_telemetry_options so = tm->opt;
    so.host = so.csv_fields = so.timezone = NULL;
    tm_stream_red *red = p->red = pfi_calloc(1, sizeof *red);
    pfi_error err = PFI_ERR_NOMEM;
    if (red == NULL || (red->gpus = pfi_calloc(n, sizeof *red->gpus)) == NULL ||
        (red->csum = pfi_calloc(n, sizeof *red->csum)) == NULL ||
        (red->ccov = pfi_calloc(n, sizeof *red->ccov)) == NULL ||
        (red->pi = pfi_calloc(n, sizeof *red->pi)) == NULL ||
        (red->picov = pfi_calloc(n, sizeof *red->picov)) == NULL ||
        (red->psum = pfi_calloc(n, sizeof *red->psum)) == NULL ||
        (red->pn = pfi_calloc(n, sizeof *red->pn)) == NULL ||
        (p->q = pfi_calloc(n, sizeof *p->q)) == NULL ||
        (p->xs = pfi_calloc(n, sizeof *p->xs)) == NULL ||
        (p->xs_idx = pfi_malloc(2 * n * sizeof *p->xs_idx)) == NULL ||
        (p->emitted = pfi_malloc(n * sizeof *p->emitted)) == NULL ||
        (p->memo = pfi_calloc(n, sizeof *p->memo)) == NULL ||
        (p->lt = pfi_malloc(2 * n * sizeof *p->lt)) == NULL ||
        (p->heap = pfi_malloc(n * sizeof *p->heap)) == NULL ||
        power_bins_init(&p->b, n, 0, true, 0, 0, NAN, STREAM_TOPQ_DISTINCT) != PFI_OK ||
        (err = pfi_telemetry_create(&so, &sp->shadow)) != PFI_OK)
        goto fail;
    static const char name[] = "power_energy_w";
    if ((err = tm_field(sp->shadow, name, sizeof name - 1, &sp->fpd_s)) != PFI_OK)
        goto fail;
    sp->shadow->fields[sp->fpd_s].kind = PFI_KIND_POWER_W;
    p->leaves = 1; /* grown with the GPUs (spec_gpu) */
    for (size_t k = 0; k < 2 * n; k++) {
        p->lt[k] = INFINITY;
        p->xs_idx[k] = -2;
    }
    for (size_t g = 0; g < n; g++)
        p->emitted[g] = -INFINITY;
    red->jp.power.mean = red->jp.power.se = NAN;
    red->jp.align_s = NAN;
    p->b.ng = 0;
    p->b.track = true;
    p->b.join_max = -INFINITY;
    p->b.split_min = INFINITY;
    tm_spec_free(tm->spec);
    tm->spec = sp;
    tm->sink = tm_spec_sample;
    tm->sink_ctx = sp;
    tm->sink_counts = true;
    return PFI_OK;
fail:
    tm_spec_free(sp);
    return err;
}

/* The guess's decisions against series s's true gap limit: every distinct step on the same
 * side of both. */
static bool spec_lim_holds(const pfi_telemetry_series *s, double guess)
{
    if (s->stream == NULL)
        return false;
    double lim = tm_gap_limit(s);
    for (size_t i = 0; i < s->stream->n_keys; i++) {
        double d;
        memcpy(&d, &s->stream->ent[i].key, sizeof d);
        if ((d > guess) != (d > lim))
            return false;
    }
    return true;
}

/* The end of the first read: the guess checked (false: dropped); when it holds, tm->stream_red
 * made from it and the derived power moved into tm. */
static pfi_error spec_finish(pfi_telemetry *tm, const pfi_reduce_options *o, long fp, long fe,
                             bool *done)
{
    tm_spec *sp = tm->spec;
    stream_pass *p = &sp->p;
    tm_stream_red *red = p->red;
    *done = false;
    pfi_telemetry_set_sink(tm, NULL, NULL);
    tm->sink_counts = false;
    pfi_reduce_options a = sp->o;
    bool same_o = (a.power_field == NULL) == (o->power_field == NULL) &&
                  (a.power_field == NULL || strcmp(a.power_field, o->power_field) == 0) &&
                  a.q == o->q && a.cap_w == o->cap_w && a.align_s == o->align_s &&
                  a.warmup_s == o->warmup_s;
    /* A power_energy_w the input itself named: the derivation adds to its series, which
     * the guess's own derived series would replace (fuzz_stream). */
    if (p->dead || !same_o || (sp->fp >= 0 && fp != sp->fp) || fp < 0 ||
        pfi_telemetry_field_find(tm, "power_energy_w") >= 0)
        return PFI_OK;
    p->eof = true;
    lt_rebuild(p); /* (spec_push kept the leaves only) */
    for (size_t g = 0; g < p->ng; g++)
        lt_set(p, g, INFINITY);
    if (!(p->b.align > 0))
        return PFI_OK;
    pfi_error err = stream_drain(p);
    if (err != PFI_OK || p->dead || p->nh > 0 || p->fn > 0)
        return err;
    /* The GPUs, the grid step's decisions, the gap limits, the limit series, the counter's
     * span over the power's, the grid's size, the derived power's range. */
    size_t *gpus = pfi_malloc((tm->n_entities ? tm->n_entities : 1) * sizeof *gpus);
    pfi_reduced *jp = pfi_calloc(1, sizeof *jp);
    if (gpus == NULL || jp == NULL) {
        pfi_free(gpus);
        pfi_free(jp);
        return PFI_ERR_NOMEM;
    }
    size_t ng = job_gpus(tm, o, gpus, jp);
    bool ok = ng == p->ng && ng > 0 && memcmp(gpus, red->gpus, ng * sizeof *gpus) == 0;
    pfi_free(gpus);
    memset(jp, 0, sizeof *jp);
    jp->power.mean = jp->power.se = NAN;
    jp->align_s = NAN;
    snprintf(jp->power_field, sizeof jp->power_field, "%s", tm->fields[fp].name);
    if (ok && grid_step(tm, o, red->gpus, ng, (size_t)fp, jp) != PFI_OK) {
        pfi_free(jp);
        return PFI_ERR_NOMEM;
    }
    double align = jp->align_s;
    ok = ok && p->b.join_max <= 0.5 * align && !(p->b.split_min <= 0.5 * align);
    size_t total = 0, rows = 0;
    double t_min = INFINITY, t_max = -INFINITY;
    for (size_t k = 0; ok && k < tm->n_series && k < sp->ss_cap; k++)
        if (sp->seen[k] && (p->ss[k].g >= 0 || p->ss[k].e >= 0) && !isnan(p->ss[k].lim))
            ok = spec_lim_holds(&tm->series[k], p->ss[k].lim);
    for (size_t g = 0; ok && g < ng; g++) {
        const pfi_telemetry_series *s = pfi_telemetry_series_get(tm, red->gpus[g], (size_t)fp);
        const pfi_telemetry_series *es =
            fe >= 0 ? pfi_telemetry_series_get(tm, red->gpus[g], (size_t)fe) : NULL;
        excl_series xs = excl_series_of(tm, red->gpus[g]);
        const long *ix = &p->xs_idx[2 * g];
        if (ix[0] != -2 && (ix[0] != (xs.limit ? (long)(xs.limit - tm->series) : -1) ||
                            ix[1] != (xs.reasons ? (long)(xs.reasons - tm->series) : -1)))
            ok = false;
        if (s == NULL || s->stream == NULL) {
            ok = false;
            break;
        }
        const tm_stream *st = s->stream;
        if (es != NULL && es->stream != NULL && es->n_valid > 0 && s->n_valid > 0) {
            if (!(st->t_min >= es->stream->t_min && st->t_max <= es->stream->t_max))
                ok = false; /* some power samples outside the counter's span */
            red->psum[g] = s->sum;
            red->pn[g] = s->n_valid;
        }
        total += s->n_valid;
        rows += s->n_valid + s->n_miss;
        t_min = st->t_min < t_min ? st->t_min : t_min;
        t_min = st->m_min < t_min ? st->m_min : t_min;
        t_max = st->t_max > t_max ? st->t_max : t_max;
        t_max = st->m_max > t_max ? st->m_max : t_max;
    }
    red->t0 = first_sample_time(tm);
    if (t_min < red->t0)
        red->t0 = t_min;
    double nbd = floor((t_max - red->t0) / align + 0.5) + 1;
    double cap_bins = (double)rows * 16 + 1048576;
    double limit = cap_bins < MAX_BINS - 1 ? cap_bins : MAX_BINS - 1;
    ok = ok && total > 0 && nbd >= 1 && nbd <= limit;
    double hi = tm_power_hi(tm), hi_s = tm_power_hi(sp->shadow);
    ok = ok && (hi == hi_s || !(sp->derived_max > (hi < hi_s ? hi : hi_s)));
    ok = ok && tm->n_stored + sp->shadow->n_stored < PFI_TELEMETRY_MAX_SAMPLES;
    if (!ok) {
        pfi_free(jp);
        return PFI_OK;
    }
    /* It holds: the job power as the second read would give it. */
    red->o = *o;
    red->o.products = NULL;
    red->fp = fp;
    red->ng = ng;
    red->job = true;
    memcpy(red->jp.power_field, jp->power_field, sizeof jp->power_field);
    memcpy(red->jp.align_note, jp->align_note, sizeof jp->align_note);
    red->jp.align_s = align;
    pfi_free(jp);
    if ((err = power_bins_close(&p->b, &red->jp)) != PFI_OK)
        return err;
    bool inexact = false;
    red->jp_err = steady_power(&p->b, o, &red->jp, &inexact);
    if (inexact) { /* the top q needed bin sums folded away: the stored read */
        tm->counted_inexact = true;
        return PFI_OK;
    }
    /* The derived power: its field, its series moved in entity order, the counter's missing
     * rows after them (derive_power). */
    if (fe >= 0) {
        static const char name[] = "power_energy_w";
        size_t fpd;
        if ((err = tm_field(tm, name, sizeof name - 1, &fpd)) != PFI_OK)
            return err;
        tm->fields[fpd].kind = PFI_KIND_POWER_W;
        pfi_telemetry *sh = sp->shadow;
        for (size_t e = 0; e < tm->n_entities; e++) {
            int k = tm->map[e * PFI_TELEMETRY_MAX_FIELDS + (size_t)fe];
            if (k < 0)
                continue;
            int ks = e < sh->n_entities ? sh->map[e * PFI_TELEMETRY_MAX_FIELDS + sp->fpd_s] : -1;
            if (ks >= 0) {
                pfi_telemetry_series *d;
                if ((err = tm_series(tm, e, fpd, &d)) != PFI_OK)
                    return err;
                tm_stream_free(d->stream);
                *d = sh->series[ks];
                d->entity = e;
                d->field = fpd;
                tm_stream_finish(d->stream);
                sh->series[ks] = (pfi_telemetry_series){0};
            }
            for (size_t i = 0; i < tm->series[k].n_miss; i++)
                if ((err = tm_put_miss_time(tm, e, fpd, tm->series[k].miss_t[i])) != PFI_OK)
                    return err;
            int kd = tm->map[e * PFI_TELEMETRY_MAX_FIELDS + fpd];
            if (kd >= 0)
                tm_stream_finish(tm->series[kd].stream);
        }
        tm->n_stored += sh->n_stored;
        tm->n_miss_stored += sh->n_miss_stored;
    }
    p->red = NULL;
    tm_stream_red_free(tm->stream_red);
    tm->stream_red = red;
    *done = true;
    return PFI_OK;
}

pfi_error pfi_reduce_stream(pfi_telemetry *tm, const pfi_reduce_options *o,
                            pfi_error (*replay)(void *ctx, pfi_telemetry_sample_fn fn, void *fctx),
                            void *ctx)
{
    if (tm->spec != NULL && (tm->counted_inexact || !(o->q > 0 && o->q <= 1))) {
        tm_spec_free(tm->spec);
        tm->spec = NULL;
    }
    if (tm->spec == NULL && tm->sink_counts) {
        pfi_telemetry_set_sink(tm, NULL, NULL);
        tm->sink_counts = false;
    }
    if (tm->counted_inexact)
        return PFI_OK;
    for (size_t i = 0; i < tm->n_series; i++)
        tm_stream_finish(tm->series[i].stream);
    if (!(o->q > 0 && o->q <= 1) || !(o->warmup_s >= 0) || !(o->align_s >= 0) ||
        !stream_eligible(tm)) {
        tm->counted_inexact = true;
        return PFI_OK;
    }
    long fe = pfi_telemetry_field_find(tm, "energy_mj");
    long fp;
    if (o->power_field != NULL) {
        fp = strcmp(o->power_field, "power_energy_w") == 0
                 ? -2
                 : pfi_telemetry_field_find(tm, o->power_field);
    } else {
        fp = pfi_telemetry_has_field(tm, "power_avg_w")
                 ? pfi_telemetry_field_find(tm, "power_avg_w")
             : pfi_telemetry_has_field(tm, "power_w") ? pfi_telemetry_field_find(tm, "power_w")
             : fe >= 0                                ? -2
             /* pick_power's third choice: a power_energy_w the input named (fuzz_stream) */
             : pfi_telemetry_has_field(tm, "power_energy_w") ? -2
                                                             : -1;
    }
    if (fp == -2) { /* the derived power is the job's: its samples would be needed */
        tm->counted_inexact = true;
        return PFI_OK;
    }
    if (tm->spec != NULL) { /* the first read's guess, when it holds: no second read */
        bool done = false;
        pfi_error serr = spec_finish(tm, o, fp, fe, &done);
        tm_spec_free(tm->spec);
        tm->spec = NULL;
        if (serr != PFI_OK || done || tm->counted_inexact)
            return serr;
    }
    stream_pass p = {.tm = tm, .o = o, .n_series = tm->n_series, .f_g = SIZE_MAX};
    tm_stream_red *red = pfi_calloc(1, sizeof *red);
    p.red = red;
    p.ss = pfi_calloc(tm->n_series ? tm->n_series : 1, sizeof *p.ss);
    size_t *gpus = pfi_malloc((tm->n_entities ? tm->n_entities : 1) * sizeof *gpus);
    pfi_error err = PFI_ERR_NOMEM;
    if (red == NULL || p.ss == NULL || gpus == NULL)
        goto fail;
    red->o = *o;
    red->fp = fp;
    red->gpus = gpus;
    gpus = NULL;
    red->jp.power.mean = red->jp.power.se = NAN;
    red->jp.align_s = NAN;
    red->ng = p.ng = job_gpus(tm, o, red->gpus, &red->jp);
    red->jp.flags = 0; /* pfi_reduce_power sets the collector's flags itself */
    red->csum = pfi_calloc(p.ng + 1, sizeof *red->csum);
    red->ccov = pfi_calloc(p.ng + 1, sizeof *red->ccov);
    red->pi = pfi_calloc(p.ng + 1, sizeof *red->pi);
    red->picov = pfi_calloc(p.ng + 1, sizeof *red->picov);
    red->psum = pfi_calloc(p.ng + 1, sizeof *red->psum);
    red->pn = pfi_calloc(p.ng + 1, sizeof *red->pn);
    if (red->csum == NULL || red->ccov == NULL || red->pi == NULL || red->picov == NULL ||
        red->psum == NULL || red->pn == NULL)
        goto fail;
    for (size_t k = 0; k < tm->n_series; k++)
        p.ss[k] = (stream_series){.g = -1, .e = -1, .cg = -1, .dk = -1};
    /* The derived series first: making them moves tm->series, which the merge's limit
     * look-ups (p.xs) point into. */
    size_t base = tm->n_series;
    if (fe >= 0 && (err = stream_derived_begin(&p, (size_t)fe)) != PFI_OK)
        goto fail;
    bool fits = true;
    if (fp >= 0 && p.ng > 0 &&
        (err = stream_job_init(&p, red->gpus, p.ng, (size_t)fp, fe, &fits)) != PFI_OK)
        goto fail;
    if (!fits) {
        tm->counted_inexact = true;
        err = PFI_OK;
        goto fail;
    }
    /* A warm-up: t_0 as pfi_reduce_power takes it (the first sample, or the job's first
     * power row when earlier), known now; the fields' warm-up sums made by this read. */
    tm->warm_s = 0;
    if (o->warmup_s > 0) {
        double t0w = red->job ? red->t0 : first_sample_time(tm);
        p.warm = true;
        p.t0w = isfinite(t0w) ? t0w : 0;
        if ((p.seen = pfi_calloc(p.n_series ? p.n_series : 1, sizeof *p.seen)) == NULL) {
            err = PFI_ERR_NOMEM;
            goto fail;
        }
        for (size_t k = 0; k < tm->n_series; k++) {
            tm->series[k].wsum = 0;
            tm->series[k].wn = 0;
        }
    }
    err = replay(ctx, p.warm ? tm_stream_sample_warm : stream_sample, &p);
    if (p.overflow) {
        tm->counted_inexact = true;
        err = PFI_OK;
        goto fail;
    }
    if (err != PFI_OK)
        goto fail;
    for (size_t g = 0; red->job && p.q != NULL && g < p.ng; g++)
        if (p.q[g].pushed != p.q[g].expected) { /* the second read is not the first's */
            tm->counted_inexact = true;
            goto fail;
        }
    if (red->job) {
        if ((err = stream_drain(&p)) != PFI_OK ||
            (err = power_bins_close(&p.b, &red->jp)) != PFI_OK)
            goto fail;
        bool inexact = false;
        p.err = steady_power(&p.b, o, &red->jp, &inexact);
        if (inexact) { /* the top q needed bin sums folded away: the stored read */
            tm->counted_inexact = true;
            err = PFI_OK;
            goto fail;
        }
    }
    if (fe >= 0 && (err = stream_derived_end(&p, (size_t)fe, base)) != PFI_OK)
        goto fail;
    if (p.warm) { /* every valid sample summed once, from the t_0 the reduction will take */
        double t0c = red->job ? red->t0 : first_sample_time(tm);
        bool same = (isfinite(t0c) ? t0c : 0) == p.t0w;
        for (size_t k = 0; same && k < p.n_series; k++)
            same = p.seen[k] == tm->series[k].n_valid;
        if (!same) {
            tm->counted_inexact = true;
            err = PFI_OK;
            goto fail;
        }
        tm->warm_s = o->warmup_s;
        tm->warm_t0 = p.t0w;
    }
    red->jp_err = p.err; /* the steady state's: returned by pfi_reduce_power, as there */
    stream_pass_free(&p);
    tm_stream_red_free(tm->stream_red);
    tm->stream_red = red;
    return PFI_OK;
fail:
    stream_pass_free(&p);
    pfi_free(gpus);
    tm_stream_red_free(red);
    return err;
}

/* pfi_reduce_power of a streamed collector: the options, GPUs and power field are the ones
 * pfi_reduce_stream worked for. */
static bool stream_matches(const tm_stream_red *sr, const pfi_reduce_options *o, const size_t *gpus,
                           size_t ng, long fp)
{
    const pfi_reduce_options *a = &sr->o;
    bool pf = (a->power_field == NULL) == (o->power_field == NULL) &&
              (a->power_field == NULL || strcmp(a->power_field, o->power_field) == 0);
    return pf && a->q == o->q && a->warmup_s == o->warmup_s && a->align_s == o->align_s &&
           a->cap_w == o->cap_w && ng == sr->ng && fp == sr->fp &&
           (ng == 0 || memcmp(gpus, sr->gpus, ng * sizeof *gpus) == 0);
}

/* reduce_job_power's results, made by pfi_reduce_stream: out's job power part, *t0 moved to
 * the earliest power row as there. */
static pfi_error stream_job_power(const tm_stream_red *sr, double *t0, pfi_reduced *out)
{
    const pfi_reduced *jp = &sr->jp;
    memcpy(out->power_field, jp->power_field, sizeof out->power_field);
    memcpy(out->align_note, jp->align_note, sizeof out->align_note);
    out->align_s = jp->align_s;
    out->power = jp->power;
    out->n_bins = jp->n_bins;
    out->n_incomplete = jp->n_incomplete;
    out->n_complete = jp->n_complete;
    out->n_excluded = jp->n_excluded;
    out->n_cap_lost = jp->n_cap_lost;
    out->n_throttled = jp->n_throttled;
    out->flags |= jp->flags;
    if (sr->job)
        *t0 = sr->t0;
    return sr->jp_err;
}

pfi_error pfi_reduce_power(const pfi_telemetry *tm, const pfi_reduce_options *o, pfi_reduced *out)
{
    memset(out, 0, sizeof *out);
    out->power.mean = out->power.se = NAN;
    out->energy_j = NAN;
    out->align_s = NAN;
    if (!(o->q > 0 && o->q <= 1) || !(o->warmup_s >= 0) || !(o->align_s >= 0))
        return PFI_ERR_INVALID_ARGUMENT;
    size_t *gpus = pfi_malloc((tm->n_entities ? tm->n_entities : 1) * sizeof *gpus);
    if (gpus == NULL)
        return PFI_ERR_NOMEM;
    size_t ng = job_gpus(tm, o, gpus, out);
    double t0 = first_sample_time(tm);
    long fp = pick_power(tm, o->power_field);
    const tm_stream_red *sr = tm->stream_red;
    if (sr != NULL && !stream_matches(sr, o, gpus, ng, fp)) {
        pfi_free(gpus);
        return PFI_ERR_INVALID_ARGUMENT;
    }
    if (fp < 0 || ng == 0) {
        out->flags |= PFI_RED_NO_POWER;
    } else {
        pfi_error e = sr != NULL ? stream_job_power(sr, &t0, out)
                                 : reduce_job_power(tm, o, gpus, ng, (size_t)fp, &t0, out);
        if (e != PFI_OK) {
            pfi_free(gpus);
            return e;
        }
        reduce_energy(tm, sr, gpus, ng, (size_t)fp, o->gpus, out);
    }
    pfi_free(gpus);
    /* The counted series' warm-up sums were made from t0 (pfi_reduce_stream): never another. */
    if (o->warmup_s > 0 && tm->warm_s == o->warmup_s && !(tm->warm_t0 == (isfinite(t0) ? t0 : 0)))
        return PFI_ERR_INVALID_ARGUMENT;
    return reduce_features(tm, o, isfinite(t0) ? t0 : 0, out);
}
