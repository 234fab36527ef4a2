/*
 * A fake libnvidia-ml.so.1 for tests: the NVML entry points pfi's nvml backend uses, backed by
 * a small state file named by $FAKE_NVML_STATE, so the real dlopen / dlsym / error-mapping
 * code runs in CI without a GPU. Built only under tests/; never installed.
 *
 * State file (one GPU per line; '#' comments; every key optional):
 *   init_error N                      nvmlInit_v2 returns N
 *   gpu INDEX uuid=U name=N min=MW max=MW default=MW limit=MW enforced=MW ext=MW draw=MW
 *       set_error=N get_limit_error=N lost_after=CALLS stuck=0|1
 * limit is the requested limit, enforced the limit in effect before `ext` (another limiter,
 * 0 = none) lowers it. A successful set writes the state back (atomically), so a later
 * process — `pfi restore` after kill -9 — sees what the killed one left. stuck=1: the set
 * succeeds but the enforced limit stays. lost_after=N: every call on that GPU after its N-th
 * (in this process) returns NVML_ERROR_GPU_IS_LOST. Names use '_' for spaces.
 * $FAKE_NVML_TRACE, when set, is a file every set is appended to ("set GPU MW RC").
 * pids=P1:P2:... lists the GPU's compute processes (nvmlDeviceGetComputeRunningProcesses_v3).
 * $FAKE_NVML_CTL, when set, names a control file read at every call on a GPU, for faults that
 * must start while a process runs: a line "lost INDEX" makes that GPU return GPU_IS_LOST, a
 * line "hang" makes every GPU call block until the line is gone (a stalled driver).
 * The clock-event reasons are exported under the old name only
 * (nvmlDeviceGetCurrentClocksThrottleReasons) to exercise the backend's fallback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_GPUS 64

typedef struct fake_gpu {
    unsigned index;
    char uuid[80], name[80];
    unsigned min, max, def, limit, enforced, ext, draw;
    int set_error, get_limit_error;
    long lost_after, calls;
    int stuck;
    unsigned pids[16];
    unsigned n_pids;
} fake_gpu;

static fake_gpu gpus[MAX_GPUS];
static unsigned n_gpus;
static int init_error;
static int initialised;
static double t0;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long num(const char *v)
{
    char *e;
    long x = strtol(v, &e, 10);
    return *e == '\0' ? x : 0;
}

static long num_prefix(const char *v)
{
    return strtol(v, NULL, 10);
}

static int load(void)
{
    const char *path = getenv("FAKE_NVML_STATE");
    n_gpus = 0;
    init_error = 0;
    if (path == NULL)
        return 0;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    char line[1024];
    while (fgets(line, sizeof line, f) != NULL) {
        char *save = NULL;
        char *tok = strtok_r(line, " \t\r\n", &save);
        if (tok == NULL || tok[0] == '#')
            continue;
        if (strcmp(tok, "init_error") == 0) {
            tok = strtok_r(NULL, " \t\r\n", &save);
            init_error = tok ? (int)num(tok) : 0;
            continue;
        }
        if (strcmp(tok, "gpu") != 0 || n_gpus == MAX_GPUS)
            continue;
        fake_gpu *g = &gpus[n_gpus];
        memset(g, 0, sizeof *g);
        tok = strtok_r(NULL, " \t\r\n", &save);
        g->index = tok ? (unsigned)num(tok) : n_gpus;
        snprintf(g->uuid, sizeof g->uuid, "GPU-fake-%u", g->index);
        snprintf(g->name, sizeof g->name, "Fake_H200");
        g->min = 200000;
        g->max = g->def = g->limit = g->enforced = 700000;
        g->draw = 600000;
        while ((tok = strtok_r(NULL, " \t\r\n", &save)) != NULL) {
            char *eq = strchr(tok, '=');
            if (eq == NULL)
                continue;
            *eq = '\0';
            const char *k = tok, *v = eq + 1;
            if (strcmp(k, "uuid") == 0)
                snprintf(g->uuid, sizeof g->uuid, "%s", v);
            else if (strcmp(k, "name") == 0)
                snprintf(g->name, sizeof g->name, "%s", v);
            else if (strcmp(k, "min") == 0)
                g->min = (unsigned)num(v);
            else if (strcmp(k, "max") == 0)
                g->max = (unsigned)num(v);
            else if (strcmp(k, "default") == 0)
                g->def = (unsigned)num(v);
            else if (strcmp(k, "limit") == 0)
                g->limit = (unsigned)num(v);
            else if (strcmp(k, "enforced") == 0)
                g->enforced = (unsigned)num(v);
            else if (strcmp(k, "ext") == 0)
                g->ext = (unsigned)num(v);
            else if (strcmp(k, "draw") == 0)
                g->draw = (unsigned)num(v);
            else if (strcmp(k, "set_error") == 0)
                g->set_error = (int)num(v);
            else if (strcmp(k, "get_limit_error") == 0)
                g->get_limit_error = (int)num(v);
            else if (strcmp(k, "lost_after") == 0)
                g->lost_after = num(v);
            else if (strcmp(k, "stuck") == 0)
                g->stuck = (int)num(v);
            else if (strcmp(k, "pids") == 0) {
                char *ps = NULL;
                for (char *p = strtok_r(eq + 1, ":", &ps); p != NULL && g->n_pids < 16;
                     p = strtok_r(NULL, ":", &ps))
                    g->pids[g->n_pids++] = (unsigned)num(p);
            }
        }
        n_gpus++;
    }
    fclose(f);
    return 0;
}

static void save(void)
{
    const char *path = getenv("FAKE_NVML_STATE");
    if (path == NULL)
        return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.fake%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return;
    if (init_error)
        fprintf(f, "init_error %d\n", init_error);
    for (unsigned i = 0; i < n_gpus; i++) {
        fake_gpu *g = &gpus[i];
        fprintf(f,
                "gpu %u uuid=%s name=%s min=%u max=%u default=%u limit=%u enforced=%u ext=%u "
                "draw=%u set_error=%d get_limit_error=%d lost_after=%ld stuck=%d",
                g->index, g->uuid, g->name, g->min, g->max, g->def, g->limit, g->enforced, g->ext,
                g->draw, g->set_error, g->get_limit_error, g->lost_after, g->stuck);
        for (unsigned k = 0; k < g->n_pids; k++)
            fprintf(f, "%s%u", k == 0 ? " pids=" : ":", g->pids[k]);
        fputc('\n', f);
    }
    if (fclose(f) == 0)
        rename(tmp, path);
    else
        unlink(tmp);
}

/* The control file: 1 when GPU index is listed "lost"; blocks while a "hang" line is there. */
static int ctl_lost(unsigned index)
{
    const char *path = getenv("FAKE_NVML_CTL");
    if (path == NULL)
        return 0;
    for (;;) {
        FILE *f = fopen(path, "r");
        if (f == NULL)
            return 0;
        char line[128];
        int lost = 0, hang = 0;
        while (fgets(line, sizeof line, f) != NULL) {
            if (strncmp(line, "hang", 4) == 0)
                hang = 1;
            else if (strncmp(line, "lost ", 5) == 0 && (unsigned)num_prefix(line + 5) == index)
                lost = 1;
        }
        fclose(f);
        if (!hang)
            return lost;
        struct timespec ts = {0, 20000000L};
        nanosleep(&ts, NULL);
    }
}

