/*
 * The run reduction's time grid (pfi_reduce_power): a missing power value makes its
 * timestamp incomplete in every format, whatever the number of GPUs; the grid step is the
 * step the data has, and a step the data cannot give is said, never silently 1 s.
 * Inputs are small streams written below, one table row per format and missing token;
 * expected counts are by hand in the comments.
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

#include "cmocka_compat.h"

#include "pfi/reduce.h"
#include "pfi/telemetry.h"

/*
 * Reads text (Prometheus: scrapes separated by '\f', one stream each), derives power from
 * an energy counter, summarises and reduces with q = 1 (the job power is then the plain
 * mean of the complete timestamps). align: the --align option (0: none).
 */
static pfi_telemetry *load(const char *text, pfi_telemetry_format fmt, double interval,
                           double align, pfi_reduced *red)
{
    pfi_telemetry_options o = {.keep_series = true, .interval_s = interval};
    pfi_telemetry *tm = NULL;
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    for (const char *p = text;;) {
        size_t n = strcspn(p, "\f");
        FILE *f = fmemopen((void *)p, n > 0 ? n : 1, "rb");
        assert_non_null(f);
        if (n == 0) { /* fmemopen needs a size: an empty scrape is an empty stream */
            fclose(f);
            f = tmpfile();
            assert_non_null(f);
        }
        pfi_diag d;
        pfi_error e = pfi_telemetry_read_stream(tm, f, "mem", fmt, &d);
        fclose(f);
        if (e != PFI_OK)
            fail_msg("read: %s (%s, line %ld)", pfi_strerror(e), d.message, d.line);
        if (p[n] == '\0')
            break;
        p += n + 1;
    }
    assert_int_equal(pfi_telemetry_derive_power_from_energy(tm), PFI_OK);
    pfi_telemetry_summarize(tm);
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    ro.q = 1;
    ro.align_s = align;
    assert_int_equal(pfi_reduce_power(tm, &ro, red), PFI_OK);
    return tm;
}

#define CSV_HEAD "timestamp, index, power.draw [W]\n"
#define CSV_ROW(s, v) "2025/01/01 00:00:0" #s ".000, 0, " v "\n"
#define DMON_HEAD "# gpu    pwr\n# Idx      W\n"
#define DMON_DT_HEAD "#Date       Time        gpu    pwr\n#YYYYMMDD   HH:MM:SS    Idx      W\n"
#define DMON_DT_ROW(s, v) " 20250101   10:00:0" #s "      0    " v "\n"
#define DCGMI_HEAD "#Entity   POWER\nID\n"
#define PROM(v) "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"h\"} " v "\n"
#define XML_DOC(v)                                                                                 \
    "<?xml version=\"1.0\" ?>\n<nvidia_smi_log><gpu id=\"00000000:3D:00.0\">"                      \
    "<gpu_power_readings><power_draw>" v "</power_draw></gpu_power_readings></gpu>"                \
    "</nvidia_smi_log>\n"

/*
 * One GPU, five rows, 300 301 ? 303 304 W: the third value is missing (or a dropped glitch).
 * Its timestamp is a bin of the grid, and it lacks the GPU: 4 complete, 1 incomplete, job
 * power (q = 1) = (300 + 301 + 303 + 304) / 4 = 302 W. Never summed smaller, never 0.
 */
