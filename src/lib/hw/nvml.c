/*
 * The nvml backend: libnvidia-ml.so.1 through dlopen. Only the NVML types used here are
 * declared (layouts from NVML's public nvml.h); versioned entry points are preferred
 * (nvmlInit_v2, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2), the unversioned
 * ones are the fallback. Every return code is checked and mapped (nvml_errors.c); every
 * error message names the NVML call, the GPU and NVML's name for the code.
 *
 * Missing optional symbols (an old driver without nvmlDeviceGetTotalEnergyConsumption, a
 * pre-Hopper driver without GPM) make the matching fields missing, never zero.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "hw/backend.h"
#include "hw/nvml_errors.h"

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;
typedef struct {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum { NVML_TEMPERATURE_GPU = 0 };

/* GPM (Hopper and later). The metrics array is sized to the largest NVML_GPM_METRIC_MAX
 * seen in NVML headers; NVML touches only the first numMetrics entries. */
#define GPM_METRIC_MAX 333
#define GPM_METRICS_GET_VERSION 1
#define GPM_SUPPORT_VERSION 1
enum { GPM_SM_UTIL = 2, GPM_ANY_TENSOR_UTIL = 5, GPM_DRAM_BW_UTIL = 10 };
typedef struct {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct {
        char *shortName;
        char *longName;
        char *unit;
    } metricInfo;
} nvmlGpmMetric_t;
typedef struct {
    unsigned int version;
    unsigned int numMetrics;
    nvmlGpmSample_t sample1;
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;
typedef struct {
    unsigned int version;
    unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

/* nvmlProcessInfo_t as the _v2/_v3 calls fill it, and the v1 layout of the unversioned call. */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_FUNCTION_NOT_FOUND 13 /* what a symbol the driver lacks reads as */
#define NVML_MAX_PROCS 256

typedef struct nvml_syms {
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    const char *(*error_string)(nvmlReturn_t);
    nvmlReturn_t (*get_count)(unsigned int *);
    nvmlReturn_t (*get_handle)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*get_name)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*get_uuid)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*get_power)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*get_energy)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*get_limit)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*get_constraints)(nvmlDevice_t, unsigned int *, unsigned int *);
    nvmlReturn_t (*get_default_limit)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*get_enforced)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*set_limit)(nvmlDevice_t, unsigned int);
    nvmlReturn_t (*get_clock)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*get_util)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*get_temp)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*get_reasons)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*get_procs)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v2_t *);
    nvmlReturn_t (*get_procs_v1)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v1_t *);
    nvmlReturn_t (*gpm_support)(nvmlDevice_t, nvmlGpmSupport_t *);
    nvmlReturn_t (*gpm_alloc)(nvmlGpmSample_t *);
    nvmlReturn_t (*gpm_free)(nvmlGpmSample_t);
    nvmlReturn_t (*gpm_get)(nvmlDevice_t, nvmlGpmSample_t);
    nvmlReturn_t (*gpm_metrics)(nvmlGpmMetricsGet_t *);
} nvml_syms;

typedef struct nvml_gpu {
    nvmlDevice_t dev;
    bool lost;
    bool gpm; /* GPM supported and samples allocated */
    bool gpm_have_prev;
    nvmlGpmSample_t gpm_prev, gpm_cur;
} nvml_gpu;

typedef struct nvml_ctx {
    void *lib;
    nvml_syms s;
    unsigned n;
    nvml_gpu *gpus;
    char path[256];
    /* the GPM metrics request (about 13 KB): one per handle, since a handle is used by one
     * thread at a time (pfi/gpu.h) and two handles may sample at once */
    nvmlGpmMetricsGet_t gpm_request;
} nvml_ctx;

static pfi_error nvml_fail(nvml_ctx *c, pfi_diag *diag, int rc, const char *call, int gpu)
{
    (void)c;
    pfi_error e = hw_nvml_map(rc);
    if (gpu >= 0)
        return hw_fail(diag, e, "GPU %d: %s: %s (%d)", gpu, call, hw_nvml_return_name(rc), rc);
    return hw_fail(diag, e, "%s: %s (%d)", call, hw_nvml_return_name(rc), rc);
}

