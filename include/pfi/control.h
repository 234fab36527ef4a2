/*
 * pfi/control.h — the closed-loop cluster controller for a grid power event (DESIGN §6, §8;
 * issue 8): each period it reads the agents (and Prometheus), estimates every job's curve,
 * allocates the budget and actuates the caps staged, recording everything in the audit log.
 *
 * Its pieces have headers of their own: the input files it is configured with
 * (pfi/control_files.h, included here), the staged-actuation planner (pfi/stage.h), the
 * agent and Prometheus answers as data (pfi/agent_api.h), the audit log read back
 * (pfi/audit.h).
 *
 * Units: watts (per GPU for caps, whole job or cluster for power), tokens/s, seconds.
 * Ownership: pfi_ctl_create has pfi_ctl_destroy (NULL is a no-op); the configuration's
 * strings and arrays are borrowed. Nothing here prints or exits.
 * Thread-safety: a pfi_ctl is used from one thread.
 */
#ifndef PFI_CONTROL_H
#define PFI_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/allocate.h"
#include "pfi/control_files.h"
#include "pfi/error.h"
#include "pfi/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* What an allocation maximises (the strategies that optimise: oracle, pfi-model), each job's
 * term its policy weight × its tokens/s T × the factor below, T_ref its reference tokens/s
 * (its curve's at the top cap), g its GPUs, over the n jobs of the period with G GPUs; the
 * factors are scaled by the jobs' mean T_ref (a sum of tokens/s in size, the optimum the
 * same). A job without a reference tokens/s keeps the factor 1. */
typedef enum pfi_ctl_objective {
    PFI_CTL_OBJECTIVE_TOKENS = 0,   /* Σ T: tokens/s (1) */
    PFI_CTL_OBJECTIVE_WEIGHTED = 1, /* Σ g × T/T_ref: the weighted performance the Phoenix
                                       demonstration scores (g ÷ mean g ÷ T_ref) */
    PFI_CTL_OBJECTIVE_MEAN = 2,     /* Σ T/T_ref: the plain mean of the jobs' performance
                                       (1 ÷ T_ref) */
    PFI_CTL_OBJECTIVE_BALANCED = 3  /* weighted ÷ G + mean ÷ n, the two scores' sum (their
                                       factors' average) */
} pfi_ctl_objective;

/* Prometheus input: names of the metrics and labels the controller's PromQL uses. */
typedef struct pfi_ctl_prom_config {
    const char *url;                /* base URL; NULL: no Prometheus (agents only) */
    const char *power_metric;       /* "pfi_gpu_power_watts" */
    const char *energy_metric;      /* "pfi_gpu_energy_joules_total" (""/NULL: power gauge only) */
    const char *energy_time_metric; /* the exporter's time of the counter's sample, exported
                                       with it: "pfi_gpu_last_sample_timestamp_seconds"
                                       (""/NULL or absent for a GPU: the scrape's time) */
    const char *host_label;         /* "hostname" */
    const char *uuid_label;         /* "uuid" */
    const char *up_join_label;      /* label shared with up: "instance" */
    const char *feature_metrics;    /* "NAME=METRIC,..." live features for a fit model
                                       ("dram_active=pfi_gpu_dram_active_ratio,
                                       tensor_active=pfi_gpu_tensor_active_ratio") */
    double timeout_s;               /* per query (1) */
    double scrape_interval_s;       /* the server's scrape interval (NaN: learnt from the
                                       counters' sample times; 15 s, Prometheus' default,
                                       until then) */
} pfi_ctl_prom_config;

