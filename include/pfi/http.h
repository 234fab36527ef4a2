/*
 * pfi/http.h — the embedded HTTP server that pfid (src/agent/api.c) and `pfi control
 * --listen` (src/cli/control.c) answer on: libmicrohttpd, opened with dlopen when the first
 * server starts (src/lib/http/mhd_lazy.h), behind a small interface that names none of its types.
 *
 * A server calls two functions of its owner per request: on_head once the request line and
 * headers are in (route, authorise, answer at once — an unauthenticated write is refused
 * before its body is read — or ask for the body), then on_body with the whole body, kept up
 * to a bound (max_body bytes) and dropped past it. Replies are queued with pfi_http_reply; the
 * bearer-token check (pfi_http_bearer_ok) is the one both servers use, in constant time.
 *
 * Threads: on_head and on_body run on the server's threads (one, or a pool of cfg.threads),
 * concurrently for different connections; what they share with the owner is the owner's to
 * lock. A pfi_http_request is valid only during the call it is passed to.
 */
#ifndef PFI_HTTP_H
#define PFI_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_http_server pfi_http_server;
typedef struct pfi_http_request pfi_http_request;

/* What a handler did with a request. */
typedef enum pfi_http_next {
    PFI_HTTP_CLOSE = 0, /* nothing queued: close the connection (out of memory, queueing failed) */
    PFI_HTTP_ANSWERED = 1, /* a reply is queued (pfi_http_reply) */
    PFI_HTTP_READ_BODY = 2 /* on_head only: read the body, then call on_body */
} pfi_http_next;

/* One response header; an array of them ends with a NULL name. */
typedef struct pfi_http_header {
    const char *name, *value;
} pfi_http_header;

/* The request's headers are in: answer (PFI_HTTP_ANSWERED, PFI_HTTP_CLOSE) or PFI_HTTP_READ_BODY.
 */
typedef pfi_http_next (*pfi_http_head_fn)(void *cls, pfi_http_request *rq);
/* The body is in: body[len] (NUL-terminated, "" when there was none; borrowed for the call)
 * or, when the client sent more than max_body bytes, too_big with body "" and len 0. */
typedef pfi_http_next (*pfi_http_body_fn)(void *cls, pfi_http_request *rq, const char *body,
                                          size_t len, bool too_big);
/* One line of libmicrohttpd's own error log, without its newline (borrowed for the call). */
typedef void (*pfi_http_log_fn)(void *cls, const char *line);

/* How a server listens and whom it calls. Zero fields take the defaults each one names
 * (max_body 0: no body is kept, every body is too_big). */
typedef struct pfi_http_server_config {
    const struct sockaddr *addr; /* AF_INET or AF_INET6 address to bind, with the port (0:
                                    any free port, see pfi_http_server_port); read during start */
    unsigned threads;            /* > 0: a pool of that many threads; 0: one polling thread */
    unsigned max_connections;    /* connections served at once; 0: libmicrohttpd's limit */
    unsigned idle_timeout_s;     /* close a connection idle this long, s; 0: never */
    unsigned max_per_client;     /* connections one client address may hold at once (a slow
                                    client cannot take every slot); 0: no limit */
    double body_timeout_s;       /* a body not complete this long after its headers closes
                                    the connection (a trickling client); 0: no bound */
    size_t connection_memory_b;  /* memory per connection (headers, buffers), bytes; 0: default */
    size_t thread_stack_b;       /* stack of each server thread, bytes; 0: the system's */
    size_t max_body;             /* body bytes kept for on_body; beyond: too_big */
    pfi_http_head_fn on_head;    /* NULL: every request reads its body */
    pfi_http_body_fn on_body;    /* required */
    pfi_http_log_fn log;         /* NULL: libmicrohttpd logs nothing */
    void *cls;                   /* passed to on_head, on_body and log; borrowed: it must
                                    outlive the server (until pfi_http_server_stop returns) */
} pfi_http_server_config;

