/*
 * pfi/sweep.h — a live power-cap sweep (paper §3, DESIGN §8): set a cap on every GPU of a
 * job, sample telemetry every Δt on the backend's monotonic clock, collect the job's
 * throughput, reduce the window to a run (steady state, pfi/steady.h), hand the run to a
 * sink, move to the next cap, and put every GPU back the way it was, whatever happens.
 *
 * Two seams keep the engine independent of where throughput comes from and where runs go:
 *   - pfi_tput_source: start/stop the workload and poll its throughput reports. Provided:
 *     the emulated job (pfi_tput_emulated), a command whose stdout is matched line by line
 *     with a PCRE2 --throughput-regex (pfi_tput_command), a log file followed from its end
 * (pfi_tput_log).
 *   - pfi_run_sink: receives each completed run and says which runs are already done (for
 *     resume). Provided: the runs-table directory (pfi_runs_dir_*; `pfi analyze DIR` reads it)
 *     and the SQLite run store (pfi_store_sink; `pfi analyze --db FILE` reads it).
 *
 * Modes: separate (the paper's method: start the workload at each cap, drop its warm-up) and
 * in-situ (one running workload, caps changed in place, a settling time before each window).
 */
#ifndef PFI_SWEEP_H
#define PFI_SWEEP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/capctl.h"
#include "pfi/error.h"
#include "pfi/gpu.h"
#include "pfi/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- throughput ------------------------------------------------------------------------- */

/* pfi_tput_source — a workload and its throughput reports. Every op may be NULL (no-op). */
typedef struct pfi_tput_source {
    /* start the workload (separate mode: once per cap; in-situ: once) */
    pfi_error (*start)(void *ctx, pfi_diag *diag);
    /* stop it (kill the command, stop the emulated job) */
    void (*stop)(void *ctx);
    /* reports since the last poll, up to max, times on the backend clock; *n written */
    pfi_error (*poll)(void *ctx, double now_s, double *t_s, double *tokens_per_s, size_t max,
                      size_t *n);
    /* false once the workload has exited by itself */
    bool (*alive)(void *ctx);
    void (*destroy)(void *ctx);
    void *ctx;
} pfi_tput_source;

/* pfi_tput_source_destroy — call src->destroy (NULL src or op: no-op) and zero *src. */
void pfi_tput_source_destroy(pfi_tput_source *src);

/* pfi_tput_emulated — the emulated backend's job (borrowed g). */
pfi_error pfi_tput_emulated(pfi_gpu *g, pfi_tput_source *out);

/* pfi_tput_regex — a compiled --throughput-regex: PCRE2 (as `pfi ingest`) with a named group
 * (?<throughput>...) capturing a number, optionally followed by k/K/M/G (×1e3/1e3/1e6/1e9); the
 * old form, exactly one plain group (POSIX ERE before), is accepted with a note. Owned;
 * pfi_tput_regex_free. */
typedef struct pfi_tput_regex pfi_tput_regex;

/* pfi_tput_regex_compile — Errors: PFI_ERR_INVALID_ARGUMENT (bad pattern, or neither a
 * (?<throughput>...) group nor exactly one plain group; diag says which). */
pfi_error pfi_tput_regex_compile(const char *pattern, pfi_tput_regex **out, pfi_diag *diag);

/* pfi_tput_regex_note — static text when re was given in the old one-plain-group form (the caller
 * shows it), NULL otherwise or for NULL re. */
const char *pfi_tput_regex_note(const pfi_tput_regex *re);

/* pfi_tput_regex_free — NULL is a no-op. */
void pfi_tput_regex_free(pfi_tput_regex *re);

/*
 * pfi_tput_parse_line — match line[0..len) (no newline; NULs make it not match): true and
 * *tokens_per_s when the group holds a finite non-negative number.
 */
bool pfi_tput_parse_line(const pfi_tput_regex *re, const char *line, size_t len,
                         double *tokens_per_s);

/*
 * pfi_tput_command — run argv (argv[0] found on PATH) in its own process group at each
 * start, its stdout read through a pipe and matched with re (ownership of re passes to the
 * source); echo (may be NULL) receives a copy of every line. stop sends SIGTERM to the group,
 * SIGKILL after 10 s. clock is the backend whose clock stamps the reports (borrowed).
 * Lines longer than 64 KiB are dropped.
 */
pfi_error pfi_tput_command(char *const *argv, pfi_tput_regex *re, pfi_gpu *clock, int echo_fd,
                           pfi_tput_source *out, pfi_diag *diag);

/* pfi_tput_log — follow the file at path from its end at start (a training log written by a
 * job pfi does not run), matching lines with re (ownership passes). */
