/*
 * NVIDIA Xid events from kernel logs (pfi/kernlog.h): a bounded line reader, a small state
 * machine that joins a message's continuation lines, the timestamp prefix of each dmesg /
 * journalctl / syslog form kept as text, and the match of events to a run's GPUs by PCI bus.
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "pfi/kernlog.h"
#include "telemetry/internal.h"

#define KL_BLOCK 65536
#define KL_SLOTS (2 * PFI_KERNLOG_MAX_EVENTS) /* power of two: the hash table never fills */

/* ---- small text helpers ---- */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}
static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}
static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}
static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
}

static void trim(const char **s, size_t *n)
{
    while (*n > 0 && is_blank(**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && is_blank((*s)[*n - 1]))
        (*n)--;
}

/* Case-insensitive search of needle (ASCII, lower case) in s[0..n); NULL when absent. */
static const char *find_ci(const char *s, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; m <= n && i <= n - m; i++) {
        size_t j = 0;
        while (j < m && lower(s[i + j]) == needle[j])
            j++;
        if (j == m)
            return s + i;
    }
    return NULL;
}

/* Copy s[0..n) into out[len] (NUL-terminated, cut), control bytes as '?'. */
static void copy_text(char *out, size_t len, const char *s, size_t n)
{
    if (n > len - 1)
        n = len - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    out[n] = '\0';
}

/* ---- PCI bus ids ---- */

/* Hex digits s[0..n) (1..max of them) into *v. */
static bool hex_field(const char *s, size_t n, size_t max, unsigned *v)
{
    if (n == 0 || n > max)
        return false;
    unsigned x = 0;
    for (size_t i = 0; i < n; i++) {
        int h = hex_value(s[i]);
        if (h < 0)
            return false;
        x = x * 16 + (unsigned)h;
    }
    *v = x;
    return true;
}

bool pfi_kernlog_bus_normalize(const char *s, size_t n, char out[PFI_KERNLOG_BUS_LEN])
{
    out[0] = '\0';
    if (s == NULL)
        return false;
    trim(&s, &n);
    if (n >= 4 && lower(s[0]) == 'p' && lower(s[1]) == 'c' && lower(s[2]) == 'i' && s[3] == ':') {
        s += 4;
        n -= 4;
    }
    if (n == 0 || n > 24)
        return false;
    const char *part[3];
    size_t len[3], k = 0;
    const char *p = s;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == ':') {
            if (k == 3)
                return false;
            part[k] = p;
            len[k] = (size_t)(s + i - p);
            k++;
            p = s + i + 1;
        }
    }
    if (k < 2)
        return false;
    /* The last part is the device, with an optional ".function". */
    const char *dv = part[k - 1];
    size_t dn = len[k - 1];
    const char *dot = memchr(dv, '.', dn);
    unsigned dom = 0, bus, dev, fn = 0;
    if (dot != NULL) {
        size_t fl = dn - (size_t)(dot - dv) - 1;
        if (!hex_field(dot + 1, fl, 1, &fn) || fn > 7)
            return false;
        dn = (size_t)(dot - dv);
    } else if (k == 2) {
        return false; /* "10de:20b2", "0009:00": not a bus id we can place */
    }
    if (!hex_field(dv, dn, 2, &dev) || dev > 0x1f)
        return false;
    if (!hex_field(part[k - 2], len[k - 2], 2, &bus))
        return false;
    if (k == 3) {
        /* 8-digit domains (nvidia-smi) are cut to their last 4 digits, as the readers do. */
        size_t dl = len[0];
        const char *d = part[0];
        if (dl > 8 || dl == 0)
            return false;
        if (!hex_field(d, dl, 8, &dom))
            return false;
        if (dl > 4 && !hex_field(d + dl - 4, 4, 4, &dom))
            return false;
    }
    snprintf(out, PFI_KERNLOG_BUS_LEN, "%04x:%02x:%02x.%x", dom & 0xffffu, bus, dev, fn);
    return true;
}

/* ---- the Xid table ---- */

typedef struct xid_info {
    int xid;
    bool fatal;
    const char *name;
} xid_info;

/* NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors), the numbers a training run
 * meets; fatal: the GPU is gone, needs a reset, or a hardware error killed the work on it. */
