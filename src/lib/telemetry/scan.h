/*
 * Inline scanning primitives for the telemetry readers' hot path (private, not installed).
 *
 * Telemetry text is mostly blank padding and short decimal numbers. A byte-at-a-time loop
 * over the padding mispredicts on every column edge, so blanks and separators are found
 * eight bytes at a time (SWAR: "SIMD within a register", exact byte-equality masks, no
 * false positives), and plain decimals ("-?[0-9]*\.?[0-9]*", at most 15 digits) are
 * converted in one pass with one correctly rounded division (Clinger's fast path: both the
 * mantissa < 10^15 and 10^k, k <= 15, are exact doubles). Anything else — exponents, signs
 * other than a leading '-', missing tokens, more digits — goes to tm_parse_number, and from
 * there to the locale-independent pfi_value_parse, so results never depend on the path.
 *
 * The scanning functions read only s[0..n): their 8-byte loads are taken only when 8 bytes
 * remain. The whole-row and whole-token ones (tm_class64*, tm_token_number*, tm_eq_short,
 * the key cache) load a fixed 16, 32 or 64 bytes, each saying how many: the readers call
 * them only where TM_LINE_PAD (telemetry/internal.h) makes that many readable.
 */
#ifndef PFI_TELEMETRY_SCAN_H
#define PFI_TELEMETRY_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pfi/value.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ &&                        \
    (defined(__GNUC__) || defined(__clang__))
#define TM_SWAR 1
#else
#define TM_SWAR 0
#endif

#if TM_SWAR && defined(__SSE2__)
#include <emmintrin.h>
#include <immintrin.h> /* AVX2 and the rest: in target(TM_SIMD_TARGET) functions only */
#define TM_SSE2 1
/* What the run-time-selected copies of the hot paths are compiled for (tm_use_simd): every
 * x86-64 CPU since about 2013 (Haswell, Zen) has all of it. */
#define TM_SIMD_TARGET "avx2,popcnt,bmi,bmi2,fma"
#else
#define TM_SSE2 0
#endif

/* 10^k for k = 0..22: every power of ten a double holds exactly (the divisors of the exact
 * decimal conversions here, Clinger's fast path). One table for every reader. */
static inline double tm_pow10(size_t k)
{
    static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    return p10[k];
}

#define TM_ONES 0x0101010101010101ULL
#define TM_LOWS 0x7f7f7f7f7f7f7f7fULL

