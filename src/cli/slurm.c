/*
 * pfi slurm prolog | epilog — tell the node's pfid that a Slurm job starts (its GPUs, user
 * and pfi options) or ends (drop the mapping, restore its GPUs now, write its accounting into
 * the job's AdminComment): the same as pfi_spank.so, for sites that run Prolog=/Epilog=
 * scripts instead of SPANK plugins. The values come from the environment slurmd gives a
 * prolog (SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_GPUS) unless the flags give them.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pfi/memory.h"
#include "pfi/topology.h"
#include "slurm/proto.h"
#include "slurm_ctl.h"

#define DEFAULT_SOCKET "/run/pfid/slurm.sock"
#define DEFAULT_SCONTROL "/usr/bin/scontrol"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pfi slurm prolog [OPTIONS]\n"
            "       pfi slurm epilog [OPTIONS]\n"
            "       pfi slurm admit --controller URL [OPTIONS]   (see pfi slurm admit --help)\n"
            "\n"
            "prolog: register the job with the node's pfid (its GPUs are the job's from now on,\n"
            "busy or idle). epilog: end it (pfid drops the mapping and puts the job's GPUs back\n"
            "on their original power limits at once), print the job's accounting (JSON) and\n"
            "write it into the job's AdminComment with scontrol. Run them from slurm.conf's\n"
            "Prolog= and Epilog= scripts where pfi_spank.so is not used. A pfid that does not\n"
            "answer is reported on stderr and the job goes on (exit 0), unless --strict.\n"
            "\n"
            "options:\n"
            "  --job ID                 the job id (SLURM_JOB_ID)\n"
            "  --user NAME              the job's user (SLURM_JOB_USER)\n"
            "  --gpus LIST              its GPUs on this node, e.g. 0,1 or 0-3 (SLURM_JOB_GPUS)\n"
            "  --class CLASS            workload class (dense, moe-pt, moe-ft, ... or free text)\n"
            "  --flex TIER              flexibility tier: %s\n"
            "  --min-throughput FRAC    SLA floor, a fraction of the uncapped throughput\n"
            "  --pfi VALUE              a known PFI of the job\n"
            "  --socket PATH            pfid's registration socket (%s)\n"
            "  --timeout S              at most S seconds for pfid and scontrol (5)\n"
            "  --scontrol PATH          scontrol to write AdminComment with (%s)\n"
            "  --no-comment             epilog: print the accounting, do not write AdminComment\n"
            "  --strict                 exit 1 when pfid does not answer or refuses\n"
            "  -h, --help               this help\n"
            "\n"
            "Environment (prolog): SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_GPUS (else\n"
            "CUDA_VISIBLE_DEVICES), PFI_CLASS, PFI_FLEX, PFI_MIN_THROUGHPUT, PFI_PFI.\n"
            "\n"
            "Exit codes: 0 done (or pfid unreachable without --strict), 1 pfid refused or did\n"
            "not answer (--strict), 2 bad command line or a bad value.\n",
            pfi_slurm_tier_names(), DEFAULT_SOCKET, DEFAULT_SCONTROL);
}

static const char *env_or(const char *given, const char *name)
{
    if (given != NULL)
        return given;
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

static int slurm_admit(int argc, char **argv);

int cmd_slurm(int argc, char **argv)
{
    enum {
        O_JOB = 1000,
        O_USER,
        O_GPUS,
        O_CLASS,
        O_FLEX,
        O_MIN,
        O_PFI,
        O_SOCK,
        O_TMO,
        O_SCTL,
        O_NOC,
        O_STRICT
    };
    static const struct option opts[] = {
        {"job", required_argument, NULL, O_JOB},
        {"user", required_argument, NULL, O_USER},
        {"gpus", required_argument, NULL, O_GPUS},
        {"class", required_argument, NULL, O_CLASS},
        {"flex", required_argument, NULL, O_FLEX},
        {"min-throughput", required_argument, NULL, O_MIN},
        {"pfi", required_argument, NULL, O_PFI},
        {"socket", required_argument, NULL, O_SOCK},
        {"timeout", required_argument, NULL, O_TMO},
        {"scontrol", required_argument, NULL, O_SCTL},
        {"no-comment", no_argument, NULL, O_NOC},
        {"strict", no_argument, NULL, O_STRICT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *job = NULL, *user = NULL, *gpus = NULL, *cls = NULL, *flex = NULL, *min_tput = NULL,
               *pfi = NULL, *sock = DEFAULT_SOCKET, *sctl = DEFAULT_SCONTROL;
    double timeout_s = 5;
    bool no_comment = false, strict = false;
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return PFI_EXIT_OK;
    }
    if (argc >= 2 && strcmp(argv[1], "admit") == 0) {
        cli_set_command("slurm admit");
        return slurm_admit(argc - 1, argv + 1);
    }
    if (argc >= 2 && argv[1][0] == '-')
        return cli_usage_unknown(argv[1]);
    if (argc < 2) {
        cli_error("prolog, epilog or admit expected (see 'pfi slurm --help')");
        return PFI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "prolog") != 0 && strcmp(argv[1], "epilog") != 0)
        return cli_usage_error("unknown subcommand '%s' (expected 'prolog', 'epilog' or 'admit'; "
                               "see 'pfi slurm --help')",
                               argv[1]);
    bool prolog = strcmp(argv[1], "prolog") == 0;
    cli_set_command(prolog ? "slurm prolog" : "slurm epilog");
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_JOB:
            job = optarg;
            break;
        case O_USER:
            user = optarg;
            break;
        case O_GPUS:
            gpus = optarg;
            break;
        case O_CLASS:
            cls = optarg;
            break;
        case O_FLEX:
            flex = optarg;
            break;
        case O_MIN:
            min_tput = optarg;
            break;
        case O_PFI:
            pfi = optarg;
            break;
        case O_SOCK:
            sock = optarg;
            break;
        case O_SCTL:
            sctl = optarg;
            break;
        case O_NOC:
            no_comment = true;
            break;
        case O_STRICT:
            strict = true;
            break;
        case O_TMO:
            if (!cli_parse_double(optarg, &timeout_s) || !(timeout_s > 0) || timeout_s > 600) {
                return cli_usage_bad_value("timeout", optarg, "a number of seconds in (0, 600]");
            }
            break;
        case 'h':
            usage(stdout);
            return PFI_EXIT_OK;
        default:
            return cli_usage_getopt(opts, "h", c, argv);
        }
    }
    if (optind < argc) {
        return cli_usage_unexpected(argv[optind]);
    }
    job = env_or(job, "SLURM_JOB_ID");
    if (job == NULL)
        job = env_or(NULL, "SLURM_JOBID");
    char req[PFI_SLURM_REQ_MAX], err[600];
    bool built;
    if (prolog) {
        user = env_or(user, "SLURM_JOB_USER");
        gpus = env_or(gpus, "SLURM_JOB_GPUS");
        gpus = env_or(gpus, "CUDA_VISIBLE_DEVICES");
        cls = env_or(cls, "PFI_CLASS");
        flex = env_or(flex, "PFI_FLEX");
        min_tput = env_or(min_tput, "PFI_MIN_THROUGHPUT");
        pfi = env_or(pfi, "PFI_PFI");
        built = pfi_slurm_start_request(req, sizeof req, job, user, gpus, cls, flex, min_tput, pfi,
                                        err, sizeof err);
    } else {
        built = pfi_slurm_end_request(req, sizeof req, job, err, sizeof err);
    }
    if (!built) {
        cli_error("%s", err);
        return PFI_EXIT_USAGE;
    }
    char reply[PFI_SLURM_REPLY_MAX];
    if (pfi_slurm_call(sock, req, timeout_s, reply, sizeof reply, err, sizeof err) != 0) {
        cli_error("job %s: %s%s", job, err, strict ? "" : " (the job goes on without pfi)");
        return strict ? PFI_EXIT_DATA : PFI_EXIT_OK;
    }
    if (strstr(reply, "\"ok\":true") == NULL) {
        cli_error("job %s: pfid refused: %s", job, reply);
        return strict ? PFI_EXIT_DATA : PFI_EXIT_OK;
    }
    printf("%s\n", reply);
    char opts_text[1024];
    if (prolog && !no_comment &&
        pfi_slurm_options_comment(opts_text, sizeof opts_text, cls, flex, min_tput, pfi) &&
        pfi_slurm_admin_comment(sctl, job, opts_text, timeout_s, err, sizeof err) != 0) {
        cli_error("job %s: options not written into AdminComment: %s", job, err);
        return strict ? PFI_EXIT_DATA : PFI_EXIT_OK;
    }
    if (!prolog && !no_comment) {
        const char *acct = strstr(reply, "\"accounting\":");
        char text[PFI_SLURM_REPLY_MAX];
        if (acct != NULL) {
            /* the accounting object: from its '{' to the reply's last '}' but one */
            const char *open = strchr(acct, '{'), *close = strrchr(reply, '}');
            size_t n = open && close && close > open ? (size_t)(close - open) : 0;
            while (n > 0 && open[n - 1] != '}')
                n--;
            snprintf(text, sizeof text, "pfi:%.*s", (int)n, open ? open : "");
            if (n > 0 &&
                pfi_slurm_admin_comment(sctl, job, text, timeout_s, err, sizeof err) != 0) {
                cli_error("job %s: AdminComment not written: %s", job, err);
                return strict ? PFI_EXIT_DATA : PFI_EXIT_OK;
            }
        }
    }
    return PFI_EXIT_OK;
}

