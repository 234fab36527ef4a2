/*
 * Rank statistics, multiple-comparison corrections and OLS (paper §4–5, App. C–D).
 */
#include "pfi/stats.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"

/* qsort has no context argument: sort indices by value with a small merge sort instead. */
static void sort_index(const double *x, size_t *idx, size_t *tmp, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    sort_index(x, idx, tmp, h);
    sort_index(x, idx + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = x[idx[j]] < x[idx[i]] ? idx[j++] : idx[i++];
    while (i < h)
        tmp[k++] = idx[i++];
    while (j < n)
        tmp[k++] = idx[j++];
    memcpy(idx, tmp, n * sizeof *idx);
}

/*
 * The order of x ascending (stable) in order[n]: insertion sort for the small samples of a
 * PFI study, a merge sort with a temporary buffer beyond 64 values.
 */
static pfi_error argsort(const double *x, size_t n, size_t *order)
{
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    if (n <= 64) {
        for (size_t i = 1; i < n; i++) {
            size_t v = order[i], j = i;
            while (j > 0 && x[order[j - 1]] > x[v]) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = v;
        }
        return PFI_OK;
    }
    size_t *tmp = pfi_malloc(n * sizeof *tmp);
    if (tmp == NULL)
        return PFI_ERR_NOMEM;
    sort_index(x, order, tmp, n);
    pfi_free(tmp);
    return PFI_OK;
}

pfi_error pfi_stats_ranks(const double *x, size_t n, double *ranks, size_t *order, double *tie_sum)
{
    if (n > 0 && (x == NULL || ranks == NULL || order == NULL))
        return PFI_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++)
        if (isnan(x[i]))
            return PFI_ERR_INVALID_ARGUMENT;
    pfi_error e = argsort(x, n, order);
    if (e != PFI_OK)
        return e;
    double ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && x[order[j]] == x[order[i]])
            j++;
        /* positions i..j-1 (0-based) share ranks i+1..j: their mean is (i + j + 1)/2 */
        double r = 0.5 * (double)(i + j + 1);
        for (size_t k = i; k < j; k++)
            ranks[order[k]] = r;
        double t = (double)(j - i);
        ties += t * t * t - t;
        i = j;
    }
    if (tie_sum != NULL)
        *tie_sum = ties;
    return PFI_OK;
}

/* Pearson correlation of a[n], b[n] with two-pass centring; NaN when either is constant. */
static double pearson(const double *a, const double *b, size_t n)
{
    double ma = 0, mb = 0;
    for (size_t i = 0; i < n; i++) {
        ma += a[i];
        mb += b[i];
    }
    ma /= (double)n;
    mb /= (double)n;
    double sab = 0, saa = 0, sbb = 0;
    for (size_t i = 0; i < n; i++) {
        double da = a[i] - ma, db = b[i] - mb;
        sab += da * db;
        saa += da * da;
        sbb += db * db;
    }
    if (saa == 0 || sbb == 0)
        return NAN;
    double r = sab / sqrt(saa * sbb);
    return r > 1 ? 1 : r < -1 ? -1 : r;
}

pfi_error pfi_stats_spearman(const double *x, const double *y, size_t n, double *work,
                             size_t *order, pfi_spearman *out)
{
    if (out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    *out = (pfi_spearman){.n = n, .rho = NAN, .p_value = NAN};
    if (n > 0 && (x == NULL || y == NULL || work == NULL || order == NULL))
        return PFI_ERR_INVALID_ARGUMENT;
    double *rx = work, *ry = work + n;
    pfi_error e = pfi_stats_ranks(x, n, rx, order, NULL);
    if (e == PFI_OK)
        e = pfi_stats_ranks(y, n, ry, order, NULL);
    if (e != PFI_OK)
        return e;
    if (n < 3) {
        out->undefined_reason = "fewer than 3 observations";
        return PFI_OK;
    }
    double rho = pearson(rx, ry, n);
    if (isnan(rho)) {
        out->undefined_reason = "an input is constant";
        return PFI_OK;
    }
    out->defined = true;
    out->rho = rho;
    double df = (double)n - 2;
    if (fabs(rho) >= 1) {
        out->p_value = 0;
    } else {
        double t = rho * sqrt(df / ((1 - rho) * (1 + rho)));
        out->p_value = 2 * gsl_cdf_tdist_Q(fabs(t), df);
    }
    return PFI_OK;
}

/* Ranks of the pooled sample, Σ(t³ − t), and per-group counts and rank sums. */
static pfi_error pooled_ranks(const double *x, const size_t *group, size_t n, size_t k,
                              double *ranks, size_t *order, double *tie_sum, double *rank_sum,
                              size_t *count)
{
    if (n > 0 && (x == NULL || group == NULL || ranks == NULL || order == NULL))
        return PFI_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++)
        if (group[i] >= k)
            return PFI_ERR_INVALID_ARGUMENT;
    pfi_error e = pfi_stats_ranks(x, n, ranks, order, tie_sum);
    if (e != PFI_OK)
        return e;
    for (size_t g = 0; g < k; g++) {
        rank_sum[g] = 0;
        count[g] = 0;
    }
    for (size_t i = 0; i < n; i++) {
        rank_sum[group[i]] += ranks[i];
        count[group[i]]++;
    }
    for (size_t g = 0; g < k; g++)
        if (count[g] == 0)
            return PFI_ERR_INVALID_ARGUMENT;
    return PFI_OK;
}

