/*
 * The emulated backend: N GPUs running one training job of the DESIGN §7 model (pfi/model.h)
 * on a virtual clock. Time moves only when the caller sleeps (or pays the per-read cost), so an
 * hour of sweep costs milliseconds and every run is reproducible from the seed.
 *
 * The job: idle until pfi_gpu_job_start; then a start-up phase (power low, no throughput),
 * then training with a checkpoint dip every `ckpt` seconds. The SM clock follows the cap with
 * a first-order lag (time constant `tau`). Power and throughput carry relative normal noise.
 * The job runs at the pace of its slowest GPU and reports tokens/s every `report` seconds.
 *
 * Several jobs share one handle when the spec has segments separated by ';' (a node running
 * a dense and a MoE job): each segment is one job on its own GPUs, numbered in segment order,
 * all on one virtual clock. A segment starts from the previous one's values (so common keys
 * are given once) with the seed moved on by one, then applies its own keys.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "hw/backend.h"
#include "hw/emulated.h"
#include "pfi/model.h"
#include "pfi/rng.h"

#define EMU_MAX_GPUS 1024

typedef struct emu_params {
    double gpus, alpha, pu, ps, gamma, fmax, fmin, tdp, min, max, tput, noise, startup, ckpt,
        ckpt_len, report, tau, read_cost, spread, seed, step, dram_peak, tensor_peak;
} emu_params;

typedef struct emu_gpu {
    pfi_model_job job; /* this GPU's share: gpus = 1, its own P_u and P_s */
    unsigned owner;    /* index of its job in emu_ctx.jobs */
    uint32_t limit_mw;
    double f_mhz;
    double power_w; /* noiseless power at the last advance */
    double energy_j;
} emu_gpu;

/* One job (one spec segment) on GPUs first .. first + n - 1. */
typedef struct emu_job {
    emu_params p;
    unsigned first, n;
    int running;
    double start_s;
    double next_report_s;
} emu_job;

typedef struct emu_ctx {
    emu_job *jobs;
    unsigned nj;
    unsigned n; /* GPUs, all jobs */
    emu_gpu *g;
    double now_s;
    double last_advance_s;
    pfi_rng rng;
} emu_ctx;

static const struct {
    const char *key;
    size_t off;
    double def;
} keys[] = {
#define K(name, d)                                                                                 \
    {                                                                                              \
#name, offsetof(emu_params, name), d                                                       \
    }
    K(gpus, 8),     K(alpha, 0.8),     K(pu, 650),           K(ps, -1),       K(gamma, 2),
    K(fmax, 1980),  K(fmin, 345),      K(tdp, 700),          K(min, 200),     K(max, 700),
    K(tput, 10000), K(noise, 0.01),    K(startup, 60),       K(ckpt, 600),    K(ckpt_len, 20),
    K(report, 10),  K(tau, 2),         K(read_cost, 0.0005), K(spread, 0.02), K(seed, 1),
    K(step, 1),     K(dram_peak, 0.9), K(tensor_peak, 0.9),
#undef K
};

/* Parse one segment spec[0..slen) into *p, starting from *base (NULL: the defaults); *raw
 * (may be NULL) gets the values as given (ps < 0: not given), the base of the next segment. */
