/*
 * pfi simulate — the paper's §6 policy simulation: every allocation strategy on workloads
 * drawn from a job library.
 */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli.h"
#include "pfi/fit.h"
#include "pfi/joblib.h"
#include "pfi/library.h"
#include "pfi/manifest.h"
#include "pfi/plot_sim.h"
#include "pfi/simulate.h"
#include "pfi/value.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: pfi simulate [OPTIONS]\n"
        "\n"
        "Simulate power-capping policies (paper section 6): draw W workloads of J jobs from a\n"
        "job library, ask every allocation strategy for per-job caps that shed r %% of the\n"
        "cluster's GPU power, and score the caps on the jobs' true curves. Reports, per mix\n"
        "and r, tokens/s per job, tokens/s per job recovered over 'equal' and the share of\n"
        "the equal-to-oracle gap closed, each with its mean and the 2.5-97.5 percentile\n"
        "interval over workloads.\n"
        "\n"
        "library:\n"
        "  --library synthetic|DIR  the calibrated SYNTHETIC library of 'pfi library\n"
        "                         generate' (default; generated in memory, true curves), or\n"
        "                         a dataset directory with a " PFI_MANIFEST_NAME " (e.g.\n"
        "                         data/zeus_nsdi23_power, or one 'pfi library generate' wrote):\n"
        "                         each sweep group becomes a job with its measured curve;\n"
        "                         a comma-separated list runs each and reports them side\n"
        "                         by side (e.g. synthetic,data/emerald_phoenix_2025,\n"
        "                         data/zeus_nsdi23_power)\n"
        "  --library-seed N       seed of the synthetic library (1, as 'pfi library generate')\n"
        "\n"
        "simulation:\n"
        "  --workloads W          workloads per mix (500)\n"
        "  --jobs J               jobs per workload (100)\n"
        "  --reductions LIST      comma-separated reductions, each 0.3 or 30%%, in (0, 100%%)\n"
        "                         (10%%,20%%,30%%,40%%,50%%)\n"
        "  --mix random|production|both  (both)\n"
        "  --prod-ft-share F      production mix: share of fine-tuning jobs (0.8)\n"
        "  --pfi-noise SD         SD of the error of estimated PFIs, PFI units in [0, 1000]\n"
        "                         (0.25, or the --model's LOO RMSE)\n"
        "  --model FILE           a predictor written by 'pfi fit -m': its leave-one-out RMSE\n"
        "                         is the default --pfi-noise (how far its estimates miss)\n"
        "  --curves measured|model  pfi-model's curve for a job's estimated PFI: the measured\n"
        "                         curves of the library's other jobs whose PFIs bracket it\n"
        "                         (measured, default), or the section-7 model (model)\n"
        "  --cap-step W           caps on multiples of W watts (0: continuous); a W larger\n"
        "                         than every job's cap range is refused (exit 2)\n"
        "  --deep-class NAME      class cut deeper by class-weighted (moe-ft); a class the\n"
        "                         library does not have is refused, listing its classes\n"
        "  --class-factor F       how much deeper (2)\n"
        "  --seed N               random seed (1); same seed, same numbers\n"
        "  --threads N            worker threads (0: one per CPU)\n"
        "\n"
        "output:\n"
        "  --format table|csv|json  (table)\n"
        "  -o, --output FILE      write there instead of stdout (atomically)\n"
        "  --plot-gap FILE        figure: gap closed against r, per strategy (.png/.svg)\n"
        "  --plot-classes FILE    figure: throughput kept per job class against r\n"
        "  --quiet                no progress line (it shows only on a terminal)\n"
        "  -h, --help             this help\n"
        "\n"
        "Exit codes: 0 success, 1 bad or missing input, 2 bad command line,\n"
        "3 output not written, 4 internal error.\n");
}

enum {
    OPT_LIBRARY = 256,
    OPT_LIBRARY_SEED,
    OPT_WORKLOADS,
    OPT_JOBS,
    OPT_REDUCTIONS,
    OPT_MIX,
    OPT_PROD_FT,
    OPT_PFI_NOISE,
    OPT_CAP_STEP,
    OPT_DEEP_CLASS,
    OPT_CLASS_FACTOR,
    OPT_SEED,
    OPT_THREADS,
    OPT_FORMAT,
    OPT_PLOT_GAP,
    OPT_PLOT_CLASSES,
    OPT_QUIET,
    OPT_MODEL,
    OPT_CURVES
};

