/*
 * Dataset manifest: JSON (jansson) to a column mapping; directory listing by glob(3).
 */
#include "pfi/manifest.h"

#include <errno.h>
#include <glob.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"

static pfi_error fail(pfi_diag *d, const char *path, pfi_error e, int line, const char *key,
                      const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static pfi_error fail(pfi_diag *d, const char *path, pfi_error e, int line, const char *key,
                      const char *fmt, ...)
{
    if (d != NULL) {
        pfi_diag_clear(d);
        snprintf(d->file, sizeof d->file, "%s", path);
        d->line = line;
        /* a JSON key is not a column: it goes into the message */
        char text[sizeof d->message];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof text, fmt, ap);
        va_end(ap);
        if (key)
            snprintf(d->message, sizeof d->message, "key '%.100s': %.380s", key, text);
        else
            snprintf(d->message, sizeof d->message, "%s", text);
    }
    return e;
}

void pfi_manifest_clear(pfi_manifest *m)
{
    if (m == NULL)
        return;
    pfi_free(m->description);
    pfi_free(m->files);
    pfi_mapping_clear(&m->mapping);
    memset(m, 0, sizeof *m);
}

static const char *const mapping_keys[] = {"cap",           "cap_regex",  "power", "energy",
                                           "duration",      "throughput", "time",  "power_se",
                                           "throughput_se", "time_se",    "gpus",  "job_class"};

static pfi_error load_group(const char *path, json_t *v, pfi_mapping *mp, pfi_diag *diag)
{
    if (json_is_string(v))
        return pfi_mapping_set(mp, "group", json_string_value(v)) == PFI_OK && mp->n_group > 0
                   ? PFI_OK
                   : fail(diag, path, PFI_ERR_PARSE, 0, "mapping.group",
                          "expected 1 to %d column names", PFI_MAX_GROUP_COLUMNS);
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > PFI_MAX_GROUP_COLUMNS)
        return fail(diag, path, PFI_ERR_PARSE, 0, "mapping.group",
                    "expected a column name or an array of 1 to %d column names",
                    PFI_MAX_GROUP_COLUMNS);
    for (size_t i = 0; i < mp->n_group; i++)
        pfi_free(mp->group[i]);
    mp->n_group = 0;
    size_t i;
    json_t *name;
    json_array_foreach(v, i, name)
    {
        if (!json_is_string(name) || json_string_length(name) == 0)
            return fail(diag, path, PFI_ERR_PARSE, 0, "mapping.group",
                        "element %zu: expected a non-empty column name", i);
        if ((mp->group[i] = pfi_strdup(json_string_value(name))) == NULL)
            return PFI_ERR_NOMEM;
        mp->n_group = i + 1;
    }
    return PFI_OK;
}

static pfi_error load_mapping(const char *path, json_t *obj, pfi_mapping *mp, pfi_diag *diag)
{
    if (!json_is_object(obj))
        return fail(diag, path, PFI_ERR_PARSE, 0, "mapping", "expected a JSON object");
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        pfi_error e;
        if (strcmp(key, "group") == 0) {
            if ((e = load_group(path, v, mp, diag)) != PFI_OK)
                return e;
            continue;
        }
        bool known = false;
        for (size_t i = 0; i < sizeof mapping_keys / sizeof mapping_keys[0]; i++)
            known = known || strcmp(key, mapping_keys[i]) == 0;
        char where[96];
        snprintf(where, sizeof where, "mapping.%s", key);
        if (!known)
            return fail(diag, path, PFI_ERR_PARSE, 0, where,
                        "unknown mapping field (known: group, cap, cap_regex, power, energy, "
                        "duration, throughput, time, power_se, throughput_se, time_se, gpus, "
                        "job_class)");
        if (json_is_null(v))
            continue;
        if (!json_is_string(v) || json_string_length(v) == 0)
            return fail(diag, path, PFI_ERR_PARSE, 0, where,
                        "expected a column name (string) or null");
        if ((e = pfi_mapping_set(mp, key, json_string_value(v))) != PFI_OK)
            return e;
    }
    return PFI_OK;
}

