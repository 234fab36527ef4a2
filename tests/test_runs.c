/*
 * Unit tests of pfi/runs.h: column mappings, the runs table reader and sweep grouping.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "checks.h"

#include "pfi/runs.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- helpers ---------------------------------------------------------------------------- */

/* Set mapping fields from NULL-terminated "field", "value" pairs (after clearing it). */
static void map(pfi_mapping *m, ...)
{
    pfi_mapping_clear(m);
    va_list ap;
    va_start(ap, m);
    const char *field;
    while ((field = va_arg(ap, const char *)) != NULL) {
        const char *value = va_arg(ap, const char *);
        if (pfi_mapping_set(m, field, value) != PFI_OK)
            fail_msg("pfi_mapping_set(%s, %s) failed", field, value ? value : "NULL");
    }
    va_end(ap);
}

/* Read text (len bytes; 0 = strlen) as the file `name` through fmemopen. */
static pfi_error read_text_len(pfi_runs_table *t, const char *name, const char *text, size_t len,
                               const pfi_mapping *m, pfi_diag *d)
{
    if (len == 0)
        len = strlen(text);
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, text, len);
    FILE *f = len ? fmemopen(copy, len, "r") : fopen("/dev/null", "r");
    assert_non_null(f);
    pfi_error e = pfi_runs_read_stream(t, f, name, m, d);
    fclose(f);
    free(copy);
    return e;
}

static pfi_error read_text(pfi_runs_table *t, const char *name, const char *text,
                           const pfi_mapping *m, pfi_diag *d)
{
    return read_text_len(t, name, text, 0, m, d);
}

static pfi_runs_table *new_table(void)
{
    pfi_runs_table *t = NULL;
    assert_int_equal(pfi_runs_table_create(&t), PFI_OK);
    assert_non_null(t);
    assert_int_equal(t->n_groups, 0);
    assert_int_equal(t->n_files, 0);
    assert_int_equal(t->n_runs, 0);
    return t;
}

static void assert_close(double got, double want, double rel, const char *what)
{
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("%s: %.17g, want %.17g (rel %g)", what, got, want, rel);
}

static void expect_run(const pfi_run *r, long line, unsigned valid, double cap, double power,
                       double tput)
{
    if (r->line != line)
        fail_msg("run line %ld, want %ld", r->line, line);
    if (r->valid != valid)
        fail_msg("line %ld: valid 0x%x, want 0x%x", line, r->valid, valid);
    if (valid & PFI_RUN_CAP)
        assert_close(r->cap_w, cap, 1e-15, "cap");
    if (valid & PFI_RUN_POWER)
        assert_close(r->power_w, power, 1e-15, "power");
    if (valid & PFI_RUN_THROUGHPUT)
        assert_close(r->throughput, tput, 1e-15, "throughput");
}

#define BASIC (PFI_RUN_CAP | PFI_RUN_POWER | PFI_RUN_THROUGHPUT)

/* ---- mapping ---------------------------------------------------------------------------- */

static const char *const scalar_fields[] = {
    "cap",  "cap_regex", "power",         "energy",  "duration", "throughput",
    "time", "power_se",  "throughput_se", "time_se", "gpus",     "job_class",
};

static void test_mapping_set_get(void **state)
{
    (void)state;
    pfi_mapping m = {0};
    for (size_t i = 0; i < ARRAY_LEN(scalar_fields); i++) {
        assert_null(pfi_mapping_get(&m, scalar_fields[i]));
        char expected[64], value[64];
        snprintf(expected, sizeof expected, "col_%s", scalar_fields[i]);
        memcpy(value, expected, sizeof value);
        assert_int_equal(pfi_mapping_set(&m, scalar_fields[i], value), PFI_OK);
        value[0] = 'X'; /* the mapping holds a copy */
        const char *got = pfi_mapping_get(&m, scalar_fields[i]);
        assert_non_null(got);
        assert_ptr_not_equal(got, value);
        assert_string_equal(got, expected);
    }
    /* each field is its own slot */
    assert_string_equal(m.cap, "col_cap");
    assert_string_equal(m.cap_regex, "col_cap_regex");
    assert_string_equal(m.power, "col_power");
    assert_string_equal(m.energy, "col_energy");
    assert_string_equal(m.duration, "col_duration");
    assert_string_equal(m.throughput, "col_throughput");
    assert_string_equal(m.time, "col_time");
    assert_string_equal(m.power_se, "col_power_se");
    assert_string_equal(m.throughput_se, "col_throughput_se");
    assert_string_equal(m.time_se, "col_time_se");
    assert_string_equal(m.gpus, "col_gpus");
    assert_string_equal(m.job_class, "col_job_class");
    /* replace, then unmap */
    assert_int_equal(pfi_mapping_set(&m, "power", "watts"), PFI_OK);
    assert_string_equal(pfi_mapping_get(&m, "power"), "watts");
    assert_int_equal(pfi_mapping_set(&m, "power", NULL), PFI_OK);
    assert_null(pfi_mapping_get(&m, "power"));
    assert_null(m.power);
    assert_string_equal(pfi_mapping_get(&m, "energy"), "col_energy");
    /* unknown fields */
    assert_int_equal(pfi_mapping_set(&m, "powr", "x"), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_mapping_set(&m, "", "x"), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_mapping_set(&m, "Cap", "x"), PFI_ERR_INVALID_ARGUMENT);
    assert_null(pfi_mapping_get(&m, "powr"));
    assert_null(pfi_mapping_get(&m, "group"));
    assert_string_equal(pfi_mapping_get(&m, "cap"), "col_cap"); /* untouched by the failures */
    pfi_mapping_clear(&m);
    for (size_t i = 0; i < ARRAY_LEN(scalar_fields); i++)
        assert_null(pfi_mapping_get(&m, scalar_fields[i]));
    assert_int_equal(m.n_group, 0);
    pfi_mapping_clear(&m); /* twice is fine */
    pfi_mapping_clear(NULL);
}

