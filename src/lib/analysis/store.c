/*
 * The SQLite run store (pfi/store.h).
 */
#define _GNU_SOURCE /* memmem, gmtime_r */
#include "pfi/store.h"

#include "pfi/csv.h"
#include "pfi/reduce.h"
#include "pfi/runs.h"
#include "pfi/steady.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/db_close.h"
#include "core/memory.h"

struct pfi_store {
    sqlite3 *db;
};

static const char schema_v1[] =
    "CREATE TABLE groups(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, job_class TEXT,"
    " gpus INTEGER);"
    "CREATE TABLE runs(id INTEGER PRIMARY KEY,"
    " group_id INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,"
    " cap_w REAL NOT NULL, power_w REAL, power_se_w REAL, power_n INTEGER,"
    " throughput REAL, throughput_se REAL, throughput_n INTEGER, throughput_unit TEXT,"
    " power_field TEXT, energy_j REAL, flags INTEGER NOT NULL DEFAULT 0,"
    " ingested_at TEXT NOT NULL, UNIQUE(group_id, cap_w));"
    "CREATE TABLE features(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " name TEXT NOT NULL, value REAL, PRIMARY KEY(run_id, name));"
    "CREATE TABLE sources(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " path TEXT NOT NULL, reader TEXT NOT NULL, ingested_at TEXT NOT NULL);"
    "PRAGMA user_version = 1;";

static pfi_error fail(pfi_store *s, pfi_diag *diag, const char *what)
{
    if (diag != NULL)
        snprintf(diag->message, sizeof diag->message, "%s: %s", what,
                 s && s->db ? sqlite3_errmsg(s->db) : "cannot open");
    return PFI_ERR_IO;
}

/* The schema version and table count of an open connection (a read, never a write), in one
 * statement: one snapshot, so a writer creating the schema at the same moment is seen
 * either before (0, 0) or after (1, n), never half-way. */
static int store_version_rc(sqlite3 *db, int *version, int *n_tables)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT (SELECT user_version FROM pragma_user_version),"
                                " (SELECT count(*) FROM sqlite_master)",
                                -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        *version = sqlite3_column_int(st, 0);
        *n_tables = sqlite3_column_int(st, 1);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

/* How long an opener retries a store that another process holds busy (ms). */
#define STORE_BUSY_MS 10000

/* Run sql (or the version read when sql is NULL) until it is not SQLITE_BUSY/LOCKED, for at
 * most STORE_BUSY_MS: the journal-mode switch of an opener and the one of a closer
 * (core/db_close) meet without SQLite's busy handler (a lock upgrade it refuses to wait
 * for, to avoid a deadlock), so concurrent ingests into one store retry here. */
static int store_exec_retry(sqlite3 *db, const char *sql, int *version, int *n_tables)
{
    for (long waited_ms = 0;; waited_ms += 2) {
        int rc = sql != NULL ? sqlite3_exec(db, sql, NULL, NULL, NULL)
                             : store_version_rc(db, version, n_tables);
        if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || waited_ms >= STORE_BUSY_MS)
            return rc;
        sqlite3_sleep(2);
    }
}

static bool store_version(sqlite3 *db, int *version, int *n_tables)
{
    return store_exec_retry(db, NULL, version, n_tables) == SQLITE_OK;
}

/* Close a store refused before anything was written: no journal-mode change on the way out
 * (db_close's), so a file that is not ours is left as it was. */
static void store_close_untouched(pfi_store *s)
{
    for (sqlite3_stmt *st; (st = sqlite3_next_stmt(s->db, NULL)) != NULL;)
        sqlite3_finalize(st);
    sqlite3_close(s->db);
    pfi_free(s);
}

/* A reader opens with SQLITE_OPEN_READONLY and changes nothing: no journal-mode switch, no
 * schema, no migration (each would write the file, bump its change counter, and fail on a
 * store the user may only read). Only a writer creates and migrates. */
