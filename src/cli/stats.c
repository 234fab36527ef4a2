/*
 * pfi stats — the paper's statistics over analysed sweep groups (§4, App. C–D), and
 * pfi stats compare — two PFI tables on matched groups.
 */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/groups.h"
#include "pfi/stats.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: pfi stats [OPTIONS] INPUT\n"
        "       pfi stats compare [OPTIONS] A B\n"
        "\n"
        "The paper's statistics over analysed sweep groups. INPUT is a dataset directory (PFI\n"
        "computed, features from each group's uncapped run) or a groups CSV (group, job_class,\n"
        "pfi, feature columns). Prints: PFI per class; Kruskal-Wallis across classes (tie-\n"
        "corrected, chi-square p); Dunn pairs with Holm-Bonferroni; Spearman rho of PFI with\n"
        "every feature, Benjamini-Hochberg q across features; the leverage sensitivity table\n"
        "(drop the highest-leverage group of the predictor, recompute rho, repeat); Spearman\n"
        "within each class.\n"
        "'compare A B' matches the groups of two tables by name and prints Spearman rho of\n"
        "their PFIs and the median relative difference (B - A)/A (e.g. two accelerators, or\n"
        "a fine vs a coarse cap grid).\n"
        "\n"
        "options:\n"
        "  --predictor F          feature of the sensitivity table (" PFI_DRAM_COPY_PRODUCT ")\n"
        "  --features LIST        extra comma-separated features, 'A*B' products allowed\n"
        "  --alpha A              significance level for the marks (0.05)\n"
        "  --pfi-column COL       groups CSV: the PFI column (pfi, else pfi_ratio)\n"
        "  --feature-glob GLOB    dataset: feature columns (dcgm_*)\n"
        "  --groups-out FILE      also write the groups table (CSV) for later runs\n"
        "  -o, --output FILE      write there instead of stdout\n"
        "  -h, --help             this help\n"
        "\n"
        "'undefined' marks a statistic that does not exist for the data (e.g. a constant\n"
        "feature has no rank correlation). Exit codes: 0 success, 1 bad or missing input,\n"
        "2 bad command line, 3 output not written, 4 internal error.\n");
}

static const struct option options[] = {
    {"predictor", required_argument, NULL, 'p'}, {"features", required_argument, NULL, 'f'},
    {"alpha", required_argument, NULL, 'a'},     {"pfi-column", required_argument, NULL, 'P'},
    {"feature-glob", required_argument, NULL, 'G'}, {"groups-out", required_argument, NULL, 'g'},
    {"output", required_argument, NULL, 'o'},    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const char *num3(char *buf, size_t len, double v)
{
    if (isnan(v))
        snprintf(buf, len, "undefined");
    else
        snprintf(buf, len, "%.3f", v);
    return buf;
}

static const char *pval(char *buf, size_t len, double v)
{
    if (isnan(v))
        snprintf(buf, len, "undefined");
    else
        snprintf(buf, len, "%.3g", v);
    return buf;
}

/* Rows with a defined PFI and (when col != SIZE_MAX) a present feature. */
static size_t select_rows(const pfi_groups *g, size_t col, const char *cls, double *x, double *y,
                          size_t *rows)
{
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++) {
        if (isnan(g->pfi[i]))
            continue;
        if (cls != NULL && (g->classes[i] == NULL || strcmp(g->classes[i], cls) != 0))
            continue;
        double v = col == SIZE_MAX ? 0 : g->features[i * g->n_features + col];
        if (isnan(v))
            continue;
        if (x)
            x[n] = v;
        if (y)
            y[n] = g->pfi[i];
        if (rows)
            rows[n] = i;
        n++;
    }
    return n;
}

