/*
 * pfi report --settlement: a power event settled from the controller's audit log
 * (pfi/grid.h): baselines, energy shed per interval, excess over the target, each job's
 * performance, tokens lost and tier compliance, the weighted performance.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "grid_cli.h"
#include "pfi/csv.h"
#include "pfi/memory.h"

bool settle_requested(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--settlement") == 0)
            return true;
    return false;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: pfi report --settlement [OPTIONS] AUDIT.db\n"
               "\n"
               "Settle the first power event of the latest controller run in AUDIT.db: the\n"
               "counterfactual baseline two ways (the pre-event window's mean measured power,\n"
               "and the uncapped predictions: the jobs' reference power), energy shed per\n"
               "interval against each (kWh), the largest excess of measured power over the target\n"
               "and how long it lasted, each job's performance (tokens/s during the event over\n"
               "its reference: --reference's, else its mean measured tokens/s in the pre-event\n"
               "window, else the controller's), tokens lost and tier compliance (life-average\n"
               "against the controller's reference), and the ensemble's weighted performance\n"
               "(by GPU count) and mean performance. The controller reads the cluster at a\n"
               "period's tick, before it sets that period's caps: what a period drew and\n"
               "delivered (power, each job's tokens/s) is what the next period read.\n"
               "\n"
               "options:\n"
               "  --interval S       settlement interval, event time, in (0, 86400] (300)\n"
               "  --speed N          the log was a replay N times faster: times and energies are\n"
               "                     multiplied back; in [0.0001, 10000] (1)\n"
               "  --pre-window S     pre-event baseline window, event time, in [0, 604800] (1800)\n"
               "  --skip S           leave the first S s of the event (its ramp) out of the\n"
               "                     excess; in [0, 604800] (0), and shorter than the event\n"
               "                     (one that leaves out every sample is refused: exit 2)\n"
               "  --non-gpu-w W      non-GPU power of the whole cluster, added to every power\n"
               "                     (facility power); in [0, 1e9] (0)\n"
               "  --tiers FILE       the jobs' tiers (as pfi control --tiers) for compliance\n"
               "  --reference FILE   the jobs' reference tokens/s, CSV job,tput_tok_s, each job\n"
               "                     once, in [1e-6, 1e12] (a job not in it: the pre-event\n"
               "                     window's)\n"
               "  --json             JSON instead of the table\n"
               "  -o, --output FILE  write there instead of stdout (atomically)\n"
               "  -h, --help         this help\n"
               "\n"
               "Exit codes: 0 success, 1 audit log, tiers or reference file missing, unreadable\n"
               "or bad (a reference naming no job of the event), an audit log without an event\n"
               "or without any power reading in the event, 2 bad command line or a value\n"
               "outside its range, 3 output not written.\n");
}

static void jnum(FILE *f, const char *key, double v, bool comma)
{
    fprintf(f, "\"%s\": ", key);
    cli_put_num(f, v, 10, "null");
    if (comma)
        fputs(", ", f);
}

static void put_str(FILE *f, const char *s)
{
    cli_put_json_text(f, s); /* a job name from the audit log: invalid UTF-8 as U+FFFD */
}

