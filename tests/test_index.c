/*
 * PFI point estimates: the three definitions on hand-computed cases, every exclusion rule,
 * undefined PFIs, merged duplicate caps, labels.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pfi/index.h"
#include "pfi/runs.h"

#define ALL (PFI_RUN_CAP | PFI_RUN_POWER | PFI_RUN_THROUGHPUT)

/* A run with cap, power and throughput valid. */
static pfi_run run(long line, double cap, double power, double tput)
{
    return (pfi_run){
        .line = line, .cap_w = cap, .power_w = power, .throughput = tput, .valid = ALL};
}

/* A group over runs (borrowed), sorted as the reader sorts them: cap descending. */
static pfi_group group_of(pfi_run *runs, size_t n)
{
    static const char *const names[] = {"job"};
    static char value[] = "g";
    static char *values[] = {value};
    return (pfi_group){
        .n_key = 1, .key_names = names, .key_values = values, .runs = runs, .n_runs = n};
}

static pfi_result compute(pfi_run *runs, size_t n)
{
    pfi_options o;
    pfi_options_init(&o);
    pfi_group g = group_of(runs, n);
    pfi_result r;
    assert_int_equal(pfi_group_compute(&g, &o, &r), PFI_OK);
    return r;
}

static void assert_close(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fabs(want))) {
        print_error("got %.17g, want %.17g (rel %.1e)\n", got, want, rel);
        fail();
    }
}

/* Reference 600 W / 100; 450 W / 90 (x .25, y .1); 300 W / 70 (x .5, y .3). By hand:
 * ratio = (2.5 + 5/3)/2; area: trapezoids of t − p over p = .5, .75, 1 give 0.0625, divided
 * by (1 − .5)²/2 = 0.125 → 0.5; CE from the logs (SciPy-free arithmetic, see the comment). */
static void test_three_definitions(void **state)
{
    (void)state;
    pfi_run runs[] = {run(2, 700, 600, 100), run(3, 500, 450, 90), run(4, 300, 300, 70)};
    pfi_result r = compute(runs, 3);
    assert_true(r.has_reference);
    assert_close(r.reference.cap_w, 700, 0);
    assert_close(r.ratio, 2.0833333333333335, 1e-15);
    assert_close(r.area, 0.5, 1e-15);
    /* 1 − (ln .75 ln .9 + ln .5 ln .7)/(ln² .75 + ln² .5), evaluated with Python's math */
    assert_close(r.ce, 0.5072235973875965, 1e-14);
    assert_int_equal(r.n_used, 2);
    assert_int_equal(r.n_ratio, 2);
    assert_int_equal(r.label, PFI_LABEL_INELASTIC);
    assert_null(r.undefined_reason);
    pfi_result_clear(&r);
}

/* Each rule: drew more than the reference, does not bind, no throughput loss, missing data. */
static void test_exclusion_rules(void **state)
{
    (void)state;
    pfi_run runs[] = {
        run(2, 700, 600, 100), run(3, 650, 610, 100), /* x < 0: power_above_reference */
        run(4, 600, 594, 99),                         /* x = 0.01 < 0.02: cap_not_binding */
        run(5, 500, 480, 101), /* x = 0.2, y < 0: no_throughput_loss (ratio only) */
        run(6, 400, 420, 80),  /* x = 0.3, y = 0.2: used */
        run(7, 300, 0, 0),     /* power missing (flag cleared below) */
        run(8, 250, 300, 0),   /* throughput missing */
        run(9, 0, 300, 60),    /* cap missing */
    };
    runs[5].valid &= ~(unsigned)PFI_RUN_POWER;
    runs[6].valid &= ~(unsigned)PFI_RUN_THROUGHPUT;
    runs[7].valid &= ~(unsigned)PFI_RUN_CAP;
    pfi_result r = compute(runs, 8);
    assert_int_equal(r.n_points, 7);
    pfi_exclusion want[] = {PFI_EXCL_POWER_ABOVE_REFERENCE,
                            PFI_EXCL_CAP_NOT_BINDING,
                            PFI_EXCL_NO_THROUGHPUT_LOSS,
                            PFI_EXCL_NONE,
                            PFI_EXCL_MISSING_POWER,
                            PFI_EXCL_MISSING_THROUGHPUT,
                            PFI_EXCL_MISSING_CAP};
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(r.points[i].exclusion, want[i]);
    /* missing values stay missing: never zero */
    assert_true(isnan(r.points[4].power_w));
    assert_true(isnan(r.points[5].throughput));
    assert_true(isnan(r.points[6].cap_w));
    assert_int_equal(r.n_used, 2);
    assert_int_equal(r.n_ratio, 1);
    assert_close(r.ratio, 0.3 / 0.2, 1e-15);
    /* the no-loss point is in the area: p = .8, t = 1.01 and p = .7, t = .8 */
    double num = 0.1 * ((0.8 - 0.7) + (1.01 - 0.8)) / 2 + 0.2 * ((1.01 - 0.8) + 0.0) / 2;
    assert_close(r.area, num / (0.3 * 0.3 / 2), 1e-12);
    assert_string_equal(pfi_exclusion_name(r.points[0].exclusion), "power_above_reference");
    assert_string_equal(pfi_exclusion_name(r.points[1].exclusion), "cap_not_binding");
    assert_string_equal(pfi_exclusion_name(r.points[2].exclusion), "no_throughput_loss");
    pfi_result_clear(&r);
}

