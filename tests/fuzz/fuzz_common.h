/*
 * What the harnesses share (header-only, static inline): the libFuzzer entry point's
 * prototype, the input bytes as a read-only stream, and the whole telemetry pipeline that
 * every telemetry-format harness runs.
 */
#ifndef PFI_FUZZ_COMMON_H
#define PFI_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <stdlib.h>

#include "pfi/reduce.h"
#include "pfi/telemetry.h"
#include "tm_compare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The bytes as a stream (borrowed: close it before returning); NULL for an empty input. */
static inline FILE *fuzz_stream(const uint8_t *data, size_t size)
{
    if (size == 0)
        return NULL;
    return fmemopen((void *)data, size, "rb");
}

/*
 * The same, but an empty input reads as an empty file: fmemopen of 0 bytes is refused by
 * some C libraries, and the CSV harnesses check what the readers do with nothing.
 */
static inline FILE *fuzz_stream_or_empty(const uint8_t *data, size_t size)
{
    if (size == 0)
        return fopen("/dev/null", "rb");
    return fuzz_stream(data, size);
}

/*
 * One telemetry file of format fmt, then everything `pfi` does with it: energy-derived power,
 * the summary and the run reduction. Any crash, leak or sanitizer report is a bug.
 */
static inline int fuzz_telemetry(const uint8_t *data, size_t size, pfi_telemetry_format fmt)
{
    FILE *f = fuzz_stream(data, size);
    if (f == NULL)
        return 0;
    pfi_telemetry_options o = {.keep_series = true, .interval_s = 1, .max_power_w = 700};
    pfi_telemetry *tm = NULL;
    if (pfi_telemetry_create(&o, &tm) == PFI_OK) {
        pfi_diag d;
        pfi_telemetry_read_stream(tm, f, "fuzz", fmt, &d);
        pfi_telemetry_derive_power_from_energy(tm);
        pfi_telemetry_summarize(tm);
        static pfi_reduced red;
        pfi_reduce_options ro;
        pfi_reduce_options_init(&ro);
        pfi_reduce_power(tm, &ro, &red);
        pfi_telemetry_destroy(tm);
    }
    fclose(f);
    return 0;
}

/*
 * The readers' fast row paths against their general path (differential fuzzing): the
 * input read as shipped and with options.generic_rows, under the given options; any
 * difference in the error, the counters, notes, entities or series aborts (the difference
 * printed first).
 */
static inline void fuzz_telemetry_same(const uint8_t *data, size_t size, pfi_telemetry_format fmt,
                                       pfi_telemetry_options o)
{
    pfi_telemetry *tm[2] = {NULL, NULL};
    pfi_error e[2] = {PFI_OK, PFI_OK};
    for (int k = 0; k < 2; k++) {
        o.generic_rows = k == 1;
        FILE *f = fuzz_stream_or_empty(data, size);
        if (f == NULL || pfi_telemetry_create(&o, &tm[k]) != PFI_OK) {
            if (f != NULL)
                fclose(f);
            pfi_telemetry_destroy(tm[0]);
            pfi_telemetry_destroy(tm[1]);
            return;
        }
        pfi_diag d;
        e[k] = pfi_telemetry_read_stream(tm[k], f, "fuzz", fmt, &d);
        fclose(f);
    }
    char why[2048];
    if (e[0] != e[1] || !tm_compare(tm[0], tm[1], why, sizeof why)) {
        fprintf(stderr, "fast and general paths differ: %s\n",
                e[0] != e[1] ? pfi_strerror(e[0]) : why);
        abort();
    }
    pfi_telemetry_destroy(tm[0]);
    pfi_telemetry_destroy(tm[1]);
}

#endif
