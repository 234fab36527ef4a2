/*
 * Job libraries for the policy simulation: from the calibrated synthetic library
 * (pfi/library.h) or from a runs table.
 */
#include "pfi/joblib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "pfi/curve.h"
#include "pfi/model.h"

void pfi_joblib_destroy(pfi_joblib *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; l->name != NULL && i < l->n; i++)
        pfi_free(l->name[i]);
    for (size_t c = 0; c < l->n_classes; c++)
        pfi_free(l->class_name[c]);
    pfi_free(l->name);
    pfi_free(l->class_id);
    pfi_free(l->fine_tune);
    pfi_free(l->gpus);
    pfi_free(l->offset);
    pfi_free(l->cap_w);
    pfi_free(l->power_w);
    pfi_free(l->tput_tok_s);
    pfi_free(l->pfi);
    pfi_free(l->feature);
    pfi_free(l);
}

/* A library with room for n templates and points curve points (n counts up as filled). */
static pfi_joblib *lib_alloc(size_t n, size_t points)
{
    pfi_joblib *l = pfi_calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    size_t m = n > 0 ? n : 1, p = points > 0 ? points : 1;
    l->name = pfi_calloc(m, sizeof *l->name);
    l->class_id = pfi_calloc(m, sizeof *l->class_id);
    l->fine_tune = pfi_calloc(m, sizeof *l->fine_tune);
    l->gpus = pfi_calloc(m, sizeof *l->gpus);
    l->offset = pfi_calloc(m + 1, sizeof *l->offset);
    l->cap_w = pfi_calloc(p, sizeof *l->cap_w);
    l->power_w = pfi_calloc(p, sizeof *l->power_w);
    l->tput_tok_s = pfi_calloc(p, sizeof *l->tput_tok_s);
    l->pfi = pfi_calloc(m, sizeof *l->pfi);
    l->feature = pfi_calloc(m, sizeof *l->feature);
    if (!l->name || !l->class_id || !l->fine_tune || !l->gpus || !l->offset || !l->cap_w ||
        !l->power_w || !l->tput_tok_s || !l->pfi || !l->feature) {
        pfi_joblib_destroy(l);
        return NULL;
    }
    return l;
}

/* The index of class name c, added when new. */
static pfi_error class_index(pfi_joblib *l, const char *c, size_t *out)
{
    for (size_t i = 0; i < l->n_classes; i++) {
        if (strcmp(l->class_name[i], c) == 0) {
            *out = i;
            return PFI_OK;
        }
    }
    if (l->n_classes == PFI_JOBLIB_MAX_CLASSES)
        return PFI_ERR_LIMIT;
    l->class_name[l->n_classes] = pfi_strdup(c);
    if (l->class_name[l->n_classes] == NULL)
        return PFI_ERR_NOMEM;
    *out = l->n_classes++;
    return PFI_OK;
}

/* The feature column named name in pfi_library_feature_names, or -1. */
static int library_feature(const char *name)
{
    for (int k = 0; k < PFI_LIBRARY_N_FEATURES; k++)
        if (strcmp(pfi_library_feature_names[k], name) == 0)
            return k;
    return -1;
}