void settle_write_json(FILE *f, const pfi_grid_settlement *s, bool per_interval)
{
    fputs("{", f);
    jnum(f, "event_start_s", s->event_start_s, true);
    jnum(f, "event_end_s", s->event_end_s, true);
    jnum(f, "non_gpu_w", s->non_gpu_w, true);
    fputs("\n \"baseline\": {", f);
    jnum(f, "pre_event_w", s->pre_event_w, true);
    jnum(f, "pre_event_window_s", s->pre_event_s, true);
    jnum(f, "uncapped_mean_w", s->uncapped_mean_w, false);
    fputs("},\n ", f);
    jnum(f, "energy_shed_kwh", s->energy_shed_pre_kwh, true);
    jnum(f, "energy_shed_uncapped_kwh", s->energy_shed_uncapped_kwh, true);
    jnum(f, "max_over_target_w", s->max_over_target_w, true);
    jnum(f, "max_over_target_pct", s->max_over_target_pct, true);
    jnum(f, "seconds_over_target", s->seconds_over_target, true);
    jnum(f, "longest_over_target_s", s->longest_over_target_s, true);
    jnum(f, "weighted_performance", s->weighted_performance, true);
    jnum(f, "mean_performance", s->mean_performance, true);
    fprintf(f, "\"missing_periods\": %zu, ", s->missing_periods);
    fprintf(f, "\"tier_violations\": %zu,\n \"per_job\": [", s->tier_violations);
    for (size_t i = 0; i < s->n_jobs; i++) {
        const pfi_grid_settle_job *j = &s->jobs[i];
        fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
        put_str(f, j->job);
        fprintf(f, ", \"gpus\": %zu, \"tier\": ", j->gpus);
        if (j->tier)
            fprintf(f, "\"Flex %d\", ", j->tier);
        else
            fputs("null, ", f);
        jnum(f, "allowance", j->allowance, true);
        jnum(f, "reference_tput_tok_s", j->ref_tput_tok_s, true);
        fprintf(f, "\"reference\": \"%s\", ",
                j->ref_given       ? "given"
                : j->ref_pre_event ? "pre-event"
                                   : "controller");
        jnum(f, "performance", j->performance, true);
        jnum(f, "life_performance", j->life_performance, true);
        jnum(f, "tokens_lost", j->tokens_lost, true);
        fprintf(f, "\"tier_compliant\": %s}", j->tier_compliant ? "true" : "false");
    }
    fputs("]", f);
    if (per_interval) {
        fputs(",\n \"intervals\": [", f);
        for (size_t i = 0; i < s->n_intervals; i++) {
            const pfi_grid_settle_interval *v = &s->intervals[i];
            fprintf(f, "%s\n  {", i ? "," : "");
            jnum(f, "start_s", v->start_s, true);
            jnum(f, "end_s", v->end_s, true);
            jnum(f, "target_kwh", v->target_kwh, true);
            jnum(f, "measured_kwh", v->measured_kwh, true);
            jnum(f, "shed_kwh", v->shed_pre_kwh, true);
            jnum(f, "shed_uncapped_kwh", v->shed_uncapped_kwh, true);
            fprintf(f, "\"missing_periods\": %zu}", v->missing_periods);
        }
        fputs("]", f);
    }
    fputs("}", f);
}

/* v with its unit ("7652 W"), or "undefined" alone (never "undefined W"); in a static buffer
 * of slot k (0..3: one line's values). */
static const char *with_unit(double v, int prec, const char *unit, int k)
{
    static char b[4][64];
    if (!isfinite(v))
        return "undefined";
    snprintf(b[k], sizeof b[k], "%s%s", cli_num(v, 'f', prec, "-").s, unit);
    return b[k];
}

