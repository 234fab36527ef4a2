/*
 * pfid — the pfi node agent. See docs/pfid.md and `pfid --help`.
 *
 * The main thread owns the process's signals (blocked everywhere, taken with sigtimedwait,
 * so no work happens in a signal handler) and the lease clock; the sampler thread reads the
 * GPUs; libmicrohttpd's threads answer requests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "opterr.h"
#include "pfi/fit.h"
#include "slurm.h"
#include "usage_wrap.h"

#ifndef PFI_VERSION
#error "PFI_VERSION is set by CMakeLists.txt (project VERSION)"
#endif
#define DEFAULT_CONFIG "/etc/pfid/pfid.conf"
#define MAX_OVERRIDES 64

static const char usage_head[] =
    "Usage: pfid [OPTIONS]\n"
    "The pfi node agent: samples this node's GPUs, maps them to jobs, serves Prometheus\n"
    "metrics (GET /metrics) and an authenticated cap API (GET /v1/state, PUT and DELETE\n"
    "/v1/caps; docs/agent-api.md). Operator guide: docs/pfid.md.\n"
    "\n"
    "Options (each overrides the config file's key of the same meaning):\n"
    "  -c, --config FILE      config file (default " DEFAULT_CONFIG " when it exists)\n"
    "  -l, --listen ADDR:PORT listen address (listen; default 127.0.0.1:9400; port 0: any)\n";
/* then -b, --backend (usage_backend: the names come from the backends' table) */
static const char usage_tail[] =
    "      --emulate SPEC     emulated GPUs, key=value,... (emulate; see pfi sweep --help)\n"
    "  -i, --interval DUR     sampling interval (interval; default 1s)\n"
    "  -t, --token-file FILE  bearer token file, mode 0600 (token_file)\n"
    "  -j, --journal FILE     cap journal (journal; default /var/lib/pfid/cap-journal)\n"
    "  -s, --set KEY=VALUE    any config key (repeatable)\n"
    "  -v, --verbose          log debug lines too (log_level = debug)\n"
    "  -q, --quiet            log warnings and errors only\n"
    "      --check            check the configuration, the token file and the journal's\n"
    "                         directory (exists, writable) and exit (0 valid, 2 not)\n"
    "  -h, --help             this help\n"
    "      --version          print the version and exit\n"
    "\n"
    "Signals: SIGTERM / SIGINT stop cleanly (caps restored unless shutdown = hold);\n"
    "SIGHUP reloads the config file, the token and the jobs mapping file.\n"
    "Exit status: 0 clean stop, 1 the caps could not all be restored, 2 bad usage or config\n"
    "(an emulate spec or replay file that cannot be opened included), 3 the NVML GPUs or the\n"
    "listen socket could not be opened (--version: output not written).\n";

/* Where the help's descriptions start, and its width. */
#define USAGE_COLUMN 25
#define USAGE_WIDTH 80

/* "  -b, --backend NAME     nvml, emulated or replay (backend; default nvml)": every backend
 * (pfi_gpu_kind_names), wrapped to USAGE_WIDTH by the CLI's wrapper, continued at
 * USAGE_COLUMN. */
static void usage_backend(FILE *f)
{
    char names[512], text[600], lead[USAGE_COLUMN + 1];
    snprintf(text, sizeof text, "%s (backend; default %s)",
             pfi_gpu_kind_names(0, names, sizeof names), pfi_gpu_kind_name(PFI_GPU_DEFAULT));
    snprintf(lead, sizeof lead, "%-*s", USAGE_COLUMN, "  -b, --backend NAME");
    cli_usage_wrap(f, lead, USAGE_COLUMN, USAGE_WIDTH, text);
}

static void print_usage(FILE *f)
{
    fputs(usage_head, f);
    usage_backend(f);
    fputs(usage_tail, f);
}

typedef struct options {
    char config[PFID_PATH_MAX];
    bool config_given;
    char *keys[MAX_OVERRIDES], *values[MAX_OVERRIDES];
    const char *flags[MAX_OVERRIDES]; /* the option that gave it ("interval"; NULL: --set) */
    int n;
    bool check;
} options;

