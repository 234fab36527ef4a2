/*
 * Unit tests of pfi/manifest.h: loading dataset manifests and listing their files.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "checks.h"

#include "pfi/manifest.h"
#include "pfi/runs.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- helpers ---------------------------------------------------------------------------- */

/* A fresh temporary directory (path in buf). */
static void make_dir(char *buf, size_t len, const char *tag)
{
    snprintf(buf, len, "/tmp/pfi-test-manifest-%s-XXXXXX", tag);
    assert_non_null(mkdtemp(buf));
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

static void remove_file(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(unlink(path), 0);
}

/* Write text as a manifest in a scratch file and load it. */
static char g_dir[256];
static pfi_error load_text(const char *text, pfi_manifest *m, pfi_diag *d)
{
    write_file(g_dir, PFI_MANIFEST_NAME, text);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, PFI_MANIFEST_NAME);
    return pfi_manifest_load(path, m, d);
}

static int setup_dir(void **state)
{
    (void)state;
    make_dir(g_dir, sizeof g_dir, "json");
    return 0;
}

static int teardown_dir(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, PFI_MANIFEST_NAME);
    unlink(path);
    rmdir(g_dir);
    return 0;
}

/* The diagnostic names the JSON key: as the column, or quoted in the message. */
static bool names_key(const pfi_diag *d, const char *key)
{
    if (key[0] == '\0')
        return true;
    char quoted[160];
    snprintf(quoted, sizeof quoted, "'%s'", key);
    return strcmp(d->column, key) == 0 || strstr(d->message, quoted) != NULL;
}

static void free_paths(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        pfi_free(paths[i]);
    pfi_free(paths);
}

/* ---- the shipped manifests -------------------------------------------------------------- */

static void test_load_nsdi23(void **state)
{
    (void)state;
    pfi_manifest m;
    pfi_diag d;
    pfi_error e = pfi_manifest_load(PFI_REPO_DATA "/zeus_nsdi23_power/" PFI_MANIFEST_NAME, &m, &d);
    if (e != PFI_OK)
        fail_msg("%d %s", (int)e, d.message);
    assert_non_null(m.description);
    assert_non_null(strstr(m.description, "Zeus (NSDI '23)"));
    assert_string_equal(m.files, "summary_power_*.csv");
    assert_int_equal(m.mapping.n_group, 4);
    assert_string_equal(m.mapping.group[0], "dataset");
    assert_string_equal(m.mapping.group[1], "network");
    assert_string_equal(m.mapping.group[2], "batch_size");
    assert_string_equal(m.mapping.group[3], "optimizer");
    assert_string_equal(m.mapping.cap, "power_limit");
    assert_string_equal(m.mapping.power, "average_power");
    assert_string_equal(m.mapping.time, "time_per_epoch");
    assert_null(m.mapping.cap_regex);
    assert_null(m.mapping.energy);
    assert_null(m.mapping.duration);
    assert_null(m.mapping.throughput);
    assert_null(m.mapping.power_se);
    assert_null(m.mapping.throughput_se);
    assert_null(m.mapping.time_se);
    assert_null(m.mapping.gpus);
    assert_null(m.mapping.job_class);
    assert_false(m.has_noise_rel);
    char msg[256];
    assert_int_equal(pfi_mapping_check(&m.mapping, msg, sizeof msg), PFI_OK);
    pfi_manifest_clear(&m);
    assert_null(m.description);
    assert_null(m.files);
    assert_int_equal(m.mapping.n_group, 0);
}

static void test_load_jit(void **state)
{
    (void)state;
    pfi_manifest m;
    pfi_diag d;
    pfi_error e = pfi_manifest_load(PFI_REPO_DATA "/zeus_jit_profile/" PFI_MANIFEST_NAME, &m, &d);
    if (e != PFI_OK)
        fail_msg("%d %s", (int)e, d.message);
    assert_non_null(m.description);
    assert_non_null(strstr(m.description, "GlobalPowerLimitOptimizer"));
    assert_string_equal(m.files, "*.csv");
    assert_int_equal(m.mapping.n_group, 1);
    assert_string_equal(m.mapping.group[0], PFI_FILE_COLUMN);
    assert_string_equal(m.mapping.cap, "window_name");
    assert_string_equal(m.mapping.cap_regex, "_([0-9]+)$");
    assert_string_equal(m.mapping.energy, "gpu*_energy");
    assert_string_equal(m.mapping.duration, "elapsed_time");
    assert_string_equal(m.mapping.time, "elapsed_time");
    assert_null(m.mapping.power);
    assert_null(m.mapping.throughput);
    assert_null(m.mapping.time_se);
    assert_false(m.has_noise_rel);
    char msg[256];
    assert_int_equal(pfi_mapping_check(&m.mapping, msg, sizeof msg), PFI_OK);
    pfi_manifest_clear(&m);
}

