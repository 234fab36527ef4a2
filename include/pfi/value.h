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

/*
 * pfi_reduction_parse — a power reduction r (the share of a reference power to shed) as a
 * fraction in [0, 1], from text in one of two spellings that mean the same: a percentage
 * "30%" (a number in [0, 100] and '%', blanks allowed around both) or a fraction "0.3" (a
 * bare number in [0, 1]). A bare number above 1 ("30") is refused, not guessed: it reads as
 * 30 % to some and as 3000 % to others. Every pfi command that takes a reduction (pfi
 * allocate, pfi control, pfi simulate) parses it here. Returns PFI_VALUE_OK with *fraction
 * set, or PFI_VALUE_INVALID with *fraction NaN and, when why is not NULL, a reason in
 * why[0..wlen) that names both accepted spellings. Thread-safe.
 */
pfi_value_status pfi_reduction_parse(const char *text, double *fraction, char *why, size_t wlen);

#ifdef __cplusplus
}
#endif

#endif
