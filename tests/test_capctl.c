/*
 * Cap control: range checks and budget splits (case-17), read-back after every set
 * (case-18, replayed on the fake NVML), the journal, lower-before-raise, restore.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "pfi/capctl.h"

static char state_path[256], trace_path[256], journal_path[256];

static void fake_state(const char *text)
{
    FILE *f = fopen(state_path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    unlink(trace_path);
}

static pfi_gpu *open_fake(void)
{
    pfi_gpu_config c = {.kind = PFI_GPU_NVML, .library = PFI_FAKE_NVML};
    pfi_gpu *g = NULL;
    assert_int_equal(pfi_gpu_open(&c, &g, NULL), PFI_OK);
    return g;
}

static pfi_gpu_limits range(uint32_t min, uint32_t max)
{
    pfi_gpu_limits l = {.min_mw = min, .max_mw = max, .valid = PFI_LIMIT_MIN | PFI_LIMIT_MAX};
    return l;
}

/* case-17 §5: 83 % of 180 W = 149.4 W on a 150-200 W board. */
static void test_resolve(void **st)
{
    (void)st;
    pfi_gpu_limits l = range(150000, 200000);
    uint32_t mw;
    bool cl;
    pfi_diag d;
    assert_int_equal(pfi_cap_resolve_mw(&l, 0.83 * 180.0, false, &mw, &cl, &d),
                     PFI_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(d.message, "149.40 W is outside the device's range 150.00-200.00 W"));
    assert_int_equal(pfi_cap_resolve_mw(&l, 0.83 * 180.0, true, &mw, &cl, &d), PFI_OK);
    assert_int_equal(mw, 150000); /* ceil at the min side */
    assert_true(cl);
    assert_int_equal(pfi_cap_resolve_mw(&l, 200.0004, true, &mw, &cl, &d), PFI_OK);
    assert_int_equal(mw, 200000);
    assert_false(cl); /* within half a mW: rounding, not clamping */
    assert_int_equal(pfi_cap_resolve_mw(&l, 250, true, &mw, &cl, &d), PFI_OK);
    assert_int_equal(mw, 200000); /* floor at the max side */
    assert_true(cl);
    assert_int_equal(pfi_cap_resolve_mw(&l, 175.0004, false, &mw, &cl, &d), PFI_OK);
    assert_int_equal(mw, 175000);
    assert_int_equal(pfi_cap_resolve_mw(&l, NAN, true, &mw, &cl, &d), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_cap_resolve_mw(&l, -5, true, &mw, &cl, &d), PFI_ERR_INVALID_ARGUMENT);
    /* a huge finite cap is above the range (not "not a positive number"); --clamp: the max */
    assert_int_equal(pfi_cap_resolve_mw(&l, 1e9, false, &mw, &cl, &d), PFI_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(d.message, "is outside the device's range 150.00-200.00 W"));
    assert_int_equal(pfi_cap_resolve_mw(&l, 1e300, true, &mw, &cl, &d), PFI_OK);
    assert_int_equal(mw, 200000);
    assert_true(cl);
    /* case-17 transcript: 150 W on a 200-700 W GPU is refused */
    l = range(200000, 700000);
    assert_int_equal(pfi_cap_resolve_mw(&l, 150, false, &mw, &cl, &d), PFI_ERR_OUT_OF_RANGE);
    pfi_gpu_limits none = {0};
    assert_int_equal(pfi_cap_resolve_mw(&none, 300, true, &mw, &cl, &d), PFI_ERR_NOT_SUPPORTED);
}

