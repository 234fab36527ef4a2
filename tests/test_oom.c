/*
 * Allocation-failure tests (STYLE habit 6; after libuv's test/test-loop-oom.c).
 *
 * libpfi allocates through pfi_replace_allocator's functions (pfi/memory.h); here they are a
 * counting allocator that fails the Nth allocation. For each operation of the table below the
 * test first runs it with no failure (the baseline: its result, a signature of its output, and
 * its number of allocations), then again with N = 1, 2, ... until an N beyond the allocations
 * it makes. Every run must
 *   - return the baseline's result (with the same output: a failure the code recovered from,
 *     e.g. a smaller retry, must not change what it computes) or PFI_ERR_NOMEM (or the one
 *     other error the table documents for that operation), never crash;
 *   - leave no block allocated: every block carries a header counted here, so a leak shows
 *     as a live count above the baseline's even without LeakSanitizer;
 *   - release only blocks that came from the hook: pfi_free of a libc block, or free() of a
 *     hook block (an allocator mix-up), hits a bad header or ASan;
 *   - leave what it was given usable: a runs table keeps what it held and reads the file again
 *     once memory is back, a telemetry collector can still be summarised and destroyed, a
 *     store takes the run it refused, a sweep puts every GPU's limit back and removes its
 *     journal.
 * Two passes: the Nth allocation fails alone ("once": the code must not carry on as if it had
 * succeeded), and the Nth and every later one fail ("from": error paths that allocate).
 *
 * Not covered: allocations of SQLite, PCRE2, GSL, libxml2, PLplot, libcurl and libc
 * (realpath, glob, open_memstream, fopen), which keep their own allocators (pfi/memory.h).
 * The controller runs without a network: its agents and Prometheus refuse connections.
 */
#include <arpa/inet.h>
#include <ftw.h>
#include <math.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <execinfo.h>
#include <sqlite3.h>

#include "checks.h"
#include "control/ctl_internal.h"
#include "pfi/agent_api.h"
#include "pfi/allocate.h"
#include "pfi/audit.h"
#include "pfi/control.h"
#include "pfi/control_files.h"
#include "pfi/csv.h"
#include "pfi/fit.h"
#include "pfi/groups.h"
#include "pfi/index.h"
#include "pfi/joblib.h"
#include "pfi/kernlog.h"
#include "pfi/library.h"
#include "pfi/manifest.h"
#include "pfi/memory.h"
#include "pfi/reduce.h"
#include "pfi/runs.h"
#include "pfi/simulate.h"
#include "pfi/store.h"
#include "pfi/sweep.h"
#include "pfi/telemetry.h"
#include "pfi/topology.h"
#include "pfi/trainlog.h"

#if !defined(PFI_CASES) || !defined(PFI_REPO_DATA)
#error "PFI_CASES and PFI_REPO_DATA are set by tests/CMakeLists.txt"
#endif

/* ---- the counting allocator ------------------------------------------------------------- */

#define MAGIC_LIVE 0x6f6f6d2d6c697665ull /* "oom-live" */
#define MAGIC_DEAD 0x6f6f6d2d64656164ull /* "oom-dead" */

/* Every block starts with this header; the caller sees the bytes after it. */
typedef union header {
    struct {
        uint64_t magic;
        size_t size;
    } h;
    max_align_t align;
} header;

static atomic_bool g_armed;    /* count and fail only inside an operation's window */
static atomic_long g_calls;    /* allocation calls in the window */
static atomic_long g_fail_at;  /* the call that fails (1-based); 0: none */
static atomic_bool g_from;     /* fail every call from g_fail_at on, not just that one */
static atomic_bool g_injected; /* a failure was injected in this run */
static atomic_long g_live;     /* blocks allocated and not yet freed (armed or not) */

static long g_trap; /* PFI_OOM_TRAP=N: print the stack of each injected failure N */

static bool inject(void)
{
    if (!atomic_load(&g_armed))
        return false;
    long n = atomic_fetch_add(&g_calls, 1) + 1;
    long at = atomic_load(&g_fail_at);
    if (at > 0 && (n == at || (atomic_load(&g_from) && n > at))) {
        atomic_store(&g_injected, true);
        if (n == g_trap) {
            void *frames[32];
            fprintf(stderr, "test_oom: allocation %ld fails here:\n", n);
            backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
        }
        return true;
    }
    return false;
}

static header *check_block(void *p, const char *who)
{
    header *h = (header *)p - 1;
    if (h->h.magic != MAGIC_LIVE) {
        fprintf(stderr, "test_oom: %s of %p, not a live block of the hook (%s)\n", who, p,
                h->h.magic == MAGIC_DEAD ? "freed twice" : "another allocator's block");
        abort();
    }
    return h;
}

static void *t_malloc(size_t size)
{
    if (inject())
        return NULL;
    header *h = malloc(sizeof *h + size);
    if (h == NULL)
        return NULL;
    h->h.magic = MAGIC_LIVE;
    h->h.size = size;
    atomic_fetch_add(&g_live, 1);
    return h + 1;
}

static void *t_calloc(size_t count, size_t size)
{
    if (size != 0 && count > (SIZE_MAX - sizeof(header)) / size)
        return NULL;
    void *p = t_malloc(count * size);
    if (p != NULL)
        memset(p, 0, count * size);
    return p;
}

static void *t_realloc(void *p, size_t size)
{
    if (p == NULL)
        return t_malloc(size);
    header *h = check_block(p, "realloc");
    if (inject())
        return NULL;
    header *q = realloc(h, sizeof *q + size);
    if (q == NULL)
        return NULL;
    q->h.size = size;
    return q + 1;
}

static void t_free(void *p)
{
    if (p == NULL)
        return;
    header *h = check_block(p, "free");
    h->h.magic = MAGIC_DEAD;
    atomic_fetch_sub(&g_live, 1);
    free(h);
}

static void arm(void)
{
    atomic_store(&g_armed, true);
}

static void disarm(void)
{
    atomic_store(&g_armed, false);
}

/* ---- signatures: what an operation computed, to compare with the baseline --------------- */

typedef struct sig {
    char text[2048];
    uint64_t hash; /* FNV-1a of everything added */
} sig;

static void sig_add(sig *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sig_add(sig *s, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (s->hash == 0)
        s->hash = 1469598103934665603ull;
    for (const char *c = buf; *c; c++)
        s->hash = (s->hash ^ (unsigned char)*c) * 1099511628211ull;
    size_t used = strlen(s->text);
    if (used + 1 < sizeof s->text)
        snprintf(s->text + used, sizeof s->text - used, "%s", buf);
}

static void sig_table(sig *s, const pfi_runs_table *t)
{
    sig_add(s, "files=%zu groups=%zu runs=%zu ", t->n_files, t->n_groups, t->n_runs);
    for (size_t g = 0; g < t->n_groups; g++) {
        const pfi_group *gr = &t->groups[g];
        for (size_t k = 0; k < gr->n_key; k++)
            sig_add(s, "|%s=%s", gr->key_names[k], gr->key_values[k]);
        sig_add(s, "|class=%s", gr->job_class ? gr->job_class : "-");
        for (size_t r = 0; r < gr->n_runs; r++)
            sig_add(s, "|%.17g,%.17g,%.17g,%u", gr->runs[r].cap_w, gr->runs[r].power_w,
                    gr->runs[r].throughput, gr->runs[r].valid);
    }
}

static void sig_tm(sig *s, const pfi_telemetry *tm)
{
    sig_add(s, "ent=%zu fields=%zu series=%zu rows=%zu skipped=%zu stored=%zu files=%zu ",
            tm->n_entities, tm->n_fields, tm->n_series, tm->n_rows, tm->n_skipped, tm->n_stored,
            tm->n_files);
    for (size_t e = 0; e < tm->n_entities; e++)
        sig_add(s, "|%s", tm->entities[e].name);
    for (size_t f = 0; f < tm->n_fields; f++)
        sig_add(s, "|%s", tm->fields[f].name);
    for (size_t i = 0; i < tm->n_series; i++)
        sig_add(s, "|%zu/%zu n=%zu miss=%zu sum=%.17g", tm->series[i].entity, tm->series[i].field,
                tm->series[i].n, tm->series[i].n_missing, tm->series[i].sum);
    sig_add(s, "|tool_error=%s", tm->tool_error);
}

static void sig_reduced(sig *s, const pfi_reduced *r)
{
    sig_add(s, "|power %s %.17g %.17g %zu flags=%u energy=%.17g features=%zu", r->power_field,
            r->power.mean, r->power.se, r->power.m, r->flags, r->energy_j, r->n_features);
    for (size_t k = 0; k < r->n_features; k++)
        sig_add(s, "|%s=%.17g", r->feature_name[k], r->feature_value[k]);
}

/* ---- the operations ----------------------------------------------------------------------- */

typedef pfi_error (*op_fn)(const void *arg, sig *s);

typedef struct oom_op {
    const char *name;
    op_fn run;
    const void *arg;
    pfi_error also; /* another error an injected failure may give (PFI_OK: none) */
} oom_op;

static char g_tmp[256]; /* a private directory for the operations' files */
static pfi_diag g_d;    /* the diagnostic of the operation's last call */

static const char *tmp_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", g_tmp, name);
    return buf;
}

