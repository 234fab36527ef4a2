/*
 * Per-job curve estimation for the controller (pfi/control.h): a measured sweep from the
 * run store, else a `pfi fit` model applied to live features, else the class prior — the
 * latter two turned into a concave cap → power, throughput curve by inverting the DESIGN §7
 * model (pfi_model_share_for_pfi) through the job's reference point.
 */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_interp.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "control/ctl_curves.h"
#include "core/memory.h"
#include "pfi/model.h"

/* The platform grid the PFI is defined on (DESIGN §2: comparable only on the same grid). */
static const double pfi_grid[] = {200, 300, 400, 500, 600, 700};

pfi_error ctl_curve_from_pfi(double pfi, double ref_pg_w, double lo_w, double hi_w, size_t gpus,
                             double ref_tput, ctl_share_memo *memo, ctl_curve *c)
{
    pfi_model_job j;
    double ref_w = ref_pg_w > 0 ? ref_pg_w : hi_w;
    pfi_model_job_init(&j, 0.8, ref_w);
    double alpha;
    bool reached;
    pfi_error e = PFI_OK;
    /* the share depends on pfi and ref_w alone (the grid and the tolerance are fixed) */
    if (memo != NULL && memo->set && memo->pfi == pfi && memo->ref_w == ref_w) {
        alpha = memo->alpha;
    } else {
        e = pfi_model_share_for_pfi(&j, pfi_grid, sizeof pfi_grid / sizeof pfi_grid[0], 0.02, pfi,
                                    &alpha, &reached);
        if (e != PFI_OK)
            return e;
        if (memo != NULL)
            *memo = (ctl_share_memo){.set = true, .pfi = pfi, .ref_w = ref_w, .alpha = alpha};
    }
    pfi_model_set_share(&j, alpha);
    c->alpha = alpha;
    size_t n = 0;
    double step = (hi_w - lo_w) / (CTL_CURVE_PFI_N - 1);
    if (!(step > 0)) {
        lo_w = hi_w - 1;
        step = 1;
    }
    pfi_model_point top;
    if ((e = pfi_model_eval(&j, hi_w, &top)) != PFI_OK)
        return e;
    for (size_t k = 0; k < CTL_CURVE_PFI_N; k++) {
        double cap = k + 1 == CTL_CURVE_PFI_N ? hi_w : lo_w + step * (double)k;
        pfi_model_point p;
        if ((e = pfi_model_eval(&j, cap, &p)) != PFI_OK)
            return e;
        c->cap_w[n] = cap;
        c->power_w[n] = p.power_w * (double)gpus;
        c->tput[n] = ref_tput * p.throughput / top.throughput;
        if (n > 0 && c->power_w[n] < c->power_w[n - 1])
            c->power_w[n] = c->power_w[n - 1];
        if (n > 0 && c->tput[n] < c->tput[n - 1])
            c->tput[n] = c->tput[n - 1];
        n++;
    }
    c->n = n;
    return PFI_OK;
}

/* The measured points joined smoothly: a GPU's throughput and power move smoothly with the
 * cap, and straight segments between a sweep's few caps (50 W apart) give an allocator the
 * same marginal value across each segment, so it puts whole jobs at the segments' ends. The
 * curve is resampled on four points a segment (at most CTL_CURVE_MAX; the inner ones on
 * whole watts) through Steffen's monotone interpolation (GSL; it passes through every point,
 * never overshoots them). false when out of memory. */
static bool smooth(ctl_curve *c)
{
    size_t m = c->n, n = 4 * (m - 1) + 1;
    if (n > CTL_CURVE_MAX)
        n = CTL_CURVE_MAX;
    if (n <= m)
        return true;
    gsl_error_handler_t *old = gsl_set_error_handler_off(); /* errors are returned, not fatal */
    gsl_interp *ip = gsl_interp_alloc(gsl_interp_steffen, m);
    gsl_interp *it = gsl_interp_alloc(gsl_interp_steffen, m);
    gsl_interp_accel *acc = gsl_interp_accel_alloc();
    bool ok = ip != NULL && it != NULL && acc != NULL &&
              gsl_interp_init(ip, c->cap_w, c->power_w, m) == GSL_SUCCESS &&
              gsl_interp_init(it, c->cap_w, c->tput, m) == GSL_SUCCESS;
    if (ok) {
        double cap[CTL_CURVE_MAX], pw[CTL_CURVE_MAX], tp[CTL_CURVE_MAX];
        double lo = c->cap_w[0], hi = c->cap_w[m - 1];
        size_t q = 0;
        for (size_t k = 0; k < n; k++) {
            /* the inner points on whole watts: the controller sets whole-watt caps (it
             * floors the allocation's), and a job placed on a point between two watts lost
             * the fraction on each of its GPUs (0.76 W a GPU on the 10 W sweep's grid,
             * 4.76 W apart: 0.2 % of the budget left unspent) */
            double x = k + 1 == n ? hi
                       : k == 0   ? lo
                                  : round(lo + (hi - lo) * (double)k / (double)(n - 1));
            if (q > 0 && !(x > cap[q - 1]))
                continue;
            if (k + 1 < n && !(x < hi))
                continue;
            cap[q] = x;
            pw[q] = gsl_interp_eval(ip, c->cap_w, c->power_w, x, acc);
            tp[q] = gsl_interp_eval(it, c->cap_w, c->tput, x, acc);
            if (q > 0 && pw[q] < pw[q - 1])
                pw[q] = pw[q - 1];
            if (q > 0 && tp[q] < tp[q - 1])
                tp[q] = tp[q - 1];
            q++;
        }
        memcpy(c->cap_w, cap, q * sizeof *cap);
        memcpy(c->power_w, pw, q * sizeof *pw);
        memcpy(c->tput, tp, q * sizeof *tp);
        c->n = q;
    }
    gsl_interp_free(ip);
    gsl_interp_free(it);
    gsl_interp_accel_free(acc);
    gsl_set_error_handler(old);
    return ok;
}

