/*
 * The replaceable allocator (pfi/memory.h). The four functions live in one process-wide table,
 * read without locking: pfi_replace_allocator is documented to run before anything else.
 */
#include "core/memory.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct {
    pfi_malloc_func malloc_func;
    pfi_realloc_func realloc_func;
    pfi_calloc_func calloc_func;
    pfi_free_func free_func;
} allocator = {malloc, realloc, calloc, free};

/* jansson's allocations that failed on this thread (see pfi_json_failures). */
static _Thread_local unsigned long json_failed;

/* What jansson calls once it is switched over: the current table, looked up at each call. */
static void *json_malloc(size_t size)
{
    void *p = pfi_malloc(size);
    if (p == NULL)
        json_failed++;
    return p;
}

static void json_free(void *ptr)
{
    pfi_free(ptr);
}

pfi_error pfi_replace_allocator(pfi_malloc_func malloc_func, pfi_realloc_func realloc_func,
                                pfi_calloc_func calloc_func, pfi_free_func free_func)
{
    if (malloc_func == NULL || realloc_func == NULL || calloc_func == NULL || free_func == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    allocator.malloc_func = malloc_func;
    allocator.realloc_func = realloc_func;
    allocator.calloc_func = calloc_func;
    allocator.free_func = free_func;
    /* jansson through the table as well (its default is malloc/free, which is what the table
     * holds again after a restore), so that JSON parsing fails and leaks like libpfi's own */
    json_set_alloc_funcs(json_malloc, json_free);
    return PFI_OK;
}

unsigned long pfi_json_failures(void)
{
    return json_failed;
}

void *pfi_malloc(size_t size)
{
    return allocator.malloc_func(size ? size : 1);
}

void *pfi_calloc(size_t count, size_t size)
{
    if (count == 0 || size == 0)
        count = size = 1;
    if (count > SIZE_MAX / size) /* whatever the installed calloc does about it */
        return NULL;
    return allocator.calloc_func(count, size);
}

void *pfi_realloc(void *ptr, size_t size)
{
    return allocator.realloc_func(ptr, size ? size : 1);
}

void pfi_free(void *ptr)
{
    if (ptr != NULL)
        allocator.free_func(ptr);
}

char *pfi_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = pfi_malloc(n);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

char *pfi_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = pfi_malloc(len + 1);
    if (p != NULL) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}
