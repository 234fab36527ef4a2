/*
 * pfi_test_agent — a small stand-in for pfid (issue 7) that implements the agent HTTP
 * contract (docs/agent-api.md) over emulated GPUs (src/hw emulated backend + capctl), so the
 * controller's end-to-end tests run before pfid exists. Tests only; not installed.
 *
 *   pfi_test_agent --port-file F [--port N] [--token T] [--host NAME] [--speed S]
 *                  --job ID:CLASS:GPUS:ALPHA:TPUT[:PU] ...
 *
 * One emulated backend per job (each GPU belongs to one job); the virtual clock follows the
 * wall clock × speed. Leases are accepted and held (policy "hold"). Writes need the token.
 */
#include <jansson.h>
#include <math.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pfi/capctl.h"
#include "pfi/gpu.h"

#define MAX_JOBS 16
#define MAX_BODY 65536

typedef struct job {
    char id[64], cls[16];
    unsigned gpus;
    pfi_gpu *g;
    pfi_capctl *cc;
    char uuid[32][96];
    double tput;
} job;

static job jobs[MAX_JOBS];
static size_t njobs;
static const char *token = "";
static char host[64] = "node";
static double speed = 1, t0;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char seen_ids[64][96];
static size_t nseen;
static volatile sig_atomic_t stop;

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void advance(void)
{
    double vt = (mono() - t0) * speed + 1000.0;
    for (size_t j = 0; j < njobs; j++) {
        if (pfi_gpu_now_s(jobs[j].g) < vt)
            pfi_gpu_sleep_until_s(jobs[j].g, vt);
        double t[64], v[64];
        size_t n = 0;
        if (pfi_gpu_job_poll(jobs[j].g, t, v, 64, &n) == PFI_OK && n > 0)
            jobs[j].tput = v[n - 1];
    }
}

static json_t *gpu_json(size_t j, unsigned i, pfi_gpu_sample *s_out)
{
    pfi_gpu_sample s;
    pfi_gpu_limits l;
    pfi_gpu_read_sample(jobs[j].g, i, &s, NULL);
    pfi_gpu_read_limits(jobs[j].g, i, &l, NULL);
    if (s_out)
        *s_out = s;
    const pfi_gpu_limits *o = pfi_capctl_original(jobs[j].cc, i);
    return json_pack("{s:i, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:s}", "index",
                     (int)i, "uuid", jobs[j].uuid[i], "name", "emulated", "power_w", s.power_w,
                     "energy_j", s.energy_j, "cap_w", l.current_mw / 1000.0, "enforced_cap_w",
                     l.enforced_mw / 1000.0, "min_cap_w", l.min_mw / 1000.0, "max_cap_w",
                     l.max_mw / 1000.0, "default_cap_w", l.default_mw / 1000.0,
                     "original_cap_w", o->current_mw / 1000.0, "job", jobs[j].id);
}

