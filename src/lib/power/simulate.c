/*
 * The policy simulation (paper §6): workloads drawn from a job library, every strategy
 * evaluated on the true curves, statistics over workloads.
 */
#include "pfi/simulate.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/memory.h"
#include "pfi/rng.h"
#include "power/strategy.h"
#include "stats/curve_infer.h"

/* Most points of a template whose pfi-model curve can come from measured curves. */
#define PFI_SIM_MAX_POINTS 256

const char *pfi_sim_mix_name(pfi_sim_mix m)
{
    return m == PFI_MIX_RANDOM ? "random" : m == PFI_MIX_PRODUCTION ? "production" : "unknown";
}

void pfi_sim_options_init(pfi_sim_options *o)
{
    memset(o, 0, sizeof *o);
    o->workloads = 500;
    o->jobs = 100;
    o->seed = 1;
    o->n_reductions = 5;
    for (size_t i = 0; i < 5; i++)
        o->reductions[i] = 0.1 * (double)(i + 1);
    o->mix_enabled[PFI_MIX_RANDOM] = o->mix_enabled[PFI_MIX_PRODUCTION] = true;
    o->prod_ft_share = 0.8;
    o->pfi_noise = 0.25;
    o->cap_step_w = 0;
    o->deep_cut_class = "moe-ft";
    o->class_factor = 2.0;
    o->curves = PFI_SIM_CURVES_MEASURED;
}

void pfi_sim_result_destroy(pfi_sim_result *r)
{
    if (r == NULL)
        return;
    pfi_free(r->cells);
    pfi_free(r);
}

/*
 * pfi-model's estimated curves, precomputed per template. The strategy's model (pfi_allocate's
 * default shape: the §7 model per GPU through the template's reference draw, P_s = 0.25 P_u,
 * γ = 2) has a step time linear in the compute share α: step(c; α) = α·s1(c) + (1 − α)·s0
 * (s1 the step at α = 1, s0 at α = 0, the same at every cap), and a drawn power that does not
 * depend on α. So on a fixed cap grid the ratio PFI is PFI(α) = A + B/α over the caps that
 * count (x >= x_min, throughput falling), A = mean x_k (s1_k − s0)/Δ_k, B = mean x_k s0/Δ_k,
 * Δ_k = s1_k − s1_ref: the inverse is α = B/(PFI − A) in closed form, where
 * pfi_model_share_for_pfi bisects (to 1e-10) with a model evaluation per cap per step —
 * which made most of the simulation's time. Same clamping: α in [0.02, 1], 1 when no cap
 * counts.
 */
typedef struct model_table {
    double *ratio;           /* per library point: P(c)/P(c_ref) */
    double *s1;              /* per library point: step time at α = 1, s */
    double *s0;              /* per template: step time at α = 0, s */
    double *A, *B;           /* per template; B = 0: no cap counts */
    double *pfi_lo, *pfi_hi; /* per template: PFI at α = 0.02 (largest) and at α = 1 */
} model_table;

static void model_table_free(model_table *t)
{
    pfi_free(t->ratio);
    pfi_free(t->s1);
    pfi_free(t->s0);
    pfi_free(t->A);
    pfi_free(t->B);
    pfi_free(t->pfi_lo);
    pfi_free(t->pfi_hi);
}

