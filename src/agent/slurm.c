/*
 * pfid's registration socket for Slurm jobs and the job accounting it keeps (slurm.h).
 *
 * A job registered by the prolog owns its GPUs until its epilog (or until pfid stops): the
 * mapping is imposed on the snapshot every sampling round, so a GPU allocated but idle is the
 * job's. At the end the job's GPUs go back to their original limits at once (not at lease
 * end) and the answer carries the job's accounting:
 *   energy_j      Σ over the job's GPUs of (energy counter now − at the job's start), J;
 *                 absent when a counter was unreadable at either end
 *   duration_s    registration to end, s
 *   capped_s      time with any of its GPUs below its original limit, s
 *   caps_w        the distinct caps (W) seen on its GPUs, lowest first (at most 16)
 *   tokens_lost   Σ over capped intervals of max(0, base − tokens/s)·dt, where base is the
 *                 time-weighted mean tokens/s while uncapped; absent without both
 *
 * A start naming a GPU that another registered job holds takes it over (Slurm gives a GPU
 * to one job at a time: the other job's end was missed); that job ends when it has no GPU
 * left. The registry is written to SOCKET.jobs at every change (temp + rename) and read back
 * when pfid starts, so a restarted pfid keeps its jobs and their energy baselines.
 */
#define _GNU_SOURCE
#include "slurm.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "pfi/atomic_file.h"
#include "slurm/proto.h"

#define SJOBS_MAX 64
#define CAPS_MAX 16
#define CONN_TIMEOUT_S 2.0

typedef struct sjob {
    bool used;
    char id[PFI_SLURM_ID_MAX];
    char user[PFI_SLURM_USER_MAX];
    char cls[PFI_SLURM_ID_MAX];
    char flex[32];
    double min_tput, pfi; /* NaN when not given */
    bool gpu[PFID_MAX_GPUS];
    unsigned ngpus;
    double start_wall_s, start_mono_s, last_mono_s;
    double e0_j[PFID_MAX_GPUS]; /* energy counters at the start; NaN unreadable */
    double capped_s;
    double caps_w[CAPS_MAX];
    unsigned ncaps;
    double base_sum, base_t, lost_tok; /* base: tokens/s × s while uncapped */
    bool lost_known;
} sjob;

#define ENDED_MAX 64

/* The registry, owned by the agent (a->slurm; pfid_slurm_stop frees it). */
struct pfid_slurm {
    pthread_mutex_t lock;
    sjob jobs[SJOBS_MAX];
    char ended_id[ENDED_MAX][PFI_SLURM_ID_MAX]; /* the last jobs that ended, for "report" */
    char *ended_acct[ENDED_MAX];                /* their accounting JSON (owned) */
    unsigned ended_next;
    int listen_fd;
    int wake[2];
    pthread_t thread;
    bool running;
    char path[PFID_PATH_MAX];
};

/* a->slurm, made on first use (pfid_slurm_start; tests call pfid_slurm_handle directly);
 * NULL when out of memory. */
static struct pfid_slurm *reg_make(pfid_agent *a)
{
    if (a->slurm == NULL) {
        struct pfid_slurm *r = calloc(1, sizeof *r);
        if (r == NULL)
            return NULL;
        pthread_mutex_init(&r->lock, NULL);
        r->listen_fd = r->wake[0] = r->wake[1] = -1;
        a->slurm = r;
    }
    return a->slurm;
}

static json_t *accounting(pfid_agent *a, const sjob *j, double now);
static int gpu_of(pfid_agent *a, const char *s);
static bool opt_num(json_t *req, const char *key, double lo, double hi, bool lo_open, double *out);
static sjob *find(pfid_agent *a, const char *id);
static void account(pfid_agent *a, sjob *j, double now);

/* Keep an ended job's accounting for "report". Caller holds a->slurm->lock. */
static void keep_ended(pfid_agent *a, const char *job, json_t *acct)
{
    char *keep = json_dumps(acct, JSON_COMPACT | JSON_REAL_PRECISION(12));
    if (keep == NULL)
        return;
    unsigned r = a->slurm->ended_next++ % ENDED_MAX;
    free(a->slurm->ended_acct[r]);
    a->slurm->ended_acct[r] = keep;
    snprintf(a->slurm->ended_id[r], sizeof a->slurm->ended_id[r], "%s", job);
}