/* Defaults, then the file, then the command line. 0 or -1 (printed). */
static int build_config(const options *o, pfid_config *cfg)
{
    pfid_config_defaults(cfg);
    pfi_diag d;
    pfi_diag_clear(&d);
    char buf[1200];
    if (o->config_given || access(o->config, F_OK) == 0) {
        pfi_error e = pfid_config_load(cfg, o->config, &d);
        if (e != PFI_OK) {
            LOG_ERROR("config: %s", pfi_diag_format(&d, buf, sizeof buf));
            return -1;
        }
    }
    for (int k = 0; k < o->n; k++) {
        pfi_diag_clear(&d);
        if (pfid_config_set(cfg, o->keys[k], o->values[k], &d) != PFI_OK) {
            /* "KEY: bad value 'V': expected ..." said of the option that gave it */
            size_t kl = strlen(o->keys[k]);
            const char *rest = strncmp(d.message, o->keys[k], kl) == 0 && d.message[kl] == ':'
                                   ? d.message + kl
                                   : NULL;
            if (o->flags[k] != NULL && rest != NULL)
                LOG_ERROR("--%s%s", o->flags[k], rest);
            else
                LOG_ERROR("--set %s", d.message);
            return -1;
        }
    }
    pfi_diag_clear(&d);
    if (pfid_config_check(cfg, &d) != PFI_OK) {
        LOG_ERROR("config: %s", d.message);
        return -1;
    }
    return 0;
}

/* The library the backend loads: nvml_library when configured, else the backend's
 * environment variable (pfi_gpu_library_env: PFI_NVML_LIBRARY), else NULL (its default). */
static const char *gpu_library(pfi_gpu_kind kind, const char *configured)
{
    if (configured[0] != '\0')
        return configured;
    const char *env = pfi_gpu_library_env(kind);
    const char *v = env != NULL ? getenv(env) : NULL;
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* Read the bearer tokens (pfi_http_tokens_load: one a line, named, scoped; opened without
 * blocking; a regular file owned by us, no group or other access). A missing file: no token
 * (every write refused, said once). */
static int load_tokens(const char *path, pfi_http_tokens *out)
{
    memset(out, 0, sizeof *out);
    if (path[0] == '\0')
        return 0;
    pfi_diag d;
    pfi_diag_clear(&d);
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        LOG_WARN("token file %s does not exist: every write will be refused (401)", path);
        return 0;
    }
    pfi_error e = pfi_http_tokens_load(path, out, &d);
    if (e != PFI_OK) {
        LOG_ERROR("%s", d.message);
        return -1;
    }
    for (size_t k = pfi_http_tokens_short(out, 0); k < out->n;
         k = pfi_http_tokens_short(out, k + 1))
        LOG_WARN("token %s in %s is short (%zu bytes, under %d): use 32 random bytes or more",
                 out->t[k].name, path, out->t[k].len, PFI_HTTP_TOKEN_MIN_BYTES);
    return 0;
}

/* --check: the journal's directory exists and pfid may create the journal in it (pfid
 * writes the original limits there before the first change). 0, or -1 (logged, naming it). */
static int check_journal_dir(const char *journal)
{
    if (journal[0] == '\0')
        return 0;
    char dir[sizeof((pfid_config *)0)->journal];
    snprintf(dir, sizeof dir, "%s", journal);
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    struct stat st;
    if (stat(dir, &st) != 0) {
        LOG_ERROR("journal %s: directory %s: %s (create it: install -d -m 700 %s)", journal, dir,
                  strerror(errno), dir);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        LOG_ERROR("journal %s: %s is not a directory", journal, dir);
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        LOG_ERROR("journal %s: directory %s is not writable by uid %u: %s", journal, dir,
                  (unsigned)geteuid(), strerror(errno));
        return -1;
    }
    return 0;
}

/* pfi_model: the `pfi fit` model behind pfi_job_pfi_estimate (*out NULL when none is
 * configured). Every feature it names must be one pfid reads. 0 or -1 (logged). */
static int load_model(const char *path, pfi_fit_model **out)
{
    *out = NULL;
    if (path[0] == '\0')
        return 0;
    pfi_diag d;
    pfi_diag_clear(&d);
    char buf[1200];
    if (pfi_fit_model_load(path, out, &d) != PFI_OK) {
        LOG_ERROR("pfi_model: %s", pfi_diag_format(&d, buf, sizeof buf));
        return -1;
    }
    for (size_t f = 0; f < (*out)->p; f++) {
        if (!pfid_model_feature_known((*out)->features[f])) {
            LOG_ERROR("pfi_model %s: feature '%s' is not one pfid reads (dcgm_dram_active, "
                      "dcgm_mem_copy_util, dcgm_tensor_active, dcgm_sm_active, dcgm_gpu_util, "
                      "dcgm_sm_clock_mhz, dcgm_mem_clock_mhz, dcgm_power_w and their products)",
                      path, (*out)->features[f]);
            pfi_fit_model_destroy(*out);
            *out = NULL;
            return -1;
        }
    }
    return 0;
}

