/*
 * libFuzzer harness: the Prometheus HTTP API reader (PFI_TELEMETRY_PROM_API, /api/v1/query
 * and query_range JSON) on arbitrary bytes, then the summary and the run reduction
 * (fuzz_telemetry in fuzz_common.h).
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_telemetry(data, size, PFI_TELEMETRY_PROM_API);
}