bool ctl_curve_from_store(sqlite3 *db, const char *group, double ref_power_w, double ref_tput,
                          double lo_w, double hi_w, ctl_curve *c)
{
    if (db == NULL)
        return false;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT r.cap_w, r.power_w, r.throughput FROM runs r JOIN groups g ON"
                           " g.id = r.group_id WHERE g.name = ? AND r.power_w > 0 AND"
                           " r.throughput > 0 AND (r.flags & 1) = 0 ORDER BY r.cap_w",
                           -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(st, 1, group, -1, SQLITE_TRANSIENT);
    /* every run: the first CTL_CURVE_MAX of a longer sweep would be its lowest caps, and the
     * curve normalised to the wrong reference */
    double *cap = NULL, *pw = NULL, *tp = NULL;
    size_t n = 0, na = 0;
    bool ok = true;
    while (ok && sqlite3_step(st) == SQLITE_ROW) {
        if (n == na) {
            size_t nn = na ? 2 * na : 32;
            double *v = pfi_realloc(cap, 3 * nn * sizeof *v);
            if (v == NULL) {
                ok = false;
                break;
            }
            if (na > 0) { /* the three columns moved apart */
                memmove(v + 2 * nn, v + 2 * na, na * sizeof *v);
                memmove(v + nn, v + na, na * sizeof *v);
            }
            cap = v;
            pw = v + nn;
            tp = v + 2 * nn;
            na = nn;
        }
        cap[n] = sqlite3_column_double(st, 0);
        pw[n] = sqlite3_column_double(st, 1);
        tp[n] = sqlite3_column_double(st, 2);
        n++;
    }
    sqlite3_finalize(st);
    if (!ok || n < 2) {
        pfi_free(cap);
        return false;
    }
    /* normalise to the sweep's reference (highest cap), scale to the live job's reference,
     * keep the caps inside [lo, hi] (the end points interpolated) */
    double p0 = pw[n - 1], t0 = tp[n - 1];
    size_t m = 0;
    double lo = lo_w > cap[0] ? lo_w : cap[0];
    double hi = hi_w < cap[n - 1] ? hi_w : cap[n - 1];
    if (!(hi > lo)) {
        pfi_free(cap);
        return false;
    }
    bool even = n + 2 > CTL_CURVE_MAX;
    size_t nx = even ? CTL_CURVE_MAX : n + 2;
    for (size_t k = 0; k < nx && m < CTL_CURVE_MAX; k++) {
        /* a long sweep on CTL_CURVE_MAX even points, the inner ones on whole watts (as
         * smooth's) */
        double x = even         ? (k + 1 == nx ? hi
                                   : k == 0    ? lo
                                               : round(lo + (hi - lo) * (double)k / (double)(nx - 1)))
                   : k == 0     ? lo
                   : k == n + 1 ? hi
                                : cap[k - 1];
        if (x < lo || x > hi || (m > 0 && x <= c->cap_w[m - 1]))
            continue;
        c->cap_w[m] = x;
        c->power_w[m] = ref_power_w * pfi_interp_lin(cap, pw, n, x) / p0;
        c->tput[m] = ref_tput * pfi_interp_lin(cap, tp, n, x) / t0;
        if (m > 0 && c->power_w[m] < c->power_w[m - 1])
            c->power_w[m] = c->power_w[m - 1];
        if (m > 0 && c->tput[m] < c->tput[m - 1])
            c->tput[m] = c->tput[m - 1];
        m++;
    }
    pfi_free(cap);
    c->n = m;
    c->alpha = NAN;
    if (m >= 3 && !smooth(c))
        return false;
    return m >= 2;
}

double ctl_curve_power(const ctl_curve *c, double cap_w)
{
    return pfi_interp_lin(c->cap_w, c->power_w, c->n, cap_w);
}

double ctl_curve_tput(const ctl_curve *c, double cap_w)
{
    return pfi_interp_lin(c->cap_w, c->tput, c->n, cap_w);
}
