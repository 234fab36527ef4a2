/*
 * Private interface between the telemetry collector (telemetry.c) and its readers
 * (read_smi.c, read_dcgm.c). Not installed, not part of the API.
 */
#ifndef PFI_TM_INTERNAL_H
#define PFI_TM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pfi/telemetry.h"
#include "pfi/value.h"

/* A bounded line reader: reads in 1 MiB blocks, hands out lines without their terminator. */
typedef struct tm_lines {
    FILE *f;
    char *buf;
    size_t len, pos;
    bool eof;
    long line;
} tm_lines;

pfi_error tm_lines_init(tm_lines *r, FILE *f);
void tm_lines_free(tm_lines *r);
/* Next line in *s (borrowed, NOT NUL-terminated, CR stripped), *n its length; *eof at end.
 * PFI_ERR_LINE_TOO_LONG when a line exceeds PFI_TM_MAX_LINE. */
pfi_error tm_lines_next(tm_lines *r, const char **s, size_t *n, bool *eof);

/* Fast locale-free number parse of text[0..len) (blanks trimmed); falls back to
 * pfi_value_parse for anything unusual. Missing tokens give PFI_VALUE_MISSING. */
pfi_value_status tm_parse_number(const char *text, size_t len, double *out);

/* Collector internals. */
pfi_error tm_entity(pfi_tm *tm, const char *name, size_t len, size_t *id);
pfi_error tm_field(pfi_tm *tm, const char *source, size_t len, size_t *id);
/* Store one sample: status OK with value, or MISSING. row groups samples of one scrape for
 * duplicate detection (-1: no duplicate check); pod: the sample came with pod labels. */
pfi_error tm_put(pfi_tm *tm, size_t e, size_t f, double t, pfi_value_status st, double v,
                 long row, bool pod);
/* Time of a new row of entity e: t when has_t, else nominal index x interval. Handles
 * backwards jumps (segment split) and, when tod is true, midnight rollover. */
double tm_row_time(pfi_tm *tm, size_t e, bool has_t, double t, bool tod, long line,
                   const char *name);
/* The nominal sampling interval: options.interval_s, else 1 s (noted once). */
double tm_interval(pfi_tm *tm);
void tm_note(pfi_tm *tm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tm_tool_error(pfi_tm *tm, const char *name, long line, const char *s, size_t n);
void tm_mark_lost(pfi_tm *tm, size_t e, double t);
char *tm_strndup(const char *s, size_t n);

/* Readers. */
pfi_error tm_read_smi_csv(pfi_tm *tm, tm_lines *r, const char *name, pfi_diag *diag);
pfi_error tm_read_dmon(pfi_tm *tm, tm_lines *r, const char *name, pfi_diag *diag);
pfi_error tm_read_smi_query(pfi_tm *tm, tm_lines *r, const char *name, pfi_diag *diag);
pfi_error tm_read_dcgmi(pfi_tm *tm, tm_lines *r, const char *name, pfi_diag *diag);
pfi_error tm_read_prom(pfi_tm *tm, tm_lines *r, const char *name, pfi_diag *diag);
pfi_error tm_read_smi_xml(pfi_tm *tm, tm_lines *r, const char *name, pfi_diag *diag);

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
long tm_days_from_civil(long y, unsigned m, unsigned d);

#endif