pfi_error pfi_store_open(const char *path, pfi_store_mode mode, pfi_store **out, pfi_diag *diag)
{
    *out = NULL;
    if (diag != NULL) {
        pfi_diag_clear(diag);
        snprintf(diag->file, sizeof diag->file, "%s", path);
    }
    bool write = mode == PFI_STORE_WRITE;
    struct stat sb;
    if (!write) {
        const char *why = stat(path, &sb) != 0  ? strerror(errno)
                          : S_ISDIR(sb.st_mode) ? "is a directory, expected a pfi store file"
                                                : NULL;
        if (why != NULL) {
            if (diag != NULL)
                snprintf(diag->message, sizeof diag->message, "cannot open store: %s", why);
            return PFI_ERR_IO;
        }
    }
    pfi_store *s = pfi_calloc(1, sizeof *s);
    if (s == NULL)
        return PFI_ERR_NOMEM;
    int flags = write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        fail(s, diag, "cannot open store");
        pfi_store_close(s);
        return PFI_ERR_IO;
    }
    sqlite3_busy_timeout(s->db, 5000);
    int version = -1, n_tables = 0;
    /* the checks below read only: a file refused (another program's SQLite, a newer store)
     * is left as it was, byte for byte (no WAL switch, no journal-mode change at close) */
    if (sqlite3_exec(s->db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL) != SQLITE_OK ||
        !store_version(s->db, &version, &n_tables)) {
        fail(s, diag, "not a readable SQLite file");
        store_close_untouched(s);
        return PFI_ERR_IO;
    }
    if (version > PFI_STORE_SCHEMA_VERSION) {
        if (diag != NULL)
            snprintf(diag->message, sizeof diag->message,
                     "store schema version %d is newer than this pfi (%d)", version,
                     PFI_STORE_SCHEMA_VERSION);
        store_close_untouched(s);
        return PFI_ERR_IO;
    }
    if (version == 0 && n_tables > 0) {
        if (diag != NULL)
            snprintf(diag->message, sizeof diag->message,
                     "not a pfi store (has tables but no pfi schema version)");
        store_close_untouched(s);
        return PFI_ERR_IO;
    }
    if (!write && version == 0) {
        if (diag != NULL)
            snprintf(diag->message, sizeof diag->message,
                     "not a pfi store (empty file: no runs ingested; `pfi ingest --db` creates "
                     "one)");
        store_close_untouched(s);
        return PFI_ERR_IO;
    }
    if (!write && version < PFI_STORE_SCHEMA_VERSION) {
        if (diag != NULL)
            snprintf(diag->message, sizeof diag->message,
                     "store schema version %d is older than this pfi (%d): run a command that "
                     "writes the store (pfi ingest) once to migrate it, then read it",
                     version, PFI_STORE_SCHEMA_VERSION);
        store_close_untouched(s);
        return PFI_ERR_IO;
    }
    if (write && store_exec_retry(s->db, "PRAGMA journal_mode = WAL", NULL, NULL) != SQLITE_OK) {
        fail(s, diag, "not a writable SQLite file");
        pfi_store_close(s);
        return PFI_ERR_IO;
    }
    if (version == 0) {
        /* Empty database: migrate 0 -> 1 in one transaction. Another writer may be creating
           the schema at the same moment (two ingests into a new store): BEGIN IMMEDIATE
           waits for its write lock (busy timeout), and the version is read again under the
           lock, so the second one finds the schema made and creates nothing. */
        char *err = NULL;
        bool ok = store_exec_retry(s->db, "BEGIN IMMEDIATE", NULL, NULL) == SQLITE_OK;
        bool began = ok;
        ok = ok && store_version(s->db, &version, &n_tables);
        if (ok && version == 0 && n_tables > 0) {
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            if (diag != NULL)
                snprintf(diag->message, sizeof diag->message,
                         "not a pfi store (has tables but no pfi schema version)");
            pfi_store_close(s);
            return PFI_ERR_IO;
        }
        ok = ok && (version != 0 || sqlite3_exec(s->db, schema_v1, NULL, NULL, &err) == SQLITE_OK);
        ok = ok && sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
        if (!ok) {
            /* The message first: ROLLBACK would replace it with "not an error". */
            if (diag != NULL)
                snprintf(diag->message, sizeof diag->message, "cannot create schema: %s",
                         err != NULL ? err : sqlite3_errmsg(s->db));
            sqlite3_free(err);
            if (began)
                sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            pfi_store_close(s);
            return PFI_ERR_IO;
        }
    }
    *out = s;
    return PFI_OK;
}

void pfi_store_close(pfi_store *s)
{
    if (s == NULL)
        return;
    db_close(s->db);
    pfi_free(s);
}

static void bind_real(sqlite3_stmt *st, int i, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v != NULL && v[0] != '\0')
        sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

#define STR_(x) #x
#define STR(x) STR_(x)

const char *pfi_store_group_check(const char *name)
{
    if (name == NULL || name[0] == '\0')
        return "a group name must not be empty";
    bool blank = true;
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++, n++) {
        if (*p < 0x20 || *p == 0x7F)
            return "a group name must not contain control characters";
        blank &= *p == ' ';
    }
    if (blank)
        return "a group name must not be blanks only";
    if (!pfi_utf8_valid(name, strlen(name)))
        return "a group name must be UTF-8 text";
    if (n > PFI_STORE_MAX_GROUP)
        return "a group name must be at most " STR(PFI_STORE_MAX_GROUP) " bytes";
    return NULL;
}

