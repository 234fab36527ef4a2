/*
 * Monte Carlo confidence intervals: coverage on a known normal case, determinism, the two
 * generators agreeing, threads not changing results; the normal generator against the normal
 * CDF; quantiles against GSL's sorted-data quantiles.
 */
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pfi/index.h"
#include "pfi/quantile.h"
#include "pfi/rng.h"

#define WITH_SE                                                                                    \
    (PFI_RUN_CAP | PFI_RUN_POWER | PFI_RUN_THROUGHPUT | PFI_RUN_POWER_SE | PFI_RUN_THROUGHPUT_SE)

static pfi_group group_of(pfi_run *runs, size_t n)
{
    static const char *const names[] = {"job"};
    static char value[] = "g";
    static char *values[] = {value};
    return (pfi_group){
        .n_key = 1, .key_names = names, .key_values = values, .runs = runs, .n_runs = n};
}

static pfi_result ci_of(pfi_run *runs, size_t n, const pfi_options *o, uint64_t stream)
{
    pfi_group g = group_of(runs, n);
    pfi_result r;
    assert_int_equal(pfi_group_compute(&g, o, &r), PFI_OK);
    double *work = malloc(o->draws * sizeof *work);
    assert_non_null(work);
    assert_int_equal(pfi_result_ci(&r, o, stream, work), PFI_OK);
    free(work);
    return r;
}

/*
 * Coverage: a job whose true curve gives PFI = (0.25/0.1 + 0.5/0.3)/2 is "measured" 400
 * times with normal noise of known standard error (drawn by GSL, independently of pfi's
 * generator); each measurement's 95 % CI should contain the truth about 95 % of the time.
 * With small noise the ratio estimator is close to linear, so the percentile interval is
 * close to exact. Binomial sd at 400 trials: 1.1 %; accept 90–99 %.
 */
static void test_ci_coverage_known_normal_case(void **state)
{
    (void)state;
    const double truth[3][2] = {{600, 100}, {450, 90}, {300, 70}};
    const double cap[3] = {700, 500, 300};
    const double se_p = 3.0, se_t = 0.4;
    const double pfi_true = 2.0833333333333335;
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, 12345);
    pfi_options o;
    pfi_options_init(&o);
    o.draws = 2000;
    int covered = 0, trials = 400;
    for (int t = 0; t < trials; t++) {
        pfi_run runs[3];
        for (int i = 0; i < 3; i++)
            runs[i] = (pfi_run){.line = i + 2,
                                .cap_w = cap[i],
                                .power_w = truth[i][0] + gsl_ran_gaussian(g, se_p),
                                .throughput = truth[i][1] + gsl_ran_gaussian(g, se_t),
                                .power_se_w = se_p,
                                .throughput_se = se_t,
                                .valid = WITH_SE};
        pfi_result r = ci_of(runs, 3, &o, (uint64_t)t);
        assert_true(r.ci_available);
        assert_true(r.ci_lo <= r.ci_median && r.ci_median <= r.ci_hi);
        covered += r.ci_lo <= pfi_true && pfi_true <= r.ci_hi;
        pfi_result_clear(&r);
    }
    gsl_rng_free(g);
    double rate = (double)covered / trials;
    if (rate < 0.90 || rate > 0.99) {
        print_error("coverage %.3f outside [0.90, 0.99]\n", rate);
        fail();
    }
}

static pfi_run runs_fixed[3] = {
    {.line = 2,
     .cap_w = 700,
     .power_w = 600,
     .throughput = 100,
     .valid = WITH_SE,
     .power_se_w = 6,
     .throughput_se = 1},
    {.line = 3,
     .cap_w = 500,
     .power_w = 450,
     .throughput = 90,
     .valid = WITH_SE,
     .power_se_w = 4.5,
     .throughput_se = 0.9},
    {.line = 4,
     .cap_w = 300,
     .power_w = 300,
     .throughput = 70,
     .valid = WITH_SE,
     .power_se_w = 3,
     .throughput_se = 0.7},
};

