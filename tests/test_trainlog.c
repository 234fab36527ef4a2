/*
 * Training-log readers: throughput = Σwork/Σtime over the steady window, with resumes,
 * progress bars, rank duplicates, gaps, truncated lines, non-finite values, checkpoint and
 * evaluation wording per framework, and auto-detection. The logs are in each framework's real
 * layout (tests/data/trainlog/make_logs.py writes them); expected values are by hand from the
 * numbers the generator put in.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cmocka_compat.h"
#include "pfi/trainlog.h"

static pfi_trainlog *rd(const char *file, pfi_trainlog_format fmt, pfi_trainlog_summary *s)
{
    char path[512];
    snprintf(path, sizeof path, "%s/trainlog/%s", PFI_TEST_DATA, file);
    pfi_trainlog *log = NULL;
    pfi_diag d;
    pfi_error e = pfi_trainlog_read_file(path, fmt, NULL, &log, &d);
    if (e != PFI_OK)
        print_message("%s: %s\n", file, d.message);
    assert_int_equal(e, PFI_OK);
    if (s != NULL)
        assert_int_equal(pfi_trainlog_reduce(log, 0, 1.0, s), PFI_OK);
    return log;
}

/* HF Trainer at a 500 W cap: 2 it/s x 32 samples = 64 samples/s; the bar every 50 steps; an
 * evaluation and a checkpoint (15 s) after step 500; the bar's last update printed twice. */
static void hf_bar(void **state)
{
    (void)state;
    pfi_trainlog_summary s;
    pfi_trainlog *log = rd("hf_500w.log", PFI_TRAINLOG_AUTO, &s);
    assert_int_equal(log->format, PFI_TRAINLOG_HF);
    assert_string_equal(log->unit, "samples");
    assert_int_equal(log->n, 20);          /* 0->50, ..., 950->1000 */
    assert_int_equal(log->n_duplicate, 2); /* 500 repeated after the dict, 1000 at close */
    assert_int_equal(s.n_included, 19);
    assert_int_equal(s.n_checkpoint, 1); /* 500->550 (eval and save): counted once */
    assert_double_equal(s.steady.mean, 64.0, 1e-12);
    assert_double_equal(s.steady.se, 0.0, 1e-12);
    assert_int_equal(log->n_sessions, 1);
    pfi_trainlog_destroy(log);
}

/* The same run killed after step 600 and resumed from checkpoint-500: the same throughput
 * (within 1 %; here exactly), the interval across the resume excluded; HF's own
 * train_samples_per_second (128) is twice the truth. */
static void hf_resumed(void **state)
{
    (void)state;
    pfi_trainlog_summary s, s0;
    pfi_trainlog *log0 = rd("hf_500w.log", PFI_TRAINLOG_AUTO, &s0);
    pfi_trainlog *log = rd("hf_500w_resumed.log", PFI_TRAINLOG_AUTO, &s);
    assert_int_equal(log->format, PFI_TRAINLOG_HF);
    assert_int_equal(log->n_sessions, 2);
    assert_int_equal(log->n, 23); /* 12 in session 1, 0->510 and 10 in session 2 */
    assert_int_equal(s.n_restart, 1);
    assert_int_equal(s.n_checkpoint, 1);
    assert_int_equal(s.n_included, 21);
    assert_true(fabs(s.steady.mean / s0.steady.mean - 1) < 0.01);
    assert_double_equal(s.steady.mean, 64.0, 1e-12);
    pfi_trainlog_destroy(log);
    pfi_trainlog_destroy(log0);
    /* without a bar: the final dict, its work corrected to (1000 - 500) x 32 over 250 s */
    log = rd("hf_resumed_nobar.log", PFI_TRAINLOG_AUTO, &s);
    assert_int_equal(log->n, 1);
    assert_double_equal(log->iv[0].rate, 64.0, 1e-12);
    assert_double_equal(s.steady.mean, 64.0, 1e-12);
    pfi_trainlog_destroy(log);
}

