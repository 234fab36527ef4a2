/*
 * The DESIGN §7 job model: clock, power and throughput of a job under a per-GPU power cap.
 */
#include "pfi/model.h"

#include <math.h>


void pfi_model_job_init(pfi_model_job *j, double alpha, double p_u_w, double tput_max_tok_s,
                        double gpus)
{
    j->alpha = alpha;
    j->p_u_w = p_u_w;
    j->p_s_w = 0.25 * p_u_w;
    j->gamma = 2.0;
    j->f_max_mhz = 1980.0;
    j->f_min_mhz = 210.0;
    j->tput_max_tok_s = tput_max_tok_s;
    j->gpus = gpus;
}

pfi_error pfi_model_from_times(pfi_model_job *j, double t_c_s, double t_m_s,
                               double tokens_per_step)
{
    if (!(t_c_s > 0) || !(t_m_s >= 0) || !(tokens_per_step > 0) || !isfinite(t_c_s + t_m_s) ||
        !isfinite(tokens_per_step))
        return PFI_ERR_INVALID_ARGUMENT;
    j->alpha = t_c_s / (t_c_s + t_m_s);
    j->tput_max_tok_s = tokens_per_step / (t_c_s + t_m_s);
    return PFI_OK;
}

pfi_error pfi_model_check(const pfi_model_job *j)
{
    if (j == NULL || !(j->alpha > 0 && j->alpha <= 1) || !(j->p_u_w > 0) || !isfinite(j->p_u_w) ||
        !(j->p_s_w >= 0 && j->p_s_w < j->p_u_w) || !(j->gamma > 0) || !isfinite(j->gamma) ||
        !(j->f_max_mhz > 0) || !isfinite(j->f_max_mhz) ||
        !(j->f_min_mhz > 0 && j->f_min_mhz <= j->f_max_mhz) || !(j->tput_max_tok_s > 0) ||
        !isfinite(j->tput_max_tok_s) || !(j->gpus >= 1) || !isfinite(j->gpus))
        return PFI_ERR_INVALID_ARGUMENT;
    return PFI_OK;
}

/* Clock and throughput from the cap, without the parameter check (callers check once). */
static void at_cap(const pfi_model_job *j, double cap_w, pfi_model_point *out)
{
    double f = j->f_max_mhz;
    if (cap_w < j->p_u_w) {
        double u = (cap_w - j->p_s_w) / (j->p_u_w - j->p_s_w);
        f = u > 0 ? j->f_max_mhz * pow(u, 1.0 / j->gamma) : 0.0;
        if (f < j->f_min_mhz)
            f = j->f_min_mhz;
    }
    double rel = f / j->f_max_mhz;
    double power = j->p_s_w + (j->p_u_w - j->p_s_w) * pow(rel, j->gamma);
    /* step time relative to the one at f_max: alpha/rel + (1 - alpha) */
    double tc = j->alpha / rel, tm = 1.0 - j->alpha, t = tc + tm;
    out->clock_mhz = f;
    out->gpu_power_w = power;
    out->job_power_w = power * j->gpus;
    out->tput_tok_s = j->tput_max_tok_s / t;
    out->dram_activity = tm / t;
    out->tensor_activity = tc / t;
}

pfi_error pfi_model_at_cap(const pfi_model_job *j, double cap_w, pfi_model_point *out)
{
    if (pfi_model_check(j) != PFI_OK || !(cap_w > 0) || !isfinite(cap_w) || out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    at_cap(j, cap_w, out);
    return PFI_OK;
}

/* The ratio PFI without the parameter check. */
static double model_pfi(const pfi_model_job *j, const double *caps_w, size_t n, double x_min)
{
    double ref = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (!(caps_w[i] > 0) || !isfinite(caps_w[i]))
            return NAN;
        if (caps_w[i] > ref)
            ref = caps_w[i];
    }
    pfi_model_point p0, pk;
    at_cap(j, ref, &p0);
    double sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (caps_w[i] == ref)
            continue;
        at_cap(j, caps_w[i], &pk);
        double x = (p0.job_power_w - pk.job_power_w) / p0.job_power_w;
        double y = (p0.tput_tok_s - pk.tput_tok_s) / p0.tput_tok_s;
        if (x < x_min || y <= 0)
            continue;
        sum += x / y;
        k++;
    }
    return k > 0 ? sum / (double)k : NAN;
}

double pfi_model_pfi(const pfi_model_job *j, const double *caps_w, size_t n, double x_min)
{
    if (pfi_model_check(j) != PFI_OK || caps_w == NULL || n < 2 || !(x_min >= 0))
        return NAN;
    return model_pfi(j, caps_w, n, x_min);
}

double pfi_model_alpha_for_pfi(const pfi_model_job *j, const double *caps_w, size_t n,
                               double x_min, double pfi, double alpha_lo)
{
    if (j == NULL || caps_w == NULL || n < 2 || !(x_min >= 0) || isnan(pfi) ||
        !(alpha_lo > 0 && alpha_lo < 1))
        return NAN;
    pfi_model_job m = *j;
    m.alpha = 1.0;
    if (pfi_model_check(&m) != PFI_OK)
        return NAN;
    double at_one = model_pfi(&m, caps_w, n, x_min);
    if (isnan(at_one) || pfi <= at_one)
        return isnan(at_one) ? NAN : 1.0;
    m.alpha = alpha_lo;
    double at_lo = model_pfi(&m, caps_w, n, x_min);
    if (isnan(at_lo) || pfi >= at_lo)
        return alpha_lo;
    double lo = alpha_lo, hi = 1.0; /* PFI(lo) > pfi > PFI(hi) */
    for (int it = 0; it < 60 && hi - lo > 1e-12; it++) {
        m.alpha = 0.5 * (lo + hi);
        double v = model_pfi(&m, caps_w, n, x_min);
        if (v > pfi)
            lo = m.alpha;
        else
            hi = m.alpha;
    }
    return 0.5 * (lo + hi);
}
