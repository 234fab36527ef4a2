/*
 * core/topq.h: the exact sum against values worked out by hand (each in its comment), and the
 * top-q mean's order independence — pfi_steady_state over shuffles of one array and the
 * bounded summary pfi_topq (folding or not) give the same bits, or the summary says it cannot.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/topq.h"
#include "pfi/steady.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
        }                                                                                          \
    } while (0)

static double sum_of(const double *x, size_t n, double *lo)
{
    pfi_xsum a;
    pfi_xsum_init(&a);
    for (size_t i = 0; i < n; i++)
        pfi_xsum_add(&a, x[i]);
    return pfi_xsum_round(&a, lo);
}

static void test_exact_sum(void)
{
    double lo;
    /* 1e16 + 1 - 1e16: 1 (left to right in doubles: 0). */
    double a[] = {1e16, 1.0, -1e16};
    CHECK(sum_of(a, 3, &lo) == 1.0 && lo == 0.0, "1e16+1-1e16: %.17g %.17g\n", sum_of(a, 3, NULL),
          lo);
    /* Ten 0.1 (0.1 = 3602879701896397·2^-55): 36028797018963970·2^-55 = 1 + 2^-54 exactly,
     * rounded 1, remainder 2^-54 (left to right in doubles: 0.9999999999999999). */
    double t[10], nt[10];
    for (int i = 0; i < 10; i++) {
        t[i] = 0.1;
        nt[i] = -0.1;
    }
    CHECK(sum_of(t, 10, &lo) == 1.0 && lo == 0x1p-54, "ten 0.1: %a %a\n", sum_of(t, 10, NULL), lo);
    CHECK(sum_of(nt, 10, &lo) == -1.0 && lo == -0x1p-54, "ten -0.1: %a %a\n", sum_of(nt, 10, NULL),
          lo);
    /* 2^53 + 1: a tie, to even (2^53); + 2^-100 is past the tie: 2^53 + 2. */
    double b[] = {0x1p53, 1.0, 0x1p-100};
    CHECK(sum_of(b, 2, &lo) == 0x1p53 && lo == 1.0, "2^53+1: %a %a\n", sum_of(b, 2, NULL), lo);
    CHECK(sum_of(b, 3, NULL) == 0x1p53 + 2, "2^53+1+2^-100: %a\n", sum_of(b, 3, NULL));
    /* 2^53 + 3: a tie between 2^53+2 and 2^53+4, to even (2^53+4). */
    double b3[] = {0x1p53, 3.0};
    CHECK(sum_of(b3, 2, NULL) == 0x1p53 + 4, "2^53+3: %a\n", sum_of(b3, 2, NULL));
    /* The least subnormal twice; the largest double twice (infinity); back down to 1. */
    double s[] = {0x1p-1074, 0x1p-1074};
    CHECK(sum_of(s, 2, NULL) == 0x1p-1073, "subnormals: %a\n", sum_of(s, 2, NULL));
    double big[] = {DBL_MAX, DBL_MAX};
    CHECK(isinf(sum_of(big, 2, NULL)), "2 DBL_MAX: %a\n", sum_of(big, 2, NULL));
    double back[] = {DBL_MAX, DBL_MAX, -DBL_MAX, -DBL_MAX, 1.0};
    CHECK(sum_of(back, 5, NULL) == 1.0, "DBL_MAX back to 1: %a\n", sum_of(back, 5, NULL));
    CHECK(sum_of(NULL, 0, &lo) == 0.0 && lo == 0.0, "empty\n");
    /* 3·0.1 = 10808639105689191·2^-55: a tie at 2^-54 steps, to even 0.30000000000000004,
     * remainder -2^-55. */
    pfi_xsum m;
    pfi_xsum_init(&m);
    pfi_xsum_add_mul(&m, 3, 0.1);
    double h = pfi_xsum_round(&m, &lo);
    CHECK(h == 0.30000000000000004 && lo == -0x1p-55, "3 x 0.1: %a %a\n", h, lo);
    /* 2^30 additions of 1 (a carry normalisation on the way): 2^30. */
    pfi_xsum many;
    pfi_xsum_init(&many);
    for (int i = 0; i < 3; i++)
        pfi_xsum_add(&many, 1.0);
    many.pending = (1u << 30) - 2; /* as if after 2^30 - 2 additions: the carry rule runs */
    for (int i = 0; i < 5; i++)
        pfi_xsum_add(&many, 1.0);
    CHECK(many.pending < 8 && pfi_xsum_round(&many, NULL) == 8.0, "normalised: %a\n",
          pfi_xsum_round(&many, NULL));
    /* 2^31 ones in one limb would overflow a 32-bit one: carries keep the value (2^31 + 1). */
    pfi_xsum c31;
    pfi_xsum_init(&c31);
    pfi_xsum_add_mul(&c31, (uint64_t)1 << 31, 1.0);
    pfi_xsum_add(&c31, 1.0);
    CHECK(pfi_xsum_round(&c31, NULL) == 0x1p31 + 1, "2^31+1: %a\n", pfi_xsum_round(&c31, NULL));
}