static void test_mapping_group(void **state)
{
    (void)state;
    pfi_mapping m = {0};
    assert_int_equal(pfi_mapping_set(&m, "group", "dataset,network,batch_size"), PFI_OK);
    assert_int_equal(m.n_group, 3);
    assert_string_equal(m.group[0], "dataset");
    assert_string_equal(m.group[1], "network");
    assert_string_equal(m.group[2], "batch_size");
    /* "group" replaces the whole list */
    assert_int_equal(pfi_mapping_set(&m, "group", "@file"), PFI_OK);
    assert_int_equal(m.n_group, 1);
    assert_string_equal(m.group[0], PFI_FILE_COLUMN);
    /* the most key columns allowed, then one more */
    char list[256] = "";
    for (int i = 0; i < PFI_MAX_GROUP_COLUMNS; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%sk%d", i ? "," : "", i);
    assert_int_equal(pfi_mapping_set(&m, "group", list), PFI_OK);
    assert_int_equal(m.n_group, PFI_MAX_GROUP_COLUMNS);
    assert_string_equal(m.group[PFI_MAX_GROUP_COLUMNS - 1], "k15");
    strcat(list, ",k16");
    assert_int_equal(pfi_mapping_set(&m, "group", list), PFI_ERR_INVALID_ARGUMENT);
    assert_true(m.n_group <= PFI_MAX_GROUP_COLUMNS);
    /* NULL unmaps */
    assert_int_equal(pfi_mapping_set(&m, "group", NULL), PFI_OK);
    assert_int_equal(m.n_group, 0);
    pfi_mapping_clear(&m);
}

static const struct {
    const char *name;
    const char *pairs[24]; /* field, value, ... NULL */
    bool ok;
    const char *why; /* substring of the message */
} checks[] = {
    {"empty", {NULL}, false, "group"},
    {"no cap", {"group", "job", NULL}, false, "cap"},
    {"no power", {"group", "job", "cap", "c", "throughput", "t", NULL}, false, "power"},
    {"power and energy",
     {"group", "job", "cap", "c", "power", "p", "energy", "e", "duration", "d", "throughput", "t",
      NULL},
     false,
     "both"},
    {"energy without duration",
     {"group", "job", "cap", "c", "energy", "e", "throughput", "t", NULL},
     false,
     "duration"},
    {"no throughput", {"group", "job", "cap", "c", "power", "p", NULL}, false, "throughput"},
    {"throughput and time",
     {"group", "job", "cap", "c", "power", "p", "throughput", "t", "time", "s", NULL},
     false,
     "both"},
    {"throughput_se and time_se",
     {"group", "job", "cap", "c", "power", "p", "time", "s", "throughput_se", "a", "time_se", "b",
      NULL},
     false,
     "time_se"},
    {"power + throughput",
     {"group", "job", "cap", "c", "power", "p", "throughput", "t", NULL},
     true,
     NULL},
    {"power + time", {"group", "job", "cap", "c", "power", "p", "time", "t", NULL}, true, NULL},
    {"energy + duration + throughput",
     {"group", "job", "cap", "c", "energy", "e", "duration", "d", "throughput", "t", NULL},
     true,
     NULL},
    {"energy falls back to time",
     {"group", "@file", "cap", "c", "energy", "e", "time", "t", NULL},
     true,
     NULL},
    {"everything optional",
     {"group", "a,b", "cap", "c", "cap_regex", "_([0-9]+)", "power", "p", "time", "t", "power_se",
      "ps", "time_se", "ts", "gpus", "g", "job_class", "j", NULL},
     true,
     NULL},
};

static void test_mapping_check(void **state)
{
    (void)state;
    for (size_t c = 0; c < ARRAY_LEN(checks); c++) {
        pfi_mapping m = {0};
        for (size_t i = 0; checks[c].pairs[i] != NULL; i += 2)
            assert_int_equal(pfi_mapping_set(&m, checks[c].pairs[i], checks[c].pairs[i + 1]),
                             PFI_OK);
        char msg[256];
        memset(msg, 'Z', sizeof msg);
        msg[sizeof msg - 1] = '\0';
        pfi_error e = pfi_mapping_check(&m, msg, sizeof msg);
        if (checks[c].ok && e != PFI_OK)
            fail_msg("%s: rejected: %s", checks[c].name, msg);
        if (!checks[c].ok) {
            if (e != PFI_ERR_INVALID_ARGUMENT)
                fail_msg("%s: error %d, want INVALID_ARGUMENT", checks[c].name, (int)e);
            if (strstr(msg, checks[c].why) == NULL)
                fail_msg("%s: message '%s' does not mention '%s'", checks[c].name, msg,
                         checks[c].why);
            /* a short buffer is filled and NUL-terminated */
            char small[8];
            memset(small, 'Z', sizeof small);
            assert_int_equal(pfi_mapping_check(&m, small, sizeof small), PFI_ERR_INVALID_ARGUMENT);
            assert_int_equal(strlen(small), sizeof small - 1);
            assert_memory_equal(small, msg, sizeof small - 1);
        }
        pfi_mapping_clear(&m);
    }
}

/* ---- reading: each mapping style -------------------------------------------------------- */

static void test_read_direct(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "job", "cap", "cap", "power", "power", "throughput", "tput", NULL);
    pfi_diag d;
    const char *csv = " job , cap , power , tput \n"
                      "A,300,250.5,100\n"
                      "A,200,180,90\n"
                      "A, 250 ,\"220\",95.25\n";
    pfi_error e = read_text(t, "dir/direct.csv", csv, &m, &d);
    if (e != PFI_OK)
        fail_msg("read failed: %d %s", (int)e, d.message);
    assert_int_equal(t->n_files, 1);
    assert_string_equal(t->files[0], "dir/direct.csv");
    assert_int_equal(t->n_groups, 1);
    assert_int_equal(t->n_runs, 3);
    const pfi_group *g = &t->groups[0];
    assert_int_equal(g->file_index, 0);
    assert_int_equal(g->n_key, 1);
    assert_string_equal(g->key_names[0], "job");
    assert_string_equal(g->key_values[0], "A");
    assert_null(g->job_class);
    assert_int_equal(g->n_runs, 3);
    expect_run(&g->runs[0], 2, BASIC, 300, 250.5, 100);
    expect_run(&g->runs[1], 4, BASIC, 250, 220, 95.25);
    expect_run(&g->runs[2], 3, BASIC, 200, 180, 90);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

static void test_read_power_glob(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "job", "cap", "cap", "power", "gpu*_power", "throughput", "tput", NULL);
    pfi_diag d;
    const char *csv = "job,cap,gpu0_power,cpu_power,gpu1_power,gpu2_power,tput\n"
                      "A,300,100.25,999,101.5,99.125,10\n";
    assert_int_equal(read_text(t, "glob.csv", csv, &m, &d), PFI_OK);
    assert_int_equal(t->n_runs, 1);
    expect_run(&t->groups[0].runs[0], 2, BASIC, 300, 100.25 + 101.5 + 99.125, 10);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

static void test_read_energy(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "job", "cap", "cap", "energy", "gpu*_energy", "duration", "elapsed",
        "throughput", "tput", NULL);
    pfi_diag d;
    const char *csv = "job,cap,gpu0_energy,gpu1_energy,elapsed,tput\n"
                      "A,300,2053.679,2051.02,9.2169,7\n"
                      "A,250,1000,3000,8,6\n";
    assert_int_equal(read_text(t, "energy.csv", csv, &m, &d), PFI_OK);
    const pfi_group *g = &t->groups[0];
    assert_int_equal(g->n_runs, 2);
    expect_run(&g->runs[0], 2, BASIC, 300, (2053.679 + 2051.02) / 9.2169, 7);
    expect_run(&g->runs[1], 3, BASIC, 250, 500, 6);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

/* Zeus JIT style: energy / elapsed_time, throughput = 1 / elapsed_time, cap from a name. */
static void test_read_energy_time_regex(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "@file", "cap", "window_name", "cap_regex", "_([0-9]+)$", "energy",
        "gpu*_energy", "duration", "elapsed_time", "time", "elapsed_time", NULL);
    pfi_diag d;
    const char *csv = "start_time,window_name,elapsed_time,gpu0_energy\n"
                      "13585625.1,__GlobalPowerLimitOptimizer_300,9.216910222545266,"
                      "2053.679000005126\n"
                      "13585637.0,__GlobalPowerLimitOptimizer_275,9.074575340375304,"
                      "2051.0199999958277\n"
                      "13585648.0,__GlobalPowerLimitOptimizer_100,12.5,1000\n";
    pfi_error e = read_text(t, "A40+resnet18+gpu0.csv", csv, &m, &d);
    if (e != PFI_OK)
        fail_msg("%d %s", (int)e, d.message);
    assert_int_equal(t->n_groups, 1);
    const pfi_group *g = &t->groups[0];
    assert_string_equal(g->key_names[0], "@file");
    assert_string_equal(g->key_values[0], "A40+resnet18+gpu0.csv");
    assert_int_equal(g->n_runs, 3);
    expect_run(&g->runs[0], 2, BASIC, 300, 2053.679000005126 / 9.216910222545266,
               1 / 9.216910222545266);
    expect_run(&g->runs[1], 3, BASIC, 275, 2051.0199999958277 / 9.074575340375304,
               1 / 9.074575340375304);
    expect_run(&g->runs[2], 4, BASIC, 100, 80, 0.08);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

static void test_read_time(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "job", "cap", "cap", "power", "p", "time", "time_per_epoch", NULL);
    pfi_diag d;
    const char *csv = "job,cap,p,time_per_epoch\nA,100,106.88881213499654,27.130000000000003\n"
                      "A,125,118.98703190840182,16.85\nA,150,141.6,0.25\n";
    assert_int_equal(read_text(t, "time.csv", csv, &m, &d), PFI_OK);
    const pfi_group *g = &t->groups[0];
    assert_int_equal(g->n_runs, 3);
    expect_run(&g->runs[0], 4, BASIC, 150, 141.6, 4.0);
    expect_run(&g->runs[1], 3, BASIC, 125, 118.98703190840182, 1 / 16.85);
    expect_run(&g->runs[2], 2, BASIC, 100, 106.88881213499654, 1 / 27.130000000000003);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

static void test_read_cap_regex(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "job", "cap", "name", "cap_regex", "_([0-9]+)$", "power", "p", "throughput",
        "t", NULL);
    pfi_diag d;
    const char *csv = "job,name,p,t\n"
                      "A,__GlobalPowerLimitOptimizer_275,1,1\n"
                      "A,x_1_300,2,2\n"
                      "A,[N/A],3,3\n"
                      "A,,4,4\n";
    pfi_error e = read_text(t, "re.csv", csv, &m, &d);
    if (e != PFI_OK)
        fail_msg("%d %s", (int)e, d.message);
    const pfi_group *g = &t->groups[0];
    assert_int_equal(g->n_runs, 4);
    expect_run(&g->runs[0], 3, BASIC, 300, 2, 2);
    expect_run(&g->runs[1], 2, BASIC, 275, 1, 1);
    expect_run(&g->runs[2], 4, BASIC & ~PFI_RUN_CAP, 0, 3, 3);
    expect_run(&g->runs[3], 5, BASIC & ~PFI_RUN_CAP, 0, 4, 4);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

static void test_read_standard_errors(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "job", "cap", "cap", "power", "p", "throughput", "t", "power_se", "pse",
        "throughput_se", "tse", NULL);
    pfi_diag d;
    const char *csv = "job,cap,p,t,pse,tse\n"
                      "A,300,250,100,1.5,0.25\n"
                      "A,200,150,80,N/A,0\n"
                      "A,100,50,40,0,[N/A]\n";
    assert_int_equal(read_text(t, "se.csv", csv, &m, &d), PFI_OK);
    const pfi_group *g = &t->groups[0];
    const unsigned all = BASIC | PFI_RUN_POWER_SE | PFI_RUN_THROUGHPUT_SE;
    expect_run(&g->runs[0], 2, all, 300, 250, 100);
    assert_true(g->runs[0].power_se_w == 1.5);
    assert_true(g->runs[0].throughput_se == 0.25);
    expect_run(&g->runs[1], 3, all & ~PFI_RUN_POWER_SE, 200, 150, 80);
    assert_true(g->runs[1].throughput_se == 0.0);
    expect_run(&g->runs[2], 4, all & ~PFI_RUN_THROUGHPUT_SE, 100, 50, 40);
    assert_true(g->runs[2].power_se_w == 0.0);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

/* time_se: throughput = 1/time, se(throughput) = time_se / time^2 (delta method). */
static void test_read_time_se_delta(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "job", "cap", "cap", "power", "p", "time", "s", "time_se", "s_se", NULL);
    pfi_diag d;
    const char *csv = "job,cap,p,s,s_se\n"
                      "A,400,1,2.5,0.1\n"
                      "A,300,1,4,0.2\n"
                      "A,200,1,27.130000000000003,0.37\n"
                      "A,100,1,,0.5\n"
                      "A,50,1,8,\n";
    pfi_error e = read_text(t, "delta.csv", csv, &m, &d);
    if (e != PFI_OK)
        fail_msg("%d %s", (int)e, d.message);
    const pfi_group *g = &t->groups[0];
    assert_int_equal(g->n_runs, 5);
    const unsigned with_se = BASIC | PFI_RUN_THROUGHPUT_SE;
    expect_run(&g->runs[0], 2, with_se, 400, 1, 0.4);
    assert_close(g->runs[0].throughput_se, 0.016, 1e-14, "0.1 / 2.5^2");
    expect_run(&g->runs[1], 3, with_se, 300, 1, 0.25);
    assert_close(g->runs[1].throughput_se, 0.0125, 1e-14, "0.2 / 4^2");
    expect_run(&g->runs[2], 4, with_se, 200, 1, 1 / 27.130000000000003);
    assert_close(g->runs[2].throughput_se, 0.37 / (27.130000000000003 * 27.130000000000003), 1e-14,
                 "0.37 / 27.13^2");
    /* no time: neither the throughput nor its standard error */
    expect_run(&g->runs[3], 5, PFI_RUN_CAP | PFI_RUN_POWER, 100, 1, 0);
    /* no time_se: the throughput alone */
    expect_run(&g->runs[4], 6, BASIC, 50, 1, 0.125);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

static void test_read_gpus_and_class(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "job", "cap", "cap", "power", "p", "throughput", "t", "gpus", "n_gpu",
        "job_class", "class", NULL);
    pfi_diag d;
    const char *csv = "job,cap,p,t,n_gpu,class\n"
                      "A,300,1,1,8,dense\n"
                      "A,200,1,1,8,dense\n"
                      "B,300,1,1,N/A,\n"
                      "B,200,1,1,1,N/A\n"
                      "C,300,1,1,4,-\n"
                      "C,250,1,1,4,moe-pt\n";
    pfi_error e = read_text(t, "cls.csv", csv, &m, &d);
    if (e != PFI_OK)
        fail_msg("%d %s", (int)e, d.message);
    assert_int_equal(t->n_groups, 3);
    assert_string_equal(t->groups[0].job_class, "dense");
    assert_int_equal(t->groups[0].runs[0].valid, BASIC | PFI_RUN_GPUS);
    assert_true(t->groups[0].runs[0].gpus == 8);
    assert_null(t->groups[1].job_class); /* missing in every run */
    assert_int_equal(t->groups[1].runs[0].valid, BASIC);
    assert_int_equal(t->groups[1].runs[1].valid, BASIC | PFI_RUN_GPUS);
    assert_true(t->groups[1].runs[1].gpus == 1);
    assert_string_equal(t->groups[2].job_class, "moe-pt"); /* the one run that has it */
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

/* ---- the "@file" key -------------------------------------------------------------------- */

static void test_file_key(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "@file,model", "cap", "cap", "power", "p", "throughput", "t", NULL);
    pfi_diag d;
    const char *csv = "model,cap,p,t\nbert,300,1,1\nresnet,300,1,1\nbert,200,1,1\n";
    assert_int_equal(read_text(t, "/data/set/V100+bert.csv", csv, &m, &d), PFI_OK);
    assert_int_equal(read_text(t, "plain.csv", csv, &m, &d), PFI_OK);
    assert_int_equal(t->n_groups, 4);
    static const char *const want[4][2] = {
        {"V100+bert.csv", "bert"},
        {"V100+bert.csv", "resnet"},
        {"plain.csv", "bert"},
        {"plain.csv", "resnet"},
    };
    for (size_t i = 0; i < 4; i++) {
        const pfi_group *g = &t->groups[i];
        assert_int_equal(g->file_index, i / 2);
        assert_int_equal(g->n_key, 2);
        assert_string_equal(g->key_names[0], "@file");
        assert_string_equal(g->key_names[1], "model");
        assert_string_equal(g->key_values[0], want[i][0]);
        assert_string_equal(g->key_values[1], want[i][1]);
    }
    assert_string_equal(t->files[0], "/data/set/V100+bert.csv");
    assert_string_equal(t->files[1], "plain.csv");
    assert_int_equal(t->groups[0].n_runs, 2);
    assert_int_equal(t->groups[1].n_runs, 1);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

/* Through pfi_runs_read_csv: files[] shows the path (or the name), "@file" its base name. */
static void test_read_csv_file(void **state)
{
    (void)state;
    char path[] = "/tmp/pfi-test-runs-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char csv[] = "cap,p,t\n300,250,10\n200,150,8\n";
    assert_int_equal(write(fd, csv, sizeof csv - 1), (ssize_t)(sizeof csv - 1));
    close(fd);
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "@file", "cap", "cap", "power", "p", "throughput", "t", NULL);
    pfi_diag d;
    assert_int_equal(pfi_runs_read_csv(t, path, NULL, &m, &d), PFI_OK);
    assert_int_equal(pfi_runs_read_csv(t, path, "shown/as.csv", &m, &d), PFI_OK);
    assert_int_equal(t->n_files, 2);
    assert_string_equal(t->files[0], path);
    assert_string_equal(t->files[1], "shown/as.csv");
    assert_int_equal(t->n_groups, 2);
    assert_string_equal(t->groups[0].key_values[0], path + strlen("/tmp/"));
    assert_string_equal(t->groups[1].key_values[0], "as.csv");
    expect_run(&t->groups[0].runs[0], 2, BASIC, 300, 250, 10);
    unlink(path);
    /* a missing file */
    assert_int_equal(pfi_runs_read_csv(t, path, NULL, &m, &d), PFI_ERR_IO);
    assert_string_equal(d.file, path);
    assert_true(d.message[0] != '\0');
    assert_int_equal(pfi_runs_read_csv(t, path, "named.csv", &m, &d), PFI_ERR_IO);
    assert_string_equal(d.file, "named.csv");
    assert_int_equal(t->n_files, 2);
    assert_int_equal(t->n_groups, 2);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

/* ---- grouping --------------------------------------------------------------------------- */

static void test_grouping_order(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "net,bs", "cap", "cap", "power", "p", "throughput", "t", NULL);
    pfi_diag d;
    const char *csv = "net,bs,cap,p,t\n"
                      "zeta,32,200,1,1\n"      /* 2: group zeta/32 */
                      "alpha,64,300,2,2\n"     /* 3: group alpha/64 */
                      "zeta,32,N/A,3,3\n"      /* 4 */
                      "zeta,32,300,4,4\n"      /* 5 */
                      "mid,8,100,5,5\n"        /* 6: group mid/8 */
                      "alpha,64,250,6,6\n"     /* 7 */
                      "zeta,32,200,7,7\n"      /* 8: equal cap, later line */
                      "zeta,64,200,8,8\n"      /* 9: group zeta/64 (differs in bs only) */
                      "zeta,32,,9,9\n"         /* 10: missing cap */
                      "zeta,32,250.5,10,10\n"; /* 11 */
    assert_int_equal(read_text(t, "g.csv", csv, &m, &d), PFI_OK);
    assert_int_equal(t->n_groups, 4);
    assert_int_equal(t->n_runs, 10);
    static const char *const keys[4][2] = {
        {"zeta", "32"}, {"alpha", "64"}, {"mid", "8"}, {"zeta", "64"}};
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(t->groups[i].key_values[0], keys[i][0]);
        assert_string_equal(t->groups[i].key_values[1], keys[i][1]);
        assert_string_equal(t->groups[i].key_names[0], "net");
        assert_string_equal(t->groups[i].key_names[1], "bs");
    }
    const pfi_group *z = &t->groups[0];
    assert_int_equal(z->n_runs, 6);
    static const long zlines[6] = {5, 11, 2, 8, 4, 10};
    for (size_t i = 0; i < 6; i++)
        if (z->runs[i].line != zlines[i])
            fail_msg("zeta/32 run %zu: line %ld, want %ld", i, z->runs[i].line, zlines[i]);
    assert_true(z->runs[0].cap_w == 300);
    assert_true(z->runs[1].cap_w == 250.5);
    assert_false(z->runs[4].valid & PFI_RUN_CAP);
    assert_false(z->runs[5].valid & PFI_RUN_CAP);
    assert_int_equal(t->groups[1].n_runs, 2);
    assert_int_equal(t->groups[1].runs[0].line, 3);
    assert_int_equal(t->groups[1].runs[1].line, 7);
    assert_int_equal(t->groups[2].n_runs, 1);
    assert_int_equal(t->groups[3].n_runs, 1);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

