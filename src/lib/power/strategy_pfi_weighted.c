/*
 * The pfi-weighted strategy (PFI_STRATEGY_PFI_WEIGHTED): share ∝ D_j × PFI_j ÷ (T_j/D_j) at
 * the reference cap — power × estimated PFI ÷ tokens per joule [our reading of the paper's
 * PFI-aware heuristic, DESIGN §6]; D_j(hi_j) for a job with no throughput there.
 */
#include <stddef.h>

#include "pfi/allocate.h"
#include "power/alloc_internal.h"
#include "power/strategy.h"

pfi_error alloc_pfi_weighted_place(alloc_run *run, pfi_alloc_result *r, pfi_diag *d)
{
    (void)d;
    const alloc_ctx *x = &run->x;
    const pfi_alloc_jobs *J = x->J;
    for (size_t j = 0; j < J->n; j++) {
        alloc_view v = alloc_true_view(x, j);
        size_t pl = J->offset[j + 1] - 1;
        double dh = v.d[v.m - 1], th = J->tput_tok_s[pl], dref = J->power_w[pl];
        x->w->share[j] = th > 0 ? dref * J->pfi[j] / (th / dref) : dh;
    }
    alloc_shed_by_shares(run);
    r->method = ALLOC_METHOD_SHARES;
    return PFI_OK;
}
