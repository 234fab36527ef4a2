/*
 * The default synthetic library meets the calibration targets of
 * data/synthetic/calibration-targets.json, through the whole pipeline: generate, write the
 * dataset, read it back with its manifest (pfi_groups_from_dataset: runs table + analysis),
 * then the statistics. Also: the model's documented behaviour.
 */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "pfi/fit.h"
#include "pfi/groups.h"
#include "pfi/library.h"
#include "pfi/model.h"
#include "pfi/stats.h"

static double target(json_t *root, const char *key, const char *field)
{
    json_t *o = json_object_get(root, key);
    assert_non_null(o);
    json_t *v = field ? json_object_get(o, field) : o;
    assert_true(json_is_number(v));
    return json_number_value(v);
}

static void test_model(void **state)
{
    (void)state;
    pfi_model_job j;
    pfi_model_job_init(&j, 0.8, 650);
    pfi_model_point p;
    assert_int_equal(pfi_model_eval(&j, 700, &p), PFI_OK);
    assert_false(p.cap_binding);
    assert_true(fabs(p.power_w - 650) < 1e-9 && fabs(p.clock_mhz - 1980) < 1e-9);
    assert_true(fabs(p.step_time_s - 1) < 1e-12);
    assert_int_equal(pfi_model_eval(&j, 400, &p), PFI_OK);
    assert_true(p.cap_binding);
    assert_true(fabs(p.power_w - 400) < 1e-9);             /* the clock settles where P(f) = cap */
    assert_int_equal(pfi_model_eval(&j, 100, &p), PFI_OK); /* below P_s: held at f_min */
    assert_true(p.at_clock_min && fabs(p.clock_mhz - 345) < 1e-9);
    /* DESIGN §7 prototype: alpha 1.0 -> ~1.23, 0.8 -> ~1.43, 0.5 -> ~2.04 on 700..200 W */
    double caps[] = {700, 600, 500, 400, 300, 200}, v;
    assert_int_equal(pfi_model_pfi(&j, caps, 6, 0.02, &v), PFI_OK);
    assert_true(fabs(v - 1.457) < 0.01);
    double alpha;
    bool reached;
    assert_int_equal(pfi_model_share_for_pfi(&j, caps, 6, 0.02, 2.0, &alpha, &reached), PFI_OK);
    assert_true(reached);
    pfi_model_set_share(&j, alpha);
    assert_int_equal(pfi_model_pfi(&j, caps, 6, 0.02, &v), PFI_OK);
    assert_true(fabs(v - 2.0) < 1e-6);
    j.gamma = -1;
    assert_int_equal(pfi_model_eval(&j, 400, &p), PFI_ERR_INVALID_ARGUMENT);
}

/* pfi_model_eval_at_clock agrees with pfi_model_eval at the clock a cap settles on (every
 * field, to rounding), clamps to [f_min, f_max], and matches the formulas between. */
static void test_model_at_clock(void **state)
{
    (void)state;
    static const double alphas[] = {1.0, 0.8, 0.5, 0.1};
    static const double caps[] = {800, 650, 600, 451.5, 300, 200, 170, 100};
    for (size_t a = 0; a < sizeof alphas / sizeof alphas[0]; a++) {
        pfi_model_job j;
        pfi_model_job_init(&j, alphas[a], 650);
        j.gpus = 8;
        j.tokens_per_step = 4096;
        for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) {
            pfi_model_point pc, pf;
            assert_int_equal(pfi_model_eval(&j, caps[k], &pc), PFI_OK);
            assert_int_equal(pfi_model_eval_at_clock(&j, pc.clock_mhz, &pf), PFI_OK);
            const double got[] = {pf.clock_mhz,   pf.power_w,      pf.job_power_w,
                                  pf.step_time_s, pf.throughput,   pf.compute_share,
                                  pf.dram_active, pf.tensor_active};
            const double want[] = {pc.clock_mhz,   pc.power_w,      pc.job_power_w,
                                   pc.step_time_s, pc.throughput,   pc.compute_share,
                                   pc.dram_active, pc.tensor_active};
            for (size_t f = 0; f < sizeof got / sizeof got[0]; f++)
                assert_true(fabs(got[f] - want[f]) <= 1e-12 * (fabs(want[f]) + 1));
            assert_true(pf.cap_binding == pc.cap_binding);
            assert_true(pf.at_clock_min == pc.at_clock_min);
            assert_true(isnan(pf.cap_w));
        }
    }
    pfi_model_job j;
    pfi_model_job_init(&j, 0.5, 600);
    pfi_model_point p;
    /* half the clock: P = 150 + 450/4, t = 0.5*2 + 0.5 */
    assert_int_equal(pfi_model_eval_at_clock(&j, 990, &p), PFI_OK);
    assert_true(fabs(p.power_w - 262.5) < 1e-9 && fabs(p.step_time_s - 1.5) < 1e-12);
    assert_true(fabs(p.compute_share - 2.0 / 3) < 1e-12 && p.cap_binding && !p.at_clock_min);
    assert_true(fabs(p.dram_active - 0.9 / 3) < 1e-12 && fabs(p.tensor_active - 0.4) < 1e-12);
    assert_int_equal(pfi_model_eval_at_clock(&j, 5000, &p), PFI_OK); /* clamped to f_max */
    assert_true(fabs(p.clock_mhz - 1980) < 1e-9 && !p.cap_binding && fabs(p.power_w - 600) < 1e-9);
    assert_int_equal(pfi_model_eval_at_clock(&j, 10, &p), PFI_OK); /* clamped to f_min */
    assert_true(fabs(p.clock_mhz - 345) < 1e-9 && p.at_clock_min);
    assert_int_equal(pfi_model_eval_at_clock(&j, 0, &p), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_model_eval_at_clock(&j, NAN, &p), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_model_eval_at_clock(&j, 1000, NULL), PFI_ERR_INVALID_ARGUMENT);
    j.clock_min_mhz = 0;
    assert_int_equal(pfi_model_eval_at_clock(&j, 1000, &p), PFI_ERR_INVALID_ARGUMENT);
}