pfi_error pfi_manifest_load(const char *path, pfi_manifest *out, pfi_diag *diag)
{
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return fail(diag, path, PFI_ERR_IO, 0, NULL, "cannot open: %s", strerror(errno));
    unsigned long jf = pfi_json_failures();
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
    fclose(f);
    /* jansson may report a failed allocation as a syntax error, or drop a byte of a string */
    if (pfi_json_failed(jf) ||
        (root == NULL && json_error_code(&jerr) == json_error_out_of_memory)) {
        json_decref(root);
        return fail(diag, path, PFI_ERR_NOMEM, 0, NULL, "%s", pfi_strerror(PFI_ERR_NOMEM));
    }
    if (root == NULL)
        return fail(diag, path, PFI_ERR_PARSE, jerr.line, NULL, "not valid JSON: %s (column %d)",
                    jerr.text, jerr.column);
    pfi_error e = PFI_OK;
    if (!json_is_object(root)) {
        e = fail(diag, path, PFI_ERR_PARSE, 0, NULL, "expected a JSON object at the top level");
        goto out;
    }
    const char *key;
    json_t *v;
    bool has_mapping = false;
    json_object_foreach(root, key, v)
    {
        if (strcmp(key, "pfi_manifest") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) != PFI_MANIFEST_VERSION) {
                char found[64] = "a non-integer";
                if (json_is_integer(v))
                    snprintf(found, sizeof found, "%lld", (long long)json_integer_value(v));
                e = fail(diag, path, PFI_ERR_PARSE, 0, NULL,
                         "key 'pfi_manifest': expected %d (the manifest version this pfi reads), "
                         "found %s",
                         PFI_MANIFEST_VERSION, found);
                goto out;
            }
        } else if (strcmp(key, "description") == 0 || strcmp(key, "files") == 0) {
            if (!json_is_string(v)) {
                e = fail(diag, path, PFI_ERR_PARSE, 0, key, "expected a string");
                goto out;
            }
            char **slot = key[0] == 'd' ? &out->description : &out->files;
            pfi_free(*slot);
            if ((*slot = pfi_strdup(json_string_value(v))) == NULL) {
                e = PFI_ERR_NOMEM;
                goto out;
            }
        } else if (strcmp(key, "mapping") == 0) {
            has_mapping = true;
            if ((e = load_mapping(path, v, &out->mapping, diag)) != PFI_OK)
                goto out;
        } else if (strcmp(key, "noise_rel") == 0) {
            if (json_is_null(v))
                continue;
            double x = json_number_value(v);
            if (!json_is_number(v) || !(x > 0 && x < 1)) {
                e = fail(diag, path, PFI_ERR_PARSE, 0, key,
                         "expected a relative noise between 0 and 1 (e.g. 0.01), or null");
                goto out;
            }
            out->noise_rel = x;
            out->has_noise_rel = true;
        } else {
            e = fail(diag, path, PFI_ERR_PARSE, 0, key,
                     "unknown key (known: pfi_manifest, description, files, mapping, noise_rel)");
            goto out;
        }
    }
    if (out->files == NULL && (out->files = pfi_strdup("*.csv")) == NULL)
        e = PFI_ERR_NOMEM;
    if (!has_mapping)
        e = fail(diag, path, PFI_ERR_PARSE, 0, "mapping", "missing: the column mapping");
out:
    json_decref(root);
    return e;
}

static int by_bytes(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

pfi_error pfi_manifest_files(const char *dir, const pfi_manifest *m, char ***paths, size_t *n,
                             pfi_diag *diag)
{
    *paths = NULL;
    *n = 0;
    const char *pattern = m->files ? m->files : "*.csv";
    if (strchr(pattern, '/') != NULL)
        return fail(diag, dir, PFI_ERR_INVALID_ARGUMENT, 0, "files",
                    "the file pattern '%s' must name files in the dataset directory, without '/'",
                    pattern);
    size_t len = 2 * strlen(dir) + strlen(pattern) + 2;
    char *full = pfi_malloc(len);
    if (full == NULL)
        return PFI_ERR_NOMEM;
    {
        size_t k = 0;
        for (const char *c = dir; *c; c++) {
            if (strchr("*?[\\", *c))
                full[k++] = '\\';
            full[k++] = *c;
        }
        snprintf(full + k, len - k, "/%s", pattern);
    }
    glob_t g;
    int rc = glob(full, GLOB_NOSORT, NULL, &g);
    pfi_free(full);
    if (rc == GLOB_NOMATCH)
        return fail(diag, dir, PFI_ERR_EMPTY, 0, NULL, "no file matches '%s'", pattern);
    if (rc != 0)
        return fail(diag, dir, rc == GLOB_NOSPACE ? PFI_ERR_NOMEM : PFI_ERR_IO, 0, NULL,
                    "cannot list the directory");
    char **out = pfi_calloc(g.gl_pathc, sizeof *out);
    pfi_error e = out ? PFI_OK : PFI_ERR_NOMEM;
    for (size_t i = 0; e == PFI_OK && i < g.gl_pathc; i++)
        if ((out[i] = pfi_strdup(g.gl_pathv[i])) == NULL)
            e = PFI_ERR_NOMEM;
    if (e != PFI_OK) {
        for (size_t i = 0; out && i < g.gl_pathc; i++)
            pfi_free(out[i]);
        pfi_free(out);
    } else {
        qsort(out, g.gl_pathc, sizeof *out, by_bytes);
        *paths = out;
        *n = g.gl_pathc;
    }
    globfree(&g);
    return e;
}

pfi_error pfi_dataset_read(const char *dir, pfi_runs_table *t, pfi_manifest *man, pfi_diag *diag)
{
    size_t len = strlen(dir) + sizeof PFI_MANIFEST_NAME + 1;
    char *path = pfi_malloc(len);
    if (path == NULL) {
        memset(man, 0, sizeof *man);
        return PFI_ERR_NOMEM;
    }
    snprintf(path, len, "%s/%s", dir, PFI_MANIFEST_NAME);
    pfi_error e = pfi_manifest_load(path, man, diag);
    pfi_free(path);
    char **paths = NULL;
    size_t n = 0;
    if (e == PFI_OK)
        e = pfi_manifest_files(dir, man, &paths, &n, diag);
    for (size_t i = 0; e == PFI_OK && i < n; i++)
        e = pfi_runs_read_csv(t, paths[i], NULL, &man->mapping, diag);
    for (size_t i = 0; i < n; i++)
        pfi_free(paths[i]);
    pfi_free(paths);
    return e;
}