static void test_undefined_when_nothing_binds(void **state)
{
    (void)state;
    pfi_run runs[] = {run(2, 300, 100, 10), run(3, 250, 99.5, 9), run(4, 200, 101, 8)};
    pfi_result r = compute(runs, 3);
    assert_true(isnan(r.ratio));
    assert_true(isnan(r.area));
    assert_true(isnan(r.ce));
    assert_int_equal(r.label, PFI_LABEL_UNDEFINED);
    assert_non_null(r.undefined_reason);
    assert_non_null(strstr(r.undefined_reason, "binds"));
    pfi_result_clear(&r);
}

static void test_undefined_when_no_loss(void **state)
{
    (void)state;
    pfi_run runs[] = {run(2, 300, 100, 10), run(3, 200, 70, 10.5)};
    pfi_result r = compute(runs, 2);
    assert_true(isnan(r.ratio));
    assert_false(isnan(r.area)); /* the point binds: area and CE are defined */
    assert_false(isnan(r.ce));
    assert_non_null(strstr(r.undefined_reason, "lost throughput"));
    pfi_result_clear(&r);
}

static void test_group_of_one_run(void **state)
{
    (void)state;
    pfi_run runs[] = {run(2, 300, 100, 10)};
    pfi_result r = compute(runs, 1);
    assert_true(r.has_reference);
    assert_int_equal(r.n_points, 0);
    assert_true(isnan(r.ratio));
    assert_non_null(strstr(r.undefined_reason, "only one cap"));
    pfi_result_clear(&r);
}

static void test_no_valid_reference(void **state)
{
    (void)state;
    pfi_run runs[] = {run(2, 300, 100, 10)};
    runs[0].valid = PFI_RUN_CAP;
    pfi_result r = compute(runs, 1);
    assert_false(r.has_reference);
    assert_int_equal(r.n_points, 1);
    assert_int_equal(r.points[0].exclusion, PFI_EXCL_MISSING_POWER);
    assert_true(isnan(r.ratio));
    pfi_result_clear(&r);
}

/* Two runs at one cap are one point: mean power and throughput, SEs combined. */
static void test_duplicate_caps_merge(void **state)
{
    (void)state;
    pfi_run runs[] = {run(2, 700, 600, 100), run(5, 700, 620, 104), run(3, 400, 300, 60),
                      run(4, 400, 340, 64)};
    for (size_t i = 0; i < 4; i++) {
        runs[i].power_se_w = 3.0;
        runs[i].throughput_se = 4.0;
        runs[i].valid |= PFI_RUN_POWER_SE | PFI_RUN_THROUGHPUT_SE;
    }
    pfi_result r = compute(runs, 4);
    assert_int_equal(r.reference.n_runs, 2);
    assert_close(r.reference.power_w, 610, 1e-15);
    assert_close(r.reference.throughput, 102, 1e-15);
    assert_close(r.reference.power_se_w, sqrt(18.0) / 2, 1e-15);
    assert_int_equal(r.n_points, 1);
    assert_int_equal(r.points[0].n_runs, 2);
    assert_close(r.ratio, ((610.0 - 320) / 610) / ((102.0 - 62) / 102), 1e-14);
    pfi_result_clear(&r);
}

/* The reference is the highest cap even when another run drew more power. */
static void test_reference_is_highest_cap(void **state)
{
    (void)state;
    pfi_run runs[] = {run(2, 300, 250, 10), run(3, 280, 260, 10.1), run(4, 150, 150, 8)};
    pfi_result r = compute(runs, 3);
    assert_close(r.reference.cap_w, 300, 0);
    assert_int_equal(r.points[0].exclusion, PFI_EXCL_POWER_ABOVE_REFERENCE);
    assert_close(r.ratio, (100.0 / 250) / (2.0 / 10), 1e-14);
    pfi_result_clear(&r);
}

