/*
 * bench/ingest_bench — parse a telemetry file with pfi's streaming reader in counting mode
 * (keep_series = false: bounded memory) and print bytes, seconds and MB/s. Not a test.
 * Usage: ingest_bench FORMAT FILE   (FORMAT as in pfi ingest --format)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "pfi/telemetry.h"

int main(int argc, char **argv)
{
    pfi_tm_format fmt;
    if (argc != 3 || !pfi_tm_format_parse(argv[1], &fmt)) {
        fprintf(stderr, "usage: ingest_bench FORMAT FILE\n");
        return 2;
    }
    struct stat st;
    if (stat(argv[2], &st) != 0) {
        perror(argv[2]);
        return 1;
    }
    pfi_tm_options o = {.keep_series = false, .interval_s = 1};
    pfi_tm *tm = NULL;
    if (pfi_tm_create(&o, &tm) != PFI_OK)
        return 4;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pfi_diag d;
    pfi_error e = pfi_tm_read_file(tm, argv[2], fmt, &d);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < tm->n_series; i++) {
        sum += tm->series[i].sum;
        n += tm->series[i].n_valid;
    }
    printf("pfi %s: %lld bytes, %zu rows, %zu values (sum %.6g) in %.3f s: %.1f MB/s (%s)\n",
           argv[1], (long long)st.st_size, tm->n_rows, n, sum, s, (double)st.st_size / s / 1e6,
           pfi_strerror(e));
    pfi_tm_destroy(tm);
    return e == PFI_OK ? 0 : 1;
}
