/*
 * The pfid agent API (docs/agent-api.md) and Prometheus /api/v1/query answers as data
 * (pfi/agent_api.h). jansson with duplicate keys rejected; every type checked; nulls
 * become NaN or "".
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl_internal.h"
#include "core/memory.h"
#include "pfi/agent_api.h"

static pfi_error load(const char *text, size_t len, json_t **out, pfi_diag *d)
{
    json_error_t je;
    unsigned long jf = pfi_json_failures();
    *out = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (pfi_json_failed(jf)) { /* jansson may report it as a syntax error, or drop a byte */
        json_decref(*out);
        *out = NULL;
        return PFI_ERR_NOMEM;
    }
    if (*out == NULL)
        return ctl_fail(d, je.line, PFI_ERR_PARSE, "not JSON: %s", je.text);
    return PFI_OK;
}

/* A number or null (NaN); false for anything else. absent_ok: a missing key is NaN. */
static bool num_or_null(json_t *o, const char *key, double *out, bool absent_ok)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL) {
        *out = NAN;
        return absent_ok;
    }
    if (json_is_null(v)) {
        *out = NAN;
        return true;
    }
    if (!json_is_number(v))
        return false;
    *out = json_number_value(v);
    return isfinite(*out);
}

static bool str_or_null(json_t *o, const char *key, char *dst, size_t n, bool absent_ok)
{
    json_t *v = json_object_get(o, key);
    dst[0] = '\0';
    if (v == NULL)
        return absent_ok;
    if (json_is_null(v))
        return true;
    if (!json_is_string(v))
        return false;
    return ctl_copy(dst, n, json_string_value(v));
}

pfi_error pfi_agent_state_parse(const char *text, size_t len, pfi_agent_state *out, pfi_diag *diag)
{
    /* the common answer without a tree (agentapi_fast.c); anything else, errors among them,
     * through jansson */
    if (ctl_state_parse_fast(text, len, out))
        return PFI_OK;
    return ctl_state_parse_json(text, len, out, diag);
}

pfi_error ctl_state_parse_json(const char *text, size_t len, pfi_agent_state *out, pfi_diag *diag)
{
    out->hostname[0] = '\0';
    out->n_gpus = out->n_jobs = 0;
    out->sampled_at_s = out->sampling_interval_s = NAN;
    out->node_power_w = out->node_non_gpu_w = NAN;
    json_t *root;
    pfi_error e = load(text, len, &root, diag);
    if (e != PFI_OK)
        return e;
    e = PFI_ERR_PARSE;
    if (!json_is_object(root)) {
        ctl_fail(diag, 0, e, "state: not a JSON object");
        goto out;
    }
    if (!str_or_null(root, "hostname", out->hostname, sizeof out->hostname, false)) {
        ctl_fail(diag, 0, e, "state: \"hostname\" missing or not a string");
        goto out;
    }
    if (!num_or_null(root, "sampled_at_s", &out->sampled_at_s, true)) {
        ctl_fail(diag, 0, e, "state: \"sampled_at_s\" not a number");
        goto out;
    }
    if (!num_or_null(root, "sampling_interval_s", &out->sampling_interval_s, true)) {
        ctl_fail(diag, 0, e, "state: \"sampling_interval_s\" not a number");
        goto out;
    }
    json_t *node = json_object_get(root, "node");
    if (node != NULL && !json_is_null(node) &&
        (!json_is_object(node) || !num_or_null(node, "power_w", &out->node_power_w, true) ||
         !num_or_null(node, "non_gpu_w", &out->node_non_gpu_w, true) ||
         !(isnan(out->node_power_w) || out->node_power_w >= 0) ||
         !(isnan(out->node_non_gpu_w) || out->node_non_gpu_w >= 0))) {
        ctl_fail(diag, 0, e,
                 "state: \"node\" not an object with power_w and non_gpu_w numbers >= 0 or null");
        goto out;
    }
    json_t *gpus = json_object_get(root, "gpus");
    if (!json_is_array(gpus)) {
        ctl_fail(diag, 0, e, "state: \"gpus\" missing or not an array");
        goto out;
    }
    if (json_array_size(gpus) > PFI_CTL_MAX_GPUS) {
        e = ctl_fail(diag, 0, PFI_ERR_LIMIT, "state: more than %d GPUs", PFI_CTL_MAX_GPUS);
        goto out;
    }
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        pfi_agent_gpu *o = &out->gpus[i];
        json_t *ix = json_object_get(g, "index");
        if (!json_is_object(g) || !json_is_integer(ix) || json_integer_value(ix) < 0 ||
            json_integer_value(ix) > 1000000 ||
            !str_or_null(g, "uuid", o->uuid, sizeof o->uuid, false) || o->uuid[0] == '\0' ||
            !str_or_null(g, "job", o->job, sizeof o->job, true) ||
            !num_or_null(g, "power_w", &o->power_w, true) ||
            !num_or_null(g, "energy_j", &o->energy_j, true) ||
            !num_or_null(g, "cap_w", &o->cap_w, true) ||
            !num_or_null(g, "enforced_cap_w", &o->enforced_cap_w, true) ||
            !num_or_null(g, "min_cap_w", &o->min_cap_w, true) ||
            !num_or_null(g, "max_cap_w", &o->max_cap_w, true) ||
            !num_or_null(g, "default_cap_w", &o->default_cap_w, true) ||
            !num_or_null(g, "original_cap_w", &o->original_cap_w, true)) {
            ctl_fail(diag, 0, e, "state: GPU %zu: a key is missing or of the wrong type", i);
            goto out;
        }
        o->index = (int)json_integer_value(ix);
        out->n_gpus = i + 1;
    }
    json_t *jobs = json_object_get(root, "jobs");
    if (jobs != NULL && !json_is_array(jobs)) {
        ctl_fail(diag, 0, e, "state: \"jobs\" not an array");
        goto out;
    }
    if (jobs != NULL && json_array_size(jobs) > PFI_CTL_MAX_JOBS) {
        e = ctl_fail(diag, 0, PFI_ERR_LIMIT, "state: more than %d jobs", PFI_CTL_MAX_JOBS);
        goto out;
    }
    json_t *j;
    json_array_foreach(jobs, i, j)
    {
        pfi_agent_job *o = &out->jobs[i];
        json_t *jg = json_object_get(j, "gpus");
        if (!json_is_object(j) || !str_or_null(j, "id", o->id, sizeof o->id, false) ||
            o->id[0] == '\0' || !str_or_null(j, "class", o->job_class, sizeof o->job_class, true) ||
            !num_or_null(j, "power_w", &o->power_w, true) ||
            !num_or_null(j, "throughput_tok_s", &o->tput_tok_s, true) ||
            (jg != NULL && !json_is_array(jg))) {
            ctl_fail(diag, 0, e, "state: job %zu: a key is missing or of the wrong type", i);
            goto out;
        }
        o->n_gpus = jg ? json_array_size(jg) : 0;
        out->n_jobs = i + 1;
    }
    e = PFI_OK;