/* pfi_ctl_config — pfi_ctl_config_init gives the defaults; strings and arrays borrowed. */
typedef struct pfi_ctl_config {
    const pfi_ctl_agent_spec *agents;
    size_t n_agents;
    pfi_strategy strategy;     /* PFI_STRATEGY_PFI_MODEL */
    double period_s;           /* 5 */
    double margin;             /* safety margin, fraction of the budget held back (0.03) */
    double feedback_gain;      /* share of the measured − predicted error fed back (0.5) */
    double feedback_bound;     /* |correction| <= bound × budget (0.10) */
    double facility_limit_w;   /* after the event, increases are staged under it, less the
                                  margin (NaN none) */
    double confirm_timeout_s;  /* wait for enforced caps (period/2, at most 2 s) */
    double http_timeout_s;     /* one agent request (1) */
    double lease_s;            /* lease asked of the agents (max(30, 6 × period)) */
    double stale_after_s;      /* a reading older than this is stale (NaN: two scrape
                                  intervals for Prometheus, max(2, 2 × period) for agents) */
    const char *controller_id; /* who holds the agents' leases (fencing; NULL: "pfi-control") */
    double epoch;              /* this controller's epoch (fencing; a restart takes a higher
                                  one; NaN: the audit run id, else the Unix time) */
    const pfi_ctl_rule *rules; /* policy */
    size_t n_rules;
    const char *store_path; /* run store with measured sweeps (NULL none) */
    const char *model_path; /* `pfi fit` model JSON (NULL none) */
    const char *audit_path; /* SQLite audit log (NULL none) */
    pfi_ctl_prom_config prom;
    /* the power tree (DESIGN §12; issue 18): with a topology each period allocates on the
       tree (a GPU sits under the level named as its agent's hostname; a job on several nodes
       is split per node), every level's limit honoured, reserve levels on the sum of caps,
       measured levels on predicted power; the policy's band orders the cuts (oracle) */
    const struct pfi_topology *topology; /* borrowed; NULL: one budget */
    double ramp_up_w_per_s;              /* the site's ramp: the most the managed power may */
    double ramp_down_w_per_s;            /* rise / fall, W/s (INFINITY: none); levels' own
                                            ramps come with the topology */
    /* the emulated clock (agents with clock = emulated; docs/agent-api.md, POST /v1/clock):
       the Unix time of controller time 0 (NaN: the system's clocks), and the agents' clock
       then (s, 0; the agents' jobs have run that long at the first period). Each
       pfi_ctl_step at t_s first moves every agent's clock to clock_start_s + t_s and then
       runs at Unix time clock_unix_s + t_s: no wait on the wall clock (pending caps, fresh
       readings), requests wait up to max(http_timeout_s, 30 s); with agents on emulated
       GPUs a run is then a function of its inputs, whatever the host's load */
    double clock_unix_s;
    double clock_start_s;
    pfi_ctl_objective objective; /* what oracle and pfi-model maximise
                                    (PFI_CTL_OBJECTIVE_TOKENS) */
    bool http_libcurl_only;      /* every agent request through libcurl (false: plain
                                    http:// to numeric addresses through pfi's own HTTP/1.1
                                    client, one kept connection per agent; https://, names
                                    and the rest through libcurl either way) */
} pfi_ctl_config;

void pfi_ctl_config_init(pfi_ctl_config *c);

typedef struct pfi_ctl pfi_ctl;

/*
 * pfi_ctl_create — a controller for c (copied; strings and arrays must outlive it). Opens
 * the audit log, the store and the model when given, and, when the audit log holds an
 * earlier run, restores from it what the agents cannot tell (each job's reference power and
 * throughput, the feedback correction, the GPUs' originals). Contacts no agent. Errors:
 * PFI_ERR_INVALID_ARGUMENT, PFI_ERR_IO (audit, store), PFI_ERR_UNAVAILABLE (libcurl cannot be
 * loaded: diag names it and why), the model loader's errors, NOMEM. Not thread-safe against
 * another pfi_ctl_create or destroy (libcurl's global initialisation): call both from one
 * thread.
 */
pfi_error pfi_ctl_create(const pfi_ctl_config *c, pfi_ctl **out, pfi_diag *diag);
void pfi_ctl_destroy(pfi_ctl *ctl);

/* The most priority bands a controller reports by band (pfi_ctl_report, GET /v1/status); a
 * cluster with more reports none (a parent then sees it as one band). */
#define PFI_CTL_MAX_BANDS 16

/* One priority band's feasible range (W): its jobs' power at their lowest caps (min_w) and at
 * their references, their top (max_w), by the controller's current estimates (curves). */
