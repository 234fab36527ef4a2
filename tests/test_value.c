/*
 * Unit tests of pfi/value.h: locale-independent number parsing with a "missing" state; and
 * pfi_utf8_repair (pfi/error.h), the text every JSON string of pfi goes through.
 */
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pfi/error.h"
#include "pfi/memory.h"
#include "pfi/value.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Parse through an exact-size heap copy (no NUL after it), so ASan catches any overread. */
static pfi_value_status parse_exact(const char *text, size_t len, double *out)
{
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, text, len);
    pfi_value_status s = pfi_value_parse(copy, len, out);
    free(copy);
    return s;
}

static bool missing_exact(const char *text, size_t len)
{
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, text, len);
    bool b = pfi_value_is_missing_token(copy, len);
    free(copy);
    return b;
}

/* ---- numbers ---------------------------------------------------------------------------- */

static const struct {
    const char *text;
    double want;
} numbers[] = {
    {"0", 0.0},
    {"1", 1.0},
    {"42", 42.0},
    {"-1", -1.0},
    {"+1", 1.0},
    {"-0", -0.0},
    {".5", 0.5},
    {"-.5", -0.5},
    {"5.", 5.0},
    {"0.1", 0.1},
    {"3.25", 3.25},
    {"250.5", 250.5},
    {"1e3", 1000.0},
    {"1E3", 1000.0},
    {"1e+3", 1000.0},
    {"2.5e-3", 0.0025},
    {"-2.5E+2", -250.0},
    {".5e1", 5.0},
    {"1e308", 1e308},
    {"1.7976931348623157e308", 1.7976931348623157e308},
    {"106.88881213499654", 106.88881213499654},
    {"27.130000000000003", 27.130000000000003},
    {"007", 7.0},
    {" 1", 1.0},
    {"1 ", 1.0},
    {"   3.5   ", 3.5},
    {"\t2\t", 2.0},
    {"1.5\r", 1.5},
    {"1.5\r\n", 1.5},
    {"\n 8 \n", 8.0},
    {" +1 ", 1.0},
    {" .5", 0.5},
};

static void test_numbers(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(numbers); i++) {
        double v = -12345.0;
        pfi_value_status s = parse_exact(numbers[i].text, strlen(numbers[i].text), &v);
        if (s != PFI_VALUE_OK || v != numbers[i].want || signbit(v) != signbit(numbers[i].want))
            fail_msg("'%s': status %d value %.17g, want OK %.17g", numbers[i].text, (int)s, v,
                     numbers[i].want);
        if (pfi_value_is_missing_token(numbers[i].text, strlen(numbers[i].text)))
            fail_msg("'%s' reported as a missing token", numbers[i].text);
    }
}

/* The same numbers through the NUL-terminated literal itself (len = strlen). */
static void test_numbers_in_place(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(numbers); i++) {
        double v;
        assert_int_equal(pfi_value_parse(numbers[i].text, strlen(numbers[i].text), &v),
                         PFI_VALUE_OK);
        assert_true(v == numbers[i].want);
    }
}

/* ---- missing ---------------------------------------------------------------------------- */

static const char *const missing[] = {
    "",
    "N/A",
    "NA",
    "n/a",
    "NaN",
    "nan",
    "-",
    "[N/A]",
    "[Not Supported]",
    " [N/A]",
    "[N/A] ",
    "[GPU is lost]",
    "[]",
    "  ",
    "\t",
    " N/A ",
    "\r\n",
    " NaN\t",
    " - ",
    "[Unknown Error]",
};

static void test_missing(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(missing); i++) {
        const char *t = missing[i];
        double v = 1.0;
        pfi_value_status s = parse_exact(t, strlen(t), &v);
        if (s != PFI_VALUE_MISSING || !isnan(v))
            fail_msg("'%s': status %d value %g, want MISSING with NaN", t, (int)s, v);
        if (!missing_exact(t, strlen(t)))
            fail_msg("'%s': pfi_value_is_missing_token false", t);
    }
}

/* Missing tokens are not numbers, and invalid text is not missing. */
static void test_missing_token_negatives(void **state)
{
    (void)state;
    static const char *const not_missing[] = {"0",    "1.5", "abc", "NAN?", "N/A1",  "[N/A",
                                              "N/A]", "--",  "inf", "1,5",  "x[N/A]"};
    for (size_t i = 0; i < ARRAY_LEN(not_missing); i++)
        if (missing_exact(not_missing[i], strlen(not_missing[i])))
            fail_msg("'%s' reported as a missing token", not_missing[i]);
}

