/*
 * pfi sweep — measure a job at several GPU power caps (paper §3) and print its PFI.
 */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hwutil.h"
#include "pfi/capctl.h"
#include "pfi/index.h"
#include "pfi/manifest.h"
#include "pfi/runs.h"
#include "pfi/store.h"
#include "pfi/sweep.h"

#define MAX_CAPS 64
#define MAX_GPUS 1024

static volatile sig_atomic_t stop_signal;

/* Async-signal-safe: only records the signal; the sweep loop restores the limits. */
static void on_signal(int sig)
{
    stop_signal = sig;
}

/* The backend a sweep uses when --backend is not given (the help says so). */
#define SWEEP_BACKEND_DEFAULT "emulated"

/* Where the help's descriptions start. */
#define USAGE_COLUMN 28

/* "  --backend nvml|emulated": the backends that can set limits, as set_backend accepts. */
static void usage_backend(FILE *f)
{
    cli_names backends;
    cli_gpu_backend_names(PFI_GPU_CAP_SET_LIMITS, &backends);
    char list[512], opt[600];
    cli_join_names(list, sizeof list, &backends, &(cli_list_style){.sep = "|"});
    snprintf(opt, sizeof opt, "  --backend %s", list);
    if (strlen(opt) + 2 > USAGE_COLUMN) {
        fprintf(f, "%s\n", opt);
        opt[0] = '\0';
    }
    fprintf(f, "%-*s(%s) nvml sets real power limits: needs root\n", USAGE_COLUMN, opt,
            SWEEP_BACKEND_DEFAULT);
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: pfi sweep --caps W[,W...] (-o DIR | --db FILE) [OPTIONS] [-- COMMAND [ARGS...]]\n"
        "\n"
        "Run a job at each power cap, sample GPU telemetry every interval, reduce each run to\n"
        "its steady state (mean of the top 10 %% of samples) and append it to DIR/runs.csv\n"
        "(with DIR/pfi-dataset.json: 'pfi analyze DIR' reads it) and/or store it in the run\n"
        "store FILE ('pfi analyze --db FILE' reads it) as soon as it completes. Ends with the\n"
        "PFI table. The original power limits are journaled before the first change and\n"
        "restored at the end, on SIGINT/SIGTERM/SIGHUP, and by 'pfi restore' after a crash.\n"
        "A sweep that is run again with the same outputs and group skips the caps already\n"
        "there (with both -o and --db: the caps already in both).\n"
        "\n"
        "GPUs:\n");
    usage_backend(f);
    fprintf(
        f,
        "  --gpus LIST               GPUs of the job, e.g. 0-7 or 0,2 (all)\n"
        "  --nvml-library PATH       NVML library (libnvidia-ml.so.1; env PFI_NVML_LIBRARY)\n"
        "  --emulate SPEC            emulated job, e.g. gpus=8,alpha=0.6 (man pfi-sweep)\n"
        "  --journal PATH            where the original limits go (DIR/cap-journal, else\n"
        "                            FILE.cap-journal)\n"
        "  --run-dir DIR             the GPUs' ownership locks ($PFI_RUN_DIR, /run/pfi): a\n"
        "                            GPU another tool owns (pfid, a sweep) is refused, naming\n"
        "                            it (exit 1)\n"
        "\n"
        "sweep:\n"
        "  --caps W[,W...]           per-GPU caps in watts, measured in this order; the\n"
        "                            highest is the reference (include the default limit)\n"
        "  --clamp                   set the nearest valid limit for caps outside the device's\n"
        "                            range (default: refuse and change nothing)\n"
        "  --mode separate|in-situ   separate: start the job at each cap (the paper's method);\n"
        "                            in-situ: one running job, caps changed in place (separate)\n"
        "  --duration T              measurement window per cap (30m); units ms, s, m, h\n"
        "  --interval T              telemetry period (5s)\n"
        "  --warmup T                dropped after each job start (5m); a run whose top-Q\n"
        "                            power is over 5 %% above the cap (plus its noise), as\n"
        "                            when the window holds the job's start, is flagged\n"
        "                            cap_not_effective (warned, stored, exit unchanged)\n"
        "  --settle T                in-situ: dropped after each cap change (1m)\n"
        "  --group NAME              sweep group name for the runs (sweep)\n"
        "  --top-fraction Q          steady state: mean of the top Q of samples (0.10)\n"
        "\n"
        "throughput (not with --backend emulated, whose job reports its own):\n"
        "  -- COMMAND [ARGS...]      the training command; its stdout is matched line by line\n"
        "  --throughput-log FILE     or follow a log file the job writes\n"
        "  --throughput-regex RE     PCRE2 (as pfi ingest) whose (?<throughput>...) group is\n"
        "                            tokens/s, e.g. 'tokens_per_sec: "
        "(?<throughput>[0-9.]+[KMG]?)'\n"
        "                            (a K/M/G suffix scales; one plain group: old form, noted)\n"
        "  --echo                    copy the command's output to stderr\n"
        "\n"
        "output:\n"
        "  -o, --output DIR          sweep directory (runs.csv + manifest)\n"
        "  --db FILE                 SQLite run store (created if absent); -o, --db or both\n"
        "  --record FILE             also save every raw sample of the measurement windows as\n"
        "                            a replay CSV ('pfi probe --backend replay --replay FILE')\n"
        "  --format table|csv|json   final PFI table (table)\n"
        "  --draws N                 Monte Carlo draws for the PFI CI (10000)\n"
        "  --seed N                  CI seed (1)\n"
        "  --stats                   print sampling statistics (drift, CPU per sample)\n"
        "  -h, --help                this help\n"
        "\n"
        "Progress and ETA are shown when stderr is a terminal.\n"
        "Exit codes: 0 success, 1 bad input or a failed run, 2 bad command line (also a cap\n"
        "outside the device's range: refused before anything is written), 3 output not\n"
        "written, 4 internal error, 5 a GPU operation failed (permission, not supported, GPU\n"
        "lost, cap not in effect, limits not restored: see the message), 128+N stopped by\n"
        "signal N (limits restored).\n");
}

