/*
 * A growable text buffer with a hard cap (responses are built in memory before they are
 * sent). After a failed append the buffer is marked failed and every later append is a no-op.
 */
#ifndef PFID_BUF_H
#define PFID_BUF_H

#include <stdbool.h>
#include <stddef.h>

#define PFID_BUF_MAX (16u << 20)

typedef struct pfid_buf {
    char *p; /* owned; NUL-terminated while !failed */
    size_t len;
    size_t cap;
    bool failed; /* out of memory or over PFID_BUF_MAX */
} pfid_buf;

void pfid_buf_printf(pfid_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s with Prometheus label-value escaping (\\, \", \n). */
void pfid_buf_label(pfid_buf *b, const char *s);
/* The text (caller owns it) or NULL when the buffer failed (then it is freed). */
char *pfid_buf_take(pfid_buf *b, size_t *len);

#endif