static pfi_error model_table_build(const pfi_joblib *l, model_table *t)
{
    size_t np = l->offset[l->n], n = l->n;
    t->ratio = pfi_malloc(np * sizeof(double));
    t->s1 = pfi_malloc(np * sizeof(double));
    t->s0 = pfi_malloc(n * sizeof(double));
    t->A = pfi_malloc(n * sizeof(double));
    t->B = pfi_malloc(n * sizeof(double));
    t->pfi_lo = pfi_malloc(n * sizeof(double));
    t->pfi_hi = pfi_malloc(n * sizeof(double));
    if (!t->ratio || !t->s1 || !t->s0 || !t->A || !t->B || !t->pfi_lo || !t->pfi_hi)
        return PFI_ERR_NOMEM;
    pfi_alloc_options ao;
    pfi_alloc_options_init(&ao);
    double ps_frac = ao.shape.power_static_w / ao.shape.power_uncapped_w;
    for (size_t tm = 0; tm < n; tm++) {
        size_t a = l->offset[tm], k = l->offset[tm + 1] - a, ref = a + k - 1;
        pfi_model_job m = ao.shape;
        m.gpus = 1;
        m.power_uncapped_w = l->power_w[ref] / l->gpus[tm];
        m.power_static_w = ps_frac * m.power_uncapped_w;
        pfi_model_point p1, p0, pr;
        pfi_model_set_share(&m, 1.0);
        if (pfi_model_eval(&m, l->cap_w[ref], &pr) != PFI_OK)
            return PFI_ERR_INVALID_ARGUMENT;
        for (size_t i = a; i < a + k; i++) {
            pfi_model_set_share(&m, 1.0);
            pfi_model_eval(&m, l->cap_w[i], &p1);
            pfi_model_set_share(&m, 0.0);
            pfi_model_eval(&m, l->cap_w[i], &p0);
            t->ratio[i] = p1.job_power_w / pr.job_power_w;
            t->s1[i] = p1.step_time_s;
            t->s0[tm] = p0.step_time_s;
        }
        double A = 0, B = 0;
        size_t used = 0;
        for (size_t i = a; k >= 2 && i < ref; i++) {
            double x = (pr.job_power_w - pr.job_power_w * t->ratio[i]) / pr.job_power_w;
            double dk = t->s1[i] - t->s1[ref];
            if (x < ao.x_min || !(dk > 0))
                continue;
            A += x * (t->s1[i] - t->s0[tm]) / dk;
            B += x * t->s0[tm] / dk;
            used++;
        }
        t->A[tm] = used ? A / (double)used : 0;
        t->B[tm] = used ? B / (double)used : 0;
        t->pfi_lo[tm] = t->A[tm] + t->B[tm] / 0.02;
        t->pfi_hi[tm] = t->A[tm] + t->B[tm];
    }
    return PFI_OK;
}

/* The compute share for an estimated PFI of template tm (see model_table). */
static double model_share(const model_table *t, size_t tm, double pfi)
{
    if (!(t->B[tm] > 0))
        return 1.0;
    if (pfi >= t->pfi_lo[tm])
        return 0.02;
    if (pfi <= t->pfi_hi[tm])
        return 1.0;
    double alpha = t->B[tm] / (pfi - t->A[tm]);
    return alpha < 0.02 ? 0.02 : alpha > 1 ? 1.0 : alpha;
}

/* Shared state of one simulation. */
typedef struct sim {
    const pfi_joblib *lib;
    const pfi_sim_options *o;
    size_t n_cells;       /* mixes × reductions × strategies */
    double *total;        /* [n_cells][W]: S per workload (NaN: not run) */
    double *retained;     /* [n_cells][n_classes][W] */
    bool feature_ok;      /* the library has a feature for every template */
    size_t *ft_idx, n_ft; /* production: fine-tuning templates with the fewest GPUs */
    size_t *pt_idx, n_pt; /* production: pre-training templates */
    double *pt_cum;       /* cumulative GPU weights of pt_idx */
    size_t deep_class;    /* class index cut deeper, or SIZE_MAX */
    model_table mt;       /* pfi-model: the §7 model of every template, precomputed */
    curve_bank bank;      /* pfi-model with PFI_SIM_CURVES_MEASURED: the templates' curves */
    atomic_size_t done;
    atomic_size_t infeasible;
    atomic_int error;
    pthread_mutex_t lock;
    size_t total_work;
    unsigned n_threads;
} sim;

typedef struct worker {
    sim *s;
    unsigned id;
} worker;

static size_t draw_template(sim *s, pfi_rng *rng, pfi_sim_mix mix)
{
    const pfi_joblib *l = s->lib;
    if (mix == PFI_MIX_RANDOM)
        return (size_t)(pfi_rng_uniform(rng) * (double)l->n) % l->n;
    if (pfi_rng_uniform(rng) < s->o->prod_ft_share)
        return s->ft_idx[(size_t)(pfi_rng_uniform(rng) * (double)s->n_ft) % s->n_ft];
    double u = pfi_rng_uniform(rng) * s->pt_cum[s->n_pt - 1];
    size_t i = 0;
    while (i + 1 < s->n_pt && s->pt_cum[i] <= u)
        i++;
    return s->pt_idx[i];
}

