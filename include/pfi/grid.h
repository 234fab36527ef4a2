/*
 * pfi/grid.h — grid events as the controller's schedule (DESIGN §8): power-target timelines
 * from CSV or JSON files, targets derived from a measured cluster power trace (the pre-event
 * level, the reduction and the ramp as measured, e.g. the Phoenix demonstration's
 * SRP_total_power.csv), and time compression for replays. The events are pfi_ctl_event
 * (pfi/control_files.h), so that pfi control runs them as any schedule.
 *
 * Parsers take (text, len) so they can be fuzzed; none reads a file. Results are owned arrays
 * (pfi_free). Nothing here prints or exits. Thread-safety: pure functions.
 */
#ifndef PFI_GRID_H
#define PFI_GRID_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/control_files.h"
#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which form a schedule file had (pfi_grid_schedule_load). */
typedef enum pfi_grid_schedule_form {
    PFI_GRID_FORM_TEXT = 0,  /* "START END TARGET [RAMP]" lines (pfi_ctl_schedule_parse) */
    PFI_GRID_FORM_CSV = 1,   /* a CSV timeline with a header (see pfi_grid_schedule_load) */
    PFI_GRID_FORM_JSON = 2,  /* a JSON timeline */
    PFI_GRID_FORM_TRACE = 3, /* a measured power trace, header "timestamp,total" */
} pfi_grid_schedule_form;

/* pfi_grid_form_name — "text", "csv", "json", "trace". Static. */
const char *pfi_grid_form_name(pfi_grid_schedule_form f);

/*
 * What a measured trace gave (PFI_GRID_FORM_TRACE). Times in seconds from the trace's first
 * sample; power in W. The event is the longest run of samples below 90 % of the first 20
 * samples' median; pre_event_w is the median of the (up to) 30 samples before the ramp
 * starts; event_w the median of the run; the ramp starts at the last sample before the run
 * at or above 98 % of pre_event_w and ends at the run's first sample at or below 102 % of
 * event_w; the hold ends at the run's last sample at or below 102 % of event_w, and power
 * is back at 90 % of pre_event_w at recovered_s (NaN if never).
 */
typedef struct pfi_grid_trace_info {
    size_t samples;
    double pre_event_w, event_w;
    double reduction; /* 1 − event_w / pre_event_w */
    double ramp_start_s, hold_start_s, hold_end_s, recovered_s;
    double first_unix_s; /* the first sample's time, Unix s (NaN for clock-only HH:MM) */
} pfi_grid_trace_info;

/*
 * pfi_grid_schedule_load — a schedule file in any of its forms, told apart by its first
 * line: JSON (first non-blank byte '{' or '['), a CSV header with a "timestamp" column (a
 * measured trace), a CSV header with "start_s" (a timeline), else the text lines of
 * pfi_ctl_schedule_parse.
 *   - CSV timeline: columns start_s, end_s, ramp_s (optional, default 0) and one of
 *     budget_w / reduction_pct per row (the other empty), or target ("30%" / "5200W").
 *   - JSON timeline: {"events": [...]} or [...], each {"start_s", "end_s", "ramp_s"?, and
 *     "budget_w" or "reduction_pct" or "target"}; unknown keys are errors.
 *   - trace: "timestamp,total": one sample a row, timestamp ISO 8601
 *     ("2025-05-04 14:40:00-07:00", 'T' or ' ', offset or Z) or a clock "HH:MM[:SS]"
 *     (a clock more than 12 h before the previous sample is the next day), total in W, times
 * strictly increasing; at least 20 samples. One event: from ramp_start_s to hold_end_s, ramp
 * hold_start_s − ramp_start_s, target the measured reduction (a reduction, so that a cluster of
 * another size replays the same relative drop); *trace (may be NULL) gets the numbers. Every form:
 * 0 <= start < end, ramp >= 0, events sorted by start and not overlapping. *out (owned, pfi_free)
 * of *n events; *form (may be NULL) the form found. Errors: PFI_ERR_PARSE (diag: line, field and
 * what was expected), PFI_ERR_EMPTY (no event; a trace with no drop below 90 %), PFI_ERR_LIMIT
 * (more than PFI_CTL_MAX_EVENTS events, or 1 000 000 samples), PFI_ERR_NOMEM.
 */
pfi_error pfi_grid_schedule_load(const char *text, size_t len, pfi_ctl_event **out, size_t *n,
                                 pfi_grid_schedule_form *form, pfi_grid_trace_info *trace,
                                 pfi_diag *diag);

/*
 * pfi_grid_schedule_speed — time compression for replays: every event's start, end and ramp
 * divided by speed (> 0; 60: a minute of the event a second). false (ev untouched) when
 * speed is not finite and > 0.
 */
bool pfi_grid_schedule_speed(pfi_ctl_event *ev, size_t n, double speed);

