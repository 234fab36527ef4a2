/*
 * pfi report's figure: a grid power event from the controller's audit log (pfi/audit.h),
 * following the figure protocol of src/lib/plot/plot_common.h (temporary file, then rename).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "pfi/audit.h"
#include "plot/plot_common.h"
#include "plot/plot_layout.h"

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

/* The legend of one panel: two entries a run on top (power, budget), one below (tokens/s). */
typedef struct legend {
    PLINT n;
    char text[2 * PLOT_N_SERIES][64];
    const char *text_ptr[2 * PLOT_N_SERIES];
    PLINT opt[2 * PLOT_N_SERIES], colour[2 * PLOT_N_SERIES], style[2 * PLOT_N_SERIES],
        text_colour[2 * PLOT_N_SERIES];
    PLFLT width[2 * PLOT_N_SERIES];
} legend;

/* Legend line samples, in character heights. */
static const double legend_sample = 3.0;

/* The right margin the legend needs, in character heights: the offset, the sample,
 * pllegend's own spacing around the text, the longest text, air. */
static double legend_margin(char names[][48], size_t nr)
{
    size_t longest = 0;
    for (size_t k = 0; k < nr; k++) {
        size_t len = strlen(names[k]) + strlen(": budget");
        longest = len > longest ? len : longest;
    }
    return 1.0 + legend_sample + 2.5 + 0.75 * (double)longest + 1.0;
}

/* Run k's budget: each run of periods with a budget (a period without one, outside the
 * event, breaks the line) as plot_budget_path draws it: steps where the budget jumps, a ramp
 * where the schedule ramps, each period's budget held to its end. Powers in unit scale W.
 * x, y: room for 2 n + 1 points; t, v: room for n. */
static void draw_budget(const pfi_audit_period *p, size_t n, size_t k, double scale, PLFLT *x,
                        PLFLT *y, double *t, double *v)
{
    plcol0(PLOT_SERIES + (PLINT)k);
    pllsty(budget_style(k));
    plwidth(1.5);
    for (size_t i = 0; i < n; i++) {
        t[i] = p[i].t_s - p[0].t_s;
        v[i] = p[i].budget_w / scale;
    }
    size_t from = 0, b, e;
    while (plot_next_run(v, n, &from, &b, &e)) {
        size_t m = plot_budget_path(t + b, v + b, e - b, period_end(p, n, e - 1), x, y);
        plline((PLINT)m, x, y);
    }
    plwidth(1.0);
    pllsty(1);
}

/* Run k's measured line of the panel: power with the reserve (panel 0) or tokens/s (panel 1),
 * in units of scale. A period without a value breaks the line (plot_next_run): missing is never
 * drawn as 0 nor bridged. Lines width wide (thinner when many runs overlap). x, y: room for
 * n points; v: room for n. */
static void draw_measured(const pfi_audit_period *p, size_t n, size_t k, int panel, double scale,
                          double width, PLFLT *x, PLFLT *y, double *v)
{
    for (size_t i = 0; i < n; i++) {
        const pfi_audit_period *q = &p[i];
        v[i] = (panel == 0 ? q->measured_w + (isfinite(q->reserved_w) ? q->reserved_w : 0)
                           : q->tput_tok_s) /
               scale;
    }
    plcol0(PLOT_SERIES + (PLINT)k);
    plwidth(width);
    size_t from = 0, b, e;
    while (plot_next_run(v, n, &from, &b, &e)) {
        for (size_t i = b; i < e; i++) {
            x[i - b] = p[i].t_s - p[0].t_s;
            y[i - b] = v[i];
        }
        if (e - b > 1)
            plline((PLINT)(e - b), x, y);
        else
            plstring(1, x, y, "#(728)"); /* a lone period between gaps: a dot */
    }
    plwidth(1.0);
}

/* Run k's entries in the panel's legend, named drawn or not: the legend says what was
 * compared. */
static void legend_add(legend *lg, const char *name, size_t k, int panel)
{
    snprintf(lg->text[lg->n], sizeof lg->text[lg->n], "%.40s%s", name, panel == 0 ? ": power" : "");
    lg->style[lg->n] = 1;
    lg->width[lg->n] = 2.0;
    lg->colour[lg->n++] = PLOT_SERIES + (PLINT)k;
    if (panel == 0) {
        snprintf(lg->text[lg->n], sizeof lg->text[lg->n], "%.40s: budget", name);
        lg->style[lg->n] = budget_style(k);
        lg->width[lg->n] = 1.5;
        lg->colour[lg->n++] = PLOT_SERIES + (PLINT)k;
    }
}

