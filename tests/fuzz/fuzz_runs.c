/*
 * Fuzz the runs-table reader (pfi/runs.h) and the PFI of every group it forms (pfi/index.h).
 *
 * Input layout: byte 0 selects the mapping and a few options, the rest is the CSV text.
 *   (byte0 & 0x1f) % 6   the column mapping (see mappings[] below: direct power +
 *               throughput; the Zeus NSDI'23 columns; energy glob "gpu*_energy" / duration /
 *               time; the same with cap_regex "_([0-9]+)$" on the JIT profile's window_name;
 *               standard-error, GPU and job-class columns with throughput_se; the same with
 *               time_se)
 *   byte0 & 0x20   read the CSV a second time as another file (groups never span files)
 *   byte0 & 0x40   the GSL normal generator instead of the default one
 *   byte0 & 0x80   noise_rel = 0.05, so groups without standard-error columns get a CI too
 * Everything else is pfi_options_init's default, with draws = 50.
 *
 * Invariants checked (abort on violation):
 *   - on success the table is consistent: n_runs is the sum of the groups' runs, every group
 *     is non-empty, sorted by cap descending with missing caps last, then by line;
 *   - on error nothing was appended to the table, and diag names the file;
 *   - per group: ratio is NaN or finite, n_ratio <= n_used <= n_points;
 *   - CI: ci_draws <= 50, ci_undefined <= ci_draws, a ci_note exactly when no CI.
 * Contract checks (documented behaviour, not just memory safety):
 *   - every valid field of a run is a finite number >= 0 (runs.h: non-finite and negative
 *     values are errors; this covers derived values: summed power, energy / duration,
 *     1 / time, time_se / time^2);
 *   - undefined_reason is set exactly when ratio is NaN (index.h), and the label is
 *     undefined exactly then;
 *   - a CI, when available, is finite with ci_lo <= ci_median <= ci_hi;
 *   - grouping: the CSV is read again with pfi_csv_next, and every run of a group must come
 *     from a row whose key cells are exactly the group's key_values (runs with different
 *     keys never share a group; a key value is reported as written).
 * Everything is destroyed at the end (LeakSanitizer checks).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "pfi/csv.h"
#include "pfi/index.h"
#include "pfi/runs.h"

enum { DRAWS = 50 };

typedef struct field_value {
    const char *field, *value;
} field_value;

static const field_value mappings[][10] = {
    {{"group", "job"}, {"cap", "cap"}, {"power", "power"}, {"throughput", "throughput"}},
    {{"group", "dataset,network,batch_size,optimizer"},
     {"cap", "power_limit"},
     {"power", "average_power"},
     {"time", "time_per_epoch"}},
    {{"group", "@file"},
     {"cap", "cap"},
     {"energy", "gpu*_energy"},
     {"duration", "elapsed_time"},
     {"time", "elapsed_time"}},
    {{"group", "@file"},
     {"cap", "window_name"},
     {"cap_regex", "_([0-9]+)$"},
     {"energy", "gpu*_energy"},
     {"duration", "elapsed_time"},
     {"time", "elapsed_time"}},
    {{"group", "job,@file"},
     {"cap", "cap"},
     {"power", "power"},
     {"throughput", "throughput"},
     {"power_se", "power_se"},
     {"throughput_se", "throughput_se"},
     {"gpus", "gpus"},
     {"job_class", "class"}},
    {{"group", "job"},
     {"cap", "cap"},
     {"power", "gpu*_power"},
     {"time", "time"},
     {"power_se", "power_se"},
     {"time_se", "time_se"},
     {"job_class", "class"}},
};
enum { N_MAPPINGS = sizeof mappings / sizeof mappings[0] };

static void check_table(const pfi_runs_table *t)
{
    size_t total = 0;
    for (size_t i = 0; i < t->n_groups; i++) {
        const pfi_group *g = &t->groups[i];
        if (g->n_runs == 0 || g->runs == NULL || g->file_index >= t->n_files)
            abort();
        if (g->n_key == 0 || g->key_names == NULL || g->key_values == NULL)
            abort();
        for (size_t k = 0; k < g->n_key; k++)
            if (g->key_names[k] == NULL || g->key_values[k] == NULL)
                abort();
        total += g->n_runs;
        for (size_t j = 0; j < g->n_runs; j++) {
            const pfi_run *r = &g->runs[j];
            if (r->line < 2) /* line 1 at least is the header */
                abort();
            const struct {
                unsigned flag;
                double v;
            } fields[] = {{PFI_RUN_CAP, r->cap_w},
                          {PFI_RUN_POWER, r->power_w},
                          {PFI_RUN_THROUGHPUT, r->throughput},
                          {PFI_RUN_POWER_SE, r->power_se_w},
                          {PFI_RUN_THROUGHPUT_SE, r->throughput_se},
                          {PFI_RUN_GPUS, r->gpus}};
            for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
                if (!(r->valid & fields[k].flag))
                    continue;
                if (fields[k].v < 0 || !isfinite(fields[k].v))
                    abort();
            }
            if (j > 0) {
                const pfi_run *p = &g->runs[j - 1];
                bool pc = p->valid & PFI_RUN_CAP, rc = r->valid & PFI_RUN_CAP;
                if (!pc && rc)
                    abort(); /* missing caps last */
                if (pc && rc && p->cap_w < r->cap_w)
                    abort(); /* cap descending */
                if (pc == rc && (!pc || p->cap_w == r->cap_w) && p->line >= r->line)
                    abort(); /* then by line */
            }
        }
    }
    if (total != t->n_runs)
        abort();
}

