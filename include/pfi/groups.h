/*
 * pfi/groups.h — the analysed groups table: one row per sweep group with its job class, its
 * PFI and its telemetry features, the input of `pfi stats` and `pfi fit` (paper §4–5).
 *
 * Two sources:
 *   - a dataset (directory with a manifest, pfi/manifest.h): the PFI of each group is computed
 *     (pfi_analyze, no CI), and the features are the columns matching a glob (default
 *     "dcgm_*") of the group's reference run — the uncapped run, so they are what a running
 *     job shows (DESIGN §4);
 *   - a groups CSV: columns "group" (name), "job_class" (or "class"; optional), the PFI column
 *     (default "pfi", else "pfi_ratio"), and every other column whose non-missing cells are
 *     all numbers is a feature. `pfi stats --groups-out` writes this format.
 *   - the run store (pfi/store.h): the PFI of each stored group is computed from its usable
 *     runs, and the features are the stored features of its reference (highest-cap usable)
 *     run, mapped to the predictor's names by pfi/featmap.h.
 * Nothing else depends on where rows came from.
 *
 * Derived features: "A*B" names the product of features A and B (the DRAM copy product is
 * "dcgm_dram_active*dcgm_mem_copy_util"); pfi_groups_resolve adds it on demand.
 * Missing values are NaN and stay missing.
 */
#ifndef PFI_GROUPS_H
#define PFI_GROUPS_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"
#include "pfi/index.h"
#include "pfi/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The DRAM copy product [our reading, DESIGN §4]: DCGM 1005 × 204, both as fractions. */
#define PFI_DRAM_COPY_PRODUCT "dcgm_dram_active*dcgm_mem_copy_util"
/* Most feature columns. */
#define PFI_GROUPS_MAX_FEATURES 256

/* pfi_groups — the table. Everything is owned (pfi_groups_destroy). */
typedef struct pfi_groups {
    size_t n;       /* groups */
    char **names;   /* n names */
    char **classes; /* n classes; an entry is NULL when the class is missing */
    double *pfi;    /* n PFI values; NaN when undefined */
    size_t n_features;
    char **feature_names; /* n_features */
    double *features;     /* n × n_features row-major; NaN when missing */
    uint64_t source_hash; /* FNV-1a 64 of the bytes of every input file, in order read */
    /* private */
    size_t features_cap;
} pfi_groups;

/* pfi_groups_destroy — free g. NULL is a no-op. */
void pfi_groups_destroy(pfi_groups *g);

/*
 * pfi_groups_read_csv — read a groups CSV at path (see above) into *out (owned). pfi_column
 * NULL: "pfi", else "pfi_ratio". Errors: PFI_ERR_IO, PFI_ERR_EMPTY, PFI_ERR_MISSING_COLUMN
 * (no "group" or PFI column), PFI_ERR_VALUE (a PFI cell that is not a number or missing),
 * PFI_ERR_PARSE, PFI_ERR_LINE_TOO_LONG, PFI_ERR_LIMIT, PFI_ERR_NOMEM; diag names the place.
 */
pfi_error pfi_groups_read_csv(const char *path, const char *pfi_column, pfi_groups **out,
                              pfi_diag *diag);

/* pfi_groups_read_stream — as pfi_groups_read_csv from an open stream (borrowed). */
pfi_error pfi_groups_read_stream(FILE *stream, const char *name, const char *pfi_column,
                                 pfi_groups **out, pfi_diag *diag);

/*
 * pfi_groups_from_dataset — analyse the dataset directory dir (its manifest maps the columns)
 * with options o (NULL: defaults; o->draws is ignored: no CI is computed) and take the
 * features matching feature_glob (NULL: "dcgm_*") from each group's reference run. Groups
 * without a reference get missing features. Errors: those of pfi_manifest_load,
 * pfi_manifest_files, pfi_runs_read_csv and pfi_analyze; PFI_ERR_LIMIT (more than
 * PFI_GROUPS_MAX_FEATURES matching columns).
 */
pfi_error pfi_groups_from_dataset(const char *dir, const pfi_options *o, const char *feature_glob,
                                  pfi_groups **out, pfi_diag *diag);

/*
 * pfi_groups_from_store — analyse the groups of the run store at path db (opened read-only,
 * never created) with options o (NULL: defaults; no CI), only group when not NULL: PFI from
 * the usable runs (flags without PFI_RED_INVALID), features from the reference run's stored
 * features through pfi_featmap_apply (mapped names and the stored names). A group whose only
 * run is the reference has an undefined PFI (NaN) and its features. Errors: those of
 * pfi_store_open and pfi_store_read_runs, PFI_ERR_EMPTY (no runs, or none in group),
 * pfi_analyze's, PFI_ERR_LIMIT, PFI_ERR_NOMEM.
 */
pfi_error pfi_groups_from_store(const char *db, const pfi_options *o, const char *group,
                                pfi_groups **out, pfi_diag *diag);

/*
 * pfi_groups_create — an empty table of n rows (names NULL, classes NULL, PFI NaN, no
 * features) in *out (owned). The caller may store names from pfi_strdup (pfi/memory.h) in
 * g->names. Errors: PFI_ERR_NOMEM.
 */
pfi_error pfi_groups_create(size_t n, pfi_groups **out);

/*
 * pfi_groups_set_feature — set feature name of row to value, adding the column (missing in
 * every other row) when g lacks it. Errors: PFI_ERR_INVALID_ARGUMENT (row >= g->n, NULL name),
 * PFI_ERR_LIMIT (PFI_GROUPS_MAX_FEATURES columns), PFI_ERR_NOMEM.
 */
pfi_error pfi_groups_set_feature(pfi_groups *g, size_t row, const char *name, double value);

/*
 * pfi_groups_feature — the value of feature name in row (NaN when the column or the value is
 * missing). Pure.
 */
double pfi_groups_feature(const pfi_groups *g, size_t row, const char *name);

/*
 * pfi_groups_resolve — the index of feature spec in g: a column name, or "A*B" (added to g as
 * a new feature, the product of A and B, missing when either is). Errors:
 * PFI_ERR_MISSING_COLUMN (a name not in g), PFI_ERR_LIMIT, PFI_ERR_NOMEM.
 */
pfi_error pfi_groups_resolve(pfi_groups *g, const char *spec, size_t *index);

/*
 * pfi_groups_write_csv — write g as a groups CSV (group, job_class, pfi, features...) to f
 * (borrowed). Returns false when a write failed.
 */
bool pfi_groups_write_csv(const pfi_groups *g, FILE *f);

#ifdef __cplusplus
}
#endif

#endif
