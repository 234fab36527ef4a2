/*
 * The allocator on a power tree (pfi_allocate_tree, pfi/topology.h): the oracle's greedy over
 * every job's envelope segments that respects every ancestor's remaining capacity (reserve
 * levels in cap watts, measured levels in drawn watts), priority bands, and the other
 * strategies' flat allocation pushed under every level's limit, deepest first.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "pfi/curve.h"
#include "pfi/topology.h"
#include "power/alloc_internal.h"

/* One envelope segment of one job (its sort key, from its slope, is kept apart: the greedy
   reads only this, 40 bytes). */
typedef struct tree_seg {
    double dw, kw, val; /* drawn W, cap W (GPUs × Δcap), weighted tokens/s */
    uint32_t job, p, q; /* the job, the candidates at its ends */
} tree_seg;

/* Where a job has got to: candidate at, and fr (0..1) of the way to candidate nx. One
   struct, so that the greedy's visit to a job costs one cache line. */
typedef struct tree_pos {
    uint32_t at, nx;
    double fr;
} tree_pos;

/* A segment copied into its slope bucket (the bucketed greedy, greedy_bucketed): what the
   greedy reads, next to its neighbours in slope order. */
typedef struct tree_bseg {
    double dw, kw, val;
    uint64_t key;
    uint32_t job, p, q, node; /* node: the job's level, UINT32_MAX for the site alone */
} tree_bseg;

/* A sort key and the index of its segment within a bucket. */
typedef struct tree_kp {
    uint64_t key;
    uint32_t i, pad;
} tree_kp;

/* A double's bits mapped so that unsigned order is numeric order (NaN never occurs here). */
static inline uint64_t order_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return (b >> 63) ? ~b : b | (UINT64_C(1) << 63);
}

/* Radix digits of the sort: RADIX_BITS wide; the prefix sort takes two; the fallback sorts
   the high half of a key in RADIX_HIGH passes (from bit 32), the low half in RADIX_LOW (from
   bit 0). */
#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)
#define RADIX_HIGH 3
#define RADIX_LOW 3
#define RADIX_RUN 64 /* longest run of equal high halves sorted by insertion */
/* The bucketed greedy's buckets: 2^BUCKET_BITS (8 bits were slower: larger buckets to sort). */
#define BUCKET_BITS 11
#define BUCKET_SIZE (1u << BUCKET_BITS)

/* The scatter of one stable LSD radix pass on the digit ((key - base) >> sh) of the keys
   k[0..ns) (ord carried along) into k1 and o1; count: that digit's histogram (RADIX_SIZE
   entries), turned into offsets here. */
static void radix_scatter(const uint64_t *k, const uint32_t *ord, size_t ns, uint64_t base, int sh,
                          uint64_t *k1, uint32_t *o1, size_t *count)
{
    size_t sum = 0;
    for (size_t b = 0; b < RADIX_SIZE; b++) {
        size_t c = count[b];
        count[b] = sum;
        sum += c;
    }
    for (size_t i = 0; i < ns; i++) {
        uint64_t key = k[i];
        size_t q = count[((key - base) >> sh) & (RADIX_SIZE - 1)]++;
        k1[q] = key;
        o1[q] = ord[i];
    }
}

/* One stable LSD radix pass on the digit at bit sh of the keys k[0..ns) (ord carried along)
   into k1 and o1, skipped when every key has the same digit there; returns whether it ran.
   count: RADIX_SIZE entries. */
static bool radix_pass(const uint64_t *k, const uint32_t *ord, size_t ns, int sh, uint64_t *k1,
                       uint32_t *o1, size_t *count, uint64_t differ)
{
    if ((differ >> sh & (RADIX_SIZE - 1)) == 0)
        return false; /* every key has the same digit here */
    memset(count, 0, RADIX_SIZE * sizeof *count);
    for (size_t i = 0; i < ns; i++)
        count[(k[i] >> sh) & (RADIX_SIZE - 1)]++;
    radix_scatter(k, ord, ns, 0, sh, k1, o1, count);
    return true;
}

/*
 * The segments' order for the greedy — band descending, then slope descending, ties in the
 * order the segments were made (job, then position) — as indices into seg. keys[0..ns): each
 * segment's key (~order_bits of its slope: ascending key is descending slope), overwritten;
 * keys[ns..2ns), tmp (ns) and count (2 × RADIX_SIZE): scratch. The keys are sorted stably by
 * their prefix: the top 2 × RADIX_BITS significant bits of key − the least key (two LSD
 * radix passes, 11-bit digits, both histograms from one read; one pass when the keys span
 * fewer bits), then each run of equal prefixes by the whole key (insertion, stable): the
 * order of a stable sort by the whole key. A run longer than RADIX_RUN (slopes equal in
 * their first 20 or so significant bits by the hundred) falls back to a full LSD radix sort
 * of the whole keys (low half, then high half). Then a stable pass by band (job_band: per
 * job, NULL for none) when there are bands. O(S).
 */
static void order_segments(const tree_seg *seg, size_t ns, uint32_t *ord0, uint32_t *tmp0,
                           uint64_t *keys, size_t *count, const double *job_band, bool bands)
{
    uint32_t *ord = ord0, *tmp = tmp0;
    uint64_t *k0 = keys, *k1 = keys + ns;
    uint64_t all_or = 0, all_and = ~UINT64_C(0), kmin = ~UINT64_C(0), kmax = 0;
    for (size_t i = 0; i < ns; i++) {
        uint64_t key = k0[i];
        ord[i] = (uint32_t)i;
        all_or |= key;
        all_and &= key;
        kmin = key < kmin ? key : kmin;
        kmax = key > kmax ? key : kmax;
    }
    uint64_t differ = all_or ^ all_and;
    /* the prefix: bits [sh0, span) of key - kmin, span the bit length of kmax - kmin */
    int span = 0;
    while (span < 64 && ((kmax - kmin) >> span) != 0)
        span++;
    int sh0 = span > 2 * RADIX_BITS ? span - 2 * RADIX_BITS : 0;
    int passes = span > sh0 + RADIX_BITS ? 2 : span > 0 ? 1 : 0;
    size_t *c0 = count, *c1 = count + RADIX_SIZE;
    memset(count, 0, 2 * RADIX_SIZE * sizeof *count);
    for (size_t i = 0; passes > 0 && i < ns; i++) {
        uint64_t dk = k0[i] - kmin;
        c0[(dk >> sh0) & (RADIX_SIZE - 1)]++;
        c1[(dk >> (sh0 + RADIX_BITS)) & (RADIX_SIZE - 1)]++;
    }
    for (int pass = 0; pass < passes; pass++) {
        radix_scatter(k0, ord, ns, kmin, sh0 + RADIX_BITS * pass, k1, tmp, pass ? c1 : c0);
        uint64_t *kt = k0;
        k0 = k1;
        k1 = kt;
        uint32_t *ot = ord;
        ord = tmp;
        tmp = ot;
    }
    bool long_run = false;
    for (size_t i = 1, start = 0; i <= ns && !long_run; i++) {
        if (i < ns && (k0[i] - kmin) >> sh0 == (k0[start] - kmin) >> sh0)
            continue;
        if (i - start > RADIX_RUN)
            long_run = true;
        else
            for (size_t u = start + 1; u < i; u++) { /* insertion: stable, the run is short */
                uint64_t key = k0[u];
                uint32_t o = ord[u];
                size_t v = u;
                for (; v > start && k0[v - 1] > key; v--) {
                    k0[v] = k0[v - 1];
                    ord[v] = ord[v - 1];
                }
                k0[v] = key;
                ord[v] = o;
            }
        start = i;
    }
    for (int pass = 0; long_run && pass < RADIX_LOW + RADIX_HIGH; pass++) {
        int sh = pass < RADIX_LOW ? RADIX_BITS * pass : 32 + RADIX_BITS * (pass - RADIX_LOW);
        if (radix_pass(k0, ord, ns, sh, k1, tmp, count, differ)) {
            uint64_t *kt = k0;
            k0 = k1;
            k1 = kt;
            uint32_t *ot = ord;
            ord = tmp;
            tmp = ot;
        }
    }
    if (ord != ord0)
        memcpy(ord0, ord, ns * sizeof *ord);
    ord = ord0;
    tmp = tmp0;
    if (!bands)
        return;
    /* stable by band, descending: a merge of the band values present (few) */
    size_t w = 0;
    double cur = INFINITY;
    while (w < ns) {
        double next = -INFINITY;
        for (size_t i = 0; i < ns; i++)
            if (job_band[seg[ord[i]].job] < cur && job_band[seg[ord[i]].job] > next)
                next = job_band[seg[ord[i]].job];
        for (size_t i = 0; i < ns; i++)
            if (job_band[seg[ord[i]].job] == next)
                tmp[w++] = ord[i];
        cur = next;
    }
    memcpy(ord, tmp, ns * sizeof *ord);
}

/* The stable sort of kp[0..n) by key (ties keep their order) with tmp (n): bottom-up merges;
   for the rare long runs of keys that the bucket sort's digits do not tell apart. */
static void kp_merge_sort(tree_kp *kp, tree_kp *tmp, size_t n)
{
    tree_kp *a = kp, *b = tmp;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                b[k++] = a[j].key < a[i].key ? a[j++] : a[i++];
            while (i < mid)
                b[k++] = a[i++];
            while (j < hi)
                b[k++] = a[j++];
        }
        tree_kp *t = a;
        a = b;
        b = t;
    }
    if (a != kp)
        memcpy(kp, a, n * sizeof *kp);
}

/* Insertion sort of kp[0..n) by key, stable (n is short). */
static void kp_insertion(tree_kp *kp, size_t n)
{
    for (size_t u = 1; u < n; u++) {
        tree_kp x = kp[u];
        size_t v = u;
        for (; v > 0 && kp[v - 1].key > x.key; v--)
            kp[v] = kp[v - 1];
        kp[v] = x;
    }
}

/* kp[0..n) (keys whose bits above sh are equal; in segment order) sorted stably by key:
   a counting sort on the next bits below sh (as many as n needs, at most RADIX_BITS; count:
   RADIX_SIZE entries) into tmp and back, then each run of equal digits by insertion, or by
   merges when longer than RADIX_RUN. The order of a stable sort by the whole key. */
static void kp_sort(tree_kp *kp, tree_kp *tmp, size_t n, uint64_t kmin, int sh, size_t *count)
{
    if (n < 2 || sh == 0)
        return; /* sh 0: the keys are equal */
    if (n <= 32) {
        kp_insertion(kp, n);
        return;
    }
    int bits = 4;
    while (bits < RADIX_BITS && ((size_t)1 << bits) < n)
        bits++;
    if (bits > sh)
        bits = sh;
    int sh2 = sh - bits;
    size_t nb = (size_t)1 << bits, mask = nb - 1;
    memset(count, 0, nb * sizeof *count);
    for (size_t i = 0; i < n; i++)
        count[((kp[i].key - kmin) >> sh2) & mask]++;
    size_t sum = 0;
    for (size_t b = 0; b < nb; b++) {
        size_t c = count[b];
        count[b] = sum;
        sum += c;
    }
    for (size_t i = 0; i < n; i++)
        tmp[count[((kp[i].key - kmin) >> sh2) & mask]++] = kp[i];
    for (size_t i = 1, start = 0; i <= n; i++) {
        if (i < n && ((tmp[i].key - kmin) >> sh2) == ((tmp[start].key - kmin) >> sh2))
            continue;
        if (sh2 > 0 && i - start > RADIX_RUN)
            kp_merge_sort(tmp + start, kp + start, i - start);
        else if (sh2 > 0)
            kp_insertion(tmp + start, i - start);
        start = i;
    }
    memcpy(kp, tmp, n * sizeof *kp);
}

static pfi_error tree_fail(pfi_diag *d, pfi_error e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static pfi_error tree_fail(pfi_diag *d, pfi_error e, const char *fmt, ...)
{
    if (d != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->message, sizeof d->message, fmt, ap);
        va_end(ap);
    }
    return e;
}

/* A level named for a message: "'r1' (line 4)", or "level 3" without names. */
typedef struct where_text {
    char s[192];
} where_text;

static where_text where(const pfi_alloc_tree *t, size_t a)
{
    where_text w;
    if (t->name != NULL && t->name[a] != NULL && t->line != NULL)
        snprintf(w.s, sizeof w.s, "level '%.120s' (line %ld)", t->name[a], t->line[a]);
    else if (t->name != NULL && t->name[a] != NULL)
        snprintf(w.s, sizeof w.s, "level '%.120s'", t->name[a]);
    else
        snprintf(w.s, sizeof w.s, "level %zu", a + 1);
    return w;
}

static pfi_error check_tree(const pfi_alloc_jobs *J, const pfi_alloc_tree *t,
                            const pfi_alloc_tree_result *tr, pfi_diag *d)
{
    if (t == NULL || tr == NULL || tr->n_nodes != t->n_nodes ||
        (t->n_nodes > 0 && (t->parent == NULL || t->limit_w == NULL || t->kind == NULL)))
        return tree_fail(d, PFI_ERR_INVALID_ARGUMENT,
                         "the tree needs parent, limit and kind for every level, and a result "
                         "sized for them");
    for (size_t a = 0; a < t->n_nodes; a++) {
        if (t->parent[a] != PFI_TOPO_NONE && t->parent[a] >= t->n_nodes)
            return tree_fail(d, PFI_ERR_INVALID_ARGUMENT, "level %zu: parent out of range", a + 1);
        if (!(t->limit_w[a] >= 0))
            return tree_fail(d, PFI_ERR_INVALID_ARGUMENT, "level %zu: limit must be >= 0 W", a + 1);
        if (t->kind[a] != PFI_LIMIT_RESERVE && t->kind[a] != PFI_LIMIT_MEASURED)
            return tree_fail(d, PFI_ERR_INVALID_ARGUMENT, "level %zu: unknown limit kind", a + 1);
        size_t steps = 0;
        for (size_t b = a; t->parent[b] != PFI_TOPO_NONE && steps <= t->n_nodes; b = t->parent[b])
            steps++;
        if (steps > t->n_nodes)
            return tree_fail(d, PFI_ERR_INVALID_ARGUMENT, "level %zu: parents form a cycle", a + 1);
    }
    for (size_t j = 0; j < J->n; j++) {
        if (t->job_node != NULL && t->job_node[j] != PFI_TOPO_NONE && t->job_node[j] >= t->n_nodes)
            return tree_fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: level out of range", j + 1);
        if (t->band != NULL && !isnan(t->band[j]) && !isfinite(t->band[j]))
            return tree_fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: band must be finite", j + 1);
    }
    return PFI_OK;
}

static size_t job_node(const pfi_alloc_tree *t, size_t j)
{
    return t->job_node != NULL ? t->job_node[j] : PFI_TOPO_NONE;
}

/* Job j's level as an index of the per-level arrays that have the site last: t->n_nodes for a
   job under the site alone. */
static inline size_t job_slot(const pfi_alloc_tree *t, size_t j)
{
    size_t a = job_node(t, j);
    return a == PFI_TOPO_NONE ? t->n_nodes : a;
}

/* Level a's parent, the site (t->n_nodes) for a level without one. */
static inline size_t level_up(const pfi_alloc_tree *t, size_t a)
{
    return t->parent[a] == PFI_TOPO_NONE ? t->n_nodes : t->parent[a];
}

/* Add power (drawn d, cap k) to every level above job j and to the site. */
static void charge(const pfi_alloc_tree *t, size_t j, double d, double k, double *rem,
                   double site_sign)
{
    for (size_t a = job_node(t, j); a != PFI_TOPO_NONE; a = t->parent[a])
        rem[a] -= t->kind[a] == PFI_LIMIT_RESERVE ? k : d;
    rem[t->n_nodes] -= site_sign * (t->budget_kind == PFI_LIMIT_RESERVE ? k : d);
}

static void tree_flags(const pfi_alloc_tree *t, double budget_w, pfi_alloc_tree_result *tr);

/* The per-level sums of r's caps and powers into tr, and which limits bind: each level's own
   jobs summed first (job order), then added to the level and every level above it (was every
   job added to each of its ancestors: 0.37 ms of 3.4 at 100 000 jobs on 4 levels); without the
   memory for the own sums, job by job as before. */
static void tree_sums(const pfi_alloc_jobs *J, const pfi_alloc_tree *t, double budget_w,
                      const pfi_alloc_result *r, pfi_alloc_tree_result *tr)
{
    size_t nn = t->n_nodes;
    double *own = pfi_malloc(2 * (nn + 1) * sizeof *own);
    for (size_t a = 0; a < nn; a++) {
        tr->reserve_w[a] = tr->drawn_w[a] = 0;
        tr->binding[a] = false;
    }
    for (size_t a = 0; own != NULL && a <= 2 * nn + 1; a++)
        own[a] = 0;
    tr->site_reserve_w = tr->site_drawn_w = 0;
    for (size_t j = 0; j < J->n; j++) {
        double k = alloc_opt(J->gpus, j, 1.0) * r->cap_w[j], dpw = r->power_w[j];
        size_t a = job_node(t, j);
        if (own != NULL) {
            own[job_slot(t, j)] += k;
            own[nn + 1 + job_slot(t, j)] += dpw;
            continue;
        }
        for (; a != PFI_TOPO_NONE; a = t->parent[a]) {
            tr->reserve_w[a] += k;
            tr->drawn_w[a] += dpw;
        }
        tr->site_reserve_w += k;
        tr->site_drawn_w += dpw;
    }
    for (size_t a = 0; own != NULL && a <= nn; a++) {
        for (size_t b = a; a < nn && b != PFI_TOPO_NONE; b = t->parent[b]) {
            tr->reserve_w[b] += own[a];
            tr->drawn_w[b] += own[nn + 1 + a];
        }
        tr->site_reserve_w += own[a];
        tr->site_drawn_w += own[nn + 1 + a];
    }
    pfi_free(own);
    tree_flags(t, budget_w, tr);
}

/* Which limits bind, from the per-level sums in tr. */
static void tree_flags(const pfi_alloc_tree *t, double budget_w, pfi_alloc_tree_result *tr)
{
    tr->n_binding = 0;
    for (size_t a = 0; a < t->n_nodes; a++) {
        double used = t->kind[a] == PFI_LIMIT_RESERVE ? tr->reserve_w[a] : tr->drawn_w[a];
        tr->binding[a] = isfinite(t->limit_w[a]) && used >= t->limit_w[a] * (1 - 1e-9) - 1e-9;
        tr->n_binding += tr->binding[a];
    }
    double used = t->budget_kind == PFI_LIMIT_RESERVE ? tr->site_reserve_w : tr->site_drawn_w;
    tr->budget_binding = used >= budget_w * (1 - 1e-9) - 1e-9;
    tr->budget_kind = t->budget_kind;
}

