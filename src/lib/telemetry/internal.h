/*
 * The telemetry room's private interface (not installed, not part of the API): between the
 * collector (telemetry.c), the line reader (lines.c), detection (detect.c), the entry point
 * that picks a reader (read.c) and the readers — nvidia_smi.c (nvidia-smi's text: the
 * --query-gpu CSV, dmon, -q), nvidia_smi_xml.c (-q -x), dcgmi.c, prometheus.c. Fast
 * scanning primitives are scan.h's, text spans span.h's.
 */
#ifndef PFI_TELEMETRY_INTERNAL_H
#define PFI_TELEMETRY_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pfi/telemetry.h"
#include "pfi/value.h"

/* A bounded line reader: reads in 256 KiB blocks (they stay in the L2 cache while the
 * readers walk them), hands out lines without their terminator. */
typedef struct tm_lines {
    FILE *f;
    char *buf;
    size_t len, pos;
    bool eof;
    bool started; /* the first bytes were looked at for a byte order mark */
    int err;      /* errno of a failed read, 0 */
    long line;    /* lines handed out; on PFI_ERR_LINE_TOO_LONG, the long line's number */
    bool cut;     /* the line last handed out ended the input without a newline */
    char *own;    /* the allocated buffer (buf, unless buf is a mapped window) */
    /* options.map_files (tm_lines_map): a regular file's bytes are read through windows
     * mapped from it (no copy into own) while more than a window is left; the rest read. */
    int fd;    /* the file mapped from (-1: reading) */
    char *map; /* the window mapped now (NULL: none), map_len bytes */
    size_t map_len;
    long long base; /* the file offset of buf[0] */
} tm_lines;

/* Every line handed out is followed by at least TM_LINE_PAD readable bytes (the rest of the
 * block, then zeros), so the hot paths may load 16 or 64 bytes at a time past a line's end
 * without a bounds check; what lies past the end is never taken as part of the line. */
#define TM_LINE_PAD 128

pfi_error tm_lines_init(tm_lines *r, FILE *f);
void tm_lines_free(tm_lines *r);
/* Read r's file, from the next refill on, through mapped windows (options.map_files) when
 * it is a regular file whose offset is known; else nothing changes. Call before
 * tm_lines_head. The caller must survive SIGBUS (a file truncated while mapped). */
void tm_lines_map(tm_lines *r);
/* The stream's first read, 64 KiB at most (what detection looks at; r->len bytes), then a
 * byte order mark dropped. PFI_ERR_IO when the read fails (r->err). */
pfi_error tm_lines_head(tm_lines *r);
/* Next line in *s (borrowed, NOT NUL-terminated, CR stripped), *n its length; *eof at end.
 * A UTF-8 byte order mark before the first line is dropped. PFI_ERR_LINE_TOO_LONG when a
 * line exceeds PFI_TELEMETRY_MAX_LINE (r->line is then that line's number), PFI_ERR_IO when the
 * read fails (r->err). After an error the reader is not used again. */
pfi_error tm_lines_next(tm_lines *r, const char **s, size_t *n, bool *eof);
/* Drop a byte order mark at the start of the buffered bytes (once; tm_lines_next calls it). */
void tm_lines_bom(tm_lines *r);
/* Fill an empty diag message for a failed read (EISDIR: "is a directory") or a long line. */
void tm_lines_io_diag(const tm_lines *r, pfi_diag *diag);
void tm_line_too_long_diag(pfi_diag *diag);

/* Notes quote input text through tm_quote: escaped (pfi_escape), at most max input bytes. */
#define TM_QUOTE_LEN 200
char *tm_quote(char buf[TM_QUOTE_LEN], const char *s, size_t n, size_t max);
/* "s" after a count other than 1: "1 value", "2 values". */
#define TM_PLURAL(n) ((n) == 1 ? "" : "s")
/* "the tool reported" notes per file; the rest are counted in one note. */
#define TM_TOOL_NOTES 5

/* The buffered bytes not yet handed out: *n bytes at the result (borrowed), then
 * TM_LINE_PAD readable bytes. A block path may take whole lines from them directly and
 * then tm_lines_skip them; what it leaves is handed out by tm_lines_next as before. */
static inline const char *tm_lines_peek(const tm_lines *r, size_t *n)
{
    *n = r->len - r->pos;
    return r->buf + r->pos;
}

/* Mark bytes (whole lines, lines of them) of tm_lines_peek's data as read. */
static inline void tm_lines_skip(tm_lines *r, size_t bytes, long lines)
{
    r->pos += bytes;
    r->line += lines;
}

/* Fast locale-free number parse of text[0..len) (blanks trimmed); falls back to
 * pfi_value_parse for anything unusual. Missing tokens give PFI_VALUE_MISSING. */
pfi_value_status tm_parse_number(const char *text, size_t len, double *out);

/* Collector internals. */
pfi_error tm_entity(pfi_telemetry *tm, const char *name, size_t len, size_t *id);
pfi_error tm_field(pfi_telemetry *tm, const char *source, size_t len, size_t *id);
/* A line of file name at line with more than max columns (the constant what, in src): noted
 * and counted skipped, the rest of the file read. */
