/*
 * libFuzzer harness: telemetry format detection (pfi_telemetry_detect, and the auto-detecting
 * read with its reason for a refusal) on arbitrary bytes, then the pipeline of
 * fuzz_telemetry (fuzz_common.h) on whatever format was detected. Invariants (abort() when
 * one fails): the detection of the bytes agrees with itself on a second call; a refused
 * read leaves a NUL-terminated message.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_telemetry_format a = pfi_telemetry_detect((const char *)data, size);
    if (pfi_telemetry_detect((const char *)data, size) != a)
        abort();
    FILE *f = fuzz_stream(data, size);
    if (f == NULL)
        return 0;
    pfi_telemetry *tm = NULL;
    if (pfi_telemetry_create(NULL, &tm) == PFI_OK) {
        pfi_diag d;
        if (pfi_telemetry_read_stream(tm, f, "fuzz", PFI_TELEMETRY_AUTO, &d) != PFI_OK &&
            memchr(d.message, '\0', sizeof d.message) == NULL)
            abort();
        pfi_telemetry_destroy(tm);
    }
    fclose(f);
    return fuzz_telemetry(data, size, PFI_TELEMETRY_AUTO);
}
