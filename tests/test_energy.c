/*
 * Energy of a run: time gaps (pfi_telemetry_gaps) never integrated across, energy missing when it
 * cannot be computed, partial energy labelled, an energy counter that disagrees with the
 * measured power not used. Inputs: tests/data/energy (damaged files from a user's report,
 * and one made here), the field-report cases, and small streams written below. Expected
 * values are hand computed in the comments.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cmocka_compat.h"

#include "pfi/reduce.h"
#include "pfi/telemetry.h"

#if !defined(PFI_TEST_DATA) || !defined(PFI_CASES)
#error "PFI_TEST_DATA and PFI_CASES are set by tests/CMakeLists.txt"
#endif

/* Reads one file (or an in-memory text when text != NULL), derives, summarises, reduces. */
static pfi_telemetry *load(const char *path, const char *text, double interval, pfi_reduced *red)
{
    pfi_telemetry_options o = {.keep_series = true, .interval_s = interval};
    pfi_telemetry *tm = NULL;
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    if (text != NULL) {
        FILE *f = fmemopen((void *)text, strlen(text), "rb");
        assert_non_null(f);
        assert_int_equal(pfi_telemetry_read_stream(tm, f, "mem", PFI_TELEMETRY_AUTO, NULL), PFI_OK);
        fclose(f);
    } else {
        assert_int_equal(pfi_telemetry_read_file(tm, path, PFI_TELEMETRY_AUTO, NULL), PFI_OK);
    }
    assert_int_equal(pfi_telemetry_derive_power_from_energy(tm), PFI_OK);
    pfi_telemetry_summarize(tm);
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    assert_int_equal(pfi_reduce_power(tm, &ro, red), PFI_OK);
    return tm;
}

static const pfi_telemetry_series *ser(const pfi_telemetry *tm, size_t entity, const char *field)
{
    long f = pfi_telemetry_field_find(tm, field);
    assert_true(f >= 0);
    const pfi_telemetry_series *s = pfi_telemetry_series_get(tm, entity, (size_t)f);
    assert_non_null(s);
    return s;
}

static size_t notes_with(const pfi_telemetry *tm, const char *needle)
{
    size_t n = 0;
    for (size_t i = 0; i < tm->n_notes; i++)
        n += strstr(tm->notes[i], needle) != NULL;
    return n;
}

/* The rule: a step longer than 10x the median step is a gap; 10x itself is not. */
static void gap_rule(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t gaps;
        double energy_j; /* 100 W everywhere: 100 x seconds integrated */
    } cases[] = {
        {"#Time gpu pwr\n#HH:MM:SS Idx W\n 10:00:00 0 100\n 10:00:01 0 100\n"
         " 10:00:02 0 100\n 10:00:12 0 100\n 10:00:13 0 100\n",
         0, 1300},
        {"#Time gpu pwr\n#HH:MM:SS Idx W\n 10:00:00 0 100\n 10:00:01 0 100\n"
         " 10:00:02 0 100\n 10:00:13 0 100\n 10:00:14 0 100\n",
         1, 300},
        /* two steps: the lower median (1 s), so the long one is a gap */
        {"#Time gpu pwr\n#HH:MM:SS Idx W\n 10:00:00 0 100\n 10:00:01 0 100\n"
         " 10:10:01 0 100\n",
         1, 100},
        /* one step is its own median: never a gap */
        {"#Time gpu pwr\n#HH:MM:SS Idx W\n 10:00:00 0 100\n 10:10:00 0 100\n", 0, 60000},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        pfi_reduced red;
        pfi_telemetry *tm = load(NULL, cases[k].text, 0, &red);
        const pfi_telemetry_series *p = ser(tm, 0, "power_w");
        double step, longest;
        assert_int_equal(pfi_telemetry_gaps(p, &step, &longest), cases[k].gaps);
        assert_double_equal(pfi_telemetry_integrate(p, NULL), cases[k].energy_j, 1e-9);
        assert_double_equal(red.energy_j, cases[k].energy_j, 1e-9);
        assert_int_equal(!!(red.flags & PFI_RED_TIME_GAP), cases[k].gaps > 0);
        assert_int_equal(notes_with(tm, "time gap"), cases[k].gaps > 0);
        pfi_telemetry_destroy(tm);
    }
}