static const struct missing_case {
    const char *what;
    pfi_telemetry_format fmt;
    double interval;
    const char *text;
    size_t n_complete, n_incomplete;
    double mean, align; /* align: expected grid, s (0: not checked) */
} missing_cases[] = {
    {"nvidia-smi csv [N/A]", PFI_TELEMETRY_AUTO, 0,
     CSV_HEAD CSV_ROW(0, "300.00 W") CSV_ROW(1, "301.00 W") CSV_ROW(2, "[N/A]")
         CSV_ROW(3, "303.00 W") CSV_ROW(4, "304.00 W"),
     4, 1, 302, 1},
    {"nvidia-smi csv [Unknown Error], nounits", PFI_TELEMETRY_AUTO, 0,
     CSV_HEAD CSV_ROW(0, "300.00") CSV_ROW(1, "301.00") CSV_ROW(2, "[Unknown Error]")
         CSV_ROW(3, "303.00") CSV_ROW(4, "304.00"),
     4, 1, 302, 1},
    /* Steps 1 and 2 s between the valid samples: the grid is the sampling step (1 s), not
     * stretched over the missing value (1.5 s would put the hole into a complete bin). */
    {"nvidia-smi csv, grid not stretched by the hole", PFI_TELEMETRY_AUTO, 0,
     CSV_HEAD CSV_ROW(0, "300.00 W") CSV_ROW(1, "301.00 W") CSV_ROW(2, "[N/A]")
         CSV_ROW(3, "303.00 W"),
     3, 1, (300 + 301 + 303) / 3.0, 1},
    {"dmon -", PFI_TELEMETRY_AUTO, 0,
     DMON_HEAD "    0    300\n    0    301\n    0      -\n    0    303\n    0    304\n", 4, 1, 302,
     1},
    {"dmon N/A", PFI_TELEMETRY_SMI_DMON, 2,
     DMON_HEAD "    0    300\n    0    301\n    0    N/A\n    0    303\n    0    304\n", 4, 1, 302,
     2},
    {"dmon [N/A]", PFI_TELEMETRY_SMI_DMON, 0,
     DMON_HEAD "    0    300\n    0    301\n    0  [N/A]\n    0    303\n    0    304\n", 4, 1, 302,
     1},
    {"dmon -o DT -", PFI_TELEMETRY_AUTO, 0,
     DMON_DT_HEAD DMON_DT_ROW(0, "300") DMON_DT_ROW(1, "301") DMON_DT_ROW(2, "  -")
         DMON_DT_ROW(3, "303") DMON_DT_ROW(4, "304"),
     4, 1, 302, 1},
    /* A glitch (negative power) is dropped, not clamped: the timestamp lacks the GPU. */
    {"dmon out-of-range glitch", PFI_TELEMETRY_AUTO, 0,
     DMON_HEAD "    0    300\n    0    301\n    0     -5\n    0    303\n    0    304\n", 4, 1, 302,
     1},
    /* First and last rows missing: the grid reaches them (2 incomplete, 301..303 = 302). */
    {"dmon leading and trailing -", PFI_TELEMETRY_AUTO, 0,
     DMON_HEAD "    0      -\n    0    301\n    0    302\n    0    303\n    0      -\n", 3, 2, 302,
     1},
    {"dcgmi N/A", PFI_TELEMETRY_AUTO, 1,
     DCGMI_HEAD "GPU 0     300.000\nGPU 0     301.000\nGPU 0     N/A\nGPU 0     303.000\n"
                "GPU 0     304.000\n",
     4, 1, 302, 1},
    {"dcgmi N/W", PFI_TELEMETRY_AUTO, 1,
     DCGMI_HEAD "GPU 0     300.000\nGPU 0     301.000\nGPU 0     N/W\nGPU 0     303.000\n"
                "GPU 0     304.000\n",
     4, 1, 302, 1},
    {"dcgmi FP64 blank", PFI_TELEMETRY_AUTO, 1,
     DCGMI_HEAD "GPU 0     300.000\nGPU 0     301.000\nGPU 0     140737488355328.000\n"
                "GPU 0     303.000\nGPU 0     304.000\n",
     4, 1, 302, 1},
    {"dcgmi INT32 blank", PFI_TELEMETRY_AUTO, 1,
     DCGMI_HEAD "GPU 0     300.000\nGPU 0     301.000\nGPU 0     2147483632\n"
                "GPU 0     303.000\nGPU 0     304.000\n",
     4, 1, 302, 1},
    /* Energy counter only: power is derived from consecutive counter steps. 1.0e6, 1.3e6,
     * N/A, 1.9e6, 2.2e6 mJ at 1 s: 300 W at t = 1 and 4; t = 2 (counter missing) and t = 3
     * (no step from a valid sample) have no power: 2 complete, 2 incomplete; t = 0 has no
     * step to derive from and is no timestamp of the power series. */
    {"dcgmi TOTEC N/A (power from the counter)", PFI_TELEMETRY_AUTO, 1,
     "#Entity   TOTEC\nID\nGPU 0  1000000\nGPU 0  1300000\nGPU 0  N/A\nGPU 0  1900000\n"
     "GPU 0  2200000\n",
     2, 2, 300, 1},
    {"prometheus NaN", PFI_TELEMETRY_PROM, 5,
     PROM("300") "\f" PROM("301") "\f" PROM("NaN") "\f" PROM("303") "\f" PROM("304"), 4, 1, 302, 5},
    {"prometheus scrape without power (a hole)", PFI_TELEMETRY_AUTO, 5,
     PROM("300") "\f" PROM("301") "\f"
                                  "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
                                  "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n\f" PROM("303") "\f" PROM(
                                      "304"),
     4, 1, 302, 5},
    {"prometheus empty scrape (a hole)", PFI_TELEMETRY_AUTO, 5,
     PROM("300") "\f" PROM("301") "\f\f" PROM("303") "\f" PROM("304"), 4, 1, 302, 5},
    {"prometheus NaN with sample timestamps", PFI_TELEMETRY_PROM, 0,
     PROM("300 1735725600000") "\f" PROM("301 1735725601000") "\f" PROM(
         "NaN 1735725602000") "\f" PROM("303 1735725603000") "\f" PROM("304 1735725604000"),
     4, 1, 302, 1},
    /* Timestamped scrapes and an empty one: the hole's time is not known (no sample says
     * it), so it is no timestamp of the grid; it still breaks the integration. */
    {"prometheus empty scrape among timestamped ones", PFI_TELEMETRY_AUTO, 0,
     PROM("300 1735725600000") "\f" PROM("301 1735725601000") "\f\f" PROM(
         "303 1735725603000") "\f" PROM("304 1735725604000"),
     4, 0, 302, 1},
    {"nvidia-smi -q -x N/A", PFI_TELEMETRY_AUTO, 1,
     XML_DOC("300.00 W") XML_DOC("301.00 W") XML_DOC("N/A") XML_DOC("303.00 W") XML_DOC("304.00 W"),
     4, 1, 302, 1},
    /* Two GPUs (the case that always worked): gpu0 misses t = 2; sums 600 602 606 608. */
    {"dmon two GPUs -", PFI_TELEMETRY_AUTO, 0,
     DMON_HEAD "    0    300\n    1    300\n    0    301\n    1    301\n    0      -\n"
               "    1    302\n    0    303\n    1    303\n    0    304\n    1    304\n",
     4, 1, 604, 1},
};

