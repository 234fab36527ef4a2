/*
 * Power allocation under a cluster budget: the oracle (concave envelope + Lagrangian
 * threshold by weighted selection) and the heuristic strategies (shares + water-filling).
 * See pfi/allocate.h for the method and its guarantees.
 */
#include "pfi/allocate.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/curve.h"

/* Most candidate caps per job (a tiny cap step on a wide range is a mistake, not a plan). */
#define MAX_CANDIDATES_PER_JOB 100000

static const char *const strategy_names[PFI_STRATEGY_COUNT] = {
    "oracle", "equal", "class-weighted", "pfi-weighted", "pfi-model", "raw-telemetry"};

const char *pfi_strategy_name(pfi_strategy s)
{
    return (unsigned)s < PFI_STRATEGY_COUNT ? strategy_names[s] : "unknown";
}

pfi_error pfi_strategy_parse(const char *name, pfi_strategy *out)
{
    for (unsigned i = 0; name != NULL && i < PFI_STRATEGY_COUNT; i++) {
        if (strcmp(name, strategy_names[i]) == 0) {
            *out = (pfi_strategy)i;
            return PFI_OK;
        }
    }
    return PFI_ERR_INVALID_ARGUMENT;
}

void pfi_alloc_options_init(pfi_alloc_options *o)
{
    memset(o, 0, sizeof *o);
    o->strategy = PFI_STRATEGY_ORACLE;
    o->budget_w = NAN;
    o->reduction = 0.3;
    o->cap_step_w = 0.0;
    o->class_factor = 2.0;
    o->x_min = 0.02;
    pfi_model_job_init(&o->shape, 1.0, 700.0);
}

pfi_error pfi_alloc_result_init(pfi_alloc_result *r, size_t n)
{
    memset(r, 0, sizeof *r);
    double **arrays[] = {&r->cap_w, &r->power_w, &r->tput_tok_s, &r->marginal_down,
                         &r->marginal_up, &r->shed_w};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        *arrays[i] = calloc(n > 0 ? n : 1, sizeof(double));
        if (*arrays[i] == NULL) {
            pfi_alloc_result_clear(r);
            return PFI_ERR_NOMEM;
        }
    }
    r->n = n;
    return PFI_OK;
}

void pfi_alloc_result_clear(pfi_alloc_result *r)
{
    if (r == NULL)
        return;
    free(r->cap_w);
    free(r->power_w);
    free(r->tput_tok_s);
    free(r->marginal_down);
    free(r->marginal_up);
    free(r->shed_w);
    memset(r, 0, sizeof *r);
}

static pfi_error fail(pfi_diag *d, pfi_error e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static pfi_error fail(pfi_diag *d, pfi_error e, const char *fmt, ...)
{
    if (d != NULL) {
        pfi_diag_clear(d);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->message, sizeof d->message, fmt, ap);
        va_end(ap);
    }
    return e;
}

/* ---- weighted selection ---------------------------------------------------------------- */

static inline void swap2(double *a, double *b, size_t i, size_t j)
{
    double t = a[i];
    a[i] = a[j];
    a[j] = t;
    t = b[i];
    b[i] = b[j];
    b[j] = t;
}

/*
 * Quickselect on slopes with weights: three-way partition around a pivot (median of three),
 * keep the side where the capacity runs out. Each round is one pass over the live range.
 */
