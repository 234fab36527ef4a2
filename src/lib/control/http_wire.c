/*
 * pfi's own HTTP/1.1 client for plain-http agents (ctl_wire.h): non-blocking sockets, one
 * connection per agent kept open between periods, one epoll loop for all requests, a
 * streaming answer reader bounded in every dimension. libcurl words the errors (the audit
 * log reads as it did with libcurl for every request).
 */
#include "control/ctl_wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "control/ctl_internal.h"
#include "control/curl_lazy.h"
#include "core/memory.h"

/* ---- the answer's reader ---- */

enum {
    HS_HEAD,
    HS_BODY_LEN,
    HS_CHUNK_SIZE,
    HS_CHUNK_DATA,
    HS_CHUNK_CRLF,
    HS_TRAILER,
    HS_BODY_EOF,
    HS_DONE
};

void ctl_hparse_reset(ctl_hparse *p)
{
    size_t max = p->max;
    bool head_only = p->head_only;
    pfi_free(p->body);
    p->body = NULL;
    p->len = p->cap = 0;
    p->state = HS_HEAD;
    p->status = 0;
    p->keep_alive = false;
    p->chunked = p->has_len = false;
    p->remain = 0;
    p->head_bytes = p->total = p->line_len = 0;
    p->max = max;
    p->head_only = head_only;
}

static size_t body_max(const ctl_hparse *p)
{
    return p->max ? p->max : CTL_HTTP_MAX_BODY;
}

/* Room for n more body bytes (+ the NUL). */
static int body_room(ctl_hparse *p, size_t n)
{
    if (n > body_max(p) - p->len)
        return CTL_HP_TOO_BIG;
    if (p->len + n + 1 <= p->cap)
        return CTL_HP_MORE;
    size_t nc = p->cap ? p->cap : 4096;
    while (nc < p->len + n + 1)
        nc *= 2;
    char *q = pfi_realloc(p->body, nc);
    if (q == NULL)
        return CTL_HP_NOMEM;
    p->body = q;
    p->cap = nc;
    p->body[p->len] = '\0'; /* NUL-terminated at every step */
    return CTL_HP_MORE;
}

static int body_put(ctl_hparse *p, const char *s, size_t n)
{
    int rc = body_room(p, n);
    if (rc != CTL_HP_MORE)
        return rc;
    memcpy(p->body + p->len, s, n);
    p->len += n;
    p->body[p->len] = '\0';
    return CTL_HP_MORE;
}

static bool name_is(const char *s, size_t n, const char *name)
{
    size_t k = strlen(name);
    if (n != k)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != name[i])
            return false;
    }
    return true;
}

/* Whether the comma-separated list v[n] holds token (case-insensitive); last: only as its
 * last element. */
static bool has_token(const char *v, size_t n, const char *token, bool last)
{
    size_t i = 0;
    bool found = false;
    while (i < n) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t b = i;
        while (i < n && v[i] != ',')
            i++;
        size_t e = i;
        while (e > b && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e == b)
            continue;
        found = name_is(v + b, e - b, token);
        if (found && !last)
            return true;
    }
    return found;
}

/* The status line "HTTP/1.x NNN reason". */
static int status_line(ctl_hparse *p, const char *s, size_t n)
{
    if (n < 12 || memcmp(s, "HTTP/1.", 7) != 0 || (s[7] != '0' && s[7] != '1') || s[8] != ' ')
        return CTL_HP_BAD;
    if (s[9] < '1' || s[9] > '5' || s[10] < '0' || s[10] > '9' || s[11] < '0' || s[11] > '9' ||
        (n > 12 && s[12] != ' '))
        return CTL_HP_BAD;
    p->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    p->keep_alive = s[7] == '1';
    p->has_len = p->chunked = false;
    return CTL_HP_MORE;
}

