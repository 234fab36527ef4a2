/*
 * pfi fit — linear PFI predictors from telemetry, validated LOO and LOCO (paper §5);
 * pfi predict — apply a saved predictor.
 */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "pfi/csv.h"
#include "pfi/featmap.h"
#include "pfi/fit.h"
#include "pfi/groups.h"
#include "pfi/reduce.h"
#include "pfi/telemetry.h"

#define MAX_SETS 16

static void fit_usage(FILE *f)
{
    fprintf(f,
            "usage: pfi fit [OPTIONS] INPUT\n"
            "\n"
            "Fit PFI from reference-run telemetry with ordinary least squares and validate it\n"
            "leave-one-out (LOO) and leave-one-cluster-out (LOCO, cluster = job class), as the\n"
            "paper's §5. INPUT is a dataset directory (PFI computed, features from each group's\n"
            "uncapped run) or a groups CSV (group, job_class, pfi, feature columns).\n"
            "\n"
            "options:\n"
            "  --features LIST        comma-separated features of one model; 'A*B' is a product.\n"
            "                         Repeat to compare feature sets side by side. Default: the\n"
            "                         DRAM copy product " PFI_DRAM_COPY_PRODUCT "\n"
            "  -m, --model FILE       write the first feature set's model as JSON (atomically)\n"
            "  --pfi-column COL       groups CSV: the PFI column (pfi, else pfi_ratio)\n"
            "  --feature-glob GLOB    dataset: feature columns (dcgm_*)\n"
            "  --format table|csv|json  (table)\n"
            "  -o, --output FILE      write the comparison there instead of stdout\n"
            "  -h, --help             this help\n"
            "\n"
            "Scores pool the held-out predictions: R2 = 1 - SSE/SST (can be negative), RMSE, MAE,\n"
            "Spearman rho of predictions against PFI. 'undefined' when a fold cannot be fitted.\n"
            "Exit codes: 0 success, 1 bad or missing input, 2 bad command line,\n"
            "3 output not written, 4 internal error.\n");
}

static const struct option fit_options[] = {
    {"features", required_argument, NULL, 'f'},
    {"model", required_argument, NULL, 'm'},
    {"pfi-column", required_argument, NULL, 'P'},
    {"feature-glob", required_argument, NULL, 'G'},
    {"format", required_argument, NULL, 'F'},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Split a comma-separated list in place into names[]; returns the count (0: bad). */
static size_t split(char *s, char **names, size_t max)
{
    size_t n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == max)
            return 0;
        names[n++] = tok;
    }
    return n;
}

/* v with 3 decimals, or "undefined". */
static void fmt(char *buf, size_t len, double v)
{
    snprintf(buf, len, "%.*s", (int)len - 1, cli_num(v, 'f', 3, "undefined").s);
}

/* pfi fit's command line, parsed. */
typedef struct fit_args {
    char *sets_text[MAX_SETS]; /* each --features list (argv's text, or the default) */
    size_t n_sets;
    const char *model_path, *pfi_column, *glob, *format, *output;
    const char *input;
} fit_args;

/* Phase 1 of pfi fit, the options. An exit code, -1 after --help. */
static int parse_fit_args(int argc, char **argv, fit_args *a)
{
    memset(a, 0, sizeof *a);
    a->format = "table";
    const cli_opt table[] = {
        {.c = 'm', .kind = CLI_OPT_TEXT, .dst = &a->model_path},
        {.c = 'P', .kind = CLI_OPT_TEXT, .dst = &a->pfi_column},
        {.c = 'G', .kind = CLI_OPT_TEXT, .dst = &a->glob},
        {.c = 'F', .kind = CLI_OPT_TEXT, .dst = &a->format},
        {.c = 'o', .kind = CLI_OPT_TEXT, .dst = &a->output},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hm:o:", fit_options, NULL)) != -1) {
        const cli_opt *o = cli_opt_find(table, sizeof table / sizeof table[0], c);
        if (o != NULL) {
            cli_opt_take(o, optarg);
            continue;
        }
        switch (c) {
        case 'h':
            fit_usage(stdout);
            return -1;
        case 'f':
            if (a->n_sets == MAX_SETS) {
                cli_error("--features: at most %d sets", MAX_SETS);
                return PFI_EXIT_USAGE;
            }
            a->sets_text[a->n_sets++] = optarg;
            break;
        default:
            return cli_usage_getopt(fit_options, "hm:o:", c, argv);
        }
    }
    if (strcmp(a->format, "table") && strcmp(a->format, "csv") && strcmp(a->format, "json")) {
        return cli_usage_bad_value("format", a->format, "table, csv or json");
    }
    if (argc - optind != 1) {
        cli_error("expected one INPUT (a dataset directory or a groups CSV)");
        return PFI_EXIT_USAGE;
    }
    a->input = argv[optind];
    int orc;
    if ((orc = cli_output_not_input(a->output, a->input)) != PFI_EXIT_OK ||
        (orc = cli_output_not_input(a->model_path, a->input)) != PFI_EXIT_OK)
        return orc;
    static char default_set[] = PFI_DRAM_COPY_PRODUCT;
    if (a->n_sets == 0)
        a->sets_text[a->n_sets++] = default_set;
    return PFI_EXIT_OK;
}

