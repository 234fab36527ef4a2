/*
 * Training-log line readers: Megatron-LM/core, nanotron, Hugging Face Trainer, torchtitan,
 * DeepSpeed, PyTorch Lightning, plain tqdm bars and a user regex. Each turns one line into a
 * record (step, clock, work fields) and events (checkpoint, evaluation, resume); the fields
 * each uses are listed in pfi/trainlog.h. trainlog.c makes the intervals.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#define _GNU_SOURCE /* memmem */
#include <math.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/value.h"
#include "telemetry/internal.h"
#include "telemetry/trainlog_internal.h"

#define HAS(s, n, lit) (memmem((s), (n), (lit), sizeof(lit) - 1) != NULL)

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\'' || c == '"';
}

static bool word_eq(const char *a, size_t n, const char *w)
{
    if (strlen(w) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = a[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c + 32);
        if (c != w[i])
            return false;
    }
    return true;
}

bool tl_num(const char *s, size_t n, double *v, bool *nonfinite)
{
    while (n > 0 && is_blank(s[0])) {
        s++;
        n--;
    }
    while (n > 0 && is_blank(s[n - 1]))
        n--;
    char buf[64];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < sizeof buf; i++)
        if (s[i] != ',')
            buf[k++] = s[i];
    buf[k] = '\0';
    if (nonfinite != NULL)
        *nonfinite = false;
    const char *b = buf;
    size_t bk = k;
    if (bk > 0 && (b[0] == '-' || b[0] == '+')) {
        b++;
        bk--;
    }
    if (word_eq(b, bk, "nan") || word_eq(b, bk, "inf") || word_eq(b, bk, "infinity")) {
        *v = NAN;
        if (nonfinite != NULL)
            *nonfinite = true;
        return true;
    }
    double mult = 1;
    if (k > 0) {
        switch (buf[k - 1]) {
        case 'K':
            mult = 1e3;
            k--;
            break;
        case 'M':
            mult = 1e6;
            k--;
            break;
        case 'G':
            mult = 1e9;
            k--;
            break;
        case 'T':
            mult = 1e12;
            k--;
            break;
        default:
            break;
        }
    }
    if (pfi_value_parse(buf, k, v) != PFI_VALUE_OK)
        return false;
    *v *= mult;
    return true;
}

/* The number that follows `key` (after blanks and one of `:`/`=`), up to a delimiter. */
static bool after(const char *s, size_t n, const char *key, double *v, bool *nonfinite)
{
    size_t kl = strlen(key);
    const char *p = memmem(s, n, key, kl);
    if (p == NULL)
        return false;
    const char *e = s + n;
    p += kl;
    while (p < e && (*p == ' ' || *p == ':' || *p == '='))
        p++;
    const char *b = p;
    while (p < e && *p != ' ' && *p != '|' && *p != ';' && *p != '}' && *p != ']' &&
           !(*p == ',' && !(p + 1 < e && p[1] >= '0' && p[1] <= '9')))
        p++;
    size_t len = (size_t)(p - b);
    if (tl_num(b, len, v, nonfinite))
        return true;
    /* a unit glued on ("0.85s,", "nans"): the number before it */
    if (len >= 3 && (word_eq(b, 3, "nan") || word_eq(b, 3, "inf")))
        return tl_num(b, 3, v, nonfinite);
    while (len > 0 && ((b[len - 1] >= 'a' && b[len - 1] <= 'z') || b[len - 1] == ',' ||
                       b[len - 1] == '%' || b[len - 1] == ')'))
        len--;
    return len > 0 && tl_num(b, len, v, nonfinite);
}

/* Integer after key, or -1. */
static long after_long(const char *s, size_t n, const char *key)
{
    double v;
    bool nf;
    if (!after(s, n, key, &v, &nf) || nf || !(v >= 0 && v < 1e15))
        return -1;
    return (long)v;
}

