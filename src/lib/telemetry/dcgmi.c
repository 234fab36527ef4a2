/*
 * DCGM readers: `dcgmi dmon` text and the Prometheus text exposition format (0.0.4) that
 * dcgm-exporter serves. Layouts: shared/cases README "Formats confirmed from real output";
 * https://prometheus.io/docs/instrumenting/exposition_formats/ .
 */
#define _GNU_SOURCE /* memmem, gmtime_r */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "telemetry/internal.h"
#include "telemetry/scan.h"

#define MAX_TOK 512

typedef struct span {
    const char *s;
    size_t n;
} span;

static bool span_eq(span x, const char *w)
{
    size_t n = strlen(w);
    return x.n == n && memcmp(x.s, w, n) == 0;
}

/* Split on blanks into out[0..max); returns max + 1 when there are more tokens. */
static size_t split_ws_n(const char *s, size_t n, span *out, size_t max)
{
    size_t k = 0, i = tm_skip_blanks(s, 0, n);
    while (i < n) {
        size_t e = tm_find_blank(s, i, n);
        if (k == max)
            return max + 1;
        out[k++] = (span){s + i, e - i};
        i = tm_skip_blanks(s, e, n);
    }
    return k;
}

static size_t split_ws(const char *s, size_t n, span *out)
{
    return split_ws_n(s, n, out, MAX_TOK);
}

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
/*
 * The block path: common rows taken straight from the buffer (tm_lines_peek), many per
 * call. A row qualifies when it is what the per-line path would take from its entity
 * cache: nf + 2 tokens, an entity text already in kc, every value a number
 * tm_token_number converts. The first line that does not qualify ends the block before
 * anything of it is used; the per-line path then reads it. Returns the bytes of whole rows
 * consumed (*rows of them); on an error from the collector, *err, with *rows counting the
 * failing row too (so the caller's line number names it).
 */
static inline __attribute__((always_inline)) size_t
dcgmi_block_body(pfi_tm *tm, const char *p0, size_t avail, size_t nf, const size_t *fields,
                 const tm_keycache *kc, long *rows, pfi_error *err, const bool simd)
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
        const pfi_tm_field *fl = &tm->fields[fields[i]];
        plain &= !(fl->kind == PFI_KIND_LIMIT_W && fl->dcgm_id == 162);
        tm_kind_range(tm, fl->kind, &lo[i], &hi[i]);
    }
    const unsigned n_edges = 2 * ((unsigned)nf + 2);
    const bool keep = tm->opt.keep_series;
    while (p < end) {
        /* The row's first 64 bytes classified, and the next 64 when it is longer
         * (TM_LINE_PAD readable past end): its end and its blanks as bit masks. */
        tm_u128 bl, nl, none;
        tm_class128_in(simd, p, '\0', &bl, &nl, &none);
        if (nl == 0)
            break; /* (rows of 128 bytes and more: the per-line path) */
        unsigned len = tm_ctz128(nl);
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
        size_t slot, ent;
        if (pos[3] - pos[0] > 16 || !tm_kc_get(kc, p + pos[0], pos[3] - pos[0], &slot, &ent))
            break;
        size_t i;
        for (i = 0; i < nf; i++)
            if (!tm_number_in(simd, p + pos[4 + 2 * i], pos[5 + 2 * i] - pos[4 + 2 * i], &fv[i]))
                break;
        if (i < nf)
            break;
        double tt = tm_row_time_nominal(tm, ent);
        *err = tm_put_row(tm, ent, fields, fv, lo, hi, nf, tt, plain, keep);
        if (*err != PFI_OK) {
            *rows = k + 1;
            return (size_t)(p - p0);
        }
        tm->n_rows++;
        p += len + 1;
        k++;
    }
    *rows = k;
    return (size_t)(p - p0);
}

/* dcgmi_block_body compiled twice: with AVX2 classification and the SIMD number conversion
 * (the CPU permitting), and without. */
#if TM_SSE2
__attribute__((target(TM_SIMD_TARGET))) static size_t
dcgmi_block_simd(pfi_tm *tm, const char *p0, size_t avail, size_t nf, const size_t *fields,
                  const tm_keycache *kc, long *rows, pfi_error *err)
{
    return dcgmi_block_body(tm, p0, avail, nf, fields, kc, rows, err, true);
}
#endif

