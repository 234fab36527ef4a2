/*
 * The cap journal: the original power limits of the GPUs a process changes, written
 * atomically before the first change so that `pfi restore` can undo a crashed sweep.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "pfi/atomic_file.h"
#include "pfi/capctl.h"

#define JOURNAL_MAX_BYTES (1 << 20)

static pfi_error jfail(pfi_diag *diag, pfi_error e, long line, const char *msg)
{
    if (diag != NULL) {
        diag->line = line;
        snprintf(diag->message, sizeof diag->message, "%s", msg);
    }
    return e;
}

void pfi_journal_clear(pfi_journal *j)
{
    if (j == NULL)
        return;
    pfi_free(j->entries);
    memset(j, 0, sizeof *j);
}

/* The next line of text[*pos..len) into line (NUL-terminated, at most cap-1 bytes). */
static bool next_line(const char *text, size_t len, size_t *pos, char *line, size_t cap,
                      bool *too_long)
{
    *too_long = false;
    if (*pos >= len)
        return false;
    size_t start = *pos, end = start;
    while (end < len && text[end] != '\n')
        end++;
    *pos = end < len ? end + 1 : end;
    size_t n = end - start;
    if (n > 0 && text[start + n - 1] == '\r')
        n--;
    if (n >= cap || memchr(text + start, '\0', n) != NULL) {
        *too_long = true;
        return true;
    }
    memcpy(line, text + start, n);
    line[n] = '\0';
    return true;
}

static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return false;
    char *e;
    errno = 0;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno != 0 || *e != '\0' || v > max)
        return false;
    *out = v;
    return true;
}

pfi_error pfi_journal_parse(const char *text, size_t len, pfi_journal *out, pfi_diag *diag)
{
    memset(out, 0, sizeof *out);
    char line[700];
    size_t pos = 0;
    long ln = 0;
    bool too_long, header = false, end = false;
    while (next_line(text, len, &pos, line, sizeof line, &too_long)) {
        ln++;
        if (too_long)
            return jfail(diag, PFI_ERR_PARSE, ln, "line too long or holds a NUL byte");
        if (line[0] == '\0')
            continue;
        if (end)
            return jfail(diag, PFI_ERR_PARSE, ln, "text after 'end'");
        if (!header) {
            if (strcmp(line, "pfi-cap-journal 1") != 0)
                return jfail(diag, PFI_ERR_PARSE, ln, "expected 'pfi-cap-journal 1'");
            header = true;
            continue;
        }
        char *sp = strchr(line, ' ');
        const char *arg = sp ? sp + 1 : "";
        if (sp)
            *sp = '\0';
        if (strcmp(line, "end") == 0 && sp == NULL) {
            end = true;
        } else if (strcmp(line, "backend") == 0) {
            if (strlen(arg) == 0 || strlen(arg) >= sizeof out->backend)
                return jfail(diag, PFI_ERR_PARSE, ln, "bad backend");
            snprintf(out->backend, sizeof out->backend, "%s", arg);
        } else if (strcmp(line, "library") == 0) {
            if (strlen(arg) >= sizeof out->library)
                return jfail(diag, PFI_ERR_PARSE, ln, "library path too long");
            snprintf(out->library, sizeof out->library, "%s", strcmp(arg, "-") ? arg : "");
        } else if (strcmp(line, "pid") == 0) {
            uint64_t v;
            if (!parse_u64(arg, 0x7fffffff, &v))
                return jfail(diag, PFI_ERR_PARSE, ln, "bad pid");
            out->pid = (long)v;
        } else if (strcmp(line, "owner") == 0) {
            if (strlen(arg) == 0 || strlen(arg) >= sizeof out->owner)
                return jfail(diag, PFI_ERR_PARSE, ln, "bad owner");
            snprintf(out->owner, sizeof out->owner, "%s", arg);
        } else if (strcmp(line, "gpu") == 0) {
            char idx[32], uuid[sizeof out->entries[0].uuid], mw[32];
            const char *a = arg;
            const char *s1 = strchr(a, ' ');
            const char *s2 = s1 ? strchr(s1 + 1, ' ') : NULL;
            if (s1 == NULL || s2 == NULL || strchr(s2 + 1, ' ') != NULL ||
                (size_t)(s1 - a) >= sizeof idx || (size_t)(s2 - s1 - 1) >= sizeof uuid ||
                strlen(s2 + 1) >= sizeof mw)
                return jfail(diag, PFI_ERR_PARSE, ln, "expected 'gpu INDEX UUID MW'");
            memcpy(idx, a, (size_t)(s1 - a));
            idx[s1 - a] = '\0';
            memcpy(uuid, s1 + 1, (size_t)(s2 - s1 - 1));
            uuid[s2 - s1 - 1] = '\0';
            snprintf(mw, sizeof mw, "%s", s2 + 1);
            uint64_t iv, mv;
            if (!parse_u64(idx, 1u << 20, &iv) || !parse_u64(mw, UINT32_MAX, &mv) || mv == 0 ||
                uuid[0] == '\0' || strlen(uuid) >= sizeof out->entries[0].uuid)
                return jfail(diag, PFI_ERR_PARSE, ln, "expected 'gpu INDEX UUID MW'");
            if (out->n == PFI_JOURNAL_MAX_GPUS)
                return jfail(diag, PFI_ERR_LIMIT, ln, "too many GPUs");
            pfi_journal_entry *p = pfi_realloc(out->entries, (out->n + 1) * sizeof *p);
            if (p == NULL)
                return PFI_ERR_NOMEM;
            out->entries = p;
            pfi_journal_entry *e = &p[out->n++];
            memset(e, 0, sizeof *e);
            e->index = (unsigned)iv;
            snprintf(e->uuid, sizeof e->uuid, "%s", strcmp(uuid, "-") ? uuid : "");
            e->original_mw = (uint32_t)mv;
        } else {
            return jfail(diag, PFI_ERR_PARSE, ln, "unknown line");
        }
    }
    if (!header || !end)
        return jfail(diag, PFI_ERR_PARSE, ln, "incomplete journal (no 'end' line)");
    return PFI_OK;
}

