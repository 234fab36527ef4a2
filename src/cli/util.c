/*
 * Helpers shared by the verbs of the `pfi` command.
 */
#include "cli.h"

#include <errno.h>
#include <locale.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/value.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("pfi: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
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
    if (s == NULL || *s == '\0' || *s == '-' || *s == '+')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = (size_t)v;
    return true;
}

bool cli_output_open(cli_output *o, const char *path)
{
    memset(o, 0, sizeof *o);
    if (path == NULL || strcmp(path, "-") == 0) {
        o->f = stdout;
        return true;
    }
    size_t len = strlen(path) + 16;
    o->path = strdup(path);
    o->tmp = malloc(len);
    if (o->path == NULL || o->tmp == NULL) {
        cli_output_abort(o);
        cli_error("out of memory");
        return false;
    }
    snprintf(o->tmp, len, "%s.tmp%ld", path, (long)getpid());
    o->f = fopen(o->tmp, "w");
    if (o->f == NULL) {
        cli_error("%s: cannot write: %s", path, strerror(errno));
        cli_output_abort(o);
        return false;
    }
    return true;
}

bool cli_output_commit(cli_output *o)
{
    bool ok = true;
    if (o->f == stdout) {
        ok = fflush(stdout) == 0 && !ferror(stdout);
        if (!ok)
            cli_error("cannot write to standard output: %s", strerror(errno));
        o->f = NULL;
        return ok;
    }
    if (ferror(o->f))
        ok = false;
    if (fclose(o->f) != 0)
        ok = false;
    o->f = NULL;
    if (ok && rename(o->tmp, o->path) != 0)
        ok = false;
    if (!ok) {
        cli_error("%s: cannot write: %s", o->path, strerror(errno));
        unlink(o->tmp);
    }
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    return ok;
}

void cli_output_abort(cli_output *o)
{
    if (o->f != NULL && o->f != stdout) {
        fclose(o->f);
        unlink(o->tmp);
    }
    o->f = NULL;
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
}

bool cli_is_tty(FILE *f)
{
    return isatty(fileno(f)) == 1;
}