out:
    json_decref(root);
    return e;
}

pfi_error pfi_agent_caps_parse(const char *text, size_t len, pfi_agent_cap_reply *out, size_t max,
                               size_t *n, bool *applied, pfi_diag *diag)
{
    if (ctl_caps_parse_fast(text, len, out, max, n, applied))
        return PFI_OK;
    return ctl_caps_parse_json(text, len, out, max, n, applied, diag);
}

pfi_error ctl_caps_parse_json(const char *text, size_t len, pfi_agent_cap_reply *out, size_t max,
                              size_t *n, bool *applied, pfi_diag *diag)
{
    *n = 0;
    *applied = false;
    json_t *root;
    pfi_error e = load(text, len, &root, diag);
    if (e != PFI_OK)
        return e;
    e = PFI_ERR_PARSE;
    json_t *gpus = json_object_get(root, "gpus");
    json_t *ap = json_object_get(root, "applied");
    if (!json_is_object(root) || !json_is_array(gpus) || (ap != NULL && !json_is_boolean(ap))) {
        ctl_fail(diag, 0, e, "caps answer: \"gpus\" missing or a key of the wrong type");
        goto out;
    }
    *applied = ap == NULL || json_is_true(ap);
    if (json_array_size(gpus) > max) {
        e = ctl_fail(diag, 0, PFI_ERR_LIMIT, "caps answer: more than %zu GPUs", max);
        goto out;
    }
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        if (!json_is_object(g) || !str_or_null(g, "uuid", out[i].uuid, sizeof out[i].uuid, false) ||
            !num_or_null(g, "requested_cap_w", &out[i].requested_w, true) ||
            !num_or_null(g, "enforced_cap_w", &out[i].enforced_w, true)) {
            ctl_fail(diag, 0, e, "caps answer: GPU %zu malformed", i);
            goto out;
        }
        *n = i + 1;
    }
    e = PFI_OK;
out:
    json_decref(root);
    return e;
}

const char *pfi_prom_sample_label(const pfi_prom_sample *s, const char *name)
{
    for (size_t i = 0; i < s->n_labels; i++)
        if (strcmp(s->labels[i].name, name) == 0)
            return s->labels[i].value;
    return NULL;
}

