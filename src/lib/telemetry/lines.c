/*
 * The bounded line reader every text reader reads through (tm_lines, telemetry/internal.h):
 * 256 KiB blocks, lines of at most PFI_TELEMETRY_MAX_LINE bytes, TM_LINE_PAD readable bytes past
 * every line for the hot paths' wide loads, a byte order mark dropped, and the messages of
 * its two failures (a read error, a line too long).
 */
#define _DEFAULT_SOURCE 1 /* MAP_POPULATE (Linux) */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/memory.h"
#include "telemetry/internal.h"

#define TM_BLOCK (1u << 18)
#define TM_HEAD (1u << 16) /* the first read: what detection looks at */
/* A mapped window (options.map_files): its pages count in the resident memory while it is
 * mapped, one window at a time. Smaller windows cost more mmap calls (and page-table work);
 * at 1 MiB they are ~1 000 a GB. A window is taken only while at least TM_MAP_MIN bytes of
 * the file are left: the tail is read into the buffer, which gives the zeros past the
 * input's end that the hot paths' wide loads may read (TM_LINE_PAD). */
#define TM_MAP_WINDOW ((size_t)1 << 20)
#define TM_MAP_MIN ((size_t)2 * PFI_TELEMETRY_MAX_LINE + TM_LINE_PAD)
#ifdef MAP_POPULATE
#define TM_MAP_POPULATE MAP_POPULATE /* a window's pages mapped by one call, not a fault each */
#else
#define TM_MAP_POPULATE 0
#endif
_Static_assert(TM_MAP_WINDOW >= TM_MAP_MIN + 4096, "a window holds a longest line and more");

pfi_error tm_lines_init(tm_lines *r, FILE *f)
{
    memset(r, 0, sizeof *r);
    r->f = f;
    r->fd = -1;
    r->own = r->buf = pfi_malloc(TM_BLOCK + PFI_TELEMETRY_MAX_LINE + 1 + TM_LINE_PAD);
    if (r->buf == NULL)
        return PFI_ERR_NOMEM;
    memset(r->buf, 0, TM_LINE_PAD);
    return PFI_OK;
}

static void unmap_window(tm_lines *r)
{
    if (r->map != NULL)
        munmap(r->map, r->map_len);
    r->map = NULL;
    r->map_len = 0;
}

void tm_lines_free(tm_lines *r)
{
    unmap_window(r);
    pfi_free(r->own);
    r->own = r->buf = NULL;
}

void tm_lines_map(tm_lines *r)
{
    struct stat st;
    int fd = r->f != NULL ? fileno(r->f) : -1;
    long long at = fd >= 0 ? (long long)ftello(r->f) : -1;
    if (fd < 0 || at < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    r->fd = fd;
    r->base = at;
}

/*
 * The next mapped window, from the file offset of buf[pos] (the line being read) on: the
 * window before it unmapped, buf the new one, its last TM_LINE_PAD bytes readable past len.
 * False when less than TM_MAP_MIN bytes are left (the file's size now: it may have grown or
 * shrunk since) or the mapping fails: then the bytes from buf[pos] on are in own, the stream
 * placed after them, and reading goes on from the stream (fd -1) as without mapping.
 */
static bool next_window(tm_lines *r)
{
    long long at = r->base + (long long)r->pos;
    size_t avail = r->len - r->pos;
    struct stat st;
    if (fstat(r->fd, &st) == 0 && st.st_size > at && (size_t)(st.st_size - at) >= TM_MAP_MIN) {
        long page = sysconf(_SC_PAGESIZE);
        long long from = at - at % (page > 0 ? page : 4096);
        long long left = (long long)st.st_size - from;
        size_t n = left < (long long)TM_MAP_WINDOW ? (size_t)left : TM_MAP_WINDOW;
        unmap_window(r);
        void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE | TM_MAP_POPULATE, r->fd, (off_t)from);
        if (m != MAP_FAILED) {
            r->map = r->buf = m;
            r->map_len = n;
            r->base = from;
            r->pos = (size_t)(at - from);
            r->len = n - TM_LINE_PAD;
            return true;
        }
        /* (buf[pos..len) was in the window just unmapped: read again below) */
        avail = 0;
    }
    /* The rest is read: what was not handed out yet goes to own, the stream after it. */
    if (avail > 0)
        memmove(r->own, r->buf + r->pos, avail);
    unmap_window(r);
    r->buf = r->own;
    r->pos = 0;
    r->len = avail;
    r->fd = -1;
    if (fseeko(r->f, (off_t)(at + (long long)avail), SEEK_SET) != 0) {
        r->err = errno;
        return false;
    }
    return false;
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
        if (r->fd >= 0) {
            if (next_window(r))
                continue;
            if (r->err != 0)
                return PFI_ERR_IO;
            start = r->buf + r->pos;
            avail = r->len - r->pos;
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
