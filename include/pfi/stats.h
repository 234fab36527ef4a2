/*
 * pfi/stats.h — the statistics of the paper's §4–5 and appendices C–D: rank correlation,
 * class differences, multiple-comparison corrections and ordinary least squares.
 *
 * Distributions come from GSL (gsl_cdf_tdist_Q, gsl_cdf_chisq_Q, gsl_cdf_ugaussian_Q). Every
 * statistic is checked against SciPy on the same inputs (tests/golden/stats_reference.py,
 * tests/test_stats.c): values to 1e-9 relative, p-values to 1e-6 relative.
 *
 * Undefined results: a statistic that does not exist for the input (a constant input has no
 * rank correlation; all values tied give no Kruskal–Wallis H) is reported with defined =
 * false, NaN values and a static reason, never as a number. Callers print "undefined".
 *
 * Missing values: these functions take complete arrays; the caller drops missing (NaN)
 * observations first (NaN in an input is PFI_ERR_INVALID_ARGUMENT).
 *
 * All functions are thread-safe (no global state); work arrays are caller-owned.
 */
#ifndef PFI_STATS_H
#define PFI_STATS_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * pfi_stats_ranks — average ranks (1-based; tied values share the mean of their ranks, as
 * scipy.stats.rankdata(method="average")) of x[n] into ranks[n]. order[n] is scratch. If
 * tie_sum is not NULL it receives Σ (t³ − t) over tie groups of size t (for tie corrections).
 * Errors: PFI_ERR_INVALID_ARGUMENT (NaN in x, NULL array with n > 0).
 */
pfi_error pfi_stats_ranks(const double *x, size_t n, double *ranks, size_t *order, double *tie_sum);

/* pfi_spearman — Spearman's rank correlation and its two-sided p-value. */
typedef struct pfi_spearman {
    size_t n;
    bool defined;
    const char *undefined_reason; /* static; NULL when defined */
    double rho;                   /* NaN when undefined */
    double p_value;               /* NaN when undefined */
} pfi_spearman;

/*
 * pfi_stats_spearman — ρ = Pearson correlation of the average ranks of x[n] and y[n] (ties
 * handled by average ranks). p-value: two-sided, from Student's t with n − 2 degrees of
 * freedom, t = ρ √((n − 2)/(1 − ρ²)) — the same approximation as scipy.stats.spearmanr
 * (|ρ| = 1 gives p = 0). Undefined when n < 3 or either input is constant.
 * work[4n] scratch (doubles), order[n] scratch.
 * Errors: PFI_ERR_INVALID_ARGUMENT (NaN inputs). Source: paper §4, App. D.
 */
pfi_error pfi_stats_spearman(const double *x, const double *y, size_t n, double *work,
                             size_t *order, pfi_spearman *out);

/* pfi_kruskal — Kruskal–Wallis H test across k groups. */
typedef struct pfi_kruskal {
    size_t n;  /* observations */
    size_t k;  /* groups */
    size_t df; /* k − 1 */
    bool defined;
    const char *undefined_reason;
    double h;       /* tie-corrected H; NaN when undefined */
    double p_value; /* χ² survival with df degrees of freedom; NaN when undefined */
} pfi_kruskal;

/*
 * pfi_stats_kruskal — Kruskal–Wallis H on x[n] with group labels group[n] in [0, k):
 * H = [12/(N(N+1)) Σ R_i²/n_i − 3(N+1)] / [1 − Σ(t³ − t)/(N³ − N)], p = Q_χ²(H; k − 1),
 * as scipy.stats.kruskal. Every group must hold at least one observation. Undefined when
 * k < 2 or all values are tied. work[n] and order[n] scratch; mean_rank[k] (may be NULL)
 * receives each group's mean rank.
 * Errors: PFI_ERR_INVALID_ARGUMENT (label ≥ k, empty group, NaN). Source: paper App. C.
 */
pfi_error pfi_stats_kruskal(const double *x, const size_t *group, size_t n, size_t k, double *work,
                            size_t *order, double *mean_rank, pfi_kruskal *out);

/* pfi_dunn_pair — one pair (a < b) of Dunn's post-hoc test. */
typedef struct pfi_dunn_pair {
    size_t a, b;    /* group indices */
    double z;       /* (R̄_a − R̄_b)/SE; NaN when undefined */
    double p_value; /* two-sided, unadjusted */
    double p_holm;  /* Holm–Bonferroni adjusted across all k(k−1)/2 pairs */
} pfi_dunn_pair;

/*
 * pfi_stats_dunn — Dunn's (1964) test on every pair of k groups with tie correction:
 * SE² = [N(N+1)/12 − Σ(t³ − t)/(12(N − 1))] (1/n_a + 1/n_b), z = (R̄_a − R̄_b)/SE,
 * p = 2 Q(|z|) (standard normal), adjusted with Holm–Bonferroni (as scikit-posthocs
 * posthoc_dunn(p_adjust="holm")). pairs[k(k−1)/2] filled in order (0,1), (0,2), ...,
 * (1,2), ... Every pair's z and p are NaN when all values are tied. work[n + k(k−1)/2],
 * order[n] scratch. Errors: as pfi_stats_kruskal. Source: paper §4, App. C.
 */
