/*
 * bench/agent_farm — the in-process stand-in for many pfid processes (bench/control.sh):
 * one process running N pfid agents, each from its own pfid.conf, each exactly what a pfid
 * process runs — pfid's own code (libpfid_core: configuration, the emulated GPUs and their
 * sampler thread, the static jobs file, the cap journal and lease, the HTTP API on its own
 * port through the shared server) — started and stopped in the same order as pfid's main().
 * What differs from N processes: the agents share one address space, one log level and one
 * set of shared libraries (no process per agent: no per-process page tables, no
 * inter-process context switches), so that on a small machine the bench measures the
 * controller, not N processes' scheduling. The controller cannot tell the two apart: every
 * agent is a separate HTTP server on its own port with its own state.
 *
 *   agent_farm CONF...
 *
 * Each agent writes its port file (port_file in its configuration) once it listens; the
 * farm prints "ready N" when all have started, and stops them all (caps restored or held as
 * each one's shutdown policy says) on SIGTERM or SIGINT. Exit 0, 2 for a bad configuration,
 * 3 when an agent cannot start.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "pfi/fit.h"
#include "slurm.h"

/* pfid's main() up to its signal loop, for one agent: 0, 2 (configuration) or 3 (start). */
static int agent_start(pfid_agent *a, const char *conf, bool first, struct pfi_http_server **http)
{
    pfi_diag d;
    pfi_diag_clear(&d);
    char buf[1200];
    pfid_config_defaults(&a->cfg);
    if (pfid_config_load(&a->cfg, conf, &d) != PFI_OK || pfid_config_check(&a->cfg, &d) != PFI_OK) {
        fprintf(stderr, "agent_farm: %s: %s\n", conf, pfi_diag_format(&d, buf, sizeof buf));
        return 2;
    }
    if (first) /* one log level for the process: the first agent's */
        pfid_log_set_level(a->cfg.log_level);
    snprintf(a->config_path, sizeof a->config_path, "%s", conf);
    memset(&a->tokens, 0, sizeof a->tokens);
    if (a->cfg.token_file[0] != '\0' &&
        pfi_http_tokens_load(a->cfg.token_file, &a->tokens, &d) != PFI_OK) {
        fprintf(stderr, "agent_farm: %s: %s\n", conf, d.message);
        return 2;
    }
    if (pfid_listen_check(&a->cfg, a->tokens.n > 0, &d) != PFI_OK) {
        fprintf(stderr, "agent_farm: %s: %s\n", conf, d.message);
        return 2;
    }
    pfid_agent_init(a);
    pfi_gpu_config gc = {.kind = a->cfg.backend,
                         .library = a->cfg.nvml_library[0] ? a->cfg.nvml_library : NULL,
                         .emulate = a->cfg.emulate[0] ? a->cfg.emulate : NULL,
                         .replay_path = a->cfg.replay};
    if (pfi_gpu_open(&gc, &a->gpu, &d) != PFI_OK) {
        fprintf(stderr, "agent_farm: %s: cannot open the GPU backend: %s\n", conf, d.message);
        return 3;
    }
    if (pfid_sampler_init(a) != 0)
        return 3;
    if (a->cfg.jobs == PFID_JOBS_STATIC && pfid_jobs_load_mapping(a) != 0)
        return 2;
    pfid_caps_start(a);
    if (!a->caps_available)
        fprintf(stderr, "agent_farm: %s: cap control unavailable: %s\n", conf, a->caps_why);
    if (pfid_sampler_start(a) != 0)
        return 3;
    *http = pfid_http_start(a);
    if (*http == NULL || pfid_slurm_start(a) != 0)
        return 3;
    return 0;
}

/* pfid's main() after its signal loop. */
static void agent_stop(pfid_agent *a, struct pfi_http_server *http)
{
    pfid_http_stop(http);
    pfid_sampler_stop(a);
    pfid_slurm_stop(a);
    pfid_caps_stop(a);
    pfi_gpu_close(a->gpu);
    pfid_mapping_clear(&a->mapping);
    free(a->gpus);
    pfi_fit_model_destroy(a->model);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: agent_farm CONF...\n");
        return 2;
    }
    size_t n = (size_t)argc - 1;
    pfid_agent *agents = calloc(n, sizeof *agents);
    struct pfi_http_server **http = calloc(n, sizeof *http);
    if (agents == NULL || http == NULL)
        return 3;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* every agent thread inherits it */
    signal(SIGPIPE, SIG_IGN);
    int status = 0;
    size_t started = 0;
    for (; started < n && status == 0; started++) {
        status = agent_start(&agents[started], argv[started + 1], started == 0, &http[started]);
    }
    if (status == 0) {
        printf("ready %zu\n", n);
        fflush(stdout);
        for (;;) {
            struct timespec ts = {0, 200 * 1000 * 1000};
            int sig = sigtimedwait(&set, NULL, &ts);
            if (sig == SIGTERM || sig == SIGINT)
                break;
            double now = pfid_mono_s();
            for (size_t k = 0; k < n; k++)
                pfid_caps_tick(&agents[k], now);
        }
    }
    for (size_t k = started; k-- > 0;)
        agent_stop(&agents[k], http[k]);
    free(http);
    free(agents);
    return status;
}