static void missing_is_incomplete(void **state)
{
    (void)state;
    size_t bad = 0;
    for (size_t k = 0; k < sizeof missing_cases / sizeof missing_cases[0]; k++) {
        const struct missing_case *c = &missing_cases[k];
        pfi_reduced red;
        pfi_telemetry *tm = load(c->text, c->fmt, c->interval, 0, &red);
        if (red.n_complete != c->n_complete || red.n_incomplete != c->n_incomplete ||
            !(fabs(red.power.mean - c->mean) <= 1e-9) ||
            (c->align > 0 && red.align_s != c->align) ||
            !!(red.flags & PFI_RED_INCOMPLETE) != (c->n_incomplete > 0))
            print_error("%s: %zu complete / %zu incomplete (want %zu / %zu), power %.17g W "
                        "(want %.17g), grid %g s (want %g), flags %#x\n",
                        c->what, red.n_complete, red.n_incomplete, c->n_complete, c->n_incomplete,
                        red.power.mean, c->mean, red.align_s, c->align, red.flags),
                bad++;
        else if (red.n_bins != red.n_complete + red.n_incomplete)
            print_error("%s: %zu bins, %zu complete + %zu incomplete\n", c->what, red.n_bins,
                        red.n_complete, red.n_incomplete),
                bad++;
        pfi_telemetry_destroy(tm);
    }
    if (bad > 0)
        fail_msg("%zu of %zu cases wrong (above)", bad,
                 sizeof missing_cases / sizeof missing_cases[0]);
}