/* Key values are compared as a tuple: ("ab","c") and ("a","bc") are different groups. */
static void test_grouping_tuple_keys(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "k1,k2", "cap", "cap", "power", "p", "throughput", "t", NULL);
    pfi_diag d;
    const char *csv = "k1,k2,cap,p,t\nab,c,300,1,1\na,bc,300,1,1\n\"a,b\",,300,1,1\n"
                      "a,\"b,\",300,1,1\nab,c,200,1,1\n";
    assert_int_equal(read_text(t, "tuple.csv", csv, &m, &d), PFI_OK);
    assert_int_equal(t->n_groups, 4);
    assert_string_equal(t->groups[0].key_values[0], "ab");
    assert_string_equal(t->groups[0].key_values[1], "c");
    assert_int_equal(t->groups[0].n_runs, 2);
    assert_string_equal(t->groups[1].key_values[0], "a");
    assert_string_equal(t->groups[1].key_values[1], "bc");
    assert_string_equal(t->groups[2].key_values[0], "a,b");
    assert_string_equal(t->groups[2].key_values[1], "");
    assert_string_equal(t->groups[3].key_values[0], "a");
    assert_string_equal(t->groups[3].key_values[1], "b,");
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

/* ---- missing cells ---------------------------------------------------------------------- */