double pfi_alloc_select(double *slope, double *width, size_t m, double cap, double *above)
{
    double total = 0;
    for (size_t i = 0; i < m; i++)
        total += width[i];
    if (total <= cap || m == 0) {
        *above = total;
        return -INFINITY;
    }
    size_t lo = 0, hi = m; /* live range [lo, hi) */
    double acc = 0;        /* width of segments already known to be above the live range */
    uint64_t state = 0x9E3779B97F4A7C15ull ^ (uint64_t)m;
    for (;;) {
        size_t n = hi - lo;
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        double a = slope[lo + state % n], b = slope[lo + (state >> 20) % n],
               c = slope[lo + (state >> 40) % n];
        double pivot = fmax(fmin(a, b), fmin(fmax(a, b), c));
        /* Dutch flag: [lo, gt) > pivot, [gt, eq) == pivot, [lt, hi) < pivot */
        size_t gt = lo, i = lo, lt = hi;
        double w_gt = 0, w_eq = 0;
        while (i < lt) {
            double s = slope[i];
            if (s > pivot) {
                w_gt += width[i];
                swap2(slope, width, i, gt);
                gt++;
                i++;
            } else if (s < pivot) {
                lt--;
                swap2(slope, width, i, lt);
            } else {
                w_eq += width[i];
                i++;
            }
        }
        if (acc + w_gt > cap) {
            hi = gt;
        } else if (acc + w_gt + w_eq >= cap) {
            *above = acc + w_gt;
            return pivot;
        } else {
            acc += w_gt + w_eq;
            lo = lt;
        }
        if (lo >= hi) { /* cannot happen while total > cap; keep the loop finite anyway */
            *above = acc;
            return pivot;
        }
    }
}

/* ---- per-job candidate points ---------------------------------------------------------- */

typedef struct workspace {
    size_t n;
    size_t *c0, *nc;     /* candidates of job j: [c0[j], c0[j] + nc[j]) */
    double *lo, *hi;     /* cap bounds after floors */
    double *cand_cap, *cand_d, *cand_t; /* candidate caps, true power and throughput */
    double *est_d, *est_t; /* pfi-model: estimated power and throughput at the candidates */
    size_t *env;         /* envelope vertices (absolute candidate indices), per job at c0 */
    size_t *ne;          /* envelope size per job */
    double *seg_slope, *seg_width; /* segment s of job j at c0[j] + s */
    double *sel_slope, *sel_width; /* scratch for the selection */
    double *pick;        /* chosen power per job */
    double *share;       /* heuristic shares / sheds */
    unsigned char *flag;
    size_t total;
} workspace;

static void ws_free(workspace *w)
{
    free(w->c0);
    free(w->nc);
    free(w->lo);
    free(w->hi);
    free(w->cand_cap);
    free(w->cand_d);
    free(w->cand_t);
    free(w->est_d);
    free(w->est_t);
    free(w->env);
    free(w->ne);
    free(w->seg_slope);
    free(w->seg_width);
    free(w->sel_slope);
    free(w->sel_width);
    free(w->pick);
    free(w->share);
    free(w->flag);
}

static inline double opt(const double *a, size_t j, double dflt)
{
    return a != NULL && !isnan(a[j]) ? a[j] : dflt;
}

/* Smallest cap in job j's curve with T(c) >= need (need <= T at the last point). */
static double cap_for_tput(const double *c, const double *t, size_t k, double need)
{
    if (t[0] >= need)
        return c[0];
    for (size_t i = 1; i < k; i++) {
        if (t[i] >= need) {
            double f = (need - t[i - 1]) / (t[i] - t[i - 1]);
            double v = c[i - 1] + f * (c[i] - c[i - 1]);
            return v > c[i] ? c[i] : v;
        }
    }
    return c[k - 1];
}

