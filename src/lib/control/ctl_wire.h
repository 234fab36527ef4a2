/*
 * pfi's own HTTP/1.1 client for the controller's plain-http agents (http_wire.c): the answer's
 * incremental reader, and the client's switch. Not part of the public API.
 *
 * Why: at 1 000 agents libcurl's own work per transfer (its state machine, allocations, the
 * connection cache's walks) was a quarter of the controller's CPU to read the agents' states;
 * a request here is one write of a prepared header and, mostly, one read of the answer on a
 * connection kept open per agent, all driven by one epoll loop. libcurl stays for https://,
 * for host names, and for anything this client does not take (ctl_wire_url).
 */
#ifndef PFI_CTL_WIRE_H
#define PFI_CTL_WIRE_H

#include <stdbool.h>
#include <stddef.h>

/* What ctl_hparse_feed / ctl_hparse_eof return. */
enum {
    CTL_HP_MORE = 0,     /* the answer is not complete: feed more */
    CTL_HP_DONE = 1,     /* complete (bytes after it left unread: *used says how many read) */
    CTL_HP_BAD = -1,     /* not HTTP/1.x, a malformed header, a bad Content-Length */
    CTL_HP_TOO_BIG = -2, /* the body is longer than max (or the header than 64 KiB) */
    CTL_HP_NOMEM = -3,
    CTL_HP_BAD_CHUNK = -4, /* a malformed chunked body */
    CTL_HP_NOTHING = -5,   /* (eof) the connection closed before any byte of the answer */
    CTL_HP_PARTIAL = -6,   /* (eof) closed within the header or before the body's end */
};

#define CTL_HP_LINE 8192 /* longest header line or chunk-size line */
#define CTL_HP_HEAD_MAX (64u << 10)

/* One answer being read: status line, headers (Content-Length, Transfer-Encoding: chunked,
 * Connection), then the body by length, by chunks, or to the connection's close. Interim
 * 1xx answers are skipped. Zero it (or ctl_hparse_reset) before the first feed. */
typedef struct ctl_hparse {
    int state;
    long status;     /* the final answer's status (0 until its status line is read) */
    bool keep_alive; /* whether the connection may carry the next request */
    bool chunked, has_len;
    unsigned long long remain; /* body bytes (or this chunk's) still to come */
    size_t head_bytes;         /* header bytes read (bounded by CTL_HP_HEAD_MAX) */
    size_t total;              /* bytes fed so far */
    size_t line_len;
    char line[CTL_HP_LINE];
    /* the body: owned by the caller once taken (body set NULL); NUL-terminated */
    char *body;
    size_t len, cap;
    size_t max;     /* longest body accepted (0: CTL_HTTP_MAX_BODY) */
    bool head_only; /* (set by the caller) a HEAD request: no body follows */
} ctl_hparse;

/* ctl_hparse_reset — ready p for the next answer, freeing a body not taken; keeps max. */
void ctl_hparse_reset(ctl_hparse *p);

/* ctl_hparse_feed — read n bytes of buf (n may be 0); *used: how many belong to this answer
 * (all of them unless DONE). Returns CTL_HP_MORE, CTL_HP_DONE or an error (then p is done
 * with: reset it). Bounded: no allocation beyond the body's bytes + 1. */
int ctl_hparse_feed(ctl_hparse *p, const char *buf, size_t n, size_t *used);

/* ctl_hparse_eof — the connection closed: CTL_HP_DONE when the body ends with the close
 * (no length, not chunked), else CTL_HP_NOTHING (no byte read), CTL_HP_PARTIAL. */
int ctl_hparse_eof(ctl_hparse *p);

/* ctl_wire_url — whether url is one the built-in client takes: "http://" + a numeric IPv4 or
 * [IPv6] address + optional ":port" (1–65535) + a path of printable ASCII without spaces
 * (or none: "/"). Fills the address (sockaddr_storage bytes, *alen), the Host header's value
 * (host[hn]) and where the path starts (*path: into url; "" for none). */
struct sockaddr_storage;
bool ctl_wire_url(const char *url, struct sockaddr_storage *addr, unsigned *alen, char *host,
                  size_t hn, const char **path);

/* The client: connections kept per address (host:port), one epoll set. */
struct ctl_http_req;
typedef struct ctl_wire ctl_wire;

/* ctl_wire_create — a client holding at most max_conns connections open at once. Returns 0,
 * or -1 (out of memory, or epoll_create1 failed: errno). */
int ctl_wire_create(ctl_wire **out, long max_conns);

/* ctl_wire_destroy — close every connection; NULL is a no-op. */
void ctl_wire_destroy(ctl_wire *w);

/* ctl_wire_run — perform r[idx[k]] (k < m; each url taken by ctl_wire_url) concurrently,
 * every one done within timeout_s of the call: status, resp (owned, NUL-terminated; NULL for
 * an empty body), resp_len, or status 0 and err worded as libcurl words the same failure
 * (curl_easy_strerror; "answer too large" beyond max_body). A request on a kept connection
 * that the agent closed meanwhile (nothing read back) is sent once more on a new connection.
 * The caller has cleared each request. Returns 0, or -1 out of memory (requests not done
 * then carry status 0 and an error). */
int ctl_wire_run(ctl_wire *w, struct ctl_http_req *r, const size_t *idx, size_t m, double timeout_s,
                 size_t max_body);

/* Counters for tests and the bench: connections opened, requests sent again after a kept
 * connection was found closed. */
void ctl_wire_counts(const ctl_wire *w, unsigned long *opened, unsigned long *resent);

#endif
