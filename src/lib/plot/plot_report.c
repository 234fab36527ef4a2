/*
 * pfi report's figure: a grid power event from the controller's audit log (pfi/control.h),
 * following the figure protocol of src/lib/plot/plot_common.h (temporary file, then rename).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "plot/plot_common.h"
#include "pfi/control.h"

static void range(const pfi_audit_period *const *p, const size_t *n, size_t nr, int which,
                  double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t k = 0; k < nr; k++)
        for (size_t i = 0; i < n[k]; i++) {
            const pfi_audit_period *q = &p[k][i];
            double v[3] = {q->budget_w,
                           q->measured_w + (isfinite(q->reserved_w) ? q->reserved_w : 0),
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

/* Legend texts: the strategy of each run, numbered when two runs share one. */
static void run_names(const pfi_audit_period *const *p, size_t nr, char names[][48])
{
    for (size_t k = 0; k < nr; k++) {
        const char *s = p[k][0].strategy[0] ? p[k][0].strategy : "run";
        bool shared = false;
        for (size_t j = 0; j < nr; j++)
            shared = shared ||
                     (j != k && strcmp(s, p[j][0].strategy[0] ? p[j][0].strategy : "run") == 0);
        if (shared)
            snprintf(names[k], 48, "%.31s (%u)", s, (unsigned)(k + 1));
        else
            snprintf(names[k], 48, "%.31s", s);
    }
}

/*
 * The end of period i of a run, s since the run's start: the next period's start, and for
 * the last one its start plus the spacing before it (a lone period: 0.5 s). A budget holds
 * for its whole period, so its line is drawn to here: an event from 2 s to 8 s ends at 8 s.
 */
static double period_end(const pfi_audit_period *p, size_t n, size_t i)
{
    if (i + 1 < n)
        return p[i + 1].t_s - p[0].t_s;
    double step = n >= 2 ? p[n - 1].t_s - p[n - 2].t_s : 0.5;
    return p[i].t_s - p[0].t_s + (isfinite(step) && step > 0 ? step : 0.5);
}

/* PLplot line styles of the budget lines: one dash pattern per run (style 1 is solid). */
static PLINT budget_style(size_t k)
{
    return (PLINT)(2 + k % 7);
}

