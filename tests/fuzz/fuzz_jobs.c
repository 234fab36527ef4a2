/*
 * Fuzz the jobs CSV reader of `pfi allocate` (pfi_jobs_read_stream), and what the command does
 * next with a file it accepts: the monotone check and repair (pfi/curve.h), then every
 * allocation strategy (pfi_allocate must refuse bad curves with an error, never crash).
 * The allocator runs only on small files, to keep the fuzzer fast.
 */
#include "fuzz_common.h"
#include "pfi/allocate.h"
#include "pfi/curve.h"
#include "pfi/jobs.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
