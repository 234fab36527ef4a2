/*
 * pfi/gpu.h — GPU access behind one interface (DESIGN §8): enumerate GPUs, read telemetry
 * samples and power limits, set a power cap.
 *
 * Backends (src/lib/hw/, one table of backends, one vtable):
 *   - PFI_GPU_NVML: libnvidia-ml.so.1 loaded with dlopen at pfi_gpu_open (the build needs no
 *     NVIDIA headers or libraries; without the library, open fails with PFI_ERR_UNAVAILABLE).
 *     Versioned symbols (nvmlInit_v2, ...) are tried first. Every NVML return code is mapped
 *     to a pfi_error and the diag message carries the NVML call, the GPU and NVML's name for
 *     the code ("NVML_ERROR_NO_PERMISSION (4)").
 *   - PFI_GPU_EMULATED: GPUs running one training job of the DESIGN §7 model on a virtual
 *     clock (an hour of emulated time costs milliseconds), with noise; caps change clocks,
 *     power and throughput the way the model says, and the job reports its throughput.
 *   - PFI_GPU_REPLAY: a recorded telemetry CSV (columns by name: t_s, gpu, power_w,
 *     sm_clock_mhz, mem_clock_mhz, gpu_util, mem_util, temp_c, dram_active, tensor_active,
 *     energy_j, enforced_limit_w; t_s and gpu required) played back on a virtual clock.
 *     Read-only: setting a cap is PFI_ERR_NOT_SUPPORTED.
 *
 * Callers do not branch on the kind they have: they ask what a backend can do
 * (pfi_gpu_backend_caps before opening, pfi_gpu_caps after) and name it with
 * pfi_gpu_kind_name / pfi_gpu_backend_name.
 *
 * Units: limits in milliwatts (uint32_t, NVML's unit) so that what is set is exactly what is
 * asked; telemetry in W, J, MHz, °C and fractions in [0, 1]. Every field has a validity flag:
 * a value the device cannot give is missing, never 0.
 *
 * Time: pfi_gpu_now_s is the backend's monotonic clock (CLOCK_MONOTONIC, or the virtual clock
 * of the emulated and replay backends); use it, not the wall clock, for every interval.
 *
 * The library reads no environment variable: a caller that honours one (PFI_NVML_LIBRARY)
 * puts its value in pfi_gpu_config.library (see pfi_gpu_library_env).
 *
 * A pfi_gpu handle is not thread-safe; use it from one thread (pfi_gpu_caps and
 * pfi_gpu_backend_name excepted: they read nothing the backend changes).
 */
#ifndef PFI_GPU_H
#define PFI_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"
#include "pfi/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pfi_gpu_kind {
    PFI_GPU_NVML = 0,
    PFI_GPU_EMULATED = 1,
    PFI_GPU_REPLAY = 2,
    /* the real hardware backend, the default of `pfi probe` and pfid */
    PFI_GPU_DEFAULT = PFI_GPU_NVML
} pfi_gpu_kind;
/* The kinds are numbered 0 .. PFI_GPU_KIND_COUNT - 1: a caller lists the backends with
 * pfi_gpu_kind_name over that range (in the order they are shown to users). */
#define PFI_GPU_KIND_COUNT 3

/*
 * Backend capabilities (bits of pfi_gpu_backend_caps and pfi_gpu_caps): what a caller may
 * ask of a backend instead of asking which backend it is.
 */
enum {
    /* pfi_gpu_set_limit_mw can change a limit (without: the backend is read-only and every
     * set is PFI_ERR_NOT_SUPPORTED) */
    PFI_GPU_CAP_SET_LIMITS = 1u << 0,
    /* a limit set outlives the process (a driver setting, not the process's own state): it
     * is journaled before the first change (pfi/capctl.h) and `pfi restore` can put the
     * original back after a crash. nvml only: the emulated GPUs vanish with their process */
    PFI_GPU_CAP_PERSISTENT_LIMITS = 1u << 1,
    /* pfi_gpu_now_s is a virtual clock: sleeping costs nothing (pfi_gpu_is_virtual_clock) */
    PFI_GPU_CAP_VIRTUAL_CLOCK = 1u << 2,
    /* runs emulated training jobs, described by pfi_gpu_config.emulate: pfi_gpu_job_* work
     * and report the jobs' throughput */
    PFI_GPU_CAP_JOBS = 1u << 3,
    /* plays back a recorded file: pfi_gpu_config.replay_path is required */
    PFI_GPU_CAP_REPLAY_FILE = 1u << 4
};