/* Load each shipped manifest, list its files, and read them all with its mapping. */
static void test_shipped_datasets_read(void **state)
{
    (void)state;
    static const struct {
        const char *dir;
        const char *const files[13];
        size_t n_groups_min;
    } sets[] = {
        {PFI_REPO_DATA "/zeus_nsdi23_power",
         {"summary_power_a40.csv", "summary_power_p100.csv", "summary_power_rtx6000.csv",
          "summary_power_v100.csv", NULL},
         4},
        {PFI_REPO_DATA "/zeus_jit_profile",
         {"A40+bert-base-uncased+gpu0.csv", "A40+resnet18+gpu0,1,2,3.csv", "A40+resnet18+gpu0.csv",
          "A40+resnet50+gpu0,1,2,3.csv", "A40+resnet50+gpu0.csv", "A40+shufflenetv2+gpu0.csv",
          "V100+bert-base-uncased+gpu0.csv", "V100+resnet18+gpu0,1.csv", "V100+resnet18+gpu0.csv",
          "V100+resnet50+gpu0,1.csv", "V100+resnet50+gpu0.csv", "V100+shufflenetv2+gpu0.csv", NULL},
         12},
    };
    for (size_t s = 0; s < ARRAY_LEN(sets); s++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", sets[s].dir, PFI_MANIFEST_NAME);
        pfi_manifest m;
        pfi_diag d;
        assert_int_equal(pfi_manifest_load(path, &m, &d), PFI_OK);
        char **paths = NULL;
        size_t n = 0;
        pfi_error e = pfi_manifest_files(sets[s].dir, &m, &paths, &n, &d);
        if (e != PFI_OK)
            fail_msg("%s: %d %s", sets[s].dir, (int)e, d.message);
        size_t want = 0;
        while (sets[s].files[want] != NULL)
            want++;
        CHECK(n == want, "%s: %zu files, want %zu\n", sets[s].dir, n, want);
        for (size_t i = 0; i < n && i < want; i++) {
            char full[1024];
            snprintf(full, sizeof full, "%s/%s", sets[s].dir, sets[s].files[i]);
            CHECK(strcmp(paths[i], full) == 0, "%s: file %zu '%s', want '%s'\n", sets[s].dir, i,
                  paths[i], full);
        }
        pfi_runs_table *t;
        assert_int_equal(pfi_runs_table_create(&t), PFI_OK);
        for (size_t i = 0; i < n; i++) {
            e = pfi_runs_read_csv(t, paths[i], NULL, &m.mapping, &d);
            CHECK(e == PFI_OK, "%s: %d %s:%ld %s\n", paths[i], (int)e, d.file, d.line, d.message);
        }
        CHECK(t->n_files == n, "%s: %zu files read\n", sets[s].dir, t->n_files);
        CHECK(t->n_groups >= sets[s].n_groups_min, "%s: %zu groups\n", sets[s].dir, t->n_groups);
        pfi_runs_table_destroy(t);
        free_paths(paths, n);
        pfi_manifest_clear(&m);
    }
    END_CHECKS();
}

/* ---- well-formed manifests -------------------------------------------------------------- */

