/*
 * Shared PLplot plumbing of the figure writers: error hooks, format, palette, atomic output.
 */
#include "plot/plot_common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* PLplot reports fatal errors through these hooks; returning 0 keeps it from exiting. PLplot
 * itself is global state (pfi/plot.h: one thread at a time), so one buffer suffices. */
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

pfi_error plot_fail(pfi_diag *d, const char *path, pfi_error e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_diag_vset(d, path, 0, NULL, fmt, ap);
    va_end(ap);
    return e;
}

static const char *device_for(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot == NULL)
        return NULL;
    if (strcasecmp(dot, ".png") == 0)
        return "pngcairo";
    if (strcasecmp(dot, ".svg") == 0)
        return "svgcairo";
    return NULL;
}

static const int palette[PLOT_N_SERIES][3] = {{0, 114, 178},   {213, 94, 0},  {0, 158, 115},
                                              {204, 121, 167}, {230, 159, 0}, {86, 180, 233}};

pfi_error plot_begin(const char *path, PLINT width, PLINT height, PLINT nx, PLINT ny,
                     pfi_atomic_file *out, pfi_diag *d)
{
    memset(out, 0, sizeof *out);
    const char *dev = device_for(path);
    if (dev == NULL)
        return plot_fail(d, path, PFI_ERR_INVALID_ARGUMENT,
                         "unknown figure format: the file name must end in .png or .svg");
    const char *why;
    if (plot_lazy_load(&why) != 0)
        return plot_fail(d, path, PFI_ERR_UNAVAILABLE,
                         "figures need PLplot (%s), which cannot be loaded: %s; install the "
                         "libplplot17 and plplot-driver-cairo packages",
                         PFI_PLPLOT_SONAME, why);
    pfi_error e = pfi_atomic_open_path(out, path, d);
    if (e != PFI_OK)
        return e;
    plot_error[0] = '\0';
    plsexit(on_plexit);
    plsabort(on_plabort);
    plsdev(dev);
    plsfnam(out->write_path);
    plspage(0, 0, width, height, 0, 0);
    plscolbg(255, 255, 255);
    plscmap0n(PLOT_N_COLOURS);
    plscol0(PLOT_BLACK, 0, 0, 0);
    for (int k = 0; k < PLOT_N_SERIES; k++)
        plscol0(PLOT_SERIES + k, palette[k][0], palette[k][1], palette[k][2]);
    plscol0(PLOT_GREY, 150, 150, 150);
    plscol0(PLOT_LIGHT, 215, 225, 240);
    plssub(nx, ny);
    plinit();
    return PFI_OK;
}

void plot_text_size(double lines)
{
    PLFLT x0, x1, y0, y1;
    plgspa(&x0, &x1, &y0, &y1);
    double h = fmin(y1 - y0, (x1 - x0) / 1.6);
    if (h > 0 && lines > 0)
        plschr(h / lines, 1.0);
}

double plot_viewport(double left, double right, double bottom, double top)
{
    PLFLT x0, x1, y0, y1, def, ht;
    plgspa(&x0, &x1, &y0, &y1);
    plgchr(&def, &ht);
    double w = x1 - x0, h = y1 - y0;
    if (!(w > 0 && h > 0 && ht > 0)) {
        plvsta();
        return 1.0;
    }
    double fx = (left + right) * ht / w, fy = (bottom + top) * ht / h;
    double sx = fx > 2.0 / 3.0 ? (2.0 / 3.0) / fx : 1.0;
    double sy = fy > 2.0 / 3.0 ? (2.0 / 3.0) / fy : 1.0;
    plvpor(left * ht * sx / w, 1.0 - right * ht * sx / w, bottom * ht * sy / h,
           1.0 - top * ht * sy / h);
    return w / ht - (left + right) * sx;
}

pfi_error plot_end(pfi_atomic_file *out, pfi_diag *d)
{
    plend();
    plsexit(NULL);
    plsabort(NULL);
    struct stat st;
    if (plot_error[0] != '\0' ||
        (!out->in_place && (stat(out->write_path, &st) != 0 || st.st_size == 0))) {
        pfi_error e = plot_fail(d, out->path, PFI_ERR_PLOT, "PLplot could not draw the figure%s%s",
                                plot_error[0] ? ": " : "", plot_error);
        pfi_atomic_abort(out);
        return e;
    }
    return pfi_atomic_commit(out, d);
}