/* The registry as JSON, for the state file. Caller holds snap_lock and a->slurm->lock. */
static char *registry_json(pfid_agent *a)
{
    json_t *arr = json_array();
    double wall = pfid_wall_s(), mono = pfid_mono_s();
    for (size_t s = 0; s < SJOBS_MAX; s++) {
        const sjob *j = &a->slurm->jobs[s];
        if (!j->used)
            continue;
        json_t *g = json_array(), *e0 = json_array(), *caps = json_array();
        for (unsigned k = 0; k < a->n_gpus; k++)
            if (j->gpu[k]) {
                json_array_append_new(g, json_string(a->gpus[k].info.uuid));
                json_array_append_new(e0,
                                      isfinite(j->e0_j[k]) ? json_real(j->e0_j[k]) : json_null());
            }
        for (unsigned c = 0; c < j->ncaps; c++)
            json_array_append_new(caps, json_real(j->caps_w[c]));
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:f, s:f, s:o}", "job", j->id, "user",
                              j->user, "class", j->cls, "flex", j->flex, "gpus", g, "e0_j", e0,
                              "start_wall_s", wall - (mono - j->start_mono_s), "capped_s",
                              j->capped_s, "caps_w", caps);
        if (o != NULL && isfinite(j->min_tput))
            json_object_set_new(o, "min_throughput", json_real(j->min_tput));
        if (o != NULL && isfinite(j->pfi))
            json_object_set_new(o, "pfi", json_real(j->pfi));
        if (o != NULL)
            json_array_append_new(arr, o);
    }
    char *t = json_dumps(arr, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(arr);
    return t;
}

/* Write the registry to SOCKET.jobs (whole or not at all) so that a restarted pfid keeps
 * its jobs; text from registry_json (freed here). Called without locks. */
static void save_registry(pfid_agent *a, char *text)
{
    if (text == NULL || a->cfg.slurm_socket[0] == '\0') {
        free(text);
        return;
    }
    char path[PFID_PATH_MAX + 8];
    snprintf(path, sizeof path, "%s.jobs", a->cfg.slurm_socket);
    pfi_atomic_file f;
    pfi_diag d;
    if (pfi_atomic_open_durable(&f, path, 0600, &d) == PFI_OK) {
        fputs(text, f.f);
        fputc('\n', f.f);
        if (pfi_atomic_commit(&f, &d) != PFI_OK)
            LOG_WARN("slurm: %s not written: %s", path, d.message);
    } else {
        LOG_WARN("slurm: %s not written: %s", path, d.message);
    }
    free(text);
}

/* Read SOCKET.jobs back (pfid restarted while jobs ran). Entries that do not check out
 * (bad id, a GPU this node does not have) are dropped with a warning. */
static void load_registry(pfid_agent *a)
{
    char path[PFID_PATH_MAX + 8];
    snprintf(path, sizeof path, "%s.jobs", a->cfg.slurm_socket);
    json_error_t je;
    json_t *arr = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (arr == NULL)
        return; /* none (a fresh start) or unreadable: no job to keep */
    double wall = pfid_wall_s(), mono = pfid_mono_s();
    size_t i, kept = 0;
    json_t *o;
    pthread_mutex_lock(&a->snap_lock);
    pthread_mutex_lock(&a->slurm->lock);
    json_array_foreach(arr, i, o)
    {
        const char *id = json_string_value(json_object_get(o, "job"));
        json_t *g = json_object_get(o, "gpus"), *e0 = json_object_get(o, "e0_j");
        double start = json_number_value(json_object_get(o, "start_wall_s"));
        if (id == NULL || !pfi_slurm_valid_job(id) || !json_is_array(g) || find(a, id) != NULL ||
            !(start >= 0 && start <= wall) || kept >= SJOBS_MAX) {
            /* (a start_wall_s before 1970, after now or none is no time a job started) */
            LOG_WARN("slurm: %s: entry %zu dropped (not a job this pfid can keep: job id, GPU "
                     "UUIDs, start_wall_s a Unix time not after now)",
                     path, i);
            continue;
        }
        sjob *j = &a->slurm->jobs[kept];
        memset(j, 0, sizeof *j);
        for (unsigned k = 0; k < PFID_MAX_GPUS; k++)
            j->e0_j[k] = NAN;
        size_t m;
        json_t *u;
        bool ok = true;
        json_array_foreach(g, m, u)
        {
            int k = json_is_string(u) ? gpu_of(a, json_string_value(u)) : -1;
            if (k < 0 || isdigit((unsigned char)json_string_value(u)[0])) { /* UUIDs only */
                ok = false;
                break;
            }
            j->gpu[k] = true;
            j->ngpus++;
            json_t *e = json_array_get(e0, m);
            j->e0_j[k] = json_is_number(e) ? json_number_value(e) : NAN;
        }
        const char *user = json_string_value(json_object_get(o, "user"));
        const char *cls = json_string_value(json_object_get(o, "class"));
        const char *flex = json_string_value(json_object_get(o, "flex"));
        if (!ok || (user && user[0] && !pfi_slurm_valid_user(user)) ||
            (cls && cls[0] && !pfi_slurm_valid_class(cls)) ||
            (flex && flex[0] && pfi_slurm_tier_find(flex) == NULL)) {
            memset(j, 0, sizeof *j);
            LOG_WARN("slurm: %s: job %s dropped (a GPU or a value does not check out)", path, id);
            continue;
        }
        j->used = true;
        snprintf(j->id, sizeof j->id, "%s", id);
        snprintf(j->user, sizeof j->user, "%s", user ? user : "");
        snprintf(j->cls, sizeof j->cls, "%s", cls ? cls : "");
        snprintf(j->flex, sizeof j->flex, "%s", flex ? flex : "");
        j->min_tput = j->pfi = NAN;
        opt_num(o, "min_throughput", 0, 1, false, &j->min_tput);
        opt_num(o, "pfi", 0, 100, true, &j->pfi);
        j->start_wall_s = start;
        j->start_mono_s = mono - (wall - start);
        j->last_mono_s = mono;
        double c = json_number_value(json_object_get(o, "capped_s"));
        j->capped_s = isfinite(c) && c >= 0 ? c : 0;
        json_t *caps = json_object_get(o, "caps_w"), *v;
        json_array_foreach(caps, m, v) if (json_is_number(v) && j->ncaps < CAPS_MAX)
            j->caps_w[j->ncaps++] = json_number_value(v);
        kept++;
        LOG_INFO("slurm: job %s kept from %s (%u GPU(s))", id, path, j->ngpus);
    }
    pthread_mutex_unlock(&a->slurm->lock);
    pthread_mutex_unlock(&a->snap_lock);
    json_decref(arr);
}

