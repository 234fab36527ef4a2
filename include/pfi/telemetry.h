/*
 * pfi/telemetry.h — GPU telemetry readers and the sample collector they fill.
 *
 * Readers (streaming, one bounded line at a time, PFI_TELEMETRY_MAX_LINE bytes):
 *   - nvidia-smi --query-gpu=... --format=csv[,nounits][,noheader]  (PFI_TELEMETRY_SMI_CSV)
 *   - nvidia-smi dmon, with or without -o D/T/DT                     (PFI_TELEMETRY_SMI_DMON)
 *   - nvidia-smi -q [-d POWER] text blocks                           (PFI_TELEMETRY_SMI_QUERY)
 *   - dcgmi dmon                                                     (PFI_TELEMETRY_DCGMI_DMON)
 *   - dcgm-exporter / Prometheus text exposition format 0.0.4        (PFI_TELEMETRY_PROM)
 *   - nvidia-smi -q -x XML (power readings; one document per sample,
 *     libxml2, opened on first use, at most 16 MiB per document)     (PFI_TELEMETRY_SMI_XML)
 * Formats are documented in tests/cases (shared/cases/README.md "Formats confirmed").
 *
 * Every column is mapped by its header name, never by position. Each source name maps to a
 * canonical field (power_w, power_avg_w, power_instant_w, energy_mj, gpu_util_pct, sm_active,
 * ...; see pfi_telemetry_field_info) or, when unknown, is kept under its own name: the feature list
 * is data. A value is stored only when valid; missing tokens ("[N/A]", "N/A", "N/W", "-",
 * "", DCGM blank sentinels, NaN/Inf) and out-of-range glitches (percent outside 0..100,
 * ratio outside 0..1, power < 0 or > 2x the max limit) are counted per series, never stored
 * as zero, and reported once per (entity, field) in the notes.
 *
 * Time: samples carry seconds on the file's own clock. nvidia-smi timestamps are host-local
 * date/time without zone, converted as if UTC ("naive local" seconds since 1970). Formats
 * without timestamps (dcgmi dmon, dmon without -o T, Prometheus scrapes) get nominal time
 * = per-entity sample index x options.interval_s (1 s, the dmon/dcgmi default, when not
 * given: pfi_telemetry.interval_assumed), and pfi_telemetry.time_nominal is set. A time
 * that goes backwards splits the series (a new segment, a note); for time-of-day-only dmon a
 * jump back across midnight that matches the interval is a day rollover (+86400 s, a note).
 * A time GAP is a step between consecutive stored samples longer than PFI_TELEMETRY_GAP_FACTOR x
 * the series' own median sampling step (pfi_telemetry_gaps; for nominal times that step is the
 * interval): nothing is integrated across one, and pfi_telemetry_summarize notes each power or
 * energy series that has gaps.
 *
 * Ownership: a pfi_telemetry owns everything it points to; all returned pointers are borrowed and
 * valid until pfi_telemetry_destroy. Not thread-safe (one collector per thread).
 */
#ifndef PFI_TELEMETRY_H
#define PFI_TELEMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_TELEMETRY_MAX_LINE 65536        /* longest input line, bytes */
#define PFI_TELEMETRY_MAX_ENTITIES 65536    /* most GPUs/entities in one collector */
#define PFI_TELEMETRY_MAX_FIELDS 256        /* most distinct fields (255 read, 1 derived) */
#define PFI_TELEMETRY_MAX_SAMPLES 100000000 /* most stored samples over all series */
/* The most power one GPU draws, W, when no limit bounds it (no max limit column and no
 * options.max_power_w): above it a power sample is implausible (a unit mix-up, a counter read
 * as power, a glitch) and dropped as out of range, never integrated. The largest GPUs today
 * draw about 1.4 kW. */
#define PFI_TELEMETRY_MAX_GPU_POWER_W 5000.0
#define PFI_TELEMETRY_MAX_NOTES 512 /* notes kept; later ones are counted only */
#define PFI_TELEMETRY_NOTE_LEN 320
#define PFI_TELEMETRY_GAP_FACTOR                                                                   \
    10.0 /* a step > this x the median step is a gap (pfi_telemetry_gaps) */

