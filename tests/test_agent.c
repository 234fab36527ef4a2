/*
 * Unit tests of pfid's pieces that need no server: the constant-time token comparison, the
 * config parser (durations, sizes, inline comments, errors with line numbers), the mapping
 * file, the Slurm environment scan, the request body parsers, Prometheus label escaping, the
 * GPU process list through the fake NVML, and the log's escaping of the text it quotes.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "checks.h"

#include "agent.h"
#include "buf.h"
#include "log.h"
#include "pfi/http.h"
#include "request.h"

static void test_token(void **state)
{
    (void)state;
    static const struct {
        const char *given, *secret;
        bool want;
    } cases[] = {
        {"abc", "abc", true},   {"abd", "abc", false}, {"ab", "abc", false},
        {"abcd", "abc", false}, {"", "abc", false},    {"", "", false}, /* no token: no write */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        CHECK(pfi_http_token_equal(cases[k].given, strlen(cases[k].given), cases[k].secret,
                                   strlen(cases[k].secret)) == cases[k].want,
              "token case %zu\n", k);
    END_CHECKS();
}

static void test_config(void **state)
{
    (void)state;
    pfid_config c;
    pfi_diag d;
    pfid_config_defaults(&c);
    const char *ok = "# comment\n  interval = 250ms   # trailing\nmax_body = 1M\nlease_policy = "
                     "restore\nhold_max = 2m\nthroughput_log = j1 nanotron /x.log 4096\r\n";
    CHECK(pfid_config_parse(&c, ok, strlen(ok), &d) == PFI_OK, "%s\n", d.message);
    CHECK(fabs(c.interval_s - 0.25) < 1e-12, "interval %g\n", c.interval_s);
    CHECK(c.max_body == 1024 * 1024, "max_body %zu\n", c.max_body);
    CHECK(c.lease_policy == PFID_POLICY_RESTORE, "policy\n");
    CHECK(c.hold_max_s == 120, "hold_max %g\n", c.hold_max_s);
    CHECK(c.n_tlogs == 1 && c.tlogs[0].scale == 4096 && c.tlogs[0].format == PFI_TRAINLOG_NANOTRON,
          "throughput_log\n");
    static const struct {
        const char *text;
        long line;
        const char *msg;
    } bad[] = {
        {"interval = 1s\nbogus = 1\n", 2, "unknown key 'bogus'"},
        {"interval = -1s\n", 1, "interval"},
        {"interval = 1 parsec\n", 1, "interval"},
        {"no equals sign\n", 1, "key = value"},
        {"max_body = 99999999999999999999\n", 1, "max_body"},
        {"jobs = lsf\n", 1, "jobs"},
        {"throughput_log = j1 regex /x\n", 1, "format"},
        {"emulated_job = a/b\n", 1, "emulated_job"},
        /* the shared reader (pfi_conf_parse): not text, escaped; an empty key; CRLF lines */
        {"# x\n\177ELF\002\033[2J\n", 2, "not text (\\x7FELF\\x02\\x1B[2J)"},
        {"interval = 1s\r\n = 5\r\n", 2, "want 'key = value'"},
        {"interval = 1s\r\nbogus = 1\r\n", 2, "unknown key 'bogus'"},
        {"interval = 2s  # two\ninterval = abc # x\n", 2, "bad value 'abc': expected a duration"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        pfid_config_defaults(&c);
        pfi_diag_clear(&d);
        CHECK(pfid_config_parse(&c, bad[k].text, strlen(bad[k].text), &d) != PFI_OK &&
                  d.line == bad[k].line && strstr(d.message, bad[k].msg) != NULL,
              "bad config %zu: line %ld '%s'\n", k, d.line, d.message);
    }
    pfid_config_defaults(&c);
    c.jobs = PFID_JOBS_STATIC;
    CHECK(pfid_config_check(&c, &d) != PFI_OK, "static without jobs_file\n");
    END_CHECKS();
}

static void test_mapping(void **state)
{
    (void)state;
    pfid_mapping m;
    pfi_diag d;
    const char *text = "# gpu job class\nGPU-a job-1 moe\n\n1 job-2\n";
    CHECK(pfid_mapping_parse(text, strlen(text), &m, &d) == PFI_OK && m.n == 2, "parse\n");
    const pfid_mapping_entry *e = pfid_mapping_find(&m, "GPU-a", 7);
    CHECK(e != NULL && strcmp(e->job, "job-1") == 0 && strcmp(e->cls, "moe") == 0, "by uuid\n");
    e = pfid_mapping_find(&m, "GPU-zz", 1);
    CHECK(e != NULL && strcmp(e->job, "job-2") == 0, "by index\n");
    CHECK(pfid_mapping_find(&m, "GPU-zz", 2) == NULL, "unmapped\n");
    pfid_mapping_clear(&m);
    static const char *const bad[] = {"GPU-a\n",     "GPU-a j k l\n", "GPU-a j\nGPU-a k\n",
                                      "GPU-a j/k\n", "99999 j\n",     "GPU a\"b j\n"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        pfi_diag_clear(&d);
        CHECK(pfid_mapping_parse(bad[k], strlen(bad[k]), &m, &d) == PFI_ERR_PARSE && d.line > 0,
              "bad mapping %zu\n", k);
        pfid_mapping_clear(&m);
    }
    char job[PFID_ID_MAX];
    const char env[] = "PATH=/bin\0SLURM_JOBID=7\0SLURM_JOB_ID=4242\0";
    CHECK(pfid_environ_job(env, sizeof env - 1, job) && strcmp(job, "4242") == 0, "environ\n");
    const char env2[] = "SLURM_JOBID=77";
    CHECK(pfid_environ_job(env2, sizeof env2 - 1, job) && strcmp(job, "77") == 0, "JOBID\n");
    CHECK(!pfid_environ_job("SLURM_JOB_ID=", 13, job), "empty id\n");
    END_CHECKS();
}

static void test_requests(void **state)
{
    (void)state;
    pfid_caps_request r;
    char msg[256];
    const char *ok = "{\"request_id\": \"r-1\", \"lease_s\": 30, \"caps\": [{\"uuid\": \"GPU-0\", "
                     "\"cap_w\": 450.5}, {\"job\": \"j\", \"cap_w\": 300}]}";
    CHECK(pfid_caps_request_parse(ok, strlen(ok), &r, msg, sizeof msg) && r.n == 2 &&
              !r.items[0].by_job && r.items[1].by_job && r.items[0].cap_w == 450.5 &&
              r.lease_s == 30,
          "valid: %s\n", msg);
    pfid_caps_request_clear(&r);
    static const struct {
        const char *body, *msg;
    } bad[] = {
        {"{", "malformed JSON"},
        {"{\"request_id\": \"r\", \"request_id\": \"s\"}", "duplicate"},
        {"{\"request_id\": \"r\", \"lease_s\": 0, \"caps\": []}", "lease_s"},
        {"{\"request_id\": \"r\", \"lease_s\": 1, \"caps\": []}", "non-empty"},
        {"{\"request_id\": \"r\", \"lease_s\": 1, \"caps\": [{\"uuid\": \"a\"}]}", "caps[0]"},
        {"{\"request_id\": \"r\", \"lease_s\": 1, \"caps\": [{\"uuid\": \"a\", \"job\": \"b\", "
         "\"cap_w\": 1}]}",
         "caps[0]"},
        {"{\"request_id\": \"r\", \"lease_s\": 1, \"caps\": [{\"uuid\": \"a\", \"cap_w\": -5}]}",
         "cap_w"},
        /* out of the shared bounds: refused with the bound (%g), never a 309-digit echo */
        {"{\"request_id\": \"r\", \"lease_s\": 1, \"caps\": [{\"uuid\": \"a\", \"cap_w\": 1e308}]}",
         "cap_w must be a number of watts > 0 and <= 1e+12"},
        {"{\"request_id\": \"r\", \"lease_s\": 1e308, \"caps\": [{\"uuid\": \"a\", \"cap_w\": 5}]}",
         "lease_s must be a number of seconds > 0 and <= 1e+09"},
        {"{\"request_id\": \"r s\", \"lease_s\": 1, \"caps\": [{\"uuid\": \"a\", \"cap_w\": 5}]}",
         "request_id"},
        {"{\"request_id\": \"r\", \"lease_s\": 1, \"caps\": [{\"uuid\": \"a\", \"cap_w\": 5}], "
         "\"x\": 1}",
         "unknown member"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        msg[0] = '\0';
        CHECK(!pfid_caps_request_parse(bad[k].body, strlen(bad[k].body), &r, msg, sizeof msg) &&
                  strstr(msg, bad[k].msg) != NULL && r.items == NULL,
              "bad request %zu: '%s'\n", k, msg);
    }
    double t;
    CHECK(pfid_throughput_parse("{\"throughput_tok_s\": 12.5}", 26, &t, msg, sizeof msg) &&
              t == 12.5,
          "throughput\n");
    CHECK(!pfid_throughput_parse("{\"throughput_tok_s\": \"1\"}", 25, &t, msg, sizeof msg),
          "throughput string\n");
    /* POST /v1/clock: t_s alone or with unix_s; each refusal its own reason */
    static const struct {
        const char *body;
        bool ok;
        double t, u; /* NaN: unix_s not given */
    } clk[] = {
        {"{\"t_s\": 17.75}", true, 17.75, NAN},
        {"{\"t_s\": 0, \"unix_s\": 1746381990.5}", true, 0, 1746381990.5},
        {"{\"t_s\": -1}", false, 0, 0},
        {"{\"t_s\": \"1\"}", false, 0, 0},
        {"{\"unix_s\": 5}", false, 0, 0},
        {"{\"t_s\": 1, \"unix_s\": 0}", false, 0, 0},
        {"{\"t_s\": 1, \"speed\": 2}", false, 0, 0},
        {"{\"t_s\": 1, \"t_s\": 2}", false, 0, 0},
        {"[1]", false, 0, 0},
    };
    for (size_t k = 0; k < sizeof clk / sizeof clk[0]; k++) {
        double ct = NAN, cu = 0;
        bool got = pfid_clock_parse(clk[k].body, strlen(clk[k].body), &ct, &cu, msg, sizeof msg);
        CHECK(got == clk[k].ok &&
                  (!got || (ct == clk[k].t && (isnan(clk[k].u) ? isnan(cu) : cu == clk[k].u))),
              "clock body %zu: '%s' (%s)\n", k, clk[k].body, got ? "accepted" : msg);
    }
    END_CHECKS();
}

static void test_label_escape(void **state)
{
    (void)state;
    pfid_buf b = {0};
    pfid_buf_printf(&b, "x{l=\"");
    pfid_buf_label(&b, "a\\b\"c\nd");
    pfid_buf_printf(&b, "\"} 1\n");
    size_t len;
    char *s = pfid_buf_take(&b, &len);
    CHECK(s != NULL && strcmp(s, "x{l=\"a\\\\b\\\"c\\nd\"} 1\n") == 0, "escaped: %s\n", s);
    free(s);
    END_CHECKS();
}

static void test_processes(void **state)
{
    (void)state;
    char path[] = "/tmp/pfid-fake-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char st[] = "gpu 0 uuid=GPU-0 pids=11:22:33\ngpu 1 uuid=GPU-1\n";
    assert_true(write(fd, st, sizeof st - 1) == (ssize_t)(sizeof st - 1));
    close(fd);
    setenv("FAKE_NVML_STATE", path, 1);
    pfi_gpu_config c = {.kind = PFI_GPU_NVML, .library = PFI_FAKE_NVML};
    pfi_gpu *g = NULL;
    pfi_diag d;
    assert_int_equal(pfi_gpu_open(&c, &g, &d), PFI_OK);
    unsigned pids[8];
    size_t n = 0;
    CHECK(pfi_gpu_processes(g, 0, pids, 8, &n, &d) == PFI_OK && n == 3 && pids[2] == 33,
          "processes: %zu %s\n", n, d.message);
    CHECK(pfi_gpu_processes(g, 0, pids, 2, &n, &d) == PFI_ERR_LIMIT, "limit\n");
    CHECK(pfi_gpu_processes(g, 1, pids, 8, &n, &d) == PFI_OK && n == 0, "none\n");
    pfi_gpu_close(g);
    c = (pfi_gpu_config){.kind = PFI_GPU_EMULATED, .emulate = "gpus=1"};
    assert_int_equal(pfi_gpu_open(&c, &g, &d), PFI_OK);
    CHECK(pfi_gpu_processes(g, 0, pids, 8, &n, &d) == PFI_ERR_NOT_SUPPORTED, "emulated\n");
    pfi_gpu_close(g);
    unlink(path);
    unsetenv("FAKE_NVML_STATE");
    END_CHECKS();
}

/* pfid's live rate from a training log follows pfi ingest's exclusion rule: the last interval
 * of megatron_eval_last.log holds an evaluation (1280 samples in 20 s), so the rate is the one
 * before it, 1280 in 10 s, times the scale (4096 tokens per sample). pfid's former mask took
 * 64 x 4096. */
static void test_tail_rate_rule(void **state)
{
    (void)state;
    pfid_tlog t = {.format = PFI_TRAINLOG_AUTO, .scale = 4096};
    snprintf(t.path, sizeof t.path, "%s/trainlog/megatron_eval_last.log", PFI_TEST_DATA);
    FILE *f = fopen(t.path, "rb");
    CHECK(f != NULL, "open %s\n", t.path);
    if (f != NULL) {
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fclose(f);
        double r = pfid_jobs_tail_rate(&t, size);
        CHECK(fabs(r - 128.0 * 4096) < 1e-6, "tail rate %.17g, want %.17g\n", r, 128.0 * 4096);
    }
    END_CHECKS();
}

/* One node_power_file round on text[0..len): a->node.err afterwards ("" when read). */
static void node_round(pfid_agent *a, const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL && fwrite(text, 1, len, f) == len && fclose(f) == 0, "write %s\n", path);
    pfid_node_power_round(a);
}

static void test_node_power_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/pfi-node-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp\n");
    pfid_agent *a = calloc(1, sizeof *a);
    CHECK(a != NULL, "calloc\n");
    if (a == NULL)
        return;
    pthread_mutex_init(&a->snap_lock, NULL);
    a->cfg.node_power_kind = PFID_NODE_WATTS;
    a->node.power_w = a->node.counter_uj = NAN;
    snprintf(a->cfg.node_power_file, sizeof a->cfg.node_power_file, "%s/w", dir);
    node_round(a, a->cfg.node_power_file, "5210\n", 5);
    CHECK(a->node.err[0] == '\0' && a->node.power_w == 5210, "5210: err '%s', power %g\n",
          a->node.err, a->node.power_w);
    /* out of range: an error, not a power of 1e+308 W */
    node_round(a, a->cfg.node_power_file, "1e308\n", 6);
    CHECK(strstr(a->node.err, "out of range: 1e308 W is above 1e+06 W") != NULL,
          "1e308: err '%s'\n", a->node.err);
    /* the text found is shown without its line end, escaped: no raw newline in the error */
    node_round(a, a->cfg.node_power_file, "nan\n", 4);
    CHECK(strchr(a->node.err, '\n') == NULL && strstr(a->node.err, "found 'nan'") != NULL,
          "nan: err '%s'\n", a->node.err);
    /* 64 bytes of binary garbage: not a number, not "more than one number" */
    char junk[64];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)(0x80 + i);
    node_round(a, a->cfg.node_power_file, junk, sizeof junk);
    CHECK(strstr(a->node.err, "not a number: found '\\x80\\x81") != NULL &&
              strstr(a->node.err, "more than one number") == NULL,
          "junk: err '%s'\n", a->node.err);
    /* 64 bytes of digits and blanks: more than one number */
    memset(junk, ' ', sizeof junk);
    memcpy(junk, "12 13", 5);
    node_round(a, a->cfg.node_power_file, junk, sizeof junk);
    CHECK(strstr(a->node.err, "more than one number (64 bytes or more)") != NULL,
          "numbers: err '%s'\n", a->node.err);
    /* frozen: the same value and mtime for node_power_frozen_after (0.2 s here) and two
     * rounds or more — missing, flagged, counted; a rewrite (a new mtime, the same value) is
     * a live source again */
    a->cfg.node_power_frozen_s = 0.2;
    a->cfg.stale_s = 100;
    node_round(a, a->cfg.node_power_file, "5210\n", 5);
    CHECK(a->node.err[0] == '\0' && !a->node.frozen && a->node.power_w == 5210, "fresh: err '%s'\n",
          a->node.err);
    pfid_node_power_round(a); /* unchanged, 1 round, well under 0.2 s */
    CHECK(a->node.err[0] == '\0' && !a->node.frozen, "one unchanged round: err '%s'\n",
          a->node.err);
    struct timespec nap = {0, 250 * 1000 * 1000};
    nanosleep(&nap, NULL);
    pfid_node_power_round(a); /* unchanged, 2 rounds, >= 0.25 s */
    double nw, ngw;
    pfid_node_power(a, a->node.mono_s, &nw, &ngw);
    CHECK(a->node.frozen && a->node.frozen_total == 1 && strstr(a->node.err, "frozen") != NULL &&
              strstr(a->node.err, "(5210)") != NULL && isnan(nw) && isnan(ngw),
          "frozen: flag %d, total %lu, err '%s', power %g\n", a->node.frozen, a->node.frozen_total,
          a->node.err, nw);
    node_round(a, a->cfg.node_power_file, "5210\n", 5); /* rewritten: a new mtime */
    pfid_node_power(a, a->node.mono_s, &nw, &ngw);
    CHECK(!a->node.frozen && a->node.err[0] == '\0' && nw == 5210,
          "rewritten: flag %d, err '%s', power %g\n", a->node.frozen, a->node.err, nw);
    /* an energy counter that does not move is no new reading: never 0 W */
    a->cfg.node_power_kind = PFID_NODE_ENERGY_UJ;
    a->cfg.node_power_frozen_s = 0;
    a->node.counter_uj = NAN;
    node_round(a, a->cfg.node_power_file, "1000000\n", 8);
    nap.tv_nsec = 20 * 1000 * 1000;
    nanosleep(&nap, NULL);
    node_round(a, a->cfg.node_power_file, "3000000\n", 8); /* 2 J over >= 20 ms */
    double w1 = a->node.power_w, m1 = a->node.mono_s;
    CHECK(w1 > 0 && w1 <= 100, "counter: %g W\n", w1);
    nanosleep(&nap, NULL);
    node_round(a, a->cfg.node_power_file, "3000000\n", 8);
    CHECK(a->node.power_w == w1 && a->node.mono_s == m1 && a->node.err[0] == '\0',
          "an unmoved counter: %g W (was %g), reading at %g (was %g)\n", a->node.power_w, w1,
          a->node.mono_s, m1);
    unlink(a->cfg.node_power_file);
    rmdir(dir);
    pthread_mutex_destroy(&a->snap_lock);
    free(a);
    END_CHECKS();
}

