/*
 * Tests of the grid-event pieces: the fair-headroom strategy (the Phoenix demonstration's
 * "DVFS, Fair": every job sheds the same fraction of its headroom above its tier's power),
 * with values computed by hand in the comments.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pfi/allocate.h"
#include "pfi/joblib.h"
#include "pfi/simulate.h"
#include "stats/curve_infer.h"

#define NEAR(a, b, tol)                                                                            \
    assert_true(fabs((double)(a) - (double)(b)) <= (tol) * (1.0 + fabs((double)(b))))

/* Two jobs with power = throughput = cap (W, tokens/s): A on caps 100..400, B on 200..400. */
static const size_t off[] = {0, 4, 7};
static const double cap[] = {100, 200, 300, 400, 200, 300, 400};

static pfi_alloc_jobs two_jobs(const double *floor_frac)
{
    pfi_alloc_jobs J;
    memset(&J, 0, sizeof J);
    J.n = 2;
    J.offset = off;
    J.cap_w = cap;
    J.power_w = cap;
    J.tput_tok_s = cap;
    J.floor_frac = floor_frac;
    return J;
}

static void run(const pfi_alloc_jobs *J, pfi_strategy s, double budget_w, pfi_alloc_result *r)
{
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    o.strategy = s;
    o.budget_w = budget_w;
    assert_int_equal(pfi_allocate(J, &o, r, NULL), PFI_OK);
    assert_true(r->feasible);
}

static void test_fair_headroom_name(void **state)
{
    (void)state;
    pfi_strategy s;
    assert_int_equal(pfi_strategy_parse("fair-headroom", &s), PFI_OK);
    assert_int_equal(s, PFI_STRATEGY_FAIR_HEADROOM);
    assert_string_equal(pfi_strategy_name(PFI_STRATEGY_FAIR_HEADROOM), "fair-headroom");
}

static void test_fair_headroom_same_fraction(void **state)
{
    (void)state;
    pfi_alloc_jobs J = two_jobs(NULL);
    pfi_alloc_result r;
    assert_int_equal(pfi_alloc_result_init(&r, 2), PFI_OK);
    /* Σ top 800 W, budget 500: 300 W to shed over headroom 300 + 200 = 500, f = 0.6:
       A sheds 180 W (to 220 W), B 120 W (to 280 W). */
    run(&J, PFI_STRATEGY_FAIR_HEADROOM, 500, &r);
    NEAR(r.power_w[0], 220, 1e-9);
    NEAR(r.power_w[1], 280, 1e-9);
    NEAR(r.total_power_w, 500, 1e-9);
    /* equal sheds 37.5 % of each top power instead: 150 W each (250 W both) */
    run(&J, PFI_STRATEGY_EQUAL, 500, &r);
    NEAR(r.power_w[0], 250, 1e-9);
    NEAR(r.power_w[1], 250, 1e-9);
    /* budget at the lowest power: every job at its bottom (f = 1) */
    run(&J, PFI_STRATEGY_FAIR_HEADROOM, 300, &r);
    NEAR(r.power_w[0], 100, 1e-9);
    NEAR(r.power_w[1], 200, 1e-9);
    /* budget not binding: every job at its maximum */
    run(&J, PFI_STRATEGY_FAIR_HEADROOM, 900, &r);
    NEAR(r.power_w[0], 400, 1e-9);
    NEAR(r.power_w[1], 400, 1e-9);
    pfi_alloc_result_clear(&r);
}

static void test_fair_headroom_tier(void **state)
{
    (void)state;
    /* B keeps 90 % of its throughput (its tier): its power is held at or above 360 W, its
       headroom is 40 W; need 300 W of 300 + 40: f = 300/340, A sheds 264.706 W (to
       135.294 W), B 35.294 W (to 364.706 W). */
    double floor_frac[] = {NAN, 0.9};
    pfi_alloc_jobs J = two_jobs(floor_frac);
    pfi_alloc_result r;
    assert_int_equal(pfi_alloc_result_init(&r, 2), PFI_OK);
    run(&J, PFI_STRATEGY_FAIR_HEADROOM, 500, &r);
    NEAR(r.power_w[0], 400 - 300.0 * 300 / 340, 1e-9);
    NEAR(r.power_w[1], 400 - 300.0 * 40 / 340, 1e-9);
    assert_true(r.tput_tok_s[1] >= 360 * (1 - 1e-12));
    pfi_alloc_result_clear(&r);
}

/* Three measured curves (power W, throughput) of PFIs 1.5, 2 and 3; hand values below. */
static void test_curve_bank(void **state)
{
    (void)state;
    const size_t co[] = {0, 3, 6, 9};
    const double pw[] = {100, 200, 400, 100, 300, 400, 200, 200, 400};
    const double tp[] = {20, 60, 100, 40, 90, 100, 50, 50, 100};
    const double pfi[] = {1.5, 2.0, 3.0};
    curve_bank b;
    assert_int_equal(curve_bank_build(&b, 3, co, pw, tp, pfi), PFI_OK);
    /* curve 2's second point does not rise in power: left out */
    assert_int_equal(b.offset[3] - b.offset[2], 2);
    double p[] = {0.125, 0.25, 0.5, 0.75, 1.0}, t[5];
    /* PFI 1.75 between curves 0 and 1, weight 1/2 each. Curve 0 at p: 0.125 -> 0.1 (below
       its lowest point 0.25 -> 0.2, in proportion), 0.25 -> 0.2, 0.5 -> 0.6, 0.75 -> 0.8;
       curve 1 (0.25 -> 0.4, 0.75 -> 0.9): 0.2, 0.4, 0.65, 0.9. Means: 0.15, 0.3, 0.625,
       0.85, 1. */
    assert_int_equal(curve_bank_infer(&b, b.n, 1.75, p, 5, t), 2);
    const double want[] = {0.15, 0.3, 0.625, 0.85, 1.0};
    for (int i = 0; i < 5; i++)
        NEAR(t[i], want[i], 1e-12);
    /* curve 1 excluded: curves 0 (1.5) and 2 (3.0) bracket 2.0, weight of 2 = 1/3; curve 2
       at p = 0.5 is 0.5 (its only point below 1 is (0.5, 0.5)): 2/3 0.6 + 1/3 0.5 */
    assert_int_equal(curve_bank_infer(&b, 1, 2.0, p + 2, 1, t), 2);
    NEAR(t[0], 2.0 / 3 * 0.6 + 0.5 / 3, 1e-12);
    /* above the bank's range: the highest curve alone; below: the lowest */
    assert_int_equal(curve_bank_infer(&b, b.n, 9.0, p + 2, 1, t), 1);
    NEAR(t[0], 0.5, 1e-12);
    assert_int_equal(curve_bank_infer(&b, b.n, 1.0, p + 2, 1, t), 1);
    NEAR(t[0], 0.6, 1e-12);
    /* one curve, excluded: nothing usable */
    curve_bank one;
    assert_int_equal(curve_bank_build(&one, 1, co, pw, tp, pfi), PFI_OK);
    assert_int_equal(curve_bank_infer(&one, 0, 1.5, p, 5, t), 0);
    curve_bank_clear(&one);
    curve_bank_clear(&b);
    assert_null(b.offset);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fair_headroom_name),
        cmocka_unit_test(test_fair_headroom_same_fraction),
        cmocka_unit_test(test_fair_headroom_tier),
        cmocka_unit_test(test_curve_bank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
