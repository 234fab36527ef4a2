/*
 * pfi probe — list the GPUs, their power limits, and which metrics this machine can read.
 * Read-only: changes nothing on any GPU.
 */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hwutil.h"
#include "pfi/gpu.h"

static void usage(FILE *f)
{
    cli_names backends;
    cli_gpu_backend_names(0, &backends);
    cli_usage_list(f, "usage: pfi probe [--backend ", 17, 80, &backends,
                   &(cli_list_style){.sep = "|"}, "] [OPTIONS]");
    fprintf(f,
            "\n"
            "List the GPUs of a backend with their power limits (current = requested, enforced,\n"
            "default, min, max) and which telemetry metrics can be read. Changes nothing.\n"
            "A limit the driver will not report is shown as n/a with NVML's reason. When the\n"
            "enforced limit differs from the requested one (another limiter holds the GPU lower),\n"
            "a warning says so: runs measured there are at the enforced limit.\n"
            "\n"
            "options:\n");
    cli_usage_list(f, "  --backend B             ", 26, 80, &backends,
                   &(cli_list_style){.sep = ", ",
                                     .last_sep = " or ",
                                     .first = pfi_gpu_kind_name(PFI_GPU_DEFAULT)},
                   NULL);
    fprintf(f,
            "  --nvml-library PATH     NVML library (libnvidia-ml.so.1; env PFI_NVML_LIBRARY)\n"
            "  --emulate SPEC          emulated GPUs (see 'pfi sweep --help'); alone, it means\n"
            "                          --backend emulated, as in pfi sweep\n"
            "  --replay FILE           recorded telemetry CSV; alone, it means --backend replay\n"
            "  --format table|json     (table)\n"
            "  --record FILE           also sample every GPU for --duration at --interval and\n"
            "                          write the samples as a replay CSV ('-': stdout); read-only\n"
            "  --duration T            recording length (10s); units ms, s, m, h\n"
            "  --interval T            recording period (1s)\n"
            "  -h, --help              this help\n"
            "\n"
            "Exit codes: 0 success, 2 bad command line, 5 the backend cannot start (no driver,\n"
            "no permission) or a GPU is lost.\n");
}

static const char *metric_names[] = {"power",       "energy",        "sm_clock",    "mem_clock",
                                     "gpu_util",    "mem_util",      "temperature", "clock_reasons",
                                     "dram_active", "tensor_active", "sm_active"};
#define N_METRICS (sizeof metric_names / sizeof metric_names[0])

static void limit_cell(char *buf, size_t len, const pfi_gpu_limits *l, unsigned bit, int k,
                       uint32_t mw)
{
    if (l->valid & bit)
        snprintf(buf, len, "%.2f", mw / 1000.0);
    else
        snprintf(buf, len, "n/a (%s)", pfi_strerror(l->err[k]));
}

/* Sample every GPU on absolute deadlines; write the replay CSV (pfi/gpu.h) atomically. */
static int record_samples(pfi_gpu *g, unsigned n, const char *path, double duration_s,
                          double interval_s)
{
    cli_output o;
    if (!cli_output_open(&o, path))
        return PFI_EXIT_OUTPUT;
    hw_record_header(o.f);
    double t0 = pfi_gpu_now_s(g);
    size_t ticks = (size_t)floor(duration_s / interval_s + 1e-9);
    int rc = PFI_EXIT_OK;
    for (size_t k = 1; k <= ticks && rc == PFI_EXIT_OK; k++) {
        while (pfi_gpu_sleep_until_s(g, t0 + (double)k * interval_s) == PFI_ERR_INTERRUPTED) {
        }
        for (unsigned i = 0; i < n; i++) {
            pfi_gpu_sample s;
            pfi_gpu_limits l;
            pfi_diag d;
            pfi_error e = pfi_gpu_read_sample(g, i, &s, &d);
            if (e == PFI_OK)
                e = pfi_gpu_read_limits(g, i, &l, &d);
            if (e != PFI_OK) {
                cli_error("GPU %u: %s", i, d.message);
                rc = hw_exit_code(e);
                break;
            }
            hw_record_row(o.f, s.t_s - t0, i, &s, l.valid & PFI_LIMIT_ENFORCED,
                          l.enforced_mw / 1000.0);
        }
    }
    if (rc != PFI_EXIT_OK) {
        cli_output_abort(&o);
        return rc;
    }
    return cli_output_commit(&o) ? PFI_EXIT_OK : PFI_EXIT_OUTPUT;
}

/* What the command line asks. */
typedef struct probe_opts {
    pfi_gpu_config gc;
    bool json;
    const char *record;
    double duration_s, interval_s;
} probe_opts;

