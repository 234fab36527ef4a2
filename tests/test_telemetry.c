/*
 * Telemetry and training-log readers against the field-report cases (tests/cases, copied
 * expectations in comments). Expected numbers are from the cases' EXPECTED.md (hand
 * computed there) and tests/golden/telemetry_expected.py (numpy).
 */
#include <locale.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cmocka_compat.h"

#include "pfi/reduce.h"
#include "pfi/store.h"
#include "pfi/telemetry.h"
#include "pfi/trainlog.h"
#include "telemetry/xml_lazy.h"

#ifndef PFI_CASES
#error "PFI_CASES (the field-report cases directory) is set by tests/CMakeLists.txt"
#endif

static char path_buf[1024];
static const char *cp(const char *rel)
{
    snprintf(path_buf, sizeof path_buf, "%s/%s", PFI_CASES, rel);
    return path_buf;
}

static pfi_telemetry *read1(const char *rel, pfi_telemetry_format fmt, double interval,
                            pfi_error want)
{
    pfi_telemetry_options o = {.keep_series = true, .interval_s = interval};
    pfi_telemetry *tm = NULL;
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    pfi_diag d;
    assert_int_equal(pfi_telemetry_read_file(tm, cp(rel), fmt, &d), want);
    pfi_telemetry_summarize(tm);
    return tm;
}

static const pfi_telemetry_series *ser(const pfi_telemetry *tm, const char *ent, const char *field)
{
    long f = pfi_telemetry_field_find(tm, field);
    if (f < 0)
        return NULL;
    for (size_t e = 0; e < tm->n_entities; e++)
        if (strcmp(tm->entities[e].name, ent) == 0)
            return pfi_telemetry_series_get(tm, e, (size_t)f);
    return NULL;
}

static double mean(const pfi_telemetry_series *s)
{
    return s->sum / (double)s->n_valid;
}

static bool note_has(const pfi_telemetry *tm, const char *needle)
{
    for (size_t i = 0; i < tm->n_notes; i++)
        if (strstr(tm->notes[i], needle) != NULL)
            return true;
    return false;
}