static void check_result(const pfi_result *r)
{
    if (!(isnan(r->ratio) || isfinite(r->ratio)))
        abort();
    if (r->n_ratio > r->n_used || r->n_used > r->n_points)
        abort();
    if (r->ci_draws > DRAWS || r->ci_undefined > r->ci_draws)
        abort();
    if (r->ci_available != (r->ci_note == NULL))
        abort();
    if (isnan(r->ratio) != (r->undefined_reason != NULL))
        abort();
    if (isnan(r->ratio) != (r->label == PFI_LABEL_UNDEFINED))
        abort();
    if (r->ci_available) {
        if (!isfinite(r->ci_lo) || !isfinite(r->ci_median) || !isfinite(r->ci_hi))
            abort();
        if (!(r->ci_lo <= r->ci_median && r->ci_median <= r->ci_hi))
            abort();
    }
}

/* One data row of the oracle: its line and its key cells. */
typedef struct key_row {
    long line;
    char **cells;
} key_row;

/*
 * The grouping oracle: re-read the CSV independently of the runs reader and check that every
 * run of file file_index sits in a group whose key_values equal its row's key cells.
 */
static void check_groups(const pfi_runs_table *t, size_t file_index, const uint8_t *data,
                         size_t size, const char *base, const pfi_mapping *m)
{
    FILE *f = fuzz_stream_or_empty(data, size);
    if (f == NULL)
        return;
    pfi_csv_reader *csv = NULL;
    if (pfi_csv_open_stream(f, "oracle", &csv, NULL) != PFI_OK) {
        fclose(f);
        return;
    }
    const char *const *fields;
    const size_t *lens;
    size_t n;
    long line;
    bool eof;
    long col[PFI_MAX_GROUP_COLUMNS];
    key_row *rows = NULL;
    size_t n_rows = 0, cap = 0;
    /* the runs reader succeeded on the same bytes, so this reader must too */
    if (pfi_csv_next(csv, &fields, &lens, &n, &line, &eof, NULL) != PFI_OK || eof)
        abort();
    for (size_t k = 0; k < m->n_group; k++) {
        col[k] = -1;
        if (strcmp(m->group[k], PFI_FILE_COLUMN) == 0)
            continue;
        for (size_t i = 0; i < n; i++)
            if (strcmp(fields[i], m->group[k]) == 0)
                col[k] = (long)i;
        if (col[k] < 0)
            abort();
    }
    for (;;) {
        if (pfi_csv_next(csv, &fields, &lens, &n, &line, &eof, NULL) != PFI_OK)
            abort();
        if (eof)
            break;
        if (n_rows == cap) {
            cap = cap ? 2 * cap : 64;
            key_row *p = realloc(rows, cap * sizeof *p);
            if (p == NULL)
                abort();
            rows = p;
        }
        key_row *kr = &rows[n_rows++];
        kr->line = line;
        kr->cells = calloc(m->n_group, sizeof *kr->cells);
        if (kr->cells == NULL)
            abort();
        for (size_t k = 0; k < m->n_group; k++) {
            const char *cell = col[k] < 0 ? base : fields[col[k]];
            if ((kr->cells[k] = strdup(cell)) == NULL)
                abort();
        }
    }
    pfi_csv_close(csv);
    fclose(f);

    size_t runs_seen = 0;
    for (size_t i = 0; i < t->n_groups; i++) {
        const pfi_group *g = &t->groups[i];
        if (g->file_index != file_index)
            continue;
        if (g->n_key != m->n_group)
            abort();
        for (size_t j = 0; j < g->n_runs; j++) {
            /* rows are in line order: binary search */
            size_t lo = 0, hi = n_rows;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (rows[mid].line < g->runs[j].line)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == n_rows || rows[lo].line != g->runs[j].line)
                abort();
            for (size_t k = 0; k < g->n_key; k++)
                if (strcmp(rows[lo].cells[k], g->key_values[k]) != 0)
                    abort();
            runs_seen++;
        }
    }
    if (runs_seen != n_rows)
        abort();
    for (size_t r = 0; r < n_rows; r++) {
        for (size_t k = 0; k < m->n_group; k++)
            free(rows[r].cells[k]);
        free(rows[r].cells);
    }
    free(rows);
}

