/*
 * Training-log readers (Megatron-LM, nanotron, Hugging Face Trainer, torchtitan, a user
 * regex) and their reduction to steady-state throughput. Formats: pfi/trainlog.h.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#define _GNU_SOURCE /* memmem, gmtime_r */
#include "pfi/trainlog.h"

#include <errno.h>
#include <math.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "telemetry/internal.h"

static const char *const tl_names[] = {"auto", "megatron", "nanotron", "hf", "torchtitan", "regex"};

const char *pfi_trainlog_format_name(pfi_trainlog_format f)
{
    return (unsigned)f < 6 ? tl_names[f] : "unknown";
}

bool pfi_trainlog_format_parse(const char *name, pfi_trainlog_format *out)
{
    for (int i = 0; i < 6; i++) {
        if (strcmp(name, tl_names[i]) == 0) {
            *out = (pfi_trainlog_format)i;
            return true;
        }
    }
    return false;
}

void pfi_trainlog_destroy(pfi_trainlog *log)
{
    if (log == NULL)
        return;
    pfi_free(log->iv);
    pfi_free(log);
}

static pfi_error push(pfi_trainlog *log, const pfi_trainlog_interval *iv)
{
    if (log->n >= PFI_TRAINLOG_MAX_INTERVALS)
        return PFI_ERR_LIMIT;
    if (log->n == log->cap) {
        size_t cap = log->cap ? 2 * log->cap : 64;
        pfi_trainlog_interval *p = pfi_realloc(log->iv, cap * sizeof *p);
        if (p == NULL)
            return PFI_ERR_NOMEM;
        log->iv = p;
        log->cap = cap;
    }
    log->iv[log->n++] = *iv;
    if (iv->flags & PFI_TRAINLOG_NAN)
        log->n_nan++;
    return PFI_OK;
}

typedef struct span {
    const char *s;
    size_t n;
} span;

static span trim(span x)
{
    while (x.n > 0 && (x.s[0] == ' ' || x.s[0] == '\t' || x.s[0] == '\'' || x.s[0] == '"')) {
        x.s++;
        x.n--;
    }
    while (x.n > 0 && (x.s[x.n - 1] == ' ' || x.s[x.n - 1] == '\t' || x.s[x.n - 1] == '\'' ||
                       x.s[x.n - 1] == '"'))
        x.n--;
    return x;
}

static bool strncasecmp_l_free(const char *a, const char *w);

/* A number with optional K/M/G/T suffix and thousands commas ("6,942"); nan/inf -> NaN
 * with *is_nan set. Returns false when not a number. */
static bool num(span x, double *v, bool *is_nan)
{
    x = trim(x);
    char buf[64];
    size_t k = 0;
    for (size_t i = 0; i < x.n && k + 1 < sizeof buf; i++)
        if (x.s[i] != ',')
            buf[k++] = x.s[i];
    buf[k] = '\0';
    if (is_nan)
        *is_nan = false;
    if (k >= 3 && (strncasecmp_l_free(buf, "nan") || strncasecmp_l_free(buf, "inf") ||
                   strncasecmp_l_free(buf, "-inf") || strncasecmp_l_free(buf, "+inf"))) {
        *v = NAN;
        if (is_nan)
            *is_nan = true;
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

/* Find "key<sep>" in the '|'-separated fields of a line; value span in *out. */
static bool kv(const span *parts, size_t np, const char *key, char sep, span *out)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < np; i++) {
        span p = trim(parts[i]);
        if (p.n > kl && memcmp(p.s, key, kl) == 0) {
            size_t j = kl;
            while (j < p.n && p.s[j] == ' ')
                j++;
            if (j < p.n && p.s[j] == sep) {
                *out = (span){p.s + j + 1, p.n - j - 1};
                return true;
            }
        }
    }
    return false;
}

#define MAX_PARTS 128