static inline uint64_t tm_load8(const char *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

/* High bit of each byte of x that equals c; exact (no carries between bytes). */
static inline uint64_t tm_eq_mask(uint64_t x, unsigned char c)
{
    uint64_t y = x ^ (TM_ONES * c);
    return ~(((y & TM_LOWS) + TM_LOWS) | y | TM_LOWS);
}

static inline bool tm_is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Index of the first byte of s[i..n) that is not a blank (' ' or '\t'); n when none. */
static inline size_t tm_skip_blanks(const char *s, size_t i, size_t n)
{
    if (i + 1 < n && !tm_is_blank(s[i + 1])) /* zero or one blank: the common case */
        return i + tm_is_blank(s[i]);
#if TM_SWAR
    while (i + 8 <= n) {
        uint64_t x = tm_load8(s + i);
        uint64_t nb = ~(tm_eq_mask(x, ' ') | tm_eq_mask(x, '\t')) & ~TM_LOWS;
        if (nb != 0)
            return i + (size_t)(__builtin_ctzll(nb) >> 3);
        i += 8;
    }
#endif
    while (i < n && tm_is_blank(s[i]))
        i++;
    return i;
}

/* Index of the first blank in s[i..n); n when none. */
static inline size_t tm_find_blank(const char *s, size_t i, size_t n)
{
#if TM_SWAR
    while (i + 8 <= n) {
        uint64_t x = tm_load8(s + i);
        uint64_t b = tm_eq_mask(x, ' ') | tm_eq_mask(x, '\t');
        if (b != 0)
            return i + (size_t)(__builtin_ctzll(b) >> 3);
        i += 8;
    }
#endif
    while (i < n && !tm_is_blank(s[i]))
        i++;
    return i;
}

/* Index of the first byte equal to c in s[i..n); n when none. */
static inline size_t tm_find_char(const char *s, size_t i, size_t n, char c)
{
#if TM_SWAR
    while (i + 8 <= n) {
        uint64_t b = tm_eq_mask(tm_load8(s + i), (unsigned char)c);
        if (b != 0)
            return i + (size_t)(__builtin_ctzll(b) >> 3);
        i += 8;
    }
#endif
    while (i < n && s[i] != c)
        i++;
    return i;
}

/* Slow path (out of line): blanks trimmed, then the general rules (scan.c). */
pfi_value_status tm_parse_number(const char *text, size_t len, double *out);

/*
 * tm_scan_number — a plain decimal token starting at s[i] ("-?[0-9]*(\.[0-9]*)?", 1..15
 * digits) that ends at a blank, at term, or at n. Returns the index just after it, with
 * the value in *out; SIZE_MAX when the token is anything else (the caller falls back).
 */
static inline size_t tm_scan_number(const char *s, size_t i, size_t n, char term, double *out)
{
    bool neg = i < n && s[i] == '-';
    i += neg;
    uint64_t m = 0;
    size_t d0 = i;
    while (i < n && (unsigned char)(s[i] - '0') < 10)
        m = m * 10 + (uint64_t)(s[i++] - '0');
    size_t nd = i - d0, fd = 0;
    if (i < n && s[i] == '.') {
        size_t f0 = ++i;
        while (i < n && (unsigned char)(s[i] - '0') < 10)
            m = m * 10 + (uint64_t)(s[i++] - '0');
        fd = i - f0;
    }
    if (nd + fd == 0 || nd + fd > 15 || (i < n && !tm_is_blank(s[i]) && s[i] != term))
        return SIZE_MAX;
    double v = fd ? (double)m / tm_pow10(fd) : (double)m;
    *out = neg ? -v : v;
    return i;
}

/*
 * tm_number — s[0..n) (no surrounding blanks) as a number: PFI_VALUE_OK with *out, or the
 * status of tm_parse_number for anything that is not a plain decimal of <= 15 digits.
 */
static inline pfi_value_status tm_number(const char *s, size_t n, double *out)
{
    if (tm_scan_number(s, 0, n, '\0', out) == n)
        return PFI_VALUE_OK;
    return tm_parse_number(s, n, out);
}

#if TM_SWAR /* the rest needs the SWAR primitives and __builtin_ctzll */
#define TM_FAST_LINES 1

/* ---- whole-line classification (lines of up to 127 bytes, TM_LINE_PAD readable after) ---- */

/* Masks of p[0..64): blanks, newlines, bytes equal to c. */
static inline void tm_class64_3(const char *p, char c, uint64_t *blank, uint64_t *nl, uint64_t *chr)
{
#if TM_SSE2
    const __m128i sp = _mm_set1_epi8(' '), tab = _mm_set1_epi8('\t'), lf = _mm_set1_epi8('\n'),
                  cc = _mm_set1_epi8(c);
    uint64_t b = 0, l = 0, m = 0;
    for (int k = 0; k < 4; k++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
        __m128i bl = _mm_or_si128(_mm_cmpeq_epi8(x, sp), _mm_cmpeq_epi8(x, tab));
        b |= (uint64_t)(uint32_t)_mm_movemask_epi8(bl) << (16 * k);
        l |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, lf)) << (16 * k);
        if (c != 0)
            m |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, cc)) << (16 * k);
    }
    *blank = b;
    *nl = l;
    *chr = m;
#else
    uint64_t b = 0, l = 0, m = 0;
    for (int k = 0; k < 8; k++) {
        uint64_t x = tm_load8(p + 8 * k);
        uint64_t bl = (tm_eq_mask(x, ' ') | tm_eq_mask(x, '\t')) >> 7;
        uint64_t lx = tm_eq_mask(x, '\n') >> 7;
        uint64_t cx = c != 0 ? tm_eq_mask(x, (unsigned char)c) >> 7 : 0;
        b |= ((bl * 0x0102040810204080ULL) >> 56) << (8 * k);
        l |= ((lx * 0x0102040810204080ULL) >> 56) << (8 * k);
        m |= ((cx * 0x0102040810204080ULL) >> 56) << (8 * k);
    }
    *blank = b;
    *nl = l;
    *chr = m;
#endif
}

/* Masks of p[0..64) against t[0..64): bytes equal (*eq), bytes of p that are the digits
 * 0-9 (*dig) — for the readers' row templates (csv_block_body.h). */
static inline void tm_shape64(const char *p, const char *t, uint64_t *eq, uint64_t *dig)
{
#if TM_SSE2
    const __m128i z = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9);
    uint64_t e = 0, d = 0;
    for (int k = 0; k < 4; k++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
        __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(t + 16 * k));
        __m128i v = _mm_sub_epi8(x, z);
        e |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) << (16 * k);
        d |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(v, nine), v))
             << (16 * k);
    }
    *eq = e;
    *dig = d;
#else
    uint64_t e = 0, d = 0;
    for (int k = 0; k < 64; k++) {
        e |= (uint64_t)(p[k] == t[k]) << k;
        d |= (uint64_t)(p[k] >= '0' && p[k] <= '9') << k;
    }
    *eq = e;
    *dig = d;
