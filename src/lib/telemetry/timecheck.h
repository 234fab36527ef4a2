/*
 * The range of times a telemetry reader takes (DESIGN §9: every sample has an absolute time),
 * shared by the readers whose times are numbers (Prometheus' epoch milliseconds, the HTTP
 * API's epoch seconds) and text (training-log and kernel-log timestamps): a time outside it is
 * refused on its line, never stored as a date decades away or rolled into another day.
 */
#ifndef PFI_TELEMETRY_TIMECHECK_H
#define PFI_TELEMETRY_TIMECHECK_H

#include <math.h>
#include <stdbool.h>

/* 10000-01-01T00:00:00Z in seconds since 1970: the first time no reader takes (a date of
 * four-digit years, the range every printed form can say). */
#define TM_TIME_END_S 253402300800.0

/* What an epoch time must be, for the refusal's text. */
#define TM_EPOCH_S_EXPECTED "seconds since 1970-01-01 UTC, 0 to 253402300799.999"
#define TM_EPOCH_MS_EXPECTED "milliseconds since 1970-01-01 UTC, an integer 0 to 253402300799999"
/* What a date and a time of the day must be. */
#define TM_CIVIL_EXPECTED                                                                          \
    "a day of the month's calendar (February 29 only in a leap year), 00:00:00 to 23:59:60"

/* Whether t (seconds since 1970-01-01 UTC) is a time a reader takes: finite, not before
 * 1970 (GPU telemetry has none) and before the year 10000. */
static inline bool tm_epoch_valid(double t)
{
    return isfinite(t) && t >= 0 && t < TM_TIME_END_S;
}

/* Whether h:m:s is a time of the day: 00:00:00 to 23:59:60.999... (the leap second :60 is
 * the one second a minute may have past :59). */
static inline bool tm_clock_valid(long h, long m, double s)
{
    return h >= 0 && h <= 23 && m >= 0 && m <= 59 && s >= 0 && s < 61;
}

#endif
