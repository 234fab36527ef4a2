/*
 * The tiers, value checks and registration-socket client shared by pfi_spank.so,
 * `pfi slurm` and pfid (proto.h).
 */
#define _GNU_SOURCE
#include "proto.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const pfi_slurm_tier tiers[] = {
    {"rigid", 0.0, false, 0}, {"low", 0.10, false, 1},    {"medium", 0.25, false, 2},
    {"high", 0.50, true, 3},  {"pausable", 1.0, true, 4},
};

const pfi_slurm_tier *pfi_slurm_tier_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t k = 0; k < sizeof tiers / sizeof tiers[0]; k++)
        if (strcmp(tiers[k].name, name) == 0)
            return &tiers[k];
    /* the grid event's tiers (pfi/grid.h, the Phoenix demonstration's names): Flex N is
     * the tier of rank N, whose allowance is Flex N's (10, 25, 50 %) */
    const char *d = name;
    if ((d[0] == 'f' || d[0] == 'F') && strncmp(d + 1, "lex", 3) == 0)
        d += d[4] == '-' ? 5 : 4;
    if (d[0] >= '1' && d[0] <= '3' && d[1] == '\0')
        return &tiers[d[0] - '0'];
    return NULL;
}

int pfi_slurm_tier_flex(const pfi_slurm_tier *t)
{
    return t != NULL && t->rank >= 1 && t->rank <= 3 ? t->rank : 0;
}

const char *pfi_slurm_tier_names(void)
{
    return "rigid, low (= 1, flex1), medium (= 2, flex2), high (= 3, flex3), pausable";
}

bool pfi_slurm_valid_job(const char *s)
{
    size_t n = 0;
    for (; s[n] != '\0'; n++)
        if (!isdigit((unsigned char)s[n]) || n >= 15)
            return false;
    return n > 0 && strspn(s, "0") < n;
}

bool pfi_slurm_valid_class(const char *s)
{
    size_t n = 0;
    for (; s[n] != '\0'; n++) {
        unsigned char c = (unsigned char)s[n];
        if (c >= 0x80 || !(isalnum(c) || strchr("._:@+=-", c) != NULL) || n + 1 >= PFI_SLURM_ID_MAX)
            return false;
    }
    return n > 0;
}

bool pfi_slurm_valid_user(const char *s)
{
    size_t n = 0;
    for (; s[n] != '\0'; n++) {
        unsigned char c = (unsigned char)s[n];
        if (c >= 0x80 || !(isalnum(c) || c == '.' || c == '_' || c == '-') ||
            n + 1 >= PFI_SLURM_USER_MAX)
            return false;
    }
    return n > 0 && s[0] != '-';
}

static bool parse_double(const char *s, double *out)
{
    if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
        return false;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

bool pfi_slurm_parse_fraction(const char *s, double *out)
{
    double v;
    if (!parse_double(s, &v) || v < 0 || v > 1)
        return false;
    *out = v;
    return true;
}

bool pfi_slurm_parse_pfi(const char *s, double *out)
{
    double v;
    if (!parse_double(s, &v) || !(v > 0) || v > 100)
        return false;
    *out = v;
    return true;
}

static bool put(char *buf, size_t cap, size_t *len, const char *s, size_t n)
{
    if (*len + n + 1 > cap)
        return false;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
    return true;
}

bool pfi_slurm_json_str(char *buf, size_t cap, size_t *len, const char *s)
{
    if (!put(buf, cap, len, "\"", 1))
        return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            if (!put(buf, cap, len, esc, 2))
                return false;
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            if (!put(buf, cap, len, esc, 6))
                return false;
        } else if (!put(buf, cap, len, s, 1)) {
            return false;
        }
    }
    return put(buf, cap, len, "\"", 1);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wait for fd to be ready for events before deadline; false on timeout or error. */
static bool wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - mono_s();
        if (left <= 0)
            return false;
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r > 0)
            return true;
        if (r < 0 && errno != EINTR)
            return false;
    }
}