/* Phase 2: one model per feature set, fitted on g and validated; labels[s] is set s's text.
 * Both arrays hold a->n_sets entries, owned by the caller whatever the outcome (NULL where
 * none was made). An exit code. */
static int build_models(const fit_args *a, pfi_groups *g, pfi_fit_model **models, char **labels)
{
    int rc = PFI_EXIT_OK;
    for (size_t s = 0; s < a->n_sets && rc == PFI_EXIT_OK; s++) {
        labels[s] = strdup(a->sets_text[s]);
        char *copy = strdup(a->sets_text[s]);
        char *names[PFI_FIT_MAX_FEATURES];
        size_t p = copy ? split(copy, names, PFI_FIT_MAX_FEATURES) : 0;
        if (labels[s] == NULL || copy == NULL) {
            rc = PFI_EXIT_INTERNAL;
        } else if (p == 0) {
            cli_error("--features '%s': expected 1 to %d comma-separated names", a->sets_text[s],
                      PFI_FIT_MAX_FEATURES);
            rc = PFI_EXIT_USAGE;
        } else {
            pfi_diag d;
            pfi_diag_clear(&d);
            pfi_error e = pfi_fit_model_build(g, (const char *const *)names, p, &models[s], &d);
            if (e == PFI_ERR_INVALID_ARGUMENT) {
                cli_error("features %s: %s", a->sets_text[s], d.message);
                rc = PFI_EXIT_DATA;
            } else if (e != PFI_OK) {
                rc = cli_report(e, &d);
            }
        }
        free(copy);
    }
    return rc;
}