/*
 * pfi-model's estimated curve of a job of template t (k points at est_d/est_t) from the
 * measured curves of the library's other templates of nearest PFI (stats/curve_infer.h),
 * read at the job's own relative powers: the power a cap draws is observed, the throughput
 * it keeps is what the PFI must tell. Left as the §7 model's when no other curve is usable.
 */
static void measured_estimate(const sim *s, size_t t, double pfi, const double *pw, double *est_d,
                              double *est_t)
{
    const pfi_joblib *l = s->lib;
    size_t k = l->offset[t + 1] - l->offset[t];
    double p_ref = pw[k - 1], t_ref = l->tput_tok_s[l->offset[t + 1] - 1];
    double p_rel[PFI_SIM_MAX_POINTS], t_rel[PFI_SIM_MAX_POINTS];
    if (k > PFI_SIM_MAX_POINTS)
        return;
    for (size_t i = 0; i < k; i++)
        p_rel[i] = pw[i] / p_ref;
    if (curve_bank_infer(&s->bank, t, pfi, p_rel, k, t_rel) == 0)
        return;
    for (size_t i = 0; i < k; i++) {
        est_d[i] = pw[i];
        est_t[i] = t_ref * t_rel[i];
    }
}

/* One workload of one mix: draw, allocate with every strategy at every r, record. */
static pfi_error run_workload(sim *s, size_t w, pfi_sim_mix mix, size_t *tmpl, size_t *off,
                              double *cap, double *pw, double *tp, double *gpus, double *pfi,
                              double *feat, unsigned char *deep, double *est_d, double *est_t,
                              pfi_alloc_workspace *ws, pfi_alloc_result *res)
{
    const pfi_joblib *l = s->lib;
    const pfi_sim_options *o = s->o;
    size_t J = o->jobs, W = o->workloads, NC = l->n_classes;
    pfi_rng rng;
    pfi_rng_seed(&rng, o->seed, 2 * (uint64_t)w + (uint64_t)mix);
    size_t q = 0;
    for (size_t j = 0; j < J; j++) {
        size_t t = draw_template(s, &rng, mix);
        tmpl[j] = t;
        off[j] = q;
        for (size_t i = l->offset[t]; i < l->offset[t + 1]; i++, q++) {
            cap[q] = l->cap_w[i];
            pw[q] = l->power_w[i];
            tp[q] = l->tput_tok_s[i];
        }
        gpus[j] = l->gpus[t];
        double est = l->pfi[t] + o->pfi_noise * pfi_rng_normal(&rng);
        pfi[j] = est < 1.0 ? 1.0 : est;
        feat[j] = s->feature_ok ? l->feature[t] : 0.0;
        deep[j] = l->class_id[t] == s->deep_class;
        /* pfi-model's estimated curve, once per job rather than once per r */
        double alpha = model_share(&s->mt, t, pfi[j]);
        size_t a = l->offset[t], k = l->offset[t + 1] - a, ref = a + k - 1;
        double s0 = s->mt.s0[t], step_ref = alpha * s->mt.s1[ref] + (1 - alpha) * s0;
        for (size_t i = 0; i < k; i++) {
            size_t p = off[j] + i;
            est_d[p] = l->power_w[ref] * s->mt.ratio[a + i];
            est_t[p] = l->tput_tok_s[ref] * step_ref / (alpha * s->mt.s1[a + i] + (1 - alpha) * s0);
            if (i > 0 && est_d[p] < est_d[p - 1]) /* the model is monotone; rounding */
                est_d[p] = est_d[p - 1];
            if (i > 0 && est_t[p] < est_t[p - 1])
                est_t[p] = est_t[p - 1];
        }
        if (o->curves == PFI_SIM_CURVES_MEASURED)
            measured_estimate(s, t, pfi[j], pw + off[j], est_d + off[j], est_t + off[j]);
    }
    off[J] = q;
    pfi_alloc_jobs jobs;
    memset(&jobs, 0, sizeof jobs);
    jobs.n = J;
    jobs.offset = off;
    jobs.cap_w = cap;
    jobs.power_w = pw;
    jobs.tput_tok_s = tp;
    jobs.gpus = gpus;
    jobs.pfi = pfi;
    jobs.feature = feat;
    jobs.deep_cut = deep;
    jobs.est_power_w = est_d;
    jobs.est_tput_tok_s = est_t;
    double ref_class[PFI_JOBLIB_MAX_CLASSES] = {0}, got_class[PFI_JOBLIB_MAX_CLASSES];
    for (size_t j = 0; j < J; j++)
        ref_class[l->class_id[tmpl[j]]] += tp[off[j + 1] - 1];
    for (size_t ri = 0; ri < o->n_reductions; ri++) {
        for (int st = 0; st < PFI_STRATEGY_COUNT; st++) {
            if ((alloc_strategies[st].needs & ALLOC_NEEDS_FEATURE) && !s->feature_ok)
                continue; /* the library has no feature for some template */
            pfi_alloc_options ao;
            pfi_alloc_options_init(&ao);
            ao.strategy = (pfi_strategy)st;
            ao.reduction = o->reductions[ri];
            ao.cap_step_w = o->cap_step_w;
            ao.class_factor = o->class_factor;
            pfi_error e = pfi_allocate_ws(&jobs, &ao, ws, res, NULL);
            if (e != PFI_OK)
                return e;
            if (!res->feasible)
                atomic_fetch_add(&s->infeasible, 1);
            size_t cell = ((size_t)mix * o->n_reductions + ri) * PFI_STRATEGY_COUNT + (size_t)st;
            s->total[cell * W + w] = res->total_tput_tok_s;
            memset(got_class, 0, sizeof got_class);
            for (size_t j = 0; j < J; j++)
                got_class[l->class_id[tmpl[j]]] += res->tput_tok_s[j];
            for (size_t c = 0; c < NC; c++)
                s->retained[(cell * NC + c) * W + w] =
                    ref_class[c] > 0 ? got_class[c] / ref_class[c] : NAN;
        }
    }
    return PFI_OK;
}

