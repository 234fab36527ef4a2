/*
 * The jobs CSV of `pfi allocate`: rows of curve points grouped into jobs.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_POPULATE */
#include "pfi/jobs.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/memory.h"
#include "pfi/csv.h"
#include "pfi/topology.h"
#include "pfi/value.h"
#include "power/jobs_internal.h"

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
/* Most fields per line on the fast path (more: the general path). */
#define FAST_MAX_FIELDS 64

/* the columns that hold a number (all but job, class and node), one bit each */
#define NUM_COLS (((1u << N_COLS) - 1) & ~(1u << C_JOB | 1u << C_CLASS | 1u << C_NODE))

/* per-job numbers: gpus..band (C_GPUS..C_BAND) */
#define N_JOBV (C_BAND - C_GPUS + 1)
static const char *const col_names[N_COLS] = {
    "job",   "cap_w", "power_w", "tput_tok_s", "class",     "gpus", "weight",
    "floor", "pfi",   "feature", "cap_min_w",  "cap_max_w", "band", "node"};

/* The strings of the jobs (names, classes, nodes) are copied into blocks, each starting with
   a pointer to the block before it: one allocation per MiB or so, not one per string (100 000
   jobs made 200 000 allocations and as many frees). */
typedef struct str_block {
    struct str_block *prev;
    size_t used, cap;
    char data[];
} str_block;

static void str_blocks_free(void *head)
{
    for (str_block *b = head; b != NULL;) {
        str_block *prev = b->prev;
        pfi_free(b);
        b = prev;
    }
}

/* A NUL-terminated copy of s[0..n) in the blocks at *head (a new block when the last one is
   full); NULL when out of memory. */
static char *str_copy(void **head, const char *s, size_t n)
{
    str_block *b = *head;
    if (b == NULL || b->cap - b->used < n + 1) {
        /* 4 KiB first (a small file), then doubling to 1 MiB a block */
        size_t cap = b == NULL ? 4096 : b->cap < ((size_t)1 << 19) ? 2 * b->cap : (size_t)1 << 20;
        if (cap < n + 1)
            cap = n + 1;
        str_block *nb = pfi_malloc(sizeof *nb + cap);
        if (nb == NULL)
            return NULL;
        nb->prev = b;
        nb->used = 0;
        nb->cap = cap;
        *head = b = nb;
    }
    char *out = b->data + b->used;
    memcpy(out, s, n);
    out[n] = '\0';
    b->used += n + 1;
    return out;
}