static void test_minimal_and_group_string(void **state)
{
    (void)state;
    pfi_manifest m;
    pfi_diag d;
    pfi_error e = load_text("{\"mapping\": {\"group\": \"model\", \"cap\": \"limit\", \"power\": "
                            "\"w\", \"throughput\": \"tps\"}}",
                            &m, &d);
    if (e != PFI_OK)
        fail_msg("%d %s", (int)e, d.message);
    assert_int_equal(m.mapping.n_group, 1);
    assert_string_equal(m.mapping.group[0], "model");
    assert_string_equal(m.mapping.cap, "limit");
    assert_string_equal(m.mapping.power, "w");
    assert_string_equal(m.mapping.throughput, "tps");
    assert_null(m.description);
    assert_false(m.has_noise_rel);
    pfi_manifest_clear(&m);

    /* every key, with every mapping field */
    e = load_text("{\n"
                  "  \"pfi_manifest\": 1,\n"
                  "  \"description\": \"d\\u00e9j\\u00e0 vu\",\n"
                  "  \"files\": \"runs_*.csv\",\n"
                  "  \"mapping\": {\n"
                  "    \"group\": [\"a\", \"b\", \"@file\"],\n"
                  "    \"cap\": \"c\", \"cap_regex\": \"_([0-9]+)W\",\n"
                  "    \"power\": null, \"energy\": \"e*\", \"duration\": \"dur\",\n"
                  "    \"throughput\": \"tp\", \"time\": null,\n"
                  "    \"power_se\": \"pse\", \"throughput_se\": \"tse\", \"time_se\": null,\n"
                  "    \"gpus\": \"n\", \"job_class\": \"cls\"\n"
                  "  },\n"
                  "  \"noise_rel\": 0.02\n"
                  "}\n",
                  &m, &d);
    if (e != PFI_OK)
        fail_msg("%d %s", (int)e, d.message);
    assert_string_equal(m.description, "d\xc3\xa9j\xc3\xa0 vu");
    assert_string_equal(m.files, "runs_*.csv");
    assert_int_equal(m.mapping.n_group, 3);
    assert_string_equal(m.mapping.group[2], "@file");
    assert_string_equal(m.mapping.cap_regex, "_([0-9]+)W");
    assert_null(m.mapping.power);
    assert_string_equal(m.mapping.energy, "e*");
    assert_string_equal(m.mapping.duration, "dur");
    assert_string_equal(m.mapping.throughput, "tp");
    assert_null(m.mapping.time);
    assert_string_equal(m.mapping.power_se, "pse");
    assert_string_equal(m.mapping.throughput_se, "tse");
    assert_null(m.mapping.time_se);
    assert_string_equal(m.mapping.gpus, "n");
    assert_string_equal(m.mapping.job_class, "cls");
    assert_true(m.has_noise_rel);
    assert_true(m.noise_rel == 0.02);
    pfi_manifest_clear(&m);
    pfi_manifest_clear(NULL);
}

static void test_noise_rel_values(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        bool ok, has;
        double value;
    } cases[] = {
        {"0.01", true, true, 0.01},   {"0.5", true, true, 0.5},  {"1e-3", true, true, 1e-3},
        {"0.999", true, true, 0.999}, {"null", true, false, 0},  {"0", false, false, 0},
        {"0.0", false, false, 0},     {"1", false, false, 0},    {"1.0", false, false, 0},
        {"-0.1", false, false, 0},    {"1.5", false, false, 0},  {"2", false, false, 0},
        {"\"0.1\"", false, false, 0}, {"true", false, false, 0}, {"[0.1]", false, false, 0},
    };
    for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
        char json[256];
        snprintf(json, sizeof json,
                 "{\"noise_rel\": %s, \"mapping\": {\"group\": \"g\", \"cap\": \"c\"}}",
                 cases[c].json);
        pfi_manifest m;
        pfi_diag d;
        pfi_error e = load_text(json, &m, &d);
        if (cases[c].ok) {
            CHECK(e == PFI_OK, "noise_rel %s: rejected: %s\n", cases[c].json, d.message);
            CHECK(m.has_noise_rel == cases[c].has, "noise_rel %s: has_noise_rel %d\n",
                  cases[c].json, m.has_noise_rel);
            CHECK(!cases[c].has || m.noise_rel == cases[c].value, "noise_rel %s: %g\n",
                  cases[c].json, m.noise_rel);
        } else {
            CHECK(e == PFI_ERR_PARSE, "noise_rel %s: error %d, want PFI_ERR_PARSE\n", cases[c].json,
                  (int)e);
            CHECK(e == PFI_OK || names_key(&d, "noise_rel"),
                  "noise_rel %s: diag does not name the key: '%s' '%s'\n", cases[c].json, d.column,
                  d.message);
        }
        pfi_manifest_clear(&m);
    }
    END_CHECKS();
}

/* ---- malformed manifests ---------------------------------------------------------------- */

#define MAP_OK "\"mapping\": {\"group\": \"g\", \"cap\": \"c\"}"

