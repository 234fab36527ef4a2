/*
 * pfi/model.h — the physical model of a training job under a GPU power cap (DESIGN §7, [ours]).
 *
 * One step takes t(f) = t_c·f_max/f + t_m seconds at SM clock f: t_c scales with the clock
 * (compute), t_m does not (memory traffic, communication). A GPU at clock f draws
 * P(f) = P_s + (P_u − P_s)(f/f_max)^γ watts. Under a cap c < P_u the clock settles where
 * P(f) = c, but not below f_min (where the GPU then draws P(f_min), which may exceed c: the
 * cap cannot be met). Throughput is tokens_per_step / t(f). Telemetry follows the model:
 * SM clock = f, DRAM activity = dram_active_peak · t_m/t(f), tensor activity =
 * tensor_active_peak · (t_c f_max/f)/t(f). Memory-bound jobs (small compute share
 * α = t_c/(t_c + t_m) at f_max) keep throughput under caps: high PFI.
 *
 * Used to generate the synthetic job library (pfi/library.h, which the policy simulation
 * also draws from through pfi/joblib.h) and to emulate GPUs; the `pfi-model` allocation
 * strategy (pfi/allocate.h) inverts it (pfi_model_share_for_pfi) to turn an estimated PFI into a
 * concave cap → throughput curve.
 *
 * Plain data, no global state: thread-safe.
 */
#ifndef PFI_MODEL_H
#define PFI_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* pfi_model_job — one job configuration; per-GPU power, whole-job throughput. */
typedef struct pfi_model_job {
    double compute_time_s;     /* t_c: clock-bound part of a step at f_max, s (>= 0) */
    double memory_time_s;      /* t_m: clock-independent part of a step, s (>= 0; sum > 0) */
    double tokens_per_step;    /* tokens the whole job processes per step (> 0) */
    double power_uncapped_w;   /* P_u: per-GPU power at f_max, W (> power_static_w) */
    double power_static_w;     /* P_s: the P(f) curve's value as f → 0, W (>= 0) */
    double gamma;              /* exponent γ of P(f) (> 0) */
    double clock_max_mhz;      /* f_max, MHz */
    double clock_min_mhz;      /* f_min, MHz (0 < f_min <= f_max) */
    double dram_active_peak;   /* DRAM activity of a step that is all memory time, [0, 1] */
    double tensor_active_peak; /* tensor activity of a step that is all compute time, [0, 1] */
    unsigned gpus;             /* GPUs of the job (>= 1): job power = gpus × per-GPU power */
} pfi_model_job;

/* pfi_model_point — the job's steady state under one cap. */
typedef struct pfi_model_point {
    double cap_w;         /* per-GPU cap, W (NaN from pfi_model_eval_at_clock) */
    double clock_mhz;     /* SM clock f, MHz */
    double power_w;       /* per-GPU power P(f), W */
    double job_power_w;   /* gpus × power_w, W */
    double step_time_s;   /* t(f), s */
    double throughput;    /* tokens_per_step / t(f), tokens/s (whole job) */
    double compute_share; /* (t_c f_max/f)/t(f): share of the step bound by the clock */
    double dram_active;   /* dram_active_peak × (1 − compute_share) */
    double tensor_active; /* tensor_active_peak × compute_share */
    bool cap_binding;     /* c < P_u: the clock is below f_max */
    bool at_clock_min;    /* the clock is held at f_min (power may exceed the cap) */
} pfi_model_point;

/*
 * pfi_model_job_init — a job with compute share alpha = t_c/(t_c + t_m) at f_max (in [0, 1]),
 * a step of 1 s, 1 token per step, one GPU, and H200-like platform values [ours, DESIGN §7]:
 * P_u = power_uncapped_w, P_s = 0.25 P_u, γ = 2, f_max = 1980 MHz, f_min = 345 MHz,
 * dram_active_peak 0.9, tensor_active_peak 0.6. Change any field afterwards.
 */
void pfi_model_job_init(pfi_model_job *j, double alpha, double power_uncapped_w);

/* pfi_model_check — PFI_OK when every field is in its documented domain, else
 * PFI_ERR_INVALID_ARGUMENT. */
pfi_error pfi_model_check(const pfi_model_job *j);

/* pfi_model_compute_share — α = t_c/(t_c + t_m) at f_max (NaN when t_c + t_m is 0). */
double pfi_model_compute_share(const pfi_model_job *j);

/*
 * pfi_model_eval — the steady state of job j under the per-GPU cap cap_w (W, > 0).
 * Errors: PFI_ERR_INVALID_ARGUMENT (bad job, cap not positive or not finite).
 */
pfi_error pfi_model_eval(const pfi_model_job *j, double cap_w, pfi_model_point *out);

/*
 * pfi_model_eval_at_clock — the state of job j with its SM clock held at clock_mhz (MHz,
 * clamped to [f_min, f_max]) instead of settled under a cap: power, step time, throughput and
 * telemetry are the formulas of pfi_model_eval at that clock. For a clock that is moving
 * towards a cap's (the emulated GPUs' first-order lag, pfi/gpu.h). In *out, cap_w is NaN
 * (no cap), cap_binding is clock < f_max and at_clock_min is clock <= f_min. At the clock
 * pfi_model_eval settles on for a cap, both agree (to rounding). Errors:
 * PFI_ERR_INVALID_ARGUMENT (bad job, clock not positive or not finite, out NULL).
 */
pfi_error pfi_model_eval_at_clock(const pfi_model_job *j, double clock_mhz, pfi_model_point *out);

/*
 * pfi_model_pfi — the noise-free ratio PFI (paper §2) of job j swept over caps_w[n] (per-GPU,
 * W, any order; the highest is the reference), with the same exclusions as pfi/index.h:
 * a cap whose relative power decrease is below x_min (e.g. 0.02) or whose throughput does
 * not fall is left out. *pfi is NaN when no cap is left.
 * Errors: PFI_ERR_INVALID_ARGUMENT (bad job, n < 2, a cap not positive).
 */
pfi_error pfi_model_pfi(const pfi_model_job *j, const double *caps_w, size_t n, double x_min,
                        double *pfi);

/*
 * pfi_model_share_for_pfi — the compute share α in [0, 1] that gives job j (keeping its
 * step time t_c + t_m and every other field) the ratio PFI target over caps_w[n] (bisection
 * to 1e-10 on α; PFI falls as α grows). When target is outside what α ∈ [0.02, 1] reaches,
 * *alpha is the nearest end and *reached is false. Errors: as pfi_model_pfi.
 */
pfi_error pfi_model_share_for_pfi(const pfi_model_job *j, const double *caps_w, size_t n,
                                  double x_min, double target, double *alpha, bool *reached);

/* pfi_model_set_share — set t_c = α·s, t_m = (1 − α)·s keeping s = t_c + t_m. */
void pfi_model_set_share(pfi_model_job *j, double alpha);

/*
 * pfi_model_set_throughput — scale the job so that its uncapped throughput (at f_max) is
 * tput_tok_s (whole job, tokens/s): tokens_per_step = tput_tok_s × (t_c + t_m). Step times,
 * the compute share and every other field are kept, so PFI and telemetry do not change.
 * Errors: PFI_ERR_INVALID_ARGUMENT when tput_tok_s is not positive and finite or t_c + t_m
 * is not (j untouched).
 */
pfi_error pfi_model_set_throughput(pfi_model_job *j, double tput_tok_s);

#ifdef __cplusplus
}
#endif

#endif