static void test_same_seed_same_ci(void **state)
{
    (void)state;
    pfi_options o;
    pfi_options_init(&o);
    pfi_result a = ci_of(runs_fixed, 3, &o, 7), b = ci_of(runs_fixed, 3, &o, 7);
    assert_true(a.ci_lo == b.ci_lo && a.ci_hi == b.ci_hi && a.ci_median == b.ci_median);
    pfi_result c = ci_of(runs_fixed, 3, &o, 8); /* another stream */
    assert_true(a.ci_lo != c.ci_lo);
    o.seed = 2;
    pfi_result d = ci_of(runs_fixed, 3, &o, 7); /* another seed */
    assert_true(a.ci_lo != d.ci_lo);
    /* the point estimate is inside its interval */
    assert_true(a.ci_lo < a.ratio && a.ratio < a.ci_hi);
    assert_int_equal(a.ci_draws, 10000);
    assert_int_equal(a.label, PFI_LABEL_INELASTIC);
    pfi_result_clear(&a);
    pfi_result_clear(&b);
    pfi_result_clear(&c);
    pfi_result_clear(&d);
}

/* pfi's generator and GSL's taus2 + ziggurat give the same interval up to Monte Carlo error. */
static void test_generators_agree(void **state)
{
    (void)state;
    pfi_options o;
    pfi_options_init(&o);
    o.draws = 200000;
    pfi_result fast = ci_of(runs_fixed, 3, &o, 1);
    o.rng = PFI_RNG_GSL;
    pfi_result gsl = ci_of(runs_fixed, 3, &o, 1);
    double width = fast.ci_hi - fast.ci_lo;
    assert_true(fabs(fast.ci_lo - gsl.ci_lo) < 0.02 * width);
    assert_true(fabs(fast.ci_median - gsl.ci_median) < 0.02 * width);
    assert_true(fabs(fast.ci_hi - gsl.ci_hi) < 0.02 * width);
    pfi_result_clear(&fast);
    pfi_result_clear(&gsl);
}

static void test_no_ci_without_standard_errors(void **state)
{
    (void)state;
    pfi_run runs[3];
    memcpy(runs, runs_fixed, sizeof runs);
    runs[1].valid &= ~(unsigned)PFI_RUN_THROUGHPUT_SE;
    pfi_options o;
    pfi_options_init(&o);
    pfi_result r = ci_of(runs, 3, &o, 1);
    assert_false(r.ci_available);
    assert_non_null(strstr(r.ci_note, "standard errors unknown"));
    assert_true(isnan(r.ci_lo) && isnan(r.ci_hi));
    assert_false(isnan(r.ratio)); /* the point estimate does not need them */
    pfi_result_clear(&r);
    /* an explicit relative noise fills the missing one */
    o.noise_rel = 0.01;
    r = ci_of(runs, 3, &o, 1);
    assert_true(r.ci_available);
    pfi_result_clear(&r);
}

/* A noise so large that draws lose their points: undefined draws are counted, not used. */
static void test_undefined_draws_counted(void **state)
{
    (void)state;
    pfi_run runs[2] = {
        {.line = 2,
         .cap_w = 300,
         .power_w = 100,
         .throughput = 10,
         .valid = WITH_SE,
         .power_se_w = 1,
         .throughput_se = 0.2},
        {.line = 3,
         .cap_w = 200,
         .power_w = 95,
         .throughput = 9.9,
         .valid = WITH_SE,
         .power_se_w = 1,
         .throughput_se = 0.2},
    };
    pfi_options o;
    pfi_options_init(&o);
    pfi_result r = ci_of(runs, 2, &o, 1);
    assert_true(r.ci_available);
    assert_true(r.ci_undefined > 1000 && r.ci_undefined < 5000); /* y > 0 in ~64 % */
    /* over PFI_CI_UNDEFINED_NOTE: noted, the CI kept */
    assert_int_equal(r.notes & (PFI_NOTE_MANY_UNDEFINED | PFI_NOTE_CI_WITHHELD),
                     PFI_NOTE_MANY_UNDEFINED);
    assert_int_not_equal(r.label, PFI_LABEL_UNDEFINED);
    pfi_result_clear(&r);
    /* x ~ N(0.025, 0.014) binds in ~64 % of the draws, y ~ N(0.001, 0.028) is > 0 in ~51 %:
       about two draws in three are undefined, over PFI_CI_UNDEFINED_WITHHOLD: no CI, no label,
       the point estimate kept */
    runs[1].power_w = 97.5;
    runs[1].throughput = 9.99;
    r = ci_of(runs, 2, &o, 1);
    assert_true(r.ci_undefined > 6000 && r.ci_undefined < 7500);
    assert_int_equal(r.ci_draws, o.draws);
    assert_false(r.ci_available);
    assert_true(isnan(r.ci_lo) && isnan(r.ci_median) && isnan(r.ci_hi));
    assert_non_null(strstr(r.ci_note, "more than half"));
    assert_int_equal(r.notes & (PFI_NOTE_MANY_UNDEFINED | PFI_NOTE_CI_WITHHELD),
                     PFI_NOTE_MANY_UNDEFINED | PFI_NOTE_CI_WITHHELD);
    assert_int_equal(r.label, PFI_LABEL_UNDEFINED);
    assert_true(fabs(r.ratio - 0.025 / 0.001) < 1e-6);
    pfi_result_clear(&r);
}

