/*
 * Training logs to throughput: the line splitter ('\n', '\r\n' and '\r'), rank prefixes, the
 * records-to-intervals engine (duplicates, sessions, segments, gaps, events) that every reader
 * shares, auto-detection, and the reduction to Σwork/Σtime. The line readers are in
 * trainlog_readers.c; formats and fields in pfi/trainlog.h.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#define _GNU_SOURCE /* memmem */
#include "pfi/trainlog.h"

#include <errno.h>
#include <math.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "telemetry/trainlog_internal.h"

static const char *const tl_names[PFI_TRAINLOG_N_FORMATS] = {
    "auto", "megatron", "nanotron", "hf", "torchtitan", "regex", "deepspeed", "lightning", "tqdm"};

const char *pfi_trainlog_format_name(pfi_trainlog_format f)
{
    return (unsigned)f < PFI_TRAINLOG_N_FORMATS ? tl_names[f] : "unknown";
}

bool pfi_trainlog_format_parse(const char *name, pfi_trainlog_format *out)
{
    for (int i = 0; i < PFI_TRAINLOG_N_FORMATS; i++) {
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

static void add_note(pfi_trainlog *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_note(pfi_trainlog *log, const char *fmt, ...)
{
    size_t k = strlen(log->notes);
    if (k + 4 >= sizeof log->notes)
        return;
    if (k > 0) {
        memcpy(log->notes + k, "; ", 3);
        k += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(log->notes + k, sizeof log->notes - k, fmt, ap);
    va_end(ap);
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

/* ---- rank prefixes ----------------------------------------------------------------------- */

static long digits(const char *s, size_t n, size_t *i)
{
    long v = -1;
    while (*i < n && s[*i] >= '0' && s[*i] <= '9' && v < 100000000) {
        v = (v < 0 ? 0 : v * 10) + (s[*i] - '0');
        (*i)++;
    }
    return v;
}

/*
 * The rank a line names: a prefix `[rankN]:`, `[defaultN]:`, `[a,N]<stdout>:` or `N: ` (taken
 * off the line), or `[Rank N]` / nanotron's `|DP=d|PP=p|TP=t]` inside it. -1 when none.
 */
static long rank_of(const char **sp, size_t *np)
{
    const char *s = *sp;
    size_t n = *np, i;
    long r = -1;
    if (n > 6 && (memcmp(s, "[rank", 5) == 0 || memcmp(s, "[default", 8 <= n ? 8 : n) == 0)) {
        i = s[1] == 'r' ? 5 : 8;
        r = digits(s, n, &i);
        if (r >= 0 && i + 1 < n && s[i] == ']' && s[i + 1] == ':') {
            i += 2;
            *sp = s + i;
            *np = n - i;
            return r;
        }
        r = -1;
    }
    if (n > 4 && s[0] == '[') {
        i = 1;
        long a = digits(s, n, &i);
        if (a >= 0 && i < n && s[i] == ',') {
            i++;
            r = digits(s, n, &i);
            if (r >= 0 && i < n && s[i] == ']') {
                const char *c = memchr(s + i, ':', n - i < 12 ? n - i : 12);
                if (c != NULL) {
                    size_t k = (size_t)(c - s) + 1;
                    *sp = s + k;
                    *np = n - k;
                    return r;
                }
            }
        }
        r = -1;
    }
    i = 0;
    r = digits(s, n, &i);
    if (r >= 0 && i > 0 && i <= 5 && i + 1 < n && s[i] == ':' && s[i + 1] == ' ') {
        *sp = s + i + 2;
        *np = n - i - 2;
        return r;
    }
    size_t look = n < 160 ? n : 160;
    const char *p = memmem(s, look, "[Rank ", 6);
    if (p != NULL) {
        i = (size_t)(p - s) + 6;
        return digits(s, n, &i);
    }
    p = memmem(s, look, "|DP=", 4);
    if (p != NULL) {
        i = (size_t)(p - s) + 4;
        long dp = digits(s, n, &i), pp = 0, tp = 0;
        if (i + 4 < n && memcmp(s + i, "|PP=", 4) == 0) {
            i += 4;
            pp = digits(s, n, &i);
        }
        if (i + 4 < n && memcmp(s + i, "|TP=", 4) == 0) {
            i += 4;
            tp = digits(s, n, &i);
        }
        if (dp >= 0)
            return dp * 1000000 + (pp > 0 ? pp : 0) * 1000 + (tp > 0 ? tp : 0);
    }
    return -1;
}

/* ---- the engine: records to intervals ---------------------------------------------------- */

#define RECENT 16

typedef struct engine {
    const tl_reader *rd;
    tl_rstate st;
    pfi_trainlog *log;
    size_t n_sig;
    tl_rec prev;
    bool have_prev;
    bool started;     /* a record has been seen */
    unsigned pending; /* TL_EV_* since the last record */
    bool resume_pending;
    long resume_step;
    long first_rank;
    long recent[RECENT];
    size_t n_recent;
    double gap_t, gap_steps; /* the session's included time and steps so far */
    size_t gap_n;
    unsigned session, segment;
    pfi_trainlog_interval *finals; /* HF final dicts, used when no bar interval exists */
    size_t n_finals;
    long final_resume[16];
    size_t n_counted_iv; /* intervals with a finite rate */
    pfi_error e;
} engine;

static void new_segment(engine *E)
{
    if (E->started)
        E->segment++;
    E->have_prev = false;
    E->n_recent = 0;
}

static void new_session(engine *E)
{
    if (E->started)
        E->session++;
    new_segment(E);
    E->gap_t = E->gap_steps = 0;
    E->gap_n = 0;
}

static bool in_recent(const engine *E, long step)
{
    for (size_t i = 0; i < E->n_recent && i < RECENT; i++)
        if (E->recent[i] == step)
            return true;
    return false;
}

static void remember(engine *E, long step)
{
    E->recent[E->n_recent % RECENT] = step;
    E->n_recent++;
}

static unsigned event_flags(unsigned ev)
{
    return ((ev & TL_EV_CKPT) ? PFI_TRAINLOG_CHECKPOINT : 0u) |
           ((ev & TL_EV_EVAL) ? PFI_TRAINLOG_EVAL : 0u);
}

static void emit(engine *E, pfi_trainlog_interval *iv)
{
    iv->session = E->session;
    iv->segment = E->segment;
    if (isinf(iv->rate) || isinf(iv->work)) { /* an overflow of absurd values */
        iv->rate = iv->work = NAN;
        iv->flags |= PFI_TRAINLOG_BAD_RATE;
    }
    if (isfinite(iv->rate) && !(iv->flags & PFI_TRAINLOG_BAD_RATE))
        E->n_counted_iv++;
    if (E->e == PFI_OK)
        E->e = push(E->log, iv);
}

static void record(engine *E, const tl_rec *r, long line)
{
    pfi_trainlog *log = E->log;
    const tl_rec *p = &E->prev;
    if (E->have_prev && r->bar == p->bar && !E->resume_pending && r->step >= 0 && p->step >= 0) {
        if (r->step == p->step || (r->step < p->step && in_recent(E, r->step))) {
            log->n_duplicate++; /* another rank's copy, or a bar's repeated last update */
            return;
        }
    }
    log->n_records++;
    if (r->nonfinite)
        log->n_nonfinite++;
    bool restart = false;
    if (E->resume_pending ||
        (E->have_prev && r->bar == p->bar &&
         ((r->step >= 0 && p->step >= 0 && r->step < p->step) ||
          (isfinite(r->clock_s) && isfinite(p->clock_s) && r->clock_s < p->clock_s)))) {
        /* a resume line, or the step counter or the clock went back: a new session */
        new_session(E);
        restart = true;
    } else if (E->have_prev && r->bar != p->bar) {
        new_segment(E); /* a new bar (epoch) */
    }
    bool was_resume = E->resume_pending;
    E->resume_pending = false;
    if (!E->started) {
        E->started = true;
        log->n_sessions = log->n_segments = 1;
    }
    log->n_sessions = E->session + 1;
    log->n_segments = E->segment + 1;
    pfi_trainlog_interval iv = {.line = line,
                                .iteration = r->step,
                                .work = NAN,
                                .time_s = NAN,
                                .rate = NAN,
                                .tflops = r->tflops,
                                .flags = r->flags};
    if (!E->have_prev) {
        /* the first record of a segment: an interval only when the line gives its own time */
        E->pending = 0;
        long base = -1;
        if (E->resume_step >= 0)
            base = E->resume_step;
        else if (!restart && !was_resume && E->session == 0 && E->segment == 0)
            base = 0;
        if (isfinite(r->step_s) && r->step >= 0 && base >= 0 && r->step > base) {
            iv.n_iter = r->step - base;
            iv.time_s = r->step_s * (double)iv.n_iter;
            if (isfinite(r->step_work))
                iv.work = r->step_work * (double)iv.n_iter;
            else if (isfinite(r->rate)) {
                iv.work = r->rate * iv.time_s;
                iv.flags |= PFI_TRAINLOG_PRINTED_RATE;
            }
            if (restart || was_resume || E->resume_step >= 0)
                iv.flags |= PFI_TRAINLOG_RESTART;
        } else if (r->nonfinite) {
            iv.flags |= PFI_TRAINLOG_BAD_RATE; /* nan/inf where the time or work is */
        } else if (isfinite(r->step_s)) {
            iv.flags |= PFI_TRAINLOG_RESTART; /* resumed at an unknown step */
            iv.rate = r->rate;
        } else if (isfinite(r->rate)) {
            iv.rate = r->rate;
            iv.flags |= PFI_TRAINLOG_NO_TIME | (restart || was_resume ? PFI_TRAINLOG_RESTART : 0u);
        } else {
            goto keep; /* nothing to say about the time before the first record */
        }
        if (isfinite(iv.work) && isfinite(iv.time_s) && iv.time_s > 0)
            iv.rate = iv.work / iv.time_s;
        else if (!(iv.flags & (PFI_TRAINLOG_NO_TIME | PFI_TRAINLOG_RESTART)))
            iv.flags |= PFI_TRAINLOG_BAD_RATE;
        if (r->nonfinite)
            iv.flags |= PFI_TRAINLOG_BAD_RATE;
        emit(E, &iv);
        goto keep;
    }
    iv.n_iter = r->step >= 0 && p->step >= 0 ? r->step - p->step : 0;
    if (isfinite(r->step_s) && iv.n_iter > 0)
        iv.time_s = r->step_s * (double)iv.n_iter;
    else if (isfinite(r->clock_s) && isfinite(p->clock_s))
        iv.time_s = r->clock_s - p->clock_s;
    if (!isfinite(r->step_s) && isfinite(r->clock_s) && isfinite(p->clock_s) &&
        r->clock_s == p->clock_s && r->step >= 0 && isfinite(r->step_work)) {
        /* a bar's clock shows whole seconds: updates within one second close no interval */
        log->n_merged++;
        return;
    }
    if (isfinite(r->cum_work) && isfinite(p->cum_work))
        iv.work = r->cum_work - p->cum_work;
    else if (isfinite(r->step_work) && iv.n_iter > 0)
        iv.work = r->step_work * (double)iv.n_iter;
    else if (isfinite(r->rate) && isfinite(iv.time_s)) {
        iv.work = r->rate * iv.time_s;
        if (!r->rate_interval)
            iv.flags |= PFI_TRAINLOG_PRINTED_RATE;
    }
    if (isfinite(iv.work) && isfinite(iv.time_s) && iv.time_s > 0 && iv.work >= 0)
        iv.rate = iv.work / iv.time_s;
    else if (!isfinite(iv.time_s) && isfinite(r->rate)) {
        iv.rate = r->rate;
        iv.flags |= PFI_TRAINLOG_NO_TIME;
    } else
        iv.flags |= PFI_TRAINLOG_BAD_RATE;
    if (r->nonfinite)
        iv.flags |= PFI_TRAINLOG_BAD_RATE;
    iv.flags |= event_flags(E->pending);
    E->pending = 0;
    if (E->resume_step >= 0 && p->step >= 0 && p->step < E->resume_step &&
        r->step >= E->resume_step)
        iv.flags |= PFI_TRAINLOG_RESTART;
    /* a gap: far longer per step than the session so far */
    double per = iv.n_iter > 0 ? iv.time_s / (double)iv.n_iter : iv.time_s;
    double mean = E->gap_steps > 0 ? E->gap_t / E->gap_steps : NAN;
    double steps = iv.n_iter > 0 ? (double)iv.n_iter : 1.0;
    bool gap = E->gap_n >= 2 && isfinite(per) && iv.time_s > PFI_TRAINLOG_GAP_MIN_S &&
               iv.time_s > PFI_TRAINLOG_GAP_FACTOR * mean * steps;
    if (gap) {
        iv.flags |= PFI_TRAINLOG_GAP;
        emit(E, &iv);
        new_segment(E); /* the records after the gap start the next segment */
        log->n_segments = E->segment + 1;
        goto keep;
    }
    if (!(iv.flags & (PFI_TRAINLOG_CHECKPOINT | PFI_TRAINLOG_EVAL | PFI_TRAINLOG_RESTART |
                      PFI_TRAINLOG_SKIPPED | PFI_TRAINLOG_BAD_RATE | PFI_TRAINLOG_NO_TIME)) &&
        isfinite(per)) {
        E->gap_t += iv.time_s;
        E->gap_steps += iv.n_iter > 0 ? (double)iv.n_iter : 1.0;
        E->gap_n++;
    }
    emit(E, &iv);
keep:
    E->prev = *r;
    E->have_prev = true;
    if (r->step >= 0)
        remember(E, r->step);
    if (E->resume_step >= 0 && r->step > E->resume_step)
        E->resume_step = -1; /* past the resume point */
}

static void engine_line(engine *E, const char *s, size_t n, long rank, long line)
{
    tl_out o = {.resume_step = -1};
    E->st.line_now = line;
    E->rd->line(&E->st, s, n, &o);
    if (o.sig)
        E->n_sig++;
    E->pending |= o.events & (TL_EV_CKPT | TL_EV_EVAL);
    if (o.events & TL_EV_RESUME) {
        if (E->started)
            E->resume_pending = true;
        if (o.resume_step >= 0)
            E->resume_step = o.resume_step;
    }
    bool other_rank = false;
    if (rank >= 0 && (o.has_rec || o.has_direct || o.nan_loss)) {
        if (E->first_rank < 0)
            E->first_rank = rank;
        other_rank = rank != E->first_rank;
    }
    if (other_rank) {
        if (o.has_rec || o.has_direct)
            E->log->n_duplicate++;
        return;
    }
    if (o.nan_loss)
        E->log->n_nan++;
    if (o.has_direct) {
        o.direct.line = line;
        if (E->rd->fmt == PFI_TRAINLOG_HF) {
            /* the final dict: kept aside, used only when the bar gave nothing */
            if (E->n_finals < 16) {
                pfi_trainlog_interval *f =
                    pfi_realloc(E->finals, (E->n_finals + 1) * sizeof *E->finals);
                if (f == NULL) {
                    E->e = PFI_ERR_NOMEM;
                    return;
                }
                E->finals = f;
                o.direct.session = E->session;
                E->final_resume[E->n_finals] = E->resume_step;
                E->finals[E->n_finals++] = o.direct;
            }
            return;
        }
        if (o.rec.nonfinite)
            E->log->n_nonfinite++;
        E->log->n_records++;
        if (!E->started) {
            E->started = true;
            E->log->n_sessions = E->log->n_segments = 1;
        }
        emit(E, &o.direct);
        return;
    }
    if (o.has_rec)
        record(E, &o.rec, line);
}

/* HF: the final dicts stand in for the bar when it gave no interval; a resumed session's
 * printed rate counts every step from 0, so its work is (total − resumed) x batch. */
static void hf_finish(engine *E)
{
    if (E->n_counted_iv > 0 || E->n_finals == 0)
        return;
    for (size_t i = 0; i < E->n_finals; i++) {
        pfi_trainlog_interval iv = E->finals[i];
        long r = E->final_resume[i];
        if (E->st.total_steps > 0 && isfinite(E->st.batch) && iv.time_s > 0 &&
            isfinite(iv.time_s)) {
            long steps = E->st.total_steps - (r > 0 ? r : 0);
            iv.n_iter = steps;
            iv.work = (double)steps * E->st.batch;
            iv.rate = iv.work / iv.time_s;
            iv.flags &= ~(unsigned)(PFI_TRAINLOG_PRINTED_RATE | PFI_TRAINLOG_BAD_RATE);
            snprintf(E->st.unit, sizeof E->st.unit, "samples");
        } else {
            snprintf(E->st.unit, sizeof E->st.unit, "%s", E->st.final_unit);
        }
        if (r > 0 && !(E->st.total_steps > 0 && isfinite(E->st.batch))) {
            add_note(E->log,
                     "line %ld: train_samples_per_second of a resumed run counts the "
                     "resumed steps too and cannot be corrected without 'Total "
                     "optimization steps' and 'Total train batch size'",
                     iv.line);
        }
        E->log->n_records++;
        if (!E->started) {
            E->started = true;
            E->log->n_sessions = E->log->n_segments = 1;
        }
        emit(E, &iv);
    }
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/*
 * A step counter that jumps: the first interval of a session taking less than a fifth of the
 * median time per step of the (up to 5) intervals after it did not run those steps (a resumed run
 * whose counter starts at the checkpoint's step, as HF's bar jumps from 0 to it, when no resume
 * line was logged): flagged as a restart. [ours]
 */
static pfi_error flag_counter_jumps(pfi_trainlog *log)
{
    const unsigned excl = PFI_TRAINLOG_SKIPPED | PFI_TRAINLOG_CHECKPOINT | PFI_TRAINLOG_EVAL |
                          PFI_TRAINLOG_RESTART | PFI_TRAINLOG_GAP | PFI_TRAINLOG_BAD_RATE |
                          PFI_TRAINLOG_NO_TIME;
    double *per = pfi_malloc((log->n + 1) * sizeof *per);
    if (per == NULL)
        return PFI_ERR_NOMEM;
    for (size_t a = 0; a < log->n;) {
        size_t b = a;
        while (b < log->n && log->iv[b].session == log->iv[a].session)
            b++;
        size_t k = 0, first = b;
        for (size_t i = a; i < b; i++) {
            const pfi_trainlog_interval *iv = &log->iv[i];
            if ((iv->flags & excl) || iv->n_iter <= 0 || !(iv->time_s > 0))
                continue;
            if (first == b)
                first = i;
            per[k++] = iv->time_s / (double)iv->n_iter;
        }
        if (k >= 3 && first < b) {
            /* against the intervals that follow it (up to 5), not the whole session: a run
               that slows down later is not a jump */
            size_t m = k - 1 < 5 ? k - 1 : 5;
            qsort(per + 1, m, sizeof *per, by_value);
            double median = m % 2 ? per[1 + m / 2] : (per[m / 2] + per[1 + m / 2]) / 2;
            pfi_trainlog_interval *iv = &log->iv[first];
            if (iv->time_s / (double)iv->n_iter < 0.2 * median)
                iv->flags |= PFI_TRAINLOG_RESTART;
        }
        a = b;
    }
    pfi_free(per);
    return PFI_OK;
}

/* ---- the line splitter ------------------------------------------------------------------- */

enum { BLOCK = 1 << 16 };

typedef struct splitter {
    FILE *f;
    char *blk; /* BLOCK bytes read ahead */
    size_t len, pos;
    char *rec; /* the record handed out, PFI_TRAINLOG_MAX_LINE bytes */
    bool eof;
    long line;      /* physical line of the record handed out (1-based) */
    long next_line; /* physical line the next record starts on */
    bool terminated;
    bool pending_cr; /* the last record ended in '\r' at a block's end */
    int err;
} splitter;

/* Next record in *s, *n (borrowed until the next call): up to '\n', '\r\n' or '\r'. false at
 * the end. A record longer than PFI_TRAINLOG_MAX_LINE is cut there (*cut) and its rest
 * dropped. */
static bool split_next(splitter *sp, const char **s, size_t *n, bool *cut)
{
    size_t k = 0;
    bool any = false;
    *cut = false;
    sp->line = sp->next_line;
    for (;;) {
        if (sp->pos == sp->len) {
            if (sp->eof)
                break;
            sp->len = fread(sp->blk, 1, BLOCK, sp->f);
            sp->pos = 0;
            if (sp->len == 0) {
                if (ferror(sp->f))
                    sp->err = errno ? errno : EIO;
                sp->eof = true;
                break;
            }
        }
        char c = sp->blk[sp->pos++];
        if (sp->pending_cr) {
            sp->pending_cr = false;
            if (c == '\n') {
                sp->next_line++;
                sp->line = sp->next_line;
                continue; /* "\r\n": one terminator */
            }
        }
        if (c == '\n' || c == '\r') {
            if (c == '\n')
                sp->next_line++;
            else
                sp->pending_cr = true;
            sp->rec[k] = '\0'; /* readers may strtol up to the end */
            *s = sp->rec;
            *n = k;
            sp->terminated = true;
            return true;
        }
        any = true;
        if (k < PFI_TRAINLOG_MAX_LINE)
            sp->rec[k++] = c;
        else
            *cut = true;
    }
    if (!any)
        return false;
    sp->rec[k] = '\0';
    *s = sp->rec;
    *n = k;
    sp->terminated = false;
    return true;
}

/* ---- reading ----------------------------------------------------------------------------- */

static pfi_error compile_regex(const char *regex, tl_rstate *st, pfi_trainlog *log, pfi_diag *diag)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
    if (re == NULL) {
        if (diag != NULL) {
            PCRE2_UCHAR msg[200];
            pcre2_get_error_message(ec, msg, sizeof msg);
            snprintf(diag->message, sizeof diag->message, "--throughput-regex: %s at offset %zu",
                     (char *)msg, (size_t)eo);
        }
        return PFI_ERR_INVALID_ARGUMENT;
    }
    static const char *const groups[] = {"throughput", "work", "time_s"};
    for (int g = 0; g < 3; g++) {
        int k = pcre2_substring_number_from_name(re, (PCRE2_SPTR)groups[g]);
        st->group[g] = k > 0 ? k : -1;
    }
    uint32_t n_groups = 0;
    pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &n_groups);
    if (st->group[0] < 0) {
        if (n_groups == 1 && st->group[1] < 0 && st->group[2] < 0) {
            st->group[0] = 1; /* the old form: one plain group */
            if (log != NULL)
                add_note(log, "--throughput-regex has no (?<throughput>...) group: its one plain "
                              "group is read as the throughput (the old POSIX ERE form; write "
                              "(?<throughput>...))");
        } else {
            if (diag != NULL)
                snprintf(diag->message, sizeof diag->message,
                         "--throughput-regex needs a named group (?<throughput>...) (or exactly "
                         "one plain group, the old form); it has %u groups",
                         (unsigned)n_groups);
            pcre2_code_free(re);
            return PFI_ERR_INVALID_ARGUMENT;
        }
    }
    st->re = re;
    st->md = pcre2_match_data_create_from_pattern(re, NULL);
    if (st->md == NULL) {
        pcre2_code_free(re);
        st->re = NULL;
        return PFI_ERR_NOMEM;
    }
    return PFI_OK;
}

static void engine_free(engine *E)
{
    pcre2_match_data_free(E->st.md);
    pcre2_code_free(E->st.re);
    pfi_free(E->finals);
    pfi_trainlog_destroy(E->log);
}

static pfi_error engine_init(engine *E, const tl_reader *rd)
{
    memset(E, 0, sizeof *E);
    E->rd = rd;
    E->st.batch = E->st.seq_len = NAN;
    E->st.total_steps = E->st.train_total = -1;
    E->st.group[0] = E->st.group[1] = E->st.group[2] = -1;
    E->resume_step = -1;
    E->first_rank = -1;
    E->log = pfi_calloc(1, sizeof *E->log);
    return E->log ? PFI_OK : PFI_ERR_NOMEM;
}

/* Why a reader that found nothing refused, into buf. */
static void refusal(const engine *E, char *buf, size_t cap)
{
    if (E->n_sig == 0)
        snprintf(buf, cap, "%s: no %s", pfi_trainlog_format_name(E->rd->fmt), E->rd->needs);
    else if (E->log->n == 0)
        snprintf(buf, cap, "%s: %zu line%s of its layout, no step with a time",
                 pfi_trainlog_format_name(E->rd->fmt), E->n_sig, E->n_sig == 1 ? "" : "s");
    else
        snprintf(buf, cap, "%s: %zu interval%s, none with a finite rate",
                 pfi_trainlog_format_name(E->rd->fmt), E->log->n, E->log->n == 1 ? "" : "s");
}

pfi_error pfi_trainlog_read_stream(FILE *f, const char *name, pfi_trainlog_format fmt,
                                   const char *regex, pfi_trainlog **out, pfi_diag *diag)
{
    *out = NULL;
    if (diag != NULL) {
        pfi_diag_clear(diag);
        snprintf(diag->file, sizeof diag->file, "%s", name);
    }
    if (fmt == PFI_TRAINLOG_AUTO && regex != NULL)
        fmt = PFI_TRAINLOG_REGEX;
    if ((unsigned)fmt >= PFI_TRAINLOG_N_FORMATS || (fmt == PFI_TRAINLOG_REGEX && regex == NULL))
        return PFI_ERR_INVALID_ARGUMENT;
    engine eng[PFI_TRAINLOG_N_FORMATS];
    size_t ne = 0;
    pfi_error e = PFI_OK;
    for (size_t i = 0; i < tl_n_readers && e == PFI_OK; i++) {
        const tl_reader *rd = &tl_readers[i];
        if (fmt == PFI_TRAINLOG_AUTO ? rd->fmt == PFI_TRAINLOG_REGEX : rd->fmt != fmt)
            continue;
        e = engine_init(&eng[ne], rd);
        ne++;
        if (e == PFI_OK && rd->fmt == PFI_TRAINLOG_REGEX)
            e = compile_regex(regex, &eng[ne - 1].st, eng[ne - 1].log, diag);
    }
    splitter sp = {.f = f, .next_line = 1};
    sp.blk = e == PFI_OK ? pfi_malloc(BLOCK) : NULL;
    sp.rec = sp.blk ? pfi_malloc(PFI_TRAINLOG_MAX_LINE + 1) : NULL;
    if (e == PFI_OK && sp.rec == NULL)
        e = PFI_ERR_NOMEM;
    size_t n_cut = 0;
    long first_cut = 0, last_line = 0;
    bool truncated = false;
    while (e == PFI_OK) {
        const char *s;
        size_t n;
        bool cut;
        if (!split_next(&sp, &s, &n, &cut))
            break;
        if (cut) {
            if (n_cut++ == 0)
                first_cut = sp.line;
            continue;
        }
        if (!sp.terminated) {
            truncated = true; /* the last line, cut off mid-write: ignored */
            last_line = sp.line;
            break;
        }
        if (sp.line == 1 && n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
            s += 3; /* a UTF-8 byte order mark */
            n -= 3;
        }
        long rank = rank_of(&s, &n);
        for (size_t i = 0; i < ne && e == PFI_OK; i++) {
            engine_line(&eng[i], s, n, rank, sp.line);
            e = eng[i].e;
        }
    }
    if (e == PFI_OK && sp.err != 0) {
        e = PFI_ERR_IO;
        if (diag != NULL)
            snprintf(diag->message, sizeof diag->message, "%s",
                     sp.err == EISDIR ? "is a directory, expected a file" : strerror(sp.err));
    }
    pfi_free(sp.blk);
    pfi_free(sp.rec);
    for (size_t i = 0; i < ne && e == PFI_OK; i++) {
        if (eng[i].rd->fmt == PFI_TRAINLOG_HF)
            hf_finish(&eng[i]);
        e = eng[i].e;
        if (e == PFI_OK)
            e = flag_counter_jumps(eng[i].log);
    }
    /* the reader: the first with a line of its layout and a finite interval; else the first
       with a line of its layout and any interval (a run with no throughput) */
    size_t pick = ne;
    for (size_t i = 0; i < ne && pick == ne; i++)
        if (eng[i].n_sig > 0 && eng[i].n_counted_iv > 0)
            pick = i;
    for (size_t i = 0; i < ne && pick == ne; i++)
        if (eng[i].n_sig > 0 && eng[i].log->n > 0)
            pick = i;
    /* A time that is no time (2025-02-30, a bar's "[75:80<") in the reader taken, or, none
     * taken, in one whose layout the file has: refused on its line, never read around. */
    size_t bad = pick;
    for (size_t i = 0; i < ne && bad == ne; i++)
        if (eng[i].n_sig > 0 && eng[i].st.bad_time_line > 0)
            bad = i;
    if (e == PFI_OK && bad < ne && eng[bad].st.bad_time_line > 0) {
        e = PFI_ERR_PARSE;
        if (diag != NULL) {
            char q[4 * sizeof eng[bad].st.bad_time];
            pfi_escape(q, sizeof q, eng[bad].st.bad_time, strlen(eng[bad].st.bad_time), 60);
            diag->line = eng[bad].st.bad_time_line;
            snprintf(diag->message, sizeof diag->message, "%s: %s '%s' is not a valid time (%s)",
                     pfi_trainlog_format_name(eng[bad].rd->fmt), eng[bad].st.bad_time_what, q,
                     strcmp(eng[bad].st.bad_time_what, "timestamp") == 0
                         ? "YYYY-MM-DD HH:MM:SS: a day of the month's calendar (February 29 "
                           "only in a leap year), 00:00:00 to 23:59:60"
                         : "[H:]MM:SS, minutes and seconds 00 to 59");
        }
    }
    if (e == PFI_OK && pick == ne) {
        e = PFI_ERR_EMPTY;
        if (diag != NULL) {
            size_t k = (size_t)snprintf(diag->message, sizeof diag->message,
                                        "no throughput interval found; tried ");
            for (size_t i = 0; i < ne && k < sizeof diag->message; i++) {
                char why[160];
                refusal(&eng[i], why, sizeof why);
                k += (size_t)snprintf(diag->message + k, sizeof diag->message - k, "%s%s",
                                      i ? "; " : "", why);
            }
        }
    }
    pfi_trainlog *log = NULL;
    if (e == PFI_OK) {
        log = eng[pick].log;
        eng[pick].log = NULL;
        log->format = eng[pick].rd->fmt;
        snprintf(log->unit, sizeof log->unit, "%s",
                 eng[pick].st.unit[0] ? eng[pick].st.unit : "work");
        if (n_cut > 0)
            add_note(log, "%zu record%s longer than %d bytes skipped (first at line %ld)", n_cut,
                     n_cut == 1 ? "" : "s", PFI_TRAINLOG_MAX_LINE, first_cut);
        if (truncated) {
            log->truncated_last = true;
            add_note(log, "line %ld has no line end (cut off mid-write?): ignored", last_line);
        }
        if (log->n_nonfinite > 0)
            add_note(log, "%zu record%s with nan/inf in a field used for work or time: excluded",
                     log->n_nonfinite, log->n_nonfinite == 1 ? "" : "s");
    }
    for (size_t i = 0; i < ne; i++)
        engine_free(&eng[i]);
    if (e != PFI_OK)
        return e;
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

/* ---- reduction --------------------------------------------------------------------------- */

bool pfi_trainlog_interval_usable(const pfi_trainlog_interval *iv)
{
    return !(iv->flags & PFI_TRAINLOG_EXCLUDED) && isfinite(iv->rate);
}

double pfi_trainlog_last_rate(const pfi_trainlog *log)
{
    for (size_t k = log->n; k-- > 0;)
        if (pfi_trainlog_interval_usable(&log->iv[k]))
            return log->iv[k].rate;
    return NAN;
}

pfi_error pfi_trainlog_reduce(const pfi_trainlog *log, double warmup_s, double q,
                              pfi_trainlog_summary *out)
{
    *out = (pfi_trainlog_summary){.window_rate = NAN, .tflops_mean = NAN};
    out->steady.mean = out->steady.se = NAN;
    if (!(q > 0 && q <= 1) || !(warmup_s >= 0))
        return PFI_ERR_INVALID_ARGUMENT;
    double sw = 0, st = 0, tf = 0, rate_sum = 0;
    double rate_mean = 0, rate_m2 = 0; /* Welford's: no cancellation when the rates are equal */
    size_t ntf = 0, n_rate = 0, k = 0;
    double elapsed = 0;
    unsigned session = 0;
    /* pass 1: Σwork, Σtime; pass 2 (below): the residuals */
    for (int pass = 0; pass < 2; pass++) {
        double R = st > 0 ? sw / st : NAN, ss = 0;
        elapsed = 0;
        session = 0;
        for (size_t i = 0; i < log->n; i++) {
            const pfi_trainlog_interval *iv = &log->iv[i];
            if (iv->session != session) {
                session = iv->session;
                elapsed = 0;
            }
            if (isfinite(iv->time_s))
                elapsed += iv->time_s;
            unsigned fl = iv->flags;
            /* excluded by the one rule (pfi_trainlog_interval_usable), counted once, under the
               first of its reasons */
            size_t *count = pfi_trainlog_interval_usable(iv) ? NULL
                            : (fl & PFI_TRAINLOG_SKIPPED)    ? &out->n_skipped
                            : (fl & PFI_TRAINLOG_CHECKPOINT) ? &out->n_checkpoint
                            : (fl & PFI_TRAINLOG_EVAL)       ? &out->n_eval
                            : (fl & PFI_TRAINLOG_RESTART)    ? &out->n_restart
                            : (fl & PFI_TRAINLOG_GAP)        ? &out->n_gap
                                                             : &out->n_bad_rate;
            if (count == NULL && warmup_s > 0 && elapsed <= warmup_s)
                count = &out->n_warmup;
            if (count == NULL && !(isfinite(iv->work) && isfinite(iv->time_s) && iv->time_s > 0))
                count = &out->n_no_time;
            if (count != NULL) {
                if (pass == 0) {
                    (*count)++;
                    if (count == &out->n_no_time && isfinite(iv->rate) &&
                        !(warmup_s > 0 && elapsed <= warmup_s)) {
                        rate_sum += iv->rate;
                        n_rate++;
                        double d = iv->rate - rate_mean;
                        rate_mean += d / (double)n_rate;
                        rate_m2 += d * (iv->rate - rate_mean);
                    }
                }
                continue;
            }
            if (pass == 1) {
                double d = iv->work - R * iv->time_s;
                ss += d * d;
                continue;
            }
            sw += iv->work;
            st += iv->time_s;
            k++;
            if (isfinite(iv->tflops)) {
                tf += iv->tflops;
                ntf++;
            }
        }
        if (pass == 1 && k >= 2) {
            double tbar = st / (double)k;
            out->steady.se =
                pfi_se_rounded(sqrt(ss / ((double)k * (double)(k - 1))) / tbar, sw / st);
        }
    }
    out->n_included = k;
    out->steady.n_warmup = out->n_warmup;
    out->steady.n_missing = out->n_bad_rate;
    if (ntf > 0)
        out->tflops_mean = tf / (double)ntf;
    if (k > 0 && st > 0) {
        if (!isfinite(sw / st) || !isfinite(st))
            return PFI_ERR_LIMIT; /* sums past the range of a double */
        out->window_rate = out->steady.mean = sw / st;
        out->steady.m = out->steady.n_valid = k;
        return PFI_OK;
    }
    if (n_rate > 0) {
        /* fallback: no interval has a time, the framework's printed rates are all there is */
        out->printed_rate = true;
        double m = rate_sum / (double)n_rate;
        out->steady.mean = m;
        out->steady.m = out->steady.n_valid = out->n_included = n_rate;
        out->n_no_time -= n_rate;
        if (n_rate >= 2) {
            double var = rate_m2 / (double)(n_rate - 1);
            out->steady.se = pfi_se_rounded(sqrt(var > 0 ? var : 0) / sqrt((double)n_rate), m);
        }
        return PFI_OK;
    }
    return PFI_ERR_EMPTY;
}
