/*
 * GET /v1/state: the snapshot as JSON (docs/agent-api.md). Missing values are null.
 */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "agent.h"

static json_t *num_or_null(bool ok, double v)
{
    return ok && isfinite(v) ? json_real(v) : json_null();
}

static json_t *str_or_null(const char *s)
{
    return s != NULL && s[0] != '\0' ? json_string(s) : json_null();
}

char *pfid_state_render(pfid_agent *a)
{
    json_t *root = json_object();
    json_t *gpus = json_array();
    json_t *jobs = json_array();
    json_t *lease = json_object();
    pthread_mutex_lock(&a->snap_lock);
    double now = pfid_mono_s();
    json_object_set_new(root, "hostname", json_string(a->hostname));
    json_object_set_new(root, "sampled_at_s", json_real(a->sampled_wall_s));
    json_object_set_new(root, "sampling_interval_s", json_real(a->cfg.interval_s));
    for (unsigned k = 0; k < a->n_gpus; k++) {
        const pfid_gpu_state *g = &a->gpus[k];
        bool fresh = pfid_gpu_fresh(a, k, now);
        unsigned lv = fresh ? g->limits.valid : 0;
        json_t *o = json_object();
        json_object_set_new(o, "index", json_integer(k));
        json_object_set_new(o, "uuid", json_string(g->info.uuid));
        json_object_set_new(o, "name", json_string(g->info.name));
        json_object_set_new(o, "power_w", num_or_null(fresh && g->power_valid, g->power_w));
        json_object_set_new(
            o, "energy_j",
            num_or_null(fresh && (g->last.valid & PFI_SAMPLE_ENERGY), g->last.energy_j));
        json_object_set_new(o, "cap_w",
                            num_or_null(lv & PFI_LIMIT_CURRENT, g->limits.current_mw / 1000.0));
        json_object_set_new(o, "enforced_cap_w",
                            num_or_null(lv & PFI_LIMIT_ENFORCED, g->limits.enforced_mw / 1000.0));
        json_object_set_new(o, "min_cap_w",
                            num_or_null(lv & PFI_LIMIT_MIN, g->limits.min_mw / 1000.0));
        json_object_set_new(o, "max_cap_w",
                            num_or_null(lv & PFI_LIMIT_MAX, g->limits.max_mw / 1000.0));
        json_object_set_new(o, "default_cap_w",
                            num_or_null(lv & PFI_LIMIT_DEFAULT, g->limits.default_mw / 1000.0));
        json_object_set_new(o, "original_cap_w",
                            num_or_null(g->original_valid, g->original_mw / 1000.0));
        json_object_set_new(o, "job", str_or_null(g->job));
        json_array_append_new(gpus, o);
    }
    char ids[PFID_MAX_JOBS][PFID_ID_MAX];
    size_t nj = pfid_jobs_list(a, ids, PFID_MAX_JOBS);
    for (size_t j = 0; j < nj; j++) {
        json_t *o = json_object();
        json_t *list = json_array();
        const char *cls = NULL;
        for (unsigned k = 0; k < a->n_gpus; k++)
            if (strcmp(a->gpus[k].job, ids[j]) == 0) {
                json_array_append_new(list, json_string(a->gpus[k].info.uuid));
                if (cls == NULL && a->gpus[k].cls[0] != '\0')
                    cls = a->gpus[k].cls;
            }
        double w = NAN, t = NAN;
        bool has_w = pfid_job_power(a, ids[j], now, &w);
        bool has_t = pfid_job_throughput(a, ids[j], now, &t);
        json_object_set_new(o, "id", json_string(ids[j]));
        json_object_set_new(o, "gpus", list);
        json_object_set_new(o, "power_w", num_or_null(has_w, w));
        json_object_set_new(o, "throughput_tok_s", num_or_null(has_t, t));
        json_object_set_new(o, "class", str_or_null(cls));
        json_array_append_new(jobs, o);
    }
    json_object_set_new(lease, "request_id",
                        a->lease.active ? json_string(a->lease.request_id) : json_null());
    double left = a->lease.expires_mono - now;
    json_object_set_new(lease, "expires_in_s",
                        a->lease.active ? json_real(left > 0 ? left : 0) : json_null());
    json_object_set_new(lease, "policy",
                        json_string(a->cfg.lease_policy == PFID_POLICY_HOLD ? "hold" : "restore"));
    double node_w, non_gpu_w;
    pfid_node_power(a, now, &node_w, &non_gpu_w);
    json_t *node = json_object();
    json_object_set_new(node, "power_w", num_or_null(isfinite(node_w), node_w));
    json_object_set_new(node, "non_gpu_w", num_or_null(isfinite(non_gpu_w), non_gpu_w));
    json_object_set_new(node, "source",
                        a->cfg.node_power_file[0] ? json_string(a->cfg.node_power_file)
                                                  : json_null());
    json_object_set_new(node, "error", a->node.err[0] ? json_string(a->node.err) : json_null());
    json_object_set_new(node, "frozen",
                        a->cfg.node_power_file[0] ? json_boolean(a->node.frozen) : json_null());
    pthread_mutex_unlock(&a->snap_lock);
    json_object_set_new(root, "node", node);
    json_object_set_new(root, "gpus", gpus);
    json_object_set_new(root, "jobs", jobs);
    json_object_set_new(root, "lease", lease);
    char *out = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return out;
}