/*
 * pfi_grid_facility_target — a target on facility power (what the utility meters: the GPUs
 * plus non_gpu_w W of every node's other parts, summed over the nodes) as the budget of the
 * GPUs alone: a budget B (*budget_w, facility W) gives B − non_gpu_w; a reduction r
 * (*reduction, of the facility's reference gpu_ref_w + non_gpu_w) gives (1 − r)(gpu_ref_w +
 * non_gpu_w) − non_gpu_w. Either way *budget_w becomes the GPU budget (at least 1 W: a
 * facility target below the non-GPU part leaves the GPUs nothing) and *reduction NaN. false
 * (both untouched) when non_gpu_w is not finite and >= 0, neither target is given, or a
 * reduction comes before the GPU reference power is known (gpu_ref_w not > 0).
 * Source: [ours]; the non-GPU part is measured or a documented per-node constant (README).
 */
bool pfi_grid_facility_target(double non_gpu_w, double gpu_ref_w, double *budget_w,
                              double *reduction);

/* ---- flexibility tiers with job-average accounting ----------------------------------------
 * A job's tier says how much of its average throughput over its whole life (as the
 * controller sees it) it may lose: Flex 1 10 %, Flex 2 25 %, Flex 3 50 % [ours: the Phoenix
 * demonstration names the tiers, most flexible = 3, without publishing their allowances;
 * these hold its published outcome: Flex 1 1.00, Flex 2 >= 0.94, Flex 3 >= 0.67], or an
 * explicit allowance. The controller spends the allowance across the event: after each
 * period the job's floor for the next is what keeps its life-average loss within the
 * allowance if it lost at that rate until the event ends,
 *   floor = 1 − (a (R + T_ref·τ) − L) / (T_ref·τ), clamped to [0, 1],
 * with a the allowance, R = Σ T_ref dt and L = Σ (T_ref − T) dt over the periods seen so far
 * (tokens), τ the seconds left in the event (unknown: floor = 1 − a). */
typedef struct pfi_grid_tier_job {
    char job[PFI_CTL_ID_LEN]; /* the job id as agents report it */
    int tier;                 /* 1, 2, 3; 0 when only an allowance was given */
    double allowance;         /* share of its average throughput it may lose, [0, 1] */
    double lost_tok;          /* L: tokens lost against the reference so far */
    double ref_tok;           /* R: tokens the reference would have made in that time */
    double accounted_s;       /* seconds accounted */
    double floor_frac;        /* the floor for the next period (NaN: none yet) */
} pfi_grid_tier_job;

/* pfi_grid_tier_allowance — tier 1, 2, 3 → 0.10, 0.25, 0.50; NaN otherwise. */
double pfi_grid_tier_allowance(int tier);

/*
 * pfi_grid_tiers_parse — a tiers file: CSV with a header naming the job column (job, Model
 * or id) and a tier column (tier or Flexibility: "Flex 1".."Flex 3", "flex2", "3") and/or an
 * allowance column (0–1, wins over the tier's); the demonstration's SRP_exp_performance.csv
 * is one (its row without a tier is skipped). *out (owned, pfi_free) of *n jobs, accounting
 * zeroed. Errors: PFI_ERR_PARSE (diag: line and field), PFI_ERR_EMPTY, PFI_ERR_LIMIT (more
 * than PFI_CTL_MAX_RULES jobs), PFI_ERR_NOMEM.
 */
pfi_error pfi_grid_tiers_parse(const char *text, size_t len, pfi_grid_tier_job **out, size_t *n,
                               pfi_diag *diag);

/*
 * pfi_grid_tier_account — one period of job j: its measured tokens/s (NaN: not measured, not
 * accounted), its reference tokens/s (uncapped; not > 0: nothing accounted, floor NaN), the
 * period's length dt_s and the seconds left in the event left_s (INFINITY or NaN when
 * unknown or outside an event); updates L, R and j->floor_frac (see above). Throughput above
 * the reference counts as the reference.
 */
void pfi_grid_tier_account(pfi_grid_tier_job *j, double tput_tok_s, double ref_tput_tok_s,
                           double dt_s, double left_s);

/* pfi_grid_tier_performance — 1 − L/R, the job's life-average throughput ÷ its reference;
 * NaN before anything was accounted. */
double pfi_grid_tier_performance(const pfi_grid_tier_job *j);

/* pfi_grid_tier_compliant — performance >= 1 − allowance (true before any accounting). */
bool pfi_grid_tier_compliant(const pfi_grid_tier_job *j);

/* ---- settlement: a power event from the audit log ------------------------------------------
 * The first event of the audit log's latest controller run (a contiguous run of event
 * periods). A period stands for the seconds to the next one (the last: as long as the one
 * before). The controller reads power and tokens/s at a period's tick, before it sets that
 * period's caps: the readings of period k + 1 (the cluster's power, each job's tokens/s) are
 * what period k's caps and target drew and delivered, and every figure here pairs them so
 * (the excess, the kWh shed, the pre-event baseline, each job's performance, tokens lost and
 * life-average). The last period's interval has no reading (missing), the first period's
 * reading (of the time before the log) none. Times and energies are in event time: the log's
 * seconds × speed (a replay at --speed 60 settles as the hour it stands for). Every power includes
 * non_gpu_w (facility power; 0: the GPUs' power as logged). */
