/*
 * Reading and reducing one run's telemetry files: the path `pfi ingest` and
 * `pfi predict --telemetry` share, so both see the same samples, notes and features.
 */
#include <errno.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "pfi/kernlog.h"
#include "pfi/reduce.h"
#include "pfi/telemetry.h"

/* Notes from index `from` on. The count of notes not kept is cumulative, so it is printed
 * once, by the last call (last): printed after every file it read as two contradictory
 * totals. */
static void print_notes(const pfi_telemetry *tm, size_t from, bool last)
{
    char safe[4 * PFI_TELEMETRY_NOTE_LEN + 4];
    for (size_t i = from; i < tm->n_notes; i++)
        fprintf(stderr, "pfi: note: %s\n",
                cli_safe(safe, sizeof safe, tm->notes[i], strlen(tm->notes[i])));
    if (last && tm->n_notes_dropped > 0)
        fprintf(stderr, "pfi: note: %zu more note%s not shown (only the first %d are kept)\n",
                tm->n_notes_dropped, tm->n_notes_dropped == 1 ? "" : "s", PFI_TELEMETRY_MAX_NOTES);
}

/* True when path is a regular file with nothing in it, or a UTF-8 byte order mark alone.
 * Other files (a FIFO, a device) are not looked at: reading them here would consume them. */
static bool file_is_empty(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 3)
        return false;
    if (st.st_size == 0)
        return true;
    if (st.st_size != 3)
        return false;
    unsigned char b[3] = {0};
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return false;
    size_t got = fread(b, 1, 3, f);
    fclose(f);
    return got == 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF;
}

/* --host-pattern: the extended regular expression whose first group is a file's host. */
static const char *host_pattern;

void cli_telemetry_host_pattern(const char *re)
{
    host_pattern = re;
}

static bool quiet_files;

void cli_telemetry_quiet_files(bool on)
{
    quiet_files = on;
}

/* cli_telemetry_spool's copies: for files[i] of spool_of, spools[i] (NULL: read the path)
 * and the error met copying it (0: none; CLI_INPUT_BINARY: a NUL byte at spool_nul[i] on the
 * first line of the first block; CLI_INPUT_LIMIT: more than spool_limit bytes). */
static const char *const *spool_of;
static FILE **spools;
static int *spool_err;
static unsigned long long *spool_nul;
static size_t n_spools;
static unsigned long long spool_limit;

void cli_telemetry_unspool(void)
{
    for (size_t i = 0; i < n_spools; i++)
        if (spools[i] != NULL)
            fclose(spools[i]);
    free(spools);
    free(spool_err);
    free(spool_nul);
    spools = NULL;
    spool_err = NULL;
    spool_nul = NULL;
    spool_of = NULL;
    n_spools = 0;
}