#endif
}

/* Bit i of the result is set when s[i] is ' ' or '\t' (blank) — or, with c != 0, equals c
 * (in *cm) — for i in [0, 64): tm_class64_3 without the newlines. */
static inline uint64_t tm_class64(const char *s, char c, uint64_t *cm)
{
    uint64_t b, nl;
    tm_class64_3(s, c, &b, &nl, cm);
    return b;
}

/* A line s[0..n), n < 128, as two 64-bit masks per class: blanks (bits at and past n set,
 * so every token ends inside the masks) and bytes equal to c (bits past n clear). */
typedef struct tm_linemask {
    uint64_t blank[2], chr[2];
} tm_linemask;

static inline void tm_classify_line(const char *s, size_t n, char c, tm_linemask *m)
{
    m->blank[0] = tm_class64(s, c, &m->chr[0]);
    if (n < 64) { /* s[64..128) may lie past the padding: not read */
        uint64_t past = ~0ULL << n;
        m->blank[0] |= past;
        m->chr[0] &= ~past;
        m->blank[1] = ~0ULL;
        m->chr[1] = 0;
    } else {
        m->blank[1] = tm_class64(s + 64, c, &m->chr[1]);
        uint64_t past = ~0ULL << (n - 64);
        m->blank[1] |= past;
        m->chr[1] &= ~past;
    }
}

/* Index of the first set bit of the 128-bit mask {m[0], m[1]} at or after i (i < 128);
 * 128 when none. */
static inline size_t tm_next_bit(const uint64_t *m, size_t i)
{
    if (i < 64) {
        uint64_t x = m[0] & (~0ULL << i);
        if (x != 0)
            return (size_t)__builtin_ctzll(x);
        i = 64;
    }
    uint64_t x = m[1] & (~0ULL << (i - 64));
    return x != 0 ? 64 + (size_t)__builtin_ctzll(x) : 128;
}

/* Index of the first clear bit at or after i (i < 128); 128 when none. */
static inline size_t tm_next_clear(const uint64_t *m, size_t i)
{
    uint64_t inv[2] = {~m[0], ~m[1]};
    return tm_next_bit(inv, i);
}

/* ---- digits eight at a time ---- */

/* The value of the 1..8 digits in the low len bytes of x (first digit lowest, the bytes
 * above len zero), or -1 when one of them is not a digit. */
