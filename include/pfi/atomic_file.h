/*
 * pfi/atomic_file.h — output files that are written whole or not at all.
 *
 * A regular file (or a path that does not exist yet) is written to a temporary file in the
 * same directory and renamed over the path on commit: a reader sees the old file or the new
 * one, never half of it, and a failure leaves the old file untouched. The new file keeps an
 * existing file's permission bits. A symbolic link is followed: its target is replaced the
 * same way and the link stays. A path that names something other than a regular file — a
 * device such as /dev/null or /dev/stdout, a FIFO, a socket — is written in place, since
 * renaming over it would replace the device node or pipe with a plain file.
 *
 * The plain variants only guard against a crash of the writer (a reader never sees half a
 * file); pfi_atomic_open_durable also guards against a crash of the machine, for files a
 * later run depends on (the cap journal, a sweep's runs table).
 */
#ifndef PFI_ATOMIC_FILE_H
#define PFI_ATOMIC_FILE_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* pfi_atomic_file — one output in progress. Fields are read-only for callers. */
typedef struct pfi_atomic_file {
    FILE *f;          /* where to write (NULL for pfi_atomic_open_path) */
    char *path;       /* the final path (a symlink resolved to its target) */
    char *write_path; /* where the data goes now: the temporary, or path when in place */
    bool in_place;    /* true for devices, FIFOs and sockets */
    bool durable;     /* the commit syncs to disk (pfi_atomic_open_durable) */
    int error;        /* after a failed open or commit: the errno of the call that failed
                       * (EISDIR: path is a directory; ENOMEM with PFI_ERR_NOMEM); 0 after
                       * a success. Kept when a is cleared, so a caller can word its own
                       * message. */
} pfi_atomic_file;

/*
 * pfi_atomic_open — start writing path; a->f is the stream. On error a is cleared and diag
 * (may be NULL) says why. Errors: PFI_ERR_IO (directory missing or not writable, dangling
 * link, path is a directory), PFI_ERR_NOMEM.
 */
pfi_error pfi_atomic_open(pfi_atomic_file *a, const char *path, pfi_diag *diag);

/*
 * pfi_atomic_open_path — as pfi_atomic_open for a writer that opens files by name itself
 * (e.g. a plotting library): a->write_path names the (empty, created) temporary or, in place,
 * path itself; a->f is NULL.
 */
pfi_error pfi_atomic_open_path(pfi_atomic_file *a, const char *path, pfi_diag *diag);

/*
 * pfi_atomic_open_durable — as pfi_atomic_open, for a file that must survive a crash of the
 * machine: the commit fsyncs the data before the rename and the directory after it, so that
 * after a power loss path holds the old file or the whole new one (written in place: the
 * data is fsynced, and a device that cannot sync, such as /dev/null, is not an error). A
 * path that does not exist yet is created with mode_new (e.g. 0600; the umask applies, as
 * for open(2)); an existing regular file keeps its mode, as with pfi_atomic_open. The
 * temporary is PATH.tmpXXXXXX (unique, created exclusively). On a failure diag names the
 * file the failing call was made on: the temporary when it cannot be created (e.g. the
 * directory is not writable), else path; a->error holds the errno either way.
 * Errors: PFI_ERR_IO, PFI_ERR_NOMEM (as pfi_atomic_open).
 */
pfi_error pfi_atomic_open_durable(pfi_atomic_file *a, const char *path, mode_t mode_new,
                                  pfi_diag *diag);

/*
 * pfi_atomic_commit — close the stream (if any) and move the data into place. Any write error
 * seen on the stream fails the commit. The temporary is removed on failure; a is cleared
 * either way (a->error kept). Durable (pfi_atomic_open_durable): an fsync that fails fails
 * the commit; the directory's fsync after the rename is best effort (the new file is in
 * place by then, so a failure there is not reported). Errors: PFI_ERR_IO (diag, which may be
 * NULL, names the final path and says why; a->error is the errno).
 */
pfi_error pfi_atomic_commit(pfi_atomic_file *a, pfi_diag *diag);

/* pfi_atomic_abort — give up: close, remove the temporary, clear a. A cleared a is a no-op. */
void pfi_atomic_abort(pfi_atomic_file *a);

#ifdef __cplusplus
}
#endif

#endif
