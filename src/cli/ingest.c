/*
 * pfi ingest — read one run's telemetry (and training log), reduce it, store it.
 * pfi runs   — list the stored runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* v with `digits` significant digits into buf, or the word `none` when v is NaN (no NaN is
 * ever printed). */

static bool ingest_zone_default; /* --timezone not given: the machine's zone */
static const char *num_or(char *buf, size_t len, int digits, double v, const char *none)
{
    if (isnan(v))
        snprintf(buf, len, "%s", none);
    else
        snprintf(buf, len, "%.*g", digits, v);
    return buf;
}
#include "pfi/kernlog.h"
#include "pfi/reduce.h"
#include "pfi/store.h"
#include "pfi/telemetry.h"
#include "pfi/trainlog.h"

#define MAX_TELEMETRY 4096
#define MAX_KERNEL_LOGS 256
#define MAX_FATAL_XIDS 256
#define MAX_UNMATCHED_SHOWN 20
/* The highest --cap taken, W per GPU: far above any GPU's limit, low enough to catch a
 * value in mW or a stray exponent. */
#define MAX_CAP_W 100000.0

/* The power fields --power-field may name (pfi/telemetry.h field names). */
static const char *const power_fields[] = {"power_avg_w", "power_w", "power_energy_w",
                                           "power_instant_w"};
#define POWER_FIELDS_TEXT "power_avg_w, power_w, power_energy_w, power_instant_w"

static void ingest_usage(FILE *f)
{
    fprintf(
        f,
        "usage: pfi ingest [--db FILE] --group NAME --cap W --telemetry FILE\n"
        "                  [--telemetry FILE...] [--throughput-log FILE] [OPTIONS]\n"
        "       pfi ingest --dry-run --telemetry FILE [--telemetry FILE...] [OPTIONS]\n"
        "\n"
        "Read one run (one job configuration at one power cap): GPU telemetry and, optionally,\n"
        "its training log; reduce it to steady-state job power and throughput (mean of the top\n"
        "q of the samples, DESIGN 2) and store it in the run store (SQLite).\n"
        "\n"
        "  --db FILE              run store (default ./pfi.db); created when missing\n"
        "  --group NAME           sweep group (one job configuration)\n"
        "  --cap W                power cap of this run, W per GPU (> 0, at most 100000)\n"
        "  --class C              job class (dense, moe-pt, moe-ft, ...)\n"
        "  --gpus N               GPUs of the job: a different number in the telemetry (fewer\n"
        "                         or more) flags the run gpu-count, invalid for PFI\n"
        "  --telemetry FILE       nvidia-smi CSV / dmon / -q, dcgmi dmon, or Prometheus scrape;\n"
        "                         repeat for scrapes in time order; each file once; an empty\n"
        "                         file is an error, except a Prometheus scrape (a hole)\n");
    cli_names formats;
    cli_telemetry_format_names(&formats);
    cli_usage_list(f, "  --format F             ", 25, 90, &formats, &(cli_list_style){.sep = "|"},
                   NULL);
    fprintf(
        f,
        "  --fields LIST          --query-gpu field list for CSV files without a header\n"
        "  --interval S           sampling interval, s, for formats without timestamps\n"
        "                         (dcgmi dmon, dmon without -o T, scrapes): times are nominal\n"
        "  --start-date YYYYMMDD  date of the first sample of a time-only dmon (-o T)\n"
        "  --host NAME            host of every file's GPUs that name none (a hostname column\n"
        "                         or label wins); GPUs are (host, UUID), an index is a label\n"
        "  --timezone ZONE        zone of zone-less local timestamps (nvidia-smi CSV, dmon\n"
        "                         -o DT, -q Timestamp): IANA name (Europe/Berlin), TZif file\n"
        "                         or UTC (default: the machine's zone, said in the summary);\n"
        "                         a fall-back's repeated hour is read in file order; ISO 8601\n"
        "                         offsets and epoch seconds are exact\n"
        "  --host-pattern RE      POSIX extended regex: its first (group) in a file's path is\n"
        "                         that file's host (default with several files: the file name\n"
        "                         up to its first '.'); two files giving one (host, GPU) over\n"
        "                         overlapping times are refused, both named\n"
        "  --max-power W          per-GPU max power limit for the power range check: power\n"
        "                         samples above 2 x W are dropped as out of range (default:\n"
        "                         the max limit column, else 5000 W per GPU)\n"
        "  --power-field F        power_avg_w|power_w|power_energy_w|power_instant_w (auto)\n"
        "  --align S              time grid (> 0) for summing GPUs (--interval, else the median\n"
        "                         sampling step; a guessed step is noted)\n"
        "  --warmup S             seconds dropped at the start (0)\n"
        "  --q Q                  top fraction averaged (0.10); not -q, which is --quiet\n"
        "  --products LIST        name=a*b feature products (" PFI_DEFAULT_PRODUCTS ")\n"
        "  --throughput-log FILE  training log: Megatron-LM, nanotron, HF Trainer, torchtitan,\n"
        "                         DeepSpeed, Lightning, tqdm; throughput = work / time\n"
        "  --log-format F         auto|megatron|nanotron|hf|torchtitan|deepspeed|lightning|\n"
        "                         tqdm|regex\n"
        "  --throughput-regex RE  PCRE2 with a (?<throughput>...) group, optional (?<work>)\n"
        "                         and (?<time_s>) groups; checked even without a log\n"
        "  --kernel-log FILE      kernel log (dmesg, dmesg -T, journalctl -k): NVIDIA Xid\n"
        "                         events matched to the run's GPUs by PCI bus id; a fatal Xid\n"
        "                         marks its GPU lost and the run invalid; repeatable\n"
        "  --fatal-xids LIST      Xids fatal for the run, comma list or 'none' (default\n"
        "                         48,62,64,74,79,94,95,119,120,140, and 154 asking for a reset)\n"
        "  --dry-run              read and report, store nothing; needs neither --group nor --cap\n"
        "  --replace              let an INVALID run replace a valid run stored at its group\n"
        "                         and cap (without it such a run is refused, exit 1)\n"
        "  -q, --quiet            print only errors\n"
        "  -h, --help             this help\n"
        "\n"
        "Flags gpu-count (GPUs seen differ from --gpus), gpu-lost and no-power make a run\n"
        "INVALID for PFI (stored, left out by analyze); the others are warnings. An\n"
        "INVALID run never replaces a valid run at the same group and cap unless --replace\n"
        "is given: it is refused (exit 1) and the valid run kept.\n"
        "\n"
        "Exit codes: 0 stored, 1 bad input (no power, no samples, unreadable or empty file,\n"
        "any failed file of a batch), 2 bad command line, 3 store not written, 4 internal\n"
        "error.\n");
}

enum {
    O_DB = 256,
    O_GROUP,
    O_CAP,
    O_CLASS,
    O_GPUS,
    O_TELEMETRY,
    O_FORMAT,
    O_FIELDS,
    O_INTERVAL,
    O_START_DATE,
    O_HOST,
    O_HOST_PATTERN,
    O_TIMEZONE,
    O_MAX_POWER,
    O_POWER_FIELD,
    O_ALIGN,
    O_WARMUP,
    O_Q,
    O_PRODUCTS,
    O_TLOG,
    O_LOG_FORMAT,
    O_REGEX,
    O_DRY,
    O_KERNEL_LOG,
    O_FATAL_XIDS,
    O_REPLACE
};

