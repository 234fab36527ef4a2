/*
 * pfi/conf.h — the one reader of `key = value` configuration files (pfid.conf, the
 * `pfi control --config` file).
 *
 * One `key = value` a line; blank lines and lines whose first non-blank is '#' are ignored;
 * the key is trimmed; the value is the rest of the line, trimmed, up to a '#' that follows a
 * blank (a trailing comment). What a key means is the caller's: each pair goes to a callback.
 */
#ifndef PFI_CONF_H
#define PFI_CONF_H

#include <stddef.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_CONF_MAX_BYTES (1 << 20) /* a config file larger than this is refused */
#define PFI_CONF_LINE_MAX 2047       /* bytes of one line */

/*
 * pfi_conf_fn — take one pair: key and value are NUL-terminated, borrowed for the call only.
 * Returns PFI_OK, or an error with diag->message saying why (the line is set by the reader).
 */
typedef pfi_error (*pfi_conf_fn)(void *ctx, const char *key, const char *value, pfi_diag *diag);

/*
 * pfi_conf_parse — hand every `key = value` of text[0..len) (need not be NUL-terminated) to
 * fn, in order. The text must be text: a line holding a NUL, a control character other than
 * tab (and a CR before the newline) or invalid UTF-8 is refused as not a config file, its
 * bytes escaped (pfi_escape) in the message; a text over PFI_CONF_MAX_BYTES whose first line
 * is not text is refused as not text too. A key given twice is refused after the last pair,
 * naming both lines (fn has seen both). Errors: PFI_ERR_LIMIT (len over PFI_CONF_MAX_BYTES),
 * PFI_ERR_LINE_TOO_LONG, PFI_ERR_PARSE (a line without '=', an empty key, not text, a key
 * given twice), PFI_ERR_NOMEM, or fn's error; diag->line is the 1-based line at fault (diag->file
 * is left as the caller set it). Thread-safe when fn is.
 */
pfi_error pfi_conf_parse(const char *text, size_t len, pfi_conf_fn fn, void *ctx, pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