/* Validate job j and set its bounds and candidate count. */
static pfi_error job_bounds(const pfi_alloc_jobs *J, const pfi_alloc_options *o, workspace *w,
                            size_t j, size_t *unmet, pfi_diag *d)
{
    size_t a = J->offset[j], b = J->offset[j + 1];
    if (b <= a)
        return fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: no curve points", j + 1);
    size_t k = b - a;
    const double *c = J->cap_w + a, *D = J->power_w + a, *T = J->tput_tok_s + a;
    pfi_curve_report rep;
    if (pfi_curve_check(k, c, D, T, &rep) != PFI_OK)
        return fail(d, PFI_ERR_INVALID_ARGUMENT,
                    "job %zu: curve needs finite caps ascending, power > 0, throughput >= 0",
                    j + 1);
    if (rep.power_violations > 0 || rep.tput_violations > 0)
        return fail(d, PFI_ERR_INVALID_ARGUMENT,
                    "job %zu: power or throughput falls as the cap rises (repair the curve "
                    "first)", j + 1);
    double lo = opt(J->cap_lo_w, j, c[0]), hi = opt(J->cap_hi_w, j, c[k - 1]);
    if (!(lo >= c[0] && hi <= c[k - 1] && lo <= hi))
        return fail(d, PFI_ERR_INVALID_ARGUMENT,
                    "job %zu: cap bounds [%g, %g] W outside the curve's [%g, %g] W or reversed",
                    j + 1, lo, hi, c[0], c[k - 1]);
    double s = opt(J->floor_frac, j, 0.0);
    if (!(s >= 0 && s <= 1))
        return fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: floor %g outside [0, 1]", j + 1, s);
    if (s > 0) {
        double need = s * T[k - 1];
        if (pfi_interp(c, T, k, hi) < need) {
            (*unmet)++;
            lo = hi;
        } else {
            double cf = cap_for_tput(c, T, k, need);
            if (cf > lo)
                lo = cf > hi ? hi : cf;
        }
    }
    w->lo[j] = lo;
    w->hi[j] = hi;
    size_t count;
    if (o->cap_step_w > 0) {
        double g = ceil(lo / o->cap_step_w - 1e-9) * o->cap_step_w;
        double span = (hi - g) / o->cap_step_w;
        if (span > MAX_CANDIDATES_PER_JOB)
            return fail(d, PFI_ERR_INVALID_ARGUMENT,
                        "job %zu: cap step %g W gives more than %d caps", j + 1, o->cap_step_w,
                        MAX_CANDIDATES_PER_JOB);
        count = span >= 0 ? (size_t)floor(span + 1e-9) + 2 : 1;
    } else {
        count = k + 2;
    }
    w->nc[j] = count;
    return PFI_OK;
}

/* Fill job j's candidate caps with true power and throughput; sets nc[j] to the real count. */
static void job_candidates(const pfi_alloc_jobs *J, const pfi_alloc_options *o, workspace *w,
                           size_t j)
{
    size_t a = J->offset[j], k = J->offset[j + 1] - a;
    const double *c = J->cap_w + a, *D = J->power_w + a, *T = J->tput_tok_s + a;
    double lo = w->lo[j], hi = w->hi[j];
    double *cc = w->cand_cap + w->c0[j];
    size_t m = 0;
    if (o->cap_step_w > 0) {
        double step = o->cap_step_w;
        double g = ceil(lo / step - 1e-9) * step;
        for (size_t i = 0; i + 1 < w->nc[j]; i++) {
            double v = g + (double)i * step;
            if (v >= hi - 1e-9 * step)
                break;
            cc[m++] = v;
        }
        cc[m++] = hi;
    } else {
        cc[m++] = lo;
        for (size_t i = 0; i < k; i++)
            if (c[i] > lo && c[i] < hi)
                cc[m++] = c[i];
        if (hi > lo)
            cc[m++] = hi;
    }
    w->nc[j] = m;
    for (size_t i = 0; i < m; i++) {
        w->cand_d[w->c0[j] + i] = pfi_interp(c, D, k, cc[i]);
        w->cand_t[w->c0[j] + i] = pfi_interp(c, T, k, cc[i]);
    }
}

/* Envelope and segments of every job over power pw[] and throughput tp[] (weighted by wt). */
static void build_envelopes(const pfi_alloc_jobs *J, workspace *w, const double *pw,
                            const double *tp, double *yscratch)
{
    for (size_t j = 0; j < w->n; j++) {
        size_t c0 = w->c0[j], m = w->nc[j];
        double wt = opt(J->weight, j, 1.0);
        for (size_t i = 0; i < m; i++)
            yscratch[c0 + i] = wt * tp[c0 + i];
        size_t ne = pfi_envelope(pw + c0, yscratch + c0, m, w->env + c0);
        for (size_t v = 0; v < ne; v++)
            w->env[c0 + v] += c0;
        w->ne[j] = ne;
        for (size_t v = 0; v + 1 < ne; v++) {
            size_t p = w->env[c0 + v], q = w->env[c0 + v + 1];
            w->seg_width[c0 + v] = pw[q] - pw[p];
            w->seg_slope[c0 + v] = (yscratch[q] - yscratch[p]) / (pw[q] - pw[p]);
        }
    }
}

