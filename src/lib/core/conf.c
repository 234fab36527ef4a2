/*
 * The one reader of `key = value` configuration files (pfi/conf.h): pfid.conf and the
 * `pfi control --config` file share it, so both take the same syntax.
 */
#include "pfi/conf.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"

/* A line is text when escaping it for a terminal changes nothing but its tabs (pfi_escape
 * keeps printable ASCII and well-formed UTF-8, and writes every other byte as \xNN). */
static bool is_text(const char *line, size_t n, char *esc, size_t esc_len)
{
    char plain[PFI_CONF_LINE_MAX + 1];
    memcpy(plain, line, n);
    plain[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (plain[i] == '\t')
            plain[i] = ' ';
    pfi_escape(esc, esc_len, plain, n, 0);
    return memchr(line, '\0', n) == NULL && strcmp(esc, plain) == 0;
}

/* "not text" for line lineno, start[0..n) (n <= PFI_CONF_LINE_MAX), in diag. PFI_ERR_PARSE. */
static pfi_error not_text(pfi_diag *diag, const char *file, long lineno, const char *start,
                          size_t n)
{
    char shown[160];
    pfi_escape(shown, sizeof shown, start, n, 40);
    pfi_diag_set(diag, file, lineno, NULL,
                 "not text (%s): want a 'key = value' line; is this a config file?", shown);
    return PFI_ERR_PARSE;
}

/* One key seen (NUL-terminated, in the parse's key pool) and its line. */
typedef struct {
    const char *key;
    long line;
} seen_key;

/* by key, then by line */
static int by_key(const void *pa, const void *pb)
{
    const seen_key *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    return c != 0 ? c : (a->line > b->line) - (a->line < b->line);
}

/* A key given on two lines: the pair whose second line comes first, in diag. keys[0..n) are
 * sorted in place. PFI_OK or PFI_ERR_PARSE. */
static pfi_error duplicates(seen_key *keys, size_t n, pfi_diag *diag, const char *file)
{
    if (n < 2)
        return PFI_OK;
    qsort(keys, n, sizeof *keys, by_key);
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (strcmp(keys[i - 1].key, keys[i].key) == 0 &&
            (best == 0 || keys[i].line < keys[best].line))
            best = i;
    if (best == 0)
        return PFI_OK;
    char shown[160];
    pfi_escape(shown, sizeof shown, keys[best].key, strlen(keys[best].key), 60);
    pfi_diag_set(diag, file, keys[best].line, NULL,
                 "key '%s' given twice: on line %ld and on line %ld (keep one)", shown,
                 keys[best - 1].line, keys[best].line);
    return PFI_ERR_PARSE;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        *--end = '\0';
    return s;
}

pfi_error pfi_conf_parse(const char *text, size_t len, pfi_conf_fn fn, void *ctx, pfi_diag *diag)
{
    /* the caller's diag->file names the file: kept (pfi_diag_set would copy it onto itself) */
    char fbuf[sizeof((pfi_diag *)0)->file] = "";
    if (diag != NULL) {
        memcpy(fbuf, diag->file, sizeof fbuf);
        fbuf[sizeof fbuf - 1] = '\0';
    }
    if (len > PFI_CONF_MAX_BYTES) {
        /* a binary file is "not text" whatever its size: its first line says so */
        const char *nl = memchr(text, '\n', len);
        size_t n = nl != NULL ? (size_t)(nl - text) : len;
        if (n > PFI_CONF_LINE_MAX)
            n = PFI_CONF_LINE_MAX;
        char esc[4 * PFI_CONF_LINE_MAX + 8];
        if (!is_text(text, n, esc, sizeof esc))
            return not_text(diag, fbuf, 1, text, n);
        pfi_diag_set(diag, fbuf, 0, NULL, "larger than %d bytes", PFI_CONF_MAX_BYTES);
        return PFI_ERR_LIMIT;
    }
    /* the keys seen (copies in one pool: keys are shorter than the text), for duplicates */
    seen_key *keys = NULL;
    char *pool = pfi_malloc(len + 1);
    size_t n_keys = 0, cap_keys = 0, used = 0;
    if (pool == NULL)
        return PFI_ERR_NOMEM;
    pfi_error rc = PFI_OK;
    size_t pos = 0;
    long lineno = 0;
    while (pos < len && rc == PFI_OK) {
        lineno++;
        const char *start = text + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - start) : len - pos;
        pos += n + (nl ? 1 : 0);
        if (n > 0 && start[n - 1] == '\r')
            n--; /* CRLF */
        if (n > PFI_CONF_LINE_MAX) {
            pfi_diag_set(diag, fbuf, lineno, NULL, "line longer than %d bytes", PFI_CONF_LINE_MAX);
            rc = PFI_ERR_LINE_TOO_LONG;
            break;
        }
        char line[PFI_CONF_LINE_MAX + 1], esc[4 * PFI_CONF_LINE_MAX + 8];
        if (!is_text(start, n, esc, sizeof esc)) {
            rc = not_text(diag, fbuf, lineno, start, n);
            break;
        }
        memcpy(line, start, n);
        line[n] = '\0';
        char *s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (eq == NULL || eq == s) {
            char shown[160];
            pfi_escape(shown, sizeof shown, s, strlen(s), 60);
            pfi_diag_set(diag, fbuf, lineno, NULL, "want 'key = value', got '%s'", shown);
            rc = PFI_ERR_PARSE;
            break;
        }
        *eq = '\0';
        char *key = trim(s);
        char *v = eq + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        for (char *h = v; *h != '\0'; h++) /* a comment after blanks ends the value */
            if (*h == '#' && h > v && (h[-1] == ' ' || h[-1] == '\t')) {
                *h = '\0';
                break;
            }
        v = trim(v);
        if (*key == '\0') {
            pfi_diag_set(diag, fbuf, lineno, NULL, "want 'key = value': the key is empty");
            rc = PFI_ERR_PARSE;
            break;
        }
        if (n_keys == cap_keys) {
            size_t nc = cap_keys ? 2 * cap_keys : 16;
            seen_key *k = pfi_realloc(keys, nc * sizeof *k);
            if (k == NULL) {
                rc = PFI_ERR_NOMEM;
                break;
            }
            keys = k;
            cap_keys = nc;
        }
        size_t kl = strlen(key);
        memcpy(pool + used, key, kl + 1);
        keys[n_keys++] = (seen_key){pool + used, lineno};
        used += kl + 1;
        rc = fn(ctx, key, v, diag);
        if (rc != PFI_OK && diag != NULL) {
            diag->line = lineno;
            memcpy(diag->file, fbuf, sizeof diag->file);
        }
    }
    if (rc == PFI_OK)
        rc = duplicates(keys, n_keys, diag, fbuf);
    if (keys != NULL)
        pfi_free(keys);
    pfi_free(pool);
    return rc;
}
