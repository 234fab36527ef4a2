/*
 * The allocator's per-job phases (power/alloc_internal.h): a job's curve validated, its cap
 * bounds and candidates set up, its concave envelope found and its segments handed to the
 * selection; the plain pass over the jobs; and, once a strategy has chosen each job's power,
 * the job's cap, power, throughput and marginals on its true curve.
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/allocate.h"
#include "pfi/curve.h"
#include "power/alloc_internal.h"

/* As pfi_envelope's test: > 0 when c lies above the line a→b. */
static inline double turn(double ax, double ay, double bx, double by, double cx, double cy)
{
    return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
}

/*
 * The upper concave envelope of job j's (d, wt·t) (true or estimated). When every point is
 * a vertex (power strictly rising, slopes strictly falling: the usual measured curve) nothing
 * is stored; otherwise pfi_envelope's vertices are kept in the workspace.
 */
pfi_error alloc_job_envelope(const alloc_ctx *x, size_t j, bool est)
{
    pfi_alloc_workspace *w = x->w;
    alloc_view v = alloc_view_of(x, j, est);
    unsigned char bit = est ? KIND_EST_ENV : KIND_ENV;
    bool identity = true;
    for (size_t i = 1; i < v.m && identity; i++) {
        if (!(v.d[i] > v.d[i - 1]))
            identity = false;
        else if (i >= 2 && !(turn(v.d[i - 2], v.wt * v.t[i - 2], v.d[i - 1], v.wt * v.t[i - 1],
                                  v.d[i], v.wt * v.t[i]) < 0))
            identity = false;
        else if (i >= 2 && alloc_slope(&v, i - 1, i) > alloc_slope(&v, i - 2, i - 1))
            identity = false; /* a rounded slope that rises: pfi_envelope drops the point */
    }
    if (identity) {
        w->kind[j] &= (unsigned char)~bit;
        (est ? w->nee : w->ne)[j] = (uint32_t)v.m;
        return PFI_OK;
    }
    if (!alloc_ws_scratch(w, v.m))
        return PFI_ERR_NOMEM;
    for (size_t i = 0; i < v.m; i++)
        w->y[i] = v.wt * v.t[i];
    size_t ne = pfi_envelope(v.d, w->y, v.m, w->idx);
    uint32_t **env = est ? &w->eenv : &w->env;
    size_t *cap = est ? &w->cap_eenv : &w->cap_env, *used = est ? &w->n_eenv : &w->n_env;
    if (!alloc_ws_env(env, cap, *used, ne))
        return PFI_ERR_NOMEM;
    for (size_t i = 0; i < ne; i++)
        (*env)[*used + i] = (uint32_t)w->idx[i];
    (est ? w->eeo : w->eo)[j] = *used;
    *used += ne;
    (est ? w->nee : w->ne)[j] = (uint32_t)ne;
    w->kind[j] |= bit;
    return PFI_OK;
}

/* Smallest cap in a curve with T(c) >= need (need <= T at the last point). */
static double cap_for_tput(const double *c, const double *t, size_t k, double need)
{
    if (t[0] >= need)
        return c[0];
    for (size_t i = 1; i < k; i++) {
        if (t[i] >= need) {
            double f = (need - t[i - 1]) / (t[i] - t[i - 1]);
            double v = c[i - 1] + f * (c[i] - c[i - 1]);
            return v > c[i] ? c[i] : v;
        }
    }
    return c[k - 1];
}

double alloc_job_lowest_cap(const pfi_alloc_jobs *J, size_t j)
{
    size_t a = J->offset[j], k = J->offset[j + 1] - a;
    const double *c = J->cap_w + a, *T = J->tput_tok_s + a;
    double lo = alloc_opt(J->cap_lo_w, j, c[0]), hi = alloc_opt(J->cap_hi_w, j, c[k - 1]);
    double s = alloc_opt(J->floor_frac, j, 0.0);
    if (s > 0) {
        double need = s * T[k - 1];
        if (pfi_interp(c, T, k, hi) < need) {
            lo = hi;
        } else {
            double cf = cap_for_tput(c, T, k, need);
            if (cf > lo)
                lo = cf > hi ? hi : cf;
        }
    }
    return lo;
}