/*
 * The Lagrangian threshold on the envelopes: w->pick[j] = chosen power. Returns the
 * envelope (LP) value, *lambda the threshold. Caller has checked base <= budget.
 */
static double oracle_core(workspace *w, const double *pw, const double *y, double budget,
                          bool discrete, double *lambda)
{
    double base = 0;
    size_t m = 0;
    for (size_t j = 0; j < w->n; j++) {
        size_t c0 = w->c0[j];
        base += pw[w->env[c0]];
        for (size_t v = 0; v + 1 < w->ne[j]; v++) {
            w->sel_slope[m] = w->seg_slope[c0 + v];
            w->sel_width[m] = w->seg_width[c0 + v];
            m++;
        }
    }
    double cap = budget - base, above = 0;
    double lam = pfi_alloc_select(w->sel_slope, w->sel_width, m, cap, &above);
    double rem = cap - above; /* for the segments exactly at the threshold */
    double value = 0;
    for (size_t j = 0; j < w->n; j++) {
        size_t c0 = w->c0[j];
        double p = pw[w->env[c0]], v = y[w->env[c0]];
        for (size_t s = 0; s + 1 < w->ne[j]; s++) {
            double sl = w->seg_slope[c0 + s], wd = w->seg_width[c0 + s];
            if (sl > lam) {
                p = pw[w->env[c0 + s + 1]];
                v = y[w->env[c0 + s + 1]];
                continue;
            }
            if (sl == lam && rem > 0) {
                if (wd <= rem) {
                    rem -= wd;
                    p = pw[w->env[c0 + s + 1]];
                    v = y[w->env[c0 + s + 1]];
                    continue;
                }
                if (!discrete) {
                    p += rem;
                    v += rem * sl;
                } else {
                    value += rem * sl; /* in the bound, not in the pick: rounded down */
                }
                rem = 0;
            }
            break;
        }
        w->pick[j] = p;
        value += v;
    }
    *lambda = lam;
    return value;
}

/* The cap of job j drawing at most power p on its candidates (snapped down when discrete). */
static double cap_for_power(const workspace *w, const double *pw, size_t j, double p,
                            bool discrete)
{
    size_t c0 = w->c0[j], m = w->nc[j];
    double tol = 1e-12 * fabs(p) + 1e-12;
    size_t i = 0;
    while (i + 1 < m && pw[c0 + i + 1] <= p + tol)
        i++;
    if (discrete || i + 1 == m || pw[c0 + i + 1] <= pw[c0 + i])
        return w->cand_cap[c0 + i];
    double f = (p - pw[c0 + i]) / (pw[c0 + i + 1] - pw[c0 + i]);
    if (f < 0)
        f = 0;
    return w->cand_cap[c0 + i] + f * (w->cand_cap[c0 + i + 1] - w->cand_cap[c0 + i]);
}

/* Envelope slopes around power p for job j (true envelope). */
static void marginals(const workspace *w, const double *pw, size_t j, double p, double *down,
                      double *up)
{
    size_t c0 = w->c0[j], ne = w->ne[j];
    *down = *up = NAN;
    double tol = 1e-9 * fabs(p) + 1e-9;
    for (size_t v = 0; v < ne; v++) {
        double pv = pw[w->env[c0 + v]];
        if (fabs(pv - p) <= tol) {
            if (v > 0)
                *down = w->seg_slope[c0 + v - 1];
            if (v + 1 < ne)
                *up = w->seg_slope[c0 + v];
            return;
        }
        if (pv > p) {
            if (v > 0)
                *down = *up = w->seg_slope[c0 + v - 1];
            return;
        }
    }
}

