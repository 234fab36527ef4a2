/*
 * bench/control_bench — the controller against many agents on loopback (bench/control.sh
 * starts them): time from a budget change to every cap confirmed, and the controller's CPU
 * per period (the step's own process CPU time: HTTP, parsing, curves, allocation, audit).
 *
 *   control_bench AGENTS_FILE [PERIODS]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pfi/control.h"
#include "pfi/control_files.h"

static double clk(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: control_bench AGENTS_FILE [PERIODS]\n");
        return 2;
    }
    int periods = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 10;
    if (periods < 3 || periods > 1000)
        periods = 10;
    FILE *f = fopen(argv[1], "r");
    if (f == NULL)
        return 1;
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text, f);
    fclose(f);
    pfi_ctl_agent_spec *agents;
    size_t na;
    pfi_diag d;
    if (pfi_ctl_agents_parse(text, len, &agents, &na, &d) != PFI_OK) {
        fprintf(stderr, "agents: %s\n", d.message);
        return 1;
    }
    pfi_ctl_config c;
    pfi_ctl_config_init(&c);
    c.agents = agents;
    c.n_agents = na;
    c.period_s = 1;
    c.http_timeout_s = 2;
    pfi_ctl *ctl;
    if (pfi_ctl_create(&c, &ctl, &d) != PFI_OK) {
        fprintf(stderr, "create: %s\n", d.message);
        return 1;
    }
    double *cpu = calloc((size_t)periods, sizeof *cpu), change[4];
    size_t gpus = 0, nchange = 0, unconf = 0;
    pfi_ctl_report r;
    /* warm-up period (learn references), then alternate budgets: each change is timed */
    pfi_ctl_step(ctl, 0, false, NAN, NAN, &r, &d);
    double red[] = {0.3, 0.1, 0.4, 0.2};
    for (int k = 0; k < periods; k++) {
        double w0 = clk(CLOCK_MONOTONIC), c0 = clk(CLOCK_PROCESS_CPUTIME_ID);
        bool changed = k % 3 == 0 && nchange < 4;
        double reduction = red[(k / 3) % 4];
        pfi_ctl_step(ctl, (double)k + 1, true, NAN, reduction, &r, &d);
        double w1 = clk(CLOCK_MONOTONIC), c1 = clk(CLOCK_PROCESS_CPUTIME_ID);
        cpu[k] = c1 - c0;
        gpus = r.gpus;
        unconf += r.unconfirmed;
        if (changed)
            change[nchange++] = w1 - w0;
    }
    bool ok;
    pfi_ctl_release(ctl, &ok, &d);
    qsort(cpu, (size_t)periods, sizeof *cpu, cmp);
    double worst = 0;
    for (size_t i = 0; i < nchange; i++)
        worst = fmax(worst, change[i]);
    printf("agents %zu, GPUs %zu, periods %d\n", na, gpus, periods);
    printf("budget change -> all caps confirmed: worst %.1f ms over %zu changes (goal < 500 ms)\n",
           worst * 1e3, nchange);
    printf("controller CPU per period: median %.1f ms, max %.1f ms\n", cpu[periods / 2] * 1e3,
           cpu[periods - 1] * 1e3);
    printf("unconfirmed caps: %zu; released: %s\n", unconf, ok ? "yes" : "no");
    pfi_ctl_destroy(ctl);
    free(cpu);
    pfi_free(agents);
    return worst < 0.5 && unconf == 0 ? 0 : 1;
}
