/*
 * pfid's configuration file and command-line overrides.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pfi/conf.h"
#include "pfi/http.h"

#include "log.h"

static pfi_error fail(pfi_diag *diag, pfi_error e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static pfi_error fail(pfi_diag *diag, pfi_error e, const char *fmt, ...)
{
    if (diag != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(diag->message, sizeof diag->message, fmt, ap);
        va_end(ap);
    }
    return e;
}

void pfid_config_defaults(pfid_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->listen, sizeof c->listen, "127.0.0.1:9400");
    c->backend = PFI_GPU_DEFAULT;
    c->interval_s = 1.0;
    c->stale_s = 0;
    c->ring = 60;
    snprintf(c->token_file, sizeof c->token_file, "/etc/pfid/token");
    snprintf(c->journal, sizeof c->journal, "/var/lib/pfid/cap-journal");
    c->lease_max_s = 3600;
    c->lease_policy = PFID_POLICY_HOLD;
    c->hold_max_s = 600;
    c->shutdown_policy = PFID_POLICY_RESTORE;
    c->jobs = PFID_JOBS_NONE;
    snprintf(c->emulated_job, sizeof c->emulated_job, "emulated-job");
    c->jobs_refresh_s = 10;
    c->tput_stale_s = 120;
    c->max_connections = 64;
    c->max_per_client = 16;
    c->threads = 2;
    c->conn_timeout_s = 10;
    c->max_body = 64 * 1024;
    c->log_level = PFID_LOG_INFO;
    c->node_power_kind = PFID_NODE_WATTS;
    c->node_power_includes_gpus = true;
    c->node_power_frozen_s = 30;
}

bool pfid_parse_duration(const char *s, double *out_s)
{
    char *e;
    errno = 0;
    double v = strtod(s, &e);
    if (e == s || errno != 0 || !isfinite(v) || v < 0)
        return false;
    double mult = 1;
    if (strcmp(e, "ms") == 0)
        mult = 1e-3;
    else if (strcmp(e, "s") == 0 || *e == '\0')
        mult = 1;
    else if (strcmp(e, "m") == 0)
        mult = 60;
    else if (strcmp(e, "h") == 0)
        mult = 3600;
    else
        return false;
    *out_s = v * mult;
    return isfinite(*out_s);
}

bool pfid_valid_id(const char *s)
{
    size_t n = 0;
    for (; s[n] != '\0'; n++) {
        unsigned char ch = (unsigned char)s[n];
        if (!(isalnum(ch) || strchr("._:@+=-", ch) != NULL) || ch >= 0x80)
            return false;
    }
    return n > 0 && n < PFID_ID_MAX;
}

static bool parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (int k = 0; k < 4; k++) {
        if (strcmp(v, yes[k]) == 0) {
            *out = true;
            return true;
        }
        if (strcmp(v, no[k]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

static bool parse_uint(const char *v, unsigned long lo, unsigned long hi, unsigned long *out)
{
    char *e;
    errno = 0;
    if (!isdigit((unsigned char)v[0]))
        return false;
    unsigned long x = strtoul(v, &e, 10);
    unsigned long mult = 1;
    if (*e == 'k' || *e == 'K')
        mult = 1024, e++;
    else if (*e == 'M')
        mult = 1024 * 1024, e++;
    if (*e != '\0' || errno != 0 || x > hi / mult || x * mult < lo || x * mult > hi)
        return false;
    *out = x * mult;
    return true;
}

static pfi_error set_str(char *dst, size_t cap, const char *key, const char *v, pfi_diag *diag)
{
    size_t n = strlen(v);
    if (n >= cap)
        return fail(diag, PFI_ERR_LIMIT, "%s: value longer than %zu bytes", key, cap - 1);
    memcpy(dst, v, n + 1);
    return PFI_OK;
}

static pfi_error set_policy(pfid_policy *p, const char *key, const char *v, pfi_diag *diag)
{
    if (strcmp(v, "hold") == 0)
        *p = PFID_POLICY_HOLD;
    else if (strcmp(v, "restore") == 0)
        *p = PFID_POLICY_RESTORE;
    else
        return fail(diag, PFI_ERR_VALUE, "%s: bad value '%s': expected hold or restore", key, v);
    return PFI_OK;
}

/* throughput_log = JOB FORMAT PATH [TOKENS_PER_UNIT] */
static pfi_error add_tlog(pfid_config *c, const char *v, pfi_diag *diag)
{
    if (c->n_tlogs == PFID_MAX_TLOGS)
        return fail(diag, PFI_ERR_LIMIT, "throughput_log: more than %d logs", PFID_MAX_TLOGS);
    char buf[1024];
    if (strlen(v) >= sizeof buf)
        return fail(diag, PFI_ERR_LIMIT, "throughput_log: value too long");
    memcpy(buf, v, strlen(v) + 1);
    char *save = NULL, *f[5] = {0};
    int n = 0;
    for (char *t = strtok_r(buf, " \t", &save); t != NULL && n < 5;
         t = strtok_r(NULL, " \t", &save))
        f[n++] = t;
    if (n < 3 || n > 4)
        return fail(diag, PFI_ERR_VALUE,
                    "throughput_log: want 'JOB FORMAT PATH [TOKENS_PER_UNIT]'");
    pfid_tlog *t = &c->tlogs[c->n_tlogs];
    memset(t, 0, sizeof *t);
    if (!pfid_valid_id(f[0]))
        return fail(diag, PFI_ERR_VALUE, "throughput_log: '%s' is not a valid job id", f[0]);
    snprintf(t->job, sizeof t->job, "%s", f[0]);
    if (!pfi_trainlog_format_parse(f[1], &t->format) || t->format == PFI_TRAINLOG_REGEX)
        return fail(diag, PFI_ERR_VALUE,
                    "throughput_log: format '%s' is not auto, megatron, nanotron, hf or "
                    "torchtitan",
                    f[1]);
    if (strlen(f[2]) >= sizeof t->path)
        return fail(diag, PFI_ERR_LIMIT, "throughput_log: path too long");
    snprintf(t->path, sizeof t->path, "%s", f[2]);
    t->scale = 1;
    if (n == 4) {
        char *e;
        t->scale = strtod(f[3], &e);
        if (*e != '\0' || !isfinite(t->scale) || !(t->scale > 0))
            return fail(diag, PFI_ERR_VALUE,
                        "throughput_log: tokens per unit '%s' is not a positive number", f[3]);
    }
    c->n_tlogs++;
    return PFI_OK;
}

