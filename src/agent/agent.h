/*
 * pfid — the node agent (DESIGN §8): samples the node's GPUs into a snapshot, maps GPUs to
 * jobs, serves Prometheus metrics and the cap API of docs/agent-api.md.
 *
 * Threads and locks. The sampler thread is the only reader of GPU telemetry; HTTP worker
 * threads never call the backend except to set caps (PUT/DELETE /v1/caps). A pfi_gpu handle
 * is not thread-safe, so every backend call holds gpu_lock. Scrapes and /v1/state read only
 * the snapshot (snap_lock). Lock order, when nested: caps_lock, then gpu_lock, then
 * snap_lock; nothing takes caps_lock while holding another.
 */
#ifndef PFID_AGENT_H
#define PFID_AGENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "config.h"
#include "mapping.h"
#include "pfi/capctl.h"
#include "pfi/gpu.h"
#include "pfi/http.h"

#define PFID_MAX_GPUS 64
#define PFID_MAX_JOBS 256
#define PFID_RING_MAX 600
#define PFID_IDEM_SLOTS 64

/* One sample kept in a GPU's ring. */
typedef struct pfid_ring_entry {
    double t_s;      /* backend monotonic time, s */
    double energy_j; /* NaN when unreadable */
    double power_w;  /* instantaneous reading; NaN when unreadable */
} pfid_ring_entry;

/* What the snapshot holds about one GPU. Fields are valid only as their flags say. */
typedef struct pfid_gpu_state {
    pfi_gpu_info info;   /* read once at start */
    bool up;             /* the last read succeeded */
    bool ever;           /* at least one good sample */
    pfi_gpu_sample last; /* last good sample */
    double last_mono_s;  /* CLOCK_MONOTONIC of the last good sample */
    double last_wall_s;  /* wall clock of the last good sample (labels only) */
    double power_w;      /* energy-based over the last interval, else the reading */
    bool power_valid;
    pfi_gpu_limits limits; /* last read (valid flags inside) */
    uint32_t original_mw;  /* limit before pfid changed it (journalled) */
    bool original_valid;
    char job[PFID_ID_MAX]; /* "" when no job */
    char cls[PFID_ID_MAX];
    pfid_ring_entry ring[PFID_RING_MAX];
    unsigned ring_head, ring_n;
} pfid_gpu_state;

/* A job's throughput, from a log, the emulated job or POST /v1/jobs/{id}/throughput. */
typedef struct pfid_job_tput {
    char id[PFID_ID_MAX];
    double tok_s;
    double mono_s; /* when it was reported */
} pfid_job_tput;

/* The lease as the snapshot shows it. */
typedef struct pfid_lease_view {
    bool active;  /* caps set by a PUT are in force */
    bool holding; /* lease expired, caps held (policy hold) until hold_until */
    char request_id[PFID_ID_MAX];
    char controller[PFID_ID_MAX]; /* the holder's id ("" none: fencing off) */
    double epoch;                 /* the holder's epoch (NaN none) */
    double expires_mono;          /* lease end, CLOCK_MONOTONIC */
    double revert_mono;           /* when the caps go back to the originals (lease or hold end) */
} pfid_lease_view;

