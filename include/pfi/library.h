/*
 * pfi/library.h — the calibrated synthetic job library (DESIGN §7, [ours]).
 *
 * The paper's raw measurements are not public. This library stands in for them: 25 sweep
 * groups, 131 runs, of four synthetic models (two dense, two MoE), pre-training and rank-32
 * LoRA fine-tuning, on 8 GPUs (caps 700…200 W in 100 W steps) and 16/32 GPUs (caps
 * {700, 600, 500, 200} W), drawn from the physical model of pfi/model.h with measurement
 * noise and DCGM-like telemetry. Job classes: dense (pre-training and fine-tuning, task column
 * tells them apart), moe-pt, moe-ft.
 *
 * Calibration: each group gets a target PFI from its class's spread (a piecewise-linear
 * quantile function through the class minimum, median and maximum; default dense
 * 1.10/1.27/1.50, moe-pt 1.22/1.43/1.75, moe-ft 1.62/2.10/2.67, so the class medians are the
 * paper's), and the compute share α that gives that PFI on its own cap grid is solved with
 * pfi_model_share_for_pfi. The seed decides which group gets which target, the power and
 * telemetry scales of each job, and the measurement noise. The targets the default library
 * must meet are data (data/synthetic/calibration-targets.json), checked by tests/test_library.c.
 *
 * Telemetry [ours, modelling choice]: the DCGM-like counters do not follow the job's own
 * compute share α but a telemetry share — the class's level (the share that gives the class's
 * median PFI on the 8-GPU grid) plus job-level noise independent of α (feature_share_sd) —
 * with per-job scale factors on the DRAM / copy / tensor peaks (feature_scale_sd). So the
 * association between PFI and the memory counters comes from the contrast between classes,
 * with no within-class correlation beyond chance, as the paper finds (App. D.5). See
 * docs/synthetic-library.md.
 *
 * Everything written is labelled synthetic: a "synthetic" column (always 1) in every CSV row
 * and the manifest description.
 */
#ifndef PFI_LIBRARY_H
#define PFI_LIBRARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"
#include "pfi/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most caps in one sweep group. */
#define PFI_LIBRARY_MAX_CAPS 8

/* Telemetry columns of every run, DCGM field IDs in brackets (fractions, not percent). */
#define PFI_LIBRARY_N_FEATURES 10
extern const char *const pfi_library_feature_names[PFI_LIBRARY_N_FEATURES];

/* pfi_library_options — generation settings; pfi_library_options_init gives the defaults. */
typedef struct pfi_library_options {
    uint64_t seed;               /* 1 */
    double power_noise_rel;      /* relative SD of a run's measured power: 0.002 */
    double throughput_noise_rel; /* relative SD of a run's measured throughput: 0.002 */
    double power_static_frac;    /* P_s / P_u: 0.30 [ours: lets α = 1 reach PFI ≈ 1.1] */
    double gamma;                /* 2 */
    double feature_scale_sd;     /* log-SD of each job's DRAM/copy/tensor peaks: 0.05 */
    double feature_share_sd;     /* SD of a job's telemetry share around its class's: 0.02 */
    double class_pfi[3][3];      /* [dense, moe-pt, moe-ft][min, median, max] */
} pfi_library_options;

void pfi_library_options_init(pfi_library_options *o);

/* One sweep group of the library: its true job and the caps it was measured at. */
typedef struct pfi_library_group {
    char name[64];         /* e.g. "dense-8b-pt-8g-a" */
    const char *model;     /* static: "dense-8b", "dense-32b", "moe-30b-a3b", "moe-16b-a2b" */
    const char *task;      /* static: "pt" or "ft" */
    const char *job_class; /* static: "dense", "moe-pt", "moe-ft" */
    pfi_model_job job;     /* the true job (per-GPU power, whole-job tokens/s) */
    double caps_w[PFI_LIBRARY_MAX_CAPS]; /* caps measured, descending, W per GPU */
    size_t n_caps;
    double pfi_target;      /* calibration target */
    double pfi_true;        /* noise-free ratio PFI of job over caps_w (pfi_model_pfi) */
    double copy_peak;       /* memory copy utilisation of an all-memory step */
    double fb_used_mib;     /* frame buffer in use */
    double telemetry_share; /* compute share at f_max the telemetry follows (class level plus
                               job noise; not pfi_model_compute_share(&job)) */
} pfi_library_group;

/* One run: a group at one cap, as measured (noise included). */
typedef struct pfi_library_run {
    size_t group;                            /* index into pfi_library.groups */
    double cap_w;                            /* per-GPU cap, W */
    double power_w;                          /* measured whole-job power, W */
    double power_se_w;                       /* its standard error, W */
    double throughput;                       /* measured tokens/s, whole job */
    double throughput_se;                    /* its standard error, tokens/s */
    double features[PFI_LIBRARY_N_FEATURES]; /* per-GPU means, pfi_library_feature_names */
} pfi_library_run;

/* pfi_library — a generated library; owns its arrays (pfi_library_destroy). */
typedef struct pfi_library {
    pfi_library_group *groups;
    size_t n_groups;
    pfi_library_run *runs;
    size_t n_runs;
    uint64_t seed;
} pfi_library;

/*
 * pfi_library_generate — the library for options o (NULL: defaults) in *out (owned).
 * Deterministic: the same options give the same library on every platform with IEEE doubles.
 * Errors: PFI_ERR_INVALID_ARGUMENT (options out of range), PFI_ERR_NOMEM.
 */
pfi_error pfi_library_generate(const pfi_library_options *o, pfi_library **out);

/* pfi_library_destroy — free lib. NULL is a no-op. */
void pfi_library_destroy(pfi_library *lib);

/*
 * pfi_library_write — write lib as a dataset directory dir (created if missing, mode 0777
 * before umask): runs.csv (one row per run), groups.csv (each group's true job parameters
 * and noise-free PFI) and pfi-dataset.json (the manifest: `pfi analyze DIR` reads it
 * unchanged). Each file goes to a temporary beside it and is renamed, so no file is ever
 * half-written. Errors: PFI_ERR_IO (diag names the file and why), PFI_ERR_NOMEM.
 */
pfi_error pfi_library_write(const pfi_library *lib, const char *dir, pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
