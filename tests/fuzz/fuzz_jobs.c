/*
 * Fuzz the jobs CSV reader of `pfi allocate` (pfi_jobs_read_stream), and what the command does
 * next with a file it accepts: the monotone check and repair (pfi/curve.h), then every
 * allocation strategy (pfi_allocate must refuse bad curves with an error, never crash).
 * The allocator runs only on small files, to keep the fuzzer fast.
 * Differential too: the reader's fast path (a vector scan, in order or not) and pfi/csv.h
 * alone (jobs_read_buffer with general) must give the same jobs, or the same error with the
 * same file, line, column and message; any difference aborts. And the reader's number fast
 * path (jobs_fast_number) against strtod on every cell of the input (split on ',' and
 * newlines): a cell it takes must be strtod's whole string and its double, bit for bit.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "pfi/allocate.h"
#include "pfi/curve.h"
#include "pfi/jobs.h"
#include "power/jobs_internal.h"

enum { MAX_JOBS = 32, MAX_POINTS = 256 };

static void allocate_all(pfi_jobs *J)
{
    double work[2 * MAX_POINTS];
    for (size_t j = 0; j < J->n; j++) {
        size_t a = J->offset[j], k = J->offset[j + 1] - a;
        pfi_curve_report rep;
        if (pfi_curve_check(k, J->cap_w + a, J->power_w + a, J->tput_tok_s + a, &rep) == PFI_OK)
            pfi_curve_repair(k, J->power_w + a, J->tput_tok_s + a, work);
    }
    pfi_alloc_jobs v;
    pfi_jobs_view(J, &v);
    for (int s = 0; s < PFI_STRATEGY_COUNT; s++) {
        pfi_alloc_options o;
        pfi_alloc_options_init(&o);
        o.strategy = (pfi_strategy)s;
        o.cap_step_w = s % 2 ? 25.0 : 0.0;
        pfi_alloc_result r;
        if (pfi_alloc_result_init(&r, J->n) != PFI_OK)
            return;
        pfi_diag d;
        pfi_allocate(&v, &o, &r, &d);
        pfi_alloc_result_clear(&r);
    }
}

static bool same_doubles(const double *a, const double *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(a[i] == b[i] || (a[i] != a[i] && b[i] != b[i])))
            return false;
    return true;
}

static bool same_text(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The fast path against pfi/csv.h alone on the same bytes. */
static void differential(const uint8_t *data, size_t size)
{
    pfi_jobs *J[2] = {NULL, NULL};
    pfi_diag d[2];
    pfi_error e[2];
    for (int g = 0; g < 2; g++) {
        char *buf = malloc(size + JOBS_BUFFER_PAD);
        if (buf == NULL)
            return;
        if (size > 0)
            memcpy(buf, data, size);
        pfi_diag_clear(&d[g]);
        e[g] = jobs_read_buffer(buf, size, "fuzz", g == 1, &J[g], &d[g]);
        if (size > 0 && memcmp(buf, data, size) != 0)
            abort(); /* the input is not written */
        free(buf);
    }
    bool same = e[0] == e[1];
    if (same && e[0] != PFI_OK)
        same = d[0].line == d[1].line && strcmp(d[0].column, d[1].column) == 0 &&
               strcmp(d[0].message, d[1].message) == 0;
    if (same && e[0] == PFI_OK) {
        const pfi_jobs *a = J[0], *b = J[1];
        same = a->n == b->n && memcmp(a->offset, b->offset, (a->n + 1) * sizeof *a->offset) == 0;
        size_t np = same ? a->offset[a->n] : 0;
        same = same && same_doubles(a->cap_w, b->cap_w, np) &&
               same_doubles(a->power_w, b->power_w, np) &&
               same_doubles(a->tput_tok_s, b->tput_tok_s, np);
        const double *const va[] = {a->gpus,    a->weight,   a->floor_frac, a->pfi,
                                    a->feature, a->cap_lo_w, a->cap_hi_w,   a->band};
        const double *const vb[] = {b->gpus,    b->weight,   b->floor_frac, b->pfi,
                                    b->feature, b->cap_lo_w, b->cap_hi_w,   b->band};
        for (size_t k = 0; same && k < sizeof va / sizeof va[0]; k++)
            same = same_doubles(va[k], vb[k], a->n);
        for (size_t i = 0; same && i < a->n; i++)
            same = same_text(a->name[i], b->name[i]) &&
                   same_text(a->job_class[i], b->job_class[i]) &&
                   same_text(a->node[i], b->node[i]) && a->node_line[i] == b->node_line[i];
    }
    pfi_jobs_destroy(J[0]);
    pfi_jobs_destroy(J[1]);
    if (!same)
        abort();
}

/* jobs_fast_number against strtod on each cell of data. */
static void numbers(const uint8_t *data, size_t size)
{
    size_t a = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && data[i] != ',' && data[i] != '\n')
            continue;
        char cell[80];
        size_t n = i - a;
        double v;
        if (n < sizeof cell && jobs_fast_number((const char *)data + a, n, &v)) {
            memcpy(cell, data + a, n);
            cell[n] = '\0';
            char *end = NULL;
            double r = strtod(cell, &end);
            if (end != cell + n || memcmp(&v, &r, sizeof v) != 0)
                abort();
        }
        a = i + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    numbers(data, size);
    differential(data, size);
    FILE *f = fuzz_stream(data, size);
    if (f == NULL)
        return 0;
    pfi_jobs *J = NULL;
    pfi_diag d;
    if (pfi_jobs_read_stream(f, "fuzz", &J, &d) == PFI_OK && J->n <= MAX_JOBS &&
        J->offset[J->n] <= MAX_POINTS)
        allocate_all(J);
    pfi_jobs_destroy(J);
    fclose(f);
    return 0;
}
