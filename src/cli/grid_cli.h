/*
 * pfi control's grid-event additions, kept out of control.c (grid_tiers.c): flexibility
 * tiers with job-average accounting (--tiers FILE).
 */
#ifndef PFI_CLI_GRID_CLI_H
#define PFI_CLI_GRID_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pfi/control.h"
#include "pfi/control_files.h"
#include "pfi/grid.h"

/* The tiers of one controller run: the jobs and the policy rules whose floors they drive. */
typedef struct grid_tiers {
    pfi_grid_tier_job *jobs; /* owned (pfi_free) */
    size_t n;
    size_t *rule;        /* per job: its rule's index in rules */
    pfi_ctl_rule *rules; /* the policy's rules and one per tier job without one (malloc) */
    size_t n_rules;
} grid_tiers;

/*
 * Read the tiers file at path; t->rules becomes the policy's rules (policy[n_policy], copied)
 * with an exact rule for each tier job (a job without one gets a copy of the "*" rule, if
 * any, else weight 1 and no class): its floor is what the accounting sets each period. The
 * controller is to use t->rules. An exit code (the error printed).
 */
int grid_tiers_load(const char *path, const pfi_ctl_rule *policy, size_t n_policy, grid_tiers *t);

/*
 * After a period of dt_s seconds (left_s seconds of the event left; INFINITY unknown or
 * outside), account each tier job from the controller's view of it and set its rule's floor
 * for the next period (in t->rules).
 */
void grid_tiers_period(grid_tiers *t, const pfi_ctl *ctl, double dt_s, double left_s);

/* Seconds left in the event in force at schedule time t (events, else the --start/--duration
   window when targets is nonzero); INFINITY when none or unknown. */
double grid_event_left_s(const pfi_ctl_event *ev, size_t n, double t, int targets, double start,
                         double duration);

/* Print each tier job's life-average performance, allowance and compliance on f. */
void grid_tiers_summary(FILE *f, const grid_tiers *t);

void grid_tiers_free(grid_tiers *t);

/* ---- pfi report --settlement (report_settle.c) ---- */

/* argv asks for the settlement (--settlement among the arguments). */
bool settle_requested(int argc, char **argv);
/* pfi report --settlement: an exit code. */
int cmd_settlement(int argc, char **argv);
/* The settlement as one JSON object (no newline); per_interval: with the intervals. */
void settle_write_json(FILE *f, const pfi_grid_settlement *s, bool per_interval);
/* A tiers file read and parsed into *t (pfi_free) of *n: an exit code (the error printed). */
int settle_tiers_load(const char *path, pfi_grid_tier_job **t, size_t *n);

#endif
