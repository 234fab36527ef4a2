/*
 * One period's allocation on the power tree with ramp limits (control/ctl_tree.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "control/ctl_tree.h"
#include "core/memory.h"
#include "pfi/control.h"
#include "pfi/curve.h"

double ctl_curve_cap_at_power(const double *cap, const double *power, size_t n, double p,
                              bool lower)
{
    if (n == 0 || !isfinite(p) || p <= power[0] || p >= power[n - 1])
        return NAN;
    if (lower) {
        for (size_t k = 1; k < n; k++)
            if (power[k] >= p) {
                double dp = power[k] - power[k - 1];
                return dp > 0 ? cap[k - 1] + (cap[k] - cap[k - 1]) * (p - power[k - 1]) / dp
                              : cap[k - 1];
            }
        return NAN;
    }
    for (size_t k = n - 1; k > 0; k--)
        if (power[k - 1] <= p) {
            double dp = power[k] - power[k - 1];
            return dp > 0 ? cap[k - 1] + (cap[k] - cap[k - 1]) * (p - power[k - 1]) / dp : cap[k];
        }
    return NAN;
}

double ctl_ramp_gain_next(double gain, double planned_w, double moved_w, double scale_w)
{
    double decayed = fmax(1, 1 + 0.75 * (gain - 1));
    if (isfinite(planned_w) && isfinite(moved_w) && fabs(planned_w) > 0.002 * scale_w)
        return fmin(3, fmax(decayed, moved_w / planned_w));
    return fmin(3, decayed);
}

/* Append "what" to the bound text (", " between), as far as it fits. */
static void bound_add(ctl_tree_out *out, const char *what)
{
    size_t len = strlen(out->bound);
    if (len + 3 >= sizeof out->bound)
        return;
    if (len > 0) {
        out->bound[len++] = ',';
        out->bound[len++] = ' ';
    }
    size_t w = strlen(what), room = sizeof out->bound - 1 - len;
    memcpy(out->bound + len, what, w < room ? w : room);
    out->bound[len + (w < room ? w : room)] = '\0';
}

/* Part j's measured power (its predicted one when none was measured). */
static double part_measured(const ctl_tree_in *in, size_t j)
{
    double q = in->meas_w != NULL ? in->meas_w[j] : NAN;
    return q > 0 ? q : in->prev_w[j];
}

/* The ramp bounds of every part as caps (lo[j], hi[j]; NaN none) and the allowed total
 * moves in out. prev_lvl[topo n] is scratch. */
static void ramp_bounds(const pfi_alloc_jobs *J, const ctl_tree_in *in, double *prev_lvl,
                        double *lo, double *hi, ctl_tree_out *out)
{
    size_t nn = in->topo ? in->topo->n : 0;
    double site = 0, down = 0, up = 0;
    bool any_down = false, any_up = false;
    for (size_t a = 0; a < nn; a++)
        prev_lvl[a] = 0;
    for (size_t j = 0; j < J->n; j++) {
        lo[j] = hi[j] = NAN;
        double q = part_measured(in, j);
        if (!(q > 0))
            continue;
        site += q;
        for (size_t a = in->part_node ? in->part_node[j] : PFI_TOPO_NONE; a != PFI_TOPO_NONE;
             a = in->topo->parent[a])
            prev_lvl[a] += q;
    }
    for (size_t j = 0; j < J->n; j++) {
        double p = in->prev_w[j], q = part_measured(in, j);
        if (!(q > 0) || !(p > 0)) {
            down = up = INFINITY; /* a part with no bound: the total is unbounded */
            continue;
        }
        /* its share of every allowance, in measured W/s */
        double gk = in->ramp_gain > 1 ? q / in->ramp_gain : q;
        double dr = in->site_down_w_per_s * gk / site, ur = in->site_up_w_per_s * gk / site;
        for (size_t a = in->part_node ? in->part_node[j] : PFI_TOPO_NONE; a != PFI_TOPO_NONE;
             a = in->topo->parent[a]) {
            dr = fmin(dr, in->topo->ramp_down_w_per_s[a] * gk / prev_lvl[a]);
            ur = fmin(ur, in->topo->ramp_up_w_per_s[a] * gk / prev_lvl[a]);
        }
        down += dr;
        up += ur;
        const double *cap = J->cap_w + J->offset[j], *pw = J->power_w + J->offset[j];
        size_t n = J->offset[j + 1] - J->offset[j];
        double k = p / q; /* measured W to the curve's W */
        if (isfinite(dr)) {
            lo[j] = ctl_curve_cap_at_power(cap, pw, n, p - k * dr * in->dt_s, true);
            any_down = true;
        }
        if (isfinite(ur)) {
            hi[j] = ctl_curve_cap_at_power(cap, pw, n, p + k * ur * in->dt_s, false);
            any_up = true;
        }
        if (isfinite(lo[j]) && isfinite(hi[j]) && lo[j] > hi[j]) /* a flat stretch */
            lo[j] = hi[j] = 0.5 * (lo[j] + hi[j]);
    }
    out->down_w_per_s = any_down ? down : INFINITY;
    out->up_w_per_s = any_up ? up : INFINITY;
}

