/*
 * The calibrated synthetic job library: group specs, calibration, noise, files.
 */
#include "pfi/library.h"

#include "pfi/atomic_file.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/memory.h"
#include "pfi/manifest.h"
#include "pfi/rng.h"

const char *const pfi_library_feature_names[PFI_LIBRARY_N_FEATURES] = {
    "dcgm_sm_clock_mhz",  /* 100 */
    "dcgm_mem_clock_mhz", /* 101 */
    "dcgm_power_w",       /* 155 */
    "dcgm_gpu_util",      /* 203, fraction */
    "dcgm_mem_copy_util", /* 204, fraction */
    "dcgm_fb_used_mib",   /* 252 */
    "dcgm_sm_active",     /* 1002 */
    "dcgm_sm_occupancy",  /* 1003 */
    "dcgm_tensor_active", /* 1004 */
    "dcgm_dram_active",   /* 1005 */
};
enum { F_CLOCK, F_MEMCLK, F_POWER, F_UTIL, F_COPY, F_FB, F_SMACT, F_OCC, F_TENSOR, F_DRAM };

enum { C_DENSE, C_MOE_PT, C_MOE_FT };
static const char *const class_names[] = {"dense", "moe-pt", "moe-ft"};

/* The synthetic models: tokens/s per GPU at f_max on 8 GPUs, frame buffer in use. */
typedef struct model_spec {
    const char *name;
    bool moe;
    double tokens_per_gpu_pt, tokens_per_gpu_ft;
    double fb_mib;
} model_spec;

static const model_spec models[] = {
    {"dense-8b", false, 9500, 11000, 52000},
    {"dense-32b", false, 2400, 2900, 118000},
    {"moe-30b-a3b", true, 5200, 6500, 126000},
    {"moe-16b-a2b", true, 7800, 9000, 88000},
};

/* One sweep group of the default composition; skip lists caps whose runs "failed". */
typedef struct group_spec {
    unsigned model;
    bool ft;
    unsigned gpus;
    double skip[2];
} group_spec;

/* 25 groups: dense 10, moe-pt 7, moe-ft 8; 17 on 8 GPUs, 8 on 16/32 GPUs; 131 runs (one
 * 8-GPU group lost its 500 W and 200 W runs, as in the paper's App. C; one 16-GPU group its
 * 500 W run). */
static const group_spec specs[] = {
    {0, false, 8, {0}},  {0, false, 8, {0}},  {1, false, 8, {0}},  {1, false, 8, {0}},
    {0, true, 8, {0}},   {1, true, 8, {0}},   {0, false, 16, {0}}, {0, true, 16, {500, 0}},
    {1, false, 32, {0}}, {1, false, 32, {0}}, {2, false, 8, {0}},  {2, false, 8, {0}},
    {2, false, 8, {0}},  {3, false, 8, {0}},  {3, false, 8, {0}},  {2, false, 16, {0}},
    {2, false, 16, {0}}, {2, true, 8, {0}},   {2, true, 8, {0}},   {2, true, 8, {500, 200}},
    {3, true, 8, {0}},   {3, true, 8, {0}},   {3, true, 8, {0}},   {2, true, 16, {0}},
    {2, true, 16, {0}},
};
#define N_SPECS (sizeof specs / sizeof specs[0])

static const double grid_fine[] = {700, 600, 500, 400, 300, 200};
static const double grid_coarse[] = {700, 500, 600, 200};

static unsigned spec_class(const group_spec *s)
{
    return !models[s->model].moe ? C_DENSE : s->ft ? C_MOE_FT : C_MOE_PT;
}

void pfi_library_options_init(pfi_library_options *o)
{
    static const double pfi[3][3] = {{1.10, 1.27, 1.50}, {1.22, 1.43, 1.75}, {1.62, 2.10, 2.67}};
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->power_noise_rel = 0.001;
    o->throughput_noise_rel = 0.001;
    o->power_static_frac = 0.30;
    o->gamma = 2;
    o->feature_scale_sd = 0.05;
    o->feature_share_sd = 0.02;
    memcpy(o->class_pfi, pfi, sizeof pfi);
}

void pfi_library_destroy(pfi_library *lib)
{
    if (lib == NULL)
        return;
    pfi_free(lib->groups);
    pfi_free(lib->runs);
    pfi_free(lib);
}

