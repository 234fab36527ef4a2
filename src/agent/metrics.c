/*
 * GET /metrics: the snapshot in the Prometheus text exposition format 0.0.4 — one HELP and
 * one TYPE per family followed by all its samples, '\n' line ends, no timestamps, label
 * values escaped. A value that is missing or stale has no sample (never 0); pfi_gpu_up says
 * whether a GPU is being read. Which job owns a GPU is an info series
 * (pfi_gpu_job_info{uuid, job} 1), not a label on the value series.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "buf.h"
#include "pfi/fit.h"
#include "slurm.h"

bool pfid_gpu_fresh(const pfid_agent *a, unsigned k, double now)
{
    double stale = a->cfg.stale_s > 0 ? a->cfg.stale_s : 3 * a->cfg.interval_s;
    const pfid_gpu_state *g = &a->gpus[k];
    return g->up && now - g->last_mono_s <= stale;
}

size_t pfid_jobs_list(pfid_agent *a, char (*out)[PFID_ID_MAX], size_t max)
{
    size_t n = 0;
    for (unsigned k = 0; k < a->n_gpus; k++) {
        const char *j = a->gpus[k].job;
        bool seen = j[0] == '\0';
        for (size_t i = 0; i < n && !seen; i++)
            seen = strcmp(out[i], j) == 0;
        if (!seen && n < max)
            snprintf(out[n++], PFID_ID_MAX, "%s", j);
    }
    for (size_t t = 0; t < a->n_tput; t++) {
        bool seen = false;
        for (size_t i = 0; i < n && !seen; i++)
            seen = strcmp(out[i], a->tput[t].id) == 0;
        if (!seen && n < max)
            snprintf(out[n++], PFID_ID_MAX, "%s", a->tput[t].id);
    }
    return n;
}

bool pfid_job_power(const pfid_agent *a, const char *job, double now, double *w)
{
    double sum = 0;
    int n = 0;
    for (unsigned k = 0; k < a->n_gpus; k++) {
        if (strcmp(a->gpus[k].job, job) != 0)
            continue;
        if (!pfid_gpu_fresh(a, k, now) || !a->gpus[k].power_valid)
            return false;
        sum += a->gpus[k].power_w;
        n++;
    }
    *w = sum;
    return n > 0;
}

bool pfid_job_throughput(pfid_agent *a, const char *job, double now, double *tok_s)
{
    pfid_job_tput *t = pfid_tput_slot(a, job, false);
    if (t == NULL || !isfinite(t->tok_s) || now - t->mono_s > a->cfg.tput_stale_s)
        return false;
    *tok_s = t->tok_s;
    return true;
}

static void family(pfid_buf *b, const char *name, const char *type, const char *help)
{
    pfid_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gpu_labels(pfid_buf *b, const pfid_agent *a, unsigned k)
{
    pfid_buf_printf(b, "{gpu=\"%u\",uuid=\"", k);
    pfid_buf_label(b, a->gpus[k].info.uuid);
    pfid_buf_printf(b, "\",hostname=\"");
    pfid_buf_label(b, a->hostname);
    pfid_buf_printf(b, "\"}");
}

static void job_labels(pfid_buf *b, const pfid_agent *a, const char *job)
{
    pfid_buf_printf(b, "{job=\"");
    pfid_buf_label(b, job);
    pfid_buf_printf(b, "\",hostname=\"");
    pfid_buf_label(b, a->hostname);
    pfid_buf_printf(b, "\"}");
}

static void value(pfid_buf *b, double v)
{
    if (v == floor(v) && fabs(v) < 1e15)
        pfid_buf_printf(b, " %.0f\n", v);
    else
        pfid_buf_printf(b, " %.15g\n", v);
}

/* What one GPU family shows: a field of the snapshot, present or not. */
typedef bool (*gpu_getter)(const pfid_agent *a, unsigned k, bool fresh, double *v);

