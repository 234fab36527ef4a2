/*
 * pfi/capctl.h — setting GPU power caps safely (DESIGN §8).
 *
 * Setting a cap is privileged and outlives the process, so every change goes through here:
 *   - a request outside the device's [min, max] is refused (PFI_ERR_OUT_OF_RANGE) or, when
 *     asked, clamped — rounding toward the valid range (ceil at the min side, floor at the
 *     max side) so the result is always settable (case-17);
 *   - the original limits of every GPU are journaled — a small file written atomically
 *     (temporary, fsync, rename) — before the first change;
 *   - after every set both the requested limit and the enforced limit are read back; success
 *     is requested == target and enforced <= target, anything else is reported
 *     (PFI_ERR_NOT_EFFECTIVE; case-18), and NOT_SUPPORTED from the setter is a hard failure;
 *   - when several caps change together, those that go down are set before those that go up,
 *     so the sum never overshoots on the way;
 *   - pfi_capctl_restore puts the originals back (only where the limit was changed) and
 *     removes the journal; after a crash, pfi_journal_read + pfi_journal_restore do the same
 *     from the file (`pfi restore`).
 * Signals are the caller's business: set a flag in the handler, call restore from the main
 * loop (nothing here is async-signal-safe).
 */
#ifndef PFI_CAPCTL_H
#define PFI_CAPCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"
#include "pfi/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * pfi_cap_resolve_mw — the limit in mW for a request of request_w watts on a GPU with
 * limits l (min and max must be valid, else PFI_ERR_NOT_SUPPORTED). Inside [min, max] the
 * request is rounded to the nearest mW. Outside: with clamp, *out_mw is min or max and
 * *clamped true; without, PFI_ERR_OUT_OF_RANGE and diag says the range. Non-finite or
 * non-positive requests: PFI_ERR_INVALID_ARGUMENT.
 */
pfi_error pfi_cap_resolve_mw(const pfi_gpu_limits *l, double request_w, bool clamp,
                             uint32_t *out_mw, bool *clamped, pfi_diag *diag);

/*
 * pfi_cap_split_budget — split a node budget of budget_mw over n GPUs with limits l[n] (min
 * and max valid): every GPU gets at least its min, the rest is shared evenly, never above a
 * GPU's max; integer mW whose sum never exceeds the budget. out_mw[n] caller-allocated;
 * *unallocated_mw what could not be given (every GPU at max). Errors: PFI_ERR_OUT_OF_RANGE
 * when the budget is below the sum of the minimums (diag: "budget 700 W below sum of minimum
 * limits 800 W"; out_mw untouched), PFI_ERR_NOT_SUPPORTED (a GPU without min/max).
 */
pfi_error pfi_cap_split_budget(const pfi_gpu_limits *l, size_t n, uint64_t budget_mw,
                               uint32_t *out_mw, uint64_t *unallocated_mw, pfi_diag *diag);

/* ---- ownership: one owner per GPU (DESIGN §10) -------------------------------------------
 * A file per GPU under a run directory (PFI_RUN_DIR_DEFAULT), held with flock(2) by the one
 * process that may change its power limit: pfid, pfi sweep and pfi restore take it before
 * their first change. The kernel drops it when the holder dies; a clean release empties the
 * file, so its text found under a free lock names a holder that crashed. */
#define PFI_RUN_DIR_DEFAULT "/run/pfi"
typedef struct pfi_gpu_lock pfi_gpu_lock;

/* pfi_gpu_lock_acquire — lock the GPUs ids[n] (UUIDs, or any stable name) for owner (a
 * short text, e.g. "pfi sweep"; the pid and start time are added) under run_dir (created,
 * 0755, when missing). All or none: PFI_ERR_EXISTS when one is held by another process
 * (diag names the GPU, the holder's text and the lock file), PFI_ERR_IO (the directory or a
 * file cannot be made), PFI_ERR_INVALID_ARGUMENT, PFI_ERR_NOMEM. *out owned: release it. */
pfi_error pfi_gpu_lock_acquire(const char *run_dir, const char *const *ids, size_t n,
                               const char *owner, pfi_gpu_lock **out, pfi_diag *diag);

