/*
 * The allocator's private interface, shared by its files: the workspace, the per-job views
 * of the curves, the state of one pfi_allocate_ws call and the phases the strategies are
 * built from (src/lib/power/alloc_*.c, oracle_pass.c). The strategies themselves are behind
 * power/strategy.h. Not installed, not part of the API.
 */
#ifndef PFI_POWER_ALLOC_INTERNAL_H
#define PFI_POWER_ALLOC_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pfi/allocate.h"
#include "pfi/topology.h"

/* Most candidate caps per job (a tiny cap step on a wide range is a mistake, not a plan). */
#define ALLOC_MAX_CANDIDATES_PER_JOB 100000

/* kind[j] bits: candidates copied to the workspace (bounds, floor or a cap step; otherwise
   they are the job's own curve points), envelope not the identity (stored), and the same for
   the estimated curve of pfi-model; KIND_COPY: KIND_MAT holding the whole curve (the
   oracle's large-instance pass), so that its last point is the reference. */
enum { KIND_MAT = 1, KIND_ENV = 2, KIND_EST_MAT = 4, KIND_EST_ENV = 8, KIND_COPY = 16 };
/* kind[j] of a job that the oracle's large-instance pass placed provisionally: its own curve,
   every point a vertex (kind 0 to every other reader), its slopes kept in w->cs from w->c0[j],
   its outputs written at point w->nc[j]; alloc_pick rewrites them where the threshold says
   otherwise */
enum { KIND_PROV = 32 };
/* w->lseg: a listed job that is not one of the AVX-512 pass's provisional block jobs */
#define LSEG_OTHER 0x80000000u

struct pfi_alloc_workspace {
    size_t cap_jobs;
    unsigned char *kind;
    size_t *c0, *ec0, *eo, *eeo; /* first index in cc/cd/ct, ed/et, env, eenv */
    uint32_t *nc, *ne, *nee;     /* candidates, true and estimated envelope vertices */
    double *pick, *share, *maxshed, *shed;
    unsigned char *flag;
    size_t *list, n_list; /* oracle, sampled: jobs left for after the selection */
    double *lval;         /* each listed job's value, in list order (the AVX-512 pass writes
                             its provisional one; alloc_pick, AVX-512, the final one) */
    uint32_t *lseg;       /* the sampled pass: each listed job's segments in bs/bw (in list
                             order, one after the other), | LSEG_OTHER unless it is a job of
                             the AVX-512 pass's blocks, placed at prov_lam */
    bool lseg_ok;         /* lseg, lval and flag written for every listed job (AVX-512 pass) */
    double prov_lam;      /* the slope the sampled pass placed its listed jobs against */
    double tot_in[3];     /* alloc_output_jobs' starting totals (power, throughput, objective:
                             the sampled pass's), set before alloc_pick */
    double tot[3];        /* the totals over the listed jobs too, when alloc_pick (AVX-512)
                             summed them with its values (tot_ok; every listed job placed) */
    bool tot_ok;
    size_t *lmv;          /* alloc_pick, AVX-512: the listed jobs it rewrites (position·8 +
                             point, or + 7: the general steps) */
    uint32_t *at;         /* cap step: each job's candidate index (alloc_fill_grid) */
    double *cc, *cd, *ct; /* copied candidates: cap, true power, true throughput */
    double *cs;           /* KIND_COPY: the slope of the segment from each copied point to the
                             next (slope_of's bits; the oracle's large-instance pass) */
    size_t cap_c, n_c;
    double *ed, *et; /* estimated power and throughput at the candidates */
    size_t cap_e, n_e;
    uint32_t *env, *eenv; /* stored envelopes (job-local candidate indices) */
    size_t cap_env, n_env, cap_eenv, n_eenv;
    double *bs, *bw; /* segments handed to the selection */
    size_t cap_b, n_b;
    size_t guess_in; /* the oracle's sample: segments of all jobs likely inside its bracket */
    bool no_simd;    /* the oracle's pass without its AVX-512 copy (tests; set by the caller) */
    size_t *idx;     /* per-job scratch for pfi_envelope */
    double *y;
    size_t cap_s;
};