typedef struct settings {
    pfi_gpu_config gc;
    unsigned gpus[MAX_GPUS];
    size_t n_gpus;
    double caps[MAX_CAPS];
    size_t n_caps;
    pfi_sweep_config sc;
    const char *out, *db, *record, *journal, *tlog, *tregex, *format;
    const char *run_dir; /* --run-dir: where the GPUs' ownership locks are (NULL: default) */
    bool echo, stats;
    size_t draws;
    unsigned long long seed;
    char **cmd;
} settings;

/*
 * The options, one entry each: getopt_long's entry, the function that takes the value, and
 * the settings field it sets (for the functions that only store). A function returns
 * PFI_EXIT_OK to go on, -1 after --help, else the exit code.
 */
typedef struct sweep_option {
    struct option o;
    int (*set)(settings *s, const struct sweep_option *opt, const char *arg);
    size_t field;
} sweep_option;

#define FIELD(s, f) ((void *)((char *)(s) + (f)))

static int set_string(settings *s, const sweep_option *opt, const char *arg)
{
    *(const char **)FIELD(s, opt->field) = arg;
    return PFI_EXIT_OK;
}

static int set_true(settings *s, const sweep_option *opt, const char *arg)
{
    (void)arg;
    *(bool *)FIELD(s, opt->field) = true;
    return PFI_EXIT_OK;
}

static int set_duration(settings *s, const sweep_option *opt, const char *arg)
{
    if (!hw_parse_duration(arg, FIELD(s, opt->field))) {
        return cli_usage_bad_value(opt->o.name, arg, "a duration like 30m, 5s, 250ms");
    }
    return PFI_EXIT_OK;
}

static int show_help(settings *s, const sweep_option *opt, const char *arg)
{
    (void)s, (void)opt, (void)arg;
    usage(stdout);
    return -1;
}

/* A sweep sets limits: only the backends that can are accepted. */
static int set_backend(settings *s, const sweep_option *opt, const char *arg)
{
    (void)opt;
    if (!pfi_gpu_kind_parse(arg, &s->gc.kind) ||
        !(pfi_gpu_backend_caps(s->gc.kind) & PFI_GPU_CAP_SET_LIMITS)) {
        char names[128];
        return cli_usage_bad_value("backend", arg,
                                   pfi_gpu_kind_names(PFI_GPU_CAP_SET_LIMITS, names, sizeof names));
    }
    return PFI_EXIT_OK;
}

static int set_gpus(settings *s, const sweep_option *opt, const char *arg)
{
    (void)opt;
    if (!hw_parse_gpus(arg, s->gpus, MAX_GPUS, &s->n_gpus)) {
        return cli_usage_bad_value("gpus", arg, "indices and ranges like 0-3,6");
    }
    return PFI_EXIT_OK;
}

static int set_caps(settings *s, const sweep_option *opt, const char *arg)
{
    (void)opt;
    if (!hw_parse_list(arg, s->caps, MAX_CAPS, &s->n_caps)) {
        char want[96];
        snprintf(want, sizeof want, "watts like 700,600,500 (at most %d)", MAX_CAPS);
        return cli_usage_bad_value("caps", arg, want);
    }
    return PFI_EXIT_OK;
}