typedef struct pfi_ctl_band_range {
    double band; /* the band (the policy's; 0 for a job without a rule): higher is cut last */
    double min_w, max_w;
} pfi_ctl_band_range;

/* What one period did (pfi_ctl_step fills it; plain data). */
typedef struct pfi_ctl_report {
    double t_s;            /* controller time (monotonic s since create) */
    bool event;            /* a budget is in force */
    bool lead;             /* that budget is a ramp's lead ahead of an event, not the event:
                              audited with event 0 and lead 1 (pfi_ctl_set_lead) */
    double budget_w;       /* target cluster budget (NaN outside an event) */
    double alloc_budget_w; /* what the allocator was given (budget − margin − correction −
                              reserve − unmanaged) */
    double measured_w;     /* measured power of the answering agents' GPUs */
    double reserved_w;     /* held for agents that do not answer (last caps or max); NaN
                              while one never seen is silent (its GPUs unknown) */
    double predicted_w;    /* curves' prediction at the confirmed caps */
    double correction_w;   /* feedback term in force */
    double ref_w;          /* Σ jobs' reference power + unmanaged GPUs + reserve */
    double tput_tok_s;     /* measured tokens/s of all jobs (NaN: no job reports any) */
    double cap_sum_w;      /* Σ confirmed caps */
    size_t agents_up, agents;
    size_t jobs, gpus;
    size_t decreases, increases, unconfirmed;
    bool prom_used;   /* telemetry came from Prometheus */
    bool prom_failed; /* Prometheus configured but not usable: agents used instead */
    bool restored;    /* every GPU is back on its original limit (outside events) */
    /* trust and failures (DESIGN §10) */
    size_t stale_gpus;      /* GPUs whose reading was stale (from every source) */
    size_t glitch_gpus;     /* GPUs whose reading was physically impossible (rejected) */
    size_t prom_stale_gpus; /* GPUs whose Prometheus reading was stale (agents' used) */
    double stale_s;         /* s since every GPU last had a trustworthy reading (0 fresh) */
    bool held;              /* increases held: caps kept at the last safe ones */
    bool feedback_updated;  /* the correction integrated this period */
    size_t refused;         /* cap requests refused by an agent (401/403/409/4xx/5xx) */
    size_t unreachable;     /* agents that did not answer */
    size_t competing;       /* GPUs whose limit changed under the controller */
    bool infeasible;        /* the budget is below what the jobs' floors need */
    double shortfall_w;     /* how far below (W; NaN unless infeasible) */
    double over_w;  /* measured power (with the reserve) over the budget in force while it was
                       measured (the last period's budget_w: readings come before the caps),
                       when more than 1 % over for three periods in a row from an event's third
                       period on (W; NaN otherwise): a fault (pfi control exits 5) */
    char note[256]; /* what was unusual this period ("" none) */
    /* the power tree (--topology) and ramps */
    char bound[160];          /* the limits that bound the allocation: "site budget (measured)",
                                 "rack 'r1' (reserve 3000 W, line 3)", ... ("" none or no tree) */
    bool ramp_limited;        /* a ramp rate held the allocation back from the budget */
    double ramp_down_w_per_s; /* the fastest the managed power may fall now under every
                                 level's ramp (W/s; INFINITY: no ramp) */
    double min_w; /* the least the cluster can draw: every job at its lowest cap (its curve),
                     plus unmanaged GPUs and the reserve for silent agents (W) — with ref_w
                     (the most) the feasible range a parent controller splits over */
    /* that range by priority band (issue 18 item 4), for a parent controller: bands[0 ..
       n_bands), ascending, each the seen jobs of one band; the unmanaged GPUs and the
       reserve are in min_w and ref_w, in no band. n_bands 0: no job seen, or more than
       PFI_CTL_MAX_BANDS bands */
    size_t n_bands;
    pfi_ctl_band_range bands[PFI_CTL_MAX_BANDS];
} pfi_ctl_report;

/*
 * pfi_ctl_ramp_lead — the budget to hold at time t_s so that every later budget can still
 * be met by falling at down_w_per_s: min(budget_w[k] + down_w_per_s × (t_w[k] − t_s)) over
 * the n future points (t_w[k] >= t_s; s, W), and now_w (the budget now; INFINITY none).
 * Returns INFINITY when nothing bounds it. Pure.
 */
