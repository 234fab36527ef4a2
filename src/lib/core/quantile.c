/*
 * Quantiles by selection (see pfi/quantile.h).
 */
#include "pfi/quantile.h"

#include <gsl/gsl_sort.h>
#include <math.h>

/*
 * Quickselect: afterwards data[k] is the k-th smallest of data[lo..hi], every element before
 * it is <= and every element after it is >=. The partition is Lomuto's without branches
 * (random draws make every comparison a coin flip, which a branchy partition pays for in
 * mispredictions); pivots are medians of three. Many equal values can make Lomuto slow, so
 * after 2·log2(n) + 8 rounds the remaining range is sorted instead (GSL heapsort).
 */
static void select_kth(double *data, size_t lo, size_t hi, size_t k)
{
    int rounds = 8;
    for (size_t n = hi - lo + 1; n > 1; n >>= 1)
        rounds += 2;
    while (hi > lo) {
        if (rounds-- == 0) {
            gsl_sort(data + lo, 1, hi - lo + 1);
            return;
        }
        size_t mid = lo + (hi - lo) / 2;
        /* median of three into data[hi] */
        if (data[mid] < data[lo]) {
            double t = data[mid];
            data[mid] = data[lo];
            data[lo] = t;
        }
        if (data[hi] < data[lo]) {
            double t = data[hi];
            data[hi] = data[lo];
            data[lo] = t;
        }
        if (data[mid] < data[hi]) {
            double t = data[mid];
            data[mid] = data[hi];
            data[hi] = t;
        }
        double pivot = data[hi];
        size_t store = lo;
        for (size_t i = lo; i < hi; i++) {
            double v = data[i];
            size_t smaller = v < pivot;
            data[i] = data[store];
            data[store] = v;
            store += smaller;
        }
        data[hi] = data[store];
        data[store] = pivot;
        if (k == store)
            return;
        if (k < store)
            hi = store - 1;
        else
            lo = store + 1;
    }
}

pfi_error pfi_quantiles(double *data, size_t n, const double *f, double *out, size_t m)
{
    if (n == 0 || data == NULL || (m > 0 && (f == NULL || out == NULL)))
        return PFI_ERR_INVALID_ARGUMENT;
    for (size_t q = 0; q < m; q++)
        if (!(f[q] >= 0 && f[q] <= 1) || (q > 0 && f[q] < f[q - 1]))
            return PFI_ERR_INVALID_ARGUMENT;
    size_t from = 0;
    for (size_t q = 0; q < m; q++) {
        double h = (double)(n - 1) * f[q];
        size_t k = (size_t)floor(h);
        select_kth(data, from, n - 1, k);
        double v = data[k];
        double next = v;
        if (k + 1 < n) {
            /* the (k+1)-th smallest is the minimum of what lies above position k */
            next = data[k + 1];
            for (size_t i = k + 2; i < n; i++)
                if (data[i] < next)
                    next = data[i];
        }
        out[q] = v + (h - (double)k) * (next - v);
        from = k;
    }
    return PFI_OK;
}