static const xid_info xid_table[] = {
    {0, true, "GPU has fallen off the bus (driver notice)"},
    {8, false, "GPU stopped processing"},
    {13, false, "graphics engine exception (application error)"},
    {31, false, "GPU memory page fault (application error)"},
    {32, false, "invalid or corrupted push buffer stream"},
    {38, false, "driver firmware error"},
    {43, false, "GPU stopped processing (application error)"},
    {45, false, "preemptive cleanup, due to previous errors"},
    {48, true, "double-bit ECC error"},
    {56, false, "display engine error"},
    {57, false, "error programming video memory interface"},
    {61, false, "internal micro-controller breakpoint/warning"},
    {62, true, "internal micro-controller halt"},
    {63, false, "ECC page retirement or row remapping recorded (reset when convenient)"},
    {64, true, "ECC page retirement or row remapper recording failure"},
    {68, false, "video decoder exception (application error)"},
    {69, false, "graphics engine class error (application error)"},
    {74, true, "NVLink error"},
    {79, true, "GPU has fallen off the bus"},
    {92, false, "high single-bit ECC error rate"},
    {94, true, "contained ECC error (the application on the GPU was terminated)"},
    {95, true, "uncontained ECC error (every application on the GPU was terminated)"},
    {109, false, "context switch timeout (application error)"},
    {119, true, "GSP RPC timeout"},
    {120, true, "GSP error"},
    {121, false, "C2C link corrected error"},
    {140, true, "unrecovered ECC error"},
    {154, false, "GPU recovery action changed"},
};

static const int default_fatal[] = {48, 62, 64, 74, 79, 94, 95, 119, 120, 140};

static const xid_info *xid_lookup(int xid)
{
    for (size_t i = 0; i < sizeof xid_table / sizeof xid_table[0]; i++)
        if (xid_table[i].xid == xid)
            return &xid_table[i];
    return NULL;
}

const char *pfi_kernlog_xid_name(int xid)
{
    const xid_info *x = xid_lookup(xid);
    return x ? x->name : NULL;
}

const int *pfi_kernlog_default_fatal(size_t *n)
{
    if (n != NULL)
        *n = sizeof default_fatal / sizeof default_fatal[0];
    return default_fatal;
}

/* Xid 154 "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)": fatal
 * when the new action is anything but 0x0 (None): a reset, an FLR, a reboot or a drain. */
static bool recovery_needed(const char *msg)
{
    size_t n = strlen(msg);
    const char *to = NULL, *p = msg;
    while ((p = find_ci(p, n - (size_t)(p - msg), " to 0x")) != NULL) {
        to = p;
        p += 6;
    }
    if (to == NULL)
        return false;
    to += 6;
    bool any = false, nonzero = false;
    while (hex_value(*to) >= 0) {
        any = true;
        nonzero |= *to != '0';
        to++;
    }
    return any && nonzero;
}

bool pfi_kernlog_is_fatal(const pfi_kernlog_event *ev, const int *fatal, size_t n_fatal)
{
    if (ev == NULL)
        return false;
    if (ev->xid == 0)
        return true;
    if (fatal != NULL) {
        for (size_t i = 0; i < n_fatal; i++)
            if (fatal[i] == ev->xid)
                return true;
        return false;
    }
    if (ev->xid == 154)
        return recovery_needed(ev->message);
    const xid_info *x = xid_lookup(ev->xid);
    return x != NULL && x->fatal;
}

/* ---- the collector ---- */