void tl_bad_time(tl_rstate *st, const char *what, const char *s, size_t n)
{
    if (st->bad_time_line > 0)
        return;
    if (n > sizeof st->bad_time - 1)
        n = sizeof st->bad_time - 1;
    memcpy(st->bad_time, s, n);
    st->bad_time[n] = '\0';
    st->bad_time_what = what;
    st->bad_time_line = st->line_now > 0 ? st->line_now : 1;
}

/* "YYYY-MM-DD HH:MM:SS[,.mmm]" (or 'T') within the first 96 bytes -> seconds since the first
 * timestamp the reader saw (whole seconds subtracted as integers: the milliseconds stay exact).
 * A text of that shape that is no time (2025-02-30, 24:00:00, minute 60) is noted
 * (tl_bad_time): false, never a time rolled into another day. */
static bool find_timestamp(tl_rstate *st, const char *s, size_t n, double *out)
{
    for (size_t i = 0; i + 19 <= n && i < 96; i++) {
        const char *p = s + i;
        if (p[4] != '-' || p[7] != '-' || (p[10] != ' ' && p[10] != 'T') || p[13] != ':' ||
            p[16] != ':')
            continue;
        int f[6] = {0};
        static const int at[6] = {0, 5, 8, 11, 14, 17}, len[6] = {4, 2, 2, 2, 2, 2};
        bool ok = true;
        for (int k = 0; k < 6 && ok; k++)
            for (int j = 0; j < len[k]; j++) {
                char c = p[at[k] + j];
                if (c < '0' || c > '9') {
                    ok = false;
                    break;
                }
                f[k] = f[k] * 10 + (c - '0');
            }
        if (!ok)
            continue;
        if (!tm_civil_valid(f[0], (unsigned)f[1], (unsigned)f[2]) || f[3] > 23 || f[4] > 59 ||
            f[5] > 60) {
            tl_bad_time(st, "timestamp", p, 19);
            return false;
        }
        double frac = 0, scale = 0.1;
        if (i + 20 < n && (p[19] == ',' || p[19] == '.'))
            for (size_t j = i + 20; j < n && s[j] >= '0' && s[j] <= '9' && scale > 1e-7; j++) {
                frac += (s[j] - '0') * scale;
                scale /= 10;
            }
        long long whole =
            (long long)tm_days_from_civil(f[0], (unsigned)f[1], (unsigned)f[2]) * 86400 +
            f[3] * 3600LL + f[4] * 60LL + f[5];
        if (!st->t0_set) {
            st->t0 = whole;
            st->t0_set = true;
        }
        *out = (double)(whole - st->t0) + frac;
        return true;
    }
    return false;
}

static tl_rec rec_init(void)
{
    return (tl_rec){.step = -1,
                    .clock_s = NAN,
                    .step_s = NAN,
                    .cum_work = NAN,
                    .step_work = NAN,
                    .rate = NAN,
                    .tflops = NAN,
                    .bar = -1};
}

static void set_unit(tl_rstate *st, const char *u)
{
    snprintf(st->unit, sizeof st->unit, "%s", u);
}

/* ---- Megatron-LM / Megatron-core --------------------------------------------------------- */

static void megatron_line(tl_rstate *st, const char *s, size_t n, tl_out *o)
{
    if (HAS(s, n, "saving checkpoint at iteration") || HAS(s, n, "successfully saved checkpoint"))
        o->events |= TL_EV_CKPT;
    if (HAS(s, n, "validation loss at"))
        o->events |= TL_EV_EVAL;
    if (HAS(s, n, "loading checkpoint from") || HAS(s, n, "successfully loaded checkpoint")) {
        o->events |= TL_EV_RESUME;
        o->resume_step = after_long(s, n, "at iteration");
    }
    if (!HAS(s, n, "elapsed time per iteration (ms)"))
        return;
    const char *it = memmem(s, n, "iteration", 9);
    if (it == NULL)
        return;
    o->sig = true;
    size_t off = (size_t)(it - s) + 9;
    double v;
    bool nf;
    tl_rec r = rec_init();
    r.step = off < n ? strtol(it + 9, NULL, 10) : -1; /* the record is NUL-terminated */
    if (after(s, n, "elapsed time per iteration (ms)", &v, &nf)) {
        r.step_s = v / 1000.0;
        r.nonfinite |= nf;
    }
    if (after(s, n, "consumed samples", &v, &nf) && !nf)
        r.cum_work = v;
    if (after(s, n, "global batch size", &v, &nf) && !nf)
        r.step_work = v;
    if (after(s, n, "samples per second", &v, &nf) && !nf)
        r.rate = v;
    if (after(s, n, "throughput per GPU (TFLOP/s/GPU)", &v, &nf) && !nf)
        r.tflops = v;
    else if (after(s, n, "TFLOPs", &v, &nf) && !nf)
        r.tflops = v;
    if (after(s, n, "number of skipped iterations", &v, &nf) && v > 0)
        r.flags |= PFI_TRAINLOG_SKIPPED;
    if (after(s, n, "number of nan iterations", &v, &nf) && v > 0)
        r.flags |= PFI_TRAINLOG_NAN;
    if (after(s, n, "lm loss", &v, &nf) && nf)
        r.flags |= PFI_TRAINLOG_NAN;
    set_unit(st, "samples");
    o->rec = r;
    o->has_rec = true;
}

