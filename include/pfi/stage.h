/*
 * pfi/stage.h — staged actuation: the planner the controller (pfi/control.h) changes power
 * caps with, so that no intermediate state of the cluster exceeds the budget.
 *
 * Units: watts (per GPU caps; cost in the caller's unit, e.g. W). Plain arrays of n GPUs,
 * nothing allocated. Thread-safety: pure functions (cost is called from the caller's
 * thread only).
 */
#ifndef PFI_STAGE_H
#define PFI_STAGE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- staged actuation planner -----------------------------------------------------------
 * Caps change in two phases so that the cost of the cluster (Σ cost_g(cap_g), where cost is
 * any non-decreasing function of the cap: the cap itself, or the job curve's predicted
 * per-GPU power) never exceeds the budget in any intermediate state: first every decrease
 * (the state can only fall), then — once the decreases are confirmed — increases, granted in
 * order only while they fit: a GPU counts at max(confirmed, requested) while a request is in
 * flight and at its maximum when its cap was never confirmed, an increase that does not fit
 * whole is granted part way (bisection on the cap) or not at all. */
typedef struct pfi_stage_gpu {
    double confirmed_w; /* enforced cap last confirmed; NaN: unknown (counted at max_w) */
    double target_w;    /* where the allocation wants it; NaN: leave alone */
    double min_w, max_w;
    bool reachable; /* false: its agent does not answer (nothing is sent to it) */
} pfi_stage_gpu;

/* cost of GPU k at cap c (non-decreasing in c). */
typedef double (*pfi_stage_cost_fn)(void *ctx, size_t k, double cap_w);

/* pfi_stage_decreases — send_w[k] = target for every reachable GPU whose target is below its
 * confirmed cap (or whose cap is unknown), NaN otherwise. Returns how many. */
size_t pfi_stage_decreases(const pfi_stage_gpu *g, size_t n, double *send_w);

/*
 * pfi_stage_increases — after the decreases: send_w[k] = the cap to raise GPU k to (its
 * target, or less when the budget does not allow it; whole watts, floor), NaN otherwise,
 * such that Σ cost(state) stays <= budget_w whatever subset of these requests lands.
 * cost NULL: the cap itself. *used_w (may be NULL) = the cost with every grant applied.
 * Returns how many GPUs get an increase.
 */
size_t pfi_stage_increases(const pfi_stage_gpu *g, size_t n, double budget_w,
                           pfi_stage_cost_fn cost, void *ctx, double *send_w, double *used_w);

/* pfi_stage_cost — Σ cost over g[n] at confirmed caps (unknown: max_w). cost NULL: caps. */
double pfi_stage_cost(const pfi_stage_gpu *g, size_t n, pfi_stage_cost_fn cost, void *ctx);

#ifdef __cplusplus
}
#endif

#endif
