/*
 * Private helpers shared by the figure writers (plot.c, plot_stats.c): PLplot's error hooks,
 * the output format from the file name, the common palette, and the write-to-a-temporary-
 * then-rename protocol. Not part of the public API.
 */
#ifndef PFI_PLOT_COMMON_H
#define PFI_PLOT_COMMON_H

#include <plplot/plplot.h>

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
 * *out is the output in progress: give it to plot_end. Errors: PFI_ERR_INVALID_ARGUMENT
 * (unknown extension), PFI_ERR_IO, PFI_ERR_NOMEM; nothing is left behind on error.
 */
pfi_error plot_begin(const char *path, PLINT width, PLINT height, PLINT nx, PLINT ny,
                     pfi_atomic_file *out, pfi_diag *d);

/*
 * plot_end — finish the figure started by plot_begin (plend), check that PLplot reported no
 * error and wrote something, and commit the output. Errors: PFI_ERR_PLOT, PFI_ERR_IO (the
 * temporary is removed).
 */
pfi_error plot_end(pfi_atomic_file *out, pfi_diag *d);

#endif
