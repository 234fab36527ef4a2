/*
 * Flexibility tiers with job-average accounting (pfi/grid.h): each job may lose a share of
 * its average throughput over its whole life (its tier's allowance); the controller spends
 * that allowance across the event, and a job's floor in each period follows from what it has
 * already lost.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "control/ctl_internal.h"
#include "core/memory.h"
#include "pfi/csv.h"
#include "pfi/grid.h"

double pfi_grid_tier_allowance(int tier)
{
    return tier == 1 ? 0.10 : tier == 2 ? 0.25 : tier == 3 ? 0.50 : NAN;
}

/* "Flex 2", "flex2", "flex-2", "2" -> 2; 0 when not a tier. */
static int tier_number(const char *s)
{
    if (strncasecmp(s, "flex", 4) == 0)
        s += 4;
    while (*s == ' ' || *s == '-' || *s == '_')
        s++;
    if (s[0] >= '1' && s[0] <= '3' && s[1] == '\0')
        return s[0] - '0';
    return 0;
}

/* The column of the first of names in the header h (-1: none); *twice: the name of that
   column when it appears twice in the header (which one is meant is ambiguous), else NULL. */
static int col_of(const char *const *h, size_t n, const char *const *names, const char **twice)
{
    for (size_t i = 0; i < n; i++)
        for (const char *const *nm = names; *nm != NULL; nm++)
            if (strcasecmp(h[i], *nm) == 0) {
                for (size_t k = i + 1; k < n; k++)
                    if (strcasecmp(h[k], h[i]) == 0 && *twice == NULL)
                        *twice = h[i];
                return (int)i;
            }
    return -1;
}

