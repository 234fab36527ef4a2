/*
 * pfi fit — linear PFI predictors from telemetry, validated LOO and LOCO (paper §5);
 * pfi predict — apply a saved predictor.
 */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/fit.h"
#include "pfi/featmap.h"
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
    {"features", required_argument, NULL, 'f'}, {"model", required_argument, NULL, 'm'},
    {"pfi-column", required_argument, NULL, 'P'}, {"feature-glob", required_argument, NULL, 'G'},
    {"format", required_argument, NULL, 'F'},    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0},
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

int cmd_fit(int argc, char **argv)
{
    char *sets_text[MAX_SETS];
    size_t n_sets = 0;
    const char *model_path = NULL, *pfi_column = NULL, *glob = NULL, *format = "table",
               *output = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hm:o:", fit_options, NULL)) != -1) {
        switch (c) {
        case 'h':
            fit_usage(stdout);
            return PFI_EXIT_OK;
        case 'f':
            if (n_sets == MAX_SETS) {
                cli_error("--features: at most %d sets", MAX_SETS);
                return PFI_EXIT_USAGE;
            }
            sets_text[n_sets++] = optarg;
            break;
        case 'm': model_path = optarg; break;
        case 'P': pfi_column = optarg; break;
        case 'G': glob = optarg; break;
        case 'F': format = optarg; break;
        case 'o': output = optarg; break;
        default: return PFI_EXIT_USAGE;
        }
    }
    if (strcmp(format, "table") && strcmp(format, "csv") && strcmp(format, "json")) {
        cli_error("--format: expected table, csv or json, got '%s'", format);
        return PFI_EXIT_USAGE;
    }
    if (argc - optind != 1) {
        cli_error("fit: expected one INPUT (a dataset directory or a groups CSV)");
        return PFI_EXIT_USAGE;
    }
    static char default_set[] = PFI_DRAM_COPY_PRODUCT;
    if (n_sets == 0)
        sets_text[n_sets++] = default_set;
    pfi_groups *g = NULL;
    int rc = cli_load_groups(argv[optind], pfi_column, glob, &g);
    if (rc != PFI_EXIT_OK)
        return rc;
    pfi_fit_model *models[MAX_SETS] = {0};
    char *labels[MAX_SETS] = {0};
    for (size_t s = 0; s < n_sets && rc == PFI_EXIT_OK; s++) {
        labels[s] = strdup(sets_text[s]);
        char *copy = strdup(sets_text[s]);
        char *names[PFI_FIT_MAX_FEATURES];
        size_t p = copy ? split(copy, names, PFI_FIT_MAX_FEATURES) : 0;
        if (labels[s] == NULL || copy == NULL) {
            rc = PFI_EXIT_INTERNAL;
        } else if (p == 0) {
            cli_error("--features '%s': expected 1 to %d comma-separated names", sets_text[s],
                      PFI_FIT_MAX_FEATURES);
            rc = PFI_EXIT_USAGE;
        } else {
            pfi_diag d;
            pfi_diag_clear(&d);
            pfi_error e = pfi_fit_model_build(g, (const char *const *)names, p, &models[s], &d);
            if (e == PFI_ERR_INVALID_ARGUMENT) {
                cli_error("features %s: %s", sets_text[s], d.message);
                rc = PFI_EXIT_DATA;
            } else if (e != PFI_OK) {
                rc = cli_report(e, &d);
            }
        }
        free(copy);
    }
    cli_output out = {0};
    if (rc == PFI_EXIT_OK && !cli_output_open(&out, output))
        rc = PFI_EXIT_OUTPUT;
    if (rc == PFI_EXIT_OK) {
        FILE *f = out.f;
        if (!strcmp(format, "table")) {
            fprintf(f, "PFI predictors (OLS) on %zu sweep groups; LOCO cluster = job class\n\n",
                    g->n);
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
            char v[8][32];
            double vals[8] = {m->loo.r2, m->loo.rmse, m->loo.mae, m->loo.rho,
                              m->loco.r2, m->loco.rmse, m->loco.mae, m->loco.rho};
            for (int k = 0; k < 8; k++)
                fmt(v[k], sizeof v[k], vals[k]);
            if (!strcmp(format, "table")) {
                fprintf(f, "  %-44s %3zu %6s | %6s %6s %6s %6s | %6s %6s %6s %6s\n", labels[s],
                        m->n, cli_num(m->r2, 'f', 3, "undefined").s, v[0], v[1], v[2], v[3],
                        v[4], v[5], v[6], v[7]);
                fprintf(f, "      PFI = %s", cli_num(m->coef[0], 'g', 4, "undefined").s);
                for (size_t j = 0; j < m->p; j++) {
                    if (isfinite(m->coef[j + 1]))
                        fprintf(f, " %+.4g*%s", m->coef[j + 1], m->features[j]);
                    else
                        fprintf(f, " + undefined*%s", m->features[j]);
                }
                fprintf(f, "\n");
            } else if (!strcmp(format, "csv")) {
                fprintf(f, "\"%s\",%zu,", labels[s], m->n);
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
            } else {
                fprintf(f, "  {\"features\": \"%s\", \"n\": %zu, \"r2\": ", labels[s], m->n);
                cli_put_num(f, m->r2, 17, "null");
                static const char *const keys[] = {"loo_r2", "loo_rmse", "loo_mae",
                                                   "loo_spearman", "loco_r2", "loco_rmse",
                                                   "loco_mae", "loco_spearman"};
                for (int k = 0; k < 8; k++) {
                    fprintf(f, ", \"%s\": ", keys[k]);
                    cli_put_num(f, vals[k], 17, "null");
                }
                fprintf(f, "}%s\n", s + 1 < n_sets ? "," : "");
            }
        }
        if (!strcmp(format, "json"))
            fputs("]\n", f);
        if (!cli_output_commit(&out))
            rc = PFI_EXIT_OUTPUT;
    }
    if (rc == PFI_EXIT_OK && model_path != NULL) {
        pfi_diag d;
        pfi_diag_clear(&d);
        pfi_error e = pfi_fit_model_save(models[0], model_path, &d);
        if (e != PFI_OK) {
            cli_report(e, &d);
            rc = PFI_EXIT_OUTPUT;
        } else {
            fprintf(stderr, "pfi: model (%s) written to %s\n", labels[0], model_path);
        }
    }
    for (size_t s = 0; s < n_sets; s++) {
        pfi_fit_model_destroy(models[s]);
        free(labels[s]);
    }
    pfi_groups_destroy(g);
    return rc;
}