pfi_error pfi_joblib_from_library(const pfi_library *lib, pfi_joblib **out)
{
    *out = NULL;
    if (lib == NULL || lib->n_groups == 0)
        return PFI_ERR_INVALID_ARGUMENT;
    int f_dram = library_feature("dcgm_dram_active");
    int f_copy = library_feature("dcgm_mem_copy_util");
    pfi_joblib *l = lib_alloc(lib->n_groups, lib->n_groups * PFI_LIBRARY_MAX_CAPS);
    if (l == NULL)
        return PFI_ERR_NOMEM;
    l->synthetic = true;
    size_t q = 0;
    pfi_error e = PFI_OK;
    for (size_t i = 0; i < lib->n_groups && e == PFI_OK; i++) {
        const pfi_library_group *g = &lib->groups[i];
        l->offset[i] = q;
        /* the true curve at the group's caps, ascending (caps_w is descending) */
        for (size_t c = g->n_caps; c-- > 0 && e == PFI_OK; q++) {
            pfi_model_point pt;
            e = pfi_model_eval(&g->job, g->caps_w[c], &pt);
            l->cap_w[q] = g->caps_w[c];
            l->power_w[q] = pt.job_power_w;
            l->tput_tok_s[q] = pt.throughput;
        }
        if (e != PFI_OK)
            break;
        l->pfi[i] = g->pfi_true;
        /* the DRAM copy product of the measured reference (highest-cap) run */
        l->feature[i] = NAN;
        double ref_cap = -INFINITY;
        for (size_t r = 0; r < lib->n_runs; r++) {
            const pfi_library_run *run = &lib->runs[r];
            if (run->group == i && run->cap_w > ref_cap && f_dram >= 0 && f_copy >= 0) {
                ref_cap = run->cap_w;
                l->feature[i] = run->features[f_dram] * run->features[f_copy];
            }
        }
        l->gpus[i] = g->job.gpus;
        l->fine_tune[i] = strcmp(g->task, "ft") == 0;
        l->name[i] = pfi_strdup(g->name);
        l->n = i + 1;
        e = l->name[i] == NULL ? PFI_ERR_NOMEM : class_index(l, g->job_class, &l->class_id[i]);
    }
    if (e != PFI_OK) {
        pfi_joblib_destroy(l);
        return e == PFI_ERR_NOMEM ? e : PFI_ERR_INVALID_ARGUMENT;
    }
    l->offset[lib->n_groups] = q;
    *out = l;
    return PFI_OK;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

pfi_error pfi_joblib_from_runs(const pfi_runs_table *t, const pfi_options *o, pfi_joblib **out,
                               pfi_diag *diag)
{
    *out = NULL;
    pfi_joblib *l = lib_alloc(t->n_groups, t->n_runs);
    if (l == NULL)
        return PFI_ERR_NOMEM;
    double *work = pfi_malloc(2 * (t->n_runs + 1) * sizeof *work);
    if (work == NULL) {
        pfi_joblib_destroy(l);
        return PFI_ERR_NOMEM;
    }
    pfi_options opt = *o;
    opt.draws = 0;
    size_t q = 0, n = 0;
    pfi_error e = PFI_OK;
    for (size_t g = 0; g < t->n_groups && e == PFI_OK; g++) {
        const pfi_group *grp = &t->groups[g];
        pfi_result res;
        e = pfi_group_compute(grp, &opt, &res);
        if (e != PFI_OK)
            break;
        /* usable points: the reference and every point with a cap, power and throughput,
           in ascending cap (points are stored cap descending) */
        size_t k = 0, start = q;
        if (res.has_reference && !isnan(res.ratio)) {
            for (size_t i = res.n_points; i-- > 0;) {
                const pfi_point *p = &res.points[i];
                if (isnan(p->cap_w) || isnan(p->power_w) || isnan(p->throughput) ||
                    !(p->power_w > 0) || !(p->cap_w > 0))
                    continue;
                l->cap_w[q + k] = p->cap_w;
                l->power_w[q + k] = p->power_w;
                l->tput_tok_s[q + k] = p->throughput;
                k++;
            }
            l->cap_w[q + k] = res.reference.cap_w;
            l->power_w[q + k] = res.reference.power_w;
            l->tput_tok_s[q + k] = res.reference.throughput;
            k++;
        }
        if (k < 2 || pfi_curve_check(k, l->cap_w + start, l->power_w + start, l->tput_tok_s + start,
                                     NULL) != PFI_OK) {
            l->skipped++;
            pfi_result_clear(&res);
            continue;
        }
        l->repaired += pfi_curve_repair(k, l->power_w + start, l->tput_tok_s + start, work);
        l->offset[n] = start;
        q += k;
        l->pfi[n] = res.ratio;
        l->feature[n] = NAN;
        l->gpus[n] = 1;
        for (size_t r = 0; r < grp->n_runs; r++)
            if (grp->runs[r].valid & PFI_RUN_GPUS)
                l->gpus[n] = grp->runs[r].gpus;
        const char *cls = grp->job_class != NULL ? grp->job_class : "unknown";
        l->fine_tune[n] = ends_with(cls, "-ft");
        char label[512];
        size_t used = 0;
        label[0] = '\0';
        const char *base = strrchr(t->files[grp->file_index], '/');
        base = base ? base + 1 : t->files[grp->file_index];
        used += (size_t)snprintf(label, sizeof label, "%s", base);
        for (size_t i = 0; i < grp->n_key && used < sizeof label; i++)
            used += (size_t)snprintf(label + used, sizeof label - used, "%s%s", i == 0 ? ":" : "|",
                                     grp->key_values[i]);
        l->name[n] = pfi_strdup(label);
        l->n = n + 1;
        e = l->name[n] == NULL ? PFI_ERR_NOMEM : class_index(l, cls, &l->class_id[n]);
        n++;
        pfi_result_clear(&res);
    }
    pfi_free(work);
    l->offset[n] = q;
    l->n = n;
    if (e == PFI_OK && n == 0) {
        e = PFI_ERR_EMPTY;
        if (diag != NULL) {
            pfi_diag_clear(diag);
            snprintf(diag->message, sizeof diag->message,
                     "no sweep group has a defined PFI and two usable caps (%zu skipped)",
                     l->skipped);
        }
    }
    if (e != PFI_OK) {
        pfi_joblib_destroy(l);
        return e;
    }
    *out = l;
    return PFI_OK;
}