/*
 * The whole estimator is resampled: a point measured at x = 0.015 (below x_min, excluded at the
 * estimate) binds in the draws where its own noise takes x past 0.02 (x ~ N(0.015, 0.014):
 * about 36 % of them) and then adds x/y ~ 0.02/0.1 to that draw's mean. With only the 200 W
 * point (x 0.3 ± 0.014, y 0.2 ± 0.007) every draw would lie in 1.5 ± 0.15.
 */
static void test_excluded_point_flips_in(void **state)
{
    (void)state;
    pfi_run runs[3] = {
        {.line = 2,
         .cap_w = 300,
         .power_w = 100,
         .throughput = 10,
         .valid = WITH_SE,
         .power_se_w = 1,
         .throughput_se = 0.05},
        {.line = 3,
         .cap_w = 250,
         .power_w = 98.5,
         .throughput = 9.0,
         .valid = WITH_SE,
         .power_se_w = 1,
         .throughput_se = 0.05},
        {.line = 4,
         .cap_w = 200,
         .power_w = 70,
         .throughput = 8.0,
         .valid = WITH_SE,
         .power_se_w = 1,
         .throughput_se = 0.05},
    };
    pfi_options o;
    pfi_options_init(&o);
    pfi_result r = ci_of(runs, 3, &o, 1);
    assert_int_equal(r.n_ratio, 1);
    assert_true(fabs(r.ratio - 1.5) < 1e-12);
    assert_int_equal(r.points[0].exclusion, PFI_EXCL_CAP_NOT_BINDING);
    assert_true(r.ci_available);
    assert_true(r.ci_lo < 1.0); /* the flipped-in draws */
    assert_true(r.ci_hi > 1.4); /* the others */
    assert_int_equal(r.ci_undefined, 0);
    pfi_result_clear(&r);
}

/* pfi_analyze hands groups to threads; results must not depend on how many. */
static void test_threads_do_not_change_results(void **state)
{
    (void)state;
    enum { G = 9 };
    pfi_runs_table t = {0};
    pfi_group groups[G];
    pfi_run runs[G][3];
    for (size_t g = 0; g < G; g++) {
        memcpy(runs[g], runs_fixed, sizeof runs_fixed);
        runs[g][2].throughput = 60 + (double)g;
        groups[g] = group_of(runs[g], 3);
    }
    t.groups = groups;
    t.n_groups = G;
    pfi_options o;
    pfi_options_init(&o);
    o.draws = 3000;
    pfi_result one[G], two[G];
    o.threads = 1;
    assert_int_equal(pfi_analyze(&t, &o, one), PFI_OK);
    o.threads = 3;
    assert_int_equal(pfi_analyze(&t, &o, two), PFI_OK);
    for (size_t g = 0; g < G; g++) {
        assert_true(one[g].ci_lo == two[g].ci_lo && one[g].ci_hi == two[g].ci_hi);
        assert_true(one[g].ratio == two[g].ratio);
        pfi_result_clear(&one[g]);
        pfi_result_clear(&two[g]);
    }
}