/* Count a call on g; 15 (GPU_IS_LOST) once past lost_after. */
static int touch(void *dev, fake_gpu **out)
{
    if (!initialised)
        return 1;
    fake_gpu *g = dev;
    if (g == NULL || g < gpus || g >= gpus + n_gpus)
        return 2;
    g->calls++;
    if (g->lost_after > 0 && g->calls > g->lost_after)
        return 15;
    if (ctl_lost(g->index))
        return 15;
    *out = g;
    return 0;
}

static unsigned enforced_of(const fake_gpu *g)
{
    return g->ext != 0 && g->ext < g->enforced ? g->ext : g->enforced;
}

int nvmlInit_v2(void)
{
    if (load() != 0)
        return 9; /* DRIVER_NOT_LOADED: state file unreadable */
    if (init_error)
        return init_error;
    initialised = 1;
    t0 = now_s();
    return 0;
}

int nvmlShutdown(void)
{
    initialised = 0;
    return 0;
}

const char *nvmlErrorString(int rc)
{
    return rc == 0 ? "Success" : "Fake NVML error";
}

int nvmlDeviceGetCount_v2(unsigned *n)
{
    if (!initialised)
        return 1;
    *n = n_gpus;
    return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev)
{
    if (!initialised)
        return 1;
    if (i >= n_gpus)
        return 2;
    *dev = &gpus[i];
    return 0;
}

int nvmlDeviceGetName(void *dev, char *buf, unsigned len)
{
    fake_gpu *g;
    int rc = touch(dev, &g);
    if (rc)
        return rc;
    snprintf(buf, len, "%s", g->name);
    for (char *p = buf; *p; p++)
        if (*p == '_')
            *p = ' ';
    return 0;
}

