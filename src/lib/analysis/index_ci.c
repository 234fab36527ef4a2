/*
 * Monte Carlo confidence intervals of PFI_ratio, and the multi-threaded pfi_analyze.
 *
 * The normal draws are the floor of the cost: 2·(K+1) per draw for a group with K placeable
 * points (every point with a cap, power and throughput, excluded at the estimate or not). Nothing
 * else is drawn, nothing is allocated per draw, and the quantiles are found by selection (O(draws))
 * rather than by sorting.
 */
#include "pfi/index.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/memory.h"
#include "pfi/quantile.h"
#include "pfi/rng.h"

/* SplitMix64 finaliser: decorrelates (seed, stream) into a generator seed. */
static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
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

/* A point with a cap, a power and a throughput: drawn in every draw, whatever its exclusion at
 * the measured values (a point near x_min may flip in or out under its own noise). */
static bool drawable(const pfi_point *p)
{
    switch (p->exclusion) {
    case PFI_EXCL_NONE:
    case PFI_EXCL_POWER_ABOVE_REFERENCE:
    case PFI_EXCL_CAP_NOT_BINDING:
    case PFI_EXCL_NO_THROUGHPUT_LOSS:
        return !isnan(p->power_w) && !isnan(p->throughput);
    default:
        return false;
    }
}

/* Standard normals in blocks: generation and arithmetic run as separate tight loops. */
typedef struct normal_source {
    pfi_rng fast;
    gsl_rng *gsl; /* non-NULL: use GSL's taus2 + ziggurat instead */
} normal_source;

static void fill_normals(normal_source *src, double *z, size_t n)
{
    if (src->gsl != NULL) {
        for (size_t i = 0; i < n; i++)
            z[i] = gsl_ran_gaussian_ziggurat(src->gsl, 1.0);
        return;
    }
    pfi_rng r = src->fast; /* a local copy stays in registers */
    for (size_t i = 0; i < n; i++)
        z[i] = pfi_rng_normal(&r);
    src->fast = r;
}

/* Draws per block: the block's normals and per-draw sums stay in L1 and L2. */
enum { BLOCK_DRAWS = 256 };

/*
 * One block of nb draws. z holds the block's normals point-major: z[(2j)·nb + d] perturbs
 * point j's power in draw d and z[(2j+1)·nb + d] its throughput (j = 0 is the reference).
 * Sums run over points in ascending order, as in the definition.
 */
static void block_ratios(const double *par, size_t k, size_t nb, double x_min, const double *z,
                         double *sum, double *used, double *p0, double *t0, double *inv_p0,
                         double *inv_t0)
{
    for (size_t d = 0; d < nb; d++) {
        p0[d] = par[0] + par[1] * z[d];
        t0[d] = par[2] + par[3] * z[nb + d];
        inv_p0[d] = 1.0 / p0[d];
        inv_t0[d] = 1.0 / t0[d];
        sum[d] = 0.0;
        used[d] = 0.0;
    }
    for (size_t i = 1; i <= k; i++) {
        const double p = par[4 * i], se_p = par[4 * i + 1];
        const double t = par[4 * i + 2], se_t = par[4 * i + 3];
        const double *zp = z + 2 * i * nb, *zt = zp + nb;
        for (size_t d = 0; d < nb; d++) {
            /* x and y as defined, each scaled by its reference's reciprocal (kept per draw),
               so no product of two large values can overflow */
            double x = (p0[d] - (p + se_p * zp[d])) * inv_p0[d];
            double y = (t0[d] - (t + se_t * zt[d])) * inv_t0[d];
            if (x >= x_min && y > 0.0) {
                sum[d] += x / y;
                used[d] += 1.0;
            }
        }
    }
}

/*
 * The draws: each perturbs the reference and the k placeable points by their standard errors
 * and averages x/y over the points that count in that draw (x >= x_min, y > 0). par holds
 * [P, se(P), T, se(T)] per point, the reference first. The defined draws go to work; returns
 * how many there are, or (size_t)-1 when memory runs out.
 */
