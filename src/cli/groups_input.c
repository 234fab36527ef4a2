/*
 * Loading the analysed groups table for pfi stats / fit / predict: a dataset directory (the
 * PFI is computed and the features read from the reference runs), a run store (an SQLite
 * file: the same, features mapped by the feature table) or a groups CSV.
 */
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "pfi/groups.h"

int cli_load_groups(const char *input, const char *pfi_column, const char *feature_glob,
                    pfi_groups **out)
{
    struct stat st;
    pfi_diag d;
    pfi_diag_clear(&d);
    if (stat(input, &st) != 0) {
        cli_error("%s: no such file or directory", input);
        return PFI_EXIT_DATA;
    }
    /* An SQLite database starts with this 16-byte header (sqlite.org/fileformat.html). */
    char head[16] = {0};
    FILE *f = S_ISDIR(st.st_mode) ? NULL : fopen(input, "rb");
    bool sqlite = f != NULL && fread(head, 1, sizeof head, f) == sizeof head &&
                  memcmp(head, "SQLite format 3", 16) == 0;
    if (f != NULL)
        fclose(f);
    pfi_error e = S_ISDIR(st.st_mode) ? pfi_groups_from_dataset(input, NULL, feature_glob, out, &d)
                  : sqlite            ? pfi_groups_from_store(input, NULL, NULL, out, &d)
                                      : pfi_groups_read_csv(input, pfi_column, out, &d);
    if (e != PFI_OK)
        return cli_report(e, &d);
    return PFI_EXIT_OK;
}
