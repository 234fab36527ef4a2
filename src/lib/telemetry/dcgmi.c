/*
 * The `dcgmi dmon` reader: "#Entity" headers, then one row per entity and sample, values
 * padded into columns. Layout: shared/cases README "Formats confirmed from real output".
 * Three paths, one result (bench/README.md "What the hot path does"): the block path
 * (dcgmi_block), the per-line fast path (dcgmi_fast_line, dcgmi_fast_row) and the general
 * path (dcgmi_general_row), with every note.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry/header_dup.h"
#include "telemetry/internal.h"
#include "telemetry/scan.h"
#include "telemetry/span.h"

#define MAX_TOK 512

static bool is_uint(span x)
{
    if (x.n == 0 || x.n > 9)
        return false;
    for (size_t i = 0; i < x.n; i++)
        if (x.s[i] < '0' || x.s[i] > '9')
            return false;
    return true;
}

static bool is_word(span x)
{
    if (x.n == 0 || x.n > 16)
        return false;
    for (size_t i = 0; i < x.n; i++) {
        char c = x.s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '-'))
            return false;
    }
    return true;
}

/*
 * The common row "<word> <id> v1 .. vnf" where every value is a plain decimal: tokens
 * and values in one pass (f[0..nf+2), fv[0..nf)). False for anything else (headers, error
 * text, N/A cells, wrong counts): the caller then takes the general path.
 */
static bool dcgmi_fast_row(const char *s, size_t n, size_t nf, span *f, double *fv)
{
    size_t i = tm_skip_blanks(s, 0, n);
    for (size_t t = 0; t < 2; t++) {
        size_t e = tm_find_blank(s, i, n);
        f[t] = (span){s + i, e - i};
        i = tm_skip_blanks(s, e, n);
    }
    if (!is_word(f[0]) || !is_uint(f[1]))
        return false;
    for (size_t k = 0; k < nf; k++) {
        if (i == n)
            return false;
        size_t e = tm_scan_number(s, i, n, ' ', &fv[k]);
        if (e == SIZE_MAX)
            return false;
        f[2 + k] = (span){s + i, e - i};
        i = tm_skip_blanks(s, e, n);
    }
    return i == n;
}

#if TM_FAST_LINES
/*
 * dcgmi_fast_row for a line of up to 127 bytes, all its tokens at once: one pass classifies
 * the line into a blank bitmask (SSE2), token edges come from the mask, each value is
 * converted from its known span eight digits at a time. Accepts exactly what
 * dcgmi_fast_row accepts, less the rare numbers tm_token_number leaves to the general path.
 */
static bool dcgmi_fast_line(const char *s, size_t n, size_t nf, span *f, double *fv)
{
    tm_linemask m;
    tm_classify_line(s, n, '\0', &m);
    size_t i = tm_next_clear(m.blank, 0);
    for (size_t t = 0; t < nf + 2; t++) {
        if (i >= n)
            return false;
        size_t e = tm_next_bit(m.blank, i);
        f[t] = (span){s + i, e - i};
        if (t >= 2 && !tm_token_number(s + i, e - i, &fv[t - 2]))
            return false;
        i = tm_next_clear(m.blank, e);
    }
    return i >= n && is_word(f[0]) && is_uint(f[1]);
}
#endif

#if TM_FAST_LINES
/* Bits [a, b) of a row's mask, b <= 128. */
static inline tm_u128 dcgmi_span(unsigned a, unsigned b)
{
    return ((((tm_u128)1) << b) - 1) & ~((((tm_u128)1) << a) - 1);
}

/*
 * The block path: common rows taken straight from the buffer (tm_lines_peek), many per
 * call. A row qualifies when it is what the per-line path would take from its entity
 * cache: nf + 2 tokens, an entity text already in kc, every value a number
 * tm_number_in converts. The first line that does not qualify ends the block before
 * anything of it is used; the per-line path then reads it. Returns the bytes of whole rows
 * consumed (*rows of them); on an error from the collector, *err, with *rows counting the
 * failing row too (so the caller's line number names it).
 *
 * The last row taken the long way is kept as a template (as the CSV's, csv_block_body.h):
 * a row whose bytes through its newline are the template's, but for digits where the
 * template has digits inside its entity text or its numbers, has the same blanks and so the
 * same tokens, and numbers of the same shape (the same digit count and dot, no sign): it
 * qualifies as the template did, and its numbers convert without their checks
 * (tm_number_known_in). Its entity is looked up as any row's.
 */
