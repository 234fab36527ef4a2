/*
 * The oracle's pass for large instances (>= SAMPLE_MIN_JOBS jobs, no cap step; a job with a
 * cap bound or a floor takes the general path inside it): a bracket for the threshold slope guessed
 * from a sample of the jobs, then one pass that validates every curve, places at once each job with
 * no segment inside the bracket and hands only the segments inside it to the selection. The caller
 * checks the guess (alloc_bracket_holds) and redoes the selection with every segment when it
 * missed, so the result never depends on the sample.
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pfi/allocate.h"
#include "pfi/curve.h"
#include "power/alloc_internal.h"

/* The oracle guesses the threshold's bracket from this many jobs when it has at least
   SAMPLE_MIN_JOBS (plain instances only), ± SAMPLE_MARGIN of the sample's width [ours]. */
#define SAMPLE_JOBS 16384
#define SAMPLE_MORE_JOBS 16384
#define SAMPLE_MIN_JOBS                                                                            \
    2048 /* was 32768: below it every segment went to the selection, at 3x                         \
            the per-job cost (issue 18 item 8); 2048 jobs: a 64-job sample */
#define SAMPLE_MARGIN 0.015
#define SAMPLE_BLOCK 64
/* Most points of a curve the oracle's large-instance pass handles in place. */
#define FAST_MAX_POINTS 16
/* The point count that pass (and the sample) handles fully unrolled: the usual cap sweep
   (scan_k is written out for it). */
#define FAST_K 6
/* The pass asks for the curves of the job this many ahead: the first use of each job's loads
   was its main stall (perf); 8, 16 and 32 measured, 32 best (100 000 jobs -4 %, 1 M -7 %). */
#define PREFETCH_JOBS 32
/* Up to this many jobs the pass places a job with segments inside the bracket at once, against
   the middle of the bracket, and keeps only its slopes (fast_prov); above, its curve is copied
   (fast_defer), as the curves are no longer in cache when alloc_pick moves the job. The AVX-512
   pass places provisionally at any size: alloc_pick then checks eight such jobs a step and
   rewrites only the few that moved (1 M jobs: 44-46 -> 43-45 ms against the copies). */
#define PROV_MAX_JOBS 131072

/* ---- the sample ----------------------------------------------------------------------- */

/* Two doubles in one register (SSE2 on x86-64, NEON on AArch64; GCC's and Clang's vector
   extension, lowered to scalar code elsewhere): scan_k takes a curve's segments two at a
   time. Each lane does the scalar expression's IEEE operations, so the bits are the same. */
typedef double alloc_v2d __attribute__((vector_size(16)));
typedef int64_t alloc_v2i __attribute__((vector_size(16))); /* a comparison's lane masks */

static inline alloc_v2d v2_load(const double *p)
{
    alloc_v2d v;
    memcpy(&v, p, sizeof v);
    return v;
}

/*
 * One curve of FAST_K points, two segments a step: whether it passes pfi_curve_check without
 * violations (caps rising, power and throughput not falling; with the ends checked every
 * value is finite, and NaN fails every comparison) and every point is a vertex of its
 * envelope (power rising, slopes falling), in which case sv and wd hold its segments' slopes
 * (the bits of slope_of: (wt·T[i+1] − wt·T[i]) / (D[i+1] − D[i]), lane by lane) and widths.
 * Segments (0, 1), (2, 3) and (4, –): the last pair's second lane is (x5 − x5), a dummy that
 * the checks leave out. "Power not falling" is implied by the width > 0 test. Branch-free.
 */
static inline int scan_k(const double *c, const double *D, const double *T, double wt,
                         double sv[FAST_K - 1], double wd[FAST_K - 1])
{
    const alloc_v2d w2 = {wt, wt}, zero = {0, 0};
    alloc_v2d c01 = v2_load(c), c12 = v2_load(c + 1), c23 = v2_load(c + 2), c34 = v2_load(c + 3),
              c45 = v2_load(c + 4);
    alloc_v2d d01 = v2_load(D), d12 = v2_load(D + 1), d23 = v2_load(D + 2), d34 = v2_load(D + 3),
              d45 = v2_load(D + 4);
    alloc_v2d t01 = v2_load(T), t12 = v2_load(T + 1), t23 = v2_load(T + 2), t34 = v2_load(T + 3),
              t45 = v2_load(T + 4);
    alloc_v2d c55 = {c45[1], c45[1]}, d55 = {d45[1], d45[1]}, t55 = {t45[1], t45[1]};
    alloc_v2d wa = d12 - d01, wb = d34 - d23, wc = d55 - d45;
    alloc_v2d sa = (w2 * t12 - w2 * t01) / wa, sb = (w2 * t34 - w2 * t23) / wb,
              sc = (w2 * t55 - w2 * t45) / wc;
    /* lane masks (all ones: true); the dummy lane of the third pair forced true */
    const alloc_v2i dummy = {0, -1};
    alloc_v2i m = (c12 > c01) & (wa > zero) & (t12 >= t01) & (c34 > c23) & (wb > zero) &
                  (t34 >= t23) & (((c55 > c45) & (wc > zero)) | dummy) & (t55 >= t45);
    /* slopes falling: (s1, s2) < (s0, s1) and (s3, s4) < (s2, s3) */
    alloc_v2d s12 = {sa[1], sb[0]}, s34 = {sb[1], sc[0]};
    m &= (s12 < sa) & (s34 < sb);
    memcpy(sv, &sa, sizeof sa);
    memcpy(sv + 2, &sb, sizeof sb);
    sv[4] = sc[0];
    memcpy(wd, &wa, sizeof wa);
    memcpy(wd + 2, &wb, sizeof wb);
    wd[4] = wc[0];
    return (m[0] & m[1] & 1) & (c[0] > 0) & (c[FAST_K - 1] < INFINITY) & (D[0] > 0) &
           (D[FAST_K - 1] < INFINITY) & (T[0] >= 0) & (T[FAST_K - 1] < INFINITY);
}

/* The sample's running totals (sample_bracket). */
typedef struct sample {
    double ref, base, total; /* Σ reference power, Σ lowest power, Σ envelope width */
    double above;            /* width of segments above the stage's bracket */
    size_t got;              /* jobs sampled */
} sample;

/* Sample job j (the true curve, no bounds): its envelope segments with slope in [lo, hi] go
   to the buffer, the width above hi to s->above. A job that fails the checks is skipped (the
   main pass reports it). */