/* One model's row of the comparison, in the table format: its scores, then its equation. */
static void write_fit_table_row(FILE *f, const char *label, const pfi_fit_model *m,
                                const double vals[8])
{
    char v[8][32];
    for (int k = 0; k < 8; k++)
        fmt(v[k], sizeof v[k], vals[k]);
    fprintf(f, "  %-44s %3zu %6s | %6s %6s %6s %6s | %6s %6s %6s %6s\n", label, m->n,
            cli_num(m->r2, 'f', 3, "undefined").s, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    fprintf(f, "      PFI = %s", cli_num(m->coef[0], 'g', 4, "undefined").s);
    for (size_t j = 0; j < m->p; j++) {
        if (isfinite(m->coef[j + 1]))
            fprintf(f, " %+.4g*%s", m->coef[j + 1], m->features[j]);
        else
            fprintf(f, " + undefined*%s", m->features[j]);
    }
    fprintf(f, "\n");
}

/* The same row in CSV: label, n, r2, the 8 scores, intercept, "coefficients". */
static void write_fit_csv_row(FILE *f, const char *label, const pfi_fit_model *m,
                              const double vals[8])
{
    fprintf(f, "\"%s\",%zu,", label, m->n);
    cli_put_num(f, m->r2, 17, "");
    for (int k = 0; k < 8; k++) {
        fputc(',', f);
        cli_put_num(f, vals[k], 17, "");
    }
    fputc(',', f);
    cli_put_num(f, m->coef[0], 17, "");
    fputs(",\"", f);
    for (size_t j = 0; j < m->p; j++) {
        fputs(j ? " " : "", f);
        cli_put_num(f, m->coef[j + 1], 17, "");
    }
    fputs("\"\n", f);
}

/* The same row as a JSON object, followed by a comma unless last. */
static void write_fit_json_row(FILE *f, const char *label, const pfi_fit_model *m,
                               const double vals[8], bool last)
{
    fputs("  {\"features\": ", f);
    cli_put_json_text(f, label); /* feature names from a file: quoted, invalid UTF-8 U+FFFD */
    fprintf(f, ", \"n\": %zu, \"r2\": ", m->n);
    cli_put_num(f, m->r2, 17, "null");
    static const char *const keys[] = {"loo_r2",  "loo_rmse",  "loo_mae",  "loo_spearman",
                                       "loco_r2", "loco_rmse", "loco_mae", "loco_spearman"};
    for (int k = 0; k < 8; k++) {
        fprintf(f, ", \"%s\": ", keys[k]);
        cli_put_num(f, vals[k], 17, "null");
    }
    fprintf(f, "}%s\n", last ? "" : ",");
}

/* Phase 3: the comparison of the models, in format, on f. */
static void write_comparison(FILE *f, const char *format, const pfi_groups *g,
                             pfi_fit_model *const *models, char *const *labels, size_t n_sets)
{
    if (!strcmp(format, "table")) {
        fprintf(f, "PFI predictors (OLS) on %zu sweep group%s; LOCO cluster = job class\n\n", g->n,
                g->n == 1 ? "" : "s");
        fprintf(f, "  %-44s %3s %6s | %-27s | %-27s\n", "features", "n", "R2",
                "LOO  R2     RMSE   MAE  rho", "LOCO R2     RMSE   MAE  rho");
    } else if (!strcmp(format, "csv")) {
        fprintf(f, "features,n,r2,loo_r2,loo_rmse,loo_mae,loo_spearman,loco_r2,loco_rmse,"
                   "loco_mae,loco_spearman,intercept,coefficients\n");
    } else {
        fputs("[\n", f);
    }
    for (size_t s = 0; s < n_sets; s++) {
        const pfi_fit_model *m = models[s];
        double vals[8] = {m->loo.r2,  m->loo.rmse,  m->loo.mae,  m->loo.rho,
                          m->loco.r2, m->loco.rmse, m->loco.mae, m->loco.rho};
        if (!strcmp(format, "table"))
            write_fit_table_row(f, labels[s], m, vals);
        else if (!strcmp(format, "csv"))
            write_fit_csv_row(f, labels[s], m, vals);
        else
            write_fit_json_row(f, labels[s], m, vals, s + 1 == n_sets);
    }
    if (!strcmp(format, "json"))
        fputs("]\n", f);
}

/* pfi fit: the options, the groups of INPUT, a model per feature set, their comparison, the
 * first model saved (-m). */
int cmd_fit(int argc, char **argv)
{
    fit_args a;
    int rc = parse_fit_args(argc, argv, &a);
    if (rc != PFI_EXIT_OK)
        return rc < 0 ? PFI_EXIT_OK : rc;
    pfi_groups *g = NULL;
    rc = cli_load_groups(a.input, a.pfi_column, a.glob, &g);
    if (rc != PFI_EXIT_OK)
        return rc;
    pfi_fit_model *models[MAX_SETS] = {0};
    char *labels[MAX_SETS] = {0};
    rc = build_models(&a, g, models, labels);
    cli_output out = {0};
    if (rc == PFI_EXIT_OK && !cli_output_open(&out, a.output))
        rc = PFI_EXIT_OUTPUT;
    if (rc == PFI_EXIT_OK) {
        write_comparison(out.f, a.format, g, models, labels, a.n_sets);
        if (!cli_output_commit(&out))
            rc = PFI_EXIT_OUTPUT;
    }
    if (rc == PFI_EXIT_OK && a.model_path != NULL) {
        pfi_diag d;
        pfi_diag_clear(&d);
        pfi_error e = pfi_fit_model_save(models[0], a.model_path, &d);
        if (e != PFI_OK) {
            cli_report(e, &d);
            rc = PFI_EXIT_OUTPUT;
        } else {
            fprintf(stderr, "pfi: model (%s) written to %s\n", labels[0], a.model_path);
        }
    }
    for (size_t s = 0; s < a.n_sets; s++) {
        pfi_fit_model_destroy(models[s]);
        free(labels[s]);
    }
    pfi_groups_destroy(g);
    return rc;
}

static void predict_usage(FILE *f)
{
    fprintf(
        f, "usage: pfi predict --model FILE [OPTIONS] FEATURE=VALUE ...\n"
           "       pfi predict --model FILE [OPTIONS] --telemetry FILE [--telemetry FILE ...]\n"
           "       pfi predict --model FILE [OPTIONS] --db FILE [--group NAME]\n"
           "       pfi predict --model FILE [OPTIONS] --groups INPUT\n"
           "\n"
           "Estimate PFI with a model written by 'pfi fit --model FILE', for one job from its\n"
           "feature values on the command line or from its telemetry (read and reduced as\n"
           "'pfi ingest' does), or for every sweep group of a run store (features of each\n"
           "group's reference run, next to its measured PFI) or of INPUT (a dataset directory,\n"
           "a groups CSV or a run store). Telemetry and stored features are mapped to the\n"
           "model's names by the feature table (man pfi-predict): dram_active ->\n"
           "dcgm_dram_active, mem_copy_util_pct / 100 -> dcgm_mem_copy_util, ... A product\n"
           "feature 'A*B' is computed from A and B. Prints the estimate, its prediction\n"
           "interval, and warns when a feature lies outside the training range.\n"
           "\n"
           "options:\n"
           "  -m, --model FILE       the model (JSON)\n"
           "  --telemetry FILE       one job's telemetry: nvidia-smi CSV / dmon / -q, dcgmi dmon,\n"
           "                         Prometheus scrape; repeat for more files of the same job\n");
    cli_names formats;
    cli_telemetry_format_names(&formats);
    cli_usage_list(f, "  --telemetry-format F   ", 25, 90, &formats, &(cli_list_style){.sep = "|"},
                   " (auto: detected from content, as ingest)");
    fprintf(f, "  --interval S           sampling interval, s, for formats without timestamps\n"
               "  --warmup S             seconds dropped at the start of the telemetry (0)\n"
               "  --fields LIST          --query-gpu field list for CSV files without a header\n"
               "  --db FILE              run store (pfi ingest): every stored group\n"
               "  --group NAME           with --db: only this group\n"
               "  --groups INPUT         every group of INPUT (with its measured PFI)\n"
               "  --level L              prediction interval level (0.95)\n"
               "  --format table|csv|json  output format (table)\n"
               "  -o, --output FILE      write there instead of stdout\n"
               "  -q, --quiet            no telemetry notes\n"
               "  -h, --help             this help\n"
               "\n"
               "Exit codes: 0 success, 1 bad or missing input (a model file out of its ranges, a\n"
               "feature the model needs not in the input file), 2 bad command line (a feature\n"
               "unknown, given twice or missing there), 3 output not written, 4 internal error.\n");
}

enum {
    P_GROUPS = 256,
    P_LEVEL,
    P_FORMAT,
    P_TELEMETRY,
    P_TFORMAT,
    P_INTERVAL,
    P_WARMUP,
    P_FIELDS,
    P_DB,
    P_GROUP
};

static const struct option predict_options[] = {
    {"model", required_argument, NULL, 'm'},
    {"groups", required_argument, NULL, P_GROUPS},
    {"level", required_argument, NULL, P_LEVEL},
    {"format", required_argument, NULL, P_FORMAT},
    {"output", required_argument, NULL, 'o'},
    {"telemetry", required_argument, NULL, P_TELEMETRY},
    {"telemetry-format", required_argument, NULL, P_TFORMAT},
    {"interval", required_argument, NULL, P_INTERVAL},
    {"warmup", required_argument, NULL, P_WARMUP},
    {"fields", required_argument, NULL, P_FIELDS},
    {"db", required_argument, NULL, P_DB},
    {"group", required_argument, NULL, P_GROUP},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

#define MAX_TELEMETRY 4096

/* One row from FEATURE=VALUE arguments. */
static int groups_from_args(char **args, size_t n, pfi_groups **out)
{
    pfi_groups *g = NULL;
    if (pfi_groups_create(1, &g) != PFI_OK || !(g->names[0] = pfi_strdup("(command line)"))) {
        pfi_groups_destroy(g);
        return PFI_EXIT_INTERNAL;
    }
    for (size_t k = 0; k < n; k++) {
        char *arg = args[k], *eq = strchr(arg, '=');
        double v;
        if (eq == NULL || eq == arg || !cli_parse_double(eq + 1, &v)) {
            pfi_groups_destroy(g);
            return cli_usage_error("expected FEATURE=VALUE with a number, got '%s'", arg);
        }
        *eq = '\0';
        pfi_error e = pfi_groups_set_feature(g, 0, arg, v);
        *eq = '=';
        if (e != PFI_OK) {
            pfi_groups_destroy(g);
            return cli_report(e, NULL);
        }
    }
    *out = g;
    return PFI_EXIT_OK;
}

/* One row from a job's telemetry: read and reduced as `pfi ingest` does, then mapped. */
static int groups_from_telemetry(const char *const *files, size_t n, pfi_telemetry_format fmt,
                                 const pfi_telemetry_options *topt, const pfi_reduce_options *ro,
                                 bool quiet, pfi_groups **out)
{
    pfi_telemetry *tm = NULL;
    pfi_reduced *red = NULL;
    /* a pipe or FIFO copied first, as pfi ingest does: bounded by PFI_MAX_INPUT_BYTES, binary
       refused from its first block (cli.h) */
    (void)cli_telemetry_spool(files, n); /* false: what was not copied is read in place */
    int rc = cli_read_telemetry(files, n, fmt, topt, ro, quiet, "no estimate", NULL, &tm, &red);
    cli_telemetry_unspool();
    if (rc != PFI_EXIT_OK)
        return rc;
    pfi_groups *g = NULL;
    pfi_error e = pfi_groups_create(1, &g);
    if (e == PFI_OK) {
        const char *slash = strrchr(files[0], '/');
        char name[512];
        snprintf(name, sizeof name, "%s%s", slash ? slash + 1 : files[0], n > 1 ? " (+more)" : "");
        if ((g->names[0] = pfi_strdup(name)) == NULL)
            e = PFI_ERR_NOMEM;
    }
    if (e == PFI_OK)
        e = pfi_featmap_apply(g, 0, (const char(*)[64])red->feature_name, red->feature_value,
                              red->n_features);
    if (e == PFI_OK && red->n_features == 0) {
        cli_error("%s: no telemetry features (no field with valid samples after the warm-up)",
                  files[0]);
        rc = PFI_EXIT_DATA;
    } else if (e != PFI_OK) {
        rc = cli_report(e, NULL);
    }
    free(red);
    pfi_telemetry_destroy(tm);
    if (rc != PFI_EXIT_OK) {
        pfi_groups_destroy(g);
        return rc;
    }
    *out = g;
    return PFI_EXIT_OK;
}

/* The model needs spec, which g lacks: say which telemetry field would give it. */
static void explain_missing(const char *spec, const pfi_groups *g, const char *source)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    char *star = strchr(buf, '*');
    const char *parts[2] = {buf, NULL};
    if (star != NULL) { /* a product: its factors are the fields to record */
        *star = '\0';
        parts[1] = star + 1;
    }
    cli_error("the model needs feature '%s', which is not in %s", spec, source);
    for (size_t i = 0; i < 2 && parts[i]; i++) {
        bool have = false;
        for (size_t j = 0; j < g->n_features && !have; j++)
            have = strcmp(g->feature_names[j], parts[i]) == 0;
        if (have)
            continue;
        const pfi_featmap_entry *m = pfi_featmap_by_predictor(parts[i]);
        if (m != NULL && m->dcgm_id > 0)
            cli_error("  '%s' comes from telemetry field %s (DCGM field %d, %s): record it",
                      parts[i], m->reduced, m->dcgm_id, m->reduced_unit);
        else
            cli_error("  '%s' is not in the input and not in the feature table", parts[i]);
    }
}

/* pfi predict's command line, parsed. */
typedef struct predict_args {
    const char *model_path, *groups_in, *format, *output;
    const char *db, *group;
    const char *tel[MAX_TELEMETRY];
    size_t n_tel;
    bool quiet;
    double level; /* prediction interval level */
    pfi_telemetry_format tfmt;
    pfi_telemetry_options topt;
    pfi_reduce_options ro;
    char **features; /* the FEATURE=VALUE arguments (argv's) */
    size_t n_features;
} predict_args;

/* Phase 1 of pfi predict, the options, then whether they name one source of groups. An exit
 * code, -1 after --help. */
static int parse_predict_args(int argc, char **argv, predict_args *a)
{
    memset(a, 0, sizeof *a);
    a->format = "table";
    a->level = 0.95;
    a->tfmt = PFI_TELEMETRY_AUTO;
    a->topt.keep_series = true;
    pfi_reduce_options_init(&a->ro);
    const cli_opt table[] = {
        {.c = 'm', .kind = CLI_OPT_TEXT, .dst = &a->model_path},
        {.c = 'q', .kind = CLI_OPT_FLAG, .dst = &a->quiet},
        {.c = 'o', .kind = CLI_OPT_TEXT, .dst = &a->output},
        {.c = P_GROUPS, .kind = CLI_OPT_TEXT, .dst = &a->groups_in},
        {.c = P_DB, .kind = CLI_OPT_TEXT, .dst = &a->db},
        {.c = P_GROUP, .kind = CLI_OPT_TEXT, .dst = &a->group},
        {.c = P_FIELDS, .kind = CLI_OPT_TEXT, .dst = &a->topt.csv_fields},
        {.c = P_FORMAT, .kind = CLI_OPT_TEXT, .dst = &a->format},
        {.c = P_LEVEL,
         .kind = CLI_OPT_DOUBLE,
         .dst = &a->level,
         .lo = 0,
         .lo_open = true,
         .hi = 1,
         .hi_open = true,
         .error = "a number in (0, 1)"},
        {.c = P_INTERVAL,
         .kind = CLI_OPT_DOUBLE,
         .dst = &a->topt.interval_s,
         .lo = 0,
         .hi = HUGE_VAL,
         .error = "a number >= 0"},
        {.c = P_WARMUP,
         .kind = CLI_OPT_DOUBLE,
         .dst = &a->ro.warmup_s,
         .lo = 0,
         .hi = HUGE_VAL,
         .error = "a number >= 0"},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hm:o:q", predict_options, NULL)) != -1) {
        const cli_opt *o = cli_opt_find(table, sizeof table / sizeof table[0], c);
        if (o != NULL) {
            if (!cli_opt_take(o, optarg)) {
                cli_opt_complain(predict_options, o, optarg);
                return PFI_EXIT_USAGE;
            }
            continue;
        }
        switch (c) {
        case 'h':
            predict_usage(stdout);
            return -1;
        case P_TELEMETRY:
            if (a->n_tel == MAX_TELEMETRY) {
                cli_error("--telemetry: at most %d files", MAX_TELEMETRY);
                return PFI_EXIT_USAGE;
            }
            a->tel[a->n_tel++] = optarg;
            break;
        case P_TFORMAT:
            if (!pfi_telemetry_format_parse(optarg, &a->tfmt)) {
                cli_error("--telemetry-format: unknown telemetry format '%s'", optarg);
                return PFI_EXIT_USAGE;
            }
            break;
        default:
            return cli_usage_getopt(predict_options, "hm:o:q", c, argv);
        }
    }
    if (strcmp(a->format, "table") && strcmp(a->format, "csv") && strcmp(a->format, "json")) {
        pfi_telemetry_format unused;
        if (pfi_telemetry_format_parse(a->format, &unused))
            cli_error("--format is the output format (table, csv or json); for the telemetry "
                      "format use --telemetry-format %s",
                      a->format);
        else
            cli_usage_bad_value("format", a->format, "table, csv or json");
        return PFI_EXIT_USAGE;
    }
    if (a->model_path == NULL) {
        cli_error("--model FILE is required (write one with 'pfi fit --model FILE')");
        return PFI_EXIT_USAGE;
    }
    a->features = argv + optind;
    a->n_features = (size_t)(argc - optind);
    int orc;
    if ((orc = cli_output_not_input(a->output, a->model_path)) != PFI_EXIT_OK ||
        (orc = cli_output_not_input(a->output, a->groups_in)) != PFI_EXIT_OK ||
        (orc = cli_output_not_input(a->output, a->db)) != PFI_EXIT_OK)
        return orc;
    int n_sources = (a->groups_in != NULL) + (a->n_features > 0) + (a->n_tel > 0) + (a->db != NULL);
    if (n_sources != 1) {
        cli_error("give one of FEATURE=VALUE arguments, --telemetry FILE, --db FILE "
                  "or --groups INPUT");
        return PFI_EXIT_USAGE;
    }
    if (a->group != NULL && a->db == NULL) {
        cli_error("--group NAME needs --db FILE");
        return PFI_EXIT_USAGE;
    }
    return PFI_EXIT_OK;
}

/* Phase 2: the groups to estimate, from INPUT, the store, the telemetry or the command line.
 * *source names where they came from, for messages. An exit code; *g owned by the caller. */
static int load_predict_groups(const predict_args *a, pfi_diag *d, pfi_groups **g,
                               const char **source)
{
    int rc = PFI_EXIT_OK;
    *source = "the input";
    if (a->groups_in != NULL) {
        rc = cli_load_groups(a->groups_in, NULL, NULL, g);
    } else if (a->db != NULL) {
        *source = "the stored reference runs";
        pfi_error e = pfi_groups_from_store(a->db, NULL, a->group, g, d);
        if (e == PFI_ERR_EMPTY) {
            cli_error("%s: %s", a->db, d->message);
            rc = PFI_EXIT_DATA;
        } else if (e != PFI_OK) {
            rc = cli_report(e, d);
        }
    } else if (a->n_tel > 0) {
        *source = "the telemetry";
        rc = groups_from_telemetry(a->tel, a->n_tel, a->tfmt, &a->topt, &a->ro, a->quiet, g);
    } else {
        *source = "the command line";
        rc = groups_from_args(a->features, a->n_features, g);
    }
    return rc;
}

/* Whether name is one of the model's features or a factor of one of its products. */
static bool model_uses(const pfi_fit_model *m, const char *name)
{
    size_t n = strlen(name);
    for (size_t j = 0; j < m->p; j++) {
        const char *f = m->features[j], *star = strchr(f, '*');
        if (strcmp(f, name) == 0 || (star && (size_t)(star - f) == n && !strncmp(f, name, n)) ||
            (star && strcmp(star + 1, name) == 0))
            return true;
    }
    return false;
}

/* FEATURE=VALUE names the model does not use and the feature table does not know are
 * refused (a typo would otherwise be ignored while the estimate uses another value). */
static int check_feature_names(const pfi_fit_model *m, char **args, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        char name[256];
        const char *eq = strchr(args[k], '=');
        size_t len = eq ? (size_t)(eq - args[k]) : strlen(args[k]);
        snprintf(name, sizeof name, "%.*s", (int)(len < 255 ? len : 255), args[k]);
        for (size_t q = 0; q < k; q++) { /* the same feature twice: which value is meant? */
            const char *eq2 = strchr(args[q], '=');
            size_t len2 = eq2 ? (size_t)(eq2 - args[q]) : strlen(args[q]);
            if (len2 == len && !strncmp(args[q], args[k], len)) {
                cli_error("feature '%s' is given twice ('%s' and '%s'): give each feature once",
                          name, args[q], args[k]);
                return PFI_EXIT_USAGE;
            }
        }
        double lo, hi;
        bool known = pfi_featmap_range(name, &lo, &hi);
        if (!model_uses(m, name) && !known) {
            cli_error("unknown feature '%s': the model uses:", name);
            for (size_t j = 0; j < m->p; j++)
                cli_error("  %s", m->features[j]);
            return PFI_EXIT_USAGE;
        }
        double v;
        if (known && eq != NULL && cli_parse_double(eq + 1, &v) && !(v >= lo && v <= hi)) {
            cli_error("feature %s = %s is outside its physical range [%g, %g]%s", name, eq + 1, lo,
                      hi,
                      hi == 1 && v > 1 && v <= 100
                          ? " (a percent given where a fraction 0..1 is expected?)"
                          : "");
            return PFI_EXIT_USAGE;
        }
    }
    return PFI_EXIT_OK;
}