bool cli_telemetry_spool(const char *const *files, size_t n)
{
    cli_telemetry_unspool();
    if (!cli_max_input_bytes(&spool_limit))
        exit(PFI_EXIT_USAGE); /* a usage error: nothing read yet */
    spools = calloc(n ? n : 1, sizeof *spools);
    spool_err = calloc(n ? n : 1, sizeof *spool_err);
    spool_nul = calloc(n ? n : 1, sizeof *spool_nul);
    if (spools == NULL || spool_err == NULL || spool_nul == NULL) {
        cli_telemetry_unspool();
        return false;
    }
    spool_of = files;
    n_spools = n;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        bool std_in = strcmp(files[i], "-") == 0;
        /* a regular file is read where it is; a directory is left to the read, which says
           what was expected */
        if (!std_in && stat(files[i], &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
            continue;
        /* The copy first: when it cannot be made, the input is left unread. */
        FILE *out = cli_spool_file();
        if (out == NULL)
            return false;
        FILE *in = std_in ? stdin : fopen(files[i], "rb");
        if (in == NULL) {
            fclose(out);
            continue; /* not readable: the read says so, as before */
        }
        unsigned long long nul = 0;
        spool_err[i] = cli_spool_copy(in, out, spool_limit, &nul);
        spool_nul[i] = nul;
        if (!std_in)
            fclose(in);
        spools[i] = out;
    }
    return true;
}

/* options.map_files: the file being read, for the SIGBUS handler's message. */
static const char *volatile mapped_name;

/* A mapped file truncated by another program while it was read (logrotate's copytruncate, a
 * capture restarted over it): the pages past its new end are gone and reading them raises
 * SIGBUS. Nothing has been stored yet (reading comes first): say which file and stop. */
static void on_sigbus(int sig)
{
    (void)sig;
    static const char a[] = "pfi: ", b[] = ": the file was truncated while it was read (another "
                                           "program shrank it): nothing stored\n";
    const char *name = mapped_name != NULL ? mapped_name : "telemetry input";
    ssize_t w = write(STDERR_FILENO, a, sizeof a - 1);
    w = write(STDERR_FILENO, name, strlen(name));
    w = write(STDERR_FILENO, b, sizeof b - 1);
    (void)w;
    _exit(PFI_EXIT_DATA);
}

/* The SIGBUS handler, once, when files are read mapped. */
static void map_files_guard(const pfi_telemetry_options *topt)
{
    static bool installed;
    if (!topt->map_files || installed)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigbus;
    sigemptyset(&sa.sa_mask);
    installed = sigaction(SIGBUS, &sa, NULL) == 0;
}

/* files[i] into tm: its spooled copy (from the start, under its name) when there is one;
 * "-" is the standard input. */
static pfi_error read_input(pfi_telemetry *tm, const char *const *files, size_t i, int fmt,
                            pfi_diag *d)
{
    mapped_name = files[i];
    if (files == spool_of && i < n_spools && spools[i] != NULL) {
        if (spool_err[i] != 0) {
            pfi_diag_clear(d);
            snprintf(d->file, sizeof d->file, "%s", files[i]);
            if (spool_err[i] == CLI_INPUT_BINARY) {
                snprintf(d->message, sizeof d->message,
                         "not text (a NUL byte at offset %llu): is this a telemetry file?",
                         spool_nul[i]);
                return PFI_ERR_PARSE;
            }
            if (spool_err[i] == CLI_INPUT_LIMIT) {
                cli_input_message(d->message, sizeof d->message, CLI_INPUT_LIMIT, 0, spool_limit);
                return PFI_ERR_LIMIT;
            }
            snprintf(d->message, sizeof d->message, "cannot read: %s", strerror(spool_err[i]));
            return PFI_ERR_IO;
        }
        rewind(spools[i]);
        return pfi_telemetry_read_stream(tm, spools[i], files[i], (pfi_telemetry_format)fmt, d);
    }
    if (strcmp(files[i], "-") == 0)
        return pfi_telemetry_read_stream(tm, stdin, "-", (pfi_telemetry_format)fmt, d);
    return pfi_telemetry_read_file(tm, files[i], (pfi_telemetry_format)fmt, d);
}

/* file_is_empty for files[i], or for its spooled copy when there is one: /dev/null or an
 * empty pipe is an empty file as a regular one is. */
static bool input_is_empty(const char *const *files, size_t i)
{
    if (files == spool_of && i < n_spools && spools[i] != NULL) {
        struct stat st;
        if (spool_err[i] != 0 || fstat(fileno(spools[i]), &st) != 0 || st.st_size > 3)
            return false;
        if (st.st_size == 0)
            return true;
        unsigned char b[3] = {0};
        return st.st_size == 3 && pread(fileno(spools[i]), b, 3, 0) == 3 && b[0] == 0xEF &&
               b[1] == 0xBB && b[2] == 0xBF;
    }
    return file_is_empty(files[i]);
}

/* The second read of pfi_reduce_stream: the files as the first read took them (hosts, empty
 * files skipped, format), into a collector of its own whose streamed samples go to fn. */
typedef struct replay_ctx {
    const char *const *files;
    size_t n_files;
    int fmt;
    const pfi_telemetry_options *topt;
    const regex_t *re;
} replay_ctx;

static bool file_host(const char *path, size_t n_files, const regex_t *re, char *out, size_t size);

static pfi_error replay_files(void *ctx, pfi_telemetry_sample_fn fn, void *fctx)
{
    const replay_ctx *rx = ctx;
    pfi_telemetry *tm;
    pfi_error e = pfi_telemetry_create(rx->topt, &tm);
    if (e != PFI_OK)
        return e;
    pfi_telemetry_set_sink(tm, fn, fctx);
    for (size_t i = 0; e == PFI_OK && i < rx->n_files; i++) {
        char host[256] = "";
        if (rx->topt->host == NULL) {
            if (!file_host(rx->files[i], rx->n_files, rx->re, host, sizeof host))
                continue;
            if ((e = pfi_telemetry_set_host(tm, host)) != PFI_OK)
                break;
        }
        bool prom = rx->fmt == PFI_TELEMETRY_PROM ||
                    (rx->fmt == PFI_TELEMETRY_AUTO && tm->last_format == PFI_TELEMETRY_PROM);
        if (!prom && input_is_empty(rx->files, i))
            continue;
        pfi_diag d;
        e = read_input(tm, rx->files, i, rx->fmt, &d);
    }
    pfi_telemetry_destroy(tm);
    return e;
}

/* The host of a telemetry file whose rows do not name one (DESIGN §9: an index is only a label
 * within one host's file): --host for every file; else --host-pattern's first group on the
 * path; else, when several files make one job, the file name up to its first '.'
 * ("node-a.csv" is node-a). "" when none; false when --host-pattern does not match. */
static bool file_host(const char *path, size_t n_files, const regex_t *re, char *out, size_t size)
{
    out[0] = '\0';
    if (re != NULL) {
        regmatch_t m[2];
        if (regexec(re, path, 2, m, 0) != 0 || m[1].rm_so < 0)
            return false;
        snprintf(out, size, "%.*s", (int)(m[1].rm_eo - m[1].rm_so), path + m[1].rm_so);
        return out[0] != '\0';
    }
    if (n_files < 2)
        return true;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strcspn(base, ".");
    snprintf(out, size, "%.*s", (int)n, base);
    return true;
}

/* The machine's time zone, for zone-less local timestamps when --timezone is not given: TZ
 * when set (a leading ':' dropped), else /etc/localtime, named by the zone its link points to
 * ("Europe/Berlin"), else UTC when there is none. */
static const char *machine_zone(char *buf, size_t size)
{
    const char *tz = getenv("TZ");
    if (tz != NULL && tz[0] != '\0') {
        snprintf(buf, size, "%s", tz[0] == ':' ? tz + 1 : tz);
        return buf;
    }
    char link[512];
    ssize_t n = readlink("/etc/localtime", link, sizeof link - 1);
    if (n > 0) {
        link[n] = '\0';
        const char *z = strstr(link, "zoneinfo/");
        snprintf(buf, size, "%.200s", z ? z + 9 : link);
        return buf;
    }
    struct stat st;
    return stat("/etc/localtime", &st) == 0 ? "/etc/localtime" : "UTC";
}

/* A zone given as a path that names something which is not a time zone file: what it is
 * instead into why[n] ("is a directory", "is not a TZif file ..."). false when zone names no
 * such path (an IANA name, or a path that does not exist). */
static bool zone_file_problem(const char *zone, char *why, size_t n)
{
    struct stat st;
    if (strchr(zone, '/') == NULL || stat(zone, &st) != 0)
        return false;
    if (S_ISDIR(st.st_mode)) {
        snprintf(why, n, "is a directory, not a time zone file");
        return true;
    }
    FILE *f = fopen(zone, "rb");
    char magic[4] = {0};
    size_t got = f != NULL ? fread(magic, 1, sizeof magic, f) : 0;
    if (f != NULL)
        fclose(f);
    if (f == NULL) {
        snprintf(why, n, "cannot be read: %s", strerror(errno));
        return true;
    }
    if (got < 4 || memcmp(magic, "TZif", 4) != 0) {
        snprintf(why, n,
                 "is not a TZif file (a time zone file starts with 'TZif'; give an IANA name "
                 "as in /usr/share/zoneinfo, e.g. Europe/Berlin, or UTC)");
        return true;
    }
    return false;
}

int cli_read_telemetry(const char *const *files, size_t n_files, int fmt,
                       const pfi_telemetry_options *topt_in, const pfi_reduce_options *ro,
                       bool quiet, const char *on_failure, const cli_kernlog *klog,
                       pfi_telemetry **tm_out, pfi_reduced **red_out)
{
    *tm_out = NULL;
    *red_out = NULL;
    pfi_telemetry *tm = NULL;
    pfi_telemetry_options topt_zone = *topt_in;
    const pfi_telemetry_options *topt = &topt_zone;
    char zbuf[256], zwhy[256];
    bool zone_default = topt_zone.timezone == NULL;
    if (zone_default)
        topt_zone.timezone = machine_zone(zbuf, sizeof zbuf);
    pfi_error ce = pfi_telemetry_create(topt, &tm);
    if (ce == PFI_ERR_INVALID_ARGUMENT && topt_zone.timezone != NULL &&
        zone_file_problem(topt_zone.timezone, zwhy, sizeof zwhy)) {
        /* a file that exists but is no zone: say what it is, not that it does not exist */
        cli_error("%s '%s': %s", zone_default ? "the machine's zone" : "--timezone",
                  topt_zone.timezone, zwhy);
        return zone_default ? PFI_EXIT_DATA : PFI_EXIT_USAGE;
    }
    if (ce == PFI_ERR_INVALID_ARGUMENT && topt_zone.timezone != NULL) {
        cli_error("%s '%s': no such time zone (an IANA name as in /usr/share/zoneinfo, e.g. "
                  "Europe/Berlin, a TZif file, or UTC)",
                  zone_default ? "the machine's zone" : "--timezone", topt_zone.timezone);
        return zone_default ? PFI_EXIT_DATA : PFI_EXIT_USAGE;
    }
    map_files_guard(topt);
    if (ce == PFI_OK && topt->stream_power)
        ce = pfi_reduce_stream_begin(tm, ro);
    if (ce != PFI_OK) {
        pfi_telemetry_destroy(tm);
        cli_error("out of memory");
        return PFI_EXIT_INTERNAL;
    }
    int rc = PFI_EXIT_OK;
    pfi_diag d;
    /* Every file is read even after one fails (case-09: one bad capture must not hide the
     * others); each failure is reported with its name, and the run is then not used. */
    size_t n_failed = 0;
    regex_t re;
    bool have_re = false;
    if (topt->host == NULL && host_pattern != NULL) {
        if (regcomp(&re, host_pattern, REG_EXTENDED) != 0 || re.re_nsub < 1) {
            if (re.re_nsub < 1)
                regfree(&re);
            cli_error("--host-pattern '%s': not an extended regular expression with a "
                      "(group) for the host",
                      host_pattern);
            pfi_telemetry_destroy(tm);
            return PFI_EXIT_USAGE;
        }
        have_re = true;
    }
    bool said_hosts = false;
    for (size_t i = 0; i < n_files; i++) {
        size_t notes_before = tm->n_notes, rows_before = tm->n_rows;
        char host[256] = "";
        if (topt->host == NULL) {
            if (!file_host(files[i], n_files, have_re ? &re : NULL, host, sizeof host)) {
                cli_error("%s: --host-pattern '%s' finds no host in the file name", files[i],
                          host_pattern);
                n_failed++;
                if (rc == PFI_EXIT_OK)
                    rc = PFI_EXIT_DATA;
                continue;
            }
            if (pfi_telemetry_set_host(tm, host) != PFI_OK) {
                rc = PFI_EXIT_INTERNAL;
                break;
            }
        }
        size_t errors_before = tm->n_tool_errors;
        /* An empty file is a failed capture, like any other file of the batch that has no
         * data; only an empty Prometheus scrape is data: a hole in its time slot. */
        bool prom = fmt == PFI_TELEMETRY_PROM ||
                    (fmt == PFI_TELEMETRY_AUTO && tm->last_format == PFI_TELEMETRY_PROM);
        if (!prom && input_is_empty(files, i)) {
            char safe[4 * 256 + 4];
            cli_error("%s: empty file: no telemetry samples",
                      cli_safe(safe, sizeof safe, files[i], strlen(files[i])));
            n_failed++;
            if (rc == PFI_EXIT_OK)
                rc = PFI_EXIT_DATA;
            continue;
        }
        size_t ents_before = tm->n_entities;
        pfi_error e = read_input(tm, files, i, fmt, &d);
        /* Said once, when a file's GPUs took their host from its name. */
        for (size_t k = ents_before; topt->host == NULL && !have_re && !said_hosts && !quiet &&
                                     !quiet_files && k < tm->n_entities;
             k++)
            if (tm->entities[k].host != NULL && strcmp(tm->entities[k].host, host) == 0 &&
                tm->file_host != NULL) {
                fprintf(stderr,
                        "pfi: note: GPUs without a host in the file are keyed by the file name's "
                        "host (%s: %s; --host-pattern RE, or --host NAME when all files are one "
                        "host's)\n",
                        files[i], host);
                said_hosts = true;
            }
        if (!quiet && !quiet_files)
            print_notes(tm, notes_before, false);
        int frc = PFI_EXIT_OK;
        if (e != PFI_OK) {
            frc = cli_report(e, &d);
        } else if (tm->n_rows == rows_before && tm->n_tool_errors > errors_before) {
            cli_error("%s: no telemetry: the tool reported an error instead of data (see "
                      "above); if it names profiling fields (DCGM_FI_PROF_*, 1001-1012), "
                      "re-run without them to get POWER/TOTEC, or stop the other profiler / "
                      "load the profiling module",
                      files[i]);
            frc = PFI_EXIT_DATA;
        }
        if (frc != PFI_EXIT_OK) {
            n_failed++;
            if (rc == PFI_EXIT_OK || rc == PFI_EXIT_DATA)
                rc = frc;
        }
    }
    if (n_failed > 0)
        cli_error("%zu of %zu telemetry file(s) failed: %s", n_failed, n_files, on_failure);
    if (rc == PFI_EXIT_OK && topt->stream_power) {
        replay_ctx rx = {files, n_files, fmt, topt, have_re ? &re : NULL};
        pfi_error se = pfi_reduce_stream(tm, ro, replay_files, &rx);
        if (se != PFI_OK) {
            cli_error("%s%s: %s", files[0], n_files > 1 ? " (and the other telemetry files)" : "",
                      pfi_strerror(se));
            rc = cli_exit_code(se);
        } else if (tm->counted_inexact) {
            if (have_re)
                regfree(&re);
            *tm_out = tm;
            return PFI_EXIT_OK;
        }
    }
    if (have_re)
        regfree(&re);
    if (rc == PFI_EXIT_OK && pfi_telemetry_derive_power_from_energy(tm) != PFI_OK)
        rc = PFI_EXIT_INTERNAL;
    size_t notes_before = tm->n_notes;
    /* Before the summary and the reduction: a GPU the kernel log reports lost is lost for
     * both, exactly as if the telemetry had said "[GPU is lost]". */
    if (rc == PFI_EXIT_OK && klog != NULL && klog->kl != NULL &&
        pfi_kernlog_apply(klog->kl, tm, klog->fatal, klog->n_fatal, klog->match, NULL) != PFI_OK)
        rc = PFI_EXIT_INTERNAL;
    pfi_telemetry_summarize(tm);
    if (!quiet)
        print_notes(tm, notes_before, true);
    pfi_reduced *red = calloc(1, sizeof *red);
    if (red == NULL)
        rc = PFI_EXIT_INTERNAL;
    if (rc == PFI_EXIT_OK) {
        pfi_error e = pfi_reduce_power(tm, ro, red);
        if (e != PFI_OK) {
            /* The library says why when it can (a time grid too large: which span, step,
             * sample); else the error's own text. */
            char safe[4 * sizeof red->grid_error + 4];
            cli_error("%s%s: cannot reduce the telemetry to job power: %s", files[0],
                      n_files > 1 ? " (and the other telemetry files)" : "",
                      red->grid_error[0] != '\0'
                          ? cli_safe(safe, sizeof safe, red->grid_error, strlen(red->grid_error))
                          : pfi_strerror(e));
            rc = cli_exit_code(e);
        } else if (!quiet && red->align_note[0] != '\0') {
            char safe[4 * sizeof red->align_note + 4];
            fprintf(stderr, "pfi: note: %s\n",
                    cli_safe(safe, sizeof safe, red->align_note, strlen(red->align_note)));
        }
    }
    if (rc != PFI_EXIT_OK) {
        free(red);
        pfi_telemetry_destroy(tm);
        return rc;
    }
    *tm_out = tm;
    *red_out = red;
    return PFI_EXIT_OK;
}