pfi_error pfi_stats_dunn(const double *x, const size_t *group, size_t n, size_t k, double *work,
                         size_t *order, pfi_dunn_pair *pairs);

/*
 * pfi_stats_holm — Holm–Bonferroni step-down adjusted p-values of p[m] into adj[m]
 * (adj_(i) = max_{j≤i} min(1, (m − j + 1) p_(j)) over ascending p). NaN entries stay NaN and
 * do not count in m. order[m] scratch. May run in place (adj == p).
 * Errors: PFI_ERR_INVALID_ARGUMENT (a p outside [0, 1]). Source: Holm (1979).
 */
pfi_error pfi_stats_holm(const double *p, size_t m, size_t *order, double *adj);

/*
 * pfi_stats_bh — Benjamini–Hochberg FDR adjusted p-values (q-values) of p[m] into adj[m]
 * (adj_(i) = min_{j≥i} min(1, m p_(j)/j) over ascending p), as
 * statsmodels multipletests(method="fdr_bh"). NaN entries stay NaN and do not count in m.
 * order[m] scratch; may run in place. Errors: as pfi_stats_holm. Source: Benjamini &
 * Hochberg (1995); paper App. D (Figure 14).
 */
pfi_error pfi_stats_bh(const double *p, size_t m, size_t *order, double *adj);

/*
 * pfi_ols — an ordinary least squares fit y = β0 + Σ_j β_j x_j with p predictors.
 * Owns its arrays (pfi_ols_clear).
 */
typedef struct pfi_ols {
    size_t n;     /* observations */
    size_t p;     /* predictors (the intercept not counted) */
    size_t df;    /* residual degrees of freedom n − p − 1 (0 when n ≤ p + 1) */
    bool defined; /* false: too few observations or a constant/collinear predictor */
    const char *undefined_reason;
    double *coef;    /* p + 1: intercept first */
    double *se;      /* p + 1 standard errors; NaN when df == 0 */
    double *xtx_inv; /* (p + 1)² row-major (XᵀX)⁻¹ */
    double sigma;    /* residual standard error √(RSS/df); NaN when df == 0 */
    double rss;      /* residual sum of squares */
    double r2;       /* 1 − RSS/TSS; NaN when y is constant */
    double r2_adj;   /* 1 − (1 − R²)(n − 1)/df; NaN when df == 0 or y constant */
} pfi_ols;

/*
 * pfi_stats_ols — fit y[n] on the predictors x[n × p] (row-major: x[i*p + j] is predictor j of
 * observation i) with an intercept, through GSL's SVD least squares
 * (gsl_multifit_wlinear_tsvd with unit weights). A fit whose design has rank < p + 1 (a
 * constant or collinear predictor) or with n < p + 1 is undefined (out->defined false, no
 * error). out is overwritten (clear it after use). Errors: PFI_ERR_INVALID_ARGUMENT (NaN,
 * p == 0 with n == 0), PFI_ERR_NOMEM. Source: paper §5.
 */
pfi_error pfi_stats_ols(const double *x, const double *y, size_t n, size_t p, pfi_ols *out);

/*
 * pfi_stats_ols_predict — the fitted mean ŷ at x0[p], and (when level in (0, 1) and df > 0)
 * the prediction interval for a new observation, ŷ ± t_{(1+level)/2, df} σ √(1 + x̃ᵀ(XᵀX)⁻¹x̃),
 * x̃ = (1, x0). lo/hi may be NULL; they are NaN when there is no interval.
 * Errors: PFI_ERR_INVALID_ARGUMENT (undefined fit, NaN in x0, level outside (0, 1)).
 */
pfi_error pfi_stats_ols_predict(const pfi_ols *fit, const double *x0, double level, double *yhat,
                                double *lo, double *hi);

/*
 * pfi_stats_leverage — the hat-matrix diagonal h_i = x̃_iᵀ (XᵀX)⁻¹ x̃_i of each of the fit's
 * observations x[n × p] (the same x as given to pfi_stats_ols) into h[n]. With one predictor
 * h_i = 1/n + (x_i − x̄)²/Σ(x − x̄)² (paper App. D.5). Errors: PFI_ERR_INVALID_ARGUMENT
 * (undefined fit).
 */
pfi_error pfi_stats_leverage(const pfi_ols *fit, const double *x, size_t n, double *h);

/* pfi_ols_clear — free what f owns and zero it. NULL is a no-op. */
void pfi_ols_clear(pfi_ols *f);

/*
 * pfi_stats_median — the median of x[n] (mean of the two middle values when n is even) with
 * work[n] scratch; NaN when n == 0.
 */
double pfi_stats_median(const double *x, size_t n, double *work);

#ifdef __cplusplus
}
#endif

#endif
