/*
 * The run-store sink of a sweep (pfi/sweep.h): each completed run goes into the SQLite store
 * in one transaction as soon as it is measured, so an interrupted sweep loses at most the
 * run in progress, and a restarted one asks the store which requested caps are done.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pfi/reduce.h"
#include "pfi/sweep.h"

#define MAX_SINK_FEATURES 24

/* The feature that identifies a run for resume: the cap the sweep asked for. */
static const char requested_feature[] = "requested_cap_w";

typedef struct features {
    char name[MAX_SINK_FEATURES][64];
    double value[MAX_SINK_FEATURES];
    size_t n;
} features;

static void feature(features *f, const char *name, double v)
{
    if (f->n >= MAX_SINK_FEATURES)
        return;
    snprintf(f->name[f->n], sizeof f->name[0], "%.63s", name);
    f->value[f->n++] = v;
}

/* Split the ';'-separated flags: the three the store's PFI_RED_* bits know become bits, the
 * others flag_<name> features. */
static unsigned map_flags(const char *flags, features *f)
{
    unsigned bits = 0;
    const char *s = flags ? flags : "";
    while (*s != '\0') {
        size_t len = strcspn(s, ";");
        if (len > 0) {
            if (len == 8 && memcmp(s, "gpu_lost", 8) == 0)
                bits |= PFI_RED_GPU_LOST;
            else if (len == 13 && memcmp(s, "missing_power", 13) == 0)
                bits |= PFI_RED_NO_POWER;
            else if (len == 13 && memcmp(s, "no_throughput", 13) == 0)
                bits |= PFI_RED_NO_THROUGHPUT;
            else {
                char name[64];
                snprintf(name, sizeof name, "flag_%.*s", (int)(len < 50 ? len : 50), s);
                feature(f, name, 1);
            }
        }
        s += len + (s[len] == ';');
    }
    return bits;
}

static pfi_error store_put(void *ctx, const pfi_sweep_row *row, pfi_diag *diag)
{
    features f = {.n = 0};
    feature(&f, requested_feature, row->requested_cap_w);
    feature(&f, "samples", (double)row->samples);
    feature(&f, "tput_reports", (double)row->tput_reports);
    feature(&f, "window_s", row->window_s);
    feature(&f, "sm_clock_mhz", row->sm_clock_mhz);
    feature(&f, "dram_active", row->dram_active);
    feature(&f, "tensor_active", row->tensor_active);
    feature(&f, "in_situ", row->mode != NULL && strcmp(row->mode, "in-situ") == 0);
    unsigned bits = map_flags(row->flags, &f);
    char path[128];
    snprintf(path, sizeof path, "pfi sweep %s %s", row->mode ? row->mode : "",
             row->started_utc ? row->started_utc : "");
    pfi_store_source src = {.path = path, .reader = "pfi-sweep"};
    pfi_store_run r = {
        .group = row->group,
        .gpus = (long)row->gpus,
        .cap_w = row->cap_w,
        .power_w = row->power_w,
        .power_se_w = row->power_se_w,
        .power_n = row->samples,
        .throughput = row->throughput,
        .throughput_se = row->throughput_se,
        .throughput_n = row->tput_reports,
        .throughput_unit = "tokens",
        .power_field = "power_w",
        .energy_j = row->energy_j,
        .flags = bits,
        .n_features = f.n,
        .feature_name = (const char(*)[64])f.name,
        .feature_value = f.value,
        .n_sources = 1,
        .sources = &src,
    };
    return pfi_store_put_run(ctx, &r, NULL, diag);
}

static bool store_done(void *ctx, const char *group, double requested_cap_w)
{
    bool found = false;
    if (pfi_store_find_run(ctx, group, requested_feature, requested_cap_w, &found, NULL) != PFI_OK)
        return false;
    return found;
}

pfi_run_sink pfi_store_sink(pfi_store *st)
{
    return (pfi_run_sink){.put = store_put, .done = store_done, .ctx = st};
}
