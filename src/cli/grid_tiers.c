/*
 * pfi control --tiers FILE: flexibility tiers with job-average accounting (pfi/grid.h), fed
 * by the controller's view of each job and written as the job's policy floor.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "grid_cli.h"
#include "pfi/memory.h"

int grid_tiers_load(const char *path, const pfi_ctl_rule *policy, size_t n_policy, grid_tiers *t)
{
    memset(t, 0, sizeof *t);
    size_t len = 0;
    errno = 0;
    char *text = cli_read_text(path, 16u << 20, &len);
    if (text == NULL) {
        cli_error("tiers %s: %s", path, errno ? strerror(errno) : "cannot read");
        return PFI_EXIT_DATA;
    }
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = pfi_grid_tiers_parse(text, len, &t->jobs, &t->n, &d);
    free(text);
    if (e != PFI_OK) {
        snprintf(d.file, sizeof d.file, "%s", path);
        return cli_report(e, &d);
    }
    t->rule = calloc(t->n, sizeof *t->rule);
    pfi_ctl_rule *r = malloc((n_policy + t->n) * sizeof *r);
    t->rules = r;
    if (t->rule == NULL || r == NULL) {
        cli_error("out of memory");
        return PFI_EXIT_INTERNAL;
    }
    if (n_policy > 0)
        memcpy(r, policy, n_policy * sizeof *r);
    const pfi_ctl_rule *star = NULL;
    for (size_t i = 0; i < n_policy; i++)
        if (strcmp(r[i].job, "*") == 0)
            star = &r[i];
    pfi_ctl_rule dflt;
    memset(&dflt, 0, sizeof dflt);
    dflt.floor_frac = dflt.weight = NAN;
    if (star != NULL)
        dflt = *star;
    size_t n = n_policy;
    for (size_t k = 0; k < t->n; k++) {
        size_t i = 0;
        while (i < n && strcmp(r[i].job, t->jobs[k].job) != 0)
            i++;
        if (i == n) {
            r[n] = dflt;
            snprintf(r[n].job, sizeof r[n].job, "%s", t->jobs[k].job);
            n++;
        }
        r[i].floor_frac = 1 - t->jobs[k].allowance; /* until the accounting has a reference */
        t->rule[k] = i;
    }
    t->n_rules = n;
    return PFI_EXIT_OK;
}

void grid_tiers_period(grid_tiers *t, const pfi_ctl *ctl, double dt_s, double left_s)
{
    for (size_t k = 0; k < t->n; k++) {
        pfi_grid_tier_job *j = &t->jobs[k];
        size_t nj = pfi_ctl_job_count(ctl);
        for (size_t i = 0; i < nj; i++) {
            pfi_ctl_job_view v;
            pfi_ctl_job_get(ctl, i, &v);
            if (v.id == NULL || strcmp(v.id, j->job) != 0)
                continue;
            pfi_grid_tier_account(j, v.tput_tok_s, v.ref_tput_tok_s, dt_s, left_s);
            t->rules[t->rule[k]].floor_frac =
                isnan(j->floor_frac) ? 1 - j->allowance : j->floor_frac;
            break;
        }
    }
}

double grid_event_left_s(const pfi_ctl_event *ev, size_t n, double t, int targets, double start,
                         double duration)
{
    for (size_t i = 0; ev != NULL && i < n; i++)
        if (t >= ev[i].start_s && t < ev[i].end_s)
            return ev[i].end_s - t;
    if (ev == NULL && targets > 0 && t >= start && t < start + duration)
        return start + duration - t;
    return INFINITY;
}

void grid_tiers_summary(FILE *f, const grid_tiers *t)
{
    fprintf(f, "pfi control: tiers (life-average throughput / reference, allowed loss):\n");
    for (size_t k = 0; k < t->n; k++) {
        const pfi_grid_tier_job *j = &t->jobs[k];
        double p = pfi_grid_tier_performance(j);
        fprintf(f, "  %-32s %s%d  performance %s  allowance %.0f%%  %s\n", j->job,
                j->tier ? "Flex " : "custom", j->tier, cli_num(p, 'f', 4, "-").s,
                100 * j->allowance, pfi_grid_tier_compliant(j) ? "within tier" : "TIER VIOLATED");
    }
}

void grid_tiers_free(grid_tiers *t)
{
    pfi_free(t->jobs);
    free(t->rule);
    free(t->rules);
    memset(t, 0, sizeof *t);
}