static int set_mode(settings *s, const sweep_option *opt, const char *arg)
{
    (void)opt;
    if (strcmp(arg, "separate") == 0)
        s->sc.mode = PFI_SWEEP_SEPARATE;
    else if (strcmp(arg, "in-situ") == 0)
        s->sc.mode = PFI_SWEEP_IN_SITU;
    else {
        return cli_usage_bad_value("mode", arg, "separate or in-situ");
    }
    return PFI_EXIT_OK;
}

static int set_group(settings *s, const sweep_option *opt, const char *arg)
{
    (void)opt;
    if (pfi_store_group_check(arg) != NULL) {
        char want[256];
        snprintf(want, sizeof want, "a sweep group name (%s)", pfi_store_group_check(arg));
        return cli_usage_bad_value("group", arg, want);
    }
    s->sc.group = arg;
    return PFI_EXIT_OK;
}

static int set_top_fraction(settings *s, const sweep_option *opt, const char *arg)
{
    (void)opt;
    if (!cli_parse_double(arg, &s->sc.q) || !(s->sc.q > 0 && s->sc.q <= 1)) {
        return cli_usage_bad_value("top-fraction", arg, "a number in (0, 1]");
    }
    return PFI_EXIT_OK;
}

static int set_format(settings *s, const sweep_option *opt, const char *arg)
{
    (void)opt;
    if (strcmp(arg, "table") && strcmp(arg, "csv") && strcmp(arg, "json")) {
        return cli_usage_bad_value("format", arg, "table, csv or json");
    }
    s->format = arg;
    return PFI_EXIT_OK;
}

static int set_draws(settings *s, const sweep_option *opt, const char *arg)
{
    (void)opt;
    if (!cli_parse_size(arg, &s->draws) || s->draws > 10000000) {
        return cli_usage_bad_value("draws", arg, "a count up to 10000000");
    }
    return PFI_EXIT_OK;
}

static int set_seed(settings *s, const sweep_option *opt, const char *arg)
{
    (void)opt;
    size_t z;
    if (!cli_parse_size(arg, &z)) {
        return cli_usage_bad_value("seed", arg, "a non-negative integer");
    }
    s->seed = z;
    return PFI_EXIT_OK;
}

#define REQ(name, val, fn, field)                                                                  \
    {                                                                                              \
        {name, required_argument, NULL, val}, fn, field                                            \
    }
#define FLAG(name, val, fn, field)                                                                 \
    {                                                                                              \
        {name, no_argument, NULL, val}, fn, field                                                  \
    }
#define AT(f) offsetof(settings, f)
static const sweep_option sweep_options[] = {
    REQ("backend", 'b', set_backend, 0),
    REQ("gpus", 'G', set_gpus, 0),
    REQ("nvml-library", 'L', set_string, AT(gc.library)),
    REQ("emulate", 'E', set_string, AT(gc.emulate)),
    REQ("journal", 'J', set_string, AT(journal)),
    REQ("run-dir", 'U', set_string, AT(run_dir)),
    REQ("caps", 'C', set_caps, 0),
    FLAG("clamp", 'c', set_true, AT(sc.clamp)),
    REQ("mode", 'M', set_mode, 0),
    REQ("duration", 'D', set_duration, AT(sc.duration_s)),
    REQ("interval", 'I', set_duration, AT(sc.interval_s)),
    REQ("warmup", 'W', set_duration, AT(sc.warmup_s)),
    REQ("settle", 'S', set_duration, AT(sc.settle_s)),
    REQ("group", 'g', set_group, 0),
    REQ("top-fraction", 'q', set_top_fraction, 0),
    REQ("throughput-log", 'T', set_string, AT(tlog)),
    REQ("throughput-regex", 'R', set_string, AT(tregex)),
    FLAG("echo", 'e', set_true, AT(echo)),
    REQ("output", 'o', set_string, AT(out)),
    REQ("format", 'f', set_format, 0),
    REQ("draws", 'd', set_draws, 0),
    REQ("seed", 's', set_seed, 0),
    FLAG("stats", 't', set_true, AT(stats)),
    REQ("db", 'B', set_string, AT(db)),
    REQ("record", 'r', set_string, AT(record)),
    FLAG("help", 'h', show_help, 0),
};
#undef REQ
#undef FLAG
#undef AT
#define N_OPTIONS (sizeof sweep_options / sizeof sweep_options[0])

static void set_defaults(settings *s)
{
    pfi_gpu_kind_parse(SWEEP_BACKEND_DEFAULT, &s->gc.kind);
    s->sc.duration_s = 1800;
    s->sc.interval_s = 5;
    s->sc.warmup_s = 300;
    s->sc.settle_s = 60;
    s->sc.q = 0.10;
    s->sc.group = "sweep";
    s->format = "table";
    s->draws = 10000;
    s->seed = 1;
}