static int report(FILE *f, pfi_groups *g, const char *predictor, double alpha)
{
    size_t n = g->n;
    double *x = malloc((n + 1) * sizeof *x), *y = malloc((n + 1) * sizeof *y);
    double *work = malloc((4 * n + 64) * sizeof *work);
    size_t *order = malloc((n + 1) * sizeof *order), *rows = malloc((n + 1) * sizeof *rows);
    size_t *label = malloc((n + 1) * sizeof *label);
    const char **cls = calloc(n + 1, sizeof *cls);
    int rc = PFI_EXIT_OK;
    char b1[32], b2[32], b3[32], b4[32];
    if (!x || !y || !work || !order || !rows || !label || !cls) {
        rc = PFI_EXIT_INTERNAL;
        goto done;
    }
    /* Classes in order of first appearance. */
    size_t k = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(g->pfi[i]) || g->classes[i] == NULL)
            continue;
        size_t c;
        for (c = 0; c < k && strcmp(cls[c], g->classes[i]); c++)
            ;
        if (c == k)
            cls[k++] = g->classes[i];
        y[m] = g->pfi[i];
        label[m++] = c;
    }
    size_t defined = select_rows(g, SIZE_MAX, NULL, NULL, x, NULL);
    fprintf(f, "PFI statistics over %zu sweep groups (%zu with a defined PFI)\n\n", n, defined);
    double med = pfi_stats_median(x, defined, work);
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < defined; i++) {
        lo = fmin(lo, x[i]);
        hi = fmax(hi, x[i]);
    }
    fprintf(f, "PFI by class\n  %-12s %3s %7s %7s %7s\n", "class", "n", "median", "min", "max");
    for (size_t c = 0; c < k; c++) {
        size_t nc = select_rows(g, SIZE_MAX, cls[c], NULL, x, NULL);
        double cl = INFINITY, ch = -INFINITY;
        for (size_t i = 0; i < nc; i++) {
            cl = fmin(cl, x[i]);
            ch = fmax(ch, x[i]);
        }
        fprintf(f, "  %-12s %3zu %7.3f %7.3f %7.3f\n", cls[c], nc,
                pfi_stats_median(x, nc, work + n), cl, ch);
    }
    if (defined > 0)
        fprintf(f, "  %-12s %3zu %7.3f %7.3f %7.3f\n", "all", defined, med, lo, hi);

    if (k >= 1 && m > 0) {
        pfi_kruskal kw;
        if (pfi_stats_kruskal(y, label, m, k, work, order, NULL, &kw) == PFI_OK) {
            fprintf(f, "\nKruskal-Wallis across classes: H = %s, df = %zu, p = %s%s\n",
                    num3(b1, sizeof b1, kw.h), kw.df, pval(b2, sizeof b2, kw.p_value),
                    kw.defined ? (kw.p_value < alpha ? "  (equal classes rejected)" : "")
                               : "");
            if (!kw.defined)
                fprintf(f, "  undefined: %s\n", kw.undefined_reason);
        }
        if (k >= 2) {
            pfi_dunn_pair pairs[64];
            if (k <= 11 && pfi_stats_dunn(y, label, m, k, work, order, pairs) == PFI_OK) {
                fprintf(f, "\nDunn's test, Holm-Bonferroni over %zu pairs\n", k * (k - 1) / 2);
                fprintf(f, "  %-25s %8s %10s %10s\n", "pair", "z", "p", "p (Holm)");
                for (size_t q = 0; q < k * (k - 1) / 2; q++) {
                    char pair[64];
                    snprintf(pair, sizeof pair, "%s vs %s", cls[pairs[q].a], cls[pairs[q].b]);
                    fprintf(f, "  %-25s %8s %10s %10s%s\n", pair, num3(b1, sizeof b1, pairs[q].z),
                            pval(b2, sizeof b2, pairs[q].p_value),
                            pval(b3, sizeof b3, pairs[q].p_holm),
                            pairs[q].p_holm < alpha ? "  *" : "");
                }
            }
        }
    }

    /* Spearman with every feature, BH across features. */
    size_t nf = g->n_features;
    double *rho = malloc((nf + 1) * sizeof *rho), *p = malloc((nf + 1) * sizeof *p);
    double *q = malloc((nf + 1) * sizeof *q);
    size_t *nn = malloc((nf + 1) * sizeof *nn), *pord = malloc((nf + 1) * sizeof *pord);
    if (!rho || !p || !q || !nn || !pord) {
        free(rho); free(p); free(q); free(nn); free(pord);
        rc = PFI_EXIT_INTERNAL;
        goto done;
    }
    for (size_t j = 0; j < nf; j++) {
        nn[j] = select_rows(g, j, NULL, x, y, NULL);
        pfi_spearman s;
        pfi_stats_spearman(x, y, nn[j], work, order, &s);
        rho[j] = s.rho;
        p[j] = s.p_value;
    }
    pfi_stats_bh(p, nf, pord, q);
    fprintf(f, "\nSpearman correlation of PFI with each feature (q: Benjamini-Hochberg over %zu)\n",
            nf);
    fprintf(f, "  %-40s %3s %9s %10s %10s\n", "feature", "n", "rho", "p", "q");
    for (size_t j = 0; j < nf; j++)
        fprintf(f, "  %-40s %3zu %9s %10s %10s%s\n", g->feature_names[j], nn[j],
                num3(b1, sizeof b1, rho[j]), pval(b2, sizeof b2, p[j]), pval(b3, sizeof b3, q[j]),
                q[j] < alpha ? "  *" : "");
    free(rho); free(p); free(q); free(nn); free(pord);

    /* Leverage sensitivity (App. D.5). */
    size_t col;
    if (pfi_groups_resolve(g, predictor, &col) != PFI_OK) {
        fprintf(f, "\nsensitivity: predictor '%s' not in the table\n", predictor);
    } else {
        size_t np = select_rows(g, col, NULL, x, y, rows);
        pfi_ols fit;
        double *h = malloc((np + 1) * sizeof *h);
        bool *dropped = calloc(np + 1, sizeof *dropped);
        double *xs = malloc((np + 1) * sizeof *xs), *ys = malloc((np + 1) * sizeof *ys);
        if (!h || !dropped || !xs || !ys || pfi_stats_ols(x, y, np, 1, &fit) != PFI_OK) {
            rc = PFI_EXIT_INTERNAL;
        } else if (!fit.defined) {
            fprintf(f, "\nsensitivity: the predictor fit is undefined (%s)\n", fit.undefined_reason);
        } else {
            pfi_stats_leverage(&fit, x, np, h);
            fprintf(f, "\nLeverage sensitivity of rho(PFI, %s): drop the highest-leverage group, "
                       "recompute\n", predictor);
            fprintf(f, "  %4s %-32s %8s %4s %9s %10s\n", "step", "dropped", "leverage", "n", "rho",
                    "p");
            for (size_t step = 0;; step++) {
                size_t ns = 0;
                for (size_t i = 0; i < np; i++)
                    if (!dropped[i]) {
                        xs[ns] = x[i];
                        ys[ns++] = y[i];
                    }
                pfi_spearman s;
                pfi_stats_spearman(xs, ys, ns, work, order, &s);
                size_t top = SIZE_MAX;
                for (size_t i = 0; i < np; i++)
                    if (!dropped[i] && (top == SIZE_MAX || h[i] > h[top]))
                        top = i;
                if (step == 0)
                    fprintf(f, "  %4zu %-32s %8s %4zu %9s %10s\n", step, "(none)", "-", ns,
                            num3(b1, sizeof b1, s.rho), pval(b2, sizeof b2, s.p_value));
                if (ns <= 3 || step >= 10 || top == SIZE_MAX)
                    break;
                dropped[top] = true;
                size_t ns2 = ns - 1, w = 0;
                for (size_t i = 0; i < np; i++)
                    if (!dropped[i]) {
                        xs[w] = x[i];
                        ys[w++] = y[i];
                    }
                pfi_stats_spearman(xs, ys, ns2, work, order, &s);
                fprintf(f, "  %4zu %-32.32s %8.3f %4zu %9s %10s\n", step + 1, g->names[rows[top]],
                        h[top], ns2, num3(b1, sizeof b1, s.rho), pval(b2, sizeof b2, s.p_value));
            }
            fprintf(f, "\nWithin-class Spearman rho(PFI, %s)\n", predictor);
            for (size_t c = 0; c < k; c++) {
                size_t nc = select_rows(g, col, cls[c], xs, ys, NULL);
                pfi_spearman s;
                pfi_stats_spearman(xs, ys, nc, work, order, &s);
                fprintf(f, "  %-12s n %3zu  rho %9s  p %10s%s\n", cls[c], nc,
                        num3(b1, sizeof b1, s.rho), pval(b2, sizeof b2, s.p_value),
                        s.defined && s.p_value < alpha ? "  *" : "");
            }
            (void)b4;
        }
        pfi_ols_clear(&fit);
        free(h);
        free(dropped);
        free(xs);
        free(ys);
    }
    fprintf(f, "\n*: significant at alpha = %g (Dunn: Holm-adjusted; features: BH q)\n", alpha);