static void test_missing_cells(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "job", "cap", "cap", "power", "p", "throughput", "t", "power_se", "pse",
        "gpus", "g", NULL);
    pfi_diag d;
    static const char *const spellings[] = {
        "",        "N/A",     "NA",  "n/a", "NaN", "nan", "-", "[N/A]", "[Not Supported]",
        " [N/A] ", "\"N/A\"", "\"\""};
    char csv[4096] = "job,cap,p,t,pse,g\n";
    for (size_t i = 0; i < ARRAY_LEN(spellings); i++) {
        const char *s = spellings[i];
        /* one row per field per spelling: cap, p, t, pse, g missing in turn */
        char row[256];
        snprintf(row, sizeof row,
                 "A,%s,1,1,1,1\nA,100,%s,1,1,1\nA,100,1,%s,1,1\nA,100,1,1,%s,1\n"
                 "A,100,1,1,1,%s\n",
                 s, s, s, s, s);
        strcat(csv, row);
    }
    pfi_error e = read_text(t, "missing.csv", csv, &m, &d);
    if (e != PFI_OK)
        fail_msg("%d %s: %s", (int)e, d.column, d.message);
    const size_t n = 5 * ARRAY_LEN(spellings);
    assert_int_equal(t->n_runs, n);
    assert_int_equal(t->n_groups, 1);
    const pfi_group *g = &t->groups[0];
    const unsigned all = BASIC | PFI_RUN_POWER_SE | PFI_RUN_GPUS;
    static const unsigned cleared[5] = {PFI_RUN_CAP, PFI_RUN_POWER, PFI_RUN_THROUGHPUT,
                                        PFI_RUN_POWER_SE, PFI_RUN_GPUS};
    for (size_t i = 0; i < g->n_runs; i++) {
        const pfi_run *r = &g->runs[i];
        size_t k = (size_t)(r->line - 2) % 5;
        if (r->valid != (all & ~cleared[k]))
            fail_msg("line %ld ('%s' in field %zu): valid 0x%x, want 0x%x", r->line,
                     spellings[(r->line - 2) / 5], k, r->valid, all & ~cleared[k]);
        /* what is valid holds the value written (never a zero standing in for a gap) */
        if (r->valid & PFI_RUN_POWER)
            assert_true(r->power_w == 1);
        if (r->valid & PFI_RUN_THROUGHPUT)
            assert_true(r->throughput == 1);
        if (r->valid & PFI_RUN_CAP)
            assert_true(r->cap_w == 100);
    }
    /* runs with a missing cap come last */
    for (size_t i = 0; i + 1 < g->n_runs; i++)
        if (!(g->runs[i].valid & PFI_RUN_CAP))
            assert_false(g->runs[i + 1].valid & PFI_RUN_CAP);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

