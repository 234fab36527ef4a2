/*
 * The sampler: one thread reads every GPU at absolute monotonic deadlines t0 + k·interval and
 * keeps the snapshot that /metrics and /v1/state serve. It is the only place telemetry is
 * read from the backend, so a scrape never waits on a GPU.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "slurm.h"

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

pfid_job_tput *pfid_tput_slot(pfid_agent *a, const char *job, bool create)
{
    for (size_t k = 0; k < a->n_tput; k++)
        if (strcmp(a->tput[k].id, job) == 0)
            return &a->tput[k];
    if (!create || a->n_tput == PFID_MAX_JOBS)
        return NULL;
    pfid_job_tput *t = &a->tput[a->n_tput++];
    memset(t, 0, sizeof *t);
    snprintf(t->id, sizeof t->id, "%s", job);
    t->tok_s = NAN;
    return t;
}

void pfid_agent_init(pfid_agent *a)
{
    if (a->cfg.hostname[0] != '\0')
        snprintf(a->hostname, sizeof a->hostname, "%s", a->cfg.hostname);
    else if (gethostname(a->hostname, sizeof a->hostname - 1) != 0)
        snprintf(a->hostname, sizeof a->hostname, "localhost");
    pthread_mutex_init(&a->gpu_lock, NULL);
    pthread_mutex_init(&a->snap_lock, NULL);
    pthread_mutex_init(&a->caps_lock, NULL);
    pthread_mutex_init(&a->stop_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->stop_cond, &ca);
    pthread_condattr_destroy(&ca);
}

int pfid_sampler_init(pfid_agent *a)
{
    a->node.power_w = a->node.counter_uj = a->node.last_v = NAN; /* no node reading yet */
    a->node.err[0] = '\0';
    pfi_diag d;
    unsigned n = 0;
    pfi_error e = pfi_gpu_count(a->gpu, &n, &d);
    if (e != PFI_OK) {
        LOG_ERROR("cannot count GPUs: %s: %s", pfi_strerror(e), d.message);
        return -1;
    }
    if (n > PFID_MAX_GPUS) {
        LOG_WARN("%u GPUs found; only the first %d are watched", n, PFID_MAX_GPUS);
        n = PFID_MAX_GPUS;
    }
    a->n_gpus = n;
    a->gpus = calloc(n ? n : 1, sizeof *a->gpus);
    if (a->gpus == NULL) {
        LOG_ERROR("out of memory");
        return -1;
    }
    if (pfi_gpu_is_virtual_clock(a->gpu))
        a->clock_offset_s = pfi_gpu_now_s(a->gpu) - pfid_mono_s();
    for (unsigned i = 0; i < n; i++) {
        pfid_gpu_state *g = &a->gpus[i];
        e = pfi_gpu_get_info(a->gpu, i, &g->info, &d);
        if (e != PFI_OK) {
            LOG_WARN("GPU %u: cannot read its identity: %s", i, d.message);
            g->info.index = i;
        }
        if (pfi_gpu_read_limits(a->gpu, i, &g->limits, NULL) == PFI_OK &&
            (g->limits.valid & PFI_LIMIT_CURRENT)) {
            g->original_mw = g->limits.current_mw;
            g->original_valid = true;
        }
        LOG_INFO("GPU %u: %s (%s)", i, g->info.uuid[0] ? g->info.uuid : "no UUID",
                 g->info.name[0] ? g->info.name : "unknown model");
    }
    if ((pfi_gpu_caps(a->gpu) & PFI_GPU_CAP_JOBS) && pfi_gpu_job_start(a->gpu) == PFI_OK)
        LOG_INFO("emulated training job started on %u GPU(s)", n);
    return 0;
}

/* Energy-based power over the last interval when the counter is readable, else the reading. */
static void update_gpu(pfid_agent *a, pfid_gpu_state *g, const pfi_gpu_sample *s,
                       const pfi_gpu_limits *l, bool limits_ok, double mono, double wall)
{
    unsigned ring = a->cfg.ring < 2 ? 2 : a->cfg.ring > PFID_RING_MAX ? PFID_RING_MAX : a->cfg.ring;
    double e_j = (s->valid & PFI_SAMPLE_ENERGY) ? s->energy_j : NAN;
    double p_w = (s->valid & PFI_SAMPLE_POWER) ? s->power_w : NAN;
    g->power_valid = false;
    if (g->ring_n > 0 && isfinite(e_j)) {
        const pfid_ring_entry *prev = &g->ring[(g->ring_head + ring - 1) % ring];
        double dt = s->t_s - prev->t_s, de = e_j - prev->energy_j;
        if (isfinite(prev->energy_j) && dt > 0 && de >= 0) {
            g->power_w = de / dt;
            g->power_valid = true;
        }
    }
    if (!g->power_valid && isfinite(p_w)) {
        g->power_w = p_w;
        g->power_valid = true;
    }
    g->ring[g->ring_head] = (pfid_ring_entry){.t_s = s->t_s, .energy_j = e_j, .power_w = p_w};
    g->ring_head = (g->ring_head + 1) % ring;
    if (g->ring_n < ring)
        g->ring_n++;
    g->last = *s;
    g->last_mono_s = mono;
    g->last_wall_s = wall;
    g->up = g->ever = true;
    if (limits_ok)
        g->limits = *l;
}