void pfi_jobs_destroy(pfi_jobs *j)
{
    if (j == NULL)
        return;
    str_blocks_free(j->strings);
    pfi_free(j->node);
    if ((void *)j->node_line != (void *)j->node) /* a file without nodes: one array (take_jobs) */
        pfi_free(j->node_line);
    pfi_free(j->line);
    pfi_free(j->name);
    pfi_free(j->job_class);
    pfi_free(j->offset);
    pfi_free(j->cap_w);
    pfi_free(j->power_w);
    pfi_free(j->tput_tok_s);
    /* the columns the file does not have share one array of NaN: freed once */
    double *per_job[] = {j->gpus,    j->weight,   j->floor_frac, j->pfi,
                         j->feature, j->cap_lo_w, j->cap_hi_w,   j->band};
    size_t np = sizeof per_job / sizeof per_job[0];
    for (size_t i = 0; i < np; i++) {
        bool seen = false;
        for (size_t k = 0; k < i; k++)
            seen = seen || per_job[k] == per_job[i];
        if (!seen)
            pfi_free(per_job[i]);
    }
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

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* name (NUL-terminated) equals the n bytes at s */
static bool same_name(const char *name, const char *s, size_t n)
{
    return strncmp(name, s, n) == 0 && name[n] == '\0';
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
    double *jobv[N_JOBV];      /* per-job optional numbers: gpus..band (C_GPUS..C_BAND) */
    bool has_jobv[N_JOBV + 1]; /* the header has the column (the last: it lacks one) */
    bool has_cls, has_node;    /* the header has a class, a node column */
    /* the per-job arrays exist only for the columns the header has (cls, node and node_line
       for class and node, jobv[k] for has_jobv[k]); those it lacks are made once the file is
       read (take_jobs), in the memory the reader has freed by then, not in fresh pages */
    char **cls, **node;
    long *node_line;                  /* the line of each job's first node cell, 0 none */
    long *cls_line, *gpus_line;       /* not ordered: the line of each job's first class / gpus
                                         cell, 0 none */
    long *band_line;                  /* and of its first band cell (the header has band) */
    long cur_cls_line, cur_gpus_line; /* ordered: the same for the last job (the only one a
                                         row can add to) */
    long cur_band_line;               /* and its band cell's */
    long *job_line;                   /* the line of each job's first row */
    size_t *first;                    /* ordered: each job's first row */
    size_t cap_jobv;                  /* the capacity of the per-job arrays but names */
    /* ordered: rows are taken on the promise that each job's rows are adjacent and rise in
       cap (row_job, row_line not kept; the row arrays are the result); a row that breaks it
       sets unordered, and the caller reads again without the promise */
    bool ordered, unordered;
    size_t n_header;  /* the header's field count: every data row must have as many */
    int nums[N_COLS]; /* the number columns the header has, in column order */
    int n_nums;
    int jobvs[N_JOBV]; /* the per-job number columns it has (C_GPUS..C_BAND) */
    int n_jobvs;
    size_t last_len;  /* strlen of the name of take_row's last job */
    void *strings;    /* the blocks of names, classes and nodes (str_copy) */
    size_t rows_hint; /* the fast path: the most rows the file can have (0: unknown) */
    char *unknown;    /* the header's names that are no column, "'a', 'b'" (in strings), or NULL */
    bool padded;      /* the fields lie in the fast path's buffer (JOBS_BUFFER_PAD after it) */
    /* the fast path: the column of each header field, -1 none */
    signed char field_col[FAST_MAX_FIELDS];
    /* fast_line: the job cell of the row before when it took it (NULL: take_row did), the
       class cell of that row (NULL: none) and its job */
    const char *prev_job, *prev_cls;
    size_t prev_cls_len, prev_cls_job;
} reader_state;

/* s->nums and s->jobvs from the header's columns col. */
static void plan_columns(reader_state *s, const long *col)
{
    s->n_nums = s->n_jobvs = 0;
    for (int k = 0; k <= N_JOBV; k++)
        s->has_jobv[k] = false;
    for (int c = 0; c < N_COLS; c++) {
        if (c == C_JOB || c == C_CLASS || c == C_NODE || col[c] < 0)
            continue;
        s->nums[s->n_nums++] = c;
        if (c >= C_GPUS && c <= C_BAND) {
            s->jobvs[s->n_jobvs++] = c;
            s->has_jobv[c - C_GPUS] = true;
        }
    }
    s->has_jobv[N_JOBV] = s->n_jobvs < N_JOBV;
    s->has_cls = col[C_CLASS] >= 0;
    s->has_node = col[C_NODE] >= 0;
}

/* *p reallocated to n elements of elem bytes; false (*p unchanged) when out of memory. */
static bool resize(void **p, size_t n, size_t elem)
{
    void *q = pfi_realloc(*p, n * elem);
    if (q == NULL)
        return false;
    *p = q;
    return true;
}

/* The line of job j's first class cell (ordered: j is the last job, see reader_state). */
static long *cls_line_of(reader_state *s, size_t j)
{
    return s->ordered ? &s->cur_cls_line : &s->cls_line[j];
}

/* The line of job j's first gpus cell, as cls_line_of. */
static long *gpus_line_of(reader_state *s, size_t j)
{
    return s->ordered ? &s->cur_gpus_line : &s->gpus_line[j];
}

/* The line of job j's first band cell, as cls_line_of (the header has a band column). */
static long *band_line_of(reader_state *s, size_t j)
{
    return s->ordered ? &s->cur_band_line : &s->band_line[j];
}

/* A new job named name[0..len) (not looked up): its per-job slots, empty; *out its index. */
static pfi_error job_new(reader_state *s, const char *name, size_t len, size_t *out)
{
    /* the second job: room for as many jobs as the file would hold were they all as long as
       the first (and a quarter more; at most 2^20 at once), so that the per-job arrays are
       not doubled from small */
    size_t need = s->n_names + 1;
    if (s->n_names == 1 && s->rows_hint > 0 && s->n_rows > 0) {
        need = s->rows_hint / s->n_rows + s->rows_hint / s->n_rows / 4 + 64;
        need = need < ((size_t)1 << 20) ? need : (size_t)1 << 20;
    }
    if (!grow((void **)&s->names, &s->cap_names, need, sizeof *s->names))
        return PFI_ERR_NOMEM;
    if (need > s->cap_jobv) { /* every per-job array to one new capacity */
        size_t c = s->cap_jobv ? s->cap_jobv : 16;
        while (c < need)
            c *= 2;
        for (int k = 0; k < N_JOBV; k++)
            if (s->has_jobv[k] && !resize((void **)&s->jobv[k], c, sizeof(double)))
                return PFI_ERR_NOMEM;
        if ((s->has_cls && !resize((void **)&s->cls, c, sizeof(char *))) ||
            (s->has_node && (!resize((void **)&s->node, c, sizeof(char *)) ||
                             !resize((void **)&s->node_line, c, sizeof(long)))) ||
            !resize((void **)&s->job_line, c, sizeof(long)) ||
            (s->ordered ? !resize((void **)&s->first, c, sizeof(size_t))
                        : !resize((void **)&s->cls_line, c, sizeof(long)) ||
                              !resize((void **)&s->gpus_line, c, sizeof(long)) ||
                              (s->has_jobv[C_BAND - C_GPUS] &&
                               !resize((void **)&s->band_line, c, sizeof(long)))))
            return PFI_ERR_NOMEM;
        s->cap_jobv = c;
    }
    size_t n = s->n_names;
    s->names[n] = str_copy(&s->strings, name, len);
    if (s->names[n] == NULL)
        return PFI_ERR_NOMEM;
    for (int k = 0; k < N_JOBV; k++)
        if (s->has_jobv[k])
            s->jobv[k][n] = NAN;
    if (s->has_cls)
        s->cls[n] = NULL;
    if (s->has_node) {
        s->node[n] = NULL;
        s->node_line[n] = 0;
    }
    s->job_line[n] = 0;
    if (s->ordered) {
        s->first[n] = s->n_rows;
        s->cur_cls_line = s->cur_gpus_line = s->cur_band_line = 0;
    } else {
        s->cls_line[n] = 0;
        s->gpus_line[n] = 0;
        if (s->band_line != NULL)
            s->band_line[n] = 0;
    }
    *out = s->n_names++;
    return PFI_OK;
}

/* The job named name[0..len), added when new (a hash table of the names). */
static pfi_error job_index(reader_state *s, const char *name, size_t len, size_t *out)
{
    if (s->n_names * 2 >= s->table_size) {
        size_t ns = s->table_size ? s->table_size * 2 : 64;
        size_t *t = pfi_calloc(ns, sizeof *t);
        if (t == NULL)
            return PFI_ERR_NOMEM;
        for (size_t i = 0; i < s->n_names; i++) {
            size_t h = hash(s->names[i], strlen(s->names[i])) & (ns - 1);
            while (t[h])
                h = (h + 1) & (ns - 1);
            t[h] = i + 1;
        }
        pfi_free(s->table);
        s->table = t;
        s->table_size = ns;
    }
    size_t h = hash(name, len) & (s->table_size - 1);
    while (s->table[h]) {
        if (same_name(s->names[s->table[h] - 1], name, len)) {
            *out = s->table[h] - 1;
            return PFI_OK;
        }
        h = (h + 1) & (s->table_size - 1);
    }
    pfi_error e = job_new(s, name, len, out);
    if (e == PFI_OK)
        s->table[h] = *out + 1;
    return e;
}

static void state_free(reader_state *s, bool keep_names)
{
    if (!keep_names) {
        str_blocks_free(s->strings);
        s->strings = NULL;
        pfi_free(s->names);
        pfi_free(s->cls);
        pfi_free(s->node);
        pfi_free(s->node_line);
        pfi_free(s->job_line);
        for (int k = 0; k < N_JOBV; k++)
            pfi_free(s->jobv[k]);
    }
    pfi_free(s->first);
    pfi_free(s->cls_line);
    pfi_free(s->gpus_line);
    pfi_free(s->band_line);
    s->cls_line = s->gpus_line = s->band_line = NULL;
    pfi_free(s->table);
    pfi_free(s->row_job);
    pfi_free(s->row_c);
    pfi_free(s->row_p);
    pfi_free(s->row_t);
    pfi_free(s->row_line);
}

/* The header's columns (fields f[i] of slen[i] bytes, not NUL-terminated): col[c] the index
   of column c, -1 when absent; the required ones must be there. */
static pfi_error map_header(const char *const *f, const size_t *slen, size_t nf, long line,
                            const char *name, long *col, pfi_diag *d)
{
    for (int c = 0; c < N_COLS; c++) {
        col[c] = -1;
        for (size_t i = 0; i < nf; i++)
            if (slen[i] == strlen(col_names[c]) && memcmp(f[i], col_names[c], slen[i]) == 0) {
                /* a name twice: which one is meant is ambiguous (the last won silently) */
                if (col[c] >= 0)
                    return fail(d, name, line, NULL, PFI_ERR_PARSE,
                                "column '%s' appears twice in the header", col_names[c]);
                col[c] = (long)i;
            }
        if (c <= C_TPUT && col[c] < 0)
            return fail(d, name, line, col_names[c], PFI_ERR_MISSING_COLUMN,
                        "the header has no column '%s' (need job, cap_w, power_w, tput_tok_s)",
                        col_names[c]);
    }
    return PFI_OK;
}

/* s->unknown from the header's names (f[i] of slen[i] bytes) that are no column of col_names
   (a misspelt "bnad" would drop every band unsaid): each quoted, at most 400 bytes in all; an
   empty name (a trailing comma) is not one. false: out of memory. */
static bool note_unknown(reader_state *s, const char *const *f, const size_t *slen, size_t nf)
{
    char buf[480];
    size_t at = 0, more = 0;
    for (size_t i = 0; i < nf; i++) {
        bool known = slen[i] == 0;
        for (int c = 0; c < N_COLS && !known; c++)
            known = slen[i] == strlen(col_names[c]) && memcmp(f[i], col_names[c], slen[i]) == 0;
        if (known)
            continue;
        if (at > 400) {
            more++;
            continue;
        }
        int w = snprintf(buf + at, sizeof buf - at, "%s'%.*s'", at ? ", " : "",
                         (int)(slen[i] < 40 ? slen[i] : 40), f[i]);
        /* a byte that is no printable ASCII (a control character) is shown as '?' */
        for (size_t k = at; k < at + (size_t)w; k++)
            if ((unsigned char)buf[k] < 0x20 || (unsigned char)buf[k] >= 0x7f)
                buf[k] = '?';
        at += (size_t)w;
    }
    if (more > 0)
        at += (size_t)snprintf(buf + at, sizeof buf - at, " and %zu more", more);
    if (at == 0)
        return true;
    return (s->unknown = str_copy(&s->strings, buf, at)) != NULL;
}

/* 10^k, k <= 22: exact in a double. */
static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A plain decimal "[-+]D[.D]" (blanks already trimmed) whose digits (at most 19 but for
   the integer part's leading zeros) fit 2^53 exactly and whose scale is at most 10^22: m / 10^k is
   then one correctly rounded IEEE division, the value strtod gives (Clinger's fast path, "How to
   read floating point numbers accurately", PLDI 1990). false: anything else, for the general
   parser. */
static inline bool fast_number(const char *p, size_t n, double *v)
{
    const char *q = p, *end = p + n;
    bool neg = false;
    if (q < end && (*q == '-' || *q == '+'))
        neg = *q++ == '-';
    /* one loop over the digits and the point: the digits from the first one not 0 are
       counted (at most 19 are taken, more: the general parser, so m cannot wrap) */
    uint64_t m = 0;
    size_t digits = 0, any = 0;
    const char *dot = NULL;
    for (; q < end; q++) {
        unsigned c = (unsigned)(*q - '0');
        if (c < 10) {
            m = m * 10 + c;
            digits += m != 0;
            any++;
        } else if (*q == '.' && dot == NULL) {
            dot = q;
        } else {
            return false;
        }
    }
    size_t frac = dot != NULL ? (size_t)(end - dot - 1) : 0;
    if (any == 0 || digits > 19 || m > (UINT64_C(1) << 53) || frac > 22)
        return false;
    double x = frac > 0 ? (double)m / pow10_exact[frac] : (double)m; /* a whole number: exact */
    *v = neg ? -x : x;
    return true;
}

#if defined(__SSE2__)
/* The value of the k digits in the low bytes of w (0 <= k <= 8, memory order; the bytes after
   the k digits any): the digits moved to the top of a word, the bytes below them zeros (leading
   zeros), then the pairs, quads and halves combined by three multiplications (simdjson's
   parse_eight_digits_unrolled). */
static inline uint64_t digits8w(uint64_t w, unsigned k)
{
    if (k == 0)
        return 0;
    w = (w - UINT64_C(0x3030303030303030)) << (8 * (8 - k));
    w = w * 10 + (w >> 8);
    return ((w & UINT64_C(0x000000FF000000FF)) * (100 + (UINT64_C(1000000) << 32)) +
            ((w >> 16) & UINT64_C(0x000000FF000000FF)) * (1 + (UINT64_C(10000) << 32))) >>
           32;
}

/* digits8w of the 8 bytes at p. */
static inline uint64_t digits8(const char *p, unsigned k)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return digits8w(w, k);
}

/* fast_number for the usual cell without a branch on each byte (the loop's exit was a
   mispredicted branch for most numbers): "D[.D]" or ".D" of 1 <= n <= 16 bytes, at most 8
   digits on each side of the point, no sign; x: the 16 bytes at p (p[n..] any bytes, and 8
   bytes readable past p + n: the fast path's buffer and its JOBS_BUFFER_PAD). The same m and
   the same division as fast_number, so the same double; false for anything else (the caller
   asks fast_number). */
__attribute__((always_inline)) static inline bool simd_number_x(__m128i x, const char *p, size_t n,
                                                                double *v)
{
    __m128i t = _mm_sub_epi8(x, _mm_set1_epi8('0'));
    unsigned keep = (1u << n) - 1;
    unsigned dig =
        (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(9)), t));
    unsigned dot = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8('.'))) & keep;
    dig &= keep;
    /* digits and at most one point, at least one digit (one test for the three) */
    if ((((dig | dot) ^ keep) | (dot & (dot - 1)) | (unsigned)(dig == 0)) != 0)
        return false;
    unsigned ni = dot != 0 ? (unsigned)__builtin_ctz(dot) : (unsigned)n; /* before the point */
    unsigned nf = dot != 0 ? (unsigned)n - ni - 1 : 0;                   /* after it */
    static const uint64_t p10[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
    uint64_t m;
    if (dot != 0 && n <= 9 && ni < 8) { /* at most 8 digits: the point taken out, one word */
        uint64_t w0, w1, low = (UINT64_C(1) << (8 * ni)) - 1; /* ni < 8 */
        memcpy(&w0, p, sizeof w0);
        memcpy(&w1, p + 8, sizeof w1);
        m = digits8w((w0 & low) | (((w0 >> 8) | (w1 << 56)) & ~low), (unsigned)n - 1);
    } else if (dot == 0 && n <= 8) {
        m = digits8(p, (unsigned)n);
    } else if (ni <= 8 && nf <= 8) {
        m = digits8(p, ni) * p10[nf] + digits8(p + ni + 1, nf);
    } else {
        return false;
    }
    if (m > (UINT64_C(1) << 53))
        return false;
    *v = nf > 0 ? (double)m / pow10_exact[nf] : (double)m;
    return true;
}

