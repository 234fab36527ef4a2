/*
 * bench/control_bench — the controller against many agents on loopback (bench/control.sh
 * starts them): time from a budget change to every cap confirmed, and the controller's CPU
 * per period (the step's own process CPU time: HTTP, parsing, curves, allocation, audit).
 *
 *   control_bench AGENTS_FILE [PERIODS [N [AUDIT_DB [LABEL]]]]
 *
 * N: the first N agents of the file (0 or absent: all). AUDIT_DB: the audit log the
 * controller writes, as `pfi control --db` does ("-" or absent: none). Prints one row of the
 * table bench/control.sh heads: label, agents, GPUs, the worst and median time from a budget
 * change to all caps confirmed over the changes (a change every third period, the
 * reduction cycling 30, 10, 40, 20 %), the controller's CPU per period (median, max), its
 * peak resident memory, and the caps left unconfirmed. Exit 1 when a cap stayed unconfirmed
 * or the release failed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
        fprintf(stderr, "usage: control_bench AGENTS_FILE [PERIODS [N [AUDIT_DB [LABEL]]]]\n");
        return 2;
    }
    int periods = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 10;
    if (periods < 3 || periods > 1000)
        periods = 10;
    size_t want = argc > 3 ? (size_t)strtoul(argv[3], NULL, 10) : 0;
    const char *audit = argc > 4 && strcmp(argv[4], "-") != 0 ? argv[4] : NULL;
    const char *label = argc > 5 ? argv[5] : "flat";
    FILE *f = fopen(argv[1], "r");
    if (f == NULL)
        return 1;
    static char text[1 << 22];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    if (want > 0) { /* the first N lines */
        size_t lines = 0;
        for (size_t i = 0; i < len; i++)
            if (text[i] == '\n' && ++lines == want) {
                len = i + 1;
                break;
            }
    }
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
    c.audit_path = audit;
    pfi_ctl *ctl;
    if (pfi_ctl_create(&c, &ctl, &d) != PFI_OK) {
        fprintf(stderr, "create: %s\n", d.message);
        return 1;
    }
    double *cpu = calloc((size_t)periods, sizeof *cpu), change[8];
    size_t gpus = 0, nchange = 0, unconf = 0;
    pfi_ctl_report r;
    /* warm-up period (learn references), then alternate budgets: each change is timed */
    pfi_ctl_step(ctl, 0, false, NAN, NAN, &r, &d);
    double red[] = {0.3, 0.1, 0.4, 0.2};
    for (int k = 0; k < periods; k++) {
        double w0 = clk(CLOCK_MONOTONIC), c0 = clk(CLOCK_PROCESS_CPUTIME_ID);
        bool changed = k % 3 == 0 && nchange < 8;
        double reduction = red[(k / 3) % 4];
        if (pfi_ctl_step(ctl, (double)k + 1, true, NAN, reduction, &r, &d) != PFI_OK)
            fprintf(stderr, "step %d: %s\n", k, d.message);
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
    qsort(change, nchange, sizeof *change, cmp);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%-10s %7zu %6zu %12.1f %12.1f %10.1f %10.1f %9.1f %8zu\n", label, na, gpus,
           change[nchange - 1] * 1e3, change[nchange / 2] * 1e3, cpu[periods / 2] * 1e3,
           cpu[periods - 1] * 1e3, (double)ru.ru_maxrss / 1024, unconf);
    if (!ok)
        fprintf(stderr, "control_bench: the release did not confirm every original cap\n");
    pfi_ctl_destroy(ctl);
    free(cpu);
    pfi_free(agents);
    return unconf == 0 && ok ? 0 : 1;
}
