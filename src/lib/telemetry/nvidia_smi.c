/*
 * nvidia-smi readers: --query-gpu CSV, dmon, and -q text blocks. Layouts: shared/cases
 * README "Formats confirmed from real output" and the nvidia-smi man page.
 */
#define _GNU_SOURCE /* memmem, gmtime_r */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/hidx.h"
#include "telemetry/header_dup.h"
#include "telemetry/internal.h"
#include "telemetry/scan.h"
#include "telemetry/span.h"
#include "telemetry/timecheck.h"

#define MAX_COLS 512

/* Split on c; returns the number of fields, or MAX_COLS + 1 when there are more. */
static size_t split_char(const char *s, size_t n, char c, span *out)
{
    size_t k = 0, start = 0;
    for (;;) {
        size_t i = tm_find_char(s, start, n, c);
        if (k == MAX_COLS)
            return MAX_COLS + 1;
        out[k++] = span_trim((span){s + start, i - start});
        if (i == n)
            return k;
        start = i + 1;
    }
}

static bool parse_uint(span x, size_t digits, unsigned *out)
{
    if (x.n != digits)
        return false;
    unsigned v = 0;
    for (size_t i = 0; i < x.n; i++) {
        if (x.s[i] < '0' || x.s[i] > '9')
            return false;
        v = v * 10 + (unsigned)(x.s[i] - '0');
    }
    *out = v;
    return true;
}

/* "HH:MM:SS[.fff]" -> seconds of the day; the fraction (at most 10 digits) is the
 * correctly rounded f / 10^k of its k digits f. */
static bool parse_tod(span x, double *out)
{
    if (x.n < 8 || x.s[2] != ':' || x.s[5] != ':')
        return false;
    const unsigned char *u = (const unsigned char *)x.s;
    /* (a byte that is not a digit gives a difference above 9) */
    unsigned h1 = u[0] - 48u, h2 = u[1] - 48u, m1 = u[3] - 48u, m2 = u[4] - 48u, s1 = u[6] - 48u,
             s2 = u[7] - 48u;
    if ((h1 > 9) | (h2 > 9) | (m1 > 9) | (m2 > 9) | (s1 > 9) | (s2 > 9))
        return false;
    unsigned h = 10 * h1 + h2, m = 10 * m1 + m2, s = 10 * s1 + s2;
    if (h > 23 || m > 59 || s > 60)
        return false;
    double frac = 0;
    if (x.n > 8) {
        if (x.s[8] != '.' || x.n > 8 + 10)
            return false;
        uint64_t f = 0;
        for (size_t i = 9; i < x.n; i++) {
            unsigned d = u[i] - 48u;
            if (d > 9)
                return false;
            f = f * 10 + d;
        }
        frac = (double)f / tm_pow10(x.n - 9);
    }
    *out = h * 3600.0 + m * 60.0 + s + frac;
    return true;
}

/* parse_tod of exactly "HH:MM:SS.fff" (nvidia-smi's time of day: 12 bytes from u), with
 * its result; false for anything else (parse_tod then reads it). */
static inline bool parse_tod_ms(const char *s, double *out)
{
    const unsigned char *u = (const unsigned char *)s;
    if (u[2] != ':' || u[5] != ':' || u[8] != '.')
        return false;
    unsigned h1 = u[0] - 48u, h2 = u[1] - 48u, m1 = u[3] - 48u, m2 = u[4] - 48u, s1 = u[6] - 48u,
             s2 = u[7] - 48u, f1 = u[9] - 48u, f2 = u[10] - 48u, f3 = u[11] - 48u;
    if ((h1 > 9) | (h2 > 9) | (m1 > 9) | (m2 > 9) | (s1 > 9) | (s2 > 9) | (f1 > 9) | (f2 > 9) |
        (f3 > 9))
        return false;
    unsigned h = 10 * h1 + h2, m = 10 * m1 + m2, sec = 10 * s1 + s2;
    if (h > 23 || m > 59 || sec > 60)
        return false;
    double frac = (double)(uint64_t)(100 * f1 + 10 * f2 + f3) / tm_pow10(3);
    *out = h * 3600.0 + m * 60.0 + sec + frac;
    return true;
}

/* Date "YYYY/MM/DD" or "YYYYMMDD" or "YYYY-MM-DD" -> days since 1970. */
static bool parse_date(span x, long *days)
{
    unsigned y, m, d;
    if (x.n == 8) {
        if (!parse_uint((span){x.s, 4}, 4, &y) || !parse_uint((span){x.s + 4, 2}, 2, &m) ||
            !parse_uint((span){x.s + 6, 2}, 2, &d))
            return false;
    } else if (x.n == 10 && (x.s[4] == '/' || x.s[4] == '-') && x.s[7] == x.s[4]) {
        if (!parse_uint((span){x.s, 4}, 4, &y) || !parse_uint((span){x.s + 5, 2}, 2, &m) ||
            !parse_uint((span){x.s + 8, 2}, 2, &d))
            return false;
    } else {
        return false;
    }
    if (!tm_civil_valid((long)y, m, d))
        return false;
    *days = tm_days_from_civil((long)y, m, d);
    return true;
}

/* Normalise a PCI bus id to "dddd:bb:dd.f" lower case (8-digit domains cut to 4). */
static bool norm_bus(span x, char *out, size_t len)
{
    const char *colon = memchr(x.s, ':', x.n);
    if (colon == NULL || x.n > 32 || len < 16)
        return false;
    size_t dom = (size_t)(colon - x.s);
    span rest = {colon, x.n - dom};
    span d = {x.s, dom};
    if (dom > 4) {
        d.s += dom - 4;
        d.n = 4;
    }
    size_t k = 0;
    for (size_t i = 0; i < 4 - (d.n < 4 ? 4 - d.n : 0) && i < d.n; i++)
        out[k++] = (char)((d.s[i] >= 'A' && d.s[i] <= 'F') ? d.s[i] + 32 : d.s[i]);
    for (size_t i = 0; i < rest.n && k + 1 < len; i++) {
        char c = rest.s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
              c == ':' || c == '.'))
            break;
        out[k++] = (char)((c >= 'A' && c <= 'F') ? c + 32 : c);
    }
    out[k] = '\0';
    return k >= 7;
}

/* "gpu<index>" into out[64], the index cut to 40 bytes (no printf per row). */
static void gpu_name(char *out, span idx)
{
    size_t n = idx.n > 40 ? 40 : idx.n;
    memcpy(out, "gpu", 3);
    memcpy(out + 3, idx.s, n);
    out[3 + n] = '\0';
}

/* ---- --query-gpu CSV ---- */

enum {
    COL_VALUE,
    COL_TIMESTAMP,
    COL_INDEX,
    COL_BUS,
    COL_UUID,
    COL_TEXT,
    COL_HOST,
    COL_REASON,
    COL_TSEC /* seconds from the recording's start (pfi's replay CSV: t_s) */
};

/* The columns of pfi's own replay CSV (`pfi sweep --record`, `pfi probe --record`,
 * src/cli/hwutil.c) as the fields they are and the factor to each field's unit, so that pfi
 * ingest reads what pfi wrote. */
static const struct record_col {
    const char *name, *as;
    double scale;
} record_cols[] = {
    {"power_w", "power.draw", 1},
    {"energy_j", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 1000},
    {"sm_clock_mhz", "clocks.sm", 1},
    {"mem_clock_mhz", "clocks.mem", 1},
    {"gpu_util", "utilization.gpu", 100},
    {"mem_util", "utilization.memory", 100},
    {"temp_c", "temperature.gpu", 1},
    {"dram_active", "DCGM_FI_PROF_DRAM_ACTIVE", 1},
    {"tensor_active", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1},
    {"sm_active", "DCGM_FI_PROF_SM_ACTIVE", 1},
    {"enforced_limit_w", "enforced.power.limit", 1},
};

/* nvidia-smi's clocks_event_reasons.* (clocks_throttle_reasons.* before R535) columns: the
 * NVML nvmlClocksEventReason bit of each reason, "active" the whole mask (hex). */
static const struct reason_bit {
    const char *name;
    unsigned bit;
} reason_bits[] = {
    {"active", 0},
    {"gpu_idle", 0x1},
    {"applications_clocks_setting", 0x2},
    {"sw_power_cap", 0x4},
    {"hw_slowdown", 0x8},
    {"sync_boost", 0x10},
    {"sw_thermal_slowdown", 0x20},
    {"hw_thermal_slowdown", 0x40},
    {"hw_power_brake_slowdown", 0x80},
    {"display_clock_setting", 0x100},
};

/* The reason column x ("clocks_event_reasons.hw_slowdown"): its bit in *bit (0: the mask),
 * false when x is not one ("...supported" and unknown reasons stay text). */
