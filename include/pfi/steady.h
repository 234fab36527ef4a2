/*
 * pfi/steady.h — the steady-state value of a telemetry series (DESIGN §2, paper §3).
 *
 * The paper samples DCGM every 5 s and summarises each run by the mean of the top 10 % of its
 * samples, which leaves out the dips of evaluations and checkpoints. pfi also drops an
 * optional warm-up at the start of the series [ours; default 0 s].
 */
#ifndef PFI_STEADY_H
#define PFI_STEADY_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_STEADY_DEFAULT_Q 0.10

/*
 * A standard error below PFI_SE_ROUNDING times its estimate's magnitude is the rounding noise of
 * the arithmetic on a constant series (equal samples, intervals of equal rate), not a
 * measurement: it is reported as 0 [ours]. Real readings' resolution (0.01 W of 700 W, one token
 * in a step) keeps a true standard error far above it.
 */
#define PFI_SE_ROUNDING 1e-12

/*
 * pfi_se_rounded — se, or 0 when 0 <= se < PFI_SE_ROUNDING·|estimate| (the rule above); NaN
 * stays NaN. Used wherever a standard error is computed (pfi_steady_state, the training-log
 * throughput) and printed (the run store's exports, pfi runs), so table, CSV and JSON agree.
 */
double pfi_se_rounded(double se, double estimate);

/* pfi_steady — the result of pfi_steady_state. */
typedef struct pfi_steady {
    double mean;      /* mean of the top-q samples, in the series' unit */
    double se;        /* their standard error s/sqrt(m); NaN when m < 2 */
    size_t m;         /* samples averaged: max(1, ceil(q * n_valid)) */
    size_t n_valid;   /* samples after the warm-up that were valid */
    size_t n_missing; /* samples after the warm-up that were missing (invalid, NaN, ±inf) */
    size_t n_warmup;  /* samples dropped as warm-up */
} pfi_steady;

/*
 * pfi_steady_state — steady-state value of a series.
 *
 * t_s[n]: sample times in seconds on a monotonic clock, non-decreasing (may be NULL when
 * warmup_s == 0). value[n]: the samples, any unit. valid[n]: may be NULL (all valid); a sample
 * with valid[i] false, or a NaN or infinite value, is missing: counted, never averaged. Samples
 * with t_s[i] - t_s[0] < warmup_s are the warm-up. Of the n_valid remaining valid samples, the m =
 * max(1, ceil(q·n_valid)) largest are averaged (ties broken arbitrarily: equal values give the same
 * mean); se is their sample standard deviation over sqrt(m), 0 below the rounding noise
 * (pfi_se_rounded). Every sum is exact and rounded once (the mean: that sum over m with the
 * division's remainder kept; the squared deviations fl((x − mean)²) summed exactly), so the
 * result depends on the values only, never on their order [ours].
 *
 * work[n]: caller-provided scratch (the function allocates nothing); may alias nothing else.
 * Errors: PFI_ERR_INVALID_ARGUMENT (q outside (0,1], warmup_s < 0, t_s NULL with a warm-up,
 * times decreasing), PFI_ERR_EMPTY (no valid sample after the warm-up; *out then has the
 * counts and mean = se = NaN). Thread-safe. Cost O(n) expected (quickselect).
 */
pfi_error pfi_steady_state(const double *t_s, const double *value, const bool *valid, size_t n,
                           double warmup_s, double q, double *work, pfi_steady *out);

#ifdef __cplusplus
}
#endif

#endif
