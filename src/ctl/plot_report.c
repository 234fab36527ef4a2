/*
 * pfi report's figure: a grid power event from the controller's audit log (pfi/control.h),
 * following the figure protocol of src/lib/plot_common.h (temporary file, then rename).
 */
#include <math.h>
#include <stdlib.h>

#include "../lib/plot_common.h"
#include "pfi/control.h"

static void range(const pfi_audit_period *const *p, const size_t *n, size_t nr, int which,
                  double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t k = 0; k < nr; k++)
        for (size_t i = 0; i < n[k]; i++) {
            const pfi_audit_period *q = &p[k][i];
            double v[3] = {q->budget_w, q->measured_w + (isfinite(q->reserved_w) ? q->reserved_w : 0),
                           q->tput_tok_s};
            for (int m = which == 0 ? 0 : 2; m < (which == 0 ? 2 : 3); m++)
                if (isfinite(v[m])) {
                    *lo = fmin(*lo, v[m]);
                    *hi = fmax(*hi, v[m]);
                }
        }
    if (!isfinite(*lo)) {
        *lo = 0;
        *hi = 1;
    }
    double pad = 0.08 * (*hi - *lo) + 1e-6;
    *lo = fmax(0, *lo - pad);
    *hi += pad;
}

pfi_error pfi_audit_plot(const pfi_audit_period *const *p, const size_t *n, size_t nr,
                         const char *title, const char *path, pfi_diag *diag)
{
    if (nr == 0 || nr > PLOT_N_SERIES)
        return plot_fail(diag, path, PFI_ERR_INVALID_ARGUMENT, "1 to %d runs can be plotted",
                         PLOT_N_SERIES);
    size_t maxn = 0;
    double tmax = 1;
    for (size_t k = 0; k < nr; k++) {
        if (n[k] == 0)
            return plot_fail(diag, path, PFI_ERR_INVALID_ARGUMENT, "run %zu has no period", k);
        maxn = n[k] > maxn ? n[k] : maxn;
        tmax = fmax(tmax, p[k][n[k] - 1].t_s - p[k][0].t_s);
    }
    PLFLT *x = malloc(maxn * sizeof *x), *y = malloc(maxn * sizeof *y);
    if (x == NULL || y == NULL) {
        free(x);
        free(y);
        return PFI_ERR_NOMEM;
    }
    pfi_atomic_file out_file;
    pfi_error e = plot_begin(path, 900, 700, 1, 2, &out_file, diag);
    if (e != PFI_OK) {
        free(x);
        free(y);
        return e;
    }
    for (int panel = 0; panel < 2; panel++) {
        double lo, hi;
        range(p, n, nr, panel, &lo, &hi);
        pladv(0);
        plcol0(PLOT_BLACK);
        plvsta();
        plwind(0, tmax, lo, hi);
        plbox("bcnst", 0, 0, "bcnstv", 0, 0);
        pllab("time since the controller started (s)",
              panel == 0 ? "cluster GPU power (W)" : "tokens/s",
              panel == 0 ? (title ? title : "grid power event") : "throughput");
        for (size_t k = 0; k < nr; k++) {
            PLINT m = 0;
            /* budget (dashed, only in the top panel) */
            if (panel == 0) {
                for (size_t i = 0; i < n[k]; i++) {
                    if (!isfinite(p[k][i].budget_w))
                        continue;
                    x[m] = p[k][i].t_s - p[k][0].t_s;
                    y[m] = p[k][i].budget_w;
                    m++;
                }
                if (m > 0) {
                    plcol0(PLOT_GREY);
                    pllsty(2);
                    plline(m, x, y);
                    pllsty(1);
                }
            }
            m = 0;
            for (size_t i = 0; i < n[k]; i++) {
                const pfi_audit_period *q = &p[k][i];
                double v = panel == 0 ? q->measured_w + (isfinite(q->reserved_w) ? q->reserved_w : 0)
                                      : q->tput_tok_s;
                if (!isfinite(v))
                    continue;
                x[m] = q->t_s - p[k][0].t_s;
                y[m] = v;
                m++;
            }
            if (m == 0)
                continue;
            plcol0(PLOT_SERIES + (PLINT)k);
            plwidth(2.0);
            plline(m, x, y);
            plwidth(1.0);
            plmtex("rv", -1.0, 0.95 - 0.07 * (double)k, 1.0,
                   p[k][0].strategy[0] ? p[k][0].strategy : "run");
        }
        if (panel == 0) {
            plcol0(PLOT_GREY);
            plmtex("rv", -1.0, 0.95 - 0.07 * (double)nr, 1.0, "budget (dashed)");
        }
    }
    free(x);
    free(y);
    return plot_end(&out_file, diag);
}