/* A feature value outside its physical range (a fraction above 1, a negative power: a unit
 * mix-up, a percent given as a fraction's place) is refused, naming the group, the feature
 * and the range (pfi_featmap_range). */
static int check_feature_ranges(const pfi_fit_model *m, const pfi_groups *g, const size_t *idx,
                                const char *source)
{
    for (size_t j = 0; j < m->p; j++) {
        double lo, hi;
        if (!pfi_featmap_range(m->features[j], &lo, &hi))
            continue;
        for (size_t i = 0; i < g->n; i++) {
            double x = g->features[i * g->n_features + idx[j]];
            if (!isnan(x) && !(x >= lo && x <= hi)) {
                cli_error("%s: group '%s': feature %s = %.6g is outside its physical range "
                          "[%g, %g]%s",
                          source, g->names[i], m->features[j], x, lo, hi,
                          hi == 1 && x > 1 && x <= 100
                              ? " (a percent given where a fraction 0..1 is expected?)"
                              : "");
                return strcmp(source, "the command line") == 0 ? PFI_EXIT_USAGE : PFI_EXIT_DATA;
            }
        }
    }
    return PFI_EXIT_OK;
}

/* Phase 3: idx[j], the column of g holding the model's feature j; the first one missing is
 * explained (exit 1). */