/*
 * Validate job j, find its cap bounds, and set up its candidates: the curve's own points when
 * the bounds are the curve's ends and caps are continuous; otherwise copied to the workspace
 * (lo, the curve's caps strictly inside, hi; or the grid multiples and hi).
 */
pfi_error alloc_job_prepare(const alloc_ctx *x, size_t j, size_t *unmet, pfi_diag *d)
{
    const pfi_alloc_jobs *J = x->J;
    const pfi_alloc_options *o = x->o;
    pfi_alloc_workspace *w = x->w;
    size_t a = J->offset[j], b = J->offset[j + 1];
    if (b <= a)
        return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: no curve points", j + 1);
    size_t k = b - a;
    const double *c = J->cap_w + a, *D = J->power_w + a, *T = J->tput_tok_s + a;
    pfi_curve_report rep;
    if (pfi_curve_check(k, c, D, T, &rep) != PFI_OK)
        return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT,
                          "job %zu: curve needs finite caps ascending, power > 0, throughput >= 0",
                          j + 1);
    if (rep.power_violations > 0 || rep.tput_violations > 0)
        return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT,
                          "job %zu: power or throughput falls as the cap rises (repair the curve "
                          "first)",
                          j + 1);
    if (k > ALLOC_MAX_CANDIDATES_PER_JOB)
        return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: more than %d curve points", j + 1,
                          ALLOC_MAX_CANDIDATES_PER_JOB);
    double lo = alloc_opt(J->cap_lo_w, j, c[0]), hi = alloc_opt(J->cap_hi_w, j, c[k - 1]);
    if (!(lo >= c[0] && hi <= c[k - 1] && lo <= hi))
        return alloc_fail(
            d, PFI_ERR_INVALID_ARGUMENT,
            "job %zu: cap bounds [%g, %g] W outside the curve's [%g, %g] W or reversed", j + 1, lo,
            hi, c[0], c[k - 1]);
    double s = alloc_opt(J->floor_frac, j, 0.0);
    if (!(s >= 0 && s <= 1))
        return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT, "job %zu: floor %g outside [0, 1]", j + 1,
                          s);
    if (s > 0) {
        double need = s * T[k - 1];
        if (pfi_interp(c, T, k, hi) < need) {
            (*unmet)++;
            lo = hi;
        } else {
            double cf = cap_for_tput(c, T, k, need);
            if (cf > lo)
                lo = cf > hi ? hi : cf;
        }
    }
    if (!x->discrete && lo == c[0] && hi == c[k - 1]) {
        w->kind[j] = 0;
        w->nc[j] = (uint32_t)k;
        return alloc_job_envelope(x, j, false);
    }
    size_t count;
    double step = o->cap_step_w, g = 0;
    if (x->discrete) {
        g = ceil(lo / step - 1e-9) * step;
        double span = (hi - g) / step;
        if (span > ALLOC_MAX_CANDIDATES_PER_JOB)
            return alloc_fail(d, PFI_ERR_INVALID_ARGUMENT,
                              "job %zu: cap step %g W gives more than %d caps", j + 1, step,
                              ALLOC_MAX_CANDIDATES_PER_JOB);
        count = span >= 0 ? (size_t)floor(span + 1e-9) + 3 : 2;
    } else {
        count = k + 2;
    }
    if (!alloc_ws_cand(w, count))
        return PFI_ERR_NOMEM;
    size_t c0 = w->n_c, m = 0;
    double *cc = w->cc + c0;
    if (x->discrete) {
        /* the lowest cap, the multiples of the step above it and the top cap: with the
           lowest cap always a candidate, the budget holds whatever the step */
        cc[m++] = lo;
        for (size_t i = 0; i + 2 < count; i++) {
            double v = g + (double)i * step;
            if (v >= hi - 1e-9 * step)
                break;
            if (v > lo + 1e-9 * step)
                cc[m++] = v;
        }
        if (hi > lo)
            cc[m++] = hi;
    } else {
        cc[m++] = lo;
        for (size_t i = 0; i < k; i++)
            if (c[i] > lo && c[i] < hi)
                cc[m++] = c[i];
        if (hi > lo)
            cc[m++] = hi;
    }
    for (size_t i = 0; i < m; i++) {
        w->cd[c0 + i] = pfi_interp(c, D, k, cc[i]);
        w->ct[c0 + i] = pfi_interp(c, T, k, cc[i]);
    }
    w->n_c += m;
    w->c0[j] = c0;
    w->nc[j] = (uint32_t)m;
    w->kind[j] = KIND_MAT;
    return alloc_job_envelope(x, j, false);
}

