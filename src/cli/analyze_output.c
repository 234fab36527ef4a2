/*
 * pfi analyze output: an aligned table for people, CSV and JSON for machines.
 */
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "cli.h"
#include "pfi/csv.h"

/* ---- shared pieces ---------------------------------------------------------------------- */

static const char *file_base(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The group's key values joined by sep, leaving out the "@file" pseudo-column; safe: each
 * value escaped (cli_safe: control characters as \xNN) for a human table, else the exact
 * bytes (CSV quotes them). */
static void key_text(const pfi_group *g, const char *sep, char *buf, size_t len, bool safe)
{
    buf[0] = '\0';
    size_t used = 0;
    bool first = true;
    for (size_t k = 0; k < g->n_key && used + 1 < len; k++) {
        if (strcmp(g->key_names[k], PFI_FILE_COLUMN) == 0)
            continue;
        char esc[1024];
        const char *v = safe ? cli_safe(esc, sizeof esc, g->key_values[k], strlen(g->key_values[k]))
                             : g->key_values[k];
        int n = snprintf(buf + used, len - used, "%s%s", first ? "" : sep, v);
        if (n < 0)
            break;
        used += (size_t)n;
        first = false;
    }
}

void analyze_group_title(const pfi_runs_table *t, size_t gi, char *buf, size_t len)
{
    const pfi_group *g = &t->groups[gi];
    char key[512];
    key_text(g, "/", key, sizeof key, true);
    const char *file = file_base(t->files[g->file_index]);
    if (key[0] == '\0')
        snprintf(buf, len, "%s", file);
    else if (t->n_files > 1)
        snprintf(buf, len, "%s: %s", file, key);
    else
        snprintf(buf, len, "%s", key);
}

typedef struct summary {
    size_t groups, defined;
    double median, min, max; /* NaN when nothing is defined */
} summary;

/* Summary of the ratio PFI over the groups for which pick() is true. */
static bool summarise(const analyze_report *r,
                      bool (*pick)(const analyze_report *, size_t, const void *), const void *arg,
                      summary *out)
{
    const pfi_runs_table *t = r->table;
    double *v = malloc((t->n_groups ? t->n_groups : 1) * sizeof *v);
    if (v == NULL)
        return false;
    *out = (summary){0, 0, NAN, NAN, NAN};
    for (size_t g = 0; g < t->n_groups; g++) {
        if (pick && !pick(r, g, arg))
            continue;
        out->groups++;
        if (!isnan(r->results[g].ratio))
            v[out->defined++] = r->results[g].ratio;
    }
    if (out->defined > 0) {
        gsl_sort(v, 1, out->defined);
        out->median = gsl_stats_median_from_sorted_data(v, 1, out->defined);
        out->min = v[0];
        out->max = v[out->defined - 1];
    }
    free(v);
    return true;
}

static bool in_class(const analyze_report *r, size_t g, const void *cls)
{
    const char *c = r->table->groups[g].job_class;
    return c != NULL && strcmp(c, cls) == 0;
}

static bool in_file(const analyze_report *r, size_t g, const void *file)
{
    return r->table->groups[g].file_index == *(const size_t *)file;
}

/* Distinct job classes in order of first appearance; *n of them, borrowed strings. */
static const char **classes(const pfi_runs_table *t, size_t *n)
{
    const char **out = malloc((t->n_groups ? t->n_groups : 1) * sizeof *out);
    *n = 0;
    if (out == NULL)
        return NULL;
    for (size_t g = 0; g < t->n_groups; g++) {
        const char *c = t->groups[g].job_class;
        if (c == NULL)
            continue;
        bool seen = false;
        for (size_t i = 0; i < *n && !seen; i++)
            seen = strcmp(out[i], c) == 0;
        if (!seen)
            out[(*n)++] = c;
    }
    return out;
}

/* Whether a point is excluded from every definition (not binding, missing...). A point without a
 * throughput loss still counts in area and CE: it is left out of the ratio only, and is not
 * "excluded" in the table's count, the CSV's column or the JSON list, which agree. */
static bool excluded_everywhere(const pfi_point *p)
{
    return p->exclusion != PFI_EXCL_NONE && p->exclusion != PFI_EXCL_NO_THROUGHPUT_LOSS;
}

static size_t excluded_count(const pfi_result *res)
{
    size_t n = 0;
    for (size_t i = 0; i < res->n_points; i++)
        n += excluded_everywhere(&res->points[i]);
    return n;
}

/* ---- table ------------------------------------------------------------------------------ */

/* v with the given number of decimals (or %g-style significant digits when digits < 0). */
static void fmt_num(char *buf, size_t len, double v, int digits)
{
    snprintf(buf, len, "%.*s", (int)len - 1,
             cli_num(v, digits < 0 ? 'g' : 'f', digits < 0 ? -digits : digits, "-").s);
}

static void table_points(FILE *f, const pfi_result *res)
{
    const pfi_point *all[1] = {&res->reference};
    for (size_t i = 0; i < res->n_points + (res->has_reference ? 1 : 0); i++) {
        const pfi_point *p =
            res->has_reference ? (i == 0 ? all[0] : &res->points[i - 1]) : &res->points[i];
        char cap[32], pw[32], tp[32], x[32], y[32];
        fmt_num(cap, sizeof cap, p->cap_w, -6);
        fmt_num(pw, sizeof pw, p->power_w, -6);
        fmt_num(tp, sizeof tp, p->throughput, -6);
        fmt_num(x, sizeof x, p->x, 4);
        fmt_num(y, sizeof y, p->y, 4);
        const char *what = (res->has_reference && i == 0)  ? "reference"
                           : p->exclusion == PFI_EXCL_NONE ? "used"
                           : p->exclusion == PFI_EXCL_NO_THROUGHPUT_LOSS
                               ? "area/ce only: no_throughput_loss"
                               : pfi_exclusion_name(p->exclusion);
        fprintf(f, "      cap %8s W  power %10s  throughput %12s  x %7s  y %7s  line %ld%s  %s\n",
                cap, pw, tp, x, y, p->line, p->n_runs > 1 ? " (merged)" : "", what);
    }
}

bool analyze_write_table(FILE *f, const analyze_report *r)
{
    const pfi_runs_table *t = r->table;
    int level = (int)lround(r->options->ci_level * 100);
    size_t width = 24;
    for (size_t g = 0; g < t->n_groups; g++) {
        char key[512];
        key_text(&t->groups[g], "/", key, sizeof key, true);
        size_t n = key[0] ? strlen(key) : strlen(file_base(t->files[t->groups[g].file_index]));
        if (n > width)
            width = n < 60 ? n : 60;
    }
    size_t last_file = (size_t)-1;
    bool undef_col = false; /* a column of the undefined draws' share, when any group has some */
    for (size_t g = 0; g < t->n_groups; g++)
        undef_col |= r->results[g].ci_draws > 0 && r->results[g].ci_undefined > 0;
    for (size_t g = 0; g < t->n_groups; g++) {
        const pfi_group *grp = &t->groups[g];
        const pfi_result *res = &r->results[g];
        if (grp->file_index != last_file) {
            last_file = grp->file_index;
            char fe[1024];
            fprintf(f, "%s%s\n", g ? "\n" : "",
                    cli_safe(fe, sizeof fe, t->files[last_file], strlen(t->files[last_file])));
            char ci[16];
            snprintf(ci, sizeof ci, "%d%% CI", level);
            fprintf(f, "  %-*s %7s %9s  %-17s%s %7s %7s  %-9s %s\n", (int)width, "group", "ref_cap",
                    "PFI", ci, undef_col ? " undef%" : "", "area", "CE", "label",
                    "used/ratio/excl");
        }
        char key[512], ratio[32], ci[100], area[32], ce[32], cap[32];
        key_text(grp, "/", key, sizeof key, true);
        if (key[0] == '\0')
            snprintf(key, sizeof key, "%s", file_base(t->files[grp->file_index]));
        fmt_num(ratio, sizeof ratio, res->ratio, 3);
        fmt_num(area, sizeof area, res->area, 3);
        fmt_num(ce, sizeof ce, res->ce, 3);
        fmt_num(cap, sizeof cap, res->has_reference ? res->reference.cap_w : NAN, 0);
        if (res->ci_available) /* an unbounded end is "-" */
            snprintf(ci, sizeof ci, "[%s, %s]", cli_num(res->ci_lo, 'f', 3, "-").s,
                     cli_num(res->ci_hi, 'f', 3, "-").s);
        else
            snprintf(ci, sizeof ci, "-");
        char undef[64] = "";
        if (undef_col)
            snprintf(undef, sizeof undef, " %6s",
                     res->ci_draws > 0
                         ? cli_num(100.0 * (double)res->ci_undefined / (double)res->ci_draws, 'f',
                                   1, "-")
                               .s
                         : "-");
        fprintf(f, "  %-*.*s %7s %9s  %-17s%s %7s %7s  %-9s %zu/%zu/%zu\n", (int)width, (int)width,
                key, cap, ratio, ci, undef, area, ce, pfi_label_name(res->label), res->n_used,
                res->n_ratio, excluded_count(res));
        if (res->notes & PFI_NOTE_THROUGHPUT_RISES)
            fprintf(f, "      note: throughput rises under a cap (a capped point above the "
                       "reference, area > 1 or CE < 0): check the reference run\n");
        if (res->notes & (PFI_NOTE_CI_WITHHELD | PFI_NOTE_MANY_UNDEFINED)) {
            const bool withheld = (res->notes & PFI_NOTE_CI_WITHHELD) != 0;
            fprintf(
                f,
                "      note: the PFI is undefined in %s %% of the Monte Carlo draws (over %.0f "
                "%%): %s\n",
                cli_num(100.0 * (double)res->ci_undefined / (double)res->ci_draws, 'f', 1, "-").s,
                100.0 * (withheld ? PFI_CI_UNDEFINED_WITHHOLD : PFI_CI_UNDEFINED_NOTE),
                withheld ? "no CI and no label (the caps' throughput loss is within the noise)"
                         : "the CI is over the other draws only");
        }
        if (res->notes & PFI_NOTE_ESTIMATE_OUTSIDE_CI)
            fprintf(f,
                    "      note: the PFI %s lies outside its %d %% CI: the throughput losses "
                    "are within the noise, the estimate is not firm\n",
                    ratio, (int)lround(r->options->ci_level * 100));
        if (res->undefined_reason)
            fprintf(f, "      note: PFI undefined: %s\n", res->undefined_reason);
        if (r->show_points) {
            if (res->ci_note && r->options->draws > 0 && !isnan(res->ratio))
                fprintf(f, "      no CI: %s\n", res->ci_note);
            table_points(f, res);
        }
    }
    summary all;
    if (!summarise(r, NULL, NULL, &all))
        return false;
    fprintf(f, "\n%zu sweep group%s, %zu with a defined PFI", all.groups,
            all.groups == 1 ? "" : "s", all.defined);
    if (all.defined > 0)
        fprintf(f, "; median PFI %s (range %s to %s)", cli_num(all.median, 'f', 3, "undefined").s,
                cli_num(all.min, 'f', 3, "undefined").s, cli_num(all.max, 'f', 3, "undefined").s);
    fprintf(f, "\n");
    if (t->n_files > 1) {
        /* per file, for files with several groups (a one-group file's line repeats its row) */
        for (size_t i = 0; i < t->n_files; i++) {
            summary s;
            if (!summarise(r, in_file, &i, &s))
                return false;
            if (s.groups < 2)
                continue;
            char med[32];
            fmt_num(med, sizeof med, s.median, 3);
            fprintf(f, "  %-40s %3zu %-7s %3zu defined, median PFI %s\n", t->files[i], s.groups,
                    s.groups == 1 ? "group," : "groups,", s.defined, med);
        }
    }
    size_t n_cls = 0;
    const char **cls = classes(t, &n_cls);
    if (cls == NULL)
        return false;
    for (size_t i = 0; i < n_cls; i++) {
        summary s;
        if (!summarise(r, in_class, cls[i], &s)) {
            free(cls);
            return false;
        }
        char med[32];
        fmt_num(med, sizeof med, s.median, 3);
        char ce[256];
        fprintf(f, "  class %-20s %3zu %-7s %3zu defined, median PFI %s\n",
                cli_safe(ce, sizeof ce, cls[i], strlen(cls[i])), s.groups,
                s.groups == 1 ? "group," : "groups,", s.defined, med);
    }
    free(cls);
    size_t no_se = 0;
    for (size_t g = 0; g < t->n_groups; g++)
        no_se += !isnan(r->results[g].ratio) && !r->results[g].ci_available &&
                 r->results[g].ci_note != NULL &&
                 strncmp(r->results[g].ci_note, "standard errors unknown", 23) == 0;
    if (no_se > 0 && r->options->draws > 0)
        fprintf(f,
                "CI '-': %zu group(s) have no standard errors in the data; give --noise-rel "
                "(e.g. 0.01) to assume a relative measurement noise.\n",
                no_se);
    fprintf(f, "used/ratio/excl: points in area and CE / in the ratio / excluded (not binding or "
               "missing); --points lists them.\n");
    if (undef_col)
        fprintf(f,
                "undef%%: share of the CI's Monte Carlo draws where the PFI is undefined (no point "
                "binds with a throughput loss); the CI is over the other draws.\n");
    return !ferror(f);
}

/* ---- CSV -------------------------------------------------------------------------------- */

/* A field (quoted as pfi/csv.h says) and what follows it: a comma, or the end of the row. */
static void csv_field(FILE *f, const char *s, bool last)
{
    pfi_csv_write_field(f, s);
    fputc(last ? '\n' : ',', f);
}

static void csv_number(FILE *f, double v, bool last)
{
    csv_field(f, cli_num(v, 'g', 17, "").s, last);
}

bool analyze_write_csv(FILE *f, const analyze_report *r)
{
    const pfi_runs_table *t = r->table;
    fputs("file,group,job_class,cap_ref_w,power_ref_w,throughput_ref,pfi_ratio,ci_lo,ci_median,"
          "ci_hi,pfi_area,pfi_ce,label,points_used,points_ratio,excluded,undefined_reason,"
          "ci_undefined_share,notes\n",
          f);
    for (size_t g = 0; g < t->n_groups; g++) {
        const pfi_group *grp = &t->groups[g];
        const pfi_result *res = &r->results[g];
        char key[1024], count[32];
        key_text(grp, "|", key, sizeof key, false);
        csv_field(f, t->files[grp->file_index], false);
        csv_field(f, key, false);
        csv_field(f, grp->job_class ? grp->job_class : "", false);
        csv_number(f, res->has_reference ? res->reference.cap_w : NAN, false);
        csv_number(f, res->has_reference ? res->reference.power_w : NAN, false);
        csv_number(f, res->has_reference ? res->reference.throughput : NAN, false);
        csv_number(f, res->ratio, false);
        csv_number(f, res->ci_lo, false);
        csv_number(f, res->ci_median, false);
        csv_number(f, res->ci_hi, false);
        csv_number(f, res->area, false);
        csv_number(f, res->ce, false);
        csv_field(f, pfi_label_name(res->label), false);
        snprintf(count, sizeof count, "%zu", res->n_used);
        csv_field(f, count, false);
        snprintf(count, sizeof count, "%zu", res->n_ratio);
        csv_field(f, count, false);
        snprintf(count, sizeof count, "%zu", excluded_count(res));
        csv_field(f, count, false);
        csv_field(f, res->undefined_reason ? res->undefined_reason : "", false);
        csv_number(f, res->ci_draws > 0 ? (double)res->ci_undefined / (double)res->ci_draws : NAN,
                   false);
        char notes[256] = "";
        for (unsigned b = 1; b != 0; b <<= 1)
            if ((res->notes & b) && pfi_note_text(b) != NULL)
                snprintf(notes + strlen(notes), sizeof notes - strlen(notes), "%s%s",
                         notes[0] ? ";" : "", pfi_note_text(b));
        csv_field(f, notes, true);
    }
    return !ferror(f);
}

/* ---- JSON ------------------------------------------------------------------------------- */

/* A number, or null when undefined. */
static json_t *num(double v)
{
    return cli_json_num(v);
}

static json_t *summary_json(const summary *s)
{
    return json_pack("{s:I, s:I, s:o, s:o, s:o}", "groups", (json_int_t)s->groups, "defined",
                     (json_int_t)s->defined, "median", num(s->median), "min", num(s->min), "max",
                     num(s->max));
}

static json_t *point_json(const pfi_point *p)
{
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:s}", "cap_w", num(p->cap_w), "power",
                     num(p->power_w), "throughput", num(p->throughput), "x", num(p->x), "y",
                     num(p->y), "line", (json_int_t)p->line, "runs", (json_int_t)p->n_runs,
                     "status",
                     p->exclusion == PFI_EXCL_NONE ? "used" : pfi_exclusion_name(p->exclusion));
}

