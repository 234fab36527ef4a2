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

static void clear(pfi_atomic_file *a)
{
    pfi_free(a->path);
    if (a->write_path != a->path)
        pfi_free(a->write_path);
    a->f = NULL;
    a->path = a->write_path = NULL;
    a->in_place = false;
}

/* Decide where the data goes; create the temporary (fd returned in *fd, -1 when in place). */
static pfi_error prepare(pfi_atomic_file *a, const char *path, int *fd, pfi_diag *diag)
{
    memset(a, 0, sizeof *a);
    *fd = -1;
    struct stat st;
    bool exists = lstat(path, &st) == 0;
    if (exists && S_ISLNK(st.st_mode)) {
        char *target = realpath(path, NULL);
        if (target == NULL)
            return errno == ENOMEM ? PFI_ERR_NOMEM
                                   : fail(diag, path, PFI_ERR_IO,
                                          "cannot write through the link: %s", strerror(errno));
        a->path = pfi_strdup(target);
        free(target); /* realpath's buffer: libc's malloc */
        if (a->path == NULL)
            return PFI_ERR_NOMEM;
        exists = stat(a->path, &st) == 0;
    } else if ((a->path = pfi_strdup(path)) == NULL) {
        return PFI_ERR_NOMEM;
    }
    if (exists && S_ISDIR(st.st_mode)) {
        clear(a);
        return fail(diag, path, PFI_ERR_IO, "cannot write: it is a directory");
    }
    if (exists && !S_ISREG(st.st_mode)) {
        a->in_place = true;
        a->write_path = a->path;
        return PFI_OK;
    }
    size_t len = strlen(a->path) + 16;
    if ((a->write_path = pfi_malloc(len)) == NULL) {
        clear(a);
        return PFI_ERR_NOMEM;
    }
    snprintf(a->write_path, len, "%s.tmpXXXXXX", a->path);
    *fd = mkostemp(a->write_path, O_CLOEXEC);
    if (*fd < 0) {
        pfi_error e = fail(diag, path, PFI_ERR_IO, "cannot write: %s", strerror(errno));
        clear(a);
        return e;
    }
    /* mkostemp makes the file 0600; keep the mode an existing file had, else the usual one */
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(*fd, exists ? (st.st_mode & 07777) : (0666 & ~mask));
    return PFI_OK;
}

pfi_error pfi_atomic_open(pfi_atomic_file *a, const char *path, pfi_diag *diag)
{
    int fd;
    pfi_error e = prepare(a, path, &fd, diag);
    if (e != PFI_OK)
        return e;
    a->f = a->in_place ? fopen(a->path, "w") : fdopen(fd, "w");
    if (a->f == NULL) {
        e = fail(diag, path, PFI_ERR_IO, "cannot write: %s", strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(a->write_path);
        }
        clear(a);
    }
    return e;
}

pfi_error pfi_atomic_open_path(pfi_atomic_file *a, const char *path, pfi_diag *diag)
{
    int fd;
    pfi_error e = prepare(a, path, &fd, diag);
    if (e == PFI_OK && fd >= 0)
        close(fd);
    return e;
}

pfi_error pfi_atomic_commit(pfi_atomic_file *a, pfi_diag *diag)
{
    bool ok = true;
    int err = 0;
    if (a->f != NULL) {
        ok = fflush(a->f) == 0 && !ferror(a->f);
        if (!ok)
            err = errno;
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
    pfi_error e = PFI_OK;
    if (!ok) {
        e = fail(diag, a->path, PFI_ERR_IO, "cannot write: %s", strerror(err ? err : EIO));
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