/* Hand job j's envelope segments to the selection: slope > hi adds to *above, slope in
   [lo, hi] goes to the buffer, the rest counts in *below. */
pfi_error alloc_job_classify(const alloc_ctx *x, size_t j, bool est, double hi, double lo,
                             double *above, size_t *below)
{
    pfi_alloc_workspace *w = x->w;
    alloc_view v = alloc_view_of(x, j, est);
    size_t ne = alloc_n_vtx(x, j, est);
    if (ne < 2)
        return PFI_OK;
    if (!alloc_ws_buf(w, ne - 1))
        return PFI_ERR_NOMEM;
    size_t p = alloc_vtx(x, j, est, 0);
    for (size_t s = 1; s < ne; s++) {
        size_t q = alloc_vtx(x, j, est, s);
        double sl = alloc_slope(&v, p, q), wd = v.d[q] - v.d[p];
        if (sl > hi) {
            *above += wd;
        } else if (sl >= lo) {
            w->bs[w->n_b] = sl;
            w->bw[w->n_b] = wd;
            w->n_b++;
        } else {
            (*below)++;
        }
        p = q;
    }
    return PFI_OK;
}

pfi_error alloc_pass_jobs(alloc_run *run, bool classify, pfi_diag *d)
{
    const alloc_ctx *x = &run->x;
    const pfi_alloc_jobs *J = x->J;
    alloc_sums *S = &run->S;
    pfi_error e;
    /* the selection's buffer at once for every segment of the curves as given (one per point
       but the first; a cap step or bounds can make more: then it grows), not doubled from
       small: fewer pages touched and no copies */
    if (classify && J->n > 0 && !alloc_ws_buf(x->w, J->offset[J->n] - J->offset[0]))
        return PFI_ERR_NOMEM;
    for (size_t j = 0; j < J->n; j++) {
        if ((e = alloc_job_prepare(x, j, &S->unmet, d)) != PFI_OK)
            return e;
        size_t last = J->offset[j + 1] - 1;
        S->ref_p += J->power_w[last];
        S->ref_t += J->tput_tok_s[last];
        alloc_view v = alloc_true_view(x, j);
        S->lo_p += v.d[0];
        S->hi_p += v.d[v.m - 1];
        if (classify && (e = alloc_job_classify(x, j, false, INFINITY, -INFINITY, &S->above,
                                                &S->below)) != PFI_OK)
            return e;
    }
    return PFI_OK;
}

/* The cap of a view drawing at most power p (snapped down to a candidate when snap). */
static double cap_for_power(const alloc_view *v, double p, bool snap)
{
    double tol = 1e-12 * fabs(p) + 1e-12;
    size_t i = 0;
    while (i + 1 < v->m && v->d[i + 1] <= p + tol)
        i++;
    if (snap || i + 1 == v->m || v->d[i + 1] <= v->d[i])
        return v->c[i];
    double f = (p - v->d[i]) / (v->d[i + 1] - v->d[i]);
    if (f < 0)
        f = 0;
    return v->c[i] + f * (v->c[i + 1] - v->c[i]);
}

/* Job j's outputs at power p on its true curve: cap, power, throughput, marginals, shed. */
static void output_job(const alloc_ctx *x, size_t j, double p, bool snap, pfi_alloc_result *r)
{
    const pfi_alloc_jobs *J = x->J;
    alloc_view v = alloc_true_view(x, j);
    double cap = cap_for_power(&v, p, snap);
    double pw = pfi_interp(v.c, v.d, v.m, cap), tp = pfi_interp(v.c, v.t, v.m, cap);
    r->cap_w[j] = cap;
    r->power_w[j] = pw;
    r->tput_tok_s[j] = tp;
    double ref = (x->w->kind[j] & KIND_COPY) ? v.d[v.m - 1] : J->power_w[J->offset[j + 1] - 1];
    r->shed_w[j] = ref - pw;
    /* envelope slopes around the drawn power */
    double down = NAN, up = NAN, tol = 1e-9 * fabs(pw) + 1e-9;
    size_t ne = alloc_n_vtx(x, j, false), prev = 0;
    for (size_t s = 0; s < ne; s++) {
        size_t q = alloc_vtx(x, j, false, s);
        double pv = v.d[q];
        if (fabs(pv - pw) <= tol) {
            if (s > 0)
                down = alloc_slope(&v, prev, q);
            if (s + 1 < ne)
                up = alloc_slope(&v, q, alloc_vtx(x, j, false, s + 1));
            break;
        }
        if (pv > pw) {
            if (s > 0)
                down = up = alloc_slope(&v, prev, q);
            break;
        }
        prev = q;
    }
    r->marginal_down[j] = down;
    r->marginal_up[j] = up;
}

