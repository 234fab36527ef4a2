/*
 * The node's power for facility targets (DESIGN §10, issue 20 item 5): a file read every
 * sampling round — watts written by a whole-node meter's reader (a PDU, `ipmitool dcmi power
 * reading`), or a cumulative energy counter in microjoules (RAPL's
 * /sys/class/powercap/intel-rapl:N/energy_uj) differenced here — and the non-GPU part: the
 * reading less the GPUs' power when the meter includes them, else the reading itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"

bool pfid_node_value_parse(const char *text, size_t len, double *out)
{
    char buf[64];
    size_t a = 0, b = len;
    while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\n' || text[a] == '\r'))
        a++;
    while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\n' ||
                     text[b - 1] == '\r'))
        b--;
    if (b == a || b - a >= sizeof buf)
        return false;
    memcpy(buf, text + a, b - a);
    buf[b - a] = '\0';
    if (memchr(buf, '\0', b - a) != NULL)
        return false;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v) || v < 0)
        return false;
    *out = v;
    return true;
}

/* text[0..len) for a message: printable ASCII as is, the rest escaped (\n, \t, \xHH), at most
 * 40 bytes of it, into out[on]. */
static void escaped(const char *text, size_t len, char *out, size_t on)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < len && i < 40 && o + 5 < on; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n')
            o += (size_t)snprintf(out + o, on - o, "\\n");
        else if (c == '\t')
            o += (size_t)snprintf(out + o, on - o, "\\t");
        else if (c == '\r')
            o += (size_t)snprintf(out + o, on - o, "\\r");
        else if (c < 0x20 || c >= 0x7f || c == '\'' || c == '\\')
            o += (size_t)snprintf(out + o, on - o, "\\x%02x", c);
        else
            out[o++] = (char)c, out[o] = '\0';
    }
}

/* Whether text[0..len) has only what numbers and white space are made of. */
static bool numberish(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (strchr("0123456789.eE+- \t\r\n", text[i]) == NULL || text[i] == '\0')
            return false;
    return true;
}

/* Read the file (at most 63 bytes: one number) into buf, its mtime into *mt; false with the
   reason in err. */
static bool read_small(const char *path, char *buf, size_t n, size_t *len, struct timespec *mt,
                       char *err, size_t en)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, en, "%s: %s", path, strerror(errno));
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, en, "%s: not a regular file", path);
        close(fd);
        return false;
    }
    *mt = st.st_mtim;
    ssize_t r = read(fd, buf, n);
    int saved = errno;
    close(fd);
    if (r < 0) {
        snprintf(err, en, "%s: %s", path, strerror(saved));
        return false;
    }
    if ((size_t)r == n) {
        char shown[200];
        escaped(buf, n, shown, sizeof shown);
        if (numberish(buf, n))
            snprintf(err, en, "%s: more than one number (%zu bytes or more)", path, n);
        else
            snprintf(err, en, "%s: not a number: found '%s...' (%zu bytes or more)", path, shown,
                     n);
        return false;
    }
    *len = (size_t)r;
    return true;
}

