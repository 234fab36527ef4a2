/*
 * pfi/plot_sim.h — figures of the policy simulation (pfi/simulate.h), drawn with PLplot's
 * cairo drivers like pfi/plot.h. PLplot keeps global state: one thread at a time.
 *
 * Both write to a temporary file beside path and rename it over path (never a half file);
 * the format comes from the extension, ".png" or ".svg". Errors: PFI_ERR_INVALID_ARGUMENT
 * (unknown extension, nothing to draw), PFI_ERR_IO, PFI_ERR_PLOT, PFI_ERR_NOMEM; diag says why.
 */
#ifndef PFI_PLOT_SIM_H
#define PFI_PLOT_SIM_H

#include "pfi/error.h"
#include "pfi/joblib.h"
#include "pfi/simulate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* pfi_plot_sim_gap — share of the equal→oracle gap closed (%, mean over workloads) against
 * the reduction r (%), one line per strategy, one panel per mix that ran. */
pfi_error pfi_plot_sim_gap(const char *path, const pfi_sim_result *r, pfi_diag *diag);

/* pfi_plot_sim_classes — throughput each job class keeps (Σ T / Σ T_ref, mean over
 * workloads) against r (%), one panel per class, one line per strategy; the production mix
 * when it ran, else random. lib (borrowed) names the classes. */
pfi_error pfi_plot_sim_classes(const char *path, const pfi_sim_result *r, const pfi_joblib *lib,
                               pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
