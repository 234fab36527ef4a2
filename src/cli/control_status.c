/*
 * `pfi control status`: the last period of a controller's audit log, as prose and a per-job
 * table for people or as one JSON object for machines (--json).
 */
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pfi/audit.h"
#include "pfi/memory.h"
#include "pfi/topology.h"

/* "123 W", or missing when w is not a number (the prose) */
static cli_numtext watts(double w, const char *missing)
{
    cli_numtext t = cli_num(w, 'f', 0, missing);
    if (isfinite(w))
        snprintf(t.s + strlen(t.s), sizeof t.s - strlen(t.s), " W");
    return t;
}

static void status_usage(void)
{
    printf("usage: pfi control status --db FILE [--json]\n"
           "\n"
           "Print the last period of the controller's audit log (budget, measured,\n"
           "predicted power, tokens/s, agents; a value the period lacks is a word,\n"
           "e.g. budget none outside an event) and its per-job table ('-': missing).\n"
           "  --db FILE   the audit log (pfi control --db)\n"
           "  --json      one JSON object on stdout instead (a missing value is null)\n"
           "  -h, --help  this help\n"
           "\n"
           "Exit codes: 0 success, 1 audit log missing or unreadable, 2 bad command\n"
           "line, 3 output not written.\n");
}

static bool g_json_out; /* --json: the exact text (cli_json_text), no \xNN escapes */

/* s as a JSON string: for the text (read back by print_text) made safe (cli_safe: control
 * characters and invalid UTF-8 as \xNN); for --json exact; null when s is NULL. */
static json_t *jstr(const char *s)
{
    if (g_json_out)
        return cli_json_text(s); /* invalid UTF-8 as U+FFFD; JSON escapes control characters */
    if (s == NULL)
        return json_null();
    char safe[4 * 1024 + 4];
    return json_string(cli_safe(safe, sizeof safe, s, strlen(s)));
}

