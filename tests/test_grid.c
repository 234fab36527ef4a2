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
#include "pfi/grid.h"
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

/* A trace: 25 samples at 100 kW, one at 95 kW, one at 80 kW, ten at 60 kW, then 100 kW; one
   a minute from 2025-05-04 14:40:00-07:00 (Unix 1746394800). By hand: the run below 90 kW is
   samples 26..36 (median 60 kW); the ramp starts at sample 24 (the last >= 98 kW), the hold
   at 27 (the first <= 61.2 kW) and ends at 36; back above 90 kW at 37. */
static void test_schedule_trace(void **state)
{
    (void)state;
    char text[4096];
    size_t len = (size_t)snprintf(text, sizeof text, "timestamp,total\n");
    for (int i = 0; i < 45; i++) {
        double p = i < 25 ? 100000 : i == 25 ? 95000 : i == 26 ? 80000 : i <= 36 ? 60000 : 100000;
        len +=
            (size_t)snprintf(text + len, sizeof text - len, "2025-05-04 %02d:%02d:00-07:00,%.1f\n",
                             14 + (40 + i) / 60, (40 + i) % 60, p);
    }
    pfi_ctl_event *ev;
    size_t n;
    pfi_grid_schedule_form form;
    pfi_grid_trace_info ti;
    pfi_diag d;
    assert_int_equal(pfi_grid_schedule_load(text, len, &ev, &n, &form, &ti, &d), PFI_OK);
    assert_int_equal(form, PFI_GRID_FORM_TRACE);
    assert_int_equal(n, 1);
    NEAR(ti.pre_event_w, 100000, 1e-12);
    NEAR(ti.event_w, 60000, 1e-12);
    NEAR(ev[0].reduction, 0.4, 1e-12);
    assert_true(isnan(ev[0].budget_w));
    NEAR(ev[0].start_s, 24 * 60, 1e-12);
    NEAR(ev[0].ramp_s, 3 * 60, 1e-12);
    NEAR(ev[0].end_s, 36 * 60, 1e-12);
    NEAR(ti.recovered_s, 37 * 60, 1e-12);
    NEAR(ti.first_unix_s, 1746394800.0, 1e-15);
    assert_true(pfi_grid_schedule_speed(ev, n, 60));
    NEAR(ev[0].start_s, 24, 1e-12);
    NEAR(ev[0].ramp_s, 3, 1e-12);
    assert_false(pfi_grid_schedule_speed(ev, n, 0));
    pfi_free(ev);
    /* no drop: no event */
    const char *flat = "timestamp,total\n";
    char t2[2048];
    size_t l2 = (size_t)snprintf(t2, sizeof t2, "%s", flat);
    for (int i = 0; i < 30; i++)
        l2 += (size_t)snprintf(t2 + l2, sizeof t2 - l2, "10:%02d,%d\n", i, 1000 + i % 3);
    assert_int_equal(pfi_grid_schedule_load(t2, l2, &ev, &n, NULL, NULL, &d), PFI_ERR_EMPTY);
    /* a clock going backwards */
    const char *back = "timestamp,total\n10:00,5\n09:59,5\n";
    assert_int_equal(pfi_grid_schedule_load(back, strlen(back), &ev, &n, NULL, NULL, &d),
                     PFI_ERR_PARSE);
    assert_non_null(strstr(d.message, "not after"));
    assert_int_equal(d.line, 3);
    /* a day the month does not have is no time (was rolled into March: 2025-03-02 is after
     * 2025-02-28, so the trace read); Feb 29 of a leap year is one */
    const char *feb30 = "timestamp,total\n2025-02-28T10:00:00Z,5\n2025-02-30T10:00:00Z,5\n";
    assert_int_not_equal(pfi_grid_schedule_load(feb30, strlen(feb30), &ev, &n, NULL, NULL, &d),
                         PFI_OK);
    assert_int_equal(d.line, 3);
    /* a fraction of a second is digits ("00.5e3" was read as 500 s past the minute), an
     * offset within ±23:59 ("+99:00" was 99 hours): both refused on their line */
    const char *expo = "timestamp,total\n2025-02-28T10:00:00Z,5\n2025-02-28T10:00:00.5e3Z,5\n";
    assert_int_equal(pfi_grid_schedule_load(expo, strlen(expo), &ev, &n, NULL, NULL, &d),
                     PFI_ERR_PARSE);
    assert_int_equal(d.line, 3);
    assert_non_null(strstr(d.message, "00.5e3"));
    const char *off99 = "timestamp,total\n2025-02-28T10:00:00Z,5\n2025-02-28T10:00:01+99:00,5\n";
    assert_int_equal(pfi_grid_schedule_load(off99, strlen(off99), &ev, &n, NULL, NULL, &d),
                     PFI_ERR_PARSE);
    assert_int_equal(d.line, 3);
    /* 25 minutes from 2024-02-28 23:50 across Feb 29 (no drop: read, no event) */
    l2 = (size_t)snprintf(t2, sizeof t2, "%s", flat);
    for (int i = 0; i < 25; i++)
        l2 += (size_t)snprintf(t2 + l2, sizeof t2 - l2, "2024-02-%02dT%02d:%02d:00Z,1000\n",
                               i < 10 ? 28 : 29, i < 10 ? 23 : 0, i < 10 ? 50 + i : i - 10);
    assert_int_equal(pfi_grid_schedule_load(t2, l2, &ev, &n, NULL, NULL, &d), PFI_ERR_EMPTY);
}

