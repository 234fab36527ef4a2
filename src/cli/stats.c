/*
 * pfi stats — the paper's statistics over analysed sweep groups (§4, App. C–D), and
 * pfi stats compare — two PFI tables on matched groups.
 */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "pfi/csv.h"
#include "pfi/groups.h"
#include "pfi/plot.h"
#include "pfi/stats.h"

static void usage(FILE *f)
{
    fprintf(
        f, "usage: pfi stats [OPTIONS] INPUT\n"
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
           "  --format table|csv|json  (table); csv is long: section,item,feature,step,n,\n"
           "                         statistic,value; json holds every section\n"
           "  --plot-class FILE      figure: PFI by class (strip plot, median bars); .png|.svg\n"
           "  --plot-feature FILE    figure: PFI against --predictor with the OLS line and its\n"
           "                         95%% prediction band; .png|.svg\n"
           "  -o, --output FILE      write there instead of stdout\n"
           "  -h, --help             this help\n"
           "\n"
           "'undefined' marks a statistic that does not exist for the data (e.g. a constant\n"
           "feature has no rank correlation). Exit codes: 0 success, 1 bad or missing input,\n"
           "2 bad command line, 3 output not written, 4 internal error.\n");
}

static const struct option options[] = {
    {"predictor", required_argument, NULL, 'p'},    {"features", required_argument, NULL, 'f'},
    {"alpha", required_argument, NULL, 'a'},        {"pfi-column", required_argument, NULL, 'P'},
    {"feature-glob", required_argument, NULL, 'G'}, {"groups-out", required_argument, NULL, 'g'},
    {"output", required_argument, NULL, 'o'},       {"help", no_argument, NULL, 'h'},
    {"format", required_argument, NULL, 'F'},       {"plot-class", required_argument, NULL, 'C'},
    {"plot-feature", required_argument, NULL, 'X'}, {NULL, 0, NULL, 0},
};

/* A figure name must end in .png or .svg (any case), as pfi/plot.h requires. */
static bool figure_name_ok(const char *opt, const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot != NULL && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".svg")))
        return true;
    cli_usage_bad_value(opt, path, "a file name ending in .png or .svg");
    return false;
}

static const char *num3(char *buf, size_t len, double v)
{
    snprintf(buf, len, "%.*s", (int)len - 1, cli_num(v, 'f', 3, "undefined").s);
    return buf;
}