/* A table read from CSV texts, each under its name ("dir/file.csv"). */
static pfi_runs_table *table_of(const char *const *names, const char *const *texts, size_t n)
{
    pfi_runs_table *t;
    assert_int_equal(pfi_runs_table_create(&t), PFI_OK);
    pfi_mapping m = {0};
    assert_int_equal(pfi_mapping_set(&m, "group", "job"), PFI_OK);
    assert_int_equal(pfi_mapping_set(&m, "cap", "cap"), PFI_OK);
    assert_int_equal(pfi_mapping_set(&m, "power", "power"), PFI_OK);
    assert_int_equal(pfi_mapping_set(&m, "throughput", "tput"), PFI_OK);
    for (size_t i = 0; i < n; i++) {
        FILE *f = fmemopen((void *)texts[i], strlen(texts[i]), "r");
        assert_non_null(f);
        assert_int_equal(pfi_runs_read_stream(t, f, names[i], &m, NULL), PFI_OK);
        fclose(f);
    }
    pfi_mapping_clear(&m);
    return t;
}

/* The CI of group `job` of the file named base in t (bit for bit), after pfi_analyze. */
static void ci_in(const pfi_runs_table *t, const pfi_options *o, const char *base, const char *job,
                  double out[3])
{
    pfi_result *r = calloc(t->n_groups, sizeof *r);
    assert_non_null(r);
    assert_int_equal(pfi_analyze(t, o, r), PFI_OK);
    size_t hits = 0;
    for (size_t g = 0; g < t->n_groups; g++) {
        const char *file = t->files[t->groups[g].file_index];
        size_t lf = strlen(file), lb = strlen(base);
        if (lf >= lb && strcmp(file + lf - lb, base) == 0 &&
            strcmp(t->groups[g].key_values[0], job) == 0) {
            assert_true(r[g].ci_available);
            out[0] = r[g].ci_lo;
            out[1] = r[g].ci_median;
            out[2] = r[g].ci_hi;
            hits++;
        }
        pfi_result_clear(&r[g]);
    }
    free(r);
    assert_int_equal(hits, 1);
}

/*
 * A group's CI is the same whichever other files and groups are analysed with it, and whatever
 * prefix its file is reached by: its stream comes from its identity (pfi_group_stream), not its
 * place in the table. (With the group index as the stream, `b` moved from index 0 to 2.)
 */
static void test_ci_independent_of_other_groups(void **state)
{
    (void)state;
    static const char a[] = "job,cap,power,tput\nx,300,300,100\nx,200,210,80\n"
                            "y,300,300,100\ny,200,220,85\n";
    static const char b[] = "job,cap,power,tput\nb,300,290,95\nb,250,250,90\nb,200,205,78\n";
    pfi_options o;
    pfi_options_init(&o);
    o.noise_rel = 0.01;
    o.draws = 4000;
    double alone[3], with[3], moved[3];
    pfi_runs_table *t = table_of((const char *[]){"sweeps/b.csv"}, (const char *[]){b}, 1);
    ci_in(t, &o, "sweeps/b.csv", "b", alone);
    pfi_runs_table_destroy(t);
    t = table_of((const char *[]){"other/a.csv", "sweeps/b.csv"}, (const char *[]){a, b}, 2);
    ci_in(t, &o, "sweeps/b.csv", "b", with);
    pfi_runs_table_destroy(t);
    t = table_of((const char *[]){"/srv/data/sweeps/b.csv", "other/a.csv"}, (const char *[]){b, a},
                 2);
    ci_in(t, &o, "sweeps/b.csv", "b", moved);
    for (int q = 0; q < 3; q++) {
        assert_memory_equal(&alone[q], &with[q], sizeof alone[q]);
        assert_memory_equal(&alone[q], &moved[q], sizeof alone[q]);
    }
    /* distinct identities get distinct streams */
    size_t g_x = 1, g_y = 2; /* b first, then a's x and y */
    assert_true(pfi_group_stream(t, g_x) != pfi_group_stream(t, g_y));
    assert_true(pfi_group_stream(t, 0) != pfi_group_stream(t, g_x));
    pfi_runs_table_destroy(t);
}

/*
 * The normal generator: Kolmogorov–Smirnov distance of 10^6 draws to Φ below the 0.1 %
 * critical value 1.95/√n; moments; the tail beyond r (drawn by the slow path) at its
 * expected rate 2(1 − Φ(r)).
 */
