/*
 * pfi/simulate.h — the policy simulation of paper §6 (DESIGN §6).
 *
 * W workloads of J jobs are drawn from a job library (pfi/joblib.h) under two mixes:
 *   - random: templates uniformly;
 *   - production: a job is fine-tuning with probability prod_ft_share (0.8) [ours], drawn
 *     uniformly among the fine-tuning templates of 8 GPUs (small jobs), else pre-training drawn
 *     among the pre-training templates (large jobs: the most GPUs weigh most, ∝ GPU count)
 *     — "many small fine-tuning jobs, few large pre-training jobs".
 * For every reduction r and strategy, pfi_allocate chooses caps and the jobs' TRUE curves
 * give the throughput. Strategies that need a PFI get an estimate with realistic error:
 * PFI_est = PFI_true + pfi_noise·z, z standard normal, drawn per job in each workload,
 * floored at 1.0 (the paper saw no PFI < 1). raw-telemetry uses the library's raw feature
 * (unavailable when the library has none); class-weighted cuts deep_cut_class deeper.
 *
 * Metrics per (mix, r, strategy), over workloads: total tokens/s S; per job S/J; tokens/s
 * per job recovered over equal (S − S_equal)/J; share of the equal→oracle gap closed
 * (S − S_equal)/(S_oracle − S_equal) (workloads where the gap is below 1e-9·S_oracle are
 * left out of it); count of workloads where S < S_equal. Each has its mean over workloads
 * and a 95 % interval: the 2.5 and 97.5 percentiles of the per-workload values (type 7).
 * Also the throughput each class keeps, Σ T / Σ T(c_ref) over the class's jobs (mean over
 * workloads).
 *
 * Deterministic for a seed: workload w of mix m uses its own generator stream (seed,
 * 2w + m), so results do not depend on the number of threads.
 */
#ifndef PFI_SIMULATE_H
#define PFI_SIMULATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/allocate.h"
#include "pfi/error.h"
#include "pfi/joblib.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_SIM_MIXES 2
#define PFI_SIM_MAX_REDUCTIONS 16
/* The largest pfi_noise (PFI units) [ours]: 15 times the largest PFI measured (67, Zeus):
 * every estimate is noise long before it; past about 1e305 the estimates overflowed
 * pfi-weighted's P x PFI / (T/P) and its cells came out n/a (inf at 1e308: refused). */
#define PFI_SIM_MAX_PFI_NOISE 1000.0

typedef enum pfi_sim_mix { PFI_MIX_RANDOM = 0, PFI_MIX_PRODUCTION = 1 } pfi_sim_mix;

/* pfi_sim_mix_name — "random", "production". Static. */
const char *pfi_sim_mix_name(pfi_sim_mix m);

/*
 * pfi_sim_progress — called with the workloads finished so far and the total, from worker
 * threads (one at a time: calls are serialised), at most once per workload.
 */
typedef void (*pfi_sim_progress)(void *ctx, size_t done, size_t total);

/*
 * Where pfi-model's estimated curve of a job comes from, given its estimated PFI:
 *   - MEASURED: the measured curves of the library's other templates (never the job's own)
 *     whose PFIs bracket the estimate, blended linearly in PFI and read at the job's relative
 *     powers (see pfi simulate's README: real LLM curves fall steeply below ~200 W and are
 *     flat at the top, a shape the §7 model does not have); the §7 model when no other
 *     template is usable;
 *   - MODEL: the DESIGN §7 model through the job's reference point, its compute share
 *     inverted from the PFI.
 */
typedef enum pfi_sim_curves {
    PFI_SIM_CURVES_MEASURED = 0,
    PFI_SIM_CURVES_MODEL = 1
} pfi_sim_curves;

/* pfi_sim_options — pfi_sim_options_init gives the defaults. */
typedef struct pfi_sim_options {
    size_t workloads;                          /* W: 500 */
    size_t jobs;                               /* J: 100 */
    uint64_t seed;                             /* 1 */
    double reductions[PFI_SIM_MAX_REDUCTIONS]; /* 0.1, 0.2, 0.3, 0.4, 0.5 */
    size_t n_reductions;                       /* 5 */
    bool mix_enabled[PFI_SIM_MIXES];           /* both */
    double prod_ft_share;                      /* 0.8 [ours] */
    double pfi_noise;  /* SD of the PFI estimate error, PFI units, in [0, PFI_SIM_MAX_PFI_NOISE]:
                          0.25 [ours] */
    double cap_step_w; /* 0: continuous caps */
    const char *deep_cut_class; /* class-weighted: "moe-ft" */
    double class_factor;        /* 2 */
    unsigned threads;           /* 0: one per online CPU */
    pfi_sim_progress progress;  /* NULL: none */
    void *progress_ctx;
    pfi_sim_curves curves; /* pfi-model's curves: PFI_SIM_CURVES_MEASURED */
} pfi_sim_options;

void pfi_sim_options_init(pfi_sim_options *o);

/* pfi_sim_stat — a mean over workloads and its 95 % interval (percentiles); NaN when none. */
typedef struct pfi_sim_stat {
    double mean, lo, hi;
    size_t n; /* workloads that defined the value */
} pfi_sim_stat;

/* pfi_sim_cell — one (mix, r, strategy). */
typedef struct pfi_sim_cell {
    bool available; /* the strategy could run (input present) */
    pfi_sim_stat total_tok_s;
    pfi_sim_stat per_job_tok_s;
    pfi_sim_stat recovered_per_job_tok_s;
    pfi_sim_stat gap_closed;
    size_t below_equal;                      /* workloads with S < S_equal (beyond 1e-9 relative) */
    double retained[PFI_JOBLIB_MAX_CLASSES]; /* per class: mean Σ T / Σ T_ref; NaN absent */
} pfi_sim_cell;

/* pfi_sim_result — owned (pfi_sim_result_destroy). cells indexed by pfi_sim_cell_index. */
typedef struct pfi_sim_result {
    size_t n_reductions;
    double reductions[PFI_SIM_MAX_REDUCTIONS];
    bool mix_run[PFI_SIM_MIXES]; /* false: disabled, or the library cannot form the mix */
    pfi_sim_cell *cells;         /* PFI_SIM_MIXES × n_reductions × PFI_STRATEGY_COUNT */
    size_t infeasible;           /* allocations that could not meet the budget */
    double seconds;              /* wall time of the simulation */
} pfi_sim_result;

/* pfi_sim_cell_index — index of (mix, reduction index, strategy) in cells. */
static inline size_t pfi_sim_cell_index(const pfi_sim_result *r, pfi_sim_mix m, size_t ri,
                                        pfi_strategy s)
{
    return ((size_t)m * r->n_reductions + ri) * PFI_STRATEGY_COUNT + (size_t)s;
}

/*
 * pfi_simulate — run the simulation of o over library lib (borrowed) into *out (owned).
 * Errors: PFI_ERR_INVALID_ARGUMENT (0 workloads or jobs, no reduction, a reduction outside
 * (0, 1), no mix can run, bad noise; diag says which), PFI_ERR_NOMEM, PFI_ERR_THREAD.
 */
pfi_error pfi_simulate(const pfi_joblib *lib, const pfi_sim_options *o, pfi_sim_result **out,
                       pfi_diag *diag);

/* pfi_sim_result_destroy — free r. NULL is a no-op. */
void pfi_sim_result_destroy(pfi_sim_result *r);

#ifdef __cplusplus
}
#endif

#endif
