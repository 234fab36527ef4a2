/*
 * Fuzz harness: every form of schedule file pfi control --schedule takes (pfi/grid.h): text,
 * CSV and JSON timelines and measured power traces, then the time compression.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pfi/grid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_ctl_event *out;
    size_t n;
    pfi_grid_schedule_form form;
    pfi_grid_trace_info ti;
    pfi_diag d;
    if (pfi_grid_schedule_load((const char *)data, size, &out, &n, &form, &ti, &d) == PFI_OK) {
        pfi_grid_schedule_speed(out, n, 60);
        pfi_free(out);
    }
    return 0;
}