/* Drop the lower ramp bounds of the parts under every level whose limit lim[a] they cannot
 * meet at those bounds (reserve: Σ GPUs × lowest cap; measured: Σ power there); the levels
 * named in out->bound. least[topo n] is scratch. */
static void limits_over_ramps(const pfi_alloc_jobs *J, const ctl_tree_in *in, const double *lim,
                              double *lo, double *least, ctl_tree_out *out)
{
    size_t nn = in->topo->n;
    for (size_t a = 0; a < nn; a++)
        least[a] = 0;
    for (size_t j = 0; j < J->n; j++) {
        const double *cap = J->cap_w + J->offset[j], *pw = J->power_w + J->offset[j];
        size_t n = J->offset[j + 1] - J->offset[j];
        double c = isfinite(lo[j]) ? lo[j] : cap[0], g = J->gpus ? J->gpus[j] : 1;
        for (size_t a = in->part_node ? in->part_node[j] : PFI_TOPO_NONE; a != PFI_TOPO_NONE;
             a = in->topo->parent[a])
            least[a] += in->topo->kind[a] == PFI_LIMIT_RESERVE ? g * c : pfi_interp(cap, pw, n, c);
    }
    for (size_t j = 0; j < J->n; j++) {
        if (isnan(lo[j]))
            continue;
        for (size_t a = in->part_node ? in->part_node[j] : PFI_TOPO_NONE; a != PFI_TOPO_NONE;
             a = in->topo->parent[a])
            if (least[a] > lim[a] * (1 + 1e-12)) {
                lo[j] = NAN;
                break;
            }
    }
    for (size_t a = 0; a < nn; a++)
        if (least[a] > lim[a] * (1 + 1e-12)) {
            char buf[160];
            snprintf(buf, sizeof buf, "ramp yields to %.24s '%.40s' (over its limit)",
                     in->topo->level[a], in->topo->name[a]);
            bound_add(out, buf);
        }
}

/* in->fill: every part's cap raised along a flat stretch of its curve (the power does not
 * grow) up to its ramp bound or top cap, as far as every reserve ancestor's room allows
 * (parts in order). rem[topo n] is scratch. */
static void fill_flat(const pfi_alloc_jobs *J, const ctl_tree_in *in, const double *lim,
                      const double *hi, double *rem, pfi_alloc_result *r)
{
    size_t nn = in->topo ? in->topo->n : 0;
    for (size_t a = 0; a < nn; a++)
        rem[a] = in->topo->kind[a] == PFI_LIMIT_RESERVE ? lim[a] : INFINITY;
    for (size_t j = 0; j < J->n; j++) {
        double g = J->gpus ? J->gpus[j] : 1;
        for (size_t a = in->part_node ? in->part_node[j] : PFI_TOPO_NONE; a != PFI_TOPO_NONE;
             a = in->topo->parent[a])
            rem[a] -= g * r->cap_w[j];
    }
    for (size_t j = 0; j < J->n; j++) {
        const double *cap = J->cap_w + J->offset[j], *pw = J->power_w + J->offset[j];
        size_t n = J->offset[j + 1] - J->offset[j];
        double c0 = r->cap_w[j], top = cap[n - 1], g = J->gpus ? J->gpus[j] : 1;
        if (isfinite(hi[j]) && hi[j] < top)
            top = hi[j];
        /* the end of the flat stretch from c0 */
        double p0 = pfi_interp(cap, pw, n, c0), c = c0;
        for (size_t k = 0; k < n; k++)
            if (cap[k] > c0 && cap[k] <= top && pw[k] <= p0 * (1 + 1e-9) + 1e-9)
                c = cap[k];
            else if (cap[k] > c0)
                break;
        if (top > c && pfi_interp(cap, pw, n, top) <= p0 * (1 + 1e-9) + 1e-9)
            c = top;
        double room = INFINITY;
        for (size_t a = in->part_node ? in->part_node[j] : PFI_TOPO_NONE; a != PFI_TOPO_NONE;
             a = in->topo->parent[a])
            room = fmin(room, rem[a] / g);
        c = fmin(c, c0 + fmax(0, room));
        if (!(c > c0))
            continue;
        for (size_t a = in->part_node ? in->part_node[j] : PFI_TOPO_NONE; a != PFI_TOPO_NONE;
             a = in->topo->parent[a])
            rem[a] -= g * (c - c0);
        r->cap_w[j] = c;
    }
}