pfi_error pfi_grid_tiers_parse(const char *text, size_t len, pfi_grid_tier_job **out, size_t *n,
                               pfi_diag *diag)
{
    *out = NULL;
    *n = 0;
    FILE *f = fmemopen((void *)text, len, "r");
    if (f == NULL)
        return PFI_ERR_NOMEM;
    pfi_csv_reader *r = NULL;
    pfi_error e = pfi_csv_open_stream(f, "tiers", &r, diag);
    pfi_grid_tier_job *v = NULL;
    size_t cnt = 0, cap = 0;
    int ij = -1, it = -1, ia = -1;
    size_t nh = 0; /* the header's field count */
    bool header = true;
    while (e == PFI_OK) {
        const char *const *fl;
        const size_t *lens;
        size_t nf;
        long line;
        bool eof;
        if ((e = pfi_csv_next(r, &fl, &lens, &nf, &line, &eof, diag)) != PFI_OK || eof)
            break;
        if (header) {
            static const char *const jn[] = {"job", "Model", "id", NULL};
            static const char *const tn[] = {"tier", "Flexibility", NULL};
            static const char *const an[] = {"allowance", NULL};
            const char *twice = NULL;
            ij = col_of(fl, nf, jn, &twice);
            it = col_of(fl, nf, tn, &twice);
            ia = col_of(fl, nf, an, &twice);
            nh = nf;
            if (twice != NULL)
                e = ctl_fail(diag, line, PFI_ERR_PARSE, "column '%s' appears twice in the header",
                             twice);
            else if (ij < 0 || (it < 0 && ia < 0))
                e = ctl_fail(diag, line, PFI_ERR_PARSE,
                             "expected a header with job (or Model) and tier (or Flexibility) "
                             "and/or allowance");
            header = false;
            continue;
        }
        if (nf != nh) { /* a short or long row: its cells are not where the header says */
            e = ctl_fail(diag, line, PFI_ERR_PARSE,
                         "expected %zu fields as in the header, found %zu", nh, nf);
            break;
        }
        if (fl[ij][0] == '\0' || strlen(fl[ij]) >= PFI_CTL_ID_LEN) {
            e = ctl_fail(diag, line, PFI_ERR_PARSE, "job: empty or longer than %d bytes",
                         PFI_CTL_ID_LEN - 1);
            break;
        }
        if (it >= 0 && fl[it][0] == '\0' && ia < 0)
            continue; /* a row without a tier (the demonstration's "Weighted Performance") */
        pfi_grid_tier_job j;
        memset(&j, 0, sizeof j);
        snprintf(j.job, sizeof j.job, "%s", fl[ij]);
        j.allowance = NAN;
        j.floor_frac = NAN;
        if (it >= 0 && fl[it][0] != '\0') {
            int t = tier_number(fl[it]);
            if (t == 0) {
                e = ctl_fail(diag, line, PFI_ERR_PARSE,
                             "tier: '%s' (expected Flex 1, Flex 2 or Flex 3)", fl[it]);
                break;
            }
            j.tier = t;
            j.allowance = pfi_grid_tier_allowance(t);
        }
        if (ia >= 0 && fl[ia][0] != '\0') {
            double a;
            if (!ctl_parse_num(fl[ia], &a) || !(a >= 0 && a <= 1)) {
                e = ctl_fail(diag, line, PFI_ERR_PARSE, "allowance: '%s' (expected 0 to 1)",
                             fl[ia]);
                break;
            }
            j.allowance = a;
        }
        if (isnan(j.allowance)) {
            e = ctl_fail(diag, line, PFI_ERR_PARSE, "job %s: no tier and no allowance", j.job);
            break;
        }
        for (size_t k = 0; k < cnt; k++)
            if (strcmp(v[k].job, j.job) == 0)
                e = ctl_fail(diag, line, PFI_ERR_PARSE, "job %s listed twice", j.job);
        if (e != PFI_OK)
            break;
        if (cnt == PFI_CTL_MAX_RULES) {
            e = ctl_fail(diag, line, PFI_ERR_LIMIT, "more than %d jobs", PFI_CTL_MAX_RULES);
            break;
        }
        if (cnt == cap) {
            size_t nc = cap ? 2 * cap : 16;
            pfi_grid_tier_job *nv = pfi_realloc(v, nc * sizeof *nv);
            if (nv == NULL) {
                e = PFI_ERR_NOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        v[cnt++] = j;
    }
    pfi_csv_close(r);
    fclose(f);
    if (e == PFI_OK && cnt == 0)
        e = ctl_fail(diag, 0, PFI_ERR_EMPTY, "no job in the tiers file");
    if (e != PFI_OK) {
        pfi_free(v);
        return e;
    }
    *out = v;
    *n = cnt;
    return PFI_OK;
}

void pfi_grid_tier_account(pfi_grid_tier_job *j, double tput_tok_s, double ref_tput_tok_s,
                           double dt_s, double left_s)
{
    if (!(ref_tput_tok_s > 0) || !isfinite(ref_tput_tok_s)) {
        j->floor_frac = NAN; /* no reference yet: nothing to account against */
        return;
    }
    if (dt_s > 0 && isfinite(dt_s) && isfinite(tput_tok_s)) {
        double got = tput_tok_s < ref_tput_tok_s ? tput_tok_s : ref_tput_tok_s;
        j->lost_tok += (ref_tput_tok_s - (got > 0 ? got : 0)) * dt_s;
        j->ref_tok += ref_tput_tok_s * dt_s;
        j->accounted_s += dt_s;
    }
    double floor;
    if (!(left_s > 0) || !isfinite(left_s)) {
        floor = 1 - j->allowance;
    } else {
        double remaining = j->allowance * (j->ref_tok + ref_tput_tok_s * left_s) - j->lost_tok;
        floor = 1 - remaining / (ref_tput_tok_s * left_s);
    }
    j->floor_frac = floor < 0 ? 0 : floor > 1 ? 1 : floor;
}

double pfi_grid_tier_performance(const pfi_grid_tier_job *j)
{
    return j->ref_tok > 0 ? 1 - j->lost_tok / j->ref_tok : NAN;
}

bool pfi_grid_tier_compliant(const pfi_grid_tier_job *j)
{
    double p = pfi_grid_tier_performance(j);
    return !(p < 1 - j->allowance - 1e-9);
}