pfi_error pfi_stats_kruskal(const double *x, const size_t *group, size_t n, size_t k, double *work,
                            size_t *order, double *mean_rank, pfi_kruskal *out)
{
    if (out == NULL || k == 0)
        return PFI_ERR_INVALID_ARGUMENT;
    *out = (pfi_kruskal){.n = n, .k = k, .df = k - 1, .h = NAN, .p_value = NAN};
    double *rank_sum = pfi_malloc(k * sizeof *rank_sum);
    size_t *count = pfi_malloc(k * sizeof *count);
    if (rank_sum == NULL || count == NULL) {
        pfi_free(rank_sum);
        pfi_free(count);
        return PFI_ERR_NOMEM;
    }
    double ties = 0;
    pfi_error e = pooled_ranks(x, group, n, k, work, order, &ties, rank_sum, count);
    if (e == PFI_OK) {
        double N = (double)n;
        if (mean_rank != NULL)
            for (size_t g = 0; g < k; g++)
                mean_rank[g] = rank_sum[g] / (double)count[g];
        double correction = n > 1 ? 1 - ties / (N * N * N - N) : 0;
        if (k < 2) {
            out->undefined_reason = "fewer than 2 classes";
        } else if (correction <= 0) {
            out->undefined_reason = "all values are tied";
        } else {
            double s = 0;
            for (size_t g = 0; g < k; g++)
                s += rank_sum[g] * rank_sum[g] / (double)count[g];
            double h = (12 / (N * (N + 1)) * s - 3 * (N + 1)) / correction;
            if (h < 0)
                h = 0; /* rounding when every group has the same mean rank */
            out->defined = true;
            out->h = h;
            out->p_value = gsl_cdf_chisq_Q(h, (double)(k - 1));
        }
    }
    pfi_free(rank_sum);
    pfi_free(count);
    return e;
}

pfi_error pfi_stats_dunn(const double *x, const size_t *group, size_t n, size_t k, double *work,
                         size_t *order, pfi_dunn_pair *pairs)
{
    if (k == 0 || (k > 1 && pairs == NULL))
        return PFI_ERR_INVALID_ARGUMENT;
    double *rank_sum = pfi_malloc(k * sizeof *rank_sum);
    size_t *count = pfi_malloc(k * sizeof *count);
    size_t m = k * (k - 1) / 2;
    size_t *porder = pfi_malloc((m ? m : 1) * sizeof *porder);
    if (rank_sum == NULL || count == NULL || porder == NULL) {
        pfi_free(rank_sum);
        pfi_free(count);
        pfi_free(porder);
        return PFI_ERR_NOMEM;
    }
    double ties = 0;
    pfi_error e = pooled_ranks(x, group, n, k, work, order, &ties, rank_sum, count);
    if (e == PFI_OK) {
        double N = (double)n;
        double var = N * (N + 1) / 12 - (n > 1 ? ties / (12 * (N - 1)) : 0);
        double *p = work + n;
        size_t q = 0;
        for (size_t a = 0; a < k; a++) {
            for (size_t b = a + 1; b < k; b++, q++) {
                pfi_dunn_pair *pr = &pairs[q];
                pr->a = a;
                pr->b = b;
                double se = sqrt(var * (1 / (double)count[a] + 1 / (double)count[b]));
                if (!(var > 1e-12 * N * N) || !(se > 0)) {
                    pr->z = pr->p_value = pr->p_holm = NAN;
                } else {
                    pr->z = (rank_sum[a] / (double)count[a] - rank_sum[b] / (double)count[b]) / se;
                    pr->p_value = 2 * gsl_cdf_ugaussian_Q(fabs(pr->z));
                    if (pr->p_value > 1)
                        pr->p_value = 1;
                }
                p[q] = pr->p_value;
            }
        }
        e = pfi_stats_holm(p, m, porder, p);
        for (q = 0; e == PFI_OK && q < m; q++)
            pairs[q].p_holm = p[q];
    }
    pfi_free(rank_sum);
    pfi_free(count);
    pfi_free(porder);
    return e;
}