/* A model feature the source lacks: a usage error (2) when the features came from the command
 * line (like an unknown name there), a data error (1) when they came from a file or database. */
static int resolve_features(const pfi_fit_model *m, pfi_groups *g, const char *source, size_t *idx,
                            bool from_args)
{
    for (size_t j = 0; j < m->p; j++) {
        if (pfi_groups_resolve(g, m->features[j], &idx[j]) != PFI_OK) {
            explain_missing(m->features[j], g, source);
            return from_args ? PFI_EXIT_USAGE : PFI_EXIT_DATA;
        }
    }
    return PFI_EXIT_OK;
}

/* One group's estimate: PFI and its prediction interval (NaN when a feature is missing). */
typedef struct estimate {
    double yhat, lo, hi;
    bool missing, outside; /* a feature missing; a feature outside the training range */
} estimate;

static void write_estimate_table(FILE *f, int w, const char *name, const estimate *e, double pfi,
                                 bool measured)
{
    char est[32], iv[48], meas[32];
    fmt(est, sizeof est, e->yhat);
    if (!isfinite(e->lo) || !isfinite(e->hi))
        snprintf(iv, sizeof iv, "-");
    else
        snprintf(iv, sizeof iv, "[%.3f, %.3f]", e->lo, e->hi);
    fmt(meas, sizeof meas, pfi);
    char safe[1024]; /* a control character in a name never reaches the terminal raw */
    fprintf(f, "  %-*s %9s  %-19s %9s  %s\n", w, cli_safe(safe, sizeof safe, name, strlen(name)),
            est, iv, measured ? meas : "-",
            e->missing     ? "a feature is missing"
            : e->yhat <= 0 ? "below PFI's physical range (> 0): not a PFI"
            : e->outside   ? "outside training range"
                           : "");
}