static const struct option long_options[] = {
    {"library", required_argument, NULL, OPT_LIBRARY},
    {"library-seed", required_argument, NULL, OPT_LIBRARY_SEED},
    {"workloads", required_argument, NULL, OPT_WORKLOADS},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"reductions", required_argument, NULL, OPT_REDUCTIONS},
    {"mix", required_argument, NULL, OPT_MIX},
    {"prod-ft-share", required_argument, NULL, OPT_PROD_FT},
    {"pfi-noise", required_argument, NULL, OPT_PFI_NOISE},
    {"model", required_argument, NULL, OPT_MODEL},
    {"curves", required_argument, NULL, OPT_CURVES},
    {"cap-step", required_argument, NULL, OPT_CAP_STEP},
    {"deep-class", required_argument, NULL, OPT_DEEP_CLASS},
    {"class-factor", required_argument, NULL, OPT_CLASS_FACTOR},
    {"seed", required_argument, NULL, OPT_SEED},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"output", required_argument, NULL, 'o'},
    {"plot-gap", required_argument, NULL, OPT_PLOT_GAP},
    {"plot-classes", required_argument, NULL, OPT_PLOT_CLASSES},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

typedef struct settings {
    const char *library;
    size_t library_seed;
    pfi_sim_options sim;
    const char *format, *output, *plot_gap, *plot_classes;
    const char *model; /* --model: take the noise SD from this predictor's LOO RMSE */
    bool noise_given;  /* --pfi-noise given (it wins over --model) */
    bool deep_given;   /* --deep-class given: it must name one of the library's classes */
    bool quiet;
} settings;

/* --reductions: a comma list, each "30%" or "0.3" (pfi_reduction_parse, as every command),
 * strictly between 0 and 100 %; one line for the first bad one. An exit code. */
static int parse_reductions(const char *s, pfi_sim_options *o)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    o->n_reductions = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        double v;
        char why[256];
        if (pfi_reduction_parse(tok, &v, why, sizeof why) != PFI_VALUE_OK)
            return cli_usage_error("--reductions: %s", why);
        if (o->n_reductions == PFI_SIM_MAX_REDUCTIONS || !(v > 0 && v < 1))
            return cli_usage_bad_value("reductions", s, NULL);
        o->reductions[o->n_reductions++] = v;
    }
    return o->n_reductions > 0 ? PFI_EXIT_OK : cli_usage_bad_value("reductions", s, NULL);
}

/* The complaint about a value an option does not take; returns the exit code. */
static int bad_value(int c, const char *value)
{
    return cli_usage_bad_value(cli_option_name(long_options, c), value, NULL);
}

/* --mix: random, production or both. */
static bool parse_mix(const char *s, pfi_sim_options *o)
{
    if (strcmp(s, "both") == 0) {
        o->mix_enabled[0] = o->mix_enabled[1] = true;
    } else if (strcmp(s, "random") == 0 || strcmp(s, "production") == 0) {
        bool prod = s[0] == 'p';
        o->mix_enabled[PFI_MIX_RANDOM] = !prod;
        o->mix_enabled[PFI_MIX_PRODUCTION] = prod;
    } else {
        return false;
    }
    return true;
}

/* A figure name the plotter would refuse is refused now, before the simulation runs. */
static bool plot_names_valid(const settings *s)
{
    const char *plots[2] = {s->plot_gap, s->plot_classes};
    for (int i = 0; i < 2; i++) {
        const char *dot = plots[i] ? strrchr(plots[i], '.') : NULL;
        if (plots[i] != NULL &&
            (dot == NULL || (strcasecmp(dot, ".png") != 0 && strcasecmp(dot, ".svg") != 0))) {
            cli_usage_bad_value(i == 0 ? "plot-gap" : "plot-classes", plots[i],
                                "a file name ending in .png or .svg");
            return false;
        }
    }
    return true;
}

/* The options into s: the plain ones from a table, the rest by their own rules. An exit
 * code, -1 after --help. */