void tm_too_many_columns(pfi_telemetry *tm, const char *name, long line, int max, const char *what,
                         const char *src);
/* tm_entity / tm_field answer PFI_ERR_LIMIT for a new entity or field past
 * PFI_TELEMETRY_MAX_ENTITIES / _FIELDS with the note and the counts done (n_entities_dropped
 * and n_limit_rows; n_fields_dropped): the reader drops that row, Prometheus sample or column
 * and reads on. */
/* Store one sample: status OK with value, or MISSING. row groups samples of one scrape for
 * duplicate detection (-1: no duplicate check); pod: the sample came with pod labels. */
pfi_error tm_put(pfi_telemetry *tm, size_t e, size_t f, double t, pfi_value_status st, double v,
                 long row, bool pod);

/* Keep t as the time of a row whose value of (e, f) was not stored (pfi_telemetry_series.miss_t;
 * power and energy fields, keep_series, known times only; else nothing). tm_put does this
 * for every missing or out-of-range sample it is given. */
pfi_error tm_put_miss_time(pfi_telemetry *tm, size_t e, size_t f, double t);

/* The clean steps of s (t[i] - t[i-1] of consecutive stored samples, positive, i not a break;
 * the steps pfi_telemetry_gaps takes): their number, and in *lo, *hi the bit patterns of the
 * smallest and the largest (positive doubles order as their bit patterns). */
size_t tm_clean_steps(const pfi_telemetry_series *s, uint64_t *lo, uint64_t *hi);
/* The rank-th smallest clean step of s (0-based, rank < tm_clean_steps), exactly, without
 * allocating; lo, hi as tm_clean_steps gave them. */
double tm_clean_step_select(const pfi_telemetry_series *s, size_t rank, uint64_t lo, uint64_t hi);

/*
 * options.stream_power: a power or energy series whose samples are not stored
 * (pfi_telemetry_series.stream). Its distinct clean steps (the steps tm_clean_steps takes) with
 * their counts, TM_STREAM_STEPS at most (more: tm->counted_inexact), in an open-addressing table
 * of slots entries (key 0: empty; a positive step is never the bit pattern 0), sorted ascending
 * into ent[0..n_keys) by tm_stream_finish; the span of its valid samples and of its missing-value
 * rows; the last row's time (the rows of a series that feeds the job power must come in
 * strictly increasing time: else counted_inexact).
 */
#define TM_STREAM_STEPS 4096
typedef struct tm_stream_step {
    uint64_t key; /* the step's bit pattern */
    size_t cnt;
} tm_stream_step;
typedef struct tm_stream {
    tm_stream_step *ent; /* slots entries */
    size_t slots, n_keys, n_clean;
    uint64_t lo, hi;     /* the smallest and largest clean step's bit pattern */
    double t_min, t_max; /* valid samples' times (INFINITY, -INFINITY: none) */
    double m_min, m_max; /* missing-value rows' known times (likewise) */
    double last_row_t;   /* NaN: no row yet */
    uint64_t last_key;   /* the step last counted and its slot (tm_put_stream's fast case), */
    size_t last_slot;
    uint64_t key2; /* and the one before it (0: none): 0.1 s steps alternate between a few */
    size_t slot2;  /* bit patterns */
    bool sorted;   /* tm_stream_finish done */
    bool derived;  /* power_energy_w made from the counter: no order asked of it */
} tm_stream;

/* The bookkeeping of one stored-path sample of a streamed series s (after tm_put counted it,
 * before its pending_break and last_t move on): the step table and span, or the sink. */
pfi_error tm_stream_valid(pfi_telemetry *tm, pfi_telemetry_series *s, double t, double v);
/* pfi_reduce_stream's sink for a read with a warm-up (reduce.c): a collector given it by
 * pfi_telemetry_set_sink sends it the counted series' valid samples too (tm->sink_all). */
pfi_error tm_stream_sample_warm(void *ctx, size_t k, double t, double v, bool valid, bool brk);
/* A missing-value row at known time t of a streamed series s: its span, or the sink. */
pfi_error tm_stream_missing(pfi_telemetry *tm, pfi_telemetry_series *s, double t);
/* Sort s's step table (once; what tm_clean_step_select and pfi_telemetry_gaps read). */
void tm_stream_finish(tm_stream *st);
void tm_stream_free(tm_stream *st);
/* The samples a series holds or, streamed, would hold. */
static inline size_t tm_series_len(const pfi_telemetry_series *s)
{
    return s->stream != NULL ? s->n_valid : s->n;
}
/* Series (e, f), made (empty) when there is none; *out valid until the next one is made. */
pfi_error tm_series(pfi_telemetry *tm, size_t e, size_t f, pfi_telemetry_series **out);
/* The longest step integrated over: PFI_TELEMETRY_GAP_FACTOR x the median clean step; INFINITY
 * with fewer than two samples or no clean step (energy.c). */
