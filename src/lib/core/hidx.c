/*
 * An index by hash (core/hidx.h): open addressing with linear probing, kept at most half
 * full, the hash stored beside the position so that growing never asks the caller.
 */
#include "core/hidx.h"

#include <string.h>

#include "core/memory.h"

uint64_t hidx_hash(const void *p, size_t n, uint64_t h)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

/* the hash spread over the low bits (FNV's low bits are weak for short keys) */
static size_t home(uint64_t h, size_t mask)
{
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (size_t)h & mask;
}

size_t hidx_find(const hidx *t, uint64_t h, bool (*eq)(const void *ctx, size_t ix), const void *ctx)
{
    if (t->size == 0)
        return SIZE_MAX;
    size_t mask = t->size - 1;
    for (size_t i = home(h, mask); t->slot[i].ix1 != 0; i = (i + 1) & mask)
        if (t->slot[i].hash == h && eq(ctx, t->slot[i].ix1 - 1))
            return t->slot[i].ix1 - 1;
    return SIZE_MAX;
}

static void put(hidx_slot *slot, size_t mask, uint64_t h, size_t ix1)
{
    size_t i = home(h, mask);
    while (slot[i].ix1 != 0)
        i = (i + 1) & mask;
    slot[i].hash = h;
    slot[i].ix1 = ix1;
}

pfi_error hidx_add(hidx *t, uint64_t h, size_t ix)
{
    if (2 * (t->count + 1) > t->size) {
        size_t ns = t->size ? 2 * t->size : 64;
        hidx_slot *s = pfi_calloc(ns, sizeof *s);
        if (s == NULL)
            return PFI_ERR_NOMEM;
        for (size_t i = 0; i < t->size; i++)
            if (t->slot[i].ix1 != 0)
                put(s, ns - 1, t->slot[i].hash, t->slot[i].ix1);
        pfi_free(t->slot);
        t->slot = s;
        t->size = ns;
    }
    put(t->slot, t->size - 1, h, ix + 1);
    t->count++;
    return PFI_OK;
}

void hidx_reset(hidx *t)
{
    if (t->slot != NULL)
        memset(t->slot, 0, t->size * sizeof *t->slot);
    t->count = 0;
}

void hidx_free(hidx *t)
{
    pfi_free(t->slot);
    memset(t, 0, sizeof *t);
}
