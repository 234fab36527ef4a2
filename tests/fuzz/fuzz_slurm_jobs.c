/*
 * Fuzz harness: Slurm's squeue --json answer and the pfi options in a job's comments
 * (pfi/slurm.h). The first byte picks: even, the squeue parser; odd, the options parser on
 * the rest split at the first NUL (AdminComment, Comment).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/memory.h"
#include "pfi/slurm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    if (!(data[0] & 1)) {
        pfi_slurm_job *jobs;
        size_t n;
        pfi_diag d;
        if (pfi_slurm_jobs_parse(text, len, &jobs, &n, &d) == PFI_OK)
            pfi_free(jobs);
        return 0;
    }
    char *buf = malloc(len + 2);
    if (buf == NULL)
        return 0;
    memcpy(buf, text, len);
    buf[len] = buf[len + 1] = '\0';
    const char *second = buf + strlen(buf) + 1;
    if (second > buf + len)
        second = buf + len;
    pfi_slurm_job j;
    pfi_slurm_options_parse(buf, second, &j);
    free(buf);
    return 0;
}
