/*
 * pfi/quantile.h — several quantiles of an unsorted array in linear expected time.
 */
#ifndef PFI_QUANTILE_H
#define PFI_QUANTILE_H

#include <stddef.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * pfi_quantiles — the quantiles f[0] <= f[1] <= ... <= f[m-1] (each in [0, 1]) of
 * data[0..n), written to out[m]. Definition: Hyndman & Fan type 7 (linear interpolation
 * between order statistics ⌊h⌋ and ⌊h⌋+1, h = (n−1)f), the default of R, NumPy and GSL's
 * gsl_stats_quantile_from_sorted_data. data is reordered (not sorted); NaN values are not
 * allowed. Expected cost O(n·m) at worst, about 1.5 passes for the three quantiles of a CI:
 * each selection only looks above the previous one. Errors: PFI_ERR_INVALID_ARGUMENT (n == 0,
 * f out of order or outside [0, 1]). Thread-safe for distinct data.
 */
pfi_error pfi_quantiles(double *data, size_t n, const double *f, double *out, size_t m);

#ifdef __cplusplus
}
#endif

#endif