pfi_error pfi_kernlog_create(pfi_kernlog **out)
{
    if (out == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    *out = NULL;
    pfi_kernlog *kl = pfi_calloc(1, sizeof *kl);
    if (kl == NULL)
        return PFI_ERR_NOMEM;
    kl->slots = pfi_calloc(KL_SLOTS, sizeof *kl->slots);
    if (kl->slots == NULL) {
        pfi_free(kl);
        return PFI_ERR_NOMEM;
    }
    *out = kl;
    return PFI_OK;
}

void pfi_kernlog_destroy(pfi_kernlog *kl)
{
    if (kl == NULL)
        return;
    for (size_t i = 0; i < kl->n_files; i++)
        pfi_free(kl->files[i]);
    pfi_free(kl->files);
    pfi_free(kl->events);
    pfi_free(kl->slots);
    pfi_free(kl);
}

/* A record being read: its first line and the continuation lines joined to it. */
enum { REC_NONE, REC_OTHER, REC_NVRM, REC_XID };

typedef struct record {
    int kind;
    int xid;
    char bus[PFI_KERNLOG_BUS_LEN];
    char bus_text[32];
    char time[PFI_KERNLOG_TIME_LEN];
    pfi_kernlog_clock clock;
    char msg[PFI_KERNLOG_MSG_LEN];
    size_t msg_len;
    bool cut;
    long line;
    size_t n_cont;
} record;

static void rec_append(record *r, const char *s, size_t n)
{
    trim(&s, &n);
    if (n == 0)
        return;
    size_t room = sizeof r->msg - 1 - r->msg_len;
    if (r->msg_len > 0) {
        if (room == 0) {
            r->cut = true;
            return;
        }
        r->msg[r->msg_len++] = ' ';
        room--;
    }
    if (n > room) {
        n = room;
        r->cut = true;
    }
    copy_text(r->msg + r->msg_len, n + 1, s, n);
    r->msg_len += n;
}

static uint32_t event_hash(int xid, const char *key)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < 4; i++) {
        h ^= (uint32_t)(((unsigned)xid >> (8 * i)) & 0xffu);
        h *= 16777619u;
    }
    for (const char *p = key; *p != '\0'; p++) {
        h ^= (unsigned char)*p;
        h *= 16777619u;
    }
    return h;
}

/* The merge key of an event: its bus id, or the id as written when it was not recognised. */
static const char *event_key(const char *bus, const char *bus_text)
{
    return bus[0] != '\0' ? bus : bus_text;
}

/* Keep the finished record r of file fi: merged into an earlier event with the same Xid and
 * GPU, or as a new one while there is room. */
static pfi_error add_event(pfi_kernlog *kl, const record *r, int xid, size_t fi)
{
    const char *key = event_key(r->bus, r->bus_text);
    uint32_t h = event_hash(xid, key) & (KL_SLOTS - 1);
    for (;; h = (h + 1) & (KL_SLOTS - 1)) {
        unsigned idx = kl->slots[h];
        if (idx == 0)
            break;
        pfi_kernlog_event *ev = &kl->events[idx - 1];
        if (ev->xid == xid && strcmp(event_key(ev->bus, ev->bus_text), key) == 0) {
            ev->count++;
            memcpy(ev->last_time, r->time, sizeof ev->last_time);
            ev->last_file = fi;
            ev->last_line = r->line;
            return PFI_OK;
        }
    }
    if (kl->n_events == PFI_KERNLOG_MAX_EVENTS) {
        kl->n_dropped++;
        return PFI_OK;
    }
    if (kl->n_events == kl->events_cap) {
        size_t cap = kl->events_cap ? 2 * kl->events_cap : 16;
        if (cap > PFI_KERNLOG_MAX_EVENTS)
            cap = PFI_KERNLOG_MAX_EVENTS;
        pfi_kernlog_event *ev = pfi_realloc(kl->events, cap * sizeof *ev);
        if (ev == NULL)
            return PFI_ERR_NOMEM;
        kl->events = ev;
        kl->events_cap = cap;
    }
    pfi_kernlog_event *ev = &kl->events[kl->n_events];
    memset(ev, 0, sizeof *ev);
    ev->xid = xid;
    memcpy(ev->bus, r->bus, sizeof ev->bus);
    memcpy(ev->bus_text, r->bus_text, sizeof ev->bus_text);
    memcpy(ev->time, r->time, sizeof ev->time);
    memcpy(ev->last_time, r->time, sizeof ev->last_time);
    ev->clock = r->clock;
    memcpy(ev->message, r->msg, r->msg_len);
    ev->message[r->msg_len] = '\0';
    ev->message_cut = r->cut;
    ev->count = 1;
    ev->file = ev->last_file = fi;
    ev->line = ev->last_line = r->line;
    kl->slots[h] = (unsigned)++kl->n_events;
    return PFI_OK;
}

/* The bus id named in a notice's text: the first token that reads as one and is written
 * with its function ("0000:3d:00.0") or a "PCI:" prefix — so that "14:20:03" never is. */
