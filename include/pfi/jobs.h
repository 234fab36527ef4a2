/*
 * pfi/jobs.h — the jobs file of `pfi allocate`: each job's curve and optional inputs.
 *
 * CSV with a header, one row per curve point; columns found by name, in any order:
 *   required: job (name), cap_w (per-GPU cap, W), power_w (whole-job drawn power, W),
 *             tput_tok_s (whole-job throughput, tokens/s)
 *   optional, per job (the first non-empty cell of the job's rows counts): class, gpus,
 *             weight (objective weight), floor (SLA: keep this fraction of the reference
 *             throughput), pfi (estimated PFI), feature (raw telemetry), cap_min_w, cap_max_w,
 *             band (priority band, a number in [-1e6, 1e6]: higher is kept longer;
 *             pfi_band_valid, pfi/topology.h), node (the topology level the job runs under;
 *             one per job: two differ is an error naming both lines; so are two classes,
 *             two gpus counts or two bands of one job)
 * Other columns are not read (unknown_columns names them, for a note). A job's rows need not be
 * adjacent; jobs keep the order of their first row. Empty cells and the missing markers of
 * pfi/value.h are missing (NaN), never zero. Points are sorted by cap; two points at one cap are an
 * error. Monotonicity is not checked here (pfi/curve.h).
 */
#ifndef PFI_JOBS_H
#define PFI_JOBS_H

#include <stddef.h>
#include <stdio.h>

#include "pfi/allocate.h"
#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most jobs and points in one file (more is PFI_ERR_LIMIT). */
#define PFI_JOBS_MAX_POINTS 50000000
/* The bounds a row is held to (PFI_ERR_VALUE above them, naming line and column): a per-GPU
   cap (cap_w, cap_min_w, cap_max_w) or a job's power_w over its gpus (1 when absent) above
   PFI_JOBS_MAX_GPU_W watts is not a physical power; gpus a whole number 1 ..
   PFI_JOBS_MAX_GPUS; band pfi_band_valid's (pfi/topology.h: a number in [-1e6, 1e6], the
   rule of every band pfi reads; PFI_JOBS_MAX_BAND, its top, was once the only bound of a
   band that had to be a whole number >= 0). */
#define PFI_JOBS_MAX_GPU_W 100000.0
#define PFI_JOBS_MAX_GPUS 1000000
#define PFI_JOBS_MAX_BAND 1000000
/* The most tokens/s a job's row may give (1e15: far above any cluster; above, a typo or an
   overflow that would fill the table with digits). */
#define PFI_JOBS_MAX_TPUT 1e15
/* The other per-job numbers' bounds (PFI_ERR_VALUE outside, naming line, column and the
   range; "nan", "inf" and a value past the bound refused, an empty cell is missing): weight 0
   to PFI_JOBS_MAX_WEIGHT (as pfi control's policy), floor a fraction 0 to 1, pfi above 0 and at
   most PFI_JOBS_MAX_PFI, feature 0 to PFI_JOBS_MAX_FEATURE. */
#define PFI_JOBS_MAX_WEIGHT 1e6
#define PFI_JOBS_MAX_PFI 100.0
#define PFI_JOBS_MAX_FEATURE 1e15

/* pfi_jobs — owned (pfi_jobs_destroy); arrays as in pfi_alloc_jobs, n entries per job. */
typedef struct pfi_jobs {
    size_t n;
    char **name;                          /* [n] */
    char **job_class;                     /* [n], NULL when absent */
    size_t *offset;                       /* [n + 1] */
    double *cap_w, *power_w, *tput_tok_s; /* [offset[n]] */
    /* [n], NaN absent; the columns the file does not have may share one array of NaN, so
       these are to be read, not written */
    double *gpus, *weight, *floor_frac, *pfi, *feature, *cap_lo_w, *cap_hi_w;
    double *band; /* [n], NaN absent */
    /* a file without a node column: node and node_line may share one array of zeros (to be
       read, not written) */
    char **node;     /* [n], NULL when absent */
    long *node_line; /* [n], the jobs file line of each job's first node cell, 0 when absent */
    long *line;      /* [n], the jobs file line of each job's first row */
    /* the header's names that are none of the columns above, each quoted ("'bnad', 'Band'":
       names are matched exactly, case included), NULL when none: their cells are not read,
       and a command says so (a misspelt band column would drop every band unsaid) */
    const char *unknown_columns;
    /* private */
    size_t cap_jobs, cap_points;
    void *strings; /* the blocks that hold name, job_class and node's strings */
} pfi_jobs;

/*
 * pfi_jobs_read_stream — read a jobs CSV from stream (borrowed) named name (diagnostics) into
 * *out (owned). Errors: PFI_ERR_EMPTY, PFI_ERR_MISSING_COLUMN, PFI_ERR_VALUE (a bad number, a
 * negative value, two points at one cap — diag names line and column), PFI_ERR_PARSE,
 * PFI_ERR_LINE_TOO_LONG, PFI_ERR_LIMIT, PFI_ERR_IO, PFI_ERR_NOMEM.
 */
pfi_error pfi_jobs_read_stream(FILE *stream, const char *name, pfi_jobs **out, pfi_diag *diag);

/* pfi_jobs_read — as pfi_jobs_read_stream from the file at path. */
pfi_error pfi_jobs_read(const char *path, pfi_jobs **out, pfi_diag *diag);

/* pfi_jobs_view — fill *v with borrowed pointers into j (optional arrays included). */
void pfi_jobs_view(const pfi_jobs *j, pfi_alloc_jobs *v);

/* pfi_jobs_destroy — free j. NULL is a no-op. */
void pfi_jobs_destroy(pfi_jobs *j);

#ifdef __cplusplus
}
#endif

#endif