/* ---- nanotron ---------------------------------------------------------------------------- */

static void nanotron_line(tl_rstate *st, const char *s, size_t n, tl_out *o)
{
    double v;
    bool nf;
    if (HAS(s, n, "[Start training]")) {
        o->sig = true;
        if (after(s, n, "sequence_length", &v, &nf) && !nf && v > 0)
            st->seq_len = v;
        long start = after_long(s, n, "start_iteration_step");
        if (start > 0) {
            o->events |= TL_EV_RESUME;
            o->resume_step = start;
        }
    }
    if (HAS(s, n, "Saving checkpoint at") || HAS(s, n, "Saving checkpoint to"))
        o->events |= TL_EV_CKPT;
    if (HAS(s, n, "Loading checkpoint") || HAS(s, n, "Resuming training from"))
        o->events |= TL_EV_RESUME;
    if (HAS(s, n, "[Validation]") || HAS(s, n, "validation_loss"))
        o->events |= TL_EV_EVAL;
    const char *it = memmem(s, n, "iteration:", 10);
    if (it == NULL || !(HAS(s, n, "elapsed_time_per_iteration_ms") || HAS(s, n, "tokens_per_sec")))
        return;
    o->sig = true;
    tl_rec r = rec_init();
    r.step = strtol(it + 10, NULL, 10);
    if (after(s, n, "elapsed_time_per_iteration_ms", &v, &nf)) {
        r.step_s = v / 1000.0;
        r.nonfinite |= nf;
    }
    if (after(s, n, "tokens_per_sec:", &v, &nf)) {
        r.rate = v;
        r.nonfinite |= nf;
    }
    if (after(s, n, "global_batch_size", &v, &nf) && !nf && isfinite(st->seq_len))
        r.step_work = v * st->seq_len;
    if (after(s, n, "model_tflops_per_gpu", &v, &nf) && !nf)
        r.tflops = v;
    if (after(s, n, "lm_loss", &v, &nf) && nf)
        r.flags |= PFI_TRAINLOG_NAN;
    set_unit(st, "tokens");
    o->rec = r;
    o->has_rec = true;
}

/* ---- tqdm bars (HF Trainer, Lightning, plain) -------------------------------------------- */

typedef struct bar {
    const char *desc; /* text before ": NN%|" (trimmed), desc_n bytes; "" when none */
    size_t desc_n;
    long n, total; /* total -1 when unknown ("123it [...]") */
    double elapsed_s;
    double rate; /* it/s (s/it inverted); NaN for "?" */
    bool rate_nonfinite;
} bar;

/* "[H:]MM:SS" -> seconds (tqdm's format_interval: minutes and seconds 00..59, hours any).
 * *valid false for a clock of that shape whose minutes or seconds are past 59 ("75:80"). */