static sjob *find(pfid_agent *a, const char *id)
{
    for (size_t k = 0; k < SJOBS_MAX; k++)
        if (a->slurm->jobs[k].used && strcmp(a->slurm->jobs[k].id, id) == 0)
            return &a->slurm->jobs[k];
    return NULL;
}

bool pfid_slurm_claimed(pfid_agent *a, unsigned k)
{
    if (a->slurm == NULL)
        return false;
    bool c = false;
    pthread_mutex_lock(&a->slurm->lock);
    for (size_t j = 0; j < SJOBS_MAX && !c && k < PFID_MAX_GPUS; j++)
        c = a->slurm->jobs[j].used && a->slurm->jobs[j].gpu[k];
    pthread_mutex_unlock(&a->slurm->lock);
    return c;
}

static char *answer(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
    json_decref(o);
    return s;
}

static char *refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *refuse(const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return answer(json_pack("{s:b, s:s}", "ok", 0, "error", msg));
}

/* The agent's GPU for a Slurm GPU name: an index (the gres index: /dev/nvidiaN) or a UUID. */
static int gpu_of(pfid_agent *a, const char *s)
{
    if (s[0] == '\0')
        return -1;
    if (!isdigit((unsigned char)s[0])) { /* a UUID (GPU-, MIG-, or a backend's own) */
        for (unsigned k = 0; k < a->n_gpus; k++)
            if (strcmp(a->gpus[k].info.uuid, s) == 0)
                return (int)k;
        return -1;
    }
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v >= a->n_gpus || s[0] == '-' || s[0] == '+')
        return -1;
    return (int)v;
}

static const char *opt_str(json_t *req, const char *key, bool *bad)
{
    json_t *v = json_object_get(req, key);
    if (v == NULL || json_is_null(v))
        return NULL;
    if (!json_is_string(v))
        *bad = true;
    return json_string_value(v);
}

static bool opt_num(json_t *req, const char *key, double lo, double hi, bool lo_open, double *out)
{
    *out = NAN;
    json_t *v = json_object_get(req, key);
    if (v == NULL || json_is_null(v))
        return true;
    if (!json_is_number(v))
        return false;
    double x = json_number_value(v);
    if (!isfinite(x) || x > hi || x < lo || (lo_open && x <= lo))
        return false;
    *out = x;
    return true;
}