static const struct option ingest_options[] = {
    {"db", required_argument, NULL, O_DB},
    {"group", required_argument, NULL, O_GROUP},
    {"cap", required_argument, NULL, O_CAP},
    {"class", required_argument, NULL, O_CLASS},
    {"gpus", required_argument, NULL, O_GPUS},
    {"telemetry", required_argument, NULL, O_TELEMETRY},
    {"format", required_argument, NULL, O_FORMAT},
    {"fields", required_argument, NULL, O_FIELDS},
    {"interval", required_argument, NULL, O_INTERVAL},
    {"start-date", required_argument, NULL, O_START_DATE},
    {"host", required_argument, NULL, O_HOST},
    {"host-pattern", required_argument, NULL, O_HOST_PATTERN},
    {"timezone", required_argument, NULL, O_TIMEZONE},
    {"max-power", required_argument, NULL, O_MAX_POWER},
    {"power-field", required_argument, NULL, O_POWER_FIELD},
    {"align", required_argument, NULL, O_ALIGN},
    {"warmup", required_argument, NULL, O_WARMUP},
    {"q", required_argument, NULL, O_Q},
    {"products", required_argument, NULL, O_PRODUCTS},
    {"throughput-log", required_argument, NULL, O_TLOG},
    {"log-format", required_argument, NULL, O_LOG_FORMAT},
    {"throughput-regex", required_argument, NULL, O_REGEX},
    {"dry-run", no_argument, NULL, O_DRY},
    {"replace", no_argument, NULL, O_REPLACE},
    {"kernel-log", required_argument, NULL, O_KERNEL_LOG},
    {"fatal-xids", required_argument, NULL, O_FATAL_XIDS},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* "79,48" (blanks after commas allowed) or "none" into xids[MAX_FATAL_XIDS]. */
static bool parse_xid_list(const char *s, int *xids, size_t *n)
{
    *n = 0;
    if (strcmp(s, "none") == 0)
        return true;
    for (const char *p = s;;) {
        while (*p == ' ')
            p++;
        if (*p < '0' || *p > '9' || *n == MAX_FATAL_XIDS)
            return false;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno != 0 || v < 1 || v > 999999)
            return false;
        xids[(*n)++] = (int)v;
        if (*end == '\0')
            return true;
        if (*end != ',')
            return false;
        p = end + 1;
    }
}

/* Every --kernel-log file into one collector; each failure named, then exit 1. */
static int read_kernel_logs(const char *const *files, size_t n, pfi_kernlog **out)
{
    *out = NULL;
    if (n == 0)
        return PFI_EXIT_OK;
    pfi_kernlog *kl = NULL;
    if (pfi_kernlog_create(&kl) != PFI_OK) {
        cli_error("out of memory");
        return PFI_EXIT_INTERNAL;
    }
    int rc = PFI_EXIT_OK;
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        pfi_diag d;
        FILE *sp; /* a pipe: bounded by PFI_MAX_INPUT_BYTES (cli.h) */
        int src = cli_input_spool("--kernel-log", files[i], &sp);
        if (src != PFI_EXIT_OK) {
            if (rc == PFI_EXIT_OK)
                rc = src;
            failed++;
            continue;
        }
        pfi_error e = sp != NULL ? pfi_kernlog_read_stream(kl, sp, files[i], &d)
                                 : pfi_kernlog_read_file(kl, files[i], &d);
        if (sp != NULL)
            fclose(sp);
        if (e != PFI_OK) {
            int frc = cli_report(e, &d);
            if (rc == PFI_EXIT_OK || frc == PFI_EXIT_INTERNAL)
                rc = frc;
            failed++;
        }
    }
    if (failed > 0) {
        cli_error("%zu of %zu kernel log(s) failed: nothing stored", failed, n);
        pfi_kernlog_destroy(kl);
        return rc;
    }
    *out = kl;
    return PFI_EXIT_OK;
}

/* What a kernel timestamp is, for the reader of the report: never converted. */
static const char *clock_note(const pfi_kernlog_event *ev)
{
    switch (ev->clock) {
    case PFI_KERNLOG_CLOCK_BOOT:
        return " (seconds since boot, not on the telemetry clock)";
    case PFI_KERNLOG_CLOCK_WALL:
        return " (host clock as printed, not compared with the telemetry)";
    default:
        return "";
    }
}

static void print_event(FILE *o, const pfi_kernlog *kl, const pfi_kernlog_event *ev,
                        const pfi_kernlog_match *m, const pfi_telemetry *tm)
{
    const char *name = pfi_kernlog_xid_name(ev->xid);
    /* Everything quoted from the log is escaped: a kernel log is input like any other. */
    char bus_text[4 * sizeof ev->bus_text + 4], when[4 * sizeof ev->time + 4],
        last_time[4 * sizeof ev->last_time + 4], message[4 * sizeof ev->message + 4];
    cli_safe(bus_text, sizeof bus_text, ev->bus_text, strlen(ev->bus_text));
    cli_safe(when, sizeof when, ev->time, strlen(ev->time));
    cli_safe(last_time, sizeof last_time, ev->last_time, strlen(ev->last_time));
    cli_safe(message, sizeof message, ev->message, strlen(ev->message));
    if (ev->xid == 0)
        fprintf(o, "  GPU-lost notice");
    else
        fprintf(o, "  Xid %d%s%s%s", ev->xid, name ? " [" : "", name ? name : "", name ? "]" : "");
    if (m->entity >= 0)
        fprintf(o, " on %s (%s)", tm->entities[m->entity].name, ev->bus);
    else if (ev->bus[0] != '\0')
        fprintf(o, " on %s", ev->bus);
    else
        fprintf(o, " on bus '%s' (not a PCI bus id pfi can place)", bus_text);
    if (ev->time[0] != '\0')
        fprintf(o, " at %s%s", when, clock_note(ev));
    else
        fprintf(o, ", no timestamp");
    fprintf(o, " (%s:%ld)", kl->files[ev->file], ev->line);
    if (ev->count > 1)
        fprintf(o, ", %zu times (last %s:%ld%s%s)", ev->count, kl->files[ev->last_file],
                ev->last_line, ev->last_time[0] ? " at " : "", last_time);
    fprintf(o, ": \"%s%s\"", message, ev->message_cut ? "..." : "");
    if (m->entity < 0 && ev->bus[0] == '\0')
        fprintf(o, " -> cannot be matched to a GPU: noted, not fatal for this run\n");
    else if (m->entity < 0)
        fprintf(o, " -> no GPU of this run has this bus id (another job's GPU, or another "
                   "node): noted, not fatal for this run\n");
    else if (m->fatal && m->marked)
        fprintf(o, " -> FATAL: %s marked LOST, the run is invalid\n", tm->entities[m->entity].name);
    else if (m->fatal && isnan(tm->entities[m->entity].lost_t_s))
        fprintf(o, " -> FATAL: %s already marked LOST\n", tm->entities[m->entity].name);
    else if (m->fatal)
        fprintf(o, " -> FATAL: confirms the loss of %s seen in the telemetry\n",
                tm->entities[m->entity].name);
    else
        fprintf(o, " -> noted, not fatal for the run\n");
}

/* The kernel-log section of the report: what was read, then each event and its GPU. */
static void print_kernel_log(FILE *o, const pfi_kernlog *kl, const pfi_kernlog_match *m,
                             const pfi_telemetry *tm)
{
    fprintf(o,
            "kernel log: %zu file(s), %zu lines: %zu Xid, %zu GPU-lost notice, %zu "
            "continuation lines; %zu other NVIDIA driver lines and %zu other lines ignored",
            kl->n_files, kl->n_lines, kl->n_xid_lines, kl->n_notice_lines, kl->n_continuation,
            kl->n_nvrm_other, kl->n_ignored);
    if (kl->n_too_long > 0)
        fprintf(o, ", %zu over-long lines skipped", kl->n_too_long);
    fputc('\n', o);
    if (kl->n_malformed > 0) {
        fprintf(o, "  %zu 'NVRM: Xid' line(s) not understood, ignored:", kl->n_malformed);
        for (size_t i = 0; i < kl->n_malformed_noted; i++)
            fprintf(o, " %s:%ld", kl->files[kl->malformed_file[i]], kl->malformed_line[i]);
        fprintf(o, "%s\n", kl->n_malformed > kl->n_malformed_noted ? " ..." : "");
    }
    bool any_bus = false;
    for (size_t e = 0; e < tm->n_entities; e++)
        any_bus |= tm->entities[e].is_gpu && tm->entities[e].bus != NULL;
    if (kl->n_events > 0 && !any_bus)
        fprintf(o, "  the telemetry names no PCI bus ids (nvidia-smi: add pci.bus_id to "
                   "--query-gpu): no event can be matched to a GPU of this run\n");
    size_t unmatched = 0;
    for (size_t i = 0; i < kl->n_events; i++) {
        if (m[i].entity < 0 && unmatched++ >= MAX_UNMATCHED_SHOWN)
            continue;
        print_event(o, kl, &kl->events[i], &m[i], tm);
    }
    if (unmatched > MAX_UNMATCHED_SHOWN)
        fprintf(o, "  ... and %zu more events on buses of no GPU of this run (not fatal)\n",
                unmatched - MAX_UNMATCHED_SHOWN);
    if (kl->n_dropped > 0)
        fprintf(o,
                "  %zu occurrences of further distinct events past the limit of %d were "
                "not examined\n",
                kl->n_dropped, PFI_KERNLOG_MAX_EVENTS);
}

