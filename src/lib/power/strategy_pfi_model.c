/*
 * The pfi-model strategy (PFI_STRATEGY_PFI_MODEL) [ours]: each job's PFI becomes an estimated
 * curve through the job's reference point by inverting the DESIGN §7 model (or the caller's
 * estimated curves are taken); the oracle runs on the estimated curves, and the sheds it
 * chooses are the shares applied to the true curves by water-filling.
 */
#include <stdbool.h>
#include <stddef.h>

#include "pfi/allocate.h"
#include "pfi/curve.h"
#include "pfi/model.h"
#include "power/alloc_internal.h"
#include "power/strategy.h"

/*
 * The compute share α at which the §7 model m (α itself ignored) has ratio PFI pfi on the caps
 * c[k]; 1 when it cannot be found (fewer than two caps, an unknown PFI, or no cap of the grid
 * binds in the model, so that the PFI carries no information: treat the job as compute-bound).
 * A PFI outside what α ∈ [0.02, 1] reaches gives the nearer end.
 */
static double share_for_pfi(const pfi_model_job *m, const double *c, size_t k, double x_min,
                            double pfi)
{
    double alpha;
    if (k < 2 || pfi_model_share_for_pfi(m, c, k, x_min, pfi, &alpha, NULL) != PFI_OK ||
        !(alpha > 0 && alpha <= 1))
        return 1.0;
    return alpha;
}

/* Estimated curves for pfi-model at every job's candidates: the caller's (interpolated where
   the candidates are not the curve's points) or the §7 model through each job's reference
   point. Only ratios to the reference enter, so the model runs per GPU with any scale. */
static pfi_error estimate_curves(const alloc_ctx *x, pfi_diag *d)
{
    const pfi_alloc_jobs *J = x->J;
    const pfi_alloc_options *o = x->o;
    pfi_alloc_workspace *w = x->w;
    bool given = J->est_power_w != NULL && J->est_tput_tok_s != NULL;
    double ps_frac = o->shape.power_static_w / o->shape.power_uncapped_w;
    w->n_e = 0;
    for (size_t j = 0; j < J->n; j++) {
        size_t a = J->offset[j], k = J->offset[j + 1] - a;
        w->kind[j] &= (unsigned char)~KIND_EST_MAT;
        if (given && !(w->kind[j] & KIND_MAT))
            continue; /* the caller's points are the candidates */
        alloc_view v = alloc_true_view(x, j);
        if (!alloc_ws_est(w, v.m))
            return PFI_ERR_NOMEM;
        size_t e0 = w->n_e;
        w->ec0[j] = e0;
        w->n_e += v.m;
        w->kind[j] |= KIND_EST_MAT;
        if (given) {
            for (size_t i = 0; i < v.m; i++) {
                w->ed[e0 + i] = pfi_interp(J->cap_w + a, J->est_power_w + a, k, v.c[i]);
                w->et[e0 + i] = pfi_interp(J->cap_w + a, J->est_tput_tok_s + a, k, v.c[i]);
            }
            continue;
        }
        const double *c = J->cap_w + a;
        double g = alloc_opt(J->gpus, j, 1.0);
        double d_ref = J->power_w[a + k - 1], t_ref = J->tput_tok_s[a + k - 1];
        pfi_model_job m = o->shape;
        m.gpus = 1;
        m.power_uncapped_w = d_ref / g;
        m.power_static_w = ps_frac * m.power_uncapped_w;
        double alpha = J->model_alpha != NULL ? J->model_alpha[j]
                                              : share_for_pfi(&m, c, k, o->x_min, J->pfi[j]);
        if (!(alpha > 0 && alpha <= 1))
            alpha = 1.0;
        pfi_model_set_share(&m, alpha);
        pfi_model_point ref, pt;
        if (pfi_model_eval(&m, c[k - 1], &ref) != PFI_OK ||
            !(ref.job_power_w > 0 && ref.throughput > 0))
            return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: model rejected", j + 1);
        for (size_t i = 0; i < v.m; i++) {
            if (pfi_model_eval(&m, v.c[i], &pt) != PFI_OK)
                return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: model rejected", j + 1);
            w->ed[e0 + i] = d_ref * pt.job_power_w / ref.job_power_w;
            w->et[e0 + i] = t_ref * pt.throughput / ref.throughput;
        }
        /* the model is monotone; the clamp to the reference keeps rounding from breaking it */
        for (size_t i = 1; i < v.m; i++) {
            if (w->ed[e0 + i] < w->ed[e0 + i - 1])
                w->ed[e0 + i] = w->ed[e0 + i - 1];
            if (w->et[e0 + i] < w->et[e0 + i - 1])
                w->et[e0 + i] = w->et[e0 + i - 1];
        }
    }
    return PFI_OK;
}

/* The estimated world: every job's estimated envelope, its segments to the selection, and the
   totals of its highest power (*hi) and of its lowest envelope vertex (*lo). */
static pfi_error estimated_envelopes(const alloc_ctx *x, double *hi, double *lo)
{
    double est_hi = 0, est_lo = 0, above_e = 0;
    size_t below_e = 0;
    pfi_error e;
    for (size_t j = 0; j < x->J->n; j++) {
        if ((e = alloc_job_envelope(x, j, true)) != PFI_OK)
            return e;
        alloc_view v = alloc_est_view(x, j);
        est_hi += v.d[v.m - 1];
        est_lo += v.d[alloc_vtx(x, j, true, 0)];
        if ((e = alloc_job_classify(x, j, true, INFINITY, -INFINITY, &above_e, &below_e)) != PFI_OK)
            return e;
    }
    *hi = est_hi;
    *lo = est_lo;
    return PFI_OK;
}

pfi_error alloc_pfi_model_place(alloc_run *run, pfi_alloc_result *r, pfi_diag *d)
{
    const alloc_ctx *x = &run->x;
    pfi_alloc_workspace *w = x->w;
    double need = run->S.hi_p - run->budget_w;
    double est_hi, est_lo;
    pfi_error e;
    if ((e = estimate_curves(x, d)) != PFI_OK ||
        (e = estimated_envelopes(x, &est_hi, &est_lo)) != PFI_OK)
        return e;
    /* the estimated world sheds the same watts as the true one must */
    double est_budget = est_hi - need;
    if (est_budget < est_lo)
        est_budget = est_lo;
    double lam;
    alloc_pick(x, true, est_budget - est_lo, 0.0, NULL, 0, NULL, &lam);
    for (size_t j = 0; j < x->J->n; j++) {
        alloc_view v = alloc_est_view(x, j);
        w->share[j] = v.d[v.m - 1] - w->pick[j];
    }
    alloc_shed_by_shares(run);
    r->method = "model curves from PFI, oracle on them, sheds applied by water-filling";
    return PFI_OK;
}
