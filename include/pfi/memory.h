/*
 * pfi/memory.h — the allocator libpfi uses, and how memory crosses the API.
 *
 * Every allocation libpfi makes goes through four functions that a program may replace once,
 * at start-up (pfi_replace_allocator) — to count or cap libpfi's memory, to put it in an arena,
 * or, in tests, to fail the Nth allocation and check that every operation reports
 * PFI_ERR_NOMEM and leaks nothing (tests/test_oom.c). The model is libuv's
 * uv_replace_allocator.
 *
 * The rule for memory that crosses the API, in both directions:
 *
 *   - A buffer libpfi hands to the caller to release (the arrays of pfi_manifest_files,
 *     pfi_store_run_features, pfi_ctl_agents_parse, pfi_audit_read, ...) is released with
 *     pfi_free(), never free(). Objects with a _destroy, _close or _clear function are released
 *     with that function.
 *   - A string the caller stores into a libpfi structure for libpfi to free later (a field of
 *     pfi_manifest, a name of pfi_groups) comes from pfi_strdup(), or from a setter that copies
 *     (pfi_mapping_set).
 *
 * With the default allocator pfi_free is free and pfi_strdup is strdup, so a program that
 * never replaces the allocator sees no difference; a program that does must follow the rule.
 *
 * Libraries libpfi uses: jansson is switched to the same functions by pfi_replace_allocator
 * (json_set_alloc_funcs), so JSON parsing runs on the replaced allocator too, and jansson's
 * own output (json_dumps) must then be released with pfi_free(). Only then is every failed
 * jansson allocation reported as PFI_ERR_NOMEM: jansson itself reports some as a syntax error,
 * or drops a byte of a string, which libpfi sees only through its own functions. libcsv's
 * buffers, allocated per reader, use them as well. SQLite, PCRE2, GSL, libxml2, PLplot and
 * the libc calls that allocate (realpath, open_memstream, glob) keep their own allocators:
 * libpfi releases what they return with their own functions, and reports their allocation
 * failures as PFI_ERR_NOMEM only where the library tells them apart.
 */
#ifndef PFI_MEMORY_H
#define PFI_MEMORY_H

#include <stddef.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The four allocation functions, with the C library's contracts (malloc, realloc, calloc,
 * free). libpfi never asks for 0 bytes and never frees NULL through them. */
typedef void *(*pfi_malloc_func)(size_t size);
typedef void *(*pfi_realloc_func)(void *ptr, size_t size);
typedef void *(*pfi_calloc_func)(size_t count, size_t size);
typedef void (*pfi_free_func)(void *ptr);

/*
 * pfi_replace_allocator — make libpfi (and jansson, see above) allocate through malloc_func,
 * realloc_func, calloc_func and free_func from now on. All four or none: a NULL among them
 * returns PFI_ERR_INVALID_ARGUMENT and changes nothing. Passing malloc, realloc, calloc and
 * free restores the default.
 *
 * Process-wide. Call it before any other pfi call (and before any jansson object exists):
 * memory allocated by one set of functions must not be released by another. Not thread-safe:
 * no other thread may be inside libpfi or jansson while it runs. Returns PFI_OK.
 */
pfi_error pfi_replace_allocator(pfi_malloc_func malloc_func, pfi_realloc_func realloc_func,
                                pfi_calloc_func calloc_func, pfi_free_func free_func);

/*
 * pfi_free — release ptr (NULL is a no-op), a buffer libpfi or jansson handed to the caller,
 * with the current free function. Thread-safe (as the free function is).
 */
void pfi_free(void *ptr);

/*
 * pfi_strdup — a copy of the NUL-terminated s, allocated with the current malloc function, for
 * the caller to store into a libpfi structure (or release with pfi_free). NULL when the
 * allocation fails. Thread-safe (as the malloc function is).
 */
char *pfi_strdup(const char *s);

#ifdef __cplusplus
}
#endif

#endif
