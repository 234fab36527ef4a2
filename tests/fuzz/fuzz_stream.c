/*
 * libFuzzer harness, differential: pfi ingest's bounded-memory read (options.stream_power:
 * the power and energy series not stored, pfi_reduce_stream_begin's guesses, pfi_reduce_stream's
 * second read when they fail) against the stored read of the same bytes. The input's first
 * byte picks the format and the options, the rest is read as that telemetry. Invariants (abort
 * when one fails): where the streamed read does not ask to be read again
 * (tm->counted_inexact), the same error, the same notes, every series' counts and sum, and the
 * same pfi_reduced byte for byte.
 *
 *   byte0 & 7        format: smi csv, dcgmi dmon, dmon, smi -q, prometheus, prometheus API,
 *                    auto (6, 7)
 *   byte0 & 8        --align 0.5 (else none: the guess is tried)
 *   byte0 & 16       no guess (always the second read), and the next byte (taken off the
 *                    input) picks --warmup: & 3 none, 1 s, 2.5 s, 30 s (the second read
 *                    makes every field's warm-up sums)
 *   byte0 & 32       --q 1 (else 0.1)
 *   byte0 & 64       --interval 2 (else none)
 *   byte0 & 128      --max-power 700 (else none: the default bound)
 */
#include <math.h>
#include <string.h>

#include "fuzz_common.h"
#include "pfi/reduce.h"

static const pfi_telemetry_format fmts[8] = {PFI_TELEMETRY_SMI_CSV,  PFI_TELEMETRY_DCGMI_DMON,
                                             PFI_TELEMETRY_SMI_DMON, PFI_TELEMETRY_SMI_QUERY,
                                             PFI_TELEMETRY_PROM,     PFI_TELEMETRY_PROM_API,
                                             PFI_TELEMETRY_AUTO,     PFI_TELEMETRY_AUTO};

typedef struct input {
    const uint8_t *data;
    size_t size;
    pfi_telemetry_options o;
    pfi_telemetry_format fmt;
} input;

static pfi_error read_into(pfi_telemetry *tm, const input *in)
{
    FILE *f = fuzz_stream_or_empty(in->data, in->size);
    if (f == NULL)
        return PFI_ERR_IO;
    pfi_diag d;
    pfi_error e = pfi_telemetry_read_stream(tm, f, "fuzz", in->fmt, &d);
    fclose(f);
    return e;
}

static pfi_error replay(void *ctx, pfi_telemetry_sample_fn fn, void *fctx)
{
    const input *in = ctx;
    pfi_telemetry *tm;
    pfi_error e = pfi_telemetry_create(&in->o, &tm);
    if (e != PFI_OK)
        return e;
    pfi_telemetry_set_sink(tm, fn, fctx);
    e = read_into(tm, in);
    pfi_telemetry_destroy(tm);
    return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t b = data[0];
    static const double warmups[4] = {0, 1, 2.5, 30};
    double warmup = 0;
    if (b & 16) {
        if (size < 2)
            return 0;
        warmup = warmups[data[1] & 3];
        data++;
        size--;
    }
    input in = {.data = data + 1, .size = size - 1, .fmt = fmts[b & 7]};
    in.o = (pfi_telemetry_options){.keep_series = true,
                                   .count_means_only = true,
                                   .stream_power = true,
                                   .interval_s = b & 64 ? 2 : 0,
                                   .max_power_w = b & 128 ? 700 : 0};
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    ro.align_s = b & 8 ? 0.5 : 0;
    ro.q = b & 32 ? 1 : 0.1;
    ro.warmup_s = warmup;
    pfi_telemetry_options so = in.o;
    so.count_means_only = so.stream_power = false;
    pfi_telemetry *s = NULL, *c = NULL;
    if (pfi_telemetry_create(&so, &s) != PFI_OK || pfi_telemetry_create(&in.o, &c) != PFI_OK ||
        (!(b & 16) && pfi_reduce_stream_begin(c, &ro) != PFI_OK)) {
        pfi_telemetry_destroy(s);
        pfi_telemetry_destroy(c);
        return 0;
    }
    pfi_error es = read_into(s, &in), ec = read_into(c, &in);
    if (es != ec) {
        fprintf(stderr, "read: %s stored, %s streamed\n", pfi_strerror(es), pfi_strerror(ec));
        abort();
    }
    if (ec == PFI_OK)
        ec = pfi_reduce_stream(c, &ro, replay, &in);
    if (ec != PFI_OK || c->counted_inexact) { /* pfi ingest reads again, stored */
        pfi_telemetry_destroy(s);
        pfi_telemetry_destroy(c);
        return 0;
    }
    pfi_telemetry_derive_power_from_energy(s);
    pfi_telemetry_derive_power_from_energy(c);
    pfi_telemetry_summarize(s);
    pfi_telemetry_summarize(c);
    if (s->n_notes != c->n_notes || s->n_series != c->n_series) {
        fprintf(stderr, "notes %zu / %zu, series %zu / %zu\n", s->n_notes, c->n_notes, s->n_series,
                c->n_series);
        abort();
    }
    for (size_t i = 0; i < s->n_notes; i++)
        if (strcmp(s->notes[i], c->notes[i]) != 0) {
            fprintf(stderr, "note %zu: %s / %s\n", i, s->notes[i], c->notes[i]);
            abort();
        }
    for (size_t i = 0; i < s->n_series; i++) {
        const pfi_telemetry_series *x = &s->series[i], *y = &c->series[i];
        if (x->entity != y->entity || x->field != y->field || x->n_valid != y->n_valid ||
            x->n_missing != y->n_missing || x->n_range != y->n_range || x->n_miss != y->n_miss ||
            memcmp(&x->sum, &y->sum, sizeof x->sum) != 0) {
            fprintf(stderr, "series %zu differs\n", i);
            abort();
        }
    }
    static pfi_reduced red[2];
    memset(red, 0, sizeof red);
    pfi_error e0 = pfi_reduce_power(s, &ro, &red[0]), e1 = pfi_reduce_power(c, &ro, &red[1]);
    if (e0 != e1 || memcmp(&red[0], &red[1], sizeof red[0]) != 0) {
        fprintf(stderr, "reductions differ: %s / %s, power %.17g / %.17g, energy %.17g / %.17g\n",
                pfi_strerror(e0), pfi_strerror(e1), red[0].power.mean, red[1].power.mean,
                red[0].energy_j, red[1].energy_j);
        abort();
    }
    pfi_telemetry_destroy(s);
    pfi_telemetry_destroy(c);
    return 0;
}
