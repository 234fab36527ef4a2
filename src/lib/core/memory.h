/*
 * The allocation functions every part of libpfi uses (every room of src/lib, and what it
 * hands to callers): thin wrappers over the functions pfi_replace_allocator installed
 * (pfi/memory.h). Not part of the public API, except pfi_free and pfi_strdup, declared there.
 *
 * They differ from the C library's in one way: a request for 0 bytes asks for 1, so a NULL
 * return always means "out of memory" and every caller can map it to PFI_ERR_NOMEM.
 * Memory from another library (getline, realpath, open_memstream, json_dumps, sqlite3_malloc)
 * is never released with pfi_free: use that library's function.
 */
#ifndef PFI_CORE_MEMORY_H
#define PFI_CORE_MEMORY_H

#include <stddef.h>

#include "pfi/memory.h"

/* pfi_malloc — size bytes (0 asks for 1), uninitialised; NULL when out of memory. */
void *pfi_malloc(size_t size);

/* pfi_calloc — count × size zeroed bytes (0 asks for 1); NULL when out of memory or when the
 * product overflows. */
void *pfi_calloc(size_t count, size_t size);

/* pfi_realloc — ptr (NULL: a new block) resized to size bytes (0 asks for 1), as realloc:
 * on NULL, ptr is untouched and still owned by the caller. */
void *pfi_realloc(void *ptr, size_t size);

/* pfi_strndup — a NUL-terminated copy of at most n bytes of s; NULL when out of memory. */
char *pfi_strndup(const char *s, size_t n);

/*
 * pfi_json_failures — how many of jansson's allocations have failed on this thread so far
 * (counted once pfi_replace_allocator has switched jansson over; always 0 before). jansson
 * does not report every failure: a parse may end in a generic syntax error, or succeed with a
 * string byte dropped; an object member or array element that could not be allocated is left
 * out. So a parse or a build during which the count moved is out of memory, whatever jansson
 * returned: read the count before, compare after (pfi_json_failed).
 */
unsigned long pfi_json_failures(void);

/* pfi_json_failed — true when a jansson allocation failed on this thread since the count
 * was since (pfi_json_failures). */
static inline int pfi_json_failed(unsigned long since)
{
    return pfi_json_failures() != since;
}

#endif