static int parse_args(int argc, char **argv, settings *s)
{
    memset(s, 0, sizeof *s);
    s->library = "synthetic";
    s->library_seed = 1;
    s->format = "table";
    pfi_sim_options_init(&s->sim);
    pfi_sim_options *o = &s->sim;
    int rc;
    const cli_opt table[] = {
        {.c = 'o', .kind = CLI_OPT_TEXT, .dst = &s->output},
        {.c = OPT_LIBRARY, .kind = CLI_OPT_TEXT, .dst = &s->library},
        {.c = OPT_LIBRARY_SEED, .kind = CLI_OPT_SIZE, .dst = &s->library_seed, .max = SIZE_MAX},
        {.c = OPT_WORKLOADS, .kind = CLI_OPT_SIZE, .dst = &o->workloads, .min = 1, .max = 10000000},
        {.c = OPT_JOBS, .kind = CLI_OPT_SIZE, .dst = &o->jobs, .min = 1, .max = 10000000},
        {.c = OPT_PROD_FT, .kind = CLI_OPT_DOUBLE, .dst = &o->prod_ft_share, .lo = 0, .hi = 1},
        {.c = OPT_PFI_NOISE,
         .kind = CLI_OPT_DOUBLE,
         .dst = &o->pfi_noise,
         .lo = 0,
         .hi = PFI_SIM_MAX_PFI_NOISE,
         .given = &s->noise_given,
         .error = "an SD in PFI units in [0, 1000]"},
        {.c = OPT_MODEL, .kind = CLI_OPT_TEXT, .dst = &s->model},
        {.c = OPT_CAP_STEP, .kind = CLI_OPT_DOUBLE, .dst = &o->cap_step_w, .lo = 0, .hi = HUGE_VAL},
        {.c = OPT_DEEP_CLASS,
         .kind = CLI_OPT_TEXT,
         .dst = &o->deep_cut_class,
         .given = &s->deep_given},
        {.c = OPT_CLASS_FACTOR,
         .kind = CLI_OPT_DOUBLE,
         .dst = &o->class_factor,
         .lo = 0,
         .lo_open = true,
         .hi = HUGE_VAL},
        {.c = OPT_SEED, .kind = CLI_OPT_UINT64, .dst = &o->seed, .max = SIZE_MAX},
        {.c = OPT_THREADS, .kind = CLI_OPT_UNSIGNED, .dst = &o->threads, .max = 1024},
        {.c = OPT_PLOT_GAP, .kind = CLI_OPT_TEXT, .dst = &s->plot_gap},
        {.c = OPT_PLOT_CLASSES, .kind = CLI_OPT_TEXT, .dst = &s->plot_classes},
        {.c = OPT_QUIET, .kind = CLI_OPT_FLAG, .dst = &s->quiet},
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":ho:", long_options, NULL)) != -1) {
        const cli_opt *t = cli_opt_find(table, sizeof table / sizeof table[0], c);
        if (t != NULL) {
            if (!cli_opt_take(t, optarg))
                return cli_usage_bad_value(cli_option_name(long_options, c), optarg, t->error);
            continue;
        }
        switch (c) {
        case 'h':
            usage(stdout);
            return -1;
        case OPT_REDUCTIONS:
            if ((rc = parse_reductions(optarg, o)) != PFI_EXIT_OK)
                return rc;
            break;
        case OPT_MIX:
            if (!parse_mix(optarg, o))
                return bad_value(c, optarg);
            break;
        case OPT_CURVES:
            if (strcmp(optarg, "measured") != 0 && strcmp(optarg, "model") != 0)
                return bad_value(c, optarg);
            o->curves = optarg[1] == 'e' ? PFI_SIM_CURVES_MEASURED : PFI_SIM_CURVES_MODEL;
            break;
        case OPT_FORMAT:
            if (strcmp(optarg, "table") && strcmp(optarg, "csv") && strcmp(optarg, "json"))
                return bad_value(c, optarg);
            s->format = optarg;
            break;
        default: /* '?' or ':' */
            return cli_usage_getopt(long_options, ":ho:", c, argv);
        }
    }
    if (optind < argc) {
        return cli_usage_unexpected(argv[optind]);
    }
    return plot_names_valid(s) ? PFI_EXIT_OK : PFI_EXIT_USAGE;
}

/*
 * The PFI estimate error from a fitted predictor (pfi fit -m): its leave-one-out RMSE, the
 * typical miss of its estimate for a job it was not trained on. Unless --pfi-noise was given,
 * it becomes the simulation's noise SD.
 */
static int noise_from_model(settings *s)
{
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_fit_model *m = NULL;
    int rc = cli_load_model(s->model, &m);
    if (rc != PFI_EXIT_OK)
        return rc;
    double rmse = m->loo.rmse;
    pfi_fit_model_destroy(m);
    if (s->noise_given)
        return PFI_EXIT_OK;
    if (!(rmse >= 0) || !isfinite(rmse)) {
        cli_error("%s: the model has no leave-one-out RMSE (undefined); give --pfi-noise",
                  s->model);
        return PFI_EXIT_DATA;
    }
    if (rmse > PFI_SIM_MAX_PFI_NOISE) { /* as --pfi-noise's bound */
        cli_error("%s: the model's leave-one-out RMSE %g is above %g PFI units (its estimates "
                  "are noise); give --pfi-noise",
                  s->model, rmse, PFI_SIM_MAX_PFI_NOISE);
        return PFI_EXIT_DATA;
    }
    s->sim.pfi_noise = rmse;
    return PFI_EXIT_OK;
}

/* A library from a dataset directory read through its manifest. */
static int load_library_dir(const char *dir, pfi_joblib **out)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        cli_error("%s: not 'synthetic' and not a dataset directory", dir);
        return PFI_EXIT_DATA;
    }
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_manifest man;
    memset(&man, 0, sizeof man);
    pfi_runs_table *t = NULL;
    pfi_error e = pfi_runs_table_create(&t);
    if (e == PFI_OK)
        e = pfi_dataset_read(dir, t, &man, &d);
    if (e == PFI_OK) {
        pfi_options o;
        pfi_options_init(&o);
        e = pfi_joblib_from_runs(t, &o, out, &d);
    }
    pfi_manifest_clear(&man);
    pfi_runs_table_destroy(t);
    return e == PFI_OK ? PFI_EXIT_OK : cli_report(e, &d);
}

