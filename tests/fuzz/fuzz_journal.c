/*
 * Fuzz harness: the cap journal parser (pfi restore reads a file a crashed process left).
 */
#include "fuzz_common.h"
#include "pfi/capctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_journal j;
    pfi_diag d;
    pfi_journal_parse((const char *)data, size, &j, &d);
    pfi_journal_clear(&j);
    return 0;
}
