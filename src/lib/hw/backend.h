/*
 * The backend interface behind pfi/gpu.h. Each backend (nvml.c, emulated.c, replay.c)
 * describes itself in one hw_backend entry — name, kind, capabilities, open function, and
 * the optional interfaces it offers — and gpu.c lists those entries in its one table,
 * available_backends[]. Nothing outside src/lib/hw names a backend: callers ask
 * pfi_gpu_backend_caps / pfi_gpu_caps instead.
 *
 * An open backend is a generic vtable (pfi_gpu_ops) and a context; gpu.c dispatches and
 * supplies the real clock when a backend has none of its own.
 */
#ifndef PFI_HW_BACKEND_H
#define PFI_HW_BACKEND_H

#include "pfi/gpu.h"

/* The generic vtable: what every backend does. */
typedef struct pfi_gpu_ops {
    void (*close)(void *ctx);
    pfi_error (*count)(void *ctx, unsigned *n, pfi_diag *diag);
    pfi_error (*info)(void *ctx, unsigned i, pfi_gpu_info *out, pfi_diag *diag);
    pfi_error (*sample)(void *ctx, unsigned i, pfi_gpu_sample *out, pfi_diag *diag);
    pfi_error (*limits)(void *ctx, unsigned i, pfi_gpu_limits *out, pfi_diag *diag);
    pfi_error (*set_limit_mw)(void *ctx, unsigned i, uint32_t mw, pfi_diag *diag);
    /* compute processes on GPU i; NULL: not supported */
    pfi_error (*processes)(void *ctx, unsigned i, unsigned *pids, size_t max, size_t *n,
                           pfi_diag *diag);
    /* virtual clock (PFI_GPU_CAP_VIRTUAL_CLOCK); NULL: CLOCK_MONOTONIC and clock_nanosleep */
    double (*now_s)(void *ctx);
    pfi_error (*sleep_until_s)(void *ctx, double t_s);
} pfi_gpu_ops;

/*
 * The emulated-job interface (PFI_GPU_CAP_JOBS), on the same context as the vtable: start
 * and stop act on every job; poll writes up to max reports of job k and returns how many;
 * count is the number of jobs; gpus gives job k's GPUs. gpu.c checks k < count first.
 */
typedef struct hw_job_ops {
    pfi_error (*start)(void *ctx);
    pfi_error (*stop)(void *ctx);
    size_t (*poll)(void *ctx, unsigned job, double *t_s, double *tput, size_t max);
    unsigned (*count)(void *ctx);
    void (*gpus)(void *ctx, unsigned job, unsigned *first, unsigned *n);
} hw_job_ops;

/* hw_backend — one entry of the backend table. */
typedef struct hw_backend {
    pfi_gpu_kind kind;
    const char *name;        /* what pfi_gpu_kind_parse accepts and journals record */
    unsigned caps;           /* PFI_GPU_CAP_* */
    const char *library_env; /* pfi_gpu_library_env; NULL: the backend loads no library */
    /* on success *ops and *ctx describe the open backend */
    pfi_error (*open)(const pfi_gpu_config *c, const pfi_gpu_ops **ops, void **ctx, pfi_diag *diag);
    const hw_job_ops *jobs; /* with PFI_GPU_CAP_JOBS; else NULL */
} hw_backend;

/* The backends, each defined in its own file. */
extern const hw_backend hw_nvml_backend;
extern const hw_backend hw_emulated_backend;
extern const hw_backend hw_replay_backend;

/* hw_fail — fill diag (may be NULL) with a printf-style message; return e. */
pfi_error hw_fail(pfi_diag *diag, pfi_error e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* hw_monotonic_s — CLOCK_MONOTONIC in seconds. */
double hw_monotonic_s(void);

#endif
