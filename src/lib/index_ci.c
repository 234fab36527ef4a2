/*
 * Monte Carlo confidence intervals of PFI_ratio, and the multi-threaded pfi_analyze.
 *
 * The normal draws are the floor of the cost: 2·(K+1) per draw for a group with K ratio
 * points. Nothing else is drawn, nothing is allocated per draw, and the quantiles are found
 * by selection (O(draws)) rather than by sorting.
 */
#include "pfi/index.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* SplitMix64 finaliser: decorrelates (seed, stream) into a generator seed. */
static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/*
 * Quantile f of data[0..n) (type 7: h = (n−1)f, linear between order statistics lo = ⌊h⌋
 * and lo+1), reordering data. The (lo+1)-th is the smallest value above position lo, which a
 * linear scan finds without relying on how the selection left the array.
 */
static double quantile(double *data, size_t n, double f)
{
    double h = (double)(n - 1) * f;
    size_t lo = (size_t)floor(h);
    double v_lo = gsl_stats_select(data, 1, n, lo);
    if (lo + 1 >= n)
        return v_lo;
    /* count values <= v_lo; if more than lo+1, the next order statistic equals v_lo */
    size_t at_most = 0;
    double next = INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (data[i] <= v_lo)
            at_most++;
        else if (data[i] < next)
            next = data[i];
    }
    double v_hi = at_most > lo + 1 ? v_lo : next;
    return v_lo + (h - (double)lo) * (v_hi - v_lo);
}

/* The standard errors a point contributes to the draws, or false when unknown. */
static bool point_se(const pfi_point *p, const pfi_options *o, double *se_p, double *se_t)
{
    *se_p = !isnan(p->power_se_w) ? p->power_se_w : o->noise_rel * p->power_w;
    *se_t = !isnan(p->throughput_se) ? p->throughput_se : o->noise_rel * p->throughput;
    if (o->noise_rel > 0)
        return true;
    return !isnan(p->power_se_w) && !isnan(p->throughput_se);
}

/* Up to this many ratio points use a stack buffer for their parameters. */
enum { CI_SMALL = 64 };

pfi_error pfi_result_ci(pfi_result *r, const pfi_options *o, uint64_t stream, double *work)
{
    r->ci_available = false;
    r->ci_lo = r->ci_median = r->ci_hi = NAN;
    r->ci_draws = r->ci_undefined = 0;
    if (o->draws == 0) {
        r->ci_note = "no draws requested";
        return PFI_OK;
    }
    if (r->n_ratio == 0 || !r->has_reference) {
        r->ci_note = "the PFI is undefined";
        return PFI_OK;
    }
    /* parameters: [mean, se] for P then T, reference first, then the ratio points */
    size_t k = r->n_ratio;
    double small[4 * (CI_SMALL + 1)];
    double *par = k <= CI_SMALL ? small : malloc(4 * (k + 1) * sizeof *par);
    if (par == NULL)
        return PFI_ERR_NOMEM;
    bool known = point_se(&r->reference, o, &par[1], &par[3]);
    par[0] = r->reference.power_w;
    par[2] = r->reference.throughput;
    size_t j = 1;
    for (size_t i = 0; i < r->n_points && known; i++) {
        const pfi_point *p = &r->points[i];
        if (p->exclusion != PFI_EXCL_NONE)
            continue;
        double *q = par + 4 * j++;
        known = point_se(p, o, &q[1], &q[3]);
        q[0] = p->power_w;
        q[2] = p->throughput;
    }
    if (!known) {
        if (par != small)
            free(par);
        r->ci_note = "standard errors unknown (map power_se and throughput_se, or give a "
                     "relative noise)";
        return PFI_OK;
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_taus2);
    if (rng == NULL) {
        if (par != small)
            free(par);
        return PFI_ERR_NOMEM;
    }
    gsl_rng_set(rng, (unsigned long)mix64(o->seed ^ mix64(stream)));

    const double x_min = o->x_min;
    size_t defined = 0;
    for (size_t d = 0; d < o->draws; d++) {
        double p0 = par[0] + gsl_ran_gaussian_ziggurat(rng, par[1]);
        double t0 = par[2] + gsl_ran_gaussian_ziggurat(rng, par[3]);
        double sum = 0.0;
        size_t used = 0;
        for (size_t i = 1; i <= k; i++) {
            const double *q = par + 4 * i;
            double pk = q[0] + gsl_ran_gaussian_ziggurat(rng, q[1]);
            double tk = q[2] + gsl_ran_gaussian_ziggurat(rng, q[3]);
            double x = (p0 - pk) / p0, y = (t0 - tk) / t0;
            if (x >= x_min && y > 0) {
                sum += x / y;
                used++;
            }
        }
        if (used > 0)
            work[defined++] = sum / (double)used;
    }
    gsl_rng_free(rng);
    if (par != small)
        free(par);
    r->ci_draws = o->draws;
    r->ci_undefined = o->draws - defined;
    if (defined == 0) {
        r->ci_note = "every draw was undefined";
        return PFI_OK;
    }
    double a = (1.0 - o->ci_level) / 2.0;
    r->ci_lo = quantile(work, defined, a);
    r->ci_median = quantile(work, defined, 0.5);
    r->ci_hi = quantile(work, defined, 1.0 - a);
    r->ci_available = true;
    r->ci_note = NULL;
    if (r->ci_lo > 1.0)
        r->label = PFI_LABEL_INELASTIC;
    else if (r->ci_hi < 1.0)
        r->label = PFI_LABEL_ELASTIC;
    else
        r->label = PFI_LABEL_LINEAR;
    return PFI_OK;
}