/* simd_number_x for the cell p[0..n), its 16 bytes loaded here. */
__attribute__((always_inline)) static inline bool simd_number(const char *p, size_t n, double *v)
{
    if (n == 0 || n > 16)
        return false;
    return simd_number_x(_mm_loadu_si128((const __m128i *)(const void *)p), p, n, v);
}
#endif

/* A number cell p[0..n) of the reader: simd_number when padded (16 bytes readable at p,
   the fast path's buffer), else or when it declines fast_number. */
static inline bool cell_number(const char *p, size_t n, bool padded, double *v)
{
#if defined(__SSE2__)
    if (padded && simd_number(p, n, v))
        return true;
#else
    (void)padded;
#endif
    return fast_number(p, n, v);
}

bool jobs_fast_number(const char *p, size_t n, double *v)
{
    /* what the fast path does: the cell in a padded copy, the bytes after it digits (which
       simd_number must leave out) */
    char b[16 + JOBS_BUFFER_PAD];
    if (n > 16)
        return fast_number(p, n, v);
    memcpy(b, p, n);
    memset(b + n, '7', sizeof b - n);
    return cell_number(b, n, true, v);
}

/* Whether the names of s's jobs are all different (*unique): one hash table of their
   final size, filled with the next slots prefetched (the ordered read's check that no job
   came back after other jobs' rows, done once instead of a look-up per job). */
static pfi_error names_unique(const reader_state *s, bool *unique)
{
    size_t n = s->n_names, size = 64;
    while (size < 2 * n)
        size *= 2;
    uint32_t *t = pfi_calloc(size, sizeof *t); /* name index + 1 (n <= PFI_JOBS_MAX_POINTS) */
    if (t == NULL)
        return PFI_ERR_NOMEM;
    size_t mask = size - 1;
    /* the hashes of the next 16 names in a ring (not an array of n: less memory touched) */
    enum { AHEAD = 16, RING = 32 };
    uint64_t ring[RING];
    for (size_t i = 0; i < n && i < AHEAD; i++)
        ring[i] = hash(s->names[i], strlen(s->names[i]));
    *unique = true;
    for (size_t i = 0; i < n && *unique; i++) {
        if (i + AHEAD < n) {
            uint64_t ha = hash(s->names[i + AHEAD], strlen(s->names[i + AHEAD]));
            ring[(i + AHEAD) % RING] = ha;
            __builtin_prefetch(&t[ha & mask]);
        }
        size_t h = ring[i % RING] & mask;
        while (t[h] && *unique) {
            *unique = strcmp(s->names[t[h] - 1], s->names[i]) != 0;
            h = (h + 1) & mask;
        }
        t[h] = (uint32_t)(i + 1);
    }
    pfi_free(t);
    return PFI_OK;
}

/* The end of an ordered read, whose result is e: when two jobs have one name (a job came back
   after other jobs' rows, read as a new one), s->unordered and PFI_OK (the caller reads again
   without the promise: its result, error or not, is the one to give); else e. */
static pfi_error ordered_end(reader_state *s, pfi_error e)
{
    if (!s->ordered || e == PFI_ERR_NOMEM)
        return e;
    bool unique = true;
    pfi_error u = names_unique(s, &unique);
    if (u != PFI_OK)
        return u;
    if (!unique) {
        s->unordered = true;
        return PFI_OK;
    }
    return e;
}

/* Whether text[0..n) is only blanks. */
static bool blank(const char *text, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (text[i] != ' ' && text[i] != '\t')
            return false;
    return true;
}

/* The values column c accepts, said when a cell is refused (pfi/jobs.h's bounds). */
static const char *col_range(int c)
{
    switch (c) {
    case C_CAP:
    case C_CAP_MIN:
    case C_CAP_MAX:
        return "W a GPU, 0 to 100000";
    case C_POWER:
        return "W, above 0, at most 100000 times the job's GPUs";
    case C_TPUT:
        return "tokens/s, 0 to 1e15";
    case C_GPUS:
        return "a whole number of GPUs, 1 to 1000000";
    case C_WEIGHT:
        return "0 to 1e6";
    case C_FLOOR:
        return "a fraction of the uncapped throughput, 0 to 1";
    case C_PFI:
        return "above 0, at most 100";
    case C_FEATURE:
        return "0 to 1e15";
    case C_BAND:
        return "a number in [-1e6, 1e6]"; /* pfi_band_valid's PFI_BAND_RULE */
    default:
        return "a number";
    }
}

/* The checks of one row's numbers v[N_COLS] (NaN absent) that need no other row: gpus a whole
   number >= 1 (the band is checked as it is read: take_row), the caps at most
   PFI_JOBS_MAX_GPU_W, the throughput at most PFI_JOBS_MAX_TPUT, weight at most
   PFI_JOBS_MAX_WEIGHT, floor at most 1, pfi above 0 and at most PFI_JOBS_MAX_PFI, feature at
   most PFI_JOBS_MAX_FEATURE (each refused with its line, column and accepted range). */