/* case-17 budget_requests.txt over four 200-700 W GPUs. */
static void test_split_budget(void **st)
{
    (void)st;
    pfi_gpu_limits l[4];
    for (int i = 0; i < 4; i++)
        l[i] = range(200000, 700000);
    uint32_t out[4] = {1, 2, 3, 4};
    uint64_t left;
    pfi_diag d;
    assert_int_equal(pfi_cap_split_budget(l, 4, 700000, out, &left, &d), PFI_ERR_OUT_OF_RANGE);
    assert_string_equal(d.message, "budget 700 W below sum of minimum limits 800 W");
    assert_int_equal(out[0], 1); /* nothing planned */
    assert_int_equal(pfi_cap_split_budget(l, 4, 1000000, out, &left, &d), PFI_OK);
    for (int i = 0; i < 4; i++)
        assert_int_equal(out[i], 250000);
    assert_int_equal(left, 0);
    assert_int_equal(pfi_cap_split_budget(l, 4, 1001000, out, &left, &d), PFI_OK);
    uint64_t sum = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(out[i], 250250);
        sum += out[i];
    }
    assert_true(sum <= 1001000);
    assert_int_equal(pfi_cap_split_budget(l, 4, 1000003, out, &left, &d), PFI_OK);
    sum = out[0] + (uint64_t)out[1] + out[2] + out[3];
    assert_true(sum <= 1000003);
    assert_int_equal(sum + left, 1000003);
    assert_int_equal(pfi_cap_split_budget(l, 4, 3200000, out, &left, &d), PFI_OK);
    for (int i = 0; i < 4; i++)
        assert_int_equal(out[i], 700000);
    assert_int_equal(left, 400000); /* 400 W unallocatable */
    /* unequal ranges: water-filling */
    l[0] = range(100000, 150000);
    assert_int_equal(pfi_cap_split_budget(l, 4, 1000000, out, &left, &d), PFI_OK);
    assert_int_equal(out[0], 150000);
    assert_int_equal(out[1] + (uint64_t)out[2] + out[3] + out[0] + left, 1000000);
    assert_true(out[1] >= 283333 && out[1] <= 283334);
}

/* case-18 nvml_mock_sequence.txt on the fake: GPU 0 requested 450 W but enforced 500 W;
 * GPU 1 cannot change its limit (NOT_SUPPORTED from setter and getter), enforced 80 W. */
static void test_case18_readback(void **st)
{
    (void)st;
    fake_state("gpu 0 uuid=GPU-a limit=700000 enforced=500000 stuck=1\n"
               "gpu 1 uuid=GPU-b min=80000 max=200000 default=200000 set_error=3 "
               "get_limit_error=3 enforced=80000\n");
    pfi_gpu *g = open_fake();
    unsigned gpu0 = 0;
    pfi_capctl *c;
    pfi_diag d;
    assert_int_equal(pfi_capctl_create(g, &gpu0, 1, NULL, NULL, &c, &d), PFI_OK);
    uint32_t target = 450000;
    pfi_cap_result r;
    assert_int_equal(pfi_capctl_apply(c, &target, &r, &d), PFI_ERR_NOT_EFFECTIVE);
    assert_true(r.changed);
    assert_int_equal(r.requested_mw, 450000);
    assert_int_equal(r.enforced_mw, 500000); /* account this GPU at 500 W, not 450 */
    assert_non_null(strstr(r.message, "cap not effective: enforced 500 W > requested 450 W"));
    assert_int_equal(pfi_capctl_restore(c, NULL, &d), PFI_OK);
    pfi_capctl_destroy(c);
    pfi_gpu_limits l;
    pfi_gpu_read_limits(g, 0, &l, NULL);
    assert_int_equal(l.current_mw, 700000);

    /* GPU 1: the current limit cannot be read, so the controller refuses to touch it */
    unsigned gpu1 = 1;
    assert_int_equal(pfi_capctl_create(g, &gpu1, 1, NULL, NULL, &c, &d), PFI_ERR_NOT_SUPPORTED);
    assert_null(c);
    /* the raw setter: NOT_SUPPORTED is a hard failure, and the enforced limit is reported */
    pfi_gpu_limits l1;
    pfi_gpu_read_limits(g, 1, &l1, NULL);
    assert_int_equal(pfi_gpu_set_limit_mw(g, 1, 175000, &d), PFI_ERR_NOT_SUPPORTED);
    assert_true(l1.valid & PFI_LIMIT_ENFORCED);
    assert_int_equal(l1.enforced_mw, 80000);
    pfi_gpu_close(g);
}