static bool reason_column(span x, unsigned *bit)
{
    size_t p;
    if (x.n > 21 && memcmp(x.s, "clocks_event_reasons.", 21) == 0)
        p = 21;
    else if (x.n > 24 && memcmp(x.s, "clocks_throttle_reasons.", 24) == 0)
        p = 24;
    else
        return false;
    for (size_t i = 0; i < sizeof reason_bits / sizeof reason_bits[0]; i++)
        if (span_eq((span){x.s + p, x.n - p}, reason_bits[i].name)) {
            *bit = reason_bits[i].bit;
            return true;
        }
    return false;
}

typedef struct csv_col {
    int role;
    size_t field;
    char unit[16];
    bool unit_documented; /* unit is the field's documented one, the header named none */
    unsigned bit;         /* COL_REASON: its clock event reason bit, 0 for the whole mask */
    double scale;         /* COL_VALUE: the factor to the field's unit (pfi's replay CSV), else 1 */
} csv_col;

static bool looks_like_header(const span *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        span x = f[i];
        const char *br = memchr(x.s, '[', x.n);
        size_t m = br ? (size_t)(br - x.s) : x.n;
        if (m == 0)
            return false;
        for (size_t j = 0; j < m; j++) {
            char c = x.s[j];
            if (!((c >= 'a' && c <= 'z') || c == '.' || c == '_' || c == ' '))
                return false;
        }
    }
    return n > 0;
}

/* The unit nvidia-smi documents for a --query-gpu field (nvidia-smi --help-query-gpu):
 * W for power.*, MiB for memory.*, MHz for clocks.*, % for utilization.*, C for
 * temperature.*; NULL for any other. A --query-gpu list (and a header without "[unit]")
 * names no unit, so this is the one a cell's unit must agree with. */
static const char *documented_unit(span x)
{
    static const struct {
        const char *prefix, *unit;
    } du[] = {{"power.", "W"},    {"enforced.power.", "W"}, {"memory.", "MiB"},
              {"clocks.", "MHz"}, {"utilization.", "%"},    {"temperature.", "C"}};
    for (size_t i = 0; i < sizeof du / sizeof du[0]; i++) {
        size_t m = strlen(du[i].prefix);
        if (x.n > m && memcmp(x.s, du[i].prefix, m) == 0)
            return du[i].unit;
    }
    return NULL;
}

/* The n header fields f mapped to their roles and fields in cols; a column named twice, or
 * two giving one field, refused (header_dup.h: PFI_ERR_PARSE, diag at line). */
static pfi_error map_csv_header(pfi_telemetry *tm, const span *f, size_t n, csv_col *cols,
                                long line, pfi_diag *diag)
{
    for (size_t i = 0; i < n; i++) {
        span x = f[i];
        cols[i].unit[0] = '\0';
        cols[i].unit_documented = false;
        cols[i].scale = 1;
        if (x.n > 2 && x.s[x.n - 1] == ']') {
            const char *br = memchr(x.s, '[', x.n);
            if (br != NULL) {
                size_t un = x.n - 1 - (size_t)(br - x.s) - 1;
                if (un >= sizeof cols[i].unit)
                    un = sizeof cols[i].unit - 1;
                memcpy(cols[i].unit, br + 1, un);
                cols[i].unit[un] = '\0';
                x = span_trim((span){x.s, (size_t)(br - x.s)});
            }
        }
        const struct record_col *rc = NULL;
        for (size_t q = 0; q < sizeof record_cols / sizeof record_cols[0] && rc == NULL; q++)
            if (span_eq(x, record_cols[q].name))
                rc = &record_cols[q];
        if (rc != NULL) {
            cols[i].role = COL_VALUE;
            cols[i].scale = rc->scale;
            pfi_error e = tm_field(tm, rc->as, strlen(rc->as), &cols[i].field);
            if (e == PFI_ERR_LIMIT)
                cols[i].role = COL_TEXT; /* past the field limit (noted): not read */
            else if (e != PFI_OK)
                return e;
        } else if (span_eq(x, "t_s"))
            cols[i].role = COL_TSEC;
        else if (span_eq(x, "clock_event_reasons")) {
            cols[i].role = COL_REASON;
            cols[i].bit = 0;
            pfi_error e = tm_field(tm, "clocks_event_reasons.active", 27, &cols[i].field);
            if (e == PFI_ERR_LIMIT)
                cols[i].role = COL_TEXT; /* past the field limit (noted): not read */
            else if (e != PFI_OK)
                return e;
        } else if (span_eq(x, "timestamp"))
            cols[i].role = COL_TIMESTAMP;
        else if (span_eq(x, "index") || span_eq(x, "gpu"))
            cols[i].role = COL_INDEX;
        else if (span_eq(x, "pci.bus_id"))
            cols[i].role = COL_BUS;
        else if (span_eq(x, "uuid"))
            cols[i].role = COL_UUID;
        else if (span_eq(x, "hostname") || span_eq(x, "host") || span_eq(x, "node"))
            cols[i].role = COL_HOST; /* added by capture scripts: $(hostname), ... */
        else if (reason_column(x, &cols[i].bit)) {
            cols[i].role = COL_REASON; /* every reason column fills one mask field */
            pfi_error e = tm_field(tm, "clocks_event_reasons.active", 27, &cols[i].field);
            if (e == PFI_ERR_LIMIT)
                cols[i].role = COL_TEXT; /* past the field limit (noted): not read */
            else if (e != PFI_OK)
                return e;
        } else if (span_eq(x, "name") || span_eq(x, "driver_version") || span_eq(x, "serial") ||
                   span_eq(x, "pstate") ||
                   (x.n > 7 && memcmp(x.s, "clocks_", 7) == 0 && memmem(x.s, x.n, "reasons", 7) &&
                    !reason_column(x, &cols[i].bit)))
            cols[i].role = COL_TEXT;
        else {
            cols[i].role = COL_VALUE;
            pfi_error e = tm_field(tm, x.s, x.n, &cols[i].field);
            if (e == PFI_ERR_LIMIT)
                cols[i].role = COL_TEXT; /* past the field limit (noted): not read */
            else if (e != PFI_OK)
                return e;
        }
        /* A DCGM ratio (profiling fields, 0..1 by their definition) given in percent:
         * normalised to the field's fraction. */
        if (cols[i].role == COL_VALUE && tm->fields[cols[i].field].kind == PFI_KIND_RATIO &&
            strcmp(cols[i].unit, "%") == 0)
            cols[i].scale *= 0.01;
        const char *du = cols[i].role == COL_VALUE && cols[i].unit[0] == '\0'
                             ? documented_unit(span_trim(f[i]))
                             : NULL;
        if (du != NULL) {
            memcpy(cols[i].unit, du, strlen(du) + 1);
            cols[i].unit_documented = true;
        }
    }
    size_t field[MAX_COLS]; /* the value columns' fields: the reason bits share theirs */
    for (size_t i = 0; i < n && i < MAX_COLS; i++)
        field[i] = cols[i].role == COL_VALUE ? cols[i].field : SIZE_MAX;
    return tm_header_twice(tm, f, field, n < MAX_COLS ? n : MAX_COLS, 0, line, false, diag);
}

/* Try to pull a bus id out of "Unable to determine the device handle for GPU0000:3D:00.0: ..." */
static bool error_line_bus(const char *s, size_t n, char *bus, size_t len)
{
    const char *p = memmem(s, n, "for GPU", 7);
    if (p == NULL)
        return false;
    p += 7;
    while (p < s + n && (*p == ' ' || *p == ':'))
        p++;
    size_t k = 0;
    while (p + k < s + n && p[k] != ' ' &&
           !(p[k] == ':' && (p + k + 1 == s + n || p[k + 1] == ' ')))
        k++;
    return norm_bus((span){p, k}, bus, len);
}

/*
 * The common data row: ncol fields, every value column a plain decimal followed by nothing
 * or by exactly its header's unit. Fields (trimmed) in f[0..ncol), values in fv. False for
 * anything else (placeholders, unit mismatches, wrong counts): the general path decides.
 */
static bool csv_fast_row(const char *s, size_t n, const csv_col *cols, size_t ncol, span *f,
                         double *fv)
{
    size_t j = 0;
    for (size_t i = 0; i < ncol; i++) {
        j = tm_skip_blanks(s, j, n);
        size_t c;
        if (cols[i].role == COL_VALUE) {
            size_t e = tm_scan_number(s, j, n, ',', &fv[i]);
            if (e == SIZE_MAX)
                return false;
            c = tm_find_char(s, e, n, ',');
            span unit = span_trim((span){s + e, c - e});
            if (unit.n > 0 && !span_eq(unit, cols[i].unit))
                return false;
        } else {
            c = tm_find_char(s, j, n, ',');
        }
        f[i] = span_trim((span){s + j, c - j});
        if ((c == n) != (i + 1 == ncol))
            return false;
        j = c + 1;
    }
    return true;
}

#if TM_FAST_LINES
/*
 * csv_fast_row for a line of up to 127 bytes: one SSE2 pass gives the blank and comma
 * bitmasks, fields and number ends come from them, numbers are converted from their known
 * spans eight digits at a time. Accepts exactly what csv_fast_row accepts, less the rare
 * numbers tm_token_number leaves to the general path; the fields it gives are the same.
 */
