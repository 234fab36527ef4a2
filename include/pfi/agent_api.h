/*
 * pfi/agent_api.h — the answers the controller (pfi/control.h) gets over HTTP, as data:
 * the pfid agent API's GET /v1/state and PUT/DELETE /v1/caps bodies (docs/agent-api.md;
 * pfi_agent_*) and the Prometheus HTTP API's instant vectors (pfi_prom_*).
 *
 * Units: watts, joules, tokens/s, seconds (Unix s for Prometheus timestamps). Parsers take
 * (text, len) so they can be fuzzed; none of them speaks HTTP, prints or exits.
 * Thread-safety: pure functions.
 */
#ifndef PFI_AGENT_API_H
#define PFI_AGENT_API_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/error.h"
#include "pfi/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_CTL_MAX_GPUS 256 /* GPUs one agent may report */
#define PFI_CTL_MAX_JOBS 256 /* jobs one agent may report */
#define PFI_CTL_ID_LEN 128   /* longest job id, uuid, hostname (with NUL) */

/* ---- the agent API as data (docs/agent-api.md) ------------------------------------------ */
typedef struct pfi_agent_gpu {
    int index;
    char uuid[PFI_CTL_ID_LEN];
    char job[PFI_CTL_ID_LEN];                                   /* "" when none */
    double power_w, energy_j;                                   /* NaN when null */
    double cap_w, enforced_cap_w;                               /* NaN when null */
    double min_cap_w, max_cap_w, default_cap_w, original_cap_w; /* NaN when absent */
} pfi_agent_gpu;

typedef struct pfi_agent_job {
    char id[PFI_CTL_ID_LEN];
    char job_class[32];         /* "" when null */
    double power_w, tput_tok_s; /* NaN when null */
    size_t n_gpus;              /* GPUs listed */
} pfi_agent_job;

typedef struct pfi_agent_state {
    char hostname[PFI_CTL_ID_LEN];
    double sampled_at_s;
    double sampling_interval_s; /* the agent's sampling interval, s ("sampling_interval_s");
                                   NaN when absent (an agent before it) or null */
    /* the node's power and its non-GPU part from pfid's node-power source ("node": {...});
     * NaN when absent or null */
    double node_power_w, node_non_gpu_w;
    size_t n_gpus, n_jobs;
    pfi_agent_gpu gpus[PFI_CTL_MAX_GPUS];
    pfi_agent_job jobs[PFI_CTL_MAX_JOBS];
} pfi_agent_state;

/* pfi_agent_state_parse — a GET /v1/state body into *out (plain data, no allocation kept).
 * Errors: PFI_ERR_PARSE (not JSON, a required key missing or of the wrong type: diag says
 * which), PFI_ERR_LIMIT (too many GPUs or jobs), PFI_ERR_NOMEM. */
pfi_error pfi_agent_state_parse(const char *text, size_t len, pfi_agent_state *out, pfi_diag *diag);

/* pfi_agent_caps_reply — one GPU of a PUT /v1/caps or DELETE /v1/caps answer. */
typedef struct pfi_agent_cap_reply {
    char uuid[PFI_CTL_ID_LEN];
    double requested_w, enforced_w; /* NaN when null */
} pfi_agent_cap_reply;

/* pfi_agent_caps_parse — the answer's "gpus" into out[max] (*n written), *applied. Errors:
 * PFI_ERR_PARSE, PFI_ERR_LIMIT. */
pfi_error pfi_agent_caps_parse(const char *text, size_t len, pfi_agent_cap_reply *out, size_t max,
                               size_t *n, bool *applied, pfi_diag *diag);

/* ---- Prometheus HTTP API answers ---------------------------------------------------------
 * An instant-vector answer of /api/v1/query: {"status":"success","data":{"resultType":
 * "vector","result":[{"metric":{labels},"value":[ts,"string"]}, ...]}}. Values are strings
 * ("NaN", "+Inf", "-Inf" included: parsed, not dropped; the caller decides). */
#define PFI_PROM_MAX_SERIES                                                                        \
    (1 << 20) /* series one answer may hold (16 384 GPUs × 2 is                                   \
                 well within it); more: PFI_ERR_LIMIT naming it */
/* One label of a series: name and value, NUL-terminated, any length (borrowed from the
 * answer's block). */
typedef struct pfi_prom_label {
    const char *name, *value;
} pfi_prom_label;
typedef struct pfi_prom_sample {
    size_t n_labels; /* any number (Kubernetes-scraped series carry 18 and more) */
    const pfi_prom_label *labels;
    double t_s;   /* the answer's timestamp (the query's evaluation time), Unix s */
    double value; /* may be NaN or ±Inf */
} pfi_prom_sample;

/* pfi_prom_sample_label — the value of label name in s, or NULL. Borrowed. */
const char *pfi_prom_sample_label(const pfi_prom_sample *s, const char *name);

/* pfi_prom_vector_parse — parse an answer into *out (owned: one block with the labels and
 * their strings, released by one pfi_free()) of *n samples. A
 * "status":"error" answer is PFI_ERR_VALUE with the server's error in diag. Errors:
 * PFI_ERR_PARSE, PFI_ERR_VALUE, PFI_ERR_LIMIT, PFI_ERR_NOMEM. */
pfi_error pfi_prom_vector_parse(const char *text, size_t len, pfi_prom_sample **out, size_t *n,
                                pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