static char *handle_start(pfid_agent *a, json_t *req)
{
    bool bad = false;
    const char *job = opt_str(req, "job", &bad), *user = opt_str(req, "user", &bad),
               *cls = opt_str(req, "class", &bad), *flex = opt_str(req, "flex", &bad);
    if (bad)
        return refuse("job, user, class and flex must be strings");
    if (job == NULL || !pfi_slurm_valid_job(job))
        return refuse("job: a Slurm job id (1..15 decimal digits) was expected");
    if (user != NULL && !pfi_slurm_valid_user(user))
        return refuse("user: a user name of [A-Za-z0-9._-] (1..63) was expected");
    if (cls != NULL && (!pfi_slurm_valid_class(cls) || !pfid_valid_id(cls)))
        return refuse("class: 1..127 characters of [A-Za-z0-9._:@+=-] were expected");
    if (flex != NULL && pfi_slurm_tier_find(flex) == NULL)
        return refuse("flex: one of %s was expected", pfi_slurm_tier_names());
    double min_tput, pfi;
    if (!opt_num(req, "min_throughput", 0, 1, false, &min_tput))
        return refuse("min_throughput: a fraction in [0, 1] was expected");
    if (!opt_num(req, "pfi", 0, 100, true, &pfi))
        return refuse("pfi: a number in (0, 100] was expected");
    json_t *gl = json_object_get(req, "gpus");
    if (gl != NULL && !json_is_array(gl))
        return refuse("gpus: an array of GPU indices or UUIDs was expected");
    bool want[PFID_MAX_GPUS] = {false};
    unsigned n = 0;
    size_t i;
    json_t *v;
    json_array_foreach(gl, i, v)
    {
        const char *s = json_string_value(v);
        int k = s != NULL && strlen(s) < 96 ? gpu_of(a, s) : -1;
        if (k < 0)
            return refuse("gpus[%zu]: '%.96s' is not a GPU of this node (%u GPUs; an index "
                          "0..%u or a UUID was expected)",
                          i, s ? s : "(not a string)", a->n_gpus, a->n_gpus ? a->n_gpus - 1 : 0);
        if (!want[k])
            n++;
        want[k] = true;
    }
    double now = pfid_mono_s();
    pthread_mutex_lock(&a->snap_lock);
    pthread_mutex_lock(&a->slurm->lock);
    sjob *j = find(a, job);
    bool again = j != NULL;
    for (size_t s = 0; j == NULL && s < SJOBS_MAX; s++)
        if (!a->slurm->jobs[s].used)
            j = &a->slurm->jobs[s];
    char *out = NULL;
    if (j == NULL) {
        out = refuse("%d jobs are registered already", SJOBS_MAX);
    } else {
        /* Slurm gives a GPU to one job at a time: an older owner's epilog was missed (pfid
         * was down, the node lost it); that job gives the GPU up */
        for (size_t s = 0; s < SJOBS_MAX; s++) {
            sjob *o = &a->slurm->jobs[s];
            if (!o->used || o == j)
                continue;
            unsigned lost = 0;
            for (unsigned k = 0; k < a->n_gpus; k++)
                lost += want[k] && o->gpu[k];
            if (lost == 0)
                continue;
            LOG_WARN("slurm: job %s takes %u GPU(s) of job %s (whose end was missed)", job, lost,
                     o->id);
            account(a, o, now);
            if (lost == o->ngpus) { /* it has no GPU left: it ended, its accounting is kept */
                json_t *acct = accounting(a, o, now);
                keep_ended(a, o->id, acct);
                json_decref(acct);
                memset(o, 0, sizeof *o);
                continue;
            }
            for (unsigned k = 0; k < a->n_gpus; k++)
                if (want[k] && o->gpu[k]) {
                    o->gpu[k] = false;
                    o->ngpus--;
                }
        }
        if (!again) {
            memset(j, 0, sizeof *j);
            j->start_wall_s = pfid_wall_s();
            j->start_mono_s = j->last_mono_s = now;
            for (unsigned k = 0; k < PFID_MAX_GPUS; k++)
                j->e0_j[k] = NAN;
        }
        j->used = true;
        snprintf(j->id, sizeof j->id, "%s", job);
        snprintf(j->user, sizeof j->user, "%s", user ? user : "");
        snprintf(j->cls, sizeof j->cls, "%s", cls ? cls : "");
        snprintf(j->flex, sizeof j->flex, "%s", flex ? flex : "");
        j->min_tput = min_tput;
        j->pfi = pfi;
        j->ngpus = n;
        json_t *uu = json_array();
        for (unsigned k = 0; k < a->n_gpus; k++) {
            bool was = j->gpu[k];
            j->gpu[k] = want[k];
            if (!want[k])
                continue;
            pfid_gpu_state *g = &a->gpus[k];
            if (!was || !isfinite(j->e0_j[k]))
                j->e0_j[k] =
                    g->ever && (g->last.valid & PFI_SAMPLE_ENERGY) ? g->last.energy_j : NAN;
            snprintf(g->job, sizeof g->job, "%s", job);
            snprintf(g->cls, sizeof g->cls, "%s", cls ? cls : "");
            json_array_append_new(uu, json_string(g->info.uuid));
        }
        LOG_INFO("slurm: job %s (user %s, class %s, flex %s) registered on %u GPU(s)", job,
                 user ? user : "-", cls ? cls : "-", flex ? flex : "-", n);
        out = answer(json_pack("{s:b, s:s, s:o}", "ok", 1, "job", job, "gpus", uu));
    }
    char *state = registry_json(a);
    pthread_mutex_unlock(&a->slurm->lock);
    pthread_mutex_unlock(&a->snap_lock);
    save_registry(a, state);
    return out;
}

