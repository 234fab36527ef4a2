/*
 * pfi/curve.h — a job's power-cap curve: measured points (per-GPU cap → drawn power,
 * throughput), checked monotone, interpolated piecewise-linearly, and its concave envelope
 * (DESIGN §6).
 *
 * A curve is n points with caps strictly ascending. Drawn power and throughput must not
 * fall when the cap rises. Measurements violate that by noise; the documented repair rule
 * [ours] is isotonic regression by pool-adjacent-violators (equal weights), applied to power
 * and to throughput separately: each run of points that violates the order is replaced by
 * its mean — the non-decreasing sequence closest to the data in least squares. It changes
 * nothing on a monotone curve and is reported point by point (pfi_curve_report).
 *
 * All functions are pure, thread-safe, and allocate nothing; arrays are caller-owned.
 */
#ifndef PFI_CURVE_H
#define PFI_CURVE_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* pfi_curve_report — what pfi_curve_check found. */
typedef struct pfi_curve_report {
    size_t power_violations; /* i with power[i+1] < power[i] */
    size_t tput_violations;  /* i with tput[i+1] < tput[i] */
    double max_power_drop_w; /* largest power[i] − power[i+1] over violations; 0 if none */
    double max_tput_drop;    /* same for throughput, in its unit; 0 if none */
} pfi_curve_report;

/*
 * pfi_curve_check — validate a curve of n points: cap_w[n] (W, per GPU), power_w[n] (W,
 * drawn by the job), tput[n] (work/s, tokens/s for jobs). Fills *rep (may be NULL) with the
 * monotonicity violations. Errors: PFI_ERR_INVALID_ARGUMENT when n == 0, a value is not
 * finite, a cap or power is <= 0, a throughput is < 0, or the caps are not strictly
 * ascending. Monotonicity violations are not errors; see pfi_curve_repair.
 */
pfi_error pfi_curve_check(size_t n, const double *cap_w, const double *power_w, const double *tput,
                          pfi_curve_report *rep);

/*
 * pfi_isotonic — replace y[n] in place by its least-squares non-decreasing fit
 * (pool-adjacent-violators, equal weights). work[2n] scratch (doubles). Returns the number
 * of values changed. Source: Barlow et al., "Statistical Inference under Order Restrictions"
 * (1972); the rule [ours] DESIGN §6.
 */
size_t pfi_isotonic(double *y, size_t n, double *work);

/*
 * pfi_curve_repair — pfi_isotonic on power_w[n] and on tput[n] (in place). work[2n].
 * Returns the number of values changed.
 */
size_t pfi_curve_repair(size_t n, double *power_w, double *tput, double *work);

/*
 * pfi_interp — piecewise-linear y(x0) through (x[i], y[i]), i < n, x ascending (equal x
 * allowed: a vertical step, the upper value is used at that x). x0 outside [x[0], x[n−1]]
 * is clamped to the nearest end. NaN when n == 0 or x0 is NaN.
 */
double pfi_interp(const double *x, const double *y, size_t n, double x0);

/*
 * pfi_envelope — the upper concave envelope of points (x[i], y[i]), x ascending (equal x:
 * only the largest y counts): writes the indices of its vertices, ascending, to idx (room
 * for n) and returns their count (0 when n == 0). The first vertex is the leftmost point
 * with the largest y at the smallest x; the last, the rightmost point's largest y. Between
 * vertices the envelope lies on or above every point. The slopes between consecutive
 * vertices, computed as (y[q] − y[p]) / (x[q] − x[p]) in double, never rise: a point of
 * nearly collinear ones whose computed slope above it is above the one below (by rounding,
 * though the cross product found it above the chord) is not a vertex. O(n) (monotone chain).
 */
size_t pfi_envelope(const double *x, const double *y, size_t n, size_t *idx);

#ifdef __cplusplus
}
#endif

#endif