static inline __attribute__((always_inline)) size_t
dcgmi_block_body(pfi_telemetry *tm, const char *p0, size_t avail, size_t nf, const size_t *fields,
                 const tm_keycache *kc, long line0, long *rows, pfi_error *err, const bool simd)
{
    const char *p = p0, *end = p0 + avail;
    double fv[16], lo[16], hi[16];
    unsigned pos[128]; /* token edges: start, end, start, end, ... */
    long k = 0;
    *err = PFI_OK;
    *rows = 0;
    if (nf > 16 || avail == 0)
        return 0;
    bool plain = true; /* no maximum-limit column (it moves the power range) */
    for (size_t i = 0; i < nf; i++) {
        const pfi_telemetry_field *fl = &tm->fields[fields[i]];
        plain &= !(fl->kind == PFI_KIND_LIMIT_W && fl->dcgm_id == 162);
        tm_kind_range(tm, fl->kind, &lo[i], &hi[i]);
    }
    const unsigned n_edges = 2 * ((unsigned)nf + 2);
    const bool keep = tm->opt.keep_series;
    tm_rows rw; /* the rows' puts with their times deferred (tm_rows_put) */
    tm_rows_init(&rw, tm, nf, plain);
    /* The template: its bytes (tb), the digits that may vary (tdig), its bytes through the
     * newline (tkeep), its length and entity text; each number's first byte, length, bytes,
     * shape (tm_number_shape_in) and value. */
    char tb[128];
    tm_u128 tdig = 0, tkeep = 0, vbytes[16];
    unsigned tlen = 0, tea = 0, tez = 0, va[16], vn[16];
    const void *vsrc[16];
    size_t vfd[16];
    double tfv[16];
    bool have_tmpl = false;
    while (p < end) {
        unsigned len, ea, ez; /* the row's newline; its entity text [ea, ez) */
        if (have_tmpl && p + tlen < end) {
            tm_u128 eqm, dgm;
            tm_shape128_in(simd, p, tb, tlen, &eqm, &dgm);
            if ((tkeep & ~(eqm | (tdig & dgm))) == 0) {
                for (size_t i = 0; i < nf; i++) {
                    if ((vbytes[i] & ~eqm) == 0) /* the template's number, byte for byte */
                        fv[i] = tfv[i];
                    else if (!tm_number_known_in(simd, p + va[i], vn[i], vsrc[i], vfd[i], &fv[i]))
                        goto done; /* (without simd only: it takes what the template took) */
                }
                len = tlen;
                ea = tea;
                ez = tez;
                goto row;
            }
        }
        /* The row's first 64 bytes classified, and the next 64 when it is longer
         * (TM_LINE_PAD readable past end): its end and its blanks as bit masks. */
        tm_u128 bl, nl, none;
        tm_class128_in(simd, p, '\0', &bl, &nl, &none);
        if (nl == 0)
            break; /* (rows of 128 bytes and more: the per-line path) */
        len = tm_ctz128(nl);
        if (p + len >= end)
            break;
        unsigned n = len - (len > 0 && p[len - 1] == '\r');
        tm_u128 nb = ~bl & ((((tm_u128)1) << n) - 1);
        /* Token edges: where the line goes from blank to not, and back. */
        uint64_t nb0 = (uint64_t)nb, nb1 = (uint64_t)(nb >> 64);
        uint64_t e0 = nb0 ^ (nb0 << 1), e1 = nb1 ^ ((nb1 << 1) | (nb0 >> 63));
        unsigned ne = 0; /* (at most 128 edges: pos has room for all) */
        for (; e0 != 0; e0 &= e0 - 1)
            pos[ne++] = (unsigned)__builtin_ctzll(e0);
        for (; e1 != 0; e1 &= e1 - 1)
            pos[ne++] = 64 + (unsigned)__builtin_ctzll(e1);
        if (ne != n_edges)
            break; /* not nf + 2 tokens */
        ea = pos[0];
        ez = pos[3];
        tm_u128 vary = dcgmi_span(ea, ez); /* the entity's and the numbers' bytes */
        for (size_t i = 0; i < nf; i++) {
            unsigned a = pos[4 + 2 * i], z = pos[5 + 2 * i];
            if (!tm_number_shape_in(simd, p + a, z - a, &fv[i], &vsrc[i], &vfd[i]))
                goto done;
            va[i] = a;
            vn[i] = z - a;
            vbytes[i] = dcgmi_span(a, z);
            tfv[i] = fv[i];
            vary |= vbytes[i];
        }
        /* The template from here on: this row (a row refused below ends the block, and
         * the template with it). */
        memcpy(tb, p, sizeof tb);
        {
            tm_u128 eqm;
            tm_shape128_in(simd, p, p, len, &eqm, &tdig);
        }
        tdig &= vary; /* (a digit elsewhere must stay as it is) */
        tkeep = ((tm_u128)2 << len) - 1;
        tlen = len;
        tea = ea;
        tez = ez;
        have_tmpl = true;
    row:;
        size_t slot, ent;
        if (ez - ea > 16 || !tm_kc_get(kc, p + ea, ez - ea, &slot, &ent))
            break;
        double tt = tm_row_time_nominal(tm, ent);
        tm->line_now = line0 + k + 1; /* a note on a cell names it (tm_put) */
        *err = tm_rows_put(tm, &rw, ent, fields, fv, lo, hi, nf, tt, plain, keep);
        if (*err != PFI_OK) {
            tm_rows_flush(tm, &rw);
            *rows = k + 1;
            return (size_t)(p - p0);
        }
        tm->n_rows++;
        p += len + 1;
        k++;
    }
done:
    tm_rows_flush(tm, &rw);
    *rows = k;
    return (size_t)(p - p0);
}