int nvmlDeviceGetUUID(void *dev, char *buf, unsigned len)
{
    fake_gpu *g;
    int rc = touch(dev, &g);
    if (rc)
        return rc;
    snprintf(buf, len, "%s", g->uuid);
    return 0;
}

int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw)
{
    fake_gpu *g;
    int rc = touch(dev, &g);
    if (rc)
        return rc;
    unsigned e = enforced_of(g);
    *mw = g->draw < e ? g->draw : e;
    return 0;
}

int nvmlDeviceGetTotalEnergyConsumption(void *dev, unsigned long long *mj)
{
    fake_gpu *g;
    int rc = touch(dev, &g);
    if (rc)
        return rc;
    unsigned e = enforced_of(g);
    double w = (g->draw < e ? g->draw : e) / 1000.0;
    *mj = (unsigned long long)(1e9 + w * (now_s() - t0) * 1000.0);
    return 0;
}

int nvmlDeviceGetPowerManagementLimit(void *dev, unsigned *mw)
{
    fake_gpu *g;
    int rc = touch(dev, &g);
    if (rc)
        return rc;
    if (g->get_limit_error)
        return g->get_limit_error;
    *mw = g->limit;
    return 0;
}

int nvmlDeviceGetPowerManagementLimitConstraints(void *dev, unsigned *lo, unsigned *hi)
{
    fake_gpu *g;
    int rc = touch(dev, &g);
    if (rc)
        return rc;
    *lo = g->min;
    *hi = g->max;
    return 0;
}

int nvmlDeviceGetPowerManagementDefaultLimit(void *dev, unsigned *mw)
{
    fake_gpu *g;
    int rc = touch(dev, &g);
    if (rc)
        return rc;
    *mw = g->def;
    return 0;
}

int nvmlDeviceGetEnforcedPowerLimit(void *dev, unsigned *mw)
{
    fake_gpu *g;
    int rc = touch(dev, &g);
    if (rc)
        return rc;
    *mw = enforced_of(g);
    return 0;
}

int nvmlDeviceSetPowerManagementLimit(void *dev, unsigned mw)
{
    fake_gpu *g = NULL;
    int rc = touch(dev, &g);
    if (rc == 0) {
        if (g->set_error)
            rc = g->set_error;
        else if (mw < g->min || mw > g->max)
            rc = 2;
        else {
            g->limit = mw;
            if (!g->stuck)
                g->enforced = mw;
            save();
        }
    }
    const char *trace = getenv("FAKE_NVML_TRACE");
    if (trace != NULL) {
        FILE *f = fopen(trace, "a");
        if (f != NULL) {
            fake_gpu *d = dev;
            long idx = d >= gpus && d < gpus + n_gpus ? (long)d->index : -1L;
            fprintf(f, "set %ld %u %d\n", idx, mw, rc);
            fclose(f);
        }
    }
    return rc;
}

int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz)
{
    fake_gpu *g;
    int rc = touch(dev, &g);
    if (rc)
        return rc;
    if (type == 2) {
        *mhz = 3201;
        return 0;
    }
    *mhz = (unsigned)(1980.0 * enforced_of(g) / (double)g->max);
    return 0;
}

int nvmlDeviceGetUtilizationRates(void *dev, unsigned *util)
{
    fake_gpu *g;
    int rc = touch(dev, &g);
    if (rc)
        return rc;
    util[0] = 100;
    util[1] = 40;
    return 0;
}

int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned *c)
{
    fake_gpu *g;
    int rc = touch(dev, &g);
    if (rc)
        return rc;
    if (sensor != 0)
        return 2;
    *c = 55;
    return 0;
}

int nvmlDeviceGetCurrentClocksThrottleReasons(void *dev, unsigned long long *r)
{
    fake_gpu *g;
    int rc = touch(dev, &g);
    if (rc)
        return rc;
    *r = enforced_of(g) < g->draw ? 0x4ull : 0;
    return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned *count, void *infos)
{
    fake_gpu *g;
    int rc = touch(dev, &g);
    if (rc)
        return rc;
    if (*count < g->n_pids) {
        *count = g->n_pids;
        return 7; /* INSUFFICIENT_SIZE */
    }
    /* nvmlProcessInfo_t: pid, usedGpuMemory, gpuInstanceId, computeInstanceId (24 bytes) */
    struct info {
        unsigned pid;
        unsigned long long mem;
        unsigned gi, ci;
    } *out = infos;
    for (unsigned k = 0; k < g->n_pids; k++) {
        out[k].pid = g->pids[k];
        out[k].mem = 1ull << 30;
        out[k].gi = out[k].ci = 0xFFFFFFFFu;
    }
    *count = g->n_pids;
    return 0;
}