static void test_normal_generator_distribution(void **state)
{
    (void)state;
    enum { N = 1000000 };
    double *z = malloc(N * sizeof *z);
    assert_non_null(z);
    pfi_rng r;
    pfi_rng_seed(&r, 42, 0);
    size_t tail = 0;
    for (size_t i = 0; i < N; i++) {
        z[i] = pfi_rng_normal(&r);
        tail += fabs(z[i]) > 3.6541528853610088;
    }
    double mean = gsl_stats_mean(z, 1, N), var = gsl_stats_variance_m(z, 1, N, mean);
    double kurt = gsl_stats_kurtosis_m_sd(z, 1, N, mean, sqrt(var)) + 3.0;
    assert_true(fabs(mean) < 0.005);
    assert_true(fabs(var - 1.0) < 0.005);
    assert_true(fabs(kurt - 3.0) < 0.03);
    double expected_tail = 2.0 * gsl_cdf_ugaussian_Q(3.6541528853610088) * N;
    assert_true(fabs((double)tail - expected_tail) < 5.0 * sqrt(expected_tail));
    gsl_sort(z, 1, N);
    double d = 0.0;
    for (size_t i = 0; i < N; i++) {
        double f = gsl_cdf_ugaussian_P(z[i]);
        double lo = f - (double)i / N, hi = (double)(i + 1) / N - f;
        d = fmax(d, fmax(lo, hi));
    }
    if (d > 1.95 / sqrt((double)N)) {
        print_error("KS distance %.5f exceeds %.5f\n", d, 1.95 / sqrt((double)N));
        fail();
    }
    free(z);
}

static void test_rng_streams_differ(void **state)
{
    (void)state;
    pfi_rng a, b, c;
    pfi_rng_seed(&a, 1, 0);
    pfi_rng_seed(&b, 1, 1);
    pfi_rng_seed(&c, 1, 0);
    uint64_t xa = pfi_rng_next(&a), xb = pfi_rng_next(&b), xc = pfi_rng_next(&c);
    assert_true(xa != xb);
    assert_true(xa == xc);
    for (int i = 0; i < 1000; i++) {
        double u = pfi_rng_uniform(&a);
        assert_true(u >= 0.0 && u < 1.0);
    }
}

/* pfi_quantiles equals GSL's type-7 quantile of the sorted data, with and without ties. */
static void test_quantiles_match_gsl(void **state)
{
    (void)state;
    pfi_rng r;
    pfi_rng_seed(&r, 3, 3);
    const size_t sizes[] = {1, 2, 3, 10, 101, 1000, 10000};
    const double f[] = {0.0, 0.025, 0.5, 0.975, 1.0};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (int ties = 0; ties < 3; ties++) {
            size_t n = sizes[s];
            double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
            for (size_t i = 0; i < n; i++) {
                double v = pfi_rng_normal(&r);
                /* ties: 1 = few distinct values, 2 = all equal (the slow-Lomuto case) */
                a[i] = ties == 0 ? v : ties == 1 ? floor(v * 2) : 1.5;
                b[i] = a[i];
            }
            double out[5];
            assert_int_equal(pfi_quantiles(a, n, f, out, 5), PFI_OK);
            gsl_sort(b, 1, n);
            /* same definition; GSL writes (1−d)·a + d·b, pfi a + d·(b − a): equal to rounding */
            for (int q = 0; q < 5; q++) {
                double want = gsl_stats_quantile_from_sorted_data(b, 1, n, f[q]);
                assert_true(fabs(out[q] - want) <= 1e-14 * fmax(1.0, fabs(want)));
            }
            free(a);
            free(b);
        }
    }
    double x[2] = {1, 2}, out[2];
    const double bad[2] = {0.6, 0.4};
    assert_int_equal(pfi_quantiles(x, 2, bad, out, 2), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_quantiles(x, 0, f, out, 1), PFI_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ci_coverage_known_normal_case),
        cmocka_unit_test(test_same_seed_same_ci),
        cmocka_unit_test(test_generators_agree),
        cmocka_unit_test(test_no_ci_without_standard_errors),
        cmocka_unit_test(test_undefined_draws_counted),
        cmocka_unit_test(test_excluded_point_flips_in),
        cmocka_unit_test(test_threads_do_not_change_results),
        cmocka_unit_test(test_ci_independent_of_other_groups),
        cmocka_unit_test(test_normal_generator_distribution),
        cmocka_unit_test(test_rng_streams_differ),
        cmocka_unit_test(test_quantiles_match_gsl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