static bool notice_bus(const char *s, size_t n, char *bus, char *bus_text, size_t text_len)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && (is_blank(s[i]) || s[i] == '(' || s[i] == ')' || s[i] == ','))
            i++;
        size_t j = i;
        while (j < n && !is_blank(s[j]) && s[j] != '(' && s[j] != ')' && s[j] != ',')
            j++;
        size_t m = j - i;
        while (m > 0 && (s[i + m - 1] == ':' || s[i + m - 1] == '.'))
            m--;
        bool written =
            memchr(s + i, '.', m) != NULL || (m > 4 && find_ci(s + i, 4, "pci:") == s + i);
        if (m > 0 && written && pfi_kernlog_bus_normalize(s + i, m, bus)) {
            copy_text(bus_text, text_len, s + i, m);
            return true;
        }
        i = j;
    }
    return false;
}

/* End the open record: an Xid or a notice becomes an event; everything is counted. */
static pfi_error finish(pfi_kernlog *kl, record *r, size_t fi)
{
    pfi_error e = PFI_OK;
    if (r->kind == REC_XID) {
        kl->n_xid_lines++;
        kl->n_continuation += r->n_cont;
        e = add_event(kl, r, r->xid, fi);
    } else if (r->kind == REC_NVRM) {
        if (find_ci(r->msg, r->msg_len, "fallen off the bus") != NULL &&
            notice_bus(r->msg, r->msg_len, r->bus, r->bus_text, sizeof r->bus_text)) {
            kl->n_notice_lines++;
            kl->n_continuation += r->n_cont;
            e = add_event(kl, r, 0, fi);
        } else {
            kl->n_nvrm_other += 1 + r->n_cont;
        }
    }
    r->kind = REC_NONE;
    return e;
}

/* "[ 8123.441915]" -> true: the bracket holds seconds since boot. */
static bool bracket_numeric(const char *s, size_t n)
{
    if (n < 3 || s[0] != '[' || s[n - 1] != ']')
        return false;
    s++;
    n -= 2;
    trim(&s, &n);
    size_t i = 0, d = 0;
    while (i < n && is_digit(s[i]))
        i++, d++;
    if (d == 0)
        return false;
    if (i < n && s[i] == '.') {
        i++;
        size_t f = 0;
        while (i < n && is_digit(s[i]))
            i++, f++;
        if (f == 0)
            return false;
    }
    return i == n;
}

/* The first "[...]" in s[0..n) whose content is numeric: *b, *bn. */
static bool find_boot_bracket(const char *s, size_t n, const char **b, size_t *bn)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '[')
            continue;
        const char *end = memchr(s + i, ']', n - i);
        if (end == NULL)
            return false;
        size_t m = (size_t)(end - (s + i)) + 1;
        if (bracket_numeric(s + i, m)) {
            *b = s + i;
            *bn = m;
            return true;
        }
    }
    return false;
}

/*
 * The timestamp of a line from the text before "NVRM:" (see the forms in pfi/kernlog.h):
 *   [ 8123.441915]                          dmesg: seconds since boot
 *   [Sun Nov  2 14:20:03 2025]              dmesg -T
 *   kern  :warn  : [ 8123.441915]           dmesg -x (facility and level dropped)
 *   2025-11-02T14:20:03,441915+01:00        dmesg --time-format iso
 *   Nov 02 14:20:03 node7 kernel:           journalctl -k, syslog (any journalctl time form:
 *                                           everything before "HOST kernel:"), possibly
 *                                           followed by a dmesg bracket, kept too
 *   node7: [ 8123.4]                        pdsh/clush output: the bracket anywhere
 * Anything else gives no time.
 */
