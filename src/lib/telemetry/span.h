/*
 * Text spans for the line readers (private, not installed): a borrowed piece of a line,
 * (pointer, length), never NUL-terminated, and the few operations every reader does on
 * one — compare with a word, trim blanks, split on blanks. The scanning underneath is
 * scan.h's.
 */
#ifndef PFI_TELEMETRY_SPAN_H
#define PFI_TELEMETRY_SPAN_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "telemetry/scan.h"

/* s[0..n), borrowed from the line being read. */
typedef struct span {
    const char *s;
    size_t n;
} span;

/* Whether x is exactly the word w (a NUL-terminated string). */
static inline bool span_eq(span x, const char *w)
{
    size_t n = strlen(w);
    return x.n == n && memcmp(x.s, w, n) == 0;
}

/* x without its leading and trailing blanks (' ', '\t'). */
static inline span span_trim(span x)
{
    while (x.n > 0 && tm_is_blank(x.s[0])) {
        x.s++;
        x.n--;
    }
    while (x.n > 0 && tm_is_blank(x.s[x.n - 1]))
        x.n--;
    return x;
}

/* s[0..n) split on runs of blanks into out[0..max): the number of tokens, or max + 1 when
 * there are more (out then holds the first max). */
static inline size_t span_split_ws(const char *s, size_t n, span *out, size_t max)
{
    size_t k = 0, i = tm_skip_blanks(s, 0, n);
    while (i < n) {
        size_t e = tm_find_blank(s, i, n);
        if (k == max)
            return max + 1;
        out[k++] = (span){s + i, e - i};
        i = tm_skip_blanks(s, e, n);
    }
    return k;
}

#endif
