/*
 * The Lagrangian threshold at the heart of the oracle (and of pfi-model's estimated world):
 * the weighted selection of the threshold slope (pfi_alloc_select) and the placement of every
 * job against it (alloc_pick).
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pfi/allocate.h"
#include "power/alloc_internal.h"

/*
 * alloc_part_front without its running sum: the same swaps, so the same order; the width
 * moved to the front is then that of [lo, k) in order, which the caller sums only when it
 * needs its bits (alloc_sum_seq gives alloc_part_front's).
 */
static inline size_t part_front(double *slope, double *width, size_t lo, size_t hi, double pivot,
                                bool gt)
{
    size_t k = lo;
    for (size_t i = lo; i < hi; i++) {
        double s = slope[i], w = width[i];
        bool take = gt ? s > pivot : s == pivot;
        slope[i] = slope[k];
        width[i] = width[k];
        slope[k] = s;
        width[k] = w;
        k += take;
    }
    return k;
}

/*
 * Quickselect on slopes with weights: a pivot (median of three at random), the pairs above it
 * moved to the front, and only when the capacity does not run out there, those equal to it
 * next; keep the side where the capacity runs out. Each round is one or two passes over the
 * live range, without a branch on the data (was: a three-way partition whose branches the
 * processor could not predict, 3–4x slower). The widths are summed in order (one addition
 * after another, 4 cycles each) only where the bits reach the result: the total when it is
 * returned, the width above the pivot when the live range moves below it or the pivot is
 * the answer; a round that keeps the range above the pivot, and the first test of the
 * total, decide from eight partial sums with a bound on their error (alloc_sum8, alloc_sum_above),
 * in order too when the bound cannot tell. The same decisions and the same sums as summing
 * everything in order (which this function did before): λ and *above are bit for bit those.
 */
double pfi_alloc_select(double *slope, double *width, size_t m, double cap, double *above)
{
    double err, t = alloc_sum8(width, m, &err);
    int surely = m == 0 ? -1 : alloc_sum_above(0.0, t, err, cap);
    if (surely != 1) {
        double total = alloc_sum_seq(width, m);
        if (total <= cap || m == 0) {
            *above = total;
            return -INFINITY;
        }
    }
    size_t lo = 0, hi = m; /* live range [lo, hi) */
    double acc = 0;        /* width of segments already known to be above the live range */
    uint64_t state = 0x9E3779B97F4A7C15ull ^ (uint64_t)m;
    for (;;) {
        size_t n = hi - lo;
        double pivot = alloc_pivot3(slope, lo, n, &state);
        /* [lo, gt) > pivot, then [gt, eq) == pivot, [eq, hi) < pivot */
        double w_gt, w_eq;
        size_t gt = part_front(slope, width, lo, hi, pivot, true);
        t = alloc_sum8(width + lo, gt - lo, &err);
        surely = alloc_sum_above(acc, t, err, cap);
        bool left;
        if (surely == 1) {
            left = true;
        } else {
            w_gt = alloc_sum_seq(width + lo, gt - lo);
            left = acc + w_gt > cap;
        }
        if (left) {
            hi = gt;
        } else {
            size_t eq = part_front(slope, width, gt, hi, pivot, false);
            w_eq = alloc_sum_seq(width + gt, eq - gt);
            if (acc + w_gt + w_eq >= cap) {
                *above = acc + w_gt;
                return pivot;
            }
            acc += w_gt + w_eq;
            lo = eq;
        }
        if (lo >= hi) { /* cannot happen while total > cap; keep the loop finite anyway */
            *above = acc;
            return pivot;
        }
    }
}

/* alloc_select_buckets: the selections it takes (fewer segments: pfi_alloc_select), the most
   buckets (on the stack) and the segments a bucket holds on average [ours]. */
#define BUCKET_MIN 256
#define BUCKET_MAX 4096
#define BUCKET_PER 8
#define BUCKET_COPY 1024

