/*
 * Power allocation under a cluster budget: the public entry points (options, results,
 * pfi_allocate, pfi_allocate_ws) and the phases of one call, which the strategies of
 * power/strategy.h fill in. See pfi/allocate.h for the method and its guarantees.
 */
#include "pfi/allocate.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/memory.h"
#include "power/alloc_internal.h"
#include "power/strategy.h"

void pfi_alloc_options_init(pfi_alloc_options *o)
{
    memset(o, 0, sizeof *o);
    o->strategy = PFI_STRATEGY_ORACLE;
    o->budget_w = NAN;
    o->reduction = 0.3;
    o->cap_step_w = 0.0;
    o->class_factor = 2.0;
    o->x_min = 0.02;
    pfi_model_job_init(&o->shape, 1.0, 700.0);
}

pfi_error pfi_alloc_result_init(pfi_alloc_result *r, size_t n)
{
    memset(r, 0, sizeof *r);
    double **arrays[] = {&r->cap_w,         &r->power_w,     &r->tput_tok_s,
                         &r->marginal_down, &r->marginal_up, &r->shed_w};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        *arrays[i] = pfi_calloc(n > 0 ? n : 1, sizeof(double));
        if (*arrays[i] == NULL) {
            pfi_alloc_result_clear(r);
            return PFI_ERR_NOMEM;
        }
    }
    r->n = n;
    return PFI_OK;
}

void pfi_alloc_result_clear(pfi_alloc_result *r)
{
    if (r == NULL)
        return;
    pfi_free(r->cap_w);
    pfi_free(r->power_w);
    pfi_free(r->tput_tok_s);
    pfi_free(r->marginal_down);
    pfi_free(r->marginal_up);
    pfi_free(r->shed_w);
    memset(r, 0, sizeof *r);
}

pfi_error alloc_fail(pfi_diag *d, pfi_error e, const char *fmt, ...)
{
    if (d != NULL) {
        pfi_diag_clear(d);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->message, sizeof d->message, fmt, ap);
        va_end(ap);
    }
    return e;
}

/* Job j's estimated curve (the caller's): finite power > 0, throughput >= 0, neither falling
   as the cap rises. */
static bool est_curve_ok(const pfi_alloc_jobs *J, size_t j)
{
    size_t a = J->offset[j], b = J->offset[j + 1];
    for (size_t i = a; i < b; i++)
        if (!(J->est_power_w[i] > 0) || !isfinite(J->est_power_w[i]) ||
            !(J->est_tput_tok_s[i] >= 0) || !isfinite(J->est_tput_tok_s[i]) ||
            (i > a && (J->est_power_w[i] < J->est_power_w[i - 1] ||
                       J->est_tput_tok_s[i] < J->est_tput_tok_s[i - 1])))
            return false;
    return true;
}

/* The checks that need no curve: the call's arguments, the options, and per job the weight,
   the GPU count and what the strategy needs (its row's needs), job by job. */
pfi_error alloc_check_inputs(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                             const pfi_alloc_result *r, pfi_diag *d)
{
    if (J == NULL || o == NULL || r == NULL || J->n == 0 || J->offset == NULL || J->cap_w == NULL ||
        J->power_w == NULL || J->tput_tok_s == NULL)
        return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT, "no jobs");
    if (r->n != J->n)
        return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT, "result sized for %zu jobs, not %zu", r->n,
                          J->n);
    if ((unsigned)o->strategy >= PFI_STRATEGY_COUNT)
        return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT, "unknown strategy");
    if (isnan(o->budget_w) ? !(o->reduction >= 0 && o->reduction <= 1)
                           : !(o->budget_w >= 0 && isfinite(o->budget_w)))
        return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT,
                          "the budget must be >= 0 W, or the reduction in [0, 1]");
    if (!(o->cap_step_w >= 0) || !isfinite(o->cap_step_w))
        return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT, "the cap step must be >= 0 W");
    unsigned needs = alloc_strategies[o->strategy].needs;
    bool est = (needs & ALLOC_NEEDS_EST) != 0;
    bool given = est && J->est_power_w != NULL && J->est_tput_tok_s != NULL;
    bool need_pfi = (needs & ALLOC_NEEDS_PFI) || (est && !given);
    bool need_feature = (needs & ALLOC_NEEDS_FEATURE) != 0;
    if (J->weight == NULL && J->gpus == NULL && !need_pfi && !need_feature && !given)
        return PFI_OK; /* nothing per job to check here (the curves are checked later) */
    for (size_t j = 0; j < J->n; j++) {
        if (J->weight != NULL &&
            (alloc_opt(J->weight, j, 1.0) < 0 || !isfinite(alloc_opt(J->weight, j, 1.0))))
            return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: weight must be >= 0", j + 1);
        if (J->gpus != NULL && !(alloc_opt(J->gpus, j, 1.0) >= 1))
            return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: gpus must be >= 1", j + 1);
        if (need_pfi && (J->pfi == NULL || !(J->pfi[j] > 0) || !isfinite(J->pfi[j])))
            return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT,
                              "job %zu: strategy %s needs a PFI estimate > 0", j + 1,
                              pfi_strategy_name(o->strategy));
        if (need_feature &&
            (J->feature == NULL || !(J->feature[j] >= 0) || !isfinite(J->feature[j])))
            return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT,
                              "job %zu: strategy %s needs a feature value >= 0", j + 1,
                              pfi_strategy_name(o->strategy));
        if (given && !est_curve_ok(J, j))
            return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT,
                              "job %zu: the estimated curve needs finite power > 0 and "
                              "throughput >= 0, neither falling as the cap rises",
                              j + 1);
    }
    return PFI_OK;
}