/* pfi_gpu_kind_parse — a backend's name ("nvml", "emulated", "replay") into *out; false when
 * no backend has that name (or name is NULL; *out untouched). */
bool pfi_gpu_kind_parse(const char *name, pfi_gpu_kind *out);

/* pfi_gpu_kind_name — the name of backend kind (static; what pfi_gpu_kind_parse accepts and
 * pfi_gpu_backend_name returns), or NULL when kind is no backend. */
const char *pfi_gpu_kind_name(pfi_gpu_kind kind);

/* pfi_gpu_backend_caps — the PFI_GPU_CAP_* bits of backend kind, known before it is opened;
 * 0 when kind is no backend. */
unsigned pfi_gpu_backend_caps(pfi_gpu_kind kind);

/*
 * pfi_gpu_kind_names — the names of the backends that have every capability in need (0: all
 * backends), in table order, as an English list ("nvml, emulated or replay", "nvml or
 * emulated", "emulated"), into buf[len] (truncated to fit, NUL-terminated when len > 0);
 * "" when none has them. Returns buf. For messages that list the accepted names.
 */
const char *pfi_gpu_kind_names(unsigned need, char *buf, size_t len);

/*
 * pfi_gpu_library_env — the environment variable by which a user conventionally names the
 * shared library backend kind loads ("PFI_NVML_LIBRARY" for nvml; static), or NULL when it
 * loads none. The library never reads it: a caller that honours it passes its value as
 * pfi_gpu_config.library when no library was given explicitly.
 */
const char *pfi_gpu_library_env(pfi_gpu_kind kind);

/* pfi_gpu_config — how to open a backend. Zero-initialise, then set what applies. */
typedef struct pfi_gpu_config {
    pfi_gpu_kind kind;
    /* the shared library the backend loads, for the backends that load one (nvml:
     * dlopen'ed; NULL or "": "libnvidia-ml.so.1"); ignored by the others. No environment
     * variable is consulted here (see pfi_gpu_library_env). */
    const char *library;
    /*
     * emulated: "key=value,..." (NULL: defaults). Keys: gpus (8), alpha (compute share of
     * the step time at f_max, 0.8), pu (W drawn uncapped, 650), ps (static W, 0.25·pu),
     * gamma (2), fmax (MHz, 1980), fmin (MHz, 345), tdp (default limit W, 700), min (W, 200),
     * max (W, 700), tput (tokens/s at fmax, 10000), noise (relative, 0.01), startup (s of job
     * start-up without throughput, 60), ckpt (s between checkpoint dips, 600; 0 none),
     * ckpt_len (s, 20), report (s between throughput reports, 10), tau (s, clock response
     * time, 2), read_cost (virtual s per sample read, 0.0005), spread (relative per-GPU
     * spread of pu and ps, 0.02), seed (1), step (s per training step at fmax, 1),
     * dram_peak (DRAM activity of an all-memory step, 0.9), tensor_peak (tensor activity of
     * an all-compute step, 0.9). The job keys map onto pfi_model_job (pfi/model.h; see
     * pfi_gpu_emulate_job); each GPU runs that model with its own P_u, P_s.
     * Several jobs: segments separated by ';' ("gpus=4,alpha=0.93;gpus=4,alpha=0.55"), one
     * job each on its own GPUs, numbered in segment order, on one virtual clock; a segment
     * starts from the previous segment's values with seed + 1 (see pfi_gpu_job_count).
     */
    const char *emulate;
    /* replay: the recorded telemetry CSV */
    const char *replay_path;
} pfi_gpu_config;