static char *state_json(void)
{
    advance();
    json_t *gpus = json_array(), *js = json_array();
    unsigned idx = 0;
    for (size_t j = 0; j < njobs; j++) {
        double p = 0;
        json_t *ids = json_array();
        for (unsigned i = 0; i < jobs[j].gpus; i++) {
            pfi_gpu_sample s;
            json_t *g = gpu_json(j, i, &s);
            json_object_set_new(g, "index", json_integer(idx++));
            json_array_append_new(gpus, g);
            json_array_append_new(ids, json_string(jobs[j].uuid[i]));
            p += s.power_w;
        }
        json_array_append_new(js, json_pack("{s:s, s:o, s:f, s:f, s:s}", "id", jobs[j].id, "gpus",
                                            ids, "power_w", p, "throughput_tok_s", jobs[j].tput,
                                            "class", jobs[j].cls));
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    json_t *root = json_pack("{s:s, s:f, s:o, s:o, s:{s:n, s:n, s:s}}", "hostname", host,
                             "sampled_at_s", ts.tv_sec + ts.tv_nsec * 1e-9, "gpus", gpus, "jobs",
                             js, "lease", "request_id", "expires_in_s", "policy", "hold");
    char *out = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return out;
}

static char *metrics_text(void)
{
    advance();
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap);
    const char *fam[][2] = {{"pfi_gpu_power_watts", "gauge"},
                            {"pfi_gpu_energy_joules_total", "counter"},
                            {"pfi_gpu_power_cap_watts", "gauge"},
                            {"pfi_gpu_dram_active_ratio", "gauge"},
                            {"pfi_gpu_tensor_active_ratio", "gauge"}};
    pfi_gpu_sample s[MAX_JOBS][32];
    pfi_gpu_limits l[MAX_JOBS][32];
    for (size_t j = 0; j < njobs; j++)
        for (unsigned i = 0; i < jobs[j].gpus; i++) {
            pfi_gpu_read_sample(jobs[j].g, i, &s[j][i], NULL);
            pfi_gpu_read_limits(jobs[j].g, i, &l[j][i], NULL);
        }
    for (int f = 0; f < 5; f++) {
        len += (size_t)snprintf(b + len, cap - len, "# HELP %s emulated\n# TYPE %s %s\n",
                                fam[f][0], fam[f][0], fam[f][1]);
        unsigned idx = 0;
        for (size_t j = 0; j < njobs; j++)
            for (unsigned i = 0; i < jobs[j].gpus; i++, idx++) {
                double v = f == 0   ? s[j][i].power_w
                           : f == 1 ? s[j][i].energy_j
                           : f == 2 ? l[j][i].current_mw / 1000.0
                           : f == 3 ? s[j][i].dram_active
                                    : s[j][i].tensor_active;
                len += (size_t)snprintf(b + len, cap - len,
                                        "%s{gpu=\"%u\",uuid=\"%s\",hostname=\"%s\"} %.6f\n",
                                        fam[f][0], idx, jobs[j].uuid[i], host, v);
            }
    }
    len += (size_t)snprintf(b + len, cap - len,
                            "# HELP pfi_gpu_job_info GPU to job\n# TYPE pfi_gpu_job_info gauge\n");
    for (size_t j = 0; j < njobs; j++)
        for (unsigned i = 0; i < jobs[j].gpus; i++)
            len += (size_t)snprintf(b + len, cap - len,
                                    "pfi_gpu_job_info{uuid=\"%s\",job=\"%s\",hostname=\"%s\"} 1\n",
                                    jobs[j].uuid[i], jobs[j].id, host);
    return b;
}

static bool find_gpu(const char *uuid, size_t *j, unsigned *i)
{
    for (size_t a = 0; a < njobs; a++)
        for (unsigned b = 0; b < jobs[a].gpus; b++)
            if (strcmp(jobs[a].uuid[b], uuid) == 0) {
                *j = a;
                *i = b;
                return true;
            }
    return false;
}

/* apply caps: want[j][i] in W (NaN: keep) */
static json_t *apply(double want[MAX_JOBS][32], int *status, char *msg, size_t ml)
{
    json_t *out = json_array();
    for (size_t j = 0; j < njobs; j++) {
        uint32_t mw[32];
        bool any = false;
        for (unsigned i = 0; i < jobs[j].gpus; i++) {
            pfi_gpu_limits l;
            pfi_gpu_read_limits(jobs[j].g, i, &l, NULL);
            mw[i] = l.current_mw;
            if (!isnan(want[j][i])) {
                mw[i] = (uint32_t)lround(want[j][i] * 1000);
                any = true;
            }
        }
        if (!any)
            continue;
        pfi_cap_result res[32];
        pfi_diag d;
        if (pfi_capctl_apply(jobs[j].cc, mw, res, &d) != PFI_OK) {
            *status = 500;
            snprintf(msg, ml, "%s", d.message);
        }
        for (unsigned i = 0; i < jobs[j].gpus; i++)
            if (!isnan(want[j][i]))
                json_array_append_new(out, json_pack("{s:s, s:f, s:f}", "uuid", jobs[j].uuid[i],
                                                     "requested_cap_w", want[j][i],
                                                     "enforced_cap_w",
                                                     res[i].enforced_mw / 1000.0));
    }
    return out;
}