pfi_error pfi_tput_log(const char *path, pfi_tput_regex *re, pfi_gpu *clock, pfi_tput_source *out,
                       pfi_diag *diag);

/* ---- runs ------------------------------------------------------------------------------- */

/* pfi_sweep_row — one completed run. Strings borrowed for the duration of put. */
typedef struct pfi_sweep_row {
    const char *group;      /* sweep group name */
    double cap_w;           /* the cap in effect: max enforced limit over the GPUs, W */
    double requested_cap_w; /* what the sweep asked for, W */
    double power_w;         /* steady-state job power (sum over GPUs), W; NaN missing */
    double power_se_w;      /* NaN when unknown */
    double throughput;      /* steady-state tokens/s; NaN missing */
    double throughput_se;
    unsigned gpus;
    size_t samples;      /* telemetry ticks in the window */
    size_t tput_reports; /* throughput reports in the window */
    const char *flags;   /* ';'-separated: clamped, cap_not_effective (the limit did not take,
                            or the power was above it: PFI_SWEEP_CAP_MARGIN),
                            enforced_below_request, gpu_lost, no_throughput, missing_power,
                            workload_exited */
    const char *mode;    /* "separate" / "in-situ" */
    double window_s;     /* measured window length, s (backend clock) */
    double sm_clock_mhz; /* mean over GPUs and window; NaN missing */
    double dram_active;  /* mean, [0, 1]; NaN missing */
    double tensor_active;
    double energy_j;         /* energy counter delta over the window, summed; NaN missing */
    const char *started_utc; /* wall-clock label "2026-01-14T07:21:09Z" */
} pfi_sweep_row;

/*
 * A run's steady-state power above the sum of its GPUs' limits in force by more than this share
 * of them, plus what the samples' noise gives a top-q mean (z·σ, z = φ(Φ⁻¹(1 − q))/q, σ from
 * the successive differences of the job power), did not run under its cap over the window (a
 * window that starts before the cap settles, e.g. with no warm-up, or a cap the GPU does not
 * hold): the run is flagged cap_not_effective and the warn callback says so; it is stored, and
 * the sweep's result does not change [ours].
 */
#define PFI_SWEEP_CAP_MARGIN 0.05

/* pfi_run_sink — where runs go. */
typedef struct pfi_run_sink {
    pfi_error (*put)(void *ctx, const pfi_sweep_row *row, pfi_diag *diag);
    /* true when a run of group at requested cap is already stored (resume) */
    bool (*done)(void *ctx, const char *group, double requested_cap_w);
    void *ctx;
} pfi_run_sink;

/* Name of the runs table in a sweep directory. */
#define PFI_RUNS_FILE "runs.csv"

typedef struct pfi_runs_dir pfi_runs_dir;

/*
 * pfi_runs_dir_open — a sweep output directory (created if absent): reads an existing
 * runs.csv (its rows are kept and count as done), writes the manifest pfi-dataset.json if
 * absent. Each put rewrites runs.csv whole (temporary + rename): never a half file; a put of
 * a group and requested cap already there replaces that row.
 * Errors: PFI_ERR_IO, PFI_ERR_PARSE (an existing runs.csv with another header),
 * PFI_ERR_NOMEM.
 */
pfi_error pfi_runs_dir_open(const char *dir, pfi_runs_dir **out, pfi_diag *diag);
/* pfi_runs_dir_sink — the sink view of d (borrowed). */
pfi_run_sink pfi_runs_dir_sink(pfi_runs_dir *d);
/* pfi_runs_dir_path — the runs.csv path (borrowed). */
const char *pfi_runs_dir_path(const pfi_runs_dir *d);
/* pfi_runs_dir_close — NULL is a no-op. */
void pfi_runs_dir_close(pfi_runs_dir *d);

/*
 * pfi_store_sink — the sink view of the run store st (borrowed: keep it open while the sweep
 * runs). put stores each run as it completes, in one transaction (pfi_store_put_run): cap_w
 * the cap in effect, power/throughput with their SEs, power_n = samples, throughput_n =
 * tput_reports, throughput_unit "tokens", power_field "power_w", energy_j; flags gpu_lost,
 * missing_power and no_throughput as PFI_RED_GPU_LOST, PFI_RED_NO_POWER,
 * PFI_RED_NO_THROUGHPUT; features requested_cap_w, samples, tput_reports, window_s,
 * sm_clock_mhz, dram_active, tensor_active, in_situ (0/1) and flag_<name> = 1 for every
 * other flag (clamped, cap_not_effective, enforced_below_request, workload_exited); one
 * source, reader "pfi-sweep", path "pfi sweep <mode> <started_utc>". A run replaces a stored
 * run of the same group and cap in effect (the store keeps one per group and cap). done is
 * true when the group holds a run whose requested_cap_w is the cap asked (a read error
 * counts as not done: the run is measured again). put's errors: pfi_store_put_run's.
 */