pfi_error ctl_tree_allocate(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                            const ctl_tree_in *in, pfi_alloc_result *r, ctl_tree_out *out,
                            pfi_diag *d)
{
    memset(out, 0, sizeof *out);
    out->down_w_per_s = out->up_w_per_s = INFINITY;
    size_t nn = in->topo ? in->topo->n : 0, n = J->n;
    double *lim = pfi_malloc((2 * nn + 2 * n + 1) * sizeof *lim);
    pfi_alloc_tree_result tr;
    memset(&tr, 0, sizeof tr);
    if (lim == NULL)
        return PFI_ERR_NOMEM;
    double *prev_lvl = lim + nn, *lo = prev_lvl + nn, *hi = lo + n;
    pfi_error e = pfi_alloc_tree_result_init(&tr, nn);
    if (e != PFI_OK)
        goto out;
    for (size_t a = 0; a < nn; a++)
        lim[a] =
            in->topo->limit_w[a] * (in->topo->kind[a] == PFI_LIMIT_MEASURED ? 1 - in->margin : 1.0);
    for (size_t b = 0; in->held_w != NULL && b < nn; b++)
        if (in->held_w[b] > 0)
            for (size_t a = b; a != PFI_TOPO_NONE; a = in->topo->parent[a])
                lim[a] = fmax(0, lim[a] - in->held_w[b]);
    if (in->prev_w != NULL) {
        ramp_bounds(J, in, prev_lvl, lo, hi, out);
    } else {
        for (size_t j = 0; j < n; j++)
            lo[j] = hi[j] = NAN;
    }
    /* a level's limit wins over the ramps: where the parts under a level cannot get within
     * its limit at their ramp's lowest caps (a controller started over a limit, a limit
     * lowered), their lower ramp bounds are dropped */
    if (in->prev_w != NULL && nn > 0)
        limits_over_ramps(J, in, lim, lo, prev_lvl, out);
    pfi_alloc_jobs jj = *J;
    jj.cap_lo_w = lo;
    jj.cap_hi_w = hi;
    pfi_alloc_tree t = {.n_nodes = nn,
                        .parent = in->topo ? in->topo->parent : NULL,
                        .limit_w = lim,
                        .kind = in->topo ? in->topo->kind : NULL,
                        .job_node = in->part_node,
                        .band = in->band,
                        .budget_kind = PFI_LIMIT_MEASURED,
                        .name = in->topo ? (const char *const *)in->topo->name : NULL,
                        .line = in->topo ? in->topo->line : NULL};
    if ((e = in->ws != NULL ? pfi_allocate_tree_ws(&jj, o, &t, in->ws, r, &tr, d)
                            : pfi_allocate_tree(&jj, o, &t, r, &tr, d)) != PFI_OK)
        goto out;
    if (in->fill && r->feasible)
        fill_flat(J, in, lim, hi, prev_lvl, r);
    if (tr.budget_binding)
        bound_add(out, "site budget (measured)");
    for (size_t a = 0; a < nn; a++) {
        if (!tr.binding[a])
            continue;
        char buf[160];
        snprintf(buf, sizeof buf, "%.24s '%.40s' (%s %.0f W, line %ld)", in->topo->level[a],
                 in->topo->name[a], pfi_limit_kind_name(in->topo->kind[a]), lim[a],
                 in->topo->line[a]);
        bound_add(out, buf);
    }
    /* held back by a ramp: a fall the bounds could not give (infeasible with a part on its
     * lowest allowed cap), or a rise stopped on a bound while the budget had room */
    for (size_t j = 0; j < n; j++) {
        if ((!r->feasible && isfinite(lo[j])) ||
            (isfinite(hi[j]) && r->cap_w[j] >= hi[j] - 0.5 && !tr.budget_binding))
            out->ramp_limited = true;
    }
    if (out->ramp_limited)
        bound_add(out, "ramp");
out:
    pfi_alloc_tree_result_clear(&tr);
    pfi_free(lim);
    return e;
}

double pfi_ctl_ramp_lead(double t_s, double now_w, const double *t_w, const double *budget_w,
                         size_t n, double down_w_per_s)
{
    double b = isnan(now_w) ? INFINITY : now_w;
    for (size_t k = 0; k < n; k++)
        if (t_w[k] >= t_s && !isnan(budget_w[k]))
            b = fmin(b, budget_w[k] + down_w_per_s * (t_w[k] - t_s));
    return b;
}
