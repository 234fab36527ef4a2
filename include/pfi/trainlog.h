/*
 * pfi/trainlog.h — throughput from training logs.
 *
 * A log is read into records (one per logged step: the step counter, a clock, the work
 * counters the line carries) and each record, with the one before it in the same session and
 * segment, makes one pfi_trainlog_interval: the steps between them, the work done (samples,
 * tokens or steps) and the wall time it took. Throughput is Σwork / Σtime over the steady
 * window (pfi_trainlog_reduce); the rate a framework prints is used only when the log carries
 * no step/time field to compute it from (then the interval is flagged PRINTED_RATE).
 *
 * Fields each reader uses (in order of preference; the first one present is used):
 *   - megatron (Megatron-LM, Megatron-core, Megatron-DeepSpeed): ` [date] iteration N/ T |
 *     key: value | ...`. steps = Δiteration; time = `elapsed time per iteration (ms)` x steps;
 *     work = Δ`consumed samples`, else `global batch size` x steps. Unit samples. Excluded:
 *     `number of skipped iterations` > 0. Events: `saving checkpoint at iteration`, `validation
 *     loss at`, `loading checkpoint from` / `successfully loaded checkpoint ... at iteration N`.
 *   - nanotron: `iteration: N / T | elapsed_time_per_iteration_ms: 1.2K | tokens_per_sec: 109K
 *     | global_batch_size: 64 | ...` (K/M/G/T = 1e3..1e12). time = elapsed ms x steps; work =
 *     global_batch_size x sequence_length x steps when `sequence_length` was printed (the
 *     `[Start training]` line), else tokens_per_sec x time (printed rate; consumed_tokens is
 *     printed to 3 digits and not used). Events: `Saving checkpoint at`, `Loading checkpoint`,
 *     `start_iteration_step: N`. `[INFO|DP=d|PP=p|TP=t]` names the rank.
 *   - hf (Hugging Face Trainer): the training tqdm bar `n/total [elapsed<left, r it/s]` (total
 *     = `Total optimization steps`); steps = Δn, time = Δelapsed, work = `Total train batch size
 *     (w. parallel, distributed & accumulation)` x steps (samples), else steps. Without a bar:
 *     the final `{'train_runtime': s, 'train_samples_per_second': r}` dict, its work corrected
 *     for a resume ((total steps - resumed step) x batch). Events: `Saving model checkpoint
 *     to`, `{'eval_loss'` / an evaluation bar, `Continuing training from global step N`.
 *   - torchtitan: `[titan] date - root - INFO - step: N  loss: L  ...  tps: 6,942  tflops: ..`
 *     (`wps:` in early versions; ANSI colours stripped). time = Δ line timestamp (ms); tps is
 *     the interval's own tokens/s per GPU, so work = tps x time. Events: `Saving the
 *     checkpoint` / `Saving a ... checkpoint`, `validate step:`, `Loading the checkpoint`.
 *   - deepspeed: ThroughputTimer `epoch=E/micro_step=M/global_step=N, RunningAvgSamplesPerSec=
 *     .., CurrSamplesPerSec=..` (DeepSpeed >= 0.9; older `E/N, RunningAvgSamplesPerSec=..`).
 *     steps = Δglobal_step, time = Δ line timestamp, work = `train_batch_size` (config dump) x
 *     steps, else CurrSamplesPerSec x time (printed rate). `step=N, skipped=K`: K rising marks
 *     the interval skipped. DeepSpeed-Chat's `End-to-End => Latency: 0.85s, TFLOPs: ..,
 * Samples/sec:
 *     .., Batch Size: 64` lines: one step each, time = Latency, work = Batch Size (else
 *     Samples/sec x Latency). Events: `Saving model checkpoint` / `Checkpoint ... is about to be
 *     saved`, `Loading checkpoint` / `Loading model checkpoint`.
 *   - lightning (PyTorch Lightning 1.x and 2.x): `Epoch E:  45%|..| n/total [elapsed<left, r
 *     it/s, v_num=..]`; each epoch's bar is one segment; steps = Δn, time = Δelapsed; unit
 *     batches. Events: `Validation DataLoader` / `Validating` / `Sanity Checking` bars,
 *     `saving model to`, `Restoring states from the checkpoint` / `Restored all states`.
 *   - tqdm: any other tqdm bar (`n/total [..]` or `n it [..]`), unit steps.
 *   - regex: a PCRE2 pattern with a named group `throughput` (work/s) and optional named groups
 *     `work` and `time_s`; the old form (one plain group, `pfi sweep` before 0.9) is accepted
 *     with a note.
 * Progress bars are read as rates whether they print `it/s` or `s/it`; `\r`-separated updates
 * are records; an update repeated (the last one of a bar) counts once.
 *
 * Excluded from the steady window (each counted): intervals with skipped iterations, an
 * evaluation, a checkpoint save, a restart (the interval that spans a resume), a gap (see
 * PFI_TRAINLOG_GAP_*: the run is split into segments there and the interval across it is not
 * used), non-finite values (`nan`, `inf`) in the
 * fields used, and those within the warm-up of their session. Lines repeated by other ranks
 * (a rank prefix `[rankN]:`, `[defaultN]:`, `[a,N]<stdout>:`, `N: `, nanotron's DP/PP/TP
 * tag, or the same step again) are one record. A resume (a resume line, a step counter going
 * back, a clock going back) starts a session: each session uses its own steps and time; a
 * session's first interval faster than a fifth of the median time per step of the 5 after it is
 * a counter jump
 * (the steps ran in an earlier session, no resume line logged) and counts as a restart.
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
/* A gap: an interval longer than PFI_TRAINLOG_GAP_FACTOR x the session's mean time per step so far
 * x its steps, and longer than PFI_TRAINLOG_GAP_MIN_S (a slow step is not a pause) [ours]. */