/*
 * Job j's outputs at candidate i plus the fraction f of the way to candidate q, the greedy's
 * place (it charged f of the segment's drawn and cap watts). Between neighbouring candidates
 * with continuous caps: the cap f of the way. Across candidates that are not envelope
 * vertices (they lie on or below the segment: collinear points, or a dip the envelope
 * bridges), with continuous caps: the highest cap on the curve within what was charged, in
 * the units the limits count (by_cap: some limit counts caps, GPUs × cap; by_drawn: some
 * counts drawn watts): on collinear points the segment's own value, so the greedy stays exact
 * (it used to snap down to the candidate below: issue 18 item 3, a straight weighted curve
 * left part way with its watts unspent). With a cap step: the highest candidate within both.
 */
static void place_job(const alloc_ctx *x, size_t j, size_t i, size_t q, double f, bool by_cap,
                      bool by_drawn, pfi_alloc_result *r)
{
    alloc_view v = alloc_true_view(x, j);
    double cap = v.c[i];
    if (f > 0 && q > i) {
        double dd = v.d[i] + f * (v.d[q] - v.d[i]), cc = v.c[i] + f * (v.c[q] - v.c[i]);
        if (q == i + 1 && !x->discrete) {
            cap = cc;
            if (cap > v.c[q])
                cap = v.c[q];
        } else if (!x->discrete) {
            /* the curve's cap at drawn dd (power rising with the cap; where it is flat, the
               highest cap at that power), within the segment */
            double cd = pfi_interp(v.d + i, v.c + i, q - i + 1, dd);
            cap = by_drawn && by_cap ? fmin(cc, cd) : by_drawn ? cd : cc;
            cap = fmin(fmax(cap, v.c[i]), v.c[q]);
        } else {
            size_t b = i;
            for (size_t s = i + 1; s <= q; s++)
                if (v.d[s] <= dd * (1 + 1e-12) && v.c[s] <= cc * (1 + 1e-12))
                    b = s;
            cap = v.c[b];
        }
    }
    r->cap_w[j] = cap;
    if (!(f > 0 && q > i) && (i + 1 == v.m || v.c[i + 1] != v.c[i])) {
        r->power_w[j] = v.d[i]; /* pfi_interp's value at a point whose cap is not repeated */
        r->tput_tok_s[j] = v.t[i];
    } else {
        r->power_w[j] = pfi_interp(v.c, v.d, v.m, cap);
        r->tput_tok_s[j] = pfi_interp(v.c, v.t, v.m, cap);
    }
    size_t last = x->J->offset[j + 1] - 1;
    r->shed_w[j] = x->J->power_w[last] - r->power_w[j];
}

/* The result's totals from its per-job powers and tokens/s (r->power_w, r->tput_tok_s, J->n
 * each): total power (W), total tokens/s and the weighted objective Σ weight·tokens/s, summed
 * in job order (every tree path sums so: results are bit-identical whichever path ran). */
static void tree_totals(const pfi_alloc_jobs *J, pfi_alloc_result *r)
{
    double tp = 0, tt = 0, obj = 0;
    for (size_t j = 0; j < J->n; j++) {
        tp += r->power_w[j];
        tt += r->tput_tok_s[j];
        obj += alloc_opt(J->weight, j, 1.0) * r->tput_tok_s[j];
    }
    r->total_power_w = tp;
    r->total_tput_tok_s = tt;
    r->objective = obj;
}

/* Job j's marginal weighted tokens/s per drawn W just below and just above its cap r->cap_w[j]
   on its curve (the slope of the curve's segment on each side; NaN at the lowest or top cap
   it may take), so that --explain reads the same on a tree as without one. */
static void tree_marginals(const pfi_alloc_jobs *J, size_t j, pfi_alloc_result *r)
{
    size_t a0 = J->offset[j], k = J->offset[j + 1] - a0;
    const double *c = J->cap_w + a0, *p = J->power_w + a0, *t = J->tput_tok_s + a0;
    double wt = alloc_opt(J->weight, j, 1.0), cap = r->cap_w[j];
    double lo = c[0], hi = c[k - 1], tol = 1e-9 * (1 + fabs(cap));
    double clo = alloc_opt(J->cap_lo_w, j, NAN), chi = alloc_opt(J->cap_hi_w, j, NAN);
    if (clo > lo)
        lo = clo;
    if (chi < hi)
        hi = chi;
    double down = NAN, up = NAN;
    size_t i = 0;
    while (i + 1 < k && c[i] < cap - tol)
        i++;
    if (fabs(c[i] - cap) <= tol) {
        if (i > 0)
            down = (wt * t[i] - wt * t[i - 1]) / (p[i] - p[i - 1]);
        if (i + 1 < k)
            up = (wt * t[i + 1] - wt * t[i]) / (p[i + 1] - p[i]);
    } else if (i > 0) {
        down = up = (wt * t[i] - wt * t[i - 1]) / (p[i] - p[i - 1]);
    }
    r->marginal_down[j] = cap <= lo + tol ? NAN : down;
    r->marginal_up[j] = cap >= hi - tol ? NAN : up;
}

/* tree_marginals for job j (no cap bounds, its k caps c rising) at its point s, with the slopes
   of its segments either side of it (down: s > 0, up: s + 1 < k; alloc_slope's expression, as
   tree_marginals computes them) already at hand: the same values without the work, unless a
   cap lies within tree_marginals' tolerance of c[s] (then tree_marginals itself). */
static inline void tree_marginals_at(const pfi_alloc_jobs *J, size_t j, const double *c, size_t k,
                                     size_t s, double down, double up, pfi_alloc_result *r)
{
    double cap = c[s], tol = 1e-9 * (1 + fabs(cap));
    /* tree_marginals' point: the first cap not below cap − tol, s itself unless the cap before
       it is within tol (the caps rise) */
    if (s > 0 && !(c[s - 1] < cap - tol)) {
        tree_marginals(J, j, r);
        return;
    }
    r->marginal_down[j] = cap <= c[0] + tol || s == 0 ? NAN : down;
    r->marginal_up[j] = cap >= c[k - 1] - tol || s + 1 == k ? NAN : up;
}

/* Grow *p to hold need elements of size elem (contents not kept); false when out of memory
   (then *p is NULL and *cap 0). */
static bool tree_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need == 0)
        need = 1;
    if (need <= *cap)
        return true;
    pfi_free(*p);
    *p = pfi_malloc(need * elem);
    *cap = *p != NULL ? need : 0;
    return *p != NULL;
}

/* One step of the greedy: the segment (drawn dw, cap kw, weighted tokens/s val) of job from
   candidate p to q, taken as far as every level above the job and the site allow, if the job
   is at p; rem and pos updated, the value taken added to *value. */
static inline void tree_take(const pfi_alloc_tree *t, size_t nn, double *rem, tree_pos *pos,
                             uint32_t job, size_t node, uint32_t p, uint32_t q, double dw,
                             double kw, double val, double *value)
{
    tree_pos *ps = &pos[job];
    if (ps->at != p || ps->fr > 0)
        return; /* the job stopped on an earlier segment */
    double f = 1;
    for (size_t a = node; a != PFI_TOPO_NONE; a = t->parent[a]) {
        double need = t->kind[a] == PFI_LIMIT_RESERVE ? kw : dw;
        if (need > 0 && rem[a] < f * need)
            f = rem[a] > 0 ? rem[a] / need : 0;
    }
    double need = t->budget_kind == PFI_LIMIT_RESERVE ? kw : dw;
    if (need > 0 && rem[nn] < f * need)
        f = rem[nn] > 0 ? rem[nn] / need : 0;
    if (f <= 0)
        return;
    double d = f * dw, k = f * kw; /* charge(): every level above the job, then the site */
    for (size_t a = node; a != PFI_TOPO_NONE; a = t->parent[a])
        rem[a] -= t->kind[a] == PFI_LIMIT_RESERVE ? k : d;
    rem[nn] -= t->budget_kind == PFI_LIMIT_RESERVE ? k : d;
    *value += f * val;
    if (f >= 1) {
        ps->at = q;
    } else {
        ps->fr = f;
        ps->nx = q;
    }
}

/* The segments of buckets [b0, b1] (bucket of key: (key − kmin) >> sh) copied to their places
   in bs (next[b]: where bucket b's next one goes, advanced), in segment order. */
static void scatter_buckets(const pfi_alloc_tree *t, const tree_seg *seg, const uint64_t *keys,
                            size_t ns, uint64_t kmin, int sh, size_t b0, size_t b1, size_t *next,
                            tree_bseg *bs)
{
    for (size_t i = 0; i < ns; i++) {
        uint64_t key = keys[i];
        size_t b = (size_t)((key - kmin) >> sh);
        if (b < b0 || b > b1)
            continue;
        tree_bseg *o = &bs[next[b]++];
        const tree_seg *g = &seg[i];
        o->dw = g->dw;
        o->kw = g->kw;
        o->val = g->val;
        o->key = key;
        o->job = g->job;
        o->p = g->p;
        o->q = g->q;
        size_t nd = job_node(t, g->job);
        o->node = nd == PFI_TOPO_NONE ? UINT32_MAX : (uint32_t)nd;
    }
}

/*
 * The greedy over the segments in slope order (no bands), sorted a bucket at a time as it
 * gets there: the segments copied into 2^BUCKET_BITS buckets by the top bits of key − kmin
 * (span: the bit length of kmax − kmin), then each bucket, in order, sorted in cache
 * (kp_sort: the order of a stable sort by the whole key, the order order_segments gives) and
 * its segments taken. Once the site's capacity is spent (rem[nn] <= 0) and every segment
 * needs some of it (site_pos), no later segment can be taken (each would get f = 0): the
 * rest is left unsorted and unvisited. The copying is done in two rounds: first the buckets
 * up to the one where the site's capacity runs out by a sample (every 8th segment's need,
 * with 10 % to spare), then, only when the greedy gets past them (levels that held segments
 * back), the rest. Same steps in the same order as the sorted greedy, so the same results
 * bit for bit.
 */
static void greedy_bucketed(const pfi_alloc_tree *t, size_t nn, double *rem, tree_pos *pos,
                            const tree_seg *seg, const uint64_t *keys, size_t ns, uint64_t kmin,
                            uint64_t kmax, bool site_pos, tree_bseg *bs, tree_kp *kp, size_t *count,
                            double *value)
{
    if (ns == 0)
        return;
    int span = 0;
    while (span < 64 && ((kmax - kmin) >> span) != 0)
        span++;
    int sh = span > BUCKET_BITS ? span - BUCKET_BITS : 0;
    size_t *start = count, *next = count + BUCKET_SIZE + 1, *scratch = next + BUCKET_SIZE;
    double need[BUCKET_SIZE];
    memset(start, 0, (BUCKET_SIZE + 1) * sizeof *start);
    memset(need, 0, sizeof need);
    bool reserve = t->budget_kind == PFI_LIMIT_RESERVE;
    for (size_t i = 0; i < ns; i++) {
        size_t b = (size_t)((keys[i] - kmin) >> sh);
        start[b + 1]++;
        if (i % 8 == 0)
            need[b] += reserve ? seg[i].kw : seg[i].dw;
    }
    size_t last = BUCKET_SIZE - 1; /* the first round's last bucket */
    double sum = 0;
    for (size_t b = 0; b < BUCKET_SIZE; b++) {
        start[b + 1] += start[b];
        next[b] = start[b];
        sum += 8 * need[b];
        if (site_pos && last == BUCKET_SIZE - 1 && sum > 1.1 * rem[nn])
            last = b;
    }
    scatter_buckets(t, seg, keys, ns, kmin, sh, 0, last, next, bs);
    for (size_t b = 0; b < BUCKET_SIZE; b++) {
        size_t lo = start[b], m = start[b + 1] - lo;
        if (b == last + 1)
            scatter_buckets(t, seg, keys, ns, kmin, sh, last + 1, BUCKET_SIZE - 1, next, bs);
        if (m == 0)
            continue;
        const tree_bseg *B = bs + lo;
        for (size_t i = 0; i < m; i++) {
            kp[i].key = B[i].key;
            kp[i].i = (uint32_t)i;
        }
        kp_sort(kp, kp + m, m, kmin, sh, scratch);
        for (size_t i = 0; i < m && i < 16; i++)
            __builtin_prefetch(&pos[B[kp[i].i].job]);
        for (size_t i = 0; i < m; i++) {
            if (i + 16 < m)
                __builtin_prefetch(&pos[B[kp[i + 16].i].job]);
            const tree_bseg *g = &B[kp[i].i];
            tree_take(t, nn, rem, pos, g->job, g->node == UINT32_MAX ? PFI_TOPO_NONE : g->node,
                      g->p, g->q, g->dw, g->kw, g->val, value);
            if (site_pos && rem[nn] <= 0)
                return;
        }
    }
}

/* The tree oracle's scratch memory, kept between calls (pfi_allocate_tree_ws). */
struct pfi_alloc_tree_workspace {
    pfi_alloc_workspace *w; /* the flat allocator's per-job preparation */
    tree_seg *seg;
    uint64_t *keys; /* 2 per segment */
    uint32_t *ord, *tmp;
    size_t *count; /* 2 × RADIX_SIZE */
    double *jband, *rem, *xs, *ys;
    tree_pos *pos;
    size_t *idx;
    tree_bseg *bs;        /* the segments by bucket (greedy_bucketed) */
    tree_kp *kp;          /* one bucket's keys, and scratch: 2 per segment */
    double *ss, *sw;      /* tree_thresholds: slopes and widths of the segments by level */
    double *jsl, *jw;     /* the same in job order (one kind of limit: its widths) */
    size_t *sbeg, *tie;   /* each job's first segment (n + 1); the segments at a threshold
                             (3 each: segment, job, candidate it starts from) */
    uint32_t *sq;         /* the greedy by thresholds: the candidate each segment ends at */
    size_t *nz;           /* per level: 7 × (levels + 2); tree_fast: 8 × */
    double *nd;           /* per level: 4 × (levels + 1); tree_fast: 7 × */
    double *smp;          /* tree_select's sample: 2 × SELECT_SAMPLE */
    double *hist;         /* tree_fast: each level's histogram of slope buckets */
    uint8_t *hb;          /* tree_fast: each segment's bucket, job order */
    uint64_t *hm;         /* tree_fast: each level's mask of binding buckets (HIST_WORDS each) */
    struct tree_hit *hit; /* tree_fast: the segments in a binding bucket, by level */
    uint64_t *hq;         /* tree_fast: the same listed (job | segment << 32), job order */
    bool no_fast;         /* never tree_fast (tests: the general path on the same instance) */
    bool took_fast;       /* the last call ended in tree_fast (tests) */
    bool last_flat;       /* the last call took the flat optimum (tree_flat_first) */
    bool last_inner;      /* the last call's greedy found an inner level binding */
    size_t n_seg, n_keys, n_ord, n_tmp, n_count, n_jband, n_rem, n_xs, n_ys, n_pos, n_idx, n_bs,
        n_kp, n_ss, n_sw, n_sbeg, n_tie, n_nz, n_nd, n_smp, n_jsl, n_jw, n_sq, n_hist, n_hb, n_hm,
        n_hit, n_hq;
};

