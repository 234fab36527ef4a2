#include "pfi/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
