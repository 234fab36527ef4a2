/*
 * The settlement of a power event from the controller's audit log (pfi/grid.h): the
 * counterfactual baselines (the pre-event window; the uncapped predictions), energy shed per
 * interval, the largest excess over the target and for how long, each job's performance,
 * tokens lost and tier compliance, and the ensemble's weighted performance.
 *
 * Which row measured what: the controller reads the cluster at the tick of row k (t_k), then
 * decides row k's target and caps, in force over interval k, [t_k, t_k+1). Row k's measured
 * power and tokens/s (the cluster's and each job's) were therefore read over interval k - 1,
 * under row k - 1's caps. Every quantity here pairs interval k (row k's target, caps, event
 * and lead flags, uncapped prediction) with the readings of row k + 1; the last row's
 * interval has no reading (missing), and row 0's reading, of the time before the log, none.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "control/ctl_internal.h"
#include "core/db_close.h"
#include "core/memory.h"
#include "pfi/grid.h"

void pfi_grid_settle_options_init(pfi_grid_settle_options *o)
{
    memset(o, 0, sizeof *o);
    o->interval_s = 300;
    o->speed = 1;
    o->pre_window_s = 1800;
    o->skip_s = 0;
    o->non_gpu_w = 0;
}

void pfi_grid_settlement_destroy(pfi_grid_settlement *s)
{
    if (s == NULL)
        return;
    pfi_free(s->jobs);
    pfi_free(s->intervals);
    pfi_free(s->series);
    pfi_free(s);
}

typedef struct prow {
    long id;
    double t, event, budget, measured, ref, tput, lead;
} prow;

/* "audit log: PATH: WHAT: SQLite's message": every error names the file. */
static pfi_error sql_fail(sqlite3 *db, pfi_diag *d, const char *path, const char *what)
{
    return ctl_fail(d, 0, PFI_ERR_IO, "audit log: %s: %s: %s", path, what,
                    db ? sqlite3_errmsg(db) : "cannot open");
}

static double col_num(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* Job k of s by name (added when new); NULL when out of memory. */
static pfi_grid_settle_job *job_of(pfi_grid_settlement *s, size_t *cap, const char *name)
{
    for (size_t k = 0; k < s->n_jobs; k++)
        if (strcmp(s->jobs[k].job, name) == 0)
            return &s->jobs[k];
    if (s->n_jobs == *cap) {
        size_t nc = *cap ? 2 * *cap : 16;
        pfi_grid_settle_job *v = pfi_realloc(s->jobs, nc * sizeof *v);
        if (v == NULL)
            return NULL;
        s->jobs = v;
        *cap = nc;
    }
    pfi_grid_settle_job *j = &s->jobs[s->n_jobs++];
    memset(j, 0, sizeof *j);
    snprintf(j->job, sizeof j->job, "%s", name);
    j->allowance = NAN;
    j->performance = j->life_performance = j->ref_tput_tok_s = NAN;
    return j;
}

/* Per-job sums kept in the job record's spare fields while reading. */
typedef struct jsum {
    double ev_tput, ev_ref, life_tput, life_ref;
    double pre_tput, pre_dt; /* Σ T dt, Σ dt over the pre-event window */
} jsum;

static pfi_error read_periods(sqlite3 *db, const char *path, prow **out, size_t *n, pfi_diag *d)
{
    sqlite3_stmt *st = NULL;
    /* a log written before the ramp's lead was told from the event has no lead column */
#define PERIODS_SQL(lead)                                                                          \
    "SELECT id, t_s, event, budget_w, measured_w, ref_w, tput_tok_s, " lead " FROM"                \
    " ctl_periods WHERE run = (SELECT MAX(run) FROM ctl_periods) ORDER BY id"
    if (sqlite3_prepare_v2(db, PERIODS_SQL("lead"), -1, &st, NULL) != SQLITE_OK &&
        sqlite3_prepare_v2(db, PERIODS_SQL("NULL"), -1, &st, NULL) != SQLITE_OK)
#undef PERIODS_SQL
        return ctl_fail(d, 0, PFI_ERR_IO, "audit log: %s: not a pfi control audit log (%s)", path,
                        sqlite3_errmsg(db));
    prow *p = NULL;
    size_t m = 0, cap = 0;
    pfi_error e = PFI_OK;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (m == cap) {
            size_t nc = cap ? 2 * cap : 256;
            prow *q = pfi_realloc(p, nc * sizeof *q);
            if (q == NULL) {
                e = PFI_ERR_NOMEM;
                break;
            }
            p = q;
            cap = nc;
        }
        prow r = {sqlite3_column_int64(st, 0),
                  col_num(st, 1),
                  col_num(st, 2),
                  col_num(st, 3),
                  col_num(st, 4),
                  col_num(st, 5),
                  col_num(st, 6),
                  col_num(st, 7)};
        if ((e = ctl_audit_period_time(d, path, (long long)r.id, r.t, NAN,
                                       m > 0 ? p[m - 1].t : NAN)) != PFI_OK)
            break;
        p[m++] = r;
    }
    if (e == PFI_OK && rc != SQLITE_DONE)
        e = sql_fail(db, d, path, "reading periods");
    sqlite3_finalize(st);
    if (e == PFI_OK && m == 0)
        e = ctl_fail(d, 0, PFI_ERR_EMPTY, "audit log: %s: holds no period", path);
    if (e != PFI_OK) {
        pfi_free(p);
        return e;
    }
    *out = p;
    *n = m;
    return PFI_OK;
}