static pfi_error parse_segment(const char *spec, size_t slen, const emu_params *base,
                               emu_params *raw, emu_params *p, pfi_diag *diag)
{
    if (base != NULL) {
        *p = *base;
        p->seed += 1;
    } else {
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            *(double *)((char *)p + keys[k].off) = keys[k].def;
    }
    const char *s = spec ? spec : "";
    const char *stop = s + (spec ? slen : 0);
    while (s < stop) {
        const char *end = memchr(s, ',', (size_t)(stop - s));
        size_t len = end ? (size_t)(end - s) : (size_t)(stop - s);
        const char *eq = memchr(s, '=', len);
        if (len > 0) {
            if (eq == NULL)
                return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "emulate: '%.*s' is not key=value",
                               (int)len, s);
            size_t klen = (size_t)(eq - s);
            size_t k = 0;
            while (k < sizeof keys / sizeof keys[0] &&
                   !(strlen(keys[k].key) == klen && memcmp(keys[k].key, s, klen) == 0))
                k++;
            if (k == sizeof keys / sizeof keys[0])
                return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "emulate: unknown key '%.*s'",
                               (int)klen, s);
            char num[64];
            size_t vlen = len - klen - 1;
            if (vlen == 0 || vlen >= sizeof num)
                return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "emulate: bad value for %s",
                               keys[k].key);
            memcpy(num, eq + 1, vlen);
            num[vlen] = '\0';
            char *e;
            double v = strtod(num, &e);
            if (*e != '\0' || !isfinite(v) || v < 0)
                return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT,
                               "emulate: %s=%s is not a non-negative number", keys[k].key, num);
            *(double *)((char *)p + keys[k].off) = v;
        }
        s += len + (end ? 1 : 0);
    }
    if (raw != NULL)
        *raw = *p;
    if (p->ps < 0)
        p->ps = 0.25 * p->pu;
    if (!(p->gpus >= 1 && p->gpus <= EMU_MAX_GPUS) || !(p->alpha > 0 && p->alpha <= 1) ||
        !(p->pu > p->ps) || !(p->gamma > 0) || !(p->fmax > p->fmin) || !(p->fmin > 0) ||
        !(p->min > 0 && p->min <= p->max) || !(p->tdp >= p->min && p->tdp <= p->max) ||
        !(p->tput > 0) || !(p->report > 0) || !(p->tau > 0) || !(p->noise < 0.5) ||
        !(p->spread < 0.2) || !(p->ckpt == 0 || p->ckpt > p->ckpt_len) || !(p->step > 0) ||
        !(p->dram_peak <= 1) || !(p->tensor_peak <= 1))
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT,
                       "emulate: inconsistent parameters (need 1<=gpus<=%d, 0<alpha<=1, "
                       "pu>ps, fmax>fmin>0, 0<min<=tdp<=max, ckpt>ckpt_len, step>0, "
                       "dram_peak, tensor_peak <= 1)",
                       EMU_MAX_GPUS);
    return PFI_OK;
}

/* A single-job spec (no ';'). */
static pfi_error parse_spec(const char *spec, emu_params *p, pfi_diag *diag)
{
    if (spec != NULL && strchr(spec, ';') != NULL)
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT,
                       "emulate: one job wanted here (no ';' segments)");
    return parse_segment(spec, spec ? strlen(spec) : 0, NULL, NULL, p, diag);
}

/* The spec's job as a pfi_model_job: t_c = alpha·step, t_m = (1 − alpha)·step,
 * tokens_per_step = tput·step (so tput is the uncapped tokens/s), one entry per GPU. */
static void spec_job(const emu_params *p, pfi_model_job *j)
{
    pfi_model_job_init(j, p->alpha, p->pu);
    j->compute_time_s = p->alpha * p->step;
    j->memory_time_s = (1.0 - p->alpha) * p->step;
    j->tokens_per_step = p->tput * p->step;
    j->power_static_w = p->ps;
    j->gamma = p->gamma;
    j->clock_max_mhz = p->fmax;
    j->clock_min_mhz = p->fmin;
    j->dram_active_peak = p->dram_peak;
    j->tensor_active_peak = p->tensor_peak;
    j->gpus = (unsigned)p->gpus;
}

pfi_error pfi_gpu_emulate_job(const char *spec, pfi_model_job *job, pfi_diag *diag)
{
    pfi_diag_clear(diag);
    emu_params p;
    pfi_error e = parse_spec(spec, &p, diag);
    if (e != PFI_OK)
        return e;
    spec_job(&p, job);
    if (pfi_model_check(job) != PFI_OK)
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "emulate: not a valid model job");
    return PFI_OK;
}

/* The clock GPU g settles at under cap_w (the job is checked at open: eval cannot fail). */
static double settle_clock(const pfi_model_job *j, double cap_w)
{
    pfi_model_point pt;
    return pfi_model_eval(j, cap_w, &pt) == PFI_OK ? pt.clock_mhz : j->clock_max_mhz;
}