/* The legend in a column right of the axes (viewport width vpw, in character heights). */
static void draw_legend(legend *lg, double vpw)
{
    for (PLINT i = 0; i < lg->n; i++) {
        lg->text_ptr[i] = lg->text[i];
        lg->opt[i] = PL_LEGEND_LINE;
        lg->text_colour[i] = PLOT_BLACK;
    }
    PLFLT lw, lh;
    pllegend(&lw, &lh, PL_LEGEND_NONE,
             PL_POSITION_RIGHT | PL_POSITION_OUTSIDE | PL_POSITION_VIEWPORT, 1.0 / vpw, 0.0,
             legend_sample / vpw, 0, 0, 1, lg->n, 1, lg->n, lg->opt, 0.5, 1.0, 2.0, 0.0,
             lg->text_colour, lg->text_ptr, NULL, NULL, NULL, NULL, lg->colour, lg->style,
             lg->width, NULL, NULL, NULL, NULL);
    plcol0(PLOT_BLACK);
}

/* One panel (0: power and budgets, 1: tokens/s) of every run, over [0, tmax] s, the legend
 * right margin wide. x, y: room for 2 maxn points. */
static void draw_panel(const pfi_audit_period *const *p, const size_t *n, size_t nr, int panel,
                       char names[][48], const char *title, double tmax, double right, PLFLT *x,
                       PLFLT *y, double *t, double *v)
{
    double lo, hi, scale = 1;
    range(p, n, nr, panel, &lo, &hi);
    char ylabel[48];
    if (panel == 0) {
        snprintf(ylabel, sizeof ylabel, "cluster GPU power (%s)", plot_power_unit(hi, &scale));
    } else {
        scale = hi >= 1e4 ? 1e3 : 1; /* short tick labels: the axis label fits beside them */
        snprintf(ylabel, sizeof ylabel, "%s", scale > 1 ? "thousand tokens/s" : "tokens/s");
    }
    lo /= scale;
    hi /= scale;
    pladv(0);
    plot_text_size(30);
    plcol0(PLOT_BLACK);
    double vpw = plot_viewport(7.5, right, 4.8, 4.2);
    plwind(0, tmax, lo, hi);
    plsyax(9, 0); /* plain numbers (120000 tokens/s), never a "(x10^5)" multiplier */
    plbox("bcnst", 0, 0, "bcnstv", 0, 0);
    pllab("time since the controller started (s)", ylabel,
          panel == 0 ? (title ? title : "grid power event") : "throughput");
    legend lg;
    lg.n = 0;
    for (size_t k = 0; k < nr; k++) {
        draw_measured(p[k], n[k], k, panel, scale, nr > 2 ? 1.2 : 2.0, x, y, v);
        legend_add(&lg, names[k], k, panel);
    }
    for (size_t k = 0; panel == 0 && k < nr; k++) /* on top: noisy power must not hide it */
        draw_budget(p[k], n[k], k, scale, x, y, t, v);
    draw_legend(&lg, vpw);
}

/*
 * Two panels, one above the other: cluster power (measured plus the reserve for silent
 * agents, solid) with each run's budget (dashed, the run's colour, a dash pattern of its
 * own: several runs' budgets are often the same line; drawn over the power lines, as steps
 * where it jumps and ramps where the schedule ramps), then tokens/s. Powers are in W, or kW
 * from 10 kW (plot_power_unit). A missing value (a period without power or tokens/s) breaks
 * its line: missing is never drawn as 0 nor bridged. The legend sits in a column right of
 * the axes, outside the data, and names every line.
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
    /* the budget has up to two points a period and one at the end */
    PLFLT *x = pfi_malloc((2 * maxn + 1) * sizeof *x), *y = pfi_malloc((2 * maxn + 1) * sizeof *y);
    double *t = pfi_malloc(maxn * sizeof *t), *v = pfi_malloc(maxn * sizeof *v);
    if (x == NULL || y == NULL || t == NULL || v == NULL) {
        pfi_free(x);
        pfi_free(y);
        pfi_free(t);
        pfi_free(v);
        return PFI_ERR_NOMEM;
    }
    pfi_atomic_file out_file;
    pfi_error e = plot_begin(path, 900, 700, 1, 2, &out_file, diag);
    if (e != PFI_OK) {
        pfi_free(x);
        pfi_free(y);
        pfi_free(t);
        pfi_free(v);
        return e;
    }
    char names[PLOT_N_SERIES][48];
    run_names(p, nr, names);
    double right = legend_margin(names, nr);
    for (int panel = 0; panel < 2; panel++)
        draw_panel(p, n, nr, panel, names, title, tmax, right, x, y, t, v);
    pfi_free(x);
    pfi_free(y);
    pfi_free(t);
    pfi_free(v);
    return plot_end(&out_file, diag);
}
