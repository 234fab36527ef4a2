/*
 * Helpers shared by the GPU verbs (sweep, restore, probe): option values with units,
 * GPU lists, opening a backend the way the command line asks, the exit code of a GPU error.
 */
#ifndef PFI_CLI_HWUTIL_H
#define PFI_CLI_HWUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pfi/error.h"
#include "pfi/gpu.h"

/* Exit code when a GPU operation failed (no permission, not supported, GPU lost, cap not
 * in effect, limits not restored). */
#define PFI_EXIT_DEVICE 5

/* hw_parse_duration — "30m", "5s", "1h", "250ms", "90" (seconds) into seconds; false when
 * not a positive-or-zero finite duration. */
bool hw_parse_duration(const char *s, double *out_s);

/* hw_parse_list — "700,600,500" into out[*n] (at most max); false on a bad number. */
bool hw_parse_list(const char *s, double *out, size_t max, size_t *n);

/* hw_parse_gpus — "0-3,6" into out[*n] (at most max, no duplicates); false when malformed. */
bool hw_parse_gpus(const char *s, unsigned *out, size_t max, size_t *n);

/*
 * hw_gpu_library — the library backend kind is to load: option when given (non-empty), else
 * the value of the backend's environment variable (pfi_gpu_library_env: PFI_NVML_LIBRARY for
 * nvml) when set and non-empty, else NULL (the backend's default). Borrowed.
 */
const char *hw_gpu_library(pfi_gpu_kind kind, const char *option);

/* hw_gpu_open — pfi_gpu_open of c with its library resolved by hw_gpu_library (c itself is
 * not changed: what a journal records is the library the user gave). An error about a file
 * (the replay file's FILE:LINE and column) has them in diag->message too, as
 * pfi_diag_format writes them: the callers print the message alone. */
pfi_error hw_gpu_open(const pfi_gpu_config *c, pfi_gpu **out, pfi_diag *diag);

/* hw_exit_code — exit code for a library error from a GPU verb. */
int hw_exit_code(pfi_error e);

/* hw_format_duration — "1h02m", "12m03s", "45s" into buf. */
const char *hw_format_duration(double s, char *buf, size_t len);

/* hw_record_header — the header line of the replay CSV (pfi/gpu.h, the replay backend) that
 * `probe --record` and `sweep --record` write. */
void hw_record_header(FILE *f);

/* hw_record_row — one replay CSV row: t_s (s since the recording began), GPU index, every
 * valid field of s (a missing one is an empty cell), the enforced limit when limit_valid. */
void hw_record_row(FILE *f, double t_s, unsigned gpu, const pfi_gpu_sample *s, bool limit_valid,
                   double limit_w);

#endif