pfi_error pfi_alloc_tree_workspace_create(pfi_alloc_tree_workspace **out)
{
    if (out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    *out = NULL;
    pfi_alloc_tree_workspace *ws = pfi_calloc(1, sizeof *ws);
    if (ws == NULL)
        return PFI_ERR_NOMEM;
    pfi_error e = pfi_alloc_workspace_create(&ws->w);
    if (e != PFI_OK) {
        pfi_free(ws);
        return e;
    }
    *out = ws;
    return PFI_OK;
}

void pfi_alloc_tree_workspace_destroy(pfi_alloc_tree_workspace *ws)
{
    if (ws == NULL)
        return;
    pfi_alloc_workspace_destroy(ws->w);
    void *ptrs[] = {ws->seg, ws->keys, ws->ord,  ws->tmp, ws->count, ws->jband, ws->rem,
                    ws->xs,  ws->ys,   ws->pos,  ws->idx, ws->bs,    ws->kp,    ws->ss,
                    ws->sw,  ws->sbeg, ws->tie,  ws->nz,  ws->nd,    ws->smp,   ws->jsl,
                    ws->jw,  ws->sq,   ws->hist, ws->hb,  ws->hm,    ws->hit,   ws->hq};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        pfi_free(ptrs[i]);
    pfi_free(ws);
}

#define TREE_GROW(ws, f, need) tree_grow((void **)&(ws)->f, &(ws)->n_##f, (need), sizeof *(ws)->f)

/*
 * The threshold of capacity cap among segments (slope sl[i], width wd[i], i < m; total: the
 * sum of the widths): λ such that the segments above it are at most cap wide and those at or
 * above it at least; on return they are in front, [0, *n_gt) above λ (*w_gt wide), then those
 * at λ. -∞ (every segment above, *n_gt = m) when all of them fit. Quickselect (a pivot as
 * pfi_alloc_select's, median of three at random), each round one or two passes without a
 * branch on the data (the segments above the pivot moved to the front, then, only when the
 * capacity does not run out there, those equal to it): expected O(m). (Was a three-way
 * partition whose branches the processor could not predict: same λ, the widths summed in
 * another order.)
 */
static double tree_select_all(double *sl, double *wd, size_t m, double total, double cap,
                              size_t *n_gt, double *w_gt)
{
    if (m == 0 || total <= cap) {
        *n_gt = m;
        *w_gt = total;
        return -INFINITY;
    }
    size_t lo = 0, hi = m;
    double acc = 0;
    uint64_t state = 0x9E3779B97F4A7C15ull ^ (uint64_t)m;
    for (;;) {
        size_t n = hi - lo;
        double pivot = alloc_pivot3(sl, lo, n, &state);
        double wg, we;
        size_t gt = alloc_part_front(sl, wd, lo, hi, pivot, true, &wg);
        if (acc + wg > cap) {
            hi = gt;
        } else {
            size_t eq = alloc_part_front(sl, wd, gt, hi, pivot, false, &we);
            if (acc + wg + we >= cap) {
                *n_gt = gt;
                *w_gt = acc + wg;
                return pivot;
            }
            acc += wg + we;
            lo = eq;
        }
        if (lo >= hi) { /* only by rounding (the sums' order): all of the rest fits */
            *n_gt = lo;
            *w_gt = acc;
            return pivot;
        }
    }
}

/* tree_select on many segments: their threshold bracketed from a sample first */
#define SELECT_SAMPLE 4096
#define SELECT_MIN (8 * SELECT_SAMPLE)
#define SELECT_MARGIN 0.03

/*
 * tree_select_all's result (the same threshold and arrangement, but for the rounding of the
 * widths' sums), for m of at least SELECT_MIN segments from a bracket: the threshold of a
 * sample of SELECT_SAMPLE segments (every m / SELECT_SAMPLE-th, widths scaled) at cap ∓
 * SELECT_MARGIN of the total gives [lo, hi]; one pass puts the segments above hi in front
 * and those below lo at the back, and when the threshold lies in the bracket (the width
 * above hi fits, the width down to lo does not) only those inside it are selected; otherwise
 * all of them. smp: 2 × SELECT_SAMPLE scratch.
 */
static double tree_select(double *sl, double *wd, size_t m, double total, double cap, size_t *n_gt,
                          double *w_gt, double *smp)
{
    if (m < SELECT_MIN || total <= cap)
        return tree_select_all(sl, wd, m, total, cap, n_gt, w_gt);
    size_t stride = m / SELECT_SAMPLE, ns = 0;
    double *ssl = smp, *swd = smp + SELECT_SAMPLE, st = 0;
    for (size_t i = 0; i < m && ns < SELECT_SAMPLE; i += stride, ns++) {
        ssl[ns] = sl[i];
        swd[ns] = wd[i] * (double)stride;
        st += swd[ns];
    }
    size_t dn;
    double dw, eps = SELECT_MARGIN * total;
    double hi = cap - eps > 0 ? tree_select_all(ssl, swd, ns, st, cap - eps, &dn, &dw) : INFINITY;
    double lo = tree_select_all(ssl, swd, ns, st, cap + eps, &dn, &dw);
    if (!(lo < hi) || lo == -INFINITY)
        return tree_select_all(sl, wd, m, total, cap, n_gt, w_gt);
    /* [0, a): above hi; [a, i): inside; [b, m): below lo */
    size_t a = 0, i = 0, b = m;
    double w_above = 0, w_in = 0;
    while (i < b) {
        double v = sl[i], w = wd[i];
        if (v > hi) {
            w_above += w;
            sl[i] = sl[a];
            wd[i] = wd[a];
            sl[a] = v;
            wd[a] = w;
            a++;
            i++;
        } else if (v < lo) {
            b--;
            sl[i] = sl[b];
            wd[i] = wd[b];
            sl[b] = v;
            wd[b] = w;
        } else {
            w_in += w;
            i++;
        }
    }
    if (!(w_above <= cap && w_above + w_in >= cap))
        return tree_select_all(sl, wd, m, total, cap, n_gt, w_gt);
    double lam = tree_select_all(sl + a, wd + a, b - a, w_in, cap - w_above, n_gt, w_gt);
    if (lam == -INFINITY) { /* by rounding: everything inside fits; the threshold is below */
        return tree_select_all(sl, wd, m, total, cap, n_gt, w_gt);
    }
    *n_gt += a;
    *w_gt += w_above;
    return lam;
}

/*
 * A level's selection over its m surviving segments (sl, wd; *tot their width, W) under cap
 * (W): *sat its threshold (tree_select's; -∞ when all fit), and the survivors in front; the
 * capacity left at the threshold kept as one segment of that slope after them, standing for
 * the segments at it (none when every one was kept, by rounding only: then the range has no
 * room after it, the next sibling's first survivor is there). *tot: the survivors' width.
 * Returns how many survivors the level hands up (at most m).
 */
static size_t tree_level_select(double *sl, double *wd, size_t m, double *tot, double cap,
                                double *smp, double *sat)
{
    size_t ngt;
    double wgt;
    *sat = tree_select(sl, wd, m, *tot, cap, &ngt, &wgt, smp);
    if (!(*sat > -INFINITY))
        return m;
    bool at = ngt < m;
    *tot = wgt;
    if (cap > wgt && at) { /* what it has left at the threshold */
        sl[ngt] = *sat;
        wd[ngt++] = cap - wgt;
        *tot = cap;
    }
    return ngt;
}

/*
 * The levels' children in CSR (cbeg: nn + 2 entries, kids: nn; the site, index nn, has the
 * levels without a parent) and the depth-first order from the site, children in order (pre:
 * nn + 1 entries, also the walk's stack, growing down from its end). cur: nn + 1 entries of
 * scratch. Returns the number of entries in pre (nn + 1).
 */
static size_t tree_preorder(const pfi_alloc_tree *t, size_t *cbeg, size_t *kids, size_t *pre,
                            size_t *cur)
{
    size_t nn = t->n_nodes, site = nn;
    memset(cbeg, 0, (nn + 2) * sizeof *cbeg);
    for (size_t a = 0; a < nn; a++)
        cbeg[level_up(t, a) + 1]++;
    for (size_t a = 0; a <= nn; a++)
        cbeg[a + 1] += cbeg[a];
    for (size_t a = 0; a <= nn; a++)
        cur[a] = cbeg[a];
    for (size_t a = 0; a < nn; a++)
        kids[cur[level_up(t, a)]++] = a;
    size_t np = 0, top = 1;
    pre[nn] = site;
    while (top > 0) {
        size_t a = pre[nn + 1 - top];
        top--;
        pre[np++] = a;
        for (size_t k = cbeg[a + 1]; k-- > cbeg[a];)
            pre[nn + 1 - ++top] = kids[k];
    }
    return np;
}

/*
 * The oracle's greedy on a tree whose limits are all of one kind (every level and the site
 * count caps, or all drawn watts; widths of the segments in that unit), without bands, by
 * thresholds instead of a sort (issue 18 item 3: 100 000 jobs, 4 levels, inner levels
 * binding). The greedy takes the segments in descending slope, each as far as every ancestor
 * allows; a level a fills at some slope s_a (−∞: never) and a job stops at the highest s of
 * its ancestors, θ_j: it takes every segment above θ_j, none below, and its segments at θ_j
 * in part. Bottom-up, each level's s_a is a selection over the segments of its subtree that
 * can still move: its own jobs' segments and what its children pass up — a child that fills
 * passes up only its segments above s_c, and one of slope s_c as wide as what it has left
 * there, so that its use is its limit below s_c and its jobs' above. The segments of a
 * subtree lie in one range of ss/sw (levels in depth-first order, each level's own jobs
 * first), so a child's survivors are moved down next to its siblings' and selected in place.
 * Then θ_j top-down, every segment above θ_j taken (rem charged, in one pass up the levels),
 * and the segments at their job's θ_j — few — taken in the greedy's order (slope descending,
 * then job order) by its own step (tree_take), as far as every ancestor's remaining capacity
 * allows. The same allocation as the sorted greedy, but for rounding: rem is summed in
 * another order (results within 1e-9 relative in bench/alloc_diff.sh). O(S × depth) for S
 * segments, no sort. rem: after the lowest points; pos: at the lowest points. *inner set
 * when a level other than the site fills no later (at no lower slope) than those above it.
 */
static pfi_error tree_thresholds(const alloc_ctx *x, const pfi_alloc_tree *t,
                                 pfi_alloc_tree_workspace *ws, size_t ns, double *rem,
                                 tree_pos *pos, bool *inner)
{
    const uint32_t *sq = ws->sq;
    const pfi_alloc_jobs *J = x->J;
    size_t n = J->n, nn = t->n_nodes, site = nn;
    const double *jsl = ws->jsl, *jw = ws->jw;
    if (!TREE_GROW(ws, ss, ns) || !TREE_GROW(ws, sw, ns) || !TREE_GROW(ws, nz, 7 * (nn + 2)) ||
        !TREE_GROW(ws, nd, 4 * (nn + 1)) || !TREE_GROW(ws, smp, 2 * SELECT_SAMPLE))
        return PFI_ERR_NOMEM;
    double *sl = ws->ss, *wd = ws->sw;
    const size_t *sbeg = ws->sbeg;
    size_t *cbeg = ws->nz, *kids = cbeg + nn + 2, *pre = kids + nn + 1, *own = pre + nn + 1;
    size_t *sub = own + nn + 1, *start = sub + nn + 1, *live = start + nn + 1;
    double *sat = ws->nd, *eff = sat + nn + 1, *acc = eff + nn + 1, *tot = acc + nn + 1;
    size_t np = tree_preorder(t, cbeg, kids, pre, live);
    /* each level's own segments, its subtree's, and where its range starts */
    memset(own, 0, (nn + 1) * sizeof *own);
    for (size_t j = 0; j < n; j++) {
        own[job_slot(t, j)] += sbeg[j + 1] - sbeg[j];
    }
    for (size_t a = 0; a <= nn; a++)
        sub[a] = own[a];
    for (size_t k = np; k-- > 1;) {
        size_t a = pre[k];
        sub[level_up(t, a)] += sub[a];
    }
    start[site] = 0;
    for (size_t k = 0; k < np; k++) {
        size_t a = pre[k], cur = start[a] + own[a];
        for (size_t c = cbeg[a]; c < cbeg[a + 1]; c++) {
            start[kids[c]] = cur;
            cur += sub[kids[c]];
        }
    }
    for (size_t a = 0; a <= nn; a++) {
        live[a] = start[a]; /* fill cursors */
        tot[a] = 0;
    }
    for (size_t j = 0; j < n; j++) {
        size_t a = job_slot(t, j);
        double w = 0;
        size_t k = live[a];
        for (size_t s = sbeg[j]; s < sbeg[j + 1]; s++, k++) {
            sl[k] = jsl[s];
            wd[k] = jw[s];
            w += jw[s];
        }
        live[a] = k;
        tot[a] += w;
    }
    /* bottom up: each level's survivors and threshold */
    for (size_t k = np; k-- > 0;) {
        size_t a = pre[k], m = own[a];
        for (size_t c = cbeg[a]; c < cbeg[a + 1]; c++) {
            size_t b = kids[c], to = start[a] + m;
            if (live[b] > 0 && start[b] != to) {
                memmove(sl + to, sl + start[b], live[b] * sizeof *sl);
                memmove(wd + to, wd + start[b], live[b] * sizeof *wd);
            }
            m += live[b];
            tot[a] += tot[b];
        }
        sat[a] = -INFINITY;
        if (a == site || isfinite(t->limit_w[a])) {
            double cap = rem[a] > 0 ? rem[a] : 0;
            m = tree_level_select(sl + start[a], wd + start[a], m, &tot[a], cap, ws->smp, &sat[a]);
        }
        live[a] = m;
    }
    /* each job's θ: the highest threshold above it */
    for (size_t k = 0; k < np; k++) {
        size_t a = pre[k];
        size_t up = a == site ? site : level_up(t, a);
        eff[a] = a == site ? sat[a] : fmax(sat[a], eff[up]);
        acc[a] = 0;
        if (a != site && sat[a] > -INFINITY && sat[a] >= eff[up])
            *inner = true; /* it fills no later than every level above it */
    }
    /* every segment above its job's θ, the ones at it listed */
    size_t nt = 0;
    size_t *tie = ws->tie;
    for (size_t j = 0; j < n; j++) {
        size_t a = job_slot(t, j);
        double th = eff[a], w = 0;
        size_t s = sbeg[j];
        for (; s < sbeg[j + 1] && jsl[s] > th; s++)
            w += jw[s];
        if (s > sbeg[j])
            pos[j].at = pos[j].nx = sq[s - 1];
        for (; s < sbeg[j + 1] && jsl[s] == th; s++, nt++) {
            tie[3 * nt] = s;
            tie[3 * nt + 1] = j;
            tie[3 * nt + 2] = s > sbeg[j] ? sq[s - 1] : pos[j].at; /* where it starts */
        }
        acc[a] += w;
    }
    for (size_t k = np; k-- > 0;) {
        size_t a = pre[k];
        rem[a] -= acc[a];
        if (a != site)
            acc[level_up(t, a)] += acc[a];
    }
    /* the segments at the thresholds, in the greedy's order: slope descending, then job order
       (a stable sort by key of the list, which is in segment order) */
    if (!TREE_GROW(ws, kp, 2 * nt))
        return PFI_ERR_NOMEM;
    tree_kp *kp = ws->kp;
    for (size_t u = 0; u < nt; u++) {
        kp[u].key = ~order_bits(jsl[tie[3 * u]]); /* as the sorted greedy's keys */
        kp[u].i = (uint32_t)u;
    }
    kp_merge_sort(kp, kp + nt, nt);
    for (size_t u = 0; u < nt; u++) {
        const size_t *g = &tie[3 * kp[u].i];
        size_t j = g[1], p = g[2], q = sq[g[0]];
        alloc_view v = alloc_true_view(x, j);
        double gp = alloc_opt(J->gpus, j, 1.0);
        double dummy = 0; /* the caller sums the value from pos */
        /* the segment's widths and value as the segment loop of tree_oracle makes them */
        tree_take(t, nn, rem, pos, (uint32_t)j, job_node(t, j), (uint32_t)p, (uint32_t)q,
                  v.d[q] - v.d[p], gp * (v.c[q] - v.c[p]), v.wt * v.t[q] - v.wt * v.t[p], &dummy);
    }
    return PFI_OK;
}

/* Whether every level (and the site, rem[nn]) holds its jobs at their lowest caps: rem (length
   nn + 1, W) is what each has left there. When one cannot, d says which (PFI_OK: an infeasible
   level is a result, not an error): the site budget if it is short, else the level short by the
   most watts, and how many levels are short (was the first in file order, not the worst, and
   none of the others). */
static bool tree_feasible(const pfi_alloc_tree *t, double budget_w, const double *rem, pfi_diag *d)
{
    size_t nn = t->n_nodes, n_short = 0, worst = SIZE_MAX;
    for (size_t a = 0; a < nn; a++)
        if (rem[a] < -1e-9 * (1 + fabs(t->limit_w[a]))) {
            n_short++;
            if (worst == SIZE_MAX || rem[a] < rem[worst])
                worst = a;
        }
    char more[96] = "";
    if (rem[nn] < -1e-9 * (1 + fabs(budget_w))) {
        if (n_short > 0)
            snprintf(more, sizeof more, "; %zu level%s short too", n_short, n_short > 1 ? "s" : "");
        tree_fail(d, PFI_OK,
                  "the site budget %.1f W (%s) is below the least the jobs can take (%.1f W)%s: "
                  "every job stays at its lowest cap",
                  budget_w, pfi_limit_kind_name(t->budget_kind), budget_w - rem[nn], more);
        return false;
    }
    if (worst == SIZE_MAX)
        return true;
    if (n_short > 1)
        snprintf(more, sizeof more, ", the most of %zu levels short", n_short);
    double lim = t->limit_w[worst];
    tree_fail(d, PFI_OK,
              "%s: its %s limit %.1f W is below the least its jobs can take at their lowest caps "
              "(%.1f W, %.1f W short%s): its jobs stay there",
              where(t, worst).s, pfi_limit_kind_name(t->kind[worst]), lim, lim - rem[worst],
              -rem[worst], more);
    return false;
}

/* A curve's caps c[0..k) as pfi_curve_check wants them: finite, > 0, strictly rising. */
static inline bool tree_caps_ok(const double *c, size_t k)
{
    int ok = isfinite(c[0]) & (c[0] > 0);
    for (size_t i = 1; i < k; i++)
        ok &= isfinite(c[i]) & (c[i] > c[i - 1]);
    return ok;
}

/*
 * Job j's preparation for the greedy by thresholds on drawn watts, when it is the common
 * case: no cap bounds or floor, a curve that passes alloc_job_prepare's checks (pfi_curve_check
 * without violations, at most ALLOC_MAX_CANDIDATES_PER_JOB points) and is its own envelope
 * (alloc_job_envelope's test: power rising, turn() < 0, no rounded slope that rises): true,
 * and the job's slopes (alloc_slope's expression) and widths in sl[k - 1] and wd[k - 1]; its
 * curve: k points from a0. The caller sets the workspace as alloc_job_prepare would (kind 0:
 * its own curve, its own envelope). Without caps, the caps are left to the caller
 * (tree_caps_ok). False otherwise (sl and wd may be written: the caller then runs
 * alloc_job_prepare, which says why or stores the envelope). The same decisions from the
 * same expressions, in one pass over the curve instead of four.
 */
static inline __attribute__((always_inline)) bool tree_fast_job(const pfi_alloc_jobs *J, size_t j,
                                                                size_t a0, size_t k, double *sl,
                                                                double *wd, bool caps)
{
    if (k == 0 || k > ALLOC_MAX_CANDIDATES_PER_JOB || !isnan(alloc_opt(J->cap_lo_w, j, NAN)) ||
        !isnan(alloc_opt(J->cap_hi_w, j, NAN)) || alloc_opt(J->floor_frac, j, 0.0) != 0.0)
        return false;
    const double *c = J->cap_w + a0, *D = J->power_w + a0, *T = J->tput_tok_s + a0;
    double wt = alloc_opt(J->weight, j, 1.0);
    int ok =
        isfinite(D[0]) & isfinite(T[0]) & (D[0] > 0) & (T[0] >= 0) & (!caps || tree_caps_ok(c, k));
    for (size_t i = 1; i < k; i++) {
        ok &= isfinite(D[i]) & isfinite(T[i]) & (D[i] > D[i - 1]) & (T[i] >= T[i - 1]);
        double s = (wt * T[i] - wt * T[i - 1]) / (D[i] - D[i - 1]);
        sl[i - 1] = s;
        wd[i - 1] = D[i] - D[i - 1];
        if (i >= 2) {
            double ax = D[i - 2], ay = wt * T[i - 2], bx = D[i - 1], by = wt * T[i - 1];
            double cx = D[i], cy = wt * T[i];
            ok &= ((bx - ax) * (cy - ay) - (by - ay) * (cx - ax) < 0) & !(s > sl[i - 2]);
        }
    }
    return ok;
}

/* The greedy's thresholds by histogram (tree_fast): each level's survivors counted by slope in
   HIST_BUCKETS buckets, fewer (halved down to HIST_MIN_BUCKETS) where the levels are many, so
   that the histograms stay within HIST_CELLS cells or twice the segments; a tree that needs
   more takes the general path. The buckets split the range of a sample of HIST_SAMPLE jobs'
   slopes evenly in their order_bits, one bucket left at each end for the slopes outside it. */
#define HIST_BUCKETS 128               /* 256: fewer segments to list, more histogram: slower */
#define HIST_WORDS (HIST_BUCKETS / 64) /* a level's mask of buckets: HIST_BUCKETS bits */
#define HIST_MIN_BUCKETS 16
#define HIST_CELLS (1u << 17)
#define HIST_SAMPLE 1024

/* One segment in the bucket of a level that binds on its path (tree_fast): its slope and
   width, its job's level (by depth-first index) and its bucket, HIT_DEAD set once a level below
   the one being refined has not passed it (hist_passes' test, made once a level). */
#define HIT_DEAD (UINT32_C(1) << 31)
typedef struct tree_hit {
    double v, w;
    uint32_t lv, b;
} tree_hit;

/* The bucket of slope v: 0 below the sample's range (kmin), 1 + (order_bits − kmin) >> sh
   inside it, nb − 1 above. */
static inline unsigned hist_bucket(double v, uint64_t kmin, int sh, unsigned nb)
{
    uint64_t k = order_bits(v);
    if (k < kmin)
        return 0;
    uint64_t b = ((k - kmin) >> sh) + 1;
    return b < nb ? (unsigned)b : nb - 1;
}

/* Whether a survivor of slope v in bucket b at level e's parent side passes every level from e
   up to (not including) level a: a level whose threshold's bucket is above b keeps nothing in
   b; one in b keeps only what lies above its threshold (bk: each level's bucket, SIZE_MAX when
   it does not bind). */
static inline bool hist_passes(const pfi_alloc_tree *t, const size_t *bk, const double *sat,
                               size_t e, size_t a, size_t b, double v)
{
    for (size_t x = e; x != a; x = level_up(t, x)) {
        if (bk[x] == SIZE_MAX)
            continue;
        if (bk[x] > b || (bk[x] == b && !(v > sat[x])))
            return false;
    }
    return true;
}

/* What the first pass of tree_fast fills and sums (hist_pass). */
typedef struct hist_io {
    double *hist;  /* (levels + 1) rows of nb */
    uint8_t *hb;   /* each segment's bucket, job order */
    double *d0;    /* each level's own jobs' lowest power */
    double lo_p;   /* Σ lowest power, job order */
    double top_p;  /* Σ top power, job order (as tree_ref_hint sums it) */
    uint64_t kmin; /* hist_bucket's range */
    int sh;
    unsigned nb;
} hist_io;

/* Job j's slopes sl and widths wd (k − 1 each) into its level's row, their buckets kept from
   hb + s0; its lowest and top power (lo, hi) summed. The widths of a run of segments in one bucket
   are summed first, then added to the row (slopes fall along a curve: a bucket's segments follow
   each other). False when a slope is not finite (an overflowing product: the general path). */
static inline __attribute__((always_inline)) bool hist_put(const pfi_alloc_tree *t, hist_io *io,
                                                           size_t j, size_t s0, const double *sl,
                                                           const double *wd, size_t k, double lo,
                                                           double hi)
{
    size_t a = job_slot(t, j), nb = io->nb;
    double *row = io->hist + a * nb, run = 0;
    size_t bp = nb;
    int fin = 1;
    for (size_t i = 0; i + 1 < k; i++) {
        fin &= isfinite(sl[i]);
        size_t b = hist_bucket(sl[i], io->kmin, io->sh, io->nb);
        io->hb[s0 + i] = (uint8_t)b;
        if (b != bp) {
            if (bp < nb)
                row[bp] += run;
            bp = b;
            run = 0;
        }
        run += wd[i];
    }
    if (bp < nb)
        row[bp] += run;
    io->d0[a] += lo;
    io->lo_p += lo;
    io->top_p += hi;
    return fin;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TREE_SIMD 1
#define TREE_SIMD_TARGET "avx512f,avx512dq"
#define TREE_K 6 /* the curve length the pass takes eight at a time: the usual cap sweep */
/* The pass asks for the curves of the jobs this many ahead (the flat pass's PREFETCH_JOBS). */
#define TREE_PREFETCH 32

/*
 * Jobs j .. j + 7 (TREE_K points each, one after the other) as tree_fast_job (its caps left
 * to theta_pass) and hist_put take them, point i of the eight curves in one register so that each
 * lane does the scalar expressions' IEEE operations (the same bits); their buckets by hist_bucket's
 * arithmetic. False when a lane fails a check or has a bound, a floor or a slope that is not
 * finite (the caller then takes the eight one by one, and the scalar code says).
 */
__attribute__((target(TREE_SIMD_TARGET))) static inline bool
hist_block8(const pfi_alloc_jobs *J, const pfi_alloc_tree *t, hist_io *io, size_t j, size_t s0)
{
    enum { M = TREE_K - 1 };
    size_t a = J->offset[j];
    const __m512d zero = _mm512_setzero_pd(), inf = _mm512_set1_pd(INFINITY);
    __m512d P[TREE_K], T[TREE_K], WT[TREE_K], SL[M], WD[M];
    alloc_gather8(J->power_w + a, TREE_K, P);
    alloc_gather8(J->tput_tok_s + a, TREE_K, T);
    __m512d W = alloc_opt8(J->weight, j, 1.0);
    /* |x| < inf: finite (false on NaN) */
    const __m512d absm = _mm512_castsi512_pd(_mm512_set1_epi64(INT64_MAX));
#define FIN(v) _mm512_cmp_pd_mask(_mm512_and_pd(v, absm), inf, _CMP_LT_OQ)
    __mmask8 ok = FIN(P[0]) & FIN(T[0]) & _mm512_cmp_pd_mask(P[0], zero, _CMP_GT_OQ) &
                  _mm512_cmp_pd_mask(T[0], zero, _CMP_GE_OQ);
    for (int i = 0; i < TREE_K; i++)
        WT[i] = _mm512_mul_pd(W, T[i]);
    for (int i = 1; i < TREE_K; i++) {
        ok &= FIN(P[i]) & FIN(T[i]) & _mm512_cmp_pd_mask(P[i], P[i - 1], _CMP_GT_OQ) &
              _mm512_cmp_pd_mask(T[i], T[i - 1], _CMP_GE_OQ);
        WD[i - 1] = _mm512_sub_pd(P[i], P[i - 1]);
        SL[i - 1] = _mm512_div_pd(_mm512_sub_pd(WT[i], WT[i - 1]), WD[i - 1]);
        ok &= FIN(SL[i - 1]);
        if (i >= 2) { /* turn() < 0 and no rounded slope that rises */
            __m512d cr = _mm512_sub_pd(
                _mm512_mul_pd(_mm512_sub_pd(P[i - 1], P[i - 2]), _mm512_sub_pd(WT[i], WT[i - 2])),
                _mm512_mul_pd(_mm512_sub_pd(WT[i - 1], WT[i - 2]), _mm512_sub_pd(P[i], P[i - 2])));
            ok &= _mm512_cmp_pd_mask(cr, zero, _CMP_LT_OQ) &
                  ~_mm512_cmp_pd_mask(SL[i - 1], SL[i - 2], _CMP_GT_OQ);
        }
    }
#undef FIN
    const double *opt[2] = {J->cap_lo_w, J->cap_hi_w};
    for (int i = 0; i < 2; i++)
        if (opt[i] != NULL) { /* a cap bound not NaN: the general path */
            __m512d v = _mm512_loadu_pd(opt[i] + j);
            ok &= _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q);
        }
    if (J->floor_frac != NULL) { /* a floor not NaN nor 0 */
        __m512d v = _mm512_loadu_pd(J->floor_frac + j);
        ok &= _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q) | _mm512_cmp_pd_mask(v, zero, _CMP_EQ_OQ);
    }
    if (ok != 0xFF)
        return false;
    /* the buckets: order_bits, then hist_bucket */
    const __m512i top = _mm512_set1_epi64((long long)(UINT64_C(1) << 63));
    const __m512i kmin = _mm512_set1_epi64((long long)io->kmin), one = _mm512_set1_epi64(1);
    const __m512i last = _mm512_set1_epi64((long long)io->nb - 1);
    const __m128i sh = _mm_cvtsi32_si128(io->sh);
    uint64_t bk[M][8];
    double wd[M][8], d0[8], dm[8];
    for (int i = 0; i < M; i++) {
        __m512i bits = _mm512_castpd_si512(SL[i]);
        __mmask8 neg = _mm512_cmplt_epi64_mask(bits, _mm512_setzero_si512());
        __m512i key = _mm512_mask_mov_epi64(_mm512_or_si512(bits, top), neg,
                                            _mm512_xor_si512(bits, _mm512_set1_epi64(-1)));
        __mmask8 below = _mm512_cmplt_epu64_mask(key, kmin);
        __m512i b = _mm512_add_epi64(_mm512_srl_epi64(_mm512_sub_epi64(key, kmin), sh), one);
        b = _mm512_maskz_mov_epi64((__mmask8)~below, _mm512_min_epu64(b, last));
        _mm512_storeu_si512(bk[i], b);
        _mm512_storeu_pd(wd[i], WD[i]);
    }
    _mm512_storeu_pd(d0, P[0]);
    _mm512_storeu_pd(dm, P[M]);
    /* hist_put's bookkeeping, job by job in job order (the sums in registers: through io, a
       chain of stores and loads, a store-to-load forwarding a job, was half the pass) */
    size_t nb = io->nb;
    double lo_p = io->lo_p, top_p = io->top_p;
    for (int q = 0; q < 8; q++) {
        size_t aq = job_slot(t, j + (size_t)q);
        double *row = io->hist + aq * nb, run = 0;
        size_t bp = nb;
        uint8_t *h = io->hb + s0 + (size_t)M * (size_t)q;
        for (int i = 0; i < M; i++) {
            size_t b = bk[i][q];
            h[i] = (uint8_t)b;
            if (b != bp) {
                if (bp < nb)
                    row[bp] += run;
                bp = b;
                run = 0;
            }
            run += wd[i][q];
        }
        row[bp] += run;
        io->d0[aq] += d0[q];
        lo_p += d0[q];
        top_p += dm[q];
    }
    io->lo_p = lo_p;
    io->top_p = top_p;
    return true;
}
#else
#define TREE_SIMD 0
#endif

