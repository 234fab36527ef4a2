/*
 * The fair-headroom strategy (PFI_STRATEGY_FAIR_HEADROOM): the "DVFS, Fair" policy of the
 * Phoenix field demonstration (Emerald AI, May 2025; "Turning AI Data Centers into
 * Grid-Interactive Assets", arXiv 2507.00909, its pseudocode): every job starts at its
 * maximum; each round gives every remaining job the same fraction of its headroom (its top
 * power less the power that keeps its tier: the lowest allowed power, raised by the job's
 * floor_frac), a job reaching that power leaves, until the budget is met. With the headroom
 * as both the share and the bound of the shares' water-filling, every job sheds the same
 * fraction f = (Σ top − B) ÷ Σ headroom of its headroom, which is where the rounds end.
 */
#include <stddef.h>

#include "pfi/allocate.h"
#include "power/alloc_internal.h"
#include "power/strategy.h"

pfi_error alloc_fair_headroom_place(alloc_run *run, pfi_alloc_result *r, pfi_diag *d)
{
    (void)d;
    const alloc_ctx *x = &run->x;
    for (size_t j = 0; j < x->J->n; j++) {
        alloc_view v = alloc_true_view(x, j);
        x->w->share[j] = v.d[v.m - 1] - v.d[0];
    }
    alloc_shed_by_shares(run);
    r->method = "the same fraction of every job's headroom above its tier's power";
    return PFI_OK;
}