static void test_schedule_timelines(void **state)
{
    (void)state;
    pfi_ctl_event *ev;
    size_t n;
    pfi_grid_schedule_form form;
    pfi_diag d;
    const char *csv = "start_s,end_s,ramp_s,budget_w,reduction_pct,target\n"
                      "700,900,0,52000,,\n0,600,60,,25,\n1000,1200,,,,30%\n";
    assert_int_equal(pfi_grid_schedule_load(csv, strlen(csv), &ev, &n, &form, NULL, &d), PFI_OK);
    assert_int_equal(form, PFI_GRID_FORM_CSV);
    assert_int_equal(n, 3);
    NEAR(ev[0].start_s, 0, 0); /* sorted */
    NEAR(ev[0].reduction, 0.25, 1e-15);
    NEAR(ev[0].ramp_s, 60, 0);
    NEAR(ev[1].budget_w, 52000, 0);
    assert_true(isnan(ev[1].reduction));
    NEAR(ev[2].reduction, 0.3, 1e-15);
    NEAR(ev[2].ramp_s, 0, 0);
    pfi_free(ev);
    const char *js = "{\"events\": [{\"start_s\": 0, \"end_s\": 600, \"ramp_s\": 60, "
                     "\"reduction_pct\": 25}, {\"start_s\": 700, \"end_s\": 800, \"target\": "
                     "\"5200W\"}]}";
    assert_int_equal(pfi_grid_schedule_load(js, strlen(js), &ev, &n, &form, NULL, &d), PFI_OK);
    assert_int_equal(form, PFI_GRID_FORM_JSON);
    assert_int_equal(n, 2);
    NEAR(ev[1].budget_w, 5200, 0);
    pfi_free(ev);
    /* errors name the line and the field */
    const char *two = "start_s,end_s,budget_w,reduction_pct\n0,10,5,\n5,20,,30\n";
    assert_int_equal(pfi_grid_schedule_load(two, strlen(two), &ev, &n, NULL, NULL, &d),
                     PFI_ERR_PARSE);
    assert_non_null(strstr(d.message, "overlap"));
    const char *both = "start_s,end_s,budget_w,reduction_pct\n0,10,5,30\n";
    assert_int_equal(pfi_grid_schedule_load(both, strlen(both), &ev, &n, NULL, NULL, &d),
                     PFI_ERR_PARSE);
    assert_int_equal(d.line, 2);
    assert_non_null(strstr(d.message, "exactly one target"));
    const char *badnum = "start_s,end_s,budget_w\n0,1O,5\n";
    assert_int_equal(pfi_grid_schedule_load(badnum, strlen(badnum), &ev, &n, NULL, NULL, &d),
                     PFI_ERR_PARSE);
    assert_non_null(strstr(d.message, "end_s"));
    const char *col = "start_s,end_s,watts\n0,1,5\n";
    assert_int_equal(pfi_grid_schedule_load(col, strlen(col), &ev, &n, NULL, NULL, &d),
                     PFI_ERR_PARSE);
    assert_non_null(strstr(d.message, "watts"));
    const char *jkey = "[{\"start_s\": 0, \"end_s\": 5, \"budget\": 3}]";
    assert_int_equal(pfi_grid_schedule_load(jkey, strlen(jkey), &ev, &n, NULL, NULL, &d),
                     PFI_ERR_PARSE);
    assert_non_null(strstr(d.message, "budget"));
    const char *jend = "[{\"start_s\": 5, \"end_s\": 5, \"budget_w\": 3}]";
    assert_int_equal(pfi_grid_schedule_load(jend, strlen(jend), &ev, &n, NULL, NULL, &d),
                     PFI_ERR_PARSE);
    assert_non_null(strstr(d.message, "event 1"));
    /* the text form still goes to pfi_ctl_schedule_parse */
    const char *txt = "0 60 30% 10\n";
    assert_int_equal(pfi_grid_schedule_load(txt, strlen(txt), &ev, &n, &form, NULL, &d), PFI_OK);
    assert_int_equal(form, PFI_GRID_FORM_TEXT);
    NEAR(ev[0].ramp_s, 10, 0);
    pfi_free(ev);
}