/* The group's row, created or with its job class and GPU count updated when r gives them;
 * *gid its id. */
static bool put_group(sqlite3 *db, const pfi_store_run *r, sqlite3_int64 *gid)
{
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_prepare_v2(db,
                                 "INSERT INTO groups(name, job_class, gpus) VALUES(?1, ?2, ?3) "
                                 "ON CONFLICT(name) DO UPDATE SET "
                                 "job_class = coalesce(excluded.job_class, job_class), "
                                 "gpus = coalesce(excluded.gpus, gpus)",
                                 -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        bind_text(st, 1, r->group);
        bind_text(st, 2, r->job_class);
        if (r->gpus > 0)
            sqlite3_bind_int64(st, 3, r->gpus);
        else
            sqlite3_bind_null(st, 3);
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (!ok)
        return false;
    ok =
        sqlite3_prepare_v2(db, "SELECT id FROM groups WHERE name = ?1", -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        bind_text(st, 1, r->group);
        ok = sqlite3_step(st) == SQLITE_ROW;
        *gid = ok ? sqlite3_column_int64(st, 0) : -1;
    }
    sqlite3_finalize(st);
    return ok;
}

/* Delete group gid's run at cap_w, if it has one (then *replaced, may be NULL, is true). */
static bool drop_old_run(sqlite3 *db, sqlite3_int64 gid, double cap_w, bool *replaced)
{
    sqlite3_stmt *st = NULL;
    sqlite3_int64 old = -1;
    bool ok = sqlite3_prepare_v2(db, "SELECT id FROM runs WHERE group_id = ?1 AND cap_w = ?2", -1,
                                 &st, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_int64(st, 1, gid);
        sqlite3_bind_double(st, 2, cap_w);
        old = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (!ok || old < 0)
        return ok;
    ok = sqlite3_prepare_v2(db, "DELETE FROM runs WHERE id = ?1", -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_int64(st, 1, old);
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    if (replaced != NULL)
        *replaced = true;
    return ok;
}

/* The run's row in group gid, ingested at now; *rid its id. */
static bool insert_run(sqlite3 *db, sqlite3_int64 gid, const pfi_store_run *r, const char *now,
                       sqlite3_int64 *rid)
{
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_prepare_v2(
                  db,
                  "INSERT INTO runs(group_id, cap_w, power_w, power_se_w, power_n, throughput,"
                  " throughput_se, throughput_n, throughput_unit, power_field, energy_j, flags,"
                  " ingested_at) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)",
                  -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_int64(st, 1, gid);
        sqlite3_bind_double(st, 2, r->cap_w);
        bind_real(st, 3, r->power_w);
        bind_real(st, 4, r->power_se_w);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)r->power_n);
        bind_real(st, 6, r->throughput);
        bind_real(st, 7, r->throughput_se);
        sqlite3_bind_int64(st, 8, (sqlite3_int64)r->throughput_n);
        bind_text(st, 9, r->throughput_unit);
        bind_text(st, 10, r->power_field);
        bind_real(st, 11, r->energy_j);
        sqlite3_bind_int64(st, 12, r->flags);
        bind_text(st, 13, now);
        ok = sqlite3_step(st) == SQLITE_DONE;
        *rid = sqlite3_last_insert_rowid(db);
    }
    sqlite3_finalize(st);
    return ok;
}

/* The run's features (run rid). */
static bool insert_features(sqlite3 *db, sqlite3_int64 rid, const pfi_store_run *r)
{
    if (r->n_features == 0)
        return true;
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_prepare_v2(db,
                                 "INSERT OR REPLACE INTO features(run_id, name, value) "
                                 "VALUES(?1, ?2, ?3)",
                                 -1, &st, NULL) == SQLITE_OK;
    for (size_t i = 0; ok && i < r->n_features; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, rid);
        bind_text(st, 2, r->feature_name[i]);
        bind_real(st, 3, r->feature_value[i]);
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    return ok;
}

/* The run's source files (run rid), ingested at now. */
static bool insert_sources(sqlite3 *db, sqlite3_int64 rid, const pfi_store_run *r, const char *now)
{
    if (r->n_sources == 0)
        return true;
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_prepare_v2(db,
                                 "INSERT INTO sources(run_id, path, reader, ingested_at) "
                                 "VALUES(?1, ?2, ?3, ?4)",
                                 -1, &st, NULL) == SQLITE_OK;
    for (size_t i = 0; ok && i < r->n_sources; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, rid);
        sqlite3_bind_text(st, 2, r->sources[i].path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, r->sources[i].reader, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, now, -1, SQLITE_TRANSIENT);
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    return ok;
}

/* The run's GPUs (run rid), in run_gpus: created here when missing, so a store made before
 * it existed takes them too (the table is not part of the schema version). */
static bool insert_gpus(sqlite3 *db, sqlite3_int64 rid, const pfi_store_run *r)
{
    if (r->n_gpu_ids == 0)
        return true;
    if (sqlite3_exec(db,
                     "CREATE TABLE IF NOT EXISTS run_gpus(run_id INTEGER NOT NULL REFERENCES "
                     "runs(id) ON DELETE CASCADE, name TEXT NOT NULL, host TEXT, uuid TEXT, "
                     "PRIMARY KEY(run_id, name))",
                     NULL, NULL, NULL) != SQLITE_OK)
        return false;
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_prepare_v2(db,
                                 "INSERT OR REPLACE INTO run_gpus(run_id, name, host, uuid) "
                                 "VALUES(?1, ?2, ?3, ?4)",
                                 -1, &st, NULL) == SQLITE_OK;
    for (size_t i = 0; ok && i < r->n_gpu_ids; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, rid);
        sqlite3_bind_text(st, 2, r->gpu_ids[i].name, -1, SQLITE_TRANSIENT);
        bind_text(st, 3, r->gpu_ids[i].host);
        bind_text(st, 4, r->gpu_ids[i].uuid);
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    return ok;
}

/* One transaction: the group, the old run at this cap out, the run, its features and
 * sources in; any failure rolls all of it back. */
pfi_error pfi_store_put_run(pfi_store *s, const pfi_store_run *r, bool *replaced, pfi_diag *diag)
{
    if (replaced != NULL)
        *replaced = false;
    const char *why = pfi_store_group_check(r->group);
    if (why != NULL || !(isfinite(r->cap_w) && r->cap_w > 0)) {
        if (diag != NULL)
            snprintf(diag->message, sizeof diag->message, "%s",
                     why ? why : "a run's cap must be a number > 0 W");
        return PFI_ERR_INVALID_ARGUMENT;
    }
    char now[32];
    time_t t = time(NULL);
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    sqlite3 *db = s->db;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return fail(s, diag, "cannot start a transaction");
    sqlite3_int64 gid = -1, rid = -1;
    bool ok = put_group(db, r, &gid) && drop_old_run(db, gid, r->cap_w, replaced) &&
              insert_run(db, gid, r, now, &rid) && insert_features(db, rid, r) &&
              insert_sources(db, rid, r, now) && insert_gpus(db, rid, r);
    if (!ok || sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        pfi_error e = fail(s, diag, "cannot store the run");
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        if (replaced != NULL)
            *replaced = false;
        return e;
    }
    return PFI_OK;
}

pfi_error pfi_store_find_run(pfi_store *s, const char *group, const char *feature, double value,
                             bool *found, pfi_diag *diag)
{
    if (s == NULL || group == NULL || found == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    *found = false;
    static const char by_cap[] = "SELECT 1 FROM runs r JOIN groups g ON g.id = r.group_id"
                                 " WHERE g.name = ?1 AND r.cap_w = ?2 LIMIT 1";
    static const char by_feature[] = "SELECT 1 FROM runs r JOIN groups g ON g.id = r.group_id"
                                     " JOIN features f ON f.run_id = r.id"
                                     " WHERE g.name = ?1 AND f.name = ?3 AND f.value = ?2 LIMIT 1";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, feature ? by_feature : by_cap, -1, &st, NULL) != SQLITE_OK)
        return fail(s, diag, "cannot read runs");
    bind_text(st, 1, group);
    sqlite3_bind_double(st, 2, value);
    if (feature != NULL)
        bind_text(st, 3, feature);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(s, diag, "cannot read runs");
    *found = rc == SQLITE_ROW;
    return PFI_OK;
}