/* ---- workspace growth (alloc_workspace.c): false when out of memory -------------------- */

/* Room for n jobs in every per-job array. */
bool alloc_ws_jobs(pfi_alloc_workspace *w, size_t n);
/* The slow paths of the inline checks below: grow to at least double. */
bool alloc_ws_cand_grow(pfi_alloc_workspace *w, size_t more);
bool alloc_ws_est_grow(pfi_alloc_workspace *w, size_t more);
bool alloc_ws_env_grow(uint32_t **env, size_t *cap, size_t used, size_t more);
bool alloc_ws_buf_grow(pfi_alloc_workspace *w, size_t more);
bool alloc_ws_scratch_grow(pfi_alloc_workspace *w, size_t m);

/* The quickselects' pivot (pfi_alloc_select, the tree's per-level selection): the median of
 * three slopes of the live range v[lo, lo + n) drawn by one xorshift64 step of *state (seeded
 * by the caller with 0x9E3779B97F4A7C15 ^ m, so a selection is a pure function of its input).
 * n >= 1. Source: Marsaglia, "Xorshift RNGs" (2003), the 13/7/17 triple. */
static inline double alloc_pivot3(const double *v, size_t lo, size_t n, uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    double a = v[lo + x % n], b = v[lo + (x >> 20) % n], c = v[lo + (x >> 40) % n];
    return fmax(fmin(a, b), fmin(fmax(a, b), c));
}

/*
 * The quickselects' partition step (pfi_alloc_select, the tree's per-level selection): moves
 * the pairs of [lo, hi) whose slope is above the pivot (gt) or equal to it (!gt) to the
 * front of the range, in one pass without a branch on the data (Lomuto's partition with the
 * swap always made and the boundary moved by the comparison: the pairs between the boundary
 * and i are all left behind, so swapping two of them changes nothing). Returns the new
 * boundary; *wsum: the width moved to the front.
 */
static inline size_t alloc_part_front(double *slope, double *width, size_t lo, size_t hi,
                                      double pivot, bool gt, double *wsum)
{
    size_t k = lo;
    double acc = 0;
    for (size_t i = lo; i < hi; i++) {
        double s = slope[i], w = width[i];
        bool take = gt ? s > pivot : s == pivot;
        slope[i] = slope[k];
        width[i] = width[k];
        slope[k] = s;
        width[k] = w;
        acc += take ? w : 0.0;
        k += take;
    }
    *wsum = acc;
    return k;
}

/*
 * The sum of w[0 .. n) by eight partial sums (no chain of n dependent additions; for
 * decisions only) and *err, a bound on its distance from the sum in order (w[0] + w[1] + ...
 * from the left): each is within γ_n·Σ|w| of the exact sum (Higham, "Accuracy and Stability
 * of Numerical Algorithms", 2nd ed., §4.2), so twice that, γ_n ≤ 1.01·n·u, covers both; the
 * bound is taken four times over. *err is INFINITY when the sum is not finite.
 */
typedef double alloc_sum_v2d __attribute__((vector_size(16)));
typedef uint64_t alloc_sum_v2u __attribute__((vector_size(16)));
static inline double alloc_sum8(const double *w, size_t n, double *err)
{
    /* four pairs of partial sums (SSE2 on x86-64), and the OR of every width's bits: with no
       sign bit set, Σ|w| is the sum itself */
    alloc_sum_v2d s0 = {0, 0}, s1 = s0, s2 = s0, s3 = s0;
    alloc_sum_v2u sign = {0, 0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        alloc_sum_v2d v0, v1, v2, v3;
        memcpy(&v0, w + i, sizeof v0);
        memcpy(&v1, w + i + 2, sizeof v1);
        memcpy(&v2, w + i + 4, sizeof v2);
        memcpy(&v3, w + i + 6, sizeof v3);
        s0 += v0;
        s1 += v1;
        s2 += v2;
        s3 += v3;
        sign |= (alloc_sum_v2u)v0 | (alloc_sum_v2u)v1 | (alloc_sum_v2u)v2 | (alloc_sum_v2u)v3;
    }
    alloc_sum_v2d q = (s0 + s1) + (s2 + s3);
    double t = q[0] + q[1], abs = 0;
    bool neg = ((sign[0] | sign[1]) >> 63) != 0;
    for (; i < n; i++) {
        t += w[i];
        neg |= signbit(w[i]) != 0;
    }
    if (neg)
        for (size_t k = 0; k < n; k++)
            abs += fabs(w[k]);
    else
        abs = t;
    *err = isfinite(abs) ? 8.0 * ((double)n + 8.0) * 0x1p-53 * abs : INFINITY;
    return t;
}