static bool csv_fast_line(const char *s, size_t n, const csv_col *cols, const size_t *ulen,
                          size_t ncol, span *f, double *fv)
{
    tm_linemask m;
    tm_classify_line(s, n, ',', &m);
    size_t j = 0;
    for (size_t i = 0; i < ncol; i++) {
        size_t c = tm_next_bit(m.chr, j);
        if (c > n)
            c = n;
        if ((c == n) != (i + 1 == ncol))
            return false;
        size_t a = tm_next_clear(m.blank, j);
        if (a > c)
            a = c;
        size_t z = c; /* end of the trimmed field */
        while (z > a && tm_is_blank(s[z - 1]))
            z--;
        if (cols[i].role == COL_VALUE) {
            size_t e = tm_next_bit(m.blank, a);
            if (e > c)
                e = c;
            if (!tm_token_number(s + a, e - a, &fv[i]))
                return false;
            size_t u = tm_next_clear(m.blank, e); /* unit: what follows, trimmed */
            if (u < z) {
                if (z - u != ulen[i])
                    return false;
                for (size_t q = 0; q < ulen[i]; q++)
                    if (s[u + q] != cols[i].unit[q])
                        return false;
            }
        }
        f[i] = (span){s + a, z - a};
        j = c + 1;
    }
    return true;
}
#endif

/* An ISO 8601 time with its offset — "YYYY-MM-DDTHH:MM:SS[.f](Z|+HH:MM|-HH:MM|+HHMM)", a
 * blank instead of the T too — or epoch seconds (a plain number of 9 digits or more before
 * any fraction): exact UTC in *t. false for anything else (a zone-less time). */
static bool csv_time_abs(span x, double *t)
{
    if (x.n >= 9 && x.s[0] >= '0' && x.s[0] <= '9' && memchr(x.s, '/', x.n) == NULL &&
        memchr(x.s, '-', x.n) == NULL && memchr(x.s, ':', x.n) == NULL &&
        memchr(x.s, ' ', x.n) == NULL) {
        const char *dp = memchr(x.s, '.', x.n);
        size_t dot = dp != NULL ? (size_t)(dp - x.s) : x.n;
        return dot >= 9 && tm_number(x.s, x.n, t) == PFI_VALUE_OK && tm_epoch_valid(*t);
    }
    if (x.n < 20 || x.s[4] != '-' || (x.s[10] != 'T' && x.s[10] != ' '))
        return false;
    size_t z = x.n; /* the offset's start */
    double off = 0;
    if (x.s[x.n - 1] == 'Z') {
        z = x.n - 1;
    } else {
        size_t k = x.n;
        while (k > 19 && x.s[k - 1] != '+' && x.s[k - 1] != '-')
            k--;
        if (k <= 19)
            return false;
        span o = {x.s + k, x.n - k};
        unsigned hh, mm;
        if (o.n == 5 && o.s[2] == ':' && parse_uint((span){o.s, 2}, 2, &hh) &&
            parse_uint((span){o.s + 3, 2}, 2, &mm))
            ;
        else if (o.n == 4 && parse_uint((span){o.s, 2}, 2, &hh) &&
                 parse_uint((span){o.s + 2, 2}, 2, &mm))
            ;
        else if (o.n == 2 && parse_uint(o, 2, &hh))
            mm = 0;
        else
            return false;
        if (hh > 23 || mm > 59) /* "+99:99" is no offset */
            return false;
        off = (x.s[k - 1] == '-' ? -1.0 : 1.0) * (hh * 3600.0 + mm * 60.0);
        z = k - 1;
    }
    long days;
    double tod;
    if (!parse_date((span){x.s, 10}, &days) || !parse_tod((span){x.s + 11, z - 11}, &tod))
        return false;
    *t = (double)days * 86400.0 + tod - off;
    return true;
}

/* The time of a CSV timestamp cell "DATE TIME" (has_t false when it does not parse): a
 * zone-less local time in the collector's zone (tm_local_time), an ISO 8601 time with an
 * offset or epoch seconds exact; the date's text and days are remembered in last_date /
 * last_days (it changes once a day). */
static void csv_time(pfi_telemetry *tm, span x, char *last_date, size_t last_date_size,
                     long *last_days, double *tsec, bool *has_t)
{
    if (csv_time_abs(x, tsec)) {
        *has_t = true;
        tm->time_utc = true;
        return;
    }
    const char *sp = memchr(x.s, ' ', x.n);
    long days = *last_days;
    double tod;
    span date = {x.s, sp ? (size_t)(sp - x.s) : 0};
    /* The cached text, whole: same length, same bytes (a date with NUL bytes in it never
     * matches the NUL-padded cache, nor an empty one). */
    bool same = sp != NULL && date.n > 0 && date.n == strnlen(last_date, last_date_size) &&
                memcmp(date.s, last_date, date.n) == 0;
    if (sp != NULL && !same && parse_date(date, &days) && date.n < last_date_size) {
        memcpy(last_date, date.s, date.n);
        last_date[date.n] = '\0';
        *last_days = days;
        same = true;
    }
    if (sp != NULL && (same || parse_date(date, &days)) &&
        parse_tod(span_trim((span){sp + 1, x.n - (size_t)(sp - x.s) - 1}), &tod)) {
        *tsec = tm_local_time(tm, (double)days * 86400.0 + tod);
        *has_t = true;
    }
}

/* Where the identity and time of a row come from under the current header. */
typedef struct csv_layout {
    size_t n_index, n_time, n_bus, n_value, index_col, time_col;
    size_t ulen[MAX_COLS]; /* strlen of each column's unit */
} csv_layout;

static void csv_layout_of(const csv_col *cols, size_t ncol, csv_layout *L)
{
    L->n_index = L->n_time = L->n_bus = L->n_value = 0;
    L->index_col = L->time_col = 0;
    for (size_t i = 0; i < ncol; i++) {
        L->ulen[i] = strlen(cols[i].unit);
        if (cols[i].role == COL_INDEX) {
            L->n_index++;
            L->index_col = i;
        } else if (cols[i].role == COL_TIMESTAMP) {
            L->n_time++;
            L->time_col = i;
        } else if (cols[i].role == COL_BUS || cols[i].role == COL_UUID ||
                   cols[i].role == COL_HOST || cols[i].role == COL_REASON ||
                   cols[i].role == COL_TSEC || cols[i].scale != 1) {
            L->n_bus++; /* identity beyond the index: the general path keys the row */
        } else if (cols[i].role == COL_VALUE) {
            L->n_value++;
        }
    }
}

#if TM_FAST_LINES
/* What the CSV block path carries from row to row: the entity cache and the last
 * timestamp text converted (8 GPUs share each one), shared with the per-line path. */
typedef struct csv_fast_state {
    tm_keycache kc;   /* index text -> entity ("gpu<index>") */
    char ts_text[32]; /* the last timestamp cell converted, and its time (zero padded) */
    size_t ts_len;    /* SIZE_MAX: none */
    double ts_t;
    bool ts_has;
    char last_date[16]; /* csv_time's date cache */
    long last_days;
    /* Entity + 1 of the index texts "0".."9" (slots 0..9) and "00".."99" (10..109) seen,
     * 0 when not seen: nvidia-smi's indices, without kc's hashing. */
    size_t ix_ent[110];
} csv_fast_state;

/* The ix_ent slot of the index text s[0..n) (s[0..2) readable), or -1 for another text. */
static inline int csv_small_ix(const char *s, size_t n)
{
    unsigned d0 = (unsigned)(unsigned char)s[0] - '0', d1 = (unsigned)(unsigned char)s[1] - '0';
    if (n == 1 && d0 <= 9)
        return (int)d0;
    if (n == 2 && d0 <= 9 && d1 <= 9)
        return (int)(10 + 10 * d0 + d1);
    return -1;
}

/* The time of timestamp cell x (trimmed; its line's padding readable after it): the
 * previous cell's when the text is the same, else csv_time's, remembered for the next. */