static bool parse_clock(const char *p, const char *e, const char **end, double *out, bool *valid)
{
    double f[3];
    int k = 0;
    while (k < 3) {
        if (p >= e || *p < '0' || *p > '9')
            return false;
        double v = 0;
        while (p < e && *p >= '0' && *p <= '9')
            v = v * 10 + (*p++ - '0');
        f[k++] = v;
        if (p < e && *p == ':')
            p++;
        else
            break;
    }
    if (k < 2)
        return false;
    *valid = f[k - 1] <= 59 && f[k - 2] <= 59;
    *out = k == 2 ? f[0] * 60 + f[1] : f[0] * 3600 + f[1] * 60 + f[2];
    *end = p;
    return true;
}

/* The last tqdm bar of a record: `n/total [elapsed<left, rate]` or `n it [elapsed, rate]`.
 * A bar whose elapsed clock is no clock is noted (tl_bad_time) and not taken. */
static bool parse_bar(tl_rstate *st, const char *s, size_t n, bar *b)
{
    const char *e = s + n;
    for (const char *q = e; q-- > s;) {
        if (*q != '[' || q == s || q[-1] != ' ')
            continue;
        double el;
        const char *p;
        bool clock_ok;
        if (!parse_clock(q + 1, e, &p, &el, &clock_ok))
            continue;
        const char *clock_end = p;
        if (p < e && *p == '<') { /* remaining: a clock or "?" */
            p++;
            while (p < e && *p != ',' && *p != ']')
                p++;
        }
        if (p >= e || *p != ',')
            continue;
        p++;
        while (p < e && *p == ' ')
            p++;
        const char *rb = p;
        while (p < e &&
               ((*p >= '0' && *p <= '9') || *p == '.' || *p == '?' || *p == 'e' || *p == '-' ||
                *p == '+' || *p == 'n' || *p == 'a' || *p == 'i' || *p == 'f'))
            p++;
        /* the rate unit follows: "it/s", "s/it", "samples/s", "batch/s" */
        const char *ue = p;
        while (ue < e && *ue != ',' && *ue != ']' && *ue != ' ')
            ue++;
        double r = NAN;
        bool nf = false;
        size_t rn = (size_t)(p - rb);
        /* a unit starting with a letter that was eaten ("inf"...) is handled by tl_num */
        if (rn > 0 && rb[0] != '?')
            if (!tl_num(rb, rn, &r, &nf))
                r = NAN;
        bool inverse = ue - p >= 2 && p[0] == 's' && p[1] == '/';
        if (inverse && isfinite(r))
            r = r > 0 ? 1.0 / r : NAN;
        /* before '[': "n/total " or "nit " */
        const char *t = q - 1;
        while (t > s && t[-1] == ' ')
            t--;
        const char *ce = t;
        long total = -1, cnt;
        if (ce - s >= 2 && ce[-1] == 't' && ce[-2] == 'i')
            ce -= 2;
        const char *d = ce;
        while (d > s && d[-1] >= '0' && d[-1] <= '9')
            d--;
        if (d == ce)
            continue;
        if (ce == t) { /* n/total */
            total = strtol(d, NULL, 10);
            if (d == s || d[-1] != '/')
                continue;
            const char *c0 = d - 1;
            const char *c = c0;
            while (c > s && c[-1] >= '0' && c[-1] <= '9')
                c--;
            if (c == c0)
                continue;
            cnt = strtol(c, NULL, 10);
            d = c;
        } else {
            cnt = strtol(d, NULL, 10);
        }
        /* description: text before ": NN%|" or before the count */
        const char *pc = memchr(s, '%', (size_t)(d - s));
        const char *de = pc;
        if (de != NULL) {
            while (de > s && de[-1] >= '0' && de[-1] <= '9')
                de--;
            while (de > s && (de[-1] == ' ' || de[-1] == ':'))
                de--;
        } else {
            de = d;
            while (de > s && (de[-1] == ' ' || de[-1] == ':'))
                de--;
        }
        const char *ds = s;
        while (ds < de && (*ds == ' ' || *ds == '\t'))
            ds++;
        if (!clock_ok) {
            tl_bad_time(st, "elapsed time", q + 1, (size_t)(clock_end - q - 1));
            return false;
        }
        *b = (bar){.desc = ds,
                   .desc_n = (size_t)(de - ds),
                   .n = cnt,
                   .total = total,
                   .elapsed_s = el,
                   .rate = r,
                   .rate_nonfinite = nf};
        return true;
    }
    return false;
}

