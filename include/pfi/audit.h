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
} pfi_audit_period;

/* pfi_audit_read — every period in the audit log at path (ascending) into *out (owned,
 * pfi_free()) of *n; run_id selects one controller run (0: the latest). Errors: PFI_ERR_IO,
 * PFI_ERR_EMPTY (no periods), PFI_ERR_NOMEM. */
pfi_error pfi_audit_read(const char *path, long run_id, pfi_audit_period **out, size_t *n,
                         pfi_diag *diag);

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

#ifdef __cplusplus
}
#endif

#endif