static inline __attribute__((always_inline)) void csv_fast_time(pfi_telemetry *tm,
                                                                csv_fast_state *fs, span x,
                                                                double *tsec, bool *has_t,
                                                                const bool simd)
{
    if (x.n == fs->ts_len && tm_eq_short(x.s, fs->ts_text, x.n)) {
        *tsec = fs->ts_t;
        *has_t = fs->ts_has;
        return;
    }
    /* The AVX2 copies: the vector registers' upper halves cleared before the calls below
     * into code built without AVX (GCC leaves it out here; the legacy SSE instructions of
     * the callees then wait on the upper halves: measured, the time of a new stamp cost
     * 20 % of the read). */
    tm_zero_upper_in(simd);
    double tod;
    if (x.n > 11 && x.s[4] == '/' && x.s[10] == ' ' && fs->last_date[10] == '\0' &&
        tm_load8(x.s) == tm_load8(fs->last_date) && x.s[8] == fs->last_date[8] &&
        x.s[9] == fs->last_date[9]) {
        /* The last date converted, "YYYY/MM/DD" (nvidia-smi's; no ISO time or epoch
         * seconds has a '/'), and a blank: only the time of day is read, with csv_time's
         * result. */
        if ((x.n == 23 && parse_tod_ms(x.s + 11, &tod)) ||
            parse_tod(span_trim((span){x.s + 11, x.n - 11}), &tod)) {
            *tsec = tm_local_time(tm, (double)fs->last_days * 86400.0 + tod);
            *has_t = true;
        }
    } else {
        csv_time(tm, x, fs->last_date, sizeof fs->last_date, &fs->last_days, tsec, has_t);
    }
    if (x.n <= sizeof fs->ts_text) {
        memset(fs->ts_text, 0, sizeof fs->ts_text);
        memcpy(fs->ts_text, x.s, x.n);
        fs->ts_len = x.n;
        fs->ts_t = *tsec;
        fs->ts_has = *has_t;
    }
}

/* The block loop, for rows of up to 63 bytes and of up to 127: one source, two mask
 * widths. */
#define CSV_WIDE 0
#include "telemetry/csv_block_body.h"
#define CSV_WIDE 1
#include "telemetry/csv_block_body.h"

/* The block loops compiled twice: with AVX2 classification and the SIMD number conversion
 * (the CPU permitting), and without. */
#if TM_SSE2
__attribute__((target(TM_SIMD_TARGET))) static size_t
csv_block_simd(pfi_telemetry *tm, const char *p0, size_t avail, const csv_col *cols,
               const csv_layout *lay, size_t ncol, csv_fast_state *fs, const char *name, long line0,
               long *rows, pfi_error *err, bool wide)
{
    return wide
               ? csv_block_body128(tm, p0, avail, cols, lay, ncol, fs, name, line0, rows, err, true)
               : csv_block_body64(tm, p0, avail, cols, lay, ncol, fs, name, line0, rows, err, true);
}
#endif

/* The block path from p0: the loop of one-word masks when the first row is shorter than 64
 * bytes, else the one of two words (a file's rows are mostly alike; a narrower or wider one
 * ends the block, and the next call picks again). */
static size_t csv_block(pfi_telemetry *tm, const char *p0, size_t avail, const csv_col *cols,
                        const csv_layout *lay, size_t ncol, csv_fast_state *fs, const char *name,
                        long line0, long *rows, pfi_error *err, bool simd)
{
    bool wide = memchr(p0, '\n', avail < 64 ? avail : 64) == NULL;
#if TM_SSE2
    if (simd)
        return csv_block_simd(tm, p0, avail, cols, lay, ncol, fs, name, line0, rows, err, wide);
#endif
    return wide ? csv_block_body128(tm, p0, avail, cols, lay, ncol, fs, name, line0, rows, err,
                                    false)
                : csv_block_body64(tm, p0, avail, cols, lay, ncol, fs, name, line0, rows, err,
                                   false);
}
#endif

/* What the CSV reader carries from line to line. */
typedef struct csv_state {
    bool generic;     /* options.generic_rows: no fast path */
    bool have_header; /* a header (or --fields) maps the columns */
    size_t ncol;      /* its columns */
    csv_col cols[MAX_COLS];
    csv_layout lay;     /* what identifies a row and its time (n_index: 0 before) */
    size_t ent;         /* the last row's entity (tm_entity's hint) */
    char last_date[16]; /* csv_time's date cache, for the general path */
    long last_days;
    bool warned_mismatch[MAX_COLS], noted_mw[MAX_COLS]; /* notes once per column */
    /* GPUs an error line of the tool marked lost: the time of their loss is that of the
     * next row read (the error line has none); the last good sample stays theirs. */
    size_t pending_lost[8], n_pending;
    /* The timestamp column (from 1) of the row whose time does not read ("2025/02/30", a
     * word): the row functions return PFI_ERR_PARSE, csv_line says where; 0 none. */
    size_t bad_t_col;
    span f[MAX_COLS + 1]; /* the current line's fields */
    double fv[MAX_COLS];  /* its values, when a fast path took it */
#if TM_FAST_LINES
    bool simd;         /* the TM_SIMD_TARGET copy of the block path */
    csv_fast_state fs; /* the fast paths' caches */
#endif
} csv_state;

/* A fresh reader state; with --fields (options.csv_fields) the header is that list. */
static pfi_error csv_begin(pfi_telemetry *tm, csv_state *st, pfi_diag *diag)
{
    st->last_date[0] = '\0';
    st->last_days = 0;
    st->ncol = 0;
    st->have_header = false;
    st->ent = (size_t)-1;
    st->bad_t_col = 0;
    memset(st->warned_mismatch, 0, sizeof st->warned_mismatch);
    memset(st->noted_mw, 0, sizeof st->noted_mw);
    st->lay.n_index = 0;
    st->n_pending = 0;
    st->generic = tm->opt.generic_rows;
#if TM_FAST_LINES
    st->simd = tm_use_simd(tm->opt.no_simd);
    memset(&st->fs, 0, sizeof st->fs);
    st->fs.ts_len = SIZE_MAX;
#endif
    if (tm->opt.csv_fields != NULL) {
        const char *q = tm->opt.csv_fields;
        st->ncol = split_char(q, strlen(q), ',', st->f);
        if (st->ncol > MAX_COLS)
            return PFI_ERR_LIMIT;
        pfi_error e = map_csv_header(tm, st->f, st->ncol, st->cols, 0, diag);
        if (e != PFI_OK)
            return e;
        csv_layout_of(st->cols, st->ncol, &st->lay);
        st->have_header = true;
    }
    return PFI_OK;
}

#if TM_FAST_LINES
/* The block path over the buffered rows, when the layout is the common one (one index
 * column, at most one timestamp, no bus id); what it leaves goes the per-line way. Never
 * on line 1: the per-line path strips a byte order mark there. */
static inline pfi_error csv_take_block(pfi_telemetry *tm, tm_lines *r, csv_state *st,
                                       const char *name)
{
    if (!(st->have_header && st->ncol > 0 && !st->generic && st->n_pending == 0 && r->line > 0 &&
          st->lay.n_index == 1 && st->lay.n_time <= 1 && st->lay.n_bus == 0))
        return PFI_OK;
    long rows;
    size_t n;
    pfi_error e;
    const char *blk = tm_lines_peek(r, &n);
    size_t used = csv_block(tm, blk, n, st->cols, &st->lay, st->ncol, &st->fs, name, r->line, &rows,
                            &e, st->simd);
    tm_lines_skip(r, used, rows);
    return e;
}
#endif

/* The fields of line t (trimmed, not empty) in st->f (and, on a fast path, the values in
 * st->fv): their number, MAX_COLS + 1 when there are more; *fast when a fast path took it.
 * Headers start with a lower-case name; data rows never take the fast path then. */
static inline size_t csv_split_line(csv_state *st, span t, bool *fast)
{
    bool ok = st->have_header && st->ncol > 0 && !st->generic && !(t.s[0] >= 'a' && t.s[0] <= 'z');
#if TM_FAST_LINES
    if (ok && t.n < 128)
        ok = csv_fast_line(t.s, t.n, st->cols, st->lay.ulen, st->ncol, st->f, st->fv);
    else
#endif
        ok = ok && csv_fast_row(t.s, t.n, st->cols, st->ncol, st->f, st->fv);
    *fast = ok;
    return ok ? st->ncol : split_char(t.s, t.n, ',', st->f);
}

/* A header of k fields (the first line, or a re-print when several captures were
 * appended): the columns mapped again. */
static pfi_error csv_header(pfi_telemetry *tm, csv_state *st, size_t k, long line, pfi_diag *diag)
{
    pfi_error e = map_csv_header(tm, st->f, k, st->cols, line, diag);
    if (e != PFI_OK)
        return e;
    st->ncol = k;
    csv_layout_of(st->cols, st->ncol, &st->lay);
    st->have_header = true;
    return PFI_OK;
}

/* A row of k fields under a header of another count: a lone field is the tool's text
 * (quoted; "... for GPU<bus>: ..." marks that GPU lost), else a note. Counted skipped. */
static void csv_bad_count(pfi_telemetry *tm, csv_state *st, span t, size_t k, const char *name,
                          long line)
{
    if (k == 1) {
        char bus[32];
        tm_tool_error(tm, name, line, t.s, t.n);
        if (error_line_bus(t.s, t.n, bus, sizeof bus)) {
            for (size_t i = 0; i < tm->n_entities; i++)
                if (tm->entities[i].bus && strcmp(tm->entities[i].bus, bus) == 0 &&
                    !tm->entities[i].lost) {
                    tm_mark_lost(tm, i, NAN);
                    if (st->n_pending < sizeof st->pending_lost / sizeof st->pending_lost[0])
                        st->pending_lost[st->n_pending++] = i;
                }
        }
    } else {
        tm_note(tm, "%s:%ld: row has %zu field%s, header has %zu: skipped", name, line, k,
                TM_PLURAL(k), st->ncol);
    }
    tm->n_skipped++;
}

