/*
 * The bounded line reader every text reader reads through (tm_lines, telemetry/internal.h):
 * 256 KiB blocks, lines of at most PFI_TELEMETRY_MAX_LINE bytes, TM_LINE_PAD readable bytes past
 * every line for the hot paths' wide loads, a byte order mark dropped, and the messages of
 * its two failures (a read error, a line too long).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/memory.h"
#include "telemetry/internal.h"

#define TM_BLOCK (1u << 18)
#define TM_HEAD (1u << 16) /* the first read: what detection looks at */

pfi_error tm_lines_init(tm_lines *r, FILE *f)
{
    memset(r, 0, sizeof *r);
    r->f = f;
    r->buf = pfi_malloc(TM_BLOCK + PFI_TELEMETRY_MAX_LINE + 1 + TM_LINE_PAD);
    if (r->buf == NULL)
        return PFI_ERR_NOMEM;
    memset(r->buf, 0, TM_LINE_PAD);
    return PFI_OK;
}

void tm_lines_free(tm_lines *r)
{
    pfi_free(r->buf);
    r->buf = NULL;
}

pfi_error tm_lines_next(tm_lines *r, const char **s, size_t *n, bool *eof)
{
    for (;;) {
        char *start = r->buf + r->pos;
        size_t avail = r->len - r->pos;
        char *nl = avail ? memchr(start, '\n', avail) : NULL;
        if (nl != NULL || (r->eof && avail > 0)) {
            size_t len = nl ? (size_t)(nl - start) : avail;
            if (len + 1 > PFI_TELEMETRY_MAX_LINE) {
                r->line++; /* the error is about this line: count it first */
                return PFI_ERR_LINE_TOO_LONG;
            }
            r->pos += nl ? len + 1 : len;
            if (len > 0 && start[len - 1] == '\r')
                len--;
            r->line++;
            r->cut = nl == NULL;
            *s = start;
            *n = len;
            *eof = false;
            return PFI_OK;
        }
        if (r->eof) {
            *eof = true;
            return PFI_OK;
        }
        if (avail >= PFI_TELEMETRY_MAX_LINE) {
            r->line++;
            return PFI_ERR_LINE_TOO_LONG;
        }
        memmove(r->buf, start, avail);
        r->pos = 0;
        r->len = avail;
        size_t got = fread(r->buf + r->len, 1, TM_BLOCK, r->f);
        r->len += got;
        memset(r->buf + r->len, 0, TM_LINE_PAD); /* the readers' over-read guarantee */
        if (got < TM_BLOCK) {
            if (ferror(r->f)) {
                r->err = errno;
                return PFI_ERR_IO;
            }
            r->eof = true;
        }
        tm_lines_bom(r);
    }
}

/* A UTF-8 byte order mark (Windows editors, PowerShell's Out-File) is not text: dropped
 * before the first line of every reader, whatever the format. */
void tm_lines_bom(tm_lines *r)
{
    if (r->started)
        return;
    r->started = true;
    if (r->len - r->pos >= 3 && memcmp(r->buf + r->pos, "\xEF\xBB\xBF", 3) == 0)
        r->pos += 3;
}

/* A read failure with its reason: the directory given as a file (EISDIR) says so. */
void tm_lines_io_diag(const tm_lines *r, pfi_diag *diag)
{
    if (diag == NULL || diag->message[0] != '\0')
        return;
    if (r->err == EISDIR)
        snprintf(diag->message, sizeof diag->message, "is a directory, expected a file");
    else
        snprintf(diag->message, sizeof diag->message, "cannot read: %s",
                 strerror(r->err ? r->err : EIO));
}

/* The first read of a stream, TM_HEAD bytes at most, then its byte order mark dropped. */
pfi_error tm_lines_head(tm_lines *r)
{
    size_t got = fread(r->buf, 1, TM_HEAD, r->f);
    r->len = got;
    memset(r->buf + got, 0, TM_LINE_PAD);
    if (got < TM_HEAD) {
        if (ferror(r->f)) {
            r->err = errno;
            return PFI_ERR_IO;
        }
        r->eof = true;
    }
    tm_lines_bom(r);
    return PFI_OK;
}

void tm_line_too_long_diag(pfi_diag *diag)
{
    if (diag != NULL && diag->message[0] == '\0')
        snprintf(diag->message, sizeof diag->message,
                 "line longer than %d bytes (%d KiB): expected one record per line; is this "
                 "the right file?",
                 PFI_TELEMETRY_MAX_LINE - 1, PFI_TELEMETRY_MAX_LINE / 1024);
}
