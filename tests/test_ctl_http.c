/*
 * The controller's built-in HTTP/1.1 client (src/lib/control/http_wire.c, ctl_wire.h):
 *  - the answer's reader on a table of answers, fed whole and one byte at a time;
 *  - the client against pfid's own server (pfi/http.h, libmicrohttpd): bodies both ways,
 *    the bearer token, large answers read in pieces, one connection kept over many runs;
 *  - the client against a small server that misbehaves (closes a kept connection, closes
 *    mid-body, answers chunked in slow pieces, never answers, answers too much, answers
 *    garbage, refuses): each outcome (status, body, error text) the same as libcurl's, which
 *    the same test runs on the same server, and within the timeout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "control/ctl_internal.h"
#include "control/ctl_wire.h"
#include "pfi/http.h"

#include "checks_plain.h"

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the reader ---- */

typedef struct pcase {
    const char *in;
    size_t max;       /* body bound (0: the default) */
    int rc;           /* after feeding everything (and the close when eof) */
    bool eof;         /* the connection closes after in */
    long status;      /* when DONE */
    const char *body; /* when DONE */
    bool keep;        /* keep_alive when DONE */
    size_t used;      /* when DONE: bytes that belonged to the answer (0: all of in) */
} pcase;

static const pcase pcases[] = {
    {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 0, CTL_HP_DONE, false, 200, "hello", true,
     0},
    {"HTTP/1.1 404 Not Found\r\ncontent-length:  3 \r\nConnection: close\r\n\r\nabc", 0,
     CTL_HP_DONE, false, 404, "abc", false, 0},
    {"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, CTL_HP_DONE, false, 200, "ok", false, 0},
    {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", 0, CTL_HP_DONE,
     false, 200, "ok", true, 0},
    /* LF alone ends lines too */
    {"HTTP/1.1 200 OK\nContent-Length: 2\n\nok", 0, CTL_HP_DONE, false, 200, "ok", true, 0},
    /* bytes past the answer are not its */
    {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA", 0, CTL_HP_DONE, false, 200, "ok", true,
     40},
    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\nA\r\n "
     "world!!!!\r\n0\r\nX-Trailer: 1\r\n\r\n",
     0, CTL_HP_DONE, false, 200, "hello world!!!!", true, 0},
    /* chunked wins over a length */
    {"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n"
     "\r\n",
     0, CTL_HP_DONE, false, 200, "hi", true, 0},
    {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx", 0,
     CTL_HP_DONE, false, 201, "x", true, 0},
    {"HTTP/1.1 204 No Content\r\n\r\n", 0, CTL_HP_DONE, false, 204, "", true, 0},
    {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 0, CTL_HP_DONE, false, 200, "", true, 0},
    /* no length: the body ends with the connection */
    {"HTTP/1.1 200 OK\r\n\r\nuntil close", 0, CTL_HP_DONE, true, 200, "until close", false, 0},
    {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 0, CTL_HP_PARTIAL, true, 0, NULL, false,
     0},
    {"HTTP/1.1 200 OK\r\nContent-Le", 0, CTL_HP_PARTIAL, true, 0, NULL, false, 0},
    {"", 0, CTL_HP_NOTHING, true, 0, NULL, false, 0},
    {"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", 10, CTL_HP_TOO_BIG, false, 0, NULL, false, 0},
    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n5\r\n", 10,
     CTL_HP_TOO_BIG, false, 0, NULL, false, 0},
    {"HTTP/1.1 200 OK\r\n\r\n0123456789A", 10, CTL_HP_TOO_BIG, false, 0, NULL, false, 0},
    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, CTL_HP_BAD_CHUNK, false, 0,
     NULL, false, 0},
    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhiX\r\n", 0, CTL_HP_BAD_CHUNK,
     false, 0, NULL, false, 0},
    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n", 0,
     CTL_HP_BAD_CHUNK, false, 0, NULL, false, 0},
    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 0, CTL_HP_BAD, false, 0, NULL,
     false, 0},
    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 0, CTL_HP_BAD, false, 0, NULL, false, 0},
    {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 0, CTL_HP_BAD, false, 0,
     NULL, false, 0},
    {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, CTL_HP_BAD, false, 0, NULL, false, 0},
    {"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", 0, CTL_HP_BAD, false, 0,
     NULL, false, 0},
    {"HTTP/2 200\r\n\r\n", 0, CTL_HP_BAD, false, 0, NULL, false, 0},
    {"HTTP/1.1 20 OK\r\n\r\n", 0, CTL_HP_BAD, false, 0, NULL, false, 0},
    {"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", 0, CTL_HP_BAD, false, 0, NULL, false, 0},
    {"HTTP/1.1 101 Switching\r\n\r\n", 0, CTL_HP_BAD, false, 0, NULL, false, 0},
    {"\r\n", 0, CTL_HP_BAD, false, 0, NULL, false, 0},
};

