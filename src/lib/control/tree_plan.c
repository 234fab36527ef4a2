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
    if (n == 0 || !isfinite(p) || (lower ? p <= power[0] : p >= power[n - 1]))
        return NAN;
    if (lower) {
        for (size_t k = 1; k < n; k++)
            if (power[k] >= p) {
                double dp = power[k] - power[k - 1];
                return dp > 0 ? cap[k - 1] + (cap[k] - cap[k - 1]) * (p - power[k - 1]) / dp
                              : cap[k - 1];
            }
        return cap[n - 1]; /* p at or over the top: no cap below the top reaches it */
    }
    for (size_t k = n - 1; k > 0; k--)
        if (power[k - 1] <= p) {
            double dp = power[k] - power[k - 1];
            return dp > 0 ? cap[k - 1] + (cap[k] - cap[k - 1]) * (p - power[k - 1]) / dp : cap[k];
        }
    return cap[0]; /* p under the lowest cap's power: no cap above the lowest stays within it */
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

/* Part j's band (0 without bands). */
static double part_band(const ctl_tree_in *in, size_t j)
{
    return in->band != NULL && isfinite(in->band[j]) ? in->band[j] : 0;
}

/* Part j's lowest allowed cap: its curve's lowest, or its floor's (the least cap whose
 * throughput is floor × the top cap's, as the allocator takes it). */
static double part_lowest_cap(const pfi_alloc_jobs *J, size_t j)
{
    const double *cap = J->cap_w + J->offset[j], *tp = J->tput_tok_s + J->offset[j];
    size_t n = J->offset[j + 1] - J->offset[j];
    double s = J->floor_frac != NULL ? J->floor_frac[j] : NAN;
    if (!(s > 0) || !(s * tp[n - 1] > tp[0]))
        return cap[0];
    double c = ctl_curve_cap_at_power(cap, tp, n, s * tp[n - 1], true);
    return isfinite(c) ? c : cap[n - 1];
}

/* The ramp allowance (measured W this period, the ramp gain taken off) of level a, or of
 * the site at a == topo n; INFINITY: no ramp. */
static double level_allowance(const ctl_tree_in *in, size_t a, bool down)
{
    size_t nn = in->topo ? in->topo->n : 0;
    double rate = a < nn ? (down ? in->topo->ramp_down_w_per_s[a] : in->topo->ramp_up_w_per_s[a])
                         : (down ? in->site_down_w_per_s : in->site_up_w_per_s);
    double gain = in->ramp_gain > 1 ? in->ramp_gain : 1;
    return isfinite(rate) ? rate * in->dt_s / gain : INFINITY;
}

/* Scratch of grant_in_band_order: rem and Q [topo n + 1], add [parts], done [parts]. */
typedef struct grant_scratch {
    double *rem, *Q, *add;
    unsigned char *done;
} grant_scratch;

/*
 * One direction's ramp allowances handed to the parts in band order (issue 18 item 4: a
 * reduction comes from the lowest band first, a restore goes to the highest first): down,
 * the bands ascending; up, descending. Within a band the parts share every level's remaining
 * allowance in proportion to their measured power q[j], water-filled: a part takes at most
 * want[j] (measured W: as far as it can move at all) and what it leaves goes to the others
 * of its band, then to the next band. Every level's (and the site's) grants sum to at most
 * its allowance, as a proportional split's do. grant[j]: measured W; INFINITY when no level
 * above the part, nor the site, has a ramp in that direction.
 */