static bool desc_is(const bar *b, const char *prefix)
{
    size_t k = strlen(prefix);
    return b->desc_n >= k && memcmp(b->desc, prefix, k) == 0;
}

static tl_rec bar_rec(const bar *b, double step_work)
{
    tl_rec r = rec_init();
    r.step = b->n;
    r.clock_s = b->elapsed_s;
    r.rate = isfinite(step_work) && isfinite(b->rate) ? b->rate * step_work : b->rate;
    r.step_work = step_work;
    r.nonfinite = b->rate_nonfinite;
    r.bar = b->total;
    return r;
}

/* HF log dict value: `'key': value`. */
static bool dict_get(const char *s, size_t n, const char *key, double *v, bool *nf)
{
    char pat[64];
    snprintf(pat, sizeof pat, "'%s':", key);
    const char *p = memmem(s, n, pat, strlen(pat));
    if (p == NULL) {
        snprintf(pat, sizeof pat, "\"%s\":", key); /* JSON logs */
        p = memmem(s, n, pat, strlen(pat));
        if (p == NULL)
            return false;
    }
    p += strlen(pat);
    const char *e = p;
    while (e < s + n && *e != ',' && *e != '}')
        e++;
    return tl_num(p, (size_t)(e - p), v, nf);
}

static void hf_line(tl_rstate *st, const char *s, size_t n, tl_out *o)
{
    double v;
    bool nf;
    if (HAS(s, n, "***** Running training *****"))
        o->sig = true;
    if (HAS(s, n, "Total optimization steps")) {
        o->sig = true;
        st->total_steps = after_long(s, n, "Total optimization steps =");
    }
    if (HAS(s, n, "Total train batch size")) {
        o->sig = true;
        if (after(s, n, "accumulation) =", &v, &nf) && !nf && v > 0)
            st->batch = v;
        else if (after(s, n, "Total train batch size =", &v, &nf) && !nf && v > 0)
            st->batch = v;
    }
    if (HAS(s, n, "Saving model checkpoint to")) {
        o->sig = true;
        o->events |= TL_EV_CKPT;
    }
    if (HAS(s, n, "Continuing training from global step")) {
        o->sig = true;
        o->events |= TL_EV_RESUME;
        o->resume_step = after_long(s, n, "from global step");
    }
    if (HAS(s, n, "{'eval_") || HAS(s, n, "{\"eval_") || HAS(s, n, "***** Running Evaluation")) {
        o->sig = true;
        o->events |= TL_EV_EVAL;
    }
    if ((HAS(s, n, "{'loss'") || HAS(s, n, "{\"loss\"")) && dict_get(s, n, "loss", &v, &nf)) {
        o->sig = true;
        o->nan_loss = nf;
    }
    if (dict_get(s, n, "train_runtime", &v, &nf)) {
        o->sig = true;
        pfi_trainlog_interval iv = {
            .iteration = st->total_steps, .work = NAN, .time_s = v, .rate = NAN, .tflops = NAN};
        double sps;
        bool snf = false;
        if (dict_get(s, n, "train_tokens_per_second", &sps, &snf))
            snprintf(st->final_unit, sizeof st->final_unit, "tokens");
        else if (dict_get(s, n, "train_samples_per_second", &sps, &snf))
            snprintf(st->final_unit, sizeof st->final_unit, "samples");
        else
            sps = NAN;
        if (nf || snf || !(v > 0) || !isfinite(sps)) {
            iv.flags |= PFI_TRAINLOG_BAD_RATE;
        } else {
            iv.rate = sps;
            iv.work = sps * v;
            iv.flags |= PFI_TRAINLOG_PRINTED_RATE;
        }
        o->direct = iv;
        o->has_direct = true;
    }
    bar b;
    if (!parse_bar(st, s, n, &b) || b.desc_n != 0)
        return;
    if (st->train_total < 0)
        st->train_total = st->total_steps >= 0 ? st->total_steps : b.total;
    if (b.total != st->train_total) {
        o->events |= TL_EV_EVAL; /* the evaluation loop's bar */
        return;
    }
    set_unit(st, isfinite(st->batch) ? "samples" : "steps");
    o->rec = bar_rec(&b, isfinite(st->batch) ? st->batch : 1.0);
    o->has_rec = true;
}