/*
 * pfi_alloc_select's λ by buckets, for the oracle's main selection (the segments inside the
 * sampled bracket): the slopes' range cut into K equal buckets (K about m / BUCKET_PER, a
 * power of two), the widths summed bucket by bucket in one pass, the bucket where the
 * capacity runs out found by adding the buckets' sums from the top, and its segments moved
 * to the front (a permutation, as pfi_alloc_select's) for pfi_alloc_select with what is left
 * of the capacity. The bucket of a slope, (max − s)·K/(max − min) rounded down, never falls
 * as the slope falls, so every segment of an earlier bucket lies strictly above the chosen
 * bucket's and every later one strictly below: the same λ as one selection over all m
 * segments; *above (the earlier buckets' sums, then the bucket's width above λ) is the same
 * width summed in another order, so its last bits may differ from pfi_alloc_select's (the
 * oracle's determinism is per input: the order is a pure function of it). Falls back to
 * pfi_alloc_select over every segment when m < BUCKET_MIN, when the range is empty or not
 * finite, or when the bucket's segments all fit (sums that rounding leaves at the edge).
 * Expected O(m + K).
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BUCKET_SIMD 1
#define BUCKET_CHUNK 256
/*
 * alloc_select_buckets' three passes over the segments eight at a time where the CPU has
 * AVX-512 (the scalar ones took 12 % of a 10 000-job call): the eight chains of maxima and
 * minima as the lanes of one register (lane c is chain c, the tail and the reduction as the
 * scalar code's); each slope's bucket by the same IEEE operations and the same conversion
 * (truncation to int64, then the signed minimum with top), the sums and counts then added
 * in order from a chunk of indices; the chosen bucket's segments packed in order with a
 * compress. The same buckets, sums and copies as the scalar passes: the same bits.
 */
__attribute__((target("avx512f,avx512dq"))) static void
buckets_range8(const double *slope, size_t m, double hi8[8], double lo8[8])
{
    __m512d hi = _mm512_set1_pd(slope[0]), lo = hi;
    size_t r = 0;
    for (; r + 8 <= m; r += 8) {
        __m512d v = _mm512_loadu_pd(slope + r);
        hi = _mm512_max_pd(v, hi); /* v > hi ? v : hi, as the scalar chain */
        lo = _mm512_min_pd(v, lo); /* v < lo ? v : lo */
    }
    _mm512_storeu_pd(hi8, hi);
    _mm512_storeu_pd(lo8, lo);
}

__attribute__((target("avx512f,avx512dq"))) static void buckets_fill8(const double *slope,
                                                                      const double *width, size_t m,
                                                                      double mx, double scale,
                                                                      int64_t top, double *sum)
{
    const __m512d mxv = _mm512_set1_pd(mx), sc = _mm512_set1_pd(scale);
    const __m512i tv = _mm512_set1_epi64(top);
    int64_t idx[BUCKET_CHUNK];
    for (size_t c = 0; c < m; c += BUCKET_CHUNK) {
        size_t e = m - c < BUCKET_CHUNK ? m - c : BUCKET_CHUNK, i = 0;
        for (; i + 8 <= e; i += 8) {
            __m512d v = _mm512_loadu_pd(slope + c + i);
            __m512i b = _mm512_cvttpd_epi64(_mm512_mul_pd(_mm512_sub_pd(mxv, v), sc));
            _mm512_storeu_si512(idx + i, _mm512_min_epi64(b, tv));
        }
        for (; i < e; i++) {
            int64_t b = (int64_t)((mx - slope[c + i]) * scale);
            idx[i] = b < top ? b : top;
        }
        for (i = 0; i < e; i++)
            sum[idx[i]] += width[c + i];
    }
}

/* The segments of bucket B packed in order into bs/bw (room for BUCKET_COPY + 8): their
   count, or BUCKET_COPY + 1 as soon as there are more than BUCKET_COPY (the bucket is then
   moved in place; no counts kept: the fill above does not count). */