static void grant_in_band_order(const pfi_alloc_jobs *J, const ctl_tree_in *in, const double *q,
                                const double *want, bool down, double *grant, grant_scratch *g)
{
    size_t nn = in->topo ? in->topo->n : 0, n = J->n;
    for (size_t a = 0; a <= nn; a++)
        g->rem[a] = level_allowance(in, a, down);
    for (size_t j = 0; j < n; j++) {
        bool ramped = isfinite(g->rem[nn]);
        for (size_t a = in->part_node ? in->part_node[j] : PFI_TOPO_NONE; a != PFI_TOPO_NONE;
             a = in->topo->parent[a])
            ramped = ramped || isfinite(g->rem[a]);
        grant[j] = ramped ? 0 : INFINITY;
        g->done[j] = !ramped || !(q[j] > 0) || !(want[j] > 0);
    }
    double cur = down ? -INFINITY : INFINITY;
    for (;;) {
        /* the next band: the least above cur (down), the greatest below it (up) */
        double b = down ? INFINITY : -INFINITY;
        bool any = false;
        for (size_t j = 0; j < n; j++) {
            double bj = part_band(in, j);
            if (down ? (bj > cur && bj <= b) : (bj < cur && bj >= b)) {
                b = bj;
                any = true;
            }
        }
        if (!any)
            break;
        cur = b;
        for (int pass = 0; pass < 32; pass++) {
            for (size_t a = 0; a <= nn; a++)
                g->Q[a] = 0;
            bool open = false;
            for (size_t j = 0; j < n; j++) {
                if (g->done[j] || part_band(in, j) != b)
                    continue;
                open = true;
                for (size_t a = in->part_node ? in->part_node[j] : PFI_TOPO_NONE;
                     a != PFI_TOPO_NONE; a = in->topo->parent[a])
                    g->Q[a] += q[j];
                g->Q[nn] += q[j];
            }
            if (!open)
                break;
            /* every open part's share of the allowances left (one snapshot), then taken */
            for (size_t j = 0; j < n; j++) {
                g->add[j] = 0;
                if (g->done[j] || part_band(in, j) != b)
                    continue;
                double s = isfinite(g->rem[nn]) ? g->rem[nn] * q[j] / g->Q[nn] : INFINITY;
                for (size_t a = in->part_node ? in->part_node[j] : PFI_TOPO_NONE;
                     a != PFI_TOPO_NONE; a = in->topo->parent[a])
                    if (isfinite(g->rem[a]))
                        s = fmin(s, g->rem[a] * q[j] / g->Q[a]);
                double left = want[j] - grant[j];
                if (!(s < left)) {
                    s = left;
                    g->done[j] = 1; /* it moves as far as it can */
                } else if (!(s > 1e-9 * want[j])) {
                    s = 0;
                    g->done[j] = 1; /* a level above it has nothing left */
                }
                g->add[j] = fmax(0, s);
            }
            for (size_t j = 0; j < n; j++) {
                if (!(g->add[j] > 0))
                    continue;
                grant[j] += g->add[j];
                for (size_t a = in->part_node ? in->part_node[j] : PFI_TOPO_NONE;
                     a != PFI_TOPO_NONE; a = in->topo->parent[a])
                    g->rem[a] = fmax(0, g->rem[a] - g->add[j]);
                g->rem[nn] = fmax(0, g->rem[nn] - g->add[j]);
            }
        }
    }
}

/* The ramp bounds of every part as caps (lo[j], hi[j]; NaN none) and the allowed total
 * moves in out. Each level's (and the site's) allowance, rate × dt over the ramp gain in
 * measured watts, goes to the parts in band order (grant_in_band_order); a part's grant
 * becomes a cap bound through its curve, measured watts converted to the curve's by
 * prev_w / meas_w. The totals in out are the rates the levels allow (each part's share in
 * proportion to its measured power, summed): what the schedule's lead plans with, whichever
 * band takes them. prev_lvl[topo n] and g are scratch; want, gd, gu [parts] too. */