/* "YYYYMMDD", a real calendar date from 1970 on, into *out. */
static bool parse_date(const char *s, long *out)
{
    if (strlen(s) != 8 || strspn(s, "0123456789") != 8)
        return false;
    long v = strtol(s, NULL, 10), y = v / 10000, m = v / 100 % 100, d = v % 100;
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1970 || m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (m == 2 && d == 29 && !leap)
        return false;
    *out = v;
    return true;
}

/* A file given twice would be read twice: its energy and samples counted double. Same
 * path, or the same file under another name (device and inode), is a usage error. */
static bool telemetry_unique(const char *const *files, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct stat si;
        bool have_i = stat(files[i], &si) == 0;
        for (size_t j = 0; j < i; j++) {
            struct stat sj;
            if (strcmp(files[i], files[j]) == 0) {
                cli_error("--telemetry: '%s' given more than once: its samples and energy "
                          "would be counted twice",
                          files[i]);
                return false;
            }
            if (have_i && stat(files[j], &sj) == 0 && si.st_dev == sj.st_dev &&
                si.st_ino == sj.st_ino && S_ISREG(si.st_mode)) {
                cli_error("--telemetry: '%s' is the same file as '%s' (one file given more "
                          "than once): its samples and energy would be counted twice",
                          files[i], files[j]);
                return false;
            }
        }
    }
    return true;
}

/* --throughput-regex compiled now, with or without a log to apply it to: a bad pattern is a
 * command-line error whether or not this run reads a log. */
static bool regex_valid(const char *regex)
{
    char text[] = "\n";
    FILE *f = fmemopen(text, 1, "r");
    if (f == NULL)
        return true; /* checked again when the log is read */
    pfi_trainlog *log = NULL;
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e =
        pfi_trainlog_read_stream(f, "--throughput-regex", PFI_TRAINLOG_REGEX, regex, &log, &d);
    fclose(f);
    pfi_trainlog_destroy(log);
    if (e != PFI_ERR_INVALID_ARGUMENT)
        return true;
    char safe[4 * 256 + 4];
    /* The library's message starts with the name given to it: "--throughput-regex: ...". */
    if (d.message[0] != '\0')
        cli_error("%s (pattern '%s')", d.message,
                  cli_safe(safe, sizeof safe, regex, strlen(regex)));
    else
        cli_error("--throughput-regex: %s (pattern '%s')", pfi_strerror(e),
                  cli_safe(safe, sizeof safe, regex, strlen(regex)));
    return false;
}

/* What the command line has too many of, then what it lacks, each named exactly. */
static void usage_problem(int argc, char **argv, size_t n_tel, const char *group, double cap,
                          bool dry, const char *q_value)
{
    if (optind < argc) {
        char safe[4 * 256 + 4];
        const char *a = cli_safe(safe, sizeof safe, argv[optind], strlen(argv[optind]));
        if (q_value != NULL && strcmp(argv[optind], q_value) == 0)
            cli_error("unexpected argument '%s': -q is --quiet and takes no value; "
                      "the top fraction averaged is --q %s",
                      a, a);
        else
            cli_error("unexpected argument '%s' (options take one value each; every "
                      "telemetry file follows its own --telemetry)",
                      a);
    }
    const char *miss[3];
    size_t n = 0;
    if (n_tel == 0)
        miss[n++] = "--telemetry FILE";
    if (!dry && group == NULL)
        miss[n++] = "--group NAME";
    if (!dry && isnan(cap))
        miss[n++] = "--cap W";
    if (n == 0)
        return;
    if (n == 1)
        cli_error("missing %s (see 'pfi ingest --help')", miss[0]);
    else if (n == 2)
        cli_error("missing %s and %s (see 'pfi ingest --help')", miss[0], miss[1]);
    else
        cli_error("missing %s, %s and %s (group and cap are not needed with --dry-run; "
                  "see 'pfi ingest --help')",
                  miss[0], miss[1], miss[2]);
}

/* pfi ingest's command line, parsed. */
typedef struct ingest_args {
    const char *db, *group, *klass, *tlog, *regex, *host_pattern;
    const char *tel[MAX_TELEMETRY], *klogs[MAX_KERNEL_LOGS];
    size_t n_tel, n_klogs, n_fatal;
    int fatal[MAX_FATAL_XIDS];
    bool fatal_set; /* --fatal-xids given: fatal[0..n_fatal), else the default */
    double cap;     /* --cap, W per GPU; NaN: not given */
    bool dry, quiet;
    bool replace; /* --replace: an invalid run may replace a valid one at its cap */
    pfi_telemetry_format fmt;
    pfi_trainlog_format lfmt;
    pfi_telemetry_options topt;
    pfi_reduce_options ro; /* ro.gpus is --gpus (0: not given) */
} ingest_args;

/* What was read of one run; every pointer owned (ingest_run_clear). */
typedef struct ingest_run {
    pfi_kernlog *kl;  /* the kernel logs, NULL without --kernel-log */
    cli_kernlog klog; /* kl's events matched to the run's GPUs */
    pfi_telemetry *tm;
    pfi_reduced *red;
    pfi_trainlog *log;        /* NULL without --throughput-log */
    pfi_trainlog_summary tls; /* the log's throughput; NaN without one */
} ingest_run;

static void ingest_run_clear(ingest_run *run)
{
    pfi_trainlog_destroy(run->log);
    free(run->red);
    pfi_telemetry_destroy(run->tm);
    free(run->klog.match);
    pfi_kernlog_destroy(run->kl);
}

/* The options of ingest's own rules (the plain ones are in parse_ingest_args' table): an exit
 * code, -1 after --help. */
static int take_ingest_option(int c, char **argv, ingest_args *a)
{
    switch (c) {
    case 'h':
        ingest_usage(stdout);
        return -1;
    case O_GROUP:
        if (pfi_store_group_check(optarg) != NULL) {
            char want[256];
            snprintf(want, sizeof want, "a sweep group name (%s)", pfi_store_group_check(optarg));
            return cli_usage_bad_value("group", optarg, want);
        }
        a->group = optarg;
        return PFI_EXIT_OK;
    case O_POWER_FIELD: {
        bool known = false;
        for (size_t i = 0; i < sizeof power_fields / sizeof power_fields[0]; i++)
            known |= strcmp(optarg, power_fields[i]) == 0;
        if (!known) {
            char safe[4 * 256 + 4];
            cli_error("--power-field: unknown field '%s'; expected one of " POWER_FIELDS_TEXT,
                      cli_safe(safe, sizeof safe, optarg, strlen(optarg)));
            return PFI_EXIT_USAGE;
        }
        a->ro.power_field = optarg;
        return PFI_EXIT_OK;
    }
    case O_TELEMETRY:
        if (a->n_tel == MAX_TELEMETRY) {
            cli_error("--telemetry: at most %d files", MAX_TELEMETRY);
            return PFI_EXIT_USAGE;
        }
        a->tel[a->n_tel++] = optarg;
        return PFI_EXIT_OK;
    case O_KERNEL_LOG:
        if (a->n_klogs == MAX_KERNEL_LOGS) {
            cli_error("--kernel-log: at most %d files", MAX_KERNEL_LOGS);
            return PFI_EXIT_USAGE;
        }
        a->klogs[a->n_klogs++] = optarg;
        return PFI_EXIT_OK;
    case O_FATAL_XIDS:
        if (!parse_xid_list(optarg, a->fatal, &a->n_fatal)) {
            char want[96];
            snprintf(want, sizeof want, "Xid numbers separated by commas (at most %d) or 'none'",
                     MAX_FATAL_XIDS);
            return cli_usage_bad_value("fatal-xids", optarg, want);
        }
        a->fatal_set = true;
        return PFI_EXIT_OK;
    case O_FORMAT:
        if (!pfi_telemetry_format_parse(optarg, &a->fmt)) {
            cli_error("--format: unknown telemetry format '%s'", optarg);
            return PFI_EXIT_USAGE;
        }
        return PFI_EXIT_OK;
    case O_LOG_FORMAT:
        if (!pfi_trainlog_format_parse(optarg, &a->lfmt)) {
            cli_error("--log-format: unknown log format '%s'", optarg);
            return PFI_EXIT_USAGE;
        }
        return PFI_EXIT_OK;
    case O_START_DATE:
        if (!parse_date(optarg, &a->topt.start_date)) {
            return cli_usage_bad_value("start-date", optarg,
                                       "a calendar date YYYYMMDD from 1970 on");
        }
        return PFI_EXIT_OK;
    default: /* '?' or ':' */
        return cli_usage_getopt(ingest_options, ":hq", c, argv);
    }
}

