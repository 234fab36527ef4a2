/*
 * Telemetry from a Prometheus server for the controller. Every query joins on up == 1 (a
 * dead target's last samples otherwise linger in the lookback window), each GPU is counted
 * once per host and UUID (a GPU scraped twice, or listed under two job ids, is one GPU),
 * and energy counters are read raw with their sample timestamps and differenced between
 * reads — per segment, a counter reset starting a new one — rather than through increase(),
 * which extrapolates to the window's edges.
 */
#include "control/curl_lazy.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl_prom.h"
#include "core/memory.h"

pfi_error ctl_prom_init(ctl_prom *p, const pfi_ctl_prom_config *pc, pfi_diag *d)
{
    memset(p, 0, sizeof *p);
    p->interval_s = NAN;
    const char *s = pc->feature_metrics;
    while (s != NULL && *s != '\0') {
        const char *comma = strchr(s, ',');
        size_t l = comma ? (size_t)(comma - s) : strlen(s);
        const char *eq = memchr(s, '=', l);
        if (eq == NULL || eq == s || eq + 1 == s + l || p->n_features == CTL_PROM_MAX_FEATURES ||
            (size_t)(eq - s) >= 64 || (size_t)(s + l - eq - 1) >= 128)
            return ctl_fail(d, 0, PFI_ERR_INVALID_ARGUMENT,
                            "feature map must be NAME=METRIC,... (at most %d)",
                            CTL_PROM_MAX_FEATURES);
        memcpy(p->feature_name[p->n_features], s, (size_t)(eq - s));
        memcpy(p->feature_metric[p->n_features], eq + 1, (size_t)(s + l - eq - 1));
        p->n_features++;
        s = comma ? comma + 1 : NULL;
    }
    return PFI_OK;
}

void ctl_prom_clear(ctl_prom *p)
{
    pfi_free(p->g);
    pfi_free(p->index);
    memset(p, 0, sizeof *p);
}

/* FNV-1a of host, a separator, uuid. */
static size_t gpu_hash(const char *host, const char *uuid)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *q = host; *q; q++)
        h = (h ^ (unsigned char)*q) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
    for (const char *q = uuid; *q; q++)
        h = (h ^ (unsigned char)*q) * 1099511628211ull;
    return (size_t)h;
}

/* The index slot of (host, uuid): its entry, or the empty slot it would go in. */
static size_t *index_find(const ctl_prom *p, const char *host, const char *uuid)
{
    size_t mask = p->index_cap - 1;
    for (size_t k = gpu_hash(host, uuid) & mask;; k = (k + 1) & mask) {
        size_t *e = &p->index[k];
        if (*e == 0)
            return e;
        const ctl_prom_gpu *g = &p->g[*e - 1];
        if (strcmp(g->uuid, uuid) == 0 && strcmp(g->host, host) == 0)
            return e;
    }
}

/* The index rebuilt at twice the size. Errors: PFI_ERR_NOMEM. */
static pfi_error index_grow(ctl_prom *p)
{
    size_t nc = p->index_cap ? 2 * p->index_cap : 128;
    size_t *ix = pfi_calloc(nc, sizeof *ix);
    if (ix == NULL)
        return PFI_ERR_NOMEM;
    pfi_free(p->index);
    p->index = ix;
    p->index_cap = nc;
    for (size_t i = 0; i < p->n; i++)
        *index_find(p, p->g[i].host, p->g[i].uuid) = i + 1;
    return PFI_OK;
}

const ctl_prom_gpu *ctl_prom_find(const ctl_prom *p, const char *host, const char *uuid)
{
    if (p->index_cap == 0)
        return NULL;
    size_t e = *index_find(p, host, uuid);
    return e != 0 && p->g[e - 1].fresh ? &p->g[e - 1] : NULL;
}