/* pfi_gpu — an open backend (opaque). */
typedef struct pfi_gpu pfi_gpu;

/*
 * pfi_gpu_open — open the backend c describes into *out (owned; pfi_gpu_close). For nvml
 * this loads the library and calls nvmlInit. Nothing on any GPU is changed. Errors:
 * PFI_ERR_UNAVAILABLE (library or a required symbol missing), PFI_ERR_DEVICE and the other
 * mapped NVML errors (nvmlInit failed), PFI_ERR_INVALID_ARGUMENT (bad emulate spec), the
 * replay reader's errors (PFI_ERR_IO, PFI_ERR_PARSE, PFI_ERR_MISSING_COLUMN, PFI_ERR_VALUE),
 * PFI_ERR_NOMEM. diag (may be NULL) says what and why.
 */
pfi_error pfi_gpu_open(const pfi_gpu_config *c, pfi_gpu **out, pfi_diag *diag);

/* pfi_gpu_close — shut the backend down (nvmlShutdown, dlclose) and free g. NULL: no-op. */
void pfi_gpu_close(pfi_gpu *g);

/* pfi_gpu_backend_name — the open backend's name: pfi_gpu_kind_name of its kind (static). */
const char *pfi_gpu_backend_name(const pfi_gpu *g);

/* pfi_gpu_caps — the open backend's PFI_GPU_CAP_* bits (pfi_gpu_backend_caps of its kind). */
unsigned pfi_gpu_caps(const pfi_gpu *g);

/* pfi_gpu_is_virtual_clock — true when time is emulated (sleeping costs nothing); the same
 * as pfi_gpu_caps(g) & PFI_GPU_CAP_VIRTUAL_CLOCK. */
bool pfi_gpu_is_virtual_clock(const pfi_gpu *g);

/* pfi_gpu_count — number of GPUs in *n. Errors: mapped NVML errors. */
pfi_error pfi_gpu_count(pfi_gpu *g, unsigned *n, pfi_diag *diag);

/* pfi_gpu_info — identity of one GPU (index as enumerated by the backend). */
typedef struct pfi_gpu_info {
    unsigned index;
    char uuid[96]; /* "GPU-..."; "" when the backend cannot tell */
    char name[96]; /* "NVIDIA H200"; "" when unknown */
} pfi_gpu_info;

/* pfi_gpu_get_info — fill *out for GPU i. Errors: PFI_ERR_INVALID_ARGUMENT (no such GPU),
 * mapped NVML errors. */
pfi_error pfi_gpu_get_info(pfi_gpu *g, unsigned i, pfi_gpu_info *out, pfi_diag *diag);

/* Validity flags of pfi_gpu_sample.valid. */
enum {
    PFI_SAMPLE_POWER = 1u << 0,
    PFI_SAMPLE_ENERGY = 1u << 1,
    PFI_SAMPLE_SM_CLOCK = 1u << 2,
    PFI_SAMPLE_MEM_CLOCK = 1u << 3,
    PFI_SAMPLE_GPU_UTIL = 1u << 4,
    PFI_SAMPLE_MEM_UTIL = 1u << 5,
    PFI_SAMPLE_TEMP = 1u << 6,
    PFI_SAMPLE_REASONS = 1u << 7,
    PFI_SAMPLE_DRAM_ACTIVE = 1u << 8,
    PFI_SAMPLE_TENSOR_ACTIVE = 1u << 9,
    PFI_SAMPLE_SM_ACTIVE = 1u << 10
};

/* Clock-event (throttle) reason bits, as NVML defines them. */
#define PFI_REASON_GPU_IDLE 0x1ull
#define PFI_REASON_SW_POWER_CAP 0x4ull
#define PFI_REASON_HW_SLOWDOWN 0x8ull
#define PFI_REASON_SW_THERMAL 0x20ull
#define PFI_REASON_HW_THERMAL 0x40ull
#define PFI_REASON_HW_POWER_BRAKE 0x80ull

