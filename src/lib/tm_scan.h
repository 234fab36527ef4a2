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
 * Every function reads only s[0..n): the 8-byte loads are taken only when 8 bytes remain.
 */
#ifndef PFI_TM_SCAN_H
#define PFI_TM_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pfi/value.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && \
    (defined(__GNUC__) || defined(__clang__))
#define TM_SWAR 1
#else
#define TM_SWAR 0
#endif

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

/* Slow path (out of line): blanks trimmed, then the general rules (tm_internal.h). */
pfi_value_status tm_parse_number(const char *text, size_t len, double *out);

/*
 * tm_scan_number — a plain decimal token starting at s[i] ("-?[0-9]*(\.[0-9]*)?", 1..15
 * digits) that ends at a blank, at term, or at n. Returns the index just after it, with
 * the value in *out; SIZE_MAX when the token is anything else (the caller falls back).
 */
static inline size_t tm_scan_number(const char *s, size_t i, size_t n, char term, double *out)
{
    static const double p10[16] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
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
    double v = fd ? (double)m / p10[fd] : (double)m;
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

#endif
