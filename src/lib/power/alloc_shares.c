/*
 * The common end of the share strategies (equal, class-weighted, pfi-weighted, raw-telemetry,
 * and pfi-model's sheds): the reduction spread over the jobs in proportion to their shares by
 * water-filling within each job's cap bounds.
 */
#include <stdbool.h>
#include <stddef.h>

#include "pfi/allocate.h"
#include "power/alloc_internal.h"

/* Water-filling: shed[j] = min(max[j], θ share[j]) with Σ shed = need; the rest by headroom. */
static void water_fill(size_t n, const double *share, const double *maxshed, double need,
                       double *shed, unsigned char *clamped)
{
    for (size_t j = 0; j < n; j++) {
        clamped[j] = !(share[j] > 0) || !(maxshed[j] > 0);
        shed[j] = 0;
    }
    double theta = 0;
    for (;;) {
        double fixed = 0, s = 0;
        for (size_t j = 0; j < n; j++) {
            if (clamped[j])
                fixed += shed[j];
            else
                s += share[j];
        }
        if (!(s > 0))
            break;
        theta = (need - fixed) / s;
        bool changed = false;
        for (size_t j = 0; j < n; j++) {
            if (!clamped[j] && theta * share[j] >= maxshed[j]) {
                clamped[j] = 1;
                shed[j] = maxshed[j];
                changed = true;
            }
        }
        if (!changed) {
            for (size_t j = 0; j < n; j++)
                if (!clamped[j])
                    shed[j] = theta * share[j];
            break;
        }
    }
    /* what the shares could not place (all zero or all clamped): by remaining headroom */
    double placed = 0, room = 0;
    for (size_t j = 0; j < n; j++) {
        placed += shed[j];
        room += maxshed[j] - shed[j];
    }
    double left = need - placed;
    if (left > 1e-12 * need && room > 0) {
        double f = left / room;
        if (f > 1)
            f = 1;
        for (size_t j = 0; j < n; j++)
            shed[j] += f * (maxshed[j] - shed[j]);
    }
}

void alloc_shed_by_shares(alloc_run *run)
{
    const alloc_ctx *x = &run->x;
    pfi_alloc_workspace *w = x->w;
    size_t n = x->J->n;
    double need = run->S.hi_p - run->budget_w;
    for (size_t j = 0; j < n; j++) {
        alloc_view v = alloc_true_view(x, j);
        w->maxshed[j] = v.d[v.m - 1] - v.d[0];
    }
    water_fill(n, w->share, w->maxshed, need, w->shed, w->flag);
    for (size_t j = 0; j < n; j++) {
        alloc_view v = alloc_true_view(x, j);
        w->pick[j] = v.d[v.m - 1] - w->shed[j];
    }
}