pfi_error pfid_config_set(pfid_config *c, const char *key, const char *v, pfi_diag *diag)
{
    double d;
    unsigned long u;
    bool b;
#define DURATION(name, field, lo, hi)                                                              \
    if (strcmp(key, name) == 0) {                                                                  \
        if (!pfid_parse_duration(v, &d) || d < (lo) || d > (hi))                                   \
            return fail(diag, PFI_ERR_VALUE,                                                       \
                        "%s: bad value '%s': expected a duration in [%g, %g] s", key, v,           \
                        (double)(lo), (double)(hi));                                               \
        c->field = d;                                                                              \
        return PFI_OK;                                                                             \
    }
#define UINT(name, field, lo, hi)                                                                  \
    if (strcmp(key, name) == 0) {                                                                  \
        if (!parse_uint(v, lo, hi, &u))                                                            \
            return fail(diag, PFI_ERR_VALUE,                                                       \
                        "%s: bad value '%s': expected an integer in [%lu, %lu]", key, v,           \
                        (unsigned long)(lo), (unsigned long)(hi));                                 \
        c->field = u;                                                                              \
        return PFI_OK;                                                                             \
    }
#define STR(name, field)                                                                           \
    if (strcmp(key, name) == 0)                                                                    \
        return set_str(c->field, sizeof c->field, key, v, diag);
    STR("listen", listen)
    STR("port_file", port_file)
    STR("hostname", hostname)
    STR("emulate", emulate)
    STR("nvml_library", nvml_library)
    STR("replay", replay)
    STR("token_file", token_file)
    STR("journal", journal)
    STR("run_dir", run_dir)
    STR("jobs_file", jobs_file)
    STR("pfi_model", pfi_model)
    STR("slurm_socket", slurm_socket)
    STR("node_power_file", node_power_file)
    DURATION("interval", interval_s, 0.01, 3600)
    DURATION("stale_after", stale_s, 0, 86400)
    DURATION("lease_max", lease_max_s, 1, 7 * 86400)
    DURATION("hold_max", hold_max_s, 0, 7 * 86400)
    DURATION("jobs_refresh", jobs_refresh_s, 0.1, 3600)
    DURATION("throughput_stale", tput_stale_s, 1, 86400)
    DURATION("node_power_frozen_after", node_power_frozen_s, 0, 86400)
    DURATION("connection_timeout", conn_timeout_s, 1, 3600)
    UINT("ring", ring, 2, PFID_RING_MAX_CFG)
    UINT("max_connections", max_connections, 1, 10000)
    UINT("max_connections_per_client", max_per_client, 1, 10000)
    UINT("threads", threads, 1, 64)
    UINT("max_body", max_body, 64, 16ul * 1024 * 1024)
#undef DURATION
#undef UINT
#undef STR
    if (strcmp(key, "backend") == 0) {
        char names[128];
        if (!pfi_gpu_kind_parse(v, &c->backend))
            return fail(diag, PFI_ERR_VALUE, "backend: bad value '%s': expected %s", v,
                        pfi_gpu_kind_names(0, names, sizeof names));
        return PFI_OK;
    }
    if (strcmp(key, "auth_reads") == 0) {
        if (!parse_bool(v, &b))
            return fail(diag, PFI_ERR_VALUE, "auth_reads: bad value '%s': expected true or false",
                        v);
        c->auth_reads = b;
        return PFI_OK;
    }
    if (strcmp(key, "node_power_includes_gpus") == 0) {
        if (!parse_bool(v, &b))
            return fail(diag, PFI_ERR_VALUE, "node_power_includes_gpus: '%s' is not true or false",
                        v);
        c->node_power_includes_gpus = b;
        return PFI_OK;
    }
    if (strcmp(key, "node_power_kind") == 0) {
        if (strcmp(v, "watts") == 0)
            c->node_power_kind = PFID_NODE_WATTS;
        else if (strcmp(v, "energy_uj") == 0)
            c->node_power_kind = PFID_NODE_ENERGY_UJ;
        else
            return fail(diag, PFI_ERR_VALUE, "node_power_kind: '%s' is not watts or energy_uj", v);
        return PFI_OK;
    }
    if (strcmp(key, "dcgm_names") == 0) {
        if (!parse_bool(v, &b))
            return fail(diag, PFI_ERR_VALUE, "dcgm_names: bad value '%s': expected true or false",
                        v);
        c->dcgm_names = b;
        return PFI_OK;
    }
    if (strcmp(key, "clock") == 0) {
        if (strcmp(v, "wall") != 0 && strcmp(v, "emulated") != 0)
            return fail(diag, PFI_ERR_VALUE, "clock: bad value '%s': expected wall or emulated", v);
        c->clock_emulated = strcmp(v, "emulated") == 0;
        return PFI_OK;
    }
    if (strcmp(key, "lease_policy") == 0)
        return set_policy(&c->lease_policy, key, v, diag);
    if (strcmp(key, "shutdown") == 0)
        return set_policy(&c->shutdown_policy, key, v, diag);
    if (strcmp(key, "jobs") == 0) {
        static const char *const names[] = {"none", "static", "slurm", "emulated"};
        for (int k = 0; k < 4; k++)
            if (strcmp(v, names[k]) == 0) {
                c->jobs = (pfid_jobs_source)k;
                return PFI_OK;
            }
        return fail(diag, PFI_ERR_VALUE,
                    "jobs: bad value '%s': expected none, static, slurm or emulated", v);
    }
    if (strcmp(key, "emulated_job") == 0) {
        if (!pfid_valid_id(v))
            return fail(diag, PFI_ERR_VALUE, "emulated_job: bad value '%s': expected a job id", v);
        snprintf(c->emulated_job, sizeof c->emulated_job, "%s", v);
        return PFI_OK;
    }
    if (strcmp(key, "throughput_log") == 0)
        return add_tlog(c, v, diag);
    if (strcmp(key, "log_level") == 0) {
        static const char *const names[] = {"error", "warning", "info", "debug"};
        for (int k = 0; k < 4; k++)
            if (strcmp(v, names[k]) == 0) {
                c->log_level = k;
                return PFI_OK;
            }
        return fail(diag, PFI_ERR_VALUE,
                    "log_level: bad value '%s': expected error, warning, info or debug", v);
    }
    return fail(diag, PFI_ERR_INVALID_ARGUMENT, "unknown key '%s'", key);
}

