/*
 * pfi/reduce.h — reduce one run's telemetry to the numbers a sweep needs (DESIGN §2, §4).
 *
 * Job power: the per-GPU power series are aligned on a time grid of align_s seconds and
 * summed per bin. Alignment is by capture loop, so that sampling jitter alone never makes a
 * timestamp incomplete: every power row of the job's GPUs, valid or missing, is taken in time
 * order, and a row joins the loop of the row before it when it lies within align_s / 2 of
 * that loop's first row and its GPU has no row in the loop yet; else it starts a new loop.
 * Without options.align_s each loop is a timestamp of its own, at its first row's time: GPUs
 * read a few ms apart (nvidia-smi queries them one after the other) share it, and two loops
 * closer than the measured step stay two timestamps (none is dropped). With align_s a loop
 * goes whole to bin round((t_first - t_0) / align_s); when two loops fall in one bin, each
 * GPU's first valid sample there is used (downsampling).
 * A bin is a timestamp when any GPU has a row there, with a valid value or not (the times of
 * missing values, DCGM blanks and dropped glitches: pfi_telemetry_series.miss_t), so a missing
 * value counts the same in every reader and with one GPU as with many. A bin where any of the job's
 * GPUs has no valid sample (a missing value, or no row at all in that loop) is INCOMPLETE: it is
 * counted and left out, never summed smaller. The grid is never a silent guess: a step the data
 * cannot give is named in pfi_reduced.align_note (see pfi_reduce_options.align_s). The run power is
 * the steady state (pfi_steady_state: warm-up dropped, mean of the top q of the complete bins, with
 * its standard error) of that job series. Energy: per GPU, the energy counter's increase
 * (energy_mj, when every GPU has one with two samples and each agrees with the power measured over
 * the same time within a factor 2; else a note says so) or the trapezoid integral of the power
 * series, summed; never across a break or a time gap (pfi_telemetry_gaps). It is unknown (NaN,
 * energy_note says why) when the telemetry lacks a GPU of the job, or a GPU has no power samples or
 * no two consecutive ones. It is PARTIAL (flag, energy_note) when a GPU's integrated time falls
 * short of the span of the job's samples by over half a grid step: a missing stretch or a time gap
 * is left out, never filled in. The job power is not affected by gaps: bins in a gap are empty.
 * Features: per field, the mean over the job's GPUs of each GPU's mean after the warm-up
 * (valid samples only); plus products "name=a*b" of two field means, where percent fields
 * count as fractions (DESIGN §4: dram_copy_product = dram_active x mem_copy_util_pct/100).
 */
#ifndef PFI_REDUCE_H
#define PFI_REDUCE_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/error.h"
#include "pfi/steady.h"
#include "pfi/telemetry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The default product list: the DRAM copy product of DESIGN §4 [our reading]. */
#define PFI_DEFAULT_PRODUCTS "dram_copy_product=dram_active*mem_copy_util_pct"
#define PFI_MAX_FEATURES 128

typedef struct pfi_reduce_options {
    double warmup_s;         /* seconds from the first sample dropped (0) */
    double q;                /* top fraction averaged (PFI_STEADY_DEFAULT_Q) */
    double align_s;          /* time grid, s; 0: the collector's interval_s, else 1 s for
                                nominal times, else the median sampling step of the first
                                GPU that has two consecutive power samples (said in
                                align_note when that is not the first GPU), else 1 s (said) */
    size_t gpus;             /* GPUs the job has (0: every GPU entity seen) */
    const char *power_field; /* NULL: power_avg_w, else power_w, else power_energy_w */
    const char *products;    /* comma list of name=a*b (NULL: PFI_DEFAULT_PRODUCTS) */
    double cap_w;            /* the run's power cap per GPU, W, checked against the enforced
                                limit in the telemetry (0: each GPU's first limit sample) */
} pfi_reduce_options;

/* pfi_reduce_options_init — the defaults above. */
void pfi_reduce_options_init(pfi_reduce_options *o);

enum {
    PFI_RED_NO_POWER = 1u << 0,       /* no power samples at all: no run power */
    PFI_RED_GPU_LOST = 1u << 1,       /* a GPU fell off the bus: run invalid for PFI */
    PFI_RED_INCOMPLETE = 1u << 2,     /* some timestamps lacked a GPU */
    PFI_RED_NOMINAL_TIME = 1u << 3,   /* times from interval x index, not clocks */
    PFI_RED_GPU_COUNT = 1u << 4,      /* fewer GPUs in the telemetry than the job has */
    PFI_RED_TOOL_ERROR = 1u << 5,     /* the tool printed errors in place of data */
    PFI_RED_NAN_LOSS = 1u << 6,       /* the training log had NaN losses */
    PFI_RED_NO_THROUGHPUT = 1u << 7,  /* no throughput */
    PFI_RED_TIME_GAP = 1u << 8,       /* a GPU's power or energy series has a time gap
                                         (pfi_telemetry_gaps): not integrated across */
    PFI_RED_ENERGY_PARTIAL = 1u << 9, /* the energy covers less than the run (see energy_note) */
    PFI_RED_CAP_LOST = 1u << 10,      /* the enforced limit differed from the cap for part of the
                                         run: those timestamps left out of the steady state */
    PFI_RED_THROTTLED = 1u << 11,     /* a GPU was throttled by something other than the software
                                         power cap (clock event reasons): timestamps left out */
    PFI_RED_CAP_SHORT = 1u << 12      /* after cap-lost / throttled timestamps were left out, fewer
                                         than half of the complete ones remain: no run power */
};
/* Flags that make a run unusable for PFI (stored, shown, left out of analyze). */
#define PFI_RED_INVALID                                                                            \
    (PFI_RED_NO_POWER | PFI_RED_GPU_LOST | PFI_RED_GPU_COUNT | PFI_RED_CAP_SHORT)
