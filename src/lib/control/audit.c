/*
 * The controller's audit log: every period's inputs, decision, caps sent, confirmations and
 * measured power in SQLite (WAL; one transaction per period, so a killed controller leaves
 * whole periods only). Tables ctl_* live beside the run store's in the same file when --db
 * names a run store. Missing values are NULL, never 0.
 */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "control/ctl_internal.h"
#include "core/db_close.h"
#include "core/memory.h"
#include "pfi/audit.h"
#include "pfi/control.h"

struct ctl_audit {
    sqlite3 *db;
    long run;
    sqlite3_stmt *period, *job, *cap, *orig;
};

static const char *schema =
    "CREATE TABLE IF NOT EXISTS ctl_runs(id INTEGER PRIMARY KEY, started_wall REAL,"
    " config TEXT);"
    "CREATE TABLE IF NOT EXISTS ctl_periods(id INTEGER PRIMARY KEY, run INTEGER, t_s REAL,"
    " wall_s REAL, event INTEGER, budget_w REAL, alloc_budget_w REAL, measured_w REAL,"
    " reserved_w REAL, predicted_w REAL, correction_w REAL, ref_w REAL, tput_tok_s REAL,"
    " cap_sum_w REAL, strategy TEXT, agents_up INTEGER, agents INTEGER, jobs INTEGER,"
    " gpus INTEGER, decreases INTEGER, increases INTEGER, unconfirmed INTEGER,"
    " telemetry TEXT, restored INTEGER, note TEXT, faults TEXT, bound TEXT,"
    " ramp_limited INTEGER, lead INTEGER);"
    "CREATE TABLE IF NOT EXISTS ctl_jobs(period INTEGER, job TEXT, class TEXT, gpus INTEGER,"
    " pfi REAL, source TEXT, cap_w REAL, ref_power_w REAL, ref_tput REAL, power_w REAL,"
    " pred_power_w REAL, tput REAL, cap_state TEXT, band REAL);"
    "CREATE TABLE IF NOT EXISTS ctl_caps(period INTEGER, phase INTEGER, agent TEXT,"
    " uuid TEXT, requested_w REAL, enforced_w REAL, what TEXT);"
    "CREATE TABLE IF NOT EXISTS ctl_originals(uuid TEXT PRIMARY KEY, agent TEXT,"
    " original_w REAL);"
    "CREATE INDEX IF NOT EXISTS ctl_jobs_job ON ctl_jobs(job);";

pfi_error ctl_audit_not_a_file(const char *path, bool must_exist, pfi_diag *d)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return ctl_fail(d, 0, PFI_ERR_IO, "audit log: %s: is a directory, not an audit log", path);
    if (must_exist && stat(path, &st) != 0)
        return ctl_fail(d, 0, PFI_ERR_IO, "audit log: %s: %s", path, strerror(errno));
    return PFI_OK;
}

/* "audit log: PATH: WHAT: why" (what NULL: "audit log: PATH: why"); PFI_ERR_IO. */
static pfi_error db_fail(sqlite3 *db, pfi_diag *d, const char *path, const char *what)
{
    return ctl_fail(d, 0, PFI_ERR_IO, "audit log: %s: %s%s%s", path ? path : "?", what ? what : "",
                    what ? ": " : "", db ? sqlite3_errmsg(db) : "cannot open");
}

/* The columns of each table the audit log makes, in the order pfi makes them; a log written
 * before a column was added (ALTER TABLE ... ADD COLUMN, at the end) has the first `least`
 * of them only. */