static void *work(void *arg)
{
    worker *wk = arg;
    sim *s = wk->s;
    const pfi_joblib *l = s->lib;
    size_t J = s->o->jobs, maxk = 0;
    for (size_t t = 0; t < l->n; t++)
        if (l->offset[t + 1] - l->offset[t] > maxk)
            maxk = l->offset[t + 1] - l->offset[t];
    size_t *tmpl = pfi_malloc(J * sizeof *tmpl), *off = pfi_malloc((J + 1) * sizeof *off);
    double *cap = pfi_malloc(J * maxk * sizeof *cap), *pw = pfi_malloc(J * maxk * sizeof *pw),
           *tp = pfi_malloc(J * maxk * sizeof *tp), *gpus = pfi_malloc(J * sizeof *gpus),
           *pfi = pfi_malloc(J * sizeof *pfi), *feat = pfi_malloc(J * sizeof *feat);
    unsigned char *deep = pfi_malloc(J);
    double *est_d = pfi_malloc(J * maxk * sizeof *est_d);
    double *est_t = pfi_malloc(J * maxk * sizeof *est_t);
    pfi_alloc_workspace *ws = NULL;
    pfi_alloc_result res;
    pfi_error e = pfi_alloc_result_init(&res, J);
    if (e == PFI_OK)
        e = pfi_alloc_workspace_create(&ws);
    if (!tmpl || !off || !cap || !pw || !tp || !gpus || !pfi || !feat || !deep || !est_d || !est_t)
        e = PFI_ERR_NOMEM;
    for (size_t w = wk->id; e == PFI_OK && w < s->o->workloads; w += s->n_threads) {
        if (atomic_load(&s->error) != PFI_OK)
            break;
        for (int m = 0; m < PFI_SIM_MIXES && e == PFI_OK; m++) {
            bool run = s->o->mix_enabled[m] && (m == PFI_MIX_RANDOM || (s->n_ft && s->n_pt));
            if (run)
                e = run_workload(s, w, (pfi_sim_mix)m, tmpl, off, cap, pw, tp, gpus, pfi, feat,
                                 deep, est_d, est_t, ws, &res);
        }
        size_t d = atomic_fetch_add(&s->done, 1) + 1;
        if (s->o->progress != NULL) {
            pthread_mutex_lock(&s->lock);
            s->o->progress(s->o->progress_ctx, d, s->total_work);
            pthread_mutex_unlock(&s->lock);
        }
    }
    if (e != PFI_OK) {
        int expected = PFI_OK;
        atomic_compare_exchange_strong(&s->error, &expected, (int)e);
    }
    pfi_alloc_result_clear(&res);
    pfi_free(tmpl);
    pfi_free(off);
    pfi_free(cap);
    pfi_free(pw);
    pfi_free(tp);
    pfi_free(gpus);
    pfi_free(pfi);
    pfi_free(feat);
    pfi_free(deep);
    pfi_free(est_d);
    pfi_free(est_t);
    pfi_alloc_workspace_destroy(ws);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Mean and type-7 percentiles of the non-NaN values of v[n] (v is reordered). */
static pfi_sim_stat stat_of(double *v, size_t n)
{
    pfi_sim_stat st = {NAN, NAN, NAN, 0};
    size_t m = 0;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isnan(v[i])) {
            sum += v[i];
            v[m++] = v[i];
        }
    }
    if (m == 0)
        return st;
    qsort(v, m, sizeof *v, cmp_double);
    double qs[2] = {0.025, 0.975}, out[2];
    for (int k = 0; k < 2; k++) {
        double h = (double)(m - 1) * qs[k];
        size_t i = (size_t)floor(h);
        double f = h - (double)i;
        out[k] = i + 1 < m ? v[i] + f * (v[i + 1] - v[i]) : v[i];
    }
    st.mean = sum / (double)m;
    st.lo = out[0];
    st.hi = out[1];
    st.n = m;
    return st;
}