/* ---- invalid ---------------------------------------------------------------------------- */

static const char *const invalid[] = {
    "abc",   "1,5",    "0x10",  "0X1p3", "inf",   "-inf",  "+inf", "Inf",   "infinity",
    "1e999", "-1e999", "1.2.3", "1 2",   "1e",    "e5",    ".",    "+",     "-+1",
    "--1",   "1-",     "1e5.5", "12abc", "abc12", "1_000", "١",    "[N/A",  "N/A]",
    "nan1",  "NaNa",   "1.5 W", "$5",    "5%",    "\"1\"", "1e+",  "0b101",
};

static void test_invalid(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(invalid); i++) {
        const char *t = invalid[i];
        double v = 1.0;
        pfi_value_status s = parse_exact(t, strlen(t), &v);
        if (s != PFI_VALUE_INVALID || !isnan(v))
            fail_msg("'%s': status %d value %g, want INVALID with NaN", t, (int)s, v);
    }
    /* a NUL byte inside the text is part of it, not its end */
    double v = 1.0;
    assert_int_equal(parse_exact("1\0"
                                 "2",
                                 3, &v),
                     PFI_VALUE_INVALID);
    assert_true(isnan(v));
    assert_int_equal(parse_exact("1\0", 2, &v), PFI_VALUE_INVALID);
}

/* ---- length handling -------------------------------------------------------------------- */

/* len shorter than the buffer: only text[0..len) is read. */
static void test_not_nul_terminated(void **state)
{
    (void)state;
    static const struct {
        const char *buf;
        size_t len;
        pfi_value_status want;
        double value;
    } cases[] = {
        {"12345", 3, PFI_VALUE_OK, 123.0},    {"1.5abc", 3, PFI_VALUE_OK, 1.5},
        {"2.5e10", 3, PFI_VALUE_OK, 2.5},     {"7,8", 1, PFI_VALUE_OK, 7.0},
        {" 9 x", 3, PFI_VALUE_OK, 9.0},       {"N/Ax", 3, PFI_VALUE_MISSING, NAN},
        {"nan1", 3, PFI_VALUE_MISSING, NAN},  {"-5", 1, PFI_VALUE_MISSING, NAN},
        {"123", 0, PFI_VALUE_MISSING, NAN},   {"1x", 2, PFI_VALUE_INVALID, NAN},
        {"1.2.3", 5, PFI_VALUE_INVALID, NAN},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        double v;
        /* in place: the bytes after len are there but must be ignored */
        pfi_value_status s = pfi_value_parse(cases[i].buf, cases[i].len, &v);
        if (s != cases[i].want)
            fail_msg("'%.*s' (len %zu of '%s'): status %d, want %d", (int)cases[i].len,
                     cases[i].buf, cases[i].len, cases[i].buf, (int)s, (int)cases[i].want);
        if (s == PFI_VALUE_OK ? v != cases[i].value : !isnan(v))
            fail_msg("'%.*s': value %g, want %g", (int)cases[i].len, cases[i].buf, v,
                     cases[i].value);
        /* and from an exact-size heap copy with no terminator at all */
        assert_int_equal(parse_exact(cases[i].buf, cases[i].len, &v), cases[i].want);
    }
}

/* len <= 4095 is parsed; longer text is invalid. */
static void test_long_text(void **state)
{
    (void)state;
    char *buf = malloc(5000);
    assert_non_null(buf);
    /* 4095 bytes: 4094 leading zeros then "1" */
    memset(buf, '0', 5000);
    buf[4094] = '1';
    double v = 0;
    assert_int_equal(parse_exact(buf, 4095, &v), PFI_VALUE_OK);
    assert_true(v == 1.0);
    /* 4096 bytes: "0...01" */
    memset(buf, '0', 5000);
    buf[4095] = '1';
    assert_int_equal(parse_exact(buf, 4096, &v), PFI_VALUE_INVALID);
    assert_true(isnan(v));
    /* 5000 bytes of digits */
    memset(buf, '1', 5000);
    assert_int_equal(parse_exact(buf, 5000, &v), PFI_VALUE_INVALID);
    /* 4095 bytes "1.000...0" */
    memset(buf, '0', 5000);
    buf[0] = '1';
    buf[1] = '.';
    assert_int_equal(parse_exact(buf, 4095, &v), PFI_VALUE_OK);
    assert_true(v == 1.0);
    free(buf);
}

