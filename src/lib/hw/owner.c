/*
 * GPU ownership locks (DESIGN §10: one owner per GPU at a time): a file per GPU under a run
 * directory (/run/pfi), held with flock(2) by the one process that may change the GPU's
 * power limit — pfid, pfi sweep, pfi restore. The kernel drops the lock when its holder
 * dies, so a crash never leaves a GPU locked; the file's text (who holds it) is left
 * behind, and a clean release empties it: a non-empty file found unlocked is the mark of a
 * holder that crashed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/memory.h"
#include "pfi/capctl.h"

struct pfi_gpu_lock {
    size_t n;
    int *fd;
    char (*previous)[160]; /* the text a crashed holder left ("" none) */
};

static pfi_error lfail(pfi_diag *d, pfi_error e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static pfi_error lfail(pfi_diag *d, pfi_error e, const char *fmt, ...)
{
    if (d != NULL) {
        pfi_diag_clear(d);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->message, sizeof d->message, fmt, ap);
        va_end(ap);
    }
    return e;
}

/* run_dir/gpu-ID.lock, the ID's unsafe characters as '_'. false when it does not fit. */
static bool lock_path(char *buf, size_t n, const char *run_dir, const char *id)
{
    int w = snprintf(buf, n, "%s/gpu-", run_dir);
    if (w < 0 || (size_t)w >= n)
        return false;
    size_t k = (size_t)w;
    for (const char *q = id; *q; q++) {
        if (k + 1 >= n)
            return false;
        char ch = *q;
        bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                  (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_';
        buf[k++] = ok ? ch : '_';
    }
    buf[k] = '\0';
    w = snprintf(buf + k, n - k, ".lock");
    return w > 0 && (size_t)w < n - k;
}

/* The text of the file open on fd (at most n − 1 bytes, the line break dropped). */
static void read_text(int fd, char *buf, size_t n)
{
    ssize_t r = pread(fd, buf, n - 1, 0);
    size_t len = r > 0 ? (size_t)r : 0;
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\0'))
        len--;
    buf[len] = '\0';
}

void pfi_gpu_lock_release(pfi_gpu_lock *l)
{
    if (l == NULL)
        return;
    for (size_t k = 0; k < l->n; k++)
        if (l->fd[k] >= 0) {
            if (ftruncate(l->fd[k], 0) != 0) { /* a clean release leaves no holder text */
            }
            flock(l->fd[k], LOCK_UN);
            close(l->fd[k]);
        }
    pfi_free(l->fd);
    pfi_free(l->previous);
    pfi_free(l);
}

pfi_error pfi_gpu_lock_acquire(const char *run_dir, const char *const *ids, size_t n,
                               const char *owner, pfi_gpu_lock **out, pfi_diag *diag)
{
    *out = NULL;
    if (run_dir == NULL || run_dir[0] == '\0' || ids == NULL || owner == NULL)
        return lfail(diag, PFI_ERR_INVALID_ARGUMENT,
                     "GPU lock: a run directory, GPUs and an owner are needed");
    if (mkdir(run_dir, 0755) != 0 && errno != EEXIST)
        return lfail(diag, PFI_ERR_IO,
                     "GPU lock: cannot create the run directory %s: %s (set another with --run-dir "
                     "or PFI_RUN_DIR)",
                     run_dir, strerror(errno));
    pfi_gpu_lock *l = pfi_calloc(1, sizeof *l);
    if (l == NULL)
        return PFI_ERR_NOMEM;
    l->fd = pfi_malloc((n ? n : 1) * sizeof *l->fd);
    l->previous = pfi_calloc(n ? n : 1, sizeof *l->previous);
    if (l->fd == NULL || l->previous == NULL) {
        pfi_gpu_lock_release(l);
        return PFI_ERR_NOMEM;
    }
    pfi_error e = PFI_OK;
    for (size_t k = 0; k < n; k++) {
        char path[512];
        if (!lock_path(path, sizeof path, run_dir, ids[k])) {
            e = lfail(diag, PFI_ERR_INVALID_ARGUMENT, "GPU lock: path of %s under %s too long",
                      ids[k], run_dir);
            break;
        }
        /* O_NOFOLLOW: the run directory is root's; a link planted there is refused */
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) {
            e = lfail(diag, PFI_ERR_IO, "GPU lock %s: %s", path, strerror(errno));
            break;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            char holder[160];
            read_text(fd, holder, sizeof holder);
            close(fd);
            e = lfail(diag, PFI_ERR_EXISTS,
                      "GPU %s is owned by %s (lock %s); stop it or go through its API", ids[k],
                      holder[0] ? holder : "another process", path);
            break;
        }
        read_text(fd, l->previous[k], sizeof l->previous[k]);
        char text[256];
        int w = snprintf(text, sizeof text, "%s pid %ld since %ld\n", owner, (long)getpid(),
                         (long)time(NULL));
        if (ftruncate(fd, 0) != 0 || w < 0 || pwrite(fd, text, (size_t)w, 0) != (ssize_t)w) {
            e = lfail(diag, PFI_ERR_IO, "GPU lock %s: cannot write the owner: %s", path,
                      strerror(errno));
            flock(fd, LOCK_UN);
            close(fd);
            break;
        }
        l->fd[l->n++] = fd;
    }
    if (e != PFI_OK) {
        pfi_gpu_lock_release(l);
        return e;
    }
    *out = l;
    return PFI_OK;
}

const char *pfi_gpu_lock_previous(const pfi_gpu_lock *l, size_t k)
{
    return l != NULL && k < l->n && l->previous[k][0] != '\0' ? l->previous[k] : NULL;
}
