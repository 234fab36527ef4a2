/* Prometheus input for the controller (src/lib/control/prom.c). Internal. */
#ifndef PFI_CTL_PROM_H
#define PFI_CTL_PROM_H

#include "control/ctl_internal.h"
#include "pfi/agent_api.h"
#include "pfi/control.h"

#define CTL_PROM_MAX_FEATURES 8
#define CTL_PROM_MIN_SPAN_S 1.0 /* shortest span an energy difference is taken over */

typedef struct ctl_prom_gpu {
    char host[PFI_CTL_ID_LEN], uuid[PFI_CTL_ID_LEN];
    double energy_j, energy_t_s; /* last raw counter sample (segment end) */
    double power_w;              /* this read: from the energy difference, else the gauge */
    double sample_t_s;           /* Unix s the reading was sampled (NaN unknown) */
    double gauge_t_s;            /* this read: the gauge's sample time (timestamp()) */
    double time_t_s;             /* this read: the counter's own sample time (scratch) */
    double scrape_t_s;           /* this read: timestamp(counter) (scratch) */
    bool fresh;                  /* present in this read */
    double feature[CTL_PROM_MAX_FEATURES];
} ctl_prom_gpu;

typedef struct ctl_prom {
    ctl_prom_gpu *g;
    size_t n, cap;
    size_t *index;     /* open-addressing hash of (host, uuid) → g index + 1; 0 empty */
    size_t index_cap;  /* a power of two, at least twice n */
    double interval_s; /* the scrape interval seen in the counters' sample times (NaN) */
    size_t n_features;
    char feature_name[CTL_PROM_MAX_FEATURES][64];
    char feature_metric[CTL_PROM_MAX_FEATURES][128];
} ctl_prom;

/* ctl_prom_init — parse the feature map of pc. Errors: PFI_ERR_INVALID_ARGUMENT. */
pfi_error ctl_prom_init(ctl_prom *p, const pfi_ctl_prom_config *pc, pfi_diag *d);
void ctl_prom_clear(ctl_prom *p);

/* ctl_prom_read — one read: per (host, uuid) power (energy differenced per segment — caps
 * constant since segment_start_s, Unix s; a counter that went backwards or a cap change
 * starts a new segment and the gauge is used until it spans 1 s) and features,
 * only from targets with up == 1, each GPU counted once. Errors: PFI_ERR_IO (server down or
 * answered an error: diag says which), PFI_ERR_PARSE, PFI_ERR_NOMEM. */
pfi_error ctl_prom_read(ctl_prom *p, ctl_http *h, const pfi_ctl_prom_config *pc,
                        double segment_start_s, pfi_diag *d);

/* ctl_prom_begin — start a read: every GPU not fresh, no power, no features. */
void ctl_prom_begin(ctl_prom *p);

/* ctl_prom_take_energy — the energy part of a read (after ctl_prom_begin): s holds the
 * counters (and, when pc->energy_time_metric names one, the counters' own sample times from
 * the same query), ts the answers of timestamp(counter) (the scrape times, the fallback).
 * Sets power_w from the difference when the segment spans CTL_PROM_MIN_SPAN_S.
 * Errors: PFI_ERR_NOMEM. */
pfi_error ctl_prom_take_energy(ctl_prom *p, const pfi_ctl_prom_config *pc, const pfi_prom_sample *s,
                               size_t n, const pfi_prom_sample *ts, size_t nts,
                               double segment_start_s);

/* ctl_prom_find — the GPU host/uuid seen in the last read, or NULL. O(1) (hashed: a scrape
 * of 16 384 GPUs is read in linear time). */
const ctl_prom_gpu *ctl_prom_find(const ctl_prom *p, const char *host, const char *uuid);

#endif
