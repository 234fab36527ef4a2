/*
 * One period's allocation on the power tree with ramp limits (src/lib/control/tree_plan.c;
 * DESIGN §12, issue 18 items 1 and 5). The controller calls it every period with --topology
 * or a ramp; its property test (tests/test_ctl_tree.c) calls it with emulated GPUs and an
 * emulated clock. Internal; a pure function of its arguments, no clock read.
 *
 * A part is a job's GPUs on one node (a job on two nodes is two parts, each under its own
 * level, with the job's per-GPU curve scaled to the part's GPUs).
 *
 * Ramps. A level with a ramp (topology ramp=, ramp_up=, ramp_down=) and the site (its own
 * rates) bound how far the power under them may move in one period: the level's allowance,
 * down_a × dt (up_a for a rise), is handed to the parts under it in band order — a fall to
 * the lowest band first, a rise to the highest first (issue 18 item 4), each part at most as
 * far as it can move (to its lowest allowed cap, to its top) — and within a band in
 * proportion to the parts' measured power m now; a part's bound is the least of its
 * ancestors' (and the site's) grants. Summed over a level's parts the moves stay within the
 * level's allowance, whatever the allocator does inside the bounds; the bounds become
 * per-part cap bounds through the part's curve. So a ramp-limited cut never takes from a
 * higher band while a lower one sharing its levels could still fall. A budget that needs a
 * faster fall than the bounds allow is infeasible for the allocator: every part then sits at
 * its lowest allowed cap, which is the fall at the largest allowed rate (the ramp wins over
 * the budget; the report says so).
 */
#ifndef PFI_CTL_TREE_H
#define PFI_CTL_TREE_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/allocate.h"
#include "pfi/error.h"
#include "pfi/topology.h"

typedef struct ctl_tree_in {
    const pfi_topology *topo; /* borrowed; NULL: no tree (ramps only) */
    const size_t *part_node;  /* [parts] level index, PFI_TOPO_NONE: directly under the site
                                 (NULL: all) */
    const double *band;       /* [parts] priority band or NULL (all 0) */
    const double *held_w;     /* [topo->n] W held under each level by GPUs outside the parts
                                 (silent agents at their last caps, GPUs without a job): taken
                                 off the limit of the level and of its ancestors; NULL none */
    const double *prev_w;     /* [parts] predicted power of each part now, W (NaN: a part
                                 with no ramp bound, e.g. new); NULL: no ramps */
    const double *meas_w;     /* [parts] measured power of each part now, W (NULL or NaN:
                                 prev_w): ramps are on measured power, so each part's share
                                 of a level's allowance is in measured watts, converted to
                                 predicted watts by prev_w / meas_w (the curve's error) */
    double dt_s;              /* s until the next period (> 0 when prev_w is given) */
    double ramp_gain;         /* >= 1: every ramp allowance is divided by it (the measured
                                 power moved that much faster than the curves said last
                                 period; 1 or NaN: as the curves say) */
    double site_up_w_per_s, site_down_w_per_s; /* the site's ramp, W/s; INFINITY none */
    double margin; /* measured levels hold limit × (1 − margin): predicted power has errors
                      (reserve levels are exact: caps) */
    bool fill;     /* no budget (outside an event): caps also go up where the curve is flat (no
                      predicted power added), as far as the reserve limits and ramps allow, so
                      GPUs go back to their original limits where the tree has room */
    pfi_alloc_tree_workspace *ws; /* borrowed: the tree allocator's scratch, kept between
                                     periods (NULL: a workspace of its own each call) */
} ctl_tree_in;

typedef struct ctl_tree_out {
    bool ramp_limited;   /* a part's cap sits on a ramp bound (the ramp held it back) */
    double down_w_per_s; /* the largest total fall the ramps allow this period, W/s
                            (INFINITY: no ramp bounds any part) */
    double up_w_per_s;   /* the same for a rise */
    char bound[160];     /* the limits that bound: "site budget", "rack 'r1' (reserve
                            3000 W, line 3)", ... ("" none) */
} ctl_tree_out;

/*
 * ctl_tree_allocate — per-part caps into r (initialised for J->n) under the options' budget
 * o->budget_w (the parts' share of the site budget, W, measured kind) and every level of
 * in->topo (its limit less in->held_w under it), with ramp bounds from in->prev_w. J's
 * cap_lo_w / cap_hi_w must be NULL (the ramp bounds take their place). Errors: as
 * pfi_allocate_tree; PFI_ERR_NOMEM. An infeasible budget or level is not an error:
 * r->feasible is false, diag says which, and every part is at its lowest allowed cap.
 */
pfi_error ctl_tree_allocate(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                            const ctl_tree_in *in, pfi_alloc_result *r, ctl_tree_out *out,
                            pfi_diag *d);

/* ctl_ramp_gain_next — the ramp gain after a period: the parts' measured power moved by
 * moved_w (W) where the last plan moved their predicted power by planned_w (NaN: no plan);
 * when the plan was a move (|planned_w| > 0.2 % of scale_w, the parts' power) the ratio
 * moved / planned, if larger than the gain decayed (by a quarter of its excess over 1), is
 * the new gain; kept in [1, 3]. */
double ctl_ramp_gain_next(double gain, double planned_w, double moved_w, double scale_w);

/* ctl_curve_cap_at_power — on the piecewise-linear curve cap[n] (ascending) → power[n]
 * (non-decreasing): with lower true the least cap whose power is >= p (NaN when p is at or
 * under the lowest cap's power: no lower bound needed; the top cap when p is over the top's),
 * else the largest cap whose power is <= p (NaN when p is at or over the top cap's power; the
 * lowest cap when p is under its power). */
double ctl_curve_cap_at_power(const double *cap, const double *power, size_t n, double p,
                              bool lower);

#endif