double tm_gap_limit(const pfi_telemetry_series *s);
/* The stash of pfi_reduce_stream (reduce.c), freed with the collector; likewise the first
 * read's (pfi_reduce_stream_begin). */
void tm_stream_red_free(struct tm_stream_red *r);
void tm_spec_free(struct tm_spec *sp);
/* A power limit or clock-reason change (a changes_only sample stored) of entity e at t: the
 * first read's guess dies when a row of e at or after t - 1e-6 already left its merge. */
void tm_spec_change(pfi_telemetry *tm, size_t e, double t);

/* DCGM blank values (dcgm_structs.h, DCGM_*_IS_BLANK): per type a base value and the codes
 * just above it — DCGM_INT32_BLANK 0x7ffffff0 (2147483632) .. 0x7fffffff, DCGM_INT64_BLANK
 * 0x7ffffffffffffff0 .. 2^63, DCGM_FP64_BLANK 2^47 (140737488355328.0) .. 2^47 + 15; base + 1
 * is NOT_FOUND, + 2 NOT_SUPPORTED, + 3 NOT_PERMISSIONED — "no value", never a reading. */
#define TM_DCGM_INT32_BLANK 2147483632.0
#define TM_DCGM_INT64_BLANK 9223372036854775792.0
#define TM_DCGM_FP64_BLANK 140737488355328.0
static inline bool tm_is_dcgm_blank(double v)
{
    /* exactly the codes: 1e308 is a value out of range, not a blank */
    return v >= TM_DCGM_INT32_BLANK &&
           (v <= 2147483647.0 || (v >= TM_DCGM_FP64_BLANK && v <= TM_DCGM_FP64_BLANK + 15) ||
            (v >= TM_DCGM_INT64_BLANK && v <= 9223372036854775808.0));
}

/* The reason of a DCGM blank value v (tm_is_dcgm_blank): PFI_DCGM_BLANK (the blank itself),
 * _NOT_FOUND, _NOT_SUPPORTED, _NOT_PERMISSIONED, or _OTHER for another code of the range.
 * An int64 blank's code is not kept by a double (its spacing there is 2048): _BLANK. */
static inline int tm_dcgm_blank_code(double v)
{
    double base = v <= 2147483647.0          ? TM_DCGM_INT32_BLANK
                  : v >= TM_DCGM_INT64_BLANK ? v
                                             : TM_DCGM_FP64_BLANK;
    double c = v - base;
    return c == 0   ? PFI_DCGM_BLANK
           : c == 1 ? PFI_DCGM_NOT_FOUND
           : c == 2 ? PFI_DCGM_NOT_SUPPORTED
           : c == 3 ? PFI_DCGM_NOT_PERMISSIONED
                    : PFI_DCGM_OTHER;
}

/* The largest plausible power sample of one GPU, W: twice its max limit when known, else
 * PFI_TELEMETRY_MAX_GPU_POWER_W. */
static inline double tm_power_hi(const pfi_telemetry *tm)
{
    return tm->max_limit_w > 0 ? 2 * tm->max_limit_w : PFI_TELEMETRY_MAX_GPU_POWER_W;
}

static inline bool tm_out_of_range(const pfi_telemetry *tm, pfi_telemetry_kind kind, double v)
{
    switch (kind) {
    case PFI_KIND_PERCENT:
        return v < 0 || v > 100;
    case PFI_KIND_RATIO:
        return v < 0 || v > 1;
    case PFI_KIND_POWER_W:
        return v < 0 || v > tm_power_hi(tm);
    case PFI_KIND_LIMIT_W:
    case PFI_KIND_ENERGY_MJ:
        return v < 0;
    default:
        return false;
    }
}

/* The values tm_out_of_range accepts for kind: [*lo, *hi] (v outside, or NaN: rejected). */
static inline void tm_kind_range(const pfi_telemetry *tm, pfi_telemetry_kind kind, double *lo,
                                 double *hi)
{
    *lo = 0;
    *hi = INFINITY;
    switch (kind) {
    case PFI_KIND_PERCENT:
        *hi = 100;
        break;
    case PFI_KIND_RATIO:
        *hi = 1;
        break;
    case PFI_KIND_POWER_W:
        *hi = tm_power_hi(tm);
        break;
    case PFI_KIND_LIMIT_W:
    case PFI_KIND_ENERGY_MJ:
        break;
    default:
        *lo = -INFINITY;
    }
}

/* A valid sample v at time t counted into s (tm_put's bookkeeping of one stored value,
 * whether or not the series keeps its samples). */
static inline __attribute__((always_inline)) void tm_count_sample(pfi_telemetry_series *s, double t,
                                                                  double v)
{
    s->last_row = -1;
    s->last_pod = false;
    s->n_valid++;
    s->sum += v;
    s->last_good_t_s = t;
    s->pending_break = false;
    s->last_t = t;
}

/* A valid sample of a counted series (options.count_means_only) at time t: counted as if
 * stored (the sample limit holds as before), its time kept only when it is the first; a
 * sample before the first may fall before the reduction's t0 (tm->counted_inexact). */
