/*
 * The jobs CSV of `pfi allocate`: rows of curve points grouped into jobs.
 */
#include "pfi/jobs.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "pfi/csv.h"
#include "pfi/value.h"

enum {
    C_JOB,
    C_CAP,
    C_POWER,
    C_TPUT,
    C_CLASS,
    C_GPUS,
    C_WEIGHT,
    C_FLOOR,
    C_PFI,
    C_FEATURE,
    C_CAP_MIN,
    C_CAP_MAX,
    C_BAND,
    C_NODE,
    N_COLS
};
/* per-job numbers: gpus..band (C_GPUS..C_BAND) */
#define N_JOBV (C_BAND - C_GPUS + 1)
static const char *const col_names[N_COLS] = {
    "job",   "cap_w", "power_w", "tput_tok_s", "class",     "gpus", "weight",
    "floor", "pfi",   "feature", "cap_min_w",  "cap_max_w", "band", "node"};

void pfi_jobs_destroy(pfi_jobs *j)
{
    if (j == NULL)
        return;
    for (size_t i = 0; i < j->n; i++) {
        pfi_free(j->name[i]);
        pfi_free(j->job_class[i]);
        if (j->node != NULL)
            pfi_free(j->node[i]);
    }
    pfi_free(j->node);
    pfi_free(j->node_line);
    pfi_free(j->band);
    pfi_free(j->name);
    pfi_free(j->job_class);
    pfi_free(j->offset);
    pfi_free(j->cap_w);
    pfi_free(j->power_w);
    pfi_free(j->tput_tok_s);
    pfi_free(j->gpus);
    pfi_free(j->weight);
    pfi_free(j->floor_frac);
    pfi_free(j->pfi);
    pfi_free(j->feature);
    pfi_free(j->cap_lo_w);
    pfi_free(j->cap_hi_w);
    pfi_free(j);
}

void pfi_jobs_view(const pfi_jobs *j, pfi_alloc_jobs *v)
{
    memset(v, 0, sizeof *v);
    v->n = j->n;
    v->offset = j->offset;
    v->cap_w = j->cap_w;
    v->power_w = j->power_w;
    v->tput_tok_s = j->tput_tok_s;
    v->gpus = j->gpus;
    v->weight = j->weight;
    v->floor_frac = j->floor_frac;
    v->pfi = j->pfi;
    v->feature = j->feature;
    v->cap_lo_w = j->cap_lo_w;
    v->cap_hi_w = j->cap_hi_w;
}