static inline void sample_job(pfi_alloc_workspace *w, const pfi_alloc_jobs *J, size_t j, double hi,
                              double lo, sample *s)
{
    size_t a = J->offset[j], k = J->offset[j + 1] - a;
    if (k == 0 || k > ALLOC_MAX_CANDIDATES_PER_JOB)
        return;
    double wt = alloc_opt(J->weight, j, 1.0);
    if (!(wt >= 0) || !isfinite(wt) || !alloc_ws_buf(w, k) || !alloc_ws_scratch(w, k))
        return;
    const double *D = J->power_w + a, *T = J->tput_tok_s + a;
    double sv[FAST_K - 1], wd[FAST_K - 1];
    size_t ne;
    if (k == FAST_K && scan_k(J->cap_w + a, D, T, wt, sv, wd)) {
        /* the loop below without a branch on the data: every segment written to the buffer,
           its count advanced by the test; a width not above hi adds +0 to s->above (a sum of
           widths >= +0 keeps its bits) */
        size_t nb = w->n_b;
        double total = s->total, above = s->above;
        for (size_t q = 0; q + 1 < FAST_K; q++) {
            total += wd[q];
            bool up = sv[q] > hi, in = !up && sv[q] >= lo;
            above += up ? wd[q] : 0.0;
            w->bs[nb] = sv[q];
            w->bw[nb] = wd[q];
            nb += in;
        }
        w->n_b = nb;
        s->total = total;
        s->above = above;
        s->ref += D[FAST_K - 1];
        s->base += D[0];
        s->got++;
        return;
    } else {
        pfi_curve_report rep;
        if (pfi_curve_check(k, J->cap_w + a, D, T, &rep) != PFI_OK || rep.power_violations ||
            rep.tput_violations)
            return;
        for (size_t q = 0; q < k; q++)
            w->y[q] = wt * T[q];
        ne = pfi_envelope(D, w->y, k, w->idx);
        for (size_t q = 1; q < ne; q++) {
            size_t p = w->idx[q - 1], r = w->idx[q];
            sv[0] = (w->y[r] - w->y[p]) / (D[r] - D[p]);
            wd[0] = D[r] - D[p];
            s->total += wd[0];
            if (sv[0] > hi) {
                s->above += wd[0];
            } else if (sv[0] >= lo) {
                w->bs[w->n_b] = sv[0];
                w->bw[w->n_b++] = wd[0];
            }
        }
        ne = 0;
    }
    for (size_t q = 0; q + 1 < ne; q++) {
        s->total += wd[q];
        if (sv[q] > hi) {
            s->above += wd[q];
        } else if (sv[q] >= lo) {
            w->bs[w->n_b] = sv[q];
            w->bw[w->n_b++] = wd[q];
        }
    }
    s->ref += D[k - 1];
    s->base += D[w->idx[0]];
    s->got++;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SAMPLE_SIMD 1
/*
 * sample_job for jobs j .. j + 7 (FAST_K points each, one after the other in the arrays) where
 * the CPU has AVX-512: point i of the eight curves gathered into one register, each lane doing
 * scan_k's IEEE operations and checks (and sample_job's on the weight); then, job by job in job
 * order, the loop of sample_job's FAST_K-point path on the lanes' slopes and widths (the same
 * sums in the same order: the same bits). A job that fails a check takes sample_job in its turn.
 */
__attribute__((target("avx512f,avx512dq"))) static void sample_block8(pfi_alloc_workspace *w,
                                                                      const pfi_alloc_jobs *J,
                                                                      size_t j, double hi,
                                                                      double lo, sample *s)
{
    enum { M = FAST_K - 1, B = 8 };
    if (!alloc_ws_buf(w, M * B) || !alloc_ws_scratch(w, FAST_K)) {
        for (size_t q = 0; q < B; q++)
            sample_job(w, J, j + q, hi, lo, s);
        return;
    }
    size_t a = J->offset[j];
    const __m512i at = _mm512_setr_epi64(0, 6, 12, 18, 24, 30, 36, 42);
    const __m512d zero = _mm512_setzero_pd(), inf = _mm512_set1_pd(INFINITY);
    __m512d C[FAST_K], P[FAST_K], T[FAST_K], SL[M], WD[M];
#pragma GCC unroll 8
    for (int i = 0; i < FAST_K; i++) {
        C[i] = _mm512_i64gather_pd(at, J->cap_w + a + i, 8);
        P[i] = _mm512_i64gather_pd(at, J->power_w + a + i, 8);
        T[i] = _mm512_i64gather_pd(at, J->tput_tok_s + a + i, 8);
    }
    __m512d W = _mm512_set1_pd(1.0);
    if (J->weight != NULL) { /* alloc_opt: the weight unless NaN */
        __m512d v = _mm512_loadu_pd(J->weight + j);
        W = _mm512_mask_mov_pd(W, _mm512_cmp_pd_mask(v, v, _CMP_ORD_Q), v);
    }
    /* sample_job's weight test, then scan_k's (every comparison false on NaN, as C's) */
    __mmask8 ok =
        _mm512_cmp_pd_mask(W, zero, _CMP_GE_OQ) & _mm512_cmp_pd_mask(W, inf, _CMP_LT_OQ) &
        _mm512_cmp_pd_mask(C[0], zero, _CMP_GT_OQ) & _mm512_cmp_pd_mask(C[M], inf, _CMP_LT_OQ) &
        _mm512_cmp_pd_mask(P[0], zero, _CMP_GT_OQ) & _mm512_cmp_pd_mask(P[M], inf, _CMP_LT_OQ) &
        _mm512_cmp_pd_mask(T[0], zero, _CMP_GE_OQ) & _mm512_cmp_pd_mask(T[M], inf, _CMP_LT_OQ);
#pragma GCC unroll 8
    for (int i = 0; i < M; i++) {
        WD[i] = _mm512_sub_pd(P[i + 1], P[i]);
        SL[i] =
            _mm512_div_pd(_mm512_sub_pd(_mm512_mul_pd(W, T[i + 1]), _mm512_mul_pd(W, T[i])), WD[i]);
        ok &= _mm512_cmp_pd_mask(C[i + 1], C[i], _CMP_GT_OQ) &
              _mm512_cmp_pd_mask(WD[i], zero, _CMP_GT_OQ) &
              _mm512_cmp_pd_mask(T[i + 1], T[i], _CMP_GE_OQ);
        if (i > 0)
            ok &= _mm512_cmp_pd_mask(SL[i], SL[i - 1], _CMP_LT_OQ);
    }
    double l_sl[M][B], l_wd[M][B], l_d0[B], l_dm[B];
#pragma GCC unroll 8
    for (int i = 0; i < M; i++) {
        _mm512_storeu_pd(l_sl[i], SL[i]);
        _mm512_storeu_pd(l_wd[i], WD[i]);
    }
    _mm512_storeu_pd(l_d0, P[0]);
    _mm512_storeu_pd(l_dm, P[M]);
    /* the scalar code from here: leave the upper halves clean for sample_job */
    _mm256_zeroupper();
    sample t = *s;
    for (size_t q = 0; q < B; q++) {
        if (!((ok >> q) & 1)) {
            sample_job(w, J, j + q, hi, lo, &t);
            continue;
        }
        size_t nb = w->n_b;
        double *bs = w->bs, *bw = w->bw;
        for (int i = 0; i < M; i++) {
            double sv = l_sl[i][q], wd = l_wd[i][q];
            t.total += wd;
            bool up = sv > hi, in = !up && sv >= lo;
            t.above += up ? wd : 0.0;
            bs[nb] = sv;
            bw[nb] = wd;
            nb += in;
        }
        w->n_b = nb;
        t.ref += l_dm[q];
        t.base += l_d0[q];
        t.got++;
    }
    *s = t;
}
#else
#define SAMPLE_SIMD 0
#endif

/* Sample S jobs in blocks of SAMPLE_BLOCK consecutive jobs (read in sequence), evenly spaced
   from job first_frac·n/blocks on; simd: eight FAST_K-point jobs a step where they follow each
   other (sample_block8; the same bits). */
static void sample_blocks(const alloc_ctx *x, size_t S, double first_frac, double hi, double lo,
                          sample *s, bool simd)
{
    const pfi_alloc_jobs *J = x->J;
    size_t n = J->n, nblk = (S + SAMPLE_BLOCK - 1) / SAMPLE_BLOCK;
    const size_t *off = J->offset;
    sample t = *s; /* in a local: the buffer's stores cannot reach it (they could reach *s) */
    for (size_t blk = 0; blk < nblk; blk++) {
        size_t j0 = (size_t)(((double)blk + first_frac) * (double)n / (double)nblk);
        size_t r_end =
            S - blk * SAMPLE_BLOCK < SAMPLE_BLOCK ? S - blk * SAMPLE_BLOCK : SAMPLE_BLOCK;
        for (size_t r = 0; r < r_end;) {
            size_t j = j0 + r;
#if SAMPLE_SIMD
            if (simd && r + 8 <= r_end && j + 8 <= n) {
                int seq = 1;
                for (size_t q = 0; q < 8; q++)
                    seq &= off[j + q + 1] - off[j + q] == FAST_K;
                if (seq) {
                    sample_block8(x->w, J, j, hi, lo, &t);
                    r += 8;
                    continue;
                }
            }
#else
            (void)simd;
            (void)off;
#endif
            if (j < n)
                sample_job(x->w, J, j, hi, lo, &t);
            r++;
        }
    }
    *s = t;
}

/* The cut-off slope of the buffer (above: the width already above it) for capacity cap,
   clamped to [lo, hi], the range the buffer covers; all_in: cap - above >= the buffer's
   widths summed in order (sample_fits). */
static double sample_cut(pfi_alloc_workspace *w, double cap, double above, bool all_in, double hi,
                         double lo)
{
    double dummy;
    bool kept;
    if (cap <= above)
        return hi;
    if (all_in)
        return lo;
    return alloc_select_buckets(w->bs, w->bw, w->n_b, cap - above, &dummy, !w->no_simd, &kept);
}

/*
 * A bracket [*lo, *hi] for the threshold slope from a systematic sample of jobs (evenly
 * spaced blocks of consecutive jobs; the true curves, no bounds), in two stages: SAMPLE_JOBS
 * jobs give a wide bracket (the sample's cut-off ± SAMPLE_MARGIN of its width); then
 * SAMPLE_MORE_JOBS more, of which only the segments inside the wide bracket are kept, narrow
 * it (the margin shrinks as 1/√jobs) at the cost of a small selection. Only a guess: the
 * caller checks that the threshold lies inside and falls back to every segment if not.
 * Returns false (no bracket) when the sample holds no usable job.
 */
static bool sample_bracket(const alloc_ctx *x, double *hi, double *lo)
{
    const pfi_alloc_jobs *J = x->J;
    pfi_alloc_workspace *w = x->w;
    size_t n = J->n, S = n / 32 < SAMPLE_JOBS ? n / 32 : SAMPLE_JOBS;
    size_t S2 = S < SAMPLE_MORE_JOBS ? S : SAMPLE_MORE_JOBS;
    *hi = INFINITY;
    *lo = -INFINITY;
    w->n_b = 0;
    w->guess_in = 0;
    sample s;
    memset(&s, 0, sizeof s);
    bool simd = !w->no_simd;
#if SAMPLE_SIMD
    __builtin_cpu_init();
    simd = simd && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#endif
    sample_blocks(x, S, 0.0, INFINITY, -INFINITY, &s, simd);
    if (s.got == 0 || !(s.total > 0)) {
        w->n_b = 0;
        return false;
    }
    for (int stage = 0; stage < 2; stage++) {
        double budget = isnan(x->o->budget_w) ? (1.0 - x->o->reduction) * s.ref
                                              : x->o->budget_w * (double)s.got / (double)n;
        /* the margin: SAMPLE_MARGIN at SAMPLE_JOBS, narrower for a larger sample (1/√S) */
        double eps = SAMPLE_MARGIN * sqrt((double)SAMPLE_JOBS / (double)s.got) * s.total;
        double cap = budget - s.base;
        /* whether cap ∓ eps - s.above reaches the buffer's widths summed in order: from eight
           partial sums and their error bound where it settles it (alloc_sum_above), else
           from the sum in order, taken before a selection moves the buffer */
        double err, t = alloc_sum8(w->bw, w->n_b, &err), inside = NAN;
        bool all_in[2];
        for (int c = 0; c < 2; c++) {
            double room = (c == 0 ? cap - eps : cap + eps) - s.above;
            int over = alloc_sum_above(0.0, t, err, room);
            if (over < 0 && isnan(inside))
                inside = alloc_sum_seq(w->bw, w->n_b);
            all_in[c] = over < 0 ? room >= inside : over == 0;
        }
        double h =
            cap - eps > 0 ? sample_cut(w, cap - eps, s.above, all_in[0], *hi, *lo) : INFINITY;
        double l = cap + eps < s.total ? sample_cut(w, cap + eps, s.above, all_in[1], *hi, *lo)
                                       : -INFINITY;
        if (!(l <= h)) /* cannot happen; keep the bracket sound anyway */
            break;
        *hi = h;
        *lo = l;
        /* how many segments of all the jobs will lie inside: the pass's buffers are sized
           for them at once (grown by doubling, each copy touched fresh memory) */
        size_t in = 0;
        for (size_t i = 0; i < w->n_b; i++)
            in += (size_t)(w->bs[i] <= h) & (size_t)(w->bs[i] >= l); /* no branch on the data */
        w->guess_in = (size_t)((double)in * (double)n / (double)s.got);
        if (stage == 1 || S2 == 0)
            break;
        /* keep the stage's segments inside the bracket, then sample more between its blocks */
        /* without a branch on the data: each pair written at m, m advanced when it is kept; a
           width not above h adds +0 to s.above (a sum of widths >= +0 keeps its bits) */
        size_t m = 0;
        for (size_t i = 0; i < w->n_b; i++) {
            double sv = w->bs[i], wd = w->bw[i];
            bool up = sv > h;
            s.above += up ? wd : 0.0;
            w->bs[m] = sv;
            w->bw[m] = wd;
            m += (size_t)!up & (size_t)(sv >= l);
        }
        w->n_b = m;
        sample_blocks(x, S2, 0.5, h, l, &s, simd);
    }
    w->n_b = 0;
    return true;
}

bool alloc_oracle_bracket(const alloc_ctx *x, double *hi, double *lo)
{
    const pfi_alloc_jobs *J = x->J;
    *hi = INFINITY;
    *lo = -INFINITY;
    return J->n >= SAMPLE_MIN_JOBS && !x->discrete && sample_bracket(x, hi, lo);
}

/* ---- the one pass --------------------------------------------------------------------- */

/*
 * The pass's running state: a local of alloc_fast_pass that the compiler splits into scalars,
 * because its address reaches only the inline phases below (never a call that is not
 * inlined) and it is set by an initialiser, not memset. Otherwise (gcc 12 does not split a
 * memset struct) its fields stay in memory, where the loop's byte and double stores could
 * alias them, and get paired into vector adds: 3 % more instructions at 100 000 jobs.
 */
typedef struct fast_acc {
    size_t n_b, n_list, below; /* segments in the buffer, jobs listed, segments below */
    size_t n_b_listed;         /* segments in the buffer at the last job listed */
    /* as alloc_sums; one after the other, in this order (fast_block8 adds to them as one
       register) */
    double ref_p, ref_t, lo_p, hi_p, above, value, tp, tt;
} fast_acc;

/* The arrays the pass reads and writes, in a local for the same reason (reloaded from the
   instance and the result at every job otherwise). */
typedef struct fast_io {
    const size_t *off;
    const double *cap, *pow_w, *tput, *wts;
    double *o_cap, *o_pw, *o_tp, *o_shed, *o_down, *o_up;
    unsigned char *kind, *flag;
    size_t *list;
    uint32_t *lseg;
    double *lval;
    bool prov;  /* small instance: deferred jobs placed provisionally (fast_prov) */
    double lam; /* the slope they are placed against */
} fast_io;

/* Job j listed for after the selection, not as one of fast_block8's provisional jobs: its
   segments added to the buffer since the last job listed, marked LSEG_OTHER. */
static inline void fast_list(const fast_io *io, fast_acc *acc, size_t j)
{
    io->lseg[acc->n_list] = (uint32_t)(acc->n_b - acc->n_b_listed) | LSEG_OTHER;
    acc->n_b_listed = acc->n_b;
    io->list[acc->n_list++] = j;
}

/* A concave curve of k points (its own envelope) in the totals. */
static inline void fast_add_curve(fast_acc *acc, const double *D, const double *T, size_t k)
{
    acc->ref_p += D[k - 1];
    acc->ref_t += T[k - 1];
    acc->lo_p += D[0];
    acc->hi_p += D[k - 1];
}

/* Job j placed at once at its point v (sl: its k - 1 segment slopes): outputs and sums. */
static inline void fast_place(const fast_io *io, fast_acc *acc, size_t j, const double *c,
                              const double *D, const double *T, size_t k, size_t v,
                              const double *sl, double wt)
{
    io->o_cap[j] = c[v];
    io->o_pw[j] = D[v];
    io->o_tp[j] = T[v];
    io->o_shed[j] = D[k - 1] - D[v];
    io->o_down[j] = v > 0 ? sl[v - 1] : NAN;
    io->o_up[j] = v + 1 < k ? sl[v] : NAN;
    acc->value += wt * T[v];
    acc->tp += D[v];
    acc->tt += T[v];
}

/* Job j decided after the selection: its k points and k - 1 segment slopes sl copied next to
   each other now, while they are in cache, so that the later passes read them in sequence and
   divide no more (room made by the caller). */
static inline void fast_defer(pfi_alloc_workspace *w, const fast_io *io, fast_acc *acc, size_t j,
                              const double *c, const double *D, const double *T, size_t k,
                              const double *sl)
{
    size_t c0 = w->n_c;
    memcpy(w->cc + c0, c, k * sizeof *c);
    memcpy(w->cd + c0, D, k * sizeof *D);
    memcpy(w->ct + c0, T, k * sizeof *T);
    memcpy(w->cs + c0, sl, (k - 1) * sizeof *sl);
    w->n_c += k;
    w->c0[j] = c0;
    w->nc[j] = (uint32_t)k;
    io->kind[j] = KIND_MAT | KIND_COPY;
    fast_list(io, acc, j);
}

/*
 * Job j of FAST_K points with segments inside the bracket, in an instance small enough that
 * its curves stay in cache (PROV_MAX_JOBS): instead of its curve copied (fast_defer), its
 * slopes kept (w->cs) and the job placed now against io->lam (its outputs, not its sums:
 * alloc_output_jobs sums the listed jobs). alloc_pick rewrites the outputs of those whose point
 * differs under the threshold; the others are what it would have written.
 */
static inline void fast_prov(pfi_alloc_workspace *w, const fast_io *io, fast_acc *acc, size_t j,
                             const double *c, const double *D, const double *T, const double *sv)
{
    double lam = io->lam;
    size_t c0 = w->n_c, v = (size_t)(sv[0] > lam) + (sv[1] > lam) + (sv[2] > lam) + (sv[3] > lam) +
                            (sv[4] > lam);
    memcpy(w->cs + c0, sv, (FAST_K - 1) * sizeof *sv);
    w->n_c += FAST_K;
    w->c0[j] = c0;
    w->nc[j] = (uint32_t)v;
    io->o_cap[j] = c[v];
    io->o_pw[j] = D[v];
    io->o_tp[j] = T[v];
    io->o_shed[j] = D[FAST_K - 1] - D[v];
    io->o_down[j] = v > 0 ? sv[v - 1] : NAN;
    io->o_up[j] = v + 1 < FAST_K ? sv[v] : NAN;
    io->kind[j] = KIND_PROV;
    fast_list(io, acc, j);
}

/*
 * Job j of FAST_K points that passed scan_k (slopes sv, widths wd, each followed by FAST_K - 1
 * zeros): its segments above the bracket are a prefix (slopes falling), those inside follow.
 * PFI_ERR_NOMEM.
 */
static inline __attribute__((always_inline)) pfi_error
fast_job_k(pfi_alloc_workspace *w, const fast_io *io, fast_acc *acc, size_t j, const double *c,
           const double *D, const double *T, double wt, const double sv[2 * (FAST_K - 1)],
           const double wd[2 * (FAST_K - 1)], double b_hi, double b_lo)
{
    size_t up =
        (size_t)(sv[0] > b_hi) + (sv[1] > b_hi) + (sv[2] > b_hi) + (sv[3] > b_hi) + (sv[4] > b_hi);
    size_t ge = (size_t)(sv[0] >= b_lo) + (sv[1] >= b_lo) + (sv[2] >= b_lo) + (sv[3] >= b_lo) +
                (sv[4] >= b_lo);
    double ab = (sv[0] > b_hi ? wd[0] : 0.0) + (sv[1] > b_hi ? wd[1] : 0.0) +
                (sv[2] > b_hi ? wd[2] : 0.0) + (sv[3] > b_hi ? wd[3] : 0.0) +
                (sv[4] > b_hi ? wd[4] : 0.0);
    io->kind[j] = 0;
    fast_add_curve(acc, D, T, FAST_K);
    acc->above += ab;
    acc->below += FAST_K - 1 - ge;
    if (ge > up) {
        w->n_b = acc->n_b;
        if (!alloc_ws_buf(w, FAST_K) || !alloc_ws_cand(w, FAST_K))
            return PFI_ERR_NOMEM;
        /* the segments inside, sv[up, ge): FAST_K - 1 values copied from sv + up whatever
           their count (the arrays run on by FAST_K - 1 zeros: see alloc_fast_pass; room for
           FAST_K made above), the count added. A loop of ge - up steps became two calls of
           memcpy of that length (6 % of the time at 10 000 jobs). */
        memcpy(w->bs + acc->n_b, sv + up, (FAST_K - 1) * sizeof *sv);
        memcpy(w->bw + acc->n_b, wd + up, (FAST_K - 1) * sizeof *wd);
        acc->n_b += ge - up;
        if (io->prov)
            fast_prov(w, io, acc, j, c, D, T, sv);
        else
            fast_defer(w, io, acc, j, c, D, T, FAST_K, sv);
        return PFI_OK;
    }
    fast_place(io, acc, j, c, D, T, FAST_K, up, sv, wt);
    return PFI_OK;
}

/* What fast_sweep found of a curve against the bracket. */
typedef struct fast_sweep_out {
    size_t v;       /* the point at the end of the leading segments above the bracket */
    size_t n_in;    /* segments inside the bracket (in bs/bw) */
    size_t n_above; /* segments above it */
    double ab;      /* their width */
} fast_sweep_out;

/*
 * In one branch-free sweep over a curve of k points (2..FAST_MAX_POINTS): pfi_curve_check
 * without violations (caps rising, power and throughput not falling; with the ends checked
 * that makes every value finite, and NaN fails every comparison), the slopes sl[k - 1],
 * whether every point is a vertex of the envelope (power rising, slopes falling), and each
 * segment against the bracket: above (taken whatever the threshold), inside (to bs/bw, room
 * for k - 1 made by the caller), below. True when the curve passes and is its own envelope.
 */
static inline bool fast_sweep(const double *c, const double *D, const double *T, size_t k,
                              double wt, double b_hi, double b_lo, double *bs, double *bw,
                              double *sl, fast_sweep_out *s)
{
    int ok = k >= 2 && k <= FAST_MAX_POINTS, identity = 1;
    size_t v = 0, n_in = 0, n_above = 0, taking = 1;
    double ab = 0, prev = INFINITY;
    if (ok) {
        ok = (c[0] > 0) & (c[k - 1] < INFINITY) & (D[0] > 0) & (D[k - 1] < INFINITY) & (T[0] >= 0) &
             (T[k - 1] < INFINITY);
        for (size_t i = 1; i < k; i++) {
            double wd = D[i] - D[i - 1];
            double sv = (wt * T[i] - wt * T[i - 1]) / wd;
            ok &= (c[i] > c[i - 1]) & (D[i] >= D[i - 1]) & (T[i] >= T[i - 1]);
            identity &= (wd > 0) & (sv < prev);
            prev = sv;
            sl[i - 1] = sv;
            size_t up = sv > b_hi, in = (size_t)(sv >= b_lo) & (size_t)(sv <= b_hi);
            ab += up ? wd : 0.0;
            n_above += up;
            taking &= up;
            v += taking;
            bs[n_in] = sv;
            bw[n_in] = wd;
            n_in += in;
        }
    }
    s->v = v;
    s->n_in = n_in;
    s->n_above = n_above;
    s->ab = ab;
    return ok && identity;
}

/*
 * Job j on the general path (a curve that is not concave, or fails the check: then
 * alloc_job_prepare says why), with the state it shares written back around it; listed for
 * after the selection. Errors: as alloc_job_prepare.
 */
static inline pfi_error fast_general(const alloc_ctx *x, const fast_io *io, fast_acc *acc, size_t j,
                                     double b_hi, double b_lo, alloc_sums *S, pfi_diag *d)
{
    pfi_alloc_workspace *w = x->w;
    /* the totals alloc_job_classify adds to, in locals: acc's address stays here */
    double above = acc->above;
    size_t below = acc->below;
    w->n_b = acc->n_b;
    w->n_list = acc->n_list;
    pfi_error e = alloc_job_prepare(x, j, &S->unmet, d);
    if (e == PFI_OK)
        e = alloc_job_classify(x, j, false, b_hi, b_lo, &above, &below);
    acc->above = above;
    acc->below = below;
    if (e != PFI_OK)
        return e;
    alloc_view vw = alloc_true_view(x, j);
    size_t b = io->off[j + 1];
    acc->ref_p += io->pow_w[b - 1];
    acc->ref_t += io->tput[b - 1];
    acc->lo_p += vw.d[0];
    acc->hi_p += vw.d[vw.m - 1];
    acc->n_b = w->n_b;
    fast_list(io, acc, j);
    return PFI_OK;
}

/* Job j of any other curve: the sweep, then placed, deferred or the general path. */
static inline __attribute__((always_inline)) pfi_error
fast_job_any(const alloc_ctx *x, const fast_io *io, fast_acc *acc, size_t j, const double *c,
             const double *D, const double *T, size_t k, double wt, double b_hi, double b_lo,
             alloc_sums *S, pfi_diag *d)
{
    pfi_alloc_workspace *w = x->w;
    double sl[FAST_MAX_POINTS];
    if (k >= 2 && k <= FAST_MAX_POINTS && acc->n_b + k > w->cap_b) {
        w->n_b = acc->n_b;
        if (!alloc_ws_buf(w, k))
            return PFI_ERR_NOMEM;
    }
    fast_sweep_out s;
    if (!fast_sweep(c, D, T, k, wt, b_hi, b_lo, w->bs + acc->n_b, w->bw + acc->n_b, sl, &s))
        return fast_general(x, io, acc, j, b_hi, b_lo, S, d);
    io->kind[j] = 0;
    fast_add_curve(acc, D, T, k);
    acc->above += s.ab;
    acc->below += k - 1 - s.n_above - s.n_in;
    acc->n_b += s.n_in;
    if (s.n_in > 0 || s.n_above != s.v) {
        if (!alloc_ws_cand(w, k))
            return PFI_ERR_NOMEM;
        fast_defer(w, io, acc, j, c, D, T, k, sl);
        return PFI_OK;
    }
    fast_place(io, acc, j, c, D, T, k, s.v, sl, wt);
    return PFI_OK;
}

/* One job of the pass, as the pass takes it: a bound or a floor to the general path, a curve of
   FAST_K points that scan_k passes to fast_job_k, any other to fast_job_any. */
static inline __attribute__((always_inline)) pfi_error
fast_one(const alloc_ctx *x, const fast_io *io, fast_acc *acc, size_t j, bool bounded, double b_hi,
         double b_lo, alloc_sums *S, pfi_diag *d, double *sv, double *wd)
{
    const pfi_alloc_jobs *J = x->J;
    size_t a = io->off[j], b = io->off[j + 1], k = b > a ? b - a : 0;
    const double *c = io->cap + a, *D = io->pow_w + a, *T = io->tput + a;
    double wt = io->wts != NULL ? alloc_opt(io->wts, j, 1.0) : 1.0;
    if (bounded &&
        (!isnan(alloc_opt(J->floor_frac, j, NAN)) || !isnan(alloc_opt(J->cap_lo_w, j, NAN)) ||
         !isnan(alloc_opt(J->cap_hi_w, j, NAN))))
        return fast_general(x, io, acc, j, b_hi, b_lo, S, d); /* a bound or a floor */
    if (k == FAST_K && scan_k(c, D, T, wt, sv, wd))
        return fast_job_k(x->w, io, acc, j, c, D, T, wt, sv, wd, b_hi, b_lo);
    return fast_job_any(x, io, acc, j, c, D, T, k, wt, b_hi, b_lo, S, d);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
/* The pass eight jobs a step (fast_block8) where the CPU has AVX-512 (checked at run time). */
#define ORACLE_SIMD 1
#define ORACLE_SIMD_TARGET "avx512f,avx512dq"
#define BLOCK 8

/* Whether jobs j .. j + 7 have FAST_K points each (their offsets one vector apart). */
__attribute__((target(ORACLE_SIMD_TARGET))) static inline bool fast_seq8(const size_t *off,
                                                                         size_t j)
{
    __m512i d = _mm512_sub_epi64(_mm512_loadu_si512(off + j + 1), _mm512_loadu_si512(off + j));
    return _mm512_cmpeq_epi64_mask(d, _mm512_set1_epi64(FAST_K)) == 0xFF;
}

/*
 * Jobs j .. j + 7 (FAST_K points each, one after the other in the arrays) as fast_one takes
 * them, eight at a time: point i of the eight curves gathered into one register, so that each
 * lane does the scalar code's IEEE operations in its order (scan_k's slopes, checks and
 * widths, fast_job_k's counts and width above, fast_place's outputs), and the running sums
 * are added job by job in job order: the same bits. A job that fails a check or has a bound
 * or floor goes to fast_one in its turn. Errors: as fast_one.
 */
__attribute__((target(ORACLE_SIMD_TARGET))) static inline pfi_error
fast_block8(const alloc_ctx *x, const fast_io *io, fast_acc *acc, size_t j, bool bounded,
            double b_hi, double b_lo, alloc_sums *S, pfi_diag *d, double *sv, double *wd)
{
    enum { M = FAST_K - 1 };
    const pfi_alloc_jobs *J = x->J;
    pfi_alloc_workspace *w = x->w;
    size_t a = io->off[j];
    const __m512i at = _mm512_setr_epi64(0, 6, 12, 18, 24, 30, 36, 42);
    const __m512d zero = _mm512_setzero_pd(), inf = _mm512_set1_pd(INFINITY);
    __m512d C[FAST_K], P[FAST_K], T[FAST_K], SL[M], WD[M];
#pragma GCC unroll 8
    for (int i = 0; i < FAST_K; i++) {
        C[i] = _mm512_i64gather_pd(at, io->cap + a + i, 8);
        P[i] = _mm512_i64gather_pd(at, io->pow_w + a + i, 8);
        T[i] = _mm512_i64gather_pd(at, io->tput + a + i, 8);
    }
    __m512d W = _mm512_set1_pd(1.0);
    if (io->wts != NULL) { /* alloc_opt: the weight unless NaN */
        __m512d v = _mm512_loadu_pd(io->wts + j);
        W = _mm512_mask_mov_pd(W, _mm512_cmp_pd_mask(v, v, _CMP_ORD_Q), v);
    }
    /* scan_k: every comparison false on NaN, as C's */
    __mmask8 ok =
        _mm512_cmp_pd_mask(C[0], zero, _CMP_GT_OQ) & _mm512_cmp_pd_mask(C[M], inf, _CMP_LT_OQ) &
        _mm512_cmp_pd_mask(P[0], zero, _CMP_GT_OQ) & _mm512_cmp_pd_mask(P[M], inf, _CMP_LT_OQ) &
        _mm512_cmp_pd_mask(T[0], zero, _CMP_GE_OQ) & _mm512_cmp_pd_mask(T[M], inf, _CMP_LT_OQ);
#pragma GCC unroll 8
    for (int i = 0; i < M; i++) {
        WD[i] = _mm512_sub_pd(P[i + 1], P[i]);
        SL[i] =
            _mm512_div_pd(_mm512_sub_pd(_mm512_mul_pd(W, T[i + 1]), _mm512_mul_pd(W, T[i])), WD[i]);
        ok &= _mm512_cmp_pd_mask(C[i + 1], C[i], _CMP_GT_OQ) &
              _mm512_cmp_pd_mask(WD[i], zero, _CMP_GT_OQ) &
              _mm512_cmp_pd_mask(T[i + 1], T[i], _CMP_GE_OQ);
        if (i > 0)
            ok &= _mm512_cmp_pd_mask(SL[i], SL[i - 1], _CMP_LT_OQ);
    }
    if (bounded) { /* a bound or a floor not NaN: fast_one */
        const double *opt[3] = {J->floor_frac, J->cap_lo_w, J->cap_hi_w};
        for (int i = 0; i < 3; i++)
            if (opt[i] != NULL) {
                __m512d v = _mm512_loadu_pd(opt[i] + j);
                ok &= _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q);
            }
    }
    /* fast_job_k: segments above the bracket (a prefix), at or above its low end, the
       width above summed in the scalar order */
    const __m512d hi = _mm512_set1_pd(b_hi), lo = _mm512_set1_pd(b_lo);
    const __m512i one = _mm512_set1_epi64(1);
    __m512i up = _mm512_setzero_si512(), ge = _mm512_setzero_si512();
    __m512d ab = zero;
#pragma GCC unroll 8
    for (int i = 0; i < M; i++) {
        __mmask8 u = _mm512_cmp_pd_mask(SL[i], hi, _CMP_GT_OQ);
        up = _mm512_mask_add_epi64(up, u, up, one);
        ge = _mm512_mask_add_epi64(ge, _mm512_cmp_pd_mask(SL[i], lo, _CMP_GE_OQ), ge, one);
        ab = _mm512_add_pd(ab, _mm512_maskz_mov_pd(u, WD[i]));
    }
    __mmask8 defer = _mm512_cmp_epi64_mask(ge, up, _MM_CMPINT_GT), place = ok & (__mmask8)~defer;
    /* the point each lane's outputs are written at: fast_place's (v = up) for a job placed at
       once; with io->prov, fast_prov's for a deferred one (its slopes above io->lam) */
    __m512i vpt = up;
    __mmask8 wr = place;
    if (io->prov) {
        const __m512d lam = _mm512_set1_pd(io->lam);
        __m512i vp = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int i = 0; i < M; i++)
            vp = _mm512_mask_add_epi64(vp, _mm512_cmp_pd_mask(SL[i], lam, _CMP_GT_OQ), vp, one);
        vpt = _mm512_mask_mov_epi64(up, defer, vp);
        wr = ok;
    }
    __m512d cv = C[0], dv = P[0], tv = T[0], down = _mm512_set1_pd(NAN), upm = SL[0];
#pragma GCC unroll 8
    for (int i = 1; i < FAST_K; i++) {
        __mmask8 e = _mm512_cmpeq_epi64_mask(vpt, _mm512_set1_epi64(i));
        cv = _mm512_mask_mov_pd(cv, e, C[i]);
        dv = _mm512_mask_mov_pd(dv, e, P[i]);
        tv = _mm512_mask_mov_pd(tv, e, T[i]);
        down = _mm512_mask_mov_pd(down, e, SL[i - 1]);
        upm = _mm512_mask_mov_pd(upm, e, i < M ? SL[i < M ? i : 0] : _mm512_set1_pd(NAN));
    }
    _mm512_mask_storeu_pd(io->o_cap + j, wr, cv);
    _mm512_mask_storeu_pd(io->o_pw + j, wr, dv);
    _mm512_mask_storeu_pd(io->o_tp + j, wr, tv);
    _mm512_mask_storeu_pd(io->o_shed + j, wr, _mm512_sub_pd(P[M], dv));
    _mm512_mask_storeu_pd(io->o_down + j, wr, down);
    _mm512_mask_storeu_pd(io->o_up + j, wr, upm);
    /* the sums job by job, in job order; a deferred job's value, power and throughput as zero
       (the sums are >= +0, so adding +0 leaves their bits: the same as not adding) */
    int64_t l_up[BLOCK], l_ge[BLOCK], l_vp[BLOCK];
    double l_wv[BLOCK]; /* each job's value at the point its outputs are written at */
    _mm512_storeu_pd(l_wv, _mm512_mul_pd(W, tv));
    _mm512_storeu_si512(l_up, up);
    _mm512_storeu_si512(l_ge, ge);
    _mm512_storeu_si512(l_vp, vpt);
    double l_sl[M][BLOCK], l_wd[M][BLOCK];
    if (defer & ok) {
#pragma GCC unroll 8
        for (int i = 0; i < M; i++) {
            _mm512_storeu_pd(l_sl[i], SL[i]);
            _mm512_storeu_pd(l_wd[i], WD[i]);
        }
    }
    /* each job's eight addends (fast_acc's order: reference power and throughput, lowest and
       highest power, width above, value, power, throughput), lane q of row i */
    __m512d add[BLOCK] = {P[M],
                          T[M],
                          P[0],
                          P[M],
                          ab,
                          _mm512_maskz_mov_pd(place, _mm512_mul_pd(W, tv)),
                          _mm512_maskz_mov_pd(place, dv),
                          _mm512_maskz_mov_pd(place, tv)};
    if (ok == 0xFF && io->prov) {
        /* every lane passed, so no job of the block takes fast_one: the sums, then the deferred
           jobs in job order (fast_prov's bookkeeping; their outputs are written above). The
           eight running sums are the lanes of one register, fed job by job in job order from
           the addends transposed (job q's eight in one register): each lane adds what the
           scalar sums add, in their order, so the bits are theirs */
        /* each job's kind, a byte each: bit q of defer spread to byte q (three shifts and
           masks), times KIND_PROV */
        uint64_t kinds = defer;
        kinds = (kinds | kinds << 28) & 0x0000000F0000000Full;
        kinds = (kinds | kinds << 14) & 0x0003000300030003ull;
        kinds = (kinds | kinds << 7) & 0x0101010101010101ull;
        kinds *= KIND_PROV;
        memcpy(io->kind + j, &kinds, sizeof kinds);
        __m512d t[BLOCK], u[BLOCK];
#pragma GCC unroll 8
        for (int i = 0; i < BLOCK; i += 2) {
            t[i] = _mm512_unpacklo_pd(add[i], add[i + 1]);
            t[i + 1] = _mm512_unpackhi_pd(add[i], add[i + 1]);
        }
#pragma GCC unroll 8
        for (int i = 0; i < BLOCK; i += 4)
#pragma GCC unroll 8
            for (int h = 0; h < 2; h++) {
                u[i + 2 * h] = _mm512_shuffle_f64x2(t[i + h], t[i + h + 2], 0x88);
                u[i + 2 * h + 1] = _mm512_shuffle_f64x2(t[i + h], t[i + h + 2], 0xDD);
            }
        /* u[0]: jobs 0 and 4 of rows 0-3, u[1]: 2 and 6, u[2]: 1 and 5, u[3]: 3 and 7; u[4..7]
           the same of rows 4-7 */
        static const int first[BLOCK / 2] = {0, 2, 1, 3};
        __m512d job[BLOCK];
#pragma GCC unroll 8
        for (int h = 0; h < BLOCK / 2; h++) {
            job[first[h]] = _mm512_shuffle_f64x2(u[h], u[h + 4], 0x88);
            job[first[h] + 4] = _mm512_shuffle_f64x2(u[h], u[h + 4], 0xDD);
        }
        __m512d sums = _mm512_loadu_pd(&acc->ref_p);
#pragma GCC unroll 8
        for (int q = 0; q < BLOCK; q++)
            sums = _mm512_add_pd(sums, job[q]);
        _mm512_storeu_pd(&acc->ref_p, sums);
        acc->below += (FAST_K - 1) * BLOCK - (size_t)_mm512_reduce_add_epi64(ge);
        if (defer == 0)
            return PFI_OK;
        w->n_b = acc->n_b;
        if (!alloc_ws_buf(w, FAST_K * BLOCK) || !alloc_ws_cand(w, FAST_K * BLOCK))
            return PFI_ERR_NOMEM;
        const __m512i lane5 = _mm512_setr_epi64(0, BLOCK, 2 * BLOCK, 3 * BLOCK, 4 * BLOCK, 0, 0, 0);
        for (unsigned m = defer; m != 0; m &= m - 1) {
            int q = __builtin_ctz(m);
            size_t jq = j + (size_t)q, c0 = w->n_c;
            /* job q's slopes and widths gathered from the lanes stored above (a vector load
               of a job's values there would straddle stores and wait for them); the segments
               inside, [up, ge), packed to the buffer's end (eight stored, the count added:
               room for the block's 48 made above) */
            __m512i ix = _mm512_add_epi64(lane5, _mm512_set1_epi64(q));
            __m512d xs = _mm512_mask_i64gather_pd(zero, 0x1F, ix, &l_sl[0][0], 8);
            __m512d xw = _mm512_mask_i64gather_pd(zero, 0x1F, ix, &l_wd[0][0], 8);
            __mmask8 in = (__mmask8)(((1u << l_ge[q]) - 1) & ~((1u << l_up[q]) - 1));
            _mm512_storeu_pd(w->bs + acc->n_b, _mm512_maskz_compress_pd(in, xs));
            _mm512_storeu_pd(w->bw + acc->n_b, _mm512_maskz_compress_pd(in, xw));
            _mm512_mask_storeu_pd(w->cs + c0, 0x1F, xs);
            acc->n_b += (size_t)(l_ge[q] - l_up[q]);
            w->n_c += FAST_K;
            w->c0[jq] = c0;
            w->nc[jq] = (uint32_t)l_vp[q];
            /* what alloc_pick needs of it unless it moves: its segments' count, its value at
               the provisional point; its outputs are written */
            io->lseg[acc->n_list] = (uint32_t)(l_ge[q] - l_up[q]);
            io->lval[acc->n_list] = l_wv[q];
            io->flag[jq] = 1;
            acc->n_b_listed = acc->n_b;
            io->list[acc->n_list++] = jq;
        }
        return PFI_OK;
    }
    double l_dm[BLOCK], l_tm[BLOCK], l_d0[BLOCK], l_ab[BLOCK], l_val[BLOCK], l_dv[BLOCK],
        l_tv[BLOCK];
    _mm512_storeu_pd(l_dm, add[0]);
    _mm512_storeu_pd(l_tm, add[1]);
    _mm512_storeu_pd(l_d0, add[2]);
    _mm512_storeu_pd(l_ab, add[4]);
    _mm512_storeu_pd(l_val, add[5]);
    _mm512_storeu_pd(l_dv, add[6]);
    _mm512_storeu_pd(l_tv, add[7]);
    for (size_t q = 0; q < BLOCK; q++) {
        size_t jq = j + q;
        if (!((ok >> q) & 1)) {
            pfi_error e = fast_one(x, io, acc, jq, bounded, b_hi, b_lo, S, d, sv, wd);
            if (e != PFI_OK)
                return e;
            continue;
        }
        io->kind[jq] = 0;
        acc->ref_p += l_dm[q];
        acc->ref_t += l_tm[q];
        acc->lo_p += l_d0[q];
        acc->hi_p += l_dm[q];
        acc->above += l_ab[q];
        acc->below += FAST_K - 1 - (size_t)l_ge[q];
        if ((defer >> q) & 1) {
            w->n_b = acc->n_b;
            if (!alloc_ws_buf(w, FAST_K) || !alloc_ws_cand(w, FAST_K))
                return PFI_ERR_NOMEM;
            double s5[M];
            for (int i = 0; i < M; i++)
                s5[i] = l_sl[i][q];
            for (size_t i = (size_t)l_up[q]; i < (size_t)l_ge[q]; i++, acc->n_b++) {
                w->bs[acc->n_b] = l_sl[i][q];
                w->bw[acc->n_b] = l_wd[i][q];
            }
            size_t aq = a + FAST_K * q;
            if (io->prov)
                fast_prov(w, io, acc, jq, io->cap + aq, io->pow_w + aq, io->tput + aq, s5);
            else
                fast_defer(w, io, acc, jq, io->cap + aq, io->pow_w + aq, io->tput + aq, FAST_K, s5);
        } else {
            acc->value += l_val[q];
            acc->tp += l_dv[q];
            acc->tt += l_tv[q];
        }
    }
    return PFI_OK;
}
#else
#define ORACLE_SIMD 0
#endif