/* The missing samples' times are kept (pfi_telemetry_series.miss_t) for the power fields only. */
static void missing_times_kept(void **state)
{
    (void)state;
    pfi_reduced red;
    pfi_telemetry *tm = load("# gpu    pwr  mtemp\n# Idx      W      C\n    0    300      -\n"
                             "    0      -      -\n    0    302      -\n",
                             PFI_TELEMETRY_AUTO, 2, 0, &red);
    const pfi_telemetry_series *p =
        pfi_telemetry_series_get(tm, 0, (size_t)pfi_telemetry_field_find(tm, "power_w"));
    const pfi_telemetry_series *m =
        pfi_telemetry_series_get(tm, 0, (size_t)pfi_telemetry_field_find(tm, "mem_temp_c"));
    assert_non_null(p);
    assert_non_null(m);
    assert_int_equal(p->n_miss, 1);
    assert_double_equal(p->miss_t[0], 2.0, 0);
    assert_int_equal(m->n_missing, 3);
    assert_int_equal(m->n_miss, 0); /* not a power field: counted, no times kept */
    pfi_telemetry_destroy(tm);
}

/*
 * The grid when the data must give it (no --align, no --interval, real timestamps): the
 * median sampling step of the first job GPU that has one; a GPU with a single row does not
 * make it 1 s. 2 GPUs at 2 s; gpu0 (or gpu1) has one row at t = 0.
 */
#define CSV2_ROW(s, g, v) "2025/01/01 00:00:0" #s ".000, " #g ", " v " W\n"
static void grid_single_row(void **state)
{
    (void)state;
    static const char gpu0_single[] = CSV_HEAD CSV2_ROW(0, 0, "300") CSV2_ROW(0, 1, "200")
        CSV2_ROW(2, 1, "200") CSV2_ROW(4, 1, "200") CSV2_ROW(6, 1, "200") CSV2_ROW(8, 1, "200");
    static const char gpu1_single[] = CSV_HEAD CSV2_ROW(0, 0, "300") CSV2_ROW(0, 1, "200")
        CSV2_ROW(2, 0, "300") CSV2_ROW(4, 0, "300") CSV2_ROW(6, 0, "300") CSV2_ROW(8, 0, "300");
    pfi_reduced red;
    pfi_telemetry *tm = load(gpu0_single, PFI_TELEMETRY_AUTO, 0, 0, &red);
    /* Bins 0 2 4 6 8 s: only t = 0 has both GPUs. */
    assert_double_equal(red.align_s, 2.0, 0);
    assert_int_equal(red.n_complete, 1);
    assert_int_equal(red.n_incomplete, 4);
    assert_double_equal(red.power.mean, 500.0, 0);
    assert_non_null(strstr(red.align_note, "gpu0"));
    assert_non_null(strstr(red.align_note, "gpu1"));
    assert_non_null(strstr(red.align_note, "2 s"));
    pfi_telemetry_destroy(tm);

    /* The first GPU has the step: the usual case, nothing to say. */
    tm = load(gpu1_single, PFI_TELEMETRY_AUTO, 0, 0, &red);
    assert_double_equal(red.align_s, 2.0, 0);
    assert_int_equal(red.n_incomplete, 4);
    assert_string_equal(red.align_note, "");
    pfi_telemetry_destroy(tm);

    /* --interval or --align given: used as they are, nothing to say. */
    tm = load(gpu0_single, PFI_TELEMETRY_AUTO, 4, 0, &red);
    assert_double_equal(red.align_s, 4.0, 0);
    assert_string_equal(red.align_note, "");
    pfi_telemetry_destroy(tm);
    tm = load(gpu0_single, PFI_TELEMETRY_AUTO, 0, 8, &red);
    assert_double_equal(red.align_s, 8.0, 0);
    assert_string_equal(red.align_note, "");
    pfi_telemetry_destroy(tm);

    /* No GPU has two samples (one query): nothing to measure; 1 s assumed, and said. */
    tm = load(CSV_HEAD CSV2_ROW(0, 0, "300") CSV2_ROW(0, 1, "200"), PFI_TELEMETRY_AUTO, 0, 0, &red);
    assert_double_equal(red.align_s, 1.0, 0);
    assert_int_equal(red.n_complete, 1);
    assert_double_equal(red.power.mean, 500.0, 0);
    assert_non_null(strstr(red.align_note, "1 s assumed"));
    pfi_telemetry_destroy(tm);

    /* Nominal times without --interval: the collector's 1 s (noted by the reader). */
    tm = load(DMON_HEAD "    0    300\n    1    200\n    1    200\n", PFI_TELEMETRY_AUTO, 0, 0,
              &red);
    assert_double_equal(red.align_s, 1.0, 0);
    assert_true(tm->interval_assumed);
    assert_string_equal(red.align_note, "");
    pfi_telemetry_destroy(tm);
}