done:
    free(x); free(y); free(work); free(order); free(rows); free(label); free(cls);
    return rc;
}

static int compare(int argc, char **argv, const char *pfi_column, const char *output)
{
    if (argc != 2) {
        cli_error("stats compare: expected two inputs A B");
        return PFI_EXIT_USAGE;
    }
    pfi_groups *a = NULL, *b = NULL;
    int rc = cli_load_groups(argv[0], pfi_column, NULL, &a);
    if (rc == PFI_EXIT_OK)
        rc = cli_load_groups(argv[1], pfi_column, NULL, &b);
    size_t n = a && b ? (a->n < b->n ? a->n : b->n) : 0;
    double *x = malloc((n + 1) * sizeof *x), *y = malloc((n + 1) * sizeof *y);
    double *rel = malloc((n + 1) * sizeof *rel), *work = malloc((4 * n + 4) * sizeof *work);
    size_t *order = malloc((n + 1) * sizeof *order);
    cli_output out = {0};
    if (rc == PFI_EXIT_OK && (!x || !y || !rel || !work || !order))
        rc = PFI_EXIT_INTERNAL;
    if (rc == PFI_EXIT_OK && !cli_output_open(&out, output))
        rc = PFI_EXIT_OUTPUT;
    if (rc == PFI_EXIT_OK) {
        size_t m = 0;
        for (size_t i = 0; i < a->n; i++)
            for (size_t j = 0; j < b->n && m < n; j++)
                if (!strcmp(a->names[i], b->names[j]) && !isnan(a->pfi[i]) && !isnan(b->pfi[j])) {
                    x[m] = a->pfi[i];
                    y[m] = b->pfi[j];
                    rel[m] = (b->pfi[j] - a->pfi[i]) / a->pfi[i];
                    m++;
                    break;
                }
        pfi_spearman s;
        pfi_stats_spearman(x, y, m, work, order, &s);
        char b1[32], b2[32];
        double md = pfi_stats_median(rel, m, work);
        for (size_t i = 0; i < m; i++)
            rel[i] = y[i] - x[i];
        double mdiff = pfi_stats_median(rel, m, work);
        fprintf(out.f, "matched groups: %zu (A: %zu, B: %zu)\n", m, a->n, b->n);
        fprintf(out.f, "Spearman rho = %s, p = %s\n", num3(b1, sizeof b1, s.rho),
                pval(b2, sizeof b2, s.p_value));
        fprintf(out.f, "median difference B - A = %s; median relative difference (B - A)/A = %s%%\n",
                num3(b1, sizeof b1, mdiff), num3(b2, sizeof b2, 100 * md));
        if (!cli_output_commit(&out))
            rc = PFI_EXIT_OUTPUT;
    }
    free(x); free(y); free(rel); free(work); free(order);
    pfi_groups_destroy(a);
    pfi_groups_destroy(b);
    return rc;
}