static void progress(void *ctx, size_t done, size_t total)
{
    size_t *last = ctx;
    size_t pct = 100 * done / total;
    if (pct != *last || done == total) {
        *last = pct;
        fprintf(stderr, "\rpfi simulate: %zu/%zu workloads (%zu%%)", done, total, pct);
        if (done == total)
            fputs("\n", stderr);
        fflush(stderr);
    }
}

static const char *cell_na = "n/a";

/* The index of r = 30 % in the result, or SIZE_MAX. */
static size_t find_r(const pfi_sim_result *r, double v)
{
    for (size_t i = 0; i < r->n_reductions; i++)
        if (fabs(r->reductions[i] - v) < 1e-9)
            return i;
    return SIZE_MAX;
}

static void write_table(FILE *f, const pfi_sim_result *r, const pfi_joblib *lib, const settings *s)
{
    char lname[CLI_SAFE_CELL]; /* the library's path, escaped */
    fprintf(f,
            "pfi simulate: %zu workloads x %zu jobs, seed %llu, library %s%s (%zu jobs, "
            "%zu classes), PFI estimate error SD %.3g%s%s%s\n",
            s->sim.workloads, s->sim.jobs, (unsigned long long)s->sim.seed,
            cli_safe(lname, sizeof lname, s->library, strlen(s->library)),
            lib->synthetic ? " [SYNTHETIC]" : "", lib->n, lib->n_classes, s->sim.pfi_noise,
            s->model != NULL && !s->noise_given ? " (LOO RMSE of " : "",
            s->model != NULL && !s->noise_given ? s->model : "",
            s->model != NULL && !s->noise_given ? ")" : "");
    fprintf(f,
            "intervals: 2.5-97.5 percentiles over workloads; tokens/s in the library's "
            "unit%s\n",
            lib->synthetic ? " (synthetic)" : "");
    fprintf(f, "pfi-model curves: %s\n",
            s->sim.curves == PFI_SIM_CURVES_MEASURED
                ? "measured (the library's other jobs of nearest PFI)"
                : "model (section 7)");
    for (int m = 0; m < PFI_SIM_MIXES; m++) {
        if (!r->mix_run[m])
            continue;
        for (size_t ri = 0; ri < r->n_reductions; ri++) {
            fprintf(f, "\nmix %s, r = %g%%\n", pfi_sim_mix_name((pfi_sim_mix)m),
                    100 * r->reductions[ri]);
            fprintf(f, "  %-15s %12s %28s %24s %7s\n", "strategy", "tok/s/job",
                    "recovered tok/s/job [95%]", "gap closed [95%]", "<equal");
            for (int st = 0; st < PFI_STRATEGY_COUNT; st++) {
                const pfi_sim_cell *c =
                    &r->cells[pfi_sim_cell_index(r, (pfi_sim_mix)m, ri, (pfi_strategy)st)];
                if (!c->available) {
                    fprintf(f, "  %-15s %12s\n", pfi_strategy_name((pfi_strategy)st), cell_na);
                    continue;
                }
                char rec[160], gap[64];
                snprintf(rec, sizeof rec, "%s [%s, %s]",
                         cli_num(c->recovered_per_job_tok_s.mean, 'f', 1, "-").s,
                         cli_num(c->recovered_per_job_tok_s.lo, 'f', 1, "-").s,
                         cli_num(c->recovered_per_job_tok_s.hi, 'f', 1, "-").s);
                if (!isfinite(c->gap_closed.mean))
                    snprintf(gap, sizeof gap, "%s", cell_na);
                else
                    snprintf(gap, sizeof gap, "%.1f%% [%.1f, %.1f]", 100 * c->gap_closed.mean,
                             100 * c->gap_closed.lo, 100 * c->gap_closed.hi);
                fprintf(f, "  %-15s %12s %28s %24s %7zu\n", pfi_strategy_name((pfi_strategy)st),
                        cli_num(c->per_job_tok_s.mean, 'f', 1, "-").s, rec, gap, c->below_equal);
            }
        }
    }
    /* the paper comparison */
    size_t r30 = find_r(r, 0.3);
    if (r30 != SIZE_MAX && r->mix_run[PFI_MIX_PRODUCTION]) {
        fprintf(f, "\npaper comparison (production mix, r = 30%%):\n");
        fprintf(f, "  %-15s %26s %24s\n", "strategy", "recovered tok/s/job", "gap closed");
        fprintf(f, "  %-15s %26s %24s\n", "paper PFI-aware", "~1500", "63%");
        for (int st = 0; st < PFI_STRATEGY_COUNT; st++) {
            const pfi_sim_cell *c =
                &r->cells[pfi_sim_cell_index(r, PFI_MIX_PRODUCTION, r30, (pfi_strategy)st)];
            if (!c->available)
                continue;
            char gap[32] = "-";
            if (isfinite(c->gap_closed.mean))
                snprintf(gap, sizeof gap, "%.1f%%", 100 * c->gap_closed.mean);
            fprintf(f, "  %-15s %26s %24s\n", pfi_strategy_name((pfi_strategy)st),
                    cli_num(c->recovered_per_job_tok_s.mean, 'f', 1, "-").s, gap);
        }
    }
    /* PFI-based strategies below equal anywhere? */
    bool any = false;
    for (int m = 0; m < PFI_SIM_MIXES; m++)
        for (size_t ri = 0; m < PFI_SIM_MIXES && r->mix_run[m] && ri < r->n_reductions; ri++)
            for (int st = PFI_STRATEGY_PFI_WEIGHTED; st <= PFI_STRATEGY_PFI_MODEL; st++) {
                const pfi_sim_cell *c =
                    &r->cells[pfi_sim_cell_index(r, (pfi_sim_mix)m, ri, (pfi_strategy)st)];
                if (c->available && c->recovered_per_job_tok_s.mean < 0) {
                    fprintf(f, "\nnote: %s is below equal on average at mix %s, r = %g%%\n",
                            pfi_strategy_name((pfi_strategy)st), pfi_sim_mix_name((pfi_sim_mix)m),
                            100 * r->reductions[ri]);
                    any = true;
                }
            }
    if (!any)
        fprintf(f, "\nno PFI-based strategy is below equal on average at any r or mix\n");
    fprintf(f, "\nthroughput kept per class (mean sum T / sum T_ref):\n");
    for (int m = 0; m < PFI_SIM_MIXES; m++) {
        if (!r->mix_run[m])
            continue;
        for (size_t ri = 0; ri < r->n_reductions; ri++) {
            fprintf(f, "  %-10s r=%2.0f%%", pfi_sim_mix_name((pfi_sim_mix)m),
                    100 * r->reductions[ri]);
            for (int st = 0; st < PFI_STRATEGY_COUNT; st++) {
                const pfi_sim_cell *c =
                    &r->cells[pfi_sim_cell_index(r, (pfi_sim_mix)m, ri, (pfi_strategy)st)];
                if (!c->available)
                    continue;
                fprintf(f, "  %s:", pfi_strategy_name((pfi_strategy)st));
                for (size_t k = 0; k < lib->n_classes; k++)
                    if (isfinite(c->retained[k])) {
                        char sc[CLI_SAFE_CELL]; /* a class from the library's files, escaped */
                        fprintf(
                            f, " %s %.3f",
                            cli_safe(sc, sizeof sc, lib->class_name[k], strlen(lib->class_name[k])),
                            c->retained[k]);
                    }
            }
            fputc('\n', f);
        }
    }
    if (r->infeasible > 0)
        fprintf(f,
                "\nwarning: %zu allocations could not meet the budget (every job at its "
                "lowest cap)\n",
                r->infeasible);
}