static void parse_prefix(const char *s, size_t n, record *r)
{
    trim(&s, &n);
    /* dmesg -x: "kern  :warn  : " */
    size_t i = 0;
    while (i < n && s[i] >= 'a' && s[i] <= 'z')
        i++;
    size_t j = i;
    while (j < n && is_blank(s[j]))
        j++;
    if (i > 0 && j < n && s[j] == ':') {
        size_t k = j + 1;
        size_t l0 = k;
        while (k < n && s[k] >= 'a' && s[k] <= 'z')
            k++;
        size_t l1 = k;
        while (k < n && is_blank(s[k]))
            k++;
        if (l1 > l0 && k < n && s[k] == ':') {
            s += k + 1;
            n -= k + 1;
            trim(&s, &n);
        }
    }
    const char *w = NULL, *b = NULL;
    size_t wn = 0, bn = 0;
    const char *kern = NULL;
    for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), "kernel:", 7)) != NULL; p += 7)
        if (p == s || is_blank(p[-1])) {
            kern = p;
            break;
        }
    const char *tail = s;
    size_t tn = n;
    if (kern != NULL) {
        const char *head = s;
        size_t hn = (size_t)(kern - s);
        trim(&head, &hn);
        while (hn > 0 && !is_blank(head[hn - 1])) /* the host name */
            hn--;
        trim(&head, &hn);
        w = head;
        wn = hn;
        tail = kern + 7;
        tn = n - (size_t)(tail - s);
        trim(&tail, &tn);
        if (tn > 0 && tail[0] == '[') {
            const char *end = memchr(tail, ']', tn);
            if (end != NULL) {
                b = tail;
                bn = (size_t)(end - tail) + 1;
            }
        }
        if (wn > 0 && bracket_numeric(w, wn) && b == NULL) { /* journalctl -o short-monotonic */
            b = w;
            bn = wn;
            w = NULL;
            wn = 0;
        }
    } else if (tn > 0 && tail[0] == '[') {
        const char *end = memchr(tail, ']', tn);
        if (end != NULL) {
            b = tail;
            bn = (size_t)(end - tail) + 1;
        }
    } else if (tn >= 10 && is_digit(tail[0]) && is_digit(tail[3]) && tail[4] == '-' &&
               tail[7] == '-') {
        w = tail;
        wn = 0;
        while (wn < tn && !is_blank(tail[wn]))
            wn++;
    } else if (tn > 0) {
        find_boot_bracket(tail, tn, &b, &bn);
    }
    char *t = r->time;
    size_t cap = sizeof r->time, len = 0;
    t[0] = '\0';
    if (wn > 0) {
        copy_text(t, cap, w, wn);
        len = strlen(t);
    }
    if (bn > 0 && len + 2 < cap) {
        if (len > 0)
            t[len++] = ' ';
        copy_text(t + len, cap - len, b, bn);
    }
    if (wn > 0)
        r->clock = PFI_KERNLOG_CLOCK_WALL;
    else if (bn > 0 && bracket_numeric(b, bn))
        r->clock = PFI_KERNLOG_CLOCK_BOOT;
    else if (bn > 0 && memchr(b, ':', bn) != NULL)
        r->clock = PFI_KERNLOG_CLOCK_WALL; /* dmesg -T */
    else
        r->clock = PFI_KERNLOG_CLOCK_NONE;
}

/* A run of exactly k digits at t[i] (not preceded nor followed by a digit) as a number. */
static bool digits_at(const char *t, size_t i, size_t k, long *v)
{
    if (i > 0 && is_digit(t[i - 1]))
        return false;
    long x = 0;
    for (size_t j = 0; j < k; j++) {
        if (!is_digit(t[i + j]))
            return false;
        x = x * 10 + (t[i + j] - '0');
    }
    *v = x;
    return !is_digit(t[i + k]);
}

/*
 * Whether a wall-clock timestamp text t (NUL-terminated, as parse_prefix keeps it) holds only
 * times of the calendar: each ISO date "YYYY-MM-DD" a day of its month (February 29 only in
 * a leap year), each "Mon D" a day its month can have (with the text's year when it has one:
 * dmesg -T's "[Sun Nov  2 14:20:03 2025]"), each clock "H:MM:SS" 00:00:00 to 23:59:60. A
 * text in no form pfi knows is taken as it is (it is kept as text, never put on a clock).
 */