/* The state at clock f; a failed eval (cannot happen for a checked job) reads as zeros. */
static void at_clock(const pfi_model_job *j, double f, pfi_model_point *pt)
{
    if (pfi_model_eval_at_clock(j, f, pt) != PFI_OK)
        memset(pt, 0, sizeof *pt);
}

/* The per-GPU jobs: the spec's job on one GPU, each GPU's P_u and P_s spread by `spread`. */
static pfi_error build_gpus(const emu_params *p, emu_gpu *g, unsigned n, pfi_diag *diag)
{
    pfi_model_job base;
    spec_job(p, &base);
    base.gpus = 1;
    pfi_rng r;
    pfi_rng_seed(&r, (uint64_t)p->seed, 0x9e3779b9u);
    for (unsigned i = 0; i < n; i++) {
        double z = pfi_rng_normal(&r);
        z = z > 3 ? 3 : z < -3 ? -3 : z;
        double scale = 1.0 + p->spread * z;
        g[i].job = base;
        g[i].job.power_uncapped_w = p->pu * scale;
        g[i].job.power_static_w = p->ps * scale;
        if (pfi_model_check(&g[i].job) != PFI_OK)
            return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "emulate: not a valid model job");
        g[i].limit_mw = (uint32_t)llround(p->tdp * 1000.0);
        g[i].f_mhz = p->fmin;
        g[i].power_w = 0.1 * p->tdp;
    }
    return PFI_OK;
}

pfi_error hw_emulated_expected(const char *spec, double cap_w, double *power_w, double *tput)
{
    emu_params p;
    pfi_error e = parse_spec(spec, &p, NULL);
    if (e != PFI_OK)
        return e;
    unsigned n = (unsigned)p.gpus;
    emu_gpu *g = pfi_calloc(n, sizeof *g);
    if (g == NULL)
        return PFI_ERR_NOMEM;
    e = build_gpus(&p, g, n, NULL);
    double sum = 0, fmin = INFINITY;
    for (unsigned i = 0; i < n && e == PFI_OK; i++) {
        pfi_model_point pt;
        if ((e = pfi_model_eval(&g[i].job, cap_w, &pt)) != PFI_OK)
            break;
        sum += pt.power_w;
        if (pt.clock_mhz < fmin)
            fmin = pt.clock_mhz;
    }
    pfi_model_point slow;
    if (e == PFI_OK)
        e = pfi_model_eval_at_clock(&g[0].job, fmin, &slow);
    if (e == PFI_OK) {
        *power_w = sum;
        *tput = slow.throughput;
    }
    pfi_free(g);
    return e;
}

enum { PHASE_IDLE, PHASE_STARTUP, PHASE_TRAIN, PHASE_CKPT };

static int phase_at(const emu_job *j, double t)
{
    if (!j->running)
        return PHASE_IDLE;
    double el = t - j->start_s;
    if (el < j->p.startup)
        return PHASE_STARTUP;
    if (j->p.ckpt > 0) {
        double in = fmod(el - j->p.startup, j->p.ckpt);
        if (in >= j->p.ckpt - j->p.ckpt_len)
            return PHASE_CKPT;
    }
    return PHASE_TRAIN;
}

/* Move every GPU's clock, power and energy from the last advance to time t. */
static void advance(emu_ctx *c, double t)
{
    double dt = t - c->last_advance_s;
    if (!(dt > 0))
        return;
    for (unsigned i = 0; i < c->n; i++) {
        emu_gpu *g = &c->g[i];
        const emu_job *j = &c->jobs[g->owner];
        int ph = phase_at(j, t);
        double k = 1.0 - exp(-dt / j->p.tau);
        double cap = g->limit_mw / 1000.0;
        double target, power;
        pfi_model_point pt;
        switch (ph) {
        case PHASE_TRAIN:
            target = settle_clock(&g->job, cap);
            g->f_mhz += (target - g->f_mhz) * k;
            at_clock(&g->job, g->f_mhz, &pt);
            power = pt.power_w;
            break;
        case PHASE_CKPT:
        case PHASE_STARTUP:
            g->f_mhz += (g->job.clock_max_mhz - g->f_mhz) * k;
            power = g->job.power_static_w + 0.1 * (g->job.power_uncapped_w - g->job.power_static_w);
            break;
        default:
            g->f_mhz += (j->p.fmin - g->f_mhz) * k;
            power = 0.1 * j->p.tdp;
        }
        g->energy_j += 0.5 * (g->power_w + power) * dt;
        g->power_w = power;
    }
    c->last_advance_s = t;
}