static void predict_usage(FILE *f)
{
    fprintf(f,
        "usage: pfi predict --model FILE [OPTIONS] FEATURE=VALUE ...\n"
        "       pfi predict --model FILE [OPTIONS] --telemetry FILE [--telemetry FILE ...]\n"
        "       pfi predict --model FILE [OPTIONS] --db FILE [--group NAME]\n"
        "       pfi predict --model FILE [OPTIONS] --groups INPUT\n"
        "\n"
        "Estimate PFI with a model written by 'pfi fit --model FILE', for one job from its\n"
        "feature values on the command line or from its telemetry (read and reduced as\n"
        "'pfi ingest' does), or for every sweep group of a run store (features of each\n"
        "group's reference run, next to its measured PFI) or of INPUT (a dataset directory,\n"
        "a groups CSV or a run store). Telemetry and stored features are mapped to the\n"
        "model's names by the feature table (README: Feature names): dram_active ->\n"
        "dcgm_dram_active, mem_copy_util_pct / 100 -> dcgm_mem_copy_util, ... A product\n"
        "feature 'A*B' is computed from A and B. Prints the estimate, its prediction\n"
        "interval, and warns when a feature lies outside the training range.\n"
        "\n"
        "options:\n"
        "  -m, --model FILE       the model (JSON)\n"
        "  --telemetry FILE       one job's telemetry: nvidia-smi CSV / dmon / -q, dcgmi dmon,\n"
        "                         Prometheus scrape; repeat for more files of the same job\n"
        "  --telemetry-format F   auto|nvidia-smi-csv|dmon|nvidia-smi-q|dcgmi-dmon|prometheus|\n"
        "                         nvidia-smi-xml (auto: detected from content, as ingest)\n"
        "  --interval S           sampling interval, s, for formats without timestamps\n"
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
        "Exit codes: 0 success, 1 bad or missing input (a feature the model needs is not in\n"
        "the input), 2 bad command line, 3 output not written, 4 internal error.\n");
}