static void write_csv(FILE *f, const pfi_sim_result *r)
{
    fputs("mix,reduction,strategy,tok_s_per_job,tok_s_per_job_lo,tok_s_per_job_hi,"
          "recovered_tok_s_per_job,recovered_lo,recovered_hi,gap_closed,gap_closed_lo,"
          "gap_closed_hi,workloads_gap,below_equal\n",
          f);
    for (int m = 0; m < PFI_SIM_MIXES; m++)
        for (size_t ri = 0; r->mix_run[m] && ri < r->n_reductions; ri++)
            for (int st = 0; st < PFI_STRATEGY_COUNT; st++) {
                const pfi_sim_cell *c =
                    &r->cells[pfi_sim_cell_index(r, (pfi_sim_mix)m, ri, (pfi_strategy)st)];
                if (!c->available)
                    continue;
                fprintf(f, "%s,%.17g,%s", pfi_sim_mix_name((pfi_sim_mix)m), r->reductions[ri],
                        pfi_strategy_name((pfi_strategy)st));
                const pfi_sim_stat *stats[] = {&c->per_job_tok_s, &c->recovered_per_job_tok_s,
                                               &c->gap_closed};
                for (int k = 0; k < 3; k++) {
                    double v[3] = {stats[k]->mean, stats[k]->lo, stats[k]->hi};
                    for (int q = 0; q < 3; q++) {
                        fputc(',', f);
                        cli_put_num(f, v[q], 10, "");
                    }
                }
                fprintf(f, ",%zu,%zu\n", c->gap_closed.n, c->below_equal);
            }
}

/* A JSON string (a library's name: a path; a class name; invalid UTF-8 as U+FFFD). */
static void put_json_string(FILE *f, const char *v)
{
    cli_put_json_text(f, v);
}