static const struct {
    const char *name;
    const char *json;
    const char *key; /* expected diag column ("" for none) */
    long line;       /* expected diag line; -1: not checked */
} bad[] = {
    {"unknown key", "{\"mapings\": {}, " MAP_OK "}", "mapings", -1},
    {"unknown key after mapping", "{" MAP_OK ", \"comment\": \"x\"}", "comment", -1},
    {"unknown mapping field", "{\"mapping\": {\"group\": \"g\", \"powr\": \"p\"}}", "mapping.powr",
     -1},
    {"mapping field upper case", "{\"mapping\": {\"group\": \"g\", \"Cap\": \"p\"}}", "mapping.Cap",
     -1},
    {"mapping field number", "{\"mapping\": {\"group\": \"g\", \"cap\": 5}}", "mapping.cap", -1},
    {"mapping field empty", "{\"mapping\": {\"group\": \"g\", \"cap\": \"\"}}", "mapping.cap", -1},
    {"mapping field array", "{\"mapping\": {\"group\": \"g\", \"power\": [\"a\", \"b\"]}}",
     "mapping.power", -1},
    {"mapping field bool", "{\"mapping\": {\"group\": \"g\", \"time\": true}}", "mapping.time", -1},
    {"group number", "{\"mapping\": {\"group\": 5}}", "mapping.group", -1},
    {"group empty array", "{\"mapping\": {\"group\": []}}", "mapping.group", -1},
    {"group element number", "{\"mapping\": {\"group\": [\"a\", 1]}}", "mapping.group", -1},
    {"group element empty", "{\"mapping\": {\"group\": [\"a\", \"\"]}}", "mapping.group", -1},
    {"group element null", "{\"mapping\": {\"group\": [null]}}", "mapping.group", -1},
    {"group object", "{\"mapping\": {\"group\": {\"a\": 1}}}", "mapping.group", -1},
    {"group too long",
     "{\"mapping\": {\"group\": [\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\","
     "\"l\",\"m\",\"n\",\"o\",\"p\",\"q\"]}}",
     "mapping.group", -1},
    {"mapping array", "{\"mapping\": [\"a\"]}", "mapping", -1},
    {"mapping string", "{\"mapping\": \"a\"}", "mapping", -1},
    {"mapping missing", "{\"pfi_manifest\": 1}", "mapping", -1},
    {"description number", "{\"description\": 1, " MAP_OK "}", "description", -1},
    {"files array", "{\"files\": [\"*.csv\"], " MAP_OK "}", "files", -1},
    {"version 2", "{\"pfi_manifest\": 2, " MAP_OK "}", "pfi_manifest", -1},
    {"version 0", "{\"pfi_manifest\": 0, " MAP_OK "}", "pfi_manifest", -1},
    {"version string", "{\"pfi_manifest\": \"1\", " MAP_OK "}", "pfi_manifest", -1},
    {"version real", "{\"pfi_manifest\": 1.0, " MAP_OK "}", "pfi_manifest", -1},
    {"version null", "{\"pfi_manifest\": null, " MAP_OK "}", "pfi_manifest", -1},
    {"top-level array", "[" MAP_OK "]", "", -1},
    {"top-level string", "\"mapping\"", "", -1},
    {"duplicate top-level key",
     "{\n  \"mapping\": {\"group\": \"g\"},\n  \"mapping\": {\"group\": \"h\"}\n}\n", "", 3},
    {"duplicate mapping field",
     "{\n  \"mapping\": {\n    \"cap\": \"a\",\n    \"cap\": \"b\"\n  }\n}\n", "", 4},
    {"missing comma", "{\n  \"pfi_manifest\": 1\n  \"mapping\": {}\n}\n", "", 3},
    {"trailing comma", "{\n  \"pfi_manifest\": 1,\n  " MAP_OK ",\n}\n", "", 4},
    {"unterminated string", "{\n\n  \"mapping\": {\"group\": \"g}\n}\n", "", -1},
    {"comment", "{\n  // the mapping\n  " MAP_OK "\n}\n", "", 2},
    {"single quotes", "{'mapping': {}}", "", 1},
    {"garbage after the object", "{" MAP_OK "}\n\nx\n", "", 3},
    {"empty file", "", "", -1},
    {"not JSON at all", "group,cap\nA,1\n", "", 1},
};