static pfi_error fail(pfi_diag *d, const char *msg)
{
    if (d != NULL) {
        pfi_diag_clear(d);
        snprintf(d->message, sizeof d->message, "%s", msg);
    }
    return PFI_ERR_INVALID_ARGUMENT;
}

static void sim_free(sim *s)
{
    pfi_free(s->total);
    pfi_free(s->retained);
    pfi_free(s->ft_idx);
    pfi_free(s->pt_idx);
    pfi_free(s->pt_cum);
    model_table_free(&s->mt);
    curve_bank_clear(&s->bank);
}

/* The options' checks, before anything is allocated. */
static pfi_error check_options(const pfi_joblib *lib, const pfi_sim_options *o, pfi_diag *diag)
{
    if (lib == NULL || lib->n == 0)
        return fail(diag, "the job library is empty");
    if (o->workloads == 0 || o->jobs == 0)
        return fail(diag, "workloads and jobs must be at least 1");
    if (o->n_reductions == 0 || o->n_reductions > PFI_SIM_MAX_REDUCTIONS)
        return fail(diag, "give between 1 and 16 reductions");
    for (size_t i = 0; i < o->n_reductions; i++)
        if (!(o->reductions[i] > 0 && o->reductions[i] < 1))
            return fail(diag, "every reduction must lie in (0, 1)");
    if (!(o->pfi_noise >= 0 && o->pfi_noise <= PFI_SIM_MAX_PFI_NOISE)) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "the PFI noise (the SD of the estimates' error) %g: expected PFI units in "
                 "[0, %g]",
                 o->pfi_noise, PFI_SIM_MAX_PFI_NOISE);
        return fail(diag, msg);
    }
    if (!(o->prod_ft_share >= 0 && o->prod_ft_share <= 1))
        return fail(diag, "the production fine-tuning share must lie in [0, 1]");
    for (size_t t = 0; t < lib->n; t++)
        if (!(lib->pfi[t] > 0))
            return fail(diag, "every library template needs a defined PFI");
    return PFI_OK;
}

/* The production mix's template pools: the fine-tuning templates with the fewest GPUs, and
   the pre-training ones with their cumulative GPU weights. */
static void production_pools(sim *s)
{
    const pfi_joblib *lib = s->lib;
    double min_ft_gpus = INFINITY;
    for (size_t t = 0; t < lib->n; t++)
        if (lib->fine_tune[t] && lib->gpus[t] < min_ft_gpus)
            min_ft_gpus = lib->gpus[t];
    double cum = 0;
    for (size_t t = 0; t < lib->n; t++) {
        if (lib->fine_tune[t] && lib->gpus[t] == min_ft_gpus)
            s->ft_idx[s->n_ft++] = t;
        else if (!lib->fine_tune[t]) {
            cum += lib->gpus[t];
            s->pt_cum[s->n_pt] = cum;
            s->pt_idx[s->n_pt++] = t;
        }
    }
}