static void json_stat(FILE *f, const char *name, const pfi_sim_stat *s)
{
    fprintf(f, "\"%s\": ", name);
    if (!isfinite(s->mean)) {
        fputs("null", f);
        return;
    }
    fprintf(f, "{\"mean\": %.10g, \"lo\": ", s->mean);
    cli_put_num(f, s->lo, 10, "null");
    fputs(", \"hi\": ", f);
    cli_put_num(f, s->hi, 10, "null");
    fprintf(f, ", \"n\": %zu}", s->n);
}

static void write_json(FILE *f, const pfi_sim_result *r, const pfi_joblib *lib, const settings *s)
{
    fprintf(f,
            "{\n  \"workloads\": %zu, \"jobs\": %zu, \"seed\": %llu, \"synthetic\": %s,\n"
            "  \"pfi_noise\": %.10g, \"pfi_noise_source\": \"%s\", \"pfi_model_curves\": \"%s\",\n"
            "  \"interval\": \"2.5-97.5 percentiles over workloads\",\n"
            "  \"cells\": [",
            s->sim.workloads, s->sim.jobs, (unsigned long long)s->sim.seed,
            lib->synthetic ? "true" : "false", s->sim.pfi_noise,
            s->model != NULL && !s->noise_given ? "model_loo_rmse"
            : s->noise_given                    ? "option"
                                                : "default",
            s->sim.curves == PFI_SIM_CURVES_MEASURED ? "measured" : "model");
    bool first = true;
    for (int m = 0; m < PFI_SIM_MIXES; m++)
        for (size_t ri = 0; r->mix_run[m] && ri < r->n_reductions; ri++)
            for (int st = 0; st < PFI_STRATEGY_COUNT; st++) {
                const pfi_sim_cell *c =
                    &r->cells[pfi_sim_cell_index(r, (pfi_sim_mix)m, ri, (pfi_strategy)st)];
                if (!c->available)
                    continue;
                fprintf(f, "%s\n    {\"mix\": \"%s\", \"reduction\": %.10g, \"strategy\": \"%s\", ",
                        first ? "" : ",", pfi_sim_mix_name((pfi_sim_mix)m), r->reductions[ri],
                        pfi_strategy_name((pfi_strategy)st));
                first = false;
                json_stat(f, "tok_s_per_job", &c->per_job_tok_s);
                fputs(", ", f);
                json_stat(f, "recovered_tok_s_per_job", &c->recovered_per_job_tok_s);
                fputs(", ", f);
                json_stat(f, "gap_closed", &c->gap_closed);
                fprintf(f, ", \"below_equal\": %zu, \"retained\": {", c->below_equal);
                bool fc = true;
                for (size_t k = 0; k < lib->n_classes; k++) {
                    if (!isfinite(c->retained[k]))
                        continue;
                    fputs(fc ? "" : ", ", f);
                    put_json_string(f, lib->class_name[k]); /* a name from a file: quoted */
                    fprintf(f, ": %.10g", c->retained[k]);
                    fc = false;
                }
                fputs("}}", f);
            }
    fprintf(f, "\n  ],\n  \"infeasible\": %zu\n}\n", r->infeasible);
}

/* One library by name: the synthetic one generated in memory, or a dataset directory. */
static int load_library(const settings *s, const char *name, pfi_joblib **lib)
{
    if (strcmp(name, "synthetic") != 0)
        return load_library_dir(name, lib);
    pfi_library_options lo;
    pfi_library_options_init(&lo);
    lo.seed = s->library_seed;
    pfi_library *gen = NULL;
    pfi_error e = pfi_library_generate(&lo, &gen);
    if (e == PFI_OK)
        e = pfi_joblib_from_library(gen, lib);
    pfi_library_destroy(gen);
    return e == PFI_OK ? PFI_EXIT_OK : cli_report(e, NULL);
}

/* Most libraries of one --library list. */
#define SIM_MAX_LIBRARIES 8

/* The libraries of one run, side by side: names, libraries, results. */
typedef struct sim_set {
    size_t n;
    char *name[SIM_MAX_LIBRARIES];
    pfi_joblib *lib[SIM_MAX_LIBRARIES];
    pfi_sim_result *res[SIM_MAX_LIBRARIES];
} sim_set;

static void sim_set_clear(sim_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        free(set->name[i]);
        pfi_sim_result_destroy(set->res[i]);
        pfi_joblib_destroy(set->lib[i]);
    }
    set->n = 0;
}