/* Water-filling: shed[j] = min(max[j], θ share[j]) with Σ shed = need; the rest by headroom. */
static void water_fill(size_t n, const double *share, const double *maxshed, double need,
                       double *shed, unsigned char *clamped)
{
    for (size_t j = 0; j < n; j++) {
        clamped[j] = !(share[j] > 0) || !(maxshed[j] > 0);
        shed[j] = 0;
    }
    double theta = 0;
    for (;;) {
        double fixed = 0, s = 0;
        for (size_t j = 0; j < n; j++) {
            if (clamped[j])
                fixed += shed[j];
            else
                s += share[j];
        }
        if (!(s > 0))
            break;
        theta = (need - fixed) / s;
        bool changed = false;
        for (size_t j = 0; j < n; j++) {
            if (!clamped[j] && theta * share[j] >= maxshed[j]) {
                clamped[j] = 1;
                shed[j] = maxshed[j];
                changed = true;
            }
        }
        if (!changed) {
            for (size_t j = 0; j < n; j++)
                if (!clamped[j])
                    shed[j] = theta * share[j];
            break;
        }
    }
    /* what the shares could not place (all zero or all clamped): by remaining headroom */
    double placed = 0, room = 0;
    for (size_t j = 0; j < n; j++) {
        placed += shed[j];
        room += maxshed[j] - shed[j];
    }
    double left = need - placed;
    if (left > 1e-12 * need && room > 0) {
        double f = left / room;
        if (f > 1)
            f = 1;
        for (size_t j = 0; j < n; j++)
            shed[j] += f * (maxshed[j] - shed[j]);
    }
}

/*
 * The compute share α at which the §7 model m (α itself ignored) has ratio PFI pfi on the caps
 * c[k]; 1 when it cannot be found (fewer than two caps, an unknown PFI, or no cap of the grid
 * binds in the model, so that the PFI carries no information: treat the job as compute-bound).
 * A PFI outside what α ∈ [0.02, 1] reaches gives the nearer end.
 */
static double share_for_pfi(const pfi_model_job *m, const double *c, size_t k, double x_min,
                            double pfi)
{
    double alpha;
    if (k < 2 || pfi_model_share_for_pfi(m, c, k, x_min, pfi, &alpha, NULL) != PFI_OK ||
        !(alpha > 0 && alpha <= 1))
        return 1.0;
    return alpha;
}

/* Estimated curves for pfi-model: the §7 model through each job's reference point. Only ratios
   to the reference enter, so the model runs per GPU with any throughput scale. */
static pfi_error estimate_curves(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                                 workspace *w, pfi_diag *d)
{
    double ps_frac = o->shape.power_static_w / o->shape.power_uncapped_w;
    for (size_t j = 0; j < w->n; j++) {
        size_t a = J->offset[j], k = J->offset[j + 1] - a;
        const double *c = J->cap_w + a;
        double g = opt(J->gpus, j, 1.0);
        double d_ref = J->power_w[a + k - 1], t_ref = J->tput_tok_s[a + k - 1];
        pfi_model_job m = o->shape;
        m.gpus = 1;
        m.power_uncapped_w = d_ref / g;
        m.power_static_w = ps_frac * m.power_uncapped_w;
        double alpha = J->model_alpha != NULL ? J->model_alpha[j]
                                              : share_for_pfi(&m, c, k, o->x_min, J->pfi[j]);
        if (!(alpha > 0 && alpha <= 1))
            alpha = 1.0;
        pfi_model_set_share(&m, alpha);
        pfi_model_point ref, pt;
        if (pfi_model_eval(&m, c[k - 1], &ref) != PFI_OK)
            return fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: model rejected", j + 1);
        for (size_t i = 0; i < w->nc[j]; i++) {
            size_t q = w->c0[j] + i;
            pfi_model_eval(&m, w->cand_cap[q], &pt);
            w->est_d[q] = d_ref * pt.job_power_w / ref.job_power_w;
            w->est_t[q] = t_ref * pt.throughput / ref.throughput;
        }
        /* the model is monotone; the clamp to the reference keeps rounding from breaking it */
        for (size_t i = 1; i < w->nc[j]; i++) {
            size_t q = w->c0[j] + i;
            if (w->est_d[q] < w->est_d[q - 1])
                w->est_d[q] = w->est_d[q - 1];
            if (w->est_t[q] < w->est_t[q - 1])
                w->est_t[q] = w->est_t[q - 1];
        }
    }
    return PFI_OK;
}