static const char export_sql[] =
    "SELECT g.name, g.job_class, g.gpus, r.cap_w, r.power_w, r.power_se_w, r.throughput,"
    " r.throughput_se, r.flags, r.power_field, r.throughput_unit, r.energy_j, r.power_n,"
    " r.throughput_n, r.id, g.id FROM runs r JOIN groups g ON g.id = r.group_id"
    " WHERE ?1 IS NULL OR g.name = ?1 ORDER BY g.name, r.cap_w DESC";

static double col_double(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
}

pfi_error pfi_store_each_run(pfi_store *s, const char *group_filter, pfi_store_row_fn fn, void *ctx,
                             size_t *n_runs, pfi_diag *diag)
{
    sqlite3_stmt *st = NULL;
    size_t n = 0;
    if (n_runs != NULL)
        *n_runs = 0;
    if (sqlite3_prepare_v2(s->db, export_sql, -1, &st, NULL) != SQLITE_OK)
        return fail(s, diag, "cannot read runs");
    bind_text(st, 1, group_filter);
    int rc;
    pfi_error e = PFI_OK;
    while (e == PFI_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        pfi_store_row row = {
            .group = (const char *)sqlite3_column_text(st, 0),
            .job_class = (const char *)sqlite3_column_text(st, 1),
            .has_gpus = sqlite3_column_type(st, 2) != SQLITE_NULL,
            .gpus = (long long)sqlite3_column_int64(st, 2),
            .cap_w = col_double(st, 3),
            .power_w = col_double(st, 4),
            /* a store written before the rounding rule may hold noise such as 4e-15 */
            .power_se_w = pfi_se_rounded(col_double(st, 5), col_double(st, 4)),
            .throughput = col_double(st, 6),
            .throughput_se = pfi_se_rounded(col_double(st, 7), col_double(st, 6)),
            .flags = (unsigned)sqlite3_column_int64(st, 8),
            .power_field = (const char *)sqlite3_column_text(st, 9),
            .throughput_unit = (const char *)sqlite3_column_text(st, 10),
            .energy_j = col_double(st, 11),
            .power_n = (long long)sqlite3_column_int64(st, 12),
            .throughput_n = (long long)sqlite3_column_int64(st, 13),
            .group_id = (long long)sqlite3_column_int64(st, 15),
        };
        e = fn(ctx, &row);
        if (e == PFI_OK)
            n++;
    }
    sqlite3_finalize(st);
    if (n_runs != NULL)
        *n_runs = n;
    if (e != PFI_OK)
        return e;
    if (rc != SQLITE_DONE)
        return fail(s, diag, "cannot read runs");
    return PFI_OK;
}

