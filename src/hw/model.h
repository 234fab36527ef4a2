/*
 * The DESIGN §7 physical model of a training job under a GPU power cap, as a tiny internal
 * interface for the emulated backend.
 *
 * TO BE REPLACED by pfi_model_* (include/pfi/model.h, issues 4/5) when that lands: keep
 * this interface small so the emulator needs only a one-line change.
 *
 * Step time t(f) = t_c·f_max/f + t_m, normalised so t(f_max) = 1 (t_c = α, t_m = 1 − α);
 * power P(f) = P_s + (P_u − P_s)(f/f_max)^γ; under cap c < P_u the clock settles where
 * P(f) = c, not below f_min; T = T_max / t(f). Telemetry: SM clock = f, DRAM activity
 * ∝ t_m/t(f), tensor activity ∝ (t_c·f_max/f)/t(f).
 */
#ifndef PFI_HW_MODEL_H
#define PFI_HW_MODEL_H

#include <stddef.h>

typedef struct hw_model_job {
    double alpha;        /* compute share of the step time at f_max, (0, 1] */
    double p_upper_w;    /* power drawn uncapped at f_max, W */
    double p_static_w;   /* power that does not scale with the clock, W */
    double gamma;        /* power-clock exponent */
    double f_max_mhz;
    double f_min_mhz;
    double tput_max;     /* tokens/s at f_max */
} hw_model_job;

typedef struct hw_model_point {
    double sm_clock_mhz;
    double power_w;
    double throughput;     /* tokens/s */
    double dram_active;    /* [0, 1] */
    double tensor_active;  /* [0, 1] */
} hw_model_point;

/* hw_model_clock_mhz — the clock the cap settles at. */
double hw_model_clock_mhz(const hw_model_job *j, double cap_w);

/* hw_model_at_clock — power, throughput and telemetry at SM clock f_mhz. */
void hw_model_at_clock(const hw_model_job *j, double f_mhz, hw_model_point *out);

/* hw_model_at_cap — hw_model_at_clock at the clock the cap settles at. */
void hw_model_at_cap(const hw_model_job *j, double cap_w, hw_model_point *out);

#endif
