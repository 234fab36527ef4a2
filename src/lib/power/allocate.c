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

#include "core/memory.h"
#include "pfi/curve.h"

/* Most candidate caps per job (a tiny cap step on a wide range is a mistake, not a plan). */
#define MAX_CANDIDATES_PER_JOB 100000

/* The oracle guesses the threshold's bracket from this many jobs when it has at least
   SAMPLE_MIN_JOBS (plain instances only), ± SAMPLE_MARGIN of the sample's width [ours]. */
#define SAMPLE_JOBS 16384
#define SAMPLE_MORE_JOBS 16384
#define SAMPLE_MIN_JOBS 32768
#define SAMPLE_MARGIN 0.015
#define SAMPLE_BLOCK 64
/* Most points of a curve the oracle's large-instance pass handles in place. */
#define FAST_MAX_POINTS 16
/* The point count that pass (and the sample) handles fully unrolled: the usual cap sweep
   (scan_k is written out for it). */
#define FAST_K 6

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
        *arrays[i] = pfi_calloc(n > 0 ? n : 1, sizeof(double));
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
    pfi_free(r->cap_w);
    pfi_free(r->power_w);
    pfi_free(r->tput_tok_s);
    pfi_free(r->marginal_down);
    pfi_free(r->marginal_up);
    pfi_free(r->shed_w);
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

/* ---- the workspace -------------------------------------------------------------------- */

/* kind[j] bits: candidates copied to the workspace (bounds, floor or a cap step; otherwise
   they are the job's own curve points), envelope not the identity (stored), and the same for
   the estimated curve of pfi-model; K_COPY: K_MAT holding the whole curve (the oracle's
   large-instance pass), so that its last point is the reference. */
enum { K_MAT = 1, K_ENV = 2, K_EST_MAT = 4, K_EST_ENV = 8, K_COPY = 16 };

struct pfi_alloc_workspace {
    size_t cap_jobs;
    unsigned char *kind;
    size_t *c0, *ec0, *eo, *eeo; /* first index in cc/cd/ct, ed/et, env, eenv */
    uint32_t *nc, *ne, *nee;     /* candidates, true and estimated envelope vertices */
    double *pick, *share, *maxshed, *shed;
    unsigned char *flag;
    size_t *list, n_list;        /* oracle, sampled: jobs left for after the selection */
    double *cc, *cd, *ct;        /* copied candidates: cap, true power, true throughput */
    size_t cap_c, n_c;
    double *ed, *et;             /* estimated power and throughput at the candidates */
    size_t cap_e, n_e;
    uint32_t *env, *eenv;        /* stored envelopes (job-local candidate indices) */
    size_t cap_env, n_env, cap_eenv, n_eenv;
    double *bs, *bw;             /* segments handed to the selection */
    size_t cap_b, n_b;
    size_t *idx;                 /* per-job scratch for pfi_envelope */
    double *y;
    size_t cap_s;
};

pfi_error pfi_alloc_workspace_create(pfi_alloc_workspace **out)
{
    *out = pfi_calloc(1, sizeof **out);
    return *out == NULL ? PFI_ERR_NOMEM : PFI_OK;
}

void pfi_alloc_workspace_destroy(pfi_alloc_workspace *w)
{
    if (w == NULL)
        return;
    void *p[] = {w->kind, w->c0, w->ec0, w->eo, w->eeo, w->nc, w->ne, w->nee, w->pick,
                 w->share, w->maxshed, w->shed, w->flag, w->cc, w->cd, w->ct, w->ed, w->et,
                 w->env, w->eenv, w->bs, w->bw, w->idx, w->y, w->list};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        pfi_free(p[i]);
    pfi_free(w);
}

static bool regrow(void *pp, size_t n, size_t size)
{
    void **p = pp;
    void *q = pfi_realloc(*p, (n > 0 ? n : 1) * size);
    if (q == NULL)
        return false;
    *p = q;
    return true;
}

/* New capacity for need elements above cap: at least double. */
static size_t next_cap(size_t cap, size_t need)
{
    size_t n = cap < 64 ? 64 : 2 * cap;
    return n < need ? need : n;
}

static bool ws_jobs(pfi_alloc_workspace *w, size_t n)
{
    if (n <= w->cap_jobs)
        return true;
    bool ok = regrow(&w->kind, n, 1) && regrow(&w->c0, n, sizeof(size_t)) &&
              regrow(&w->ec0, n, sizeof(size_t)) && regrow(&w->eo, n, sizeof(size_t)) &&
              regrow(&w->eeo, n, sizeof(size_t)) && regrow(&w->nc, n, sizeof(uint32_t)) &&
              regrow(&w->ne, n, sizeof(uint32_t)) && regrow(&w->nee, n, sizeof(uint32_t)) &&
              regrow(&w->pick, n, sizeof(double)) && regrow(&w->share, n, sizeof(double)) &&
              regrow(&w->maxshed, n, sizeof(double)) && regrow(&w->shed, n, sizeof(double)) &&
              regrow(&w->flag, n, 1) && regrow(&w->list, n, sizeof(size_t));
    if (ok)
        w->cap_jobs = n;
    return ok;
}

static bool ws_cand(pfi_alloc_workspace *w, size_t more)
{
    size_t need = w->n_c + more;
    if (need <= w->cap_c)
        return true;
    size_t n = next_cap(w->cap_c, need);
    if (!(regrow(&w->cc, n, sizeof(double)) && regrow(&w->cd, n, sizeof(double)) &&
          regrow(&w->ct, n, sizeof(double))))
        return false;
    w->cap_c = n;
    return true;
}

static bool ws_est(pfi_alloc_workspace *w, size_t more)
{
    size_t need = w->n_e + more;
    if (need <= w->cap_e)
        return true;
    size_t n = next_cap(w->cap_e, need);
    if (!(regrow(&w->ed, n, sizeof(double)) && regrow(&w->et, n, sizeof(double))))
        return false;
    w->cap_e = n;
    return true;
}

static bool ws_env(uint32_t **env, size_t *cap, size_t used, size_t more)
{
    if (used + more <= *cap)
        return true;
    size_t n = next_cap(*cap, used + more);
    if (!regrow(env, n, sizeof(uint32_t)))
        return false;
    *cap = n;
    return true;
}