__attribute__((target("avx512f,avx512dq"))) static size_t
buckets_copy8(const double *slope, const double *width, size_t m, double mx, double scale,
              int64_t top, int64_t B, double *bs, double *bw)
{
    const __m512d mxv = _mm512_set1_pd(mx), sc = _mm512_set1_pd(scale);
    const __m512i tv = _mm512_set1_epi64(top), bv = _mm512_set1_epi64(B);
    size_t k = 0, i = 0;
    for (; i + 8 <= m; i += 8) {
        __m512d v = _mm512_loadu_pd(slope + i);
        __m512i b =
            _mm512_min_epi64(_mm512_cvttpd_epi64(_mm512_mul_pd(_mm512_sub_pd(mxv, v), sc)), tv);
        __mmask8 e = _mm512_cmpeq_epi64_mask(b, bv);
        _mm512_storeu_pd(bs + k, _mm512_maskz_compress_pd(e, v));
        _mm512_storeu_pd(bw + k, _mm512_maskz_compress_pd(e, _mm512_loadu_pd(width + i)));
        k += (size_t)__builtin_popcount(e);
        if (k > BUCKET_COPY)
            return BUCKET_COPY + 1;
    }
    for (; i < m; i++) {
        int64_t b = (int64_t)((mx - slope[i]) * scale);
        bs[k] = slope[i];
        bw[k] = width[i];
        k += (b < top ? b : top) == B;
        if (k > BUCKET_COPY)
            return BUCKET_COPY + 1;
    }
    return k;
}
#else
#define BUCKET_SIMD 0
#endif

double alloc_select_buckets(double *slope, double *width, size_t m, double cap, double *above,
                            bool simd, bool *kept)
{
    *kept = false;
    if (m < BUCKET_MIN)
        return pfi_alloc_select(slope, width, m, cap, above);
#if BUCKET_SIMD
    __builtin_cpu_init();
    simd = simd && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#else
    simd = false;
#endif
    /* the range in eight chains (one chain of m dependent maxima waited 4 cycles a slope) */
    double hi8[8], lo8[8];
    size_t r = 0;
#if BUCKET_SIMD
    if (simd) {
        buckets_range8(slope, m, hi8, lo8);
        r = m & ~(size_t)7;
    } else
#endif
    {
        for (int c = 0; c < 8; c++)
            hi8[c] = lo8[c] = slope[0];
        for (; r + 8 <= m; r += 8)
            for (int c = 0; c < 8; c++) {
                double v = slope[r + (size_t)c];
                hi8[c] = v > hi8[c] ? v : hi8[c];
                lo8[c] = v < lo8[c] ? v : lo8[c];
            }
    }
    for (; r < m; r++) {
        hi8[0] = slope[r] > hi8[0] ? slope[r] : hi8[0];
        lo8[0] = slope[r] < lo8[0] ? slope[r] : lo8[0];
    }
    double mx = hi8[0], mn = lo8[0];
    for (int c = 1; c < 8; c++) {
        mx = hi8[c] > mx ? hi8[c] : mx;
        mn = lo8[c] < mn ? lo8[c] : mn;
    }
    size_t K = 64;
    while (K < BUCKET_MAX && K * BUCKET_PER < m)
        K *= 2;
    double range = mx - mn;
    if (!(range > 0) || !isfinite(range))
        return pfi_alloc_select(slope, width, m, cap, above);
    double sum[BUCKET_MAX];
    uint32_t cnt[BUCKET_MAX]; /* the scalar passes only */
    memset(sum, 0, K * sizeof sum[0]);
    if (!simd)
        memset(cnt, 0, K * sizeof cnt[0]);
    const double scale = (double)K / range;
    const int64_t top = (int64_t)K - 1;
    /* a slope's bucket: >= 0 as s <= mx; converted as a signed integer (no branch) */
#define BUCKET_OF(s)                                                                               \
    ((size_t)((int64_t)((mx - (s)) * scale) < top ? (int64_t)((mx - (s)) * scale) : top))
#if BUCKET_SIMD
    if (simd)
        buckets_fill8(slope, width, m, mx, scale, top, sum);
    else
#endif
        for (size_t i = 0; i < m; i++) {
            size_t b = BUCKET_OF(slope[i]);
            sum[b] += width[i];
            cnt[b]++;
        }
    double acc = 0;
    size_t B = 0;
    for (; B < K; B++) {
        if (acc + sum[B] >= cap)
            break;
        acc += sum[B];
    }
    if (B == K) /* every width fits (or nearly): the plain selection says */
        return pfi_alloc_select(slope, width, m, cap, above);
    /* the bucket's segments, in their order: copied to the stack when they fit there, else
       moved to the front of the arrays (room for 8 more: the packed copy's last store) */
    double ts[BUCKET_COPY + 8], tw[BUCKET_COPY + 8];
    double *bs = ts, *bw = tw;
    size_t k = 0;
    bool copied;
#if BUCKET_SIMD
    if (simd) {
        k = buckets_copy8(slope, width, m, mx, scale, top, (int64_t)B, ts, tw);
        copied = k <= BUCKET_COPY;
        if (!copied)
            k = 0;
    } else
#endif
    {
        copied = cnt[B] <= BUCKET_COPY;
        if (copied)
            for (size_t i = 0; i < m && k < cnt[B]; i++) {
                size_t b = BUCKET_OF(slope[i]);
                ts[k] = slope[i];
                tw[k] = width[i];
                k += b == B;
            }
    }
    if (!copied) {
        for (size_t i = 0; i < m; i++) {
            size_t b = BUCKET_OF(slope[i]);
            double s = slope[i], w = width[i];
            slope[i] = slope[k];
            width[i] = width[k];
            slope[k] = s;
            width[k] = w;
            k += b == B;
        }
        bs = slope;
        bw = width;
    }
#undef BUCKET_OF
    double in_above;
    double lam = pfi_alloc_select(bs, bw, k, cap - acc, &in_above);
    if (lam == -INFINITY)
        return pfi_alloc_select(slope, width, m, cap, above);
    *above = acc + in_above;
    *kept = bs == ts;
    return lam;
}