static void test_mean_exact(void)
{
    double v[10], w[10];
    for (int i = 0; i < 10; i++)
        v[i] = 0.1;
    pfi_steady out;
    /* The mean of ten 0.1: (1 + 2^-54)/10 rounds to 0.1 (summing in doubles: 0.09999999999999999).
     */
    CHECK(pfi_steady_state(NULL, v, NULL, 10, 0, 1.0, w, &out) == 0 && out.mean == 0.1 &&
              out.se == 0.0,
          "ten 0.1: mean %.17g se %g\n", out.mean, out.se);
    /* 0..9 a hundred times each, q = 0.25: m = 250: 100·9 + 100·8 + 50·7 = 2050, mean 8.2. */
    double x[1000], wk[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (double)(i % 10);
    CHECK(pfi_steady_state(NULL, x, NULL, 1000, 0, 0.25, wk, &out) == 0 && out.m == 250 &&
              out.mean == 8.2,
          "ties: m %zu mean %.17g\n", out.m, out.mean);
    pfi_topq t;
    CHECK(pfi_topq_init(&t, 16) == PFI_OK, "init\n");
    for (int i = 0; i < 1000; i++)
        pfi_topq_add(&t, x[i]);
    size_t mm;
    double mean, se;
    bool exact;
    CHECK(pfi_topq_result(&t, 0.25, &mm, &mean, &se, &exact) == PFI_OK && exact && mm == 250 &&
              mean == 8.2 && pfi_se_rounded(se, mean) == out.se,
          "ties summary: exact %d m %zu mean %.17g se %g/%g\n", exact, mm, mean, se, out.se);
    pfi_topq_free(&t);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* pfi_steady_state over 20 shuffles, and pfi_topq fed in random, ascending and descending
 * order with and without folding: the same bits when the summary says exact. */
static void test_order_independent(void)
{
    enum { N = 5000 };
    static double x[N], y[N], w[N];
    for (size_t i = 0; i < N; i++)
        x[i] = 100.0 + (double)(next() >> 11) * 0x1p-53 * 700.0; /* many digits, all distinct */
    const double qs[] = {0.1, 0.5, 1.0, 1e-9};
    for (size_t qi = 0; qi < sizeof qs / sizeof *qs; qi++) {
        double q = qs[qi];
        pfi_steady ref;
        memcpy(y, x, sizeof x);
        CHECK(pfi_steady_state(NULL, y, NULL, N, 0, q, w, &ref) == PFI_OK, "ref\n");
        for (int r = 0; r < 20; r++) {
            for (size_t i = N - 1; i > 0; i--) {
                size_t j = (size_t)(next() % (i + 1));
                double tmp = y[i];
                y[i] = y[j];
                y[j] = tmp;
            }
            pfi_steady o;
            CHECK(pfi_steady_state(NULL, y, NULL, N, 0, q, w, &o) == PFI_OK &&
                      memcmp(&o.mean, &ref.mean, sizeof o.mean) == 0 &&
                      memcmp(&o.se, &ref.se, sizeof o.se) == 0,
                  "q %g shuffle %d: %a %a vs %a %a\n", q, r, o.mean, o.se, ref.mean, ref.se);
        }
        /* The summary: every order, a table that never folds and one that folds (256). */
        for (int order = 0; order < 3; order++) {
            memcpy(y, x, sizeof x);
            if (order > 0) {
                memcpy(w, y, sizeof w);
                qsort(w, N, sizeof *w, cmp_double);
                for (size_t i = 0; i < N; i++)
                    y[i] = order == 1 ? w[i] : w[N - 1 - i];
            }
            for (int fold = 0; fold < 2; fold++) {
                pfi_topq t;
                CHECK(pfi_topq_init(&t, fold ? 256 : SIZE_MAX) == PFI_OK, "init\n");
                for (size_t i = 0; i < N; i++)
                    CHECK(pfi_topq_add(&t, y[i]) == PFI_OK, "add\n");
                pfi_topq_add(&t, NAN); /* missing: counted, not averaged */
                size_t m;
                double mean, se;
                bool exact;
                CHECK(pfi_topq_result(&t, q, &m, &mean, &se, &exact) == PFI_OK, "result\n");
                CHECK(t.n == N && t.n_miss == 1, "counts %llu %llu\n", (unsigned long long)t.n,
                      (unsigned long long)t.n_miss);
                /* Expected: no folding is always exact; folding at 256 keeps >= 128 of the
                 * top in ascending/descending order (m <= 128 exact, else not), and in
                 * random order is exact only when m is small. */
                if (!fold || (order > 0 && ref.m <= 128))
                    CHECK(exact, "q %g order %d fold %d: not exact\n", q, order, fold);
                if (fold && ref.m > 256)
                    CHECK(!exact, "q %g order %d fold %d: m %zu cannot be exact\n", q, order, fold,
                          ref.m);
                if (exact) {
                    se = m >= 2 ? pfi_se_rounded(se, mean) : se;
                    CHECK(m == ref.m && memcmp(&mean, &ref.mean, sizeof mean) == 0 &&
                              memcmp(&se, &ref.se, sizeof se) == 0,
                          "q %g order %d fold %d: %a %a vs %a %a\n", q, order, fold, mean, se,
                          ref.mean, ref.se);
                }
                pfi_topq_free(&t);
            }
        }
    }
    /* -0 and +0 are one value. */
    pfi_topq t;
    pfi_topq_init(&t, SIZE_MAX);
    pfi_topq_add(&t, -0.0);
    pfi_topq_add(&t, 0.0);
    CHECK(t.used == 1 && t.n == 2, "-0 and +0: %zu distinct\n", t.used);
    pfi_topq_free(&t);
}

int main(void)
{
    test_exact_sum();
    test_mean_exact();
    test_order_independent();
    if (failures)
        fprintf(stderr, "test_topq: %d failures\n", failures);
    return failures ? 1 : 0;
}
