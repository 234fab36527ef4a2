/*
 * Growable, capped text buffer.
 */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(pfid_buf *b, size_t more)
{
    if (b->failed)
        return false;
    if (b->len + more + 1 <= b->cap)
        return true;
    size_t nc = b->cap ? b->cap : 4096;
    while (nc < b->len + more + 1)
        nc *= 2;
    if (nc > PFID_BUF_MAX) {
        b->failed = true;
        return false;
    }
    char *np = realloc(b->p, nc);
    if (np == NULL) {
        b->failed = true;
        return false;
    }
    b->p = np;
    b->cap = nc;
    return true;
}

void pfid_buf_printf(pfid_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[512];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if (!reserve(b, (size_t)n))
        return;
    if ((size_t)n < sizeof tmp) {
        memcpy(b->p + b->len, tmp, (size_t)n + 1);
    } else {
        va_start(ap, fmt);
        vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

void pfid_buf_label(pfid_buf *b, const char *s)
{
    for (; *s != '\0'; s++) {
        if (!reserve(b, 2))
            return;
        if (*s == '\\' || *s == '"') {
            b->p[b->len++] = '\\';
            b->p[b->len++] = *s;
        } else if (*s == '\n') {
            b->p[b->len++] = '\\';
            b->p[b->len++] = 'n';
        } else {
            b->p[b->len++] = *s;
        }
        b->p[b->len] = '\0';
    }
}

char *pfid_buf_take(pfid_buf *b, size_t *len)
{
    if (b->failed || !reserve(b, 0)) {
        free(b->p);
        memset(b, 0, sizeof *b);
        return NULL;
    }
    b->p[b->len] = '\0';
    char *p = b->p;
    if (len != NULL)
        *len = b->len;
    memset(b, 0, sizeof *b);
    return p;
}