typedef struct pfid_agent {
    pfid_config cfg;
    char config_path[PFID_PATH_MAX];
    char hostname[256];
    pfi_http_tokens tokens; /* n 0: no token, every write is refused (SIGHUP replaces it) */

    pfi_gpu *gpu;
    pthread_mutex_t gpu_lock;
    unsigned n_gpus;
    double clock_offset_s; /* emulated: backend time = monotonic + offset */

    /* snapshot */
    pthread_mutex_t snap_lock;
    pfid_gpu_state *gpus; /* [n_gpus] */
    pfid_job_tput tput[PFID_MAX_JOBS];
    size_t n_tput;
    pfid_mapping mapping; /* static mapping (jobs = static) */
    pfid_lease_view lease;
    double heartbeat_mono_s; /* end of the last complete sampling round */
    double sampled_wall_s;
    uint64_t samples_total, sample_errors_total, rounds_total;
    double round_cost_s; /* CPU time of the last round, s (thread CPU clock) */
    bool caps_available;
    char caps_why[1024];

    /* cap control */
    pthread_mutex_t caps_lock;
    pfi_capctl *capctl;       /* NULL when cap control is unavailable */
    pfi_gpu_lock *owner_lock; /* the GPUs' ownership locks while cap control runs */
    uint32_t cur_mw[PFID_MAX_GPUS];
    bool restore_pending; /* a restore failed; retried by pfid_caps_tick */
    double restore_retry_mono;
    struct {
        char id[PFID_ID_MAX];
        char *response; /* the 200 body given the first time (owned) */
    } idem[PFID_IDEM_SLOTS];
    unsigned idem_next;

    /* sampler thread */
    pthread_t sampler;
    bool sampler_running;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    bool stop;
    double next_jobs_refresh_mono;
    double next_log_poll_mono;
    long long log_size[PFID_MAX_TLOGS];

    /* pfi_job_pfi_estimate (metrics.c): the pfi_model (NULL none; owned) and each job's last
     * estimate made while it ran uncapped */
    struct pfi_fit_model *model;
    struct {
        char job[PFID_ID_MAX];
        double pfi;
    } pfi_est[PFID_MAX_JOBS];
    size_t n_pfi_est;
    struct pfid_slurm *slurm; /* Slurm registrations (slurm.h; owned); NULL: none */

    /* the node's power (nodepower.c; under snap_lock): the last reading, W (NaN none), its
     * monotonic time, the counter behind it (energy_uj), the last failure ("" none); the
     * file's last value and mtime, when either last moved (monotonic s), the rounds since,
     * and whether it is frozen (unchanged for node_power_frozen_after: missing) */
    struct {
        double power_w, mono_s, counter_uj, counter_mono_s;
        char err[200];
        double last_v, change_mono_s;
        struct timespec mtime;
        unsigned long unchanged_rounds;
        bool frozen;
        unsigned long frozen_total; /* times a file was found frozen (a counter on /metrics) */
    } node;
} pfid_agent;

/* ---- clock.c ---- */
/* pfid's monotonic and wall clocks, s: CLOCK_MONOTONIC and CLOCK_REALTIME, or under clock =
 * emulated the virtual clock (from 0 at start) and the Unix time the controller gave it. */
double pfid_mono_s(void);
double pfid_wall_s(void);
/* pfid_clock_emulate — switch the process to the emulated clock; once, before any thread. */
void pfid_clock_emulate(void);
/* Whether the clock is emulated. */
bool pfid_clock_emulated(void);
/* POST /v1/clock: advance the emulated clock to the body's t_s, sampling on the way (every
 * interval and at t_s); *status and *body (malloc'ed JSON, caller frees): 200, 400 (a bad
 * body), 409 (clock = wall, or t_s before the clock), 422 (an advance over 100 000 rounds). */
void pfid_clock_post(pfid_agent *a, const char *req, size_t len, int *status, char **body);

/* ---- nodepower.c ---- */
/* Largest node power a node_power_file may give, W (watts, or energy_uj differenced): more is
 * out of range, an error like a file that holds no number. */
#define PFID_NODE_MAX_W 1e6

/* pfid_node_value_parse — the number a node-power file holds: text[0..len) one finite
 * number >= 0 with optional surrounding white space (nothing else). false otherwise. */
bool pfid_node_value_parse(const char *text, size_t len, double *out);
/* pfid_node_power_round — read node_power_file once (the sampler's round), updating a->node;
 * a failure is kept in a->node.err and logged once when it starts. A file whose value and
 * mtime have not moved for node_power_frozen_after (and two rounds or more) is frozen: a
 * failure too (missing, never its last number), a->node.frozen set, logged once. An
 * energy_uj counter that has not moved gives no new reading (never 0 W). Nothing when
 * unset. */
void pfid_node_power_round(pfid_agent *a);
/* pfid_node_power — the node's power and its non-GPU part now (W; NaN when missing: no
 * source, a stale or failed reading, or, for a meter that includes the GPUs, a GPU without a
 * fresh power). Call with snap_lock held. */
void pfid_node_power(const pfid_agent *a, double now_mono, double *node_w, double *non_gpu_w);

/* ---- sampler.c ---- */
/* The agent's identity and synchronisation, before any thread starts: a->hostname from the
 * config's hostname, else gethostname(2), else "localhost"; the GPU, snapshot, caps and stop
 * mutexes and the stop condition on CLOCK_MONOTONIC. pfid and bench/agent_farm call it alike.
 * Cannot fail (default attributes). */
