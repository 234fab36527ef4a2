/*
 * Strict parsers of the cap API's request bodies (jansson, JSON_REJECT_DUPLICATES).
 */
#include "request.h"

#include "pfi/topology.h" /* PFI_TOPO_MAX_W: the watt bound every command shares */

/* The longest lease (s) a request may ask for: about 31 years; above, a typo or an overflow
 * (a node's own lease_max usually refuses far less). */
#define PFID_MAX_LEASE_S 1e9

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool bad(char *msg, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool bad(char *msg, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, n, fmt, ap);
    va_end(ap);
    return false;
}

void pfid_caps_request_clear(pfid_caps_request *r)
{
    if (r == NULL)
        return;
    free(r->items);
    memset(r, 0, sizeof *r);
}

static json_t *load(const char *body, size_t len, char *msg, size_t msg_len)
{
    json_error_t err;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
    if (root == NULL) {
        bad(msg, msg_len, "malformed JSON at line %d, column %d: %s", err.line, err.column,
            err.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        bad(msg, msg_len, "the body must be a JSON object");
        return NULL;
    }
    return root;
}

/* A JSON number (integer or real) as a finite double. */
static bool number(json_t *v, double *out)
{
    if (json_is_integer(v))
        *out = (double)json_integer_value(v);
    else if (json_is_real(v))
        *out = json_real_value(v);
    else
        return false;
    return isfinite(*out);
}

/* A JSON string without NUL that is a valid id (or, for uuid, printable and short). */
static bool id_string(json_t *v, bool uuid, char *out)
{
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n != strlen(s) || n == 0 || n >= PFID_ID_MAX)
        return false;
    if (uuid) {
        for (size_t k = 0; k < n; k++)
            if ((unsigned char)s[k] < 0x21 || (unsigned char)s[k] > 0x7e)
                return false;
    } else if (!pfid_valid_id(s)) {
        return false;
    }
    memcpy(out, s, n + 1);
    return true;
}

