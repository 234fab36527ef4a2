/*
 * DESIGN §7 model (internal; to be replaced by pfi_model_* from issues 4/5).
 */
#include "model.h"

#include <math.h>

double hw_model_clock_mhz(const hw_model_job *j, double cap_w)
{
    if (!(cap_w < j->p_upper_w))
        return j->f_max_mhz;
    double share = (cap_w - j->p_static_w) / (j->p_upper_w - j->p_static_w);
    double f = share > 0 ? j->f_max_mhz * pow(share, 1.0 / j->gamma) : 0.0;
    return f < j->f_min_mhz ? j->f_min_mhz : f;
}

void hw_model_at_clock(const hw_model_job *j, double f, hw_model_point *out)
{
    double tc = j->alpha * j->f_max_mhz / f, tm = 1.0 - j->alpha;
    double t = tc + tm;
    out->sm_clock_mhz = f;
    out->power_w = j->p_static_w + (j->p_upper_w - j->p_static_w) * pow(f / j->f_max_mhz, j->gamma);
    out->throughput = j->tput_max / t;
    out->dram_active = 0.9 * tm / t;
    out->tensor_active = 0.9 * tc / t;
}

void hw_model_at_cap(const hw_model_job *j, double cap_w, hw_model_point *out)
{
    hw_model_at_clock(j, hw_model_clock_mhz(j, cap_w), out);
}