/* Feed c.in in pieces of step bytes (0: whole); the final rc. */
static int feed(const pcase *c, size_t step, ctl_hparse *p, size_t *used_total)
{
    memset(p, 0, sizeof *p);
    p->max = c->max;
    ctl_hparse_reset(p);
    size_t n = strlen(c->in), i = 0;
    int rc = CTL_HP_MORE;
    *used_total = 0;
    while (i < n && rc == CTL_HP_MORE) {
        size_t k = step == 0 || n - i < step ? n - i : step;
        size_t used = 0;
        rc = ctl_hparse_feed(p, c->in + i, k, &used);
        *used_total += used;
        i += k;
    }
    if (rc == CTL_HP_MORE && c->eof)
        rc = ctl_hparse_eof(p);
    return rc;
}

static void test_reader(void)
{
    for (size_t k = 0; k < sizeof pcases / sizeof pcases[0]; k++) {
        const pcase *c = &pcases[k];
        for (size_t step = 0; step <= 3; step++) {
            ctl_hparse p;
            size_t used;
            int rc = feed(c, step, &p, &used);
            CHECK(rc == c->rc, "reader case %zu step %zu: rc %d, want %d", k, step, rc, c->rc);
            if (rc == CTL_HP_DONE && c->rc == CTL_HP_DONE) {
                CHECK(p.status == c->status, "case %zu: status %ld", k, p.status);
                CHECK(p.len == strlen(c->body) &&
                          (p.len == 0 || memcmp(p.body, c->body, p.len) == 0),
                      "case %zu step %zu: body '%.*s'", k, step, (int)p.len, p.body ? p.body : "");
                CHECK(p.body == NULL || p.body[p.len] == '\0', "case %zu: not NUL-terminated", k);
                CHECK(p.keep_alive == c->keep, "case %zu: keep_alive %d", k, p.keep_alive);
                size_t want = c->used ? c->used : strlen(c->in);
                CHECK(step != 0 || used == want, "case %zu: used %zu, want %zu", k, used, want);
            }
            ctl_hparse_reset(&p);
        }
    }
}

static void test_urls(void)
{
    static const struct {
        const char *url, *host, *path;
    } ok[] = {
        {"http://127.0.0.1:8080/v1/state", "127.0.0.1:8080", "/v1/state"},
        {"http://10.1.2.3/v1/caps", "10.1.2.3", "/v1/caps"},
        {"http://10.1.2.3:80/x", "10.1.2.3", "/x"},
        {"http://[::1]:9/a?b=c", "[::1]:9", "/a?b=c"},
        {"http://127.0.0.1:1", "127.0.0.1:1", ""},
    };
    static const char *no[] = {
        "https://127.0.0.1:8080/", "http://localhost:8080/", "http://127.0.0.1:0/",
        "http://127.0.0.1:65536/", "http://127.0.0.1:/",     "http://u@127.0.0.1/",
        "http://127.0.0.1/a b",    "http://127.0.0.1/a#f",   "http://[::1/",
        "http://127.0.0.1?x",      "HTTP://127.0.0.1/"};
    struct sockaddr_storage sa;
    unsigned alen;
    char host[64];
    const char *path;
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        bool r = ctl_wire_url(ok[k].url, &sa, &alen, host, sizeof host, &path);
        CHECK(r && strcmp(host, ok[k].host) == 0 && strcmp(path, ok[k].path) == 0,
              "url %s: %d host %s path %s", ok[k].url, r, r ? host : "", r ? path : "");
    }
    for (size_t k = 0; k < sizeof no / sizeof no[0]; k++)
        CHECK(!ctl_wire_url(no[k], &sa, &alen, host, sizeof host, &path), "url %s taken", no[k]);
}

/* ---- a server that misbehaves on purpose ---- */

enum {
    M_KEEP,
    M_CLOSE_AFTER,
    M_MIDBODY,
    M_CHUNKED_SLOW,
    M_SILENT,
    M_BIG,
    M_GARBAGE,
    M_NOTHING,
    M_SLOW_READER
};

static _Atomic int g_mode;
static _Atomic int g_accepts;
static int g_lfd;

/* Read one request (headers, then Content-Length bytes) from fd; its body length, -1 on
 * close. slow: read the body in small pieces with pauses (the client's writes then block). */
