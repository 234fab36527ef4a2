/*
 * The controller on the power tree (issue 18 items 1, 5): the property over 1 000 events and
 * the power-swing figures.
 *
 * The property. Random trees (a feed over 2–4 racks, optionally PDUs between, 1–3 nodes a
 * rack, 1–2 jobs a node of 1–8 GPUs), random limits (reserve racks and PDUs between 55 % and
 * 100 % of their GPUs' top caps, a measured or reserve feed), random ramps (per level and for
 * the site, some levels none), random bands (three), and budget changes: 50 events a tree,
 * each announced 0–40 periods ahead (the schedule the controller looks into), lasting 5–30
 * periods at 45–100 % of the jobs' demand, then 2–20 periods without a budget. Each period
 * the test does what pfi control does with --topology and a ramp (src/lib/control/
 * controller.c: allocate_tree_jobs, src/cli/control.c: ramp_lead): the budget held is the
 * lead over the schedule (pfi_ctl_ramp_lead, a period early, 10 % slack, the margin), the
 * caps come from ctl_tree_allocate with the parts' predicted power at their caps (prev_w), the
 * emulated measured power (meas_w) and the ramp gain (ctl_ramp_gain_next). The emulated GPUs
 * draw their part's true curve at the caps set the period before (one period of measurement
 * lag): the curves the controller believes are off by a per-part factor within ±2.5 % (the
 * 3 % margin covers it). Checked every period, on the true power:
 *   - every reserve level: Σ GPUs × cap under it <= its limit;
 *   - every measured level: Σ true power under it <= its limit;
 *   - the site budget: true power <= the schedule's budget in force, unless the controller
 *     said the ramp could not reach it (ramp_limited) when it set those caps;
 *   - every level's and the site's ramp: |Δ true power| between periods <= rate × period.
 *   - band order (issue 18 item 4), for every pair of parts in one rack (sharing every
 *     level and the site) with different bands, on the allocation's predicted power: the
 *     higher band's power falls only when the lower band's part is at its lowest cap, the
 *     lower band's rises only when the higher band's part is at its top; under a measured
 *     and a reserve feed alike.
 * The same events with the ramp bounds switched off (prev_w NULL: the controller of
 * `--topology` without ramps) must break the ramps, or the property cannot fail; the same
 * events with the allocation given no bands must break the band order.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "checks.h"
#include "control/ctl_tree.h"
#include "pfi/audit.h"
#include "pfi/control.h"
#include "pfi/curve.h"
#include "pfi/rng.h"
#include "pfi/topology.h"

#define NPT 11       /* curve points a part */
#define MAXP 256     /* parts a tree */
#define PERIOD 1.0   /* s */
#define MARGIN 0.03  /* of the budget */
#define CAP_LO 200.0 /* W per GPU */
#define CAP_HI 700.0 /* W per GPU */

typedef struct sim {
    pfi_topology *topo;
    size_t np;
    size_t node[MAXP];
    double gpus[MAXP], band[MAXP], err[MAXP];
    size_t off[MAXP + 1];
    double cap[MAXP * NPT], pw[MAXP * NPT], tp[MAXP * NPT];
    double site_up, site_down;
    double demand; /* Σ parts' power at the top cap, W */
} sim;

typedef struct tally {
    size_t periods, budget_checked, ramp_checked, limit_checked;
    size_t limit_viol, budget_viol, ramp_viol, ramp_limited;
    size_t excused_over; /* event periods over the budget that a ramp-limited period excused */
    double worst_ramp_ratio;
    /* band order: pairs of parts in one rack (every level and the site shared) checked each
       period, by the feed's kind (0 reserve, 1 measured); a cut from the higher band while
       the lower one sits above its lowest cap, a rise of the lower band while the higher
       one is below its top */
    size_t band_pairs[2], band_cut_viol, band_rise_viol;
} tally;

static double urand(pfi_rng *r, double a, double b)
{
    return a + (b - a) * pfi_rng_uniform(r);
}

/* The part's curve (whole part: gpus × per GPU) at cap c, true when with_err. */
static double part_power(const sim *s, size_t j, double c, bool with_err)
{
    size_t a = s->off[j];
    double p = pfi_interp(s->cap + a, s->pw + a, s->off[j + 1] - a, c);
    return with_err ? p * (1 + s->err[j]) : p;
}

