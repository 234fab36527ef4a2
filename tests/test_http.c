/*
 * The embedded HTTP server (src/lib/http): the bearer-token check pfid and pfi control share,
 * listen-address parsing, the lazy libmicrohttpd loader, and a live server on loopback driven
 * by a raw socket client — headers answered at once, bodies collected, the declared and the
 * chunked body bounds, replies with their headers, and out of memory.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "checks.h"
#include "pfi/memory.h"

#include "http/mhd_lazy.h"
#include "pfi/http.h"

/* ---- an allocator that fails on demand (pfi/memory.h) ---- */

static atomic_bool g_fail_alloc;

static void *t_malloc(size_t n)
{
    return atomic_load(&g_fail_alloc) ? NULL : malloc(n);
}

static void *t_realloc(void *p, size_t n)
{
    return atomic_load(&g_fail_alloc) ? NULL : realloc(p, n);
}

static void *t_calloc(size_t c, size_t n)
{
    return atomic_load(&g_fail_alloc) ? NULL : calloc(c, n);
}

static void test_token(void **state)
{
    (void)state;
    static const struct {
        const char *given, *secret;
        bool want;
    } cases[] = {
        {"abc", "abc", true},   {"abd", "abc", false},   {"ab", "abc", false},
        {"abcd", "abc", false}, {"", "abc", false},      {"", "", false}, /* no token: no match */
        {"xbc", "abc", false},  {"abc\n", "abc", false},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        CHECK(pfi_http_token_equal(cases[k].given, strlen(cases[k].given), cases[k].secret,
                                   strlen(cases[k].secret)) == cases[k].want,
              "token case %zu\n", k);
    static const struct {
        const char *authorization, *secret;
        bool want;
    } bearer[] = {
        {"Bearer s3cret", "s3cret", true},
        {"bearer s3cret", "s3cret", true}, /* the scheme is case-insensitive (RFC 7235) */
        {"BEARER   s3cret", "s3cret", true},
        {"Bearer s3cret ", "s3cret", false},
        {"Bearer s3cre", "s3cret", false},
        {"Bearers3cret", "s3cret", false},
        {"Basic s3cret", "s3cret", false},
        {"Bearer ", "", false}, /* no token configured: nothing is authorised */
        {NULL, "s3cret", false},
    };
    for (size_t k = 0; k < sizeof bearer / sizeof bearer[0]; k++)
        CHECK(pfi_http_bearer_ok(bearer[k].authorization, bearer[k].secret,
                                 strlen(bearer[k].secret)) == bearer[k].want,
              "bearer case %zu\n", k);
    END_CHECKS();
}

static void test_address(void **state)
{
    (void)state;
    struct sockaddr_storage ss;
    CHECK(pfi_http_address_parse("127.0.0.1:9400", &ss) && ss.ss_family == AF_INET &&
              ntohs(((struct sockaddr_in *)&ss)->sin_port) == 9400,
          "v4\n");
    CHECK(pfi_http_address_parse("[::1]:0", &ss) && ss.ss_family == AF_INET6, "v6\n");
    CHECK(pfi_http_address_parse(":9400", &ss), "any address\n");
    static const char *bad[] = {"127.0.0.1",
                                "localhost:9400",
                                "[::1]9400",
                                "[::1:9400",
                                "127.0.0.1:http",
                                "1.2.3.4.5:80",
                                "",
                                "127.0.0.1:",
                                "127.0.0.1:70000",
                                "127.0.0.1:+80",
                                "127.0.0.1:065536",
                                "[::1]:"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        CHECK(!pfi_http_address_parse(bad[k], &ss), "'%s' is not an address\n", bad[k]);
    END_CHECKS();
}

/* The loader's stateless entry point: a library that cannot be opened or lacks a function is
 * a clear error naming it, never a crash; the real one resolves. */
static void test_lazy(void **state)
{
    (void)state;
    mhd_lazy_fns f;
    char why[512];
    assert_int_equal(mhd_lazy_open("libpfi-no-such-mhd.so.9", &f, why, sizeof why), -1);
    assert_non_null(strstr(why, "libpfi-no-such-mhd.so.9"));
    assert_null(f.lib);
    assert_int_equal(mhd_lazy_open("libm.so.6", &f, why, sizeof why), -1);
    assert_non_null(strstr(why, "libm.so.6 lacks MHD_start_daemon_va"));
    assert_null(f.lib);
    assert_int_equal(mhd_lazy_open(PFI_MHD_SONAME, &f, why, sizeof why), 0);
    assert_string_equal(why, "");
    assert_non_null(f.lib);
    assert_non_null(f.queue_response);
}

/* ---- a live server ---- */

static const char k_secret[] = "s3cret";

/* GET /now: answered from the headers. PUT /echo: authorised, then its body is read. */
static pfi_http_next t_head(void *cls, pfi_http_request *rq)
{
    (void)cls;
    const char *url = pfi_http_request_url(rq);
    if (strcmp(url, "/now") == 0) {
        pfi_http_header h[] = {{"Content-Type", "text/plain"}, {"X-Test", "1"}, {NULL, NULL}};
        return pfi_http_reply(rq, 200, "now\n", h);
    }
    if (strcmp(url, "/echo") == 0 &&
        !pfi_http_bearer_ok(pfi_http_request_header(rq, "Authorization"), k_secret,
                            strlen(k_secret)))
        return pfi_http_reply(rq, 401, "token\n", NULL);
    if (pfi_http_request_body_over(rq, 16))
        return pfi_http_reply(rq, 413, "declared\n", NULL);
    return PFI_HTTP_READ_BODY;
}

static pfi_http_next t_body(void *cls, pfi_http_request *rq, const char *body, size_t len,
                            bool too_big)
{
    (void)cls;
    if (too_big)
        return pfi_http_reply(rq, 413, "read\n", NULL);
    char msg[128];
    snprintf(msg, sizeof msg, "%s %s %zu [%s]\n", pfi_http_request_method(rq),
             pfi_http_request_url(rq), len, body);
    return pfi_http_reply(rq, 200, msg, NULL);
}

/* Send req to 127.0.0.1:port and read the whole answer (the server closes: Connection:
 * close) into out[cap]; the byte count, -1 when the connection failed. */
static long exchange(unsigned port, const char *req, char *out, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
        close(fd);
        return -1;
    }
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd, out + n, cap - n - 1)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(fd);
    return (long)n;
}

