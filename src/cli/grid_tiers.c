/*
 * pfi control --tiers FILE: flexibility tiers with job-average accounting (pfi/grid.h), fed
 * by the controller's view of each job and written as the job's policy floor; the jobs of
 * the tiers file, and with --slurm each running job's --pfi-flex (grid_tiers_add).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "grid_cli.h"
#include "pfi/memory.h"

/* Room for one more job and rule. false when out of memory or at PFI_CTL_MAX_RULES. */
static bool grow(grid_tiers *t)
{
    if (t->n < t->cap)
        return true;
    if (t->n_rules + 1 > PFI_CTL_MAX_RULES)
        return false;
    size_t nc = t->cap ? 2 * t->cap : 16, nr = t->n_policy + nc;
    pfi_grid_tier_job *j = realloc(t->jobs, nc * sizeof *j);
    if (j != NULL)
        t->jobs = j;
    size_t *ru = realloc(t->rule, nc * sizeof *ru);
    if (ru != NULL)
        t->rule = ru;
    double *fm = realloc(t->floor_min, nc * sizeof *fm);
    if (fm != NULL)
        t->floor_min = fm;
    bool *fs = realloc(t->from_slurm, nc * sizeof *fs);
    if (fs != NULL)
        t->from_slurm = fs;
    pfi_ctl_rule *r = realloc(t->rules, nr * sizeof *r);
    if (r != NULL)
        t->rules = r;
    if (j == NULL || ru == NULL || fm == NULL || fs == NULL || r == NULL)
        return false;
    t->cap = nc;
    return true;
}

int grid_tiers_init(grid_tiers *t, const pfi_ctl_rule *policy, size_t n_policy)
{
    memset(t, 0, sizeof *t);
    t->rules = malloc((n_policy ? n_policy : 1) * sizeof *t->rules);
    if (t->rules == NULL) {
        cli_error("out of memory");
        return PFI_EXIT_INTERNAL;
    }
    if (n_policy > 0)
        memcpy(t->rules, policy, n_policy * sizeof *t->rules);
    t->n_rules = t->n_policy = n_policy;
    return PFI_EXIT_OK;
}

size_t grid_tiers_find(const grid_tiers *t, const char *job)
{
    for (size_t k = 0; k < t->n; k++)
        if (strcmp(t->jobs[k].job, job) == 0)
            return k;
    return SIZE_MAX;
}

/* The floor job k keeps next period: its accounting's (1 − allowance before any), never
 * under its floor_min. */
static double floor_of(const grid_tiers *t, size_t k)
{
    const pfi_grid_tier_job *j = &t->jobs[k];
    double f = isnan(j->floor_frac) ? 1 - j->allowance : j->floor_frac;
    return isfinite(t->floor_min[k]) ? fmax(f, t->floor_min[k]) : f;
}

/* Add job k's record and its rule (the policy's exact one, else proto named for it). */
static bool add_job(grid_tiers *t, const pfi_grid_tier_job *src, const pfi_ctl_rule *proto,
                    double floor_min, bool from_slurm)
{
    if (!grow(t))
        return false;
    size_t k = t->n++;
    t->jobs[k] = *src;
    t->floor_min[k] = floor_min;
    t->from_slurm[k] = from_slurm;
    size_t i = 0;
    while (i < t->n_rules && strcmp(t->rules[i].job, src->job) != 0)
        i++;
    if (i == t->n_rules) { /* a rule of its own, after the policy's and the other jobs' */
        i = t->n_rules++;
        t->rules[i] = *proto;
        snprintf(t->rules[i].job, sizeof t->rules[i].job, "%s", src->job);
    }
    t->rule[k] = i;
    t->rules[i].floor_frac = floor_of(t, k); /* until the accounting has a reference */
    return true;
}

/* The policy's "*" rule, else weight 1 (NaN: the allocator's default) and no class. */
static pfi_ctl_rule default_rule(const grid_tiers *t)
{
    pfi_ctl_rule d;
    memset(&d, 0, sizeof d);
    d.floor_frac = d.weight = NAN;
    for (size_t i = 0; i < t->n_policy; i++)
        if (strcmp(t->rules[i].job, "*") == 0)
            d = t->rules[i];
    return d;
}

