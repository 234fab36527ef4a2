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
 * one thread.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pfi/allocate.h"
#include "pfi/rng.h"

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
    FILE *f = fopen(argv[2], "wb");
    double hdr[3] = {(double)n, K, r.budget_w};
    if (f == NULL || fwrite(hdr, sizeof(double), 3, f) != 3 ||
        fwrite(caps, sizeof(double), K, f) != K || fwrite(pw, sizeof(double), n * K, f) != n * K ||
        fwrite(tp, sizeof(double), n * K, f) != n * K || fclose(f) != 0) {
        fprintf(stderr, "alloc_bench: cannot write %s\n", argv[2]);
        return 1;
    }
    printf("n=%zu cold_s=%.6f median_s=%.6f min_s=%.6f cpu_median_s=%.6f cpu_min_s=%.6f "
           "objective=%.17g power=%.17g budget=%.17g\n",
           n, cold, t[repeat / 2], t[0], ct[repeat / 2], ct[0], r.objective, r.total_power_w,
           r.budget_w);
    free(t);
    pfi_alloc_workspace_destroy(ws);
    pfi_alloc_result_clear(&r);
    free(off);
    free(cap);
    free(pw);
    free(tp);
    return 0;
}