static ctl_prom_gpu *slot(ctl_prom *p, const char *host, const char *uuid)
{
    if (p->index_cap > 0) {
        size_t e = *index_find(p, host, uuid);
        if (e != 0)
            return &p->g[e - 1];
    }
    if (2 * (p->n + 1) > p->index_cap && index_grow(p) != PFI_OK)
        return NULL;
    if (p->n == p->cap) {
        size_t nc = p->cap ? 2 * p->cap : 64;
        ctl_prom_gpu *q = pfi_realloc(p->g, nc * sizeof *q);
        if (q == NULL)
            return NULL;
        p->g = q;
        p->cap = nc;
    }
    ctl_prom_gpu *g = &p->g[p->n++];
    memset(g, 0, sizeof *g);
    ctl_copy(g->host, sizeof g->host, host);
    ctl_copy(g->uuid, sizeof g->uuid, uuid);
    g->energy_j = g->energy_t_s = g->sample_t_s = NAN;
    g->gauge_t_s = g->time_t_s = g->scrape_t_s = NAN;
    for (size_t k = 0; k < CTL_PROM_MAX_FEATURES; k++)
        g->feature[k] = NAN;
    *index_find(p, host, uuid) = p->n;
    return g;
}

/* Run one instant query; *out owned. */
static pfi_error query(ctl_http *h, const pfi_ctl_prom_config *pc, const char *promql,
                       pfi_prom_sample **out, size_t *n, pfi_diag *d)
{
    char *enc = curl_easy_escape(NULL, promql, 0);
    if (enc == NULL)
        return PFI_ERR_NOMEM;
    ctl_http_req r;
    memset(&r, 0, sizeof r);
    r.method = "GET";
    int w = snprintf(r.url, sizeof r.url, "%s/api/v1/query?query=%s", pc->url, enc);
    curl_free(enc);
    if (w < 0 || (size_t)w >= sizeof r.url)
        return ctl_fail(d, 0, PFI_ERR_INVALID_ARGUMENT, "Prometheus query too long");
    pfi_error e = ctl_http_run(h, &r, 1, pc->timeout_s > 0 ? pc->timeout_s : 1.0);
    if (e == PFI_OK && r.status == 0)
        e = ctl_fail(d, 0, PFI_ERR_IO, "Prometheus %s: %s", pc->url, r.err);
    else if (e == PFI_OK && r.resp == NULL)
        e = ctl_fail(d, 0, PFI_ERR_IO, "Prometheus %s: HTTP %ld, empty answer", pc->url, r.status);
    if (e == PFI_OK) {
        e = pfi_prom_vector_parse(r.resp, r.resp_len, out, n, d);
        if (e == PFI_ERR_VALUE)
            e = PFI_ERR_IO;
    }
    ctl_http_req_clear(&r);
    return e;
}

/* "M and on(J) (up == 1)" */
static void joined(char *buf, size_t n, const char *fn, const char *metric,
                   const pfi_ctl_prom_config *pc)
{
    snprintf(buf, n, "%s%s%s and on(%s) (up == 1)", fn, metric, fn[0] ? ")" : "",
             pc->up_join_label);
}

/* For each series with the host and uuid labels: the latest sample per (host, uuid). */
typedef void (*take_fn)(ctl_prom_gpu *g, const pfi_prom_sample *s, void *ctx);

static pfi_error each_gpu(ctl_prom *p, const pfi_ctl_prom_config *pc, const pfi_prom_sample *s,
                          size_t n, take_fn take, void *ctx)
{
    for (size_t i = 0; i < n; i++) {
        const char *host = pfi_prom_sample_label(&s[i], pc->host_label);
        const char *uuid = pfi_prom_sample_label(&s[i], pc->uuid_label);
        if (host == NULL || uuid == NULL)
            continue;
        ctl_prom_gpu *g = slot(p, host, uuid);
        if (g == NULL)
            return PFI_ERR_NOMEM;
        take(g, &s[i], ctx);
    }
    return PFI_OK;
}

static void take_gauge(ctl_prom_gpu *g, const pfi_prom_sample *s, void *ctx)
{
    (void)ctx;
    if (isfinite(s->value) && s->value >= 0) {
        g->power_w = s->value; /* duplicates of one GPU carry the same value: keep one */
        g->sample_t_s = g->gauge_t_s;
        g->fresh = true;
    }
}

typedef struct etake {
    const pfi_prom_sample *s; /* the counters and their own sample times (one query) */
    size_t n;
    const pfi_prom_sample *ts; /* timestamp() answers (scrape times), same order not guaranteed */
    size_t nts;
    const pfi_ctl_prom_config *pc;
    double segment_start_s;
} etake;