/*
 * alloc_pick's walk along one job's curve (m points c, d, t; slopes sl, m - 1 of them) to
 * the threshold lam, and its outputs (pick_copied's and pick_prov's common part): the point
 * where the slope falls under lam, a segment at lam taken while *rem lasts (all of it or
 * part). Returns the job's value (weight wt times tokens/s); writes w->pick[j], w->flag[j]
 * and, with out, the job's row.
 */
/* Job j's row in out at point p of its curve (m points: caps c, drawn power d, tokens/s t; its
   slopes sl, m − 1): the point's values, the slopes either side (NaN past an end), the power
   shed from its top. */
static inline __attribute__((always_inline)) void out_at_point(pfi_alloc_result *out, size_t j,
                                                               const double *c, const double *d,
                                                               const double *t, const double *sl,
                                                               size_t m, size_t p)
{
    out->cap_w[j] = c[p];
    out->power_w[j] = d[p];
    out->tput_tok_s[j] = t[p];
    out->marginal_down[j] = p > 0 ? sl[p - 1] : NAN;
    out->marginal_up[j] = p + 1 < m ? sl[p] : NAN;
    out->shed_w[j] = d[m - 1] - d[p];
}

static inline double pick_walk(const pfi_alloc_workspace *w, size_t j, const double *c,
                               const double *d, const double *t, const double *sl, size_t m,
                               double wt, double lam, double *rem, pfi_alloc_result *out)
{
    size_t p = 0;
    double pw = d[0], val = wt * t[0];
    for (size_t q = 1; q < m; q++) {
        double s = sl[q - 1], wd = d[q] - d[p];
        if (s > lam || (s == lam && *rem > 0 && wd <= *rem)) {
            if (!(s > lam))
                *rem -= wd;
            pw = d[q];
            val = wt * t[q];
            p = q;
            continue;
        }
        if (s == lam && *rem > 0) {
            pw += *rem;
            val += *rem * s;
            *rem = 0;
        }
        break;
    }
    w->pick[j] = pw;
    if (out == NULL) {
        w->flag[j] = 0;
        return val;
    }
    double part = pw - d[p];
    if (part > 0 && p + 1 < m) {
        double f = part / (d[p + 1] - d[p]);
        double cp = c[p] + f * (c[p + 1] - c[p]);
        if (cp > c[p + 1])
            cp = c[p + 1];
        double g = (cp - c[p]) / (c[p + 1] - c[p]);
        out->cap_w[j] = cp;
        out->power_w[j] = d[p] + g * (d[p + 1] - d[p]);
        out->tput_tok_s[j] = t[p] + g * (t[p + 1] - t[p]);
        out->marginal_down[j] = out->marginal_up[j] = sl[p];
        out->shed_w[j] = d[m - 1] - out->power_w[j];
    } else {
        out_at_point(out, j, c, d, t, sl, m, p);
    }
    w->flag[j] = 1;
    return val;
}