/* First symbol of names found in lib, or NULL. */
static void *sym(void *lib, const char *a, const char *b)
{
    void *p = dlsym(lib, a);
    if (p == NULL && b != NULL)
        p = dlsym(lib, b);
    return p;
}

static void load_syms(void *lib, nvml_syms *s)
{
#define LOAD(field, a, b) *(void **)(&s->field) = sym(lib, a, b)
    LOAD(init, "nvmlInit_v2", "nvmlInit");
    LOAD(shutdown, "nvmlShutdown", NULL);
    LOAD(error_string, "nvmlErrorString", NULL);
    LOAD(get_count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    LOAD(get_handle, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    LOAD(get_name, "nvmlDeviceGetName", NULL);
    LOAD(get_uuid, "nvmlDeviceGetUUID", NULL);
    LOAD(get_power, "nvmlDeviceGetPowerUsage", NULL);
    LOAD(get_energy, "nvmlDeviceGetTotalEnergyConsumption", NULL);
    LOAD(get_limit, "nvmlDeviceGetPowerManagementLimit", NULL);
    LOAD(get_constraints, "nvmlDeviceGetPowerManagementLimitConstraints", NULL);
    LOAD(get_default_limit, "nvmlDeviceGetPowerManagementDefaultLimit", NULL);
    LOAD(get_enforced, "nvmlDeviceGetEnforcedPowerLimit", NULL);
    LOAD(set_limit, "nvmlDeviceSetPowerManagementLimit", NULL);
    LOAD(get_clock, "nvmlDeviceGetClockInfo", NULL);
    LOAD(get_util, "nvmlDeviceGetUtilizationRates", NULL);
    LOAD(get_temp, "nvmlDeviceGetTemperature", NULL);
    LOAD(get_reasons, "nvmlDeviceGetCurrentClocksEventReasons",
         "nvmlDeviceGetCurrentClocksThrottleReasons");
    LOAD(get_procs, "nvmlDeviceGetComputeRunningProcesses_v3",
         "nvmlDeviceGetComputeRunningProcesses_v2");
    if (s->get_procs == NULL)
        LOAD(get_procs_v1, "nvmlDeviceGetComputeRunningProcesses", NULL);
    LOAD(gpm_support, "nvmlGpmQueryDeviceSupport", NULL);
    LOAD(gpm_alloc, "nvmlGpmSampleAlloc", NULL);
    LOAD(gpm_free, "nvmlGpmSampleFree", NULL);
    LOAD(gpm_get, "nvmlGpmSampleGet", NULL);
    LOAD(gpm_metrics, "nvmlGpmMetricsGet", NULL);
#undef LOAD
}

static void nvml_close(void *vctx)
{
    nvml_ctx *c = vctx;
    if (c == NULL)
        return;
    for (unsigned i = 0; c->gpus != NULL && i < c->n; i++) {
        if (c->gpus[i].gpm) {
            c->s.gpm_free(c->gpus[i].gpm_prev);
            c->s.gpm_free(c->gpus[i].gpm_cur);
        }
    }
    pfi_free(c->gpus);
    if (c->s.shutdown != NULL)
        c->s.shutdown();
    if (c->lib != NULL)
        dlclose(c->lib);
    pfi_free(c);
}

static pfi_error nvml_count(void *vctx, unsigned *n, pfi_diag *diag)
{
    (void)diag;
    *n = ((nvml_ctx *)vctx)->n;
    return PFI_OK;
}

static pfi_error get_gpu(nvml_ctx *c, unsigned i, nvml_gpu **out, pfi_diag *diag)
{
    if (i >= c->n)
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "GPU %u: no such GPU (%u found)", i, c->n);
    if (c->gpus[i].lost)
        return hw_fail(diag, PFI_ERR_GPU_LOST, "GPU %u: lost earlier (NVML_ERROR_GPU_IS_LOST)", i);
    *out = &c->gpus[i];
    return PFI_OK;
}

/* A call on GPU i failed with rc: remember a lost GPU, return the mapped error. */
static pfi_error dev_fail(nvml_ctx *c, unsigned i, int rc, const char *call, pfi_diag *diag)
{
    pfi_error e = nvml_fail(c, diag, rc, call, (int)i);
    if (e == PFI_ERR_GPU_LOST)
        c->gpus[i].lost = true;
    return e;
}

static pfi_error nvml_info(void *vctx, unsigned i, pfi_gpu_info *out, pfi_diag *diag)
{
    nvml_ctx *c = vctx;
    nvml_gpu *g = NULL;
    pfi_error e = get_gpu(c, i, &g, diag);
    if (e != PFI_OK)
        return e;
    int rc;
    if (c->s.get_name != NULL && (rc = c->s.get_name(g->dev, out->name, sizeof out->name)) != 0)
        return dev_fail(c, i, rc, "nvmlDeviceGetName", diag);
    if (c->s.get_uuid != NULL && (rc = c->s.get_uuid(g->dev, out->uuid, sizeof out->uuid)) != 0)
        return dev_fail(c, i, rc, "nvmlDeviceGetUUID", diag);
    out->name[sizeof out->name - 1] = '\0';
    out->uuid[sizeof out->uuid - 1] = '\0';
    return PFI_OK;
}

/*
 * One optional reading: rc 0 sets the flag; a lost GPU is an error for the whole sample;
 * anything else (not supported, no permission, no data) leaves the field missing.
 */
#define READ_FIELD(call_expr, name, flag, assign)                                                  \
    do {                                                                                           \
        int rc_ = (call_expr);                                                                     \
        if (rc_ == 0) {                                                                            \
            assign;                                                                                \
            out->valid |= (flag);                                                                  \
        } else if (hw_nvml_map(rc_) == PFI_ERR_GPU_LOST) {                                         \
            return dev_fail(c, i, rc_, name, diag);                                                \
        }                                                                                          \
    } while (0)

static void read_gpm(nvml_ctx *c, nvml_gpu *g, pfi_gpu_sample *out)
{
    if (!g->gpm)
        return;
    if (c->s.gpm_get(g->dev, g->gpm_cur) != 0) {
        g->gpm_have_prev = false;
        return;
    }
    if (g->gpm_have_prev) {
        nvmlGpmMetricsGet_t *mg = &c->gpm_request;
        memset(mg, 0, sizeof *mg);
        mg->version = GPM_METRICS_GET_VERSION;
        mg->numMetrics = 3;
        mg->sample1 = g->gpm_prev;
        mg->sample2 = g->gpm_cur;
        mg->metrics[0].metricId = GPM_DRAM_BW_UTIL;
        mg->metrics[1].metricId = GPM_ANY_TENSOR_UTIL;
        mg->metrics[2].metricId = GPM_SM_UTIL;
        if (c->s.gpm_metrics(mg) == 0) {
            if (mg->metrics[0].nvmlReturn == 0 && isfinite(mg->metrics[0].value)) {
                out->dram_active = mg->metrics[0].value / 100.0;
                out->valid |= PFI_SAMPLE_DRAM_ACTIVE;
            }
            if (mg->metrics[1].nvmlReturn == 0 && isfinite(mg->metrics[1].value)) {
                out->tensor_active = mg->metrics[1].value / 100.0;
                out->valid |= PFI_SAMPLE_TENSOR_ACTIVE;
            }
            if (mg->metrics[2].nvmlReturn == 0 && isfinite(mg->metrics[2].value)) {
                out->sm_active = mg->metrics[2].value / 100.0;
                out->valid |= PFI_SAMPLE_SM_ACTIVE;
            }
        }
    }
    nvmlGpmSample_t t = g->gpm_prev;
    g->gpm_prev = g->gpm_cur;
    g->gpm_cur = t;
    g->gpm_have_prev = true;
}

static pfi_error nvml_sample(void *vctx, unsigned i, pfi_gpu_sample *out, pfi_diag *diag)
{
    nvml_ctx *c = vctx;
    nvml_gpu *g = NULL;
    pfi_error e = get_gpu(c, i, &g, diag);
    if (e != PFI_OK)
        return e;
    unsigned v;
    unsigned long long ull;
    nvmlUtilization_t u;
    if (c->s.get_power != NULL)
        READ_FIELD(c->s.get_power(g->dev, &v), "nvmlDeviceGetPowerUsage", PFI_SAMPLE_POWER,
                   out->power_w = v / 1000.0);
    if (c->s.get_energy != NULL)
        READ_FIELD(c->s.get_energy(g->dev, &ull), "nvmlDeviceGetTotalEnergyConsumption",
                   PFI_SAMPLE_ENERGY, out->energy_j = (double)ull / 1000.0);
    if (c->s.get_clock != NULL) {
        READ_FIELD(c->s.get_clock(g->dev, NVML_CLOCK_SM, &v), "nvmlDeviceGetClockInfo",
                   PFI_SAMPLE_SM_CLOCK, out->sm_clock_mhz = v);
        READ_FIELD(c->s.get_clock(g->dev, NVML_CLOCK_MEM, &v), "nvmlDeviceGetClockInfo",
                   PFI_SAMPLE_MEM_CLOCK, out->mem_clock_mhz = v);
    }
    if (c->s.get_util != NULL)
        READ_FIELD(c->s.get_util(g->dev, &u), "nvmlDeviceGetUtilizationRates",
                   PFI_SAMPLE_GPU_UTIL | PFI_SAMPLE_MEM_UTIL,
                   (out->gpu_util = u.gpu / 100.0, out->mem_util = u.memory / 100.0));
    if (c->s.get_temp != NULL)
        READ_FIELD(c->s.get_temp(g->dev, NVML_TEMPERATURE_GPU, &v), "nvmlDeviceGetTemperature",
                   PFI_SAMPLE_TEMP, out->temp_c = v);
    if (c->s.get_reasons != NULL)
        READ_FIELD(c->s.get_reasons(g->dev, &ull), "nvmlDeviceGetCurrentClocksEventReasons",
                   PFI_SAMPLE_REASONS, out->reasons = ull);
    read_gpm(c, g, out);
    return PFI_OK;
}

static pfi_error nvml_limits(void *vctx, unsigned i, pfi_gpu_limits *out, pfi_diag *diag)
{
    nvml_ctx *c = vctx;
    nvml_gpu *g = NULL;
    pfi_error e = get_gpu(c, i, &g, diag);
    if (e != PFI_OK)
        return e;
    /* the three single limits, field k of out (bit k, err[k]): current (requested),
     * enforced, default; a symbol the driver lacks reads as NVML_ERROR_FUNCTION_NOT_FOUND */
    const struct {
        nvmlReturn_t (*get)(nvmlDevice_t, unsigned int *);
        uint32_t *dst;
        unsigned bit;
        const char *call;
    } one[] = {
        {c->s.get_limit, &out->current_mw, PFI_LIMIT_CURRENT, "nvmlDeviceGetPowerManagementLimit"},
        {c->s.get_enforced, &out->enforced_mw, PFI_LIMIT_ENFORCED,
         "nvmlDeviceGetEnforcedPowerLimit"},
        {c->s.get_default_limit, &out->default_mw, PFI_LIMIT_DEFAULT,
         "nvmlDeviceGetPowerManagementDefaultLimit"},
    };
    unsigned a, b;
    int rc;
    for (size_t k = 0; k < sizeof one / sizeof one[0]; k++) {
        rc = one[k].get == NULL ? NVML_ERROR_FUNCTION_NOT_FOUND : one[k].get(g->dev, &a);
        if (rc == 0) {
            *one[k].dst = a;
            out->valid |= one[k].bit;
        } else if ((out->err[k] = hw_nvml_map(rc)) == PFI_ERR_GPU_LOST)
            return dev_fail(c, i, rc, one[k].call, diag);
    }
    rc = c->s.get_constraints == NULL ? NVML_ERROR_FUNCTION_NOT_FOUND
                                      : c->s.get_constraints(g->dev, &a, &b);
    if (rc == 0) {
        out->min_mw = a;
        out->max_mw = b;
        out->valid |= PFI_LIMIT_MIN | PFI_LIMIT_MAX;
    } else {
        out->err[3] = out->err[4] = hw_nvml_map(rc);
        if (out->err[3] == PFI_ERR_GPU_LOST)
            return dev_fail(c, i, rc, "nvmlDeviceGetPowerManagementLimitConstraints", diag);
    }
    return PFI_OK;
}

static pfi_error nvml_set(void *vctx, unsigned i, uint32_t mw, pfi_diag *diag)
{
    nvml_ctx *c = vctx;
    nvml_gpu *g = NULL;
    pfi_error e = get_gpu(c, i, &g, diag);
    if (e != PFI_OK)
        return e;
    if (c->s.set_limit == NULL)
        return hw_fail(diag, PFI_ERR_NOT_SUPPORTED,
                       "GPU %u: nvmlDeviceSetPowerManagementLimit not in %s", i, c->path);
    int rc = c->s.set_limit(g->dev, mw);
    if (rc != 0) {
        char call[96];
        snprintf(call, sizeof call, "nvmlDeviceSetPowerManagementLimit(%u mW)", (unsigned)mw);
        return dev_fail(c, i, rc, call, diag);
    }
    return PFI_OK;
}

/* The compute processes of GPU i: the versioned layout when the driver has it, else v1. */
static pfi_error nvml_processes(void *vctx, unsigned i, unsigned *pids, size_t max, size_t *n,
                                pfi_diag *diag)
{
    nvml_ctx *c = vctx;
    nvml_gpu *g = NULL;
    pfi_error e = get_gpu(c, i, &g, diag);
    if (e != PFI_OK)
        return e;
    if (c->s.get_procs == NULL && c->s.get_procs_v1 == NULL)
        return hw_fail(diag, PFI_ERR_NOT_SUPPORTED,
                       "GPU %u: nvmlDeviceGetComputeRunningProcesses not in %s", i, c->path);
    unsigned count = NVML_MAX_PROCS;
    int rc;
    if (c->s.get_procs != NULL) {
        nvmlProcessInfo_v2_t *info = pfi_calloc(NVML_MAX_PROCS, sizeof *info);
        if (info == NULL)
            return PFI_ERR_NOMEM;
        rc = c->s.get_procs(g->dev, &count, info);
        for (unsigned k = 0; rc == 0 && k < count && k < NVML_MAX_PROCS && *n < max; k++)
            pids[(*n)++] = info[k].pid;
        pfi_free(info);
    } else {
        nvmlProcessInfo_v1_t *info = pfi_calloc(NVML_MAX_PROCS, sizeof *info);
        if (info == NULL)
            return PFI_ERR_NOMEM;
        rc = c->s.get_procs_v1(g->dev, &count, info);
        for (unsigned k = 0; rc == 0 && k < count && k < NVML_MAX_PROCS && *n < max; k++)
            pids[(*n)++] = info[k].pid;
        pfi_free(info);
    }
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE || (rc == 0 && count > max)) {
        *n = 0;
        return hw_fail(diag, PFI_ERR_LIMIT, "GPU %u: more than %zu compute processes", i,
                       rc == 0 ? max : (size_t)NVML_MAX_PROCS);
    }
    if (rc != 0)
        return dev_fail(c, i, rc, "nvmlDeviceGetComputeRunningProcesses", diag);
    return PFI_OK;
}

