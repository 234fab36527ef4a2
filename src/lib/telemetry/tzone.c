/*
 * Time zones for zone-less local timestamps (DESIGN §9: every sample has an absolute time):
 * a zone's UTC offsets over time read from its TZif file (RFC 8536; the tz database's
 * /usr/share/zoneinfo files), and the conversion of a local wall-clock time to UTC with the
 * two answers of a daylight-saving fall-back (the repeated hour) and none in a
 * spring-forward (the skipped hour) left to the caller to choose by file order.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "telemetry/internal.h"

/* A POSIX TZ rule (the TZif footer, RFC 8536 §3.3): standard offset, and when dst is set
 * the daylight offset between the start and end days ("Mm.w.d", at a local time). */
typedef struct tz_rule {
    bool ok, dst;
    int32_t std_off, dst_off;     /* s east of UTC */
    int mon[2], week[2], wday[2]; /* start, end: Mm.w.d */
    int32_t at[2];                /* local time of day of each change, s */
} tz_rule;

/* A zone: n transitions at[i] (UTC seconds) after which the offset is off[i] (s east of
 * UTC); before the first, off0; after the last, the footer's rule when it has one (a "slim"
 * TZif file lists no transition its rule gives; a "fat" one stops at 2037). */
struct tm_zone {
    size_t n;
    int64_t *at;
    int32_t *off;
    int32_t off0;
    tz_rule rule;
    bool sorted; /* at[] non-decreasing (every TZif file): tm_zone_to_utc's short cut */
    char name[128];
};

/* "[+-]hh[:mm[:ss]]" at *p into seconds; advances. */
static bool tz_hms(const char **p, const char *e, int32_t *out)
{
    int sign = 1;
    if (*p < e && (**p == '+' || **p == '-'))
        sign = *(*p)++ == '-' ? -1 : 1;
    int32_t v[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        if (*p >= e || **p < '0' || **p > '9')
            return k > 0;
        int x = 0, nd = 0;
        while (*p < e && **p >= '0' && **p <= '9' && nd < 3)
            x = x * 10 + (*(*p)++ - '0'), nd++;
        v[k] = x;
        if (k == 2 || *p >= e || **p != ':') {
            *out = sign * (v[0] * 3600 + v[1] * 60 + v[2]);
            return v[0] <= 167 && v[1] <= 59 && v[2] <= 59;
        }
        (*p)++;
    }
    return false;
}