/* The options that only make sense together, once all are read. */
static int check_args(settings *s)
{
    if (s->n_caps == 0 || (s->out == NULL && s->db == NULL)) {
        cli_error("--caps and -o DIR or --db FILE are required (see 'pfi sweep --help')");
        return PFI_EXIT_USAGE;
    }
    if (s->record != NULL && strcmp(s->record, "-") == 0) {
        cli_error("--record: give a file (stdout carries the PFI table)");
        return PFI_EXIT_USAGE;
    }
    if (!(s->sc.interval_s > 0) || s->sc.duration_s < s->sc.interval_s) {
        cli_error("--interval must be > 0 and --duration at least one interval");
        return PFI_EXIT_USAGE;
    }
    for (size_t k = 0; k < s->n_caps; k++)
        for (size_t j = 0; j < k; j++)
            if (s->caps[j] == s->caps[k]) {
                cli_error("--caps: %g W is listed twice", s->caps[k]);
                return PFI_EXIT_USAGE;
            }
    /* a backend that runs its own emulated job reports its throughput itself */
    bool own_job = (pfi_gpu_backend_caps(s->gc.kind) & PFI_GPU_CAP_JOBS) != 0;
    if (own_job && (s->cmd || s->tlog)) {
        cli_error("--backend %s runs its own job: no COMMAND or --throughput-log",
                  pfi_gpu_kind_name(s->gc.kind));
        return PFI_EXIT_USAGE;
    }
    if (!own_job && ((s->cmd == NULL) == (s->tlog == NULL))) {
        cli_error("give either -- COMMAND or --throughput-log FILE for the job's throughput");
        return PFI_EXIT_USAGE;
    }
    if (!own_job && s->tregex == NULL) {
        cli_error("--throughput-regex is required with a command or a log");
        return PFI_EXIT_USAGE;
    }
    if (s->tlog != NULL && s->sc.mode == PFI_SWEEP_SEPARATE) {
        cli_error("--throughput-log follows a job pfi does not start: use --mode in-situ");
        return PFI_EXIT_USAGE;
    }
    if (!own_job && s->gc.emulate != NULL) {
        char names[128];
        cli_error("--emulate needs --backend %s",
                  pfi_gpu_kind_names(PFI_GPU_CAP_JOBS, names, sizeof names));
        return PFI_EXIT_USAGE;
    }
    return PFI_EXIT_OK;
}

static int parse_args(int argc, char **argv, settings *s)
{
    struct option long_options[N_OPTIONS + 1];
    for (size_t k = 0; k < N_OPTIONS; k++)
        long_options[k] = sweep_options[k].o;
    long_options[N_OPTIONS] = (struct option){NULL, 0, NULL, 0};
    set_defaults(s);
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "+ho:", long_options, NULL)) != -1) {
        const sweep_option *opt = NULL;
        for (size_t k = 0; k < N_OPTIONS && opt == NULL; k++)
            if (sweep_options[k].o.val == c)
                opt = &sweep_options[k];
        if (opt == NULL)
            return cli_usage_getopt(long_options, "+ho:", c, argv);
        int rc = opt->set(s, opt, optarg);
        if (rc != PFI_EXIT_OK)
            return rc;
    }
    if (optind < argc)
        s->cmd = argv + optind;
    return check_args(s);
}

static void on_warn(void *arg, const char *msg)
{
    (void)arg;
    cli_error("warning: %s", msg);
}

static void on_progress(void *arg, const pfi_sweep_progress *p)
{
    const bool *virt = arg;
    char a[32], b[32];
    fprintf(stderr, "\r\033[K[run %zu/%zu, %.0f W] %s %s left, ETA %s%s", p->run + 1, p->n_runs,
            p->cap_w, p->phase, hw_format_duration(p->phase_left_s, a, sizeof a),
            hw_format_duration(p->eta_s, b, sizeof b), *virt ? " (emulated time)" : "");
    fflush(stderr);
}

/* The runs to show: the sweep directory's table, else the sweep group's runs in the store. */
static int load_runs(const settings *s, const char *runs_path, pfi_runs_table **out)
{
    pfi_diag d;
    pfi_runs_table *t = NULL;
    pfi_error e = pfi_runs_table_create(&t);
    if (e != PFI_OK) {
        cli_error("out of memory");
        return PFI_EXIT_INTERNAL;
    }
    if (runs_path == NULL) {
        int rc = cli_load_db_group(s->db, s->sc.group, t);
        if (rc != PFI_EXIT_OK) {
            pfi_runs_table_destroy(t);
            return rc;
        }
        *out = t;
        return PFI_EXIT_OK;
    }
    pfi_manifest m;
    char mpath[4096];
    snprintf(mpath, sizeof mpath, "%s/%s", s->out, PFI_MANIFEST_NAME);
    e = pfi_manifest_load(mpath, &m, &d);
    if (e == PFI_OK) {
        e = pfi_runs_read_csv(t, runs_path, NULL, &m.mapping, &d);
        pfi_manifest_clear(&m);
    }
    if (e != PFI_OK) {
        pfi_runs_table_destroy(t);
        return cli_report(e, &d);
    }
    *out = t;
    return PFI_EXIT_OK;
}

