/*
 * pfi_spank.so — pfi's SPANK plugin for Slurm (DESIGN §11; README "pfi on Slurm").
 *
 * Options (sbatch, srun, salloc): --pfi-class=CLASS, --pfi-flex=TIER,
 * --pfi-min-throughput=FRACTION, --pfi-pfi=VALUE; each is checked where the user types it
 * (a bad value stops the submission with a message naming what was expected) and again on
 * the node. In the job's prolog on each node (slurm_spank_job_prolog, as root) the plugin
 * tells the local pfid the job id, user, GPUs (SLURM_JOB_GPUS: the gres indices of this
 * node) and the options; pfid answers with the GPUs' UUIDs. In the job's epilog it tells pfid
 * the job ended (pfid puts the job's GPUs back on their original limits at once) and writes
 * the job's accounting into its AdminComment with scontrol.
 *
 * plugstack.conf arguments: socket=PATH (pfid's slurm_socket; /run/pfid/slurm.sock),
 * timeout=S (5), scontrol=PATH (/usr/bin/scontrol), comment=no (do not write AdminComment),
 * strict=yes (a pfid that does not answer fails the prolog; default: the job goes on).
 *
 * Built only where spank.h is found; links nothing but libc (and proto.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pwd.h>
#include <slurm/spank.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "proto.h"

SPANK_PLUGIN(pfi, 1);

enum { OPT_CLASS = 1, OPT_FLEX, OPT_MIN, OPT_PFI };

/* check an option's value where the user gives it; on error the submission stops */
static int check_opt(int val, const char *arg, int remote)
{
    (void)remote;
    double v;
    if (arg == NULL) {
        slurm_error("pfi: an option needs a value");
        return -1;
    }
    switch (val) {
    case OPT_CLASS:
        if (!pfi_slurm_valid_class(arg)) {
            slurm_error("--pfi-class '%.140s': 1..127 characters of [A-Za-z0-9._:@+=-] were "
                        "expected",
                        arg);
            return -1;
        }
        return 0;
    case OPT_FLEX:
        if (pfi_slurm_tier_find(arg) == NULL) {
            slurm_error("--pfi-flex '%.60s': one of %s was expected", arg, pfi_slurm_tier_names());
            return -1;
        }
        return 0;
    case OPT_MIN:
        if (!pfi_slurm_parse_fraction(arg, &v)) {
            slurm_error("--pfi-min-throughput '%.60s': a fraction in [0, 1] was expected", arg);
            return -1;
        }
        return 0;
    case OPT_PFI:
        if (!pfi_slurm_parse_pfi(arg, &v)) {
            slurm_error("--pfi-pfi '%.60s': a number in (0, 100] was expected", arg);
            return -1;
        }
        return 0;
    default:
        return -1;
    }
}

static struct spank_option opts[] = {
    {"pfi-class", "CLASS", "pfi: the job's workload class (dense, moe-pt, moe-ft, ...)", 1,
     OPT_CLASS, check_opt},
    {"pfi-flex", "TIER",
     "pfi: flexibility tier, how much average throughput the job may lose (rigid, low, "
     "medium, high, pausable)",
     1, OPT_FLEX, check_opt},
    {"pfi-min-throughput", "FRACTION", "pfi: SLA floor, a fraction of uncapped throughput", 1,
     OPT_MIN, check_opt},
    {"pfi-pfi", "VALUE", "pfi: a known Power Flexibility Index of the job", 1, OPT_PFI, check_opt},
    SPANK_OPTIONS_TABLE_END};

typedef struct args {
    const char *socket, *scontrol;
    double timeout_s;
    int comment, strict;
} args;

