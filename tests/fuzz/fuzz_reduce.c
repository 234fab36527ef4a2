/*
 * libFuzzer harness, differential: the run reduction (pfi_reduce_power, with the gap rule of
 * pfi_telemetry_gaps, integrate and counter_delta under it) against the reduction as it was
 * before it stopped sorting every row (reference/: commit 72dbab4, renamed *_reference). The
 * input's first byte picks the format and the options, the rest is read as that telemetry,
 * power derived from energy, summarised; then both reductions run on the same collector.
 * Invariants (abort when one fails): the same error, the same pfi_reduced byte for byte
 * (every double bit for bit, every note), and per power or energy series the same gaps,
 * median step, longest gap, integral and counter delta.
 *
 *   byte0 & 7        format: smi csv, dcgmi dmon, dmon, smi -q, prometheus (5..7: csv)
 *   byte0 & 8        --align 0.5 (else none)
 *   byte0 & 16       --warmup 1.5 (else 0)
 *   byte0 & 32       --q 1 (else 0.1)
 *   byte0 & 64       --interval 2 (else 1)
 */
#include <math.h>
#include <string.h>

#include "fuzz_common.h"
#include "pfi/reduce.h"

pfi_error pfi_reduce_power_reference(const pfi_telemetry *tm, const pfi_reduce_options *o,
                                     pfi_reduced *out);
size_t pfi_telemetry_gaps_reference(const pfi_telemetry_series *s, double *step_s,
                                    double *longest_s);
double pfi_telemetry_integrate_reference(const pfi_telemetry_series *s, double *covered_s);
double pfi_telemetry_counter_delta_reference(const pfi_telemetry_series *s, double *covered_s,
                                             size_t *n_resets);

/* a and b the same bits (NaN only as the same NaN). */
static bool same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static void check_series(const pfi_telemetry_series *s)
{
    double st[2], lg[2], cov[2];
    size_t n[2] = {pfi_telemetry_gaps(s, &st[0], &lg[0]),
                   pfi_telemetry_gaps_reference(s, &st[1], &lg[1])};
    if (n[0] != n[1] || !same_bits(st[0], st[1]) || !same_bits(lg[0], lg[1])) {
        fprintf(stderr, "gaps differ: %zu/%zu step %.17g/%.17g\n", n[0], n[1], st[0], st[1]);
        abort();
    }
    double e0 = pfi_telemetry_integrate(s, &cov[0]),
           e1 = pfi_telemetry_integrate_reference(s, &cov[1]);
    if (!same_bits(e0, e1) || !same_bits(cov[0], cov[1]))
        abort();
    size_t r[2];
    e0 = pfi_telemetry_counter_delta(s, &cov[0], &r[0]);
    e1 = pfi_telemetry_counter_delta_reference(s, &cov[1], &r[1]);
    if (!same_bits(e0, e1) || !same_bits(cov[0], cov[1]) || r[0] != r[1])
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const pfi_telemetry_format fmts[8] = {PFI_TELEMETRY_SMI_CSV,  PFI_TELEMETRY_DCGMI_DMON,
                                                 PFI_TELEMETRY_SMI_DMON, PFI_TELEMETRY_SMI_QUERY,
                                                 PFI_TELEMETRY_PROM,     PFI_TELEMETRY_SMI_CSV,
                                                 PFI_TELEMETRY_SMI_CSV,  PFI_TELEMETRY_SMI_CSV};
    uint8_t b = data[0];
    FILE *f = fuzz_stream_or_empty(data + 1, size - 1);
    if (f == NULL)
        return 0;
    pfi_telemetry_options o = {
        .keep_series = true, .interval_s = b & 64 ? 2 : 1, .max_power_w = 700};
    pfi_telemetry *tm = NULL;
    if (pfi_telemetry_create(&o, &tm) != PFI_OK) {
        fclose(f);
        return 0;
    }
    pfi_diag d;
    pfi_telemetry_read_stream(tm, f, "fuzz", fmts[b & 7], &d);
    fclose(f);
    pfi_telemetry_derive_power_from_energy(tm);
    pfi_telemetry_summarize(tm);
    for (size_t i = 0; i < tm->n_series; i++)
        check_series(&tm->series[i]);
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    ro.align_s = b & 8 ? 0.5 : 0;
    ro.warmup_s = b & 16 ? 1.5 : 0;
    ro.q = b & 32 ? 1 : 0.1;
    static pfi_reduced red[2];
    pfi_error e0 = pfi_reduce_power(tm, &ro, &red[0]);
    pfi_error e1 = pfi_reduce_power_reference(tm, &ro, &red[1]);
    /* Timestamps left out as cap-lost or throttled (issue 14: an enforced limit or clock event
     * reasons in the telemetry) are what the reference did not do: those runs differ by
     * design, every other run must not. */
    if (e0 == PFI_OK && red[0].n_excluded > 0) {
        pfi_telemetry_destroy(tm);
        return 0;
    }
    if (e0 != e1 || memcmp(&red[0], &red[1], sizeof red[0]) != 0) {
        fprintf(stderr, "reductions differ: %s / %s, power %.17g / %.17g, bins %zu / %zu\n",
                pfi_strerror(e0), pfi_strerror(e1), red[0].power.mean, red[1].power.mean,
                red[0].n_bins, red[1].n_bins);
        abort();
    }
    pfi_telemetry_destroy(tm);
    return 0;
}
