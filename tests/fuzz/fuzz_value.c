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
 *     copied and NUL-terminated: nothing beyond len is looked at;
 *   - pfi_reduction_parse on the NUL-terminated bytes: OK gives a fraction in [0, 1] equal
 *     to the number (bare, at most 1) or to it / 100 (with '%'); INVALID gives NaN and a
 *     NUL-terminated reason naming both spellings (a 16-byte buffer: cut, never overrun).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/value.h"

static void reduction(const char *text, size_t size)
{
    if (memchr(text, '\0', size) != NULL)
        return; /* a C string for this parser */
    double r = 0.0;
    char why[256], small[16];
    pfi_value_status s = pfi_reduction_parse(text, &r, why, sizeof why);
    double r2 = 0.0;
    if (pfi_reduction_parse(text, &r2, small, sizeof small) != s ||
        (s != PFI_VALUE_OK && memchr(small, '\0', sizeof small) == NULL))
        abort(); /* (the reason is written only for a refusal) */
    if (s == PFI_VALUE_OK) {
        if (!(r >= 0 && r <= 1) || memcmp(&r, &r2, sizeof r) != 0)
            abort();
        size_t n = size;
        while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t' || text[n - 1] == '\r' ||
                         text[n - 1] == '\n'))
            n--;
        bool pct = n > 0 && text[n - 1] == '%';
        double v;
        if (pfi_value_parse(text, n - pct, &v) != PFI_VALUE_OK || (pct ? v / 100 : v) != r)
            abort();
    } else if (s != PFI_VALUE_INVALID || !isnan(r) || strstr(why, "0.3") == NULL ||
               strstr(why, "30%") == NULL) {
        abort();
    }
}

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
    reduction(copy, size);
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