/* pfi_dataset_read of a dataset directory under data/. */
static pfi_error op_dataset_read(const void *arg, sig *s)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", PFI_REPO_DATA, (const char *)arg);
    pfi_manifest man;
    memset(&man, 0, sizeof man);
    pfi_runs_table *t = NULL;
    arm();
    pfi_error e = pfi_runs_table_create(&t);
    if (e == PFI_OK)
        e = pfi_dataset_read(dir, t, &man, &g_d);
    disarm();
    if (e == PFI_OK)
        sig_table(s, t);
    pfi_manifest_clear(&man);
    pfi_runs_table_destroy(t);
    return e;
}

/* The manifest, its file list (glob) and pfi_runs_read_csv of each file into one table; a
 * read that fails must append nothing and leave the table able to read the file again. */
static pfi_error op_runs_read(const void *arg, sig *s)
{
    char dir[512], mp[600];
    snprintf(dir, sizeof dir, "%s/%s", PFI_REPO_DATA, (const char *)arg);
    snprintf(mp, sizeof mp, "%s/%s", dir, PFI_MANIFEST_NAME);
    pfi_manifest man;
    char **paths = NULL;
    size_t n = 0;
    pfi_runs_table *t = NULL;
    arm();
    pfi_error e = pfi_manifest_load(mp, &man, &g_d);
    if (e == PFI_OK)
        e = pfi_manifest_files(dir, &man, &paths, &n, &g_d);
    if (e == PFI_OK)
        e = pfi_runs_table_create(&t);
    for (size_t i = 0; e == PFI_OK && i < n; i++) {
        size_t groups = t->n_groups, runs = t->n_runs, files = t->n_files;
        e = pfi_runs_read_csv(t, paths[i], NULL, &man.mapping, &g_d);
        if (e != PFI_OK) {
            disarm();
            CHECK(t->n_groups == groups && t->n_runs == runs && t->n_files == files,
                  "runs_read: a failed read of %s appended to the table", paths[i]);
            CHECK(pfi_runs_read_csv(t, paths[i], NULL, &man.mapping, &g_d) == PFI_OK,
                  "runs_read: the table cannot read %s again after %s", paths[i], pfi_strerror(e));
        }
    }
    disarm();
    if (e == PFI_OK) {
        sig_add(s, "manifest %s %s|", man.description ? man.description : "-", man.files);
        sig_table(s, t);
    }
    for (size_t i = 0; i < n; i++)
        pfi_free(paths[i]);
    pfi_free(paths);
    pfi_manifest_clear(&man);
    pfi_runs_table_destroy(t);
    return e;
}

/* pfi_analyze (point estimates, exclusions, Monte Carlo CI) of a dataset read beforehand. */
typedef struct analyze_arg {
    const char *dataset;
    unsigned threads;
    pfi_rng_kind rng;
    size_t draws;
} analyze_arg;

static pfi_error op_analyze(const void *arg, sig *s)
{
    const analyze_arg *a = arg;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", PFI_REPO_DATA, a->dataset);
    pfi_manifest man;
    pfi_runs_table *t = NULL;
    assert_int_equal(pfi_runs_table_create(&t), PFI_OK);
    assert_int_equal(pfi_dataset_read(dir, t, &man, NULL), PFI_OK);
    pfi_options o;
    pfi_options_init(&o);
    o.threads = a->threads;
    o.rng = a->rng;
    o.draws = a->draws;
    o.noise_rel = 0.01;
    pfi_result *res = calloc(t->n_groups, sizeof *res);
    assert_non_null(res);
    arm();
    pfi_error e = pfi_analyze(t, &o, res);
    disarm();
    for (size_t g = 0; g < t->n_groups; g++) {
        if (e == PFI_OK)
            sig_add(s, "|%zu %.17g %.17g %.17g %.17g %.17g %zu %d", g, res[g].ratio, res[g].area,
                    res[g].ce, res[g].ci_lo, res[g].ci_hi, res[g].n_points, (int)res[g].label);
        pfi_result_clear(&res[g]);
    }
    free(res);
    pfi_manifest_clear(&man);
    pfi_runs_table_destroy(t);
    return e;
}

/* Telemetry: pfi_telemetry_read_file of one or more case files, optionally energy-derived power,
 * the summary notes and the run reduction. */
typedef struct tm_arg {
    const char *files[8];
    pfi_telemetry_format fmt;
    double interval_s;
    const char *csv_fields;
    bool derive;
} tm_arg;

static pfi_error op_telemetry(const void *arg, sig *s)
{
    const tm_arg *a = arg;
    pfi_telemetry_options o = {.keep_series = true,
                               .interval_s = a->interval_s,
                               .csv_fields = a->csv_fields,
                               .host = "node0"};
    pfi_telemetry *tm = NULL;
    pfi_reduced red;
    memset(&red, 0, sizeof red);
    arm();
    pfi_error e = pfi_telemetry_create(&o, &tm);
    for (size_t i = 0; e == PFI_OK && i < 8 && a->files[i] != NULL; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", PFI_CASES, a->files[i]);
        e = pfi_telemetry_read_file(tm, path, a->fmt, &g_d);
    }
    if (e == PFI_OK && a->derive)
        e = pfi_telemetry_derive_power_from_energy(tm);
    if (tm != NULL)
        pfi_telemetry_summarize(tm); /* notes it cannot store are dropped (counted), not an error */
    pfi_error er = PFI_OK;
    if (e == PFI_OK) {
        pfi_reduce_options ro;
        pfi_reduce_options_init(&ro);
        er = pfi_reduce_power(tm, &ro, &red);
    }
    disarm();
    if (e == PFI_OK) {
        sig_tm(s, tm);
        sig_add(s, "|reduce %d", (int)er);
        if (er == PFI_OK)
            sig_reduced(s, &red);
    }
    pfi_telemetry_destroy(tm);
    return e != PFI_OK ? e : er;
}

/* A training log: pfi_trainlog_read_file (its format recognised, or a PCRE2 pattern: PCRE2's
 * own allocations are not hooked) and pfi_trainlog_reduce. */
typedef struct tl_arg {
    const char *file;
    const char *regex; /* NULL: PFI_TRAINLOG_AUTO */
} tl_arg;

static pfi_error op_trainlog(const void *arg, sig *s)
{
    const tl_arg *a = arg;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", PFI_CASES, a->file);
    pfi_trainlog *log = NULL;
    pfi_trainlog_summary sum;
    arm();
    pfi_error e = pfi_trainlog_read_file(path, a->regex ? PFI_TRAINLOG_REGEX : PFI_TRAINLOG_AUTO,
                                         a->regex, &log, &g_d);
    if (e == PFI_OK)
        e = pfi_trainlog_reduce(log, 0, 0.1, &sum);
    disarm();
    if (e == PFI_OK)
        sig_add(s, "n=%zu nan=%zu rate=%.17g window=%.17g included=%zu", log->n, log->n_nan,
                sum.steady.mean, sum.window_rate, sum.n_included);
    pfi_trainlog_destroy(log);
    return e;
}