static void test_case18_enforced_below(void **st)
{
    (void)st;
    /* enforced below the request (another limiter at 500 W): success, but noted */
    fake_state("gpu 0 limit=700000 enforced=700000 ext=500000\n");
    pfi_gpu *g = open_fake();
    unsigned gpu0 = 0;
    pfi_capctl *c;
    assert_int_equal(pfi_capctl_create(g, &gpu0, 1, NULL, NULL, &c, NULL), PFI_OK);
    uint32_t target = 600000;
    pfi_cap_result r;
    assert_int_equal(pfi_capctl_apply(c, &target, &r, NULL), PFI_OK);
    assert_int_equal(r.enforced_mw, 500000);
    assert_non_null(strstr(r.message, "below the requested"));
    assert_int_equal(pfi_capctl_restore(c, NULL, NULL), PFI_OK);
    pfi_capctl_destroy(c);
    pfi_gpu_close(g);
}

static void test_journal_roundtrip(void **st)
{
    (void)st;
    pfi_journal j = {0};
    snprintf(j.backend, sizeof j.backend, "nvml");
    snprintf(j.library, sizeof j.library, "/x/libnvidia-ml.so.1");
    j.pid = 42;
    pfi_journal_entry e[2] = {{.index = 0, .uuid = "GPU-a", .original_mw = 700000},
                              {.index = 3, .uuid = "", .original_mw = 650500}};
    j.entries = e;
    j.n = 2;
    assert_int_equal(pfi_journal_write(journal_path, &j, NULL), PFI_OK);
    pfi_journal r;
    assert_int_equal(pfi_journal_read(journal_path, &r, NULL), PFI_OK);
    assert_string_equal(r.backend, "nvml");
    assert_string_equal(r.library, "/x/libnvidia-ml.so.1");
    assert_int_equal(r.pid, 42);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.entries[0].uuid, "GPU-a");
    assert_string_equal(r.entries[1].uuid, "");
    assert_int_equal(r.entries[1].index, 3);
    assert_int_equal(r.entries[1].original_mw, 650500);
    pfi_journal_clear(&r);
    unlink(journal_path);
    pfi_diag d;
    assert_int_equal(pfi_journal_read(journal_path, &r, &d), PFI_ERR_IO);
    assert_non_null(strstr(d.message, "no journal"));
    static const char *bad[] = {
        "",
        "pfi-cap-journal 1\nbackend nvml\ngpu 0 GPU-a 700000\n", /* torn: no end */
        "pfi-cap-journal 2\nend\n",
        "pfi-cap-journal 1\ngpu 0 GPU-a\nend\n",
        "pfi-cap-journal 1\ngpu 0 GPU-a 0\nend\n",
        "pfi-cap-journal 1\ngpu x GPU-a 5\nend\n",
        "pfi-cap-journal 1\ngpu 0 GPU-a 99999999999\nend\n",
        "pfi-cap-journal 1\nend\nfoo\n",
        "pfi-cap-journal 1\nwhat\nend\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(pfi_journal_parse(bad[i], strlen(bad[i]), &r, &d), PFI_ERR_PARSE);
        pfi_journal_clear(&r);
    }
}