static void write_estimate_csv(FILE *f, const char *name, const estimate *e, double level,
                               double pfi)
{
    pfi_csv_write_field(f, name); /* quoted as CSV needs, the exact bytes */
    double vals[] = {e->yhat, e->lo, e->hi, level, pfi};
    for (int k = 0; k < 5; k++) {
        fputc(',', f);
        cli_put_num(f, vals[k], 17, "");
    }
    fprintf(f, ",%d\n", e->outside ? 1 : 0);
}

static void write_estimate_json(FILE *f, const char *name, const estimate *e, double level,
                                double pfi, bool last)
{
    /* the name as a JSON string, escaped by jansson (invalid UTF-8 as U+FFFD: cli_json_text) */
    json_t *jn = cli_json_text(name);
    char *js = jn != NULL ? json_dumps(jn, JSON_ENCODE_ANY) : NULL;
    json_decref(jn);
    fprintf(f, "  {\"group\": %s", js != NULL ? js : "null");
    free(js);
    static const char *const keys[] = {"pfi_estimate", "pi_lo", "pi_hi", "level", "pfi_measured"};
    double vals[] = {e->yhat, e->lo, e->hi, level, pfi};
    for (int k = 0; k < 5; k++) {
        fprintf(f, ", \"%s\": ", keys[k]);
        cli_put_num(f, vals[k], 17, "null");
    }
    fprintf(f, ", \"outside_training_range\": %s}%s\n", e->outside ? "true" : "false",
            last ? "" : ",");
}