static int print_pfi(const settings *s, const char *runs_path)
{
    pfi_runs_table *t = NULL;
    int lrc = load_runs(s, runs_path, &t);
    if (lrc != PFI_EXIT_OK)
        return lrc;
    pfi_options o;
    pfi_options_init(&o);
    o.draws = s->draws;
    o.seed = s->seed;
    double *work = malloc((s->draws ? s->draws : 1) * sizeof *work);
    if (work == NULL) {
        pfi_runs_table_destroy(t);
        cli_error("out of memory");
        return PFI_EXIT_INTERNAL;
    }
    bool json = strcmp(s->format, "json") == 0, csv = strcmp(s->format, "csv") == 0;
    if (json)
        printf("{\"groups\": [");
    else if (csv)
        printf("group,runs,pfi,ci_lo,ci_hi,label,area,ce,points_used\n");
    /* the group column as wide as the longest name (names are not cut) */
    int wg = 20;
    for (size_t gi = 0; gi < t->n_groups; gi++) {
        size_t ng = strlen(t->groups[gi].key_values[0]);
        wg = ng > (size_t)wg ? (ng > 256 ? 256 : (int)ng) : wg;
    }
    if (!json && !csv)
        printf("%-*s %5s %8s %19s %-10s %7s %7s\n", wg, "group", "runs", "PFI", "95% CI", "label",
               "area", "ce");
    int rc = PFI_EXIT_OK;
    for (size_t gi = 0; gi < t->n_groups; gi++) {
        pfi_result r;
        /* the group's own stream, as pfi analyze draws it: the same store, the same CI */
        if (pfi_group_compute(&t->groups[gi], &o, &r) != PFI_OK ||
            pfi_result_ci(&r, &o, pfi_group_stream(t, gi), work) != PFI_OK) {
            pfi_result_clear(&r);
            rc = PFI_EXIT_INTERNAL;
            break;
        }
        const char *name = t->groups[gi].key_values[0];
        if (json) {
            printf("%s{\"group\": \"", gi ? ", " : "");
            for (const char *p = name; *p; p++) {
                if (*p == '"' || *p == '\\')
                    putchar('\\');
                putchar((unsigned char)*p < 32 ? '?' : *p);
            }
            printf("\", \"runs\": %zu, \"pfi\": ", t->groups[gi].n_runs);
            cli_put_num(stdout, r.ratio, 6, "null");
            if (r.ci_available) {
                printf(", \"ci_lo\": ");
                cli_put_num(stdout, r.ci_lo, 6, "null");
                printf(", \"ci_hi\": ");
                cli_put_num(stdout, r.ci_hi, 6, "null");
            }
            printf(", \"label\": \"%s\"}", pfi_label_name(r.label));
        } else if (csv) {
            printf("%s,%zu,", name, t->groups[gi].n_runs);
            cli_put_num(stdout, r.ratio, 6, "");
            printf(",");
            if (r.ci_available) {
                cli_put_num(stdout, r.ci_lo, 6, "");
                printf(",");
                cli_put_num(stdout, r.ci_hi, 6, "");
            } else {
                printf(",");
            }
            printf(",%s,", pfi_label_name(r.label));
            cli_put_num(stdout, r.area, 6, "");
            printf(",");
            cli_put_num(stdout, r.ce, 6, "");
            printf(",%zu\n", r.n_ratio);
        } else {
            char ci[100] = "-";
            if (r.ci_available) /* an unbounded end is "-" */
                snprintf(ci, sizeof ci, "[%s, %s]", cli_num(r.ci_lo, 'f', 3, "-").s,
                         cli_num(r.ci_hi, 'f', 3, "-").s);
            printf("%-*s %5zu %8s %19s %-10s %7s %7s\n", wg, name, t->groups[gi].n_runs,
                   cli_num(r.ratio, 'f', 3, "undefined").s, ci, pfi_label_name(r.label),
                   cli_num(r.area, 'f', 3, "-").s, cli_num(r.ce, 'f', 3, "-").s);
            if (r.undefined_reason != NULL)
                printf("  (%s)\n", r.undefined_reason);
        }
        pfi_result_clear(&r);
    }
    if (json)
        printf("]}\n");
    free(work);
    pfi_runs_table_destroy(t);
    if (fflush(stdout) != 0)
        return PFI_EXIT_OUTPUT;
    return rc;
}

/* Both outputs: every run goes to each; a run is done only when both have it, so a run
 * missing from either is measured again (and replaces the other's copy). */