static bool wall_time_valid(const char *t)
{
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    size_t n = strlen(t);
    long year = -1, mon = 0, day = 0, v;
    for (size_t i = 0; i + 4 <= n; i++) /* a standalone year: dmesg -T's last field */
        if (digits_at(t, i, 4, &v) && (i + 4 == n || t[i + 4] == ']' || is_blank(t[i + 4])) &&
            (i == 0 || is_blank(t[i - 1])))
            year = v;
    for (size_t i = 0; i < n; i++) {
        long y, m, d, h, mi, sec;
        if (i + 10 <= n && digits_at(t, i, 4, &y) && t[i + 4] == '-' &&
            digits_at(t, i + 5, 2, &m) && t[i + 7] == '-' && digits_at(t, i + 8, 2, &d)) {
            if (!tm_civil_valid(y, (unsigned)m, (unsigned)d))
                return false;
            i += 9;
            continue;
        }
        for (size_t k = 1; k <= 2; k++)
            if (i + k + 6 <= n && digits_at(t, i, k, &h) && t[i + k] == ':' &&
                digits_at(t, i + k + 1, 2, &mi) && t[i + k + 3] == ':' &&
                digits_at(t, i + k + 4, 2, &sec) && (h > 23 || mi > 59 || sec > 60))
                return false;
        if (i + 3 <= n && (i == 0 || !((t[i - 1] | 32) >= 'a' && (t[i - 1] | 32) <= 'z'))) {
            for (int q = 0; q < 12; q++)
                if (memcmp(t + i, months[q], 3) == 0 && i + 3 < n && is_blank(t[i + 3]))
                    mon = q + 1;
            if (mon > 0 && day == 0) {
                size_t j = i + 3;
                while (j < n && is_blank(t[j]))
                    j++;
                long dd;
                if (j + 1 <= n &&
                    (digits_at(t, j, 1, &dd) || (j + 2 <= n && digits_at(t, j, 2, &dd))))
                    day = dd;
                else
                    mon = 0;
            }
        }
    }
    if (mon > 0 &&
        !tm_civil_valid(year >= 0 ? year : 2000 /* a leap year */, (unsigned)mon, (unsigned)day))
        return false;
    return true;
}

/* "Xid (PCI:0000:3d:00): 79, message" after "NVRM: " (s[0..n)); false when not readable. */
static bool parse_xid(const char *s, size_t n, record *r)
{
    size_t i = 3; /* "Xid" */
    while (i < n && is_blank(s[i]))
        i++;
    if (i >= n || s[i] != '(')
        return false;
    const char *close = memchr(s + i, ')', n - i);
    if (close == NULL)
        return false;
    const char *bt = s + i + 1;
    size_t bl = (size_t)(close - bt);
    trim(&bt, &bl);
    i = (size_t)(close - s) + 1;
    if (i >= n || s[i] != ':')
        return false;
    i++;
    while (i < n && is_blank(s[i]))
        i++;
    long x = 0;
    size_t d = 0;
    while (i < n && is_digit(s[i]) && d < 7) {
        x = x * 10 + (s[i] - '0');
        i++;
        d++;
    }
    if (d == 0 || d == 7 || x == 0 || (i < n && s[i] != ',' && !is_blank(s[i])))
        return false;
    r->xid = (int)x;
    copy_text(r->bus_text, sizeof r->bus_text, bt, bl);
    pfi_kernlog_bus_normalize(bt, bl, r->bus);
    if (i < n && s[i] == ',')
        i++;
    rec_append(r, s + i, n - i);
    return true;
}

