/*
 * Throughput sources for a sweep: the emulated job, a command's stdout, a followed log file.
 * The command and log sources match each line with a --throughput-regex: PCRE2, the same
 * dialect as `pfi ingest` (a named group (?<throughput>...); the old form, one plain group, is
 * accepted with a note). The full training-log readers are in telemetry/trainlog.c.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pcre2.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/memory.h"
#include "pfi/sweep.h"
#include "pfi/value.h"

#define LINE_MAX_BYTES 65536

static pfi_error tfail(pfi_diag *diag, pfi_error e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static pfi_error tfail(pfi_diag *diag, pfi_error e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_diag_vset(diag, NULL, 0, NULL, fmt, ap);
    va_end(ap);
    return e;
}

void pfi_tput_source_destroy(pfi_tput_source *src)
{
    if (src == NULL)
        return;
    if (src->destroy != NULL)
        src->destroy(src->ctx);
    memset(src, 0, sizeof *src);
}

/* ---- regex ---- */

struct pfi_tput_regex {
    pcre2_code *re;
    pcre2_match_data *md;
    uint32_t group;   /* the throughput group's number */
    const char *note; /* static text when the old form was given, else NULL */
};

pfi_error pfi_tput_regex_compile(const char *pattern, pfi_tput_regex **out, pfi_diag *diag)
{
    *out = NULL;
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
    if (re == NULL) {
        PCRE2_UCHAR why[200];
        pcre2_get_error_message(ec, why, sizeof why);
        return tfail(diag, PFI_ERR_INVALID_ARGUMENT, "--throughput-regex: %s at offset %zu",
                     (char *)why, (size_t)eo);
    }
    uint32_t n_groups = 0;
    pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &n_groups);
    int named = pcre2_substring_number_from_name(re, (PCRE2_SPTR) "throughput");
    const char *note = NULL;
    uint32_t group;
    if (named > 0) {
        group = (uint32_t)named;
    } else if (n_groups == 1) {
        group = 1;
        note = "--throughput-regex has no (?<throughput>...) group: its one plain group is read "
               "as the throughput (the old POSIX ERE form; write (?<throughput>...))";
    } else {
        pcre2_code_free(re);
        return tfail(diag, PFI_ERR_INVALID_ARGUMENT,
                     "--throughput-regex '%s' needs a named group (?<throughput>...) (or exactly "
                     "one plain group, the old form)",
                     pattern);
    }
    pfi_tput_regex *r = pfi_malloc(sizeof *r);
    pcre2_match_data *md = r ? pcre2_match_data_create_from_pattern(re, NULL) : NULL;
    if (md == NULL) {
        pfi_free(r);
        pcre2_code_free(re);
        return PFI_ERR_NOMEM;
    }
    *r = (pfi_tput_regex){.re = re, .md = md, .group = group, .note = note};
    *out = r;
    return PFI_OK;
}

const char *pfi_tput_regex_note(const pfi_tput_regex *re)
{
    return re != NULL ? re->note : NULL;
}

void pfi_tput_regex_free(pfi_tput_regex *re)
{
    if (re == NULL)
        return;
    pcre2_match_data_free(re->md);
    pcre2_code_free(re->re);
    pfi_free(re);
}

bool pfi_tput_parse_line(const pfi_tput_regex *re, const char *line, size_t len, double *out)
{
    if (len >= LINE_MAX_BYTES || memchr(line, '\0', len) != NULL)
        return false;
    if (pcre2_match(re->re, (PCRE2_SPTR)line, len, 0, 0, re->md, NULL) < 0)
        return false;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(re->md);
    if (ov[2 * re->group] == PCRE2_UNSET)
        return false;
    size_t a = ov[2 * re->group], b = ov[2 * re->group + 1];
    double scale = 1.0;
    /* a unit suffix inside or right after the group: 12.3K tokens/s (nanotron) */
    char last = b > a ? line[b - 1] : '\0';
    char next = b < len ? line[b] : '\0';
    if (last == 'K' || last == 'k' || last == 'M' || last == 'G') {
        scale = last == 'M' ? 1e6 : last == 'G' ? 1e9 : 1e3;
        b--;
    } else if (next == 'K' || next == 'k' || next == 'M' || next == 'G') {
        scale = next == 'M' ? 1e6 : next == 'G' ? 1e9 : 1e3;
    }
    double v;
    if (b > a && pfi_value_parse(line + a, b - a, &v) == PFI_VALUE_OK && v >= 0) {
        *out = v * scale;
        return isfinite(*out);
    }
    return false;
}