/* A job's reference tokens/s given to the settlement (its uncapped throughput known from
 * elsewhere: a noise-free sweep, the job's own logs). */
typedef struct pfi_grid_settle_ref {
    char job[PFI_CTL_ID_LEN];
    double tput_tok_s; /* > 0, finite */
} pfi_grid_settle_ref;

typedef struct pfi_grid_settle_options {
    double interval_s;   /* settlement interval, event time (300) */
    double speed;        /* replay compression of the log (1) */
    double pre_window_s; /* pre-event baseline window, event time (1800) */
    double skip_s;       /* the first skip_s of the event (its ramp) left out of the excess (0) */
    double non_gpu_w;    /* added to every power: facility = GPUs + non-GPU (0) */
    const pfi_grid_tier_job *tiers; /* the jobs' tiers (may be NULL) */
    size_t n_tiers;
    const pfi_grid_settle_ref *refs; /* given reference tokens/s, winning over the pre-event
                                        window's (may be NULL; borrowed) */
    size_t n_refs;
} pfi_grid_settle_options;

void pfi_grid_settle_options_init(pfi_grid_settle_options *o);

/* One settlement interval: energies in kWh; shed = baseline − measured (negative: more). */
typedef struct pfi_grid_settle_interval {
    double start_s, end_s;
    double target_kwh, measured_kwh;
    double shed_pre_kwh;      /* against the pre-event level */
    double shed_uncapped_kwh; /* against the uncapped predictions (the jobs' reference power);
                                 NaN when the event has none beside a reading */
    size_t missing_periods;   /* periods overlapping it without a measured power (none, or
                                 0 W: stale): counted in its target, in no measured or shed sum */
} pfi_grid_settle_interval;

/* One event period, for the figure: W. */
typedef struct pfi_grid_settle_point {
    double t_s, target_w, measured_w, uncapped_w;
} pfi_grid_settle_point;

/* One job over the event. */
typedef struct pfi_grid_settle_job {
    char job[PFI_CTL_ID_LEN];
    size_t gpus;
    int tier;                /* 0: none given */
    double allowance;        /* NaN: no tier */
    double ref_tput_tok_s;   /* T_ref of the event: the one given (options' refs), else the
                                job's mean measured tokens/s in the pre-event window (the
                                power baseline's periods), else the controller's reference
                                (logged with the last event period's reading); NaN: none */
    bool ref_pre_event;      /* T_ref is the pre-event window's */
    bool ref_given;          /* T_ref is the one given */
    double performance;      /* Σ T dt ÷ Σ T_ref dt over the event (the demonstration's) */
    double life_performance; /* over every reading of the run (row 0's too: the period
                                before the first), T capped at the controller's reference,
                                against it (what its tier accounting spent) */
    double tokens_lost;      /* Σ (T_ref − min(T, T_ref)) dt over the event, event time; NaN
                                when no event period has both T and T_ref */
    bool tier_compliant;     /* life_performance >= 1 − allowance (true without a tier) */
} pfi_grid_settle_job;

typedef struct pfi_grid_settlement {
    double event_start_s, event_end_s; /* event time since the run started */
    double pre_event_w;                /* mean measured power in the pre-event window (NaN) */
    double pre_event_s;                /* how much of the window the log holds */
    double uncapped_mean_w;            /* mean uncapped prediction over the event */
    double non_gpu_w;
    double energy_shed_pre_kwh, energy_shed_uncapped_kwh; /* Σ over the intervals */
    double max_over_target_w, max_over_target_pct;        /* largest measured − target (after
                                                              skip_s; NaN: no period) */
    double seconds_over_target;   /* event time with measured > target (after skip_s) */
    double longest_over_target_s; /* the longest such stretch */
    double weighted_performance;  /* Σ gpus × performance ÷ Σ gpus [ours: by GPU count] */
    double mean_performance;      /* plain mean over the jobs */
    size_t tier_violations;
    pfi_grid_settle_job *jobs;
    size_t n_jobs;
    pfi_grid_settle_interval *intervals;
    size_t n_intervals;
    pfi_grid_settle_point *series;
    size_t n_series;
    size_t missing_periods; /* event periods without a measured power (none, or 0 W: a stale
                               reading): in no measured or shed sum, never taken as 0 W */
} pfi_grid_settlement;

/*
 * pfi_grid_settle — the settlement of the first event of the latest run in the audit log at
 * audit_path (opened read-only). *out owned (pfi_grid_settlement_destroy). Errors:
 * PFI_ERR_INVALID_ARGUMENT (options), PFI_ERR_IO (the log), PFI_ERR_EMPTY (no period, or no
 * event period), PFI_ERR_NOMEM.
 */
pfi_error pfi_grid_settle(const char *audit_path, const pfi_grid_settle_options *o,
                          pfi_grid_settlement **out, pfi_diag *diag);
void pfi_grid_settlement_destroy(pfi_grid_settlement *s);

#ifdef __cplusplus
}
#endif

#endif
