/*
 * Figures of the statistics: PFI by job class, PFI against a feature with its OLS fit.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "pfi/plot.h"
#include "pfi/stats.h"
#include "plot/plot_common.h"

#define MAX_CLASSES 64

/* A deterministic jitter in [−0.5, 0.5): the fractional part of i·φ spreads any run of
 * points evenly, and the figure is the same on every run. */
static double jitter(size_t i)
{
    double v = (double)(i + 1) * 0.6180339887498949;
    return v - floor(v) - 0.5;
}

static int series_colour(size_t c)
{
    return PLOT_SERIES + (int)(c % PLOT_N_SERIES);
}

/* Padded limits of v[n] (finite values only); a single value gets a unit-wide window. */
static void padded(const double *v, size_t n, double pad, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i])) {
            *lo = fmin(*lo, v[i]);
            *hi = fmax(*hi, v[i]);
        }
    double d = *hi - *lo;
    if (!(d > 0))
        d = fabs(*lo) > 0 ? fabs(*lo) : 1;
    *lo -= pad * d;
    *hi += pad * d;
}

pfi_error pfi_plot_pfi_by_class(const char *path, const double *pfi, const size_t *cls, size_t n,
                                const char *const *class_names, size_t k, pfi_diag *diag)
{
    if (path == NULL || (n > 0 && (pfi == NULL || cls == NULL)) || class_names == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    if (k == 0 || k > MAX_CLASSES)
        return plot_fail(diag, path, PFI_ERR_INVALID_ARGUMENT, "expected 1 to %d classes",
                         MAX_CLASSES);
    size_t defined = 0;
    for (size_t i = 0; i < n; i++) {
        if (cls[i] >= k)
            return plot_fail(diag, path, PFI_ERR_INVALID_ARGUMENT, "class label out of range");
        defined += !isnan(pfi[i]);
    }
    if (defined == 0)
        return plot_fail(diag, path, PFI_ERR_INVALID_ARGUMENT, "no defined PFI to plot");
    double *v = pfi_malloc(n * sizeof *v), *work = pfi_malloc(n * sizeof *work);
    PLFLT *px = pfi_malloc(n * sizeof *px), *py = pfi_malloc(n * sizeof *py);
    pfi_atomic_file out_file;
    pfi_error e = v && work && px && py ? PFI_OK : PFI_ERR_NOMEM;
    if (e == PFI_OK)
        e = plot_begin(path, 800, 600, 1, 1, &out_file, diag);
    if (e != PFI_OK)
        goto out;
    double ylo, yhi;
    padded(pfi, n, 0.08, &ylo, &yhi);
    ylo = fmin(ylo, 0.95); /* keep the PFI = 1 line in view */
    double xlo = 0.4, xhi = (double)k + 0.6;
    plschr(0, 1.1);
    pladv(0);
    plvsta();
    plwind(xlo, xhi, ylo, yhi);
    plcol0(PLOT_BLACK);
    plbox("bc", 0, 0, "bcnstv", 0, 0);
    pllab("", "PFI (ratio)", "PFI by job class");
    plcol0(PLOT_GREY);
    pllsty(2);
    PLFLT lx[2] = {xlo, xhi}, ly[2] = {1, 1};
    plline(2, lx, ly);
    pllsty(1);
    for (size_t c = 0; c < k; c++) {
        size_t m = 0, j = 0;
        for (size_t i = 0; i < n; i++)
            if (cls[i] == c && !isnan(pfi[i])) {
                v[m] = pfi[i];
                px[m] = (double)(c + 1) + 0.5 * jitter(j++);
                py[m++] = pfi[i];
            }
        char label[96];
        snprintf(label, sizeof label, "%.60s (n = %zu)", class_names[c] ? class_names[c] : "?", m);
        plcol0(PLOT_BLACK);
        plmtex("b", 1.5, ((double)(c + 1) - xlo) / (xhi - xlo), 0.5, label);
        if (m == 0)
            continue;
        plcol0(series_colour(c));
        plstring((PLINT)m, px, py, "#(728)"); /* filled circle */
        double med = pfi_stats_median(v, m, work);
        PLFLT bx[2] = {(double)(c + 1) - 0.35, (double)(c + 1) + 0.35}, by[2] = {med, med};
        plcol0(PLOT_BLACK);
        plwidth(3.0);
        plline(2, bx, by);
        plwidth(1.0);
        char ml[32];
        snprintf(ml, sizeof ml, "%.2f", med);
        plptex((double)(c + 1) + 0.37, med, 1, 0, 0, ml);
    }
    plcol0(PLOT_GREY);
    plmtex("t", -1.5, 0.02, 0, "bars: class median; dashed: PFI = 1");
    e = plot_end(&out_file, diag);
out:
    pfi_free(v);
    pfi_free(work);
    pfi_free(px);
    pfi_free(py);
    return e;
}

/* The fit line and prediction band sampled at n_grid points of [xlo, xhi]. */
enum { N_GRID = 101 };

pfi_error pfi_plot_pfi_feature(const char *path, const double *x, const double *y,
                               const size_t *cls, size_t n, const char *const *class_names,
                               size_t k, const char *x_label, double level, pfi_diag *diag)
{
    if (path == NULL || (n > 0 && (x == NULL || y == NULL)) || (cls != NULL && class_names == NULL))
        return PFI_ERR_INVALID_ARGUMENT;
    if (!(level > 0 && level < 1))
        return plot_fail(diag, path, PFI_ERR_INVALID_ARGUMENT, "level must lie in (0, 1)");
    if (cls != NULL && k > MAX_CLASSES)
        return plot_fail(diag, path, PFI_ERR_INVALID_ARGUMENT, "at most %d classes", MAX_CLASSES);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (cls != NULL && cls[i] >= k)
            return plot_fail(diag, path, PFI_ERR_INVALID_ARGUMENT, "class label out of range");
        m += !isnan(x[i]) && !isnan(y[i]);
    }
    if (m == 0)
        return plot_fail(diag, path, PFI_ERR_INVALID_ARGUMENT, "no complete (feature, PFI) pair");
    double *xs = pfi_malloc(m * sizeof *xs), *ys = pfi_malloc(m * sizeof *ys);
    PLFLT *px = pfi_malloc(n * sizeof *px), *py = pfi_malloc(n * sizeof *py);
    PLFLT gx[N_GRID], gy[N_GRID], glo[N_GRID], ghi[N_GRID];
    pfi_ols fit = {0};
    pfi_atomic_file out_file;
    pfi_error e = xs && ys && px && py ? PFI_OK : PFI_ERR_NOMEM;
    if (e != PFI_OK)
        goto out;
    m = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(x[i]) && !isnan(y[i])) {
            xs[m] = x[i];
            ys[m++] = y[i];
        }
    if ((e = pfi_stats_ols(xs, ys, m, 1, &fit)) != PFI_OK)
        goto out;
    double xlo, xhi, ylo, yhi, dlo, dhi;
    padded(xs, m, 0.06, &xlo, &xhi);
    padded(ys, m, 0.08, &ylo, &yhi);
    padded(xs, m, 0, &dlo, &dhi);
    bool band = false;
    if (fit.defined) {
        for (int g = 0; g < N_GRID; g++) {
            gx[g] = dlo + (dhi - dlo) * g / (N_GRID - 1);
            double lo = NAN, hi = NAN;
            pfi_stats_ols_predict(&fit, &gx[g], level, &gy[g], &lo, &hi);
            glo[g] = lo;
            ghi[g] = hi;
            band = !isnan(lo);
            ylo = fmin(ylo, isnan(lo) ? gy[g] : lo);
            yhi = fmax(yhi, isnan(hi) ? gy[g] : hi);
        }
    }
    if ((e = plot_begin(path, 800, 600, 1, 1, &out_file, diag)) != PFI_OK)
        goto out;
    plschr(0, 1.1);
    plcol0(PLOT_BLACK);
    plenv(xlo, xhi, ylo, yhi, 0, 0);
    char title[160];
    if (fit.defined)
        snprintf(title, sizeof title, "PFI = %.3g %+.3g x   (OLS, R#u2#d = %.3f, n = %zu)",
                 fit.coef[0], fit.coef[1], fit.r2, m);
    else
        snprintf(title, sizeof title, "PFI vs feature (n = %zu): fit undefined", m);
    pllab(x_label ? x_label : "feature", "PFI (ratio)", title);
    if (fit.defined) {
        if (band) {
            PLFLT poly_x[2 * N_GRID], poly_y[2 * N_GRID];
            for (int g = 0; g < N_GRID; g++) {
                poly_x[g] = gx[g];
                poly_y[g] = ghi[g];
                poly_x[2 * N_GRID - 1 - g] = gx[g];
                poly_y[2 * N_GRID - 1 - g] = glo[g];
            }
            plcol0(PLOT_LIGHT);
            plfill(2 * N_GRID, poly_x, poly_y);
        }
        plcol0(PLOT_BLACK);
        plwidth(2.0);
        plline(N_GRID, gx, gy);
        plwidth(1.0);
        plbox("bc", 0, 0, "bc", 0, 0); /* the band must not hide the frame */
    }
    size_t groups = cls != NULL ? k : 1;
    for (size_t c = 0; c < groups; c++) {
        size_t q = 0;
        for (size_t i = 0; i < n; i++)
            if (!isnan(x[i]) && !isnan(y[i]) && (cls == NULL || cls[i] == c)) {
                px[q] = x[i];
                py[q++] = y[i];
            }
        plcol0(series_colour(c));
        if (q > 0)
            plstring((PLINT)q, px, py, "#(728)");
        if (cls != NULL)
            plmtex("lv", -1.0, 0.95 - 0.06 * (double)c, 0.0, class_names[c] ? class_names[c] : "?");
    }
    char note[96];
    if (band)
        snprintf(note, sizeof note, "line: OLS fit; shaded: %.0f%% prediction band", 100 * level);
    else
        snprintf(note, sizeof note, "%s", fit.defined ? "line: OLS fit" : "");
    plcol0(PLOT_GREY);
    plmtex("b", -1.5, 0.98, 1.0, note);
    e = plot_end(&out_file, diag);
out:
    pfi_ols_clear(&fit);
    pfi_free(xs);
    pfi_free(ys);
    pfi_free(px);
    pfi_free(py);
    return e;
}