/* The same resumed session logged at HF's default verbosity: no INFO lines, no resume line; the
 * bar's jump from 0 to 510 in 5 s is a counter jump (a restart), the rest 2 it/s. */
static void hf_resumed_quiet(void **state)
{
    (void)state;
    pfi_trainlog_summary s;
    pfi_trainlog *log = rd("hf_resumed_quiet.log", PFI_TRAINLOG_AUTO, &s);
    assert_int_equal(log->format, PFI_TRAINLOG_HF); /* the final dict is the Trainer's */
    assert_string_equal(log->unit, "steps");
    assert_int_equal(log->n, 11);
    assert_int_equal(s.n_restart, 1);
    assert_int_equal(s.n_included, 10);
    assert_double_equal(s.steady.mean, 2.0, 1e-12);
    pfi_trainlog_destroy(log);
}

/* tqdm flips from it/s to s/it: every record kept (the 0/100 opener, 10 at 2 it/s, 10 at
 * 15 s/it): 30 steps in 10 + 150 s. */
static void tqdm_flip(void **state)
{
    (void)state;
    pfi_trainlog_summary s;
    pfi_trainlog *log = rd("tqdm_sit.log", PFI_TRAINLOG_AUTO, &s);
    assert_int_equal(log->format, PFI_TRAINLOG_TQDM);
    assert_int_equal(log->n_records, 21);
    assert_int_equal(log->n, 20);
    assert_int_equal(s.n_included, 20);
    assert_int_equal(s.n_gap, 0); /* a slow step is not a pause */
    assert_double_equal(log->iv[12].rate, 1.0 / 15.0, 1e-12);
    assert_double_equal(s.steady.mean, 30.0 / 160.0, 1e-12);
    assert_string_equal(log->unit, "steps");
    pfi_trainlog_destroy(log);
}

/* torchtitan from 8 ranks ([rankN]: prefixes, out of order) = its rank-0 lines: 8,000 tps,
 * a checkpoint in 50->60; the first line has a rate but no time. */
static void titan_ranks(void **state)
{
    (void)state;
    pfi_trainlog_summary s8, s1;
    pfi_trainlog *l8 = rd("titan_8rank.log", PFI_TRAINLOG_AUTO, &s8);
    pfi_trainlog *l1 = rd("titan_rank0.log", PFI_TRAINLOG_AUTO, &s1);
    assert_int_equal(l8->format, PFI_TRAINLOG_TORCHTITAN);
    assert_int_equal(l8->n, l1->n);
    assert_int_equal(l8->n, 10);
    assert_int_equal(l8->n_duplicate, 70);
    assert_int_equal(l1->n_duplicate, 0);
    assert_int_equal(s8.n_included, s1.n_included);
    assert_int_equal(s8.n_included, 8);
    assert_int_equal(s8.n_checkpoint, 1);
    assert_int_equal(s8.n_no_time, 1);
    assert_double_equal(s8.steady.mean, s1.steady.mean, 0);
    assert_double_equal(s8.steady.mean, 8000.0, 1e-9);
    assert_double_equal(l8->iv[5].time_s, 14.0, 1e-9); /* 50->60 with the save */
    pfi_trainlog_destroy(l8);
    pfi_trainlog_destroy(l1);
}

/* torchtitan 2024 (wps): a 2-day stall between steps 40 and 50 splits the run; the cut-off
 * last line is ignored with a note. */
static void titan_gap(void **state)
{
    (void)state;
    pfi_trainlog_summary s;
    pfi_trainlog *log = rd("titan_wps_gap.log", PFI_TRAINLOG_AUTO, &s);
    assert_int_equal(log->format, PFI_TRAINLOG_TORCHTITAN);
    assert_int_equal(log->n, 10);
    assert_int_equal(s.n_gap, 1);
    assert_int_equal(log->n_segments, 2);
    assert_int_equal(s.n_included, 8);
    assert_double_equal(s.steady.mean, 7000.0, 1e-9);
    assert_true(log->truncated_last);
    assert_non_null(strstr(log->notes, "no line end"));
    pfi_trainlog_destroy(log);
}