static pfi_error check_inputs(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                              const pfi_alloc_result *r, pfi_diag *d)
{
    if (J == NULL || o == NULL || r == NULL || J->n == 0 || J->offset == NULL ||
        J->cap_w == NULL || J->power_w == NULL || J->tput_tok_s == NULL)
        return fail(d, PFI_ERR_INVALID_ARGUMENT, "no jobs");
    if (r->n != J->n)
        return fail(d, PFI_ERR_INVALID_ARGUMENT, "result sized for %zu jobs, not %zu", r->n,
                    J->n);
    if ((unsigned)o->strategy >= PFI_STRATEGY_COUNT)
        return fail(d, PFI_ERR_INVALID_ARGUMENT, "unknown strategy");
    if (isnan(o->budget_w) ? !(o->reduction >= 0 && o->reduction <= 1)
                           : !(o->budget_w >= 0 && isfinite(o->budget_w)))
        return fail(d, PFI_ERR_INVALID_ARGUMENT,
                    "the budget must be >= 0 W, or the reduction in [0, 1]");
    if (!(o->cap_step_w >= 0) || !isfinite(o->cap_step_w))
        return fail(d, PFI_ERR_INVALID_ARGUMENT, "the cap step must be >= 0 W");
    bool need_pfi = o->strategy == PFI_STRATEGY_PFI_WEIGHTED ||
                    o->strategy == PFI_STRATEGY_PFI_MODEL;
    for (size_t j = 0; j < J->n; j++) {
        if (opt(J->weight, j, 1.0) < 0 || !isfinite(opt(J->weight, j, 1.0)))
            return fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: weight must be >= 0", j + 1);
        if (!(opt(J->gpus, j, 1.0) >= 1))
            return fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: gpus must be >= 1", j + 1);
        if (need_pfi && (J->pfi == NULL || !(J->pfi[j] > 0) || !isfinite(J->pfi[j])))
            return fail(d, PFI_ERR_INVALID_ARGUMENT,
                        "job %zu: strategy %s needs a PFI estimate > 0", j + 1,
                        pfi_strategy_name(o->strategy));
        if (o->strategy == PFI_STRATEGY_RAW_TELEMETRY &&
            (J->feature == NULL || !(J->feature[j] >= 0) || !isfinite(J->feature[j])))
            return fail(d, PFI_ERR_INVALID_ARGUMENT,
                        "job %zu: strategy raw-telemetry needs a feature value >= 0", j + 1);
    }
    return PFI_OK;
}

