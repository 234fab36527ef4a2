/*
 * Throughput curves inferred from a PFI by the measured curves of other jobs (see
 * stats/curve_infer.h): where the DESIGN §7 model's curve shape does not match a platform's
 * real curves (real LLM jobs fall steeply below ~200 W and are flat near the top), curves of
 * jobs of similar PFI measured on the same platform carry the shape.
 */
#include "stats/curve_infer.h"

#include <math.h>
#include <stdbool.h>

#include "core/memory.h"

void curve_bank_clear(curve_bank *b)
{
    pfi_free(b->offset);
    pfi_free(b->p_rel);
    pfi_free(b->t_rel);
    pfi_free(b->pfi);
    b->offset = NULL;
    b->p_rel = b->t_rel = b->pfi = NULL;
    b->n = 0;
}

pfi_error curve_bank_build(curve_bank *b, size_t n, const size_t *offset, const double *power_w,
                           const double *tput, const double *pfi)
{
    size_t np = offset[n];
    b->n = 0;
    b->offset = pfi_malloc((n + 1) * sizeof *b->offset);
    b->p_rel = pfi_malloc((np ? np : 1) * sizeof *b->p_rel);
    b->t_rel = pfi_malloc((np ? np : 1) * sizeof *b->t_rel);
    b->pfi = pfi_malloc((n ? n : 1) * sizeof *b->pfi);
    if (!b->offset || !b->p_rel || !b->t_rel || !b->pfi) {
        curve_bank_clear(b);
        return PFI_ERR_NOMEM;
    }
    size_t q = 0;
    b->offset[0] = 0;
    for (size_t i = 0; i < n; i++) {
        size_t a = offset[i], e = offset[i + 1];
        double pr = e > a ? power_w[e - 1] : NAN, tr = e > a ? tput[e - 1] : NAN;
        bool ok = pr > 0 && tr > 0 && pfi[i] > 0 && isfinite(pr) && isfinite(tr);
        b->pfi[i] = ok ? pfi[i] : NAN;
        size_t start = q;
        for (size_t k = a; ok && k + 1 < e; k++) {
            double p = power_w[k] / pr, t = tput[k] / tr;
            if (!(p > 0 && p < 1) || !isfinite(t) || (q > start && !(p > b->p_rel[q - 1])))
                continue;
            b->p_rel[q] = p;
            b->t_rel[q] = t < 0 ? 0 : t > 1 ? 1 : t;
            q++;
        }
        if (ok) {
            b->p_rel[q] = 1;
            b->t_rel[q] = 1;
            q++;
        }
        b->offset[i + 1] = q;
    }
    b->n = n;
    return PFI_OK;
}

/* Curve i read at relative power p (see curve_bank_infer). */
static double curve_at(const curve_bank *b, size_t i, double p)
{
    size_t a = b->offset[i], e = b->offset[i + 1];
    if (p >= 1)
        return 1;
    if (p <= b->p_rel[a])
        return b->t_rel[a] * p / b->p_rel[a];
    size_t k = a + 1;
    while (k < e && b->p_rel[k] < p)
        k++;
    double p0 = b->p_rel[k - 1], p1 = b->p_rel[k], t0 = b->t_rel[k - 1], t1 = b->t_rel[k];
    return t0 + (t1 - t0) * (p - p0) / (p1 - p0);
}

size_t curve_bank_infer(const curve_bank *b, size_t exclude, double pfi, const double *p_rel,
                        size_t k, double *t_rel)
{
    size_t lo = b->n, hi = b->n;
    for (size_t i = 0; i < b->n; i++) {
        double v = b->pfi[i];
        if (i == exclude || isnan(v))
            continue;
        if (v <= pfi && (lo == b->n || v > b->pfi[lo]))
            lo = i;
        if (v >= pfi && (hi == b->n || v < b->pfi[hi]))
            hi = i;
    }
    if (lo == b->n && hi == b->n)
        return 0;
    double w_hi; /* the weight of curve hi */
    if (lo == b->n)
        w_hi = 1;
    else if (hi == b->n || b->pfi[hi] == b->pfi[lo])
        w_hi = 0;
    else
        w_hi = (pfi - b->pfi[lo]) / (b->pfi[hi] - b->pfi[lo]);
    for (size_t j = 0; j < k; j++) {
        double t = 0;
        if (w_hi < 1)
            t += (1 - w_hi) * curve_at(b, lo, p_rel[j]);
        if (w_hi > 0)
            t += w_hi * curve_at(b, hi, p_rel[j]);
        if (j > 0 && t < t_rel[j - 1])
            t = t_rel[j - 1];
        t_rel[j] = t;
    }
    return (lo == b->n || hi == b->n || lo == hi || w_hi == 0 || w_hi == 1) ? 1 : 2;
}