static long read_request(int fd, bool slow)
{
    char buf[4096];
    size_t n = 0;
    char *end = NULL;
    while (end == NULL) {
        if (n + 1 >= sizeof buf)
            return -1;
        ssize_t k = read(fd, buf + n, sizeof buf - n - 1);
        if (k <= 0)
            return -1;
        n += (size_t)k;
        buf[n] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    long len = 0;
    const char *cl = strstr(buf, "Content-Length: ");
    if (cl != NULL && cl < end)
        len = strtol(cl + 16, NULL, 10);
    long have = (long)(n - (size_t)(end + 4 - buf));
    static char sink[65536];
    while (have < len) {
        size_t want = slow ? 4096 : sizeof sink;
        if ((long)want > len - have)
            want = (size_t)(len - have);
        ssize_t k = read(fd, sink, want);
        if (k <= 0)
            return -1;
        have += k;
        if (slow)
            usleep(200);
    }
    return len;
}

static void put_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, s, n, MSG_NOSIGNAL); /* the client may have gone */
        if (k <= 0)
            return;
        s += k;
        n -= (size_t)k;
    }
}

static void put(int fd, const char *s)
{
    put_all(fd, s, strlen(s));
}

static void *serve_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    int mode = atomic_load(&g_mode);
    char msg[128];
    for (;;) {
        long len = read_request(fd, mode == M_SLOW_READER);
        if (len < 0)
            break;
        if (mode == M_KEEP || mode == M_CLOSE_AFTER || mode == M_SLOW_READER) {
            int n = snprintf(msg, sizeof msg, "got %ld", len);
            char head[128];
            snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", n);
            put(fd, head);
            put(fd, msg);
            if (mode == M_CLOSE_AFTER)
                break;
            continue;
        }
        if (mode == M_MIDBODY) {
            put(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc");
            break;
        }
        if (mode == M_CHUNKED_SLOW) {
            static const char *parts[] = {"HTTP/1.1 200 OK\r\nTransfer-",
                                          "Encoding: chunked\r\n",
                                          "\r\n4\r\nslow",
                                          "\r\n7\r\n piec",
                                          "es\r\n0\r\n",
                                          "\r\n"};
            for (size_t k = 0; k < 6; k++) {
                put(fd, parts[k]);
                usleep(20000);
            }
            continue;
        }
        if (mode == M_SILENT) { /* wait for the client to give up */
            char c;
            while (read(fd, &c, 1) > 0) {
            }
            break;
        }
        if (mode == M_BIG) {
            put(fd, "HTTP/1.1 200 OK\r\nContent-Length: 9000000\r\n\r\n");
            static char zeros[65536];
            for (int k = 0; k < 140; k++)
                put_all(fd, zeros, sizeof zeros);
            break;
        }
        if (mode == M_GARBAGE) {
            put(fd, "HTTP/1.1 2x0 OK\r\n\r\n");
            break;
        }
        break; /* M_NOTHING */
    }
    close(fd);
    return NULL;
}

static void *acceptor(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(g_lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return NULL; /* the listening socket was shut down */
        }
        atomic_fetch_add(&g_accepts, 1);
        pthread_t t;
        if (pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)fd) == 0)
            pthread_detach(t);
        else
            close(fd);
    }
}

