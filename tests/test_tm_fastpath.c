/*
 * The readers' fast row paths against their general path (differential test).
 *
 * The dcgmi dmon and nvidia-smi CSV readers take common rows through block and per-line
 * fast paths; their contract is that the result is exactly the general path's. Every input
 * here is read three times — with options.generic_rows, as shipped, and with
 * options.no_simd (the fast paths' baseline copy, without the run-time-selected AVX2/BMI
 * one), and inputs over 200 kB a fourth time from a temporary file through mapped windows
 * (options.map_files) — under several formats and options, and tm_compare (tm_compare.h) must find
 * no difference in counters, notes, entities, fields or series (sums and samples bit for bit), nor
 * in the error returned.
 *
 * Inputs: every file under the directories given on the command line (the fuzz corpora
 * and the field-report cases), and generated ones: bench-like dcgmi and CSV streams of up
 * to 2.5 MB (so reads cross the 1 MiB block edge) with random damage drawn from what real
 * files contain — placeholders, DCGM blank sentinels, out-of-range values, tabs, CRLF,
 * blank and long lines, repeated headers, error sentences, unit mismatches, numbers too
 * long for the fast conversion, time going backwards, a byte order mark, NUL bytes in a
 * date.
 *
 * Usage: test_tm_fastpath [DIR|FILE]...   Exit 0 when all agree, 1 at the first difference
 * (the input's name and the difference printed).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tm_compare.h"

static const char *csv_fields = "timestamp, index, power.draw [W], power.limit [W], "
                                "utilization.gpu [%], temperature.gpu";

static size_t n_compared;

/* Read data[0..size) with opt (generic_rows as given) into *out; returns the error. */
static pfi_error read_one(const char *data, size_t size, pfi_telemetry_format fmt,
                          const pfi_telemetry_options *opt, pfi_telemetry **out, pfi_diag *d)
{
    *out = NULL;
    if (pfi_telemetry_create(opt, out) != PFI_OK)
        return PFI_ERR_NOMEM;
    FILE *f = size ? fmemopen((void *)data, size, "r") : fopen("/dev/null", "r");
    if (f == NULL)
        return PFI_ERR_IO;
    pfi_error e = pfi_telemetry_read_stream(*out, f, "input", fmt, d);
    fclose(f);
    return e;
}

/* read_one through a temporary regular file read with options.map_files: a sliding window
 * of mappings instead of the stream's buffer (inputs over 192 KiB: the first 64 KiB are read,
 * and a window is mapped while at least 128 KiB are left). */
static size_t n_mapped;
static pfi_error read_mapped(const char *data, size_t size, pfi_telemetry_format fmt,
                             const pfi_telemetry_options *opt, pfi_telemetry **out, pfi_diag *d)
{
    *out = NULL;
    pfi_telemetry_options o = *opt;
    o.map_files = true;
    if (pfi_telemetry_create(&o, out) != PFI_OK)
        return PFI_ERR_NOMEM;
    FILE *f = tmpfile();
    if (f == NULL || fwrite(data, 1, size, f) != size || fflush(f) != 0 || fseek(f, 0, SEEK_SET))
        return PFI_ERR_IO;
    pfi_error e = pfi_telemetry_read_stream(*out, f, "input", fmt, d);
    fclose(f);
    n_mapped++;
    return e;
}

