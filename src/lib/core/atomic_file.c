/*
 * Whole-or-nothing output files (see pfi/atomic_file.h).
 */
#define _GNU_SOURCE /* mkostemp */
#include "pfi/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/memory.h"

static pfi_error fail(pfi_diag *d, const char *path, pfi_error e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static pfi_error fail(pfi_diag *d, const char *path, pfi_error e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_diag_vset(d, path, 0, NULL, fmt, ap);
    va_end(ap);
    return e;
}

/* Free what a owns and reset it; a->error stays, for the caller's message. */
static void clear(pfi_atomic_file *a)
{
    pfi_free(a->path);
    if (a->write_path != a->path)
        pfi_free(a->write_path);
    a->f = NULL;
    a->path = a->write_path = NULL;
    a->in_place = false;
    a->durable = false;
}

/* Out of memory: a cleared, a->error ENOMEM. */
static pfi_error nomem(pfi_atomic_file *a)
{
    clear(a);
    a->error = ENOMEM;
    return PFI_ERR_NOMEM;
}

/*
 * Decide where the data goes; create the temporary (fd returned in *fd, -1 when in place),
 * with mode_new before the umask when path is new. durable: mark a for the syncing commit,
 * and name the temporary in diag when it cannot be created.
 */
static pfi_error prepare(pfi_atomic_file *a, const char *path, mode_t mode_new, bool durable,
                         int *fd, pfi_diag *diag)
{
    memset(a, 0, sizeof *a);
    a->durable = durable;
    *fd = -1;
    struct stat st;
    bool exists = lstat(path, &st) == 0;
    if (exists && S_ISLNK(st.st_mode)) {
        char *target = realpath(path, NULL);
        if (target == NULL) {
            int err = errno;
            if (err == ENOMEM)
                return nomem(a);
            a->error = err;
            return fail(diag, path, PFI_ERR_IO, "cannot write through the link: %s", strerror(err));
        }
        a->path = pfi_strdup(target);
        free(target); /* realpath's buffer: libc's malloc */
        if (a->path == NULL)
            return nomem(a);
        exists = stat(a->path, &st) == 0;
    } else if ((a->path = pfi_strdup(path)) == NULL) {
        return nomem(a);
    }
    if (exists && S_ISDIR(st.st_mode)) {
        clear(a);
        a->error = EISDIR;
        return fail(diag, path, PFI_ERR_IO, "cannot write: it is a directory");
    }
    if (exists && !S_ISREG(st.st_mode)) {
        a->in_place = true;
        a->write_path = a->path;
        return PFI_OK;
    }
    size_t len = strlen(a->path) + 16;
    if ((a->write_path = pfi_malloc(len)) == NULL)
        return nomem(a);
    snprintf(a->write_path, len, "%s.tmpXXXXXX", a->path);
    *fd = mkostemp(a->write_path, O_CLOEXEC);
    if (*fd < 0) {
        int err = errno;
        pfi_error e = fail(diag, durable ? a->write_path : path, PFI_ERR_IO, "cannot write: %s",
                           strerror(err));
        clear(a);
        a->error = err;
        return e;
    }
    /* mkostemp makes the file 0600; keep the mode an existing file had, else the usual one */
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(*fd, exists ? (st.st_mode & 07777) : (mode_new & ~mask));
    return PFI_OK;
}

/* pfi_atomic_open and pfi_atomic_open_durable: prepare, then the stream. */
static pfi_error open_stream(pfi_atomic_file *a, const char *path, mode_t mode_new, bool durable,
                             pfi_diag *diag)
{
    int fd;
    pfi_error e = prepare(a, path, mode_new, durable, &fd, diag);
    if (e != PFI_OK)
        return e;
    a->f = a->in_place ? fopen(a->path, "w") : fdopen(fd, "w");
    if (a->f == NULL) {
        int err = errno;
        e = fail(diag, path, PFI_ERR_IO, "cannot write: %s", strerror(err));
        if (fd >= 0) {
            close(fd);
            unlink(a->write_path);
        }
        clear(a);
        a->error = err;
    }
    return e;
}

pfi_error pfi_atomic_open(pfi_atomic_file *a, const char *path, pfi_diag *diag)
{
    return open_stream(a, path, 0666, false, diag);
}

pfi_error pfi_atomic_open_durable(pfi_atomic_file *a, const char *path, mode_t mode_new,
                                  pfi_diag *diag)
{
    return open_stream(a, path, mode_new, true, diag);
}

pfi_error pfi_atomic_open_path(pfi_atomic_file *a, const char *path, pfi_diag *diag)
{
    int fd;
    pfi_error e = prepare(a, path, 0666, false, &fd, diag);
    if (e == PFI_OK && fd >= 0)
        close(fd);
    return e;
}

/*
 * fsync the directory holding path, so that a rename into it survives a power loss. Best
 * effort: the rename is done, so there is nothing left to undo if this fails. path is
 * written to (cut at its last '/') and restored: no allocation on the way.
 */
static void sync_directory(char *path)
{
    char *slash = strrchr(path, '/');
    const char *dir = slash == NULL ? "." : slash == path ? "/" : path;
    if (slash != NULL && slash != path)
        *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (slash != NULL && slash != path)
        *slash = '/';
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

pfi_error pfi_atomic_commit(pfi_atomic_file *a, pfi_diag *diag)
{
    bool ok = true;
    int err = 0;
    if (a->f != NULL) {
        ok = fflush(a->f) == 0 && !ferror(a->f);
        if (!ok)
            err = errno;
        /* durable: the data on disk before the rename makes it visible (a device or pipe
         * written in place that cannot be synced, EINVAL, has nothing to sync) */
        if (ok && a->durable && fsync(fileno(a->f)) != 0 && !(a->in_place && errno == EINVAL)) {
            ok = false;
            err = errno;
        }
        if (fclose(a->f) != 0 && ok) {
            ok = false;
            err = errno;
        }
        a->f = NULL;
    }
    if (ok && !a->in_place && rename(a->write_path, a->path) != 0) {
        ok = false;
        err = errno;
    }
    if (ok && a->durable && !a->in_place)
        sync_directory(a->path);
    pfi_error e = PFI_OK;
    a->error = 0;
    if (!ok) {
        a->error = err ? err : EIO;
        e = fail(diag, a->path, PFI_ERR_IO, "cannot write: %s", strerror(a->error));
        if (!a->in_place)
            unlink(a->write_path);
    }
    clear(a);
    return e;
}

void pfi_atomic_abort(pfi_atomic_file *a)
{
    if (a->f != NULL)
        fclose(a->f);
    if (a->write_path != NULL && !a->in_place)
        unlink(a->write_path);
    clear(a);
}
