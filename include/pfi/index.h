/*
 * pfi/index.h — the Power Flexibility Index of a sweep group (DESIGN §3; paper §2, App. A).
 *
 * For a sweep group with reference run (P0, T0) — the run at the highest cap — and capped
 * runs k = 1..K:
 *     x_k = (P0 − P_k)/P0     relative power decrease
 *     y_k = (T0 − T_k)/T0     relative throughput decrease
 *     PFI_ratio = (1/K) Σ x_k / y_k
 * PFI > 1 inelastic (keeps throughput under caps: power-flexible), = 1 linear, < 1 elastic.
 * Alternatives on normalised curves p = P/P0, t = T/T0 (App. A):
 *     area: A = ∫_{p_min}^{1} (t(p) − p) dp / ∫_{p_min}^{1} (1 − p) dp, t piecewise-linear
 *           through the reference and the used points (0 proportional, 1 independent of power)
 *     constant elasticity: t = p^β fitted through the origin in log space,
 *           β = Σ ln p·ln t / Σ (ln p)², PFI_ce = 1 − β
 *
 * Exclusion rules [ours, DESIGN §3]: runs with a missing cap, power or throughput cannot be
 * placed and are excluded; when no run at the highest cap has both, there is no reference
 * and every definition is undefined (a lower cap is not promoted to reference). Runs at the same
 * cap are merged into one point (mean power, mean throughput, standard errors combined as sqrt(Σ
 * se²)/n). A point with x < x_min (the cap does not bind; x < 0: it drew more power than the
 * reference) is excluded from every definition; a point with y ≤ 0 (no measurable throughput loss)
 * from the ratio only. With nothing left a definition is undefined (NaN, with a reason), never 0 or
 * a huge number.
 *
 * Confidence interval (App. C, Table 6): Monte Carlo resampling of the whole estimator. Each
 * point's P and T — the reference's and every point with a cap, power and throughput, whether
 * or not it counts at the measured values — are drawn from normals with their standard errors
 * (from the data, or noise_rel × value when the caller gives a relative noise), and the
 * exclusion rules are applied again in each draw: a point whose drawn x < x_min or drawn y ≤ 0
 * is left out of that draw's mean (a point measured at x ≈ x_min flips in and out), and a draw
 * with no point left, or with a drawn reference P or T ≤ 0, is undefined (counted in
 * ci_undefined, not used; its share is ci_undefined / ci_draws). The CI is the (1−level)/2 and
 * (1+level)/2 quantiles of the defined draws (linear interpolation between order statistics,
 * Hyndman & Fan type 7), with their median. Each group has its own generator, seeded from (seed,
 * the group's identity: pfi_group_stream): a group's CI does not depend on the number of threads,
 * nor on which other files or groups are analysed with it.
 */
#ifndef PFI_INDEX_H
#define PFI_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"
#include "pfi/runs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why a point is left out. */
typedef enum pfi_exclusion {
    PFI_EXCL_NONE = 0,
    PFI_EXCL_MISSING_CAP = 1,
    PFI_EXCL_MISSING_POWER = 2,
    PFI_EXCL_MISSING_THROUGHPUT = 3,
    PFI_EXCL_POWER_ABOVE_REFERENCE = 4, /* x < 0: drew more power than the reference */
    PFI_EXCL_CAP_NOT_BINDING = 5,       /* 0 <= x < x_min */
    PFI_EXCL_NO_THROUGHPUT_LOSS = 6,    /* y <= 0: left out of the ratio only */
    PFI_EXCL_NO_REFERENCE = 7           /* the group has no usable reference to compare with */
} pfi_exclusion;

/* pfi_exclusion_name — a stable snake_case name ("cap_not_binding", ...); static. */
const char *pfi_exclusion_name(pfi_exclusion e);

typedef enum pfi_label {
    PFI_LABEL_UNDEFINED = 0,
    PFI_LABEL_ELASTIC = 1,  /* PFI < 1 */
    PFI_LABEL_LINEAR = 2,   /* PFI ≈ 1: the CI contains 1, or within ±linear_band without a CI */
    PFI_LABEL_INELASTIC = 3 /* PFI > 1 */
} pfi_label;

/* pfi_label_name — "undefined", "elastic", "linear", "inelastic"; static. */
const char *pfi_label_name(pfi_label l);