/* pfi_gpu_sample — one telemetry sample of one GPU. A field counts only when its flag is set. */
typedef struct pfi_gpu_sample {
    double t_s;           /* backend monotonic time the sample was taken, s */
    double power_w;       /* power draw (NVML: nvmlDeviceGetPowerUsage), W */
    double energy_j;      /* total energy counter since driver load, J */
    double sm_clock_mhz;  /* SM clock, MHz */
    double mem_clock_mhz; /* memory clock, MHz */
    double gpu_util;      /* fraction of time a kernel ran, [0, 1] */
    double mem_util;      /* fraction of time memory was read or written, [0, 1] */
    double temp_c;        /* GPU temperature, °C */
    uint64_t reasons;     /* clock-event reasons (PFI_REASON_* bits) */
    double dram_active;   /* DRAM bandwidth utilisation, [0, 1] (GPM on Hopper) */
    double tensor_active; /* any tensor pipe active, [0, 1] (GPM) */
    double sm_active;     /* SM active, [0, 1] (GPM) */
    unsigned valid;       /* PFI_SAMPLE_* */
} pfi_gpu_sample;

/*
 * pfi_gpu_read_sample — read every metric of GPU i the backend offers. A metric that is not
 * supported leaves its flag clear and is not an error. Errors: PFI_ERR_GPU_LOST (the GPU is
 * gone: the sample is unusable), PFI_ERR_INVALID_ARGUMENT (no such GPU).
 */
pfi_error pfi_gpu_read_sample(pfi_gpu *g, unsigned i, pfi_gpu_sample *out, pfi_diag *diag);

/* Validity flags of pfi_gpu_limits.valid. */
enum {
    PFI_LIMIT_CURRENT = 1u << 0,  /* requested (management) limit */
    PFI_LIMIT_ENFORCED = 1u << 1, /* limit actually enforced (may be lower: other limiters) */
    PFI_LIMIT_DEFAULT = 1u << 2,
    PFI_LIMIT_MIN = 1u << 3,
    PFI_LIMIT_MAX = 1u << 4
};

/* pfi_gpu_limits — power limits of one GPU, mW. A field counts only when its flag is set;
 * err[k] is why field k (bit k) is missing (PFI_OK when valid). */
typedef struct pfi_gpu_limits {
    uint32_t current_mw;  /* nvmlDeviceGetPowerManagementLimit */
    uint32_t enforced_mw; /* nvmlDeviceGetEnforcedPowerLimit */
    uint32_t default_mw;  /* nvmlDeviceGetPowerManagementDefaultLimit */
    uint32_t min_mw;      /* nvmlDeviceGetPowerManagementLimitConstraints */
    uint32_t max_mw;
    unsigned valid; /* PFI_LIMIT_* */
    pfi_error err[5];
} pfi_gpu_limits;

/*
 * pfi_gpu_read_limits — read every limit of GPU i; a limit the device will not give is
 * missing (flag clear, err set), not an error. Errors: PFI_ERR_GPU_LOST,
 * PFI_ERR_INVALID_ARGUMENT (no such GPU).
 */
pfi_error pfi_gpu_read_limits(pfi_gpu *g, unsigned i, pfi_gpu_limits *out, pfi_diag *diag);

/*
 * pfi_gpu_set_limit_mw — ask GPU i for power limit mw (nvmlDeviceSetPowerManagementLimit).
 * This is the raw call: no range check, no journal, no read-back — use pfi/capctl.h, which
 * does all three. Errors: PFI_ERR_NO_PERMISSION, PFI_ERR_NOT_SUPPORTED,
 * PFI_ERR_INVALID_ARGUMENT (outside the device's range), PFI_ERR_GPU_LOST, PFI_ERR_DEVICE.
 */
pfi_error pfi_gpu_set_limit_mw(pfi_gpu *g, unsigned i, uint32_t mw, pfi_diag *diag);

