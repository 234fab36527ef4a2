/*
 * Job mapping inputs: the static mapping file and a process environment (Slurm).
 *
 * Mapping file (jobs = static): one GPU a line, `GPU JOB [CLASS]`, fields separated by blanks;
 * GPU is a UUID ("GPU-...") or a decimal index; JOB and CLASS are ids (pfid_valid_id);
 * '#' starts a comment line; a GPU listed twice is an error.
 */
#ifndef PFID_MAPPING_H
#define PFID_MAPPING_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "pfi/error.h"

#define PFID_MAPPING_MAX 4096
#define PFID_MAPPING_MAX_BYTES (1 << 20)

typedef struct pfid_mapping_entry {
    char gpu[96]; /* UUID, or "" when by index */
    long index;   /* -1 when by UUID */
    char job[PFID_ID_MAX];
    char cls[PFID_ID_MAX]; /* "" when not given */
} pfid_mapping_entry;

typedef struct pfid_mapping {
    pfid_mapping_entry *e; /* owned */
    size_t n;
} pfid_mapping;

/*
 * pfid_mapping_parse — parse text[0..len) into *out (zeroed first; pfid_mapping_clear after
 * use). Errors: PFI_ERR_PARSE (bad line: diag->line and message say why), PFI_ERR_LIMIT (more
 * than PFID_MAPPING_MAX lines or PFID_MAPPING_MAX_BYTES), PFI_ERR_NOMEM.
 */
pfi_error pfid_mapping_parse(const char *text, size_t len, pfid_mapping *out, pfi_diag *diag);

/* pfid_mapping_load — pfid_mapping_parse of a file (diag->file set); PFI_ERR_IO. */
pfi_error pfid_mapping_load(const char *path, pfid_mapping *out, pfi_diag *diag);

/* pfid_mapping_clear — free what m owns and zero it. NULL is a no-op. */
void pfid_mapping_clear(pfid_mapping *m);

/* pfid_mapping_find — the entry for a GPU (by UUID first, then index); NULL when none. */
const pfid_mapping_entry *pfid_mapping_find(const pfid_mapping *m, const char *uuid,
                                            unsigned index);

/*
 * pfid_environ_job — the Slurm job id in a process environment env[0..len) (NUL-separated
 * NAME=VALUE, as /proc/PID/environ): SLURM_JOB_ID, else SLURM_JOBID, copied into
 * out[PFID_ID_MAX]. false when absent or not a valid id.
 */
bool pfid_environ_job(const char *env, size_t len, char *out);

#endif
