/*
 * Unit tests of pfi/steady.h against an independent reference (tests/golden/
 * steady_reference.py -> steady_expected.csv), plus the argument checks.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "checks.h"

#include "pfi/steady.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define EXPECTED_CSV PFI_GOLDEN "/steady_expected.csv"
#define REL 1e-12

/* ---- the expected-values file ----------------------------------------------------------- */

typedef struct golden_case {
    char name[64];
    double q, warmup;
    double *times; /* NULL: t_s = NULL */
    double *values;
    bool *valid; /* NULL: valid = NULL */
    size_t n;
    bool empty; /* expected PFI_ERR_EMPTY */
    double mean, se;
    size_t m, n_valid, n_missing, n_warmup;
} golden_case;

static double parse_double(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0')
        fail_msg("bad number '%s' in " EXPECTED_CSV, s);
    return v;
}

/* Space-separated doubles; returns the count, *out malloc'd. */
static size_t parse_doubles(char *s, double **out)
{
    size_t cap = 16, n = 0;
    double *v = malloc(cap * sizeof *v);
    assert_non_null(v);
    char *save = NULL;
    for (char *tok = strtok_r(s, " ", &save); tok != NULL; tok = strtok_r(NULL, " ", &save)) {
        if (n == cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof *v);
            assert_non_null(v);
        }
        v[n++] = parse_double(tok);
    }
    *out = v;
    return n;
}

static size_t parse_size(const char *s)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (end == s || *end != '\0')
        fail_msg("bad count '%s' in " EXPECTED_CSV, s);
    return (size_t)v;
}

static void golden_free(golden_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(c[i].times);
        free(c[i].values);
        free(c[i].valid);
    }
    free(c);
}

static golden_case *golden_load(size_t *n_cases)
{
    FILE *f = fopen(EXPECTED_CSV, "r");
    if (f == NULL)
        fail_msg("cannot open " EXPECTED_CSV " (regenerate: /usr/bin/python3 "
                 "tests/golden/steady_reference.py tests/golden/steady_expected.csv)");
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    golden_case *cases = NULL;
    size_t n = 0;
    long lineno = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        lineno++;
        if (line[len - 1] == '\n')
            line[--len] = '\0';
        if (lineno == 1) {
            assert_string_equal(line, "case,q,warmup_s,times,values,valid,status,mean,se,m,"
                                      "n_valid,n_missing,n_warmup");
            continue;
        }
        char *field[13];
        size_t nf = 0;
        char *save = NULL;
        for (char *tok = strtok_r(line, ",", &save); tok != NULL && nf < 13;
             tok = strtok_r(NULL, ",", &save))
            field[nf++] = tok;
        if (nf != 13)
            fail_msg(EXPECTED_CSV ":%ld: %zu fields, want 13", lineno, nf);
        cases = realloc(cases, (n + 1) * sizeof *cases);
        assert_non_null(cases);
        golden_case *c = &cases[n++];
        memset(c, 0, sizeof *c);
        snprintf(c->name, sizeof c->name, "%s", field[0]);
        c->q = parse_double(field[1]);
        c->warmup = parse_double(field[2]);
        c->n = parse_doubles(field[4], &c->values);
        if (strcmp(field[3], "-") != 0)
            assert_int_equal(parse_doubles(field[3], &c->times), c->n);
        if (strcmp(field[5], "-") != 0) {
            assert_int_equal(strlen(field[5]), c->n);
            c->valid = malloc(c->n * sizeof *c->valid);
            assert_non_null(c->valid);
            for (size_t i = 0; i < c->n; i++)
                c->valid[i] = field[5][i] == '1';
        }
        assert_true(strcmp(field[6], "ok") == 0 || strcmp(field[6], "empty") == 0);
        c->empty = strcmp(field[6], "empty") == 0;
        c->mean = parse_double(field[7]);
        c->se = parse_double(field[8]);
        c->m = parse_size(field[9]);
        c->n_valid = parse_size(field[10]);
        c->n_missing = parse_size(field[11]);
        c->n_warmup = parse_size(field[12]);
    }
    free(line);
    fclose(f);
    if (n < 40)
        fail_msg(EXPECTED_CSV ": only %zu cases", n);
    *n_cases = n;
    return cases;
}

/* ---- comparing -------------------------------------------------------------------------- */

static bool close_rel(double got, double want, double scale)
{
    if (isnan(want))
        return isnan(got);
    if (isinf(want))
        return got == want;
    return fabs(got - want) <= REL * scale;
}