static void test_server(void **state)
{
    (void)state;
    struct sockaddr_storage ss;
    assert_true(pfi_http_address_parse("127.0.0.1:0", &ss));
    pfi_http_server_config cfg = {.addr = (const struct sockaddr *)&ss,
                                  .threads = 2,
                                  .max_connections = 8,
                                  .idle_timeout_s = 5,
                                  .max_body = 16,
                                  .on_head = t_head,
                                  .on_body = t_body};
    pfi_http_server *s;
    pfi_diag d;
    assert_int_equal(pfi_http_server_start(&cfg, &s, &d), PFI_OK);
    unsigned port = pfi_http_server_port(s);
    assert_true(port > 0);
    char out[4096];
    static const struct {
        const char *req, *status, *has;
    } cases[] = {
        {"GET /now HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "HTTP/1.1 200", "X-Test: 1"},
        {"GET /now HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "HTTP/1.1 200",
         "Content-Type: text/plain"},
        {"GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "HTTP/1.1 200",
         "GET /other 0 []"},
        {"PUT /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer s3cret"
         "\r\nContent-Length: 5\r\n\r\nhello",
         "HTTP/1.1 200", "PUT /echo 5 [hello]"},
        {"PUT /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer wrong"
         "\r\nContent-Length: 5\r\n\r\nhello",
         "HTTP/1.1 401", "token"},
        {"PUT /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer s3cret"
         "\r\nContent-Length: 17\r\n\r\n0123456789abcdefg",
         "HTTP/1.1 413", "declared"},
        /* no Content-Length: the chunked body is cut off when it passes the bound */
        {"PUT /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer s3cret"
         "\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n01234567\r\n9\r\n89abcdefg\r\n0\r\n\r\n",
         "HTTP/1.1 413", "read"},
        {"PUT /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer s3cret"
         "\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n01234567\r\n8\r\n89abcdef\r\n0\r\n\r\n",
         "HTTP/1.1 200", "PUT /echo 16 [0123456789abcdef]"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        long n = exchange(port, cases[k].req, out, sizeof out);
        CHECK(n > 0 && strncmp(out, cases[k].status, strlen(cases[k].status)) == 0 &&
                  strstr(out, cases[k].has) != NULL,
              "case %zu: got '%s'\n", k, n > 0 ? out : "(nothing)");
    }
    /* a request without a body keeps its connection: the next request on it is answered
       (libmicrohttpd closes after an answer queued with the headers, so it is queued later) */
    long kn = exchange(port,
                       "GET /now HTTP/1.1\r\nHost: x\r\n\r\n"
                       "GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                       out, sizeof out);
    const char *second = kn > 0 ? strstr(out, "GET /other 0 []") : NULL;
    CHECK(second != NULL && strstr(out, "now\n") != NULL,
          "two requests on one connection: got '%s'\n", kn > 0 ? out : "(nothing)");
    /* out of memory while a body is read: the connection is closed without an answer */
    atomic_store(&g_fail_alloc, true);
    long n = exchange(port,
                      "PUT /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: "
                      "Bearer s3cret\r\nContent-Length: 5\r\n\r\nhello",
                      out, sizeof out);
    atomic_store(&g_fail_alloc, false);
    CHECK(n <= 0 || strstr(out, "hello") == NULL, "answered out of memory: '%s'\n", out);
    pfi_http_server_stop(s);
    pfi_http_server_stop(NULL);
    END_CHECKS();
}

static void test_start_errors(void **state)
{
    (void)state;
    struct sockaddr_storage ss;
    assert_true(pfi_http_address_parse("127.0.0.1:0", &ss));
    pfi_http_server_config cfg = {.addr = (const struct sockaddr *)&ss, .on_body = t_body};
    pfi_http_server *s, *t = (pfi_http_server *)&ss;
    pfi_diag d;
    /* a port in use */
    assert_int_equal(pfi_http_server_start(&cfg, &s, &d), PFI_OK);
    struct sockaddr_in taken = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)pfi_http_server_port(s))};
    taken.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    pfi_http_server_config again = cfg;
    again.addr = (const struct sockaddr *)&taken;
    assert_int_equal(pfi_http_server_start(&again, &t, &d), PFI_ERR_IO);
    assert_null(t);
    pfi_http_server_stop(s);
    /* no handler, no address */
    pfi_http_server_config none = {.addr = (const struct sockaddr *)&ss};
    assert_int_equal(pfi_http_server_start(&none, &s, &d), PFI_ERR_INVALID_ARGUMENT);
    none = (pfi_http_server_config){.on_body = t_body};
    assert_int_equal(pfi_http_server_start(&none, &s, &d), PFI_ERR_INVALID_ARGUMENT);
    /* out of memory */
    atomic_store(&g_fail_alloc, true);
    pfi_error e = pfi_http_server_start(&cfg, &s, &d);
    atomic_store(&g_fail_alloc, false);
    assert_int_equal(e, PFI_ERR_NOMEM);
    assert_null(s);
}