static void ramp_bounds(const pfi_alloc_jobs *J, const ctl_tree_in *in, double *prev_lvl,
                        double *lo, double *hi, double *q, double *want, double *gd, double *gu,
                        grant_scratch *g, ctl_tree_out *out)
{
    size_t nn = in->topo ? in->topo->n : 0;
    double site = 0, down = 0, up = 0;
    bool any_down = false, any_up = false;
    for (size_t a = 0; a < nn; a++)
        prev_lvl[a] = 0;
    for (size_t j = 0; j < J->n; j++) {
        lo[j] = hi[j] = NAN;
        q[j] = part_measured(in, j);
        if (!(q[j] > 0))
            continue;
        site += q[j];
        for (size_t a = in->part_node ? in->part_node[j] : PFI_TOPO_NONE; a != PFI_TOPO_NONE;
             a = in->topo->parent[a])
            prev_lvl[a] += q[j];
    }
    for (size_t j = 0; j < J->n; j++) {
        double p = in->prev_w[j];
        if (!(q[j] > 0) || !(p > 0)) {
            down = up = INFINITY; /* a part with no bound: the total is unbounded */
            continue;
        }
        /* its proportional share of every allowance, in measured W/s: the totals */
        double gk = in->ramp_gain > 1 ? q[j] / in->ramp_gain : q[j];
        double dr = in->site_down_w_per_s * gk / site, ur = in->site_up_w_per_s * gk / site;
        for (size_t a = in->part_node ? in->part_node[j] : PFI_TOPO_NONE; a != PFI_TOPO_NONE;
             a = in->topo->parent[a]) {
            dr = fmin(dr, in->topo->ramp_down_w_per_s[a] * gk / prev_lvl[a]);
            ur = fmin(ur, in->topo->ramp_up_w_per_s[a] * gk / prev_lvl[a]);
        }
        down += dr;
        up += ur;
        any_down = any_down || isfinite(dr);
        any_up = any_up || isfinite(ur);
    }
    /* the falls: from the lowest band first, each part at most to its lowest allowed cap */
    for (size_t j = 0; j < J->n; j++) {
        const double *cap = J->cap_w + J->offset[j], *pw = J->power_w + J->offset[j];
        size_t n = J->offset[j + 1] - J->offset[j];
        double p = in->prev_w[j], k = p / q[j]; /* measured W to the curve's W */
        want[j] = q[j] > 0 && p > 0 ? (p - pfi_interp(cap, pw, n, part_lowest_cap(J, j))) / k : 0;
    }
    grant_in_band_order(J, in, q, want, true, gd, g);
    /* the rises: to the highest band first, each part at most to its top cap */
    for (size_t j = 0; j < J->n; j++) {
        const double *pw = J->power_w + J->offset[j];
        size_t n = J->offset[j + 1] - J->offset[j];
        double p = in->prev_w[j], k = p / q[j];
        want[j] = q[j] > 0 && p > 0 ? (pw[n - 1] - p) / k : 0;
    }
    grant_in_band_order(J, in, q, want, false, gu, g);
    for (size_t j = 0; j < J->n; j++) {
        double p = in->prev_w[j];
        if (!(q[j] > 0) || !(p > 0))
            continue;
        const double *cap = J->cap_w + J->offset[j], *pw = J->power_w + J->offset[j];
        size_t n = J->offset[j + 1] - J->offset[j];
        double k = p / q[j];
        if (isfinite(gd[j]))
            lo[j] = ctl_curve_cap_at_power(cap, pw, n, p - k * gd[j], true);
        if (isfinite(gu[j]))
            hi[j] = ctl_curve_cap_at_power(cap, pw, n, p + k * gu[j], false);
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
    /* lim, prev_lvl [nn]; lo, hi, q, want, gd, gu, add [n]; rem, Q [nn + 1] */
    double *lim = pfi_malloc((4 * nn + 7 * n + 3) * sizeof *lim);
    unsigned char *done = pfi_malloc(n + 1);
    pfi_alloc_tree_result tr;
    memset(&tr, 0, sizeof tr);
    if (lim == NULL || done == NULL) {
        pfi_free(lim);
        pfi_free(done);
        return PFI_ERR_NOMEM;
    }
    double *prev_lvl = lim + nn, *lo = prev_lvl + nn, *hi = lo + n, *q = hi + n, *want = q + n,
           *gd = want + n, *gu = gd + n;
    grant_scratch gs = {.add = gu + n, .rem = gu + 2 * n, .Q = gu + 2 * n + nn + 1, .done = done};
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
        ramp_bounds(J, in, prev_lvl, lo, hi, q, want, gd, gu, &gs, out);
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
    pfi_free(done);
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
