/*
 * The DESIGN §7 job model: clock under a cap, power, step time, telemetry.
 */
#include "pfi/model.h"

#include <math.h>

void pfi_model_job_init(pfi_model_job *j, double alpha, double power_uncapped_w)
{
    *j = (pfi_model_job){
        .compute_time_s = alpha,
        .memory_time_s = 1 - alpha,
        .tokens_per_step = 1,
        .power_uncapped_w = power_uncapped_w,
        .power_static_w = 0.25 * power_uncapped_w,
        .gamma = 2,
        .clock_max_mhz = 1980,
        .clock_min_mhz = 345,
        .dram_active_peak = 0.9,
        .tensor_active_peak = 0.6,
        .gpus = 1,
    };
}

static bool in_unit(double v)
{
    return v >= 0 && v <= 1;
}

pfi_error pfi_model_check(const pfi_model_job *j)
{
    if (j == NULL || !(j->compute_time_s >= 0) || !(j->memory_time_s >= 0) ||
        !(j->compute_time_s + j->memory_time_s > 0) || !isfinite(j->compute_time_s) ||
        !isfinite(j->memory_time_s) || !(j->tokens_per_step > 0) || !(j->power_static_w >= 0) ||
        !(j->power_uncapped_w > j->power_static_w) || !isfinite(j->power_uncapped_w) ||
        !(j->gamma > 0) || !isfinite(j->gamma) || !(j->clock_min_mhz > 0) ||
        !(j->clock_max_mhz >= j->clock_min_mhz) || !isfinite(j->clock_max_mhz) ||
        !in_unit(j->dram_active_peak) || !in_unit(j->tensor_active_peak) || j->gpus < 1)
        return PFI_ERR_INVALID_ARGUMENT;
    return PFI_OK;
}

double pfi_model_compute_share(const pfi_model_job *j)
{
    double s = j->compute_time_s + j->memory_time_s;
    return s > 0 ? j->compute_time_s / s : NAN;
}

void pfi_model_set_share(pfi_model_job *j, double alpha)
{
    double s = j->compute_time_s + j->memory_time_s;
    j->compute_time_s = alpha * s;
    j->memory_time_s = (1 - alpha) * s;
}

pfi_error pfi_model_set_throughput(pfi_model_job *j, double tput_tok_s)
{
    if (j == NULL || !(tput_tok_s > 0) || !isfinite(tput_tok_s))
        return PFI_ERR_INVALID_ARGUMENT;
    double s = j->compute_time_s + j->memory_time_s;
    if (!(s > 0) || !isfinite(s) || !isfinite(tput_tok_s * s))
        return PFI_ERR_INVALID_ARGUMENT;
    j->tokens_per_step = tput_tok_s * s;
    return PFI_OK;
}

/* The state of a checked job at relative clock rel = f / f_max (f_min/f_max <= rel <= 1):
 * the one place where power, step time and telemetry come from, for a cap and for a clock. */
static void eval_rel(const pfi_model_job *j, double rel, double cap_w, bool binding, bool at_min,
                     pfi_model_point *out)
{
    double ps = j->power_static_w, pu = j->power_uncapped_w;
    double tc = j->compute_time_s / rel, t = tc + j->memory_time_s;
    double share = tc / t;
    double p = ps + (pu - ps) * pow(rel, j->gamma);
    *out = (pfi_model_point){
        .cap_w = cap_w,
        .clock_mhz = rel * j->clock_max_mhz,
        .power_w = p,
        .job_power_w = p * j->gpus,
        .step_time_s = t,
        .throughput = j->tokens_per_step / t,
        .compute_share = share,
        .dram_active = j->dram_active_peak * (1 - share),
        .tensor_active = j->tensor_active_peak * share,
        .cap_binding = binding,
        .at_clock_min = at_min,
    };
}

