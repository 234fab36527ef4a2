/*
 * libFuzzer harness: the nvidia-smi --query-gpu CSV reader (PFI_TELEMETRY_SMI_CSV) on arbitrary
 * bytes, then the summary and the run reduction (fuzz_telemetry in fuzz_common.h), after reading it
 * with and without the fast row paths and comparing (fuzz_telemetry_same).
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* and the fast row paths against the general one, counting and storing */
    fuzz_telemetry_same(data, size, PFI_TELEMETRY_SMI_CSV,
                        (pfi_telemetry_options){.interval_s = 1});
    fuzz_telemetry_same(
        data, size, PFI_TELEMETRY_SMI_CSV,
        (pfi_telemetry_options){.keep_series = true, .max_power_w = 700, .no_simd = true});
    return fuzz_telemetry(data, size, PFI_TELEMETRY_SMI_CSV);
}