int pfi_slurm_call(const char *path, const char *req, double timeout_s, char *reply,
                   size_t reply_cap, char *err, size_t err_cap)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (reply_cap == 0 || strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, err_cap, "socket path '%.200s' too long (at most %zu bytes)", path,
                 sizeof sa.sun_path - 1);
        return -1;
    }
    reply[0] = '\0';
    memcpy(sa.sun_path, path, strlen(path) + 1);
    double deadline = mono_s() + timeout_s;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, err_cap, "socket: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS &&
        errno != EAGAIN) {
        snprintf(err, err_cap, "cannot connect to pfid at %.200s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    size_t n = strlen(req), off = 0;
    while (off < n) {
        if (!wait_fd(fd, POLLOUT, deadline)) {
            snprintf(err, err_cap, "pfid at %.200s: no answer within %.0f s", path, timeout_s);
            close(fd);
            return -1;
        }
        ssize_t w = send(fd, req + off, n - off, MSG_NOSIGNAL);
        if (w < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
            break; /* pfid answered before reading it all (a refusal): read the answer */
        if (w < 0) {
            snprintf(err, err_cap, "pfid at %.200s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    size_t got = 0;
    for (;;) {
        if (!wait_fd(fd, POLLIN, deadline)) {
            snprintf(err, err_cap, "pfid at %.200s: no answer within %.0f s", path, timeout_s);
            close(fd);
            return -1;
        }
        ssize_t r = recv(fd, reply + got, reply_cap - 1 - got, 0);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r < 0) {
            snprintf(err, err_cap, "pfid at %.200s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        if (r == 0 || got + (size_t)r >= reply_cap - 1) {
            got += (size_t)(r > 0 ? r : 0);
            break;
        }
        got += (size_t)r;
    }
    close(fd);
    reply[got] = '\0';
    if (got == 0) {
        snprintf(err, err_cap, "pfid at %.200s closed the connection without an answer", path);
        return -1;
    }
    return 0;
}

/* Append the GPU list "0,1,4-5" as JSON strings; false (err) on a bad element. */
static bool put_gpus(char *buf, size_t cap, size_t *len, const char *gpus, char *err,
                     size_t err_cap)
{
    if (!put(buf, cap, len, "[", 1))
        goto full;
    size_t count = 0;
    const char *p = gpus;
    while (p != NULL && *p != '\0') {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char item[32];
        if (n == 0 || n >= sizeof item) {
            snprintf(err, err_cap,
                     "GPU list '%.100s': element of %zu bytes (a GPU index or a "
                     "range like 0-3 was expected)",
                     gpus, n);
            return false;
        }
        memcpy(item, p, n);
        item[n] = '\0';
        char *dash = strchr(item, '-'), *end;
        unsigned long lo, hi;
        errno = 0;
        lo = strtoul(item, &end, 10);
        bool okv = end != item && isdigit((unsigned char)item[0]);
        if (okv && dash != NULL && end == dash) {
            hi = strtoul(dash + 1, &end, 10);
            okv = *end == '\0' && isdigit((unsigned char)dash[1]) && hi >= lo;
        } else {
            hi = lo;
            okv = okv && *end == '\0';
        }
        if (!okv || errno != 0 || hi >= 4096) {
            snprintf(err, err_cap, "GPU list '%.100s': '%s' is not a GPU index or a range like 0-3",
                     gpus, item);
            return false;
        }
        for (unsigned long k = lo; k <= hi; k++) {
            if (++count > PFI_SLURM_GPUS_MAX) {
                snprintf(err, err_cap, "GPU list '%.100s': more than %d GPUs", gpus,
                         PFI_SLURM_GPUS_MAX);
                return false;
            }
            char num[32];
            int m = snprintf(num, sizeof num, "%s\"%lu\"", count > 1 ? "," : "", k);
            if (!put(buf, cap, len, num, (size_t)m))
                goto full;
        }
        p = comma ? comma + 1 : NULL;
    }
    if (put(buf, cap, len, "]", 1))
        return true;
full:
    snprintf(err, err_cap, "request larger than %zu bytes", cap);
    return false;
}

bool pfi_slurm_start_request(char *buf, size_t cap, const char *job, const char *user,
                             const char *gpus, const char *cls, const char *flex,
                             const char *min_tput, const char *pfi, char *err, size_t err_cap)
{
    double v = 0;
    if (job == NULL || !pfi_slurm_valid_job(job)) {
        snprintf(err, err_cap, "job id '%.40s': a Slurm job id (decimal digits) was expected",
                 job ? job : "");
        return false;
    }
    if (user != NULL && !pfi_slurm_valid_user(user)) {
        snprintf(err, err_cap, "user '%.70s': a user name of [A-Za-z0-9._-] was expected", user);
        return false;
    }
    if (cls != NULL && !pfi_slurm_valid_class(cls)) {
        snprintf(err, err_cap,
                 "--pfi-class '%.140s': 1..127 characters of [A-Za-z0-9._:@+=-] were expected",
                 cls);
        return false;
    }
    if (flex != NULL && pfi_slurm_tier_find(flex) == NULL) {
        snprintf(err, err_cap, "--pfi-flex '%.60s': one of %s was expected", flex,
                 pfi_slurm_tier_names());
        return false;
    }
    if (min_tput != NULL && !pfi_slurm_parse_fraction(min_tput, &v)) {
        snprintf(err, err_cap, "--pfi-min-throughput '%.60s': a fraction in [0, 1] was expected",
                 min_tput);
        return false;
    }
    if (pfi != NULL && !pfi_slurm_parse_pfi(pfi, &v)) {
        snprintf(err, err_cap, "--pfi-pfi '%.60s': a number in (0, 100] was expected", pfi);
        return false;
    }
    size_t len = 0;
    buf[0] = '\0';
    if (!put(buf, cap, &len, "{\"op\":\"start\",\"job\":", 20) ||
        !pfi_slurm_json_str(buf, cap, &len, job))
        goto full;
    if (user != NULL &&
        (!put(buf, cap, &len, ",\"user\":", 8) || !pfi_slurm_json_str(buf, cap, &len, user)))
        goto full;
    if (!put(buf, cap, &len, ",\"gpus\":", 8))
        goto full;
    if (!put_gpus(buf, cap, &len, gpus, err, err_cap))
        return false;
    if (cls != NULL &&
        (!put(buf, cap, &len, ",\"class\":", 9) || !pfi_slurm_json_str(buf, cap, &len, cls)))
        goto full;
    if (flex != NULL &&
        (!put(buf, cap, &len, ",\"flex\":", 8) || !pfi_slurm_json_str(buf, cap, &len, flex)))
        goto full;
    char num[64];
    if (min_tput != NULL) {
        pfi_slurm_parse_fraction(min_tput, &v);
        int m = snprintf(num, sizeof num, ",\"min_throughput\":%.17g", v);
        if (!put(buf, cap, &len, num, (size_t)m))
            goto full;
    }
    if (pfi != NULL) {
        pfi_slurm_parse_pfi(pfi, &v);
        int m = snprintf(num, sizeof num, ",\"pfi\":%.17g", v);
        if (!put(buf, cap, &len, num, (size_t)m))
            goto full;
    }
    if (put(buf, cap, &len, "}", 1))
        return true;
full:
    snprintf(err, err_cap, "request larger than %zu bytes", cap);
    return false;
}

bool pfi_slurm_end_request(char *buf, size_t cap, const char *job, char *err, size_t err_cap)
{
    return pfi_slurm_job_request(buf, cap, "end", job, err, err_cap);
}

bool pfi_slurm_job_request(char *buf, size_t cap, const char *op, const char *job, char *err,
                           size_t err_cap)
{
    if (job == NULL || !pfi_slurm_valid_job(job)) {
        snprintf(err, err_cap, "job id '%.40s': a Slurm job id (decimal digits) was expected",
                 job ? job : "");
        return false;
    }
    size_t len = 0;
    buf[0] = '\0';
    if (put(buf, cap, &len, "{\"op\":", 6) && pfi_slurm_json_str(buf, cap, &len, op) &&
        put(buf, cap, &len, ",\"job\":", 7) && pfi_slurm_json_str(buf, cap, &len, job) &&
        put(buf, cap, &len, "}", 1))
        return true;
    snprintf(err, err_cap, "request larger than %zu bytes", cap);
    return false;
}

int pfi_slurm_admin_comment(const char *scontrol, const char *job, const char *text,
                            double timeout_s, char *err, size_t err_cap)
{
    if (!pfi_slurm_valid_job(job)) {
        snprintf(err, err_cap, "job id '%.40s' is not a Slurm job id", job);
        return -1;
    }
    char a_job[64], a_text[PFI_SLURM_REPLY_MAX + 16];
    snprintf(a_job, sizeof a_job, "JobId=%s", job);
    snprintf(a_text, sizeof a_text, "AdminComment=%s", text);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, err_cap, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
        }
        char *argv[] = {(char *)scontrol, "update", a_job, a_text, NULL};
        execv(scontrol, argv);
        _exit(127);
    }
    double deadline = mono_s() + timeout_s;
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            snprintf(err, err_cap, "waitpid: %s", strerror(errno));
            return -1;
        }
        if (mono_s() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            snprintf(err, err_cap, "%s update did not finish within %.0f s", scontrol, timeout_s);
            return -1;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    snprintf(err, err_cap, "%s update JobId=%s exited with %d", scontrol, job,
             WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return -1;
}

bool pfi_slurm_options_comment(char *buf, size_t cap, const char *cls, const char *flex,
                               const char *min_tput, const char *pfi)
{
    double v;
    size_t len = 0;
    bool first = true;
    buf[0] = '\0';
    if (!put(buf, cap, &len, "pfi:{", 5))
        return false;
    const char *keys[] = {"class", "flex"}, *vals[] = {cls, flex};
    for (int k = 0; k < 2; k++) {
        if (vals[k] == NULL)
            continue;
        char key[32];
        int m = snprintf(key, sizeof key, "%s\"%s\":", first ? "" : ",", keys[k]);
        if (!put(buf, cap, &len, key, (size_t)m) || !pfi_slurm_json_str(buf, cap, &len, vals[k]))
            return false;
        first = false;
    }
    char num[80];
    if (min_tput != NULL && pfi_slurm_parse_fraction(min_tput, &v)) {
        int m = snprintf(num, sizeof num, "%s\"min_throughput\":%.17g", first ? "" : ",", v);
        if (!put(buf, cap, &len, num, (size_t)m))
            return false;
        first = false;
    }
    if (pfi != NULL && pfi_slurm_parse_pfi(pfi, &v)) {
        int m = snprintf(num, sizeof num, "%s\"pfi\":%.17g", first ? "" : ",", v);
        if (!put(buf, cap, &len, num, (size_t)m))
            return false;
        first = false;
    }
    return !first && put(buf, cap, &len, "}", 1);
}
