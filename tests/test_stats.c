/*
 * Statistics against SciPy: every case of tests/golden/stats_expected.txt (made by
 * tests/golden/stats_reference.py). Tolerances: statistics, coefficients, leverage and
 * intervals to 1e-9 relative (1e-12 absolute near zero); p-values to 1e-6 relative
 * (1e-15 absolute). "undefined" in the file must be undefined here (defined == false, NaN).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pfi/stats.h"

#define TOL_VALUE 1e-9
#define TOL_P 1e-6

typedef struct rec {
    char kind[32], name[64], field[32];
    bool undefined;
    double *v;
    size_t n;
} rec;

static rec *recs;
static size_t n_recs;

static void load(void)
{
    if (recs != NULL)
        return;
    FILE *f = fopen(PFI_GOLDEN "/stats_expected.txt", "r");
    assert_non_null(f);
    char line[8192];
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (n_recs == cap) {
            cap = cap ? 2 * cap : 64;
            recs = realloc(recs, cap * sizeof *recs);
            assert_non_null(recs);
        }
        rec *r = &recs[n_recs++];
        memset(r, 0, sizeof *r);
        char values[8000];
        assert_int_equal(sscanf(line, "%31s %63s %31s %7999s", r->kind, r->name, r->field, values),
                         4);
        if (strcmp(values, "undefined") == 0) {
            r->undefined = true;
            continue;
        }
        r->v = malloc(sizeof(double) * (strlen(values) / 2 + 2));
        assert_non_null(r->v);
        for (char *tok = strtok(values, ","); tok; tok = strtok(NULL, ","))
            r->v[r->n++] = strcmp(tok, "nan") == 0 ? NAN : strtod(tok, NULL);
    }
    fclose(f);
    assert_true(n_recs > 100);
}

static const rec *find(const char *kind, const char *name, const char *field)
{
    for (size_t i = 0; i < n_recs; i++)
        if (!strcmp(recs[i].kind, kind) && !strcmp(recs[i].name, name) &&
            !strcmp(recs[i].field, field))
            return &recs[i];
    return NULL;
}

static void close_to(double got, double want, double rel, double abs_floor, const char *what)
{
    if (isnan(want)) {
        if (!isnan(got))
            fail_msg("%s: got %.17g, want nan", what, got);
        return;
    }
    double tol = fmax(rel * fabs(want), abs_floor);
    if (!(fabs(got - want) <= tol))
        fail_msg("%s: got %.17g, want %.17g (tol %.3g)", what, got, want, tol);
}

static void test_spearman(void **state)
{
    (void)state;
    load();
    size_t cases = 0;
    for (size_t i = 0; i < n_recs; i++) {
        if (strcmp(recs[i].kind, "spearman") || strcmp(recs[i].field, "x"))
            continue;
        const char *name = recs[i].name;
        const rec *x = &recs[i], *y = find("spearman", name, "y");
        const rec *rho = find("spearman", name, "rho"), *p = find("spearman", name, "p");
        assert_non_null(y);
        assert_non_null(rho);
        size_t n = x->n;
        double work[4 * 64];
        size_t order[64];
        pfi_spearman s;
        assert_int_equal(pfi_stats_spearman(x->v, y->v, n, work, order, &s), PFI_OK);
        if (rho->undefined) {
            if (s.defined || !isnan(s.rho) || !isnan(s.p_value) || s.undefined_reason == NULL)
                fail_msg("spearman %s: want undefined", name);
        } else {
            assert_true(s.defined);
            close_to(s.rho, rho->v[0], TOL_VALUE, 1e-12, name);
            close_to(s.p_value, p->v[0], TOL_P, 1e-15, name);
        }
        cases++;
    }
    assert_true(cases >= 8);
}

static void test_kruskal_dunn(void **state)
{
    (void)state;
    load();
    size_t cases = 0;
    for (size_t i = 0; i < n_recs; i++) {
        if (strcmp(recs[i].kind, "kruskal") || strcmp(recs[i].field, "group0"))
            continue;
        const char *name = recs[i].name;
        double x[64];
        size_t grp[64], n = 0, k = 0;
        char field[32];
        for (;; k++) {
            snprintf(field, sizeof field, "group%zu", k);
            const rec *g = find("kruskal", name, field);
            if (g == NULL)
                break;
            for (size_t j = 0; j < g->n; j++) {
                x[n] = g->v[j];
                grp[n++] = k;
            }
        }
        double work[64 + 64], mean_rank[16];
        size_t order[64];
        pfi_kruskal kw;
        assert_int_equal(pfi_stats_kruskal(x, grp, n, k, work, order, mean_rank, &kw), PFI_OK);
        const rec *h = find("kruskal", name, "h"), *p = find("kruskal", name, "p");
        if (h->undefined) {
            assert_false(kw.defined);
            assert_true(isnan(kw.h) && isnan(kw.p_value));
        } else {
            assert_true(kw.defined);
            assert_int_equal(kw.df, k - 1);
            close_to(kw.h, h->v[0], TOL_VALUE, 1e-12, name);
            close_to(kw.p_value, p->v[0], TOL_P, 1e-15, name);
        }
        const rec *mr = find("kruskal", name, "mean_rank");
        for (size_t g = 0; g < k; g++)
            close_to(mean_rank[g], mr->v[g], TOL_VALUE, 1e-12, name);
        pfi_dunn_pair pairs[16];
        assert_int_equal(pfi_stats_dunn(x, grp, n, k, work, order, pairs), PFI_OK);
        const rec *z = find("kruskal", name, "dunn_z"), *dp = find("kruskal", name, "dunn_p"),
                  *dh = find("kruskal", name, "dunn_holm");
        assert_int_equal(z->n, k * (k - 1) / 2);
        for (size_t q = 0; q < z->n; q++) {
            close_to(pairs[q].z, z->v[q], TOL_VALUE, 1e-12, name);
            close_to(pairs[q].p_value, dp->v[q], TOL_P, 1e-15, name);
            close_to(pairs[q].p_holm, dh->v[q], TOL_P, 1e-15, name);
        }
        cases++;
    }
    assert_true(cases >= 5);
}

static void test_adjust(void **state)
{
    (void)state;
    load();
    size_t cases = 0;
    for (size_t i = 0; i < n_recs; i++) {
        if (strcmp(recs[i].kind, "adjust") || strcmp(recs[i].field, "p"))
            continue;
        const rec *p = &recs[i];
        const rec *holm = find("adjust", p->name, "holm"), *bh = find("adjust", p->name, "bh");
        double adj[32];
        size_t order[32];
        assert_int_equal(pfi_stats_holm(p->v, p->n, order, adj), PFI_OK);
        for (size_t j = 0; j < p->n; j++)
            close_to(adj[j], holm->v[j], TOL_P, 1e-15, p->name);
        assert_int_equal(pfi_stats_bh(p->v, p->n, order, adj), PFI_OK);
        for (size_t j = 0; j < p->n; j++)
            close_to(adj[j], bh->v[j], TOL_P, 1e-15, p->name);
        cases++;
    }
    assert_true(cases >= 4);
    double bad[] = {0.5, 1.5};
    double adj[2];
    size_t order[2];
    assert_int_equal(pfi_stats_bh(bad, 2, order, adj), PFI_ERR_INVALID_ARGUMENT);
}

static void test_ols(void **state)
{
    (void)state;
    load();
    size_t cases = 0;
    for (size_t i = 0; i < n_recs; i++) {
        if (strcmp(recs[i].kind, "ols") || strcmp(recs[i].field, "p"))
            continue;
        const char *name = recs[i].name;
        size_t p = (size_t)recs[i].v[0];
        const rec *x = find("ols", name, "x"), *y = find("ols", name, "y"),
                  *x0 = find("ols", name, "x0"), *coef = find("ols", name, "coef");
        size_t n = y->n;
        pfi_ols fit;
        assert_int_equal(pfi_stats_ols(x->v, y->v, n, p, &fit), PFI_OK);
        if (coef->undefined) {
            assert_false(fit.defined);
            assert_non_null(fit.undefined_reason);
            double yh;
            assert_int_equal(pfi_stats_ols_predict(&fit, x0->v, 0.95, &yh, NULL, NULL),
                             PFI_ERR_INVALID_ARGUMENT);
            pfi_ols_clear(&fit);
            cases++;
            continue;
        }
        assert_true(fit.defined);
        for (size_t j = 0; j <= p; j++)
            close_to(fit.coef[j], coef->v[j], TOL_VALUE, 1e-12, name);
        close_to(fit.r2, find("ols", name, "r2")->v[0], TOL_VALUE, 1e-12, name);
        double h[64];
        assert_int_equal(pfi_stats_leverage(&fit, x->v, n, h), PFI_OK);
        const rec *lev = find("ols", name, "leverage");
        for (size_t j = 0; j < n; j++)
            close_to(h[j], lev->v[j], TOL_VALUE, 1e-12, name);
        const rec *se = find("ols", name, "se");
        const rec *yhat = find("ols", name, "yhat");
        const rec *lo = find("ols", name, "pi_lo"), *hi = find("ols", name, "pi_hi");
        if (se->undefined) {
            assert_int_equal(fit.df, 0);
            assert_true(isnan(fit.se[0]) && isnan(fit.sigma));
        } else {
            for (size_t j = 0; j <= p; j++)
                close_to(fit.se[j], se->v[j], TOL_VALUE, 1e-12, name);
            close_to(fit.sigma, find("ols", name, "sigma")->v[0], TOL_VALUE, 1e-12, name);
            close_to(fit.r2_adj, find("ols", name, "r2_adj")->v[0], TOL_VALUE, 1e-12, name);
        }
        for (size_t k = 0; k < yhat->n; k++) {
            double f, l, u;
            assert_int_equal(pfi_stats_ols_predict(&fit, x0->v + k * p, 0.95, &f, &l, &u), PFI_OK);
            close_to(f, yhat->v[k], TOL_VALUE, 1e-12, name);
            if (lo != NULL) {
                close_to(l, lo->v[k], TOL_VALUE, 1e-12, name);
                close_to(u, hi->v[k], TOL_VALUE, 1e-12, name);
            } else {
                assert_true(isnan(l) && isnan(u));
            }
        }
        pfi_ols_clear(&fit);
        cases++;
    }
    assert_true(cases >= 5);
}

/* One predictor: leverage equals the paper's 1/n + (x − x̄)²/Σ(x − x̄)². */
static void test_leverage_formula(void **state)
{
    (void)state;
    double x[] = {0.1, 0.4, 0.2, 0.9, 0.5, 0.3};
    double y[] = {1.0, 1.5, 1.1, 2.6, 1.7, 1.2};
    pfi_ols fit;
    assert_int_equal(pfi_stats_ols(x, y, 6, 1, &fit), PFI_OK);
    double h[6], m = 0, sxx = 0;
    assert_int_equal(pfi_stats_leverage(&fit, x, 6, h), PFI_OK);
    for (int i = 0; i < 6; i++)
        m += x[i] / 6;
    for (int i = 0; i < 6; i++)
        sxx += (x[i] - m) * (x[i] - m);
    for (int i = 0; i < 6; i++)
        close_to(h[i], 1.0 / 6 + (x[i] - m) * (x[i] - m) / sxx, 1e-12, 1e-15, "leverage");
    pfi_ols_clear(&fit);
}