/* dcgmi_block_body compiled twice: with AVX2 classification and the SIMD number conversion
 * (the CPU permitting), and without. */
#if TM_SSE2
__attribute__((target(TM_SIMD_TARGET))) static size_t
dcgmi_block_simd(pfi_telemetry *tm, const char *p0, size_t avail, size_t nf, const size_t *fields,
                 const tm_keycache *kc, long line0, long *rows, pfi_error *err)
{
    return dcgmi_block_body(tm, p0, avail, nf, fields, kc, line0, rows, err, true);
}
#endif

static size_t dcgmi_block(pfi_telemetry *tm, const char *p0, size_t avail, size_t nf,
                          const size_t *fields, const tm_keycache *kc, long line0, long *rows,
                          pfi_error *err, bool simd)
{
#if TM_SSE2
    if (simd)
        return dcgmi_block_simd(tm, p0, avail, nf, fields, kc, line0, rows, err);
#endif
    return dcgmi_block_body(tm, p0, avail, nf, fields, kc, line0, rows, err, false);
}
#endif

/* What the reader carries from line to line. */
typedef struct dcgmi_state {
    bool generic;           /* options.generic_rows: no fast path */
    bool have_header;       /* an "#Entity" header was read */
    size_t nf;              /* its value columns */
    size_t fields[MAX_TOK]; /* their fields */
    size_t ent;             /* the last row's entity (tm_entity's hint) */
    span f[MAX_TOK + 1];    /* the current line's tokens */
    double fv[MAX_TOK];     /* its values, when a fast path took it */
#if TM_FAST_LINES
    bool simd;      /* the TM_SIMD_TARGET copy of the block path */
    tm_keycache kc; /* "<word> <id>" as written -> entity */
#endif
} dcgmi_state;

#if TM_FAST_LINES
/* The block path over the buffered rows, once a header is known; what it leaves goes the
 * per-line way. */
static inline pfi_error dcgmi_take_block(pfi_telemetry *tm, tm_lines *r, dcgmi_state *st)
{
    if (!st->have_header || st->nf == 0 || st->generic)
        return PFI_OK;
    long rows;
    size_t n;
    pfi_error e;
    const char *blk = tm_lines_peek(r, &n);
    size_t used =
        dcgmi_block(tm, blk, n, st->nf, st->fields, &st->kc, r->line, &rows, &e, st->simd);
    tm_lines_skip(r, used, rows);
    return e;
}
#endif

/* The tokens of line s[0..n) in st->f (and, on a fast path, the values in st->fv): their
 * number, MAX_TOK + 1 when there are more; *fast when a fast path took the line. */
