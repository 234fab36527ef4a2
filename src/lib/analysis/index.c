/*
 * The Power Flexibility Index of a sweep group: points, exclusions, the three definitions.
 * The Monte Carlo CI is in index_ci.c.
 */
#include "pfi/index.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"

const char *pfi_exclusion_name(pfi_exclusion e)
{
    switch (e) {
    case PFI_EXCL_NONE:
        return "none";
    case PFI_EXCL_MISSING_CAP:
        return "missing_cap";
    case PFI_EXCL_MISSING_POWER:
        return "missing_power";
    case PFI_EXCL_MISSING_THROUGHPUT:
        return "missing_throughput";
    case PFI_EXCL_POWER_ABOVE_REFERENCE:
        return "power_above_reference";
    case PFI_EXCL_CAP_NOT_BINDING:
        return "cap_not_binding";
    case PFI_EXCL_NO_THROUGHPUT_LOSS:
        return "no_throughput_loss";
    case PFI_EXCL_NO_REFERENCE:
        return "no_reference";
    }
    return "unknown";
}

const char *pfi_note_text(unsigned note)
{
    switch (note) {
    case PFI_NOTE_THROUGHPUT_RISES:
        return "throughput_rises_under_cap";
    case PFI_NOTE_MANY_UNDEFINED:
        return "many_undefined_draws";
    case PFI_NOTE_CI_WITHHELD:
        return "ci_withheld_mostly_undefined";
    case PFI_NOTE_ESTIMATE_OUTSIDE_CI:
        return "estimate_outside_ci";
    default:
        return NULL;
    }
}

const char *pfi_label_name(pfi_label l)
{
    switch (l) {
    case PFI_LABEL_UNDEFINED:
        return "undefined";
    case PFI_LABEL_ELASTIC:
        return "elastic";
    case PFI_LABEL_LINEAR:
        return "linear";
    case PFI_LABEL_INELASTIC:
        return "inelastic";
    }
    return "unknown";
}

void pfi_options_init(pfi_options *o)
{
    *o = (pfi_options){.x_min = 0.02,
                       .linear_band = 0.05,
                       .draws = 10000,
                       .seed = 1,
                       .noise_rel = 0.0,
                       .ci_level = 0.95,
                       .threads = 0};
}

void pfi_result_clear(pfi_result *r)
{
    if (r == NULL)
        return;
    pfi_free(r->points);
    memset(r, 0, sizeof *r);
}

double pfi_index_ratio(const double *x, const double *y, size_t n)
{
    if (n == 0)
        return NAN;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += x[i] / y[i];
    return sum / (double)n;
}

static int by_p(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

pfi_error pfi_index_area(const double *p, const double *t, size_t n, double *work, double *out)
{
    *out = NAN;
    if (n < 2)
        return PFI_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++) {
        if (!(p[i] > 0 && p[i] <= 1) || !isfinite(t[i]))
            return PFI_ERR_INVALID_ARGUMENT;
        work[2 * i] = p[i];
        work[2 * i + 1] = t[i];
    }
    qsort(work, n, 2 * sizeof *work, by_p);
    double p_min = work[0];
    if (!(p_min < 1) || work[2 * (n - 1)] != 1.0)
        return PFI_ERR_INVALID_ARGUMENT;
    /* t − p is linear between points, so the trapezoid rule is exact for the numerator. */
    double num = 0.0;
    for (size_t i = 1; i < n; i++) {
        double p0 = work[2 * (i - 1)], t0 = work[2 * (i - 1) + 1];
        double p1 = work[2 * i], t1 = work[2 * i + 1];
        num += 0.5 * (p1 - p0) * ((t0 - p0) + (t1 - p1));
    }
    double den = 0.5 * (1.0 - p_min) * (1.0 - p_min);
    *out = num / den;
    return PFI_OK;
}

pfi_error pfi_index_ce(const double *p, const double *t, size_t n, double *out)
{
    *out = NAN;
    if (n == 0)
        return PFI_ERR_INVALID_ARGUMENT;
    double sxy = 0.0, sxx = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!(p[i] > 0 && p[i] < 1) || !(t[i] > 0) || !isfinite(t[i]))
            return PFI_ERR_INVALID_ARGUMENT;
        double lp = log(p[i]);
        sxy += lp * log(t[i]);
        sxx += lp * lp;
    }
    *out = 1.0 - sxy / sxx;
    return PFI_OK;
}