static inline __attribute__((always_inline)) int64_t tm_digits_in(uint64_t x, size_t len)
{
    x <<= 8 * (8 - len);                                    /* the digits in the high bytes */
    x |= (0x3030303030303030ULL >> (4 * len)) >> (4 * len); /* '0's in front */
    if (((x & 0xF0F0F0F0F0F0F0F0ULL) |
         (((x + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) != 0x3333333333333333ULL)
        return -1;
    x = ((x & 0x0F0F0F0F0F0F0F0FULL) * 2561) >> 8;
    x = ((x & 0x00FF00FF00FF00FFULL) * 6553601) >> 16;
    x = ((x & 0x0000FFFF0000FFFFULL) * 42949672960001ULL) >> 32;
    return (int64_t)x;
}

/* The value of the len (1..8) ASCII digits at p, or -1 when one of them is not a digit.
 * Reads p[0..8) (the caller guarantees it is readable). */
static inline __attribute__((always_inline)) int64_t tm_digits8(const char *p, size_t len)
{
    return tm_digits_in(tm_load8(p), len); /* (the bytes past len are shifted out) */
}

/* The value of the len (0..16) digits at p (p[0..16) readable), -1 when not all digits. */
static inline __attribute__((always_inline)) int64_t tm_digits16(const char *p, size_t len)
{
    if (len == 0)
        return 0;
    if (len <= 8)
        return tm_digits8(p, len);
    int64_t hi = tm_digits8(p, len - 8), lo = tm_digits8(p + len - 8, 8);
    return (hi < 0 || lo < 0) ? -1 : hi * 100000000 + lo;
}

/*
 * tm_token_number — the whole token p[0..len) as a plain decimal "-?[0-9]*(\.[0-9]*)?" of
 * 1..15 digits: true with the value in *out, exactly tm_scan_number's (the mantissa is
 * exact either way, then one correctly rounded division). False for anything else — the
 * caller then takes the path it would have taken for a token tm_scan_number refuses.
 * Reads p[0..17) (TM_LINE_PAD covers it inside a line).
 *
 * A token of at most 8 bytes (nearly every telemetry value) is one 8-byte load: the dot
 * is found from a byte mask and squeezed out by one shift, so the digits on both sides
 * convert as one run of at most 7 or 8.
 */
static inline __attribute__((always_inline)) bool tm_token_number(const char *p, size_t len,
                                                                  double *out)
{
    bool neg = len > 0 && p[0] == '-';
    p += neg;
    len -= neg;
    if (len == 0 || len > 16)
        return false;
    int64_t m;
    size_t fd = 0;
    if (len <= 8) {
        uint64_t x = tm_load8(p) & (~0ULL >> (64 - 8 * len));
        uint64_t dm = tm_eq_mask(x, '.');
        size_t nd = len;
        if (dm != 0) {
            if ((dm & (dm - 1)) != 0 || len == 1)
                return false; /* two dots, or "." alone */
            size_t dot = (size_t)__builtin_ctzll(dm) >> 3;
            uint64_t low = dot ? ~0ULL >> (64 - 8 * dot) : 0; /* the digits before the dot */
            x = (x & low) | ((x >> 8) & ~low);
            fd = len - dot - 1;
            nd = len - 1;
        }
        m = tm_digits_in(x, nd);
        if (m < 0)
            return false;
    } else {
        uint64_t d0 = tm_eq_mask(tm_load8(p), '.'), d1 = tm_eq_mask(tm_load8(p + 8), '.');
        size_t dot = d0   ? (size_t)(__builtin_ctzll(d0) >> 3)
                     : d1 ? 8 + (size_t)(__builtin_ctzll(d1) >> 3)
                          : 16;
        if (dot >= len) {
            if (len > 15)
                return false;
            m = tm_digits16(p, len);
        } else {
            fd = len - dot - 1;
            if (dot + fd == 0 || dot > 8 || fd > 8 || dot + fd > 15)
                return false; /* (the rare long sides go the general way: same result) */
            int64_t ip = tm_digits16(p, dot), fp = tm_digits16(p + dot + 1, fd);
            if (ip < 0 || fp < 0)
                return false;
            static const int64_t i10[9] = {1,      10,      100,      1000,     10000,
                                           100000, 1000000, 10000000, 100000000};
            m = ip * i10[fd] + fp;
        }
        if (m < 0)
            return false;
    }
    double v = fd ? (double)m / tm_pow10(fd) : (double)m;
    *out = neg ? -v : v;
    return true;
}

#if TM_SSE2
/* tm_class64_3 with AVX2 (callers compiled with target(TM_SIMD_TARGET) only). */
__attribute__((target(TM_SIMD_TARGET))) static inline void
tm_class64_3_avx2(const char *p, char c, uint64_t *blank, uint64_t *nl, uint64_t *chr)
{
    const __m256i sp = _mm256_set1_epi8(' '), tab = _mm256_set1_epi8('\t'),
                  lf = _mm256_set1_epi8('\n'), cc = _mm256_set1_epi8(c);
    __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)p);
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
#define TM_MASK64(cmp0, cmp1)                                                                      \
    ((uint64_t)(uint32_t)_mm256_movemask_epi8(cmp0) |                                              \
     (uint64_t)(uint32_t)_mm256_movemask_epi8(cmp1) << 32)
    *blank = TM_MASK64(_mm256_or_si256(_mm256_cmpeq_epi8(x0, sp), _mm256_cmpeq_epi8(x0, tab)),
                       _mm256_or_si256(_mm256_cmpeq_epi8(x1, sp), _mm256_cmpeq_epi8(x1, tab)));
    *nl = TM_MASK64(_mm256_cmpeq_epi8(x0, lf), _mm256_cmpeq_epi8(x1, lf));
    *chr = c != 0 ? TM_MASK64(_mm256_cmpeq_epi8(x0, cc), _mm256_cmpeq_epi8(x1, cc)) : 0;
#undef TM_MASK64
}

/* tm_shape64 with AVX2 (callers compiled with target(TM_SIMD_TARGET) only). */
__attribute__((target(TM_SIMD_TARGET))) static inline void
tm_shape64_avx2(const char *p, const char *t, uint64_t *eq, uint64_t *dig)
{
    const __m256i z = _mm256_set1_epi8('0'), nine = _mm256_set1_epi8(9);
    __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)p);
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
    __m256i y0 = _mm256_loadu_si256((const __m256i *)(const void *)t);
    __m256i y1 = _mm256_loadu_si256((const __m256i *)(const void *)(t + 32));
    __m256i v0 = _mm256_sub_epi8(x0, z), v1 = _mm256_sub_epi8(x1, z);
    *eq = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x0, y0)) |
          (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x1, y1)) << 32;
    *dig =
        (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(v0, nine), v0)) |
        (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(v1, nine), v1))
            << 32;
}