static pfi_error row_bounds(const double *v, long line, const char *name, pfi_diag *d)
{
    const struct {
        int c;
        double hi;
        bool zero_ok;
    } top[] = {{C_WEIGHT, PFI_JOBS_MAX_WEIGHT, true},
               {C_FLOOR, 1.0, true},
               {C_PFI, PFI_JOBS_MAX_PFI, false},
               {C_FEATURE, PFI_JOBS_MAX_FEATURE, true}};
    for (size_t k = 0; k < sizeof top / sizeof top[0]; k++) {
        double x = v[top[k].c];
        if (!isnan(x) && (x > top[k].hi || (!top[k].zero_ok && !(x > 0))))
            return fail(d, name, line, col_names[top[k].c], PFI_ERR_VALUE,
                        "%g: out of range (expected %s)", x, col_range(top[k].c));
    }
    if (!isnan(v[C_GPUS]) &&
        (!(v[C_GPUS] >= 1) || v[C_GPUS] != floor(v[C_GPUS]) || v[C_GPUS] > PFI_JOBS_MAX_GPUS))
        return fail(d, name, line, "gpus", PFI_ERR_VALUE,
                    "%g: must be a whole number of GPUs, 1 to %d", v[C_GPUS], PFI_JOBS_MAX_GPUS);
    if (v[C_TPUT] > PFI_JOBS_MAX_TPUT)
        return fail(d, name, line, "tput_tok_s", PFI_ERR_VALUE,
                    "%g tokens/s: above %g a job, not a measured throughput", v[C_TPUT],
                    PFI_JOBS_MAX_TPUT);
    const int caps[] = {C_CAP, C_CAP_MIN, C_CAP_MAX};
    for (int k = 0; k < 3; k++)
        if (v[caps[k]] > PFI_JOBS_MAX_GPU_W)
            return fail(d, name, line, col_names[caps[k]], PFI_ERR_VALUE,
                        "%g W: a per-GPU cap above %g W is not a physical power", v[caps[k]],
                        PFI_JOBS_MAX_GPU_W);
    return PFI_OK;
}

/* One data row (fields f[0..nf) of line, f[i] of len[i] bytes, not NUL-terminated; slen[i]
   the length of a text field: len[i], or up to its first NUL from pfi/csv.h): its numbers
   checked, its job found or added, the point appended. last: the job of the previous row
   (consecutive rows of one job skip the hash), SIZE_MAX at first. */
static pfi_error take_row(reader_state *s, const long *col, const char *const *f, const size_t *len,
                          const size_t *slen, size_t nf, long line, const char *name, size_t *last,
                          pfi_diag *d)
{
    if (nf != s->n_header)
        return fail(d, name, line, NULL, PFI_ERR_PARSE,
                    "expected %zu fields as in the header, found %zu", s->n_header, nf);
    if (s->n_rows >= PFI_JOBS_MAX_POINTS)
        return fail(d, name, line, NULL, PFI_ERR_LIMIT, "more than %d rows", PFI_JOBS_MAX_POINTS);
    double v[N_COLS];
    for (int c = 0; c < N_COLS; c++)
        v[c] = NAN;
    for (int k = 0; k < s->n_nums; k++) { /* in column order: the first bad one is named */
        int c = s->nums[k];
        if ((size_t)col[c] >= nf)
            continue;
        const char *cell = f[col[c]];
        size_t cl = len[col[c]];
        if (c == C_BAND) { /* pfi_band_parse's reading, every band's; refused: its text said */
            int tl = (int)(slen[col[c]] < 60 ? slen[col[c]] : 60);
            if (cl > 0 && cell_number(cell, cl, s->padded, &v[c])) {
                if (!pfi_band_valid(v[c]))
                    return fail(d, name, line, "band", PFI_ERR_VALUE, "'%.*s': " PFI_BAND_RULE, tl,
                                cell);
                continue;
            }
            if (blank(cell, cl))
                continue;
            pfi_band_status bs = pfi_band_parse(cell, cl, &v[c]);
            if (bs == PFI_BAND_OUT_OF_RANGE)
                return fail(d, name, line, "band", PFI_ERR_VALUE, "'%.*s': " PFI_BAND_RULE, tl,
                            cell);
            if (bs != PFI_BAND_OK)
                return fail(d, name, line, "band", PFI_ERR_VALUE,
                            "'%.*s' is not a number (expected %s; leave the cell empty for none)",
                            tl, cell, col_range(c));
            continue;
        }
        if (cl > 0 && cell_number(cell, cl, s->padded, &v[c])) {
            if (v[c] < 0)
                return fail(d, name, line, col_names[c], PFI_ERR_VALUE,
                            "negative value %g (expected %s)", v[c], col_range(c));
            continue;
        }
        pfi_value_status st = pfi_value_parse(cell, cl, &v[c]);
        /* a number is a number or left empty, never "nan" (an empty cell is the missing
           value: a NaN written out by a script is a bug to be told, not a default); a curve
           point's "nan" is told so too, not as an empty cell */
        bool spelled_missing = st == PFI_VALUE_MISSING && !blank(cell, cl);
        if (st == PFI_VALUE_INVALID || spelled_missing)
            return fail(d, name, line, col_names[c], PFI_ERR_VALUE,
                        "'%.*s' is not a number (expected %s%s)",
                        (int)(slen[col[c]] < 60 ? slen[col[c]] : 60), cell, col_range(c),
                        c >= C_GPUS && c <= C_BAND ? "; leave the cell empty for none" : "");
        if (st == PFI_VALUE_OK && v[c] < 0)
            return fail(d, name, line, col_names[c], PFI_ERR_VALUE,
                        "negative value %g (expected %s)", v[c], col_range(c));
    }
    if ((size_t)col[C_JOB] >= nf || slen[col[C_JOB]] == 0)
        return fail(d, name, line, "job", PFI_ERR_VALUE, "the job name is empty");
    for (int c = C_CAP; c <= C_TPUT; c++)
        if (isnan(v[c]))
            return fail(d, name, line, col_names[c], PFI_ERR_VALUE,
                        "a curve point needs a value here");
    if (!(v[C_CAP] > 0) || !(v[C_POWER] > 0))
        return fail(d, name, line, v[C_CAP] > 0 ? "power_w" : "cap_w", PFI_ERR_VALUE,
                    "must be > 0");
    pfi_error be = row_bounds(v, line, name, d);
    if (be != PFI_OK)
        return be;
    size_t j;
    const char *job = f[col[C_JOB]];
    size_t jl = slen[col[C_JOB]];
    if (*last != SIZE_MAX && jl == s->last_len && memcmp(s->names[*last], job, jl) == 0) {
        j = *last;
        /* ordered: the job's caps rise */
        if (s->ordered && !(v[C_CAP] > s->row_c[s->n_rows - 1])) {
            s->unordered = true;
            return PFI_OK;
        }
    } else {
        /* ordered: another name is a new job (that none comes back is checked at the end:
           ordered_end) */
        pfi_error e = s->ordered ? job_new(s, job, jl, &j) : job_index(s, job, jl, &j);
        if (e != PFI_OK)
            return e;
        *last = j;
        s->last_len = strlen(s->names[j]);
        if (s->job_line[j] == 0)
            s->job_line[j] = line;
    }
    /* a job's gpus and band are one each: a later row with another is an error naming both
       lines (the other per-job numbers are taken from the job's first row that has them) */
    for (int k = 0; k < s->n_jobvs; k++) {
        int c = s->jobvs[k];
        long *at = c == C_GPUS ? gpus_line_of(s, j) : c == C_BAND ? band_line_of(s, j) : NULL;
        if (isnan(s->jobv[c - C_GPUS][j])) {
            s->jobv[c - C_GPUS][j] = v[c];
            if (at != NULL && !isnan(v[c]))
                *at = line;
        } else if (at != NULL && !isnan(v[c]) && v[c] != s->jobv[c - C_GPUS][j]) {
            /* each value in its shortest exact form: two values never print alike */
            char was[PFI_BAND_TEXT], now[PFI_BAND_TEXT];
            return fail(d, name, line, col_names[c], PFI_ERR_VALUE,
                        "job '%.100s': %s %s at line %ld, %s at line %ld", s->names[j],
                        col_names[c], pfi_band_format(s->jobv[c - C_GPUS][j], was), *at,
                        pfi_band_format(v[c], now), line);
        }
    }
    /* the whole job's power at a per-GPU power above PFI_JOBS_MAX_GPU_W: its gpus when known
       by this row; a gpus column that may give them later: the most GPUs; else 1 GPU */
    double g = !s->has_jobv[C_GPUS - C_GPUS]         ? 1
               : !isnan(s->jobv[C_GPUS - C_GPUS][j]) ? s->jobv[C_GPUS - C_GPUS][j]
                                                     : PFI_JOBS_MAX_GPUS;
    if (v[C_POWER] > PFI_JOBS_MAX_GPU_W * g)
        return fail(d, name, line, "power_w", PFI_ERR_VALUE,
                    "job '%.100s': %g W is above %g W a GPU (%g GPUs): not a physical power",
                    s->names[j], v[C_POWER], PFI_JOBS_MAX_GPU_W, g);
    if (col[C_CLASS] >= 0 && (size_t)col[C_CLASS] < nf && slen[col[C_CLASS]] > 0) {
        const char *cc = f[col[C_CLASS]];
        size_t cn = slen[col[C_CLASS]];
        if (s->cls[j] == NULL) {
            /* the class of the job before when the same (one copy of a class for a run of
               jobs: most files have a few classes), else a copy */
            if (j > 0 && s->cls[j - 1] != NULL && same_name(s->cls[j - 1], cc, cn))
                s->cls[j] = s->cls[j - 1];
            else if ((s->cls[j] = str_copy(&s->strings, cc, cn)) == NULL)
                return PFI_ERR_NOMEM;
            *cls_line_of(s, j) = line;
        } else if (!same_name(s->cls[j], cc, cn)) {
            return fail(d, name, line, "class", PFI_ERR_VALUE,
                        "job '%.100s': class '%.100s' at line %ld, '%.*s' at line %ld", s->names[j],
                        s->cls[j], *cls_line_of(s, j), (int)(cn < 100 ? cn : 100), cc, line);
        }
    }
    if (col[C_NODE] >= 0 && (size_t)col[C_NODE] < nf && slen[col[C_NODE]] > 0) {
        const char *nd = f[col[C_NODE]];
        size_t nl = slen[col[C_NODE]];
        if (s->node[j] == NULL) {
            if (j > 0 && s->node[j - 1] != NULL && same_name(s->node[j - 1], nd, nl))
                s->node[j] = s->node[j - 1]; /* as the class */
            else if ((s->node[j] = str_copy(&s->strings, nd, nl)) == NULL)
                return PFI_ERR_NOMEM;
            s->node_line[j] = line;
        } else if (!same_name(s->node[j], nd, nl)) {
            return fail(d, name, line, "node", PFI_ERR_VALUE,
                        "job '%.100s': node '%.100s' at line %ld, '%.*s' at line %ld", s->names[j],
                        s->node[j], s->node_line[j], (int)(nl < 100 ? nl : 100), nd, line);
        }
    }
    size_t n = s->n_rows + 1;
    if (!grow((void **)&s->row_c, &s->cap_rows2, n, sizeof(double)) ||
        !grow((void **)&s->row_p, &s->cap_rows3, n, sizeof(double)) ||
        !grow((void **)&s->row_t, &s->cap_rows4, n, sizeof(double)))
        return PFI_ERR_NOMEM;
    if (!s->ordered) {
        if (!grow((void **)&s->row_job, &s->cap_rows, n, sizeof *s->row_job) ||
            !grow((void **)&s->row_line, &s->cap_rows5, n, sizeof(long)))
            return PFI_ERR_NOMEM;
        s->row_job[s->n_rows] = j;
        s->row_line[s->n_rows] = line;
    }
    s->row_c[s->n_rows] = v[C_CAP];
    s->row_p[s->n_rows] = v[C_POWER];
    s->row_t[s->n_rows] = v[C_TPUT];
    s->n_rows++;
    return PFI_OK;
}