/* Phase 4: every group's estimate in a->format on f (the table ends with the feature values
 * of a single job and the model's summary). Returns how many estimates extrapolate. */
static size_t write_estimates(FILE *f, const predict_args *a, const pfi_fit_model *m,
                              const pfi_groups *g, const size_t *idx, bool measured)
{
    size_t outside_count = 0, nonphysical = 0;
    /* the group column as wide as the longest name (names are not cut) */
    int w = 32;
    for (size_t i = 0; i < g->n; i++)
        if (g->names[i] != NULL && strlen(g->names[i]) > (size_t)w)
            w = strlen(g->names[i]) > 256 ? 256 : (int)strlen(g->names[i]);
    if (!strcmp(a->format, "table"))
        fprintf(f, "  %-*s %9s  %-19s %9s  %s\n", w, "group", "PFI est", "interval", "measured",
                "note");
    else if (!strcmp(a->format, "csv"))
        fprintf(f, "group,pfi_estimate,pi_lo,pi_hi,level,pfi_measured,outside_training_range\n");
    else
        fputs("[\n", f);
    for (size_t i = 0; i < g->n; i++) {
        double x0[PFI_FIT_MAX_FEATURES];
        estimate e = {.yhat = NAN, .lo = NAN, .hi = NAN};
        for (size_t j = 0; j < m->p; j++) {
            x0[j] = g->features[i * g->n_features + idx[j]];
            e.missing = e.missing || isnan(x0[j]);
        }
        if (!e.missing)
            pfi_fit_model_predict(m, x0, a->level, &e.yhat, &e.lo, &e.hi, &e.outside);
        outside_count += e.outside;
        nonphysical += !e.missing && e.yhat <= 0;
        if (!strcmp(a->format, "table"))
            write_estimate_table(f, w, g->names[i], &e, g->pfi[i], measured);
        else if (!strcmp(a->format, "csv"))
            write_estimate_csv(f, g->names[i], &e, a->level, g->pfi[i]);
        else
            write_estimate_json(f, g->names[i], &e, a->level, g->pfi[i], i + 1 == g->n);
    }
    if (!strcmp(a->format, "json"))
        fputs("]\n", f);
    if (!strcmp(a->format, "table")) {
        if (g->n == 1) { /* one job: show the feature values the estimate used */
            fprintf(f, "\nfeatures:");
            for (size_t j = 0; j < m->p; j++)
                fprintf(f, "%s %s = %s", j ? "," : "", m->features[j],
                        cli_num(g->features[idx[j]], 'g', 6, "missing").s);
            fputc('\n', f);
        }
        fprintf(f, "%smodel: %s; %.0f%% prediction intervals; trained on %zu groups\n",
                g->n == 1 ? "" : "\n", a->model_path, a->level * 100, m->n);
    }
    if (nonphysical > 0) /* PFI is a ratio of two positive reductions (DESIGN.md) */
        cli_error("warning: %zu estimate%s at or below 0, outside PFI's physical range (> 0): the "
                  "model is extrapolating or does not fit these jobs",
                  nonphysical, nonphysical == 1 ? " is" : "s are");
    return outside_count;
}