static bool ws_buf(pfi_alloc_workspace *w, size_t more)
{
    size_t need = w->n_b + more;
    if (need <= w->cap_b)
        return true;
    size_t n = next_cap(w->cap_b, need);
    if (!(regrow(&w->bs, n, sizeof(double)) && regrow(&w->bw, n, sizeof(double))))
        return false;
    w->cap_b = n;
    return true;
}

static bool ws_scratch(pfi_alloc_workspace *w, size_t m)
{
    if (m <= w->cap_s)
        return true;
    size_t n = next_cap(w->cap_s, m);
    if (!(regrow(&w->idx, n, sizeof(size_t)) && regrow(&w->y, n, sizeof(double))))
        return false;
    w->cap_s = n;
    return true;
}

/* ---- per-job views --------------------------------------------------------------------- */

typedef struct ctx {
    const pfi_alloc_jobs *J;
    const pfi_alloc_options *o;
    pfi_alloc_workspace *w;
    bool discrete;
} ctx;

/* A job's candidate caps with power d and throughput t (true or estimated); wt its weight. */
typedef struct view {
    const double *c, *d, *t;
    size_t m;
    double wt;
} view;

static inline double opt(const double *a, size_t j, double dflt)
{
    return a != NULL && !isnan(a[j]) ? a[j] : dflt;
}

static inline view true_view(const ctx *x, size_t j)
{
    const pfi_alloc_jobs *J = x->J;
    const pfi_alloc_workspace *w = x->w;
    view v;
    if (w->kind[j] & K_MAT) {
        size_t c0 = w->c0[j];
        v.c = w->cc + c0;
        v.d = w->cd + c0;
        v.t = w->ct + c0;
        v.m = w->nc[j];
    } else {
        size_t a = J->offset[j];
        v.c = J->cap_w + a;
        v.d = J->power_w + a;
        v.t = J->tput_tok_s + a;
        v.m = J->offset[j + 1] - a;
    }
    v.wt = opt(J->weight, j, 1.0);
    return v;
}

static inline view est_view(const ctx *x, size_t j)
{
    const pfi_alloc_jobs *J = x->J;
    const pfi_alloc_workspace *w = x->w;
    view v = true_view(x, j);
    if (w->kind[j] & K_EST_MAT) {
        v.d = w->ed + w->ec0[j];
        v.t = w->et + w->ec0[j];
    } else {
        v.d = J->est_power_w + J->offset[j];
        v.t = J->est_tput_tok_s + J->offset[j];
    }
    return v;
}

static inline view get_view(const ctx *x, size_t j, bool est)
{
    return est ? est_view(x, j) : true_view(x, j);
}

/* Envelope vertex v of job j: a candidate index. */
static inline size_t vtx(const ctx *x, size_t j, bool est, size_t v)
{
    const pfi_alloc_workspace *w = x->w;
    if (est)
        return (w->kind[j] & K_EST_ENV) ? w->eenv[w->eeo[j] + v] : v;
    return (w->kind[j] & K_ENV) ? w->env[w->eo[j] + v] : v;
}

static inline size_t n_vtx(const ctx *x, size_t j, bool est)
{
    const pfi_alloc_workspace *w = x->w;
    unsigned char k = w->kind[j];
    if (est ? (k & K_EST_ENV) : (k & K_ENV))
        return est ? w->nee[j] : w->ne[j];
    return (k & K_MAT) ? w->nc[j] : x->J->offset[j + 1] - x->J->offset[j];
}

/* Weighted tokens/s per W from candidate p to candidate q (one expression everywhere, so
   that every comparison with the threshold sees the same bits). */
static inline double slope_of(const view *v, size_t p, size_t q)
{
    return (v->wt * v->t[q] - v->wt * v->t[p]) / (v->d[q] - v->d[p]);
}

/* As pfi_envelope's test: > 0 when c lies above the line a→b. */
static inline double turn(double ax, double ay, double bx, double by, double cx, double cy)
{
    return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
}

/*
 * The upper concave envelope of job j's (d, wt·t) (true or estimated). When every point is
 * a vertex (power strictly rising, slopes strictly falling: the usual measured curve) nothing
 * is stored; otherwise pfi_envelope's vertices are kept in the workspace.
 */
static pfi_error job_envelope(const ctx *x, size_t j, bool est)
{
    pfi_alloc_workspace *w = x->w;
    view v = get_view(x, j, est);
    unsigned char bit = est ? K_EST_ENV : K_ENV;
    bool identity = true;
    for (size_t i = 1; i < v.m && identity; i++) {
        if (!(v.d[i] > v.d[i - 1]))
            identity = false;
        else if (i >= 2 && !(turn(v.d[i - 2], v.wt * v.t[i - 2], v.d[i - 1], v.wt * v.t[i - 1],
                                  v.d[i], v.wt * v.t[i]) < 0))
            identity = false;
    }
    if (identity) {
        w->kind[j] &= (unsigned char)~bit;
        (est ? w->nee : w->ne)[j] = (uint32_t)v.m;
        return PFI_OK;
    }
    if (!ws_scratch(w, v.m))
        return PFI_ERR_NOMEM;
    for (size_t i = 0; i < v.m; i++)
        w->y[i] = v.wt * v.t[i];
    size_t ne = pfi_envelope(v.d, w->y, v.m, w->idx);
    uint32_t **env = est ? &w->eenv : &w->env;
    size_t *cap = est ? &w->cap_eenv : &w->cap_env, *used = est ? &w->n_eenv : &w->n_env;
    if (!ws_env(env, cap, *used, ne))
        return PFI_ERR_NOMEM;
    for (size_t i = 0; i < ne; i++)
        (*env)[*used + i] = (uint32_t)w->idx[i];
    (est ? w->eeo : w->eo)[j] = *used;
    *used += ne;
    (est ? w->nee : w->ne)[j] = (uint32_t)ne;
    w->kind[j] |= bit;
    return PFI_OK;
}

/* Smallest cap in a curve with T(c) >= need (need <= T at the last point). */
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

/*
 * Validate job j, find its cap bounds, and set up its candidates: the curve's own points when
 * the bounds are the curve's ends and caps are continuous; otherwise copied to the workspace
 * (lo, the curve's caps strictly inside, hi; or the grid multiples and hi).
 */