static json_t *group_json(const analyze_report *r, size_t g)
{
    const pfi_group *grp = &r->table->groups[g];
    const pfi_result *res = &r->results[g];
    json_t *key = json_object(), *excluded = json_array(), *points = json_array();
    for (size_t k = 0; k < grp->n_key; k++)
        cli_json_set(key, grp->key_names[k], cli_json_text(grp->key_values[k]));
    for (size_t i = 0; i < res->n_points; i++) {
        const pfi_point *p = &res->points[i];
        json_array_append_new(points, point_json(p));
        if (excluded_everywhere(p))
            json_array_append_new(excluded, json_pack("{s:o, s:s, s:I}", "cap_w", num(p->cap_w),
                                                      "reason", pfi_exclusion_name(p->exclusion),
                                                      "line", (json_int_t)p->line));
    }
    json_t *ref =
        res->has_reference
            ? json_pack("{s:o, s:o, s:o, s:I}", "cap_w", num(res->reference.cap_w), "power",
                        num(res->reference.power_w), "throughput", num(res->reference.throughput),
                        "runs", (json_int_t)res->reference.n_runs)
            : json_null();
    json_t *ci =
        res->ci_available ? json_pack("[o, o]", num(res->ci_lo), num(res->ci_hi)) : json_null();
    json_t *out = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:I, "
        "s:o, s:o}",
        "file", cli_json_text(r->table->files[grp->file_index]), "key", key, "job_class",
        cli_json_text(grp->job_class), "reference", ref, "pfi_ratio", num(res->ratio),
        "pfi_ratio_ci", ci, "pfi_ratio_ci_median", num(res->ci_median), "pfi_area", num(res->area),
        "pfi_ce", num(res->ce), "label", pfi_label_name(res->label), "points_used",
        (json_int_t)res->n_used, "points_ratio", (json_int_t)res->n_ratio, "undefined_reason",
        cli_json_text(res->undefined_reason), "ci_note",
        cli_json_text(r->options->draws > 0 ? res->ci_note : NULL), "excluded", excluded, "points",
        points, "ci_undefined_draws", (json_int_t)res->ci_undefined, "ci_draws",
        json_integer((json_int_t)res->ci_draws), "gpus",
        res->has_reference && grp->n_runs > 0 && (grp->runs[0].valid & PFI_RUN_GPUS)
            ? cli_json_num(grp->runs[0].gpus)
            : json_null());
    if (out == NULL)
        return NULL;
    /* the share of Monte Carlo draws where the PFI is undefined; null without draws */
    json_object_set_new(out, "pfi_ratio_undefined_share",
                        res->ci_draws > 0
                            ? json_real((double)res->ci_undefined / (double)res->ci_draws)
                            : json_null());
    json_t *notes = json_array();
    for (unsigned b = 1; b != 0 && notes != NULL; b <<= 1)
        if ((res->notes & b) && pfi_note_text(b) != NULL)
            json_array_append_new(notes, json_string(pfi_note_text(b)));
    json_object_set_new(out, "notes", notes);
    return out;
}