/* Kernel log Xid events matched to the telemetry of the same run, then the reduction. */
static pfi_error op_kernlog(const void *arg, sig *s)
{
    (void)arg;
    char kp[512], tp[512];
    snprintf(kp, sizeof kp, "%s/case-03/dmesg_excerpt.txt", PFI_CASES);
    snprintf(tp, sizeof tp, "%s/case-03/query_loop.csv", PFI_CASES);
    pfi_kernlog *kl = NULL;
    pfi_telemetry *tm = NULL;
    pfi_kernlog_match *m = NULL;
    pfi_reduced red;
    pfi_telemetry_options o = {.keep_series = true};
    size_t matched = 0;
    arm();
    pfi_error e = pfi_kernlog_create(&kl);
    if (e == PFI_OK)
        e = pfi_kernlog_read_file(kl, kp, &g_d);
    if (e == PFI_OK)
        e = pfi_telemetry_create(&o, &tm);
    if (e == PFI_OK)
        e = pfi_telemetry_read_file(tm, tp, PFI_TELEMETRY_AUTO, &g_d);
    if (e == PFI_OK) {
        m = calloc(kl->n_events + 1, sizeof *m); /* the caller's memory */
        assert_non_null(m);
        e = pfi_kernlog_apply(kl, tm, NULL, 0, m, &matched);
    }
    if (e == PFI_OK) {
        pfi_telemetry_summarize(tm);
        pfi_reduce_options ro;
        pfi_reduce_options_init(&ro);
        e = pfi_reduce_power(tm, &ro, &red);
    }
    disarm();
    if (e == PFI_OK) {
        sig_add(s, "events=%zu matched=%zu|", kl->n_events, matched);
        sig_tm(s, tm);
        sig_reduced(s, &red);
    }
    free(m);
    pfi_telemetry_destroy(tm);
    pfi_kernlog_destroy(kl);
    return e;
}

/* The synthetic library and its job library, made once (unarmed) for the operations below. */
static pfi_library *g_lib;
static pfi_joblib *g_jl;

/* The allocation oracle and the other strategies on the library's jobs. */
static pfi_error op_allocate(const void *arg, sig *s)
{
    pfi_strategy st = *(const pfi_strategy *)arg;
    const pfi_joblib *l = g_jl;
    size_t n = l->n < 24 ? l->n : 24;
    unsigned char deep[24];
    for (size_t j = 0; j < n; j++)
        deep[j] = strcmp(l->class_name[l->class_id[j]], "moe-ft") == 0;
    pfi_alloc_jobs jobs = {.n = n,
                           .offset = l->offset,
                           .cap_w = l->cap_w,
                           .power_w = l->power_w,
                           .tput_tok_s = l->tput_tok_s,
                           .gpus = l->gpus,
                           .pfi = l->pfi,
                           .feature = l->feature,
                           .deep_cut = deep};
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    o.strategy = st;
    o.reduction = 0.25;
    pfi_alloc_result r, r2;
    memset(&r, 0, sizeof r);
    memset(&r2, 0, sizeof r2);
    pfi_alloc_workspace *w = NULL;
    arm();
    pfi_error e = pfi_alloc_result_init(&r, n);
    if (e == PFI_OK)
        e = pfi_allocate(&jobs, &o, &r, &g_d);
    /* the same with a workspace, twice: the second call allocates nothing */
    if (e == PFI_OK)
        e = pfi_alloc_workspace_create(&w);
    if (e == PFI_OK)
        e = pfi_alloc_result_init(&r2, n);
    for (int k = 0; k < 2 && e == PFI_OK; k++)
        e = pfi_allocate_ws(&jobs, &o, w, &r2, &g_d);
    disarm();
    if (e == PFI_OK) {
        sig_add(s, "%s obj=%.17g power=%.17g feasible=%d", r.method, r.objective, r.total_power_w,
                r.feasible);
        for (size_t j = 0; j < n; j++)
            sig_add(s, "|%.17g", r.cap_w[j]);
        for (size_t j = 0; j < n; j++)
            CHECK(r.cap_w[j] == r2.cap_w[j], "allocate: the workspace changes job %zu's cap", j);
    }
    pfi_alloc_workspace_destroy(w);
    pfi_alloc_result_clear(&r);
    pfi_alloc_result_clear(&r2);
    return e;
}

/* The tree oracle on the library's jobs under a 3-level tree (a feed, two racks, the jobs
 * dealt round them; measured limits that bind): pfi_allocate_tree, then
 * pfi_allocate_tree_ws with one workspace twice (the second call allocates nothing), the
 * same caps from all three. */
static pfi_error op_allocate_tree(const void *arg, sig *s)
{
    (void)arg;
    const pfi_joblib *l = g_jl;
    size_t n = l->n < 24 ? l->n : 24;
    size_t node[24], parent[3] = {PFI_TOPO_NONE, 0, 0};
    double limit[3] = {0, 0, 0};
    pfi_limit_kind kind[3] = {PFI_LIMIT_MEASURED, PFI_LIMIT_MEASURED, PFI_LIMIT_MEASURED};
    for (size_t j = 0; j < n; j++) {
        node[j] = 1 + j % 2;
        double top = l->power_w[l->offset[j + 1] - 1];
        limit[0] += 0.85 * top;
        limit[node[j]] += (node[j] == 1 ? 0.7 : 0.95) * top;
    }
    pfi_alloc_jobs jobs = {.n = n,
                           .offset = l->offset,
                           .cap_w = l->cap_w,
                           .power_w = l->power_w,
                           .tput_tok_s = l->tput_tok_s,
                           .gpus = l->gpus};
    pfi_alloc_tree t = {.n_nodes = 3,
                        .parent = parent,
                        .limit_w = limit,
                        .kind = kind,
                        .job_node = node,
                        .budget_kind = PFI_LIMIT_MEASURED};
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    o.reduction = 0.1;
    pfi_alloc_result r, r2;
    pfi_alloc_tree_result tr, tr2;
    memset(&r, 0, sizeof r);
    memset(&r2, 0, sizeof r2);
    memset(&tr, 0, sizeof tr);
    memset(&tr2, 0, sizeof tr2);
    pfi_alloc_tree_workspace *w = NULL;
    arm();
    pfi_error e = pfi_alloc_result_init(&r, n);
    if (e == PFI_OK)
        e = pfi_alloc_tree_result_init(&tr, 3);
    if (e == PFI_OK)
        e = pfi_allocate_tree(&jobs, &o, &t, &r, &tr, &g_d);
    if (e == PFI_OK)
        e = pfi_alloc_tree_workspace_create(&w);
    if (e == PFI_OK)
        e = pfi_alloc_result_init(&r2, n);
    if (e == PFI_OK)
        e = pfi_alloc_tree_result_init(&tr2, 3);
    for (int k = 0; k < 2 && e == PFI_OK; k++)
        e = pfi_allocate_tree_ws(&jobs, &o, &t, w, &r2, &tr2, &g_d);
    disarm();
    if (e == PFI_OK) {
        sig_add(s, "%s obj=%.17g power=%.17g feasible=%d binding=%zu", r.method, r.objective,
                r.total_power_w, r.feasible, tr.n_binding);
        for (size_t j = 0; j < n; j++)
            sig_add(s, "|%.17g", r.cap_w[j]);
        for (size_t j = 0; j < n; j++)
            CHECK(r.cap_w[j] == r2.cap_w[j], "allocate_tree: the workspace changes job %zu's cap",
                  j);
    }
    pfi_alloc_tree_workspace_destroy(w);
    pfi_alloc_result_clear(&r);
    pfi_alloc_result_clear(&r2);
    pfi_alloc_tree_result_clear(&tr);
    pfi_alloc_tree_result_clear(&tr2);
    return e;
}

/* The run store: open (create), put runs, find, export CSV and JSON, read back into a runs
 * table, a run's features, close; then pfi_groups_from_store on the same file. SQLite's own
 * allocations are not hooked. A refused put must not stop the store from taking the run. */