/*
 * m / 10^fd correctly rounded (m < 2^53 exact, fd <= 15), without a division: the quotient
 * from the rounded reciprocal, its exact residual, one correcting FMA. Markstein's theorem
 * (P. Markstein, IBM J. Res. Dev. 34(1), 1990; Muller et al., Handbook of Floating-Point
 * Arithmetic, 2nd ed., §4.9): with y = RN(1/b) and q within an ulp of a/b, RN(q + (a - bq)y)
 * = RN(a/b). Checked against the division by tests/test_tm_scan.c. The divider is not
 * pipelined; these three are. neg: the result negated (-0.0 for m = 0, as the division).
 */
__attribute__((target(TM_SIMD_TARGET))) static inline double tm_div_pow10_fma(double a, size_t fd,
                                                                              bool neg)
{
    static const double ip10[16] = {1e0,  1e-1, 1e-2,  1e-3,  1e-4,  1e-5,  1e-6,  1e-7,
                                    1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15};
    double v = a;
    if (fd != 0) {
        double y = ip10[fd], q = a * y;
        double r = __builtin_fma(-q, tm_pow10(fd), a);
        v = __builtin_fma(r, y, q);
    }
    return neg ? -v : v;
}

/* The shuffle that right-aligns the ndig digits of a token with its dot at byte dot (16:
 * none) around the dot, for tm_token_number_simd: output byte j holds digit k = j - (16 -
 * ndig), read from byte k, or k + 1 past the dot; -128 (a zero) where k < 0. */
#define TM_SH_K(j, nd) ((j) - (16 - (nd)))
#define TM_SH(j, nd, dt) (TM_SH_K(j, nd) < 0 ? -128 : TM_SH_K(j, nd) + (TM_SH_K(j, nd) >= (dt)))
#define TM_SH_ROW(nd, dt)                                                                          \
    {                                                                                              \
        TM_SH(0, nd, dt), TM_SH(1, nd, dt), TM_SH(2, nd, dt), TM_SH(3, nd, dt), TM_SH(4, nd, dt),  \
            TM_SH(5, nd, dt), TM_SH(6, nd, dt), TM_SH(7, nd, dt), TM_SH(8, nd, dt),                \
            TM_SH(9, nd, dt), TM_SH(10, nd, dt), TM_SH(11, nd, dt), TM_SH(12, nd, dt),             \
            TM_SH(13, nd, dt), TM_SH(14, nd, dt), TM_SH(15, nd, dt)                                \
    }
#define TM_SH_ND(nd)                                                                               \
    {                                                                                              \
        TM_SH_ROW(nd, 0), TM_SH_ROW(nd, 1), TM_SH_ROW(nd, 2), TM_SH_ROW(nd, 3), TM_SH_ROW(nd, 4),  \
            TM_SH_ROW(nd, 5), TM_SH_ROW(nd, 6), TM_SH_ROW(nd, 7), TM_SH_ROW(nd, 8),                \
            TM_SH_ROW(nd, 9), TM_SH_ROW(nd, 10), TM_SH_ROW(nd, 11), TM_SH_ROW(nd, 12),             \
            TM_SH_ROW(nd, 13), TM_SH_ROW(nd, 14), TM_SH_ROW(nd, 15), TM_SH_ROW(nd, 16)             \
    }

/* The shuffle control of tm_token_number_simd for ndig digits (1..15) with the dot at byte
 * dot (16: none). */
static inline const void *tm_number_shuffle(unsigned ndig, unsigned dot)
{
    static const signed char shuf[16][17][16] = {
        TM_SH_ND(0),  TM_SH_ND(1),  TM_SH_ND(2),  TM_SH_ND(3), TM_SH_ND(4),  TM_SH_ND(5),
        TM_SH_ND(6),  TM_SH_ND(7),  TM_SH_ND(8),  TM_SH_ND(9), TM_SH_ND(10), TM_SH_ND(11),
        TM_SH_ND(12), TM_SH_ND(13), TM_SH_ND(14), TM_SH_ND(15)};
    return shuf[ndig][dot];
}

/* The value of a token whose shape tm_token_number_simd has checked (its digits where the
 * shape has them: the caller knows): the digits right-aligned by the shuffle control src
 * (tm_number_shuffle), converted, m / 10^fd. Reads p[0..16). */
