/*
 * The raw-telemetry strategy (PFI_STRATEGY_RAW_TELEMETRY; the paper's baseline): share ∝
 * D_j(hi_j) × feature_j, the raw DCGM feature, uncalibrated.
 */
#include <stddef.h>

#include "pfi/allocate.h"
#include "power/alloc_internal.h"
#include "power/strategy.h"

pfi_error alloc_raw_telemetry_place(alloc_run *run, pfi_alloc_result *r, pfi_diag *d)
{
    (void)d;
    const alloc_ctx *x = &run->x;
    const pfi_alloc_jobs *J = x->J;
    for (size_t j = 0; j < J->n; j++) {
        alloc_view v = alloc_true_view(x, j);
        x->w->share[j] = v.d[v.m - 1] * J->feature[j];
    }
    alloc_shed_by_shares(run);
    r->method = ALLOC_METHOD_SHARES;
    return PFI_OK;
}