static void write_table(FILE *f, const char *path, const pfi_grid_settlement *s)
{
    fprintf(f, "settlement of %s: event %.0f-%.0f s (event time)%s\n", path, s->event_start_s,
            s->event_end_s, s->non_gpu_w > 0 ? ", facility power (non-GPU included)" : "");
    fprintf(f, "baseline: pre-event %s (over %.0f s), uncapped predictions %s (mean)\n",
            with_unit(s->pre_event_w, 0, " W", 0), s->pre_event_s,
            with_unit(s->uncapped_mean_w, 0, " W", 1));
    fprintf(f, "energy shed: %s against the pre-event level, %s against uncapped\n",
            with_unit(s->energy_shed_pre_kwh, 3, " kWh", 0),
            with_unit(s->energy_shed_uncapped_kwh, 3, " kWh", 1));
    if (isfinite(s->max_over_target_w))
        fprintf(f, "largest excess over target: %s (%s); over target %.1f s, longest %.1f s\n",
                with_unit(s->max_over_target_w, 0, " W", 0),
                with_unit(s->max_over_target_pct, 2, "%", 1), s->seconds_over_target,
                s->longest_over_target_s);
    else
        fprintf(f, "largest excess over target: undefined (no power reading against a target in "
                   "the event)\n");
    if (s->missing_periods > 0)
        fprintf(f,
                "missing: %zu event period%s without a measured power (in no measured or shed "
                "sum)\n",
                s->missing_periods, s->missing_periods == 1 ? "" : "s");
    fprintf(f, "\n  %-10s %-10s %12s %12s %12s %12s\n", "start_s", "end_s", "target_kWh",
            "measured_kWh", "shed_kWh", "shed_unc_kWh");
    for (size_t i = 0; i < s->n_intervals; i++) {
        const pfi_grid_settle_interval *v = &s->intervals[i];
        fprintf(f, "  %-10.0f %-10.0f %12.3f %12.3f %12s %12s\n", v->start_s, v->end_s,
                v->target_kwh, v->measured_kwh, cli_num(v->shed_pre_kwh, 'f', 3, "-").s,
                cli_num(v->shed_uncapped_kwh, 'f', 3, "-").s);
    }
    /* the job column as wide as the longest name: a long name shifts no other column */
    int w = 3;
    for (size_t i = 0; i < s->n_jobs; i++)
        if (strlen(s->jobs[i].job) > (size_t)w)
            w = strlen(s->jobs[i].job) > 256 ? 256 : (int)strlen(s->jobs[i].job);
    fprintf(f, "\n  %-*s %5s %-7s %11s %11s %14s  %-6s %s\n", w, "job", "gpus", "tier",
            "performance", "life_perf", "tokens_lost", "tier", "reference tokens/s");
    for (size_t i = 0; i < s->n_jobs; i++) {
        const pfi_grid_settle_job *j = &s->jobs[i];
        char tier[16] = "-";
        if (j->tier)
            snprintf(tier, sizeof tier, "Flex %d", j->tier);
        char ref[72];
        snprintf(ref, sizeof ref, "%s (%s)", cli_num(j->ref_tput_tok_s, 'g', 6, "-").s,
                 j->ref_given       ? "given"
                 : j->ref_pre_event ? "pre-event"
                                    : "controller");
        char sj[512]; /* the job name escaped (cli_safe): no raw control character */
        fprintf(f, "  %-*s %5zu %-7s %11s %11s %14s  %-6s %s\n", w,
                cli_safe(sj, sizeof sj, j->job, strlen(j->job)), j->gpus, tier,
                cli_num(j->performance, 'f', 4, "-").s, cli_num(j->life_performance, 'f', 4, "-").s,
                cli_num(j->tokens_lost, 'f', 0, "-").s,
                isnan(j->allowance) ? "-"
                : j->tier_compliant ? "within"
                                    : "VIOLATED",
                ref);
    }
    fprintf(f, "\nweighted performance (by GPUs) %s, mean %s; %zu tier violation%s\n",
            cli_num(s->weighted_performance, 'f', 4, "-").s,
            cli_num(s->mean_performance, 'f', 4, "-").s, s->tier_violations,
            s->tier_violations == 1 ? "" : "s");
}

int settle_tiers_load(const char *path, pfi_grid_tier_job **t, size_t *n)
{
    size_t len = 0;
    errno = 0;
    char *text = cli_read_text(path, 16u << 20, &len);
    if (text == NULL) {
        cli_error("tiers %s: %s", path, cli_input_why());
        return PFI_EXIT_DATA;
    }
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = pfi_grid_tiers_parse(text, len, t, n, &d);
    free(text);
    if (e != PFI_OK) {
        snprintf(d.file, sizeof d.file, "%s", path);
        return cli_report(e, &d);
    }
    return PFI_EXIT_OK;
}

/* The smallest and largest reference tokens/s taken (a job's throughput: below 1e-6 tokens/s
 * or above 1e12 is a unit slip, and would print performances of 1e300 or tokens lost of inf). */
#define REF_MIN_TOK_S 1e-6
#define REF_MAX_TOK_S 1e12

/* --reference FILE: CSV with a header naming job and tput_tok_s (other columns ignored),
 * one job a row, tokens/s in [REF_MIN_TOK_S, REF_MAX_TOK_S], each job once, at least one.
 * *out and *lines (each row's line in the file) owned (free). Errors name the file, line and
 * field. */