static size_t split_bar(const char *s, size_t n, span *out)
{
    size_t k = 0, b = 0;
    for (size_t i = 0; i <= n && k < MAX_PARTS; i++) {
        if (i == n || s[i] == '|') {
            out[k++] = (span){s + b, i - b};
            b = i + 1;
        }
    }
    return k;
}

typedef struct tl_state {
    long prev_iter;
    double prev_consumed;
    bool ckpt_pending;
    double prev_ts;
} tl_state;

static bool strncasecmp_l_free(const char *a, const char *w)
{
    size_t n = strlen(w);
    if (strlen(a) != n)
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

/* "[2025-08-11 06:40:31]" or "2025-01-01 12:00:00,000" anywhere near the start -> seconds. */
static bool find_timestamp(const char *s, size_t n, double *out)
{
    for (size_t i = 0; i + 19 <= n && i < 64; i++) {
        const char *p = s + i;
        if (p[4] == '-' && p[7] == '-' && p[10] == ' ' && p[13] == ':' && p[16] == ':') {
            int y, mo, d, h, mi, se;
            char b[20];
            memcpy(b, p, 19);
            b[19] = '\0';
            if (sscanf(b, "%4d-%2d-%2d %2d:%2d:%2d", &y, &mo, &d, &h, &mi, &se) == 6 && mo >= 1 &&
                mo <= 12 && d >= 1 && d <= 31) {
                *out = (double)tm_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400.0 +
                       h * 3600.0 + mi * 60.0 + se;
                return true;
            }
        }
    }
    return false;
}

static pfi_error megatron_line(pfi_trainlog *log, tl_state *st, const char *s, size_t n, long line)
{
    span parts[MAX_PARTS];
    size_t np = split_bar(s, n, parts);
    const char *it = memmem(parts[0].s, parts[0].n, "iteration", 9);
    if (it == NULL)
        return PFI_OK;
    long iter = strtol(it + 9, NULL, 10);
    pfi_trainlog_interval iv = {
        .line = line, .iteration = iter, .work = NAN, .time_s = NAN, .rate = NAN, .tflops = NAN};
    iv.n_iter = st->prev_iter >= 0 ? iter - st->prev_iter : iter;
    span v;
    double x;
    bool isnan_;
    double elapsed = NAN, consumed = NAN, gbs = NAN;
    if (kv(parts, np, "elapsed time per iteration (ms)", ':', &v) && num(v, &x, NULL))
        elapsed = x;
    if (kv(parts, np, "consumed samples", ':', &v) && num(v, &x, NULL))
        consumed = x;
    if (kv(parts, np, "global batch size", ':', &v) && num(v, &x, NULL))
        gbs = x;
    if (kv(parts, np, "throughput per GPU (TFLOP/s/GPU)", ':', &v) && num(v, &x, NULL))
        iv.tflops = x;
    if (kv(parts, np, "number of skipped iterations", ':', &v) && num(v, &x, NULL) && x > 0)
        iv.flags |= PFI_TRAINLOG_SKIPPED;
    if (kv(parts, np, "number of nan iterations", ':', &v) && num(v, &x, NULL) && x > 0)
        iv.flags |= PFI_TRAINLOG_NAN;
    if (kv(parts, np, "lm loss", ':', &v) && num(v, &x, &isnan_) && isnan_)
        iv.flags |= PFI_TRAINLOG_NAN;
    if (st->ckpt_pending)
        iv.flags |= PFI_TRAINLOG_CHECKPOINT;
    st->ckpt_pending = false;
    if (iv.n_iter > 0) {
        iv.time_s = elapsed * (double)iv.n_iter / 1000.0;
        if (!isnan(consumed) && !isnan(st->prev_consumed))
            iv.work = consumed - st->prev_consumed;
        else if (!isnan(gbs))
            iv.work = gbs * (double)iv.n_iter;
    }
    st->prev_iter = iter;
    st->prev_consumed = consumed;
    if (isfinite(iv.work) && isfinite(iv.time_s) && iv.time_s > 0 && iv.work >= 0)
        iv.rate = iv.work / iv.time_s;
    else
        iv.flags |= PFI_TRAINLOG_BAD_RATE;
    snprintf(log->unit, sizeof log->unit, "samples");
    return push(log, &iv);
}

static pfi_error nanotron_line(pfi_trainlog *log, tl_state *st, const char *s, size_t n, long line)
{
    span parts[MAX_PARTS];
    size_t np = split_bar(s, n, parts);
    const char *it = memmem(s, n, "iteration:", 10);
    if (it == NULL)
        return PFI_OK;
    long iter = strtol(it + 10, NULL, 10);
    pfi_trainlog_interval iv = {
        .line = line, .iteration = iter, .work = NAN, .time_s = NAN, .rate = NAN, .tflops = NAN};
    iv.n_iter = st->prev_iter >= 0 ? iter - st->prev_iter : iter;
    span v;
    double x, tps = NAN, ms = NAN;
    bool isnan_;
    if (kv(parts, np, "elapsed_time_per_iteration_ms", ':', &v) && num(v, &x, NULL))
        ms = x;
    if (kv(parts, np, "tokens_per_sec", ':', &v) && num(v, &x, NULL))
        tps = x;
    if (kv(parts, np, "model_tflops_per_gpu", ':', &v) && num(v, &x, NULL))
        iv.tflops = x;
    if (kv(parts, np, "lm_loss", ':', &v) && num(v, &x, &isnan_) && isnan_)
        iv.flags |= PFI_TRAINLOG_NAN;
    if (st->ckpt_pending)
        iv.flags |= PFI_TRAINLOG_CHECKPOINT;
    st->ckpt_pending = false;
    st->prev_iter = iter;
    if (iv.n_iter > 0 && isfinite(ms))
        iv.time_s = ms * (double)iv.n_iter / 1000.0;
    if (isfinite(tps) && isfinite(iv.time_s)) {
        iv.work = tps * iv.time_s;
        iv.rate = tps;
    } else {
        iv.flags |= PFI_TRAINLOG_BAD_RATE;
    }
    snprintf(log->unit, sizeof log->unit, "tokens");
    return push(log, &iv);
}

static bool dict_get(const char *s, size_t n, const char *key, double *v, bool *isnan_)
{
    char pat[64];
    snprintf(pat, sizeof pat, "'%s':", key);
    const char *p = memmem(s, n, pat, strlen(pat));
    if (p == NULL)
        return false;
    p += strlen(pat);
    const char *e = p;
    while (e < s + n && *e != ',' && *e != '}')
        e++;
    return num((span){p, (size_t)(e - p)}, v, isnan_);
}

static pfi_error hf_line(pfi_trainlog *log, const char *s, size_t n, long line)
{
    double rt, sps, x;
    bool isnan_;
    if (dict_get(s, n, "loss", &x, &isnan_) && isnan_) {
        log->n_nan++;
        return PFI_OK;
    }
    if (!dict_get(s, n, "train_runtime", &rt, NULL))
        return PFI_OK;
    pfi_trainlog_interval iv = {
        .line = line, .iteration = -1, .work = NAN, .time_s = rt, .rate = NAN, .tflops = NAN};
    if (dict_get(s, n, "train_tokens_per_second", &sps, NULL)) {
        snprintf(log->unit, sizeof log->unit, "tokens");
    } else if (dict_get(s, n, "train_samples_per_second", &sps, NULL)) {
        snprintf(log->unit, sizeof log->unit, "samples");
    } else {
        sps = NAN;
    }
    if (isfinite(sps) && isfinite(rt) && rt > 0) {
        iv.rate = sps;
        iv.work = sps * rt;
    } else {
        iv.flags |= PFI_TRAINLOG_BAD_RATE;
    }
    return push(log, &iv);
}

static pfi_error titan_line(pfi_trainlog *log, tl_state *st, const char *s0, size_t n0, long line)
{
    /* Strip ANSI colour escapes into a local copy. */
    char buf[4096];
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
    const char *sp = strstr(buf, "step:");
    const char *tp = strstr(buf, "tps:");
    if (tp == NULL)
        tp = strstr(buf, "wps:");
    if (sp == NULL || tp == NULL)
        return PFI_OK;
    long step = strtol(sp + 5, NULL, 10);
    pfi_trainlog_interval iv = {
        .line = line, .iteration = step, .work = NAN, .time_s = NAN, .rate = NAN, .tflops = NAN};
    iv.n_iter = st->prev_iter >= 0 ? step - st->prev_iter : step;
    st->prev_iter = step;
    const char *e = tp + 4;
    while (*e == ' ')
        e++;
    const char *b = e;
    while (*e && *e != ' ')
        e++;
    double x;
    if (num((span){b, (size_t)(e - b)}, &x, NULL) && isfinite(x))
        iv.rate = x;
    else
        iv.flags |= PFI_TRAINLOG_BAD_RATE;
    const char *lp = strstr(buf, "loss:");
    bool isnan_;
    if (lp != NULL) {
        const char *q = lp + 5;
        while (*q == ' ')
            q++;
        const char *qe = q;
        while (*qe && *qe != ' ')
            qe++;
        if (num((span){q, (size_t)(qe - q)}, &x, &isnan_) && isnan_)
            iv.flags |= PFI_TRAINLOG_NAN;
    }
    const char *fp = strstr(buf, "tflops:");
    if (fp != NULL && num((span){fp + 7, strcspn(fp + 8, " ") + 1}, &x, NULL))
        iv.tflops = x;
    double ts;
    if (find_timestamp(buf, n, &ts)) {
        if (!isnan(st->prev_ts) && ts > st->prev_ts)
            iv.time_s = ts - st->prev_ts;
        st->prev_ts = ts;
    }
    if (isfinite(iv.time_s) && isfinite(iv.rate))
        iv.work = iv.rate * iv.time_s;
    else
        iv.flags |= PFI_TRAINLOG_NO_TIME;
    snprintf(log->unit, sizeof log->unit, "tokens");
    return push(log, &iv);
}

static pfi_error regex_line(pfi_trainlog *log, pcre2_code *re, pcre2_match_data *md, const char *s,
                            size_t n, long line)
{
    int rc = pcre2_match(re, (PCRE2_SPTR)s, n, 0, 0, md, NULL);
    if (rc < 0)
        return PFI_OK;
    pfi_trainlog_interval iv = {
        .line = line, .iteration = -1, .work = NAN, .time_s = NAN, .rate = NAN, .tflops = NAN};
    static const char *const groups[] = {"throughput", "work", "time_s"};
    double vals[3] = {NAN, NAN, NAN};
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    for (int g = 0; g < 3; g++) {
        int k = pcre2_substring_number_from_name(re, (PCRE2_SPTR)groups[g]);
        if (k < 0 || k >= rc || ov[2 * k] == PCRE2_UNSET)
            continue;
        double x;
        if (num((span){s + ov[2 * k], ov[2 * k + 1] - ov[2 * k]}, &x, NULL) && isfinite(x))
            vals[g] = x;
    }
    iv.rate = vals[0];
    if (isfinite(vals[1]) && isfinite(vals[2]) && vals[2] > 0) {
        iv.work = vals[1];
        iv.time_s = vals[2];
        iv.rate = vals[1] / vals[2];
    } else if (isfinite(vals[0]) && isfinite(vals[2])) {
        iv.time_s = vals[2];
        iv.work = vals[0] * vals[2];
    } else {
        iv.flags |= PFI_TRAINLOG_NO_TIME;
    }
    if (!isfinite(iv.rate))
        iv.flags |= PFI_TRAINLOG_BAD_RATE;
    if (log->unit[0] == '\0')
        snprintf(log->unit, sizeof log->unit, "work");
    return push(log, &iv);
}

static pfi_trainlog_format detect_line(const char *s, size_t n)
{
    if (memmem(s, n, "elapsed time per iteration (ms)", 31))
        return PFI_TRAINLOG_MEGATRON;
    if (memmem(s, n, "elapsed_time_per_iteration_ms", 29))
        return PFI_TRAINLOG_NANOTRON;
    if (memmem(s, n, "'train_runtime'", 15) || memmem(s, n, "{'loss'", 7))
        return PFI_TRAINLOG_HF;
    if (memmem(s, n, "step:", 5) && (memmem(s, n, "tps:", 4) || memmem(s, n, "wps:", 4)))
        return PFI_TRAINLOG_TORCHTITAN;
    return PFI_TRAINLOG_AUTO;
}

pfi_error pfi_trainlog_read_stream(FILE *f, const char *name, pfi_trainlog_format fmt,
                                   const char *regex, pfi_trainlog **out, pfi_diag *diag)
{
    *out = NULL;
    if (diag != NULL) {
        pfi_diag_clear(diag);
        snprintf(diag->file, sizeof diag->file, "%s", name);
    }
    pcre2_code *re = NULL;
    pcre2_match_data *md = NULL;
    if (fmt == PFI_TRAINLOG_REGEX || (fmt == PFI_TRAINLOG_AUTO && regex != NULL)) {
        fmt = PFI_TRAINLOG_REGEX;
        int ec;
        PCRE2_SIZE eo;
        if (regex == NULL)
            return PFI_ERR_INVALID_ARGUMENT;
        re = pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
        if (re == NULL || pcre2_substring_number_from_name(re, (PCRE2_SPTR) "throughput") < 0) {
            if (diag != NULL) {
                if (re == NULL) {
                    PCRE2_UCHAR msg[200];
                    pcre2_get_error_message(ec, msg, sizeof msg);
                    snprintf(diag->message, sizeof diag->message,
                             "--throughput-regex: %s at offset %zu", (char *)msg, (size_t)eo);
                } else {
                    snprintf(diag->message, sizeof diag->message,
                             "--throughput-regex needs a named group (?<throughput>...)");
                }
            }
            pcre2_code_free(re);
            return PFI_ERR_INVALID_ARGUMENT;
        }
        md = pcre2_match_data_create_from_pattern(re, NULL);
        if (md == NULL) {
            pcre2_code_free(re);
            return PFI_ERR_NOMEM;
        }
    }
    pfi_trainlog *log = pfi_calloc(1, sizeof *log);
    tm_lines r;
    pfi_error e = log ? tm_lines_init(&r, f) : PFI_ERR_NOMEM;
    if (e != PFI_OK) {
        pfi_free(log);
        pcre2_match_data_free(md);
        pcre2_code_free(re);
        return e;
    }
    tl_state st = {.prev_iter = -1, .prev_consumed = NAN, .prev_ts = NAN};
    for (;;) {
        const char *s;
        size_t n;
        bool eof;
        e = tm_lines_next(&r, &s, &n, &eof);
        if (e != PFI_OK || eof)
            break;
        if (fmt != PFI_TRAINLOG_REGEX &&
            (memmem(s, n, "saving checkpoint", 17) || memmem(s, n, "Saving checkpoint", 17))) {
            st.ckpt_pending = true;
            continue;
        }
        pfi_trainlog_format lf = fmt == PFI_TRAINLOG_REGEX ? PFI_TRAINLOG_REGEX : detect_line(s, n);
        if (lf == PFI_TRAINLOG_AUTO || (fmt != PFI_TRAINLOG_AUTO && lf != fmt))
            continue;
        if (fmt == PFI_TRAINLOG_AUTO)
            fmt = lf;
        switch (lf) {
        case PFI_TRAINLOG_MEGATRON:
            e = megatron_line(log, &st, s, n, r.line);
            break;
        case PFI_TRAINLOG_NANOTRON:
            e = nanotron_line(log, &st, s, n, r.line);
            break;
        case PFI_TRAINLOG_HF:
            e = hf_line(log, s, n, r.line);
            break;
        case PFI_TRAINLOG_TORCHTITAN:
            e = titan_line(log, &st, s, n, r.line);
            break;
        case PFI_TRAINLOG_REGEX:
            e = regex_line(log, re, md, s, n, r.line);
            break;
        default:
            break;
        }
        if (e != PFI_OK)
            break;
    }
    long lineno = r.line;
    if (e == PFI_ERR_LINE_TOO_LONG)
        tm_line_too_long_diag(diag);
    if (e == PFI_ERR_IO)
        tm_lines_io_diag(&r, diag);
    tm_lines_free(&r);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    if (e == PFI_OK && log->n == 0) {
        e = PFI_ERR_EMPTY;
        if (diag != NULL)
            snprintf(diag->message, sizeof diag->message,
                     "no throughput line found (formats: megatron, nanotron, hf, torchtitan; "
                     "or --throughput-regex with a (?<throughput>...) group)");
    }
    if (e != PFI_OK) {
        if (diag != NULL && diag->line == 0 && e != PFI_ERR_EMPTY)
            diag->line = lineno;
        pfi_trainlog_destroy(log);
        return e;
    }
    log->format = fmt;
    *out = log;
    return PFI_OK;
}

pfi_error pfi_trainlog_read_file(const char *path, pfi_trainlog_format fmt, const char *regex,
                                 pfi_trainlog **out, pfi_diag *diag)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        if (diag != NULL) {
            pfi_diag_clear(diag);
            snprintf(diag->file, sizeof diag->file, "%s", path);
            snprintf(diag->message, sizeof diag->message, "cannot open: %s", strerror(errno));
        }
        return PFI_ERR_IO;
    }
    pfi_error e = pfi_trainlog_read_stream(f, path, fmt, regex, out, diag);
    fclose(f);
    return e;
}

