/*
 * The `pfi` command's shared helpers: exit codes, messages, safe output files.
 */
#ifndef PFI_CLI_H
#define PFI_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pfi/atomic_file.h"
#include "pfi/error.h"
#include "usage_wrap.h"

/* Exit codes: stable, documented in the README. */
enum {
    PFI_EXIT_OK = 0,      /* success */
    PFI_EXIT_DATA = 1,    /* an input is missing, unreadable or malformed */
    PFI_EXIT_USAGE = 2,   /* bad command line */
    PFI_EXIT_OUTPUT = 3,  /* an output (table, JSON, figure) could not be written */
    PFI_EXIT_INTERNAL = 4 /* out of memory or another internal failure */
};

/*
 * Input files, every verb alike (src/cli/input.c). What is not a regular file (a pipe, a
 * FIFO, /dev/stdin, a device; "-" is the standard input) is read at most PFI_MAX_INPUT_BYTES
 * (environment: bytes with an optional K/M/G/T suffix, powers of 1024; default 64 GiB), and
 * one with a NUL byte on its first line within its first 64 KiB is binary, refused at once
 * ("not text (a NUL byte at offset N)"), never read to its end (a regular file's reader says
 * where it is not text itself). A bad PFI_MAX_INPUT_BYTES
 * exits 2 (PFI_EXIT_USAGE) with its message before anything is read.
 */
enum { CLI_INPUT_BINARY = -1, CLI_INPUT_LIMIT = -2 };

/* cli_max_input_bytes — PFI_MAX_INPUT_BYTES in *out (default 64 GiB); false, said, when it is
 * not a positive number of bytes. */
bool cli_max_input_bytes(unsigned long long *out);
/* cli_first_line_nul — the offset of a NUL byte before the first '\n' of b[0..n), else -1. */
long long cli_first_line_nul(const unsigned char *b, size_t n);
/* cli_spool_copy — in copied to out (both borrowed), at most limit bytes, its first 64 KiB
 * looked at before anything is written: 0, or CLI_INPUT_BINARY (*nul: the NUL's offset),
 * CLI_INPUT_LIMIT, or an errno of the read or write. */
int cli_spool_copy(FILE *in, FILE *out, unsigned long long limit, unsigned long long *nul);
/* cli_spool_file — an unlinked temporary file under $TMPDIR (else /tmp), open for update
 * (gone when closed); NULL with errno set when none can be made. */
FILE *cli_spool_file(void);
/* cli_input_message — what cli_spool_copy's err means, in buf ("not text (...)", "more than
 * LIMIT bytes (...): raise it with PFI_MAX_INPUT_BYTES", strerror). */
void cli_input_message(char *buf, size_t size, int err, unsigned long long nul,
                       unsigned long long limit);
/* cli_input_spool — path for a reader with a stream entry point: a regular file, a directory
 * or a path that cannot be opened gives *out NULL (the reader opens the path and says what
 * it is); anything else ("-", a FIFO, a device) is copied to an unlinked temporary file under
 * $TMPDIR under the rules above, *out that copy from its start (the caller fcloses it).
 * PFI_EXIT_OK, or PFI_EXIT_DATA with the error said ("WHAT PATH: ..." or "PATH: ..."). */
int cli_input_spool(const char *what, const char *path, FILE **out);
/* cli_note_cut_line — says on stderr ("pfi: note: PATH:LINE: the last line has no newline
 * (a capture cut short?) ...") when the input's last line has no newline; nothing else. path
 * as given to cli_input_spool ("-": the standard input); spool its copy (read through, then
 * rewound) or NULL for a regular file, read here (a directory, a pipe without a copy: said
 * nothing), or one with a NUL byte (binary data, refused by its reader). A note, never a
 * refusal: the reader still takes the line. */
void cli_note_cut_line(const char *path, FILE *spool);
/* cli_read_text — the whole of the file at path ("-": the standard input) in a buffer of
 * *len bytes (NUL-terminated; the caller frees it with free()), under the rules above. NULL
 * with errno set and cli_input_why() saying why: the open's or read's error, a directory,
 * binary, over PFI_MAX_INPUT_BYTES (a pipe), larger than about max_bytes (EFBIG), ENOMEM. */