static pfi_error fail(pfi_diag *d, const char *name, long line, const char *col, pfi_error e,
                      const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static pfi_error fail(pfi_diag *d, const char *name, long line, const char *col, pfi_error e,
                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_diag_vset(d, name, line, col, fmt, ap);
    va_end(ap);
    return e;
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *q = pfi_realloc(*p, n * elem);
    if (q == NULL)
        return false;
    *p = q;
    *cap = n;
    return true;
}

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

typedef struct reader_state {
    char **names;
    size_t n_names, cap_names;
    size_t *table; /* open addressing: index + 1, 0 empty */
    size_t table_size;
    size_t *row_job;
    double *row_c, *row_p, *row_t;
    long *row_line;
    size_t n_rows, cap_rows, cap_rows2, cap_rows3, cap_rows4, cap_rows5;
    double *jobv[N_JOBV]; /* per-job optional numbers: gpus..band (C_GPUS..C_BAND) */
    char **cls, **node;
    long *node_line; /* the line of each job's first node cell, 0 none */
    size_t cap_jobv;
} reader_state;

static pfi_error job_index(reader_state *s, const char *name, size_t *out)
{
    if (s->n_names * 2 >= s->table_size) {
        size_t ns = s->table_size ? s->table_size * 2 : 64;
        size_t *t = pfi_calloc(ns, sizeof *t);
        if (t == NULL)
            return PFI_ERR_NOMEM;
        for (size_t i = 0; i < s->n_names; i++) {
            size_t h = hash(s->names[i]) & (ns - 1);
            while (t[h])
                h = (h + 1) & (ns - 1);
            t[h] = i + 1;
        }
        pfi_free(s->table);
        s->table = t;
        s->table_size = ns;
    }
    size_t h = hash(name) & (s->table_size - 1);
    while (s->table[h]) {
        if (strcmp(s->names[s->table[h] - 1], name) == 0) {
            *out = s->table[h] - 1;
            return PFI_OK;
        }
        h = (h + 1) & (s->table_size - 1);
    }
    if (!grow((void **)&s->names, &s->cap_names, s->n_names + 1, sizeof *s->names))
        return PFI_ERR_NOMEM;
    size_t old = s->cap_jobv;
    for (int k = 0; k < N_JOBV; k++) {
        size_t c = old;
        if (!grow((void **)&s->jobv[k], &c, s->n_names + 1, sizeof(double)))
            return PFI_ERR_NOMEM;
        if (k == N_JOBV - 1)
            s->cap_jobv = c;
    }
    size_t c = old;
    if (!grow((void **)&s->cls, &c, s->n_names + 1, sizeof(char *)))
        return PFI_ERR_NOMEM;
    c = old;
    if (!grow((void **)&s->node, &c, s->n_names + 1, sizeof(char *)))
        return PFI_ERR_NOMEM;
    c = old;
    if (!grow((void **)&s->node_line, &c, s->n_names + 1, sizeof(long)))
        return PFI_ERR_NOMEM;
    s->names[s->n_names] = pfi_strdup(name);
    if (s->names[s->n_names] == NULL)
        return PFI_ERR_NOMEM;
    for (int k = 0; k < N_JOBV; k++)
        s->jobv[k][s->n_names] = NAN;
    s->cls[s->n_names] = NULL;
    s->node[s->n_names] = NULL;
    s->node_line[s->n_names] = 0;
    s->table[h] = s->n_names + 1;
    *out = s->n_names++;
    return PFI_OK;
}

static void state_free(reader_state *s, bool keep_names)
{
    if (!keep_names) {
        for (size_t i = 0; i < s->n_names; i++) {
            pfi_free(s->names[i]);
            pfi_free(s->cls[i]);
            pfi_free(s->node[i]);
        }
        pfi_free(s->names);
        pfi_free(s->cls);
        pfi_free(s->node);
        pfi_free(s->node_line);
        for (int k = 0; k < N_JOBV; k++)
            pfi_free(s->jobv[k]);
    }
    pfi_free(s->table);
    pfi_free(s->row_job);
    pfi_free(s->row_c);
    pfi_free(s->row_p);
    pfi_free(s->row_t);
    pfi_free(s->row_line);
}

/* The header's columns: col[c] the index of column c, -1 when absent; the required ones
   must be there. */
static pfi_error map_header(const char *const *f, size_t nf, long line, const char *name, long *col,
                            pfi_diag *d)
{
    for (int c = 0; c < N_COLS; c++) {
        col[c] = -1;
        for (size_t i = 0; i < nf; i++)
            if (strcmp(f[i], col_names[c]) == 0)
                col[c] = (long)i;
        if (c <= C_TPUT && col[c] < 0)
            return fail(d, name, line, col_names[c], PFI_ERR_MISSING_COLUMN,
                        "the header has no column '%s' (need job, cap_w, power_w, tput_tok_s)",
                        col_names[c]);
    }
    return PFI_OK;
}

/* 10^k, k <= 22: exact in a double. */
static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A plain decimal "[-+]D[.D]" (blanks already trimmed) whose digits fit 2^53 exactly and
   whose scale is at most 10^22: m / 10^k is then one correctly rounded IEEE division, the
   value strtod gives (Clinger's fast path, "How to read floating point numbers accurately",
   PLDI 1990). false: anything else, for the general parser. */
static bool fast_number(const char *p, size_t n, double *v)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && (p[i] == '-' || p[i] == '+'))
        neg = p[i++] == '-';
    uint64_t m = 0;
    size_t digits = 0, frac = 0;
    bool dot = false;
    for (; i < n; i++) {
        char c = p[i];
        if (c >= '0' && c <= '9') {
            if (m > (UINT64_C(1) << 53) / 10)
                return false;
            m = m * 10 + (uint64_t)(c - '0');
            digits++;
            frac += dot;
        } else if (c == '.' && !dot) {
            dot = true;
        } else {
            return false;
        }
    }
    if (digits == 0 || m > (UINT64_C(1) << 53) || frac > 22)
        return false;
    double x = (double)m / pow10_exact[frac];
    *v = neg ? -x : x;
    return true;
}