/* A missing part of a summed power, or a missing duration, makes the power missing. */
static void test_missing_energy_parts(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "job", "cap", "cap", "energy", "e*", "duration", "d", "throughput", "t", NULL);
    pfi_diag d;
    const char *csv = "job,cap,e0,e1,d,t\nA,300,10,20,5,1\nA,200,10,N/A,5,1\nA,100,10,20,,1\n";
    assert_int_equal(read_text(t, "parts.csv", csv, &m, &d), PFI_OK);
    const pfi_group *g = &t->groups[0];
    assert_int_equal(g->n_runs, 3);
    expect_run(&g->runs[0], 2, BASIC, 300, 6, 1);
    expect_run(&g->runs[1], 3, PFI_RUN_CAP | PFI_RUN_THROUGHPUT, 200, 0, 1);
    expect_run(&g->runs[2], 4, PFI_RUN_CAP | PFI_RUN_THROUGHPUT, 100, 0, 1);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

/* ---- errors ----------------------------------------------------------------------------- */

#define MAP_STD "group", "job", "cap", "cap", "power", "power", "throughput", "tput"

static const struct {
    const char *name;
    const char *pairs[20];
    const char *csv;
    size_t len; /* 0: strlen */
    pfi_error err;
    long line;
    const char *column;
    const char *msg[3]; /* substrings of the message */
} errors[] = {
    {"missing column lists the header",
     {MAP_STD, "power", "watts", NULL},
     "job,cap,power,tput\nA,1,1,1\n",
     0,
     PFI_ERR_MISSING_COLUMN,
     1,
     "watts",
     {"job, cap, power, tput", NULL}},
    {"missing group column",
     {MAP_STD, "group", "job,model", NULL},
     "job,cap,power,tput\nA,1,1,1\n",
     0,
     PFI_ERR_MISSING_COLUMN,
     1,
     "model",
     {"job, cap, power, tput", NULL}},
    {"missing optional column",
     {MAP_STD, "gpus", "n_gpu", NULL},
     "job,cap,power,tput\nA,1,1,1\n",
     0,
     PFI_ERR_MISSING_COLUMN,
     1,
     "n_gpu",
     {"tput", NULL}},
    {"glob matches nothing",
     {MAP_STD, "power", NULL, "energy", "gpu*_energy", "duration", "d", NULL},
     "job,cap,cpu_energy,d,tput\nA,1,1,1,1\n",
     0,
     PFI_ERR_MISSING_COLUMN,
     1,
     "gpu*_energy",
     {"cpu_energy", NULL}},
    {"negative power",
     {MAP_STD, NULL},
     "job,cap,power,tput\nA,300,250,1\nA,200,-5,1\n",
     0,
     PFI_ERR_VALUE,
     3,
     "power",
     {"-5", "negative", NULL}},
    {"negative cap",
     {MAP_STD, NULL},
     "job,cap,power,tput\nA,-300,250,1\n",
     0,
     PFI_ERR_VALUE,
     2,
     "cap",
     {"-300", NULL}},
    {"negative throughput",
     {MAP_STD, NULL},
     "job,cap,power,tput\nA,300,250,-0.5\n",
     0,
     PFI_ERR_VALUE,
     2,
     "tput",
     {"-0.5", NULL}},
    {"negative time_se",
     {MAP_STD, "throughput", NULL, "time", "s", "time_se", "sse", NULL},
     "job,cap,power,s,sse\nA,300,250,2,-0.1\n",
     0,
     PFI_ERR_VALUE,
     2,
     "sse",
     {"-0.1", NULL}},
    {"non-numeric power",
     {MAP_STD, NULL},
     "job,cap,power,tput\nA,300,abc,1\n",
     0,
     PFI_ERR_VALUE,
     2,
     "power",
     {"abc", NULL}},
    {"decimal comma",
     {MAP_STD, NULL},
     "job,cap,power,tput\nA,300,\"250,5\",1\n",
     0,
     PFI_ERR_VALUE,
     2,
     "power",
     {"250,5", NULL}},
    {"infinite throughput",
     {MAP_STD, NULL},
     "job,cap,power,tput\nA,300,250,inf\n",
     0,
     PFI_ERR_VALUE,
     2,
     "tput",
     {"inf", NULL}},
    {"overflowing cap",
     {MAP_STD, NULL},
     "job,cap,power,tput\nA,1e999,250,1\n",
     0,
     PFI_ERR_VALUE,
     2,
     "cap",
     {"1e999", NULL}},
    {"non-numeric cap pattern group",
     {MAP_STD, "cap", "name", "cap_regex", "_([a-z]+)$", NULL},
     "job,name,power,tput\nA,x_abc,1,1\n",
     0,
     PFI_ERR_VALUE,
     2,
     "name",
     {"x_abc", NULL}},
    {"cap pattern does not match",
     {MAP_STD, "cap", "name", "cap_regex", "_([0-9]+)$", NULL},
     "job,name,power,tput\nA,x_300,1,1\nA,warmup,1,1\n",
     0,
     PFI_ERR_VALUE,
     3,
     "name",
     {"warmup", NULL}},
    {"too few fields",
     {MAP_STD, NULL},
     "job,cap,power,tput\nA,1,1,1\nA,1,1\n",
     0,
     PFI_ERR_PARSE,
     3,
     "",
     {"4", "3", NULL}},
    {"too many fields",
     {MAP_STD, NULL},
     "job,cap,power,tput\nA,1,1,1,1\n",
     0,
     PFI_ERR_PARSE,
     2,
     "",
     {"4", "5", NULL}},
    {"zero duration",
     {MAP_STD, "power", NULL, "energy", "e", "duration", "elapsed", NULL},
     "job,cap,e,elapsed,tput\nA,1,100,0,1\n",
     0,
     PFI_ERR_VALUE,
     2,
     "elapsed",
     {"0", NULL}},
    {"zero time",
     {MAP_STD, "throughput", NULL, "time", "time", NULL},
     "job,cap,power,time\nA,1,100,10\nA,2,100,0.0\n",
     0,
     PFI_ERR_VALUE,
     3,
     "time",
     {"0", NULL}},
    {"fractional GPU count",
     {MAP_STD, "gpus", "gpus", NULL},
     "job,cap,power,tput,gpus\nA,1,1,1,1.5\n",
     0,
     PFI_ERR_VALUE,
     2,
     "gpus",
     {"1.5", NULL}},
    {"zero GPU count",
     {MAP_STD, "gpus", "gpus", NULL},
     "job,cap,power,tput,gpus\nA,1,1,1,0\n",
     0,
     PFI_ERR_VALUE,
     2,
     "gpus",
     {"0", NULL}},
    {"bad quoting",
     {MAP_STD, NULL},
     "job,cap,power,tput\nA,1,1,1\nA,1,1\"x,1\n",
     0,
     PFI_ERR_PARSE,
     3,
     "",
     {NULL}},
    {"NUL byte", {MAP_STD, NULL}, "job,cap,power,tput\nA,1,\0,1\n", 27, 0, 2, "", {NULL}},
    {"empty file", {MAP_STD, NULL}, "", 0, PFI_ERR_EMPTY, 0, "", {NULL}},
    {"blank lines only", {MAP_STD, NULL}, "\n\n  \n", 0, PFI_ERR_EMPTY, 0, "", {NULL}},
    {"header only", {MAP_STD, NULL}, "job,cap,power,tput\n", 0, PFI_ERR_EMPTY, 0, "", {NULL}},
    {"incomplete mapping",
     {MAP_STD, "cap", NULL, NULL},
     "job,cap,power,tput\nA,1,1,1\n",
     0,
     PFI_ERR_INVALID_ARGUMENT,
     0,
     "",
     {"cap", NULL}},
    {"invalid cap pattern",
     {MAP_STD, "cap_regex", "_([0-9]+$", NULL},
     "job,cap,power,tput\nA,1,1,1\n",
     0,
     PFI_ERR_INVALID_ARGUMENT,
     0,
     "",
     {"_([0-9]+$", NULL}},
    {"cap pattern without a group",
     {MAP_STD, "cap_regex", "_[0-9]+$", NULL},
     "job,cap,power,tput\nA,1,1,1\n",
     0,
     PFI_ERR_INVALID_ARGUMENT,
     0,
     "",
     {"_[0-9]+$", NULL}},
    {"duplicated mapped column",
     {MAP_STD, NULL},
     "job,cap,power,cap,tput\nA,1,1,1,1\n",
     0,
     0,
     1,
     "cap",
     {NULL}},
    {"duplicated summed column",
     {MAP_STD, NULL},
     "job,cap,power,tput,power\nA,1,1,1,1\n",
     0,
     0,
     1,
     "power",
     {NULL}},
    {"duplicated column in a glob",
     {MAP_STD, "power", "gpu*"},
     "job,cap,gpu0,gpu1,gpu0,tput\nA,1,1,1,1,1\n",
     0,
     0,
     1,
     "gpu0",
     {NULL}},
};