#if TM_FAST_LINES
/* Whether a fast row goes csv_indexed_row's way: the common layout, an index short enough
 * for the cache. */
static inline bool csv_indexed(const csv_state *st)
{
    return st->lay.n_index == 1 && st->lay.n_time <= 1 && st->lay.n_bus == 0 &&
           st->f[st->lay.index_col].n <= 16;
}

/* The common row of k fields — one index column, at most one timestamp, no bus id: the
 * entity from the cache, the time from the previous row when its text is the same (8 GPUs
 * share each timestamp), every value straight into its series. */
static inline pfi_error csv_indexed_row(pfi_telemetry *tm, csv_state *st, size_t k,
                                        const char *name, long line)
{
    span ix = st->f[st->lay.index_col];
    size_t slot;
    /* the time first: a row refused for it makes no GPU (as csv_general_row) */
    double tsec = 0;
    bool has_t = false;
    if (st->lay.n_time == 1) {
        csv_fast_time(tm, &st->fs, st->f[st->lay.time_col], &tsec, &has_t, false);
        if (!has_t) {
            st->bad_t_col = st->lay.time_col + 1;
            return PFI_ERR_PARSE;
        }
    }
    pfi_error e;
    if (!tm_kc_get(&st->fs.kc, ix.s, ix.n, &slot, &st->ent)) {
        char ename[64];
        gpu_name(ename, ix);
        if ((e = tm_entity(tm, ename, strlen(ename), &st->ent)) != PFI_OK)
            return e == PFI_ERR_LIMIT ? PFI_OK : e; /* past the entity limit: noted, dropped */
        tm_kc_put(&st->fs.kc, ix.s, ix.n, st->ent);
        int sx = csv_small_ix(ix.s, ix.n);
        if (sx >= 0)
            st->fs.ix_ent[sx] = st->ent + 1;
    }
    double tt = tm_row_time(tm, st->ent, has_t, tsec, false, line, name);
    for (size_t i = 0; i < k; i++)
        if (st->cols[i].role == COL_VALUE &&
            (e = tm_put_ok(tm, st->ent, st->cols[i].field, tt, st->fv[i])) != PFI_OK)
            return e;
    pfi_telemetry_entity *en = &tm->entities[st->ent];
    if (st->lay.n_value > 0 && !en->lost)
        en->last_good_t_s = tt;
    tm->n_rows++;
    return PFI_OK;
}
#endif

/* Whether x is a NaN spelling ("nan", "NaN", "-nan", ...): not a number, though the core
 * takes it as a missing token; a reader that prints it met a bug, said as inf is. */
static bool nan_word(span x)
{
    size_t i = x.n > 0 && (x.s[0] == '-' || x.s[0] == '+') ? 1 : 0;
    return x.n - i == 3 && (x.s[i] | 0x20) == 'n' && (x.s[i + 1] | 0x20) == 'a' &&
           (x.s[i + 2] | 0x20) == 'n';
}

/* A value cell x of column i with a unit after its number (from its first blank, b, as the
 * fast paths split it): the unit must agree with the header's; mW under [W] is converted
 * (noted once per column), another unit rejects the cell (noted once per column), a blank
 * and no unit is not a number. */
static pfi_value_status csv_cell_with_unit(pfi_telemetry *tm, csv_state *st, size_t i, span x,
                                           size_t b, double *v, const char *name, long line)
{
    const csv_col *col = &st->cols[i];
    span num = {x.s, b};
    span unit = span_trim((span){x.s + b + 1, x.n - num.n - 1});
    pfi_value_status vs = tm_number(num.s, num.n, v);
    if (vs == PFI_VALUE_MISSING && nan_word(num))
        return PFI_VALUE_INVALID;
    if (vs == PFI_VALUE_OK && !span_eq(unit, col->unit)) {
        if (span_eq(unit, "mW") && strcmp(col->unit, "W") == 0) {
            *v /= 1000.0; /* explicit conversion, never a silent rescale */
            if (!st->noted_mw[i])
                tm_note(tm,
                        "%s:%ld: column %s: a value in mW under the header's [W]: "
                        "converted to W (noted once per column)",
                        name, line, tm->fields[col->field].source);
            st->noted_mw[i] = true;
        } else {
            if (!st->warned_mismatch[i])
                tm_note(tm,
                        "%s:%ld: value unit '%.*s' contradicts %s unit '%s' in "
                        "column %s: cell rejected",
                        name, line, (int)(unit.n > 16 ? 16 : unit.n), unit.s,
                        col->unit_documented ? "the field's documented" : "header", col->unit,
                        tm->fields[col->field].source);
            st->warned_mismatch[i] = true;
            vs = PFI_VALUE_MISSING;
        }
    } else if (vs == PFI_VALUE_OK && unit.n == 0) {
        vs = PFI_VALUE_INVALID;
    }
    return vs;
}

/* The value of cell x of value column i on the general path (*v; NaN unless OK): a fast
 * row's converted value; a "[...]" placeholder is missing ("[GPU is lost]" and "[GPU
 * requires reset]" set *lost); else a number, with or without a unit. What is not a
 * number is noted and missing. */
static pfi_value_status csv_cell(pfi_telemetry *tm, csv_state *st, size_t i, span x, bool fast,
                                 double *v, bool *lost, const char *name, long line)
{
    if (fast) {
        *v = st->fv[i];
        return PFI_VALUE_OK;
    }
    if (x.n > 0 && x.s[0] == '[') {
        if (span_eq(x, "[GPU is lost]") || span_eq(x, "[GPU requires reset]"))
            *lost = true;
        return PFI_VALUE_MISSING;
    }
    size_t b = tm_find_blank(x.s, 0, x.n);
    pfi_value_status vs =
        b < x.n ? csv_cell_with_unit(tm, st, i, x, b, v, name, line) : tm_number(x.s, x.n, v);
    if (vs == PFI_VALUE_MISSING && nan_word(x))
        vs = PFI_VALUE_INVALID; /* noted as inf is, and missing */
    if (vs == PFI_VALUE_INVALID) {
        char q[TM_QUOTE_LEN], c[TM_QUOTE_LEN];
        const char *src = tm->fields[st->cols[i].field].source;
        tm_note(tm, "%s:%ld: column %s: '%s' is not a number: cell rejected", name, line,
                tm_quote(c, src, strlen(src), 60), tm_quote(q, x.s, x.n, 40));
        vs = PFI_VALUE_MISSING;
    }
    return vs;
}

/* The general path for a row of k fields: identity and time first (index, bus id,
 * timestamp), then every value cell with the missing-value rules and notes. */