typedef enum pfi_telemetry_format {
    PFI_TELEMETRY_AUTO = 0,
    PFI_TELEMETRY_SMI_CSV = 1,
    PFI_TELEMETRY_SMI_DMON = 2,
    PFI_TELEMETRY_SMI_QUERY = 3,
    PFI_TELEMETRY_DCGMI_DMON = 4,
    PFI_TELEMETRY_PROM = 5,
    PFI_TELEMETRY_SMI_XML = 6,
    PFI_TELEMETRY_PROM_API = 7 /* Prometheus HTTP API /api/v1/query(_range) JSON */
} pfi_telemetry_format;
/* The formats are numbered 0 .. PFI_TELEMETRY_FORMAT_COUNT - 1 (PFI_TELEMETRY_AUTO first): a
 * caller lists them with pfi_telemetry_format_name over that range. */
#define PFI_TELEMETRY_FORMAT_COUNT 8

/* pfi_telemetry_format_name — "nvidia-smi-csv", "dmon", "nvidia-smi-q", "dcgmi-dmon", "prometheus",
 * "nvidia-smi-xml", "prometheus-api". */
const char *pfi_telemetry_format_name(pfi_telemetry_format f);

/* pfi_telemetry_format_parse — inverse of pfi_telemetry_format_name ("auto" too); false when
 * unknown. */
bool pfi_telemetry_format_parse(const char *name, pfi_telemetry_format *out);

/*
 * pfi_telemetry_detect — guess the format from the first bytes of a file (head[0..n)). Returns
 * PFI_TELEMETRY_AUTO when nothing matches, and for what is not telemetry: binary content (a NUL
 * byte, mostly non-text bytes), UTF-16, a CSV header naming no nvidia-smi query field, a
 * Prometheus-like first line with too few exposition lines after it. Pure function.
 */
pfi_telemetry_format pfi_telemetry_detect(const char *head, size_t n);

/* Kind of a field: decides its range check and how it may be combined. */
typedef enum pfi_telemetry_kind {
    PFI_KIND_OTHER = 0,
    PFI_KIND_POWER_W = 1,   /* W, checked 0 .. 2 x max limit */
    PFI_KIND_ENERGY_MJ = 2, /* cumulative counter, mJ */
    PFI_KIND_PERCENT = 3,   /* 0..100 */
    PFI_KIND_RATIO = 4,     /* 0..1 (DCGM profiling fields) */
    PFI_KIND_LIMIT_W = 5    /* a power limit, W */
} pfi_telemetry_kind;