/* SIGHUP: the config file, the token and the mapping file again; what needs a restart is
 * named and kept. */
static void reload(pfid_agent *a, const options *o)
{
    pfid_config nc;
    LOG_INFO("SIGHUP: reloading %s", a->config_path[0] ? a->config_path : "(no config file)");
    if (build_config(o, &nc) != 0) {
        LOG_ERROR("reload failed; the running configuration is kept");
        return;
    }
    static pfi_http_tokens tok; /* large: not on the stack; SIGHUP runs on the main thread */
    if (load_tokens(nc.token_file, &tok) != 0) {
        LOG_ERROR("reload failed; the running configuration is kept");
        return;
    }
    pfi_fit_model *model;
    if (load_model(nc.pfi_model, &model) != 0) {
        LOG_ERROR("reload failed; the running configuration is kept");
        return;
    }
    if (strcmp(nc.listen, a->cfg.listen) != 0 || nc.backend != a->cfg.backend ||
        strcmp(nc.emulate, a->cfg.emulate) != 0 || strcmp(nc.journal, a->cfg.journal) != 0 ||
        nc.threads != a->cfg.threads || nc.max_connections != a->cfg.max_connections ||
        nc.max_body != a->cfg.max_body || nc.auth_reads != a->cfg.auth_reads ||
        nc.jobs != a->cfg.jobs || nc.clock_emulated != a->cfg.clock_emulated)
        LOG_WARN("listen, backend, emulate, journal, jobs, clock, threads, max_connections, "
                 "max_body and auth_reads change only at restart");
    pfid_sampler_stop(a);
    pthread_mutex_lock(&a->caps_lock);
    pthread_mutex_lock(&a->snap_lock);
    a->tokens = tok;
    a->cfg.interval_s = nc.interval_s;
    a->cfg.stale_s = nc.stale_s;
    a->cfg.lease_max_s = nc.lease_max_s;
    a->cfg.lease_policy = nc.lease_policy;
    a->cfg.hold_max_s = nc.hold_max_s;
    a->cfg.shutdown_policy = nc.shutdown_policy;
    a->cfg.tput_stale_s = nc.tput_stale_s;
    a->cfg.jobs_refresh_s = nc.jobs_refresh_s;
    memcpy(a->cfg.jobs_file, nc.jobs_file, sizeof nc.jobs_file);
    memcpy(a->cfg.tlogs, nc.tlogs, sizeof nc.tlogs);
    a->cfg.n_tlogs = nc.n_tlogs;
    memset(a->log_size, 0, sizeof a->log_size);
    a->cfg.log_level = nc.log_level;
    pfid_log_set_level(nc.log_level);
    a->cfg.dcgm_names = nc.dcgm_names;
    memcpy(a->cfg.node_power_file, nc.node_power_file, sizeof nc.node_power_file);
    a->cfg.node_power_kind = nc.node_power_kind;
    a->cfg.node_power_includes_gpus = nc.node_power_includes_gpus;
    a->cfg.node_power_frozen_s = nc.node_power_frozen_s;
    a->node.power_w = a->node.counter_uj = a->node.last_v = NAN; /* a new source starts afresh */
    a->node.err[0] = '\0';
    a->node.frozen = false;
    a->node.unchanged_rounds = 0;
    memcpy(a->cfg.pfi_model, nc.pfi_model, sizeof nc.pfi_model);
    pfi_fit_model_destroy(a->model);
    a->model = model; /* a new model starts its estimates afresh */
    a->n_pfi_est = 0;
    pthread_mutex_unlock(&a->snap_lock);
    pthread_mutex_unlock(&a->caps_lock);
    if (a->cfg.jobs == PFID_JOBS_STATIC)
        pfid_jobs_load_mapping(a);
    if (!a->caps_available && a->capctl == NULL) {
        pthread_mutex_lock(&a->caps_lock);
        pfid_caps_start(a);
        pthread_mutex_unlock(&a->caps_lock);
        if (a->caps_available)
            LOG_INFO("cap control available");
    }
    pfid_sampler_start(a);
}