#define SAMPLE_GETTER(fn, flag, expr)                                                              \
    static bool fn(const pfid_agent *a, unsigned k, bool fresh, double *v)                         \
    {                                                                                              \
        const pfi_gpu_sample *s = &a->gpus[k].last;                                                \
        if (!fresh || !(s->valid & (flag)))                                                        \
            return false;                                                                          \
        *v = (expr);                                                                               \
        return isfinite(*v);                                                                       \
    }
SAMPLE_GETTER(get_energy, PFI_SAMPLE_ENERGY, s->energy_j)
SAMPLE_GETTER(get_sm_clock, PFI_SAMPLE_SM_CLOCK, s->sm_clock_mhz * 1e6)
SAMPLE_GETTER(get_mem_clock, PFI_SAMPLE_MEM_CLOCK, s->mem_clock_mhz * 1e6)
SAMPLE_GETTER(get_temp, PFI_SAMPLE_TEMP, s->temp_c)
SAMPLE_GETTER(get_util, PFI_SAMPLE_GPU_UTIL, s->gpu_util)
SAMPLE_GETTER(get_dram, PFI_SAMPLE_DRAM_ACTIVE, s->dram_active)
SAMPLE_GETTER(get_tensor, PFI_SAMPLE_TENSOR_ACTIVE, s->tensor_active)
SAMPLE_GETTER(get_sm_active, PFI_SAMPLE_SM_ACTIVE, s->sm_active)
SAMPLE_GETTER(get_reasons, PFI_SAMPLE_REASONS, (double)s->reasons)
SAMPLE_GETTER(get_copy_util, PFI_SAMPLE_MEM_UTIL, s->mem_util)
#undef SAMPLE_GETTER

#define LIMIT_GETTER(fn, flag, field)                                                              \
    static bool fn(const pfid_agent *a, unsigned k, bool fresh, double *v)                         \
    {                                                                                              \
        const pfi_gpu_limits *l = &a->gpus[k].limits;                                              \
        if (!fresh || !(l->valid & (flag)))                                                        \
            return false;                                                                          \
        *v = l->field / 1000.0;                                                                    \
        return true;                                                                               \
    }
LIMIT_GETTER(get_cap, PFI_LIMIT_CURRENT, current_mw)
LIMIT_GETTER(get_enforced, PFI_LIMIT_ENFORCED, enforced_mw)
LIMIT_GETTER(get_min, PFI_LIMIT_MIN, min_mw)
LIMIT_GETTER(get_max, PFI_LIMIT_MAX, max_mw)
LIMIT_GETTER(get_default, PFI_LIMIT_DEFAULT, default_mw)
#undef LIMIT_GETTER

static bool get_power(const pfid_agent *a, unsigned k, bool fresh, double *v)
{
    *v = a->gpus[k].power_w;
    return fresh && a->gpus[k].power_valid && isfinite(*v);
}

static bool get_original(const pfid_agent *a, unsigned k, bool fresh, double *v)
{
    (void)fresh;
    *v = a->gpus[k].original_mw / 1000.0;
    return a->gpus[k].original_valid;
}

static bool get_up(const pfid_agent *a, unsigned k, bool fresh, double *v)
{
    (void)a;
    (void)k;
    *v = fresh ? 1 : 0;
    return true;
}

static bool get_last(const pfid_agent *a, unsigned k, bool fresh, double *v)
{
    (void)fresh;
    *v = a->gpus[k].last_wall_s;
    return a->gpus[k].last_mono_s > 0;
}