typedef struct pfi_telemetry_options {
    double interval_s;      /* sampling interval for formats without time (0: unknown) */
    double max_power_w;     /* per-GPU max power limit for the power range check (0: unknown;
                               then a seen max/enforced limit column is used) */
    const char *host;       /* host attached to entities without one (Prometheus), may be NULL */
    const char *csv_fields; /* comma-separated --query-gpu list for csv,noheader (may be NULL) */
    long start_date;        /* YYYYMMDD for time-only dmon (0: times relative) */
    bool keep_series;       /* store samples (true) or only count/sum them (false: benchmarks) */
    bool count_means_only;  /* with keep_series: the series pfi_reduce_power reads only as a
                               mean (every field but power and energy) are counted and
                               summed, not stored (pfi_telemetry_series.counted; power limits
                               and clock event reasons keep their changes, the power derived
                               from the counter its times beside a measured power): bounded
                               memory for those. Their means then take no warm-up unless
                               stream_power's second read (pfi_reduce_stream) makes their
                               warm-up sums: with a warm-up set it only with stream_power.
                               tm->counted_inexact says when a mean could
                               differ from the stored samples' (read again without it). Off:
                               the default. */
    bool generic_rows;      /* every row through the general per-line path, none through the
                               fast row paths. The results are identical by contract (same
                               series, sums, notes and counters); tests and fuzzers read each
                               input both ways and compare. Off: the default. */
    const char *timezone;   /* the zone of zone-less local timestamps (nvidia-smi's CSV,
                               dmon -o DT, -q's Timestamp): an IANA name ("Europe/Berlin",
                               /usr/share/zoneinfo), a TZif file path, or "UTC"; they are
                               then read as UTC seconds, a daylight-saving fall-back's
                               repeated hour in file order, a spring-forward never a gap.
                               NULL: taken as they are ("naive", as if UTC). ISO 8601
                               times with an offset ("...T12:00:00+02:00", "Z") and epoch
                               seconds are exact either way. */
    bool no_simd;           /* the fast row paths without instructions beyond the baseline
                               (SSE2 on x86-64), even where the CPU has them: for tests of
                               that path; results are the same either way. */
    bool stream_power;      /* with count_means_only: the power and energy series are not
                               stored either (pfi_telemetry_series.stream): each keeps its
                               count, sum, first and last time and a table of its distinct
                               sampling steps (the exact median and time gaps), and the
                               reduction's sums over their samples are made by a second read
                               (pfi_reduce_stream). Where that cannot give today's results
                               exactly (times out of order in a series, more than
                               TM_STREAM_STEPS distinct steps, implausible dates, ...)
                               tm->counted_inexact is set: read again without it. Off: the
                               default. */
    bool map_files;         /* read regular files through a sliding window of mappings (mmap,
                               1 MiB at a time; the last part of a file is read) instead of
                               copying them into a buffer: the same results, less CPU. A
                               file truncated by another program while it is read then
                               raises SIGBUS in the reading thread: set it only when the
                               caller handles that (pfi ingest reports the file and stops).
                               Pipes, FIFOs and streams without a file offset are read as
                               before. Off: the default. */
} pfi_telemetry_options;

/* Why a DCGM value was blank (dcgm_structs.h DCGM_*_BLANK and the codes above it). */
enum {
    PFI_DCGM_BLANK = 0,            /* DCGM_*_BLANK: no value yet */
    PFI_DCGM_NOT_FOUND = 1,        /* DCGM_*_NOT_FOUND */
    PFI_DCGM_NOT_SUPPORTED = 2,    /* DCGM_*_NOT_SUPPORTED */
    PFI_DCGM_NOT_PERMISSIONED = 3, /* DCGM_*_NOT_PERMISSIONED */
    PFI_DCGM_OTHER = 4,            /* another code of the blank range */
    PFI_DCGM_BLANK_KINDS = 5
};

