/*
 * pfi/control.h — the closed-loop cluster controller for a grid power event (DESIGN §6, §8;
 * issue 8): input files (agents, schedule, policy), the staged-actuation planner, the pfid
 * agent API (docs/agent-api.md) and Prometheus answers as data, and the controller loop.
 *
 * Units: watts (per GPU for caps, whole job or cluster for power), tokens/s, seconds.
 * Ownership: every _create has a _destroy (NULL is a no-op); arrays in results are owned by
 * the struct they are in and freed by its _clear. Parsers take (text, len) so they can be
 * fuzzed; none of them reads a file. Nothing here prints or exits.
 * Thread-safety: the parsers and the planner are pure; a pfi_ctl is used from one thread.
 */
#ifndef PFI_CONTROL_H
#define PFI_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/allocate.h"
#include "pfi/memory.h"
#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_CTL_MAX_AGENTS 4096   /* agents in one agents file */
#define PFI_CTL_MAX_EVENTS 1024   /* lines in one schedule */
#define PFI_CTL_MAX_RULES 4096    /* lines in one policy */
#define PFI_CTL_MAX_GPUS 256      /* GPUs one agent may report */
#define PFI_CTL_MAX_JOBS 256      /* jobs one agent may report */
#define PFI_CTL_ID_LEN 128        /* longest job id, uuid, hostname (with NUL) */
#define PFI_CTL_URL_LEN 512
#define PFI_CTL_TOKEN_LEN 256

/* ---- agents file ------------------------------------------------------------------------
 * One agent a line: "URL [TOKEN]"; blank lines and lines starting with '#' are ignored.
 * URL is http:// or https:// (the agent's base, no trailing path needed); TOKEN is the
 * bearer token for writes ("-" or absent: none). Lines longer than 1024 bytes, more than
 * PFI_CTL_MAX_AGENTS agents, a URL repeated: errors. */
typedef struct pfi_ctl_agent_spec {
    char url[PFI_CTL_URL_LEN];
    char token[PFI_CTL_TOKEN_LEN]; /* "" when none */
} pfi_ctl_agent_spec;

/* pfi_ctl_agents_parse — parse text[0..len) into *out (owned, pfi_free()) of *n entries.
 * Errors: PFI_ERR_PARSE (diag: line and why), PFI_ERR_LIMIT, PFI_ERR_EMPTY (no agent),
 * PFI_ERR_NOMEM. */
pfi_error pfi_ctl_agents_parse(const char *text, size_t len, pfi_ctl_agent_spec **out, size_t *n,
                               pfi_diag *diag);

/* ---- schedule file ----------------------------------------------------------------------
 * One event a line: "START END TARGET [RAMP]", seconds relative to the controller's start
 * (START < END, both >= 0; RAMP >= 0, default 0). TARGET is a reduction "30%" (of the
 * reference power, 0–100 %) or a budget "5200W" (cluster watts, > 0). Events must not
 * overlap ('#' comments, blank lines ignored). The budget ramps linearly from the reference
 * (no reduction) at START to TARGET at START + RAMP, holds until END, and the event is over
 * at END (caps go back to their originals, staged). */
typedef struct pfi_ctl_event {
    double start_s, end_s, ramp_s;
    double reduction; /* in [0, 1], or NaN when budget_w is given */
    double budget_w;  /* cluster W, or NaN when reduction is given */
} pfi_ctl_event;

/* pfi_ctl_schedule_parse — parse into *out (owned, pfi_free()) of *n events, sorted by start.
 * Errors: PFI_ERR_PARSE, PFI_ERR_LIMIT, PFI_ERR_EMPTY, PFI_ERR_NOMEM. */
pfi_error pfi_ctl_schedule_parse(const char *text, size_t len, pfi_ctl_event **out, size_t *n,
                                 pfi_diag *diag);

/*
 * pfi_ctl_schedule_at — the target at time t_s (relative seconds) of events ev[n]: returns
 * true inside an event, with *reduction or *budget_w (the other NaN) already ramped: with
 * reference power ref_w, a ramp from ref_w to the target is expressed in the target's own
 * kind (a reduction ramps from 0; a budget from ref_w). false outside every event.
 */