static int header_line(ctl_hparse *p, const char *s, size_t n)
{
    const char *colon = memchr(s, ':', n);
    if (colon == NULL || colon == s)
        return CTL_HP_BAD;
    size_t nn = (size_t)(colon - s);
    for (size_t i = 0; i < nn; i++)
        if (s[i] <= ' ' || s[i] >= 0x7f)
            return CTL_HP_BAD;
    const char *v = colon + 1;
    size_t vn = n - nn - 1;
    while (vn > 0 && (*v == ' ' || *v == '\t'))
        v++, vn--;
    while (vn > 0 && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
        vn--;
    if (name_is(s, nn, "content-length")) {
        if (vn == 0 || vn > 19)
            return CTL_HP_BAD;
        unsigned long long x = 0;
        for (size_t i = 0; i < vn; i++) {
            if (v[i] < '0' || v[i] > '9')
                return CTL_HP_BAD;
            x = x * 10 + (unsigned)(v[i] - '0');
        }
        if (p->has_len && x != p->remain)
            return CTL_HP_BAD; /* two different lengths */
        p->has_len = true;
        p->remain = x;
    } else if (name_is(s, nn, "transfer-encoding")) {
        /* only chunked is decoded, and it must be the last coding (RFC 9112 §6.3) */
        if (!has_token(v, vn, "chunked", true))
            return CTL_HP_BAD;
        for (size_t i = 0; i < vn; i++)
            if (v[i] == ',')
                return CTL_HP_BAD; /* gzip, chunked: a coding this client does not undo */
        p->chunked = true;
    } else if (name_is(s, nn, "connection")) {
        if (has_token(v, vn, "close", false))
            p->keep_alive = false;
        else if (has_token(v, vn, "keep-alive", false))
            p->keep_alive = true;
    }
    return CTL_HP_MORE;
}

/* The blank line after the headers: what follows. */
static int head_end(ctl_hparse *p)
{
    if (p->status >= 100 && p->status < 200) {
        if (p->status == 101)
            return CTL_HP_BAD; /* no upgrade was asked for */
        p->status = 0;         /* an interim answer: the final one follows */
        p->has_len = p->chunked = false;
        return CTL_HP_MORE;
    }
    if (p->head_only || p->status == 204 || p->status == 304) {
        p->state = HS_DONE;
        return CTL_HP_DONE;
    }
    if (p->chunked) {
        p->has_len = false; /* RFC 9112 §6.3: chunked wins over a length */
        p->state = HS_CHUNK_SIZE;
        return CTL_HP_MORE;
    }
    if (p->has_len) {
        if (p->remain > body_max(p))
            return CTL_HP_TOO_BIG;
        if (p->remain == 0) {
            p->state = HS_DONE;
            return CTL_HP_DONE;
        }
        int rc = body_room(p, (size_t)p->remain);
        if (rc != CTL_HP_MORE)
            return rc;
        p->state = HS_BODY_LEN;
        return CTL_HP_MORE;
    }
    p->keep_alive = false; /* the body ends with the connection */
    p->state = HS_BODY_EOF;
    return CTL_HP_MORE;
}

/* A chunk-size line: hex digits, then optional extensions after ';'. */
static int chunk_size_line(ctl_hparse *p, const char *s, size_t n)
{
    size_t i = 0;
    unsigned long long x = 0;
    for (; i < n; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            break;
        if (i >= 15)
            return CTL_HP_BAD_CHUNK;
        x = x * 16 + (unsigned)d;
    }
    if (i == 0)
        return CTL_HP_BAD_CHUNK;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    if (i < n && s[i] != ';')
        return CTL_HP_BAD_CHUNK;
    if (x > body_max(p) - p->len)
        return CTL_HP_TOO_BIG;
    p->remain = x;
    p->state = x == 0 ? HS_TRAILER : HS_CHUNK_DATA;
    return CTL_HP_MORE;
}

/* One complete line (without its CR LF) in a line-reading state. */
static int on_line(ctl_hparse *p, const char *s, size_t n)
{
    switch (p->state) {
    case HS_HEAD:
        if (n == 0)
            return p->status == 0 ? CTL_HP_BAD : head_end(p);
        return p->status == 0 ? status_line(p, s, n) : header_line(p, s, n);
    case HS_CHUNK_SIZE:
        return chunk_size_line(p, s, n);
    case HS_CHUNK_CRLF:
        if (n != 0)
            return CTL_HP_BAD_CHUNK;
        p->state = HS_CHUNK_SIZE;
        return CTL_HP_MORE;
    case HS_TRAILER:
        if (n == 0) {
            p->state = HS_DONE;
            return CTL_HP_DONE;
        }
        return CTL_HP_MORE; /* trailer fields are read past */
    default:
        return CTL_HP_BAD;
    }
}

int ctl_hparse_feed(ctl_hparse *p, const char *buf, size_t n, size_t *used)
{
    size_t i = 0;
    int rc = CTL_HP_MORE;
    while (i < n && rc == CTL_HP_MORE) {
        if (p->state == HS_BODY_LEN || p->state == HS_CHUNK_DATA) {
            size_t k = n - i;
            if (k > p->remain)
                k = (size_t)p->remain;
            rc = body_put(p, buf + i, k);
            if (rc != CTL_HP_MORE)
                break;
            i += k;
            p->remain -= k;
            if (p->remain == 0) {
                if (p->state == HS_BODY_LEN) {
                    p->state = HS_DONE;
                    rc = CTL_HP_DONE;
                } else {
                    p->state = HS_CHUNK_CRLF;
                }
            }
            continue;
        }
        if (p->state == HS_BODY_EOF) {
            rc = body_put(p, buf + i, n - i);
            if (rc == CTL_HP_MORE)
                i = n;
            continue;
        }
        if (p->state == HS_DONE)
            break;
        /* a line: up to LF (a CR before it dropped) */
        const char *lf = memchr(buf + i, '\n', n - i);
        size_t k = lf != NULL ? (size_t)(lf - (buf + i)) + 1 : n - i;
        if (p->state == HS_HEAD) {
            p->head_bytes += k;
            if (p->head_bytes > CTL_HP_HEAD_MAX) {
                rc = CTL_HP_TOO_BIG;
                break;
            }
        }
        if (lf == NULL || p->line_len > 0) {
            if (p->line_len + k > sizeof p->line) {
                rc = p->state == HS_HEAD ? CTL_HP_BAD : CTL_HP_BAD_CHUNK;
                break;
            }
            memcpy(p->line + p->line_len, buf + i, k);
            p->line_len += k;
            i += k;
            if (lf == NULL)
                continue;
            size_t ln = p->line_len - 1;
            if (ln > 0 && p->line[ln - 1] == '\r')
                ln--;
            p->line_len = 0;
            rc = on_line(p, p->line, ln);
        } else {
            size_t ln = k - 1;
            if (ln > 0 && buf[i + ln - 1] == '\r')
                ln--;
            rc = on_line(p, buf + i, ln);
            i += k;
        }
    }
    p->total += i;
    *used = i;
    return rc;
}

int ctl_hparse_eof(ctl_hparse *p)
{
    if (p->state == HS_DONE)
        return CTL_HP_DONE;
    if (p->state == HS_BODY_EOF) {
        p->state = HS_DONE;
        return CTL_HP_DONE;
    }
    return p->total == 0 ? CTL_HP_NOTHING : CTL_HP_PARTIAL;
}

/* ---- URLs ---- */

bool ctl_wire_url(const char *url, struct sockaddr_storage *addr, unsigned *alen, char *host,
                  size_t hn, const char **path)
{
    if (strncmp(url, "http://", 7) != 0)
        return false;
    const char *p = url + 7;
    char h[INET6_ADDRSTRLEN + 1];
    size_t n = 0;
    bool v6 = *p == '[';
    if (v6) {
        for (p++; *p && *p != ']'; p++) {
            if (n + 1 >= sizeof h)
                return false;
            h[n++] = *p;
        }
        if (*p != ']')
            return false;
        p++;
    } else {
        for (; *p && *p != ':' && *p != '/' && *p != '?' && *p != '#'; p++) {
            if (n + 1 >= sizeof h)
                return false;
            h[n++] = *p;
        }
    }
    h[n] = '\0';
    unsigned long port = 80;
    const char *port_s = NULL;
    if (*p == ':') {
        port_s = ++p;
        port = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            port = port * 10 + (unsigned long)(*p - '0');
            if (port > 65535)
                return false;
        }
        if (p == port_s || port == 0)
            return false;
    }
    if (*p != '\0' && *p != '/')
        return false;
    for (const char *q = p; *q; q++)
        if ((unsigned char)*q <= ' ' || (unsigned char)*q >= 0x7f || *q == '#')
            return false;
    memset(addr, 0, sizeof *addr);
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)addr;
        if (inet_pton(AF_INET6, h, &a->sin6_addr) != 1)
            return false;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        *alen = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)addr;
        if (inet_pton(AF_INET, h, &a->sin_addr) != 1)
            return false;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        *alen = sizeof *a;
    }
    /* the Host header as libcurl writes it: the port unless it is 80 */
    int w = port == 80 ? snprintf(host, hn, v6 ? "[%s]" : "%s", h)
                       : snprintf(host, hn, v6 ? "[%s]:%lu" : "%s:%lu", h, port);
    if (w < 0 || (size_t)w >= hn)
        return false;
    *path = p;
    return true;
}

