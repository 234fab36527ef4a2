/*
 * Loading the analysed groups table for pfi stats / fit / predict: a dataset directory (the
 * PFI is computed and the features read from the reference runs), a run store (an SQLite
 * file: the same, features mapped by the feature table) or a groups CSV.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "pfi/fit.h"
#include "pfi/groups.h"

int cli_load_model(const char *path, pfi_fit_model **out)
{
    *out = NULL;
    pfi_diag d;
    pfi_diag_clear(&d);
    struct stat st;
    if (strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        pfi_error e = pfi_fit_model_load(path, out, &d);
        return e == PFI_OK ? PFI_EXIT_OK : cli_report(e, &d);
    }
    if (strcmp(path, "-") != 0 && stat(path, &st) != 0) { /* the reader's own message */
        pfi_error e = pfi_fit_model_load(path, out, &d);
        return e == PFI_OK ? PFI_EXIT_OK : cli_report(e, &d);
    }
    size_t len = 0;
    char *text = cli_read_text(path, 64u << 20, &len);
    if (text == NULL) {
        cli_error("%s: %s", path, cli_input_why());
        return PFI_EXIT_DATA;
    }
    pfi_error e = pfi_fit_model_load_buffer(text, len, out, &d);
    free(text);
    if (e != PFI_OK) {
        snprintf(d.file, sizeof d.file, "%s", path);
        return cli_report(e, &d);
    }
    return PFI_EXIT_OK;
}

int cli_load_groups(const char *input, const char *pfi_column, const char *feature_glob,
                    pfi_groups **out)
{
    struct stat st;
    pfi_diag d;
    pfi_diag_clear(&d);
    bool is_stdin = strcmp(input, "-") == 0; /* "-": a groups CSV on stdin, as elsewhere */
    if (!is_stdin && stat(input, &st) != 0) {
        cli_error("%s: no such file or directory", input);
        return PFI_EXIT_DATA;
    }
    if (is_stdin || (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))) { /* a pipe: bounded */
        FILE *sp;
        int rc = cli_input_spool(NULL, input, &sp);
        if (rc != PFI_EXIT_OK || sp == NULL)
            return rc != PFI_EXIT_OK ? rc : PFI_EXIT_DATA;
        pfi_error e = pfi_groups_read_stream(sp, is_stdin ? "(stdin)" : input, pfi_column, out, &d);
        fclose(sp);
        return e == PFI_OK ? PFI_EXIT_OK : cli_report(e, &d);
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