bool pfi_ctl_schedule_at(const pfi_ctl_event *ev, size_t n, double t_s, double ref_w,
                         double *reduction, double *budget_w);

/* ---- policy file ------------------------------------------------------------------------
 * One rule a line: "JOB key=value ..." with keys floor (SLA floor: fraction of the job's
 * reference throughput, [0, 1]), weight (priority weight >= 0, default 1) and class
 * (dense, moe-pt, moe-ft, dense-ft: overrides what the agent says). JOB is a job id or "*"
 * (every job without its own rule). '#' comments, blank lines ignored. */
typedef struct pfi_ctl_rule {
    char job[PFI_CTL_ID_LEN];
    double floor_frac; /* NaN: none */
    double weight;     /* NaN: 1 */
    char job_class[32];
} pfi_ctl_rule;

/* pfi_ctl_policy_parse — parse into *out (owned, pfi_free()) of *n rules (may be 0).
 * Errors: PFI_ERR_PARSE, PFI_ERR_LIMIT, PFI_ERR_NOMEM. */
pfi_error pfi_ctl_policy_parse(const char *text, size_t len, pfi_ctl_rule **out, size_t *n,
                               pfi_diag *diag);

/* pfi_ctl_policy_find — the rule for job (exact id first, then "*"), or NULL. Borrowed. */
const pfi_ctl_rule *pfi_ctl_policy_find(const pfi_ctl_rule *r, size_t n, const char *job);

/* ---- staged actuation planner -----------------------------------------------------------
 * Caps change in two phases so that the cost of the cluster (Σ cost_g(cap_g), where cost is
 * any non-decreasing function of the cap: the cap itself, or the job curve's predicted
 * per-GPU power) never exceeds the budget in any intermediate state: first every decrease
 * (the state can only fall), then — once the decreases are confirmed — increases, granted in
 * order only while they fit: a GPU counts at max(confirmed, requested) while a request is in
 * flight and at its maximum when its cap was never confirmed, an increase that does not fit
 * whole is granted part way (bisection on the cap) or not at all. */
typedef struct pfi_stage_gpu {
    double confirmed_w; /* enforced cap last confirmed; NaN: unknown (counted at max_w) */
    double target_w;    /* where the allocation wants it; NaN: leave alone */
    double min_w, max_w;
    bool reachable;     /* false: its agent does not answer (nothing is sent to it) */
} pfi_stage_gpu;

/* cost of GPU k at cap c (non-decreasing in c). */
typedef double (*pfi_stage_cost_fn)(void *ctx, size_t k, double cap_w);

/* pfi_stage_decreases — send_w[k] = target for every reachable GPU whose target is below its
 * confirmed cap (or whose cap is unknown), NaN otherwise. Returns how many. */
size_t pfi_stage_decreases(const pfi_stage_gpu *g, size_t n, double *send_w);

/*
 * pfi_stage_increases — after the decreases: send_w[k] = the cap to raise GPU k to (its
 * target, or less when the budget does not allow it; whole watts, floor), NaN otherwise,
 * such that Σ cost(state) stays <= budget_w whatever subset of these requests lands.
 * cost NULL: the cap itself. *used_w (may be NULL) = the cost with every grant applied.
 * Returns how many GPUs get an increase.
 */
size_t pfi_stage_increases(const pfi_stage_gpu *g, size_t n, double budget_w, pfi_stage_cost_fn cost,
                           void *ctx, double *send_w, double *used_w);

/* pfi_stage_cost — Σ cost over g[n] at confirmed caps (unknown: max_w). cost NULL: caps. */
double pfi_stage_cost(const pfi_stage_gpu *g, size_t n, pfi_stage_cost_fn cost, void *ctx);

/* ---- the agent API as data (docs/agent-api.md) ------------------------------------------ */
typedef struct pfi_agent_gpu {
    int index;
    char uuid[PFI_CTL_ID_LEN];
    char job[PFI_CTL_ID_LEN];       /* "" when none */
    double power_w, energy_j;       /* NaN when null */
    double cap_w, enforced_cap_w;   /* NaN when null */
    double min_cap_w, max_cap_w, default_cap_w, original_cap_w; /* NaN when absent */
} pfi_agent_gpu;