static void test_invalid(void **state)
{
    (void)state;
    double x[] = {1, NAN, 3}, y[] = {1, 2, 3}, work[12];
    size_t order[3], grp[] = {0, 1, 5};
    pfi_spearman s;
    assert_int_equal(pfi_stats_spearman(x, y, 3, work, order, &s), PFI_ERR_INVALID_ARGUMENT);
    pfi_kruskal kw;
    assert_int_equal(pfi_stats_kruskal(y, grp, 3, 2, work, order, NULL, &kw),
                     PFI_ERR_INVALID_ARGUMENT);
    size_t empty[] = {0, 0, 0};
    assert_int_equal(pfi_stats_kruskal(y, empty, 3, 2, work, order, NULL, &kw),
                     PFI_ERR_INVALID_ARGUMENT);
    assert_true(isnan(pfi_stats_median(y, 0, work)));
    double even[] = {4, 1, 3, 2};
    assert_true(pfi_stats_median(even, 4, work) == 2.5);
    /* ranks with ties beyond the insertion-sort size use the merge sort: same answer */
    double big[200], ranks[200];
    size_t ord[200];
    double ties;
    for (int i = 0; i < 200; i++)
        big[i] = (double)(i % 10);
    assert_int_equal(pfi_stats_ranks(big, 200, ranks, ord, &ties), PFI_OK);
    assert_true(ranks[0] == 10.5 && ranks[9] == 190.5);
    assert_true(ties == 10.0 * (20.0 * 20 * 20 - 20));
}

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < n_recs; i++)
        free(recs[i].v);
    free(recs);
    recs = NULL;
    n_recs = 0;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spearman),         cmocka_unit_test(test_kruskal_dunn),
        cmocka_unit_test(test_adjust),           cmocka_unit_test(test_ols),
        cmocka_unit_test(test_leverage_formula), cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