/* A random tree as a topology file, read through the parser. */
static void make_tree(pfi_rng *r, sim *s)
{
    char text[8192];
    size_t len = 0;
    int racks = 2 + (int)urand(r, 0, 3), pdus = pfi_rng_uniform(r) < 0.5 ? 2 : 0;
    double up_feed = pfi_rng_uniform(r) < 0.5 ? urand(r, 300, 3000) : INFINITY;
    len += (size_t)snprintf(text + len, sizeof text - len, "feed feed - 1e9 %s",
                            pfi_rng_uniform(r) < 0.5 ? "measured" : "reserve");
    if (isfinite(up_feed))
        len += (size_t)snprintf(text + len, sizeof text - len, " ramp=%.0f", up_feed);
    len += (size_t)snprintf(text + len, sizeof text - len, "\n");
    for (int p = 0; p < pdus; p++)
        len += (size_t)snprintf(text + len, sizeof text - len, "pdu pdu%d feed 1e9\n", p);
    s->np = 0;
    for (int k = 0; k < racks; k++) {
        len += (size_t)snprintf(text + len, sizeof text - len, "rack r%d %s 1e9", k,
                                pdus ? (k % 2 ? "pdu1" : "pdu0") : "feed");
        if (pfi_rng_uniform(r) < 0.6)
            len += (size_t)snprintf(text + len, sizeof text - len, " ramp_down=%.0f ramp_up=%.0f",
                                    urand(r, 100, 1500), urand(r, 100, 1500));
        len += (size_t)snprintf(text + len, sizeof text - len, "\n");
        int nodes = 1 + (int)urand(r, 0, 3);
        for (int n = 0; n < nodes; n++)
            len += (size_t)snprintf(text + len, sizeof text - len, "node n%d_%d r%d -\n", k, n, k);
    }
    FILE *f = fmemopen(text, len, "r");
    assert_non_null(f);
    pfi_diag d;
    pfi_error e = pfi_topology_read_stream(f, "random", &s->topo, &d);
    fclose(f);
    if (e != PFI_OK)
        fail_msg("topology: %s\n%s", d.message, text);
    /* parts: 1–2 jobs a node */
    s->off[0] = 0;
    s->demand = 0;
    for (size_t a = 0; a < s->topo->n; a++) {
        if (strcmp(s->topo->level[a], "node") != 0)
            continue;
        int jobs = 1 + (pfi_rng_uniform(r) < 0.4);
        for (int q = 0; q < jobs && s->np < MAXP; q++) {
            size_t j = s->np++;
            s->node[j] = a;
            s->gpus[j] = (double)(1 + (int)urand(r, 0, 8));
            s->band[j] = (double)(int)urand(r, 0, 3);
            s->err[j] = urand(r, -0.025, 0.025);
            double dem = urand(r, 300, 690), slope = urand(r, 0.85, 1.0), t0 = urand(r, 1e3, 3e4);
            for (int k = 0; k < NPT; k++) {
                double c = CAP_LO + (CAP_HI - CAP_LO) * k / (NPT - 1);
                double p = fmin(dem, slope * c);
                size_t i = s->off[j] + (size_t)k;
                s->cap[i] = c;
                s->pw[i] = s->gpus[j] * p;
                s->tp[i] = s->gpus[j] * t0 * pow(p / dem, 0.6);
            }
            s->off[j + 1] = s->off[j] + NPT;
            s->demand += part_power(s, j, CAP_HI, true);
        }
    }
    /* limits: reserve racks and PDUs at 55–100 % of their GPUs' top caps, never below the
     * least they can take; the feed at 70–100 % of the demand (measured) or of the top caps */
    double *top = calloc(s->topo->n, sizeof *top), *least = calloc(s->topo->n, sizeof *least),
           *dem = calloc(s->topo->n, sizeof *dem);
    assert_true(top && least && dem);
    for (size_t j = 0; j < s->np; j++)
        for (size_t a = s->node[j]; a != PFI_TOPO_NONE; a = s->topo->parent[a]) {
            top[a] += s->gpus[j] * CAP_HI;
            least[a] += s->gpus[j] * CAP_LO;
            dem[a] += part_power(s, j, CAP_HI, true);
        }
    for (size_t a = 0; a < s->topo->n; a++) {
        const char *lv = s->topo->level[a];
        if (strcmp(lv, "node") == 0) {
            s->topo->limit_w[a] = INFINITY;
        } else if (strcmp(lv, "feed") == 0) {
            s->topo->limit_w[a] = s->topo->kind[a] == PFI_LIMIT_MEASURED
                                      ? urand(r, 0.7, 1.0) * dem[a]
                                      : urand(r, 0.7, 1.0) * top[a];
            if (s->topo->kind[a] == PFI_LIMIT_MEASURED) /* its least draw, with the margin */
                s->topo->limit_w[a] = fmax(s->topo->limit_w[a], 1.3 * least[a]);
        } else {
            s->topo->limit_w[a] = fmax(1.05 * least[a], urand(r, 0.55, 1.0) * top[a]);
        }
    }
    free(top);
    free(least);
    free(dem);
    s->site_down = pfi_rng_uniform(r) < 0.7 ? urand(r, 200, 4000) : INFINITY;
    s->site_up = pfi_rng_uniform(r) < 0.7 ? urand(r, 200, 4000) : INFINITY;
    if (isinf(s->site_down) && isinf(s->site_up)) /* a ramp somewhere: the point of it */
        s->site_down = 1000;
}

/* The schedule: budget in force at period k (INFINITY: none). */
typedef struct event {
    long start, end;
    double budget;
} event;

static double sched_at(const event *ev, size_t n, long k)
{
    for (size_t i = 0; i < n; i++)
        if (k >= ev[i].start && k < ev[i].end)
            return ev[i].budget;
    return INFINITY;
}

/* Band order in one period's allocation (res, from the parts' predicted power prev): for
 * every pair of parts in one rack (nodes have no limit or ramp, so the two share every level
 * and the site) with band[j] > band[i], a reduction is taken from the lower band first — j's
 * power falls only if i is at its lowest cap — and a restore goes to the higher band first —
 * i's power rises only if j is at its top. */
static void check_bands(const sim *s, const double *prev, const pfi_alloc_result *res, tally *t)
{
    bool measured = s->topo->kind[0] == PFI_LIMIT_MEASURED; /* the feed: the first line */
    for (size_t i = 0; i < s->np; i++)
        for (size_t j = 0; j < s->np; j++) {
            if (!(s->band[j] > s->band[i]) ||
                s->topo->parent[s->node[i]] != s->topo->parent[s->node[j]])
                continue;
            t->band_pairs[measured]++;
            double tol_i = 1e-6 * (1 + prev[i]), tol_j = 1e-6 * (1 + prev[j]);
            double low_i = part_power(s, i, CAP_LO, false), top_j = part_power(s, j, CAP_HI, false);
            if (res->power_w[j] < prev[j] - tol_j && res->power_w[i] > low_i + tol_i) {
                t->band_cut_viol++;
                if (getenv("SIM_DEBUG"))
                    fprintf(stderr,
                            "band cut: part %zu (band %g) %.1f -> %.1f W while part %zu "
                            "(band %g) at %.1f W > lowest %.1f W\n",
                            j, s->band[j], prev[j], res->power_w[j], i, s->band[i], res->power_w[i],
                            low_i);
            }
            if (res->power_w[i] > prev[i] + tol_i && res->power_w[j] < top_j - tol_j) {
                t->band_rise_viol++;
                if (getenv("SIM_DEBUG"))
                    fprintf(stderr,
                            "band rise: part %zu (band %g) %.1f -> %.1f W while part "
                            "%zu (band %g) at %.1f W < top %.1f W\n",
                            i, s->band[i], prev[i], res->power_w[i], j, s->band[j], res->power_w[j],
                            top_j);
            }
        }
}