/* Run one case with the given inputs and check the result against c. */
static void check_case(const golden_case *c, const double *times, const bool *valid,
                       const char *variant)
{
    const char *nm = c->name;
    double *values = malloc((c->n ? c->n : 1) * sizeof *values);
    double *work = malloc((c->n ? c->n : 1) * sizeof *work); /* exactly n: ASan guards it */
    assert_non_null(values);
    assert_non_null(work);
    memcpy(values, c->values, c->n * sizeof *values);
    pfi_steady out;
    memset(&out, 0x77, sizeof out);
    pfi_error e = pfi_steady_state(times, values, valid, c->n, c->warmup, c->q, work, &out);
    CHECK(e == (c->empty ? PFI_ERR_EMPTY : PFI_OK), "%s%s: error %d, want %s\n", nm, variant,
          (int)e, c->empty ? "PFI_ERR_EMPTY" : "PFI_OK");
    CHECK(memcmp(values, c->values, c->n * sizeof *values) == 0 || c->n == 0,
          "%s%s: the input values were modified\n", nm, variant);
    CHECK(out.n_valid == c->n_valid, "%s%s: n_valid %zu, want %zu\n", nm, variant, out.n_valid,
          c->n_valid);
    CHECK(out.n_missing == c->n_missing, "%s%s: n_missing %zu, want %zu\n", nm, variant,
          out.n_missing, c->n_missing);
    CHECK(out.n_warmup == c->n_warmup, "%s%s: n_warmup %zu, want %zu\n", nm, variant, out.n_warmup,
          c->n_warmup);
    if (!c->empty)
        CHECK(out.m == c->m, "%s%s: m %zu, want %zu\n", nm, variant, out.m, c->m);
    CHECK(close_rel(out.mean, c->mean, fabs(c->mean)), "%s%s: mean %.17g, want %.17g\n", nm,
          variant, out.mean, c->mean);
    /* a zero se (equal top values) is compared on the scale of the mean */
    CHECK(close_rel(out.se, c->se, c->se != 0 ? fabs(c->se) : fabs(c->mean)),
          "%s%s: se %.17g, want %.17g\n", nm, variant, out.se, c->se);
    free(values);
    free(work);
}

static void test_against_reference(void **state)
{
    (void)state;
    size_t n;
    golden_case *cases = golden_load(&n);
    bool q_seen[3] = {false, false, false};
    bool n_seen[4] = {false, false, false, false};
    for (size_t i = 0; i < n; i++) {
        const golden_case *c = &cases[i];
        check_case(c, c->times, c->valid, "");
        /* valid = NULL means all valid; t_s = NULL means no warm-up */
        bool *all = malloc((c->n ? c->n : 1) * sizeof *all);
        double *t = malloc((c->n ? c->n : 1) * sizeof *t);
        assert_non_null(all);
        assert_non_null(t);
        for (size_t k = 0; k < c->n; k++) {
            all[k] = true;
            t[k] = 3.0 * (double)k;
        }
        if (c->valid == NULL)
            check_case(c, c->times, all, " (valid all true)");
        if (c->times == NULL && c->warmup == 0)
            check_case(c, t, c->valid, " (with times)");
        free(all);
        free(t);
        q_seen[0] |= c->q == 0.1;
        q_seen[1] |= c->q == 0.25;
        q_seen[2] |= c->q == 1.0;
        n_seen[0] |= c->n == 1;
        n_seen[1] |= c->n == 2;
        n_seen[2] |= c->n == 11;
        n_seen[3] |= c->n == 1000;
    }
    golden_free(cases, n);
    /* the file covers what it should */
    CHECK(q_seen[0] && q_seen[1] && q_seen[2], "q = 0.1, 0.25, 1.0 not all covered\n");
    CHECK(n_seen[0] && n_seen[1] && n_seen[2] && n_seen[3], "n = 1, 2, 11, 1000 not covered\n");
    END_CHECKS();
}

/* ---- arguments -------------------------------------------------------------------------- */

