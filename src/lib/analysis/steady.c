/*
 * Steady-state value: the mean of the top q fraction of a series after a warm-up.
 */
#include "pfi/steady.h"

#include <gsl/gsl_statistics_double.h>
#include <math.h>

#include "core/topq.h"

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
    size_t m = pfi_topq_count(q, k);
    /*
     * v = the (k-m)-th smallest; the top m are every sample above v plus as many copies of v
     * as needed. This relies only on the value gsl_stats_select returns, not on how it leaves
     * the array: the sums are exact and rounded once (pfi_topq_stats), so the result depends
     * only on the values, not on their order (a streamed summary gives the same bits).
     */
    double v = m < k ? gsl_stats_select(work, 1, k, k - m) : -INFINITY;
    size_t above = 0;
    for (size_t i = 0; i < k; i++)
        above += work[i] > v;
    double mean, se;
    pfi_topq_stats(work, NULL, k, v, m - above, m, &mean, &se);
    out->m = m;
    out->mean = mean;
    if (m >= 2)
        out->se = pfi_se_rounded(se, mean);
    return PFI_OK;
}

double pfi_se_rounded(double se, double estimate)
{
    return se >= 0 && se < PFI_SE_ROUNDING * fabs(estimate) ? 0.0 : se;
}