#define PFI_TRAINLOG_GAP_FACTOR 5.0
#define PFI_TRAINLOG_GAP_MIN_S 300.0

typedef enum pfi_trainlog_format {
    PFI_TRAINLOG_AUTO = 0,
    PFI_TRAINLOG_MEGATRON = 1,
    PFI_TRAINLOG_NANOTRON = 2,
    PFI_TRAINLOG_HF = 3,
    PFI_TRAINLOG_TORCHTITAN = 4,
    PFI_TRAINLOG_REGEX = 5,
    PFI_TRAINLOG_DEEPSPEED = 6,
    PFI_TRAINLOG_LIGHTNING = 7,
    PFI_TRAINLOG_TQDM = 8
} pfi_trainlog_format;

#define PFI_TRAINLOG_N_FORMATS 9

/* Interval flags. */
enum {
    PFI_TRAINLOG_SKIPPED = 1u << 0,     /* skipped iterations in the interval: excluded */
    PFI_TRAINLOG_CHECKPOINT = 1u << 1,  /* a checkpoint save fell in the interval: excluded */
    PFI_TRAINLOG_NAN = 1u << 2,         /* loss / grad norm NaN (timing still valid) */
    PFI_TRAINLOG_BAD_RATE = 1u << 3,    /* no finite work or time (nan/inf printed): excluded */
    PFI_TRAINLOG_NO_TIME = 1u << 4,     /* rate known, interval duration not */
    PFI_TRAINLOG_EVAL = 1u << 5,        /* an evaluation fell in the interval: excluded */
    PFI_TRAINLOG_RESTART = 1u << 6,     /* the interval spans a resume or restart: excluded */
    PFI_TRAINLOG_GAP = 1u << 7,         /* a pause (preemption, lost node): excluded */
    PFI_TRAINLOG_PRINTED_RATE = 1u << 8 /* work = the framework's printed rate x time */
};

/* The flags that leave an interval out of a log's throughput. One rule for every caller:
 * pfi_trainlog_reduce (pfi ingest, pfi sweep) and pfid's live rate (pfi_trainlog_last_rate). */
#define PFI_TRAINLOG_EXCLUDED                                                                      \
    (PFI_TRAINLOG_SKIPPED | PFI_TRAINLOG_CHECKPOINT | PFI_TRAINLOG_EVAL | PFI_TRAINLOG_RESTART |   \
     PFI_TRAINLOG_GAP | PFI_TRAINLOG_BAD_RATE)

typedef struct pfi_trainlog_interval {
    long line;      /* 1-based physical line of the record that closes the interval */
    long iteration; /* last step of the interval (-1 unknown) */
    long n_iter;    /* steps in the interval (0 unknown) */
    double work;    /* samples, tokens or steps (NaN when unknown) */
    double time_s;  /* wall seconds (NaN when unknown) */
    double rate;    /* work / time_s, or the printed rate; NaN when not finite */
    double tflops;  /* TFLOP/s per GPU as logged, NaN when absent (never 0) */
    unsigned flags;
    unsigned session; /* 0-based: a resume starts the next */
    unsigned segment; /* 0-based over the log: a gap, a new bar or a session starts the next */
} pfi_trainlog_interval;

typedef struct pfi_trainlog {
    pfi_trainlog_format format;
    char unit[16]; /* "samples", "tokens", "batches", "steps" or "work" */
    pfi_trainlog_interval *iv;
    size_t n;
    size_t n_nan;        /* intervals / log dicts with NaN loss */
    size_t n_records;    /* records read (after duplicates) */
    size_t n_duplicate;  /* records dropped as another rank's copy or a repeated update */
    size_t n_merged;     /* bar updates within one displayed second of the one before (kept in
                            n_records, no interval of their own: tqdm prints whole seconds) */
    size_t n_nonfinite;  /* records with nan/inf in a field used for work or time */
    size_t n_sessions;   /* 1 + resumes */
    size_t n_segments;   /* 1 + gaps, new bars and sessions */
    bool truncated_last; /* the last line had no line end and was ignored */
    char notes[512];     /* "; "-separated remarks (old regex form, truncated line, ...) */
    size_t cap;          /* private */
} pfi_trainlog;