static size_t dcgmi_block(pfi_tm *tm, const char *p0, size_t avail, size_t nf,
                          const size_t *fields, const tm_keycache *kc, long *rows,
                          pfi_error *err, bool simd)
{
#if TM_SSE2
    if (simd)
        return dcgmi_block_simd(tm, p0, avail, nf, fields, kc, rows, err);
#endif
    return dcgmi_block_body(tm, p0, avail, nf, fields, kc, rows, err, false);
}
#endif

pfi_error tm_read_dcgmi(pfi_tm *tm, tm_lines *r, const char *name, pfi_diag *diag)
{
    bool generic = tm->opt.generic_rows;
#if TM_FAST_LINES
    bool simd = tm_use_simd(tm->opt.no_simd);
    tm_keycache kc; /* "<word> <id>" as written -> entity */
    memset(kc.len1, 0, sizeof kc.len1);
#endif
    double fv[MAX_TOK];
    (void)diag;
    span f[MAX_TOK + 1];
    size_t fields[MAX_TOK];
    size_t nf = 0;
    bool have_header = false;
    size_t ent = (size_t)-1;
    for (;;) {
        const char *s;
        size_t n;
        bool eof;
        pfi_error e;
#if TM_FAST_LINES
        if (have_header && nf > 0 && !generic) {
            long rows;
            const char *blk = tm_lines_peek(r, &n);
            size_t used = dcgmi_block(tm, blk, n, nf, fields, &kc, &rows, &e, simd);
            tm_lines_skip(r, used, rows);
            if (e != PFI_OK)
                return e;
        }
#endif
        e = tm_lines_next(r, &s, &n, &eof);
        if (e != PFI_OK)
            return e;
        if (eof)
            break;
        bool fast = have_header && nf > 0 && !generic;
#if TM_FAST_LINES
        if (fast && n < 128)
            fast = dcgmi_fast_line(s, n, nf, f, fv);
        else
#endif
            fast = fast && dcgmi_fast_row(s, n, nf, f, fv);
        size_t k = fast ? nf + 2 : split_ws(s, n, f);
        if (k == 0)
            continue;
        if (k > MAX_TOK)
            return PFI_ERR_LIMIT;
        if (!fast && f[0].s[0] == '#') {
            /* "#Entity A B" or "# Entity A B": field names follow "Entity". */
            size_t first = span_eq(f[0], "#") ? 2 : 1;
            if (k < first || !(first == 1 ? span_eq(f[0], "#Entity") : span_eq(f[1], "Entity")))
                continue;
            nf = 0;
            for (size_t i = first; i < k; i++)
                if ((e = tm_field(tm, f[i].s, f[i].n, &fields[nf++])) != PFI_OK)
                    return e;
            have_header = true;
            continue;
        }
        if (span_eq(f[0], "ID") || span_eq(f[0], "Id"))
            continue;
#if TM_FAST_LINES
        /* The common row: entity from the cache, values straight into their series. */
        size_t key_n = fast ? (size_t)(f[1].s + f[1].n - f[0].s) : 0, slot;
        if (fast && key_n <= 16 && tm_kc_get(&kc, f[0].s, key_n, &slot, &ent)) {
            double tt = tm_row_time(tm, ent, false, 0, false, r->line, name);
            for (size_t i = 0; i < nf; i++)
                if ((e = tm_put_ok(tm, ent, fields[i], tt, fv[i])) != PFI_OK)
                    return e;
            tm->n_rows++;
            continue;
        }
#endif
        size_t skip;
        char ename[64];
        if (k >= 2 && is_word(f[0]) && is_uint(f[1])) {
            skip = 2; /* ename = "<word> <id>"; is_word/is_uint bound both lengths */
            memcpy(ename, f[0].s, f[0].n);
            ename[f[0].n] = ' ';
            memcpy(ename + f[0].n + 1, f[1].s, f[1].n);
            ename[f[0].n + 1 + f[1].n] = '\0';
        } else if (is_uint(f[0])) {
            skip = 1; /* DCGM 1.x: a bare GPU id */
            memcpy(ename, "GPU ", 4);
            memcpy(ename + 4, f[0].s, f[0].n);
            ename[4 + f[0].n] = '\0';
        } else {
            skip = 0;
        }
        if (skip == 0 || !have_header || k != skip + nf) {
            size_t l = n;
            while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t'))
                l--;
            const char *p = s;
            while (l > 0 && (*p == ' ' || *p == '\t')) {
                p++;
                l--;
            }
            if (skip == 0)
                tm_tool_error(tm, name, r->line, p, l);
            else
                tm_note(tm, "%s:%ld: row has %zu value%s, header names %zu field%s: skipped",
                        name, r->line, k - skip, TM_PLURAL(k - skip), nf, TM_PLURAL(nf));
            tm->n_skipped++;
            continue;
        }
        if ((e = tm_entity(tm, ename, strlen(ename), &ent)) != PFI_OK)
            return e;
#if TM_FAST_LINES
        if (fast && key_n <= 16)
            tm_kc_put(&kc, f[0].s, key_n, ent);
#endif
        double tt = tm_row_time(tm, ent, false, 0, false, r->line, name);
        for (size_t i = 0; i < nf; i++) {
            span x = f[skip + i];
            double v = NAN;
            pfi_value_status st = fast ? (v = fv[i], PFI_VALUE_OK) : tm_number(x.s, x.n, &v);
            if (st != PFI_VALUE_OK &&
                (span_eq(x, "N/W") || span_eq(x, "N/S") || span_eq(x, "N/A")))
                st = PFI_VALUE_MISSING;
            if (st == PFI_VALUE_INVALID) {
                char q[TM_QUOTE_LEN];
                tm_note(tm, "%s:%ld: '%s' is not a number: cell rejected", name, r->line,
                        tm_quote(q, x.s, x.n, 40));
                st = PFI_VALUE_MISSING;
            }
            if ((e = tm_put(tm, ent, fields[i], tt, st, v, -1, false)) != PFI_OK)
                return e;
        }
        tm->n_rows++;
    }
    return PFI_OK;
}