bool pfid_caps_request_parse(const char *body, size_t len, pfid_caps_request *out, char *msg,
                             size_t msg_len)
{
    memset(out, 0, sizeof *out);
    json_t *root = load(body, len, msg, msg_len);
    if (root == NULL)
        return false;
    bool ok = false;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        if (strcmp(key, "request_id") != 0 && strcmp(key, "lease_s") != 0 &&
            strcmp(key, "caps") != 0 && strcmp(key, "controller") != 0 &&
            strcmp(key, "epoch") != 0) {
            bad(msg, msg_len,
                "unknown member '%.64s' (want request_id, lease_s, caps, controller, epoch)", key);
            goto done;
        }
    }
    out->epoch = NAN;
    v = json_object_get(root, "controller");
    if (v != NULL && !id_string(v, false, out->controller)) {
        bad(msg, msg_len, "controller must be a string of 1-127 characters of [A-Za-z0-9._:@+=-]");
        goto done;
    }
    v = json_object_get(root, "epoch");
    if (v != NULL && (!number(v, &out->epoch) || !(out->epoch >= 0))) {
        bad(msg, msg_len, "epoch must be a number >= 0");
        goto done;
    }
    v = json_object_get(root, "request_id");
    if (v == NULL) {
        bad(msg, msg_len, "request_id is required");
        goto done;
    }
    if (!id_string(v, false, out->request_id)) {
        bad(msg, msg_len, "request_id must be a string of 1-127 characters of [A-Za-z0-9._:@+=-]");
        goto done;
    }
    v = json_object_get(root, "lease_s");
    if (v == NULL) {
        bad(msg, msg_len, "lease_s is required");
        goto done;
    }
    if (!number(v, &out->lease_s) || !(out->lease_s > 0 && out->lease_s <= PFID_MAX_LEASE_S)) {
        bad(msg, msg_len, "lease_s must be a number of seconds > 0 and <= %g", PFID_MAX_LEASE_S);
        goto done;
    }
    json_t *caps = json_object_get(root, "caps");
    if (caps == NULL) {
        bad(msg, msg_len, "caps is required");
        goto done;
    }
    if (!json_is_array(caps) || json_array_size(caps) == 0) {
        bad(msg, msg_len, "caps must be a non-empty array");
        goto done;
    }
    if (json_array_size(caps) > PFID_CAPS_MAX_ITEMS) {
        bad(msg, msg_len, "caps has more than %d entries", PFID_CAPS_MAX_ITEMS);
        goto done;
    }
    out->n = json_array_size(caps);
    out->items = calloc(out->n, sizeof *out->items);
    if (out->items == NULL) {
        bad(msg, msg_len, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < out->n; i++) {
        json_t *c = json_array_get(caps, i);
        pfid_cap_item *it = &out->items[i];
        if (!json_is_object(c)) {
            bad(msg, msg_len, "caps[%zu] must be an object", i);
            goto done;
        }
        json_t *uuid = json_object_get(c, "uuid"), *job = json_object_get(c, "job");
        json_t *cap = json_object_get(c, "cap_w");
        if (json_object_size(c) != 2 || cap == NULL || (uuid == NULL) == (job == NULL)) {
            bad(msg, msg_len,
                "caps[%zu] must be {\"uuid\": ..., \"cap_w\": ...} or "
                "{\"job\": ..., \"cap_w\": ...}",
                i);
            goto done;
        }
        it->by_job = job != NULL;
        if (!id_string(it->by_job ? job : uuid, !it->by_job, it->id)) {
            bad(msg, msg_len, "caps[%zu]: %s must be a string of 1-127 printable characters%s", i,
                it->by_job ? "job" : "uuid", it->by_job ? " of [A-Za-z0-9._:@+=-]" : "");
            goto done;
        }
        if (!number(cap, &it->cap_w) || !(it->cap_w > 0 && it->cap_w <= PFI_TOPO_MAX_W)) {
            bad(msg, msg_len, "caps[%zu]: cap_w must be a number of watts > 0 and <= %g", i,
                PFI_TOPO_MAX_W);
            goto done;
        }
    }
    ok = true;
done:
    json_decref(root);
    if (!ok)
        pfid_caps_request_clear(out);
    return ok;
}

bool pfid_throughput_parse(const char *body, size_t len, double *tok_s, char *msg, size_t msg_len)
{
    json_t *root = load(body, len, msg, msg_len);
    if (root == NULL)
        return false;
    json_t *v = json_object_get(root, "throughput_tok_s");
    bool ok = json_object_size(root) == 1 && v != NULL;
    if (!ok)
        bad(msg, msg_len, "the body must be {\"throughput_tok_s\": number}");
    else if (!number(v, tok_s) || *tok_s < 0)
        ok = bad(msg, msg_len, "throughput_tok_s must be a number >= 0");
    json_decref(root);
    return ok;
}

bool pfid_clock_parse(const char *body, size_t len, double *t_s, double *unix_s, char *msg,
                      size_t msg_len)
{
    json_t *root = load(body, len, msg, msg_len);
    if (root == NULL)
        return false;
    json_t *t = json_object_get(root, "t_s"), *u = json_object_get(root, "unix_s");
    bool ok = t != NULL && json_object_size(root) == (u != NULL ? 2u : 1u);
    *unix_s = NAN;
    if (!ok)
        bad(msg, msg_len,
            "the body must be {\"t_s\": number} or {\"t_s\": number, \"unix_s\": "
            "number}");
    else if (!number(t, t_s) || !(*t_s >= 0 && *t_s <= PFID_CLOCK_MAX_T_S))
        ok = bad(msg, msg_len, "t_s must be a number of seconds in [0, 1e9]");
    else if (u != NULL &&
             (!number(u, unix_s) || !(*unix_s >= 1 && *unix_s <= PFID_CLOCK_MAX_UNIX_S)))
        ok = bad(msg, msg_len, "unix_s must be a Unix time in seconds in [1, 1e11]");
    json_decref(root);
    return ok;
}