static size_t draw_ratios(normal_source *src, const double *par, size_t k, size_t draws,
                          double x_min, double *work)
{
    const size_t per_draw = 2 * (k + 1);
    double *z = pfi_malloc((per_draw + 6) * BLOCK_DRAWS * sizeof *z);
    if (z == NULL)
        return (size_t)-1;
    double *sum = z + per_draw * BLOCK_DRAWS, *used = sum + BLOCK_DRAWS;
    double *p0 = used + BLOCK_DRAWS, *t0 = p0 + BLOCK_DRAWS;
    double *inv_p0 = t0 + BLOCK_DRAWS, *inv_t0 = inv_p0 + BLOCK_DRAWS;
    size_t defined = 0;
    for (size_t d0 = 0; d0 < draws; d0 += BLOCK_DRAWS) {
        size_t nb = draws - d0 < BLOCK_DRAWS ? draws - d0 : BLOCK_DRAWS;
        fill_normals(src, z, per_draw * nb);
        block_ratios(par, k, nb, x_min, z, sum, used, p0, t0, inv_p0, inv_t0);
        for (size_t d = 0; d < nb; d++) {
            /* a draw whose reference has no positive power or throughput is undefined too */
            if (used[d] > 0 && p0[d] > 0 && t0[d] > 0)
                work[defined++] = sum[d] / used[d];
        }
    }
    pfi_free(z);
    return defined;
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
    /* parameters: [mean, se] for P then T, reference first, then every point that could count:
       each is drawn, and the exclusion rules (x >= x_min, y > 0) are applied to it per draw */
    size_t k = 0;
    for (size_t i = 0; i < r->n_points; i++)
        k += drawable(&r->points[i]);
    double small[4 * (CI_SMALL + 1)];
    double *par = k <= CI_SMALL ? small : pfi_malloc(4 * (k + 1) * sizeof *par);
    if (par == NULL)
        return PFI_ERR_NOMEM;
    bool known = point_se(&r->reference, o, &par[1], &par[3]);
    par[0] = r->reference.power_w;
    par[2] = r->reference.throughput;
    size_t j = 1;
    for (size_t i = 0; i < r->n_points && known; i++) {
        const pfi_point *p = &r->points[i];
        if (!drawable(p))
            continue;
        double *q = par + 4 * j++;
        known = point_se(p, o, &q[1], &q[3]);
        q[0] = p->power_w;
        q[2] = p->throughput;
    }
    if (!known) {
        if (par != small)
            pfi_free(par);
        r->ci_note = "standard errors unknown (map power_se and throughput_se, or give a "
                     "relative noise)";
        return PFI_OK;
    }
    normal_source src = {.gsl = NULL};
    if (o->rng == PFI_RNG_GSL) {
        src.gsl = gsl_rng_alloc(gsl_rng_taus2);
        if (src.gsl == NULL) {
            if (par != small)
                pfi_free(par);
            return PFI_ERR_NOMEM;
        }
        gsl_rng_set(src.gsl, (unsigned long)mix64(o->seed ^ mix64(stream)));
    } else {
        pfi_rng_seed(&src.fast, o->seed, stream);
    }
    size_t defined = draw_ratios(&src, par, k, o->draws, o->x_min, work);
    gsl_rng_free(src.gsl);
    if (par != small)
        pfi_free(par);
    if (defined == (size_t)-1)
        return PFI_ERR_NOMEM;
    r->ci_draws = o->draws;
    r->ci_undefined = o->draws - defined;
    r->notes &=
        ~(unsigned)(PFI_NOTE_MANY_UNDEFINED | PFI_NOTE_CI_WITHHELD | PFI_NOTE_ESTIMATE_OUTSIDE_CI);
    const double undefined_share = (double)r->ci_undefined / (double)r->ci_draws;
    if (undefined_share > PFI_CI_UNDEFINED_NOTE)
        r->notes |= PFI_NOTE_MANY_UNDEFINED;
    if (defined == 0) {
        r->ci_note = "every draw was undefined";
        r->notes |= PFI_NOTE_CI_WITHHELD;
        r->label = PFI_LABEL_UNDEFINED;
        return PFI_OK;
    }
    if (undefined_share > PFI_CI_UNDEFINED_WITHHOLD) {
        /* more draws undefined than defined: a CI over the minority would look firm */
        r->ci_note = "the PFI is undefined in more than half of the draws";
        r->notes |= PFI_NOTE_CI_WITHHELD;
        r->label = PFI_LABEL_UNDEFINED;
        return PFI_OK;
    }
    double a = (1.0 - o->ci_level) / 2.0;
    double f[3] = {a, 0.5, 1.0 - a}, q[3];
    (void)pfi_quantiles(work, defined, f, q, 3); /* f is valid by construction */
    r->ci_lo = q[0];
    r->ci_median = q[1];
    r->ci_hi = q[2];
    r->ci_available = true;
    r->ci_note = NULL;
    if (!isnan(r->ratio) && (r->ratio < r->ci_lo || r->ratio > r->ci_hi))
        r->notes |= PFI_NOTE_ESTIMATE_OUTSIDE_CI;
    if (r->ci_lo > 1.0)
        r->label = PFI_LABEL_INELASTIC;
    else if (r->ci_hi < 1.0)
        r->label = PFI_LABEL_ELASTIC;
    else
        r->label = PFI_LABEL_LINEAR;
    return PFI_OK;
}

/* ---- a group's stream: from its identity, not its place in the table ------------------- */

/* FNV-1a over n bytes, continuing from h. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* One field of the identity, with its terminating NUL (so "ab","c" differs from "a","bc"). */
static uint64_t fnv1a_str(uint64_t h, const char *s)
{
    return fnv1a(h, s ? s : "", strlen(s ? s : "") + 1);
}

uint64_t pfi_group_stream(const pfi_runs_table *t, size_t g)
{
    const pfi_group *grp = &t->groups[g];
    const char *path = grp->file_index < t->n_files ? t->files[grp->file_index] : "";
    /* the last two components: "dir/file.csv" whatever the prefix the path was given with */
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t start = n, slashes = 0;
    while (start > 0 && !(path[start - 1] == '/' && ++slashes == 2))
        start--;
    uint64_t h = fnv1a(0xcbf29ce484222325ULL, path + start, n - start);
    h = fnv1a(h, "", 1);
    for (size_t k = 0; k < grp->n_key; k++) {
        h = fnv1a_str(h, grp->key_names[k]);
        h = fnv1a_str(h, grp->key_values[k]);
    }
    return mix64(h);
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
    double *work = pfi_malloc((job->o->draws ? job->o->draws : 1) * sizeof *work);
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
            e = pfi_result_ci(&job->results[i], job->o, pfi_group_stream(job->t, i), work);
        if (e != PFI_OK) {
            int ok = PFI_OK;
            atomic_compare_exchange_strong(&job->error, &ok, (int)e);
        }
    }
    pfi_free(work);
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
