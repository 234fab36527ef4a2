/*
 * pfi/fit.h — the telemetry PFI predictor (paper §5): a linear model of PFI on one or more
 * reference-run features, validated leave-one-out (LOO) and leave-one-cluster-out (LOCO,
 * cluster = job class), saved as JSON and applied to new jobs with a prediction interval.
 *
 * Cross-validated scores pool the held-out predictions ŷ_i of every fold:
 *   R² = 1 − Σ(y − ŷ)²/Σ(y − ȳ)² (ȳ over all groups; may be negative), RMSE, MAE and
 *   Spearman ρ(ŷ, y). A fold whose training fit is undefined (constant feature, too few
 *   rows) leaves its groups unpredicted, and the scores are undefined (NaN).
 */
#ifndef PFI_FIT_H
#define PFI_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"
#include "pfi/groups.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_FIT_MAX_FEATURES 16
#define PFI_FIT_MODEL_VERSION 1

/* pfi_cv_scores — pooled held-out scores; NaN when undefined. */
typedef struct pfi_cv_scores {
    size_t n;     /* observations */
    size_t folds; /* folds made */
    double r2, rmse, mae, rho;
} pfi_cv_scores;

/*
 * pfi_fit_cv — cross-validate OLS of y[n] on x[n × p] (row-major): cluster NULL leaves one
 * observation out at a time; otherwise each distinct cluster[i] is one fold. pred[n] (may be
 * NULL) receives the held-out predictions (NaN where a fold's fit was undefined).
 * Errors: PFI_ERR_INVALID_ARGUMENT (NaN, p == 0 or p > PFI_FIT_MAX_FEATURES), PFI_ERR_NOMEM.
 */
pfi_error pfi_fit_cv(const double *x, const double *y, size_t n, size_t p, const size_t *cluster,
                     pfi_cv_scores *out, double *pred);

/* pfi_fit_model — a fitted predictor; owns everything (pfi_fit_model_destroy). */
typedef struct pfi_fit_model {
    size_t p;          /* features */
    char **features;   /* p names (a name may be a product "A*B") */
    double *coef;      /* p + 1, intercept first */
    double *xtx_inv;   /* (p + 1)² row-major (XᵀX)⁻¹ of the training design */
    double sigma;      /* residual SE (NaN when df == 0) */
    size_t df;         /* residual degrees of freedom */
    size_t n;          /* training groups */
    double r2;         /* in-sample R² */
    double *train_min; /* p: training range of each feature */
    double *train_max;
    pfi_cv_scores loo, loco;
    uint64_t source_hash; /* of the training data (pfi_groups.source_hash) */
} pfi_fit_model;

void pfi_fit_model_destroy(pfi_fit_model *m);

/*
 * pfi_fit_model_build — fit PFI on features[p] (names or "A*B" products, resolved in g, which
 * may grow) over the groups with a defined PFI and every feature present; LOO and LOCO
 * (cluster = class; a group without class is its own cluster) scores included. *used (may be
 * NULL) gets the number of groups used. Errors: PFI_ERR_MISSING_COLUMN (diag names the
 * feature), PFI_ERR_INVALID_ARGUMENT (p out of range; the fit is undefined — diag says why),
 * PFI_ERR_NOMEM.
 */
pfi_error pfi_fit_model_build(pfi_groups *g, const char *const *features, size_t p,
                              pfi_fit_model **out, pfi_diag *diag);

/*
 * pfi_fit_model_predict — PFI at feature values x0[p] (in the model's feature order), with
 * the level prediction interval (lo, hi: NaN when df == 0), and *outside set when a value
 * lies outside the training range (the estimate is an extrapolation).
 * Errors: PFI_ERR_INVALID_ARGUMENT (NaN, level outside (0, 1)).
 */
pfi_error pfi_fit_model_predict(const pfi_fit_model *m, const double *x0, double level,
                                double *yhat, double *lo, double *hi, bool *outside);

/*
 * pfi_fit_model_save — write m as JSON to path (temporary + rename). Format:
 * {"pfi_model": 1, "target": "pfi_ratio", "features": [...], "coefficients":
 * {"intercept": b0, "<feature>": b, ...}, "xtx_inv": [[...]], "sigma", "df", "n", "r2",
 * "training_range": {"<feature>": [min, max]}, "loo": {...}, "loco": {...},
 * "source_hash": "fnv1a64:<16 hex>"}; undefined numbers are null.
 * Errors: PFI_ERR_IO (diag says why), PFI_ERR_NOMEM.
 */
pfi_error pfi_fit_model_save(const pfi_fit_model *m, const char *path, pfi_diag *diag);

/*
 * pfi_fit_model_load — read a model written by pfi_fit_model_save into *out (owned).
 * Errors: PFI_ERR_IO, PFI_ERR_PARSE (not JSON, wrong version, a key missing or of the wrong
 * kind, inconsistent sizes; diag says which), PFI_ERR_NOMEM.
 */
pfi_error pfi_fit_model_load(const char *path, pfi_fit_model **out, pfi_diag *diag);

/* pfi_fit_model_load_buffer — as pfi_fit_model_load from memory (for tests and fuzzing). */
pfi_error pfi_fit_model_load_buffer(const char *data, size_t len, pfi_fit_model **out,
                                    pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
