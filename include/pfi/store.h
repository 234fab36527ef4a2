/*
 * pfi/store.h — the run store: one SQLite file (WAL journal), schema versioned with
 * PRAGMA user_version and migrated when opened for writing (PFI_STORE_WRITE).
 *
 * Schema v1: groups(name, job_class, gpus); runs(group, cap_w, power_w, power_se_w, power_n,
 * throughput, throughput_se, throughput_n, throughput_unit, power_field, energy_j, flags,
 * ingested_at) unique per (group, cap_w); features(run, name, value); sources(run, path,
 * reader, ingested_at). Every write is one transaction: an interrupted ingest leaves the
 * store as it was. Missing values are SQL NULL, never 0. SQLite keeps its own allocator:
 * pfi_replace_allocator (pfi/memory.h) does not reach it.
 */
#ifndef PFI_STORE_H
#define PFI_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pfi/error.h"
#include "pfi/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_STORE_SCHEMA_VERSION 1

typedef struct pfi_store pfi_store;

/* How a store is opened. The values are those of the former bool `create` (false, true). */
typedef enum pfi_store_mode {
    PFI_STORE_READ = 0, /* read-only (SQLITE_OPEN_READONLY): never creates, migrates or writes */
    PFI_STORE_WRITE = 1 /* read-write: creates the file and the schema, migrates an older one */
} pfi_store_mode;

/*
 * pfi_store_open — open the store at path. PFI_STORE_WRITE creates it when missing and
 * migrates its schema to PFI_STORE_SCHEMA_VERSION. PFI_STORE_READ leaves the file exactly as
 * it is (not one byte written: a reader works on a store it may not write) and fails on a
 * file that is not a pfi store at the current version. *out is owned (pfi_store_close).
 * Errors: PFI_ERR_IO (cannot open; not a pfi store, e.g. an empty file opened for reading;
 * newer schema; older schema opened for reading: open it once for writing; diag says why),
 * PFI_ERR_NOMEM. With PFI_STORE_READ the write calls below fail with PFI_ERR_IO.
 */
pfi_error pfi_store_open(const char *path, pfi_store_mode mode, pfi_store **out, pfi_diag *diag);

/* pfi_store_close — NULL is a no-op. The store runs in WAL mode while open; the last
 * connection to close puts the file back in rollback-journal mode, leaving no -wal or -shm
 * file beside it (a read-only reader of a WAL file would create both and keep them). */
void pfi_store_close(pfi_store *s);

/* One source file of a run. */
typedef struct pfi_store_source {
    const char *path;
    const char *reader; /* format name */
} pfi_store_source;

/* One GPU of a run: its identity (DESIGN §9: a GPU is (host, UUID)). */
typedef struct pfi_store_gpu {
    const char *name; /* the telemetry's entity name ("node-a/gpu0", "GPU-..."), not NULL */
    const char *host; /* NULL: not known */
    const char *uuid; /* NULL: the telemetry named none (an index-only file) */
} pfi_store_gpu;

/* A run to store. NaN = missing (stored as NULL). Strings borrowed. */
typedef struct pfi_store_run {
    const char *group;
    const char *job_class; /* NULL: keep the group's */
    long gpus;             /* 0: unknown */
    double cap_w;
    double power_w, power_se_w;
    size_t power_n;
    double throughput, throughput_se;
    size_t throughput_n;
    const char *throughput_unit;
    const char *power_field;
    double energy_j;
    unsigned flags; /* PFI_RED_* */
    size_t n_features;
    const char (*feature_name)[64];
    const double *feature_value;
    size_t n_sources;
    const pfi_store_source *sources;
    size_t n_gpu_ids; /* the run's GPUs, table run_gpus(run_id, name, host, uuid) */
    const pfi_store_gpu *gpu_ids;
} pfi_store_run;

/* Longest group name the store takes, in bytes. */
#define PFI_STORE_MAX_GROUP 256

/*
 * pfi_store_group_check — NULL when name can name a sweep group in the store, else a static
 * sentence saying what is expected: not empty or blanks only, no control characters (they
 * would reach a terminal in `pfi runs`), well-formed UTF-8 (JSON outputs are UTF-8), at most
 * PFI_STORE_MAX_GROUP bytes. Thread-safe.
 */
const char *pfi_store_group_check(const char *name);

/*
 * pfi_store_put_run — insert r, replacing a run of the same group and cap (then *replaced is
 * true), in one transaction. Errors: PFI_ERR_INVALID_ARGUMENT (group refused by
 * pfi_store_group_check, cap not finite and positive; diag says which), PFI_ERR_IO (SQLite failed:
 * diag has its message; nothing written).
 */
pfi_error pfi_store_put_run(pfi_store *s, const pfi_store_run *r, bool *replaced, pfi_diag *diag);

