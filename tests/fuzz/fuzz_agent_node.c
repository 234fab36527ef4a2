/*
 * Fuzz harness: the number a pfid node-power file holds (pfid_node_value_parse,
 * src/agent/nodepower.c): whatever the bytes, a finite value >= 0 or a refusal.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    double v;
    if (pfid_node_value_parse((const char *)data, size, &v) && !(isfinite(v) && v >= 0))
        abort();
    return 0;
}
