/*
 * Slurm's `squeue --json` answer and the pfi options in a job's comments, as data
 * (pfi/slurm.h). Read with jansson; every field optional but job_id.
 */
#include "pfi/slurm.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "ctl_internal.h"

/* Copy s into dst[n], cut at a UTF-8 boundary. */
static void copy_cut(char *dst, size_t n, const char *s)
{
    size_t len = s ? strlen(s) : 0;
    if (len >= n) {
        len = n - 1;
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
            len--;
    }
    if (len > 0)
        memcpy(dst, s, len);
    dst[len] = '\0';
}

static const char *str_of(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* A number field: a plain number, or 22.05's {"set": true, "number": N} shape. */
static double num_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (json_is_object(v)) {
        json_t *set = json_object_get(v, "set");
        if (set != NULL && !json_is_true(set))
            return NAN;
        v = json_object_get(v, "number");
    }
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* id of job_id: an integer or a string of digits. */
static bool job_id_of(json_t *o, char *out, size_t n)
{
    json_t *v = json_object_get(o, "job_id");
    if (json_is_integer(v) && json_integer_value(v) > 0) {
        snprintf(out, n, "%lld", (long long)json_integer_value(v));
        return true;
    }
    const char *s = json_string_value(v);
    if (s == NULL || s[0] == '\0' || strlen(s) >= n)
        return false;
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    copy_cut(out, n, s);
    return true;
}

/* N of "...,gres/gpu=N,..." (tres_alloc_str) or "gres:gpu:N" / "gres:gpu:TYPE:N"
 * (tres_per_node); 0 when absent. */
static unsigned gpus_of(const char *tres, bool alloc)
{
    if (tres == NULL)
        return 0;
    const char *key = alloc ? "gres/gpu=" : "gres:gpu:";
    for (const char *p = strstr(tres, key); p != NULL; p = strstr(p + 1, key)) {
        if (p != tres && p[-1] != ',')
            continue;
        const char *v = p + strlen(key);
        if (!alloc) { /* gres:gpu:TYPE:N — the count is the last field before ',' */
            const char *end = strchr(v, ',');
            const char *last = v;
            for (const char *q = v; *q && (end == NULL || q < end); q++)
                if (*q == ':')
                    last = q + 1;
            v = last;
        }
        char *end;
        unsigned long n = strtoul(v, &end, 10);
        if (end != v && (*end == '\0' || *end == ',' || *end == '(') && n < 1000000)
            return (unsigned)n;
    }
    return 0;
}

static bool fraction(const char *s, double lo, double hi, bool lo_open, double *out)
{
    if (s == NULL || *s == '\0')
        return false;
    char *end;
    double v = strtod(s, &end);
    if (*end != '\0' || !isfinite(v) || v < lo || v > hi || (lo_open && v <= lo))
        return false;
    *out = v;
    return true;
}

static bool valid_word(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n >= max)
        return false;
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)s[k];
        if (c >= 0x80 || !(isalnum(c) || strchr("._:@+=-", c) != NULL))
            return false;
    }
    return true;
}

static void set_option(pfi_slurm_job *j, const char *key, const char *val, bool *any)
{
    double v;
    if (strcmp(key, "flex") == 0 && valid_word(val, sizeof j->flex)) {
        copy_cut(j->flex, sizeof j->flex, val);
        *any = true;
    } else if (strcmp(key, "class") == 0 && valid_word(val, sizeof j->job_class)) {
        copy_cut(j->job_class, sizeof j->job_class, val);
        *any = true;
    } else if (strcmp(key, "min_throughput") == 0 && fraction(val, 0, 1, false, &v)) {
        j->min_tput = v;
        *any = true;
    } else if (strcmp(key, "pfi") == 0 && fraction(val, 0, 100, true, &v)) {
        j->pfi = v;
        *any = true;
    }
}

bool pfi_slurm_options_parse(const char *admin_comment, const char *comment, pfi_slurm_job *j)
{
    j->flex[0] = j->job_class[0] = '\0';
    j->min_tput = j->pfi = NAN;
    bool any = false;
    if (admin_comment != NULL && strncmp(admin_comment, "pfi:", 4) == 0) {
        json_t *o = json_loads(admin_comment + 4, JSON_REJECT_DUPLICATES, NULL);
        if (json_is_object(o)) {
            const char *keys[] = {"flex", "class", "min_throughput", "pfi"};
            for (size_t k = 0; k < 4; k++) {
                json_t *v = json_object_get(o, keys[k]);
                char buf[64];
                const char *s = json_string_value(v);
                if (json_is_number(v)) {
                    snprintf(buf, sizeof buf, "%.17g", json_number_value(v));
                    s = buf;
                }
                if (s != NULL)
                    set_option(j, keys[k], s, &any);
            }
        }
        json_decref(o);
        if (any)
            return true;
    }
    if (comment == NULL)
        return any;
    /* words "pfi-KEY=VALUE" separated by blanks or commas */
    const char *p = comment;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',' || *p == ';')
            p++;
        const char *w = p;
        while (*p && *p != ' ' && *p != '\t' && *p != ',' && *p != ';')
            p++;
        size_t n = (size_t)(p - w);
        char word[256];
        if (n < 5 || n >= sizeof word || strncmp(w, "pfi-", 4) != 0)
            continue;
        memcpy(word, w + 4, n - 4);
        word[n - 4] = '\0';
        char *eq = strchr(word, '=');
        if (eq == NULL)
            continue;
        *eq = '\0';
        const char *key = strcmp(word, "min-throughput") == 0 ? "min_throughput" : word;
        set_option(j, key, eq + 1, &any);
    }
    return any;
}