typedef struct pfi_agent_job {
    char id[PFI_CTL_ID_LEN];
    char job_class[32];             /* "" when null */
    double power_w, tput_tok_s;     /* NaN when null */
    size_t n_gpus;                  /* GPUs listed */
} pfi_agent_job;

typedef struct pfi_agent_state {
    char hostname[PFI_CTL_ID_LEN];
    double sampled_at_s;
    size_t n_gpus, n_jobs;
    pfi_agent_gpu gpus[PFI_CTL_MAX_GPUS];
    pfi_agent_job jobs[PFI_CTL_MAX_JOBS];
} pfi_agent_state;

/* pfi_agent_state_parse — a GET /v1/state body into *out (plain data, no allocation kept).
 * Errors: PFI_ERR_PARSE (not JSON, a required key missing or of the wrong type: diag says
 * which), PFI_ERR_LIMIT (too many GPUs or jobs), PFI_ERR_NOMEM. */
pfi_error pfi_agent_state_parse(const char *text, size_t len, pfi_agent_state *out,
                                pfi_diag *diag);

/* pfi_agent_caps_reply — one GPU of a PUT /v1/caps or DELETE /v1/caps answer. */
typedef struct pfi_agent_cap_reply {
    char uuid[PFI_CTL_ID_LEN];
    double requested_w, enforced_w; /* NaN when null */
} pfi_agent_cap_reply;

/* pfi_agent_caps_parse — the answer's "gpus" into out[max] (*n written), *applied. Errors:
 * PFI_ERR_PARSE, PFI_ERR_LIMIT. */
pfi_error pfi_agent_caps_parse(const char *text, size_t len, pfi_agent_cap_reply *out, size_t max,
                               size_t *n, bool *applied, pfi_diag *diag);

/* ---- Prometheus HTTP API answers ---------------------------------------------------------
 * An instant-vector answer of /api/v1/query: {"status":"success","data":{"resultType":
 * "vector","result":[{"metric":{labels},"value":[ts,"string"]}, ...]}}. Values are strings
 * ("NaN", "+Inf", "-Inf" included: parsed, not dropped; the caller decides). */
#define PFI_PROM_MAX_LABELS 16
#define PFI_PROM_MAX_SERIES 100000
typedef struct pfi_prom_sample {
    size_t n_labels;
    char name[PFI_PROM_MAX_LABELS][64];
    char value_str[PFI_PROM_MAX_LABELS][PFI_CTL_ID_LEN]; /* label values (truncated: error) */
    double t_s;    /* sample timestamp, Unix s */
    double value;  /* may be NaN or ±Inf */
} pfi_prom_sample;

/* pfi_prom_sample_label — the value of label name in s, or NULL. Borrowed. */
const char *pfi_prom_sample_label(const pfi_prom_sample *s, const char *name);

/* pfi_prom_vector_parse — parse an answer into *out (owned, pfi_free()) of *n samples. A
 * "status":"error" answer is PFI_ERR_VALUE with the server's error in diag. Errors:
 * PFI_ERR_PARSE, PFI_ERR_VALUE, PFI_ERR_LIMIT, PFI_ERR_NOMEM. */
pfi_error pfi_prom_vector_parse(const char *text, size_t len, pfi_prom_sample **out, size_t *n,
                                pfi_diag *diag);

/* ---- the controller ----------------------------------------------------------------------- */

/* The prior PFI of a job class when neither a sweep nor a model gives one: the synthetic
 * library's class medians (DESIGN §7): dense 1.27, dense-ft 1.27, moe-pt 1.43, moe-ft 2.10;
 * any other class or none: 1.43 (the median of the paper's range). Returns the prior. */
double pfi_ctl_prior_pfi(const char *job_class);