pfi_error pfi_journal_read(const char *path, pfi_journal *out, pfi_diag *diag)
{
    memset(out, 0, sizeof *out);
    pfi_diag_clear(diag);
    if (diag != NULL)
        snprintf(diag->file, sizeof diag->file, "%s", path);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return jfail(diag, PFI_ERR_IO, 0,
                     errno == ENOENT ? "no journal: nothing to restore" : strerror(errno));
    char *buf = pfi_malloc(JOURNAL_MAX_BYTES);
    if (buf == NULL) {
        fclose(f);
        return PFI_ERR_NOMEM;
    }
    errno = 0;
    size_t n = fread(buf, 1, JOURNAL_MAX_BYTES, f);
    int err = ferror(f) != 0 ? (errno != 0 ? errno : EIO) : 0;
    bool big = n == JOURNAL_MAX_BYTES;
    fclose(f);
    pfi_error e;
    if (err != 0) /* a directory given as the journal: EISDIR */
        e = jfail(diag, PFI_ERR_IO, 0,
                  err == EISDIR ? "is a directory, not a journal file" : strerror(err));
    else if (big)
        e = jfail(diag, PFI_ERR_LIMIT, 0, "journal larger than 1 MiB");
    else
        e = pfi_journal_parse(buf, n, out, diag);
    pfi_free(buf);
    return e;
}

/*
 * Through pfi_atomic_open_durable: a new journal is 0600 and the file and its directory are
 * fsynced, since `pfi restore` must find it after a crash of the machine. The messages are
 * the journal's own (the errno's text, diag->file the journal path), not atomic's. A path
 * that already exists is refused earlier by pfi_capctl_create; as for any atomic file, a
 * symlink is followed (its target replaced, the link kept; a dangling link fails with
 * ENOENT, where this once replaced the link with a file) and a device or FIFO is written in
 * place.
 */
pfi_error pfi_journal_write(const char *path, const pfi_journal *j, pfi_diag *diag)
{
    pfi_diag_clear(diag);
    if (diag != NULL)
        snprintf(diag->file, sizeof diag->file, "%s", path);
    pfi_atomic_file a;
    pfi_error e = pfi_atomic_open_durable(&a, path, 0600, NULL);
    if (e == PFI_ERR_NOMEM)
        return e;
    if (e != PFI_OK)
        return jfail(diag, PFI_ERR_IO, 0, strerror(a.error));
    FILE *f = a.f;
    fprintf(f, "pfi-cap-journal 1\nbackend %s\nlibrary %s\npid %ld\n", j->backend,
            j->library[0] ? j->library : "-", j->pid);
    if (j->owner[0] != '\0')
        fprintf(f, "owner %s\n", j->owner);
    for (size_t k = 0; k < j->n; k++)
        fprintf(f, "gpu %u %s %" PRIu32 "\n", j->entries[k].index,
                j->entries[k].uuid[0] ? j->entries[k].uuid : "-", j->entries[k].original_mw);
    fprintf(f, "end\n");
    if (pfi_atomic_commit(&a, NULL) != PFI_OK)
        return jfail(diag, PFI_ERR_IO, 0, strerror(a.error));
    return PFI_OK;
}