/* Token files: one token a line, named and scoped; the strict header check (issue 16). */
static void test_tokens(void **state)
{
    (void)state;
    pfi_http_tokens t;
    pfi_diag d;
    const char *f = "# comment\n\nmonitor read r-0123456789abcdef\n"
                    "ctl control c-0123456789abcdef\r\nbare-token-0123456789\n";
    CHECK(pfi_http_tokens_parse(f, strlen(f), &t, &d) == PFI_OK, "parse: %s", d.message);
    CHECK(t.n == 3, "three tokens, one a line: %zu", t.n);
    CHECK(t.n == 3 && t.t[0].scope == PFI_HTTP_SCOPE_READ && strcmp(t.t[0].name, "monitor") == 0,
          "named read token");
    CHECK(t.n == 3 && t.t[1].scope == PFI_HTTP_SCOPE_CONTROL && t.t[1].len == 18, "control, CR");
    CHECK(t.n == 3 && t.t[2].scope == PFI_HTTP_SCOPE_CONTROL && strcmp(t.t[2].name, "line-5") == 0,
          "a bare token: control, named by its line");
    struct {
        const char *h;
        size_t len; /* 0: strlen */
        int want;   /* index of the token, -1 none */
    } cases[] = {
        {"Bearer r-0123456789abcdef", 0, 0},
        {"bearer   c-0123456789abcdef", 0, 1},
        {"Bearer bare-token-0123456789", 0, 2},
        {"Bearer r-0123456789abcdef\0zz", 28, -1}, /* an embedded NUL */
        {"Bearer r-0123456789abcdef zz", 0, -1},   /* trailing junk */
        {"Bearer r-0123456789abcdef ", 0, -1},
        {"Bearer r-0123456789abcde", 0, -1}, /* a prefix */
        {"Basic r-0123456789abcdef", 0, -1},
        {"Bearer ", 0, -1},
        {"r-0123456789abcdef", 0, -1},
        /* the whole multi-line file as one token never matched before; now no line does */
        {"Bearer r-0123456789abcdef\nctl", 0, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = cases[i].len ? cases[i].len : strlen(cases[i].h);
        const pfi_http_token *m = pfi_http_tokens_match(&t, cases[i].h, len);
        int got = m == NULL ? -1 : (int)(m - t.t);
        CHECK(got == cases[i].want, "case %zu '%s': token %d, want %d", i, cases[i].h, got,
              cases[i].want);
    }
    /* the minimum length pfid and `pfi control --token-file` share: 16 bytes */
    const char *weak = "a read abc\nb control 0123456789abcdef\nc read 0123456789abcde\n";
    CHECK(pfi_http_tokens_parse(weak, strlen(weak), &t, &d) == PFI_OK, "parse: %s", d.message);
    CHECK(pfi_http_tokens_short(&t, 0) == 0, "3 bytes: short");
    CHECK(pfi_http_tokens_short(&t, 1) == 2, "16 bytes not short, 15 bytes short");
    CHECK(pfi_http_tokens_short(&t, 3) == 3, "none after the last");
    const char *bad[] = {"a b\n", "n admin tok\n", "n read to ken\n", "n read t\xc3\xa9\n",
                         "",      "# only\n"};
    pfi_error want[] = {PFI_ERR_PARSE, PFI_ERR_PARSE, PFI_ERR_PARSE,
                        PFI_ERR_PARSE, PFI_ERR_EMPTY, PFI_ERR_EMPTY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(pfi_http_tokens_parse(bad[i], strlen(bad[i]), &t, &d) == want[i],
              "bad token file %zu refused", i);
    /* files: a FIFO is refused without blocking, a file others may read is refused */
    char dir[] = "/tmp/pfi-tokens.XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "tmp dir");
    char fifo[64], open_file[64];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(open_file, sizeof open_file, "%s/open", dir);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    CHECK(pfi_http_tokens_load(fifo, &t, &d) == PFI_ERR_INVALID_ARGUMENT &&
              strstr(d.message, "not a regular file") != NULL,
          "FIFO refused: %s", d.message);
    FILE *o = fopen(open_file, "w");
    fputs("tok-0123456789abcdef\n", o);
    fclose(o);
    chmod(open_file, 0644);
    CHECK(pfi_http_tokens_load(open_file, &t, &d) == PFI_ERR_INVALID_ARGUMENT &&
              strstr(d.message, "chmod 600") != NULL,
          "mode 0644 refused: %s", d.message);
    chmod(open_file, 0600);
    CHECK(pfi_http_tokens_load(open_file, &t, &d) == PFI_OK && t.n == 1, "mode 0600: %s",
          d.message);
    unlink(fifo);
    unlink(open_file);
    rmdir(dir);
    END_CHECKS();
}

int main(void)
{
    if (pfi_replace_allocator(t_malloc, t_realloc, t_calloc, free) != PFI_OK)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token),        cmocka_unit_test(test_address),
        cmocka_unit_test(test_lazy),         cmocka_unit_test(test_server),
        cmocka_unit_test(test_start_errors), cmocka_unit_test(test_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
