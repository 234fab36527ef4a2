/*
 * The sweep engine: caps resolved up front, journaled cap changes, a sampling loop on
 * absolute deadlines of the backend's monotonic clock (t0 + k·Δt: no accumulated drift),
 * steady-state reduction per run, runs handed to the sink one by one, originals restored on
 * every exit path.
 */
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/memory.h"
#include "hw/backend.h"
#include "pfi/steady.h"
#include "pfi/sweep.h"

#define REPORT_CHUNK 256

void pfi_sweep_stats_clear(pfi_sweep_stats *s)
{
    if (s == NULL)
        return;
    pfi_free(s->restore);
    memset(s, 0, sizeof *s);
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool stopped(const pfi_sweep_config *c)
{
    return c->stop != NULL && *c->stop;
}

static void warn(const pfi_sweep_config *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn(const pfi_sweep_config *c, const char *fmt, ...)
{
    if (c->warn == NULL)
        return;
    char buf[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    c->warn(c->warn_arg, buf);
}

/* Growable throughput report series. */
typedef struct series {
    double *t, *v;
    size_t n, cap;
} series;

static bool series_push(series *s, double t, double v)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 256;
        double *a = pfi_realloc(s->t, nc * sizeof *a);
        if (a == NULL)
            return false;
        s->t = a;
        double *b = pfi_realloc(s->v, nc * sizeof *b);
        if (b == NULL)
            return false;
        s->v = b;
        s->cap = nc;
    }
    s->t[s->n] = t;
    s->v[s->n++] = v;
    return true;
}

typedef struct sweep_state {
    pfi_gpu *g;
    const pfi_sweep_config *c;
    pfi_tput_source *tp;
    pfi_sweep_stats *stats;
    size_t run, n_runs, runs_left;
    double cap_w;
    double per_run_s;
    double cpu_sampling_s;
    size_t gpu_samples;
    pfi_cap_result *res; /* the caps of the run being measured, per GPU */
    bool started;        /* the workload was started (in-situ: once) */
    bool not_effective;  /* a cap did not take: the sweep ends NOT_EFFECTIVE */
    char ne_msg[sizeof((pfi_diag *)0)->message]; /* why, from the first such cap */
} sweep_state;

static void progress(sweep_state *s, const char *phase, double left)
{
    if (s->c->progress == NULL)
        return;
    pfi_sweep_progress p = {.run = s->run,
                            .n_runs = s->n_runs,
                            .cap_w = s->cap_w,
                            .phase = phase,
                            .phase_left_s = left,
                            .eta_s = left + s->per_run_s * (double)s->runs_left};
    s->c->progress(s->c->progress_arg, &p);
}

/* Drop the workload's reports (a warm-up or settling phase); keeps its pipe drained. */
static void drain(sweep_state *s)
{
    if (s->tp->poll == NULL)
        return;
    double t[REPORT_CHUNK], v[REPORT_CHUNK];
    size_t n;
    do {
        n = 0;
        s->tp->poll(s->tp->ctx, pfi_gpu_now_s(s->g), t, v, REPORT_CHUNK, &n);
    } while (n == REPORT_CHUNK);
}

/* Wait phase_s on the backend clock in steps of at most Δt, draining and checking stop. */
static pfi_error wait_phase(sweep_state *s, const char *phase, double phase_s)
{
    double t0 = pfi_gpu_now_s(s->g), end = t0 + phase_s;
    for (size_t k = 1;; k++) {
        double next = t0 + (double)k * s->c->interval_s;
        if (next > end)
            next = end;
        while (pfi_gpu_sleep_until_s(s->g, next) == PFI_ERR_INTERRUPTED)
            if (stopped(s->c))
                return PFI_ERR_INTERRUPTED;
        if (stopped(s->c))
            return PFI_ERR_INTERRUPTED;
        drain(s);
        progress(s, phase, end - pfi_gpu_now_s(s->g));
        if (next >= end)
            return PFI_OK;
    }
}

typedef struct window {
    size_t ticks;
    double *tick_t, *power;
    bool *valid;
    series tput;
    double clock_sum, dram_sum, tensor_sum;
    size_t clock_n, dram_n, tensor_n;
    double *e_first, *e_last; /* per GPU */
    pfi_gpu_sample *tick;     /* per GPU: this tick's samples, for the sample hook */
    bool *tick_ok;
    bool lost, exited;
    unsigned lost_gpu;
    double span_s;
} window;

static void window_free(window *w)
{
    pfi_free(w->tick_t);
    pfi_free(w->power);
    pfi_free(w->valid);
    pfi_free(w->tput.t);
    pfi_free(w->tput.v);
    pfi_free(w->e_first);
    pfi_free(w->e_last);
    pfi_free(w->tick);
    pfi_free(w->tick_ok);
}

/* The measurement window: n ticks at t0 + k·Δt, k = 1..n. */
static pfi_error measure(sweep_state *s, window *w, pfi_diag *diag)
{
    const pfi_sweep_config *c = s->c;
    size_t n = (size_t)floor(c->duration_s / c->interval_s + 1e-9);
    if (n < 1)
        n = 1;
    memset(w, 0, sizeof *w);
    w->tick_t = pfi_calloc(n, sizeof *w->tick_t);
    w->power = pfi_calloc(n, sizeof *w->power);
    w->valid = pfi_calloc(n, sizeof *w->valid);
    w->e_first = pfi_calloc(c->n_gpus, sizeof *w->e_first);
    w->e_last = pfi_calloc(c->n_gpus, sizeof *w->e_last);
    w->tick = pfi_calloc(c->n_gpus, sizeof *w->tick);
    w->tick_ok = pfi_calloc(c->n_gpus, sizeof *w->tick_ok);
    if (!w->tick_t || !w->power || !w->valid || !w->e_first || !w->e_last || !w->tick ||
        !w->tick_ok)
        return PFI_ERR_NOMEM;
    for (size_t i = 0; i < c->n_gpus; i++)
        w->e_first[i] = w->e_last[i] = NAN;
    drain(s); /* reports before the window do not count */
    double t0 = pfi_gpu_now_s(s->g);
    double tr[REPORT_CHUNK], vr[REPORT_CHUNK];
    for (size_t k = 0; k < n; k++) {
        double deadline = t0 + (double)(k + 1) * c->interval_s;
        while (pfi_gpu_sleep_until_s(s->g, deadline) == PFI_ERR_INTERRUPTED)
            if (stopped(c))
                return PFI_ERR_INTERRUPTED;
        if (stopped(c))
            return PFI_ERR_INTERRUPTED;
        double tick = pfi_gpu_now_s(s->g);
        double cpu0 = cpu_s();
        double sum = 0;
        bool all = true;
        for (size_t i = 0; i < c->n_gpus; i++) {
            pfi_gpu_sample sm;
            pfi_diag d;
            pfi_error e = pfi_gpu_read_sample(s->g, c->gpus[i], &sm, &d);
            w->tick_ok[i] = e == PFI_OK;
            if (e == PFI_OK)
                w->tick[i] = sm;
            if (e == PFI_ERR_GPU_LOST) {
                w->lost = true;
                w->lost_gpu = c->gpus[i];
                if (diag != NULL)
                    *diag = d;
                all = false;
                break;
            }
            if (e != PFI_OK || !(sm.valid & PFI_SAMPLE_POWER)) {
                all = false;
                continue;
            }
            sum += sm.power_w;
            if (sm.valid & PFI_SAMPLE_SM_CLOCK) {
                w->clock_sum += sm.sm_clock_mhz;
                w->clock_n++;
            }
            if (sm.valid & PFI_SAMPLE_DRAM_ACTIVE) {
                w->dram_sum += sm.dram_active;
                w->dram_n++;
            }
            if (sm.valid & PFI_SAMPLE_TENSOR_ACTIVE) {
                w->tensor_sum += sm.tensor_active;
                w->tensor_n++;
            }
            if (sm.valid & PFI_SAMPLE_ENERGY) {
                if (isnan(w->e_first[i]))
                    w->e_first[i] = sm.energy_j;
                w->e_last[i] = sm.energy_j;
            }
        }
        s->cpu_sampling_s += cpu_s() - cpu0;
        for (size_t i = 0; c->sample != NULL && i < c->n_gpus; i++) {
            if (!w->tick_ok[i])
                continue;
            const pfi_cap_result *r = &s->res[i];
            uint32_t mw = (r->readback & PFI_LIMIT_ENFORCED) ? r->enforced_mw : r->target_mw;
            c->sample(c->sample_arg, c->gpus[i], &w->tick[i], mw);
            w->tick_ok[i] = false;
        }
        /* lateness: from the deadline to the end of this tick's reads */
        double late = pfi_gpu_now_s(s->g) - deadline;
        if (late > s->stats->max_late_s)
            s->stats->max_late_s = late;
        s->gpu_samples += c->n_gpus;
        w->tick_t[k] = tick;
        w->power[k] = all ? sum : NAN;
        w->valid[k] = all;
        w->ticks = k + 1;
        s->stats->ticks++;
        size_t got;
        do {
            got = 0;
            if (s->tp->poll != NULL)
                s->tp->poll(s->tp->ctx, tick, tr, vr, REPORT_CHUNK, &got);
            for (size_t j = 0; j < got; j++)
                /* a report stamped when polled belongs to this window; emulated ones are
                 * stamped when made, never after now */
                if (tr[j] > t0 && !series_push(&w->tput, tr[j], vr[j]))
                    return PFI_ERR_NOMEM;
        } while (got == REPORT_CHUNK);
        progress(s, "measure", t0 + (double)n * c->interval_s - tick);
        if (w->lost)
            break;
        if (s->tp->alive != NULL && !s->tp->alive(s->tp->ctx)) {
            w->exited = true;
            break;
        }
    }
    if (w->ticks >= 2) {
        w->span_s = w->tick_t[w->ticks - 1] - w->tick_t[0];
        double ideal = (double)(w->ticks - 1) * c->interval_s;
        double drift = fabs(w->span_s - ideal) / ideal;
        if (drift > s->stats->drift_rel)
            s->stats->drift_rel = drift;
    }
    w->span_s = w->ticks > 0 ? w->tick_t[w->ticks - 1] - t0 : 0;
    return PFI_OK;
}

static void add_flag(char *flags, size_t len, const char *f)
{
    size_t used = strlen(flags);
    snprintf(flags + used, len - used, "%s%s", used ? ";" : "", f);
}

/*
 * Whether the steady-state power p (the mean of the top q of the window's job power) is above the
 * limits in force, summed over the job's GPUs, by more than PFI_SWEEP_CAP_MARGIN of them plus what
 * the samples' own noise gives a top-q mean: z·σ, z = φ(Φ⁻¹(1 − q))/q (1.755 for q = 0.1), σ the
 * samples' noise from their successive differences (median |Δ| / (0.6745·√2): a slow settling or a
 * start does not inflate it). Such a run measured the cap settling, or a cap that does not hold:
 * flagged cap_not_effective [ours]. *limit_w gets the summed limits. work[w->ticks] scratch.
 */
static bool power_above_limits(const sweep_state *s, const window *w, double p, double *work,
                               double *limit_w)
{
    const pfi_sweep_config *c = s->c;
    double limit = 0;
    for (size_t i = 0; i < c->n_gpus; i++)
        limit += ((s->res[i].readback & PFI_LIMIT_ENFORCED) ? s->res[i].enforced_mw
                                                            : s->res[i].target_mw) /
                 1000.0;
    *limit_w = limit;
    if (!(p > limit * (1 + PFI_SWEEP_CAP_MARGIN)))
        return false;
    size_t n = 0;
    for (size_t i = 1; i < w->ticks; i++)
        if (w->valid[i] && w->valid[i - 1] && isfinite(w->power[i]) && isfinite(w->power[i - 1]))
            work[n++] = fabs(w->power[i] - w->power[i - 1]);
    double sigma = n > 0 ? gsl_stats_median(work, 1, n) / (0.6744897501960817 * sqrt(2.0)) : 0;
    double z = c->q < 1 ? gsl_ran_ugaussian_pdf(gsl_cdf_ugaussian_Qinv(c->q)) / c->q : 0;
    return p > limit * (1 + PFI_SWEEP_CAP_MARGIN) + z * sigma;
}

static pfi_error reduce_and_put(sweep_state *s, const window *w, double req_w, double cap_w,
                                char *flags, size_t flen, pfi_run_sink *sink, pfi_diag *diag)
{
    const pfi_sweep_config *c = s->c;
    size_t m = w->ticks > w->tput.n ? w->ticks : w->tput.n;
    double *work = pfi_malloc((m ? m : 1) * sizeof *work);
    if (work == NULL)
        return PFI_ERR_NOMEM;
    pfi_steady ps, ts;
    pfi_error ep = pfi_steady_state(w->tick_t, w->power, w->valid, w->ticks, 0, c->q, work, &ps);
    pfi_error et = pfi_steady_state(w->tput.t, w->tput.v, NULL, w->tput.n, 0, c->q, work, &ts);
    double limit_w = NAN;
    if (ep == PFI_OK && !strstr(flags, "cap_not_effective") &&
        power_above_limits(s, w, ps.mean, work, &limit_w)) {
        add_flag(flags, flen, "cap_not_effective");
        warn(c,
             "cap %.0f W: steady-state power %.1f W is above the limits in force (%.1f W summed "
             "over the GPUs) by more than the samples' noise explains: the cap did not hold over "
             "the window%s",
             req_w, ps.mean, limit_w,
             c->mode == PFI_SWEEP_IN_SITU
                 ? (c->settle_s <= 0 ? " (a settle time of 0 s measures the cap settling)" : "")
                 : (c->warmup_s <= 0 ? " (a warm-up of 0 s measures the job starting)" : ""));
    }
    pfi_free(work);
    if (ep != PFI_OK)
        add_flag(flags, flen, "missing_power");
    if (et != PFI_OK)
        add_flag(flags, flen, "no_throughput");
    if (w->lost)
        add_flag(flags, flen, "gpu_lost");
    if (w->exited)
        add_flag(flags, flen, "workload_exited");
    bool bad = w->lost || w->exited;
    double energy = 0;
    for (size_t i = 0; i < c->n_gpus; i++)
        energy += w->e_last[i] - w->e_first[i]; /* NaN when a GPU has no counter */
    char started[32];
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    pfi_sweep_row row = {
        .group = c->group,
        .cap_w = cap_w,
        .requested_cap_w = req_w,
        .power_w = ep == PFI_OK && !bad ? ps.mean : NAN,
        .power_se_w = ep == PFI_OK && !bad ? ps.se : NAN,
        .throughput = et == PFI_OK && !bad ? ts.mean : NAN,
        .throughput_se = et == PFI_OK && !bad ? ts.se : NAN,
        .gpus = (unsigned)c->n_gpus,
        .samples = w->ticks,
        .tput_reports = w->tput.n,
        .flags = flags,
        .mode = c->mode == PFI_SWEEP_IN_SITU ? "in-situ" : "separate",
        .window_s = w->span_s,
        .sm_clock_mhz = w->clock_n ? w->clock_sum / (double)w->clock_n : NAN,
        .dram_active = w->dram_n ? w->dram_sum / (double)w->dram_n : NAN,
        .tensor_active = w->tensor_n ? w->tensor_sum / (double)w->tensor_n : NAN,
        .energy_j = energy,
        .started_utc = started,
    };
    return sink->put(sink->ctx, &row, diag);
}

/* Phase 1: every cap against every GPU's range, before anything changes: targets[k·ng + i]
 * for cap k on GPU i, clamped[k] when a GPU's target for cap k was clamped. */
static pfi_error resolve_targets(pfi_gpu *g, const pfi_sweep_config *c, uint32_t *targets,
                                 bool *clamped, pfi_diag *diag)
{
    size_t ng = c->n_gpus, nc = c->n_caps;
    pfi_error e = PFI_OK;
    for (size_t i = 0; i < ng && e == PFI_OK; i++) {
        pfi_gpu_limits l;
        e = pfi_gpu_read_limits(g, c->gpus[i], &l, diag);
        for (size_t k = 0; k < nc && e == PFI_OK; k++) {
            bool cl = false;
            e = pfi_cap_resolve_mw(&l, c->caps_w[k], c->clamp, &targets[k * ng + i], &cl, diag);
            if (e != PFI_OK && diag != NULL) {
                char tmp[sizeof diag->message];
                memcpy(tmp, diag->message, sizeof tmp);
                snprintf(diag->message, sizeof diag->message, "GPU %u: %.490s", c->gpus[i], tmp);
            }
            if (cl) {
                clamped[k] = true;
                warn(c, "GPU %u: cap %.2f W clamped to %.3f W (device range %.2f-%.2f W)",
                     c->gpus[i], c->caps_w[k], targets[k * ng + i] / 1000.0, l.min_mw / 1000.0,
                     l.max_mw / 1000.0);
            }
        }
    }
    return e;
}

/* Set one cap's targets[ng] on every GPU. A cap that did not take is flagged, not an error
 * (remembered in s for the end); *cap_label is the highest limit in force, the run's label. */
static pfi_error apply_cap(sweep_state *s, pfi_capctl *ctl, const uint32_t *targets, char *flags,
                           size_t flen, double *cap_label, pfi_diag *diag)
{
    const pfi_sweep_config *c = s->c;
    pfi_cap_result *res = s->res;
    pfi_error e = pfi_capctl_apply(ctl, targets, res, diag);
    if (e == PFI_ERR_NOT_EFFECTIVE) {
        e = PFI_OK;
        s->not_effective = true;
        memcpy(s->ne_msg, diag->message, sizeof s->ne_msg);
        add_flag(flags, flen, "cap_not_effective");
    }
    if (e != PFI_OK)
        return e;
    *cap_label = 0;
    bool below = false;
    for (size_t i = 0; i < c->n_gpus; i++) {
        double enf = (res[i].readback & PFI_LIMIT_ENFORCED) ? res[i].enforced_mw / 1000.0
                                                            : res[i].target_mw / 1000.0;
        if (enf > *cap_label)
            *cap_label = enf;
        if (res[i].message[0] != '\0')
            warn(c, "%s", res[i].message);
        if ((res[i].readback & PFI_LIMIT_ENFORCED) && res[i].enforced_mw < res[i].target_mw)
            below = true;
    }
    if (below)
        add_flag(flags, flen, "enforced_below_request");
    return PFI_OK;
}

/* One run at cap k (already applied): start the workload when this mode does, warm up or
 * settle, measure, hand the run to the sink; a lost GPU or an exited workload fails it. */
static pfi_error measure_run(sweep_state *s, size_t k, double cap_label, char *flags, size_t flen,
                             pfi_run_sink *sink, pfi_diag *diag)
{
    const pfi_sweep_config *c = s->c;
    pfi_tput_source *tp = s->tp;
    pfi_error e;
    if (c->mode == PFI_SWEEP_SEPARATE || !s->started) {
        if (tp->start != NULL && (e = tp->start(tp->ctx, diag)) != PFI_OK)
            return e;
        s->started = true;
        if ((e = wait_phase(s, "warm-up", c->warmup_s)) != PFI_OK)
            return e;
    }
    if (c->mode == PFI_SWEEP_IN_SITU && (e = wait_phase(s, "settle", c->settle_s)) != PFI_OK)
        return e;
    window w;
    e = measure(s, &w, diag);
    if (c->mode == PFI_SWEEP_SEPARATE && tp->stop != NULL)
        tp->stop(tp->ctx);
    if (e == PFI_OK) {
        pfi_diag lost_diag = {0};
        if (w.lost && diag != NULL)
            lost_diag = *diag;
        e = reduce_and_put(s, &w, c->caps_w[k], cap_label, flags, flen, sink, diag);
        if (e == PFI_OK && (w.lost || w.exited)) {
            s->stats->runs_failed++;
            if (w.lost) {
                if (diag != NULL)
                    *diag = lost_diag;
                e = PFI_ERR_GPU_LOST;
            } else {
                e = hw_fail(diag, PFI_ERR_INTERRUPTED,
                            "the workload exited during the run at %.0f W", c->caps_w[k]);
            }
        } else if (e == PFI_OK) {
            s->stats->runs_done++;
        }
    }
    window_free(&w);
    return e;
}

/* Cap k: skipped when the sink has it already, else applied and measured. */
/* The ownership lock of the sweep's GPUs (their UUIDs, else "index-N"). Errors: those of
 * pfi_gpu_lock_acquire, PFI_ERR_NOMEM. */
static pfi_error lock_gpus(pfi_gpu *g, const pfi_sweep_config *c, pfi_gpu_lock **out,
                           pfi_diag *diag)
{
    size_t ng = c->n_gpus;
    char(*name)[96] = pfi_calloc(ng ? ng : 1, sizeof *name);
    const char **ids = pfi_calloc(ng ? ng : 1, sizeof *ids);
    pfi_error e = name && ids ? PFI_OK : PFI_ERR_NOMEM;
    for (size_t k = 0; e == PFI_OK && k < ng; k++) {
        pfi_gpu_info info;
        if (pfi_gpu_get_info(g, c->gpus[k], &info, NULL) == PFI_OK && info.uuid[0] != '\0')
            snprintf(name[k], sizeof name[k], "%s", info.uuid);
        else
            snprintf(name[k], sizeof name[k], "index-%u", c->gpus[k]);
        ids[k] = name[k];
    }
    if (e == PFI_OK)
        e = pfi_gpu_lock_acquire(c->run_dir, ids, ng, c->owner ? c->owner : "pfi sweep", out, diag);
    pfi_free(name);
    pfi_free(ids);
    return e;
}

static pfi_error run_cap(sweep_state *s, pfi_capctl *ctl, size_t k, const uint32_t *targets,
                         bool clamped, pfi_run_sink *sink, pfi_diag *diag)
{
    const pfi_sweep_config *c = s->c;
    s->run = k;
    s->cap_w = c->caps_w[k];
    if (sink->done != NULL && sink->done(sink->ctx, c->group, c->caps_w[k])) {
        s->stats->runs_skipped++;
        return PFI_OK;
    }
    s->runs_left--;
    char flags[256] = "";
    if (clamped)
        add_flag(flags, sizeof flags, "clamped");
    double cap_label = 0;
    pfi_error e = apply_cap(s, ctl, targets, flags, sizeof flags, &cap_label, diag);
    if (e != PFI_OK)
        return e;
    return measure_run(s, k, cap_label, flags, sizeof flags, sink, diag);
}

pfi_error pfi_sweep_run(pfi_gpu *g, const pfi_sweep_config *c, pfi_tput_source *tp,
                        pfi_run_sink *sink, pfi_sweep_stats *stats, pfi_diag *diag)
{
    memset(stats, 0, sizeof *stats);
    pfi_diag_clear(diag);
    if (c->n_gpus == 0 || c->n_caps == 0 || !(c->interval_s > 0) ||
        !(c->duration_s >= c->interval_s) || !(c->q > 0 && c->q <= 1) || !(c->warmup_s >= 0) ||
        !(c->settle_s >= 0) || c->group == NULL)
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT,
                       "sweep: need GPUs, caps, interval > 0, duration >= interval, 0 < q <= 1");
    size_t ng = c->n_gpus, nc = c->n_caps;
    uint32_t *targets = pfi_calloc(ng * nc, sizeof *targets);
    bool *clamped = pfi_calloc(nc, sizeof *clamped);
    pfi_cap_result *res = pfi_calloc(ng, sizeof *res);
    stats->restore = pfi_calloc(ng, sizeof *stats->restore);
    if (!targets || !clamped || !res || !stats->restore) {
        pfi_free(targets);
        pfi_free(clamped);
        pfi_free(res);
        stats->restored = true; /* refused before any change */
        return PFI_ERR_NOMEM;
    }
    pfi_error e = resolve_targets(g, c, targets, clamped, diag);
    pfi_capctl *ctl = NULL;
    pfi_gpu_lock *lock = NULL;
    if (e == PFI_OK && c->run_dir != NULL)
        e = lock_gpus(g, c, &lock, diag); /* before the originals are read: one owner */
    if (e == PFI_OK)
        e = pfi_capctl_create(g, c->gpus, ng, c->journal_path, c->library, &ctl, diag);
    if (e == PFI_OK)
        pfi_capctl_set_owner(ctl, c->owner ? c->owner : "pfi sweep");
    if (e != PFI_OK) {
        pfi_gpu_lock_release(lock);
        stats->restored = true; /* refused before any change */
        pfi_free(targets);
        pfi_free(clamped);
        pfi_free(res);
        return e;
    }
    sweep_state s = {.g = g, .c = c, .tp = tp, .stats = stats, .n_runs = nc, .res = res};
    s.per_run_s = c->duration_s + (c->mode == PFI_SWEEP_SEPARATE ? c->warmup_s : c->settle_s);
    for (size_t k = 0; k < nc; k++)
        s.runs_left += !(sink->done && sink->done(sink->ctx, c->group, c->caps_w[k]));
    double t_begin = pfi_gpu_now_s(g);
    for (size_t k = 0; k < nc && e == PFI_OK; k++)
        e = run_cap(&s, ctl, k, &targets[k * ng], clamped[k], sink, diag);
    if (tp->stop != NULL && s.started)
        tp->stop(tp->ctx);
    /* restore whatever happened; keep the first error */
    pfi_diag rd;
    pfi_error re = pfi_capctl_restore(ctl, stats->restore, &rd);
    stats->restored = re == PFI_OK;
    if (re != PFI_OK && e == PFI_OK) {
        e = re;
        if (diag != NULL)
            *diag = rd;
    }
    if (e == PFI_OK && s.not_effective) {
        e = PFI_ERR_NOT_EFFECTIVE;
        if (diag != NULL)
            memcpy(diag->message, s.ne_msg, sizeof s.ne_msg);
    }
    stats->elapsed_s = pfi_gpu_now_s(g) - t_begin;
    stats->cpu_per_sample_s = s.gpu_samples ? s.cpu_sampling_s / (double)s.gpu_samples : NAN;
    pfi_capctl_destroy(ctl);
    pfi_gpu_lock_release(lock);
    pfi_free(targets);
    pfi_free(clamped);
    pfi_free(res);
    return e;
}