typedef struct tee_sink {
    pfi_run_sink a, b;
} tee_sink;

static pfi_error tee_put(void *ctx, const pfi_sweep_row *row, pfi_diag *diag)
{
    tee_sink *t = ctx;
    pfi_error e = t->a.put(t->a.ctx, row, diag);
    return e == PFI_OK ? t->b.put(t->b.ctx, row, diag) : e;
}

static bool tee_done(void *ctx, const char *group, double cap_w)
{
    tee_sink *t = ctx;
    return t->a.done(t->a.ctx, group, cap_w) && t->b.done(t->b.ctx, group, cap_w);
}

/* --record: the replay CSV, times from the sweep's start on the backend clock. */
typedef struct recorder {
    cli_output o;
    double t0;
} recorder;

static void on_sample(void *arg, unsigned gpu, const pfi_gpu_sample *smp, uint32_t limit_mw)
{
    recorder *r = arg;
    hw_record_row(r->o.f, smp->t_s - r->t0, gpu, smp, true, limit_mw / 1000.0);
}

/*
 * Every cap against every GPU's [min, max], before any output is opened: a sweep that will be
 * refused must not create its directory, manifest, store or record file, nor print a summary.
 * pfi_sweep_run checks again (the library's contract); this is the CLI's early, complete
 * report — one line per refused cap, naming the GPU, its limit and the flag that would help.
 */
static int check_caps(pfi_gpu *g, const settings *s)
{
    size_t refused = 0;
    for (size_t k = 0; k < s->n_caps; k++) {
        for (size_t i = 0; i < s->n_gpus; i++) {
            pfi_gpu_limits l;
            pfi_diag d;
            pfi_error e = pfi_gpu_read_limits(g, s->gpus[i], &l, &d);
            uint32_t mw;
            bool clamped;
            if (e == PFI_OK)
                e = pfi_cap_resolve_mw(&l, s->caps[k], s->sc.clamp, &mw, &clamped, &d);
            if (e == PFI_ERR_OUT_OF_RANGE) {
                bool above = s->caps[k] * 1000.0 > l.max_mw;
                cli_error("--caps: %g W is %s GPU %u's %s power limit of %g W (device range "
                          "%g-%g W)",
                          s->caps[k], above ? "above" : "below", s->gpus[i],
                          above ? "maximum" : "minimum", (above ? l.max_mw : l.min_mw) / 1000.0,
                          l.min_mw / 1000.0, l.max_mw / 1000.0);
                refused++;
                break; /* one line per cap */
            }
            if (e != PFI_OK) {
                cli_error("GPU %u: %s", s->gpus[i], d.message[0] ? d.message : pfi_strerror(e));
                return hw_exit_code(e);
            }
        }
    }
    if (refused == 0)
        return PFI_EXIT_OK;
    cli_error("sweep refused: %zu cap(s) outside the device's range; nothing was changed, run "
              "or written (remove them, or pass --clamp to set the nearest valid limit)",
              refused);
    return PFI_EXIT_USAGE;
}

/* What one sweep holds open; released by sweep_close whatever state it is in. */
typedef struct sweep_run {
    pfi_gpu *g;
    pfi_runs_dir *dir;
    pfi_store *store;
    recorder rec;
    bool recording;
    pfi_tput_source tp;
    char journal[4096];
    bool virt;
} sweep_run;

static void sweep_close(sweep_run *r)
{
    if (r->recording)
        cli_output_abort(&r->rec.o);
    pfi_tput_source_destroy(&r->tp);
    pfi_store_close(r->store);
    pfi_runs_dir_close(r->dir);
    pfi_gpu_close(r->g);
}

/* Open the backend and settle the GPU list (all GPUs when --gpus was not given). */
static int open_backend(settings *s, sweep_run *r)
{
    pfi_diag d;
    pfi_error e = hw_gpu_open(&s->gc, &r->g, &d);
    if (e != PFI_OK) {
        cli_error("%s backend: %s", pfi_gpu_kind_name(s->gc.kind),
                  d.message[0] ? d.message : pfi_strerror(e));
        return hw_exit_code(e);
    }
    unsigned count = 0;
    if ((e = pfi_gpu_count(r->g, &count, &d)) != PFI_OK || count == 0) {
        cli_error("no GPU found%s%s", e ? ": " : "", e ? d.message : "");
        return e ? hw_exit_code(e) : PFI_EXIT_DEVICE;
    }
    if (s->n_gpus == 0)
        for (unsigned i = 0; i < count && i < MAX_GPUS; i++)
            s->gpus[s->n_gpus++] = i;
    for (size_t k = 0; k < s->n_gpus; k++)
        if (s->gpus[k] >= count) {
            cli_error("--gpus: GPU %u does not exist (%u found)", s->gpus[k], count);
            return PFI_EXIT_USAGE;
        }
    return PFI_EXIT_OK;
}