/* Put GPUs which[] back on their original limits now; the snapshot follows. */
static int restore_gpus(pfid_agent *a, const bool *which, char *msg, size_t msg_len)
{
    msg[0] = '\0';
    pthread_mutex_lock(&a->caps_lock);
    if (a->capctl == NULL) {
        pthread_mutex_unlock(&a->caps_lock);
        snprintf(msg, msg_len, "cap control unavailable: nothing to restore");
        return 0;
    }
    uint32_t target[PFID_MAX_GPUS];
    bool any = false, sel[PFID_MAX_GPUS] = {false};
    for (unsigned k = 0; k < a->n_gpus; k++) {
        target[k] = a->cur_mw[k];
        const pfi_gpu_limits *o = pfi_capctl_original(a->capctl, k);
        if (which[k] && o != NULL) {
            target[k] = o->current_mw;
            sel[k] = true;
            any = true;
        }
    }
    int n = 0;
    if (any) {
        pfi_cap_result res[PFID_MAX_GPUS];
        pfi_diag d;
        pfi_diag_clear(&d);
        pthread_mutex_lock(&a->gpu_lock);
        if (pfi_gpu_is_virtual_clock(a->gpu))
            pfi_gpu_sleep_until_s(a->gpu, pfid_mono_s() + a->clock_offset_s);
        pfi_error e = pfi_capctl_apply_subset(a->capctl, target, sel, res, &d);
        pthread_mutex_unlock(&a->gpu_lock);
        pthread_mutex_lock(&a->snap_lock);
        for (unsigned k = 0; k < a->n_gpus; k++) {
            if (!sel[k] || res[k].error != PFI_OK)
                continue;
            a->cur_mw[k] = target[k];
            a->gpus[k].limits.current_mw = target[k];
            a->gpus[k].limits.valid |= PFI_LIMIT_CURRENT;
            if (res[k].readback & PFI_LIMIT_ENFORCED) {
                a->gpus[k].limits.enforced_mw = res[k].enforced_mw;
                a->gpus[k].limits.valid |= PFI_LIMIT_ENFORCED;
            }
            n++;
        }
        pthread_mutex_unlock(&a->snap_lock);
        if (e != PFI_OK) {
            snprintf(msg, msg_len, "restore incomplete: %s (%s)", pfi_strerror(e), d.message);
            a->restore_pending = true;
            a->restore_retry_mono = pfid_mono_s() + 5;
        }
    }
    pthread_mutex_unlock(&a->caps_lock);
    return n;
}

/* Advance j's accounting to now. Caller holds snap_lock and a->slurm->lock. */
static void account(pfid_agent *a, sjob *j, double now)
{
    double dt = now - j->last_mono_s;
    j->last_mono_s = now;
    if (!(dt > 0))
        return;
    bool capped = false;
    for (unsigned k = 0; k < a->n_gpus; k++) {
        const pfid_gpu_state *g = &a->gpus[k];
        if (!j->gpu[k] || !(g->limits.valid & PFI_LIMIT_CURRENT) || !g->original_valid)
            continue;
        if (g->limits.current_mw + 500 < g->original_mw) { /* below the original by > 0.5 W */
            capped = true;
            double w = round(g->limits.current_mw / 1000.0);
            bool have = false;
            for (unsigned c = 0; c < j->ncaps; c++)
                have = have || j->caps_w[c] == w;
            if (!have && j->ncaps < CAPS_MAX) {
                unsigned c = j->ncaps++;
                while (c > 0 && j->caps_w[c - 1] > w) {
                    j->caps_w[c] = j->caps_w[c - 1];
                    c--;
                }
                j->caps_w[c] = w;
            }
        }
    }
    double tput;
    bool have_tput = pfid_job_throughput(a, j->id, now, &tput);
    if (capped) {
        j->capped_s += dt;
        if (have_tput && j->base_t > 0) {
            j->lost_tok += fmax(0, j->base_sum / j->base_t - tput) * dt;
            j->lost_known = true;
        }
    } else if (have_tput) {
        j->base_sum += tput * dt;
        j->base_t += dt;
    }
}

static json_t *accounting(pfid_agent *a, const sjob *j, double now)
{
    json_t *o = json_object();
    json_object_set_new(o, "job", json_string(j->id));
    json_object_set_new(o, "host", json_string(a->hostname));
    json_object_set_new(o, "gpus", json_integer(j->ngpus));
    json_object_set_new(o, "duration_s", json_real(round((now - j->start_mono_s) * 10) / 10));
    double e = 0;
    bool e_ok = j->ngpus > 0;
    for (unsigned k = 0; k < a->n_gpus; k++) {
        if (!j->gpu[k])
            continue;
        const pfid_gpu_state *g = &a->gpus[k];
        if (g->ever && (g->last.valid & PFI_SAMPLE_ENERGY) && isfinite(j->e0_j[k]) &&
            g->last.energy_j >= j->e0_j[k])
            e += g->last.energy_j - j->e0_j[k];
        else
            e_ok = false;
    }
    if (e_ok)
        json_object_set_new(o, "energy_j", json_real(round(e)));
    json_object_set_new(o, "capped_s", json_real(round(j->capped_s * 10) / 10));
    json_t *caps = json_array();
    for (unsigned c = 0; c < j->ncaps; c++)
        json_array_append_new(caps, json_real(j->caps_w[c]));
    json_object_set_new(o, "caps_w", caps);
    if (j->lost_known)
        json_object_set_new(o, "tokens_lost", json_real(round(j->lost_tok)));
    if (j->flex[0])
        json_object_set_new(o, "flex", json_string(j->flex));
    if (j->cls[0])
        json_object_set_new(o, "class", json_string(j->cls));
    return o;
}

