/*
 * Normalised power–throughput curves with PLplot (cairo drivers).
 */
#include "pfi/plot.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "plot/plot_common.h"
#include "plot/plot_layout.h"

enum { N_PALETTE = PLOT_N_SERIES, GREY = PLOT_GREY };

/* Text size, as character heights per panel height: one large figure, a grid of panels. */
#define TEXT_LINES_ONE 42.0
#define TEXT_LINES_GRID 23.0

typedef struct curve {
    double p0_w;  /* the reference's power, W (NaN without a reference) */
    PLFLT *p, *t; /* used points and the reference, sorted by p */
    size_t n;
    PLFLT *xp, *xt; /* excluded points with a measured power and throughput */
    size_t nx;
} curve;

static int by_first(const void *a, const void *b)
{
    const PLFLT *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

static pfi_error curve_make(const pfi_result *r, curve *c)
{
    memset(c, 0, sizeof *c);
    c->p0_w = NAN;
    if (!r->has_reference)
        return PFI_OK;
    c->p0_w = r->reference.power_w;
    size_t cap = r->n_points + 1;
    PLFLT *pairs = pfi_malloc(2 * cap * sizeof *pairs);
    c->p = pfi_malloc(cap * sizeof *c->p);
    c->t = pfi_malloc(cap * sizeof *c->t);
    c->xp = pfi_malloc(cap * sizeof *c->xp);
    c->xt = pfi_malloc(cap * sizeof *c->xt);
    if (!pairs || !c->p || !c->t || !c->xp || !c->xt) {
        pfi_free(pairs);
        return PFI_ERR_NOMEM;
    }
    const double p0 = r->reference.power_w, t0 = r->reference.throughput;
    size_t n = 0;
    pairs[2 * n] = 1.0;
    pairs[2 * n + 1] = 1.0;
    n++;
    for (size_t i = 0; i < r->n_points; i++) {
        const pfi_point *pt = &r->points[i];
        if (isnan(pt->x) || isnan(pt->y))
            continue;
        double p = pt->power_w / p0, t = pt->throughput / t0;
        if (pt->exclusion == PFI_EXCL_NONE || pt->exclusion == PFI_EXCL_NO_THROUGHPUT_LOSS) {
            pairs[2 * n] = p;
            pairs[2 * n + 1] = t;
            n++;
        } else {
            c->xp[c->nx] = p;
            c->xt[c->nx] = t;
            c->nx++;
        }
    }
    qsort(pairs, n, 2 * sizeof *pairs, by_first);
    for (size_t i = 0; i < n; i++) {
        c->p[i] = pairs[2 * i];
        c->t[i] = pairs[2 * i + 1];
    }
    c->n = n;
    pfi_free(pairs);
    return PFI_OK;
}

static void curve_free(curve *c)
{
    pfi_free(c->p);
    pfi_free(c->t);
    pfi_free(c->xp);
    pfi_free(c->xt);
}

static void extend(double v, double *lo, double *hi)
{
    if (isfinite(v)) {
        if (v < *lo)
            *lo = v;
        if (v > *hi)
            *hi = v;
    }
}

/* Axis limits covering the curves, the reference and the proportional line. */
static void limits(const curve *c, size_t n, PLFLT *xmin, PLFLT *xmax, PLFLT *ymin, PLFLT *ymax)
{
    double lo = 1.0, hi = 1.0, tlo = 1.0, thi = 1.0;
    for (size_t k = 0; k < n; k++) {
        for (size_t i = 0; i < c[k].n; i++) {
            extend(c[k].p[i], &lo, &hi);
            extend(c[k].t[i], &tlo, &thi);
        }
        for (size_t i = 0; i < c[k].nx; i++) {
            extend(c[k].xp[i], &lo, &hi);
            extend(c[k].xt[i], &tlo, &thi);
        }
    }
    extend(lo, &tlo, &thi);
    double dx = (hi - lo) * 0.06 + 0.02, dy = (thi - tlo) * 0.06 + 0.02;
    *xmin = lo - dx;
    *xmax = hi + dx;
    *ymin = tlo - dy;
    *ymax = thi + dy;
}

/* A tick step of 1, 2 or 5 × 10^k giving about three intervals over [lo, hi]. */
static PLFLT nice_step(PLFLT lo, PLFLT hi)
{
    double raw = (hi - lo) / 3.0;
    if (!(raw > 0))
        return 0.0; /* PLplot chooses */
    double mag = pow(10.0, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * mag;
}

/*
 * One panel: the curves c[idx[0..n)] (idx NULL: c[0..n)), the proportional line, a legend
 * of titles when there are few curves, and a note naming the excluded points' marker when
 * the panel has any. Many curves are drawn thin, without markers, so the shape of the family
 * stays readable; past the palette's six colours the line style changes too, so no two
 * curves look alike. A panel of one curve gets a second x axis on top in W (P = x · P0; kW
 * from 10 kW, plot_power_unit), so the caps read in watts. Text is sized to the panel (text_lines
 * character heights to its height, plot_text_size), not to the page, so a wide grid of panels keeps
 * its titles and labels inside each panel.
 */
static void draw_panel(const curve *c, const size_t *idx, size_t n, const char *const *titles,
                       const char *title, bool legend, double text_lines)
{
    curve *sel = pfi_malloc((n ? n : 1) * sizeof *sel);
    if (sel == NULL)
        return;
    size_t excluded = 0;
    for (size_t k = 0; k < n; k++) {
        sel[k] = c[idx ? idx[k] : k];
        excluded += sel[k].nx;
    }
    const bool many = n > PFI_PLOT_OVERLAY_MAX;
    const bool watts = n == 1 && isfinite(sel[0].p0_w) && sel[0].p0_w > 0;
    PLFLT xmin, xmax, ymin, ymax;
    limits(sel, n, &xmin, &xmax, &ymin, &ymax);
    plcol0(1);
    pladv(0);
    plot_text_size(text_lines);
    if (watts)
        plot_viewport(7.0, 2.0, 4.8, 7.2);
    else
        plvsta();
    if (watts) { /* the top axis: measured power in W (kW for a many-GPU job) */
        double scale, p0 = sel[0].p0_w;
        char label[32];
        snprintf(label, sizeof label, "power (%s)", plot_power_unit(xmax * p0, &scale));
        plwind(xmin * p0 / scale, xmax * p0 / scale, ymin, ymax);
        plbox("cmst", nice_step(xmin * p0 / scale, xmax * p0 / scale), 0, "", 0, 0);
        plmtex("t", 2.9, 0.5, 0.5, label);
    }
    plwind(xmin, xmax, ymin, ymax);
    plbox(watts ? "bnst" : "bcnst", nice_step(xmin, xmax), 0, "bcnstv", nice_step(ymin, ymax), 0);
    pllab("power P/P#d0#u (reference = 1)", "throughput T/T#d0#u", "");
    plmtex("t", watts ? 5.4 : 2.0, 0.5, 0.5, title ? title : "");
    /* the proportional line: throughput falls as fast as power (PFI = 1) */
    plcol0(GREY);
    pllsty(2);
    PLFLT lx[2] = {xmin, xmax}, ly[2] = {xmin, xmax};
    plline(2, lx, ly);
    pllsty(1);
    for (size_t k = 0; k < n; k++) {
        plcol0(PLOT_SERIES + (int)(k % N_PALETTE));
        if (sel[k].n > 1) {
            plwidth(many ? 1.0 : 2.0);
            pllsty((PLINT)(1 + (k / N_PALETTE) % 8));
            plline((PLINT)sel[k].n, sel[k].p, sel[k].t);
            pllsty(1);
            plwidth(1.0);
        }
        if (many)
            continue;
        if (sel[k].n > 0)
            plstring((PLINT)sel[k].n, sel[k].p, sel[k].t, "#(728)"); /* filled circle */
        if (sel[k].nx > 0) {
            plcol0(GREY);
            plstring((PLINT)sel[k].nx, sel[k].xp, sel[k].xt, "#(727)"); /* open circle */
        }
        if (legend) {
            plcol0(PLOT_SERIES + (int)(k % N_PALETTE));
            plmtex("lv", -1.0, 0.95 - 0.06 * (double)k, 0.0,
                   titles && titles[k] ? titles[k] : "(group)");
        }
    }
    if (legend && !many) {
        plcol0(GREY);
        plmtex("lv", -1.0, 0.95 - 0.06 * (double)n, 0.0, "dashed: T/T0 = P/P0 (PFI 1)");
    }
    if (excluded > 0 && !many) { /* the open circles' meaning, in the panel's corner */
        plcol0(GREY);
        plmtex("b", -1.2, 0.98, 1.0, "#(727) excluded (not binding)");
    }
    plcol0(PLOT_BLACK);
    pfi_free(sel);
}

pfi_error pfi_plot_curves(const char *path, const pfi_result *results, const char *const *titles,
                          size_t n, pfi_diag *diag)
{
    if (n == 0)
        return plot_fail(diag, path, PFI_ERR_INVALID_ARGUMENT, "no group to plot");
    curve *c = pfi_calloc(n, sizeof *c);
    if (c == NULL)
        return PFI_ERR_NOMEM;
    pfi_error e = PFI_OK;
    for (size_t i = 0; i < n && e == PFI_OK; i++)
        e = curve_make(&results[i], &c[i]);
    bool overlay = n <= PFI_PLOT_OVERLAY_MAX;
    PLINT nx = 1, ny = 1;
    if (!overlay) {
        nx = (PLINT)ceil(sqrt((double)n));
        ny = (PLINT)((n + (size_t)nx - 1) / (size_t)nx);
    }
    pfi_atomic_file out_file;
    if (e == PFI_OK)
        e = plot_begin(path, overlay ? 900 : 340 * nx, overlay ? 650 : 280 * ny, nx, ny, &out_file,
                       diag);
    if (e != PFI_OK)
        goto out;
    if (overlay) {
        char legend[PFI_PLOT_OVERLAY_MAX][448]; /* room for any %.2f: no truncation warning */
        const char *legend_ptr[PFI_PLOT_OVERLAY_MAX];
        for (size_t i = 0; i < n; i++) {
            const char *t = titles && titles[i] ? titles[i] : "(group)";
            char p0[32] = "";
            if (n > 1 && results[i].has_reference && isfinite(results[i].reference.power_w))
                snprintf(p0, sizeof p0, ", P#d0#u %.0f W", results[i].reference.power_w);
            if (!results[i].has_reference || isnan(results[i].ratio))
                snprintf(legend[i], sizeof legend[i], "%.60s: PFI undefined%s", t, p0);
            else
                snprintf(legend[i], sizeof legend[i], "%.60s: PFI %.2f%s", t, results[i].ratio, p0);
            legend_ptr[i] = legend[i];
        }
        draw_panel(c, NULL, n, legend_ptr, "Power Flexibility: normalised throughput vs power",
                   true, TEXT_LINES_ONE);
    } else {
        for (size_t i = 0; i < n; i++) {
            /* a panel fits about 34 characters of title */
            char title[96], name[40];
            plot_short_title(titles && titles[i] ? titles[i] : "(group)", 24, name, sizeof name);
            if (!results[i].has_reference || isnan(results[i].ratio))
                snprintf(title, sizeof title, "%s: PFI undefined", name);
            else
                snprintf(title, sizeof title, "%s: PFI %.2f", name, results[i].ratio);
            draw_panel(c, &i, 1, NULL, title, false, TEXT_LINES_GRID);
        }
    }
    e = plot_end(&out_file, diag);
out:
    for (size_t i = 0; i < n; i++)
        curve_free(&c[i]);
    pfi_free(c);
    return e;
}

pfi_error pfi_plot_curves_by_panel(const char *path, const pfi_result *results, size_t n,
                                   const size_t *panel_of, const char *const *panel_titles,
                                   size_t n_panels, pfi_diag *diag)
{
    if (n == 0 || n_panels == 0)
        return plot_fail(diag, path, PFI_ERR_INVALID_ARGUMENT, "no group to plot");
    for (size_t i = 0; i < n; i++)
        if (panel_of[i] >= n_panels)
            return plot_fail(diag, path, PFI_ERR_INVALID_ARGUMENT,
                             "group %zu is assigned to panel %zu of %zu", i, panel_of[i], n_panels);
    curve *c = pfi_calloc(n, sizeof *c);
    size_t *idx = pfi_malloc(n * sizeof *idx);
    pfi_error e = c && idx ? PFI_OK : PFI_ERR_NOMEM;
    for (size_t i = 0; i < n && e == PFI_OK; i++)
        e = curve_make(&results[i], &c[i]);
    PLINT nx = (PLINT)ceil(sqrt((double)n_panels));
    PLINT ny = (PLINT)((n_panels + (size_t)nx - 1) / (size_t)nx);
    pfi_atomic_file out_file;
    if (e == PFI_OK)
        e = plot_begin(path, n_panels == 1 ? 900 : 420 * nx, n_panels == 1 ? 650 : 340 * ny, nx, ny,
                       &out_file, diag);
    if (e == PFI_OK) {
        for (size_t p = 0; p < n_panels; p++) {
            size_t m = 0;
            for (size_t i = 0; i < n; i++)
                if (panel_of[i] == p)
                    idx[m++] = i;
            char name[48];
            plot_short_title(panel_titles && panel_titles[p] ? panel_titles[p] : "(panel)", 38,
                             name, sizeof name);
            draw_panel(c, idx, m, NULL, name, false,
                       n_panels == 1 ? TEXT_LINES_ONE : TEXT_LINES_GRID);
        }
        e = plot_end(&out_file, diag);
    }
    for (size_t i = 0; c != NULL && i < n; i++)
        curve_free(&c[i]);
    pfi_free(c);
    pfi_free(idx);
    return e;
}
