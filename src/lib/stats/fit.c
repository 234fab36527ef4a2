/*
 * The telemetry PFI predictor: OLS, LOO/LOCO validation, JSON model files.
 */
#include "pfi/fit.h"

#include "pfi/atomic_file.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/memory.h"
#include "pfi/stats.h"

static pfi_error set_diag(pfi_diag *d, pfi_error e, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static pfi_error set_diag(pfi_diag *d, pfi_error e, const char *file, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_diag_vset(d, file, 0, NULL, fmt, ap);
    va_end(ap);
    return e;
}

pfi_error pfi_fit_cv(const double *x, const double *y, size_t n, size_t p, const size_t *cluster,
                     pfi_cv_scores *out, double *pred)
{
    if (out == NULL || p == 0 || p > PFI_FIT_MAX_FEATURES || (n > 0 && (x == NULL || y == NULL)))
        return PFI_ERR_INVALID_ARGUMENT;
    *out = (pfi_cv_scores){.n = n, .r2 = NAN, .rmse = NAN, .mae = NAN, .rho = NAN};
    double *xt = pfi_malloc((n ? n : 1) * p * sizeof *xt);
    double *yt = pfi_malloc((n ? n : 1) * sizeof *yt);
    double *yh = pfi_malloc((n ? n : 1) * sizeof *yh);
    double *work = pfi_malloc((4 * n + 1) * sizeof *work);
    size_t *order = pfi_malloc((n ? n : 1) * sizeof *order);
    pfi_error e = PFI_OK;
    if (xt == NULL || yt == NULL || yh == NULL || work == NULL || order == NULL) {
        e = PFI_ERR_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        yh[i] = NAN;
    for (size_t i = 0; i < n; i++) {
        /* fold of observation i: its own (LOO) or its cluster, made once at its first member */
        bool first = true;
        if (cluster != NULL)
            for (size_t k = 0; k < i; k++)
                if (cluster[k] == cluster[i])
                    first = false;
        if (!first)
            continue;
        size_t m = 0;
        for (size_t k = 0; k < n; k++) {
            bool held = cluster ? cluster[k] == cluster[i] : k == i;
            if (held)
                continue;
            memcpy(xt + m * p, x + k * p, p * sizeof *xt);
            yt[m++] = y[k];
        }
        pfi_ols fit;
        e = pfi_stats_ols(xt, yt, m, p, &fit);
        if (e != PFI_OK)
            goto done;
        out->folds++;
        for (size_t k = 0; k < n; k++) {
            bool held = cluster ? cluster[k] == cluster[i] : k == i;
            if (held && fit.defined)
                pfi_stats_ols_predict(&fit, x + k * p, 0.95, &yh[k], NULL, NULL);
        }
        pfi_ols_clear(&fit);
    }
    bool all = n > 0;
    double my = 0;
    for (size_t i = 0; i < n; i++) {
        all = all && !isnan(yh[i]);
        my += y[i];
    }
    if (all) {
        my /= (double)n;
        double sse = 0, sae = 0, tss = 0;
        for (size_t i = 0; i < n; i++) {
            sse += (y[i] - yh[i]) * (y[i] - yh[i]);
            sae += fabs(y[i] - yh[i]);
            tss += (y[i] - my) * (y[i] - my);
        }
        out->rmse = sqrt(sse / (double)n);
        out->mae = sae / (double)n;
        if (tss > 0)
            out->r2 = 1 - sse / tss;
        pfi_spearman s;
        e = pfi_stats_spearman(yh, y, n, work, order, &s);
        out->rho = s.rho;
    }
    if (pred != NULL)
        memcpy(pred, yh, n * sizeof *pred);
done:
    pfi_free(xt);
    pfi_free(yt);
    pfi_free(yh);
    pfi_free(work);
    pfi_free(order);
    return e;
}

void pfi_fit_model_destroy(pfi_fit_model *m)
{
    if (m == NULL)
        return;
    for (size_t j = 0; m->features != NULL && j < m->p; j++)
        pfi_free(m->features[j]);
    pfi_free(m->features);
    pfi_free(m->coef);
    pfi_free(m->xtx_inv);
    pfi_free(m->train_min);
    pfi_free(m->train_max);
    pfi_free(m);
}

static pfi_fit_model *model_alloc(size_t p)
{
    pfi_fit_model *m = pfi_calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    m->p = p;
    m->features = pfi_calloc(p, sizeof *m->features);
    m->coef = pfi_malloc((p + 1) * sizeof *m->coef);
    m->xtx_inv = pfi_malloc((p + 1) * (p + 1) * sizeof *m->xtx_inv);
    m->train_min = pfi_malloc(p * sizeof *m->train_min);
    m->train_max = pfi_malloc(p * sizeof *m->train_max);
    if (!m->features || !m->coef || !m->xtx_inv || !m->train_min || !m->train_max) {
        pfi_fit_model_destroy(m);
        return NULL;
    }
    return m;
}

pfi_error pfi_fit_model_build(pfi_groups *g, const char *const *features, size_t p,
                              pfi_fit_model **out, pfi_diag *diag)
{
    if (g == NULL || features == NULL || out == NULL || p == 0 || p > PFI_FIT_MAX_FEATURES)
        return PFI_ERR_INVALID_ARGUMENT;
    *out = NULL;
    size_t idx[PFI_FIT_MAX_FEATURES];
    for (size_t j = 0; j < p; j++) {
        pfi_error e = pfi_groups_resolve(g, features[j], &idx[j]);
        if (e != PFI_OK)
            return set_diag(diag, e, NULL, "feature '%s' is not in the groups table", features[j]);
    }
    size_t n = 0;
    double *x = pfi_malloc((g->n ? g->n : 1) * p * sizeof *x);
    double *y = pfi_malloc((g->n ? g->n : 1) * sizeof *y);
    size_t *cl = pfi_malloc((g->n ? g->n : 1) * sizeof *cl);
    pfi_fit_model *m = model_alloc(p);
    pfi_ols fit = {0};
    pfi_error e = PFI_OK;
    if (x == NULL || y == NULL || cl == NULL || m == NULL) {
        e = PFI_ERR_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < g->n; i++) {
        bool ok = !isnan(g->pfi[i]);
        for (size_t j = 0; j < p && ok; j++)
            ok = !isnan(g->features[i * g->n_features + idx[j]]);
        if (!ok)
            continue;
        for (size_t j = 0; j < p; j++)
            x[n * p + j] = g->features[i * g->n_features + idx[j]];
        y[n] = g->pfi[i];
        n++;
    }
    /* LOCO clusters: groups of one class share the id of its first group; a group without
     * a class is its own cluster. */
    {
        const char **cls = pfi_malloc((n ? n : 1) * sizeof *cls);
        if (cls == NULL) {
            e = PFI_ERR_NOMEM;
            goto done;
        }
        size_t r = 0;
        for (size_t i = 0; i < g->n; i++) {
            bool ok = !isnan(g->pfi[i]);
            for (size_t j = 0; j < p && ok; j++)
                ok = !isnan(g->features[i * g->n_features + idx[j]]);
            if (ok)
                cls[r++] = g->classes[i];
        }
        for (size_t i = 0; i < n; i++) {
            cl[i] = i;
            if (cls[i] == NULL)
                continue;
            for (size_t k = 0; k < i; k++)
                if (cls[k] != NULL && strcmp(cls[k], cls[i]) == 0) {
                    cl[i] = cl[k];
                    break;
                }
        }
        pfi_free(cls);
    }
    e = pfi_stats_ols(x, y, n, p, &fit);
    if (e != PFI_OK)
        goto done;
    if (!fit.defined) {
        e = set_diag(diag, PFI_ERR_INVALID_ARGUMENT, NULL, "the fit is undefined: %s (%zu groups)",
                     fit.undefined_reason, n);
        goto done;
    }
    for (size_t j = 0; j < p; j++) {
        if ((m->features[j] = pfi_strdup(features[j])) == NULL) {
            e = PFI_ERR_NOMEM;
            goto done;
        }
        m->train_min[j] = INFINITY;
        m->train_max[j] = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            m->train_min[j] = fmin(m->train_min[j], x[i * p + j]);
            m->train_max[j] = fmax(m->train_max[j], x[i * p + j]);
        }
    }
    memcpy(m->coef, fit.coef, (p + 1) * sizeof *m->coef);
    memcpy(m->xtx_inv, fit.xtx_inv, (p + 1) * (p + 1) * sizeof *m->xtx_inv);
    m->sigma = fit.sigma;
    m->df = fit.df;
    m->n = n;
    m->r2 = fit.r2;
    m->source_hash = g->source_hash;
    e = pfi_fit_cv(x, y, n, p, NULL, &m->loo, NULL);
    if (e == PFI_OK)
        e = pfi_fit_cv(x, y, n, p, cl, &m->loco, NULL);
    if (e == PFI_OK) {
        *out = m;
        m = NULL;
    }
done:
    pfi_ols_clear(&fit);
    pfi_fit_model_destroy(m);
    pfi_free(x);
    pfi_free(y);
    pfi_free(cl);
    return e;
}

pfi_error pfi_fit_model_predict(const pfi_fit_model *m, const double *x0, double level,
                                double *yhat, double *lo, double *hi, bool *outside)
{
    if (m == NULL || x0 == NULL || yhat == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    pfi_ols fit = {.n = m->n,
                   .p = m->p,
                   .df = m->df,
                   .defined = true,
                   .coef = m->coef,
                   .xtx_inv = m->xtx_inv,
                   .sigma = m->sigma};
    pfi_error e = pfi_stats_ols_predict(&fit, x0, level, yhat, lo, hi);
    if (e != PFI_OK)
        return e;
    if (outside != NULL) {
        *outside = false;
        for (size_t j = 0; j < m->p; j++)
            if (x0[j] < m->train_min[j] || x0[j] > m->train_max[j])
                *outside = true;
    }
    return PFI_OK;
}

/* ---- JSON ---- */

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *scores_json(const pfi_cv_scores *s)
{
    return json_pack("{s:I, s:I, s:o, s:o, s:o, s:o}", "n", (json_int_t)s->n, "folds",
                     (json_int_t)s->folds, "r2", num(s->r2), "rmse", num(s->rmse), "mae",
                     num(s->mae), "spearman", num(s->rho));
}

pfi_error pfi_fit_model_save(const pfi_fit_model *m, const char *path, pfi_diag *diag)
{
    if (m == NULL || path == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    unsigned long jf = pfi_json_failures();
    json_t *root = json_object(), *feats = json_array(), *coef = json_object(),
           *range = json_object(), *xtx = json_array();
    if (!root || !feats || !coef || !range || !xtx) {
        json_decref(root);
        json_decref(feats);
        json_decref(coef);
        json_decref(range);
        json_decref(xtx);
        return PFI_ERR_NOMEM;
    }
    json_object_set_new(coef, "intercept", num(m->coef[0]));
    for (size_t j = 0; j < m->p; j++) {
        json_array_append_new(feats, json_string(m->features[j]));
        json_object_set_new(coef, m->features[j], num(m->coef[j + 1]));
        json_object_set_new(range, m->features[j],
                            json_pack("[o, o]", num(m->train_min[j]), num(m->train_max[j])));
    }
    for (size_t a = 0; a <= m->p; a++) {
        json_t *row = json_array();
        for (size_t b = 0; b <= m->p; b++)
            json_array_append_new(row, num(m->xtx_inv[a * (m->p + 1) + b]));
        json_array_append_new(xtx, row);
    }
    char hash[40];
    snprintf(hash, sizeof hash, "fnv1a64:%016llx", (unsigned long long)m->source_hash);
    json_object_set_new(root, "pfi_model", json_integer(PFI_FIT_MODEL_VERSION));
    json_object_set_new(root, "target", json_string("pfi_ratio"));
    json_object_set_new(root, "features", feats);
    json_object_set_new(root, "coefficients", coef);
    json_object_set_new(root, "xtx_inv", xtx);
    json_object_set_new(root, "sigma", num(m->sigma));
    json_object_set_new(root, "df", json_integer((json_int_t)m->df));
    json_object_set_new(root, "n", json_integer((json_int_t)m->n));
    json_object_set_new(root, "r2", num(m->r2));
    json_object_set_new(root, "training_range", range);
    json_object_set_new(root, "loo", scores_json(&m->loo));
    json_object_set_new(root, "loco", scores_json(&m->loco));
    json_object_set_new(root, "source_hash", json_string(hash));
    /* a member jansson could not allocate is left out without an error: never write that */
    if (pfi_json_failed(jf)) {
        json_decref(root);
        return PFI_ERR_NOMEM;
    }
    pfi_atomic_file out;
    pfi_error e = pfi_atomic_open(&out, path, diag);
    if (e == PFI_OK) {
        if (json_dumpf(root, out.f, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) != 0 ||
            fputc('\n', out.f) == EOF) {
            pfi_atomic_abort(&out);
            e = pfi_json_failed(jf) ? PFI_ERR_NOMEM
                                    : set_diag(diag, PFI_ERR_IO, path, "cannot write: %s",
                                               strerror(errno ? errno : EIO));
        } else {
            e = pfi_atomic_commit(&out, diag);
        }
    }
    json_decref(root);
    return e;
}

static bool get_num(json_t *v, double *out)
{
    if (json_is_null(v)) {
        *out = NAN;
        return true;
    }
    if (!json_is_number(v))
        return false;
    *out = json_number_value(v);
    return true;
}

static bool get_scores(json_t *o, pfi_cv_scores *s)
{
    json_int_t n = 0, folds = 0;
    json_t *r2, *rmse, *mae, *rho;
    if (json_unpack(o, "{s:I, s:I, s:o, s:o, s:o, s:o}", "n", &n, "folds", &folds, "r2", &r2,
                    "rmse", &rmse, "mae", &mae, "spearman", &rho) != 0 ||
        n < 0 || folds < 0)
        return false;
    s->n = (size_t)n;
    s->folds = (size_t)folds;
    return get_num(r2, &s->r2) && get_num(rmse, &s->rmse) && get_num(mae, &s->mae) &&
           get_num(rho, &s->rho);
}

/* A model's numbers checked after parsing (a hand-edited or corrupt file would otherwise print
 * an inverted or 300-digit interval): sigma null or >= 0 (null: no residual df), coefficients
 * finite and |c| <= PFI_FIT_MAX_COEF, xtx_inv finite, symmetric (relative 1e-6) with a positive
 * diagonal (it is (X'X)^-1, positive definite), training ranges finite with min <= max, df < n.
 * The error names the file and the field. */
#define PFI_FIT_MAX_COEF 1e9
static pfi_error check_model(const pfi_fit_model *m, const char *name, pfi_diag *d)
{
    size_t p = m->p, np = p + 1;
    if (!isnan(m->sigma) && !(m->sigma >= 0 && m->sigma <= PFI_FIT_MAX_COEF))
        return set_diag(d, PFI_ERR_PARSE, name, "field 'sigma' is %g: must be >= 0 and <= %g",
                        m->sigma, PFI_FIT_MAX_COEF);
    if (m->df >= m->n)
        return set_diag(d, PFI_ERR_PARSE, name, "field 'df' is %zu: must be below 'n' (%zu)", m->df,
                        m->n);
    for (size_t j = 0; j < np; j++)
        if (!(fabs(m->coef[j]) <= PFI_FIT_MAX_COEF))
            return set_diag(d, PFI_ERR_PARSE, name,
                            "field 'coefficients.%s' is %g: must be finite with magnitude <= %g",
                            j == 0 ? "intercept" : m->features[j - 1], m->coef[j],
                            PFI_FIT_MAX_COEF);
    for (size_t j = 0; j < p; j++)
        if (!isfinite(m->train_min[j]) || !isfinite(m->train_max[j]) ||
            m->train_min[j] > m->train_max[j])
            return set_diag(d, PFI_ERR_PARSE, name,
                            "field 'training_range.%s' is [%g, %g]: must be finite with "
                            "min <= max",
                            m->features[j], m->train_min[j], m->train_max[j]);
    for (size_t a = 0; a < np; a++) {
        double daa = m->xtx_inv[a * np + a];
        if (!(daa > 0 && isfinite(daa)))
            return set_diag(d, PFI_ERR_PARSE, name,
                            "field 'xtx_inv[%zu][%zu]' (a diagonal entry) is %g: must be "
                            "positive and finite",
                            a, a, daa);
        for (size_t b = a + 1; b < np; b++) {
            double u = m->xtx_inv[a * np + b], l = m->xtx_inv[b * np + a];
            if (!isfinite(u) || !isfinite(l) ||
                fabs(u - l) > 1e-6 * fmax(fmax(fabs(u), fabs(l)), 1e-300))
                return set_diag(d, PFI_ERR_PARSE, name,
                                "field 'xtx_inv' is not symmetric and finite: [%zu][%zu] = %g, "
                                "[%zu][%zu] = %g",
                                a, b, u, b, a, l);
        }
    }
    return PFI_OK;
}

static pfi_error parse_model(json_t *root, const char *name, pfi_fit_model **out, pfi_diag *d)
{
    json_int_t version = 0, df = 0, n = 0;
    json_t *feats, *coef, *xtx, *sigma, *r2, *range, *loo, *loco;
    const char *hash = NULL, *target = NULL;
    if (json_unpack(root, "{s:I, s:s, s:o, s:o, s:o, s:o, s:I, s:I, s:o, s:o, s:o, s:o, s:s}",
                    "pfi_model", &version, "target", &target, "features", &feats, "coefficients",
                    &coef, "xtx_inv", &xtx, "sigma", &sigma, "df", &df, "n", &n, "r2", &r2,
                    "training_range", &range, "loo", &loo, "loco", &loco, "source_hash",
                    &hash) != 0)
        return set_diag(d, PFI_ERR_PARSE, name,
                        "not a pfi model file (a key is missing or of "
                        "the wrong kind)");
    if (version != PFI_FIT_MODEL_VERSION)
        return set_diag(d, PFI_ERR_PARSE, name, "model version %lld, expected %d",
                        (long long)version, PFI_FIT_MODEL_VERSION);
    size_t p = json_is_array(feats) ? json_array_size(feats) : 0;
    if (p == 0 || p > PFI_FIT_MAX_FEATURES || df < 0 || n < 0 || !json_is_object(coef) ||
        !json_is_array(xtx) || json_array_size(xtx) != p + 1 || !json_is_object(range))
        return set_diag(d, PFI_ERR_PARSE, name,
                        "features, coefficients, xtx_inv or "
                        "training_range are inconsistent");
    pfi_fit_model *m = model_alloc(p);
    if (m == NULL)
        return PFI_ERR_NOMEM;
    m->df = (size_t)df;
    m->n = (size_t)n;
    unsigned long long h = 0;
    bool ok = get_num(sigma, &m->sigma) && get_num(r2, &m->r2) && get_scores(loo, &m->loo) &&
              get_scores(loco, &m->loco) && sscanf(hash, "fnv1a64:%16llx", &h) == 1;
    m->source_hash = h;
    ok = ok && get_num(json_object_get(coef, "intercept"), &m->coef[0]) &&
         json_object_get(coef, "intercept") != NULL;
    for (size_t j = 0; ok && j < p; j++) {
        json_t *f = json_array_get(feats, j);
        ok = json_is_string(f);
        if (ok && (m->features[j] = pfi_strdup(json_string_value(f))) == NULL) {
            pfi_fit_model_destroy(m);
            return PFI_ERR_NOMEM;
        }
        if (!ok)
            break;
        json_t *c = json_object_get(coef, m->features[j]),
               *r = json_object_get(range, m->features[j]);
        ok = c != NULL && json_is_number(c) && get_num(c, &m->coef[j + 1]) && json_is_array(r) &&
             json_array_size(r) == 2 && get_num(json_array_get(r, 0), &m->train_min[j]) &&
             get_num(json_array_get(r, 1), &m->train_max[j]);
    }
    for (size_t a = 0; ok && a <= p; a++) {
        json_t *row = json_array_get(xtx, a);
        ok = json_is_array(row) && json_array_size(row) == p + 1;
        for (size_t b = 0; ok && b <= p; b++)
            ok = get_num(json_array_get(row, b), &m->xtx_inv[a * (p + 1) + b]);
    }
    if (!ok || isnan(m->coef[0])) {
        pfi_fit_model_destroy(m);
        return set_diag(d, PFI_ERR_PARSE, name,
                        "a coefficient, range or matrix entry is "
                        "missing or not a number");
    }
    pfi_error e = check_model(m, name, d);
    if (e != PFI_OK) {
        pfi_fit_model_destroy(m);
        return e;
    }
    *out = m;
    return PFI_OK;
}

pfi_error pfi_fit_model_load_buffer(const char *data, size_t len, pfi_fit_model **out,
                                    pfi_diag *diag)
{
    if (data == NULL || out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    *out = NULL;
    json_error_t jerr;
    unsigned long jf = pfi_json_failures();
    json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
    if (pfi_json_failed(jf) ||
        (root == NULL && json_error_code(&jerr) == json_error_out_of_memory)) {
        json_decref(root);
        return set_diag(diag, PFI_ERR_NOMEM, "(model)", "%s", pfi_strerror(PFI_ERR_NOMEM));
    }
    if (root == NULL) {
        set_diag(diag, PFI_ERR_PARSE, "(model)", "%s", jerr.text);
        if (diag != NULL)
            diag->line = jerr.line;
        return PFI_ERR_PARSE;
    }
    pfi_error e = parse_model(root, "(model)", out, diag);
    json_decref(root);
    /* json_unpack allocates too: a failure there reads as a missing key */
    if (e != PFI_OK && pfi_json_failed(jf))
        e = set_diag(diag, PFI_ERR_NOMEM, "(model)", "%s", pfi_strerror(PFI_ERR_NOMEM));
    return e;
}

pfi_error pfi_fit_model_load(const char *path, pfi_fit_model **out, pfi_diag *diag)
{
    if (path == NULL || out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return set_diag(diag, PFI_ERR_IO, path, "cannot open: %s", strerror(errno));
    json_error_t jerr;
    unsigned long jf = pfi_json_failures();
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
    fclose(f);
    if (pfi_json_failed(jf) ||
        (root == NULL && json_error_code(&jerr) == json_error_out_of_memory)) {
        json_decref(root);
        return set_diag(diag, PFI_ERR_NOMEM, path, "%s", pfi_strerror(PFI_ERR_NOMEM));
    }
    if (root == NULL) {
        set_diag(diag, PFI_ERR_PARSE, path, "%s", jerr.text);
        if (diag != NULL)
            diag->line = jerr.line;
        return PFI_ERR_PARSE;
    }
    pfi_error e = parse_model(root, path, out, diag);
    json_decref(root);
    /* json_unpack allocates too: a failure there reads as a missing key */
    if (e != PFI_OK && pfi_json_failed(jf))
        e = set_diag(diag, PFI_ERR_NOMEM, path, "%s", pfi_strerror(PFI_ERR_NOMEM));
    return e;
}
