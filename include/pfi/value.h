/*
 * pfi/value.h — locale-independent number parsing with an explicit "missing" state.
 *
 * Telemetry and result tables write missing values in many ways: an empty cell, "N/A",
 * "NA", "NaN", "-", or a bracketed placeholder such as nvidia-smi's "[N/A]",
 * "[Not Supported]" or "[GPU is lost]". Those are missing, never zero. Numbers are parsed in
 * the C locale whatever the process locale is (a German LC_NUMERIC does not turn "1.5" into 1).
 */
#ifndef PFI_VALUE_H
#define PFI_VALUE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pfi_value_status {
    PFI_VALUE_OK = 0,      /* *out holds a finite number */
    PFI_VALUE_MISSING = 1, /* a missing-value token; *out is NaN */
    PFI_VALUE_INVALID = 2  /* not a number (or not finite, or trailing garbage); *out is NaN */
} pfi_value_status;

/*
 * pfi_value_parse — parse text[0..len) as a finite decimal number (leading and trailing
 * blanks ignored) in the C locale. text need not be NUL-terminated; len <= 4095 is parsed,
 * longer text is PFI_VALUE_INVALID. "inf" and "nan" spellings are missing when they are the
 * whole cell ("nan", "NaN") and invalid otherwise ("inf"). Thread-safe.
 */
pfi_value_status pfi_value_parse(const char *text, size_t len, double *out);

/*
 * pfi_value_is_missing_token — true when text[0..len) (blanks trimmed) is one of the
 * missing-value spellings: "", "N/A", "NA", "n/a", "NaN", "nan", "-", or any "[...]".
 */
bool pfi_value_is_missing_token(const char *text, size_t len);

#ifdef __cplusplus
}
#endif

#endif
