/*
 * tm_compare — are two telemetry collectors the same, field by field? Used by the
 * differential test (tests/test_tm_fastpath.c) and the reader fuzzers: each input is read
 * once with the fast row paths and once with options.generic_rows, and everything a
 * caller can see must agree — counters, notes (same text, same order), entities, fields,
 * and every series (counters, sums, stored samples and missing-sample times bit for bit).
 * tm_walk hands the differential tests (test_tm_fastpath.c, test_tm_counted.c) every file
 * under the corpora they are given.
 */
#ifndef PFI_TESTS_TM_COMPARE_H
#define PFI_TESTS_TM_COMPARE_H

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pfi/telemetry.h"

/* Same bits, or both NaN (a NaN's payload is not part of the contract). */
static inline int tm_cmp_double(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static inline int tm_cmp_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* 1 when a and b agree; 0 with the first difference described in why[len]. */
static inline int tm_compare(const pfi_telemetry *a, const pfi_telemetry *b, char *why, size_t len)
{
#define TM_DIFF(...)                                                                               \
    do {                                                                                           \
        snprintf(why, len, __VA_ARGS__);                                                           \
        return 0;                                                                                  \
    } while (0)
    if (a->n_rows != b->n_rows || a->n_skipped != b->n_skipped ||
        a->n_tool_errors != b->n_tool_errors || a->n_files != b->n_files ||
        a->n_stored != b->n_stored || a->time_nominal != b->time_nominal ||
        a->time_relative != b->time_relative || a->interval_assumed != b->interval_assumed ||
        !tm_cmp_double(a->max_limit_w, b->max_limit_w))
        TM_DIFF("counters: rows %zu/%zu skipped %zu/%zu tool errors %zu/%zu stored %zu/%zu",
                a->n_rows, b->n_rows, a->n_skipped, b->n_skipped, a->n_tool_errors,
                b->n_tool_errors, a->n_stored, b->n_stored);
    if (strcmp(a->tool_error, b->tool_error) != 0)
        TM_DIFF("tool_error: '%.200s' / '%.200s'", a->tool_error, b->tool_error);
    if (a->n_notes != b->n_notes || a->n_notes_dropped != b->n_notes_dropped)
        TM_DIFF("notes: %zu/%zu", a->n_notes, b->n_notes);
    for (size_t i = 0; i < a->n_notes; i++)
        if (strcmp(a->notes[i], b->notes[i]) != 0)
            TM_DIFF("note %zu: '%.300s' / '%.300s'", i, a->notes[i], b->notes[i]);
    if (a->n_entities != b->n_entities)
        TM_DIFF("entities: %zu/%zu", a->n_entities, b->n_entities);
    for (size_t i = 0; i < a->n_entities; i++) {
        const pfi_telemetry_entity *x = &a->entities[i], *y = &b->entities[i];
        if (!tm_cmp_str(x->name, y->name) || !tm_cmp_str(x->bus, y->bus) || x->lost != y->lost ||
            !tm_cmp_double(x->lost_t_s, y->lost_t_s) ||
            !tm_cmp_double(x->last_good_t_s, y->last_good_t_s) || x->rows != y->rows ||
            x->segment != y->segment || !tm_cmp_double(x->last_t, y->last_t) ||
            !tm_cmp_double(x->day_offset_s, y->day_offset_s) || x->is_gpu != y->is_gpu)
            TM_DIFF("entity %zu (%s): rows %zu/%zu last_t %.17g/%.17g", i, x->name, x->rows,
                    y->rows, x->last_t, y->last_t);
    }
    if (a->n_fields != b->n_fields)
        TM_DIFF("fields: %zu/%zu", a->n_fields, b->n_fields);
    for (size_t i = 0; i < a->n_fields; i++)
        if (!tm_cmp_str(a->fields[i].name, b->fields[i].name) ||
            a->fields[i].kind != b->fields[i].kind)
            TM_DIFF("field %zu: %s/%s", i, a->fields[i].name, b->fields[i].name);
    if (a->n_series != b->n_series)
        TM_DIFF("series: %zu/%zu", a->n_series, b->n_series);
    for (size_t i = 0; i < a->n_series; i++) {
        const pfi_telemetry_series *x = &a->series[i], *y = &b->series[i];
        if (x->entity != y->entity || x->field != y->field || x->n != y->n ||
            x->n_valid != y->n_valid || x->n_missing != y->n_missing || x->n_range != y->n_range ||
            x->n_duplicate != y->n_duplicate || !tm_cmp_double(x->range_max, y->range_max) ||
            !tm_cmp_double(x->sum, y->sum) || !tm_cmp_double(x->last_good_t_s, y->last_good_t_s) ||
            !tm_cmp_double(x->first_missing_t_s, y->first_missing_t_s) ||
            x->pending_break != y->pending_break || !tm_cmp_double(x->last_t, y->last_t))
            TM_DIFF("series %zu (entity %zu field %zu): n %zu/%zu valid %zu/%zu missing "
                    "%zu/%zu range %zu/%zu sum %.17g/%.17g",
                    i, x->entity, x->field, x->n, y->n, x->n_valid, y->n_valid, x->n_missing,
                    y->n_missing, x->n_range, y->n_range, x->sum, y->sum);
        for (size_t j = 0; j < x->n; j++)
            if (!tm_cmp_double(x->t_s[j], y->t_s[j]) || !tm_cmp_double(x->value[j], y->value[j]) ||
                x->brk[j] != y->brk[j])
                TM_DIFF("series %zu sample %zu: t %.17g/%.17g v %.17g/%.17g brk %d/%d", i, j,
                        x->t_s[j], y->t_s[j], x->value[j], y->value[j], x->brk[j], y->brk[j]);
        if (x->n_miss != y->n_miss)
            TM_DIFF("series %zu: %zu/%zu missing-sample times", i, x->n_miss, y->n_miss);
        for (size_t j = 0; j < x->n_miss; j++)
            if (!tm_cmp_double(x->miss_t[j], y->miss_t[j]))
                TM_DIFF("series %zu missing-sample time %zu: %.17g/%.17g", i, j, x->miss_t[j],
                        y->miss_t[j]);
    }
    return 1;
#undef TM_DIFF
}

/* check(name, data, size) on the file at path, or on every file under it (recursively, names
 * starting with '.' skipped). data holds the whole file (freed after the call). 1 when every
 * check returned 1; 0 at the first that did not, or when a path cannot be read (perror'd). */
static inline int tm_walk(const char *path, int (*check)(const char *, const char *, size_t))
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return 0;
    }
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d == NULL) {
            perror(path);
            return 0;
        }
        struct dirent *e;
        int ok = 1;
        while (ok && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            ok = tm_walk(sub, check);
        }
        closedir(d);
        return ok;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return 0;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t got = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    int ok = buf != NULL && check(path, buf, got);
    free(buf);
    return ok;
}

#endif
