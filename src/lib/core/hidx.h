/*
 * hidx — an index by hash: finds the position of an item in the caller's own array from its
 * key, in O(1) expected (open addressing, linear probing, at most half full). The table keeps
 * each item's 64-bit hash and position only; the caller keeps the items and says, through
 * eq, whether a candidate position holds the key. Items are only added (the controller's
 * GPUs and jobs, the jobs file's names); hidx_reset empties the table for a rebuild.
 * Not thread-safe; no allocation but in hidx_add (pfi_malloc).
 */
#ifndef PFI_CORE_HIDX_H
#define PFI_CORE_HIDX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"

typedef struct hidx_slot {
    uint64_t hash;
    size_t ix1; /* position + 1; 0: empty */
} hidx_slot;

/* hidx — zero-initialised is an empty table; owned (hidx_free). */
typedef struct hidx {
    hidx_slot *slot;
    size_t size; /* 0 or a power of two */
    size_t count;
} hidx;

/* hidx_hash — FNV-1a of the n bytes at p continuing from h (start with HIDX_SEED). */
#define HIDX_SEED 1469598103934665603ull
uint64_t hidx_hash(const void *p, size_t n, uint64_t h);

/* hidx_find — the position of the first item with hash h for which eq(ctx, position) is
 * true; SIZE_MAX when none. */
size_t hidx_find(const hidx *t, uint64_t h, bool (*eq)(const void *ctx, size_t ix),
                 const void *ctx);

/* hidx_add — add position ix with hash h (the caller has checked the key is not there).
 * Errors: PFI_ERR_NOMEM (the table is unchanged). */
pfi_error hidx_add(hidx *t, uint64_t h, size_t ix);

/* hidx_reset — no items (the memory kept). */
void hidx_reset(hidx *t);

/* hidx_free — release the table; it is empty again. */
void hidx_free(hidx *t);

#endif