int grid_tiers_load(const char *path, const pfi_ctl_rule *policy, size_t n_policy, grid_tiers *t)
{
    int rc = grid_tiers_init(t, policy, n_policy);
    if (rc != PFI_EXIT_OK)
        return rc;
    size_t len = 0;
    errno = 0;
    char *text = cli_read_text(path, 16u << 20, &len);
    if (text == NULL) {
        cli_error("tiers %s: %s", path, cli_input_why());
        return PFI_EXIT_DATA;
    }
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_grid_tier_job *jobs = NULL;
    size_t n = 0;
    pfi_error e = pfi_grid_tiers_parse(text, len, &jobs, &n, &d);
    free(text);
    if (e != PFI_OK) {
        snprintf(d.file, sizeof d.file, "%s", path);
        return cli_report(e, &d);
    }
    pfi_ctl_rule dflt = default_rule(t);
    for (size_t k = 0; k < n; k++)
        if (!add_job(t, &jobs[k], &dflt, NAN, false)) {
            pfi_free(jobs);
            cli_error("out of memory");
            return PFI_EXIT_INTERNAL;
        }
    pfi_free(jobs);
    return PFI_EXIT_OK;
}

bool grid_tiers_add(grid_tiers *t, const char *job, int tier, double allowance,
                    const pfi_ctl_rule *proto, double floor_min)
{
    if (grid_tiers_find(t, job) != SIZE_MAX)
        return true;
    pfi_grid_tier_job j;
    memset(&j, 0, sizeof j);
    snprintf(j.job, sizeof j.job, "%s", job);
    j.tier = tier;
    j.allowance = allowance;
    j.floor_frac = NAN;
    return add_job(t, &j, proto, floor_min, true);
}

void grid_tiers_prune(grid_tiers *t, bool (*keep)(void *ctx, const char *job), void *ctx)
{
    for (size_t k = t->n; k-- > 0;) {
        if (!t->from_slurm[k] || keep(ctx, t->jobs[k].job))
            continue;
        size_t i = t->rule[k];
        if (i >= t->n_policy) { /* its own rule: out, the later ones one down */
            memmove(&t->rules[i], &t->rules[i + 1], (t->n_rules - i - 1) * sizeof *t->rules);
            t->n_rules--;
            for (size_t q = 0; q < t->n; q++)
                if (t->rule[q] > i)
                    t->rule[q]--;
        }
        memmove(&t->jobs[k], &t->jobs[k + 1], (t->n - k - 1) * sizeof *t->jobs);
        memmove(&t->rule[k], &t->rule[k + 1], (t->n - k - 1) * sizeof *t->rule);
        memmove(&t->floor_min[k], &t->floor_min[k + 1], (t->n - k - 1) * sizeof *t->floor_min);
        memmove(&t->from_slurm[k], &t->from_slurm[k + 1], (t->n - k - 1) * sizeof *t->from_slurm);
        t->n--;
    }
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
            t->rules[t->rule[k]].floor_frac = floor_of(t, k);
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
    int w = 32; /* the job column as wide as the longest name (names are not cut) */
    for (size_t k = 0; k < t->n; k++)
        w = cli_safe_width(t->jobs[k].job, w, 256);
    for (size_t k = 0; k < t->n; k++) {
        const pfi_grid_tier_job *j = &t->jobs[k];
        double p = pfi_grid_tier_performance(j);
        char tier[16] = "custom";
        if (j->tier)
            snprintf(tier, sizeof tier, "Flex %d", j->tier);
        char sj[CLI_SAFE_CELL]; /* the job name from the tiers file, escaped (cli_safe) */
        fprintf(f, "  %-*s %-6s  performance %s  allowance %.0f%%  %s\n", w,
                cli_safe(sj, sizeof sj, j->job, strlen(j->job)), tier, cli_num(p, 'f', 4, "-").s,
                100 * j->allowance, pfi_grid_tier_compliant(j) ? "within tier" : "TIER VIOLATED");
    }
}

void grid_tiers_free(grid_tiers *t)
{
    free(t->jobs);
    free(t->rule);
    free(t->floor_min);
    free(t->from_slurm);
    free(t->rules);
    memset(t, 0, sizeof *t);
}