static const struct {
    const char *name, *type, *help;
    gpu_getter get;
} gpu_families[] = {
    {"pfi_gpu_up", "gauge", "1 when the GPU was read within stale_after, else 0.", get_up},
    {"pfi_gpu_last_sample_timestamp_seconds", "gauge",
     "Wall-clock time of the GPU's last good sample.", get_last},
    {"pfi_gpu_power_watts", "gauge",
     "GPU power over the last sampling interval (from the energy counter when readable).",
     get_power},
    {"pfi_gpu_energy_joules_total", "counter", "GPU energy counter since driver load.", get_energy},
    {"pfi_gpu_power_cap_watts", "gauge", "Requested (management) power limit.", get_cap},
    {"pfi_gpu_power_cap_enforced_watts", "gauge", "Power limit in force.", get_enforced},
    {"pfi_gpu_power_cap_min_watts", "gauge", "Lowest settable power limit.", get_min},
    {"pfi_gpu_power_cap_max_watts", "gauge", "Highest settable power limit.", get_max},
    {"pfi_gpu_power_cap_default_watts", "gauge", "Default power limit.", get_default},
    {"pfi_gpu_power_cap_original_watts", "gauge",
     "Power limit before pfid changed it (journalled; restored on lease end).", get_original},
    {"pfi_gpu_sm_clock_hertz", "gauge", "SM clock.", get_sm_clock},
    {"pfi_gpu_memory_clock_hertz", "gauge", "Memory clock.", get_mem_clock},
    {"pfi_gpu_temperature_celsius", "gauge", "GPU temperature.", get_temp},
    {"pfi_gpu_utilization_ratio", "gauge", "Fraction of time a kernel ran (0..1).", get_util},
    {"pfi_gpu_dram_active_ratio", "gauge", "DRAM bandwidth utilisation (0..1).", get_dram},
    {"pfi_gpu_tensor_active_ratio", "gauge", "Tensor pipe activity (0..1).", get_tensor},
    {"pfi_gpu_sm_active_ratio", "gauge", "SM activity (0..1).", get_sm_active},
    {"pfi_gpu_clock_event_reasons", "gauge",
     "Clock event (throttle) reasons, the NVML bit mask (0x4 software power cap).", get_reasons},
    {"pfi_gpu_memory_copy_utilization_ratio", "gauge",
     "Fraction of time device memory was read or written (NVML memory utilisation, DCGM 204).",
     get_copy_util},
};

/*
 * dcgm_names = true: the GPU families again under the names and units dcgm-exporter uses
 * (DCGM field names; labels gpu, UUID, device, modelName, Hostname), so dashboards and
 * rules written for dcgm-exporter read pfid unchanged. value = the pfi family's × scale.
 */
static const struct {
    const char *name, *type, *help;
    gpu_getter get;
    double scale;
} dcgm_families[] = {
    {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock (MHz; DCGM field 100).", get_sm_clock, 1e-6},
    {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock (MHz; DCGM field 101).", get_mem_clock, 1e-6},
    {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (C; DCGM field 150).", get_temp, 1},
    {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (W; DCGM field 155).", get_power, 1},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Energy since the driver loaded (mJ; DCGM field 156).", get_energy, 1e3},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge", "Power management limit (W; DCGM field 160).",
     get_cap, 1},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN", "gauge", "Lowest settable power limit (W; field 161).",
     get_min, 1},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX", "gauge", "Highest settable power limit (W; field 162).",
     get_max, 1},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF", "gauge", "Default power limit (W; DCGM field 163).",
     get_default, 1},
    {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gauge", "Power limit in force (W; DCGM field 164).",
     get_enforced, 1},
    {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilisation (%; DCGM field 203).", get_util, 100},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory copy utilisation (%; DCGM field 204).",
     get_copy_util, 100},
    {"DCGM_FI_PROF_SM_ACTIVE", "gauge", "SM activity (ratio; DCGM field 1002).", get_sm_active, 1},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Tensor pipe activity (ratio; field 1004).",
     get_tensor, 1},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "DRAM interface activity (ratio; DCGM field 1005).",
     get_dram, 1},
};

static void dcgm_labels(pfid_buf *b, const pfid_agent *a, unsigned k)
{
    pfid_buf_printf(b, "{gpu=\"%u\",UUID=\"", k);
    pfid_buf_label(b, a->gpus[k].info.uuid);
    pfid_buf_printf(b, "\",device=\"nvidia%u\",modelName=\"", a->gpus[k].info.index);
    pfid_buf_label(b, a->gpus[k].info.name);
    pfid_buf_printf(b, "\",Hostname=\"");
    pfid_buf_label(b, a->hostname);
    pfid_buf_printf(b, "\"}");
}

