/*
 * Exactly rounded sums and the order-independent top-q mean (see core/topq.h).
 */
#include "core/topq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"

#define LIMB_BASE 1088 /* limb 0's least bit is 2^-1088 */
#define LIMB_MASK 0xffffffffLL

void pfi_xsum_init(pfi_xsum *a)
{
    memset(a, 0, sizeof *a);
}

/* Carries moved up: every limb but the top one in [0, 2^32), the value unchanged. */
static void xsum_normalise(pfi_xsum *a)
{
    for (size_t i = 0; i + 1 < PFI_XSUM_LIMBS; i++) {
        int64_t c = a->l[i] >> 32; /* floor division by 2^32 (arithmetic shift) */
        a->l[i] -= c * ((int64_t)1 << 32);
        a->l[i + 1] += c;
    }
    a->pending = 0;
}

void pfi_xsum_add(pfi_xsum *a, double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    unsigned ef = (unsigned)(b >> 52) & 0x7ff;
    uint64_t mant = b & (((uint64_t)1 << 52) - 1);
    int e;
    if (ef == 0x7ff)
        return; /* NaN or infinity: not a finite term */
    if (ef == 0) {
        if (mant == 0)
            return;
        e = -1074;
    } else {
        mant |= (uint64_t)1 << 52;
        e = (int)ef - 1075;
    }
    unsigned pos = (unsigned)(e + LIMB_BASE);
    unsigned j = pos >> 5;
    unsigned __int128 v = (unsigned __int128)mant << (pos & 31);
    int64_t p0 = (int64_t)(v & LIMB_MASK), p1 = (int64_t)((v >> 32) & LIMB_MASK),
            p2 = (int64_t)(v >> 64);
    if (b >> 63) {
        a->l[j] -= p0;
        a->l[j + 1] -= p1;
        a->l[j + 2] -= p2;
    } else {
        a->l[j] += p0;
        a->l[j + 1] += p1;
        a->l[j + 2] += p2;
    }
    if (++a->pending >= (1u << 30))
        xsum_normalise(a);
}

void pfi_xsum_add_mul(pfi_xsum *a, uint64_t c, double x)
{
    double cd = (double)c;
    double hi = cd * x;
    if (!isfinite(hi))
        return;
    pfi_xsum_add(a, hi);
    pfi_xsum_add(a, fma(cd, x, -hi)); /* the product's exact remainder */
}

/* The normalised sum's magnitude rounded to the nearest double (ties to even); neg: the sum
 * is negative (a is negated in place first). */
static double xsum_round_abs(pfi_xsum *a, bool *neg)
{
    xsum_normalise(a);
    *neg = a->l[PFI_XSUM_LIMBS - 1] < 0;
    if (*neg) {
        for (size_t i = 0; i < PFI_XSUM_LIMBS; i++)
            a->l[i] = -a->l[i];
        xsum_normalise(a);
    }
    int h = PFI_XSUM_LIMBS - 1;
    while (h >= 0 && a->l[h] == 0)
        h--;
    if (h < 0)
        return 0.0;
    unsigned __int128 top = 0;
    for (int i = h; i >= h - 2; i--)
        top = (top << 32) | (i >= 0 ? (uint64_t)a->l[i] : 0);
    bool sticky = false;
    for (int i = h - 3; i >= 0 && !sticky; i--)
        sticky = a->l[i] != 0;
    uint64_t hi64 = (uint64_t)(top >> 64);
    int p = hi64 ? 127 - __builtin_clzll(hi64) : 63 - __builtin_clzll((uint64_t)top);
    int shift = p - 52;
    uint64_t m;
    if (shift > 0) {
        m = (uint64_t)(top >> shift);
        unsigned __int128 rem = top & (((unsigned __int128)1 << shift) - 1);
        unsigned __int128 half = (unsigned __int128)1 << (shift - 1);
        if (rem > half || (rem == half && (sticky || (m & 1))))
            m++; /* 2^53 at most: still exact */
    } else {
        m = (uint64_t)top << -shift; /* no bits below: exact */
    }
    return ldexp((double)m, shift + 32 * (h - 2) - LIMB_BASE);
}