void pfid_node_power_round(pfid_agent *a)
{
    const char *path = a->cfg.node_power_file;
    if (path[0] == '\0')
        return;
    char buf[64], err[200] = "";
    size_t len = 0;
    double v = NAN, mono = pfid_mono_s();
    /* the frozen timer runs on the host's monotonic clock, as the file's mtime does on the
     * host's: on the emulated clock (clock = emulated) a replay's fast-forwarded seconds
     * would call a static file frozen after a fraction of a real second */
    struct timespec now_ts;
    clock_gettime(CLOCK_MONOTONIC, &now_ts);
    double host_s = (double)now_ts.tv_sec + 1e-9 * (double)now_ts.tv_nsec;
    struct timespec mt = {0, 0};
    const bool watts = a->cfg.node_power_kind == PFID_NODE_WATTS;
    bool frozen = false, moved = false;
    if (read_small(path, buf, sizeof buf, &len, &mt, err, sizeof err)) {
        char shown[200];
        size_t shown_len = len; /* the value as written, without its line end */
        while (shown_len > 0 && (buf[shown_len - 1] == '\n' || buf[shown_len - 1] == '\r' ||
                                 buf[shown_len - 1] == ' ' || buf[shown_len - 1] == '\t'))
            shown_len--;
        escaped(buf, shown_len, shown, sizeof shown);
        if (!pfid_node_value_parse(buf, len, &v))
            snprintf(err, sizeof err, "%s: expected one number >= 0 (%s), found '%s'", path,
                     watts ? "watts" : "microjoules", shown);
        else if (watts && v > PFID_NODE_MAX_W)
            snprintf(err, sizeof err, "%s: out of range: %s W is above %g W (a node's power)", path,
                     shown, PFID_NODE_MAX_W);
    }
    pthread_mutex_lock(&a->snap_lock);
    if (err[0] == '\0') {
        /* frozen: a writer that stopped leaves its last number behind; neither the value nor
         * the file's mtime moving (sysfs counters keep one mtime, their value moves) for
         * node_power_frozen_after and two rounds or more makes the reading missing */
        moved = !(v == a->node.last_v) || mt.tv_sec != a->node.mtime.tv_sec ||
                mt.tv_nsec != a->node.mtime.tv_nsec;
        a->node.last_v = v;
        a->node.mtime = mt;
        if (moved) {
            a->node.change_mono_s = host_s;
            a->node.unchanged_rounds = 0;
        } else {
            a->node.unchanged_rounds++;
        }
        double still = host_s - a->node.change_mono_s;
        frozen = a->cfg.node_power_frozen_s > 0 && a->node.unchanged_rounds >= 2 &&
                 still >= a->cfg.node_power_frozen_s;
        if (frozen)
            snprintf(err, sizeof err,
                     "%s: frozen: neither its value (%.6g) nor its mtime moved for %.1f s (%lu "
                     "rounds; node_power_frozen_after %g s): missing, not its last number",
                     path, v, still, a->node.unchanged_rounds, a->cfg.node_power_frozen_s);
    } else {
        a->node.unchanged_rounds = 0;
        a->node.last_v = NAN; /* after a failure the next reading counts as a change */
    }
    bool was_ok = a->node.err[0] == '\0', was_frozen = a->node.frozen;
    a->node.frozen = frozen;
    if (frozen && !was_frozen)
        a->node.frozen_total++;
    if (err[0] != '\0') {
        if (was_ok || frozen != was_frozen)
            LOG_WARN("node power: %s", err);
        snprintf(a->node.err, sizeof a->node.err, "%s", err);
        a->node.counter_uj = NAN; /* the next good reading starts a new difference */
        pthread_mutex_unlock(&a->snap_lock);
        return;
    }
    if (!was_ok)
        LOG_INFO("node power: %s %s again", path, was_frozen ? "moving" : "readable");
    a->node.err[0] = '\0';
    if (a->cfg.node_power_kind == PFID_NODE_WATTS) {
        a->node.power_w = v;
        a->node.mono_s = mono;
    } else {
        double dt = mono - a->node.counter_mono_s;
        /* a counter that went back wrapped (RAPL: at max_energy_range_uj) or restarted: the
         * difference starts again from here */
        double w = dt > 0 ? (v - a->node.counter_uj) * 1e-6 / dt : NAN;
        if (v == a->node.counter_uj) {
            /* a counter that did not move is no new reading (a node never draws 0 W): the
             * last power ages (stale_after) until the counter moves or is frozen */
            pthread_mutex_unlock(&a->snap_lock);
            return;
        }
        if (isfinite(a->node.counter_uj) && v >= a->node.counter_uj && dt > 0 &&
            w <= PFID_NODE_MAX_W) {
            a->node.power_w = w;
            a->node.mono_s = mono;
        }
        a->node.counter_uj = v;
        a->node.counter_mono_s = mono;
    }
    pthread_mutex_unlock(&a->snap_lock);
}

void pfid_node_power(const pfid_agent *a, double now_mono, double *node_w, double *non_gpu_w)
{
    *node_w = *non_gpu_w = NAN;
    double stale = a->cfg.stale_s > 0 ? a->cfg.stale_s : 3 * a->cfg.interval_s;
    if (a->cfg.node_power_file[0] == '\0' || a->node.err[0] != '\0' || !isfinite(a->node.power_w) ||
        !(now_mono - a->node.mono_s <= stale))
        return;
    *node_w = a->node.power_w;
    if (!a->cfg.node_power_includes_gpus) {
        *non_gpu_w = a->node.power_w;
        return;
    }
    double gpus = 0;
    for (unsigned k = 0; k < a->n_gpus; k++) {
        if (!pfid_gpu_fresh(a, k, now_mono) || !a->gpus[k].power_valid)
            return; /* the GPUs' share unknown: the rest is unknown too */
        gpus += a->gpus[k].power_w;
    }
    /* a meter read a little before or after the GPUs can show less than they drew: never a
     * negative remainder */
    *non_gpu_w = fmax(0, a->node.power_w - gpus);
}