/* The clock event reasons (NVML nvmlClocksEventReason*, DCGM field 112) that are not the
 * software power cap: HW slowdown 0x8, sync boost 0x10, SW thermal 0x20, HW thermal 0x40, HW
 * power brake 0x80. (GPU idle 0x1, application clocks 0x2, SW power cap 0x4 and display
 * clocks 0x100 are not throttling a capped run.) */
#define PFI_RED_THROTTLE_MASK 0xF8ull

typedef struct pfi_reduced {
    char power_field[32];   /* the quantity used ("power_avg_w", ...), "" when none */
    pfi_steady power;       /* job power, W */
    size_t n_gpus;          /* GPUs summed */
    size_t n_bins;          /* time bins where any GPU has a row (valid or missing) */
    size_t n_complete;      /* bins with every GPU */
    size_t n_incomplete;    /* bins lacking a GPU: left out */
    size_t n_excluded;      /* complete bins left out: cap-lost or throttled (either) */
    size_t n_cap_lost;      /* of those, with a GPU whose enforced limit was not the cap */
    size_t n_throttled;     /* of those, with a GPU throttled by something else */
    double align_s;         /* grid used */
    char grid_error[640];   /* "" or, with PFI_ERR_LIMIT, why the grid was refused: the
                               span, the step, the grid points needed and the limit, then the
                               cause: a far-off sample (GPU, sample number, time), two groups
                               of times (nominal times mixed with timestamps), or the --align
                               step that would fit */
    char align_note[160];   /* "" or how align_s was chosen when neither the options nor the
                               first GPU's sampling gave it (see pfi_reduce_power) */
    double energy_j;        /* job energy, J (NaN when unknown: see energy_note) */
    char energy_method[32]; /* "counter", "power-trapezoid" or "" when unknown */
    char energy_note[256];  /* "" or why energy_j is unknown ("gpu0 has no power samples"),
                               or what qualifies it: "partial: gpu1 covers 3 of 4 s", the
                               energy counter rejected; several joined by "; " */
    unsigned flags;         /* PFI_RED_* */
    size_t n_features;
    char feature_name[PFI_MAX_FEATURES][64];
    double feature_value[PFI_MAX_FEATURES];
} pfi_reduced;

/*
 * pfi_reduce_power — reduce tm (read with keep_series) to job power, energy and features
 * into *out (caller-owned). Errors: PFI_ERR_INVALID_ARGUMENT (options), PFI_ERR_NOMEM,
 * PFI_ERR_LIMIT (time grid over 20 million bins, or over 16 bins per power row, valid or
 * missing, + 2^20; out->grid_error says why). A far-off time is refused, not dropped: one row
 * dated 1970 (an unset clock) moves t_0, the warm-up and the energy span, and the library
 * cannot know which side of the jump is right, so the message names the sample and the fix
 * (correct or remove it, trim the file, a coarser --align, or nominal-time files reduced on
 * their own). A run without power is not an error: out->flags has PFI_RED_NO_POWER
 * and out->power.mean is NaN. out->align_note says how the grid was chosen when neither the
 * options nor the first GPU's sampling gave it.
 */
pfi_error pfi_reduce_power(const pfi_telemetry *tm, const pfi_reduce_options *o, pfi_reduced *out);

/*
 * pfi_reduce_stream — the second read of a collector read with options.stream_power, in
 * place of pfi_telemetry_derive_power_from_energy: replay(ctx, fn, fctx) reads the same files
 * again into a collector of its own made with the same options and sink fn(fctx)
 * (pfi_telemetry_set_sink), and the samples of the power and energy series go, as they come,
 * into the sums pfi_reduce_power(tm, o, ...) needs: the job power's capture loops (a merge of
 * the GPUs' rows in time order through a bounded window), the trapezoids, the counter's
 * increases, the power derived from the counter (into tm). Every sum is made in the order
 * the stored series gives, so the results are the stored path's, bit for bit. Memory: the
 * window, 8 bytes per capture loop and the per-series step tables; not the samples. Where
 * that cannot be vouched for (pass 1: a series' times out of order, too many distinct
 * steps, implausible dates, a grid over its limit; pass 2: the window full) tm->counted_inexact
 * is set and PFI_OK returned: read the files again without stream_power. o is the options
 * pfi_reduce_power will be given (checked there: PFI_ERR_INVALID_ARGUMENT when they differ).
 * Errors: the replay's, PFI_ERR_NOMEM. Source: bench/README.md, "Bounded memory, step 2".
 */
/*
 * pfi_reduce_stream_begin — before the first read of a collector made with
 * options.stream_power: its power and energy samples also feed, as they come, the sums
 * pfi_reduce_stream makes, with the gap limits and the grid step guessed from the first
 * steps; pfi_reduce_stream checks every decision the guesses took against the true values and,
 * when all agree (a regular capture), uses those sums — bit for bit the second read's — and
 * reads nothing again. o: the options pfi_reduce_stream will be given. Nothing is guessed with
 * --align (o->align_s > 0) or a warm-up. Errors: PFI_ERR_NOMEM.
 */
pfi_error pfi_reduce_stream_begin(pfi_telemetry *tm, const pfi_reduce_options *o);

pfi_error pfi_reduce_stream(pfi_telemetry *tm, const pfi_reduce_options *o,
                            pfi_error (*replay)(void *ctx, pfi_telemetry_sample_fn fn, void *fctx),
                            void *ctx);

#ifdef __cplusplus
}
#endif

#endif
