/*
 * Fuzz harness: the controller's agents file parser (pfi/control.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pfi/control_files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_ctl_agent_spec *out;
    size_t n;
    pfi_diag d;
    if (pfi_ctl_agents_parse((const char *)data, size, &out, &n, &d) == PFI_OK)
        pfi_free(out);
    return 0;
}