static inline __attribute__((always_inline)) void tm_count_only(pfi_telemetry *tm,
                                                                pfi_telemetry_series *s, double t)
{
    tm->n_stored++;
    s->t_hi = t > s->t_hi ? t : s->t_hi;
    if (s->n_valid == 1) {
        s->t_first = t;
        if (isnan(t))
            tm->counted_inexact = true; /* no bound on its samples' times */
    } else if (t < s->t_first) {
        tm->counted_inexact = true;
    }
}

/* The first read's sink (reduce.c; pfi_reduce_stream_begin makes it tm->sink with
 * sink_counts set, and only it: pfi_telemetry_set_sink clears sink_counts): a valid sample
 * v at t of series k, no break before it — tm->sink(tm->sink_ctx, k, t, v, true, false)
 * called directly. Always PFI_OK. */
pfi_error tm_spec_sample(void *ctx, size_t k, double t, double v, bool valid, bool brk);
pfi_error tm_spec_valid(void *ctx, size_t k, double t, double v);
/* tm_spec_valid for each of in[0..n), in order (tm_rows_put holds a block's samples for
 * it: the sink reads nothing the collector changes meanwhile but through tm_put, which
 * tm_rows_put calls only after handing them over). */
typedef struct tm_spec_in {
    size_t k;
    double t, v;
} tm_spec_in;
void tm_spec_valid_n(void *ctx, const tm_spec_in *in, size_t n);

/*
 * tm_put_in's case of a streamed series s = &tm->series[k] (options.stream_power) and a value
 * in range: the common sample — not the series' first, no break before it, its step the one
 * counted last, or any such sample of a second read (the sink's) — counted here exactly as
 * tm_put counts it; anything else goes to tm_put.
 */
static inline __attribute__((always_inline)) pfi_error tm_put_stream(pfi_telemetry *tm, size_t e,
                                                                     size_t f, size_t k,
                                                                     pfi_telemetry_series *s,
                                                                     double t, double v)
{
    tm_stream *st = s->stream;
    if (tm->n_stored >= PFI_TELEMETRY_MAX_SAMPLES || s->n_valid == 0 || s->pending_break ||
        !(t > s->last_t))
        return tm_put(tm, e, f, t, PFI_VALUE_OK, v, -1, false);
    double d = t - s->last_t;
    uint64_t key;
    memcpy(&key, &d, sizeof key);
    if (tm->sink != NULL && !tm->sink_counts) {
        pfi_error err = tm->sink(tm->sink_ctx, k, t, v, true, false);
        if (err != PFI_OK)
            return err;
    } else {
        if ((key != st->last_key && key != st->key2) || !(t > st->last_row_t))
            return tm_put(tm, e, f, t, PFI_VALUE_OK, v, -1, false);
        st->ent[key == st->last_key ? st->last_slot : st->slot2].cnt++;
        st->n_clean++;
        st->last_row_t = t;
        st->t_max = t > st->t_max ? t : st->t_max;
        if (tm->sink_counts) /* (the sink is tm_spec_sample) */
            (void)tm_spec_valid(tm->sink_ctx, k, t, v);
    }
    tm_count_sample(s, t, v);
    tm_count_only(tm, s, t);
    return PFI_OK;
}

/*
 * tm_put(tm, e, f, t, PFI_VALUE_OK, v, -1, false) for the readers' hot loops, inlined: the
 * common sample (series already there, a value inside [lo, hi] — tm_kind_range of the
 * field — and not a DCGM blank, room to store it) is counted and stored here; every other
 * case — a new series, a DCGM blank, a glitch, a full buffer — goes to tm_put itself before
 * anything is changed, so the result is always tm_put's. row is tm->map's row of entity e,
 * keep_series the option's value; max_limit: the field is a maximum power limit (DCGM id
 * 162, every alias), whose values move the power range — a caller that computed [lo, hi]
 * once for many samples must not pass such a field (tm_put_ok computes them per sample).
 */
static inline __attribute__((always_inline)) pfi_error tm_put_in(pfi_telemetry *tm, const int *row,
                                                                 size_t e, size_t f, double t,
                                                                 double v, double lo, double hi,
                                                                 bool keep_series, bool max_limit)
{
    int k = row[f];
    if (k < 0 || !(v >= lo && v <= hi) || (v >= 2147483632.0 && tm_is_dcgm_blank(v)))
        return tm_put(tm, e, f, t, PFI_VALUE_OK, v, -1, false);
    pfi_telemetry_series *s = &tm->series[k];
    if (keep_series && s->counted) {
        if (s->stream != NULL)
            return tm_put_stream(tm, e, f, (size_t)k, s, t, v);
        if (tm->n_stored >= PFI_TELEMETRY_MAX_SAMPLES ||
            (s->changes_only && (s->n == 0 || v != s->value[s->n - 1] || !(t >= s->last_t))))
            return tm_put(tm, e, f, t, PFI_VALUE_OK, v, -1, false);
        tm_count_sample(s, t, v);
        tm_count_only(tm, s, t);
        if (max_limit && tm->opt.max_power_w == 0 && v > tm->max_limit_w)
            tm->max_limit_w = v; /* as in tm_put */
        /* The second read with a warm-up (pfi_reduce_stream): the warm-up sums. */
        if (tm->sink_all)
            return tm->sink(tm->sink_ctx, (size_t)k, t, v, true, false);
        return PFI_OK;
    }
    if (keep_series) {
        if (s->n == s->cap || tm->n_stored >= PFI_TELEMETRY_MAX_SAMPLES)
            return tm_put(tm, e, f, t, PFI_VALUE_OK, v, -1, false);
        s->t_s[s->n] = t;
        s->value[s->n] = v;
        s->brk[s->n] = s->n == 0 || s->pending_break || !(t > s->last_t);
        s->n++;
        tm->n_stored++;
    }
    if (max_limit && tm->opt.max_power_w == 0 && v > tm->max_limit_w)
        tm->max_limit_w = v; /* as in tm_put */
    tm_count_sample(s, t, v);
    return PFI_OK;
}