/* A number cell of the export: empty when missing (or blanked), else exact (%.17g). */
static void csv_num(FILE *f, double v)
{
    if (!isnan(v))
        fprintf(f, "%.17g", v);
}

typedef struct {
    FILE *f;
    bool usable_only;
} export_ctx;

static pfi_error export_row(void *ctx, const pfi_store_row *r)
{
    const export_ctx *x = ctx;
    FILE *f = x->f;
    bool invalid = x->usable_only && (r->flags & PFI_RED_INVALID) != 0;
    pfi_csv_write_field(f, r->group);
    fputc(',', f);
    pfi_csv_write_field(f, r->job_class);
    fputc(',', f);
    if (r->has_gpus)
        fprintf(f, "%lld", r->gpus);
    fputc(',', f);
    csv_num(f, r->cap_w);
    fputc(',', f);
    csv_num(f, invalid ? NAN : r->power_w);
    fputc(',', f);
    csv_num(f, invalid ? NAN : r->power_se_w);
    fputc(',', f);
    csv_num(f, r->throughput);
    fputc(',', f);
    csv_num(f, r->throughput_se);
    fprintf(f, ",%u,", r->flags);
    pfi_csv_write_field(f, r->power_field);
    fputc(',', f);
    pfi_csv_write_field(f, r->throughput_unit);
    fputc(',', f);
    csv_num(f, r->energy_j);
    fprintf(f, ",%lld,%lld\n", r->power_n, r->throughput_n);
    return PFI_OK;
}

pfi_error pfi_store_export_csv(pfi_store *s, FILE *f, bool usable_only, const char *group_filter,
                               size_t *n_runs, pfi_diag *diag)
{
    fputs("group,job_class,gpus,cap_w,power_w,power_se_w,throughput,throughput_se,flags,"
          "power_field,throughput_unit,energy_j,power_n,throughput_n\n",
          f);
    export_ctx x = {.f = f, .usable_only = usable_only};
    pfi_error e = pfi_store_each_run(s, group_filter, export_row, &x, n_runs, diag);
    if (e != PFI_OK)
        return e;
    return ferror(f) ? PFI_ERR_IO : PFI_OK;
}

/* s (any bytes: a name from a file or a command line) as a JSON string, invalid UTF-8 as
 * U+FFFD (pfi_utf8_repair; jansson refuses it); null when s is NULL; NULL when out of memory. */
static json_t *json_text(const char *s)
{
    if (s == NULL)
        return json_null();
    char *u = pfi_utf8_repair(s, strlen(s));
    json_t *j = u != NULL ? json_string(u) : NULL;
    pfi_free(u);
    return j;
}

