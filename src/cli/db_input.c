/*
 * Load the runs of a run store into a runs table, for `pfi analyze --db`.
 */
#define _GNU_SOURCE /* open_memstream */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/runs.h"
#include "pfi/store.h"

/* The store is exported as CSV (pfi_store_export_csv, invalid runs with empty power) and
 * read back through the ordinary runs reader, so analyze sees one table shape. */
int cli_load_db(const char *db, pfi_runs_table *t)
{
    return cli_load_db_group(db, NULL, t);
}

int cli_load_db_group(const char *db, const char *group, pfi_runs_table *t)
{
    pfi_store *st = NULL;
    pfi_diag d;
    pfi_error e = pfi_store_open(db, false, &st, &d);
    if (e != PFI_OK)
        return cli_report(e, &d);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    size_t n = 0;
    e = m ? pfi_store_export_csv(st, m, true, group, &n, &d) : PFI_ERR_NOMEM;
    if (m != NULL)
        fclose(m);
    pfi_store_close(st);
    if (e != PFI_OK) {
        free(buf);
        return cli_report(e, &d);
    }
    if (n == 0) {
        free(buf);
        cli_error("%s: the store holds no runs (use 'pfi ingest')", db);
        return PFI_EXIT_DATA;
    }
    pfi_mapping map = {0};
    static const char *const pairs[][2] = {
        {"group", "group"}, {"cap", "cap_w"}, {"power", "power_w"},
        {"power_se", "power_se_w"}, {"throughput", "throughput"},
        {"throughput_se", "throughput_se"}, {"gpus", "gpus"}, {"job_class", "job_class"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0] && e == PFI_OK; i++)
        e = pfi_mapping_set(&map, pairs[i][0], pairs[i][1]);
    FILE *f = e == PFI_OK ? fmemopen(buf, len, "r") : NULL;
    if (f == NULL) {
        pfi_mapping_clear(&map);
        free(buf);
        cli_error("out of memory");
        return PFI_EXIT_INTERNAL;
    }
    e = pfi_runs_read_stream(t, f, db, &map, &d);
    fclose(f);
    pfi_mapping_clear(&map);
    free(buf);
    return e == PFI_OK ? PFI_EXIT_OK : cli_report(e, &d);
}