/* tm_put_in for one sample, the field's range and kind looked up here. */
static inline __attribute__((always_inline)) pfi_error tm_put_ok(pfi_telemetry *tm, size_t e,
                                                                 size_t f, double t, double v)
{
    const pfi_telemetry_field *fl = &tm->fields[f];
    double lo, hi;
    tm_kind_range(tm, fl->kind, &lo, &hi);
    return tm_put_in(tm, &tm->map[e * PFI_TELEMETRY_MAX_FIELDS], e, f, t, v, lo, hi,
                     tm->opt.keep_series, fl->kind == PFI_KIND_LIMIT_W && fl->dcgm_id == 162);
}

/*
 * The samples of one block-path row: tm_put_in of fv[i] into field fields[i] of entity e at
 * time t, with the range [lo[i], hi[i]], for i < n (arrays of n); plain: no field is a
 * maximum power limit (else tm_put_ok per sample), keep_series the option's value. One loop
 * per case, so that nothing is decided per sample; the common sample of the first (tm_put_in's
 * fast case, spelled out) is stored here. Returns the first error; the samples before it are
 * stored.
 */
static inline __attribute__((always_inline)) pfi_error
tm_put_row(pfi_telemetry *tm, size_t e, const size_t *fields, const double *fv, const double *lo,
           const double *hi, size_t n, double t, bool plain, bool keep_series)
{
    const int *row = &tm->map[e * PFI_TELEMETRY_MAX_FIELDS];
    pfi_error err;
    if (plain && !keep_series) {
        pfi_telemetry_series *series = tm->series;
        for (size_t i = 0; i < n; i++) {
            double v = fv[i];
            int k = row[fields[i]];
            if (k < 0 || !(v >= lo[i] && v <= hi[i]) || v >= 2147483632.0) {
                err = tm_put_in(tm, row, e, fields[i], t, v, lo[i], hi[i], false, false);
                if (err != PFI_OK)
                    return err;
                series = tm->series; /* (tm_put may have moved it) */
                continue;
            }
            tm_count_sample(&series[k], t, v); /* tm_put_in's common case */
        }
    } else if (plain) {
        for (size_t i = 0; i < n; i++)
            if ((err = tm_put_in(tm, row, e, fields[i], t, fv[i], lo[i], hi[i], true, false)))
                return err;
    } else {
        for (size_t i = 0; i < n; i++)
            if ((err = tm_put_ok(tm, e, fields[i], t, fv[i])) != PFI_OK)
                return err;
    }
    return PFI_OK;
}

/*
 * The block paths' rows of the first read (tm_rows_put): per entity a plan — the series of
 * each of the block's fields, taken once — and the time bookkeeping of its rows deferred.
 * A row of entity e whose every sample is tm_put_in's common case of a counted series
 * (options.count_means_only: counted, a changes_only value that stays, a streamed series'
 * known step) and whose time is after the entity's last row's costs per sample a count, a
 * sum (in file order, as before) and, streamed, the step's count and the sink call; what
 * every sample of the row would have written alike — the series' last time, last valid time,
 * break and row flags, t_hi, the t_first test, the stream's last row time and t_max — is
 * written once, for the entity's rows so far, by tm_rows_flush: before any other put (a
 * row the long way: tm_put_row), before anything that reads or writes those fields
 * (tm_row_time), and when the block ends. The values are those tm_put_in would have left:
 * the rows' times ascend strictly, so the last is the largest and the first the smallest.
 */