/* The sum of w[0 .. n) in order, as the partition's running sum makes it (the widths left
   behind add +0, which leaves a sum of positive widths unchanged). */
static inline double alloc_sum_seq(const double *w, size_t n)
{
    double acc = 0;
    for (size_t i = 0; i < n; i++)
        acc += w[i];
    return acc;
}

/*
 * Whether acc + (the in-order sum of n widths) > cap, decided from alloc_sum8's t and err where
 * they settle it: 1 surely greater, 0 surely not, -1 too close to tell (the caller sums in
 * order). The margin covers err and the rounding of the addition itself.
 */
static inline int alloc_sum_above(double acc, double t, double err, double cap)
{
    double x = acc + t, margin = err + 0x1p-50 * (fabs(acc) + fabs(t) + fabs(cap));
    if (!(margin < INFINITY))
        return -1;
    return x - cap > margin ? 1 : cap - x > margin ? 0 : -1;
}

/* Room for more copied candidates (cc/cd/ct). */
static inline bool alloc_ws_cand(pfi_alloc_workspace *w, size_t more)
{
    return w->n_c + more <= w->cap_c || alloc_ws_cand_grow(w, more);
}

/* Room for more estimated points (ed/et). */
static inline bool alloc_ws_est(pfi_alloc_workspace *w, size_t more)
{
    return w->n_e + more <= w->cap_e || alloc_ws_est_grow(w, more);
}

/* Room for more envelope vertices in *env (used of *cap taken). */
static inline bool alloc_ws_env(uint32_t **env, size_t *cap, size_t used, size_t more)
{
    return used + more <= *cap || alloc_ws_env_grow(env, cap, used, more);
}

/* Room for more segments in the selection's buffer (bs/bw). */
static inline bool alloc_ws_buf(pfi_alloc_workspace *w, size_t more)
{
    return w->n_b + more <= w->cap_b || alloc_ws_buf_grow(w, more);
}

/* Per-job scratch (idx, y) for m points. */
static inline bool alloc_ws_scratch(pfi_alloc_workspace *w, size_t m)
{
    return m <= w->cap_s || alloc_ws_scratch_grow(w, m);
}

/* ---- per-job views --------------------------------------------------------------------- */

/* One call's instance, options and workspace; discrete: caps on the cap_step_w grid. */
typedef struct alloc_ctx {
    const pfi_alloc_jobs *J;
    const pfi_alloc_options *o;
    pfi_alloc_workspace *w;
    bool discrete;
} alloc_ctx;

/* A job's candidate caps with power d and throughput t (true or estimated); wt its weight. */
typedef struct alloc_view {
    const double *c, *d, *t;
    size_t m;
    double wt;
} alloc_view;

/* a[j], or dflt when a is NULL or a[j] is NaN (the optional per-job arrays). */
static inline double alloc_opt(const double *a, size_t j, double dflt)
{
    return a != NULL && !isnan(a[j]) ? a[j] : dflt;
}

