/*
 * Bounded CSV record reader on top of libcsv. libcsv does the quoting; this file bounds
 * memory (one fixed line buffer, a capped record buffer) and keeps line numbers. The one CSV
 * field writer (RFC 4180 quoting) is at the end.
 */
#include "pfi/csv.h"

#include <csv.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"

struct pfi_csv_reader {
    FILE *stream;
    bool owns_stream;
    char name[512];
    struct csv_parser parser;
    char line[PFI_CSV_MAX_LINE + 1];
    long line_no;  /* physical lines read so far */
    bool at_start; /* before the first byte: strip a BOM */
    bool done;
    /* the record being assembled */
    char *rec; /* field bytes, each NUL-terminated */
    size_t rec_len, rec_cap;
    size_t *offsets; /* start of each field in rec */
    size_t *lens;
    const char **fields;
    size_t n_fields, fields_cap;
    long rec_line; /* line the current record started on, 0 when none */
    bool rec_complete;
    pfi_error cb_error; /* an error raised inside a libcsv callback */
};

/* libcsv grows its field buffer with this; refusing past the record cap bounds memory. */
#define CSV_BUFFER_CAP (PFI_CSV_MAX_RECORD + 64)
static void *bounded_realloc(void *p, size_t size)
{
    if (size > CSV_BUFFER_CAP)
        return NULL;
    return pfi_realloc(p, size);
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static int is_term(unsigned char c)
{
    return c == '\n';
}

static void set_diag(pfi_csv_reader *r, pfi_diag *diag, long line, const char *msg)
{
    if (diag == NULL)
        return;
    pfi_diag_clear(diag);
    snprintf(diag->file, sizeof diag->file, "%s", r->name);
    diag->line = line;
    snprintf(diag->message, sizeof diag->message, "%s", msg);
}

static void on_field(void *data, size_t len, void *ctx)
{
    pfi_csv_reader *r = ctx;
    if (r->cb_error != PFI_OK)
        return;
    if (r->n_fields >= PFI_CSV_MAX_FIELDS) {
        r->cb_error = PFI_ERR_LIMIT;
        return;
    }
    if (r->rec_len + len + 1 > PFI_CSV_MAX_RECORD) {
        r->cb_error = PFI_ERR_LIMIT;
        return;
    }
    if (r->rec_len + len + 1 > r->rec_cap) {
        size_t cap = r->rec_cap ? r->rec_cap : 1024;
        while (cap < r->rec_len + len + 1)
            cap *= 2;
        char *p = pfi_realloc(r->rec, cap);
        if (p == NULL) {
            r->cb_error = PFI_ERR_NOMEM;
            return;
        }
        r->rec = p;
        r->rec_cap = cap;
    }
    if (r->n_fields == r->fields_cap) {
        size_t cap = r->fields_cap ? 2 * r->fields_cap : 32;
        size_t *o = pfi_realloc(r->offsets, cap * sizeof *o);
        if (o == NULL) {
            r->cb_error = PFI_ERR_NOMEM;
            return;
        }
        r->offsets = o;
        size_t *l = pfi_realloc(r->lens, cap * sizeof *l);
        if (l == NULL) {
            r->cb_error = PFI_ERR_NOMEM;
            return;
        }
        r->lens = l;
        const char **f = pfi_realloc(r->fields, cap * sizeof *f);
        if (f == NULL) {
            r->cb_error = PFI_ERR_NOMEM;
            return;
        }
        r->fields = f;
        r->fields_cap = cap;
    }
    if (len > 0)
        memcpy(r->rec + r->rec_len, data, len);
    r->rec[r->rec_len + len] = '\0';
    r->offsets[r->n_fields] = r->rec_len;
    r->lens[r->n_fields] = len;
    r->n_fields++;
    r->rec_len += len + 1;
}

static void on_record(int term, void *ctx)
{
    (void)term;
    pfi_csv_reader *r = ctx;
    if (r->cb_error == PFI_OK)
        r->rec_complete = true;
}

static pfi_error reader_init(FILE *stream, bool owns, const char *name, pfi_csv_reader **out,
                             pfi_diag *diag)
{
    pfi_csv_reader *r = pfi_calloc(1, sizeof *r);
    if (r == NULL)
        return PFI_ERR_NOMEM;
    if (csv_init(&r->parser, CSV_STRICT | CSV_STRICT_FINI) != 0) {
        pfi_free(r);
        return PFI_ERR_NOMEM;
    }
    csv_set_space_func(&r->parser, is_space);
    csv_set_term_func(&r->parser, is_term);
    /* libcsv's buffer on libpfi's allocator, both ways: it is released by csv_free */
    csv_set_realloc_func(&r->parser, bounded_realloc);
    csv_set_free_func(&r->parser, pfi_free);
    csv_set_blk_size(&r->parser, 65536); /* grow long fields in large steps, not 128 bytes */
    r->stream = stream;
    r->owns_stream = owns;
    r->at_start = true;
    snprintf(r->name, sizeof r->name, "%s", name ? name : "(stream)");
    (void)diag;
    *out = r;
    return PFI_OK;
}

pfi_error pfi_csv_open(const char *path, const char *name, pfi_csv_reader **out, pfi_diag *diag)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        if (diag) {
            pfi_diag_clear(diag);
            snprintf(diag->file, sizeof diag->file, "%s", name ? name : path);
            snprintf(diag->message, sizeof diag->message, "cannot open: %s", strerror(errno));
        }
        return PFI_ERR_IO;
    }
    pfi_error e = reader_init(f, true, name ? name : path, out, diag);
    if (e != PFI_OK)
        fclose(f);
    return e;
}

