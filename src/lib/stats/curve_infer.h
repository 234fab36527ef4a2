/*
 * Throughput curves inferred from a PFI by measured curves of other jobs (curve_infer.c):
 * a bank of normalised measured curves (relative power p = P/P_ref, relative throughput
 * t = T/T_ref, each with its PFI), and the curve a job of a given estimated PFI is expected
 * to follow: the two bank curves whose PFIs bracket the estimate, blended linearly in PFI.
 * Internal to libpfi (pfi-model's curves in the policy simulation, power/simulate.c).
 */
#ifndef PFI_STATS_CURVE_INFER_H
#define PFI_STATS_CURVE_INFER_H

#include <stddef.h>

#include "pfi/error.h"

/* The bank: curve i's points are [offset[i], offset[i+1]) of p_rel, t_rel, p_rel ascending,
   the last point (1, 1) (the reference); pfi[i] its PFI. Owned (curve_bank_clear). */
typedef struct curve_bank {
    size_t n;
    size_t *offset;
    double *p_rel, *t_rel;
    double *pfi;
} curve_bank;

/*
 * Build the bank from n curves: curve i's whole-job power (W) and throughput (any unit) at
 * points [offset[i], offset[i+1]) in ascending cap order, the last the reference, and its
 * PFI. Points whose power does not rise above the previous kept point are left out (a cap
 * that does not bind adds nothing to the shape). A curve with a reference power or
 * throughput <= 0, or no PFI > 0, is kept with pfi NaN and never chosen.
 * Errors: PFI_ERR_NOMEM (b is then empty and may be cleared).
 */
pfi_error curve_bank_build(curve_bank *b, size_t n, const size_t *offset, const double *power_w,
                           const double *tput, const double *pfi);

/* Release the bank's arrays (b itself is the caller's); b becomes empty. */
void curve_bank_clear(curve_bank *b);

/*
 * The relative throughput t_rel[k] expected at the relative powers p_rel[k] (k points, each
 * in (0, 1]) of a job whose PFI is estimated as pfi, from the bank's curves other than
 * `exclude` (the job's own curve, so that a job never learns from its own measurement; pass
 * b->n to exclude none): the nearest curve with a PFI <= pfi and the nearest with a PFI >=
 * pfi, blended linearly in PFI (one of them alone outside the bank's range). A curve is read
 * by linear interpolation in p between its points; below its lowest point throughput falls in
 * proportion to power (t = t_min · p / p_min); at or above 1 it is 1. The result never falls
 * as p rises. Returns the number of bank curves used (0: none usable; t_rel untouched).
 */
size_t curve_bank_infer(const curve_bank *b, size_t exclude, double pfi, const double *p_rel,
                        size_t k, double *t_rel);

#endif