/* The normal generator of the Monte Carlo CI. */
typedef enum pfi_rng_kind {
    PFI_RNG_FAST = 0, /* xoshiro256++ with a 256-layer ziggurat (pfi/rng.h); the default */
    PFI_RNG_GSL = 1   /* GSL: gsl_rng_taus2 with gsl_ran_gaussian_ziggurat; for cross-checks */
} pfi_rng_kind;

/* pfi_options — analysis settings; pfi_options_init gives the defaults. */
typedef struct pfi_options {
    double x_min;       /* smallest relative power decrease that counts as binding; 0.02 */
    double linear_band; /* without a CI, |PFI − 1| <= band is "linear"; 0.05 [ours] */
    size_t draws;       /* Monte Carlo draws per group; 10000; 0 = no CI */
    uint64_t seed;      /* generator seed; 1 */
    double noise_rel;   /* relative standard error for runs without one; 0 = none */
    double ci_level;    /* 0.95 */
    unsigned threads;   /* worker threads for pfi_analyze; 0 = one per online CPU */
    pfi_rng_kind rng;   /* PFI_RNG_FAST */
} pfi_options;

/* pfi_options_init — fill o with the defaults above. */
void pfi_options_init(pfi_options *o);

/* pfi_point — one cap of a group (runs at the same cap merged). */
typedef struct pfi_point {
    double cap_w;         /* NaN when the cap is missing */
    double power_w;       /* mean power, W (NaN when missing) */
    double throughput;    /* mean throughput (NaN when missing) */
    double power_se_w;    /* NaN when unknown */
    double throughput_se; /* NaN when unknown */
    double x, y;          /* relative decreases against the reference; NaN when not computed */
    long line;            /* line of the first run of the point */
    size_t n_runs;        /* runs merged into this point */
    pfi_exclusion exclusion;
} pfi_point;

/*
 * Undefined Monte Carlo draws [ours]. The CI is taken over the defined draws only, so it says
 * less the more draws are undefined (no point binds with a throughput loss once the noise is
 * drawn). Above PFI_CI_UNDEFINED_NOTE of the draws the group gets PFI_NOTE_MANY_UNDEFINED; above
 * PFI_CI_UNDEFINED_WITHHOLD (more draws undefined than defined: the data cannot tell whether the
 * caps cost throughput at all) the CI is withheld (ci_available false, ci_note says why, ci_draws
 * and ci_undefined still set), the label is undefined and the group gets PFI_NOTE_CI_WITHHELD;
 * the point estimate stays.
 */
#define PFI_CI_UNDEFINED_NOTE 0.10
#define PFI_CI_UNDEFINED_WITHHOLD 0.50

/* Group notes. */
enum {
    /* a capped point's throughput is above the reference's, and area > 1 or CE < 0: the
       throughput rises under a cap (a noisy or mislabelled reference?), not printed bare */
    PFI_NOTE_THROUGHPUT_RISES = 1u << 0,
    /* more than PFI_CI_UNDEFINED_NOTE of the draws are undefined: the CI is over the rest */
    PFI_NOTE_MANY_UNDEFINED = 1u << 1,
    /* more than PFI_CI_UNDEFINED_WITHHOLD of the draws are undefined: no CI, label undefined */
    PFI_NOTE_CI_WITHHELD = 1u << 2,
    /* the point estimate lies outside its own CI: its throughput losses are so small against
       the noise that the drawn ratios spread far from it; the estimate is not firm */
    PFI_NOTE_ESTIMATE_OUTSIDE_CI = 1u << 3
};

/* pfi_note_text — a stable snake_case name of one PFI_NOTE_* bit ("throughput_rises_under_cap",
 * "many_undefined_draws", "ci_withheld_mostly_undefined", "estimate_outside_ci"); static; NULL
 * for an unknown bit. */
const char *pfi_note_text(unsigned note);

/* pfi_result — the PFI of one group. Owns points (pfi_result_clear). */
typedef struct pfi_result {
    bool has_reference;
    pfi_point reference;
    pfi_point *points; /* n_points non-reference points, cap descending, missing caps last */
    size_t n_points;
    double ratio, area, ce;       /* NaN when undefined */
    size_t n_used;                /* points in the area and CE definitions */
    size_t n_ratio;               /* points in the ratio */
    const char *undefined_reason; /* static text when ratio is NaN, else NULL */
    bool ci_available;
    const char *ci_note;            /* static text: why there is no CI; NULL when there is one */
    double ci_lo, ci_median, ci_hi; /* NaN without a CI */
    size_t ci_draws;                /* draws made */
    size_t ci_undefined;            /* draws where the PFI is undefined (no point left) */
    unsigned notes;                 /* PFI_NOTE_* */
    pfi_label label;
} pfi_result;