/*
 * An nvidia-smi -lms 100 capture as it comes: 4 GPUs, every loop 100..112 ms after the last
 * (a fixed pseudo-random sequence), consecutive GPUs of a loop 0..3 ms apart, none missing.
 * skip_loop/skip_gpu: that GPU's row of that loop is absent (SIZE_MAX: none); na_loop: gpu1's
 * value in that loop is [N/A] (SIZE_MAX: none). Returns a malloc'd text.
 */
static char *jitter_csv(size_t loops, size_t skip_loop, size_t skip_gpu, size_t na_loop)
{
    size_t cap = 64 + loops * 4 * 64, len = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    len += (size_t)snprintf(s, cap, "%s", CSV_HEAD);
    unsigned rng = 12345;
    long ms = 0; /* loop time, ms after 2025/01/01 10:00:00 */
    for (size_t l = 0; l < loops; l++) {
        for (size_t g = 0; g < 4; g++) {
            if (l == skip_loop && g == skip_gpu)
                continue;
            long t = ms + (long)g * (long)((l % 4) == 0 ? 0 : (l % 3) + 1);
            char v[16];
            if (l == na_loop && g == 1)
                snprintf(v, sizeof v, "[N/A]");
            else
                snprintf(v, sizeof v, "%zu.00 W", 100 + g);
            len +=
                (size_t)snprintf(s + len, cap - len, "2025/01/01 10:%02ld:%02ld.%03ld, %zu, %s\n",
                                 t / 60000, (t / 1000) % 60, t % 1000, g, v);
        }
        rng = rng * 1103515245u + 12345u;
        ms += 100 + (long)((rng >> 16) % 13);
    }
    return s;
}

/*
 * Sampling jitter alone never makes a timestamp incomplete: the rows of one capture loop
 * belong together however the loop falls on the grid (the grid step is the median step,
 * about 0.106 s, so loops drift across bin edges and a loop's GPUs a few ms apart used to
 * straddle one). A truly absent row or a missing value still makes its loop incomplete.
 */
static void jitter_is_not_incomplete(void **state)
{
    (void)state;
    pfi_reduced red;
    char *csv = jitter_csv(600, SIZE_MAX, 0, SIZE_MAX);
    pfi_telemetry *tm = load(csv, PFI_TELEMETRY_AUTO, 0, 0, &red);
    assert_true(red.align_s > 0.1 && red.align_s < 0.112);
    assert_int_equal(red.n_incomplete, 0);
    assert_false(red.flags & PFI_RED_INCOMPLETE);
    /* Every loop a timestamp of its own: two loops closer than the measured step are
     * two timestamps, never one bin that keeps the first loop's samples. */
    assert_int_equal(red.n_complete, 600);
    assert_double_equal(red.power.mean, 100 + 101 + 102 + 103, 1e-9);
    pfi_telemetry_destroy(tm);
    free(csv);

    /* A coarser --align still sums one sample per GPU per bin, all complete. */
    csv = jitter_csv(600, SIZE_MAX, 0, SIZE_MAX);
    tm = load(csv, PFI_TELEMETRY_AUTO, 0, 0.5, &red);
    assert_int_equal(red.n_incomplete, 0);
    pfi_telemetry_destroy(tm);
    free(csv);

    /* gpu2's row of loop 300 is absent: that one timestamp lacks a GPU. */
    csv = jitter_csv(600, 300, 2, SIZE_MAX);
    tm = load(csv, PFI_TELEMETRY_AUTO, 0, 0, &red);
    assert_int_equal(red.n_incomplete, 1);
    assert_int_equal(red.n_complete, 599);
    assert_true(red.flags & PFI_RED_INCOMPLETE);
    pfi_telemetry_destroy(tm);
    free(csv);

    /* gpu1 reads [N/A] in loop 200: incomplete, one timestamp. */
    csv = jitter_csv(600, SIZE_MAX, 0, 200);
    tm = load(csv, PFI_TELEMETRY_AUTO, 0, 0, &red);
    assert_int_equal(red.n_incomplete, 1);
    pfi_telemetry_destroy(tm);
    free(csv);
}