/* A text column's value, or NULL. */
static const char *col_text(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

static double col_num(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* The last period's faults and the number of periods of its run with any (into o: "faults",
 * "periods_with_faults"; a log from before the faults column has neither), and its per-job
 * rows (into o's "jobs" array: job, class, gpus, pfi, curve, band, cap_w, cap_state, power_w,
 * tput_tok_s). False when out of memory. */
static bool read_details(const char *db, long last_id, json_t *o)
{
    json_t *jobs = json_array();
    if (jobs == NULL || json_object_set_new(o, "jobs", jobs) != 0)
        return false;
    sqlite3 *s;
    if (sqlite3_open_v2(db, &s, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(s);
        return true;
    }
    bool ok = true;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s,
                           "SELECT (SELECT faults FROM ctl_periods WHERE id = ?1),"
                           " (SELECT COUNT(*) FROM ctl_periods WHERE run = (SELECT run FROM"
                           " ctl_periods WHERE id = ?1) AND faults IS NOT NULL)",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, last_id);
        if (sqlite3_step(st) == SQLITE_ROW) {
            const char *f = col_text(st, 0);
            ok &= json_object_set_new(o, "faults", jstr(f)) == 0;
            ok &= json_object_set_new(o, "periods_with_faults",
                                      json_integer(sqlite3_column_int(st, 1))) == 0;
        }
        sqlite3_finalize(st);
    }
    /* cap_w is the cap requested; cap_state what the agent said ("confirmed", "refused
     * (401)"; NULL none confirmed, and in a log from before cap_state); band the job's
     * priority band in force (NULL in a log from before it was kept) */
#define JOBS_SQL(more)                                                                             \
    "SELECT job, class, gpus, pfi, source, cap_w, power_w, tput, " more " FROM ctl_jobs WHERE"     \
    " period = (SELECT MAX(id) FROM ctl_periods) ORDER BY job"
    const char *q_band = JOBS_SQL("cap_state, band"), *q_state = JOBS_SQL("cap_state, NULL"),
               *q_old = JOBS_SQL("NULL, NULL");
#undef JOBS_SQL
    if (sqlite3_prepare_v2(s, q_band, -1, &st, NULL) == SQLITE_OK ||
        sqlite3_prepare_v2(s, q_state, -1, &st, NULL) == SQLITE_OK ||
        sqlite3_prepare_v2(s, q_old, -1, &st, NULL) == SQLITE_OK) {
        while (ok && sqlite3_step(st) == SQLITE_ROW) {
            const char *job = col_text(st, 0), *cls = col_text(st, 1), *src = col_text(st, 4),
                       *cs = col_text(st, 8);
            json_t *j =
                json_pack("{s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "job", jstr(job),
                          "class", jstr(cls), "gpus", (json_int_t)sqlite3_column_int(st, 2), "pfi",
                          cli_json_num(col_num(st, 3)), "curve", jstr(src), "band",
                          cli_json_num(col_num(st, 9)), "cap_w", cli_json_num(col_num(st, 5)),
                          "cap_state", jstr(cs), "power_w", cli_json_num(col_num(st, 6)),
                          "tput_tok_s", cli_json_num(col_num(st, 7)));
            ok = j != NULL && json_array_append_new(jobs, j) == 0;
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(s);
    return ok;
}

/* A string member, or NULL when null or absent. */
static const char *str_of(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* A number member, or NaN when null or absent. */
static double num_of(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The table of the jobs, its job and class columns as wide as their longest value. */
static void print_jobs(const json_t *jobs)
{
    int wj = 20, wc = 8;
    size_t i;
    const json_t *j;
    json_array_foreach(jobs, i, j)
    {
        const char *name = str_of(j, "job"), *cls = str_of(j, "class");
        size_t nj = name ? strlen(name) : 1, nc = cls ? strlen(cls) : 1;
        wj = nj > (size_t)wj ? (nj > 256 ? 256 : (int)nj) : wj;
        wc = nc > (size_t)wc ? (nc > 64 ? 64 : (int)nc) : wc;
    }
    /* (band last: the columns before it as they were, for scripts that split the rows) */
    printf("\n%-*s %-*s %5s %6s %-6s %8s %-14s %9s %10s %6s\n", wj, "job", wc, "class", "gpus",
           "pfi", "curve", "cap_w", "in_force", "power_w", "tokens/s", "band");
    json_array_foreach(jobs, i, j)
    {
        const char *cs = str_of(j, "cap_state"), *name = str_of(j, "job"),
                   *cls = str_of(j, "class"), *src = str_of(j, "curve");
        cli_numtext cap_text = cli_num(num_of(j, "cap_w"), 'f', 0, "-");
        /* in force: the cap when the agent confirmed it, else what it said; '-' none */
        const char *force = cs == NULL ? "-" : strcmp(cs, "confirmed") == 0 ? cap_text.s : cs;
        printf("%-*s %-*s %5.0f %6s %-6s %8s %-14s %9s %10s %6s\n", wj, name ? name : "-", wc,
               cls ? cls : "-", num_of(j, "gpus"), cli_num(num_of(j, "pfi"), 'f', 2, "-").s,
               src ? src : "-", cap_text.s, force, cli_num(num_of(j, "power_w"), 'f', 0, "-").s,
               cli_num(num_of(j, "tput_tok_s"), 'f', 0, "-").s,
               pfi_band_format(num_of(j, "band"), (char[PFI_BAND_TEXT]){0}));
    }
}

/* The prose of the last period q (n periods read) and o's details. */
static void print_text(const pfi_audit_period *q, size_t n, const json_t *o)
{
    /* the log's texts escaped (cli_safe): a job name in a note never reaches the terminal raw */
    char st[4 * sizeof q->strategy + 4], note[4 * sizeof q->note + 4],
        bound[4 * sizeof q->bound + 4];
    printf("periods      %zu (strategy %s)\n", n,
           cli_safe(st, sizeof st, q->strategy, strlen(q->strategy)));
    printf("event        %s\n", q->event ? "active" : "none");
    /* a value the period did not have (no budget outside an event) is a word, never nan */
    printf("budget       %s\n", watts(q->budget_w, "none (no event in force)").s);
    /* no agent answered: nothing was measured ('-'), not 0 W; a silent agent never seen: its
     * GPUs, and the power held for them, unknown (never 0 W) */
    printf("measured     %s (+ %s reserved for silent agents)\n",
           q->agents_up > 0 ? watts(q->measured_w, "-").s : "-", watts(q->reserved_w, "unknown").s);
    printf("predicted    %s, correction %s\n", watts(q->predicted_w, "unavailable").s,
           watts(q->correction_w, "unavailable").s);
    printf("tokens/s     %s\n", cli_num(q->tput_tok_s, 'f', 0, "unavailable").s);
    printf("agents       %d of %d answering\n", q->agents_up, q->agents);
    if (q->note[0])
        printf("note         %s\n", cli_safe(note, sizeof note, q->note, strlen(q->note)));
    if (q->bound[0])
        printf("bound        %s%s\n", cli_safe(bound, sizeof bound, q->bound, strlen(q->bound)),
               q->ramp_limited ? " (held back by a ramp)" : "");
    if (json_object_get(o, "periods_with_faults") != NULL) {
        const char *f = str_of(o, "faults");
        printf("faults       %s (%.0f period(s) of this run with faults)\n", f ? f : "none",
               num_of(o, "periods_with_faults"));
    }
    print_jobs(json_object_get(o, "jobs"));
}

/* The JSON object of the last period q (n periods read) of the log db; NULL when out of
 * memory. */
static json_t *period_json(const pfi_audit_period *q, size_t n, const char *db)
{
    return json_pack(
        "{s:o, s:I, s:I, s:o, s:b, s:b, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:i, s:o, "
        "s:o, s:b}",
        "db", jstr(db), "periods", (json_int_t)n, "period_id", (json_int_t)q->id, "strategy",
        jstr(q->strategy), "event", q->event != 0, "lead", q->lead != 0, "t_s",
        cli_json_num(q->t_s), "wall_s", cli_json_num(q->wall_s), "budget_w",
        cli_json_num(q->budget_w),
        /* no agent answered: nothing was measured (null), not 0 W */
        "measured_w", cli_json_num(q->agents_up > 0 ? q->measured_w : NAN), "reserved_w",
        cli_json_num(q->reserved_w), "predicted_w", cli_json_num(q->predicted_w), "correction_w",
        cli_json_num(q->correction_w), "tput_tok_s", cli_json_num(q->tput_tok_s), "agents_up",
        q->agents_up, "agents", q->agents, "note", jstr(q->note[0] ? q->note : NULL), "bound",
        jstr(q->bound[0] ? q->bound : NULL), "ramp_limited", q->ramp_limited != 0);
}

int cmd_control_status(int argc, char **argv)
{
    const char *db = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) {
            db = argv[++i];
        } else if (strcmp(argv[i], "--db") == 0) {
            return cli_usage_missing("--db");
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            status_usage();
            return PFI_EXIT_OK;
        } else if (argv[i][0] == '-') {
            return cli_usage_unknown(argv[i]);
        } else {
            return cli_usage_unexpected(argv[i]);
        }
    }
    if (db == NULL) {
        cli_error("--db FILE is required");
        return PFI_EXIT_USAGE;
    }
    pfi_audit_period *p;
    size_t n;
    pfi_diag d;
    pfi_error e = pfi_audit_read(db, 0, &p, &n, &d);
    if (e != PFI_OK)
        return cli_report(e, &d);
    const pfi_audit_period *q = &p[n - 1];
    g_json_out = json;
    json_t *o = period_json(q, n, db);
    int rc = PFI_EXIT_OK;
    if (o == NULL || !read_details(db, q->id, o)) {
        cli_error("out of memory");
        rc = PFI_EXIT_INTERNAL;
    } else if (json) {
        if (json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) !=
                0 ||
            fputc('\n', stdout) == EOF)
            rc = PFI_EXIT_OUTPUT;
    } else {
        print_text(q, n, o);
    }
    if (fflush(stdout) != 0 && rc == PFI_EXIT_OK)
        rc = PFI_EXIT_OUTPUT;
    json_decref(o);
    pfi_free(p);
    return rc;
}