/* Megatron-core: eval in 30->40, save in 40->50, killed after 60, resumed from 40. Included:
 * 10 (1280 in 15 s), 20, 30, 60 and, in session 2, 60, 70 (1280 in 14 s each). */
static void megatron_resume(void **state)
{
    (void)state;
    pfi_trainlog_summary s;
    pfi_trainlog *log = rd("megatron_resume.log", PFI_TRAINLOG_AUTO, &s);
    assert_int_equal(log->format, PFI_TRAINLOG_MEGATRON);
    assert_int_equal(log->n_sessions, 2);
    assert_int_equal(log->n, 9);
    assert_int_equal(s.n_eval, 1);
    assert_int_equal(s.n_checkpoint, 1);
    assert_int_equal(s.n_restart, 1);
    assert_int_equal(s.n_included, 6);
    assert_double_equal(s.steady.mean, 6 * 1280.0 / (15 + 5 * 14.0), 1e-9);
    assert_int_equal(log->iv[6].n_iter, 10); /* iteration 50 counted from the loaded 40 */
    pfi_trainlog_destroy(log);
}

/* Intervals of one rate: the throughput's standard error is 0, not the rounding noise of
 * Σ(w − R·t)² (8.4e-15 here before pfi_se_rounded, printed as "se 8.45e-15"). */
static void constant_rate_se_zero(void **state)
{
    (void)state;
    char text[8192];
    size_t len = 0;
    for (int i = 1; i <= 20; i++)
        len +=
            (size_t)snprintf(text + len, sizeof text - len,
                             " [2025-08-11 06:40:%02d] iteration %7d/    1000 | consumed samples: "
                             "%12d | elapsed time per iteration (ms): 1234.7 | global batch "
                             "size:   128 | lm loss: 8.1 | number of skipped iterations:   0 |\n",
                             i, i * 10, i * 1280);
    FILE *f = fmemopen(text, len, "r");
    assert_non_null(f);
    pfi_trainlog *log = NULL;
    assert_int_equal(
        pfi_trainlog_read_stream(f, "const.log", PFI_TRAINLOG_MEGATRON, NULL, &log, NULL), PFI_OK);
    fclose(f);
    pfi_trainlog_summary s;
    assert_int_equal(pfi_trainlog_reduce(log, 0, 1.0, &s), PFI_OK);
    assert_true(s.n_included >= 18);
    assert_true(fabs(s.steady.mean - 1280 / 12.347) < 1e-9);
    print_message("constant rate: se %.17g\n", s.steady.se);
    assert_true(s.steady.se == 0.0);
    pfi_trainlog_destroy(log);
}

/* One rule for which intervals count (pfi_trainlog_interval_usable): the reduction and the live
 * rate pfid reads (pfi_trainlog_last_rate) agree. megatron_eval_last.log: 10->20 at 1280
 * samples in 10 s, then an evaluation in 20->30 (1280 in 20 s): the live rate is 128/s, not the
 * evaluation's 64/s (pfid's own mask, without eval, restart and gap, took 64). In
 * megatron_resume.log the last interval (60->70, 1280 in 14 s) counts. */
static void one_exclusion_rule(void **state)
{
    (void)state;
    pfi_trainlog_summary s;
    pfi_trainlog *log = rd("megatron_eval_last.log", PFI_TRAINLOG_MEGATRON, &s);
    assert_int_equal(log->n, 3);
    assert_true(log->iv[2].flags & PFI_TRAINLOG_EVAL);
    assert_false(pfi_trainlog_interval_usable(&log->iv[2]));
    assert_int_equal(s.n_eval, 1);
    assert_true(fabs(pfi_trainlog_last_rate(log) - 128.0) < 1e-9);
    for (size_t k = 0; k < log->n; k++) /* usable = counted by the reduction (no warm-up) */
        assert_int_equal(pfi_trainlog_interval_usable(&log->iv[k]),
                         !(log->iv[k].flags & PFI_TRAINLOG_EXCLUDED));
    assert_int_equal(s.n_included, 2);
    pfi_trainlog_destroy(log);
    log = rd("megatron_resume.log", PFI_TRAINLOG_AUTO, &s);
    assert_true(fabs(pfi_trainlog_last_rate(log) - 1280 / 14.0) < 1e-9);
    size_t usable = 0;
    for (size_t k = 0; k < log->n; k++)
        usable += pfi_trainlog_interval_usable(&log->iv[k]);
    assert_int_equal(usable, s.n_included);
    pfi_trainlog_destroy(log);
}

