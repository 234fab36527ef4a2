#include "pfi/error.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/memory.h"

static const char *const error_names[PFI_ERROR_COUNT] = {
    [PFI_OK] = "success",
    [PFI_ERR_NOMEM] = "out of memory",
    [PFI_ERR_IO] = "input/output error",
    [PFI_ERR_PARSE] = "malformed input",
    [PFI_ERR_MISSING_COLUMN] = "mapped column not found",
    [PFI_ERR_VALUE] = "invalid value",
    [PFI_ERR_LINE_TOO_LONG] = "line too long",
    [PFI_ERR_INVALID_ARGUMENT] = "invalid argument",
    [PFI_ERR_EMPTY] = "no data",
    [PFI_ERR_LIMIT] = "input exceeds a size limit",
    [PFI_ERR_THREAD] = "could not start a worker thread",
    [PFI_ERR_PLOT] = "plotting failed",
    [PFI_ERR_NO_PERMISSION] = "insufficient permissions",
    [PFI_ERR_NOT_SUPPORTED] = "not supported by this GPU or driver",
    [PFI_ERR_GPU_LOST] = "GPU is lost",
    [PFI_ERR_DEVICE] = "GPU driver or library error",
    [PFI_ERR_UNAVAILABLE] = "backend or library unavailable",
    [PFI_ERR_OUT_OF_RANGE] = "power cap outside the device's limits",
    [PFI_ERR_NOT_EFFECTIVE] = "power cap not in effect",
    [PFI_ERR_INTERRUPTED] = "interrupted",
    [PFI_ERR_EXISTS] = "already exists",
};

const char *pfi_strerror(pfi_error code)
{
    if ((int)code < 0 || (int)code >= PFI_ERROR_COUNT)
        return "unknown error";
    return error_names[code];
}

void pfi_diag_clear(pfi_diag *d)
{
    if (d == NULL)
        return;
    d->file[0] = '\0';
    d->line = 0;
    d->column[0] = '\0';
    d->message[0] = '\0';
}

void pfi_diag_vset(pfi_diag *d, const char *file, long line, const char *column, const char *fmt,
                   va_list ap)
{
    if (d == NULL)
        return;
    pfi_diag_clear(d);
    snprintf(d->file, sizeof d->file, "%s", file ? file : "");
    d->line = line;
    if (column != NULL)
        snprintf(d->column, sizeof d->column, "%s", column);
    vsnprintf(d->message, sizeof d->message, fmt, ap);
}

void pfi_diag_set(pfi_diag *d, const char *file, long line, const char *column, const char *fmt,
                  ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_diag_vset(d, file, line, column, fmt, ap);
    va_end(ap);
}

char *pfi_diag_format(const pfi_diag *d, char *buf, size_t len)
{
    if (len == 0)
        return buf;
    buf[0] = '\0';
    if (d == NULL)
        return buf;
    size_t used = 0;
    int n;
    if (d->file[0] != '\0') {
        if (d->line > 0)
            n = snprintf(buf, len, "%s:%ld: ", d->file, d->line);
        else
            n = snprintf(buf, len, "%s: ", d->file);
        used = n < 0 ? 0 : (size_t)n;
    }
    if (used < len && d->column[0] != '\0') {
        n = snprintf(buf + used, len - used, "column '%s': ", d->column);
        used += n < 0 ? 0 : (size_t)n;
    }
    if (used < len)
        snprintf(buf + used, len - used, "%s", d->message);
    return buf;
}

/* Length of the well-formed UTF-8 sequence of 2 to 4 bytes at s[0..n) (a C1 control too
 * when c1), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n, bool c1)
{
    unsigned c = s[0];
    size_t k;
    unsigned cp;
    if (c >= 0xC2 && c <= 0xDF) {
        k = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < k)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || (!c1 && cp <= 0x9F))
        return 0; /* overlong, out of range, surrogate, or C1 control (U+0080-U+009F) */
    return k;
}

/* Length of the well-formed UTF-8 sequence at s[0..n) that is not a C1 control, or 0. */
static size_t utf8_ok(const unsigned char *s, size_t n)
{
    return utf8_seq(s, n, false);
}

bool pfi_utf8_valid(const char *s, size_t n)
{
    if (s == NULL)
        return false;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = u[i] >= 0x01 && u[i] < 0x80 ? 1
                   : u[i] >= 0x80              ? utf8_seq(u + i, n - i, true)
                                               : 0;
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

char *pfi_utf8_repair(const char *s, size_t n)
{
    if (s == NULL || n > (SIZE_MAX - 1) / 3)
        return NULL;
    char *out = pfi_malloc(3 * n + 1); /* a byte is at most U+FFFD's three */
    if (out == NULL)
        return NULL;
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = u[i] >= 0x01 && u[i] < 0x80 ? 1
                   : u[i] >= 0x80              ? utf8_seq(u + i, n - i, true)
                                               : 0;
        if (k == 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, u + i, k);
            o += k;
            i += k;
        }
    }
    out[o] = '\0';
    return out;
}

/* Input text reaches the user's terminal inside messages: an ESC or OSC sequence copied
 * verbatim would clear the screen or set the title, so only printable text passes. */
char *pfi_escape(char *buf, size_t len, const char *s, size_t n, size_t max)
{
    if (len == 0)
        return buf;
    const unsigned char *u = (const unsigned char *)s;
    size_t lim = max > 0 && max < n ? max : n;
    size_t o = 0, i = 0;
    bool cut = lim < n;
    while (i < lim) {
        size_t k = 1;
        char esc[5];
        const char *piece;
        size_t plen;
        if (u[i] >= 0x20 && u[i] < 0x7F) {
            piece = (const char *)u + i;
            plen = 1;
        } else if (u[i] >= 0x80 && (k = utf8_ok(u + i, lim - i)) > 0) {
            piece = (const char *)u + i;
            plen = k;
        } else {
            k = 1;
            snprintf(esc, sizeof esc, "\\x%02X", u[i]);
            piece = esc;
            plen = 4;
        }
        if (o + plen + 4 > len) { /* room for the piece, "..." and the NUL */
            cut = true;
            break;
        }
        memcpy(buf + o, piece, plen);
        o += plen;
        i += k;
    }
    if (cut && o + 4 <= len) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o < len ? o : len - 1] = '\0';
    return buf;
}