/* Lower before raise, journal before the first change, restore only what changed. */
static void test_order_and_journal(void **st)
{
    (void)st;
    fake_state("gpu 0 uuid=GPU-0 limit=300000 enforced=300000\n"
               "gpu 1 uuid=GPU-1 limit=500000 enforced=500000\n"
               "gpu 2 uuid=GPU-2 limit=400000 enforced=400000\n");
    pfi_gpu *g = open_fake();
    unsigned gpus[3] = {0, 1, 2};
    pfi_capctl *c;
    unlink(journal_path);
    assert_int_equal(pfi_capctl_create(g, gpus, 3, journal_path, "lib", &c, NULL), PFI_OK);
    assert_int_not_equal(access(journal_path, F_OK), 0); /* nothing changed yet */
    uint32_t t[3] = {500000, 300000, 400000};
    pfi_cap_result r[3];
    assert_int_equal(pfi_capctl_apply(c, t, r, NULL), PFI_OK);
    pfi_journal j;
    assert_int_equal(pfi_journal_read(journal_path, &j, NULL), PFI_OK);
    assert_int_equal(j.n, 3);
    assert_int_equal(j.entries[0].original_mw, 300000);
    assert_int_equal(j.entries[1].original_mw, 500000);
    assert_string_equal(j.entries[1].uuid, "GPU-1");
    pfi_journal_clear(&j);
    /* a second controller refuses while a journal is pending */
    pfi_capctl *c2;
    pfi_diag d;
    assert_int_equal(pfi_capctl_create(g, gpus, 3, journal_path, NULL, &c2, &d), PFI_ERR_EXISTS);
    assert_non_null(strstr(d.message, "pfi restore"));
    FILE *f = fopen(trace_path, "r");
    assert_non_null(f);
    char a[64], b[64], e3[64];
    assert_non_null(fgets(a, sizeof a, f));
    assert_non_null(fgets(b, sizeof b, f));
    assert_non_null(fgets(e3, sizeof e3, f));
    fclose(f);
    assert_string_equal(a, "set 1 300000 0\n"); /* the decrease first */
    assert_string_equal(b, "set 0 500000 0\n");
    assert_string_equal(e3, "set 2 400000 0\n");
    unlink(trace_path);
    assert_int_equal(pfi_capctl_restore(c, r, NULL), PFI_OK);
    assert_int_not_equal(access(journal_path, F_OK), 0); /* removed */
    f = fopen(trace_path, "r");
    assert_non_null(f);
    assert_non_null(fgets(a, sizeof a, f));
    assert_non_null(fgets(b, sizeof b, f));
    assert_null(fgets(e3, sizeof e3, f)); /* GPU 2 already holds its original */
    fclose(f);
    assert_string_equal(a, "set 0 300000 0\n"); /* restore lowers GPU 0 first */
    assert_string_equal(b, "set 1 500000 0\n");
    pfi_capctl_destroy(c);
    pfi_gpu_close(g);
}

/* case-17 §6: NVML refuses a limit (range changed underneath): GPU, mW and range reported,
 * no retry. */
static void test_invalid_argument_reported(void **st)
{
    (void)st;
    fake_state("gpu 0 min=300000\n");
    pfi_gpu *g = open_fake();
    unsigned gpu0 = 0;
    pfi_capctl *c;
    assert_int_equal(pfi_capctl_create(g, &gpu0, 1, NULL, NULL, &c, NULL), PFI_OK);
    uint32_t t = 250000; /* as if resolved against an older 200 W minimum */
    pfi_cap_result r;
    pfi_diag d;
    assert_int_equal(pfi_capctl_apply(c, &t, &r, &d), PFI_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(r.message, "GPU 0"));
    assert_non_null(strstr(r.message, "250000 mW"));
    assert_non_null(strstr(r.message, "NVML_ERROR_INVALID_ARGUMENT (2)"));
    assert_non_null(strstr(r.message, "range is now 300.00-700.00 W"));
    FILE *f = fopen(trace_path, "r");
    char line[64];
    int sets = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        sets++;
    if (f != NULL)
        fclose(f);
    assert_int_equal(sets, 1); /* tried once */
    assert_int_equal(pfi_capctl_restore(c, NULL, NULL), PFI_OK);
    pfi_capctl_destroy(c);
    pfi_gpu_close(g);
}

