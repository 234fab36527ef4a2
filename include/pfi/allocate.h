/*
 * pfi/allocate.h — per-job power caps under a cluster power budget (DESIGN §6; paper §6).
 *
 * Jobs j = 1..n, each with g_j GPUs and a curve: per-GPU cap c → drawn power D_j(c) (W,
 * whole job) and throughput T_j(c) (tokens/s, whole job), measured at a few caps and
 * interpolated piecewise-linearly in c (pfi/curve.h). The reference cap c_ref,j is the
 * curve's highest cap. Choose c_j in [lo_j, hi_j] to
 *     maximise Σ w_j T_j(c_j)   subject to   Σ D_j(c_j) ≤ B,
 * B given in W or as a reduction r: B = (1 − r) Σ D_j(c_ref,j). Bounds: lo_j = the curve's
 * lowest cap or the caller's, raised to the smallest cap meeting the SLA floor
 * T_j(c) ≥ s_j T_j(c_ref,j); hi_j = the highest cap or the caller's. With a cap step
 * (cap_step_w > 0) a job's caps are the multiples of the step in [lo_j, hi_j], plus hi_j.
 *
 * Because D_j and T_j are both linear in c between measured caps, T_j is piecewise linear
 * in D_j with the same breakpoints; the allocator works in power space.
 *
 * The oracle (PFI_STRATEGY_ORACLE) method: the upper concave envelope of each job's
 * (D, w·T) points, then the Lagrangian threshold: every job starts at its lowest allowed
 * power, and envelope segments are taken in descending marginal tokens/s per W until the
 * budget is spent; the threshold slope λ is found by weighted selection (expected O(total
 * segments), no sort). Exactness:
 *   - continuous caps, concave curves: the result is the optimum (fractional knapsack /
 *     LP duality); tests check it against exhaustive search and SciPy's linprog.
 *   - non-concave curves: every job lands on an envelope vertex, which is a measured point,
 *     except at most one job (the one on the threshold segment) which is placed at the same
 *     power on its true curve. The envelope value is an upper bound on the optimum
 *     (upper_bound_tok_s), so the result is within upper_bound − objective of optimal, and
 *     that gap is at most the largest distance between one job's envelope and its curve.
 *   - a cap step: the envelope is taken over the grid caps; the job on the threshold segment
 *     is rounded down to the grid point just below its power (the budget holds), then the
 *     budget left is spent greedily (one job at a time up to the higher grid cap that fits
 *     and gains most); never worse than the best feasible rounding of the LP over the grid,
 *     at most one grid segment's value below the discrete optimum on concave curves (tests
 *     check both against exhaustive search).
 * Other strategies decide how much power each job sheds, then turn that into caps on the
 * given (true) curves, each job clamped to [lo_j, hi_j] with the shortfall spread over the
 * others in proportion to their shares (water-filling):
 *   - equal: share ∝ D_j(hi_j) — every job sheds the same fraction of its power.
 *   - class-weighted: share ∝ D_j × class_factor for jobs flagged deep_cut, D_j otherwise
 *     (the paper's "MoE fine-tuning-weighted").
 *   - pfi-weighted: share ∝ D_j × PFI_j ÷ (T_j/D_j) at the reference — power × estimated PFI
 *     ÷ tokens per joule [our reading of the paper's PFI-aware heuristic, DESIGN §6].
 *   - pfi-model [ours]: each PFI_j becomes an estimated curve through the job's reference
 *     point by inverting the DESIGN §7 model (the compute share α that gives PFI_j on the
 *     job's cap grid), or the caller's estimated curves (est_power_w, est_tput_tok_s); the
 *     oracle runs on the estimated curves, and the sheds it chooses are the shares applied
 *     to the true curves.
 *   - raw-telemetry: share ∝ D_j × feature_j, the raw DCGM feature, uncalibrated (the paper's
 *     baseline).
 *   - fair-headroom: share ∝ D_j(hi_j) − D_j(lo_j), the job's headroom above the power that
 *     keeps its floor (tier): every job sheds the same fraction of its headroom — the "DVFS,
 *     Fair" policy of the Phoenix field demonstration (arXiv 2507.00909, its pseudocode).
 * With a cap step, heuristic caps are rounded down to the grid (the budget holds; some of it
 * may be left unspent).
 *
 * Thread-safety: pfi_allocate touches only its arguments; concurrent calls are safe.
 */
#ifndef PFI_ALLOCATE_H
#define PFI_ALLOCATE_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/error.h"
#include "pfi/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pfi_strategy {
    PFI_STRATEGY_ORACLE = 0,
    PFI_STRATEGY_EQUAL = 1,
    PFI_STRATEGY_CLASS_WEIGHTED = 2,
    PFI_STRATEGY_PFI_WEIGHTED = 3,
    PFI_STRATEGY_PFI_MODEL = 4,
    PFI_STRATEGY_RAW_TELEMETRY = 5,
    PFI_STRATEGY_FAIR_HEADROOM = 6
} pfi_strategy;