static inline size_t dcgmi_tokens(dcgmi_state *st, const char *s, size_t n, bool *fast)
{
    bool ok = st->have_header && st->nf > 0 && !st->generic;
#if TM_FAST_LINES
    if (ok && n < 128)
        ok = dcgmi_fast_line(s, n, st->nf, st->f, st->fv);
    else
#endif
        ok = ok && dcgmi_fast_row(s, n, st->nf, st->f, st->fv);
    *fast = ok;
    return ok ? st->nf + 2 : span_split_ws(s, n, st->f, MAX_TOK);
}

/* A comment line of k tokens: "#Entity A B" or "# Entity A B" names the value columns (the
 * names after "Entity"); any other is ignored. */
static pfi_error dcgmi_header(pfi_telemetry *tm, dcgmi_state *st, size_t k, long line,
                              pfi_diag *diag)
{
    const span *f = st->f;
    size_t first = span_eq(f[0], "#") ? 2 : 1;
    if (k < first || !(first == 1 ? span_eq(f[0], "#Entity") : span_eq(f[1], "Entity")))
        return PFI_OK;
    st->nf = 0;
    for (size_t i = first; i < k; i++) {
        pfi_error e = tm_field(tm, f[i].s, f[i].n, &st->fields[st->nf++]);
        if (e == PFI_ERR_LIMIT) {
            /* past PFI_TELEMETRY_MAX_FIELDS (noted): the column is not read, nor fast */
            st->fields[st->nf - 1] = SIZE_MAX;
            st->generic = true;
        } else if (e != PFI_OK)
            return e;
    }
    /* A column named twice, or two giving one field: refused (header_dup.h). */
    if (tm_header_twice(tm, f + first, st->fields, st->nf, first, line, false, diag) != PFI_OK) {
        st->nf = 0;
        return PFI_ERR_PARSE;
    }
    st->have_header = true;
    return PFI_OK;
}

#if TM_FAST_LINES
/* A fast row whose entity is in the cache (st->ent): values straight into their series. */
static inline pfi_error dcgmi_cached_row(pfi_telemetry *tm, dcgmi_state *st, const char *name,
                                         long line)
{
    double tt = tm_row_time(tm, st->ent, false, 0, false, line, name);
    for (size_t i = 0; i < st->nf; i++) {
        pfi_error e = tm_put_ok(tm, st->ent, st->fields[i], tt, st->fv[i]);
        if (e != PFI_OK)
            return e;
    }
    tm->n_rows++;
    return PFI_OK;
}
#endif

/* The entity of a row of k tokens f[..] into ename[64]: "<word> <id>" (the tokens skipped:
 * 2), or "GPU <id>" for DCGM 1.x's bare GPU id (1); 0 when the row names none. */
static size_t dcgmi_entity_name(const span *f, size_t k, char *ename)
{
    if (k >= 2 && is_word(f[0]) && is_uint(f[1])) {
        /* is_word/is_uint bound both lengths */
        memcpy(ename, f[0].s, f[0].n);
        ename[f[0].n] = ' ';
        memcpy(ename + f[0].n + 1, f[1].s, f[1].n);
        ename[f[0].n + 1 + f[1].n] = '\0';
        return 2;
    }
    if (is_uint(f[0])) {
        memcpy(ename, "GPU ", 4);
        memcpy(ename + 4, f[0].s, f[0].n);
        ename[4 + f[0].n] = '\0';
        return 1;
    }
    return 0;
}

/* A row that is not one (skip 0: the tool's text, quoted) or has not the header's number
 * of values: noted, counted skipped. */
static void dcgmi_reject_row(pfi_telemetry *tm, const dcgmi_state *st, const char *s, size_t n,
                             size_t k, size_t skip, const char *name, long line)
{
    size_t l = n;
    while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t'))
        l--;
    const char *p = s;
    while (l > 0 && (*p == ' ' || *p == '\t')) {
        p++;
        l--;
    }
    if (skip == 0)
        tm_tool_error(tm, name, line, p, l);
    else
        tm_note(tm, "%s:%ld: row has %zu value%s, header names %zu field%s: skipped", name, line,
                k - skip, TM_PLURAL(k - skip), st->nf, TM_PLURAL(st->nf));
    tm->n_skipped++;
}

/* The general path for a row of k tokens (st->f; values in st->fv when fast): entity,
 * time, then every cell with the missing-value rules and notes. */