/* One tree, its events; ramps false: the ramp bounds off; bands false: the allocation is
 * given no bands (the band check must then fail). */
static void run_tree(pfi_rng *r, size_t n_events, bool ramps, bool bands, tally *t)
{
    sim *s = calloc(1, sizeof *s);
    assert_non_null(s);
    make_tree(r, s);
    event *ev = calloc(n_events, sizeof *ev);
    assert_non_null(ev);
    long k0 = 3;
    for (size_t i = 0; i < n_events; i++) {
        ev[i].start = k0 + (long)urand(r, 0, 41); /* announced 0–40 periods ahead */
        ev[i].end = ev[i].start + 5 + (long)urand(r, 0, 26);
        ev[i].budget = urand(r, 0.45, 1.0) * s->demand;
        k0 = ev[i].end + 2 + (long)urand(r, 0, 19);
    }
    size_t np = s->np, nn = s->topo->n;
    double caps[MAXP], prev[MAXP], meas[MAXP], truth_lvl[64], last_lvl[64];
    assert_true(nn <= 63);
    for (size_t j = 0; j < np; j++)
        caps[j] = CAP_HI;
    pfi_alloc_result res;
    assert_int_equal(pfi_alloc_result_init(&res, np), PFI_OK);
    pfi_alloc_jobs aj = {.n = np,
                         .offset = s->off,
                         .cap_w = s->cap,
                         .power_w = s->pw,
                         .tput_tok_s = s->tp,
                         .gpus = s->gpus};
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    o.strategy = PFI_STRATEGY_ORACLE;
    double gain = 1, plan = NAN, meas_then = NAN, rate = INFINITY, last_site = NAN;
    bool limited_prev = false;
    long k_end = ev[n_events - 1].end + 5;
    for (long k = 0; k < k_end; k++) {
        /* measured: the true curves at the caps set last period */
        double site = 0, msum = 0, psum = 0;
        for (size_t a = 0; a < nn; a++)
            truth_lvl[a] = 0;
        for (size_t j = 0; j < np; j++) {
            meas[j] = part_power(s, j, caps[j], true);
            prev[j] = part_power(s, j, caps[j], false);
            site += meas[j];
            msum += meas[j];
            psum += prev[j];
            for (size_t a = s->node[j]; a != PFI_TOPO_NONE; a = s->topo->parent[a])
                truth_lvl[a] += meas[j];
        }
        /* the checks on what the caps set last period do (from the second period: the
         * first caps come from the start, uncapped) */
        if (k >= 2) {
            t->periods++;
            for (size_t a = 0; a < nn; a++) {
                if (!isfinite(s->topo->limit_w[a]))
                    continue;
                double v = 0;
                if (s->topo->kind[a] == PFI_LIMIT_RESERVE) {
                    for (size_t j = 0; j < np; j++)
                        for (size_t b = s->node[j]; b != PFI_TOPO_NONE; b = s->topo->parent[b])
                            if (b == a)
                                v += s->gpus[j] * caps[j];
                } else {
                    v = truth_lvl[a];
                }
                t->limit_checked++;
                if (v > s->topo->limit_w[a] * (1 + 1e-9) + 1e-6) {
                    t->limit_viol++;
                    if (getenv("SIM_DEBUG"))
                        fprintf(stderr, "k %ld %s %s: %.1f > %.1f\n", k, s->topo->name[a],
                                pfi_limit_kind_name(s->topo->kind[a]), v, s->topo->limit_w[a]);
                }
            }
            double b = sched_at(ev, n_events, k);
            if (isfinite(b) && limited_prev && site > b * (1 + 1e-9))
                t->excused_over++;
            if (isfinite(b) && !limited_prev) {
                t->budget_checked++;
                if (site > b * (1 + 1e-9)) {
                    t->budget_viol++;
                    if (getenv("SIM_DEBUG"))
                        fprintf(stderr, "k %ld site %.1f > budget %.1f\n", k, site, b);
                }
            }
            /* ramps: every level with one, and the site */
            for (size_t a = 0; a <= nn; a++) {
                double up = a < nn ? s->topo->ramp_up_w_per_s[a] : s->site_up,
                       down = a < nn ? s->topo->ramp_down_w_per_s[a] : s->site_down;
                double now = a < nn ? truth_lvl[a] : site, was = a < nn ? last_lvl[a] : last_site;
                double lim = now > was ? up : down;
                if (!isfinite(lim))
                    continue;
                t->ramp_checked++;
                double ratio = fabs(now - was) / (lim * PERIOD);
                t->worst_ramp_ratio = fmax(t->worst_ramp_ratio, ratio);
                if (fabs(now - was) > lim * PERIOD * (1 + 1e-6) + 1e-6) {
                    t->ramp_viol++;
                    if (getenv("SIM_DEBUG") && ramps)
                        fprintf(stderr, "k %ld %s ramp: %.1f -> %.1f (%.1f W/s allowed)\n", k,
                                a < nn ? s->topo->name[a] : "site", was, now, lim);
                }
            }
        }
        memcpy(last_lvl, truth_lvl, sizeof last_lvl);
        last_site = site;
        /* the controller: the lead over the schedule, then the tree */
        gain = ctl_ramp_gain_next(gain, plan, msum - meas_then, psum);
        double now_b = sched_at(ev, n_events, k);
        double tw[64], bw[64];
        size_t nf = 0;
        for (long q = 1; q <= 60 && nf < 64; q++) {
            double b = sched_at(ev, n_events, k + q);
            if (isfinite(b)) {
                tw[nf] = (double)(k + q) * PERIOD;
                bw[nf++] = b;
            }
        }
        double lead = now_b;
        if (ramps && rate > 0 && isfinite(rate))
            lead = pfi_ctl_ramp_lead((double)(k + 1) * PERIOD, now_b, tw, bw, nf,
                                     0.9 * rate / (1 - MARGIN));
        /* a period early: the caps set now hold at the next period */
        double next_b = sched_at(ev, n_events, k + 1);
        lead = fmin(lead, next_b);
        o.budget_w = isfinite(lead) ? lead * (1 - MARGIN) : 1e15;
        ctl_tree_in in = {.topo = s->topo,
                          .part_node = s->node,
                          .band = bands ? s->band : NULL,
                          .prev_w = ramps && k > 0 ? prev : NULL,
                          .meas_w = meas,
                          .dt_s = PERIOD,
                          .ramp_gain = gain,
                          .site_up_w_per_s = s->site_up,
                          .site_down_w_per_s = s->site_down,
                          .margin = MARGIN,
                          .fill = !isfinite(lead)};
        ctl_tree_out out;
        pfi_diag d;
        pfi_error e = ctl_tree_allocate(&aj, &o, &in, &res, &out, &d);
        if (e != PFI_OK)
            fail_msg("ctl_tree_allocate: %s", d.message);
        if (k > 0)
            check_bands(s, prev, &res, t);
        rate = out.down_w_per_s;
        limited_prev = out.ramp_limited || !res.feasible;
        if (limited_prev && isfinite(next_b))
            t->ramp_limited++;
        double planned = 0;
        for (size_t j = 0; j < np; j++) {
            planned += res.power_w[j] - prev[j];
            caps[j] = res.cap_w[j];
        }
        plan = planned;
        meas_then = msum;
    }
    pfi_alloc_result_clear(&res);
    pfi_topology_destroy(s->topo);
    free(ev);
    free(s);
}

