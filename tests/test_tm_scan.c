/*
 * The hot-path number conversions (src/lib/telemetry/scan.h) against the plain scanner.
 *
 * tm_token_number (SWAR) and tm_token_number_simd must give, for every token they accept,
 * the very double tm_scan_number gives (bit for bit), and accept every plain decimal of
 * at most 8 bytes a side (SWAR) or every unsigned one of 16 bytes (SIMD) that
 * tm_scan_number accepts; what they refuse goes the general way; the division-free
 * m / 10^fd of the SIMD copy equals the
 * division. Checked on hand-picked edge tokens and on 2 million
 * random ones (digits, dots, signs, exponents, blanks, separators; 1..18 bytes, the bytes
 * after the token random too, since the conversions load past its end).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "telemetry/scan.h"

#if TM_SWAR

typedef bool (*conv_fn)(const char *p, size_t len, double *out);

static bool conv_swar(const char *p, size_t len, double *out)
{
    return tm_token_number(p, len, out);
}

#if TM_SSE2
static bool have_simd(void)
{
    return tm_use_simd(false);
}

__attribute__((target(TM_SIMD_TARGET))) static bool conv_simd(const char *p, size_t len,
                                                              double *out)
{
    return tm_token_number_simd(p, len, out);
}
#endif

/* One token (in a zero-padded 64-byte buffer, trailing bytes fill): 0 when the conversion
 * contradicts tm_scan_number; *refused set when it refused a token the scanner took. */
static int agree(conv_fn f, const char *tok, size_t len, char fill, size_t max_side, int *refused)
{
    char buf[64];
    memset(buf, fill, sizeof buf);
    memcpy(buf, tok, len);
    double a = 0, b = 0;
    bool ok_scan = tm_scan_number(buf, 0, len, '\0', &a) == len;
    bool ok = f(buf, len, &b);
    if (ok && (!ok_scan || memcmp(&a, &b, sizeof a) != 0)) {
        print_error("'%.*s': scanner %d %.17g, conversion %.17g\n", (int)len, tok, ok_scan, a, b);
        return 0;
    }
    /* a plain decimal with sides of at most max_side bytes must be taken */
    if (ok_scan && !ok) {
        const char *dot = memchr(buf, '.', len);
        size_t lead = buf[0] == '-';
        size_t ip = dot ? (size_t)(dot - buf) - lead : len - lead;
        size_t fp = dot ? len - (size_t)(dot - buf) - 1 : 0;
        if (max_side == 8 ? (ip <= 8 && fp <= 8 && len - lead <= 16)
                          : lead == 0 && len <= max_side) { /* (the SIMD copy: no sign) */
            print_error("'%.*s': refused, though plain\n", (int)len, tok);
            return 0;
        }
        *refused = 1;
    }
    return 1;
}

static const char *edge[] = {"0",
                             "-0",
                             "5",
                             "-5",
                             ".5",
                             "5.",
                             "-.5",
                             "-5.",
                             ".",
                             "-",
                             "-.",
                             "..",
                             "1.2.3",
                             "+5",
                             "1e5",
                             "12345678",
                             "123456789",
                             "1234567.8",
                             "0.12345678",
                             "12345678.12345678",
                             "123456789012345",
                             "1234567890123456",
                             "12345678901234.5",
                             "-12345678901234.5",
                             "0000000000000001",
                             "999999999999999",
                             "9999999999999999",
                             "250.125",
                             "9876543210",
                             "140737488355328.0",
                             "2147483647",
                             "7 ",
                             " 7",
                             "4,",
                             "1:2",
                             "12/05",
                             "N/A",
                             "0x1f",
                             "00.000000",
                             "-000000000000000",
                             "1.000000000000000"};