pfi_error pfi_allocate(const pfi_alloc_jobs *J, const pfi_alloc_options *o, pfi_alloc_result *r,
                       pfi_diag *d)
{
    pfi_alloc_workspace *w = NULL;
    pfi_error e = pfi_alloc_workspace_create(&w);
    if (e == PFI_OK)
        e = pfi_allocate_ws(J, o, w, r, d);
    pfi_alloc_workspace_destroy(w);
    return e;
}

/* A run of one call: the context, no totals yet, every job left to the output phase. */
static void run_start(alloc_run *run, const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                      pfi_alloc_workspace *w)
{
    memset(run, 0, sizeof *run);
    run->x.J = J;
    run->x.o = o;
    run->x.w = w;
    run->x.discrete = o->cap_step_w > 0;
    run->list = NULL;
    run->n_list = J->n;
    w->n_c = w->n_e = w->n_env = w->n_eenv = w->n_b = 0;
}

/* The budget and the totals of the pass into r; whether the budget binds (feasible, and the
   jobs at their tops would draw more). */
static bool set_totals(alloc_run *run, pfi_alloc_result *r)
{
    const pfi_alloc_options *o = run->x.o;
    const alloc_sums *S = &run->S;
    double budget = isnan(o->budget_w) ? (1.0 - o->reduction) * S->ref_p : o->budget_w;
    run->budget_w = budget;
    r->budget_w = budget;
    r->ref_power_w = S->ref_p;
    r->ref_tput_tok_s = S->ref_t;
    r->min_power_w = S->lo_p;
    r->floors_unmet = S->unmet;
    r->feasible = S->lo_p <= budget;
    r->shortfall_w = r->feasible ? 0.0 : S->lo_p - budget;
    r->upper_bound = NAN;
    r->lambda = NAN;
    return r->feasible && S->hi_p > budget;
}

/* The budget does not bind: every job at its upper bound, or, infeasible, at its lower. */
static void place_at_bounds(alloc_run *run, pfi_alloc_result *r)
{
    const alloc_ctx *x = &run->x;
    for (size_t j = 0; j < x->J->n; j++) {
        alloc_view v = alloc_true_view(x, j);
        x->w->pick[j] = r->feasible ? v.d[v.m - 1] : v.d[0];
    }
    r->method = r->feasible ? "budget not binding: every job at its upper bound"
                            : "infeasible: every job at its lower bound";
}

/*
 * One call in phases: the inputs, the strategy's pass over the jobs, the budget and totals,
 * the placement (the strategy's when the budget binds), the outputs.
 */
pfi_error pfi_allocate_ws(const pfi_alloc_jobs *J, const pfi_alloc_options *o,
                          pfi_alloc_workspace *w, pfi_alloc_result *r, pfi_diag *d)
{
    if (w == NULL)
        return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT, "no workspace");
    pfi_error e = alloc_check_inputs(J, o, r, d);
    if (e != PFI_OK)
        return e;
    if (!alloc_ws_jobs(w, J->n))
        return PFI_ERR_NOMEM;
    const alloc_strategy *st = &alloc_strategies[o->strategy];
    alloc_run run;
    run_start(&run, J, o, w);
    e = st->pass != NULL ? st->pass(&run, r, d) : alloc_pass_jobs(&run, false, d);
    if (e != PFI_OK)
        return e;
    bool binding = set_totals(&run, r);
    if (!binding)
        place_at_bounds(&run, r);
    else if ((e = st->place(&run, r, d)) != PFI_OK)
        return e;
    alloc_output_jobs(&run, r);
    if (binding && run.x.discrete && o->strategy == PFI_STRATEGY_ORACLE)
        alloc_fill_grid(&run, r);
    /* every job at its top is optimal when the budget does not bind (curves never fall) */
    if (r->feasible && !binding && st->lp_bound)
        r->upper_bound = r->objective;
    return PFI_OK;
}