/* One line of file fi. */
static pfi_error kl_line(pfi_kernlog *kl, record *r, const char *s, size_t n, long line, size_t fi)
{
    size_t k = 0;
    while (k < n && is_blank(s[k]))
        k++;
    if (k == n) /* a blank line ends a message */
        return finish(kl, r, fi);
    if (k > 0 && r->kind != REC_NONE) {
        /* A continuation: "               NVRM: fallen off the bus and is not ..." */
        if (r->kind == REC_OTHER) {
            kl->n_ignored++;
            return PFI_OK;
        }
        const char *c = s + k;
        size_t cn = n - k;
        if (cn >= 5 && memcmp(c, "NVRM:", 5) == 0) {
            c += 5;
            cn -= 5;
        }
        rec_append(r, c, cn);
        r->n_cont++;
        return PFI_OK;
    }
    pfi_error e = finish(kl, r, fi);
    if (e != PFI_OK)
        return e;
    memset(r, 0, offsetof(record, msg));
    r->msg[0] = '\0';
    r->msg_len = 0;
    r->cut = false;
    r->n_cont = 0;
    r->line = line;
    const char *nv = memmem(s, n, "NVRM:", 5);
    if (nv == NULL) {
        r->kind = REC_OTHER;
        kl->n_ignored++;
        return PFI_OK;
    }
    const char *m = nv + 5;
    size_t mn = n - (size_t)(m - s);
    trim(&m, &mn);
    if (mn >= 3 && memcmp(m, "Xid", 3) == 0 && (mn == 3 || is_blank(m[3]) || m[3] == '(')) {
        if (!parse_xid(m, mn, r)) {
            kl->n_malformed++;
            if (kl->n_malformed_noted < PFI_KERNLOG_MAX_NOTED) {
                kl->malformed_file[kl->n_malformed_noted] = fi;
                kl->malformed_line[kl->n_malformed_noted++] = line;
            }
            r->kind = REC_OTHER;
            return PFI_OK;
        }
        r->kind = REC_XID;
    } else {
        r->kind = REC_NVRM;
        rec_append(r, m, mn);
    }
    parse_prefix(s, (size_t)(nv - s), r);
    if (r->clock == PFI_KERNLOG_CLOCK_WALL && !wall_time_valid(r->time)) {
        r->kind = REC_OTHER; /* never an event dated on a day that is none */
        return PFI_ERR_PARSE;
    }
    return PFI_OK;
}

/* ---- the bounded line reader ---- */

typedef struct kl_reader {
    FILE *f;
    char *buf;
    size_t len, pos;
    bool eof, skipping;
    long line;
} kl_reader;

enum { LINE_OK, LINE_LONG, LINE_EOF, LINE_ERROR };

/* Next line in *s, *n (borrowed, no terminator, a trailing CR dropped). A line longer than
 * PFI_KERNLOG_MAX_LINE is read past and reported once as LINE_LONG. */
static int next_line(kl_reader *r, const char **s, size_t *n)
{
    for (;;) {
        char *start = r->buf + r->pos;
        size_t avail = r->len - r->pos;
        char *nl = avail ? memchr(start, '\n', avail) : NULL;
        if (nl != NULL || (r->eof && (avail > 0 || r->skipping))) {
            size_t len = nl ? (size_t)(nl - start) : avail;
            r->pos += nl ? len + 1 : len;
            r->line++;
            if (r->skipping || len > PFI_KERNLOG_MAX_LINE) {
                r->skipping = false;
                return LINE_LONG;
            }
            if (len > 0 && start[len - 1] == '\r')
                len--;
            *s = start;
            *n = len;
            return LINE_OK;
        }
        if (r->eof)
            return LINE_EOF;
        if (avail > PFI_KERNLOG_MAX_LINE) {
            r->skipping = true; /* no end in sight: drop what we have, find the newline */
            avail = 0;
        }
        memmove(r->buf, start, avail);
        r->pos = 0;
        r->len = avail;
        size_t got = fread(r->buf + r->len, 1, KL_BLOCK, r->f);
        r->len += got;
        if (got < KL_BLOCK) {
            if (ferror(r->f))
                return LINE_ERROR;
            r->eof = true;
        }
    }
}