/* The job's throughput: the backend's own emulated job, else a command or a log. */
static int open_throughput(const settings *s, sweep_run *r)
{
    pfi_diag d;
    pfi_error e;
    pfi_tput_regex *re = NULL;
    if (pfi_gpu_caps(r->g) & PFI_GPU_CAP_JOBS)
        e = pfi_tput_emulated(r->g, &r->tp);
    else if ((e = pfi_tput_regex_compile(s->tregex, &re, &d)) == PFI_OK) {
        if (pfi_tput_regex_note(re) != NULL) /* the old one-plain-group form */
            fprintf(stderr, "pfi sweep: note: %s\n", pfi_tput_regex_note(re));
        e = s->cmd ? pfi_tput_command(s->cmd, re, r->g, s->echo ? STDERR_FILENO : -1, &r->tp, &d)
                   : pfi_tput_log(s->tlog, re, r->g, &r->tp, &d);
    }
    if (e != PFI_OK) {
        cli_error("%s", d.message[0] ? d.message : pfi_strerror(e));
        return cli_exit_code(e);
    }
    return PFI_EXIT_OK;
}

/* The outputs: the sweep directory, the run store, the record file. */
static int open_outputs(settings *s, sweep_run *r)
{
    pfi_diag d;
    pfi_error e;
    if (s->out != NULL && (e = pfi_runs_dir_open(s->out, &r->dir, &d)) != PFI_OK) {
        int rc = cli_report(e, &d);
        return e == PFI_ERR_IO ? PFI_EXIT_OUTPUT : rc; /* the directory cannot be written */
    }
    if (s->db != NULL && (e = pfi_store_open(s->db, PFI_STORE_WRITE, &r->store, &d)) != PFI_OK)
        return cli_report(e, &d);
    if (s->record != NULL) {
        if (!cli_output_open(&r->rec.o, s->record))
            return PFI_EXIT_OUTPUT;
        r->recording = true;
        hw_record_header(r->rec.o.f);
        s->sc.sample = on_sample;
        s->sc.sample_arg = &r->rec;
    }
    return PFI_EXIT_OK;
}

/* The engine's configuration: GPUs, caps, the journal, the hooks. */
static void configure_sweep(settings *s, sweep_run *r)
{
    if (s->journal != NULL)
        snprintf(r->journal, sizeof r->journal, "%s", s->journal);
    else if (s->out != NULL)
        snprintf(r->journal, sizeof r->journal, "%s/cap-journal", s->out);
    else
        snprintf(r->journal, sizeof r->journal, "%s.cap-journal", s->db);
    r->virt = pfi_gpu_is_virtual_clock(r->g);
    s->sc.gpus = s->gpus;
    s->sc.n_gpus = s->n_gpus;
    s->sc.caps_w = s->caps;
    s->sc.n_caps = s->n_caps;
    /* limits that vanish with the process (emulated GPUs) leave nothing to journal */
    s->sc.journal_path = (pfi_gpu_caps(r->g) & PFI_GPU_CAP_PERSISTENT_LIMITS) ? r->journal : NULL;
    s->sc.library = s->gc.library;
    /* one owner per GPU: GPUs whose limits outlive the process are locked under --run-dir,
     * $PFI_RUN_DIR or /run/pfi; emulated ones only when a run directory is named */
    const char *rd = s->run_dir != NULL ? s->run_dir : getenv("PFI_RUN_DIR");
    if (rd == NULL && (pfi_gpu_caps(r->g) & PFI_GPU_CAP_PERSISTENT_LIMITS))
        rd = PFI_RUN_DIR_DEFAULT;
    s->sc.run_dir = rd;
    s->sc.owner = "pfi sweep";
    s->sc.stop = &stop_signal;
    s->sc.warn = on_warn;
    if (cli_is_tty(stderr)) {
        s->sc.progress = on_progress;
        s->sc.progress_arg = &r->virt;
    }
}

/* pfi_sweep_run into the outputs with SIGINT/SIGTERM/SIGHUP caught (the engine restores the
 * limits and returns PFI_ERR_INTERRUPTED). */
static pfi_error run_sweep(const settings *s, sweep_run *r, pfi_sweep_stats *st, pfi_diag *d)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: a sleeping sweep wakes up at once */
    sigemptyset(&sa.sa_mask);
    struct sigaction old_int, old_term, old_hup;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    tee_sink tee;
    pfi_run_sink sink;
    if (r->dir != NULL && r->store != NULL) {
        tee = (tee_sink){.a = pfi_runs_dir_sink(r->dir), .b = pfi_store_sink(r->store)};
        sink = (pfi_run_sink){.put = tee_put, .done = tee_done, .ctx = &tee};
    } else {
        sink = r->dir != NULL ? pfi_runs_dir_sink(r->dir) : pfi_store_sink(r->store);
    }
    pfi_error e = pfi_sweep_run(r->g, &s->sc, &r->tp, &sink, st, d);
    if (cli_is_tty(stderr) && s->sc.progress != NULL)
        fputs("\r\033[K", stderr);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    return e;
}

