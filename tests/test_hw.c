/*
 * GPU backends: NVML error mapping, the nvml backend through the fake libnvidia-ml.so.1
 * (dlopen, versioned and fallback symbols, injected failures), the emulated backend against
 * the DESIGN §7 model, the replay backend, the throughput regex.
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

#include "hw/emulated.h"
#include "hw/nvml_errors.h"
#include "pfi/gpu.h"
#include "pfi/model.h"
#include "pfi/sweep.h"

static char state_path[256];

/* Write a fake NVML state file and point the fake at it. */
static void fake_state(const char *text)
{
    snprintf(state_path, sizeof state_path, "/tmp/pfi-test-hw-%ld.state", (long)getpid());
    FILE *f = fopen(state_path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    setenv("FAKE_NVML_STATE", state_path, 1);
}

static pfi_gpu *open_fake(void)
{
    pfi_gpu_config c = {.kind = PFI_GPU_NVML, .library = PFI_FAKE_NVML};
    pfi_gpu *g = NULL;
    pfi_diag d;
    pfi_error e = pfi_gpu_open(&c, &g, &d);
    if (e != PFI_OK)
        fprintf(stderr, "open: %s\n", d.message);
    assert_int_equal(e, PFI_OK);
    return g;
}

static void test_nvml_error_map(void **st)
{
    (void)st;
    static const struct {
        int rc;
        const char *name;
        pfi_error e;
    } t[] = {
        {0, "NVML_SUCCESS", PFI_OK},
        {1, "NVML_ERROR_UNINITIALIZED", PFI_ERR_DEVICE},
        {2, "NVML_ERROR_INVALID_ARGUMENT", PFI_ERR_INVALID_ARGUMENT},
        {3, "NVML_ERROR_NOT_SUPPORTED", PFI_ERR_NOT_SUPPORTED},
        {4, "NVML_ERROR_NO_PERMISSION", PFI_ERR_NO_PERMISSION},
        {6, "NVML_ERROR_NOT_FOUND", PFI_ERR_INVALID_ARGUMENT},
        {9, "NVML_ERROR_DRIVER_NOT_LOADED", PFI_ERR_UNAVAILABLE},
        {10, "NVML_ERROR_TIMEOUT", PFI_ERR_DEVICE},
        {13, "NVML_ERROR_FUNCTION_NOT_FOUND", PFI_ERR_UNAVAILABLE},
        {15, "NVML_ERROR_GPU_IS_LOST", PFI_ERR_GPU_LOST},
        {16, "NVML_ERROR_RESET_REQUIRED", PFI_ERR_GPU_LOST},
        {20, "NVML_ERROR_MEMORY", PFI_ERR_NOMEM},
        {28, "NVML_ERROR_GPU_NOT_FOUND", PFI_ERR_GPU_LOST},
        {999, "NVML_ERROR_UNKNOWN", PFI_ERR_DEVICE},
        {12345, "NVML_ERROR_UNRECOGNISED", PFI_ERR_DEVICE},
        {-1, "NVML_ERROR_UNRECOGNISED", PFI_ERR_DEVICE},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        assert_string_equal(hw_nvml_return_name(t[i].rc), t[i].name);
        assert_int_equal(hw_nvml_map(t[i].rc), t[i].e);
    }
    for (int rc = 0; rc < 30; rc++)
        assert_non_null(strstr(hw_nvml_return_name(rc), "NVML_"));
    for (int e = 0; e < PFI_ERROR_COUNT; e++)
        assert_string_not_equal(pfi_strerror((pfi_error)e), "unknown error");
}

static void test_nvml_missing_library(void **st)
{
    (void)st;
    pfi_gpu_config c = {.kind = PFI_GPU_NVML, .library = "/nonexistent/libnvidia-ml.so.1"};
    pfi_gpu *g = (pfi_gpu *)1;
    pfi_diag d;
    assert_int_equal(pfi_gpu_open(&c, &g, &d), PFI_ERR_UNAVAILABLE);
    assert_null(g);
    assert_non_null(strstr(d.message, "cannot load"));
}

static void test_nvml_init_error(void **st)
{
    (void)st;
    fake_state("init_error 9\ngpu 0\n");
    pfi_gpu_config c = {.kind = PFI_GPU_NVML, .library = PFI_FAKE_NVML};
    pfi_gpu *g;
    pfi_diag d;
    assert_int_equal(pfi_gpu_open(&c, &g, &d), PFI_ERR_UNAVAILABLE);
    assert_non_null(strstr(d.message, "NVML_ERROR_DRIVER_NOT_LOADED (9)"));
    assert_non_null(strstr(d.message, "nvmlInit_v2"));
}

static void test_nvml_read(void **st)
{
    (void)st;
    fake_state("gpu 0 uuid=GPU-aaa name=NVIDIA_H200 min=200000 max=700000 default=700000 "
               "limit=700000 enforced=700000 draw=612345\n"
               "gpu 1 uuid=GPU-bbb limit=600000 enforced=600000 ext=500000\n");
    pfi_gpu *g = open_fake();
    assert_string_equal(pfi_gpu_backend_name(g), "nvml");
    assert_false(pfi_gpu_is_virtual_clock(g));
    unsigned n;
    assert_int_equal(pfi_gpu_count(g, &n, NULL), PFI_OK);
    assert_int_equal(n, 2);
    pfi_gpu_info info;
    assert_int_equal(pfi_gpu_get_info(g, 0, &info, NULL), PFI_OK);
    assert_string_equal(info.uuid, "GPU-aaa");
    assert_string_equal(info.name, "NVIDIA H200");
    pfi_gpu_limits l;
    assert_int_equal(pfi_gpu_read_limits(g, 1, &l, NULL), PFI_OK);
    assert_int_equal(l.valid, PFI_LIMIT_CURRENT | PFI_LIMIT_ENFORCED | PFI_LIMIT_DEFAULT |
                                  PFI_LIMIT_MIN | PFI_LIMIT_MAX);
    assert_int_equal(l.current_mw, 600000);
    assert_int_equal(l.enforced_mw, 500000); /* another limiter holds it lower (case-18 #3) */
    assert_int_equal(l.min_mw, 200000);
    pfi_gpu_sample s;
    assert_int_equal(pfi_gpu_read_sample(g, 0, &s, NULL), PFI_OK);
    assert_true(s.valid & PFI_SAMPLE_POWER);
    assert_float_equal(s.power_w, 612.345, 1e-9); /* mW at the boundary, W inside */
    assert_true(s.valid & PFI_SAMPLE_ENERGY);
    assert_true(s.valid & PFI_SAMPLE_REASONS); /* found under the fallback (throttle) name */
    assert_true(s.valid & PFI_SAMPLE_MEM_CLOCK);
    assert_float_equal(s.mem_clock_mhz, 3201, 0);
    /* the fake has no GPM: DRAM / tensor activity missing, not zero */
    assert_false(s.valid & PFI_SAMPLE_DRAM_ACTIVE);
    assert_true(isnan(s.dram_active));
    pfi_diag d;
    assert_int_equal(pfi_gpu_get_info(g, 7, &info, &d), PFI_ERR_INVALID_ARGUMENT);
    pfi_gpu_close(g);
}

static void test_nvml_set_errors(void **st)
{
    (void)st;
    fake_state("gpu 0 set_error=4\n"
               "gpu 1 set_error=3 get_limit_error=3 enforced=80000\n"
               "gpu 2\n");
    pfi_gpu *g = open_fake();
    pfi_diag d;
    assert_int_equal(pfi_gpu_set_limit_mw(g, 0, 400000, &d), PFI_ERR_NO_PERMISSION);
    assert_non_null(strstr(d.message, "NVML_ERROR_NO_PERMISSION (4)"));
    assert_non_null(strstr(d.message, "GPU 0"));
    assert_non_null(strstr(d.message, "400000 mW"));
    assert_int_equal(pfi_gpu_set_limit_mw(g, 1, 175000, &d), PFI_ERR_NOT_SUPPORTED);
    assert_non_null(strstr(d.message, "NVML_ERROR_NOT_SUPPORTED (3)"));
    pfi_gpu_limits l;
    assert_int_equal(pfi_gpu_read_limits(g, 1, &l, NULL), PFI_OK);
    assert_false(l.valid & PFI_LIMIT_CURRENT);
    assert_int_equal(l.err[0], PFI_ERR_NOT_SUPPORTED);
    assert_true(l.valid & PFI_LIMIT_ENFORCED);
    assert_int_equal(l.enforced_mw, 80000);
    /* below min: NVML says INVALID_ARGUMENT (case-17) */
    assert_int_equal(pfi_gpu_set_limit_mw(g, 2, 150000, &d), PFI_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(d.message, "NVML_ERROR_INVALID_ARGUMENT (2)"));
    pfi_gpu_close(g);
}

static void test_nvml_gpu_lost(void **st)
{
    (void)st;
    fake_state("gpu 0 lost_after=3\n");
    pfi_gpu *g = open_fake();
    pfi_gpu_limits l;
    pfi_diag d;
    /* limits = 4 calls: the 4th is past lost_after */
    assert_int_equal(pfi_gpu_read_limits(g, 0, &l, &d), PFI_ERR_GPU_LOST);
    assert_non_null(strstr(d.message, "NVML_ERROR_GPU_IS_LOST (15)"));
    pfi_gpu_sample s;
    assert_int_equal(pfi_gpu_read_sample(g, 0, &s, &d), PFI_ERR_GPU_LOST);
    assert_int_equal(pfi_gpu_set_limit_mw(g, 0, 300000, &d), PFI_ERR_GPU_LOST);
    pfi_gpu_close(g);
}

/* The emulated job is the pfi_model_job its spec maps to: at each cap, after the clock has
 * settled, a noiseless GPU reads pfi_model_eval's power, clock and telemetry. */
static void test_emulated_model(void **st)
{
    (void)st;
    pfi_model_job j;
    assert_int_equal(pfi_gpu_emulate_job("alpha=0.5,pu=600,ps=150,fmax=2000,fmin=300,tput=1000,"
                                         "gpus=3,step=2,dram_peak=0.8,tensor_peak=0.7",
                                         &j, NULL),
                     PFI_OK);
    assert_float_equal(j.compute_time_s, 1.0, 1e-12);
    assert_float_equal(j.memory_time_s, 1.0, 1e-12);
    assert_float_equal(j.tokens_per_step, 2000, 1e-9);
    assert_float_equal(j.power_uncapped_w, 600, 0);
    assert_float_equal(j.power_static_w, 150, 0);
    assert_float_equal(j.clock_max_mhz, 2000, 0);
    assert_float_equal(j.clock_min_mhz, 300, 0);
    assert_float_equal(j.dram_active_peak, 0.8, 0);
    assert_float_equal(j.tensor_active_peak, 0.7, 0);
    assert_int_equal(j.gpus, 3);
    pfi_model_point p;
    assert_int_equal(pfi_model_eval(&j, 375, &p), PFI_OK); /* f = 2000 sqrt(0.5) */
    assert_float_equal(p.clock_mhz, 2000 * sqrt(0.5), 1e-9);
    assert_float_equal(p.throughput, 1000 / (0.5 * sqrt(2) + 0.5), 1e-9);
    assert_int_equal(pfi_gpu_emulate_job(NULL, &j, NULL), PFI_OK); /* the defaults */
    assert_float_equal(j.compute_time_s, 0.8, 1e-12);
    assert_float_equal(j.power_static_w, 162.5, 1e-12);
    assert_int_equal(j.gpus, 8);
    pfi_diag d0;
    assert_int_equal(pfi_gpu_emulate_job("step=0", &j, &d0), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_gpu_emulate_job("tensor_peak=2", &j, &d0), PFI_ERR_INVALID_ARGUMENT);

    /* a noiseless emulated GPU, settled at each cap, reads what the model says */
    static const char spec[] = "gpus=1,alpha=0.6,noise=0,spread=0,startup=10,ckpt=0";
    assert_int_equal(pfi_gpu_emulate_job(spec, &j, NULL), PFI_OK);
    static const double caps_w[] = {700, 500, 300, 200};
    for (size_t k = 0; k < 4; k++) {
        pfi_gpu_config ce = {.kind = PFI_GPU_EMULATED, .emulate = spec};
        pfi_gpu *ge;
        assert_int_equal(pfi_gpu_open(&ce, &ge, NULL), PFI_OK);
        assert_int_equal(pfi_gpu_set_limit_mw(ge, 0, (uint32_t)(caps_w[k] * 1000), NULL), PFI_OK);
        assert_int_equal(pfi_gpu_job_start(ge), PFI_OK);
        pfi_gpu_sleep_until_s(ge, pfi_gpu_now_s(ge) + 300); /* 290 s of training, tau 2 s */
        pfi_gpu_sample sm;
        assert_int_equal(pfi_gpu_read_sample(ge, 0, &sm, NULL), PFI_OK);
        assert_int_equal(pfi_model_eval(&j, caps_w[k], &p), PFI_OK);
        assert_float_equal(sm.power_w, p.power_w, 1e-6);
        assert_float_equal(sm.sm_clock_mhz, round(p.clock_mhz), 0);
        assert_float_equal(sm.dram_active, p.dram_active, 1e-9);
        assert_float_equal(sm.tensor_active, p.tensor_active, 1e-9);
        double t[64], v[64];
        size_t n;
        assert_int_equal(pfi_gpu_job_poll(ge, t, v, 64, &n), PFI_OK);
        assert_true(n > 0);
        assert_float_equal(v[n - 1], p.throughput, 1e-6 * p.throughput);
        pfi_gpu_close(ge);
    }

    pfi_gpu_config c = {.kind = PFI_GPU_EMULATED, .emulate = "gpus=2,noise=0,spread=0,startup=10"};
    pfi_gpu *g;
    assert_int_equal(pfi_gpu_open(&c, &g, NULL), PFI_OK);
    assert_true(pfi_gpu_is_virtual_clock(g));
    assert_int_equal(pfi_gpu_set_limit_mw(g, 0, 400000, NULL), PFI_OK);
    assert_int_equal(pfi_gpu_set_limit_mw(g, 1, 400000, NULL), PFI_OK);
    assert_int_equal(pfi_gpu_set_limit_mw(g, 1, 100000, NULL), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_gpu_job_start(g), PFI_OK);
    double t0 = pfi_gpu_now_s(g);
    pfi_gpu_sleep_until_s(g, t0 + 100);
    assert_float_equal(pfi_gpu_now_s(g), t0 + 100, 1e-9);
    pfi_gpu_sample s;
    assert_int_equal(pfi_gpu_read_sample(g, 0, &s, NULL), PFI_OK);
    double pw, tput;
    assert_int_equal(hw_emulated_expected("gpus=2,noise=0,spread=0", 400, &pw, &tput), PFI_OK);
    assert_float_equal(s.power_w * 2, pw, 1e-6);
    assert_float_equal(pw, 800, 1e-6);
    double t[64], v[64];
    size_t n;
    assert_int_equal(pfi_gpu_job_poll(g, t, v, 64, &n), PFI_OK);
    assert_true(n >= 8);
    assert_float_equal(v[n - 1], tput, 1e-6);
    assert_int_equal(pfi_gpu_job_stop(g), PFI_OK);
    pfi_gpu_close(g);
    pfi_diag d;
    c.emulate = "gpus=0";
    assert_int_equal(pfi_gpu_open(&c, &g, &d), PFI_ERR_INVALID_ARGUMENT);
    c.emulate = "alpha=x";
    assert_int_equal(pfi_gpu_open(&c, &g, &d), PFI_ERR_INVALID_ARGUMENT);
    c.emulate = "bogus=1";
    assert_int_equal(pfi_gpu_open(&c, &g, &d), PFI_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(d.message, "unknown key"));
}

static void test_replay(void **st)
{
    (void)st;
    char path[128];
    snprintf(path, sizeof path, "/tmp/pfi-test-replay-%ld.csv", (long)getpid());
    FILE *f = fopen(path, "w");
    fputs("t_s,gpu,power_w,sm_clock_mhz,enforced_limit_w\n"
          "10,0,300,1500,500\n10,1,310,1490,500\n15,0,N/A,1500,500\n15,1,320,,500\n",
          f);
    fclose(f);
    pfi_gpu_config c = {.kind = PFI_GPU_REPLAY, .replay_path = path};
    pfi_gpu *g;
    assert_int_equal(pfi_gpu_open(&c, &g, NULL), PFI_OK);
    unsigned n;
    pfi_gpu_count(g, &n, NULL);
    assert_int_equal(n, 2);
    pfi_gpu_sample s;
    assert_int_equal(pfi_gpu_read_sample(g, 0, &s, NULL), PFI_OK);
    assert_float_equal(s.power_w, 300, 0);
    pfi_gpu_sleep_until_s(g, 16);
    assert_int_equal(pfi_gpu_read_sample(g, 0, &s, NULL), PFI_OK);
    assert_false(s.valid & PFI_SAMPLE_POWER); /* N/A is missing, never 0 */
    assert_true(s.valid & PFI_SAMPLE_SM_CLOCK);
    assert_int_equal(pfi_gpu_read_sample(g, 1, &s, NULL), PFI_OK);
    assert_float_equal(s.power_w, 320, 0);
    assert_false(s.valid & PFI_SAMPLE_SM_CLOCK);
    pfi_gpu_limits l;
    pfi_gpu_read_limits(g, 1, &l, NULL);
    assert_int_equal(l.valid, PFI_LIMIT_ENFORCED);
    assert_int_equal(l.enforced_mw, 500000);
    assert_int_equal(pfi_gpu_set_limit_mw(g, 0, 400000, NULL), PFI_ERR_NOT_SUPPORTED);
    pfi_gpu_close(g);
    f = fopen(path, "w");
    fputs("t_s,power_w\n1,2\n", f);
    fclose(f);
    pfi_diag d;
    assert_int_equal(pfi_gpu_open(&c, &g, &d), PFI_ERR_MISSING_COLUMN);
    f = fopen(path, "w");
    fputs("t_s,gpu\n1,-2\n", f);
    fclose(f);
    assert_int_equal(pfi_gpu_open(&c, &g, &d), PFI_ERR_VALUE);
    assert_int_equal(d.line, 2);
    unlink(path);
}

static void test_tput_regex(void **st)
{
    (void)st;
    pfi_tput_regex *re;
    pfi_diag d;
    assert_int_equal(pfi_tput_regex_compile("tokens_per_sec: ([0-9.]+[KMG]?)", &re, &d), PFI_OK);
    double v;
    const char *l1 = "iteration: 5 / 100 | tokens_per_sec: 12.5K | lm_loss: 2.1";
    assert_true(pfi_tput_parse_line(re, l1, strlen(l1), &v));
    assert_float_equal(v, 12500, 1e-9);
    const char *l2 = "tokens_per_sec: 3100";
    assert_true(pfi_tput_parse_line(re, l2, strlen(l2), &v));
    assert_float_equal(v, 3100, 0);
    const char *l3 = "loss 1.0";
    assert_false(pfi_tput_parse_line(re, l3, strlen(l3), &v));
    const char l4[] = "tokens_per_sec: 1\0 99";
    assert_false(pfi_tput_parse_line(re, l4, sizeof l4 - 1, &v));
    assert_non_null(strstr(pfi_tput_regex_note(re), "old POSIX ERE form"));
    pfi_tput_regex_free(re);
    /* the one dialect, PCRE2 as `pfi ingest`: a named group among others, no note */
    assert_int_equal(pfi_tput_regex_compile(
                         "(step) \\d+ .*tokens_per_sec: (?<throughput>[\\d.]+[KMG]?)", &re, &d),
                     PFI_OK);
    assert_null(pfi_tput_regex_note(re));
    const char *l5 = "step 7 | tokens_per_sec: 2.5M";
    assert_true(pfi_tput_parse_line(re, l5, strlen(l5), &v));
    assert_float_equal(v, 2.5e6, 1e-6);
    pfi_tput_regex_free(re);
    assert_int_equal(pfi_tput_regex_compile("no group", &re, &d), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_tput_regex_compile("(a)(b)", &re, &d), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_tput_regex_compile("([", &re, &d), PFI_ERR_INVALID_ARGUMENT);
}

/* Several jobs in one handle: ';' segments, each job on its own GPUs, inheriting keys. */
static void test_emulated_multi_job(void **state)
{
    (void)state;
    pfi_gpu_config c = {.kind = PFI_GPU_EMULATED,
                        .emulate = "gpus=2,noise=0,spread=0,startup=0,report=1,tput=20000;"
                                   "gpus=3,alpha=0.5,tput=9000,min=150"};
    pfi_gpu *g;
    assert_int_equal(pfi_gpu_open(&c, &g, NULL), PFI_OK);
    unsigned n, first, cnt;
    assert_int_equal(pfi_gpu_count(g, &n, NULL), PFI_OK);
    assert_int_equal(n, 5);
    assert_int_equal(pfi_gpu_job_count(g, &n), PFI_OK);
    assert_int_equal(n, 2);
    assert_int_equal(pfi_gpu_job_gpus(g, 1, &first, &cnt), PFI_OK);
    assert_int_equal(first, 2);
    assert_int_equal(cnt, 3);
    assert_int_equal(pfi_gpu_job_gpus(g, 2, &first, &cnt), PFI_ERR_INVALID_ARGUMENT);
    pfi_gpu_limits l;
    assert_int_equal(pfi_gpu_read_limits(g, 0, &l, NULL), PFI_OK);
    assert_int_equal(l.min_mw, 200000);
    assert_int_equal(pfi_gpu_read_limits(g, 4, &l, NULL), PFI_OK);
    assert_int_equal(l.min_mw, 150000); /* its own key */
    assert_int_equal(pfi_gpu_set_limit_mw(g, 4, 160000, NULL), PFI_OK);
    assert_int_equal(pfi_gpu_set_limit_mw(g, 0, 160000, NULL), PFI_ERR_INVALID_ARGUMENT);
    pfi_gpu_info i0, i2;
    assert_int_equal(pfi_gpu_get_info(g, 0, &i0, NULL), PFI_OK);
    assert_int_equal(pfi_gpu_get_info(g, 2, &i2, NULL), PFI_OK);
    assert_string_not_equal(i0.uuid, i2.uuid);
    assert_int_equal(pfi_gpu_job_start(g), PFI_OK);
    pfi_gpu_sleep_until_s(g, pfi_gpu_now_s(g) + 30);
    double t[64], v[64];
    size_t k;
    assert_int_equal(pfi_gpu_job_poll_at(g, 0, t, v, 64, &k), PFI_OK);
    assert_true(k > 0);
    assert_float_equal(v[k - 1], 20000, 1.0); /* uncapped, noise 0: tput (clock lag) */
    assert_int_equal(pfi_gpu_job_poll_at(g, 1, t, v, 64, &k), PFI_OK);
    assert_true(k > 0);
    assert_true(v[k - 1] < 9000); /* capped at 160 W: slower */
    assert_int_equal(pfi_gpu_job_poll_at(g, 2, t, v, 64, &k), PFI_ERR_INVALID_ARGUMENT);
    pfi_gpu_close(g);
    pfi_model_job j;
    assert_int_equal(pfi_gpu_emulate_job("gpus=2;gpus=3", &j, NULL), PFI_ERR_INVALID_ARGUMENT);
    c.emulate = "gpus=2;bogus=1";
    assert_int_equal(pfi_gpu_open(&c, &g, NULL), PFI_ERR_INVALID_ARGUMENT);
    c.emulate = "gpus=2;";
    assert_int_equal(pfi_gpu_open(&c, &g, NULL), PFI_OK); /* an empty segment: a copy */
    assert_int_equal(pfi_gpu_count(g, &n, NULL), PFI_OK);
    assert_int_equal(n, 4);
    pfi_gpu_close(g);
}

/* The backend table: every name parses back to its kind, lists follow the table's order,
 * unknown kinds have no name and no capabilities. */
static void test_backend_table(void **st)
{
    (void)st;
    const pfi_gpu_kind kinds[] = {PFI_GPU_NVML, PFI_GPU_EMULATED, PFI_GPU_REPLAY};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const char *name = pfi_gpu_kind_name(kinds[k]);
        assert_non_null(name);
        pfi_gpu_kind back = (pfi_gpu_kind)99;
        assert_true(pfi_gpu_kind_parse(name, &back));
        assert_int_equal(back, kinds[k]);
    }
    assert_string_equal(pfi_gpu_kind_name(PFI_GPU_NVML), "nvml");
    assert_string_equal(pfi_gpu_kind_name(PFI_GPU_EMULATED), "emulated");
    assert_string_equal(pfi_gpu_kind_name(PFI_GPU_REPLAY), "replay");
    assert_null(pfi_gpu_kind_name((pfi_gpu_kind)99));
    assert_int_equal(pfi_gpu_backend_caps((pfi_gpu_kind)99), 0);
    assert_null(pfi_gpu_library_env((pfi_gpu_kind)99));
    pfi_gpu_kind out = PFI_GPU_REPLAY;
    assert_false(pfi_gpu_kind_parse("bogus", &out));
    assert_false(pfi_gpu_kind_parse(NULL, &out));
    assert_int_equal(out, PFI_GPU_REPLAY);

    /* what the callers ask of each backend */
    unsigned nv = pfi_gpu_backend_caps(PFI_GPU_NVML);
    unsigned em = pfi_gpu_backend_caps(PFI_GPU_EMULATED);
    unsigned rp = pfi_gpu_backend_caps(PFI_GPU_REPLAY);
    assert_int_equal(nv, PFI_GPU_CAP_SET_LIMITS | PFI_GPU_CAP_PERSISTENT_LIMITS);
    assert_int_equal(em, PFI_GPU_CAP_SET_LIMITS | PFI_GPU_CAP_VIRTUAL_CLOCK | PFI_GPU_CAP_JOBS);
    assert_int_equal(rp, PFI_GPU_CAP_VIRTUAL_CLOCK | PFI_GPU_CAP_REPLAY_FILE);
    assert_int_equal(pfi_gpu_backend_caps(PFI_GPU_DEFAULT), nv);
    assert_string_equal(pfi_gpu_library_env(PFI_GPU_NVML), "PFI_NVML_LIBRARY");
    assert_null(pfi_gpu_library_env(PFI_GPU_EMULATED));
    assert_null(pfi_gpu_library_env(PFI_GPU_REPLAY));

    char buf[128];
    assert_string_equal(pfi_gpu_kind_names(0, buf, sizeof buf), "nvml, emulated or replay");
    assert_string_equal(pfi_gpu_kind_names(PFI_GPU_CAP_SET_LIMITS, buf, sizeof buf),
                        "nvml or emulated");
    assert_string_equal(pfi_gpu_kind_names(PFI_GPU_CAP_JOBS, buf, sizeof buf), "emulated");
    assert_string_equal(pfi_gpu_kind_names(PFI_GPU_CAP_VIRTUAL_CLOCK, buf, sizeof buf),
                        "emulated or replay");
    assert_string_equal(
        pfi_gpu_kind_names(PFI_GPU_CAP_PERSISTENT_LIMITS | PFI_GPU_CAP_JOBS, buf, sizeof buf), "");
    char small[8];
    assert_string_equal(pfi_gpu_kind_names(0, small, sizeof small), "nvml, e");
    assert_ptr_equal(pfi_gpu_kind_names(0, NULL, 0), NULL);
}

