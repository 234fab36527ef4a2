/*
 * Load the runs of a run store into a runs table, for `pfi analyze --db`.
 */
#include "cli.h"
#include "pfi/runs.h"
#include "pfi/store.h"

int cli_load_db(const char *db, pfi_runs_table *t)
{
    return cli_load_db_group(db, NULL, t);
}

/* The library reads the store into the runs table (pfi_store_read_runs: invalid runs keep
 * their cap without power), so analyze sees one table shape. */
int cli_load_db_group(const char *db, const char *group, pfi_runs_table *t)
{
    pfi_store *st = NULL;
    pfi_diag d;
    pfi_error e = pfi_store_open(db, PFI_STORE_READ, &st, &d);
    if (e != PFI_OK)
        return cli_report(e, &d);
    pfi_diag_clear(&d);
    e = pfi_store_read_runs(st, t, group, NULL, &d);
    pfi_store_close(st);
    if (e == PFI_ERR_EMPTY) {
        cli_error("%s: %s", db, d.message);
        return PFI_EXIT_DATA;
    }
    return e == PFI_OK ? PFI_EXIT_OK : cli_report(e, &d);
}