/*
 * pfi_store_find_run — *found is true when group holds a run whose feature named feature has
 * exactly value (feature NULL: whose cap_w is exactly value). A read, no transaction: what
 * a sweep asks to resume (pfi/sweep.h, pfi_store_sink). Errors: PFI_ERR_INVALID_ARGUMENT
 * (NULL group or found), PFI_ERR_IO (SQLite failed: diag has its message; *found false).
 */
pfi_error pfi_store_find_run(pfi_store *s, const char *group, const char *feature, double value,
                             bool *found, pfi_diag *diag);

/*
 * One stored run as pfi_store_each_run hands it over. Strings are borrowed: valid only during
 * the callback (NULL when the store holds none). A missing number is NaN (has_gpus false for
 * a missing GPU count). Units: W, tokens/s (or the run's throughput_unit), J.
 */
typedef struct pfi_store_row {
    const char *group, *job_class;
    bool has_gpus;
    long long gpus;
    double cap_w, power_w, power_se_w, throughput, throughput_se;
    unsigned flags; /* PFI_RED_* */
    const char *power_field, *throughput_unit;
    double energy_j;
    long long power_n, throughput_n; /* samples behind power, intervals behind throughput */
    long long group_id;              /* the sweep group's row in the store: same id, same group */
} pfi_store_row;

/* The callback of pfi_store_each_run: anything but PFI_OK stops the walk and is returned. */
typedef pfi_error (*pfi_store_row_fn)(void *ctx, const pfi_store_row *row);

/*
 * pfi_store_each_run — call fn once per stored run (group_filter NULL: all groups), ordered
 * by group name and cap descending, with the run's values as structs (no text in between).
 * Standard errors pass through pfi_se_rounded (rounding noise read as 0; also in the CSV and
 * JSON exports). *n_runs (may be NULL): runs handed over. Errors: PFI_ERR_IO (SQLite failed: diag
 * has its message), or the first error fn returned.
 */
pfi_error pfi_store_each_run(pfi_store *s, const char *group_filter, pfi_store_row_fn fn, void *ctx,
                             size_t *n_runs, pfi_diag *diag);

/*
 * pfi_store_export_csv — write every stored run as CSV (header: group,job_class,gpus,cap_w,
 * power_w,power_se_w,throughput,throughput_se,flags,power_field,throughput_unit,energy_j,
 * power_n,throughput_n) to f, ordered by group and cap descending; missing = empty cell.
 * When usable_only, a run with flags & PFI_RED_INVALID gets empty power (so analyze reports
 * it excluded). group_filter (NULL: all) restricts to one group. *n_runs: rows written.
 * Numbers are written in the C locale. Errors: PFI_ERR_IO.
 */
pfi_error pfi_store_export_csv(pfi_store *s, FILE *f, bool usable_only, const char *group_filter,
                               size_t *n_runs, pfi_diag *diag);

/*
 * pfi_store_export_json — every run (with features and sources) as a JSON array to f.
 * Errors: PFI_ERR_IO, PFI_ERR_NOMEM.
 */
pfi_error pfi_store_export_json(pfi_store *s, FILE *f, const char *group_filter, size_t *n_runs,
                                pfi_diag *diag);

/*
 * pfi_store_read_runs — append the stored runs (group filter: NULL all) to the runs table t
 * (pfi/runs.h) as one file named by the store's path, through pfi_runs_read_cells (values
 * from the SQL rows, no text in between): the runs pfi_store_export_csv with usable_only
 * writes, in its order, each named by its line there. Runs flagged PFI_RED_INVALID keep their
 * cap but no power, so analysis shows them excluded. Group names and job classes read as
 * the export's CSV reader read them (blanks around one without a comma, quote or line break
 * dropped). *n_runs (may be NULL): runs read. Errors: PFI_ERR_EMPTY (no runs; diag says so),
 * PFI_ERR_IO, those of pfi_runs_read_cells (e.g. PFI_ERR_VALUE for a negative power),
 * PFI_ERR_NOMEM.
 */
struct pfi_runs_table;
pfi_error pfi_store_read_runs(pfi_store *s, struct pfi_runs_table *t, const char *group_filter,
                              size_t *n_runs, pfi_diag *diag);

/*
 * pfi_store_run_features — the stored features of group's run at cap_w (exactly): *names
 * (*n entries of 64 bytes) and *values (*n; NaN where stored NULL), both owned by the caller
 * (pfi_free), in name order. A run without features, or no such run, gives *n = 0 (and NULL
 * arrays). Errors: PFI_ERR_INVALID_ARGUMENT, PFI_ERR_IO (SQLite; diag), PFI_ERR_NOMEM.
 */
pfi_error pfi_store_run_features(pfi_store *s, const char *group, double cap_w, char (**names)[64],
                                 double **values, size_t *n, pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