/* --library's list into set->name; false (said) when empty or too long. */
static bool split_libraries(const char *list, sim_set *set)
{
    const char *p = list;
    char want[160];
    snprintf(want, sizeof want, "1 to %d comma-separated library names, none empty",
             SIM_MAX_LIBRARIES);
    if (*p == '\0' || list[strlen(list) - 1] == ',') { /* "" or "a,": an empty name */
        cli_usage_bad_value("library", list, want);
        return false;
    }
    while (*p != '\0') {
        size_t len = strcspn(p, ",");
        if (len == 0 || set->n == SIM_MAX_LIBRARIES) {
            cli_usage_bad_value("library", list, want);
            return false;
        }
        set->name[set->n] = strndup(p, len);
        if (set->name[set->n] == NULL)
            return false;
        for (size_t k = 0; k < set->n; k++)
            if (strcmp(set->name[k], set->name[set->n]) == 0) { /* the same run twice */
                snprintf(want, sizeof want, "each library once ('%.100s' is given twice)",
                         set->name[k]);
                free(set->name[set->n]);
                cli_usage_bad_value("library", list, want);
                return false;
            }
        set->lib[set->n] = NULL;
        set->res[set->n] = NULL;
        set->n++;
        p += len;
        if (*p == ',')
            p++;
    }
    return set->n > 0;
}

/* Strategies in the side-by-side summary: the ones every library ran. */
static bool strategy_in_all(const sim_set *set, int m, size_t ri, int st)
{
    for (size_t i = 0; i < set->n; i++) {
        const pfi_sim_result *r = set->res[i];
        if (!r->mix_run[m] ||
            !r->cells[pfi_sim_cell_index(r, (pfi_sim_mix)m, ri, (pfi_strategy)st)].available)
            return false;
    }
    return true;
}

/* The side-by-side summary: gap closed (mean over workloads) per strategy and library. */
static void write_side_by_side(FILE *f, const sim_set *set)
{
    const pfi_sim_result *r0 = set->res[0];
    fprintf(f, "\nside by side: share of the equal-to-oracle gap closed (mean over workloads)\n");
    for (int m = 0; m < PFI_SIM_MIXES; m++) {
        bool all = true;
        for (size_t i = 0; i < set->n; i++)
            all = all && set->res[i]->mix_run[m];
        if (!all)
            continue;
        for (size_t ri = 0; ri < r0->n_reductions; ri++) {
            fprintf(f, "\nmix %s, r = %g%%\n  %-15s", pfi_sim_mix_name((pfi_sim_mix)m),
                    100 * r0->reductions[ri], "strategy");
            for (size_t i = 0; i < set->n; i++) {
                const char *base = strrchr(set->name[i], '/');
                base = base != NULL && base[1] ? base + 1 : set->name[i];
                char sb[CLI_SAFE_CELL];
                fprintf(f, " %24s", cli_safe(sb, sizeof sb, base, strlen(base)));
            }
            fputc('\n', f);
            for (int st = 0; st < PFI_STRATEGY_COUNT; st++) {
                if (!strategy_in_all(set, m, ri, st))
                    continue;
                fprintf(f, "  %-15s", pfi_strategy_name((pfi_strategy)st));
                for (size_t i = 0; i < set->n; i++) {
                    const pfi_sim_result *r = set->res[i];
                    const pfi_sim_cell *c =
                        &r->cells[pfi_sim_cell_index(r, (pfi_sim_mix)m, ri, (pfi_strategy)st)];
                    if (isfinite(c->gap_closed.mean))
                        fprintf(f, " %23.1f%%", 100 * c->gap_closed.mean);
                    else
                        fprintf(f, " %24s", cell_na);
                }
                fputc('\n', f);
            }
        }
    }
    /* only mixes every library ran are shown; production needs fine-tuning and pre-training */
}

static void write_outputs(FILE *f, const sim_set *set, settings *s)
{
    const char *fmt = s->format;
    const char *library = s->library;
    if (strcmp(fmt, "json") == 0 && set->n > 1)
        fputs("{\"libraries\": [\n", f);
    for (size_t i = 0; i < set->n; i++) {
        s->library = set->name[i];
        if (strcmp(fmt, "csv") == 0) {
            if (set->n > 1)
                fprintf(f, "# library %s\n", set->name[i]);
            write_csv(f, set->res[i]);
        } else if (strcmp(fmt, "json") == 0) {
            if (set->n > 1) {
                fputs(i ? ",\n{\"library\": " : "{\"library\": ", f);
                put_json_string(f, set->name[i]);
                fputs(", \"result\":\n", f);
            }
            write_json(f, set->res[i], set->lib[i], s);
            if (set->n > 1)
                fputs("}", f);
        } else {
            if (i > 0)
                fputc('\n', f);
            write_table(f, set->res[i], set->lib[i], s);
        }
    }
    if (strcmp(fmt, "json") == 0 && set->n > 1)
        fputs("\n]}\n", f);
    if (strcmp(fmt, "table") == 0 && set->n > 1)
        write_side_by_side(f, set);
    s->library = library;
}

/* The options a library's jobs bound, as pfi allocate bounds them (an exit code): --cap-step
 * larger than every job's cap range (it would hold every job at its lowest or top cap) and a
 * --deep-class the library has no job of are refused, naming what is allowed. */