/* A log whose every elapsed time is nan: read, counted, no throughput. */
static void no_finite(void **state)
{
    (void)state;
    pfi_trainlog *log = rd("megatron_nan.log", PFI_TRAINLOG_AUTO, NULL);
    assert_int_equal(log->n, 3);
    assert_int_equal(log->n_nonfinite, 3);
    pfi_trainlog_summary s;
    assert_int_equal(pfi_trainlog_reduce(log, 0, 1.0, &s), PFI_ERR_EMPTY);
    assert_int_equal(s.n_bad_rate, 3);
    assert_true(isnan(s.steady.mean));
    pfi_trainlog_destroy(log);
}

/* DeepSpeed >= 0.9: 10 steps x 64 samples in 25.6 s = 25 samples/s; an overflow-skipped step
 * in 20->30, a checkpoint in 30->40. DeepSpeed 0.7 ("0/N,"), two ranks printing: 16 x 10 in
 * 0.8 s = 200. The work is steps x train_batch_size, not the printed CurrSamplesPerSec. */
static void deepspeed(void **state)
{
    (void)state;
    pfi_trainlog_summary s;
    pfi_trainlog *log = rd("deepspeed_new.log", PFI_TRAINLOG_AUTO, &s);
    assert_int_equal(log->format, PFI_TRAINLOG_DEEPSPEED);
    assert_int_equal(log->n, 6);
    assert_int_equal(s.n_skipped, 2); /* 0->10 (skipped=4 at the first line: no time either) */
    assert_int_equal(s.n_checkpoint, 1);
    assert_int_equal(s.n_no_time, 0);
    assert_int_equal(s.n_included, 3);
    assert_double_equal(s.steady.mean, 25.0, 1e-6); /* ms timestamps */
    pfi_trainlog_destroy(log);
    log = rd("deepspeed_old.log", PFI_TRAINLOG_AUTO, &s);
    assert_int_equal(log->format, PFI_TRAINLOG_DEEPSPEED);
    assert_int_equal(log->n, 4);
    assert_int_equal(log->n_duplicate, 4);
    assert_int_equal(s.n_included, 3);
    assert_double_equal(s.steady.mean, 200.0, 1e-9);
    assert_false(log->iv[1].flags & PFI_TRAINLOG_PRINTED_RATE);
    pfi_trainlog_destroy(log);
}

/* DeepSpeed-Chat: one line per step, 64 samples in 0.8 s; a nan latency excluded and counted. */
static void deepspeed_chat(void **state)
{
    (void)state;
    pfi_trainlog_summary s;
    pfi_trainlog *log = rd("dschat.log", PFI_TRAINLOG_AUTO, &s);
    assert_int_equal(log->format, PFI_TRAINLOG_DEEPSPEED);
    assert_int_equal(log->n, 5);
    assert_int_equal(log->n_nonfinite, 1);
    assert_int_equal(s.n_bad_rate, 1);
    assert_int_equal(s.n_included, 4);
    assert_double_equal(s.steady.mean, 80.0, 1e-9);
    assert_double_equal(s.tflops_mean, 105.2, 1e-9);
    pfi_trainlog_destroy(log);
}

/* Lightning 2.x: two epochs (two segments) of 100 batches at 5 it/s; 1.x: the epoch bar also
 * counts the 20 validation batches, the two intervals with validation excluded. */