static int parse_args(int argc, char **argv, options *o, pfid_config *cfg)
{
    static const struct option longs[] = {
        {"config", required_argument, NULL, 'c'},   {"listen", required_argument, NULL, 'l'},
        {"backend", required_argument, NULL, 'b'},  {"emulate", required_argument, NULL, 'E'},
        {"interval", required_argument, NULL, 'i'}, {"token-file", required_argument, NULL, 't'},
        {"journal", required_argument, NULL, 'j'},  {"set", required_argument, NULL, 's'},
        {"verbose", no_argument, NULL, 'v'},        {"quiet", no_argument, NULL, 'q'},
        {"check", no_argument, NULL, 'C'},          {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},        {NULL, 0, NULL, 0}};
    snprintf(o->config, sizeof o->config, "%s", DEFAULT_CONFIG);
    int ch;
    opterr = 0; /* the one wording of pfi's verbs (opterr.h) */
    while ((ch = getopt_long(argc, argv, "c:l:b:i:t:j:s:vqh", longs, NULL)) != -1) {
        const char *key = NULL, *flag = NULL;
        char *val = optarg;
        switch (ch) {
        case 'c':
            if (strlen(optarg) >= sizeof o->config) {
                LOG_ERROR("--config: path too long");
                return 2;
            }
            snprintf(o->config, sizeof o->config, "%s", optarg);
            o->config_given = true;
            continue;
        case 'l':
            key = "listen";
            flag = "listen";
            break;
        case 'b':
            key = "backend";
            flag = "backend";
            break;
        case 'E':
            key = "emulate";
            flag = "emulate";
            break;
        case 'i':
            key = "interval";
            flag = "interval";
            break;
        case 't':
            key = "token_file";
            flag = "token-file";
            break;
        case 'j':
            key = "journal";
            flag = "journal";
            break;
        case 'v':
            key = "log_level";
            val = "debug";
            break;
        case 'q':
            key = "log_level";
            val = "warning";
            break;
        case 's': {
            char *eq = strchr(optarg, '=');
            if (eq == NULL) {
                LOG_ERROR("--set: want KEY=VALUE, got '%s'", optarg);
                return 2;
            }
            *eq = '\0';
            key = optarg;
            val = eq + 1;
            break;
        }
        case 'C':
            o->check = true;
            continue;
        case 'h':
            print_usage(stdout);
            return 0;
        case 'V':
            printf("pfid %s\n", PFI_VERSION);
            if (fflush(stdout) != 0 || ferror(stdout)) {
                LOG_ERROR("cannot write to standard output");
                return 3;
            }
            return 0;
        default: {
            char msg[512];
            LOG_ERROR("%s",
                      opterr_getopt(msg, sizeof msg, "pfid", longs, "c:l:b:i:t:j:s:vqh", ch, argv));
            return 2;
        }
        }
        if (o->n == MAX_OVERRIDES) {
            LOG_ERROR("too many options");
            return 2;
        }
        o->keys[o->n] = (char *)key;
        o->values[o->n] = val;
        o->flags[o->n] = flag;
        o->n++;
    }
    if (optind < argc) {
        char msg[512];
        LOG_ERROR("%s", opterr_unexpected(msg, sizeof msg, "pfid", argv[optind]));
        return 2;
    }
    if (build_config(o, cfg) != 0)
        return 2;
    return -1;
}