/* One (entity, field) series. Arrays hold the valid samples only, in file order. */
typedef struct pfi_telemetry_series {
    size_t entity, field;
    double *t_s;        /* n sample times, s (see time above) */
    double *value;      /* n values in the field's unit */
    unsigned char *brk; /* n flags: 1 when sample i starts a new piece (after a missing
                           value or a segment split): never integrate across; time gaps
                           (pfi_telemetry_gaps) are not marked here but skipped all the same */
    size_t n;           /* stored (valid) samples; n_valid when keep_series */
    size_t n_valid;     /* valid samples seen */
    size_t n_missing;   /* missing tokens seen (DCGM blanks included) */
    size_t n_blank[PFI_DCGM_BLANK_KINDS]; /* of those, DCGM blank values by reason */
    size_t n_range;                       /* out-of-range glitches dropped */
    size_t n_duplicate;                   /* duplicate series in one scrape, dropped */
    double range_max;                     /* largest glitch value seen (NaN when none) */
    double sum;                           /* sum of valid values */
    double last_good_t_s;                 /* time of the last valid sample (NaN when none) */
    double first_missing_t_s; /* first missing sample after a valid one (NaN when none) */
    double *miss_t;           /* n_miss times of the rows whose value was seen but not stored
                                 (a missing token, a DCGM blank, an out-of-range glitch), in
                                 the order recorded; kept for power and energy fields only
                                 (PFI_KIND_POWER_W, PFI_KIND_ENERGY_MJ) and only with
                                 keep_series, else n_miss is 0. power_energy_w also holds its
                                 counter's. A time that is not known (an empty Prometheus
                                 scrape among timestamped ones) is not kept. pfi_reduce_power
                                 makes these timestamps incomplete. */
    size_t n_miss;
    /* private */
    size_t cap, miss_cap;
    long last_row;
    bool last_pod;
    bool pending_break;
    double last_t;
    bool counted;      /* options.count_means_only: the mean is sum / n_valid; the samples are
                          not stored (n stays 0) unless changes_only */
    bool changes_only; /* counted power limits and clock event reasons: only the samples whose
                          value differs from the last stored one are stored (what a look-up of
                          the value at a time needs) */
    bool times_only;   /* counted power_energy_w beside a measured power field: its times and
                          breaks stored (the gap note), not its values */
    long range_line;   /* the line of range_max's sample (0: not known) */
    size_t range_file; /* its file (index in the collector's file_names) */
    double t_first;    /* counted: time of the first valid sample (NaN: none) */
    double t_hi;       /* counted: the latest valid sample's time (-INFINITY: none) */
    struct tm_stream *stream; /* options.stream_power, power and energy fields: the sampling
                                 steps and span of the samples not stored (NULL: none) */
    double wsum;              /* counted, with a warm-up (pfi_telemetry.warm_s > 0): the sum
                                 of the valid values at least warm_s after warm_t0, in file
                                 order (pfi_reduce_stream's second read) */
    size_t wn;                /* their count */
} pfi_telemetry_series;

typedef struct pfi_telemetry_entity {
    char *name;           /* "gpu0", "GPU-I 3", "node-a/GPU-1c1c..." */
    char *bus;            /* normalised PCI bus id "0000:3d:00.0" or NULL */
    bool lost;            /* the GPU fell off the bus ("[GPU is lost]", error line) */
    double lost_t_s;      /* first lost sample time (NaN when unknown, e.g. marked lost
                             from a kernel log: pfi/kernlog.h) */
    double last_good_t_s; /* last row with any valid value before the loss (NaN) */
    size_t rows;          /* data rows seen for this entity */
    int segment;          /* current segment (time went backwards: +1) */
    double last_t;        /* private: last row time */
    double day_offset_s;  /* private: midnight rollovers so far x 86400 */
    bool is_gpu;          /* false for NVSwitch and other non-GPU entities */
    /* Identity (DESIGN §9: a GPU is (host, UUID)): */
    char *host; /* the host the entity ran on: a host column or label, else the file's host
                   (pfi_telemetry_set_host, options.host); NULL when none is known */
    char *uuid; /* "GPU-..." or "MIG-..." when the input names it, else NULL */
    char *file; /* the last file that gave the entity a row (borrowed from tm: file names) */
    /* private: the overlap check of two files claiming the entity (tm_row_time) */
    size_t file_no;            /* 1-based number of that file, 0: none yet */
    double file_lo, file_hi;   /* its times */
    double prior_lo, prior_hi; /* times of the entity in earlier files (NaN: none) */
    const char *prior_file;    /* the earlier file that reached prior_hi */
    double shift_s;            /* private: added to the file's times after a jump back */
    double last_step_s;        /* private: the last step between rows (NaN: none) */
} pfi_telemetry_entity;

typedef struct pfi_telemetry_field {
    char *name;   /* canonical name (or the source name when unknown) */
    char *source; /* name as written in the first file that had it */
    pfi_telemetry_kind kind;
    int dcgm_id; /* DCGM field id, 0 when none */
} pfi_telemetry_field;