static pfi_error op_store(const void *arg, sig *s)
{
    (void)arg;
    char db[512], side[600];
    tmp_path(db, sizeof db, "store.db");
    unlink(db);
    snprintf(side, sizeof side, "%s-wal", db);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db);
    unlink(side);
    const char feat[2][64] = {"dcgm_dram_active", "dcgm_mem_copy_util"};
    pfi_store_source src = {"run.csv", "nvidia-smi-csv"};
    pfi_store *st = NULL;
    pfi_runs_table *t = NULL;
    char(*names)[64] = NULL;
    double *values = NULL;
    size_t nf = 0, n_csv = 0, n_json = 0, n_read = 0;
    bool found = false;
    pfi_groups *g = NULL;
    FILE *out = fopen("/dev/null", "w");
    assert_non_null(out);
    arm();
    pfi_error e = pfi_store_open(db, PFI_STORE_WRITE, &st, &g_d);
    for (int k = 0; k < 6 && e == PFI_OK; k++) {
        double fv[2] = {0.5 - 0.05 * k, 0.3 + 0.01 * k};
        pfi_store_run r = {.group = k < 3 ? "job-a" : "job-b",
                           .job_class = "dense",
                           .gpus = 8,
                           .cap_w = 700 - 100 * (k % 3),
                           .power_w = 650 - 90 * (k % 3),
                           .power_se_w = 2,
                           .power_n = 100,
                           .throughput = 1000 - 80 * (k % 3),
                           .throughput_se = 5,
                           .throughput_n = 60,
                           .throughput_unit = "tokens",
                           .power_field = "power_w",
                           .energy_j = NAN,
                           .n_features = 2,
                           .feature_name = feat,
                           .feature_value = fv,
                           .n_sources = 1,
                           .sources = &src};
        bool replaced;
        e = pfi_store_put_run(st, &r, &replaced, &g_d);
        if (e != PFI_OK) {
            disarm();
            CHECK(pfi_store_put_run(st, &r, &replaced, &g_d) == PFI_OK,
                  "store: the store refuses a run after %s: %s", pfi_strerror(e), g_d.message);
        }
    }
    if (e == PFI_OK)
        e = pfi_store_find_run(st, "job-b", NULL, 600, &found, &g_d);
    if (e == PFI_OK)
        e = pfi_store_export_csv(st, out, true, NULL, &n_csv, &g_d);
    if (e == PFI_OK)
        e = pfi_store_export_json(st, out, NULL, &n_json, &g_d);
    if (e == PFI_OK)
        e = pfi_runs_table_create(&t);
    if (e == PFI_OK)
        e = pfi_store_read_runs(st, t, NULL, &n_read, &g_d);
    if (e == PFI_OK)
        e = pfi_store_run_features(st, "job-a", 700, &names, &values, &nf, &g_d);
    disarm();
    pfi_store_close(st);
    arm();
    if (e == PFI_OK)
        e = pfi_groups_from_store(db, NULL, NULL, &g, &g_d);
    disarm();
    if (e == PFI_OK) {
        sig_add(s, "found=%d csv=%zu json=%zu read=%zu|", found, n_csv, n_json, n_read);
        sig_table(s, t);
        for (size_t i = 0; i < nf; i++)
            sig_add(s, "|%s=%.17g", names[i], values[i]);
        for (size_t i = 0; i < g->n; i++)
            sig_add(s, "|%s %.17g", g->names[i], g->pfi[i]);
        for (size_t j = 0; j < g->n_features; j++)
            sig_add(s, "|%s", g->feature_names[j]);
    }
    fclose(out);
    pfi_groups_destroy(g);
    pfi_free(names);
    pfi_free(values);
    pfi_runs_table_destroy(t);
    return e;
}

/* The library written as a dataset, read back as groups with features, a PFI model fitted,
 * saved as JSON and loaded from the file and from memory. */
static pfi_error op_fit(const void *arg, sig *s)
{
    (void)arg;
    char dir[512], mp[512];
    tmp_path(dir, sizeof dir, "library");
    tmp_path(mp, sizeof mp, "model.json");
    pfi_groups *g = NULL;
    pfi_fit_model *m = NULL, *m2 = NULL, *m3 = NULL;
    const char *features[] = {"dcgm_dram_active", "dcgm_mem_copy_util*dcgm_dram_active"};
    arm();
    pfi_error e = pfi_groups_from_dataset(dir, NULL, NULL, &g, &g_d);
    if (e == PFI_OK)
        e = pfi_fit_model_build(g, features, 2, &m, &g_d);
    if (e == PFI_OK)
        e = pfi_fit_model_save(m, mp, &g_d);
    if (e == PFI_OK)
        e = pfi_fit_model_load(mp, &m2, &g_d);
    disarm();
    char buf[65536];
    size_t len = 0;
    if (e == PFI_OK) {
        FILE *f = fopen(mp, "rb");
        assert_non_null(f);
        len = fread(buf, 1, sizeof buf, f);
        fclose(f);
    }
    arm();
    if (e == PFI_OK)
        e = pfi_fit_model_load_buffer(buf, len, &m3, &g_d);
    disarm();
    if (e == PFI_OK) {
        double x0[2] = {0.4, 0.1}, y[3], lo, hi;
        bool outside;
        const pfi_fit_model *ms[3] = {m, m2, m3};
        for (int k = 0; k < 3; k++) {
            assert_int_equal(pfi_fit_model_predict(ms[k], x0, 0.9, &y[k], &lo, &hi, &outside),
                             PFI_OK);
            sig_add(s, "|%.12g %.12g %.12g", y[k], lo, hi);
        }
        sig_add(s, "|groups=%zu features=%zu", g->n, g->n_features);
    }
    pfi_fit_model_destroy(m);
    pfi_fit_model_destroy(m2);
    pfi_fit_model_destroy(m3);
    pfi_groups_destroy(g);
    return e;
}

/* pfi_library_generate, pfi_joblib_from_library, pfi_library_write. */
static pfi_error op_library(const void *arg, sig *s)
{
    (void)arg;
    char dir[512];
    tmp_path(dir, sizeof dir, "library-oom");
    pfi_library *lib = NULL;
    pfi_joblib *jl = NULL;
    arm();
    pfi_error e = pfi_library_generate(NULL, &lib);
    if (e == PFI_OK)
        e = pfi_joblib_from_library(lib, &jl);
    if (e == PFI_OK)
        e = pfi_library_write(lib, dir, &g_d);
    disarm();
    if (e == PFI_OK) {
        sig_add(s, "groups=%zu runs=%zu jobs=%zu classes=%zu", lib->n_groups, lib->n_runs, jl->n,
                jl->n_classes);
        for (size_t j = 0; j < jl->n; j++)
            sig_add(s, "|%s %.17g", jl->name[j], jl->pfi[j]);
    }
    pfi_joblib_destroy(jl);
    pfi_library_destroy(lib);
    return e;
}

/* A small simulation over the job library (one thread: the failing call is then always the
 * same one). */
static pfi_error op_simulate(const void *arg, sig *s)
{
    (void)arg;
    pfi_sim_options o;
    pfi_sim_options_init(&o);
    o.workloads = 3;
    o.jobs = 12;
    o.n_reductions = 1;
    o.reductions[0] = 0.3;
    o.threads = 1;
    pfi_sim_result *r = NULL;
    arm();
    pfi_error e = pfi_simulate(g_jl, &o, &r, &g_d);
    disarm();
    if (e == PFI_OK) {
        sig_add(s, "infeasible=%zu", r->infeasible);
        for (int m = 0; m < PFI_SIM_MIXES; m++)
            for (int k = 0; k < PFI_STRATEGY_COUNT && r->mix_run[m]; k++) {
                const pfi_sim_cell *c =
                    &r->cells[pfi_sim_cell_index(r, (pfi_sim_mix)m, 0, (pfi_strategy)k)];
                sig_add(s, "|%d %.17g", c->available, c->total_tok_s.mean);
            }
    }
    pfi_sim_result_destroy(r);
    return e;
}

/* The controller's input parsers: agents, schedule, policy, a Prometheus answer (JSON). */
static pfi_error op_ctl_parse(const void *arg, sig *s)
{
    (void)arg;
    const char *agents = "# cluster\nhttp://10.0.0.1:9400/ secret\n\nhttps://n2:9400 -\n";
    const char *sched = "100 200 30% 10\n0 50 5000W\n";
    const char *policy = "job-1 floor=0.8 weight=2\n* weight=1 class=moe-ft\n";
    const char *prom = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
                       "{\"metric\":{\"uuid\":\"a\",\"hostname\":\"h\"},\"value\":[1.5,\"NaN\"]},"
                       "{\"metric\":{\"uuid\":\"b\"},\"value\":[1.5,\"+Inf\"]},"
                       "{\"metric\":{},\"value\":[1.5,\"12.5\"]}]}}";
    pfi_ctl_agent_spec *a = NULL;
    pfi_ctl_event *ev = NULL;
    pfi_ctl_rule *r = NULL;
    pfi_prom_sample *ps = NULL;
    size_t na = 0, ne = 0, nr = 0, np = 0;
    arm();
    pfi_error e = pfi_ctl_agents_parse(agents, strlen(agents), &a, &na, &g_d);
    if (e == PFI_OK)
        e = pfi_ctl_schedule_parse(sched, strlen(sched), &ev, &ne, &g_d);
    if (e == PFI_OK)
        e = pfi_ctl_policy_parse(policy, strlen(policy), &r, &nr, &g_d);
    if (e == PFI_OK)
        e = pfi_prom_vector_parse(prom, strlen(prom), &ps, &np, &g_d);
    disarm();
    if (e == PFI_OK)
        sig_add(s, "%zu %zu %zu %zu %s %g %g", na, ne, nr, np, a[0].url, ev[0].end_s, ps[2].value);
    pfi_free(a);
    pfi_free(ev);
    pfi_free(r);
    pfi_free(ps);
    return e;
}

/* Each of the controller's file parsers alone, on inputs long enough that its array grows
 * (more than 8 entries): agents, schedule, policy. */