/* ---- locale ----------------------------------------------------------------------------- */

static void test_locale_independent(void **state)
{
    (void)state;
    const char *loc = setlocale(LC_ALL, "de_DE.UTF-8");
    if (loc == NULL)
        loc = setlocale(LC_ALL, "de_DE.utf8");
    if (loc == NULL)
        fail_msg("setlocale(LC_ALL, \"de_DE.UTF-8\") failed: the locale is not installed; run "
                 "scripts/deps.sh (it generates de_DE.UTF-8)");
    /* the process locale really uses a decimal comma now */
    const struct lconv *lc = localeconv();
    assert_string_equal(lc->decimal_point, ",");
    char probe[32];
    snprintf(probe, sizeof probe, "%.1f", 1.5);
    assert_string_equal(probe, "1,5");

    double v;
    assert_int_equal(pfi_value_parse("1.5", 3, &v), PFI_VALUE_OK);
    assert_true(v == 1.5);
    assert_int_equal(pfi_value_parse("-2.25e2", 7, &v), PFI_VALUE_OK);
    assert_true(v == -225.0);
    assert_int_equal(pfi_value_parse(".5", 2, &v), PFI_VALUE_OK);
    assert_true(v == 0.5);
    assert_int_equal(pfi_value_parse("1,5", 3, &v), PFI_VALUE_INVALID);
    assert_true(isnan(v));
    assert_int_equal(pfi_value_parse("1.234,5", 7, &v), PFI_VALUE_INVALID);
    assert_int_equal(pfi_value_parse("N/A", 3, &v), PFI_VALUE_MISSING);
    /* the whole number table again, under the German locale */
    for (size_t i = 0; i < ARRAY_LEN(numbers); i++) {
        pfi_value_status s = parse_exact(numbers[i].text, strlen(numbers[i].text), &v);
        if (s != PFI_VALUE_OK || v != numbers[i].want)
            fail_msg("under de_DE: '%s': status %d value %.17g, want %.17g", numbers[i].text,
                     (int)s, v, numbers[i].want);
    }
    assert_non_null(setlocale(LC_ALL, "C"));
}

/* Parsing must not change the process locale either. */
static void test_locale_untouched(void **state)
{
    (void)state;
    const char *before = setlocale(LC_NUMERIC, NULL);
    assert_non_null(before);
    char saved[64];
    snprintf(saved, sizeof saved, "%s", before);
    double v;
    assert_int_equal(pfi_value_parse("3.5", 3, &v), PFI_VALUE_OK);
    assert_string_equal(setlocale(LC_NUMERIC, NULL), saved);
}

/* Thread-safe: many threads parsing at once all get the same answers. */
static void *parse_worker(void *arg)
{
    size_t *wrong = arg;
    for (int rep = 0; rep < 200; rep++) {
        for (size_t i = 0; i < ARRAY_LEN(numbers); i++) {
            double v;
            if (pfi_value_parse(numbers[i].text, strlen(numbers[i].text), &v) != PFI_VALUE_OK ||
                v != numbers[i].want)
                (*wrong)++;
        }
        for (size_t i = 0; i < ARRAY_LEN(missing); i++) {
            double v;
            if (pfi_value_parse(missing[i], strlen(missing[i]), &v) != PFI_VALUE_MISSING)
                (*wrong)++;
        }
    }
    return NULL;
}

/* issue 16 item 10: one parser for reductions; "30%" and "0.3" mean the same, "30" is
   refused with both spellings named. */
