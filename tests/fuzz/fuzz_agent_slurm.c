/*
 * Fuzz harness: pfid's Slurm registration requests (src/agent/slurm.c pfid_slurm_handle) on
 * a four-GPU agent without a backend, and the request builder of the plugin and `pfi slurm`
 * (src/slurm/proto.c). The first byte picks: even, the raw request (from root; bit 1: from
 * uid 1000); odd, the builder on the rest split at NULs (job, user, gpus, class, flex, min,
 * pfi), whose request, when built, then goes to pfid too.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "slurm.h"
#include "slurm/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static pfid_agent *agent(void)
{
    static pfid_agent *a;
    if (a != NULL)
        return a;
    a = calloc(1, sizeof *a);
    pfid_config_defaults(&a->cfg);
    a->n_gpus = 4;
    a->gpus = calloc(4, sizeof *a->gpus);
    for (unsigned k = 0; k < 4; k++) {
        snprintf(a->gpus[k].info.uuid, sizeof a->gpus[k].info.uuid, "GPU-%u", k);
        a->gpus[k].ever = true;
        a->gpus[k].last.valid = PFI_SAMPLE_ENERGY;
        a->gpus[k].last.energy_j = 1000.0 * k;
    }
    snprintf(a->hostname, sizeof a->hostname, "fuzz");
    pthread_mutex_init(&a->snap_lock, NULL);
    pthread_mutex_init(&a->gpu_lock, NULL);
    pthread_mutex_init(&a->caps_lock, NULL);
    return a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    pfid_agent *a = agent();
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    if (!(data[0] & 1)) {
        free(pfid_slurm_handle(a, text, len, (data[0] & 2) ? 1000u : 0u));
        pfid_slurm_round(a);
        return 0;
    }
    char *buf = malloc(len + 8);
    if (buf == NULL)
        return 0;
    memcpy(buf, text, len);
    memset(buf + len, 0, 8);
    const char *f[7];
    const char *p = buf;
    for (int k = 0; k < 7; k++) {
        f[k] = p < buf + len ? p : NULL;
        if (p < buf + len)
            p += strlen(p) + 1;
    }
    char req[PFI_SLURM_REQ_MAX], err[600], comment[1024];
    if (pfi_slurm_start_request(req, sizeof req, f[0], f[1], f[2], f[3], f[4], f[5], f[6], err,
                                sizeof err))
        free(pfid_slurm_handle(a, req, strlen(req), 0));
    pfi_slurm_options_comment(comment, sizeof comment, f[3], f[4], f[5], f[6]);
    if (f[0] != NULL && pfi_slurm_end_request(req, sizeof req, f[0], err, sizeof err))
        free(pfid_slurm_handle(a, req, strlen(req), 0));
    free(buf);
    return 0;
}
