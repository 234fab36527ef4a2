/*
 * pfi/joblib.h — a job library: sweep groups turned into allocation curves, from which the
 * policy simulation draws workloads (DESIGN §6–7).
 *
 * Each template is one sweep group: its class, task, GPU count, curve (per-GPU cap → whole-job
 * drawn power, throughput; caps ascending, monotone after the isotonic repair of pfi/curve.h),
 * its true ratio PFI (paper §2, on its own cap grid) and, when known, a raw telemetry feature
 * (the DRAM copy product, DESIGN §4).
 *
 * Two sources, one shape:
 *   - pfi_joblib_from_library: the calibrated SYNTHETIC library of pfi/library.h (issue 4;
 *     `pfi library generate`), the one synthetic library of the project. Each group's curve
 *     is its TRUE job (the noise-free DESIGN §7 model) at the caps the group was measured at,
 *     its PFI the noise-free pfi_true, its raw feature the DRAM copy product (DESIGN §4:
 *     DRAM active × memory copy utilisation) of its measured reference run, its task the
 *     library's (pre-training or LoRA fine-tuning; dense fine-tuning included).
 *   - pfi_joblib_from_runs: any analysed runs table (a dataset directory read through its
 *     manifest, e.g. data/zeus_nsdi23_power or a directory `pfi library generate` wrote):
 *     points merged by cap as pfi_group_compute does, runs with a missing value left out,
 *     the curve repaired; groups with fewer than 2 usable caps or an undefined PFI are
 *     skipped (counted). Measured curves (noise included); no raw feature; the task is
 *     fine-tuning when the class ends in "-ft" (a runs table has no task column).
 */
#ifndef PFI_JOBLIB_H
#define PFI_JOBLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"
#include "pfi/index.h"
#include "pfi/library.h"
#include "pfi/runs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most distinct classes a library keeps (further classes are an error). */
#define PFI_JOBLIB_MAX_CLASSES 16

/* pfi_joblib — owned by its creator's caller (pfi_joblib_destroy). Read-only to users. */
typedef struct pfi_joblib {
    size_t n;         /* templates */
    char **name;      /* [n] label of the group */
    size_t *class_id; /* [n] index into class_name */
    char *class_name[PFI_JOBLIB_MAX_CLASSES];
    size_t n_classes;
    bool *fine_tune;    /* [n] task: fine-tuning (true) or pre-training */
    double *gpus;       /* [n] */
    size_t *offset;     /* [n + 1] curve points of template i: [offset[i], offset[i+1]) */
    double *cap_w;      /* per-GPU cap, W, ascending */
    double *power_w;    /* whole-job drawn power, W */
    double *tput_tok_s; /* whole-job throughput, tokens/s (or the dataset's unit) */
    double *pfi;        /* [n] true ratio PFI */
    double *feature;    /* [n] raw telemetry feature; NaN when unknown */
    bool synthetic;     /* numbers from the model, not measurements */
    size_t skipped;     /* groups left out (too few caps, undefined PFI) */
    size_t repaired;    /* values changed by the monotone repair */
} pfi_joblib;

/*
 * pfi_joblib_from_library — a library from the calibrated synthetic library lib (borrowed;
 * pfi_library_generate), described above; synthetic is set. *out owned
 * (pfi_joblib_destroy). Errors: PFI_ERR_INVALID_ARGUMENT (lib NULL or empty, a group the
 * model rejects), PFI_ERR_NOMEM.
 */
pfi_error pfi_joblib_from_library(const pfi_library *lib, pfi_joblib **out);

/*
 * pfi_joblib_from_runs — a library from the sweep groups of t (borrowed), with o's exclusion
 * rules for the PFI (o->draws is ignored). A group's class is its job_class (or "unknown"),
 * its task fine-tuning when the class ends in "-ft", its GPU count the gpus column (or 1).
 * Errors: PFI_ERR_EMPTY (no usable group; diag says why), PFI_ERR_LIMIT (more than
 * PFI_JOBLIB_MAX_CLASSES classes), PFI_ERR_NOMEM.
 */
pfi_error pfi_joblib_from_runs(const pfi_runs_table *t, const pfi_options *o, pfi_joblib **out,
                               pfi_diag *diag);

/* pfi_joblib_destroy — free l. NULL is a no-op. */
void pfi_joblib_destroy(pfi_joblib *l);

#ifdef __cplusplus
}
#endif

#endif
