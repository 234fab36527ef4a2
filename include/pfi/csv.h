/*
 * pfi/csv.h — a bounded CSV record reader (RFC 4180 quoting, via libcsv).
 *
 * Reads one physical line at a time into a fixed buffer of PFI_CSV_MAX_LINE bytes, so a
 * hostile file with an endless line is rejected in bounded memory, and every record carries
 * the 1-based line number it starts on. Fields are trimmed of surrounding blanks; a UTF-8 byte
 * order mark before the header is dropped; blank lines are skipped; CRLF and LF both end a
 * line. A quoted field may span lines, up to PFI_CSV_MAX_RECORD bytes per record.
 */
#ifndef PFI_CSV_H
#define PFI_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest physical line accepted, in bytes, line terminator included. */
#define PFI_CSV_MAX_LINE 65536
/* Largest record (all fields of one row together), in bytes. */
#define PFI_CSV_MAX_RECORD (1024 * 1024)
/* Most fields in one record. */
#define PFI_CSV_MAX_FIELDS 4096

typedef struct pfi_csv_reader pfi_csv_reader;

/*
 * pfi_csv_open — open path for reading records. name (may be NULL: path is used) is the
 * name reported in diagnostics. On success *out is an owned reader (pfi_csv_close).
 * Errors: PFI_ERR_IO (cannot open; diag says why), PFI_ERR_NOMEM.
 */
pfi_error pfi_csv_open(const char *path, const char *name, pfi_csv_reader **out, pfi_diag *diag);

/*
 * pfi_csv_open_stream — read records from an open stream (borrowed: not closed by
 * pfi_csv_close), e.g. stdin or fmemopen() memory. name is used in diagnostics.
 */
pfi_error pfi_csv_open_stream(FILE *stream, const char *name, pfi_csv_reader **out,
                              pfi_diag *diag);

/*
 * pfi_csv_next — read the next record. On PFI_OK with *eof false, fields[0..*n_fields) are
 * NUL-terminated strings borrowed from the reader, valid until the next call, lens their
 * lengths, *line the line the record starts on. At the end of input returns PFI_OK with
 * *eof true. Errors: PFI_ERR_LINE_TOO_LONG, PFI_ERR_LIMIT (record or field count),
 * PFI_ERR_PARSE (bad quoting), PFI_ERR_IO, PFI_ERR_NOMEM; diag names the line. After an error
 * the reader must only be closed.
 */
pfi_error pfi_csv_next(pfi_csv_reader *r, const char *const **fields, const size_t **lens,
                       size_t *n_fields, long *line, bool *eof, pfi_diag *diag);

/* pfi_csv_close — release r and close its file (if opened by pfi_csv_open). NULL is a no-op. */
void pfi_csv_close(pfi_csv_reader *r);

#ifdef __cplusplus
}
#endif

#endif