#define TM_ROWS_SLOTS 64
#define TM_ROWS_FIELDS 16
typedef struct tm_rows_ent {
    size_t e;            /* the entity (SIZE_MAX: the slot is empty) */
    bool ok;             /* the plan holds; false: e's rows the long way (for this block) */
    unsigned npend;      /* rows counted here whose times and counts are not written yet */
    double t_last, t_lo; /* their last and first time */
    unsigned nc, ns;     /* the series in order: nc counted (changes_only last: from nx on),
                            then ns streamed */
    unsigned nx;
    const pfi_telemetry_series *base; /* tm->series when ps was taken */
    pfi_telemetry_series *ps[TM_ROWS_FIELDS];
    int ks[TM_ROWS_FIELDS];           /* their indices in tm->series */
    unsigned char fi[TM_ROWS_FIELDS]; /* their fields' places in the row */
} tm_rows_ent;
#define TM_ROWS_QUEUE 256 /* (room for a row's samples past its limit: TM_ROWS_FIELDS) */
typedef struct tm_rows {
    bool on;        /* keep_series, plain, no second read's sink (tm_rows_init) */
    uint64_t dirty; /* slots with npend > 0 */
    unsigned nq;    /* the first read's sink: samples held for tm_spec_valid_n */
    tm_spec_in q[TM_ROWS_QUEUE];
    tm_rows_ent ent[TM_ROWS_SLOTS];
} tm_rows;

static inline void tm_rows_init(tm_rows *rw, const pfi_telemetry *tm, size_t n, bool plain)
{
    rw->on = plain && tm->opt.keep_series && tm->opt.count_means_only && !tm->sink_all &&
             (tm->sink == NULL || tm->sink_counts) && n <= TM_ROWS_FIELDS;
    rw->dirty = 0;
    rw->nq = 0;
    for (size_t i = 0; i < TM_ROWS_SLOTS; i++) {
        rw->ent[i].e = SIZE_MAX;
        rw->ent[i].npend = 0;
    }
}

/* Slot x's deferred bookkeeping written into its series: what tm_put_in's fast cases (for
 * a streamed series tm_put_stream's) would have left after its npend rows. */
static inline void tm_rows_flush_one(pfi_telemetry *tm, tm_rows_ent *x)
{
    const double tl = x->t_last, t0 = x->t_lo;
    const unsigned np = x->npend, n = x->nc + x->ns;
    for (unsigned j = 0; j < n; j++) {
        pfi_telemetry_series *s = &tm->series[x->ks[j]];
        s->n_valid += np;
        s->last_row = -1;
        s->last_pod = false;
        s->last_good_t_s = tl;
        s->pending_break = false;
        s->last_t = tl;
        s->t_hi = tl > s->t_hi ? tl : s->t_hi;
        if (t0 < s->t_first)
            tm->counted_inexact = true; /* (tm_count_only's test) */
        if (j >= x->nc) {
            tm_stream *st = s->stream;
            st->n_clean += np;
            st->last_row_t = tl;
            st->t_max = tl > st->t_max ? tl : st->t_max;
        }
    }
    x->npend = 0;
}

static inline void tm_rows_flush(pfi_telemetry *tm, tm_rows *rw)
{
    if (rw->nq > 0) { /* the sink's samples first, in order: it reads none of the rest */
        tm_spec_valid_n(tm->sink_ctx, rw->q, rw->nq);
        rw->nq = 0;
    }
    for (uint64_t d = rw->dirty; d != 0; d &= d - 1)
        tm_rows_flush_one(tm, &rw->ent[__builtin_ctzll(d)]);
    rw->dirty = 0;
}

/* Slot x for entity e: the old entity's bookkeeping written, e's plan taken (out of the
 * rows' line: once per entity and block). False when e's series are not all there yet (a
 * first sample: the long way, and tried again at e's next row). */
static __attribute__((noinline, unused)) bool tm_rows_take(pfi_telemetry *tm, tm_rows *rw,
                                                           tm_rows_ent *x, size_t e,
                                                           const size_t *fields, size_t n)
{
    if (x->npend > 0) {
        tm_rows_flush_one(tm, x);
        rw->dirty &= ~((uint64_t)1 << (x - rw->ent));
    }
    const int *row = &tm->map[e * PFI_TELEMETRY_MAX_FIELDS];
    x->e = SIZE_MAX;
    x->ok = true;
    x->nc = x->ns = x->nx = 0;
    for (int pass = 0; pass < 3; pass++) /* counted, changes_only, streamed */
        for (size_t i = 0; i < n; i++) {
            int k = row[fields[i]];
            if (k < 0)
                return false;
            pfi_telemetry_series *s = &tm->series[k];
            if (s->n_valid == 0)
                return false;
            if (!s->counted || s->times_only)
                x->ok = false; /* (a stored series: never here) */
            int cls = s->stream != NULL ? 2 : s->changes_only ? 1 : 0;
            if (cls != pass)
                continue;
            unsigned j = x->nc + x->ns;
            x->ks[j] = k;
            x->ps[j] = s;
            x->fi[j] = (unsigned char)i;
            if (pass < 2)
                x->nc++;
            else
                x->ns++;
            if (pass == 0)
                x->nx = x->nc;
        }
    x->base = tm->series;
    x->e = e;
    return true;
}

/*
 * tm_put_row(tm, e, fields, fv, lo, hi, n, t, plain, keep_series) for a block path that
 * made rw with tm_rows_init(rw, tm, n, plain) and calls tm_rows_flush(tm, rw) before it
 * returns and before tm_row_time: the same result (see tm_rows).
 */
