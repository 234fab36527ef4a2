/*
 * libFuzzer harness: the controller's HTTP/1.1 answer reader (src/lib/control/http_wire.c,
 * ctl_hparse_*) on arbitrary bytes, fed in pieces whose sizes come from the input's first
 * byte, then the connection's close; the body stays within its bound and NUL-terminated, and
 * feeding the same bytes whole gives the same outcome.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl_internal.h"
#include "control/ctl_wire.h"

static int run(const uint8_t *data, size_t size, size_t step, ctl_hparse *p, long *status,
               size_t *len)
{
    memset(p, 0, sizeof *p);
    p->max = 4096;
    ctl_hparse_reset(p);
    int rc = CTL_HP_MORE;
    size_t i = 0;
    while (i < size && rc == CTL_HP_MORE) {
        size_t k = size - i < step ? size - i : step;
        size_t used = 0;
        rc = ctl_hparse_feed(p, (const char *)data + i, k, &used);
        if (used > k)
            abort();
        i += k;
    }
    if (rc == CTL_HP_MORE)
        rc = ctl_hparse_eof(p);
    if (p->len > 4096 || (p->body != NULL && p->body[p->len] != '\0'))
        abort();
    *status = p->status;
    *len = p->len;
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t step = (size_t)(data[0] % 16) + 1;
    ctl_hparse a, b;
    long sa, sb;
    size_t la, lb;
    int ra = run(data + 1, size - 1, step, &a, &sa, &la);
    int rb = run(data + 1, size - 1, size, &b, &sb, &lb);
    if (ra != rb || (ra == CTL_HP_DONE &&
                     (sa != sb || la != lb || (la > 0 && memcmp(a.body, b.body, la) != 0))))
        abort();
    ctl_hparse_reset(&a);
    ctl_hparse_reset(&b);
    return 0;
}
