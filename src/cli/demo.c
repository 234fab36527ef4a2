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

int cmd_demo(int argc, char **argv)
{
    /* --help anywhere (pfi demo --help, pfi demo cluster --help ...) is the help */
    bool help = false;
    for (int i = 1; i < argc; i++)
        help = help || is_help(argv[i]);
    if (help || argc < 2 || strcmp(argv[1], "cluster") != 0) {
        FILE *f = help ? stdout : stderr;
        fprintf(f, "usage: pfi demo cluster [--agents N] [--out DIR] [--strategy NAME]\n"
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
                   "Exit codes: 0 success, 1 agent binary missing or a run failed, 2 bad\n"
                   "command line, 3 output folder not writable, 4 internal error.\n");
        return f == stdout ? PFI_EXIT_OK : PFI_EXIT_USAGE;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        cli_error("demo: cannot find the pfi executable");
        return PFI_EXIT_INTERNAL;
    }
    self[n] = '\0';
    /* An installed pfi (cmake --install, the Debian package) has pfid beside it and the
     * script in ../share/pfi/scripts; a build tree has them where CMake says. */
    char dir[PATH_MAX], beside[PATH_MAX + 8], installed[PATH_MAX + 40];
    snprintf(dir, sizeof dir, "%s", self);
    char *slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
    snprintf(beside, sizeof beside, "%s/pfid", dir);
    snprintf(installed, sizeof installed, "%s/../share/pfi/scripts/demo-cluster.sh", dir);
    const char *agent = getenv("PFI_AGENT_BIN");
    if (agent == NULL || agent[0] == '\0')
        agent = access(beside, X_OK) == 0 ? beside : PFI_AGENT_DEFAULT;
    if (access(agent, X_OK) != 0) {
        cli_error("demo: agent binary %s not found (build pfid, or set PFI_AGENT_BIN)", agent);
        return PFI_EXIT_DATA;
    }
    char script[PATH_MAX + 40];
    if (access(installed, R_OK) == 0)
        snprintf(script, sizeof script, "%s", installed);
    else
        snprintf(script, sizeof script, "%s/scripts/demo-cluster.sh", PFI_SOURCE_DIR);
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
    cli_error("demo: cannot run %s", script);
    free(av);
    return PFI_EXIT_INTERNAL;
}