static inline __attribute__((always_inline)) pfi_error
tm_rows_put(pfi_telemetry *tm, tm_rows *rw, size_t e, const size_t *fields, const double *fv,
            const double *lo, const double *hi, size_t n, double t, bool plain, bool keep_series)
{
    if (rw->on) {
        size_t slot = e & (TM_ROWS_SLOTS - 1);
        tm_rows_ent *x = &rw->ent[slot];
        if (x->e != e && !tm_rows_take(tm, rw, x, e, fields, n))
            goto slow;
        const unsigned np = x->npend;
        if (!x->ok || !(t == t) || (np > 0 && !(t > x->t_last)) ||
            tm->n_stored > PFI_TELEMETRY_MAX_SAMPLES - n)
            goto slow;
        for (size_t i = 0; i < n; i++) {
            double v = fv[i];
            if (!(v >= lo[i] && v <= hi[i]) || (v >= 2147483632.0 && tm_is_dcgm_blank(v)))
                goto slow;
        }
        if (x->base != tm->series) { /* (tm_put made a series: the array moved) */
            for (unsigned j = 0; j < x->nc + x->ns; j++)
                x->ps[j] = &tm->series[x->ks[j]];
            x->base = tm->series;
        }
        pfi_telemetry_series *const *ps = x->ps;
        const unsigned char *fi = x->fi;
        const unsigned nc = x->nc, n_all = nc + x->ns;
        for (unsigned j = x->nx; j < nc; j++) { /* changes_only: the value stays */
            const pfi_telemetry_series *s = ps[j];
            if (s->n == 0 || fv[fi[j]] != s->value[s->n - 1] || (np == 0 && !(t >= s->last_t)))
                goto slow;
        }
        size_t sl[TM_ROWS_FIELDS];
        if (n_all > nc) {
            uint64_t key = 0;
            if (np > 0) { /* every series' last time is t_last: one step for all */
                double d = t - x->t_last;
                memcpy(&key, &d, sizeof key);
            }
            unsigned j = nc;
            do {
                const pfi_telemetry_series *s = ps[j];
                const tm_stream *st = s->stream;
                uint64_t ki = key;
                if (np == 0) { /* tm_put_stream's own tests */
                    if (s->pending_break || !(t > s->last_t) || !(t > st->last_row_t))
                        goto slow;
                    double d = t - s->last_t;
                    memcpy(&ki, &d, sizeof ki);
                }
                if (ki == st->last_key)
                    sl[j] = st->last_slot;
                else if (ki == st->key2)
                    sl[j] = st->slot2;
                else
                    goto slow;
            } while (++j < n_all);
        }
        unsigned j = 0;
        for (; j < nc; j++)
            ps[j]->sum += fv[fi[j]];
        if (j < n_all) {
            tm_spec_in *q = &rw->q[rw->nq];
            const bool spec = tm->sink_counts;
            do {
                pfi_telemetry_series *s = ps[j];
                double v = fv[fi[j]];
                s->stream->ent[sl[j]].cnt++;
                s->sum += v;
                /* (the sink is tm_spec_sample: it reads none of the above) */
                *q = (tm_spec_in){.k = (size_t)x->ks[j], .t = t, .v = v};
                q += spec;
            } while (++j < n_all);
            rw->nq = (unsigned)(q - rw->q);
            if (rw->nq > TM_ROWS_QUEUE - TM_ROWS_FIELDS) {
                tm_spec_valid_n(tm->sink_ctx, rw->q, rw->nq);
                rw->nq = 0;
            }
        }
        tm->n_stored += n;
        if (np == 0)
            x->t_lo = t;
        x->t_last = t;
        x->npend = np + 1;
        rw->dirty |= (uint64_t)1 << slot;
        return PFI_OK;
    }
slow:
    tm_rows_flush(tm, rw);
    return tm_put_row(tm, e, fields, fv, lo, hi, n, t, plain, keep_series);
}

/* The power derived from an energy counter's increase: de mJ over dt s, in W, computed as
 * de / 1000.0 / dt everywhere (the stored path, the streamed reads) so that they agree bit
 * for bit; the second division is skipped when dt is 1 (nominal times: most dmon captures),
 * where it is exact (x / 1 == x). */
static inline double tm_derived_power_w(double de, double dt)
{
    double w = de / 1000.0;
    return dt == 1.0 ? w : w / dt;
}

/* Time of a new row of entity e: t when has_t, else nominal index x interval. Handles
 * backwards jumps (segment split) and, when tod is true, midnight rollover. */
/* 2000-01-01T00:00:00Z and a year of 365.25 d, in s: a wall-clock time before the first,
 * or farther than the second from the median time, is implausible (an unset clock dated
 * 1970, a wrong date) and excluded by pfi_telemetry_summarize. */
#define TM_PLAUSIBLE_FROM_S 946684800.0
#define TM_PLAUSIBLE_SPAN_S (365.25 * 86400.0)

double tm_row_time(pfi_telemetry *tm, size_t e, bool has_t, double t, bool tod, long line,
                   const char *name);
/* The nominal sampling interval: options.interval_s, else 1 s (noted once). */
double tm_interval(pfi_telemetry *tm);

