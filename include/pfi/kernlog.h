/*
 * pfi/kernlog.h — NVIDIA Xid events from kernel logs, and their correlation with a run's GPUs.
 *
 * Reads kernel log text as `dmesg`, `dmesg -T`, `dmesg -x`, `dmesg --time-format iso`,
 * `journalctl -k` (short, short-precise, short-iso, short-full, short-monotonic) or a syslog
 * kern.log print it, and keeps the NVIDIA driver's GPU fault reports:
 *
 *   [ 8123.441915] NVRM: Xid (PCI:0000:3d:00): 79, GPU has fallen off the bus.
 *   Nov 02 14:20:03 node7 kernel: NVRM: Xid (PCI:0000:cb:00): 13, pid=..., name=..., ...
 *   [Sun Nov  2 14:20:03 2025] NVRM: Xid (0000:01:00): 31, Ch 00000009, ...   (older drivers)
 *
 * and the driver's "fallen off the bus" notices, which name the GPU without an Xid number
 * ("NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.", "NVRM: GPU at 0000:01:00.0 has
 * fallen off the bus.", "NVRM: The NVIDIA GPU 0000:3d:00.0 (PCI ID: ...) installed in this
 * system has fallen off the bus ..."). A line that starts with blanks continues the message
 * above it (the kernel indents the later lines of a multi-line message); continuation lines
 * of an event are joined to its message with one space, a leading "NVRM: " removed. Every
 * other line — most of a kernel log — is ignored and counted.
 *
 * Events with the same Xid number on the same GPU are merged into one pfi_kernlog_event (count,
 * first and last occurrence, the first occurrence's message): a flapping GPU can log the same
 * Xid thousands of times, and memory stays bounded (PFI_KERNLOG_MAX_EVENTS distinct events; later
 * distinct ones are counted in n_dropped, never an error).
 *
 * Time: the kernel timestamp is kept as text, exactly as written ("[ 8123.441915]",
 * "[Sun Nov  2 14:20:03 2025]", "Nov 02 14:20:03", ...). Plain dmesg stamps are seconds since
 * boot and cannot be put on the telemetry's clock without the boot time, so pfi never
 * converts or compares them: a kernel event tells WHICH GPU failed, not WHEN on the
 * telemetry's time axis.
 *
 * Fatal Xids (pfi_kernlog_default_fatal [ours], from NVIDIA's Xid catalogue, "Xid Errors" /
 * "Analyzing Xid Errors with the Xid Catalog", docs.nvidia.com/deploy/xid-errors): the GPU
 * fell off the bus, needs a reset, or a hardware error terminated the work running on it —
 * 48 double-bit ECC error, 62 internal micro-controller halt, 64 ECC page retirement /
 * row-remapper recording failure, 74 NVLink error, 79 GPU fallen off the bus, 94 contained
 * ECC error (the application on the GPU is terminated), 95 uncontained ECC error, 119 GSP RPC
 * timeout, 120 GSP error, 140 unrecovered ECC error, and 154 when it says the recovery action
 * became a reset, reboot or drain. Not fatal: application errors (13, 31, 43, 45, 68, 69, 109:
 * the job's own fault, the GPU is healthy), 63 (row remapping recorded: reset when
 * convenient), 92 (high single-bit ECC rate), and every Xid pfi does not know. A "fallen off
 * the bus" notice is always fatal.
 *
 * Ownership: a pfi_kernlog owns everything it points to; returned pointers are borrowed and valid
 * until pfi_kernlog_destroy. Not thread-safe (one collector per thread).
 */
#ifndef PFI_KERNLOG_H
#define PFI_KERNLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pfi/error.h"
#include "pfi/telemetry.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_KERNLOG_MAX_LINE 65536  /* longer lines are skipped and counted (n_too_long) */
#define PFI_KERNLOG_MAX_EVENTS 4096 /* distinct (Xid, GPU) events kept; more are counted */
#define PFI_KERNLOG_MSG_LEN 512     /* bytes of an event's message kept, NUL included */
#define PFI_KERNLOG_TIME_LEN 64     /* bytes of a timestamp text kept, NUL included */
#define PFI_KERNLOG_BUS_LEN 16      /* "dddd:bb:dd.f" and its NUL */
#define PFI_KERNLOG_MAX_NOTED 16    /* line numbers of malformed Xid lines kept */