static void test_reduction(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        double want; /* NaN: refused */
    } cases[] = {
        {"30%", 0.3}, {"0.3", 0.3},  {" 30 % ", 0.3},  {"0", 0},        {"0%", 0},
        {"1", 1},     {"100%", 1},   {"12.5%", 0.125}, {"0.3%", 0.003}, {"1e-1", 0.1},
        {"30", NAN},  {"1.01", NAN}, {"101%", NAN},    {"-0.1", NAN},   {"-5%", NAN},
        {"", NAN},    {"%", NAN},    {"abc", NAN},     {"30%%", NAN},   {"0x1p-2", NAN},
        {"nan", NAN}, {"inf%", NAN}, {"3 0%", NAN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double r = 42;
        char why[256] = "";
        pfi_value_status st = pfi_reduction_parse(cases[i].text, &r, why, sizeof why);
        if (isnan(cases[i].want)) {
            assert_int_equal(st, PFI_VALUE_INVALID);
            assert_true(isnan(r));
            assert_non_null(strstr(why, "0.3"));
            assert_non_null(strstr(why, "30%"));
        } else {
            assert_int_equal(st, PFI_VALUE_OK);
            assert_true(fabs(r - cases[i].want) <= 1e-15);
        }
    }
    char why[256];
    double r;
    assert_int_equal(pfi_reduction_parse("30", &r, why, sizeof why), PFI_VALUE_INVALID);
    assert_non_null(strstr(why, "write 30% or 0.3"));
    assert_int_equal(pfi_reduction_parse(NULL, &r, NULL, 0), PFI_VALUE_INVALID);
    /* "30%" and "0.3" give the same bits */
    double a, b;
    assert_int_equal(pfi_reduction_parse("30%", &a, NULL, 0), PFI_VALUE_OK);
    assert_int_equal(pfi_reduction_parse("0.3", &b, NULL, 0), PFI_VALUE_OK);
    assert_true(a == b);
}

static void test_threads(void **state)
{
    (void)state;
    enum { N = 8 };
    pthread_t th[N];
    size_t wrong[N] = {0};
    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_create(&th[i], NULL, parse_worker, &wrong[i]), 0);
    for (int i = 0; i < N; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        if (wrong[i] != 0)
            fail_msg("thread %d: %zu wrong results", i, wrong[i]);
    }
}

/* pfi_utf8_repair (pfi/error.h): valid UTF-8 kept byte for byte, each byte that does not begin
 * a well-formed sequence (and a NUL) one U+FFFD (EF BF BD); the cases worked by hand. */
static void test_utf8_repair(void **state)
{
    (void)state;
#define R "\xEF\xBF\xBD"
    static const struct {
        const char *in;
        size_t n;
        const char *want;
    } c[] = {
        {"abc", 3, "abc"},
        {"b\xFFx", 3, "b" R "x"},
        {"\xC3\xA9", 2, "\xC3\xA9"},                 /* U+00E9 */
        {"\xC2\x85", 2, "\xC2\x85"},                 /* U+0085, a C1 control: valid UTF-8 */
        {"\xF0\x9F\x98\x80", 4, "\xF0\x9F\x98\x80"}, /* U+1F600 */
        {"\xC0\x80", 2, R R},                        /* overlong NUL: C0 never starts one */
        {"\xE0\x80\xAF", 3, R R R},                  /* overlong '/' */
        {"\xED\xA0\x80", 3, R R R},                  /* a surrogate, U+D800 */
        {"\xF4\x90\x80\x80", 4, R R R R},            /* U+110000, past the last code point */
        {"x\xE2\x82", 3, "x" R R},                   /* cut at the end */
        {"\x80y", 2, R "y"},                         /* a stray continuation byte */
        {"a\0b", 3, "a" R "b"},                      /* a NUL inside the n bytes */
        {"", 0, ""},
    };
#undef R
    for (size_t i = 0; i < ARRAY_LEN(c); i++) {
        char *got = pfi_utf8_repair(c[i].in, c[i].n);
        assert_non_null(got);
        if (strcmp(got, c[i].want) != 0)
            fail_msg("case %zu: got '%s', want '%s'", i, got, c[i].want);
        /* pfi_utf8_valid: true exactly when the repair keeps the bytes as they are */
        bool same = strlen(c[i].want) == c[i].n && memcmp(c[i].want, c[i].in, c[i].n) == 0;
        if (pfi_utf8_valid(c[i].in, c[i].n) != same)
            fail_msg("case %zu: pfi_utf8_valid says %d", i, !same);
        pfi_free(got);
    }
    assert_null(pfi_utf8_repair(NULL, 0));
    assert_false(pfi_utf8_valid(NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_locale_independent), /* first: before any lazy initialisation */
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_numbers_in_place),
        cmocka_unit_test(test_missing),
        cmocka_unit_test(test_missing_token_negatives),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_not_nul_terminated),
        cmocka_unit_test(test_long_text),
        cmocka_unit_test(test_locale_untouched),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_reduction),
        cmocka_unit_test(test_utf8_repair),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