/* Order the non-NaN entries of p ascending into order; returns their count. */
static pfi_error order_p(const double *p, size_t m, size_t *order, size_t *valid)
{
    if (m > 0 && (p == NULL || order == NULL))
        return PFI_ERR_INVALID_ARGUMENT;
    size_t v = 0;
    for (size_t i = 0; i < m; i++) {
        if (isnan(p[i]))
            continue;
        if (p[i] < 0 || p[i] > 1)
            return PFI_ERR_INVALID_ARGUMENT;
        order[v++] = i;
    }
    /* insertion sort, stable: m is the number of tests (tens) */
    for (size_t i = 1; i < v; i++) {
        size_t o = order[i], j = i;
        while (j > 0 && p[order[j - 1]] > p[o]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = o;
    }
    *valid = v;
    return PFI_OK;
}

pfi_error pfi_stats_holm(const double *p, size_t m, size_t *order, double *adj)
{
    size_t v = 0;
    pfi_error e = order_p(p, m, order, &v);
    if (e != PFI_OK)
        return e;
    double running = 0;
    for (size_t i = 0; i < v; i++) {
        double a = (double)(v - i) * p[order[i]];
        if (a > 1)
            a = 1;
        if (a > running)
            running = a;
        adj[order[i]] = running;
    }
    if (adj != p)
        for (size_t i = 0; i < m; i++)
            if (isnan(p[i]))
                adj[i] = NAN;
    return PFI_OK;
}

pfi_error pfi_stats_bh(const double *p, size_t m, size_t *order, double *adj)
{
    size_t v = 0;
    pfi_error e = order_p(p, m, order, &v);
    if (e != PFI_OK)
        return e;
    double running = 1;
    for (size_t i = v; i-- > 0;) {
        double a = (double)v / (double)(i + 1) * p[order[i]];
        if (a < running)
            running = a;
        adj[order[i]] = running;
    }
    if (adj != p)
        for (size_t i = 0; i < m; i++)
            if (isnan(p[i]))
                adj[i] = NAN;
    return PFI_OK;
}

void pfi_ols_clear(pfi_ols *f)
{
    if (f == NULL)
        return;
    pfi_free(f->coef);
    pfi_free(f->se);
    pfi_free(f->xtx_inv);
    memset(f, 0, sizeof *f);
}

pfi_error pfi_stats_ols(const double *x, const double *y, size_t n, size_t p, pfi_ols *out)
{
    if (out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    out->n = n;
    out->p = p;
    out->sigma = out->rss = out->r2 = out->r2_adj = NAN;
    if ((n > 0 && (y == NULL || (p > 0 && x == NULL))))
        return PFI_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++) {
        if (isnan(y[i]))
            return PFI_ERR_INVALID_ARGUMENT;
        for (size_t j = 0; j < p; j++)
            if (isnan(x[i * p + j]))
                return PFI_ERR_INVALID_ARGUMENT;
    }
    size_t np = p + 1;
    out->coef = pfi_malloc(np * sizeof *out->coef);
    out->se = pfi_malloc(np * sizeof *out->se);
    out->xtx_inv = pfi_malloc(np * np * sizeof *out->xtx_inv);
    if (out->coef == NULL || out->se == NULL || out->xtx_inv == NULL) {
        pfi_ols_clear(out);
        return PFI_ERR_NOMEM;
    }
    for (size_t j = 0; j < np; j++)
        out->coef[j] = out->se[j] = NAN;
    for (size_t j = 0; j < np * np; j++)
        out->xtx_inv[j] = NAN;
    if (n < np) {
        out->undefined_reason = "fewer observations than coefficients";
        return PFI_OK;
    }
    gsl_matrix *X = gsl_matrix_alloc(n, np), *cov = gsl_matrix_alloc(np, np);
    gsl_vector *Y = gsl_vector_alloc(n), *W = gsl_vector_alloc(n), *c = gsl_vector_alloc(np);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, np);
    pfi_error e = PFI_OK;
    if (X == NULL || cov == NULL || Y == NULL || W == NULL || c == NULL || ws == NULL) {
        e = PFI_ERR_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        gsl_matrix_set(X, i, 0, 1.0);
        for (size_t j = 0; j < p; j++)
            gsl_matrix_set(X, i, j + 1, x[i * p + j]);
        gsl_vector_set(Y, i, y[i]);
        gsl_vector_set(W, i, 1.0);
    }
    /* A predictor constant to rounding has no slope: undefined rather than a huge one. */
    for (size_t j = 0; j < p; j++) {
        double lo = x[j], hi = x[j];
        for (size_t i = 1; i < n; i++) {
            lo = fmin(lo, x[i * p + j]);
            hi = fmax(hi, x[i * p + j]);
        }
        if (!(hi - lo > 1e-12 * fmax(fabs(lo), fabs(hi)))) {
            out->undefined_reason = "a predictor is constant";
            goto done;
        }
    }
    size_t rank = 0;
    double chisq = 0;
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    /* Unit weights: cov is the unscaled (XᵀX)⁻¹, which leverage and intervals need. */
    int status = gsl_multifit_wlinear_tsvd(X, W, Y, 1e-10, c, cov, &chisq, &rank, ws);
    gsl_set_error_handler(old);
    if (status != GSL_SUCCESS || rank < np) {
        out->undefined_reason = "the predictors are collinear";
        goto done;
    }
    out->defined = true;
    for (size_t j = 0; j < np; j++) {
        out->coef[j] = gsl_vector_get(c, j);
        for (size_t l = 0; l < np; l++)
            out->xtx_inv[j * np + l] = gsl_matrix_get(cov, j, l);
    }
    /* RSS from the residuals directly (more accurate than chisq for tiny residuals). */
    double my = 0;
    for (size_t i = 0; i < n; i++)
        my += y[i];
    my /= (double)n;
    double rss = 0, tss = 0;
    for (size_t i = 0; i < n; i++) {
        double f = out->coef[0];
        for (size_t j = 0; j < p; j++)
            f += out->coef[j + 1] * x[i * p + j];
        rss += (y[i] - f) * (y[i] - f);
        tss += (y[i] - my) * (y[i] - my);
    }
    out->rss = rss;
    out->df = n - np;
    if (tss > 0)
        out->r2 = 1 - rss / tss;
    if (out->df > 0) {
        out->sigma = sqrt(rss / (double)out->df);
        if (tss > 0)
            out->r2_adj = 1 - (1 - out->r2) * (double)(n - 1) / (double)out->df;
        for (size_t j = 0; j < np; j++)
            out->se[j] = out->sigma * sqrt(out->xtx_inv[j * np + j]);
    }
done:
    gsl_matrix_free(X);
    gsl_matrix_free(cov);
    gsl_vector_free(Y);
    gsl_vector_free(W);
    gsl_vector_free(c);
    if (ws != NULL)
        gsl_multifit_linear_free(ws);
    if (e != PFI_OK)
        pfi_ols_clear(out);
    return e;
}