/* ---- Prometheus text ---- */

#define MAX_LABELS 64
#define LABEL_LEN 256

typedef struct label {
    span name;
    char value[LABEL_LEN];
} label;

/* Parse {a="x",b="y\"z"} starting at s[*i] == '{'. Values are unescaped (\\ \" \n). */
static bool parse_labels(const char *s, size_t n, size_t *i, label *lab, size_t *nl)
{
    size_t p = *i + 1, k = 0;
    for (;;) {
        while (p < n && (s[p] == ' ' || s[p] == ','))
            p++;
        if (p < n && s[p] == '}') {
            *i = p + 1;
            *nl = k;
            return true;
        }
        size_t b = p;
        while (p < n && ((s[p] >= 'a' && s[p] <= 'z') || (s[p] >= 'A' && s[p] <= 'Z') ||
                         (s[p] >= '0' && s[p] <= '9') || s[p] == '_'))
            p++;
        if (p == b || p + 1 >= n || s[p] != '=' || s[p + 1] != '"')
            return false;
        span lname = {s + b, p - b};
        p += 2;
        size_t vl = 0;
        char tmp[LABEL_LEN];
        for (;;) {
            if (p >= n)
                return false;
            char c = s[p++];
            if (c == '"')
                break;
            if (c == '\\') {
                if (p >= n)
                    return false;
                char d = s[p++];
                c = d == 'n' ? '\n' : d;
            }
            if (vl + 1 < LABEL_LEN)
                tmp[vl++] = c;
        }
        tmp[vl] = '\0';
        if (k < MAX_LABELS) {
            lab[k].name = lname;
            memcpy(lab[k].value, tmp, vl + 1);
            k++;
        }
    }
}

static const char *label_get(const label *lab, size_t nl, const char *name)
{
    for (size_t i = 0; i < nl; i++)
        if (span_eq(lab[i].name, name))
            return lab[i].value;
    return NULL;
}