pfi_error pfi_kernlog_read_stream(pfi_kernlog *kl, FILE *f, const char *name, pfi_diag *diag)
{
    if (kl == NULL || f == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    if (name == NULL)
        name = "(stream)";
    char **files = pfi_realloc(kl->files, (kl->n_files + 1) * sizeof *files);
    if (files == NULL)
        return PFI_ERR_NOMEM;
    kl->files = files;
    if ((files[kl->n_files] = pfi_strdup(name)) == NULL)
        return PFI_ERR_NOMEM;
    size_t fi = kl->n_files++;
    kl_reader rd = {.f = f};
    rd.buf = pfi_malloc(KL_BLOCK + PFI_KERNLOG_MAX_LINE + 1);
    if (rd.buf == NULL)
        return PFI_ERR_NOMEM;
    record *r = pfi_calloc(1, sizeof *r);
    if (r == NULL) {
        pfi_free(rd.buf);
        return PFI_ERR_NOMEM;
    }
    pfi_error e = PFI_OK;
    for (;;) {
        const char *s = NULL;
        size_t n = 0;
        int st = next_line(&rd, &s, &n);
        if (st == LINE_EOF)
            break;
        if (st == LINE_ERROR) {
            pfi_diag_set(diag, name, 0, NULL, "cannot read kernel log: %s", strerror(errno));
            e = PFI_ERR_IO;
            break;
        }
        kl->n_lines++;
        if (st == LINE_LONG) {
            /* Longer than any kernel message (printk keeps under 1 KiB): not a log line. */
            kl->n_too_long++;
            if ((e = finish(kl, r, fi)) != PFI_OK)
                break;
            continue;
        }
        if ((e = kl_line(kl, r, s, n, rd.line, fi)) != PFI_OK) {
            if (e == PFI_ERR_PARSE)
                pfi_diag_set(diag, name, rd.line, NULL,
                             "timestamp: '%s' is not a valid time (a day of the month's "
                             "calendar, February 29 only in a leap year; 00:00:00 to 23:59:60)",
                             r->time);
            break;
        }
    }
    if (e == PFI_OK)
        e = finish(kl, r, fi);
    else
        finish(kl, r, fi);
    pfi_free(r);
    pfi_free(rd.buf);
    return e;
}

pfi_error pfi_kernlog_read_file(pfi_kernlog *kl, const char *path, pfi_diag *diag)
{
    pfi_diag_clear(diag);
    if (kl == NULL || path == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        pfi_diag_set(diag, path, 0, NULL, "cannot open kernel log: %s", strerror(errno));
        return PFI_ERR_IO;
    }
    pfi_error e = pfi_kernlog_read_stream(kl, f, path, diag);
    fclose(f);
    return e;
}

/* ---- correlation with the run ---- */

pfi_error pfi_kernlog_apply(const pfi_kernlog *kl, pfi_telemetry *tm, const int *fatal,
                            size_t n_fatal, pfi_kernlog_match *out, size_t *n_matched)
{
    if (n_matched != NULL)
        *n_matched = 0;
    if (kl == NULL || tm == NULL || (kl->n_events > 0 && out == NULL) ||
        (n_fatal > 0 && fatal == NULL))
        return PFI_ERR_INVALID_ARGUMENT;
    char(*nb)[PFI_KERNLOG_BUS_LEN] = NULL;
    if (tm->n_entities > 0 && (nb = pfi_calloc(tm->n_entities, sizeof *nb)) == NULL)
        return PFI_ERR_NOMEM;
    for (size_t e = 0; e < tm->n_entities; e++) {
        const pfi_telemetry_entity *en = &tm->entities[e];
        if (en->is_gpu && en->bus != NULL)
            pfi_kernlog_bus_normalize(en->bus, strlen(en->bus), nb[e]);
    }
    size_t matched = 0;
    for (size_t i = 0; i < kl->n_events; i++) {
        const pfi_kernlog_event *ev = &kl->events[i];
        pfi_kernlog_match *m = &out[i];
        m->entity = -1;
        m->fatal = pfi_kernlog_is_fatal(ev, fatal, n_fatal);
        m->marked = false;
        if (ev->bus[0] == '\0')
            continue;
        for (size_t e = 0; e < tm->n_entities; e++)
            if (nb[e][0] != '\0' && strcmp(nb[e], ev->bus) == 0) {
                m->entity = (long)e;
                break;
            }
        if (m->entity < 0)
            continue;
        matched++;
        pfi_telemetry_entity *en = &tm->entities[m->entity];
        if (m->fatal && !en->lost) {
            tm_mark_lost(tm, (size_t)m->entity, NAN);
            m->marked = true;
            char what[32];
            if (ev->xid == 0)
                snprintf(what, sizeof what, "a fallen-off-the-bus notice");
            else
                snprintf(what, sizeof what, "Xid %d", ev->xid);
            tm_note(tm,
                    "%s: GPU lost per the kernel log: %s at %s (%.80s:%ld); the time of the "
                    "loss on the telemetry clock is unknown",
                    en->name, what, ev->time[0] ? ev->time : "(no timestamp)", kl->files[ev->file],
                    ev->line);
        }
    }
    pfi_free(nb);
    if (n_matched != NULL)
        *n_matched = matched;
    return PFI_OK;
}