static void check_all(conv_fn f, size_t max_side)
{
    int refused = 0;
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        for (int fill = 0; fill < 3; fill++)
            assert_true(agree(f, edge[i], strlen(edge[i]), "\0.9"[fill], max_side, &refused));
    static const char al[] = "0123456789.-+e ,:/";
    uint64_t x = 0x2545F4914F6CDD1DULL;
    for (long it = 0; it < 2000000; it++) {
        char tok[20];
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t len = 1 + x % 18;
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            tok[i] = (x >> 8) % 4 ? (char)('0' + (x >> 16) % 10) : al[(x >> 24) % (sizeof al - 1)];
        }
        assert_true(agree(f, tok, len, (char)('0' + it % 10), max_side, &refused));
    }
}

static void swar_agrees(void **state)
{
    (void)state;
    check_all(conv_swar, 8);
}

static void simd_agrees(void **state)
{
    (void)state;
#if TM_SSE2
    if (!have_simd())
        skip();
    check_all(conv_simd, 16);
#else
    skip();
#endif
}

#if TM_SSE2
__attribute__((target(TM_SIMD_TARGET))) static double div_fma(uint64_t m, size_t fd)
{
    return tm_div_pow10_fma((double)m, fd, false);
}
#endif

/* The division-free m / 10^fd equals the division: every m < 2^20 and 10^6 random m of
 * 1..15 digits, for each fd. */
static void div_pow10(void **state)
{
    (void)state;
#if TM_SSE2
    if (!have_simd())
        skip();
    static const double p10[16] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    uint64_t x = 88172645463325252ULL;
    for (size_t fd = 0; fd <= 15; fd++) {
        for (uint64_t m = 0; m < (1u << 20); m++) {
            double a = (double)m / p10[fd], b = div_fma(m, fd);
            if (memcmp(&a, &b, sizeof a) != 0)
                fail_msg("%llu / 1e%zu: %.17g, not %.17g", (unsigned long long)m, fd, b, a);
        }
        for (long it = 0; it < 1000000; it++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            uint64_t lim = 1;
            for (uint64_t k = 0, nd = 1 + x % 15; k < nd; k++)
                lim *= 10;
            uint64_t m = (x >> 11) % lim;
            double a = (double)m / p10[fd], b = div_fma(m, fd);
            if (memcmp(&a, &b, sizeof a) != 0)
                fail_msg("%llu / 1e%zu: %.17g, not %.17g", (unsigned long long)m, fd, b, a);
        }
    }
#else
    skip();
#endif
}

/* The masks of tm_class64_3 and of its AVX2 twin are those of a byte-by-byte reading:
 * random bytes drawn mostly from blanks, newlines, commas and digits, every separator. */
#if TM_SSE2
__attribute__((target(TM_SIMD_TARGET))) static void class_avx2(const char *p, char c, uint64_t *b,
                                                               uint64_t *l, uint64_t *m)
{
    tm_class64_3_avx2(p, c, b, l, m);
}
#endif

static void classify(void **state)
{
    (void)state;
    static const char al[] = " \t\n,\r0.W\0\xff\x8a";
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (long it = 0; it < 200000; it++) {
        char buf[64];
        for (int i = 0; i < 64; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[i] = (x >> 8) % 4 ? al[(x >> 16) % (sizeof al - 1)] : (char)(x >> 24);
        }
        char c = "\0,\t"[it % 3];
        uint64_t wb = 0, wl = 0, wm = 0;
        for (int i = 0; i < 64; i++) {
            wb |= (uint64_t)(buf[i] == ' ' || buf[i] == '\t') << i;
            wl |= (uint64_t)(buf[i] == '\n') << i;
            wm |= (uint64_t)(c != 0 && buf[i] == c) << i;
        }
        uint64_t b, l, m;
        tm_class64_3(buf, c, &b, &l, &m);
        assert_true(b == wb && l == wl && m == wm);
#if TM_SSE2
        if (have_simd()) {
            class_avx2(buf, c, &b, &l, &m);
            assert_true(b == wb && l == wl && m == wm);
        }
#endif
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(swar_agrees),
        cmocka_unit_test(simd_agrees),
        cmocka_unit_test(div_pow10),
        cmocka_unit_test(classify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
int main(void)
{
    return 0; /* no fast paths on this platform */
}
#endif
