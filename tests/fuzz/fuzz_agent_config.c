/*
 * Fuzz harness: pfid's config file parser (src/agent/config.c), then the cross-field check;
 * the pfi_model value, fuzzed text, also goes through the parser of a model's feature names
 * (pfid_model_feature_known, src/agent/metrics.c: names, '*' products).
 */
#include <stddef.h>
#include <stdint.h>

#include "agent.h"
#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static pfid_config c;
    pfi_diag d;
    pfi_diag_clear(&d);
    pfid_config_defaults(&c);
    if (pfid_config_parse(&c, (const char *)data, size, &d) == PFI_OK) {
        pfid_config_check(&c, &d);
        (void)pfid_model_feature_known(c.pfi_model);
    }
    return 0;
}