static int parse_args(int ac, char **av, args *a)
{
    a->socket = "/run/pfid/slurm.sock";
    a->scontrol = "/usr/bin/scontrol";
    a->timeout_s = 5;
    a->comment = 1;
    a->strict = 0;
    for (int k = 0; k < ac; k++) {
        if (strncmp(av[k], "socket=", 7) == 0) {
            a->socket = av[k] + 7;
        } else if (strncmp(av[k], "scontrol=", 9) == 0) {
            a->scontrol = av[k] + 9;
        } else if (strncmp(av[k], "timeout=", 8) == 0) {
            char *end;
            double v = strtod(av[k] + 8, &end);
            if (end == av[k] + 8 || *end != '\0' || !(v > 0) || v > 600) {
                slurm_error("pfi_spank: plugstack.conf: '%s': timeout=S, S in (0, 600]", av[k]);
                return -1;
            }
            a->timeout_s = v;
        } else if (strcmp(av[k], "comment=no") == 0) {
            a->comment = 0;
        } else if (strcmp(av[k], "strict=yes") == 0) {
            a->strict = 1;
        } else {
            slurm_error("pfi_spank: plugstack.conf: unknown argument '%s' (socket=, timeout=, "
                        "scontrol=, comment=no, strict=yes)",
                        av[k]);
            return -1;
        }
    }
    return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    spank_context_t ctx = spank_context();
    if (ctx == S_CTX_SLURMD)
        return 0;
    for (struct spank_option *o = opts; o->name != NULL; o++)
        if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
            slurm_error("pfi_spank: cannot register --%s", o->name);
            return -1;
        }
    return 0;
}

/* The value of option o in this job, or NULL when not given. */
static const char *getopt_value(spank_t sp, struct spank_option *o)
{
    char *arg = NULL;
    if (spank_option_getopt(sp, o, &arg) != ESPANK_SUCCESS)
        return NULL;
    return arg;
}

static const char *env(spank_t sp, const char *name, char *buf, int n)
{
    if (spank_getenv(sp, name, buf, n) == ESPANK_SUCCESS && buf[0] != '\0')
        return buf;
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0')
        return NULL;
    snprintf(buf, (size_t)n, "%s", v);
    return buf;
}

static int job_id(spank_t sp, char *out, size_t n)
{
    uint32_t id = 0;
    if (spank_get_item(sp, S_JOB_ID, &id) != ESPANK_SUCCESS || id == 0) {
        slurm_error("pfi_spank: no job id in this context");
        return -1;
    }
    snprintf(out, n, "%u", id);
    return 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
    args a;
    if (parse_args(ac, av, &a) != 0)
        return a.strict ? -1 : 0;
    char job[32], user[PFI_SLURM_USER_MAX] = "", gpus[4096], err[600];
    if (job_id(sp, job, sizeof job) != 0)
        return a.strict ? -1 : 0;
    uid_t uid = (uid_t)-1;
    if (spank_get_item(sp, S_JOB_UID, &uid) == ESPANK_SUCCESS) {
        struct passwd pw, *res = NULL;
        char pbuf[4096];
        if (getpwuid_r(uid, &pw, pbuf, sizeof pbuf, &res) == 0 && res != NULL)
            snprintf(user, sizeof user, "%s", pw.pw_name);
    }
    const char *g = env(sp, "SLURM_JOB_GPUS", gpus, sizeof gpus);
    if (g == NULL)
        g = env(sp, "CUDA_VISIBLE_DEVICES", gpus, sizeof gpus);
    const char *cls = getopt_value(sp, &opts[0]), *flex = getopt_value(sp, &opts[1]),
               *min = getopt_value(sp, &opts[2]), *pfi = getopt_value(sp, &opts[3]);
    char req[PFI_SLURM_REQ_MAX], reply[PFI_SLURM_REPLY_MAX];
    if (!pfi_slurm_start_request(req, sizeof req, job, pfi_slurm_valid_user(user) ? user : NULL, g,
                                 cls, flex, min, pfi, err, sizeof err)) {
        slurm_error("pfi_spank: job %s: %s; not registered with pfid", job, err);
        return a.strict ? -1 : 0;
    }
    if (pfi_slurm_call(a.socket, req, a.timeout_s, reply, sizeof reply, err, sizeof err) != 0) {
        slurm_error("pfi_spank: job %s: %s; the job runs without pfi", job, err);
        return a.strict ? -1 : 0;
    }
    if (strstr(reply, "\"ok\":true") == NULL) {
        slurm_error("pfi_spank: job %s: pfid refused: %.400s", job, reply);
        return a.strict ? -1 : 0;
    }
    slurm_info("pfi_spank: job %s registered with pfid: %.400s", job, reply);
    char text[1024];
    if (a.comment && pfi_slurm_options_comment(text, sizeof text, cls, flex, min, pfi) &&
        pfi_slurm_admin_comment(a.scontrol, job, text, a.timeout_s, err, sizeof err) != 0)
        slurm_error("pfi_spank: job %s: options not written into AdminComment: %s", job, err);
    return 0;
}

