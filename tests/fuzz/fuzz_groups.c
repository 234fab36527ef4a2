/* Fuzz the groups CSV reader (pfi_groups_read_stream) and product resolution. */
#include "fuzz_common.h"
#include "pfi/groups.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fuzz_stream(data, size);
    if (f == NULL)
        return 0;
    pfi_groups *g = NULL;
    pfi_diag d;
    if (pfi_groups_read_stream(f, "fuzz", NULL, &g, &d) == PFI_OK && g->n_features >= 2) {
        char spec[600];
        snprintf(spec, sizeof spec, "%s*%s", g->feature_names[0], g->feature_names[1]);
        size_t idx;
        pfi_groups_resolve(g, spec, &idx);
    }
    pfi_groups_destroy(g);
    fclose(f);
    return 0;
}