static bool fields_valid(const char *list);

/* Phase 1, the options: parsed into a, then checked as a whole (what is missing, a file given
 * twice, a bad --throughput-regex). An exit code, -1 after --help. */
static int parse_ingest_args(int argc, char **argv, ingest_args *a)
{
    memset(a, 0, sizeof *a);
    a->db = "pfi.db";
    a->cap = NAN;
    a->fmt = PFI_TELEMETRY_AUTO;
    a->lfmt = PFI_TRAINLOG_AUTO;
    a->topt.keep_series = true;
    pfi_reduce_options_init(&a->ro);
    const cli_opt table[] = {
        {.c = 'q', .kind = CLI_OPT_FLAG, .dst = &a->quiet},
        {.c = O_DB, .kind = CLI_OPT_TEXT, .dst = &a->db},
        {.c = O_CLASS, .kind = CLI_OPT_TEXT, .dst = &a->klass},
        {.c = O_TLOG, .kind = CLI_OPT_TEXT, .dst = &a->tlog},
        {.c = O_REGEX, .kind = CLI_OPT_TEXT, .dst = &a->regex},
        {.c = O_DRY, .kind = CLI_OPT_FLAG, .dst = &a->dry},
        {.c = O_REPLACE, .kind = CLI_OPT_FLAG, .dst = &a->replace},
        {.c = O_FIELDS, .kind = CLI_OPT_TEXT, .dst = &a->topt.csv_fields},
        {.c = O_HOST, .kind = CLI_OPT_TEXT, .dst = &a->topt.host},
        {.c = O_HOST_PATTERN, .kind = CLI_OPT_TEXT, .dst = &a->host_pattern},
        {.c = O_TIMEZONE, .kind = CLI_OPT_TEXT, .dst = &a->topt.timezone},
        {.c = O_PRODUCTS, .kind = CLI_OPT_TEXT, .dst = &a->ro.products},
        {.c = O_GPUS,
         .kind = CLI_OPT_SIZE,
         .dst = &a->ro.gpus,
         .min = 1,
         .max = SIZE_MAX,
         .error = "a positive integer"},
        {.c = O_CAP,
         .kind = CLI_OPT_DOUBLE,
         .dst = &a->cap,
         .lo = 0,
         .lo_open = true,
         .hi = HUGE_VAL,
         .error = "a number > 0"},
        {.c = O_INTERVAL,
         .kind = CLI_OPT_DOUBLE,
         .dst = &a->topt.interval_s,
         .lo = 0,
         .lo_open = true,
         .hi = HUGE_VAL,
         .error = "a number > 0"},
        {.c = O_MAX_POWER,
         .kind = CLI_OPT_DOUBLE,
         .dst = &a->topt.max_power_w,
         .lo = 0,
         .hi = HUGE_VAL,
         .error = "a number >= 0"},
        {.c = O_ALIGN,
         .kind = CLI_OPT_DOUBLE,
         .dst = &a->ro.align_s,
         .lo = 0,
         .lo_open = true,
         .hi = HUGE_VAL,
         .error = "a number > 0"},
        {.c = O_WARMUP,
         .kind = CLI_OPT_DOUBLE,
         .dst = &a->ro.warmup_s,
         .lo = 0,
         .hi = HUGE_VAL,
         .error = "a number >= 0"},
        {.c = O_Q,
         .kind = CLI_OPT_DOUBLE,
         .dst = &a->ro.q,
         .lo = 0,
         .lo_open = true,
         .hi = 1,
         .error = "a fraction in (0, 1]"},
    };
    /* "-q 0.2" meant "--q 0.2": remembered, so the stray 0.2 can be explained. Looked for
     * before getopt_long, which moves the arguments that are not options to the end. */
    const char *q_value = NULL;
    for (int i = 1; i + 1 < argc; i++) {
        double x;
        if (strcmp(argv[i], "-q") == 0 && cli_parse_double(argv[i + 1], &x))
            q_value = argv[i + 1];
    }
    int c;
    optind = 1;
    opterr = 0; /* our own messages, naming the option */
    while ((c = getopt_long(argc, argv, ":hq", ingest_options, NULL)) != -1) {
        const cli_opt *o = cli_opt_find(table, sizeof table / sizeof table[0], c);
        if (o == NULL) {
            int rc = take_ingest_option(c, argv, a);
            if (rc != PFI_EXIT_OK)
                return rc;
        } else if (!cli_opt_take(o, optarg)) {
            cli_opt_complain(ingest_options, o, optarg);
            return PFI_EXIT_USAGE;
        } else if (c == O_CAP && a->cap > MAX_CAP_W) {
            cli_error("--cap: %s W per GPU is above %.0f W (100 kW), not a GPU power cap "
                      "(the cap is in W per GPU, not mW or W per job)",
                      optarg, MAX_CAP_W);
            return PFI_EXIT_USAGE;
        }
    }
    if (a->topt.csv_fields != NULL && !fields_valid(a->topt.csv_fields))
        return PFI_EXIT_USAGE; /* before any other complaint: the list is wrong whatever else */
    if (optind < argc || a->n_tel == 0 || (!a->dry && (a->group == NULL || isnan(a->cap)))) {
        usage_problem(argc, argv, a->n_tel, a->group, a->cap, a->dry, q_value);
        return PFI_EXIT_USAGE;
    }
    if (!telemetry_unique(a->tel, a->n_tel))
        return PFI_EXIT_USAGE;
    if (a->regex != NULL && !regex_valid(a->regex))
        return PFI_EXIT_USAGE;
    return PFI_EXIT_OK;
}

/* Whether every name of --fields LIST (the --query-gpu list of a headerless capture) is one
 * the CSV reader maps: a column it reads (timestamp, index, a known field's nvidia-smi, DCGM
 * or canonical name) or one shaped like an nvidia-smi --query-gpu name (lower case, digits,
 * '.' and '_', with a '.' or '_': "memory.used", "vbios_version"), kept under its own name.
 * A name that is neither ("bogus", "Power") is said, with where the names are listed. */
static bool fields_valid(const char *list)
{
    static const char *const words[] = {"timestamp", "index",    "gpu",  "uuid", "name", "serial",
                                        "pstate",    "hostname", "host", "node", "t_s",  "count"};
    const char *p = list;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        while (n > 0 && (*p == ' ' || *p == '\t')) {
            p++;
            n--;
        }
        size_t k = n;
        const char *br = memchr(p, '[', n); /* "power.draw [W]": the name before the unit */
        if (br != NULL)
            k = (size_t)(br - p);
        while (k > 0 && (p[k - 1] == ' ' || p[k - 1] == '\t'))
            k--;
        char name[128];
        bool ok = k > 0 && k < sizeof name;
        if (ok) {
            memcpy(name, p, k);
            name[k] = '\0';
            bool known = false, shaped = strpbrk(name, "._") != NULL;
            for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
                known |= strcmp(name, words[i]) == 0;
            const char *canon;
            pfi_telemetry_kind kind;
            int id;
            pfi_telemetry_field_info(name, &canon, &kind, &id);
            known |= kind != PFI_KIND_OTHER || canon != name;
            for (size_t i = 0; i < k; i++)
                shaped &= (name[i] >= 'a' && name[i] <= 'z') ||
                          (name[i] >= '0' && name[i] <= '9') || name[i] == '.' || name[i] == '_';
            ok = known || shaped;
        }
        if (!ok) {
            char safe[4 * 128 + 4];
            cli_error("--fields: unknown field '%s': not a column the nvidia-smi CSV reader "
                      "knows (timestamp, index, power.draw, ...: the --query-gpu names of "
                      "'nvidia-smi --help-query-gpu'; see --fields in pfi-ingest(1))",
                      cli_safe(safe, sizeof safe, p, n));
            return false;
        }
        if (c == NULL)
            return true;
        p = c + 1;
    }
}