static void case01(void **state)
{
    (void)state;
    pfi_telemetry *tm = read1("case-01/new_driver_na.csv", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    assert_int_equal(tm->last_format, PFI_TELEMETRY_SMI_CSV);
    assert_int_equal(tm->n_rows, 6);
    const pfi_telemetry_series *g0 = ser(tm, "gpu0", "power_w"), *g1 = ser(tm, "gpu1", "power_w");
    assert_non_null(g0);
    assert_int_equal(g0->n_valid, 0);
    assert_int_equal(g0->n_missing, 3);
    assert_int_equal(g1->n_valid, 3);
    assert_double_equal(mean(g1), 213.45, 1e-9);
    assert_double_equal(mean(ser(tm, "gpu1", "power_limit_w")), 250.0, 1e-12);
    assert_true(note_has(tm, "gpu0: power_w not available (3 of 3 samples missing)"));
    pfi_reduced red;
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    assert_int_equal(pfi_reduce_power(tm, &ro, &red), PFI_OK);
    /* The node total including GPU 0 is incomplete, never GPU 1 alone. */
    assert_true(red.flags & PFI_RED_NO_POWER);
    assert_true(red.flags & PFI_RED_INCOMPLETE);
    assert_true(isnan(red.power.mean));
    pfi_telemetry_destroy(tm);

    tm = read1("case-01/old_driver_not_supported.csv", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    const pfi_telemetry_series *u = ser(tm, "gpu0", "gpu_util_pct");
    assert_int_equal(u->n_valid, 3);
    assert_double_equal(u->sum, 12 + 15 + 11, 1e-12);
    assert_false(pfi_telemetry_has_field(tm, "power_w"));
    pfi_telemetry_destroy(tm);
}

static void case02(void **state)
{
    (void)state;
    pfi_telemetry *a = read1("case-02/units.csv", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    pfi_telemetry *b = read1("case-02/nounits.csv", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    const char *ents[] = {"gpu0", "gpu1", "gpu2"};
    const double pw[] = {287.16, 301.92, 95.40};
    for (int i = 0; i < 3; i++) {
        assert_double_equal(mean(ser(a, ents[i], "power_w")), pw[i], 1e-12);
        for (size_t f = 0; f < a->n_fields; f++) {
            const pfi_telemetry_series *sa = ser(a, ents[i], a->fields[f].name);
            const pfi_telemetry_series *sb = ser(b, ents[i], a->fields[f].name);
            assert_non_null(sb);
            assert_int_equal(sa->n_valid, sb->n_valid);
            assert_int_equal(sa->n_missing, sb->n_missing);
            if (sa->n_valid)
                assert_true(sa->value[0] == sb->value[0]);
        }
    }
    assert_int_equal(ser(a, "gpu1", "default_limit_w")->n_missing, 1);
    assert_int_equal(ser(a, "gpu2", "fb_used_mib")->n_missing, 1);
    pfi_telemetry_destroy(a);
    pfi_telemetry_destroy(b);
    /* No header and no field list: refused. With the list: same table. */
    pfi_telemetry *c =
        read1("case-02/noheader_nounits.csv", PFI_TELEMETRY_SMI_CSV, 0, PFI_ERR_PARSE);
    pfi_telemetry_destroy(c);
    pfi_telemetry_options o = {.keep_series = true,
                               .csv_fields = "name, index, power.draw [W], power.limit [W], "
                                             "power.default_limit [W], memory.used [MiB], "
                                             "utilization.gpu [%], temperature.gpu"};
    assert_int_equal(pfi_telemetry_create(&o, &c), PFI_OK);
    assert_int_equal(
        pfi_telemetry_read_file(c, cp("case-02/noheader_nounits.csv"), PFI_TELEMETRY_SMI_CSV, NULL),
        PFI_OK);
    assert_double_equal(mean(ser(c, "gpu1", "power_w")), 301.92, 1e-12);
    pfi_telemetry_destroy(c);
    /* 287160 mW under [W]: converted explicitly, never 287160 W. */
    c = read1("case-02/unit_mismatch.csv", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    assert_double_equal(mean(ser(c, "gpu0", "power_w")), 287.16, 1e-9);
    assert_true(note_has(c, "a value in mW under the header's [W]: converted to W"));
    pfi_telemetry_destroy(c);
}

static void case03(void **state)
{
    (void)state;
    pfi_telemetry *tm = read1("case-03/query_loop.csv", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    const pfi_telemetry_entity *g1 = &tm->entities[1];
    assert_string_equal(g1->name, "gpu1");
    assert_true(g1->lost);
    double day = 20394.0 * 86400.0; /* 2025-11-02 */
    assert_double_equal(g1->lost_t_s - day, 14 * 3600 + 20 * 60 + 3.013, 1e-6);
    assert_double_equal(g1->last_good_t_s - day, 14 * 3600 + 20 * 60 + 2.011, 1e-6);
    const pfi_telemetry_series *p1 = ser(tm, "gpu1", "power_w");
    assert_int_equal(p1->n_valid, 2);
    assert_int_equal(p1->n_missing, 3);
    double cov;
    double ej = pfi_telemetry_integrate(p1, &cov);
    assert_double_equal(cov, 1.002, 1e-6); /* [14:20:01.009, 14:20:02.011] only */
    assert_double_equal(ej, 0.5 * (297.80 + 298.91) * 1.002, 1e-3); /* epoch-s doubles: ~2e-7 s */
    pfi_reduced red;
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    assert_int_equal(pfi_reduce_power(tm, &ro, &red), PFI_OK);
    assert_true(red.flags & PFI_RED_GPU_LOST);
    pfi_telemetry_destroy(tm);

    tm = read1("case-03/wrapper_appended.csv", PFI_TELEMETRY_SMI_CSV, 0, PFI_ERR_PARSE);
    pfi_telemetry_destroy(tm);
    pfi_telemetry_options o = {.keep_series = true,
                               .csv_fields = "timestamp, index, pci.bus_id, power.draw [W], "
                                             "temperature.gpu, utilization.gpu [%], "
                                             "ecc.errors.uncorrected.volatile.total"};
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    assert_int_equal(
        pfi_telemetry_read_file(tm, cp("case-03/wrapper_appended.csv"), PFI_TELEMETRY_AUTO, NULL),
        PFI_OK);
    assert_int_equal(tm->n_skipped, 2);
    assert_true(tm->entities[1].lost); /* bus 0000:3D:00.0 from the error sentence */
    assert_true(note_has(tm, "wrapper_appended.csv:5:"));
    pfi_telemetry_destroy(tm);
}

static void case04(void **state)
{
    (void)state;
    pfi_telemetry *tm = read1("case-04/dmon_repeated_header.txt", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    assert_int_equal(tm->last_format, PFI_TELEMETRY_SMI_DMON);
    assert_int_equal(tm->n_rows, 10);
    assert_true(tm->time_nominal);
    const pfi_telemetry_series *p0 = ser(tm, "gpu0", "power_w"), *p1 = ser(tm, "gpu1", "power_w");
    assert_double_equal(mean(p0), 300.0, 1e-12);
    assert_int_equal(p1->n_valid, 4);
    assert_int_equal(p1->n_missing, 1);
    assert_double_equal(mean(p1), 295.5, 1e-12);
    assert_int_equal(ser(tm, "gpu0", "mem_temp_c")->n_missing, 5);
    assert_int_equal(ser(tm, "gpu0", "mem_temp_c")->n_valid, 0);
    pfi_telemetry_destroy(tm);
}

static void case06(void **state)
{
    (void)state;
    pfi_telemetry *tm = read1("case-06/dmon_DT_date_change.txt", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    const pfi_telemetry_series *p = ser(tm, "gpu0", "power_w");
    assert_int_equal(p->n, 5);
    for (size_t i = 1; i < p->n; i++)
        assert_double_equal(p->t_s[i] - p->t_s[i - 1], 1.0, 1e-9);
    double cov;
    assert_double_equal(pfi_telemetry_integrate(p, &cov), 968.5, 1e-9);
    assert_double_equal(cov, 4.0, 1e-12);
    pfi_telemetry_destroy(tm);
    tm = read1("case-06/dmon_T_midnight.txt", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    p = ser(tm, "gpu0", "power_w");
    assert_double_equal(pfi_telemetry_integrate(p, &cov), 968.5, 1e-9);
    assert_double_equal(cov, 4.0, 1e-12);
    assert_true(note_has(tm, "midnight rollover"));
    pfi_telemetry_destroy(tm);
    /* A backwards jump that is not a midnight wrap splits the series. */
    const char text[] = "#Time gpu pwr\n#HH:MM:SS Idx W\n 14:05:09 0 100\n 14:05:10 0 100\n"
                        " 14:03:00 0 100\n 14:03:01 0 100\n";
    FILE *f = fmemopen((void *)text, sizeof text - 1, "rb");
    pfi_telemetry_options o = {.keep_series = true};
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    assert_int_equal(pfi_telemetry_read_stream(tm, f, "mem", PFI_TELEMETRY_AUTO, NULL), PFI_OK);
    fclose(f);
    p = ser(tm, "gpu0", "power_w");
    assert_double_equal(pfi_telemetry_integrate(p, &cov), 200.0, 1e-9); /* 2 x 1 s, not across */
    assert_true(note_has(tm, "new segment"));
    pfi_telemetry_destroy(tm);
}

static void case07(void **state)
{
    (void)state;
    pfi_telemetry *tm =
        read1("case-07/dcgmi_dmon_power_energy.txt", PFI_TELEMETRY_AUTO, 1.0, PFI_OK);
    assert_int_equal(tm->last_format, PFI_TELEMETRY_DCGMI_DMON);
    assert_true(tm->time_nominal);
    const pfi_telemetry_series *p0 = ser(tm, "GPU 0", "power_w"), *p1 = ser(tm, "GPU 1", "power_w");
    assert_int_equal(p0->n_valid, 4);
    assert_double_equal(mean(p0), 299.9835, 1e-9);
    assert_double_equal(mean(p1), 288.97375, 1e-9);
    assert_double_equal(pfi_telemetry_counter_delta(ser(tm, "GPU 0", "energy_mj"), NULL, NULL),
                        899019, 1e-6);
    assert_double_equal(pfi_telemetry_counter_delta(ser(tm, "GPU 1", "energy_mj"), NULL, NULL),
                        867014, 1e-6);
    pfi_reduced red;
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    assert_int_equal(pfi_reduce_power(tm, &ro, &red), PFI_OK);
    assert_string_equal(red.energy_method, "counter");
    assert_double_equal(red.energy_j, 899.019 + 867.014, 1e-9);
    assert_true(red.flags & PFI_RED_NOMINAL_TIME);
    pfi_telemetry_destroy(tm);
}

static void case08(void **state)
{
    (void)state;
    pfi_telemetry *tm = read1("case-08/dcgmi_dmon_prof_na.txt", PFI_TELEMETRY_AUTO, 1.0, PFI_OK);
    assert_int_equal(ser(tm, "GPU 0", "power_w")->n_valid, 4);
    assert_int_equal(ser(tm, "GPU 0", "sm_active")->n_missing, 2);
    assert_true(note_has(tm, "another profiler"));
    pfi_telemetry_destroy(tm);
    tm = read1("case-08/dcgmi_dmon_all_na.txt", PFI_TELEMETRY_AUTO, 1.0, PFI_OK);
    assert_false(pfi_telemetry_has_field(tm, "sm_active"));
    pfi_telemetry_destroy(tm);
    tm = read1("case-08/dcgmi_dmon_not_watched_old.txt", PFI_TELEMETRY_AUTO, 1.0, PFI_OK);
    const pfi_telemetry_series *s = ser(tm, "GPU 0", "sm_active");
    assert_int_equal(s->n_valid, 2);
    assert_double_equal(s->value[0], 0.873, 1e-12);
    assert_double_equal(s->value[1], 0.869, 1e-12);
    assert_int_equal(ser(tm, "GPU 0", "tensor_active")->n_missing, 2);
    assert_int_equal(ser(tm, "GPU 0", "dram_active")->n_missing, 2);
    pfi_telemetry_destroy(tm);
}

static void case09(void **state)
{
    (void)state;
    const char *files[] = {"case-09/dcgmi_watch_error_module.txt",
                           "case-09/dcgmi_watch_error_prof.txt"};
    for (int i = 0; i < 2; i++) {
        pfi_telemetry *tm = read1(files[i], PFI_TELEMETRY_AUTO, 1.0, PFI_OK);
        assert_int_equal(tm->n_rows, 0);
        assert_int_equal(tm->n_tool_errors, 1);
        assert_non_null(strstr(tm->tool_error, "Error setting watches. Result:"));
        pfi_reduced red;
        pfi_reduce_options ro;
        pfi_reduce_options_init(&ro);
        assert_int_equal(pfi_reduce_power(tm, &ro, &red), PFI_OK);
        assert_true(red.flags & PFI_RED_NO_POWER);
        assert_true(isnan(red.power.mean));
        pfi_telemetry_destroy(tm);
    }
}

static void case12(void **state)
{
    (void)state;
    pfi_telemetry_options o = {.keep_series = true, .interval_s = 30};
    pfi_telemetry *tm = NULL;
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    for (int i = 1; i <= 6; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "case-12/scrape_%03d.prom", i);
        assert_int_equal(pfi_telemetry_read_file(tm, cp(rel), PFI_TELEMETRY_AUTO, NULL), PFI_OK);
    }
    pfi_telemetry_summarize(tm);
    assert_int_equal(tm->n_entities, 1);
    const char *e = tm->entities[0].name;
    const pfi_telemetry_series *u = ser(tm, e, "gpu_util_pct"), *p = ser(tm, e, "power_w");
    assert_int_equal(u->n_range, 2);
    assert_int_equal(u->n_valid, 4);
    assert_double_equal(mean(u), 97.5, 1e-12);
    assert_double_equal(u->range_max, 4294967295.0, 0);
    assert_int_equal(p->n_valid, 6);
    assert_double_equal(mean(p), 514.0648, 5e-5);
    assert_true(note_has(tm, "out of range"));
    pfi_telemetry_destroy(tm);
}

static void case14(void **state)
{
    (void)state;
    pfi_telemetry *tm = read1("case-14/merged_two_exporters.prom", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    assert_int_equal(tm->n_entities, 2);
    pfi_reduced red;
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    assert_int_equal(pfi_reduce_power(tm, &ro, &red), PFI_OK);
    assert_double_equal(red.power.mean, 356.218 + 349.907, 1e-9); /* prefer pod labels */
    assert_true(note_has(tm, "duplicate series"));
    pfi_telemetry_destroy(tm);
    pfi_telemetry_options o = {.keep_series = true};
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    assert_int_equal(pfi_telemetry_read_file(tm, cp("case-14/old_exporter_Hostname.prom"),
                                             PFI_TELEMETRY_AUTO, NULL),
                     PFI_OK);
    assert_int_equal(pfi_telemetry_read_file(tm, cp("case-14/new_exporter_hostname.prom"),
                                             PFI_TELEMETRY_AUTO, NULL),
                     PFI_OK);
    assert_int_equal(tm->n_entities, 1); /* same (host, UUID) across the upgrade */
    pfi_telemetry_destroy(tm);
    /* Escapes in label values, label order, NaN/Inf values. */
    const char text[] = "DCGM_FI_DEV_POWER_USAGE{modelName=\"a \\\"b\\\" \\\\ c\",UUID=\"GPU-x\","
                        "hostname=\"h\"} 6.082e+02\n"
                        "DCGM_FI_DEV_GPU_TEMP{UUID=\"GPU-x\",hostname=\"h\"} NaN\n"
                        "DCGM_FI_DEV_SM_CLOCK{UUID=\"GPU-x\",hostname=\"h\"} +Inf\n";
    FILE *f = fmemopen((void *)text, sizeof text - 1, "rb");
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    assert_int_equal(pfi_telemetry_read_stream(tm, f, "mem", PFI_TELEMETRY_PROM, NULL), PFI_OK);
    fclose(f);
    assert_string_equal(tm->entities[0].name, "h/GPU-x");
    assert_double_equal(mean(ser(tm, "h/GPU-x", "power_w")), 608.2, 1e-9);
    assert_int_equal(ser(tm, "h/GPU-x", "temp_c")->n_missing, 1);
    assert_int_equal(ser(tm, "h/GPU-x", "sm_clock_mhz")->n_missing, 1);
    pfi_telemetry_destroy(tm);
}

static void case15(void **state)
{
    (void)state;
    const char *files[] = {"case-15/help_type_only.prom", "case-15/empty_body.prom",
                           "case-15/power_metric_absent.prom"};
    for (int i = 0; i < 3; i++) {
        pfi_telemetry *tm =
            read1(files[i], i == 1 ? PFI_TELEMETRY_AUTO : PFI_TELEMETRY_PROM, 0, PFI_OK);
        assert_false(pfi_telemetry_has_field(tm, "power_w"));
        pfi_reduced red;
        pfi_reduce_options ro;
        pfi_reduce_options_init(&ro);
        assert_int_equal(pfi_reduce_power(tm, &ro, &red), PFI_OK);
        assert_true(red.flags & PFI_RED_NO_POWER);
        if (i == 2) {
            assert_int_equal(tm->n_entities, 2);
            assert_double_equal(tm->series[0].value[0], 44, 0);
            assert_true(note_has(tm, "DCGM_FI_DEV_POWER_USAGE"));
        }
        pfi_telemetry_destroy(tm);
    }
}

/* Read text as one Prometheus scrape (format detected) through a temporary stream. */
static void scrape(pfi_telemetry *tm, const char *text, const char *name)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    fputs(text, f);
    rewind(f);
    pfi_diag d;
    assert_int_equal(pfi_telemetry_read_stream(tm, f, name, PFI_TELEMETRY_AUTO, &d), PFI_OK);
    fclose(f);
}

/*
 * case-15 item 4: in a series of scrapes, one with no power sample (HELP/TYPE only, or an
 * empty body) is a hole: power is never integrated across it, but the energy counter,
 * which brackets it, gives the energy over the whole span.
 */
static void case15_hole(void **state)
{
    (void)state;
    pfi_telemetry_options o = {.keep_series = true, .interval_s = 5};
    pfi_telemetry *tm = NULL;
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    char good[512];
    /* 300 W for 5 s = 1500 J = 1.5e6 mJ per scrape; scrapes 0 1 [hole] 3 [empty] 5. */
    const int slot[] = {0, 1, -1, 3, -2, 5};
    for (int i = 0; i < 6; i++) {
        if (slot[i] == -1) {
            scrape(tm,
                   "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
                   "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n",
                   "help-only");
            continue;
        }
        if (slot[i] == -2) {
            scrape(tm, "", "empty");
            continue;
        }
        snprintf(good, sizeof good,
                 "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"h\"} 300\n"
                 "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-a\","
                 "Hostname=\"h\"} %d\n",
                 1000000 + 1500000 * slot[i]);
        scrape(tm, good, "good");
    }
    assert_int_equal(pfi_telemetry_derive_power_from_energy(tm), PFI_OK);
    pfi_telemetry_summarize(tm);
    assert_int_equal(tm->n_scrapes, 6);
    const pfi_telemetry_series *p = ser(tm, "h/GPU-a", "power_w");
    const pfi_telemetry_series *en = ser(tm, "h/GPU-a", "energy_mj");
    assert_non_null(p);
    assert_non_null(en);
    assert_int_equal(p->n, 4);
    assert_int_equal(p->n_missing, 2); /* the two holes: missing, never 0 W */
    double t[4] = {0, 5, 15, 25};
    for (int i = 0; i < 4; i++)
        assert_double_equal(p->t_s[i], t[i], 0);
    double cov;
    /* Power: only [0, 5] s is integrated; never across either hole. */
    assert_double_equal(pfi_telemetry_integrate(p, &cov), 1500.0, 1e-9);
    assert_double_equal(cov, 5.0, 0);
    /* The counter brackets both holes: 25 s x 300 W = 7500 J, over the whole span. */
    size_t resets;
    assert_double_equal(pfi_telemetry_counter_delta(en, &cov, &resets) / 1000.0, 7500.0, 1e-9);
    assert_double_equal(cov, 25.0, 0);
    assert_int_equal(resets, 0);
    pfi_reduced red;
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    assert_int_equal(pfi_reduce_power(tm, &ro, &red), PFI_OK);
    assert_string_equal(red.energy_method, "counter");
    assert_double_equal(red.energy_j, 7500.0, 1e-9);
    /* Each hole is a timestamp without the GPU's power: incomplete, never 0 W (grid 5 s:
     * 0 5 [10] 15 [20] 25). */
    assert_int_equal(red.n_complete, 4);
    assert_int_equal(red.n_incomplete, 2);
    assert_true(red.flags & PFI_RED_INCOMPLETE);
    pfi_telemetry_destroy(tm);
}

/* Read text through a temporary stream with format fmt; returns the reader's code. */
static pfi_error read_text(pfi_telemetry *tm, const char *text, pfi_telemetry_format fmt,
                           pfi_diag *d)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    fputs(text, f);
    rewind(f);
    pfi_error e = pfi_telemetry_read_stream(tm, f, "text", fmt, d);
    fclose(f);
    return e;
}

/* case-21 item 4: the XML fallback, every spelling of the power reading, never mixed. */
static void case21_xml(void **state)
{
    (void)state;
    pfi_telemetry *tm = read1("case-21/nvsmi_xml_power_570.xml", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    assert_int_equal(tm->last_format, PFI_TELEMETRY_SMI_XML);
    assert_double_equal(ser(tm, "gpu0", "power_avg_w")->value[0], 402.17, 1e-12);
    assert_double_equal(ser(tm, "gpu0", "power_instant_w")->value[0], 515.40, 1e-12);
    assert_double_equal(ser(tm, "gpu0", "enforced_limit_w")->value[0], 700, 0);
    assert_double_equal(ser(tm, "gpu0", "requested_limit_w")->value[0], 700, 0);
    assert_double_equal(ser(tm, "gpu0", "min_limit_w")->value[0], 200, 0);
    assert_null(ser(tm, "gpu0", "power_w"));
    pfi_telemetry_destroy(tm);

    /* A `-q -x -l` capture: two documents, two GPUs; old <power_readings><power_draw>
     * on one, 535 <gpu_power_readings> on the other; module / memory blocks skipped. */
    static const char two[] =
        "<?xml version=\"1.0\" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_v12.dtd\">\n"
        "<nvidia_smi_log><gpu id=\"00000000:3D:00.0\"><power_readings>"
        "<power_draw>301.50 W</power_draw><power_limit>700.00 W</power_limit>"
        "</power_readings></gpu><gpu id=\"00000000:3E:00.0\"><gpu_power_readings>"
        "<power_draw>N/A</power_draw></gpu_power_readings><module_power_readings>"
        "<power_draw>999.00 W</power_draw></module_power_readings>"
        "<gpu_memory_power_readings><power_draw>N/A</power_draw>"
        "</gpu_memory_power_readings></gpu></nvidia_smi_log>\n"
        "<?xml version=\"1.0\" ?>\n<nvidia_smi_log><gpu id=\"00000000:3D:00.0\">"
        "<power_readings><power_draw>305.50 W</power_draw></power_readings></gpu>"
        "<gpu id=\"00000000:3E:00.0\"><gpu_power_readings><power_draw>290.00 W</power_draw>"
        "</gpu_power_readings></gpu></nvidia_smi_log>\n";
    pfi_telemetry_options o = {.keep_series = true, .interval_s = 2};
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    pfi_diag d;
    assert_int_equal(read_text(tm, two, PFI_TELEMETRY_AUTO, &d), PFI_OK);
    assert_int_equal(tm->n_entities, 2);
    assert_string_equal(tm->entities[0].bus, "0000:3d:00.0");
    const pfi_telemetry_series *p0 = ser(tm, "gpu0", "power_w"), *p1 = ser(tm, "gpu1", "power_w");
    assert_int_equal(p0->n, 2);
    assert_double_equal(p0->value[1], 305.5, 0);
    assert_double_equal(p0->t_s[1], 2.0, 0);
    assert_int_equal(p1->n, 1); /* N/A is missing, never 0 W; 999 W module power ignored */
    assert_int_equal(p1->n_missing, 1);
    assert_double_equal(p1->value[0], 290.0, 0);
    pfi_telemetry_destroy(tm);

    /* Not well-formed: a parse error with the file line of the fault. */
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    assert_int_equal(
        read_text(tm, "<?xml version=\"1.0\" ?>\n<a>\n<b></a>\n", PFI_TELEMETRY_SMI_XML, &d),
        PFI_ERR_PARSE);
    assert_int_equal(d.line, 3);
    assert_non_null(strstr(d.message, "XML"));
    pfi_telemetry_destroy(tm);
}

/*
 * The lazy libxml2 loader (src/lib/telemetry/xml_lazy.c), through its stateless entry point: a
 * library that cannot be opened or lacks a function is a clear error naming it, never a crash.
 */
static void xml_lazy(void **state)
{
    (void)state;
    xml_lazy_fns f;
    char why[512];
    memset(&f, 0xa5, sizeof f);
    assert_int_equal(xml_lazy_open("libpfi-no-such-xml.so.9", &f, why, sizeof why), -1);
    assert_non_null(strstr(why, "libpfi-no-such-xml.so.9"));
    assert_null(f.lib);
    assert_null(f.new_parser_ctxt);
    /* a library that opens but is not libxml2: the first missing function is named */
    assert_int_equal(xml_lazy_open("libm.so.6", &f, why, sizeof why), -1);
    assert_non_null(strstr(why, "libm.so.6 lacks xmlInitParser"));
    assert_null(f.lib);
    /* no room for the reason: still -1, nothing written */
    assert_int_equal(xml_lazy_open("libpfi-no-such-xml.so.9", &f, why, 0), -1);

    /* the real one: every function resolved and callable */
    assert_int_equal(xml_lazy_open(PFI_XML_SONAME, &f, why, sizeof why), 0);
    assert_string_equal(why, "");
    assert_non_null(f.lib);
    f.init_parser();
    xmlParserCtxtPtr c = f.new_parser_ctxt();
    assert_non_null(c);
    static const char doc[] = "<a id=\"x\">7 W</a>";
    xmlDocPtr d = f.ctxt_read_memory(c, doc, (int)strlen(doc), "t", NULL, XML_PARSE_NONET);
    assert_non_null(d);
    xmlNodePtr root = f.doc_get_root_element(d);
    xmlChar *txt = f.node_get_content(root), *id = f.get_prop(root, (const xmlChar *)"id");
    assert_string_equal((const char *)txt, "7 W");
    assert_string_equal((const char *)id, "x");
    (*f.free)(txt);
    (*f.free)(id);
    f.free_doc(d);
    f.free_parser_ctxt(c);

    /* the process-wide loader: loads once, then reports success every time */
    const char *reason = "unset";
    assert_int_equal(xml_lazy_load(&reason), 0);
    assert_null(reason);
    assert_int_equal(xml_lazy_load(NULL), 0);
}

static void case21(void **state)
{
    (void)state;
    pfi_telemetry *tm = read1("case-21/avg_and_instant.csv", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    const pfi_telemetry_series *a = ser(tm, "gpu0", "power_avg_w"),
                               *in = ser(tm, "gpu0", "power_instant_w");
    assert_double_equal(mean(in), 419.07, 5e-3);
    double cov;
    double e = pfi_telemetry_integrate(a, &cov);
    assert_double_equal(cov, 1.001, 1e-6);
    /* trapezoid: 402.17 over [0, 0.9] + (402.17+405.63)/2 over [0.9, 1.001] */
    assert_double_equal(e / cov, (402.17 * 0.9 + 0.5 * (402.17 + 405.63) * 0.101) / 1.001, 1e-4);
    pfi_reduced red;
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    assert_int_equal(pfi_reduce_power(tm, &ro, &red), PFI_OK);
    assert_string_equal(red.power_field, "power_avg_w"); /* never mixed with instant */
    pfi_telemetry_destroy(tm);
    tm = read1("case-21/legacy_power_draw.csv", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    assert_int_equal(pfi_reduce_power(tm, &ro, &red), PFI_OK);
    assert_string_equal(red.power_field, "power_w");
    pfi_telemetry_destroy(tm);
}

static void case18_query(void **state)
{
    (void)state;
    pfi_telemetry *tm =
        read1("case-18/nvsmi_q_current_vs_requested.txt", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    assert_int_equal(tm->last_format, PFI_TELEMETRY_SMI_QUERY);
    assert_double_equal(mean(ser(tm, "gpu0", "requested_limit_w")), 700, 0);
    assert_double_equal(mean(ser(tm, "gpu0", "enforced_limit_w")), 500, 0);
    assert_double_equal(mean(ser(tm, "gpu0", "power_avg_w")), 412.06, 1e-12);
    assert_string_equal(tm->entities[0].bus, "0000:06:00.0");
    pfi_telemetry_destroy(tm);
}

static void case23(void **state)
{
    (void)state;
    pfi_trainlog *log = NULL;
    assert_int_equal(
        pfi_trainlog_read_file(cp("case-23/megatron_new.log"), PFI_TRAINLOG_AUTO, NULL, &log, NULL),
        PFI_OK);
    assert_int_equal(log->format, PFI_TRAINLOG_MEGATRON);
    assert_int_equal(log->n, 6);
    assert_double_equal(log->iv[1].rate, 128 / 1.4027, 1e-9);
    pfi_trainlog_summary s;
    assert_int_equal(pfi_trainlog_reduce(log, 0, 0.1, &s), PFI_OK);
    assert_int_equal(s.n_included, 4);
    assert_int_equal(s.n_skipped, 1);
    assert_int_equal(s.n_checkpoint, 1);
    assert_int_equal(log->n_nan, 1);
    assert_double_equal(s.window_rate, 128.0 / 1.40085, 1e-9); /* 91.37 samples/s */
    assert_double_equal(s.tflops_mean, 197.35, 1e-9);
    pfi_trainlog_destroy(log);
    assert_int_equal(
        pfi_trainlog_read_file(cp("case-23/megatron_old.log"), PFI_TRAINLOG_AUTO, NULL, &log, NULL),
        PFI_OK);
    assert_double_equal(log->iv[1].rate, 8 / 0.1632, 1e-9);
    assert_true(isnan(log->iv[1].tflops));
    assert_int_equal(pfi_trainlog_reduce(log, 0, 0.1, &s), PFI_OK);
    assert_true(isnan(s.tflops_mean));
    pfi_trainlog_destroy(log);
}

static void other_logs(void **state)
{
    (void)state;
    pfi_trainlog *log = NULL;
    pfi_trainlog_summary s;
    assert_int_equal(pfi_trainlog_read_file(PFI_TEST_DATA "/trainlog/nanotron.log",
                                            PFI_TRAINLOG_AUTO, NULL, &log, NULL),
                     PFI_OK);
    assert_int_equal(log->format, PFI_TRAINLOG_NANOTRON);
    assert_int_equal(log->n, 3);
    assert_double_equal(log->iv[1].rate, 131e3, 1e-6);
    assert_double_equal(log->iv[2].time_s, 2.5, 1e-12);
    assert_int_equal(log->n_nan, 1);
    assert_int_equal(pfi_trainlog_reduce(log, 0, 1.0, &s), PFI_OK);
    /* work / time, not the mean of rates: (64K*4.1 + 131K*2 + 104.8K*2.5) / 8.6 */
    assert_double_equal(s.window_rate, (64e3 * 4.1 + 131e3 * 2 + 104.8e3 * 2.5) / 8.6, 1e-6);
    pfi_trainlog_destroy(log);
    assert_int_equal(pfi_trainlog_read_file(PFI_TEST_DATA "/trainlog/hf.log", PFI_TRAINLOG_AUTO,
                                            NULL, &log, NULL),
                     PFI_OK);
    assert_int_equal(log->format, PFI_TRAINLOG_HF);
    assert_int_equal(log->n, 1);
    assert_double_equal(log->iv[0].rate, 42.5, 1e-12);
    assert_int_equal(log->n_nan, 1);
    pfi_trainlog_destroy(log);
    assert_int_equal(pfi_trainlog_read_file(PFI_TEST_DATA "/trainlog/torchtitan.log",
                                            PFI_TRAINLOG_AUTO, NULL, &log, NULL),
                     PFI_OK);
    assert_int_equal(log->format, PFI_TRAINLOG_TORCHTITAN);
    assert_int_equal(log->n, 3);
    assert_double_equal(log->iv[1].rate, 7000, 0);
    assert_double_equal(log->iv[2].time_s, 20, 0);
    assert_int_equal(pfi_trainlog_reduce(log, 0, 1.0, &s), PFI_OK);
    assert_double_equal(s.window_rate, (7000 * 10 + 8000 * 20) / 30.0, 1e-9);
    pfi_trainlog_destroy(log);
    assert_int_equal(pfi_trainlog_read_file(PFI_TEST_DATA "/trainlog/torchtitan.log",
                                            PFI_TRAINLOG_REGEX, "tps: (?<throughput>[0-9,]+)", &log,
                                            NULL),
                     PFI_OK);
    assert_int_equal(log->n, 3);
    assert_double_equal(log->iv[0].rate, 6000, 0);
    pfi_trainlog_destroy(log);
    pfi_diag d;
    assert_int_equal(pfi_trainlog_read_file(PFI_TEST_DATA "/trainlog/hf.log", PFI_TRAINLOG_REGEX,
                                            "(tps): ([0-9]+)", &log, &d),
                     PFI_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(d.message, "(?<throughput>"));
}

static void case25_locale(void **state)
{
    (void)state;
    if (setlocale(LC_ALL, "de_DE.UTF-8") == NULL) {
        print_message("de_DE.UTF-8 locale not available: locale check skipped\n");
        skip();
    }
    pfi_telemetry *tm = read1("case-25/query.csv", PFI_TELEMETRY_AUTO, 0, PFI_OK);
    const pfi_telemetry_series *p = ser(tm, "gpu0", "power_w");
    assert_int_equal(p->n_valid, 3);
    assert_double_equal(p->value[0], 276.48, 1e-12);
    assert_double_equal(p->value[1], 281.07, 1e-12);
    assert_double_equal(p->value[2], 279.93, 1e-12);
    assert_double_equal(mean(p), 279.16, 1e-9);
    pfi_telemetry_destroy(tm);
    setlocale(LC_ALL, "C");
}

/* Store: a transaction that fails leaves the store unchanged; replace keeps one run. */
static void store_roundtrip(void **state)
{
    (void)state;
    char path[] = "/tmp/pfi-test-store-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    remove(path);
    pfi_store *s = NULL;
    assert_int_equal(pfi_store_open(path, PFI_STORE_WRITE, &s, NULL), PFI_OK);
    const char names[2][64] = {"sm_active", "dram_copy_product"};
    const double vals[2] = {0.9, 0.12};
    pfi_store_run r = {.group = "g",
                       .job_class = "dense",
                       .gpus = 8,
                       .cap_w = 700,
                       .power_w = 5000,
                       .power_se_w = 10,
                       .power_n = 3,
                       .throughput = 100,
                       .throughput_se = NAN,
                       .energy_j = NAN,
                       .n_features = 2,
                       .feature_name = names,
                       .feature_value = vals};
    bool replaced;
    assert_int_equal(pfi_store_put_run(s, &r, &replaced, NULL), PFI_OK);
    assert_false(replaced);
    r.power_w = 4000;
    assert_int_equal(pfi_store_put_run(s, &r, &replaced, NULL), PFI_OK);
    assert_true(replaced);
    r.cap_w = NAN;
    assert_int_equal(pfi_store_put_run(s, &r, &replaced, NULL), PFI_ERR_INVALID_ARGUMENT);
    char *buf = NULL;
    size_t len = 0, n = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_int_equal(pfi_store_export_csv(s, m, true, NULL, &n, NULL), PFI_OK);
    fclose(m);
    assert_int_equal(n, 1);
    assert_non_null(strstr(buf, "g,dense,8,700,4000,10,100,,0,"));
    free(buf);
    pfi_store_close(s);
    /* Reopen: schema kept (no migration twice). */
    assert_int_equal(pfi_store_open(path, PFI_STORE_READ, &s, NULL), PFI_OK);
    pfi_store_close(s);
    remove(path);
    char wal[64];
    snprintf(wal, sizeof wal, "%s-wal", path);
    remove(wal);
    snprintf(wal, sizeof wal, "%s-shm", path);
    remove(wal);
}

/* The whole file's bytes (the test stores are small). */
static size_t slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* A reader never writes: an empty file is "not a pfi store" and stays 0 bytes; reading a
 * store leaves every byte (SQLite's change counter included) as it was; a write through a
 * read-only handle fails. */
/* Files that are not telemetry: "format not recognised" with what was seen (pfi_telemetry_detect
 * is conservative), and a forced format that reads almost nothing is an error that says so. */
static void detect_conservative(void **state)
{
    (void)state;
    /* binary: a NUL byte, or mostly bytes that are not text (even with a '{' line first) */
    static const char elf[] = "\x7f"
                              "ELF\x02\x01\x01\0\0\0,\n";
    assert_int_equal(pfi_telemetry_detect(elf, sizeof elf - 1), PFI_TELEMETRY_AUTO);
    char junk[512];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)(0x80 + (i * 37) % 0x40); /* continuation bytes: invalid UTF-8 */
    memcpy(junk, "a{b\n", 4);
    assert_int_equal(pfi_telemetry_detect(junk, sizeof junk), PFI_TELEMETRY_AUTO);
    /* a NUL block after a good first line (a log cut by a crash) is still read */
    static const char padded[] = "timestamp, index, power.draw [W]\n2024/01/01 00:00:00, 0, 3 W\n"
                                 "\0\0\0\0\0\0\0\0\n";
    assert_int_equal(pfi_telemetry_detect(padded, sizeof padded - 1), PFI_TELEMETRY_SMI_CSV);
    /* a header naming no nvidia-smi query field is not nvidia-smi CSV */
    static const char runs[] = "dataset,network,batch_size,optimizer,power_limit,"
                               "time_per_epoch,average_power\ncifar100,x,1024,adam,100,27,106\n";
    assert_int_equal(pfi_telemetry_detect(runs, sizeof runs - 1), PFI_TELEMETRY_AUTO);
    static const char smi[] = "timestamp, index, power.draw [W]\n2024/01/01 00:00:00, 0, 3 W\n";
    assert_int_equal(pfi_telemetry_detect(smi, sizeof smi - 1), PFI_TELEMETRY_SMI_CSV);
    static const char smi2[] = "name, pci.bus_id, pstate\nNVIDIA H100, 00000000:3D:00.0, P0\n";
    assert_int_equal(pfi_telemetry_detect(smi2, sizeof smi2 - 1), PFI_TELEMETRY_SMI_CSV);
    static const char noheader[] = "2024/01/01 00:00:00.000, 0, 300.5 W\n";
    assert_int_equal(pfi_telemetry_detect(noheader, sizeof noheader - 1), PFI_TELEMETRY_SMI_CSV);
    /* Prometheus only when enough lines are exposition lines */
    static const char json[] = "{\n  \"gpu\": 0,\n  \"power\": 300\n}\n";
    assert_int_equal(pfi_telemetry_detect(json, sizeof json - 1), PFI_TELEMETRY_AUTO);
    static const char prom[] = "# HELP DCGM_FI_DEV_POWER_USAGE Power\n"
                               "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
                               "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"a,}b\"} 300.5\n"
                               "garbage\n# a comment\n";
    assert_int_equal(pfi_telemetry_detect(prom, sizeof prom - 1), PFI_TELEMETRY_PROM);
    static const char generic[] = "node_gpu_watts{gpu=\"0\",host=\"a\"} 3 1700000000000\n";
    assert_int_equal(pfi_telemetry_detect(generic, sizeof generic - 1), PFI_TELEMETRY_PROM);
    static const char promjunk[] = "# HELP x y\nnot\nexposition\nlines\nat all\n";
    assert_int_equal(pfi_telemetry_detect(promjunk, sizeof promjunk - 1), PFI_TELEMETRY_AUTO);

    /* the reasons reach the diag */
    pfi_telemetry *tm = NULL;
    pfi_diag d;
    assert_int_equal(pfi_telemetry_create(NULL, &tm), PFI_OK);
    assert_int_equal(read_text(tm, runs, PFI_TELEMETRY_AUTO, &d), PFI_ERR_PARSE);
    assert_non_null(strstr(d.message, "format not recognised"));
    assert_non_null(strstr(d.message, "(dataset, network, batch_size, optimizer, power_limit"));
    assert_non_null(strstr(d.message, "names no nvidia-smi query field"));
    FILE *f = tmpfile();
    assert_non_null(f);
    fwrite(junk, 1, sizeof junk, f);
    rewind(f);
    assert_int_equal(pfi_telemetry_read_stream(tm, f, "junk", PFI_TELEMETRY_AUTO, &d),
                     PFI_ERR_PARSE);
    fclose(f);
    assert_non_null(strstr(d.message, "not a text file"));
    assert_int_equal(tm->n_notes, 0);
    /* a first header cell too long to quote whole (>= 197 bytes: once read seen[-1]): its
     * start, cut with "...", and the later cells left out; every length around the edge */
    for (size_t len = 190; len <= 260; len++) {
        char wide[400];
        memset(wide, 'q', len);
        snprintf(wide + len, sizeof wide - len, ",b,c\n1,2,3\n");
        assert_int_equal(pfi_telemetry_detect(wide, strlen(wide)), PFI_TELEMETRY_AUTO);
        assert_int_equal(read_text(tm, wide, PFI_TELEMETRY_AUTO, &d), PFI_ERR_PARSE);
        assert_non_null(strstr(d.message, "names no nvidia-smi query field"));
        assert_non_null(strstr(d.message, "(qqqq"));
        assert_true((len >= 197) == (strstr(d.message, "q...) names") != NULL));
    }

    /* --format dmon on an nvidia-smi CSV: an error naming both, no note per line */
    char csv[4096] = "timestamp, index, power.draw [W]\n";
    for (int i = 0; i < 20; i++)
        snprintf(csv + strlen(csv), sizeof csv - strlen(csv),
                 "2024/01/01 00:00:%02d.000, 0, 300.%d W\n", 10 + i, i);
    assert_int_equal(read_text(tm, csv, PFI_TELEMETRY_SMI_DMON, &d), PFI_ERR_PARSE);
    assert_non_null(strstr(d.message, "does not look like dmon output: 0 of 21 lines"));
    assert_non_null(strstr(d.message, "it looks like nvidia-smi-csv"));
    assert_int_equal(d.line, 0);
    assert_int_equal(tm->n_notes, 0);
    assert_string_equal(tm->tool_error, "");
    /* the right format still reads, and a dcgmi tool error under --format dcgmi-dmon is
     * still the tool's error (the file looks like dcgmi output) */
    assert_int_equal(read_text(tm, csv, PFI_TELEMETRY_SMI_CSV, &d), PFI_OK);
    assert_int_equal(tm->n_rows, 20);
    pfi_telemetry_destroy(tm);
    tm = read1("case-09/dcgmi_watch_error_module.txt", PFI_TELEMETRY_DCGMI_DMON, 0, PFI_OK);
    assert_true(tm->n_tool_errors >= 1);
    pfi_telemetry_destroy(tm);
}

static void store_read_only(void **state)
{
    (void)state;
    char path[] = "/tmp/pfi-test-store-ro-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    pfi_store *s = NULL;
    pfi_diag d;
    assert_int_equal(pfi_store_open(path, PFI_STORE_READ, &s, &d), PFI_ERR_IO);
    assert_null(s);
    assert_non_null(strstr(d.message, "not a pfi store"));
    static char before[1 << 16], after[1 << 16];
    assert_int_equal(slurp(path, before, sizeof before), 0);
    assert_int_equal(pfi_store_open(path, PFI_STORE_WRITE, &s, NULL), PFI_OK);
    pfi_store_run r = {.group = "g",
                       .gpus = 1,
                       .cap_w = 300,
                       .power_w = 250,
                       .power_se_w = NAN,
                       .throughput = 10,
                       .throughput_se = NAN,
                       .energy_j = NAN};
    bool replaced;
    assert_int_equal(pfi_store_put_run(s, &r, &replaced, NULL), PFI_OK);
    pfi_store_close(s);
    size_t n0 = slurp(path, before, sizeof before);
    assert_true(n0 > 0 && n0 < sizeof before);
    assert_int_equal(pfi_store_open(path, PFI_STORE_READ, &s, &d), PFI_OK);
    char *buf = NULL;
    size_t len = 0, n = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_int_equal(pfi_store_export_csv(s, m, false, NULL, &n, NULL), PFI_OK);
    fclose(m);
    free(buf);
    assert_int_equal(n, 1);
    r.cap_w = 200;
    assert_int_equal(pfi_store_put_run(s, &r, &replaced, NULL), PFI_ERR_IO);
    pfi_store_close(s);
    assert_int_equal(slurp(path, after, sizeof after), n0);
    assert_memory_equal(before, after, n0);
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(case01),          cmocka_unit_test(case02),
        cmocka_unit_test(case03),          cmocka_unit_test(case04),
        cmocka_unit_test(case06),          cmocka_unit_test(case07),
        cmocka_unit_test(case08),          cmocka_unit_test(case09),
        cmocka_unit_test(case12),          cmocka_unit_test(case14),
        cmocka_unit_test(case15),          cmocka_unit_test(case15_hole),
        cmocka_unit_test(case21),          cmocka_unit_test(case21_xml),
        cmocka_unit_test(xml_lazy),        cmocka_unit_test(case18_query),
        cmocka_unit_test(case23),          cmocka_unit_test(other_logs),
        cmocka_unit_test(case25_locale),   cmocka_unit_test(store_roundtrip),
        cmocka_unit_test(store_read_only), cmocka_unit_test(detect_conservative),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
