/*
 * libFuzzer harness: the training-log readers (auto-detected formats) and their reduction.
 */
#include "fuzz_common.h"
#include "pfi/trainlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fuzz_stream(data, size);
    if (f == NULL)
        return 0;
    pfi_trainlog *log = NULL;
    pfi_diag d;
    if (pfi_trainlog_read_stream(f, "fuzz", PFI_TRAINLOG_AUTO, NULL, &log, &d) == PFI_OK) {
        pfi_trainlog_summary s;
        pfi_trainlog_reduce(log, 1.0, 0.1, &s);
        pfi_trainlog_destroy(log);
    }
    fclose(f);
    return 0;
}
