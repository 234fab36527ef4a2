/*
 * pfi/plot.h — figures, drawn with PLplot's cairo drivers.
 *
 * PLplot keeps global state: call these from one thread at a time.
 */
#ifndef PFI_PLOT_H
#define PFI_PLOT_H

#include <stddef.h>

#include "pfi/error.h"
#include "pfi/index.h"

#ifdef __cplusplus
extern "C" {
#endif

/* At most this many groups share one overlay panel; more get one panel each. */
#define PFI_PLOT_OVERLAY_MAX 6

/*
 * pfi_plot_curves — draw each group's normalised throughput T/T0 against normalised power
 * P/P0: the reference and the used points joined by a line, points excluded as not binding
 * as open circles, and the proportional line T/T0 = P/P0 dashed. Up to PFI_PLOT_OVERLAY_MAX
 * groups overlay in one panel with a legend; more get one panel each on a grid. White
 * background.
 *
 * results[n], titles[n] (borrowed; a title may be NULL). Groups without a reference are drawn
 * as empty panels titled "undefined". The format comes from path's extension: ".png"
 * (pngcairo) or ".svg" (svgcairo). The figure is written to a temporary file beside path and
 * renamed over it, so path is never left half-written.
 * Errors: PFI_ERR_INVALID_ARGUMENT (n == 0, unknown extension), PFI_ERR_IO (cannot write or
 * rename; diag says why), PFI_ERR_PLOT (PLplot failed), PFI_ERR_NOMEM.
 */
pfi_error pfi_plot_curves(const char *path, const pfi_result *results, const char *const *titles,
                          size_t n, pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
