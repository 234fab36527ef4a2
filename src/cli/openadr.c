/*
 * pfi openadr poll — an OpenADR 3 VEN (pfi/openadr.h): polls a VTN's events for one program,
 * writes them as the schedule file pfi control --schedule runs, and posts reports of the
 * measured power per interval.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pfi/atomic_file.h"
#include "pfi/audit.h"
#include "pfi/memory.h"
#include "pfi/openadr.h"

enum {
    EXIT_UNREACHABLE = 5, /* the VTN (or its token URL) could not be reached: schedule kept */
    EXIT_AUTH = 6         /* the credentials or the token were refused */
};

static volatile sig_atomic_t stop;
static void on_signal(int s)
{
    (void)s;
    stop = 1;
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: pfi openadr poll --vtn URL --program NAME --credentials FILE --epoch T\n"
        "                        --schedule-out FILE [--levels FILE] [--ramp S]\n"
        "                        [--measured FILE | --audit DB] [--client-name NAME]\n"
        "                        [--state FILE] [--interval S] [--timeout S] [--once]\n"
        "\n"
        "An OpenADR 3 VEN: polls GET /events?programID= of the program named NAME on the\n"
        "VTN at URL (OAuth2 client credentials), turns each event's intervals into the\n"
        "budget timeline and writes it atomically as the JSON schedule 'pfi control\n"
        "--schedule FILE --epoch T' runs; posts a report (POST /reports, DEMAND in kW per\n"
        "interval) of the measured power of every interval that has ended.\n"
        "  IMPORT_CAPACITY_LIMIT  a cluster budget (units of the event's payloadDescriptor:\n"
        "                         W, KW (default), MW)\n"
        "  SIMPLE                 a level, mapped through --levels (LEVEL TARGET lines)\n"
        "  CHARGE_STATE_SETPOINT and other types are ignored, with a note on stderr.\n"
        "An event changed on the VTN changes the timeline; one deleted (OpenADR 3's\n"
        "cancellation) leaves it. When the VTN cannot be reached the last schedule stays.\n"
        "\n"
        "options:\n"
        "  --vtn URL            the VTN's base URL (…/openadr3/3.0.1)\n"
        "  --program NAME       the program's programName\n"
        "  --credentials FILE   client_id=…, client_secret=…, optional token_url=… and\n"
        "                       scope=… lines; mode 0600 or stricter, owned by you\n"
        "  --epoch T            Unix time the schedule counts from: give pfi control the same\n"
        "  --schedule-out FILE  the schedule written (atomically)\n"
        "  --levels FILE        SIMPLE levels: 'LEVEL TARGET' a line, TARGET 30%%, 0.3 or 5200W\n"
        "  --ramp S             ramp into each event over S seconds (0)\n"
        "  --measured FILE      measured power for reports: CSV 'unix_s,power_w' lines\n"
        "  --audit DB           measured power for reports: the controller's audit log\n"
        "  --client-name NAME   the reports' clientName (the credentials' client_id)\n"
        "  --state FILE         intervals already reported (SCHEDULE-OUT.reported)\n"
        "  --interval S         seconds between polls (30)\n"
        "  --timeout S          per HTTP request (10)\n"
        "  --once               poll once and exit\n"
        "  -h, --help           this help\n"
        "\n"
        "Exit codes: 0 success (or stopped by a signal), 1 bad input (credentials, levels,\n"
        "the VTN's answer), 2 bad command line, 3 schedule not written, 4 internal error,\n"
        "5 VTN unreachable (--once; the last schedule is kept), 6 credentials or token\n"
        "refused (401/403).\n");
}

typedef struct creds {
    char id[4097], secret[4097], token_url[2048], scope[1024];
} creds;

/* The credentials file: a regular file owned by us, no group or other access (as pfid's
 * token file). PFI_EXIT_OK or PFI_EXIT_DATA (said). */
