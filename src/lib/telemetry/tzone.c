/*
 * Time zones for zone-less local timestamps (DESIGN §9: every sample has an absolute time):
 * a zone's UTC offsets over time read from its TZif file (RFC 8536; the tz database's
 * /usr/share/zoneinfo files), and the conversion of a local wall-clock time to UTC with the
 * two answers of a daylight-saving fall-back (the repeated hour) and none in a
 * spring-forward (the skipped hour) left to the caller to choose by file order.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "telemetry/internal.h"

/* A zone: n transitions at[i] (UTC seconds) after which the offset is off[i] (s east of
 * UTC); before the first, off0. */
struct tm_zone {
    size_t n;
    int64_t *at;
    int32_t *off;
    int32_t off0;
    bool sorted; /* at[] non-decreasing (every TZif file): tm_zone_to_utc's short cut */
    char name[128];
};

#define TZIF_MAX_BYTES (1u << 20) /* a TZif file is a few KiB; more is not one */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
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
        z->sorted = true;
        for (uint32_t i = 1; i < tcnt; i++)
            z->sorted &= z->at[i - 1] <= z->at[i];
        return true;
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
    snprintf(path, sizeof path, "%s%s", name[0] == '/' ? "" : "/usr/share/zoneinfo/", name);
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
        if (i == z->n || (hi_t < (double)z->at[i] && u < (double)z->at[i])) {
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