/*
 * Three bands under a ramp (issue 18 item 4): one node in one rack, three parts of 4 GPUs,
 * each drawing its cap (p = 4 × cap, caps 200–700 W a GPU) for t = 10 p − p² / 2000 tokens/s
 * (concave: every point a vertex). Part 0 (band 0) has the floor t(2400 W) / t(2800 W) (its
 * lowest cap 600 W), parts 1 and 2 (bands 1, 2) none. From their tops (8 400 W) the limit is
 * 6 200 W: the site's measured budget, the site falling at most 500 W a period; or the rack's
 * reserve limit (caps × GPUs: the same watts here), which wins over the ramp at once. By
 * hand: the 2 200 W cut is 400 W from band 0 (to its floor) and 1 800 W from band 1
 * (2 800 → 1 000 W, cap 250 W), none from band 2. 500 W a period: band 0 to its floor and
 * 100 W from band 1 (cap 675 W), then band 1 to 550, 425 and 300 W, and in the fifth period
 * to its lowest allowed (200 W) with the 200 W left back to it: 250 W. The proportional
 * split of the allowance this replaced cut band 2 in the first period.
 */
static void test_bands_ramp(void **state)
{
    (void)state;
    for (int kind = 0; kind < 2; kind++) { /* 0: measured site budget; 1: reserve rack */
        const char *text = kind == 0 ? "rack r - 1e9\nnode n r -\n" : "rack r - 6200\nnode n r -\n";
        FILE *f = fmemopen((void *)text, strlen(text), "r");
        assert_non_null(f);
        pfi_topology *topo = NULL;
        pfi_diag d;
        assert_int_equal(pfi_topology_read_stream(f, "bands", &topo, &d), PFI_OK);
        fclose(f);
        size_t node = 1, part_node[3] = {node, node, node}, off[4] = {0, 6, 12, 18};
        double cap[18], pw[18], tp[18], gpus[3] = {4, 4, 4}, band[3] = {0, 1, 2};
        double floor_frac[3] = {(24000 - 2400.0 * 2400 / 2000) / (28000 - 2800.0 * 2800 / 2000),
                                NAN, NAN};
        for (size_t j = 0; j < 3; j++)
            for (size_t i = 0; i < 6; i++) {
                double p = 4 * (200 + 100 * (double)i);
                cap[6 * j + i] = 200 + 100 * (double)i;
                pw[6 * j + i] = p;
                tp[6 * j + i] = 10 * p - p * p / 2000;
            }
        pfi_alloc_jobs aj = {.n = 3,
                             .offset = off,
                             .cap_w = cap,
                             .power_w = pw,
                             .tput_tok_s = tp,
                             .gpus = gpus,
                             .floor_frac = floor_frac};
        pfi_alloc_options o;
        pfi_alloc_options_init(&o);
        o.strategy = PFI_STRATEGY_ORACLE;
        o.budget_w = kind == 0 ? 6200 : 1e15;
        pfi_alloc_result res;
        assert_int_equal(pfi_alloc_result_init(&res, 3), PFI_OK);
        double caps[3] = {700, 700, 700}, prev[3];
        /* by hand: the caps after each period */
        const double want[2][5][3] = {
            {{600, 675, 700}, {600, 550, 700}, {600, 425, 700}, {600, 300, 700}, {600, 250, 700}},
            {{600, 250, 700}, {600, 250, 700}, {600, 250, 700}, {600, 250, 700}, {600, 250, 700}}};
        for (int k = 0; k < 5; k++) {
            for (size_t j = 0; j < 3; j++)
                prev[j] = 4 * caps[j];
            ctl_tree_in in = {.topo = topo,
                              .part_node = part_node,
                              .band = band,
                              .prev_w = prev,
                              .meas_w = prev,
                              .dt_s = 1,
                              .ramp_gain = 1,
                              .site_up_w_per_s = INFINITY,
                              .site_down_w_per_s = 500,
                              .margin = 0};
            ctl_tree_out out;
            pfi_diag_clear(&d);
            assert_int_equal(ctl_tree_allocate(&aj, &o, &in, &res, &out, &d), PFI_OK);
            for (size_t j = 0; j < 3; j++) {
                CHECK(fabs(res.cap_w[j] - want[kind][k][j]) < 1e-6,
                      "%s, period %d: part %zu (band %g) cap %.6f W, by hand %.0f W",
                      kind == 0 ? "measured budget" : "reserve rack", k + 1, j, band[j],
                      res.cap_w[j], want[kind][k][j]);
                caps[j] = res.cap_w[j];
            }
            /* the rule itself: a band loses power only when every lower one is at its floor */
            CHECK(caps[2] >= 700 - 1e-6 || (caps[1] <= 200 + 1e-6 && caps[0] <= 600 + 1e-6),
                  "period %d: band 2 cut above the lower bands' floors", k + 1);
            CHECK(caps[1] >= prev[1] / 4 - 1e-6 || caps[0] <= 600 + 1e-6,
                  "period %d: band 1 cut while band 0 is above its floor", k + 1);
            CHECK(k < 4 || res.feasible, "the last period meets the limit");
        }
        pfi_alloc_result_clear(&res);
        pfi_topology_destroy(topo);
    }
    END_CHECKS();
}

