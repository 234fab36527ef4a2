/*
 * alloc_bench — time the oracle of pfi_allocate on generated jobs and write the instance for
 * the references of bench/allocate (SciPy linprog / NumPy greedy, bench/alloc_reference.py).
 *
 *   alloc_bench N FILE [REPEAT]
 *
 * N jobs of 8 GPUs, each with a 6-point concave curve at the caps 200..700 W by 100 W: drawn
 * power g·c·ρ (ρ ~ U(0.85, 1), one per job), throughput T_ref·(P/P_ref)^e (e ~ U(0.2, 0.9),
 * T_ref ~ U(20k, 100k) tokens/s) — power strictly rising, slopes strictly falling. Budget:
 * a 30 % reduction. FILE (binary, native doubles): n, k, budget, then caps[k], power[n·k],
 * tput[n·k]. Prints one line: n, the first call's time (fresh workspace: its allocations
 * included), median and minimum of REPEAT (11) calls with the workspace reused (wall clock,
 * and the thread's CPU time, which leaves out waiting for a core on a shared machine), and
 * the objective (tokens/s) with 17 digits. Times: monotonic clock (and
 * CLOCK_THREAD_CPUTIME_ID) around pfi_allocate_ws only (generation and the file excluded);
 * one thread. Then the same jobs on a 4-level tree (pfi_allocate_tree: 1 feed, 4 PDUs, 16
 * racks each, 16 nodes each rack, jobs dealt round the 1 024 nodes; every level measured, its
 * limit 95 % of its jobs' top draw, the feed's 90 %): tree_cpu_median_s (REPEAT calls of
 * pfi_allocate_tree_ws, its workspace reused as the flat calls' is: the goal is within 2x the
 * flat call), tree_fresh_cpu_median_s (REPEAT calls of pfi_allocate_tree, a workspace of its
 * own each call: allocation and page faults included), tree_objective, tree_binding (levels
 * that bind); then tree_tight_cpu_median_s with every other node's limit at 60 % of its
 * jobs' top draw (inner levels bind: the flat optimum does not hold, the greedy runs) and
 * tree_tight_binding.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pfi/allocate.h"
#include "pfi/rng.h"
#include "pfi/topology.h"

#define K 6

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* CPU time of this thread: what the call cost on a shared machine, waiting excluded. */
static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: alloc_bench N FILE [REPEAT]\n");
        return 2;
    }
    char *end;
    unsigned long long nn = strtoull(argv[1], &end, 10);
    int repeat = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 11;
    if (*end != '\0' || nn == 0 || nn > 100000000ull || repeat < 1 || repeat > 1000) {
        fprintf(stderr, "alloc_bench: bad N or REPEAT\n");
        return 2;
    }
    size_t n = (size_t)nn;
    static const double caps[K] = {200, 300, 400, 500, 600, 700};
    size_t *off = malloc((n + 1) * sizeof *off);
    double *cap = malloc(n * K * sizeof *cap), *pw = malloc(n * K * sizeof *pw),
           *tp = malloc(n * K * sizeof *tp);
    if (!off || !cap || !pw || !tp) {
        fprintf(stderr, "alloc_bench: out of memory\n");
        return 1;
    }
    pfi_rng rng;
    pfi_rng_seed(&rng, 42, 7);
    for (size_t j = 0; j < n; j++) {
        off[j] = j * K;
        double rho = 0.85 + 0.15 * pfi_rng_uniform(&rng);
        double e = 0.2 + 0.7 * pfi_rng_uniform(&rng);
        double tref = 20000 + 80000 * pfi_rng_uniform(&rng);
        double pref = 8 * caps[K - 1] * rho;
        for (size_t i = 0; i < K; i++) {
            cap[j * K + i] = caps[i];
            pw[j * K + i] = 8 * caps[i] * rho;
            tp[j * K + i] = tref * pow(pw[j * K + i] / pref, e);
        }
    }
    off[n] = n * K;
    pfi_alloc_jobs J;
    memset(&J, 0, sizeof J);
    J.n = n;
    J.offset = off;
    J.cap_w = cap;
    J.power_w = pw;
    J.tput_tok_s = tp;
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    o.reduction = 0.3;
    pfi_alloc_result r;
    pfi_alloc_workspace *ws = NULL;
    pfi_diag d;
    pfi_diag_clear(&d);
    if (pfi_alloc_result_init(&r, n) != PFI_OK || pfi_alloc_workspace_create(&ws) != PFI_OK) {
        fprintf(stderr, "alloc_bench: out of memory\n");
        return 1;
    }
    double t0 = now();
    pfi_error err = pfi_allocate_ws(&J, &o, ws, &r, &d);
    double cold = now() - t0;
    if (err != PFI_OK) {
        fprintf(stderr, "alloc_bench: %s: %s\n", pfi_strerror(err), d.message);
        return 1;
    }
    double *t = malloc(2 * (size_t)repeat * sizeof *t);
    if (t == NULL)
        return 1;
    double *ct = t + repeat;
    for (int i = 0; i < repeat; i++) {
        double c0 = cpu_now();
        t0 = now();
        pfi_allocate_ws(&J, &o, ws, &r, NULL);
        t[i] = now() - t0;
        ct[i] = cpu_now() - c0;
    }
    qsort(t, (size_t)repeat, sizeof *t, cmp);
    qsort(ct, (size_t)repeat, sizeof *ct, cmp);
    /* the tree: 1 + 4 + 64 + 1024 levels */
    enum { NL = 1 + 4 + 64 + 1024 };
    size_t parent[NL], *node = malloc(n * sizeof *node);
    double limit[NL], top[NL];
    pfi_limit_kind kind[NL];
    if (node == NULL)
        return 1;
    parent[0] = PFI_TOPO_NONE;
    for (size_t a = 1; a < NL; a++)
        parent[a] = a < 5 ? 0 : a < 69 ? 1 + (a - 5) / 16 : 5 + (a - 69) / 16;
    for (size_t a = 0; a < NL; a++) {
        top[a] = 0;
        kind[a] = PFI_LIMIT_MEASURED;
    }
    for (size_t j = 0; j < n; j++) {
        node[j] = 69 + j % 1024;
        for (size_t a = node[j]; a != PFI_TOPO_NONE; a = parent[a])
            top[a] += pw[j * K + K - 1];
    }
    for (size_t a = 0; a < NL; a++)
        limit[a] = (a == 0 ? 0.9 : 0.95) * top[a] + 1;
    pfi_alloc_tree tree = {.n_nodes = NL,
                           .parent = parent,
                           .limit_w = limit,
                           .kind = kind,
                           .job_node = node,
                           .budget_kind = PFI_LIMIT_MEASURED};
    pfi_alloc_tree_result tr;
    if (pfi_alloc_tree_result_init(&tr, NL) != PFI_OK)
        return 1;
    double *tt = malloc((size_t)repeat * sizeof *tt);
    if (tt == NULL)
        return 1;
    double *tf = malloc((size_t)repeat * sizeof *tf);
    pfi_alloc_tree_workspace *tws = NULL;
    if (tf == NULL || pfi_alloc_tree_workspace_create(&tws) != PFI_OK)
        return 1;
    /* tree_fresh: pfi_allocate_tree (a workspace of its own each call); tree: the workspace
       reused (pfi_allocate_tree_ws), as the flat calls above reuse theirs */
    for (int i = 0; i < repeat; i++) {
        double c0 = cpu_now();
        err = pfi_allocate_tree(&J, &o, &tree, &r, &tr, &d);
        tf[i] = cpu_now() - c0;
        if (err == PFI_OK) {
            c0 = cpu_now();
            err = pfi_allocate_tree_ws(&J, &o, &tree, tws, &r, &tr, &d);
            tt[i] = cpu_now() - c0;
        }
        if (err != PFI_OK) {
            fprintf(stderr, "alloc_bench: tree: %s: %s\n", pfi_strerror(err), d.message);
            return 1;
        }
    }
    qsort(tt, (size_t)repeat, sizeof *tt, cmp);
    qsort(tf, (size_t)repeat, sizeof *tf, cmp);
    double tree_obj = r.objective;
    size_t tree_binding = tr.n_binding;
    /* tree_tight: every other node's limit 60 % of its jobs' top draw, so that inner levels
       bind (the flat optimum goes over them: the oracle's greedy) */
    for (size_t a = 69; a < NL; a += 2)
        limit[a] = 0.6 * top[a] + 1;
    double *tg = malloc((size_t)repeat * sizeof *tg);
    if (tg == NULL)
        return 1;
    for (int i = 0; i < repeat; i++) {
        double c0 = cpu_now();
        err = pfi_allocate_tree_ws(&J, &o, &tree, tws, &r, &tr, &d);
        tg[i] = cpu_now() - c0;
        if (err != PFI_OK) {
            fprintf(stderr, "alloc_bench: tree: %s: %s\n", pfi_strerror(err), d.message);
            return 1;
        }
    }
    qsort(tg, (size_t)repeat, sizeof *tg, cmp);
    size_t tight_binding = tr.n_binding;
    pfi_alloc_tree_workspace_destroy(tws);
    pfi_alloc_tree_result_clear(&tr);
    free(node);
    /* the flat result again, for the file's budget and the printed objective */
    pfi_allocate_ws(&J, &o, ws, &r, NULL);
    FILE *f = fopen(argv[2], "wb");
    double hdr[3] = {(double)n, K, r.budget_w};
    if (f == NULL || fwrite(hdr, sizeof(double), 3, f) != 3 ||
        fwrite(caps, sizeof(double), K, f) != K || fwrite(pw, sizeof(double), n * K, f) != n * K ||
        fwrite(tp, sizeof(double), n * K, f) != n * K || fclose(f) != 0) {
        fprintf(stderr, "alloc_bench: cannot write %s\n", argv[2]);
        return 1;
    }
    printf("n=%zu cold_s=%.6f median_s=%.6f min_s=%.6f cpu_median_s=%.6f cpu_min_s=%.6f "
           "objective=%.17g power=%.17g budget=%.17g tree_cpu_median_s=%.6f "
           "tree_fresh_cpu_median_s=%.6f tree_objective=%.17g tree_binding=%zu "
           "tree_tight_cpu_median_s=%.6f tree_tight_binding=%zu\n",
           n, cold, t[repeat / 2], t[0], ct[repeat / 2], ct[0], r.objective, r.total_power_w,
           r.budget_w, tt[repeat / 2], tf[repeat / 2], tree_obj, tree_binding, tg[repeat / 2],
           tight_binding);
    free(t);
    free(tg);
    free(tt);
    free(tf);
    pfi_alloc_workspace_destroy(ws);
    pfi_alloc_result_clear(&r);
    free(off);
    free(cap);
    free(pw);
    free(tp);
    return 0;
}
