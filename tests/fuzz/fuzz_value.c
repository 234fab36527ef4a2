/*
 * Fuzz pfi_value_parse and pfi_value_is_missing_token (pfi/value.h) on the raw bytes: any
 * length, not NUL-terminated (libFuzzer's buffer ends exactly at size, so AddressSanitizer
 * catches any read past len).
 *
 * Invariants checked (abort on violation):
 *   - PFI_VALUE_OK gives a finite number; MISSING and INVALID give NaN;
 *   - a missing-value token always parses as PFI_VALUE_MISSING;
 *   - parsing is a pure function of the bytes (a second call, on a copy, agrees bit for bit);
 *   - an OK result equals strtod's on the blank-trimmed text (C locale);
 *   - a prefix of the input (first half, len < size) gives the same answer as that prefix
 *     copied and NUL-terminated: nothing beyond len is looked at.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/value.h"

static void check(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    double v = 0.0;
    pfi_value_status s = pfi_value_parse(text, size, &v);
    bool missing = pfi_value_is_missing_token(text, size);

    switch (s) {
    case PFI_VALUE_OK:
        if (!isfinite(v))
            abort();
        break;
    case PFI_VALUE_MISSING:
    case PFI_VALUE_INVALID:
        if (!isnan(v))
            abort();
        break;
    default:
        abort();
    }
    if (missing != (s == PFI_VALUE_MISSING))
        abort();

    /* The same bytes at another address: same answer. */
    char *copy = malloc(size + 1);
    if (copy == NULL)
        return;
    if (size > 0)
        memcpy(copy, data, size);
    copy[size] = '\0';
    double w = 0.0;
    pfi_value_status s2 = pfi_value_parse(copy, size, &w);
    if (s2 != s || (s == PFI_VALUE_OK && memcmp(&v, &w, sizeof v) != 0))
        abort();

    /* Cross-check an accepted number against strtod on the trimmed text. */
    if (s == PFI_VALUE_OK) {
        char *p = copy;
        size_t n = size;
        while (n > 0 && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) {
            p++;
            n--;
        }
        while (n > 0 &&
               (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r' || p[n - 1] == '\n'))
            n--;
        p[n] = '\0';
        char *end = NULL;
        double ref = strtod(p, &end); /* the harness never changes LC_NUMERIC from "C" */
        if (end != p + n || memcmp(&ref, &v, sizeof v) != 0)
            abort();
    }
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size);
    /* A shorter len into the same buffer: the bytes beyond len must not matter. */
    if (size > 1)
        check(data, size / 2);
    return 0;
}