char *cli_read_text(const char *path, size_t max_bytes, size_t *len);
/* cli_read_head — the first max_bytes bytes (or fewer: the whole) of the file at path, as
 * cli_read_text; a larger file is not an error: the reader judges its head. */
char *cli_read_head(const char *path, size_t max_bytes, size_t *len);
/* cli_input_why — why the last cli_read_text / cli_read_head returned NULL (borrowed). */
const char *cli_input_why(void);

int cmd_analyze(int argc, char **argv);
int cmd_allocate(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_library(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_predict(int argc, char **argv);

struct pfi_groups;
struct pfi_fit_model;
/* cli_load_model — the model (pfi fit -m) at path into *out (owned; pfi_fit_model_destroy);
 * a pipe read as every input is (PFI_MAX_INPUT_BYTES, binary refused). Prints the error,
 * naming the file, and returns its exit code on failure. */
int cli_load_model(const char *path, struct pfi_fit_model **out);
/* cli_load_groups — the groups table of input (a dataset directory, a run store or a groups
 * CSV; a pipe is a groups CSV read as every input is); prints the error and returns its exit
 * code on failure. */
int cli_load_groups(const char *input, const char *pfi_column, const char *feature_glob,
                    struct pfi_groups **out);

int cmd_ingest(int argc, char **argv);
int cmd_runs(int argc, char **argv);

struct pfi_runs_table;
/* cli_load_db — append the runs of the run store db to t (analyze --db); an exit code. */
int cli_load_db(const char *db, struct pfi_runs_table *t);
/* cli_load_db_group — cli_load_db for the runs of one group (NULL: all). */
int cli_load_db_group(const char *db, const char *group, struct pfi_runs_table *t);

struct pfi_telemetry;
struct pfi_telemetry_options;
struct pfi_reduce_options;
struct pfi_reduced;
struct pfi_kernlog;
struct pfi_kernlog_match;

/* Kernel-log events to correlate with the telemetry before the run is reduced (pfi ingest
 * --kernel-log): every pointer borrowed. */
typedef struct cli_kernlog {
    const struct pfi_kernlog *kl;
    const int *fatal; /* fatal Xid numbers, NULL: the default (pfi/kernlog.h) */
    size_t n_fatal;
    struct pfi_kernlog_match *match; /* kl->n_events entries, filled by cli_read_telemetry */
} cli_kernlog;

/*
 * cli_read_telemetry — read files[n_files] (format fmt, PFI_TELEMETRY_AUTO: detected) into one
 * collector, derive power from energy counters, apply the kernel-log events of klog (may be
 * NULL: pfi_kernlog_apply marks GPUs with a fatal Xid lost), summarise, and reduce the run with
 * ro: the path of `pfi ingest` and `pfi predict --telemetry`. Notes go to stderr unless quiet;
 * when a file fails, "N of M telemetry file(s) failed: ON_FAILURE". On success *tm_out and
 * *red_out are owned by the caller (pfi_telemetry_destroy, free); on failure both are NULL. An exit
 * code. With topt->stream_power the files are read twice (pfi_reduce_stream; regular files
 * or pipes copied by cli_telemetry_spool: a pipe itself cannot be read again); where that
 * cannot be used, PFI_EXIT_OK with *tm_out set (tm->counted_inexact) and *red_out NULL, said
 * nothing after the files' own notes: read again without stream_power, with
 * cli_telemetry_quiet_files(true).
 */
int cli_read_telemetry(const char *const *files, size_t n_files, int fmt,
                       const struct pfi_telemetry_options *topt,
                       const struct pfi_reduce_options *ro, bool quiet, const char *on_failure,
                       const cli_kernlog *klog, struct pfi_telemetry **tm_out,
                       struct pfi_reduced **red_out);

/* cli_telemetry_host_pattern — --host-pattern RE for the files cli_read_telemetry reads next:
 * RE's first group in a file's path is the host of its GPUs (re borrowed; NULL: the default,
 * the file name up to its first '.' when several files are read, and no --host). */
void cli_telemetry_host_pattern(const char *re);

/* cli_telemetry_quiet_files — while on, cli_read_telemetry does not repeat what reading each
 * file says (its notes, the host note): for a second read of files whose notes were said. */
void cli_telemetry_quiet_files(bool on);

/* cli_telemetry_spool — each of files[0..n) that is not a regular file (a FIFO, /dev/stdin)
 * copied once to an unlinked temporary file under $TMPDIR (else /tmp), which
 * cli_read_telemetry then reads (from its start, each time) under the file's own name: so a
 * pipe can be read twice (topt->stream_power) in bounded memory; the disk holds the copy.
 * files must be the array later given to cli_read_telemetry. True when every non-regular
 * file was copied (a read or write error is kept and reported by the read, as the reader
 * would); false when none was or a temporary file could not be made (nothing spooled, the
 * files untouched but for those already copied, which stay spooled). "-" is the standard
 * input, copied the same way. The first 64 KiB are read before anything is written: a NUL
 * byte on their first line (binary input, /dev/zero) is kept as the file's error, "not text
 * (a NUL byte at offset N)", and the rest left unread; a copy reaching PFI_MAX_INPUT_BYTES
 * (environment, bytes with an optional K/M/G/T suffix; default 64 GiB) stops there with an
 * error naming the limit. A bad PFI_MAX_INPUT_BYTES exits 2 (PFI_EXIT_USAGE) with its
 * message. Undone by cli_telemetry_unspool. */
bool cli_telemetry_spool(const char *const *files, size_t n);

/* cli_telemetry_unspool — closes (and so deletes) the copies of cli_telemetry_spool. */
void cli_telemetry_unspool(void);

int cmd_sweep(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_control(int argc, char **argv);
/* pfi control status (src/cli/control_status.c): argv[0] is "status". */
int cmd_control_status(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_schedule(int argc, char **argv);
int cmd_openadr(int argc, char **argv);
int cmd_slurm(int argc, char **argv);

/* cli_error — print "pfi: COMMAND: MESSAGE" on stderr (cli_set_command's; "pfi: MESSAGE"
 * before a command is known), the message escaped (cli_safe). The caller never names the
 * command in the message. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* s[0..n) made safe to print (pfi_escape: control characters and invalid UTF-8 as \xNN),
 * in buf of size len; returns buf. cli_error and every printed note go through it: input
 * text inside a message never reaches the terminal raw. */
const char *cli_safe(char *buf, size_t len, const char *s, size_t n);
/* Room for a table cell of up to 4096 input bytes escaped whole by cli_safe (a byte is at most
 * "\xNN"): a name in a table is never cut. */
#define CLI_SAFE_CELL (4 * 4096 + 4)
/* cli_safe_width — the width in bytes of s (NUL-terminated; NULL: "-") as cli_safe writes it,
 * at least lo and at most hi: a table's column as wide as its longest escaped value. */
int cli_safe_width(const char *s, int lo, int hi);

/*
 * Command-line errors, one wording for every verb (opterr.h), each printed as
 * "pfi: VERB: MESSAGE" and answered with PFI_EXIT_USAGE (returned):
 *
 * cli_set_command — the verb the messages name ("control", "control status"); main sets
 * the verb, a verb with subcommands its own. The text is borrowed (a literal or argv).
 * cli_usage_getopt — getopt_long returned '?' or ':' (c): an unknown option or a missing
 * value (shortopts as given to getopt_long).
 * cli_usage_bad_value — the value text of option name (with or without its dashes) is not
 * what it takes; expected says what it takes ("a number > 0"; NULL: see --help).
 * cli_usage_unexpected — an argument the verb does not take.
 */
void cli_set_command(const char *verb);
const char *cli_command(void);
struct option;
int cli_usage_getopt(const struct option *opts, const char *shortopts, int c, char **argv);
int cli_usage_bad_value(const char *name, const char *text, const char *expected);
int cli_usage_unexpected(const char *arg);
/* cli_usage_unknown / cli_usage_missing — the same for a verb that reads argv by hand. */
int cli_usage_unknown(const char *arg);
int cli_usage_missing(const char *name);
/* cli_usage_error — any other usage error, printf-style: "pfi: VERB: MESSAGE"; returns 2. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* cli_report — print a library error with its diagnostic; return the matching exit code. */
int cli_report(pfi_error e, const pfi_diag *d);

/* cli_exit_code — the exit code for a library error from reading input. */
int cli_exit_code(pfi_error e);

/* cli_parse_double / cli_parse_size — a whole-string number; false when it is not one. */
bool cli_parse_double(const char *s, double *out);
bool cli_parse_size(const char *s, size_t *out);

/*
 * cli_output — a file written whole or not at all (pfi/atomic_file.h: a temporary renamed
 * over path; devices and FIFOs written in place). path "-" or NULL is stdout.
 */
typedef struct cli_output {
    FILE *f;
    pfi_atomic_file file;
} cli_output;

bool cli_output_open(cli_output *o, const char *path);
/* PFI_EXIT_OK when the output path (NULL or "-": stdout) is not the same file as the input
 * path (compared by st_dev/st_ino; an input or output that does not exist yet is not the same),
 * else "pfi: VERB: the output FILE is the input INPUT: refusing to overwrite it" said and
 * PFI_EXIT_USAGE returned: writing the output would replace the input it is read from. */
int cli_output_not_input(const char *output, const char *input);
/* Returns false (and removes the temporary) when a write failed. */
bool cli_output_commit(cli_output *o);
/* cli_write_error — say "pfi: VERB: PATH: cannot write: STRERROR(err)" (path NULL or "-":
 * "standard output"; err 0: EIO). A standard output said so is not said again by
 * cli_stdout_finish. */
void cli_write_error(const char *path, int err);
/* cli_stdout_finish — main's last word on every verb: flush stdout; when it or an earlier write
 * to it failed, say so once (cli_write_error) and return PFI_EXIT_OUTPUT in place of rc 0
 * (README's exit codes: 3 output not written); else rc. */
int cli_stdout_finish(int rc);
void cli_output_abort(cli_output *o);

struct option;
/* cli_option_name — the long name of the option whose getopt value is c in opts ("?" when
 * none), for messages: getopt's argv[optind - 1] may be the value, not the option. */
const char *cli_option_name(const struct option *opts, int c);

/*
 * Option tables. A verb lists its plain options (a value kept as given, a flag, a number
 * within bounds) in a table of cli_opt; its getopt_long loop hands each option to
 * cli_opt_find and cli_opt_take first, and only options with rules of their own stay in
 * the verb's switch.
 */
typedef enum cli_opt_kind {
    CLI_OPT_TEXT,     /* const char *: the value as given */
    CLI_OPT_FLAG,     /* bool: set true (an option without a value) */
    CLI_OPT_DOUBLE,   /* double: a number (cli_parse_double) within lo and hi */
    CLI_OPT_SIZE,     /* size_t: a whole number (cli_parse_size) in [min, max] */
    CLI_OPT_UNSIGNED, /* unsigned: as CLI_OPT_SIZE; max at most UINT_MAX */
    CLI_OPT_UINT64    /* uint64_t: as CLI_OPT_SIZE */
} cli_opt_kind;

typedef struct cli_opt {
    int c; /* the option's getopt_long value */
    cli_opt_kind kind;
    void *dst;             /* the variable set, of the kind's type (borrowed) */
    double lo, hi;         /* CLI_OPT_DOUBLE: the bounds (HUGE_VAL: none above) */
    bool lo_open, hi_open; /* CLI_OPT_DOUBLE: a bound itself refused, as in (0, 1] */
    size_t min, max;       /* integer kinds: the bounds, both allowed */
    bool *given;           /* set true when the option is taken; NULL: not recorded */
    const char *error;     /* for cli_opt_complain, what the option takes: "a number > 0"
                            * ("--NAME: bad value 'X': expected a number > 0"); NULL: see
                            * --help */
} cli_opt;

/* cli_opt_find — the entry of t[0..n) whose getopt value is c, or NULL. */
const cli_opt *cli_opt_find(const cli_opt *t, size_t n, int c);

/* cli_opt_take — store the value text of o (optarg; ignored for a flag) in o->dst and set
 * *o->given; false, nothing stored, when text is not a number of o's kind within its bounds. */
bool cli_opt_take(const cli_opt *o, const char *text);

/* cli_opt_complain — cli_usage_bad_value for a value cli_opt_take refused; NAME is the long
 * name of o in opts. */
void cli_opt_complain(const struct option *opts, const cli_opt *o, const char *text);

/*
 * Missing values are shown as missing: no output prints "nan" or "inf". A missing (NaN) or
 * infinite number is a table's "-", a CSV's empty cell, JSON's null or a word in prose.
 *
 * cli_num — v printed with printf's "%.*f" (conv 'f'), "%.*g" ('g') or "%.*e" ('e') at
 * precision prec, or the text missing when v is not finite (cut to 47 bytes). The text lives
 * in the returned value, so it can be an argument of printf itself:
 *     printf("%9s W\n", cli_num(v, 'f', 0, "-").s);
 */
typedef struct cli_numtext {
    char s[48];
} cli_numtext;
cli_numtext cli_num(double v, char conv, int prec, const char *missing);

/* cli_put_num — fputs of v with "%.*g" at sig significant digits, or of missing when v is not
 * finite: "" for a CSV cell, "null" in hand-written JSON. */
void cli_put_num(FILE *f, double v, int sig, const char *missing);

struct json_t;
/* cli_json_num — a JSON real, or null when v is not finite (jansson refuses NaN and Inf). */
struct json_t *cli_json_num(double v);
/* cli_json_text — s (a name from a file or a command line: any bytes) as a JSON string, its
 * invalid UTF-8 each byte U+FFFD (pfi_utf8_repair; jansson refuses a string that is not
 * UTF-8, which dropped the member); null when s is NULL. NULL only when out of memory.
 * Every JSON writer of src/cli builds a name's string with it. */
struct json_t *cli_json_text(const char *s);
/* cli_json_set — json_object_set_new(o, key, v) with key made UTF-8 the same way; v is
 * released when it cannot be set. Returns 0, or -1 (out of memory). */
int cli_json_set(struct json_t *o, const char *key, struct json_t *v);
/* cli_put_json_text — fputs of s as a JSON string (quotes, \\, \", control characters
 * \u00XX, invalid UTF-8 each byte U+FFFD as cli_json_text), for hand-written JSON. */
void cli_put_json_text(FILE *f, const char *s);

/*
 * Usage texts name the library's registries from their tables, so a new strategy, telemetry
 * format or GPU backend shows in --help with no edit there.
 *
 * cli_names — the names of one registry (static strings borrowed from the library), in the
 * table's order; CLI_NAMES_MAX is more than every registry holds (util.c asserts it).
 */
#define CLI_NAMES_MAX 32
typedef struct cli_names {
    const char *name[CLI_NAMES_MAX];
    size_t n;
} cli_names;

/* cli_strategy_names — every allocation strategy (pfi_strategy_name, pfi/allocate.h). */
void cli_strategy_names(cli_names *out);
/* cli_telemetry_format_names — every telemetry format, "auto" first (pfi/telemetry.h). */
void cli_telemetry_format_names(cli_names *out);
/* cli_gpu_backend_names — the GPU backends with every PFI_GPU_CAP_* bit of need (0: all),
 * pfi/gpu.h. */
void cli_gpu_backend_names(unsigned need, cli_names *out);

/* How cli_join_names writes a list. */
typedef struct cli_list_style {
    const char *sep;      /* between two names: ", " or "|" */
    const char *last_sep; /* before the last name (" or ": an English list); NULL: sep */
    const char *first;    /* the default: listed first as "NAME (default)"; NULL: none */
} cli_list_style;

/* cli_join_names — names joined as st says into buf[len] (truncated to fit, NUL-terminated
 * when len > 0); returns buf. */
const char *cli_join_names(char *buf, size_t len, const cli_names *names, const cli_list_style *st);

/* cli_usage_wrap: usage_wrap.h (shared with pfid) */

/* cli_usage_list — cli_usage_wrap of names joined as st says, followed by tail (NULL: none):
 * one option's list of accepted names in a usage text. */
void cli_usage_list(FILE *f, const char *lead, int indent, int width, const cli_names *names,
                    const cli_list_style *st, const char *tail);

/* cli_is_tty — true when f is a terminal. */
bool cli_is_tty(FILE *f);

#endif