static char *handle_end(pfid_agent *a, json_t *req)
{
    bool bad = false;
    const char *job = opt_str(req, "job", &bad);
    if (bad || job == NULL || !pfi_slurm_valid_job(job))
        return refuse("job: a Slurm job id (1..15 decimal digits) was expected");
    bool which[PFID_MAX_GPUS] = {false};
    json_t *acct = NULL;
    double now = pfid_mono_s();
    pthread_mutex_lock(&a->snap_lock);
    pthread_mutex_lock(&a->slurm->lock);
    sjob *j = find(a, job);
    if (j != NULL) {
        account(a, j, now);
        acct = accounting(a, j, now);
        for (unsigned k = 0; k < a->n_gpus; k++) {
            which[k] = j->gpu[k];
            if (which[k] && strcmp(a->gpus[k].job, job) == 0) {
                a->gpus[k].job[0] = '\0';
                a->gpus[k].cls[0] = '\0';
            }
        }
        memset(j, 0, sizeof *j);
        keep_ended(a, job, acct);
    }
    char *state = acct != NULL ? registry_json(a) : NULL;
    pthread_mutex_unlock(&a->slurm->lock);
    pthread_mutex_unlock(&a->snap_lock);
    if (acct == NULL)
        return refuse("job %s is not registered on this node", job);
    save_registry(a, state);
    char msg[600];
    int n = restore_gpus(a, which, msg, sizeof msg);
    LOG_INFO("slurm: job %s ended; %d GPU(s) back on their original limits%s%s", job, n,
             msg[0] ? ": " : "", msg);
    json_t *o = json_pack("{s:b, s:s, s:i, s:o}", "ok", msg[0] == '\0' || n >= 0, "job", job,
                          "restored", n, "accounting", acct);
    if (msg[0])
        json_object_set_new(o, "note", json_string(msg));
    return answer(o);
}

/* "report": a running job's accounting so far, or an ended one's (the last ENDED_MAX). */
static char *handle_report(pfid_agent *a, json_t *req)
{
    bool bad = false;
    const char *job = opt_str(req, "job", &bad);
    if (bad || job == NULL || !pfi_slurm_valid_job(job))
        return refuse("job: a Slurm job id (1..15 decimal digits) was expected");
    double now = pfid_mono_s();
    json_t *acct = NULL;
    bool running = false;
    pthread_mutex_lock(&a->snap_lock);
    pthread_mutex_lock(&a->slurm->lock);
    sjob *j = find(a, job);
    if (j != NULL) {
        account(a, j, now);
        acct = accounting(a, j, now);
        running = true;
    }
    for (unsigned k = 0; acct == NULL && k < ENDED_MAX; k++) {
        unsigned r = (a->slurm->ended_next + ENDED_MAX - 1 - k) % ENDED_MAX;
        if (a->slurm->ended_acct[r] != NULL && strcmp(a->slurm->ended_id[r], job) == 0)
            acct = json_loads(a->slurm->ended_acct[r], 0, NULL);
    }
    pthread_mutex_unlock(&a->slurm->lock);
    pthread_mutex_unlock(&a->snap_lock);
    if (acct == NULL)
        return refuse("job %s is neither registered on this node nor among the last %d ended", job,
                      ENDED_MAX);
    return answer(json_pack("{s:b, s:s, s:b, s:o}", "ok", 1, "job", job, "running", running,
                            "accounting", acct));
}

char *pfid_slurm_handle(pfid_agent *a, const char *text, size_t len, unsigned uid)
{
    if (reg_make(a) == NULL)
        return NULL;
    if (uid != 0)
        return refuse("only root may register jobs (peer uid %u)", uid);
    if (len > PFI_SLURM_REQ_MAX)
        return refuse("request larger than %d bytes", PFI_SLURM_REQ_MAX);
    json_error_t je;
    json_t *req = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (req == NULL || !json_is_object(req)) {
        json_decref(req);
        return refuse("request: a JSON object was expected (%.200s)",
                      req ? "not an object" : je.text);
    }
    const char *op = json_string_value(json_object_get(req, "op"));
    char *out;
    if (op != NULL && strcmp(op, "start") == 0)
        out = handle_start(a, req);
    else if (op != NULL && strcmp(op, "end") == 0)
        out = handle_end(a, req);
    else if (op != NULL && strcmp(op, "report") == 0)
        out = handle_report(a, req);
    else
        out = refuse("op: \"start\", \"end\" or \"report\" was expected");
    json_decref(req);
    return out;
}