/* dmon -o DT, 1 s, with a 10-minute hole: 241 243 240 | 244 242 W.
 * (241+243)/2 + (243+240)/2 + (244+242)/2 = 242 + 241.5 + 243 = 726.5 J over 3 s. */
static void gap_dmon(void **state)
{
    (void)state;
    pfi_reduced red;
    pfi_telemetry *tm = load(PFI_TEST_DATA "/energy/dmon_gap.txt", NULL, 0, &red);
    const pfi_telemetry_series *p = ser(tm, 0, "power_w");
    double step, longest, cov;
    assert_int_equal(pfi_telemetry_gaps(p, &step, &longest), 1);
    assert_double_equal(step, 1.0, 1e-9);
    assert_double_equal(longest, 601.0, 1e-9);
    assert_double_equal(pfi_telemetry_integrate(p, &cov), 726.5, 1e-9);
    assert_double_equal(cov, 3.0, 1e-9);
    assert_int_equal(notes_with(tm, "gpu0: power_w: 1 time gap longer than 10x the median "
                                    "sampling step (1 s), longest 601 s"),
                     1);
    assert_double_equal(red.energy_j, 726.5, 1e-9);
    assert_string_equal(red.energy_method, "power-trapezoid");
    assert_true(red.flags & PFI_RED_TIME_GAP);
    assert_true(red.flags & PFI_RED_ENERGY_PARTIAL);
    assert_non_null(strstr(red.energy_note, "partial: gpu0 covers 3 of 604 s"));
    /* The job power is untouched: the 5 samples are 5 complete bins. */
    assert_int_equal(red.n_complete, 5);
    assert_int_equal(red.n_incomplete, 0);
    pfi_telemetry_destroy(tm);
}

/* A backwards jump (new segment) followed by a forward jump of 600 s back to the clock:
 * 242 J + 243 J; the 600 s step is a gap, not 600 x 242 J. */
static void gap_after_backwards_jump(void **state)
{
    (void)state;
    pfi_reduced red;
    pfi_telemetry *tm = load(PFI_TEST_DATA "/energy/dmon_back.txt", NULL, 0, &red);
    assert_int_equal(pfi_telemetry_gaps(ser(tm, 0, "power_w"), NULL, NULL), 1);
    assert_double_equal(red.energy_j, 485.0, 1e-9);
    assert_true(red.flags & PFI_RED_TIME_GAP);
    pfi_telemetry_destroy(tm);
}

/* 8 GPUs at 0.1 s with a 5-minute hole: 5947.2 J (numpy, per GPU trapezoids within the
 * runs of 0.1 s steps), where 742392.6 J came from integrating across. */
static void gap_csv_8gpu(void **state)
{
    (void)state;
    pfi_reduced red;
    pfi_telemetry *tm = load(PFI_TEST_DATA "/energy/csvgap.csv", NULL, 0, &red);
    assert_int_equal(tm->n_entities, 8);
    assert_double_equal(red.energy_j, 5947.2, 1e-3); /* epoch-s doubles: ~1e-7 s steps */
    assert_int_equal(notes_with(tm, "time gap longer than"), 8); /* once per series */
    assert_true(red.flags & PFI_RED_TIME_GAP);
    assert_double_equal(red.power.mean, 4926.0, 1e-9); /* as before: bins in a gap are empty */
    assert_int_equal(red.n_incomplete, 0);
    pfi_telemetry_destroy(tm);
}

/* Prometheus scrapes with sample timestamps: 300 W and a counter that keeps counting through
 * a 600 s hole. Counter energy: 3 steps of 1 s x 300 J = 900 J (not 180900 J). */
