/*
 * libFuzzer harness: the time zone reader (telemetry/tzone.c) on arbitrary bytes as a TZif
 * file (written to a temporary file, loaded by path as --timezone /path would), then the
 * offset and the local-to-UTC conversion at fixed times from 1900 to 9999, across the table
 * and past it (the footer's POSIX rule). Invariants (abort() when one fails): a load either
 * fails or gives a zone; every offset is an int32 of seconds, within ±168 h when it comes
 * from the footer; tm_zone_to_utc gives 0 to 2 answers, ascending, each one u a UTC time
 * whose offset o satisfies u + o == local.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "telemetry/internal.h"

static void check(bool ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/pfi-fuzz-tzif.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 0;
    bool written = size == 0 || write(fd, data, size) == (ssize_t)size;
    close(fd);
    tm_zone *z = NULL;
    pfi_error e = written ? tm_zone_load(path, &z) : PFI_ERR_IO;
    unlink(path);
    check((e == PFI_OK) == (z != NULL));
    if (z == NULL)
        return 0;
    /* 1900, 1970, 2024-02-29, 2037-11-01, 2040-07-01, 2100-03-01, 9999-12-31 */
    static const double at[] = {-2208988800.0, 0.0,          1709164800.0,  2140668000.0,
                                2224872000.0,  4107542400.0, 253402214400.0};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
        for (int h = 0; h < 48; h += 7) {
            double local = at[i] + h * 1800.0;
            int32_t o = tm_zone_offset(z, local);
            (void)o;
            double u[2] = {0, 0};
            int m = tm_zone_to_utc(z, local, u);
            check(m >= 0 && m <= 2);
            check(m < 2 || u[0] <= u[1]);
            for (int k = 0; k < m; k++)
                check(u[k] + tm_zone_offset(z, u[k]) == local);
        }
    tm_zone_free(z);
    return 0;
}
