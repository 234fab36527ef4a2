/*
 * pfi/plot.h — figures, drawn with PLplot's cairo drivers.
 *
 * Every function takes the format from path's extension, ".png" (pngcairo) or ".svg"
 * (svgcairo), draws on a white background, and writes to a temporary file beside path that
 * is renamed over it, so path is never left half-written. Errors common to all:
 * PFI_ERR_INVALID_ARGUMENT (unknown extension; diag says so), PFI_ERR_IO (cannot write or
 * rename; diag names the file and why), PFI_ERR_PLOT (PLplot failed), PFI_ERR_NOMEM.
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

/*
 * pfi_plot_curves_by_panel — as pfi_plot_curves, with the caller choosing the panels: group i
 * is drawn in panel panel_of[i] (< n_panels), all of a panel's groups overlaid, titled
 * panel_titles[p] (may be NULL). For many groups — say one panel per GPU model or per file —
 * where a panel per group would be too small to read. Panels with more than
 * PFI_PLOT_OVERLAY_MAX curves draw thin lines without markers or legend.
 * results[n], panel_of[n], panel_titles[n_panels]; all borrowed. Errors: as pfi_plot_curves,
 * plus PFI_ERR_INVALID_ARGUMENT for a panel index out of range.
 */
pfi_error pfi_plot_curves_by_panel(const char *path, const pfi_result *results, size_t n,
                                   const size_t *panel_of, const char *const *panel_titles,
                                   size_t n_panels, pfi_diag *diag);

/*
 * pfi_plot_pfi_by_class — the PFI distribution per job class (paper §4, Figure 3 in shape):
 * a strip plot, one column per class with its points spread by a deterministic jitter, a
 * bar at the class median, the class's n under its name, and a dashed line at PFI = 1.
 * pfi[n] (NaN: left out), cls[n] in [0, k) (the class of each value), class_names[k]
 * (borrowed). Errors: as above; PFI_ERR_INVALID_ARGUMENT also for k == 0, k > 64, a label
 * ≥ k or no defined PFI.
 */
pfi_error pfi_plot_pfi_by_class(const char *path, const double *pfi, const size_t *cls, size_t n,
                                const char *const *class_names, size_t k, pfi_diag *diag);

/*
 * pfi_plot_pfi_feature — PFI against one feature (paper §5, Figure 4 in shape): the groups as
 * points (coloured by class when cls is not NULL, with a legend), the OLS line
 * PFI = b0 + b1·x over the data's range and its level (e.g. 0.95) prediction band
 * (pfi_stats_ols_predict), shaded; the title gives the fit and R². A pair with a NaN is left
 * out. When the fit is undefined (fewer than 3 points, a constant feature) the points are
 * drawn without a line and the title says so. x[n], y[n] (PFI), cls[n] in [0, k) or NULL,
 * class_names[k] (borrowed; may be NULL when cls is), x_label (the feature's name).
 * Errors: as above; PFI_ERR_INVALID_ARGUMENT also for no complete pair, a label ≥ k, k > 64,
 * level outside (0, 1).
 */
pfi_error pfi_plot_pfi_feature(const char *path, const double *x, const double *y,
                               const size_t *cls, size_t n, const char *const *class_names,
                               size_t k, const char *x_label, double level, pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