/* Both ways under every format and option set; 0 and a message at the first difference. */
static int check(const char *name, const char *data, size_t size)
{
    static const pfi_telemetry_format fmts[] = {PFI_TELEMETRY_AUTO, PFI_TELEMETRY_DCGMI_DMON,
                                                PFI_TELEMETRY_SMI_CSV, PFI_TELEMETRY_SMI_DMON};
    for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++)
        for (int variant = 0; variant < 4; variant++) {
            pfi_telemetry_options o = {.keep_series = variant & 1,
                                       .interval_s = variant & 2 ? 0 : 1,
                                       .max_power_w = variant == 1 ? 700 : 0};
            if (variant == 2 && fmts[fi] == PFI_TELEMETRY_SMI_CSV)
                o.csv_fields = csv_fields;
            /* the general path, then the fast paths as the CPU allows and without SIMD */
            pfi_telemetry *b;
            pfi_diag db;
            o.generic_rows = true;
            pfi_error eb = read_one(data, size, fmts[fi], &o, &b, &db);
            o.generic_rows = false;
            for (int simd = 0; simd < 3; simd++) {
                if (simd == 2 && size < 200000)
                    break;
                o.no_simd = simd == 1;
                pfi_telemetry *a;
                pfi_diag da;
                pfi_error ea = simd == 2 ? read_mapped(data, size, fmts[fi], &o, &a, &da)
                                         : read_one(data, size, fmts[fi], &o, &a, &da);
                char why[2048] = "";
                int same = ea == eb && a != NULL && b != NULL;
                if (!same)
                    snprintf(why, sizeof why, "error %s / %s", pfi_strerror(ea), pfi_strerror(eb));
                else if (ea != PFI_OK && (da.line != db.line || strcmp(da.message, db.message)))
                    snprintf(why, sizeof why, "diag %ld '%.300s' / %ld '%.300s'", da.line,
                             da.message, db.line, db.message),
                        same = 0;
                else
                    same = tm_compare(a, b, why, sizeof why);
                pfi_telemetry_destroy(a);
                n_compared++;
                if (!same) {
                    fprintf(stderr,
                            "%s (format %d, variant %d%s): fast and general paths "
                            "differ: %s\n",
                            name, (int)fmts[fi], variant,
                            simd == 2 ? ", mapped"
                            : simd    ? ", no SIMD"
                                      : "",
                            why);
                    pfi_telemetry_destroy(b);
                    return 0;
                }
            }
            pfi_telemetry_destroy(b);
        }
    return 1;
}

/* ---- generated inputs ---- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static uint64_t rnd(void) /* xorshift64*: reproducible, good enough to pick damage */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static unsigned pick(unsigned n)
{
    return (unsigned)(rnd() % n);
}

typedef struct text {
    char *s;
    size_t n, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    if ((size_t)k >= sizeof tmp)
        k = sizeof tmp - 1;
    if (t->n + (size_t)k + 1 > t->cap) {
        t->cap = (t->n + (size_t)k + 1) * 2;
        t->s = realloc(t->s, t->cap);
        if (t->s == NULL)
            abort();
    }
    memcpy(t->s + t->n, tmp, (size_t)k);
    t->n += (size_t)k;
}

static void put_raw(text *t, const char *s, size_t n)
{
    if (t->n + n + 1 > t->cap) {
        t->cap = (t->n + n + 1) * 2;
        t->s = realloc(t->s, t->cap);
        if (t->s == NULL)
            abort();
    }
    memcpy(t->s + t->n, s, n);
    t->n += n;
}

/* A value token: nearly always a plain decimal, sometimes anything a real file holds. */
static void value(text *t, double base, int decimals, int damage)
{
    if (damage && pick(40) == 0) {
        static const char *odd[] = {"N/A",
                                    "N/W",
                                    "N/S",
                                    "[N/A]",
                                    "[Not Supported]",
                                    "-",
                                    "1e5",
                                    "-0",
                                    "2147483647",
                                    "140737488355328.000",
                                    "12345678901234567",
                                    "0.123456789",
                                    "123456789.5",
                                    ".5",
                                    "5.",
                                    "-.25",
                                    "1.2.3",
                                    "+4",
                                    "1000",
                                    "101",
                                    "99999999",
                                    "0x10",
                                    "nan",
                                    "inf",
                                    "9223372036854775807",
                                    "-3",
                                    "00000000007.50"};
        put(t, "%s", odd[pick(sizeof odd / sizeof odd[0])]);
        return;
    }
    put(t, "%.*f", decimals, base);
}

static void blank(text *t, int damage, int width)
{
    if (damage && pick(60) == 0) {
        put(t, pick(2) ? "\t" : " \t ");
        return;
    }
    put(t, "%*s", width, "");
}

