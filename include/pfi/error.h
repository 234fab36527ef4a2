/*
 * pfi/error.h — error codes and diagnostics shared by every libpfi call.
 *
 * Every library function that can fail returns a pfi_error and hands results back through
 * out-parameters. The library never prints and never exits; callers decide. Functions that
 * read files also fill an optional pfi_diag (may be NULL) naming the file, line and column
 * at fault and what was expected, so a command can print one clear line.
 *
 * The numeric values are stable: they may be stored or compared across versions.
 */
#ifndef PFI_ERROR_H
#define PFI_ERROR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pfi_error {
    PFI_OK = 0,
    PFI_ERR_NOMEM = 1,          /* an allocation failed */
    PFI_ERR_IO = 2,             /* a file could not be opened, read or written */
    PFI_ERR_PARSE = 3,          /* malformed input (CSV or JSON syntax) */
    PFI_ERR_MISSING_COLUMN = 4, /* a mapped column is not in the header */
    PFI_ERR_VALUE = 5,          /* a value is not what the field expects (non-numeric, negative) */
    PFI_ERR_LINE_TOO_LONG = 6,  /* an input line exceeds PFI_CSV_MAX_LINE */
    PFI_ERR_INVALID_ARGUMENT = 7, /* a caller passed an argument outside the documented domain */
    PFI_ERR_EMPTY = 8,            /* the input holds no data rows (or no header) */
    PFI_ERR_LIMIT = 9,   /* an input exceeds a documented size limit other than line length */
    PFI_ERR_THREAD = 10, /* a worker thread could not be started */
    PFI_ERR_PLOT = 11,   /* the plotting library failed */
    /* GPU access (pfi/gpu.h); NVML return codes map onto these, the NVML name goes in diag */
    PFI_ERR_NO_PERMISSION = 12, /* the driver refused: not privileged (NVML_ERROR_NO_PERMISSION) */
    PFI_ERR_NOT_SUPPORTED = 13, /* this device or driver cannot do it (NVML_ERROR_NOT_SUPPORTED) */
    PFI_ERR_GPU_LOST = 14,      /* the GPU fell off the bus or needs a reset */
    PFI_ERR_DEVICE = 15,        /* another driver or library failure (uninitialised, timeout...) */
    PFI_ERR_UNAVAILABLE = 16,   /* a backend or library cannot load: library or symbol not found */
    PFI_ERR_OUT_OF_RANGE = 17,  /* a requested power cap lies outside the device's [min, max] */
    PFI_ERR_NOT_EFFECTIVE = 18, /* a cap was accepted but the read-back limit is not it */
    PFI_ERR_INTERRUPTED = 19,   /* stopped by a signal or the caller's stop flag */
    PFI_ERR_EXISTS = 20         /* a state file (cap journal) already exists */
} pfi_error;

/* Number of defined codes; every value in [0, PFI_ERROR_COUNT) has a name. */
#define PFI_ERROR_COUNT 21

/*
 * pfi_strerror — a short, static, English description of code (never NULL; unknown codes
 * give "unknown error"). Thread-safe.
 */
const char *pfi_strerror(pfi_error code);

/*
 * pfi_diag — where and why a read failed. Filled by readers when they return an error;
 * fields that do not apply are empty ("" or line 0). Caller-owned, plain data.
 */
typedef struct pfi_diag {
    char file[512];    /* path as given by the caller */
    long line;         /* 1-based physical line, 0 when not about a line */
    char column[128];  /* header name of the column at fault, "" when not about a column */
    char message[512]; /* what was wrong and what was expected */
} pfi_diag;

/* pfi_diag_clear — empty every field of d (NULL is a no-op). */
void pfi_diag_clear(pfi_diag *d);

/*
 * pfi_diag_set / pfi_diag_vset — fill d (NULL is a no-op): file (NULL: ""), line (0: none),
 * column (NULL: none) and the printf-style message. Every reader reports through these, so a
 * diagnostic always has the same shape.
 */
void pfi_diag_set(pfi_diag *d, const char *file, long line, const char *column, const char *fmt,
                  ...) __attribute__((format(printf, 5, 6)));
void pfi_diag_vset(pfi_diag *d, const char *file, long line, const char *column, const char *fmt,
                   va_list ap) __attribute__((format(printf, 5, 0)));

/*
 * pfi_diag_format — write d as one line "FILE:LINE: column 'C': MESSAGE" (parts that do not
 * apply are left out) into buf of size len (always NUL-terminated when len > 0, truncated if
 * needed). Returns buf.
 */
char *pfi_diag_format(const pfi_diag *d, char *buf, size_t len);

/*
 * pfi_escape — copy s[0..n) into buf of size len (NUL-terminated when len > 0) as text that
 * is safe to print on a terminal: printable ASCII and well-formed UTF-8 are kept; control
 * characters (C0, DEL, C1), bytes of invalid UTF-8 and NUL are written as \xNN. At most max
 * bytes of s are taken (0: no limit); when s is cut, by max or by len, "..." ends the text.
 * Applying it twice gives the same text (a backslash is kept as is). Every message that
 * quotes input text goes through it. Returns buf. Thread-safe.
 */
char *pfi_escape(char *buf, size_t len, const char *s, size_t n, size_t max);

/*
 * pfi_utf8_repair — s[0..n) as well-formed UTF-8, NUL-terminated, for a JSON string (JSON
 * text is UTF-8: jansson refuses a string that is not): every well-formed sequence is kept as
 * is (control characters too: the JSON writer escapes them); each byte that does not begin
 * one (a stray continuation byte, a cut, overlong or surrogate sequence, 0xF5-0xFF) and a NUL
 * byte become U+FFFD, the replacement character (bytes EF BF BD). A name read from a file or
 * a command line that is not UTF-8 thus reaches JSON outputs readable, never dropped. Returns
 * a string from pfi_malloc (the caller frees it with pfi_free), NULL when out of memory (or s
 * NULL). Thread-safe.
 */
char *pfi_utf8_repair(const char *s, size_t n);

/*
 * pfi_utf8_valid — whether s[0..n) is well-formed UTF-8 with no NUL byte: the sequences
 * pfi_utf8_repair keeps (no stray continuation byte, cut, overlong or surrogate sequence,
 * nothing above U+10FFFF). Control characters are valid here (callers that refuse them
 * check them apart). Source: RFC 3629 §4. Thread-safe; s NULL: false.
 */
bool pfi_utf8_valid(const char *s, size_t n);

#ifdef __cplusplus
}
#endif

#endif