static bool has_time_metric(const pfi_ctl_prom_config *pc)
{
    return pc->energy_time_metric != NULL && pc->energy_time_metric[0] != '\0';
}

static bool is_time_sample(const pfi_ctl_prom_config *pc, const pfi_prom_sample *s)
{
    const char *name = pfi_prom_sample_label(s, "__name__");
    return has_time_metric(pc) && name != NULL && strcmp(name, pc->energy_time_metric) == 0;
}

/* The counters' own sample times and the scrape times, kept on each GPU for this read (one
 * pass over each answer: linear in the GPUs, not quadratic). */
static void take_time(ctl_prom_gpu *g, const pfi_prom_sample *s, void *ctx)
{
    etake *et = ctx;
    if (is_time_sample(et->pc, s) && isfinite(s->value) && isnan(g->time_t_s))
        g->time_t_s = s->value;
}

static void take_scrape(ctl_prom_gpu *g, const pfi_prom_sample *s, void *ctx)
{
    (void)ctx;
    if (isfinite(s->value) && isnan(g->scrape_t_s))
        g->scrape_t_s = s->value;
}

static void take_gauge_time(ctl_prom_gpu *g, const pfi_prom_sample *s, void *ctx)
{
    (void)ctx;
    if (isfinite(s->value))
        g->gauge_t_s = s->value;
}

static void take_energy(ctl_prom_gpu *g, const pfi_prom_sample *s, void *ctx)
{
    etake *et = ctx;
    if (is_time_sample(et->pc, s) || !isfinite(s->value) || s->value < 0)
        return;
    /* The counter's time: the exporter's own time of the counter's sample, from the same
     * scrape (exported with the counter, read in the same query). Prometheus' timestamp is
     * the scrape's start, and the exporter's counter lags it by up to its sampling interval:
     * over a 1 s span that lag is a tenth or more of the power. timestamp() is the fallback
     * for an exporter that does not export the time. */
    double t = isfinite(g->time_t_s) ? g->time_t_s : g->scrape_t_s;
    if (isnan(t))
        return;
    if (isfinite(g->energy_t_s) && t == g->energy_t_s)
        return; /* a duplicate of this GPU, or no new scrape: keep what we have */
    if (isfinite(g->energy_t_s) && t > g->energy_t_s && s->value >= g->energy_j) {
        /* A segment is a stretch of constant caps: an anchor from before the last cap change
         * would average the old power in, so a new segment starts (the gauge meanwhile).
         * Prometheus stamps a sample with the scrape's start and the exporter reads the
         * counter a little later: over a short span that jitter is a large share of the
         * power, so the difference is taken over at least CTL_PROM_MIN_SPAN_S. */
        if (g->energy_t_s < et->segment_start_s) {
            g->energy_j = s->value;
            g->energy_t_s = t;
            return;
        }
        if (t - g->energy_t_s < CTL_PROM_MIN_SPAN_S)
            return;
        g->power_w = (s->value - g->energy_j) / (t - g->energy_t_s);
        g->sample_t_s = t;
        g->fresh = true;
    }
    /* else: first sample or a counter reset: a new segment starts here */
    g->energy_j = s->value;
    g->energy_t_s = t;
}

/* The scrape interval, from the spacing of the counters' distinct sample times: the
 * smallest positive spacing seen this read, smoothed over reads. */
static void learn_interval(ctl_prom *p, const double *prev_t, size_t n0)
{
    double best = INFINITY;
    for (size_t i = 0; i < n0; i++) {
        double d = p->g[i].energy_t_s - prev_t[i];
        if (isfinite(d) && d > 0.01)
            best = fmin(best, d);
    }
    if (!isfinite(best))
        return;
    p->interval_s = isnan(p->interval_s) ? best : 0.8 * p->interval_s + 0.2 * best;
}