static void test_labels_without_ci(void **state)
{
    (void)state;
    /* x = .3, y = .3 → PFI 1: linear; y = .6 → .5: elastic */
    pfi_run lin[] = {run(2, 300, 100, 10), run(3, 200, 70, 7)};
    pfi_result r = compute(lin, 2);
    assert_close(r.ratio, 1.0, 1e-12);
    assert_int_equal(r.label, PFI_LABEL_LINEAR);
    pfi_result_clear(&r);
    pfi_run el[] = {run(2, 300, 100, 10), run(3, 200, 70, 4)};
    r = compute(el, 2);
    assert_int_equal(r.label, PFI_LABEL_ELASTIC);
    assert_string_equal(pfi_label_name(r.label), "elastic");
    pfi_result_clear(&r);
}

static void test_options_validated(void **state)
{
    (void)state;
    pfi_run runs[] = {run(2, 300, 100, 10)};
    pfi_group g = group_of(runs, 1);
    pfi_options o;
    pfi_options_init(&o);
    o.x_min = -0.1;
    pfi_result r;
    assert_int_equal(pfi_group_compute(&g, &o, &r), PFI_ERR_INVALID_ARGUMENT);
    pfi_result_clear(&r);
    pfi_result_clear(NULL);
}

static void test_formula_functions(void **state)
{
    (void)state;
    double x[] = {0.25, 0.5}, y[] = {0.1, 0.3};
    assert_close(pfi_index_ratio(x, y, 2), 2.0833333333333335, 1e-15);
    assert_true(isnan(pfi_index_ratio(x, y, 0)));
    double p[] = {1.0, 0.5, 0.75}, t[] = {1.0, 0.7, 0.9}, work[6], out;
    assert_int_equal(pfi_index_area(p, t, 3, work, &out), PFI_OK);
    assert_close(out, 0.5, 1e-15);
    /* proportional throughput: area 0 and CE 0; throughput independent of power: 1 and 1 */
    double pp[] = {1.0, 0.4}, tp[] = {1.0, 0.4}, tf[] = {1.0, 1.0};
    assert_int_equal(pfi_index_area(pp, tp, 2, work, &out), PFI_OK);
    assert_close(out + 1.0, 1.0, 1e-15);
    assert_int_equal(pfi_index_area(pp, tf, 2, work, &out), PFI_OK);
    assert_close(out, 1.0, 1e-15);
    assert_int_equal(pfi_index_ce(pp + 1, tp + 1, 1, &out), PFI_OK);
    assert_close(out + 1.0, 1.0, 1e-15);
    assert_int_equal(pfi_index_ce(pp + 1, tf + 1, 1, &out), PFI_OK);
    assert_close(out, 1.0, 1e-15);
    /* invalid: no reference at p = 1, p out of range, t <= 0 */
    double bad_p[] = {0.5, 0.7};
    assert_int_equal(pfi_index_area(bad_p, tp, 2, work, &out), PFI_ERR_INVALID_ARGUMENT);
    assert_true(isnan(out));
    double zero_t[] = {0.0};
    assert_int_equal(pfi_index_ce(pp + 1, zero_t, 1, &out), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_index_ce(pp, tp, 0, &out), PFI_ERR_INVALID_ARGUMENT);
}

/* Reference 300 W / 100; 250 W / 110 (above the reference: y < 0, in area and CE only); 200 W /
 * 90. By hand: p = 2/3, 5/6, 1 and t = .9, 1.1, 1; trapezoids of t − p: (.2333 + .2667)/2 · 1/6
 * + (.2667 + 0)/2 · 1/6 = .063889, over (1/3)²/2 = .055556: area 1.15 > 1: noted. The same
 * group with 250 W / 95 is not. */
static void test_throughput_rises_noted(void **state)
{
    (void)state;
    pfi_run runs[3] = {run(2, 300, 300, 100), run(3, 250, 250, 110), run(4, 200, 200, 90)};
    pfi_result r = compute(runs, 3);
    assert_close(r.area, 0.0638888888888889 / 0.0555555555555556, 1e-9);
    assert_true(r.notes & PFI_NOTE_THROUGHPUT_RISES);
    assert_string_equal(pfi_note_text(PFI_NOTE_THROUGHPUT_RISES), "throughput_rises_under_cap");
    pfi_result_clear(&r);
    runs[1] = run(3, 250, 250, 95);
    r = compute(runs, 3);
    assert_int_equal(r.notes, 0);
    pfi_result_clear(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_definitions),
        cmocka_unit_test(test_exclusion_rules),
        cmocka_unit_test(test_undefined_when_nothing_binds),
        cmocka_unit_test(test_undefined_when_no_loss),
        cmocka_unit_test(test_group_of_one_run),
        cmocka_unit_test(test_no_valid_reference),
        cmocka_unit_test(test_duplicate_caps_merge),
        cmocka_unit_test(test_reference_is_highest_cap),
        cmocka_unit_test(test_labels_without_ci),
        cmocka_unit_test(test_throughput_rises_noted),
        cmocka_unit_test(test_options_validated),
        cmocka_unit_test(test_formula_functions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