/* Where a job's curve came from. */
typedef enum pfi_curve_source {
    PFI_CURVE_STORE = 0, /* a measured sweep in the run store (group = job id or class rule) */
    PFI_CURVE_MODEL = 1, /* a `pfi fit` model applied to live features → PFI → §7 curve */
    PFI_CURVE_PRIOR = 2  /* the class prior PFI → §7 curve */
} pfi_curve_source;

/* pfi_curve_source_name — "store", "model", "prior". Static. */
const char *pfi_curve_source_name(pfi_curve_source s);

/* Prometheus input: names of the metrics and labels the controller's PromQL uses. */
typedef struct pfi_ctl_prom_config {
    const char *url;              /* base URL; NULL: no Prometheus (agents only) */
    const char *power_metric;     /* "pfi_gpu_power_watts" */
    const char *energy_metric;    /* "pfi_gpu_energy_joules_total" (""/NULL: power gauge only) */
    const char *energy_time_metric; /* the exporter's time of the counter's sample, exported
                                       with it: "pfi_gpu_last_sample_timestamp_seconds"
                                       (""/NULL or absent for a GPU: the scrape's time) */
    const char *host_label;       /* "hostname" */
    const char *uuid_label;       /* "uuid" */
    const char *up_join_label;    /* label shared with up: "instance" */
    const char *feature_metrics;  /* "NAME=METRIC,..." live features for a fit model
                                     ("dram_active=pfi_gpu_dram_active_ratio,
                                     tensor_active=pfi_gpu_tensor_active_ratio") */
    double timeout_s;             /* per query (1) */
} pfi_ctl_prom_config;

/* pfi_ctl_config — pfi_ctl_config_init gives the defaults; strings and arrays borrowed. */
typedef struct pfi_ctl_config {
    const pfi_ctl_agent_spec *agents;
    size_t n_agents;
    pfi_strategy strategy;       /* PFI_STRATEGY_PFI_MODEL */
    double period_s;             /* 5 */
    double margin;               /* safety margin, fraction of the budget held back (0.03) */
    double feedback_gain;        /* share of the measured − predicted error fed back (0.5) */
    double feedback_bound;       /* |correction| <= bound × budget (0.10) */
    double facility_limit_w;     /* after the event, increases are staged under it, less the
                                    margin (NaN none) */
    double confirm_timeout_s;    /* wait for enforced caps (period/2, at most 2 s) */
    double http_timeout_s;       /* one agent request (1) */
    double lease_s;              /* lease asked of the agents (max(30, 6 × period)) */
    const pfi_ctl_rule *rules;   /* policy */
    size_t n_rules;
    const char *store_path;      /* run store with measured sweeps (NULL none) */
    const char *model_path;      /* `pfi fit` model JSON (NULL none) */
    const char *audit_path;      /* SQLite audit log (NULL none) */
    pfi_ctl_prom_config prom;
} pfi_ctl_config;

void pfi_ctl_config_init(pfi_ctl_config *c);

typedef struct pfi_ctl pfi_ctl;

/*
 * pfi_ctl_create — a controller for c (copied; strings and arrays must outlive it). Opens
 * the audit log, the store and the model when given, and, when the audit log holds an
 * earlier run, restores from it what the agents cannot tell (each job's reference power and
 * throughput, the feedback correction, the GPUs' originals). Contacts no agent. Errors:
 * PFI_ERR_INVALID_ARGUMENT, PFI_ERR_IO (audit, store), the model loader's errors, NOMEM.
 */
pfi_error pfi_ctl_create(const pfi_ctl_config *c, pfi_ctl **out, pfi_diag *diag);
void pfi_ctl_destroy(pfi_ctl *ctl);

