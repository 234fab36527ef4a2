/*
 * The collector's count_means_only mode against storing every sample (differential test).
 *
 * With options.count_means_only the fields pfi_reduce_power only averages are counted, not
 * stored, power limits and clock event reasons keep their changes only, and the power derived
 * from the energy counter keeps its times only beside a measured power field. Its contract:
 * with warm-up 0 the reduction (pfi_reduced, every byte) and the notes are exactly those of
 * the stored samples, unless the collector says it cannot vouch for them
 * (tm->counted_inexact, where pfi ingest reads the input again storing everything). Every
 * input here is read both ways, auto-detected, under several reduce options, and compared.
 * Constructed inputs check that the inexact cases are flagged: a field sample before the
 * series' first (a day-long clock step back) and a limit whose time goes back.
 *
 * Usage: test_tm_counted [DIR|FILE]...   Exit 0 when all agree, 1 at the first difference.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/pfi.h"
#include "tm_compare.h"

static size_t n_compared, n_inexact;

/* Read, derive, summarize and reduce data[0..size) with count_means_only as given. NULL on a
 * failed read (then *err says why). */
static pfi_telemetry *read_one(const char *data, size_t size, bool counted, pfi_error *err)
{
    pfi_telemetry_options o = {.keep_series = true, .count_means_only = counted};
    pfi_telemetry *tm;
    if ((*err = pfi_telemetry_create(&o, &tm)) != PFI_OK)
        return NULL;
    FILE *f = size ? fmemopen((void *)data, size, "r") : fopen("/dev/null", "r");
    if (f == NULL) {
        pfi_telemetry_destroy(tm);
        *err = PFI_ERR_IO;
        return NULL;
    }
    pfi_diag d;
    *err = pfi_telemetry_read_stream(tm, f, "input", PFI_TELEMETRY_AUTO, &d);
    fclose(f);
    if (*err == PFI_OK)
        *err = pfi_telemetry_derive_power_from_energy(tm);
    pfi_telemetry_summarize(tm);
    return tm;
}

static size_t n_streamed, n_stream_inexact, n_replayed, n_held, n_warm_streamed;

/* The streamed read's second pass (pfi_reduce_stream): data read again into a collector of
 * its own with the sink. */
typedef struct mem_input {
    const char *data;
    size_t size;
    size_t n_replays;
} mem_input;

static pfi_error replay_mem(void *ctx, pfi_telemetry_sample_fn fn, void *fctx)
{
    mem_input *m = ctx;
    m->n_replays++;
    n_replayed++;
    pfi_telemetry_options o = {.keep_series = true, .count_means_only = true, .stream_power = true};
    pfi_telemetry *tm;
    pfi_error e = pfi_telemetry_create(&o, &tm);
    if (e != PFI_OK)
        return e;
    pfi_telemetry_set_sink(tm, fn, fctx);
    FILE *f = m->size ? fmemopen((void *)m->data, m->size, "r") : fopen("/dev/null", "r");
    if (f == NULL) {
        pfi_telemetry_destroy(tm);
        return PFI_ERR_IO;
    }
    pfi_diag d;
    e = pfi_telemetry_read_stream(tm, f, "input", PFI_TELEMETRY_AUTO, &d);
    fclose(f);
    pfi_telemetry_destroy(tm);
    return e;
}

/* data read as pfi ingest reads it with stream_power for the reduce options ro: pass 1,
 * pfi_reduce_stream (pass 2), the derivation (nothing left to do), the summary. NULL when the
 * collector could not be made; *err the first error. */
static pfi_telemetry *read_streamed(const char *data, size_t size, const pfi_reduce_options *ro,
                                    bool guess, pfi_error *err)
{
    pfi_telemetry_options o = {.keep_series = true, .count_means_only = true, .stream_power = true};
    pfi_telemetry *tm;
    if ((*err = pfi_telemetry_create(&o, &tm)) != PFI_OK)
        return NULL;
    if (guess && (*err = pfi_reduce_stream_begin(tm, ro)) != PFI_OK) {
        pfi_telemetry_destroy(tm);
        return NULL;
    }
    FILE *f = size ? fmemopen((void *)data, size, "r") : fopen("/dev/null", "r");
    if (f == NULL) {
        pfi_telemetry_destroy(tm);
        *err = PFI_ERR_IO;
        return NULL;
    }
    pfi_diag d;
    *err = pfi_telemetry_read_stream(tm, f, "input", PFI_TELEMETRY_AUTO, &d);
    fclose(f);
    mem_input m = {data, size, 0};
    if (*err == PFI_OK)
        *err = pfi_reduce_stream(tm, ro, replay_mem, &m);
    if (*err == PFI_OK && !tm->counted_inexact) {
        *err = pfi_telemetry_derive_power_from_energy(tm);
        pfi_telemetry_summarize(tm);
    }
    return tm;
}