/* What a timestamp text is. */
typedef enum pfi_kernlog_clock {
    PFI_KERNLOG_CLOCK_NONE = 0, /* the line had no timestamp */
    PFI_KERNLOG_CLOCK_BOOT = 1, /* "[ 8123.441915]": seconds since boot */
    PFI_KERNLOG_CLOCK_WALL = 2  /* a date and time as printed (dmesg -T, journalctl, syslog) */
} pfi_kernlog_clock;

/* One distinct kernel event: an Xid number on one GPU, possibly logged several times. */
typedef struct pfi_kernlog_event {
    int xid;                         /* Xid number (>= 1); 0 for a "fallen off the bus"
                                        notice that has no Xid number */
    char bus[PFI_KERNLOG_BUS_LEN];   /* PCI bus id "dddd:bb:dd.f" (pfi_kernlog_bus_normalize), ""
                                   when the line's id was not recognised */
    char bus_text[32];               /* the id as written ("PCI:0000:3d:00"), cut to 31 bytes */
    char time[PFI_KERNLOG_TIME_LEN]; /* first occurrence's timestamp text as written, "" none */
    char last_time[PFI_KERNLOG_TIME_LEN]; /* last occurrence's */
    pfi_kernlog_clock clock;              /* what time is */
    char message[PFI_KERNLOG_MSG_LEN];    /* first occurrence's text after "Xid (...): N," (after
                                        "NVRM: " for a notice), continuation lines joined;
                                        control bytes replaced by '?' */
    bool message_cut;                     /* the message was longer than PFI_KERNLOG_MSG_LEN - 1 */
    size_t count;                         /* occurrences merged into this event, >= 1 */
    size_t file;                          /* first occurrence: index into pfi_kernlog.files */
    long line;                            /* first occurrence: 1-based line in that file */
    size_t last_file;                     /* last occurrence's file and line */
    long last_line;
} pfi_kernlog_event;

typedef struct pfi_kernlog {
    pfi_kernlog_event *events; /* n_events distinct events, in order of first occurrence */
    size_t n_events;
    char **files; /* n_files names as given to the readers */
    size_t n_files;
    size_t n_lines;        /* lines read, blank ones included */
    size_t n_xid_lines;    /* "NVRM: Xid" lines understood (each occurrence) */
    size_t n_notice_lines; /* "fallen off the bus" notices (each occurrence) */
    size_t n_continuation; /* continuation lines joined to an event */
    size_t n_nvrm_other;   /* other NVIDIA driver (NVRM) lines: ignored */
    size_t n_ignored;      /* every other non-blank line: ignored */
    size_t n_malformed;    /* "NVRM: Xid" lines whose number could not be read: ignored */
    size_t n_too_long;     /* lines over PFI_KERNLOG_MAX_LINE bytes: skipped */
    size_t n_dropped;      /* occurrences of new distinct events past PFI_KERNLOG_MAX_EVENTS */
    size_t malformed_file[PFI_KERNLOG_MAX_NOTED]; /* the first malformed lines: file index, */
    long malformed_line[PFI_KERNLOG_MAX_NOTED];   /* and 1-based line */
    size_t n_malformed_noted;
    /* private */
    size_t events_cap;
    unsigned *slots; /* hash of (xid, bus) -> event index + 1 */
} pfi_kernlog;

/*
 * pfi_kernlog_create — an empty collector in *out (owned: pfi_kernlog_destroy).
 * Errors: PFI_ERR_NOMEM, PFI_ERR_INVALID_ARGUMENT (out NULL).
 */
pfi_error pfi_kernlog_create(pfi_kernlog **out);

/* pfi_kernlog_destroy — free kl and everything it owns. NULL is a no-op. */
void pfi_kernlog_destroy(pfi_kernlog *kl);

