/*
 * tm_zone_to_utc (src/lib/telemetry/tzone.c) against its definition: every offset in force
 * within two days of the local time is a candidate, and local - o is an answer when o is
 * the offset at local - o (the two answers of a fall-back hour ordered, none in a
 * spring-forward gap). The function answers the common case (no transition near, one
 * offset) with one search; this holds it, bit for bit and in the count of answers, to the
 * definition computed here from tm_zone_offset alone — around every transition of zones
 * with whole-hour, half-hour and two-hour changes, a skipped day and long histories, and at
 * random local times from 1875 to 2160, NaN and infinities included. Zones missing from
 * /usr/share/zoneinfo are skipped (UTC needs no file); at least one real zone must load.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "telemetry/internal.h"

/* The definition (tzone.c's search before its short cut), from tm_zone_offset only. */
static int to_utc_def(const tm_zone *z, double local, double utc[2])
{
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

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* One local time: the same count of answers and the same answers, bit for bit. */
static long check(const tm_zone *z, const char *name, double local)
{
    double a[2] = {-1, -1}, b[2] = {-1, -1};
    int ma = tm_zone_to_utc(z, local, a), mb = to_utc_def(z, local, b);
    if (ma == mb && memcmp(a, b, sizeof a) == 0)
        return 0;
    print_error("%s, local %.17g: %d answer(s) %.17g %.17g, the definition %d: %.17g %.17g\n", name,
                local, ma, a[0], a[1], mb, b[0], b[1]);
    return 1;
}

static void same_as_definition(void **state)
{
    (void)state;
    static const char *zones[] = {
        "UTC",
        "Europe/Berlin",
        "America/New_York",
        "Australia/Lord_Howe",
        "Pacific/Apia",
        "Asia/Kolkata",
        "America/Sao_Paulo",
        "Africa/Casablanca",
        "Antarctica/Troll",
        "Europe/Dublin",
        "Pacific/Kiritimati",
        "America/St_Johns",
    };
    long bad = 0, n = 0;
    int loaded = 0;
    for (size_t zi = 0; zi < sizeof zones / sizeof zones[0]; zi++) {
        tm_zone *z;
        if (tm_zone_load(zones[zi], &z) != PFI_OK)
            continue;
        loaded++;
        /* Around each change of offset (found by steps of 13 h, so within 13 h of the
         * transition), local times up to four days either side: whole seconds, halves
         * and milliseconds. Then at random. */
        int32_t probe_off = 0;
        for (double u = -3.2e9; u < 6.0e9; u += 3600.0 * 13.0) {
            int32_t o = tm_zone_offset(z, u);
            if (o == probe_off && u > -3.2e9)
                continue;
            probe_off = o;
            for (int j = 0; j < 3000; j++) {
                double d = (double)((int64_t)(next() % 700000) - 350000);
                if (j % 3 == 0)
                    d += (double)(next() % 1000) / 1000.0;
                if (j % 5 == 0)
                    d = (double)((int64_t)(next() % 20000) - 10000) + 0.5;
                bad += check(z, zones[zi], u + o + d);
                n++;
            }
        }
        for (int j = 0; j < 100000; j++) {
            double local =
                (double)((int64_t)(next() % 9000000000ULL) - 3000000000LL) + (j & 1 ? 0.25 : 0.0);
            bad += check(z, zones[zi], local);
            n++;
        }
        const double special[] = {NAN, INFINITY, -INFINITY, 0.0, -1e300, 1e300};
        for (size_t j = 0; j < sizeof special / sizeof special[0]; j++) {
            bad += check(z, zones[zi], special[j]);
            n++;
        }
        tm_zone_free(z);
    }
    print_message("%d zones, %ld local times, %ld differ\n", loaded, n, bad);
    assert_true(loaded >= 2); /* UTC and at least one zone with transitions */
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_as_definition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