static unsigned listen_any(int *fd)
{
    *fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (bind(*fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(*fd, 64) != 0 ||
        getsockname(*fd, (struct sockaddr *)&sa, &sl) != 0)
        return 0;
    return ntohs(sa.sin_port);
}

/* One request through h; the request is left filled (the caller clears it). */
static void one(ctl_http *h, ctl_http_req *r, const char *method, const char *url, const char *body,
                double timeout_s)
{
    memset(r, 0, sizeof *r);
    r->method = method;
    snprintf(r->url, sizeof r->url, "%s", url);
    r->token = "tok";
    r->body = body;
    pfi_error e = ctl_http_run(h, r, 1, timeout_s);
    CHECK(e == PFI_OK, "ctl_http_run: %d", e);
}

/* A libcurl-only client with no connection kept. */
static ctl_http *fresh_curl(void)
{
    ctl_http *h;
    pfi_diag d;
    if (ctl_http_create(&h, &d) != PFI_OK)
        abort(); /* the first one was created */
    ctl_http_set_builtin(h, false);
    return h;
}

static void test_misbehaving(ctl_http *wire)
{
    unsigned port = listen_any(&g_lfd);
    CHECK(port > 0, "listen");
    if (port == 0)
        return;
    pthread_t acc;
    pthread_create(&acc, NULL, acceptor, NULL);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/v1/state", port);
    static char big_body[3 << 20]; /* larger than the socket buffers: partial writes */
    memset(big_body, 'x', sizeof big_body - 1);
    static const struct {
        int mode;
        const char *name;
        const char *body;
        double timeout_s;
        long status;
        const char *resp;
    } cases[] = {
        {M_KEEP, "keep-alive", NULL, 5, 200, "got 0"},
        {M_MIDBODY, "closed mid-body", NULL, 5, 0, NULL},
        {M_CHUNKED_SLOW, "chunked in slow pieces", NULL, 5, 200, "slow pieces"},
        {M_SILENT, "never answers", NULL, 0.3, 0, NULL},
        {M_BIG, "answer too large", NULL, 10, 0, NULL},
        {M_GARBAGE, "garbage status line", NULL, 5, 0, NULL},
        {M_NOTHING, "closed without an answer", NULL, 5, 0, NULL},
        {M_SLOW_READER, "large body, slow reader", big_body, 20, 200, "got 3145727"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ctl_http_req rw, rc;
        atomic_store(&g_mode, cases[k].mode);
        /* fresh connections for both: the earlier case's kept ones are closed by the mode
         * change only when the server ends them; a new client each time is simplest */
        ctl_http_set_builtin(wire, false);
        ctl_http_set_builtin(wire, true);
        ctl_http *curl = fresh_curl();
        double t0 = mono();
        one(wire, &rw, cases[k].body ? "PUT" : "GET", url, cases[k].body, cases[k].timeout_s);
        double dt = mono() - t0;
        one(curl, &rc, cases[k].body ? "PUT" : "GET", url, cases[k].body, cases[k].timeout_s);
        CHECK(rw.status == cases[k].status, "%s: status %ld (%s), want %ld", cases[k].name,
              rw.status, rw.err, cases[k].status);
        CHECK(cases[k].resp == NULL || (rw.resp != NULL && strcmp(rw.resp, cases[k].resp) == 0),
              "%s: body '%s'", cases[k].name, rw.resp ? rw.resp : "(none)");
        /* (a failed request's partial body is libcurl's to keep, the built-in client's to
           drop: the controller reads only err then) */
        CHECK(rw.status == rc.status && strcmp(rw.err, rc.err) == 0 &&
                  (rw.status == 0 || ((rw.resp == NULL) == (rc.resp == NULL) &&
                                      (rw.resp == NULL || strcmp(rw.resp, rc.resp) == 0))),
              "%s: built-in %ld '%s' '%s', libcurl %ld '%s' '%s'", cases[k].name, rw.status, rw.err,
              rw.resp ? rw.resp : "", rc.status, rc.err, rc.resp ? rc.resp : "");
        CHECK(dt < cases[k].timeout_s + 1.0, "%s: took %.3f s (timeout %.1f)", cases[k].name, dt,
              cases[k].timeout_s);
        ctl_http_req_clear(&rw);
        ctl_http_req_clear(&rc);
        ctl_http_destroy(curl);
    }

    /* a kept connection the agent closed meanwhile: sent again once, on a new connection */
    ctl_http_set_builtin(wire, false);
    ctl_http_set_builtin(wire, true);
    atomic_store(&g_mode, M_CLOSE_AFTER);
    ctl_http_req r;
    for (int k = 0; k < 3; k++) {
        one(wire, &r, "GET", url, NULL, 5);
        CHECK(r.status == 200 && r.resp && strcmp(r.resp, "got 0") == 0,
              "closed kept connection, run %d: %ld %s", k, r.status, r.err);
        ctl_http_req_clear(&r);
    }
    unsigned long opened, resent;
    ctl_http_counts(wire, &opened, &resent);
    /* the server closes each connection after its answer: the 2nd and 3rd runs find the kept
       one closed (whether its close or the reset of the request sent into it is seen first)
       and send again on a new one */
    CHECK(opened == 3 && resent == 2, "closed kept connection: %lu opened, %lu resent", opened,
          resent);

    shutdown(g_lfd, SHUT_RDWR);
    close(g_lfd);
    pthread_join(acc, NULL);

    /* refused: nothing listens on the port any more */
    ctl_http_req rw, rc;
    ctl_http *curl = fresh_curl();
    one(wire, &rw, "GET", url, NULL, 2);
    one(curl, &rc, "GET", url, NULL, 2);
    ctl_http_destroy(curl);
    CHECK(rw.status == 0 && strcmp(rw.err, rc.err) == 0, "refused: built-in '%s', libcurl '%s'",
          rw.err, rc.err);
    ctl_http_req_clear(&rw);
    ctl_http_req_clear(&rc);
}

/* ---- pfid's server ---- */

static pfi_http_next echo_body(void *cls, pfi_http_request *rq, const char *body, size_t len,
                               bool too_big)
{
    (void)cls;
    const char *auth = pfi_http_request_header(rq, "Authorization");
    if (auth == NULL || !pfi_http_bearer_ok(auth, "s3cret", 6))
        return pfi_http_reply(rq, 401, "{\"error\":\"token\"}", NULL);
    if (too_big)
        return pfi_http_reply(rq, 413, "{\"error\":\"too big\"}", NULL);
    if (strcmp(pfi_http_request_url(rq), "/large") == 0) {
        static char large[1 << 20]; /* 1 MiB: read in many pieces */
        for (size_t k = 0; k + 1 < sizeof large; k++)
            large[k] = (char)('a' + k % 26);
        return pfi_http_reply(rq, 200, large, NULL);
    }
    char msg[256];
    snprintf(msg, sizeof msg, "%s %s %zu %.32s", pfi_http_request_method(rq),
             pfi_http_request_url(rq), len, body);
    return pfi_http_reply(rq, 200, msg, NULL);
}

static void test_pfid_server(ctl_http *wire)
{
    struct sockaddr_storage ss;
    pfi_http_address_parse("127.0.0.1:0", &ss);
    pfi_http_server_config cfg = {.addr = (const struct sockaddr *)&ss,
                                  .threads = 2,
                                  .max_connections = 64,
                                  .idle_timeout_s = 30,
                                  .max_body = 1 << 20,
                                  .on_body = echo_body};
    pfi_http_server *s;
    pfi_diag d;
    if (pfi_http_server_start(&cfg, &s, &d) != PFI_OK) {
        CHECK(0, "pfid's server did not start: %s", d.message);
        return;
    }
    unsigned port = pfi_http_server_port(s);
    ctl_http_set_builtin(wire, false);
    ctl_http_set_builtin(wire, true);
    enum { N = 8 };
    ctl_http_req r[N];
    for (int run = 0; run < 20; run++) {
        memset(r, 0, sizeof r);
        for (int k = 0; k < N; k++) {
            r[k].method = k % 2 ? "PUT" : "GET";
            r[k].token = k == 7 ? "wrong" : "s3cret";
            r[k].body = k % 2 ? "{\"caps\":[]}" : NULL;
            snprintf(r[k].url, sizeof r[k].url, "http://127.0.0.1:%u/v1/x%d", port, k);
        }
        snprintf(r[6].url, sizeof r[6].url, "http://127.0.0.1:%u/large", port);
        CHECK(ctl_http_run(wire, r, N, 5) == PFI_OK, "run %d", run);
        for (int k = 0; k < N; k++) {
            char want[128];
            snprintf(want, sizeof want, "%s /v1/x%d %zu %s", k % 2 ? "PUT" : "GET", k,
                     k % 2 ? strlen("{\"caps\":[]}") : 0, k % 2 ? "{\"caps\":[]}" : "");
            if (k == 6)
                CHECK(r[k].status == 200 && r[k].resp_len == (1 << 20) - 1 &&
                          r[k].resp[12345] == (char)('a' + 12345 % 26),
                      "large: %ld %zu %s", r[k].status, r[k].resp_len, r[k].err);
            else if (k == 7)
                CHECK(r[k].status == 401 && r[k].resp && strstr(r[k].resp, "token"),
                      "wrong token: %ld %s", r[k].status, r[k].err);
            else
                CHECK(r[k].status == 200 && r[k].resp && strcmp(r[k].resp, want) == 0,
                      "run %d req %d: %ld '%s' (%s) want '%s'", run, k, r[k].status,
                      r[k].resp ? r[k].resp : "", r[k].err, want);
            ctl_http_req_clear(&r[k]);
        }
    }
    unsigned long opened, resent;
    ctl_http_counts(wire, &opened, &resent);
    /* 8 requests at once, 20 runs: 8 connections, kept (libmicrohttpd keeps them) */
    CHECK(opened == N && resent == 0,
          "pfid's server: %lu connections opened, %lu resent "
          "(want %d, 0)",
          opened, resent, N);
    pfi_http_server_stop(s);
}

int main(void)
{
    test_reader();
    test_urls();
    ctl_http *wire;
    pfi_diag d;
    if (ctl_http_create(&wire, &d) != PFI_OK) {
        fprintf(stderr, "SKIP: libcurl cannot be loaded: %s\n", d.message);
        return 77;
    }
    test_pfid_server(wire);
    test_misbehaving(wire);
    ctl_http_destroy(wire);
    if (failures > 0) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("ctl_http: ok\n");
    return 0;
}