/*
 * alloc_pick's walk and outputs for a job whose whole curve the sampled pass copied, every
 * point a vertex (kind KIND_MAT | KIND_COPY), with the slopes it stored (w->cs): the same
 * comparisons and formulas on the same bits, without a division. Returns the job's value
 * (weighted tokens/s); *rem as alloc_pick's.
 */
static inline __attribute__((always_inline)) double pick_copied(const pfi_alloc_workspace *w,
                                                                size_t j, double wt, double lam,
                                                                double *rem, pfi_alloc_result *out)
{
    size_t c0 = w->c0[j], m = w->nc[j];
    const double *c = w->cc + c0, *d = w->cd + c0, *t = w->ct + c0, *sl = w->cs + c0;
    /* the walk below without its branches when no slope equals lam (the pass copied only
       curves whose slopes fall strictly, so the slopes above lam are a prefix and the walk
       stops at its end, taking no part of a segment): the same point, the same outputs */
    size_t v = 0;
    int tie = 0;
    for (size_t q = 0; q + 1 < m; q++) {
        v += sl[q] > lam;
        tie |= sl[q] == lam;
    }
    if (!tie) {
        w->pick[j] = d[v];
        if (out != NULL)
            out_at_point(out, j, c, d, t, sl, m, v);
        w->flag[j] = out != NULL;
        return wt * t[v];
    }
    return pick_walk(w, j, c, d, t, sl, m, wt, lam, rem, out);
}

/*
 * alloc_pick's walk and outputs for a job the sampled pass placed provisionally (kind
 * KIND_PROV: its own curve, every point a vertex, slopes in w->cs, outputs written at point
 * w->nc[j]): nothing rewritten when its point under lam is that one and no slope equals lam
 * (its value then from the throughput written); otherwise pick_copied's comparisons and
 * formulas on the curve as given. Returns the job's value; *rem as alloc_pick's.
 */
static inline __attribute__((always_inline)) double
pick_prov(const alloc_ctx *x, size_t j, double lam, double *rem, pfi_alloc_result *out)
{
    const pfi_alloc_workspace *w = x->w;
    const pfi_alloc_jobs *J = x->J;
    const double *sl = w->cs + w->c0[j];
    double wt = alloc_opt(J->weight, j, 1.0);
    size_t v =
        (size_t)(sl[0] > lam) + (sl[1] > lam) + (sl[2] > lam) + (sl[3] > lam) + (sl[4] > lam);
    int tie = (sl[0] == lam) | (sl[1] == lam) | (sl[2] == lam) | (sl[3] == lam) | (sl[4] == lam);
    if (!tie && v == w->nc[j] && out != NULL) {
        w->flag[j] = 1;
        return wt * out->tput_tok_s[j];
    }
    size_t a = J->offset[j], m = J->offset[j + 1] - a;
    const double *c = J->cap_w + a, *d = J->power_w + a, *t = J->tput_tok_s + a;
    return pick_walk(w, j, c, d, t, sl, m, wt, lam, rem, out);
}

/*
 * alloc_pick's step for one job (the threshold lam, what is left of the budget *rem): its
 * walk to the threshold and, for a copied whole curve, its outputs. Returns its value
 * (weight times tokens/s).
 */