/* No permission: clear error, nothing changed, nothing left to restore. */
static void test_no_permission(void **st)
{
    (void)st;
    fake_state("gpu 0 set_error=4\ngpu 1 set_error=4\n");
    pfi_gpu *g = open_fake();
    unsigned gpus[2] = {0, 1};
    pfi_capctl *c;
    unlink(journal_path);
    assert_int_equal(pfi_capctl_create(g, gpus, 2, journal_path, NULL, &c, NULL), PFI_OK);
    uint32_t t[2] = {400000, 400000};
    pfi_cap_result r[2];
    pfi_diag d;
    assert_int_equal(pfi_capctl_apply(c, t, r, &d), PFI_ERR_NO_PERMISSION);
    assert_non_null(strstr(d.message, "NVML_ERROR_NO_PERMISSION"));
    assert_false(r[0].changed);
    assert_int_equal(pfi_capctl_restore(c, NULL, &d), PFI_OK);
    assert_int_not_equal(access(journal_path, F_OK), 0);
    pfi_capctl_destroy(c);
    pfi_gpu_limits l;
    pfi_gpu_read_limits(g, 0, &l, NULL);
    assert_int_equal(l.current_mw, 700000);
    pfi_gpu_close(g);
}

/* After a crash: restore from the journal, matching GPUs by UUID even if re-enumerated. */
static void test_journal_restore(void **st)
{
    (void)st;
    fake_state("gpu 0 uuid=GPU-b limit=300000 enforced=300000\n"
               "gpu 1 uuid=GPU-a limit=250000 enforced=250000\n"
               "gpu 2 uuid=GPU-c limit=700000 enforced=700000\n");
    pfi_journal j = {0};
    snprintf(j.backend, sizeof j.backend, "nvml");
    pfi_journal_entry e[3] = {{.index = 0, .uuid = "GPU-a", .original_mw = 700000},
                              {.index = 1, .uuid = "GPU-b", .original_mw = 650000},
                              {.index = 2, .uuid = "GPU-c", .original_mw = 700000}};
    j.entries = e;
    j.n = 3;
    pfi_gpu *g = open_fake();
    pfi_cap_result r[3];
    assert_int_equal(pfi_journal_restore(g, &j, r, NULL), PFI_OK);
    assert_int_equal(r[0].gpu, 1);
    assert_int_equal(r[1].gpu, 0);
    assert_true(r[2].skipped);
    pfi_gpu_limits l;
    pfi_gpu_read_limits(g, 0, &l, NULL);
    assert_int_equal(l.current_mw, 650000);
    pfi_gpu_read_limits(g, 1, &l, NULL);
    assert_int_equal(l.current_mw, 700000);
    /* a GPU that is gone is reported, the others still restored */
    snprintf(e[2].uuid, sizeof e[2].uuid, "GPU-gone");
    pfi_diag d;
    assert_int_equal(pfi_journal_restore(g, &j, r, &d), PFI_ERR_GPU_LOST);
    assert_non_null(strstr(d.message, "GPU-gone"));
    pfi_gpu_close(g);
}

int main(void)
{
    snprintf(state_path, sizeof state_path, "/tmp/pfi-test-capctl-%ld.state", (long)getpid());
    snprintf(trace_path, sizeof trace_path, "/tmp/pfi-test-capctl-%ld.trace", (long)getpid());
    snprintf(journal_path, sizeof journal_path, "/tmp/pfi-test-capctl-%ld.journal", (long)getpid());
    setenv("FAKE_NVML_STATE", state_path, 1);
    setenv("FAKE_NVML_TRACE", trace_path, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_split_budget),
        cmocka_unit_test(test_case18_readback),
        cmocka_unit_test(test_case18_enforced_below),
        cmocka_unit_test(test_journal_roundtrip),
        cmocka_unit_test(test_order_and_journal),
        cmocka_unit_test(test_invalid_argument_reported),
        cmocka_unit_test(test_no_permission),
        cmocka_unit_test(test_journal_restore),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(state_path);
    unlink(trace_path);
    unlink(journal_path);
    return rc;
}