static int load_creds(const char *path, creds *c)
{
    memset(c, 0, sizeof *c);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        cli_error("credentials %s: %s", path, strerror(errno));
        return PFI_EXIT_DATA;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) != 0 ||
        st.st_uid != geteuid()) {
        /* chmod is advice for a regular file alone (a device or a FIFO it would not fix) */
        bool reg = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
        if (reg)
            cli_error("credentials %s must be a regular file owned by uid %u with mode "
                      "0600 or stricter (chmod 600 %s)",
                      path, (unsigned)geteuid(), path);
        else
            cli_error("credentials %s is not a regular file (it must be one, owned by "
                      "uid %u with mode 0600 or stricter)",
                      path, (unsigned)geteuid());
        close(fd);
        return PFI_EXIT_DATA;
    }
    FILE *f = fdopen(fd, "r");
    if (f == NULL) {
        close(fd);
        cli_error("credentials %s: %s", path, strerror(errno));
        return PFI_EXIT_DATA;
    }
    char line[8300];
    long ln = 0;
    int rc = PFI_EXIT_OK;
    while (fgets(line, sizeof line, f) != NULL) {
        ln++;
        size_t m = strlen(line);
        while (m > 0 && (line[m - 1] == '\n' || line[m - 1] == '\r' || line[m - 1] == ' '))
            line[--m] = '\0';
        if (m == 0 || line[0] == '#')
            continue;
        char *eq = strchr(line, '=');
        if (eq == NULL) {
            cli_error("credentials %s:%ld: expected KEY=VALUE (client_id, "
                      "client_secret, token_url, scope)",
                      path, ln);
            rc = PFI_EXIT_DATA;
            break;
        }
        *eq = '\0';
        const char *k = line, *v = eq + 1;
        char *dst = strcmp(k, "client_id") == 0       ? c->id
                    : strcmp(k, "client_secret") == 0 ? c->secret
                    : strcmp(k, "token_url") == 0     ? c->token_url
                    : strcmp(k, "scope") == 0         ? c->scope
                                                      : NULL;
        size_t cap = dst == c->id || dst == c->secret ? sizeof c->id
                     : dst == c->token_url            ? sizeof c->token_url
                                                      : sizeof c->scope;
        char kb[64];
        if (dst == NULL || strlen(v) >= cap) {
            cli_error("credentials %s:%ld: %s '%s'", path, ln,
                      dst == NULL ? "unknown key" : "value too long for",
                      cli_safe(kb, sizeof kb, k, strlen(k)));
            rc = PFI_EXIT_DATA;
            break;
        }
        memcpy(dst, v, strlen(v) + 1);
    }
    memset(line, 0, sizeof line);
    fclose(f);
    if (rc == PFI_EXIT_OK && (c->id[0] == '\0' || c->secret[0] == '\0')) {
        cli_error("credentials %s: client_id= and client_secret= lines are needed", path);
        rc = PFI_EXIT_DATA;
    }
    return rc;
}

/* Measured power samples (Unix s, W). From a CSV, point samples at t; from the audit log,
 * readings each of the span [t0, t) before it (spans: t0 set). */
typedef struct samples {
    double *t, *w, *t0;
    size_t n;
    double last_t; /* the audit log's latest row (Unix s; NaN: none) */
} samples;