pfi_error pfi_csv_open_stream(FILE *stream, const char *name, pfi_csv_reader **out, pfi_diag *diag)
{
    *out = NULL;
    return reader_init(stream, false, name, out, diag);
}

/*
 * Read one physical line into r->line. Returns its length (0 at end of input), or sets *err.
 * A line longer than PFI_CSV_MAX_LINE is an error: the rest is never buffered.
 */
static size_t read_line(pfi_csv_reader *r, pfi_error *err, pfi_diag *diag)
{
    size_t n = 0;
    int c;
    while ((c = getc(r->stream)) != EOF) {
        if (c == '\0') {
            *err = PFI_ERR_PARSE;
            set_diag(r, diag, r->line_no + 1, "NUL byte in text input (is this a binary file?)");
            return 0;
        }
        if (n == PFI_CSV_MAX_LINE) {
            *err = PFI_ERR_LINE_TOO_LONG;
            char msg[128];
            snprintf(msg, sizeof msg, "line longer than the limit of %d bytes", PFI_CSV_MAX_LINE);
            set_diag(r, diag, r->line_no + 1, msg);
            return 0;
        }
        r->line[n++] = (char)c;
        if (c == '\n')
            break;
    }
    if (ferror(r->stream)) {
        *err = PFI_ERR_IO;
        int why = errno != 0 ? errno : EIO; /* a directory: EISDIR */
        set_diag(r, diag, r->line_no + 1,
                 why == EISDIR ? "is a directory, not a CSV file" : strerror(why));
        return 0;
    }
    if (n > 0)
        r->line_no++;
    return n;
}

static pfi_error callback_error(pfi_csv_reader *r, pfi_diag *diag)
{
    long line = r->rec_line ? r->rec_line : r->line_no;
    if (r->cb_error == PFI_ERR_LIMIT) {
        char msg[160];
        snprintf(msg, sizeof msg, "record exceeds the limit of %d fields or %d bytes",
                 PFI_CSV_MAX_FIELDS, PFI_CSV_MAX_RECORD);
        set_diag(r, diag, line, msg);
    } else {
        set_diag(r, diag, line, pfi_strerror(r->cb_error));
    }
    return r->cb_error;
}

static pfi_error parse_error(pfi_csv_reader *r, pfi_diag *diag)
{
    int code = csv_error(&r->parser);
    long line = r->rec_line ? r->rec_line : r->line_no;
    /* libcsv halves its request down to one byte before it gives up: a buffer that had room
     * under the cap for that byte was refused by the allocator, not by the cap */
    if (code == CSV_ENOMEM && csv_get_buffer_size(&r->parser) + 1 <= CSV_BUFFER_CAP) {
        set_diag(r, diag, line, pfi_strerror(PFI_ERR_NOMEM));
        return PFI_ERR_NOMEM;
    }
    if (code == CSV_ENOMEM || code == CSV_ETOOBIG) {
        char msg[160];
        snprintf(msg, sizeof msg, "field exceeds the limit of %d bytes", PFI_CSV_MAX_RECORD);
        set_diag(r, diag, line, msg);
        return PFI_ERR_LIMIT;
    }
    set_diag(
        r, diag, line,
        "malformed CSV quoting (a quote inside an unquoted field, or text after a closing quote)");
    return PFI_ERR_PARSE;
}

