/*
 * Fuzz harness: throughput lines matched by a --throughput-regex (training-command stdout).
 */
#include <math.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "pfi/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static pfi_tput_regex *re_old, *re_named;
    if (re_old == NULL &&
        pfi_tput_regex_compile("tokens_per_sec: ([0-9.eE+-]+[KMG]?)", &re_old, NULL) != PFI_OK)
        return 0;
    if (re_named == NULL &&
        pfi_tput_regex_compile("(?:tps|tokens/s)[:=] *(?<throughput>[0-9.eE+-]+[KMG]?)", &re_named,
                               NULL) != PFI_OK)
        return 0;
    double v;
    if (pfi_tput_parse_line(re_old, (const char *)data, size, &v) && !(v >= 0 && v < INFINITY))
        abort();
    if (pfi_tput_parse_line(re_named, (const char *)data, size, &v) && !(v >= 0 && v < INFINITY))
        abort();
    return 0;
}