/* A zone abbreviation ("CET", "<+0530>") at *p; advances. */
static bool tz_name(const char **p, const char *e)
{
    const char *s = *p;
    if (s < e && *s == '<') {
        while (s < e && *s != '>')
            s++;
        if (s >= e)
            return false;
        *p = s + 1;
        return true;
    }
    while (s < e && ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
        s++;
    if (s - *p < 3)
        return false;
    *p = s;
    return true;
}

/* ",Mm.w.d[/time]" at *p into rule change k; advances. (The Jn and n day forms are not read:
 * the rule is then not used.) */
static bool tz_change(const char **p, const char *e, tz_rule *r, int k)
{
    if (*p >= e || **p != ',' || *p + 1 >= e || (*p)[1] != 'M')
        return false;
    *p += 2;
    int v[3];
    for (int i = 0; i < 3; i++) {
        if (*p >= e || **p < '0' || **p > '9')
            return false;
        v[i] = 0;
        while (*p < e && **p >= '0' && **p <= '9' && v[i] < 100)
            v[i] = v[i] * 10 + (*(*p)++ - '0');
        if (i < 2 && (*p >= e || *(*p)++ != '.'))
            return false;
    }
    if (v[0] < 1 || v[0] > 12 || v[1] < 1 || v[1] > 5 || v[2] > 6)
        return false;
    r->mon[k] = v[0];
    r->week[k] = v[1];
    r->wday[k] = v[2];
    r->at[k] = 7200;
    if (*p < e && **p == '/') {
        (*p)++;
        return tz_hms(p, e, &r->at[k]);
    }
    return true;
}

/* The POSIX TZ string s[0..n) into *r (r->ok false when it is not one pfi reads). */
static void tz_rule_parse(const char *s, size_t n, tz_rule *r)
{
    const char *p = s, *e = s + n;
    memset(r, 0, sizeof *r);
    int32_t w;
    if (!tz_name(&p, e) || !tz_hms(&p, e, &w))
        return;
    r->std_off = r->dst_off = -w; /* POSIX offsets are west of UTC */
    if (p == e) {
        r->ok = true;
        return;
    }
    if (!tz_name(&p, e))
        return;
    r->dst_off = r->std_off + 3600;
    if (p < e && *p != ',') {
        if (!tz_hms(&p, e, &w))
            return;
        r->dst_off = -w;
    }
    if (!tz_change(&p, e, r, 0) || !tz_change(&p, e, r, 1) || p != e)
        return;
    r->dst = r->ok = true;
}

/* The UTC time of rule change k in year y (its local time in the offset before it). */
static double tz_change_utc(const tz_rule *r, long y, int k)
{
    unsigned m = (unsigned)r->mon[k];
    long first = tm_days_from_civil(y, m, 1);
    int dow1 = (int)(((first % 7) + 7 + 4) % 7); /* 1970-01-01 was a Thursday */
    long d = 1 + (r->wday[k] - dow1 + 7) % 7 + (r->week[k] - 1) * 7;
    while (!tm_civil_valid(y, m, (unsigned)d))
        d -= 7; /* week 5: the last such day */
    int32_t before = k == 0 ? r->std_off : r->dst_off;
    return (double)(first + d - 1) * 86400.0 + r->at[k] - before;
}

/* The civil year of day days since 1970 (Hinnant's civil_from_days, the year only). */
static long tz_year_of_day(long days)
{
    long z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    long doe = z - era * 146097, yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    return yoe + era * 400 + (mp >= 10);
}

/* The rule's offset at utc. */
static int32_t tz_rule_offset(const tz_rule *r, double utc)
{
    if (!r->dst || !(fabs(utc) < 1e13)) /* (past any civil year: no rule to apply) */
        return r->std_off;
    long y = tz_year_of_day((long)floor((utc + r->std_off) / 86400.0));
    double a = tz_change_utc(r, y, 0), b = tz_change_utc(r, y, 1);
    bool in = a < b ? (utc >= a && utc < b) : !(utc >= b && utc < a);
    return in ? r->dst_off : r->std_off;
}

#define TZIF_MAX_BYTES (1u << 20) /* a TZif file is a few KiB; more is not one */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

#define TZ_RULE_TABLE_END_YEAR 2200 /* the rule's changes written into the table up to it */

/* The footer rule's changes from the table's end (1970 for a table without one) to
 * TZ_RULE_TABLE_END_YEAR appended to z's table, so that its search answers them as it
 * answers a fat file's own (and tm_zone_to_utc's short cut holds); past them the rule is
 * applied as it stands. A rule without daylight time that repeats the table's last offset adds
 * nothing and is dropped. false: out of memory. */
static bool tz_rule_extend(tm_zone *z)
{
    tz_rule *r = &z->rule;
    if (!r->ok)
        return true;
    if (!r->dst) {
        r->ok = r->std_off != (z->n > 0 ? z->off[z->n - 1] : z->off0);
        return true;
    }
    double from = z->n > 0 ? (double)z->at[z->n - 1] : 0.0;
    long y0 = tz_year_of_day((long)floor(from / 86400.0));
    if (y0 > TZ_RULE_TABLE_END_YEAR)
        return true;
    if (y0 < 1800) /* (a table ending before 1800, or a forged time: at most 401 years) */
        y0 = 1800;
    size_t room = z->n + 2 * (size_t)(TZ_RULE_TABLE_END_YEAR - y0 + 1);
    int64_t *at = pfi_realloc(z->at, room * sizeof *at);
    if (at == NULL)
        return false;
    z->at = at;
    int32_t *off = pfi_realloc(z->off, room * sizeof *off);
    if (off == NULL)
        return false;
    z->off = off;
    for (long y = y0; y <= TZ_RULE_TABLE_END_YEAR; y++) {
        double a = tz_change_utc(r, y, 0), b = tz_change_utc(r, y, 1);
        double t[2] = {a < b ? a : b, a < b ? b : a};
        int32_t o[2] = {a < b ? r->dst_off : r->std_off, a < b ? r->std_off : r->dst_off};
        for (int k = 0; k < 2; k++)
            if (t[k] > from && (z->n == 0 || t[k] > (double)z->at[z->n - 1])) {
                z->at[z->n] = (int64_t)t[k];
                z->off[z->n] = o[k];
                z->n++;
            }
    }
    return true;
}

/* The TZif data b[0..n) into z: the version 2+ (64-bit) block when there is one, else the
 * version 1 block. false when it is not TZif. */
static bool tzif_parse(const unsigned char *b, size_t n, tm_zone *z)
{
    if (n < 44 || memcmp(b, "TZif", 4) != 0)
        return false;
    size_t pos = 0;
    int width = 4;
    for (int pass = 0; pass < 2; pass++) {
        if (pos + 44 > n || memcmp(b + pos, "TZif", 4) != 0)
            return false;
        uint32_t isut = be32(b + pos + 20), isstd = be32(b + pos + 24), leap = be32(b + pos + 28),
                 tcnt = be32(b + pos + 32), typ = be32(b + pos + 36), chr = be32(b + pos + 40);
        if (tcnt > 100000 || typ == 0 || typ > 256 || leap > 100000)
            return false;
        size_t body = (size_t)tcnt * width + tcnt + (size_t)typ * 6 + chr +
                      (size_t)leap * (width + 4) + isstd + isut;
        size_t data = pos + 44;
        if (data + body > n)
            return false;
        if (pass == 0 && b[4] >= '2') { /* skip to the 64-bit block */
            pos = data + body;
            width = 8;
            continue;
        }
        const unsigned char *tt = b + data + (size_t)tcnt * width + tcnt;
        z->n = tcnt;
        z->at = pfi_malloc((tcnt ? tcnt : 1) * sizeof *z->at);
        z->off = pfi_malloc((tcnt ? tcnt : 1) * sizeof *z->off);
        if (z->at == NULL || z->off == NULL)
            return false;
        for (uint32_t i = 0; i < tcnt; i++) {
            const unsigned char *p = b + data + (size_t)i * width;
            z->at[i] = width == 8 ? be64(p) : (int32_t)be32(p);
            unsigned k = b[data + (size_t)tcnt * width + i];
            if (k >= typ)
                return false;
            z->off[i] = (int32_t)be32(tt + 6 * k);
        }
        z->off0 = (int32_t)be32(tt);
        /* version 2+: the footer "\nTZ\n" after the 64-bit block, the rule past the table */
        size_t foot = data + body;
        if (width == 8 && foot + 2 <= n && b[foot] == '\n') {
            const unsigned char *end = memchr(b + foot + 1, '\n', n - foot - 1);
            if (end != NULL)
                tz_rule_parse((const char *)b + foot + 1, (size_t)(end - b - foot - 1), &z->rule);
        }
        z->sorted = true;
        for (uint32_t i = 1; i < tcnt; i++)
            z->sorted &= z->at[i - 1] <= z->at[i];
        return !z->sorted || tz_rule_extend(z);
    }
    return false;
}

void tm_zone_free(tm_zone *z)
{
    if (z == NULL)
        return;
    pfi_free(z->at);
    pfi_free(z->off);
    pfi_free(z);
}

pfi_error tm_zone_load(const char *name, tm_zone **out)
{
    *out = NULL;
    tm_zone *z = pfi_calloc(1, sizeof *z);
    if (z == NULL)
        return PFI_ERR_NOMEM;
    snprintf(z->name, sizeof z->name, "%s", name);
    if (strcmp(name, "UTC") == 0 || strcmp(name, "Z") == 0 || strcmp(name, "Etc/UTC") == 0) {
        z->sorted = true;
        *out = z; /* no transitions, offset 0 */
        return PFI_OK;
    }
    if (strstr(name, "..") != NULL) {
        pfi_free(z);
        return PFI_ERR_INVALID_ARGUMENT;
    }
    char path[512];
    bool is_path = name[0] == '/' || strncmp(name, "./", 2) == 0; /* a TZif file's path */
    snprintf(path, sizeof path, "%s%s", is_path ? "" : "/usr/share/zoneinfo/", name);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        pfi_free(z);
        return PFI_ERR_IO;
    }
    unsigned char *b = pfi_malloc(TZIF_MAX_BYTES);
    size_t n = b ? fread(b, 1, TZIF_MAX_BYTES, f) : 0;
    fclose(f);
    bool ok = b != NULL && tzif_parse(b, n, z);
    pfi_free(b);
    if (!ok) {
        tm_zone_free(z);
        return b == NULL ? PFI_ERR_NOMEM : PFI_ERR_PARSE;
    }
    *out = z;
    return PFI_OK;
}