static void test_bad_manifests(void **state)
{
    (void)state;
    for (size_t c = 0; c < ARRAY_LEN(bad); c++) {
        pfi_manifest m;
        pfi_diag d;
        memset(&d, 0x41, sizeof d);
        d.file[sizeof d.file - 1] = d.column[sizeof d.column - 1] = '\0';
        d.message[sizeof d.message - 1] = '\0';
        pfi_error e = load_text(bad[c].json, &m, &d);
        const char *nm = bad[c].name;
        CHECK(e == PFI_ERR_PARSE, "%s: error %d, want PFI_ERR_PARSE\n", nm, (int)e);
        if (e != PFI_OK) {
            CHECK(strstr(d.file, PFI_MANIFEST_NAME) != NULL, "%s: diag file '%s'\n", nm, d.file);
            CHECK(names_key(&d, bad[c].key), "%s: diag does not name '%s': '%s' '%s'\n", nm,
                  bad[c].key, d.column, d.message);
            CHECK(bad[c].line < 0 || d.line == bad[c].line, "%s: diag line %ld, want %ld (%s)\n",
                  nm, d.line, bad[c].line, d.message);
            CHECK(d.message[0] != '\0', "%s: empty message\n", nm);
        }
        /* clearing after an error frees whatever was loaded before it */
        pfi_manifest_clear(&m);
        /* the same without a diag */
        CHECK(load_text(bad[c].json, &m, NULL) == e, "%s: differs without a diag\n", nm);
        pfi_manifest_clear(&m);
    }
    END_CHECKS();
}

/*
 * "group" as a string names at least one column, like the array form (where "" and [] are
 * errors): an empty string is no group at all.
 */
static void test_group_empty_string(void **state)
{
    (void)state;
    static const char *const json[] = {
        "{\"mapping\": {\"group\": \"\", \"cap\": \"c\"}}",
        "{\"mapping\": {\"group\": \",\", \"cap\": \"c\"}}",
    };
    for (size_t i = 0; i < ARRAY_LEN(json); i++) {
        pfi_manifest m;
        pfi_diag d;
        pfi_error e = load_text(json[i], &m, &d);
        CHECK(e == PFI_ERR_PARSE, "%s: error %d (%zu group columns), want PFI_ERR_PARSE\n", json[i],
              (int)e, m.mapping.n_group);
        CHECK(e == PFI_OK || names_key(&d, "mapping.group"), "%s: diag '%s'\n", json[i], d.message);
        pfi_manifest_clear(&m);
    }
    END_CHECKS();
}

/* An error after a few fields were set: clear frees them (ASan checks the leak). */
static void test_error_after_partial_load(void **state)
{
    (void)state;
    pfi_manifest m;
    pfi_diag d;
    pfi_error e =
        load_text("{\"description\": \"x\", \"files\": \"*.csv\", \"mapping\": {\"group\": "
                  "[\"a\", \"b\"], \"cap\": \"c\", \"power\": \"p\", \"energy\": 7}}",
                  &m, &d);
    assert_int_equal(e, PFI_ERR_PARSE);
    assert_true(names_key(&d, "mapping.energy"));
    pfi_manifest_clear(&m);
    e = load_text("{\"mapping\": {\"group\": [\"a\", \"b\", 3]}}", &m, &d);
    assert_int_equal(e, PFI_ERR_PARSE);
    pfi_manifest_clear(&m);
}

static void test_load_missing_file(void **state)
{
    (void)state;
    pfi_manifest m;
    memset(&m, 0x5a, sizeof m); /* zeroed first by the call */
    pfi_diag d;
    const char *path = "/nonexistent-pfi-dir/" PFI_MANIFEST_NAME;
    assert_int_equal(pfi_manifest_load(path, &m, &d), PFI_ERR_IO);
    assert_string_equal(d.file, path);
    assert_non_null(strstr(d.message, strerror(ENOENT)));
    assert_null(m.description);
    assert_null(m.files);
    assert_int_equal(m.mapping.n_group, 0);
    assert_null(m.mapping.cap);
    assert_false(m.has_noise_rel);
    pfi_manifest_clear(&m);
    assert_int_equal(pfi_manifest_load(path, &m, NULL), PFI_ERR_IO);
    pfi_manifest_clear(&m);
}

