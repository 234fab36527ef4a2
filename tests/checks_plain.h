/*
 * Soft checks for tests with their own main (no cmocka): CHECK prints every failed
 * expectation with its place and keeps going; `failures` counts them, and main returns
 * non-zero when it is not 0. The cmocka tests use checks.h.
 */
#ifndef PFI_TESTS_CHECKS_PLAIN_H
#define PFI_TESTS_CHECKS_PLAIN_H

#include <stdio.h>

static int failures;

#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#endif