pfi_error pfi_allocate(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                       pfi_alloc_result *r, pfi_diag *d)
{
    pfi_error e = check_inputs(J, o, r, d);
    if (e != PFI_OK)
        return e;
    size_t n = J->n;
    workspace w;
    memset(&w, 0, sizeof w);
    w.n = n;
    w.c0 = malloc(n * sizeof *w.c0);
    w.nc = malloc(n * sizeof *w.nc);
    w.ne = malloc(n * sizeof *w.ne);
    w.lo = malloc(n * sizeof *w.lo);
    w.hi = malloc(n * sizeof *w.hi);
    w.pick = malloc(n * sizeof *w.pick);
    w.share = malloc(n * sizeof *w.share);
    w.flag = malloc(n);
    if (!w.c0 || !w.nc || !w.ne || !w.lo || !w.hi || !w.pick || !w.share || !w.flag) {
        ws_free(&w);
        return PFI_ERR_NOMEM;
    }
    size_t unmet = 0, total = 0;
    for (size_t j = 0; j < n; j++) {
        e = job_bounds(J, o, &w, j, &unmet, d);
        if (e != PFI_OK) {
            ws_free(&w);
            return e;
        }
        w.c0[j] = total;
        total += w.nc[j];
    }
    w.total = total;
    bool model = o->strategy == PFI_STRATEGY_PFI_MODEL;
    w.cand_cap = malloc(total * sizeof(double));
    w.cand_d = malloc(total * sizeof(double));
    w.cand_t = malloc(total * sizeof(double));
    w.env = malloc(total * sizeof(size_t));
    w.seg_slope = malloc(total * sizeof(double));
    w.seg_width = malloc(total * sizeof(double));
    w.sel_slope = malloc(total * sizeof(double));
    w.sel_width = malloc(total * sizeof(double));
    if (model) {
        w.est_d = malloc(total * sizeof(double));
        w.est_t = malloc(total * sizeof(double));
    }
    if (!w.cand_cap || !w.cand_d || !w.cand_t || !w.env || !w.seg_slope || !w.seg_width ||
        !w.sel_slope || !w.sel_width || (model && (!w.est_d || !w.est_t))) {
        ws_free(&w);
        return PFI_ERR_NOMEM;
    }
    for (size_t j = 0; j < n; j++)
        job_candidates(J, o, &w, j);

    /* totals and the budget */
    double ref_p = 0, ref_t = 0, lo_p = 0, hi_p = 0;
    for (size_t j = 0; j < n; j++) {
        size_t last = J->offset[j + 1] - 1;
        ref_p += J->power_w[last];
        ref_t += J->tput_tok_s[last];
        lo_p += w.cand_d[w.c0[j]];
        hi_p += w.cand_d[w.c0[j] + w.nc[j] - 1];
    }
    double budget = isnan(o->budget_w) ? (1.0 - o->reduction) * ref_p : o->budget_w;
    bool discrete = o->cap_step_w > 0;
    r->budget_w = budget;
    r->ref_power_w = ref_p;
    r->ref_tput_tok_s = ref_t;
    r->min_power_w = lo_p;
    r->floors_unmet = unmet;
    r->feasible = lo_p <= budget;
    r->shortfall_w = r->feasible ? 0.0 : lo_p - budget;
    r->upper_bound = NAN;
    r->lambda = NAN;

    /* the true envelopes (for the oracle and for every job's marginals); y in sel_slope */
    double *ytrue = malloc(total * sizeof(double));
    if (ytrue == NULL) {
        ws_free(&w);
        return PFI_ERR_NOMEM;
    }
    if (model) {
        e = estimate_curves(J, o, &w, d);
        if (e != PFI_OK) {
            free(ytrue);
            ws_free(&w);
            return e;
        }
    }

    if (!r->feasible) {
        for (size_t j = 0; j < n; j++)
            w.pick[j] = w.cand_d[w.c0[j]];
        r->method = "infeasible: every job at its lower bound";
    } else if (hi_p <= budget) {
        for (size_t j = 0; j < n; j++)
            w.pick[j] = w.cand_d[w.c0[j] + w.nc[j] - 1];
        r->method = "budget not binding: every job at its upper bound";
    } else if (o->strategy == PFI_STRATEGY_ORACLE) {
        build_envelopes(J, &w, w.cand_d, w.cand_t, ytrue);
        double lam;
        r->upper_bound = oracle_core(&w, w.cand_d, ytrue, budget, discrete, &lam);
        r->lambda = lam;
        r->method = discrete ? "concave envelope + Lagrangian threshold, caps on a grid"
                             : "concave envelope + Lagrangian threshold";
    } else {
        double need = hi_p - budget;
        double *maxshed = w.sel_width, *shed = w.sel_slope;
        for (size_t j = 0; j < n; j++) {
            size_t first = w.c0[j], last = first + w.nc[j] - 1, pl = J->offset[j + 1] - 1;
            double dh = w.cand_d[last], th = J->tput_tok_s[pl], dref = J->power_w[pl];
            maxshed[j] = dh - w.cand_d[first];
            double s = dh;
            switch (o->strategy) {
            case PFI_STRATEGY_CLASS_WEIGHTED:
                s = dh * (J->deep_cut != NULL && J->deep_cut[j] ? o->class_factor : 1.0);
                break;
            case PFI_STRATEGY_PFI_WEIGHTED:
                s = th > 0 ? dref * J->pfi[j] / (th / dref) : dh;
                break;
            case PFI_STRATEGY_RAW_TELEMETRY:
                s = dh * J->feature[j];
                break;
            default:
                break;
            }
            w.share[j] = s;
        }
        if (model) {
            build_envelopes(J, &w, w.est_d, w.est_t, ytrue);
            double lam;
            double est_hi = 0;
            for (size_t j = 0; j < n; j++)
                est_hi += w.est_d[w.c0[j] + w.nc[j] - 1];
            double est_lo = 0;
            for (size_t j = 0; j < n; j++)
                est_lo += w.est_d[w.env[w.c0[j]]];
            /* the estimated world sheds the same watts as the true one must */
            double est_budget = est_hi - need;
            if (est_budget < est_lo)
                est_budget = est_lo;
            oracle_core(&w, w.est_d, ytrue, est_budget, discrete, &lam);
            for (size_t j = 0; j < n; j++)
                w.share[j] = w.est_d[w.c0[j] + w.nc[j] - 1] - w.pick[j];
            /* sel arrays were used by the selection: rebuild maxshed */
            for (size_t j = 0; j < n; j++)
                maxshed[j] = w.cand_d[w.c0[j] + w.nc[j] - 1] - w.cand_d[w.c0[j]];
        }
        water_fill(n, w.share, maxshed, need, shed, w.flag);
        for (size_t j = 0; j < n; j++)
            w.pick[j] = w.cand_d[w.c0[j] + w.nc[j] - 1] - shed[j];
        r->method = model ? "model curves from PFI, oracle on them, sheds applied by "
                            "water-filling"
                          : "shares of the reduction, water-filling within cap bounds";
    }
    if (o->strategy != PFI_STRATEGY_ORACLE || !r->feasible || hi_p <= budget)
        build_envelopes(J, &w, w.cand_d, w.cand_t, ytrue);

    double tp = 0, tt = 0, obj = 0;
    for (size_t j = 0; j < n; j++) {
        size_t a = J->offset[j], k = J->offset[j + 1] - a;
        bool snap = discrete || !r->feasible;
        double cap = cap_for_power(&w, w.cand_d, j, w.pick[j], snap);
        r->cap_w[j] = cap;
        r->power_w[j] = pfi_interp(J->cap_w + a, J->power_w + a, k, cap);
        r->tput_tok_s[j] = pfi_interp(J->cap_w + a, J->tput_tok_s + a, k, cap);
        r->shed_w[j] = J->power_w[a + k - 1] - r->power_w[j];
        marginals(&w, w.cand_d, j, r->power_w[j], &r->marginal_down[j], &r->marginal_up[j]);
        tp += r->power_w[j];
        tt += r->tput_tok_s[j];
        obj += opt(J->weight, j, 1.0) * r->tput_tok_s[j];
    }
    r->total_power_w = tp;
    r->total_tput_tok_s = tt;
    r->objective = obj;
    /* every job at its top is optimal when the budget does not bind (curves never fall) */
    if (r->feasible && hi_p <= budget && o->strategy == PFI_STRATEGY_ORACLE)
        r->upper_bound = obj;
    free(ytrue);
    ws_free(&w);
    return PFI_OK;
}