static void emu_close(void *vctx)
{
    emu_ctx *c = vctx;
    if (c == NULL)
        return;
    pfi_free(c->g);
    pfi_free(c->jobs);
    pfi_free(c);
}

static pfi_error emu_count(void *vctx, unsigned *n, pfi_diag *diag)
{
    (void)diag;
    *n = ((emu_ctx *)vctx)->n;
    return PFI_OK;
}

static pfi_error check_index(const emu_ctx *c, unsigned i, pfi_diag *diag)
{
    if (i >= c->n)
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "GPU %u: no such GPU (%u emulated)", i,
                       c->n);
    return PFI_OK;
}

static const emu_params *params_of(const emu_ctx *c, unsigned i)
{
    return &c->jobs[c->g[i].owner].p;
}

static pfi_error emu_info(void *vctx, unsigned i, pfi_gpu_info *out, pfi_diag *diag)
{
    emu_ctx *c = vctx;
    pfi_error e = check_index(c, i, diag);
    if (e != PFI_OK)
        return e;
    snprintf(out->uuid, sizeof out->uuid, "EMU-%08x-%04u", (unsigned)c->jobs[0].p.seed, i);
    snprintf(out->name, sizeof out->name, "Emulated GPU (DESIGN 7 model, alpha %.2f)",
             params_of(c, i)->alpha);
    return PFI_OK;
}

static pfi_error emu_sample(void *vctx, unsigned i, pfi_gpu_sample *out, pfi_diag *diag)
{
    emu_ctx *c = vctx;
    pfi_error e = check_index(c, i, diag);
    if (e != PFI_OK)
        return e;
    const emu_params *p = params_of(c, i);
    c->now_s += p->read_cost; /* a driver call is not free */
    out->t_s = c->now_s;
    advance(c, c->now_s);
    emu_gpu *g = &c->g[i];
    int ph = phase_at(&c->jobs[g->owner], c->now_s);
    out->power_w = g->power_w * (1.0 + p->noise * pfi_rng_normal(&c->rng));
    out->energy_j = g->energy_j;
    out->sm_clock_mhz = round(g->f_mhz);
    out->mem_clock_mhz = 3201;
    out->temp_c = 30 + 0.06 * g->power_w;
    out->valid = PFI_SAMPLE_POWER | PFI_SAMPLE_ENERGY | PFI_SAMPLE_SM_CLOCK | PFI_SAMPLE_MEM_CLOCK |
                 PFI_SAMPLE_TEMP | PFI_SAMPLE_REASONS | PFI_SAMPLE_GPU_UTIL | PFI_SAMPLE_MEM_UTIL |
                 PFI_SAMPLE_DRAM_ACTIVE | PFI_SAMPLE_TENSOR_ACTIVE | PFI_SAMPLE_SM_ACTIVE;
    if (ph == PHASE_TRAIN) {
        pfi_model_point pt;
        at_clock(&g->job, g->f_mhz, &pt);
        out->dram_active = pt.dram_active;
        out->tensor_active = pt.tensor_active;
        out->sm_active = 0.95;
        out->gpu_util = 1.0;
        out->mem_util = pt.dram_active;
        double cap = g->limit_mw / 1000.0;
        out->reasons = cap < g->job.power_uncapped_w ? PFI_REASON_SW_POWER_CAP : 0;
    } else {
        out->dram_active = out->tensor_active = out->sm_active = 0.0;
        out->gpu_util = ph == PHASE_IDLE ? 0.0 : 0.3;
        out->mem_util = 0.0;
        out->reasons = ph == PHASE_IDLE ? PFI_REASON_GPU_IDLE : 0;
    }
    return PFI_OK;
}