/*
 * pfi_http_server_start — load libmicrohttpd if need be, bind cfg->addr and start serving on the
 * server's own threads. *out: the server (owned; pfi_http_server_stop), NULL on error. Errors:
 * PFI_ERR_INVALID_ARGUMENT (no addr or on_body, or not IPv4/IPv6), PFI_ERR_UNAVAILABLE
 * (libmicrohttpd cannot be loaded: d's message names it and why), PFI_ERR_NOMEM, PFI_ERR_IO
 * (cannot listen: address in use or not an address of this host). d may be NULL.
 */
pfi_error pfi_http_server_start(const pfi_http_server_config *cfg, pfi_http_server **out,
                                pfi_diag *d);
/* (pfi_http_server_stop joins the server's threads: never call it from on_head, on_body or
 * log.) The URL a handler sees (pfi_http_request_url) is libmicrohttpd's, percent-decoded. */

/* pfi_http_server_port — the port s is bound to (the one chosen when cfg.addr's was 0); 0 when
 * libmicrohttpd cannot say. */
unsigned pfi_http_server_port(const pfi_http_server *s);

/* pfi_http_server_stop — stop serving (requests in flight are finished or dropped, every thread
 * joined) and free s. NULL is a no-op. */
void pfi_http_server_stop(pfi_http_server *s);

/* The request's method ("GET") and path ("/metrics", no query string): borrowed. */
const char *pfi_http_request_method(const pfi_http_request *rq);
const char *pfi_http_request_url(const pfi_http_request *rq);

/* pfi_http_request_header — the value of the request header name (case-insensitive), NULL when
 * absent; borrowed for the call. */
const char *pfi_http_request_header(const pfi_http_request *rq, const char *name);

/*
 * pfi_http_request_body_over — true when the request declares (Content-Length) a body longer
 * than max bytes, or a length that is not a decimal number: a handler answers 413 before a
 * byte of it is read. A request without Content-Length (none, or chunked) is not over here;
 * on_body's too_big catches a chunked body that passes max_body.
 */
bool pfi_http_request_body_over(const pfi_http_request *rq, size_t max);

/*
 * pfi_http_reply — queue the reply status with body (NUL-terminated; copied, so the caller keeps
 * and frees its own) and the headers (in that order; NULL: none; name NULL ends the array).
 * Returns PFI_HTTP_ANSWERED, or PFI_HTTP_CLOSE when libmicrohttpd could not build or queue it.
 */
pfi_http_next pfi_http_reply(pfi_http_request *rq, unsigned status, const char *body,
                             const pfi_http_header *headers);

/*
 * pfi_http_token_equal — whether given[given_len] equals secret[secret_len], in time that
 * depends only on secret_len (not on where they differ, nor on given_len). An empty secret
 * matches nothing: a server without a token refuses every authenticated request.
 */
bool pfi_http_token_equal(const char *given, size_t given_len, const char *secret,
                          size_t secret_len);

/*
 * pfi_http_bearer_ok — whether an Authorization header value presents secret[secret_len] as a
 * bearer token (RFC 6750 §2.1: "Bearer" — any case, RFC 7235 §2.1 — then spaces, then the
 * token), compared with pfi_http_token_equal. authorization NULL (no header) is false.
 */
bool pfi_http_bearer_ok(const char *authorization, const char *secret, size_t secret_len);

/* ---- tokens: one a line, named, scoped (docs/agent-api.md) -------------------------------- */
typedef enum pfi_http_scope {
    PFI_HTTP_SCOPE_NONE = 0,
    PFI_HTTP_SCOPE_READ = 1,   /* GET /metrics, /v1/state (with auth_reads) */
    PFI_HTTP_SCOPE_CONTROL = 2 /* every request, writes included */
} pfi_http_scope;

/* pfi_http_scope_name — "read", "control", "none". Static. */
const char *pfi_http_scope_name(pfi_http_scope s);

