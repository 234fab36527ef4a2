/*
 * fmt_num.h — printf's "%.10g" without printf, for the CLI's large outputs (pfi allocate
 * --format csv writes eight numbers per job). Byte for byte what snprintf writes: the
 * common case is exact integer arithmetic, everything else goes to snprintf itself
 * (tests/test_fmt_num.c compares the two on millions of values).
 */
#ifndef PFI_CLI_FMT_NUM_H
#define PFI_CLI_FMT_NUM_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The 8 decimal digits of v < 10^8, most significant first, as the bytes of a word in memory
 * order (little-endian: the first digit in the low byte), each a value 0..9 (not yet ASCII):
 * v split into halves of 4 digits, each half into pairs, each pair into digits, all lanes of
 * one word at once (multiplications by reciprocals exact for these ranges: x·10486 >> 20 is
 * x / 100 for x < 10^4, x·103 >> 10 is x / 10 for x < 100). */
static inline uint64_t fmt_digits8(uint32_t v)
{
    uint64_t y = (uint64_t)(v / 10000) | ((uint64_t)(v % 10000) << 32);
    uint64_t q = ((y * 10486) >> 20) & UINT64_C(0x0000007F0000007F);
    y = ((y - q * 100) << 16) | q;
    uint64_t t = ((y * 103) >> 10) & UINT64_C(0x000F000F000F000F);
    return ((y - t * 10) << 8) | t;
}

/*
 * fmt_g10 — v written as snprintf(b, 32, "%.10g", v) writes it; returns the length (b has
 * room for 32 bytes and is NUL-terminated; bytes after the NUL may be written). Path: 0 and -0
 * directly; a whole number below 10^8 as its digits; other 1e-4 <= |v| < 1e10 scaled by an
 * exact power of ten to 10 significant digits (one rounding, error below 1e-6 of a unit),
 * rounded to the nearest integer unless within 1e-5 of a tie (then snprintf decides), the
 * digits placed around the point and trailing zeros dropped as %g does. Anything else:
 * snprintf.
 */
static inline int fmt_g10(char *b, double v)
{
    static const double p10[] = {1e0, 1e1, 1e2, 1e3,  1e4,  1e5,  1e6,
                                 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13};
    double a = fabs(v);
    int k = 0;
    if (a == 0) { /* "0", or "-0" for -0.0 (pfi allocate writes many zeros) */
        if (signbit(v))
            b[k++] = '-';
        b[k++] = '0';
        b[k] = '\0';
        return k;
    }
    if (!(a >= 1e-4 && a < 1e10))
        return snprintf(b, 32, "%.10g", v);
    if (v < 0)
        b[k++] = '-';
    if (a < 1e8 && a == (double)(uint32_t)a) { /* a whole number: its digits, no point */
        uint64_t d = fmt_digits8((uint32_t)a);
        int lead = __builtin_ctzll(d) >> 3; /* leading zeros (a >= 1: not all eight) */
        d = (d | UINT64_C(0x3030303030303030)) >> (8 * lead);
        memcpy(b + k, &d, sizeof d);
        k += 8 - lead;
        b[k] = '\0';
        return k;
    }
    int e = 9; /* the decimal exponent of a: 10^e <= a < 10^(e+1) */
    if (a < 1) {
        e = -1;
        while (a * p10[-e] < 1) /* exact enough: only chooses the scale, checked below */
            e--;
    } else {
        /* 2^be <= a < 2^(be+1), be in 0..33: e is floor(be·log10 2) = (be·1233) >> 12 or one
           more (no loop down from 9: its exit was a branch mispredicted for each number) */
        uint64_t bits;
        memcpy(&bits, &a, sizeof bits);
        int be = (int)((bits >> 52) & 0x7ff) - 1023;
        e = (be * 1233) >> 12;
        if (e < 9 && a >= p10[e + 1])
            e++;
    }
    /* x rounded to an integer by adding and taking away 2^52 (x < 2^52: the same
       round-to-nearest-even as nearbyint, without the call); its fraction by truncation */
    double x = a * p10[9 - e], t = (x + 0x1p52) - 0x1p52;
    if (fabs(fabs(x - (double)(int64_t)x) - 0.5) < 1e-5 || t < 1e9 || t >= 1e10)
        return snprintf(b, 32, "%.10g", v);
    uint64_t m = (uint64_t)t;
    static const char pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233"
        "34353637383940414243444546474849505152535455565758596061626364656667"
        "6869707172737475767778798081828384858687888990919293949596979899";
    unsigned hi = (unsigned)(m / 100000000); /* the first two digits: 10..99 */
    uint64_t lo = fmt_digits8((uint32_t)(m % 100000000));
    /* the digits kept: trailing zeros after the point dropped (the last digits are the
       high bytes of lo) */
    int nd = lo != 0 ? 10 - (__builtin_clzll(lo) >> 3) : pairs[2 * hi + 1] != '0' ? 2 : 1;
    /* the ten digits in two words (the first eight, then two), written and shifted in
       registers: a copy through a byte array read back the bytes just stored (a stalled
       store-to-load forward per number) */
    lo |= UINT64_C(0x3030303030303030);
    uint64_t w0 = (uint64_t)(unsigned char)pairs[2 * hi] |
                  (uint64_t)(unsigned char)pairs[2 * hi + 1] << 8 | lo << 16,
             w1 = lo >> 48;
    if (e >= 0) {
        int ip = e + 1, s = 8 * ip; /* digits before the point: 1..10 */
        memcpy(b + k, &w0, sizeof w0);
        memcpy(b + k + 8, &w1, sizeof w1);
        k += ip;
        if (nd > ip) { /* the digits after the point: the words shifted down by ip bytes */
            uint64_t r0 = s < 64 ? w0 >> s | w1 << (64 - s) : w1 >> (s - 64),
                     r1 = s < 64 ? w1 >> s : 0;
            b[k++] = '.';
            memcpy(b + k, &r0, sizeof r0);
            memcpy(b + k + 8, &r1, sizeof r1);
            k += nd - ip;
        }
    } else {
        memcpy(b + k, "0.000", 5);
        k += 1 - e; /* "0." and -e - 1 zeros */
        memcpy(b + k, &w0, sizeof w0);
        memcpy(b + k + 8, &w1, sizeof w1);
        k += nd;
    }
    b[k] = '\0';
    return k;
}

#endif
