/*
 * The oracle strategy (PFI_STRATEGY_ORACLE): the upper concave envelope of every job's
 * (D, w·T) and the Lagrangian threshold over the envelope segments, which is the optimum for
 * concave curves and within the envelope bound otherwise (pfi/allocate.h). The envelopes
 * are alloc_job_envelope's, the threshold alloc_pick's; large plain instances take the
 * sampled pass of oracle_pass.c.
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "pfi/allocate.h"
#include "power/alloc_internal.h"
#include "power/strategy.h"

/* The pass: the sampled one when the instance qualifies and the sample brackets the
   threshold, else the plain pass with every true envelope segment to the selection. */
pfi_error alloc_oracle_pass(alloc_run *run, pfi_alloc_result *r, pfi_diag *d)
{
    double b_hi, b_lo;
    run->sampled = alloc_oracle_bracket(&run->x, &b_hi, &b_lo);
    if (run->sampled)
        return alloc_fast_pass(&run->x, b_hi, b_lo, r, &run->S, d);
    return alloc_pass_jobs(run, true, d);
}

/* The placement: the threshold over the segments the pass handed to the selection, when the
   sampled bracket holds it; otherwise (or after the plain pass) over every segment. */
pfi_error alloc_oracle_place(alloc_run *run, pfi_alloc_result *r, pfi_diag *d)
{
    (void)d;
    alloc_ctx *x = &run->x;
    pfi_alloc_workspace *w = x->w;
    alloc_sums *S = &run->S;
    double cap = run->budget_w - S->lo_p, err, inside = alloc_sum8(w->bw, w->n_b, &err);
    /* alloc_bracket_holds on the widths inside summed in order, which eight partial sums
       settle unless too close to tell */
    int reach = alloc_sum_above(S->above, inside, err, cap);
    if (reach < 0)
        inside = alloc_sum_seq(w->bw, w->n_b);
    bool holds = reach < 0 ? alloc_bracket_holds(S->above, cap, inside, S->below)
                           : S->above <= cap && (S->below == 0 || reach == 1);
    if (run->sampled && holds) {
        run->list = w->list;
        run->n_list = w->n_list;
    } else if (run->sampled) {
        /* the guess missed: every segment goes to the selection, every job is placed
           after it */
        w->n_b = 0;
        S->above = 0;
        S->below = 0;
        S->value = 0;
        pfi_error e;
        for (size_t j = 0; j < x->J->n; j++)
            if ((e = alloc_job_classify(x, j, false, INFINITY, -INFINITY, &S->above, &S->below)) !=
                PFI_OK)
                return e;
    }
    double lam;
    w->tot_in[0] = S->tp;
    w->tot_in[1] = S->tt;
    w->tot_in[2] = S->value;
    r->upper_bound =
        S->value + alloc_pick(x, false, cap, S->above, run->list, run->n_list, r, &lam);
    run->placed = true;
    r->lambda = lam;
    r->method = x->discrete ? "concave envelope + Lagrangian threshold, caps on a grid"
                            : "concave envelope + Lagrangian threshold";
    return PFI_OK;
}
