/*
 * HTTP for the controller: every agent's request at once (64 agents answer in one round trip,
 * not 64), each answer bounded (CTL_HTTP_MAX_BODY). Plain http:// to numeric addresses goes
 * through pfi's own HTTP/1.1 client over epoll (http_wire.c, ctl_wire.h); https://, host
 * names and anything else through libcurl's multi interface.
 */
#include "control/curl_lazy.h"
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "control/ctl_internal.h"
#include "control/ctl_wire.h"
#include "core/memory.h"

struct ctl_http {
    ctl_wire *wire; /* NULL: libcurl for every request */
    size_t *idx;    /* [n_idx]: the requests of a run, by client */
    size_t n_idx;
    CURLM *multi;
    CURL **easy; /* [n_easy]: reused from run to run (request i on easy[i]) */
    size_t n_easy;
};

/* Connections open at once: CTL_HTTP_MAX_CONNECTIONS, fewer when the process may not open
 * that many files (64 descriptors left for the rest; at least 16). */
static long max_connections(void)
{
    struct rlimit rl;
    long n = CTL_HTTP_MAX_CONNECTIONS;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)n + 64)
        n = rl.rlim_cur > 80 ? (long)rl.rlim_cur - 64 : 16;
    return n;
}

pfi_error ctl_http_create(ctl_http **out, pfi_diag *d)
{
    *out = NULL;
    const char *why = NULL;
    if (ctl_curl_load(&why) != 0) {
        pfi_diag_set(d, NULL, 0, NULL,
                     "the controller needs libcurl (" PFI_CURL_SONAME "), which cannot be "
                     "loaded: %s",
                     why);
        return PFI_ERR_UNAVAILABLE;
    }
    /* curl_global_init is not thread-safe before 7.84: pfi_ctl_create is not either
     * (pfi/control.h); the CLI calls it from its one thread. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        pfi_diag_set(d, NULL, 0, NULL, "libcurl failed to initialise (curl_global_init)");
        return PFI_ERR_UNAVAILABLE;
    }
    ctl_http *h = pfi_calloc(1, sizeof *h);
    if (h == NULL) {
        curl_global_cleanup();
        return PFI_ERR_NOMEM;
    }
    h->multi = curl_multi_init();
    if (h->multi == NULL) {
        pfi_free(h);
        curl_global_cleanup();
        return PFI_ERR_NOMEM;
    }
    /* every agent's connection kept open between periods (HTTP keep-alive): at 1 000 agents
     * a cap of 256 closed and opened a connection for nearly every request */
    long conns = max_connections();
    curl_multi_setopt(h->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, conns);
    curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, conns);
    if (ctl_wire_create(&h->wire, conns) != 0) {
        curl_multi_cleanup(h->multi);
        pfi_free(h);
        curl_global_cleanup();
        return PFI_ERR_NOMEM;
    }
    *out = h;
    return PFI_OK;
}

void ctl_http_destroy(ctl_http *h)
{
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->n_easy; i++)
        curl_easy_cleanup(h->easy[i]);
    pfi_free(h->easy);
    curl_multi_cleanup(h->multi);
    ctl_wire_destroy(h->wire);
    pfi_free(h->idx);
    pfi_free(h);
    curl_global_cleanup();
}

void ctl_http_set_builtin(ctl_http *h, bool on)
{
    if (on && h->wire == NULL)
        (void)ctl_wire_create(&h->wire, max_connections());
    else if (!on) {
        ctl_wire_destroy(h->wire);
        h->wire = NULL;
    }
}

void ctl_http_counts(const ctl_http *h, unsigned long *opened, unsigned long *resent)
{
    *opened = *resent = 0;
    if (h->wire != NULL)
        ctl_wire_counts(h->wire, opened, resent);
}

void ctl_http_req_clear(ctl_http_req *r)
{
    pfi_free(r->resp);
    r->resp = NULL;
    r->resp_len = 0;
    r->status = 0;
    r->err[0] = '\0';
}

typedef struct xfer {
    ctl_http_req *r;
    CURL *easy;
    struct curl_slist *hdr;
    size_t cap;
    bool too_big;
} xfer;

static size_t on_data(char *p, size_t sz, size_t nm, void *ud)
{
    xfer *x = ud;
    size_t n = sz * nm;
    ctl_http_req *r = x->r;
    if (r->resp_len + n > CTL_HTTP_MAX_BODY) {
        x->too_big = true;
        return 0;
    }
    if (r->resp_len + n + 1 > x->cap) {
        size_t nc = x->cap ? x->cap : 4096;
        while (nc < r->resp_len + n + 1)
            nc *= 2;
        char *q = pfi_realloc(r->resp, nc);
        if (q == NULL)
            return 0;
        r->resp = q;
        x->cap = nc;
    }
    memcpy(r->resp + r->resp_len, p, n);
    r->resp_len += n;
    r->resp[r->resp_len] = '\0';
    return n;
}

/* Whether url's host is a numeric IPv4 or IPv6 address (nothing to resolve). */
static bool numeric_host(const char *url)
{
    const char *p = strstr(url, "://");
    p = p != NULL ? p + 3 : url;
    char host[INET6_ADDRSTRLEN + 1];
    size_t n = 0;
    if (*p == '[') { /* [v6]:port */
        for (p++; *p && *p != ']' && n + 1 < sizeof host; p++)
            host[n++] = *p;
        host[n] = '\0';
        unsigned char a6[16];
        return *p == ']' && inet_pton(AF_INET6, host, a6) == 1;
    }
    for (; *p && *p != ':' && *p != '/' && n + 1 < sizeof host; p++)
        host[n++] = *p;
    host[n] = '\0';
    unsigned char a4[4];
    return inet_pton(AF_INET, host, a4) == 1;
}