/* Parse argv into *o. Returns PFI_EXIT_OK to go on, -1 after --help, else an exit code. */
static int parse_probe_args(int argc, char **argv, probe_opts *o)
{
    static const struct option opts[] = {
        {"backend", required_argument, NULL, 'b'},  {"nvml-library", required_argument, NULL, 'l'},
        {"emulate", required_argument, NULL, 'e'},  {"replay", required_argument, NULL, 'r'},
        {"format", required_argument, NULL, 'f'},   {"record", required_argument, NULL, 'R'},
        {"duration", required_argument, NULL, 'D'}, {"interval", required_argument, NULL, 'I'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    *o = (probe_opts){.gc = {.kind = PFI_GPU_DEFAULT}, .duration_s = 10, .interval_s = 1};
    bool backend_given = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (!pfi_gpu_kind_parse(optarg, &o->gc.kind)) {
                char names[128];
                return cli_usage_bad_value("backend", optarg,
                                           pfi_gpu_kind_names(0, names, sizeof names));
            }
            backend_given = true;
            break;
        case 'l':
            o->gc.library = optarg;
            break;
        case 'e':
            o->gc.emulate = optarg;
            break;
        case 'r':
            o->gc.replay_path = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "table") != 0) {
                return cli_usage_bad_value("format", optarg, "table or json");
            }
            o->json = strcmp(optarg, "json") == 0;
            break;
        case 'R':
            o->record = optarg;
            break;
        case 'D':
        case 'I':
            if (!hw_parse_duration(optarg, c == 'D' ? &o->duration_s : &o->interval_s) ||
                (c == 'I' && !(o->interval_s > 0))) {
                return cli_usage_bad_value(c == 'D' ? "duration" : "interval", optarg,
                                           "a duration like 10s or 500ms");
            }
            break;
        case 'h':
            usage(stdout);
            return -1;
        default:
            return cli_usage_getopt(opts, "h", c, argv);
        }
    }
    if (optind < argc) {
        return cli_usage_unexpected(argv[optind]);
    }
    /* --emulate or --replay names its backend (the one running its own jobs, the one reading
       a file), as pfi sweep infers the emulated one */
    if (o->gc.emulate != NULL && o->gc.replay_path != NULL)
        return cli_usage_error("--emulate and --replay are two backends: give one");
    unsigned need = o->gc.emulate != NULL       ? PFI_GPU_CAP_JOBS
                    : o->gc.replay_path != NULL ? PFI_GPU_CAP_REPLAY_FILE
                                                : 0;
    if (need == 0 || (pfi_gpu_backend_caps(o->gc.kind) & need) != 0)
        return PFI_EXIT_OK;
    char names[128];
    pfi_gpu_kind_names(need, names, sizeof names);
    if (backend_given)
        return cli_usage_error("--%s needs --backend %s (or no --backend)",
                               need == PFI_GPU_CAP_JOBS ? "emulate" : "replay", names);
    for (int k = 0; k < PFI_GPU_KIND_COUNT; k++)
        if ((pfi_gpu_backend_caps((pfi_gpu_kind)k) & need) != 0) {
            o->gc.kind = (pfi_gpu_kind)k;
            break;
        }
    return PFI_EXIT_OK;
}

/* One GPU's entry of the JSON list: identity, every limit (null when missing), metrics. */
static void print_gpu_json(unsigned i, const pfi_gpu_info *info, const pfi_gpu_limits *l,
                           const pfi_gpu_sample *sm)
{
    printf("%s{\"index\": %u, \"uuid\": ", i ? ", " : "", i);
    cli_put_json_text(stdout, info->uuid); /* the driver's texts: quoted, UTF-8 */
    fputs(", \"name\": ", stdout);
    cli_put_json_text(stdout, info->name);
    fputs(", \"limits_w\": {", stdout);
    const char *ln[] = {"current", "enforced", "default", "min", "max"};
    uint32_t lv[] = {l->current_mw, l->enforced_mw, l->default_mw, l->min_mw, l->max_mw};
    for (int k = 0; k < 5; k++) {
        printf("%s\"%s\": ", k ? ", " : "", ln[k]);
        if (l->valid & (1u << k))
            printf("%.3f", lv[k] / 1000.0);
        else
            printf("null");
    }
    printf("}, \"metrics\": {");
    for (size_t k = 0; k < N_METRICS; k++)
        printf("%s\"%s\": %s", k ? ", " : "", metric_names[k],
               (sm->valid & (1u << k)) ? "true" : "false");
    printf("}}");
}