#define PFI_HTTP_MAX_TOKENS 64 /* tokens a file may hold; more: PFI_ERR_LIMIT naming it */
typedef struct pfi_http_token {
    char name[64]; /* for the logs, never the secret ("line-N" for a bare token) */
    pfi_http_scope scope;
    char secret[256]; /* NUL-terminated */
    size_t len;
} pfi_http_token;
typedef struct pfi_http_tokens {
    size_t n;
    pfi_http_token t[PFI_HTTP_MAX_TOKENS];
} pfi_http_tokens;

/* pfi_http_tokens_parse — a token file's text[len]: one token a line, "TOKEN" (scope control,
 * named line-N: the one-token file of before) or "NAME SCOPE TOKEN" (SCOPE read or control);
 * blank lines and '#' comments skipped; a token is 1-255 characters of RFC 6750's b64token
 * [A-Za-z0-9-._~+/=]. Errors: PFI_ERR_PARSE (diag names the line), PFI_ERR_LIMIT, PFI_ERR_EMPTY
 * (no token). */
pfi_error pfi_http_tokens_parse(const char *text, size_t len, pfi_http_tokens *out, pfi_diag *d);

/* pfi_http_secret_read — a file that holds secrets into *text (owned, pfi_free; NUL-terminated,
 * *len bytes): opened without blocking (O_NONBLOCK, no link followed), refused unless it is a
 * regular file and, with strict_mode, owned by the effective user with no group or other
 * access. Errors: PFI_ERR_IO (cannot open: diag has strerror), PFI_ERR_INVALID_ARGUMENT (not a
 * regular file, mode or owner: diag says which and how to fix it), PFI_ERR_LIMIT (over 64 KiB),
 * PFI_ERR_NOMEM. */
pfi_error pfi_http_secret_read(const char *path, bool strict_mode, char **text, size_t *len,
                               pfi_diag *d);

/* pfi_http_tokens_load — pfi_http_secret_read (strict) and pfi_http_tokens_parse of path;
 * diag names the file. */
pfi_error pfi_http_tokens_load(const char *path, pfi_http_tokens *out, pfi_diag *d);

/* Tokens shorter than this many bytes are weak: pfid and `pfi control --token-file` warn. */
#define PFI_HTTP_TOKEN_MIN_BYTES 16

/* pfi_http_tokens_short — the index of the first token of t at or after index from that is
 * shorter than PFI_HTTP_TOKEN_MIN_BYTES, or t->n when none is: the one minimum-length check
 * that pfid and `pfi control --token-file` both apply (each warns naming t->t[k].name). */
size_t pfi_http_tokens_short(const pfi_http_tokens *t, size_t from);

/* pfi_http_tokens_match — the token an Authorization header value authorization[auth_len]
 * presents, or NULL: strictly "Bearer" (any case), spaces, then a token and nothing else — a
 * value whose length is not auth_len (an embedded NUL: "Bearer TOKEN\0zz") or with anything
 * after the token is refused. Every token is compared (pfi_http_token_equal), none skipped. */
const pfi_http_token *pfi_http_tokens_match(const pfi_http_tokens *t, const char *authorization,
                                            size_t auth_len);

/* pfi_http_request_header_n — as pfi_http_request_header, with the value's length as sent
 * (*len; a NUL inside makes it longer than strlen). false when absent. */
bool pfi_http_request_header_n(const pfi_http_request *rq, const char *name, const char **value,
                               size_t *len);

/*
 * pfi_http_address_parse — "HOST:PORT" or "[V6]:PORT" (numeric host, may be empty for any
 * address; numeric port) into *ss, ready for pfi_http_server_config.addr. Returns false when
 * the text is not of that form (nothing resolved by name).
 */
bool pfi_http_address_parse(const char *text, struct sockaddr_storage *ss);

#ifdef __cplusplus
}
#endif

#endif