static pfi_error csv_general_row(pfi_telemetry *tm, csv_state *st, size_t k, bool fast,
                                 const char *name, long line)
{
    const span *f = st->f;
    const csv_col *cols = st->cols;
    char ename[64] = "gpu";
    double tsec = 0;
    bool has_t = false;
    char bus[32] = "";
    span uuid = {"", 0}, host = {"", 0};
    for (size_t i = 0; i < k; i++) {
        if (cols[i].role == COL_INDEX)
            gpu_name(ename, f[i]);
        else if (cols[i].role == COL_BUS)
            norm_bus(f[i], bus, sizeof bus);
        else if (cols[i].role == COL_TIMESTAMP) {
            bool ok = false;
            csv_time(tm, f[i], st->last_date, sizeof st->last_date, &st->last_days, &tsec, &ok);
            if (!ok) { /* never a nominal time for a row whose timestamp is not one */
                st->bad_t_col = i + 1;
                return PFI_ERR_PARSE;
            }
            has_t = true;
        } else if (cols[i].role == COL_TSEC) {
            if (tm_number(f[i].s, f[i].n, &tsec) != PFI_VALUE_OK || !tm_epoch_valid(tsec)) {
                st->bad_t_col = i + 1; /* never nominal times for a t_s that is no time */
                return PFI_ERR_PARSE;
            }
            has_t = true;
            tm->time_relative = true;
            tm->time_from_start = true;
        } else if (cols[i].role == COL_UUID && f[i].n > 4 && f[i].n < 96 &&
                   (memcmp(f[i].s, "GPU-", 4) == 0 || memcmp(f[i].s, "MIG-", 4) == 0))
            uuid = f[i];
        else if (cols[i].role == COL_HOST && f[i].n > 0 && f[i].n < 200 &&
                 memchr(f[i].s, '/', f[i].n) == NULL)
            host = f[i];
    }
    bool has_index = false;
    for (size_t i = 0; i < k; i++)
        has_index |= cols[i].role == COL_INDEX;
    if (!has_index && bus[0] != '\0')
        snprintf(ename, sizeof ename, "gpu-%s", bus);
    /* The GPU is its UUID when the file gives one (an index or bus id is only a label within
     * one host), and its host is the row's own when a column gives it. */
    /* The clock event reasons of the row: the mask column, or the bits of the per-reason
     * columns ("Active" / "Not Active"); missing when no reason cell is readable. */
    unsigned long long reasons = 0;
    bool have_reasons = false, any_reason_col = false;
    size_t reason_field = 0;
    for (size_t i = 0; i < k; i++) {
        if (cols[i].role != COL_REASON)
            continue;
        any_reason_col = true;
        reason_field = cols[i].field;
        span x = f[i];
        if (cols[i].bit == 0) {
            char hx[24];
            char *end = NULL;
            if (x.n > 0 && x.n < sizeof hx) {
                memcpy(hx, x.s, x.n);
                hx[x.n] = '\0';
                unsigned long long m = strtoull(hx, &end, 0);
                if (end != hx && *end == '\0') {
                    reasons |= m;
                    have_reasons = true;
                }
            }
        } else if (span_eq(x, "Active")) {
            reasons |= cols[i].bit;
            have_reasons = true;
        } else if (span_eq(x, "Not Active")) {
            have_reasons = true;
        }
    }
    char key[320];
    if (uuid.n > 0 && host.n > 0)
        snprintf(key, sizeof key, "%.*s/%.*s", (int)host.n, host.s, (int)uuid.n, uuid.s);
    else if (uuid.n > 0)
        snprintf(key, sizeof key, "%.*s", (int)uuid.n, uuid.s);
    else if (host.n > 0)
        snprintf(key, sizeof key, "%.*s/%s", (int)host.n, host.s, ename);
    else
        snprintf(key, sizeof key, "%s", ename);
    pfi_error e;
    if ((e = tm_entity(tm, key, strlen(key), &st->ent)) != PFI_OK)
        return e == PFI_ERR_LIMIT ? PFI_OK : e; /* past the entity limit: noted, dropped */
    pfi_telemetry_entity *en = &tm->entities[st->ent];
    if (uuid.n > 0 && host.n == 0 && en->host == NULL && tm->file_host != NULL)
        en->host = tm_strndup(tm->file_host, strlen(tm->file_host));
    if (bus[0] != '\0' && en->bus == NULL)
        en->bus = tm_strndup(bus, strlen(bus));
    double tt = tm_row_time(tm, st->ent, has_t, tsec, false, line, name);
    bool any_good = false, lost = false;
    for (size_t i = 0; i < k; i++) {
        if (cols[i].role != COL_VALUE)
            continue;
        double v = NAN;
        pfi_value_status vs = csv_cell(tm, st, i, f[i], fast, &v, &lost, name, line);
        if (vs == PFI_VALUE_OK && cols[i].scale != 1 && !tm_is_dcgm_blank(v))
            v *= cols[i].scale;
        any_good |= vs == PFI_VALUE_OK;
        if ((e = tm_put(tm, st->ent, cols[i].field, tt, vs, v, -1, false)) != PFI_OK)
            return e;
    }
    if (any_reason_col &&
        (e = tm_put(tm, st->ent, reason_field, tt, have_reasons ? PFI_VALUE_OK : PFI_VALUE_MISSING,
                    have_reasons ? (double)reasons : NAN, -1, false)) != PFI_OK)
        return e;
    en = &tm->entities[st->ent];
    if (lost)
        tm_mark_lost(tm, st->ent, tt);
    else if (any_good && !en->lost)
        en->last_good_t_s = tt;
    tm->n_rows++;
    return PFI_OK;
}

/* One line handed out by the line reader (line: its number): a header, a row, or the
 * tool's text. */
static inline pfi_error csv_line(pfi_telemetry *tm, csv_state *st, const char *s, size_t n,
                                 long line, const char *name, pfi_diag *diag)
{
    if (line == 1 && n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
        s += 3;
        n -= 3;
    }
    span t = span_trim((span){s, n});
    if (t.n == 0)
        return PFI_OK;
    bool fast;
    size_t k = csv_split_line(st, t, &fast);
    if (k > MAX_COLS) {
        tm_too_many_columns(tm, name, line, MAX_COLS, "MAX_COLS", "src/lib/telemetry/nvidia_smi.c");
        return PFI_OK;
    }
    if (!fast && looks_like_header(st->f, k))
        return csv_header(tm, st, k, line, diag);
    if (!st->have_header) {
        if (diag != NULL) {
            diag->line = line;
            snprintf(diag->message, sizeof diag->message,
                     "CSV has no header; pass the --query-gpu field list (--fields)");
        }
        return PFI_ERR_PARSE;
    }
    if (k != st->ncol) {
        csv_bad_count(tm, st, t, k, name, line);
        return PFI_OK;
    }
    pfi_error e;
#if TM_FAST_LINES
    if (fast && csv_indexed(st))
        e = csv_indexed_row(tm, st, k, name, line);
    else
#endif
        e = csv_general_row(tm, st, k, fast, name, line);
    if (e == PFI_ERR_PARSE && st->bad_t_col > 0) {
        if (diag != NULL) {
            char q[TM_QUOTE_LEN];
            span x = span_trim(st->f[st->bad_t_col - 1]);
            diag->line = line;
            if (st->cols[st->bad_t_col - 1].role == COL_TSEC)
                snprintf(diag->message, sizeof diag->message,
                         "column %zu (t_s): '%s' is not a valid time (seconds from the "
                         "recording's start, a number 0 to 253402300799.999)",
                         st->bad_t_col, tm_quote(q, x.s, x.n, 40));
            else
                snprintf(diag->message, sizeof diag->message,
                         "column %zu (timestamp): '%s' is not a valid time (a date "
                         "YYYY/MM/DD of the calendar, HH:MM:SS[.fff] of 00:00:00 to 23:59:60, an "
                         "offset to +-23:59, epoch seconds 1970 to 9999)",
                         st->bad_t_col, tm_quote(q, x.s, x.n, 40));
        }
        return e;
    }
    if (e == PFI_OK && st->n_pending > 0 && st->ent < tm->n_entities) {
        double t_row = tm->entities[st->ent].last_t;
        for (size_t i = 0; i < st->n_pending; i++) {
            pfi_telemetry_entity *en = &tm->entities[st->pending_lost[i]];
            if (st->pending_lost[i] != st->ent && isnan(en->lost_t_s))
                en->lost_t_s = t_row;
        }
        st->n_pending = 0;
    }
    return e;
}

pfi_error tm_read_smi_csv(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag)
{
    csv_state st;
    pfi_error e = csv_begin(tm, &st, diag);
    if (e != PFI_OK)
        return e;
    for (;;) {
        const char *s;
        size_t n;
        bool eof;
#if TM_FAST_LINES
        if ((e = csv_take_block(tm, r, &st, name)) != PFI_OK)
            return e;
#endif
        e = tm_lines_next(r, &s, &n, &eof);
        if (e != PFI_OK)
            return e;
        if (eof)
            break;
        /* A capture cut short (the tool killed mid-write): a last line without its newline
           is read as it is when its fields are all there (fewer: skipped, as any short
           row), but said, since its last value may be cut ("25" of "250.00 W"). */
        span tail = span_trim((span){s, n});
        if (r->cut && tail.n > 0)
            tm_note(tm,
                    "%s:%ld: the last line has no newline (a capture cut short?): its last "
                    "value may be cut",
                    name, r->line);
        if ((e = csv_line(tm, &st, s, n, r->line, name, diag)) != PFI_OK)
            return e;
    }
    return PFI_OK;
}

/* ---- dmon ---- */

/*
 * The units row under a dmon header ("# Idx W C C % % ..."): each value column's unit is
 * honoured — power in W, mW or kW (scale[i] to W), percent "%", temperature "C", clocks MHz or
 * GHz, memory MB — or, when it is not the unit the field is kept in, the column is refused
 * (fields[i] = SIZE_MAX, noted): never read as if in the field's unit.
 */
static void dmon_units(pfi_telemetry *tm, const span *u, size_t k, size_t ncol, size_t *fields,
                       double *scale, const char *name, long line)
{
    for (size_t i = 0; i < k && i < ncol; i++) {
        if (fields[i] == SIZE_MAX || span_eq(u[i], "-"))
            continue;
        const pfi_telemetry_field *fl = &tm->fields[fields[i]];
        bool power = fl->kind == PFI_KIND_POWER_W || fl->kind == PFI_KIND_LIMIT_W;
        bool clock = strstr(fl->name, "clock_mhz") != NULL;
        bool temp = strcmp(fl->name, "temp_c") == 0 || strcmp(fl->name, "mem_temp_c") == 0;
        double sc = NAN;
        if (power)
            sc = span_eq(u[i], "W")    ? 1.0
                 : span_eq(u[i], "mW") ? 1e-3
                 : span_eq(u[i], "kW") ? 1e3
                                       : NAN;
        else if (fl->kind == PFI_KIND_PERCENT)
            sc = span_eq(u[i], "%") ? 1.0 : NAN;
        else if (fl->kind == PFI_KIND_RATIO) /* a DCGM fraction: "%" normalised to it */
            sc = span_eq(u[i], "%") ? 0.01 : NAN;
        else if (clock)
            sc = span_eq(u[i], "MHz") ? 1.0 : span_eq(u[i], "GHz") ? 1e3 : NAN;
        else if (temp)
            sc = span_eq(u[i], "C") ? 1.0 : NAN;
        else
            sc = 1.0; /* a field without a unit of its own: kept as printed */
        if (isnan(sc)) {
            char q[TM_QUOTE_LEN];
            tm_note(tm,
                    "%s:%ld: column %s: unit '%s' in the units row is not one pfi converts "
                    "for this field: column refused",
                    name, line, fl->source, tm_quote(q, u[i].s, u[i].n, 16));
            fields[i] = SIZE_MAX;
        } else {
            scale[i] = sc;
        }
    }
}