typedef struct pfi_telemetry {
    pfi_telemetry_options opt;
    pfi_telemetry_entity *entities;
    size_t n_entities;
    pfi_telemetry_field *fields;
    size_t n_fields;
    pfi_telemetry_series *series;
    size_t n_series;
    size_t n_rows;         /* data rows accepted */
    size_t n_skipped;      /* non-data lines skipped (error text, malformed rows) */
    size_t n_tool_errors;  /* error sentences printed by the tool in place of data */
    size_t n_files;        /* files read */
    size_t n_scrapes;      /* Prometheus scrapes read (one per file) */
    size_t n_stored;       /* samples stored over all series */
    bool time_nominal;     /* some times come from interval x index */
    bool time_relative;    /* times are relative to the first sample, not dates */
    bool interval_assumed; /* nominal times used 1 s because no interval was given */
    pfi_telemetry_format last_format;
    char **notes; /* n_notes one-line notes (warnings, tool errors) */
    size_t n_notes;
    size_t n_notes_dropped;
    char tool_error[PFI_TELEMETRY_NOTE_LEN]; /* first tool error sentence, verbatim ("" if none) */
    size_t n_entities_dropped; /* GPUs past PFI_TELEMETRY_MAX_ENTITIES, not read (noted) */
    size_t n_fields_dropped;   /* fields past PFI_TELEMETRY_MAX_FIELDS - 1, not read (noted) */
    size_t n_limit_rows;       /* rows, Prometheus samples, API series of those GPUs */
    /* private */
    size_t series_cap, entities_cap;
    size_t n_miss_stored; /* miss_t entries over all series (at most PFI_TELEMETRY_MAX_SAMPLES) */
    bool prom_stamped;    /* a Prometheus sample carried its own timestamp */
    int *map;             /* n_entities x PFI_TELEMETRY_MAX_FIELDS series index, -1 none */
    size_t file_tool_errors; /* tool sentences in the file being read */
    double max_limit_w;
    char *file_host;    /* the host of the files being read (pfi_telemetry_set_host) */
    char **file_names;  /* n_files names of the files read, owned */
    char conflict[512]; /* "" or why the file being read is refused (two files, one GPU) */
    long conflict_line; /* the line of the file being read where conflict was found */
    struct {
        long line;
        size_t file; /* index in file_names */
        double t;
    } far_rows[64];         /* private: rows that may lie far from the others (before 2000, a jump
                               of over a year, a GPU's first row), named when excluded */
    size_t n_far_rows;      /* private */
    long line_now;          /* private: the line of the row being read (0: not known) */
    char time_zone[128];    /* the zone local times were read in (options.timezone), "" none */
    size_t n_zone_repeated; /* local times of a repeated (fall-back) hour read */
    size_t n_zone_skipped;  /* local times inside a skipped (spring-forward) hour */
    size_t n_zone_local;    /* zone-less local times read in time_zone (all of them) */
    bool time_utc;          /* some times were absolute UTC (a zone, an offset, epoch seconds) */
    struct tm_zone *zone;   /* private */
    double zone_last_utc;   /* private: the file's last converted time (NaN: none) */
    bool derive_times_only; /* private: the series made now are times_only */
    bool counted_inexact;   /* a counted series' mean may differ from its stored samples'
                               (a sample before its first, a duplicate replaced): read the
                               input again without options.count_means_only */
    /* private: options.stream_power's second read (pfi_reduce_stream) */
    pfi_error (*sink)(void *ctx, size_t series, double t, double v, bool valid, bool brk);
    void *sink_ctx;
    bool sink_counts; /* the sink is the first read's (pfi_reduce_stream_begin): the samples
                         are counted as well */
    bool sink_all;    /* the sink also gets the counted series' valid samples (brk false):
                         pfi_reduce_stream's with a warm-up */
    struct tm_stream_red *stream_red; /* its sums for pfi_reduce_power (NULL: none) */
    struct tm_spec *spec;             /* pfi_reduce_stream_begin's first-read sums (NULL) */
    struct tm_names *ent_index;       /* entities by name (hash index) */
    struct tm_names *dropped_names;   /* the entities and fields dropped past a limit */
    double warm_s, warm_t0; /* the warm-up (s) and t_0 the counted series' wsum and wn were
                               made for by pfi_reduce_stream (warm_s 0: none) */
    bool time_from_start;   /* the relative times are a t_s column: seconds from the
                               recording's start (pfi probe/sweep --record), not times of day */
} pfi_telemetry;