static const struct {
    const char *name;
    int least;
    const char *cols[30];
} audit_cols[] = {
    {"ctl_runs", 3, {"id", "started_wall", "config"}},
    {"ctl_periods",
     25,
     {"id",
      "run",
      "t_s",
      "wall_s",
      "event",
      "budget_w",
      "alloc_budget_w",
      "measured_w",
      "reserved_w",
      "predicted_w",
      "correction_w",
      "ref_w",
      "tput_tok_s",
      "cap_sum_w",
      "strategy",
      "agents_up",
      "agents",
      "jobs",
      "gpus",
      "decreases",
      "increases",
      "unconfirmed",
      "telemetry",
      "restored",
      "note",
      "faults",
      "bound",
      "ramp_limited",
      "lead"}},
    {"ctl_jobs",
     12,
     {"period", "job", "class", "gpus", "pfi", "source", "cap_w", "ref_power_w", "ref_tput",
      "power_w", "pred_power_w", "tput", "cap_state", "band"}},
    {"ctl_caps", 7, {"period", "phase", "agent", "uuid", "requested_w", "enforced_w", "what"}},
    {"ctl_originals", 3, {"uuid", "agent", "original_w"}},
};

/* Each audit table present in db has the columns pfi makes, in pfi's order (at least those
 * every pfi version wrote, none of another's); a table named ctl_runs another program made
 * (`create table ctl_runs(x)`) is no audit log. Read-only. Errors: PFI_ERR_IO naming path,
 * the table and the first column that differs. */
static pfi_error audit_tables(sqlite3 *db, const char *path, pfi_diag *d)
{
    for (size_t t = 0; t < sizeof audit_cols / sizeof audit_cols[0]; t++) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?) ORDER BY cid", -1, &q,
                               NULL) != SQLITE_OK)
            return ctl_fail(d, 0, PFI_ERR_IO,
                            "audit log: %s: not a pfi control audit log (%s): refused, left as "
                            "it was; give --db a new file or an audit log",
                            path, sqlite3_errmsg(db));
        sqlite3_bind_text(q, 1, audit_cols[t].name, -1, SQLITE_STATIC);
        int n = 0, max = audit_cols[t].least;
        while (max < 30 && audit_cols[t].cols[max] != NULL)
            max++;
        const char *bad = NULL;
        int rc;
        char got[128] = "";
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            const char *c = (const char *)sqlite3_column_text(q, 0);
            if (n >= max || c == NULL || strcmp(c, audit_cols[t].cols[n]) != 0) {
                snprintf(got, sizeof got, "%s", c ? c : "");
                bad = n < max ? audit_cols[t].cols[n] : "";
                break;
            }
            n++;
        }
        sqlite3_finalize(q);
        if (bad == NULL && rc != SQLITE_ROW && rc != SQLITE_DONE)
            return ctl_fail(d, 0, PFI_ERR_IO,
                            "audit log: %s: not a pfi control audit log (%s): refused, left as "
                            "it was; give --db a new file or an audit log",
                            path, sqlite3_errmsg(db));
        if (bad == NULL && n > 0 && n < audit_cols[t].least)
            bad = audit_cols[t].cols[n];
        if (bad != NULL)
            return ctl_fail(d, 0, PFI_ERR_IO,
                            "audit log: %s: not a pfi control audit log (table %s: column %d is "
                            "%s%s%s, pfi writes %s): refused, left as it was; give --db a new "
                            "file or an audit log",
                            path, audit_cols[t].name, n + 1, got[0] ? "\"" : "",
                            got[0] ? got : "missing", got[0] ? "\"" : "",
                            bad[0] ? bad : "no more columns");
    }
    return PFI_OK;
}

/* A file at path that the audit log must not be appended to: another program's SQLite
 * database, or no SQLite database at all (a CSV given as --db). An audit log (ctl_runs), a
 * pfi run store (user_version and its runs and groups: the ctl_* tables live beside its
 * own), an empty database or file, or no file, is taken. Read-only: a file refused is left
 * as it was, byte for byte (no journal mode switched, no table made). Errors: PFI_ERR_IO. */