/* The offset of a NUL byte in the first line (within 64 KiB) of the regular file path, else
 * -1 (also when it cannot be read: its reader said why). */
static long long head_nul(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    unsigned char b[64 * 1024];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    return cli_first_line_nul(b, n);
}

/* The training log's throughput (--throughput-log), or the no-throughput flag without one. */
static int read_throughput(const ingest_args *a, ingest_run *run)
{
    if (a->tlog == NULL) {
        run->red->flags |= PFI_RED_NO_THROUGHPUT;
        return PFI_EXIT_OK;
    }
    int rc = PFI_EXIT_OK;
    pfi_diag d;
    FILE *sp; /* a pipe: bounded by PFI_MAX_INPUT_BYTES (cli.h) */
    if ((rc = cli_input_spool("--throughput-log", a->tlog, &sp)) != PFI_EXIT_OK)
        return rc;
    pfi_trainlog_format lf = a->regex ? PFI_TRAINLOG_REGEX : a->lfmt;
    pfi_error e = sp != NULL ? pfi_trainlog_read_stream(sp, a->tlog, lf, a->regex, &run->log, &d)
                             : pfi_trainlog_read_file(a->tlog, lf, a->regex, &run->log, &d);
    if (sp != NULL)
        fclose(sp);
    long long nul = e != PFI_OK && sp == NULL ? head_nul(a->tlog) : -1;
    if (nul >= 0) { /* a binary file: the shared wording (input.c), not every format's miss */
        char why[128], safe[4 * 1024 + 4];
        cli_input_message(why, sizeof why, CLI_INPUT_BINARY, (unsigned long long)nul, 0);
        cli_error("--throughput-log %s: %s", cli_safe(safe, sizeof safe, a->tlog, strlen(a->tlog)),
                  why);
        rc = PFI_EXIT_DATA;
    } else if (e != PFI_OK)
        rc = cli_report(e, &d);
    else if ((e = pfi_trainlog_reduce(run->log, a->ro.warmup_s, a->ro.q, &run->tls)) != PFI_OK &&
             e != PFI_ERR_EMPTY) {
        cli_error("%s: throughput: %s", a->tlog, pfi_strerror(e));
        rc = cli_exit_code(e);
    }
    if (run->log != NULL && run->log->n_nan > 0)
        run->red->flags |= PFI_RED_NAN_LOSS;
    if (run->log != NULL && e == PFI_ERR_EMPTY) /* no finite interval: never a number */
        run->red->flags |= PFI_RED_NO_THROUGHPUT;
    return rc;
}

/* Whether every file is a regular file (read twice by stream_power; "-" and pipes are not). */
static bool regular_files(const char *const *files, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (strcmp(files[i], "-") == 0 || stat(files[i], &st) != 0 || !S_ISREG(st.st_mode))
            return false;
    }
    return true;
}

static int read_run_spooled(const ingest_args *a, ingest_run *run, bool spool);

/* Phase 2, reading: the kernel logs, the telemetry (reduced, with the kernel-log events
 * applied), the training log. An exit code; run owns what was read either way. A pipe or
 * FIFO among the telemetry inputs is copied to a temporary file first (cli_telemetry_spool)
 * so that it streams like a file (read twice when a guess fails or a warm-up is given,
 * bounded memory) and is bounded by PFI_MAX_INPUT_BYTES. */
static int read_run(const ingest_args *a, ingest_run *run)
{
    bool spool = !regular_files(a->tel, a->n_tel) && cli_telemetry_spool(a->tel, a->n_tel);
    int rc = read_run_spooled(a, run, spool);
    cli_telemetry_unspool();
    return rc;
}

static int read_run_spooled(const ingest_args *a, ingest_run *run, bool spool)
{
    int rc = read_kernel_logs(a->klogs, a->n_klogs, &run->kl);
    if (rc != PFI_EXIT_OK)
        return rc;
    run->klog = (cli_kernlog){
        .kl = run->kl, .fatal = a->fatal_set ? a->fatal : NULL, .n_fatal = a->n_fatal};
    if (run->kl != NULL &&
        (run->klog.match = calloc(run->kl->n_events + 1, sizeof *run->klog.match)) == NULL) {
        cli_error("out of memory");
        return PFI_EXIT_INTERNAL;
    }
    cli_telemetry_host_pattern(a->host_pattern);
    ingest_zone_default = a->topt.timezone == NULL;
    pfi_reduce_options ro = a->ro;
    ro.cap_w = isnan(a->cap) ? 0 : a->cap; /* checked against the enforced limit */
    /* The means of the fields the reduction only averages need no stored samples
     * (count_means_only: memory for power, energy, limits and clock reasons only); with a
     * warm-up only where the second read (stream_power, below) makes their warm-up sums.
     * Where the collector cannot vouch for those means (tm->counted_inexact: a sample before
     * its series' first), the files are read again storing every sample, its messages
     * (said by the first read, the same) silenced. */
    pfi_telemetry_options topt = a->topt;
    bool streamable = spool || regular_files(a->tel, a->n_tel);
    topt.count_means_only =
        (ro.warmup_s == 0 || streamable) &&
        (ro.power_field == NULL || strcmp(ro.power_field, "power_energy_w") != 0);
    /* And, for regular files, the power and energy series are not stored either: a second
     * read makes the reduction's sums as the samples come (stream_power, bounded memory).
     * Where it cannot vouch for them, the files are read again as before, their notes
     * (said by the first read) not repeated. */
    topt.stream_power = topt.count_means_only && streamable;
    /* Regular files (and spooled pipes) through mapped windows: no copy into a buffer; a
     * file truncated meanwhile is reported (cli_read_telemetry's SIGBUS handler). */
    topt.map_files = true;
    rc = cli_read_telemetry(a->tel, a->n_tel, a->fmt, &topt, &ro, a->quiet, "nothing stored",
                            run->kl ? &run->klog : NULL, &run->tm, &run->red);
    if (rc != PFI_EXIT_OK)
        return rc;
    if (run->red == NULL) { /* every sample stored: what the streamed read could not vouch for
                               (an implausible date, a clock set back) the counted one cannot
                               either */
        pfi_telemetry_destroy(run->tm);
        run->tm = NULL;
        topt.stream_power = false;
        topt.count_means_only = false;
        cli_telemetry_quiet_files(true);
        rc = cli_read_telemetry(a->tel, a->n_tel, a->fmt, &topt, &ro, a->quiet, "nothing stored",
                                run->kl ? &run->klog : NULL, &run->tm, &run->red);
        cli_telemetry_quiet_files(false);
        if (rc != PFI_EXIT_OK)
            return rc;
    }
    if (run->tm->counted_inexact) {
        free(run->red);
        pfi_telemetry_destroy(run->tm);
        run->red = NULL;
        run->tm = NULL;
        fflush(stderr);
        int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);
        if (saved >= 0 && null >= 0)
            dup2(null, STDERR_FILENO);
        topt.count_means_only = false;
        topt.stream_power = false;
        rc = cli_read_telemetry(a->tel, a->n_tel, a->fmt, &topt, &ro, a->quiet, "nothing stored",
                                run->kl ? &run->klog : NULL, &run->tm, &run->red);
        fflush(stderr);
        if (saved >= 0 && null >= 0)
            dup2(saved, STDERR_FILENO);
        if (saved >= 0)
            close(saved);
        if (null >= 0)
            close(null);
        if (rc != PFI_EXIT_OK)
            return rc;
    }
    /* --gpus is what the job has; the telemetry is what was measured. Fewer GPUs seen leave
     * the job power short, more sum other jobs' GPUs in: either way the run is not this
     * job's. The reduction flags it (gpu-count); said here too, never silently stored. */
    size_t gpus = a->ro.gpus, seen = run->red->n_gpus;
    if (gpus > 0 && seen != gpus) {
        cli_error("the telemetry has %zu GPU%s, --gpus says %zu: %s; flagged gpu-count, the "
                  "run is INVALID for PFI",
                  seen, seen == 1 ? "" : "s", gpus,
                  seen > gpus ? "the job power sums every GPU seen (another job's GPUs "
                                "too?)"
                              : "the job power misses the GPUs not seen");
    }
    return read_throughput(a, run);
}