/* Every series' counters and sum alike (what the summary and the features read). */
static int same_series(const pfi_telemetry *a, const pfi_telemetry *b, char *why, size_t len)
{
    if (a->n_series != b->n_series) {
        snprintf(why, len, "series: %zu / %zu", a->n_series, b->n_series);
        return 0;
    }
    for (size_t i = 0; i < a->n_series; i++) {
        const pfi_telemetry_series *x = &a->series[i], *y = &b->series[i];
        if (x->entity != y->entity || x->field != y->field || x->n_valid != y->n_valid ||
            x->n_missing != y->n_missing || x->n_range != y->n_range || x->n_miss != y->n_miss ||
            memcmp(&x->sum, &y->sum, sizeof x->sum) != 0 ||
            (memcmp(&x->first_missing_t_s, &y->first_missing_t_s, sizeof(double)) != 0 &&
             !(x->first_missing_t_s != x->first_missing_t_s &&
               y->first_missing_t_s != y->first_missing_t_s))) {
            snprintf(why, len, "series %zu (entity %zu field %zu): valid %zu/%zu sum %.17g/%.17g",
                     i, x->entity, x->field, x->n_valid, y->n_valid, x->sum, y->sum);
            return 0;
        }
    }
    return 1;
}

static int same_notes(const pfi_telemetry *a, const pfi_telemetry *b)
{
    if (a->n_notes != b->n_notes || a->n_notes_dropped != b->n_notes_dropped)
        return 0;
    for (size_t i = 0; i < a->n_notes; i++)
        if (strcmp(a->notes[i], b->notes[i]) != 0)
            return 0;
    return 1;
}

static int check(const char *name, const char *data, size_t size)
{
    pfi_error ea, eb;
    pfi_telemetry *a = read_one(data, size, true, &ea);
    pfi_telemetry *b = read_one(data, size, false, &eb);
    int ok = 1;
    if (ea != eb || (a == NULL) != (b == NULL)) {
        fprintf(stderr, "%s: read error %s counted, %s stored\n", name, pfi_strerror(ea),
                pfi_strerror(eb));
        ok = 0;
    } else if (a != NULL && a->counted_inexact) {
        n_inexact++;
    } else if (a != NULL && ea == PFI_OK) {
        if (!same_notes(a, b)) {
            fprintf(stderr, "%s: notes differ\n", name);
            ok = 0;
        }
        /* The last two with a warm-up: the counted collector alone takes none (its means
         * are the streamed read's to make), so only the streamed read is compared. */
        static const double align[] = {0, 1, 4, 0, 4}, q[] = {0.1, 0.5, 1, 0.1, 0.5},
                            warm[] = {0, 0, 0, 3, 1.5};
        for (size_t k = 0; ok && k < 5; k++) {
            pfi_reduce_options ro;
            pfi_reduce_options_init(&ro);
            ro.align_s = align[k];
            ro.q = q[k];
            ro.warmup_s = warm[k];
            ro.cap_w = k == 2 ? 300 : 0;
            pfi_reduced *ra = calloc(1, sizeof *ra), *rb = calloc(1, sizeof *rb);
            if (ra == NULL || rb == NULL) {
                free(ra);
                free(rb);
                ok = 0;
                break;
            }
            pfi_error xa = pfi_reduce_power(a, &ro, ra), xb = pfi_reduce_power(b, &ro, rb);
            if (warm[k] == 0 && (xa != xb || memcmp(ra, rb, sizeof *ra) != 0)) {
                fprintf(stderr, "%s (align %g, q %g): reductions differ (%s / %s)\n", name,
                        align[k], q[k], pfi_strerror(xa), pfi_strerror(xb));
                ok = 0;
            }
            /* The streamed read (options.stream_power), with the first read's guess
             * (pfi_reduce_stream_begin) and without (always a second read): the same notes,
             * series and reduction, or flagged to be read again. */
            for (int guess = 0; ok && guess < 2; guess++) {
                pfi_error es;
                size_t replays = n_replayed;
                pfi_telemetry *c = read_streamed(data, size, &ro, guess, &es);
                bool held = guess && replays == n_replayed;
                char why[256] = "";
                if (c != NULL && es == PFI_OK && c->counted_inexact) {
                    n_stream_inexact++;
                } else if (c != NULL) {
                    memset(ra, 0, sizeof *ra);
                    pfi_error xc = es != PFI_OK ? es : pfi_reduce_power(c, &ro, ra);
                    if (!same_notes(c, b) || !same_series(c, b, why, sizeof why) || xc != xb ||
                        memcmp(ra, rb, sizeof *ra) != 0) {
                        fprintf(stderr,
                                "%s (align %g, q %g, warm-up %g, guess %d): streamed and stored "
                                "differ (%s / %s; power %.17g / %.17g, energy %.17g / %.17g; "
                                "notes %zu / %zu) %s\n",
                                name, align[k], q[k], warm[k], guess, pfi_strerror(xc),
                                pfi_strerror(xb), ra->power.mean, rb->power.mean, ra->energy_j,
                                rb->energy_j, c->n_notes, b->n_notes, why);
                        ok = 0;
                    }
                    n_streamed++;
                    n_held += held;
                    n_warm_streamed += warm[k] > 0;
                }
                pfi_telemetry_destroy(c);
            }
            n_compared++;
            free(ra);
            free(rb);
        }
    }
    pfi_telemetry_destroy(a);
    pfi_telemetry_destroy(b);
    return ok;
}