static json_t *col_json(sqlite3_stmt *st, int col)
{
    switch (sqlite3_column_type(st, col)) {
    case SQLITE_NULL:
        return json_null();
    case SQLITE_INTEGER:
        return json_integer(sqlite3_column_int64(st, col));
    case SQLITE_FLOAT:
        return json_real(sqlite3_column_double(st, col));
    default:
        return json_text((const char *)sqlite3_column_text(st, col));
    }
}

pfi_error pfi_store_export_json(pfi_store *s, FILE *f, const char *group_filter, size_t *n_runs,
                                pfi_diag *diag)
{
    static const char *const names[] = {
        "group",           "job_class",  "gpus",          "cap_w",       "power_w",
        "power_se_w",      "throughput", "throughput_se", "flags",       "power_field",
        "throughput_unit", "energy_j",   "power_n",       "throughput_n"};
    sqlite3_stmt *st = NULL, *fs = NULL, *ss = NULL;
    unsigned long jf = pfi_json_failures();
    json_t *arr = json_array();
    if (arr == NULL)
        return PFI_ERR_NOMEM;
    if (sqlite3_prepare_v2(s->db, export_sql, -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
                           "SELECT name, value FROM features WHERE run_id = ?1 "
                           "ORDER BY name",
                           -1, &fs, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
                           "SELECT path, reader, ingested_at FROM sources WHERE "
                           "run_id = ?1",
                           -1, &ss, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        sqlite3_finalize(fs);
        json_decref(arr);
        return fail(s, diag, "cannot read runs");
    }
    bind_text(st, 1, group_filter);
    int rc;
    size_t n = 0;
    bool nomem = false; /* a name's UTF-8 copy (pfi_utf8_repair) not allocated */
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *o = json_object();
        for (int c = 0; c < 14; c++) {
            /* a standard error (after its estimate): rounding noise is 0, as in the CSV */
            bool se = (c == 5 || c == 7) && sqlite3_column_type(st, c) != SQLITE_NULL;
            if (json_object_set_new(
                    o, names[c],
                    se ? json_real(pfi_se_rounded(col_double(st, c), col_double(st, c - 1)))
                       : col_json(st, c)) != 0)
                nomem = true;
        }
        sqlite3_int64 rid = sqlite3_column_int64(st, 14);
        json_t *feat = json_object();
        sqlite3_reset(fs);
        sqlite3_bind_int64(fs, 1, rid);
        while (sqlite3_step(fs) == SQLITE_ROW) {
            const char *fname = (const char *)sqlite3_column_text(fs, 0);
            char *key = fname != NULL ? pfi_utf8_repair(fname, strlen(fname)) : NULL;
            json_t *v = col_json(fs, 1);
            if (key == NULL) { /* v is ours still: set_new did not take it */
                json_decref(v);
                nomem = true;
            } else if (json_object_set_new(feat, key, v) != 0) {
                nomem = true;
            }
            pfi_free(key);
        }
        json_object_set_new(o, "features", feat);
        json_t *src = json_array();
        sqlite3_reset(ss);
        sqlite3_bind_int64(ss, 1, rid);
        while (sqlite3_step(ss) == SQLITE_ROW) {
            /* json_object_set_new takes each value's reference even when it fails (a
             * json_pack of three "o" would leak the others when one is NULL) */
            static const char *const skey[3] = {"path", "reader", "ingested_at"};
            json_t *so = json_object();
            for (int k = 0; k < 3; k++)
                if (json_object_set_new(so, skey[k],
                                        json_text((const char *)sqlite3_column_text(ss, k))) != 0)
                    nomem = true;
            if (json_array_append_new(src, so) != 0)
                nomem = true;
        }
        json_object_set_new(o, "sources", src);
        json_array_append_new(arr, o);
        n++;
    }
    sqlite3_finalize(st);
    sqlite3_finalize(fs);
    sqlite3_finalize(ss);
    if (n_runs != NULL)
        *n_runs = n;
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return fail(s, diag, "cannot read runs");
    }
    /* a member or run jansson could not allocate is left out without an error */
    if (nomem || pfi_json_failed(jf)) {
        json_decref(arr);
        return PFI_ERR_NOMEM;
    }
    int w = json_dumpf(arr, f, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    fputc('\n', f);
    json_decref(arr);
    if (pfi_json_failed(jf))
        return PFI_ERR_NOMEM;
    return w == 0 && !ferror(f) ? PFI_OK : PFI_ERR_IO;
}

/* ---- the stored runs as a runs table ---------------------------------------------------- */

