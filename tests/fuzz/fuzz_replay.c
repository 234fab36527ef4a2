/*
 * Fuzz harness: the replay backend's telemetry CSV reader, then a few samples and limits.
 */
#include "fuzz_common.h"
#include "hw/replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fuzz_stream(data, size);
    if (f == NULL)
        return 0;
    const pfi_gpu_ops *ops;
    void *ctx;
    pfi_diag d;
    if (hw_replay_open_stream(f, "fuzz", &ops, &ctx, &d) == PFI_OK) {
        unsigned n = 0;
        ops->count(ctx, &n, NULL);
        for (unsigned i = 0; i < n && i < 8; i++) {
            pfi_gpu_sample s = {0};
            pfi_gpu_limits l = {0};
            ops->sample(ctx, i, &s, NULL);
            ops->limits(ctx, i, &l, NULL);
        }
        ops->sleep_until_s(ctx, 1e300);
        if (n > 0) {
            pfi_gpu_sample s = {0};
            ops->sample(ctx, 0, &s, NULL);
        }
        ops->close(ctx);
    }
    fclose(f);
    return 0;
}