/* A run's SE, or NaN. */
static double run_se(const pfi_run *r, unsigned flag, double value)
{
    return (r->valid & flag) ? value : NAN;
}

/*
 * Build the points: invalid runs one by one, valid runs merged per cap. Runs arrive sorted by
 * cap descending with missing caps last (pfi/runs.h), so equal caps are adjacent.
 */
static pfi_error build_points(const pfi_group *g, pfi_point **out, size_t *n_out)
{
    pfi_point *pts = pfi_calloc(g->n_runs ? g->n_runs : 1, sizeof *pts);
    if (pts == NULL)
        return PFI_ERR_NOMEM;
    size_t n = 0;
    const unsigned need = PFI_RUN_CAP | PFI_RUN_POWER | PFI_RUN_THROUGHPUT;
    for (size_t i = 0; i < g->n_runs; i++) {
        const pfi_run *r = &g->runs[i];
        pfi_point pt = {.cap_w = (r->valid & PFI_RUN_CAP) ? r->cap_w : NAN,
                        .power_w = (r->valid & PFI_RUN_POWER) ? r->power_w : NAN,
                        .throughput = (r->valid & PFI_RUN_THROUGHPUT) ? r->throughput : NAN,
                        .power_se_w = run_se(r, PFI_RUN_POWER_SE, r->power_se_w),
                        .throughput_se = run_se(r, PFI_RUN_THROUGHPUT_SE, r->throughput_se),
                        .x = NAN,
                        .y = NAN,
                        .line = r->line,
                        .n_runs = 1};
        if ((r->valid & need) != need) {
            pt.exclusion = !(r->valid & PFI_RUN_CAP)     ? PFI_EXCL_MISSING_CAP
                           : !(r->valid & PFI_RUN_POWER) ? PFI_EXCL_MISSING_POWER
                                                         : PFI_EXCL_MISSING_THROUGHPUT;
            pts[n++] = pt;
            continue;
        }
        /* merge into the previous valid point at the same cap */
        pfi_point *prev = NULL;
        for (size_t j = n; j-- > 0;) {
            if (pts[j].exclusion == PFI_EXCL_NONE) {
                prev = pts[j].cap_w == pt.cap_w ? &pts[j] : NULL;
                break;
            }
        }
        if (prev == NULL) {
            pts[n++] = pt;
            continue;
        }
        /* sums and root-sum-squares (hypot: no overflow of se², NaN stays NaN = unknown) */
        prev->power_w += pt.power_w;
        prev->throughput += pt.throughput;
        prev->power_se_w = hypot(prev->power_se_w, pt.power_se_w);
        prev->throughput_se = hypot(prev->throughput_se, pt.throughput_se);
        prev->n_runs++;
    }
    for (size_t j = 0; j < n; j++) {
        pfi_point *p = &pts[j];
        if (p->exclusion != PFI_EXCL_NONE || p->n_runs == 1)
            continue;
        double k = (double)p->n_runs;
        p->power_w /= k;
        p->throughput /= k;
        p->power_se_w /= k;
        p->throughput_se /= k;
    }
    *out = pts;
    *n_out = n;
    return PFI_OK;
}

static pfi_label label_of(double pfi, double band)
{
    if (isnan(pfi))
        return PFI_LABEL_UNDEFINED;
    if (pfi > 1.0 + band)
        return PFI_LABEL_INELASTIC;
    if (pfi < 1.0 - band)
        return PFI_LABEL_ELASTIC;
    return PFI_LABEL_LINEAR;
}

static bool options_ok(const pfi_options *o)
{
    return o != NULL && o->x_min >= 0 && o->x_min < 1 && o->linear_band >= 0 && o->noise_rel >= 0 &&
           o->noise_rel < 1 && o->ci_level > 0 && o->ci_level < 1;
}

