/*
 * core/topq.h — exactly rounded sums and the order-independent top-q mean (internal).
 *
 * The steady state (pfi_steady_state) averages the top q of a series. A floating-point sum
 * depends on the order of its terms, and the order of the top values is whatever a selection
 * left: two paths over the same samples (an array, a bounded streamed summary) could differ
 * in the last bits. Here every sum is exact — a fixed-point accumulator over the whole range
 * of doubles (Kulisch) — and rounded once, so the result depends only on the multiset of the
 * values [ours]. Not part of the public API.
 */
#ifndef PFI_CORE_TOPQ_H
#define PFI_CORE_TOPQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 32 value bits a limb, from 2^-1088 (below the least subnormal) past 2^1024, and room for
 * the carries of 2^30 additions between normalisations. */
#define PFI_XSUM_LIMBS 68

/* pfi_xsum — an exact sum of finite doubles. Initialise with pfi_xsum_init. */
typedef struct pfi_xsum {
    int64_t l[PFI_XSUM_LIMBS];
    uint32_t pending; /* additions since the last carry normalisation */
} pfi_xsum;

/* pfi_xsum_init — the empty sum (0). */
void pfi_xsum_init(pfi_xsum *a);

/* pfi_xsum_add — a += x, exactly. x must be finite (a NaN or infinity is ignored). */
void pfi_xsum_add(pfi_xsum *a, double x);

/* pfi_xsum_add_mul — a += c·x, exactly (c an integer count below 2^53, x finite; the product
 * split in two doubles by an FMA). */
void pfi_xsum_add_mul(pfi_xsum *a, uint64_t c, double x);

/* pfi_xsum_round — the sum rounded to the nearest double (ties to even; ±infinity past the
 * largest double); *lo (may be NULL) gets the remainder (exact sum − result) rounded. a is
 * left unchanged (normalised). */
double pfi_xsum_round(pfi_xsum *a, double *lo);

/*
 * pfi_topq_mean — the mean of a multiset of m values whose exact sum is s: the sum rounded
 * once (hi + lo) divided by m with the division's remainder kept (fma), so the result is the
 * same whatever the order of the values. m > 0.
 */
double pfi_topq_mean(pfi_xsum *s, size_t m);

/*
 * pfi_topq — a bounded summary of a stream of values from which the mean of the top q (as
 * pfi_steady_state) is exact: each distinct value (bit pattern; −0 as +0) with its count in
 * an open-addressing table. When it holds max_distinct values the lower half (by value) is
 * folded into a count of "low" values and the largest of them: values at or below that are
 * counted only. The top m are exact while m <= the values kept (pfi_topq_result says so).
 * Memory: 16 bytes a slot, at most 2·max_distinct slots (1024 first, doubled as needed).
 */
typedef struct pfi_topq {
    uint64_t *key; /* double bit patterns; cnt[i] == 0: slot empty */
    uint64_t *cnt;
    size_t slots, used, max_distinct;
    uint64_t n_low;  /* values folded (or counted) at or below low_max */
    double low_max;  /* -INFINITY while nothing was folded */
    uint64_t n;      /* finite values added */
    uint64_t n_miss; /* NaN or infinite values added (counted, never averaged) */
} pfi_topq;

/* pfi_topq_init — an empty summary keeping at most max_distinct distinct values (SIZE_MAX:
 * no limit, never folds). PFI_ERR_NOMEM. */
pfi_error pfi_topq_init(pfi_topq *t, size_t max_distinct);

/* pfi_topq_free — releases t's table (t may be zeroed or NULL). */
void pfi_topq_free(pfi_topq *t);

/* pfi_topq_add — one value into t (NaN/±inf counted as missing). PFI_ERR_NOMEM. */
pfi_error pfi_topq_add(pfi_topq *t, double x);

/*
 * pfi_topq_result — the mean and standard error (s/sqrt(m), NaN when m < 2; before
 * pfi_se_rounded) of the m = pfi_topq_count(q, n) largest finite values added (ties at the
 * threshold counted as needed): pfi_topq_stats of them, so identical bit for bit to
 * pfi_steady_state on the same values in any order. *exact false (and nothing
 * else set) when values folded away were needed. PFI_ERR_EMPTY when no finite value;
 * PFI_ERR_NOMEM. q in (0, 1].
 */
pfi_error pfi_topq_result(const pfi_topq *t, double q, size_t *m, double *mean, double *se,
                          bool *exact);

/*
 * pfi_topq_stats — the mean and standard error (as pfi_topq_result) of the multiset: x[i]
 * repeated c[i] times (c NULL: once) for the n entries with x[i] > v, plus ties copies of v
 * (m values in all, m > 0). The mean is pfi_topq_mean of the exact sum; the sum of squared
 * deviations is the exact sum of each value's fl((x − mean)²), rounded once.
 */
void pfi_topq_stats(const double *x, const uint64_t *c, size_t n, double v, uint64_t ties, size_t m,
                    double *mean, double *se);

/* pfi_topq_count — m = max(1, ceil(q·n)) capped at n (n > 0): how many values are averaged. */
size_t pfi_topq_count(double q, size_t n);

#ifdef __cplusplus
}
#endif

#endif