pfi_error tm_read_prom(pfi_tm *tm, tm_lines *r, const char *name, pfi_diag *diag)
{
    (void)diag;
    label lab[MAX_LABELS];
    long scrape = (long)tm->n_scrapes++;
    double t_nominal = (double)scrape * tm_interval(tm);
    bool power_seen = false;
    double t_stamp = NAN; /* the first sample timestamp of this scrape */
    size_t ent = (size_t)-1;
    size_t n_samples = 0, n_other = 0;
    for (;;) {
        const char *s;
        size_t n;
        bool eof;
        pfi_error e = tm_lines_next(r, &s, &n, &eof);
        if (e != PFI_OK)
            return e;
        if (eof)
            break;
        size_t i = 0;
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == n || s[i] == '#')
            continue; /* HELP / TYPE / comments: metadata */
        size_t b = i;
        while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                         (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == ':'))
            i++;
        span metric = {s + b, i - b};
        size_t nl = 0;
        if (metric.n == 0 || (i < n && s[i] == '{' && !parse_labels(s, n, &i, lab, &nl))) {
            tm_note(tm, "%s:%ld: not a Prometheus sample line: skipped", name, r->line);
            tm->n_skipped++;
            continue;
        }
        span tok[2];
        size_t k = split_ws_n(s + i, n - i, tok, 2);
        if (k < 1 || k > 2) {
            tm_note(tm, "%s:%ld: expected a value (and optional timestamp): skipped", name,
                    r->line);
            tm->n_skipped++;
            continue;
        }
        const char *uuid = label_get(lab, nl, "UUID");
        if (uuid == NULL)
            uuid = label_get(lab, nl, "uuid");
        const char *gpu = label_get(lab, nl, "gpu");
        if (uuid == NULL && gpu == NULL) {
            n_other++; /* not a per-GPU metric (exporter self-metrics) */
            continue;
        }
        const char *host = label_get(lab, nl, "hostname");
        if (host == NULL)
            host = label_get(lab, nl, "Hostname");
        if (host == NULL)
            host = tm->opt.host ? tm->opt.host : "";
        char ename[2 * LABEL_LEN + 8];
        if (uuid != NULL)
            snprintf(ename, sizeof ename, "%s/%s", host, uuid);
        else
            snprintf(ename, sizeof ename, "%s/gpu%s", host, gpu);
        if ((e = tm_entity(tm, ename, strlen(ename), &ent)) != PFI_OK)
            return e;
        size_t fid;
        if ((e = tm_field(tm, metric.s, metric.n, &fid)) != PFI_OK)
            return e;
        double v = NAN;
        pfi_value_status st;
        if (span_eq(tok[0], "NaN") || span_eq(tok[0], "+Inf") || span_eq(tok[0], "-Inf") ||
            span_eq(tok[0], "Inf"))
            st = PFI_VALUE_MISSING;
        else
            st = tm_parse_number(tok[0].s, tok[0].n, &v);
        if (st == PFI_VALUE_INVALID) {
            tm_note(tm, "%s:%ld: '%.*s' is not a sample value: skipped", name, r->line,
                    (int)(tok[0].n > 40 ? 40 : tok[0].n), tok[0].s);
            tm->n_skipped++;
            continue;
        }
        double t = t_nominal;
        if (k == 2) {
            double ms;
            if (tm_parse_number(tok[1].s, tok[1].n, &ms) == PFI_VALUE_OK) {
                t = ms / 1000.0;
                tm->prom_stamped = true;
                if (isnan(t_stamp))
                    t_stamp = t;
            }
        } else {
            tm->time_nominal = true;
            tm->time_relative = true;
        }
        const char *pod = label_get(lab, nl, "pod");
        pfi_tm_kind kind = tm->fields[fid].kind;
        if (kind == PFI_KIND_POWER_W || kind == PFI_KIND_ENERGY_MJ)
            power_seen = true;
        const pfi_tm_series *old = pfi_tm_series_get(tm, ent, fid);
        size_t dup_before = old ? old->n_duplicate : 0;
        if ((e = tm_put(tm, ent, fid, t, st, v, scrape, pod != NULL && pod[0] != '\0')) !=
            PFI_OK)
            return e;
        const pfi_tm_series *now = pfi_tm_series_get(tm, ent, fid);
        if (now != NULL && now->n_duplicate > dup_before && now->n_duplicate == 1)
            tm_note(tm, "%s:%ld: duplicate series for %s %s (two sources, e.g. two "
                        "exporters): one kept, never summed", name, r->line, ename,
                    tm->fields[fid].source);
        if (tm->entities[ent].last_t != t) {
            tm->entities[ent].rows++;
            tm->entities[ent].last_t = t;
        }
        n_samples++;
    }
    if (!power_seen) {
        tm_note(tm, "%s: no power samples in this scrape (%zu GPU samples): "
                    "DCGM_FI_DEV_POWER_USAGE / DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION absent; "
                    "add them to the exporter's counters CSV",
                name, n_samples);
        /* A hole for every GPU already known: never integrated across. Its time is the
         * scrape's: nominal, or the timestamp its other samples carry; when the scrapes are
         * timestamped and this one says nothing, the time is not known (NaN): a break, but
         * no timestamp of the grid (a nominal time there would be on another clock). */
        double t_hole = !isnan(t_stamp) ? t_stamp : tm->prom_stamped ? NAN : t_nominal;
        long fp = pfi_tm_field_find(tm, "power_w");
        for (size_t en = 0; fp >= 0 && en < tm->n_entities; en++) {
            pfi_error e = tm_put(tm, en, (size_t)fp, t_hole, PFI_VALUE_MISSING, NAN, scrape,
                                 false);
            if (e != PFI_OK)
                return e;
        }
    }
    (void)n_other;
    return PFI_OK;
}