static void render_dcgm(pfid_buf *b, const pfid_agent *a, const bool *fresh)
{
    for (size_t f = 0; f < sizeof dcgm_families / sizeof dcgm_families[0]; f++) {
        family(b, dcgm_families[f].name, dcgm_families[f].type, dcgm_families[f].help);
        for (unsigned k = 0; k < a->n_gpus; k++) {
            double v;
            if (!dcgm_families[f].get(a, k, fresh[k], &v))
                continue;
            pfid_buf_printf(b, "%s", dcgm_families[f].name);
            dcgm_labels(b, a, k);
            value(b, v * dcgm_families[f].scale);
        }
    }
}

/*
 * The features a `pfi fit` model (pfi_model) may name that pfid reads itself, by predictor
 * name (fractions, pfi/featmap.h) and by reduced name (in the reduced name's unit): the
 * value of one GPU's sample, false when the sample lacks it.
 */
static const struct {
    const char *predictor, *reduced;
    unsigned flag;
    size_t offset;        /* of the double in pfi_gpu_sample */
    double reduced_scale; /* reduced value = sample value × this (percent: 100) */
} model_features[] = {
    {"dcgm_sm_clock_mhz", "sm_clock_mhz", PFI_SAMPLE_SM_CLOCK,
     offsetof(pfi_gpu_sample, sm_clock_mhz), 1},
    {"dcgm_mem_clock_mhz", "mem_clock_mhz", PFI_SAMPLE_MEM_CLOCK,
     offsetof(pfi_gpu_sample, mem_clock_mhz), 1},
    {"dcgm_power_w", "power_w", PFI_SAMPLE_POWER, offsetof(pfi_gpu_sample, power_w), 1},
    {"dcgm_gpu_util", "gpu_util_pct", PFI_SAMPLE_GPU_UTIL, offsetof(pfi_gpu_sample, gpu_util), 100},
    {"dcgm_mem_copy_util", "mem_copy_util_pct", PFI_SAMPLE_MEM_UTIL,
     offsetof(pfi_gpu_sample, mem_util), 100},
    {"dcgm_sm_active", "sm_active", PFI_SAMPLE_SM_ACTIVE, offsetof(pfi_gpu_sample, sm_active), 1},
    {"dcgm_tensor_active", "tensor_active", PFI_SAMPLE_TENSOR_ACTIVE,
     offsetof(pfi_gpu_sample, tensor_active), 1},
    {"dcgm_dram_active", "dram_active", PFI_SAMPLE_DRAM_ACTIVE,
     offsetof(pfi_gpu_sample, dram_active), 1},
};

/* One factor (no '*') of a feature name on one sample. */
static bool factor_value(const char *name, size_t len, const pfi_gpu_sample *s, double *v)
{
    if (len == strlen("dram_copy_product") && strncmp(name, "dram_copy_product", len) == 0) {
        if (s == NULL)
            return true;
        if ((s->valid & (PFI_SAMPLE_DRAM_ACTIVE | PFI_SAMPLE_MEM_UTIL)) !=
            (PFI_SAMPLE_DRAM_ACTIVE | PFI_SAMPLE_MEM_UTIL))
            return false;
        *v = s->dram_active * s->mem_util;
        return isfinite(*v);
    }
    for (size_t i = 0; i < sizeof model_features / sizeof model_features[0]; i++) {
        bool pred = strlen(model_features[i].predictor) == len &&
                    strncmp(model_features[i].predictor, name, len) == 0;
        bool red = strlen(model_features[i].reduced) == len &&
                   strncmp(model_features[i].reduced, name, len) == 0;
        if (!pred && !red)
            continue;
        if (s == NULL)
            return true;
        if (!(s->valid & model_features[i].flag))
            return false;
        *v = *(const double *)((const char *)s + model_features[i].offset);
        if (red)
            *v *= model_features[i].reduced_scale;
        return isfinite(*v);
    }
    return false;
}

