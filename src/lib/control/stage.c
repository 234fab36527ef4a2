/*
 * Staged actuation (pfi/stage.h): decreases first, then increases granted only while the
 * cluster's cost stays under the budget whatever subset of them lands.
 */
#include <math.h>
#include <stddef.h>

#include "pfi/stage.h"

static double cost_at(pfi_stage_cost_fn f, void *ctx, size_t k, double cap)
{
    return f != NULL ? f(ctx, k, cap) : cap;
}

/* The cap a GPU is counted at: its confirmed cap, or its maximum when never confirmed. */
static double counted(const pfi_stage_gpu *g)
{
    return isnan(g->confirmed_w) ? g->max_w : g->confirmed_w;
}

size_t pfi_stage_decreases(const pfi_stage_gpu *g, size_t n, double *send_w)
{
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        send_w[k] = NAN;
        if (!g[k].reachable || isnan(g[k].target_w))
            continue;
        if (isnan(g[k].confirmed_w) || g[k].target_w < g[k].confirmed_w) {
            send_w[k] = g[k].target_w;
            m++;
        }
    }
    return m;
}

double pfi_stage_cost(const pfi_stage_gpu *g, size_t n, pfi_stage_cost_fn cost, void *ctx)
{
    double s = 0;
    for (size_t k = 0; k < n; k++)
        s += cost_at(cost, ctx, k, counted(&g[k]));
    return s;
}

size_t pfi_stage_increases(const pfi_stage_gpu *g, size_t n, double budget_w,
                           pfi_stage_cost_fn cost, void *ctx, double *send_w, double *used_w)
{
    double used = pfi_stage_cost(g, n, cost, ctx);
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        send_w[k] = NAN;
        if (!g[k].reachable || isnan(g[k].target_w) || isnan(g[k].confirmed_w) ||
            !(g[k].target_w > g[k].confirmed_w))
            continue;
        double from = g[k].confirmed_w;
        double c0 = cost_at(cost, ctx, k, from);
        double room = budget_w - used;
        if (!(room > 0))
            continue;
        double to = floor(g[k].target_w);
        if (cost_at(cost, ctx, k, to) - c0 > room) {
            /* part way: the highest whole watt whose extra cost fits */
            double lo = from, hi = to;
            for (int it = 0; it < 60 && hi - lo > 0.5; it++) {
                double mid = 0.5 * (lo + hi);
                if (cost_at(cost, ctx, k, mid) - c0 <= room)
                    lo = mid;
                else
                    hi = mid;
            }
            to = floor(lo);
            while (to > from && cost_at(cost, ctx, k, to) - c0 > room)
                to -= 1;
        }
        if (!(to > from) || to < g[k].min_w)
            continue;
        send_w[k] = to;
        used += cost_at(cost, ctx, k, to) - c0;
        m++;
    }
    if (used_w != NULL)
        *used_w = used;
    return m;
}