int cmd_stats(int argc, char **argv)
{
    const char *predictor = PFI_DRAM_COPY_PRODUCT, *pfi_column = NULL, *glob = NULL,
               *groups_out = NULL, *output = NULL;
    char *extra = NULL;
    double alpha = 0.05;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", options, NULL)) != -1) {
        switch (c) {
        case 'h':
            usage(stdout);
            return PFI_EXIT_OK;
        case 'p': predictor = optarg; break;
        case 'f': extra = optarg; break;
        case 'a':
            if (!cli_parse_double(optarg, &alpha) || alpha <= 0 || alpha >= 1) {
                cli_error("--alpha: expected a number in (0, 1), got '%s'", optarg);
                return PFI_EXIT_USAGE;
            }
            break;
        case 'P': pfi_column = optarg; break;
        case 'G': glob = optarg; break;
        case 'g': groups_out = optarg; break;
        case 'o': output = optarg; break;
        default: return PFI_EXIT_USAGE;
        }
    }
    if (optind < argc && strcmp(argv[optind], "compare") == 0)
        return compare(argc - optind - 1, argv + optind + 1, pfi_column, output);
    if (argc - optind != 1) {
        cli_error("stats: expected one INPUT (a dataset directory or a groups CSV)");
        return PFI_EXIT_USAGE;
    }
    pfi_groups *g = NULL;
    int rc = cli_load_groups(argv[optind], pfi_column, glob, &g);
    if (rc != PFI_EXIT_OK)
        return rc;
    size_t idx;
    /* The default predictor is added when its columns exist; a named one must exist. */
    pfi_error e = pfi_groups_resolve(g, predictor, &idx);
    if (e != PFI_OK && predictor != (const char *)PFI_DRAM_COPY_PRODUCT) {
        cli_error("--predictor: '%s' is not a feature of %s", predictor, argv[optind]);
        rc = PFI_EXIT_DATA;
    }
    if (rc == PFI_EXIT_OK && extra != NULL) {
        char *copy = strdup(extra), *save = NULL;
        for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && rc == PFI_EXIT_OK;
             tok = strtok_r(NULL, ",", &save))
            if (pfi_groups_resolve(g, tok, &idx) != PFI_OK) {
                cli_error("--features: '%s' is not a feature of %s", tok, argv[optind]);
                rc = PFI_EXIT_DATA;
            }
        if (copy == NULL)
            rc = PFI_EXIT_INTERNAL;
        free(copy);
    }
    cli_output out = {0};
    if (rc == PFI_EXIT_OK && !cli_output_open(&out, output))
        rc = PFI_EXIT_OUTPUT;
    if (rc == PFI_EXIT_OK) {
        rc = report(out.f, g, predictor, alpha);
        if (rc == PFI_EXIT_OK) {
            if (!cli_output_commit(&out))
                rc = PFI_EXIT_OUTPUT;
        } else {
            cli_output_abort(&out);
        }
    }
    if (rc == PFI_EXIT_OK && groups_out != NULL) {
        cli_output go;
        if (!cli_output_open(&go, groups_out))
            rc = PFI_EXIT_OUTPUT;
        else if (!pfi_groups_write_csv(g, go.f)) {
            cli_output_abort(&go);
            rc = PFI_EXIT_OUTPUT;
        } else if (!cli_output_commit(&go))
            rc = PFI_EXIT_OUTPUT;
    }
    pfi_groups_destroy(g);
    return rc;
}