/* The report's telemetry part: what was read, how its times are to be taken, each entity. */
static void print_telemetry(FILE *o, const pfi_telemetry *tm, const pfi_reduced *red)
{
    fprintf(o,
            "telemetry: %zu file(s), format %s, %zu rows, %zu lines skipped, "
            "%zu tool errors\n",
            tm->n_files, pfi_telemetry_format_name(tm->last_format), tm->n_rows, tm->n_skipped,
            tm->n_tool_errors);
    if (tm->n_entities_dropped > 0)
        fprintf(o,
                "  %zu GPU%s past the limit of %d not read (%zu rows): PFI_TELEMETRY_MAX_ENTITIES "
                "in pfi/telemetry.h (raise it and rebuild, or ingest the nodes' files as "
                "separate runs)\n",
                tm->n_entities_dropped, tm->n_entities_dropped == 1 ? "" : "s",
                PFI_TELEMETRY_MAX_ENTITIES, tm->n_limit_rows);
    if (tm->n_fields_dropped > 0)
        fprintf(o,
                "  %zu field%s past the limit of %d not read: PFI_TELEMETRY_MAX_FIELDS in "
                "pfi/telemetry.h (query fewer fields, or raise it and rebuild)\n",
                tm->n_fields_dropped, tm->n_fields_dropped == 1 ? "" : "s",
                PFI_TELEMETRY_MAX_FIELDS - 1);
    char safe[4 * sizeof tm->tool_error + 4];
    if (tm->tool_error[0] != '\0')
        fprintf(o, "  the tool reported: %s\n",
                cli_safe(safe, sizeof safe, tm->tool_error, strlen(tm->tool_error)));
    if (!tm->time_nominal && tm->opt.interval_s > 0)
        fprintf(o,
                "  times are the file's timestamps: --interval %.6g s is not used for times "
                "(it is the grid for summing GPUs, unless --align)\n",
                tm->opt.interval_s);
    if (tm->time_nominal)
        fprintf(o,
                "  times are NOMINAL (sample index x %.6g s%s): the file has no "
                "timestamps\n",
                tm->opt.interval_s > 0 ? tm->opt.interval_s : 1.0,
                tm->interval_assumed ? ", assumed" : "");
    else if (tm->time_relative && tm->time_from_start)
        fprintf(o, "  times are relative (seconds from the recording's start, its t_s column)\n");
    else if (tm->time_relative)
        fprintf(o, "  times are relative (time of day without a date)\n");
    else if (tm->time_zone[0] != '\0' && tm->n_zone_local > 0)
        fprintf(o,
                "  zone-less local times read in time zone %s%s (--timezone); %zu in a "
                "repeated fall-back hour, %zu in a skipped spring-forward hour\n",
                tm->time_zone, ingest_zone_default ? ", the machine's" : "", tm->n_zone_repeated,
                tm->n_zone_skipped);
    else if (tm->time_utc)
        fprintf(o, "  times are UTC (ISO 8601 with offsets, epoch seconds)\n");
    else
        fprintf(o, "  times are host-local wall clock, no time zone assumed\n");
    long fp = red->power_field[0] ? pfi_telemetry_field_find(tm, red->power_field) : -1;
    for (size_t e = 0; e < tm->n_entities; e++) {
        const pfi_telemetry_entity *en = &tm->entities[e];
        const pfi_telemetry_series *s =
            fp >= 0 ? pfi_telemetry_series_get(tm, e, (size_t)fp) : NULL;
        char safe_name[4 * 256 + 4];
        fprintf(o, "  %s: %zu row%s",
                cli_safe(safe_name, sizeof safe_name, en->name, strlen(en->name)), en->rows,
                en->rows == 1 ? "" : "s");
        if (s != NULL && s->n_valid > 0)
            fprintf(o, ", %s %zu valid / %zu missing / %zu out of range, mean %.4f W",
                    red->power_field, s->n_valid, s->n_missing, s->n_range,
                    s->sum / (double)s->n_valid);
        else if (s != NULL)
            fprintf(o, ", %s 0 valid / %zu missing / %zu out of range, no mean", red->power_field,
                    s->n_missing, s->n_range);
        else
            fprintf(o, ", power unavailable");
        if (en->lost && isnan(en->lost_t_s))
            fprintf(o,
                    ", LOST per the kernel log (last good t=%s; time of the loss "
                    "unknown)",
                    cli_num(en->last_good_t_s, 'f', 3, "none").s);
        else if (en->lost)
            fprintf(o, ", LOST at t=%.3f (last good %.3f)", en->lost_t_s, en->last_good_t_s);
        fputc('\n', o);
    }
}

/* The report's reduction part: job power, energy, throughput, the flags, and whether the run
 * counts for PFI. */
static void print_reduction(FILE *o, const ingest_args *a, const ingest_run *run)
{
    const pfi_reduced *red = run->red;
    const pfi_trainlog *log = run->log;
    const pfi_trainlog_summary *tls = &run->tls;
    fprintf(o, "power: %s", red->power_field[0] ? red->power_field : "(none)");
    char se[32], tse[32], tflops[32], tput[32], twin[32];
    num_or(se, sizeof se, 4, red->power.se, "undefined");
    if (!isnan(red->power.mean))
        fprintf(o,
                " job %.4f W (se %s, top %zu of %zu complete timestamps; %zu "
                "incomplete left out; grid %.4g s)",
                red->power.mean, se, red->power.m, red->power.n_valid, red->n_incomplete,
                red->align_s);
    else if (red->power_field[0]) /* said why, never a bare field name */
        fprintf(o, ": none (%s)",
                red->n_complete == 0 ? "no complete timestamp: every one lacks a GPU"
                : red->power.n_valid == 0 && red->power.n_warmup > 0
                    ? "every complete timestamp within the warm-up (--warmup)"
                : red->flags & PFI_RED_CAP_SHORT
                    ? "fewer than half the complete timestamps remain in steady state"
                    : "no valid sample at a complete timestamp");
    fputc('\n', o);
    if (red->n_excluded > 0)
        fprintf(o,
                "steady state: %zu of %zu complete timestamps left out (%zu cap-lost: the "
                "enforced limit was not the cap %s; %zu throttled: clock event reasons other "
                "than the software power cap)%s\n",
                red->n_excluded, red->n_complete, red->n_cap_lost,
                isnan(a->cap) ? "(the first limit sample)" : "given", red->n_throttled,
                red->flags & PFI_RED_CAP_SHORT ? "; fewer than half remain: no run power" : "");
    if (!isnan(red->energy_j))
        fprintf(o, "energy: %.3f J (%s%s%s)\n", red->energy_j, red->energy_method,
                red->energy_note[0] ? "; " : "", red->energy_note);
    else
        fprintf(o, "energy: unavailable (%s)\n",
                red->energy_note[0] ? red->energy_note : "no power samples");
    if (log != NULL)
        fprintf(o,
                "throughput: %s log, %zu intervals, %zu used, excluded: %zu skipped-"
                "iteration, %zu checkpoint, %zu no rate, %zu warm-up; work/time %s "
                "%s/s (se %s), window %s %s/s, TFLOP/s/GPU %s; %zu NaN-loss "
                "intervals\n",
                pfi_trainlog_format_name(log->format), log->n, tls->n_included, tls->n_skipped,
                tls->n_checkpoint, tls->n_bad_rate, tls->n_warmup,
                num_or(tput, sizeof tput, 6, tls->steady.mean, "unavailable"), log->unit,
                num_or(tse, sizeof tse, 3, tls->steady.se, "undefined"),
                num_or(twin, sizeof twin, 6, tls->window_rate, "unavailable"), log->unit,
                num_or(tflops, sizeof tflops, 6, tls->tflops_mean, "unavailable"), log->n_nan);
    if (log != NULL &&
        (log->notes[0] || tls->n_eval || tls->n_restart || tls->n_gap || log->n_duplicate))
        fprintf(o,
                "throughput notes: %zu eval, %zu restart, %zu gap intervals excluded; %zu "
                "duplicate records, %zu sessions%s%s\n",
                tls->n_eval, tls->n_restart, tls->n_gap, log->n_duplicate, log->n_sessions,
                log->notes[0] ? "; " : "", log->notes);
    fprintf(o, "flags:%s%s%s%s%s%s%s%s%s%s%s%s%s%s\n", red->flags ? "" : " none",
            red->flags & PFI_RED_NO_POWER ? " no-power" : "",
            red->flags & PFI_RED_GPU_LOST ? " gpu-lost" : "",
            red->flags & PFI_RED_INCOMPLETE ? " incomplete" : "",
            red->flags & PFI_RED_NOMINAL_TIME ? " nominal-time" : "",
            red->flags & PFI_RED_GPU_COUNT ? " gpu-count" : "",
            red->flags & PFI_RED_TOOL_ERROR ? " tool-error" : "",
            red->flags & PFI_RED_NAN_LOSS ? " nan-loss" : "",
            red->flags & PFI_RED_NO_THROUGHPUT ? " no-throughput" : "",
            red->flags & PFI_RED_TIME_GAP ? " time-gap" : "",
            red->flags & PFI_RED_ENERGY_PARTIAL ? " energy-partial" : "",
            red->flags & PFI_RED_CAP_LOST ? " cap-lost" : "",
            red->flags & PFI_RED_THROTTLED ? " throttled" : "",
            red->flags & PFI_RED_CAP_SHORT ? " cap-short" : "");
    if ((red->flags & PFI_RED_INVALID) && !(red->flags & PFI_RED_NO_POWER))
        fprintf(o, "%s\n",
                a->dry ? "this run is INVALID for PFI: it would be stored, but "
                         "analyze would leave it out"
                       : "this run is INVALID for PFI: analyze leaves it out (it is "
                         "stored unless a valid run holds its cap; see --replace)");
}

