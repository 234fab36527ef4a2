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

/* The tiers of one controller run: the jobs and the policy rules whose floors they drive.
 * Jobs come from the tiers file (--tiers) and from Slurm (--slurm: each running job's
 * --pfi-flex, grid_tiers_add): one mechanism, job-average accounting, for both. */
typedef struct grid_tiers {
    pfi_grid_tier_job *jobs; /* owned (free) */
    size_t n;
    size_t *rule;        /* per job: its rule's index in rules */
    double *floor_min;   /* per job: a floor it keeps whatever the accounting (NaN none) */
    bool *from_slurm;    /* per job: added by grid_tiers_add (removed when it leaves) */
    pfi_ctl_rule *rules; /* the policy's rules and one per tier job without one (malloc) */
    size_t n_rules;
    size_t cap;      /* jobs and rules allocated beyond the policy's */
    size_t n_policy; /* rules[0..n_policy) are the policy's */
} grid_tiers;

/* No tier job yet: t->rules a copy of the policy's rules. An exit code (the error printed). */
int grid_tiers_init(grid_tiers *t, const pfi_ctl_rule *policy, size_t n_policy);

/*
 * Add job (a Slurm job id) with the Flex tier (1-3; 0: none) and allowance (the share of its
 * life-average throughput it may lose, [0, 1]) unless t has it: its accounting starts now;
 * its rule is the policy's exact rule for it, else proto with its name (weight and class);
 * its floor is the accounting's, never under floor_min (NaN none). true when added or there
 * already; false when out of memory or t holds PFI_CTL_MAX_RULES rules.
 */
bool grid_tiers_add(grid_tiers *t, const char *job, int tier, double allowance,
                    const pfi_ctl_rule *proto, double floor_min);

/* Drop the jobs grid_tiers_add added that keep(ctx, job) says are gone (their rules too). */
void grid_tiers_prune(grid_tiers *t, bool (*keep)(void *ctx, const char *job), void *ctx);

/* The index of job in t->jobs; SIZE_MAX when not there. */
size_t grid_tiers_find(const grid_tiers *t, const char *job);

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
