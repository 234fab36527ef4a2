/*
 * Helpers shared by the verbs of the `pfi` command.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pfi/allocate.h"
#include "pfi/gpu.h"
#include "pfi/memory.h"
#include "pfi/telemetry.h"
#include "pfi/value.h"

#include "opterr.h"

static const char *g_command = "";

void cli_error(const char *fmt, ...)
{
    char msg[4096], safe[4 * sizeof msg + 4];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
    /* one wording for every command: "pfi: COMMAND: MESSAGE" (the callers never name it) */
    const char *cmd = cli_command();
    fprintf(stderr, "pfi: %s%s%s\n", cmd, cmd[0] != '\0' ? ": " : "",
            cli_safe(safe, sizeof safe, msg, len));
}

void cli_set_command(const char *verb)
{
    g_command = verb != NULL ? verb : "";
}

const char *cli_command(void)
{
    return g_command;
}

/* "pfi VERB", what --help follows in the messages */
static const char *help_cmd(char *buf, size_t n)
{
    snprintf(buf, n, "pfi%s%s", g_command[0] ? " " : "", g_command);
    return buf;
}

static int usage_said(const char *text)
{
    cli_error("%s", text);
    return PFI_EXIT_USAGE;
}

int cli_usage_getopt(const struct option *opts, const char *shortopts, int c, char **argv)
{
    char cmd[96], text[512];
    return usage_said(
        opterr_getopt(text, sizeof text, help_cmd(cmd, sizeof cmd), opts, shortopts, c, argv));
}

int cli_usage_bad_value(const char *name, const char *text, const char *expected)
{
    char cmd[96], msg[1024];
    return usage_said(
        opterr_bad_value(msg, sizeof msg, help_cmd(cmd, sizeof cmd), name, text, expected));
}

int cli_usage_unknown(const char *arg)
{
    char cmd[96], msg[512];
    return usage_said(opterr_unknown(msg, sizeof msg, help_cmd(cmd, sizeof cmd), arg));
}

int cli_usage_missing(const char *name)
{
    char cmd[96], msg[512];
    return usage_said(opterr_missing(msg, sizeof msg, help_cmd(cmd, sizeof cmd), name));
}

int cli_usage_error(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return usage_said(msg);
}

int cli_usage_unexpected(const char *arg)
{
    char cmd[96], msg[512];
    return usage_said(opterr_unexpected(msg, sizeof msg, help_cmd(cmd, sizeof cmd), arg));
}

const char *cli_safe(char *buf, size_t len, const char *s, size_t n)
{
    return pfi_escape(buf, len, s, n, 0);
}

int cli_safe_width(const char *s, int lo, int hi)
{
    char buf[CLI_SAFE_CELL];
    size_t w = s != NULL ? strlen(cli_safe(buf, sizeof buf, s, strlen(s))) : 1;
    return w < (size_t)lo ? lo : w > (size_t)hi ? hi : (int)w;
}

int cli_exit_code(pfi_error e)
{
    switch (e) {
    case PFI_OK:
        return PFI_EXIT_OK;
    case PFI_ERR_NOMEM:
    case PFI_ERR_THREAD:
        return PFI_EXIT_INTERNAL;
    case PFI_ERR_PLOT:
        return PFI_EXIT_OUTPUT;
    case PFI_ERR_INVALID_ARGUMENT:
        return PFI_EXIT_USAGE;
    default:
        return PFI_EXIT_DATA;
    }
}

int cli_report(pfi_error e, const pfi_diag *d)
{
    char line[1400];
    pfi_diag_format(d, line, sizeof line);
    if (d != NULL && d->message[0] == '\0' && line[0] != '\0') {
        /* Never "FILE: " alone: say at least what kind of failure it was. */
        size_t used = strlen(line);
        snprintf(line + used, sizeof line - used, "%s", pfi_strerror(e));
    }
    if (line[0] != '\0')
        cli_error("%s", line);
    else
        cli_error("%s", pfi_strerror(e));
    return cli_exit_code(e);
}

bool cli_parse_double(const char *s, double *out)
{
    return s != NULL && pfi_value_parse(s, strlen(s), out) == PFI_VALUE_OK;
}

bool cli_parse_size(const char *s, size_t *out)
{
    if (s == NULL || !isdigit((unsigned char)*s)) /* strtoull would take " -1" as SIZE_MAX */
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = (size_t)v;
    return true;
}

int cli_output_not_input(const char *output, const char *input)
{
    if (output == NULL || input == NULL || strcmp(output, "-") == 0 || strcmp(input, "-") == 0)
        return PFI_EXIT_OK;
    struct stat so, si;
    if (stat(output, &so) != 0 || stat(input, &si) != 0)
        return PFI_EXIT_OK;
    if (so.st_dev != si.st_dev || so.st_ino != si.st_ino || !S_ISREG(so.st_mode))
        return PFI_EXIT_OK;
    cli_error("the output %s is the input %s: refusing to overwrite it", output, input);
    return PFI_EXIT_USAGE;
}