/* At least n easy handles in h->easy, the new ones with the options every request shares.
 * Errors: PFI_ERR_NOMEM. */
static pfi_error easy_reserve(ctl_http *h, size_t n)
{
    if (n <= h->n_easy)
        return PFI_OK;
    CURL **e = pfi_realloc(h->easy, n * sizeof *e);
    if (e == NULL)
        return PFI_ERR_NOMEM;
    h->easy = e;
    while (h->n_easy < n) {
        CURL *c = curl_easy_init();
        if (c == NULL)
            return PFI_ERR_NOMEM;
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        h->easy[h->n_easy++] = c;
    }
    return PFI_OK;
}

/* The requests r[idx[k]] (k < n) through libcurl's multi interface. */
static pfi_error curl_run(ctl_http *h, ctl_http_req *r, const size_t *idx, size_t n,
                          double timeout_s)
{
    if (n == 0)
        return PFI_OK;
    xfer *x = pfi_calloc(n, sizeof *x);
    if (x == NULL)
        return PFI_ERR_NOMEM;
    pfi_error e = easy_reserve(h, n);
    long ms = (long)(timeout_s * 1000);
    if (ms < 1)
        ms = 1;
    for (size_t i = 0; e == PFI_OK && i < n; i++) {
        ctl_http_req *ri = &r[idx[i]];
        x[i].r = ri;
        /* a handle of an earlier run: every option a request sets is set again (GET first,
         * which drops an earlier request's body) */
        CURL *c = h->easy[i];
        x[i].easy = c;
        curl_easy_setopt(c, CURLOPT_URL, ri->url);
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &x[i]);
        curl_easy_setopt(c, CURLOPT_PRIVATE, &x[i]);
        /* a numeric address never changes: its DNS cache entry is kept, which spares the
         * cache's pruning, a walk over every agent's entry for each request (a tenth of the
         * CPU at 1 000 agents); names expire as libcurl's default (60 s) */
        curl_easy_setopt(c, CURLOPT_DNS_CACHE_TIMEOUT, numeric_host(ri->url) ? -1L : 60L);
        struct curl_slist *hd = curl_slist_append(NULL, "Expect:");
        if (ri->token != NULL && ri->token[0] != '\0') {
            char auth[PFI_CTL_AUTH_LEN];
            snprintf(auth, sizeof auth, "Authorization: Bearer %s", ri->token);
            hd = curl_slist_append(hd, auth);
        }
        if (ri->header != NULL)
            hd = curl_slist_append(hd, ri->header);
        if (ri->body != NULL) {
            hd = curl_slist_append(hd, "Content-Type: application/json");
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, ri->body);
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(ri->body));
        }
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, ri->method);
        x[i].hdr = hd;
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
        curl_multi_add_handle(h->multi, c);
    }
    int running = e == PFI_OK;
    while (running) {
        if (curl_multi_perform(h->multi, &running) != CURLM_OK) {
            e = PFI_ERR_IO;
            break;
        }
        if (running)
            curl_multi_poll(h->multi, NULL, 0, 100, NULL);
    }
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(h->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        xfer *xi;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&xi);
        if (m->data.result == CURLE_OK) {
            curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &xi->r->status);
        } else {
            xi->r->status = 0;
            snprintf(xi->r->err, sizeof xi->r->err, "%s",
                     xi->too_big ? "answer too large" : curl_easy_strerror(m->data.result));
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (x[i].easy != NULL) /* the handle stays for the next run, detached */
            curl_multi_remove_handle(h->multi, x[i].easy);
        curl_slist_free_all(x[i].hdr);
        ctl_http_req *ri = &r[idx[i]];
        if (ri->status == 0 && ri->err[0] == '\0')
            snprintf(ri->err, sizeof ri->err, "no answer");
    }
    pfi_free(x);
    return e;
}

pfi_error ctl_http_run(ctl_http *h, ctl_http_req *r, size_t n, double timeout_s)
{
    if (n == 0)
        return PFI_OK;
    if (n > h->n_idx) {
        size_t *q = pfi_realloc(h->idx, n * sizeof *q);
        if (q == NULL)
            return PFI_ERR_NOMEM;
        h->idx = q;
        h->n_idx = n;
    }
    /* the built-in client's requests first in idx (nw of them), libcurl's after */
    size_t nw = 0, nc = 0;
    for (size_t i = 0; i < n; i++) {
        ctl_http_req_clear(&r[i]);
        struct sockaddr_storage sa;
        unsigned alen;
        char host[INET6_ADDRSTRLEN + 10];
        const char *path;
        bool wire = h->wire != NULL &&
                    ctl_wire_url(r[i].url, &sa, &alen, host, sizeof host, &path) &&
                    (r[i].token == NULL || strpbrk(r[i].token, "\r\n") == NULL) &&
                    (r[i].header == NULL || strpbrk(r[i].header, "\r\n") == NULL);
        if (wire)
            h->idx[nw++] = i;
        else
            h->idx[n - 1 - nc++] = i;
    }
    pfi_error e = PFI_OK;
    if (nw > 0 && ctl_wire_run(h->wire, r, h->idx, nw, timeout_s, CTL_HTTP_MAX_BODY) != 0)
        e = PFI_ERR_NOMEM;
    if (nc > 0) {
        pfi_error ec = curl_run(h, r, h->idx + nw, nc, timeout_s);
        if (e == PFI_OK)
            e = ec;
    }
    return e;
}
