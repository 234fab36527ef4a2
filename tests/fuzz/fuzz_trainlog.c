/*
 * libFuzzer harness: the training-log readers and their reduction. Byte 0 picks the format
 * (auto or one reader); the rest is the log. Invariants (abort on failure): a read that
 * succeeds has at least one interval, a known format, NUL-terminated unit and notes; sessions
 * and segments never decrease and stay below their counts; an interval's rate is NaN or
 * finite; the reduction's counts add up to the intervals and its throughput is NaN exactly
 * when it fails.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "pfi/trainlog.h"

static void check(const pfi_trainlog *log)
{
    if (log->n == 0 || (unsigned)log->format >= PFI_TRAINLOG_N_FORMATS ||
        memchr(log->unit, '\0', sizeof log->unit) == NULL ||
        memchr(log->notes, '\0', sizeof log->notes) == NULL)
        abort();
    unsigned sess = 0, seg = 0;
    for (size_t i = 0; i < log->n; i++) {
        const pfi_trainlog_interval *iv = &log->iv[i];
        if (iv->session < sess || iv->segment < seg || iv->session >= log->n_sessions ||
            iv->segment >= log->n_segments || isinf(iv->rate))
            abort();
        sess = iv->session;
        seg = iv->segment;
    }
    pfi_trainlog_summary s;
    pfi_error e = pfi_trainlog_reduce(log, 1.0, 0.1, &s);
    size_t sum = s.n_included + s.n_skipped + s.n_checkpoint + s.n_eval + s.n_restart + s.n_gap +
                 s.n_bad_rate + s.n_warmup + s.n_no_time;
    if (sum != log->n || (e == PFI_OK) != !isnan(s.steady.mean) ||
        (e == PFI_OK && !isfinite(s.steady.mean)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    static const pfi_trainlog_format fmts[] = {
        PFI_TRAINLOG_AUTO,      PFI_TRAINLOG_MEGATRON,   PFI_TRAINLOG_NANOTRON,
        PFI_TRAINLOG_HF,        PFI_TRAINLOG_TORCHTITAN, PFI_TRAINLOG_DEEPSPEED,
        PFI_TRAINLOG_LIGHTNING, PFI_TRAINLOG_TQDM,       PFI_TRAINLOG_REGEX};
    pfi_trainlog_format fmt = fmts[data[0] % (sizeof fmts / sizeof fmts[0])];
    FILE *f = fuzz_stream(data + 1, size - 1);
    if (f == NULL)
        return 0;
    pfi_trainlog *log = NULL;
    pfi_diag d;
    const char *re =
        fmt == PFI_TRAINLOG_REGEX
            ? (data[0] & 0x80 ? "t=([0-9.e+-]+)"
                              : "w=(?<work>[^ ]+) s=(?<time_s>[^ ]+) (?<throughput>\\S+)")
            : NULL;
    if (pfi_trainlog_read_stream(f, "fuzz", fmt, re, &log, &d) == PFI_OK) {
        check(log);
        pfi_trainlog_destroy(log);
    }
    fclose(f);
    return 0;
}