static pfi_error audit_foreign(const char *path, pfi_diag *d)
{
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size == 0)
        return PFI_OK; /* a new log */
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    pfi_error e = PFI_OK;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "SELECT (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND"
                           " name = 'ctl_runs'), (SELECT count(*) FROM sqlite_master WHERE type ="
                           " 'table' AND name IN ('runs', 'groups')), (SELECT count(*) FROM"
                           " sqlite_master), (SELECT user_version FROM pragma_user_version)",
                           -1, &q, NULL) != SQLITE_OK ||
        sqlite3_step(q) != SQLITE_ROW) {
        e = ctl_fail(d, 0, PFI_ERR_IO,
                     "audit log: %s: not a pfi control audit log (%s): refused, left as it "
                     "was; give --db a new file or an audit log",
                     path, db ? sqlite3_errmsg(db) : "cannot open");
    } else if (sqlite3_column_int(q, 0) == 0 && sqlite3_column_int(q, 2) > 0 &&
               !(sqlite3_column_int(q, 3) > 0 && sqlite3_column_int(q, 1) == 2)) {
        e = ctl_fail(d, 0, PFI_ERR_IO,
                     "audit log: %s: not a pfi control audit log (an SQLite database with "
                     "other tables, no ctl_runs; nor a pfi run store): refused, left as it was; "
                     "give --db a new file or an audit log",
                     path);
    }
    sqlite3_finalize(q);
    q = NULL;
    if (e == PFI_OK)
        e = audit_tables(db, path, d);
    sqlite3_close(db);
    return e;
}

pfi_error pfi_audit_check(const char *path, pfi_diag *diag)
{
    pfi_diag_clear(diag);
    if (path == NULL)
        return ctl_fail(diag, 0, PFI_ERR_INVALID_ARGUMENT, "audit log: no path");
    pfi_error e = ctl_audit_not_a_file(path, false, diag);
    return e != PFI_OK ? e : audit_foreign(path, diag);
}