/* pfi_gpu_lock_previous — the owner text left in GPU k's lock by a holder that did not
 * release it (it crashed), or NULL. Borrowed from l. */
const char *pfi_gpu_lock_previous(const pfi_gpu_lock *l, size_t k);

/* pfi_gpu_lock_release — empty and unlock every file of l and free it. NULL: no-op. */
void pfi_gpu_lock_release(pfi_gpu_lock *l);

/* ---- journal ---------------------------------------------------------------------------- */

#define PFI_JOURNAL_MAX_GPUS 1024

typedef struct pfi_journal_entry {
    unsigned index; /* backend index when journaled */
    char uuid[96];  /* "" when the backend had none; restore matches by UUID first */
    uint32_t original_mw;
} pfi_journal_entry;

/* pfi_journal — original limits of the GPUs a process is about to change. Owns entries. */
typedef struct pfi_journal {
    char backend[16];  /* pfi_gpu_backend_name of the backend: "nvml" */
    char library[512]; /* the backend's library as given (pfi_gpu_config.library; ""
                        * default) */
    long pid;          /* process that wrote it */
    char owner[64];    /* the tool that owns the GPUs ("pfid", "pfi sweep"; "" unknown: a
                        * journal written before the owner line) */
    pfi_journal_entry *entries;
    size_t n;
} pfi_journal;

/* pfi_journal_clear — free what j owns and zero it. NULL is a no-op. */
void pfi_journal_clear(pfi_journal *j);

/*
 * pfi_journal_write — write j to path atomically (temporary beside it, fsync, rename, fsync
 * of the directory): the file is either absent, the old one, or complete. Errors: PFI_ERR_IO.
 */
pfi_error pfi_journal_write(const char *path, const pfi_journal *j, pfi_diag *diag);

/*
 * (An optional "owner TEXT" line after pid names the tool that owns the GPUs.)
 * pfi_journal_parse — parse journal text[0..len) into *out (zeroed first; clear it after
 * use). Format, one item a line:
 *   pfi-cap-journal 1 / backend NAME / library PATH / pid N / gpu INDEX UUID|- MW / end
 * Errors: PFI_ERR_PARSE (anything else, or no "end": a torn file), PFI_ERR_LIMIT, NOMEM.
 */
pfi_error pfi_journal_parse(const char *text, size_t len, pfi_journal *out, pfi_diag *diag);

/* pfi_journal_read — pfi_journal_parse of the file at path. PFI_ERR_IO when it cannot be
 * read (errno ENOENT: diag says "no journal"). */
pfi_error pfi_journal_read(const char *path, pfi_journal *out, pfi_diag *diag);

/* pfi_cap_result — what happened to one GPU in an apply or restore. */
typedef struct pfi_cap_result {
    unsigned gpu; /* backend index */
    uint32_t target_mw;
    uint32_t requested_mw; /* read back; valid when PFI_LIMIT_CURRENT in readback */
    uint32_t enforced_mw;  /* read back; valid when PFI_LIMIT_ENFORCED in readback */
    unsigned readback;     /* PFI_LIMIT_CURRENT | PFI_LIMIT_ENFORCED as read */
    bool changed;          /* a set call succeeded */
    bool skipped;          /* restore: already at the original, nothing done */
    pfi_error error;       /* PFI_OK, or why this GPU failed */
    char message[512];     /* one line when error != PFI_OK */
} pfi_cap_result;

/*
 * pfi_journal_restore — put back every journaled limit on backend g: match each entry to a
 * GPU by UUID (index when the entry has none), skip a GPU already at its original, set it
 * otherwise and read back. results[j->n] caller-allocated, one per entry. Returns PFI_OK when
 * every GPU holds its original limit, else the first GPU's error (all GPUs are attempted).
 * Does not remove the journal.
 */
pfi_error pfi_journal_restore(pfi_gpu *g, const pfi_journal *j, pfi_cap_result *results,
                              pfi_diag *diag);

/* ---- controller ------------------------------------------------------------------------- */

typedef struct pfi_capctl pfi_capctl;

