/*
 * The analysed groups table: from a groups CSV or from a dataset (analysis + reference-run
 * telemetry).
 */
#include "pfi/groups.h"

#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "pfi/csv.h"
#include "pfi/featmap.h"
#include "pfi/manifest.h"
#include "pfi/runs.h"
#include "pfi/store.h"
#include "pfi/value.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= FNV_PRIME;
    }
    return h;
}

static pfi_error hash_file(const char *path, uint64_t *h)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return PFI_ERR_IO;
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        *h = fnv(*h, buf, n);
    bool bad = ferror(f);
    fclose(f);
    return bad ? PFI_ERR_IO : PFI_OK;
}

static pfi_error set_diag(pfi_diag *d, pfi_error e, const char *file, long line, const char *column,
                          const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static pfi_error set_diag(pfi_diag *d, pfi_error e, const char *file, long line, const char *column,
                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_diag_vset(d, file, line, column, fmt, ap);
    va_end(ap);
    return e;
}

void pfi_groups_destroy(pfi_groups *g)
{
    if (g == NULL)
        return;
    for (size_t i = 0; i < g->n; i++) {
        pfi_free(g->names[i]);
        pfi_free(g->classes[i]);
    }
    for (size_t j = 0; j < g->n_features; j++)
        pfi_free(g->feature_names[j]);
    pfi_free(g->names);
    pfi_free(g->classes);
    pfi_free(g->pfi);
    pfi_free(g->feature_names);
    pfi_free(g->features);
    pfi_free(g);
}

/* A table of n rows and room for cap features. */
static pfi_groups *groups_alloc(size_t n, size_t cap)
{
    pfi_groups *g = pfi_calloc(1, sizeof *g);
    if (g == NULL)
        return NULL;
    g->n = n;
    g->features_cap = cap ? cap : 1;
    g->names = pfi_calloc(n ? n : 1, sizeof *g->names);
    g->classes = pfi_calloc(n ? n : 1, sizeof *g->classes);
    g->pfi = pfi_malloc((n ? n : 1) * sizeof *g->pfi);
    g->feature_names = pfi_calloc(g->features_cap, sizeof *g->feature_names);
    g->features = pfi_malloc((n ? n : 1) * g->features_cap * sizeof *g->features);
    if (!g->names || !g->classes || !g->pfi || !g->feature_names || !g->features) {
        g->n = 0;
        pfi_groups_destroy(g);
        return NULL;
    }
    for (size_t i = 0; i < n * g->features_cap; i++)
        g->features[i] = NAN;
    for (size_t i = 0; i < n; i++)
        g->pfi[i] = NAN;
    g->source_hash = FNV_OFFSET;
    return g;
}

/* Room for one more feature column (re-laying out the row-major matrix). */
static pfi_error grow_features(pfi_groups *g)
{
    if (g->n_features < g->features_cap)
        return PFI_OK;
    if (g->features_cap >= PFI_GROUPS_MAX_FEATURES)
        return PFI_ERR_LIMIT;
    size_t cap = g->features_cap * 2;
    if (cap > PFI_GROUPS_MAX_FEATURES)
        cap = PFI_GROUPS_MAX_FEATURES;
    double *f = pfi_malloc((g->n ? g->n : 1) * cap * sizeof *f);
    char **names = pfi_realloc(g->feature_names, cap * sizeof *names);
    if (names != NULL)
        g->feature_names = names;
    if (f == NULL || names == NULL) {
        pfi_free(f);
        return PFI_ERR_NOMEM;
    }
    for (size_t i = 0; i < g->n; i++)
        for (size_t j = 0; j < cap; j++)
            f[i * cap + j] = j < g->n_features ? g->features[i * g->features_cap + j] : NAN;
    pfi_free(g->features);
    g->features = f;
    g->features_cap = cap;
    return PFI_OK;
}

/* Compact the feature matrix to stride n_features (the public layout). */
static void compact(pfi_groups *g)
{
    if (g->features_cap == g->n_features || g->n_features == 0)
        return;
    for (size_t i = 0; i < g->n; i++)
        for (size_t j = 0; j < g->n_features; j++)
            g->features[i * g->n_features + j] = g->features[i * g->features_cap + j];
    g->features_cap = g->n_features;
}

/* Re-expand to stride cap before adding a column (inverse of compact). */
static void expand(pfi_groups *g, size_t cap)
{
    for (size_t i = g->n; i-- > 0;)
        for (size_t j = g->n_features; j-- > 0;)
            g->features[i * cap + j] = g->features[i * g->n_features + j];
    for (size_t i = 0; i < g->n; i++)
        for (size_t j = g->n_features; j < cap; j++)
            g->features[i * cap + j] = NAN;
}

/* Append a column named name (missing in every row) to a table in the public layout
 * (stride n_features); *index gets its index. */
static pfi_error add_column(pfi_groups *g, const char *name, size_t *index)
{
    if (g->n_features >= PFI_GROUPS_MAX_FEATURES)
        return PFI_ERR_LIMIT;
    size_t old = g->n_features, cap = old + 1;
    double *f = pfi_realloc(g->features, (g->n ? g->n : 1) * cap * sizeof *f);
    if (f == NULL)
        return PFI_ERR_NOMEM;
    g->features = f;
    char **names = pfi_realloc(g->feature_names, cap * sizeof *names);
    if (names == NULL)
        return PFI_ERR_NOMEM;
    g->feature_names = names;
    char *copy = pfi_strdup(name);
    if (copy == NULL)
        return PFI_ERR_NOMEM;
    expand(g, cap);
    g->feature_names[old] = copy;
    g->n_features = cap;
    g->features_cap = cap;
    *index = old;
    return PFI_OK;
}

pfi_error pfi_groups_resolve(pfi_groups *g, const char *spec, size_t *index)
{
    if (g == NULL || spec == NULL || index == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    for (size_t j = 0; j < g->n_features; j++)
        if (strcmp(g->feature_names[j], spec) == 0) {
            *index = j;
            return PFI_OK;
        }
    const char *star = strchr(spec, '*');
    if (star == NULL || strchr(star + 1, '*') != NULL)
        return PFI_ERR_MISSING_COLUMN;
    char a[256], b[256];
    size_t la = (size_t)(star - spec);
    if (la == 0 || la >= sizeof a || strlen(star + 1) == 0 || strlen(star + 1) >= sizeof b)
        return PFI_ERR_MISSING_COLUMN;
    memcpy(a, spec, la);
    a[la] = '\0';
    snprintf(b, sizeof b, "%s", star + 1);
    size_t ia = 0, ib = 0;
    for (ia = 0; ia < g->n_features && strcmp(g->feature_names[ia], a); ia++)
        ;
    for (ib = 0; ib < g->n_features && strcmp(g->feature_names[ib], b); ib++)
        ;
    if (ia == g->n_features || ib == g->n_features)
        return PFI_ERR_MISSING_COLUMN;
    size_t old;
    pfi_error e = add_column(g, spec, &old);
    if (e != PFI_OK)
        return e;
    size_t cap = g->n_features;
    for (size_t i = 0; i < g->n; i++)
        g->features[i * cap + old] = g->features[i * cap + ia] * g->features[i * cap + ib];
    *index = old;
    return PFI_OK;
}

pfi_error pfi_groups_create(size_t n, pfi_groups **out)
{
    if (out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    *out = groups_alloc(n, 0);
    if (*out == NULL)
        return PFI_ERR_NOMEM;
    (*out)->features_cap = 0; /* the public layout: stride n_features (0 columns) */
    return PFI_OK;
}

pfi_error pfi_groups_set_feature(pfi_groups *g, size_t row, const char *name, double value)
{
    if (g == NULL || name == NULL || row >= g->n)
        return PFI_ERR_INVALID_ARGUMENT;
    size_t j;
    for (j = 0; j < g->n_features && strcmp(g->feature_names[j], name); j++)
        ;
    if (j == g->n_features) {
        pfi_error e = add_column(g, name, &j);
        if (e != PFI_OK)
            return e;
    }
    g->features[row * g->n_features + j] = value;
    return PFI_OK;
}

double pfi_groups_feature(const pfi_groups *g, size_t row, const char *name)
{
    if (g == NULL || name == NULL || row >= g->n)
        return NAN;
    for (size_t j = 0; j < g->n_features; j++)
        if (strcmp(g->feature_names[j], name) == 0)
            return g->features[row * g->n_features + j];
    return NAN;
}

/* ---- groups CSV ---- */

static const char *const name_columns[] = {"group", NULL};
static const char *const class_columns[] = {"job_class", "class", NULL};

static long find_column(const char *const *header, size_t n, const char *const *names)
{
    for (size_t k = 0; names[k]; k++)
        for (size_t i = 0; i < n; i++)
            if (strcmp(header[i], names[k]) == 0)
                return (long)i;
    return -1;
}

typedef struct row_buf {
    char **cells; /* rows × cols strings */
    long *lines;
    size_t rows, cap, cols;
} row_buf;

static void rows_free(row_buf *b)
{
    for (size_t i = 0; i < b->rows * b->cols; i++)
        pfi_free(b->cells[i]);
    pfi_free(b->cells);
    pfi_free(b->lines);
}

/* The header row, copied into *header (*cols strings, owned: free each and the array).
   Errors: those of pfi_csv_next, PFI_ERR_EMPTY (no header), PFI_ERR_NOMEM. */
static pfi_error read_header(pfi_csv_reader *r, const char *name, char ***header, size_t *cols,
                             pfi_diag *d)
{
    const char *const *fields;
    const size_t *lens;
    size_t nf;
    long line;
    bool eof;
    pfi_error e = pfi_csv_next(r, &fields, &lens, &nf, &line, &eof, d);
    if (e != PFI_OK)
        return e;
    if (eof)
        return set_diag(d, PFI_ERR_EMPTY, name, 0, NULL, "no header");
    /* every column is a key or a feature: a name twice is ambiguous (the last one won) */
    for (size_t i = 0; i < nf; i++)
        for (size_t k = 0; k < i; k++)
            if (fields[i][0] != '\0' && strcmp(fields[i], fields[k]) == 0)
                return set_diag(d, PFI_ERR_PARSE, name, line, NULL,
                                "column '%s' appears twice in the header", fields[i]);
    char **h = pfi_calloc(nf, sizeof *h);
    if (h == NULL)
        return PFI_ERR_NOMEM;
    for (size_t i = 0; i < nf; i++)
        if ((h[i] = pfi_strdup(fields[i])) == NULL) {
            for (size_t k = 0; k < i; k++)
                pfi_free(h[k]);
            pfi_free(h);
            return PFI_ERR_NOMEM;
        }
    *header = h;
    *cols = nf;
    return PFI_OK;
}

/* Room in b for twice as many rows (32 at first). PFI_ERR_NOMEM (b keeps what it had). */
static pfi_error rows_grow(row_buf *b)
{
    size_t cap = b->cap ? 2 * b->cap : 32;
    char **cells = pfi_realloc(b->cells, cap * b->cols * sizeof *cells);
    if (cells != NULL)
        b->cells = cells;
    long *lines = pfi_realloc(b->lines, cap * sizeof *lines);
    if (lines != NULL)
        b->lines = lines;
    if (cells == NULL || lines == NULL)
        return PFI_ERR_NOMEM;
    b->cap = cap;
    return PFI_OK;
}

/* A row of b->cols fields copied into b (room made), with its line number. PFI_ERR_NOMEM
   (the row's copies freed, b unchanged). */
static pfi_error row_copy(row_buf *b, const char *const *fields, long line)
{
    char **row = &b->cells[b->rows * b->cols];
    for (size_t i = 0; i < b->cols; i++) {
        row[i] = pfi_strdup(fields[i]);
        if (row[i] == NULL) {
            for (size_t k = 0; k < i; k++)
                pfi_free(row[k]);
            return PFI_ERR_NOMEM;
        }
    }
    b->lines[b->rows++] = line;
    return PFI_OK;
}

/* The data rows into b (b->cols fields each), every field hashed into *hash first when
   hash_fields. Errors: those of pfi_csv_next, PFI_ERR_PARSE (a row with another field
   count), PFI_ERR_LIMIT (more than 1000000 rows), PFI_ERR_NOMEM. */
static pfi_error read_rows(pfi_csv_reader *r, const char *name, uint64_t *hash, bool hash_fields,
                           row_buf *b, pfi_diag *d)
{
    const char *const *fields;
    const size_t *lens;
    size_t nf;
    long line;
    bool eof;
    size_t cols = b->cols;
    for (;;) {
        pfi_error e = pfi_csv_next(r, &fields, &lens, &nf, &line, &eof, d);
        if (e != PFI_OK || eof)
            return e;
        if (hash_fields)
            for (size_t i = 0; i < nf; i++)
                *hash = fnv(fnv(*hash, fields[i], lens[i]), ",", 1);
        if (nf != cols)
            return set_diag(d, PFI_ERR_PARSE, name, line, NULL, "%zu field%s, the header has %zu",
                            nf, nf == 1 ? "" : "s", cols);
        if (b->rows >= 1000000)
            return set_diag(d, PFI_ERR_LIMIT, name, line, NULL, "more than 1000000 groups");
        if (b->rows == b->cap && (e = rows_grow(b)) != PFI_OK)
            return e;
        if ((e = row_copy(b, fields, line)) != PFI_OK)
            return e;
    }
}

/* Feature columns: every column but the name, class and PFI ones whose non-missing cells
   are all numbers (numeric[c] set); returns their count. */
static size_t feature_columns(const row_buf *b, long c_name, long c_class, long c_pfi,
                              bool *numeric)
{
    size_t n_feat = 0, cols = b->cols;
    for (size_t c = 0; c < cols; c++) {
        if ((long)c == c_name || (long)c == c_class || (long)c == c_pfi)
            continue;
        bool ok = true;
        for (size_t i = 0; i < b->rows && ok; i++) {
            double v;
            const char *s = b->cells[i * cols + c];
            ok = pfi_value_parse(s, strlen(s), &v) != PFI_VALUE_INVALID;
        }
        numeric[c] = ok;
        n_feat += ok;
    }
    return n_feat;
}

/* Every row of b into g (sized for b->rows and the feature columns, feature names set): the
   name and a non-missing class moved out of b (NULL left there), the PFI, the features.
   Errors: PFI_ERR_VALUE (a PFI cell neither a number nor a missing value). */
static pfi_error fill_rows(pfi_groups *g, row_buf *b, char *const *header, const bool *numeric,
                           long c_name, long c_class, long c_pfi, const char *name, pfi_diag *d)
{
    size_t cols = b->cols;
    for (size_t i = 0; i < b->rows; i++) {
        char **row = &b->cells[i * cols];
        g->names[i] = row[c_name];
        row[c_name] = NULL;
        if (c_class >= 0 && !pfi_value_is_missing_token(row[c_class], strlen(row[c_class]))) {
            g->classes[i] = row[c_class];
            row[c_class] = NULL;
        }
        double v;
        pfi_value_status st = pfi_value_parse(row[c_pfi], strlen(row[c_pfi]), &v);
        if (st == PFI_VALUE_INVALID)
            return set_diag(d, PFI_ERR_VALUE, name, b->lines[i], header[c_pfi],
                            "expected a PFI (a number) or a missing value, got '%s'", row[c_pfi]);
        g->pfi[i] = v;
        size_t j = 0;
        for (size_t c = 0; c < cols; c++)
            if (numeric[c]) {
                pfi_value_parse(row[c], strlen(row[c]), &v);
                g->features[i * g->features_cap + j++] = v;
            }
    }
    return PFI_OK;
}

/*
 * A groups table from a CSV: the header, the columns found (group, class, PFI), the rows,
 * the feature columns, then the table. *hash continues over every data field when
 * hash_fields and becomes the table's source_hash.
 */
static pfi_error read_groups(pfi_csv_reader *r, const char *name, const char *pfi_column,
                             uint64_t *hash, bool hash_fields, pfi_groups **out, pfi_diag *d)
{
    char **header = NULL;
    size_t cols = 0;
    pfi_error e = read_header(r, name, &header, &cols, d);
    if (e != PFI_OK)
        return e;
    row_buf b = {.cols = cols};
    pfi_groups *g = NULL;
    bool *numeric = NULL;
    const char *const pfi_names[] = {pfi_column ? pfi_column : "pfi",
                                     pfi_column ? NULL : "pfi_ratio", NULL};
    long c_name = find_column((const char *const *)header, cols, name_columns);
    long c_class = find_column((const char *const *)header, cols, class_columns);
    long c_pfi = find_column((const char *const *)header, cols, pfi_names);
    if (c_name < 0 || c_pfi < 0) {
        e = set_diag(d, PFI_ERR_MISSING_COLUMN, name, 1, c_name < 0 ? "group" : pfi_names[0],
                     "a groups table needs a 'group' column and a PFI column ('%s'%s)",
                     pfi_names[0], pfi_column ? "" : " or 'pfi_ratio'");
        goto done;
    }
    if ((e = read_rows(r, name, hash, hash_fields, &b, d)) != PFI_OK)
        goto done;
    if (b.rows == 0) {
        e = set_diag(d, PFI_ERR_EMPTY, name, 0, NULL, "no data rows");
        goto done;
    }
    numeric = pfi_calloc(cols, sizeof *numeric);
    if (numeric == NULL) {
        e = PFI_ERR_NOMEM;
        goto done;
    }
    size_t n_feat = feature_columns(&b, c_name, c_class, c_pfi, numeric);
    if (n_feat > PFI_GROUPS_MAX_FEATURES) {
        e = set_diag(d, PFI_ERR_LIMIT, name, 1, NULL, "more than %d feature columns",
                     PFI_GROUPS_MAX_FEATURES);
        goto done;
    }
    g = groups_alloc(b.rows, n_feat);
    if (g == NULL) {
        e = PFI_ERR_NOMEM;
        goto done;
    }
    for (size_t c = 0; c < cols; c++)
        if (numeric[c]) {
            if ((g->feature_names[g->n_features++] = pfi_strdup(header[c])) == NULL) {
                e = PFI_ERR_NOMEM;
                goto done;
            }
        }
    if ((e = fill_rows(g, &b, header, numeric, c_name, c_class, c_pfi, name, d)) != PFI_OK)
        goto done;
    compact(g);
    g->source_hash = *hash;
    *out = g;
    g = NULL;
done:
    pfi_groups_destroy(g);
    rows_free(&b);
    pfi_free(numeric);
    for (size_t i = 0; i < cols; i++)
        pfi_free(header[i]);
    pfi_free(header);
    return e;
}

pfi_error pfi_groups_read_stream(FILE *stream, const char *name, const char *pfi_column,
                                 pfi_groups **out, pfi_diag *diag)
{
    if (stream == NULL || name == NULL || out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    *out = NULL;
    pfi_csv_reader *r;
    pfi_error e = pfi_csv_open_stream(stream, name, &r, diag);
    if (e != PFI_OK)
        return e;
    uint64_t h = FNV_OFFSET;
    e = read_groups(r, name, pfi_column, &h, true, out, diag);
    pfi_csv_close(r);
    return e;
}

pfi_error pfi_groups_read_csv(const char *path, const char *pfi_column, pfi_groups **out,
                              pfi_diag *diag)
{
    if (path == NULL || out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    *out = NULL;
    pfi_csv_reader *r;
    pfi_error e = pfi_csv_open(path, NULL, &r, diag);
    if (e != PFI_OK)
        return e;
    uint64_t h = FNV_OFFSET;
    e = hash_file(path, &h);
    if (e == PFI_OK)
        e = read_groups(r, path, pfi_column, &h, false, out, diag);
    else
        set_diag(diag, e, path, 0, NULL, "cannot read");
    pfi_csv_close(r);
    return e;
}

/* ---- from a dataset ---- */

/* The group's key values joined by '/', leaving out "@file" (the file name when nothing else). */
static char *group_name(const pfi_runs_table *t, const pfi_group *grp)
{
    char buf[1024] = "";
    size_t used = 0;
    for (size_t k = 0; k < grp->n_key && used < sizeof buf; k++) {
        if (strcmp(grp->key_names[k], PFI_FILE_COLUMN) == 0)
            continue;
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", used ? "/" : "",
                                 grp->key_values[k]);
    }
    if (buf[0] == '\0') {
        const char *f = t->files[grp->file_index];
        const char *slash = strrchr(f, '/');
        snprintf(buf, sizeof buf, "%s", slash ? slash + 1 : f);
    }
    return pfi_strdup(buf);
}

/* Read the feature columns of the reference rows of file fi's groups into g. */
static pfi_error read_features(pfi_groups *g, const pfi_runs_table *t, const pfi_result *res,
                               size_t fi, const char *glob_pattern, pfi_diag *d)
{
    const char *path = t->files[fi];
    pfi_csv_reader *r;
    pfi_error e = pfi_csv_open(path, NULL, &r, d);
    if (e != PFI_OK)
        return e;
    const char *const *fields;
    const size_t *lens;
    size_t nf;
    long line;
    bool eof;
    size_t *col_feature = NULL, cols = 0;
    e = pfi_csv_next(r, &fields, &lens, &nf, &line, &eof, d);
    if (e != PFI_OK || eof)
        goto done;
    cols = nf;
    col_feature = pfi_malloc((cols ? cols : 1) * sizeof *col_feature);
    if (col_feature == NULL) {
        e = PFI_ERR_NOMEM;
        goto done;
    }
    for (size_t c = 0; c < cols; c++) {
        col_feature[c] = SIZE_MAX;
        if (fnmatch(glob_pattern, fields[c], 0) != 0)
            continue;
        size_t j;
        for (j = 0; j < g->n_features && strcmp(g->feature_names[j], fields[c]); j++)
            ;
        if (j == g->n_features) {
            if ((e = grow_features(g)) != PFI_OK) {
                set_diag(d, e, path, 1, fields[c], "too many feature columns (at most %d)",
                         PFI_GROUPS_MAX_FEATURES);
                goto done;
            }
            if ((g->feature_names[j] = pfi_strdup(fields[c])) == NULL) {
                e = PFI_ERR_NOMEM;
                goto done;
            }
            g->n_features++;
        }
        col_feature[c] = j;
    }
    for (;;) {
        e = pfi_csv_next(r, &fields, &lens, &nf, &line, &eof, d);
        if (e != PFI_OK || eof)
            break;
        for (size_t gi = 0; gi < t->n_groups; gi++) {
            if (t->groups[gi].file_index != fi || !res[gi].has_reference ||
                res[gi].reference.line != line)
                continue;
            for (size_t c = 0; c < cols && c < nf; c++) {
                if (col_feature[c] == SIZE_MAX)
                    continue;
                double v;
                if (pfi_value_parse(fields[c], lens[c], &v) == PFI_VALUE_INVALID) {
                    e = set_diag(d, PFI_ERR_VALUE, path, line, g->feature_names[col_feature[c]],
                                 "expected a number or a missing value, got '%s'", fields[c]);
                    goto done;
                }
                g->features[gi * g->features_cap + col_feature[c]] = v;
            }
        }
    }
done:
    pfi_free(col_feature);
    pfi_csv_close(r);
    return e;
}

/* The options the groups table is analysed with: the caller's (or the defaults), no CI draws. */
static pfi_options groups_options(const pfi_options *o)
{
    pfi_options opt;
    if (o != NULL)
        opt = *o;
    else
        pfi_options_init(&opt);
    opt.draws = 0;
    return opt;
}

/* Every sweep group of t analysed into *res (t->n_groups results, owned by the caller:
 * results_free). */
static pfi_error analyse_groups(const pfi_runs_table *t, const pfi_options *opt, pfi_result **res)
{
    *res = pfi_calloc(t->n_groups, sizeof **res);
    return *res ? pfi_analyze(t, opt, *res) : PFI_ERR_NOMEM;
}

/* Row i of g: the group's name, job class and PFI (ratio definition). */
static pfi_error name_group(pfi_groups *g, size_t i, const pfi_runs_table *t, const pfi_result *res)
{
    g->names[i] = group_name(t, &t->groups[i]);
    if (g->names[i] == NULL ||
        (t->groups[i].job_class && !(g->classes[i] = pfi_strdup(t->groups[i].job_class))))
        return PFI_ERR_NOMEM;
    g->pfi[i] = res[i].ratio;
    return PFI_OK;
}

static void results_free(pfi_result *res, const pfi_runs_table *t)
{
    if (res != NULL && t != NULL)
        for (size_t i = 0; i < t->n_groups; i++)
            pfi_result_clear(&res[i]);
    pfi_free(res);
}

pfi_error pfi_groups_from_dataset(const char *dir, const pfi_options *o, const char *feature_glob,
                                  pfi_groups **out, pfi_diag *diag)
{
    if (dir == NULL || out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    *out = NULL;
    pfi_options opt = groups_options(o);
    pfi_manifest man;
    memset(&man, 0, sizeof man);
    pfi_runs_table *t = NULL;
    pfi_result *res = NULL;
    pfi_groups *g = NULL;
    pfi_error e = pfi_runs_table_create(&t);
    if (e == PFI_OK)
        e = pfi_dataset_read(dir, t, &man, diag);
    if (e == PFI_OK && !isnan(man.noise_rel) && man.has_noise_rel)
        opt.noise_rel = man.noise_rel;
    if (e == PFI_OK && t->n_groups == 0)
        e = set_diag(diag, PFI_ERR_EMPTY, dir, 0, NULL, "no sweep groups");
    if (e == PFI_OK)
        e = analyse_groups(t, &opt, &res);
    if (e == PFI_OK) {
        g = groups_alloc(t->n_groups, 16);
        if (g == NULL)
            e = PFI_ERR_NOMEM;
    }
    for (size_t i = 0; e == PFI_OK && i < t->n_groups; i++)
        e = name_group(g, i, t, res);
    for (size_t fi = 0; e == PFI_OK && fi < t->n_files; fi++) {
        e = hash_file(t->files[fi], &g->source_hash);
        if (e != PFI_OK)
            set_diag(diag, e, t->files[fi], 0, NULL, "cannot read");
        else
            e = read_features(g, t, res, fi, feature_glob ? feature_glob : "dcgm_*", diag);
    }
    if (e == PFI_OK) {
        compact(g);
        *out = g;
        g = NULL;
    }
    pfi_groups_destroy(g);
    results_free(res, t);
    pfi_runs_table_destroy(t);
    pfi_manifest_clear(&man);
    return e;
}

/* ---- from the run store ---- */

pfi_error pfi_groups_from_store(const char *db, const pfi_options *o, const char *group,
                                pfi_groups **out, pfi_diag *diag)
{
    if (db == NULL || out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    *out = NULL;
    pfi_options opt = groups_options(o);
    pfi_store *st = NULL;
    pfi_runs_table *t = NULL;
    pfi_result *res = NULL;
    pfi_groups *g = NULL;
    pfi_error e = pfi_store_open(db, PFI_STORE_READ, &st, diag);
    if (e == PFI_OK)
        e = pfi_runs_table_create(&t);
    if (e == PFI_OK)
        e = pfi_store_read_runs(st, t, group, NULL, diag);
    if (e == PFI_OK)
        e = analyse_groups(t, &opt, &res);
    if (e == PFI_OK)
        e = pfi_groups_create(t->n_groups, &g);
    for (size_t i = 0; e == PFI_OK && i < t->n_groups; i++) {
        if ((e = name_group(g, i, t, res)) != PFI_OK)
            break;
        if (!res[i].has_reference)
            continue;
        /* The reference run's stored features, by the group's name and the cap. */
        char(*names)[64] = NULL;
        double *values = NULL;
        size_t n = 0;
        e = pfi_store_run_features(st, g->names[i], res[i].reference.cap_w, &names, &values, &n,
                                   diag);
        if (e == PFI_OK)
            e = pfi_featmap_apply(g, i, (const char(*)[64])names, values, n);
        pfi_free(names);
        pfi_free(values);
    }
    if (e == PFI_OK)
        e = hash_file(db, &g->source_hash);
    if (e == PFI_OK) {
        *out = g;
        g = NULL;
    }
    pfi_groups_destroy(g);
    results_free(res, t);
    pfi_runs_table_destroy(t);
    pfi_store_close(st);
    return e;
}

/* ---- writing ---- */

bool pfi_groups_write_csv(const pfi_groups *g, FILE *f)
{
    fputs("group,job_class,pfi", f);
    for (size_t j = 0; j < g->n_features; j++) {
        fputc(',', f);
        pfi_csv_write_field(f, g->feature_names[j]);
    }
    fputc('\n', f);
    for (size_t i = 0; i < g->n; i++) {
        pfi_csv_write_field(f, g->names[i]);
        fputc(',', f);
        pfi_csv_write_field(f, g->classes[i] ? g->classes[i] : "");
        fputc(',', f);
        if (!isnan(g->pfi[i]))
            fprintf(f, "%.17g", g->pfi[i]);
        for (size_t j = 0; j < g->n_features; j++) {
            double v = g->features[i * g->n_features + j];
            fputc(',', f);
            if (!isnan(v))
                fprintf(f, "%.17g", v);
        }
        fputc('\n', f);
    }
    return !ferror(f);
}
