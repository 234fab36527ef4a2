/*
 * core/hidx.h: 20 000 distinct keys added and looked up (present: at the position each was
 * added at; absent: not found) as the table grows, with a hash that collides on purpose (every key
 * of one of 16 hashes: eq alone must tell them apart) and with the real one; reset empties it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hidx.h"

enum { N = 20000 };
static char keys[N][24];
static int failures;

static bool key_is(const void *ctx, size_t ix)
{
    return strcmp(keys[ix], ctx) == 0;
}

static void run(bool collide)
{
    hidx t = {0};
    for (size_t i = 0; i < N; i++) {
        snprintf(keys[i], sizeof keys[i], "GPU-%zx-%zu", i * 2654435761u, i);
        uint64_t h = collide ? i % 16 : hidx_hash(keys[i], strlen(keys[i]), HIDX_SEED);
        if (hidx_find(&t, h, key_is, keys[i]) != SIZE_MAX && failures++ < 10)
            fprintf(stderr, "FAIL: key %zu found before it was added\n", i);
        if (hidx_add(&t, h, i) != PFI_OK)
            abort();
        if (collide && i > 600)
            continue; /* all in 16 chains: quadratic, a few checks are enough */
        for (size_t q = 0; q <= i; q += 1 + i / 50) {
            uint64_t hq = collide ? q % 16 : hidx_hash(keys[q], strlen(keys[q]), HIDX_SEED);
            if (hidx_find(&t, hq, key_is, keys[q]) != q && failures++ < 10)
                fprintf(stderr, "FAIL: key %zu not found at its place (collide %d)\n", q, collide);
        }
    }
    if (t.count != N && failures++ < 10)
        fprintf(stderr, "FAIL: count %zu\n", t.count);
    hidx_reset(&t);
    if (hidx_find(&t, collide ? 3 : hidx_hash(keys[3], strlen(keys[3]), HIDX_SEED), key_is,
                  keys[3]) != SIZE_MAX &&
        failures++ < 10)
        fprintf(stderr, "FAIL: found after reset\n");
    hidx_free(&t);
}

int main(void)
{
    run(false);
    run(true);
    if (failures > 0) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