static void lightning_line(tl_rstate *st, const char *s, size_t n, tl_out *o)
{
    if (HAS(s, n, "saving model to") || HAS(s, n, "Saving latest checkpoint"))
        o->events |= TL_EV_CKPT;
    if (HAS(s, n, "Restoring states from the checkpoint") ||
        HAS(s, n, "Restored all states from the checkpoint"))
        o->events |= TL_EV_RESUME;
    bar b;
    if (!parse_bar(st, s, n, &b))
        return;
    if (desc_is(&b, "Validation") || desc_is(&b, "Validating") || desc_is(&b, "Sanity Checking") ||
        desc_is(&b, "Testing")) {
        o->events |= TL_EV_EVAL;
        return;
    }
    if (!desc_is(&b, "Epoch "))
        return;
    o->sig = true;
    set_unit(st, "batches");
    o->rec = bar_rec(&b, 1.0);
    o->rec.bar = strtol(b.desc + 6, NULL, 10) * 1000003L + (b.total >= 0 ? b.total : 0);
    o->has_rec = true;
}

static void tqdm_line(tl_rstate *st, const char *s, size_t n, tl_out *o)
{
    bar b;
    if (!parse_bar(st, s, n, &b))
        return;
    size_t dn = b.desc_n < sizeof st->main_desc - 1 ? b.desc_n : sizeof st->main_desc - 1;
    if (!st->main_set) {
        memcpy(st->main_desc, b.desc, dn);
        st->main_desc[dn] = '\0';
        st->main_set = true;
    }
    o->sig = true;
    if (strlen(st->main_desc) != dn || memcmp(st->main_desc, b.desc, dn) != 0) {
        o->events |= TL_EV_EVAL; /* another bar nested in the loop */
        return;
    }
    set_unit(st, "steps");
    o->rec = bar_rec(&b, 1.0);
    o->has_rec = true;
}

/* ---- torchtitan -------------------------------------------------------------------------- */

static void titan_line(tl_rstate *st, const char *s0, size_t n0, tl_out *o)
{
    char buf[4096]; /* ANSI colour escapes stripped */
    size_t n = 0;
    for (size_t i = 0; i < n0 && n + 1 < sizeof buf; i++) {
        if (s0[i] == '\x1b') {
            while (i < n0 && !((s0[i] >= 'A' && s0[i] <= 'Z') || (s0[i] >= 'a' && s0[i] <= 'z')))
                i++;
            continue;
        }
        buf[n++] = s0[i];
    }
    buf[n] = '\0';
    if (HAS(buf, n, "[titan]"))
        o->sig = true;
    if (HAS(buf, n, "Saving") && HAS(buf, n, "checkpoint"))
        o->events |= TL_EV_CKPT;
    if (HAS(buf, n, "Loading the checkpoint") || HAS(buf, n, "Loading checkpoint")) {
        o->events |= TL_EV_RESUME;
        o->resume_step = after_long(buf, n, "at step");
    }
    long start = HAS(buf, n, "Training starts at step") ? after_long(buf, n, "at step") : -1;
    if (start > 1) {
        o->events |= TL_EV_RESUME;
        o->resume_step = start - 1;
    }
    if (HAS(buf, n, "validate step") || HAS(buf, n, "Validation step") ||
        HAS(buf, n, "validation step")) {
        o->events |= TL_EV_EVAL;
        return;
    }
    const char *sp = strstr(buf, "step:");
    const char *tp = strstr(buf, "tps:");
    if (tp == NULL)
        tp = strstr(buf, "wps:");
    if (sp == NULL || tp == NULL)
        return;
    o->sig = true;
    tl_rec r = rec_init();
    r.step = strtol(sp + 5, NULL, 10);
    double v;
    bool nf;
    if (after(tp, strlen(tp), tp[0] == 't' ? "tps:" : "wps:", &v, &nf)) {
        r.rate = v;
        r.nonfinite |= nf;
    }
    r.rate_interval = true;
    if (after(buf, n, "loss:", &v, &nf) && nf)
        r.flags |= PFI_TRAINLOG_NAN;
    if (after(buf, n, "tflops:", &v, &nf) && !nf)
        r.tflops = v;
    double ts;
    if (find_timestamp(st, buf, n, &ts))
        r.clock_s = ts;
    set_unit(st, "tokens");
    o->rec = r;
    o->has_rec = true;
}