/* The seconds interval k lasts (to the next row; the last: the one before's). */
static double period_dt(const prow *p, size_t n, size_t k)
{
    if (k + 1 < n)
        return p[k + 1].t - p[k].t;
    return n >= 2 ? p[n - 1].t - p[n - 2].t : 0;
}

static pfi_error settle(sqlite3 *db, const char *path, const prow *p, size_t n,
                        const pfi_grid_settle_options *o, pfi_grid_settlement *s, pfi_diag *d)
{
    double sp = o->speed, ng = o->non_gpu_w;
    size_t a = 0;
    while (a < n && !(p[a].event > 0))
        a++;
    if (a == n)
        return ctl_fail(d, 0, PFI_ERR_EMPTY, "audit log: %s: its latest run has no event period",
                        path);
    size_t b = a;
    while (b < n && p[b].event > 0)
        b++;
    s->event_start_s = p[a].t * sp;
    s->event_end_s = (b < n ? p[b].t : p[b - 1].t + period_dt(p, n, b - 1)) * sp;
    /* the pre-event window: the intervals before the event starting within pre_window_s,
     * less a ramp's lead (its power already falling is no baseline), each measured by the
     * next row's reading (k + 1 <= a: always there) */
    double sum = 0, w = 0;
    for (size_t k = 0; k < a; k++) {
        double dt = period_dt(p, n, k), m = p[k + 1].measured;
        if (p[k].t * sp >= s->event_start_s - o->pre_window_s && isfinite(m) && m > 0 &&
            !(p[k].lead > 0)) {
            sum += (m + ng) * dt;
            w += dt;
        }
    }
    s->pre_event_w = w > 0 ? sum / w : NAN;
    s->pre_event_s = w * sp;
    /* the event: series, intervals, excess */
    size_t ni = (size_t)ceil((s->event_end_s - s->event_start_s) / o->interval_s - 1e-9);
    if (ni == 0)
        ni = 1;
    s->intervals = pfi_calloc(ni, sizeof *s->intervals);
    s->series = pfi_calloc(b - a, sizeof *s->series);
    if (s->intervals == NULL || s->series == NULL)
        return PFI_ERR_NOMEM;
    s->n_intervals = ni;
    for (size_t i = 0; i < ni; i++) {
        pfi_grid_settle_interval *iv = &s->intervals[i];
        iv->start_s = s->event_start_s + (double)i * o->interval_s;
        iv->end_s = fmin(iv->start_s + o->interval_s, s->event_end_s);
    }
    double run = 0, unc_e = 0, unc_t = 0;
    size_t n_read = 0; /* event periods with a power reading (a GPU cluster never reads 0 W) */
    s->max_over_target_w = -INFINITY;
    for (size_t k = a; k < b; k++) {
        double dt = period_dt(p, n, k), t = p[k].t * sp;
        pfi_grid_settle_point *pt = &s->series[s->n_series++];
        pt->t_s = t;
        pt->target_w = p[k].budget + ng;
        /* a row's power is read at its tick, before its caps: the power during interval k
         * is what row k + 1 read; the last row's interval was never read (missing, not its
         * own row's reading, which is of the interval before). A missing reading (NULL; 0 W:
         * a stale one in a log written before it was NULL) is in no measured or shed sum,
         * never 0 W drawn */
        double raw = k + 1 < n ? p[k + 1].measured : NAN;
        bool have = isfinite(raw) && raw > 0;
        pt->measured_w = have ? raw + ng : NAN;
        pt->uncapped_w = p[k].ref + ng;
        n_read += have;
        s->missing_periods += !have;
        /* the period's energy split across the intervals it overlaps, by time (a period
         * longer than an interval, or straddling a boundary, counts in each) */
        double p0 = t, p1 = t + dt * sp;
        size_t i0 = p1 > p0 ? (size_t)fmax(0, floor((p0 - s->event_start_s) / o->interval_s)) : ni;
        for (size_t i = i0; i < ni; i++) {
            pfi_grid_settle_interval *iv = &s->intervals[i];
            if (iv->start_s >= p1)
                break;
            /* the last interval takes any of the period past the event's end */
            double hi = i + 1 == ni ? p1 : fmin(p1, iv->end_s);
            double ov = hi - fmax(p0, iv->start_s);
            if (!(ov > 0))
                continue;
            iv->missing_periods += !have;
            double kwh = ov / 3.6e6;
            if (isfinite(pt->measured_w)) {
                iv->measured_kwh += pt->measured_w * kwh;
                if (isfinite(s->pre_event_w))
                    iv->shed_pre_kwh += (s->pre_event_w - pt->measured_w) * kwh;
                if (isfinite(pt->uncapped_w))
                    iv->shed_uncapped_kwh += (pt->uncapped_w - pt->measured_w) * kwh;
            }
            if (isfinite(pt->target_w))
                iv->target_kwh += pt->target_w * kwh;
        }
        if (isfinite(pt->measured_w) && isfinite(pt->uncapped_w)) {
            unc_e += pt->uncapped_w * dt;
            unc_t += dt;
        }
        if (t - s->event_start_s < o->skip_s || !isfinite(pt->target_w) ||
            !isfinite(pt->measured_w)) {
            run = 0;
            continue;
        }
        double ex = pt->measured_w - pt->target_w;
        if (ex > s->max_over_target_w) {
            s->max_over_target_w = ex;
            s->max_over_target_pct = 100 * ex / pt->target_w;
        }
        if (ex > 0) {
            s->seconds_over_target += dt * sp;
            run += dt * sp;
            if (run > s->longest_over_target_s)
                s->longest_over_target_s = run;
        } else {
            run = 0;
        }
    }
    if (n_read == 0)
        return ctl_fail(d, 0, PFI_ERR_EMPTY,
                        "audit log: %s: its event (%.0f-%.0f s) has no power reading (every "
                        "measured power missing or 0 W): nothing to settle",
                        path, s->event_start_s, s->event_end_s);
    if (!isfinite(s->max_over_target_w))
        s->max_over_target_w = s->max_over_target_pct = NAN;
    s->uncapped_mean_w = unc_t > 0 ? unc_e / unc_t : NAN;
    for (size_t i = 0; i < ni; i++) {
        s->energy_shed_pre_kwh += s->intervals[i].shed_pre_kwh;
        s->energy_shed_uncapped_kwh += s->intervals[i].shed_uncapped_kwh;
    }
    if (!(unc_t > 0)) { /* no uncapped prediction beside a reading: shed undefined, never 0 */
        s->energy_shed_uncapped_kwh = NAN;
        for (size_t i = 0; i < ni; i++)
            s->intervals[i].shed_uncapped_kwh = NAN;
    }
    if (!isfinite(s->pre_event_w)) { /* no baseline: shed undefined, never 0 */
        s->energy_shed_pre_kwh = NAN;
        for (size_t i = 0; i < ni; i++)
            s->intervals[i].shed_pre_kwh = NAN;
    }
    /* jobs: the event's performance and tokens lost, the life-average for the tiers */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(
            db,
            "SELECT period, job, gpus, ref_tput, tput FROM ctl_jobs WHERE period >= ?1"
            " AND period <= ?2 ORDER BY period",
            -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, d, path, "reading jobs");
    sqlite3_bind_int64(st, 1, p[0].id);
    sqlite3_bind_int64(st, 2, p[n - 1].id);
    size_t cap = 0, r = 0;
    jsum *js = NULL;
    size_t js_cap = 0;
    pfi_error e = PFI_OK;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        long pid = sqlite3_column_int64(st, 0);
        while (r < n && p[r].id < pid)
            r++;
        if (r == n || p[r].id != pid)
            continue;
        /* the job's reading at row r measured interval r - 1; row 0's, the period before
         * the log's first (as long as the one after it), is in the life-average alone (the
         * job ran then, and the controller's tier accounting counted it), in no interval of
         * the event or its baseline (k = n: none) */
        size_t k = r > 0 ? r - 1 : n;
        const char *name = (const char *)sqlite3_column_text(st, 1);
        double gpus = col_num(st, 2), ref = col_num(st, 3) * gpus, tp = col_num(st, 4);
        pfi_grid_settle_job *j = job_of(s, &cap, name ? name : "");
        if (j == NULL) {
            e = PFI_ERR_NOMEM;
            break;
        }
        size_t ji = (size_t)(j - s->jobs);
        if (ji >= js_cap) {
            size_t nc = cap;
            jsum *q = pfi_realloc(js, nc * sizeof *q);
            if (q == NULL) {
                e = PFI_ERR_NOMEM;
                break;
            }
            memset(q + js_cap, 0, (nc - js_cap) * sizeof *q);
            js = q;
            js_cap = nc;
        }
        if (isfinite(gpus) && gpus > 0)
            j->gpus = (size_t)gpus;
        double dt = period_dt(p, n, r > 0 ? k : 0);
        if (k < a && p[k].t * sp >= s->event_start_s - o->pre_window_s && !(p[k].lead > 0) &&
            isfinite(tp) && tp > 0) {
            js[ji].pre_tput += tp * dt;
            js[ji].pre_dt += dt;
        }
        if (!(ref > 0) || !isfinite(tp))
            continue;
        double got = tp < ref ? tp : ref;
        js[ji].life_tput += got * dt;
        js[ji].life_ref += ref * dt;
        if (k >= a && k < b) {
            /* the event against the job's measured tokens/s in the pre-event window (the
             * periods of the power baseline), every strategy's run against what its jobs
             * did uncapped; the controller's reference (the median of its last few uncapped
             * readings, 0.3 % apart from run to run at a 0.5 % reading noise) when the
             * window has no reading of the job */
            const pfi_grid_settle_ref *given = NULL;
            for (size_t q = 0; q < o->n_refs && given == NULL; q++)
                if (strcmp(o->refs[q].job, j->job) == 0)
                    given = &o->refs[q];
            if (given != NULL) {
                ref = given->tput_tok_s;
                j->ref_given = true;
            } else if (js[ji].pre_dt > 0) {
                ref = js[ji].pre_tput / js[ji].pre_dt;
                j->ref_pre_event = true;
            }
            j->ref_tput_tok_s = ref;
            got = tp < ref ? tp : ref;
            js[ji].ev_tput += tp * dt;
            js[ji].ev_ref += ref * dt;
            j->tokens_lost += (ref - got) * dt * sp;
        }
    }
    if (e == PFI_OK && rc != SQLITE_DONE)
        e = sql_fail(db, d, path, "reading jobs");
    sqlite3_finalize(st);
    double wsum = 0, wg = 0, msum = 0;
    size_t mn = 0;
    for (size_t i = 0; e == PFI_OK && i < s->n_jobs; i++) {
        pfi_grid_settle_job *j = &s->jobs[i];
        j->performance = js[i].ev_ref > 0 ? js[i].ev_tput / js[i].ev_ref : NAN;
        j->life_performance = js[i].life_ref > 0 ? js[i].life_tput / js[i].life_ref : NAN;
        if (!(js[i].ev_ref > 0))  /* no reference or no tokens/s in the event: none lost is */
            j->tokens_lost = NAN; /* not known, never 0 */
        for (size_t t = 0; t < o->n_tiers; t++)
            if (strcmp(o->tiers[t].job, j->job) == 0) {
                j->tier = o->tiers[t].tier;
                j->allowance = o->tiers[t].allowance;
            }
        j->tier_compliant = !(j->life_performance < 1 - j->allowance - 1e-9);
        if (!isnan(j->allowance) && !j->tier_compliant)
            s->tier_violations++;
        if (isfinite(j->performance)) {
            wsum += (double)j->gpus * j->performance;
            wg += (double)j->gpus;
            msum += j->performance;
            mn++;
        }
    }
    pfi_free(js);
    s->weighted_performance = wg > 0 ? wsum / wg : NAN;
    s->mean_performance = mn ? msum / (double)mn : NAN;
    return e;
}

