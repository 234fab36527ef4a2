/*
 * Figures of the policy simulation: lines per strategy against the reduction, PLplot cairo.
 */
#include "pfi/plot_sim.h"

#include <errno.h>
#include <math.h>
#include <plplot/plplot.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static char plot_error[256];

static int on_plexit(PLCHAR_VECTOR msg)
{
    snprintf(plot_error, sizeof plot_error, "%s", msg ? msg : "PLplot error");
    return 0;
}

static void on_plabort(PLCHAR_VECTOR msg)
{
    snprintf(plot_error, sizeof plot_error, "%s", msg ? msg : "PLplot error");
}

static pfi_error fail(pfi_diag *d, const char *path, pfi_error e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static pfi_error fail(pfi_diag *d, const char *path, pfi_error e, const char *fmt, ...)
{
    if (d != NULL) {
        pfi_diag_clear(d);
        snprintf(d->file, sizeof d->file, "%s", path);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->message, sizeof d->message, fmt, ap);
        va_end(ap);
    }
    return e;
}

static const int palette[PFI_STRATEGY_COUNT][3] = {
    {0, 0, 0}, {150, 150, 150}, {230, 159, 0}, {0, 114, 178}, {0, 158, 115}, {213, 94, 0}};

/* One panel: y[s * nx + i] per strategy s (NaN: absent), x in %. */
typedef struct panel {
    char title[128];
    double y[PFI_STRATEGY_COUNT * PFI_SIM_MAX_REDUCTIONS];
} panel;

