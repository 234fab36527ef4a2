/*
 * Figures of the policy simulation: lines per strategy against the reduction, PLplot cairo.
 */
#include "pfi/plot_sim.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "plot/plot_common.h"

/* Colour of each strategy (plot_common.h's palette), by name: the oracle black, equal grey,
   the others series colours. A new strategy needs its row here (colour 0 is the page's). */
static const PLINT strategy_colour[PFI_STRATEGY_COUNT] = {
    [PFI_STRATEGY_ORACLE] = PLOT_BLACK,
    [PFI_STRATEGY_EQUAL] = PLOT_GREY,
    [PFI_STRATEGY_CLASS_WEIGHTED] = PLOT_SERIES + 4,
    [PFI_STRATEGY_PFI_WEIGHTED] = PLOT_SERIES + 0,
    [PFI_STRATEGY_PFI_MODEL] = PLOT_SERIES + 2,
    [PFI_STRATEGY_RAW_TELEMETRY] = PLOT_SERIES + 1,
    [PFI_STRATEGY_FAIR_HEADROOM] = PLOT_SERIES + 3,
};

/* Line style of each strategy (PLplot's pllsty: 1 solid, 2 .. 8 dash patterns): strategies
   whose lines often coincide get patterns of their own, so one never hides the other (equal
   and fair-headroom both run along 0 % gap closed; oracle and pfi-model near 100 %). */
static const PLINT strategy_style[PFI_STRATEGY_COUNT] = {
    [PFI_STRATEGY_ORACLE] = 1,         [PFI_STRATEGY_EQUAL] = 2,
    [PFI_STRATEGY_CLASS_WEIGHTED] = 1, [PFI_STRATEGY_PFI_WEIGHTED] = 1,
    [PFI_STRATEGY_PFI_MODEL] = 4,      [PFI_STRATEGY_RAW_TELEMETRY] = 1,
    [PFI_STRATEGY_FAIR_HEADROOM] = 3,
};

/* Legend line samples, in character heights. */
static const double legend_sample = 3.0;

/* One panel: y[s * nx + i] per strategy s (NaN: absent), x in %. */
typedef struct panel {
    char title[128];
    double y[PFI_STRATEGY_COUNT * PFI_SIM_MAX_REDUCTIONS];
} panel;

/* Width of the legend column, in character heights: the offset from the axes, the line sample,
 * pllegend's spacing, the longest strategy name (about 0.72 of a height per character in the
 * cairo drivers' sans font) and a little air. */
static double legend_width(void)
{
    size_t longest = 0;
    for (int s = 0; s < PFI_STRATEGY_COUNT; s++) {
        size_t n = strlen(pfi_strategy_name((pfi_strategy)s));
        longest = n > longest ? n : longest;
    }
    return 1.0 + legend_sample + 1.5 + 0.72 * (double)longest + 1.0;
}

/*
 * Panels side by side (at most 3 a row), each with its own axes in the left part of its
 * subpage and the legend in a column to the right of the axes, outside the plotting area:
 * no line (the oracle runs along 100 %) can hide under it. Text is sized to the panel, not
 * the page, and the margins are in character heights, so the axis labels, the title and the
 * legend stay inside the image however many panels there are.
 */
static pfi_error draw(const char *path, const double *x, size_t nx, const panel *p, size_t np,
                      const char *ylabel, pfi_diag *diag)
{
    if (np == 0 || nx == 0)
        return plot_fail(diag, path, PFI_ERR_INVALID_ARGUMENT, "nothing to plot");
    PLINT cols = (PLINT)(np < 3 ? np : 3), rows = (PLINT)((np + 2) / 3);
    pfi_atomic_file out_file;
    pfi_error e = plot_begin(path, 680 * cols, 440 * rows, cols, rows, &out_file, diag);
    if (e != PFI_OK)
        return e;
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
        pladv(0);
        plot_text_size(30);
        double vpw = plot_viewport(7.5, legend_width(), 4.6, 3.2);
        plwind(x[0] - 2, x[nx - 1] + 2, ymin - pad, ymax + pad);
        plcol0(PLOT_BLACK);
        plbox("bcnst", 0, 0, "bcnstv", 0, 0);
        pllab("power reduction r (%)", ylabel, p[k].title);
        PLINT shown = 0, opt[PFI_STRATEGY_COUNT], colour[PFI_STRATEGY_COUNT],
              style[PFI_STRATEGY_COUNT], text_colour[PFI_STRATEGY_COUNT],
              symbols_n[PFI_STRATEGY_COUNT];
        PLFLT width[PFI_STRATEGY_COUNT], symbol_scale[PFI_STRATEGY_COUNT];
        const char *text[PFI_STRATEGY_COUNT], *symbol[PFI_STRATEGY_COUNT];
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
            plcol0(strategy_colour[s]);
            plwidth(2.0);
            pllsty(strategy_style[s]);
            plline(m, xs, ys);
            pllsty(1);
            plwidth(1.0);
            plstring(m, xs, ys, "#(728)");
            /* the legend: the line's sample (colour, dashes, marker) and the name */
            opt[shown] = PL_LEGEND_LINE | PL_LEGEND_SYMBOL;
            colour[shown] = strategy_colour[s];
            style[shown] = strategy_style[s];
            width[shown] = 2.0;
            text_colour[shown] = PLOT_BLACK;
            text[shown] = pfi_strategy_name((pfi_strategy)s);
            symbol[shown] = "#(728)";
            symbol_scale[shown] = 1.0;
            symbols_n[shown] = 1;
            shown++;
        }
        if (shown > 0) {
            PLFLT lw, lh;
            pllegend(&lw, &lh, PL_LEGEND_NONE,
                     PL_POSITION_RIGHT | PL_POSITION_OUTSIDE | PL_POSITION_VIEWPORT, 1.0 / vpw, 0.0,
                     legend_sample / vpw, 0, 0, 1, shown, 1, shown, opt, 0.5, 1.0, 2.0, 0.0,
                     text_colour, text, NULL, NULL, NULL, NULL, colour, style, width, colour,
                     symbol_scale, symbols_n, symbol);
            plcol0(PLOT_BLACK);
        }
    }
    return plot_end(&out_file, diag);
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
    panel *p = pfi_calloc(lib->n_classes ? lib->n_classes : 1, sizeof *p);
    if (p == NULL)
        return PFI_ERR_NOMEM;
    size_t np = 0;
    for (size_t k = 0; k < lib->n_classes; k++) {
        snprintf(p[np].title, sizeof p[np].title, "%.24s: throughput kept (%s)", lib->class_name[k],
                 pfi_sim_mix_name(m));
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
    pfi_free(p);
    return e;
}