static void lightning(void **state)
{
    (void)state;
    pfi_trainlog_summary s;
    pfi_trainlog *log = rd("lightning2.log", PFI_TRAINLOG_AUTO, &s);
    assert_int_equal(log->format, PFI_TRAINLOG_LIGHTNING);
    assert_string_equal(log->unit, "batches");
    assert_int_equal(log->n, 20);
    assert_int_equal(log->n_segments, 2);
    assert_int_equal(s.n_included, 20);
    assert_double_equal(s.steady.mean, 5.0, 1e-12);
    pfi_trainlog_destroy(log);
    log = rd("lightning1.log", PFI_TRAINLOG_AUTO, &s);
    assert_int_equal(log->format, PFI_TRAINLOG_LIGHTNING);
    assert_int_equal(log->n, 12);
    assert_int_equal(s.n_eval, 2);
    assert_int_equal(s.n_included, 10);
    assert_double_equal(s.steady.mean, 5.0, 1e-12);
    pfi_trainlog_destroy(log);
}

/* nanotron, two DP replicas logging (`[INFO|DP=d|...]`): one record per step; with
 * sequence_length from `[Start training]` the work is 64 x 2048 tokens a step (1 s): 131,072
 * tokens/s, not the printed, rounded 131K; a checkpoint in 3->4. */
static void nanotron_dp(void **state)
{
    (void)state;
    pfi_trainlog_summary s;
    pfi_trainlog *log = rd("nanotron_dp.log", PFI_TRAINLOG_AUTO, &s);
    assert_int_equal(log->format, PFI_TRAINLOG_NANOTRON);
    assert_int_equal(log->n, 6);
    assert_int_equal(log->n_duplicate, 6);
    assert_int_equal(s.n_checkpoint, 1);
    assert_int_equal(s.n_included, 5);
    assert_double_equal(s.steady.mean, 64.0 * 2048.0, 1e-9);
    assert_false(log->iv[1].flags & PFI_TRAINLOG_PRINTED_RATE);
    pfi_trainlog_destroy(log);
}

/* torchtitan 2025: `validate step:` after step 20 is an evaluation, not a step; 20->30 (16 s)
 * is excluded. */
static void titan_validate(void **state)
{
    (void)state;
    pfi_trainlog_summary s;
    pfi_trainlog *log = rd("titan_validate.log", PFI_TRAINLOG_AUTO, &s);
    assert_int_equal(log->n, 6);
    assert_int_equal(s.n_eval, 1);
    assert_int_equal(s.n_included, 4);
    assert_double_equal(s.steady.mean, 8000.0, 1e-9);
    pfi_trainlog_destroy(log);
}

/* A log no reader takes: the error names each reader and why it refused. */
static void refusals(void **state)
{
    (void)state;
    char text[] = "epoch 1 done\nloss 2.3 at step 5\n";
    FILE *f = fmemopen(text, strlen(text), "r");
    pfi_trainlog *log = NULL;
    pfi_diag d;
    assert_int_equal(pfi_trainlog_read_stream(f, "x.log", PFI_TRAINLOG_AUTO, NULL, &log, &d),
                     PFI_ERR_EMPTY);
    fclose(f);
    assert_null(log);
    assert_non_null(strstr(d.message, "megatron: no"));
    assert_non_null(strstr(d.message, "deepspeed: no"));
    assert_non_null(strstr(d.message, "lightning: no"));
    assert_non_null(strstr(d.message, "tqdm: no tqdm bars"));
}

