/*
 * Steady-state value: the mean of the top q fraction of a series after a warm-up.
 */
#include "pfi/steady.h"

#include <gsl/gsl_statistics_double.h>
#include <math.h>

pfi_error pfi_steady_state(const double *t_s, const double *value, const bool *valid, size_t n,
                           double warmup_s, double q, double *work, pfi_steady *out)
{
    *out = (pfi_steady){.mean = NAN, .se = NAN};
    if (!(q > 0 && q <= 1) || !(warmup_s >= 0) || (t_s == NULL && warmup_s > 0) ||
        (n > 0 && (value == NULL || work == NULL)))
        return PFI_ERR_INVALID_ARGUMENT;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (t_s != NULL && i > 0 && !(t_s[i] >= t_s[i - 1]))
            return PFI_ERR_INVALID_ARGUMENT;
        if (t_s != NULL && t_s[i] - t_s[0] < warmup_s) {
            out->n_warmup++;
            continue;
        }
        if ((valid != NULL && !valid[i]) || !isfinite(value[i])) {
            out->n_missing++;
            continue;
        }
        work[k++] = value[i];
    }
    out->n_valid = k;
    if (k == 0)
        return PFI_ERR_EMPTY;
    size_t m = (size_t)ceil(q * (double)k - 1e-12);
    if (m < 1)
        m = 1;
    if (m > k)
        m = k;
    /*
     * v = the (k-m)-th smallest; the top m are every sample above v plus as many copies of v
     * as needed. This relies only on the value gsl_stats_select returns, not on how it leaves
     * the array.
     */
    double v = m < k ? gsl_stats_select(work, 1, k, k - m) : -INFINITY;
    size_t above = 0;
    double sum = 0.0;
    for (size_t i = 0; i < k; i++)
        if (work[i] > v) {
            sum += work[i];
            above++;
        }
    size_t ties = m - above;
    double mean = (sum + (double)ties * (m < k ? v : 0.0)) / (double)m;
    double ss = 0.0;
    for (size_t i = 0; i < k; i++)
        if (work[i] > v)
            ss += (work[i] - mean) * (work[i] - mean);
    if (m < k)
        ss += (double)ties * (v - mean) * (v - mean);
    out->m = m;
    out->mean = mean;
    if (m >= 2)
        out->se = pfi_se_rounded(sqrt(ss / (double)(m - 1)) / sqrt((double)m), mean);
    return PFI_OK;
}

double pfi_se_rounded(double se, double estimate)
{
    return se >= 0 && se < PFI_SE_ROUNDING * fabs(estimate) ? 0.0 : se;
}
