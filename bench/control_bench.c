/*
 * bench/control_bench — the controller against many agents on loopback (bench/control.sh
 * starts them): time from a budget change to every cap confirmed, and the controller's CPU
 * per period (the step's own process CPU time: HTTP, parsing, curves, allocation, audit).
 *
 *   control_bench AGENTS_FILE [PERIODS [N [AUDIT_DB [LABEL [RACKS]]]]]
 *
 * N: the first N agents of the file (0 or absent: all). AUDIT_DB: the audit log the
 * controller writes, as `pfi control --db` does ("-" or absent: none). Prints one row of the
 * table bench/control.sh heads: label, agents, GPUs, the worst and median time from a budget
 * change to all caps confirmed over the changes (a change every third period, the
 * reduction cycling 30, 10, 40, 20 %), the controller's CPU per period (median, max), its
 * peak resident memory, and the caps left unconfirmed. Exit 1 when a cap stayed unconfirmed
 * or the release failed. BENCH_TRACE=1 (environment): each period's wall and CPU time and
 * its decreases and increases on stderr.
 *
 * RACKS > 1: the two-level stand-in. The N agents are dealt in RACKS consecutive slices, each
 * to a rack controller of its own (a child process running the same pfi_ctl_step over its
 * slice, as a rack controller of the hierarchy does), all stepping at once; the site level
 * is a proportional split — every rack sheds the same share of its uncapped power, the site
 * reduction — sent through a pipe in place of PUT /v1/budget (one HTTP round trip on
 * loopback not counted, about 0.1 ms). The change time is from the site's order to the last
 * rack's confirmed caps; CPU per period is the busiest rack controller's (each would run on
 * its own host), with the sum over racks beside it (in the RSS column: the largest rack's).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* What one controller did over the periods (a rack's, or the only one's). */
typedef struct result {
    double cpu[1000];    /* per period, s */
    double change[1000]; /* per period: the step's wall time, s */
    size_t gpus, unconfirmed;
    double rss_mib;
    bool released;
} result;

static const double red[] = {0.3, 0.1, 0.4, 0.2};

/* Periods paced at 1 s as `pfi control` paces them (BENCH_PACE=0: back to back). */
static bool pace = true;

/* Sleep until monotonic time t (s); at once when it has passed. */
static void sleep_until(double t)
{
    double now = clk(CLOCK_MONOTONIC);
    if (t <= now)
        return;
    struct timespec ts = {(time_t)(t - now), (long)((t - now - (double)(time_t)(t - now)) * 1e9)};
    nanosleep(&ts, NULL);
}

/* One controller over agents[0..na): a warm-up period, then the periods, a change every
 * third. sync (racks): read a byte from sync_in before each period, write one to sync_out
 * after it, so that the site steps every rack at once. */
static int run_controller(pfi_ctl_agent_spec *agents, size_t na, int periods, const char *audit,
                          int sync_in, int sync_out, result *res)
{
    pfi_diag d;
    pfi_ctl_config c;
    pfi_ctl_config_init(&c);
    c.agents = agents;
    c.n_agents = na;
    c.period_s = 1;
    c.http_timeout_s = 2;
    c.audit_path = audit;
    /* BENCH_HTTP=curl: every request through libcurl (the client before the built-in one) */
    const char *hc = getenv("BENCH_HTTP");
    const char *tr = getenv("BENCH_TRACE");
    bool trace = tr != NULL && strcmp(tr, "1") == 0;
    c.http_libcurl_only = hc != NULL && strcmp(hc, "curl") == 0;
    pfi_ctl *ctl;
    if (pfi_ctl_create(&c, &ctl, &d) != PFI_OK) {
        fprintf(stderr, "create: %s\n", d.message);
        return 1;
    }
    pfi_ctl_report r;
    memset(res, 0, sizeof *res);
    double t0 = clk(CLOCK_MONOTONIC);
    pfi_ctl_step(ctl, 0, false, NAN, NAN, &r, &d);
    for (int k = 0; k < periods; k++) {
        char b = 0;
        if (sync_in >= 0 && read(sync_in, &b, 1) != 1)
            return 1;
        /* paced as `pfi control` paces its periods: period k + 1 starts at t0 + k + 1 s (at
         * once when the last one ran over) */
        if (sync_in < 0 && pace)
            sleep_until(t0 + (double)(k + 1) * c.period_s);
        double w0 = clk(CLOCK_MONOTONIC), c0 = clk(CLOCK_PROCESS_CPUTIME_ID);
        if (pfi_ctl_step(ctl, (double)k + 1, true, NAN, red[(k / 3) % 4], &r, &d) != PFI_OK)
            fprintf(stderr, "step %d: %s\n", k, d.message);
        double w1 = clk(CLOCK_MONOTONIC), c1 = clk(CLOCK_PROCESS_CPUTIME_ID);
        if (sync_out >= 0 && write(sync_out, &b, 1) != 1)
            return 1;
        res->cpu[k] = c1 - c0;
        res->change[k] = w1 - w0;
        if (trace) /* BENCH_TRACE=1: each period on stderr */
            fprintf(stderr, "period %d: wall %.1f ms, CPU %.1f ms, decreases %zu, increases %zu\n",
                    k, 1e3 * (w1 - w0), 1e3 * (c1 - c0), r.decreases, r.increases);
        res->gpus = r.gpus;
        res->unconfirmed += r.unconfirmed;
    }
    bool ok;
    pfi_ctl_release(ctl, &ok, &d);
    res->released = ok;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    res->rss_mib = (double)ru.ru_maxrss / 1024;
    pfi_ctl_destroy(ctl);
    return 0;
}