static int settle_refs_load(const char *path, pfi_grid_settle_ref **out, long **lines, size_t *n)
{
    *out = NULL;
    *lines = NULL;
    *n = 0;
    long *ln = NULL;
    pfi_csv_reader *r = NULL;
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = pfi_csv_open(path, path, &r, &d);
    if (e != PFI_OK)
        return cli_report(e, &d);
    pfi_grid_settle_ref *v = NULL;
    size_t cnt = 0, cap = 0;
    int ij = -1, it = -1, rc = PFI_EXIT_OK;
    for (bool header = true;; header = false) {
        const char *const *fl;
        const size_t *lens;
        size_t nf;
        long line;
        bool eof;
        if ((e = pfi_csv_next(r, &fl, &lens, &nf, &line, &eof, &d)) != PFI_OK) {
            rc = cli_report(e, &d);
            break;
        }
        if (eof)
            break;
        if (header) {
            for (size_t i = 0; i < nf; i++) {
                if (strcmp(fl[i], "job") == 0)
                    ij = (int)i;
                if (strcmp(fl[i], "tput_tok_s") == 0)
                    it = (int)i;
            }
            if (ij < 0 || it < 0) {
                cli_error("reference %s:%ld: expected a header with job and tput_tok_s", path,
                          line);
                rc = PFI_EXIT_DATA;
                break;
            }
            continue;
        }
        double t;
        if (nf <= (size_t)ij || fl[ij][0] == '\0' || strlen(fl[ij]) >= PFI_CTL_ID_LEN) {
            cli_error("reference %s:%ld: job: missing, empty or longer than %d bytes", path, line,
                      PFI_CTL_ID_LEN - 1);
            rc = PFI_EXIT_DATA;
            break;
        }
        if (nf <= (size_t)it || fl[it][0] == '\0') {
            cli_error("reference %s:%ld: tput_tok_s: missing (job %s)", path, line, fl[ij]);
            rc = PFI_EXIT_DATA;
            break;
        }
        if (!cli_parse_double(fl[it], &t) || !isfinite(t) || t < REF_MIN_TOK_S ||
            t > REF_MAX_TOK_S) {
            cli_error("reference %s:%ld: tput_tok_s: '%s' (expected tokens/s in [%g, %g])", path,
                      line, fl[it], REF_MIN_TOK_S, REF_MAX_TOK_S);
            rc = PFI_EXIT_DATA;
            break;
        }
        size_t dup = 0;
        while (dup < cnt && strcmp(v[dup].job, fl[ij]) != 0)
            dup++;
        if (dup < cnt) {
            cli_error("reference %s:%ld: job %s: also on line %ld (one row a job)", path, line,
                      fl[ij], ln[dup]);
            rc = PFI_EXIT_DATA;
            break;
        }
        if (cnt == cap) {
            size_t nc = cap ? 2 * cap : 16;
            pfi_grid_settle_ref *q = nc <= 4096 ? realloc(v, nc * sizeof *q) : NULL;
            if (q != NULL)
                v = q;
            long *ql = q != NULL ? realloc(ln, nc * sizeof *ql) : NULL;
            if (ql != NULL)
                ln = ql;
            if (q == NULL || ql == NULL) {
                cli_error("reference %s: more than 4096 jobs or out of memory", path);
                rc = PFI_EXIT_DATA;
                break;
            }
            cap = nc;
        }
        ln[cnt] = line;
        snprintf(v[cnt].job, sizeof v[cnt].job, "%s", fl[ij]);
        v[cnt++].tput_tok_s = t;
    }
    pfi_csv_close(r);
    if (rc == PFI_EXIT_OK && cnt == 0) {
        cli_error("reference %s: no job of the audit log named (expected a header job,tput_tok_s "
                  "and a row a job)",
                  path);
        rc = PFI_EXIT_DATA;
    }
    if (rc != PFI_EXIT_OK) {
        free(v);
        free(ln);
        return rc;
    }
    *out = v;
    *lines = ln;
    *n = cnt;
    return PFI_EXIT_OK;
}

