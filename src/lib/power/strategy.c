/*
 * The table of allocation strategies (power/strategy.h) and the public names that come
 * from it: pfi_strategy_name, pfi_strategy_parse.
 */
#include "power/strategy.h"

#include <string.h>

#include "pfi/allocate.h"

const alloc_strategy alloc_strategies[PFI_STRATEGY_COUNT] = {
    [PFI_STRATEGY_ORACLE] = {.name = "oracle",
                             .lp_bound = true,
                             .pass = alloc_oracle_pass,
                             .place = alloc_oracle_place},
    [PFI_STRATEGY_EQUAL] = {.name = "equal", .place = alloc_equal_place},
    [PFI_STRATEGY_CLASS_WEIGHTED] = {.name = "class-weighted", .place = alloc_class_weighted_place},
    [PFI_STRATEGY_PFI_WEIGHTED] = {.name = "pfi-weighted",
                                   .needs = ALLOC_NEEDS_PFI,
                                   .place = alloc_pfi_weighted_place},
    [PFI_STRATEGY_PFI_MODEL] = {.name = "pfi-model",
                                .needs = ALLOC_NEEDS_EST,
                                .place = alloc_pfi_model_place},
    [PFI_STRATEGY_RAW_TELEMETRY] = {.name = "raw-telemetry",
                                    .needs = ALLOC_NEEDS_FEATURE,
                                    .place = alloc_raw_telemetry_place},
    [PFI_STRATEGY_FAIR_HEADROOM] = {.name = "fair-headroom", .place = alloc_fair_headroom_place},
};

const char *pfi_strategy_name(pfi_strategy s)
{
    return (unsigned)s < PFI_STRATEGY_COUNT ? alloc_strategies[s].name : "unknown";
}

pfi_error pfi_strategy_parse(const char *name, pfi_strategy *out)
{
    for (unsigned i = 0; name != NULL && i < PFI_STRATEGY_COUNT; i++) {
        if (strcmp(name, alloc_strategies[i].name) == 0) {
            *out = (pfi_strategy)i;
            return PFI_OK;
        }
    }
    return PFI_ERR_INVALID_ARGUMENT;
}