static const pfi_gpu_ops nvml_ops = {
    .close = nvml_close,
    .count = nvml_count,
    .info = nvml_info,
    .sample = nvml_sample,
    .limits = nvml_limits,
    .set_limit_mw = nvml_set,
    .processes = nvml_processes,
};

/* Open: dlopen the library (cfg->library, else the driver's soname; the environment is the
 * caller's business), nvmlInit, one handle per GPU (a lost GPU stays listed, flagged). */
static pfi_error nvml_open(const pfi_gpu_config *cfg, const pfi_gpu_ops **ops, void **out,
                           pfi_diag *diag)
{
    const char *path = cfg->library;
    if (path == NULL || *path == '\0')
        path = "libnvidia-ml.so.1";
    nvml_ctx *c = pfi_calloc(1, sizeof *c);
    if (c == NULL)
        return PFI_ERR_NOMEM;
    snprintf(c->path, sizeof c->path, "%s", path);
    c->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (c->lib == NULL) {
        const char *why = dlerror();
        pfi_free(c);
        return hw_fail(diag, PFI_ERR_UNAVAILABLE,
                       "cannot load %s (is the NVIDIA driver installed?): %s", path,
                       why ? why : "unknown reason");
    }
    load_syms(c->lib, &c->s);
    if (c->s.init == NULL || c->s.get_count == NULL || c->s.get_handle == NULL) {
        dlclose(c->lib);
        pfi_free(c);
        return hw_fail(diag, PFI_ERR_UNAVAILABLE,
                       "%s lacks nvmlInit / nvmlDeviceGetCount / nvmlDeviceGetHandleByIndex", path);
    }
    int rc = c->s.init();
    if (rc != 0) {
        pfi_error e = nvml_fail(c, diag, rc, "nvmlInit_v2", -1);
        c->s.shutdown = NULL; /* not initialised: nothing to shut down */
        nvml_close(c);
        return e;
    }
    unsigned n = 0;
    rc = c->s.get_count(&n);
    if (rc != 0) {
        pfi_error e = nvml_fail(c, diag, rc, "nvmlDeviceGetCount_v2", -1);
        nvml_close(c);
        return e;
    }
    c->gpus = pfi_calloc(n ? n : 1, sizeof *c->gpus);
    if (c->gpus == NULL) {
        nvml_close(c);
        return PFI_ERR_NOMEM;
    }
    c->n = n;
    for (unsigned i = 0; i < n; i++) {
        rc = c->s.get_handle(i, &c->gpus[i].dev);
        if (rc != 0) {
            /* a lost GPU stays listed, flagged; anything else stops the open */
            if (hw_nvml_map(rc) == PFI_ERR_GPU_LOST) {
                c->gpus[i].lost = true;
                continue;
            }
            pfi_error e = nvml_fail(c, diag, rc, "nvmlDeviceGetHandleByIndex_v2", (int)i);
            nvml_close(c);
            return e;
        }
        nvmlGpmSupport_t sup = {.version = GPM_SUPPORT_VERSION};
        if (c->s.gpm_support != NULL && c->s.gpm_alloc != NULL && c->s.gpm_free != NULL &&
            c->s.gpm_get != NULL && c->s.gpm_metrics != NULL &&
            c->s.gpm_support(c->gpus[i].dev, &sup) == 0 && sup.isSupportedDevice) {
            if (c->s.gpm_alloc(&c->gpus[i].gpm_prev) == 0) {
                if (c->s.gpm_alloc(&c->gpus[i].gpm_cur) == 0)
                    c->gpus[i].gpm = true;
                else
                    c->s.gpm_free(c->gpus[i].gpm_prev);
            }
        }
    }
    *ops = &nvml_ops;
    *out = c;
    return PFI_OK;
}

/* Real limits: a limit set stays in the driver after the process exits, so it is journaled. */
const hw_backend hw_nvml_backend = {
    .kind = PFI_GPU_NVML,
    .name = "nvml",
    .caps = PFI_GPU_CAP_SET_LIMITS | PFI_GPU_CAP_PERSISTENT_LIMITS,
    .library_env = "PFI_NVML_LIBRARY",
    .open = nvml_open,
};