/* ---- DeepSpeed --------------------------------------------------------------------------- */

static void deepspeed_line(tl_rstate *st, const char *s, size_t n, tl_out *o)
{
    double v;
    bool nf;
    if (HAS(s, n, "DeepSpeed") || HAS(s, n, "deepspeed"))
        o->sig = true;
    if (HAS(s, n, "train_batch_size ....")) {
        /* the config dump: "train_batch_size ............. 64" */
        const char *p = memmem(s, n, "train_batch_size", 16);
        const char *e = s + n;
        p += 16;
        while (p < e && (*p == ' ' || *p == '.'))
            p++;
        if (tl_num(p, (size_t)(e - p), &v, &nf) && !nf && v > 0)
            st->batch = v;
    }
    if (HAS(s, n, "Saving model checkpoint") || HAS(s, n, "is about to be saved") ||
        HAS(s, n, "[Torch] Saving"))
        o->events |= TL_EV_CKPT;
    if (HAS(s, n, "Loading model checkpoint") || HAS(s, n, "Loading checkpoint") ||
        HAS(s, n, "loading checkpoint"))
        o->events |= TL_EV_RESUME;
    if (HAS(s, n, "] step=") && HAS(s, n, "skipped=")) {
        o->sig = true;
        if (after(s, n, "skipped=", &v, &nf) && !nf)
            st->skipped_now = v;
    }
    if (HAS(s, n, "Latency:") && HAS(s, n, "Samples/sec:")) {
        /* DeepSpeed-Chat's print_throughput, one step: "Latency: 0.85s, TFLOPs: 105.2,
           Samples/sec: 75.5, Time/seq 0.01s, Batch Size: 64, ..."; the step's work and time */
        o->sig = true;
        double lat = NAN, sps = NAN, bs = NAN, tf = NAN;
        bool n1 = false, n2 = false;
        after(s, n, "Latency:", &lat, &n1);
        after(s, n, "Samples/sec:", &sps, &n2);
        if (after(s, n, "Batch Size:", &v, &nf) && !nf && v > 0)
            bs = v;
        if (after(s, n, "TFLOPs:", &v, &nf) && !nf)
            tf = v;
        pfi_trainlog_interval iv = {
            .iteration = -1, .n_iter = 1, .work = NAN, .time_s = lat, .rate = NAN, .tflops = tf};
        if (!(lat > 0) || n1 || n2) {
            iv.flags |= PFI_TRAINLOG_BAD_RATE;
            iv.time_s = NAN;
            o->rec.nonfinite = n1 || n2;
        } else if (isfinite(bs)) {
            iv.work = bs;
            iv.rate = bs / lat;
        } else if (isfinite(sps)) {
            iv.work = sps * lat;
            iv.rate = sps;
            iv.flags |= PFI_TRAINLOG_PRINTED_RATE;
        } else {
            iv.flags |= PFI_TRAINLOG_BAD_RATE;
        }
        set_unit(st, "samples");
        o->direct = iv;
        o->has_direct = true;
        return;
    }
    if (!HAS(s, n, "SamplesPerSec="))
        return;
    o->sig = true;
    tl_rec r = rec_init();
    const char *g = memmem(s, n, "global_step=", 12);
    if (g != NULL) {
        r.step = strtol(g + 12, NULL, 10);
    } else { /* DeepSpeed < 0.9: "stop] E/N, RunningAvgSamplesPerSec=" */
        const char *q = memmem(s, n, "stop] ", 6);
        if (q == NULL)
            return;
        char *e1;
        long ep = strtol(q + 6, &e1, 10);
        if (*e1 != '/')
            return;
        r.step = strtol(e1 + 1, NULL, 10);
        r.bar = ep;
    }
    if (after(s, n, "CurrSamplesPerSec=", &v, &nf)) {
        r.rate = v;
        r.nonfinite |= nf;
    }
    if (find_timestamp(st, s, n, &v))
        r.clock_s = v;
    if (isfinite(st->batch))
        r.step_work = st->batch;
    if (st->skipped_now > st->skipped_rec)
        r.flags |= PFI_TRAINLOG_SKIPPED;
    st->skipped_rec = st->skipped_now;
    set_unit(st, "samples");
    o->rec = r;
    o->has_rec = true;
}