static int load_measured(const char *csv, const char *audit, samples *s)
{
    memset(s, 0, sizeof *s);
    s->last_t = NAN;
    if (audit != NULL) {
        pfi_audit_period *p;
        size_t n;
        pfi_diag d;
        pfi_diag_clear(&d);
        pfi_error e = pfi_audit_read(audit, 0, &p, &n, &d);
        if (e == PFI_ERR_EMPTY)
            return PFI_EXIT_OK;
        if (e != PFI_OK)
            return cli_report(e, &d);
        s->t = malloc(n * sizeof *s->t);
        s->w = malloc(n * sizeof *s->w);
        s->t0 = malloc(n * sizeof *s->t0);
        if (s->t == NULL || s->w == NULL || s->t0 == NULL) {
            pfi_free(p);
            return PFI_EXIT_INTERNAL;
        }
        /* the controller reads the power at a period's tick, before it sets that period's
         * caps: a row's reading is of the time since the row before (the first row's, of a
         * time before the log, of no known span: in no interval). A missing reading (NULL;
         * 0 W: a stale one in a log written before it was NULL) is in no interval's mean */
        for (size_t i = 1; i < n; i++)
            if (isfinite(p[i].measured_w) && p[i].measured_w > 0 && p[i].wall_s > p[i - 1].wall_s) {
                s->t0[s->n] = p[i - 1].wall_s;
                s->t[s->n] = p[i].wall_s;
                s->w[s->n++] = p[i].measured_w;
            }
        s->last_t = p[n - 1].wall_s;
        pfi_free(p);
        return PFI_EXIT_OK;
    }
    if (csv == NULL)
        return PFI_EXIT_OK;
    size_t len;
    char *text = cli_read_text(csv, 64u << 20, &len);
    if (text == NULL) {
        cli_error("--measured %s: %s", csv, cli_input_why());
        return PFI_EXIT_DATA;
    }
    size_t cap = 0;
    long ln = 0;
    int rc = PFI_EXIT_OK;
    for (char *p = text; p != NULL && *p != '\0';) {
        char *nl = strchr(p, '\n');
        if (nl != NULL)
            *nl = '\0';
        ln++;
        char *end, *end2;
        while (*p == ' ')
            p++;
        if (*p != '\0' && *p != '#' && !(ln == 1 && strncmp(p, "unix_s", 6) == 0)) {
            double t = strtod(p, &end), w = NAN;
            if (end != p && *end == ',')
                w = strtod(end + 1, &end2);
            if (end == p || *end != ',' || end2 == end + 1 || !isfinite(t) || !isfinite(w) ||
                (*end2 != '\0' && *end2 != '\r')) {
                cli_error("--measured %s:%ld: expected 'unix_s,power_w'", csv, ln);
                rc = PFI_EXIT_DATA;
                break;
            }
            if (s->n == cap) {
                cap = cap ? cap * 2 : 256;
                double *a = realloc(s->t, cap * sizeof *a);
                if (a != NULL)
                    s->t = a;
                double *b = realloc(s->w, cap * sizeof *b);
                if (b != NULL)
                    s->w = b;
                if (a == NULL || b == NULL) {
                    rc = PFI_EXIT_INTERNAL;
                    break;
                }
            }
            s->t[s->n] = t;
            s->w[s->n++] = w;
        }
        p = nl != NULL ? nl + 1 : NULL;
    }
    free(text);
    return rc;
}

/* The mean power over [a, b): of the point samples in it; of the audit log's readings, the
 * mean over the time they cover, each by its overlap, once the log has read past b (until
 * then the interval's last readings are to come: NaN, reported by a later poll). NaN when
 * none. */
static double mean_between(const samples *s, double a, double b)
{
    if (s->t0 != NULL) {
        if (!(s->last_t >= b))
            return NAN;
        double e = 0, dt = 0;
        for (size_t i = 0; i < s->n; i++) {
            double ov = fmin(s->t[i], b) - fmax(s->t0[i], a);
            if (ov > 0) {
                e += s->w[i] * ov;
                dt += ov;
            }
        }
        return dt > 0 ? e / dt : NAN;
    }
    double sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->t[i] >= a && s->t[i] < b) {
            sum += s->w[i];
            k++;
        }
    return k ? sum / (double)k : NAN;
}

/* ---- the reported intervals: "EVENT INTERVAL START" lines ---- */

static bool reported(const char *state, const pfi_oadr_interval *x)
{
    if (state == NULL)
        return false;
    char key[256];
    snprintf(key, sizeof key, "%s %ld %.0f\n", x->event_id, x->interval_id, x->start_unix_s);
    size_t k = strlen(key);
    for (const char *p = state; (p = strstr(p, key)) != NULL; p++)
        if (p == state || p[-1] == '\n')
            return true;
    (void)k;
    return false;
}

static int append_state(const char *path, char **state, const pfi_oadr_interval *iv,
                        const double *mw, size_t n)
{
    size_t old = *state != NULL ? strlen(*state) : 0;
    size_t cap = old + n * 200 + 1;
    char *s = realloc(*state, cap);
    if (s == NULL)
        return PFI_EXIT_INTERNAL;
    if (old == 0)
        s[0] = '\0';
    size_t len = old;
    for (size_t i = 0; i < n; i++)
        if (!isnan(mw[i]))
            len += (size_t)snprintf(s + len, cap - len, "%s %ld %.0f\n", iv[i].event_id,
                                    iv[i].interval_id, iv[i].start_unix_s);
    *state = s;
    pfi_atomic_file a;
    pfi_diag d;
    pfi_diag_clear(&d);
    if (pfi_atomic_open(&a, path, &d) != PFI_OK)
        return cli_report(PFI_ERR_IO, &d);
    fputs(s, a.f);
    if (pfi_atomic_commit(&a, &d) != PFI_OK)
        return cli_report(PFI_ERR_IO, &d);
    return PFI_EXIT_OK;
}