static void test_errors(void **state)
{
    (void)state;
    for (size_t c = 0; c < ARRAY_LEN(errors); c++) {
        pfi_runs_table *t = new_table();
        pfi_mapping m = {0};
        /* a first, good file: the failing read must leave it as it is */
        map(&m, MAP_STD, NULL);
        pfi_diag d;
        assert_int_equal(read_text(t, "good.csv", "job,cap,power,tput\nA,1,1,1\nB,1,1,1\n", &m, &d),
                         PFI_OK);
        for (size_t i = 0; errors[c].pairs[i] != NULL; i += 2)
            assert_int_equal(pfi_mapping_set(&m, errors[c].pairs[i], errors[c].pairs[i + 1]),
                             PFI_OK);
        memset(&d, 0x41, sizeof d);
        d.file[sizeof d.file - 1] = d.column[sizeof d.column - 1] = '\0';
        d.message[sizeof d.message - 1] = '\0';
        pfi_error e = read_text_len(t, "bad/file.csv", errors[c].csv, errors[c].len, &m, &d);
        const char *nm = errors[c].name;
        CHECK(e != PFI_OK, "%s: accepted\n", nm);
        CHECK(errors[c].err == PFI_OK || e == errors[c].err, "%s: error %d, want %d (%s)\n", nm,
              (int)e, (int)errors[c].err, d.message);
        CHECK(strcmp(d.file, "bad/file.csv") == 0, "%s: diag file '%s'\n", nm, d.file);
        CHECK(d.line == errors[c].line, "%s: diag line %ld, want %ld (%s)\n", nm, d.line,
              errors[c].line, d.message);
        CHECK(strcmp(d.column, errors[c].column) == 0, "%s: diag column '%s', want '%s'\n", nm,
              d.column, errors[c].column);
        CHECK(d.message[0] != '\0', "%s: empty diag message\n", nm);
        for (size_t k = 0; errors[c].msg[k] != NULL; k++)
            CHECK(strstr(d.message, errors[c].msg[k]) != NULL, "%s: message '%s' lacks '%s'\n", nm,
                  d.message, errors[c].msg[k]);
        /* nothing appended */
        CHECK(t->n_groups == 2 && t->n_files == 1 && t->n_runs == 2,
              "%s: table changed: %zu groups, %zu files, %zu runs\n", nm, t->n_groups, t->n_files,
              t->n_runs);
        CHECK(strcmp(t->files[0], "good.csv") == 0, "%s: files[0] '%s'\n", nm, t->files[0]);
        /* the same error without a diag */
        CHECK(read_text_len(t, "bad/file.csv", errors[c].csv, errors[c].len, &m, NULL) == e,
              "%s: another result without a diag\n", nm);
        CHECK(t->n_groups == 2, "%s: table changed (no diag)\n", nm);
        /* the table still takes a good file afterwards */
        pfi_mapping m2 = {0};
        map(&m2, MAP_STD, NULL);
        CHECK(read_text(t, "after.csv", "job,cap,power,tput\nC,1,1,1\n", &m2, &d) == PFI_OK,
              "%s: a good file rejected afterwards\n", nm);
        CHECK(t->n_groups == 3 && t->n_files == 2 && t->groups[2].file_index == 1 &&
                  strcmp(t->files[1], "after.csv") == 0,
              "%s: the good file after the error is not appended right\n", nm);
        pfi_mapping_clear(&m2);
        pfi_mapping_clear(&m);
        pfi_runs_table_destroy(t);
    }
    END_CHECKS();
}

