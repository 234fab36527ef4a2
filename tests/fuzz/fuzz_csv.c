/*
 * Fuzz the bounded CSV reader (pfi/csv.h): the bytes are a whole CSV stream, opened with
 * fmemopen() and read with pfi_csv_next until the end or the first error.
 *
 * Invariants checked (abort on violation):
 *   - every record has 1 <= n_fields <= PFI_CSV_MAX_FIELDS;
 *   - each field is NUL-terminated at lens[i] and holds no NUL before it (the reader rejects
 *     NUL bytes), and all fields of a record fit in PFI_CSV_MAX_RECORD;
 *   - record line numbers are >= 1 and non-decreasing (strictly increasing, in fact: a
 *     record starts after the line the previous one started on);
 *   - an error code is one of those pfi_csv_next documents, and its diag names a line;
 *   - after the end, pfi_csv_next keeps answering eof;
 *   - *line is the line the record starts on (csv.h), as a small model of the input finds
 *     it: blank lines are skipped, a newline inside quotes does not end a record.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "pfi/csv.h"

/*
 * The model: the line on which the next record starts, scanning from *pos (on *line_no);
 * 0 when no record is left. A record starts on the first line that is not blank (spaces,
 * tabs, CR) outside a record, and ends at the first newline outside quotes. Only meaningful
 * while the input is well-formed, i.e. up to the reader's first error.
 */
static long model_next_start(const uint8_t *data, size_t size, size_t *pos, long *line_no)
{
    size_t i = *pos;
    long start = 0;
    bool quoted = false;
    while (i < size) {
        /* one physical line: [i, end) plus its '\n' */
        size_t end = i;
        while (end < size && data[end] != '\n')
            end++;
        long this_line = ++*line_no;
        if (start == 0) {
            bool blank = true;
            for (size_t k = i; k < end && blank; k++)
                blank = data[k] == ' ' || data[k] == '\t' || data[k] == '\r';
            if (!blank)
                start = this_line;
        }
        if (start != 0)
            for (size_t k = i; k < end; k++)
                if (data[k] == '"')
                    quoted = !quoted;
        i = end < size ? end + 1 : size;
        if (start != 0 && !quoted)
            break;
    }
    *pos = i;
    return start;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the model's view: a UTF-8 BOM at the very start is not part of the text */
    size_t model_pos = size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    long model_line = 0;

    FILE *f = fuzz_stream_or_empty(data, size);
    if (f == NULL)
        return 0;
    pfi_csv_reader *r = NULL;
    pfi_diag diag;
    if (pfi_csv_open_stream(f, "fuzz.csv", &r, &diag) != PFI_OK) {
        fclose(f);
        return 0;
    }
    long prev_line = 0;
    for (;;) {
        const char *const *fields = NULL;
        const size_t *lens = NULL;
        size_t n = 0;
        long line = -1;
        bool eof = false;
        pfi_error e = pfi_csv_next(r, &fields, &lens, &n, &line, &eof, &diag);
        if (e != PFI_OK) {
            if (e != PFI_ERR_LINE_TOO_LONG && e != PFI_ERR_LIMIT && e != PFI_ERR_PARSE &&
                e != PFI_ERR_IO && e != PFI_ERR_NOMEM)
                abort();
            if (diag.line < 1 || diag.message[0] == '\0' || strcmp(diag.file, "fuzz.csv") != 0)
                abort();
            break;
        }
        if (eof) {
            /* the end is sticky */
            e = pfi_csv_next(r, &fields, &lens, &n, &line, &eof, &diag);
            if (e != PFI_OK || !eof)
                abort();
            break;
        }
        if (n < 1 || n > PFI_CSV_MAX_FIELDS || fields == NULL || lens == NULL)
            abort();
        size_t total = 0;
        for (size_t i = 0; i < n; i++) {
            if (fields[i] == NULL || fields[i][lens[i]] != '\0')
                abort();
            if (memchr(fields[i], '\0', lens[i]) != NULL)
                abort();
            total += lens[i] + 1;
        }
        if (total > PFI_CSV_MAX_RECORD)
            abort();
        if (line < 1 || line <= prev_line)
            abort();
        /* a record cannot start on a line past the end of the input */
        if ((size_t)line > size)
            abort();
        if (line != model_next_start(data, size, &model_pos, &model_line))
            abort();
        prev_line = line;
    }
    pfi_csv_close(r);
    fclose(f);
    return 0;
}