/* ---- the client ---- */

typedef struct wconn {
    int fd;
    bool connecting;
    bool reused;   /* has carried an answer: the agent may have closed it since */
    bool want_out; /* EPOLLOUT in its epoll mask */
    size_t req;    /* the request on it + 1 (0: idle) */
    uint32_t hash;
    struct wconn *chain; /* the bucket's next */
    struct sockaddr_storage addr;
    unsigned alen;
    char key[INET6_ADDRSTRLEN + 10]; /* the Host value: address and port */
    ctl_hparse p;
} wconn;

#define WIRE_BUCKETS 4096u

struct ctl_wire {
    int ep;
    long max_conns;
    size_t n_conns;
    wconn *buckets[WIRE_BUCKETS];
    unsigned long opened, resent;
    struct wreq *q; /* [nq]: a run's requests, kept for the next run (at 1 000 agents a fresh
                       block each run came as fresh pages to clear) */
    size_t nq;
    char rbuf[65536];
};

typedef struct wreq {
    ctl_http_req *r;
    wconn *c;
    char *out;
    size_t out_len, out_off;
    struct sockaddr_storage addr;
    unsigned alen;
    char key[INET6_ADDRSTRLEN + 10];
    uint32_t hash;
    bool retried, done, started;
} wreq;

int ctl_wire_create(ctl_wire **out, long max_conns)
{
    *out = NULL;
    ctl_wire *w = pfi_calloc(1, sizeof *w);
    if (w == NULL)
        return -1;
    w->ep = epoll_create1(EPOLL_CLOEXEC);
    if (w->ep < 0) {
        pfi_free(w);
        return -1;
    }
    w->max_conns = max_conns > 0 ? max_conns : 16;
    *out = w;
    return 0;
}