void pfid_slurm_round(pfid_agent *a)
{
    if (a->slurm == NULL)
        return;
    double now = pfid_mono_s();
    pthread_mutex_lock(&a->snap_lock);
    pthread_mutex_lock(&a->slurm->lock);
    for (size_t s = 0; s < SJOBS_MAX; s++) {
        sjob *j = &a->slurm->jobs[s];
        if (!j->used)
            continue;
        for (unsigned k = 0; k < a->n_gpus; k++) {
            if (!j->gpu[k])
                continue;
            pfid_gpu_state *g = &a->gpus[k];
            snprintf(g->job, sizeof g->job, "%s", j->id);
            snprintf(g->cls, sizeof g->cls, "%s", j->cls);
            if (!isfinite(j->e0_j[k]) && g->ever && (g->last.valid & PFI_SAMPLE_ENERGY))
                j->e0_j[k] = g->last.energy_j;
        }
        account(a, j, now);
    }
    pthread_mutex_unlock(&a->slurm->lock);
    pthread_mutex_unlock(&a->snap_lock);
}

static void family(pfid_buf *b, const char *name, const char *type, const char *help)
{
    pfid_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void pfid_slurm_metrics(pfid_agent *a, pfid_buf *b)
{
    if (a->slurm == NULL)
        return;
    double now = pfid_mono_s();
    pthread_mutex_lock(&a->slurm->lock);
    family(b, "pfi_slurm_job_info", "gauge",
           "A Slurm job registered on this node (value always 1): user, class, tier.");
    for (size_t s = 0; s < SJOBS_MAX; s++) {
        const sjob *j = &a->slurm->jobs[s];
        if (!j->used)
            continue;
        pfid_buf_printf(b, "pfi_slurm_job_info{hpc_job=\"");
        pfid_buf_label(b, j->id);
        pfid_buf_printf(b, "\",user=\"");
        pfid_buf_label(b, j->user);
        pfid_buf_printf(b, "\",class=\"");
        pfid_buf_label(b, j->cls);
        pfid_buf_printf(b, "\",flex=\"");
        pfid_buf_label(b, j->flex);
        pfid_buf_printf(b, "\"} 1\n");
    }
    family(b, "pfi_gpu_hpc_job_info", "gauge",
           "The Slurm job a GPU is allocated to, busy or idle (value always 1).");
    for (size_t s = 0; s < SJOBS_MAX; s++)
        for (unsigned k = 0; k < a->n_gpus; k++) {
            if (!a->slurm->jobs[s].used || !a->slurm->jobs[s].gpu[k])
                continue;
            pfid_buf_printf(b, "pfi_gpu_hpc_job_info{gpu=\"%u\",uuid=\"", k);
            pfid_buf_label(b, a->gpus[k].info.uuid);
            pfid_buf_printf(b, "\",hpc_job=\"");
            pfid_buf_label(b, a->slurm->jobs[s].id);
            pfid_buf_printf(b, "\"} 1\n");
        }
    family(b, "pfi_slurm_job_energy_joules_total", "counter",
           "Energy of the job's GPUs on this node since the job started, J.");
    for (size_t s = 0; s < SJOBS_MAX; s++) {
        const sjob *j = &a->slurm->jobs[s];
        if (!j->used || j->ngpus == 0)
            continue;
        double e = 0;
        bool ok = true;
        for (unsigned k = 0; k < a->n_gpus && ok; k++) {
            if (!j->gpu[k])
                continue;
            const pfid_gpu_state *g = &a->gpus[k];
            ok = pfid_gpu_fresh(a, k, now) && (g->last.valid & PFI_SAMPLE_ENERGY) &&
                 isfinite(j->e0_j[k]) && g->last.energy_j >= j->e0_j[k];
            if (ok)
                e += g->last.energy_j - j->e0_j[k];
        }
        if (!ok)
            continue;
        pfid_buf_printf(b, "pfi_slurm_job_energy_joules_total{hpc_job=\"");
        pfid_buf_label(b, j->id);
        pfid_buf_printf(b, "\"} %.3f\n", e);
    }
    family(b, "pfi_slurm_job_capped_seconds_total", "counter",
           "Time the job has run with any of its GPUs below its original limit, s.");
    for (size_t s = 0; s < SJOBS_MAX; s++) {
        const sjob *j = &a->slurm->jobs[s];
        if (!j->used)
            continue;
        pfid_buf_printf(b, "pfi_slurm_job_capped_seconds_total{hpc_job=\"");
        pfid_buf_label(b, j->id);
        pfid_buf_printf(b, "\"} %.3f\n", j->capped_s);
    }
    pthread_mutex_unlock(&a->slurm->lock);
}

/* One connection: read the request (bounded in size and time), answer, close. */
static void serve(pfid_agent *a, int fd)
{
    struct ucred cr;
    socklen_t cl = sizeof cr;
    unsigned uid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 ? cr.uid : 65534u;
    struct timeval tv = {.tv_sec = (time_t)CONN_TIMEOUT_S, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    char *buf = malloc(PFI_SLURM_REQ_MAX + 1);
    size_t len = 0;
    bool over = false;
    char *out = NULL;
    if (buf != NULL && uid != 0) { /* answered at once, unread: a local user cannot stall us */
        LOG_WARN("slurm: registration from uid %u refused (root only)", uid);
        out = pfid_slurm_handle(a, "", 0, uid);
    } else if (buf != NULL) {
        double end = pfid_mono_s() + CONN_TIMEOUT_S;
        for (;;) {
            ssize_t r = recv(fd, buf + len, PFI_SLURM_REQ_MAX + 1 - len, 0);
            if (r < 0 && errno == EINTR && pfid_mono_s() < end)
                continue;
            if (r <= 0)
                break;
            len += (size_t)r;
            if (len > PFI_SLURM_REQ_MAX) {
                over = true;
                break;
            }
        }
        out = over ? refuse("request larger than %d bytes", PFI_SLURM_REQ_MAX)
                   : pfid_slurm_handle(a, buf, len, uid);
    }
    free(buf);
    if (out != NULL) {
        size_t n = strlen(out), off = 0;
        while (off < n) {
            ssize_t w = send(fd, out + off, n - off, MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        free(out);
    }
    if (uid != 0) { /* drain what the refused peer sent (briefly), so that it reads the
                       answer instead of a reset */
        shutdown(fd, SHUT_WR);
        struct timeval brief = {.tv_sec = 0, .tv_usec = 200000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &brief, sizeof brief);
        char sink[4096];
        for (int k = 0; k < 16 && recv(fd, sink, sizeof sink, 0) > 0; k++) {
        }
    }
    close(fd);
}

static void *thread_main(void *arg)
{
    pfid_agent *a = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = a->slurm->listen_fd, .events = POLLIN},
                              {.fd = a->slurm->wake[0], .events = POLLIN}};
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || (p[1].revents & (POLLIN | POLLHUP)))
            break;
        if (p[0].revents & POLLIN) {
            int fd = accept4(a->slurm->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0)
                serve(a, fd);
        }
    }
    return NULL;
}

