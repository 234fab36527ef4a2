/*
 * bench/ingest_bench — parse a telemetry file with pfi's streaming reader in counting mode
 * (keep_series = false: bounded memory) and print one line: bytes, rows, values, their sum
 * (a checksum to compare with pandas), wall and CPU seconds, MB/s of each (1 MB = 10^6
 * bytes), and the process's peak resident memory. Not a test.
 * Usage: ingest_bench FORMAT FILE   (FORMAT as in pfi ingest --format)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "pfi/telemetry.h"

static double seconds(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    pfi_telemetry_format fmt;
    if (argc != 3 || !pfi_telemetry_format_parse(argv[1], &fmt)) {
        fprintf(stderr, "usage: ingest_bench FORMAT FILE\n");
        return 2;
    }
    struct stat st;
    if (stat(argv[2], &st) != 0) {
        perror(argv[2]);
        return 1;
    }
    pfi_telemetry_options o = {.keep_series = false, .interval_s = 1};
    pfi_telemetry *tm = NULL;
    if (pfi_telemetry_create(&o, &tm) != PFI_OK)
        return 4;
    double w0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
    pfi_diag d;
    pfi_error e = pfi_telemetry_read_file(tm, argv[2], fmt, &d);
    double wall = seconds(CLOCK_MONOTONIC) - w0, cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < tm->n_series; i++) {
        sum += tm->series[i].sum;
        n += tm->series[i].n_valid;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double mb = (double)st.st_size / 1e6;
    printf("pfi %s: %lld bytes, %zu rows, %zu values (sum %.6g), wall %.3f s = %.1f MB/s, "
           "cpu %.3f s = %.1f MB/s, maxrss %ld KiB (%s)\n",
           argv[1], (long long)st.st_size, tm->n_rows, n, sum, wall, mb / wall, cpu, mb / cpu,
           ru.ru_maxrss, pfi_strerror(e));
    pfi_telemetry_destroy(tm);
    return e == PFI_OK ? 0 : 1;
}