const char *tm_zone_name(const tm_zone *z)
{
    return z->name;
}

int32_t tm_zone_offset(const tm_zone *z, double utc)
{
    if (z->rule.ok && (z->n == 0 || utc >= (double)z->at[z->n - 1]))
        return tz_rule_offset(&z->rule, utc);
    if (z->n == 0 || utc < (double)z->at[0])
        return z->off0;
    size_t lo = 0, hi = z->n; /* the last transition at or before utc */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((double)z->at[mid] <= utc)
            lo = mid;
        else
            hi = mid;
    }
    return z->off[lo];
}

int tm_zone_to_utc(const tm_zone *z, double local, double utc[2])
{
    /* The common case first, with the answer the search below gives: no transition
     * between the outer probes (local -+ two days; those between lie between them, the
     * rounding being monotonic), so every probe finds the one offset o, and local - o
     * inside that stretch too: one answer. */
    if (z->sorted) {
        double lo_t = local + -2 * 86400.0, hi_t = local + 2 * 86400.0;
        size_t i = 0; /* 1 + the last transition at or before lo_t; 0: none */
        if (z->n > 0 && !(lo_t < (double)z->at[0])) {
            size_t lo = 0, hi = z->n;
            while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if ((double)z->at[mid] <= lo_t)
                    lo = mid;
                else
                    hi = mid;
            }
            i = lo + 1;
        }
        int32_t o = i == 0 ? z->off0 : z->off[i - 1];
        double u = local - o;
        bool after_start = i == 0 ? z->n == 0 || u < (double)z->at[0] : (double)z->at[i - 1] <= u;
        /* (past the last transition the footer's rule, when there is one, decides: the
         * search below asks tm_zone_offset, which applies it) */
        if (i == z->n ? !z->rule.ok : (hi_t < (double)z->at[i] && u < (double)z->at[i])) {
            if (after_start) {
                utc[0] = u;
                return 1;
            }
        }
    }
    /* Every offset in force within two days of local is a candidate: local - o is an
     * answer when o is the offset there. Two answers: the repeated hour; none: the skipped
     * hour. */
    int32_t cand[8];
    int nc = 0;
    for (int k = -2; k <= 2; k++) {
        int32_t o = tm_zone_offset(z, local + k * 86400.0);
        bool seen = false;
        for (int i = 0; i < nc; i++)
            seen |= cand[i] == o;
        if (!seen && nc < 8)
            cand[nc++] = o;
    }
    int m = 0;
    for (int i = 0; i < nc && m < 2; i++) {
        double u = local - cand[i];
        if (tm_zone_offset(z, u) == cand[i])
            utc[m++] = u;
    }
    if (m == 2 && utc[1] < utc[0]) {
        double t = utc[0];
        utc[0] = utc[1];
        utc[1] = t;
    }
    return m;
}
