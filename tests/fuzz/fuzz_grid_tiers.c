/*
 * Fuzz harness: the flexibility tiers file (pfi/grid.h), then one period of accounting.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pfi/grid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_grid_tier_job *t;
    size_t n;
    pfi_diag d;
    if (pfi_grid_tiers_parse((const char *)data, size, &t, &n, &d) == PFI_OK) {
        for (size_t i = 0; i < n; i++) {
            pfi_grid_tier_account(&t[i], 50, 100, 1, 10);
            (void)pfi_grid_tier_compliant(&t[i]);
        }
        pfi_free(t);
    }
    return 0;
}