static void eol(text *t, int damage)
{
    put(t, damage && pick(50) == 0 ? "\r\n" : "\n");
}

static void gen_dcgmi(text *t, size_t target, int damage)
{
    put(t, "#Entity    POWER        TOTEC                TMPTR        SMACT        DRAMA\n"
           "ID\n");
    for (uint64_t tick = 0; t->n < target; tick++)
        for (int g = 0; g < 8; g++) {
            uint64_t i = tick * 8 + (uint64_t)g;
            if (damage && pick(400) == 0) {
                static const char *lines[] = {
                    "",
                    "   ",
                    "#Entity    POWER        TOTEC                TMPTR        SMACT        DRAMA",
                    "ID",
                    "Error setting watches. Result: -15: Host engine is not valid any longer",
                    "GPU 3      250.000",
                    "GPU 1 1 2 3 4 5 6 7",
                    "GPU-I 3    100.5      1      2      0.1      0.2",
                    "# Entity POWER TOTEC TMPTR SMACT DRAMA",
                    ("GPU 0      250.000      9876543210           40           0.123        0.456"
                     "      0.123        0.456      0.123        0.456      0.123        0.456"),
                    "5      250.000      9876543210           40           0.123        0.456"};
                put(t, "%s", lines[pick(sizeof lines / sizeof lines[0])]);
                eol(t, damage);
                continue;
            }
            put(t, "GPU %d", damage && pick(200) == 0 ? 9 : g);
            blank(t, damage, 6);
            value(t, 250 + (double)((i * 7) % 450) + 0.125, 3, damage);
            blank(t, damage, 6);
            value(t, 9876543210.0 + (double)tick * 3000 + g, damage && pick(30) == 0 ? 2 : 0,
                  damage);
            blank(t, damage, 11);
            value(t, 40 + (double)(i % 40), 0, damage);
            blank(t, damage, 11);
            value(t, (double)(i % 1000) / 1000, 3, damage);
            blank(t, damage, 8);
            value(t, (double)(i % 997) / 1000, 3, damage);
            if (damage && pick(100) == 0)
                put(t, "   ");
            eol(t, damage);
        }
}