/* ---- regex ------------------------------------------------------------------------------- */

static void regex_line(tl_rstate *st, const char *s, size_t n, tl_out *o)
{
    pcre2_code *re = st->re;
    pcre2_match_data *md = st->md;
    int rc = pcre2_match(re, (PCRE2_SPTR)s, n, 0, 0, md, NULL);
    if (rc < 0)
        return;
    o->sig = true;
    pfi_trainlog_interval iv = {
        .iteration = -1, .work = NAN, .time_s = NAN, .rate = NAN, .tflops = NAN};
    double vals[3] = {NAN, NAN, NAN};
    bool any_nf = false;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    for (int g = 0; g < 3; g++) {
        int k = st->group[g];
        if (k < 0 || k >= rc || ov[2 * k] == PCRE2_UNSET)
            continue;
        double x;
        bool nf;
        if (tl_num(s + ov[2 * k], ov[2 * k + 1] - ov[2 * k], &x, &nf)) {
            if (nf)
                any_nf = true;
            else
                vals[g] = x;
        }
    }
    iv.rate = vals[0];
    if (isfinite(vals[1]) && isfinite(vals[2]) && vals[2] > 0) {
        iv.work = vals[1];
        iv.time_s = vals[2];
        iv.rate = vals[1] / vals[2];
    } else if (isfinite(vals[0]) && isfinite(vals[2])) {
        iv.time_s = vals[2];
        iv.work = vals[0] * vals[2];
        iv.flags |= PFI_TRAINLOG_PRINTED_RATE;
    } else {
        iv.flags |= PFI_TRAINLOG_NO_TIME;
    }
    if (!isfinite(iv.rate))
        iv.flags |= PFI_TRAINLOG_BAD_RATE;
    if (any_nf)
        o->rec.nonfinite = true;
    if (st->unit[0] == '\0')
        set_unit(st, "work");
    o->direct = iv;
    o->has_direct = true;
}

const tl_reader tl_readers[] = {
    {PFI_TRAINLOG_MEGATRON, "'iteration N/ T | ... elapsed time per iteration (ms)' lines",
     megatron_line},
    {PFI_TRAINLOG_NANOTRON, "'iteration: N / T | elapsed_time_per_iteration_ms' lines",
     nanotron_line},
    {PFI_TRAINLOG_TORCHTITAN, "'step: N ... tps:' lines", titan_line},
    {PFI_TRAINLOG_HF, "HF Trainer lines or its tqdm bar", hf_line},
    {PFI_TRAINLOG_DEEPSPEED, "'SamplesPerSec=' timer lines", deepspeed_line},
    {PFI_TRAINLOG_LIGHTNING, "'Epoch N: ..|' bars", lightning_line},
    {PFI_TRAINLOG_TQDM, "tqdm bars", tqdm_line},
    {PFI_TRAINLOG_REGEX, "lines matching the regex", regex_line},
};
const size_t tl_n_readers = sizeof tl_readers / sizeof tl_readers[0];

const tl_reader *tl_reader_for(pfi_trainlog_format f)
{
    for (size_t i = 0; i < tl_n_readers; i++)
        if (tl_readers[i].fmt == f)
            return &tl_readers[i];
    return NULL;
}