/* One data row (fields f[0..nf) of line): its numbers checked, its job found or added, the
   point appended. last: the job of the previous row (consecutive rows of one job skip the
   hash), SIZE_MAX at first. */
static pfi_error take_row(reader_state *s, const long *col, const char *const *f, const size_t *len,
                          size_t nf, long line, const char *name, size_t *last, pfi_diag *d)
{
    if (s->n_rows >= PFI_JOBS_MAX_POINTS)
        return fail(d, name, line, NULL, PFI_ERR_LIMIT, "more than %d rows", PFI_JOBS_MAX_POINTS);
    double v[N_COLS];
    for (int c = 0; c < N_COLS; c++) {
        v[c] = NAN;
        if (c == C_JOB || c == C_CLASS || c == C_NODE || col[c] < 0 || (size_t)col[c] >= nf)
            continue;
        const char *cell = f[col[c]];
        size_t cl = len[col[c]];
        if (cl > 0 && fast_number(cell, cl, &v[c])) {
            if (v[c] < 0)
                return fail(d, name, line, col_names[c], PFI_ERR_VALUE, "negative value %g", v[c]);
            continue;
        }
        pfi_value_status st = pfi_value_parse(cell, cl, &v[c]);
        if (st == PFI_VALUE_INVALID)
            return fail(d, name, line, col_names[c], PFI_ERR_VALUE, "'%.60s' is not a number",
                        cell);
        if (st == PFI_VALUE_OK && v[c] < 0)
            return fail(d, name, line, col_names[c], PFI_ERR_VALUE, "negative value %g", v[c]);
    }
    if ((size_t)col[C_JOB] >= nf || f[col[C_JOB]][0] == '\0')
        return fail(d, name, line, "job", PFI_ERR_VALUE, "the job name is empty");
    for (int c = C_CAP; c <= C_TPUT; c++)
        if (isnan(v[c]))
            return fail(d, name, line, col_names[c], PFI_ERR_VALUE,
                        "a curve point needs a value here");
    if (!(v[C_CAP] > 0) || !(v[C_POWER] > 0))
        return fail(d, name, line, v[C_CAP] > 0 ? "power_w" : "cap_w", PFI_ERR_VALUE,
                    "must be > 0");
    size_t j;
    const char *job = f[col[C_JOB]];
    if (*last != SIZE_MAX && strcmp(s->names[*last], job) == 0) {
        j = *last;
    } else {
        pfi_error e = job_index(s, job, &j);
        if (e != PFI_OK)
            return e;
        *last = j;
    }
    for (int c = C_GPUS; c <= C_BAND; c++)
        if (isnan(s->jobv[c - C_GPUS][j]))
            s->jobv[c - C_GPUS][j] = v[c];
    if (col[C_CLASS] >= 0 && (size_t)col[C_CLASS] < nf && f[col[C_CLASS]][0] != '\0' &&
        s->cls[j] == NULL && (s->cls[j] = pfi_strdup(f[col[C_CLASS]])) == NULL)
        return PFI_ERR_NOMEM;
    if (col[C_NODE] >= 0 && (size_t)col[C_NODE] < nf && f[col[C_NODE]][0] != '\0') {
        if (s->node[j] == NULL) {
            if ((s->node[j] = pfi_strdup(f[col[C_NODE]])) == NULL)
                return PFI_ERR_NOMEM;
            s->node_line[j] = line;
        } else if (strcmp(s->node[j], f[col[C_NODE]]) != 0) {
            return fail(d, name, line, "node", PFI_ERR_VALUE,
                        "job '%.100s' is on node '%.100s' in an earlier row, '%.100s' here", job,
                        s->node[j], f[col[C_NODE]]);
        }
    }
    size_t n = s->n_rows + 1;
    if (!grow((void **)&s->row_job, &s->cap_rows, n, sizeof *s->row_job) ||
        !grow((void **)&s->row_c, &s->cap_rows2, n, sizeof(double)) ||
        !grow((void **)&s->row_p, &s->cap_rows3, n, sizeof(double)) ||
        !grow((void **)&s->row_t, &s->cap_rows4, n, sizeof(double)) ||
        !grow((void **)&s->row_line, &s->cap_rows5, n, sizeof(long)))
        return PFI_ERR_NOMEM;
    s->row_job[s->n_rows] = j;
    s->row_c[s->n_rows] = v[C_CAP];
    s->row_p[s->n_rows] = v[C_POWER];
    s->row_t[s->n_rows] = v[C_TPUT];
    s->row_line[s->n_rows] = line;
    s->n_rows++;
    return PFI_OK;
}

