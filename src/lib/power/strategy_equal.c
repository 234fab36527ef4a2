/*
 * The equal strategy (PFI_STRATEGY_EQUAL): share ∝ D_j(hi_j), so that every job sheds the
 * same fraction of its power (within its cap bounds; water-filling places the rest).
 */
#include <stddef.h>

#include "pfi/allocate.h"
#include "power/alloc_internal.h"
#include "power/strategy.h"

pfi_error alloc_equal_place(alloc_run *run, pfi_alloc_result *r, pfi_diag *d)
{
    (void)d;
    const alloc_ctx *x = &run->x;
    for (size_t j = 0; j < x->J->n; j++) {
        alloc_view v = alloc_true_view(x, j);
        x->w->share[j] = v.d[v.m - 1];
    }
    alloc_shed_by_shares(run);
    r->method = ALLOC_METHOD_SHARES;
    return PFI_OK;
}