/*
 * The simulation's shared state and its result (*out, cells allocated), every cell NaN until
 * run. On an error the caller frees what was made (sim_free, pfi_sim_result_destroy).
 * Errors: PFI_ERR_NOMEM; PFI_ERR_INVALID_ARGUMENT (diag) when the model rejects a library
 * curve or no mix can run.
 */
static pfi_error sim_setup(sim *s, const pfi_joblib *lib, const pfi_sim_options *o,
                           pfi_sim_result **out, pfi_diag *diag)
{
    memset(s, 0, sizeof *s);
    s->lib = lib;
    s->o = o;
    s->n_cells = PFI_SIM_MIXES * o->n_reductions * PFI_STRATEGY_COUNT;
    size_t W = o->workloads, NC = lib->n_classes;
    s->total = pfi_malloc(s->n_cells * W * sizeof *s->total);
    s->retained = pfi_malloc(s->n_cells * (NC ? NC : 1) * W * sizeof *s->retained);
    s->ft_idx = pfi_malloc(lib->n * sizeof *s->ft_idx);
    s->pt_idx = pfi_malloc(lib->n * sizeof *s->pt_idx);
    s->pt_cum = pfi_malloc(lib->n * sizeof *s->pt_cum);
    pfi_sim_result *r = pfi_calloc(1, sizeof *r);
    *out = r;
    if (r != NULL)
        r->cells = pfi_calloc(s->n_cells, sizeof *r->cells);
    if (!s->total || !s->retained || !s->ft_idx || !s->pt_idx || !s->pt_cum || !r || !r->cells)
        return PFI_ERR_NOMEM;
    for (size_t i = 0; i < s->n_cells * W; i++)
        s->total[i] = NAN;
    for (size_t i = 0; i < s->n_cells * NC * W; i++)
        s->retained[i] = NAN;
    s->feature_ok = true;
    for (size_t t = 0; t < lib->n; t++)
        if (!(lib->feature[t] >= 0))
            s->feature_ok = false;
    production_pools(s);
    pfi_error e = model_table_build(lib, &s->mt);
    if (e != PFI_OK)
        return e == PFI_ERR_NOMEM ? e : fail(diag, "a library curve the model rejects");
    if (o->curves == PFI_SIM_CURVES_MEASURED &&
        curve_bank_build(&s->bank, lib->n, lib->offset, lib->power_w, lib->tput_tok_s, lib->pfi) !=
            PFI_OK)
        return PFI_ERR_NOMEM;
    s->deep_class = SIZE_MAX;
    for (size_t c = 0; c < NC && o->deep_cut_class != NULL; c++)
        if (strcmp(lib->class_name[c], o->deep_cut_class) == 0)
            s->deep_class = c;
    bool any = false;
    for (int m = 0; m < PFI_SIM_MIXES; m++) {
        r->mix_run[m] = o->mix_enabled[m] && (m == PFI_MIX_RANDOM || (s->n_ft && s->n_pt));
        any = any || r->mix_run[m];
    }
    if (!any)
        return fail(diag, "no mix can run (production needs fine-tuning and pre-training "
                          "templates)");
    return PFI_OK;
}

/* The workloads over the worker threads (o->threads; 0: one per online CPU, at most one per
   workload). Errors: PFI_ERR_NOMEM, PFI_ERR_THREAD, or the first worker's error. */
static pfi_error run_threads(sim *s)
{
    size_t W = s->o->workloads;
    unsigned nt = s->o->threads;
    if (nt == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        nt = c > 0 ? (unsigned)c : 1;
    }
    if (nt > W)
        nt = (unsigned)W;
    s->n_threads = nt;
    s->total_work = W;
    atomic_init(&s->done, 0);
    atomic_init(&s->infeasible, 0);
    atomic_init(&s->error, PFI_OK);
    pthread_mutex_init(&s->lock, NULL);
    pthread_t *th = pfi_malloc(nt * sizeof *th);
    worker *wk = pfi_malloc(nt * sizeof *wk);
    pfi_error e = th && wk ? PFI_OK : PFI_ERR_NOMEM;
    unsigned started = 0;
    for (unsigned i = 0; e == PFI_OK && i < nt; i++) {
        wk[i].s = s;
        wk[i].id = i;
        if (pthread_create(&th[i], NULL, work, &wk[i]) != 0) {
            atomic_store(&s->error, PFI_ERR_THREAD);
            e = PFI_ERR_THREAD;
        } else {
            started++;
        }
    }
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pfi_free(th);
    pfi_free(wk);
    pthread_mutex_destroy(&s->lock);
    if (e == PFI_OK)
        e = (pfi_error)atomic_load(&s->error);
    return e;
}