double pfi_xsum_round(pfi_xsum *a, double *lo)
{
    pfi_xsum w = *a;
    bool neg;
    double r = xsum_round_abs(&w, &neg);
    if (neg)
        r = -r;
    xsum_normalise(a);
    if (lo != NULL) {
        *lo = 0.0;
        if (isfinite(r)) {
            w = *a;
            pfi_xsum_add(&w, -r);
            double l = xsum_round_abs(&w, &neg);
            *lo = neg ? -l : l;
        }
    }
    return r;
}

double pfi_topq_mean(pfi_xsum *s, size_t m)
{
    double lo, hi = pfi_xsum_round(s, &lo), md = (double)m;
    double q = hi / md;
    if (!isfinite(q))
        return q;
    double r = fma(-q, md, hi); /* hi − q·m, exact */
    return q + (r + lo) / md;
}

void pfi_topq_stats(const double *x, const uint64_t *c, size_t n, double v, uint64_t ties, size_t m,
                    double *mean, double *se)
{
    pfi_xsum s;
    pfi_xsum_init(&s);
    for (size_t i = 0; i < n; i++)
        if (x[i] > v) {
            if (c != NULL)
                pfi_xsum_add_mul(&s, c[i], x[i]);
            else
                pfi_xsum_add(&s, x[i]);
        }
    if (ties > 0)
        pfi_xsum_add_mul(&s, ties, v);
    double mu = pfi_topq_mean(&s, m);
    *mean = mu;
    pfi_xsum_init(&s);
    for (size_t i = 0; i < n; i++)
        if (x[i] > v) {
            double d = x[i] - mu;
            if (c != NULL)
                pfi_xsum_add_mul(&s, c[i], d * d);
            else
                pfi_xsum_add(&s, d * d);
        }
    if (ties > 0) {
        double d = v - mu;
        pfi_xsum_add_mul(&s, ties, d * d);
    }
    double ss = pfi_xsum_round(&s, NULL);
    *se = m >= 2 ? sqrt(ss / (double)(m - 1)) / sqrt((double)m) : NAN;
}

size_t pfi_topq_count(double q, size_t n)
{
    size_t m = (size_t)ceil(q * (double)n - 1e-12);
    if (m < 1)
        m = 1;
    if (m > n)
        m = n;
    return m;
}

pfi_error pfi_topq_init(pfi_topq *t, size_t max_distinct)
{
    *t = (pfi_topq){.max_distinct = max_distinct < 16 ? 16 : max_distinct, .low_max = -INFINITY};
    t->slots = 1024;
    t->key = pfi_malloc(t->slots * sizeof *t->key);
    t->cnt = pfi_calloc(t->slots, sizeof *t->cnt);
    if (t->key == NULL || t->cnt == NULL) {
        pfi_topq_free(t);
        return PFI_ERR_NOMEM;
    }
    return PFI_OK;
}

void pfi_topq_free(pfi_topq *t)
{
    if (t == NULL)
        return;
    pfi_free(t->key);
    pfi_free(t->cnt);
    *t = (pfi_topq){0};
}

static size_t topq_slot(const pfi_topq *t, uint64_t k)
{
    /* The product's high bits: a round value's low mantissa bits are all zero. */
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> (64 - __builtin_ctzll(t->slots)));
}