static pfi_error job_prepare(const ctx *x, size_t j, size_t *unmet, pfi_diag *d)
{
    const pfi_alloc_jobs *J = x->J;
    const pfi_alloc_options *o = x->o;
    pfi_alloc_workspace *w = x->w;
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
    if (k > MAX_CANDIDATES_PER_JOB)
        return fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: more than %d curve points", j + 1,
                    MAX_CANDIDATES_PER_JOB);
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
    if (!x->discrete && lo == c[0] && hi == c[k - 1]) {
        w->kind[j] = 0;
        w->nc[j] = (uint32_t)k;
        return job_envelope(x, j, false);
    }
    size_t count;
    double step = o->cap_step_w, g = 0;
    if (x->discrete) {
        g = ceil(lo / step - 1e-9) * step;
        double span = (hi - g) / step;
        if (span > MAX_CANDIDATES_PER_JOB)
            return fail(d, PFI_ERR_INVALID_ARGUMENT,
                        "job %zu: cap step %g W gives more than %d caps", j + 1, step,
                        MAX_CANDIDATES_PER_JOB);
        count = span >= 0 ? (size_t)floor(span + 1e-9) + 2 : 1;
    } else {
        count = k + 2;
    }
    if (!ws_cand(w, count))
        return PFI_ERR_NOMEM;
    size_t c0 = w->n_c, m = 0;
    double *cc = w->cc + c0;
    if (x->discrete) {
        for (size_t i = 0; i + 1 < count; i++) {
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
    for (size_t i = 0; i < m; i++) {
        w->cd[c0 + i] = pfi_interp(c, D, k, cc[i]);
        w->ct[c0 + i] = pfi_interp(c, T, k, cc[i]);
    }
    w->n_c += m;
    w->c0[j] = c0;
    w->nc[j] = (uint32_t)m;
    w->kind[j] = K_MAT;
    return job_envelope(x, j, false);
}

/* Hand job j's envelope segments to the selection: slope > hi adds to *above, slope in
   [lo, hi] goes to the buffer, the rest counts in *below. */
static pfi_error job_classify(const ctx *x, size_t j, bool est, double hi, double lo,
                              double *above, size_t *below)
{
    pfi_alloc_workspace *w = x->w;
    view v = get_view(x, j, est);
    size_t ne = n_vtx(x, j, est);
    if (ne < 2)
        return PFI_OK;
    if (!ws_buf(w, ne - 1))
        return PFI_ERR_NOMEM;
    size_t p = vtx(x, j, est, 0);
    for (size_t s = 1; s < ne; s++) {
        size_t q = vtx(x, j, est, s);
        double sl = slope_of(&v, p, q), wd = v.d[q] - v.d[p];
        if (sl > hi) {
            *above += wd;
        } else if (sl >= lo) {
            w->bs[w->n_b] = sl;
            w->bw[w->n_b] = wd;
            w->n_b++;
        } else {
            (*below)++;
        }
        p = q;
    }
    return PFI_OK;
}

/*
 * One curve of FAST_K points, unrolled: whether it passes pfi_curve_check without violations
 * (caps rising, power and throughput not falling; with the ends checked every value is
 * finite, and NaN fails every comparison) and every point is a vertex of its envelope (power
 * rising, slopes falling), in which case sv and wd hold its segments' slopes (the bits of
 * slope_of) and widths. Branch-free, so that the compiler keeps it in registers.
 */
static inline int scan_k(const double *c, const double *D, const double *T, double wt,
                         double sv[FAST_K - 1], double wd[FAST_K - 1])
{
    int ok = (c[0] > 0) & (c[FAST_K - 1] < INFINITY) & (D[0] > 0) &
             (D[FAST_K - 1] < INFINITY) & (T[0] >= 0) & (T[FAST_K - 1] < INFINITY);
    /* written out (gcc -O2 keeps a loop, and the arrays on the stack) */
#define SCAN_SEG(i)                                                                           \
    wd[i] = D[i + 1] - D[i];                                                                  \
    sv[i] = (wt * T[i + 1] - wt * T[i]) / wd[i];                                              \
    ok &= (c[i + 1] > c[i]) & (D[i + 1] >= D[i]) & (T[i + 1] >= T[i]) & (wd[i] > 0)
    SCAN_SEG(0);
    SCAN_SEG(1);
    SCAN_SEG(2);
    SCAN_SEG(3);
    SCAN_SEG(4);
#undef SCAN_SEG
    return ok & (sv[1] < sv[0]) & (sv[2] < sv[1]) & (sv[3] < sv[2]) & (sv[4] < sv[3]);
}

/* The sample's running totals (sample_bracket). */
typedef struct sample {
    double ref, base, total; /* Σ reference power, Σ lowest power, Σ envelope width */
    double above;            /* width of segments above the stage's bracket */
    size_t got;              /* jobs sampled */
} sample;

/* Sample job j (the true curve, no bounds): its envelope segments with slope in [lo, hi] go
   to the buffer, the width above hi to s->above. A job that fails the checks is skipped (the
   main pass reports it). */
static void sample_job(pfi_alloc_workspace *w, const pfi_alloc_jobs *J, size_t j, double hi,
                       double lo, sample *s)
{
    size_t a = J->offset[j], k = J->offset[j + 1] - a;
    if (k == 0 || k > MAX_CANDIDATES_PER_JOB)
        return;
    double wt = opt(J->weight, j, 1.0);
    if (!(wt >= 0) || !isfinite(wt) || !ws_buf(w, k) || !ws_scratch(w, k))
        return;
    const double *D = J->power_w + a, *T = J->tput_tok_s + a;
    double sv[FAST_K - 1], wd[FAST_K - 1];
    size_t ne;
    if (k == FAST_K && scan_k(J->cap_w + a, D, T, wt, sv, wd)) {
        ne = FAST_K;
        for (size_t q = 0; q < FAST_K; q++)
            w->idx[q] = q;
    } else {
        pfi_curve_report rep;
        if (pfi_curve_check(k, J->cap_w + a, D, T, &rep) != PFI_OK || rep.power_violations ||
            rep.tput_violations)
            return;
        for (size_t q = 0; q < k; q++)
            w->y[q] = wt * T[q];
        ne = pfi_envelope(D, w->y, k, w->idx);
        for (size_t q = 1; q < ne; q++) {
            size_t p = w->idx[q - 1], r = w->idx[q];
            sv[0] = (w->y[r] - w->y[p]) / (D[r] - D[p]);
            wd[0] = D[r] - D[p];
            s->total += wd[0];
            if (sv[0] > hi) {
                s->above += wd[0];
            } else if (sv[0] >= lo) {
                w->bs[w->n_b] = sv[0];
                w->bw[w->n_b++] = wd[0];
            }
        }
        ne = 0;
    }
    for (size_t q = 0; q + 1 < ne; q++) {
        s->total += wd[q];
        if (sv[q] > hi) {
            s->above += wd[q];
        } else if (sv[q] >= lo) {
            w->bs[w->n_b] = sv[q];
            w->bw[w->n_b++] = wd[q];
        }
    }
    s->ref += D[k - 1];
    s->base += D[w->idx[0]];
    s->got++;
}

/* Sample S jobs in blocks of SAMPLE_BLOCK consecutive jobs (read in sequence), evenly spaced
   from job first_frac·n/blocks on. */
static void sample_blocks(const ctx *x, size_t S, double first_frac, double hi, double lo,
                          sample *s)
{
    const pfi_alloc_jobs *J = x->J;
    size_t n = J->n, nblk = (S + SAMPLE_BLOCK - 1) / SAMPLE_BLOCK;
    for (size_t i = 0; i < S; i++) {
        size_t blk = i / SAMPLE_BLOCK;
        size_t j = (size_t)(((double)blk + first_frac) * (double)n / (double)nblk) +
                   i % SAMPLE_BLOCK;
        if (j < n)
            sample_job(x->w, J, j, hi, lo, s);
    }
}

/* The cut-off slope of the buffer (above: the width already above it) for capacity cap,
   clamped to [lo, hi], the range the buffer covers. */
static double sample_cut(pfi_alloc_workspace *w, double cap, double above, double inside,
                         double hi, double lo)
{
    double dummy;
    if (cap <= above)
        return hi;
    if (cap - above >= inside)
        return lo;
    return pfi_alloc_select(w->bs, w->bw, w->n_b, cap - above, &dummy);
}

/*
 * A bracket [*lo, *hi] for the threshold slope from a systematic sample of jobs (evenly
 * spaced blocks of consecutive jobs; the true curves, no bounds), in two stages: SAMPLE_JOBS
 * jobs give a wide bracket (the sample's cut-off ± SAMPLE_MARGIN of its width); then
 * SAMPLE_MORE_JOBS more, of which only the segments inside the wide bracket are kept, narrow
 * it (the margin shrinks as 1/√jobs) at the cost of a small selection. Only a guess: the
 * caller checks that the threshold lies inside and falls back to every segment if not.
 * Returns false (no bracket) when the sample holds no usable job.
 */
static bool sample_bracket(const ctx *x, double *hi, double *lo)
{
    const pfi_alloc_jobs *J = x->J;
    pfi_alloc_workspace *w = x->w;
    size_t n = J->n, S = n / 32 < SAMPLE_JOBS ? n / 32 : SAMPLE_JOBS;
    size_t S2 = S < SAMPLE_MORE_JOBS ? S : SAMPLE_MORE_JOBS;
    *hi = INFINITY;
    *lo = -INFINITY;
    w->n_b = 0;
    sample s;
    memset(&s, 0, sizeof s);
    sample_blocks(x, S, 0.0, INFINITY, -INFINITY, &s);
    if (s.got == 0 || !(s.total > 0)) {
        w->n_b = 0;
        return false;
    }
    for (int stage = 0; stage < 2; stage++) {
        double budget = isnan(x->o->budget_w) ? (1.0 - x->o->reduction) * s.ref
                                              : x->o->budget_w * (double)s.got / (double)n;
        /* the margin: SAMPLE_MARGIN at SAMPLE_JOBS, narrower for a larger sample (1/√S) */
        double eps = SAMPLE_MARGIN * sqrt((double)SAMPLE_JOBS / (double)s.got) * s.total;
        double cap = budget - s.base, inside = 0;
        for (size_t i = 0; i < w->n_b; i++)
            inside += w->bw[i];
        double h = cap - eps > 0 ? sample_cut(w, cap - eps, s.above, inside, *hi, *lo)
                                 : INFINITY;
        double l = cap + eps < s.total ? sample_cut(w, cap + eps, s.above, inside, *hi, *lo)
                                       : -INFINITY;
        if (!(l <= h)) /* cannot happen; keep the bracket sound anyway */
            break;
        *hi = h;
        *lo = l;
        if (stage == 1 || S2 == 0)
            break;
        /* keep the stage's segments inside the bracket, then sample more between its blocks */
        size_t m = 0;
        for (size_t i = 0; i < w->n_b; i++) {
            if (w->bs[i] > h) {
                s.above += w->bw[i];
            } else if (w->bs[i] >= l) {
                w->bs[m] = w->bs[i];
                w->bw[m++] = w->bw[i];
            }
        }
        w->n_b = m;
        sample_blocks(x, S2, 0.5, h, l, &s);
    }
    w->n_b = 0;
    return true;
}

/* The threshold lies in the bracket: the width above it fits and, unless nothing lies below
   it, the segments inside reach past the capacity. */
static bool above_ok(double above, double cap, double inside, size_t below)
{
    return above <= cap && (below == 0 || cap < above + inside);
}

/*
 * The Lagrangian threshold on the envelopes (true or estimated) for a budget: every job starts
 * at its lowest candidate; segments with slope > λ are taken, those at λ in job order while
 * the budget lasts (the last one in part when continuous). Writes each job's power to
 * w->pick and returns the envelope (LP) value (of the jobs in list[n_list] only, every job when
 * list is NULL: jobs outside the list have no segment at the threshold). The buffer must
 * hold the segments in [lo_b, hi_b], above_hi the width above hi_b (see job_classify). With
 * out, the outputs of jobs whose whole curve fast_pass copied are written here (w->flag[j]
 * set).
 */
static double oracle_pick(const ctx *x, bool est, double cap, double above_hi,
                          const size_t *list, size_t n_list, pfi_alloc_result *out,
                          double *lambda)
{
    pfi_alloc_workspace *w = x->w;
    double above = 0;
    double lam = pfi_alloc_select(w->bs, w->bw, w->n_b, cap - above_hi, &above);
    double rem = cap - above_hi - above;
    double value = 0;
    size_t nj = list != NULL ? n_list : x->J->n;
    for (size_t l = 0; l < nj; l++) {
        size_t j = list != NULL ? list[l] : l;
        view v = get_view(x, j, est);
        size_t ne = n_vtx(x, j, est);
        size_t p = vtx(x, j, est, 0);
        double pw = v.d[p], val = v.wt * v.t[p];
        for (size_t s = 1; s < ne; s++) {
            size_t q = vtx(x, j, est, s);
            double sl = slope_of(&v, p, q), wd = v.d[q] - v.d[p];
            if (sl > lam || (sl == lam && rem > 0 && wd <= rem)) {
                if (!(sl > lam))
                    rem -= wd;
                pw = v.d[q];
                val = v.wt * v.t[q];
                p = q;
                continue;
            }
            if (sl == lam && rem > 0) {
                if (!x->discrete) {
                    pw += rem;
                    val += rem * sl;
                } else {
                    value += rem * sl; /* in the bound, not in the pick: rounded down */
                }
                rem = 0;
            }
            break;
        }
        w->pick[j] = pw;
        value += val;
        w->flag[j] = 0;
        if (out != NULL && (w->kind[j] & K_COPY) && !(w->kind[j] & K_ENV)) {
            /* a copied whole curve, every point a vertex: its outputs at once */
            double part = pw - v.d[p];
            size_t m = v.m;
            if (part > 0 && p + 1 < m) {
                double f = part / (v.d[p + 1] - v.d[p]);
                double cp = v.c[p] + f * (v.c[p + 1] - v.c[p]);
                if (cp > v.c[p + 1])
                    cp = v.c[p + 1];
                double g = (cp - v.c[p]) / (v.c[p + 1] - v.c[p]);
                out->cap_w[j] = cp;
                out->power_w[j] = v.d[p] + g * (v.d[p + 1] - v.d[p]);
                out->tput_tok_s[j] = v.t[p] + g * (v.t[p + 1] - v.t[p]);
                out->marginal_down[j] = out->marginal_up[j] = slope_of(&v, p, p + 1);
            } else {
                out->cap_w[j] = v.c[p];
                out->power_w[j] = v.d[p];
                out->tput_tok_s[j] = v.t[p];
                out->marginal_down[j] = p > 0 ? slope_of(&v, p - 1, p) : NAN;
                out->marginal_up[j] = p + 1 < m ? slope_of(&v, p, p + 1) : NAN;
            }
            out->shed_w[j] = v.d[m - 1] - out->power_w[j];
            w->flag[j] = 1;
        }
    }
    *lambda = lam;
    return value;
}

/* Totals of the oracle's pass over the jobs. */
typedef struct sums {
    double ref_p, ref_t, lo_p, hi_p; /* Σ reference power and throughput, Σ lowest, highest */
    double above;                    /* width of segments above the bracket */
    double value;                    /* objective of the jobs already placed */
    double tp, tt;                   /* their power and throughput */
    size_t below, unmet;             /* segments below the bracket; floors not met */
} sums;

/*
 * The oracle's single pass for a large plain instance (no bounds, floors or cap step) with a
 * bracketed threshold: validate each job (as pfi_curve_check), and when its curve is its own
 * envelope, sort its segments against the bracket. A job with no segment inside the bracket
 * is placed at once (at the end of its segments above it, whatever the exact threshold);
 * the others go to w->list for after the selection. Jobs whose curve is not concave, or that
 * fail the check (job_prepare then says why), take the general path.
 */
static pfi_error fast_pass(const ctx *x, double b_hi, double b_lo, pfi_alloc_result *r, sums *S,
                           pfi_diag *d)
{
    const pfi_alloc_jobs *J = x->J;
    pfi_alloc_workspace *w = x->w;
    /* everything the loop touches in locals: its byte and double stores could alias the
       structures' fields, which would be reloaded at every job otherwise */
    const size_t *off = J->offset;
    const double *cap = J->cap_w, *pow_w = J->power_w, *tput = J->tput_tok_s, *wts = J->weight;
    double *o_cap = r->cap_w, *o_pw = r->power_w, *o_tp = r->tput_tok_s, *o_shed = r->shed_w,
           *o_down = r->marginal_down, *o_up = r->marginal_up;
    unsigned char *kind = w->kind;
    size_t *list = w->list, n_list = 0, n_b = w->n_b, below = 0, n = J->n;
    double ref_p = 0, ref_t = 0, lo_p = 0, hi_p = 0, above = 0, value = 0, tp = 0, tt = 0;
    pfi_error e = PFI_OK;
    for (size_t j = 0; j < n && e == PFI_OK; j++) {
        size_t a = off[j], b = off[j + 1], k = b > a ? b - a : 0;
        const double *c = cap + a, *D = pow_w + a, *T = tput + a;
        double wt = wts != NULL ? opt(wts, j, 1.0) : 1.0;
        if (k == FAST_K) {
            /* the usual curve, unrolled: its segments above the bracket are a prefix (slopes
               falling), those inside follow */
            double sv[FAST_K - 1], wd[FAST_K - 1];
            if (scan_k(c, D, T, wt, sv, wd)) {
                size_t up = (size_t)(sv[0] > b_hi) + (sv[1] > b_hi) + (sv[2] > b_hi) +
                            (sv[3] > b_hi) + (sv[4] > b_hi);
                size_t ge = (size_t)(sv[0] >= b_lo) + (sv[1] >= b_lo) + (sv[2] >= b_lo) +
                            (sv[3] >= b_lo) + (sv[4] >= b_lo);
                double ab = (sv[0] > b_hi ? wd[0] : 0.0) + (sv[1] > b_hi ? wd[1] : 0.0) +
                            (sv[2] > b_hi ? wd[2] : 0.0) + (sv[3] > b_hi ? wd[3] : 0.0) +
                            (sv[4] > b_hi ? wd[4] : 0.0);
                kind[j] = 0;
                ref_p += D[FAST_K - 1];
                ref_t += T[FAST_K - 1];
                lo_p += D[0];
                hi_p += D[FAST_K - 1];
                above += ab;
                below += FAST_K - 1 - ge;
                if (ge > up) {
                    w->n_b = n_b;
                    if (!ws_buf(w, FAST_K) || !ws_cand(w, FAST_K)) {
                        e = PFI_ERR_NOMEM;
                        break;
                    }
                    for (size_t i = up; i < ge; i++, n_b++) {
                        w->bs[n_b] = sv[i];
                        w->bw[n_b] = wd[i];
                    }
                    size_t c0 = w->n_c;
                    memcpy(w->cc + c0, c, FAST_K * sizeof *c);
                    memcpy(w->cd + c0, D, FAST_K * sizeof *D);
                    memcpy(w->ct + c0, T, FAST_K * sizeof *T);
                    w->n_c += FAST_K;
                    w->c0[j] = c0;
                    w->nc[j] = FAST_K;
                    kind[j] = K_MAT | K_COPY;
                    list[n_list++] = j;
                    continue;
                }
                size_t v = up;
                o_cap[j] = c[v];
                o_pw[j] = D[v];
                o_tp[j] = T[v];
                o_shed[j] = D[FAST_K - 1] - D[v];
                o_down[j] = v > 0 ? sv[v - 1] : NAN;
                o_up[j] = v + 1 < FAST_K ? sv[v] : NAN;
                value += wt * T[v];
                tp += D[v];
                tt += T[v];
                continue;
            }
        }
        double sl[FAST_MAX_POINTS];
        if (k >= 2 && k <= FAST_MAX_POINTS && n_b + k > w->cap_b) {
            w->n_b = n_b;
            if (!ws_buf(w, k)) {
                e = PFI_ERR_NOMEM;
                break;
            }
        }
        /* In one branch-free sweep: pfi_curve_check without violations (caps rising, power
           and throughput not falling; with the ends checked that makes every value finite,
           and NaN fails every comparison), the slopes, whether every point is a vertex of
           the envelope (power rising, slopes falling), and each segment against the
           bracket: above (taken whatever the threshold), inside (to the selection), below. */
        int ok = k >= 2 && k <= FAST_MAX_POINTS, identity = 1;
        size_t v = 0, n_in = 0, n_above = 0, taking = 1;
        double ab = 0, prev = INFINITY;
        double *bs = w->bs + n_b, *bw = w->bw + n_b;
        if (ok) {
            ok = (c[0] > 0) & (c[k - 1] < INFINITY) & (D[0] > 0) & (D[k - 1] < INFINITY) &
                 (T[0] >= 0) & (T[k - 1] < INFINITY);
            for (size_t i = 1; i < k; i++) {
                double wd = D[i] - D[i - 1];
                double sv = (wt * T[i] - wt * T[i - 1]) / wd;
                ok &= (c[i] > c[i - 1]) & (D[i] >= D[i - 1]) & (T[i] >= T[i - 1]);
                identity &= (wd > 0) & (sv < prev);
                prev = sv;
                sl[i - 1] = sv;
                size_t up = sv > b_hi, in = (size_t)(sv >= b_lo) & (size_t)(sv <= b_hi);
                ab += up ? wd : 0.0;
                n_above += up;
                taking &= up;
                v += taking;
                bs[n_in] = sv;
                bw[n_in] = wd;
                n_in += in;
            }
        }
        if (!ok || !identity) {
            /* the general path, with the state it shares written back */
            w->n_b = n_b;
            w->n_list = n_list;
            e = job_prepare(x, j, &S->unmet, d);
            if (e == PFI_OK)
                e = job_classify(x, j, false, b_hi, b_lo, &above, &below);
            if (e != PFI_OK)
                break;
            view vw = true_view(x, j);
            ref_p += pow_w[b - 1];
            ref_t += tput[b - 1];
            lo_p += vw.d[0];
            hi_p += vw.d[vw.m - 1];
            list[n_list++] = j;
            n_b = w->n_b;
            continue;
        }
        kind[j] = 0;
        ref_p += D[k - 1];
        ref_t += T[k - 1];
        lo_p += D[0];
        hi_p += D[k - 1];
        above += ab;
        below += k - 1 - n_above - n_in;
        n_b += n_in;
        if (n_in > 0 || n_above != v) {
            /* decided after the selection: copy its points next to each other now, while
               they are in cache, so that the later passes read them in sequence */
            if (!ws_cand(w, k)) {
                e = PFI_ERR_NOMEM;
                break;
            }
            size_t c0 = w->n_c;
            memcpy(w->cc + c0, c, k * sizeof *c);
            memcpy(w->cd + c0, D, k * sizeof *D);
            memcpy(w->ct + c0, T, k * sizeof *T);
            w->n_c += k;
            w->c0[j] = c0;
            w->nc[j] = (uint32_t)k;
            kind[j] = K_MAT | K_COPY;
            list[n_list++] = j;
            continue;
        }
        o_cap[j] = c[v];
        o_pw[j] = D[v];
        o_tp[j] = T[v];
        o_shed[j] = D[k - 1] - D[v];
        o_down[j] = v > 0 ? sl[v - 1] : NAN;
        o_up[j] = v + 1 < k ? sl[v] : NAN;
        value += wt * T[v];
        tp += D[v];
        tt += T[v];
    }
    w->n_b = n_b;
    w->n_list = n_list;
    S->ref_p = ref_p;
    S->ref_t = ref_t;
    S->lo_p = lo_p;
    S->hi_p = hi_p;
    S->above = above;
    S->below = below;
    S->value = value;
    S->tp = tp;
    S->tt = tt;
    return e;
}

/* The cap of a view drawing at most power p (snapped down to a candidate when snap). */
static double cap_for_power(const view *v, double p, bool snap)
{
    double tol = 1e-12 * fabs(p) + 1e-12;
    size_t i = 0;
    while (i + 1 < v->m && v->d[i + 1] <= p + tol)
        i++;
    if (snap || i + 1 == v->m || v->d[i + 1] <= v->d[i])
        return v->c[i];
    double f = (p - v->d[i]) / (v->d[i + 1] - v->d[i]);
    if (f < 0)
        f = 0;
    return v->c[i] + f * (v->c[i + 1] - v->c[i]);
}

/* Job j's outputs at power p on its true curve: cap, power, throughput, marginals, shed. */
static void output_job(const ctx *x, size_t j, double p, bool snap, pfi_alloc_result *r)
{
    const pfi_alloc_jobs *J = x->J;
    view v = true_view(x, j);
    double cap = cap_for_power(&v, p, snap);
    double pw = pfi_interp(v.c, v.d, v.m, cap), tp = pfi_interp(v.c, v.t, v.m, cap);
    r->cap_w[j] = cap;
    r->power_w[j] = pw;
    r->tput_tok_s[j] = tp;
    double ref = (x->w->kind[j] & K_COPY) ? v.d[v.m - 1] : J->power_w[J->offset[j + 1] - 1];
    r->shed_w[j] = ref - pw;
    /* envelope slopes around the drawn power */
    double down = NAN, up = NAN, tol = 1e-9 * fabs(pw) + 1e-9;
    size_t ne = n_vtx(x, j, false), prev = 0;
    for (size_t s = 0; s < ne; s++) {
        size_t q = vtx(x, j, false, s);
        double pv = v.d[q];
        if (fabs(pv - pw) <= tol) {
            if (s > 0)
                down = slope_of(&v, prev, q);
            if (s + 1 < ne)
                up = slope_of(&v, q, vtx(x, j, false, s + 1));
            break;
        }
        if (pv > pw) {
            if (s > 0)
                down = up = slope_of(&v, prev, q);
            break;
        }
        prev = q;
    }
    r->marginal_down[j] = down;
    r->marginal_up[j] = up;
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

/* Estimated curves for pfi-model at every job's candidates: the caller's (interpolated where
   the candidates are not the curve's points) or the §7 model through each job's reference
   point. Only ratios to the reference enter, so the model runs per GPU with any scale. */
static pfi_error estimate_curves(const ctx *x, pfi_diag *d)
{
    const pfi_alloc_jobs *J = x->J;
    const pfi_alloc_options *o = x->o;
    pfi_alloc_workspace *w = x->w;
    bool given = J->est_power_w != NULL && J->est_tput_tok_s != NULL;
    double ps_frac = o->shape.power_static_w / o->shape.power_uncapped_w;
    w->n_e = 0;
    for (size_t j = 0; j < J->n; j++) {
        size_t a = J->offset[j], k = J->offset[j + 1] - a;
        w->kind[j] &= (unsigned char)~K_EST_MAT;
        if (given && !(w->kind[j] & K_MAT))
            continue; /* the caller's points are the candidates */
        view v = true_view(x, j);
        if (!ws_est(w, v.m))
            return PFI_ERR_NOMEM;
        size_t e0 = w->n_e;
        w->ec0[j] = e0;
        w->n_e += v.m;
        w->kind[j] |= K_EST_MAT;
        if (given) {
            for (size_t i = 0; i < v.m; i++) {
                w->ed[e0 + i] = pfi_interp(J->cap_w + a, J->est_power_w + a, k, v.c[i]);
                w->et[e0 + i] = pfi_interp(J->cap_w + a, J->est_tput_tok_s + a, k, v.c[i]);
            }
            continue;
        }
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
        for (size_t i = 0; i < v.m; i++) {
            pfi_model_eval(&m, v.c[i], &pt);
            w->ed[e0 + i] = d_ref * pt.job_power_w / ref.job_power_w;
            w->et[e0 + i] = t_ref * pt.throughput / ref.throughput;
        }
        /* the model is monotone; the clamp to the reference keeps rounding from breaking it */
        for (size_t i = 1; i < v.m; i++) {
            if (w->ed[e0 + i] < w->ed[e0 + i - 1])
                w->ed[e0 + i] = w->ed[e0 + i - 1];
            if (w->et[e0 + i] < w->et[e0 + i - 1])
                w->et[e0 + i] = w->et[e0 + i - 1];
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
    bool model = o->strategy == PFI_STRATEGY_PFI_MODEL;
    bool given = model && J->est_power_w != NULL && J->est_tput_tok_s != NULL;
    bool need_pfi = o->strategy == PFI_STRATEGY_PFI_WEIGHTED || (model && !given);
    bool raw = o->strategy == PFI_STRATEGY_RAW_TELEMETRY;
    if (J->weight == NULL && J->gpus == NULL && !need_pfi && !raw && !given)
        return PFI_OK; /* nothing per job to check here (the curves are checked later) */
    for (size_t j = 0; j < J->n; j++) {
        if (J->weight != NULL && (opt(J->weight, j, 1.0) < 0 || !isfinite(opt(J->weight, j, 1.0))))
            return fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: weight must be >= 0", j + 1);
        if (J->gpus != NULL && !(opt(J->gpus, j, 1.0) >= 1))
            return fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: gpus must be >= 1", j + 1);
        if (need_pfi && (J->pfi == NULL || !(J->pfi[j] > 0) || !isfinite(J->pfi[j])))
            return fail(d, PFI_ERR_INVALID_ARGUMENT,
                        "job %zu: strategy %s needs a PFI estimate > 0", j + 1,
                        pfi_strategy_name(o->strategy));
        if (raw && (J->feature == NULL || !(J->feature[j] >= 0) || !isfinite(J->feature[j])))
            return fail(d, PFI_ERR_INVALID_ARGUMENT,
                        "job %zu: strategy raw-telemetry needs a feature value >= 0", j + 1);
        if (given) {
            size_t a = J->offset[j], b = J->offset[j + 1];
            for (size_t i = a; i < b; i++)
                if (!(J->est_power_w[i] > 0) || !isfinite(J->est_power_w[i]) ||
                    !(J->est_tput_tok_s[i] >= 0) || !isfinite(J->est_tput_tok_s[i]) ||
                    (i > a && (J->est_power_w[i] < J->est_power_w[i - 1] ||
                               J->est_tput_tok_s[i] < J->est_tput_tok_s[i - 1])))
                    return fail(d, PFI_ERR_INVALID_ARGUMENT,
                                "job %zu: the estimated curve needs finite power > 0 and "
                                "throughput >= 0, neither falling as the cap rises", j + 1);
        }
    }
    return PFI_OK;
}

pfi_error pfi_allocate(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                       pfi_alloc_result *r, pfi_diag *d)
{
    pfi_alloc_workspace *w = NULL;
    pfi_error e = pfi_alloc_workspace_create(&w);
    if (e == PFI_OK)
        e = pfi_allocate_ws(J, o, w, r, d);
    pfi_alloc_workspace_destroy(w);
    return e;
}

pfi_error pfi_allocate_ws(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                          pfi_alloc_workspace *w, pfi_alloc_result *r, pfi_diag *d)
{
    if (w == NULL)
        return fail(d, PFI_ERR_INVALID_ARGUMENT, "no workspace");
    pfi_error e = check_inputs(J, o, r, d);
    if (e != PFI_OK)
        return e;
    size_t n = J->n;
    if (!ws_jobs(w, n))
        return PFI_ERR_NOMEM;
    w->n_c = w->n_e = w->n_env = w->n_eenv = w->n_b = 0;
    ctx x = {J, o, w, o->cap_step_w > 0};
    bool oracle = o->strategy == PFI_STRATEGY_ORACLE, model = o->strategy == PFI_STRATEGY_PFI_MODEL;

    /* a guess of the threshold's bracket for large plain instances, so that one pass places
       most jobs and hands only the segments inside the bracket to the selection */
    double b_hi = INFINITY, b_lo = -INFINITY;
    bool sampled = oracle && n >= SAMPLE_MIN_JOBS && !x.discrete && J->cap_lo_w == NULL &&
                   J->cap_hi_w == NULL && J->floor_frac == NULL &&
                   sample_bracket(&x, &b_hi, &b_lo);

    /* one pass: validate, candidates, envelopes, totals, segments for the selection */
    sums S;
    memset(&S, 0, sizeof S);
    if (sampled) {
        if ((e = fast_pass(&x, b_hi, b_lo, r, &S, d)) != PFI_OK)
            return e;
    } else {
        for (size_t j = 0; j < n; j++) {
            if ((e = job_prepare(&x, j, &S.unmet, d)) != PFI_OK)
                return e;
            size_t last = J->offset[j + 1] - 1;
            S.ref_p += J->power_w[last];
            S.ref_t += J->tput_tok_s[last];
            view v = true_view(&x, j);
            S.lo_p += v.d[0];
            S.hi_p += v.d[v.m - 1];
            if (oracle &&
                (e = job_classify(&x, j, false, INFINITY, -INFINITY, &S.above, &S.below)) !=
                    PFI_OK)
                return e;
        }
    }
    double ref_p = S.ref_p, lo_p = S.lo_p, hi_p = S.hi_p;
    double budget = isnan(o->budget_w) ? (1.0 - o->reduction) * ref_p : o->budget_w;
    r->budget_w = budget;
    r->ref_power_w = ref_p;
    r->ref_tput_tok_s = S.ref_t;
    r->min_power_w = lo_p;
    r->floors_unmet = S.unmet;
    r->feasible = lo_p <= budget;
    r->shortfall_w = r->feasible ? 0.0 : lo_p - budget;
    r->upper_bound = NAN;
    r->lambda = NAN;
    bool binding = r->feasible && hi_p > budget;
    bool snap = x.discrete || !r->feasible;
    const size_t *list = NULL; /* jobs to place below; NULL: all */
    bool placed = false;       /* oracle_pick wrote some outputs (w->flag) */
    size_t n_list = n;

    if (!binding) {
        for (size_t j = 0; j < n; j++) {
            view v = true_view(&x, j);
            w->pick[j] = r->feasible ? v.d[v.m - 1] : v.d[0];
        }
        r->method = r->feasible ? "budget not binding: every job at its upper bound"
                                : "infeasible: every job at its lower bound";
    } else if (oracle) {
        double cap = budget - lo_p, inside = 0;
        for (size_t i = 0; i < w->n_b; i++)
            inside += w->bw[i];
        if (sampled && above_ok(S.above, cap, inside, S.below)) {
            list = w->list;
            n_list = w->n_list;
        } else if (sampled) {
            /* the guess missed: every segment goes to the selection, every job is placed
               after it */
            w->n_b = 0;
            S.above = 0;
            S.below = 0;
            S.value = 0;
            for (size_t j = 0; j < n; j++)
                if ((e = job_classify(&x, j, false, INFINITY, -INFINITY, &S.above,
                                      &S.below)) != PFI_OK)
                    return e;
        }
        double lam;
        r->upper_bound =
            S.value + oracle_pick(&x, false, cap, S.above, list, n_list, r, &lam);
        placed = true;
        r->lambda = lam;
        r->method = x.discrete ? "concave envelope + Lagrangian threshold, caps on a grid"
                               : "concave envelope + Lagrangian threshold";
    } else {
        double need = hi_p - budget;
        for (size_t j = 0; j < n; j++) {
            view v = true_view(&x, j);
            size_t pl = J->offset[j + 1] - 1;
            double dh = v.d[v.m - 1], th = J->tput_tok_s[pl], dref = J->power_w[pl];
            w->maxshed[j] = dh - v.d[0];
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
            w->share[j] = s;
        }
        if (model) {
            if ((e = estimate_curves(&x, d)) != PFI_OK)
                return e;
            double est_hi = 0, est_lo = 0, above_e = 0;
            size_t below_e = 0;
            for (size_t j = 0; j < n; j++) {
                if ((e = job_envelope(&x, j, true)) != PFI_OK)
                    return e;
                view v = est_view(&x, j);
                est_hi += v.d[v.m - 1];
                est_lo += v.d[vtx(&x, j, true, 0)];
                if ((e = job_classify(&x, j, true, INFINITY, -INFINITY, &above_e, &below_e)) !=
                    PFI_OK)
                    return e;
            }
            /* the estimated world sheds the same watts as the true one must */
            double est_budget = est_hi - need;
            if (est_budget < est_lo)
                est_budget = est_lo;
            double lam;
            oracle_pick(&x, true, est_budget - est_lo, 0.0, NULL, 0, NULL, &lam);
            for (size_t j = 0; j < n; j++) {
                view v = est_view(&x, j);
                w->share[j] = v.d[v.m - 1] - w->pick[j];
            }
        }
        water_fill(n, w->share, w->maxshed, need, w->shed, w->flag);
        for (size_t j = 0; j < n; j++) {
            view v = true_view(&x, j);
            w->pick[j] = v.d[v.m - 1] - w->shed[j];
        }
        r->method = model ? "model curves from PFI, oracle on them, sheds applied by "
                            "water-filling"
                          : "shares of the reduction, water-filling within cap bounds";
    }

    for (size_t l = 0; l < n_list; l++) {
        size_t j = list != NULL ? list[l] : l;
        if (!(placed && w->flag[j]))
            output_job(&x, j, w->pick[j], snap, r);
    }
    double tp = 0, tt = 0, obj = 0;
    if (list != NULL) { /* the pass placed the others and summed them */
        tp = S.tp;
        tt = S.tt;
        obj = S.value;
    }
    for (size_t l = 0; l < n_list; l++) {
        size_t j = list != NULL ? list[l] : l;
        tp += r->power_w[j];
        tt += r->tput_tok_s[j];
        obj += opt(J->weight, j, 1.0) * r->tput_tok_s[j];
    }
    r->total_power_w = tp;
    r->total_tput_tok_s = tt;
    r->objective = obj;
    /* every job at its top is optimal when the budget does not bind (curves never fall) */
    if (r->feasible && !binding && oracle)
        r->upper_bound = obj;
    return PFI_OK;
}