/*
 * pfi_kernlog_read_file / pfi_kernlog_read_stream — read one kernel log (stream borrowed, read to
 * its end) into kl; name (copied) labels its events (pfi_kernlog.files). Reads one bounded line at
 * a time: memory is O(PFI_KERNLOG_MAX_LINE + events kept), whatever the file's size. A file with no
 * NVIDIA event, an empty file and over-long or binary lines are not errors (see the counts).
 * Errors: PFI_ERR_IO (cannot open or read: diag names the file and the system's reason),
 * PFI_ERR_PARSE (an NVIDIA line's wall-clock timestamp is no time of the calendar, such as
 * "Feb 30" or "25:00:00": diag names the file, the line and the text), PFI_ERR_NOMEM,
 * PFI_ERR_INVALID_ARGUMENT. On error kl keeps what was read before it.
 */
pfi_error pfi_kernlog_read_file(pfi_kernlog *kl, const char *path, pfi_diag *diag);
pfi_error pfi_kernlog_read_stream(pfi_kernlog *kl, FILE *f, const char *name, pfi_diag *diag);

/*
 * pfi_kernlog_bus_normalize — a PCI bus id text s[0..n) as "dddd:bb:dd.f" in out (lower case
 * hexadecimal, NUL-terminated, PFI_KERNLOG_BUS_LEN bytes). Accepts an optional "PCI:" prefix,
 * upper or lower case, a domain of 1 to 8 hex digits (an 8-digit domain as printed by
 * nvidia-smi, "00000000:3D:00.0", is cut to its last 4 digits, like the telemetry readers
 * do), no domain ("3d:00.0": domain 0000) and no function ("PCI:0000:3d:00", as in Xid lines:
 * function 0). Bus 1-2 hex digits, device 1-2 hex digits up to 1f, function 0-7. Returns false
 * (out "") for anything else, "10de:20b2" (a PCI vendor:device id) included. Pure function.
 */
bool pfi_kernlog_bus_normalize(const char *s, size_t n, char out[PFI_KERNLOG_BUS_LEN]);

/*
 * pfi_kernlog_xid_name — a short English description of an Xid number ("GPU has fallen off the
 * bus"), or NULL when pfi's table does not have it; 0 gives "GPU has fallen off the bus
 * (driver notice)". Static strings, thread-safe.
 */
const char *pfi_kernlog_xid_name(int xid);

/* The default fatal Xid numbers (see above), ascending; *n their count. Static. */
const int *pfi_kernlog_default_fatal(size_t *n);

/*
 * pfi_kernlog_is_fatal — whether ev is fatal for a run on its GPU: a notice (xid 0) always; else
 * membership of ev->xid in fatal[0..n_fatal) when fatal is not NULL, else the default rule
 * (pfi_kernlog_default_fatal, and Xid 154 only when its message says the recovery action changed
 * to a reset, reboot or drain). Pure function.
 */
bool pfi_kernlog_is_fatal(const pfi_kernlog_event *ev, const int *fatal, size_t n_fatal);

/* The correlation of one event with the run's telemetry. */
typedef struct pfi_kernlog_match {
    long entity; /* index into tm->entities of the GPU with the event's bus id, -1 none */
    bool fatal;  /* pfi_kernlog_is_fatal */
    bool marked; /* this event marked the GPU lost (it was not lost before) */
} pfi_kernlog_match;

/*
 * pfi_kernlog_apply — match every event of kl to the GPU entities of tm by PCI bus id (both sides
 * through pfi_kernlog_bus_normalize: case, "PCI:" and 8- vs 4-digit domains do not matter) into
 * out[0..kl->n_events) (caller-owned), and mark each GPU that has a fatal event lost (the
 * same mark a "[GPU is lost]" value sets, so pfi_reduce_power flags the run
 * PFI_RED_GPU_LOST); the loss time of a GPU marked here stays unknown (lost_t_s NaN) and a
 * note says so. An event whose bus matches no GPU of the run (another job's GPU, or a log of
 * another node) gets entity -1 and changes nothing. fatal/n_fatal as in pfi_kernlog_is_fatal.
 * *n_matched (may be NULL): events matched to a GPU. Call after reading the telemetry and
 * before pfi_telemetry_summarize / pfi_reduce_power. Errors: PFI_ERR_INVALID_ARGUMENT.
 */
pfi_error pfi_kernlog_apply(const pfi_kernlog *kl, pfi_telemetry *tm, const int *fatal,
                            size_t n_fatal, pfi_kernlog_match *out, size_t *n_matched);

#ifdef __cplusplus
}
#endif

#endif
