/*
 * Bearer tokens of pfid and `pfi control --listen` (pfi/http.h): the token file — one token a
 * line, each with a name for the logs and a scope (read or control) — read without blocking
 * (a FIFO or a device named as the token file is refused, never waited on) and only when it
 * is a regular file of the user with no group or other access; and the strict check of an
 * Authorization header against every token, in time independent of where they differ.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/memory.h"
#include "pfi/http.h"

#define TOKENS_MAX_BYTES (64 * 1024)

static pfi_error tfail(pfi_diag *d, pfi_error e, long line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static pfi_error tfail(pfi_diag *d, pfi_error e, long line, const char *fmt, ...)
{
    if (d != NULL) {
        pfi_diag_clear(d);
        d->line = line;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->message, sizeof d->message, fmt, ap);
        va_end(ap);
    }
    return e;
}

const char *pfi_http_scope_name(pfi_http_scope s)
{
    return s == PFI_HTTP_SCOPE_CONTROL ? "control" : s == PFI_HTTP_SCOPE_READ ? "read" : "none";
}

/* RFC 6750 §2.1 b64token characters. */
static bool token_char(unsigned char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.' || ch == '_' || ch == '~' || ch == '+' || ch == '/' || ch == '=';
}

static bool valid_token(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!token_char((unsigned char)s[i]))
            return false;
    return n > 0;
}

pfi_error pfi_http_tokens_parse(const char *text, size_t len, pfi_http_tokens *out, pfi_diag *d)
{
    memset(out, 0, sizeof *out);
    size_t pos = 0;
    long ln = 0;
    while (pos < len) {
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        ln++;
        const char *l = text + pos;
        size_t n = end - pos;
        pos = end < len ? end + 1 : end;
        if (n > 0 && l[n - 1] == '\r')
            n--;
        if (memchr(l, '\0', n) != NULL)
            return tfail(d, PFI_ERR_PARSE, ln, "line %ld: a NUL byte", ln);
        while (n > 0 && (l[n - 1] == ' ' || l[n - 1] == '\t'))
            n--;
        size_t s = 0;
        while (s < n && (l[s] == ' ' || l[s] == '\t'))
            s++;
        if (s == n || l[s] == '#')
            continue; /* blank or comment */
        /* up to three fields: TOKEN | NAME SCOPE TOKEN */
        const char *f[4];
        size_t fl[4], nf = 0;
        for (size_t i = s; i < n && nf < 4;) {
            while (i < n && (l[i] == ' ' || l[i] == '\t'))
                i++;
            if (i == n)
                break;
            f[nf] = l + i;
            while (i < n && l[i] != ' ' && l[i] != '\t')
                i++;
            fl[nf] = (size_t)(l + i - f[nf]);
            nf++;
        }
        if (nf != 1 && nf != 3)
            return tfail(d, PFI_ERR_PARSE, ln,
                         "line %ld: want TOKEN or NAME SCOPE TOKEN (SCOPE read or control)", ln);
        if (out->n == PFI_HTTP_MAX_TOKENS)
            return tfail(d, PFI_ERR_LIMIT, ln,
                         "line %ld: more than PFI_HTTP_MAX_TOKENS (%d) tokens", ln,
                         PFI_HTTP_MAX_TOKENS);
        pfi_http_token *t = &out->t[out->n];
        const char *tok = nf == 1 ? f[0] : f[2];
        size_t tl = nf == 1 ? fl[0] : fl[2];
        if (tl >= sizeof t->secret || !valid_token(tok, tl))
            return tfail(d, PFI_ERR_PARSE, ln,
                         "line %ld: a token is 1 to %zu characters of [A-Za-z0-9-._~+/=]", ln,
                         sizeof t->secret - 1);
        if (nf == 3) {
            if (fl[0] >= sizeof t->name)
                return tfail(d, PFI_ERR_PARSE, ln, "line %ld: name longer than %zu", ln,
                             sizeof t->name - 1);
            memcpy(t->name, f[0], fl[0]);
            if (fl[1] == 4 && strncmp(f[1], "read", 4) == 0)
                t->scope = PFI_HTTP_SCOPE_READ;
            else if (fl[1] == 7 && strncmp(f[1], "control", 7) == 0)
                t->scope = PFI_HTTP_SCOPE_CONTROL;
            else
                return tfail(d, PFI_ERR_PARSE, ln, "line %ld: scope '%.*s': want read or control",
                             ln, (int)(fl[1] < 32 ? fl[1] : 32), f[1]);
        } else {
            snprintf(t->name, sizeof t->name, "line-%ld", ln);
            t->scope = PFI_HTTP_SCOPE_CONTROL; /* a bare token: the one-token file of before */
        }
        memcpy(t->secret, tok, tl);
        t->len = tl;
        out->n++;
    }
    if (out->n == 0)
        return tfail(d, PFI_ERR_EMPTY, 0, "no token in it");
    return PFI_OK;
}

