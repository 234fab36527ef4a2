/*
 * The runs table reader: header-mapped CSV rows to runs, runs to sweep groups.
 */
#define _GNU_SOURCE /* qsort_r, strndup */
#include "pfi/runs.h"

#include <fnmatch.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "pfi/csv.h"
#include "pfi/value.h"

/* ---- mapping ---------------------------------------------------------------------------- */

static char **mapping_field(pfi_mapping *m, const char *field)
{
    static const struct {
        const char *name;
        size_t offset;
    } fields[] = {
        {"cap", offsetof(pfi_mapping, cap)},
        {"cap_regex", offsetof(pfi_mapping, cap_regex)},
        {"power", offsetof(pfi_mapping, power)},
        {"energy", offsetof(pfi_mapping, energy)},
        {"duration", offsetof(pfi_mapping, duration)},
        {"throughput", offsetof(pfi_mapping, throughput)},
        {"time", offsetof(pfi_mapping, time)},
        {"power_se", offsetof(pfi_mapping, power_se)},
        {"throughput_se", offsetof(pfi_mapping, throughput_se)},
        {"time_se", offsetof(pfi_mapping, time_se)},
        {"gpus", offsetof(pfi_mapping, gpus)},
        {"job_class", offsetof(pfi_mapping, job_class)},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (strcmp(fields[i].name, field) == 0)
            return (char **)((char *)m + fields[i].offset);
    return NULL;
}

const char *pfi_mapping_get(const pfi_mapping *m, const char *field)
{
    char **slot = field ? mapping_field((pfi_mapping *)m, field) : NULL;
    return slot ? *slot : NULL;
}

void pfi_mapping_clear(pfi_mapping *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->n_group; i++)
        pfi_free(m->group[i]);
    char **all[] = {&m->cap,           &m->cap_regex,  &m->power, &m->energy,
                    &m->duration,      &m->throughput, &m->time,  &m->power_se,
                    &m->throughput_se, &m->time_se,    &m->gpus,  &m->job_class};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pfi_free(*all[i]);
    memset(m, 0, sizeof *m);
}

static pfi_error set_group_list(pfi_mapping *m, const char *value)
{
    char *names[PFI_MAX_GROUP_COLUMNS];
    size_t n = 0;
    const char *p = value;
    while (value != NULL) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len > 0) {
            if (n == PFI_MAX_GROUP_COLUMNS) {
                for (size_t i = 0; i < n; i++)
                    pfi_free(names[i]);
                return PFI_ERR_INVALID_ARGUMENT;
            }
            names[n] = pfi_strndup(p, len);
            if (names[n] == NULL) {
                for (size_t i = 0; i < n; i++)
                    pfi_free(names[i]);
                return PFI_ERR_NOMEM;
            }
            n++;
        }
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    for (size_t i = 0; i < m->n_group; i++)
        pfi_free(m->group[i]);
    memcpy(m->group, names, n * sizeof names[0]);
    m->n_group = n;
    return PFI_OK;
}