/*
 * pfi_telemetry_create — an empty collector with options opt (copied; NULL: defaults: no interval,
 * keep_series true). opt->host and opt->csv_fields are copied. *out is owned
 * (pfi_telemetry_destroy). Errors: PFI_ERR_NOMEM, PFI_ERR_INVALID_ARGUMENT (interval < 0).
 */
pfi_error pfi_telemetry_create(const pfi_telemetry_options *opt, pfi_telemetry **out);

/* pfi_telemetry_destroy — free tm and everything it owns. NULL is a no-op. */
void pfi_telemetry_destroy(pfi_telemetry *tm);

/*
 * pfi_telemetry_read_file / pfi_telemetry_read_stream — read one file (stream borrowed) of format
 * fmt (PFI_TELEMETRY_AUTO: detected from the first bytes) into tm. name is used in notes and diag.
 * Bad lines (error sentences, rows with the wrong token count) are skipped and noted with
 * their line number; a tool error sentence is kept verbatim in tm->tool_error.
 * A GPU past PFI_TELEMETRY_MAX_ENTITIES, a field past PFI_TELEMETRY_MAX_FIELDS - 1 (one
 * kept for the power derived from energy), a line of more columns than a reader takes, an
 * XML document over 16 MiB: that one is not read, the rest is (a note naming the limit;
 * n_entities_dropped, n_fields_dropped, n_skipped count them).
 * Errors: PFI_ERR_IO, PFI_ERR_LINE_TOO_LONG, PFI_ERR_LIMIT (the stored samples' limit),
 * PFI_ERR_PARSE (format not recognised, diag saying what was seen; CSV without header and
 * no csv_fields; fmt forced and almost nothing parsed in a file that does not look like fmt:
 * diag says so and what it looks like, and that file's notes are dropped),
 * PFI_ERR_UNAVAILABLE (XML, and libxml2.so.2 cannot be loaded: diag says why),
 * PFI_ERR_NOMEM. A CSV cell whose unit contradicts its header is rejected (missing, noted);
 * "mW" under a "[W]" header is converted explicitly. A file with zero samples is not an
 * error here: check pfi_telemetry_has_field. On error tm keeps what was read before the error.
 */
pfi_error pfi_telemetry_read_file(pfi_telemetry *tm, const char *path, pfi_telemetry_format fmt,
                                  pfi_diag *diag);
pfi_error pfi_telemetry_read_stream(pfi_telemetry *tm, FILE *f, const char *name,
                                    pfi_telemetry_format fmt, pfi_diag *diag);

/*
 * pfi_telemetry_set_host — the host of the entities of the files read from now on that do not
 * name their own (a CSV hostname column, a Prometheus hostname label win): entity names then
 * read "host/gpu0". A UUID-keyed entity ("GPU-...") is keyed by its UUID alone, the host kept
 * in pfi_telemetry_entity.host. host NULL or "": none (names stay "gpu0"); copied.
 * Initially options.host. Errors: PFI_ERR_NOMEM (the previous host is kept).
 */
pfi_error pfi_telemetry_set_host(pfi_telemetry *tm, const char *host);

/*
 * pfi_telemetry_sample_fn — where a collector with a sink sends the samples of its streamed
 * series (options.stream_power: power and energy fields) instead of counting their steps:
 * series is the index in tm->series, t the time (s), v the value (valid) or NaN (a missing
 * value's row), brk whether the stored series would break before this sample. An error ends
 * the read with it.
 */
typedef pfi_error (*pfi_telemetry_sample_fn)(void *ctx, size_t series, double t, double v,
                                             bool valid, bool brk);

/* pfi_telemetry_set_sink — send the streamed series' samples of the files read from now on to
 * fn(ctx, ...) (pfi_reduce_stream's second read; with a warm-up, the fn it passes, also the
 * valid samples of the counted series, brk false: their warm-up sums). fn NULL: back to
 * counting. */
