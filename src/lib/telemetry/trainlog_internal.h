/*
 * Training-log readers' internal interface: a reader turns one line (rank prefix stripped)
 * into at most one record and a set of events; trainlog.c turns records into intervals.
 */
#ifndef PFI_TELEMETRY_TRAINLOG_INTERNAL_H
#define PFI_TELEMETRY_TRAINLOG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/trainlog.h"

/* One logged step as a line states it. Unknown fields are NaN (step: -1, bar: -1). */
typedef struct tl_rec {
    long step;          /* the step counter */
    double clock_s;     /* line timestamp or a bar's elapsed time, s */
    double step_s;      /* printed wall time per step (Megatron, nanotron), s */
    double cum_work;    /* cumulative work counter (consumed samples) */
    double step_work;   /* work per step (global batch size) */
    double rate;        /* printed rate, work/s */
    bool rate_interval; /* the printed rate is the interval's own work/time (torchtitan tps) */
    double tflops;      /* TFLOP/s/GPU as printed */
    unsigned flags;     /* PFI_TRAINLOG_SKIPPED, PFI_TRAINLOG_NAN */
    bool nonfinite;     /* a field used for work or time printed nan/inf */
    long bar;           /* progress bar / epoch identity: a change starts a segment */
} tl_rec;

enum { TL_EV_CKPT = 1u, TL_EV_EVAL = 2u, TL_EV_RESUME = 4u };

typedef struct tl_out {
    bool sig;     /* the line is in this reader's layout */
    bool has_rec; /* rec holds a record */
    tl_rec rec;
    unsigned events;  /* TL_EV_* seen on the line */
    long resume_step; /* step resumed from, -1 unknown */
    bool nan_loss;    /* a NaN loss outside a record (HF log dict) */
    bool has_direct;  /* direct holds a finished interval (regex, HF final dict) */
    pfi_trainlog_interval direct;
} tl_out;

/* Per-reader state (configuration lines seen so far). */
typedef struct tl_rstate {
    double batch;       /* samples per step (HF total train batch size, DeepSpeed
                           train_batch_size), NaN */
    double seq_len;     /* tokens per sample (nanotron sequence_length), NaN */
    long total_steps;   /* HF total optimization steps, -1 */
    long train_total;   /* the training bar's total (HF, tqdm), -1 */
    char main_desc[64]; /* tqdm: the training bar's description */
    bool main_set;
    double skipped_now, skipped_rec; /* DeepSpeed `skipped=` now / at the last record */
    char unit[16];
    char final_unit[16]; /* HF: the final dict's unit, used when the dict is */
    long long t0;        /* the first line timestamp, whole seconds */
    bool t0_set;
    long line_now;      /* the line being read (set by trainlog.c before each line) */
    long bad_time_line; /* the first line whose time is no time (Feb 30, 25:00, a bar's
                           "[75:80<"), 0 none: the read is refused on it when this reader
                           is the one taken */
    char bad_time[64];  /* that line's time text as written (cut), and what it is */
    const char *bad_time_what;
    void *re, *md; /* regex: pcre2_code, pcre2_match_data */
    int group[3];  /* regex: throughput, work, time_s group numbers (-1 none) */
} tl_rstate;

typedef struct tl_reader {
    pfi_trainlog_format fmt;
    const char *needs; /* what it looks for, for the refusal message */
    void (*line)(tl_rstate *st, const char *s, size_t n, tl_out *o);
} tl_reader;

/* The readers, in auto-detection priority order (regex last, not auto-detected). */
extern const tl_reader tl_readers[];
extern const size_t tl_n_readers;
const tl_reader *tl_reader_for(pfi_trainlog_format f);

/* Note the first time of st's reader that is no time: what it is ("timestamp"), its text
 * s[0..n) (cut), on st->line_now. Later ones are not kept. */
void tl_bad_time(tl_rstate *st, const char *what, const char *s, size_t n);

/* A number with optional K/M/G/T suffix and thousands commas; nan/inf give NaN with *nonfinite
 * set. false when not a number. */
bool tl_num(const char *s, size_t n, double *v, bool *nonfinite);

#endif