static void gap_counter(void **state)
{
    (void)state;
    pfi_telemetry_options o = {.keep_series = true, .host = "n1"};
    pfi_telemetry *tm = NULL;
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    static const long ts[] = {0, 1, 2, 602, 603};
    for (size_t i = 0; i < 5; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 300 %ld\n"
                 "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-a\"} %ld %ld\n",
                 ts[i] * 1000 + 1700000000000L, 1000000 + ts[i] * 300000,
                 ts[i] * 1000 + 1700000000000L);
        FILE *f = fmemopen(text, strlen(text), "rb");
        assert_int_equal(pfi_telemetry_read_stream(tm, f, "scrape", PFI_TELEMETRY_PROM, NULL),
                         PFI_OK);
        fclose(f);
    }
    assert_false(tm->time_nominal);
    assert_int_equal(pfi_telemetry_derive_power_from_energy(tm), PFI_OK);
    pfi_telemetry_summarize(tm);
    const pfi_telemetry_series *e = ser(tm, 0, "energy_mj");
    double cov;
    assert_int_equal(pfi_telemetry_gaps(e, NULL, NULL), 1);
    assert_double_equal(pfi_telemetry_counter_delta(e, &cov, NULL), 900000.0, 1e-6);
    assert_double_equal(cov, 3.0, 1e-9);
    /* The power derived from the counter has no sample averaged over the hole. */
    const pfi_telemetry_series *pe = ser(tm, 0, "power_energy_w");
    for (size_t i = 0; i < pe->n; i++)
        assert_double_equal(pe->value[i], 300.0, 1e-9);
    assert_int_equal(notes_with(tm, "energy_mj: 1 time gap"), 1);
    pfi_reduced red;
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    assert_int_equal(pfi_reduce_power(tm, &ro, &red), PFI_OK);
    assert_string_equal(red.energy_method, "counter");
    assert_double_equal(red.energy_j, 900.0, 1e-9);
    assert_true(red.flags & PFI_RED_TIME_GAP);
    assert_true(red.flags & PFI_RED_ENERGY_PARTIAL);
    pfi_telemetry_destroy(tm);
}