/* ---- line splitter shared by the command and log sources ---- */

typedef struct lines {
    pfi_tput_regex *re;
    pfi_gpu *clock;
    int echo_fd;
    char *buf;
    size_t len;
    bool dropping; /* inside an overlong line: skip to its end */
    double *t, *v; /* pending reports */
    size_t n, cap;
} lines;

static void lines_report(lines *L, double v)
{
    if (L->n == L->cap) {
        size_t nc = L->cap ? 2 * L->cap : 64;
        if (nc > 1u << 20)
            return; /* the sweep polls every tick: this never fills in practice */
        double *t = pfi_realloc(L->t, nc * sizeof *t);
        if (t == NULL)
            return;
        L->t = t;
        double *w = pfi_realloc(L->v, nc * sizeof *w);
        if (w == NULL)
            return;
        L->v = w;
        L->cap = nc;
    }
    L->t[L->n] = pfi_gpu_now_s(L->clock);
    L->v[L->n++] = v;
}

static void lines_feed(lines *L, const char *data, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char ch = data[i];
        /* '\r' ends a record too: a progress bar's updates (tqdm, Lightning) are records, not
           one line growing past LINE_MAX_BYTES */
        if (ch == '\n' || ch == '\r') {
            if (!L->dropping) {
                double v;
                if (L->echo_fd >= 0) {
                    ssize_t w = write(L->echo_fd, L->buf, L->len);
                    w = write(L->echo_fd, &ch, 1);
                    (void)w;
                }
                size_t len = L->len;
                if (len > 0 && L->buf[len - 1] == '\r')
                    len--;
                if (pfi_tput_parse_line(L->re, L->buf, len, &v))
                    lines_report(L, v);
            }
            L->len = 0;
            L->dropping = false;
        } else if (!L->dropping) {
            if (L->len + 1 >= LINE_MAX_BYTES) {
                L->dropping = true;
                L->len = 0;
            } else {
                L->buf[L->len++] = ch;
            }
        }
    }
}

static size_t lines_take(lines *L, double *t, double *v, size_t max)
{
    size_t k = L->n < max ? L->n : max;
    memcpy(t, L->t, k * sizeof *t);
    memcpy(v, L->v, k * sizeof *v);
    memmove(L->t, L->t + k, (L->n - k) * sizeof *L->t);
    memmove(L->v, L->v + k, (L->n - k) * sizeof *L->v);
    L->n -= k;
    return k;
}

static pfi_error lines_init(lines *L, pfi_tput_regex *re, pfi_gpu *clock, int echo_fd)
{
    memset(L, 0, sizeof *L);
    L->re = re;
    L->clock = clock;
    L->echo_fd = echo_fd;
    L->buf = pfi_malloc(LINE_MAX_BYTES);
    return L->buf ? PFI_OK : PFI_ERR_NOMEM;
}

static void lines_free(lines *L)
{
    pfi_tput_regex_free(L->re);
    pfi_free(L->buf);
    pfi_free(L->t);
    pfi_free(L->v);
}

/* ---- command ---- */

typedef struct cmd_ctx {
    char **argv;
    lines L;
    pid_t pid;
    int fd;
    bool exited;
} cmd_ctx;

