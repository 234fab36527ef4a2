/*
 * Leveled stderr logging for pfid.
 */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

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
    fprintf(stderr, "pfid: %s: %s\n", names[l < 0 ? 0 : l > 3 ? 3 : l], msg);
}