/* slen[i]: the length of field i up to its first NUL (pfi/csv.h's fields may hold one). */
static void text_lengths(const char *const *f, size_t nf, size_t *slen)
{
    for (size_t i = 0; i < nf; i++)
        slen[i] = strlen(f[i]);
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
    size_t *slen = pfi_malloc(PFI_CSV_MAX_FIELDS * sizeof *slen);
    if (slen == NULL)
        return PFI_ERR_NOMEM;
    long col[N_COLS];
    text_lengths(f, nf < PFI_CSV_MAX_FIELDS ? nf : PFI_CSV_MAX_FIELDS, slen);
    if ((e = map_header(f, slen, nf < PFI_CSV_MAX_FIELDS ? nf : PFI_CSV_MAX_FIELDS, line, name, col,
                        d)) != PFI_OK) {
        pfi_free(slen);
        return e;
    }
    plan_columns(s, col);
    s->n_header = nf < PFI_CSV_MAX_FIELDS ? nf : PFI_CSV_MAX_FIELDS;
    if (!note_unknown(s, f, slen, s->n_header)) {
        pfi_free(slen);
        return PFI_ERR_NOMEM;
    }
    size_t last = SIZE_MAX;
    for (;;) {
        e = pfi_csv_next(rd, &f, &len, &nf, &line, &eof, d);
        if (e != PFI_OK || eof)
            break;
        if (nf > PFI_CSV_MAX_FIELDS)
            nf = PFI_CSV_MAX_FIELDS;
        text_lengths(f, nf, slen);
        if ((e = take_row(s, col, f, len, slen, nf, line, name, &last, d)) != PFI_OK)
            break;
    }
    pfi_free(slen);
    if (e != PFI_OK)
        return e;
    if (s->n_rows == 0)
        return fail(d, name, 0, NULL, PFI_ERR_EMPTY, "no data rows");
    return PFI_OK;
}

#if defined(__SSE2__)
/* The bytes that end a field for the line-at-once path (fast_line), as a mask of the 64 at
   b: a separator (',' '\n') or what it leaves to the line-by-line path (a quote, a NUL, a CR,
   a blank). */
static inline uint64_t field_stops(const char *b)
{
    uint64_t m = 0;
    for (int i = 0; i < 4; i++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(b + 16 * i));
        __m128i sep = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(',')),
                                   _mm_cmpeq_epi8(x, _mm_set1_epi8('\n')));
        __m128i odd = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
                                   _mm_cmpeq_epi8(x, _mm_setzero_si128()));
        __m128i ws = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('\r')),
                                  _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(' ')),
                                               _mm_cmpeq_epi8(x, _mm_set1_epi8('\t'))));
        m |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_or_si128(sep, _mm_or_si128(odd, ws)))
             << (16 * i);
    }
    return m;
}

/* The stops (field_stops) of a buffer in order, 64 bytes at a time (one mask a block, then a
   bit a field; the blocks at 64-byte offsets from the buffer's start, so that no field's
   search waits for the one before it): the block at base, m its stops not yet given. One
   stop always lies ahead: the sentinel '\n' at the data's end. */
typedef struct stop_scan {
    const char *buf, *base;
    uint64_t m;
} stop_scan;

/* sc at p: the stops from p on. */
static inline void stops_seek(stop_scan *sc, const char *p)
{
    size_t off = (size_t)(p - sc->buf);
    sc->base = sc->buf + (off & ~(size_t)63);
    sc->m = field_stops(sc->base) & (~UINT64_C(0) << (off & 63));
}

/* The next stop. */
static inline const char *stops_next(stop_scan *sc)
{
    while (sc->m == 0) {
        sc->base += 64;
        sc->m = field_stops(sc->base);
    }
    const char *q = sc->base + __builtin_ctzll(sc->m);
    sc->m &= sc->m - 1;
    return q;
}

/* Whether the n bytes at a and b are the same (both in the fast path's buffer: 16 bytes
   readable at each). */
static inline bool same_cells(const char *a, const char *b, size_t n)
{
    if (n > 16)
        return memcmp(a, b, n) == 0;
    unsigned eq = (unsigned)_mm_movemask_epi8(
        _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)a),
                       _mm_loadu_si128((const __m128i *)(const void *)b)));
    unsigned keep = (1u << n) - 1;
    return (eq & keep) == keep;
}