static double clamp01(double v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* The class quantile function through (0, min), (0.5, median), (1, max). */
static double class_quantile(const double q3[3], double u)
{
    return u <= 0.5 ? q3[0] + (q3[1] - q3[0]) * u / 0.5 : q3[1] + (q3[2] - q3[1]) * (u - 0.5) / 0.5;
}

/* Fisher–Yates shuffle of idx[n] with r. */
static void shuffle(size_t *idx, size_t n, pfi_rng *r)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(pfi_rng_uniform(r) * (double)i);
        size_t t = idx[i - 1];
        idx[i - 1] = idx[j];
        idx[j] = t;
    }
}

static pfi_error check_options(const pfi_library_options *o)
{
    if (!(o->power_noise_rel >= 0 && o->power_noise_rel < 0.1) ||
        !(o->throughput_noise_rel >= 0 && o->throughput_noise_rel < 0.1) ||
        !(o->power_static_frac >= 0 && o->power_static_frac < 0.9) || !(o->gamma > 0) ||
        !(o->feature_scale_sd >= 0 && o->feature_scale_sd < 2) ||
        !(o->feature_share_sd >= 0 && o->feature_share_sd < 0.5))
        return PFI_ERR_INVALID_ARGUMENT;
    for (int c = 0; c < 3; c++)
        if (!(o->class_pfi[c][0] > 0 && o->class_pfi[c][0] <= o->class_pfi[c][1] &&
              o->class_pfi[c][1] <= o->class_pfi[c][2]))
            return PFI_ERR_INVALID_ARGUMENT;
    return PFI_OK;
}

/*
 * Telemetry of a group's job at one model point (per-GPU means over the run). The counters
 * follow the job's telemetry share g->telemetry_share (class level plus job noise, see
 * pfi/library.h), not its true compute share: the share of the step bound by the clock at
 * clock f is a/(a + (1 − a)·f/f_max) with a the telemetry share at f_max.
 */
static void run_features(const pfi_library_group *g, const pfi_model_point *pt, pfi_rng *r,
                         double *f)
{
    double a = g->telemetry_share, rel = pt->clock_mhz / g->job.clock_max_mhz;
    double share = a > 0 ? a / (a + (1 - a) * rel) : 0;
    double mem = 1 - share;
    f[F_CLOCK] = round(pt->clock_mhz + 3 * pfi_rng_normal(r));
    f[F_MEMCLK] = 3201; /* H200 HBM3e: capping leaves the memory clock alone (paper §5) */
    f[F_POWER] = pt->power_w * (1 + 0.003 * pfi_rng_normal(r));
    f[F_UTIL] = clamp01(0.985 + 0.008 * pfi_rng_normal(r));
    f[F_COPY] = clamp01(g->copy_peak * mem + 0.005 * pfi_rng_normal(r));
    f[F_FB] = round(g->fb_used_mib + 300 * pfi_rng_normal(r));
    f[F_SMACT] = clamp01(0.93 - 0.10 * mem + 0.02 * pfi_rng_normal(r));
    f[F_OCC] = clamp01(0.30 + 0.15 * mem + 0.04 * pfi_rng_normal(r));
    f[F_TENSOR] = clamp01(g->job.tensor_active_peak * share + 0.005 * pfi_rng_normal(r));
    f[F_DRAM] = clamp01(g->job.dram_active_peak * mem + 0.005 * pfi_rng_normal(r));
}

/* Per class, the range of a job's uncapped per-GPU power P_u, W: dense jobs draw the most
   power, MoE fine-tuning the least. */
static const double pu_lo[] = {665, 645, 630}, pu_hi[] = {700, 690, 675};

/* Targets: class quantiles at i/(n−1), handed out to the class's groups in random order. */
static void assign_targets(pfi_library *lib, const pfi_library_options *opt, pfi_rng *r_assign)
{
    for (unsigned c = 0; c < 3; c++) {
        size_t idx[N_SPECS], n = 0;
        for (size_t s = 0; s < N_SPECS; s++)
            if (spec_class(&specs[s]) == c)
                idx[n++] = s;
        shuffle(idx, n, r_assign);
        for (size_t i = 0; i < n; i++)
            lib->groups[idx[i]].pfi_target =
                class_quantile(opt->class_pfi[c], n > 1 ? (double)i / (double)(n - 1) : 0.5);
    }
}