static int reply(struct MHD_Connection *c, int status, const char *type, char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", type);
    int ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static int err(struct MHD_Connection *c, int status, const char *msg)
{
    json_t *o = json_pack("{s:s}", "error", msg);
    char *b = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return reply(c, status, "application/json", b);
}

typedef struct body {
    char *p;
    size_t n;
    bool big;
} body;

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **pp)
{
    (void)cls;
    (void)version;
    body *b = *pp;
    if (b == NULL) {
        b = calloc(1, sizeof *b);
        *pp = b;
        return MHD_YES;
    }
    if (*size > 0) {
        if (b->n + *size > MAX_BODY)
            b->big = true;
        else {
            b->p = realloc(b->p, b->n + *size + 1);
            memcpy(b->p + b->n, data, *size);
            b->n += *size;
            b->p[b->n] = '\0';
        }
        *size = 0;
        return MHD_YES;
    }
    int ret;
    pthread_mutex_lock(&mu);
    if (strcmp(method, "GET") == 0 && strcmp(url, "/v1/state") == 0) {
        ret = reply(c, 200, "application/json", state_json());
    } else if (strcmp(method, "GET") == 0 && strcmp(url, "/metrics") == 0) {
        ret = reply(c, 200, "text/plain; version=0.0.4", metrics_text());
    } else if (strcmp(method, "GET") == 0 && strcmp(url, "/healthz") == 0) {
        ret = reply(c, 200, "text/plain", strdup("ok\n"));
    } else if (strcmp(url, "/v1/caps") == 0 &&
               (strcmp(method, "PUT") == 0 || strcmp(method, "DELETE") == 0)) {
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        char want_auth[320];
        snprintf(want_auth, sizeof want_auth, "Bearer %s", token);
        if (token[0] && (auth == NULL || strcmp(auth, want_auth) != 0)) {
            ret = err(c, 401, "missing or wrong bearer token");
        } else if (b->big) {
            ret = err(c, 413, "body too large");
        } else if (strcmp(method, "DELETE") == 0) {
            json_t *arr = json_array();
            for (size_t j = 0; j < njobs; j++) {
                pfi_cap_result res[32];
                pfi_capctl_restore(jobs[j].cc, res, NULL);
                for (unsigned i = 0; i < jobs[j].gpus; i++) {
                    pfi_gpu_limits l;
                    pfi_gpu_read_limits(jobs[j].g, i, &l, NULL);
                    json_array_append_new(arr, json_pack("{s:s, s:f, s:f}", "uuid",
                                                         jobs[j].uuid[i], "requested_cap_w",
                                                         l.current_mw / 1000.0, "enforced_cap_w",
                                                         l.enforced_mw / 1000.0));
                }
            }
            json_t *o = json_pack("{s:o}", "gpus", arr);
            ret = reply(c, 200, "application/json", json_dumps(o, JSON_COMPACT));
            json_decref(o);
        } else {
            json_error_t je;
            json_t *o = b->p ? json_loads(b->p, JSON_REJECT_DUPLICATES, &je) : NULL;
            json_t *rid = json_object_get(o, "request_id"), *caps = json_object_get(o, "caps");
            json_t *lease = json_object_get(o, "lease_s");
            if (!json_is_string(rid) || !json_is_array(caps) || !json_is_number(lease) ||
                json_number_value(lease) <= 0) {
                ret = err(c, 400, "malformed request");
            } else {
                bool dup = false;
                for (size_t k = 0; k < nseen && k < 64; k++)
                    if (strcmp(seen_ids[k], json_string_value(rid)) == 0)
                        dup = true;
                double want[MAX_JOBS][32];
                for (size_t j = 0; j < MAX_JOBS; j++)
                    for (unsigned i = 0; i < 32; i++)
                        want[j][i] = NAN;
                int st = 200;
                char msg[512] = "";
                size_t k;
                json_t *e;
                json_array_foreach(caps, k, e)
                {
                    json_t *u = json_object_get(e, "uuid"), *w = json_object_get(e, "cap_w");
                    size_t j;
                    unsigned i;
                    if (!json_is_string(u) || !json_is_number(w)) {
                        st = 400;
                        snprintf(msg, sizeof msg, "caps[%zu] malformed", k);
                        break;
                    }
                    if (!find_gpu(json_string_value(u), &j, &i)) {
                        st = 404;
                        snprintf(msg, sizeof msg, "unknown GPU %s", json_string_value(u));
                        break;
                    }
                    const pfi_gpu_limits *l = pfi_capctl_original(jobs[j].cc, i);
                    double v = json_number_value(w);
                    if (v < l->min_mw / 1000.0 || v > l->max_mw / 1000.0) {
                        st = 422;
                        snprintf(msg, sizeof msg, "GPU %s: cap %g W outside [%g, %g] W",
                                 jobs[j].uuid[i], v, l->min_mw / 1000.0, l->max_mw / 1000.0);
                        break;
                    }
                    want[j][i] = v;
                }
                if (st != 200) {
                    ret = err(c, st, msg);
                } else {
                    if (dup)
                        for (size_t j = 0; j < MAX_JOBS; j++)
                            for (unsigned i = 0; i < 32; i++)
                                want[j][i] = NAN;
                    else
                        snprintf(seen_ids[nseen++ % 64], 96, "%s", json_string_value(rid));
                    json_t *g = apply(want, &st, msg, sizeof msg);
                    json_t *r = json_pack("{s:O, s:b, s:o}", "request_id", rid, "applied", !dup,
                                          "gpus", g);
                    ret = st == 200 ? reply(c, 200, "application/json", json_dumps(r, JSON_COMPACT))
                                    : err(c, st, msg);
                    json_decref(r);
                }
            }
            json_decref(o);
        }
    } else {
        ret = err(c, 404, "no such endpoint");
    }
    pthread_mutex_unlock(&mu);
    return ret == MHD_YES ? MHD_YES : MHD_NO;
}