static void conn_close(ctl_wire *w, wconn *c)
{
    wconn **pp = &w->buckets[c->hash % WIRE_BUCKETS];
    while (*pp != c)
        pp = &(*pp)->chain;
    *pp = c->chain;
    close(c->fd); /* leaves the epoll set with it */
    pfi_free(c->p.body);
    pfi_free(c);
    w->n_conns--;
}

void ctl_wire_destroy(ctl_wire *w)
{
    if (w == NULL)
        return;
    for (size_t b = 0; b < WIRE_BUCKETS; b++)
        while (w->buckets[b] != NULL)
            conn_close(w, w->buckets[b]);
    close(w->ep);
    pfi_free(w->q);
    pfi_free(w);
}

void ctl_wire_counts(const ctl_wire *w, unsigned long *opened, unsigned long *resent)
{
    *opened = w->opened;
    *resent = w->resent;
}

static uint32_t key_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void set_out(ctl_wire *w, wconn *c, bool on)
{
    if (c->want_out == on)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0u), .data.ptr = c};
    epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = on;
}

/* A new connection to q's address, connecting (non-blocking). NULL: errno says why. */
static wconn *conn_open(ctl_wire *w, const wreq *q)
{
    wconn *c = pfi_calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->fd = socket(q->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        pfi_free(c);
        return NULL;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* as libcurl */
    if (connect(c->fd, (const struct sockaddr *)&q->addr, q->alen) != 0) {
        if (errno != EINPROGRESS) {
            int er = errno;
            close(c->fd);
            pfi_free(c);
            errno = er;
            return NULL;
        }
        c->connecting = true;
    }
    c->want_out = true;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    if (epoll_ctl(w->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        int er = errno;
        close(c->fd);
        pfi_free(c);
        errno = er;
        return NULL;
    }
    c->addr = q->addr;
    c->alen = q->alen;
    memcpy(c->key, q->key, sizeof c->key);
    c->hash = q->hash;
    c->chain = w->buckets[c->hash % WIRE_BUCKETS];
    w->buckets[c->hash % WIRE_BUCKETS] = c;
    w->n_conns++;
    w->opened++;
    return c;
}

/* An idle connection to q's address, or NULL. */
static wconn *conn_idle(ctl_wire *w, const wreq *q)
{
    for (wconn *c = w->buckets[q->hash % WIRE_BUCKETS]; c != NULL; c = c->chain)
        if (c->req == 0 && c->hash == q->hash && strcmp(c->key, q->key) == 0)
            return c;
    return NULL;
}

/* Close one idle connection (to make room under max_conns); false when none is idle. */
static bool evict_idle(ctl_wire *w)
{
    for (size_t b = 0; b < WIRE_BUCKETS; b++)
        for (wconn *c = w->buckets[b]; c != NULL; c = c->chain)
            if (c->req == 0) {
                conn_close(w, c);
                return true;
            }
    return false;
}

static void req_fail(ctl_wire *w, wreq *q, const char *why, size_t *active)
{
    ctl_http_req *r = q->r;
    r->status = 0;
    pfi_free(r->resp);
    r->resp = NULL;
    r->resp_len = 0;
    snprintf(r->err, sizeof r->err, "%s", why);
    if (q->c != NULL) {
        conn_close(w, q->c);
        q->c = NULL;
    }
    q->done = true;
    (*active)--;
}

static void req_fail_code(ctl_wire *w, wreq *q, CURLcode code, size_t *active)
{
    req_fail(w, q, curl_easy_strerror(code), active);
}

static void req_done(ctl_wire *w, wreq *q, bool close_it, size_t *active)
{
    wconn *c = q->c;
    ctl_http_req *r = q->r;
    r->status = c->p.status;
    if (c->p.len > 0) {
        r->resp = c->p.body;
        r->resp_len = c->p.len;
    } else {
        pfi_free(c->p.body);
    }
    c->p.body = NULL;
    c->p.len = c->p.cap = 0;
    c->req = 0;
    c->reused = true;
    q->c = NULL;
    q->done = true;
    (*active)--;
    if (close_it || !c->p.keep_alive)
        conn_close(w, c);
}

/* Start q on a connection (an idle one to its address, else a new one). false: no room now
 * (every connection busy at max_conns); q failed when it could not start. */
static bool req_start(ctl_wire *w, wreq *q, size_t qi, size_t *active, size_t max_body)
{
    wconn *c = q->retried ? NULL : conn_idle(w, q);
    if (c == NULL) {
        if ((long)w->n_conns >= w->max_conns && !evict_idle(w))
            return false;
        c = conn_open(w, q);
        if (c == NULL) {
            q->started = true;
            req_fail_code(w, q, errno == ENOMEM ? CURLE_OUT_OF_MEMORY : CURLE_COULDNT_CONNECT,
                          active);
            return true;
        }
    }
    q->started = true;
    q->c = c;
    q->out_off = 0;
    c->req = qi + 1;
    c->p.max = max_body;
    c->p.head_only = strcmp(q->r->method, "HEAD") == 0;
    ctl_hparse_reset(&c->p);
    return true;
}

/* q's kept connection turned out closed before any answer: once, again on a new one. */
static bool req_resend(ctl_wire *w, wreq *q, size_t qi, size_t *active, size_t max_body)
{
    if (q->retried || q->c == NULL || !q->c->reused || q->c->p.total > 0)
        return false;
    conn_close(w, q->c);
    q->c = NULL;
    q->retried = true;
    w->resent++;
    if (!req_start(w, q, qi, active, max_body)) {
        /* the connection just closed made room: cannot happen; fail rather than hang */
        req_fail_code(w, q, CURLE_COULDNT_CONNECT, active);
    }
    return true;
}

/* Write what is left of q's request (q done when it failed). */
static void req_send(ctl_wire *w, wreq *q, size_t qi, size_t *active, size_t max_body)
{
    wconn *c = q->c;
    while (q->out_off < q->out_len) {
        ssize_t k = send(c->fd, q->out + q->out_off, q->out_len - q->out_off, MSG_NOSIGNAL);
        if (k > 0) {
            q->out_off += (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            set_out(w, c, true);
            return;
        }
        if (!req_resend(w, q, qi, active, max_body))
            req_fail_code(w, q, CURLE_SEND_ERROR, active);
        else if (q->c != NULL && !q->c->connecting)
            req_send(w, q, qi, active, max_body);
        return;
    }
    set_out(w, c, false);
}

/* Read once from q's connection and feed the answer's reader. */
static void req_recv(ctl_wire *w, wreq *q, size_t qi, size_t *active, size_t max_body)
{
    wconn *c = q->c;
    ssize_t k = recv(c->fd, w->rbuf, sizeof w->rbuf, 0);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    int rc;
    size_t used = 0;
    if (k < 0) {
        if (req_resend(w, q, qi, active, max_body)) {
            if (q->c != NULL && !q->c->connecting)
                req_send(w, q, qi, active, max_body);
            return;
        }
        req_fail_code(w, q, CURLE_RECV_ERROR, active);
        return;
    }
    if (k == 0) {
        rc = ctl_hparse_eof(&c->p);
        if (rc == CTL_HP_NOTHING && req_resend(w, q, qi, active, max_body)) {
            if (q->c != NULL && !q->c->connecting)
                req_send(w, q, qi, active, max_body);
            return;
        }
    } else {
        rc = ctl_hparse_feed(&c->p, w->rbuf, (size_t)k, &used);
    }
    switch (rc) {
    case CTL_HP_MORE:
        return;
    case CTL_HP_DONE:
        /* bytes past the answer (none was asked for), or a body cut by the close */
        req_done(w, q, k == 0 || used < (size_t)k || q->out_off < q->out_len, active);
        return;
    case CTL_HP_TOO_BIG:
        req_fail(w, q, "answer too large", active);
        return;
    case CTL_HP_NOMEM:
        req_fail_code(w, q, CURLE_OUT_OF_MEMORY, active);
        return;
    case CTL_HP_BAD_CHUNK:
        req_fail_code(w, q, CURLE_RECV_ERROR, active);
        return;
    case CTL_HP_PARTIAL: /* cut in the body, or within the header */
        req_fail_code(w, q, c->p.state != HS_HEAD ? CURLE_PARTIAL_FILE : CURLE_WEIRD_SERVER_REPLY,
                      active);
        return;
    case CTL_HP_NOTHING:
        req_fail_code(w, q, CURLE_GOT_NOTHING, active);
        return;
    default: /* no status line: libcurl takes it for HTTP/0.9, which it refuses */
        req_fail_code(
            w, q, c->p.status == 0 ? CURLE_UNSUPPORTED_PROTOCOL : CURLE_WEIRD_SERVER_REPLY, active);
        return;
    }
}

/* The request's bytes: what libcurl sends for it (method, path, Host, Accept, the bearer
 * token, the extra header, the body's type and length). NULL: out of memory. */
static char *build(const ctl_http_req *r, const char *host, const char *path, size_t *len)
{
    size_t bl = r->body != NULL ? strlen(r->body) : 0;
    size_t tl = r->token != NULL ? strlen(r->token) : 0;
    size_t hl = r->header != NULL ? strlen(r->header) : 0;
    size_t cap = strlen(r->method) + strlen(path) + strlen(host) + tl + hl + bl + 200;
    char *o = pfi_malloc(cap);
    if (o == NULL)
        return NULL;
    int n = snprintf(o, cap, "%s %s HTTP/1.1\r\nHost: %s\r\nAccept: */*\r\n", r->method,
                     path[0] ? path : "/", host);
    if (tl > 0) {
        /* libcurl's path cuts the header at PFI_CTL_AUTH_LEN - 1 bytes: the same here */
        char auth[PFI_CTL_AUTH_LEN];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", r->token);
        n += snprintf(o + n, cap - (size_t)n, "%s\r\n", auth);
    }
    if (hl > 0)
        n += snprintf(o + n, cap - (size_t)n, "%s\r\n", r->header);
    if (r->body != NULL)
        n += snprintf(o + n, cap - (size_t)n,
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n", bl);
    n += snprintf(o + n, cap - (size_t)n, "\r\n");
    memcpy(o + n, r->body != NULL ? r->body : "", bl);
    *len = (size_t)n + bl;
    return o;
}

static bool safe_field(const char *s)
{
    for (; s != NULL && *s; s++)
        if (*s == '\r' || *s == '\n')
            return false;
    return true;
}

int ctl_wire_run(ctl_wire *w, ctl_http_req *r, const size_t *idx, size_t m, double timeout_s,
                 size_t max_body)
{
    if (m == 0)
        return 0;
    if (m > w->nq) {
        wreq *nq = pfi_realloc(w->q, m * sizeof *nq);
        if (nq == NULL)
            return -1;
        w->q = nq;
        w->nq = m;
    }
    wreq *q = w->q;
    memset(q, 0, m * sizeof *q);
    int ret = 0;
    size_t active = m;
    for (size_t k = 0; k < m; k++) {
        q[k].r = &r[idx[k]];
        const char *path;
        char host[sizeof q[k].key];
        if (!ctl_wire_url(q[k].r->url, &q[k].addr, &q[k].alen, host, sizeof host, &path) ||
            !safe_field(q[k].r->token) || !safe_field(q[k].r->header)) {
            q[k].started = true;
            req_fail_code(w, &q[k], CURLE_URL_MALFORMAT, &active);
            continue;
        }
        memcpy(q[k].key, host, sizeof q[k].key);
        q[k].hash = key_hash(host);
        q[k].out = build(q[k].r, host, path, &q[k].out_len);
        if (q[k].out == NULL) {
            q[k].started = true;
            req_fail_code(w, &q[k], CURLE_OUT_OF_MEMORY, &active);
            ret = -1;
        }
    }
    double t0 = mono_s(), deadline = t0 + timeout_s;
    size_t next_pending = 0; /* the requests start in order: those before it have started */
    struct epoll_event evs[256];
    while (active > 0) {
        for (; next_pending < m; next_pending++) {
            wreq *x = &q[next_pending];
            if (x->started)
                continue;
            if (!req_start(w, x, next_pending, &active, max_body))
                break;
            if (x->c != NULL && !x->c->connecting)
                req_send(w, x, next_pending, &active, max_body);
        }
        if (active == 0)
            break;
        double now = mono_s();
        if (now >= deadline) {
            for (size_t k = 0; k < m; k++)
                if (!q[k].done) {
                    q[k].started = true;
                    req_fail_code(w, &q[k], CURLE_OPERATION_TIMEDOUT, &active);
                }
            break;
        }
        int ms = (int)((deadline - now) * 1000) + 1;
        int ne = epoll_wait(w->ep, evs, (int)(sizeof evs / sizeof evs[0]), ms);
        if (ne < 0 && errno != EINTR)
            break; /* cannot happen with a valid set; the loop below fails what is left */
        for (int e = 0; e < ne; e++) {
            wconn *c = evs[e].data.ptr;
            /* epoll gives one event per descriptor a batch, and within a batch only the
             * connection of the event at hand is closed (a request sent again opens its new
             * one under max_conns, the closed one having made room: no eviction here), so
             * c is live */
            if (c->req == 0) { /* an idle connection spoke: the agent closed it */
                conn_close(w, c);
                continue;
            }
            size_t qi = c->req - 1;
            wreq *x = &q[qi];
            if (x->c != c || x->done)
                continue;
            if (c->connecting) {
                int err = 0;
                socklen_t el = sizeof err;
                if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
                    err = errno;
                if (err == 0 && !(evs[e].events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
                    continue;
                if (err != 0 || (evs[e].events & (EPOLLERR | EPOLLHUP))) {
                    req_fail_code(w, x, CURLE_COULDNT_CONNECT, &active);
                    continue;
                }
                c->connecting = false;
            }
            if (x->out_off < x->out_len && (evs[e].events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
                req_send(w, x, qi, &active, max_body);
            if (!x->done && x->c == c && (evs[e].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
                req_recv(w, x, qi, &active, max_body);
        }
    }
    for (size_t k = 0; k < m; k++) {
        if (!q[k].done) {
            q[k].started = true;
            req_fail_code(w, &q[k], CURLE_OPERATION_TIMEDOUT, &active);
        }
        pfi_free(q[k].out);
        q[k].out = NULL;
    }
    return ret;
}