/* pfi predict: the options, the model, the groups to estimate, their features, the
 * estimates. */
int cmd_predict(int argc, char **argv)
{
    predict_args a;
    int rc = parse_predict_args(argc, argv, &a);
    if (rc != PFI_EXIT_OK)
        return rc < 0 ? PFI_EXIT_OK : rc;
    pfi_fit_model *m = NULL;
    pfi_diag d;
    pfi_diag_clear(&d);
    if ((rc = cli_load_model(a.model_path, &m)) != PFI_EXIT_OK)
        return rc;
    pfi_groups *g = NULL;
    const char *source;
    bool measured = a.groups_in != NULL || a.db != NULL;
    rc = load_predict_groups(&a, &d, &g, &source);
    size_t idx[PFI_FIT_MAX_FEATURES];
    if (rc == PFI_EXIT_OK && a.n_features > 0 && a.groups_in == NULL && a.db == NULL &&
        a.n_tel == 0)
        rc = check_feature_names(m, a.features, a.n_features);
    if (rc == PFI_EXIT_OK)
        rc = resolve_features(m, g, source, idx,
                              a.n_features > 0 && a.groups_in == NULL && a.db == NULL &&
                                  a.n_tel == 0);
    if (rc == PFI_EXIT_OK)
        rc = check_feature_ranges(m, g, idx, source);
    cli_output out = {0};
    if (rc == PFI_EXIT_OK && !cli_output_open(&out, a.output))
        rc = PFI_EXIT_OUTPUT;
    if (rc == PFI_EXIT_OK) {
        size_t outside_count = write_estimates(out.f, &a, m, g, idx, measured);
        if (!cli_output_commit(&out))
            rc = PFI_EXIT_OUTPUT;
        if (outside_count > 0)
            cli_error("warning: %zu estimate%s extrapolate%s beyond the model's training range",
                      outside_count, outside_count == 1 ? "" : "s", outside_count == 1 ? "s" : "");
    }
    pfi_groups_destroy(g);
    pfi_fit_model_destroy(m);
    return rc;
}