void pfid_agent_init(pfid_agent *a);
/* Count the GPUs, read their identities and limits into a fresh snapshot. 0 or -1 (logged). */
int pfid_sampler_init(pfid_agent *a);
/* One round now (so the first scrape has data), then the sampler thread. 0 or -1 (logged). */
int pfid_sampler_start(pfid_agent *a);
void pfid_sampler_stop(pfid_agent *a);
/* One sampling round (the thread's body; tests of a single round call it too). */
void pfid_sample_round(pfid_agent *a);
/* Find a job's throughput slot (creating it when create); NULL when full or absent.
 * Caller holds snap_lock. */
pfid_job_tput *pfid_tput_slot(pfid_agent *a, const char *job, bool create);

/* ---- jobs.c ---- */
/* Refresh the GPU→job mapping per cfg.jobs (static / slurm / emulated). Called by the
 * sampler without locks held; takes gpu_lock and snap_lock itself. */
void pfid_jobs_refresh(pfid_agent *a);
/* Poll configured training logs and the emulated job for throughput. */
void pfid_jobs_poll_throughput(pfid_agent *a);
/* The live rate of training log t whose size is size bytes: the last interval of its last
 * 64 KiB that pfi ingest would use (pfi_trainlog_last_rate), times t->scale; NAN when none. */
double pfid_jobs_tail_rate(const pfid_tlog *t, long long size);
/* (Re)load the static mapping file into a->mapping; 0 or -1 (logged). */
int pfid_jobs_load_mapping(pfid_agent *a);

/* ---- caps.c ---- */
/* Repair a journal left by a killed pfid, then take charge of the GPUs. Never fatal:
 * when cap control cannot start, caps_available is false and caps_why says why. */
void pfid_caps_start(pfid_agent *a);
/* Lease expiry and restore retries; now = CLOCK_MONOTONIC. */
void pfid_caps_tick(pfid_agent *a, double now);
/* Seconds until pfid_caps_tick has something to do (capped at max_wait). */
double pfid_caps_next_s(pfid_agent *a, double now, double max_wait);
/* Shutdown: restore (policy restore) or leave the caps and journal (policy hold). */
void pfid_caps_stop(pfid_agent *a);
/* PUT /v1/caps: *status and *body (malloc'ed JSON, caller frees). */
void pfid_caps_put(pfid_agent *a, const char *req, size_t len, int *status, char **body);
/* DELETE /v1/caps; fence: the X-Pfi-Lease header ("ID EPOCH") or NULL (not fenced). */
void pfid_caps_delete(pfid_agent *a, const char *fence, int *status, char **body);

/* ---- metrics.c / state.c ---- */
/* The jobs of this node: those owning a GPU (GPU order), then those with only a throughput.
 * Caller holds snap_lock. Returns the count written to out[max]. */
size_t pfid_jobs_list(pfid_agent *a, char (*out)[PFID_ID_MAX], size_t max);
/* Is GPU k's last sample fresh at mono time now? Caller holds snap_lock. */
bool pfid_gpu_fresh(const pfid_agent *a, unsigned k, double now);
/* A job's power (sum over its GPUs, all fresh) into *w; false when missing. */
bool pfid_job_power(const pfid_agent *a, const char *job, double now, double *w);
/* A job's throughput when fresh; false when missing or stale. */
bool pfid_job_throughput(pfid_agent *a, const char *job, double now, double *tok_s);
/* The Prometheus exposition of the snapshot (malloc'ed, *len bytes); NULL when out of
 * memory. Takes snap_lock. */
char *pfid_metrics_render(pfid_agent *a, size_t *len);
/* Whether pfid can compute a model feature from its GPU samples: a predictor name
 * (dcgm_dram_active), a reduced name (dram_active, mem_copy_util_pct) or an "A*B" product
 * of those (metrics.c). */
bool pfid_model_feature_known(const char *name);
/* The /v1/state JSON (malloc'ed); NULL when out of memory. */
char *pfid_state_render(pfid_agent *a);
/* {"error": msg} (malloc'ed; NULL when out of memory). */
char *pfid_error_json(const char *msg);

/* ---- api.c ---- */
struct pfi_http_server;
/* Start the HTTP API on the shared server (pfi/http.h); writes cfg.port_file when set.
 * NULL on failure (logged). */
struct pfi_http_server *pfid_http_start(pfid_agent *a);
/* Stop it (NULL: nothing to stop). */
void pfid_http_stop(struct pfi_http_server *s);
/* POST /v1/jobs/{id}/throughput. */
void pfid_throughput_post(pfid_agent *a, const char *job, const char *req, size_t len, int *status,
                          char **body);

#endif