/*
 * The oracle's single pass for a large instance (no cap step) with a bracketed threshold: validate
 * each job (as pfi_curve_check), and when its curve is its own envelope, sort its segments against
 * the bracket. A job with no segment inside the bracket is placed at once (at the end of its
 * segments above it, whatever the exact threshold); the others go to w->list for after the
 * selection. Jobs whose curve is not concave, or that fail the check (alloc_job_prepare then says
 * why), or that have a cap bound or a floor (not NaN), take the general path. simd: eight jobs a
 * step where eight FAST_K-point curves follow each other (fast_block8; a constant in each copy).
 */
static inline __attribute__((always_inline)) pfi_error
fast_pass_body(const alloc_ctx *x, double b_hi, double b_lo, pfi_alloc_result *r, alloc_sums *S,
               pfi_diag *d, bool simd)
{
    const pfi_alloc_jobs *J = x->J;
    pfi_alloc_workspace *w = x->w;
    fast_io io = {.off = J->offset,
                  .cap = J->cap_w,
                  .pow_w = J->power_w,
                  .tput = J->tput_tok_s,
                  .wts = J->weight,
                  .o_cap = r->cap_w,
                  .o_pw = r->power_w,
                  .o_tp = r->tput_tok_s,
                  .o_shed = r->shed_w,
                  .o_down = r->marginal_down,
                  .o_up = r->marginal_up,
                  .kind = w->kind,
                  .flag = w->flag,
                  .list = w->list,
                  .lseg = w->lseg,
                  .lval = w->lval,
                  .prov = simd || J->n <= PROV_MAX_JOBS,
                  .lam = 0.5 * b_hi + 0.5 * b_lo};
    fast_acc acc = {.n_b = w->n_b, .n_b_listed = w->n_b};
    size_t n = J->n;
    /* the optional per-job arrays that send a job to the general path where not NaN (a file's
       absent columns are arrays of NaN) */
    bool bounded = J->floor_frac != NULL || J->cap_lo_w != NULL || J->cap_hi_w != NULL;
    /* room for the segments and the jobs' copies the sample expects, and a quarter more */
    size_t guess = w->guess_in + w->guess_in / 4 + 64, per_job = J->offset[n] / n + 1;
    if (!alloc_ws_buf(w, guess) || !alloc_ws_cand(w, guess < n ? guess * per_job : J->offset[n]))
        return PFI_ERR_NOMEM;
    pfi_error e = PFI_OK;
    /* scan_k's slopes and widths (the first FAST_K - 1 of each), and zeros after them that
       fast_job_k's fixed-length copies read past the last segment */
    double sv[2 * (FAST_K - 1)] = {0}, wd[2 * (FAST_K - 1)] = {0};
    for (size_t j = 0; j < n && e == PFI_OK;) {
        const size_t *off = io.off;
#if ORACLE_SIMD
        if (simd && j + BLOCK <= n) {
            if (fast_seq8(off, j)) {
                if (j + PREFETCH_JOBS + BLOCK <= n) {
                    size_t f = off[j + PREFETCH_JOBS];
                    for (size_t o = 0; o < FAST_K * BLOCK; o += 8) {
                        __builtin_prefetch(io.cap + f + o);
                        __builtin_prefetch(io.pow_w + f + o);
                        __builtin_prefetch(io.tput + f + o);
                    }
                }
                e = fast_block8(x, &io, &acc, j, bounded, b_hi, b_lo, S, d, sv, wd);
                j += BLOCK;
                continue;
            }
        }
#else
        (void)simd;
#endif
        if (j + PREFETCH_JOBS < n) {
            size_t f = off[j + PREFETCH_JOBS];
            __builtin_prefetch(io.cap + f);
            __builtin_prefetch(io.pow_w + f);
            __builtin_prefetch(io.tput + f);
        }
        e = fast_one(x, &io, &acc, j, bounded, b_hi, b_lo, S, d, sv, wd);
        j++;
    }
    w->n_b = acc.n_b;
    w->n_list = acc.n_list;
    w->lseg_ok = simd;
    w->prov_lam = io.lam;
    S->ref_p = acc.ref_p;
    S->ref_t = acc.ref_t;
    S->lo_p = acc.lo_p;
    S->hi_p = acc.hi_p;
    S->above = acc.above;
    S->below = acc.below;
    S->value = acc.value;
    S->tp = acc.tp;
    S->tt = acc.tt;
    return e;
}

static pfi_error fast_pass_plain(const alloc_ctx *x, double b_hi, double b_lo, pfi_alloc_result *r,
                                 alloc_sums *S, pfi_diag *d)
{
    return fast_pass_body(x, b_hi, b_lo, r, S, d, false);
}

#if ORACLE_SIMD
__attribute__((target(ORACLE_SIMD_TARGET))) static pfi_error
fast_pass_simd(const alloc_ctx *x, double b_hi, double b_lo, pfi_alloc_result *r, alloc_sums *S,
               pfi_diag *d)
{
    return fast_pass_body(x, b_hi, b_lo, r, S, d, true);
}
#endif

pfi_error alloc_fast_pass(const alloc_ctx *x, double b_hi, double b_lo, pfi_alloc_result *r,
                          alloc_sums *S, pfi_diag *d)
{
#if ORACLE_SIMD
    __builtin_cpu_init();
    if (!x->w->no_simd && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
        return fast_pass_simd(x, b_hi, b_lo, r, S, d);
#endif
    return fast_pass_plain(x, b_hi, b_lo, r, S, d);
}