bool cli_output_open(cli_output *o, const char *path)
{
    memset(o, 0, sizeof *o);
    if (path == NULL || strcmp(path, "-") == 0) {
        o->f = stdout;
        return true;
    }
    pfi_diag d;
    pfi_error e = pfi_atomic_open(&o->file, path, &d);
    if (e != PFI_OK) {
        cli_report(e, &d);
        return false;
    }
    o->f = o->file.f;
    return true;
}

bool cli_output_commit(cli_output *o)
{
    if (o->f == stdout) {
        bool ok = fflush(stdout) == 0 && !ferror(stdout);
        if (!ok)
            cli_write_error(NULL, errno);
        o->f = NULL;
        return ok;
    }
    o->f = NULL;
    pfi_diag d;
    pfi_error e = pfi_atomic_commit(&o->file, &d);
    if (e != PFI_OK)
        cli_report(e, &d);
    return e == PFI_OK;
}

static bool g_stdout_said; /* cli_write_error said standard output failed */

void cli_write_error(const char *path, int err)
{
    bool out = path == NULL || strcmp(path, "-") == 0;
    if (out)
        g_stdout_said = true;
    cli_error("%s: cannot write: %s", out ? "standard output" : path, strerror(err ? err : EIO));
}

/* Whether err is what a failed write says (an errno left by an earlier write to stdout, when
 * the final flush had nothing left to write). */
static bool write_errno(int err)
{
    return err == ENOSPC || err == EPIPE || err == EIO || err == EFBIG || err == EDQUOT ||
           err == EBADF || err == EAGAIN || err == EINVAL || err == EROFS;
}

int cli_stdout_finish(int rc)
{
    int before = errno; /* a write that failed before (a long --help) set it */
    errno = 0;
    bool failed = fflush(stdout) != 0;
    int err = failed ? errno : write_errno(before) ? before : 0;
    if (!failed && !ferror(stdout))
        return rc;
    if (!g_stdout_said)
        cli_write_error(NULL, err);
    return rc == PFI_EXIT_OK ? PFI_EXIT_OUTPUT : rc;
}

void cli_output_abort(cli_output *o)
{
    if (o->f != stdout)
        pfi_atomic_abort(&o->file);
    o->f = NULL;
}

bool cli_is_tty(FILE *f)
{
    return isatty(fileno(f)) == 1;
}

const char *cli_option_name(const struct option *opts, int c)
{
    for (const struct option *o = opts; o->name != NULL; o++)
        if (o->flag == NULL && o->val == c)
            return o->name;
    return "?";
}

const cli_opt *cli_opt_find(const cli_opt *t, size_t n, int c)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].c == c)
            return &t[i];
    return NULL;
}

bool cli_opt_take(const cli_opt *o, const char *text)
{
    double x;
    size_t z;
    switch (o->kind) {
    case CLI_OPT_TEXT:
        *(const char **)o->dst = text;
        break;
    case CLI_OPT_FLAG:
        *(bool *)o->dst = true;
        break;
    case CLI_OPT_DOUBLE:
        if (!cli_parse_double(text, &x) || (o->lo_open ? !(x > o->lo) : !(x >= o->lo)) ||
            (o->hi_open ? !(x < o->hi) : !(x <= o->hi)))
            return false;
        *(double *)o->dst = x;
        break;
    case CLI_OPT_SIZE:
    case CLI_OPT_UNSIGNED:
    case CLI_OPT_UINT64:
        if (!cli_parse_size(text, &z) || z < o->min || z > o->max)
            return false;
        if (o->kind == CLI_OPT_SIZE)
            *(size_t *)o->dst = z;
        else if (o->kind == CLI_OPT_UNSIGNED)
            *(unsigned *)o->dst = (unsigned)z;
        else
            *(uint64_t *)o->dst = (uint64_t)z;
        break;
    }
    if (o->given != NULL)
        *o->given = true;
    return true;
}

void cli_opt_complain(const struct option *opts, const cli_opt *o, const char *text)
{
    /* "--cap --telemetry F": the value was forgotten and the next option taken for it */
    if (text != NULL && text[0] == '-' && text[1] == '-' && text[2] != '\0') {
        size_t len = strcspn(text + 2, "=");
        for (const struct option *p = opts; p != NULL && p->name != NULL; p++)
            if (strlen(p->name) == len && strncmp(p->name, text + 2, len) == 0) {
                char name[128];
                snprintf(name, sizeof name, "--%s", cli_option_name(opts, o->c));
                cli_usage_missing(name);
                return;
            }
    }
    cli_usage_bad_value(cli_option_name(opts, o->c), text, o->error);
}