static const char *pval(char *buf, size_t len, double v)
{
    snprintf(buf, len, "%.*s", (int)len - 1, cli_num(v, 'g', 3, "undefined").s);
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

/* Everything `pfi stats` reports, computed once and then printed in the chosen format. */
typedef struct class_row {
    const char *name; /* borrowed from the groups table; "all" for the last row */
    size_t n;
    double median, min, max;
} class_row;

typedef struct feature_row {
    const char *name;
    size_t n;
    double rho, p, q;
} feature_row;

typedef struct step_row {
    const char *dropped; /* NULL at step 0 */
    double leverage;     /* NaN at step 0 */
    size_t n;
    double rho, p;
} step_row;

enum { MAX_DUNN_CLASSES = 11, MAX_STEPS = 10 };

typedef struct stats_report {
    size_t n_groups, defined;
    size_t k;           /* classes */
    const char **cls;   /* k class names (borrowed) */
    class_row *classes; /* k + 1: the last is "all" */
    double *y;          /* m PFI values with a class, and their labels */
    size_t *label, m;
    bool has_kw, has_dunn;
    pfi_kruskal kw;
    pfi_dunn_pair pairs[MAX_DUNN_CLASSES * (MAX_DUNN_CLASSES - 1) / 2];
    size_t n_pairs;
    feature_row *features;
    size_t nf;
    const char *predictor;
    bool predictor_found;
    const char *sensitivity_undefined; /* static reason when the predictor fit is undefined */
    step_row steps[MAX_STEPS + 1];
    size_t n_steps;
    feature_row *within; /* k rows: name = class, q unused */
    size_t col;          /* the predictor's column */
    double alpha;
} stats_report;

static void report_free(stats_report *r)
{
    free(r->cls);
    free(r->classes);
    free(r->y);
    free(r->label);
    free(r->features);
    free(r->within);
}

static void minmax(const double *v, size_t n, double *lo, double *hi)
{
    *lo = n ? INFINITY : NAN;
    *hi = n ? -INFINITY : NAN;
    for (size_t i = 0; i < n; i++) {
        *lo = fmin(*lo, v[i]);
        *hi = fmax(*hi, v[i]);
    }
}

/* Compute every section. Returns false on allocation failure. */
static bool report_compute(pfi_groups *g, const char *predictor, double alpha, stats_report *r)
{
    size_t n = g->n, nf = g->n_features;
    memset(r, 0, sizeof *r);
    r->alpha = alpha;
    r->predictor = predictor;
    r->n_groups = n;
    double *x = malloc((n + 1) * sizeof *x), *yy = malloc((n + 1) * sizeof *yy);
    double *work = malloc((4 * n + 64) * sizeof *work), *h = malloc((n + 1) * sizeof *h);
    double *xs = malloc((n + 1) * sizeof *xs), *ys = malloc((n + 1) * sizeof *ys);
    double *p = malloc((nf + 1) * sizeof *p), *q = malloc((nf + 1) * sizeof *q);
    size_t *order = malloc((n + nf + 1) * sizeof *order), *rows = malloc((n + 1) * sizeof *rows);
    bool *dropped = calloc(n + 1, sizeof *dropped);
    r->cls = calloc(n + 1, sizeof *r->cls);
    r->classes = calloc(n + 2, sizeof *r->classes);
    r->y = malloc((n + 1) * sizeof *r->y);
    r->label = malloc((n + 1) * sizeof *r->label);
    r->features = calloc(nf + 1, sizeof *r->features);
    r->within = calloc(n + 1, sizeof *r->within);
    bool ok = x && yy && work && h && xs && ys && p && q && order && rows && dropped && r->cls &&
              r->classes && r->y && r->label && r->features && r->within;
    if (!ok)
        goto done;
    /* Classes in order of first appearance. */
    for (size_t i = 0; i < n; i++) {
        if (isnan(g->pfi[i]) || g->classes[i] == NULL)
            continue;
        size_t c;
        for (c = 0; c < r->k && strcmp(r->cls[c], g->classes[i]); c++)
            ;
        if (c == r->k)
            r->cls[r->k++] = g->classes[i];
        r->y[r->m] = g->pfi[i];
        r->label[r->m++] = c;
    }
    for (size_t c = 0; c <= r->k; c++) {
        class_row *row = &r->classes[c];
        row->name = c < r->k ? r->cls[c] : "all";
        row->n = select_rows(g, SIZE_MAX, c < r->k ? r->cls[c] : NULL, NULL, x, NULL);
        row->median = pfi_stats_median(x, row->n, work);
        minmax(x, row->n, &row->min, &row->max);
    }
    r->defined = r->classes[r->k].n;
    if (r->k >= 1 && r->m > 0)
        r->has_kw =
            pfi_stats_kruskal(r->y, r->label, r->m, r->k, work, order, NULL, &r->kw) == PFI_OK;
    if (r->k >= 2 && r->k <= MAX_DUNN_CLASSES &&
        pfi_stats_dunn(r->y, r->label, r->m, r->k, work, order, r->pairs) == PFI_OK) {
        r->has_dunn = true;
        r->n_pairs = r->k * (r->k - 1) / 2;
    }
    /* Spearman with every feature, BH across features. */
    r->nf = nf;
    for (size_t j = 0; j < nf; j++) {
        feature_row *fr = &r->features[j];
        fr->name = g->feature_names[j];
        fr->n = select_rows(g, j, NULL, x, yy, NULL);
        pfi_spearman s;
        pfi_stats_spearman(x, yy, fr->n, work, order, &s);
        fr->rho = s.rho;
        p[j] = s.p_value;
    }
    pfi_stats_bh(p, nf, order, q);
    for (size_t j = 0; j < nf; j++) {
        r->features[j].p = p[j];
        r->features[j].q = q[j];
    }
    /* Leverage sensitivity (App. D.5) and within-class correlations of the predictor. */
    if (pfi_groups_resolve(g, predictor, &r->col) != PFI_OK)
        goto done;
    r->predictor_found = true;
    size_t np = select_rows(g, r->col, NULL, x, yy, rows);
    pfi_ols fit;
    if (pfi_stats_ols(x, yy, np, 1, &fit) != PFI_OK) {
        ok = false;
        goto done;
    }
    if (!fit.defined) {
        r->sensitivity_undefined = fit.undefined_reason;
    } else {
        pfi_stats_leverage(&fit, x, np, h);
        r->steps[0].leverage = NAN; /* step 0 drops nothing */
        for (size_t step = 0;; step++) {
            size_t ns = 0, top = SIZE_MAX;
            for (size_t i = 0; i < np; i++)
                if (!dropped[i]) {
                    xs[ns] = x[i];
                    ys[ns++] = yy[i];
                    if (top == SIZE_MAX || h[i] > h[top])
                        top = i;
                }
            pfi_spearman s;
            pfi_stats_spearman(xs, ys, ns, work, order, &s);
            step_row *sr = &r->steps[r->n_steps++];
            sr->n = ns;
            sr->rho = s.rho;
            sr->p = s.p_value;
            if (ns <= 3 || step >= MAX_STEPS || top == SIZE_MAX)
                break;
            dropped[top] = true;
            r->steps[r->n_steps].dropped = g->names[rows[top]];
            r->steps[r->n_steps].leverage = h[top];
        }
    }
    pfi_ols_clear(&fit);
    for (size_t c = 0; c < r->k; c++) {
        feature_row *w = &r->within[c];
        w->name = r->cls[c];
        w->n = select_rows(g, r->col, r->cls[c], xs, ys, NULL);
        pfi_spearman s;
        pfi_stats_spearman(xs, ys, w->n, work, order, &s);
        w->rho = s.rho;
        w->p = s.p_value;
        w->q = NAN;
    }
done:
    free(x);
    free(yy);
    free(work);
    free(h);
    free(xs);
    free(ys);
    free(p);
    free(q);
    free(order);
    free(rows);
    free(dropped);
    return ok;
}
/* s (NULL: "-") escaped into buf (cli_safe): a name from the input in a table, never raw. */
static const char *safe_name(char *buf, size_t len, const char *s)
{
    return s != NULL ? cli_safe(buf, len, s, strlen(s)) : "-";
}

static void emit_table(FILE *f, const stats_report *r)
{
    char b1[32], b2[32], b3[32], sn[CLI_SAFE_CELL], sm[CLI_SAFE_CELL];
    double alpha = r->alpha;
    fprintf(f, "PFI statistics over %zu sweep group%s (%zu with a defined PFI)\n\n", r->n_groups,
            r->n_groups == 1 ? "" : "s", r->defined);
    fprintf(f, "PFI by class\n  %-12s %3s %7s %7s %7s\n", "class", "n", "median", "min", "max");
    for (size_t c = 0; c <= r->k; c++) {
        const class_row *row = &r->classes[c];
        if (c == r->k && row->n == 0)
            break;
        /* a class without a defined PFI has no median: "-" */
        fprintf(f, "  %-12s %3zu %7s %7s %7s\n", safe_name(sn, sizeof sn, row->name), row->n,
                cli_num(row->median, 'f', 3, "-").s, cli_num(row->min, 'f', 3, "-").s,
                cli_num(row->max, 'f', 3, "-").s);
    }
    if (r->has_kw) {
        const pfi_kruskal *kw = &r->kw;
        fprintf(f, "\nKruskal-Wallis across classes: H = %s, df = %zu, p = %s%s\n",
                num3(b1, sizeof b1, kw->h), kw->df, pval(b2, sizeof b2, kw->p_value),
                kw->defined && kw->p_value < alpha ? "  (equal classes rejected)" : "");
        if (!kw->defined)
            fprintf(f, "  undefined: %s\n", kw->undefined_reason);
    }
    if (r->has_dunn) {
        fprintf(f, "\nDunn's test, Holm-Bonferroni over %zu pairs\n", r->n_pairs);
        fprintf(f, "  %-25s %8s %10s %10s\n", "pair", "z", "p", "p (Holm)");
        for (size_t q = 0; q < r->n_pairs; q++) {
            const pfi_dunn_pair *d = &r->pairs[q];
            char pair[64];
            snprintf(pair, sizeof pair, "%s vs %s", safe_name(sn, sizeof sn, r->cls[d->a]),
                     safe_name(sm, sizeof sm, r->cls[d->b]));
            fprintf(f, "  %-25s %8s %10s %10s%s\n", pair, num3(b1, sizeof b1, d->z),
                    pval(b2, sizeof b2, d->p_value), pval(b3, sizeof b3, d->p_holm),
                    d->p_holm < alpha ? "  *" : "");
        }
    }
    if (r->nf == 0) /* not an empty table "over 0": said */
        fprintf(f, "\nSpearman correlation of PFI with each feature: none (the input has no "
                   "feature columns; a dataset's are --feature-glob, dcgm_* by default)\n");
    else
        fprintf(f,
                "\nSpearman correlation of PFI with each feature (q: Benjamini-Hochberg over "
                "%zu)\n  %-40s %3s %9s %10s %10s\n",
                r->nf, "feature", "n", "rho", "p", "q");
    for (size_t j = 0; j < r->nf; j++) {
        const feature_row *fr = &r->features[j];
        fprintf(f, "  %-40s %3zu %9s %10s %10s%s\n", safe_name(sn, sizeof sn, fr->name), fr->n,
                num3(b1, sizeof b1, fr->rho), pval(b2, sizeof b2, fr->p),
                pval(b3, sizeof b3, fr->q), fr->q < alpha ? "  *" : "");
    }
    if (!r->predictor_found) {
        fprintf(f, "\nsensitivity: predictor '%s' not in the table\n",
                safe_name(sn, sizeof sn, r->predictor));
    } else if (r->sensitivity_undefined != NULL) {
        fprintf(f, "\nsensitivity: the predictor fit is undefined (%s)\n",
                r->sensitivity_undefined);
    } else {
        fprintf(f,
                "\nLeverage sensitivity of rho(PFI, %s): drop the highest-leverage group, "
                "recompute\n",
                safe_name(sn, sizeof sn, r->predictor));
        fprintf(f, "  %4s %-32s %8s %4s %9s %10s\n", "step", "dropped", "leverage", "n", "rho",
                "p");
        for (size_t s = 0; s < r->n_steps; s++) {
            const step_row *st = &r->steps[s];
            if (s == 0)
                fprintf(f, "  %4zu %-32s %8s %4zu %9s %10s\n", s, "(none)", "-", st->n,
                        num3(b1, sizeof b1, st->rho), pval(b2, sizeof b2, st->p));
            else
                fprintf(f, "  %4zu %-32.32s %8s %4zu %9s %10s\n", s,
                        safe_name(sn, sizeof sn, st->dropped), cli_num(st->leverage, 'f', 3, "-").s,
                        st->n, num3(b1, sizeof b1, st->rho), pval(b2, sizeof b2, st->p));
        }
    }
    if (r->predictor_found) {
        fprintf(f, "\nWithin-class Spearman rho(PFI, %s)\n",
                safe_name(sn, sizeof sn, r->predictor));
        for (size_t c = 0; c < r->k; c++) {
            const feature_row *w = &r->within[c];
            fprintf(f, "  %-12s n %3zu  rho %9s  p %10s%s\n", safe_name(sn, sizeof sn, w->name),
                    w->n, num3(b1, sizeof b1, w->rho), pval(b2, sizeof b2, w->p),
                    !isnan(w->p) && w->p < alpha ? "  *" : "");
        }
    }
    fprintf(
        f,
        "\n*: significant at alpha = %g (Dunn: Holm-adjusted; features: BH q; within-class: p)\n",
        alpha);
}

/* One row of the long CSV: section,item,feature,step,n,statistic,value (empty: undefined). */
static void csv_row(FILE *f, const char *section, const char *item, const char *feature, long step,
                    long n, const char *statistic, double value)
{
    fprintf(f, "%s,", section);
    pfi_csv_write_field(f, item);
    fputc(',', f);
    pfi_csv_write_field(f, feature);
    fputc(',', f);
    if (step >= 0)
        fprintf(f, "%ld", step);
    fputc(',', f);
    if (n >= 0)
        fprintf(f, "%ld", n);
    fprintf(f, ",%s,", statistic);
    cli_put_num(f, value, 17, "");
    fputc('\n', f);
}

static void emit_csv(FILE *f, const stats_report *r)
{
    fputs("section,item,feature,step,n,statistic,value\n", f);
    for (size_t c = 0; c <= r->k; c++) {
        const class_row *row = &r->classes[c];
        csv_row(f, "class_pfi", row->name, NULL, -1, (long)row->n, "median", row->median);
        csv_row(f, "class_pfi", row->name, NULL, -1, (long)row->n, "min", row->min);
        csv_row(f, "class_pfi", row->name, NULL, -1, (long)row->n, "max", row->max);
    }
    if (r->has_kw) {
        csv_row(f, "kruskal_wallis", "classes", NULL, -1, (long)r->kw.n, "h", r->kw.h);
        csv_row(f, "kruskal_wallis", "classes", NULL, -1, (long)r->kw.n, "df", (double)r->kw.df);
        csv_row(f, "kruskal_wallis", "classes", NULL, -1, (long)r->kw.n, "p", r->kw.p_value);
    }
    for (size_t q = 0; r->has_dunn && q < r->n_pairs; q++) {
        const pfi_dunn_pair *d = &r->pairs[q];
        char pair[256];
        snprintf(pair, sizeof pair, "%s vs %s", r->cls[d->a], r->cls[d->b]);
        csv_row(f, "dunn", pair, NULL, -1, -1, "z", d->z);
        csv_row(f, "dunn", pair, NULL, -1, -1, "p", d->p_value);
        csv_row(f, "dunn", pair, NULL, -1, -1, "p_holm", d->p_holm);
    }
    for (size_t j = 0; j < r->nf; j++) {
        const feature_row *fr = &r->features[j];
        csv_row(f, "spearman", "all", fr->name, -1, (long)fr->n, "rho", fr->rho);
        csv_row(f, "spearman", "all", fr->name, -1, (long)fr->n, "p", fr->p);
        csv_row(f, "spearman", "all", fr->name, -1, (long)fr->n, "q_bh", fr->q);
    }
    for (size_t s = 0; s < r->n_steps; s++) {
        const step_row *st = &r->steps[s];
        const char *item = s == 0 ? "(none)" : st->dropped;
        csv_row(f, "sensitivity", item, r->predictor, (long)s, (long)st->n, "leverage",
                st->leverage);
        csv_row(f, "sensitivity", item, r->predictor, (long)s, (long)st->n, "rho", st->rho);
        csv_row(f, "sensitivity", item, r->predictor, (long)s, (long)st->n, "p", st->p);
    }
    for (size_t c = 0; r->predictor_found && c < r->k; c++) {
        const feature_row *w = &r->within[c];
        csv_row(f, "within_class", w->name, r->predictor, -1, (long)w->n, "rho", w->rho);
        csv_row(f, "within_class", w->name, r->predictor, -1, (long)w->n, "p", w->p);
    }
}

static json_t *jnum(double v)
{
    return cli_json_num(v);
}

static json_t *jstr(const char *s)
{
    return cli_json_text(s); /* a name from a file: invalid UTF-8 as U+FFFD */
}

/* The report as one JSON object (undefined values are null). NULL when out of memory. */
static json_t *report_json(const stats_report *r)
{
    json_t *root = json_object(), *classes = json_array(), *dunn = json_array();
    json_t *spearman = json_array(), *steps = json_array(), *within = json_array();
    if (!root || !classes || !dunn || !spearman || !steps || !within) {
        json_decref(root);
        json_decref(classes);
        json_decref(dunn);
        json_decref(spearman);
        json_decref(steps);
        json_decref(within);
        return NULL;
    }
    bool ok = true;
    json_t *all = NULL;
    for (size_t c = 0; c <= r->k; c++) {
        const class_row *row = &r->classes[c];
        json_t *o = json_pack("{s:o, s:I, s:o, s:o, s:o}", "class", jstr(row->name), "n",
                              (json_int_t)row->n, "median", jnum(row->median), "min",
                              jnum(row->min), "max", jnum(row->max));
        if (c < r->k)
            ok = ok && json_array_append_new(classes, o) == 0;
        else
            all = o;
    }
    json_t *kw = json_null();
    if (r->has_kw)
        kw = json_pack("{s:I, s:I, s:I, s:b, s:o, s:o, s:o}", "n", (json_int_t)r->kw.n, "k",
                       (json_int_t)r->kw.k, "df", (json_int_t)r->kw.df, "defined", r->kw.defined,
                       "undefined_reason", jstr(r->kw.undefined_reason), "h", jnum(r->kw.h), "p",
                       jnum(r->kw.p_value));
    for (size_t q = 0; r->has_dunn && q < r->n_pairs; q++) {
        const pfi_dunn_pair *d = &r->pairs[q];
        ok = ok && json_array_append_new(
                       dunn, json_pack("{s:o, s:o, s:o, s:o, s:o}", "a", jstr(r->cls[d->a]), "b",
                                       jstr(r->cls[d->b]), "z", jnum(d->z), "p", jnum(d->p_value),
                                       "p_holm", jnum(d->p_holm))) == 0;
    }
    for (size_t j = 0; j < r->nf; j++) {
        const feature_row *fr = &r->features[j];
        ok = ok && json_array_append_new(spearman, json_pack("{s:o, s:I, s:o, s:o, s:o}", "feature",
                                                             jstr(fr->name), "n", (json_int_t)fr->n,
                                                             "rho", jnum(fr->rho), "p", jnum(fr->p),
                                                             "q_bh", jnum(fr->q))) == 0;
    }
    for (size_t s = 0; s < r->n_steps; s++) {
        const step_row *st = &r->steps[s];
        ok = ok &&
             json_array_append_new(
                 steps, json_pack("{s:I, s:o, s:o, s:I, s:o, s:o}", "step", (json_int_t)s,
                                  "dropped", jstr(st->dropped), "leverage", jnum(st->leverage), "n",
                                  (json_int_t)st->n, "rho", jnum(st->rho), "p", jnum(st->p))) == 0;
    }
    for (size_t c = 0; r->predictor_found && c < r->k; c++) {
        const feature_row *w = &r->within[c];
        ok = ok &&
             json_array_append_new(within, json_pack("{s:o, s:I, s:o, s:o}", "class", jstr(w->name),
                                                     "n", (json_int_t)w->n, "rho", jnum(w->rho),
                                                     "p", jnum(w->p))) == 0;
    }
    ok = ok && json_object_set_new(root, "groups", json_integer((json_int_t)r->n_groups)) == 0 &&
         json_object_set_new(root, "defined", json_integer((json_int_t)r->defined)) == 0 &&
         json_object_set_new(root, "alpha", cli_json_num(r->alpha)) == 0 &&
         json_object_set_new(root, "classes", classes) == 0 &&
         json_object_set_new(root, "all", all ? all : json_null()) == 0 &&
         json_object_set_new(root, "kruskal_wallis", kw ? kw : json_null()) == 0 &&
         json_object_set_new(root, "dunn_holm", dunn) == 0 &&
         json_object_set_new(root, "spearman",
                             json_pack("{s:s, s:o}", "correction", "benjamini-hochberg", "features",
                                       spearman)) == 0 &&
         json_object_set_new(root, "sensitivity",
                             json_pack("{s:o, s:b, s:o, s:o}", "predictor", jstr(r->predictor),
                                       "found", r->predictor_found, "undefined_reason",
                                       jstr(r->sensitivity_undefined), "steps", steps)) == 0 &&
         json_object_set_new(
             root, "within_class",
             json_pack("{s:o, s:o}", "predictor", jstr(r->predictor), "classes", within)) == 0;
    if (!ok) {
        json_decref(root);
        return NULL;
    }
    return root;
}

/* Figures: PFI by class, PFI against the predictor. Returns an exit code. */
static int draw_figures(const pfi_groups *g, const stats_report *r, const char *plot_class,
                        const char *plot_feature)
{
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = PFI_OK;
    if (plot_class != NULL) {
        if (r->k == 0) {
            cli_error("--plot-class: the table has no job classes");
            return PFI_EXIT_DATA;
        }
        e = pfi_plot_pfi_by_class(plot_class, r->y, r->label, r->m, r->cls, r->k, &d);
    }
    if (e == PFI_OK && plot_feature != NULL) {
        if (!r->predictor_found) {
            cli_error("--plot-feature: predictor '%s' is not in the table", r->predictor);
            return PFI_EXIT_DATA;
        }
        size_t n = g->n, extra = r->k; /* label k: groups without a class, if any */
        bool unclassed = false;
        double *x = malloc((n + 1) * sizeof *x), *y = malloc((n + 1) * sizeof *y);
        size_t *lab = malloc((n + 1) * sizeof *lab);
        const char **names = malloc((r->k + 1) * sizeof *names);
        if (!x || !y || !lab || !names) {
            e = PFI_ERR_NOMEM;
        } else {
            memcpy(names, r->cls, r->k * sizeof *names);
            names[extra] = "(no class)";
            for (size_t i = 0; i < n; i++) {
                x[i] = g->features[i * g->n_features + r->col];
                y[i] = g->pfi[i];
                lab[i] = extra;
                for (size_t c = 0; g->classes[i] && c < r->k; c++)
                    if (!strcmp(g->classes[i], r->cls[c]))
                        lab[i] = c;
                unclassed = unclassed || lab[i] == extra;
            }
            e = pfi_plot_pfi_feature(plot_feature, x, y, lab, n, names, r->k + unclassed,
                                     r->predictor, 0.95, &d);
        }
        free(x);
        free(y);
        free(lab);
        free(names);
    }
    if (e == PFI_OK)
        return PFI_EXIT_OK;
    cli_report(e, &d);
    return e == PFI_ERR_NOMEM ? PFI_EXIT_INTERNAL : PFI_EXIT_OUTPUT;
}

static int compare(int argc, char **argv, const char *pfi_column, const char *output)
{
    if (argc != 2) {
        cli_error("expected two inputs A B");
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
        char pct[64] = "-"; /* undefined (every A is 0): '-', never "undefined%" */
        if (isfinite(md))
            snprintf(pct, sizeof pct, "%s%%", cli_num(100 * md, 'f', 3, "-").s);
        fprintf(out.f, "median difference B - A = %s; median relative difference (B - A)/A = %s\n",
                num3(b1, sizeof b1, mdiff), pct);
        if (!cli_output_commit(&out))
            rc = PFI_EXIT_OUTPUT;
    }
    free(x);
    free(y);
    free(rel);
    free(work);
    free(order);
    pfi_groups_destroy(a);
    pfi_groups_destroy(b);
    return rc;
}

int cmd_stats(int argc, char **argv)
{
    const char *predictor = PFI_DRAM_COPY_PRODUCT, *pfi_column = NULL, *glob = NULL,
               *groups_out = NULL, *output = NULL, *format = "table", *plot_class = NULL,
               *plot_feature = NULL;
    char *extra = NULL;
    bool predictor_named = false; /* --predictor given: it must exist */
    double alpha = 0.05;
    int c;
    optind = 1;
    if (argc >= 2 && strcmp(argv[1], "compare") == 0)
        cli_set_command("stats compare");
    while ((c = getopt_long(argc, argv, "ho:", options, NULL)) != -1) {
        switch (c) {
        case 'h':
            usage(stdout);
            return PFI_EXIT_OK;
        case 'p':
            predictor = optarg;
            predictor_named = true;
            break;
        case 'f':
            extra = optarg;
            break;
        case 'a':
            if (!cli_parse_double(optarg, &alpha) || alpha <= 0 || alpha >= 1) {
                return cli_usage_bad_value("alpha", optarg, "a number in (0, 1)");
            }
            break;
        case 'P':
            pfi_column = optarg;
            break;
        case 'G':
            glob = optarg;
            break;
        case 'g':
            groups_out = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'F':
            format = optarg;
            break;
        case 'C':
            plot_class = optarg;
            break;
        case 'X':
            plot_feature = optarg;
            break;
        default:
            return cli_usage_getopt(options, "ho:", c, argv);
        }
    }
    if (strcmp(format, "table") && strcmp(format, "csv") && strcmp(format, "json")) {
        return cli_usage_bad_value("format", format, "table, csv or json");
    }
    if ((plot_class && !figure_name_ok("--plot-class", plot_class)) ||
        (plot_feature && !figure_name_ok("--plot-feature", plot_feature)))
        return PFI_EXIT_USAGE;
    if (optind < argc && strcmp(argv[optind], "compare") == 0)
        return compare(argc - optind - 1, argv + optind + 1, pfi_column, output);
    if (argc - optind != 1) {
        cli_error("expected one INPUT (a dataset directory or a groups CSV)");
        return PFI_EXIT_USAGE;
    }
    int orc;
    if ((orc = cli_output_not_input(output, argv[optind])) != PFI_EXIT_OK ||
        (orc = cli_output_not_input(groups_out, argv[optind])) != PFI_EXIT_OK)
        return orc;
    pfi_groups *g = NULL;
    int rc = cli_load_groups(argv[optind], pfi_column, glob, &g);
    if (rc != PFI_EXIT_OK)
        return rc;
    size_t idx;
    /* The default predictor is added when its columns exist; a named one must exist. */
    pfi_error e = pfi_groups_resolve(g, predictor, &idx);
    if (e != PFI_OK && predictor_named) {
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
    stats_report r;
    memset(&r, 0, sizeof r);
    if (rc == PFI_EXIT_OK && !report_compute(g, predictor, alpha, &r)) {
        cli_error("out of memory");
        rc = PFI_EXIT_INTERNAL;
    }
    json_t *root = NULL;
    if (rc == PFI_EXIT_OK && !strcmp(format, "json") && (root = report_json(&r)) == NULL) {
        cli_error("out of memory");
        rc = PFI_EXIT_INTERNAL;
    }
    cli_output out = {0};
    if (rc == PFI_EXIT_OK && !cli_output_open(&out, output))
        rc = PFI_EXIT_OUTPUT;
    if (rc == PFI_EXIT_OK) {
        bool written = true;
        if (root != NULL)
            written =
                json_dumpf(root, out.f,
                           JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) == 0 &&
                fputc('\n', out.f) != EOF;
        else if (!strcmp(format, "csv"))
            emit_csv(out.f, &r);
        else
            emit_table(out.f, &r);
        if (!written) {
            cli_output_abort(&out);
            rc = PFI_EXIT_OUTPUT;
        } else if (!cli_output_commit(&out)) {
            rc = PFI_EXIT_OUTPUT;
        }
    }
    json_decref(root);
    if (rc == PFI_EXIT_OK && (plot_class != NULL || plot_feature != NULL))
        rc = draw_figures(g, &r, plot_class, plot_feature);
    report_free(&r);
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
