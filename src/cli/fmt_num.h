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

/*
 * fmt_g10 — v written as snprintf(b, 32, "%.10g", v) writes it; returns the length (b has
 * room for 32 bytes and is NUL-terminated). Path: 0 and -0 directly; a whole number below
 * 10^10 as its digits; other 1e-4 <= |v| < 1e10
 * scaled by an exact power of ten to 10 significant digits (one rounding, error below 1e-6
 * of a unit), rounded to the nearest integer unless within 1e-5 of a tie (then snprintf
 * decides), the digits placed around the point and trailing zeros dropped as %g does.
 * Anything else: snprintf.
 */
static inline int fmt_g10(char *b, double v)
{
    static const double p10[] = {1e0, 1e1, 1e2, 1e3,  1e4,  1e5,  1e6,
                                 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13};
    double a = fabs(v);
    if (a == 0) { /* "0", or "-0" for -0.0 (pfi allocate writes many zeros) */
        int k = 0;
        if (signbit(v))
            b[k++] = '-';
        b[k++] = '0';
        b[k] = '\0';
        return k;
    }
    if (!(a >= 1e-4 && a < 1e10))
        return snprintf(b, 32, "%.10g", v);
    if (a == (double)(uint64_t)a) { /* a whole number below 10^10: its digits, no point */
        char tmp[16];
        int n = 16;
        uint64_t m = (uint64_t)a;
        do {
            tmp[--n] = (char)('0' + m % 10);
            m /= 10;
        } while (m > 0);
        int k = 0;
        if (v < 0)
            b[k++] = '-';
        memcpy(b + k, tmp + n, (size_t)(16 - n));
        k += 16 - n;
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
    double x = a * p10[9 - e], t = nearbyint(x);
    if (fabs(fabs(x - trunc(x)) - 0.5) < 1e-5 || t < 1e9 || t >= 1e10)
        return snprintf(b, 32, "%.10g", v);
    uint64_t m = (uint64_t)t;
    static const char pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233"
        "34353637383940414243444546474849505152535455565758596061626364656667"
        "6869707172737475767778798081828384858687888990919293949596979899";
    char dig[10];
    for (int i = 8; i >= 0; i -= 2) { /* two digits a step */
        unsigned r = (unsigned)(m % 100);
        m /= 100;
        dig[i] = pairs[2 * r];
        dig[i + 1] = pairs[2 * r + 1];
    }
    int nd = 10;                    /* digits kept: trailing zeros after the point dropped */
    int ipart = e >= 0 ? e + 1 : 0; /* digits before the point */
    while (nd > ipart && dig[nd - 1] == '0')
        nd--;
    int k = 0;
    if (v < 0)
        b[k++] = '-';
    if (e >= 0) {
        for (int i = 0; i < ipart; i++)
            b[k++] = dig[i];
        if (nd > ipart) {
            b[k++] = '.';
            for (int i = ipart; i < nd; i++)
                b[k++] = dig[i];
        }
    } else {
        b[k++] = '0';
        b[k++] = '.';
        for (int i = -1; i > e; i--)
            b[k++] = '0';
        for (int i = 0; i < nd; i++)
            b[k++] = dig[i];
    }
    b[k] = '\0';
    return k;
}

#endif