pfi_error tm_read_dmon(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag)
{
    span f[MAX_COLS + 1];
    size_t fields[MAX_COLS];
    double scale[MAX_COLS];
    int date_col = -1, time_col = -1, gpu_col = -1;
    size_t ncol = 0;
    char prev_header[1024] = "";
    bool expect_units = false;
    size_t ent = (size_t)-1;
    for (;;) {
        const char *s;
        size_t n;
        bool eof;
        pfi_error e = tm_lines_next(r, &s, &n, &eof);
        if (e != PFI_OK)
            return e;
        if (eof)
            break;
        span t = span_trim((span){s, n});
        if (t.n == 0)
            continue;
        if (t.s[0] == '#') {
            size_t k = span_split_ws(t.s + 1, t.n - 1, f, MAX_COLS);
            if (k > MAX_COLS) {
                tm_too_many_columns(tm, name, r->line, MAX_COLS, "MAX_COLS",
                                    "src/lib/telemetry/nvidia_smi.c");
                continue;
            }
            bool units = k > 0 && (span_eq(f[0], "Idx") || span_eq(f[0], "YYYYMMDD") ||
                                   span_eq(f[0], "HH:MM:SS"));
            if (units || expect_units) {
                if (expect_units && ncol > 0)
                    dmon_units(tm, f, k, ncol, fields, scale, name, r->line);
                expect_units = false;
                continue;
            }
            char hdr[1024];
            snprintf(hdr, sizeof hdr, "%.*s", (int)(t.n > 1000 ? 1000 : t.n), t.s);
            if (prev_header[0] != '\0' && strcmp(hdr, prev_header) != 0)
                tm_note(tm, "%s:%ld: dmon header changed: columns re-mapped", name, r->line);
            snprintf(prev_header, sizeof prev_header, "%s", hdr);
            date_col = time_col = gpu_col = -1;
            for (size_t i = 0; i < k; i++) {
                scale[i] = 1.0;
                fields[i] = SIZE_MAX; /* not a value column (Date, Time, gpu: each of them,
                                         also when a header names one twice) */
                if (span_eq(f[i], "Date"))
                    date_col = (int)i;
                else if (span_eq(f[i], "Time"))
                    time_col = (int)i;
                else if (span_eq(f[i], "gpu") || span_eq(f[i], "Idx"))
                    gpu_col = (int)i;
                else if ((e = tm_field(tm, f[i].s, f[i].n, &fields[i])) == PFI_ERR_LIMIT)
                    fields[i] = SIZE_MAX; /* past the field limit (noted): not read */
                else if (e != PFI_OK)
                    return e;
            }
            /* A value column named twice, or two giving one field: refused (Date, Time
             * and gpu repeated stay read as before: they give no field). */
            if (tm_header_twice(tm, f, fields, k, 0, r->line, true, diag) != PFI_OK)
                return PFI_ERR_PARSE;
            ncol = k;
            expect_units = true;
            continue;
        }
        expect_units = false;
        size_t k = span_split_ws(t.s, t.n, f, MAX_COLS);
        if (ncol == 0 || k != ncol || gpu_col < 0) {
            if (ncol == 0 || gpu_col < 0)
                tm_tool_error(tm, name, r->line, t.s, t.n);
            else
                tm_note(tm, "%s:%ld: row has %zu column%s, header has %zu: skipped", name, r->line,
                        k, TM_PLURAL(k), ncol);
            tm->n_skipped++;
            continue;
        }
        char ename[64];
        gpu_name(ename, f[gpu_col]);
        if ((e = tm_entity(tm, ename, strlen(ename), &ent)) == PFI_ERR_LIMIT)
            continue; /* past the entity limit: noted, the row dropped */
        if (e != PFI_OK)
            return e;
        double tsec = 0, tod = 0;
        long days = 0;
        bool has_t = false, tod_only = false, bad_t = false;
        if (time_col >= 0) {
            if (!parse_tod(f[time_col], &tod))
                bad_t = true;
            if (date_col >= 0) {
                if (!parse_date(f[date_col], &days))
                    bad_t = true;
            } else {
                tod_only = true;
                days = 0;
                if (tm->opt.start_date > 0) {
                    long sd = tm->opt.start_date;
                    days = tm_days_from_civil(sd / 10000, (unsigned)(sd / 100 % 100),
                                              (unsigned)(sd % 100));
                } else {
                    tm->time_relative = true;
                }
            }
            tsec = (double)days * 86400.0 + tod;
            if (!tod_only || tm->opt.start_date > 0) /* a date: a local time in the zone */
                tsec = tm_local_time(tm, tsec);
            has_t = !bad_t;
        }
        if (bad_t) { /* never a row at another time than its own: said, as the CSV's */
            if (diag != NULL) {
                char qd[TM_QUOTE_LEN], qt[TM_QUOTE_LEN];
                span d = date_col >= 0 ? f[date_col] : (span){"", 0};
                diag->line = r->line;
                snprintf(diag->message, sizeof diag->message,
                         "columns %s%s (date, time): '%s%s%s' is not a valid time (a date "
                         "YYYYMMDD of the calendar, HH:MM:SS of 00:00:00 to 23:59:60)",
                         date_col >= 0 ? "YYYYMMDD, " : "", "HH:MM:SS", tm_quote(qd, d.s, d.n, 20),
                         d.n > 0 ? " " : "", tm_quote(qt, f[time_col].s, f[time_col].n, 20));
            }
            return PFI_ERR_PARSE;
        }
        double tt = tm_row_time(tm, ent, has_t, tsec, tod_only, r->line, name);
        for (size_t i = 0; i < k; i++) {
            if ((int)i == date_col || (int)i == time_col || (int)i == gpu_col ||
                fields[i] == SIZE_MAX)
                continue;
            double v = NAN;
            pfi_value_status st = tm_number(f[i].s, f[i].n, &v);
            if (st == PFI_VALUE_INVALID) {
                char q[TM_QUOTE_LEN];
                tm_note(tm, "%s:%ld: '%s' is not a number: cell rejected", name, r->line,
                        tm_quote(q, f[i].s, f[i].n, 40));
                st = PFI_VALUE_MISSING;
            }
            if (st == PFI_VALUE_OK && !tm_is_dcgm_blank(v))
                v *= scale[i];
            if ((e = tm_put(tm, ent, fields[i], tt, st, v, -1, false)) != PFI_OK)
                return e;
        }
        tm->n_rows++;
    }
    return PFI_OK;
}

/* ---- nvidia-smi -q ---- */

/* "Wed Jan 14 07:21:09 2026" (nvidia-smi -q's Timestamp, host-local, no zone) as naive
 * seconds since 1970; false when it is not one. */
bool tm_smi_stamp(const char *text, size_t len, double *out)
{
    span v = span_trim((span){text, len});
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    span w[5];
    size_t k = 0, i = 0;
    while (k < 5 && i < v.n) {
        while (i < v.n && v.s[i] == ' ')
            i++;
        size_t j = i;
        while (j < v.n && v.s[j] != ' ')
            j++;
        if (j > i)
            w[k++] = (span){v.s + i, j - i};
        i = j;
    }
    if (k != 5 || w[1].n != 3 || w[2].n < 1 || w[2].n > 2 || w[4].n != 4)
        return false;
    const char *m = NULL;
    for (size_t q = 0; q < 12 && m == NULL; q++)
        if (memcmp(months + 3 * q, w[1].s, 3) == 0)
            m = months + 3 * q;
    double tod;
    unsigned day = 0, year = 0;
    for (size_t q = 0; q < w[2].n; q++)
        day = day * 10 + (unsigned)(w[2].s[q] - '0');
    for (size_t q = 0; q < 4; q++) {
        if (w[4].s[q] < '0' || w[4].s[q] > '9')
            return false;
        year = year * 10 + (unsigned)(w[4].s[q] - '0');
    }
    if (m == NULL || !parse_tod(w[3], &tod))
        return false;
    unsigned mon = (unsigned)((m - months) / 3 + 1);
    if (!tm_civil_valid((long)year, mon, day))
        return false;
    *out = (double)tm_days_from_civil((long)year, mon, day) * 86400.0 + tod;
    return true;
}

/* A bus id looked up in query_entity's index. */
typedef struct query_bus_key {
    const pfi_telemetry *tm;
    const char *bus;
} query_bus_key;

