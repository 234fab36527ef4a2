/*
 * pfi/manifest.h — the dataset manifest: a small JSON file beside a dataset's CSV files that
 * stores the column mapping, so `pfi analyze DIR` needs no flags.
 *
 * File name: PFI_MANIFEST_NAME in the dataset directory. Format (every key but "mapping"
 * optional; unknown keys are errors, so a typo is caught):
 *
 *   {
 *     "pfi_manifest": 1,
 *     "description": "Zeus NSDI'23 power-limit traces",
 *     "files": "summary_power_*.csv",            (glob in the directory; default "*.csv")
 *     "mapping": {
 *       "group": ["dataset", "network", "batch_size", "optimizer"],
 *       "cap": "power_limit", "cap_regex": null,
 *       "power": "average_power",  or  "energy": "gpu*_energy", "duration": "elapsed_time",
 *       "throughput": null,        or  "time": "time_per_epoch",
 *       "power_se": null, "throughput_se": null, "time_se": null,
 *       "gpus": null, "job_class": null
 *     },
 *     "noise_rel": null                           (default relative noise for the CI)
 *   }
 *
 * "group" may also be a single string. See pfi/runs.h for what each mapping field means.
 */
#ifndef PFI_MANIFEST_H
#define PFI_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/error.h"
#include "pfi/memory.h"
#include "pfi/runs.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_MANIFEST_NAME "pfi-dataset.json"
#define PFI_MANIFEST_VERSION 1

/* pfi_manifest — a parsed manifest; strings owned (pfi_manifest_clear; a string stored by the
 * caller comes from pfi_strdup, pfi/memory.h). */
typedef struct pfi_manifest {
    char *description; /* NULL when absent */
    char *files;       /* glob; "*.csv" when absent */
    pfi_mapping mapping;
    double noise_rel; /* meaningful when has_noise_rel */
    bool has_noise_rel;
} pfi_manifest;

/*
 * pfi_manifest_load — parse the manifest at path into *out (zeroed first; clear it after use,
 * also after an error). Errors: PFI_ERR_IO (cannot open), PFI_ERR_PARSE (not JSON, or
 * a key or value of the wrong kind; diag gives line and key), PFI_ERR_NOMEM.
 */
pfi_error pfi_manifest_load(const char *path, pfi_manifest *out, pfi_diag *diag);

/* pfi_manifest_clear — free what m owns and zero it. NULL is a no-op. */
void pfi_manifest_clear(pfi_manifest *m);

/*
 * pfi_manifest_files — the paths of dir's files matching m->files, sorted bytewise, in
 * *paths (an owned array of *n owned strings; pfi_free each, then the array). Errors:
 * PFI_ERR_EMPTY (nothing matches; diag says which pattern), PFI_ERR_IO, PFI_ERR_NOMEM.
 */
pfi_error pfi_manifest_files(const char *dir, const pfi_manifest *m, char ***paths, size_t *n,
                             pfi_diag *diag);

/*
 * pfi_dataset_read — read a whole dataset directory into t: its manifest (dir/
 * PFI_MANIFEST_NAME, parsed into *man, which the caller clears after use, also after an
 * error), then every file the manifest's pattern lists, in byte order, through its mapping.
 * Errors: those of pfi_manifest_load, pfi_manifest_files and pfi_runs_read_csv (diag names
 * the file); on an error t may hold the files read before it.
 */
pfi_error pfi_dataset_read(const char *dir, pfi_runs_table *t, pfi_manifest *man, pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