/* Facility targets by hand: 800 W of non-GPU power, a GPU reference of 7 000 W. */
static void test_facility_target(void **state)
{
    (void)state;
    double b = 6000, r = NAN;
    assert_true(pfi_grid_facility_target(800, 7000, &b, &r));
    NEAR(b, 5200, 0);
    assert_true(isnan(r));
    b = NAN;
    r = 0.3; /* 0.7 × 7 800 − 800 = 4 660 */
    assert_true(pfi_grid_facility_target(800, 7000, &b, &r));
    NEAR(b, 4660, 1e-12);
    b = NAN;
    r = 0.3; /* the reference not known yet: untouched */
    assert_false(pfi_grid_facility_target(800, NAN, &b, &r));
    NEAR(r, 0.3, 0);
    b = 500; /* below the non-GPU part: the GPUs get 1 W */
    r = NAN;
    assert_true(pfi_grid_facility_target(800, 7000, &b, &r));
    NEAR(b, 1, 0);
    b = 6000;
    assert_false(pfi_grid_facility_target(-1, 7000, &b, &r));
    NEAR(b, 6000, 0);
}

/* The demonstration's jobs file and the accounting by hand. */
static void test_tiers(void **state)
{
    (void)state;
    const char *srp = "Model,Performance,Flexibility\n"
                      "ft_llama_8b_p3-c6rr6ijz ,0.939635,Flex 2\n"
                      "infer_llama_8b_48g-hgfu2h87,1,Flex 1\n"
                      "pt_mpt_13b_sm-gnn16mkt ,0.666923,Flex 3\n"
                      "Weighted Performance,0.909560245,\n";
    pfi_grid_tier_job *t;
    size_t n;
    pfi_diag d;
    assert_int_equal(pfi_grid_tiers_parse(srp, strlen(srp), &t, &n, &d), PFI_OK);
    assert_int_equal(n, 3);
    assert_string_equal(t[0].job, "ft_llama_8b_p3-c6rr6ijz");
    assert_int_equal(t[0].tier, 2);
    NEAR(t[0].allowance, 0.25, 0);
    NEAR(t[1].allowance, 0.10, 0);
    NEAR(t[2].allowance, 0.50, 0);
    /* Flex 2, reference 100 tok/s: a first second at 50 tok/s with 3 s of the event left:
       L = 50, R = 100, left to lose 0.25 (100 + 300) − 50 = 50 over 300: floor 1 − 1/6 */
    pfi_grid_tier_account(&t[0], 50, 100, 1, 3);
    NEAR(t[0].floor_frac, 1 - 50.0 / 300, 1e-12);
    NEAR(pfi_grid_tier_performance(&t[0]), 0.5, 1e-12);
    assert_false(pfi_grid_tier_compliant(&t[0]));
    /* then three seconds at the floor: L = 50 + 3 × 100/6 = 100, R = 400: 0.75, compliant */
    for (int k = 0; k < 3; k++)
        pfi_grid_tier_account(&t[0], 100 * (1 - 50.0 / 300), 100, 1, 2 - k);
    NEAR(pfi_grid_tier_performance(&t[0]), 0.75, 1e-12);
    assert_true(pfi_grid_tier_compliant(&t[0]));
    /* outside an event: the allowance as a per-period floor; throughput above the
       reference counts as the reference */
    pfi_grid_tier_account(&t[1], 120, 100, 1, INFINITY);
    NEAR(t[1].floor_frac, 0.9, 1e-12);
    NEAR(pfi_grid_tier_performance(&t[1]), 1, 1e-12);
    /* over budget: floor 1 */
    pfi_grid_tier_account(&t[2], 0, 100, 10, 1);
    NEAR(t[2].floor_frac, 1, 0);
    pfi_free(t);
    const char *own = "job,allowance\na,0.2\n";
    assert_int_equal(pfi_grid_tiers_parse(own, strlen(own), &t, &n, &d), PFI_OK);
    NEAR(t[0].allowance, 0.2, 0);
    assert_int_equal(t[0].tier, 0);
    pfi_free(t);
    const char *twice = "job,tier\na,1\na,2\n";
    assert_int_equal(pfi_grid_tiers_parse(twice, strlen(twice), &t, &n, &d), PFI_ERR_PARSE);
    assert_int_equal(d.line, 3);
    const char *nohdr = "a,1\n";
    assert_int_equal(pfi_grid_tiers_parse(nohdr, strlen(nohdr), &t, &n, &d), PFI_ERR_PARSE);
    /* the file's shape: a short or long row, a column named twice (the first one won) */
    const char *shortrow = "job,tier,note\na,1,x\nb,2\n";
    assert_int_equal(pfi_grid_tiers_parse(shortrow, strlen(shortrow), &t, &n, &d), PFI_ERR_PARSE);
    assert_int_equal(d.line, 3);
    assert_non_null(strstr(d.message, "expected 3 fields as in the header, found 2"));
    const char *longrow = "job,tier\na,1,9\n";
    assert_int_equal(pfi_grid_tiers_parse(longrow, strlen(longrow), &t, &n, &d), PFI_ERR_PARSE);
    assert_int_equal(d.line, 2);
    const char *dupcol = "job,tier,tier\na,1,2\n";
    assert_int_equal(pfi_grid_tiers_parse(dupcol, strlen(dupcol), &t, &n, &d), PFI_ERR_PARSE);
    assert_non_null(strstr(d.message, "column 'tier' appears twice in the header"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fair_headroom_name),
        cmocka_unit_test(test_fair_headroom_same_fraction),
        cmocka_unit_test(test_fair_headroom_tier),
        cmocka_unit_test(test_curve_bank),
        cmocka_unit_test(test_schedule_trace),
        cmocka_unit_test(test_schedule_timelines),
        cmocka_unit_test(test_facility_target),
        cmocka_unit_test(test_tiers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