/* ---- pfi control --slurm ------------------------------------------------------------------ */

#define RUN_MAX_BYTES (64u << 20)
#define RUN_TIMEOUT_S 10.0

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Run argv (no shell), its stdout into *out (malloc'ed, NUL-terminated, *len bytes), at most
 * timeout_s. Returns the exit status (0..255), or -1 (err says why: cannot start, killed on
 * timeout, output over RUN_MAX_BYTES).
 */
static int run_capture(char *const argv[], double timeout_s, char **out, size_t *len, char *err,
                       size_t err_cap)
{
    *out = NULL;
    *len = 0;
    int p[2];
    if (pipe(p) != 0) {
        snprintf(err, err_cap, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        snprintf(err, err_cap, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    double deadline = mono_now() + timeout_s;
    bool over = false, late = false;
    while (buf != NULL) {
        double left = deadline - mono_now();
        if (left <= 0) {
            late = true;
            break;
        }
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        int r = poll(&pf, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        if (n + 4096 > cap) {
            if (cap >= RUN_MAX_BYTES) {
                over = true;
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t got = read(p[0], buf + n, cap - n - 1);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(p[0]);
    int status = 0;
    if (late || over)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (buf == NULL || late || over) {
        snprintf(err, err_cap, "%s: %s", argv[0],
                 buf == NULL ? "out of memory"
                 : late      ? "no answer in time (killed)"
                             : "answer too large");
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        snprintf(err, err_cap, "%s: cannot run it", argv[0]);
        return 127;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void cli_slurm_init(cli_slurm *s)
{
    memset(s, 0, sizeof *s);
    s->squeue = "/usr/bin/squeue";
    s->scontrol = DEFAULT_SCONTROL;
    s->quiet_periods = 1000;
}

/* --qos-band QOS=BAND,... into s->qos, s->qos_band (replacing an earlier one). */
static bool qos_band_parse(cli_slurm *s, const char *arg)
{
    s->nqos = 0;
    const char *p = arg;
    while (*p != '\0') {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq == NULL || eq == p || (size_t)(eq - p) >= sizeof s->qos[0] ||
            s->nqos == CLI_SLURM_QOS_MAX) {
            cli_error("--qos-band: '%.*s': expected QOS=BAND (at most %d pairs)",
                      (int)(len > 80 ? 80 : len), p, CLI_SLURM_QOS_MAX);
            return false;
        }
        for (const char *c = p; c < eq; c++)
            if (isspace((unsigned char)*c) || iscntrl((unsigned char)*c)) {
                /* sacctmgr splits its command line on blanks: no QOS is named with one */
                cli_error("--qos-band: '%.*s': a QOS name holds no space or control "
                          "character (Slurm's QOS names are single words)",
                          (int)(len > 80 ? 80 : len), p);
                return false;
            }
        size_t nl = len - (size_t)(eq + 1 - p);
        double b;
        pfi_band_status bs = pfi_band_parse(eq + 1, nl, &b); /* every band's reading */
        bool bad = bs != PFI_BAND_OK;
        bool dup = false;
        for (size_t k = 0; k < s->nqos && !dup; k++)
            dup = strlen(s->qos[k]) == (size_t)(eq - p) &&
                  strncasecmp(s->qos[k], p, (size_t)(eq - p)) == 0;
        if (bad || dup) {
            cli_error("--qos-band: '%.*s': %s", (int)(len > 80 ? 80 : len), p,
                      dup                         ? "QOS named twice"
                      : bs == PFI_BAND_NOT_NUMBER ? "band " PFI_BAND_NAN_RULE /* as the jobs file */
                                                  : "band " PFI_BAND_RULE);
            return false;
        }
        snprintf(s->qos[s->nqos], sizeof s->qos[0], "%.*s", (int)(eq - p), p);
        s->qos_band[s->nqos++] = b;
        p = end ? end + 1 : p + len;
        if (end != NULL && *p == '\0') {
            cli_error("--qos-band: a trailing ','");
            return false;
        }
    }
    if (s->nqos == 0)
        cli_error("--qos-band: no QOS=BAND pair");
    return s->nqos > 0;
}

size_t cli_rules_set_bands(const pfi_ctl_rule *base, size_t nb, const char (*job)[PFI_CTL_ID_LEN],
                           const double *band, size_t n, pfi_ctl_rule **out)
{
    pfi_ctl_rule *r = malloc((nb + n + 1) * sizeof *r);
    *out = r;
    if (r == NULL)
        return 0;
    if (nb)
        memcpy(r, base, nb * sizeof *r);
    size_t m = nb;
    for (size_t k = 0; k < n; k++) {
        size_t i = 0;
        while (i < m && strcmp(r[i].job, job[k]) != 0)
            i++;
        if (i == m) { /* a rule of its own: the "*" rule's weight, floor and class */
            const pfi_ctl_rule *star = pfi_ctl_policy_find(base, nb, "*");
            if (star != NULL && strcmp(star->job, "*") == 0) {
                r[i] = *star;
            } else {
                memset(&r[i], 0, sizeof r[i]);
                r[i].floor_frac = r[i].weight = NAN;
            }
            snprintf(r[i].job, sizeof r[i].job, "%s", job[k]);
            m++;
        }
        r[i].band = band[k];
    }
    return m;
}

bool cli_slurm_option(cli_slurm *s, int k, const char *arg)
{
    switch (k) {
    case 0:
        s->on = true;
        return true;
    case 1:
        s->on = s->suspend = true;
        return true;
    case 2:
        s->squeue = arg;
        return arg[0] == '/';
    case 3:
        s->scontrol = arg;
        return arg[0] == '/';
    case 4:
        s->on = true;
        return qos_band_parse(s, arg);
    default:
        return false;
    }
}

/* The tiers' weight in the allocator's objective (a lower weight is cut first) and SLA
 * floor (1 − the tier's allowance: the throughput the tier keeps at every period, which
 * honours the allowance over the job's life a fortiori). */
static double tier_weight(const pfi_slurm_tier *t)
{
    static const double w[] = {8, 4, 2, 1, 0.5};
    return t->rank >= 0 && t->rank <= 4 ? w[t->rank] : 1;
}

static bool is_suspended_by_us(const cli_slurm *s, const char *id)
{
    for (size_t k = 0; k < s->ns; k++)
        if (strcmp(s->suspended[k], id) == 0)
            return true;
    return false;
}

static void audit(cli_slurm *s, double t_s, const char *job, const char *action, const char *tier,
                  const char *reason, bool ok)
{
    fprintf(stderr, "pfi control: slurm: %s job %s%s%s%s: %s%s\n", action, job,
            tier && tier[0] ? " (tier " : "", tier && tier[0] ? tier : "",
            tier && tier[0] ? ")" : "", reason, ok ? "" : " [FAILED]");
    if (s->db == NULL)
        return;
    sqlite3 *db;
    if (sqlite3_open_v2(s->db, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        fprintf(stderr, "pfi control: slurm: audit %s: %s\n", s->db, sqlite3_errmsg(db));
        sqlite3_close(db);
        return;
    }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st = NULL;
    if (sqlite3_exec(db,
                     "CREATE TABLE IF NOT EXISTS slurm_action (id INTEGER PRIMARY KEY, wall_s "
                     "REAL, t_s REAL, job TEXT, action TEXT, tier TEXT, reason TEXT, ok "
                     "INTEGER)",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO slurm_action (wall_s, t_s, job, action, tier, reason, "
                           "ok) VALUES (?, ?, ?, ?, ?, ?, ?)",
                           -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "pfi control: slurm: audit %s: %s\n", s->db, sqlite3_errmsg(db));
        sqlite3_finalize(st);
        sqlite3_close(db);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    sqlite3_bind_double(st, 1, (double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
    sqlite3_bind_double(st, 2, t_s);
    sqlite3_bind_text(st, 3, job, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, action, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, tier ? tier : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, reason, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 7, ok ? 1 : 0);
    if (sqlite3_step(st) != SQLITE_DONE)
        fprintf(stderr, "pfi control: slurm: audit %s: %s\n", s->db, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static bool running(const pfi_slurm_job *j)
{
    return strcmp(j->state, "RUNNING") == 0 || strcmp(j->state, "SUSPENDED") == 0;
}

/* grid_tiers_prune's test: job is in the last squeue answer, running or suspended. */
static bool still_running(void *ctx, const char *job)
{
    const cli_slurm *s = ctx;
    for (size_t k = 0; k < s->nj; k++)
        if (strcmp(s->jobs[k].id, job) == 0)
            return running(&s->jobs[k]);
    return false;
}

/* The index of job's exact rule in r[n]; n when none. */
static size_t rule_of(const pfi_ctl_rule *r, size_t n, const char *job)
{
    size_t i = 0;
    while (i < n && strcmp(r[i].job, job) != 0)
        i++;
    return i;
}

void cli_slurm_before(cli_slurm *s, pfi_ctl *ctl, grid_tiers *tiers, double t_s)
{
    char *argv[] = {(char *)s->squeue, "--json", NULL};
    char *text = NULL, err[600] = "";
    size_t len = 0;
    int rc = run_capture(argv, RUN_TIMEOUT_S, &text, &len, err, sizeof err);
    pfi_slurm_job *jobs = NULL;
    size_t nj = 0;
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = rc == 0 ? pfi_slurm_jobs_parse(text, len, &jobs, &nj, &d) : PFI_ERR_IO;
    free(text);
    if (e != PFI_OK) {
        if (!s->squeue_failed)
            fprintf(stderr, "pfi control: slurm: %s --json: %s; the last jobs are kept\n",
                    s->squeue, rc != 0 ? (err[0] ? err : "failed") : d.message);
        s->squeue_failed = true;
        return;
    }
    if (s->squeue_failed)
        fprintf(stderr, "pfi control: slurm: %s answers again\n", s->squeue);
    s->squeue_failed = false;
    pfi_free(s->jobs);
    s->jobs = jobs;
    s->nj = nj;
    /* joins and leaves */
    char(*now)[32] = nj ? calloc(nj, sizeof *now) : NULL;
    size_t nn = 0;
    for (size_t k = 0; k < nj && (now != NULL || nj == 0); k++) {
        if (!running(&jobs[k]))
            continue;
        snprintf(now[nn++], 32, "%s", jobs[k].id);
        bool was = false;
        for (size_t i = 0; i < s->nknown && !was; i++)
            was = strcmp(s->known[i], jobs[k].id) == 0;
        if (!was) {
            char why[800], qb[64] = "", bt[PFI_BAND_TEXT]; /* up to 724 bytes: a priority of
                                                              309 digits */
            for (size_t q = 0; q < s->nqos; q++) /* --qos-band's (its --policy band= wins) */
                if (strcasecmp(s->qos[q], jobs[k].qos) == 0)
                    snprintf(qb, sizeof qb, " (--qos-band: band %s)",
                             pfi_band_format(s->qos_band[q], bt));
            snprintf(why, sizeof why,
                     "%u GPU(s) on %.200s, priority %.0f, QOS %.60s%s, class %.60s", jobs[k].gpus,
                     jobs[k].nodes[0] ? jobs[k].nodes : "-", jobs[k].priority,
                     jobs[k].qos[0] ? jobs[k].qos : "-", qb,
                     jobs[k].job_class[0] ? jobs[k].job_class : "-");
            audit(s, t_s, jobs[k].id, "joined", jobs[k].flex, why, true);
        }
    }
    for (size_t i = 0; i < s->nknown; i++) {
        bool still = false;
        for (size_t k = 0; k < nn && !still; k++)
            still = strcmp(now[k], s->known[i]) == 0;
        if (!still)
            audit(s, t_s, s->known[i], "left", "", "no longer running in Slurm", true);
    }
    free(s->known);
    s->known = now;
    s->nknown = nn;
    /* the tiers: each running job's --pfi-flex joins the job-average accounting of the grid
     * event's tiers (grid_tiers.c), as a tiers file's job does (the file's wins; the policy
     * file's rule for the job, if any, keeps its weight and class, the tier drives its
     * floor); --pfi-min-throughput is a floor the accounting never goes under; a job that
     * left Slurm leaves the accounting */
    grid_tiers_prune(tiers, still_running, s);
    bool full = false;
    for (size_t k = 0; k < nj; k++) {
        const pfi_slurm_job *j = &jobs[k];
        const pfi_slurm_tier *t = pfi_slurm_tier_find(j->flex);
        if (!running(j) || t == NULL)
            continue;
        pfi_ctl_rule proto;
        memset(&proto, 0, sizeof proto);
        snprintf(proto.job_class, sizeof proto.job_class, "%.31s", j->job_class);
        proto.weight = tier_weight(t);
        proto.floor_frac = NAN;
        proto.band = NAN;
        if (!grid_tiers_add(tiers, j->id, pfi_slurm_tier_flex(t), t->allowance, &proto,
                            j->min_tput))
            full = true;
    }
    if (full && !s->tiers_full)
        fprintf(stderr,
                "pfi control: slurm: out of memory or %d policy rules: a job's tier is "
                "not accounted\n",
                PFI_CTL_MAX_RULES);
    s->tiers_full = full;
    /* the policy: the tiers' rules (the policy file's and one per tier job), then one per
     * running job with only a floor that none names; a job we suspended is cut first */
    size_t nbase = tiers->n_rules;
    pfi_ctl_rule *r = calloc(nbase + nj + 1, sizeof *r);
    if (r == NULL) {
        pfi_ctl_set_rules(ctl, tiers->rules, tiers->n_rules); /* they may have moved */
        free(s->rules);
        s->rules = NULL;
        s->nr = 0;
        return;
    }
    if (nbase)
        memcpy(r, tiers->rules, nbase * sizeof *r);
    size_t n = nbase;
    for (size_t k = 0; k < nj; k++) {
        const pfi_slurm_job *j = &jobs[k];
        if (!running(j))
            continue;
        size_t i = rule_of(r, n, j->id);
        bool ours = is_suspended_by_us(s, j->id);
        if (i == n && !isfinite(j->min_tput) && !ours)
            continue;
        if (i == n) {
            pfi_ctl_rule *x = &r[n++];
            snprintf(x->job, sizeof x->job, "%s", j->id);
            snprintf(x->job_class, sizeof x->job_class, "%.31s", j->job_class);
            x->weight = NAN;
            x->band = NAN;
            x->floor_frac = j->min_tput;
        }
        if (ours) { /* paused: its GPUs idle; cut it first */
            r[i].weight = 0.01;
            r[i].floor_frac = NAN;
        }
    }
    /* --qos-band: a running job's band from its QOS, unless its own --policy line gives one
     * (the policy's rules are tiers->rules[0 .. n_policy)) */
    char(*qj)[PFI_CTL_ID_LEN] = s->nqos && nj ? calloc(nj, sizeof *qj) : NULL;
    double *qb = qj ? calloc(nj, sizeof *qb) : NULL;
    size_t nq = 0;
    for (size_t k = 0; qb != NULL && k < nj; k++) {
        const pfi_slurm_job *j = &jobs[k];
        size_t q = 0;
        while (q < s->nqos &&
               strcasecmp(s->qos[q], j->qos) != 0) /* Slurm keeps names in lower case */
            q++;
        size_t p = rule_of(tiers->rules, tiers->n_policy, j->id);
        if (!running(j) || q == s->nqos || strlen(j->id) >= PFI_CTL_ID_LEN ||
            (p < tiers->n_policy && isfinite(tiers->rules[p].band)))
            continue;
        snprintf(qj[nq], PFI_CTL_ID_LEN, "%s", j->id);
        qb[nq++] = s->qos_band[q];
    }
    if (nq > 0) {
        pfi_ctl_rule *m = NULL;
        size_t nm = cli_rules_set_bands(r, n, qj, qb, nq, &m);
        if (m != NULL) {
            free(r);
            r = m;
            n = nm;
        }
    }
    free(qj);
    free(qb);
    pfi_ctl_set_rules(ctl, r, n);
    free(s->rules);
    s->rules = r;
    s->nr = n;
}

static int scontrol_job(cli_slurm *s, const char *verb, const char *job, char *err, size_t n)
{
    char *argv[] = {(char *)s->scontrol, (char *)verb, (char *)job, NULL};
    char *out = NULL;
    size_t len = 0;
    int rc = run_capture(argv, RUN_TIMEOUT_S, &out, &len, err, n);
    free(out);
    if (rc > 0 && rc != 127)
        snprintf(err, n, "%s %s %s exited with %d", s->scontrol, verb, job, rc);
    return rc;
}

/* A job `pfi slurm admit` held during an event: release the first, audited. */
static bool release_one_held(cli_slurm *s, double t_s)
{
    for (size_t k = 0; k < s->nj; k++) {
        const pfi_slurm_job *j = &s->jobs[k];
        bool done = false;
        for (size_t r = 0; r < s->nreleased && !done; r++)
            done = strcmp(s->released[r], j->id) == 0;
        if (strcmp(j->state, "PENDING") != 0 || !j->pfi_held || done)
            continue;
        if (s->nreleased < CLI_SLURM_SUSPENDED_MAX) /* once per job, whatever happens next */
            snprintf(s->released[s->nreleased++], 32, "%s", j->id);
        char err[600];
        bool ok = scontrol_job(s, "release", j->id, err, sizeof err) == 0;
        /* the mark goes, and the requeue's begin time with it */
        char jid[64];
        snprintf(jid, sizeof jid, "JobId=%s", j->id);
        char *upd[2][5] = {{(char *)s->scontrol, "update", jid, "AdminComment=pfi:released", NULL},
                           {(char *)s->scontrol, "update", jid, "StartTime=now", NULL}};
        for (int u = 0; u < 2; u++) {
            char *out = NULL, e2[600];
            size_t len = 0;
            int rc = run_capture(upd[u], RUN_TIMEOUT_S, &out, &len, e2, sizeof e2);
            free(out);
            if (rc != 0)
                fprintf(stderr, "pfi control: slurm: job %s: scontrol update %s exited with %d\n",
                        j->id, upd[u][3], rc);
        }
        audit(s, t_s, j->id, "release", "", ok ? "held by pfi slurm admit; the event ended" : err,
              ok);
        return true;
    }
    return false;
}

/* Running Slurm jobs with GPUs that no agent reports (their node's pfid is not registering
 * them): said once per job, so an operator sees which nodes lack the integration. */
static void check_agents(cli_slurm *s, const pfi_ctl *ctl)
{
    size_t nc = pfi_ctl_job_count(ctl);
    for (size_t k = 0; k < s->nj; k++) {
        const pfi_slurm_job *j = &s->jobs[k];
        if (strcmp(j->state, "RUNNING") != 0 || j->gpus == 0)
            continue;
        bool seen = false;
        for (size_t c = 0; c < nc && !seen; c++) {
            pfi_ctl_job_view v;
            pfi_ctl_job_get(ctl, c, &v);
            seen = v.gpus > 0 && strcmp(v.id, j->id) == 0;
        }
        bool said = false;
        for (size_t w = 0; w < s->nwarned && !said; w++)
            said = strcmp(s->warned[w], j->id) == 0;
        if (seen || said || s->nwarned >= CLI_SLURM_SUSPENDED_MAX)
            continue;
        snprintf(s->warned[s->nwarned++], 32, "%s", j->id);
        fprintf(stderr,
                "pfi control: slurm: job %s runs on %s with %u GPU(s) but no agent reports it "
                "(pfid with slurm_socket and the prolog there?)\n",
                j->id, j->nodes[0] ? j->nodes : "-", j->gpus);
    }
}

void cli_slurm_after(cli_slurm *s, const pfi_ctl *ctl, const pfi_ctl_report *r, double t_s)
{
    if (s->unseen_periods++ >= 2) /* the agents have had a period to report new jobs */
        check_agents(s, ctl);
    s->quiet_periods++;
    if (!s->suspend || s->quiet_periods < 2) /* staggered: one action, then a period's look */
        return;
    char err[600];
    if (r->event && r->infeasible) {
        const pfi_slurm_job *best = NULL;
        const pfi_slurm_tier *bt = NULL;
        for (size_t k = 0; k < s->nj; k++) {
            const pfi_slurm_job *j = &s->jobs[k];
            const pfi_slurm_tier *t = pfi_slurm_tier_find(j->flex);
            if (strcmp(j->state, "RUNNING") != 0 || t == NULL || !t->may_suspend ||
                is_suspended_by_us(s, j->id))
                continue;
            bool better =
                best == NULL || t->rank > bt->rank ||
                (t->rank == bt->rank &&
                 (j->priority < best->priority ||
                  (j->priority == best->priority && j->start_time_s > best->start_time_s)));
            if (better) {
                best = j;
                bt = t;
            }
        }
        if (best == NULL || s->ns >= CLI_SLURM_SUSPENDED_MAX)
            return;
        char why[600];
        snprintf(why, sizeof why,
                 "caps alone cannot meet the budget of %.0f W (%s); the most flexible running "
                 "job, priority %.0f",
                 r->budget_w, r->note, best->priority);
        bool ok = scontrol_job(s, "suspend", best->id, err, sizeof err) == 0;
        audit(s, t_s, best->id, "suspend", best->flex, ok ? why : err, ok);
        if (ok)
            snprintf(s->suspended[s->ns++], 32, "%s", best->id);
        s->quiet_periods = 0;
    } else if (!r->event && s->ns > 0) {
        /* the event is over: resume the last suspended first, one a period */
        char job[32];
        snprintf(job, sizeof job, "%s", s->suspended[s->ns - 1]);
        bool ok = scontrol_job(s, "resume", job, err, sizeof err) == 0;
        audit(s, t_s, job, "resume", "", ok ? "the event ended" : err, ok);
        s->ns--; /* a job that cannot be resumed (ended meanwhile) is not retried */
        s->quiet_periods = 0;
    } else if (!r->event && release_one_held(s, t_s)) { /* then the jobs held at admission */
        s->quiet_periods = 0;
    }
}

void cli_slurm_finish(cli_slurm *s)
{
    char err[600];
    while (s->ns > 0) {
        const char *job = s->suspended[--s->ns];
        bool ok = scontrol_job(s, "resume", job, err, sizeof err) == 0;
        audit(s, -1, job, "resume", "", ok ? "the controller stopped" : err, ok);
    }
    free(s->rules);
    pfi_free(s->jobs);
    free(s->known);
    s->rules = NULL;
    s->jobs = NULL;
    s->known = NULL;
}

/* ---- pfi report --job ---------------------------------------------------------------------- */

static void report_usage(FILE *f)
{
    fprintf(f,
            "usage: pfi report --job ID [--socket PATH] [--scontrol PATH] [--db AUDIT.db] "
            "[--json]\n"
            "\n"
            "A Slurm job's pfi accounting: energy (J) of its GPUs from its start, time under\n"
            "caps, the caps applied, estimated tokens lost. Read from the node's pfid (root, on\n"
            "the job's node: a running job so far, or one of the last 64 ended), else from the\n"
            "job's AdminComment (scontrol show job, while Slurm still knows the job). --db adds\n"
            "the controller's actions on the job (suspend, resume, join, leave).\n"
            "\n"
            "options:\n"
            "  --job ID          the Slurm job id\n"
            "  --socket PATH     pfid's registration socket (%s)\n"
            "  --scontrol PATH   %s\n"
            "  --db FILE         the controller's audit log\n"
            "  --json            the accounting object as JSON\n"
            "\n"
            "Exit codes: 0 printed, 1 no accounting found for the job, 2 bad command line.\n",
            DEFAULT_SOCKET, DEFAULT_SCONTROL);
}

/* The accounting object of pfid's answer or of an AdminComment "pfi:{...}"; NULL none. */
static json_t *accounting_of(const char *text, bool from_pfid)
{
    json_t *o = json_loads(text, 0, NULL);
    if (o == NULL)
        return NULL;
    if (from_pfid) {
        json_t *a = json_incref(json_object_get(o, "accounting"));
        json_decref(o);
        return json_is_object(a) ? a : (json_decref(a), NULL);
    }
    if (!json_is_object(o) || json_object_get(o, "capped_s") == NULL) {
        json_decref(o); /* the options written at the start, not the accounting */
        return NULL;
    }
    return o;
}

int cli_slurm_report(int argc, char **argv)
{
    enum { R_JOB = 1000, R_SOCK, R_SCTL, R_DB, R_JSON };
    static const struct option ropts[] = {
        {"job", required_argument, NULL, R_JOB},
        {"socket", required_argument, NULL, R_SOCK},
        {"scontrol", required_argument, NULL, R_SCTL},
        {"db", required_argument, NULL, R_DB},
        {"json", no_argument, NULL, R_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *job = NULL, *sock = DEFAULT_SOCKET, *sctl = DEFAULT_SCONTROL, *db = NULL;
    for (int i = 1; i < argc; i++) /* "--job --help": the help, not a job id "--help" */
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            report_usage(stdout);
            return PFI_EXIT_OK;
        }
    bool as_json = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", ropts, NULL)) != -1) {
        switch (c) {
        case R_JOB:
            job = optarg;
            break;
        case R_SOCK:
            sock = optarg;
            break;
        case R_SCTL:
            sctl = optarg;
            break;
        case R_DB:
            db = optarg;
            break;
        case R_JSON:
            as_json = true;
            break;
        case 'h':
            report_usage(stdout);
            return PFI_EXIT_OK;
        default:
            return cli_usage_getopt(ropts, "h", c, argv);
        }
    }
    char req[256], err[600], reply[PFI_SLURM_REPLY_MAX];
    if (optind < argc || job == NULL ||
        !pfi_slurm_job_request(req, sizeof req, "report", job, err, sizeof err)) {
        cli_error("%s", job == NULL || optind < argc ? "give one --job ID" : err);
        return PFI_EXIT_USAGE;
    }
    json_t *acct = NULL;
    const char *source = "pfid";
    if (pfi_slurm_call(sock, req, 5, reply, sizeof reply, err, sizeof err) == 0)
        acct = accounting_of(reply, true);
    if (acct == NULL) { /* the AdminComment */
        char *argv2[] = {(char *)sctl, "show", "job", "-o", (char *)job, NULL};
        char *out = NULL;
        size_t len = 0;
        if (run_capture(argv2, RUN_TIMEOUT_S, &out, &len, err, sizeof err) == 0) {
            char *p = strstr(out, "AdminComment=pfi:");
            if (p != NULL) {
                p += strlen("AdminComment=pfi:");
                char *end = strstr(p, " ");
                json_error_t je;
                /* the JSON has no blanks (compact); it ends at the first blank */
                acct = json_loadb(p, end ? (size_t)(end - p) : strlen(p), 0, &je);
                if (acct != NULL && json_object_get(acct, "capped_s") == NULL) {
                    json_decref(acct);
                    acct = NULL;
                }
                source = "AdminComment";
            }
        }
        free(out);
    }
    if (acct == NULL) {
        cli_error("report --job %s: no accounting (not on this node's pfid, no AdminComment)", job);
        return PFI_EXIT_DATA;
    }
    if (as_json) {
        char *s = json_dumps(acct, JSON_COMPACT | JSON_REAL_PRECISION(12));
        printf("%s\n", s ? s : "{}");
        free(s);
    } else {
        json_t *v;
        printf("job %s (from %s)\n", job, source);
        if ((v = json_object_get(acct, "host")) != NULL)
            printf("  host           %s\n", json_string_value(v));
        if ((v = json_object_get(acct, "gpus")) != NULL)
            printf("  GPUs           %lld\n", (long long)json_integer_value(v));
        if ((v = json_object_get(acct, "flex")) != NULL)
            printf("  tier           %s\n", json_string_value(v));
        if ((v = json_object_get(acct, "duration_s")) != NULL)
            printf("  duration       %.1f s\n", json_number_value(v));
        v = json_object_get(acct, "energy_j");
        printf("  energy         %s\n", v ? cli_num(json_number_value(v), 'f', 0, "-").s : "-");
        if ((v = json_object_get(acct, "capped_s")) != NULL)
            printf("  capped         %.1f s\n", json_number_value(v));
        json_t *caps = json_object_get(acct, "caps_w");
        printf("  caps applied   ");
        size_t i;
        json_array_foreach(caps, i, v) printf("%s%.0f W", i ? ", " : "", json_number_value(v));
        printf("%s\n", json_array_size(caps) ? "" : "none");
        v = json_object_get(acct, "tokens_lost");
        printf("  tokens lost    %s\n", v ? cli_num(json_number_value(v), 'f', 0, "-").s : "-");
    }
    json_decref(acct);
    if (db != NULL && !as_json) {
        sqlite3 *s;
        if (sqlite3_open_v2(db, &s, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
            sqlite3_stmt *st;
            if (sqlite3_prepare_v2(s,
                                   "SELECT t_s, action, reason, ok FROM slurm_action WHERE job = ? "
                                   "ORDER BY id",
                                   -1, &st, NULL) == SQLITE_OK) {
                sqlite3_bind_text(st, 1, job, -1, SQLITE_TRANSIENT);
                while (sqlite3_step(st) == SQLITE_ROW)
                    printf("  controller     t=%.1f s %s: %s%s\n", sqlite3_column_double(st, 0),
                           (const char *)sqlite3_column_text(st, 1),
                           (const char *)sqlite3_column_text(st, 2),
                           sqlite3_column_int(st, 3) ? "" : " [failed]");
            }
            sqlite3_finalize(st);
        }
        sqlite3_close(s);
    }
    return PFI_EXIT_OK;
}

/* ---- pfi slurm admit ----------------------------------------------------------------------- */

static void admit_usage(FILE *f)
{
    fprintf(f,
            "usage: pfi slurm admit --controller URL [--job ID] [--gpu-min-w W] [--squeue PATH]\n"
            "                       [--scontrol PATH] [--curl PATH]\n"
            "\n"
            "Power-aware admission, run as slurm.conf's PrologSlurmctld (on the controller host,\n"
            "as SlurmUser) with pfi control --listen PORT running. Outside a power event every\n"
            "job is admitted. During one, a job whose GPUs at their minimum cap (GPUs x W) do\n"
            "not fit in the budget's headroom (budget - measured power, from the controller's\n"
            "GET /metrics) is requeued held (scontrol requeuehold) with the reason in its\n"
            "AdminComment (\"pfi:held: ...\"): squeue shows it pending, 'job requeued in held\n"
            "state'. pfi control --slurm releases such jobs, one a period, when the event ends.\n"
            "A controller that does not answer admits the job (pfi never blocks a cluster).\n"
            "\n"
            "options:\n"
            "  --controller URL   pfi control --listen's base URL (http://127.0.0.1:PORT)\n"
            "  --job ID           the job (SLURM_JOB_ID)\n"
            "  --gpu-min-w W      a GPU's minimum power cap, W (200)\n"
            "  --squeue PATH, --scontrol PATH, --curl PATH   the programs (/usr/bin/...)\n"
            "\n"
            "Exit codes: 0 admitted, 1 held (slurmctld then requeues the job, held), 2 bad\n"
            "command line.\n");
}

/* The value of an unlabelled gauge NAME in Prometheus text; NAN when absent. */
static double gauge_of(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == ' ') {
            char *end;
            double v = strtod(p + n + 1, &end);
            return end != p + n + 1 ? v : NAN;
        }
    return NAN;
}

static int slurm_admit(int argc, char **argv)
{
    enum { A_CTL = 1000, A_JOB, A_MIN, A_SQ, A_SC, A_CURL };
    static const struct option aopts[] = {
        {"controller", required_argument, NULL, A_CTL},
        {"job", required_argument, NULL, A_JOB},
        {"gpu-min-w", required_argument, NULL, A_MIN},
        {"squeue", required_argument, NULL, A_SQ},
        {"scontrol", required_argument, NULL, A_SC},
        {"curl", required_argument, NULL, A_CURL},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *ctl = NULL, *job = NULL, *sq = "/usr/bin/squeue", *sc = DEFAULT_SCONTROL,
               *curl = "/usr/bin/curl";
    double min_w = 200;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", aopts, NULL)) != -1) {
        switch (c) {
        case A_CTL:
            ctl = optarg;
            break;
        case A_JOB:
            job = optarg;
            break;
        case A_SQ:
            sq = optarg;
            break;
        case A_SC:
            sc = optarg;
            break;
        case A_CURL:
            curl = optarg;
            break;
        case A_MIN:
            if (!cli_parse_double(optarg, &min_w) || !(min_w > 0) || min_w > 100000) {
                return cli_usage_bad_value("gpu-min-w", optarg, "a power in W");
            }
            break;
        case 'h':
            admit_usage(stdout);
            return PFI_EXIT_OK;
        default:
            return cli_usage_getopt(aopts, "h", c, argv);
        }
    }
    job = env_or(job, "SLURM_JOB_ID");
    if (optind < argc || ctl == NULL || job == NULL || !pfi_slurm_valid_job(job) ||
        (strncmp(ctl, "http://", 7) != 0 && strncmp(ctl, "https://", 8) != 0)) {
        cli_error("--controller http://HOST:PORT and a job id (SLURM_JOB_ID) are "
                  "required");
        return PFI_EXIT_USAGE;
    }
    char url[1024], err[600];
    snprintf(url, sizeof url, "%s/metrics", ctl);
    char *argv_c[] = {(char *)curl, "-s", "-f", "-m", "5", url, NULL};
    char *text = NULL;
    size_t len = 0;
    if (run_capture(argv_c, 8, &text, &len, err, sizeof err) != 0 || text == NULL) {
        fprintf(stderr, "pfi slurm admit: job %s admitted: controller %s does not answer%s%s\n",
                job, ctl, err[0] ? ": " : "", err);
        free(text);
        return PFI_EXIT_OK;
    }
    double event = gauge_of(text, "pfi_ctl_event_active"),
           budget = gauge_of(text, "pfi_ctl_budget_watts"),
           measured = gauge_of(text, "pfi_ctl_measured_watts");
    free(text);
    if (!(event == 1) || !isfinite(budget) || !isfinite(measured))
        return PFI_EXIT_OK; /* no event (or nothing known): admitted */
    char *argv_q[] = {(char *)sq, "--json", NULL};
    if (run_capture(argv_q, RUN_TIMEOUT_S, &text, &len, err, sizeof err) != 0 || text == NULL) {
        fprintf(stderr, "pfi slurm admit: job %s admitted: %s\n", job, err);
        free(text);
        return PFI_EXIT_OK;
    }
    pfi_slurm_job *jobs = NULL;
    size_t nj = 0;
    pfi_diag d;
    unsigned gpus = 0;
    if (pfi_slurm_jobs_parse(text, len, &jobs, &nj, &d) == PFI_OK)
        for (size_t k = 0; k < nj; k++)
            if (strcmp(jobs[k].id, job) == 0)
                gpus = jobs[k].gpus;
    pfi_free(jobs);
    free(text);
    double need = gpus * min_w, room = budget - measured;
    if (gpus == 0 || need <= room)
        return PFI_EXIT_OK;
    char why[512];
    snprintf(why, sizeof why,
             "AdminComment=pfi:held: %u GPU(s) need %.0f W at their minimum cap, %.0f W free "
             "under the %.0f W budget of a power event; released when it ends",
             gpus, need, room > 0 ? room : 0, budget);
    char *argv_u[] = {(char *)sc, "update", NULL, why, NULL};
    char jid[64];
    snprintf(jid, sizeof jid, "JobId=%s", job);
    argv_u[2] = jid;
    char *out = NULL;
    run_capture(argv_u, RUN_TIMEOUT_S, &out, &len, err, sizeof err);
    free(out);
    char *argv_h[] = {(char *)sc, "requeuehold", (char *)job, NULL};
    int rc = run_capture(argv_h, RUN_TIMEOUT_S, &out, &len, err, sizeof err);
    free(out);
    fprintf(stderr, "pfi slurm admit: job %s held (%s)%s%s\n", job, why + 13,
            rc != 0 ? "; requeuehold failed: " : "", rc != 0 ? err : "");
    return PFI_EXIT_DATA;
}