/* Why a run without job power has none, as one error naming the files. */
static void explain_no_power(const ingest_args *a, const ingest_run *run)
{
    const pfi_telemetry *tm = run->tm;
    const pfi_reduced *red = run->red;
    const pfi_reduce_options *ro = &a->ro;
    char files[600];
    if (a->n_tel == 1)
        snprintf(files, sizeof files, "%s", a->tel[0]);
    else
        snprintf(files, sizeof files, "%s and %zu other telemetry file%s", a->tel[0], a->n_tel - 1,
                 a->n_tel == 2 ? "" : "s");
    char have[128] = "";
    for (size_t i = 0; i < sizeof power_fields / sizeof power_fields[0]; i++)
        if (pfi_telemetry_has_field(tm, power_fields[i]))
            snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s", have[0] ? ", " : "",
                     power_fields[i]);
    if (ro->power_field != NULL && !pfi_telemetry_has_field(tm, ro->power_field))
        cli_error("%s: --power-field %s: not in the telemetry (it has %s)", files, ro->power_field,
                  have[0] ? have : "no power field");
    else if (red->n_complete > 0 && ro->warmup_s > 0)
        cli_error("%s: job power unavailable: --warmup %g s drops all %zu complete "
                  "timestamps (the warm-up counts from the first sample); give a "
                  "shorter --warmup",
                  files, ro->warmup_s, red->n_complete);
    else if (red->n_bins > 0)
        cli_error("%s: job power unavailable: no timestamp has power from every GPU "
                  "(a GPU without power data makes the node total incomplete)",
                  files);
    else {
        /* Power cells that were there but missing or rejected (a unit contradiction, not a
         * number, a placeholder) are the reason, not the tool's error line. */
        size_t n_bad = 0;
        for (size_t i = 0; i < sizeof power_fields / sizeof power_fields[0]; i++) {
            long fp = pfi_telemetry_field_find(tm, power_fields[i]);
            for (size_t e = 0; fp >= 0 && e < tm->n_entities; e++) {
                const pfi_telemetry_series *s = pfi_telemetry_series_get(tm, e, (size_t)fp);
                if (s != NULL)
                    n_bad += s->n_missing + s->n_range;
            }
        }
        if (n_bad > 0)
            cli_error("%s: no power samples: all %zu power cells were missing or rejected "
                      "(see the notes above)%s%s",
                      files, n_bad, tm->tool_error[0] ? "; the tool also reported: " : "",
                      tm->tool_error);
        else
            cli_error("%s: no power samples%s%s", files,
                      tm->tool_error[0] ? ": the tool reported: " : "", tm->tool_error);
    }
}

/* Phase 3, the summary: the report on stdout (unless --quiet), then, for a run without job
 * power, why (exit 1). */
static int summarise_run(const ingest_args *a, const ingest_run *run)
{
    if (!a->quiet) {
        print_telemetry(stdout, run->tm, run->red);
        if (run->kl != NULL)
            print_kernel_log(stdout, run->kl, run->klog.match, run->tm);
        print_reduction(stdout, a, run);
    }
    if (run->red->flags & PFI_RED_NO_POWER) {
        explain_no_power(a, run);
        return PFI_EXIT_DATA;
    }
    return PFI_EXIT_OK;
}

/* The stored run of group --group at cap --cap, if any: found, and whether it is valid. */
typedef struct held_run {
    double cap_w;
    bool found, valid;
} held_run;

static pfi_error find_held_run(void *ctx, const pfi_store_row *r)
{
    held_run *h = ctx;
    if (r->cap_w == h->cap_w) {
        h->found = true;
        h->valid = !(r->flags & PFI_RED_INVALID) && !isnan(r->power_w);
    }
    return PFI_OK;
}

/* Phase 4, storing: the run and its source files into the run store --db. An exit code. */
static int store_run(const ingest_args *a, const ingest_run *run)
{
    const pfi_reduced *red = run->red;
    const pfi_trainlog *log = run->log;
    pfi_diag d;
    pfi_store *st = NULL;
    pfi_error e = pfi_store_open(a->db, PFI_STORE_WRITE, &st, &d);
    pfi_store_source src[MAX_TELEMETRY + 1 + MAX_KERNEL_LOGS];
    size_t ns = 0;
    for (size_t i = 0; i < a->n_tel; i++)
        src[ns++] = (pfi_store_source){a->tel[i], pfi_telemetry_format_name(run->tm->last_format)};
    if (a->tlog != NULL)
        src[ns++] = (pfi_store_source){a->tlog, pfi_trainlog_format_name(log->format)};
    for (size_t i = 0; i < a->n_klogs; i++)
        src[ns++] = (pfi_store_source){a->klogs[i], "kernel-log"};
    /* The run's GPUs, by identity: every GPU entity the reduction summed. */
    const pfi_telemetry *tm = run->tm;
    pfi_store_gpu *gpu_ids = calloc(tm->n_entities ? tm->n_entities : 1, sizeof *gpu_ids);
    size_t ng = 0;
    for (size_t i = 0; gpu_ids != NULL && i < tm->n_entities; i++)
        if (tm->entities[i].is_gpu)
            gpu_ids[ng++] = (pfi_store_gpu){.name = tm->entities[i].name,
                                            .host = tm->entities[i].host,
                                            .uuid = tm->entities[i].uuid};
    if (gpu_ids == NULL && e == PFI_OK) {
        pfi_store_close(st);
        cli_error("out of memory");
        return PFI_EXIT_INTERNAL;
    }
    if (e == PFI_OK) {
        pfi_store_run r = {.group = a->group,
                           .job_class = a->klass,
                           .gpus = (long)a->ro.gpus,
                           .cap_w = a->cap,
                           .power_w = red->power.mean,
                           .power_se_w = red->power.se,
                           .power_n = red->power.n_valid,
                           .throughput = run->tls.steady.mean,
                           .throughput_se = run->tls.steady.se,
                           .throughput_n = run->tls.steady.n_valid,
                           .throughput_unit = log ? log->unit : NULL,
                           .power_field = red->power_field,
                           .energy_j = red->energy_j,
                           .flags = red->flags,
                           .n_features = red->n_features,
                           .feature_name = (const char(*)[64])red->feature_name,
                           .feature_value = red->feature_value,
                           .n_sources = ns,
                           .sources = src,
                           .n_gpu_ids = ng,
                           .gpu_ids = gpu_ids};
        held_run held = {.cap_w = a->cap};
        if ((red->flags & PFI_RED_INVALID) && !a->replace) {
            e = pfi_store_each_run(st, a->group, find_held_run, &held, NULL, &d);
            if (e == PFI_OK && held.found && held.valid) {
                free(gpu_ids);
                pfi_store_close(st);
                cli_error("group '%s' cap %.6g W: %s already holds a valid run at this cap; "
                          "this run is INVALID for PFI and was not stored (the valid run is "
                          "kept; give --replace to replace it)",
                          a->group, a->cap, a->db);
                return PFI_EXIT_DATA;
            }
        }
        bool replaced = false;
        if (e == PFI_OK)
            e = pfi_store_put_run(st, &r, &replaced, &d);
        if (e == PFI_OK && !a->quiet)
            printf("stored: group '%s' cap %.6g W in %s%s\n", a->group, a->cap, a->db,
                   replaced ? " (replaced the earlier run at this cap)" : "");
    }
    free(gpu_ids);
    int rc = PFI_EXIT_OK;
    if (e != PFI_OK) {
        cli_report(e, &d);
        rc = PFI_EXIT_OUTPUT;
    }
    pfi_store_close(st);
    return rc;
}