/* The columns analysis reads, named as in the CSV export (its diagnostics name them so). */
enum {
    RC_GROUP,
    RC_JOB_CLASS,
    RC_GPUS,
    RC_CAP,
    RC_POWER,
    RC_POWER_SE,
    RC_TPUT,
    RC_TPUT_SE,
    RC_COLUMNS
};
static const char *const run_columns[RC_COLUMNS] = {
    "group", "job_class", "gpus", "cap_w", "power_w", "power_se_w", "throughput", "throughput_se"};

/* The stored runs as cells for pfi_runs_read_cells: RC_COLUMNS a run, each run's line in
 * the CSV export, and the group names and job classes the cells point to (owned). */
typedef struct run_cells {
    pfi_runs_cell *cells;
    long *line;
    size_t n, cap;
    char *text[2]; /* the current group's name and job class, while it is read */
    char **texts;  /* every group's, to free */
    size_t n_texts, texts_cap;
} run_cells;

static void run_cells_free(run_cells *rc)
{
    for (size_t i = 0; i < rc->n_texts; i++)
        pfi_free(rc->texts[i]);
    pfi_free(rc->texts);
    pfi_free(rc->cells);
    pfi_free(rc->line);
}

/*
 * A text cell as analysis has always read it. The runs used to reach analysis through the
 * CSV export and its reader, which drops the blanks (spaces, tabs) around a cell the export
 * did not quote, one without a comma, quote or line break: " b " and "b" are one group.
 * The copy (NULL for SQL NULL) is kept in rc->texts. false: out of memory.
 */
static bool cell_text(run_cells *rc, const char *s, char **out)
{
    *out = NULL;
    if (s == NULL)
        return true;
    size_t len = strlen(s);
    if (strpbrk(s, ",\"\n\r") == NULL) {
        while (len > 0 && (*s == ' ' || *s == '\t')) {
            s++;
            len--;
        }
        while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
    }
    if (rc->n_texts == rc->texts_cap) {
        size_t nc = rc->texts_cap ? 2 * rc->texts_cap : 16;
        char **q = pfi_realloc(rc->texts, nc * sizeof *q);
        if (q == NULL)
            return false;
        rc->texts = q;
        rc->texts_cap = nc;
    }
    if ((*out = pfi_strndup(s, len)) == NULL)
        return false;
    rc->texts[rc->n_texts++] = *out;
    return true;
}

/* The line breaks of a text cell: a quoted cell with one spans lines of the export. */
static long line_breaks(const char *s)
{
    long n = 0;
    for (; s != NULL && *s; s++)
        n += *s == '\n';
    return n;
}

/* One run's row of cells from the store's row r; *line is its line in the export (the next
 * run's on return). false: out of memory. */
static bool take_run(run_cells *rc, const pfi_store_row *r, bool new_group, long *line)
{
    if (rc->n == rc->cap) {
        size_t nc = rc->cap ? 2 * rc->cap : 64;
        pfi_runs_cell *q = pfi_realloc(rc->cells, nc * RC_COLUMNS * sizeof *q);
        if (q != NULL)
            rc->cells = q;
        long *l = pfi_realloc(rc->line, nc * sizeof *l);
        if (l != NULL)
            rc->line = l;
        if (q == NULL || l == NULL)
            return false;
        rc->cap = nc;
    }
    if (new_group &&
        (!cell_text(rc, r->group, &rc->text[0]) || !cell_text(rc, r->job_class, &rc->text[1])))
        return false;
    /* a run the reduction marked invalid keeps its cap and throughput, not its power */
    bool invalid = (r->flags & PFI_RED_INVALID) != 0;
    pfi_runs_cell *c = rc->cells + rc->n * RC_COLUMNS;
    for (int k = 0; k < RC_COLUMNS; k++)
        c[k] = (pfi_runs_cell){.text = NULL, .value = NAN};
    c[RC_GROUP].text = rc->text[0];
    c[RC_JOB_CLASS].text = rc->text[1];
    if (r->has_gpus)
        c[RC_GPUS].value = (double)r->gpus;
    c[RC_CAP].value = r->cap_w;
    c[RC_POWER].value = invalid ? NAN : r->power_w;
    c[RC_POWER_SE].value = invalid ? NAN : r->power_se_w;
    c[RC_TPUT].value = r->throughput;
    c[RC_TPUT_SE].value = r->throughput_se;
    rc->line[rc->n++] = *line;
    *line += 1 + line_breaks(r->group) + line_breaks(r->job_class) + line_breaks(r->power_field) +
             line_breaks(r->throughput_unit);
    return true;
}

