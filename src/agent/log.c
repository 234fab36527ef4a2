/*
 * Leveled stderr logging for pfid: one line per event, its text escaped (pfi_escape).
 */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "pfi/error.h" /* pfi_escape */

static atomic_int level = PFID_LOG_INFO;

void pfid_log_set_level(int l)
{
    atomic_store(&level, l);
}

int pfid_log_level(void)
{
    return atomic_load(&level);
}

void pfid_log(int l, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    if (l > atomic_load(&level))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* the text of requests, agents' files and drivers (job names, paths, GPU names) is in
     * msg: a newline or carriage return in it would forge a log line, an ESC sequence drive
     * the terminal. Control characters and bytes of invalid UTF-8 are written as \xNN, so one
     * event stays one line */
    char safe[4 * sizeof msg + 4];
    pfi_escape(safe, sizeof safe, msg, strlen(msg), 0);
    fprintf(stderr, "pfid: %s: %s\n", names[l < 0 ? 0 : l > 3 ? 3 : l], safe);
}