pfi_error pfi_csv_next(pfi_csv_reader *r, const char *const **fields, const size_t **lens,
                       size_t *n_fields, long *line, bool *eof, pfi_diag *diag)
{
    *eof = false;
    *n_fields = 0;
    r->rec_len = 0;
    r->n_fields = 0;
    r->rec_line = 0;
    r->rec_complete = false;
    while (!r->rec_complete) {
        if (r->done) {
            *eof = true;
            return PFI_OK;
        }
        pfi_error err = PFI_OK;
        size_t n = read_line(r, &err, diag);
        if (err != PFI_OK)
            return err;
        if (n == 0) {
            r->done = true;
            if (csv_fini(&r->parser, on_field, on_record, r) != 0) {
                char msg[128];
                snprintf(msg, sizeof msg,
                         "unterminated quoted field at the end of the input "
                         "(the record starts here)");
                set_diag(r, diag, r->rec_line ? r->rec_line : r->line_no, msg);
                return PFI_ERR_PARSE;
            }
            if (r->cb_error != PFI_OK)
                return callback_error(r, diag);
            if (!r->rec_complete) {
                *eof = true;
                return PFI_OK;
            }
            break;
        }
        const char *p = r->line;
        if (r->at_start) {
            r->at_start = false;
            if (n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) {
                p += 3;
                n -= 3;
            }
        }
        /* a record starts on its first line with text (a BOM alone is not text) */
        if (r->rec_line == 0) {
            for (size_t i = 0; i < n; i++)
                if (!is_space((unsigned char)p[i]) && !is_term((unsigned char)p[i])) {
                    r->rec_line = r->line_no;
                    break;
                }
        }
        if (csv_parse(&r->parser, p, n, on_field, on_record, r) != n)
            return parse_error(r, diag);
        if (r->cb_error != PFI_OK)
            return callback_error(r, diag);
    }
    for (size_t i = 0; i < r->n_fields; i++)
        r->fields[i] = r->rec + r->offsets[i];
    *fields = r->fields;
    *lens = r->lens;
    *n_fields = r->n_fields;
    *line = r->rec_line;
    return PFI_OK;
}

void pfi_csv_close(pfi_csv_reader *r)
{
    if (r == NULL)
        return;
    csv_free(&r->parser);
    if (r->owns_stream && r->stream)
        fclose(r->stream);
    pfi_free(r->rec);
    pfi_free(r->offsets);
    pfi_free(r->lens);
    pfi_free(r->fields);
    pfi_free(r);
}

/* ---- writing ---------------------------------------------------------------------------- */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

bool pfi_csv_field_needs_quotes(const char *s)
{
    size_t n = strlen(s);
    return strpbrk(s, ",\"\r\n") != NULL || (n > 0 && (is_blank(s[0]) || is_blank(s[n - 1])));
}

/* One byte of a formatted field: counted always, stored while room for the NUL is left. */
static void put_byte(char *dst, size_t size, size_t *n, char c)
{
    if (*n + 1 < size)
        dst[*n] = c;
    (*n)++;
}

size_t pfi_csv_format_field(char *dst, size_t size, const char *s)
{
    if (s == NULL)
        s = "";
    bool quote = pfi_csv_field_needs_quotes(s);
    size_t n = 0;
    if (quote)
        put_byte(dst, size, &n, '"');
    for (const char *p = s; *p != '\0'; p++) {
        if (*p == '"')
            put_byte(dst, size, &n, '"');
        put_byte(dst, size, &n, *p);
    }
    if (quote)
        put_byte(dst, size, &n, '"');
    if (size > 0)
        dst[n < size ? n : size - 1] = '\0';
    return n;
}

bool pfi_csv_write_field(FILE *f, const char *s)
{
    if (s == NULL)
        return true;
    if (!pfi_csv_field_needs_quotes(s))
        return fputs(s, f) != EOF;
    bool ok = putc('"', f) != EOF;
    for (const char *p = s; *p != '\0'; p++) {
        if (*p == '"')
            ok = putc('"', f) != EOF && ok;
        ok = putc(*p, f) != EOF && ok;
    }
    return putc('"', f) != EOF && ok;
}
