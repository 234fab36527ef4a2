/*
 * pfi/control_files.h — the cluster controller's input files as data (DESIGN §8): the agents
 * it drives, the schedule of grid power events, the per-job policy. pfi/control.h takes them
 * in its configuration.
 *
 * Parsers take (text, len) so they can be fuzzed; none of them reads a file. Results are
 * owned arrays (pfi_free). Nothing here prints or exits. Thread-safety: pure functions.
 */
#ifndef PFI_CONTROL_FILES_H
#define PFI_CONTROL_FILES_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/agent_api.h" /* PFI_CTL_ID_LEN: a rule names a job as agents report it */
#include "pfi/error.h"
#include "pfi/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_CTL_MAX_AGENTS 4096 /* agents in one agents file */
#define PFI_CTL_MAX_EVENTS 1024 /* lines in one schedule */
#define PFI_CTL_MAX_RULES 4096  /* lines in one policy */
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

/* The latest end an event may have, s from the run's start (a year): a later one is a typo
 * (1e300), refused by the schedule readers with the line. */
#define PFI_CTL_MAX_EVENT_S 31536000.0

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
 * reference throughput, [0, 1]), weight (priority weight >= 0, default 1), band (priority
 * band, default 0: higher bands are cut last; pfi_band_valid's rule, pfi/topology.h) and
 * class (dense, moe-pt, moe-ft, dense-ft: overrides what the agent says). JOB is a job id or
 * "*" (every job without its own rule); a job with two rules is an error naming both lines.
 * '#' comments, blank lines ignored. */
typedef struct pfi_ctl_rule {
    char job[PFI_CTL_ID_LEN];
    double floor_frac; /* NaN: none */
    double weight;     /* NaN: 1 */
    double band;       /* priority band (NaN when not given: band 0): a reduction comes from
                          the lowest band first, a restore goes to the highest first */
    char job_class[32];
} pfi_ctl_rule;

/* pfi_ctl_policy_parse — parse into *out (owned, pfi_free()) of *n rules (may be 0).
 * Errors: PFI_ERR_PARSE, PFI_ERR_LIMIT, PFI_ERR_NOMEM. */
pfi_error pfi_ctl_policy_parse(const char *text, size_t len, pfi_ctl_rule **out, size_t *n,
                               pfi_diag *diag);

/* pfi_ctl_policy_find — the rule for job (exact id first, then "*"), or NULL. Borrowed. */
const pfi_ctl_rule *pfi_ctl_policy_find(const pfi_ctl_rule *r, size_t n, const char *job);

#ifdef __cplusplus
}
#endif

#endif