pfi_error ctl_audit_open(const char *path, const char *config_json, ctl_audit **out, pfi_diag *d)
{
    *out = NULL;
    ctl_audit *a = pfi_calloc(1, sizeof *a);
    if (a == NULL)
        return PFI_ERR_NOMEM;
    pfi_error e;
    if ((e = ctl_audit_not_a_file(path, false, d)) != PFI_OK ||
        (e = audit_foreign(path, d)) != PFI_OK)
        goto fail;
    struct stat fs; /* a device (/dev/full) holds no database: no journal made beside it */
    if (stat(path, &fs) == 0 && !S_ISREG(fs.st_mode)) {
        e = ctl_fail(d, 0, PFI_ERR_IO,
                     "audit log: %s: cannot be written: not a regular file (a device, a FIFO)",
                     path);
        goto fail;
    }
    if (sqlite3_open_v2(path, &a->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        e = db_fail(a->db, d, path, NULL);
        goto fail;
    }
    sqlite3_busy_timeout(a->db, 2000);
    if (sqlite3_exec(a->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL,
                     NULL) != SQLITE_OK ||
        sqlite3_exec(a->db, schema, NULL, NULL, NULL) != SQLITE_OK) {
        e = db_fail(a->db, d, path, "schema");
        goto fail;
    }
    /* a log written before the faults column: add it (an error says it is there) */
    sqlite3_exec(a->db, "ALTER TABLE ctl_periods ADD COLUMN faults TEXT", NULL, NULL, NULL);
    /* and before cap_state (the cap in force: "confirmed", "refused (401)"; NULL none) */
    sqlite3_exec(a->db, "ALTER TABLE ctl_jobs ADD COLUMN cap_state TEXT", NULL, NULL, NULL);
    /* and before the power tree (the levels that bound; the ramp that held the budget back) */
    sqlite3_exec(a->db, "ALTER TABLE ctl_periods ADD COLUMN bound TEXT", NULL, NULL, NULL);
    sqlite3_exec(a->db, "ALTER TABLE ctl_periods ADD COLUMN ramp_limited INTEGER", NULL, NULL,
                 NULL);
    /* and before the ramp's lead was told from the event (1: a lead period, event 0) */
    sqlite3_exec(a->db, "ALTER TABLE ctl_periods ADD COLUMN lead INTEGER", NULL, NULL, NULL);
    /* and before each job's priority band was kept (the band in force that period, from
     * --policy, --qos-band or PUT /v1/jobs/ID; NULL in the rows of an older pfi) */
    sqlite3_exec(a->db, "ALTER TABLE ctl_jobs ADD COLUMN band REAL", NULL, NULL, NULL);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(a->db, "INSERT INTO ctl_runs(started_wall, config) VALUES(?, ?)", -1,
                           &st, NULL) != SQLITE_OK) {
        e = db_fail(a->db, d, path, "prepare");
        goto fail;
    }
    sqlite3_bind_double(st, 1, (double)time(NULL));
    sqlite3_bind_text(st, 2, config_json ? config_json : "{}", -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        e = db_fail(a->db, d, path, "insert run");
        goto fail;
    }
    a->run = (long)sqlite3_last_insert_rowid(a->db);
    if (sqlite3_prepare_v2(
            a->db,
            "INSERT INTO ctl_periods(run, t_s, wall_s, event, budget_w, alloc_budget_w,"
            " measured_w, reserved_w, predicted_w, correction_w, ref_w, tput_tok_s, cap_sum_w,"
            " strategy, agents_up, agents, jobs, gpus, decreases, increases, unconfirmed,"
            " telemetry, restored, note, faults, bound, ramp_limited, lead)"
            " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            -1, &a->period, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(a->db, "INSERT INTO ctl_jobs VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1,
                           &a->job, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(a->db, "INSERT INTO ctl_caps VALUES(?,?,?,?,?,?,?)", -1, &a->cap,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(a->db, "INSERT OR IGNORE INTO ctl_originals VALUES(?,?,?)", -1, &a->orig,
                           NULL) != SQLITE_OK) {
        e = db_fail(a->db, d, path, "prepare");
        goto fail;
    }
    *out = a;
    return PFI_OK;
fail:
    ctl_audit_close(a);
    return e;
}

void ctl_audit_close(ctl_audit *a)
{
    if (a == NULL)
        return;
    sqlite3_finalize(a->period);
    sqlite3_finalize(a->job);
    sqlite3_finalize(a->cap);
    sqlite3_finalize(a->orig);
    db_close(a->db);
    pfi_free(a);
}

long ctl_audit_run_id(const ctl_audit *a)
{
    return a->run;
}

pfi_error ctl_audit_begin(ctl_audit *a)
{
    return sqlite3_exec(a->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK ? PFI_OK : PFI_ERR_IO;
}

pfi_error ctl_audit_commit(ctl_audit *a, pfi_diag *d)
{
    if (sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        pfi_error e = db_fail(a->db, d, sqlite3_db_filename(a->db, "main"), "commit");
        sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
        return e;
    }
    return PFI_OK;
}

static void bind_num(sqlite3_stmt *st, int i, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

static pfi_error finish(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? PFI_OK : PFI_ERR_IO;
}

pfi_error ctl_audit_period(ctl_audit *a, const pfi_ctl_report *r, const char *strategy,
                           double wall_s, long *id)
{
    sqlite3_stmt *s = a->period;
    int i = 1;
    sqlite3_bind_int64(s, i++, a->run);
    bind_num(s, i++, r->t_s);
    bind_num(s, i++, wall_s);
    /* a ramp's lead is no event: the event is the schedule's window alone */
    sqlite3_bind_int(s, i++, r->event && !r->lead);
    bind_num(s, i++, r->budget_w);
    bind_num(s, i++, r->alloc_budget_w);
    bind_num(s, i++, r->measured_w);
    bind_num(s, i++, r->reserved_w);
    bind_num(s, i++, r->predicted_w);
    bind_num(s, i++, r->correction_w);
    bind_num(s, i++, r->ref_w);
    bind_num(s, i++, r->tput_tok_s);
    bind_num(s, i++, r->cap_sum_w);
    sqlite3_bind_text(s, i++, strategy, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, i++, (long)r->agents_up);
    sqlite3_bind_int64(s, i++, (long)r->agents);
    sqlite3_bind_int64(s, i++, (long)r->jobs);
    sqlite3_bind_int64(s, i++, (long)r->gpus);
    sqlite3_bind_int64(s, i++, (long)r->decreases);
    sqlite3_bind_int64(s, i++, (long)r->increases);
    sqlite3_bind_int64(s, i++, (long)r->unconfirmed);
    sqlite3_bind_text(s, i++, r->prom_used ? "prometheus" : "agents", -1, SQLITE_STATIC);
    sqlite3_bind_int(s, i++, r->restored);
    sqlite3_bind_text(s, i++, r->note, -1, SQLITE_TRANSIENT);
    char faults[256];
    if (pfi_ctl_report_faults(r, faults, sizeof faults))
        sqlite3_bind_text(s, i++, faults, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i++);
    if (r->bound[0] != '\0')
        sqlite3_bind_text(s, i++, r->bound, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i++);
    sqlite3_bind_int(s, i++, r->ramp_limited);
    sqlite3_bind_int(s, i++, r->event && r->lead);
    pfi_error e = finish(s);
    *id = (long)sqlite3_last_insert_rowid(a->db);
    return e;
}

pfi_error ctl_audit_job(ctl_audit *a, long period, const char *job, const char *cls, size_t gpus,
                        double pfi, const char *source, double cap_w, double ref_power_w,
                        double ref_tput, double power_w, double pred_power_w, double tput,
                        const char *cap_state, double band)
{
    sqlite3_stmt *s = a->job;
    sqlite3_bind_int64(s, 1, period);
    sqlite3_bind_text(s, 2, job, -1, SQLITE_TRANSIENT);
    if (cls && cls[0])
        sqlite3_bind_text(s, 3, cls, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 4, (long)gpus);
    bind_num(s, 5, pfi);
    sqlite3_bind_text(s, 6, source, -1, SQLITE_STATIC);
    bind_num(s, 7, cap_w);
    bind_num(s, 8, ref_power_w);
    bind_num(s, 9, ref_tput);
    bind_num(s, 10, power_w);
    bind_num(s, 11, pred_power_w);
    bind_num(s, 12, tput);
    if (cap_state != NULL && cap_state[0] != '\0')
        sqlite3_bind_text(s, 13, cap_state, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, 13);
    bind_num(s, 14, band);
    return finish(s);
}

pfi_error ctl_audit_cap(ctl_audit *a, long period, int phase, const char *agent, const char *uuid,
                        double requested_w, double enforced_w, const char *what)
{
    sqlite3_stmt *s = a->cap;
    sqlite3_bind_int64(s, 1, period);
    sqlite3_bind_int(s, 2, phase);
    sqlite3_bind_text(s, 3, agent, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 4, uuid, -1, SQLITE_TRANSIENT);
    bind_num(s, 5, requested_w);
    bind_num(s, 6, enforced_w);
    sqlite3_bind_text(s, 7, what, -1, SQLITE_TRANSIENT);
    return finish(s);
}

pfi_error ctl_audit_original(ctl_audit *a, const char *agent, const char *uuid, double w)
{
    sqlite3_stmt *s = a->orig;
    sqlite3_bind_text(s, 1, uuid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, agent, -1, SQLITE_TRANSIENT);
    bind_num(s, 3, w);
    return finish(s);
}

static bool one_row(sqlite3 *db, const char *sql, const char *arg, double *a, double *b)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return false;
    if (arg != NULL)
        sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
    bool ok = false;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *a = sqlite3_column_double(st, 0);
        if (b != NULL)
            *b = sqlite3_column_type(st, 1) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 1);
        ok = true;
    }
    sqlite3_finalize(st);
    return ok;
}

bool ctl_audit_job_ref(ctl_audit *a, const char *job, double *ref_power_w, double *ref_tput)
{
    return one_row(a->db,
                   "SELECT ref_power_w, ref_tput FROM ctl_jobs WHERE job = ? AND ref_power_w IS"
                   " NOT NULL ORDER BY period DESC LIMIT 1",
                   job, ref_power_w, ref_tput);
}

bool ctl_audit_job_model_pfi(ctl_audit *a, const char *job, double *pfi)
{
    return one_row(a->db,
                   "SELECT pfi FROM ctl_jobs WHERE job = ? AND source = 'model' AND pfi IS NOT"
                   " NULL ORDER BY period DESC LIMIT 1",
                   job, pfi, NULL);
}

bool ctl_audit_original_get(ctl_audit *a, const char *uuid, double *w)
{
    return one_row(a->db, "SELECT original_w FROM ctl_originals WHERE uuid = ?", uuid, w, NULL);
}

bool ctl_audit_last_correction(ctl_audit *a, double *corr_w)
{
    return one_row(a->db,
                   "SELECT correction_w FROM ctl_periods WHERE event = 1 AND id = (SELECT"
                   " MAX(id) FROM ctl_periods)",
                   NULL, corr_w, NULL);
}

pfi_error ctl_audit_period_time(pfi_diag *d, const char *path, long long id, double t_s,
                                double wall_s, double prev_t_s)
{
    if (!isfinite(t_s) || t_s < 0 || (!isnan(prev_t_s) && t_s < prev_t_s)) {
        char before[64] = "";
        if (!isnan(prev_t_s))
            snprintf(before, sizeof before, ", not before the period before's %.17g", prev_t_s);
        char text[32] = "NULL"; /* (SQLite stores no NaN: a NaN is a NULL) */
        if (!isnan(t_s))
            snprintf(text, sizeof text, "%.17g", t_s);
        return ctl_fail(d, 0, PFI_ERR_PARSE,
                        "audit log: %s: ctl_periods id %lld: t_s %s is not a valid time "
                        "(controller seconds since its start: finite, 0 or more%s)",
                        path, id, text, before);
    }
    if (!isnan(wall_s) && !(wall_s >= 0 && wall_s < 253402300800.0))
        return ctl_fail(d, 0, PFI_ERR_PARSE,
                        "audit log: %s: ctl_periods id %lld: wall_s %.17g is not a valid time "
                        "(Unix seconds, 0 to 253402300799, or NULL)",
                        path, id, wall_s);
    return PFI_OK;
}

pfi_error pfi_audit_read(const char *path, long run_id, pfi_audit_period **out, size_t *n,
                         pfi_diag *diag)
{
    *out = NULL;
    *n = 0;
    pfi_error ne = ctl_audit_not_a_file(path, true, diag);
    if (ne != PFI_OK)
        return ne;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        pfi_error e = db_fail(db, diag, path, NULL);
        db_close(db);
        return e;
    }
    sqlite3_busy_timeout(db, 2000);
    sqlite3_stmt *st = NULL;
    pfi_error e = PFI_OK;
    pfi_audit_period *p = NULL;
    size_t m = 0, cap = 0;
    /* a log written before the power tree has no bound and ramp_limited columns, one before
     * the ramp's lead no lead column */
#define PERIOD_SQL(tree)                                                                           \
    "SELECT id, t_s, wall_s, event, budget_w, alloc_budget_w, measured_w, reserved_w,"             \
    " predicted_w, correction_w, tput_tok_s, cap_sum_w, strategy, note, agents_up, agents, " tree  \
    " FROM ctl_periods WHERE run = CASE WHEN ?1 > 0 THEN ?1 ELSE (SELECT MAX(run) FROM"            \
    " ctl_periods) END ORDER BY id"
    const char *q0 = PERIOD_SQL("bound, ramp_limited, lead"),
               *q1 = PERIOD_SQL("bound, ramp_limited, NULL"), *q2 = PERIOD_SQL("NULL, NULL, NULL");
#undef PERIOD_SQL
    if (sqlite3_prepare_v2(db, q0, -1, &st, NULL) != SQLITE_OK &&
        sqlite3_prepare_v2(db, q1, -1, &st, NULL) != SQLITE_OK &&
        sqlite3_prepare_v2(db, q2, -1, &st, NULL) != SQLITE_OK) {
        e = ctl_fail(diag, 0, PFI_ERR_IO, "audit log: %s: not a pfi control audit log (%s)", path,
                     sqlite3_errmsg(db));
        goto out;
    }
    sqlite3_bind_int64(st, 1, run_id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (m == cap) {
            size_t nc = cap ? 2 * cap : 64;
            pfi_audit_period *q = pfi_realloc(p, nc * sizeof *q);
            if (q == NULL) {
                e = PFI_ERR_NOMEM;
                goto out;
            }
            p = q;
            cap = nc;
        }
        pfi_audit_period *r = &p[m++];
        memset(r, 0, sizeof *r);
        double *nums[] = {&r->t_s,        &r->wall_s,         NULL,
                          &r->budget_w,   &r->alloc_budget_w, &r->measured_w,
                          &r->reserved_w, &r->predicted_w,    &r->correction_w,
                          &r->tput_tok_s, &r->cap_sum_w};
        r->id = (long)sqlite3_column_int64(st, 0);
        for (int k = 0; k < 11; k++) {
            if (nums[k] == NULL)
                continue;
            *nums[k] = sqlite3_column_type(st, k + 1) == SQLITE_NULL
                           ? NAN
                           : sqlite3_column_double(st, k + 1);
        }
        r->event = sqlite3_column_int(st, 3);
        const unsigned char *s = sqlite3_column_text(st, 12);
        snprintf(r->strategy, sizeof r->strategy, "%s", s ? (const char *)s : "");
        s = sqlite3_column_text(st, 13);
        snprintf(r->note, sizeof r->note, "%s", s ? (const char *)s : "");
        r->agents_up = sqlite3_column_int(st, 14);
        r->agents = sqlite3_column_int(st, 15);
        s = sqlite3_column_text(st, 16);
        snprintf(r->bound, sizeof r->bound, "%s", s ? (const char *)s : "");
        r->ramp_limited = sqlite3_column_int(st, 17);
        r->lead = sqlite3_column_int(st, 18);
        if ((e = ctl_audit_period_time(diag, path, r->id, r->t_s, r->wall_s,
                                       m > 1 ? p[m - 2].t_s : NAN)) != PFI_OK)
            goto out;
    }
    if (rc != SQLITE_DONE) {
        e = db_fail(db, diag, path, "read");
        goto out;
    }
    if (m == 0) {
        e = ctl_fail(diag, 0, PFI_ERR_EMPTY, "%s: no controller periods recorded", path);
        goto out;
    }
    *out = p;
    *n = m;
    p = NULL;
out:
    pfi_free(p);
    sqlite3_finalize(st);
    db_close(db);
    return e;
}