static void test_tree_property(void **state)
{
    (void)state;
    pfi_rng r, r2, r3;
    pfi_rng_seed(&r, 20261206, 18);
    pfi_rng_seed(&r2, 20261206, 18);
    pfi_rng_seed(&r3, 20261206, 18);
    tally on = {0}, off = {0}, nob = {0};
    for (int tree = 0; tree < 20; tree++) /* 20 trees × 50 events = 1 000 events */
        run_tree(&r, 50, true, true, &on);
    for (int tree = 0; tree < 5; tree++) /* the first 5 trees again, the bounds off */
        run_tree(&r2, 50, false, true, &off);
    for (int tree = 0; tree < 5; tree++) /* and again with ramps, the allocation without bands */
        run_tree(&r3, 50, true, false, &nob);
    print_message("with ramps: %zu periods, %zu limit checks (%zu over), %zu budget checks (%zu "
                  "over, %zu event periods ramp-limited, %zu of them over), %zu ramp checks (%zu "
                  "over, worst %.4f of the rate)\n",
                  on.periods, on.limit_checked, on.limit_viol, on.budget_checked, on.budget_viol,
                  on.ramp_limited, on.excused_over, on.ramp_checked, on.ramp_viol,
                  on.worst_ramp_ratio);
    print_message("ramp bounds off: %zu ramp checks, %zu over (worst %.2f of the rate), %zu "
                  "limit checks (%zu over)\n",
                  off.ramp_checked, off.ramp_viol, off.worst_ramp_ratio, off.limit_checked,
                  off.limit_viol);
    print_message("band order: %zu pair-periods under a reserve feed, %zu under a measured one: "
                  "%zu cuts from a higher band while a lower one was above its lowest cap, %zu "
                  "rises of a lower band while a higher one was below its top (ramp bounds off: "
                  "%zu, %zu; the allocation given no bands: %zu, %zu)\n",
                  on.band_pairs[0], on.band_pairs[1], on.band_cut_viol, on.band_rise_viol,
                  off.band_cut_viol, off.band_rise_viol, nob.band_cut_viol, nob.band_rise_viol);
    CHECK(on.periods > 20000, "the property looked at %zu periods", on.periods);
    CHECK(on.limit_viol == 0, "%zu level-limit violations", on.limit_viol);
    CHECK(on.budget_viol == 0, "%zu budget violations outside ramp-limited periods",
          on.budget_viol);
    CHECK(on.ramp_viol == 0, "%zu ramp violations", on.ramp_viol);
    CHECK(on.budget_checked > on.ramp_limited,
          "most event periods are met, not excused by the ramp: %zu checked, %zu limited",
          on.budget_checked, on.ramp_limited);
    CHECK(off.ramp_viol > 0, "without the ramp bounds the property must fail: %zu violations",
          off.ramp_viol);
    CHECK(off.limit_viol == 0, "the limits hold without ramps too: %zu", off.limit_viol);
    CHECK(on.band_pairs[0] > 1000 && on.band_pairs[1] > 1000,
          "band pairs under a reserve feed %zu, a measured one %zu", on.band_pairs[0],
          on.band_pairs[1]);
    CHECK(on.band_cut_viol == 0 && on.band_rise_viol == 0,
          "band order with ramps: %zu cuts, %zu rises out of order", on.band_cut_viol,
          on.band_rise_viol);
    CHECK(off.band_cut_viol == 0 && off.band_rise_viol == 0,
          "band order without ramps: %zu cuts, %zu rises out of order", off.band_cut_viol,
          off.band_rise_viol);
    CHECK(nob.band_cut_viol > 0 && nob.band_rise_viol > 0,
          "without bands the band check must fail: %zu cuts, %zu rises", nob.band_cut_viol,
          nob.band_rise_viol);
    END_CHECKS();
}

/* The swing figures by hand: 20 s at 100 Hz of 1 000 W + 50 sin(2π·1 Hz t) + 30 sin(2π·0.05
 * Hz t) + 20 sin(2π·30 Hz t): the 0.1–20 Hz band holds the 1 Hz tone alone (whole periods
 * of every tone in the window, so no leakage): energy 50² / 2 = 1 250 W², rms 35.36 W.
 * Max ramp: samples 0.01 s apart; dynamic range: the series' max − min. */
