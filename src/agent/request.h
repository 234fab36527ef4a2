/*
 * Request bodies of the cap API (docs/agent-api.md), parsed strictly: JSON with duplicate
 * keys rejected, every member's type checked, unknown members refused, sizes bounded.
 */
#ifndef PFID_REQUEST_H
#define PFID_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define PFID_CAPS_MAX_ITEMS 1024

typedef struct pfid_cap_item {
    bool by_job; /* true: id is a job id; false: id is a GPU UUID */
    char id[PFID_ID_MAX];
    double cap_w; /* finite, > 0 (range is checked against the device later) */
} pfid_cap_item;

typedef struct pfid_caps_request {
    char request_id[PFID_ID_MAX];
    double lease_s;               /* finite, > 0 */
    char controller[PFID_ID_MAX]; /* the lease holder's id ("" none given: fencing off) */
    double epoch;                 /* its epoch (NaN none given) */
    pfid_cap_item *items;         /* owned; [n] */
    size_t n;
} pfid_caps_request;

/*
 * pfid_caps_request_parse — PUT /v1/caps body[0..len) into *out (zeroed first; clear after
 * use). Returns true, or false with msg[msg_len] holding one sentence for a 400 ("caps[2]:
 * cap_w must be a number"). Accepts exactly {"request_id": id, "lease_s": number > 0,
 * "caps": [ {"uuid": s, "cap_w": number} | {"job": id, "cap_w": number}, ... ]} with 1 to
 * PFID_CAPS_MAX_ITEMS entries, and optionally "controller": id and "epoch": number >= 0
 * (fencing, docs/agent-api.md).
 */
bool pfid_caps_request_parse(const char *body, size_t len, pfid_caps_request *out, char *msg,
                             size_t msg_len);

/* pfid_caps_request_clear — free and zero. NULL: no-op. */
void pfid_caps_request_clear(pfid_caps_request *r);

/*
 * pfid_throughput_parse — POST /v1/jobs/{id}/throughput body {"throughput_tok_s": number
 * >= 0} into *tok_s. false with msg as above.
 */
bool pfid_throughput_parse(const char *body, size_t len, double *tok_s, char *msg, size_t msg_len);

/* The emulated clock's bounds (POST /v1/clock): t_s in [0, 1e9] s (31 years of replay),
 * unix_s in [1, 1e11] s (to the year 5138); outside them the body is refused (400). */
#define PFID_CLOCK_MAX_T_S 1e9
#define PFID_CLOCK_MAX_UNIX_S 1e11

/*
 * pfid_clock_parse — POST /v1/clock body {"t_s": number in [0, 1e9]} or {"t_s": ..., "unix_s":
 * number in [1, 1e11]} (the emulated clock's time, s, and the Unix time it stands for) into *t_s
 * and *unix_s (NaN when not given). false with msg as above.
 */
bool pfid_clock_parse(const char *body, size_t len, double *t_s, double *unix_s, char *msg,
                      size_t msg_len);

#endif
