/*
 * Facility power (pfi/grid.h): a target on what the utility meters — GPUs plus every node's
 * other parts (CPUs, memory, fans, network, power-supply losses) — turned into the GPU
 * budget the controller divides among jobs.
 */
#include <math.h>

#include "pfi/grid.h"

bool pfi_grid_facility_target(double non_gpu_w, double gpu_ref_w, double *budget_w,
                              double *reduction)
{
    if (!(non_gpu_w >= 0) || !isfinite(non_gpu_w))
        return false;
    double facility_w;
    if (!isnan(*reduction)) {
        if (!(gpu_ref_w > 0) || !isfinite(gpu_ref_w))
            return false;
        facility_w = (1 - *reduction) * (gpu_ref_w + non_gpu_w);
    } else if (!isnan(*budget_w)) {
        facility_w = *budget_w;
    } else {
        return false;
    }
    double gpu_w = facility_w - non_gpu_w;
    *budget_w = gpu_w > 1 ? gpu_w : 1; /* below the non-GPU part: every GPU to its lowest */
    *reduction = NAN;
    return true;
}