/* "files" is optional: the pattern is then "*.csv" (pfi_manifest.files says so). */
static void test_files_default(void **state)
{
    (void)state;
    pfi_manifest m;
    pfi_diag d;
    assert_int_equal(load_text("{" MAP_OK "}", &m, &d), PFI_OK);
    bool ok = m.files != NULL && strcmp(m.files, "*.csv") == 0;
    char got[64];
    snprintf(got, sizeof got, "%s", m.files ? m.files : "(null)");
    /* whatever the field holds, listing uses "*.csv" */
    write_file(g_dir, "only.csv", "a\n");
    write_file(g_dir, "other.txt", "a\n");
    char **paths;
    size_t n;
    pfi_error e = pfi_manifest_files(g_dir, &m, &paths, &n, &d);
    remove_file(g_dir, "only.csv");
    remove_file(g_dir, "other.txt");
    pfi_manifest_clear(&m);
    assert_int_equal(e, PFI_OK);
    assert_int_equal(n, 1);
    char want[512];
    snprintf(want, sizeof want, "%s/only.csv", g_dir);
    bool listed = strcmp(paths[0], want) == 0;
    free_paths(paths, n);
    assert_true(listed);
    if (!ok)
        fail_msg("manifest without \"files\": pfi_manifest.files is '%s', want \"*.csv\"", got);
}

/* ---- pfi_manifest_files ----------------------------------------------------------------- */

static const char *const dir_files[] = {
    "b.csv",   "a.csv", "B.csv",         "_x.csv",         "a.txt",         "\xc3\xa9.csv",
    "a b.csv", "Z.CSV", "summary_1.csv", "summary_10.csv", "summary_2.csv", "1.csv",
};

static void test_files_sorted(void **state)
{
    (void)state;
    char dir[256];
    make_dir(dir, sizeof dir, "files");
    for (size_t i = 0; i < ARRAY_LEN(dir_files); i++)
        write_file(dir, dir_files[i], "x\n");
    static const struct {
        const char *pattern;
        const char *const want[12];
    } cases[] = {
        {"*.csv",
         {"1.csv", "B.csv", "_x.csv", "a b.csv", "a.csv", "b.csv", "summary_1.csv",
          "summary_10.csv", "summary_2.csv", "\xc3\xa9.csv", NULL}},
        {"summary_*.csv", {"summary_1.csv", "summary_10.csv", "summary_2.csv", NULL}},
        {"summary_?.csv", {"summary_1.csv", "summary_2.csv", NULL}},
        {"[ab].*", {"a.csv", "a.txt", "b.csv", NULL}},
        {"a.txt", {"a.txt", NULL}},
        {"*.CSV", {"Z.CSV", NULL}},
    };
    for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
        pfi_manifest m = {0};
        m.files = pfi_strdup(cases[c].pattern);
        assert_non_null(m.files);
        char **paths = NULL;
        size_t n = 0;
        pfi_diag d;
        pfi_error e = pfi_manifest_files(dir, &m, &paths, &n, &d);
        CHECK(e == PFI_OK, "'%s': error %d %s\n", cases[c].pattern, (int)e, d.message);
        size_t want = 0;
        while (cases[c].want[want] != NULL)
            want++;
        CHECK(n == want, "'%s': %zu files, want %zu\n", cases[c].pattern, n, want);
        for (size_t i = 0; i < n && i < want; i++) {
            char full[512];
            snprintf(full, sizeof full, "%s/%s", dir, cases[c].want[i]);
            CHECK(strcmp(paths[i], full) == 0, "'%s': file %zu is '%s', want '%s'\n",
                  cases[c].pattern, i, paths[i], full);
        }
        free_paths(paths, n);
        pfi_manifest_clear(&m);
    }
    for (size_t i = 0; i < ARRAY_LEN(dir_files); i++)
        remove_file(dir, dir_files[i]);
    assert_int_equal(rmdir(dir), 0);
    END_CHECKS();
}