/* The strategies are numbered 0 .. PFI_STRATEGY_COUNT - 1, in the order above: a caller
   that lists them (a --help) loops over the numbers with pfi_strategy_name. */
#define PFI_STRATEGY_COUNT 7

/* pfi_strategy_name — "oracle", "equal", "class-weighted", "pfi-weighted", "pfi-model",
 * "raw-telemetry", "fair-headroom"; "unknown" otherwise. Static (borrowed, never freed). */
const char *pfi_strategy_name(pfi_strategy s);

/* pfi_strategy_parse — the strategy named name. Errors: PFI_ERR_INVALID_ARGUMENT. */
pfi_error pfi_strategy_parse(const char *name, pfi_strategy *out);

/*
 * pfi_alloc_jobs — the instance. All arrays are borrowed. Job j's curve points are
 * [offset[j], offset[j+1]) of cap_w / power_w / tput_tok_s, caps strictly ascending, power
 * and throughput non-decreasing (repair with pfi_curve_repair first), power > 0.
 * Optional per-job arrays (NULL: the default) have n entries.
 */
typedef struct pfi_alloc_jobs {
    size_t n;
    const size_t *offset;          /* [n + 1], offset[0] = 0 */
    const double *cap_w;           /* per-GPU cap, W */
    const double *power_w;         /* whole-job drawn power, W */
    const double *tput_tok_s;      /* whole-job throughput, tokens/s */
    const double *gpus;            /* GPU count (pfi-model; default 1) */
    const double *weight;          /* objective weight w_j >= 0 (default 1) */
    const double *floor_frac;      /* SLA floor s_j in [0, 1] (NaN or NULL: none) */
    const double *cap_lo_w;        /* lower cap bound (NaN or NULL: the lowest cap) */
    const double *cap_hi_w;        /* upper cap bound (NaN or NULL: the highest cap) */
    const double *pfi;             /* estimated PFI (pfi-weighted, pfi-model) */
    const double *feature;         /* raw telemetry feature >= 0 (raw-telemetry) */
    const unsigned char *deep_cut; /* nonzero: class-weighted cuts this job deeper */
    const double *model_alpha;     /* pfi-model: the compute share for each job's PFI when the
                                      caller has it (pfi_model_share_for_pfi on the job's caps
                                      with the options' shape); NULL: found here */
    /* pfi-model: the estimated curve at each curve point (same layout as power_w: whole-job
       W and tokens/s, finite, power > 0, neither falling as the cap rises), when the caller
       has it (e.g. precomputed per job type); between points (cap bounds, a cap step)
       interpolated linearly in the cap. Both or neither; NULL: the §7 model through each
       job's reference point with model_alpha or pfi (pfi is then not needed for pfi-model) */
    const double *est_power_w;
    const double *est_tput_tok_s;
} pfi_alloc_jobs;

/* pfi_alloc_options — pfi_alloc_options_init gives the defaults. */
typedef struct pfi_alloc_options {
    pfi_strategy strategy; /* PFI_STRATEGY_ORACLE */
    double budget_w;       /* cluster budget B, W; NaN: use reduction (NaN) */
    double reduction;      /* r in [0, 1]; used when budget_w is NaN (0.3) */
    double cap_step_w;     /* 0: continuous caps (0) */
    double class_factor;   /* class-weighted: share multiplier for deep_cut jobs (2) [ours] */
    double x_min;          /* pfi-model: x_min of the PFI definition (0.02) */
    pfi_model_job shape;   /* pfi-model: γ, the ratio P_s/P_u (power_static_w /
                              power_uncapped_w), f_max and f_min of the model; the compute
                              share, P_u (reference draw ÷ gpus) and scale are set per job;
                              compute shares are searched in [0.02, 1]
                              (pfi_model_share_for_pfi) (pfi_model_job_init(α = 1, 700 W):
                              P_s = 0.25 P_u, γ = 2, f 345–1980 MHz) */
} pfi_alloc_options;

/* pfi_alloc_options_init — the defaults above. */
void pfi_alloc_options_init(pfi_alloc_options *o);

/*
 * pfi_alloc_result — per-job arrays of n entries (pfi_alloc_result_init allocates them;
 * pfi_alloc_result_clear frees) and totals.
 */