/* What one period did (pfi_ctl_step fills it; plain data). */
typedef struct pfi_ctl_report {
    double t_s;               /* controller time (monotonic s since create) */
    bool event;               /* a budget is in force */
    double budget_w;          /* target cluster budget (NaN outside an event) */
    double alloc_budget_w;    /* what the allocator was given (budget − margin − correction −
                                 reserve − unmanaged) */
    double measured_w;        /* measured power of the answering agents' GPUs */
    double reserved_w;        /* held for agents that do not answer (last caps or max) */
    double predicted_w;       /* curves' prediction at the confirmed caps */
    double correction_w;      /* feedback term in force */
    double ref_w;             /* Σ jobs' reference power + unmanaged GPUs + reserve */
    double tput_tok_s;        /* measured tokens/s of all jobs */
    double cap_sum_w;         /* Σ confirmed caps */
    size_t agents_up, agents;
    size_t jobs, gpus;
    size_t decreases, increases, unconfirmed;
    bool prom_used;           /* telemetry came from Prometheus */
    bool prom_failed;         /* Prometheus configured but not usable: agents used instead */
    bool restored;            /* every GPU is back on its original limit (outside events) */
    char note[256];           /* what was unusual this period ("" none) */
} pfi_ctl_report;

/*
 * pfi_ctl_step — one period at controller time t_s: read every agent (and Prometheus), keep
 * jobs that appeared or left, estimate curves, allocate under target (event true: budget_w
 * cluster W, or reduction of the reference when budget_w is NaN), actuate staged, record
 * everything in the audit log. Outside an event (event false) caps go back to originals,
 * increases staged under the facility limit. Agents that fail are reported, not errors.
 * Errors: PFI_ERR_IO (audit write failed), PFI_ERR_NOMEM.
 */
pfi_error pfi_ctl_step(pfi_ctl *ctl, double t_s, bool event, double budget_w, double reduction,
                       pfi_ctl_report *rep, pfi_diag *diag);

/*
 * pfi_ctl_release — back to the originals now (DELETE /v1/caps on every agent that answers),
 * for a controller that is stopped on purpose. *all_ok false when an agent did not confirm.
 */
pfi_error pfi_ctl_release(pfi_ctl *ctl, bool *all_ok, pfi_diag *diag);

/* Per-job view of the last period (for /metrics and status). i < pfi_ctl_job_count. */
typedef struct pfi_ctl_job_view {
    const char *id;           /* borrowed until the next step */
    const char *job_class;
    size_t gpus;
    double pfi;
    pfi_curve_source source;
    double cap_w, ref_power_w, power_w, pred_power_w, tput_tok_s, ref_tput_tok_s;
} pfi_ctl_job_view;
size_t pfi_ctl_job_count(const pfi_ctl *ctl);
void pfi_ctl_job_get(const pfi_ctl *ctl, size_t i, pfi_ctl_job_view *out);

/* ---- audit log ------------------------------------------------------------------------- */

/* One period of the audit log, for pfi report and pfi control status. */
typedef struct pfi_audit_period {
    long id;
    double t_s, wall_s;
    int event;
    double budget_w, alloc_budget_w, measured_w, reserved_w, predicted_w, correction_w,
        tput_tok_s, cap_sum_w;
    char strategy[32];
    char note[256];
    int agents_up, agents;
} pfi_audit_period;

/* pfi_audit_read — every period in the audit log at path (ascending) into *out (owned,
 * pfi_free()) of *n; run_id selects one controller run (0: the latest). Errors: PFI_ERR_IO,
 * PFI_ERR_EMPTY (no periods), PFI_ERR_NOMEM. */
pfi_error pfi_audit_read(const char *path, long run_id, pfi_audit_period **out, size_t *n,
                         pfi_diag *diag);

/* pfi_audit_plot — the figure of nruns controller runs (run k: periods p[k][n[k]], e.g.
 * one per strategy on the same scenario): top, measured power (W, reserve for silent agents
 * included; solid) and the cluster budget (dashed in the run's colour, with a dash pattern
 * per run so coinciding budgets stay distinct) over time since each run's first period;
 * bottom, tokens/s. A legend right of each panel names every line by the run's strategy
 * (numbered when two runs share one). path ".png" or ".svg".
 * Errors: PFI_ERR_INVALID_ARGUMENT, PFI_ERR_PLOT, PFI_ERR_IO, PFI_ERR_NOMEM. */
pfi_error pfi_audit_plot(const pfi_audit_period *const *p, const size_t *n, size_t nruns,
                         const char *title, const char *path, pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
