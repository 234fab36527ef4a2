/*
 * alloc_diff — print every number of pfi_allocate and pfi_allocate_tree (oracle, and each
 * other strategy on the tree) on random instances, in hexadecimal floating point, so that two
 * builds of the library can be compared bit for bit (bench/alloc_diff.sh links this file with
 * each and compares the outputs).
 *
 *   alloc_diff SEED COUNT
 *
 * COUNT instances from SEED: 1 to 3 000 jobs (mostly small, some up to 3 000), 2 to 7 points
 * each, random curves (concave, or not: the envelope's work), ties on purpose (jobs repeated
 * and curves of small integers, so that slopes are equal across jobs), GPUs 1 to 8; a tree
 * of depth 1 to 4 (limits from below the least to above the most, some infinite, reserve,
 * measured or mixed), some jobs under the site alone, bands in a third of the cases; the
 * flat oracle on the same jobs with a random reduction or budget, a cap step now and then.
 * With ALLOC_DIFF_WEIGHTS set in the environment, jobs get weights too (other instances).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/allocate.h"
#include "pfi/rng.h"
#include "pfi/topology.h"

static void put(const char *what, double v)
{
    printf(" %s=%a", what, v);
}

static void print_result(const pfi_alloc_result *r, pfi_error e)
{
    printf(" e=%d", (int)e);
    if (e != PFI_OK) {
        printf("\n");
        return;
    }
    for (size_t j = 0; j < r->n; j++) {
        printf("\n  %zu", j);
        put("c", r->cap_w[j]);
        put("p", r->power_w[j]);
        put("t", r->tput_tok_s[j]);
        put("md", r->marginal_down[j]);
        put("mu", r->marginal_up[j]);
        put("s", r->shed_w[j]);
    }
    printf("\n ");
    put("B", r->budget_w);
    put("rp", r->ref_power_w);
    put("rt", r->ref_tput_tok_s);
    put("mp", r->min_power_w);
    put("tp", r->total_power_w);
    put("tt", r->total_tput_tok_s);
    put("obj", r->objective);
    put("ub", r->upper_bound);
    put("lam", r->lambda);
    put("sf", r->shortfall_w);
    printf(" feas=%d unmet=%zu method=%s\n", r->feasible, r->floors_unmet,
           r->method ? r->method : "-");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: alloc_diff SEED COUNT\n");
        return 2;
    }
    pfi_rng rng;
    pfi_rng_seed(&rng, strtoull(argv[1], NULL, 10), 11);
    long count = strtol(argv[2], NULL, 10);
    for (long c = 0; c < count; c++) {
        uint64_t u = pfi_rng_next(&rng) % 10;
        size_t n = u < 6   ? 1 + pfi_rng_next(&rng) % 40
                   : u < 9 ? 1 + pfi_rng_next(&rng) % 400
                           : 1 + pfi_rng_next(&rng) % 3000;
        bool ints = pfi_rng_next(&rng) % 3 == 0; /* small integers: equal slopes across jobs */
        size_t *off = malloc((n + 1) * sizeof *off);
        double *cap = malloc(n * 7 * sizeof *cap), *pw = malloc(n * 7 * sizeof *pw),
               *tp = malloc(n * 7 * sizeof *tp), *g = malloc(n * sizeof *g),
               *band = malloc(n * sizeof *band);
        size_t *node = malloc(n * sizeof *node);
        off[0] = 0;
        for (size_t j = 0; j < n; j++) {
            size_t k = 2 + pfi_rng_next(&rng) % 6, o = off[j];
            off[j + 1] = o + k;
            g[j] = (double)(1 + pfi_rng_next(&rng) % 8);
            if (j > 0 && pfi_rng_next(&rng) % 5 == 0 && off[j] - off[j - 1] == k) {
                size_t p0 = off[j - 1]; /* a copy of the job before: ties */
                g[j] = g[j - 1];
                for (size_t i = 0; i < k; i++) {
                    cap[o + i] = cap[p0 + i];
                    pw[o + i] = pw[p0 + i];
                    tp[o + i] = tp[p0 + i];
                }
                continue;
            }
            double c0 = 100 + 50 * (double)(pfi_rng_next(&rng) % 4), p = 0, t = 0;
            double dp =
                ints ? (double)(1 + pfi_rng_next(&rng) % 3) * 10 : 40 + 60 * pfi_rng_uniform(&rng);
            double dt = ints ? (double)(1 + pfi_rng_next(&rng) % 4) * 10
                             : 500 + 1500 * pfi_rng_uniform(&rng);
            bool concave = pfi_rng_next(&rng) % 4 != 0;
            for (size_t i = 0; i < k; i++) {
                cap[o + i] = c0 + 100 * (double)i;
                p += i == 0 ? (ints ? 100 : 100 + 500 * pfi_rng_uniform(&rng)) : dp;
                t += i == 0 ? (ints ? 50 : 1000 * pfi_rng_uniform(&rng)) : dt;
                pw[o + i] = g[j] * p;
                tp[o + i] = t;
                if (!ints) {
                    dp *= 1 + 0.3 * pfi_rng_uniform(&rng);
                    dt *= concave ? 0.3 + 0.7 * pfi_rng_uniform(&rng) : 0.5 + pfi_rng_uniform(&rng);
                } else if (concave && dt > 10) {
                    dt -= 10;
                }
            }
        }
        /* the tree */
        size_t depth = 1 + pfi_rng_next(&rng) % 4, m = 0, cap_m = 1, width = 2;
        for (size_t l = 0; l < depth; l++) {
            cap_m += width;
            width *= 4;
        }
        size_t *parent = malloc(cap_m * sizeof *parent);
        double *limit = malloc(cap_m * sizeof *limit);
        pfi_limit_kind *kind = malloc(cap_m * sizeof *kind);
        size_t tops = 1 + pfi_rng_next(&rng) % 2, lo_l = 0, hi_l;
        for (size_t i = 0; i < tops; i++)
            parent[m++] = PFI_TOPO_NONE;
        hi_l = m;
        for (size_t l = 1; l < depth; l++) {
            size_t next = m;
            for (size_t a = lo_l; a < hi_l; a++)
                for (size_t k = 1 + pfi_rng_next(&rng) % 4; k > 0; k--)
                    parent[m++] = a;
            lo_l = next;
            hi_l = m;
        }
        int kinds = (int)(pfi_rng_next(&rng) % 3);
        pfi_limit_kind bk = kinds == 0 ? PFI_LIMIT_RESERVE : PFI_LIMIT_MEASURED;
        bool bands = pfi_rng_next(&rng) % 3 == 0;
        for (size_t j = 0; j < n; j++) {
            uint64_t v = pfi_rng_next(&rng) % 10;
            node[j] = v == 0   ? PFI_TOPO_NONE
                      : v == 1 ? pfi_rng_next(&rng) % m
                               : lo_l + pfi_rng_next(&rng) % (hi_l - lo_l);
            band[j] = bands ? (double)(pfi_rng_next(&rng) % 3) : 0;
        }
        for (size_t a = 0; a < m; a++) {
            kind[a] = kinds == 0 ? PFI_LIMIT_RESERVE
                      : kinds == 1
                          ? PFI_LIMIT_MEASURED
                          : (pfi_rng_next(&rng) % 2 ? PFI_LIMIT_RESERVE : PFI_LIMIT_MEASURED);
            double lo = 0, hi = 0;
            for (size_t j = 0; j < n; j++) {
                bool in = false;
                for (size_t b = node[j]; b != PFI_TOPO_NONE; b = parent[b])
                    in |= b == a;
                if (!in)
                    continue;
                bool res = kind[a] == PFI_LIMIT_RESERVE;
                lo += res ? g[j] * cap[off[j]] : pw[off[j]];
                hi += res ? g[j] * cap[off[j + 1] - 1] : pw[off[j + 1] - 1];
            }
            double w = pfi_rng_uniform(&rng);
            limit[a] = w < 0.1 || hi == 0 ? INFINITY : lo + (-0.05 + 1.2 * w) * (hi - lo) + 1;
            if (w > 0.98)
                limit[a] = lo > 1 ? lo - 1 : 0; /* below the least: infeasible */
        }
        pfi_alloc_jobs J = {
            .n = n, .offset = off, .cap_w = cap, .power_w = pw, .tput_tok_s = tp, .gpus = g};
        /* ALLOC_DIFF_WEIGHTS set: a weight per job (none for a third, else U(0.5, 2.5)), drawn
           here so that the instances are otherwise those of the same seed without it */
        double *wt = NULL;
        if (getenv("ALLOC_DIFF_WEIGHTS") != NULL && (wt = malloc(n * sizeof *wt)) != NULL) {
            for (size_t j = 0; j < n; j++)
                wt[j] = pfi_rng_next(&rng) % 3 == 0 ? NAN : 0.5 + 2 * pfi_rng_uniform(&rng);
            J.weight = wt;
        }
        pfi_alloc_tree t = {.n_nodes = m,
                            .parent = parent,
                            .limit_w = limit,
                            .kind = kind,
                            .job_node = node,
                            .band = bands ? band : NULL,
                            .budget_kind = bk};
        pfi_alloc_options o;
        pfi_alloc_options_init(&o);
        o.reduction = 0.05 + 0.6 * pfi_rng_uniform(&rng);
        if (pfi_rng_next(&rng) % 8 == 0)
            o.cap_step_w = 25;
        pfi_alloc_result r;
        pfi_alloc_tree_result tr;
        pfi_diag d;
        if (pfi_alloc_result_init(&r, n) != PFI_OK || pfi_alloc_tree_result_init(&tr, m) != PFI_OK)
            return 1;
        static const pfi_strategy st[] = {PFI_STRATEGY_ORACLE, PFI_STRATEGY_EQUAL,
                                          PFI_STRATEGY_FAIR_HEADROOM};
        for (size_t s = 0; s < sizeof st / sizeof st[0]; s++) {
            o.strategy = st[s];
            pfi_diag_clear(&d);
            pfi_error e = pfi_allocate_tree(&J, &o, &t, &r, &tr, &d);
            printf("case %ld n=%zu m=%zu strategy %d tree", c, n, m, (int)st[s]);
            print_result(&r, e);
            if (e == PFI_OK) {
                for (size_t a = 0; a < m; a++)
                    printf("  L%zu %a %a %d\n", a, tr.reserve_w[a], tr.drawn_w[a], tr.binding[a]);
                printf("  site %a %a %d %zu msg=%s\n", tr.site_reserve_w, tr.site_drawn_w,
                       tr.budget_binding, tr.n_binding, d.message);
            }
        }
        o.strategy = PFI_STRATEGY_ORACLE;
        pfi_diag_clear(&d);
        printf("case %ld flat", c);
        print_result(&r, pfi_allocate(&J, &o, &r, &d));
        pfi_alloc_result_clear(&r);
        pfi_alloc_tree_result_clear(&tr);
        free(wt);
        free(off), free(cap), free(pw), free(tp), free(g), free(band), free(node);
        free(parent), free(limit), free(kind);
    }
    return 0;
}