pfi_error pfi_mapping_set(pfi_mapping *m, const char *field, const char *value)
{
    if (m == NULL || field == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    if (strcmp(field, "group") == 0)
        return set_group_list(m, value);
    char **slot = mapping_field(m, field);
    if (slot == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    char *copy = NULL;
    if (value != NULL && (copy = pfi_strdup(value)) == NULL)
        return PFI_ERR_NOMEM;
    pfi_free(*slot);
    *slot = copy;
    return PFI_OK;
}

pfi_error pfi_mapping_check(const pfi_mapping *m, char *msg, size_t len)
{
    const char *why = NULL;
    if (m->n_group == 0)
        why = "no group column mapped (which columns identify a sweep group?)";
    else if (m->cap == NULL)
        why = "no cap column mapped (the power cap in W)";
    else if ((m->power == NULL) == (m->energy == NULL))
        why = m->power ? "both power and energy mapped; map one"
                       : "no power mapped (power in W, or energy in J with a duration in s)";
    else if (m->energy != NULL && m->duration == NULL && m->time == NULL)
        why = "energy mapped without a duration column (seconds) to divide it by";
    else if ((m->throughput == NULL) == (m->time == NULL))
        why = m->throughput ? "both throughput and time mapped; map one"
                            : "no throughput mapped (work per second, or time per unit of work)";
    else if (m->throughput_se != NULL && m->time_se != NULL)
        why = "both throughput_se and time_se mapped; map one";
    else if (m->time_se != NULL && m->time == NULL)
        why = "time_se mapped without time (it is the standard error of time per unit of work)";
    if (why == NULL)
        return PFI_OK;
    if (msg != NULL && len > 0)
        snprintf(msg, len, "%s", why);
    return PFI_ERR_INVALID_ARGUMENT;
}

/* ---- table ------------------------------------------------------------------------------ */

pfi_error pfi_runs_table_create(pfi_runs_table **out)
{
    *out = pfi_calloc(1, sizeof **out);
    return *out ? PFI_OK : PFI_ERR_NOMEM;
}

static void group_free(pfi_group *g)
{
    for (size_t i = 0; i < g->n_key; i++)
        pfi_free(g->key_values[i]);
    pfi_free(g->key_values);
    pfi_free(g->job_class);
    pfi_free(g->runs);
}

void pfi_runs_table_destroy(pfi_runs_table *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n_groups; i++)
        group_free(&t->groups[i]);
    pfi_free(t->groups);
    for (size_t f = 0; f < t->n_files; f++) {
        pfi_free(t->files[f]);
        for (size_t k = 0; k < t->n_key_by_file[f]; k++)
            pfi_free(t->key_names_by_file[f][k]);
        pfi_free(t->key_names_by_file[f]);
    }
    pfi_free(t->files);
    pfi_free(t->key_names_by_file);
    pfi_free(t->n_key_by_file);
    pfi_free(t);
}

/* ---- reading ---------------------------------------------------------------------------- */

/* Column indexes resolved from the header; -1 = not mapped. */
typedef struct columns {
    long key[PFI_MAX_GROUP_COLUMNS]; /* -1 for "@file" */
    long cap;
    long *power; /* power or energy columns (summed) */
    size_t n_power;
    bool power_is_energy;
    long duration;
    long throughput;
    bool throughput_is_time;
    long power_se, throughput_se, time_se, gpus, job_class;
} columns;

/* One row before grouping. */
typedef struct row {
    pfi_run run;
    char *key;       /* key values joined by '\x1f', owned */
    char *job_class; /* owned, NULL when missing */
} row;

typedef struct reader {
    const char *name;
    const char *base;
    pfi_diag *diag;
    const pfi_runs_cell *cells; /* the row's cells when read from data (pfi_runs_read_cells) */
    char **header;
    size_t n_header;
    long header_line;
    columns col;
    regex_t cap_re;
    bool has_cap_re;
    row *rows;
    size_t n_rows, rows_cap;
} reader;

static pfi_error fail(reader *r, pfi_error e, long line, const char *column, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static pfi_error fail(reader *r, pfi_error e, long line, const char *column, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_diag_vset(r->diag, r->name, line, column, fmt, ap);
    va_end(ap);
    return e;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void header_list(const reader *r, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->n_header && used + 1 < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", r->header[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* Exact header lookup. Returns the index, -1 when absent, -2 when the name is duplicated. */
static long find_column(const reader *r, const char *name)
{
    long found = -1;
    for (size_t i = 0; i < r->n_header; i++) {
        if (strcmp(r->header[i], name) == 0) {
            if (found >= 0)
                return -2;
            found = (long)i;
        }
    }
    return found;
}

static pfi_error require_column(reader *r, const char *name, const char *role, long *out)
{
    *out = find_column(r, name);
    if (*out == -2)
        return fail(r, PFI_ERR_PARSE, r->header_line, name,
                    "column name appears twice in the header");
    if (*out == -1) {
        char have[256];
        header_list(r, have, sizeof have);
        return fail(r, PFI_ERR_MISSING_COLUMN, r->header_line, name,
                    "mapped as %s but not in the header (header: %s)", role, have);
    }
    return PFI_OK;
}

static pfi_error optional_column(reader *r, const char *name, const char *role, long *out)
{
    *out = -1;
    if (name == NULL)
        return PFI_OK;
    return require_column(r, name, role, out);
}

/* Every header column whose name matches the glob pattern, in header order. */
static pfi_error glob_columns(reader *r, const char *pattern, const char *role)
{
    r->col.power = pfi_calloc(r->n_header ? r->n_header : 1, sizeof(long));
    if (r->col.power == NULL)
        return PFI_ERR_NOMEM;
    r->col.n_power = 0;
    for (size_t i = 0; i < r->n_header; i++) {
        if (fnmatch(pattern, r->header[i], 0) != 0)
            continue;
        /* a name twice in the header would be summed twice: ambiguous, so refused */
        for (size_t j = 0; j < r->col.n_power; j++)
            if (strcmp(r->header[r->col.power[j]], r->header[i]) == 0)
                return fail(r, PFI_ERR_PARSE, r->header_line, r->header[i],
                            "column name appears twice in the header");
        r->col.power[r->col.n_power++] = (long)i;
    }
    if (r->col.n_power == 0) {
        char have[256];
        header_list(r, have, sizeof have);
        return fail(r, PFI_ERR_MISSING_COLUMN, r->header_line, pattern,
                    "mapped as %s but no header column matches (header: %s)", role, have);
    }
    return PFI_OK;
}

static pfi_error resolve_columns(reader *r, const pfi_mapping *m)
{
    pfi_error e;
    columns *c = &r->col;
    for (size_t k = 0; k < m->n_group; k++) {
        if (strcmp(m->group[k], PFI_FILE_COLUMN) == 0) {
            c->key[k] = -1;
            continue;
        }
        if ((e = require_column(r, m->group[k], "a group key", &c->key[k])) != PFI_OK)
            return e;
    }
    if ((e = require_column(r, m->cap, "the power cap (W)", &c->cap)) != PFI_OK)
        return e;
    c->power_is_energy = m->energy != NULL;
    e = glob_columns(r, c->power_is_energy ? m->energy : m->power,
                     c->power_is_energy ? "energy (J)" : "power (W)");
    if (e != PFI_OK)
        return e;
    c->duration = -1;
    if (c->power_is_energy && (e = require_column(r, m->duration ? m->duration : m->time,
                                                  "duration (s)", &c->duration)) != PFI_OK)
        return e;
    c->throughput_is_time = m->time != NULL;
    e = require_column(r, c->throughput_is_time ? m->time : m->throughput,
                       c->throughput_is_time ? "time per unit of work (s)" : "throughput",
                       &c->throughput);
    if (e != PFI_OK)
        return e;
    if ((e = optional_column(r, m->power_se, "power standard error (W)", &c->power_se)) ||
        (e = optional_column(r, m->throughput_se, "throughput standard error",
                             &c->throughput_se)) ||
        (e = optional_column(r, m->time_se, "time standard error (s)", &c->time_se)) ||
        (e = optional_column(r, m->gpus, "GPU count", &c->gpus)) ||
        (e = optional_column(r, m->job_class, "job class", &c->job_class)))
        return e;
    return PFI_OK;
}

/* What a diagnostic shows of field i: the CSV cell's text, or a value cell's number. */
static const char *shown(const reader *r, const char *const *f, long i, char *buf, size_t n)
{
    if (r->cells == NULL)
        return f[i];
    snprintf(buf, n, "%.17g", r->cells[i].value);
    return buf;
}

/*
 * A non-negative number from field i of the row: a CSV cell's text parsed, or a value cell's
 * number as it is (NaN missing, an infinity as unreadable as a cell that is not a number).
 * *ok false when missing. Errors name the column and the text found.
 */
static pfi_error number(reader *r, const char *const *f, const size_t *len, long i, long line,
                        const char *what, double *out, bool *ok)
{
    pfi_value_status s;
    if (r->cells != NULL) {
        double v = r->cells[i].value;
        s = isnan(v) ? PFI_VALUE_MISSING : isfinite(v) ? PFI_VALUE_OK : PFI_VALUE_INVALID;
        *out = s == PFI_VALUE_OK ? v : NAN;
    } else {
        s = pfi_value_parse(f[i], len[i], out);
    }
    *ok = s == PFI_VALUE_OK;
    char buf[32];
    if (s == PFI_VALUE_INVALID)
        return fail(r, PFI_ERR_VALUE, line, r->header[i], "expected %s, found '%.60s'", what,
                    shown(r, f, i, buf, sizeof buf));
    if (s == PFI_VALUE_OK && *out < 0)
        return fail(r, PFI_ERR_VALUE, line, r->header[i], "expected %s, found negative '%.60s'",
                    what, shown(r, f, i, buf, sizeof buf));
    return PFI_OK;
}

static pfi_error parse_cap(reader *r, const char *const *f, const size_t *len, long line,
                           pfi_run *run)
{
    long i = r->col.cap;
    bool ok;
    if (!r->has_cap_re) {
        pfi_error e =
            number(r, f, len, i, line, "a power cap in W (a number > 0)", &run->cap_w, &ok);
        if (e == PFI_OK && ok && run->cap_w == 0)
            return fail(r, PFI_ERR_VALUE, line, r->header[i],
                        "expected a power cap in W (a number > 0), found 0");
        if (e == PFI_OK && ok && run->cap_w > PFI_RUNS_MAX_CAP_W) {
            char buf[32];
            return fail(r, PFI_ERR_VALUE, line, r->header[i],
                        "expected a power cap in W (a number > 0, at most %g), found '%.60s'",
                        PFI_RUNS_MAX_CAP_W, shown(r, f, i, buf, sizeof buf));
        }
        if (ok)
            run->valid |= PFI_RUN_CAP;
        return e;
    }
    if (pfi_value_is_missing_token(f[i], len[i]))
        return PFI_OK;
    regmatch_t mt[2];
    if (regexec(&r->cap_re, f[i], 2, mt, 0) != 0 || mt[1].rm_so < 0)
        return fail(r, PFI_ERR_VALUE, line, r->header[i],
                    "expected text matching the cap pattern, found '%.60s'", f[i]);
    pfi_value_status s =
        pfi_value_parse(f[i] + mt[1].rm_so, (size_t)(mt[1].rm_eo - mt[1].rm_so), &run->cap_w);
    if (s != PFI_VALUE_OK || !(run->cap_w > 0) || run->cap_w > PFI_RUNS_MAX_CAP_W)
        return fail(r, PFI_ERR_VALUE, line, r->header[i],
                    "the cap pattern's group in '%.60s' is not a number > 0 and at most %g", f[i],
                    PFI_RUNS_MAX_CAP_W);
    run->valid |= PFI_RUN_CAP;
    return PFI_OK;
}

static pfi_error parse_row(reader *r, const char *const *f, const size_t *len, long line, row *out)
{
    const columns *c = &r->col;
    pfi_run *run = &out->run;
    memset(out, 0, sizeof *out);
    /* missing stays NaN in every field, not only behind its flag */
    run->cap_w = run->power_w = run->throughput = NAN;
    run->power_se_w = run->throughput_se = run->gpus = NAN;
    run->line = line;
    pfi_error e;
    bool ok;
    if ((e = parse_cap(r, f, len, line, run)) != PFI_OK)
        return e;

    /* power: the sum of every mapped column; any missing part makes the sum missing */
    double sum = 0.0;
    bool all = true;
    for (size_t k = 0; k < c->n_power; k++) {
        double v;
        e = number(r, f, len, c->power[k], line,
                   c->power_is_energy ? "an energy in J (a number >= 0)"
                                      : "a power in W (a number >= 0)",
                   &v, &ok);
        if (e != PFI_OK)
            return e;
        if (ok)
            sum += v;
        else
            all = false;
    }
    if (c->power_is_energy) {
        double d;
        if ((e = number(r, f, len, c->duration, line, "a duration in s (a number > 0)", &d, &ok)) !=
            PFI_OK)
            return e;
        if (ok && d == 0)
            return fail(r, PFI_ERR_VALUE, line, r->header[c->duration],
                        "expected a duration in s (a number > 0), found 0");
        all = all && ok;
        sum = all ? sum / d : NAN;
    }
    /* a sum or quotient of finite cells can still overflow (1e308 + 1e308, 1e308 J / 1e-10 s) */
    if (all && !isfinite(sum))
        return fail(r, PFI_ERR_VALUE, line, r->header[c->power[0]],
                    "the %s of this row is not a finite number (values out of range)",
                    c->power_is_energy ? "power computed from energy and duration" : "power");
    if (all && sum > PFI_RUNS_MAX_POWER_W)
        return fail(r, PFI_ERR_VALUE, line, r->header[c->power[0]],
                    "expected a power in W of at most %g (a whole job's), found %s%.17g W",
                    PFI_RUNS_MAX_POWER_W,
                    c->power_is_energy ? "energy / duration = "
                    : c->n_power > 1   ? "a sum of "
                                       : "",
                    sum);
    if (all) {
        run->power_w = sum;
        run->valid |= PFI_RUN_POWER;
    }

    double tp;
    if ((e = number(r, f, len, c->throughput, line,
                    c->throughput_is_time ? "a time per unit of work in s (a number > 0)"
                                          : "a throughput (a number >= 0)",
                    &tp, &ok)) != PFI_OK)
        return e;
    if (ok && c->throughput_is_time) {
        if (tp == 0)
            return fail(r, PFI_ERR_VALUE, line, r->header[c->throughput],
                        "expected a time per unit of work in s (a number > 0), found 0");
        tp = 1.0 / tp;
        if (!isfinite(tp))
            return fail(r, PFI_ERR_VALUE, line, r->header[c->throughput],
                        "a time per unit of work this small gives no finite throughput");
    }
    if (ok) {
        run->throughput = tp;
        run->valid |= PFI_RUN_THROUGHPUT;
    }

    double v;
    if (c->power_se >= 0) {
        if ((e = number(r, f, len, c->power_se, line, "a standard error in W (a number >= 0)", &v,
                        &ok)) != PFI_OK)
            return e;
        if (ok) {
            run->power_se_w = v;
            run->valid |= PFI_RUN_POWER_SE;
        }
    }
    long se_col = c->throughput_se >= 0 ? c->throughput_se : c->time_se;
    if (se_col >= 0) {
        if ((e = number(r, f, len, se_col, line, "a standard error (a number >= 0)", &v, &ok)) !=
            PFI_OK)
            return e;
        if (ok && c->time_se >= 0) {
            /* delta method: T = 1/t, se(T) = se(t)/t^2; needs the time itself */
            ok = c->throughput_is_time && (run->valid & PFI_RUN_THROUGHPUT);
            v = ok ? v * tp * tp : NAN;
            if (ok && !isfinite(v))
                return fail(r, PFI_ERR_VALUE, line, r->header[se_col],
                            "the throughput standard error from this time standard error is "
                            "not a finite number");
        }
        if (ok) {
            run->throughput_se = v;
            run->valid |= PFI_RUN_THROUGHPUT_SE;
        }
    }
    if (c->gpus >= 0) {
        if ((e = number(r, f, len, c->gpus, line, "a GPU count (an integer >= 1)", &v, &ok)) !=
            PFI_OK)
            return e;
        char buf[32];
        if (ok && (v < 1 || v != floor(v) || v > 1e7))
            return fail(r, PFI_ERR_VALUE, line, r->header[c->gpus],
                        "expected a GPU count (an integer >= 1), found '%.60s'",
                        shown(r, f, c->gpus, buf, sizeof buf));
        if (ok) {
            run->gpus = v;
            run->valid |= PFI_RUN_GPUS;
        }
    }
    if (c->job_class >= 0 && !pfi_value_is_missing_token(f[c->job_class], len[c->job_class])) {
        out->job_class = pfi_strdup(f[c->job_class]);
        if (out->job_class == NULL)
            return PFI_ERR_NOMEM;
    }
    return PFI_OK;
}

/* The group key: the values joined by the ASCII unit separator, which CSV text never needs. */
static pfi_error make_key(reader *r, size_t n_key, const char *const *f, const size_t *len,
                          long line, row *out)
{
    size_t total = 1;
    for (size_t k = 0; k < n_key; k++)
        total += (r->col.key[k] < 0 ? strlen(r->base) : len[r->col.key[k]]) + 1;
    char *key = pfi_malloc(total);
    if (key == NULL)
        return PFI_ERR_NOMEM;
    size_t used = 0;
    for (size_t k = 0; k < n_key; k++) {
        const char *v = r->col.key[k] < 0 ? r->base : f[r->col.key[k]];
        size_t n = r->col.key[k] < 0 ? strlen(r->base) : len[r->col.key[k]];
        if (memchr(v, '\x1f', n) != NULL) {
            pfi_free(key);
            return fail(r, PFI_ERR_VALUE, line,
                        r->col.key[k] < 0 ? PFI_FILE_COLUMN : r->header[r->col.key[k]],
                        "a group key holds the control character 0x1F (unit separator)");
        }
        memcpy(key + used, v, n);
        used += n;
        key[used++] = '\x1f';
    }
    key[used] = '\0';
    out->key = key;
    return PFI_OK;
}

static void rows_free(reader *r)
{
    for (size_t i = 0; i < r->n_rows; i++) {
        pfi_free(r->rows[i].key);
        pfi_free(r->rows[i].job_class);
    }
    pfi_free(r->rows);
    r->rows = NULL;
    r->n_rows = 0;
}

/* Sort row indexes by key, then by line (stable first-appearance order). */
static int by_key_then_line(const void *a, const void *b, void *ctx)
{
    const row *rows = ctx;
    const row *x = &rows[*(const size_t *)a], *y = &rows[*(const size_t *)b];
    int c = strcmp(x->key, y->key);
    if (c != 0)
        return c;
    return (x->run.line > y->run.line) - (x->run.line < y->run.line);
}

static int by_cap_desc(const void *a, const void *b)
{
    const pfi_run *x = a, *y = b;
    bool xc = x->valid & PFI_RUN_CAP, yc = y->valid & PFI_RUN_CAP;
    if (xc != yc)
        return xc ? -1 : 1;
    if (xc && x->cap_w != y->cap_w)
        return x->cap_w > y->cap_w ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

typedef struct group_span {
    size_t first; /* index into order[] */
    size_t n;
    long first_line;
} group_span;

static int by_first_line(const void *a, const void *b)
{
    const group_span *x = a, *y = b;
    return (x->first_line > y->first_line) - (x->first_line < y->first_line);
}

static pfi_error split_key(const char *key, size_t n_key, char ***out)
{
    char **values = pfi_calloc(n_key ? n_key : 1, sizeof *values);
    if (values == NULL)
        return PFI_ERR_NOMEM;
    const char *p = key;
    for (size_t k = 0; k < n_key; k++) {
        const char *sep = strchr(p, '\x1f');
        values[k] = pfi_strndup(p, (size_t)(sep - p));
        if (values[k] == NULL) {
            for (size_t j = 0; j < k; j++)
                pfi_free(values[j]);
            pfi_free(values);
            return PFI_ERR_NOMEM;
        }
        p = sep + 1;
    }
    *out = values;
    return PFI_OK;
}

/* Group the rows of one file and append the groups (and the file) to t. */
static pfi_error append_groups(pfi_runs_table *t, reader *r, const pfi_mapping *m, const char *name)
{
    size_t *order = pfi_malloc(r->n_rows * sizeof *order);
    group_span *spans = pfi_malloc(r->n_rows * sizeof *spans);
    char *file = pfi_strdup(name);
    char **names = pfi_calloc(m->n_group, sizeof *names);
    char ***knf = pfi_realloc(t->key_names_by_file, (t->n_files + 1) * sizeof *knf);
    if (knf)
        t->key_names_by_file = knf;
    size_t *nkf = pfi_realloc(t->n_key_by_file, (t->n_files + 1) * sizeof *nkf);
    if (nkf)
        t->n_key_by_file = nkf;
    char **files = pfi_realloc(t->files, (t->n_files + 1) * sizeof *files);
    if (files)
        t->files = files;
    pfi_error e = PFI_OK;
    if (!order || !spans || !file || !names || !knf || !nkf || !files)
        e = PFI_ERR_NOMEM;
    for (size_t k = 0; e == PFI_OK && k < m->n_group; k++)
        if ((names[k] = pfi_strdup(m->group[k])) == NULL)
            e = PFI_ERR_NOMEM;

    size_t n_spans = 0;
    if (e == PFI_OK) {
        for (size_t i = 0; i < r->n_rows; i++)
            order[i] = i;
        qsort_r(order, r->n_rows, sizeof *order, by_key_then_line, r->rows);
        for (size_t i = 0; i < r->n_rows; i++) {
            if (i == 0 || strcmp(r->rows[order[i]].key, r->rows[order[i - 1]].key) != 0)
                spans[n_spans++] = (group_span){i, 0, r->rows[order[i]].run.line};
            spans[n_spans - 1].n++;
        }
        qsort(spans, n_spans, sizeof *spans, by_first_line);
        if (t->n_groups + n_spans > t->groups_cap) {
            size_t cap = t->groups_cap ? t->groups_cap : 64;
            while (cap < t->n_groups + n_spans)
                cap *= 2;
            pfi_group *g = pfi_realloc(t->groups, cap * sizeof *g);
            if (g == NULL)
                e = PFI_ERR_NOMEM;
            else {
                t->groups = g;
                t->groups_cap = cap;
            }
        }
    }
    size_t added = 0;
    for (size_t s = 0; e == PFI_OK && s < n_spans; s++) {
        pfi_group *g = &t->groups[t->n_groups + added];
        memset(g, 0, sizeof *g);
        g->file_index = t->n_files;
        g->n_key = m->n_group;
        g->key_names = (const char *const *)names;
        g->runs = pfi_malloc(spans[s].n * sizeof *g->runs);
        if (g->runs == NULL ||
            split_key(r->rows[order[spans[s].first]].key, m->n_group, &g->key_values) != PFI_OK) {
            pfi_free(g->runs);
            e = PFI_ERR_NOMEM;
            break;
        }
        g->n_runs = spans[s].n;
        /* one configuration: its rows must agree on the job class and the GPU count */
        const row *first_class = NULL, *first_gpus = NULL;
        for (size_t i = 0; i < spans[s].n && e == PFI_OK; i++) {
            row *rw = &r->rows[order[spans[s].first + i]];
            g->runs[i] = rw->run;
            if (rw->job_class != NULL && first_class == NULL)
                first_class = rw;
            else if (rw->job_class != NULL && strcmp(rw->job_class, first_class->job_class) != 0)
                e = fail(r, PFI_ERR_VALUE, rw->run.line, m->job_class,
                         "job class '%.40s' differs from '%.40s' on line %ld of the same sweep "
                         "group",
                         rw->job_class, first_class->job_class, first_class->run.line);
            if ((rw->run.valid & PFI_RUN_GPUS) && first_gpus == NULL)
                first_gpus = rw;
            else if ((rw->run.valid & PFI_RUN_GPUS) && rw->run.gpus != first_gpus->run.gpus)
                e = fail(r, PFI_ERR_VALUE, rw->run.line, m->gpus,
                         "GPU count %g differs from %g on line %ld of the same sweep group",
                         rw->run.gpus, first_gpus->run.gpus, first_gpus->run.line);
        }
        if (e != PFI_OK) {
            pfi_free(g->runs);
            for (size_t k = 0; k < g->n_key; k++)
                pfi_free(g->key_values[k]);
            pfi_free(g->key_values);
            break;
        }
        if (first_class != NULL) {
            g->job_class = first_class->job_class;
            ((row *)first_class)->job_class = NULL;
        }
        qsort(g->runs, g->n_runs, sizeof *g->runs, by_cap_desc);
        added++;
    }
    if (e != PFI_OK) {
        for (size_t i = 0; i < added; i++)
            group_free(&t->groups[t->n_groups + i]);
        if (names)
            for (size_t k = 0; k < m->n_group; k++)
                pfi_free(names[k]);
        pfi_free(names);
        pfi_free(file);
    } else {
        t->files[t->n_files] = file;
        t->key_names_by_file[t->n_files] = names;
        t->n_key_by_file[t->n_files] = m->n_group;
        t->n_files++;
        t->n_groups += added;
        t->n_runs += r->n_rows;
    }
    pfi_free(order);
    pfi_free(spans);
    return e;
}

/* The header's names, copied, and the mapping's columns found among them. */
static pfi_error take_header(reader *r, const pfi_mapping *m, const char *const *f, size_t n,
                             long line)
{
    r->header = pfi_calloc(n, sizeof *r->header);
    if (r->header == NULL)
        return PFI_ERR_NOMEM;
    r->n_header = n;
    r->header_line = line;
    for (size_t i = 0; i < n; i++)
        if ((r->header[i] = pfi_strdup(f[i])) == NULL)
            return PFI_ERR_NOMEM;
    return resolve_columns(r, m);
}

/* One data row of n fields: checked, parsed and keyed into r->rows. */
static pfi_error take_row(reader *r, const pfi_mapping *m, const char *const *f, const size_t *len,
                          size_t n, long line)
{
    if (n != r->n_header)
        return fail(r, PFI_ERR_PARSE, line, NULL, "expected %zu fields as in the header, found %zu",
                    r->n_header, n);
    if (r->n_rows == PFI_RUNS_MAX_ROWS)
        return fail(r, PFI_ERR_LIMIT, line, NULL, "more than %d data rows in one file",
                    PFI_RUNS_MAX_ROWS);
    if (r->n_rows == r->rows_cap) {
        size_t cap = r->rows_cap ? 2 * r->rows_cap : 256;
        row *p = pfi_realloc(r->rows, cap * sizeof *p);
        if (p == NULL)
            return PFI_ERR_NOMEM;
        r->rows = p;
        r->rows_cap = cap;
    }
    row *rw = &r->rows[r->n_rows];
    pfi_error e = parse_row(r, f, len, line, rw);
    if (e == PFI_OK)
        e = make_key(r, m->n_group, f, len, line, rw);
    if (e != PFI_OK) {
        pfi_free(rw->job_class);
        pfi_free(rw->key);
        return e;
    }
    r->n_rows++;
    return PFI_OK;
}

static pfi_error read_records(pfi_runs_table *t, pfi_csv_reader *csv, reader *r,
                              const pfi_mapping *m)
{
    const char *const *f;
    const size_t *len;
    size_t n;
    long line;
    bool eof;
    pfi_error e = pfi_csv_next(csv, &f, &len, &n, &line, &eof, r->diag);
    if (e != PFI_OK)
        return e;
    if (eof)
        return fail(r, PFI_ERR_EMPTY, 0, NULL, "empty file: expected a CSV header line");
    if ((e = take_header(r, m, f, n, line)) != PFI_OK)
        return e;
    for (;;) {
        if ((e = pfi_csv_next(csv, &f, &len, &n, &line, &eof, r->diag)) != PFI_OK)
            return e;
        if (eof)
            break;
        if ((e = take_row(r, m, f, len, n, line)) != PFI_OK)
            return e;
    }
    if (r->n_rows == 0)
        return fail(r, PFI_ERR_EMPTY, 0, NULL, "no data rows after the header");
    return append_groups(t, r, m, r->name);
}

/* A table held as data (pfi_runs_read_cells). */
typedef struct cell_table {
    const char *const *header;
    size_t n_columns;
    const pfi_runs_cell *cells; /* n_rows x n_columns, row-major */
    const long *line;           /* n_rows; NULL: 2, 3, ... */
    size_t n_rows;
} cell_table;

/* The rows of a cell table, through the same checks as CSV rows: a field's text is its
 * cell's text (NULL: empty), a number field is read from the cell's value by number(). */
static pfi_error read_cells(pfi_runs_table *t, const cell_table *ct, reader *r,
                            const pfi_mapping *m)
{
    pfi_error e = take_header(r, m, ct->header, ct->n_columns, 1);
    if (e != PFI_OK)
        return e;
    const char **f = pfi_calloc(ct->n_columns ? ct->n_columns : 1, sizeof *f);
    size_t *len = pfi_calloc(ct->n_columns ? ct->n_columns : 1, sizeof *len);
    if (f == NULL || len == NULL)
        e = PFI_ERR_NOMEM;
    for (size_t i = 0; e == PFI_OK && i < ct->n_rows; i++) {
        r->cells = ct->cells + i * ct->n_columns;
        for (size_t k = 0; k < ct->n_columns; k++) {
            f[k] = r->cells[k].text ? r->cells[k].text : "";
            len[k] = strlen(f[k]);
        }
        long line = ct->line ? ct->line[i] : (long)i + 2;
        e = take_row(r, m, f, len, ct->n_columns, line);
    }
    r->cells = NULL;
    pfi_free(f);
    pfi_free(len);
    if (e != PFI_OK)
        return e;
    if (r->n_rows == 0)
        return fail(r, PFI_ERR_EMPTY, 0, NULL, "no data rows after the header");
    return append_groups(t, r, m, r->name);
}

/* Read one source, CSV (csv) or cells (ct), through mapping m into t. */
static pfi_error read_with(pfi_runs_table *t, pfi_csv_reader *csv, const cell_table *ct,
                           const char *name, const pfi_mapping *m, pfi_diag *diag)
{
    reader r = {.name = name, .base = base_name(name), .diag = diag};
    char msg[256];
    pfi_error e = pfi_mapping_check(m, msg, sizeof msg);
    if (e != PFI_OK) {
        fail(&r, e, 0, NULL, "incomplete column mapping: %s", msg);
        return e;
    }
    if (m->cap_regex != NULL) {
        bool compiled = regcomp(&r.cap_re, m->cap_regex, REG_EXTENDED) == 0;
        if (!compiled || r.cap_re.re_nsub < 1) {
            if (compiled)
                regfree(&r.cap_re);
            e = fail(&r, PFI_ERR_INVALID_ARGUMENT, 0, NULL,
                     "cap pattern '%s' is not a POSIX extended regular expression with one "
                     "parenthesised group",
                     m->cap_regex);
            goto out;
        }
        r.has_cap_re = true;
    }
    e = csv != NULL ? read_records(t, csv, &r, m) : read_cells(t, ct, &r, m);
out:
    if (r.has_cap_re)
        regfree(&r.cap_re);
    rows_free(&r);
    for (size_t i = 0; i < r.n_header; i++)
        pfi_free(r.header[i]);
    pfi_free(r.header);
    pfi_free(r.col.power);
    return e;
}

pfi_error pfi_runs_read_csv(pfi_runs_table *t, const char *path, const char *name,
                            const pfi_mapping *m, pfi_diag *diag)
{
    pfi_csv_reader *csv;
    pfi_error e = pfi_csv_open(path, name ? name : path, &csv, diag);
    if (e != PFI_OK)
        return e;
    e = read_with(t, csv, NULL, name ? name : path, m, diag);
    pfi_csv_close(csv);
    return e;
}

pfi_error pfi_runs_read_stream(pfi_runs_table *t, FILE *stream, const char *name,
                               const pfi_mapping *m, pfi_diag *diag)
{
    if (name == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    pfi_csv_reader *csv;
    pfi_error e = pfi_csv_open_stream(stream, name, &csv, diag);
    if (e != PFI_OK)
        return e;
    e = read_with(t, csv, NULL, name, m, diag);
    pfi_csv_close(csv);
    return e;
}

pfi_error pfi_runs_read_cells(pfi_runs_table *t, const char *name, const char *const *header,
                              size_t n_columns, const pfi_runs_cell *cells, const long *line,
                              size_t n_rows, const pfi_mapping *m, pfi_diag *diag)
{
    if (t == NULL || name == NULL || m == NULL || (n_columns > 0 && header == NULL) ||
        (n_rows > 0 && cells == NULL))
        return PFI_ERR_INVALID_ARGUMENT;
    const cell_table ct = {
        .header = header, .n_columns = n_columns, .cells = cells, .line = line, .n_rows = n_rows};
    return read_with(t, NULL, &ct, name, m, diag);
}