/* ---- pfi_analyze: groups handed out to workers one at a time ---------------------------- */

typedef struct analyze_job {
    const pfi_runs_table *t;
    const pfi_options *o;
    pfi_result *results;
    atomic_size_t next;
    atomic_int error; /* first error, PFI_OK if none */
} analyze_job;

static void *analyze_worker(void *arg)
{
    analyze_job *job = arg;
    double *work = malloc((job->o->draws ? job->o->draws : 1) * sizeof *work);
    if (work == NULL) {
        int ok = PFI_OK;
        atomic_compare_exchange_strong(&job->error, &ok, PFI_ERR_NOMEM);
        return NULL;
    }
    for (;;) {
        size_t i = atomic_fetch_add(&job->next, 1);
        if (i >= job->t->n_groups || atomic_load(&job->error) != PFI_OK)
            break;
        pfi_error e = pfi_group_compute(&job->t->groups[i], job->o, &job->results[i]);
        if (e == PFI_OK)
            e = pfi_result_ci(&job->results[i], job->o, (uint64_t)i, work);
        if (e != PFI_OK) {
            int ok = PFI_OK;
            atomic_compare_exchange_strong(&job->error, &ok, (int)e);
        }
    }
    free(work);
    return NULL;
}

pfi_error pfi_analyze(const pfi_runs_table *t, const pfi_options *o, pfi_result *results)
{
    if (t == NULL || o == NULL || (results == NULL && t->n_groups > 0))
        return PFI_ERR_INVALID_ARGUMENT;
    memset(results, 0, t->n_groups * sizeof *results);
    analyze_job job = {.t = t, .o = o, .results = results};
    atomic_init(&job.next, 0);
    atomic_init(&job.error, PFI_OK);
    size_t threads = o->threads;
    if (threads == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > 0 ? (size_t)cpus : 1;
    }
    if (threads > t->n_groups)
        threads = t->n_groups ? t->n_groups : 1;
    if (threads > 256)
        threads = 256;
    pthread_t tid[256];
    size_t started = 0;
    /* the calling thread is worker 0 */
    for (size_t i = 1; i < threads; i++) {
        if (pthread_create(&tid[started], NULL, analyze_worker, &job) != 0)
            break; /* fewer threads is still correct */
        started++;
    }
    analyze_worker(&job);
    for (size_t i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    return (pfi_error)atomic_load(&job.error);
}