static pfi_error emu_limits(void *vctx, unsigned i, pfi_gpu_limits *out, pfi_diag *diag)
{
    emu_ctx *c = vctx;
    pfi_error e = check_index(c, i, diag);
    if (e != PFI_OK)
        return e;
    const emu_params *p = params_of(c, i);
    out->current_mw = out->enforced_mw = c->g[i].limit_mw;
    out->default_mw = (uint32_t)llround(p->tdp * 1000);
    out->min_mw = (uint32_t)llround(p->min * 1000);
    out->max_mw = (uint32_t)llround(p->max * 1000);
    out->valid =
        PFI_LIMIT_CURRENT | PFI_LIMIT_ENFORCED | PFI_LIMIT_DEFAULT | PFI_LIMIT_MIN | PFI_LIMIT_MAX;
    return PFI_OK;
}

static pfi_error emu_set(void *vctx, unsigned i, uint32_t mw, pfi_diag *diag)
{
    emu_ctx *c = vctx;
    pfi_error e = check_index(c, i, diag);
    if (e != PFI_OK)
        return e;
    const emu_params *p = params_of(c, i);
    if (mw < (uint32_t)llround(p->min * 1000) || mw > (uint32_t)llround(p->max * 1000))
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT,
                       "GPU %u: %u mW outside [%.0f, %.0f] W (as NVML: "
                       "NVML_ERROR_INVALID_ARGUMENT (2))",
                       i, (unsigned)mw, p->min, p->max);
    advance(c, c->now_s);
    c->g[i].limit_mw = mw;
    return PFI_OK;
}

static double emu_now(void *vctx)
{
    return ((emu_ctx *)vctx)->now_s;
}

static pfi_error emu_sleep(void *vctx, double t)
{
    emu_ctx *c = vctx;
    if (t > c->now_s)
        c->now_s = t;
    return PFI_OK;
}

static pfi_error emu_job_start(void *vctx)
{
    emu_ctx *c = vctx;
    advance(c, c->now_s);
    for (unsigned k = 0; k < c->nj; k++) {
        emu_job *j = &c->jobs[k];
        j->running = 1;
        j->start_s = c->now_s;
        j->next_report_s = c->now_s + j->p.startup + j->p.report;
    }
    return PFI_OK;
}

static pfi_error emu_job_stop(void *vctx)
{
    emu_ctx *c = vctx;
    advance(c, c->now_s);
    for (unsigned k = 0; k < c->nj; k++)
        c->jobs[k].running = 0;
    return PFI_OK;
}

static unsigned emu_job_count(void *vctx)
{
    return ((emu_ctx *)vctx)->nj;
}

static void emu_job_gpus(void *vctx, unsigned k, unsigned *first, unsigned *n)
{
    const emu_job *j = &((emu_ctx *)vctx)->jobs[k];
    *first = j->first;
    *n = j->n;
}

/* Reports of job jk due up to now: the job's pace is its slowest GPU's clock. */
static size_t emu_job_poll(void *vctx, unsigned jk, double *t_s, double *tput, size_t max)
{
    emu_ctx *c = vctx;
    emu_job *j = &c->jobs[jk];
    size_t n = 0;
    if (!j->running)
        return 0;
    advance(c, c->now_s);
    double fmin = INFINITY;
    for (unsigned i = j->first; i < j->first + j->n; i++)
        if (c->g[i].f_mhz < fmin)
            fmin = c->g[i].f_mhz;
    pfi_model_point pt;
    at_clock(&c->g[j->first].job, fmin, &pt);
    while (j->next_report_s <= c->now_s && n < max) {
        if (phase_at(j, j->next_report_s) == PHASE_TRAIN) {
            t_s[n] = j->next_report_s;
            tput[n] = pt.throughput * (1.0 + j->p.noise * pfi_rng_normal(&c->rng));
            n++;
        }
        j->next_report_s += j->p.report;
    }
    return n;
}