/* An open backend answers what its table entry says: name, capabilities, clock, jobs, and
 * setting a limit (the current one, so nothing changes). */
static void check_caps_hold(pfi_gpu_kind kind, pfi_gpu *g)
{
    unsigned caps = pfi_gpu_caps(g);
    assert_int_equal(caps, pfi_gpu_backend_caps(kind));
    assert_string_equal(pfi_gpu_backend_name(g), pfi_gpu_kind_name(kind));
    assert_int_equal(pfi_gpu_is_virtual_clock(g), (caps & PFI_GPU_CAP_VIRTUAL_CLOCK) != 0);
    unsigned nj = 0;
    assert_int_equal(pfi_gpu_job_count(g, &nj),
                     (caps & PFI_GPU_CAP_JOBS) ? PFI_OK : PFI_ERR_NOT_SUPPORTED);
    assert_int_equal(pfi_gpu_job_start(g),
                     (caps & PFI_GPU_CAP_JOBS) ? PFI_OK : PFI_ERR_NOT_SUPPORTED);
    pfi_gpu_limits l;
    assert_int_equal(pfi_gpu_read_limits(g, 0, &l, NULL), PFI_OK);
    uint32_t mw = (l.valid & PFI_LIMIT_CURRENT) ? l.current_mw : 300000;
    assert_int_equal(pfi_gpu_set_limit_mw(g, 0, mw, NULL),
                     (caps & PFI_GPU_CAP_SET_LIMITS) ? PFI_OK : PFI_ERR_NOT_SUPPORTED);
}