/*
 * tree_fast's first pass over the jobs, job order: each job checked (tree_fast_job; its caps in
 * theta_pass, which reads them),
 * its segments into its level's histogram row and their buckets kept (hist_put), eight jobs
 * of TREE_K points at a time where simd (hist_block8; the same bits). sl, wd: scratch of the
 * longest curve's points. False when a job is not tree_fast's case.
 */
static inline __attribute__((always_inline)) bool hist_pass_body(const pfi_alloc_jobs *J,
                                                                 const pfi_alloc_tree *t,
                                                                 hist_io *io, double *sl,
                                                                 double *wd, bool simd)
{
    const size_t *off = J->offset;
    size_t n = J->n, s0 = 0;
    for (size_t j = 0; j < n;) {
#if TREE_SIMD
        if (simd && j + 8 <= n) {
            int seq = 1;
            for (size_t q = 0; q < 8; q++)
                seq &= off[j + q + 1] - off[j + q] == TREE_K;
            if (seq && j + TREE_PREFETCH + 8 <= n) { /* as the flat pass (PREFETCH_JOBS) */
                size_t f = off[j + TREE_PREFETCH];
                for (size_t o = 0; o < TREE_K * 8; o += 8) {
                    __builtin_prefetch(J->power_w + f + o);
                    __builtin_prefetch(J->tput_tok_s + f + o);
                }
            }
            if (seq && hist_block8(J, t, io, j, s0)) {
                s0 += 8 * (TREE_K - 1);
                j += 8;
                continue;
            }
        }
#else
        (void)simd;
#endif
        size_t a0 = off[j], k = off[j + 1] - a0;
        if (!tree_fast_job(J, j, a0, k, sl, wd, false) ||
            !hist_put(t, io, j, s0, sl, wd, k, J->power_w[a0], J->power_w[a0 + k - 1]))
            return false;
        s0 += k - 1;
        j++;
    }
    return true;
}

static bool hist_pass_plain(const pfi_alloc_jobs *J, const pfi_alloc_tree *t, hist_io *io,
                            double *sl, double *wd)
{
    return hist_pass_body(J, t, io, sl, wd, false);
}

#if TREE_SIMD
__attribute__((target(TREE_SIMD_TARGET))) static bool hist_pass_simd(const pfi_alloc_jobs *J,
                                                                     const pfi_alloc_tree *t,
                                                                     hist_io *io, double *sl,
                                                                     double *wd)
{
    return hist_pass_body(J, t, io, sl, wd, true);
}
#endif

/* tree_fast's first pass (hist_pass_body), eight jobs at a time where the CPU has AVX-512 and
   no_simd is not set. */