/* The flags of every JSON dump: jansson's indented form, keys in insertion order. */
#define JSON_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))

/* j dumped as jansson would dump it nested at the depth whose lines start with pad: every line
 * after the first indented by pad (a dumped string holds no raw newline: each one is
 * structural). False when out of memory or the write failed. */
static bool put_nested(FILE *f, const json_t *j, const char *pad)
{
    char *text = j != NULL ? json_dumps(j, JSON_FLAGS) : NULL;
    if (text == NULL)
        return false;
    const char *p = text;
    for (const char *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
        fwrite(p, 1, (size_t)(nl + 1 - p), f);
        fputs(pad, f);
    }
    fputs(p, f);
    free(text);
    return !ferror(f);
}

/*
 * The report as one JSON object {"groups": [...], "summary": {...}, "options": {...}}, the
 * bytes json_dumpf of the whole tree would write (JSON_FLAGS), streamed: each group's object is
 * made, written and freed in turn, so memory holds one group's tree, not every group's (100 000
 * groups made a tree of about 600 MB before a byte was written).
 */
bool analyze_write_json(FILE *f, const analyze_report *r)
{
    const pfi_runs_table *t = r->table;
    bool ok = fputs("{\n  \"groups\": [", f) != EOF;
    for (size_t g = 0; ok && g < t->n_groups; g++) {
        json_t *gj = group_json(r, g);
        ok = gj != NULL && fputs(g ? ",\n    " : "\n    ", f) != EOF && put_nested(f, gj, "    ");
        json_decref(gj);
    }
    ok = ok && fputs(t->n_groups ? "\n  ]" : "]", f) != EOF;
    summary all;
    ok = ok && summarise(r, NULL, NULL, &all);
    json_t *sum = ok ? summary_json(&all) : NULL;
    json_t *by_class = json_object(), *by_file = json_object();
    size_t n_cls = 0;
    const char **cls = ok ? classes(t, &n_cls) : NULL;
    ok = ok && sum && by_class && by_file && cls;
    for (size_t i = 0; ok && i < n_cls; i++) {
        summary s;
        ok = summarise(r, in_class, cls[i], &s) &&
             cli_json_set(by_class, cls[i], summary_json(&s)) == 0;
    }
    for (size_t i = 0; ok && i < t->n_files; i++) {
        summary s;
        ok = summarise(r, in_file, &i, &s) &&
             cli_json_set(by_file, t->files[i], summary_json(&s)) == 0;
    }
    free(cls);
    json_t *opts = NULL;
    if (ok) {
        json_object_set_new(sum, "by_class", by_class);
        json_object_set_new(sum, "by_file", by_file);
        by_class = by_file = NULL;
        opts =
            json_pack("{s:f, s:I, s:I, s:f, s:o, s:f}", "x_min", r->options->x_min, "draws",
                      (json_int_t)r->options->draws, "seed", (json_int_t)r->options->seed,
                      "ci_level", r->options->ci_level, "noise_rel",
                      r->options->noise_rel > 0 ? cli_json_num(r->options->noise_rel) : json_null(),
                      "linear_band", r->options->linear_band);
        ok = fputs(",\n  \"summary\": ", f) != EOF && put_nested(f, sum, "  ") &&
             fputs(",\n  \"options\": ", f) != EOF && put_nested(f, opts, "  ") &&
             fputs("\n}\n", f) != EOF;
    }
    json_decref(by_class);
    json_decref(by_file);
    json_decref(sum);
    json_decref(opts);
    return ok && !ferror(f);
}
