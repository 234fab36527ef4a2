/*
 * The allocation strategies behind pfi_allocate_ws, one file each (strategy_*.c) and one row
 * each in alloc_strategies[] (strategy.c), which pfi_strategy_name, pfi_strategy_parse, the
 * input checks and the simulation read; nothing else names a strategy's code.
 *
 * A call runs in phases (allocate.c): the inputs checked (with the row's needs), the
 * strategy's pass over the jobs (validation, candidates, envelopes, totals in run->S), the
 * totals and the budget, then, when the budget binds, the strategy's placement (every job's
 * power in w->pick, or outputs written directly for the jobs it flags), and the outputs.
 *
 * Adding a strategy: its value (and PFI_STRATEGY_COUNT) in pfi/allocate.h with its doc, a
 * file strategy_NAME.c defining its placement (and a pass if the plain one will not do), its
 * declaration below, its row in strategy.c, the file in PFI_POWER_SOURCES, and its colour in
 * plot/plot_sim.c. The usage texts of pfi allocate and pfi control and tests/test_oom.c list
 * the strategies from the table.
 */
#ifndef PFI_POWER_STRATEGY_H
#define PFI_POWER_STRATEGY_H

#include <stdbool.h>

#include "pfi/allocate.h"
#include "power/alloc_internal.h"

/* What a strategy needs of the instance (alloc_strategy.needs), checked job by job before
   the pass, after each job's weight and GPU count: the PFI (ALLOC_NEEDS_PFI, or
   ALLOC_NEEDS_EST without the caller's curves), the feature, the caller's estimated curves. */
enum {
    ALLOC_NEEDS_PFI = 1,     /* an estimated PFI > 0 for every job (jobs->pfi) */
    ALLOC_NEEDS_FEATURE = 2, /* a raw feature value >= 0 for every job (jobs->feature) */
    ALLOC_NEEDS_EST = 4,     /* estimated curves: the caller's (checked: finite power > 0,
                                throughput >= 0, neither falling) or else a PFI per job */
};

/*
 * The strategy's pass over the jobs: validate each (alloc_job_prepare), totals in run->S;
 * what its placement needs of the segments and the workspace. NULL in the row: the plain
 * pass, alloc_pass_jobs(run, false, d). Errors: as pfi_allocate_ws.
 */
typedef pfi_error (*alloc_pass_fn)(alloc_run *run, pfi_alloc_result *r, pfi_diag *d);

/*
 * The strategy's placement when the budget binds (feasible, Σ top power > B): every job's
 * power in w->pick (or its outputs in r with w->flag[j] set, run->placed); run->list and
 * n_list may narrow the jobs left to the output phase; sets r->method, and r->lambda and
 * r->upper_bound when it has them (they are NaN otherwise). Errors: as pfi_allocate_ws.
 */
typedef pfi_error (*alloc_place_fn)(alloc_run *run, pfi_alloc_result *r, pfi_diag *d);

/* One strategy. */
typedef struct alloc_strategy {
    const char *name;     /* as pfi_strategy_name prints and pfi_strategy_parse reads it */
    unsigned needs;       /* ALLOC_NEEDS_* */
    bool lp_bound;        /* r->upper_bound is the envelope (LP) bound: when the budget does
                             not bind, the objective itself */
    alloc_pass_fn pass;   /* NULL: the plain pass */
    alloc_place_fn place; /* never NULL */
} alloc_strategy;

/* Every strategy, indexed by pfi_strategy (strategy.c). */
extern const alloc_strategy alloc_strategies[PFI_STRATEGY_COUNT];

/* strategy_oracle.c: the concave envelope + Lagrangian threshold (the optimum). */
pfi_error alloc_oracle_pass(alloc_run *run, pfi_alloc_result *r, pfi_diag *d);
pfi_error alloc_oracle_place(alloc_run *run, pfi_alloc_result *r, pfi_diag *d);
/* strategy_equal.c: every job sheds the same fraction of its power. */
pfi_error alloc_equal_place(alloc_run *run, pfi_alloc_result *r, pfi_diag *d);
/* strategy_class_weighted.c: deep_cut jobs shed class_factor times as much. */
pfi_error alloc_class_weighted_place(alloc_run *run, pfi_alloc_result *r, pfi_diag *d);
/* strategy_pfi_weighted.c: shares ∝ power × PFI ÷ tokens per joule. */
pfi_error alloc_pfi_weighted_place(alloc_run *run, pfi_alloc_result *r, pfi_diag *d);
/* strategy_pfi_model.c: the oracle on curves estimated from PFI, its sheds applied. */
pfi_error alloc_pfi_model_place(alloc_run *run, pfi_alloc_result *r, pfi_diag *d);
/* strategy_raw_telemetry.c: shares ∝ power × the raw feature. */
pfi_error alloc_raw_telemetry_place(alloc_run *run, pfi_alloc_result *r, pfi_diag *d);
/* strategy_fair_headroom.c: every job sheds the same fraction of its headroom (the
   demonstration's "DVFS, Fair"). */
pfi_error alloc_fair_headroom_place(alloc_run *run, pfi_alloc_result *r, pfi_diag *d);

#endif