enum { P_GROUPS = 256, P_LEVEL, P_FORMAT, P_TELEMETRY, P_TFORMAT, P_INTERVAL, P_WARMUP,
       P_FIELDS, P_DB, P_GROUP };

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
            cli_error("expected FEATURE=VALUE with a number, got '%s'", arg);
            pfi_groups_destroy(g);
            return PFI_EXIT_USAGE;
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
static int groups_from_telemetry(const char *const *files, size_t n, pfi_tm_format fmt,
                                 const pfi_tm_options *topt, const pfi_reduce_options *ro,
                                 bool quiet, pfi_groups **out)
{
    pfi_tm *tm = NULL;
    pfi_reduced *red = NULL;
    int rc = cli_read_telemetry(files, n, fmt, topt, ro, quiet, "no estimate", NULL, &tm, &red);
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
    pfi_tm_destroy(tm);
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

int cmd_predict(int argc, char **argv)
{
    const char *model_path = NULL, *groups_in = NULL, *format = "table", *output = NULL;
    const char *db = NULL, *group = NULL;
    const char *tel[MAX_TELEMETRY];
    size_t n_tel = 0;
    bool quiet = false;
    double level = 0.95;
    pfi_tm_format tfmt = PFI_TM_AUTO;
    pfi_tm_options topt = {.keep_series = true};
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hm:o:q", predict_options, NULL)) != -1) {
        double x;
        switch (c) {
        case 'h':
            predict_usage(stdout);
            return PFI_EXIT_OK;
        case 'm': model_path = optarg; break;
        case 'q': quiet = true; break;
        case P_GROUPS: groups_in = optarg; break;
        case P_DB: db = optarg; break;
        case P_GROUP: group = optarg; break;
        case P_FIELDS: topt.csv_fields = optarg; break;
        case P_LEVEL:
            if (!cli_parse_double(optarg, &level) || level <= 0 || level >= 1) {
                cli_error("--level: expected a number in (0, 1), got '%s'", optarg);
                return PFI_EXIT_USAGE;
            }
            break;
        case P_FORMAT: format = optarg; break;
        case 'o': output = optarg; break;
        case P_TELEMETRY:
            if (n_tel == MAX_TELEMETRY) {
                cli_error("--telemetry: at most %d files", MAX_TELEMETRY);
                return PFI_EXIT_USAGE;
            }
            tel[n_tel++] = optarg;
            break;
        case P_TFORMAT:
            if (!pfi_tm_format_parse(optarg, &tfmt)) {
                cli_error("--telemetry-format: unknown telemetry format '%s'", optarg);
                return PFI_EXIT_USAGE;
            }
            break;
        case P_INTERVAL: case P_WARMUP:
            if (!cli_parse_double(optarg, &x) || x < 0) {
                cli_error("--%s: expected a number >= 0, got '%s'",
                          cli_option_name(predict_options, c), optarg);
                return PFI_EXIT_USAGE;
            }
            if (c == P_INTERVAL)
                topt.interval_s = x;
            else
                ro.warmup_s = x;
            break;
        default: return PFI_EXIT_USAGE;
        }
    }
    if (strcmp(format, "table") && strcmp(format, "csv") && strcmp(format, "json")) {
        pfi_tm_format unused;
        if (pfi_tm_format_parse(format, &unused))
            cli_error("--format is the output format (table, csv or json); for the telemetry "
                      "format use --telemetry-format %s", format);
        else
            cli_error("--format: expected table, csv or json, got '%s'", format);
        return PFI_EXIT_USAGE;
    }
    if (model_path == NULL) {
        cli_error("predict: --model FILE is required (write one with 'pfi fit --model FILE')");
        return PFI_EXIT_USAGE;
    }
    int n_sources = (groups_in != NULL) + (optind < argc) + (n_tel > 0) + (db != NULL);
    if (n_sources != 1) {
        cli_error("predict: give one of FEATURE=VALUE arguments, --telemetry FILE, --db FILE "
                  "or --groups INPUT");
        return PFI_EXIT_USAGE;
    }
    if (group != NULL && db == NULL) {
        cli_error("predict: --group NAME needs --db FILE");
        return PFI_EXIT_USAGE;
    }
    pfi_fit_model *m = NULL;
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = pfi_fit_model_load(model_path, &m, &d);
    if (e != PFI_OK)
        return cli_report(e, &d);
    /* Build a groups table: from INPUT, the store, the telemetry, or the command line. */
    pfi_groups *g = NULL;
    int rc = PFI_EXIT_OK;
    const char *source = "the input";
    bool measured = groups_in != NULL || db != NULL;
    if (groups_in != NULL) {
        rc = cli_load_groups(groups_in, NULL, NULL, &g);
    } else if (db != NULL) {
        source = "the stored reference runs";
        e = pfi_groups_from_store(db, NULL, group, &g, &d);
        if (e == PFI_ERR_EMPTY) {
            cli_error("%s: %s", db, d.message);
            rc = PFI_EXIT_DATA;
        } else if (e != PFI_OK) {
            rc = cli_report(e, &d);
        }
    } else if (n_tel > 0) {
        source = "the telemetry";
        rc = groups_from_telemetry(tel, n_tel, tfmt, &topt, &ro, quiet, &g);
    } else {
        source = "the command line";
        rc = groups_from_args(argv + optind, (size_t)(argc - optind), &g);
    }
    size_t idx[PFI_FIT_MAX_FEATURES];
    for (size_t j = 0; rc == PFI_EXIT_OK && j < m->p; j++) {
        if (pfi_groups_resolve(g, m->features[j], &idx[j]) != PFI_OK) {
            explain_missing(m->features[j], g, source);
            rc = PFI_EXIT_DATA;
        }
    }
    cli_output out = {0};
    if (rc == PFI_EXIT_OK && !cli_output_open(&out, output))
        rc = PFI_EXIT_OUTPUT;
    if (rc == PFI_EXIT_OK) {
        FILE *f = out.f;
        size_t outside_count = 0;
        if (!strcmp(format, "table"))
            fprintf(f, "  %-32s %9s  %-19s %9s  %s\n", "group", "PFI est", "interval", "measured",
                    "note");
        else if (!strcmp(format, "csv"))
            fprintf(f, "group,pfi_estimate,pi_lo,pi_hi,level,pfi_measured,outside_training_range\n");
        else
            fputs("[\n", f);
        for (size_t i = 0; i < g->n; i++) {
            double x0[PFI_FIT_MAX_FEATURES], yhat = NAN, lo = NAN, hi = NAN;
            bool missing = false, outside = false;
            for (size_t j = 0; j < m->p; j++) {
                x0[j] = g->features[i * g->n_features + idx[j]];
                missing = missing || isnan(x0[j]);
            }
            if (!missing)
                pfi_fit_model_predict(m, x0, level, &yhat, &lo, &hi, &outside);
            outside_count += outside;
            if (!strcmp(format, "table")) {
                char est[32], iv[48], meas[32];
                fmt(est, sizeof est, yhat);
                if (!isfinite(lo) || !isfinite(hi))
                    snprintf(iv, sizeof iv, "-");
                else
                    snprintf(iv, sizeof iv, "[%.3f, %.3f]", lo, hi);
                fmt(meas, sizeof meas, g->pfi[i]);
                fprintf(f, "  %-32.32s %9s  %-19s %9s  %s\n", g->names[i], est, iv,
                        measured ? meas : "-",
                        missing ? "a feature is missing" : outside ? "outside training range" : "");
            } else if (!strcmp(format, "csv")) {
                fprintf(f, "\"%s\"", g->names[i]);
                double vals[] = {yhat, lo, hi, level, g->pfi[i]};
                for (int k = 0; k < 5; k++) {
                    fputc(',', f);
                    cli_put_num(f, vals[k], 17, "");
                }
                fprintf(f, ",%d\n", outside ? 1 : 0);
            } else {
                fprintf(f, "  {\"group\": \"%s\"", g->names[i]);
                static const char *const keys[] = {"pfi_estimate", "pi_lo", "pi_hi", "level",
                                                   "pfi_measured"};
                double vals[] = {yhat, lo, hi, level, g->pfi[i]};
                for (int k = 0; k < 5; k++) {
                    fprintf(f, ", \"%s\": ", keys[k]);
                    cli_put_num(f, vals[k], 17, "null");
                }
                fprintf(f, ", \"outside_training_range\": %s}%s\n", outside ? "true" : "false",
                        i + 1 < g->n ? "," : "");
            }
        }
        if (!strcmp(format, "json"))
            fputs("]\n", f);
        if (!strcmp(format, "table")) {
            if (g->n == 1) { /* one job: show the feature values the estimate used */
                fprintf(f, "\nfeatures:");
                for (size_t j = 0; j < m->p; j++)
                    fprintf(f, "%s %s = %s", j ? "," : "", m->features[j],
                            cli_num(g->features[idx[j]], 'g', 6, "missing").s);
                fputc('\n', f);
            }
            fprintf(f, "%smodel: %s; %.0f%% prediction intervals; trained on %zu groups\n",
                    g->n == 1 ? "" : "\n", model_path, level * 100, m->n);
        }
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