int pfid_slurm_start(pfid_agent *a)
{
    const char *path = a->cfg.slurm_socket;
    if (path[0] == '\0')
        return 0;
    if (reg_make(a) == NULL) {
        LOG_ERROR("slurm_socket: out of memory");
        return -1;
    }
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path) {
        LOG_ERROR("slurm_socket %s: longer than %zu bytes", path, sizeof sa.sun_path - 1);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            LOG_ERROR("slurm_socket %s: exists and is not a socket; not removed", path);
            return -1;
        }
        unlink(path); /* a socket left by an earlier pfid */
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 16) != 0) {
        LOG_ERROR("slurm_socket %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    /* anyone may connect, so a non-root caller gets an answer saying why it is refused;
     * the check is SO_PEERCRED's uid, not the file mode */
    chmod(path, 0666);
    if (pipe2(a->slurm->wake, O_CLOEXEC) != 0) {
        close(fd);
        unlink(path);
        return -1;
    }
    a->slurm->listen_fd = fd;
    snprintf(a->slurm->path, sizeof a->slurm->path, "%s", path);
    load_registry(a);
    if (pthread_create(&a->slurm->thread, NULL, thread_main, a) != 0) {
        LOG_ERROR("slurm_socket: cannot start its thread");
        pfid_slurm_stop(a);
        return -1;
    }
    a->slurm->running = true;
    LOG_INFO("slurm: registration socket %s (root only)", path);
    return 0;
}

void pfid_slurm_stop(pfid_agent *a)
{
    if (a->slurm == NULL)
        return;
    if (a->slurm->running) {
        ssize_t w = write(a->slurm->wake[1], "x", 1);
        (void)w;
        pthread_join(a->slurm->thread, NULL);
        a->slurm->running = false;
    }
    if (a->slurm->listen_fd >= 0) {
        close(a->slurm->listen_fd);
        a->slurm->listen_fd = -1;
        unlink(a->slurm->path);
    }
    pthread_mutex_lock(&a->slurm->lock);
    for (unsigned k = 0; k < ENDED_MAX; k++) {
        free(a->slurm->ended_acct[k]);
        a->slurm->ended_acct[k] = NULL;
    }
    memset(a->slurm->jobs, 0, sizeof a->slurm->jobs);
    pthread_mutex_unlock(&a->slurm->lock);
    for (int k = 0; k < 2; k++)
        if (a->slurm->wake[k] >= 0) {
            close(a->slurm->wake[k]);
            a->slurm->wake[k] = -1;
        }
    pthread_mutex_destroy(&a->slurm->lock);
    free(a->slurm);
    a->slurm = NULL;
}