static pfi_error op_ctl_files(const void *arg, sig *s)
{
    (void)arg;
    char agents[2048] = "# cluster\n", sched[1024] = "", policy[1024] = "* weight=1\n";
    for (int k = 0; k < 20; k++) {
        size_t u = strlen(agents), v = strlen(sched), w = strlen(policy);
        snprintf(agents + u, sizeof agents - u, "http://10.0.0.%d:9400 %s\n", k + 1,
                 k % 2 ? "-" : "secret");
        snprintf(sched + v, sizeof sched - v, "%d %d %s %d\n", 100 * (19 - k), 100 * (19 - k) + 50,
                 k % 2 ? "25%" : "4000W", k % 3);
        snprintf(policy + w, sizeof policy - w, "job-%d floor=0.%d weight=%d class=%s\n", k, k % 9,
                 k % 4, k % 2 ? "dense" : "moe-ft");
    }
    pfi_ctl_agent_spec *a = NULL;
    pfi_ctl_event *ev = NULL;
    pfi_ctl_rule *r = NULL;
    size_t na = 0, ne = 0, nr = 0;
    arm();
    pfi_error e = pfi_ctl_agents_parse(agents, strlen(agents), &a, &na, &g_d);
    disarm();
    if (e == PFI_OK) {
        arm();
        e = pfi_ctl_schedule_parse(sched, strlen(sched), &ev, &ne, &g_d);
        disarm();
    }
    if (e == PFI_OK) {
        arm();
        e = pfi_ctl_policy_parse(policy, strlen(policy), &r, &nr, &g_d);
        disarm();
    }
    if (e == PFI_OK) {
        sig_add(s, "%zu %zu %zu|%s %s|%g %g|", na, ne, nr, a[19].url, a[0].token, ev[0].start_s,
                ev[19].end_s);
        const pfi_ctl_rule *job7 = pfi_ctl_policy_find(r, nr, "job-7");
        sig_add(s, "%s %g %g %s", job7 ? job7->job : "-", job7 ? job7->floor_frac : NAN,
                job7 ? job7->weight : NAN, job7 ? job7->job_class : "-");
    }
    pfi_free(a);
    pfi_free(ev);
    pfi_free(r);
    return e;
}

/* The agent's answers (GET /v1/state, PUT /v1/caps) as data: jansson's allocations (the
 * jansson parsers behind pfi_agent_state_parse's and pfi_agent_caps_parse's fast path, which
 * allocates nothing and hands every body it does not take to them). Every
 * token is at most 13 bytes: when the allocation that grows jansson 2.14's token buffer
 * (16 bytes) fails, its lexer loses the byte and then asserts (a number) or reads and writes
 * past the buffer (a string: the closing quote is lost), so the optional keys with longer
 * names (enforced_cap_w, original_cap_w, throughput_tok_s, requested_cap_w) are left out. */
static pfi_error op_agent_answers(const void *arg, sig *s)
{
    (void)arg;
    const char *state =
        "{\"hostname\":\"n1\",\"sampled_at_s\":12.5,\"gpus\":["
        "{\"index\":0,\"uuid\":\"GPU-0\",\"job\":\"job-1\",\"power_w\":612.5,\"energy_j\":1e6,"
        "\"cap_w\":700,\"min_cap_w\":200,\"max_cap_w\":700,\"default_cap_w\":700},"
        "{\"index\":1,\"uuid\":\"GPU-1\",\"job\":null,\"power_w\":null,\"cap_w\":500}],"
        "\"jobs\":[{\"id\":\"job-1\",\"class\":\"dense\",\"power_w\":612.5,\"gpus\":[0]},"
        "{\"id\":\"job-2\",\"class\":null}]}";
    const char *caps = "{\"applied\":true,\"gpus\":[{\"uuid\":\"GPU-0\"},{\"uuid\":\"GPU-1\"}]}";
    static pfi_agent_state st;
    pfi_agent_cap_reply rep[4];
    size_t n = 0;
    bool applied = false;
    arm();
    pfi_error e = ctl_state_parse_json(state, strlen(state), &st, &g_d);
    disarm();
    if (e == PFI_OK) {
        arm();
        e = ctl_caps_parse_json(caps, strlen(caps), rep, 4, &n, &applied, &g_d);
        disarm();
    }
    if (e == PFI_OK)
        sig_add(s, "%s %g %zu %zu %s %s %g %g %g|%zu %d %s %g", st.hostname, st.sampled_at_s,
                st.n_gpus, st.n_jobs, st.gpus[0].job, st.jobs[0].job_class,
                st.gpus[0].default_cap_w, st.gpus[1].power_w, st.jobs[0].power_w, n, applied,
                rep[1].uuid, rep[0].enforced_w);
    return e;
}

/* Agents and a Prometheus server on a loopback port that refuses connections (bound, never
 * listening: no network needed), and the audit log of an earlier controller run that saw
 * agent a's two GPUs (setup). */
static int g_closed_fd = -1;
static char g_agent_a[64], g_agent_b[64], g_prom_url[64];

static bool copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[8192];
    size_t n;
    bool ok = in != NULL && out != NULL;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0)
        ok = fwrite(buf, 1, n, out) == n;
    if (in != NULL)
        fclose(in);
    if (out != NULL && fclose(out) != 0)
        ok = false;
    return ok;
}

static void sig_report(sig *s, const pfi_ctl_report *r)
{
    sig_add(s,
            "|t=%g ev=%d B=%.17g ab=%.17g m=%.17g res=%.17g pred=%.17g corr=%.17g ref=%.17g "
            "tp=%.17g caps=%.17g up=%zu/%zu jobs=%zu gpus=%zu d=%zu i=%zu u=%zu prom=%d%d "
            "restored=%d note=%s",
            r->t_s, r->event, r->budget_w, r->alloc_budget_w, r->measured_w, r->reserved_w,
            r->predicted_w, r->correction_w, r->ref_w, r->tput_tok_s, r->cap_sum_w, r->agents_up,
            r->agents, r->jobs, r->gpus, r->decreases, r->increases, r->unconfirmed, r->prom_used,
            r->prom_failed, r->restored, r->note);
}

/* The controller without a network: create over the earlier run's audit log (its GPUs of
 * agent a restored as the reserve), three periods (outside an event, a reduction, a budget)
 * with every agent and Prometheus refusing, release, destroy; then the audit log read back.
 * A step refused for memory must leave the controller able to step again. */
static pfi_error op_ctl(const void *arg, sig *s)
{
    (void)arg;
    char tmpl[512], db[512], side[600];
    tmp_path(tmpl, sizeof tmpl, "audit-template.db");
    tmp_path(db, sizeof db, "audit.db");
    snprintf(side, sizeof side, "%s-wal", db);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db);
    unlink(side);
    assert_true(copy_file(tmpl, db));
    pfi_ctl_agent_spec agents[2];
    memset(agents, 0, sizeof agents);
    snprintf(agents[0].url, sizeof agents[0].url, "%s", g_agent_a);
    snprintf(agents[1].url, sizeof agents[1].url, "%s", g_agent_b);
    snprintf(agents[1].token, sizeof agents[1].token, "secret");
    pfi_ctl_config cfg;
    pfi_ctl_config_init(&cfg);
    cfg.agents = agents;
    cfg.n_agents = 2;
    cfg.period_s = 1;
    cfg.audit_path = db;
    cfg.prom.url = g_prom_url;
    static const struct {
        double t_s;
        bool event;
        double budget_w, reduction;
    } steps[] = {{0, false, NAN, NAN}, {1, true, NAN, 0.3}, {2, true, 3000, NAN}};
    pfi_ctl *ctl = NULL;
    bool all_ok = true;
    size_t jobs = 0;
    arm();
    pfi_error e = pfi_ctl_create(&cfg, &ctl, &g_d);
    for (size_t k = 0; k < sizeof steps / sizeof steps[0] && e == PFI_OK; k++) {
        pfi_ctl_report rep;
        e = pfi_ctl_step(ctl, steps[k].t_s, steps[k].event, steps[k].budget_w, steps[k].reduction,
                         &rep, &g_d);
        if (e == PFI_OK)
            sig_report(s, &rep);
    }
    if (e == PFI_OK)
        e = pfi_ctl_release(ctl, &all_ok, &g_d);
    if (e == PFI_OK)
        jobs = pfi_ctl_job_count(ctl);
    disarm();
    if (e != PFI_OK && ctl != NULL) {
        pfi_ctl_report rep;
        pfi_error again = pfi_ctl_step(ctl, 3, false, NAN, NAN, &rep, &g_d);
        CHECK(again == PFI_OK, "controller: no step after %s: %s", pfi_strerror(e), g_d.message);
    }
    arm();
    pfi_ctl_destroy(ctl);
    disarm();
    pfi_audit_period *p = NULL;
    size_t n = 0;
    if (e == PFI_OK) {
        sig_add(s, "|release ok=%d jobs=%zu", all_ok, jobs);
        pfi_error r = pfi_audit_read(db, 0, &p, &n, &g_d);
        CHECK(r == PFI_OK, "controller: its audit log does not read back: %s", g_d.message);
        for (size_t i = 0; i < n; i++)
            sig_add(s, "|%g %d %.17g %.17g %.17g %s %s %d/%d", p[i].t_s, p[i].event, p[i].budget_w,
                    p[i].measured_w, p[i].reserved_w, p[i].strategy, p[i].note, p[i].agents_up,
                    p[i].agents);
    }
    pfi_free(p);
    return e;
}