/* Header errors name the header's physical line, also when blank lines come before it. */
static void test_error_header_line(void **state)
{
    (void)state;
    static const struct {
        const char *name, *field, *value, *csv;
        pfi_error err;
        const char *column;
    } cases[] = {
        {"missing column", "throughput", "speed", "\n\njob,cap,power,tput\nA,1,1,1\n",
         PFI_ERR_MISSING_COLUMN, "speed"},
        {"glob matches nothing", "power", "gpu*", "\r\n  \njob,cap,power,tput\nA,1,1,1\n",
         PFI_ERR_MISSING_COLUMN, "gpu*"},
        {"duplicated column", "throughput", "tput", "\n\njob,cap,power,tput,tput\nA,1,1,1,1\n", 0,
         "tput"},
    };
    for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
        pfi_runs_table *t = new_table();
        pfi_mapping m = {0};
        map(&m, MAP_STD, cases[c].field, cases[c].value, NULL);
        pfi_diag d;
        pfi_error e = read_text(t, "late-header.csv", cases[c].csv, &m, &d);
        CHECK(e != PFI_OK && (cases[c].err == PFI_OK || e == cases[c].err),
              "%s: error %d, want %d\n", cases[c].name, (int)e, (int)cases[c].err);
        CHECK(strcmp(d.column, cases[c].column) == 0, "%s: column '%s', want '%s'\n", cases[c].name,
              d.column, cases[c].column);
        CHECK(d.line == 3, "%s: diag line %ld, want 3 (the header's line; '%s')\n", cases[c].name,
              d.line, d.message);
        pfi_mapping_clear(&m);
        pfi_runs_table_destroy(t);
    }
    END_CHECKS();
}

/* A line over the CSV limit is reported as such, with its line. */
static void test_error_line_too_long(void **state)
{
    (void)state;
    size_t n = 70000;
    char *csv = malloc(n + 64);
    assert_non_null(csv);
    strcpy(csv, "job,cap,power,tput\nA,1,1,1\nA,1,1,");
    size_t used = strlen(csv);
    memset(csv + used, '1', n);
    strcpy(csv + used + n, "\n");
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, MAP_STD, NULL);
    pfi_diag d;
    assert_int_equal(read_text(t, "long.csv", csv, &m, &d), PFI_ERR_LINE_TOO_LONG);
    assert_int_equal(d.line, 3);
    assert_string_equal(d.file, "long.csv");
    assert_int_equal(t->n_groups, 0);
    assert_int_equal(t->n_files, 0);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
    free(csv);
}