pfi_error ctl_audit_fix_caps(ctl_audit *a, long period)
{
    char sql[96];
    snprintf(sql, sizeof sql, "UPDATE ctl_caps SET period = %ld WHERE period = -1", period);
    return sqlite3_exec(a->db, sql, NULL, NULL, NULL) == SQLITE_OK ? PFI_OK : PFI_ERR_IO;
}

size_t ctl_audit_agent_gpus(ctl_audit *a, const char *agent, char (*uuid)[128], double *cap_w,
                            size_t max)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(a->db,
                           "SELECT o.uuid, (SELECT c.enforced_w FROM ctl_caps c WHERE c.uuid ="
                           " o.uuid AND c.what = 'confirmed' ORDER BY c.rowid DESC LIMIT 1),"
                           " o.original_w FROM ctl_originals o WHERE o.agent = ?",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, agent, -1, SQLITE_TRANSIENT);
    size_t n = 0;
    while (n < max && sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *u = sqlite3_column_text(st, 0);
        if (u == NULL || !ctl_copy(uuid[n], 128, (const char *)u))
            continue;
        int col = sqlite3_column_type(st, 1) != SQLITE_NULL ? 1 : 2;
        cap_w[n] =
            sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
        n++;
    }
    sqlite3_finalize(st);
    return n;
}