/* The walk of read_run_cells: the run store's rows (pfi_store_each_run) into cells. */
typedef struct read_walk {
    run_cells *rc;
    long line;          /* the next run's line in the export */
    long long group_id; /* the group of the last run taken */
} read_walk;

static pfi_error take_row(void *ctx, const pfi_store_row *r)
{
    read_walk *w = ctx;
    bool new_group = w->rc->n == 0 || r->group_id != w->group_id;
    w->group_id = r->group_id;
    return take_run(w->rc, r, new_group, &w->line) ? PFI_OK : PFI_ERR_NOMEM;
}

/* Every stored run (of group_filter, NULL all) into rc. Errors: PFI_ERR_IO, PFI_ERR_NOMEM. */
static pfi_error read_run_cells(pfi_store *s, const char *group_filter, run_cells *rc,
                                pfi_diag *diag)
{
    read_walk w = {.rc = rc, .line = 2}; /* below the export's header line */
    return pfi_store_each_run(s, group_filter, take_row, &w, NULL, diag);
}

pfi_error pfi_store_read_runs(pfi_store *s, pfi_runs_table *t, const char *group_filter,
                              size_t *n_runs, pfi_diag *diag)
{
    if (s == NULL || t == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    run_cells rc = {0};
    pfi_error e = read_run_cells(s, group_filter, &rc, diag);
    if (n_runs != NULL)
        *n_runs = rc.n;
    if (e == PFI_OK && rc.n == 0) {
        if (diag != NULL)
            snprintf(diag->message, sizeof diag->message, "the store holds no runs%s%s",
                     group_filter ? " in group " : " (use 'pfi ingest')",
                     group_filter ? group_filter : "");
        e = PFI_ERR_EMPTY;
    }
    /* the columns mapped onto the runs reader's fields */
    pfi_mapping map = {0};
    static const char *const pairs[][2] = {{"group", "group"},
                                           {"cap", "cap_w"},
                                           {"power", "power_w"},
                                           {"power_se", "power_se_w"},
                                           {"throughput", "throughput"},
                                           {"throughput_se", "throughput_se"},
                                           {"gpus", "gpus"},
                                           {"job_class", "job_class"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0] && e == PFI_OK; i++)
        e = pfi_mapping_set(&map, pairs[i][0], pairs[i][1]);
    if (e == PFI_OK) {
        const char *name = sqlite3_db_filename(s->db, "main");
        e = pfi_runs_read_cells(t, name && *name ? name : "store", run_columns, RC_COLUMNS,
                                rc.cells, rc.line, rc.n, &map, diag);
    }
    pfi_mapping_clear(&map);
    run_cells_free(&rc);
    return e;
}

pfi_error pfi_store_run_features(pfi_store *s, const char *group, double cap_w, char (**names)[64],
                                 double **values, size_t *n, pfi_diag *diag)
{
    if (s == NULL || group == NULL || names == NULL || values == NULL || n == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    *names = NULL;
    *values = NULL;
    *n = 0;
    static const char sql[] =
        "SELECT f.name, f.value FROM features f JOIN runs r ON r.id = f.run_id"
        " JOIN groups g ON g.id = r.group_id WHERE g.name = ?1 AND r.cap_w = ?2"
        " ORDER BY f.name";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return fail(s, diag, "cannot read features");
    bind_text(st, 1, group);
    sqlite3_bind_double(st, 2, cap_w);
    size_t cap = 0, k = 0;
    char(*nm)[64] = NULL;
    double *v = NULL;
    int rc;
    pfi_error e = PFI_OK;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (k == cap) {
            size_t nc = cap ? cap * 2 : 16;
            char(*nn)[64] = pfi_realloc(nm, nc * sizeof *nn);
            if (nn != NULL)
                nm = nn;
            double *nv = pfi_realloc(v, nc * sizeof *nv);
            if (nv != NULL)
                v = nv;
            if (nn == NULL || nv == NULL) {
                e = PFI_ERR_NOMEM;
                break;
            }
            cap = nc;
        }
        const unsigned char *name = sqlite3_column_text(st, 0);
        snprintf(nm[k], sizeof nm[k], "%.63s", name ? (const char *)name : "");
        v[k] = sqlite3_column_type(st, 1) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 1);
        k++;
    }
    sqlite3_finalize(st);
    if (e == PFI_OK && rc != SQLITE_DONE)
        e = fail(s, diag, "cannot read features");
    if (e != PFI_OK) {
        pfi_free(nm);
        pfi_free(v);
        return e;
    }
    *names = nm;
    *values = v;
    *n = k;
    return PFI_OK;
}