__attribute__((target(TM_SIMD_TARGET))) static inline double
tm_token_number_simd_shaped(const char *p, const void *src, size_t fd)
{
    __m128i d = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)p), _mm_set1_epi8('0'));
    __m128i t =
        _mm_maddubs_epi16(_mm_shuffle_epi8(d, _mm_loadu_si128((const __m128i *)src)),
                          _mm_setr_epi8(10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1));
    t = _mm_madd_epi16(t, _mm_setr_epi16(100, 1, 100, 1, 100, 1, 100, 1));
    t = _mm_packs_epi32(t, t);
    t = _mm_madd_epi16(t, _mm_setr_epi16(10000, 1, 10000, 1, 10000, 1, 10000, 1));
    uint64_t hl = (uint64_t)_mm_cvtsi128_si64(t);
    uint64_t m = (hl & 0xffffffffu) * 100000000 + (hl >> 32);
    return tm_div_pow10_fma((double)m, fd, false);
}

/* tm_token_number_simd's check of the token p[0..len): its digit count (*ndig) and the
 * dot's byte (*dot, 16: none); false when it is not "[0-9]*(\.[0-9]*)?" of 1..16 bytes and
 * 1..15 digits. Reads p[0..16). */
__attribute__((target(TM_SIMD_TARGET))) static inline bool
tm_token_shape_simd(const char *p, size_t len, unsigned *ndig, unsigned *dot)
{
    if (len - 1 > 15)
        return false; /* (len 0 too) */
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i d = _mm_sub_epi8(x, _mm_set1_epi8('0'));
    unsigned want = _bzhi_u32(~0u, (unsigned)len);
    unsigned dig =
        (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d));
    unsigned dotm = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8('.'))) & want;
    unsigned nd = (unsigned)len - (dotm != 0);
    if ((want & ~(dig | dotm)) != 0 || (dotm & (dotm - 1)) != 0 || nd - 1 > 14)
        return false; /* not a digit or the dot; two dots; no digit; 16 digits */
    *ndig = nd;
    *dot = (unsigned)__builtin_ctz(dotm | 0x10000u);
    return true;
}

/*
 * tm_token_number's SIMD twin (callers compiled with target(TM_SIMD_TARGET) only; the
 * readers pick it at run time when the CPU has it) for unsigned decimals: a plain
 * "[0-9]*(\.[0-9]*)?" of 1..16 bytes and 1..15 digits is m / 10^fd, m the digits as an
 * exact integer — the double tm_token_number and the scanner give. A sign is refused (it
 * goes the per-line way, which takes it). One 16-byte load: digits and the dot from byte
 * compares (tm_token_shape_simd), the digits right-aligned around the dot by one shuffle
 * from a table, then converted 16 at a time by multiply-adds (the method of simdjson's
 * parse_eight_digits, widened; tm_token_number_simd_shaped). Reads p[0..16).
 */
__attribute__((target(TM_SIMD_TARGET))) static inline bool
tm_token_number_simd(const char *p, size_t len, double *out)
{
    unsigned ndig, dot;
    if (!tm_token_shape_simd(p, len, &ndig, &dot))
        return false;
    size_t fd = dot < 16 ? len - dot - 1 : 0;
    *out = tm_token_number_simd_shaped(p, tm_number_shuffle(ndig, dot), fd);
    return true;
}

/* The TM_SIMD_TARGET copies are taken when the CPU has all of it and the options allow. */
static inline bool tm_use_simd(bool no_simd)
{
    if (no_simd)
        return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt") &&
           __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
           __builtin_cpu_supports("fma");
}

/* tm_class64_3 or, with simd (a constant in each compiled copy), its AVX2 twin. */
static inline __attribute__((always_inline)) void
tm_class64_in(bool simd, const char *p, char c, uint64_t *blank, uint64_t *nl, uint64_t *chr)
{
    if (simd)
        tm_class64_3_avx2(p, c, blank, nl, chr);
    else
        tm_class64_3(p, c, blank, nl, chr);
}

/* tm_number_in that also gives the token's shape for tm_number_known_in: the SIMD
 * twin's shuffle control and fraction digits (with simd; NULL and 0 without). */
static inline __attribute__((always_inline)) bool
tm_number_shape_in(bool simd, const char *p, size_t len, double *out, const void **src, size_t *fd)
{
    if (!simd) {
        *src = NULL;
        *fd = 0;
        return tm_token_number(p, len, out);
    }
    unsigned ndig, dot;
    if (!tm_token_shape_simd(p, len, &ndig, &dot))
        return false;
    *src = tm_number_shuffle(ndig, dot);
    *fd = dot < 16 ? len - dot - 1 : 0;
    *out = tm_token_number_simd_shaped(p, *src, *fd);
    return true;
}

/* tm_number_in of a token of a shape tm_number_shape_in took (src, fd from it), with
 * digits where that token had digits and its other bytes the same: the same value, the
 * check skipped (with simd; without, tm_token_number whole). */
static inline __attribute__((always_inline)) bool
tm_number_known_in(bool simd, const char *p, size_t len, const void *src, size_t fd, double *out)
{
    if (!simd)
        return tm_token_number(p, len, out);
    *out = tm_token_number_simd_shaped(p, src, fd);
    return true;
}