void alloc_output_jobs(const alloc_run *run, pfi_alloc_result *r)
{
    const alloc_ctx *x = &run->x;
    const pfi_alloc_workspace *w = x->w;
    const size_t *list = run->list;
    size_t n_list = run->n_list;
    bool snap = x->discrete || !r->feasible;
    if (list != NULL && run->placed && w->tot_ok) {
        /* alloc_pick placed every listed job and summed the totals as below */
        r->total_power_w = w->tot[0];
        r->total_tput_tok_s = w->tot[1];
        r->objective = w->tot[2];
        return;
    }
    for (size_t l = 0; l < n_list; l++) {
        size_t j = list != NULL ? list[l] : l;
        if (!(run->placed && w->flag[j]))
            output_job(x, j, w->pick[j], snap, r);
    }
    double tp = 0, tt = 0, obj = 0;
    if (list != NULL) { /* the pass placed the others and summed them */
        tp = run->S.tp;
        tt = run->S.tt;
        obj = run->S.value;
    }
    for (size_t l = 0; l < n_list; l++) {
        size_t j = list != NULL ? list[l] : l;
        tp += r->power_w[j];
        tt += r->tput_tok_s[j];
        obj += alloc_opt(x->J->weight, j, 1.0) * r->tput_tok_s[j];
    }
    r->total_power_w = tp;
    r->total_tput_tok_s = tt;
    r->objective = obj;
}

/* The best move of job j up from candidate i within slack: the candidate gaining the most
   weighted throughput (*gain, 0 when none gains). */
static size_t best_move(const alloc_view *v, size_t i, double slack, double *gain)
{
    size_t best = i;
    *gain = 0;
    double tol = 1e-12 * fabs(slack) + 1e-12;
    for (size_t q = i + 1; q < v->m && v->d[q] - v->d[i] <= slack + tol; q++) {
        double g = v->wt * v->t[q] - v->wt * v->t[i];
        if (g > *gain) {
            *gain = g;
            best = q;
        }
    }
    return best;
}

void alloc_fill_grid(const alloc_run *run, pfi_alloc_result *r)
{
    const alloc_ctx *x = &run->x;
    pfi_alloc_workspace *w = x->w;
    size_t n = x->J->n;
    for (size_t j = 0; j < n; j++) {
        alloc_view v = alloc_true_view(x, j);
        size_t i = 0;
        while (i + 1 < v.m && v.c[i + 1] <= r->cap_w[j])
            i++;
        w->at[j] = (uint32_t)i;
    }
    double slack = run->budget_w - r->total_power_w;
    for (int round = 0; round < ALLOC_FILL_ROUNDS && slack > 0; round++) {
        double top = 0;
        size_t bj = n, bq = 0;
        for (size_t j = 0; j < n; j++) {
            alloc_view v = alloc_true_view(x, j);
            double g;
            size_t q = best_move(&v, w->at[j], slack, &g);
            if (g > top) {
                top = g;
                bj = j;
                bq = q;
            }
        }
        if (bj == n)
            break;
        alloc_view v = alloc_true_view(x, bj);
        double was_p = r->power_w[bj], was_t = r->tput_tok_s[bj];
        output_job(x, bj, v.d[bq], true, r);
        w->at[bj] = (uint32_t)bq;
        slack -= r->power_w[bj] - was_p;
        r->total_power_w += r->power_w[bj] - was_p;
        r->total_tput_tok_s += r->tput_tok_s[bj] - was_t;
        r->objective += v.wt * (r->tput_tok_s[bj] - was_t);
    }
}