/* Every entry of t with value > floor into a fresh table of nslots slots (a power of two). */
static pfi_error topq_rehash(pfi_topq *t, size_t nslots, double floor)
{
    uint64_t *key = pfi_malloc(nslots * sizeof *key), *cnt = pfi_calloc(nslots, sizeof *cnt);
    if (key == NULL || cnt == NULL) {
        pfi_free(key);
        pfi_free(cnt);
        return PFI_ERR_NOMEM;
    }
    uint64_t *okey = t->key, *ocnt = t->cnt;
    size_t oslots = t->slots;
    t->key = key;
    t->cnt = cnt;
    t->slots = nslots;
    t->used = 0;
    for (size_t i = 0; i < oslots; i++) {
        if (ocnt[i] == 0)
            continue;
        double x;
        memcpy(&x, &okey[i], sizeof x);
        if (!(x > floor)) {
            t->n_low += ocnt[i];
            continue;
        }
        size_t s = topq_slot(t, okey[i]);
        while (cnt[s] != 0)
            s = (s + 1) & (nslots - 1);
        key[s] = okey[i];
        cnt[s] = ocnt[i];
        t->used++;
    }
    pfi_free(okey);
    pfi_free(ocnt);
    return PFI_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The lower half of the distinct values (by value) folded into n_low / low_max. */
static pfi_error topq_fold(pfi_topq *t)
{
    double *v = pfi_malloc(t->used * sizeof *v);
    if (v == NULL)
        return PFI_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < t->slots; i++)
        if (t->cnt[i] != 0)
            memcpy(&v[k++], &t->key[i], sizeof *v);
    qsort(v, k, sizeof *v, cmp_double);
    double split = v[k / 2 - 1];
    pfi_free(v);
    if (split > t->low_max)
        t->low_max = split;
    return topq_rehash(t, t->slots, t->low_max);
}

pfi_error pfi_topq_add(pfi_topq *t, double x)
{
    if (!isfinite(x)) {
        t->n_miss++;
        return PFI_OK;
    }
    t->n++;
    if (x <= t->low_max) {
        t->n_low++;
        return PFI_OK;
    }
    x += 0.0; /* -0 as +0: one value */
    uint64_t k;
    memcpy(&k, &x, sizeof k);
    size_t s = topq_slot(t, k);
    while (t->cnt[s] != 0) {
        if (t->key[s] == k) {
            t->cnt[s]++;
            return PFI_OK;
        }
        s = (s + 1) & (t->slots - 1);
    }
    if (2 * (t->used + 1) > t->slots) {
        pfi_error e =
            t->used >= t->max_distinct ? topq_fold(t) : topq_rehash(t, 2 * t->slots, -INFINITY);
        if (e != PFI_OK)
            return e;
        t->n--;
        return pfi_topq_add(t, x); /* again: the table changed (or x is now low) */
    }
    t->key[s] = k;
    t->cnt[s] = 1;
    t->used++;
    return PFI_OK;
}

/* Entries by value, largest first. */
typedef struct topq_entry {
    double x;
    uint64_t c;
} topq_entry;

static int cmp_entry_desc(const void *a, const void *b)
{
    double x = ((const topq_entry *)a)->x, y = ((const topq_entry *)b)->x;
    return (x < y) - (x > y);
}

pfi_error pfi_topq_result(const pfi_topq *t, double q, size_t *m, double *mean, double *se,
                          bool *exact)
{
    *exact = true;
    if (t->n == 0)
        return PFI_ERR_EMPTY;
    size_t mm = pfi_topq_count(q, (size_t)t->n);
    *m = mm;
    if (mm > t->n - t->n_low) {
        *exact = false;
        return PFI_OK;
    }
    topq_entry *e = pfi_malloc((t->used ? t->used : 1) * sizeof *e);
    double *x = pfi_malloc((t->used ? t->used : 1) * sizeof *x);
    uint64_t *c = pfi_malloc((t->used ? t->used : 1) * sizeof *c);
    if (e == NULL || x == NULL || c == NULL) {
        pfi_free(e);
        pfi_free(x);
        pfi_free(c);
        return PFI_ERR_NOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < t->slots; i++)
        if (t->cnt[i] != 0) {
            memcpy(&e[k].x, &t->key[i], sizeof e[k].x);
            e[k++].c = t->cnt[i];
        }
    qsort(e, k, sizeof *e, cmp_entry_desc);
    /* The threshold v: the value where the count from the top reaches m. */
    uint64_t above = 0;
    size_t j = 0;
    while (j < k && above + e[j].c < mm)
        above += e[j++].c;
    double v = e[j].x; /* j < k: mm <= the values kept */
    for (size_t i = 0; i < j; i++) {
        x[i] = e[i].x;
        c[i] = e[i].c;
    }
    pfi_topq_stats(x, c, j, v, mm - above, mm, mean, se);
    pfi_free(e);
    pfi_free(x);
    pfi_free(c);
    return PFI_OK;
}