/* 2 GPUs, 4 rows each; gpu1's third row is dated 8 months early (a wrong date: within a
 * year of the others, so not excluded as implausible by pfi_telemetry_summarize). */
#define CSV2_HEAD_1970                                                                             \
    CSV_HEAD CSV2_ROW(0, 0, "300") CSV2_ROW(0, 1, "200") CSV2_ROW(1, 0, "300")                     \
        CSV2_ROW(1, 1, "200")                                                                      \
            CSV2_ROW(2, 0, "300") "2024/05/01 00:00:00.000, 1, 200 W\n" CSV2_ROW(3, 0, "300")      \
                CSV2_ROW(3, 1, "200")

/* Reads a CSV text and reduces it, expecting PFI_ERR_LIMIT; the reason in red->grid_error. */
static void expect_limit(const char *text, double interval, double align, pfi_reduced *red)
{
    pfi_telemetry_options o = {.keep_series = true, .interval_s = interval};
    pfi_telemetry *tm = NULL;
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    FILE *f = fmemopen((void *)text, strlen(text), "rb");
    assert_non_null(f);
    pfi_diag d;
    assert_int_equal(pfi_telemetry_read_stream(tm, f, "mem", PFI_TELEMETRY_AUTO, &d), PFI_OK);
    fclose(f);
    pfi_telemetry_summarize(tm);
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    ro.align_s = align;
    assert_int_equal(pfi_reduce_power(tm, &ro, red), PFI_ERR_LIMIT);
    pfi_telemetry_destroy(tm);
}

/*
 * A time grid too large to build is refused with the reason spelled out: the span, the
 * step, the grid points it would need, and the sample far from the others (GPU, its row
 * number in that GPU's series, its time) with what to do.
 */