/* The class-level telemetry share: the compute share that gives the class's median PFI on
   the 8-GPU grid to a job at the middle of the class's power range. Errors: the model's. */
static pfi_error class_shares(const pfi_library_options *opt, double class_share[3])
{
    for (unsigned c = 0; c < 3; c++) {
        pfi_model_job ref;
        pfi_model_job_init(&ref, 1, round(0.5 * (pu_lo[c] + pu_hi[c])));
        ref.power_static_w = opt->power_static_frac * ref.power_uncapped_w;
        ref.gamma = opt->gamma;
        pfi_error e = pfi_model_share_for_pfi(&ref, grid_fine, 6, 0.02, opt->class_pfi[c][1],
                                              &class_share[c], NULL);
        if (e != PFI_OK)
            return e;
    }
    return PFI_OK;
}

/* Group g of spec sp, variant v of its model, task and scale: its name and labels, and its
   caps (the spec's grid without the caps whose runs "failed", descending). */
static void group_caps(pfi_library_group *g, const group_spec *sp, unsigned v)
{
    const model_spec *m = &models[sp->model];
    snprintf(g->name, sizeof g->name, "%s-%s-%ug-%c", m->name, sp->ft ? "ft" : "pt", sp->gpus,
             'a' + (char)v);
    g->model = m->name;
    g->task = sp->ft ? "ft" : "pt";
    g->job_class = class_names[spec_class(sp)];
    const double *grid = sp->gpus == 8 ? grid_fine : grid_coarse;
    size_t n_grid = sp->gpus == 8 ? 6 : 4;
    double sorted[PFI_LIBRARY_MAX_CAPS];
    size_t n = 0;
    for (size_t k = 0; k < n_grid; k++)
        if (grid[k] != sp->skip[0] && grid[k] != sp->skip[1])
            sorted[n++] = grid[k];
    for (size_t a = 1; a < n; a++) /* descending */
        for (size_t b = a; b > 0 && sorted[b - 1] < sorted[b]; b--) {
            double t = sorted[b];
            sorted[b] = sorted[b - 1];
            sorted[b - 1] = t;
        }
    memcpy(g->caps_w, sorted, n * sizeof *sorted);
    g->n_caps = n;
}

/* Group g's job: platform and job scales drawn from r_job, then the compute share that gives
   its PFI target on its caps (pfi_true: the PFI it then has). Errors: the model's. */
static pfi_error group_job(pfi_library_group *g, const group_spec *sp,
                           const pfi_library_options *opt, double class_share, pfi_rng *r_job)
{
    const model_spec *m = &models[sp->model];
    unsigned c = spec_class(sp);
    double pu = pu_lo[c] + (pu_hi[c] - pu_lo[c]) * pfi_rng_uniform(r_job);
    pfi_model_job_init(&g->job, 1, round(pu));
    g->job.power_static_w = opt->power_static_frac * g->job.power_uncapped_w;
    g->job.gamma = opt->gamma;
    g->job.gpus = sp->gpus;
    double sd = opt->feature_scale_sd;
    g->job.dram_active_peak = clamp01(0.85 * exp(sd * pfi_rng_normal(r_job)));
    g->job.tensor_active_peak = clamp01(0.60 * exp(0.8 * sd * pfi_rng_normal(r_job)));
    g->copy_peak = clamp01(0.65 * exp(sd * pfi_rng_normal(r_job)));
    g->telemetry_share =
        fmin(1, fmax(0.02, class_share + opt->feature_share_sd * pfi_rng_normal(r_job)));
    g->fb_used_mib =
        fmin(143771, m->fb_mib * (sp->ft ? 0.7 : 1.0) * (1 + 0.05 * pfi_rng_normal(r_job)));
    double per_gpu = (sp->ft ? m->tokens_per_gpu_ft : m->tokens_per_gpu_pt) *
                     (0.9 + 0.2 * pfi_rng_uniform(r_job)) *
                     (sp->gpus == 8    ? 1.0
                      : sp->gpus == 16 ? 0.92
                                       : 0.88);
    g->job.tokens_per_step = 32768.0 * sp->gpus;
    double step_s = g->job.tokens_per_step / (per_gpu * sp->gpus);
    g->job.compute_time_s = step_s;
    g->job.memory_time_s = 0;
    double alpha;
    pfi_error e =
        pfi_model_share_for_pfi(&g->job, g->caps_w, g->n_caps, 0.02, g->pfi_target, &alpha, NULL);
    if (e == PFI_OK) {
        pfi_model_set_share(&g->job, alpha);
        e = pfi_model_pfi(&g->job, g->caps_w, g->n_caps, 0.02, &g->pfi_true);
    }
    return e;
}