/* x̃ᵀ (XᵀX)⁻¹ x̃ with x̃ = (1, x0). */
static double quad_form(const pfi_ols *f, const double *x0)
{
    size_t np = f->p + 1;
    double s = 0;
    for (size_t a = 0; a < np; a++) {
        double xa = a == 0 ? 1 : x0[a - 1];
        for (size_t b = 0; b < np; b++) {
            double xb = b == 0 ? 1 : x0[b - 1];
            s += xa * f->xtx_inv[a * np + b] * xb;
        }
    }
    return s;
}

pfi_error pfi_stats_ols_predict(const pfi_ols *fit, const double *x0, double level, double *yhat,
                                double *lo, double *hi)
{
    if (fit == NULL || !fit->defined || yhat == NULL || (fit->p > 0 && x0 == NULL))
        return PFI_ERR_INVALID_ARGUMENT;
    for (size_t j = 0; j < fit->p; j++)
        if (isnan(x0[j]))
            return PFI_ERR_INVALID_ARGUMENT;
    if ((lo != NULL || hi != NULL) && !(level > 0 && level < 1))
        return PFI_ERR_INVALID_ARGUMENT;
    double f = fit->coef[0];
    for (size_t j = 0; j < fit->p; j++)
        f += fit->coef[j + 1] * x0[j];
    *yhat = f;
    double l = NAN, h = NAN;
    if (fit->df > 0 && (lo != NULL || hi != NULL)) {
        double q = quad_form(fit, x0);
        double half = gsl_cdf_tdist_Qinv((1 - level) / 2, (double)fit->df) * fit->sigma *
                      sqrt(1 + (q > 0 ? q : 0));
        l = f - half;
        h = f + half;
    }
    if (lo != NULL)
        *lo = l;
    if (hi != NULL)
        *hi = h;
    return PFI_OK;
}

pfi_error pfi_stats_leverage(const pfi_ols *fit, const double *x, size_t n, double *h)
{
    if (fit == NULL || !fit->defined || (n > 0 && (h == NULL || (fit->p > 0 && x == NULL))))
        return PFI_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++)
        h[i] = quad_form(fit, x + i * fit->p);
    return PFI_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pfi_stats_median(const double *x, size_t n, double *work)
{
    if (n == 0)
        return NAN;
    memcpy(work, x, n * sizeof *work);
    qsort(work, n, sizeof *work, cmp_double);
    return n % 2 ? work[n / 2] : 0.5 * (work[n / 2 - 1] + work[n / 2]);
}