void pfi_telemetry_set_sink(pfi_telemetry *tm, pfi_telemetry_sample_fn fn, void *ctx);

/* pfi_telemetry_field_find — index of the field with canonical name, or -1. */
long pfi_telemetry_field_find(const pfi_telemetry *tm, const char *name);

/* pfi_telemetry_series_get — the series of (entity, field), or NULL when never seen. */
const pfi_telemetry_series *pfi_telemetry_series_get(const pfi_telemetry *tm, size_t entity,
                                                     size_t field);

/*
 * pfi_telemetry_field_info — the canonical name, kind and DCGM id of a source column name
 * (nvidia-smi query name without " [unit]", dmon column, dcgmi short name or DCGM_FI_*
 * metric). Unknown names give name itself, PFI_KIND_OTHER, 0. *canonical is static or name.
 */
void pfi_telemetry_field_info(const char *name, const char **canonical, pfi_telemetry_kind *kind,
                              int *dcgm_id);

/*
 * pfi_telemetry_gaps — the time gaps of a series: steps t[i] - t[i-1] > 0 between consecutive
 * stored samples, the later one not already a break (brk), longer than PFI_TELEMETRY_GAP_FACTOR x
 * *step_s, the lower median of those steps (the series' own sampling interval; exact; NaN
 * when the series has no such step, and then there is no gap). Returns the number of gaps;
 * *longest_s the longest (NaN when none). step_s, longest_s may be NULL. Allocates nothing;
 * O(n) (eight passes). Requires keep_series.
 */
size_t pfi_telemetry_gaps(const pfi_telemetry_series *s, double *step_s, double *longest_s);

/*
 * pfi_telemetry_integrate — time-weighted integral of a series (trapezoid rule over consecutive
 * stored samples with brk == 0 on the later one; never across a break or a time gap:
 * pfi_telemetry_gaps). For a power series in W this is energy in J. *covered_s: seconds integrated
 * over (0 when no two consecutive samples qualify: the integral is then unknown, not 0).
 * Requires keep_series.
 */
double pfi_telemetry_integrate(const pfi_telemetry_series *s, double *covered_s);

/*
 * pfi_telemetry_counter_delta — total increase of a cumulative counter series (e.g. energy_mj):
 * the sum over segments of (last - first), where a decrease (counter reset or wrap), a break
 * or a time gap (pfi_telemetry_gaps: what the counter gained over a hole is left out, like the
 * trapezoids) starts a new segment. *covered_s: seconds covered by the segments; *n_resets:
 * resets seen. Same unit as the series (mJ for energy_mj).
 */
double pfi_telemetry_counter_delta(const pfi_telemetry_series *s, double *covered_s,
                                   size_t *n_resets);

/*
 * pfi_telemetry_derive_power_from_energy — for every entity with an energy_mj series, add a
 * power_energy_w series: (E[i] - E[i-1]) / 1000 / (t[i] - t[i-1]) W at t[i], over
 * consecutive samples without a break, reset, time gap or non-increasing time. Errors:
 * PFI_ERR_NOMEM, PFI_ERR_LIMIT.
 */
pfi_error pfi_telemetry_derive_power_from_energy(pfi_telemetry *tm);

/*
 * pfi_telemetry_summarize — append one note per power or energy series with time gaps
 * ("gpu0: power_w: 1 time gap longer than 10x the median sampling step (1 s), longest
 * 601 s: not integrated across"), one per (entity, field) with missing, out-of-range or
 * duplicate samples ("gpu0: power_w not available (3 of 3 samples missing)"), with a
 * profiler hint for DCGM profiling ratios, and one per lost GPU. Call once after reading.
 */
void pfi_telemetry_summarize(pfi_telemetry *tm);

/* pfi_telemetry_has_field — true when any entity has at least one valid sample of field name. */
bool pfi_telemetry_has_field(const pfi_telemetry *tm, const char *name);

#ifdef __cplusplus
}
#endif

#endif