static bool query_bus_eq(const void *ctx, size_t ix)
{
    const query_bus_key *k = ctx;
    const pfi_telemetry_entity *en = &k->tm->entities[ix];
    return en->bus != NULL && strcmp(en->bus, k->bus) == 0 && en->file_no == k->tm->n_files;
}

/* The entity of a -q GPU block for bus id bus ("" when none): the GPU of this file with that
 * bus (a looped -q -l capture repeats its GPUs), else a new "gpu<n>", n the GPUs of this file
 * so far. bix indexes by bus the entities this file's blocks were given (only they have this
 * file's file_no), so that a capture of many GPUs is not a scan of them all per block. */
static pfi_error query_entity(pfi_telemetry *tm, hidx *bix, const char *bus, size_t *ordinal,
                              size_t *ent)
{
    if (bus[0] != '\0') {
        query_bus_key k = {tm, bus};
        size_t i = hidx_find(bix, hidx_hash(bus, strlen(bus), HIDX_SEED), query_bus_eq, &k);
        if (i != SIZE_MAX) {
            *ent = i;
            return PFI_OK;
        }
    }
    char ename[64];
    snprintf(ename, sizeof ename, "gpu%zu", (*ordinal)++);
    pfi_error e = tm_entity(tm, ename, strlen(ename), ent);
    if (e == PFI_OK && bus[0] != '\0' && tm->entities[*ent].bus == NULL &&
        (tm->entities[*ent].bus = tm_strndup(bus, strlen(bus))) == NULL)
        e = PFI_ERR_NOMEM;
    const char *eb = e == PFI_OK ? tm->entities[*ent].bus : NULL;
    if (eb != NULL && hidx_add(bix, hidx_hash(eb, strlen(eb), HIDX_SEED), *ent) != PFI_OK)
        e = PFI_ERR_NOMEM;
    return e;
}

/* The NVML reason bit of a -q "Clocks Event Reasons" line ("HW Slowdown"), 0 when none. */
static unsigned query_reason_bit(span key)
{
    static const struct {
        const char *key;
        unsigned bit;
    } keys[] = {{"Idle", 0x1},
                {"Applications Clocks Setting", 0x2},
                {"SW Power Cap", 0x4},
                {"HW Slowdown", 0x8},
                {"Sync Boost", 0x10},
                {"SW Thermal Slowdown", 0x20},
                {"HW Thermal Slowdown", 0x40},
                {"HW Power Brake Slowdown", 0x80},
                {"Display Clock Setting", 0x100}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (span_eq(key, keys[i].key))
            return keys[i].bit;
    return 0;
}

/* A GPU block's clock event reasons, stored as one mask sample when the block ends. */
typedef struct query_reasons {
    bool in_section, have;
    unsigned long long mask;
} query_reasons;

static pfi_error query_reasons_flush(pfi_telemetry *tm, query_reasons *qr, size_t ent, double t)
{
    pfi_error e = PFI_OK;
    size_t fid;
    if (qr->have && (e = tm_field(tm, "clocks_event_reasons.active", 27, &fid)) == PFI_OK)
        e = tm_put(tm, ent, fid, t, PFI_VALUE_OK, (double)qr->mask, -1, false);
    if (e == PFI_ERR_LIMIT)
        e = PFI_OK; /* past the field limit (noted): not read */
    *qr = (query_reasons){0};
    return e;
}

static pfi_error query_read(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag,
                            hidx *bix)
{
    size_t ent = (size_t)-1;
    bool have_ent = false, skip_section = false;
    size_t section_indent = 0;
    query_reasons qr = {0};
    double tt = 0, stamp = 0;
    bool have_stamp = false;
    size_t ordinal = 0;
    for (;;) {
        const char *s;
        size_t n;
        bool eof;
        pfi_error e = tm_lines_next(r, &s, &n, &eof);
        if (e != PFI_OK)
            return e;
        if (eof)
            break;
        size_t ind = 0;
        while (ind < n && s[ind] == ' ')
            ind++;
        span t = span_trim((span){s, n});
        if (t.n == 0)
            continue;
        if (ind == 0 && t.n > 9 && memcmp(t.s, "Timestamp", 9) == 0) {
            /* A snapshot's own time: its GPU blocks are samples at it. */
            const char *c = memchr(t.s, ':', t.n);
            have_stamp = c != NULL && tm_smi_stamp(c + 1, (size_t)(t.s + t.n - c - 1), &stamp);
            if (!have_stamp && c != NULL) { /* "Wed Feb 30 ...": said, never nominal times */
                if (diag != NULL) {
                    char q[TM_QUOTE_LEN];
                    span v = span_trim((span){c + 1, (size_t)(t.s + t.n - c - 1)});
                    diag->line = r->line;
                    snprintf(diag->message, sizeof diag->message,
                             "Timestamp: '%s' is not a valid time (\"Wed Jan 14 07:21:09 2026\": "
                             "a day of the month's calendar, 00:00:00 to 23:59:60)",
                             tm_quote(q, v.s, v.n, 40));
                }
                return PFI_ERR_PARSE;
            }
            stamp = tm_local_time(tm, stamp);
            continue;
        }
        if (ind == 0 && t.n > 4 && memcmp(t.s, "GPU ", 4) == 0) {
            if (have_ent && (e = query_reasons_flush(tm, &qr, ent, tt)) != PFI_OK)
                return e;
            char bus[32] = "";
            if (!norm_bus(span_trim((span){t.s + 4, t.n - 4}), bus, sizeof bus))
                bus[0] = '\0';
            if ((e = query_entity(tm, bix, bus, &ordinal, &ent)) == PFI_ERR_LIMIT) {
                have_ent = false; /* past the entity limit (noted): the block is not read */
                continue;
            }
            if (e != PFI_OK)
                return e;
            tt = tm_row_time(tm, ent, have_stamp, stamp, false, r->line, name);
            have_ent = true;
            skip_section = false;
            tm->n_rows++;
            continue;
        }
        const char *colon = memchr(t.s, ':', t.n);
        if (colon == NULL) {
            /* A section title: skip module / memory power and sample-history blocks. */
            span title = t;
            skip_section = span_eq(title, "Module Power Readings") ||
                           span_eq(title, "GPU Memory Power Readings") ||
                           span_eq(title, "Power Samples") || span_eq(title, "Power Smoothing") ||
                           span_eq(title, "Workload Power Profiles");
            qr.in_section =
                span_eq(title, "Clocks Event Reasons") || span_eq(title, "Clocks Throttle Reasons");
            section_indent = ind;
            continue;
        }
        if (skip_section && ind <= section_indent)
            skip_section = false;
        if (!have_ent || skip_section)
            continue;
        span key = span_trim((span){t.s, (size_t)(colon - t.s)});
        span val = span_trim((span){colon + 1, (size_t)(t.s + t.n - colon - 1)});
        if (qr.in_section && ind <= section_indent)
            qr.in_section = false;
        if (qr.in_section) {
            unsigned bit = query_reason_bit(key);
            if (bit != 0 && (span_eq(val, "Active") || span_eq(val, "Not Active"))) {
                qr.have = true;
                if (span_eq(val, "Active"))
                    qr.mask |= bit;
            }
            continue;
        }
        if (span_eq(key, "GPU UUID") && val.n > 4 && val.n < 96 && tm->entities[ent].uuid == NULL) {
            if ((tm->entities[ent].uuid = tm_strndup(val.s, val.n)) == NULL)
                return PFI_ERR_NOMEM;
            continue;
        }
        const char *canon;
        pfi_telemetry_kind kind;
        int id;
        char kb[128];
        snprintf(kb, sizeof kb, "%.*s", (int)(key.n > 120 ? 120 : key.n), key.s);
        pfi_telemetry_field_info(kb, &canon, &kind, &id);
        if (kind != PFI_KIND_POWER_W && kind != PFI_KIND_LIMIT_W)
            continue;
        size_t fid;
        if ((e = tm_field(tm, kb, strlen(kb), &fid)) == PFI_ERR_LIMIT)
            continue; /* past the field limit (noted): not read */
        if (e != PFI_OK)
            return e;
        double v = NAN;
        pfi_value_status st;
        if (val.n > 2 && val.s[val.n - 1] == 'W' && val.s[val.n - 2] == ' ')
            st = tm_parse_number(val.s, val.n - 2, &v);
        else
            st = tm_parse_number(val.s, val.n, &v);
        if (st == PFI_VALUE_INVALID)
            st = PFI_VALUE_MISSING;
        if ((e = tm_put(tm, ent, fid, tt, st, v, -1, false)) != PFI_OK)
            return e;
    }
    if (have_ent)
        return query_reasons_flush(tm, &qr, ent, tt);
    return PFI_OK;
}

pfi_error tm_read_smi_query(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag)
{
    hidx bix = {0};
    pfi_error e = query_read(tm, r, name, diag, &bix);
    hidx_free(&bix);
    return e;
}
