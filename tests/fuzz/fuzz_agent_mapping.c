/*
 * Fuzz harness: pfid's static jobs mapping file and the Slurm environment scan
 * (src/agent/mapping.c). The first byte picks the parser.
 */
#include <stddef.h>
#include <stdint.h>

#include "mapping.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    if (data[0] & 1) {
        char job[PFID_ID_MAX];
        pfid_environ_job(text, len, job);
        return 0;
    }
    pfid_mapping m;
    pfi_diag d;
    pfi_diag_clear(&d);
    if (pfid_mapping_parse(text, len, &m, &d) == PFI_OK && m.n > 0)
        pfid_mapping_find(&m, m.e[0].gpu, 0);
    pfid_mapping_clear(&m);
    return 0;
}
