/*
 * Fuzz harness: the controller's JSON answers — Prometheus /api/v1/query vectors, the
 * agent's GET /v1/state and PUT /v1/caps answers (pfi/control.h). The first byte picks the
 * parser. Differential for the agent's answers: whenever the fast reader (agentapi_fast.c)
 * takes a body, the jansson parser takes it too with the same result, bit for bit (abort
 * otherwise).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl_internal.h"
#include "pfi/agent_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Bit for bit, NaN equal to NaN. */
static int same(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

static void state_diff(const char *t, size_t n)
{
    static pfi_agent_state a, b;
    pfi_diag d;
    if (!ctl_state_parse_fast(t, n, &a))
        return;
    if (ctl_state_parse_json(t, n, &b, &d) != PFI_OK || strcmp(a.hostname, b.hostname) != 0 ||
        !same(a.sampled_at_s, b.sampled_at_s) || !same(a.node_power_w, b.node_power_w) ||
        !same(a.node_non_gpu_w, b.node_non_gpu_w) || a.n_gpus != b.n_gpus || a.n_jobs != b.n_jobs)
        abort();
    for (size_t i = 0; i < a.n_gpus; i++) {
        const pfi_agent_gpu *x = &a.gpus[i], *y = &b.gpus[i];
        if (x->index != y->index || strcmp(x->uuid, y->uuid) != 0 || strcmp(x->job, y->job) != 0 ||
            !same(x->power_w, y->power_w) || !same(x->energy_j, y->energy_j) ||
            !same(x->cap_w, y->cap_w) || !same(x->enforced_cap_w, y->enforced_cap_w) ||
            !same(x->min_cap_w, y->min_cap_w) || !same(x->max_cap_w, y->max_cap_w) ||
            !same(x->default_cap_w, y->default_cap_w) ||
            !same(x->original_cap_w, y->original_cap_w))
            abort();
    }
    for (size_t i = 0; i < a.n_jobs; i++) {
        const pfi_agent_job *x = &a.jobs[i], *y = &b.jobs[i];
        if (strcmp(x->id, y->id) != 0 || strcmp(x->job_class, y->job_class) != 0 ||
            !same(x->power_w, y->power_w) || !same(x->tput_tok_s, y->tput_tok_s) ||
            x->n_gpus != y->n_gpus)
            abort();
    }
}

static void caps_diff(const char *t, size_t n)
{
    pfi_agent_cap_reply a[16], b[16];
    size_t na, nb;
    bool apa, apb;
    pfi_diag d;
    if (!ctl_caps_parse_fast(t, n, a, 16, &na, &apa))
        return;
    if (ctl_caps_parse_json(t, n, b, 16, &nb, &apb, &d) != PFI_OK || na != nb || apa != apb)
        abort();
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].uuid, b[i].uuid) != 0 || !same(a[i].requested_w, b[i].requested_w) ||
            !same(a[i].enforced_w, b[i].enforced_w))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *t = (const char *)data + 1;
    size_t n = size - 1;
    pfi_diag d;
    switch (data[0] % 3) {
    case 0: {
        pfi_prom_sample *s;
        size_t m;
        if (pfi_prom_vector_parse(t, n, &s, &m, &d) == PFI_OK)
            pfi_free(s);
        break;
    }
    case 1: {
        static pfi_agent_state st;
        pfi_agent_state_parse(t, n, &st, &d);
        state_diff(t, n);
        break;
    }
    default: {
        pfi_agent_cap_reply r[16];
        size_t m;
        bool applied;
        pfi_agent_caps_parse(t, n, r, 16, &m, &applied, &d);
        caps_diff(t, n);
    }
    }
    return 0;
}