/* What the sweep did, on stderr: statistics, the summary, limits not restored, why it
 * stopped. Returns the exit code. */
static int report_sweep(const settings *s, const sweep_run *r, const pfi_sweep_stats *st,
                        pfi_error e, const pfi_diag *d)
{
    int rc = PFI_EXIT_OK;
    if (s->stats) {
        char a[32];
        fprintf(stderr,
                "pfi: sampling: %zu ticks on %zu GPUs, max lateness %.3f ms, period drift "
                "%.4f %%, CPU %.2f us per GPU sample, %s %s elapsed\n",
                st->ticks, s->n_gpus, st->max_late_s * 1e3, st->drift_rel * 100,
                st->cpu_per_sample_s * 1e6, hw_format_duration(st->elapsed_s, a, sizeof a),
                r->virt ? "emulated" : "real");
    }
    /* no summary for a sweep refused before its first run: there is nothing to sum up */
    if (st->runs_done + st->runs_skipped + st->runs_failed > 0 || e == PFI_OK ||
        e == PFI_ERR_INTERRUPTED || e == PFI_ERR_NOT_EFFECTIVE)
        fprintf(stderr, "pfi: %zu run(s) measured, %zu already in %s%s%s, %zu failed\n",
                st->runs_done, st->runs_skipped, r->dir ? pfi_runs_dir_path(r->dir) : "",
                r->dir && r->store ? " and " : "", r->store ? s->db : "", st->runs_failed);
    if (s->sc.journal_path != NULL) {
        for (size_t k = 0; k < s->n_gpus; k++)
            if (st->restore[k].error != PFI_OK)
                cli_error("GPU %u: original limit NOT restored: %s", st->restore[k].gpu,
                          st->restore[k].message);
        if (!st->restored)
            cli_error("power limits not all restored; the journal %s is kept: run "
                      "'pfi restore --journal %s'",
                      r->journal, r->journal);
    }
    if (e == PFI_ERR_INTERRUPTED && stop_signal != 0) {
        cli_error("stopped by signal %d; %s", (int)stop_signal,
                  st->restored ? "original power limits restored" : "see above");
        rc = st->restored ? 128 + (int)stop_signal : PFI_EXIT_DEVICE;
    } else if (e != PFI_OK) {
        cli_error("%s", d->message[0] ? d->message : pfi_strerror(e));
        rc = e == PFI_ERR_INTERRUPTED ? PFI_EXIT_DATA : hw_exit_code(e);
    }
    return rc;
}

int cmd_sweep(int argc, char **argv)
{
    settings s;
    memset(&s, 0, sizeof s);
    int rc = parse_args(argc, argv, &s);
    if (rc != PFI_EXIT_OK)
        return rc < 0 ? PFI_EXIT_OK : rc;
    sweep_run r;
    memset(&r, 0, sizeof r);
    if ((rc = open_backend(&s, &r)) != PFI_EXIT_OK) {
        sweep_close(&r);
        return rc;
    }
    r.rec.t0 = pfi_gpu_now_s(r.g);
    /* everything that can refuse the sweep is checked before the first file is written */
    if ((rc = check_caps(r.g, &s)) != PFI_EXIT_OK ||
        (rc = open_throughput(&s, &r)) != PFI_EXIT_OK ||
        (rc = open_outputs(&s, &r)) != PFI_EXIT_OK) {
        sweep_close(&r);
        return rc;
    }
    configure_sweep(&s, &r);
    pfi_sweep_stats st;
    pfi_diag d;
    pfi_error e = run_sweep(&s, &r, &st, &d);
    rc = report_sweep(&s, &r, &st, e, &d);
    /* the samples taken are kept whatever stopped the sweep */
    if (r.recording) {
        r.recording = false;
        if (!cli_output_commit(&r.rec.o)) {
            cli_error("%s: cannot write the recorded samples", s.record);
            if (rc == PFI_EXIT_OK)
                rc = PFI_EXIT_OUTPUT;
        }
    }
    if ((e == PFI_OK || e == PFI_ERR_NOT_EFFECTIVE) && st.runs_done + st.runs_skipped > 0) {
        int prc = print_pfi(&s, r.dir ? pfi_runs_dir_path(r.dir) : NULL);
        if (rc == PFI_EXIT_OK)
            rc = prc;
    }
    pfi_sweep_stats_clear(&st);
    sweep_close(&r);
    return rc;
}