pfi_error pfi_trainlog_reduce(const pfi_trainlog *log, double warmup_s, double q,
                              pfi_trainlog_summary *out)
{
    *out = (pfi_trainlog_summary){.window_rate = NAN, .tflops_mean = NAN};
    out->steady.mean = out->steady.se = NAN;
    if (!(q > 0 && q <= 1) || !(warmup_s >= 0))
        return PFI_ERR_INVALID_ARGUMENT;
    double *vals = pfi_malloc((log->n + 1) * sizeof *vals);
    double *work = pfi_malloc((log->n + 1) * sizeof *work);
    if (vals == NULL || work == NULL) {
        pfi_free(vals);
        pfi_free(work);
        return PFI_ERR_NOMEM;
    }
    size_t k = 0;
    double elapsed = 0, sw = 0, st = 0, tf = 0;
    size_t ntf = 0;
    for (size_t i = 0; i < log->n; i++) {
        const pfi_trainlog_interval *iv = &log->iv[i];
        if (isfinite(iv->time_s))
            elapsed += iv->time_s;
        if (iv->flags & PFI_TRAINLOG_SKIPPED) {
            out->n_skipped++;
            continue;
        }
        if (iv->flags & PFI_TRAINLOG_CHECKPOINT) {
            out->n_checkpoint++;
            continue;
        }
        if ((iv->flags & PFI_TRAINLOG_BAD_RATE) || !isfinite(iv->rate)) {
            out->n_bad_rate++;
            continue;
        }
        if (warmup_s > 0 && elapsed <= warmup_s) {
            out->n_warmup++;
            continue;
        }
        vals[k++] = iv->rate;
        if (isfinite(iv->work) && isfinite(iv->time_s)) {
            sw += iv->work;
            st += iv->time_s;
        } else {
            out->n_no_time++;
        }
        if (isfinite(iv->tflops)) {
            tf += iv->tflops;
            ntf++;
        }
    }
    out->n_included = k;
    if (st > 0)
        out->window_rate = sw / st;
    if (ntf > 0)
        out->tflops_mean = tf / (double)ntf;
    pfi_error e = pfi_steady_state(NULL, vals, NULL, k, 0, q, work, &out->steady);
    pfi_free(vals);
    pfi_free(work);
    return e;
}