/* pfi_audit_read of a small audit log of 70 periods in two controller runs (its array grows
 * past 64), the latest run and the first. */
static pfi_error op_audit_read(const void *arg, sig *s)
{
    (void)arg;
    char db[512];
    tmp_path(db, sizeof db, "audit-read.db");
    pfi_audit_period *p = NULL, *q = NULL;
    size_t n = 0, m = 0;
    arm();
    pfi_error e = pfi_audit_read(db, 0, &p, &n, &g_d);
    if (e == PFI_OK)
        e = pfi_audit_read(db, 1, &q, &m, &g_d);
    disarm();
    if (e == PFI_OK) {
        sig_add(s, "%zu %zu", n, m);
        for (size_t i = 0; i < n; i += 7)
            sig_add(s, "|%ld %g %d %.17g %.17g %s %s", p[i].id, p[i].t_s, p[i].event, p[i].budget_w,
                    p[i].measured_w, p[i].strategy, p[i].note);
        sig_add(s, "|%ld %s", q[m - 1].id, q[m - 1].strategy);
    }
    pfi_free(p);
    pfi_free(q);
    return e;
}

/* The library's groups.csv (true PFI per group) as a groups table. */
static pfi_error op_groups_csv(const void *arg, sig *s)
{
    (void)arg;
    char path[512];
    tmp_path(path, sizeof path, "library/groups.csv");
    pfi_groups *g = NULL;
    arm();
    pfi_error e = pfi_groups_read_csv(path, "pfi_true", &g, &g_d);
    disarm();
    if (e == PFI_OK) {
        sig_add(s, "n=%zu features=%zu", g->n, g->n_features);
        for (size_t i = 0; i < g->n; i++)
            sig_add(s, "|%s %s %.17g", g->names[i], g->classes[i] ? g->classes[i] : "-", g->pfi[i]);
    }
    pfi_groups_destroy(g);
    return e;
}

/* A job library from measured sweeps (the runs table of a dataset, read unarmed). */
static pfi_error op_joblib_runs(const void *arg, sig *s)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", PFI_REPO_DATA, (const char *)arg);
    pfi_manifest man;
    pfi_runs_table *t = NULL;
    assert_int_equal(pfi_runs_table_create(&t), PFI_OK);
    assert_int_equal(pfi_dataset_read(dir, t, &man, NULL), PFI_OK);
    pfi_options o;
    pfi_options_init(&o);
    pfi_joblib *jl = NULL;
    arm();
    pfi_error e = pfi_joblib_from_runs(t, &o, &jl, &g_d);
    disarm();
    if (e == PFI_OK) {
        sig_add(s, "n=%zu classes=%zu skipped=%zu repaired=%zu", jl->n, jl->n_classes, jl->skipped,
                jl->repaired);
        for (size_t j = 0; j < jl->n; j++)
            sig_add(s, "|%s %.17g %zu", jl->name[j], jl->pfi[j], jl->offset[j + 1]);
    }
    pfi_joblib_destroy(jl);
    pfi_manifest_clear(&man);
    pfi_runs_table_destroy(t);
    return e;
}

/* A bounded CSV reader over a data file, record by record. */
static pfi_error op_csv(const void *arg, sig *s)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", PFI_REPO_DATA, (const char *)arg);
    pfi_csv_reader *r = NULL;
    size_t records = 0, fields = 0;
    arm();
    pfi_error e = pfi_csv_open(path, NULL, &r, &g_d);
    for (bool eof = false; e == PFI_OK && !eof;) {
        const char *const *f;
        const size_t *lens;
        size_t n;
        long line;
        e = pfi_csv_next(r, &f, &lens, &n, &line, &eof, &g_d);
        if (e == PFI_OK && !eof) {
            records++;
            fields += n;
        }
    }
    disarm();
    if (e == PFI_OK)
        sig_add(s, "records=%zu fields=%zu", records, fields);
    pfi_csv_close(r);
    return e;
}

/* A live sweep on the emulated backend (virtual clock) into the runs-table directory: after
 * any error every GPU holds its original limit again. */
