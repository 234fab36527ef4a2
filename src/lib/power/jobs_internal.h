/*
 * The jobs CSV reader's entry for tests and fuzzing (not part of the public API).
 */
#ifndef PFI_POWER_JOBS_INTERNAL_H
#define PFI_POWER_JOBS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/jobs.h"

/* Bytes a buffer given to jobs_read_buffer has past its data (readable, any content). */
#define JOBS_BUFFER_PAD 64

/*
 * jobs_read_buffer — the jobs of buf[0..nb) (named name in diagnostics) into *out (owned:
 * pfi_jobs_destroy), as pfi_jobs_read_stream. buf must have JOBS_BUFFER_PAD writable bytes
 * after nb; they are overwritten, buf[0..nb) is not. general: pfi/csv.h alone, never the
 * fast path (tests hold the two to the same result). Errors: as pfi_jobs_read_stream.
 */
pfi_error jobs_read_buffer(char *buf, size_t nb, const char *name, bool general, pfi_jobs **out,
                           pfi_diag *d);

/*
 * jobs_fast_number — the reader's fast path for a number cell p[0..n) (not NUL-terminated,
 * blanks trimmed): true with *v the value strtod gives when the cell is a plain decimal
 * "[-+]D[.D]" of at most 19 significant digits (the integer part's leading zeros aside),
 * below 2^53 as an integer and at most 22 after the point; false (and *v untouched) for
 * anything else, which the caller hands to pfi_value_parse. As the reader does it: a cell of
 * at most 16 bytes first through its SWAR path (simd_number: no sign, at most 8 digits each
 * side of the point; the cell copied into a padded buffer here), then the scalar one. Exposed
 * for the test and the fuzzer that hold it to strtod (tests/test_jobs_fast.c,
 * tests/fuzz/fuzz_jobs.c).
 */
bool jobs_fast_number(const char *p, size_t n, double *v);

#endif