/* The general path: records from pfi/csv.h (quoting, long lines, every oddity). */
static pfi_error read_rows(pfi_csv_reader *rd, const char *name, reader_state *s, pfi_diag *d)
{
    const char *const *f;
    const size_t *len;
    size_t nf;
    long line;
    bool eof;
    pfi_error e = pfi_csv_next(rd, &f, &len, &nf, &line, &eof, d);
    if (e != PFI_OK)
        return e;
    if (eof)
        return fail(d, name, 0, NULL, PFI_ERR_EMPTY, "no header");
    long col[N_COLS];
    if ((e = map_header(f, nf, line, name, col, d)) != PFI_OK)
        return e;
    size_t last = SIZE_MAX;
    for (;;) {
        e = pfi_csv_next(rd, &f, &len, &nf, &line, &eof, d);
        if (e != PFI_OK)
            return e;
        if (eof)
            break;
        if ((e = take_row(s, col, f, len, nf, line, name, &last, d)) != PFI_OK)
            return e;
    }
    if (s->n_rows == 0)
        return fail(d, name, 0, NULL, PFI_ERR_EMPTY, "no data rows");
    return PFI_OK;
}

/* Most fields per line on the fast path (more: the general path). */
#define FAST_MAX_FIELDS 64

/*
 * The fast path, for a whole file in memory (buf[0..n), writable): when it holds no quote,
 * no NUL byte, no line of blanks only, no line over PFI_CSV_MAX_LINE bytes and no more than
 * FAST_MAX_FIELDS fields on a line, its lines are split in place on ',' with memchr (fields
 * trimmed of blanks, a UTF-8 BOM and CRs dropped, empty lines skipped: what pfi/csv.h does)
 * — no per-byte state machine, no copy. *used false: the input is not for this path (checked
 * before anything is read, s untouched); the caller takes the general one.
 */