/* One GPU's block of the table: identity, limits (n/a with the reason), metrics, now. */
static void print_gpu_table(unsigned i, const pfi_gpu_info *info, const pfi_gpu_limits *l,
                            const pfi_gpu_sample *sm)
{
    char cur[64], enf[64], def[64], mn[64], mx[64];
    limit_cell(cur, sizeof cur, l, PFI_LIMIT_CURRENT, 0, l->current_mw);
    limit_cell(enf, sizeof enf, l, PFI_LIMIT_ENFORCED, 1, l->enforced_mw);
    limit_cell(def, sizeof def, l, PFI_LIMIT_DEFAULT, 2, l->default_mw);
    limit_cell(mn, sizeof mn, l, PFI_LIMIT_MIN, 3, l->min_mw);
    limit_cell(mx, sizeof mx, l, PFI_LIMIT_MAX, 4, l->max_mw);
    printf("\nGPU %u  %s  %s\n", i, info->name[0] ? info->name : "-",
           info->uuid[0] ? info->uuid : "-");
    printf("  power limit W: current %s, enforced %s, default %s, min %s, max %s\n", cur, enf, def,
           mn, mx);
    printf("  metrics:");
    for (size_t k = 0; k < N_METRICS; k++)
        printf(" %s%s", metric_names[k], (sm->valid & (1u << k)) ? "" : "(no)");
    printf("\n");
    if (sm->valid & PFI_SAMPLE_POWER)
        printf("  now: %.1f W", sm->power_w);
    if (sm->valid & PFI_SAMPLE_SM_CLOCK)
        printf(", SM %.0f MHz", sm->sm_clock_mhz);
    if (sm->valid & PFI_SAMPLE_TEMP)
        printf(", %.0f C", sm->temp_c);
    if (sm->valid & (PFI_SAMPLE_POWER | PFI_SAMPLE_SM_CLOCK | PFI_SAMPLE_TEMP))
        printf("\n");
}

/* List every GPU of g; a GPU that cannot be read is reported and skipped. Returns the exit
 * code of the last such GPU, else PFI_EXIT_OK. */
static int list_gpus(pfi_gpu *g, unsigned n, bool json)
{
    int rc = PFI_EXIT_OK;
    if (json)
        printf("{\"backend\": \"%s\", \"gpus\": [", pfi_gpu_backend_name(g));
    else
        printf("backend %s: %u GPU(s)\n", pfi_gpu_backend_name(g), n);
    for (unsigned i = 0; i < n; i++) {
        pfi_gpu_info info;
        pfi_gpu_limits l;
        pfi_gpu_sample sm;
        pfi_diag di;
        pfi_error e = pfi_gpu_get_info(g, i, &info, &di);
        if (e == PFI_OK)
            e = pfi_gpu_read_limits(g, i, &l, &di);
        if (e == PFI_OK)
            e = pfi_gpu_read_sample(g, i, &sm, &di);
        if (e != PFI_OK) {
            cli_error("GPU %u: %s", i, di.message);
            rc = hw_exit_code(e);
            continue;
        }
        if (json)
            print_gpu_json(i, &info, &l, &sm);
        else
            print_gpu_table(i, &info, &l, &sm);
        if ((l.valid & PFI_LIMIT_CURRENT) && (l.valid & PFI_LIMIT_ENFORCED) &&
            l.enforced_mw != l.current_mw)
            cli_error("warning: GPU %u: enforced limit %.2f W differs from the requested %.2f W "
                      "(another limiter); runs here are at the enforced limit",
                      i, l.enforced_mw / 1000.0, l.current_mw / 1000.0);
    }
    if (json)
        printf("]}\n");
    return rc;
}

int cmd_probe(int argc, char **argv)
{
    probe_opts o;
    int rc = parse_probe_args(argc, argv, &o);
    if (rc != PFI_EXIT_OK)
        return rc < 0 ? PFI_EXIT_OK : rc;
    pfi_gpu *g;
    pfi_diag d;
    pfi_error e = hw_gpu_open(&o.gc, &g, &d);
    if (e != PFI_OK) {
        cli_error("%s", d.message[0] ? d.message : pfi_strerror(e));
        return hw_exit_code(e);
    }
    unsigned n = 0;
    if ((e = pfi_gpu_count(g, &n, &d)) != PFI_OK) {
        cli_error("%s", d.message);
        pfi_gpu_close(g);
        return hw_exit_code(e);
    }
    /* GPM needs two samples: the first primes it */
    for (unsigned i = 0; i < n; i++) {
        pfi_gpu_sample sm;
        pfi_gpu_read_sample(g, i, &sm, NULL);
    }
    pfi_gpu_sleep_until_s(g, pfi_gpu_now_s(g) + 0.2);
    rc = list_gpus(g, n, o.json);
    if (rc == PFI_EXIT_OK && o.record != NULL)
        rc = record_samples(g, n, o.record, o.duration_s, o.interval_s);
    pfi_gpu_close(g);
    if (fflush(stdout) != 0)
        return PFI_EXIT_OUTPUT;
    return rc;
}