static void test_stream_needs_name(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, MAP_STD, NULL);
    char text[] = "job,cap,power,tput\nA,1,1,1\n";
    FILE *f = fmemopen(text, strlen(text), "r");
    assert_non_null(f);
    assert_int_equal(pfi_runs_read_stream(t, f, NULL, &m, NULL), PFI_ERR_INVALID_ARGUMENT);
    fclose(f);
    assert_int_equal(t->n_groups, 0);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

/* ---- several files ---------------------------------------------------------------------- */

static void test_two_files(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, MAP_STD, NULL);
    pfi_diag d;
    const char *csv = "job,cap,power,tput\nA,300,3,3\nB,300,1,1\nA,200,2,2\n";
    assert_int_equal(read_text(t, "one.csv", csv, &m, &d), PFI_OK);
    /* the second file with another mapping (two key columns) */
    pfi_mapping m2 = {0};
    map(&m2, "group", "model,@file", "cap", "limit", "power", "w", "time", "s", NULL);
    const char *csv2 = "limit,model,w,s\n250,A,5,0.5\n150,A,4,0.25\n";
    assert_int_equal(read_text(t, "sub/two.csv", csv2, &m2, &d), PFI_OK);
    assert_int_equal(read_text(t, "three.csv", csv, &m, &d), PFI_OK);
    assert_int_equal(t->n_files, 3);
    assert_string_equal(t->files[0], "one.csv");
    assert_string_equal(t->files[1], "sub/two.csv");
    assert_string_equal(t->files[2], "three.csv");
    assert_int_equal(t->n_groups, 5);
    assert_int_equal(t->n_runs, 3 + 2 + 3);
    static const size_t file_of[5] = {0, 0, 1, 2, 2};
    static const char *const first_key[5] = {"A", "B", "A", "A", "B"};
    static const size_t runs_of[5] = {2, 1, 2, 2, 1};
    for (size_t i = 0; i < 5; i++) {
        const pfi_group *g = &t->groups[i];
        assert_int_equal(g->file_index, file_of[i]);
        assert_string_equal(g->key_values[0], first_key[i]);
        assert_int_equal(g->n_runs, runs_of[i]);
    }
    const pfi_group *g2 = &t->groups[2];
    assert_int_equal(g2->n_key, 2);
    assert_string_equal(g2->key_names[0], "model");
    assert_string_equal(g2->key_names[1], "@file");
    assert_string_equal(g2->key_values[1], "two.csv");
    expect_run(&g2->runs[0], 2, BASIC, 250, 5, 2);
    expect_run(&g2->runs[1], 3, BASIC, 150, 4, 4);
    assert_int_equal(t->groups[3].n_key, 1);
    assert_string_equal(t->groups[3].key_names[0], "job");
    /* the groups of equal keys in different files stay apart */
    assert_ptr_not_equal(t->groups[0].runs, t->groups[3].runs);
    expect_run(&t->groups[3].runs[0], 2, BASIC, 300, 3, 3);
    pfi_mapping_clear(&m);
    pfi_mapping_clear(&m2);
    pfi_runs_table_destroy(t);
}

/* The shipped Zeus NSDI'23 table, read with its mapping. */
static void test_repo_table(void **state)
{
    (void)state;
    pfi_runs_table *t = new_table();
    pfi_mapping m = {0};
    map(&m, "group", "dataset,network,batch_size,optimizer", "cap", "power_limit", "power",
        "average_power", "time", "time_per_epoch", NULL);
    pfi_diag d;
    const char *path = PFI_REPO_DATA "/zeus_nsdi23_power/summary_power_a40.csv";
    pfi_error e = pfi_runs_read_csv(t, path, NULL, &m, &d);
    if (e != PFI_OK)
        fail_msg("%s: %d %s", path, (int)e, d.message);
    assert_true(t->n_groups > 1);
    const pfi_group *g = &t->groups[0];
    assert_string_equal(g->key_values[0], "cifar100");
    assert_string_equal(g->key_values[1], "shufflenetv2");
    assert_string_equal(g->key_values[2], "1024");
    assert_string_equal(g->key_values[3], "adadelta");
    /* runs by cap descending; the 100 W run is the file's line 2 */
    const pfi_run *r100 = NULL;
    for (size_t i = 0; i < g->n_runs; i++) {
        if (i > 0)
            assert_true(g->runs[i - 1].cap_w > g->runs[i].cap_w);
        if (g->runs[i].line == 2)
            r100 = &g->runs[i];
    }
    assert_non_null(r100);
    expect_run(r100, 2, BASIC, 100, 106.88881213499654, 1 / 27.130000000000003);
    size_t total = 0;
    for (size_t i = 0; i < t->n_groups; i++)
        total += t->groups[i].n_runs;
    assert_int_equal(total, t->n_runs);
    pfi_mapping_clear(&m);
    pfi_runs_table_destroy(t);
}

static void test_destroy_null(void **state)
{
    (void)state;
    pfi_runs_table_destroy(NULL);
    pfi_runs_table *t = new_table();
    pfi_runs_table_destroy(t); /* empty table */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mapping_set_get),
        cmocka_unit_test(test_mapping_group),
        cmocka_unit_test(test_mapping_check),
        cmocka_unit_test(test_read_direct),
        cmocka_unit_test(test_read_power_glob),
        cmocka_unit_test(test_read_energy),
        cmocka_unit_test(test_read_energy_time_regex),
        cmocka_unit_test(test_read_time),
        cmocka_unit_test(test_read_cap_regex),
        cmocka_unit_test(test_read_standard_errors),
        cmocka_unit_test(test_read_time_se_delta),
        cmocka_unit_test(test_read_gpus_and_class),
        cmocka_unit_test(test_file_key),
        cmocka_unit_test(test_read_csv_file),
        cmocka_unit_test(test_grouping_order),
        cmocka_unit_test(test_grouping_tuple_keys),
        cmocka_unit_test(test_missing_cells),
        cmocka_unit_test(test_missing_energy_parts),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_error_header_line),
        cmocka_unit_test(test_error_line_too_long),
        cmocka_unit_test(test_stream_needs_name),
        cmocka_unit_test(test_two_files),
        cmocka_unit_test(test_repo_table),
        cmocka_unit_test(test_destroy_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