double pfi_ctl_ramp_lead(double t_s, double now_w, const double *t_w, const double *budget_w,
                         size_t n, double down_w_per_s);

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
 * pfi_ctl_set_rules — replace the per-job policy (weights, SLA floors) from the next period
 * on: r[0..n) is borrowed and must stay valid until the next call or pfi_ctl_destroy (the
 * scheduler's jobs, tiers and floors change while the controller runs: `pfi control
 * --slurm`). NULL/0: no rules.
 */
void pfi_ctl_set_rules(pfi_ctl *c, const pfi_ctl_rule *r, size_t n);

/*
 * pfi_ctl_set_lead — from the next period on, until called again: lead true says the budget
 * pfi_ctl_step is given (event true) is a ramp's lead ahead of a scheduled event, not the
 * event itself: the caps follow it as any budget, the report says lead, and the audit log
 * stores the period with event 0 and lead 1 (no event period for pfi report or the
 * settlement). Ignored for periods stepped with event false.
 */
void pfi_ctl_set_lead(pfi_ctl *c, bool lead);

/*
 * pfi_ctl_note — text (copied, cut to 159 bytes; NULL or "": none) leads the note of the next
 * period's report and audit row, before what that period notes itself: an operator's action
 * the audit log should show where it took effect ("config reloaded: budget 3000 W"). A later
 * call before that period replaces it.
 */
void pfi_ctl_note(pfi_ctl *c, const char *text);

/*
 * pfi_ctl_release — back to the originals now (DELETE /v1/caps on every agent that answers),
 * for a controller that is stopped on purpose. *all_ok false when an agent did not confirm.
 */
pfi_error pfi_ctl_release(pfi_ctl *ctl, bool *all_ok, pfi_diag *diag);

/* pfi_ctl_report_faults — the period's failures in one line into buf[n] ("caps refused 4,
 * agents unreachable 1, telemetry stale 3 GPUs for 8.2 s, ..."); false (buf "") when there
 * were none. */
bool pfi_ctl_report_faults(const pfi_ctl_report *r, char *buf, size_t n);

/* Why an agent failed a request (counted per agent, pfi_ctl_agent_get). */
typedef enum pfi_ctl_reason {
    PFI_CTL_UNAUTHORIZED = 0, /* HTTP 401: wrong or missing token */
    PFI_CTL_FORBIDDEN = 1,    /* HTTP 403: the token may not write */
    PFI_CTL_CONFLICT = 2,     /* HTTP 409: another controller holds the lease (fencing) */
    PFI_CTL_SERVER = 3,       /* HTTP 5xx: the agent could not set the cap */
    PFI_CTL_REJECTED = 4,     /* another HTTP 4xx */
    PFI_CTL_UNREACHABLE = 5,  /* no answer (connection refused, timeout) */
    PFI_CTL_N_REASONS = 6
} pfi_ctl_reason;

/* pfi_ctl_reason_name — "unauthorized", "forbidden", "conflict", "server_error", "rejected",
 * "unreachable". Static. */
const char *pfi_ctl_reason_name(pfi_ctl_reason r);

/* One agent as the last period saw it. */
typedef struct pfi_ctl_agent_view {
    const char *url;   /* borrowed */
    bool up;           /* answered its state this period */
    double non_gpu_w;  /* its node's measured non-GPU power this period, W (NaN: none) */
    const char *fault; /* this period's failure ("" none; borrowed) */
    const char *host;  /* the hostname it last reported with a GPU ("" none yet; borrowed):
                          the --topology level its GPUs sit under */
    unsigned long refusals[PFI_CTL_N_REASONS]; /* failed requests since create, by reason */
} pfi_ctl_agent_view;

/* pfi_ctl_agent_get — agent a (< the configuration's n_agents). */
void pfi_ctl_agent_get(const pfi_ctl *ctl, size_t a, pfi_ctl_agent_view *out);

/* Per-job view of the last period (for /metrics and status). i < pfi_ctl_job_count. */
typedef struct pfi_ctl_job_view {
    const char *id; /* borrowed until the next step */
    const char *job_class;
    size_t gpus;
    double pfi;
    pfi_curve_source source;
    /* cap_w: the mean per-GPU cap the agents confirmed as the last period ended (the caps it
     * applied; NaN when not seen); power_w was measured under the caps before them */
    double cap_w, ref_power_w, power_w, pred_power_w, tput_tok_s, ref_tput_tok_s;
} pfi_ctl_job_view;
size_t pfi_ctl_job_count(const pfi_ctl *ctl);
void pfi_ctl_job_get(const pfi_ctl *ctl, size_t i, pfi_ctl_job_view *out);

/* ---- a controller of controllers (issue 18 item 6; DESIGN §12) ---------------------------
 * A site controller hands sub-budgets to rack (or PDU) controllers — each a `pfi control
 * --listen` running the same loop on its subtree — through their PUT /v1/budget, and reads
 * back through their GET /v1/status what each measures and its feasible range (min_w: every
 * job at its lowest cap; max_w: every job at its reference, within the subtree's top limit).
 * A child that stops answering keeps the last budget it accepted (a controller holds its
 * budget until told otherwise; its agents hold their caps): the parent counts that budget as
 * spent and splits only the rest among the others, so the sum stays under the site's. */

/*
 * pfi_ctl_split — split budget_w (W) among n children: a child with fixed_w[i] finite (one
 * that does not answer) gets exactly that; the others water-filled over their feasible
 * ranges [min_w[i], max_w[i]]: each its minimum, then the same fraction f of its headroom
 * (max − min), f = rest / Σ headroom, at most 1; a budget above every maximum gives the
 * surplus in proportion to the maxima. *feasible false when the budget is below the fixed
 * budgets plus every answering child's minimum (each then gets its minimum: the sum is over).
 * Errors: PFI_ERR_INVALID_ARGUMENT (a NaN budget, min > max, a negative minimum). Pure.
 */
pfi_error pfi_ctl_split(double budget_w, const double *min_w, const double *max_w,
                        const double *fixed_w, size_t n, double *share_w, bool *feasible);

/* One child for pfi_ctl_split_bands (plain data; bands borrowed). */
typedef struct pfi_ctl_split_child {
    double min_w, max_w; /* its feasible range, 0 <= min_w <= max_w (ignored when fixed) */
    double fixed_w;      /* finite: a silent child's held budget, given exactly; NaN: none */
    const pfi_ctl_band_range *bands; /* its range by band, bands strictly ascending; NULL
                                        (n_bands 0): one band, band 0, over the whole range */
    size_t n_bands;
} pfi_ctl_split_child;

/*
 * pfi_ctl_split_bands — pfi_ctl_split across the children's priority bands (issue 18 item 4):
 * a reduction is taken from the lowest band first across the whole site, a restore goes to
 * the highest first. Each answering child gets its minimum min_w; then the bands, from the
 * highest down: a band's headroom (max_w − min_w of that band, in every child that has it)
 * is given in full while the rest lasts, else the same fraction f of it to every child (the
 * share rule of pfi_ctl_split within a band), and the lower bands get nothing; a budget above
 * every maximum gives the surplus in proportion to the maxima. A child's bands' headroom is
 * fitted to its range first: what exceeds max_w − min_w (a top limit cuts the range) is
 * taken from its lowest bands up, what falls short is added to its lowest band. Children
 * without bands are one band 0 each: with no bands anywhere this is pfi_ctl_split. share_w
 * [n] out (W), *feasible as pfi_ctl_split. Errors: PFI_ERR_INVALID_ARGUMENT (a NaN budget, a
 * range or a band's range not 0 <= min <= max finite, a band not finite, bands not strictly
 * ascending). Pure.
 */
pfi_error pfi_ctl_split_bands(double budget_w, const pfi_ctl_split_child *c, size_t n,
                              double *share_w, bool *feasible);

/* A child controller's GET /v1/status answer (plain data; a missing value is NaN). */
typedef struct pfi_ctl_child_status {
    double t_s, budget_w, measured_w, reserved_w, min_w, max_w;
    bool event, ramp_limited;
    bool has_bands; /* the answer had a "bands" array (an older child's has none) */
    size_t n_bands; /* its bands, ascending */
    pfi_ctl_band_range bands[PFI_CTL_MAX_BANDS];
} pfi_ctl_child_status;

/* pfi_ctl_child_status_parse — text[0..len) (a JSON object, numbers or null) into *out;
 * "bands", when present, an array of at most PFI_CTL_MAX_BANDS {"band", "min_w", "max_w"}
 * objects, bands strictly ascending, 0 <= min_w <= max_w finite; other members are ignored.
 * Errors: PFI_ERR_PARSE (not a JSON object), PFI_ERR_VALUE (no feasible range: min_w and
 * max_w numbers with 0 <= min_w <= max_w; a malformed "bands": which element and why), diag
 * says which. */
pfi_error pfi_ctl_child_status_parse(const char *text, size_t len, pfi_ctl_child_status *out,
                                     pfi_diag *diag);

/* One child as the parent's last period saw it. */
typedef struct pfi_ctl_child_view {
    const char *url;      /* borrowed */
    bool up;              /* answered GET /v1/status and accepted its budget this period */
    bool answered;        /* its status was read at least once (false: it never answered, so
                             nothing is known that it could hold) */
    double measured_w;    /* what it measured (its last answer; NaN none) */
    double min_w, max_w;  /* its feasible range (its last answer; NaN none) */
    size_t n_bands;       /* the bands in its last answer (0: none) */
    bool has_bands;       /* its last answer had "bands" (false: an older child, one band) */
    double share_w;       /* the budget sent this period (NaN: none sent) */
    double accepted_w;    /* the last budget it accepted (NaN: none): held while it is silent */
    unsigned long silent; /* periods in a row without an answer */
    const char *fault;    /* this period's failure ("" none; borrowed) */
} pfi_ctl_child_view;

/* What one parent period did. */
typedef struct pfi_ctl_parent_report {
    double t_s;
    bool event;
    double budget_w;     /* the site budget (NaN outside an event) */
    double measured_w;   /* Σ children's measured power (a silent one: its last answer; NaN
                            when no child has answered with one) */
    double held_w;       /* Σ silent children's accepted budgets, counted as spent (NaN when
                            every silent child never answered: nothing known is held) */
    double min_w, max_w; /* Σ answering children's feasible range */
    size_t up, children;
    bool feasible; /* the budget covers the held budgets and every minimum */
    char note[256];
} pfi_ctl_parent_report;

typedef struct pfi_ctl_parent pfi_ctl_parent;

/* pfi_ctl_parent_create — a parent of the n children (URL: a child controller's --listen
 * base, TOKEN: a control-scoped token of its --token-file; copied). http_timeout_s bounds
 * every request (> 0). Errors: PFI_ERR_INVALID_ARGUMENT, PFI_ERR_UNAVAILABLE (libcurl),
 * PFI_ERR_NOMEM. */
pfi_error pfi_ctl_parent_create(const pfi_ctl_agent_spec *children, size_t n, double http_timeout_s,
                                pfi_ctl_parent **out, pfi_diag *diag);
void pfi_ctl_parent_destroy(pfi_ctl_parent *p);

/* pfi_ctl_parent_step — one period at t_s: every child's status read, the site budget
 * budget_w (event true) split across the children's bands (pfi_ctl_split_bands: the lowest
 * band cut first across the site; a child whose status has no "bands" is one band, 0, and
 * the note says so; silent children hold their accepted budget),
 * the decreases PUT first and then the increases; outside an event every child is sent
 * {"event": false}. A child that fails is reported, not an error. Errors: PFI_ERR_NOMEM. */
pfi_error pfi_ctl_parent_step(pfi_ctl_parent *p, double t_s, bool event, double budget_w,
                              pfi_ctl_parent_report *rep, pfi_diag *diag);

/* pfi_ctl_parent_child_get — child i (< n) after the last step. */
void pfi_ctl_parent_child_get(const pfi_ctl_parent *p, size_t i, pfi_ctl_child_view *out);

#ifdef __cplusplus
}
#endif

#endif