/*
 * pfi_capctl_create — take charge of GPUs gpus[n] of backend g (borrowed; must outlive the
 * controller): read their limits now (the originals). journal_path (may be NULL: no
 * journal — for a backend without PFI_GPU_CAP_PERSISTENT_LIMITS, whose limits die with the
 * process) is where the originals go before the first change; library (the backend's
 * pfi_gpu_config.library as the caller gave it, may be NULL) is recorded in it. Refuses
 * (PFI_ERR_EXISTS) when a journal is already there — an earlier run was not restored: run
 * `pfi restore` first. Errors: PFI_ERR_NOT_SUPPORTED (a GPU's current limit or min/max
 * cannot be read: it will not be touched), PFI_ERR_GPU_LOST, PFI_ERR_INVALID_ARGUMENT,
 * PFI_ERR_NOMEM.
 */
pfi_error pfi_capctl_create(pfi_gpu *g, const unsigned *gpus, size_t n, const char *journal_path,
                            const char *library, pfi_capctl **out, pfi_diag *diag);

/* pfi_capctl_limits — the limits read at creation for the k-th controlled GPU (borrowed). */
const pfi_gpu_limits *pfi_capctl_original(const pfi_capctl *c, size_t k);

/*
 * pfi_capctl_adopt — take charge of GPUs gpus[n] as pfi_capctl_create does, but of an earlier
 * run's journal j (read from journal_path, which stays): the originals are the journal's,
 * not the limits now (a restarted pfid that holds its caps across the restart), and a GPU
 * not at its original counts as changed (the restore puts it back and removes the journal).
 * Errors: PFI_ERR_INVALID_ARGUMENT (no journal, or a GPU missing from it), those of
 * pfi_capctl_create.
 */
pfi_error pfi_capctl_adopt(pfi_gpu *g, const unsigned *gpus, size_t n, const char *journal_path,
                           const char *library, const pfi_journal *j, pfi_capctl **out,
                           pfi_diag *diag);

/* pfi_capctl_set_owner — the owner recorded in the journal c writes (at most 63 bytes of
 * printable text; longer is cut). Call before the first apply. */
void pfi_capctl_set_owner(pfi_capctl *c, const char *owner);

/*
 * pfi_capctl_apply — set target_mw[k] on the k-th GPU, all k < n: journal first (once),
 * lower before raise, read back after each set. results[n] caller-allocated. Stops at the
 * first GPU that fails hard (a set error); a cap that did not take (PFI_ERR_NOT_EFFECTIVE)
 * does not stop the others. Returns PFI_OK or the first error. Targets must have been
 * resolved with pfi_cap_resolve_mw.
 */
pfi_error pfi_capctl_apply(pfi_capctl *c, const uint32_t *target_mw, pfi_cap_result *results,
                           pfi_diag *diag);

/*
 * pfi_capctl_apply_subset — pfi_capctl_apply for the GPUs k with which[k] true only; the
 * others are not touched (their result is marked skipped), so a lost GPU that is not asked
 * for does not fail the call. target_mw[n] and which[n] both have one entry per GPU.
 */
pfi_error pfi_capctl_apply_subset(pfi_capctl *c, const uint32_t *target_mw, const bool *which,
                                  pfi_cap_result *results, pfi_diag *diag);

/*
 * pfi_capctl_restore — set the originals back on every GPU this controller changed (lower
 * first), read back, and remove the journal when all hold their original. results[n]
 * (may be NULL). Allocates nothing (its scratch comes with c), so it works when memory is
 * exhausted. Returns PFI_OK or the first error; GPUs that failed keep the journal.
 */
pfi_error pfi_capctl_restore(pfi_capctl *c, pfi_cap_result *results, pfi_diag *diag);

/* pfi_capctl_count — number of controlled GPUs. */
size_t pfi_capctl_count(const pfi_capctl *c);

/* pfi_capctl_destroy — free c. Does NOT restore (call pfi_capctl_restore first). NULL: no-op. */
void pfi_capctl_destroy(pfi_capctl *c);

#ifdef __cplusplus
}
#endif

#endif