/* An input the counted mode must flag inexact (expect 1) or not (0). */
static int expect_inexact(const char *name, const char *text, bool expect)
{
    pfi_error e;
    pfi_telemetry *tm = read_one(text, strlen(text), true, &e);
    int ok = tm != NULL && e == PFI_OK && tm->counted_inexact == expect;
    if (!ok)
        fprintf(stderr, "%s: counted_inexact %d, expected %d (%s)\n", name,
                tm ? tm->counted_inexact : -1, expect, pfi_strerror(e));
    pfi_telemetry_destroy(tm);
    return ok;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!tm_walk(argv[i], check))
            return 1;
    static const char head[] =
        "timestamp, index, power.draw [W], power.limit [W], temperature.gpu\n";
    char buf[1024];
    /* Two days back: not placed after the previous rows, so the temperature's third sample
     * lies before its first. */
    snprintf(buf, sizeof buf,
             "%s2026/01/14 10:00:00.000, 0, 250.00 W, 300.00 W, 60\n"
             "2026/01/14 10:00:01.000, 0, 251.00 W, 300.00 W, 61\n"
             "2026/01/12 10:00:02.000, 0, 252.00 W, 300.00 W, 62\n",
             head);
    int ok = expect_inexact("a sample before its series' first", buf, true) &&
             check("a sample before its series' first", buf, strlen(buf));
    snprintf(buf, sizeof buf,
             "%s2026/01/14 10:00:00.000, 0, 250.00 W, 300.00 W, 60\n"
             "2026/01/14 10:00:01.000, 0, 251.00 W, 300.00 W, 61\n"
             "2026/01/14 10:00:02.000, 0, 252.00 W, 250.00 W, 62\n"
             "2026/01/14 10:00:03.000, 0, 253.00 W, 250.00 W, 63\n",
             head);
    ok = ok && expect_inexact("a plain capture", buf, false) &&
         check("a plain capture", buf, strlen(buf));
    /* dcgmi dmon with power and the energy counter: the power derived from the counter
     * keeps its times only (measured power beside it), and agrees all the same. */
    snprintf(buf, sizeof buf,
             "#Entity   POWER      TOTEC        TMPTR\nID\n"
             "GPU 0     250.0      1000         60\nGPU 0     251.0      251000       61\n"
             "GPU 0     252.0      N/A          62\nGPU 0     253.0      753000       63\n"
             "GPU 0     254.0      1006000      64\nGPU 0     255.0      1260000      65\n");
    pfi_error e;
    pfi_telemetry *tm = ok ? read_one(buf, strlen(buf), true, &e) : NULL;
    long fd = tm ? pfi_telemetry_field_find(tm, "power_energy_w") : -1;
    const pfi_telemetry_series *ds = fd >= 0 ? pfi_telemetry_series_get(tm, 0, (size_t)fd) : NULL;
    if (ok && (ds == NULL || !ds->times_only || ds->value != NULL || ds->n != 3 ||
               ds->n_valid != 3 || ds->sum != 250.0 + 253.0 + 254.0)) {
        fprintf(stderr, "derived power: not kept as times only (%zu samples, sum %g)\n",
                ds ? ds->n : 0, ds ? ds->sum : 0.0);
        ok = 0;
    }
    pfi_telemetry_destroy(tm);
    ok = ok && check("dcgmi power and counter", buf, strlen(buf));
    if (!ok)
        return 1;
    /* Streamed reads that must be flagged (and are exact when read stored): the power's
     * clock set back two days (its rows out of time order; nothing counted sees it), and
     * more distinct sampling steps than a series' table holds. */
    snprintf(buf, sizeof buf,
             "timestamp, index, power.draw [W]\n2026/01/14 10:00:00.000, 0, 250.00 W\n"
             "2026/01/14 10:00:01.000, 0, 251.00 W\n2026/01/12 10:00:02.000, 0, 252.00 W\n"
             "2026/01/12 10:00:03.000, 0, 253.00 W\n");
    ok = ok && expect_inexact("a power clock set back (counted)", buf, false);
    size_t big_cap = 64 * 6000, len = 0;
    char *big = malloc(big_cap);
    if (big != NULL) {
        len += (size_t)snprintf(big, big_cap, "timestamp, index, power.draw [W]\n");
        double t = 0;
        for (int i = 0; i < 6000 && len + 64 < big_cap; i++) {
            t += 1 + 0.0001 * (i % 5000); /* 5000 distinct steps */
            len += (size_t)snprintf(big + len, big_cap - len,
                                    "2026/01/14 %02d:%02d:%07.4f, 0, %d.00 W\n", (int)(t / 3600),
                                    (int)(t / 60) % 60, t - 60 * floor(t / 60), 200 + i % 50);
        }
    }
    const char *flagged[2] = {buf, big};
    const char *why_flagged[2] = {"a power clock set back", "5000 distinct steps"};
    for (int k = 0; ok && k < 2; k++) {
        pfi_reduce_options ro;
        pfi_reduce_options_init(&ro);
        if (flagged[k] == NULL) {
            ok = 0;
            break;
        }
        tm = read_streamed(flagged[k], strlen(flagged[k]), &ro, true, &e);
        if (tm == NULL || e != PFI_OK || !tm->counted_inexact) {
            fprintf(stderr, "%s: not flagged for the streamed read\n", why_flagged[k]);
            ok = 0;
        }
        pfi_telemetry_destroy(tm);
        ok = ok && check(why_flagged[k], flagged[k], strlen(flagged[k]));
    }
    free(big);
    if (!ok)
        return 1;
    /* The streamed path must have been taken, not only flagged away. */
    /* Regular captures as the tools write them: the first read's guess holds (no second
     * read) and gives the stored results: dcgmi dmon (8 GPUs, nominal times, power and
     * counter) and the nvidia-smi CSV (8 GPUs every 100 ms, power and limit, a limit change);
     * of check's six streamed reads only the one without --align and with the guess is one. */
    size_t cap2 = 200000, n2 = 0;
    char *reg = malloc(cap2);
    for (int fmt = 0; ok && reg != NULL && fmt < 2; fmt++) {
        n2 = (size_t)snprintf(reg, cap2, "%s",
                              fmt == 0 ? "#Entity   POWER      TOTEC        TMPTR\nID\n"
                                       : "timestamp, index, power.draw [W], power.limit [W]\n");
        for (int i = 0; i < 300; i++)
            for (int g = 0; g < 8; g++)
                n2 += (size_t)(fmt == 0 ? snprintf(reg + n2, cap2 - n2,
                                                   "GPU %d     %d.%d      %d         %d\n", g,
                                                   200 + (i * 7 + g) % 90, i % 10,
                                                   1000 * i * (250 + g), 40 + i % 20)
                                        : snprintf(reg + n2, cap2 - n2,
                                                   "2026/01/14 10:%02d:%02d.%d00, %d, %d.%02d W, "
                                                   "%s W\n",
                                                   i / 600, i / 10 % 60, i % 10, g,
                                                   200 + (i * 7 + g) % 90, i % 100,
                                                   i < 150 ? "300.00" : "250.00"));
        size_t before = n_replayed, held_before = n_held, warm_before = n_warm_streamed;
        ok = check(fmt == 0 ? "a regular dmon capture" : "a regular CSV capture", reg, n2);
        /* Read again: 3 option sets without the guess, 2 with --align, 4 with a warm-up
         * (with the guess or not: the warm-up needs t_0 first); every warm-up read agrees. */
        if (ok && n_warm_streamed != warm_before + 4) {
            fprintf(stderr, "%s: a warm-up's streamed read was flagged\n",
                    fmt == 0 ? "dmon" : "CSV");
            ok = 0;
        }
        if (ok && (n_held != held_before + 1 || n_replayed != before + 9)) {
            fprintf(stderr, "%s: the first read's guess did not hold\n", fmt == 0 ? "dmon" : "CSV");
            ok = 0;
        }
    }
    /* Captures where a guess is wrong and must be caught (the second read then made). GPU 1
     * first 1 s apart, then every 0.1 s with a 5 s hole: a gap for its true limit (1 s), not
     * for the guessed one (10 s; GPU 0's steps, the grid's guess, are right). GPU 1 read
     * 80 ms after GPU 0, the first step 0.5 s, then 0.1 s: one capture loop for the guessed
     * grid step (0.5 s), two for the true one (0.1 s; the limits' decisions agree). */
    for (int kind = 0; ok && reg != NULL && kind < 2; kind++) {
        n2 = (size_t)snprintf(reg, cap2, "timestamp, index, power.draw [W]\n");
        double t = 0;
        for (int i = 0; i < 200; i++) {
            t += kind == 1 && i == 1 ? 0.5 : i == 0 ? 0 : 0.1;
            for (int g = 0; g < 2; g++) {
                if (kind == 0 && g == 1 && ((i > 0 && i < 10) || (i >= 100 && i < 150)))
                    continue;
                double tg = t + (kind == 1 && g == 1 ? 0.08 : 0);
                n2 += (size_t)snprintf(reg + n2, cap2 - n2,
                                       "2026/01/14 10:%02d:%06.3f, %d, %d.00 W\n", (int)(tg / 60),
                                       tg - 60 * floor(tg / 60), g, 200 + (i * 7 + g) % 90);
            }
        }
        size_t held_before = n_held;
        ok = check(kind == 0 ? "a hole the guess misses" : "GPUs read 80 ms apart", reg, n2);
        if (ok && n_held != held_before) {
            fprintf(stderr, "%s: a wrong guess was kept\n", kind == 0 ? "hole" : "80 ms");
            ok = 0;
        }
    }
    /* Rows that leave (time, GPU) order after 100 in-order loops — the merge's in-order ring
     * hands its rows (several loops' worth waiting) to the GPUs' queues and heap: dmon with
     * each loop's GPUs written in reverse from loop 100 (nominal times: GPU 7's row first),
     * and the CSV with GPU g read (7 - g) ms after the loop's time from then on. */
    for (int fmt = 0; ok && reg != NULL && fmt < 2; fmt++) {
        n2 = (size_t)snprintf(reg, cap2, "%s",
                              fmt == 0 ? "#Entity   POWER      TMPTR\nID\n"
                                       : "timestamp, index, power.draw [W]\n");
        for (int i = 0; i < 300; i++)
            for (int k = 0; k < 8; k++) {
                int g = i >= 100 ? 7 - k : k;
                double tg = 0.1 * i + (i >= 100 ? 0.001 * (7 - g) : 0);
                n2 +=
                    (size_t)(fmt == 0 ? snprintf(reg + n2, cap2 - n2, "GPU %d     %d.%d      %d\n",
                                                 g, 200 + (i * 7 + g) % 90, i % 10, 40 + i % 20)
                                      : snprintf(reg + n2, cap2 - n2,
                                                 "2026/01/14 10:%02d:%06.3f, %d, %d.%02d W\n",
                                                 (int)(tg / 60), tg - 60 * floor(tg / 60), g,
                                                 200 + (i * 7 + g) % 90, i % 100));
            }
        ok = check(fmt == 0 ? "dmon GPUs reversed from loop 100"
                            : "CSV GPUs reordered from loop 100",
                   reg, n2);
    }
    free(reg);
    if (!ok)
        return 1;
    printf("counted and stored samples agree: %zu reductions compared, %zu inputs flagged "
           "inexact (read again by pfi ingest); streamed: %zu agree (%zu in one read, %zu with a "
           "warm-up), %zu flagged\n",
           n_compared, n_inexact, n_streamed, n_held, n_warm_streamed, n_stream_inexact);
    return 0;
}