static pfi_error op_sweep(const void *arg, sig *s)
{
    (void)arg;
    char dir[512], journal[512];
    tmp_path(dir, sizeof dir, "sweep");
    tmp_path(journal, sizeof journal, "cap-journal");
    unlink(journal);
    const char *files[] = {"runs.csv", "pfi-dataset.json"};
    for (size_t i = 0; i < 2; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    static const double caps[] = {700, 500, 300};
    unsigned gpus[] = {0, 1};
    static volatile sig_atomic_t stop;
    pfi_gpu_config gc = {.kind = PFI_GPU_EMULATED, .emulate = "gpus=2,alpha=0.8"};
    pfi_gpu *g = NULL;
    pfi_runs_dir *rd = NULL;
    pfi_tput_source tp;
    memset(&tp, 0, sizeof tp);
    pfi_sweep_stats st;
    memset(&st, 0, sizeof st);
    arm();
    pfi_error e = pfi_gpu_open(&gc, &g, &g_d);
    if (e == PFI_OK)
        e = pfi_runs_dir_open(dir, &rd, &g_d);
    if (e == PFI_OK)
        e = pfi_tput_emulated(g, &tp);
    if (e == PFI_OK) {
        pfi_run_sink sink = pfi_runs_dir_sink(rd);
        pfi_sweep_config c = {.gpus = gpus,
                              .n_gpus = 2,
                              .caps_w = caps,
                              .n_caps = 3,
                              .duration_s = 120,
                              .interval_s = 5,
                              .warmup_s = 60,
                              .q = 0.10,
                              .group = "job",
                              .stop = &stop,
                              .journal_path = journal,
                              .library = "emulated"};
        e = pfi_sweep_run(g, &c, &tp, &sink, &st, &g_d);
        disarm();
        CHECK(st.restored, "sweep: limits not restored after %s", pfi_strerror(e));
        CHECK(access(journal, F_OK) != 0, "sweep: the journal is left after %s", pfi_strerror(e));
        for (unsigned i = 0; i < 2; i++) {
            pfi_gpu_limits l;
            CHECK(pfi_gpu_read_limits(g, i, &l, NULL) == PFI_OK && l.current_mw == 700000,
                  "sweep: GPU %u left at another limit after %s", i, pfi_strerror(e));
        }
    }
    disarm();
    if (e == PFI_OK)
        sig_add(s, "done=%zu skipped=%zu failed=%zu ticks=%zu", st.runs_done, st.runs_skipped,
                st.runs_failed, st.ticks);
    pfi_sweep_stats_clear(&st);
    pfi_tput_source_destroy(&tp);
    pfi_runs_dir_close(rd);
    pfi_gpu_close(g);
    return e;
}

/* ---- the table -------------------------------------------------------------------------- */

static const analyze_arg an_fast = {"zeus_nsdi23_power", 1, PFI_RNG_FAST, 200};
static const analyze_arg an_threads = {"zeus_jit_profile", 3, PFI_RNG_FAST, 200};
static const analyze_arg an_gsl = {"zeus_jit_profile", 1, PFI_RNG_GSL, 200};

static const tm_arg tm_cases[] = {
    {{"case-01/new_driver_na.csv"}, PFI_TELEMETRY_AUTO, 0, NULL, false},
    {{"case-01/old_driver_not_supported.csv"}, PFI_TELEMETRY_AUTO, 0, NULL, false},
    {{"case-02/units.csv", "case-02/nounits.csv"}, PFI_TELEMETRY_AUTO, 0, NULL, false},
    {{"case-02/noheader_nounits.csv"},
     PFI_TELEMETRY_SMI_CSV,
     1,
     "timestamp,index,pci.bus_id,power.draw,power.limit",
     false},
    {{"case-02/unit_mismatch.csv"}, PFI_TELEMETRY_AUTO, 0, NULL, false},
    {{"case-03/query_loop.csv"}, PFI_TELEMETRY_AUTO, 0, NULL, false},
    {{"case-03/wrapper_appended.csv"}, PFI_TELEMETRY_AUTO, 0, NULL, false},
    {{"case-04/dmon_repeated_header.txt"}, PFI_TELEMETRY_AUTO, 1, NULL, false},
    {{"case-06/dmon_DT_date_change.txt"}, PFI_TELEMETRY_AUTO, 1, NULL, false},
    {{"case-06/dmon_T_midnight.txt"}, PFI_TELEMETRY_AUTO, 1, NULL, false},
    {{"case-07/dcgmi_dmon_power_energy.txt"}, PFI_TELEMETRY_AUTO, 1, NULL, true},
    {{"case-08/dcgmi_dmon_all_na.txt", "case-08/dcgmi_dmon_not_watched_old.txt",
      "case-08/dcgmi_dmon_prof_na.txt"},
     PFI_TELEMETRY_AUTO,
     1,
     NULL,
     false},
    {{"case-09/dcgmi_watch_error_module.txt", "case-09/dcgmi_watch_error_prof.txt"},
     PFI_TELEMETRY_AUTO,
     1,
     NULL,
     false},
    {{"case-12/scrape_001.prom", "case-12/scrape_002.prom", "case-12/scrape_003.prom",
      "case-12/scrape_004.prom", "case-12/scrape_005.prom", "case-12/scrape_006.prom"},
     PFI_TELEMETRY_AUTO,
     0,
     NULL,
     true},
    {{"case-14/merged_two_exporters.prom", "case-14/new_exporter_hostname.prom",
      "case-14/old_exporter_Hostname.prom"},
     PFI_TELEMETRY_AUTO,
     0,
     NULL,
     false},
    {{"case-15/empty_body.prom", "case-15/help_type_only.prom", "case-15/power_metric_absent.prom"},
     PFI_TELEMETRY_AUTO,
     0,
     NULL,
     false},
    {{"case-21/avg_and_instant.csv", "case-21/legacy_power_draw.csv"},
     PFI_TELEMETRY_AUTO,
     0,
     NULL,
     false},
    {{"case-21/nvsmi_xml_power_570.xml"}, PFI_TELEMETRY_AUTO, 0, NULL, false},
    {{"case-25/query.csv"}, PFI_TELEMETRY_AUTO, 0, NULL, false},
};

static const tl_arg tl_new = {"case-23/megatron_new.log", NULL};
static const tl_arg tl_old = {"case-23/megatron_old.log", NULL};
static const tl_arg tl_regex = {"case-23/megatron_new.log",
                                "consumed samples: +(?<work>[0-9]+) \\| elapsed time per "
                                "iteration \\(ms\\): (?<throughput>[0-9.]+)"};

/* every strategy, 0 .. PFI_STRATEGY_COUNT - 1 (filled by test_allocation) */
static pfi_strategy strategies[PFI_STRATEGY_COUNT];

/* ---- the loop ----------------------------------------------------------------------------- */

typedef struct op_report {
    long allocs;   /* allocations of the baseline run */
    long max_once; /* the largest N that failed in the "once" pass */
    long max_from; /* ... in the "from" pass */
} op_report;

/* One pass over N = 1, 2, ... for op; returns the largest N at which a failure was injected. */
static long run_pass(const oom_op *op, bool from, pfi_error e0, const sig *s0, long allocs)
{
    long last = 0;
    for (long n = 1;; n++) {
        sig s;
        memset(&s, 0, sizeof s);
        long live = atomic_load(&g_live);
        atomic_store(&g_calls, 0);
        atomic_store(&g_injected, false);
        atomic_store(&g_from, from);
        atomic_store(&g_fail_at, n);
        pfi_diag_clear(&g_d);
        pfi_error e = op->run(op->arg, &s);
        disarm();
        atomic_store(&g_fail_at, 0);
        long leaked = atomic_load(&g_live) - live;
        CHECK(leaked == 0, "%s: N=%ld (%s): %ld block(s) left allocated\n", op->name, n,
              from ? "from" : "once", leaked);
        if (!atomic_load(&g_injected)) {
            /* past the last allocation: the baseline again */
            CHECK(e == e0 && s.hash == s0->hash, "%s: N=%ld past the end differs\n", op->name, n);
            break;
        }
        last = n;
        if (e == e0)
            CHECK(s.hash == s0->hash,
                  "%s: N=%ld (%s): %s with a different result after a failed allocation\n"
                  "  baseline: %.300s\n  this run: %.300s\n",
                  op->name, n, from ? "from" : "once", pfi_strerror(e), s0->text, s.text);
        else
            CHECK(e == PFI_ERR_NOMEM || (op->also != PFI_OK && e == op->also),
                  "%s: N=%ld (%s): %s (%d), not out of memory: %s\n", op->name, n,
                  from ? "from" : "once", pfi_strerror(e), (int)e, g_d.message);
        if (n > allocs * 4 + 1000) {
            CHECK(false, "%s: N=%ld: more failed allocations than the baseline made\n", op->name,
                  n);
            break;
        }
    }
    return last;
}

static op_report run_op(const oom_op *op)
{
    op_report rep = {0, 0, 0};
    sig s0;
    memset(&s0, 0, sizeof s0);
    long live = atomic_load(&g_live);
    atomic_store(&g_calls, 0);
    atomic_store(&g_fail_at, 0);
    pfi_error e0 = op->run(op->arg, &s0);
    disarm();
    rep.allocs = atomic_load(&g_calls);
    CHECK(atomic_load(&g_live) == live, "%s: the baseline leaks %ld block(s)\n", op->name,
          atomic_load(&g_live) - live);
    CHECK(rep.allocs > 0, "%s: no allocation through the hook\n", op->name);
    rep.max_once = run_pass(op, false, e0, &s0, rep.allocs);
    rep.max_from = run_pass(op, true, e0, &s0, rep.allocs);
    printf("  %-44s %-22s allocs %6ld  max N once %6ld  from %6ld\n", op->name, pfi_strerror(e0),
           rep.allocs, rep.max_once, rep.max_from);
    fflush(stdout);
    return rep;
}

/* PFI_OOM_ONLY=text runs only the operations whose name holds text (for debugging). */
static void run_table(const oom_op *ops, size_t n)
{
    const char *only = getenv("PFI_OOM_ONLY");
    for (size_t i = 0; i < n; i++)
        if (only == NULL || strstr(ops[i].name, only) != NULL)
            run_op(&ops[i]);
    END_CHECKS();
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_replace_allocator_arguments(void **state)
{
    (void)state;
    assert_int_equal(pfi_replace_allocator(NULL, t_realloc, t_calloc, t_free),
                     PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_replace_allocator(t_malloc, t_realloc, t_calloc, NULL),
                     PFI_ERR_INVALID_ARGUMENT);
    /* pfi_strdup and pfi_free are the caller's side of the hook */
    long live = atomic_load(&g_live);
    char *p = pfi_strdup("copy");
    assert_non_null(p);
    assert_string_equal(p, "copy");
    assert_int_equal(atomic_load(&g_live), live + 1);
    pfi_free(p);
    pfi_free(NULL);
    assert_int_equal(atomic_load(&g_live), live);
}

static void test_readers(void **state)
{
    (void)state;
    const oom_op ops[] = {
        {"pfi_dataset_read zeus_nsdi23_power", op_dataset_read, "zeus_nsdi23_power", PFI_OK},
        {"pfi_dataset_read zeus_jit_profile", op_dataset_read, "zeus_jit_profile", PFI_OK},
        {"manifest + pfi_runs_read_csv zeus_jit_profile", op_runs_read, "zeus_jit_profile", PFI_OK},
        {"pfi_csv_next zeus_nsdi23_power/a40", op_csv, "zeus_nsdi23_power/summary_power_a40.csv",
         PFI_OK},
        {"pfi_trainlog megatron_new.log", op_trainlog, &tl_new, PFI_OK},
        {"pfi_trainlog megatron_old.log", op_trainlog, &tl_old, PFI_OK},
        {"pfi_trainlog regex megatron_new.log", op_trainlog, &tl_regex, PFI_OK},
        {"pfi_groups_read_csv library groups.csv", op_groups_csv, NULL, PFI_OK},
        {"pfi_kernlog + telemetry case-03", op_kernlog, NULL, PFI_OK},
        {"pfi_ctl/prom parsers", op_ctl_parse, NULL, PFI_OK},
    };
    run_table(ops, sizeof ops / sizeof ops[0]);
}

static void test_control(void **state)
{
    (void)state;
    const oom_op ops[] = {
        {"pfi_ctl agents/schedule/policy files", op_ctl_files, NULL, PFI_OK},
        {"pfi_agent state/caps answers", op_agent_answers, NULL, PFI_OK},
        {"pfi_audit_read 70 periods, 2 runs", op_audit_read, NULL, PFI_OK},
        {"pfi_ctl create/step/release (no network)", op_ctl, NULL, PFI_OK},
    };
    run_table(ops, sizeof ops / sizeof ops[0]);
}

static void test_telemetry(void **state)
{
    (void)state;
    oom_op ops[sizeof tm_cases / sizeof tm_cases[0]];
    for (size_t i = 0; i < sizeof tm_cases / sizeof tm_cases[0]; i++)
        ops[i] = (oom_op){tm_cases[i].files[0], op_telemetry, &tm_cases[i], PFI_OK};
    run_table(ops, sizeof ops / sizeof ops[0]);
}

static void test_analysis(void **state)
{
    (void)state;
    const oom_op ops[] = {
        {"pfi_analyze + CI zeus_nsdi23_power", op_analyze, &an_fast, PFI_OK},
        {"pfi_analyze + CI 3 threads zeus_jit_profile", op_analyze, &an_threads, PFI_OK},
        /* GSL's generator is allocated by GSL (not hooked) */
        {"pfi_analyze + CI (GSL) zeus_jit_profile", op_analyze, &an_gsl, PFI_OK},
    };
    run_table(ops, sizeof ops / sizeof ops[0]);
}

static void test_allocation(void **state)
{
    (void)state;
    oom_op ops[PFI_STRATEGY_COUNT + 4];
    static char names[PFI_STRATEGY_COUNT][64];
    for (int k = 0; k < PFI_STRATEGY_COUNT; k++) {
        strategies[k] = (pfi_strategy)k;
        snprintf(names[k], sizeof names[k], "pfi_allocate %s", pfi_strategy_name(strategies[k]));
        ops[k] = (oom_op){names[k], op_allocate, &strategies[k], PFI_OK};
    }
    ops[PFI_STRATEGY_COUNT] = (oom_op){"pfi_simulate (3 workloads)", op_simulate, NULL, PFI_OK};
    ops[PFI_STRATEGY_COUNT + 1] =
        (oom_op){"library generate + joblib + write", op_library, NULL, PFI_OK};
    ops[PFI_STRATEGY_COUNT + 2] = (oom_op){"pfi_joblib_from_runs zeus_nsdi23_power", op_joblib_runs,
                                           "zeus_nsdi23_power", PFI_OK};
    ops[PFI_STRATEGY_COUNT + 3] =
        (oom_op){"pfi_allocate_tree + _ws (3 levels)", op_allocate_tree, NULL, PFI_OK};
    run_table(ops, sizeof ops / sizeof ops[0]);
}

static void test_store_fit_sweep(void **state)
{
    (void)state;
    const oom_op ops[] = {
        {"store open/put/export/read + groups", op_store, NULL, PFI_OK},
        {"groups + fit model build/save/load", op_fit, NULL, PFI_OK},
        {"sweep (emulated) into a runs directory", op_sweep, NULL, PFI_OK},
    };
    run_table(ops, sizeof ops / sizeof ops[0]);
}

/* The controller's fixtures, unarmed: a loopback port that refuses connections, an audit
 * log template holding an earlier run that saw agent a's GPUs, a 70-period audit log. */
static int control_setup(void)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    g_closed_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (g_closed_fd < 0 || bind(g_closed_fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        getsockname(g_closed_fd, (struct sockaddr *)&sa, &sl) != 0)
        return -1;
    unsigned port = ntohs(sa.sin_port);
    snprintf(g_agent_a, sizeof g_agent_a, "http://127.0.0.1:%u/a", port);
    snprintf(g_agent_b, sizeof g_agent_b, "http://127.0.0.1:%u/b", port);
    snprintf(g_prom_url, sizeof g_prom_url, "http://127.0.0.1:%u", port);
    /* the template: the controller's own schema (one run, agents down), then what an earlier
     * run would have recorded of agent a */
    char db[512];
    tmp_path(db, sizeof db, "audit-template.db");
    pfi_ctl_agent_spec agent;
    memset(&agent, 0, sizeof agent);
    snprintf(agent.url, sizeof agent.url, "%s", g_agent_b);
    pfi_ctl_config cfg;
    pfi_ctl_config_init(&cfg);
    cfg.agents = &agent;
    cfg.n_agents = 1;
    cfg.audit_path = db;
    pfi_ctl *ctl = NULL;
    pfi_ctl_report rep;
    if (pfi_ctl_create(&cfg, &ctl, NULL) != PFI_OK ||
        pfi_ctl_step(ctl, 0, false, NAN, NAN, &rep, NULL) != PFI_OK)
        return -1;
    pfi_ctl_destroy(ctl);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO ctl_originals VALUES('GPU-a0', '%s', 700), ('GPU-a1', '%s', 700);"
             "INSERT INTO ctl_caps VALUES(1, 1, '%s', 'GPU-a0', 450, 450, 'confirmed');",
             g_agent_a, g_agent_a, g_agent_a);
    sqlite3 *h = NULL;
    bool ok =
        sqlite3_open(db, &h) == SQLITE_OK && sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(h);
    /* 70 periods, runs 1 (30) and 2 (40), a few values NULL */
    tmp_path(db, sizeof db, "audit-read.db");
    h = NULL;
    ok = ok && sqlite3_open(db, &h) == SQLITE_OK &&
         sqlite3_exec(
             h,
             "CREATE TABLE ctl_periods(id INTEGER PRIMARY KEY, run INTEGER, t_s REAL,"
             " wall_s REAL, event INTEGER, budget_w REAL, alloc_budget_w REAL, measured_w REAL,"
             " reserved_w REAL, predicted_w REAL, correction_w REAL, ref_w REAL,"
             " tput_tok_s REAL, cap_sum_w REAL, strategy TEXT, agents_up INTEGER,"
             " agents INTEGER, note TEXT);"
             "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 70)"
             " INSERT INTO ctl_periods(run, t_s, wall_s, event, budget_w, measured_w,"
             " reserved_w, tput_tok_s, strategy, agents_up, agents, note)"
             " SELECT CASE WHEN i <= 30 THEN 1 ELSE 2 END, 5.0 * i, 1.7e9 + 5 * i,"
             " i % 3 = 0, CASE WHEN i % 3 = 0 THEN 5000 - i END, 5200.5 - i,"
             " CASE WHEN i % 5 = 0 THEN NULL ELSE 40 END, 1e5 + i,"
             " CASE WHEN i <= 30 THEN 'equal' ELSE 'pfi-model' END, 2, 2,"
             " CASE WHEN i % 7 = 0 THEN 'agent down' ELSE '' END FROM k;",
             NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(h);
    return ok ? 0 : -1;
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "%s/pfi-test-oom-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(g_tmp) == NULL)
        return -1;
    /* the synthetic library, its job library and its dataset, unarmed */
    char dir[512];
    if (pfi_library_generate(NULL, &g_lib) != PFI_OK ||
        pfi_joblib_from_library(g_lib, &g_jl) != PFI_OK ||
        pfi_library_write(g_lib, tmp_path(dir, sizeof dir, "library"), NULL) != PFI_OK)
        return -1;
    return control_setup();
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    (void)state;
    pfi_joblib_destroy(g_jl);
    pfi_library_destroy(g_lib);
    if (g_closed_fd >= 0)
        close(g_closed_fd);
    return nftw(g_tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
    if (getenv("PFI_OOM_TRAP") != NULL)
        g_trap = strtol(getenv("PFI_OOM_TRAP"), NULL, 10);
    /* before any other pfi or jansson call (pfi/memory.h) */
    if (pfi_replace_allocator(t_malloc, t_realloc, t_calloc, t_free) != PFI_OK)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replace_allocator_arguments),
        cmocka_unit_test(test_readers),
        cmocka_unit_test(test_telemetry),
        cmocka_unit_test(test_analysis),
        cmocka_unit_test(test_allocation),
        cmocka_unit_test(test_store_fit_sweep),
        cmocka_unit_test(test_control),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    long live = atomic_load(&g_live);
    if (live != 0) {
        fprintf(stderr, "test_oom: %ld block(s) still allocated at exit\n", live);
        return 1;
    }
    return rc;
}
