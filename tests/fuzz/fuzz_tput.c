/*
 * Fuzz harness: throughput lines matched by a --throughput-regex (training-command stdout).
 */
#include "fuzz_common.h"
#include "pfi/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static pfi_tput_regex *re;
    if (re == NULL &&
        pfi_tput_regex_compile("tokens_per_sec: ([0-9.eE+-]+[KMG]?)", &re, NULL) != PFI_OK)
        return 0;
    double v;
    pfi_tput_parse_line(re, (const char *)data, size, &v);
    return 0;
}