pfi_error pfi_group_compute(const pfi_group *g, const pfi_options *o, pfi_result *out)
{
    memset(out, 0, sizeof *out);
    out->ratio = out->area = out->ce = NAN;
    out->ci_lo = out->ci_median = out->ci_hi = NAN;
    out->ci_note = "not computed";
    if (!options_ok(o))
        return PFI_ERR_INVALID_ARGUMENT;
    pfi_point *pts;
    size_t n;
    pfi_error e = build_points(g, &pts, &n);
    if (e != PFI_OK)
        return e;
    /*
     * The reference: the point at the group's highest cap. Points come cap-descending, so it
     * is the first valid one — unless every run at the highest cap lacks power or
     * throughput: then there is no reference, rather than a quietly lower one that would
     * change the cap grid the PFI is computed on.
     */
    size_t ref = n;
    for (size_t j = 0; j < n && ref == n; j++)
        if (pts[j].exclusion == PFI_EXCL_NONE)
            ref = j;
    double top_cap = n > 0 ? pts[0].cap_w : NAN; /* NaN when no run has a cap */
    if (ref == n || pts[ref].cap_w != top_cap) {
        for (size_t j = 0; j < n; j++)
            if (pts[j].exclusion == PFI_EXCL_NONE)
                pts[j].exclusion = PFI_EXCL_NO_REFERENCE;
        out->points = pts;
        out->n_points = n;
        out->undefined_reason = ref == n ? "no run with a cap, power and throughput"
                                         : "the runs at the highest cap (the reference) lack "
                                           "power or throughput";
        return PFI_OK;
    }
    out->has_reference = true;
    out->reference = pts[ref];
    out->reference.x = out->reference.y = 0.0;
    memmove(pts + ref, pts + ref + 1, (n - ref - 1) * sizeof *pts);
    n--;
    out->points = pts;
    out->n_points = n;
    const double p0 = out->reference.power_w, t0 = out->reference.throughput;
    if (!(p0 > 0) || !(t0 > 0)) {
        out->undefined_reason = "the reference run has zero power or zero throughput";
        return PFI_OK;
    }

    /* Scratch on the stack for small groups; a group larger than this is rare. */
    enum { SMALL = 64 };
    double small[6 * SMALL];
    double *buf = n + 1 <= SMALL ? small : pfi_malloc(6 * (n + 1) * sizeof *buf);
    if (buf == NULL)
        return PFI_ERR_NOMEM;
    double *xs = buf, *ys = buf + (n + 1), *ps = buf + 2 * (n + 1), *ts = buf + 3 * (n + 1);
    double *work = buf + 4 * (n + 1);
    size_t n_ratio = 0, n_used = 0;
    for (size_t j = 0; j < n; j++) {
        pfi_point *p = &pts[j];
        if (p->exclusion != PFI_EXCL_NONE)
            continue;
        p->x = (p0 - p->power_w) / p0;
        p->y = (t0 - p->throughput) / t0;
        if (p->x < o->x_min) {
            p->exclusion = p->x < 0 ? PFI_EXCL_POWER_ABOVE_REFERENCE : PFI_EXCL_CAP_NOT_BINDING;
            continue;
        }
        ps[n_used] = p->power_w / p0;
        ts[n_used] = p->throughput / t0;
        n_used++;
        if (p->y <= 0) {
            p->exclusion = PFI_EXCL_NO_THROUGHPUT_LOSS;
            continue;
        }
        xs[n_ratio] = p->x;
        ys[n_ratio] = p->y;
        n_ratio++;
    }
    out->n_used = n_used;
    out->n_ratio = n_ratio;
    out->ratio = pfi_index_ratio(xs, ys, n_ratio);
    if (n_used > 0) {
        /* t = 0 (a run that made no progress) has no logarithm: CE stays undefined */
        (void)pfi_index_ce(ps, ts, n_used, &out->ce);
        ps[n_used] = 1.0;
        ts[n_used] = 1.0;
        (void)pfi_index_area(ps, ts, n_used + 1, work, &out->area);
    }
    size_t n_valid = 0;
    for (size_t j = 0; j < n; j++)
        n_valid += !isnan(pts[j].x);
    if (n_valid == 0)
        out->undefined_reason = "only one cap was measured (nothing to compare with the reference)";
    else if (n_ratio == 0)
        out->undefined_reason = n_used == 0 ? "no capped run binds (every power decrease is "
                                              "below x_min)"
                                            : "no capped run lost throughput";
    out->label = label_of(out->ratio, o->linear_band);
    bool above = false;
    for (size_t j = 0; j < n_used; j++)
        above |= ts[j] > 1.0;
    if (above && (out->area > 1.0 || out->ce < 0.0))
        out->notes |= PFI_NOTE_THROUGHPUT_RISES;
    if (buf != small)
        pfi_free(buf);
    return PFI_OK;
}