/* Whether the per-job number x (NaN: none) of column c passes row_bounds. */
static inline bool jobv_ok(int c, double x)
{
    if (isnan(x))
        return true;
    switch (c) {
    case C_GPUS: /* whole: in range, then as a 64-bit integer and back */
        return x >= 1 && x <= PFI_JOBS_MAX_GPUS && x == (double)(int64_t)x;
    case C_BAND: /* the rule of every band (row_bounds) */
        return pfi_band_valid(x);
    case C_WEIGHT:
        return x <= PFI_JOBS_MAX_WEIGHT;
    case C_FLOOR:
        return x <= 1.0;
    case C_PFI:
        return x > 0 && x <= PFI_JOBS_MAX_PFI;
    case C_FEATURE:
        return x <= PFI_JOBS_MAX_FEATURE;
    default: /* C_CAP_MIN, C_CAP_MAX */
        return x <= PFI_JOBS_MAX_GPU_W;
    }
}

/*
 * A data row of an ordered read taken at once, without the line's fields gathered first: each
 * field's end the next stop of sc (stop_scan), its number read by simd_number (else
 * fast_number), then what take_row does with a row that passes every check. Only the usual row:
 * every field plain (no quote, NUL, blank, or CR but before the '\n'), as many as the header's,
 * every number taken by simd_number_x or fast_number and >= 0, every check of take_row met
 * (bounds, gpus, band, class and node as in the job's earlier rows, caps rising). Returns the next
 * line's start; NULL when the line is not such a row (nothing taken: the caller gives it to
 * the line-by-line path, whose take_row says what is wrong), or when out of memory (*e).
 */
static const char *fast_line(reader_state *s, stop_scan *sc, const char *p, long line, size_t *last,
                             pfi_error *e)
{
    const char *ls = p, *job = NULL, *cc = NULL, *nd = NULL;
    size_t jl = 0, cn = 0, nl = 0;
    double v[N_COLS];
    size_t nh = s->n_header;
    for (size_t i = 0; i < nh; i++) {
        const char *q = stops_next(sc);
        size_t n = (size_t)(q - p);
        if (*q != ',' || i + 1 == nh) { /* a line's last field ends it, no other does */
            if (i + 1 < nh || *q == ',')
                return NULL;
            if (*q == '\r' && q[1] == '\n') /* CRLF: the CR is dropped */
                q = stops_next(sc);
            else if (*q != '\n')
                return NULL;
        }
        int c = s->field_col[i];
        if (c >= 0 && (NUM_COLS >> c & 1) != 0) {
            if (n == 0) {
                v[c] = NAN; /* none (a curve point's: take_row says it needs one) */
            } else if (!simd_number(p, n, &v[c])) {
                if (!fast_number(p, n, &v[c]) || v[c] < 0)
                    return NULL;
            }
        } else if (c == C_JOB) {
            job = p;
            jl = n;
        } else if (c == C_CLASS) {
            cc = p;
            cn = n;
        } else if (c == C_NODE) {
            nd = p;
            nl = n;
        }
        p = q + 1;
    }
    if (p - ls > PFI_CSV_MAX_LINE || s->n_rows >= PFI_JOBS_MAX_POINTS || jl == 0)
        return NULL;
    double cap = v[C_CAP], pw = v[C_POWER], tp = v[C_TPUT];
    if (!(cap > 0) || !(pw > 0) || isnan(tp) || cap > PFI_JOBS_MAX_GPU_W || tp > PFI_JOBS_MAX_TPUT)
        return NULL;
    for (int k = 0; k < s->n_jobvs; k++)
        if (!jobv_ok(s->jobvs[k], v[s->jobvs[k]]))
            return NULL;
    /* the job of the row before, compared with that row's cell when fast_line took it (two
       places in the buffer: 16 bytes at once), else with its name */
    bool same = *last != SIZE_MAX && jl == s->last_len &&
                (s->prev_job != NULL ? same_cells(s->prev_job, job, jl)
                                     : memcmp(s->names[*last], job, jl) == 0);
    size_t j = same ? *last : SIZE_MAX;
    /* the checks against the job's earlier rows (a new job has none) */
    double *gpus = s->has_jobv[C_GPUS - C_GPUS] ? s->jobv[C_GPUS - C_GPUS] : NULL;
    double g = gpus == NULL ? 1 : isnan(v[C_GPUS]) ? PFI_JOBS_MAX_GPUS : v[C_GPUS];
    if (same) {
        if (!(cap > s->row_c[s->n_rows - 1]))
            return NULL; /* take_row: not ordered */
        if (gpus != NULL && !isnan(gpus[j])) {
            if (!isnan(v[C_GPUS]) && v[C_GPUS] != gpus[j])
                return NULL;
            g = gpus[j];
        }
        const double *band = s->has_jobv[C_BAND - C_GPUS] ? s->jobv[C_BAND - C_GPUS] : NULL;
        if (band != NULL && !isnan(band[j]) && !isnan(v[C_BAND]) && v[C_BAND] != band[j])
            return NULL; /* take_row: a job's band is one */
        /* the class as the row before's cell when that row was this job's (it set the
           job's class or was held to it), else as the job's class */
        if (cn > 0 && s->cls[j] != NULL &&
            !(s->prev_cls != NULL && s->prev_cls_job == j
                  ? cn == s->prev_cls_len && same_cells(s->prev_cls, cc, cn)
                  : same_name(s->cls[j], cc, cn)))
            return NULL;
        if (nl > 0 && s->node[j] != NULL && !same_name(s->node[j], nd, nl))
            return NULL;
    }
    if (pw > PFI_JOBS_MAX_GPU_W * g)
        return NULL;
    /* taken: what take_row does */
    if (!same) {
        if ((*e = job_new(s, job, jl, &j)) != PFI_OK)
            return NULL;
        *last = j;
        s->last_len = jl;
        s->job_line[j] = line;
    }
    for (int k = 0; k < s->n_jobvs; k++) {
        int c = s->jobvs[k];
        if (isnan(s->jobv[c - C_GPUS][j])) {
            s->jobv[c - C_GPUS][j] = v[c];
            if (c == C_GPUS && !isnan(v[c]))
                s->cur_gpus_line = line;
            else if (c == C_BAND && !isnan(v[c]))
                s->cur_band_line = line;
        }
    }
    if (cn > 0 && s->cls[j] == NULL) {
        if (j > 0 && s->cls[j - 1] != NULL && same_name(s->cls[j - 1], cc, cn))
            s->cls[j] = s->cls[j - 1];
        else if ((s->cls[j] = str_copy(&s->strings, cc, cn)) == NULL)
            return *e = PFI_ERR_NOMEM, NULL;
        s->cur_cls_line = line;
    }
    if (nl > 0 && s->node[j] == NULL) {
        if (j > 0 && s->node[j - 1] != NULL && same_name(s->node[j - 1], nd, nl))
            s->node[j] = s->node[j - 1];
        else if ((s->node[j] = str_copy(&s->strings, nd, nl)) == NULL)
            return *e = PFI_ERR_NOMEM, NULL;
        s->node_line[j] = line;
    }
    size_t n = s->n_rows + 1;
    if (!grow((void **)&s->row_c, &s->cap_rows2, n, sizeof(double)) ||
        !grow((void **)&s->row_p, &s->cap_rows3, n, sizeof(double)) ||
        !grow((void **)&s->row_t, &s->cap_rows4, n, sizeof(double)))
        return *e = PFI_ERR_NOMEM, NULL;
    s->row_c[s->n_rows] = cap;
    s->row_p[s->n_rows] = pw;
    s->row_t[s->n_rows] = tp;
    s->n_rows++;
    s->prev_job = job;
    s->prev_cls = cn > 0 ? cc : NULL;
    s->prev_cls_len = cn;
    s->prev_cls_job = j;
    return p;
}
#endif