static int check_library_options(const settings *s, const char *name, const pfi_joblib *lib)
{
    double step = s->sim.cap_step_w, widest = 0;
    size_t wj = 0;
    for (size_t j = 0; j < lib->n; j++) {
        double range = lib->cap_w[lib->offset[j + 1] - 1] - lib->cap_w[lib->offset[j]];
        if (range > widest) {
            widest = range;
            wj = j;
        }
    }
    char sn[CLI_SAFE_CELL];
    if (step > 0 && widest > 0 && step > widest)
        return cli_usage_error(
            "--cap-step %g W is larger than every job's cap range: it would hold every job at "
            "its lowest or its top cap; give at most %g W (job '%s' spans that) or 0 (continuous)",
            step, widest, cli_safe(sn, sizeof sn, lib->name[wj], strlen(lib->name[wj])));
    if (!s->deep_given)
        return PFI_EXIT_OK;
    for (size_t k = 0; k < lib->n_classes; k++)
        if (strcmp(lib->class_name[k], s->sim.deep_cut_class) == 0)
            return PFI_EXIT_OK;
    char list[1024] = "", one[4 * 256 + 4];
    size_t used = 0;
    for (size_t k = 0; k < lib->n_classes && used < sizeof list; k++)
        used += (size_t)snprintf(
            list + used, sizeof list - used, "%s%s", k ? ", " : "",
            cli_safe(one, sizeof one, lib->class_name[k], strlen(lib->class_name[k])));
    char sv[4 * 256 + 4];
    return cli_usage_error(
        "--deep-class: library %s has no class '%s'; its classes: %s",
        cli_safe(sn, sizeof sn, name, strlen(name)),
        cli_safe(sv, sizeof sv, s->sim.deep_cut_class, strlen(s->sim.deep_cut_class)), list);
}

int cmd_simulate(int argc, char **argv)
{
    settings s;
    int rc = parse_args(argc, argv, &s);
    if (rc != PFI_EXIT_OK)
        return rc < 0 ? PFI_EXIT_OK : rc;
    if (s.model != NULL && (rc = noise_from_model(&s)) != PFI_EXIT_OK)
        return rc;
    sim_set set;
    memset(&set, 0, sizeof set);
    if (!split_libraries(s.library, &set)) {
        sim_set_clear(&set);
        return PFI_EXIT_USAGE;
    }
    for (size_t i = 0; i < set.n; i++)
        if ((rc = cli_output_not_input(s.output, set.name[i])) != PFI_EXIT_OK) {
            sim_set_clear(&set);
            return rc;
        }
    if (set.n > 1 && (s.plot_gap != NULL || s.plot_classes != NULL)) {
        cli_error("--plot-gap and --plot-classes take one library, not %zu", set.n);
        sim_set_clear(&set);
        return PFI_EXIT_USAGE;
    }
    size_t last = SIZE_MAX;
    if (!s.quiet && cli_is_tty(stderr)) {
        s.sim.progress = progress;
        s.sim.progress_ctx = &last;
    }
    pfi_diag d;
    pfi_diag_clear(&d);
    for (size_t i = 0; rc == PFI_EXIT_OK && i < set.n; i++) {
        rc = load_library(&s, set.name[i], &set.lib[i]);
        if (rc == PFI_EXIT_OK)
            rc = check_library_options(&s, set.name[i], set.lib[i]);
        if (rc != PFI_EXIT_OK)
            break;
        last = SIZE_MAX;
        pfi_error e = pfi_simulate(set.lib[i], &s.sim, &set.res[i], &d);
        if (e != PFI_OK) {
            if (set.n > 1)
                cli_error("library %s:", set.name[i]);
            rc = cli_report(e, &d);
        }
    }
    if (rc != PFI_EXIT_OK) {
        sim_set_clear(&set);
        return rc;
    }
    cli_output out;
    if (!cli_output_open(&out, s.output)) {
        rc = PFI_EXIT_OUTPUT;
    } else {
        write_outputs(out.f, &set, &s);
        if (!cli_output_commit(&out))
            rc = PFI_EXIT_OUTPUT;
    }
    const char *plots[2] = {s.plot_gap, s.plot_classes};
    for (int k = 0; k < 2 && rc == PFI_EXIT_OK; k++) {
        if (plots[k] == NULL)
            continue;
        pfi_error e = k == 0 ? pfi_plot_sim_gap(plots[k], set.res[0], &d)
                             : pfi_plot_sim_classes(plots[k], set.res[0], set.lib[0], &d);
        if (e != PFI_OK)
            rc = cli_report(e, &d) == PFI_EXIT_USAGE ? PFI_EXIT_USAGE : PFI_EXIT_OUTPUT;
    }
    sim_set_clear(&set);
    return rc;
}
