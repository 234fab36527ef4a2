/*
 * Private helpers shared by the figure writers (plot_curves.c, plot_stats.c, plot_sim.c,
 * src/lib/plot/plot_report.c): PLplot's error hooks, the output format from the file name, the
 * common palette, text size and margins per subpage, and the write-to-a-temporary-then-rename
 * protocol. Not part of the public API.
 */
#ifndef PFI_PLOT_COMMON_H
#define PFI_PLOT_COMMON_H

#include "plot/plplot_lazy.h" /* PLplot, opened on the first figure */

#include "pfi/atomic_file.h"
#include "pfi/error.h"

/* Colour-map-0 indices set by plot_begin: 0 white background, 1 black (axes, text),
 * PLOT_SERIES .. PLOT_SERIES + PLOT_N_SERIES − 1 the series colours (colour-blind safe),
 * then a mid grey and a light grey. */
enum {
    PLOT_BLACK = 1,
    PLOT_SERIES = 2,
    PLOT_N_SERIES = 6,
    PLOT_GREY = PLOT_SERIES + PLOT_N_SERIES,
    PLOT_LIGHT,
    PLOT_N_COLOURS
};

/* plot_fail — fill d (may be NULL) with path and the message; return e. */
pfi_error plot_fail(pfi_diag *d, const char *path, pfi_error e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * plot_begin — start a figure for path: the device from its extension (".png" pngcairo,
 * ".svg" svgcairo, any case), the output opened through pfi/atomic_file.h (a temporary
 * beside path, or path itself for a device or FIFO), a width × height pixel page split into
 * nx × ny subpages, white background, the palette above, PLplot's error hooks; then plinit.
 * PLplot is opened here the first time (plot/plplot_lazy.h). *out is the output in progress:
 * give it to plot_end. Errors: PFI_ERR_INVALID_ARGUMENT (unknown extension),
 * PFI_ERR_UNAVAILABLE (PLplot cannot be loaded: the message names the library and why),
 * PFI_ERR_IO, PFI_ERR_NOMEM; nothing is left behind on error.
 */
pfi_error plot_begin(const char *path, PLINT width, PLINT height, PLINT nx, PLINT ny,
                     pfi_atomic_file *out, pfi_diag *d);

/*
 * plot_text_size — set the character height so that the current subpage (call after pladv) is
 * `lines` character heights tall (or its width / 1.6, when that is less). PLplot's default
 * height grows with the whole page — its mean side, divided only by the square root of the
 * number of rows — so a row of three panels would get text 2.2 times as tall as one panel of
 * the same size, and its labels would fall off the subpage.
 */
void plot_text_size(double lines);

/*
 * plot_viewport — the viewport of the current subpage with margins given in character heights
 * (at the current plot_text_size): left for the y tick labels and label (pllab puts it 5
 * heights out), bottom for the x tick labels and label (3.2 out), top for the title (2 out),
 * right for a legend. Margins that would leave less than a third of the subpage are scaled
 * down together. Returns the viewport's width in character heights (for pllegend's
 * viewport-relative sizes).
 */
double plot_viewport(double left, double right, double bottom, double top);

/*
 * plot_end — finish the figure started by plot_begin (plend), check that PLplot reported no
 * error and wrote something, and commit the output. Errors: PFI_ERR_PLOT, PFI_ERR_IO (the
 * temporary is removed).
 */
pfi_error plot_end(pfi_atomic_file *out, pfi_diag *d);

#endif