/* pfid_log's line "job ARG" at level, as written on stderr, into out[n]. */
static void log_line(int level, const char *arg, char *out, size_t n)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = dup(2);
    assert_non_null(tmp);
    assert_true(saved >= 0 && dup2(fileno(tmp), 2) >= 0);
    pfid_log(level, "job %s", arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t got = fread(out, 1, n - 1, tmp);
    out[got] = '\0';
    fclose(tmp);
}

/* The log's text from requests, files and drivers (a job name, a path, a GPU name): a
 * newline or carriage return cannot forge a line, an ESC sequence reach the terminal, a byte
 * of invalid UTF-8 pass raw; each is \xNN (pfi_escape), well-formed UTF-8 kept. The expected
 * lines are written by hand from those rules. */
static void test_log_escape(void **state)
{
    (void)state;
    static const struct {
        const char *arg, *want;
    } cases[] = {
        {"j1\npfid: error: forged", "pfid: warning: job j1\\x0Apfid: error: forged\n"},
        {"a\rb", "pfid: warning: job a\\x0Db\n"},
        {"\x1b[31mred\x1b[0m", "pfid: warning: job \\x1B[31mred\\x1B[0m\n"},
        {"bad\xff\xc3", "pfid: warning: job bad\\xFF\\xC3\n"},
        {"caf\xc3\xa9 \xe2\x82\xac", "pfid: warning: job caf\xc3\xa9 \xe2\x82\xac\n"},
        {"tab\there", "pfid: warning: job tab\\x09here\n"},
        {"plain-job_1", "pfid: warning: job plain-job_1\n"},
    };
    int was = pfid_log_level();
    pfid_log_set_level(PFID_LOG_INFO);
    char got[512];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        log_line(PFID_LOG_WARN, cases[k].arg, got, sizeof got);
        CHECK(strcmp(got, cases[k].want) == 0, "log case %zu: got '%s', want '%s'\n", k, got,
              cases[k].want);
    }
    pfid_log_set_level(was);
    END_CHECKS();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token),          cmocka_unit_test(test_config),
        cmocka_unit_test(test_mapping),        cmocka_unit_test(test_requests),
        cmocka_unit_test(test_label_escape),   cmocka_unit_test(test_processes),
        cmocka_unit_test(test_tail_rate_rule), cmocka_unit_test(test_node_power_file),
        cmocka_unit_test(test_log_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