/* '\r'-separated updates far past 65535 bytes in one physical line are records. */
static void long_bar_line(void **state)
{
    (void)state;
    size_t cap = 200000, k = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    for (int n = 0; n <= 2000 && k + 100 < cap; n++)
        k += (size_t)snprintf(text + k, cap - k, "\rtrain: %3d%%|#| %d/2000 [%02d:%02d<00:00, %s]",
                              n / 20, n, n / 60, n % 60, n ? "1.00it/s" : "?it/s");
    text[k++] = '\n';
    assert_true(k > 65536);
    FILE *f = fmemopen(text, k, "r");
    pfi_trainlog *log = NULL;
    pfi_diag d;
    assert_int_equal(pfi_trainlog_read_stream(f, "bar.log", PFI_TRAINLOG_AUTO, NULL, &log, &d),
                     PFI_OK);
    fclose(f);
    free(text);
    assert_int_equal(log->format, PFI_TRAINLOG_TQDM);
    assert_int_equal(log->n_records, 2001);
    pfi_trainlog_summary s;
    assert_int_equal(pfi_trainlog_reduce(log, 0, 1.0, &s), PFI_OK);
    assert_double_equal(s.steady.mean, 1.0, 1e-12);
    pfi_trainlog_destroy(log);
}

/* A fast bar, 10 updates per displayed second: each second's first update closes the interval,
 * the other nine are kept as records but merged (tqdm prints whole seconds); 100 steps in 10 s. */
static void fast_bar(void **state)
{
    (void)state;
    char text[8192];
    size_t k = 0;
    for (int n = 0; n <= 100; n++)
        k += (size_t)snprintf(text + k, sizeof text - k, "\r%3d%%|#| %d/100 [00:%02d<00:10, %s]", n,
                              n, n / 10, n ? "10.00it/s" : "?it/s");
    text[k++] = '\n';
    FILE *f = fmemopen(text, k, "r");
    pfi_trainlog *log = NULL;
    pfi_diag d;
    assert_int_equal(pfi_trainlog_read_stream(f, "fast.log", PFI_TRAINLOG_TQDM, NULL, &log, &d),
                     PFI_OK);
    fclose(f);
    assert_int_equal(log->n_records, 101);
    assert_int_equal(log->n_merged, 90);
    assert_int_equal(log->n, 10);
    pfi_trainlog_summary s;
    assert_int_equal(pfi_trainlog_reduce(log, 0, 1.0, &s), PFI_OK);
    assert_double_equal(s.steady.mean, 10.0, 1e-12);
    pfi_trainlog_destroy(log);
}

/* The regex dialect: PCRE2 with (?<throughput>...); the old one-plain-group form with a note;
 * two plain groups refused. */
static void regex_forms(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/trainlog/torchtitan.log", PFI_TEST_DATA);
    pfi_trainlog *log = NULL;
    pfi_diag d;
    assert_int_equal(pfi_trainlog_read_file(path, PFI_TRAINLOG_REGEX, "tps: ([0-9,]+)", &log, &d),
                     PFI_OK);
    assert_int_equal(log->n, 3);
    assert_double_equal(log->iv[0].rate, 6000, 0);
    assert_non_null(strstr(log->notes, "old POSIX ERE form"));
    pfi_trainlog_destroy(log);
    assert_int_equal(pfi_trainlog_read_file(path, PFI_TRAINLOG_REGEX, "(tps): ([0-9,]+)", &log, &d),
                     PFI_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(d.message, "(?<throughput>"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hf_bar),
        cmocka_unit_test(hf_resumed),
        cmocka_unit_test(hf_resumed_quiet),
        cmocka_unit_test(tqdm_flip),
        cmocka_unit_test(titan_ranks),
        cmocka_unit_test(titan_gap),
        cmocka_unit_test(megatron_resume),
        cmocka_unit_test(no_finite),
        cmocka_unit_test(constant_rate_se_zero),
        cmocka_unit_test(one_exclusion_rule),
        cmocka_unit_test(deepspeed),
        cmocka_unit_test(deepspeed_chat),
        cmocka_unit_test(lightning),
        cmocka_unit_test(nanotron_dp),
        cmocka_unit_test(titan_validate),
        cmocka_unit_test(refusals),
        cmocka_unit_test(long_bar_line),
        cmocka_unit_test(fast_bar),
        cmocka_unit_test(regex_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
