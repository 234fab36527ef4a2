/*
 * Fuzz harness: the controller's JSON answers — Prometheus /api/v1/query vectors, the
 * agent's GET /v1/state and PUT /v1/caps answers (pfi/control.h). The first byte picks the
 * parser.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pfi/agent_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *t = (const char *)data + 1;
    size_t n = size - 1;
    pfi_diag d;
    switch (data[0] % 3) {
    case 0: {
        pfi_prom_sample *s;
        size_t m;
        if (pfi_prom_vector_parse(t, n, &s, &m, &d) == PFI_OK)
            pfi_free(s);
        break;
    }
    case 1: {
        static pfi_agent_state st;
        pfi_agent_state_parse(t, n, &st, &d);
        break;
    }
    default: {
        pfi_agent_cap_reply r[16];
        size_t m;
        bool applied;
        pfi_agent_caps_parse(t, n, r, 16, &m, &applied, &d);
    }
    }
    return 0;
}