void pfid_sample_round(pfid_agent *a)
{
    double cpu0 = thread_cpu_s();
    uint64_t ok = 0, errs = 0;
    for (unsigned i = 0; i < a->n_gpus; i++) {
        pfi_gpu_sample s;
        pfi_gpu_limits l;
        pfi_diag d;
        pthread_mutex_lock(&a->gpu_lock);
        if (pfi_gpu_is_virtual_clock(a->gpu))
            pfi_gpu_sleep_until_s(a->gpu, pfid_mono_s() + a->clock_offset_s);
        pfi_error e = pfi_gpu_read_sample(a->gpu, i, &s, &d);
        bool lim_ok = e == PFI_OK && pfi_gpu_read_limits(a->gpu, i, &l, NULL) == PFI_OK;
        pthread_mutex_unlock(&a->gpu_lock);
        double mono = pfid_mono_s(), wall = pfid_wall_s();
        /* the sample's own time on the wall clock, not this line's: a sampler preempted
         * between the read and here (a loaded host) would stamp the energy counter late, and
         * a rate over a 1 s span taken from the stamps would be off by that delay. The
         * backend's time is CLOCK_MONOTONIC, or a virtual clock clock_offset_s ahead of it. */
        if (e == PFI_OK && isfinite(s.t_s)) {
            double t_mono = pfi_gpu_is_virtual_clock(a->gpu) ? s.t_s - a->clock_offset_s : s.t_s;
            double late = mono - t_mono;
            if (late >= 0 && late < 10)
                wall -= late;
        }
        pthread_mutex_lock(&a->snap_lock);
        pfid_gpu_state *g = &a->gpus[i];
        if (e == PFI_OK) {
            if (!g->up && g->ever)
                LOG_INFO("GPU %u: readable again", i);
            update_gpu(a, g, &s, &l, lim_ok, mono, wall);
            ok++;
        } else {
            if (g->up || !g->ever)
                LOG_WARN("GPU %u: %s: %s", i, pfi_strerror(e), d.message);
            g->up = false;
            g->ever = true;
            errs++;
        }
        pthread_mutex_unlock(&a->snap_lock);
    }
    pfid_node_power_round(a);
    pfid_jobs_refresh(a);
    pfid_slurm_round(a); /* a registered Slurm job owns its GPUs, process or not */
    pfid_jobs_poll_throughput(a);
    double cpu = thread_cpu_s() - cpu0;
    pthread_mutex_lock(&a->snap_lock);
    a->samples_total += ok;
    a->sample_errors_total += errs;
    a->rounds_total++;
    a->round_cost_s = cpu;
    a->heartbeat_mono_s = pfid_mono_s();
    a->sampled_wall_s = pfid_wall_s();
    pthread_mutex_unlock(&a->snap_lock);
}

static void *sampler_main(void *arg)
{
    pfid_agent *a = arg;
    double next = pfid_mono_s() + a->cfg.interval_s;
    pthread_mutex_lock(&a->stop_lock);
    while (!a->stop) {
        struct timespec ts;
        ts.tv_sec = (time_t)floor(next);
        ts.tv_nsec = (long)((next - floor(next)) * 1e9);
        if (ts.tv_nsec > 999999999L)
            ts.tv_nsec = 999999999L;
        int rc = pthread_cond_timedwait(&a->stop_cond, &a->stop_lock, &ts);
        if (a->stop)
            break;
        if (rc != ETIMEDOUT && pfid_mono_s() < next)
            continue;
        pthread_mutex_unlock(&a->stop_lock);
        pfid_sample_round(a);
        next += a->cfg.interval_s;
        double now = pfid_mono_s();
        if (next < now) /* a round overran: skip the missed deadlines, keep the grid */
            next += ceil((now - next) / a->cfg.interval_s) * a->cfg.interval_s;
        pthread_mutex_lock(&a->stop_lock);
    }
    pthread_mutex_unlock(&a->stop_lock);
    return NULL;
}

int pfid_sampler_start(pfid_agent *a)
{
    pfid_sample_round(a);
    if (pfid_clock_emulated())
        return 0; /* the rounds come with the clock's advances (clock.c) */
    a->stop = false;
    if (pthread_create(&a->sampler, NULL, sampler_main, a) != 0) {
        LOG_ERROR("cannot start the sampler thread");
        return -1;
    }
    a->sampler_running = true;
    return 0;
}

void pfid_sampler_stop(pfid_agent *a)
{
    if (!a->sampler_running)
        return;
    pthread_mutex_lock(&a->stop_lock);
    a->stop = true;
    pthread_cond_signal(&a->stop_cond);
    pthread_mutex_unlock(&a->stop_lock);
    pthread_join(a->sampler, NULL);
    a->sampler_running = false;
}