static pfi_error take_pair(void *ctx, const char *key, const char *value, pfi_diag *diag)
{
    return pfid_config_set(ctx, key, value, diag);
}

/* The syntax is pfi_conf_parse's (pfi/conf.h), the one `pfi control --config` reads too. */
pfi_error pfid_config_parse(pfid_config *c, const char *text, size_t len, pfi_diag *diag)
{
    return pfi_conf_parse(text, len, take_pair, c, diag);
}

pfi_error pfid_config_load(pfid_config *c, const char *path, pfi_diag *diag)
{
    if (diag != NULL) {
        pfi_diag_clear(diag);
        snprintf(diag->file, sizeof diag->file, "%s", path);
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return fail(diag, PFI_ERR_IO, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return fail(diag, PFI_ERR_IO, "is a directory, not a config file");
    }
    char *buf = malloc(PFID_CONFIG_MAX_BYTES + 1);
    if (buf == NULL) {
        fclose(f);
        return PFI_ERR_NOMEM;
    }
    size_t n = fread(buf, 1, PFID_CONFIG_MAX_BYTES + 1, f);
    int err = ferror(f) != 0 ? (errno != 0 ? errno : EIO) : 0;
    fclose(f);
    pfi_error e = err != 0 ? fail(diag, PFI_ERR_IO, "cannot read: %s", strerror(err))
                           : pfid_config_parse(c, buf, n, diag);
    free(buf);
    return e;
}

pfi_error pfid_listen_check(const pfid_config *c, bool have_token, pfi_diag *diag)
{
    struct sockaddr_storage ss;
    if (!pfi_http_address_parse(c->listen, &ss))
        return fail(diag, PFI_ERR_INVALID_ARGUMENT,
                    "listen '%s': want HOST:PORT or [V6]:PORT, a numeric host and a port 0-65535",
                    c->listen);
    bool loopback = false;
    if (ss.ss_family == AF_INET)
        loopback = (ntohl(((const struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
    else if (ss.ss_family == AF_INET6)
        loopback = IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)&ss)->sin6_addr);
    if (!loopback && !have_token && c->token_file[0] != '\0') {
        /* configured, but not there: say so, not that none is configured */
        int err = access(c->token_file, F_OK) == 0 ? 0 : errno;
        return fail(diag, PFI_ERR_INVALID_ARGUMENT,
                    "listen '%s' is reachable beyond loopback and token_file %s %s%s%s: create "
                    "it (one token a line, mode 0600), or listen on 127.0.0.1",
                    c->listen, c->token_file, err != 0 ? "is missing (" : "holds no token",
                    err != 0 ? strerror(err) : "", err != 0 ? ")" : "");
    }
    if (!loopback && !have_token)
        return fail(diag, PFI_ERR_INVALID_ARGUMENT,
                    "listen '%s' is reachable beyond loopback and no token is configured "
                    "(token_file): set one, or listen on 127.0.0.1",
                    c->listen);
    return PFI_OK;
}

pfi_error pfid_config_check(const pfid_config *c, pfi_diag *diag)
{
    if (c->jobs == PFID_JOBS_STATIC && c->jobs_file[0] == '\0')
        return fail(diag, PFI_ERR_INVALID_ARGUMENT, "jobs = static needs jobs_file");
    unsigned caps = pfi_gpu_backend_caps(c->backend);
    if (c->jobs == PFID_JOBS_EMULATED && !(caps & PFI_GPU_CAP_JOBS)) {
        char names[128];
        return fail(diag, PFI_ERR_INVALID_ARGUMENT, "jobs = emulated needs backend = %s",
                    pfi_gpu_kind_names(PFI_GPU_CAP_JOBS, names, sizeof names));
    }
    if (c->clock_emulated && !(caps & PFI_GPU_CAP_VIRTUAL_CLOCK)) {
        char names[128];
        return fail(diag, PFI_ERR_INVALID_ARGUMENT, "clock = emulated needs backend = %s",
                    pfi_gpu_kind_names(PFI_GPU_CAP_VIRTUAL_CLOCK, names, sizeof names));
    }
    if ((caps & PFI_GPU_CAP_REPLAY_FILE) && c->replay[0] == '\0')
        return fail(diag, PFI_ERR_INVALID_ARGUMENT, "backend = %s needs replay = FILE",
                    pfi_gpu_kind_name(c->backend));
    if (c->stale_s != 0 && c->stale_s < c->interval_s)
        return fail(diag, PFI_ERR_INVALID_ARGUMENT, "stale_after is shorter than interval");
    return PFI_OK;
}