/* vzeroupper (callers compiled with target(TM_SIMD_TARGET) only): before a call into code
 * built without AVX, where GCC does not put it itself. */
__attribute__((target(TM_SIMD_TARGET))) static inline void tm_zero_upper_avx(void)
{
    _mm256_zeroupper();
}

/* tm_zero_upper_avx with simd (a constant in each compiled copy); nothing without. */
static inline __attribute__((always_inline)) void tm_zero_upper_in(bool simd)
{
    if (simd)
        tm_zero_upper_avx();
}

/* tm_shape64 or, with simd (a constant in each compiled copy), its AVX2 twin. */
static inline __attribute__((always_inline)) void
tm_shape64_in(bool simd, const char *p, const char *t, uint64_t *eq, uint64_t *dig)
{
    if (simd)
        tm_shape64_avx2(p, t, eq, dig);
    else
        tm_shape64(p, t, eq, dig);
}

/* tm_token_number or, with simd (a constant in each compiled copy), its SIMD twin. */
static inline __attribute__((always_inline)) bool tm_number_in(bool simd, const char *p, size_t len,
                                                               double *out)
{
    return simd ? tm_token_number_simd(p, len, out) : tm_token_number(p, len, out);
}
#else
static inline bool tm_use_simd(bool no_simd)
{
    (void)no_simd;
    return false;
}
static inline __attribute__((always_inline)) void
tm_class64_in(bool simd, const char *p, char c, uint64_t *blank, uint64_t *nl, uint64_t *chr)
{
    (void)simd;
    tm_class64_3(p, c, blank, nl, chr);
}
static inline __attribute__((always_inline)) bool tm_number_in(bool simd, const char *p, size_t len,
                                                               double *out)
{
    (void)simd;
    return tm_token_number(p, len, out);
}
static inline __attribute__((always_inline)) void
tm_shape64_in(bool simd, const char *p, const char *t, uint64_t *eq, uint64_t *dig)
{
    (void)simd;
    tm_shape64(p, t, eq, dig);
}
static inline __attribute__((always_inline)) bool
tm_number_shape_in(bool simd, const char *p, size_t len, double *out, const void **src, size_t *fd)
{
    (void)simd;
    *src = NULL;
    *fd = 0;
    return tm_token_number(p, len, out);
}
static inline __attribute__((always_inline)) void tm_zero_upper_in(bool simd)
{
    (void)simd;
}
static inline __attribute__((always_inline)) bool
tm_number_known_in(bool simd, const char *p, size_t len, const void *src, size_t fd, double *out)
{
    (void)simd;
    (void)src;
    (void)fd;
    return tm_token_number(p, len, out);
}
#endif

/* ---- blocks of lines ---- */

/*
 * The readers' block paths take many lines of the buffer at once (tm_lines_peek). Each
 * row's first 64 bytes (128 for dcgmi) are classified on their own by tm_class64_in — its
 * end, blanks and separators as bit masks — and its tokens and fields are read off the
 * masks, with no search per byte. (A window of classified bytes carried from row to row
 * classified each byte once, but its bookkeeping cost more than classifying a row's bytes
 * with two AVX2 loads.) A longer row, or one not finished inside the buffered data, ends
 * the block and goes the per-line way.
 */
typedef unsigned __int128 tm_u128;

/* Lowest set bit, highest set bit (x != 0), set bits of a two-word mask. */
static inline unsigned tm_ctz128(tm_u128 x)
{
    uint64_t lo = (uint64_t)x;
    return lo ? (unsigned)__builtin_ctzll(lo) : 64 + (unsigned)__builtin_ctzll((uint64_t)(x >> 64));
}

static inline unsigned tm_msb128(tm_u128 x)
{
    uint64_t hi = (uint64_t)(x >> 64);
    return hi ? 127 - (unsigned)__builtin_clzll(hi) : 63 - (unsigned)__builtin_clzll((uint64_t)x);
}

static inline unsigned tm_popcount128(tm_u128 x)
{
    return (unsigned)(__builtin_popcountll((uint64_t)x) +
                      __builtin_popcountll((uint64_t)(x >> 64)));
}

/* A row of up to 127 bytes classified (tm_class64_in): its first 64 bytes, and the next 64
 * only when no newline ends it before (then the high words are 0). Reads p[0..128). */