/* pfi_trainlog_format_name / pfi_trainlog_format_parse — "megatron", "nanotron", "hf",
 * "torchtitan", "regex", "deepspeed", "lightning", "tqdm" ("auto" too). */
const char *pfi_trainlog_format_name(pfi_trainlog_format f);
bool pfi_trainlog_format_parse(const char *name, pfi_trainlog_format *out);

/*
 * pfi_trainlog_read_file / _stream — read a training log (stream borrowed) in format fmt.
 * PFI_TRAINLOG_AUTO runs every reader over the log and keeps the first of megatron, nanotron,
 * torchtitan, hf, deepspeed, lightning, tqdm that found an interval; when none did, the error's
 * diag says, per reader, why it refused. regex: required for PFI_TRAINLOG_REGEX (and selects it
 * under AUTO), ignored otherwise. Lines split at '\n', '\r\n' and '\r' (progress bars); a record
 * longer than PFI_TRAINLOG_MAX_LINE is skipped with a note. *out is owned (pfi_trainlog_destroy).
 * Errors: PFI_ERR_IO, PFI_ERR_LIMIT, PFI_ERR_NOMEM, PFI_ERR_INVALID_ARGUMENT (bad regex or no
 * group to read; diag says why), PFI_ERR_EMPTY (no interval found; diag says why).
 */
pfi_error pfi_trainlog_read_file(const char *path, pfi_trainlog_format fmt, const char *regex,
                                 pfi_trainlog **out, pfi_diag *diag);
pfi_error pfi_trainlog_read_stream(FILE *f, const char *name, pfi_trainlog_format fmt,
                                   const char *regex, pfi_trainlog **out, pfi_diag *diag);

/*
 * pfi_trainlog_interval_usable — true when iv (borrowed) counts for throughput: none of
 * PFI_TRAINLOG_EXCLUDED set and a finite rate. (pfi_trainlog_reduce also leaves out the
 * warm-up, and intervals without a time when others have one.)
 */
bool pfi_trainlog_interval_usable(const pfi_trainlog_interval *iv);

/*
 * pfi_trainlog_last_rate — the rate (log->unit per second) of the last usable interval of log
 * (pfi_trainlog_interval_usable), the live throughput of a running job; NaN when none. log is
 * borrowed.
 */
double pfi_trainlog_last_rate(const pfi_trainlog *log);

/* pfi_trainlog_destroy — NULL is a no-op. */
void pfi_trainlog_destroy(pfi_trainlog *log);

/* Result of pfi_trainlog_reduce. */
typedef struct pfi_trainlog_summary {
    pfi_steady steady;  /* mean = Σwork/Σtime over the included intervals (work/s); se = the
                           ratio estimator's standard error from the intervals (NaN below 2);
                           m = n_valid = intervals used */
    double window_rate; /* the same Σwork/Σtime (kept for callers); NaN when none */
    double tflops_mean; /* mean logged TFLOP/s/GPU over included intervals, NaN if none */
    bool printed_rate;  /* no interval had a time: mean is the mean printed rate (fallback) */
    size_t n_included;
    size_t n_skipped, n_checkpoint, n_bad_rate, n_warmup, n_no_time;
    size_t n_eval, n_restart, n_gap;
} pfi_trainlog_summary;

/*
 * pfi_trainlog_reduce — steady-state throughput of a log: intervals ending within warmup_s of
 * their session's logged time are warm-up; flagged intervals (above) are excluded, each counted
 * once under the first of skipped, checkpoint, eval, restart, gap, bad rate; of the rest,
 * throughput R = Σwork/Σtime and its standard error sqrt(Σ(w_i − R t_i)² / (n(n−1))) / t̄
 * (ratio estimator; Cochran, Sampling Techniques, §6.3). q is accepted for the callers' one
 * option set and checked, but throughput is not a top-q mean. With no interval that has a time,
 * the mean of the printed rates (printed_rate true). Errors: PFI_ERR_INVALID_ARGUMENT (q,
 * warmup), PFI_ERR_EMPTY (nothing left: the run has no throughput), PFI_ERR_LIMIT (sums past
 * the range of a double), PFI_ERR_NOMEM.
 */
pfi_error pfi_trainlog_reduce(const pfi_trainlog *log, double warmup_s, double q,
                              pfi_trainlog_summary *out);

#ifdef __cplusplus
}
#endif

#endif
