/*
 * pfi/model.h — the physical model of a GPU training job under a power cap (DESIGN §7).
 *
 * One job on g identical GPUs, each running at SM clock f (MHz):
 *     step time   t(f) = t_c·f_max/f + t_m        (t_c scales with the SM clock, t_m does not:
 *                                                  memory, communication)
 *     GPU power   P(f) = P_s + (P_u − P_s)(f/f_max)^γ   per GPU, W
 * Under a per-GPU cap c < P_u the clock settles where P(f) = c, never below f_min (then the
 * GPU draws P(f_min), which may exceed c); with c ≥ P_u it runs at f_max and draws P_u.
 * Throughput T = tokens_per_step / t(f) for the whole job. The compute share at f_max,
 * α = t_c/(t_c + t_m), sets the elasticity: a memory-bound job (small α) keeps throughput
 * under caps (high PFI). Telemetry follows the model: SM clock = f, DRAM activity ∝ t_m/t(f),
 * tensor activity ∝ (t_c·f_max/f)/t(f).
 *
 * The model is parameterised here by α and the whole-job throughput at f_max (tokens per
 * step ÷ (t_c + t_m)), which is what the equations above depend on; pfi_model_from_times
 * converts (t_c, t_m, tokens per step). Everything is plain data and pure functions:
 * thread-safe, no allocation.
 *
 * This is a model for generating synthetic libraries and emulating GPUs [ours, DESIGN §7];
 * numbers it produces are synthetic.
 */
#ifndef PFI_MODEL_H
#define PFI_MODEL_H

#include <stddef.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* pfi_model_job — one job's model parameters. */
typedef struct pfi_model_job {
    double alpha;           /* compute share t_c/(t_c + t_m) at f_max, in (0, 1] */
    double p_u_w;           /* uncapped per-GPU power P_u, W */
    double p_s_w;           /* static per-GPU power P_s, W (< P_u) */
    double gamma;           /* power exponent γ (> 0; 2 by default) */
    double f_max_mhz;       /* highest SM clock, MHz */
    double f_min_mhz;       /* lowest SM clock, MHz (0 < f_min <= f_max) */
    double tput_max_tok_s;  /* whole-job throughput at f_max, tokens/s */
    double gpus;            /* GPU count g (>= 1) */
} pfi_model_job;

/*
 * pfi_model_job_init — the DESIGN §7 calibration starting point for a job: γ = 2,
 * P_s = 0.25·P_u, f_max = 1980 MHz, f_min = 210 MHz [ours], with the given α, P_u (W),
 * whole-job throughput at f_max (tokens/s) and GPU count.
 */
void pfi_model_job_init(pfi_model_job *j, double alpha, double p_u_w, double tput_max_tok_s,
                        double gpus);

/*
 * pfi_model_from_times — set j->alpha and j->tput_max_tok_s from the step-time split t_c_s,
 * t_m_s (s, t_c > 0, t_m >= 0) and tokens_per_step (the whole job's tokens per step).
 * Errors: PFI_ERR_INVALID_ARGUMENT when a value is out of range (j untouched).
 */
pfi_error pfi_model_from_times(pfi_model_job *j, double t_c_s, double t_m_s,
                               double tokens_per_step);

/* pfi_model_point — the model's state at one per-GPU cap. */
typedef struct pfi_model_point {
    double clock_mhz;       /* SM clock f */
    double gpu_power_w;     /* drawn power per GPU, W */
    double job_power_w;     /* drawn power of the whole job (g × per GPU), W */
    double tput_tok_s;      /* whole-job throughput, tokens/s */
    double dram_activity;   /* t_m/t(f), in [0, 1] (the DRAM-activity proxy) */
    double tensor_activity; /* (t_c f_max/f)/t(f), in [0, 1] */
} pfi_model_point;

/*
 * pfi_model_check — PFI_OK when j's parameters are in the domains documented above,
 * PFI_ERR_INVALID_ARGUMENT otherwise.
 */
pfi_error pfi_model_check(const pfi_model_job *j);

/*
 * pfi_model_at_cap — the steady state of job j under a per-GPU cap cap_w (W, > 0) in *out.
 * Errors: PFI_ERR_INVALID_ARGUMENT (bad parameters or cap; *out untouched). Source: DESIGN §7.
 */
pfi_error pfi_model_at_cap(const pfi_model_job *j, double cap_w, pfi_model_point *out);

/*
 * pfi_model_pfi — the ratio PFI (paper §2) of job j swept over the n per-GPU caps caps_w[n]
 * (W, any order; the highest is the reference), with the exclusion rules of pfi/index.h
 * (x < x_min not binding; y <= 0 left out). NaN when no point is left or the arguments are
 * invalid (n < 2, a cap <= 0, bad parameters).
 */
double pfi_model_pfi(const pfi_model_job *j, const double *caps_w, size_t n, double x_min);

/*
 * pfi_model_alpha_for_pfi — the compute share α in [alpha_lo, 1] at which job j (its other
 * parameters as given; j->alpha ignored) has ratio PFI pfi on caps_w[n], found by bisection
 * (the PFI falls as α grows). A pfi below the PFI at α = 1 gives 1; above the PFI at alpha_lo
 * gives alpha_lo. alpha_lo in (0, 1). NaN on invalid arguments (including a NaN pfi).
 * Used by the `pfi-model` allocation strategy to turn an estimated PFI into a curve.
 */
double pfi_model_alpha_for_pfi(const pfi_model_job *j, const double *caps_w, size_t n,
                               double x_min, double pfi, double alpha_lo);

#ifdef __cplusplus
}
#endif

#endif
