/* Per-job curves for the controller (src/lib/control/curves.c). Internal. */
#ifndef PFI_CTL_CURVES_H
#define PFI_CTL_CURVES_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

#include "pfi/curve.h"
#include "pfi/error.h"

/* points a curve holds (a store sweep with more caps is resampled evenly onto them), and
 * points a curve built from a PFI gets */
#define CTL_CURVE_MAX 64
#define CTL_CURVE_PFI_N 11

typedef struct ctl_curve {
    size_t n;
    double cap_w[CTL_CURVE_MAX];   /* per-GPU cap, ascending */
    double power_w[CTL_CURVE_MAX]; /* whole job, W */
    double tput[CTL_CURVE_MAX];    /* whole job, tokens/s */
    double alpha;                  /* §7 compute share used (NaN: measured) */
} ctl_curve;

#define pfi_interp_lin pfi_interp

/* The compute share ctl_curve_from_pfi found for a PFI and a reference draw, kept by the
 * caller from period to period (zeroed: none): the bisection that finds it is ≈ 95 % of the
 * curve's cost (≈ 12 ms a period at 1 333 jobs), and a job's PFI and reference rarely move. */
typedef struct ctl_share_memo {
    bool set;
    double pfi, ref_w, alpha;
} ctl_share_memo;

/* ctl_curve_from_pfi — the §7 curve with the PFI pfi on [lo, hi], through the reference:
 * per-GPU draw ref_pg_w at hi, job throughput ref_tput at hi. memo (NULL: none): the share
 * found last time, used when pfi and the reference are the same, else found and kept (the
 * curve is the same either way). */
pfi_error ctl_curve_from_pfi(double pfi, double ref_pg_w, double lo_w, double hi_w, size_t gpus,
                             double ref_tput, ctl_share_memo *memo, ctl_curve *c);

/* ctl_curve_from_store — the measured sweep of group in the store db (every run of it: more
 * than CTL_CURVE_MAX - 2 caps are resampled evenly over [lo, hi]), normalised to its highest
 * cap and scaled to the live reference (ref_power_w whole job, ref_tput), inside [lo, hi];
 * false when none (>= 2 runs) or out of memory. */
bool ctl_curve_from_store(sqlite3 *db, const char *group, double ref_power_w, double ref_tput,
                          double lo_w, double hi_w, ctl_curve *c);

double ctl_curve_power(const ctl_curve *c, double cap_w);
double ctl_curve_tput(const ctl_curve *c, double cap_w);

#endif