static bool hist_pass(const pfi_alloc_jobs *J, const pfi_alloc_tree *t, hist_io *io, double *sl,
                      double *wd, bool no_simd)
{
#if TREE_SIMD
    __builtin_cpu_init();
    if (!no_simd && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
        return hist_pass_simd(J, t, io, sl, wd);
#endif
    (void)no_simd;
    return hist_pass_plain(J, t, io, sl, wd);
}

/* What tree_fast's pass at the thresholds reads and fills (theta_pass). */
typedef struct theta_io {
    const double *eff;   /* each level's θ (levels + 1) */
    double *acc;         /* each level's own jobs' width above θ, summed */
    tree_pos *pos;       /* each job's point */
    size_t *tie, nt;     /* the segments at θ: job, its candidates at the ends (3 each) */
    double ref_p, ref_t; /* Σ top power, Σ top tokens/s, job order */
    /* the jobs not at a threshold (the others added after the greedy's steps there), job
       order: Σ weighted tokens/s, power and tokens/s; each level's own Σ GPUs × cap and power */
    double value, tp, tt;
    double *own_k, *own_d;
} theta_io;

/* Job j's segments at θ (those from point s on whose slope equals it) listed. */
static inline void theta_ties(const pfi_alloc_jobs *J, theta_io *io, size_t j, size_t s, double th)
{
    size_t a0 = J->offset[j], k = J->offset[j + 1] - a0;
    const double *D = J->power_w + a0, *T = J->tput_tok_s + a0;
    double wt = alloc_opt(J->weight, j, 1.0);
    for (size_t q = s; q + 1 < k; q++) {
        double sv = (wt * T[q + 1] - wt * T[q]) / (D[q + 1] - D[q]);
        if (!(sv == th))
            break;
        io->tie[3 * io->nt] = j;
        io->tie[3 * io->nt + 1] = q;
        io->tie[3 * io->nt + 2] = q + 1;
        io->nt++;
    }
}

/* Job j at its last point above its θ (the segments above it are a prefix: slopes fall), its
   outputs there (place_job at a point, tree_marginals), the width it takes added to its
   level's, its segments at θ listed; false (r partly written) when its caps fail
   tree_caps_ok (the first pass left them). */
static inline __attribute__((always_inline)) bool theta_job(const pfi_alloc_jobs *J,
                                                            const pfi_alloc_tree *t, theta_io *io,
                                                            pfi_alloc_result *r, size_t j)
{
    size_t a0 = J->offset[j], k = J->offset[j + 1] - a0, a = job_slot(t, j);
    const double *c = J->cap_w + a0, *D = J->power_w + a0, *T = J->tput_tok_s + a0;
    if (!tree_caps_ok(c, k))
        return false;
    double wt = alloc_opt(J->weight, j, 1.0), th = io->eff[a], w = 0, sv = 0;
    double down = NAN, up = NAN; /* the slopes either side of point s */
    size_t s = 0;
    io->ref_p += D[k - 1];
    io->ref_t += T[k - 1];
    for (; s + 1 < k; s++) {
        sv = (wt * T[s + 1] - wt * T[s]) / (D[s + 1] - D[s]);
        if (!(sv > th))
            break;
        w += D[s + 1] - D[s];
        down = sv;
    }
    up = s + 1 < k ? sv : NAN;
    io->pos[j].at = io->pos[j].nx = (uint32_t)s;
    io->pos[j].fr = 0;
    if (s + 1 < k && sv == th) {
        theta_ties(J, io, j, s, th);
    } else {
        io->value += wt * T[s];
        io->tp += D[s];
        io->tt += T[s];
        io->own_k[a] += alloc_opt(J->gpus, j, 1.0) * c[s];
        io->own_d[a] += D[s];
    }
    io->acc[a] += w;
    r->cap_w[j] = c[s];
    r->power_w[j] = D[s];
    r->tput_tok_s[j] = T[s];
    r->shed_w[j] = D[k - 1] - D[s];
    tree_marginals_at(J, j, c, k, s, down, up, r);
    return true;
}

#if TREE_SIMD
/*
 * Jobs j .. j + 7 (TREE_K points each, one after the other, checked by the first pass) as
 * theta_job takes them, point i of the eight curves in one register: the same IEEE operations
 * lane by lane (the same bits); the sums, the lists and the rare cases (segments at θ, a cap
 * within tree_marginals' tolerance of the one before) job by job in job order. False (nothing
 * written) when a lane's caps fail tree_caps_ok.
 */
__attribute__((target(TREE_SIMD_TARGET))) static inline bool
theta_block8(const pfi_alloc_jobs *J, const pfi_alloc_tree *t, theta_io *io, pfi_alloc_result *r,
             size_t j)
{
    enum { M = TREE_K - 1 };
    size_t a = J->offset[j];
    const __m512d zero = _mm512_setzero_pd(), nan = _mm512_set1_pd(NAN);
    __m512d C[TREE_K], P[TREE_K], T[TREE_K], WT[TREE_K], SL[M];
    alloc_gather8(J->cap_w + a, TREE_K, C);
    alloc_gather8(J->power_w + a, TREE_K, P);
    alloc_gather8(J->tput_tok_s + a, TREE_K, T);
    __m512d W = alloc_opt8(J->weight, j, 1.0);
    __m512i lvl = _mm512_set1_epi64((long long)t->n_nodes);
    if (t->job_node != NULL) {
        __m512i v = _mm512_loadu_si512(t->job_node + j);
        lvl = _mm512_mask_mov_epi64(v, _mm512_cmpeq_epi64_mask(v, _mm512_set1_epi64(-1)), lvl);
    }
    /* tree_caps_ok: finite (|c| < inf, false on NaN), > 0, rising */
    const __m512d absm = _mm512_castsi512_pd(_mm512_set1_epi64(INT64_MAX)),
                  inf = _mm512_set1_pd(INFINITY);
    __mmask8 ok = _mm512_cmp_pd_mask(C[0], zero, _CMP_GT_OQ);
    for (int i = 0; i < TREE_K; i++) {
        ok &= _mm512_cmp_pd_mask(_mm512_and_pd(C[i], absm), inf, _CMP_LT_OQ);
        if (i > 0)
            ok &= _mm512_cmp_pd_mask(C[i], C[i - 1], _CMP_GT_OQ);
    }
    if (ok != 0xFF)
        return false;
    __m512d th = _mm512_i64gather_pd(lvl, io->eff, 8);
    for (int i = 0; i < TREE_K; i++)
        WT[i] = _mm512_mul_pd(W, T[i]);
    const __m512i one = _mm512_set1_epi64(1);
    __m512i s = _mm512_setzero_si512();
    __m512d w = zero;
    for (int i = 0; i < M; i++) {
        __m512d wd = _mm512_sub_pd(P[i + 1], P[i]);
        SL[i] = _mm512_div_pd(_mm512_sub_pd(WT[i + 1], WT[i]), wd);
        __mmask8 gt = _mm512_cmp_pd_mask(SL[i], th, _CMP_GT_OQ);
        s = _mm512_mask_add_epi64(s, gt, s, one);
        w = _mm512_add_pd(w, _mm512_maskz_mov_pd(gt, wd));
    }
    /* the outputs at point s; the cap before it (for tree_marginals_at's test) */
    __m512d cv = C[0], dv = P[0], tv = T[0], down = nan, up = SL[0], cb = C[0];
    for (int i = 1; i < TREE_K; i++) {
        __mmask8 e = _mm512_cmpeq_epi64_mask(s, _mm512_set1_epi64(i));
        cv = _mm512_mask_mov_pd(cv, e, C[i]);
        dv = _mm512_mask_mov_pd(dv, e, P[i]);
        tv = _mm512_mask_mov_pd(tv, e, T[i]);
        cb = _mm512_mask_mov_pd(cb, e, C[i - 1]);
        down = _mm512_mask_mov_pd(down, e, SL[i - 1]);
        up = _mm512_mask_mov_pd(up, e, i < M ? SL[i < M ? i : 0] : nan);
    }
    __mmask8 s0 = _mm512_cmpeq_epi64_mask(s, _mm512_setzero_si512());
    __mmask8 sm = _mm512_cmpeq_epi64_mask(s, _mm512_set1_epi64(M));
    __mmask8 ties = _mm512_cmp_pd_mask(up, th, _CMP_EQ_OQ); /* NaN at the top: never */
    __m512d tol = _mm512_mul_pd(_mm512_set1_pd(1e-9),
                                _mm512_add_pd(_mm512_set1_pd(1.0), _mm512_and_pd(cv, absm)));
    __mmask8 gen =
        (__mmask8)~s0 & (__mmask8)~_mm512_cmp_pd_mask(cb, _mm512_sub_pd(cv, tol), _CMP_LT_OQ);
    __mmask8 dn_nan = s0 | _mm512_cmp_pd_mask(cv, _mm512_add_pd(C[0], tol), _CMP_LE_OQ);
    __mmask8 up_nan = sm | _mm512_cmp_pd_mask(cv, _mm512_sub_pd(C[M], tol), _CMP_GE_OQ);
    _mm512_storeu_pd(r->cap_w + j, cv);
    _mm512_storeu_pd(r->power_w + j, dv);
    _mm512_storeu_pd(r->tput_tok_s + j, tv);
    _mm512_storeu_pd(r->shed_w + j, _mm512_sub_pd(P[M], dv));
    _mm512_storeu_pd(r->marginal_down + j, _mm512_mask_mov_pd(down, dn_nan, nan));
    _mm512_storeu_pd(r->marginal_up + j, _mm512_mask_mov_pd(up, up_nan, nan));
    __m512d G = alloc_opt8(J->gpus, j, 1.0);
    double l_w[8], l_pm[8], l_tm[8], l_th[8], l_y[8], l_dv[8], l_tv[8], l_kc[8];
    int64_t l_s[8], l_lv[8];
    _mm512_storeu_pd(l_y, _mm512_mul_pd(W, tv));
    _mm512_storeu_pd(l_dv, dv);
    _mm512_storeu_pd(l_tv, tv);
    _mm512_storeu_pd(l_kc, _mm512_mul_pd(G, cv));
    _mm512_storeu_pd(l_w, w);
    _mm512_storeu_pd(l_pm, P[M]);
    _mm512_storeu_pd(l_tm, T[M]);
    _mm512_storeu_si512(l_s, s);
    _mm512_storeu_si512(l_lv, lvl);
    if (ties)
        _mm512_storeu_pd(l_th, th);
    double ref_p = io->ref_p, ref_t = io->ref_t; /* in registers (hist_block8) */
    double value = io->value, tp = io->tp, tt = io->tt;
    for (int q = 0; q < 8; q++) {
        size_t jq = j + (size_t)q;
        ref_p += l_pm[q];
        ref_t += l_tm[q];
        io->pos[jq].at = io->pos[jq].nx = (uint32_t)l_s[q];
        io->pos[jq].fr = 0;
        if ((ties >> q) & 1) {
            theta_ties(J, io, jq, (size_t)l_s[q], l_th[q]);
        } else {
            value += l_y[q];
            tp += l_dv[q];
            tt += l_tv[q];
            io->own_k[l_lv[q]] += l_kc[q];
            io->own_d[l_lv[q]] += l_dv[q];
        }
        io->acc[l_lv[q]] += l_w[q];
        if ((gen >> q) & 1)
            tree_marginals(J, jq, r);
    }
    io->ref_p = ref_p;
    io->ref_t = ref_t;
    io->value = value;
    io->tp = tp;
    io->tt = tt;
    return true;
}
#endif

/* tree_fast's pass at the thresholds (feasible), job order: theta_job, eight jobs of TREE_K
   points at a time where simd (theta_block8; the same bits). */
static inline __attribute__((always_inline)) bool theta_pass_body(const pfi_alloc_jobs *J,
                                                                  const pfi_alloc_tree *t,
                                                                  theta_io *io, pfi_alloc_result *r,
                                                                  bool simd)
{
    const size_t *off = J->offset;
    size_t n = J->n;
    for (size_t j = 0; j < n;) {
#if TREE_SIMD
        if (simd && j + 8 <= n) {
            int seq = 1;
            for (size_t q = 0; q < 8; q++)
                seq &= off[j + q + 1] - off[j + q] == TREE_K;
            if (seq) {
                if (j + TREE_PREFETCH + 8 <= n) {
                    size_t f = off[j + TREE_PREFETCH];
                    for (size_t o = 0; o < TREE_K * 8; o += 8) {
                        __builtin_prefetch(J->cap_w + f + o);
                        __builtin_prefetch(J->power_w + f + o);
                        __builtin_prefetch(J->tput_tok_s + f + o);
                    }
                }
                if (!theta_block8(J, t, io, r, j))
                    return false;
                j += 8;
                continue;
            }
        }
#else
        (void)simd;
#endif
        if (!theta_job(J, t, io, r, j))
            return false;
        j++;
    }
    return true;
}

static bool theta_pass_plain(const pfi_alloc_jobs *J, const pfi_alloc_tree *t, theta_io *io,
                             pfi_alloc_result *r)
{
    return theta_pass_body(J, t, io, r, false);
}

#if TREE_SIMD
__attribute__((target(TREE_SIMD_TARGET))) static bool
theta_pass_simd(const pfi_alloc_jobs *J, const pfi_alloc_tree *t, theta_io *io, pfi_alloc_result *r)
{
    return theta_pass_body(J, t, io, r, true);
}
#endif

/* tree_fast's pass at the thresholds (theta_pass_body), eight jobs at a time where the CPU
   has AVX-512 and no_simd is not set. False (r partly written) when a job's caps fail
   tree_caps_ok. */
static bool theta_pass(const pfi_alloc_jobs *J, const pfi_alloc_tree *t, theta_io *io,
                       pfi_alloc_result *r, bool no_simd)
{
#if TREE_SIMD
    if (!no_simd && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
        return theta_pass_simd(J, t, io, r);
#endif
    (void)no_simd;
    return theta_pass_plain(J, t, io, r);
}

/* What tree_fast's second pass reads and lists (list_pass). */
typedef struct list_io {
    const uint8_t *hb;  /* each segment's bucket, job order */
    const uint64_t *hm; /* each level's mask of binding buckets (HIST_WORDS each) */
    uint64_t *hq;       /* the segments listed: job | segment << 32, room for all and one */
    size_t nh;          /* how many */
} list_io;

/* Job j's segments (k − 1, buckets from hb + s0) in a bucket its level's mask has listed,
   without a branch. */
static inline void list_job(const pfi_alloc_tree *t, list_io *io, size_t j, size_t s0, size_t k)
{
    const uint64_t *m = io->hm + HIST_WORDS * job_slot(t, j);
    uint64_t any = 0;
    for (size_t u = 0; u < HIST_WORDS; u++)
        any |= m[u];
    if (any == 0)
        return;
    size_t nh = io->nh;
    for (size_t i = 0; i + 1 < k; i++) {
        unsigned b = io->hb[s0 + i];
        io->hq[nh] = (uint64_t)j | (uint64_t)i << 32;
        nh += (m[b >> 6] >> (b & 63)) & 1;
    }
    io->nh = nh;
}

/* tree_fast's second pass, job order: list_job for each job. (Eight jobs at a time by
   AVX-512, each segment's bucket gathered and tested lane by lane, was slower: 0.73 against
   0.51 ms at 100 000 jobs.) */
static void list_pass(const pfi_alloc_jobs *J, const pfi_alloc_tree *t, list_io *io)
{
    const size_t *off = J->offset;
    size_t s0 = 0;
    for (size_t j = 0; j < J->n; j++) {
        size_t k = off[j + 1] - off[j];
        list_job(t, io, j, s0, k);
        s0 += k - 1;
    }
}

/*
 * tree_thresholds' greedy by thresholds, and the outputs of tree_oracle, for its common case —
 * every finite limit and the budget in drawn watts, continuous caps, one band, and every job as
 * tree_fast_job takes it — in two passes over the curves in job order, no segment moved
 * (issue 18 item 3: 100 000 jobs on a 4-level tree within 2x the flat oracle, inner levels
 * binding; the flat oracle reads the curves once, its threshold bracketed from a sample, which
 * cannot bracket the thresholds of levels of a hundred jobs). A level's survivors (its own
 * jobs' segments, and what each child hands up: its segments above the child's threshold s_c
 * and one of slope s_c as wide as the child has left there) are counted in a histogram of
 * slope buckets: the first pass (hist_pass) checks every curve but its caps, adds each
 * segment's width to its job's level's row and keeps its bucket; bottom up, a level's row gets
 * its children's rows, and when its width is over its capacity the bucket where it fills is
 * found from the top (the width above it, A) and the row cut there (that bucket cap − A wide,
 * none below): the level's hand-up in histogram form. A pass over the kept buckets
 * (list_pass) lists the segments that lie in the bucket of a binding level on their job's path
 * (a bit mask per level); bottom up, each binding level's threshold is the selection
 * (tree_select_all) over its survivors in its bucket — the listed segments of its subtree that
 * no level below has cut (HIT_DEAD), and the leftover segments of the binding levels below in
 * the same bucket — at capacity cap − A, and its leftover the capacity left at it. Then, as
 * tree_thresholds: each job's θ (the highest threshold above it); the second pass over the
 * curves (theta_pass) checks the caps, takes every segment above θ and writes each job's
 * outputs there, lists the segments at θ, sums the others' totals; those at θ are taken in the
 * greedy's order (tree_take) and their totals added after. The thresholds are
 * tree_thresholds' (slopes of segments: the same values) but for widths summed in another
 * order deciding a level within rounding of full; the capacities after the lowest points and
 * each level's sums are summed per level, then up the tree, and the totals of the jobs at a
 * threshold are added after the others': the last bits of the jobs placed part way, the totals
 * and the levels' sums may differ from the general path's (tests: test_tree_fast_paths). With
 * AVX-512 (and the workspace's no_simd not set), eight jobs of TREE_K points a step in both
 * passes: the same bits. *done false (r may be partly written, the workspace's scratch
 * changed) when a job is not the common case, the tree needs more histogram than allowed, or
 * the histogram and the exact widths disagree by rounding on a level's bucket: the caller then
 * runs tree_oracle's general path, which writes all of r and tr. r->budget_w NaN: left to the
 * first pass (tree_dispatch), B from the options and Σ top power. Errors: PFI_ERR_NOMEM.
 */
static pfi_error tree_fast(const alloc_ctx *x, const pfi_alloc_tree *t,
                           pfi_alloc_tree_workspace *ws, pfi_alloc_result *r,
                           pfi_alloc_tree_result *tr, pfi_diag *d, bool *inner, bool *done)
{
    const pfi_alloc_jobs *J = x->J;
    size_t n = J->n, nn = t->n_nodes, site = nn;
    const size_t *off = J->offset;
    *done = false;
    if (ws->no_fast)
        return PFI_OK;
    size_t nseg = 0, kmax = 0;
    for (size_t j = 0; j < n; j++) { /* the point counts: the rest of the checks in the pass */
        size_t k = off[j + 1] > off[j] ? off[j + 1] - off[j] : 0;
        if (k == 0 || k > ALLOC_MAX_CANDIDATES_PER_JOB)
            return PFI_OK; /* alloc_job_prepare says why */
        nseg += k - 1;
        kmax = k > kmax ? k : kmax;
    }
    size_t room = 2 * nseg > HIST_CELLS ? 2 * nseg : HIST_CELLS;
    unsigned nb = HIST_BUCKETS;
    while (nb > HIST_MIN_BUCKETS && (nn + 1) * nb > room)
        nb /= 2;
    if ((nn + 1) * nb > room || nseg >= UINT32_MAX || nn >= UINT32_MAX)
        return PFI_OK;
    if (!TREE_GROW(ws, ss, kmax) || !TREE_GROW(ws, sw, kmax) || !TREE_GROW(ws, nz, 8 * (nn + 2)) ||
        !TREE_GROW(ws, nd, 7 * (nn + 1)) || !TREE_GROW(ws, hist, (nn + 1) * nb) ||
        !TREE_GROW(ws, hb, nseg) || !TREE_GROW(ws, hm, HIST_WORDS * (nn + 1)) ||
        !TREE_GROW(ws, tie, 3 * nseg) || !TREE_GROW(ws, hit, nseg) || !TREE_GROW(ws, hq, nseg + 1))
        return PFI_ERR_NOMEM;
    double *sl = ws->ss, *wd = ws->sw, *rem = ws->rem, *hist = ws->hist;
    uint8_t *hb = ws->hb;
    uint64_t *hm = ws->hm;
    tree_pos *pos = ws->pos;
    size_t *cbeg = ws->nz, *kids = cbeg + nn + 2, *pre = kids + nn + 1, *pix = pre + nn + 1;
    size_t *send = pix + nn + 1, *bk = send + nn + 1, *hbeg = bk + nn + 1; /* hbeg: nn + 2 */
    size_t *hcur = hbeg + nn + 2;
    double *sat = ws->nd, *eff = sat + nn + 1, *acc = eff + nn + 1, *abv = acc + nn + 1;
    double *capv = abv + nn + 1, *lw = capv + nn + 1, *d0 = lw + nn + 1;
    size_t np = tree_preorder(t, cbeg, kids, pre, send);
    for (size_t k = 0; k < np; k++)
        pix[pre[k]] = k;
    for (size_t k = np; k-- > 0;) { /* where each level's subtree ends in the depth-first order */
        size_t a = pre[k];
        send[a] = k + 1;
        for (size_t c = cbeg[a]; c < cbeg[a + 1]; c++)
            send[a] = send[kids[c]] > send[a] ? send[kids[c]] : send[a];
    }
    /* the buckets: the order_bits range of a sample's slopes (jobs that fail a check are left
       to the pass) */
    uint64_t kmin = UINT64_MAX, kmx = 0;
    size_t step = n > HIST_SAMPLE ? n / HIST_SAMPLE : 1;
    for (size_t j = 0; j < n; j += step) {
        size_t a0 = off[j], k = off[j + 1] - a0;
        if (!tree_fast_job(J, j, a0, k, sl, wd, true))
            continue;
        for (size_t i = 0; i + 1 < k; i++) {
            uint64_t key = order_bits(sl[i]);
            kmin = key < kmin ? key : kmin;
            kmx = key > kmx ? key : kmx;
        }
    }
    int sh = 0;
    if (kmx < kmin)
        kmin = kmx = 0;
    while (((kmx - kmin) >> sh) >= nb - 2)
        sh++;
    /* the first pass, job order: each job checked, its segments' widths into its level's row
       and their buckets kept; its lowest power into its level's sum */
    memset(hist, 0, (nn + 1) * nb * sizeof *hist);
    for (size_t a = 0; a <= nn; a++)
        d0[a] = 0;
    hist_io io = {hist, hb, d0, 0, 0, kmin, sh, nb};
    if (!hist_pass(J, t, &io, sl, wd, x->w->no_simd))
        return PFI_OK;
    if (isnan(r->budget_w)) /* left to this pass by tree_dispatch: B from Σ top power */
        r->budget_w = isnan(x->o->budget_w) ? (1.0 - x->o->reduction) * io.top_p : x->o->budget_w;
    double ref_p = 0, ref_t = 0, lo_p = io.lo_p;
    memset(x->w->kind, 0, n); /* every job on its own curve, its own envelope */
    /* each level's capacity after its jobs' lowest points (its own, then its children's) */
    for (size_t k = np; k-- > 0;) {
        size_t a = pre[k];
        rem[a] = (a < nn ? t->limit_w[a] : r->budget_w) - d0[a];
        if (a != site)
            d0[level_up(t, a)] += d0[a];
    }
    bool feasible = tree_feasible(t, r->budget_w, rem, d);
    /* bottom up: each level's row with its children's hand-ups; where it is over its
       capacity, the bucket where it fills (from the top: the first whose width reaches the
       capacity, the width above it abv) and the row cut there */
    for (size_t k = np; k-- > 0;) {
        size_t a = pre[k];
        double *row = hist + a * nb, cap = rem[a] > 0 ? rem[a] : 0, tot = 0;
        bk[a] = SIZE_MAX;
        sat[a] = -INFINITY;
        lw[a] = 0;
        for (unsigned b = nb; b-- > 0;)
            tot += row[b];
        if ((a == site || isfinite(t->limit_w[a])) && !(tot <= cap)) {
            double above = 0;
            unsigned b = nb;
            while (b-- > 0 && !(row[b] > 0 && above + row[b] >= cap))
                above += row[b];
            if (b >= nb)
                return PFI_OK; /* by rounding only */
            bk[a] = b;
            abv[a] = above;
            capv[a] = cap;
            row[b] = cap - above;
            memset(row, 0, b * sizeof *row);
        }
        if (a != site) {
            double *up = hist + level_up(t, a) * nb;
            for (unsigned b = 0; b < nb; b++)
                up[b] += row[b];
        }
    }
    /* each level's mask: the buckets of the binding levels on its path (itself and above) */
    for (size_t k = 0; k < np; k++) {
        size_t a = pre[k];
        size_t up = a == site ? SIZE_MAX : level_up(t, a);
        for (size_t u = 0; u < HIST_WORDS; u++)
            hm[HIST_WORDS * a + u] = up == SIZE_MAX ? 0 : hm[HIST_WORDS * up + u];
        if (bk[a] != SIZE_MAX)
            hm[HIST_WORDS * a + (bk[a] >> 6)] |= UINT64_C(1) << (bk[a] & 63);
    }
    /* the second pass: the segments in the bucket of a binding level on their path, listed
       without a branch (job, segment), then their slopes and widths (as tree_fast_job's) by
       their level's depth-first index (a counting sort): a subtree's are one range,
       [hbeg[pix[a]], hbeg[send[a]]) */
    list_io li = {hb, hm, ws->hq, 0};
    list_pass(J, t, &li);
    size_t nh = li.nh;
    const uint64_t *hq = ws->hq;
    tree_hit *hs = ws->hit;
    memset(hbeg, 0, (np + 1) * sizeof *hbeg);
    for (size_t u = 0; u < nh; u++) {
        hbeg[pix[job_slot(t, (uint32_t)hq[u])] + 1]++;
    }
    for (size_t k = 0; k < np; k++) {
        hbeg[k + 1] += hbeg[k];
        hcur[k] = hbeg[k];
    }
    for (size_t u = 0; u < nh; u++) {
        if (u + 8 < nh) { /* the curves ahead (the hits are far apart) */
            size_t f = off[(uint32_t)hq[u + 8]] + (hq[u + 8] >> 32);
            __builtin_prefetch(J->power_w + f);
            __builtin_prefetch(J->tput_tok_s + f);
        }
        size_t j = (uint32_t)hq[u], i = hq[u] >> 32, a0 = off[j], lv = pix[job_slot(t, j)];
        const double *D = J->power_w + a0, *T = J->tput_tok_s + a0;
        double wt = alloc_opt(J->weight, j, 1.0);
        tree_hit *h = &hs[hcur[lv]++];
        h->v = (wt * T[i + 1] - wt * T[i]) / (D[i + 1] - D[i]);
        h->w = D[i + 1] - D[i];
        h->lv = (uint32_t)lv;
        h->b = hist_bucket(h->v, kmin, sh, nb);
    }
    /* bottom up: each binding level's threshold among its survivors in its bucket */
    if (!TREE_GROW(ws, ss, nh + nn + 1) || !TREE_GROW(ws, sw, nh + nn + 1))
        return PFI_ERR_NOMEM;
    sl = ws->ss;
    wd = ws->sw;
    for (size_t k = np; k-- > 0;) {
        size_t a = pre[k], b = bk[a], m = 0;
        if (b == SIZE_MAX)
            continue;
        double w_in = 0;
        for (size_t u = hbeg[k]; u < hbeg[send[a]]; u++) { /* alive: the levels below passed it */
            const tree_hit *h = &hs[u];
            if (h->b == b) {
                sl[m] = h->v;
                wd[m++] = h->w;
                w_in += h->w;
            }
        }
        for (size_t p = k + 1; p < send[a]; p++) { /* the leftovers below in this bucket */
            size_t e = pre[p];
            size_t up = level_up(t, e);
            if (bk[e] == b && lw[e] > 0 && hist_passes(t, bk, sat, up, a, b, sat[e])) {
                sl[m] = sat[e];
                wd[m++] = lw[e];
                w_in += lw[e];
            }
        }
        double cap = capv[a] - abv[a], w_gt;
        size_t n_gt;
        double lam = tree_select_all(sl, wd, m, w_in, cap, &n_gt, &w_gt);
        if (!(lam > -INFINITY))
            return PFI_OK; /* the histogram's widths and these disagree by rounding */
        sat[a] = lam;
        lw[a] = cap > w_gt ? cap - w_gt : 0;
        for (size_t u = hbeg[k]; a != site && u < hbeg[send[a]]; u++) { /* what a keeps */
            tree_hit *h = &hs[u];
            if (h->b < b || (h->b == b && !(h->v > lam)))
                h->b |= HIT_DEAD;
        }
    }
    /* each job's θ: the highest threshold above it (tree_thresholds) */
    bool inner_any = false;
    for (size_t k = 0; k < np; k++) {
        size_t a = pre[k];
        size_t up = a == site ? site : level_up(t, a);
        eff[a] = a == site ? sat[a] : fmax(sat[a], eff[up]);
        acc[a] = 0;
        if (a != site && sat[a] > -INFINITY && sat[a] >= eff[up])
            inner_any = true;
    }
    /* every job at its last point above its θ, its outputs there, the segments at θ listed
       (theta_pass) */
    size_t nt = 0, *tie = ws->tie;
    double *own_k = capv, *own_d = d0; /* free again */
    for (size_t a = 0; a <= nn; a++)
        own_k[a] = own_d[a] = 0;
    theta_io ti = {eff, acc, pos, tie, 0, 0, 0, 0, 0, 0, own_k, own_d};
    if (!theta_pass(J, t, &ti, r, x->w->no_simd))
        return PFI_OK; /* a job's caps: alloc_job_prepare says why */
    nt = ti.nt;
    ref_p = ti.ref_p;
    ref_t = ti.ref_t;
    for (size_t k = np; k-- > 0;) {
        size_t a = pre[k];
        rem[a] -= acc[a];
        if (a != site)
            acc[level_up(t, a)] += acc[a];
    }
    /* the segments at the thresholds in the greedy's order (tree_thresholds) */
    if (!TREE_GROW(ws, kp, 2 * nt))
        return PFI_ERR_NOMEM;
    tree_kp *kp = ws->kp;
    for (size_t u = 0; u < nt; u++) {
        size_t j = tie[3 * u], p = tie[3 * u + 1], q = tie[3 * u + 2];
        alloc_view v = alloc_true_view(x, j);
        kp[u].key = ~order_bits((v.wt * v.t[q] - v.wt * v.t[p]) / (v.d[q] - v.d[p]));
        kp[u].i = (uint32_t)u;
    }
    kp_merge_sort(kp, kp + nt, nt);
    for (size_t u = 0; u < nt; u++) {
        const size_t *g = &tie[3 * kp[u].i];
        size_t j = g[0], p = g[1], q = g[2];
        alloc_view v = alloc_true_view(x, j);
        double gp = alloc_opt(J->gpus, j, 1.0), dummy = 0;
        tree_take(t, nn, rem, pos, (uint32_t)j, job_node(t, j), (uint32_t)p, (uint32_t)q,
                  v.d[q] - v.d[p], gp * (v.c[q] - v.c[p]), v.wt * v.t[q] - v.wt * v.t[p], &dummy);
    }
    for (size_t u = 0; u < nt; u++) { /* the jobs at a threshold where they got to */
        size_t j = tie[3 * u];
        place_job(x, j, pos[j].at, pos[j].nx, pos[j].fr, false, true, r);
        tree_marginals(J, j, r);
    }
    if (inner != NULL)
        *inner = inner_any;
    /* the value on the envelopes and the totals: the jobs at a threshold added (once each:
       the list is in job order) to the others' sums (theta_pass); the levels' sums (tree_sums):
       each level's own jobs, then its children's sums added, bottom up */
    double value = ti.value, obj = ti.value, tp = ti.tp, tt = ti.tt;
    for (size_t u = 0; u < nt; u++) {
        size_t j = tie[3 * u];
        if (u > 0 && tie[3 * (u - 1)] == j)
            continue;
        double wt = alloc_opt(J->weight, j, 1.0), pw = r->power_w[j], tk = r->tput_tok_s[j];
        const double *T = J->tput_tok_s + off[j];
        double y0 = wt * T[pos[j].at],
               y = pos[j].fr > 0 ? y0 + pos[j].fr * (wt * T[pos[j].nx] - y0) : wt * tk;
        value += y;
        obj += wt * tk;
        tp += pw;
        tt += tk;
        size_t a = job_slot(t, j);
        own_k[a] += alloc_opt(J->gpus, j, 1.0) * r->cap_w[j];
        own_d[a] += pw;
    }
    for (size_t k = np; k-- > 0;) {
        size_t a = pre[k];
        if (a == site)
            break; /* the depth-first order starts at the site */
        size_t up = level_up(t, a);
        tr->reserve_w[a] = own_k[a];
        tr->drawn_w[a] = own_d[a];
        own_k[up] += own_k[a];
        own_d[up] += own_d[a];
    }
    tr->site_reserve_w = own_k[site];
    tr->site_drawn_w = own_d[site];
    r->total_power_w = tp;
    r->total_tput_tok_s = tt;
    r->objective = obj;
    r->ref_power_w = ref_p;
    r->ref_tput_tok_s = ref_t;
    r->min_power_w = lo_p;
    r->floors_unmet = 0;
    r->feasible = feasible;
    r->shortfall_w = feasible ? 0 : rem[nn] < 0 ? -rem[nn] : NAN;
    r->lambda = NAN;
    r->upper_bound = feasible ? value : NAN;
    r->method = "tree: greedy on marginal tokens/s per W within every level's capacity "
                "(exact: laminar limits of one kind)";
    tree_flags(t, r->budget_w, tr);
    *done = true;
    return PFI_OK;
}

static bool tree_has_bands(const pfi_alloc_jobs *J, const pfi_alloc_tree *t);

/* The oracle on the tree, with the scratch memory of ws. inner (may be NULL): set false when
   the greedy by thresholds ran and no level but the site bound (tree_thresholds); left as it
   is otherwise. */
static pfi_error tree_oracle(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                             const pfi_alloc_tree *t, pfi_alloc_tree_workspace *ws,
                             pfi_alloc_result *r, pfi_alloc_tree_result *tr, pfi_diag *d,
                             bool *inner)
{
    bool inner_any = false;
    size_t n = J->n, nn = t->n_nodes;
    bool all_reserve = t->budget_kind == PFI_LIMIT_RESERVE, all_measured = !all_reserve;
    for (size_t a = 0; a < nn; a++)
        if (isfinite(t->limit_w[a])) {
            all_reserve &= t->kind[a] == PFI_LIMIT_RESERVE;
            all_measured &= t->kind[a] == PFI_LIMIT_MEASURED;
        }
    bool one_kind = all_reserve || all_measured; /* the greedy by thresholds (no bands) */
    bool thr_only; /* only the greedy by thresholds can run: no segment records */
    pfi_alloc_workspace *w = ws->w;
    pfi_error e = PFI_OK;
    if (!TREE_GROW(ws, rem, nn + 1) || !TREE_GROW(ws, pos, n) || !alloc_ws_jobs(w, n))
        return PFI_ERR_NOMEM;
    double *rem = ws->rem;
    tree_pos *pos = ws->pos;
    alloc_ctx x = {J, o, w, o->cap_step_w > 0};
    w->n_c = w->n_e = w->n_env = w->n_eenv = w->n_b = 0;
    if (!x.discrete && all_measured && !tree_has_bands(J, t)) {
        bool done; /* the common case in fewer passes (tree_fast) */
        e = tree_fast(&x, t, ws, r, tr, d, inner, &done);
        ws->took_fast = e == PFI_OK && done;
        if (e != PFI_OK || done)
            return e;
    }
    if (isnan(r->budget_w)) { /* left to tree_fast by tree_dispatch, which did not take it */
        double top = 0;
        for (size_t j = 0; j < n; j++)
            top += J->power_w[J->offset[j + 1] - 1];
        r->budget_w = isnan(o->budget_w) ? (1.0 - o->reduction) * top : o->budget_w;
    }
    /* with continuous caps a job has at most its points + 2 candidates (alloc_job_prepare):
       each job is prepared in the loop that makes its segments, its curve read once; with a
       cap step, all of them first (their counts size the buffers) */
    bool fused = !x.discrete;
    size_t unmet = 0, total = 0, maxm = 0;
    if (fused) {
        total = J->offset[n] + 2 * n;
    } else {
        for (size_t j = 0; j < n; j++) {
            if ((e = alloc_job_prepare(&x, j, &unmet, d)) != PFI_OK)
                return e;
            alloc_view v = alloc_true_view(&x, j);
            total += v.m;
            if (v.m > maxm)
                maxm = v.m;
        }
    }
    thr_only = one_kind && !tree_has_bands(J, t) && total < UINT32_MAX;
    if ((!thr_only && (!TREE_GROW(ws, seg, total) || !TREE_GROW(ws, keys, 2 * total))) ||
        !TREE_GROW(ws, sbeg, n + 1) ||
        (one_kind && (!TREE_GROW(ws, jsl, total) || !TREE_GROW(ws, jw, total) ||
                      !TREE_GROW(ws, sq, total) || !TREE_GROW(ws, tie, 3 * total))) ||
        (t->band != NULL && !TREE_GROW(ws, jband, n)) || !TREE_GROW(ws, idx, maxm) ||
        !TREE_GROW(ws, xs, maxm) || !TREE_GROW(ws, ys, maxm))
        return PFI_ERR_NOMEM;
    tree_seg *seg = ws->seg;
    uint64_t *keys = ws->keys;
    double *jband = t->band != NULL ? ws->jband : NULL;
    size_t *idx = ws->idx;
    double *xs = ws->xs, *ys = ws->ys, *jsl = ws->jsl, *jw = ws->jw;
    double ref_p = 0, ref_t = 0, lo_p = 0;
    r->shortfall_w = 0;
    r->feasible = true;
    for (size_t a = 0; a < nn; a++)
        rem[a] = t->limit_w[a];
    rem[nn] = r->budget_w;
    size_t ns = 0;
    double value = 0;
    uint64_t kmin = ~UINT64_C(0), kmax = 0;
    bool site_pos = true; /* every segment needs some of the site's capacity */
    /* the common job of the greedy by thresholds on drawn watts in one pass (tree_fast_job) */
    bool fast = fused && thr_only && all_measured;
    uint32_t *sq = ws->sq;
    for (size_t j = 0; j < n; j++) {
        size_t a0 = J->offset[j], k = J->offset[j + 1] - a0;
        if (fast && a0 < J->offset[j + 1] && tree_fast_job(J, j, a0, k, jsl + ns, jw + ns, true)) {
            w->kind[j] = 0; /* as alloc_job_prepare sets it */
            w->nc[j] = w->ne[j] = (uint32_t)k;
            const double *c = J->cap_w + a0, *D = J->power_w + a0, *T = J->tput_tok_s + a0;
            ref_p += D[k - 1];
            ref_t += T[k - 1];
            lo_p += D[0];
            ws->sbeg[j] = ns;
            pos[j].at = pos[j].nx = 0;
            pos[j].fr = 0;
            charge(t, j, D[0], alloc_opt(J->gpus, j, 1.0) * c[0], rem, 1);
            value += alloc_opt(J->weight, j, 1.0) * T[0];
            for (size_t s = 1; s < k; s++)
                sq[ns++] = (uint32_t)s;
            continue;
        }
        if (fused && (e = alloc_job_prepare(&x, j, &unmet, d)) != PFI_OK)
            return e;
        alloc_view v = alloc_true_view(&x, j);
        if (v.m > ws->n_idx || v.m > ws->n_xs || v.m > ws->n_ys) { /* fused: grown as needed */
            if (!TREE_GROW(ws, idx, v.m) || !TREE_GROW(ws, xs, v.m) || !TREE_GROW(ws, ys, v.m))
                return PFI_ERR_NOMEM;
            idx = ws->idx;
            xs = ws->xs;
            ys = ws->ys;
        }
        ref_p += J->power_w[J->offset[j + 1] - 1];
        ref_t += J->tput_tok_s[J->offset[j + 1] - 1];
        lo_p += v.d[0];
        double g = alloc_opt(J->gpus, j, 1.0);
        if (jband != NULL)
            jband[j] = alloc_opt(t->band, j, 0.0);
        for (size_t i = 0; i < v.m; i++) {
            xs[i] = all_reserve ? g * v.c[i] : v.d[i];
            ys[i] = v.wt * v.t[i];
        }
        size_t ne;
        if (all_reserve) {
            ne = pfi_envelope(xs, ys, v.m, idx);
        } else { /* on (drawn, weighted tokens/s): alloc_job_prepare's envelope, the same */
            ne = alloc_n_vtx(&x, j, false);
            for (size_t s = 0; s < ne; s++)
                idx[s] = alloc_vtx(&x, j, false, s);
        }
        ws->sbeg[j] = ns;
        pos[j].at = pos[j].nx = (uint32_t)idx[0];
        pos[j].fr = 0;
        charge(t, j, v.d[idx[0]], g * v.c[idx[0]], rem, 1);
        value += ys[idx[0]];
        if (thr_only) { /* slopes, widths and ends only */
            for (size_t s = 1; s < ne; s++, ns++) {
                size_t p = idx[s - 1], q = idx[s];
                jsl[ns] = (ys[q] - ys[p]) / (xs[q] - xs[p]);
                jw[ns] = all_reserve ? g * (v.c[q] - v.c[p]) : v.d[q] - v.d[p];
                ws->sq[ns] = (uint32_t)q;
            }
            continue;
        }
        for (size_t s = 1; s < ne; s++) {
            size_t p = idx[s - 1], q = idx[s];
            tree_seg *sg = &seg[ns];
            sg->dw = v.d[q] - v.d[p];
            sg->kw = g * (v.c[q] - v.c[p]);
            sg->val = ys[q] - ys[p];
            double slope = sg->val / (xs[q] - xs[p]);
            uint64_t key = ~order_bits(slope); /* the slope's sort key */
            if (one_kind) {
                ws->sq[ns] = (uint32_t)q;
                jsl[ns] = slope;
                jw[ns] = all_reserve ? sg->kw : sg->dw;
            }
            keys[ns++] = key;
            kmin = key < kmin ? key : kmin;
            kmax = key > kmax ? key : kmax;
            site_pos &= (t->budget_kind == PFI_LIMIT_RESERVE ? sg->kw : sg->dw) > 0;
            sg->job = (uint32_t)j;
            sg->p = (uint32_t)p;
            sg->q = (uint32_t)q;
        }
    }
    ws->sbeg[n] = ns;
    r->ref_power_w = ref_p;
    r->ref_tput_tok_s = ref_t;
    r->min_power_w = lo_p;
    r->floors_unmet = unmet;
    /* infeasible: a level (or the site) cannot hold its jobs at their lowest caps; the greedy
       still runs: such a level's capacity is none (its jobs stay at their lowest caps, tree_take
       charges nothing under it), the other levels' as without it (was every job at its lowest
       cap when any level was short: one rack's mistyped limit held the whole site there) */
    bool feasible = tree_feasible(t, r->budget_w, rem, d);
    bool bands = false;
    for (size_t q = 0; !thr_only && jband != NULL && q < ns && !bands; q++)
        bands = jband[seg[q].job] != jband[seg[0].job];
    bool by_thresholds = !bands && one_kind && ns < UINT32_MAX;
    if (by_thresholds) {
        if ((e = tree_thresholds(&x, t, ws, ns, rem, pos, &inner_any)) != PFI_OK)
            return e;
        if (inner != NULL)
            *inner = inner_any;
    } else if (!bands && nn < UINT32_MAX) {
        if (!TREE_GROW(ws, bs, ns) || !TREE_GROW(ws, kp, 2 * ns) ||
            !TREE_GROW(ws, count, 2 * BUCKET_SIZE + 1 + RADIX_SIZE))
            return PFI_ERR_NOMEM;
        greedy_bucketed(t, nn, rem, pos, seg, keys, ns, kmin, kmax, site_pos, ws->bs, ws->kp,
                        ws->count, &value);
    } else {
        if (!TREE_GROW(ws, ord, ns) || !TREE_GROW(ws, tmp, ns) ||
            !TREE_GROW(ws, count, 2 * RADIX_SIZE))
            return PFI_ERR_NOMEM;
        uint32_t *ord = ws->ord;
        order_segments(seg, ns, ord, ws->tmp, keys, ws->count, jband, bands);
        for (size_t s = 0; s < ns; s++) {
            if (s + 96 < ns)
                __builtin_prefetch(&seg[ord[s + 96]]);
            if (s + 32 < ns)
                __builtin_prefetch(&pos[seg[ord[s + 32]].job]);
            const tree_seg *sg = &seg[ord[s]];
            tree_take(t, nn, rem, pos, sg->job, job_node(t, sg->job), sg->p, sg->q, sg->dw, sg->kw,
                      sg->val, &value);
            if (site_pos && rem[nn] <= 0)
                break; /* no later segment can be taken (see greedy_bucketed) */
        }
    }
    if (by_thresholds)
        value = 0; /* summed here, over the jobs' places on their envelopes */
    for (size_t j = 0; j < n; j++) {
        if (by_thresholds) {
            alloc_view v = alloc_true_view(&x, j);
            double y0 = v.wt * v.t[pos[j].at];
            value += pos[j].fr > 0 ? y0 + pos[j].fr * (v.wt * v.t[pos[j].nx] - y0) : y0;
        }
        place_job(&x, j, pos[j].at, pos[j].nx, pos[j].fr, !all_measured, !all_reserve, r);
        tree_marginals(J, j, r);
    }
    tree_totals(J, r);
    r->feasible = feasible;
    if (feasible)
        r->shortfall_w = 0;
    else if (rem[nn] < 0)
        r->shortfall_w = -rem[nn]; /* in the budget's kind */
    else
        r->shortfall_w = NAN; /* a level, not the budget: the message says which */
    r->lambda = NAN;
    r->upper_bound = (all_reserve || all_measured) && feasible ? value : NAN;
    r->method = all_reserve || all_measured
                    ? "tree: greedy on marginal tokens/s per W within every level's capacity "
                      "(exact: laminar limits of one kind)"
                    : "tree: greedy on marginal tokens/s per W within every level's capacity "
                      "(reserve and measured limits: feasible, not proven optimal)";
    tree_sums(J, t, r->budget_w, r, tr);
    return PFI_OK;
}

/*
 * The oracle on the tree by the flat oracle first. The tree's limits only shrink the flat
 * problem's feasible set (the site budget alone), so when the flat optimum under the site
 * budget keeps every level within its limit it is the tree's optimum too, and it is the
 * allocation the tree's greedy reaches: both take the envelope segments by descending
 * slope, ties in job order, the last one in part; a level that never fills never stops the
 * greedy. The flat oracle finds its threshold by selection over a sampled bracket (no sort
 * of the segments), so a tree whose inner limits do not bind costs about one flat call
 * (issue 18 item 3: 100 000 jobs, 4 levels). The two differ only in rounding (the partial
 * job's fraction: the greedy subtracts the segments' widths from the budget in slope order,
 * the selection sums them in its own), and this path places the partial job as the greedy
 * does (place_job: on an envelope segment that skips candidates, the highest cap within the
 * drawn and cap watts the greedy charges) and gives the greedy's marginals, totals and method. Only
 * for a drawn (measured) budget, continuous caps, no cap bounds or floors (the greedy's snapped
 * partial jobs there differ by more than rounding: not held to it) and one band; returns false, r
 * and tr to be overwritten, when the flat call fails or is infeasible or a level would go over its
 * limit: the caller then runs the greedy.
 */
static bool tree_flat_first(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                            const pfi_alloc_tree *t, pfi_alloc_tree_workspace *ws,
                            pfi_alloc_result *r, pfi_alloc_tree_result *tr)
{
    size_t n = J->n, nn = t->n_nodes;
    pfi_alloc_options fo = *o;
    fo.budget_w = r->budget_w; /* as the tree's greedy sums it */
    pfi_alloc_workspace *w = ws->w;
    if (pfi_allocate_ws(J, &fo, w, r, NULL) != PFI_OK || !r->feasible)
        return false;
    alloc_ctx x = {J, &fo, w, false};
    double tol = 1e-12;
    bool by_cap = false; /* a level counts caps (the budget here counts drawn watts) */
    for (size_t a = 0; a < nn; a++)
        by_cap |= isfinite(t->limit_w[a]) && t->kind[a] == PFI_LIMIT_RESERVE;
    /* jobs placed below their point on the envelope (at most FLAT_MOVED): what the greedy
       charges the levels above them beyond what they draw and reserve once placed */
    enum { FLAT_MOVED = 8 };
    size_t moved[FLAT_MOVED], n_moved = 0;
    double more_d[FLAT_MOVED], more_k[FLAT_MOVED];
    for (size_t j = 0; j < n; j++) {
        if (w->kind[j] & KIND_ENV) {
            /* a point inside an envelope segment that skips candidates: the greedy's place */
            alloc_view v = alloc_true_view(&x, j);
            double pw = r->power_w[j];
            size_t ne = alloc_n_vtx(&x, j, false);
            for (size_t s = 1; s < ne; s++) {
                size_t p = alloc_vtx(&x, j, false, s - 1), q = alloc_vtx(&x, j, false, s);
                if (v.d[q] <= pw * (1 + tol))
                    continue;
                if (q > p + 1 && pw > v.d[p] * (1 + tol)) {
                    if (n_moved == FLAT_MOVED)
                        return false;
                    double f = (pw - v.d[p]) / (v.d[q] - v.d[p]), g = alloc_opt(J->gpus, j, 1.0);
                    place_job(&x, j, p, q, f, by_cap, true, r);
                    moved[n_moved] = j;
                    more_d[n_moved] = pw - r->power_w[j];
                    more_k[n_moved++] = g * (v.c[p] + f * (v.c[q] - v.c[p])) - g * r->cap_w[j];
                }
                break;
            }
        }
    }
    tree_sums(J, t, r->budget_w, r, tr);
    for (size_t i = 0; i < n_moved; i++)
        for (size_t a = job_node(t, moved[i]); a != PFI_TOPO_NONE; a = t->parent[a]) {
            tr->drawn_w[a] += more_d[i];
            tr->reserve_w[a] += more_k[i];
        }
    bool all_measured = true;
    for (size_t a = 0; a < nn; a++) {
        double used = t->kind[a] == PFI_LIMIT_RESERVE ? tr->reserve_w[a] : tr->drawn_w[a];
        if (!(used <= t->limit_w[a]))
            return false;
        all_measured &= !isfinite(t->limit_w[a]) || t->kind[a] == PFI_LIMIT_MEASURED;
    }
    if (n_moved > 0)
        tree_sums(J, t, r->budget_w, r, tr);
    /* the flat marginals are the envelope's slopes around the drawn power; on a curve that
       is its own envelope (no bounds here), a job at a point (the two differ) has the
       curve's slopes there, as the greedy's: only the others need tree_marginals (after the
       check, so that a failed attempt costs less) */
    const double *md = r->marginal_down, *mu = r->marginal_up;
    for (size_t j = 0; j < n; j++) /* without a branch on the data (most jobs are at a point) */
        if ((int)(w->kind[j] & KIND_ENV) | (md[j] == mu[j]) | (isnan(md[j]) & isnan(mu[j])))
            tree_marginals(J, j, r);
    tree_totals(J, r);
    r->shortfall_w = 0;
    r->lambda = NAN;
    if (!all_measured)
        r->upper_bound = NAN;
    r->method = all_measured
                    ? "tree: greedy on marginal tokens/s per W within every level's capacity "
                      "(exact: laminar limits of one kind)"
                    : "tree: greedy on marginal tokens/s per W within every level's capacity "
                      "(reserve and measured limits: feasible, not proven optimal)";
    return true;
}

/* The hint's sample of levels: one in 2^HINT_SHIFT (by a hash of its index, so that no
   regular numbering aliases with it); its threshold's capacity less HINT_MARGIN of its width
   (a higher slope: less demand, fewer false alarms); a level's demand over its limit by
   HINT_OVER. */
#define HINT_SHIFT 5
#define HINT_MARGIN 0.03
#define HINT_OVER 0.02

/*
 * The site's reference power Σ top power (job order, as the caller sums it: *ref), and, with
 * predict (the caller would try tree_flat_first), a hint that tree_flat_first will fail, so
 * that its flat call — about a flat oracle's time, wasted when inner levels bind — can be
 * skipped. The same pass as the reference sum lists the jobs of a sample of the levels (one in
 * 2^HINT_SHIFT); their envelope-free slopes (alloc_slope's expression on the curve's points)
 * give an estimate U of the flat threshold (the selection at their share of the budget, B ×
 * their top power / the site's, less HINT_MARGIN of their width); a sampled level whose own
 * jobs, each at the last point before its first segment of slope ≤ U, draw more than its limit
 * (by HINT_OVER) would be over it in the flat optimum too, if U is not below it. Only a hint:
 * the caller checks it (tree_oracle reports whether an inner level bound; if none did, the flat
 * optimum is tried after all), so it decides the cost, not the result (but for a level that
 * fills at exactly its ancestor's slope while the rounded flat optimum keeps within its limit:
 * then the greedy's result, the same optimum to the rounding of its sums). Only for trees
 * whose finite limits are all measured (tree_oracle then takes the thresholds). Scratch:
 * ws->nd, ws->nz, ws->ss, ws->sw, ws->sbeg.
 */
static bool tree_ref_hint(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                          const pfi_alloc_tree *t, pfi_alloc_tree_workspace *ws, bool predict,
                          double *ref)
{
    size_t n = J->n, nn = t->n_nodes;
    const size_t *off = J->offset;
    const double *P = J->power_w, *T = J->tput_tok_s;
    for (size_t a = 0; predict && a < nn; a++)
        predict = t->kind[a] == PFI_LIMIT_MEASURED || !isfinite(t->limit_w[a]);
    predict = predict && nn > 0 && t->job_node != NULL && TREE_GROW(ws, nd, nn) &&
              TREE_GROW(ws, nz, nn) && TREE_GROW(ws, sbeg, n + 1);
    size_t n_sel = 0;
    double *dem = ws->nd;
    size_t *chosen = ws->nz, *list = ws->sbeg;
    for (size_t a = 0; predict && a < nn; a++) {
        uint32_t h = (uint32_t)a; /* MurmurHash3's finaliser (Appleby, public domain) */
        h ^= h >> 16;
        h *= 0x85ebca6bu;
        h ^= h >> 13;
        h *= 0xc2b2ae35u;
        h ^= h >> 16;
        chosen[a] = h >> (32 - HINT_SHIFT) == 0 && isfinite(t->limit_w[a]);
        n_sel += chosen[a];
        dem[a] = 0;
    }
    double sum = 0;
    if (n_sel == 0) {
        for (size_t j = 0; j < n; j++)
            sum += P[off[j + 1] - 1];
        *ref = sum;
        return false;
    }
    size_t nl = 0, nseg = 0;
    for (size_t j = 0; j < n; j++) {
        size_t a0 = off[j], k = off[j + 1] - a0, a = t->job_node[j];
        sum += P[a0 + k - 1];
        if (a < nn && chosen[a]) { /* a < nn: not the site's own */
            list[nl++] = j;
            nseg += k - 1;
        }
    }
    *ref = sum;
    if (nl == 0 || !TREE_GROW(ws, ss, 2 * nseg) || !TREE_GROW(ws, sw, nseg))
        return false;
    /* the sampled jobs' slopes (job order, kept) and a copy with their widths to select on */
    double *sl = ws->ss, *cs = sl + nseg, *cw = ws->sw;
    double base = 0, top = 0, width = 0;
    size_t m = 0;
    for (size_t u = 0; u < nl; u++) {
        size_t j = list[u], a0 = off[j], k = off[j + 1] - a0;
        const double *D = P + a0, *Y = T + a0;
        double wt = alloc_opt(J->weight, j, 1.0);
        base += D[0];
        top += D[k - 1];
        for (size_t i = 0; i + 1 < k; i++, m++) {
            sl[m] = cs[m] = (wt * Y[i + 1] - wt * Y[i]) / (D[i + 1] - D[i]);
            cw[m] = D[i + 1] - D[i];
            width += cw[m];
        }
    }
    double budget = isnan(o->budget_w) ? (1.0 - o->reduction) * sum : o->budget_w;
    double cap = budget * (top / sum) - base - HINT_MARGIN * width;
    if (!(sum > 0) || !(cap > 0) || !(width > 0) || !isfinite(width))
        return false;
    size_t ngt;
    double wgt, hi = tree_select_all(cs, cw, nseg, width, cap, &ngt, &wgt);
    if (!(hi > -INFINITY))
        return false; /* every sampled segment fits */
    m = 0;
    for (size_t u = 0; u < nl; u++) {
        size_t j = list[u], a0 = off[j], k = off[j + 1] - a0;
        const double *D = P + a0;
        double at = D[0];
        size_t i = 0;
        for (; i + 1 < k && sl[m + i] > hi; i++)
            at = D[i + 1];
        m += k - 1;
        dem[t->job_node[j]] += at;
    }
    for (size_t a = 0; a < nn; a++)
        if (chosen[a] && dem[a] > t->limit_w[a] * (1 + HINT_OVER))
            return true;
    return false;
}

/* Is level a at or above job j's level? */
static bool under(const pfi_alloc_tree *t, size_t j, size_t a)
{
    if (a == PFI_TOPO_NONE)
        return true; /* the site */
    for (size_t b = job_node(t, j); b != PFI_TOPO_NONE; b = t->parent[b])
        if (b == a)
            return true;
    return false;
}

/* The buffers of one level's sub-instance (the jobs under it). */
typedef struct sub_buf {
    size_t *list, *off;
    double *c, *p, *tp, *g, *wt, *fl, *lo, *hi, *pf, *ft;
    unsigned char *deep;
} sub_buf;

static void sub_free(sub_buf *b)
{
    void *ptrs[] = {b->list, b->off, b->c,  b->p,  b->tp, b->g,   b->wt,
                    b->fl,   b->lo,  b->hi, b->pf, b->ft, b->deep};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        pfi_free(ptrs[i]);
}

/* The levels the other strategies found short (reallocate_level): whether all held, the
   site budget's least if it is short, how many levels are, the one short by the most. */
typedef struct tree_short {
    bool feasible, site;
    double site_least;
    size_t n, a;
    double limit, least;
} tree_short;

/* What tree_short holds said in d, as tree_feasible says it (PFI_OK: a result, not an
   error); nothing when every limit held. */
static void tree_short_say(const pfi_alloc_tree *t, double budget_w, const tree_short *sh,
                           pfi_diag *d)
{
    char more[96] = "";
    if (sh->site) {
        if (sh->n > 0)
            snprintf(more, sizeof more, "; %zu level%s short too", sh->n, sh->n > 1 ? "s" : "");
        tree_fail(d, PFI_OK,
                  "the site budget %.1f W (reserve) is below the least the jobs can take "
                  "(%.1f W)%s: every job stays at its lowest cap",
                  budget_w, sh->site_least, more);
    } else if (sh->n > 0) {
        if (sh->n > 1)
            snprintf(more, sizeof more, ", the most of %zu levels short", sh->n);
        tree_fail(d, PFI_OK,
                  "%s: its %s limit %.1f W is below the least its jobs can take at their lowest "
                  "caps (%.1f W, %.1f W short%s): its jobs stay there",
                  where(t, sh->a).s, pfi_limit_kind_name(t->kind[sh->a]), sh->limit, sh->least,
                  sh->least - sh->limit, more);
    }
}

/* One level over its limit: the strategy again on the jobs under it, with the limit as their
   budget (in cap watts for a reserve level: each curve's power replaced by GPUs × cap) and
   their current caps as upper bounds; their caps in r updated. */
static pfi_error reallocate_level(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                                  const pfi_alloc_tree *t, size_t a, pfi_alloc_result *r,
                                  sub_buf *b, tree_short *sh, pfi_diag *d)
{
    size_t n = J->n, m = 0, pts = 0;
    for (size_t j = 0; j < n; j++)
        if (under(t, j, a)) {
            b->list[m++] = j;
            pts += J->offset[j + 1] - J->offset[j];
        }
    if (m == 0)
        return PFI_OK;
    double *arr[] = {b->c, b->p, b->tp};
    for (int k = 0; k < 3; k++)
        pfi_free(arr[k]);
    b->c = pfi_malloc(pts * sizeof(double));
    b->p = pfi_malloc(pts * sizeof(double));
    b->tp = pfi_malloc(pts * sizeof(double));
    if (b->c == NULL || b->p == NULL || b->tp == NULL)
        return PFI_ERR_NOMEM;
    bool site = a == PFI_TOPO_NONE;
    bool reserve = (site ? t->budget_kind : t->kind[a]) == PFI_LIMIT_RESERVE;
    double limit = site ? r->budget_w : t->limit_w[a];
    size_t q = 0;
    for (size_t i = 0; i < m; i++) {
        size_t j = b->list[i];
        b->off[i] = q;
        double g = alloc_opt(J->gpus, j, 1.0);
        for (size_t k = J->offset[j]; k < J->offset[j + 1]; k++, q++) {
            b->c[q] = J->cap_w[k];
            b->p[q] = reserve ? g * J->cap_w[k] : J->power_w[k];
            b->tp[q] = J->tput_tok_s[k];
        }
        b->g[i] = g;
        b->wt[i] = alloc_opt(J->weight, j, NAN);
        b->fl[i] = alloc_opt(J->floor_frac, j, NAN);
        b->lo[i] = alloc_opt(J->cap_lo_w, j, NAN);
        b->hi[i] = r->cap_w[j];
        b->pf[i] = alloc_opt(J->pfi, j, NAN);
        b->ft[i] = alloc_opt(J->feature, j, NAN);
        b->deep[i] = J->deep_cut != NULL ? J->deep_cut[j] : 0;
    }
    b->off[m] = q;
    pfi_alloc_jobs S = {.n = m,
                        .offset = b->off,
                        .cap_w = b->c,
                        .power_w = b->p,
                        .tput_tok_s = b->tp,
                        .gpus = b->g,
                        .weight = b->wt,
                        .floor_frac = b->fl,
                        .cap_lo_w = b->lo,
                        .cap_hi_w = b->hi,
                        .pfi = J->pfi ? b->pf : NULL,
                        .feature = J->feature ? b->ft : NULL,
                        .deep_cut = b->deep};
    pfi_alloc_options so = *o;
    so.budget_w = limit;
    pfi_alloc_result sr;
    pfi_error e = pfi_alloc_result_init(&sr, m);
    if (e == PFI_OK)
        e = pfi_allocate(&S, &so, &sr, d);
    if (e == PFI_OK) {
        if (!sr.feasible) { /* named after every level (tree_short_say) */
            sh->feasible = false;
            if (site) {
                sh->site = true;
                sh->site_least = sr.min_power_w;
            } else {
                sh->n++;
                if (sh->a == SIZE_MAX || sr.min_power_w - limit > sh->least - sh->limit) {
                    sh->a = a;
                    sh->limit = limit;
                    sh->least = sr.min_power_w;
                }
            }
        }
        for (size_t i = 0; i < m; i++) {
            size_t j = b->list[i], a0 = J->offset[j], k = J->offset[j + 1] - a0;
            double cap = sr.cap_w[i];
            r->cap_w[j] = cap;
            r->power_w[j] = pfi_interp(J->cap_w + a0, J->power_w + a0, k, cap);
            r->tput_tok_s[j] = pfi_interp(J->cap_w + a0, J->tput_tok_s + a0, k, cap);
            r->shed_w[j] = J->power_w[a0 + k - 1] - r->power_w[j];
            tree_marginals(J, j, r);
        }
    }
    pfi_alloc_result_clear(&sr);
    return e;
}

/* The other strategies: their flat allocation (in r), then each level over its limit,
   deepest first, reallocated among its jobs by the same strategy (caps only lowered). */
static pfi_error alloc_tree_heuristic(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                                      const pfi_alloc_tree *t, pfi_alloc_result *r,
                                      pfi_alloc_tree_result *tr, pfi_diag *d)
{
    size_t n = J->n, nn = t->n_nodes, N = n ? n : 1;
    size_t *order = pfi_malloc((nn ? nn : 1) * sizeof *order);
    size_t *depth = pfi_malloc((nn ? nn : 1) * sizeof *depth);
    sub_buf b;
    memset(&b, 0, sizeof b);
    b.list = pfi_malloc(N * sizeof *b.list);
    b.off = pfi_malloc((N + 1) * sizeof *b.off);
    b.g = pfi_malloc(N * sizeof(double));
    b.wt = pfi_malloc(N * sizeof(double));
    b.fl = pfi_malloc(N * sizeof(double));
    b.lo = pfi_malloc(N * sizeof(double));
    b.hi = pfi_malloc(N * sizeof(double));
    b.pf = pfi_malloc(N * sizeof(double));
    b.ft = pfi_malloc(N * sizeof(double));
    b.deep = pfi_malloc(N);
    pfi_error e = PFI_OK;
    if (!order || !depth || !b.list || !b.off || !b.g || !b.wt || !b.fl || !b.lo || !b.hi ||
        !b.pf || !b.ft || !b.deep)
        e = PFI_ERR_NOMEM;
    size_t maxd = 0;
    for (size_t a = 0; a < nn && e == PFI_OK; a++) {
        depth[a] = 0;
        for (size_t c = a; t->parent[c] != PFI_TOPO_NONE; c = t->parent[c])
            depth[a]++;
        if (depth[a] > maxd)
            maxd = depth[a];
    }
    size_t k = 0;
    for (size_t dd = maxd + 1; dd-- > 0 && e == PFI_OK;)
        for (size_t a = 0; a < nn; a++)
            if (depth[a] == dd)
                order[k++] = a;
    /* an infeasible level leaves its jobs at their lowest caps; the other levels are still
       brought within their limits (caps only lowered), so every limit that can hold does */
    tree_short sh = {.feasible = r->feasible, .a = SIZE_MAX};
    for (size_t i = 0; i < k && e == PFI_OK; i++) {
        size_t a = order[i];
        if (!isfinite(t->limit_w[a]))
            continue;
        double used = 0;
        for (size_t j = 0; j < n; j++)
            if (under(t, j, a))
                used += t->kind[a] == PFI_LIMIT_RESERVE ? alloc_opt(J->gpus, j, 1.0) * r->cap_w[j]
                                                        : r->power_w[j];
        if (used > t->limit_w[a] * (1 + 1e-12))
            e = reallocate_level(J, o, t, a, r, &b, &sh, d);
    }
    if (e == PFI_OK && t->budget_kind == PFI_LIMIT_RESERVE) {
        /* the site budget counts caps: the flat allocation ran without it */
        double used = 0;
        for (size_t j = 0; j < n; j++)
            used += alloc_opt(J->gpus, j, 1.0) * r->cap_w[j];
        if (used > r->budget_w * (1 + 1e-12))
            e = reallocate_level(J, o, t, PFI_TOPO_NONE, r, &b, &sh, d);
    }
    if (e == PFI_OK) {
        tree_short_say(t, r->budget_w, &sh, d);
        tree_totals(J, r);
        r->feasible = sh.feasible;
        r->upper_bound = NAN;
        r->lambda = NAN;
        r->method = "tree: the strategy's allocation, then each level over its limit (deepest "
                    "first) reallocated among its jobs by the same strategy";
        tree_sums(J, t, r->budget_w, r, tr);
    }
    sub_free(&b);
    pfi_free(order);
    pfi_free(depth);
    return e;
}

/*
 * Priority bands for the strategies other than the oracle (whose greedy takes the bands in
 * order itself): the bands highest first, each allocated by the strategy under every limit
 * with the higher bands held at the caps they got and the lower ones at their lowest caps
 * (cap_lo_w = cap_hi_w pins them), so a band gets power only where every higher band has
 * what the strategy gives it; a reduction thus comes from the lowest band first. One
 * allocation without bands first checks the inputs and gives the totals that pins would
 * change (the least power, floors not met). Cost: one tree allocation per band, plus one.
 */
static pfi_error alloc_tree_bands(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                                  const pfi_alloc_tree *t, pfi_alloc_tree_workspace *ws,
                                  pfi_alloc_result *r, pfi_alloc_tree_result *tr, pfi_diag *d)
{
    size_t n = J->n;
    pfi_alloc_tree tb = *t;
    tb.band = NULL;
    pfi_error e = pfi_allocate_tree_ws(J, o, &tb, ws, r, tr, d);
    if (e != PFI_OK)
        return e;
    double min_power = r->min_power_w;
    size_t unmet = r->floors_unmet;
    bool feasible = r->feasible;
    size_t nn = t->n_nodes;
    double *buf = pfi_malloc((5 * n + nn + 2) * sizeof *buf);
    if (buf == NULL)
        return PFI_ERR_NOMEM;
    double *lo = buf, *hi = lo + n, *low = hi + n, *got = low + n, *top = got + n;
    double *cut = top + n; /* [nn + 1]: the highest band with a job below its top there */
    for (size_t j = 0; j < n; j++) {
        low[j] = alloc_job_lowest_cap(J, j);
        top[j] = alloc_opt(J->cap_hi_w, j, J->cap_w[J->offset[j + 1] - 1]);
        got[j] = NAN;
    }
    pfi_alloc_jobs jj = *J;
    jj.cap_lo_w = lo;
    jj.cap_hi_w = hi;
    double cur = INFINITY;
    for (;;) {
        double b = -INFINITY;
        bool any = false;
        for (size_t j = 0; j < n; j++) {
            double bj = alloc_opt(t->band, j, 0.0);
            if (bj < cur && bj >= b) {
                b = bj;
                any = true;
            }
        }
        if (!any)
            break;
        cur = b;
        /* a job cut below its top in a higher band keeps the band's jobs at its level at
           their lowest caps: the strategy may have left room there (not every strategy
           fills what a level frees), which must not go to a lower band */
        for (size_t a = 0; a <= nn; a++)
            cut[a] = -INFINITY;
        for (size_t j = 0; j < n; j++) {
            size_t a = job_slot(t, j);
            double bj = alloc_opt(t->band, j, 0.0);
            if (bj > b && got[j] < top[j] * (1 - 1e-9))
                cut[a] = fmax(cut[a], bj);
        }
        for (size_t j = 0; j < n; j++) {
            double bj = alloc_opt(t->band, j, 0.0);
            size_t a = job_slot(t, j);
            bool pin_low = bj < b || (bj == b && cut[a] > b);
            lo[j] = bj > b ? got[j] : pin_low ? low[j] : alloc_opt(J->cap_lo_w, j, NAN);
            hi[j] = bj > b ? got[j] : pin_low ? low[j] : alloc_opt(J->cap_hi_w, j, NAN);
        }
        /* the strategy's reallocation of a level over its limit only lowers caps, so the
           budget it frees would go to a lower band: the band's pass again, its caps now its
           lowest, until it takes no more (at most 30 times) */
        double last = -1;
        for (int pass = 0; pass < 30; pass++) {
            if ((e = pfi_allocate_tree_ws(&jj, o, &tb, ws, r, tr, d)) != PFI_OK)
                break;
            double sum = 0, scale = 0;
            for (size_t j = 0; j < n; j++)
                if (alloc_opt(t->band, j, 0.0) == b) {
                    got[j] = r->cap_w[j];
                    lo[j] = r->cap_w[j];
                    sum += alloc_opt(J->gpus, j, 1.0) * r->cap_w[j];
                    scale += alloc_opt(J->gpus, j, 1.0) * J->cap_w[J->offset[j + 1] - 1];
                }
            if (!r->feasible || sum <= last + 1e-12 * scale)
                break;
            last = sum;
        }
        if (e != PFI_OK)
            break;
    }
    pfi_free(buf);
    if (e != PFI_OK)
        return e;
    r->min_power_w = min_power;
    r->floors_unmet = unmet;
    if (feasible && !r->feasible) {
        /* feasible without bands, so with them: a band pass is infeasible only by rounding
           (a level filled to its limit by a higher band, the pins summed again); its
           caps are the lowest, every limit within rounding */
        r->feasible = true;
        r->shortfall_w = 0;
        if (d != NULL)
            pfi_diag_clear(d);
    }
    /* the marginals on each job's own curve at its cap: a band pass's allocation pinned the
       other bands, so its marginals said 'at the lowest cap' of a job above it */
    for (size_t j = 0; j < J->n; j++)
        tree_marginals(J, j, r);
    r->method = "tree: the strategy's allocation, each priority band in turn (highest first, "
                "the lower bands at their lowest caps), then each level over its limit "
                "(deepest first) reallocated among its jobs by the same strategy";
    return PFI_OK;
}

/* A job with a cap bound or a floor (the arrays may be there, all NaN, as the command passes
   them). */
static bool tree_has_bounds(const pfi_alloc_jobs *J)
{
    for (size_t j = 0; j < J->n; j++)
        if (!isnan(alloc_opt(J->cap_lo_w, j, NAN)) || !isnan(alloc_opt(J->cap_hi_w, j, NAN)) ||
            !isnan(alloc_opt(J->floor_frac, j, NAN)))
            return true;
    return false;
}

/* More than one band among the jobs. */
static bool tree_has_bands(const pfi_alloc_jobs *J, const pfi_alloc_tree *t)
{
    for (size_t j = 1; t->band != NULL && j < J->n; j++)
        if (alloc_opt(t->band, j, 0.0) != alloc_opt(t->band, 0, 0.0))
            return true;
    return false;
}

/* The allocation of pfi_allocate_tree_ws, by strategy (its shortfall set after). */
static pfi_error tree_dispatch(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                               const pfi_alloc_tree *t, pfi_alloc_tree_workspace *ws,
                               pfi_alloc_result *r, pfi_alloc_tree_result *tr, pfi_diag *d)
{
    if (ws == NULL)
        return tree_fail(d, PFI_ERR_INVALID_ARGUMENT, "the tree allocator needs a workspace");
    pfi_error e = check_tree(J, t, tr, d);
    if (e != PFI_OK)
        return e;
    if (o->strategy != PFI_STRATEGY_ORACLE && t->band != NULL) {
        bool bands = false;
        for (size_t j = 1; j < J->n && !bands; j++)
            bands = alloc_opt(t->band, j, 0.0) != alloc_opt(t->band, 0, 0.0);
        if (bands)
            return alloc_tree_bands(J, o, t, ws, r, tr, d);
    }
    /* the flat allocation: the inputs checked, the budget and totals, the strategy's caps;
       a reserve budget counts caps, so the flat one runs without it and B is set here */
    pfi_alloc_options fo = *o;
    bool reserve = t->budget_kind == PFI_LIMIT_RESERVE;
    if (reserve)
        fo.budget_w = 1e300; /* finite (pfi_allocate refuses inf), never binding */
    if (reserve && !isnan(o->budget_w) && !(o->budget_w >= 0))
        return tree_fail(d, PFI_ERR_INVALID_ARGUMENT, "the budget must be >= 0 W");
    bool oracle = o->strategy == PFI_STRATEGY_ORACLE;
    /* the oracle needs only the checks and the totals (its own pass): no flat allocation */
    if ((e = oracle ? alloc_check_inputs(J, &fo, r, d) : pfi_allocate(J, &fo, r, d)) != PFI_OK)
        return e;
    /* the flat optimum first (tree_flat_first) for a drawn budget, continuous caps, no bands,
       bounds or floors; skipped when a level surely binds */
    bool flat_first =
        oracle && !reserve && !(o->cap_step_w > 0) && !tree_has_bands(J, t) && !tree_has_bounds(J);
    /* the hint, unless the last call on this workspace settled it (a controller's periods
       change little): it took the flat optimum (the hint's cost saved where the flat attempt
       succeeds), or its greedy found an inner level binding (the greedy at once, the flat
       attempt skipped; the greedy's first pass sums the reference power, r->budget_w NaN
       until then) */
    bool hopeless = false, last_flat = ws->last_flat, last_inner = ws->last_inner;
    ws->last_flat = ws->last_inner = false;
    if (oracle && !reserve && flat_first && last_inner) {
        hopeless = true;
        r->budget_w = NAN;
    } else if (oracle && !reserve) {
        double ref;
        hopeless = tree_ref_hint(J, o, t, ws, flat_first && !last_flat, &ref);
        r->budget_w = isnan(o->budget_w) ? (1.0 - o->reduction) * ref : o->budget_w;
    }
    if (reserve) {
        double top = 0;
        for (size_t j = 0; j < J->n; j++)
            top += alloc_opt(J->gpus, j, 1.0) * J->cap_w[J->offset[j + 1] - 1];
        r->budget_w = isnan(o->budget_w) ? (1.0 - o->reduction) * top : o->budget_w;
    }
    if (flat_first && !hopeless && tree_flat_first(J, o, t, ws, r, tr)) {
        ws->last_flat = true;
        return PFI_OK;
    }
    if (oracle) {
        bool inner = true;
        e = tree_oracle(J, o, t, ws, r, tr, d, hopeless ? &inner : NULL);
        /* the greedy's result stands (an inner level bound, or the flat attempt failed) */
        ws->last_inner = e == PFI_OK && flat_first && inner;
        if (e != PFI_OK || inner)
            return e;
        /* the hint was wrong, no inner level bound: the flat optimum after all, so that the
           result is the one without the hint */
        if (tree_flat_first(J, o, t, ws, r, tr)) {
            ws->last_flat = true;
            return PFI_OK;
        }
        e = tree_oracle(J, o, t, ws, r, tr, d, NULL);
        ws->last_inner = e == PFI_OK;
        return e;
    }
    return alloc_tree_heuristic(J, o, t, r, tr, d);
}

void alloc_tree_ws_paths(pfi_alloc_tree_workspace *ws, bool no_fast, bool no_simd)
{
    ws->no_fast = no_fast;
    ws->w->no_simd = no_simd;
}

bool alloc_tree_ws_took_fast(const pfi_alloc_tree_workspace *ws)
{
    return ws->took_fast;
}

pfi_error pfi_allocate_tree_ws(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                               const pfi_alloc_tree *t, pfi_alloc_tree_workspace *ws,
                               pfi_alloc_result *r, pfi_alloc_tree_result *tr, pfi_diag *d)
{
    if (ws != NULL)
        ws->took_fast = false;
    pfi_error e = tree_dispatch(J, o, t, ws, r, tr, d);
    if (e != PFI_OK || r->feasible)
        return e;
    double site = t->budget_kind == PFI_LIMIT_RESERVE ? tr->site_reserve_w : tr->site_drawn_w;
    if (site > r->budget_w * (1 + 1e-9) + 1e-9)
        return e; /* the budget's own shortfall */
    /* infeasible at a level, not at the site budget: the shortfall is the most any limit is
       over, in its kind, with every job under it at its lowest cap (was NaN, 0 or a rounding
       residue of the budget's) */
    double most = r->shortfall_w > 0 ? r->shortfall_w : 0;
    for (size_t a = 0; a < t->n_nodes; a++) {
        double used = t->kind[a] == PFI_LIMIT_RESERVE ? tr->reserve_w[a] : tr->drawn_w[a];
        if (isfinite(t->limit_w[a]) && used - t->limit_w[a] > most)
            most = used - t->limit_w[a];
    }
    r->shortfall_w = most;
    return e;
}

pfi_error pfi_allocate_tree(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                            const pfi_alloc_tree *t, pfi_alloc_result *r, pfi_alloc_tree_result *tr,
                            pfi_diag *d)
{
    pfi_alloc_tree_workspace *ws = NULL;
    pfi_error e = pfi_alloc_tree_workspace_create(&ws);
    if (e == PFI_OK)
        e = pfi_allocate_tree_ws(J, o, t, ws, r, tr, d);
    pfi_alloc_tree_workspace_destroy(ws);
    return e;
}
