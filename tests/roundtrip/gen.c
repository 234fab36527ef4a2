/*
 * tests/roundtrip/gen — write a synthetic sweep (DESIGN §7 model, pfi/model.h) in every
 * telemetry format pfi reads, with noise, for tests/roundtrip/run.sh. Synthetic data.
 *
 * Usage: gen DIR. For each compute share α in {0.93, 0.80, 0.55} (the class medians of
 * DESIGN §7) and each format F in {csv, dmon, dcgmi, prom}: a sweep group "a<α>-F" of a
 * 2-GPU job at caps 700..200 W in 100 W steps, 120 samples 5 s apart per GPU, per-GPU power
 * = model power × (1 + 0.5 % normal noise) with two dips (checkpoint, warm-up) that the
 * top-10 % steady state must ignore, and a Megatron-LM log of 60 intervals whose elapsed
 * time per iteration has 0.5 % noise. Writes DIR/runs.txt, one line per run:
 *   GROUP CAP FORMAT LOG TELEMETRY...
 * and DIR/expected.txt, one line per group: GROUP MODEL_PFI (pfi_model_pfi, x_min 0.02).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "pfi/model.h"
#include "pfi/rng.h"

#define NS 120
#define DT 5.0
#define GPUS 2

static const double caps[] = {700, 600, 500, 400, 300, 200};
#define NCAPS (sizeof caps / sizeof caps[0])

static double noisy(pfi_rng *r, double v, double rel)
{
    return v * (1.0 + rel * pfi_rng_normal(r));
}

/* Per-GPU power of sample i: steady with noise, a warm-up ramp and a checkpoint dip. */
static double power_at(pfi_rng *r, double p, size_t i)
{
    double v = noisy(r, p, 0.005);
    if (i < 2 || i == 30)
        v *= 0.5;
    return v;
}

static FILE *open_w(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    return f;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    static const double alphas[] = {0.93, 0.80, 0.55};
    static const char *const fmts[] = {"csv", "dmon", "dcgmi", "prom"};
    char path[1024];
    snprintf(path, sizeof path, "%s/runs.txt", dir);
    FILE *runs = open_w(path);
    snprintf(path, sizeof path, "%s/expected.txt", dir);
    FILE *exp = open_w(path);
    pfi_rng rng;
    pfi_rng_seed(&rng, 20250514, 0);
    for (size_t a = 0; a < sizeof alphas / sizeof alphas[0]; a++) {
        pfi_model_job job;
        pfi_model_job_init(&job, alphas[a], 650.0);
        job.gpus = GPUS;
        job.tokens_per_step = 256; /* samples per step: the log's global batch size */
        double pfi;
        if (pfi_model_pfi(&job, caps, NCAPS, 0.02, &pfi) != PFI_OK)
            return 1;
        for (size_t fi = 0; fi < 4; fi++) {
            const char *fmt = fmts[fi];
            char group[64];
            snprintf(group, sizeof group, "a%.2f-%s", alphas[a], fmt);
            fprintf(exp, "%s %.17g\n", group, pfi);
            for (size_t c = 0; c < NCAPS; c++) {
                pfi_model_point pt;
                if (pfi_model_eval(&job, caps[c], &pt) != PFI_OK)
                    return 1;
                char base[512];
                snprintf(base, sizeof base, "%s/%s-%.0f", dir, group, caps[c]);
                /* Training log: 12 intervals of 10 iterations. */
                char logp[600];
                snprintf(logp, sizeof logp, "%s.log", base);
                FILE *lf = open_w(logp);
                for (int k = 1; k <= 60; k++)
                    fprintf(lf,
                            " [2025-05-14 10:%02d:00] iteration %8d/    1000 | consumed "
                            "samples: %10d | elapsed time per iteration (ms): %.1f | "
                            "global batch size: %5.0f | lm loss: 2.5E+00 | number of "
                            "skipped iterations:   0 | number of nan iterations:   0 |\n",
                            k, k * 10, k * 10 * 256, noisy(&rng, pt.step_time_s * 1000, 0.005),
                            job.tokens_per_step);
                fclose(lf);
                fprintf(runs, "%s %.0f %s %s", group, caps[c],
                        fi == 0   ? "nvidia-smi-csv"
                        : fi == 1 ? "dmon"
                        : fi == 2 ? "dcgmi-dmon"
                                  : "prometheus",
                        logp);
                if (fi == 3) {
                    double energy[GPUS] = {1e9, 2e9}; /* mJ counters */
                    for (size_t i = 0; i < NS; i++) {
                        snprintf(path, sizeof path, "%s-%03zu.prom", base, i);
                        FILE *f = open_w(path);
                        fprintf(f, "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
                                   "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n");
                        double pw[GPUS];
                        for (int g = 0; g < GPUS; g++) {
                            pw[g] = power_at(&rng, pt.power_w, i);
                            fprintf(f,
                                    "DCGM_FI_DEV_POWER_USAGE{gpu=\"%d\",UUID=\"GPU-rt-%d\","
                                    "Hostname=\"rt\"} %.6f\n",
                                    g, g, pw[g]);
                        }
                        fprintf(f, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n");
                        for (int g = 0; g < GPUS; g++) {
                            energy[g] += pw[g] * DT * 1000.0;
                            fprintf(f,
                                    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"%d\","
                                    "UUID=\"GPU-rt-%d\",Hostname=\"rt\"} %.0f\n",
                                    g, g, energy[g]);
                        }
                        fclose(f);
                        fprintf(runs, " %s", path);
                    }
                    fputc('\n', runs);
                    continue;
                }
                snprintf(path, sizeof path, "%s.txt", base);
                FILE *f = open_w(path);
                if (fi == 0)
                    fprintf(f, "timestamp, index, power.draw [W], utilization.gpu [%%]\n");
                else if (fi == 1)
                    fprintf(f, "# gpu    pwr     sm\n# Idx      W      %%\n");
                else
                    fprintf(f, "#Entity   POWER        SMACT        DRAMA\nID\n");
                for (size_t i = 0; i < NS; i++) {
                    double t = 36000.0 + (double)i * DT;
                    for (int g = 0; g < GPUS; g++) {
                        double p = power_at(&rng, pt.power_w, i);
                        if (fi == 0)
                            fprintf(f, "2025/05/14 %02d:%02d:%02d.%03d, %d, %.2f W, %d %%\n",
                                    (int)(t / 3600), (int)fmod(t / 60, 60), (int)fmod(t, 60), g * 7,
                                    g, p, 97);
                        else if (fi == 1)
                            fprintf(f, "    %d %6.0f    %3d\n", g, p, 97);
                        else
                            fprintf(f, "GPU %d     %-12.3f %-12.3f %.3f\n", g, p, pt.compute_share,
                                    pt.dram_active);
                    }
                }
                fclose(f);
                fprintf(runs, " %s\n", path);
            }
        }
    }
    fclose(runs);
    fclose(exp);
    return 0;
}
