/*
 * pfi/gpu.h dispatch: the one table of backends (available_backends[]: every name, kind,
 * capability and open function comes from there), one handle, one vtable, the real
 * monotonic clock by default.
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

/* Every backend, indexed by its kind: the order names are listed to users. Adding one: its
 * file defines its hw_backend, its kind goes into pfi_gpu_kind (pfi/gpu.h), its entry here. */
static const hw_backend *const available_backends[] = {
    [PFI_GPU_NVML] = &hw_nvml_backend,
    [PFI_GPU_EMULATED] = &hw_emulated_backend,
    [PFI_GPU_REPLAY] = &hw_replay_backend,
};
#define N_BACKENDS (sizeof available_backends / sizeof available_backends[0])
_Static_assert(N_BACKENDS == PFI_GPU_KIND_COUNT,
               "one entry of available_backends[] per pfi_gpu_kind (pfi/gpu.h)");

struct pfi_gpu {
    const hw_backend *backend;
    const pfi_gpu_ops *ops;
    void *ctx;
};

/* The table entry of kind, or NULL. */
static const hw_backend *backend_of(pfi_gpu_kind kind)
{
    for (size_t k = 0; k < N_BACKENDS; k++)
        if (available_backends[k]->kind == kind)
            return available_backends[k];
    return NULL;
}

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
    for (size_t k = 0; name != NULL && k < N_BACKENDS; k++)
        if (strcmp(name, available_backends[k]->name) == 0) {
            *out = available_backends[k]->kind;
            return true;
        }
    return false;
}

const char *pfi_gpu_kind_name(pfi_gpu_kind kind)
{
    const hw_backend *b = backend_of(kind);
    return b != NULL ? b->name : NULL;
}

unsigned pfi_gpu_backend_caps(pfi_gpu_kind kind)
{
    const hw_backend *b = backend_of(kind);
    return b != NULL ? b->caps : 0;
}

const char *pfi_gpu_library_env(pfi_gpu_kind kind)
{
    const hw_backend *b = backend_of(kind);
    return b != NULL ? b->library_env : NULL;
}

const char *pfi_gpu_kind_names(unsigned need, char *buf, size_t len)
{
    size_t total = 0, listed = 0, used = 0;
    for (size_t k = 0; k < N_BACKENDS; k++)
        total += (available_backends[k]->caps & need) == need;
    if (len > 0)
        buf[0] = '\0';
    for (size_t k = 0; k < N_BACKENDS && used < len; k++) {
        if ((available_backends[k]->caps & need) != need)
            continue;
        const char *sep = listed == 0 ? "" : listed + 1 == total ? " or " : ", ";
        int w = snprintf(buf + used, len - used, "%s%s", sep, available_backends[k]->name);
        used = w < 0 ? len : used + (size_t)w;
        listed++;
    }
    return buf;
}

pfi_error pfi_gpu_open(const pfi_gpu_config *c, pfi_gpu **out, pfi_diag *diag)
{
    *out = NULL;
    pfi_diag_clear(diag);
    const hw_backend *b = backend_of(c->kind);
    if (b == NULL)
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "unknown backend %d", (int)c->kind);
    pfi_gpu *g = pfi_calloc(1, sizeof *g);
    if (g == NULL)
        return PFI_ERR_NOMEM;
    g->backend = b;
    pfi_error e = b->open(c, &g->ops, &g->ctx, diag);
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
    return g->backend->name;
}

unsigned pfi_gpu_caps(const pfi_gpu *g)
{
    return g->backend->caps;
}

bool pfi_gpu_is_virtual_clock(const pfi_gpu *g)
{
    return (g->backend->caps & PFI_GPU_CAP_VIRTUAL_CLOCK) != 0;
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
                       g->backend->name);
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
    if (t_s > 1e15) /* beyond any monotonic clock, and beyond what time_t converts exactly */
        t_s = 1e15;
    struct timespec ts;
    ts.tv_sec = (time_t)floor(t_s);
    ts.tv_nsec = (long)((t_s - floor(t_s)) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_nsec = 999999999L;
    int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    if (rc == EINTR)
        return PFI_ERR_INTERRUPTED;
    return rc == 0 ? PFI_OK : PFI_ERR_INVALID_ARGUMENT; /* EINVAL: a time the clock refuses */
}

/* The job interface of g, or NULL when its backend runs no emulated jobs. */
static const hw_job_ops *jobs_of(const pfi_gpu *g)
{
    return (g->backend->caps & PFI_GPU_CAP_JOBS) != 0 ? g->backend->jobs : NULL;
}

pfi_error pfi_gpu_job_start(pfi_gpu *g)
{
    const hw_job_ops *j = jobs_of(g);
    return j != NULL ? j->start(g->ctx) : PFI_ERR_NOT_SUPPORTED;
}

pfi_error pfi_gpu_job_stop(pfi_gpu *g)
{
    const hw_job_ops *j = jobs_of(g);
    return j != NULL ? j->stop(g->ctx) : PFI_ERR_NOT_SUPPORTED;
}

pfi_error pfi_gpu_job_poll(pfi_gpu *g, double *t_s, double *tokens_per_s, size_t max, size_t *n)
{
    return pfi_gpu_job_poll_at(g, 0, t_s, tokens_per_s, max, n);
}

pfi_error pfi_gpu_job_count(pfi_gpu *g, unsigned *n)
{
    *n = 0;
    const hw_job_ops *j = jobs_of(g);
    if (j == NULL)
        return PFI_ERR_NOT_SUPPORTED;
    *n = j->count(g->ctx);
    return PFI_OK;
}

pfi_error pfi_gpu_job_gpus(pfi_gpu *g, unsigned job, unsigned *first, unsigned *count)
{
    *first = *count = 0;
    const hw_job_ops *j = jobs_of(g);
    if (j == NULL)
        return PFI_ERR_NOT_SUPPORTED;
    if (job >= j->count(g->ctx))
        return PFI_ERR_INVALID_ARGUMENT;
    j->gpus(g->ctx, job, first, count);
    return PFI_OK;
}

pfi_error pfi_gpu_job_poll_at(pfi_gpu *g, unsigned job, double *t_s, double *tokens_per_s,
                              size_t max, size_t *n)
{
    *n = 0;
    const hw_job_ops *j = jobs_of(g);
    if (j == NULL)
        return PFI_ERR_NOT_SUPPORTED;
    if (job >= j->count(g->ctx))
        return PFI_ERR_INVALID_ARGUMENT;
    *n = j->poll(g->ctx, job, t_s, tokens_per_s, max);
    return PFI_OK;
}