static void test_files_no_match(void **state)
{
    (void)state;
    char dir[256];
    make_dir(dir, sizeof dir, "empty");
    write_file(dir, "a.csv", "x\n");
    pfi_manifest m = {0};
    m.files = pfi_strdup("*.json");
    char **paths = (char **)&m; /* must be reset */
    size_t n = 99;
    pfi_diag d;
    pfi_error e = pfi_manifest_files(dir, &m, &paths, &n, &d);
    remove_file(dir, "a.csv");
    /* an empty directory, with the default pattern */
    pfi_manifest m2 = {0};
    char **paths2 = NULL;
    size_t n2 = 99;
    pfi_diag d2;
    pfi_error e2 = pfi_manifest_files(dir, &m2, &paths2, &n2, &d2);
    rmdir(dir);
    pfi_manifest_clear(&m);
    assert_int_equal(e, PFI_ERR_EMPTY);
    assert_null(paths);
    assert_int_equal(n, 0);
    assert_non_null(strstr(d.message, "*.json"));
    assert_string_equal(d.file, dir);
    assert_int_equal(e2, PFI_ERR_EMPTY);
    assert_null(paths2);
    assert_int_equal(n2, 0);
    assert_non_null(strstr(d2.message, "*.csv"));
}

static void test_files_pattern_with_slash(void **state)
{
    (void)state;
    /* patterns that would match files, outside the directory or below it */
    char dir[256];
    make_dir(dir, sizeof dir, "slash");
    char sub[300];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    write_file(sub, "a.csv", "x\n");
    write_file(dir, "top.csv", "x\n");
    const char *base = strrchr(dir, '/') + 1;
    char up[300], up_star[300];
    snprintf(up, sizeof up, "../%s/top.csv", base);
    snprintf(up_star, sizeof up_star, "../*/top.csv");
    const char *const patterns[] = {"sub/*.csv", "sub/a.csv", "*/a.csv", "./top.csv",
                                    up,          up_star,     "/etc/*",  "../*.csv"};
    for (size_t i = 0; i < ARRAY_LEN(patterns); i++) {
        pfi_manifest m = {0};
        m.files = pfi_strdup(patterns[i]);
        assert_non_null(m.files);
        char **paths = (char **)&m;
        size_t n = 99;
        pfi_diag d;
        pfi_error e = pfi_manifest_files(dir, &m, &paths, &n, &d);
        pfi_manifest_clear(&m);
        CHECK(e != PFI_OK, "pattern '%s' accepted (%zu files)\n", patterns[i], n);
        if (e == PFI_OK) {
            free_paths(paths, n);
            continue;
        }
        CHECK(paths == NULL && n == 0, "pattern '%s': output not reset\n", patterns[i]);
        CHECK(strstr(d.message, patterns[i]) != NULL, "pattern '%s': message '%s'\n", patterns[i],
              d.message);
    }
    remove_file(sub, "a.csv");
    remove_file(dir, "top.csv");
    assert_int_equal(rmdir(sub), 0);
    assert_int_equal(rmdir(dir), 0);
    END_CHECKS();
}

/* The directory is a path, not a pattern: glob characters in its name are literal. */
static void test_files_dir_with_glob_chars(void **state)
{
    (void)state;
    char dir[256];
    make_dir(dir, sizeof dir, "run[1]*?");
    write_file(dir, "a.csv", "x\n");
    pfi_manifest m = {0};
    char **paths = NULL;
    size_t n = 0;
    pfi_diag d;
    pfi_error e = pfi_manifest_files(dir, &m, &paths, &n, &d);
    remove_file(dir, "a.csv");
    rmdir(dir);
    char want[512];
    snprintf(want, sizeof want, "%s/a.csv", dir);
    bool ok = e == PFI_OK && n == 1 && strcmp(paths[0], want) == 0;
    free_paths(paths, n);
    if (!ok)
        fail_msg("dir '%s': error %d (%s), %zu files; want '%s'", dir, (int)e, d.message, n, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_nsdi23),
        cmocka_unit_test(test_load_jit),
        cmocka_unit_test(test_shipped_datasets_read),
        cmocka_unit_test(test_minimal_and_group_string),
        cmocka_unit_test(test_noise_rel_values),
        cmocka_unit_test(test_bad_manifests),
        cmocka_unit_test(test_group_empty_string),
        cmocka_unit_test(test_error_after_partial_load),
        cmocka_unit_test(test_load_missing_file),
        cmocka_unit_test(test_files_default),
        cmocka_unit_test(test_files_sorted),
        cmocka_unit_test(test_files_no_match),
        cmocka_unit_test(test_files_pattern_with_slash),
        cmocka_unit_test(test_files_dir_with_glob_chars),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