static inline __attribute__((always_inline)) double
pick_job(const alloc_ctx *x, size_t j, bool est, double lam, double *rem, pfi_alloc_result *out)
{
    pfi_alloc_workspace *w = x->w;
    if (!est && w->kind[j] == (KIND_MAT | KIND_COPY))
        return pick_copied(w, j, alloc_opt(x->J->weight, j, 1.0), lam, rem, out);
    if (!est && w->kind[j] == KIND_PROV)
        return pick_prov(x, j, lam, rem, out);
    alloc_view v = alloc_view_of(x, j, est);
    size_t ne = alloc_n_vtx(x, j, est);
    size_t p = alloc_vtx(x, j, est, 0);
    double pw = v.d[p], val = v.wt * v.t[p];
    for (size_t s = 1; s < ne; s++) {
        size_t q = alloc_vtx(x, j, est, s);
        double sl = alloc_slope(&v, p, q), wd = v.d[q] - v.d[p];
        if (sl > lam || (sl == lam && *rem > 0 && wd <= *rem)) {
            if (!(sl > lam))
                *rem -= wd;
            pw = v.d[q];
            val = v.wt * v.t[q];
            p = q;
            continue;
        }
        if (sl == lam && *rem > 0) {
            /* the threshold segment in part; with a cap step the output phase snaps
               this power down to the grid point below it (never the envelope vertex
               below: the grid points between vertices are caps too) */
            pw += *rem;
            val += *rem * sl;
            *rem = 0;
        }
        break;
    }
    w->pick[j] = pw;
    w->flag[j] = 0;
    if (out != NULL && (w->kind[j] & KIND_COPY) && !(w->kind[j] & KIND_ENV)) {
        /* a copied whole curve, every point a vertex: its outputs at once */
        double part = pw - v.d[p];
        size_t m = v.m;
        if (part > 0 && p + 1 < m) {
            double f = part / (v.d[p + 1] - v.d[p]);
            double cp = v.c[p] + f * (v.c[p + 1] - v.c[p]);
            if (cp > v.c[p + 1])
                cp = v.c[p + 1];
            double g = (cp - v.c[p]) / (v.c[p + 1] - v.c[p]);
            out->cap_w[j] = cp;
            out->power_w[j] = v.d[p] + g * (v.d[p + 1] - v.d[p]);
            out->tput_tok_s[j] = v.t[p] + g * (v.t[p + 1] - v.t[p]);
            out->marginal_down[j] = out->marginal_up[j] = alloc_slope(&v, p, p + 1);
        } else {
            out->cap_w[j] = v.c[p];
            out->power_w[j] = v.d[p];
            out->tput_tok_s[j] = v.t[p];
            out->marginal_down[j] = p > 0 ? alloc_slope(&v, p - 1, p) : NAN;
            out->marginal_up[j] = p + 1 < m ? alloc_slope(&v, p, p + 1) : NAN;
        }
        out->shed_w[j] = v.d[m - 1] - out->power_w[j];
        w->flag[j] = 1;
    }
    return val;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PICK_SIMD 1
/* How many of the rewritten jobs ahead pick_listed8 asks for the curve lines of (their
   loads missed the cache: the curves were read long before, by the pass) [ours]. */
#define PICK_PREFETCH 6
/*
 * alloc_pick's steps for the sampled pass's listed jobs (out not NULL, the true curves) where
 * the CPU has AVX-512, in three rounds: (1) eight jobs of kind KIND_PROV a step: each lane's
 * slopes gathered and compared with lam as pick_prov's; a job whose point is unchanged and
 * has no slope at lam gets flag 1 and the value wt · (its throughput written) in w->lval;
 * every other job (moved, a slope at lam, another kind, or not in a full step of eight) goes
 * to w->lmv with its point; (2) those jobs in list order — only a job with a slope at lam or
 * of another kind spends *rem, as in the one-round loop — the curve lines of the jobs a few
 * ahead asked for first (each was a cache miss); (3) the values added in list order. The same
 * outputs, *rem and sum as pick_job over the list in order: the same bits.
 */
__attribute__((target("avx512f,avx512dq"))) static double
pick_listed8(const alloc_ctx *x, const size_t *list, size_t nj, double lam, double *rem,
             pfi_alloc_result *out, bool kept)
{
    pfi_alloc_workspace *w = x->w;
    const pfi_alloc_jobs *J = x->J;
    double *lval = w->lval;
    size_t *lmv = w->lmv, n_mv = 0;
    bool all = true; /* every listed job ends placed (flag 1) */
    const __m512d lm = _mm512_set1_pd(lam);
    const __m512i one = _mm512_set1_epi64(1);
    size_t l = 0;
    if (kept && w->lseg_ok) {
        /* the first round from the segments inside the bracket, still in the pass's order
           (each listed job's one after the other): a job of the pass's blocks keeps its
           provisional point (at prov_lam) unless one of its segments lies between lam and
           prov_lam (the slopes above the bracket are above both, those below it below both)
           or equals lam; its value, flag and outputs are the pass's then. The others to the
           second round. */
        const __m512d lp = _mm512_set1_pd(w->prov_lam);
        const double *bs = w->bs;
        size_t off = 0;
        for (; l < nj; l++) {
            uint32_t e = w->lseg[l];
            if (e & LSEG_OTHER) {
                lmv[n_mv++] = l * 8 + 7;
                off += e & ~LSEG_OTHER;
                continue;
            }
            __mmask8 cm = (__mmask8)((1u << e) - 1);
            __m512d s = _mm512_maskz_loadu_pd(cm, bs + off);
            __mmask8 mv = (__mmask8)((_mm512_mask_cmp_pd_mask(cm, s, lm, _CMP_GT_OQ) ^
                                      _mm512_mask_cmp_pd_mask(cm, s, lp, _CMP_GT_OQ)) |
                                     _mm512_mask_cmp_pd_mask(cm, s, lm, _CMP_EQ_OQ));
            lmv[n_mv] = l * 8 + 7;
            n_mv += mv != 0;
            off += e;
        }
    }
    for (; l + 8 <= nj; l += 8) {
        int prov = 1;
        for (size_t q = 0; q < 8; q++)
            prov &= w->kind[list[l + q]] == KIND_PROV;
        if (!prov) {
            for (size_t q = 0; q < 8; q++)
                lmv[n_mv++] = (l + q) * 8 + 7;
            continue;
        }
        const __m512i jv = _mm512_loadu_si512(list + l);
        const __m512i c0 = _mm512_i64gather_epi64(jv, (const void *)w->c0, 8);
        __m512i v = _mm512_setzero_si512();
        __mmask8 tie = 0;
        for (int i = 0; i < 5; i++) {
            __m512d s = _mm512_i64gather_pd(c0, w->cs + i, 8);
            v = _mm512_mask_add_epi64(v, _mm512_cmp_pd_mask(s, lm, _CMP_GT_OQ), v, one);
            tie |= _mm512_cmp_pd_mask(s, lm, _CMP_EQ_OQ);
        }
        __m512i nc = _mm512_cvtepu32_epi64(_mm512_i64gather_epi32(jv, (const void *)w->nc, 4));
        __mmask8 moved = tie | _mm512_cmpneq_epi64_mask(v, nc);
        __m512d wt = _mm512_set1_pd(1.0);
        if (J->weight != NULL) { /* alloc_opt: the weight unless NaN */
            __m512d g = _mm512_i64gather_pd(jv, J->weight, 8);
            wt = _mm512_mask_mov_pd(wt, _mm512_cmp_pd_mask(g, g, _CMP_ORD_Q), g);
        }
        _mm512_storeu_pd(lval + l, _mm512_mul_pd(wt, _mm512_i64gather_pd(jv, out->tput_tok_s, 8)));
        /* the moved jobs: position·8 + point (a slope at lam: 6, the walk) */
        __m512i code = _mm512_add_epi64(
            _mm512_slli_epi64(_mm512_add_epi64(_mm512_set1_epi64((long long)l),
                                               _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7)),
                              3),
            _mm512_mask_mov_epi64(v, tie, _mm512_set1_epi64(6)));
        _mm512_storeu_si512(lmv + n_mv, _mm512_maskz_compress_epi64(moved, code));
        n_mv += (size_t)__builtin_popcount(moved);
        /* every job of the step ends with its outputs written: now, or by the second round */
        for (size_t q = 0; q < 8; q++)
            w->flag[list[l + q]] = 1;
    }
    for (; l < nj; l++)
        lmv[n_mv++] = l * 8 + 7;
    /* the walk below is not AVX code: leave the upper halves clean before it (GCC puts no
       vzeroupper before a call here; the walk ran at half speed) */
    _mm256_zeroupper();
    for (size_t i = 0; i < n_mv; i++) {
        if (i + PICK_PREFETCH < n_mv) {
            size_t e = lmv[i + PICK_PREFETCH], f = list[e >> 3];
            size_t a = J->offset[f] + ((e & 7) < 6 ? e & 7 : 0), b = J->offset[f + 1] - 1;
            __builtin_prefetch(J->power_w + a);
            __builtin_prefetch(J->cap_w + a);
            __builtin_prefetch(J->tput_tok_s + a);
            __builtin_prefetch(J->power_w + b);
            if ((e & 7) >= 6) { /* the walk: the whole curve */
                __builtin_prefetch(J->cap_w + b);
                __builtin_prefetch(J->tput_tok_s + b);
            }
        }
        size_t e = lmv[i], l2 = e >> 3, p = e & 7, j = list[l2];
        if (p == 7 && w->kind[j] == KIND_PROV) {
            /* its point and ties from its slopes, as the first round's steps of eight */
            const double *sl = w->cs + w->c0[j];
            size_t v = (size_t)(sl[0] > lam) + (sl[1] > lam) + (sl[2] > lam) + (sl[3] > lam) +
                       (sl[4] > lam);
            int tie =
                (sl[0] == lam) | (sl[1] == lam) | (sl[2] == lam) | (sl[3] == lam) | (sl[4] == lam);
            p = tie ? 6 : v;
        }
        if (p == 7) {
            lval[l2] = pick_job(x, j, false, lam, rem, out);
            all &= w->flag[j] != 0;
        } else if (p == 6) {
            size_t a = J->offset[j], m = J->offset[j + 1] - a;
            lval[l2] = pick_walk(w, j, J->cap_w + a, J->power_w + a, J->tput_tok_s + a,
                                 w->cs + w->c0[j], m, alloc_opt(J->weight, j, 1.0), lam, rem, out);
        } else {
            /* pick_walk without a slope at lam (pick_copied's short cut): the point is the
               count of slopes above lam, no part of a segment taken */
            size_t a = J->offset[j], m = J->offset[j + 1] - a;
            const double *c = J->cap_w + a, *d = J->power_w + a, *t = J->tput_tok_s + a,
                         *sl = w->cs + w->c0[j];
            w->pick[j] = d[p];
            out_at_point(out, j, c, d, t, sl, m, p);
            w->flag[j] = 1;
            lval[l2] = alloc_opt(J->weight, j, 1.0) * t[p];
        }
    }
    double sum = 0;
    if (!all) {
        for (size_t i = 0; i < nj; i++)
            sum += lval[i];
        return sum;
    }
    /* every listed job placed: alloc_output_jobs' totals over them too, in the same loop
       (four chains of additions side by side, not two loops one after the other; the same
       order and operands as alloc_output_jobs') */
    double tp = w->tot_in[0], tt = w->tot_in[1], obj = w->tot_in[2];
    const double *wts = J->weight;
    for (size_t i = 0; i < nj; i++) {
        size_t j = list[i];
        double pw = out->power_w[j], tk = out->tput_tok_s[j];
        sum += lval[i];
        tp += pw;
        tt += tk;
        obj += (wts != NULL ? alloc_opt(wts, j, 1.0) : 1.0) * tk;
    }
    w->tot[0] = tp;
    w->tot[1] = tt;
    w->tot[2] = obj;
    w->tot_ok = true;
    return sum;
}
#else
#define PICK_SIMD 0
#endif

double alloc_pick(const alloc_ctx *x, bool est, double cap, double above_hi, const size_t *list,
                  size_t n_list, pfi_alloc_result *out, double *lambda)
{
    pfi_alloc_workspace *w = x->w;
    double above = 0;
    /* the sampled pass's segments inside its bracket (list): by buckets, the others (every
       segment, or the estimated world's) by pfi_alloc_select alone */
    bool kept = false;
    double lam =
        list != NULL && !est
            ? alloc_select_buckets(w->bs, w->bw, w->n_b, cap - above_hi, &above, !w->no_simd, &kept)
            : pfi_alloc_select(w->bs, w->bw, w->n_b, cap - above_hi, &above);
    double rem = cap - above_hi - above;
    double value = 0;
    size_t nj = list != NULL ? n_list : x->J->n;
    *lambda = lam;
    w->tot_ok = false;
#if PICK_SIMD
    __builtin_cpu_init();
    if (list != NULL && out != NULL && !est && !w->no_simd && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512dq"))
        return pick_listed8(x, list, nj, lam, &rem, out, kept);
#endif
    for (size_t l = 0; l < nj; l++)
        value += pick_job(x, list != NULL ? list[l] : l, est, lam, &rem, out);
    return value;
}
