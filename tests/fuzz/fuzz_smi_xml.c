/*
 * libFuzzer harness: the nvidia-smi -q -x XML reader (PFI_TM_SMI_XML) followed by the summary and the run
 * reduction, on arbitrary bytes. Any crash, leak or sanitizer report is a bug.
 */
#include <stdint.h>
#include <stdio.h>

#include "pfi/reduce.h"
#include "pfi/telemetry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    FILE *f = fmemopen((void *)data, size, "rb");
    if (f == NULL)
        return 0;
    pfi_tm_options o = {.keep_series = true, .interval_s = 1, .max_power_w = 700};
    pfi_tm *tm = NULL;
    if (pfi_tm_create(&o, &tm) == PFI_OK) {
        pfi_diag d;
        pfi_tm_read_stream(tm, f, "fuzz", PFI_TM_SMI_XML, &d);
        pfi_tm_derive_power_from_energy(tm);
        pfi_tm_summarize(tm);
        static pfi_reduced red;
        pfi_reduce_options ro;
        pfi_reduce_options_init(&ro);
        pfi_reduce_power(tm, &ro, &red);
        pfi_tm_destroy(tm);
    }
    fclose(f);
    return 0;
}