static pfi_error draw(const char *path, const double *x, size_t nx, const panel *p, size_t np,
                      const char *ylabel, pfi_diag *diag)
{
    const char *dot = strrchr(path, '.');
    const char *dev = dot == NULL ? NULL
                      : strcasecmp(dot, ".png") == 0 ? "pngcairo"
                      : strcasecmp(dot, ".svg") == 0 ? "svgcairo"
                                                     : NULL;
    if (dev == NULL)
        return fail(diag, path, PFI_ERR_INVALID_ARGUMENT,
                    "unknown figure format: the file name must end in .png or .svg");
    if (np == 0 || nx == 0)
        return fail(diag, path, PFI_ERR_INVALID_ARGUMENT, "nothing to plot");
    size_t len = strlen(path) + 16;
    char *tmp = malloc(len);
    if (tmp == NULL)
        return PFI_ERR_NOMEM;
    snprintf(tmp, len, "%s.tmp%ld", path, (long)getpid());
    FILE *probe = fopen(tmp, "wb");
    if (probe == NULL) {
        free(tmp);
        return fail(diag, path, PFI_ERR_IO, "cannot write the figure: %s", strerror(errno));
    }
    fclose(probe);
    PLINT cols = (PLINT)(np < 3 ? np : 3), rows = (PLINT)((np + 2) / 3);
    plot_error[0] = '\0';
    plsexit(on_plexit);
    plsabort(on_plabort);
    plsdev(dev);
    plsfnam(tmp);
    plspage(0, 0, 520 * cols, 420 * rows, 0, 0);
    plscolbg(255, 255, 255);
    plscmap0n(2 + PFI_STRATEGY_COUNT);
    plscol0(1, 0, 0, 0);
    for (int k = 0; k < PFI_STRATEGY_COUNT; k++)
        plscol0(2 + k, palette[k][0], palette[k][1], palette[k][2]);
    plssub(cols, rows);
    plinit();
    plschr(0, 0.9);
    for (size_t k = 0; k < np; k++) {
        double ymin = INFINITY, ymax = -INFINITY;
        for (size_t i = 0; i < PFI_STRATEGY_COUNT * nx; i++) {
            if (!isnan(p[k].y[i])) {
                ymin = fmin(ymin, p[k].y[i]);
                ymax = fmax(ymax, p[k].y[i]);
            }
        }
        if (!isfinite(ymin)) {
            ymin = 0;
            ymax = 1;
        }
        double pad = 0.08 * (ymax - ymin) + 1e-6;
        plcol0(1);
        plenv(x[0] - 2, x[nx - 1] + 2, ymin - pad, ymax + pad, 0, 0);
        pllab("power reduction r (%)", ylabel, p[k].title);
        int shown = 0;
        for (int s = 0; s < PFI_STRATEGY_COUNT; s++) {
            PLFLT xs[PFI_SIM_MAX_REDUCTIONS], ys[PFI_SIM_MAX_REDUCTIONS];
            PLINT m = 0;
            for (size_t i = 0; i < nx; i++) {
                double v = p[k].y[(size_t)s * nx + i];
                if (!isnan(v)) {
                    xs[m] = x[i];
                    ys[m] = v;
                    m++;
                }
            }
            if (m == 0)
                continue;
            plcol0(2 + s);
            plwidth(2.0);
            plline(m, xs, ys);
            plwidth(1.0);
            plstring(m, xs, ys, "#(728)");
            plmtex("rv", -1.0, 0.95 - 0.06 * shown, 1.0, pfi_strategy_name((pfi_strategy)s));
            shown++;
        }
    }
    plend();
    plsexit(NULL);
    plsabort(NULL);
    struct stat st;
    pfi_error e = PFI_OK;
    if (plot_error[0] != '\0' || stat(tmp, &st) != 0 || st.st_size == 0) {
        unlink(tmp);
        e = fail(diag, path, PFI_ERR_PLOT, "PLplot could not draw the figure%s%s",
                 plot_error[0] ? ": " : "", plot_error);
    } else if (rename(tmp, path) != 0) {
        e = fail(diag, path, PFI_ERR_IO, "cannot write the figure: %s", strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return e;
}

pfi_error pfi_plot_sim_gap(const char *path, const pfi_sim_result *r, pfi_diag *diag)
{
    double x[PFI_SIM_MAX_REDUCTIONS];
    size_t nx = r->n_reductions;
    for (size_t i = 0; i < nx; i++)
        x[i] = 100 * r->reductions[i];
    panel p[PFI_SIM_MIXES];
    size_t np = 0;
    for (int m = 0; m < PFI_SIM_MIXES; m++) {
        if (!r->mix_run[m])
            continue;
        snprintf(p[np].title, sizeof p[np].title, "%s mix: equal-to-oracle gap closed",
                 pfi_sim_mix_name((pfi_sim_mix)m));
        for (int s = 0; s < PFI_STRATEGY_COUNT; s++)
            for (size_t i = 0; i < nx; i++) {
                const pfi_sim_cell *c =
                    &r->cells[pfi_sim_cell_index(r, (pfi_sim_mix)m, i, (pfi_strategy)s)];
                p[np].y[(size_t)s * nx + i] = c->available ? 100 * c->gap_closed.mean : NAN;
            }
        np++;
    }
    return draw(path, x, nx, p, np, "gap closed (%)", diag);
}

pfi_error pfi_plot_sim_classes(const char *path, const pfi_sim_result *r, const pfi_joblib *lib,
                               pfi_diag *diag)
{
    pfi_sim_mix m = r->mix_run[PFI_MIX_PRODUCTION] ? PFI_MIX_PRODUCTION : PFI_MIX_RANDOM;
    double x[PFI_SIM_MAX_REDUCTIONS];
    size_t nx = r->n_reductions;
    for (size_t i = 0; i < nx; i++)
        x[i] = 100 * r->reductions[i];
    panel *p = calloc(lib->n_classes ? lib->n_classes : 1, sizeof *p);
    if (p == NULL)
        return PFI_ERR_NOMEM;
    size_t np = 0;
    for (size_t k = 0; k < lib->n_classes; k++) {
        snprintf(p[np].title, sizeof p[np].title, "%s (%s mix): throughput kept",
                 lib->class_name[k], pfi_sim_mix_name(m));
        bool any = false;
        for (int s = 0; s < PFI_STRATEGY_COUNT; s++)
            for (size_t i = 0; i < nx; i++) {
                const pfi_sim_cell *c = &r->cells[pfi_sim_cell_index(r, m, i, (pfi_strategy)s)];
                double v = c->available ? c->retained[k] : NAN;
                p[np].y[(size_t)s * nx + i] = v;
                any = any || !isnan(v);
            }
        if (any)
            np++;
    }
    pfi_error e = draw(path, x, nx, p, np, "sum T / sum T_ref", diag);
    free(p);
    return e;
}