/* A feature ("A" or "A*B*...") on one sample (s NULL: whether the name is known; v unset). */
static bool feature_value(const char *name, const pfi_gpu_sample *s, double *v)
{
    double prod = 1, f = 0;
    for (const char *p = name;;) {
        const char *star = strchr(p, '*');
        size_t len = star ? (size_t)(star - p) : strlen(p);
        if (len == 0)
            return false;
        if (!factor_value(p, len, s, &f))
            return false;
        prod *= f;
        if (star == NULL)
            break;
        p = star + 1;
    }
    if (v != NULL)
        *v = prod;
    return true;
}

bool pfid_model_feature_known(const char *name)
{
    return feature_value(name, NULL, NULL);
}

/*
 * The job's PFI from the model: its features are the means over the job's GPUs of their last
 * samples, taken while every one of its GPUs runs at its default limit (the model is fitted
 * on uncapped runs, DESIGN §4); while capped, the last such estimate is kept. The model's
 * prediction as it is (OLS, pfi/fit.h: no clamping). false: no model, no estimate yet, a GPU
 * not read or lacking a feature.
 */
static bool job_pfi_estimate(pfid_agent *a, const char *job, double now, double *pfi)
{
    const pfi_fit_model *m = a->model;
    if (m == NULL || m->p > PFI_FIT_MAX_FEATURES)
        return false;
    size_t slot = 0;
    while (slot < a->n_pfi_est && strcmp(a->pfi_est[slot].job, job) != 0)
        slot++;
    double x[PFI_FIT_MAX_FEATURES] = {0};
    unsigned n = 0;
    bool uncapped = true, ok = true;
    for (unsigned k = 0; k < a->n_gpus && ok; k++) {
        const pfid_gpu_state *g = &a->gpus[k];
        if (strcmp(g->job, job) != 0)
            continue;
        n++;
        const pfi_gpu_limits *l = &g->limits;
        uncapped = uncapped && (l->valid & PFI_LIMIT_CURRENT) && (l->valid & PFI_LIMIT_DEFAULT) &&
                   l->current_mw >= l->default_mw;
        ok = pfid_gpu_fresh(a, k, now);
        for (size_t f = 0; f < m->p && ok; f++) {
            double v;
            ok = feature_value(m->features[f], &g->last, &v);
            x[f] += v;
        }
    }
    if (n > 0 && ok && uncapped) {
        for (size_t f = 0; f < m->p; f++)
            x[f] /= n;
        double yhat, lo, hi;
        bool outside;
        if (pfi_fit_model_predict(m, x, 0.9, &yhat, &lo, &hi, &outside) == PFI_OK &&
            isfinite(yhat) && (slot < a->n_pfi_est || a->n_pfi_est < PFID_MAX_JOBS)) {
            if (slot == a->n_pfi_est) {
                snprintf(a->pfi_est[slot].job, sizeof a->pfi_est[slot].job, "%s", job);
                a->n_pfi_est++;
            }
            a->pfi_est[slot].pfi = yhat;
        }
    }
    if (slot == a->n_pfi_est || n == 0)
        return false;
    *pfi = a->pfi_est[slot].pfi;
    return true;
}