typedef struct poll_opts {
    const char *vtn, *program, *cred_path, *sched_out, *levels_path, *measured, *audit,
        *client_name, *state_path;
    double epoch, ramp, interval, timeout;
    bool once;
} poll_opts;

static double now_unix(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The exit code of a failed request: said on stderr. */
static int request_failed(pfi_error e, const pfi_diag *d, const char *sched)
{
    char msg[1400];
    pfi_diag_format(d, msg, sizeof msg);
    /* the schedule kept is the one on disk: none when no earlier poll wrote it */
    if (access(sched, F_OK) != 0) {
        if (e == PFI_ERR_NO_PERMISSION) {
            cli_error("AUTHENTICATION FAILED: %s", msg);
            return EXIT_AUTH;
        }
        if (e == PFI_ERR_IO || e == PFI_ERR_LIMIT) {
            cli_error("VTN unreachable (%s): no schedule written (%s does not exist yet)", msg,
                      sched);
            return EXIT_UNREACHABLE;
        }
        cli_error("%s (no schedule written: %s does not exist yet)", msg, sched);
        return e == PFI_ERR_NOMEM ? PFI_EXIT_INTERNAL : PFI_EXIT_DATA;
    }
    if (e == PFI_ERR_NO_PERMISSION) {
        cli_error("AUTHENTICATION FAILED: %s", msg);
        return EXIT_AUTH;
    }
    if (e == PFI_ERR_IO || e == PFI_ERR_LIMIT) {
        cli_error("VTN unreachable (%s): keeping the last schedule %s", msg, sched);
        return EXIT_UNREACHABLE;
    }
    cli_error("%s (the last schedule %s is kept)", msg, sched);
    return e == PFI_ERR_NOMEM ? PFI_EXIT_INTERNAL : PFI_EXIT_DATA;
}

/* Post the reports of intervals that ended and were not reported yet. */
static int post_reports(pfi_oadr_client *cl, const poll_opts *o, const pfi_oadr_interval *iv,
                        size_t n, char **state, double now)
{
    if (o->measured == NULL && o->audit == NULL)
        return PFI_EXIT_OK;
    samples s;
    int rc = load_measured(o->measured, o->audit, &s);
    if (rc != PFI_EXIT_OK) {
        free(s.t);
        free(s.w);
        free(s.t0);
        return rc;
    }
    double *mw = malloc((n ? n : 1) * sizeof *mw);
    pfi_oadr_interval *grp = malloc((n ? n : 1) * sizeof *grp);
    bool *done = calloc(n ? n : 1, sizeof *done);
    if (mw == NULL || grp == NULL || done == NULL)
        rc = PFI_EXIT_INTERNAL;
    for (size_t i = 0; i < n && rc == PFI_EXIT_OK; i++) {
        if (done[i])
            continue;
        size_t k = 0;
        for (size_t j = i; j < n; j++) {
            if (done[j] || strcmp(iv[j].event_id, iv[i].event_id) != 0)
                continue;
            done[j] = true;
            if (iv[j].end_unix_s > now || reported(*state, &iv[j]))
                continue;
            grp[k] = iv[j];
            mw[k] = mean_between(&s, iv[j].start_unix_s, iv[j].end_unix_s);
            k++;
        }
        char *body = pfi_oadr_report_json(grp, k, mw, o->client_name);
        if (body == NULL)
            continue; /* nothing ended, or nothing measured yet */
        pfi_diag d;
        pfi_diag_clear(&d);
        pfi_error e = pfi_oadr_request(cl, "/reports", body, NULL, NULL, &d);
        pfi_free(body);
        if (e != PFI_OK) {
            rc = request_failed(e, &d, o->sched_out);
            break;
        }
        size_t m = 0;
        for (size_t q = 0; q < k; q++)
            m += !isnan(mw[q]);
        fprintf(stderr, "pfi: openadr: reported %zu interval%s of event %s\n", m, m == 1 ? "" : "s",
                grp[0].event_id);
        rc = append_state(o->state_path, state, grp, mw, k);
    }
    free(mw);
    free(grp);
    free(done);
    free(s.t);
    free(s.w);
    free(s.t0);
    return rc;
}

/* One poll. *last: the schedule text last written (to say when it changed). */
static int poll_once(pfi_oadr_client *cl, const poll_opts *o, const pfi_oadr_level *lv, size_t nl,
                     char *program_id, char **last_events, char **state)
{
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e;
    if (program_id[0] == '\0' &&
        (e = pfi_oadr_program_id(cl, o->program, program_id, &d)) != PFI_OK)
        return request_failed(e, &d, o->sched_out);
    char *json;
    size_t len;
    if ((e = pfi_oadr_events_get(cl, program_id, &json, &len, &d)) != PFI_OK)
        return request_failed(e, &d, o->sched_out);
    pfi_oadr_interval *iv;
    size_t n;
    char *notes;
    e = pfi_oadr_events_parse(json, len, lv, nl, &iv, &n, &notes, &d);
    bool changed = *last_events == NULL || strcmp(*last_events, json) != 0;
    if (e != PFI_OK) {
        pfi_free(json);
        return request_failed(e, &d, o->sched_out);
    }
    if (changed && notes != NULL) {
        for (char *p = notes; *p != '\0';) {
            char *nlp = strchr(p, '\n');
            char buf[600];
            fprintf(stderr, "pfi: openadr: note: %s\n",
                    cli_safe(buf, sizeof buf, p, (size_t)(nlp - p)));
            p = nlp + 1;
        }
    }
    pfi_free(notes);
    pfi_free(*last_events);
    *last_events = json;
    double now = now_unix();
    pfi_ctl_event *ev;
    size_t ne;
    if ((e = pfi_oadr_timeline(iv, n, o->epoch, now, o->ramp, &ev, &ne, &d)) != PFI_OK) {
        pfi_free(iv);
        return cli_report(e, &d);
    }
    int rc = PFI_EXIT_OK;
    if ((e = pfi_oadr_schedule_write(ev, ne, o->sched_out, &d)) != PFI_OK)
        rc = cli_report(e, &d) == PFI_EXIT_INTERNAL ? PFI_EXIT_INTERNAL : PFI_EXIT_OUTPUT;
    else if (changed && ne == 0)
        fprintf(stderr,
                "pfi: openadr: no event ahead for program %s: %s holds an empty timeline "
                "(pfi control --schedule refuses to start on it; a running one keeps its own)\n",
                o->program, o->sched_out);
    else if (changed)
        fprintf(stderr,
                "pfi: openadr: %zu interval%s of program %s -> %zu schedule event%s in %s\n", n,
                n == 1 ? "" : "s", o->program, ne, ne == 1 ? "" : "s", o->sched_out);
    pfi_free(ev);
    if (rc == PFI_EXIT_OK)
        rc = post_reports(cl, o, iv, n, state, now);
    pfi_free(iv);
    return rc;
}

static int poll_cmd(int argc, char **argv)
{
    enum {
        O_VTN = 256,
        O_PROG,
        O_CRED,
        O_EPOCH,
        O_OUT,
        O_LEVELS,
        O_RAMP,
        O_MEAS,
        O_AUDIT,
        O_CLIENT,
        O_STATE,
        O_INTERVAL,
        O_TIMEOUT,
        O_ONCE
    };
    static const struct option opts[] = {{"vtn", required_argument, NULL, O_VTN},
                                         {"program", required_argument, NULL, O_PROG},
                                         {"credentials", required_argument, NULL, O_CRED},
                                         {"epoch", required_argument, NULL, O_EPOCH},
                                         {"schedule-out", required_argument, NULL, O_OUT},
                                         {"levels", required_argument, NULL, O_LEVELS},
                                         {"ramp", required_argument, NULL, O_RAMP},
                                         {"measured", required_argument, NULL, O_MEAS},
                                         {"audit", required_argument, NULL, O_AUDIT},
                                         {"client-name", required_argument, NULL, O_CLIENT},
                                         {"state", required_argument, NULL, O_STATE},
                                         {"interval", required_argument, NULL, O_INTERVAL},
                                         {"timeout", required_argument, NULL, O_TIMEOUT},
                                         {"once", no_argument, NULL, O_ONCE},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    poll_opts o = {0};
    o.epoch = NAN;
    o.interval = 30;
    o.timeout = 10;
    const cli_opt table[] = {
        {O_VTN, CLI_OPT_TEXT, &o.vtn, 0, 0, false, false, 0, 0, NULL, NULL},
        {O_PROG, CLI_OPT_TEXT, &o.program, 0, 0, false, false, 0, 0, NULL, NULL},
        {O_CRED, CLI_OPT_TEXT, &o.cred_path, 0, 0, false, false, 0, 0, NULL, NULL},
        {O_EPOCH, CLI_OPT_DOUBLE, &o.epoch, 0, 253402300800.0, true, true, 0, 0, NULL,
         "a Unix time > 0, before the year 10000 (253402300800)"},
        {O_OUT, CLI_OPT_TEXT, &o.sched_out, 0, 0, false, false, 0, 0, NULL, NULL},
        {O_LEVELS, CLI_OPT_TEXT, &o.levels_path, 0, 0, false, false, 0, 0, NULL, NULL},
        {O_RAMP, CLI_OPT_DOUBLE, &o.ramp, 0, HUGE_VAL, false, false, 0, 0, NULL, "seconds >= 0"},
        {O_MEAS, CLI_OPT_TEXT, &o.measured, 0, 0, false, false, 0, 0, NULL, NULL},
        {O_AUDIT, CLI_OPT_TEXT, &o.audit, 0, 0, false, false, 0, 0, NULL, NULL},
        {O_CLIENT, CLI_OPT_TEXT, &o.client_name, 0, 0, false, false, 0, 0, NULL, NULL},
        {O_STATE, CLI_OPT_TEXT, &o.state_path, 0, 0, false, false, 0, 0, NULL, NULL},
        {O_INTERVAL, CLI_OPT_DOUBLE, &o.interval, 0, 86400, true, false, 0, 0, NULL,
         "seconds in (0, 86400]"},
        {O_TIMEOUT, CLI_OPT_DOUBLE, &o.timeout, 0, 600, true, false, 0, 0, NULL,
         "seconds in (0, 600]"},
        {O_ONCE, CLI_OPT_FLAG, &o.once, 0, 0, false, false, 0, 0, NULL, NULL},
    };
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        const cli_opt *t = cli_opt_find(table, sizeof table / sizeof table[0], c);
        if (t != NULL) {
            if (!cli_opt_take(t, optarg)) {
                cli_opt_complain(opts, t, optarg);
                return PFI_EXIT_USAGE;
            }
            continue;
        }
        if (c == 'h') {
            usage(stdout);
            return PFI_EXIT_OK;
        }
        return cli_usage_getopt(opts, ":h", c, argv);
    }
    if (optind < argc || o.vtn == NULL || o.program == NULL || o.cred_path == NULL ||
        o.sched_out == NULL || isnan(o.epoch)) {
        cli_error("--vtn, --program, --credentials, --epoch and --schedule-out "
                  "are needed (see pfi openadr poll --help)");
        return PFI_EXIT_USAGE;
    }
    {
        /* the VTN's URL: http:// or https:// and a host, checked before anything is read */
        const char *v = o.vtn, *h = NULL;
        if (strncmp(v, "http://", 7) == 0)
            h = v + 7;
        else if (strncmp(v, "https://", 8) == 0)
            h = v + 8;
        if (h == NULL || *h == '\0' || *h == '/' || *h == ':' || *h == '?' || *h == '#')
            return cli_usage_bad_value("vtn", v, "an http:// or https:// URL with a host");
    }
    if (o.measured != NULL && o.audit != NULL) {
        cli_error("--measured or --audit, not both");
        return PFI_EXIT_USAGE;
    }
    creds cr;
    int rc = load_creds(o.cred_path, &cr);
    if (rc != PFI_EXIT_OK)
        return rc;
    pfi_oadr_level *lv = NULL;
    size_t nl = 0;
    if (o.levels_path != NULL) {
        size_t len;
        char *t = cli_read_text(o.levels_path, 64u << 20, &len);
        if (t == NULL) {
            cli_error("--levels %s: %s", o.levels_path, cli_input_why());
            memset(&cr, 0, sizeof cr);
            return PFI_EXIT_DATA;
        }
        pfi_diag d;
        pfi_diag_clear(&d);
        pfi_error e = pfi_oadr_levels_parse(t, len, &lv, &nl, &d);
        free(t);
        if (e != PFI_OK) {
            snprintf(d.file, sizeof d.file, "%s", o.levels_path);
            memset(&cr, 0, sizeof cr);
            return cli_report(e, &d);
        }
    }
    char state_default[4200];
    if (o.state_path == NULL) {
        snprintf(state_default, sizeof state_default, "%s.reported", o.sched_out);
        o.state_path = state_default;
    }
    if (o.client_name == NULL)
        o.client_name = cr.id;
    size_t slen;
    char *state = cli_read_text(o.state_path, 64u << 20, &slen); /* absent: nothing reported yet */
    pfi_oadr_client_config cfg = {o.vtn,     cr.token_url[0] ? cr.token_url : NULL, cr.id,
                                  cr.secret, cr.scope[0] ? cr.scope : NULL,         o.timeout};
    pfi_oadr_client *cl;
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = pfi_oadr_client_create(&cfg, &cl, &d);
    if (e != PFI_OK) {
        pfi_free(lv);
        free(state);
        memset(&cr, 0, sizeof cr);
        return cli_report(e, &d);
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    char program_id[PFI_OADR_ID_LEN] = "";
    char *last = NULL;
    bool was_down = false;
    while (!stop) {
        rc = poll_once(cl, &o, lv, nl, program_id, &last, &state);
        if (o.once || rc == EXIT_AUTH || rc == PFI_EXIT_OUTPUT || rc == PFI_EXIT_INTERNAL)
            break;
        if (rc == EXIT_UNREACHABLE)
            was_down = true;
        else if (was_down && rc == PFI_EXIT_OK) {
            fprintf(stderr, "pfi: openadr: the VTN answers again\n");
            was_down = false;
        }
        /* sleep --interval, waking every 50 ms for a signal */
        for (double left = o.interval; left > 0 && !stop; left -= 0.05) {
            struct timespec ts = {0, (long)(fmin(left, 0.05) * 1e9)};
            nanosleep(&ts, NULL);
        }
        rc = PFI_EXIT_OK;
    }
    pfi_free(last);
    free(state);
    pfi_free(lv);
    pfi_oadr_client_destroy(cl);
    memset(&cr, 0, sizeof cr);
    return rc;
}

int cmd_openadr(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "poll") == 0) {
        cli_set_command("openadr poll");
        return poll_cmd(argc - 1, argv + 1);
    }
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return PFI_EXIT_OK;
    }
    if (argc >= 2 && argv[1][0] == '-') {
        /* one of poll's options given to openadr itself: point to poll */
        static const char *const poll_flags[] = {
            "vtn",      "program", "credentials", "epoch", "schedule-out", "levels",  "ramp",
            "measured", "audit",   "client-name", "state", "interval",     "timeout", "once"};
        const char *o = argv[1] + strspn(argv[1], "-");
        size_t ol = strcspn(o, "=");
        for (size_t k = 0; k < sizeof poll_flags / sizeof poll_flags[0]; k++)
            if (strlen(poll_flags[k]) == ol && strncmp(o, poll_flags[k], ol) == 0)
                return cli_usage_error("'%s' is an option of 'pfi openadr poll' (see 'pfi "
                                       "openadr poll --help')",
                                       argv[1]);
        return cli_usage_unknown(argv[1]);
    }
    if (argc >= 2) /* a word that is no subcommand: one line, as every verb's */
        return cli_usage_error(
            "unknown subcommand '%s' (expected 'poll'; see 'pfi openadr --help')", argv[1]);
    usage(stderr);
    return PFI_EXIT_USAGE;
}