/*
 * pfi_gpu_processes — process ids of the compute processes on GPU i (NVML:
 * nvmlDeviceGetComputeRunningProcesses_v3, then _v2, then the unversioned call), up to max
 * into pids[max] (caller-allocated); *n the number written. Used to map GPUs to jobs (a
 * process's SLURM_JOB_ID). Errors: PFI_ERR_NOT_SUPPORTED (the backend or driver cannot list
 * processes: emulated, replay, old drivers), PFI_ERR_GPU_LOST, PFI_ERR_LIMIT (more than max
 * processes), PFI_ERR_INVALID_ARGUMENT (no such GPU), mapped NVML errors.
 */
pfi_error pfi_gpu_processes(pfi_gpu *g, unsigned i, unsigned *pids, size_t max, size_t *n,
                            pfi_diag *diag);

/* pfi_gpu_now_s — the backend's monotonic time in seconds (virtual for emulated/replay). */
double pfi_gpu_now_s(pfi_gpu *g);

/*
 * pfi_gpu_sleep_until_s — wait until pfi_gpu_now_s(g) >= t_s (absolute deadline, so a loop
 * of deadlines t0 + k·Δt never drifts). On the virtual clock it returns at once with the clock
 * moved to t_s. A deadline past 1e15 s waits until then. Errors: PFI_ERR_INTERRUPTED when a
 * signal arrived first (check your stop flag and call again), PFI_ERR_INVALID_ARGUMENT when
 * the clock refuses the deadline.
 */
pfi_error pfi_gpu_sleep_until_s(pfi_gpu *g, double t_s);

/*
 * The emulated training job (backends with PFI_GPU_CAP_JOBS; the others answer
 * PFI_ERR_NOT_SUPPORTED): start it (start-up phase, then training), stop it (GPUs idle),
 * and poll the throughput reports it made since the last poll — up to max reports
 * (t_s[k] backend time, tokens_per_s[k]) into caller arrays; *n the number written.
 */
pfi_error pfi_gpu_job_start(pfi_gpu *g);
pfi_error pfi_gpu_job_stop(pfi_gpu *g);
pfi_error pfi_gpu_job_poll(pfi_gpu *g, double *t_s, double *tokens_per_s, size_t max, size_t *n);

/*
 * Several emulated jobs in one handle (an emulate spec with ';' segments): start and stop act
 * on every job; pfi_gpu_job_poll polls job 0. pfi_gpu_job_count — the number of jobs (1 for
 * a plain spec); pfi_gpu_job_gpus — job k runs on GPUs first .. first + count − 1;
 * pfi_gpu_job_poll_at — pfi_gpu_job_poll for job k. Errors: PFI_ERR_NOT_SUPPORTED (no
 * PFI_GPU_CAP_JOBS), PFI_ERR_INVALID_ARGUMENT (no job k).
 */
pfi_error pfi_gpu_job_count(pfi_gpu *g, unsigned *n);
pfi_error pfi_gpu_job_gpus(pfi_gpu *g, unsigned job, unsigned *first, unsigned *count);
pfi_error pfi_gpu_job_poll_at(pfi_gpu *g, unsigned job, double *t_s, double *tokens_per_s,
                              size_t max, size_t *n);

/*
 * pfi_gpu_emulate_job — the DESIGN §7 job a one-job emulate spec (pfi_gpu_config.emulate
 * syntax without ';', NULL: defaults) describes, as a pfi_model_job: compute_time_s = alpha·step,
 * memory_time_s = (1 − alpha)·step, tokens_per_step = tput·step (tokens/s uncapped = tput),
 * power_uncapped_w = pu, power_static_w = ps, gamma, clock_max_mhz = fmax, clock_min_mhz =
 * fmin, dram_active_peak = dram_peak, tensor_active_peak = tensor_peak, gpus. With spread=0
 * every emulated GPU runs exactly this job, so pfi_model_pfi on it is the PFI a noiseless
 * sweep measures; with spread > 0 the GPUs' P_u and P_s are scattered around it. Needs no
 * open backend. Errors: PFI_ERR_INVALID_ARGUMENT (bad spec; diag says why).
 */
pfi_error pfi_gpu_emulate_job(const char *spec, pfi_model_job *job, pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
