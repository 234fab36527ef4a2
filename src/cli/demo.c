/*
 * pfi demo cluster — N emulated agents, Prometheus when installed, and the controller on
 * loopback through a 30 % event; prints and plots what happened. The orchestration (start,
 * wait, kill every process) is scripts/demo-cluster.sh, shared with the end-to-end tests;
 * this verb finds it and the agent binary and runs it.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#include "pfi/allocate.h"

#ifndef PFI_SOURCE_DIR
#define PFI_SOURCE_DIR "."
#endif
#ifndef PFI_AGENT_DEFAULT
#define PFI_AGENT_DEFAULT "pfid"
#endif

static bool is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

/* pfi demo cluster's arguments checked before anything starts (agents, Prometheus): a word
 * that is no option is unexpected, an option it does not take unknown, a --strategy the
 * library does not have refused listing its strategies (exit 2). The values' own ranges
 * (--agents, --out) are the script's. An exit code. */
static int check_cluster_args(int argc, char **argv)
{
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-')
            return cli_usage_unexpected(a);
        if (strcmp(a, "--agents") != 0 && strcmp(a, "--out") != 0 && strcmp(a, "--strategy") != 0)
            return cli_usage_unknown(a);
        if (i + 1 >= argc)
            return cli_usage_missing(a);
        pfi_strategy st;
        if (strcmp(a, "--strategy") == 0 && pfi_strategy_parse(argv[i + 1], &st) != PFI_OK) {
            cli_names names;
            cli_strategy_names(&names);
            char list[1024];
            cli_join_names(list, sizeof list, &names,
                           &(cli_list_style){.sep = ", ", .last_sep = " or "});
            return cli_usage_bad_value("strategy", argv[i + 1], list);
        }
        i++;
    }
    return PFI_EXIT_OK;
}

int cmd_demo(int argc, char **argv)
{
    /* --help anywhere (pfi demo --help, pfi demo cluster --help ...) is the help */
    bool help = false;
    for (int i = 1; i < argc; i++)
        help = help || is_help(argv[i]);
    bool grid = argc >= 2 && strcmp(argv[1], "grid-event") == 0;
    if (grid)
        cli_set_command("demo grid-event");
    else if (argc >= 2 && strcmp(argv[1], "cluster") == 0)
        cli_set_command("demo cluster");
    if (!help && argc >= 2 && argv[1][0] == '-')
        return cli_usage_unknown(argv[1]);
    /* a word that is no subcommand: one line, as every verb's ("pfi: demo: ..."), not the help */
    if (!help && argc >= 2 && strcmp(argv[1], "cluster") != 0 && !grid)
        return cli_usage_error("unknown subcommand '%s' (expected 'cluster' or 'grid-event'; see "
                               "'pfi demo --help')",
                               argv[1]);
    if (help || argc < 2 || (strcmp(argv[1], "cluster") != 0 && !grid)) {
        FILE *f = help ? stdout : stderr;
        fprintf(f,
                "usage: pfi demo cluster [--agents N] [--out DIR] [--strategy NAME]\n"
                "       pfi demo grid-event [--speed N] [--period S] [--out DIR]\n"
                "                           [--strategies LIST] [--objective NAME]\n"
                "                           [--clock wall|emulated] [--json]\n"
                "\n"
                "Start N emulated agents (4), a Prometheus server if installed, and the\n"
                "controller on loopback; run a 30 %% power event and compare with the\n"
                "equal strategy; print the periods and write DIR/cluster.png (pfi-demo).\n"
                "The agent binary is $PFI_AGENT_BIN, else the pfid beside pfi.\n"
                "\n"
                "  --agents N       emulated agents (4)\n"
                "  --out DIR        audit logs and figure (pfi-demo)\n"
                "  --strategy NAME  the strategy compared with equal (pfi-model)\n"
                "  -h, --help       this help\n"
                "\n"
                "grid-event: the Phoenix demonstration's SRP event (a 30 %% reduction for 3.4 h)\n"
                "replayed N times faster (120) on emulated agents running its six LLM jobs (256\n"
                "GPUs) and a Prometheus on loopback, one cluster per strategy, side by side\n"
                "(equal, fair-headroom, pfi-weighted, pfi-model, oracle); each run settled\n"
                "(pfi report --settlement); --json: per strategy max_over_target_pct,\n"
                "seconds_over_target, energy_shed_kwh, weighted_performance,\n"
                "mean_performance, tier_violations, per_job, with the published 0.9096.\n"
                "Audit logs, settlements and DIR/grid-event.png in DIR (pfi-grid-event).\n"
                "Every cluster runs the same emulated GPUs; the oracle's curves are those\n"
                "GPUs swept every 10 W, the others' the 50 W sweep an operator would make.\n"
                "--period S: the controllers' period (1 s; N x S event-seconds a period).\n"
                "--objective NAME: what oracle and pfi-model maximise (pfi control's): balanced\n"
                "(the default: weighted plus mean performance), weighted, mean or tokens.\n"
                "--clock emulated: agents and controllers on the emulated clock (pfid clock =\n"
                "emulated, pfi control --clock emulated), no Prometheus: the replay runs as\n"
                "fast as the host goes and gives the same numbers every time.\n"
                "\n"
                "Exit codes: 0 success, 1 agent binary missing or a run failed, 2 bad\n"
                "command line, 3 output folder not writable, 4 internal error.\n");
        return f == stdout ? PFI_EXIT_OK : PFI_EXIT_USAGE;
    }
    int rc = grid ? PFI_EXIT_OK : check_cluster_args(argc, argv);
    if (rc != PFI_EXIT_OK)
        return rc;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        cli_error("cannot find the pfi executable");
        return PFI_EXIT_INTERNAL;
    }
    self[n] = '\0';
    /* An installed pfi (cmake --install, the Debian package) has pfid beside it and the
     * script in ../share/pfi/scripts; a build tree has them where CMake says. */
    char dir[PATH_MAX], beside[PATH_MAX + 8];
    snprintf(dir, sizeof dir, "%s", self);
    char *slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
    snprintf(beside, sizeof beside, "%s/pfid", dir);
    const char *agent = getenv("PFI_AGENT_BIN");
    if (agent == NULL || agent[0] == '\0')
        agent = access(beside, X_OK) == 0 ? beside : PFI_AGENT_DEFAULT;
    if (access(agent, X_OK) != 0) {
        cli_error("agent binary %s not found (build pfid, or set PFI_AGENT_BIN)", agent);
        return PFI_EXIT_DATA;
    }
    const char *script_name = grid ? "demo-grid-event.sh" : "demo-cluster.sh";
    char script[PATH_MAX + 40];
    /* An installed pfi has its scripts in ../share/pfi/scripts; a build tree in the source. */
    snprintf(script, sizeof script, "%s/../share/pfi/scripts/%s", dir, script_name);
    if (access(script, R_OK) != 0)
        snprintf(script, sizeof script, "%s/scripts/%s", PFI_SOURCE_DIR, script_name);
    char **av = calloc((size_t)argc + 4, sizeof *av);
    if (av == NULL)
        return PFI_EXIT_INTERNAL;
    av[0] = "/bin/sh";
    av[1] = script;
    av[2] = self;
    av[3] = (char *)agent;
    for (int i = 2; i < argc; i++)
        av[i + 2] = argv[i];
    fflush(NULL);
    execv("/bin/sh", av);
    cli_error("cannot run %s", script);
    free(av);
    return PFI_EXIT_INTERNAL;
}