/* wide: four more columns, rows of 90-100 bytes (the block path's two-word masks). */
static void gen_csv(text *t, size_t target, int damage, int header, int maxcol, int wide)
{
    if (damage && pick(4) == 0)
        put(t, "\xEF\xBB\xBF");
    if (header)
        put(t,
            "timestamp, index, power.draw [W], power.limit [W], utilization.gpu [%%], "
            "temperature.gpu%s%s\n",
            maxcol ? ", power.max_limit [W]" : "",
            wide ? ", utilization.memory [%], clocks.sm [MHz], clocks.mem [MHz], "
                   "memory.used [MiB]"
                 : "");
    long start = 86400 - 60;
    for (uint64_t tick = 0; t->n < target; tick++) {
        long ms = (long)tick * 100;
        if (damage && pick(300) == 0)
            ms -= 5000; /* time goes back */
        long s = start + ms / 1000, day = 14 + s / 86400, sod = s % 86400;
        char ts[64];
        snprintf(ts, sizeof ts, "2025/05/%02ld %02ld:%02ld:%02ld.%03ld", day, sod / 3600,
                 sod / 60 % 60, sod % 60, ((ms % 1000) + 1000) % 1000);
        for (int g = 0; g < 8; g++) {
            uint64_t i = tick * 8 + (uint64_t)g;
            if (damage && pick(300) == 0) {
                static const char *lines[] = {
                    "",
                    "  ",
                    "timestamp, index, power.draw [W], power.limit [W], utilization.gpu [%], "
                    "temperature.gpu",
                    "Unable to determine the device handle for GPU0000:3D:00.0: Unknown Error",
                    "2025/05/14 23:59:59.000, 1, [GPU is lost], [GPU is lost], [GPU is lost], [GPU "
                    "is lost]",
                    "2025/05/14 23:59:59.000, 2, 200.25 W, 700.00 W, 5 %",
                    "2025/05/14 23:59:59.000, 3, 200250 mW, 700.00 W, 5 %, 40",
                    "2025/05/14 23:59:59.000, 4, 200.25 W, 700.00 W, 5 %, 40, 1, 2, 3, 4, 5, 6, 7, "
                    "8, 9, 10, 11, 12",
                    "2025/05/14 23:59:59.000, 5, 200.25 W, 700.00 W, 5 %, 40                       "
                    "               ",
                    "garbage, 1, 2 W, 3 W, 4 %, 5",
                    ", , , , ,",
                    "2025/05/14 23:59:59.000,,1 W,2 W,3 %,4"};
                put(t, "%s", lines[pick(sizeof lines / sizeof lines[0])]);
                eol(t, damage);
                continue;
            }
            if (damage && pick(400) == 0) { /* NUL bytes inside the date */
                char raw[64];
                size_t n = (size_t)snprintf(raw, sizeof raw, "%.10s%c%c%s,", ts, 0, 0, ts + 10);
                put_raw(t, raw, n);
            } else {
                put(t, "%s,", damage && pick(500) == 0 ? "2025/13/40 25:61:61.000" : ts);
            }
            blank(t, damage, 1);
            if (damage && pick(200) == 0)
                put(t, "%s,", (const char *[]){"11", "0", "00", "07", "70", "007", "1a"}[pick(7)]);
            else
                put(t, "%d,", g);
            blank(t, damage, 1);
            value(t, 200 + (double)((i * 7) % 450) + 0.25, 2, damage);
            put(t, damage && pick(200) == 0   ? " mW,"
                   : damage && pick(200) == 0 ? " %%,"
                   : damage && pick(100) == 0 ? "\tW,"
                   : damage && pick(100) == 0 ? "W,"
                   : damage && pick(100) == 0 ? "  W,"
                   : damage && pick(100) == 0 ? " W ,"
                   : damage && pick(200) == 0 ? " W W,"
                   : damage && pick(200) == 0 ? " WW,"
                                              : " W,");
            blank(t, damage, 1);
            value(t, 700, 2, damage);
            put(t, " W,");
            blank(t, damage, 1);
            value(t, (double)(i % 101), 0, damage);
            put(t, damage && pick(300) == 0 ? "," : " %%,");
            blank(t, damage, 1);
            value(t, 40 + (double)(i % 40), 0, damage);
            if (maxcol) {
                put(t, ", ");
                value(t, 700 + (double)(tick % 3) * 10, 2, damage);
                put(t, " W");
            }
            if (wide) {
                put(t, ",");
                blank(t, damage, 1);
                value(t, (double)((i * 3) % 101), 0, damage);
                put(t, " %%, ");
                value(t, 1410 - (double)(i % 50), 0, damage);
                put(t, damage && pick(200) == 0 ? " MHz ," : " MHz, ");
                value(t, 1593, 0, damage);
                put(t, " MHz, ");
                value(t, 12345 + (double)(i % 100000), 0, damage);
                put(t, damage && pick(200) == 0 ? "  MiB" : " MiB");
            }
            eol(t, damage);
        }
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!tm_walk(argv[i], check))
            return 1;
    size_t files = n_compared;
    for (int round = 0; round < 24; round++) {
        text t = {NULL, 0, 0};
        size_t target = round < 4 ? 2500000 : 2000 + pick(60000);
        int damage = round % 4 != 0;
        char name[64];
        if (round % 2 == 0) {
            gen_dcgmi(&t, target, damage);
            snprintf(name, sizeof name, "generated dcgmi #%d", round);
        } else {
            gen_csv(&t, target, damage, round % 3 != 0, round % 5 == 1, round % 4 == 3);
            snprintf(name, sizeof name, "generated csv #%d", round);
        }
        int ok = check(name, t.s, t.n);
        free(t.s);
        if (!ok)
            return 1;
    }
    printf("fast and general paths agree: %zu reads of the given files, %zu of generated "
           "inputs (%zu of them mapped, options.map_files)\n",
           files, n_compared - files, n_mapped);
    if (n_mapped == 0)
        return 1; /* the mapped read must be exercised */
    return 0;
}