int main(int argc, char **argv)
{
    static pfid_agent agent; /* large (GPU rings); one per process */
    pfid_agent *a = &agent;
    options o;
    memset(&o, 0, sizeof o);
    int rc = parse_args(argc, argv, &o, &a->cfg);
    if (rc >= 0)
        return rc;
    pfid_log_set_level(a->cfg.log_level);
    if (o.config_given || access(o.config, F_OK) == 0)
        snprintf(a->config_path, sizeof a->config_path, "%s", o.config);
    if (load_tokens(a->cfg.token_file, &a->tokens) != 0)
        return 2;
    pfi_diag cd;
    pfi_diag_clear(&cd);
    if (pfid_listen_check(&a->cfg, a->tokens.n > 0, &cd) != PFI_OK) {
        LOG_ERROR("config: %s", cd.message);
        return 2;
    }
    if (load_model(a->cfg.pfi_model, &a->model) != 0)
        return 2;
    if (o.check) {
        pfi_fit_model_destroy(a->model);
        if (check_journal_dir(a->cfg.journal) != 0)
            return 2;
        /* the emulated and replay backends are configuration alone (the emulate spec, its
         * GPU counts, the replay file): opened here as start opens them, so --check judges
         * what start would refuse (the virtual-clock backends: no hardware behind them).
         * nvml is left to start (the driver is the host's, not the configuration's). */
        if (pfi_gpu_backend_caps(a->cfg.backend) & PFI_GPU_CAP_VIRTUAL_CLOCK) {
            pfi_gpu_config cc = {.kind = a->cfg.backend,
                                 .emulate = a->cfg.emulate[0] ? a->cfg.emulate : NULL,
                                 .replay_path = a->cfg.replay};
            pfi_gpu *g = NULL;
            pfi_diag gd;
            pfi_diag_clear(&gd);
            pfi_error ge = pfi_gpu_open(&cc, &g, &gd);
            if (ge != PFI_OK) {
                char gm[sizeof gd.message]; /* a replay file's FILE:LINE with the message */
                LOG_ERROR("config: the %s backend: %s: %s", pfi_gpu_kind_name(a->cfg.backend),
                          pfi_strerror(ge), pfi_diag_format(&gd, gm, sizeof gm));
                return ge == PFI_ERR_NOMEM ? 3 : 2;
            }
            pfi_gpu_close(g);
        }
        printf("pfid: configuration valid\n");
        return 0;
    }
    pfid_agent_init(a);

    /* signals: taken synchronously by this thread only */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (a->cfg.clock_emulated)
        pfid_clock_emulate();
    pfi_gpu_config gc = {.kind = a->cfg.backend,
                         .library = gpu_library(a->cfg.backend, a->cfg.nvml_library),
                         .emulate = a->cfg.emulate[0] ? a->cfg.emulate : NULL,
                         .replay_path = a->cfg.replay};
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = pfi_gpu_open(&gc, &a->gpu, &d);
    if (e != PFI_OK) {
        char dm[sizeof d.message]; /* a replay file's FILE:LINE with the message */
        LOG_ERROR("cannot open the %s backend: %s: %s", pfi_gpu_kind_name(a->cfg.backend),
                  pfi_strerror(e), pfi_diag_format(&d, dm, sizeof dm));
        /* emulated and replay GPUs are the configuration's (the emulate spec, the replay
         * file): their refusal is a bad configuration (2); nvml's is the host's (3) */
        bool conf_only = (pfi_gpu_backend_caps(a->cfg.backend) & PFI_GPU_CAP_VIRTUAL_CLOCK) != 0;
        return conf_only && e != PFI_ERR_NOMEM ? 2 : 3;
    }
    LOG_INFO("pfid %s: %s backend, hostname %s, sampling every %g s", PFI_VERSION,
             pfi_gpu_backend_name(a->gpu), a->hostname, a->cfg.interval_s);
    int status = 0;
    struct pfi_http_server *http = NULL;
    if (pfid_sampler_init(a) != 0) {
        status = 3;
        goto out;
    }
    if (a->cfg.jobs == PFID_JOBS_STATIC && pfid_jobs_load_mapping(a) != 0) {
        status = 2;
        goto out;
    }
    pfid_caps_start(a);
    if (a->caps_available)
        LOG_INFO("cap control on %u GPU(s); journal %s; lease policy %s (hold_max %g s)", a->n_gpus,
                 a->cfg.journal, a->cfg.lease_policy == PFID_POLICY_HOLD ? "hold" : "restore",
                 a->cfg.hold_max_s);
    else
        LOG_WARN("cap control unavailable: %s", a->caps_why);
    if (pfid_sampler_start(a) != 0) {
        status = 3;
        goto out;
    }
    http = pfid_http_start(a);
    if (http == NULL || pfid_slurm_start(a) != 0) {
        status = 3;
        goto out;
    }
    for (;;) {
        double now = pfid_mono_s();
        double wait = pfid_caps_next_s(a, now, 1.0);
        struct timespec ts = {.tv_sec = (time_t)wait,
                              .tv_nsec = (long)((wait - (double)(time_t)wait) * 1e9)};
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGTERM || sig == SIGINT) {
            LOG_INFO("%s: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
            break;
        }
        if (sig == SIGHUP)
            reload(a, &o);
        if (!pfid_clock_emulated()) /* emulated: each advance checks the leases (clock.c) */
            pfid_caps_tick(a, pfid_mono_s());
    }
out:
    pfid_http_stop(http);
    pfid_sampler_stop(a);
    pfid_slurm_stop(a); /* after the readers of the registry (scrapes, the sampler) */
    pfid_caps_stop(a);
    if (a->restore_pending && status == 0)
        status = 1;
    pfi_gpu_close(a->gpu);
    pfid_mapping_clear(&a->mapping);
    free(a->gpus);
    pfi_fit_model_destroy(a->model);
    LOG_INFO("stopped (exit %d)", status);
    return status;
}