char *pfid_metrics_render(pfid_agent *a, size_t *len)
{
    pfid_buf b = {0};
    pthread_mutex_lock(&a->snap_lock);
    double now = pfid_mono_s(), wall = pfid_wall_s();
    bool fresh[PFID_MAX_GPUS];
    for (unsigned k = 0; k < a->n_gpus; k++)
        fresh[k] = pfid_gpu_fresh(a, k, now);
    for (size_t f = 0; f < sizeof gpu_families / sizeof gpu_families[0]; f++) {
        family(&b, gpu_families[f].name, gpu_families[f].type, gpu_families[f].help);
        for (unsigned k = 0; k < a->n_gpus; k++) {
            double v;
            if (!gpu_families[f].get(a, k, fresh[k], &v))
                continue;
            pfid_buf_printf(&b, "%s", gpu_families[f].name);
            gpu_labels(&b, a, k);
            value(&b, v);
        }
    }
    family(&b, "pfi_gpu_job_info", "gauge", "The job that owns the GPU (value always 1).");
    for (unsigned k = 0; k < a->n_gpus; k++) {
        if (a->gpus[k].job[0] == '\0')
            continue;
        pfid_buf_printf(&b, "pfi_gpu_job_info{gpu=\"%u\",uuid=\"", k);
        pfid_buf_label(&b, a->gpus[k].info.uuid);
        pfid_buf_printf(&b, "\",hostname=\"");
        pfid_buf_label(&b, a->hostname);
        pfid_buf_printf(&b, "\",job=\"");
        pfid_buf_label(&b, a->gpus[k].job);
        pfid_buf_printf(&b, "\"} 1\n");
    }
    char jobs[PFID_MAX_JOBS][PFID_ID_MAX];
    size_t nj = pfid_jobs_list(a, jobs, PFID_MAX_JOBS);
    family(&b, "pfi_job_power_watts", "gauge",
           "Sum of the job's GPU power on this node (missing when a GPU is not read).");
    for (size_t j = 0; j < nj; j++) {
        double w;
        if (!pfid_job_power(a, jobs[j], now, &w))
            continue;
        pfid_buf_printf(&b, "pfi_job_power_watts");
        job_labels(&b, a, jobs[j]);
        value(&b, w);
    }
    family(&b, "pfi_job_pfi_estimate", "gauge",
           "The job's PFI from pfi_model on its GPUs' features while uncapped (kept while "
           "capped; missing without pfi_model).");
    for (size_t j = 0; j < nj; j++) {
        double v;
        if (!job_pfi_estimate(a, jobs[j], now, &v))
            continue;
        pfid_buf_printf(&b, "pfi_job_pfi_estimate");
        job_labels(&b, a, jobs[j]);
        value(&b, v);
    }
    family(&b, "pfi_job_gpus", "gauge", "Number of the job's GPUs on this node.");
    for (size_t j = 0; j < nj; j++) {
        unsigned n = 0;
        for (unsigned k = 0; k < a->n_gpus; k++)
            n += strcmp(a->gpus[k].job, jobs[j]) == 0;
        pfid_buf_printf(&b, "pfi_job_gpus");
        job_labels(&b, a, jobs[j]);
        value(&b, n);
    }
    family(&b, "pfi_job_throughput_tokens_per_second", "gauge",
           "The job's last reported throughput (missing when older than throughput_stale).");
    for (size_t j = 0; j < nj; j++) {
        double t;
        if (!pfid_job_throughput(a, jobs[j], now, &t))
            continue;
        pfid_buf_printf(&b, "pfi_job_throughput_tokens_per_second");
        job_labels(&b, a, jobs[j]);
        value(&b, t);
    }
    family(&b, "pfi_cap_control_available", "gauge",
           "1 when this agent can set caps (see the log or /v1/state when 0).");
    pfid_buf_printf(&b, "pfi_cap_control_available{hostname=\"");
    pfid_buf_label(&b, a->hostname);
    pfid_buf_printf(&b, "\"} %d\n", a->caps_available ? 1 : 0);
    family(&b, "pfi_cap_lease_active", "gauge", "1 while caps set through the API are in force.");
    pfid_buf_printf(&b, "pfi_cap_lease_active{hostname=\"");
    pfid_buf_label(&b, a->hostname);
    pfid_buf_printf(&b, "\"} %d\n", a->lease.active ? 1 : 0);
    family(&b, "pfi_cap_lease_holding", "gauge",
           "1 while an expired lease's caps are held (lease_policy hold).");
    pfid_buf_printf(&b, "pfi_cap_lease_holding{hostname=\"");
    pfid_buf_label(&b, a->hostname);
    pfid_buf_printf(&b, "\"} %d\n", a->lease.holding ? 1 : 0);
    family(&b, "pfi_cap_lease_expiry_timestamp_seconds", "gauge",
           "Wall-clock time the present lease expires.");
    if (a->lease.active) {
        pfid_buf_printf(&b, "pfi_cap_lease_expiry_timestamp_seconds{hostname=\"");
        pfid_buf_label(&b, a->hostname);
        pfid_buf_printf(&b, "\"}");
        value(&b, wall + (a->lease.expires_mono - now));
    }
    family(&b, "pfi_cap_revert_timestamp_seconds", "gauge",
           "Wall-clock time the caps go back to the originals if no new lease comes.");
    if (a->lease.active) {
        pfid_buf_printf(&b, "pfi_cap_revert_timestamp_seconds{hostname=\"");
        pfid_buf_label(&b, a->hostname);
        pfid_buf_printf(&b, "\"}");
        value(&b, wall + (a->lease.revert_mono - now));
    }
    double node_w, non_gpu_w;
    pfid_node_power(a, now, &node_w, &non_gpu_w);
    family(&b, "pfi_node_power_watts", "gauge",
           "The node's power from node_power_file (missing without one or when stale).");
    if (isfinite(node_w)) {
        pfid_buf_printf(&b, "pfi_node_power_watts{hostname=\"");
        pfid_buf_label(&b, a->hostname);
        pfid_buf_printf(&b, "\"}");
        value(&b, node_w);
    }
    family(&b, "pfi_node_non_gpu_power_watts", "gauge",
           "The node's power less its GPUs' (node_power_includes_gpus), else the reading.");
    if (isfinite(non_gpu_w)) {
        pfid_buf_printf(&b, "pfi_node_non_gpu_power_watts{hostname=\"");
        pfid_buf_label(&b, a->hostname);
        pfid_buf_printf(&b, "\"}");
        value(&b, non_gpu_w);
    }
    if (a->cfg.node_power_file[0] != '\0') {
        family(&b, "pfi_node_power_frozen", "gauge",
               "1 while node_power_file has not moved (value, mtime) for "
               "node_power_frozen_after: its reading is missing.");
        pfid_buf_printf(&b, "pfi_node_power_frozen{hostname=\"");
        pfid_buf_label(&b, a->hostname);
        pfid_buf_printf(&b, "\"} %d\n", a->node.frozen ? 1 : 0);
        family(&b, "pfi_node_power_frozen_total", "counter",
               "Times node_power_file was found frozen.");
        pfid_buf_printf(&b, "pfi_node_power_frozen_total{hostname=\"");
        pfid_buf_label(&b, a->hostname);
        pfid_buf_printf(&b, "\"} %lu\n", a->node.frozen_total);
    }
    pfid_slurm_metrics(a, &b);
    family(&b, "pfi_agent_samples_total", "counter", "GPU samples read.");
    pfid_buf_printf(&b, "pfi_agent_samples_total %llu\n", (unsigned long long)a->samples_total);
    family(&b, "pfi_agent_sample_errors_total", "counter", "GPU reads that failed.");
    pfid_buf_printf(&b, "pfi_agent_sample_errors_total %llu\n",
                    (unsigned long long)a->sample_errors_total);
    family(&b, "pfi_agent_round_cpu_seconds", "gauge",
           "CPU time of the last sampling round (all GPUs).");
    pfid_buf_printf(&b, "pfi_agent_round_cpu_seconds");
    value(&b, a->round_cost_s);
    family(&b, "pfi_agent_last_round_timestamp_seconds", "gauge",
           "Wall-clock time of the end of the last sampling round.");
    pfid_buf_printf(&b, "pfi_agent_last_round_timestamp_seconds");
    value(&b, a->sampled_wall_s);
    if (a->cfg.dcgm_names)
        render_dcgm(&b, a, fresh);
    pthread_mutex_unlock(&a->snap_lock);
    return pfid_buf_take(&b, len);
}