/*
 * pfi_index_ratio — PFI_ratio = mean of x[i]/y[i] over n points (the caller has applied the
 * exclusion rules). x[n], y[n] relative decreases (dimensionless). Returns NaN when n == 0.
 * Source: paper §2.
 */
double pfi_index_ratio(const double *x, const double *y, size_t n);

/*
 * pfi_index_area — area definition on n normalised points (p[i], t[i]) — the reference (1, 1)
 * must be among them — in any order; piecewise-linear t(p) through them sorted by p (equal p:
 * a vertical step, which adds no area). work[2n] scratch. *out = NaN and PFI_ERR_INVALID_ARGUMENT
 * when fewer than 2 distinct p or any p outside (0, 1]. Source: paper App. A, DESIGN §3
 * (normalisation ours).
 */
pfi_error pfi_index_area(const double *p, const double *t, size_t n, double *work, double *out);

/*
 * pfi_index_ce — constant-elasticity PFI 1 − β, β = Σ ln p ln t / Σ (ln p)² over n points with
 * p in (0, 1), t > 0. *out = NaN and PFI_ERR_INVALID_ARGUMENT when n == 0 or a value is out of
 * range. Source: paper App. A.
 */
pfi_error pfi_index_ce(const double *p, const double *t, size_t n, double *out);

/*
 * pfi_group_compute — point estimates (ratio, area, CE), every point with its exclusion, and
 * the label without a CI, for group g. out is overwritten (clear it after use). Errors:
 * PFI_ERR_NOMEM, PFI_ERR_INVALID_ARGUMENT (bad options). An undefined PFI is not an error.
 */
pfi_error pfi_group_compute(const pfi_group *g, const pfi_options *o, pfi_result *out);

/*
 * pfi_result_ci — the Monte Carlo CI of r->ratio (computed by pfi_group_compute), with
 * stream (e.g. pfi_group_stream) selecting an independent generator for seed o->seed.
 * work[o->draws] scratch. Sets ci_* and updates the label and the undefined-draw notes
 * (PFI_CI_UNDEFINED_NOTE, PFI_CI_UNDEFINED_WITHHOLD), and PFI_NOTE_ESTIMATE_OUTSIDE_CI when
 * r->ratio lies outside [ci_lo, ci_hi] (the label stays the CI's). A group without standard errors
 * (and no noise_rel), or without a ratio point, gets ci_available false and a ci_note. Errors:
 * PFI_ERR_NOMEM (generator), PFI_ERR_INVALID_ARGUMENT.
 */
pfi_error pfi_result_ci(pfi_result *r, const pfi_options *o, uint64_t stream, double *work);

/*
 * pfi_group_stream — the Monte Carlo stream of group g of t (g < t->n_groups), from the group's
 * identity alone: the last two components of its file's path as given ("dir/runs.csv", so the
 * same file reached by another prefix or from the embedded data directory keeps its stream), and
 * its key column names and values (FNV-1a over them, then a SplitMix64 finaliser). Two groups
 * with the same identity (the same directory and file names elsewhere, the same key) share a
 * stream: each CI is still valid, the two are correlated. [ours]
 */
uint64_t pfi_group_stream(const pfi_runs_table *t, size_t g);

/*
 * pfi_analyze — pfi_group_compute and pfi_result_ci (stream pfi_group_stream(t, g)) for every
 * group of t, on o->threads threads. results[t->n_groups] is caller-allocated; every element is
 * overwritten (clear each after use, also after an error). Errors: PFI_ERR_NOMEM,
 * PFI_ERR_THREAD, PFI_ERR_INVALID_ARGUMENT.
 */
pfi_error pfi_analyze(const pfi_runs_table *t, const pfi_options *o, pfi_result *results);

/* pfi_result_clear — free what r owns and zero it. NULL is a no-op. */
void pfi_result_clear(pfi_result *r);

#ifdef __cplusplus
}
#endif

#endif