pfi_error pfi_model_eval(const pfi_model_job *j, double cap_w, pfi_model_point *out)
{
    if (pfi_model_check(j) != PFI_OK || !(cap_w > 0) || !isfinite(cap_w) || out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    double ps = j->power_static_w, pu = j->power_uncapped_w;
    double rel = 1; /* f / f_max */
    bool binding = cap_w < pu, at_min = false;
    if (binding)
        rel = cap_w > ps ? pow((cap_w - ps) / (pu - ps), 1 / j->gamma) : 0;
    double rel_min = j->clock_min_mhz / j->clock_max_mhz;
    if (rel < rel_min) {
        rel = rel_min;
        at_min = true;
    }
    eval_rel(j, rel, cap_w, binding, at_min, out);
    return PFI_OK;
}

pfi_error pfi_model_eval_at_clock(const pfi_model_job *j, double clock_mhz, pfi_model_point *out)
{
    if (pfi_model_check(j) != PFI_OK || !(clock_mhz > 0) || !isfinite(clock_mhz) || out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    double f = clock_mhz;
    if (f > j->clock_max_mhz)
        f = j->clock_max_mhz;
    bool at_min = f <= j->clock_min_mhz;
    if (at_min)
        f = j->clock_min_mhz;
    double rel = f / j->clock_max_mhz;
    eval_rel(j, rel, NAN, rel < 1, at_min, out);
    return PFI_OK;
}

pfi_error pfi_model_pfi(const pfi_model_job *j, const double *caps_w, size_t n, double x_min,
                        double *pfi)
{
    if (caps_w == NULL || n < 2 || pfi == NULL || !(x_min >= 0))
        return PFI_ERR_INVALID_ARGUMENT;
    size_t ref = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(caps_w[i] > 0))
            return PFI_ERR_INVALID_ARGUMENT;
        if (caps_w[i] > caps_w[ref])
            ref = i;
    }
    pfi_model_point p0, pk;
    pfi_error e = pfi_model_eval(j, caps_w[ref], &p0);
    if (e != PFI_OK)
        return e;
    double sum = 0;
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        if (caps_w[i] == caps_w[ref])
            continue;
        e = pfi_model_eval(j, caps_w[i], &pk);
        if (e != PFI_OK)
            return e;
        double x = (p0.job_power_w - pk.job_power_w) / p0.job_power_w;
        double y = (p0.throughput - pk.throughput) / p0.throughput;
        if (x < x_min || !(y > 0))
            continue;
        sum += x / y;
        used++;
    }
    *pfi = used ? sum / (double)used : NAN;
    return PFI_OK;
}

pfi_error pfi_model_share_for_pfi(const pfi_model_job *j, const double *caps_w, size_t n,
                                  double x_min, double target, double *alpha, bool *reached)
{
    if (j == NULL || alpha == NULL || !(target > 0))
        return PFI_ERR_INVALID_ARGUMENT;
    pfi_model_job w = *j;
    double lo = 0.02, hi = 1, v;
    pfi_model_set_share(&w, lo);
    pfi_error e = pfi_model_pfi(&w, caps_w, n, x_min, &v);
    if (e != PFI_OK)
        return e;
    double pfi_lo = v; /* the largest PFI reachable */
    pfi_model_set_share(&w, hi);
    if ((e = pfi_model_pfi(&w, caps_w, n, x_min, &v)) != PFI_OK)
        return e;
    double pfi_hi = v; /* the smallest */
    if (isnan(pfi_lo) || isnan(pfi_hi))
        return PFI_ERR_INVALID_ARGUMENT;
    bool ok = true;
    if (target >= pfi_lo) {
        *alpha = lo;
        ok = target == pfi_lo;
    } else if (target <= pfi_hi) {
        *alpha = hi;
        ok = target == pfi_hi;
    } else {
        while (hi - lo > 1e-10) {
            double mid = 0.5 * (lo + hi);
            pfi_model_set_share(&w, mid);
            if ((e = pfi_model_pfi(&w, caps_w, n, x_min, &v)) != PFI_OK)
                return e;
            if (v > target)
                lo = mid;
            else
                hi = mid;
        }
        *alpha = 0.5 * (lo + hi);
    }
    if (reached != NULL)
        *reached = ok;
    return PFI_OK;
}
