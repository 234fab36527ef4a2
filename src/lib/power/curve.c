/*
 * Curves: checks, the isotonic repair rule, interpolation and the concave envelope.
 */
#include "pfi/curve.h"

#include <float.h>
#include <math.h>

pfi_error pfi_curve_check(size_t n, const double *cap_w, const double *power_w, const double *tput,
                          pfi_curve_report *rep)
{
    if (n == 0 || cap_w == NULL || power_w == NULL || tput == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    pfi_curve_report r = {0, 0, 0.0, 0.0};
    /* the usual curve in one branch-free sweep: every point valid, the caps rising, nothing
       falling (then the loop below would find nothing) */
    bool plain = cap_w[0] > 0 && cap_w[0] <= DBL_MAX && power_w[0] > 0 && power_w[0] <= DBL_MAX &&
                 tput[0] >= 0 && tput[0] <= DBL_MAX;
    for (size_t i = 1; i < n; i++)
        plain &= (cap_w[i] > cap_w[i - 1]) & (cap_w[i] <= DBL_MAX) &
                 (power_w[i] >= power_w[i - 1]) & (power_w[i] <= DBL_MAX) &
                 (tput[i] >= tput[i - 1]) & (tput[i] <= DBL_MAX);
    if (plain) {
        if (rep != NULL)
            *rep = r;
        return PFI_OK;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(cap_w[i]) || !isfinite(power_w[i]) || !isfinite(tput[i]) || !(cap_w[i] > 0) ||
            !(power_w[i] > 0) || !(tput[i] >= 0))
            return PFI_ERR_INVALID_ARGUMENT;
        if (i > 0 && !(cap_w[i] > cap_w[i - 1]))
            return PFI_ERR_INVALID_ARGUMENT;
        if (i > 0 && power_w[i] < power_w[i - 1]) {
            r.power_violations++;
            r.max_power_drop_w = fmax(r.max_power_drop_w, power_w[i - 1] - power_w[i]);
        }
        if (i > 0 && tput[i] < tput[i - 1]) {
            r.tput_violations++;
            r.max_tput_drop = fmax(r.max_tput_drop, tput[i - 1] - tput[i]);
        }
    }
    if (rep != NULL)
        *rep = r;
    return PFI_OK;
}

/*
 * Pool adjacent violators: a stack of blocks (mean, size); a new value merges with the block
 * below while that block's mean is larger. work holds means in [0, n) and sizes in [n, 2n).
 */
size_t pfi_isotonic(double *y, size_t n, double *work)
{
    if (n < 2)
        return 0;
    double *mean = work, *size = work + n;
    size_t top = 0;
    for (size_t i = 0; i < n; i++) {
        mean[top] = y[i];
        size[top] = 1;
        top++;
        while (top > 1 && mean[top - 2] > mean[top - 1]) {
            double s = size[top - 2] + size[top - 1];
            mean[top - 2] = (mean[top - 2] * size[top - 2] + mean[top - 1] * size[top - 1]) / s;
            size[top - 2] = s;
            top--;
        }
    }
    size_t changed = 0, i = 0;
    for (size_t b = 0; b < top; b++) {
        for (size_t k = 0; k < (size_t)size[b]; k++, i++) {
            if (y[i] != mean[b])
                changed++;
            y[i] = mean[b];
        }
    }
    return changed;
}

size_t pfi_curve_repair(size_t n, double *power_w, double *tput, double *work)
{
    return pfi_isotonic(power_w, n, work) + pfi_isotonic(tput, n, work);
}

double pfi_interp(const double *x, const double *y, size_t n, double x0)
{
    if (n == 0 || isnan(x0))
        return NAN;
    if (x0 <= x[0]) {
        /* equal x at the left end: the upper value */
        size_t i = 0;
        while (i + 1 < n && x[i + 1] == x[0])
            i++;
        return x0 < x[0] ? y[0] : y[i];
    }
    if (x0 >= x[n - 1])
        return y[n - 1];
    /* binary search for the last i with x[i] <= x0 */
    size_t lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (x[mid] <= x0)
            lo = mid;
        else
            hi = mid;
    }
    if (x[lo] == x0)
        return y[lo];
    double w = (x0 - x[lo]) / (x[hi] - x[lo]);
    return y[lo] + w * (y[hi] - y[lo]);
}

/* Cross product sign of (b − a) × (c − a): > 0 when c lies above the line a→b. */
static double turn(double ax, double ay, double bx, double by, double cx, double cy)
{
    return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
}

size_t pfi_envelope(const double *x, const double *y, size_t n, size_t *idx)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        /* of equal x keep only the largest y (the first one of them when tied) */
        if (m > 0 && x[idx[m - 1]] == x[i]) {
            if (y[i] > y[idx[m - 1]])
                m--;
            else
                continue;
        }
        /* pop while the last vertex is on or below the chord from its predecessor to i, or the
           slope to i, as computed, is above the slope to the last vertex: nearly collinear
           points, where the cross product and the two divisions round differently (the
           allocators compare these very slopes; one that rose made the tree's greedy skip a
           segment, and the flat threshold land where a job never got: issue 18 item 3) */
        while (m >= 2) {
            size_t a = idx[m - 2], b = idx[m - 1];
            if (turn(x[a], y[a], x[b], y[b], x[i], y[i]) < 0 &&
                !((y[i] - y[b]) / (x[i] - x[b]) > (y[b] - y[a]) / (x[b] - x[a])))
                break;
            m--;
        }
        idx[m++] = i;
    }
    return m;
}