static void test_swing(void **state)
{
    (void)state;
    size_t n = 2000;
    double *t = malloc(n * sizeof *t), *w = malloc(n * sizeof *w);
    assert_true(t && w);
    double mx = -INFINITY, mn = INFINITY, ramp = 0;
    for (size_t i = 0; i < n; i++) {
        t[i] = (double)i * 0.01;
        w[i] = 1000 + 50 * sin(2 * M_PI * t[i]) + 30 * sin(2 * M_PI * 0.05 * t[i]) +
               20 * sin(2 * M_PI * 30 * t[i]);
        mx = fmax(mx, w[i]);
        mn = fmin(mn, w[i]);
        if (i > 0)
            ramp = fmax(ramp, fabs(w[i] - w[i - 1]) / 0.01);
    }
    pfi_power_swing sw;
    pfi_diag d;
    assert_int_equal(pfi_power_swing_compute(t, w, n, 0.1, 20, &sw, &d), PFI_OK);
    CHECK(fabs(sw.osc_energy_w2 - 1250) < 1e-6, "energy %.9f W^2, expected 1250", sw.osc_energy_w2);
    CHECK(fabs(sw.osc_rms_w - sqrt(1250)) < 1e-8, "rms %.9f", sw.osc_rms_w);
    CHECK(fabs(sw.dynamic_range_w - (mx - mn)) < 1e-9, "range %.6f", sw.dynamic_range_w);
    CHECK(fabs(sw.max_ramp_w_per_s - ramp) < 1e-6, "ramp %.6f vs %.6f", sw.max_ramp_w_per_s, ramp);
    CHECK(fabs(sw.dt_s - 0.01) < 1e-12 && sw.band_hi_used_hz == 20, "grid");
    /* a missing sample is skipped, not a 0 */
    w[1000] = NAN;
    assert_int_equal(pfi_power_swing_compute(t, w, n, 0.1, 20, &sw, &d), PFI_OK);
    CHECK(sw.n_missing == 1 && sw.min_w > 900, "missing: %zu, min %.1f", sw.n_missing, sw.min_w);
    /* sampled every 10 s: Nyquist 0.05 Hz < 0.1 Hz, the band says nothing: NaN */
    double t2[] = {0, 10, 20, 30, 40, 50}, w2[] = {1, 2, 3, 2, 1, 2};
    assert_int_equal(pfi_power_swing_compute(t2, w2, 6, 0.1, 20, &sw, &d), PFI_OK);
    CHECK(isnan(sw.osc_energy_w2) && sw.max_ramp_w_per_s == 0.1 && sw.dynamic_range_w == 2,
          "coarse: energy %g ramp %g range %g", sw.osc_energy_w2, sw.max_ramp_w_per_s,
          sw.dynamic_range_w);
    /* bad input */
    double t3[] = {0, 1, 1};
    assert_int_equal(pfi_power_swing_compute(t3, w2, 3, 0.1, 20, &sw, &d),
                     PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_power_swing_compute(t2, w2, 1, 0.1, 20, &sw, &d), PFI_ERR_EMPTY);
    assert_int_equal(pfi_power_swing_compute(t2, w2, 6, 1, 0.5, &sw, &d), PFI_ERR_INVALID_ARGUMENT);
    free(t);
    free(w);
    END_CHECKS();
}

/* The lead: a 6 000 W budget at t = 10 s, falling at 500 W/s: hold 6 000 + 500 × (10 − t). */
static void test_ramp_lead(void **state)
{
    (void)state;
    double tw[] = {10, 11, 20}, bw[] = {6000, 6000, 9000};
    assert_true(fabs(pfi_ctl_ramp_lead(4, INFINITY, tw, bw, 3, 500) - 9000) < 1e-9);
    assert_true(fabs(pfi_ctl_ramp_lead(8, 8500, tw, bw, 3, 500) - 7000) < 1e-9);
    assert_true(isinf(pfi_ctl_ramp_lead(30, INFINITY, tw, bw, 3, 500)));
    assert_true(fabs(pfi_ctl_ramp_lead(12, 5000, tw, bw, 3, 500) - 5000) < 1e-9);
}

/* The parent's split by hand. Budget 6 000 W over children with ranges [1 000, 3 000],
 * [500, 4 500] and one silent holding 2 000 W: the rest 4 000 W, minima 1 500 W, headroom
 * 6 000 W, f = 2 500 / 6 000: shares 1 000 + 2 000 f = 1 833.33, 500 + 4 000 f = 2 166.67. */
static void test_split(void **state)
{
    (void)state;
    double mn[] = {1000, 500, 0}, mx[] = {3000, 4500, 0}, fx[] = {NAN, NAN, 2000}, sh[3];
    bool ok;
    assert_int_equal(pfi_ctl_split(6000, mn, mx, fx, 3, sh, &ok), PFI_OK);
    assert_true(ok);
    assert_true(fabs(sh[0] - (1000 + 2000 * 2500.0 / 6000)) < 1e-9);
    assert_true(fabs(sh[1] - (500 + 4000 * 2500.0 / 6000)) < 1e-9);
    assert_true(sh[2] == 2000 && fabs(sh[0] + sh[1] + sh[2] - 6000) < 1e-9);
    /* above every maximum: the surplus 1 500 W in proportion to the maxima (3 : 4.5) */
    assert_int_equal(pfi_ctl_split(11000, mn, mx, fx, 3, sh, &ok), PFI_OK);
    assert_true(ok && fabs(sh[0] - 3600) < 1e-9 && fabs(sh[1] - 5400) < 1e-9);
    /* below the held budget and the minima: infeasible, each at its minimum */
    assert_int_equal(pfi_ctl_split(3000, mn, mx, fx, 3, sh, &ok), PFI_OK);
    assert_true(!ok && sh[0] == 1000 && sh[1] == 500 && sh[2] == 2000);
    double bad_mx[] = {900, 4500, 0};
    assert_int_equal(pfi_ctl_split(6000, mn, bad_mx, fx, 3, sh, &ok), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_ctl_split(NAN, mn, mx, fx, 3, sh, &ok), PFI_ERR_INVALID_ARGUMENT);
}

/* The parent's split across bands (issue 18 item 4) by hand. Rack A: 100 W of fixed draw
 * (min 1 000 W) and bands 0 [200, 600], 1 [300, 900], 2 [400, 1 200]: headroom 400, 600, 800,
 * max 2 800 W. Rack B: bands 0 [300, 1 100], 1 [200, 600], 2 [100, 300]: headroom 800, 400,
 * 200, min 600, max 2 000 W. Minima 1 600 W, maxima 4 800 W. */