static void test_invalid_arguments(void **state)
{
    (void)state;
    static const double t_ok[5] = {0, 5, 10, 15, 20};
    static const double t_dec[5] = {0, 5, 4, 15, 20};
    static const double t_dec_last[5] = {0, 5, 10, 15, 14.999};
    static const double t_dec_first[5] = {1, 0.5, 10, 15, 20};
    static const double v[5] = {1, 2, 3, 4, 5};
    static const struct {
        const char *name;
        const double *t;
        double warmup, q;
    } cases[] = {
        {"q = 0", t_ok, 0, 0.0},
        {"q = -0.1", t_ok, 0, -0.1},
        {"q just over 1", t_ok, 0, 1.0000000000000002},
        {"q = 2", t_ok, 0, 2.0},
        {"q = NaN", t_ok, 0, NAN},
        {"q = inf", t_ok, 0, INFINITY},
        {"negative warm-up", t_ok, -1.0, 0.1},
        {"tiny negative warm-up", t_ok, -1e-300, 0.1},
        {"t NULL with a warm-up", NULL, 5.0, 0.1},
        {"t NULL with a tiny warm-up", NULL, 1e-300, 0.1},
        {"decreasing times", t_dec, 0, 0.1},
        {"decreasing times, warm-up", t_dec, 1.0, 0.1},
        {"decreasing at the end", t_dec_last, 0, 0.5},
        {"decreasing at the start", t_dec_first, 0, 1.0},
    };
    for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
        double work[5];
        pfi_steady out;
        pfi_error e =
            pfi_steady_state(cases[c].t, v, NULL, 5, cases[c].warmup, cases[c].q, work, &out);
        CHECK(e == PFI_ERR_INVALID_ARGUMENT, "%s: error %d, want PFI_ERR_INVALID_ARGUMENT\n",
              cases[c].name, (int)e);
    }
    /* the edges that are allowed */
    double work[5];
    pfi_steady out;
    CHECK(pfi_steady_state(NULL, v, NULL, 5, 0.0, 1.0, work, &out) == PFI_OK, "q = 1\n");
    CHECK(out.m == 5 && out.mean == 3.0, "q = 1: m %zu mean %g\n", out.m, out.mean);
    CHECK(pfi_steady_state(NULL, v, NULL, 5, 0.0, 1e-300, work, &out) == PFI_OK, "tiny q\n");
    CHECK(out.m == 1 && out.mean == 5.0 && isnan(out.se), "tiny q: m %zu mean %g se %g\n", out.m,
          out.mean, out.se);
    CHECK(pfi_steady_state(NULL, v, NULL, 5, -0.0, 0.5, work, &out) == PFI_OK, "warm-up -0\n");
    CHECK(pfi_steady_state(t_ok, v, NULL, 5, 0.0, PFI_STEADY_DEFAULT_Q, work, &out) == PFI_OK,
          "default q\n");
    CHECK(out.m == 1 && out.mean == 5.0, "default q: m %zu mean %g\n", out.m, out.mean);
    END_CHECKS();
}

static void test_default_q(void **state)
{
    (void)state;
    assert_true(PFI_STEADY_DEFAULT_Q == 0.10);
}

/* No valid sample after the warm-up: PFI_ERR_EMPTY, with the counts and NaN results. */
static void test_all_missing(void **state)
{
    (void)state;
    static const double t[6] = {0, 1, 2, 3, 4, 5};
    static const double v[6] = {NAN, 2, NAN, 4, NAN, 6};
    static const bool valid[6] = {true, true, true, false, true, false};
    double work[6];
    pfi_steady out;
    memset(&out, 0x11, sizeof out);
    /* v[1] = 2 is in the warm-up; every later sample is NaN or invalid */
    assert_int_equal(pfi_steady_state(t, v, valid, 6, 1.5, 0.1, work, &out), PFI_ERR_EMPTY);
    assert_int_equal(out.n_valid, 0);
    assert_int_equal(out.n_missing, 4);
    assert_int_equal(out.n_warmup, 2);
    assert_true(isnan(out.mean));
    assert_true(isnan(out.se));
    /* all NaN, no times */
    static const double nans[3] = {NAN, NAN, NAN};
    memset(&out, 0x11, sizeof out);
    assert_int_equal(pfi_steady_state(NULL, nans, NULL, 3, 0, 1.0, work, &out), PFI_ERR_EMPTY);
    assert_int_equal(out.n_valid, 0);
    assert_int_equal(out.n_missing, 3);
    assert_int_equal(out.n_warmup, 0);
    assert_true(isnan(out.mean));
    assert_true(isnan(out.se));
    /* nothing at all */
    memset(&out, 0x11, sizeof out);
    assert_int_equal(pfi_steady_state(t, v, NULL, 0, 0, 0.1, work, &out), PFI_ERR_EMPTY);
    assert_int_equal(out.n_valid, 0);
    assert_int_equal(out.n_missing, 0);
    assert_int_equal(out.n_warmup, 0);
    assert_true(isnan(out.mean));
    assert_true(isnan(out.se));
}