/* Write the "accounting" object of a pfid answer into the job's AdminComment. */
static void write_comment(const args *a, const char *job, const char *reply)
{
    char err[600];
    const char *acct = strstr(reply, "\"accounting\":");
    const char *open = acct ? strchr(acct, '{') : NULL, *close = strrchr(reply, '}');
    size_t n = open && close && close > open ? (size_t)(close - open) : 0;
    while (n > 0 && open[n - 1] != '}')
        n--;
    if (!a->comment || n == 0)
        return;
    char text[PFI_SLURM_REPLY_MAX + 8];
    snprintf(text, sizeof text, "pfi:%.*s", (int)n, open);
    if (pfi_slurm_admin_comment(a->scontrol, job, text, a->timeout_s, err, sizeof err) != 0)
        slurm_error("pfi_spank: job %s: AdminComment not written: %s", job, err);
}

/* The batch step's end (slurmstepd, as root, before the job is complete: slurmctld refuses
 * updates of a finished job, so the epilog is too late): the job's accounting so far into
 * its AdminComment. */
int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    if (spank_context() != S_CTX_REMOTE)
        return 0;
    uint32_t step = 0;
    if (spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS || step != 0xfffffffbu)
        return 0; /* SLURM_BATCH_SCRIPT only */
    args a;
    if (parse_args(ac, av, &a) != 0 || !a.comment)
        return 0;
    char job[32], err[600], req[256], reply[PFI_SLURM_REPLY_MAX];
    if (job_id(sp, job, sizeof job) != 0 ||
        !pfi_slurm_job_request(req, sizeof req, "report", job, err, sizeof err))
        return 0;
    if (pfi_slurm_call(a.socket, req, a.timeout_s, reply, sizeof reply, err, sizeof err) != 0 ||
        strstr(reply, "\"ok\":true") == NULL) {
        slurm_error("pfi_spank: job %s: no accounting from pfid: %.400s", job,
                    reply[0] ? reply : err);
        return 0;
    }
    write_comment(&a, job, reply);
    return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
    args a;
    if (parse_args(ac, av, &a) != 0)
        return 0;
    char job[32], err[600], req[256], reply[PFI_SLURM_REPLY_MAX];
    if (job_id(sp, job, sizeof job) != 0 ||
        !pfi_slurm_end_request(req, sizeof req, job, err, sizeof err))
        return 0;
    if (pfi_slurm_call(a.socket, req, a.timeout_s, reply, sizeof reply, err, sizeof err) != 0) {
        slurm_error("pfi_spank: job %s end: %s", job, err);
        return 0; /* an epilog failure drains the node: never for pfi */
    }
    if (strstr(reply, "\"ok\":true") == NULL) {
        slurm_error("pfi_spank: job %s end: pfid refused: %.400s", job, reply);
        return 0;
    }
    slurm_info("pfi_spank: job %s ended: %.400s", job, reply);
    return 0;
}