/* pfi ingest: the options, the run read, its summary, the run stored (not with --dry-run). */
int cmd_ingest(int argc, char **argv)
{
    ingest_args a;
    int rc = parse_ingest_args(argc, argv, &a);
    if (rc != PFI_EXIT_OK)
        return rc < 0 ? PFI_EXIT_OK : rc;
    ingest_run run = {.tls = {.window_rate = NAN}};
    run.tls.steady.mean = run.tls.steady.se = NAN;
    rc = read_run(&a, &run);
    if (rc == PFI_EXIT_OK)
        rc = summarise_run(&a, &run);
    if (rc == PFI_EXIT_OK && a.dry && !a.quiet)
        printf("dry run: nothing stored\n");
    if (rc == PFI_EXIT_OK && !a.dry)
        rc = store_run(&a, &run);
    ingest_run_clear(&run);
    return rc;
}

static void runs_usage(FILE *f)
{
    fprintf(f, "usage: pfi runs [--db FILE] [--group NAME] [--format table|csv|json] "
               "[-o FILE]\n"
               "\n"
               "List the runs in the run store: group, class, cap, job power and throughput\n"
               "with standard errors and sample counts, quality flags.\n"
               "\n"
               "  --db FILE        run store (pfi.db)\n"
               "  --group NAME     only this sweep group\n"
               "  --format F       table (default), csv or json (with features and sources)\n"
               "  -o, --output F   write there (atomically) instead of stdout\n"
               "  -h, --help       this help\n"
               "\n"
               "flags: the sum of the run's quality flags (pfi ingest prints them by name):\n"
               "  1 no-power, 2 gpu-lost, 16 gpu-count, 4096 cap-short: the run is INVALID for\n"
               "    PFI (analyze leaves it out);\n"
               "  4 incomplete, 8 nominal-time, 32 tool-error, 64 nan-loss, 128 no-throughput,\n"
               "    256 time-gap, 512 energy-partial, 1024 cap-lost, 2048 throttled: warnings,\n"
               "    the run is used (cap-lost / throttled timestamps left out of its power).\n"
               "  e.g. 144 = 16 gpu-count + 128 no-throughput. See man pfi-runs.\n"
               "\n"
               "Exit codes: 0 success, 1 store missing or unreadable, 2 bad command line,\n"
               "3 output not written.\n");
}

/* pfi runs' table: where it goes, and its group and class columns' widths. */
typedef struct runs_table {
    FILE *f;
    int wg, wc;
} runs_table;

/* The first pass of pfi runs' table: the group and class columns as wide as their longest
 * value (names are not cut, and a long one shifts no column). */
static pfi_error runs_table_width(void *ctx, const pfi_store_row *r)
{
    runs_table *t = ctx;
    t->wg = cli_safe_width(r->group, t->wg, 256);
    t->wc = cli_safe_width(r->job_class, t->wc, 64);
    return PFI_OK;
}

/* One row of pfi runs' table: text cells as stored ("-" when empty), escaped (cli_safe: a
 * control character in a stored name never reaches the terminal raw), numbers for people. */
static pfi_error runs_table_row(void *ctx, const pfi_store_row *r)
{
    const runs_table *t = ctx;
    FILE *f = t->f;
    char gpus[24] = "-", cap[32] = "-";
    if (r->has_gpus)
        snprintf(gpus, sizeof gpus, "%lld", r->gpus);
    if (!isnan(r->cap_w))
        snprintf(cap, sizeof cap, "%.17g", r->cap_w);
    const char *g = r->group && r->group[0] ? r->group : "-";
    const char *c = r->job_class && r->job_class[0] ? r->job_class : "-";
    char sg[CLI_SAFE_CELL], sc[CLI_SAFE_CELL];
    fprintf(f, "%-*s %-*s %5s %8s %12s %10s %14s %10s %6u\n", t->wg,
            cli_safe(sg, sizeof sg, g, strlen(g)), t->wc, cli_safe(sc, sizeof sc, c, strlen(c)),
            gpus, cap, cli_num(r->power_w, 'f', 3, "-").s, cli_num(r->power_se_w, 'g', 3, "-").s,
            cli_num(r->throughput, 'g', 6, "-").s, cli_num(r->throughput_se, 'g', 3, "-").s,
            r->flags);
    return PFI_OK;
}

int cmd_runs(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},     {"group", required_argument, NULL, 'g'},
        {"format", required_argument, NULL, 'f'}, {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    const char *db = "pfi.db", *group = NULL, *format = "table", *output = NULL;
    int c;
    optind = 1;
    opterr = 0; /* our own messages, naming the option */
    while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            runs_usage(stdout);
            return PFI_EXIT_OK;
        case 'd':
            db = optarg;
            break;
        case 'g':
            group = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "table") && strcmp(optarg, "csv") && strcmp(optarg, "json")) {
                return cli_usage_bad_value("format", optarg, "table, csv or json");
            }
            format = optarg;
            break;
        default: /* '?' or ':' */
            return cli_usage_getopt(opts, ":ho:", c, argv);
        }
    }
    if (optind < argc) {
        char safe[4 * 256 + 4];
        cli_error("unexpected argument '%s' (the store is --db FILE, a group --group "
                  "NAME; see 'pfi runs --help')",
                  cli_safe(safe, sizeof safe, argv[optind], strlen(argv[optind])));
        return PFI_EXIT_USAGE;
    }
    int orc = cli_output_not_input(output, db);
    if (orc != PFI_EXIT_OK)
        return orc;
    pfi_store *st = NULL;
    pfi_diag d;
    pfi_error e = pfi_store_open(db, PFI_STORE_READ, &st, &d);
    if (e != PFI_OK)
        return cli_report(e, &d);
    cli_output out;
    if (!cli_output_open(&out, output)) {
        pfi_store_close(st);
        return PFI_EXIT_OUTPUT;
    }
    size_t n = 0;
    if (strcmp(format, "json") == 0) {
        e = pfi_store_export_json(st, out.f, group, &n, &d);
    } else if (strcmp(format, "csv") == 0) {
        e = pfi_store_export_csv(st, out.f, false, group, &n, &d);
    } else {
        runs_table t = {.f = out.f, .wg = 24, .wc = 8};
        e = pfi_store_each_run(st, group, runs_table_width, &t, &n, &d);
        if (e == PFI_OK) {
            fprintf(out.f, "%-*s %-*s %5s %8s %12s %10s %14s %10s %6s\n", t.wg, "group", t.wc,
                    "class", "gpus", "cap_w", "power_w", "power_se", "throughput", "tput_se",
                    "flags");
            e = pfi_store_each_run(st, group, runs_table_row, &t, &n, &d);
        }
    }
    pfi_store_close(st);
    if (e != PFI_OK) {
        cli_output_abort(&out);
        return cli_report(e, &d);
    }
    if (!cli_output_commit(&out))
        return PFI_EXIT_OUTPUT;
    if (n == 0)
        fprintf(stderr, "pfi: the store holds no runs%s%s\n", group ? " in group " : "",
                group ? group : "");
    return PFI_EXIT_OK;
}