pfi_error pfi_http_secret_read(const char *path, bool strict_mode, char **text, size_t *len,
                               pfi_diag *d)
{
    *text = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO named here is refused below, not waited on at start-up or SIGHUP */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return tfail(d, PFI_ERR_IO, 0, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return tfail(d, PFI_ERR_INVALID_ARGUMENT, 0, "%s is not a regular file", path);
    }
    if (strict_mode && ((st.st_mode & 077) != 0 || st.st_uid != geteuid())) {
        close(fd);
        return tfail(d, PFI_ERR_INVALID_ARGUMENT, 0,
                     "%s must be owned by uid %u with mode 0600 or stricter (chmod 600 %s)", path,
                     (unsigned)geteuid(), path);
    }
    if (st.st_size > TOKENS_MAX_BYTES) {
        close(fd);
        return tfail(d, PFI_ERR_LIMIT, 0, "%s: larger than %d bytes", path, TOKENS_MAX_BYTES);
    }
    char *b = pfi_malloc((size_t)st.st_size + 1);
    if (b == NULL) {
        close(fd);
        return PFI_ERR_NOMEM;
    }
    size_t n = 0;
    while (n < (size_t)st.st_size) {
        ssize_t r = read(fd, b + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    b[n] = '\0';
    *text = b;
    *len = n;
    return PFI_OK;
}

pfi_error pfi_http_tokens_load(const char *path, pfi_http_tokens *out, pfi_diag *d)
{
    memset(out, 0, sizeof *out);
    char *text;
    size_t len;
    pfi_error e = pfi_http_secret_read(path, true, &text, &len, d);
    if (e != PFI_OK)
        return e;
    e = pfi_http_tokens_parse(text, len, out, d);
    pfi_free(text);
    if (e != PFI_OK && d != NULL) {
        char m[sizeof d->message];
        memcpy(m, d->message, sizeof m);
        int w = snprintf(d->message, sizeof d->message, "token file %.200s: ", path);
        if (w > 0 && (size_t)w < sizeof d->message)
            snprintf(d->message + w, sizeof d->message - (size_t)w, "%.*s",
                     (int)(sizeof d->message - (size_t)w - 1), m);
    }
    return e;
}

size_t pfi_http_tokens_short(const pfi_http_tokens *t, size_t from)
{
    for (size_t k = from; k < t->n; k++)
        if (t->t[k].len < PFI_HTTP_TOKEN_MIN_BYTES)
            return k;
    return t->n;
}

const pfi_http_token *pfi_http_tokens_match(const pfi_http_tokens *t, const char *authorization,
                                            size_t auth_len)
{
    if (t == NULL || authorization == NULL || auth_len < 8 || strlen(authorization) != auth_len ||
        strncasecmp(authorization, "Bearer ", 7) != 0)
        return NULL;
    const char *h = authorization + 7;
    size_t n = auth_len - 7;
    while (n > 0 && *h == ' ') {
        h++;
        n--;
    }
    if (!valid_token(h, n))
        return NULL; /* strict: the token and nothing after it */
    const pfi_http_token *hit = NULL;
    for (size_t k = 0; k < t->n; k++) /* every token compared: no early exit */
        if (pfi_http_token_equal(h, n, t->t[k].secret, t->t[k].len) && hit == NULL)
            hit = &t->t[k];
    return hit;
}