int cmd_settlement(int argc, char **argv)
{
    enum { O_SETTLE = 256, O_INTERVAL, O_SPEED, O_PRE, O_SKIP, O_NONGPU, O_TIERS, O_JSON, O_REF };
    static const struct option opts[] = {{"settlement", no_argument, NULL, O_SETTLE},
                                         {"interval", required_argument, NULL, O_INTERVAL},
                                         {"speed", required_argument, NULL, O_SPEED},
                                         {"pre-window", required_argument, NULL, O_PRE},
                                         {"skip", required_argument, NULL, O_SKIP},
                                         {"non-gpu-w", required_argument, NULL, O_NONGPU},
                                         {"tiers", required_argument, NULL, O_TIERS},
                                         {"reference", required_argument, NULL, O_REF},
                                         {"json", no_argument, NULL, O_JSON},
                                         {"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    pfi_grid_settle_options so;
    pfi_grid_settle_options_init(&so);
    const char *tiers = NULL, *output = NULL, *refs = NULL;
    bool json = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        double *dst = c == O_INTERVAL ? &so.interval_s
                      : c == O_SPEED  ? &so.speed
                      : c == O_PRE    ? &so.pre_window_s
                      : c == O_SKIP   ? &so.skip_s
                      : c == O_NONGPU ? &so.non_gpu_w
                                      : NULL;
        if (dst != NULL) {
            /* Documented ranges (usage): a value outside names its option and the range. */
            static const struct {
                double lo, hi;
                bool open_lo;
            } range[] = {[O_INTERVAL - O_INTERVAL] = {0, 86400, true},
                         [O_SPEED - O_INTERVAL] = {1e-4, 1e4, false},
                         [O_PRE - O_INTERVAL] = {0, 604800, false},
                         [O_SKIP - O_INTERVAL] = {0, 604800, false},
                         [O_NONGPU - O_INTERVAL] = {0, 1e9, false}};
            const char *name = opts[c - O_SETTLE].name;
            double lo = range[c - O_INTERVAL].lo, hi = range[c - O_INTERVAL].hi;
            bool open_lo = range[c - O_INTERVAL].open_lo;
            if (!cli_parse_double(optarg, dst) || !isfinite(*dst) || *dst > hi ||
                (open_lo ? !(*dst > lo) : !(*dst >= lo))) {
                char want[96];
                snprintf(want, sizeof want, "a number in %s%g, %g]", open_lo ? "(" : "[", lo, hi);
                return cli_usage_bad_value(name, optarg, want);
            }
            continue;
        }
        switch (c) {
        case O_SETTLE:
            break;
        case O_TIERS:
            tiers = optarg;
            break;
        case O_REF:
            refs = optarg;
            break;
        case O_JSON:
            json = true;
            break;
        case 'o':
            output = optarg;
            break;
        case 'h':
            usage(stdout);
            return PFI_EXIT_OK;
        default: /* '?' or ':' */
            return cli_usage_getopt(opts, ":ho:", c, argv);
        }
    }
    if (argc - optind != 1) {
        cli_error("give one AUDIT.db");
        return PFI_EXIT_USAGE;
    }
    int orc;
    if ((orc = cli_output_not_input(output, argv[optind])) != PFI_EXIT_OK ||
        (orc = cli_output_not_input(output, tiers)) != PFI_EXIT_OK)
        return orc;
    pfi_grid_tier_job *tj = NULL;
    size_t nt = 0;
    int rc = tiers ? settle_tiers_load(tiers, &tj, &nt) : PFI_EXIT_OK;
    if (rc != PFI_EXIT_OK)
        return rc;
    so.tiers = tj;
    so.n_tiers = nt;
    pfi_grid_settle_ref *rv = NULL;
    long *rl = NULL;
    if (refs != NULL && (rc = settle_refs_load(refs, &rv, &rl, &so.n_refs)) != PFI_EXIT_OK) {
        pfi_free(tj);
        return rc;
    }
    so.refs = rv;
    pfi_grid_settlement *s = NULL;
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = pfi_grid_settle(argv[optind], &so, &s, &d);
    pfi_free(tj);
    /* a reference row naming no job of the event: a warning each; none named: an error */
    size_t matched = 0;
    for (size_t q = 0; e == PFI_OK && q < so.n_refs; q++) {
        size_t k = 0;
        while (k < s->n_jobs && strcmp(s->jobs[k].job, rv[q].job) != 0)
            k++;
        if (k < s->n_jobs)
            matched++;
        else
            cli_error("warning: reference %s:%ld: job %s is not in the audit log's event (ignored)",
                      refs, rl[q], rv[q].job);
    }
    free(rv);
    free(rl);
    if (e != PFI_OK)
        return cli_report(e, &d);
    if (so.n_refs > 0 && matched == 0) {
        cli_error("reference %s: no job of the audit log named", refs);
        pfi_grid_settlement_destroy(s);
        return PFI_EXIT_DATA;
    }
    double event_s = s->event_end_s - s->event_start_s;
    if (so.skip_s > 0 && so.skip_s >= event_s) { /* a value outside its range: this event's */
        cli_error("%s: --skip %g s leaves out every sample of the event "
                  "(%.0f-%.0f s event time, %g s long): nothing left to measure the excess over "
                  "target on; give --skip below %g",
                  argv[optind], so.skip_s, s->event_start_s, s->event_end_s, event_s, event_s);
        pfi_grid_settlement_destroy(s);
        return PFI_EXIT_USAGE;
    }
    cli_output out;
    if (!cli_output_open(&out, output)) {
        rc = PFI_EXIT_OUTPUT;
    } else {
        if (json) {
            settle_write_json(out.f, s, true);
            fputc('\n', out.f);
        } else {
            write_table(out.f, argv[optind], s);
        }
        if (!cli_output_commit(&out))
            rc = PFI_EXIT_OUTPUT;
    }
    pfi_grid_settlement_destroy(s);
    return rc;
}