static pfi_error read_fast(char *buf, size_t n, const char *name, reader_state *s, bool *used,
                           pfi_diag *d)
{
    *used = false;
    if (memchr(buf, '"', n) != NULL || memchr(buf, '\0', n) != NULL)
        return PFI_OK;
    char *p = buf, *end = buf + n;
    if (n >= 3 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB &&
        (unsigned char)p[2] == 0xBF)
        p += 3;
    for (char *q = p; q < end;) {
        char *nl = memchr(q, '\n', (size_t)(end - q));
        char *le = nl ? nl : end;
        if (le - q + 1 > PFI_CSV_MAX_LINE)
            return PFI_OK;
        char *a = q;
        size_t commas = 0;
        while (a < le && (*a == ' ' || *a == '\t' || *a == '\r'))
            a++;
        if (a == le && le > q)
            return PFI_OK; /* blanks only: let pfi/csv.h decide */
        for (char *c = q; (c = memchr(c, ',', (size_t)(le - c))) != NULL; c++)
            if (++commas >= FAST_MAX_FIELDS)
                return PFI_OK;
        q = nl ? nl + 1 : end;
    }
    *used = true;
    const char *f[FAST_MAX_FIELDS];
    size_t len[FAST_MAX_FIELDS];
    long col[N_COLS];
    bool header = true;
    long line = 0;
    size_t last = SIZE_MAX;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        char *next = nl ? nl + 1 : end;
        line++;
        if (le > p && le[-1] == '\r')
            le--;
        if (le == p) {
            p = next;
            continue;
        }
        size_t nf = 0;
        char *c = p;
        for (;;) {
            char *comma = memchr(c, ',', (size_t)(le - c));
            char *fe = comma ? comma : le;
            char *a = c, *b = fe;
            while (a < b && (*a == ' ' || *a == '\t'))
                a++;
            while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
                b--;
            *b = '\0';
            f[nf] = a;
            len[nf] = (size_t)(b - a);
            nf++;
            if (comma == NULL)
                break;
            c = comma + 1;
        }
        pfi_error e;
        if (header) {
            if ((e = map_header(f, nf, line, name, col, d)) != PFI_OK)
                return e;
            header = false;
        } else if ((e = take_row(s, col, f, len, nf, line, name, &last, d)) != PFI_OK) {
            return e;
        }
        p = next;
    }
    if (header)
        return fail(d, name, 0, NULL, PFI_ERR_EMPTY, "no header");
    if (s->n_rows == 0)
        return fail(d, name, 0, NULL, PFI_ERR_EMPTY, "no data rows");
    return PFI_OK;
}

/* The most bytes a jobs file may have (more: PFI_ERR_LIMIT). */
#define PFI_JOBS_MAX_BYTES ((size_t)1 << 32)

/* The whole stream into *out (owned: pfi_free), NUL-terminated, *n bytes. */
static pfi_error slurp(FILE *stream, const char *name, char **out, size_t *n, pfi_diag *d)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = pfi_malloc(cap + 1);
    *out = NULL;
    for (;;) {
        if (buf == NULL)
            return PFI_ERR_NOMEM;
        errno = 0;
        size_t got = fread(buf + len, 1, cap - len, stream);
        len += got;
        if (got == 0) {
            if (ferror(stream)) {
                int err = errno != 0 ? errno : EIO; /* a directory: EISDIR */
                pfi_free(buf);
                return fail(d, name, 0, NULL, PFI_ERR_IO, "%s",
                            err == EISDIR ? "is a directory, not a jobs file" : strerror(err));
            }
            break;
        }
        if (len == cap) {
            if (cap >= PFI_JOBS_MAX_BYTES) {
                pfi_free(buf);
                return fail(d, name, 0, NULL, PFI_ERR_LIMIT, "larger than %zu bytes",
                            PFI_JOBS_MAX_BYTES);
            }
            char *q = pfi_realloc(buf, 2 * cap + 1);
            if (q == NULL)
                pfi_free(buf);
            buf = q;
            cap *= 2;
        }
    }
    buf[len] = '\0';
    *out = buf;
    *n = len;
    return PFI_OK;
}