static pfi_error dcgmi_general_row(pfi_telemetry *tm, dcgmi_state *st, const char *s, size_t n,
                                   size_t k, bool fast, const char *name, long line)
{
    char ename[64];
    size_t skip = dcgmi_entity_name(st->f, k, ename);
    if (skip == 0 || !st->have_header || k != skip + st->nf) {
        dcgmi_reject_row(tm, st, s, n, k, skip, name, line);
        return PFI_OK;
    }
    pfi_error e;
    if ((e = tm_entity(tm, ename, strlen(ename), &st->ent)) != PFI_OK)
        return e == PFI_ERR_LIMIT ? PFI_OK : e; /* past the entity limit: noted, dropped */
#if TM_FAST_LINES
    size_t key_n = fast ? (size_t)(st->f[1].s + st->f[1].n - st->f[0].s) : 0;
    if (fast && key_n <= 16)
        tm_kc_put(&st->kc, st->f[0].s, key_n, st->ent);
#endif
    double tt = tm_row_time(tm, st->ent, false, 0, false, line, name);
    for (size_t i = 0; i < st->nf; i++) {
        span x = st->f[skip + i];
        if (st->fields[i] == SIZE_MAX)
            continue; /* a column past the field limit */
        double v = NAN;
        pfi_value_status vs = fast ? (v = st->fv[i], PFI_VALUE_OK) : tm_number(x.s, x.n, &v);
        if (vs != PFI_VALUE_OK && (span_eq(x, "N/W") || span_eq(x, "N/S") || span_eq(x, "N/A")))
            vs = PFI_VALUE_MISSING;
        if (vs == PFI_VALUE_INVALID) {
            char q[TM_QUOTE_LEN];
            tm_note(tm, "%s:%ld: '%s' is not a number: cell rejected", name, line,
                    tm_quote(q, x.s, x.n, 40));
            vs = PFI_VALUE_MISSING;
        }
        if ((e = tm_put(tm, st->ent, st->fields[i], tt, vs, v, -1, false)) != PFI_OK)
            return e;
    }
    tm->n_rows++;
    return PFI_OK;
}

/* One line handed out by the line reader: a header, a units line, or a row. */
static inline pfi_error dcgmi_line(pfi_telemetry *tm, dcgmi_state *st, const char *s, size_t n,
                                   const char *name, long line, pfi_diag *diag)
{
    bool fast;
    size_t k = dcgmi_tokens(st, s, n, &fast);
    if (k == 0)
        return PFI_OK;
    if (k > MAX_TOK) {
        tm_too_many_columns(tm, name, line, MAX_TOK, "MAX_TOK", "src/lib/telemetry/dcgmi.c");
        return PFI_OK;
    }
    if (!fast && st->f[0].s[0] == '#')
        return dcgmi_header(tm, st, k, line, diag);
    if (span_eq(st->f[0], "ID") || span_eq(st->f[0], "Id"))
        return PFI_OK;
#if TM_FAST_LINES
    /* The common row: entity from the cache, values straight into their series. */
    size_t key_n = fast ? (size_t)(st->f[1].s + st->f[1].n - st->f[0].s) : 0, slot;
    if (fast && key_n <= 16 && tm_kc_get(&st->kc, st->f[0].s, key_n, &slot, &st->ent))
        return dcgmi_cached_row(tm, st, name, line);
#endif
    return dcgmi_general_row(tm, st, s, n, k, fast, name, line);
}

pfi_error tm_read_dcgmi(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag)
{
    dcgmi_state st;
    st.generic = tm->opt.generic_rows;
    st.have_header = false;
    st.nf = 0;
    st.ent = (size_t)-1;
#if TM_FAST_LINES
    st.simd = tm_use_simd(tm->opt.no_simd);
    memset(st.kc.len1, 0, sizeof st.kc.len1);
#endif
    for (;;) {
        const char *s;
        size_t n;
        bool eof;
        pfi_error e;
#if TM_FAST_LINES
        if ((e = dcgmi_take_block(tm, r, &st)) != PFI_OK)
            return e;
#endif
        e = tm_lines_next(r, &s, &n, &eof);
        if (e != PFI_OK)
            return e;
        if (eof)
            break;
        if ((e = dcgmi_line(tm, &st, s, n, name, r->line, diag)) != PFI_OK)
            return e;
    }
    return PFI_OK;
}
