/*
 * The controller's fast readers of the agent's answers (src/lib/control/agentapi_fast.c)
 * against the jansson parsers they stand in front of: on pfid-shaped GET /v1/state and
 * PUT /v1/caps bodies and on every single-byte deletion, replacement and insertion of them
 * (and crafted cases: duplicate keys, number edges, escapes), whenever the fast reader
 * accepts a body the jansson parser accepts it too with the same result, bit for bit; and
 * the fast reader takes the bodies pfid writes (else it would never be used).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl_internal.h"
#include "pfi/agent_api.h"

static int failures;
static size_t fast_ok, cases;

#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            failures++;                                                                            \
            if (failures < 20) {                                                                   \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* Bit for bit, NaN equal to NaN. */
static bool same(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

static pfi_agent_state st_fast, st_json;

static bool state_same(const pfi_agent_state *a, const pfi_agent_state *b)
{
    if (strcmp(a->hostname, b->hostname) != 0 || !same(a->sampled_at_s, b->sampled_at_s) ||
        !same(a->sampling_interval_s, b->sampling_interval_s) ||
        !same(a->node_power_w, b->node_power_w) || !same(a->node_non_gpu_w, b->node_non_gpu_w) ||
        a->n_gpus != b->n_gpus || a->n_jobs != b->n_jobs)
        return false;
    for (size_t i = 0; i < a->n_gpus; i++) {
        const pfi_agent_gpu *x = &a->gpus[i], *y = &b->gpus[i];
        if (x->index != y->index || strcmp(x->uuid, y->uuid) != 0 || strcmp(x->job, y->job) != 0 ||
            !same(x->power_w, y->power_w) || !same(x->energy_j, y->energy_j) ||
            !same(x->cap_w, y->cap_w) || !same(x->enforced_cap_w, y->enforced_cap_w) ||
            !same(x->min_cap_w, y->min_cap_w) || !same(x->max_cap_w, y->max_cap_w) ||
            !same(x->default_cap_w, y->default_cap_w) ||
            !same(x->original_cap_w, y->original_cap_w))
            return false;
    }
    for (size_t i = 0; i < a->n_jobs; i++) {
        const pfi_agent_job *x = &a->jobs[i], *y = &b->jobs[i];
        if (strcmp(x->id, y->id) != 0 || strcmp(x->job_class, y->job_class) != 0 ||
            !same(x->power_w, y->power_w) || !same(x->tput_tok_s, y->tput_tok_s) ||
            x->n_gpus != y->n_gpus)
            return false;
    }
    return true;
}

/* One body through both state readers: returns whether the fast one took it. */
static bool check_state(const char *t, size_t n)
{
    pfi_diag d;
    cases++;
    bool f = ctl_state_parse_fast(t, n, &st_fast);
    pfi_error e = ctl_state_parse_json(t, n, &st_json, &d);
    if (f) {
        fast_ok++;
        CHECK(e == PFI_OK, "state: fast took a body jansson refuses (%s): %.*s", d.message, (int)n,
              t);
        CHECK(e != PFI_OK || state_same(&st_fast, &st_json), "state: results differ: %.*s", (int)n,
              t);
    }
    /* the public parser gives the jansson parser's verdict either way */
    pfi_error p = pfi_agent_state_parse(t, n, &st_fast, &d);
    CHECK(p == e, "state: pfi_agent_state_parse %d, jansson %d: %.*s", p, e, (int)n, t);
    return f;
}

static bool check_caps(const char *t, size_t n)
{
    pfi_agent_cap_reply a[4], b[4];
    size_t na = 0, nb = 0;
    bool apa = false, apb = false;
    pfi_diag d;
    cases++;
    bool f = ctl_caps_parse_fast(t, n, a, 4, &na, &apa);
    pfi_error e = ctl_caps_parse_json(t, n, b, 4, &nb, &apb, &d);
    if (f) {
        fast_ok++;
        CHECK(e == PFI_OK, "caps: fast took a body jansson refuses (%s): %.*s", d.message, (int)n,
              t);
        bool eq = e == PFI_OK && na == nb && apa == apb;
        for (size_t i = 0; eq && i < na; i++)
            eq = strcmp(a[i].uuid, b[i].uuid) == 0 && same(a[i].requested_w, b[i].requested_w) &&
                 same(a[i].enforced_w, b[i].enforced_w);
        CHECK(eq, "caps: results differ: %.*s", (int)n, t);
    }
    return f;
}

/* Every one-byte deletion, replacement and insertion of body through check. */
static void mutate(const char *body, bool (*check)(const char *, size_t))
{
    static const char alphabet[] = "\"{}[],:0159-+.eE nulltruefx\\\t";
    size_t n = strlen(body);
    char *buf = malloc(n + 2);
    for (size_t i = 0; i <= n; i++) {
        if (i < n) { /* deletion */
            memcpy(buf, body, i);
            memcpy(buf + i, body + i + 1, n - i - 1);
            check(buf, n - 1);
        }
        for (const char *c = alphabet; *c; c++) {
            if (i < n && body[i] != *c) { /* replacement */
                memcpy(buf, body, n);
                buf[i] = *c;
                check(buf, n);
            }
            memcpy(buf, body, i); /* insertion */
            buf[i] = *c;
            memcpy(buf + i + 1, body + i, n - i);
            check(buf, n + 1);
        }
        if (i < n) { /* a non-ASCII byte and a NUL */
            memcpy(buf, body, n);
            buf[i] = (char)0xc3;
            check(buf, n);
            buf[i] = '\0';
            check(buf, n);
        }
    }
    free(buf);
}

/* pfid's answer as it writes it (src/agent/state.c, caps.c), two GPUs, one job. */
static const char state_body[] =
    "{\"hostname\":\"n1\",\"sampled_at_s\":1796557892.8543384,\"sampling_interval_s\":1,"
    "\"node\":{\"power_w\":null,"
    "\"non_gpu_w\":412.5,\"source\":null,\"error\":null},\"gpus\":[{\"index\":0,\"uuid\":\"EMU-0\","
    "\"name\":\"Emulated GPU (DESIGN 7 model, alpha 0.50)\",\"power_w\":642.93285206559142,"
    "\"energy_j\":189106.70101205053,\"cap_w\":700.0,\"enforced_cap_w\":700.0,\"min_cap_w\":200.0,"
    "\"max_cap_w\":700.0,\"default_cap_w\":700.0,\"original_cap_w\":700.0,\"job\":\"a1\"},"
    "{\"index\":1,\"uuid\":\"EMU-1\",\"power_w\":6.5e2,\"energy_j\":null,\"cap_w\":1e-3,"
    "\"enforced_cap_w\":-0.0,\"job\":null}],\"jobs\":[{\"id\":\"a1\",\"gpus\":[\"EMU-0\",\"EMU-1\"]"
    ","
    "\"power_w\":2618.67760045833,\"throughput_tok_s\":8964,\"class\":\"moe-ft\"}],"
    "\"lease\":{\"request_id\":null,\"expires_in_s\":null,\"policy\":\"hold\"}}";

static const char caps_body[] =
    "{\"request_id\":\"pfi-ctl-1-2-3\",\"applied\":true,\"gpus\":[{\"uuid\":\"EMU-0\","
    "\"requested_cap_w\":450.0,\"enforced_cap_w\":450.0},{\"uuid\":\"EMU-1\","
    "\"requested_cap_w\":300.5,\"enforced_cap_w\":null}]}";

int main(void)
{
    /* pfid's bodies take the fast path */
    CHECK(check_state(state_body, strlen(state_body)), "state: pfid's body not taken");
    CHECK(check_caps(caps_body, strlen(caps_body)), "caps: pfid's body not taken");
    size_t before = fast_ok;
    mutate(state_body, check_state);
    mutate(caps_body, check_caps);
    /* most mutations break the body; whitespace, digits and the like do not */
    CHECK(fast_ok - before > 1000, "only %zu mutated bodies took the fast path", fast_ok - before);

    /* crafted: what the fast path must leave to jansson, or agree with it on */
    static const char *crafted[] = {
        "{\"hostname\":\"h\",\"hostname\":\"h\",\"gpus\":[]}",      /* duplicate key */
        "{\"hostname\":\"h\",\"gpus\":[],\"x\":{\"a\":1,\"a\":2}}", /* duplicate, nested */
        "{\"hostname\":\"h\",\"gpus\":[{\"index\":0,\"uuid\":\"u\",\"uuid\":\"v\"}]}",
        "{\"hostname\":\"h\",\"gpus\":[{\"index\":1.0,\"uuid\":\"u\"}]}", /* index not an integer */
        "{\"hostname\":\"h\",\"gpus\":[{\"index\":1000001,\"uuid\":\"u\"}]}",
        "{\"hostname\":\"h\",\"gpus\":[{\"index\":-1,\"uuid\":\"u\"}]}",
        "{\"hostname\":\"h\",\"gpus\":[{\"index\":0,\"uuid\":\"\"}]}",
        "{\"hostname\":\"h\",\"gpus\":[{\"index\":0,\"uuid\":null}]}",
        "{\"hostname\":\"h\",\"gpus\":[{\"index\":0,\"uuid\":\"u\",\"power_w\":1e400}]}",
        "{\"hostname\":\"h\",\"gpus\":[{\"index\":0,\"uuid\":\"u\",\"power_w\":1e-400}]}",
        "{\"hostname\":\"h\",\"gpus\":[{\"index\":99999999999999999999,\"uuid\":\"u\"}]}",
        "{\"hostname\":\"h\",\"gpus\":[{\"index\":0,\"uuid\":\"u\",\"power_w\":\"1\"}]}",
        "{\"hostname\":\"h\\u0041\",\"gpus\":[]}", /* an escape: jansson's */
        "{\"hostname\":null,\"gpus\":[]}",
        "{\"gpus\":[]}",
        "{\"hostname\":\"h\"}",
        "{\"hostname\":\"h\",\"gpus\":[],\"jobs\":null}",
        "{\"hostname\":\"h\",\"gpus\":[],\"jobs\":[{\"id\":\"j\",\"gpus\":{}}]}",
        "{\"hostname\":\"h\",\"gpus\":[],\"jobs\":[{\"id\":\"j\",\"class\":"
        "\"0123456789012345678901234567890123\"}]}",
        "{\"hostname\":\"h\",\"gpus\":[],\"node\":{\"power_w\":-1}}",
        "{\"hostname\":\"h\",\"gpus\":[],\"node\":[]}",
        "{\"hostname\":\"h\",\"gpus\":[],\"node\":null}",
        "{\"hostname\":\"h\",\"gpus\":[]} x",
        "{\"hostname\":\"h\",\"gpus\":[]}  \n",
        "[]",
        "",
        "{\"hostname\":\"h\",\"gpus\":[],\"deep\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}",
        "{\"hostname\":\"h\",\"gpus\":[],\"sampled_at_s\":01}",
        "{\"hostname\":\"h\",\"gpus\":[],\"sampled_at_s\":-}",
        "{\"hostname\":\"h\",\"gpus\":[],\"sampled_at_s\":1.}",
        "{\"hostname\":\"h\",\"gpus\":[],\"sampled_at_s\":.5}",
        "{\"hostname\":\"h\",\"gpus\":[],\"sampled_at_s\":+1}",
        "{\"hostname\":\"h\",\"gpus\":[],\"sampled_at_s\":1e}",
        "{\"hostname\":\"h\",\"gpus\":[],\"sampled_at_s\":-0}",
        /* midpoints between two doubles (2^53 + 1, + 3, 2^54 + 2): ties to even, as strtod */
        "{\"hostname\":\"h\",\"gpus\":[],\"sampled_at_s\":9007199254740993.0}",
        "{\"hostname\":\"h\",\"gpus\":[],\"sampled_at_s\":9007199254740995.0}",
        "{\"hostname\":\"h\",\"gpus\":[],\"sampled_at_s\":-18014398509481986.0}",
        "{\"hostname\":\"h\",\"gpus\":[],\"sampled_at_s\":90071992547409930e-1}",
        "{\"hostname\":\"h\",\"gpus\":[],\"sampled_at_s\":0.0000000000000000000}",
    };
    for (size_t i = 0; i < sizeof crafted / sizeof *crafted; i++)
        check_state(crafted[i], strlen(crafted[i]));
    static const char *crafted_caps[] = {
        "{\"gpus\":[{\"uuid\":null,\"enforced_cap_w\":1}]}",
        "{\"gpus\":[{\"enforced_cap_w\":1}]}",
        "{\"gpus\":[],\"applied\":false}",
        "{\"gpus\":[],\"applied\":1}",
        "{\"gpus\":[{\"uuid\":\"a\"},{\"uuid\":\"b\"},{\"uuid\":\"c\"},{\"uuid\":\"d\"},{\"uuid\":"
        "\"e\"}]}",
        "{\"applied\":true}",
    };
    for (size_t i = 0; i < sizeof crafted_caps / sizeof *crafted_caps; i++)
        check_caps(crafted_caps[i], strlen(crafted_caps[i]));

    /* numbers: every form pfid and a JSON writer may give, against jansson (strtod) */
    uint64_t x = 88172645463325252ull;
    char body[256];
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        memcpy(&v, &x, sizeof v);
        if (!isfinite(v))
            continue;
        double w = (double)(x % 2000000) / (double)(1 + (x >> 40) % 1000);
        double u = i % 2 ? v : w;
        char num[64];
        switch (i % 10) {
        case 6: /* 16, 18, 19 significant digits: the long double path (agentapi_fast.c) */
            snprintf(num, sizeof num, "%.16g", u);
            break;
        case 7:
            snprintf(num, sizeof num, "%.18g", w * 1e-3);
            break;
        case 8:
            snprintf(num, sizeof num, "%.19g", u);
            break;
        case 9: /* 17-19 digits and a power of ten within 10^±27, and beyond */
            snprintf(num, sizeof num, "%llue%d", (unsigned long long)(x % 10000000000000000000ull),
                     (int)((x >> 20) % 61) - 30);
            break;
        case 0:
            snprintf(num, sizeof num, "%.17g", u);
            break;
        case 1:
            snprintf(num, sizeof num, "%.15g", u);
            break;
        case 2:
            snprintf(num, sizeof num, "%.6g", u);
            break;
        case 3:
            snprintf(num, sizeof num, "%.1f", u);
            break;
        case 4:
            snprintf(num, sizeof num, "%.3e", u);
            break;
        default:
            snprintf(num, sizeof num, "%.0f", u);
            break;
        }
        snprintf(body, sizeof body,
                 "{\"hostname\":\"h\",\"gpus\":[{\"index\":0,\"uuid\":\"u\",\"power_w\":%s}]}",
                 num);
        check_state(body, strlen(body));
    }
    fprintf(stderr, "agentapi_fast: %zu bodies, %zu taken by the fast path, %d failure(s)\n", cases,
            fast_ok, failures);
    return failures == 0 ? 0 : 1;
}
