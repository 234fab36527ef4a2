/*
 * pfi/runs.h — the runs table: one row per run (one job configuration at one power cap),
 * grouped into sweep groups (DESIGN §2).
 *
 * A CSV file with a header is read through a column mapping chosen by the caller (or by a
 * dataset manifest, see pfi/manifest.h). Columns are found by header name, never by
 * position. The mapping says:
 *   - group: one or more key columns; runs with equal key values in one file form a sweep
 *     group. A sweep group never spans files. "@file" names the file's base name, so a
 *     dataset with one group per file maps group = ["@file"].
 *   - cap: the power cap in W. With cap_regex, the cap is the first parenthesised
 *     subexpression of a POSIX extended regular expression matched against the cell
 *     (e.g. "_([0-9]+)$" on "__GlobalPowerLimitOptimizer_275").
 *   - power, in W, directly — or energy in J divided by duration in s. power and energy may be
 *     shell-style globs ("gpu*_energy"): matching columns are summed (whole-job power).
 *   - throughput, in any unit of work per second, directly — or time, seconds per fixed unit
 *     of work, with throughput = 1 / time.
 *   - optional: power_se (W), throughput_se (same unit as throughput) or time_se (s), gpus,
 *     job_class.
 *
 * PFI uses only relative changes of power and throughput against the reference run, so
 * per-GPU power and whole-job power (and per-GPU or whole-job throughput) give the same PFI,
 * as long as one group uses one convention.
 *
 * Missing cells ("", "N/A", "[N/A]", ... see pfi/value.h) are kept as missing: the run stays
 * in the table with the field's validity flag cleared, and the PFI reports it as excluded
 * with the reason. Non-numeric, negative or non-finite values are errors that name the file,
 * line and column; so are implausible ones: a cap above PFI_RUNS_MAX_CAP_W, a power (the row's
 * sum, or energy / duration) above PFI_RUNS_MAX_POWER_W.
 */
#ifndef PFI_RUNS_H
#define PFI_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pfi/error.h"
#include "pfi/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most key columns in a mapping. */
#define PFI_MAX_GROUP_COLUMNS 16
/* Most data rows read from one file; more is PFI_ERR_LIMIT. */
#define PFI_RUNS_MAX_ROWS 10000000
/* Largest plausible power cap, W (a GPU's cap, or a node's: 100 kW). */
#define PFI_RUNS_MAX_CAP_W 1e5
/* Largest plausible run power, W (a whole job's: 1 GW). */
#define PFI_RUNS_MAX_POWER_W 1e9
/* The pseudo-column naming a file's base name. */
#define PFI_FILE_COLUMN "@file"

/*
 * pfi_mapping — which columns hold what. Every string is owned by the mapping (allocated by
 * libpfi: set them with pfi_mapping_set, or store a pfi_strdup copy; pfi_mapping_clear frees
 * them); NULL means "not mapped". Zero-initialise, or use pfi_mapping_clear, before first use.
 */
typedef struct pfi_mapping {
    char *group[PFI_MAX_GROUP_COLUMNS];
    size_t n_group;
    char *cap;           /* required */
    char *cap_regex;     /* optional POSIX ERE with one capture group */
    char *power;         /* W; glob, summed */
    char *energy;        /* J; glob, summed; needs duration */
    char *duration;      /* s; divides energy */
    char *throughput;    /* work/s */
    char *time;          /* s per unit of work; throughput = 1/time */
    char *power_se;      /* W */
    char *throughput_se; /* work/s */
    char *time_se;       /* s; se(throughput) = time_se / time^2 */
    char *gpus;          /* GPU count of the job */
    char *job_class;     /* job class (dense, moe-pt, ...) */
} pfi_mapping;

/* pfi_mapping_clear — free every string of m and zero it. NULL is a no-op. */
void pfi_mapping_clear(pfi_mapping *m);

/*
 * pfi_mapping_set — replace one field (by its name above: "cap", "power", "time", ...; "group"
 * replaces the whole key list with the comma-separated names in value) with a copy of value
 * (NULL unmaps). Errors: PFI_ERR_INVALID_ARGUMENT (unknown field, too many group columns),
 * PFI_ERR_NOMEM.
 */
pfi_error pfi_mapping_set(pfi_mapping *m, const char *field, const char *value);

/*
 * pfi_mapping_get — the column (borrowed) mapped to field ("cap", "power"...; not "group"),
 * NULL when unmapped or the field is unknown.
 */
const char *pfi_mapping_get(const pfi_mapping *m, const char *field);

/*
 * pfi_mapping_check — PFI_OK when m maps the required fields: at least one group column,
 * cap, exactly one of power / energy (energy also needs duration, or falls back to time),
 * exactly one of throughput / time, at most one of throughput_se / time_se, and time_se only
 * with time. Otherwise PFI_ERR_INVALID_ARGUMENT and why in msg
 * (size len).
 */
pfi_error pfi_mapping_check(const pfi_mapping *m, char *msg, size_t len);

/* Validity flags of a run's fields (pfi_run.valid). */
enum {
    PFI_RUN_CAP = 1u << 0,
    PFI_RUN_POWER = 1u << 1,
    PFI_RUN_THROUGHPUT = 1u << 2,
    PFI_RUN_POWER_SE = 1u << 3,
    PFI_RUN_THROUGHPUT_SE = 1u << 4,
    PFI_RUN_GPUS = 1u << 5
};

