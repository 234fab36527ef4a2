/*
 * pfi/audit.h — the controller's audit log (pfi/control.h, pfi_ctl_config.audit_path) read
 * back: its periods as data, and their figure for pfi report.
 *
 * The log is SQLite (tables ctl_*); reading it opens it read-only. Results are owned arrays
 * (pfi_free). Nothing here prints or exits. Thread-safety: pfi_audit_read shares no state;
 * pfi_audit_plot draws with PLplot, whose state is global: one figure at a time (pfi/plot.h).
 */
#ifndef PFI_AUDIT_H
#define PFI_AUDIT_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/error.h"
#include "pfi/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One period of the audit log, for pfi report and pfi control status. Times: t_s on the
 * controller's clock since its start (the schedule's time), wall_s Unix seconds. Powers in W
 * for the whole cluster; tput_tok_s the jobs' tokens/s; a missing value is NaN.
 */
typedef struct pfi_audit_period {
    long id;         /* the period's row in the log */
    double t_s;      /* s since this controller run started (monotonic clock) */
    double wall_s;   /* Unix time, s */
    int event;       /* 1 during a power event, else 0 */
    double budget_w; /* the target (schedule, API or --budget-w) */
    double alloc_budget_w, measured_w, reserved_w, predicted_w, correction_w, tput_tok_s, cap_sum_w;
    char strategy[32];
    char note[256];
    int agents_up, agents; /* agents that answered, of all configured */
    char bound[160];       /* the limits that bound the allocation (--topology; "" none) */
    int ramp_limited;      /* 1 when a ramp held the allocation back from the budget */
    int lead;              /* 1 when the budget was a ramp's lead ahead of an event (event 0) */
} pfi_audit_period;

/* pfi_audit_read — every period in the audit log at path (ascending) into *out (owned,
 * pfi_free()) of *n; run_id selects one controller run (0: the latest). Errors: PFI_ERR_IO,
 * PFI_ERR_EMPTY (no periods), PFI_ERR_NOMEM. */
pfi_error pfi_audit_read(const char *path, long run_id, pfi_audit_period **out, size_t *n,
                         pfi_diag *diag);

/* pfi_audit_check — whether the file at path can take pfi control's audit log (--db), as
 * pfi_ctl_create would judge it before writing anything: no file, an empty one, an audit log
 * pfi wrote (every ctl_* table with pfi's columns) or a pfi run store is taken; a directory, a
 * file that is no SQLite database (a CSV) or another program's database (a table named
 * ctl_runs with other columns included) is refused. Read-only: opens path read-only, writes
 * nothing, makes no file beside it. Says nothing of whether path can be written. Errors:
 * PFI_ERR_IO (refused; diag's message names path and why), PFI_ERR_INVALID_ARGUMENT (path
 * NULL). */
pfi_error pfi_audit_check(const char *path, pfi_diag *diag);

/* pfi_audit_plot — the figure of nruns controller runs (run k: periods p[k][n[k]], e.g.
 * one per strategy on the same scenario): top, measured power (W, or kW from 10 kW; reserve
 * for silent agents included; solid) and the cluster budget (dashed in the run's colour, with
 * a dash pattern per run so coinciding budgets stay distinct; steps where it jumps, ramps
 * where the schedule ramps) over time since each run's first period; bottom, tokens/s. A
 * missing value breaks its line (never drawn as 0). A legend right of each panel names every line
 * by the run's strategy (numbered when two runs share one). path ".png" or ".svg". Errors:
 * PFI_ERR_INVALID_ARGUMENT, PFI_ERR_PLOT, PFI_ERR_IO, PFI_ERR_NOMEM. */
pfi_error pfi_audit_plot(const pfi_audit_period *const *p, const size_t *n, size_t nruns,
                         const char *title, const char *path, pfi_diag *diag);

/*
 * Power-swing figures of a measured power series (issue 18 item 5; the figures the
 * utilities' studies of AI load use): the largest ramp, the dynamic range, and the
 * oscillation energy in a band.
 *
 *   max_ramp_w_per_s   max |p[i+1] − p[i]| / (t[i+1] − t[i]) over consecutive samples;
 *   dynamic_range_w    max p − min p;
 *   osc_energy_w2      the series resampled (linearly) on a uniform grid at the median step
 *                      dt, its mean removed, transformed with GSL's mixed-radix real FFT
 *                      (X_k, k = 0..N−1): Σ |X_k|² / N² over every bin, positive and negative
 *                      frequency, with |f_k| in [band_lo_hz, band_hi_hz] — by Parseval the
 *                      part of the series' variance (W²) in the band; NaN when the band lies
 *                      wholly above the Nyquist frequency 1/(2 dt) (a series sampled too
 *                      slowly says nothing about it) or fewer than 4 samples;
 *   osc_rms_w          its square root (W): the RMS of the band's oscillation;
 *   band_hi_used_hz    min(band_hi_hz, Nyquist): the band the figure covers.
 *
 * Samples with a NaN power or time are skipped (counted in n_missing), never read as 0.
 */
typedef struct pfi_power_swing {
    size_t n, n_missing;
    double dt_s;
    double min_w, max_w, dynamic_range_w, max_ramp_w_per_s;
    double band_lo_hz, band_hi_hz, band_hi_used_hz;
    double osc_energy_w2, osc_rms_w;
} pfi_power_swing;

/* pfi_power_swing_compute — the figures of t_s[n] (s, ascending) and w[n] (W) in the band
 * [band_lo_hz, band_hi_hz] (0.1, 20 in `pfi report`). Errors: PFI_ERR_INVALID_ARGUMENT (a
 * band that is not 0 <= lo < hi, times not ascending), PFI_ERR_EMPTY (fewer than 2 usable
 * samples), PFI_ERR_NOMEM. */
pfi_error pfi_power_swing_compute(const double *t_s, const double *w, size_t n, double band_lo_hz,
                                  double band_hi_hz, pfi_power_swing *out, pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
