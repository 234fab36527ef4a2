/*
 * The class-weighted strategy (PFI_STRATEGY_CLASS_WEIGHTED; the paper's "MoE
 * fine-tuning-weighted"): share ∝ D_j(hi_j) × class_factor for jobs flagged deep_cut,
 * D_j(hi_j) otherwise.
 */
#include <stddef.h>

#include "pfi/allocate.h"
#include "power/alloc_internal.h"
#include "power/strategy.h"

pfi_error alloc_class_weighted_place(alloc_run *run, pfi_alloc_result *r, pfi_diag *d)
{
    (void)d;
    const alloc_ctx *x = &run->x;
    const pfi_alloc_jobs *J = x->J;
    for (size_t j = 0; j < J->n; j++) {
        alloc_view v = alloc_true_view(x, j);
        double dh = v.d[v.m - 1];
        x->w->share[j] = dh * (J->deep_cut != NULL && J->deep_cut[j] ? x->o->class_factor : 1.0);
    }
    alloc_shed_by_shares(run);
    r->method = ALLOC_METHOD_SHARES;
    return PFI_OK;
}