/*
 * The fast path, for a whole file in memory (buf[0..n), followed by JOBS_BUFFER_PAD readable bytes,
 * the first a '\n'): when it holds no quote, no NUL byte, no CR but at a line's end, no line of
 * blanks only, no line over PFI_CSV_MAX_LINE bytes and no more than FAST_MAX_FIELDS fields on a
 * line, its lines are split on ',' (fields trimmed of blanks, a UTF-8 BOM and CRs dropped, empty
 * lines skipped: what pfi/csv.h does); buf is not written. A data row of an ordered read is
 * first offered to fast_line, which takes the usual row at once; any other line is found by
 * memchr, checked and split here, and given to take_row. *used false: the input is not for
 * this path (s left empty); the caller takes the general one. A line the path cannot take (a
 * quote or a NUL byte) is found before it is taken; any error before it is the general path's
 * too, which reads the lines before it alike. ordered: s->ordered (see reader_state);
 * s->unordered on return means: read again without it.
 */
static pfi_error read_fast(const char *buf, size_t n, const char *name, reader_state *s,
                           bool ordered, bool *used, pfi_diag *d)
{
    *used = true;
    s->ordered = ordered;
    s->padded = true;
    const char *p = buf, *end = buf + n;
    if (n >= 3 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB &&
        (unsigned char)p[2] == 0xBF)
        p += 3;
    const char *f[FAST_MAX_FIELDS];
    size_t len[FAST_MAX_FIELDS];
    long col[N_COLS];
    bool header = true;
    long line = 0;
    size_t last = SIZE_MAX;
#if defined(__SSE2__)
    stop_scan sc = {.buf = buf};
    bool synced = false; /* sc is at p */
#endif
    while (p < end) {
        line++;
#if defined(__SSE2__)
        if (!header && ordered) {
            if (!synced)
                stops_seek(&sc, p);
            pfi_error e = PFI_OK;
            const char *next = fast_line(s, &sc, p, line, &last, &e);
            if (e != PFI_OK)
                return ordered_end(s, e);
            synced = next != NULL;
            if (synced) {
                p = next;
                continue;
            }
        }
#endif
        /* the line: up to its '\n' (the sentinel at end for the last one) */
        const char *ls = p, *le = memchr(p, '\n', (size_t)(end - p) + 1);
        p = le + 1;
        if (le - ls + 1 > PFI_CSV_MAX_LINE || memchr(ls, '"', (size_t)(le - ls)) != NULL ||
            memchr(ls, '\0', (size_t)(le - ls)) != NULL) {
            *used = false; /* a quote or a NUL byte: pfi/csv.h reads it; a long line too */
            return PFI_OK;
        }
        if (le == ls)
            continue; /* an empty line */
        size_t nf = 0;
        for (const char *a = ls;;) {
            const char *c = memchr(a, ',', (size_t)(le - a));
            if (nf == FAST_MAX_FIELDS) {
                *used = false;
                return PFI_OK;
            }
            f[nf] = a;
            len[nf] = (size_t)((c != NULL ? c : le) - a);
            nf++;
            if (c == NULL)
                break;
            a = c + 1;
        }
        if (nf == 1) { /* blanks only (a CR alone too): let pfi/csv.h decide */
            const char *a = ls;
            while (a < le && (*a == ' ' || *a == '\t' || *a == '\r'))
                a++;
            if (a == le) {
                *used = false;
                return PFI_OK;
            }
        }
        if (le[-1] == '\r')
            len[nf - 1]--;
        if (memchr(ls, '\r', (size_t)(le - ls) - (le[-1] == '\r')) != NULL) {
            *used = false; /* a CR inside a line ends a record for pfi/csv.h */
            return PFI_OK;
        }
        for (size_t i = 0; i < nf; i++) { /* blanks trimmed */
            const char *a = f[i], *b = a + len[i];
            while (a < b && (*a == ' ' || *a == '\t'))
                a++;
            while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
                b--;
            f[i] = a;
            len[i] = (size_t)(b - a);
        }
        pfi_error e;
        if (header) {
            if ((e = map_header(f, len, nf, line, name, col, d)) != PFI_OK)
                return e;
            plan_columns(s, col);
            if (!note_unknown(s, f, len, nf))
                return PFI_ERR_NOMEM;
            s->n_header = nf;
            for (size_t i = 0; i < nf; i++)
                s->field_col[i] = -1;
            for (int c = 0; c < N_COLS; c++)
                if (col[c] >= 0)
                    s->field_col[col[c]] = (signed char)c;
            header = false;
            /* the row arrays once, at their most: a row has n_header - 1 commas, four
               values of a byte or more and a newline (untouched pages cost nothing) */
            size_t rest = p < end ? (size_t)(end - p) : 0, most = rest / (nf + 3) + 1;
            most = most < PFI_JOBS_MAX_POINTS ? most : PFI_JOBS_MAX_POINTS;
            s->rows_hint = most;
            if (!resize((void **)&s->row_c, most, sizeof(double)) ||
                !resize((void **)&s->row_p, most, sizeof(double)) ||
                !resize((void **)&s->row_t, most, sizeof(double)) ||
                (!ordered && (!resize((void **)&s->row_job, most, sizeof *s->row_job) ||
                              !resize((void **)&s->row_line, most, sizeof(long)))))
                return PFI_ERR_NOMEM;
            s->cap_rows2 = s->cap_rows3 = s->cap_rows4 = most;
            s->cap_rows = s->cap_rows5 = ordered ? 0 : most;
        } else {
            s->prev_job = s->prev_cls = NULL; /* for fast_line: this row is take_row's */
            if ((e = take_row(s, col, f, len, len, nf, line, name, &last, d)) != PFI_OK)
                return ordered_end(s, e);
        }
        if (s->unordered)
            return PFI_OK;
    }
    if (header)
        return fail(d, name, 0, NULL, PFI_ERR_EMPTY, "no header");
    if (s->n_rows == 0)
        return fail(d, name, 0, NULL, PFI_ERR_EMPTY, "no data rows");
    return ordered_end(s, PFI_OK);
}

/* The first bytes looked at for a NUL (binary input) before reading on. */
#define JOBS_SNIFF_BYTES ((size_t)64 << 10)

/* The most bytes a jobs file may have (more: PFI_ERR_LIMIT). */
#define PFI_JOBS_MAX_BYTES ((size_t)1 << 32)

/* The whole stream into *out (owned: pfi_free), *n bytes, then JOBS_BUFFER_PAD bytes more
   (for jobs_read_buffer). A regular file is read into one buffer of its size. */
static pfi_error slurp(FILE *stream, const char *name, char **out, size_t *n, pfi_diag *d)
{
    size_t cap = 1 << 16, len = 0;
    struct stat st;
    if (fstat(fileno(stream), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
        (unsigned long long)st.st_size < PFI_JOBS_MAX_BYTES)
        cap = (size_t)st.st_size + 1; /* + 1: the end is seen without a second buffer */
    char *buf = pfi_malloc(cap + JOBS_BUFFER_PAD);
    *out = NULL;
    for (;;) {
        if (buf == NULL)
            return PFI_ERR_NOMEM;
        errno = 0;
        size_t got = fread(buf + len, 1, cap - len, stream);
        /* A NUL in the first block: binary (/dev/zero, an archive), refused before the
           rest is read (without end from a device or an endless pipe). */
        if (len < JOBS_SNIFF_BYTES) {
            size_t end = len + got < JOBS_SNIFF_BYTES ? len + got : JOBS_SNIFF_BYTES;
            const char *nul = memchr(buf + len, '\0', end - len);
            if (nul != NULL) {
                size_t at = (size_t)(nul - buf);
                pfi_free(buf);
                return fail(d, name, 0, NULL, PFI_ERR_PARSE,
                            "not text (a NUL byte at offset %zu): is this a jobs file?", at);
            }
        }
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
            char *q = pfi_realloc(buf, 2 * cap + JOBS_BUFFER_PAD);
            if (q == NULL)
                pfi_free(buf);
            buf = q;
            cap *= 2;
        }
    }
    *out = buf;
    *n = len;
    return PFI_OK;
}

/* The jobs of buf[0..nb) (followed by JOBS_BUFFER_PAD bytes, see slurp) into s: the fast path in
   order, then without the promise of order, then pfi/csv.h. general: pfi/csv.h alone. */
