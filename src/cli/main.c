/*
 * pfi — Power Flexibility Index toolkit: command dispatch.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef PFI_VERSION
#error "PFI_VERSION is set by CMakeLists.txt (project VERSION)"
#endif

typedef struct verb {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} verb;

static const verb verbs[] = {
    {"analyze", cmd_analyze, "compute the Power Flexibility Index of power-cap sweep groups"},
    {"stats", cmd_stats, "class differences, telemetry correlations, sensitivity (stats compare)"},
    {"fit", cmd_fit, "fit and validate (LOO, LOCO) a telemetry PFI predictor"},
    {"predict", cmd_predict, "estimate PFI from telemetry with a fitted model"},
    {"library", cmd_library, "generate the calibrated synthetic job library (library generate)"},
    {"ingest", cmd_ingest, "read a run's telemetry and training log into the run store"},
    {"runs", cmd_runs, "list the runs in the run store"},
    {"allocate", cmd_allocate, "choose per-job power caps under a cluster power budget"},
    {"simulate", cmd_simulate, "compare allocation strategies on simulated workloads"},
    {"sweep", cmd_sweep, "measure a job at several GPU power caps (nvml or emulated GPUs)"},
    {"restore", cmd_restore, "put back the power limits a killed sweep left (from its journal)"},
    {"probe", cmd_probe, "list GPUs, their power limits and the metrics they report"},
    {"control", cmd_control, "keep a cluster under a grid power budget (closed loop, agents)"},
    {"schedule", cmd_schedule, "the grid events a schedule file or a measured power trace gives"},
    {"openadr", cmd_openadr, "an OpenADR 3 VEN: a VTN's events as the schedule, reports back"},
    {"report", cmd_report, "plot a power event from the controller's audit log"},
    {"slurm", cmd_slurm, "Slurm prolog/epilog: a job's GPUs to pfid, restored at its end"},
    {"demo", cmd_demo, "run a demonstration (demo cluster: agents + controller on loopback)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: pfi COMMAND [OPTIONS] [ARGS]\n"
               "\n"
               "pfi measures how much throughput a GPU training job keeps under power caps\n"
               "(the Power Flexibility Index, PFI) from power-cap sweeps.\n"
               "\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(f, "  %-10s %s\n", "help", "show help for a command (pfi help analyze)");
    fprintf(f, "  %-10s %s\n", "version", "print the version");
    fprintf(f, "\n"
               "Run 'pfi COMMAND --help' for a command's options.\n"
               "Exit codes: 0 success, 1 bad or missing input, 2 bad command line,\n"
               "3 output not written, 4 internal error (e.g. out of memory),\n"
               "5 a GPU operation failed (sweep, restore, probe); control and openadr also\n"
               "give 5 and 6 (see their --help), sweep 128+N (stopped by signal N).\n");
}

/* Exit code after printing to stdout: 3 when the text could not be written. */
static int stdout_ok(void)
{
    return cli_stdout_finish(PFI_EXIT_OK);
}

/* pfi version [-h]: the version on stdout; --help its help; anything else a usage error */
static int cmd_version(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: pfi version\n"
               "\n"
               "Print pfi's version (\"pfi X.Y.Z\") on standard output.\n"
               "Exit codes: 0 success, 2 bad command line, 3 output not written.\n");
        return stdout_ok();
    }
    if (argc >= 2)
        return argv[1][0] == '-' ? cli_usage_unknown(argv[1]) : cli_usage_unexpected(argv[1]);
    printf("pfi %s\n", PFI_VERSION);
    return stdout_ok();
}

static int run_main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return PFI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        usage(stdout);
        return stdout_ok();
    }
    if (strcmp(name, "--version") == 0) {
        printf("pfi %s\n", PFI_VERSION);
        return stdout_ok();
    }
    opterr = 0; /* every verb words its own option errors (cli_usage_getopt) */
    if (strcmp(name, "version") == 0) {
        cli_set_command("version");
        return cmd_version(argc - 1, argv + 1);
    }
    if (strcmp(name, "help") == 0) {
        if (argc < 3 || strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0 ||
            strcmp(argv[2], "help") == 0) {
            usage(stdout);
            return stdout_ok();
        }
        /* pfi help A [B ...] is pfi A [B ...] --help: a subcommand's own help */
        char *help_argv[16];
        int n = 0;
        for (int k = 2; k < argc && n < 14; k++)
            help_argv[n++] = argv[k];
        help_argv[n++] = "--help";
        help_argv[n] = NULL;
        if (strcmp(argv[2], "version") == 0) {
            cli_set_command("version");
            return cmd_version(n, help_argv);
        }
        for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
            if (strcmp(argv[2], verbs[i].name) == 0) {
                cli_set_command(verbs[i].name);
                return verbs[i].run(n, help_argv);
            }
        }
        cli_error("unknown command '%s' (see 'pfi --help')", argv[2]);
        return PFI_EXIT_USAGE;
    }
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (strcmp(name, verbs[i].name) == 0) {
            cli_set_command(verbs[i].name);
            return verbs[i].run(argc - 1, argv + 1);
        }
    cli_error("unknown command '%s' (see 'pfi --help')", name);
    return PFI_EXIT_USAGE;
}

/* Every verb ends here: a standard output that could not be written is exit 3 and said once
 * ("pfi: VERB: standard output: cannot write: ..."), whatever the verb printed (its --help too). */
int main(int argc, char **argv)
{
    return cli_stdout_finish(run_main(argc, argv));
}
