/*
 * The agent's answers without a JSON tree: GET /v1/state and PUT /v1/caps bodies read in
 * one pass straight into the caller's structs (pfi/agent_api.h), for the controller's hot
 * path (at 1 000 agents jansson took ≈ 44 µs of the ≈ 100 µs of CPU an agent's state cost
 * each period: a hash table per object, an allocation per value).
 *
 * A fast path only: it accepts a subset of what jansson accepts — strings without escapes,
 * control or non-ASCII bytes, objects of at most CTL_FAST_KEYS keys, nesting at most
 * CTL_FAST_DEPTH deep — and anything else (every malformed body among them) returns false,
 * leaving the answer to the jansson parser, which gives the error. When it returns true the
 * result is exactly the jansson parser's (tests/test_agentapi_fast.c checks both on the
 * same bodies): duplicate keys refused, every type and range checked as there, numbers
 * converted as jansson does (integers by strtoll, reals by strtod, or exactly when the
 * digits allow it).
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl_internal.h"
#include "pfi/agent_api.h"

#define CTL_FAST_KEYS 32  /* keys one object may have */
#define CTL_FAST_DEPTH 16 /* nesting of skipped values */

typedef struct scan {
    const char *p, *end;
} scan;

typedef enum vkind { V_NULL, V_BOOL, V_INT, V_REAL, V_STR, V_OBJ, V_ARR } vkind;

/* A scalar value just read (V_OBJ / V_ARR: only peeked, nothing consumed). */
typedef struct val {
    vkind kind;
    bool b;
    long long i;
    double d;      /* V_INT: (double)i, as json_number_value gives */
    const char *s; /* V_STR: the bytes between the quotes (borrowed) */
    size_t n;
} val;

/* The keys of one object seen so far (duplicates refused, as JSON_REJECT_DUPLICATES). */
typedef struct keyset {
    const char *k[CTL_FAST_KEYS];
    size_t n[CTL_FAST_KEYS], count;
} keyset;