static pfi_error read_buffer(char *buf, size_t nb, const char *name, bool general, reader_state *s,
                             pfi_diag *d)
{
    bool used = false;
    pfi_error e = PFI_OK;
    for (int pass = 0; !general && pass < 2; pass++) {
        e = read_fast(buf, nb, name, s, pass == 0, &used, d);
        if (e == PFI_OK && used && !s->unordered)
            return PFI_OK;
        if (e != PFI_OK && used)
            return e;
        state_free(s, false);
        memset(s, 0, sizeof *s);
        if (!used)
            break;
    }
    pfi_csv_reader *rd = NULL;
    FILE *mem = fmemopen(buf, nb, "r");
    if (mem == NULL)
        return PFI_ERR_NOMEM;
    e = pfi_csv_open_stream(mem, name, &rd, d);
    if (e == PFI_OK)
        e = read_rows(rd, name, s, d);
    pfi_csv_close(rd);
    fclose(mem);
    return e;
}

/* The per-job arrays and names of s move to j; the rest of s is freed; then the arrays of the
   columns the file lacks are made: one array of NaN shared by the per-job numbers (one array
   written, not seven), no class and no node (NULL) and no node line (0) for every job. Made
   last, they take the memory just freed. PFI_ERR_NOMEM (j then partly filled: destroy it). */
static pfi_error take_jobs(pfi_jobs *j, reader_state *s)
{
    size_t n = s->n_names, n1 = n ? n : 1;
    j->n = n;
    j->name = s->names;
    j->job_class = s->cls;
    j->node = s->node;
    j->node_line = s->node_line;
    j->line = s->job_line;
    j->strings = s->strings;
    j->unknown_columns = s->unknown;
    s->strings = NULL;
    double *v[N_JOBV];
    bool lacks = s->has_jobv[N_JOBV];
    for (int k = 0; k < N_JOBV; k++)
        v[k] = s->has_jobv[k] ? s->jobv[k] : NULL;
    bool has_cls = s->has_cls, has_node = s->has_node;
    state_free(s, true);
    double *nan = lacks ? pfi_malloc(n1 * sizeof *nan) : NULL;
    for (size_t i = 0; nan != NULL && i < n; i++)
        nan[i] = NAN;
    for (int k = 0; k < N_JOBV; k++)
        v[k] = v[k] != NULL ? v[k] : nan;
    j->gpus = v[C_GPUS - C_GPUS];
    j->weight = v[C_WEIGHT - C_GPUS];
    j->floor_frac = v[C_FLOOR - C_GPUS];
    j->pfi = v[C_PFI - C_GPUS];
    j->feature = v[C_FEATURE - C_GPUS];
    j->cap_lo_w = v[C_CAP_MIN - C_GPUS];
    j->cap_hi_w = v[C_CAP_MAX - C_GPUS];
    j->band = v[C_BAND - C_GPUS];
    if (!has_cls)
        j->job_class = pfi_calloc(n1, sizeof *j->job_class);
    if (!has_node) { /* no node (NULL) and no line (0) for any job: one array of zeros */
        _Static_assert(sizeof *j->node == sizeof *j->node_line, "one array of zeros for both");
        j->node = pfi_calloc(n1, sizeof *j->node);
        j->node_line = (long *)(void *)j->node;
    }
    if ((lacks && nan == NULL) || j->job_class == NULL || j->node == NULL || j->node_line == NULL)
        return PFI_ERR_NOMEM;
    return PFI_OK;
}

/* The jobs of s (emptied: its arrays move to *out or are freed). */
static pfi_error jobs_from_state(reader_state *sp, const char *name, pfi_jobs **out, pfi_diag *d)
{
    reader_state s = *sp;
    memset(sp, 0, sizeof *sp);
    pfi_error e = PFI_OK;
    if (s.ordered) { /* the rows are the result: each job's rows adjacent, caps rising */
        /* the offsets are the jobs' first rows, one slot more */
        pfi_jobs *j = pfi_calloc(1, sizeof *j);
        size_t *off = j != NULL ? pfi_realloc(s.first, (s.n_names + 1) * sizeof *off) : NULL;
        if (off != NULL) {
            s.first = NULL;
            j->offset = off;
            j->offset[s.n_names] = s.n_rows;
            j->cap_w = s.row_c;
            j->power_w = s.row_p;
            j->tput_tok_s = s.row_t;
            s.row_c = s.row_p = s.row_t = NULL;
        } else {
            pfi_free(j);
            state_free(&s, false);
            return PFI_ERR_NOMEM;
        }
        if (take_jobs(j, &s) != PFI_OK) {
            pfi_jobs_destroy(j);
            return PFI_ERR_NOMEM;
        }
        *out = j;
        return PFI_OK;
    }
    pfi_jobs *j = pfi_calloc(1, sizeof *j);
    {
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
    pfi_error te = take_jobs(j, &s);
    e = e != PFI_OK ? e : te;
    if (e != PFI_OK) {
        pfi_jobs_destroy(j);
        return e;
    }
    *out = j;
    return PFI_OK;
}

pfi_error jobs_read_buffer(char *buf, size_t nb, const char *name, bool general, pfi_jobs **out,
                           pfi_diag *d)
{
    *out = NULL;
    buf[nb] = '\n'; /* the fast path's sentinel, then zeros */
    memset(buf + nb + 1, 0, JOBS_BUFFER_PAD - 1);
    reader_state s;
    memset(&s, 0, sizeof s);
    pfi_error e = read_buffer(buf, nb, name, general, &s, d);
    if (e != PFI_OK) {
        state_free(&s, false);
        return e;
    }
    return jobs_from_state(&s, name, out, d);
}

/* The smallest file that is mapped rather than read (map_jobs). */
#define JOBS_MAP_MIN ((size_t)1 << 20)

/* A regular file of JOBS_MAP_MIN bytes or more (stream at its start) mapped privately, its
   *nb bytes followed by JOBS_BUFFER_PAD writable ones (the file's last page writable, the
   rest read-only; pages prefaulted): no copy of the bytes and no fresh pages to clear, which
   reading them into the heap costs (24 MB at 100 000 jobs). *mapped: the length to munmap.
   NULL when the file is not one to map or the mapping fails: the caller reads it. A file
   truncated while it is read would end the process (SIGBUS): jobs files are written, then
   read. */
static char *map_jobs(FILE *stream, size_t *nb, size_t *mapped)
{
#if defined(MAP_POPULATE)
    struct stat st;
    int fd = fileno(stream);
    long pgl = sysconf(_SC_PAGESIZE);
    if (fd < 0 || pgl <= 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size < (off_t)JOBS_MAP_MIN || (unsigned long long)st.st_size >= PFI_JOBS_MAX_BYTES ||
        ftello(stream) != 0)
        return NULL;
    size_t pg = (size_t)pgl, size = (size_t)st.st_size;
    size_t flen = (size + pg - 1) / pg * pg, total = (size + JOBS_BUFFER_PAD + pg - 1) / pg * pg;
    char *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    if (mmap(base, flen, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0) == MAP_FAILED ||
        (size % pg != 0 && mprotect(base + flen - pg, pg, PROT_READ | PROT_WRITE) != 0)) {
        munmap(base, total);
        return NULL;
    }
    *nb = size;
    *mapped = total;
    return base;
#else
    (void)stream;
    (void)nb;
    (void)mapped;
    return NULL;
#endif
}

pfi_error pfi_jobs_read_stream(FILE *stream, const char *name, pfi_jobs **out, pfi_diag *d)
{
    *out = NULL;
    size_t mapped = 0, mb = 0;
    char *map = map_jobs(stream, &mb, &mapped);
    if (map != NULL) {
        pfi_error e = jobs_read_buffer(map, mb, name, false, out, d);
        munmap(map, mapped);
        return e;
    }
    /* the whole input in memory, read by the fast path when it can; else (quotes, odd
       lines) the same bytes through pfi/csv.h */
    size_t nb = 0;
    char *buf = NULL;
    pfi_error e = slurp(stream, name, &buf, &nb, d);
    if (e != PFI_OK)
        return e;
    e = jobs_read_buffer(buf, nb, name, false, out, d);
    pfi_free(buf);
    return e;
}

pfi_error pfi_jobs_read(const char *path, pfi_jobs **out, pfi_diag *d)
{
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return fail(d, path, 0, NULL, PFI_ERR_IO, "cannot open: %s", strerror(errno));
    pfi_error e = pfi_jobs_read_stream(f, path, out, d);
    fclose(f);
    return e;
}
