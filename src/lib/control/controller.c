/*
 * The controller loop (pfi/control.h): read agents (and Prometheus), track GPUs and jobs,
 * estimate curves, allocate under the budget less margin, reserve and feedback correction,
 * actuate staged (decreases, confirmation, increases that fit), audit every decision.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control/ctl_curves.h"
#include "control/ctl_guard.h"
#include "control/ctl_internal.h"
#include "control/ctl_prom.h"
#include "control/ctl_tree.h"
#include "core/db_close.h"
#include "core/hidx.h"
#include "core/memory.h"
#include "pfi/agent_api.h"
#include "pfi/control.h"
#include "pfi/featmap.h"
#include "pfi/fit.h"
#include "pfi/stage.h"

#include <unistd.h>

static long getpid_cached(void)
{
    static long pid;
    if (pid == 0)
        pid = (long)getpid();
    return pid;
}

/* After a confirmed cap change, a reading stamped this much later shows the new caps (an
 * exporter's power over its last sampling interval, 0.1-0.2 s, and the clocks settling); and
 * how often a step asks again while it waits for one. */
#define CTL_CHANGE_SETTLE_S 0.25
#define CTL_RETRY_S 0.05
/* A sample is read this long after it is due (the agent's snapshot published); the lockstep
 * reads at once the agents whose samples fall due within CTL_SAMPLE_BATCH_S of the first
 * (fewer rounds: each scans every GPU) */
#define CTL_SAMPLE_SLACK_S 0.005
#define CTL_SAMPLE_BATCH_S 0.02

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

const char *pfi_ctl_reason_name(pfi_ctl_reason r)
{
    static const char *const names[PFI_CTL_N_REASONS] = {
        "unauthorized", "forbidden", "conflict", "server_error", "rejected", "unreachable"};
    return (unsigned)r < PFI_CTL_N_REASONS ? names[r] : "unknown";
}

/* The reason of a failed request with HTTP status (0: no answer). */
static pfi_ctl_reason reason_of(long status)
{
    if (status == 0)
        return PFI_CTL_UNREACHABLE;
    if (status == 401)
        return PFI_CTL_UNAUTHORIZED;
    if (status == 403)
        return PFI_CTL_FORBIDDEN;
    if (status == 409)
        return PFI_CTL_CONFLICT;
    return status >= 500 ? PFI_CTL_SERVER : PFI_CTL_REJECTED;
}

/* A cap request is confirmed when the enforced limit is at or below it (a decrease) or at
 * it (an increase). */
static bool confirmed(double enforced, double sent, int phase)
{
    if (!isfinite(enforced))
        return false;
    return phase == 1 ? enforced <= sent + 0.5 : fabs(enforced - sent) <= 0.5;
}

typedef struct cgpu {
    size_t agent;
    char uuid[PFI_CTL_ID_LEN];
    char job[PFI_CTL_ID_LEN];
    char host[PFI_CTL_ID_LEN];
    double power_w, min_w, max_w, original_w;
    double confirmed_w;     /* enforced cap last confirmed; NaN unknown */
    double ours_w;          /* the cap the controller last confirmed it set; NaN none */
    ctl_reading reading;    /* this period's verdict on power_w (NaN unless OK) */
    double sample_t_s;      /* Unix s of the reading in power_w (NaN none) */
    double prev_sample_t_s; /* the last period's: a reading that repeats is not a new one */
    double target_w;        /* this period; NaN leave */
    size_t job_ix;          /* SIZE_MAX: no job */
    size_t next_on_agent;   /* the agent's next GPU (in the order they were added); SIZE_MAX */
    bool seen;              /* its agent answered this period */
    long refused_status;    /* this period: HTTP status its cap request was refused with; 0 */
    size_t topo_ix;         /* its node in the topology (PFI_TOPO_NONE: none; SIZE_MAX - 1:
                               not looked up since its host was read) */
    size_t part;            /* this period's part (its job's GPUs on its node) */
} cgpu;

typedef struct cjob {
    char id[PFI_CTL_ID_LEN];
    char cls[32];
    size_t ngpus;
    size_t n_power; /* of them, with a power reading this period (none: power_w NaN) */
    double power_w, tput;
    double ref_pg_w, ref_tput_pg; /* reference per GPU (draw at original caps, tokens/s) */
    double ref_hist[CTL_REF_WINDOW], tput_hist[CTL_REF_WINDOW]; /* last uncapped readings */
    size_t ref_n, tput_n;
    double model_pfi;      /* the model's PFI from uncapped features; NaN none yet */
    unsigned uncapped_run; /* periods in a row it has run uncapped (this one included) */
    double pfi_hist[CTL_REF_WINDOW];
    size_t pfi_n;
    double lo_w, hi_w, cap_now_w; /* cap_now_w: mean confirmed cap as read (the readings') */
    double cap_set_w; /* mean confirmed cap after the period's actuation (NaN: not reached) */
    double pfi;
    pfi_curve_source src;
    ctl_curve curve;
    ctl_share_memo share; /* the curve's compute share for its PFI (curves.c) */
    double cap_w, pred_w;
    double last_power_w; /* the previous period's power while uncapped (settle check) */
    bool seen, at_ref;
    bool fresh;       /* every GPU had a trustworthy reading this period */
    bool repeated;    /* a GPU's reading is the one of the last period (not a new sample) */
    bool ref_settled; /* the reference has seen a settled uncapped power */
    double moved_s;   /* Unix s of the last period that sent one of its GPUs a cap (-inf) */
} cjob;

struct pfi_ctl {
    pfi_ctl_config cfg;
    ctl_http *http;
    ctl_audit *audit;
    sqlite3 *store;
    pfi_fit_model *model;
    ctl_prom prom;
    bool prom_on;
    cgpu *g;
    size_t ng, capg;
    hidx g_index;        /* the GPUs by (agent, UUID) */
    size_t *agent_first; /* per agent: its first GPU (a list by next_on_agent); SIZE_MAX */
    size_t *agent_last;  /* per agent: its last GPU; SIZE_MAX */
    cjob *j;
    size_t nj, capj;
    hidx j_index; /* the jobs by id */
    bool *up;
    double *non_gpu_w; /* per agent: its node's measured non-GPU power this period (NaN none) */
    double *last_put_s;
    /* per agent, its last answer's sampled_at_s, sampling_interval_s and when it came (wall
     * s): when its next sample is due (the lockstep reads it again then, not before); the
     * last period that sent one of its GPUs a cap (wall s, -inf none); and the lockstep's
     * scratch: the time its readings must be stamped after (wall s) */
    double *samp_at, *samp_iv, *samp_read, *moved_at, *need_at;
    ctl_http_req *req;
    char **bodies;
    pfi_agent_state *st;
    ctl_feedback fb;
    char (*fault)[160]; /* per agent: this period's failure ("" none) */
    unsigned long (*refusals)[PFI_CTL_N_REASONS];
    double trusted_wall_s; /* Unix s every GPU last had a trustworthy reading */
    double correction_w;
    size_t n_refused;          /* this period's refused cap requests */
    char refusal[160];         /* this period's first refusal, for the note; "" none */
    bool lead;                 /* pfi_ctl_set_lead: the event budget is a ramp's lead */
    unsigned event_k;          /* event periods in a row (a lead's not counted) */
    unsigned over_run;         /* of them, from the second on, measured over the budget */
    double held_budget_w;      /* the last period's budget: the one in force while this
                                  period's readings were measured */
    char pending_note[160];    /* pfi_ctl_note: leads the next period's note; "" none */
    size_t prom_stale;         /* GPUs whose Prometheus reading was stale this period */
    bool prev_settled;         /* last period's caps were all confirmed (feedback is meaningful) */
    bool stepped;              /* a period has run: the prev_ fields below hold its budget */
    bool prev_event;           /* the last period's event flag, budget and reduction (the */
    double prev_budget_w;      /* step's arguments): a change of them skips the lockstep's */
    double prev_reduction;     /* wait (pfi_ctl_step) */
    int quiet;                 /* periods since caps last changed */
    double last_change_wall_s; /* Unix s of the last cap change (energy segments start) */
    unsigned long seq;
    long run;
    long period_id;
    /* owned: the tree allocator's scratch, kept between periods (created on first use) */
    pfi_alloc_tree_workspace *tree_ws;
    /* ramps: how much faster the measured power moved than the curves planned */
    double ramp_gain;   /* >= 1 (1: as planned) */
    double ramp_plan_w; /* the move planned last period (predicted W; NaN none) */
    double ramp_meas_w; /* the parts' measured power when it was planned (W) */
    double clock_now_s; /* the emulated clock's Unix time this step (cfg.clock_unix_s) */
    bool clock_moved;   /* the emulated clock advanced once: a refusal is then a fault */
};

/* The controller's Unix time: the system's, or this step's on the emulated clock. */
static double ctl_wall(const pfi_ctl *c)
{
    return isfinite(c->cfg.clock_unix_s) ? c->clock_now_s : now_wall();
}

void pfi_ctl_config_init(pfi_ctl_config *c)
{
    memset(c, 0, sizeof *c);
    c->ramp_up_w_per_s = c->ramp_down_w_per_s = INFINITY;
    c->strategy = PFI_STRATEGY_PFI_MODEL;
    c->period_s = 5;
    c->margin = 0.03;
    c->feedback_gain = 0.5;
    c->feedback_bound = 0.10;
    c->facility_limit_w = NAN;
    c->confirm_timeout_s = NAN;
    c->http_timeout_s = 1;
    c->lease_s = NAN;
    c->stale_after_s = NAN;
    c->epoch = NAN;
    c->clock_unix_s = NAN;
    c->prom.scrape_interval_s = NAN;
    c->prom.power_metric = "pfi_gpu_power_watts";
    c->prom.energy_metric = "pfi_gpu_energy_joules_total";
    c->prom.energy_time_metric = "pfi_gpu_last_sample_timestamp_seconds";
    c->prom.host_label = "hostname";
    c->prom.uuid_label = "uuid";
    c->prom.up_join_label = "instance";
    c->prom.feature_metrics =
        "dram_active=pfi_gpu_dram_active_ratio,tensor_active=pfi_gpu_tensor_active_ratio";
    c->prom.timeout_s = 1;
}

void pfi_ctl_destroy(pfi_ctl *c)
{
    if (c == NULL)
        return;
    ctl_http_destroy(c->http);
    ctl_audit_close(c->audit);
    pfi_alloc_tree_workspace_destroy(c->tree_ws);
    db_close(c->store);
    pfi_fit_model_destroy(c->model);
    ctl_prom_clear(&c->prom);
    if (c->req != NULL)
        for (size_t i = 0; i < c->cfg.n_agents; i++)
            ctl_http_req_clear(&c->req[i]);
    if (c->bodies != NULL)
        for (size_t i = 0; i < c->cfg.n_agents; i++)
            pfi_free(c->bodies[i]);
    pfi_free(c->bodies);
    pfi_free(c->req);
    pfi_free(c->up);
    pfi_free(c->non_gpu_w);
    pfi_free(c->last_put_s);
    pfi_free(c->samp_at);
    pfi_free(c->fault);
    pfi_free(c->refusals);
    pfi_free(c->st);
    pfi_free(c->g);
    pfi_free(c->j);
    hidx_free(&c->g_index);
    hidx_free(&c->j_index);
    pfi_free(c->agent_first);
    pfi_free(c->agent_last);
    pfi_free(c);
}