/* Energy that cannot be computed is missing (NaN, with the reason), never 0 J. */
static void energy_unavailable(void **state)
{
    (void)state;
    static const struct {
        const char *path, *why;
    } cases[] = {
        /* every segment holds one sample (each GPU: two samples, the clock went back) */
        {PFI_TEST_DATA "/energy/backwards.csv", "no two consecutive power samples"},
        {PFI_CASES "/case-02/units.csv", "no two consecutive power samples"},
        {PFI_CASES "/case-14/new_exporter_hostname.prom", "no two consecutive power samples"},
        /* a GPU without any power: the job's energy is unknown, not the others' sum */
        {PFI_CASES "/case-01/new_driver_na.csv", "gpu0 has no power samples"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        pfi_reduced red;
        pfi_telemetry *tm = load(cases[k].path, NULL, 0, &red);
        if (!isnan(red.energy_j))
            fail_msg("%s: energy %.17g J, want unknown", cases[k].path, red.energy_j);
        assert_string_equal(red.energy_method, "");
        assert_non_null(strstr(red.energy_note, cases[k].why));
        pfi_telemetry_destroy(tm);
    }
}

/* A GPU missing part of the run: the energy is partial and says so. case-04: gpu1 has 4 of
 * 5 samples (the third missing), 1 s apart: it covers 2 of 4 s. */
static void energy_partial(void **state)
{
    (void)state;
    pfi_reduced red;
    pfi_telemetry *tm = load(PFI_CASES "/case-04/dmon_repeated_header.txt", NULL, 0, &red);
    assert_false(isnan(red.energy_j));
    assert_true(red.flags & PFI_RED_ENERGY_PARTIAL);
    assert_false(red.flags & PFI_RED_TIME_GAP);
    assert_string_equal(red.energy_note, "partial: gpu1 covers 2 of 4 s");
    pfi_telemetry_destroy(tm);
    /* case-03: gpu1 is lost after 1.002 s of a 4.008 s run */
    tm = load(PFI_CASES "/case-03/query_loop.csv", NULL, 0, &red);
    assert_true(red.flags & PFI_RED_ENERGY_PARTIAL);
    assert_string_equal(red.energy_note, "partial: gpu1 covers 1.002 of 4.008 s");
    pfi_telemetry_destroy(tm);
    /* complete: no flag, no note */
    tm = load(PFI_CASES "/case-07/dcgmi_dmon_power_energy.txt", NULL, 1.0, &red);
    assert_false(red.flags & (PFI_RED_ENERGY_PARTIAL | PFI_RED_TIME_GAP));
    assert_string_equal(red.energy_note, "");
    pfi_telemetry_destroy(tm);
    /* the telemetry lacks a GPU of the job: unknown */
    pfi_telemetry_options o = {.keep_series = true, .interval_s = 1.0};
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    assert_int_equal(pfi_telemetry_read_file(tm, PFI_CASES "/case-07/dcgmi_dmon_power_energy.txt",
                                             PFI_TELEMETRY_AUTO, NULL),
                     PFI_OK);
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    ro.gpus = 4;
    assert_int_equal(pfi_reduce_power(tm, &ro, &red), PFI_OK);
    assert_true(isnan(red.energy_j));
    assert_string_equal(red.energy_note, "the telemetry has 2 of the job's 4 GPUs");
    pfi_telemetry_destroy(tm);
}

/* The counter says GPU 0 drew 30 W where 300 W was measured: not used; the trapezoids give
 * 2 GPUs x 300 W x 4 s = 2400 J (the counter would have said 120 + 1200 = 1320 J). */
static void counter_implausible(void **state)
{
    (void)state;
    pfi_reduced red;
    pfi_telemetry *tm = load(PFI_TEST_DATA "/energy/dcgmi_counter_low.txt", NULL, 1.0, &red);
    assert_string_equal(red.energy_method, "power-trapezoid");
    assert_double_equal(red.energy_j, 2400.0, 1e-9);
    assert_non_null(strstr(red.energy_note, "the energy counter disagrees with the measured "
                                            "power (GPU 0: 30 W from the counter, 300 W "
                                            "measured)"));
    pfi_telemetry_destroy(tm);
    /* over 2x the measured power: not used either */
    const char high[] = "#Entity POWER TOTEC\nID\nGPU 0 100 0\nGPU 0 100 500000\n"
                        "GPU 0 100 1000000\n";
    tm = load(NULL, high, 1.0, &red);
    assert_string_equal(red.energy_method, "power-trapezoid");
    assert_double_equal(red.energy_j, 200.0, 1e-9);
    assert_non_null(strstr(red.energy_note, "500 W from the counter, 100 W measured"));
    pfi_telemetry_destroy(tm);
    /* within 0.5x..2x: the counter (150 W vs 100 W measured) */
    const char ok[] = "#Entity POWER TOTEC\nID\nGPU 0 100 0\nGPU 0 100 150000\n"
                      "GPU 0 100 300000\n";
    tm = load(NULL, ok, 1.0, &red);
    assert_string_equal(red.energy_method, "counter");
    assert_double_equal(red.energy_j, 300.0, 1e-9);
    assert_string_equal(red.energy_note, "");
    pfi_telemetry_destroy(tm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gap_rule),
        cmocka_unit_test(gap_dmon),
        cmocka_unit_test(gap_after_backwards_jump),
        cmocka_unit_test(gap_csv_8gpu),
        cmocka_unit_test(gap_counter),
        cmocka_unit_test(energy_unavailable),
        cmocka_unit_test(energy_partial),
        cmocka_unit_test(counter_implausible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