static void done(void *cls, struct MHD_Connection *c, void **pp, enum MHD_RequestTerminationCode t)
{
    (void)cls;
    (void)c;
    (void)t;
    body *b = *pp;
    if (b) {
        free(b->p);
        free(b);
    }
    *pp = NULL;
}

static void on_sig(int s)
{
    (void)s;
    stop = 1;
}

int main(int argc, char **argv)
{
    const char *port_file = NULL;
    unsigned port = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) {
            fprintf(stderr, "pfi_test_agent: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--port-file") == 0)
            port_file = v;
        else if (strcmp(a, "--port") == 0)
            port = (unsigned)strtoul(v, NULL, 10);
        else if (strcmp(a, "--token") == 0)
            token = v;
        else if (strcmp(a, "--host") == 0)
            snprintf(host, sizeof host, "%s", v);
        else if (strcmp(a, "--speed") == 0)
            speed = strtod(v, NULL);
        else if (strcmp(a, "--job") == 0 && njobs < MAX_JOBS) {
            job *j = &jobs[njobs];
            double alpha = 0.8, tput = 10000, pu = 650;
            unsigned g = 8;
            char spec[512];
            if (sscanf(v, "%63[^:]:%15[^:]:%u:%lf:%lf:%lf", j->id, j->cls, &g, &alpha, &tput,
                       &pu) < 5 ||
                g == 0 || g > 32) {
                fprintf(stderr, "pfi_test_agent: --job ID:CLASS:GPUS:ALPHA:TPUT[:PU]\n");
                return 2;
            }
            j->gpus = g;
            unsigned seed = 1;
            for (const char *p = host; *p; p++)
                seed = seed * 31 + (unsigned char)*p;
            seed = seed * 17 + (unsigned)njobs;
            snprintf(spec, sizeof spec,
                     "gpus=%u,alpha=%g,tput=%g,pu=%g,startup=0,ckpt=0,tau=0.05,report=0.2,"
                     "noise=0.005,seed=%u",
                     g, alpha, tput, pu, seed % 100000);
            pfi_gpu_config cfg = {.kind = PFI_GPU_EMULATED, .emulate = spec};
            pfi_diag d;
            unsigned idx[32];
            for (unsigned k = 0; k < g; k++)
                idx[k] = k;
            if (pfi_gpu_open(&cfg, &j->g, &d) != PFI_OK ||
                pfi_capctl_create(j->g, idx, g, NULL, NULL, &j->cc, &d) != PFI_OK) {
                fprintf(stderr, "pfi_test_agent: %s\n", d.message);
                return 1;
            }
            pfi_gpu_job_start(j->g);
            for (unsigned k = 0; k < g; k++)
            {
                char id[64];
                memcpy(id, j->id, sizeof id);
                snprintf(j->uuid[k], sizeof j->uuid[k], "GPU-%.30s-%.40s-%u", host, id, k % 100);
            }
            njobs++;
        } else {
            fprintf(stderr, "pfi_test_agent: unknown option %s\n", a);
            return 2;
        }
    }
    t0 = mono();
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port, NULL, NULL,
        handle, NULL, MHD_OPTION_NOTIFY_COMPLETED, done, NULL, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)256, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "pfi_test_agent: cannot listen\n");
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    if (port_file != NULL) {
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
        FILE *f = fopen(tmp, "w");
        if (f == NULL)
            return 1;
        fprintf(f, "%u\n", (unsigned)info->port);
        fclose(f);
        rename(tmp, port_file);
    }
    signal(SIGTERM, on_sig);
    signal(SIGINT, on_sig);
    while (!stop)
        pause();
    MHD_stop_daemon(d);
    for (size_t j = 0; j < njobs; j++) {
        pfi_capctl_restore(jobs[j].cc, NULL, NULL);
        pfi_capctl_destroy(jobs[j].cc);
        pfi_gpu_close(jobs[j].g);
    }
    return 0;
}