pfi_run_sink pfi_store_sink(pfi_store *st);

/* ---- the sweep -------------------------------------------------------------------------- */

typedef enum pfi_sweep_mode { PFI_SWEEP_SEPARATE = 0, PFI_SWEEP_IN_SITU = 1 } pfi_sweep_mode;

/* pfi_sweep_progress — handed to the progress callback at each tick. */
typedef struct pfi_sweep_progress {
    size_t run, n_runs; /* 0-based run index, runs in this sweep (skipped included) */
    double cap_w;
    const char *phase;   /* "warm-up", "settle", "measure" */
    double phase_left_s; /* backend seconds left in this phase */
    double eta_s;        /* backend seconds left in the sweep (estimate) */
} pfi_sweep_progress;

typedef struct pfi_sweep_config {
    const unsigned *gpus; /* backend indices of the job's GPUs */
    size_t n_gpus;
    const double *caps_w; /* caps in the order to measure them; the highest is the reference */
    size_t n_caps;
    pfi_sweep_mode mode;
    double duration_s;           /* measurement window per cap */
    double interval_s;           /* Δt between telemetry samples */
    double warmup_s;             /* separate: after each start; in-situ: after the single start */
    double settle_s;             /* in-situ: after each cap change */
    double q;                    /* steady-state top fraction (0.10) */
    bool clamp;                  /* clamp caps outside [min, max] instead of refusing */
    const char *group;           /* sweep group name for the rows */
    const char *journal_path;    /* NULL: no journal (emulated) */
    const char *library;         /* recorded in the journal */
    volatile sig_atomic_t *stop; /* set by a signal handler: stop, restore, return */
    void (*progress)(void *arg, const pfi_sweep_progress *p);
    void *progress_arg;
    /* one line per notable event (cap not effective, enforced below request, clamped) */
    void (*warn)(void *arg, const char *message);
    void *warn_arg;
    /* every sample read in a measurement window (NULL: none), after the tick's reads (not
     * counted in cpu_per_sample_s): the GPU's backend index, the sample (borrowed for the
     * call; t_s on the backend clock), the limit in effect on that GPU, mW (read back after
     * the set; the target when it could not be read). For `pfi sweep --record`. */
    void (*sample)(void *arg, unsigned gpu, const pfi_gpu_sample *s, uint32_t limit_mw);
    void *sample_arg;
    /* ownership (DESIGN §10): the GPUs are locked under run_dir (pfi_gpu_lock_acquire) for
     * owner before the first change, and released after the restore; NULL: no lock */
    const char *run_dir;
    const char *owner; /* NULL: "pfi sweep" */
} pfi_sweep_config;

/* pfi_sweep_stats — what the sweep did and how well it kept time. */
typedef struct pfi_sweep_stats {
    size_t runs_done, runs_skipped, runs_failed;
    size_t ticks;      /* telemetry ticks */
    double max_late_s; /* largest delay from a tick's deadline to the end of its reads */
    double drift_rel;  /* max over windows of |span − (ticks−1)·Δt| / ((ticks−1)·Δt) */
    double cpu_per_sample_s; /* process CPU per GPU sample (sampling code only) */
    double elapsed_s;        /* backend time from start to end */
    bool restored;           /* every GPU holds its original limit again */
    pfi_cap_result *restore; /* n_gpus results of the final restore (owned by stats) */
} pfi_sweep_stats;

/* pfi_sweep_stats_clear — free what s owns. */
void pfi_sweep_stats_clear(pfi_sweep_stats *s);

/*
 * pfi_sweep_run — the whole sweep on backend g (borrowed) with workload tp and sink.
 * Caps are resolved against every GPU's limits before anything changes (refused or clamped
 * per c->clamp). Runs the sink says are done are skipped. On any exit path the original
 * limits are restored (stats->restored says whether that worked). Errors: PFI_ERR_OUT_OF_RANGE
 * (a cap outside a GPU's range without clamp: nothing changed), PFI_ERR_INTERRUPTED (*stop
 * was set), PFI_ERR_GPU_LOST, PFI_ERR_NO_PERMISSION, PFI_ERR_NOT_SUPPORTED, PFI_ERR_EXISTS
 * (a journal is left over), the sink's errors, PFI_ERR_NOMEM. PFI_ERR_NOT_EFFECTIVE when every
 * run completed but some cap did not take (the rows are flagged).
 */
pfi_error pfi_sweep_run(pfi_gpu *g, const pfi_sweep_config *c, pfi_tput_source *tp,
                        pfi_run_sink *sink, pfi_sweep_stats *stats, pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
