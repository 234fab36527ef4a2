/*
 * The one wording of a command-line error (opterr.h), for pfi and pfid.
 */
#include "opterr.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The long option whose getopt value is val, or NULL. */
static const struct option *by_val(const struct option *opts, int val)
{
    for (const struct option *p = opts; p != NULL && p->name != NULL; p++)
        if (p->flag == NULL && p->val == val)
            return p;
    return NULL;
}

const char *opterr_getopt(char *buf, size_t n, const char *cmd, const struct option *opts,
                          const char *shortopts, int c, char *const *argv)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    bool is_long = arg != NULL && strncmp(arg, "--", 2) == 0;
    /* a missing value: ':' (shortopts starts with ':'), or '?' with optopt naming an option
     * that takes one (getopt_long sets optopt to a long option's value; 0 when unknown) */
    bool missing = c == ':';
    if (!missing && optopt != 0) {
        const struct option *o = is_long ? by_val(opts, optopt) : NULL;
        const char *s = !is_long && shortopts != NULL ? strchr(shortopts, optopt) : NULL;
        missing = (o != NULL && o->has_arg == required_argument) ||
                  (s != NULL && optopt != ':' && s[1] == ':');
    }
    char what[128];
    if (is_long) {
        size_t k = strcspn(arg, "="); /* --name=value: the name */
        if (missing && by_val(opts, optopt) != NULL)
            snprintf(what, sizeof what, "--%s", by_val(opts, optopt)->name);
        else
            snprintf(what, sizeof what, "%.*s", (int)(k < 100 ? k : 100), arg);
    } else if (optopt != 0) {
        snprintf(what, sizeof what, "-%c", optopt);
    } else {
        snprintf(what, sizeof what, "%.100s", arg != NULL ? arg : "");
    }
    return missing ? opterr_missing(buf, n, cmd, what) : opterr_unknown(buf, n, cmd, what);
}

const char *opterr_unknown(char *buf, size_t n, const char *cmd, const char *arg)
{
    snprintf(buf, n, "unknown option '%s' (see '%s --help')", arg, cmd);
    return buf;
}

const char *opterr_missing(char *buf, size_t n, const char *cmd, const char *name)
{
    snprintf(buf, n, "option '%s' needs a value (see '%s --help')", name, cmd);
    return buf;
}

const char *opterr_bad_value(char *buf, size_t n, const char *cmd, const char *name,
                             const char *text, const char *expected)
{
    while (*name == '-')
        name++;
    if (expected != NULL)
        snprintf(buf, n, "--%s: bad value '%s': expected %s", name, text ? text : "", expected);
    else
        snprintf(buf, n, "--%s: bad value '%s' (see '%s --help')", name, text ? text : "", cmd);
    return buf;
}

const char *opterr_unexpected(char *buf, size_t n, const char *cmd, const char *arg)
{
    snprintf(buf, n, "unexpected argument '%s' (see '%s --help')", arg, cmd);
    return buf;
}