pfi_error pfi_slurm_jobs_parse(const char *text, size_t len, pfi_slurm_job **out, size_t *n,
                               pfi_diag *diag)
{
    *out = NULL;
    *n = 0;
    if (len > PFI_SLURM_MAX_BYTES)
        return ctl_fail(diag, 0, PFI_ERR_LIMIT, "squeue answer larger than %u bytes",
                        PFI_SLURM_MAX_BYTES);
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (root == NULL)
        return ctl_fail(diag, je.line, PFI_ERR_PARSE, "squeue --json: not JSON: %s", je.text);
    json_t *jobs = json_object_get(root, "jobs");
    if (!json_is_array(jobs)) {
        json_decref(root);
        return ctl_fail(diag, 0, PFI_ERR_PARSE,
                        "squeue --json: no \"jobs\" array (Slurm 21.08 or later expected)");
    }
    size_t m = json_array_size(jobs);
    if (m > PFI_SLURM_MAX_JOBS) {
        json_decref(root);
        return ctl_fail(diag, 0, PFI_ERR_LIMIT, "squeue --json: %zu jobs, more than %d", m,
                        PFI_SLURM_MAX_JOBS);
    }
    pfi_slurm_job *v = m ? pfi_calloc(m, sizeof *v) : NULL;
    if (m && v == NULL) {
        json_decref(root);
        return ctl_fail(diag, 0, PFI_ERR_NOMEM, "out of memory for %zu jobs", m);
    }
    for (size_t k = 0; k < m; k++) {
        json_t *o = json_array_get(jobs, k);
        pfi_slurm_job *j = &v[k];
        if (!json_is_object(o) || !job_id_of(o, j->id, sizeof j->id)) {
            const char *why = json_is_object(o) ? "job_id missing or not a positive integer"
                                                : "not an object"; /* before o is freed */
            pfi_free(v);
            json_decref(root);
            return ctl_fail(diag, 0, PFI_ERR_PARSE, "squeue --json: jobs[%zu]: %s", k, why);
        }
        json_t *st = json_object_get(o, "job_state");
        if (json_is_array(st)) /* later Slurm: a list of flags, the first is the state */
            st = json_array_get(st, 0);
        copy_cut(j->state, sizeof j->state, json_string_value(st));
        copy_cut(j->nodes, sizeof j->nodes, str_of(o, "nodes"));
        copy_cut(j->user, sizeof j->user, str_of(o, "user_name"));
        copy_cut(j->qos, sizeof j->qos, str_of(o, "qos"));
        copy_cut(j->partition, sizeof j->partition, str_of(o, "partition"));
        j->priority = num_of(o, "priority");
        j->start_time_s = num_of(o, "start_time");
        if (!isnan(j->start_time_s) &&
            !(j->start_time_s >= 0 && j->start_time_s < 253402300800.0)) {
            double t = j->start_time_s; /* a time outside 1970..9999 orders no job */
            pfi_free(v);
            json_decref(root);
            return ctl_fail(diag, 0, PFI_ERR_PARSE,
                            "squeue --json: jobs[%zu]: start_time %.17g is not a valid time (Unix "
                            "seconds, 0 to 253402300799, or unset)",
                            k, t);
        }
        j->gpus = gpus_of(str_of(o, "tres_alloc_str"), true);
        if (j->gpus == 0) {
            double nc = num_of(o, "node_count");
            unsigned per = gpus_of(str_of(o, "tres_per_node"), false);
            j->gpus = per * (isfinite(nc) && nc >= 1 && nc < 1e6 ? (unsigned)nc : 1u);
        }
        const char *ac = str_of(o, "admin_comment");
        pfi_slurm_options_parse(ac, str_of(o, "comment"), j);
        j->pfi_held = ac != NULL && strncmp(ac, "pfi:held:", 9) == 0;
    }
    json_decref(root);
    *out = v;
    *n = m;
    return PFI_OK;
}