/* Job j's candidates on its true curve. */
static inline alloc_view alloc_true_view(const alloc_ctx *x, size_t j)
{
    const pfi_alloc_jobs *J = x->J;
    const pfi_alloc_workspace *w = x->w;
    alloc_view v;
    if (w->kind[j] & KIND_MAT) {
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
    v.wt = alloc_opt(J->weight, j, 1.0);
    return v;
}

/* Job j's candidates on its estimated curve (pfi-model; alloc_estimate_curves first). */
static inline alloc_view alloc_est_view(const alloc_ctx *x, size_t j)
{
    const pfi_alloc_jobs *J = x->J;
    const pfi_alloc_workspace *w = x->w;
    alloc_view v = alloc_true_view(x, j);
    if (w->kind[j] & KIND_EST_MAT) {
        v.d = w->ed + w->ec0[j];
        v.t = w->et + w->ec0[j];
    } else {
        v.d = J->est_power_w + J->offset[j];
        v.t = J->est_tput_tok_s + J->offset[j];
    }
    return v;
}

static inline alloc_view alloc_view_of(const alloc_ctx *x, size_t j, bool est)
{
    return est ? alloc_est_view(x, j) : alloc_true_view(x, j);
}

/* Envelope vertex v of job j: a candidate index. */
static inline size_t alloc_vtx(const alloc_ctx *x, size_t j, bool est, size_t v)
{
    const pfi_alloc_workspace *w = x->w;
    if (est)
        return (w->kind[j] & KIND_EST_ENV) ? w->eenv[w->eeo[j] + v] : v;
    return (w->kind[j] & KIND_ENV) ? w->env[w->eo[j] + v] : v;
}

/* The number of job j's envelope vertices. */
static inline size_t alloc_n_vtx(const alloc_ctx *x, size_t j, bool est)
{
    const pfi_alloc_workspace *w = x->w;
    unsigned char k = w->kind[j];
    if (est ? (k & KIND_EST_ENV) : (k & KIND_ENV))
        return est ? w->nee[j] : w->ne[j];
    return (k & KIND_MAT) ? w->nc[j] : x->J->offset[j + 1] - x->J->offset[j];
}

/* Weighted tokens/s per W from candidate p to candidate q (one expression everywhere, so
   that every comparison with the threshold sees the same bits). */
static inline double alloc_slope(const alloc_view *v, size_t p, size_t q)
{
    return (v->wt * v->t[q] - v->wt * v->t[p]) / (v->d[q] - v->d[p]);
}

/* ---- one call ------------------------------------------------------------------------- */

/* Totals of the pass over the jobs. */
typedef struct alloc_sums {
    double ref_p, ref_t, lo_p, hi_p; /* Σ reference power and throughput, Σ lowest, highest */
    double above;                    /* width of segments above the bracket */
    double value;                    /* objective of the jobs already placed */
    double tp, tt;                   /* their power and throughput */
    size_t below, unmet;             /* segments below the bracket; floors not met */
} alloc_sums;

/*
 * The state of one pfi_allocate_ws call, from the pass over the jobs to the outputs. The
 * strategy's pass fills S (and sampled); its placement writes every job's power to w->pick,
 * or, for the jobs it marks in w->flag (placed), their outputs directly; list[n_list] are the
 * jobs the output phase places (list NULL: all of them, n_list = n).
 */
typedef struct alloc_run {
    alloc_ctx x;
    alloc_sums S;
    double budget_w;    /* B */
    bool sampled;       /* the oracle's sampled pass ran (oracle_pass.c) */
    const size_t *list; /* jobs left to place; NULL: all */
    size_t n_list;
    bool placed; /* w->flag[j] set: job j's outputs are written */
} alloc_run;

/* diag's message from fmt (d may be NULL); returns e. */
pfi_error alloc_fail(pfi_diag *d, pfi_error e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The inputs of a call checked before any pass (allocate.c): jobs, result size, strategy,
   budget or reduction, cap step, each job's weight and GPUs and what the strategy needs.
   Errors: PFI_ERR_INVALID_ARGUMENT (d says which job and why). */
pfi_error alloc_check_inputs(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                             const pfi_alloc_result *r, pfi_diag *d);

/* ---- per-job phases (alloc_jobs.c) ---------------------------------------------------- */

/*
 * Validate job j, find its cap bounds, and set up its candidates and true envelope: the
 * curve's own points when the bounds are the curve's ends and caps are continuous; otherwise
 * copied to the workspace (lo, the curve's caps strictly inside, hi; or the grid multiples
 * and hi). A floor the job cannot meet adds one to *unmet. Errors: PFI_ERR_INVALID_ARGUMENT
 * (d says which job and why), PFI_ERR_NOMEM.
 */
pfi_error alloc_job_prepare(const alloc_ctx *x, size_t j, size_t *unmet, pfi_diag *d);

/* The lowest cap job j may take (W): its curve's lowest or cap_lo_w, raised to its floor's
   cap (as alloc_job_prepare finds it; its top allowed cap when the floor cannot be met).
   The job's inputs must have been checked. */
double alloc_job_lowest_cap(const pfi_alloc_jobs *J, size_t j);

/*
 * The upper concave envelope of job j's (d, wt·t) (true or estimated). When every point is
 * a vertex (power strictly rising, slopes strictly falling: the usual measured curve) nothing
 * is stored; otherwise pfi_envelope's vertices are kept in the workspace. PFI_ERR_NOMEM.
 */
pfi_error alloc_job_envelope(const alloc_ctx *x, size_t j, bool est);

/* Hand job j's envelope segments to the selection: slope > hi adds to *above, slope in
   [lo, hi] goes to the buffer (bs/bw), the rest counts in *below. PFI_ERR_NOMEM. */
pfi_error alloc_job_classify(const alloc_ctx *x, size_t j, bool est, double hi, double lo,
                             double *above, size_t *below);

/*
 * The plain pass over the jobs: alloc_job_prepare for each, the totals in run->S, and with
 * classify every job's true envelope segments to the selection's buffer (all of them: the
 * bracket is the whole line). Errors: those of alloc_job_prepare.
 */
pfi_error alloc_pass_jobs(alloc_run *run, bool classify, pfi_diag *d);

/*
 * The output phase: each job of run->list not already placed gets its cap, power,
 * throughput, marginals and shed at power w->pick[j] on its true curve (snapped down to a
 * candidate with a cap step or when infeasible), then r's totals over every job.
 */
void alloc_output_jobs(const alloc_run *run, pfi_alloc_result *r);

/*
 * With a cap step, after the output phase (oracle): the budget left over by rounding the
 * threshold job down to its grid point is spent greedily — repeatedly, the move of one job
 * up to a higher candidate that fits what is left and gains the most weighted tokens/s —
 * until no move fits (at most ALLOC_FILL_ROUNDS moves); r's outputs and totals updated.
 * The result never draws more than the budget and is never worse than the threshold job
 * rounded down; tests compare it with exhaustive search (tests/test_allocate.c).
 */
#define ALLOC_FILL_ROUNDS 256
void alloc_fill_grid(const alloc_run *run, pfi_alloc_result *r);

/* ---- the threshold (alloc_threshold.c) ------------------------------------------------- */

/* pfi_alloc_select's λ by buckets of slope (fewer moves, *above summed in another order):
   the oracle's sampled selections (alloc_threshold.c); simd: its passes with AVX-512 where
   the CPU has it (the same bits; false: the scalar passes, the workspace's no_simd); *kept:
   whether slope and width are left in their order (they are permuted otherwise). */
double alloc_select_buckets(double *slope, double *width, size_t m, double cap, double *above,
                            bool simd, bool *kept);

/*
 * The Lagrangian threshold on the envelopes (true or estimated) for a budget cap above the
 * jobs' lowest power: every job starts at its lowest candidate; segments with slope > λ are
 * taken, those at λ in job order while the budget lasts (the last one in part when
 * continuous). Writes each job's power to w->pick and λ to *lambda and returns the envelope
 * (LP) value (of the jobs in list[n_list] only, every job when list is NULL: jobs outside the
 * list have no segment at the threshold). The buffer must hold the segments in [lo_b, hi_b],
 * above_hi the width above hi_b (see alloc_job_classify). With out, the outputs of jobs whose
 * whole curve the sampled pass copied are written there (w->flag[j] set).
 */
double alloc_pick(const alloc_ctx *x, bool est, double cap, double above_hi, const size_t *list,
                  size_t n_list, pfi_alloc_result *out, double *lambda);

/* ---- the oracle's pass for large instances (oracle_pass.c) ------------------------------ */

/*
 * A bracket [*lo, *hi] for the oracle's threshold slope from a sample of the jobs, for a
 * large instance (at least 2048 jobs, no cap step); false (no
 * bracket, *hi = INFINITY, *lo = -INFINITY) when the instance does not qualify or the sample
 * holds no usable job. Only a guess: see alloc_bracket_holds.
 */
bool alloc_oracle_bracket(const alloc_ctx *x, double *hi, double *lo);

/*
 * The oracle's single pass with a bracketed threshold: validate each job, place at once those
 * with no segment inside the bracket (their outputs in r, summed in S->value, tp, tt), hand
 * the segments inside to the selection and list the other jobs in w->list. Fills S as
 * alloc_pass_jobs does, S->above and S->below against the bracket. Errors: as
 * alloc_job_prepare.
 */
pfi_error alloc_fast_pass(const alloc_ctx *x, double b_hi, double b_lo, pfi_alloc_result *r,
                          alloc_sums *S, pfi_diag *d);

/* The threshold lies in the bracket: the width above it fits and, unless nothing lies below
   it, the segments inside reach past the capacity. */
static inline bool alloc_bracket_holds(double above, double cap, double inside, size_t below)
{
    return above <= cap && (below == 0 || cap < above + inside);
}

/* ---- shares (alloc_shares.c) ---------------------------------------------------------- */

/* The method of the strategies that shed by shares (r->method). */
#define ALLOC_METHOD_SHARES "shares of the reduction, water-filling within cap bounds"

/*
 * The common end of the share strategies: with w->share[j] set for every job, each job sheds
 * min(its headroom, θ·share) of its top power, Σ sheds = the top power beyond the budget
 * (water-filling; what the shares cannot place goes by remaining headroom); w->pick gets the
 * powers.
 */
void alloc_shed_by_shares(alloc_run *run);

/* ---- eight jobs at a time (AVX-512, where the compiler has it) -------------------------- */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ALLOC_HAVE_GATHER8 1

/* Points 0 .. k − 1 of eight curves of k points each, one after the other from x (one of the
   jobs' per-point arrays: cap_w, power_w or tput_tok_s at a job's first point): out[i] holds
   point i of each (k constant where inlined: the loop unrolled, the registers kept). For the
   tree's eight-jobs-a-step passes (alloc_tree.c; oracle_pass.c keeps its own gathers, measured
   2-4 % faster at 10 000 jobs). */
__attribute__((target("avx512f,avx512dq"), always_inline)) static inline void
alloc_gather8(const double *x, int k, __m512d *out)
{
    const __m512i at = _mm512_setr_epi64(0, k, 2 * k, 3 * k, 4 * k, 5 * k, 6 * k, 7 * k);
#pragma GCC unroll 16
    for (int i = 0; i < k; i++)
        out[i] = _mm512_i64gather_pd(at, x + i, 8);
}

/* alloc_opt for jobs j .. j + 7: v[j + q] unless v is NULL or the value NaN, else dflt. */
__attribute__((target("avx512f,avx512dq"), always_inline)) static inline __m512d
alloc_opt8(const double *v, size_t j, double dflt)
{
    __m512d d = _mm512_set1_pd(dflt);
    if (v == NULL)
        return d;
    __m512d x = _mm512_loadu_pd(v + j);
    return _mm512_mask_mov_pd(d, _mm512_cmp_pd_mask(x, x, _CMP_ORD_Q), x);
}
#endif

/* ---- the tree's paths (alloc_tree.c), for tests ------------------------------------- */

/* Which of its paths the tree oracle may take with workspace ws: no_fast, never tree_fast (the
   general path on the same instance); no_simd, tree_fast and the flat pass without their
   AVX-512 copies (the same bits). Set by tests before a call; kept until changed. */
void alloc_tree_ws_paths(pfi_alloc_tree_workspace *ws, bool no_fast, bool no_simd);

/* Whether the last pfi_allocate_tree_ws call on ws ended in tree_fast. */
bool alloc_tree_ws_took_fast(const pfi_alloc_tree_workspace *ws);

#endif