pfi_error pfi_ctl_create(const pfi_ctl_config *cfg, pfi_ctl **out, pfi_diag *d)
{
    *out = NULL;
    if (cfg->n_agents == 0 || cfg->agents == NULL || !(cfg->period_s > 0) ||
        !(cfg->margin >= 0 && cfg->margin < 0.5) || !(cfg->feedback_gain >= 0) ||
        !(cfg->feedback_bound >= 0) || !(cfg->ramp_up_w_per_s > 0) || !(cfg->ramp_down_w_per_s > 0))
        return ctl_fail(d, 0, PFI_ERR_INVALID_ARGUMENT,
                        "controller: agents, a period > 0, a margin in [0, 0.5) and ramp rates "
                        "> 0 are needed");
    pfi_ctl *c = pfi_calloc(1, sizeof *c);
    if (c == NULL)
        return PFI_ERR_NOMEM;
    c->cfg = *cfg;
    if (isnan(c->cfg.confirm_timeout_s))
        c->cfg.confirm_timeout_s = fmin(2.0, cfg->period_s / 2);
    if (isnan(c->cfg.lease_s))
        c->cfg.lease_s = fmax(30.0, 6 * cfg->period_s);
    if (isfinite(cfg->clock_unix_s)) /* emulated: an answer is late only on a slow host */
        c->cfg.http_timeout_s = fmax(cfg->http_timeout_s, 30.0);
    size_t n = cfg->n_agents;
    pfi_error e = PFI_ERR_NOMEM;
    c->up = pfi_calloc(n, sizeof *c->up);
    c->non_gpu_w = pfi_malloc((n ? n : 1) * sizeof *c->non_gpu_w);
    c->last_put_s = pfi_calloc(n, sizeof *c->last_put_s);
    c->samp_at = pfi_malloc((n ? 5 * n : 1) * sizeof *c->samp_at);
    c->req = pfi_calloc(n, sizeof *c->req);
    c->bodies = pfi_calloc(n, sizeof *c->bodies);
    c->st = pfi_malloc(sizeof *c->st);
    c->fault = pfi_calloc(n, sizeof *c->fault);
    c->refusals = pfi_calloc(n, sizeof *c->refusals);
    c->agent_first = pfi_malloc(n * sizeof *c->agent_first);
    c->agent_last = pfi_malloc(n * sizeof *c->agent_last);
    if (!c->up || !c->non_gpu_w || !c->last_put_s || !c->samp_at || !c->req || !c->bodies ||
        !c->st || !c->fault || !c->refusals || !c->agent_first || !c->agent_last)
        goto fail;
    for (size_t i = 0; i < n; i++)
        c->agent_first[i] = c->agent_last[i] = SIZE_MAX;
    c->fb.last_measured_w = NAN;
    c->held_budget_w = NAN;
    c->trusted_wall_s = NAN;
    c->ramp_gain = 1;
    c->ramp_plan_w = c->ramp_meas_w = NAN;
    c->samp_iv = c->samp_at + n;
    c->samp_read = c->samp_at + 2 * n;
    c->moved_at = c->samp_at + 3 * n;
    c->need_at = c->samp_at + 4 * n;
    for (size_t i = 0; i < n; i++) {
        c->last_put_s[i] = c->moved_at[i] = -INFINITY;
        c->non_gpu_w[i] = NAN;
        c->samp_at[i] = c->samp_iv[i] = c->samp_read[i] = NAN;
    }
    if ((e = ctl_http_create(&c->http, d)) != PFI_OK)
        goto fail;
    if (cfg->http_libcurl_only)
        ctl_http_set_builtin(c->http, false);
    if (cfg->prom.url != NULL) {
        if ((e = ctl_prom_init(&c->prom, &cfg->prom, d)) != PFI_OK)
            goto fail;
        c->prom_on = true;
    }
    if (cfg->model_path != NULL &&
        (e = pfi_fit_model_load(cfg->model_path, &c->model, d)) != PFI_OK)
        goto fail;
    if (c->model == NULL)
        c->prom.n_features = 0; /* features feed only a model: no query a period for them */
    if (cfg->store_path != NULL &&
        sqlite3_open_v2(cfg->store_path, &c->store, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        e = ctl_fail(d, 0, PFI_ERR_IO, "run store %s: %s", cfg->store_path,
                     c->store ? sqlite3_errmsg(c->store) : "cannot open");
        goto fail;
    }
    if (cfg->audit_path != NULL) {
        char conf[512];
        snprintf(conf, sizeof conf,
                 "{\"strategy\":\"%s\",\"period_s\":%g,\"margin\":%g,\"agents\":%zu}",
                 pfi_strategy_name(cfg->strategy), cfg->period_s, cfg->margin, n);
        if ((e = ctl_audit_open(cfg->audit_path, conf, &c->audit, d)) != PFI_OK)
            goto fail;
        c->run = ctl_audit_run_id(c->audit);
        double corr;
        if (ctl_audit_last_correction(c->audit, &corr) && isfinite(corr))
            c->correction_w = corr; /* a restarted controller continues the event's correction */
    }
    c->fb.correction_w = c->correction_w;
    if (isnan(c->cfg.epoch))
        c->cfg.epoch = c->run > 0 ? (double)c->run : floor(now_wall());
    if (c->cfg.controller_id == NULL)
        c->cfg.controller_id = "pfi-control";
    *out = c;
    return PFI_OK;
fail:
    pfi_ctl_destroy(c);
    return e;
}

/* ---- state ------------------------------------------------------------------------------ */

/* The key of a GPU in c->g_index, and of a job in c->j_index. */
typedef struct slot_key {
    const pfi_ctl *c;
    size_t agent;
    const char *id;
} slot_key;

static uint64_t gpu_hash(size_t agent, const char *uuid)
{
    uint64_t a = agent;
    return hidx_hash(uuid, strlen(uuid), hidx_hash(&a, sizeof a, HIDX_SEED));
}

static bool gpu_is(const void *ctx, size_t i)
{
    const slot_key *k = ctx;
    return k->c->g[i].agent == k->agent && strcmp(k->c->g[i].uuid, k->id) == 0;
}

static bool job_is(const void *ctx, size_t i)
{
    const slot_key *k = ctx;
    return strcmp(k->c->j[i].id, k->id) == 0;
}

/* GPU uuid of agent agent: found by hash (a controller of 1 000 agents tracks 8 000 GPUs:
 * a search of the list for each was 10^8 compares a period), or added. NULL: no memory. */
static cgpu *gpu_slot(pfi_ctl *c, size_t agent, const char *uuid)
{
    uint64_t h = gpu_hash(agent, uuid);
    slot_key k = {c, agent, uuid};
    size_t found = hidx_find(&c->g_index, h, gpu_is, &k);
    if (found != SIZE_MAX)
        return &c->g[found];
    /* room first, then the index: an index entry must never name a GPU that is not there */
    if (c->ng == c->capg) {
        size_t nc = c->capg ? 2 * c->capg : 64;
        cgpu *q = pfi_realloc(c->g, nc * sizeof *q);
        if (q == NULL)
            return NULL;
        c->g = q;
        c->capg = nc;
    }
    if (hidx_add(&c->g_index, h, c->ng) != PFI_OK)
        return NULL;
    cgpu *g = &c->g[c->ng];
    memset(g, 0, sizeof *g);
    g->agent = agent;
    ctl_copy(g->uuid, sizeof g->uuid, uuid);
    g->next_on_agent = SIZE_MAX;
    if (c->agent_last[agent] == SIZE_MAX)
        c->agent_first[agent] = c->ng;
    else
        c->g[c->agent_last[agent]].next_on_agent = c->ng;
    c->agent_last[agent] = c->ng++;
    g->confirmed_w = g->original_w = g->power_w = g->ours_w = NAN;
    g->reading = CTL_READING_MISSING;
    g->sample_t_s = g->prev_sample_t_s = NAN;
    g->job_ix = SIZE_MAX;
    g->topo_ix = SIZE_MAX - 1;
    return g;
}

/* The per-period fields of a job, before its GPUs are counted. */
static void job_reset(cjob *j)
{
    j->seen = false;
    j->ngpus = 0;
    j->n_power = 0;
    j->power_w = 0;
    j->tput = NAN;
    j->lo_w = 0;
    j->hi_w = INFINITY;
    j->cap_now_w = 0;
    j->cap_set_w = NAN;
    j->at_ref = true;
    j->fresh = true;
    j->repeated = false;
    j->cap_w = j->pred_w = NAN;
}

static cjob *job_slot(pfi_ctl *c, const char *id, size_t *ix)
{
    uint64_t h = hidx_hash(id, strlen(id), HIDX_SEED);
    slot_key k = {c, 0, id};
    size_t found = hidx_find(&c->j_index, h, job_is, &k);
    if (found != SIZE_MAX) {
        *ix = found;
        return &c->j[found];
    }
    if (c->nj == c->capj) { /* room first, then the index (as gpu_slot) */
        size_t nc = c->capj ? 2 * c->capj : 32;
        cjob *q = pfi_realloc(c->j, nc * sizeof *q);
        if (q == NULL)
            return NULL;
        c->j = q;
        c->capj = nc;
    }
    if (hidx_add(&c->j_index, h, c->nj) != PFI_OK)
        return NULL;
    cjob *j = &c->j[c->nj];
    memset(j, 0, sizeof *j);
    ctl_copy(j->id, sizeof j->id, id);
    j->ref_pg_w = j->ref_tput_pg = j->model_pfi = j->last_power_w = NAN;
    j->moved_s = -INFINITY;
    job_reset(j);
    double rp, rt;
    if (c->audit != NULL && ctl_audit_job_ref(c->audit, id, &rp, &rt)) {
        j->ref_pg_w = rp; /* stored per GPU */
        j->ref_settled = true;
        j->ref_tput_pg = rt;
    }
    /* a restarted controller that finds the job capped keeps the model's last estimate */
    if (c->audit != NULL && c->model != NULL)
        ctl_audit_job_model_pfi(c->audit, id, &j->model_pfi);
    *ix = c->nj++;
    return j;
}

static void agent_url(const pfi_ctl *c, size_t a, const char *path, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s", c->cfg.agents[a].url, path);
}

/* A restarted controller has never seen agent a, which does not answer: the GPUs an
 * earlier run saw there, from the audit log, at their last confirmed caps (counted in the
 * reserve). Nothing when the controller knows a GPU of a already. Errors: PFI_ERR_NOMEM. */
static pfi_error restore_agent_gpus(pfi_ctl *c, size_t a)
{
    if (c->agent_first[a] != SIZE_MAX)
        return PFI_OK;
    char(*uu)[128] = pfi_malloc(PFI_CTL_MAX_GPUS * sizeof *uu);
    double *cw = pfi_malloc(PFI_CTL_MAX_GPUS * sizeof *cw);
    pfi_error e = uu && cw ? PFI_OK : PFI_ERR_NOMEM;
    size_t nk = e == PFI_OK
                    ? ctl_audit_agent_gpus(c->audit, c->cfg.agents[a].url, uu, cw, PFI_CTL_MAX_GPUS)
                    : 0;
    for (size_t q = 0; q < nk; q++) {
        cgpu *g = gpu_slot(c, a, uu[q]);
        if (g == NULL) {
            e = PFI_ERR_NOMEM;
            break;
        }
        g->confirmed_w = g->max_w = cw[q];
    }
    pfi_free(uu);
    pfi_free(cw);
    return e;
}

/* The stale bound of the agents' readings (s). */
static double agent_stale_s(const pfi_ctl *c)
{
    return isfinite(c->cfg.stale_after_s) ? c->cfg.stale_after_s : fmax(2.0, 2 * c->cfg.period_s);
}

/* Note a failed request of agent a this period (the first failure kept as its fault). */
static void agent_fault(pfi_ctl *c, size_t a, long status, const char *what, const char *detail)
{
    c->refusals[a][reason_of(status)]++;
    if (c->fault[a][0] != '\0')
        return;
    if (status == 0)
        snprintf(c->fault[a], sizeof c->fault[a], "%s: unreachable (%.100s)", what, detail);
    else
        snprintf(c->fault[a], sizeof c->fault[a], "%s: HTTP %ld %s (%.80s)", what, status,
                 pfi_ctl_reason_name(reason_of(status)), detail);
}

/* The first line of an agent's error answer ({"error":"..."} or text), for a fault line. */
static const char *answer_detail(const ctl_http_req *r, char *buf, size_t n)
{
    if (r->status == 0)
        return r->err;
    const char *s = r->resp ? r->resp : "";
    const char *e = strstr(s, "\"error\":\"");
    if (e != NULL)
        s = e + 9;
    size_t k = 0;
    while (s[k] && s[k] != '"' && s[k] != '\n' && k + 1 < n) {
        buf[k] = s[k];
        k++;
    }
    buf[k] = '\0';
    return buf;
}

/* GET /v1/state of the agents with want[a] (NULL: all); updates their GPUs (c->up[a]: whether
 * each answered). fill_jobs: also the jobs' throughput and class. */
static pfi_error read_agents(pfi_ctl *c, const bool *want, bool fill_jobs, pfi_ctl_report *rep)
{
    size_t n = c->cfg.n_agents, m = 0;
    size_t *map = pfi_malloc(n * sizeof *map);
    if (map == NULL)
        return PFI_ERR_NOMEM;
    for (size_t a = 0; a < n; a++) {
        if (want != NULL && !want[a])
            continue;
        ctl_http_req *r = &c->req[m];
        ctl_http_req_clear(r);
        r->method = "GET";
        agent_url(c, a, "/v1/state", r->url, sizeof r->url);
        r->token = c->cfg.agents[a].token;
        r->body = NULL;
        map[m++] = a;
    }
    pfi_error e = ctl_http_run(c->http, c->req, m, c->cfg.http_timeout_s);
    for (size_t k = 0; e == PFI_OK && k < m; k++) {
        size_t a = map[k];
        ctl_http_req *r = &c->req[k];
        pfi_diag d;
        pfi_error pe = r->status == 200 && r->resp != NULL
                           ? pfi_agent_state_parse(r->resp, r->resp_len, c->st, &d)
                           : PFI_ERR_IO;
        if (pe == PFI_ERR_NOMEM) {
            e = pe;
            break;
        }
        if (pe != PFI_OK) {
            c->up[a] = false;
            if (fill_jobs)
                c->non_gpu_w[a] = NAN;
            if (fill_jobs) {
                char det[120];
                agent_fault(c, a, r->status == 200 ? 502 : r->status, "GET /v1/state",
                            r->status == 200 ? "bad state" : answer_detail(r, det, sizeof det));
            }
            if (fill_jobs && c->audit != NULL && (e = restore_agent_gpus(c, a)) != PFI_OK)
                break;
            if (rep != NULL && rep->note[0] == '\0')
                snprintf(rep->note, sizeof rep->note, "agent %.120s not answering (%.100s)",
                         c->cfg.agents[a].url,
                         r->status ? (r->status == 200 ? "bad state" : "HTTP error") : r->err);
            continue;
        }
        c->up[a] = true;
        if (fill_jobs)
            c->non_gpu_w[a] = c->st->node_non_gpu_w;
        double now = ctl_wall(c);
        /* an agent that does not say when it sampled answered with what it has now */
        double t_sample = isfinite(c->st->sampled_at_s) ? c->st->sampled_at_s : now;
        c->samp_at[a] = c->st->sampled_at_s;
        c->samp_iv[a] = c->st->sampling_interval_s;
        c->samp_read[a] = now;
        for (size_t i = 0; i < c->st->n_gpus; i++) {
            const pfi_agent_gpu *sg = &c->st->gpus[i];
            cgpu *g = gpu_slot(c, a, sg->uuid);
            if (g == NULL) {
                e = PFI_ERR_NOMEM;
                break;
            }
            g->seen = true;
            double maxw = isfinite(sg->max_cap_w) ? sg->max_cap_w : g->max_w;
            g->reading = ctl_reading_check(sg->power_w, t_sample, now, agent_stale_s(c), maxw);
            g->power_w = g->reading == CTL_READING_OK ? sg->power_w : NAN;
            g->sample_t_s = g->reading == CTL_READING_OK ? t_sample : NAN;
            if (strcmp(g->host, c->st->hostname) != 0) {
                ctl_copy(g->host, sizeof g->host, c->st->hostname);
                g->topo_ix = SIZE_MAX - 1;
            }
            double enf = isfinite(sg->enforced_cap_w) ? sg->enforced_cap_w : sg->cap_w;
            if (fill_jobs && rep != NULL && isfinite(g->ours_w) && isfinite(enf) &&
                fabs(enf - g->ours_w) > 1) {
                /* the limit moved without a request of ours: another tool, a DCGM group
                 * power policy, an operator */
                rep->competing++;
                if (c->fault[a][0] == '\0')
                    snprintf(c->fault[a], sizeof c->fault[a],
                             "competing actuator: GPU %.60s limit %.0f W, the controller set "
                             "%.0f W",
                             g->uuid, enf, g->ours_w);
                g->ours_w = NAN;
            }
            g->confirmed_w = enf;
            if (fill_jobs) {
                ctl_copy(g->job, sizeof g->job, sg->job);
                g->min_w = isfinite(sg->min_cap_w) ? sg->min_cap_w : 100;
                g->max_w = isfinite(sg->max_cap_w) ? sg->max_cap_w : g->confirmed_w;
                if (isnan(g->original_w)) {
                    double w = sg->original_cap_w;
                    if (!isfinite(w) && c->audit != NULL)
                        ctl_audit_original_get(c->audit, g->uuid, &w);
                    if (!isfinite(w))
                        w = isfinite(sg->default_cap_w) ? sg->default_cap_w : g->max_w;
                    g->original_w = w;
                    if (c->audit != NULL)
                        ctl_audit_original(c->audit, c->cfg.agents[a].url, g->uuid, w);
                }
            }
        }
        /* the jobs' class and throughput (the largest an agent reports) from the same
         * answer: parsed once (a second parse was a fifth of the CPU at 1 000 agents) */
        for (size_t i = 0; fill_jobs && e == PFI_OK && i < c->st->n_jobs; i++) {
            size_t ix;
            cjob *j = job_slot(c, c->st->jobs[i].id, &ix);
            if (j == NULL) {
                e = PFI_ERR_NOMEM;
                break;
            }
            if (c->st->jobs[i].job_class[0])
                ctl_copy(j->cls, sizeof j->cls, c->st->jobs[i].job_class);
            if (isfinite(c->st->jobs[i].tput_tok_s))
                j->tput = isfinite(j->tput) ? fmax(j->tput, c->st->jobs[i].tput_tok_s)
                                            : c->st->jobs[i].tput_tok_s;
        }
    }
    pfi_free(map);
    return e;
}

/* cost of GPU k at cap c for staging: the job curve's per-GPU power (conservative: never
 * below what the GPU draws now when at the same cap), the cap for unmanaged/unseen GPUs. */
static double stage_cost(void *ctx, size_t k, double cap)
{
    pfi_ctl *c = ctx;
    const cgpu *g = &c->g[k];
    if (!g->seen)
        return cap;
    if (g->job_ix == SIZE_MAX)
        return isfinite(g->power_w) ? fmin(cap, g->power_w) : cap;
    const cjob *j = &c->j[g->job_ix];
    return ctl_curve_power(&j->curve, cap) / (double)j->ngpus;
}

/* The PUT /v1/caps body for agent a: send[k] (NaN: none) of each of its GPUs seen this
 * period, and with renew the lease renewal of a reduced cap due (a third of the lease since
 * the last PUT). *body (owned, pfi_free) is NULL when there is nothing to send.
 * Errors: PFI_ERR_NOMEM. */
static pfi_error put_body(pfi_ctl *c, size_t a, const double *send, double now_s, bool renew,
                          char **body)
{
    *body = NULL;
    size_t cap = 512, len = 0, cnt = 0;
    char *b = pfi_malloc(cap);
    if (b == NULL)
        return PFI_ERR_NOMEM;
    c->seq++;
    char id[PFI_CTL_ID_LEN];
    size_t il = 0;
    for (const char *q = c->cfg.controller_id; *q && il + 1 < sizeof id; q++)
        if (*q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
            id[il++] = *q; /* a JSON string without escapes */
    id[il] = '\0';
    len = (size_t)snprintf(b, cap,
                           "{\"request_id\":\"pfi-ctl-%ld-%ld-%lu\",\"lease_s\":%g,"
                           "\"controller\":\"%s\",\"epoch\":%.0f,\"caps\":[",
                           c->run, getpid_cached(), c->seq, c->cfg.lease_s, id, c->cfg.epoch);
    for (size_t k = c->agent_first[a]; k != SIZE_MAX; k = c->g[k].next_on_agent) {
        const cgpu *g = &c->g[k];
        double w = send[k];
        if (!g->seen)
            continue;
        if (isnan(w) && renew && now_s - c->last_put_s[a] >= c->cfg.lease_s / 3 &&
            isfinite(g->confirmed_w) && isfinite(g->original_w) &&
            g->confirmed_w < g->original_w - 0.5)
            w = g->confirmed_w; /* lease renewal of a reduced cap */
        if (isnan(w))
            continue;
        if (len + 300 > cap) {
            cap *= 2;
            char *q = pfi_realloc(b, cap);
            if (q == NULL) {
                pfi_free(b);
                return PFI_ERR_NOMEM;
            }
            b = q;
        }
        len += (size_t)snprintf(b + len, cap - len, "%s{\"uuid\":\"%s\",\"cap_w\":%.0f}",
                                cnt ? "," : "", g->uuid, w);
        cnt++;
    }
    if (cnt == 0) {
        pfi_free(b);
        return PFI_OK;
    }
    snprintf(b + len, cap - len, "]}");
    *body = b;
    return PFI_OK;
}

/* The answers of the m PUTs to agents map[m]: a GPU whose answer shows its enforced limit
 * at the request is confirmed, one whose agent answered otherwise is pending (pending[a],
 * *npend GPUs); every request is audited. *sent counts the requests. */
static pfi_error take_put_answers(pfi_ctl *c, const double *send, int phase, double now_s,
                                  const size_t *map, size_t m, bool *pending, size_t *npend,
                                  size_t *sent)
{
    pfi_agent_cap_reply *rep = pfi_malloc(PFI_CTL_MAX_GPUS * sizeof *rep);
    if (rep == NULL)
        return PFI_ERR_NOMEM;
    for (size_t k = 0; k < m; k++) {
        size_t a = map[k];
        ctl_http_req *r = &c->req[k];
        c->last_put_s[a] = now_s;
        size_t nr = 0;
        bool applied;
        pfi_diag d;
        pfi_error pe = r->status == 200 && r->resp != NULL
                           ? pfi_agent_caps_parse(r->resp, r->resp_len, rep, PFI_CTL_MAX_GPUS, &nr,
                                                  &applied, &d)
                           : PFI_ERR_IO;
        if (pe == PFI_ERR_NOMEM) {
            pfi_free(rep);
            return pe;
        }
        bool ok = pe == PFI_OK;
        char what[200];
        if (!ok) {
            snprintf(what, sizeof what, "HTTP %ld: %.150s", r->status,
                     r->status ? (r->resp ? r->resp : "") : r->err);
            char det[120];
            agent_fault(c, a, r->status == 200 ? 502 : r->status, "PUT /v1/caps",
                        r->status == 200 ? "bad answer" : answer_detail(r, det, sizeof det));
        }
        if (r->status == 0)
            c->up[a] = false;
        for (size_t gi = c->agent_first[a]; gi != SIZE_MAX; gi = c->g[gi].next_on_agent) {
            cgpu *g = &c->g[gi];
            if (isnan(send[gi]))
                continue;
            (*sent)++;
            if (!ok && r->status != 0) {
                c->n_refused++;
                g->refused_status = r->status;
                if (c->refusal[0] == '\0')
                    snprintf(c->refusal, sizeof c->refusal, "caps refused by %.100s (HTTP %ld)",
                             c->cfg.agents[a].url, r->status);
            }
            double enf = NAN;
            for (size_t q = 0; ok && q < nr; q++)
                if (strcmp(rep[q].uuid, g->uuid) == 0)
                    enf = rep[q].enforced_w;
            bool conf = confirmed(enf, send[gi], phase);
            if (conf)
                g->confirmed_w = g->ours_w = enf;
            else if (ok) {
                pending[a] = true;
                (*npend)++;
            }
            if (c->audit != NULL)
                ctl_audit_cap(c->audit, c->period_id, phase, c->cfg.agents[a].url, g->uuid,
                              send[gi], enf, ok ? (conf ? "confirmed" : "pending") : what);
        }
    }
    pfi_free(rep);
    return PFI_OK;
}

/* Poll the state of the agents with pending GPUs until every request is confirmed, the
 * agent stops answering, or confirm_timeout_s passes (an agent may apply asynchronously).
 * *npend: the GPUs still unconfirmed. */
static pfi_error wait_confirmed(pfi_ctl *c, const double *send, int phase, bool *pending,
                                size_t *npend)
{
    pfi_error e = PFI_OK;
    double t0 = now_mono();
    /* on the emulated clock nothing changes until the next step: no poll */
    while (e == PFI_OK && *npend > 0 && !isfinite(c->cfg.clock_unix_s) &&
           now_mono() - t0 < c->cfg.confirm_timeout_s) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        e = read_agents(c, pending, false, NULL);
        *npend = 0;
        for (size_t gi = 0; e == PFI_OK && gi < c->ng; gi++) {
            cgpu *g = &c->g[gi];
            if (!pending[g->agent] || isnan(send[gi]))
                continue;
            if (!confirmed(g->confirmed_w, send[gi], phase))
                (*npend)++;
            else
                g->ours_w = g->confirmed_w;
        }
        for (size_t a = 0; a < c->cfg.n_agents; a++)
            if (pending[a] && !c->up[a])
                pending[a] = false;
    }
    return e;
}

/* PUT caps send[k] (NaN: none) grouped per agent; confirm from the answers, then poll the
 * state of agents with unconfirmed GPUs until confirm_timeout. *sent: requests sent,
 * *unconfirmed: those not confirmed. */
static pfi_error push(pfi_ctl *c, const double *send, int phase, double now_s, size_t *sent,
                      size_t *unconfirmed, bool renew)
{
    size_t n = c->cfg.n_agents, m = 0;
    *sent = 0;
    *unconfirmed = 0;
    size_t *map = pfi_malloc(n * sizeof *map);
    if (map == NULL)
        return PFI_ERR_NOMEM;
    pfi_error e = PFI_OK;
    for (size_t a = 0; a < n; a++) {
        pfi_free(c->bodies[a]);
        c->bodies[a] = NULL;
        if (!c->up[a])
            continue;
        if ((e = put_body(c, a, send, now_s, renew, &c->bodies[a])) != PFI_OK)
            break;
        if (c->bodies[a] == NULL)
            continue;
        ctl_http_req *r = &c->req[m];
        ctl_http_req_clear(r);
        r->method = "PUT";
        agent_url(c, a, "/v1/caps", r->url, sizeof r->url);
        r->token = c->cfg.agents[a].token;
        r->body = c->bodies[a];
        map[m++] = a;
    }
    if (e == PFI_OK)
        e = ctl_http_run(c->http, c->req, m, c->cfg.http_timeout_s);
    bool *pending = pfi_calloc(n, sizeof *pending);
    if (pending == NULL)
        e = PFI_ERR_NOMEM;
    size_t npend = 0;
    if (e == PFI_OK)
        e = take_put_answers(c, send, phase, now_s, map, m, pending, &npend, sent);
    if (e == PFI_OK)
        e = wait_confirmed(c, send, phase, pending, &npend);
    *unconfirmed = npend;
    pfi_free(pending);
    pfi_free(map);
    return e;
}

static double stage_cost_total(pfi_ctl *c)
{
    double s = 0;
    for (size_t k = 0; k < c->ng; k++) {
        const cgpu *g = &c->g[k];
        double cap = isfinite(g->confirmed_w) ? g->confirmed_w : g->max_w;
        s += stage_cost(c, k, cap);
    }
    return s;
}

/* The emulated clock: every agent's moved to clock_start_s + t_s (POST /v1/clock {t_s,
 * unix_s}), concurrently; an agent that does not move is this period's fault (its readings
 * age and go stale). At the first advance an agent that refuses the clock (409: it runs on
 * the wall clock, or its clock is already past t_s) is a wrong set-up, not a fault to run
 * on: PFI_ERR_INVALID_ARGUMENT naming it. Errors: PFI_ERR_NOMEM, PFI_ERR_INVALID_ARGUMENT. */
static pfi_error advance_clocks(pfi_ctl *c, double t_s, pfi_diag *d)
{
    size_t n = c->cfg.n_agents;
    for (size_t a = 0; a < n; a++) {
        pfi_free(c->bodies[a]);
        c->bodies[a] = pfi_malloc(96);
        if (c->bodies[a] == NULL)
            return PFI_ERR_NOMEM;
        snprintf(c->bodies[a], 96, "{\"t_s\":%.17g,\"unix_s\":%.17g}", c->cfg.clock_start_s + t_s,
                 c->clock_now_s);
        ctl_http_req *r = &c->req[a];
        ctl_http_req_clear(r);
        r->method = "POST";
        agent_url(c, a, "/v1/clock", r->url, sizeof r->url);
        r->token = c->cfg.agents[a].token;
        r->body = c->bodies[a];
    }
    pfi_error e = ctl_http_run(c->http, c->req, n, c->cfg.http_timeout_s);
    for (size_t a = 0; e == PFI_OK && a < n; a++)
        if (c->req[a].status != 200) {
            char det[120];
            answer_detail(&c->req[a], det, sizeof det);
            if (!c->clock_moved && c->req[a].status == 409)
                return ctl_fail(d, 0, PFI_ERR_INVALID_ARGUMENT,
                                "agent %s refuses the emulated clock (409: %s): --clock emulated "
                                "needs every agent started with clock = emulated, and fresh "
                                "(an agent's clock does not go back)",
                                c->cfg.agents[a].url, det);
            agent_fault(c, a, c->req[a].status, "POST /v1/clock", det);
        }
    if (e == PFI_OK)
        c->clock_moved = true;
    return e;
}

/* ---- one period ------------------------------------------------------------------------- */

/* The mean over job ix's GPUs of the Prometheus feature named name, in the model's unit:
 * a Prometheus feature of that name, else — a model names features as the library and
 * `pfi fit` do (dcgm_dram_active), the feature map (--prom-features) as telemetry does
 * (dram_active) — the one the feature table (pfi/featmap.h) maps it from, converted.
 * false when there is none or a GPU lacks it. */
static bool job_feature(const pfi_ctl *c, size_t ix, const char *name, double *out)
{
    double scale = 1;
    size_t k = 0;
    while (k < c->prom.n_features && strcmp(c->prom.feature_name[k], name) != 0)
        k++;
    if (k == c->prom.n_features) {
        const pfi_featmap_entry *m = pfi_featmap_by_predictor(name);
        if (m == NULL)
            return false;
        k = 0;
        while (k < c->prom.n_features && strcmp(c->prom.feature_name[k], m->reduced) != 0)
            k++;
        if (k == c->prom.n_features)
            return false;
        scale = m->scale;
    }
    double s = 0;
    size_t n = 0;
    for (size_t gi = 0; gi < c->ng; gi++) {
        const cgpu *g = &c->g[gi];
        if (!g->seen || g->job_ix != ix)
            continue;
        const ctl_prom_gpu *pg = ctl_prom_find(&c->prom, g->host, g->uuid);
        if (pg == NULL || !isfinite(pg->feature[k]))
            return false;
        s += pg->feature[k];
        n++;
    }
    if (n == 0)
        return false;
    *out = scale * s / (double)n;
    return true;
}

/* Live features of job ix for the model: per feature of the model (a name, or "A*B": the
 * product's own name when the feature map has it, else the product of the means), the mean
 * over the job's GPUs of the Prometheus feature; false when one is missing. */
static bool job_features(const pfi_ctl *c, size_t ix, double *x)
{
    if (c->model == NULL || !c->prom_on)
        return false;
    for (size_t f = 0; f < c->model->p; f++) {
        if (job_feature(c, ix, c->model->features[f], &x[f]))
            continue;
        char name[256];
        if (!ctl_copy(name, sizeof name, c->model->features[f]))
            return false;
        char *star = strchr(name, '*');
        if (star == NULL)
            return false;
        *star = '\0';
        double a, b;
        if (!job_feature(c, ix, name, &a) || !job_feature(c, ix, star + 1, &b))
            return false;
        x[f] = a * b;
    }
    return true;
}

static void estimate_curve(pfi_ctl *c, size_t ix)
{
    cjob *j = &c->j[ix];
    const pfi_ctl_rule *rule = pfi_ctl_policy_find(c->cfg.rules, c->cfg.n_rules, j->id);
    if (rule != NULL && rule->job_class[0])
        ctl_copy(j->cls, sizeof j->cls, rule->job_class);
    double g = (double)j->ngpus;
    bool tput_known = isfinite(j->ref_tput_pg);
    double ref_t = tput_known ? j->ref_tput_pg * g : 1.0;
    if (ctl_curve_from_store(c->store, j->id, j->ref_pg_w * g, ref_t, j->lo_w, j->hi_w,
                             &j->curve)) {
        j->src = PFI_CURVE_STORE;
        j->pfi = NAN;
    } else {
        double x[PFI_FIT_MAX_FEATURES], yhat = NAN, lo, hi;
        bool outside;
        j->src = PFI_CURVE_PRIOR;
        j->pfi = pfi_ctl_prior_pfi(j->cls[0] ? j->cls : NULL);
        /* the model was fitted on features of reference (uncapped) runs: it is applied while
         * the job runs uncapped (the median of the last CTL_REF_WINDOW such periods, as the
         * reference power), and that estimate is kept while the job is capped, when its DRAM
         * and tensor activity follow the cap rather than the job. Once it has an estimate, a
         * job just uncapped waits a period: the features (a scrape, a sampling interval, the
         * clocks' lag) still show the caps. A PFI is kept in [1.05, 3], the paper's range a
         * little wider. */
        if (j->at_ref && (j->uncapped_run >= 2 || isnan(j->model_pfi)) && job_features(c, ix, x) &&
            pfi_fit_model_predict(c->model, x, 0.9, &yhat, &lo, &hi, &outside) == PFI_OK &&
            isfinite(yhat))
            j->model_pfi = ctl_window_median(j->pfi_hist, &j->pfi_n, fmin(3.0, fmax(1.05, yhat)));
        if (c->model != NULL && isfinite(j->model_pfi)) {
            j->pfi = j->model_pfi;
            j->src = PFI_CURVE_MODEL;
        }
        if (ctl_curve_from_pfi(j->pfi, j->ref_pg_w, j->lo_w, j->hi_w, j->ngpus, ref_t, &j->share,
                               &j->curve) != PFI_OK) {
            j->curve.n = 2; /* a flat fallback keeps the job at its caps */
            j->curve.cap_w[0] = j->lo_w;
            j->curve.cap_w[1] = j->hi_w;
            j->curve.power_w[0] = j->curve.power_w[1] = j->ref_pg_w * g;
            j->curve.tput[0] = j->curve.tput[1] = ref_t;
        }
    }
    if (!tput_known && isfinite(j->tput) && j->tput > 0) {
        /* the reference throughput from the live one through the curve's shape */
        double f = ctl_curve_tput(&j->curve, j->cap_now_w) / ctl_curve_tput(&j->curve, j->hi_w);
        if (f > 0) {
            j->ref_tput_pg = j->tput / f / g;
            for (size_t k = 0; k < j->curve.n; k++)
                j->curve.tput[k] *= j->ref_tput_pg * g;
        }
    }
}

/* The objective's scale (pfi_ctl_objective): the mean GPUs and reference tokens/s of the
 * seen jobs that have a reference tokens/s (NaN when none has). */
static void objective_means(const pfi_ctl *c, double *g_mean, double *t_mean)
{
    double g = 0, t = 0;
    size_t n = 0;
    for (size_t i = 0; i < c->nj; i++) {
        const cjob *j = &c->j[i];
        double tr = j->ref_tput_pg * (double)j->ngpus;
        if (j->seen && tr > 0 && isfinite(tr)) {
            g += (double)j->ngpus;
            t += tr;
            n++;
        }
    }
    *g_mean = n ? g / (double)n : NAN;
    *t_mean = n ? t / (double)n : NAN;
}

double ctl_objective_factor(pfi_ctl_objective o, double gpus, double ref_tput, double g_mean,
                            double t_mean)
{
    if (o == PFI_CTL_OBJECTIVE_TOKENS || !(ref_tput > 0) || !isfinite(ref_tput) || !(t_mean > 0) ||
        !isfinite(t_mean) || !(g_mean > 0) || !isfinite(g_mean))
        return 1;
    double s = gpus / g_mean;
    if (o == PFI_CTL_OBJECTIVE_MEAN)
        s = 1;
    else if (o == PFI_CTL_OBJECTIVE_BALANCED)
        s = (s + 1) / 2;
    return s * t_mean / ref_tput;
}

/* Job j's factor on its policy weight (ctl_objective_factor). */
static double objective_factor(const pfi_ctl *c, const cjob *j, double g_mean, double t_mean)
{
    return ctl_objective_factor(c->cfg.objective, (double)j->ngpus,
                                j->ref_tput_pg * (double)j->ngpus, g_mean, t_mean);
}

static pfi_error allocate_jobs(pfi_ctl *c, double budget, pfi_ctl_report *rep)
{
    size_t nj = 0, npts = 0;
    for (size_t i = 0; i < c->nj; i++)
        if (c->j[i].seen) {
            nj++;
            npts += c->j[i].curve.n;
        }
    if (nj == 0)
        return PFI_OK;
    pfi_error e = PFI_ERR_NOMEM;
    size_t *off = pfi_malloc((nj + 1) * sizeof *off), *jx = pfi_malloc(nj * sizeof *jx);
    double *buf = pfi_malloc((3 * npts + 7 * nj) * sizeof *buf);
    pfi_alloc_result r;
    memset(&r, 0, sizeof r);
    if (off == NULL || jx == NULL || buf == NULL)
        goto out;
    double *cap = buf, *pw = cap + npts, *tp = pw + npts, *gp = tp + npts, *wt = gp + nj,
           *fl = wt + nj, *lo = fl + nj, *hi = lo + nj, *pf = hi + nj, *ft = pf + nj;
    size_t m = 0, p = 0;
    double g_mean, t_mean;
    objective_means(c, &g_mean, &t_mean);
    off[0] = 0;
    for (size_t i = 0; i < c->nj; i++) {
        cjob *j = &c->j[i];
        if (!j->seen)
            continue;
        for (size_t k = 0; k < j->curve.n; k++, p++) {
            cap[p] = j->curve.cap_w[k];
            pw[p] = j->curve.power_w[k];
            tp[p] = j->curve.tput[k];
        }
        const pfi_ctl_rule *rule = pfi_ctl_policy_find(c->cfg.rules, c->cfg.n_rules, j->id);
        gp[m] = (double)j->ngpus;
        wt[m] = (rule && isfinite(rule->weight) ? rule->weight : 1) *
                objective_factor(c, j, g_mean, t_mean);
        fl[m] = rule ? rule->floor_frac : NAN;
        lo[m] = NAN;
        hi[m] = NAN;
        pf[m] = isfinite(j->pfi) ? j->pfi : pfi_ctl_prior_pfi(j->cls);
        ft[m] = 1;
        jx[m] = i;
        off[++m] = p;
    }
    unsigned char *deep = pfi_calloc(nj, 1);
    if (deep == NULL)
        goto out;
    for (size_t k = 0; k < nj; k++)
        deep[k] = strcmp(c->j[jx[k]].cls, "moe-ft") == 0;
    /* pfi-model decides on the estimated curves and applies the sheds to the true ones; here
     * the controller's curves are both: left to itself, pfi-model would rebuild a §7 curve
     * from pf[] — the class prior for a job on a measured (store) curve, whose sweep would
     * then shape only the cap that the prior's shed maps to, never the shed itself */
    pfi_alloc_jobs aj = {.n = nj,
                         .offset = off,
                         .cap_w = cap,
                         .power_w = pw,
                         .tput_tok_s = tp,
                         .gpus = gp,
                         .weight = wt,
                         .floor_frac = fl,
                         .cap_lo_w = lo,
                         .cap_hi_w = hi,
                         .pfi = pf,
                         .feature = ft,
                         .deep_cut = deep,
                         .model_alpha = NULL,
                         .est_power_w = pw,
                         .est_tput_tok_s = tp};
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    o.strategy = c->cfg.strategy;
    o.budget_w = fmax(0, budget);
    if ((e = pfi_alloc_result_init(&r, nj)) != PFI_OK) {
        pfi_free(deep);
        goto out;
    }
    pfi_diag d;
    e = pfi_allocate(&aj, &o, &r, &d);
    pfi_free(deep);
    if (e != PFI_OK) {
        snprintf(rep->note, sizeof rep->note, "allocation failed: %.200s", d.message);
        e = PFI_OK; /* keep the caps as they are this period */
        goto out;
    }
    if (!r.feasible) {
        snprintf(rep->note, sizeof rep->note,
                 "budget infeasible: every job at its floor still needs %.0f W more",
                 r.shortfall_w);
        rep->infeasible = true;
        rep->shortfall_w = r.shortfall_w;
    }
    for (size_t k = 0; k < nj; k++) {
        cjob *j = &c->j[jx[k]];
        j->cap_w = floor(r.cap_w[k]);
        j->pred_w = ctl_curve_power(&j->curve, j->cap_w);
    }
    for (size_t gi = 0; gi < c->ng; gi++) {
        cgpu *g = &c->g[gi];
        if (!g->seen || g->job_ix == SIZE_MAX)
            continue;
        g->target_w = fmin(fmax(c->j[g->job_ix].cap_w, g->min_w), g->original_w);
    }
out:
    pfi_alloc_result_clear(&r);
    pfi_free(off);
    pfi_free(jx);
    pfi_free(buf);
    return e;
}

/* The controller allocates on the tree (a topology, a ramp to honour, or priority bands:
 * the tree allocator orders the cuts by band, the flat one has no bands). */
static bool tree_mode(const pfi_ctl *c)
{
    if (c->cfg.topology != NULL)
        return true;
    for (size_t i = 1; i < c->cfg.n_rules; i++) {
        double b0 = isfinite(c->cfg.rules[0].band) ? c->cfg.rules[0].band : 0;
        double bi = isfinite(c->cfg.rules[i].band) ? c->cfg.rules[i].band : 0;
        if (bi != b0)
            return true;
    }
    if (c->cfg.n_rules > 0 && isfinite(c->cfg.rules[0].band) && c->cfg.rules[0].band != 0)
        return true; /* a job without a rule is in band 0 */
    return isfinite(c->cfg.ramp_up_w_per_s) || isfinite(c->cfg.ramp_down_w_per_s);
}

/* GPU g's node in the topology (looked up once per hostname). */
static size_t gpu_topo(const pfi_ctl *c, cgpu *g)
{
    if (g->topo_ix == SIZE_MAX - 1) {
        size_t ix;
        g->topo_ix = c->cfg.topology != NULL && g->host[0] != '\0' &&
                             pfi_topology_find_host(c->cfg.topology, g->host, &ix) == PFI_OK
                         ? ix
                         : PFI_TOPO_NONE;
    }
    return g->topo_ix;
}

/* The parts of this period: each job's GPUs on one node. */
typedef struct tpart {
    size_t job, node, gpus, next; /* next: the job's next part (SIZE_MAX: last) */
    double cap_sum_w;             /* Σ confirmed caps of its GPUs */
    double power_w;               /* Σ its GPUs' measured power (NaN: one is missing) */
} tpart;

/* Allocate on the tree: every seen job split into parts per node, each part the job's curve
 * scaled to its GPUs, under the budget and every level's limit less what silent agents and
 * GPUs without a job hold under it, with the ramps' bounds; the parts' caps become the GPUs'
 * targets. budget INFINITY: no budget (after an event, ramping back up). Errors: NOMEM. */
static pfi_error allocate_tree_jobs(pfi_ctl *c, double budget, pfi_ctl_report *rep)
{
    const pfi_topology *T = c->cfg.topology;
    size_t nn = T ? T->n : 0, np = 0, npts = 0;
    pfi_error e = PFI_ERR_NOMEM;
    tpart *pt = pfi_malloc((c->ng + 1) * sizeof *pt);
    size_t *head = pfi_malloc((c->nj + 1) * sizeof *head);
    double *held = pfi_calloc(nn + 1, sizeof *held);
    double *buf = NULL;
    size_t *off = NULL, *pnode = NULL;
    unsigned char *deep = NULL;
    pfi_alloc_result r;
    memset(&r, 0, sizeof r);
    if (pt == NULL || head == NULL || held == NULL)
        goto out;
    for (size_t i = 0; i < c->nj; i++)
        head[i] = SIZE_MAX;
    for (size_t gi = 0; gi < c->ng; gi++) {
        cgpu *g = &c->g[gi];
        size_t node = gpu_topo(c, g);
        if (!g->seen || g->job_ix == SIZE_MAX) {
            /* held under its node: a silent agent's last cap (else its maximum), a GPU
             * without a job at its cap */
            double w = isfinite(g->confirmed_w) ? g->confirmed_w : g->max_w;
            if (node != PFI_TOPO_NONE && isfinite(w))
                held[node] += w;
            continue;
        }
        size_t k = head[g->job_ix];
        while (k != SIZE_MAX && pt[k].node != node)
            k = pt[k].next;
        if (k == SIZE_MAX) {
            k = np++;
            pt[k] = (tpart){.job = g->job_ix, .node = node, .next = head[g->job_ix]};
            head[g->job_ix] = k;
            npts += c->j[g->job_ix].curve.n;
        }
        pt[k].gpus++;
        pt[k].cap_sum_w += isfinite(g->confirmed_w) ? g->confirmed_w : g->max_w;
        pt[k].power_w += g->power_w; /* NaN when a reading is missing: the prediction then */
        g->part = k;
    }
    if (np == 0) {
        e = PFI_OK;
        goto out;
    }
    off = pfi_malloc((np + 1) * sizeof *off);
    pnode = pfi_malloc(np * sizeof *pnode);
    buf = pfi_malloc((3 * npts + 8 * np) * sizeof *buf);
    deep = pfi_calloc(np, 1);
    if (off == NULL || pnode == NULL || buf == NULL || deep == NULL)
        goto out;
    double *cap = buf, *pw = cap + npts, *tp = pw + npts, *gp = tp + npts, *wt = gp + np,
           *fl = wt + np, *band = fl + np, *prev = band + np, *meas = prev + np, *pf = meas + np,
           *ft = pf + np;
    size_t q = 0;
    double g_mean, t_mean;
    objective_means(c, &g_mean, &t_mean);
    off[0] = 0;
    for (size_t k = 0; k < np; k++) {
        const cjob *j = &c->j[pt[k].job];
        double share = (double)pt[k].gpus / (double)j->ngpus;
        for (size_t m = 0; m < j->curve.n; m++, q++) {
            cap[q] = j->curve.cap_w[m];
            pw[q] = j->curve.power_w[m] * share;
            tp[q] = j->curve.tput[m] * share;
        }
        off[k + 1] = q;
        const pfi_ctl_rule *rule = pfi_ctl_policy_find(c->cfg.rules, c->cfg.n_rules, j->id);
        gp[k] = (double)pt[k].gpus;
        wt[k] = (rule && isfinite(rule->weight) ? rule->weight : 1) *
                objective_factor(c, j, g_mean, t_mean);
        fl[k] = rule ? rule->floor_frac : NAN;
        band[k] = rule && isfinite(rule->band) ? rule->band : 0;
        /* what the pfi-* strategies read, as the flat allocation gives it */
        pf[k] = isfinite(j->pfi) ? j->pfi : pfi_ctl_prior_pfi(j->cls);
        ft[k] = 1;
        deep[k] = strcmp(j->cls, "moe-ft") == 0;
        pnode[k] = pt[k].node;
        prev[k] = ctl_curve_power(&j->curve, pt[k].cap_sum_w / (double)pt[k].gpus) * share;
        meas[k] = pt[k].power_w;
    }
    pfi_alloc_jobs aj = {.n = np,
                         .offset = off,
                         .cap_w = cap,
                         .power_w = pw,
                         .tput_tok_s = tp,
                         .gpus = gp,
                         .weight = wt,
                         .floor_frac = fl,
                         .pfi = pf,
                         .feature = ft,
                         .deep_cut = deep,
                         .est_power_w = pw,
                         .est_tput_tok_s = tp};
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    o.strategy = c->cfg.strategy;
    o.budget_w = isfinite(budget) ? fmax(0, budget) : 1e15;
    if ((e = pfi_alloc_result_init(&r, np)) != PFI_OK)
        goto out;
    bool ramps = isfinite(c->cfg.ramp_up_w_per_s) || isfinite(c->cfg.ramp_down_w_per_s);
    for (size_t a = 0; a < nn && !ramps; a++)
        ramps = isfinite(T->ramp_up_w_per_s[a]) || isfinite(T->ramp_down_w_per_s[a]);
    /* the measured move of the parts since the last plan against the planned one: a
     * steeper true curve (a move 16 % faster than planned) slows the next moves by as much
     * (kept >= 1, at most 3, decaying back to 1 by a quarter of its excess a period) */
    double msum = 0, psum = 0;
    bool mok = true;
    for (size_t k = 0; k < np; k++) {
        msum += meas[k];
        psum += prev[k];
        mok = mok && isfinite(meas[k]);
    }
    /* the tree allocator's buffers, kept between periods */
    if (c->tree_ws == NULL && (e = pfi_alloc_tree_workspace_create(&c->tree_ws)) != PFI_OK)
        goto out;
    c->ramp_gain =
        ctl_ramp_gain_next(c->ramp_gain, mok ? c->ramp_plan_w : NAN, msum - c->ramp_meas_w, psum);
    ctl_tree_in in = {.topo = T,
                      .part_node = pnode,
                      .band = band,
                      .held_w = held,
                      .prev_w = ramps ? prev : NULL,
                      .meas_w = meas,
                      .ramp_gain = c->ramp_gain,
                      .dt_s = c->cfg.period_s,
                      .site_up_w_per_s = c->cfg.ramp_up_w_per_s,
                      .site_down_w_per_s = c->cfg.ramp_down_w_per_s,
                      .margin = c->cfg.margin,
                      .fill = !isfinite(budget),
                      .ws = c->tree_ws};
    ctl_tree_out to;
    pfi_diag d;
    pfi_diag_clear(&d);
    e = ctl_tree_allocate(&aj, &o, &in, &r, &to, &d);
    if (e == PFI_ERR_NOMEM)
        goto out;
    if (e != PFI_OK) {
        snprintf(rep->note, sizeof rep->note, "allocation failed: %.200s", d.message);
        e = PFI_OK; /* keep the caps as they are this period */
        goto out;
    }
    double planned = 0;
    for (size_t k = 0; k < np; k++)
        planned += r.power_w[k] - prev[k];
    c->ramp_plan_w = mok ? planned : NAN;
    c->ramp_meas_w = msum;
    snprintf(rep->bound, sizeof rep->bound, "%s", to.bound);
    rep->ramp_limited = to.ramp_limited;
    rep->ramp_down_w_per_s = to.down_w_per_s;
    if (!r.feasible) {
        rep->infeasible = true;
        rep->shortfall_w = r.shortfall_w;
        if (to.ramp_limited)
            snprintf(rep->note, sizeof rep->note,
                     "ramp: the budget needs a faster fall than the ramps allow (%.0f W/s): "
                     "falling at that rate",
                     to.down_w_per_s);
        else
            snprintf(rep->note, sizeof rep->note, "infeasible: %.200s", d.message);
    }
    for (size_t i = 0; i < c->nj; i++)
        c->j[i].cap_w = c->j[i].pred_w = NAN;
    for (size_t k = 0; k < np; k++) {
        cjob *j = &c->j[pt[k].job];
        double cw = floor(r.cap_w[k] + 1e-6) * (double)pt[k].gpus;
        j->cap_w = isnan(j->cap_w) ? cw : j->cap_w + cw;
        j->pred_w = isnan(j->pred_w) ? r.power_w[k] : j->pred_w + r.power_w[k];
    }
    for (size_t i = 0; i < c->nj; i++)
        if (c->j[i].seen && c->j[i].ngpus > 0)
            c->j[i].cap_w /= (double)c->j[i].ngpus; /* the GPUs' mean, for the log */
    for (size_t gi = 0; gi < c->ng; gi++) {
        cgpu *g = &c->g[gi];
        if (!g->seen || g->job_ix == SIZE_MAX)
            continue;
        double want = floor(r.cap_w[g->part] + 1e-6);
        g->target_w = want >= g->original_w - 1 ? g->original_w : fmax(want, g->min_w);
    }
out:
    pfi_alloc_result_clear(&r);
    pfi_free(pt);
    pfi_free(head);
    pfi_free(held);
    pfi_free(off);
    pfi_free(pnode);
    pfi_free(buf);
    pfi_free(deep);
    return e;
}

/* What one period measured and decided, handed from phase to phase of pfi_ctl_step. */
typedef struct period {
    bool event;           /* a budget is in force */
    double reserve_w;     /* held for the GPUs of agents that do not answer */
    double unmanaged_w;   /* drawn (else capped) by answering GPUs without a job */
    double measured_w;    /* measured power of the answering GPUs */
    double ref_w;         /* Σ jobs' reference power + unmanaged + reserve */
    double min_w;         /* Σ jobs' power at their lowest caps + unmanaged + reserve */
    double tput_tok_s;    /* Σ jobs' measured tokens/s */
    double predicted_w;   /* the curves at the confirmed caps (the reserve's GPUs at theirs) */
    double budget_w;      /* the cluster budget B (NaN outside an event) */
    double stage_limit_w; /* what the staged increases must fit under */
    bool blind;           /* a GPU lacks a trustworthy reading: hold the last safe caps */
    bool lagged;          /* a reading predates its agent's last cap change (a budget change
                             did not wait): no ground for the feedback or the over-budget count */
} period;

/* A new period: the report cleared, every GPU and job unseen until read. */
static void period_begin(pfi_ctl *c, double t_s, bool event, pfi_ctl_report *rep)
{
    memset(rep, 0, sizeof *rep);
    rep->t_s = t_s;
    rep->event = event;
    rep->lead = event && c->lead;
    rep->agents = c->cfg.n_agents;
    rep->budget_w = NAN;
    rep->alloc_budget_w = NAN;
    rep->shortfall_w = NAN;
    rep->over_w = NAN;
    rep->ramp_down_w_per_s = INFINITY;
    c->n_refused = 0;
    c->refusal[0] = '\0';
    for (size_t a = 0; a < c->cfg.n_agents; a++)
        c->fault[a][0] = '\0';
    for (size_t i = 0; i < c->ng; i++) {
        c->g[i].refused_status = 0;
        c->g[i].seen = false;
        c->g[i].target_w = NAN;
        c->g[i].job_ix = SIZE_MAX;
        c->g[i].reading = CTL_READING_MISSING;
    }
    for (size_t i = 0; i < c->nj; i++)
        job_reset(&c->j[i]);
    c->period_id = -1;
}

/* Prometheus: the GPUs' power from the server when it answers for any of them; otherwise
 * the agents' power stays, and the note says why. Errors: PFI_ERR_NOMEM. */
static pfi_error read_prometheus(pfi_ctl *c, pfi_ctl_report *rep)
{
    pfi_diag pd;
    pfi_diag_clear(&pd);
    pfi_error pe = ctl_prom_read(&c->prom, c->http, &c->cfg.prom, c->last_change_wall_s, &pd);
    if (pe == PFI_ERR_NOMEM)
        return pe;
    size_t matched = 0, stale = 0, glitch = 0;
    if (pe == PFI_OK) {
        /* two scrape intervals: the configured one, else the one the counters show, else
         * Prometheus' default 15 s */
        double iv = isfinite(c->cfg.prom.scrape_interval_s) ? c->cfg.prom.scrape_interval_s
                    : isfinite(c->prom.interval_s)          ? c->prom.interval_s
                                                            : 15.0;
        /* at least 2 s: a loaded server scrapes late, and holding the caps is not free */
        double bound = isfinite(c->cfg.stale_after_s) ? c->cfg.stale_after_s : fmax(2.0, 2 * iv);
        double now = now_wall();
        for (size_t gi = 0; gi < c->ng; gi++) {
            cgpu *g = &c->g[gi];
            const ctl_prom_gpu *pg = g->seen ? ctl_prom_find(&c->prom, g->host, g->uuid) : NULL;
            if (pg == NULL)
                continue;
            ctl_reading v = ctl_reading_check(pg->power_w, pg->sample_t_s, now, bound, g->max_w);
            if (v == CTL_READING_OK) {
                g->power_w = pg->power_w;
                g->sample_t_s = pg->sample_t_s;
                g->reading = v;
                matched++;
            } else if (v == CTL_READING_STALE) {
                stale++; /* the agent's own reading, when it is fresh, stands */
            } else if (v == CTL_READING_GLITCH) {
                glitch++;
            }
        }
    }
    if (stale > 0 || glitch > 0) {
        char buf[160];
        snprintf(buf, sizeof buf,
                 "Prometheus: %zu stale and %zu impossible reading(s) rejected; the agents' "
                 "readings used",
                 stale, glitch);
        if (rep->note[0] == '\0')
            snprintf(rep->note, sizeof rep->note, "%s", buf);
        rep->glitch_gpus += glitch;
        rep->prom_stale_gpus = stale;
        c->prom_stale = stale;
    } else {
        c->prom_stale = 0;
    }
    if (matched > 0) {
        rep->prom_used = true;
    } else {
        rep->prom_failed = true;
        snprintf(rep->note, sizeof rep->note,
                 "Prometheus unavailable (%.160s): using the agents' power",
                 pe != PFI_OK ? pd.message
                 : stale > 0  ? "every reading stale: its samples are older than the bound"
                 : glitch > 0 ? "every reading impossible"
                              : "no GPU of the agents in its answer");
    }
    return PFI_OK;
}

/* Phase read: every agent's state (GPUs, jobs), then Prometheus. Errors: PFI_ERR_NOMEM. */
static pfi_error period_read(pfi_ctl *c, pfi_ctl_report *rep)
{
    pfi_error e = read_agents(c, NULL, true, rep);
    if (e != PFI_OK)
        return e;
    for (size_t a = 0; a < c->cfg.n_agents; a++)
        rep->agents_up += c->up[a];
    return c->prom_on ? read_prometheus(c, rep) : PFI_OK;
}

/* The GPUs counted: the reserve for silent agents, unmanaged power, measured power, and
 * each job's GPUs, power and cap range. Errors: PFI_ERR_NOMEM. */
static pfi_error tally_gpus(pfi_ctl *c, period *p, pfi_ctl_report *rep)
{
    size_t n_read = 0;
    for (size_t gi = 0; gi < c->ng; gi++) {
        cgpu *g = &c->g[gi];
        if (!g->seen) {
            p->reserve_w += isfinite(g->confirmed_w) ? g->confirmed_w : g->max_w;
            continue;
        }
        rep->gpus++;
        if (g->reading == CTL_READING_STALE)
            rep->stale_gpus++;
        else if (g->reading == CTL_READING_GLITCH)
            rep->glitch_gpus++;
        if (g->reading == CTL_READING_STALE || g->reading == CTL_READING_GLITCH)
            p->blind = true; /* a missing reading (none offered) was never trusted */
        if (isfinite(g->power_w)) {
            p->measured_w += g->power_w;
            n_read++;
        }
        if (g->job[0] == '\0') {
            p->unmanaged_w += isfinite(g->power_w) ? g->power_w : g->confirmed_w;
            continue;
        }
        size_t ix;
        if (job_slot(c, g->job, &ix) == NULL)
            return PFI_ERR_NOMEM;
        cjob *j = &c->j[ix];
        g->job_ix = ix;
        j->seen = true;
        j->ngpus++;
        j->power_w += isfinite(g->power_w) ? g->power_w : 0;
        j->n_power += isfinite(g->power_w);
        /* a reading that is not new (a frozen source repeats itself and looks settled) is
         * no ground to learn a reference on */
        if (g->reading == CTL_READING_STALE || g->reading == CTL_READING_GLITCH)
            j->fresh = false;
        if (isfinite(g->prev_sample_t_s) && !(g->sample_t_s > g->prev_sample_t_s))
            j->repeated = true;
        g->prev_sample_t_s = g->sample_t_s;
        j->lo_w = fmax(j->lo_w, g->min_w);
        j->hi_w = fmin(j->hi_w, g->original_w);
        j->cap_now_w += g->confirmed_w;
        if (!(g->confirmed_w >= g->original_w - 0.5))
            j->at_ref = false;
    }
    /* no GPU read (every agent silent or refusing, every reading stale): the power is
     * missing, never 0 W drawn */
    if (n_read == 0)
        p->measured_w = NAN;
    for (size_t i = 0; i < c->nj; i++)
        if (c->j[i].seen && c->j[i].n_power == 0)
            c->j[i].power_w = NAN;
    return PFI_OK;
}

/* Job j's range [lo, hi] (W) added to its policy band's in rep->bands (kept ascending, for a
 * parent controller: issue 18 item 4); past PFI_CTL_MAX_BANDS bands n_bands is left above
 * the bound, for period_estimate to clear. */
static void band_add(const pfi_ctl *c, const cjob *j, double lo, double hi, pfi_ctl_report *rep)
{
    if (rep->n_bands > PFI_CTL_MAX_BANDS)
        return;
    const pfi_ctl_rule *rule =
        c->cfg.n_rules > 0 ? pfi_ctl_policy_find(c->cfg.rules, c->cfg.n_rules, j->id) : NULL;
    double b = rule && isfinite(rule->band) ? rule->band : 0;
    size_t k = 0;
    while (k < rep->n_bands && rep->bands[k].band < b)
        k++;
    if (k == rep->n_bands || rep->bands[k].band != b) {
        if (rep->n_bands == PFI_CTL_MAX_BANDS) {
            rep->n_bands = PFI_CTL_MAX_BANDS + 1;
            return;
        }
        memmove(&rep->bands[k + 1], &rep->bands[k], (rep->n_bands - k) * sizeof rep->bands[0]);
        rep->bands[k] = (pfi_ctl_band_range){.band = b, .min_w = 0, .max_w = 0};
        rep->n_bands++;
    }
    rep->bands[k].min_w += lo;
    rep->bands[k].max_w += hi;
}

/* Phase estimate: the GPUs counted, each job's reference (re)learnt while it runs uncapped
 * and its curve estimated; the reference power of the cluster and the curves' prediction
 * at the confirmed caps. Errors: PFI_ERR_NOMEM. */
static pfi_error period_estimate(pfi_ctl *c, period *p, pfi_ctl_report *rep)
{
    pfi_error e = tally_gpus(c, p, rep);
    if (e != PFI_OK)
        return e;
    p->ref_w = p->unmanaged_w + p->reserve_w;
    p->min_w = p->unmanaged_w + p->reserve_w;
    p->tput_tok_s = NAN; /* missing until a job reports tokens/s: never a measured 0 */
    for (size_t i = 0; i < c->nj; i++) {
        cjob *j = &c->j[i];
        if (!j->seen)
            continue;
        rep->jobs++;
        j->cap_now_w /= (double)j->ngpus;
        if (!(j->hi_w > j->lo_w))
            j->lo_w = j->hi_w - 1;
        j->uncapped_run = j->at_ref ? j->uncapped_run + 1 : 0;
        /* a reference is learnt only from trustworthy readings of a job whose power has
         * settled at its original limits: not from stale or rejected readings, and not while
         * the power still recovers from an earlier cap (the first reading of a job never
         * seen is the exception: it is all there is) */
        bool settled = isfinite(j->last_power_w) &&
                       fabs(j->power_w - j->last_power_w) <= 0.03 * fmax(j->power_w, 1.0);
        /* until one settled reading has been seen (a job just started ramps up), every
         * fresh uncapped one goes into the median; after it, only settled ones three periods
         * after the caps came off */
        bool learn = j->at_ref && j->fresh && j->power_w > 0 && !j->repeated &&
                     (!j->ref_settled || (j->uncapped_run >= 3 && settled));
        if (learn && settled && j->uncapped_run >= 2)
            j->ref_settled = true;
        j->last_power_w = j->at_ref && j->fresh ? j->power_w : NAN;
        if (learn) {
            /* the job runs uncapped: (re)learn its reference, smoothed */
            /* the median of the last CTL_REF_WINDOW uncapped periods: one spiky reading (an
             * energy difference over a short or misaligned span, a load transient) moves an
             * average, and an event's budget (1 − reduction) × reference with it */
            j->ref_pg_w = ctl_window_median(j->ref_hist, &j->ref_n, j->power_w / (double)j->ngpus);
            if (isfinite(j->tput) && j->tput > 0)
                j->ref_tput_pg =
                    ctl_window_median(j->tput_hist, &j->tput_n, j->tput / (double)j->ngpus);
        }
        if (!isfinite(j->ref_pg_w))
            j->ref_pg_w = 0.93 * j->hi_w; /* prior: a training job draws ~93 % of its limit */
        estimate_curve(c, i);
        double hi = ctl_curve_power(&j->curve, j->hi_w), lo = ctl_curve_power(&j->curve, j->lo_w);
        p->ref_w += hi;
        p->min_w += lo;
        band_add(c, j, lo, hi, rep);
        if (isfinite(j->tput))
            p->tput_tok_s = isnan(p->tput_tok_s) ? j->tput : p->tput_tok_s + j->tput;
    }
    if (rep->n_bands > PFI_CTL_MAX_BANDS)
        rep->n_bands = 0; /* more bands than reported: none (a parent sees one band) */
    p->predicted_w = stage_cost_total(c);
    bool any_seen = false; /* no GPU ever read: nothing predicted, not 0 W */
    for (size_t gi = 0; gi < c->ng && !any_seen; gi++)
        any_seen = c->g[gi].seen;
    if (!any_seen)
        p->predicted_w = NAN;
    return PFI_OK;
}

/* Phase budget: the budget B in force (a reduction of the reference, or cluster watts), the
 * feedback correction, and every GPU's target: the allocation's caps during an event, the
 * originals otherwise, staged under stage_limit_w. Errors: PFI_ERR_NOMEM. */
static pfi_error period_budget(pfi_ctl *c, period *p, double budget_w, double reduction,
                               pfi_ctl_report *rep)
{
    double predicted_managed = p->predicted_w - p->reserve_w - p->unmanaged_w;
    p->budget_w = NAN;
    /* a reduction of a reference not known yet (no job seen: every agent silent since the
     * start) is no budget of 0 W: missing, and nothing is allocated until it is known */
    if (p->event)
        p->budget_w = !isnan(budget_w) ? budget_w : p->ref_w > 0 ? (1 - reduction) * p->ref_w : NAN;
    /* feedback: the curves' error on the managed GPUs, integrated, bounded */
    double scale = isfinite(p->budget_w) ? p->budget_w : p->ref_w;
    /* anti-windup (control/ctl_guard.h): integrate only on a settled, confirmed state with
     * every reading trustworthy; fade out after the event */
    ctl_feedback_in fi = {.event = p->event,
                          .caps_confirmed = c->prev_settled,
                          .quiet = (unsigned)c->quiet,
                          .readings_fresh = !p->blind && !p->lagged,
                          .measured_w = p->measured_w - p->unmanaged_w,
                          .predicted_w = predicted_managed,
                          .scale_w = scale,
                          .gain = c->cfg.feedback_gain,
                          .bound = c->cfg.feedback_bound,
                          .lower = 0.5 * c->cfg.margin,
                          .settle_tol = 0.01};
    c->fb.correction_w = c->correction_w;
    rep->feedback_updated = ctl_feedback_update(&c->fb, &fi);
    c->correction_w = c->fb.correction_w;
    /* targets */
    p->stage_limit_w = INFINITY;
    if (p->event && isfinite(p->budget_w)) {
        double ab =
            p->budget_w * (1 - c->cfg.margin) - p->reserve_w - p->unmanaged_w - c->correction_w;
        rep->alloc_budget_w = ab;
        p->stage_limit_w = p->budget_w * (1 - c->cfg.margin) - c->correction_w;
        pfi_error e = tree_mode(c) ? allocate_tree_jobs(c, ab, rep) : allocate_jobs(c, ab, rep);
        if (e != PFI_OK)
            return e;
    } else if (!p->event) {
        /* the curves' prediction is as good as during an event: the same margin keeps the
         * measured power under the limit (staged at the limit itself, it drew a little over) */
        if (isfinite(c->cfg.facility_limit_w))
            p->stage_limit_w = c->cfg.facility_limit_w * (1 - c->cfg.margin);
    }
    for (size_t gi = 0; gi < c->ng; gi++) {
        cgpu *g = &c->g[gi];
        if (g->seen && (!p->event || g->job_ix == SIZE_MAX))
            g->target_w = g->original_w;
    }
    /* on the tree the limits hold outside an event too, and a ramp brings the power back
     * up no faster than allowed: the jobs' caps from the tree with no budget */
    if (!p->event && tree_mode(c))
        return allocate_tree_jobs(c, INFINITY, rep);
    return PFI_OK;
}

/* The GPUs as the planner sees them (pfi_stage_*). */
static void stage_state(const pfi_ctl *c, pfi_stage_gpu *sg)
{
    for (size_t gi = 0; gi < c->ng; gi++) {
        const cgpu *g = &c->g[gi];
        sg[gi] = (pfi_stage_gpu){.confirmed_w = g->confirmed_w,
                                 .target_w = g->target_w,
                                 .min_w = g->min_w,
                                 .max_w = g->max_w,
                                 .reachable = g->seen && c->up[g->agent]};
    }
}

/* Phase actuate: the decreases sent and confirmed, then the increases that fit under the
 * stage limit; the counts, and whether caps changed (feedback waits for a quiet state).
 * Errors: PFI_ERR_NOMEM. */
static pfi_error period_actuate(pfi_ctl *c, const period *p, double t_s, pfi_ctl_report *rep)
{
    pfi_stage_gpu *sg = pfi_malloc((c->ng + 1) * sizeof *sg);
    double *send = pfi_malloc((c->ng + 1) * sizeof *send);
    bool *moved = pfi_calloc(c->ng + 1, sizeof *moved); /* sent a cap this period */
    if (sg == NULL || send == NULL || moved == NULL) {
        pfi_free(sg);
        pfi_free(send);
        pfi_free(moved);
        return PFI_ERR_NOMEM;
    }
    stage_state(c, sg);
    size_t sent = 0, unconf1 = 0, unconf2 = 0;
    pfi_stage_decreases(sg, c->ng, send);
    for (size_t gi = 0; gi < c->ng; gi++)
        moved[gi] = isfinite(send[gi]);
    pfi_error e = push(c, send, 1, t_s, &sent, &unconf1, false);
    if (e != PFI_OK)
        goto out;
    rep->decreases = sent;
    for (size_t gi = 0; gi < c->ng; gi++) {
        sg[gi].confirmed_w = c->g[gi].confirmed_w;
        sg[gi].reachable = c->g[gi].seen && c->up[c->g[gi].agent];
    }
    /* without trustworthy readings during an event the caps stay where they were last
     * safe: decreases go out, increases wait (never uncapped on a guess) */
    rep->held = p->event && p->blind;
    size_t ninc = 0;
    if (rep->held)
        for (size_t gi = 0; gi < c->ng; gi++)
            send[gi] = NAN;
    else
        ninc = pfi_stage_increases(sg, c->ng, p->stage_limit_w, stage_cost, c, send, NULL);
    for (size_t gi = 0; gi < c->ng; gi++)
        moved[gi] = moved[gi] || isfinite(send[gi]);
    size_t want_inc = 0;
    for (size_t gi = 0; gi < c->ng; gi++)
        if (sg[gi].reachable && isfinite(sg[gi].target_w) && isfinite(sg[gi].confirmed_w) &&
            sg[gi].target_w > sg[gi].confirmed_w + 0.5)
            want_inc++;
    if ((e = push(c, send, 2, t_s, &sent, &unconf2, p->event)) != PFI_OK)
        goto out;
    rep->increases = ninc;
    if (rep->decreases + ninc > 0) {
        c->last_change_wall_s = ctl_wall(c);
        c->quiet = 0;
        /* the agents and jobs whose caps moved: the lockstep waits for their readings only */
        for (size_t gi = 0; gi < c->ng; gi++) {
            if (!moved[gi])
                continue;
            c->moved_at[c->g[gi].agent] = c->last_change_wall_s;
            if (c->g[gi].job_ix != SIZE_MAX)
                c->j[c->g[gi].job_ix].moved_s = c->last_change_wall_s;
        }
    } else {
        c->quiet++;
    }
    rep->unconfirmed = unconf1 + unconf2;
    c->prev_settled = rep->unconfirmed == 0 && ninc == want_inc;
    if (ninc < want_inc && rep->note[0] == '\0')
        snprintf(rep->note, sizeof rep->note, "%zu increase(s) held back by the %s",
                 want_inc - ninc, p->event ? "budget" : "facility limit");
out:
    pfi_free(sg);
    pfi_free(send);
    pfi_free(moved);
    return e;
}

/* The period's report: p's figures, the caps as confirmed now, and whether every GPU is
 * back on its original limit. */
static void period_report(pfi_ctl *c, const period *p, pfi_ctl_report *rep)
{
    double cap_sum = 0;
    bool restored = true;
    for (size_t i = 0; i < c->nj; i++)
        if (c->j[i].seen)
            c->j[i].cap_set_w = 0;
    for (size_t gi = 0; gi < c->ng; gi++) {
        const cgpu *g = &c->g[gi];
        if (!g->seen)
            continue;
        if (isfinite(g->confirmed_w))
            cap_sum += g->confirmed_w;
        if (!(fabs(g->confirmed_w - g->original_w) <= 0.5))
            restored = false;
        /* each job's caps as this period left them (its /metrics gauge, status): the
         * readings' cap_now_w is the period before's */
        if (g->job[0] != '\0' && g->job_ix < c->nj)
            c->j[g->job_ix].cap_set_w += g->confirmed_w;
    }
    for (size_t i = 0; i < c->nj; i++)
        if (c->j[i].seen)
            c->j[i].cap_set_w /= (double)c->j[i].ngpus;
    rep->budget_w = p->budget_w;
    rep->measured_w = p->measured_w;
    /* a silent agent never seen (nor in the audit log) has GPUs unknown: the power to hold
     * for them is unknown (NaN: '-', null), never 0 W; the allocation keeps what is known */
    bool reserve_known = true;
    for (size_t a = 0; a < c->cfg.n_agents; a++)
        if (!c->up[a] && c->agent_first[a] == SIZE_MAX)
            reserve_known = false;
    rep->reserved_w = reserve_known ? p->reserve_w : NAN;
    rep->predicted_w = p->predicted_w;
    rep->correction_w = c->correction_w;
    rep->ref_w = p->ref_w;
    rep->min_w = p->min_w;
    rep->tput_tok_s = p->tput_tok_s;
    rep->cap_sum_w = cap_sum;
    rep->restored = !p->event && restored;
    rep->refused = c->n_refused;
    /* measured over the budget: a period's readings were measured before its caps, under the
     * last period's budget, so they are judged against that one (on a falling ramp, against
     * the new budget every reading would look over by a step). The event's first two periods
     * measure the caps before it and while they come down (pfi report's excess counts from the
     * third too); from its third on, three periods in a row more than 1 % over is a fault (two
     * can be GPUs whose power lags their caps by a period or two: tests/control/lag.sh) */
    c->event_k = p->event && !rep->lead ? c->event_k + 1 : 0;
    double tot = p->measured_w + (reserve_known ? p->reserve_w : 0); /* at least */
    double held = c->held_budget_w;
    bool over = c->event_k >= 3 && rep->agents_up > 0 && isfinite(tot) && isfinite(held) &&
                tot > 1.01 * held;
    if (!p->lagged) /* readings of the caps before: held, neither counted nor cleared */
        c->over_run = over ? c->over_run + 1 : 0;
    rep->over_w = c->over_run >= 3 ? tot - held : NAN;
    c->held_budget_w = p->budget_w;
    for (size_t a = 0; a < c->cfg.n_agents; a++)
        rep->unreachable += !c->up[a];
    double now = ctl_wall(c);
    if (!p->blind || isnan(c->trusted_wall_s))
        c->trusted_wall_s = now;
    rep->stale_s = now - c->trusted_wall_s;
}

/* Phase audit: the period, its caps and every job seen, then the period's transaction
 * committed (rolled back short when a row cannot be written). Errors: PFI_ERR_IO, PFI_ERR_NOMEM. */
static pfi_error period_audit(pfi_ctl *c, const pfi_ctl_report *rep, pfi_diag *d)
{
    if (c->audit == NULL)
        return PFI_OK;
    long id;
    if (ctl_audit_period(c->audit, rep, pfi_strategy_name(c->cfg.strategy), ctl_wall(c), &id) !=
            PFI_OK ||
        ctl_audit_fix_caps(c->audit, id) != PFI_OK) {
        pfi_error e = ctl_fail(d, 0, PFI_ERR_IO, "audit log: cannot record the period");
        ctl_audit_commit(c->audit, NULL);
        return e;
    }
    /* the cap in force per job: confirmed by the agent on every GPU of the job, or why not
       (one pass over the GPUs, not one per job: 10^7 steps a period at 1 000 agents) */
    typedef struct job_caps {
        bool any, all;
        long refused; /* the first refusal's HTTP status among its GPUs; 0 none */
    } job_caps;
    job_caps *jc = pfi_malloc((c->nj ? c->nj : 1) * sizeof *jc);
    if (jc == NULL) {
        ctl_audit_commit(c->audit, NULL);
        return PFI_ERR_NOMEM;
    }
    for (size_t i = 0; i < c->nj; i++)
        jc[i] = (job_caps){.any = false, .all = true, .refused = 0};
    for (size_t gi = 0; gi < c->ng; gi++) {
        const cgpu *g = &c->g[gi];
        if (g->job_ix >= c->nj)
            continue;
        job_caps *q = &jc[g->job_ix];
        q->any = true;
        if (g->refused_status != 0 && q->refused == 0)
            q->refused = g->refused_status;
        if (!isfinite(g->ours_w))
            q->all = false;
    }
    for (size_t i = 0; i < c->nj; i++) {
        const cjob *j = &c->j[i];
        if (!j->seen)
            continue;
        char state[48] = "";
        if (jc[i].refused != 0)
            snprintf(state, sizeof state, "refused (%ld)", jc[i].refused);
        else if (jc[i].any && jc[i].all && isfinite(j->cap_w))
            snprintf(state, sizeof state, "confirmed");
        /* the band in force (its rule's, from --policy, --qos-band or the API; none: 0) */
        const pfi_ctl_rule *rule =
            c->cfg.n_rules > 0 ? pfi_ctl_policy_find(c->cfg.rules, c->cfg.n_rules, j->id) : NULL;
        if (ctl_audit_job(c->audit, id, j->id, j->cls, j->ngpus, j->pfi,
                          pfi_curve_source_name(j->src), j->cap_w, j->ref_pg_w, j->ref_tput_pg,
                          j->power_w, j->pred_w, j->tput, state,
                          rule && isfinite(rule->band) ? rule->band : 0) != PFI_OK) {
            pfi_error e = ctl_fail(d, 0, PFI_ERR_IO, "audit log: cannot record job %s", j->id);
            pfi_free(jc);
            ctl_audit_commit(c->audit, NULL);
            return e;
        }
    }
    pfi_free(jc);
    return ctl_audit_commit(c->audit, d);
}

/* One period, in phases: read, estimate, budget, actuate, then report and audit. A phase
 * that fails ends the period (its audit transaction committed as far as it got). */
/* Whether a GPU with a trusted reading this period has one stamped before t (Unix s). */
static bool reading_before(const pfi_ctl *c, const cgpu *g)
{
    return g->seen && g->reading == CTL_READING_OK && isfinite(g->sample_t_s) &&
           g->sample_t_s < c->need_at[g->agent];
}

static bool readings_before(const pfi_ctl *c)
{
    for (size_t gi = 0; gi < c->ng; gi++)
        if (reading_before(c, &c->g[gi]))
            return true;
    return false;
}

/* The lockstep's bound per agent (need_at): its readings must be stamped after the last
 * period that sent a cap to one of its GPUs, or to a GPU of a job it runs (a job on several
 * nodes slows as one), and the settling after it; -inf where none was sent. An agent none
 * of whose caps moved at the last change has readings that already show the caps in force,
 * and is not read again for it (at 1 000 agents a feedback correction moved 89). */
static void lockstep_need(pfi_ctl *c)
{
    for (size_t a = 0; a < c->cfg.n_agents; a++)
        c->need_at[a] = c->moved_at[a];
    for (size_t gi = 0; gi < c->ng; gi++) {
        const cgpu *g = &c->g[gi];
        if (g->job[0] == '\0') /* its job as last read */
            continue;
        slot_key k = {c, 0, g->job};
        size_t ix =
            hidx_find(&c->j_index, hidx_hash(g->job, strlen(g->job), HIDX_SEED), job_is, &k);
        if (ix != SIZE_MAX)
            c->need_at[g->agent] = fmax(c->need_at[g->agent], c->j[ix].moved_s);
    }
    for (size_t a = 0; a < c->cfg.n_agents; a++)
        c->need_at[a] += CTL_CHANGE_SETTLE_S;
}

/* When agent a's first sample stamped at or after t is due (wall s): its last sample plus
 * whole sampling intervals (pfid says its interval in /v1/state), a little after it; without
 * an interval, or when the sample is late (the agent was read after it was due and showed an
 * older one), CTL_RETRY_S after the agent's last answer. */
static double sample_due(const pfi_ctl *c, size_t a, double t)
{
    double s = c->samp_at[a], iv = c->samp_iv[a], last = c->samp_read[a];
    double due = NAN;
    if (isfinite(s) && isfinite(iv) && iv > 0) {
        double k = ceil((t - s) / iv);
        due = s + (k < 1 ? 1 : k) * iv + CTL_SAMPLE_SLACK_S;
    }
    if (!(due > last))
        due = last + CTL_RETRY_S;
    return due;
}

/* The agents not read yet this period (defer[a]: their last reading is before need_at and
 * their next sample not yet due; see pfi_ctl_step) and those with a GPU whose reading is
 * stamped before their need_at (want[a]); the earliest time one of them has a newer sample
 * due (wall s; INFINITY when none). */
static double wanted_before(const pfi_ctl *c, const bool *defer, bool *want)
{
    size_t n = c->cfg.n_agents;
    memcpy(want, defer, n * sizeof *want);
    for (size_t gi = 0; gi < c->ng; gi++)
        if (reading_before(c, &c->g[gi]))
            want[c->g[gi].agent] = true;
    double first = INFINITY;
    for (size_t a = 0; a < n; a++)
        if (want[a])
            first = fmin(first, sample_due(c, a, c->need_at[a]));
    return first;
}

/* The lockstep's read again (no Prometheus): only the agents with a reading stamped before
 * their need_at whose next sample is due by due_by (wall s), their GPUs unseen until they answer
 * (as period_begin leaves every GPU); the other agents' answers of this period stand (at 1 000
 * agents a read of all of them costs about 50 ms of CPU); a job's throughput is the largest
 * of the period's answers. rep->agents_up counted again. Errors: PFI_ERR_NOMEM. */
static pfi_error reread_before(pfi_ctl *c, bool *defer, double due_by, pfi_ctl_report *rep)
{
    size_t n = c->cfg.n_agents;
    bool *want = pfi_calloc(n ? n : 1, sizeof *want);
    if (want == NULL)
        return PFI_ERR_NOMEM;
    wanted_before(c, defer, want);
    for (size_t a = 0; a < n; a++)
        if (want[a] && sample_due(c, a, c->need_at[a]) > due_by)
            want[a] = false;
    for (size_t a = 0; a < n; a++)
        for (size_t k = want[a] ? c->agent_first[a] : SIZE_MAX; k != SIZE_MAX;
             k = c->g[k].next_on_agent) {
            c->g[k].seen = false;
            c->g[k].reading = CTL_READING_MISSING;
        }
    pfi_error e = read_agents(c, want, true, rep);
    rep->agents_up = 0;
    for (size_t a = 0; a < n; a++) {
        rep->agents_up += c->up[a];
        defer[a] = defer[a] && !want[a];
    }
    pfi_free(want);
    return e;
}

/* The lockstep's first read of a period (pfi_ctl_step): the agents whose last reading is
 * stamped before their need_at and whose next sample is not due within CTL_SAMPLE_BATCH_S
 * would answer with a reading of the caps before (read at once, then again once due: two
 * reads, at 1 000 agents ~20 ms of CPU): they are left out (defer[a], *any) until it is
 * due; the others are read. Errors: PFI_ERR_NOMEM. */
static pfi_error read_undeferred(pfi_ctl *c, bool *defer, bool *any, pfi_ctl_report *rep)
{
    size_t n = c->cfg.n_agents;
    bool *now = pfi_malloc((n ? n : 1) * sizeof *now);
    if (now == NULL)
        return PFI_ERR_NOMEM;
    double t = ctl_wall(c) + CTL_SAMPLE_BATCH_S;
    *any = false;
    for (size_t a = 0; a < n; a++) {
        double s = c->samp_at[a], need = c->need_at[a];
        defer[a] = c->up[a] && isfinite(need) && isfinite(s) && s < need &&
                   isfinite(c->samp_iv[a]) && c->samp_iv[a] > 0 && sample_due(c, a, need) > t;
        now[a] = !defer[a];
        *any = *any || defer[a];
    }
    pfi_error e = read_agents(c, now, true, rep);
    for (size_t a = 0; a < n; a++)
        rep->agents_up += c->up[a];
    pfi_free(now);
    return e;
}

/* a and b equal, or both NaN */
static bool same_value(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
}

pfi_error pfi_ctl_step(pfi_ctl *c, double t_s, bool event, double budget_w, double reduction,
                       pfi_ctl_report *rep, pfi_diag *d)
{
    period_begin(c, t_s, event, rep);
    if (c->audit != NULL && ctl_audit_begin(c->audit) != PFI_OK)
        return ctl_fail(d, 0, PFI_ERR_IO, "audit log: cannot begin a transaction");
    period p = {.event = event};
    pfi_error e = PFI_OK;
    if (isfinite(c->cfg.clock_unix_s)) { /* the emulated clock: every agent at t_s first */
        c->clock_now_s = c->cfg.clock_unix_s + t_s;
        e = advance_clocks(c, t_s, d);
    }
    /* lockstep with the caps: a reading stamped before the last change of its agent's caps
     * (or its jobs', and the settling after it: lockstep_need) shows the caps before; a step
     * that comes soon after the last one (a short period, a loaded host running behind) waits
     * for newer ones, at most half a period, every agent answering. Without it the power a
     * period measures depends on how far behind the host runs, not on the caps. (On the
     * emulated clock the advance took readings at t_s, after the last caps: no wait.)
     * A period whose budget changed does not wait (issue 18 item 7: <= 500 ms from a budget
     * change to confirmed caps) unless the allocation reads measured power (the tree: its
     * measured levels and ramp gain): outside the tree the caps come from the curves, whose
     * reference and PFI are learnt only after 2-3 uncapped periods, so readings one period
     * old give the same caps; the feedback and the over-budget count skip the period
     * (p.lagged), and the next period's lockstep waits as before. An agent whose next
     * sample is not due yet is not read before it is (read_undeferred). */
    bool moved = c->stepped &&
                 (event != c->prev_event || (event && (!same_value(budget_w, c->prev_budget_w) ||
                                                       !same_value(reduction, c->prev_reduction))));
    c->stepped = true;
    c->prev_event = event;
    c->prev_budget_w = budget_w;
    c->prev_reduction = reduction;
    bool lockstep = !isfinite(c->cfg.clock_unix_s);
    bool wait = lockstep && !(moved && !tree_mode(c));
    bool *defer = NULL, deferred = false;
    if (lockstep)
        lockstep_need(c);
    if (e == PFI_OK && wait && !c->prom_on) {
        if ((defer = pfi_calloc(c->cfg.n_agents + 1, sizeof *defer)) == NULL)
            e = PFI_ERR_NOMEM;
        else
            e = read_undeferred(c, defer, &deferred, rep);
    } else if (e == PFI_OK) {
        e = period_read(c, rep);
    }
    double until = now_mono() + fmin(0.5 * c->cfg.period_s, 2.0);
    bool *want = NULL;
    while (e == PFI_OK && wait && rep->agents_up == c->cfg.n_agents &&
           (deferred || readings_before(c))) {
        if (c->prom_on) { /* Prometheus' readings: everything read again */
            if (now_mono() + CTL_RETRY_S >= until)
                break;
            struct timespec ts = {0, (long)(CTL_RETRY_S * 1e9)};
            nanosleep(&ts, NULL);
            period_begin(c, t_s, event, rep);
            e = period_read(c, rep);
            continue;
        }
        /* each agent read again once its next sample is due (not every CTL_RETRY_S): the
         * earliest due first, with those due within CTL_SAMPLE_BATCH_S after it */
        if (want == NULL && (want = pfi_malloc((c->cfg.n_agents + 1) * sizeof *want)) == NULL) {
            e = PFI_ERR_NOMEM;
            break;
        }
        double dt = wanted_before(c, defer, want) + CTL_SAMPLE_BATCH_S - ctl_wall(c);
        if (now_mono() + fmax(dt, 0) >= until)
            break;
        if (dt > 0) {
            struct timespec ts = {(time_t)dt, (long)((dt - floor(dt)) * 1e9)};
            nanosleep(&ts, NULL);
        }
        e = reread_before(c, defer, ctl_wall(c), rep);
        deferred = false;
        for (size_t a = 0; a < c->cfg.n_agents; a++)
            deferred = deferred || defer[a];
    }
    pfi_free(want);
    if (e == PFI_OK && deferred) { /* the wait ran out: what they have */
        e = read_agents(c, defer, true, rep);
        rep->agents_up = 0;
        for (size_t a = 0; a < c->cfg.n_agents; a++)
            rep->agents_up += c->up[a];
    }
    pfi_free(defer);
    p.lagged = lockstep && moved && !tree_mode(c) && readings_before(c);
    if (e == PFI_OK)
        e = period_estimate(c, &p, rep);
    if (e == PFI_OK)
        e = period_budget(c, &p, budget_w, reduction, rep);
    if (e == PFI_OK)
        e = period_actuate(c, &p, t_s, rep);
    if (e != PFI_OK) {
        if (c->audit != NULL)
            ctl_audit_commit(c->audit, NULL);
        return e;
    }
    period_report(c, &p, rep);
    if (rep->note[0] == '\0' && c->refusal[0] != '\0') /* the table and the log say why */
        snprintf(rep->note, sizeof rep->note, "%s", c->refusal);
    if (c->pending_note[0] != '\0') { /* the operator's note first, the period's after it */
        char rest[sizeof rep->note];
        memcpy(rest, rep->note, sizeof rest);
        snprintf(rep->note, sizeof rep->note, "%s%s%.90s", c->pending_note, rest[0] ? "; " : "",
                 rest);
        c->pending_note[0] = '\0';
    }
    return period_audit(c, rep, d);
}

void pfi_ctl_set_lead(pfi_ctl *c, bool lead)
{
    c->lead = lead;
}

void pfi_ctl_note(pfi_ctl *c, const char *text)
{
    snprintf(c->pending_note, sizeof c->pending_note, "%s", text != NULL ? text : "");
}

pfi_error pfi_ctl_release(pfi_ctl *c, bool *all_ok, pfi_diag *d)
{
    (void)d;
    size_t n = c->cfg.n_agents;
    /* fenced like the PUTs: an agent whose lease another controller holds refuses (409) and
     * keeps that controller's caps */
    char fence[PFI_CTL_ID_LEN + 64];
    snprintf(fence, sizeof fence, "X-Pfi-Lease: %s %.0f", c->cfg.controller_id, c->cfg.epoch);
    for (size_t a = 0; a < n; a++) {
        ctl_http_req *r = &c->req[a];
        ctl_http_req_clear(r);
        r->method = "DELETE";
        agent_url(c, a, "/v1/caps", r->url, sizeof r->url);
        r->token = c->cfg.agents[a].token;
        r->body = NULL;
        r->header = fence;
    }
    pfi_error e = ctl_http_run(c->http, c->req, n, c->cfg.http_timeout_s);
    *all_ok = true;
    for (size_t a = 0; a < n; a++) {
        c->fault[a][0] = '\0';
        if (c->req[a].status != 200) {
            *all_ok = false;
            char det[120];
            agent_fault(c, a, c->req[a].status, "DELETE /v1/caps",
                        answer_detail(&c->req[a], det, sizeof det));
        }
        c->req[a].header = NULL;
    }
    return e;
}

bool pfi_ctl_report_faults(const pfi_ctl_report *r, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
#define FAULT(...)                                                                                 \
    do {                                                                                           \
        if (used < n) {                                                                            \
            int w_ = snprintf(buf + used, n - used, "%s", used ? ", " : "");                       \
            used += w_ > 0 ? (size_t)w_ : 0;                                                       \
        }                                                                                          \
        if (used < n) {                                                                            \
            int w_ = snprintf(buf + used, n - used, __VA_ARGS__);                                  \
            used += w_ > 0 ? (size_t)w_ : 0;                                                       \
        }                                                                                          \
    } while (0)
    if (r->infeasible && r->ramp_limited) /* the ramp, not the jobs' floors, holds it up */
        FAULT("budget not reached yet: the ramps allow %.0f W/s down (%.0f W to go)",
              r->ramp_down_w_per_s, r->shortfall_w);
    else if (r->infeasible)
        FAULT("budget infeasible (%.0f W short)", r->shortfall_w);
    if (r->refused > 0)
        FAULT("caps refused %zu", r->refused);
    if (isfinite(r->over_w))
        FAULT("measured %.0f W over the budget %.0f W for 3 periods", r->over_w,
              r->measured_w + (isfinite(r->reserved_w) ? r->reserved_w : 0) - r->over_w);
    if (r->unreachable > 0)
        FAULT("agents unreachable %zu", r->unreachable);
    if (r->stale_gpus > 0)
        FAULT("telemetry stale on %zu GPU(s) for %.1f s", r->stale_gpus, r->stale_s);
    if (r->prom_stale_gpus > 0)
        FAULT("Prometheus stale on %zu GPU(s)", r->prom_stale_gpus);
    if (r->glitch_gpus > 0)
        FAULT("impossible readings rejected %zu", r->glitch_gpus);
    if (r->competing > 0)
        FAULT("competing actuator on %zu GPU(s)", r->competing);
    if (r->held)
        FAULT("increases held");
#undef FAULT
    return used > 0;
}

void pfi_ctl_agent_get(const pfi_ctl *c, size_t a, pfi_ctl_agent_view *o)
{
    o->url = c->cfg.agents[a].url;
    o->up = c->up[a];
    o->non_gpu_w = c->non_gpu_w[a];
    o->fault = c->fault[a];
    /* the hostname it last reported with its GPUs (every GPU of an answer gets it) */
    o->host = c->agent_first[a] != SIZE_MAX ? c->g[c->agent_first[a]].host : "";
    memcpy(o->refusals, c->refusals[a], sizeof o->refusals);
}

void pfi_ctl_set_rules(pfi_ctl *c, const pfi_ctl_rule *r, size_t n)
{
    c->cfg.rules = n > 0 ? r : NULL;
    c->cfg.n_rules = n > 0 ? n : 0;
}

size_t pfi_ctl_job_count(const pfi_ctl *c)
{
    return c->nj;
}

void pfi_ctl_job_get(const pfi_ctl *c, size_t i, pfi_ctl_job_view *o)
{
    const cjob *j = &c->j[i];
    o->id = j->id;
    o->job_class = j->cls;
    o->gpus = j->seen ? j->ngpus : 0;
    o->pfi = j->pfi;
    o->source = j->src;
    /* the caps the last period applied and confirmed (as read when it ended early) */
    o->cap_w = !j->seen ? NAN : !isnan(j->cap_set_w) ? j->cap_set_w : j->cap_now_w;
    o->ref_power_w = j->ref_pg_w * (double)j->ngpus;
    o->power_w = j->seen ? j->power_w : NAN;
    o->pred_power_w = j->pred_w;
    o->tput_tok_s = j->tput;
    o->ref_tput_tok_s = j->ref_tput_pg * (double)j->ngpus;
}