cli_numtext cli_num(double v, char conv, int prec, const char *missing)
{
    cli_numtext t;
    if (!isfinite(v)) {
        snprintf(t.s, sizeof t.s, "%s", missing != NULL ? missing : "");
        return t;
    }
    switch (conv) {
    case 'e':
        snprintf(t.s, sizeof t.s, "%.*e", prec, v);
        break;
    case 'g':
        snprintf(t.s, sizeof t.s, "%.*g", prec, v);
        break;
    default:
        if (snprintf(t.s, sizeof t.s, "%.*f", prec, v) >= (int)sizeof t.s)
            snprintf(t.s, sizeof t.s, "%.*g", prec > 6 ? prec : 6, v); /* too long */
        break;
    }
    return t;
}

void cli_put_num(FILE *f, double v, int sig, const char *missing)
{
    if (isfinite(v))
        fprintf(f, "%.*g", sig, v);
    else
        fputs(missing != NULL ? missing : "", f);
}

json_t *cli_json_num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *cli_json_text(const char *s)
{
    if (s == NULL)
        return json_null();
    char *u = pfi_utf8_repair(s, strlen(s));
    if (u == NULL)
        return NULL;
    json_t *j = json_string(u);
    pfi_free(u);
    return j;
}

int cli_json_set(json_t *o, const char *key, json_t *v)
{
    char *u = key != NULL ? pfi_utf8_repair(key, strlen(key)) : NULL;
    if (u == NULL) {
        json_decref(v);
        return -1;
    }
    int rc = json_object_set_new(o, u, v);
    pfi_free(u);
    return rc;
}

void cli_put_json_text(FILE *f, const char *s)
{
    char *u = pfi_utf8_repair(s != NULL ? s : "", s != NULL ? strlen(s) : 0);
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)(u != NULL ? u : ""); *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
    pfi_free(u);
}

_Static_assert(PFI_STRATEGY_COUNT <= CLI_NAMES_MAX && PFI_TELEMETRY_FORMAT_COUNT <= CLI_NAMES_MAX &&
                   PFI_GPU_KIND_COUNT <= CLI_NAMES_MAX,
               "cli_names holds every strategy, format and backend");

static void names_add(cli_names *out, const char *name)
{
    if (out->n < CLI_NAMES_MAX)
        out->name[out->n++] = name;
}

void cli_strategy_names(cli_names *out)
{
    out->n = 0;
    for (int k = 0; k < PFI_STRATEGY_COUNT; k++)
        names_add(out, pfi_strategy_name((pfi_strategy)k));
}

/* The formats are numbered from PFI_TELEMETRY_AUTO (0) up; the first number whose name does
 * not parse back to it ("unknown") ends them. */
void cli_telemetry_format_names(cli_names *out)
{
    out->n = 0;
    for (int k = 0; k < PFI_TELEMETRY_FORMAT_COUNT; k++)
        names_add(out, pfi_telemetry_format_name((pfi_telemetry_format)k));
}

/* A kind that is no backend has no name (pfi_gpu_kind_name: NULL). */
void cli_gpu_backend_names(unsigned need, cli_names *out)
{
    out->n = 0;
    for (int k = 0; k < PFI_GPU_KIND_COUNT; k++) {
        const char *name = pfi_gpu_kind_name((pfi_gpu_kind)k);
        if (name != NULL && (pfi_gpu_backend_caps((pfi_gpu_kind)k) & need) == need)
            names_add(out, name);
    }
}

const char *cli_join_names(char *buf, size_t len, const cli_names *names, const cli_list_style *st)
{
    const char *order[CLI_NAMES_MAX + 1];
    size_t n = 0;
    if (st->first != NULL)
        order[n++] = st->first;
    for (size_t k = 0; k < names->n; k++)
        if (st->first == NULL || strcmp(names->name[k], st->first) != 0)
            order[n++] = names->name[k];
    size_t used = 0;
    if (len > 0)
        buf[0] = '\0';
    for (size_t k = 0; k < n && used < len; k++) {
        const char *sep = k == 0 ? "" : k + 1 == n && st->last_sep != NULL ? st->last_sep : st->sep;
        const char *mark = k == 0 && st->first != NULL ? " (default)" : "";
        int w = snprintf(buf + used, len - used, "%s%s%s", sep, order[k], mark);
        used = w < 0 ? len : used + (size_t)w;
    }
    return buf;
}

/* Greedy: each word (up to a space, or through a '|') goes on the line when it fits, else it
 * starts a new one; the spaces before a word that starts a line are dropped. */
void cli_usage_list(FILE *f, const char *lead, int indent, int width, const cli_names *names,
                    const cli_list_style *st, const char *tail)
{
    char text[2048];
    cli_join_names(text, sizeof text, names, st);
    size_t used = strlen(text);
    if (tail != NULL)
        snprintf(text + used, sizeof text - used, "%s", tail);
    cli_usage_wrap(f, lead, indent, width, text);
}