pfi_error pfi_jobs_read_stream(FILE *stream, const char *name, pfi_jobs **out, pfi_diag *d)
{
    *out = NULL;
    reader_state s;
    memset(&s, 0, sizeof s);
    /* the whole input in memory, read by the fast path when it can; else (quotes, odd
       lines) the same bytes through pfi/csv.h */
    size_t nb = 0;
    char *buf = NULL;
    pfi_error e = slurp(stream, name, &buf, &nb, d);
    if (e != PFI_OK)
        return e;
    bool used = false;
    e = read_fast(buf, nb, name, &s, &used, d);
    if (!used) {
        pfi_csv_reader *rd = NULL;
        FILE *mem = fmemopen(buf, nb, "r");
        if (mem == NULL) {
            pfi_free(buf);
            return PFI_ERR_NOMEM;
        }
        e = pfi_csv_open_stream(mem, name, &rd, d);
        if (e == PFI_OK)
            e = read_rows(rd, name, &s, d);
        pfi_csv_close(rd);
        fclose(mem);
    }
    pfi_free(buf);
    pfi_jobs *j = NULL;
    if (e == PFI_OK) {
        j = pfi_calloc(1, sizeof *j);
        if (j != NULL) {
            j->offset = pfi_calloc(s.n_names + 1, sizeof *j->offset);
            j->cap_w = pfi_malloc(s.n_rows * sizeof(double));
            j->power_w = pfi_malloc(s.n_rows * sizeof(double));
            j->tput_tok_s = pfi_malloc(s.n_rows * sizeof(double));
        }
        if (j == NULL || !j->offset || !j->cap_w || !j->power_w || !j->tput_tok_s) {
            pfi_jobs_destroy(j);
            j = NULL;
            e = PFI_ERR_NOMEM;
        }
    }
    if (e != PFI_OK) {
        state_free(&s, false);
        return e;
    }
    /* counting sort of the rows by job, then insertion sort of each job's points by cap */
    size_t *lines_at = pfi_malloc(s.n_rows * sizeof *lines_at);
    if (lines_at == NULL) {
        pfi_jobs_destroy(j);
        state_free(&s, false);
        return PFI_ERR_NOMEM;
    }
    for (size_t r = 0; r < s.n_rows; r++)
        j->offset[s.row_job[r] + 1]++;
    for (size_t i = 0; i < s.n_names; i++)
        j->offset[i + 1] += j->offset[i];
    size_t *fill = pfi_calloc(s.n_names ? s.n_names : 1, sizeof *fill);
    if (fill == NULL) {
        pfi_free(lines_at);
        pfi_jobs_destroy(j);
        state_free(&s, false);
        return PFI_ERR_NOMEM;
    }
    for (size_t r = 0; r < s.n_rows; r++) {
        size_t q = j->offset[s.row_job[r]] + fill[s.row_job[r]]++;
        size_t k = q;
        /* insertion by cap within the job */
        while (k > j->offset[s.row_job[r]] && j->cap_w[k - 1] > s.row_c[r]) {
            j->cap_w[k] = j->cap_w[k - 1];
            j->power_w[k] = j->power_w[k - 1];
            j->tput_tok_s[k] = j->tput_tok_s[k - 1];
            lines_at[k] = lines_at[k - 1];
            k--;
        }
        j->cap_w[k] = s.row_c[r];
        j->power_w[k] = s.row_p[r];
        j->tput_tok_s[k] = s.row_t[r];
        lines_at[k] = (size_t)s.row_line[r];
    }
    pfi_free(fill);
    e = PFI_OK;
    for (size_t i = 0; i < s.n_names && e == PFI_OK; i++)
        for (size_t q = j->offset[i] + 1; q < j->offset[i + 1]; q++)
            if (j->cap_w[q] == j->cap_w[q - 1]) {
                e = fail(d, name, (long)lines_at[q], "cap_w", PFI_ERR_VALUE,
                         "job '%.100s' has two points at cap %g W", s.names[i], j->cap_w[q]);
                break;
            }
    pfi_free(lines_at);
    j->n = s.n_names;
    j->name = s.names;
    j->job_class = s.cls;
    j->gpus = s.jobv[C_GPUS - C_GPUS];
    j->weight = s.jobv[C_WEIGHT - C_GPUS];
    j->floor_frac = s.jobv[C_FLOOR - C_GPUS];
    j->pfi = s.jobv[C_PFI - C_GPUS];
    j->feature = s.jobv[C_FEATURE - C_GPUS];
    j->cap_lo_w = s.jobv[C_CAP_MIN - C_GPUS];
    j->cap_hi_w = s.jobv[C_CAP_MAX - C_GPUS];
    j->band = s.jobv[C_BAND - C_GPUS];
    j->node = s.node;
    j->node_line = s.node_line;
    state_free(&s, true);
    if (e != PFI_OK) {
        pfi_jobs_destroy(j);
        return e;
    }
    *out = j;
    return PFI_OK;
}

pfi_error pfi_jobs_read(const char *path, pfi_jobs **out, pfi_diag *d)
{
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return fail(d, path, 0, NULL, PFI_ERR_IO, "cannot open");
    pfi_error e = pfi_jobs_read_stream(f, path, out, d);
    fclose(f);
    return e;
}