static void far_off_time_said(void **state)
{
    (void)state;
    pfi_reduced red;
    /* One row dated 2024/05/01 (a wrong date) among rows of 2025. */
    expect_limit(CSV2_HEAD_1970, 0, 0, &red);
    assert_non_null(strstr(red.grid_error, "2024-05-01 00:00:00"));
    assert_non_null(strstr(red.grid_error, "gpu1"));
    assert_non_null(strstr(red.grid_error, "sample 3 of 4"));
    assert_non_null(strstr(red.grid_error, "grid step 1 s"));
    assert_non_null(strstr(red.grid_error, "grid points"));
    assert_non_null(strstr(red.grid_error, "correct or remove"));

    /* Two captures 9 days apart, both real, at a 0.1 s grid: too many points; a coarser
     * --align is the remedy, and the message says which step would fit. */
    expect_limit(CSV_HEAD "2025/01/01 00:00:00.000, 0, 300\n2025/01/01 00:00:00.100, 0, 300\n"
                          "2025/01/10 00:00:00.000, 0, 300\n2025/01/10 00:00:00.100, 0, 300\n",
                 0, 0, &red);
    assert_non_null(strstr(red.grid_error, "grid step 0.1 s"));
    assert_non_null(strstr(red.grid_error, "9 days"));
    assert_non_null(strstr(red.grid_error, "--align"));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/*
 * The grid step is the median of gpu0's clean steps exactly, the mean of the two middle ones
 * for an even count, and the gap rule's step is their lower median: both checked against a
 * sort of the steps done here (the library selects, it does not sort). 600 and 601 loops of
 * jittered times: 599 and 600 steps.
 */
static void grid_step_is_sorted_median(void **state)
{
    (void)state;
    for (size_t loops = 600; loops <= 601; loops++) {
        pfi_reduced red;
        char *csv = jitter_csv(loops, SIZE_MAX, 0, SIZE_MAX);
        pfi_telemetry *tm = load(csv, PFI_TELEMETRY_AUTO, 0, 0, &red);
        const pfi_telemetry_series *s =
            pfi_telemetry_series_get(tm, 0, (size_t)pfi_telemetry_field_find(tm, "power_w"));
        assert_non_null(s);
        assert_int_equal(s->n, loops);
        double *d = malloc(loops * sizeof *d);
        assert_non_null(d);
        size_t k = 0;
        for (size_t i = 1; i < s->n; i++)
            d[k++] = s->t_s[i] - s->t_s[i - 1];
        qsort(d, k, sizeof *d, cmp_double);
        double want = k % 2 ? d[k / 2] : (d[k / 2 - 1] + d[k / 2]) / 2.0;
        assert_true(d[0] < d[k - 1]); /* jittered: the selection has work to do */
        assert_true(red.align_s == want);
        double step;
        pfi_telemetry_gaps(s, &step, NULL);
        assert_true(step == d[(k - 1) / 2]);
        free(d);
        pfi_telemetry_destroy(tm);
        free(csv);
    }
}

/*
 * The job power is the same whether the rows come in time order (merged as they are) or
 * not (a time that jumps back splits the series; the rows are then sorted): 2 GPUs, four
 * loops 1 s apart, then the same four loops again written 10 s earlier (the clock set
 * back). q = 1: the mean of the complete loop sums, 500 W, over 8 loops either way.
 */
static void rows_merged_or_sorted(void **state)
{
    (void)state;
    pfi_reduced red;
    pfi_telemetry *tm = load(CSV_HEAD "2025/01/01 00:00:10.000, 0, 300 W\n"
                                      "2025/01/01 00:00:10.002, 1, 200 W\n"
                                      "2025/01/01 00:00:11.000, 0, 310 W\n"
                                      "2025/01/01 00:00:11.002, 1, 190 W\n"
                                      "2025/01/01 00:00:12.000, 0, 320 W\n"
                                      "2025/01/01 00:00:12.002, 1, 180 W\n"
                                      "2025/01/01 00:00:13.000, 0, 330 W\n"
                                      "2025/01/01 00:00:13.002, 1, 170 W\n",
                             PFI_TELEMETRY_AUTO, 0, 0, &red);
    assert_int_equal(red.n_complete, 4);
    assert_double_equal(red.power.mean, 500, 1e-12);
    pfi_telemetry_destroy(tm);
    tm = load(CSV_HEAD "2025/01/01 00:00:10.000, 0, 300 W\n"
                       "2025/01/01 00:00:10.002, 1, 200 W\n"
                       "2025/01/01 00:00:11.000, 0, 310 W\n"
                       "2025/01/01 00:00:11.002, 1, 190 W\n"
                       "2025/01/01 00:00:00.000, 0, 320 W\n"
                       "2025/01/01 00:00:00.002, 1, 180 W\n"
                       "2025/01/01 00:00:01.000, 0, 330 W\n"
                       "2025/01/01 00:00:01.002, 1, 170 W\n",
              PFI_TELEMETRY_AUTO, 0, 0, &red);
    assert_int_equal(red.n_complete, 4);
    assert_int_equal(red.n_incomplete, 0);
    assert_double_equal(red.power.mean, 500, 1e-12);
    pfi_telemetry_destroy(tm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(missing_is_incomplete), cmocka_unit_test(missing_times_kept),
        cmocka_unit_test(grid_single_row),       cmocka_unit_test(jitter_is_not_incomplete),
        cmocka_unit_test(far_off_time_said),     cmocka_unit_test(grid_step_is_sorted_median),
        cmocka_unit_test(rows_merged_or_sorted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
