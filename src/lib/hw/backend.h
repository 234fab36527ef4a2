/*
 * The backend vtable behind pfi/gpu.h. Each backend (nvml.c, emulated.c, replay.c) fills a
 * pfi_gpu_ops and a context; gpu.c dispatches and supplies the real clock when a backend has
 * none of its own.
 */
#ifndef PFI_HW_BACKEND_H
#define PFI_HW_BACKEND_H

#include "pfi/gpu.h"

typedef struct pfi_gpu_ops {
    const char *name;
    void (*close)(void *ctx);
    pfi_error (*count)(void *ctx, unsigned *n, pfi_diag *diag);
    pfi_error (*info)(void *ctx, unsigned i, pfi_gpu_info *out, pfi_diag *diag);
    pfi_error (*sample)(void *ctx, unsigned i, pfi_gpu_sample *out, pfi_diag *diag);
    pfi_error (*limits)(void *ctx, unsigned i, pfi_gpu_limits *out, pfi_diag *diag);
    pfi_error (*set_limit_mw)(void *ctx, unsigned i, uint32_t mw, pfi_diag *diag);
    /* compute processes on GPU i; NULL: not supported */
    pfi_error (*processes)(void *ctx, unsigned i, unsigned *pids, size_t max, size_t *n,
                           pfi_diag *diag);
    /* virtual clock; NULL: CLOCK_MONOTONIC and clock_nanosleep */
    double (*now_s)(void *ctx);
    pfi_error (*sleep_until_s)(void *ctx, double t_s);
    /* emulated jobs (start and stop act on all); NULL: not supported */
    pfi_error (*job_start)(void *ctx);
    pfi_error (*job_stop)(void *ctx);
    size_t (*job_poll)(void *ctx, unsigned job, double *t_s, double *tput, size_t max);
    unsigned (*job_count)(void *ctx);
    void (*job_gpus)(void *ctx, unsigned job, unsigned *first, unsigned *n);
} pfi_gpu_ops;

/* Constructors: on success *ops and *ctx describe the open backend. */
pfi_error hw_nvml_open(const pfi_gpu_config *c, const pfi_gpu_ops **ops, void **ctx,
                       pfi_diag *diag);
pfi_error hw_emulated_open(const pfi_gpu_config *c, const pfi_gpu_ops **ops, void **ctx,
                           pfi_diag *diag);
pfi_error hw_replay_open(const pfi_gpu_config *c, const pfi_gpu_ops **ops, void **ctx,
                         pfi_diag *diag);

/* hw_fail — fill diag (may be NULL) with a printf-style message; return e. */
pfi_error hw_fail(pfi_diag *diag, pfi_error e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* hw_monotonic_s — CLOCK_MONOTONIC in seconds. */
double hw_monotonic_s(void);

#endif