/* tm_row_time(tm, e, false, ...) inlined: a row without a time of its own. */
static inline double tm_row_time_nominal(pfi_telemetry *tm, size_t e)
{
    pfi_telemetry_entity *en = &tm->entities[e];
    en->rows++;
    tm->time_nominal = true;
    tm->time_relative = true;
    return (double)(en->rows - 1) * (tm->opt.interval_s > 0 ? tm->opt.interval_s
                                     : tm->interval_assumed ? 1.0
                                                            : tm_interval(tm));
}
void tm_note(pfi_telemetry *tm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tm_tool_error(pfi_telemetry *tm, const char *name, long line, const char *s, size_t n);
void tm_mark_lost(pfi_telemetry *tm, size_t e, double t);
/* One note per power or energy series with time gaps (pfi_telemetry_gaps; energy.c). */
void tm_note_gaps(pfi_telemetry *tm);
char *tm_strndup(const char *s, size_t n);

/*
 * Detection (detect.c): the format of a file from its first bytes head[0..n) (cut: head
 * ends before the file does, so its last line may be cut). PFI_TELEMETRY_AUTO when none, with the
 * reason in why[wlen] (may be NULL) when there was something to read.
 */
pfi_telemetry_format tm_detect(const char *head, size_t n, bool cut, char *why, size_t wlen);

/*
 * Readers, one per format (read.c's table): read r into tm, name for the notes, diag (may
 * be NULL) for a fatal error. A new format is its reader's file (in PFI_TELEMETRY_SOURCES),
 * its declaration here, a number in pfi_telemetry_format (pfi/telemetry.h), a row in read.c's
 * table (its --format name and reader), its rule in tm_detect (detect.c), and its source
 * names in fields.c when they are new.
 */
pfi_error tm_read_smi_csv(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag);
pfi_error tm_read_dmon(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag);
pfi_error tm_read_smi_query(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag);
pfi_error tm_read_dcgmi(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag);
pfi_error tm_read_prom(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag);
pfi_error tm_read_smi_xml(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag);
/* nvidia-smi's -q / -q -x timestamp "Wed Jan 14 07:21:09 2026" (host-local, no zone) as
 * naive seconds since 1970; false when text[0..len) is not one (nvidia_smi.c). */
bool tm_smi_stamp(const char *text, size_t len, double *out);

/* Whether a field (its kind and DCGM id) is a physical GPU's, not a MIG instance's: power,
 * energy and limits, clocks, temperatures, clock event reasons. With MIG, dcgm-exporter
 * repeats these on every instance's series; they count once per physical GPU, while the
 * other fields (engine activity, memory) are per (UUID, GPU instance). */
static inline bool tm_device_level(pfi_telemetry_kind kind, int dcgm_id)
{
    return kind == PFI_KIND_POWER_W || kind == PFI_KIND_ENERGY_MJ || kind == PFI_KIND_LIMIT_W ||
           dcgm_id == 100 || dcgm_id == 101 || dcgm_id == 112 || dcgm_id == 140 || dcgm_id == 150;
}

/* Time zones (tzone.c): a zone's UTC offsets from its TZif file. name: an IANA name
 * ("Europe/Berlin", read from /usr/share/zoneinfo), a TZif path, or "UTC". Errors:
 * PFI_ERR_IO (no such zone), PFI_ERR_PARSE (not TZif), PFI_ERR_NOMEM. */
typedef struct tm_zone tm_zone;
pfi_error tm_zone_load(const char *name, tm_zone **out);
void tm_zone_free(tm_zone *z);
const char *tm_zone_name(const tm_zone *z);
/* The offset east of UTC, s, in force at utc. */
int32_t tm_zone_offset(const tm_zone *z, double utc);
/* The UTC times of local wall-clock time local, ascending in utc[]: their number, 2 in a
 * fall-back's repeated hour, 0 in a spring-forward's skipped hour. */
int tm_zone_to_utc(const tm_zone *z, double local, double utc[2]);
/* A zone-less local time (naive seconds since 1970) of the file being read as UTC in the
 * collector's zone (options.timezone; none: returned as it is): in a repeated hour the
 * answer at or after the file's previous converted time (file order), in a skipped hour the
 * time as if the clock had moved on (noted once). */
double tm_local_time(pfi_telemetry *tm, double local);

pfi_error tm_read_prom_api(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag);
/* The field a Prometheus metric m is read as (prometheus.c): pfid's families mapped to
 * the DCGM field they are (*scale: the factor to its unit), others as they stand; false for
 * pfid families that are not samples. */
bool tm_prom_metric_field(const char *m, size_t n, const char **as, size_t *as_n, double *scale);

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
/* Whether y-m-d is a day of the proleptic Gregorian calendar: month 1..12, day 1..the
 * month's length (February 29 only in a leap year). The readers refuse a date that is not
 * one rather than let tm_days_from_civil roll it into another day ("2025/02/30" is not
 * March 2). */
bool tm_civil_valid(long y, unsigned m, unsigned d);
long tm_days_from_civil(long y, unsigned m, unsigned d);

#endif