static void ws(scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool lit(scan *s, char c)
{
    ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* A string of printable ASCII without escapes (anything else: false, for jansson). */
static bool str(scan *s, const char **b, size_t *n)
{
    ws(s);
    if (s->p >= s->end || *s->p != '"')
        return false;
    const char *q = ++s->p;
    while (q < s->end && *q != '"') {
        unsigned char c = (unsigned char)*q;
        if (c < 0x20 || c >= 0x80 || c == '\\')
            return false;
        q++;
    }
    if (q >= s->end)
        return false;
    *b = s->p;
    *n = (size_t)(q - s->p);
    s->p = q + 1;
    return true;
}

static bool is_digit(const scan *s, const char *q)
{
    return q < s->end && *q >= '0' && *q <= '9';
}

/* 10^k, exactly representable for k <= 22. */
static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* m × 10^e correctly rounded to a double (*d), for m < 2^64 (every digit kept: at most 19)
 * and |e| <= 27, without strtod — pfid writes its readings with 17 significant digits, which
 * the one-operation path above cannot take (m > 2^53), and strtod's exact path for them was
 * 5 % of the controller's CPU at 1 000 agents. With a long double of 64 bits or more, m and
 * 10^|e| (5^27 < 2^63) are exact there and r = m ⊙ 10^|e| is one correctly rounded operation
 * to 64 bits; rounding r to a double gives the double nearest the exact value x unless a
 * midpoint between two doubles lies between x and r (inclusive). A midpoint has 54
 * significant bits, so it is itself a long double: strictly between x and r it would be
 * nearer x than r, which is x's nearest long double; so only r on a midpoint is ambiguous,
 * and then false (strtod decides). False too without such a long double. */
static bool wide_exact(uint64_t m, int e, double *d)
{
#if LDBL_MANT_DIG >= 64
    static const long double p10[] = {1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,
                                      1e7L,  1e8L,  1e9L,  1e10L, 1e11L, 1e12L, 1e13L,
                                      1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L, 1e20L,
                                      1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};
    if (m == 0) {
        *d = 0;
        return true;
    }
    long double r = e < 0 ? (long double)m / p10[-e] : (long double)m * p10[e];
    double x = (double)r;
    if ((long double)x != r) {
        /* the double on r's other side, and the midpoint between them (exact in long
         * double: an adjacent double's distance halved, added) */
        double y = nextafter(x, r > (long double)x ? INFINITY : -INFINITY);
        long double mid = (long double)x + ((long double)y - (long double)x) / 2;
        if (mid == r || !isfinite(y))
            return false;
    }
    *d = x;
    return true;
#else
    (void)m;
    (void)e;
    (void)d;
    return false;
#endif
}

/* A JSON number (RFC 8259 grammar, as jansson's lexer takes it): an integer (no fraction, no
 * exponent) by strtoll, out of range false (jansson: "too big integer"); a real exactly — at
 * most 15 significant digits and a power of ten within 10^±22 make one correctly rounded
 * operation on exact operands, strtod's own result — else by strtod, an overflow false. */
static bool number(scan *s, val *v)
{
    const char *q = s->p, *st = q;
    bool real = false, neg = false;
    uint64_t m = 0;
    int nd = 0, e10 = 0;
    if (q < s->end && *q == '-') {
        neg = true;
        q++;
    }
    if (!is_digit(s, q))
        return false;
    if (*q == '0')
        q++;
    else
        for (; is_digit(s, q); q++)
            if (nd > 0 || *q != '0') {
                if (nd < 19)
                    m = m * 10 + (uint64_t)(*q - '0');
                else
                    e10++;
                nd++;
            }
    if (q < s->end && *q == '.') {
        real = true;
        q++;
        if (!is_digit(s, q))
            return false;
        for (; is_digit(s, q); q++)
            if (nd > 0 || *q != '0') {
                if (nd < 19) {
                    m = m * 10 + (uint64_t)(*q - '0');
                    e10--;
                }
                nd++;
            } else {
                e10--;
            }
    }
    int ex = 0;
    if (q < s->end && (*q == 'e' || *q == 'E')) {
        real = true;
        q++;
        bool eneg = false;
        if (q < s->end && (*q == '+' || *q == '-'))
            eneg = *q++ == '-';
        if (!is_digit(s, q))
            return false;
        for (; is_digit(s, q); q++)
            if (ex < 100000)
                ex = ex * 10 + (*q - '0');
        if (eneg)
            ex = -ex;
    }
    size_t len = (size_t)(q - st);
    char buf[64];
    if (len >= sizeof buf)
        return false;
    memcpy(buf, st, len);
    buf[len] = '\0';
    char *endp;
    if (!real) {
        errno = 0;
        long long x = strtoll(buf, &endp, 10);
        if (errno == ERANGE || endp != buf + len)
            return false;
        v->kind = V_INT;
        v->i = x;
        v->d = (double)x;
    } else {
        int e = e10 + ex;
        double d;
        if (nd <= 15 && e >= -22 && e <= 22) {
            d = (double)m; /* m < 10^15 < 2^53: exact */
            d = e < 0 ? d / pow10_exact[-e] : d * pow10_exact[e];
            if (neg)
                d = -d;
        } else if (nd <= 19 && e >= -27 && e <= 27 && wide_exact(m, e, &d)) {
            if (neg)
                d = -d;
        } else {
            errno = 0;
            d = strtod(buf, &endp);
            if (endp != buf + len || ((d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE))
                return false;
        }
        v->kind = V_REAL;
        v->d = d;
    }
    s->p = q;
    return true;
}

static bool word(scan *s, const char *w, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0)
        return false;
    s->p += n;
    return true;
}

/* The next value: a scalar read into *v, or an object or array peeked (V_OBJ, V_ARR). */
static bool value(scan *s, val *v)
{
    ws(s);
    if (s->p >= s->end)
        return false;
    switch (*s->p) {
    case '{':
        v->kind = V_OBJ;
        return true;
    case '[':
        v->kind = V_ARR;
        return true;
    case '"':
        v->kind = V_STR;
        return str(s, &v->s, &v->n);
    case 'n':
        v->kind = V_NULL;
        return word(s, "null", 4);
    case 't':
        v->kind = V_BOOL;
        v->b = true;
        return word(s, "true", 4);
    case 'f':
        v->kind = V_BOOL;
        v->b = false;
        return word(s, "false", 5);
    default:
        return number(s, v);
    }
}

/* Note key [b, b+n) in ks; false when it was there already or ks is full. */
static bool key_new(keyset *ks, const char *b, size_t n)
{
    for (size_t i = 0; i < ks->count; i++)
        if (ks->n[i] == n && memcmp(ks->k[i], b, n) == 0)
            return false;
    if (ks->count == CTL_FAST_KEYS)
        return false;
    ks->k[ks->count] = b;
    ks->n[ks->count++] = n;
    return true;
}

static bool key_is(const char *b, size_t n, const char *name)
{
    return strlen(name) == n && memcmp(b, name, n) == 0;
}

/* Object and array iteration. first: the opening bracket consumed and whether it is empty. */
static bool open_(scan *s, char c, char close, bool *empty)
{
    if (!lit(s, c))
        return false;
    *empty = lit(s, close);
    return true;
}

/* After a member or element: true and *more when a comma follows, true and !*more at the
 * closing bracket. */
static bool next_(scan *s, char close, bool *more)
{
    if (lit(s, ',')) {
        *more = true;
        return true;
    }
    *more = false;
    return lit(s, close);
}

/* The next key of an object (duplicates refused) and its colon. */
static bool member(scan *s, keyset *ks, const char **k, size_t *kn)
{
    return str(s, k, kn) && key_new(ks, *k, *kn) && lit(s, ':');
}

static bool skip(scan *s, int depth);

/* Skip the value v was peeked as (an object or array: the whole of it). */
static bool skip_peeked(scan *s, const val *v, int depth)
{
    if (v->kind != V_OBJ && v->kind != V_ARR)
        return true;
    if (depth >= CTL_FAST_DEPTH)
        return false;
    bool obj = v->kind == V_OBJ, empty, more = true;
    if (!open_(s, obj ? '{' : '[', obj ? '}' : ']', &empty))
        return false;
    if (empty)
        return true;
    keyset ks = {.count = 0};
    while (more) {
        const char *k;
        size_t kn;
        if (obj && !member(s, &ks, &k, &kn))
            return false;
        if (!skip(s, depth + 1) || !next_(s, obj ? '}' : ']', &more))
            return false;
    }
    return true;
}

static bool skip(scan *s, int depth)
{
    val v;
    return value(s, &v) && skip_peeked(s, &v, depth);
}

/* num_or_null's rule: a number (finite) or null (NaN). */
static bool num_or_null(const val *v, double *out)
{
    if (v->kind == V_NULL) {
        *out = NAN;
        return true;
    }
    if (v->kind != V_INT && v->kind != V_REAL)
        return false;
    *out = v->d;
    return isfinite(*out);
}

/* str_or_null's rule: a string that fits dst[n], or null (""). */
static bool str_or_null(const val *v, char *dst, size_t n)
{
    if (v->kind == V_NULL) {
        dst[0] = '\0';
        return true;
    }
    if (v->kind != V_STR || v->n >= n)
        return false;
    memcpy(dst, v->s, v->n);
    dst[v->n] = '\0';
    return true;
}

/* A numeric member: the key matched one of the names, its value read into the slot. */
typedef struct numkey {
    const char *name;
    double *slot;
} numkey;

static int num_member(const numkey *nk, size_t n, const char *k, size_t kn)
{
    for (size_t i = 0; i < n; i++)
        if (key_is(k, kn, nk[i].name))
            return (int)i;
    return -1;
}

/* One element of "gpus" in a state. */
static bool state_gpu(scan *s, pfi_agent_gpu *o)
{
    bool empty, more = true, have_ix = false, have_uuid = false;
    if (!open_(s, '{', '}', &empty) || empty)
        return false;
    o->job[0] = '\0';
    numkey nk[] = {{"power_w", &o->power_w},
                   {"energy_j", &o->energy_j},
                   {"cap_w", &o->cap_w},
                   {"enforced_cap_w", &o->enforced_cap_w},
                   {"min_cap_w", &o->min_cap_w},
                   {"max_cap_w", &o->max_cap_w},
                   {"default_cap_w", &o->default_cap_w},
                   {"original_cap_w", &o->original_cap_w}};
    for (size_t i = 0; i < sizeof nk / sizeof *nk; i++)
        *nk[i].slot = NAN;
    keyset ks = {.count = 0};
    while (more) {
        const char *k;
        size_t kn;
        val v;
        if (!member(s, &ks, &k, &kn) || !value(s, &v))
            return false;
        int ni = num_member(nk, sizeof nk / sizeof *nk, k, kn);
        if (ni >= 0) {
            if (!num_or_null(&v, nk[ni].slot))
                return false;
        } else if (key_is(k, kn, "index")) {
            if (v.kind != V_INT || v.i < 0 || v.i > 1000000)
                return false;
            o->index = (int)v.i;
            have_ix = true;
        } else if (key_is(k, kn, "uuid")) {
            if (!str_or_null(&v, o->uuid, sizeof o->uuid) || o->uuid[0] == '\0')
                return false;
            have_uuid = true;
        } else if (key_is(k, kn, "job")) {
            if (!str_or_null(&v, o->job, sizeof o->job))
                return false;
        } else if (!skip_peeked(s, &v, 1)) {
            return false;
        }
        if (!next_(s, '}', &more))
            return false;
    }
    return have_ix && have_uuid;
}

/* One element of "jobs" in a state. */
static bool state_job(scan *s, pfi_agent_job *o)
{
    bool empty, more = true, have_id = false;
    if (!open_(s, '{', '}', &empty) || empty)
        return false;
    o->job_class[0] = '\0';
    o->power_w = o->tput_tok_s = NAN;
    o->n_gpus = 0;
    keyset ks = {.count = 0};
    while (more) {
        const char *k;
        size_t kn;
        val v;
        if (!member(s, &ks, &k, &kn) || !value(s, &v))
            return false;
        if (key_is(k, kn, "id")) {
            if (!str_or_null(&v, o->id, sizeof o->id) || o->id[0] == '\0')
                return false;
            have_id = true;
        } else if (key_is(k, kn, "class")) {
            if (!str_or_null(&v, o->job_class, sizeof o->job_class))
                return false;
        } else if (key_is(k, kn, "power_w")) {
            if (!num_or_null(&v, &o->power_w))
                return false;
        } else if (key_is(k, kn, "throughput_tok_s")) {
            if (!num_or_null(&v, &o->tput_tok_s))
                return false;
        } else if (key_is(k, kn, "gpus")) {
            bool e2, m2 = true;
            if (v.kind != V_ARR || !open_(s, '[', ']', &e2))
                return false;
            for (size_t n = 0; !e2 && m2; n++) {
                if (!skip(s, 2) || !next_(s, ']', &m2))
                    return false;
                o->n_gpus = n + 1;
            }
        } else if (!skip_peeked(s, &v, 1)) {
            return false;
        }
        if (!next_(s, '}', &more))
            return false;
    }
    return have_id;
}

/* "node": {"power_w": W|null, "non_gpu_w": W|null, ...}, each >= 0 or null. */
static bool state_node(scan *s, pfi_agent_state *out)
{
    bool empty, more = true;
    if (!open_(s, '{', '}', &empty))
        return false;
    keyset ks = {.count = 0};
    while (!empty && more) {
        const char *k;
        size_t kn;
        val v;
        if (!member(s, &ks, &k, &kn) || !value(s, &v))
            return false;
        double *slot = key_is(k, kn, "power_w")     ? &out->node_power_w
                       : key_is(k, kn, "non_gpu_w") ? &out->node_non_gpu_w
                                                    : NULL;
        if (slot != NULL ? !num_or_null(&v, slot) || !(isnan(*slot) || *slot >= 0)
                         : !skip_peeked(s, &v, 2))
            return false;
        if (!next_(s, '}', &more))
            return false;
    }
    return true;
}

bool ctl_state_parse_fast(const char *text, size_t len, pfi_agent_state *out)
{
    scan s = {.p = text, .end = text + len};
    bool empty, more = true, have_host = false, have_gpus = false;
    out->hostname[0] = '\0';
    out->n_gpus = out->n_jobs = 0;
    out->sampled_at_s = out->sampling_interval_s = NAN;
    out->node_power_w = out->node_non_gpu_w = NAN;
    if (!open_(&s, '{', '}', &empty) || empty)
        return false;
    keyset ks = {.count = 0};
    while (more) {
        const char *k;
        size_t kn;
        val v;
        if (!member(&s, &ks, &k, &kn) || !value(&s, &v))
            return false;
        if (key_is(k, kn, "hostname")) {
            if (!str_or_null(&v, out->hostname, sizeof out->hostname))
                return false;
            have_host = true;
        } else if (key_is(k, kn, "sampled_at_s")) {
            if (!num_or_null(&v, &out->sampled_at_s))
                return false;
        } else if (key_is(k, kn, "sampling_interval_s")) {
            if (!num_or_null(&v, &out->sampling_interval_s))
                return false;
        } else if (key_is(k, kn, "node")) {
            if (v.kind != V_NULL && (v.kind != V_OBJ || !state_node(&s, out)))
                return false;
        } else if (key_is(k, kn, "gpus") || key_is(k, kn, "jobs")) {
            bool gpus = k[0] == 'g', e2, m2 = true;
            if (v.kind != V_ARR || !open_(&s, '[', ']', &e2))
                return false;
            for (size_t n = 0; !e2 && m2; n++) {
                size_t max = gpus ? PFI_CTL_MAX_GPUS : PFI_CTL_MAX_JOBS;
                if (n == max)
                    return false; /* jansson's parser: PFI_ERR_LIMIT */
                if (!(gpus ? state_gpu(&s, &out->gpus[n]) : state_job(&s, &out->jobs[n])) ||
                    !next_(&s, ']', &m2))
                    return false;
                if (gpus)
                    out->n_gpus = n + 1;
                else
                    out->n_jobs = n + 1;
            }
            have_gpus = have_gpus || gpus;
        } else if (!skip_peeked(&s, &v, 1)) {
            return false;
        }
        if (!next_(&s, '}', &more))
            return false;
    }
    ws(&s);
    return s.p == s.end && have_host && have_gpus;
}

bool ctl_caps_parse_fast(const char *text, size_t len, pfi_agent_cap_reply *out, size_t max,
                         size_t *n, bool *applied)
{
    scan s = {.p = text, .end = text + len};
    bool empty, more = true, have_gpus = false;
    *n = 0;
    *applied = true;
    if (!open_(&s, '{', '}', &empty) || empty)
        return false;
    keyset ks = {.count = 0};
    while (more) {
        const char *k;
        size_t kn;
        val v;
        if (!member(&s, &ks, &k, &kn) || !value(&s, &v))
            return false;
        if (key_is(k, kn, "applied")) {
            if (v.kind != V_BOOL)
                return false;
            *applied = v.b;
        } else if (key_is(k, kn, "gpus")) {
            bool e2, m2 = true;
            if (v.kind != V_ARR || !open_(&s, '[', ']', &e2))
                return false;
            for (size_t i = 0; !e2 && m2; i++) {
                bool e3, m3 = true, have_uuid = false;
                if (i == max || !open_(&s, '{', '}', &e3) || e3)
                    return false;
                pfi_agent_cap_reply *o = &out[i];
                o->requested_w = o->enforced_w = NAN;
                keyset gk = {.count = 0};
                while (m3) {
                    const char *k2;
                    size_t kn2;
                    val v2;
                    if (!member(&s, &gk, &k2, &kn2) || !value(&s, &v2))
                        return false;
                    if (key_is(k2, kn2, "uuid")) {
                        if (!str_or_null(&v2, o->uuid, sizeof o->uuid))
                            return false;
                        have_uuid = true;
                    } else if (key_is(k2, kn2, "requested_cap_w")) {
                        if (!num_or_null(&v2, &o->requested_w))
                            return false;
                    } else if (key_is(k2, kn2, "enforced_cap_w")) {
                        if (!num_or_null(&v2, &o->enforced_w))
                            return false;
                    } else if (!skip_peeked(&s, &v2, 3)) {
                        return false;
                    }
                    if (!next_(&s, '}', &m3))
                        return false;
                }
                if (!have_uuid || !next_(&s, ']', &m2))
                    return false;
                *n = i + 1;
            }
            have_gpus = true;
        } else if (!skip_peeked(&s, &v, 1)) {
            return false;
        }
        if (!next_(&s, '}', &more))
            return false;
    }
    ws(&s);
    return s.p == s.end && have_gpus;
}
