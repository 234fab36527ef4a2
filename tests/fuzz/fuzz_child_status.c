/*
 * Fuzz harness: a child controller's GET /v1/status answer as the parent reads it
 * (pfi_ctl_child_status_parse, pfi/control.h).
 */
#include <stddef.h>
#include <stdint.h>

#include "pfi/control.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_ctl_child_status st;
    pfi_diag d;
    (void)pfi_ctl_child_status_parse((const char *)data, size, &st, &d);
    return 0;
}