/* The two-level stand-in (see the top): RACKS children, each a controller over its slice,
 * stepped together; the results gathered into *site (cpu: the busiest rack's, change: the
 * site's order to the last rack's answer). *cpu_sum: the median over periods of the racks'
 * summed CPU. */
static int run_racks(pfi_ctl_agent_spec *agents, size_t na, int periods, size_t racks, result *site,
                     double *cpu_sum)
{
    memset(site, 0, sizeof *site);
    site->released = true;
    int go[64][2], done[64][2], out[64][2];
    pid_t pid[64];
    for (size_t q = 0; q < racks; q++) {
        if (pipe(go[q]) != 0 || pipe(done[q]) != 0 || pipe(out[q]) != 0)
            return 1;
        size_t lo = q * na / racks, hi = (q + 1) * na / racks;
        pid[q] = fork();
        if (pid[q] < 0)
            return 1;
        if (pid[q] == 0) {
            static result res;
            int rc =
                run_controller(agents + lo, hi - lo, periods, NULL, go[q][0], done[q][1], &res);
            if (write(out[q][1], &res, sizeof res) != (ssize_t)sizeof res)
                rc = 1;
            _exit(rc);
        }
    }
    double sums[1000] = {0}, t0 = clk(CLOCK_MONOTONIC);
    for (int k = 0; k < periods; k++) {
        if (pace) /* the racks' warm-up periods ran before the first order */
            sleep_until(t0 + (double)(k + 1));
        double w0 = clk(CLOCK_MONOTONIC);
        char b = 1;
        for (size_t q = 0; q < racks; q++)
            if (write(go[q][1], &b, 1) != 1)
                return 1;
        for (size_t q = 0; q < racks; q++)
            if (read(done[q][0], &b, 1) != 1)
                return 1;
        site->change[k] = clk(CLOCK_MONOTONIC) - w0;
    }
    int status = 0;
    for (size_t q = 0; q < racks; q++) {
        static result res;
        size_t got = 0;
        while (got < sizeof res) {
            ssize_t n = read(out[q][0], (char *)&res + got, sizeof res - got);
            if (n <= 0)
                return 1;
            got += (size_t)n;
        }
        int st;
        waitpid(pid[q], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            status = 1;
        for (int k = 0; k < periods; k++) {
            site->cpu[k] = fmax(site->cpu[k], res.cpu[k]);
            sums[k] += res.cpu[k];
        }
        site->gpus += res.gpus;
        site->unconfirmed += res.unconfirmed;
        site->rss_mib = fmax(site->rss_mib, res.rss_mib);
        site->released = site->released && res.released;
    }
    qsort(sums, (size_t)periods, sizeof *sums, cmp);
    *cpu_sum = sums[periods / 2];
    return status;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: control_bench AGENTS_FILE [PERIODS [N [AUDIT_DB [LABEL [RACKS]]]]]\n");
        return 2;
    }
    const char *pe = getenv("BENCH_PACE");
    pace = pe == NULL || strcmp(pe, "0") != 0;
    int periods = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 10;
    if (periods < 3 || periods > 1000)
        periods = 10;
    size_t want = argc > 3 ? (size_t)strtoul(argv[3], NULL, 10) : 0;
    const char *audit = argc > 4 && strcmp(argv[4], "-") != 0 ? argv[4] : NULL;
    const char *label = argc > 5 ? argv[5] : "flat";
    size_t racks = argc > 6 ? (size_t)strtoul(argv[6], NULL, 10) : 1;
    if (racks < 1 || racks > 64)
        racks = 1;
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
    static result res;
    double cpu_sum = NAN;
    fflush(stdout);
    int rc = racks > 1 ? run_racks(agents, na, periods, racks, &res, &cpu_sum)
                       : run_controller(agents, na, periods, audit, -1, -1, &res);
    if (rc != 0) {
        fprintf(stderr, "control_bench: a controller failed\n");
        pfi_free(agents);
        return 1;
    }
    /* the changes: every third period */
    double change[1000];
    size_t nchange = 0;
    for (int k = 0; k < periods; k += 3)
        change[nchange++] = res.change[k];
    qsort(res.cpu, (size_t)periods, sizeof *res.cpu, cmp);
    qsort(change, nchange, sizeof *change, cmp);
    printf("%-14s %7zu %6zu %12.1f %12.1f %10.1f %10.1f %9.1f %8zu", label, na, res.gpus,
           change[nchange - 1] * 1e3, change[nchange / 2] * 1e3, res.cpu[periods / 2] * 1e3,
           res.cpu[periods - 1] * 1e3, res.rss_mib, res.unconfirmed);
    if (racks > 1)
        printf("   (%zu racks; CPU summed over racks: median %.1f ms)", racks, cpu_sum * 1e3);
    printf("\n");
    if (!res.released)
        fprintf(stderr, "control_bench: the release did not confirm every original cap\n");
    pfi_free(agents);
    return res.unconfirmed == 0 && res.released ? 0 : 1;
}