/* Group s's runs, one per cap, appended to lib->runs: the model's point with measurement
   noise from r_noise, and its telemetry features. Errors: the model's. */
static pfi_error group_runs(pfi_library *lib, size_t s, const pfi_library_options *opt,
                            pfi_rng *r_noise)
{
    const pfi_library_group *g = &lib->groups[s];
    for (size_t k = 0; k < g->n_caps; k++) {
        pfi_model_point pt;
        pfi_error e = pfi_model_eval(&g->job, g->caps_w[k], &pt);
        if (e != PFI_OK)
            return e;
        pfi_library_run *run = &lib->runs[lib->n_runs++];
        run->group = s;
        run->cap_w = g->caps_w[k];
        run->power_se_w = opt->power_noise_rel * pt.job_power_w;
        run->throughput_se = opt->throughput_noise_rel * pt.throughput;
        run->power_w = pt.job_power_w + run->power_se_w * pfi_rng_normal(r_noise);
        run->throughput = pt.throughput + run->throughput_se * pfi_rng_normal(r_noise);
        run_features(g, &pt, r_noise, run->features);
    }
    return PFI_OK;
}

/* The phases: targets, class shares, then per group its caps, job and runs. */
pfi_error pfi_library_generate(const pfi_library_options *opt, pfi_library **out)
{
    if (out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    *out = NULL;
    pfi_library_options defaults;
    if (opt == NULL) {
        pfi_library_options_init(&defaults);
        opt = &defaults;
    }
    if (check_options(opt) != PFI_OK)
        return PFI_ERR_INVALID_ARGUMENT;
    pfi_library *lib = pfi_calloc(1, sizeof *lib);
    size_t max_runs = N_SPECS * PFI_LIBRARY_MAX_CAPS;
    if (lib == NULL || (lib->groups = pfi_calloc(N_SPECS, sizeof *lib->groups)) == NULL ||
        (lib->runs = pfi_calloc(max_runs, sizeof *lib->runs)) == NULL) {
        pfi_library_destroy(lib);
        return PFI_ERR_NOMEM;
    }
    lib->seed = opt->seed;
    lib->n_groups = N_SPECS;
    /* Independent streams: the target assignment, job parameters, measurement noise. */
    pfi_rng r_assign, r_job, r_noise;
    pfi_rng_seed(&r_assign, opt->seed, 1);
    pfi_rng_seed(&r_job, opt->seed, 2);
    pfi_rng_seed(&r_noise, opt->seed, 3);
    assign_targets(lib, opt, &r_assign);
    double class_share[3];
    pfi_error e = class_shares(opt, class_share);
    unsigned variant[sizeof models / sizeof models[0]][2][3] = {{{0}}};
    for (size_t s = 0; e == PFI_OK && s < N_SPECS; s++) {
        const group_spec *sp = &specs[s];
        pfi_library_group *g = &lib->groups[s];
        unsigned scale = sp->gpus == 8 ? 0 : sp->gpus == 16 ? 1 : 2;
        group_caps(g, sp, variant[sp->model][sp->ft][scale]++);
        e = group_job(g, sp, opt, class_share[spec_class(sp)], &r_job);
        if (e == PFI_OK)
            e = group_runs(lib, s, opt, &r_noise);
    }
    if (e != PFI_OK) {
        pfi_library_destroy(lib);
        return e;
    }
    *out = lib;
    return PFI_OK;
}

/* ---- writing ---- */

static pfi_error io_fail(pfi_diag *d, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static pfi_error io_fail(pfi_diag *d, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_diag_vset(d, path, 0, NULL, fmt, ap);
    va_end(ap);
    return PFI_ERR_IO;
}

typedef void (*writer_fn)(FILE *f, const pfi_library *lib);

/* Write one file through a temporary beside it, renamed on success. */
static pfi_error write_file(const char *dir, const char *name, writer_fn fn, const pfi_library *lib,
                            pfi_diag *d)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return io_fail(d, dir, "path too long");
    pfi_atomic_file out;
    pfi_error e = pfi_atomic_open(&out, path, d);
    if (e != PFI_OK)
        return e;
    fn(out.f, lib);
    return pfi_atomic_commit(&out, d);
}

static void write_runs(FILE *f, const pfi_library *lib)
{
    fputs("synthetic,group,model,task,job_class,gpus,cap_w,power_w,power_se_w,"
          "throughput_tokens_s,throughput_se_tokens_s",
          f);
    for (size_t k = 0; k < PFI_LIBRARY_N_FEATURES; k++)
        fprintf(f, ",%s", pfi_library_feature_names[k]);
    fputc('\n', f);
    for (size_t i = 0; i < lib->n_runs; i++) {
        const pfi_library_run *r = &lib->runs[i];
        const pfi_library_group *g = &lib->groups[r->group];
        fprintf(f, "1,%s,%s,%s,%s,%u,%.0f,%.3f,%.3f,%.3f,%.3f", g->name, g->model, g->task,
                g->job_class, g->job.gpus, r->cap_w, r->power_w, r->power_se_w, r->throughput,
                r->throughput_se);
        for (size_t k = 0; k < PFI_LIBRARY_N_FEATURES; k++)
            fprintf(f, ",%.6g", r->features[k]);
        fputc('\n', f);
    }
}

static void write_groups(FILE *f, const pfi_library *lib)
{
    fputs("synthetic,group,model,task,job_class,gpus,caps_w,compute_share,compute_time_s,"
          "memory_time_s,tokens_per_step,power_uncapped_w,power_static_w,gamma,clock_max_mhz,"
          "clock_min_mhz,dram_active_peak,tensor_active_peak,pfi_target,pfi_true,"
          "telemetry_compute_share\n",
          f);
    for (size_t i = 0; i < lib->n_groups; i++) {
        const pfi_library_group *g = &lib->groups[i];
        char caps[128] = "";
        size_t used = 0;
        for (size_t k = 0; k < g->n_caps && used < sizeof caps; k++)
            used += (size_t)snprintf(caps + used, sizeof caps - used, "%s%.0f", k ? " " : "",
                                     g->caps_w[k]);
        const pfi_model_job *j = &g->job;
        fprintf(f,
                "1,%s,%s,%s,%s,%u,%s,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,"
                "%.17g,%.17g,%.17g,%.17g,%.17g\n",
                g->name, g->model, g->task, g->job_class, j->gpus, caps, pfi_model_compute_share(j),
                j->compute_time_s, j->memory_time_s, j->tokens_per_step, j->power_uncapped_w,
                j->power_static_w, j->gamma, j->clock_max_mhz, j->clock_min_mhz,
                j->dram_active_peak, j->tensor_active_peak, g->pfi_target, g->pfi_true,
                g->telemetry_share);
    }
}

static void write_manifest(FILE *f, const pfi_library *lib)
{
    fprintf(f,
            "{\n"
            "  \"pfi_manifest\": %d,\n"
            "  \"description\": \"SYNTHETIC job library (pfi library generate --seed %llu): "
            "generated from the DESIGN section 7 model, calibrated to the paper's published "
            "statistics; not measurements\",\n"
            "  \"files\": \"runs.csv\",\n"
            "  \"mapping\": {\n"
            "    \"group\": [\"group\"],\n"
            "    \"cap\": \"cap_w\",\n"
            "    \"power\": \"power_w\",\n"
            "    \"throughput\": \"throughput_tokens_s\",\n"
            "    \"power_se\": \"power_se_w\",\n"
            "    \"throughput_se\": \"throughput_se_tokens_s\",\n"
            "    \"gpus\": \"gpus\",\n"
            "    \"job_class\": \"job_class\"\n"
            "  }\n"
            "}\n",
            PFI_MANIFEST_VERSION, (unsigned long long)lib->seed);
}

pfi_error pfi_library_write(const pfi_library *lib, const char *dir, pfi_diag *diag)
{
    if (lib == NULL || dir == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return io_fail(diag, dir, "cannot create directory: %s", strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return io_fail(diag, dir, "not a directory");
    pfi_error e = write_file(dir, "runs.csv", write_runs, lib, diag);
    if (e == PFI_OK)
        e = write_file(dir, "groups.csv", write_groups, lib, diag);
    if (e == PFI_OK)
        e = write_file(dir, PFI_MANIFEST_NAME, write_manifest, lib, diag);
    return e;
}