/* Cell c's statistics over the W workloads of strategy totals S, with S_eq and S_or the
   equal and oracle totals of the same mix and r; v is scratch of W. */
static void cell_stats(const sim *s, pfi_sim_cell *c, size_t cell, const double *S,
                       const double *S_eq, const double *S_or, double *v)
{
    const pfi_sim_options *o = s->o;
    size_t W = o->workloads, NC = s->lib->n_classes;
    double J = (double)o->jobs;
    memcpy(v, S, W * sizeof *v);
    c->total_tok_s = stat_of(v, W);
    for (size_t w = 0; w < W; w++)
        v[w] = S[w] / J;
    c->per_job_tok_s = stat_of(v, W);
    for (size_t w = 0; w < W; w++)
        v[w] = (S[w] - S_eq[w]) / J;
    c->recovered_per_job_tok_s = stat_of(v, W);
    c->below_equal = 0;
    for (size_t w = 0; w < W; w++) {
        double gap = S_or[w] - S_eq[w];
        v[w] = gap > 1e-9 * S_or[w] ? (S[w] - S_eq[w]) / gap : NAN;
        if (S[w] < S_eq[w] * (1 - 1e-9))
            c->below_equal++;
    }
    c->gap_closed = stat_of(v, W);
    for (size_t k = 0; k < NC; k++) {
        memcpy(v, s->retained + (cell * NC + k) * W, W * sizeof *v);
        c->retained[k] = stat_of(v, W).mean;
    }
}

/* Every cell's statistics into r. Errors: PFI_ERR_NOMEM. */
static pfi_error sim_statistics(const sim *s, pfi_sim_result *r)
{
    const pfi_sim_options *o = s->o;
    size_t W = o->workloads;
    r->n_reductions = o->n_reductions;
    memcpy(r->reductions, o->reductions, sizeof r->reductions);
    r->infeasible = atomic_load(&s->infeasible);
    double *v = pfi_malloc(W * sizeof *v);
    if (v == NULL)
        return PFI_ERR_NOMEM;
    for (int m = 0; m < PFI_SIM_MIXES; m++) {
        for (size_t ri = 0; ri < o->n_reductions; ri++) {
            size_t base = ((size_t)m * o->n_reductions + ri) * PFI_STRATEGY_COUNT;
            const double *S_eq = s->total + (base + PFI_STRATEGY_EQUAL) * W;
            const double *S_or = s->total + (base + PFI_STRATEGY_ORACLE) * W;
            for (int st = 0; st < PFI_STRATEGY_COUNT; st++) {
                pfi_sim_cell *c = &r->cells[base + (size_t)st];
                const double *S = s->total + (base + (size_t)st) * W;
                c->available = r->mix_run[m] && !isnan(S[0]);
                for (size_t k = 0; k < PFI_JOBLIB_MAX_CLASSES; k++)
                    c->retained[k] = NAN;
                pfi_sim_stat none = {NAN, NAN, NAN, 0};
                c->total_tok_s = c->per_job_tok_s = c->recovered_per_job_tok_s = none;
                c->gap_closed = none;
                if (c->available)
                    cell_stats(s, c, base + (size_t)st, S, S_eq, S_or, v);
            }
        }
    }
    pfi_free(v);
    return PFI_OK;
}

/* The phases: options checked, shared state set up, the workloads run, the statistics. */
pfi_error pfi_simulate(const pfi_joblib *lib, const pfi_sim_options *o, pfi_sim_result **out,
                       pfi_diag *diag)
{
    *out = NULL;
    pfi_error e = check_options(lib, o, diag);
    if (e != PFI_OK)
        return e;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sim s;
    pfi_sim_result *r = NULL;
    if ((e = sim_setup(&s, lib, o, &r, diag)) == PFI_OK && (e = run_threads(&s)) == PFI_OK)
        e = sim_statistics(&s, r);
    sim_free(&s);
    if (e != PFI_OK) {
        pfi_sim_result_destroy(r);
        return e;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    *out = r;
    return PFI_OK;
}