static const pfi_gpu_ops emu_ops = {
    .close = emu_close,
    .count = emu_count,
    .info = emu_info,
    .sample = emu_sample,
    .limits = emu_limits,
    .set_limit_mw = emu_set,
    .now_s = emu_now,
    .sleep_until_s = emu_sleep,
};

/* The jobs, beside the vtable: only this backend runs them (PFI_GPU_CAP_JOBS). */
static const hw_job_ops emu_job_ops = {
    .start = emu_job_start,
    .stop = emu_job_stop,
    .poll = emu_job_poll,
    .count = emu_job_count,
    .gpus = emu_job_gpus,
};

/* Open: one job per ';' segment of cfg->emulate, each on its own GPUs, one virtual clock. */
static pfi_error emu_open(const pfi_gpu_config *cfg, const pfi_gpu_ops **ops, void **out,
                          pfi_diag *diag)
{
    emu_ctx *c = pfi_calloc(1, sizeof *c);
    if (c == NULL)
        return PFI_ERR_NOMEM;
    const char *spec = cfg->emulate ? cfg->emulate : "";
    unsigned nseg = 1;
    for (const char *q = spec; *q; q++)
        nseg += *q == ';';
    c->jobs = pfi_calloc(nseg, sizeof *c->jobs);
    pfi_error e = c->jobs ? PFI_OK : PFI_ERR_NOMEM;
    emu_params raw = {0}; /* copied into the first segment's base, which ignores it */
    const char *s = spec;
    for (unsigned k = 0; e == PFI_OK && k < nseg; k++) {
        const char *semi = strchr(s, ';');
        size_t len = semi ? (size_t)(semi - s) : strlen(s);
        emu_params base = raw;
        e = parse_segment(s, len, k ? &base : NULL, &raw, &c->jobs[k].p, diag);
        if (e == PFI_OK && c->n + (unsigned)c->jobs[k].p.gpus > EMU_MAX_GPUS)
            e = hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "emulate: more than %d GPUs in all",
                        EMU_MAX_GPUS);
        if (e == PFI_OK) {
            c->jobs[k].first = c->n;
            c->jobs[k].n = (unsigned)c->jobs[k].p.gpus;
            c->n += c->jobs[k].n;
        }
        s += len + (semi ? 1 : 0);
    }
    c->nj = nseg;
    if (e == PFI_OK && (c->g = pfi_calloc(c->n, sizeof *c->g)) == NULL)
        e = PFI_ERR_NOMEM;
    for (unsigned k = 0; e == PFI_OK && k < nseg; k++) {
        e = build_gpus(&c->jobs[k].p, c->g + c->jobs[k].first, c->jobs[k].n, diag);
        for (unsigned i = 0; i < c->jobs[k].n; i++)
            c->g[c->jobs[k].first + i].owner = k;
    }
    if (e != PFI_OK) {
        emu_close(c);
        return e;
    }
    pfi_rng_seed(&c->rng, (uint64_t)c->jobs[0].p.seed, 1);
    c->now_s = c->last_advance_s = 1000.0; /* a monotonic clock does not start at 0 */
    *ops = &emu_ops;
    *out = c;
    return PFI_OK;
}

/*
 * Limits are settable but live in this process only (the GPUs vanish with it), so they are
 * not PFI_GPU_CAP_PERSISTENT_LIMITS: nothing outlives a crash to journal, and a journal of
 * an emulated sweep could only block the next sweep and "restore" GPUs that never changed.
 */
const hw_backend hw_emulated_backend = {
    .kind = PFI_GPU_EMULATED,
    .name = "emulated",
    .caps = PFI_GPU_CAP_SET_LIMITS | PFI_GPU_CAP_VIRTUAL_CLOCK | PFI_GPU_CAP_JOBS,
    .open = emu_open,
    .jobs = &emu_job_ops,
};
