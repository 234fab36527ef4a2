/*
 * pfi/trainlog.h — throughput from training logs.
 *
 * Each log line that summarises a logging interval becomes one pfi_trainlog_interval: the work done
 * (samples or tokens), the wall time it took, and the rate work/time. Formats:
 *   - Megatron-LM: ` [date] iteration N/ T | key: value | ...` (keys matched by exact text;
 *     order free). work = consumed-samples delta (or global batch size x iterations),
 *     time = elapsed ms per iteration x iterations / 1000. Unit: samples.
 *   - nanotron: `iteration: N / T | consumed_tokens: 1.3M | elapsed_time_per_iteration_ms:
 *     1.2K | tokens_per_sec: 109K | ...` (K/M/G/T suffixes = 1e3..1e12). Unit: tokens.
 *   - Hugging Face Trainer: the final `{'train_runtime': s, 'train_samples_per_second': x}`
 *     (or train_tokens_per_second) dict; per-step `{'loss': nan ...}` dicts flag NaN.
 *   - torchtitan: `step: N  loss: L  ...  tps: 6,942 ...` (ANSI colours stripped); interval
 *     time from the line timestamps when present (else the rate alone, noted).
 *   - regex: a PCRE2 pattern with a named group `throughput` (work/s) and optional named
 *     groups `work` and `time_s`; lines that do not match are ignored.
 * Excluded from steady state (counted, reported): intervals with skipped iterations
 * (Megatron loss-scale warm-up), the interval after a checkpoint save, intervals whose rate
 * is NaN/Inf/missing, and those ending within the warm-up. `nan` losses flag the run
 * (PFI_TRAINLOG_NAN_SEEN) but the interval's timing stays valid.
 */
#ifndef PFI_TRAINLOG_H
#define PFI_TRAINLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pfi/error.h"
#include "pfi/steady.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_TRAINLOG_MAX_LINE 65536
#define PFI_TRAINLOG_MAX_INTERVALS 10000000

typedef enum pfi_trainlog_format {
    PFI_TRAINLOG_AUTO = 0,
    PFI_TRAINLOG_MEGATRON = 1,
    PFI_TRAINLOG_NANOTRON = 2,
    PFI_TRAINLOG_HF = 3,
    PFI_TRAINLOG_TORCHTITAN = 4,
    PFI_TRAINLOG_REGEX = 5
} pfi_trainlog_format;

/* Interval flags. */
enum {
    PFI_TRAINLOG_SKIPPED = 1u << 0,    /* skipped iterations in the interval: excluded */
    PFI_TRAINLOG_CHECKPOINT = 1u << 1, /* a checkpoint save fell in the interval: excluded */
    PFI_TRAINLOG_NAN = 1u << 2,        /* loss / grad norm NaN (timing still valid) */
    PFI_TRAINLOG_BAD_RATE = 1u << 3,   /* no finite rate: excluded */
    PFI_TRAINLOG_NO_TIME = 1u << 4     /* rate known, interval duration not (torchtitan, regex) */
};

typedef struct pfi_trainlog_interval {
    long line;      /* 1-based line */
    long iteration; /* last iteration of the interval (-1 unknown) */
    long n_iter;    /* iterations in the interval (0 unknown) */
    double work;    /* samples or tokens (NaN when unknown) */
    double time_s;  /* wall seconds (NaN when unknown) */
    double rate;    /* work / time_s, or the logged rate; NaN when not finite */
    double tflops;  /* TFLOP/s per GPU as logged, NaN when absent (never 0) */
    unsigned flags;
} pfi_trainlog_interval;

typedef struct pfi_trainlog {
    pfi_trainlog_format format;
    char unit[16]; /* "samples" or "tokens" */
    pfi_trainlog_interval *iv;
    size_t n;
    size_t n_nan; /* intervals with NaN loss */
    size_t cap;   /* private */
} pfi_trainlog;

/* pfi_trainlog_format_name / pfi_trainlog_format_parse — "megatron", "nanotron", "hf",
 * "torchtitan", "regex" ("auto" too). */
const char *pfi_trainlog_format_name(pfi_trainlog_format f);
bool pfi_trainlog_format_parse(const char *name, pfi_trainlog_format *out);

/*
 * pfi_trainlog_read_file / _stream — read a training log (stream borrowed) in format fmt
 * (PFI_TRAINLOG_AUTO: each line is recognised by its keys; the first format seen wins). regex:
 * required for PFI_TRAINLOG_REGEX, ignored otherwise. *out is owned (pfi_trainlog_destroy).
 * Errors: PFI_ERR_IO, PFI_ERR_LINE_TOO_LONG, PFI_ERR_LIMIT, PFI_ERR_NOMEM,
 * PFI_ERR_INVALID_ARGUMENT (bad regex or no `throughput` group; diag says why),
 * PFI_ERR_EMPTY (no interval line found).
 */
pfi_error pfi_trainlog_read_file(const char *path, pfi_trainlog_format fmt, const char *regex,
                                 pfi_trainlog **out, pfi_diag *diag);
pfi_error pfi_trainlog_read_stream(FILE *f, const char *name, pfi_trainlog_format fmt,
                                   const char *regex, pfi_trainlog **out, pfi_diag *diag);

/* pfi_trainlog_destroy — NULL is a no-op. */
void pfi_trainlog_destroy(pfi_trainlog *log);

/* Result of pfi_trainlog_reduce. */
typedef struct pfi_trainlog_summary {
    pfi_steady steady;  /* top-q mean of interval rates (work/s) */
    double window_rate; /* sum(work) / sum(time) over the included intervals (work/s);
                           NaN when no included interval has both */
    double tflops_mean; /* mean logged TFLOP/s/GPU over included intervals, NaN if none */
    size_t n_included;
    size_t n_skipped, n_checkpoint, n_bad_rate, n_warmup, n_no_time;
} pfi_trainlog_summary;

/*
 * pfi_trainlog_reduce — steady-state throughput of a log: intervals ending before warmup_s
 * of cumulative logged time are warm-up; flagged intervals (above) are excluded; of the
 * rest, the top-q mean of rates (pfi_steady_state) and the window rate Σwork/Σtime.
 * Errors: PFI_ERR_INVALID_ARGUMENT (q, warmup), PFI_ERR_EMPTY (nothing left), PFI_ERR_NOMEM.
 */
pfi_error pfi_trainlog_reduce(const pfi_trainlog *log, double warmup_s, double q,
                              pfi_trainlog_summary *out);

#ifdef __cplusplus
}
#endif

#endif