pfi_error ctl_prom_take_energy(ctl_prom *p, const pfi_ctl_prom_config *pc, const pfi_prom_sample *s,
                               size_t n, const pfi_prom_sample *ts, size_t nts,
                               double segment_start_s)
{
    etake et = {s, n, ts, nts, pc, segment_start_s};
    size_t n0 = p->n;
    double *prev = n0 > 0 ? pfi_malloc(n0 * sizeof *prev) : NULL;
    if (n0 > 0 && prev == NULL)
        return PFI_ERR_NOMEM;
    for (size_t i = 0; i < n0; i++) {
        prev[i] = p->g[i].energy_t_s;
        p->g[i].time_t_s = p->g[i].scrape_t_s = NAN;
    }
    pfi_error e = each_gpu(p, pc, s, n, take_time, &et);
    if (e == PFI_OK)
        e = each_gpu(p, pc, ts, nts, take_scrape, &et);
    if (e == PFI_OK)
        e = each_gpu(p, pc, s, n, take_energy, &et);
    if (e == PFI_OK)
        learn_interval(p, prev, n0); /* over the GPUs known before this read */
    pfi_free(prev);
    return e;
}

typedef struct ftake {
    size_t k;
} ftake;

static void take_feature(ctl_prom_gpu *g, const pfi_prom_sample *s, void *ctx)
{
    ftake *f = ctx;
    g->feature[f->k] = isfinite(s->value) ? s->value : NAN;
}

void ctl_prom_begin(ctl_prom *p)
{
    for (size_t i = 0; i < p->n; i++) {
        p->g[i].fresh = false;
        p->g[i].power_w = NAN;
        p->g[i].sample_t_s = p->g[i].gauge_t_s = NAN;
        for (size_t k = 0; k < CTL_PROM_MAX_FEATURES; k++)
            p->g[i].feature[k] = NAN;
    }
}

pfi_error ctl_prom_read(ctl_prom *p, ctl_http *h, const pfi_ctl_prom_config *pc,
                        double segment_start_s, pfi_diag *d)
{
    ctl_prom_begin(p);
    char q[512];
    pfi_prom_sample *s = NULL, *ts = NULL;
    size_t n = 0, nts = 0;
    /* the gauge's sample times first (timestamp(): the scrape that took it), so that a
     * server that answers with frozen samples shows their age */
    joined(q, sizeof q, "timestamp(", pc->power_metric, pc);
    pfi_error e = query(h, pc, q, &s, &n, d);
    if (e == PFI_OK)
        e = each_gpu(p, pc, s, n, take_gauge_time, NULL);
    pfi_free(s);
    s = NULL;
    joined(q, sizeof q, "", pc->power_metric, pc);
    if (e == PFI_OK)
        e = query(h, pc, q, &s, &n, d);
    if (e == PFI_OK)
        e = each_gpu(p, pc, s, n, take_gauge, NULL);
    pfi_free(s);
    s = NULL;
    /* energy: the raw counter and its sample time; the difference overrides the gauge */
    if (e == PFI_OK && pc->energy_metric != NULL && pc->energy_metric[0] != '\0') {
        /* one selector for both names: `A or B` would drop every B series whose labels
         * (the name aside) match an A series, i.e. every time series, and the difference
         * would fall back to the scrape times (the counter lags them by up to the exporter's
         * sampling interval: 20 % of the power over 1 s at 200 ms) */
        if (has_time_metric(pc))
            snprintf(q, sizeof q, "{__name__=~\"%s|%s\"} and on(%s) (up == 1)", pc->energy_metric,
                     pc->energy_time_metric, pc->up_join_label);
        else
            joined(q, sizeof q, "", pc->energy_metric, pc);
        e = query(h, pc, q, &s, &n, d);
        if (e == PFI_OK) {
            joined(q, sizeof q, "timestamp(", pc->energy_metric, pc);
            e = query(h, pc, q, &ts, &nts, d);
        }
        if (e == PFI_OK)
            e = ctl_prom_take_energy(p, pc, s, n, ts, nts, segment_start_s);
        pfi_free(s);
        pfi_free(ts);
        s = ts = NULL;
    }
    for (size_t k = 0; e == PFI_OK && k < p->n_features; k++) {
        joined(q, sizeof q, "", p->feature_metric[k], pc);
        e = query(h, pc, q, &s, &n, d);
        ftake f = {k};
        if (e == PFI_OK)
            e = each_gpu(p, pc, s, n, take_feature, &f);
        pfi_free(s);
        s = NULL;
    }
    return e;
}