static pfi_error read_once(pfi_runs_table *t, const uint8_t *data, size_t size, const char *name,
                           const pfi_mapping *m)
{
    FILE *f = fuzz_stream_or_empty(data, size);
    if (f == NULL)
        return PFI_ERR_IO;
    size_t n_files = t->n_files, n_groups = t->n_groups, n_runs = t->n_runs;
    pfi_diag diag;
    pfi_error e = pfi_runs_read_stream(t, f, name, m, &diag);
    fclose(f);
    if (e != PFI_OK) {
        /* nothing appended on error */
        if (t->n_files != n_files || t->n_groups != n_groups || t->n_runs != n_runs)
            abort();
        if (strcmp(diag.file, name) != 0 || diag.message[0] == '\0')
            abort();
    } else {
        if (t->n_files != n_files + 1 || t->n_groups <= n_groups || t->n_runs <= n_runs)
            abort();
        const char *slash = strrchr(name, '/');
        check_groups(t, n_files, data, size, slash ? slash + 1 : name, m);
    }
    return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t sel = data[0];
    data++;
    size--;

    pfi_mapping m;
    memset(&m, 0, sizeof m);
    const field_value *fv = mappings[(sel & 0x1f) % N_MAPPINGS];
    for (size_t i = 0; i < 10 && fv[i].field != NULL; i++)
        if (pfi_mapping_set(&m, fv[i].field, fv[i].value) != PFI_OK)
            abort();
    char msg[256];
    if (pfi_mapping_check(&m, msg, sizeof msg) != PFI_OK)
        abort(); /* every mapping above is complete */

    pfi_runs_table *t = NULL;
    if (pfi_runs_table_create(&t) != PFI_OK)
        abort();
    read_once(t, data, size, "fuzz/first.csv", &m);
    if (sel & 0x20)
        read_once(t, data, size, "fuzz/second.csv", &m);
    check_table(t);

    pfi_options o;
    pfi_options_init(&o);
    o.draws = DRAWS;
    o.threads = 1;
    if (sel & 0x40)
        o.rng = PFI_RNG_GSL;
    if (sel & 0x80)
        o.noise_rel = 0.05;
    double work[DRAWS];
    for (size_t i = 0; i < t->n_groups; i++) {
        pfi_result r;
        pfi_error e = pfi_group_compute(&t->groups[i], &o, &r);
        if (e == PFI_OK)
            e = pfi_result_ci(&r, &o, (uint64_t)i, work);
        if (e != PFI_OK && e != PFI_ERR_NOMEM)
            abort();
        if (e == PFI_OK)
            check_result(&r);
        pfi_result_clear(&r);
    }

    pfi_runs_table_destroy(t);
    pfi_mapping_clear(&m);
    return 0;
}