static inline __attribute__((always_inline)) void
tm_class128_in(bool simd, const char *p, char c, tm_u128 *blank, tm_u128 *nl, tm_u128 *chr)
{
    uint64_t b0, n0, c0, b1 = 0, n1 = 0, c1 = 0;
    tm_class64_in(simd, p, c, &b0, &n0, &c0);
    if (n0 == 0)
        tm_class64_in(simd, p + 64, c, &b1, &n1, &c1);
    *blank = (tm_u128)b1 << 64 | b0;
    *nl = (tm_u128)n1 << 64 | n0;
    *chr = (tm_u128)c1 << 64 | c0;
}

/* tm_shape64_in over a row of up to 127 bytes ending at byte len (its newline): bytes of p
 * equal to t's (*eq) and the digits of p (*dig), the second 64 bytes compared only when
 * len >= 64 (else the high words are 0) — a row template's test (csv_block_body.h,
 * dcgmi.c). Reads p[0..128) and t[0..128). */
static inline __attribute__((always_inline)) void
tm_shape128_in(bool simd, const char *p, const char *t, unsigned len, tm_u128 *eq, tm_u128 *dig)
{
    uint64_t e0, d0, e1 = 0, d1 = 0;
    tm_shape64_in(simd, p, t, &e0, &d0);
    if (len >= 64)
        tm_shape64_in(simd, p + 64, t + 64, &e1, &d1);
    *eq = (tm_u128)e1 << 64 | e0;
    *dig = (tm_u128)d1 << 64 | d0;
}

/* p[0..len) == ref[0..len), len <= 32; p[0..32) readable, ref zero padded to 32 bytes. */
static inline bool tm_eq_short(const char *p, const char *ref, size_t len)
{
#if TM_SSE2
    __m128i a0 = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i a1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
    __m128i b0 = _mm_loadu_si128((const __m128i *)(const void *)ref);
    __m128i b1 = _mm_loadu_si128((const __m128i *)(const void *)(ref + 16));
    uint64_t eq = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(a0, b0)) |
                  (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(a1, b1)) << 16;
    return (~eq & ((1ULL << len) - 1)) == 0;
#else
    size_t i = 0;
    for (; i + 8 <= len; i += 8)
        if (tm_load8(p + i) != tm_load8(ref + i))
            return false;
    return i == len ||
           ((tm_load8(p + i) ^ tm_load8(ref + i)) & (~0ULL >> (64 - 8 * (len - i)))) == 0;
#endif
}

/* ---- a small text -> index cache (entity of a row's id token) ---- */

/*
 * Direct-mapped, 256 slots, keys of 1..16 bytes compared whole (two words and the length):
 * a hit is the same text, so the same answer the slow lookup would give as long as that
 * answer is a pure function of the text (entity names are never removed or renamed).
 */
#define TM_KC_SLOTS 256
typedef struct tm_keycache {
    uint64_t k0[TM_KC_SLOTS], k1[TM_KC_SLOTS];
    size_t len1[TM_KC_SLOTS]; /* key length + 1; 0: empty slot */
    size_t val[TM_KC_SLOTS];
} tm_keycache;

/* Key of p[0..len), len <= 16 (p[0..16) readable): the bytes, zero padded. */
static inline size_t tm_kc_key(const char *p, size_t len, uint64_t *k0, uint64_t *k1)
{
    uint64_t a = tm_load8(p), b = tm_load8(p + 8);
    if (len < 8) {
        a &= len ? ~0ULL >> (64 - 8 * len) : 0;
        b = 0;
    } else if (len < 16) {
        b &= len > 8 ? ~0ULL >> (64 - 8 * (len - 8)) : 0;
    }
    *k0 = a;
    *k1 = b;
    /* Fold the bytes so that ids differing in one or two digits ("GPU 3", "GPU 12", "7")
     * land in different slots. */
    uint64_t h = a ^ (b * 31) ^ len;
    uint32_t x = (uint32_t)(h ^ (h >> 32));
    x ^= x >> 16;
    return (size_t)((x * 0x9E3779B1u) >> 24); /* 8 bits: TM_KC_SLOTS */
}

static inline __attribute__((always_inline)) bool tm_kc_get(const tm_keycache *c, const char *p,
                                                            size_t len, size_t *slot, size_t *val)
{
    uint64_t a, b;
    size_t h = tm_kc_key(p, len, &a, &b);
    *slot = h;
    if (c->len1[h] == len + 1 && c->k0[h] == a && c->k1[h] == b) {
        *val = c->val[h];
        return true;
    }
    return false;
}

static inline void tm_kc_put(tm_keycache *c, const char *p, size_t len, size_t val)
{
    uint64_t a, b;
    size_t h = tm_kc_key(p, len, &a, &b);
    c->k0[h] = a;
    c->k1[h] = b;
    c->len1[h] = len + 1;
    c->val[h] = val;
}

#endif /* TM_SWAR */

#endif