static void cmd_drain(cmd_ctx *c)
{
    if (c->fd < 0)
        return;
    char chunk[8192];
    for (;;) {
        ssize_t r = read(c->fd, chunk, sizeof chunk);
        if (r > 0) {
            lines_feed(&c->L, chunk, (size_t)r);
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0) { /* EOF: the command closed stdout */
            close(c->fd);
            c->fd = -1;
        }
        break;
    }
}

static void cmd_stop(void *vctx)
{
    cmd_ctx *c = vctx;
    if (c->pid > 0) {
        kill(-c->pid, SIGTERM);
        struct timespec step = {0, 20 * 1000 * 1000};
        int waited = 0;
        while (waitpid(c->pid, NULL, WNOHANG) == 0) {
            if (waited++ == 500) { /* 10 s */
                kill(-c->pid, SIGKILL);
                while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR) {
                }
                break;
            }
            nanosleep(&step, NULL);
        }
        c->pid = 0;
    }
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    c->L.n = 0;
    c->L.len = 0;
}

static pfi_error cmd_start(void *vctx, pfi_diag *diag)
{
    cmd_ctx *c = vctx;
    cmd_stop(c);
    int p[2];
    if (pipe(p) != 0)
        return tfail(diag, PFI_ERR_IO, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return tfail(diag, PFI_ERR_IO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0);
        dup2(p[1], STDOUT_FILENO);
        close(p[0]);
        close(p[1]);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execvp(c->argv[0], c->argv);
        _exit(127); /* the forked child: exec failed (the parent sees 127) */
    }
    setpgid(pid, pid); /* also here: no race with an early stop */
    close(p[1]);
    fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
    fcntl(p[0], F_SETFD, FD_CLOEXEC);
    c->pid = pid;
    c->fd = p[0];
    c->exited = false;
    return PFI_OK;
}

static pfi_error cmd_poll(void *vctx, double now_s, double *t, double *v, size_t max, size_t *n)
{
    (void)now_s;
    cmd_ctx *c = vctx;
    cmd_drain(c);
    *n = lines_take(&c->L, t, v, max);
    return PFI_OK;
}

static bool cmd_alive(void *vctx)
{
    cmd_ctx *c = vctx;
    if (c->pid <= 0)
        return false;
    if (!c->exited && waitpid(c->pid, NULL, WNOHANG) == c->pid) {
        c->exited = true;
        c->pid = 0;
    }
    return !c->exited;
}

static void cmd_destroy(void *vctx)
{
    cmd_ctx *c = vctx;
    if (c == NULL)
        return;
    cmd_stop(c);
    lines_free(&c->L);
    for (size_t i = 0; c->argv && c->argv[i]; i++)
        pfi_free(c->argv[i]);
    pfi_free(c->argv);
    pfi_free(c);
}

pfi_error pfi_tput_command(char *const *argv, pfi_tput_regex *re, pfi_gpu *clock, int echo_fd,
                           pfi_tput_source *out, pfi_diag *diag)
{
    memset(out, 0, sizeof *out);
    if (argv == NULL || argv[0] == NULL) {
        pfi_tput_regex_free(re);
        return tfail(diag, PFI_ERR_INVALID_ARGUMENT, "%s", "no command");
    }
    cmd_ctx *c = pfi_calloc(1, sizeof *c);
    size_t n = 0;
    while (argv[n] != NULL)
        n++;
    if (c == NULL || (c->argv = pfi_calloc(n + 1, sizeof *c->argv)) == NULL ||
        lines_init(&c->L, re, clock, echo_fd) != PFI_OK) {
        if (c != NULL) {
            pfi_free(c->argv);
            pfi_free(c->L.buf);
        }
        pfi_free(c);
        pfi_tput_regex_free(re);
        return PFI_ERR_NOMEM;
    }
    c->fd = -1;
    for (size_t i = 0; i < n; i++)
        if ((c->argv[i] = pfi_strdup(argv[i])) == NULL) {
            cmd_destroy(c);
            return PFI_ERR_NOMEM;
        }
    *out = (pfi_tput_source){.start = cmd_start,
                             .stop = cmd_stop,
                             .poll = cmd_poll,
                             .alive = cmd_alive,
                             .destroy = cmd_destroy,
                             .ctx = c};
    return PFI_OK;
}

