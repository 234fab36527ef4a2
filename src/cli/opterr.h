/*
 * The one wording of a command-line error, shared by the two programs (pfi's verbs through
 * cli.h, and pfid): every verb says an unknown option, a missing value, a bad value and a
 * stray argument the same way, and exits 2.
 *
 *   unknown option '--bogus' (see 'pfi control --help')
 *   option '--budget-w' needs a value (see 'pfi control --help')
 *   --budget-w: bad value 'abc': expected a number > 0
 *   --budget-w: bad value 'abc' (see 'pfi control --help')      (no expectation given)
 *   unexpected argument 'x' (see 'pfi control --help')
 */
#ifndef PFI_CLI_OPTERR_H
#define PFI_CLI_OPTERR_H

#include <stddef.h>

struct option;

/*
 * opterr_getopt — the message for getopt_long's '?' or ':' (c) in buf[n]: an unknown option
 * or one without its value. cmd is what --help follows ("pfi control", "pfid"); shortopts the
 * short options given to getopt_long; argv and getopt's optind/optopt as it left them. A
 * missing value is told from an unknown option with or without a leading ':' in shortopts.
 * Returns buf.
 */
const char *opterr_getopt(char *buf, size_t n, const char *cmd, const struct option *opts,
                          const char *shortopts, int c, char *const *argv);

/* opterr_unknown / opterr_missing — the two messages of opterr_getopt, for a verb that reads
 * its arguments by hand: arg is the option as given, name the option ("--title"). */
const char *opterr_unknown(char *buf, size_t n, const char *cmd, const char *arg);
const char *opterr_missing(char *buf, size_t n, const char *cmd, const char *name);

/* opterr_bad_value — "--NAME: bad value 'TEXT': expected EXPECTED" (expected NULL: the
 * see-help tail instead) in buf[n]; name without or with its leading dashes. Returns buf. */
const char *opterr_bad_value(char *buf, size_t n, const char *cmd, const char *name,
                             const char *text, const char *expected);

/* opterr_unexpected — "unexpected argument 'ARG' (see 'CMD --help')" in buf[n]. */
const char *opterr_unexpected(char *buf, size_t n, const char *cmd, const char *arg);

#endif
