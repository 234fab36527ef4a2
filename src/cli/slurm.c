/*
 * pfi slurm prolog | epilog — tell the node's pfid that a Slurm job starts (its GPUs, user
 * and pfi options) or ends (drop the mapping, restore its GPUs now, write its accounting into
 * the job's AdminComment): the same as pfi_spank.so, for sites that run Prolog=/Epilog=
 * scripts instead of SPANK plugins. The values come from the environment slurmd gives a
 * prolog (SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_GPUS) unless the flags give them.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "slurm/proto.h"

#define DEFAULT_SOCKET "/run/pfid/slurm.sock"
#define DEFAULT_SCONTROL "/usr/bin/scontrol"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pfi slurm prolog [OPTIONS]\n"
            "       pfi slurm epilog [OPTIONS]\n"
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
    if (argc < 2 || (strcmp(argv[1], "prolog") != 0 && strcmp(argv[1], "epilog") != 0)) {
        cli_error("slurm: prolog or epilog expected (see 'pfi slurm --help')");
        return PFI_EXIT_USAGE;
    }
    bool prolog = strcmp(argv[1], "prolog") == 0;
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
                cli_error("--timeout: '%s' is not a number of seconds in (0, 600]", optarg);
                return PFI_EXIT_USAGE;
            }
            break;
        case 'h':
            usage(stdout);
            return PFI_EXIT_OK;
        default:
            return PFI_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        cli_error("slurm %s: unexpected argument '%s'", argv[1], argv[optind]);
        return PFI_EXIT_USAGE;
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
        cli_error("slurm %s: %s", argv[1], err);
        return PFI_EXIT_USAGE;
    }
    char reply[PFI_SLURM_REPLY_MAX];
    if (pfi_slurm_call(sock, req, timeout_s, reply, sizeof reply, err, sizeof err) != 0) {
        cli_error("slurm %s: job %s: %s%s", argv[1], job, err,
                  strict ? "" : " (the job goes on without pfi)");
        return strict ? PFI_EXIT_DATA : PFI_EXIT_OK;
    }
    if (strstr(reply, "\"ok\":true") == NULL) {
        cli_error("slurm %s: job %s: pfid refused: %s", argv[1], job, reply);
        return strict ? PFI_EXIT_DATA : PFI_EXIT_OK;
    }
    printf("%s\n", reply);
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
                cli_error("slurm epilog: job %s: AdminComment not written: %s", job, err);
                return strict ? PFI_EXIT_DATA : PFI_EXIT_OK;
            }
        }
    }
    return PFI_EXIT_OK;
}