/* Prometheus writes sample values as strings: Go's strconv format plus NaN / ±Inf. */
static bool prom_value(const char *s, double *out)
{
    if (strcmp(s, "NaN") == 0) {
        *out = NAN;
        return true;
    }
    if (strcmp(s, "+Inf") == 0 || strcmp(s, "Inf") == 0) {
        *out = INFINITY;
        return true;
    }
    if (strcmp(s, "-Inf") == 0) {
        *out = -INFINITY;
        return true;
    }
    char *end;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

pfi_error pfi_prom_vector_parse(const char *text, size_t len, pfi_prom_sample **out, size_t *n,
                                pfi_diag *diag)
{
    *out = NULL;
    *n = 0;
    json_t *root;
    pfi_error e = load(text, len, &root, diag);
    if (e != PFI_OK)
        return e;
    pfi_prom_sample *s = NULL;
    e = PFI_ERR_PARSE;
    json_t *st = json_object_get(root, "status");
    if (!json_is_object(root) || !json_is_string(st)) {
        ctl_fail(diag, 0, e, "Prometheus answer: no \"status\"");
        goto out;
    }
    if (strcmp(json_string_value(st), "success") != 0) {
        json_t *er = json_object_get(root, "error");
        e = ctl_fail(diag, 0, PFI_ERR_VALUE, "Prometheus: %s: %.300s", json_string_value(st),
                     json_is_string(er) ? json_string_value(er) : "(no message)");
        goto out;
    }
    json_t *data = json_object_get(root, "data");
    json_t *rt = json_object_get(data, "resultType");
    json_t *res = json_object_get(data, "result");
    if (!json_is_object(data) || !json_is_string(rt) || !json_is_array(res)) {
        ctl_fail(diag, 0, e, "Prometheus answer: \"data\" without resultType and result");
        goto out;
    }
    if (strcmp(json_string_value(rt), "vector") != 0) {
        e = ctl_fail(diag, 0, PFI_ERR_VALUE, "Prometheus answer: a %.32s, not a vector",
                     json_string_value(rt));
        goto out;
    }
    size_t m = json_array_size(res);
    if (m > PFI_PROM_MAX_SERIES) {
        e = ctl_fail(diag, 0, PFI_ERR_LIMIT,
                     "Prometheus answer: %zu series, more than PFI_PROM_MAX_SERIES (%d): narrow "
                     "the query or raise the limit in include/pfi/agent_api.h",
                     m, PFI_PROM_MAX_SERIES);
        goto out;
    }
    /* first pass: check every series and size the one block the answer is kept in (the
     * samples, then every label, then the label strings), so that any number of labels of
     * any length fits and one pfi_free releases it */
    size_t i, nlab = 0, nstr = 0;
    json_t *r;
    json_array_foreach(res, i, r)
    {
        json_t *metric = json_object_get(r, "metric");
        json_t *val = json_object_get(r, "value");
        if (!json_is_object(metric) || !json_is_array(val) || json_array_size(val) != 2 ||
            !json_is_number(json_array_get(val, 0)) || !json_is_string(json_array_get(val, 1))) {
            ctl_fail(diag, 0, e, "Prometheus answer: series %zu malformed", i);
            goto out;
        }
        const char *k;
        json_t *lv;
        json_object_foreach(metric, k, lv)
        {
            if (!json_is_string(lv)) {
                ctl_fail(diag, 0, e, "series %zu: label '%.40s' is not a string", i, k);
                goto out;
            }
            nlab++;
            nstr += strlen(k) + json_string_length(lv) + 2;
        }
    }
    if (m > 0) {
        size_t bytes = m * sizeof *s + nlab * sizeof(pfi_prom_label) + nstr;
        s = pfi_calloc(1, bytes);
        if (s == NULL) {
            e = PFI_ERR_NOMEM;
            goto out;
        }
    }
    pfi_prom_label *lab = m > 0 ? (pfi_prom_label *)(void *)(s + m) : NULL;
    char *str = m > 0 ? (char *)(lab + nlab) : NULL;
    json_array_foreach(res, i, r)
    {
        json_t *metric = json_object_get(r, "metric");
        json_t *val = json_object_get(r, "value");
        s[i].labels = lab;
        const char *k;
        json_t *lv;
        json_object_foreach(metric, k, lv)
        {
            size_t kl = strlen(k), vl = json_string_length(lv);
            memcpy(str, k, kl + 1);
            lab->name = str;
            str += kl + 1;
            memcpy(str, json_string_value(lv), vl);
            str[vl] = '\0';
            lab->value = str;
            str += vl + 1;
            lab++;
            s[i].n_labels++;
        }
        s[i].t_s = json_number_value(json_array_get(val, 0));
        if (!prom_value(json_string_value(json_array_get(val, 1)), &s[i].value)) {
            ctl_fail(diag, 0, e, "series %zu: value '%.40s' is not a number", i,
                     json_string_value(json_array_get(val, 1)));
            goto out;
        }
    }
    *out = s;
    *n = m;
    s = NULL;
    e = PFI_OK;
out:
    pfi_free(s);
    json_decref(root);
    return e;
}
