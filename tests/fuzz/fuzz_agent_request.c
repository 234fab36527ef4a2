/*
 * Fuzz harness: the cap API's request bodies (src/agent/request.c): PUT /v1/caps,
 * POST /v1/jobs/{id}/throughput and POST /v1/clock. The first byte picks the parser.
 */
#include <stddef.h>
#include <stdint.h>

#include "request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *body = (const char *)data + 1;
    char msg[256];
    if (data[0] & 2) {
        double t, u;
        pfid_clock_parse(body, size - 1, &t, &u, msg, sizeof msg);
        return 0;
    }
    if (data[0] & 1) {
        double t;
        pfid_throughput_parse(body, size - 1, &t, msg, sizeof msg);
        return 0;
    }
    pfid_caps_request r;
    pfid_caps_request_parse(body, size - 1, &r, msg, sizeof msg);
    pfid_caps_request_clear(&r);
    return 0;
}