/* pfi_run — one row. A field is meaningful only when its flag is set in valid; a missing
 * field also holds NaN. */
typedef struct pfi_run {
    long line;            /* 1-based line of the row in its file */
    double cap_w;         /* power cap, W */
    double power_w;       /* steady-state power (whole job or per GPU), W */
    double throughput;    /* work per second (tokens/s, samples/s, epochs/s...) */
    double power_se_w;    /* standard error of power_w, W */
    double throughput_se; /* standard error of throughput, same unit */
    double gpus;          /* GPU count */
    unsigned valid;       /* PFI_RUN_* flags */
} pfi_run;

/*
 * pfi_group — one sweep group: the runs of one configuration in one file, sorted by cap
 * descending (runs with a missing cap last), then by line. All pointers are owned by the
 * table.
 */
typedef struct pfi_group {
    size_t file_index;            /* index into pfi_runs_table.files */
    size_t n_key;                 /* number of key columns */
    const char *const *key_names; /* n_key column names ("@file" included as given) */
    char **key_values;            /* n_key values, as written in the file */
    char *job_class;              /* NULL when unmapped or missing in every run */
    pfi_run *runs;
    size_t n_runs;
} pfi_group;

/*
 * pfi_runs_table — every run read so far. Fields are read-only for callers.
 * Groups appear file by file, in order of each group's first row in its file.
 */
typedef struct pfi_runs_table {
    char **files; /* n_files paths as given to pfi_runs_read_csv */
    size_t n_files;
    pfi_group *groups;
    size_t n_groups;
    size_t n_runs; /* total runs over all groups */
    /* private */
    char ***key_names_by_file;
    size_t *n_key_by_file;
    size_t groups_cap;
} pfi_runs_table;

/* pfi_runs_table_create — an empty table in *out (owned; pfi_runs_table_destroy). */
pfi_error pfi_runs_table_create(pfi_runs_table **out);

/* pfi_runs_table_destroy — free t and everything it owns. NULL is a no-op. */
void pfi_runs_table_destroy(pfi_runs_table *t);

/*
 * pfi_runs_read_csv — read the runs of one CSV file at path through mapping m and append its
 * sweep groups to t. name (NULL: path) is what diagnostics and pfi_runs_table.files show.
 * On error nothing is appended and diag (may be NULL) names file, line, column and the
 * expected value. Errors: PFI_ERR_IO, PFI_ERR_EMPTY (no header or no data row),
 * PFI_ERR_MISSING_COLUMN, PFI_ERR_VALUE, PFI_ERR_PARSE, PFI_ERR_LINE_TOO_LONG, PFI_ERR_LIMIT,
 * PFI_ERR_INVALID_ARGUMENT (mapping incomplete or cap_regex invalid), PFI_ERR_NOMEM.
 */
pfi_error pfi_runs_read_csv(pfi_runs_table *t, const char *path, const char *name,
                            const pfi_mapping *m, pfi_diag *diag);

/*
 * pfi_runs_read_stream — as pfi_runs_read_csv, from an open stream (borrowed), e.g. stdin or
 * fmemopen() memory; name is required and used as the file name ("@file" is its base name).
 */
pfi_error pfi_runs_read_stream(pfi_runs_table *t, FILE *stream, const char *name,
                               const pfi_mapping *m, pfi_diag *diag);

/*
 * pfi_runs_cell — one cell of a table held as data rather than CSV text (pfi_runs_read_cells).
 * A column the mapping reads as text (a group key, the job class, the cap under cap_regex)
 * takes text (NULL reads as an empty cell: missing); a number column takes value, in the
 * column's unit, NaN when missing (an infinity is refused as a cell that is not a number
 * is). The other member is ignored. Strings borrowed.
 */
typedef struct pfi_runs_cell {
    const char *text;
    double value;
} pfi_runs_cell;

/*
 * pfi_runs_read_cells — as pfi_runs_read_csv, from a table in memory instead of a CSV file:
 * header[n_columns] names the columns, cells[n_rows * n_columns] holds the rows (row-major),
 * line[n_rows] (NULL: 2, 3, ... as below a header line) gives each row the line that
 * diagnostics and pfi_run.line name. Every row passes the checks a CSV row passes (numbers
 * not negative, a cap > 0, an integer GPU count, one job class and GPU count per group...)
 * with the same messages, a value cell's number shown as "%.17g" writes it; nothing is
 * formatted to be parsed back. name is the file name of diagnostics and of
 * pfi_runs_table.files ("@file" is its base name). All arguments borrowed. On error nothing
 * is appended. Errors: PFI_ERR_INVALID_ARGUMENT (NULL t, name, m, header or cells; mapping
 * incomplete or cap_regex invalid), PFI_ERR_EMPTY (no row), PFI_ERR_MISSING_COLUMN,
 * PFI_ERR_PARSE (a mapped name twice in header), PFI_ERR_VALUE, PFI_ERR_LIMIT,
 * PFI_ERR_NOMEM.
 */
pfi_error pfi_runs_read_cells(pfi_runs_table *t, const char *name, const char *const *header,
                              size_t n_columns, const pfi_runs_cell *cells, const long *line,
                              size_t n_rows, const pfi_mapping *m, pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