static void test_backend_caps_hold(void **st)
{
    (void)st;
    fake_state("gpu 0 uuid=GPU-aaa min=200000 max=700000 default=700000 limit=700000 "
               "enforced=700000\n");
    pfi_gpu_config nc = {.kind = PFI_GPU_NVML, .library = PFI_FAKE_NVML};
    pfi_gpu *g = NULL;
    assert_int_equal(pfi_gpu_open(&nc, &g, NULL), PFI_OK);
    check_caps_hold(PFI_GPU_NVML, g);
    pfi_gpu_close(g);

    pfi_gpu_config ec = {.kind = PFI_GPU_EMULATED, .emulate = "gpus=2"};
    assert_int_equal(pfi_gpu_open(&ec, &g, NULL), PFI_OK);
    check_caps_hold(PFI_GPU_EMULATED, g);
    pfi_gpu_close(g);

    char path[128];
    snprintf(path, sizeof path, "/tmp/pfi-test-replay-caps-%ld.csv", (long)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("t_s,gpu,power_w\n10,0,300\n", f);
    fclose(f);
    pfi_gpu_config rc = {.kind = PFI_GPU_REPLAY, .replay_path = path};
    assert_int_equal(pfi_gpu_open(&rc, &g, NULL), PFI_OK);
    check_caps_hold(PFI_GPU_REPLAY, g);
    pfi_gpu_close(g);
    unlink(path);

    pfi_gpu_config bad = {.kind = (pfi_gpu_kind)99};
    pfi_diag d;
    g = (pfi_gpu *)1;
    assert_int_equal(pfi_gpu_open(&bad, &g, &d), PFI_ERR_INVALID_ARGUMENT);
    assert_null(g);
}

/* The library reads no environment variable: PFI_NVML_LIBRARY is the callers' business. */
static void test_nvml_ignores_environment(void **st)
{
    (void)st;
    setenv("PFI_NVML_LIBRARY", PFI_FAKE_NVML, 1);
    fake_state("gpu 0\n");
    pfi_gpu_config c = {.kind = PFI_GPU_NVML, .library = "/nonexistent/libnvidia-ml.so.1"};
    pfi_gpu *g = NULL;
    pfi_diag d;
    assert_int_equal(pfi_gpu_open(&c, &g, &d), PFI_ERR_UNAVAILABLE);
    assert_non_null(strstr(d.message, "/nonexistent/libnvidia-ml.so.1"));
    c.library = NULL; /* the driver's soname, not the variable */
    pfi_error e = pfi_gpu_open(&c, &g, &d);
    if (e != PFI_OK)
        assert_non_null(strstr(d.message, "cannot load libnvidia-ml.so.1"));
    pfi_gpu_close(g);
    unsetenv("PFI_NVML_LIBRARY");
}

/* A followed log whose tqdm bar writes '\r'-separated updates, 2000 of them on one physical
 * line (about 90 KiB): every update is a report, none is lost as an overlong line. */
static void test_tput_log_progress_bar(void **st)
{
    (void)st;
    pfi_gpu_config c = {.kind = PFI_GPU_EMULATED, .emulate = "gpus=1"};
    pfi_gpu *g;
    assert_int_equal(pfi_gpu_open(&c, &g, NULL), PFI_OK);
    char path[] = "/tmp/pfi-tput-bar-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    pfi_tput_regex *re;
    pfi_diag d;
    assert_int_equal(pfi_tput_regex_compile(", (?<throughput>[0-9.]+)tok/s\\]", &re, &d), PFI_OK);
    pfi_tput_source src;
    assert_int_equal(pfi_tput_log(path, re, g, &src, &d), PFI_OK);
    assert_int_equal(src.start(src.ctx, &d), PFI_OK);
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    for (int n = 1; n <= 2000; n++)
        fprintf(f, "\rtrain: %3d%%|#####| %d/2000 [00:%02d<00:00, %d.5tok/s]", n / 20, n, n % 60,
                1000 + n);
    fputc('\n', f);
    assert_true(ftell(f) > 65536);
    fclose(f);
    double *t = malloc(4096 * sizeof *t), *v = malloc(4096 * sizeof *v);
    assert_non_null(t);
    assert_non_null(v);
    size_t n = 0;
    assert_int_equal(src.poll(src.ctx, 0, t, v, 4096, &n), PFI_OK);
    assert_int_equal(n, 2000);
    assert_float_equal(v[0], 1001.5, 0);
    assert_float_equal(v[1999], 3000.5, 0);
    free(t);
    free(v);
    pfi_tput_source_destroy(&src);
    unlink(path);
    pfi_gpu_close(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_emulated_multi_job),
        cmocka_unit_test(test_nvml_error_map),
        cmocka_unit_test(test_nvml_missing_library),
        cmocka_unit_test(test_nvml_init_error),
        cmocka_unit_test(test_nvml_read),
        cmocka_unit_test(test_nvml_set_errors),
        cmocka_unit_test(test_nvml_gpu_lost),
        cmocka_unit_test(test_emulated_model),
        cmocka_unit_test(test_replay),
        cmocka_unit_test(test_tput_regex),
        cmocka_unit_test(test_tput_log_progress_bar),
        cmocka_unit_test(test_backend_table),
        cmocka_unit_test(test_backend_caps_hold),
        cmocka_unit_test(test_nvml_ignores_environment),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(state_path);
    return rc;
}