/* ---- log file ---- */

typedef struct log_ctx {
    char *path;
    lines L;
    int fd;
    off_t pos;
} log_ctx;

static pfi_error log_start(void *vctx, pfi_diag *diag)
{
    log_ctx *c = vctx;
    if (c->fd >= 0)
        return PFI_OK; /* already following: a restart of the job appends to the same log */
    c->fd = open(c->path, O_RDONLY | O_CLOEXEC);
    if (c->fd < 0)
        return tfail(diag, PFI_ERR_IO, "cannot open the throughput log: %s", strerror(errno));
    c->pos = lseek(c->fd, 0, SEEK_END);
    return PFI_OK;
}

static pfi_error log_poll(void *vctx, double now_s, double *t, double *v, size_t max, size_t *n)
{
    (void)now_s;
    log_ctx *c = vctx;
    if (c->fd >= 0) {
        struct stat st;
        if (fstat(c->fd, &st) == 0 && st.st_size < c->pos) { /* truncated: start over */
            c->pos = 0;
            lseek(c->fd, 0, SEEK_SET);
            c->L.len = 0;
        }
        char chunk[8192];
        ssize_t r;
        while ((r = read(c->fd, chunk, sizeof chunk)) > 0) {
            lines_feed(&c->L, chunk, (size_t)r);
            c->pos += r;
        }
    }
    *n = lines_take(&c->L, t, v, max);
    return PFI_OK;
}

static void log_destroy(void *vctx)
{
    log_ctx *c = vctx;
    if (c == NULL)
        return;
    if (c->fd >= 0)
        close(c->fd);
    lines_free(&c->L);
    pfi_free(c->path);
    pfi_free(c);
}

pfi_error pfi_tput_log(const char *path, pfi_tput_regex *re, pfi_gpu *clock, pfi_tput_source *out,
                       pfi_diag *diag)
{
    (void)diag;
    memset(out, 0, sizeof *out);
    log_ctx *c = pfi_calloc(1, sizeof *c);
    if (c == NULL || (c->path = pfi_strdup(path)) == NULL ||
        lines_init(&c->L, re, clock, -1) != PFI_OK) {
        if (c != NULL) {
            pfi_free(c->path);
            pfi_free(c->L.buf);
        }
        pfi_free(c);
        pfi_tput_regex_free(re);
        return PFI_ERR_NOMEM;
    }
    c->fd = -1;
    *out =
        (pfi_tput_source){.start = log_start, .poll = log_poll, .destroy = log_destroy, .ctx = c};
    return PFI_OK;
}

/* ---- emulated job ---- */

static pfi_error emu_start(void *ctx, pfi_diag *diag)
{
    (void)diag;
    return pfi_gpu_job_start(ctx);
}

static void emu_stop(void *ctx)
{
    pfi_gpu_job_stop(ctx);
}

static pfi_error emu_poll(void *ctx, double now_s, double *t, double *v, size_t max, size_t *n)
{
    (void)now_s;
    return pfi_gpu_job_poll(ctx, t, v, max, n);
}

pfi_error pfi_tput_emulated(pfi_gpu *g, pfi_tput_source *out)
{
    memset(out, 0, sizeof *out);
    if ((pfi_gpu_caps(g) & PFI_GPU_CAP_JOBS) == 0) /* a backend that runs no job of its own */
        return PFI_ERR_NOT_SUPPORTED;
    *out = (pfi_tput_source){.start = emu_start, .stop = emu_stop, .poll = emu_poll, .ctx = g};
    return PFI_OK;
}
