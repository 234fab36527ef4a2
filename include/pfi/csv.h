/*
 * pfi/csv.h — a bounded CSV record reader (RFC 4180 quoting, via libcsv), and the one CSV
 * field writer (the same quoting) that pfi's CSV outputs share.
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
pfi_error pfi_csv_open_stream(FILE *stream, const char *name, pfi_csv_reader **out, pfi_diag *diag);

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

/*
 * Writing a field (RFC 4180 §2 quoting). A field that needs quotes is written between double
 * quotes with each double quote inside doubled: the text  say "hi"  becomes  "say ""hi""".
 * A field needs quotes when it holds a comma, a double quote, CR or LF, or when it begins or
 * ends with a blank (space or tab): readers that trim unquoted fields (this one does) keep the
 * blanks of a quoted one. Every other field, the empty one included, is written as it is.
 * Quoting more often than RFC 4180 requires is still the same field to a reader.
 */

/* pfi_csv_field_needs_quotes — true when s (NUL-terminated, not NULL) is quoted by the rule
 * above. */
bool pfi_csv_field_needs_quotes(const char *s);

/*
 * pfi_csv_format_field — s as one CSV field (quoted when it needs it; no separator) into
 * dst[0..size), NUL-terminated and cut to fit when size > 0; dst may be NULL when size is 0.
 * Returns the field's length in bytes, the NUL not counted, whether or not it fitted (as
 * snprintf does): a buffer of the return value + 1 bytes holds it whole. s NULL is the empty
 * field. Allocates nothing; thread-safe.
 */
size_t pfi_csv_format_field(char *dst, size_t size, const char *s);

/*
 * pfi_csv_write_field — s as one CSV field (quoted when it needs it; no separator) on f. s NULL
 * is the empty field: nothing is written. Returns false when a write failed (ferror(f) is then
 * set); a caller writing many fields may check ferror(f) once at the end instead.
 */
bool pfi_csv_write_field(FILE *f, const char *s);

#ifdef __cplusplus
}
#endif

#endif