pfi_error pfi_grid_settle(const char *audit_path, const pfi_grid_settle_options *o,
                          pfi_grid_settlement **out, pfi_diag *diag)
{
    *out = NULL;
    bool refs_ok = o->n_refs == 0 || o->refs != NULL;
    for (size_t q = 0; refs_ok && q < o->n_refs; q++)
        refs_ok = o->refs[q].tput_tok_s > 0 && isfinite(o->refs[q].tput_tok_s);
    if (!(o->interval_s > 0) || !(o->speed > 0) || !(o->pre_window_s >= 0) || !(o->skip_s >= 0) ||
        !(o->non_gpu_w >= 0) || !isfinite(o->speed) || !isfinite(o->non_gpu_w) || !refs_ok)
        return ctl_fail(diag, 0, PFI_ERR_INVALID_ARGUMENT,
                        "settlement: interval and speed must be > 0, the pre-event window, "
                        "the skip and the non-GPU power >= 0, a given reference > 0");
    pfi_error ne = ctl_audit_not_a_file(audit_path, true, diag);
    if (ne != PFI_OK)
        return ne;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(audit_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        pfi_error e = sql_fail(db, diag, audit_path, "cannot open");
        db_close(db);
        return e;
    }
    sqlite3_busy_timeout(db, 2000);
    prow *p = NULL;
    size_t n = 0;
    pfi_grid_settlement *s = pfi_calloc(1, sizeof *s);
    pfi_error e = s == NULL ? PFI_ERR_NOMEM : read_periods(db, audit_path, &p, &n, diag);
    if (e == PFI_OK) {
        s->non_gpu_w = o->non_gpu_w;
        e = settle(db, audit_path, p, n, o, s, diag);
    }
    pfi_free(p);
    db_close(db);
    if (e != PFI_OK) {
        pfi_grid_settlement_destroy(s);
        return e;
    }
    *out = s;
    return PFI_OK;
}