static const pfi_ctl_band_range band_a[] = {
    {.band = 0, .min_w = 200, .max_w = 600},
    {.band = 1, .min_w = 300, .max_w = 900},
    {.band = 2, .min_w = 400, .max_w = 1200},
};
static const pfi_ctl_band_range band_b[] = {
    {.band = 0, .min_w = 300, .max_w = 1100},
    {.band = 1, .min_w = 200, .max_w = 600},
    {.band = 2, .min_w = 100, .max_w = 300},
};

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static void test_split_bands(void **state)
{
    (void)state;
    pfi_ctl_split_child ch[] = {
        {.min_w = 1000, .max_w = 2800, .fixed_w = NAN, .bands = band_a, .n_bands = 3},
        {.min_w = 600, .max_w = 2000, .fixed_w = NAN, .bands = band_b, .n_bands = 3},
    };
    double sh[3];
    bool ok;
    /* 3 100 W: the rest over the minima 1 500 W; band 2's 1 000 W in full, then 500 W of
     * band 1's 1 000 W (f = 0.5: A 300, B 200), band 0 cut to its floor in both racks:
     * A 1 000 + 800 + 300 = 2 100, B 600 + 200 + 200 = 1 000 (without bands: f = 1 500 /
     * 3 200 of the headroom, A 1 843.75, B 1 256.25 — band 2 cut while band 0 runs) */
    assert_int_equal(pfi_ctl_split_bands(3100, ch, 2, sh, &ok), PFI_OK);
    assert_true(ok && NEAR(sh[0], 2100) && NEAR(sh[1], 1000));
    double mn[] = {1000, 600}, mx[] = {2800, 2000}, fx[] = {NAN, NAN};
    assert_int_equal(pfi_ctl_split(3100, mn, mx, fx, 2, sh, &ok), PFI_OK);
    assert_true(ok && NEAR(sh[0], 1843.75) && NEAR(sh[1], 1256.25));
    /* 4 300 W: 2 700 over the minima; bands 2 and 1 in full (2 000), 700 of band 0's 1 200
     * (f = 7/12): A 1 000 + 800 + 600 + 400 × 7/12, B 600 + 200 + 400 + 800 × 7/12 */
    assert_int_equal(pfi_ctl_split_bands(4300, ch, 2, sh, &ok), PFI_OK);
    assert_true(ok && NEAR(sh[0], 2400 + 400 * 7.0 / 12) && NEAR(sh[1], 1200 + 800 * 7.0 / 12));
    /* 1 900 W: 300 over the minima, all to band 2 (f = 0.3: A 240, B 60) */
    assert_int_equal(pfi_ctl_split_bands(1900, ch, 2, sh, &ok), PFI_OK);
    assert_true(ok && NEAR(sh[0], 1240) && NEAR(sh[1], 660));
    /* 5 800 W: above the maxima, the surplus 1 000 W in proportion to them (28 : 20) */
    assert_int_equal(pfi_ctl_split_bands(5800, ch, 2, sh, &ok), PFI_OK);
    assert_true(ok && NEAR(sh[0], 2800 + 1000 * 28.0 / 48) && NEAR(sh[1], 2000 + 1000 * 20.0 / 48));
    /* below the minima: infeasible, each at its minimum */
    assert_int_equal(pfi_ctl_split_bands(1500, ch, 2, sh, &ok), PFI_OK);
    assert_true(!ok && sh[0] == 1000 && sh[1] == 600);

    /* A's range cut by a top limit to 2 400 W: its bands' headroom 1 800 exceeds 1 400 by
     * 400, taken from its lowest band (band 0: 400 -> 0). 4 000 W: 2 400 over the minima,
     * bands 2 and 1 in full (2 000), 400 of band 0's 800 (B's alone): A 1 000 + 800 + 600 =
     * 2 400, B 600 + 200 + 400 + 400 = 1 600 */
    ch[0].max_w = 2400;
    assert_int_equal(pfi_ctl_split_bands(4000, ch, 2, sh, &ok), PFI_OK);
    assert_true(ok && NEAR(sh[0], 2400) && NEAR(sh[1], 1600));
    /* cut to 2 000 W: 800 over, band 0 (400) and 400 of band 1 (600 -> 200). 2 300 W: 700
     * over the minima; band 2 (1 000) at f = 0.7: A 1 560, B 740 */
    ch[0].max_w = 2000;
    assert_int_equal(pfi_ctl_split_bands(2300, ch, 2, sh, &ok), PFI_OK);
    assert_true(ok && NEAR(sh[0], 1560) && NEAR(sh[1], 740));
    /* 3 200 W: 1 600 over; band 2 1 000 in full, band 1 (A 200 + B 400) 600 in full: A 2 000,
     * B 1 200 */
    assert_int_equal(pfi_ctl_split_bands(3200, ch, 2, sh, &ok), PFI_OK);
    assert_true(ok && NEAR(sh[0], 2000) && NEAR(sh[1], 1200));
    /* A's range above its bands' (max 3 000: 200 W of headroom in no band) goes with its
     * lowest band (band 0: 600). 3 100 W as above: A 2 100, B 1 000 (band 0 gets nothing);
     * 4 600 W: 3 000 over, 2 000 to bands 2 and 1, 1 000 of band 0's 1 400 (f = 5/7) */
    ch[0].max_w = 3000;
    assert_int_equal(pfi_ctl_split_bands(3100, ch, 2, sh, &ok), PFI_OK);
    assert_true(ok && NEAR(sh[0], 2100) && NEAR(sh[1], 1000));
    assert_int_equal(pfi_ctl_split_bands(4600, ch, 2, sh, &ok), PFI_OK);
    assert_true(ok && NEAR(sh[0], 2400 + 600 * 5.0 / 7) && NEAR(sh[1], 1200 + 800 * 5.0 / 7));
    ch[0].max_w = 2800;

    /* an older child (no bands: one band, 0, over [500, 1 500]) and a silent one holding
     * 700 W. 3 800 W: 3 100 to share over the minima 2 100: 1 000 W; band 2 (1 000) in full:
     * A 1 800, B 800, the older child its minimum 500 */
    pfi_ctl_split_child c3[] = {ch[0],
                                ch[1],
                                {.min_w = 500, .max_w = 1500, .fixed_w = NAN},
                                {.min_w = 0, .max_w = 0, .fixed_w = 700}};
    double s4[4];
    assert_int_equal(pfi_ctl_split_bands(3800, c3, 4, s4, &ok), PFI_OK);
    assert_true(ok && NEAR(s4[0], 1800) && NEAR(s4[1], 800) && NEAR(s4[2], 500) && s4[3] == 700);
    /* 5 000 W: 2 200 over; bands 2 and 1 (2 000), then band 0's 2 200 (A 400, B 800, the
     * older child 1 000) at f = 200 / 2 200 */
    assert_int_equal(pfi_ctl_split_bands(5000, c3, 4, s4, &ok), PFI_OK);
    double f = 200.0 / 2200;
    assert_true(ok && NEAR(s4[0], 2400 + 400 * f) && NEAR(s4[1], 1200 + 800 * f) &&
                NEAR(s4[2], 500 + 1000 * f) && s4[3] == 700);

    /* no bands anywhere: pfi_ctl_split's shares (its test's children) */
    double m3[] = {1000, 500, 0}, x3[] = {3000, 4500, 0}, f3[] = {NAN, NAN, 2000}, r3[3];
    pfi_ctl_split_child u[] = {{.min_w = 1000, .max_w = 3000, .fixed_w = NAN},
                               {.min_w = 500, .max_w = 4500, .fixed_w = NAN},
                               {.min_w = 0, .max_w = 0, .fixed_w = 2000}};
    for (double b = 2000; b <= 12000; b += 500) {
        bool ok2;
        assert_int_equal(pfi_ctl_split(b, m3, x3, f3, 3, r3, &ok), PFI_OK);
        assert_int_equal(pfi_ctl_split_bands(b, u, 3, s4, &ok2), PFI_OK);
        assert_true(ok == ok2 && NEAR(s4[0], r3[0]) && NEAR(s4[1], r3[1]) && s4[2] == r3[2]);
    }

    /* bad input */
    pfi_ctl_band_range down[] = {{.band = 1, .min_w = 0, .max_w = 10},
                                 {.band = 1, .min_w = 0, .max_w = 10}};
    pfi_ctl_split_child bad = {
        .min_w = 0, .max_w = 20, .fixed_w = NAN, .bands = down, .n_bands = 2};
    assert_int_equal(pfi_ctl_split_bands(10, &bad, 1, sh, &ok), PFI_ERR_INVALID_ARGUMENT);
    down[1].band = NAN;
    assert_int_equal(pfi_ctl_split_bands(10, &bad, 1, sh, &ok), PFI_ERR_INVALID_ARGUMENT);
    down[1].band = INFINITY;
    assert_int_equal(pfi_ctl_split_bands(10, &bad, 1, sh, &ok), PFI_ERR_INVALID_ARGUMENT);
    down[1].band = 2;
    assert_int_equal(pfi_ctl_split_bands(10, &bad, 1, sh, &ok), PFI_OK);
    down[1] = (pfi_ctl_band_range){.band = 2, .min_w = 20, .max_w = 10};
    assert_int_equal(pfi_ctl_split_bands(10, &bad, 1, sh, &ok), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_ctl_split_bands(NAN, ch, 2, sh, &ok), PFI_ERR_INVALID_ARGUMENT);
}

