/*
 * pfi/gpu.h dispatch: one handle, one vtable, the real monotonic clock by default.
 */
#include "hw/backend.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/memory.h"

struct pfi_gpu {
    const pfi_gpu_ops *ops;
    void *ctx;
};

pfi_error hw_fail(pfi_diag *diag, pfi_error e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_diag_vset(diag, NULL, 0, NULL, fmt, ap);
    va_end(ap);
    return e;
}

double hw_monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool pfi_gpu_kind_parse(const char *name, pfi_gpu_kind *out)
{
    static const char *const names[] = {"nvml", "emulated", "replay"};
    for (int k = 0; k < 3; k++)
        if (name != NULL && strcmp(name, names[k]) == 0) {
            *out = (pfi_gpu_kind)k;
            return true;
        }
    return false;
}

pfi_error pfi_gpu_open(const pfi_gpu_config *c, pfi_gpu **out, pfi_diag *diag)
{
    *out = NULL;
    pfi_diag_clear(diag);
    pfi_gpu *g = pfi_calloc(1, sizeof *g);
    if (g == NULL)
        return PFI_ERR_NOMEM;
    pfi_error e;
    switch (c->kind) {
    case PFI_GPU_NVML:
        e = hw_nvml_open(c, &g->ops, &g->ctx, diag);
        break;
    case PFI_GPU_EMULATED:
        e = hw_emulated_open(c, &g->ops, &g->ctx, diag);
        break;
    case PFI_GPU_REPLAY:
        e = hw_replay_open(c, &g->ops, &g->ctx, diag);
        break;
    default:
        e = hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "unknown backend %d", (int)c->kind);
    }
    if (e != PFI_OK) {
        pfi_free(g);
        return e;
    }
    *out = g;
    return PFI_OK;
}

void pfi_gpu_close(pfi_gpu *g)
{
    if (g == NULL)
        return;
    g->ops->close(g->ctx);
    pfi_free(g);
}

const char *pfi_gpu_backend_name(const pfi_gpu *g)
{
    return g->ops->name;
}

bool pfi_gpu_is_virtual_clock(const pfi_gpu *g)
{
    return g->ops->now_s != NULL;
}

pfi_error pfi_gpu_count(pfi_gpu *g, unsigned *n, pfi_diag *diag)
{
    *n = 0;
    return g->ops->count(g->ctx, n, diag);
}

pfi_error pfi_gpu_get_info(pfi_gpu *g, unsigned i, pfi_gpu_info *out, pfi_diag *diag)
{
    memset(out, 0, sizeof *out);
    out->index = i;
    return g->ops->info(g->ctx, i, out, diag);
}

pfi_error pfi_gpu_read_sample(pfi_gpu *g, unsigned i, pfi_gpu_sample *out, pfi_diag *diag)
{
    memset(out, 0, sizeof *out);
    out->power_w = out->energy_j = out->sm_clock_mhz = out->mem_clock_mhz = NAN;
    out->gpu_util = out->mem_util = out->temp_c = NAN;
    out->dram_active = out->tensor_active = out->sm_active = NAN;
    out->t_s = pfi_gpu_now_s(g);
    return g->ops->sample(g->ctx, i, out, diag);
}

pfi_error pfi_gpu_read_limits(pfi_gpu *g, unsigned i, pfi_gpu_limits *out, pfi_diag *diag)
{
    memset(out, 0, sizeof *out);
    return g->ops->limits(g->ctx, i, out, diag);
}

pfi_error pfi_gpu_set_limit_mw(pfi_gpu *g, unsigned i, uint32_t mw, pfi_diag *diag)
{
    return g->ops->set_limit_mw(g->ctx, i, mw, diag);
}

pfi_error pfi_gpu_processes(pfi_gpu *g, unsigned i, unsigned *pids, size_t max, size_t *n,
                            pfi_diag *diag)
{
    *n = 0;
    if (g->ops->processes == NULL)
        return hw_fail(diag, PFI_ERR_NOT_SUPPORTED, "the %s backend cannot list processes",
                       g->ops->name);
    return g->ops->processes(g->ctx, i, pids, max, n, diag);
}

double pfi_gpu_now_s(pfi_gpu *g)
{
    return g->ops->now_s != NULL ? g->ops->now_s(g->ctx) : hw_monotonic_s();
}

pfi_error pfi_gpu_sleep_until_s(pfi_gpu *g, double t_s)
{
    if (g->ops->sleep_until_s != NULL)
        return g->ops->sleep_until_s(g->ctx, t_s);
    if (!(t_s > 0) || !isfinite(t_s))
        return PFI_OK;
    struct timespec ts;
    ts.tv_sec = (time_t)floor(t_s);
    ts.tv_nsec = (long)((t_s - floor(t_s)) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_nsec = 999999999L;
    int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    if (rc == EINTR)
        return PFI_ERR_INTERRUPTED;
    return PFI_OK;
}

pfi_error pfi_gpu_job_start(pfi_gpu *g)
{
    return g->ops->job_start != NULL ? g->ops->job_start(g->ctx) : PFI_ERR_NOT_SUPPORTED;
}

pfi_error pfi_gpu_job_stop(pfi_gpu *g)
{
    return g->ops->job_stop != NULL ? g->ops->job_stop(g->ctx) : PFI_ERR_NOT_SUPPORTED;
}

pfi_error pfi_gpu_job_poll(pfi_gpu *g, double *t_s, double *tokens_per_s, size_t max, size_t *n)
{
    return pfi_gpu_job_poll_at(g, 0, t_s, tokens_per_s, max, n);
}

pfi_error pfi_gpu_job_count(pfi_gpu *g, unsigned *n)
{
    *n = 0;
    if (g->ops->job_count == NULL)
        return PFI_ERR_NOT_SUPPORTED;
    *n = g->ops->job_count(g->ctx);
    return PFI_OK;
}

pfi_error pfi_gpu_job_gpus(pfi_gpu *g, unsigned job, unsigned *first, unsigned *count)
{
    *first = *count = 0;
    if (g->ops->job_count == NULL)
        return PFI_ERR_NOT_SUPPORTED;
    if (job >= g->ops->job_count(g->ctx))
        return PFI_ERR_INVALID_ARGUMENT;
    g->ops->job_gpus(g->ctx, job, first, count);
    return PFI_OK;
}

pfi_error pfi_gpu_job_poll_at(pfi_gpu *g, unsigned job, double *t_s, double *tokens_per_s,
                              size_t max, size_t *n)
{
    *n = 0;
    if (g->ops->job_poll == NULL || g->ops->job_count == NULL)
        return PFI_ERR_NOT_SUPPORTED;
    if (job >= g->ops->job_count(g->ctx))
        return PFI_ERR_INVALID_ARGUMENT;
    *n = g->ops->job_poll(g->ctx, job, t_s, tokens_per_s, max);
    return PFI_OK;
}