/* Infinite samples are valid (only NaN is missing): they are averaged like any other. */
static void test_infinite_samples(void **state)
{
    (void)state;
    /* a non-finite sample is missing like NaN: counted, never averaged */
    static const struct {
        const char *name;
        double v[4];
        size_t n;
        double q;
        double mean;
        size_t n_missing;
    } cases[] = {
        {"+inf left out of the top", {1, INFINITY, 2, 3}, 4, 0.25, 3.0, 1},
        {"+inf left out of the mean", {1, INFINITY, 2, 3}, 4, 1.0, 2.0, 1},
        {"-inf left out (q < 1)", {1, -INFINITY, 2, 3}, 4, 0.5, 2.5, 1},
        {"-inf left out (q = 1)", {1, -INFINITY, 2, 3}, 4, 1.0, 2.0, 1},
        {"two -inf left out", {-INFINITY, -INFINITY, 5, 0}, 3, 0.5, 5.0, 2},
    };
    for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
        double work[4];
        pfi_steady out;
        pfi_error e =
            pfi_steady_state(NULL, cases[c].v, NULL, cases[c].n, 0, cases[c].q, work, &out);
        CHECK(e == PFI_OK, "%s: error %d\n", cases[c].name, (int)e);
        CHECK(out.mean == cases[c].mean, "%s: mean %g, want %g\n", cases[c].name, out.mean,
              cases[c].mean);
        CHECK(out.n_missing == cases[c].n_missing, "%s: n_missing %zu, want %zu\n", cases[c].name,
              out.n_missing, cases[c].n_missing);
    }
    END_CHECKS();
}

/* Equal values give the same mean whichever copies are taken; the result is repeatable. */
static void test_ties_repeatable(void **state)
{
    (void)state;
    double v[64], work[64];
    for (size_t i = 0; i < 64; i++)
        v[i] = (double)((i * 29) % 8); /* 0..7, eight copies each */
    pfi_steady a, b;
    assert_int_equal(pfi_steady_state(NULL, v, NULL, 64, 0, 0.1, work, &a), PFI_OK);
    /* m = ceil(6.4) = 7: the seven largest are 7 x 7 */
    assert_int_equal(a.m, 7);
    assert_true(a.mean == 7.0);
    assert_true(a.se == 0.0);
    /* m = ceil(12.8) = 13: eight 7s and five 6s */
    assert_int_equal(pfi_steady_state(NULL, v, NULL, 64, 0, 0.2, work, &b), PFI_OK);
    assert_int_equal(b.m, 13);
    assert_true(fabs(b.mean - (8 * 7.0 + 5 * 6.0) / 13) <= 1e-15 * b.mean);
    for (int r = 0; r < 3; r++) {
        pfi_steady c;
        assert_int_equal(pfi_steady_state(NULL, v, NULL, 64, 0, 0.2, work, &c), PFI_OK);
        assert_true(c.mean == b.mean);
        assert_true(c.se == b.se);
    }
}

/*
 * A constant series: the standard error is 0, not rounding noise. Thirty samples of 0.1, q 0.1:
 * the top three average to 0.30000000000000004 / 3 = 0.10000000000000002 in doubles, which left
 * se = 9.8e-18 before pfi_se_rounded (PFI_SE_ROUNDING). A real spread keeps its se.
 */
static void test_constant_series_se_zero(void **state)
{
    (void)state;
    double v[30], work[30];
    for (int i = 0; i < 30; i++)
        v[i] = 0.1;
    pfi_steady out;
    assert_int_equal(pfi_steady_state(NULL, v, NULL, 30, 0, 0.1, work, &out), PFI_OK);
    assert_int_equal(out.m, 3);
    assert_true(out.se == 0.0);
    v[0] = 0.1 + 1e-9; /* a spread of 1e-8 of the mean is kept: s/sqrt(3), s = 1e-9/sqrt(3) */
    assert_int_equal(pfi_steady_state(NULL, v, NULL, 30, 0, 0.1, work, &out), PFI_OK);
    assert_true(fabs(out.se - 1e-9 / 3.0) < 1e-15);
    assert_true(pfi_se_rounded(4.05e-15, 300.0) == 0.0);
    assert_true(pfi_se_rounded(4.05e-15, -300.0) == 0.0);
    assert_true(pfi_se_rounded(1e-9, 300.0) == 1e-9);
    assert_true(pfi_se_rounded(0.5, 0.0) == 0.5);
    assert_true(isnan(pfi_se_rounded(NAN, 300.0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_default_q),
        cmocka_unit_test(test_all_missing),
        cmocka_unit_test(test_infinite_samples),
        cmocka_unit_test(test_ties_repeatable),
        cmocka_unit_test(test_constant_series_se_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