/* A child's status with and without "bands" (an older child's), and malformed ones. */
static void test_child_status_bands(void **state)
{
    (void)state;
    pfi_ctl_child_status st;
    pfi_diag d;
    const char *with = "{\"t_s\": 3, \"event\": true, \"budget_w\": 2000, \"measured_w\": 1900, "
                       "\"reserved_w\": 0, \"min_w\": 1000, \"max_w\": 2800, \"periods\": 7, "
                       "\"bands\": [{\"band\": 0, \"min_w\": 200, \"max_w\": 600}, "
                       "{\"band\": 2.5, \"min_w\": 400, \"max_w\": 1200, \"future\": 1}]}";
    assert_int_equal(pfi_ctl_child_status_parse(with, strlen(with), &st, &d), PFI_OK);
    assert_true(st.has_bands && st.n_bands == 2 && st.bands[0].band == 0 &&
                st.bands[0].min_w == 200 && st.bands[0].max_w == 600 && st.bands[1].band == 2.5 &&
                st.bands[1].min_w == 400 && st.bands[1].max_w == 1200 && st.min_w == 1000 &&
                st.max_w == 2800);
    const char *old = "{\"t_s\": 3, \"min_w\": 1000, \"max_w\": 2800}";
    assert_int_equal(pfi_ctl_child_status_parse(old, strlen(old), &st, &d), PFI_OK);
    assert_true(!st.has_bands && st.n_bands == 0);
    const char *empty = "{\"min_w\": 0, \"max_w\": 0, \"bands\": []}";
    assert_int_equal(pfi_ctl_child_status_parse(empty, strlen(empty), &st, &d), PFI_OK);
    assert_true(st.has_bands && st.n_bands == 0);
    const struct {
        const char *text, *says;
    } bad[] = {
        {"{\"min_w\": 0, \"max_w\": 9, \"bands\": 3}", "bands: expected an array"},
        {"{\"min_w\": 0, \"max_w\": 9, \"bands\": [{\"band\": 0, \"min_w\": 5, \"max_w\": 4}]}",
         "bands[0]: expected"},
        {"{\"min_w\": 0, \"max_w\": 9, \"bands\": [{\"min_w\": 1, \"max_w\": 4}]}",
         "bands[0]: expected"},
        {"{\"min_w\": 0, \"max_w\": 9, \"bands\": [{\"band\": 1, \"min_w\": 1, \"max_w\": 4}, "
         "{\"band\": 1, \"min_w\": 1, \"max_w\": 4}]}",
         "bands[1]: band 1 not above the one before (1)"},
        {"{\"min_w\": 0, \"max_w\": 9, \"bands\": [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}",
         "bands: 17 bands, at most 16"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pfi_diag_clear(&d);
        assert_int_equal(pfi_ctl_child_status_parse(bad[i].text, strlen(bad[i].text), &st, &d),
                         PFI_ERR_VALUE);
        if (strstr(d.message, bad[i].says) == NULL)
            fail_msg("case %zu: '%s' lacks '%s'", i, d.message, bad[i].says);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_swing),
        cmocka_unit_test(test_ramp_lead),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_split_bands),
        cmocka_unit_test(test_child_status_bands),
        cmocka_unit_test(test_bands_ramp),
        cmocka_unit_test(test_tree_property),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