static void test_calibration(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *t = json_load_file(PFI_REPO_DATA "/synthetic/calibration-targets.json", 0, &jerr);
    assert_non_null(t);
    pfi_library *lib;
    assert_int_equal(pfi_library_generate(NULL, &lib), PFI_OK);
    assert_int_equal(lib->n_groups, (size_t)target(t, "groups", NULL));
    assert_int_equal(lib->n_runs, (size_t)target(t, "runs", NULL));
    char dir[] = "/tmp/pfi-test-library-XXXXXX";
    assert_non_null(mkdtemp(dir));
    pfi_diag d;
    assert_int_equal(pfi_library_write(lib, dir, &d), PFI_OK);
    pfi_groups *g;
    assert_int_equal(pfi_groups_from_dataset(dir, NULL, NULL, &g, &d), PFI_OK);
    assert_int_equal(g->n, lib->n_groups);
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < g->n; i++) {
        assert_false(isnan(g->pfi[i]));
        lo = fmin(lo, g->pfi[i]);
        hi = fmax(hi, g->pfi[i]);
    }
    printf("PFI range %.3f .. %.3f\n", lo, hi);
    assert_true(lo >= target(t, "pfi_floor", NULL));
    assert_true(fabs(lo - target(t, "pfi_min", "target")) <= target(t, "pfi_min", "tolerance"));
    assert_true(fabs(hi - target(t, "pfi_max", "target")) <= target(t, "pfi_max", "tolerance"));
    static const char *const classes[] = {"dense", "moe-pt", "moe-ft"};
    double y[64], work[256];
    size_t label[64], order[64], m = 0;
    json_t *cm = json_object_get(t, "class_median");
    for (size_t c = 0; c < 3; c++) {
        double v[64];
        size_t n = 0;
        for (size_t i = 0; i < g->n; i++)
            if (strcmp(g->classes[i], classes[c]) == 0) {
                v[n++] = g->pfi[i];
                y[m] = g->pfi[i];
                label[m++] = c;
            }
        double med = pfi_stats_median(v, n, work);
        printf("class %s median %.3f\n", classes[c], med);
        json_t *o = json_object_get(cm, classes[c]);
        assert_true(fabs(med - json_number_value(json_object_get(o, "target"))) <=
                    json_number_value(json_object_get(o, "tolerance")));
    }
    pfi_kruskal kw;
    assert_int_equal(pfi_stats_kruskal(y, label, m, 3, work, order, NULL, &kw), PFI_OK);
    printf("Kruskal-Wallis H %.3f p %.3g\n", kw.h, kw.p_value);
    assert_true(kw.defined && kw.p_value < target(t, "kruskal_p_max", NULL));
    pfi_dunn_pair pairs[3];
    assert_int_equal(pfi_stats_dunn(y, label, m, 3, work, order, pairs), PFI_OK);
    /* pairs: (dense, moe-pt), (dense, moe-ft), (moe-pt, moe-ft) */
    json_t *dunn = json_object_get(t, "dunn_holm_p");
    printf("Dunn Holm p: dense|moe-pt %.3g dense|moe-ft %.3g\n", pairs[0].p_holm, pairs[1].p_holm);
    assert_true(pairs[1].p_holm <
                json_number_value(json_object_get(json_object_get(dunn, "dense|moe-ft"), "max")));
    assert_true(pairs[0].p_holm >
                json_number_value(json_object_get(json_object_get(dunn, "dense|moe-pt"), "min")));
    const char *key;
    json_t *sign;
    json_object_foreach(json_object_get(t, "spearman_sign"), key, sign)
    {
        size_t col;
        assert_int_equal(pfi_groups_resolve(g, key, &col), PFI_OK);
        double x[64], yy[64];
        size_t n = 0;
        for (size_t i = 0; i < g->n; i++) {
            x[n] = g->features[i * g->n_features + col];
            yy[n++] = g->pfi[i];
        }
        pfi_spearman s;
        assert_int_equal(pfi_stats_spearman(x, yy, n, work, order, &s), PFI_OK);
        printf("spearman %s rho %.3f p %.3g\n", key, s.rho, s.p_value);
        assert_true(s.defined && s.rho * (double)json_integer_value(sign) > 0);
        assert_true(s.p_value < target(t, "spearman_p_max", NULL));
    }
    /* Between-class contrasts drive the association (paper App. D.5): within each class the
     * correlation of PFI with the predictor is not significant. */
    json_t *wc = json_object_get(t, "within_class_spearman");
    size_t wcol;
    assert_int_equal(
        pfi_groups_resolve(g, json_string_value(json_object_get(wc, "feature")), &wcol), PFI_OK);
    size_t ci;
    json_t *cls;
    json_array_foreach(json_object_get(wc, "classes"), ci, cls)
    {
        double x[64], yy[64];
        size_t n = 0;
        for (size_t i = 0; i < g->n; i++)
            if (strcmp(g->classes[i], json_string_value(cls)) == 0) {
                x[n] = g->features[i * g->n_features + wcol];
                yy[n++] = g->pfi[i];
            }
        pfi_spearman s;
        assert_int_equal(pfi_stats_spearman(x, yy, n, work, order, &s), PFI_OK);
        printf("within %s: n %zu rho %.3f p %.3g\n", json_string_value(cls), n, s.rho, s.p_value);
        assert_true(n >= 5 && s.defined);
        assert_true(s.p_value > json_number_value(json_object_get(wc, "p_min")));
    }
    /* The DRAM copy product is the best single feature in LOCO (paper §5); in LOO, where the
     * class-level telemetry carries no within-class information, within a stated margin. */
    json_t *bf = json_object_get(t, "best_single_feature");
    const char *best[] = {json_string_value(json_object_get(bf, "feature"))};
    double margin = json_number_value(json_object_get(bf, "loo_r2_within"));
    pfi_fit_model *mb;
    assert_int_equal(pfi_fit_model_build(g, best, 1, &mb, &d), PFI_OK);
    printf("LOO/LOCO R2 %s: %.3f / %.3f\n", best[0], mb->loo.r2, mb->loco.r2);
    json_t *other;
    json_array_foreach(json_object_get(bf, "against"), ci, other)
    {
        const char *f1[] = {json_string_value(other)};
        pfi_fit_model *mo;
        assert_int_equal(pfi_fit_model_build(g, f1, 1, &mo, &d), PFI_OK);
        printf("LOO/LOCO R2 %s: %.3f / %.3f\n", f1[0], mo->loo.r2, mo->loco.r2);
        assert_true(mb->loco.r2 > mo->loco.r2);
        assert_true(mb->loo.r2 > mo->loo.r2 - margin);
        pfi_fit_model_destroy(mo);
    }
    /* The model file round-trips. */
    char path[128];
    snprintf(path, sizeof path, "%s/model.json", dir);
    assert_int_equal(pfi_fit_model_save(mb, path, &d), PFI_OK);
    pfi_fit_model *back;
    assert_int_equal(pfi_fit_model_load(path, &back, &d), PFI_OK);
    double x0 = 0.2, a, b, lo2, hi2, lo3, hi3;
    bool outside;
    assert_int_equal(pfi_fit_model_predict(mb, &x0, 0.95, &a, &lo2, &hi2, &outside), PFI_OK);
    assert_int_equal(pfi_fit_model_predict(back, &x0, 0.95, &b, &lo3, &hi3, &outside), PFI_OK);
    assert_true(a == b && lo2 == lo3 && hi2 == hi3 && lo2 < a && a < hi2);
    x0 = 5;
    assert_int_equal(pfi_fit_model_predict(back, &x0, 0.95, &b, NULL, NULL, &outside), PFI_OK);
    assert_true(outside);
    pfi_fit_model_destroy(back);
    pfi_fit_model_destroy(mb);
    for (const char *f = "runs.csv"; f; f = strcmp(f, "runs.csv") == 0     ? "groups.csv"
                                            : strcmp(f, "groups.csv") == 0 ? "pfi-dataset.json"
                                            : strcmp(f, "pfi-dataset.json") == 0 ? "model.json"
                                                                                 : NULL) {
        char p[160];
        snprintf(p, sizeof p, "%s/%s", dir, f);
        unlink(p);
    }
    rmdir(dir);
    pfi_groups_destroy(g);
    pfi_library_destroy(lib);
    json_decref(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_model),
                                       cmocka_unit_test(test_model_at_clock),
                                       cmocka_unit_test(test_calibration)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