/*
 * Two panels, one above the other: cluster power (measured plus the reserve for silent
 * agents, solid) with each run's budget (dashed, the run's colour, a dash pattern of its
 * own: several runs' budgets are often the same line), then tokens/s. The legend sits in a
 * column right of the axes, outside the data, and names every line.
 */
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
        tmax = fmax(tmax, period_end(p[k], n[k], n[k] - 1));
    }
    /* the budget is a step line: two points a period */
    PLFLT *x = pfi_malloc(2 * maxn * sizeof *x), *y = pfi_malloc(2 * maxn * sizeof *y);
    if (x == NULL || y == NULL) {
        pfi_free(x);
        pfi_free(y);
        return PFI_ERR_NOMEM;
    }
    pfi_atomic_file out_file;
    pfi_error e = plot_begin(path, 900, 700, 1, 2, &out_file, diag);
    if (e != PFI_OK) {
        pfi_free(x);
        pfi_free(y);
        return e;
    }
    char names[PLOT_N_SERIES][48];
    run_names(p, nr, names);
    /* legend: 2 entries a run on top (power, budget), 1 below (tokens/s) */
    char text[2 * PLOT_N_SERIES][64];
    const char *text_ptr[2 * PLOT_N_SERIES];
    PLINT opt[2 * PLOT_N_SERIES], colour[2 * PLOT_N_SERIES], style[2 * PLOT_N_SERIES],
        text_colour[2 * PLOT_N_SERIES];
    PLFLT width[2 * PLOT_N_SERIES];
    size_t longest = 0;
    for (size_t k = 0; k < nr; k++) {
        size_t len = strlen(names[k]) + strlen(": budget");
        longest = len > longest ? len : longest;
    }
    const double sample = 3.0; /* legend line samples, character heights */
    /* offset, sample, pllegend's own spacing around the text, the text, air */
    const double right = 1.0 + sample + 2.5 + 0.75 * (double)longest + 1.0;
    for (int panel = 0; panel < 2; panel++) {
        double lo, hi;
        range(p, n, nr, panel, &lo, &hi);
        pladv(0);
        plot_text_size(30);
        plcol0(PLOT_BLACK);
        double vpw = plot_viewport(7.5, right, 4.8, 4.2);
        plwind(0, tmax, lo, hi);
        plbox("bcnst", 0, 0, "bcnstv", 0, 0);
        pllab("time since the controller started (s)",
              panel == 0 ? "cluster GPU power (W)" : "tokens/s",
              panel == 0 ? (title ? title : "grid power event") : "throughput");
        PLINT nl = 0;
        for (size_t k = 0; k < nr; k++) {
            PLINT m = 0;
            if (panel == 0) {
                /* each period's budget from its start to its end; a period without one
                 * (outside the event) breaks the line */
                plcol0(PLOT_SERIES + (PLINT)k);
                pllsty(budget_style(k));
                plwidth(1.5);
                for (size_t i = 0; i <= n[k]; i++) {
                    if (i < n[k] && isfinite(p[k][i].budget_w)) {
                        x[m] = p[k][i].t_s - p[k][0].t_s;
                        y[m] = p[k][i].budget_w;
                        x[m + 1] = period_end(p[k], n[k], i);
                        y[m + 1] = p[k][i].budget_w;
                        m += 2;
                    } else if (m > 0) {
                        plline(m, x, y);
                        m = 0;
                    }
                }
                plwidth(1.0);
                pllsty(1);
            }
            m = 0;
            for (size_t i = 0; i < n[k]; i++) {
                const pfi_audit_period *q = &p[k][i];
                double v = panel == 0
                               ? q->measured_w + (isfinite(q->reserved_w) ? q->reserved_w : 0)
                               : q->tput_tok_s;
                if (!isfinite(v))
                    continue;
                x[m] = q->t_s - p[k][0].t_s;
                y[m] = v;
                m++;
            }
            if (m > 0) {
                plcol0(PLOT_SERIES + (PLINT)k);
                plwidth(2.0);
                plline(m, x, y);
                plwidth(1.0);
            }
            /* every run is named, drawn or not: the legend says what was compared */
            snprintf(text[nl], sizeof text[nl], "%.40s%s", names[k], panel == 0 ? ": power" : "");
            style[nl] = 1;
            width[nl] = 2.0;
            colour[nl++] = PLOT_SERIES + (PLINT)k;
            if (panel == 0) {
                snprintf(text[nl], sizeof text[nl], "%.40s: budget", names[k]);
                style[nl] = budget_style(k);
                width[nl] = 1.5;
                colour[nl++] = PLOT_SERIES + (PLINT)k;
            }
        }
        for (PLINT i = 0; i < nl; i++) {
            text_ptr[i] = text[i];
            opt[i] = PL_LEGEND_LINE;
            text_colour[i] = PLOT_BLACK;
        }
        PLFLT lw, lh;
        pllegend(&lw, &lh, PL_LEGEND_NONE,
                 PL_POSITION_RIGHT | PL_POSITION_OUTSIDE | PL_POSITION_VIEWPORT, 1.0 / vpw, 0.0,
                 sample / vpw, 0, 0, 1, nl, 1, nl, opt, 0.5, 1.0, 2.0, 0.0, text_colour, text_ptr,
                 NULL, NULL, NULL, NULL, colour, style, width, NULL, NULL, NULL, NULL);
        plcol0(PLOT_BLACK);
    }
    pfi_free(x);
    pfi_free(y);
    return plot_end(&out_file, diag);
}