typedef struct pfi_alloc_result {
    size_t n;
    double *cap_w;           /* chosen per-GPU cap, W */
    double *power_w;         /* predicted drawn power at that cap (true curve), W */
    double *tput_tok_s;      /* predicted throughput at that cap (true curve), tokens/s */
    double *marginal_down;   /* tokens/s lost per W shed further, at the chosen power
                                (envelope slope below; NaN at the lower bound), weighted */
    double *marginal_up;     /* tokens/s gained per W added (slope above; NaN at the top) */
    double *shed_w;          /* D_j(c_ref) − power_w, W */
    double budget_w;         /* B */
    double ref_power_w;      /* Σ D_j(c_ref) */
    double ref_tput_tok_s;   /* Σ T_j(c_ref) */
    double min_power_w;      /* Σ D_j(lo_j): the least the jobs can draw */
    double total_power_w;    /* Σ power_w (<= budget_w when feasible) */
    double total_tput_tok_s; /* Σ tput_tok_s */
    double objective;        /* Σ w_j tput_tok_s */
    double upper_bound;      /* oracle: the envelope (LP) bound on the objective; else NaN */
    double lambda;           /* oracle: threshold marginal (objective per W); else NaN */
    bool feasible;           /* min_power_w <= budget_w */
    double shortfall_w;      /* when infeasible: min_power_w − budget_w (every job at lo_j) */
    size_t floors_unmet;     /* jobs whose floor exceeds T_j(hi_j): held at hi_j */
    const char *method;      /* static: how the caps were found */
} pfi_alloc_result;

/* pfi_alloc_result_init — zero r and allocate its arrays for n jobs. Errors: PFI_ERR_NOMEM. */
pfi_error pfi_alloc_result_init(pfi_alloc_result *r, size_t n);

/* pfi_alloc_result_clear — free r's arrays and zero it. NULL is a no-op. */
void pfi_alloc_result_clear(pfi_alloc_result *r);

/*
 * pfi_alloc_workspace — scratch memory of pfi_allocate_ws, reused across calls so that a
 * caller that allocates repeatedly (the simulation, a control loop) allocates nothing once
 * the workspace has grown to its largest instance. Opaque; one per thread (not shareable
 * between concurrent calls).
 */
typedef struct pfi_alloc_workspace pfi_alloc_workspace;

/* pfi_alloc_workspace_create — an empty workspace in *out (owned;
 * pfi_alloc_workspace_destroy). Errors: PFI_ERR_NOMEM. */
pfi_error pfi_alloc_workspace_create(pfi_alloc_workspace **out);

/* pfi_alloc_workspace_destroy — free w. NULL is a no-op. */
void pfi_alloc_workspace_destroy(pfi_alloc_workspace *w);

/*
 * pfi_allocate — per-job caps for jobs under options o into r (initialised for jobs->n).
 * An infeasible budget is not an error: r->feasible is false, r->shortfall_w says by how
 * much, and every job is at its lower bound (the closest allocation).
 * Errors: PFI_ERR_INVALID_ARGUMENT (n == 0, r sized differently, a curve not ascending in
 * cap or decreasing in power or throughput, a bound outside the curve or lo > hi, a missing
 * input the strategy needs — pfi for pfi-weighted / pfi-model, feature for raw-telemetry —
 * or a NaN there, a negative budget, r outside [0, 1]); diag (may be NULL) says which job
 * and why. PFI_ERR_NOMEM.
 */
pfi_error pfi_allocate(const pfi_alloc_jobs *jobs, const pfi_alloc_options *o, pfi_alloc_result *r,
                       pfi_diag *diag);

/*
 * pfi_allocate_ws — pfi_allocate with the caller's workspace w (borrowed, grown as needed;
 * its contents on entry do not matter). pfi_allocate is this with a workspace of its own.
 * Cost: O(total curve points) time, no allocation once w is large enough. For the oracle on
 * large instances without a cap step (>= 2048 jobs; jobs with bounds or floors are placed
 * after the selection, as every job is on smaller ones) the threshold is first
 * bracketed from a sample (16384 jobs, then 16384 more to narrow it), so that one pass over
 * the jobs hands only the segments inside the bracket to the selection (6-point curves take
 * an unrolled path in it); a missed bracket is detected and redone with every segment, so
 * the result never depends on the sample. Errors: as pfi_allocate; r's
 * contents are unspecified after an error.
 */
pfi_error pfi_allocate_ws(const pfi_alloc_jobs *jobs, const pfi_alloc_options *o,
                          pfi_alloc_workspace *w, pfi_alloc_result *r, pfi_diag *diag);

/*
 * pfi_alloc_select — the weighted threshold at the heart of the oracle, exposed for tests
 * and benchmarks: given m segments with slopes slope[m] and widths width[m] > 0 (both
 * permuted in place) and a capacity cap >= 0, returns λ such that the widths of segments
 * with slope > λ sum to at most cap and those with slope >= λ to at least cap (−INFINITY
 * when all widths fit). *above receives the width strictly above λ. Expected O(m).
 */
double pfi_alloc_select(double *slope, double *width, size_t m, double cap, double *above);

#ifdef __cplusplus
}
#endif

#endif
