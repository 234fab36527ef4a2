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
 */
#ifndef PFI_ATOMIC_FILE_H
#define PFI_ATOMIC_FILE_H

#include <stdbool.h>
#include <stdio.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* pfi_atomic_file — one output in progress. Fields are read-only for callers. */
typedef struct pfi_atomic_file {
    FILE *f;          /* where to write (pfi_atomic_open only; NULL for _open_path) */
    char *path;       /* the final path (a symlink resolved to its target) */
    char *write_path; /* where the data goes now: the temporary, or path when in place */
    bool in_place;    /* true for devices, FIFOs and sockets */
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
 * pfi_atomic_commit — close the stream (if any) and move the data into place. Any write error
 * seen on the stream fails the commit. The temporary is removed on failure; a is cleared
 * either way. Errors: PFI_ERR_IO (diag says why).
 */
pfi_error pfi_atomic_commit(pfi_atomic_file *a, pfi_diag *diag);

/* pfi_atomic_abort — give up: close, remove the temporary, clear a. A cleared a is a no-op. */
void pfi_atomic_abort(pfi_atomic_file *a);

#ifdef __cplusplus
}
#endif

#endif
