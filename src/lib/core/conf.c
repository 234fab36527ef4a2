/*
 * The one reader of `key = value` configuration files (pfi/conf.h): pfid.conf and the
 * `pfi control --config` file share it, so both take the same syntax.
 */
#include "pfi/conf.h"

#include <stdbool.h>
#include <string.h>

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
        pfi_diag_set(diag, fbuf, 0, NULL, "larger than %d bytes", PFI_CONF_MAX_BYTES);
        return PFI_ERR_LIMIT;
    }
    size_t pos = 0;
    long lineno = 0;
    while (pos < len) {
        lineno++;
        const char *start = text + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - start) : len - pos;
        pos += n + (nl ? 1 : 0);
        if (n > 0 && start[n - 1] == '\r')
            n--; /* CRLF */
        if (n > PFI_CONF_LINE_MAX) {
            pfi_diag_set(diag, fbuf, lineno, NULL, "line longer than %d bytes", PFI_CONF_LINE_MAX);
            return PFI_ERR_LINE_TOO_LONG;
        }
        char line[PFI_CONF_LINE_MAX + 1], esc[4 * PFI_CONF_LINE_MAX + 8];
        if (!is_text(start, n, esc, sizeof esc)) {
            char shown[160];
            pfi_escape(shown, sizeof shown, start, n, 40);
            pfi_diag_set(diag, fbuf, lineno, NULL,
                         "not text (%s): want a 'key = value' line; is this a config file?", shown);
            return PFI_ERR_PARSE;
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
            return PFI_ERR_PARSE;
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
            return PFI_ERR_PARSE;
        }
        pfi_error e = fn(ctx, key, v, diag);
        if (e != PFI_OK) {
            if (diag != NULL) {
                diag->line = lineno;
                memcpy(diag->file, fbuf, sizeof diag->file);
            }
            return e;
        }
    }
    return PFI_OK;
}
