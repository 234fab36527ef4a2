/*
 * pfi/openadr.h — an OpenADR 3 client (a VEN): the events of a VTN's program as the
 * controller's budget timeline (pfi_ctl_event, pfi/control_files.h), and reports of the
 * measured power per interval back to the VTN.
 *
 * Source: OpenADR 3.0.1 specification (OpenADR Alliance, "OpenADR 3.0 Definition v3.0.1" and
 * its OpenAPI file oadr3.0.1.yaml): GET /programs, GET /events?programID=, POST /reports,
 * OAuth2 client credentials (RFC 6749 §4.4) at the token URL (the spec's auth/token).
 *
 * Parsers take (text, len) so they can be fuzzed; none reads a file. Results are owned
 * (pfi_free). Nothing here prints or exits. Thread-safety: the parsers are pure functions; a
 * pfi_oadr_client is used by one thread at a time.
 */
#ifndef PFI_OPENADR_H
#define PFI_OPENADR_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/control_files.h"
#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* objectID: 1 to 128 bytes of [A-Za-z0-9_-] (oadr3.0.1.yaml), plus the terminator. */
#define PFI_OADR_ID_LEN 129
/* Most events and intervals one answer may hold (PFI_ERR_LIMIT beyond). */
#define PFI_OADR_MAX_INTERVALS 4096

/* One row of the site's level table: a SIMPLE payload's level and what it asks of the site
 * (a reduction in [0, 1] or a cluster budget in W; the other NaN). */
typedef struct pfi_oadr_level {
    long level;
    double reduction;
    double budget_w;
} pfi_oadr_level;

/*
 * pfi_oadr_levels_parse — the level table: one "LEVEL TARGET" a line, LEVEL an integer >= 0
 * and TARGET a reduction ("30%" or "0.3", pfi_reduction_parse) or a budget ("5200W",
 * "5.2kW"); '#' comments, blank lines ignored, each level once. *out (owned, pfi_free) of *n
 * rows. Errors: PFI_ERR_PARSE (diag: line and what was expected), PFI_ERR_EMPTY,
 * PFI_ERR_LIMIT (more than 64 rows), PFI_ERR_NOMEM.
 */
pfi_error pfi_oadr_levels_parse(const char *text, size_t len, pfi_oadr_level **out, size_t *n,
                                pfi_diag *diag);

/* One interval of one event, as a target: Unix seconds; one of reduction / budget_w, the
 * other NaN. */
typedef struct pfi_oadr_interval {
    char event_id[PFI_OADR_ID_LEN];
    char program_id[PFI_OADR_ID_LEN];
    char modified[40]; /* the event's modificationDateTime as sent ("" when absent) */
    long interval_id;  /* the interval's id (client generated, not a sequence number) */
    long priority;     /* the event's priority: lower is higher; LONG_MAX when absent */
    double start_unix_s, end_unix_s;
    double reduction; /* [0, 1], or NaN */
    double budget_w;  /* W, or NaN */
} pfi_oadr_interval;

/*
 * pfi_oadr_events_parse — the answer of GET /events (a JSON array of event objects; one
 * object is taken as an array of one) as intervals with targets. An interval's time is its
 * own intervalPeriod, or else the event's: the event's start plus the durations of the
 * intervals before it (the spec's default start and duration), its start and duration each
 * defaulting to the event's. Duration: ISO 8601 "PnYnMnWnDTnHnMnS" (Y = 365 d, M = 30 d); a
 * duration of 0 (the spec's PT0S: "instantaneous or infinity") or P9999Y is open-ended and
 * ends at the start plus 10 years. Payloads (the first value of each):
 *   - IMPORT_CAPACITY_LIMIT: a budget, in the units of the event's payloadDescriptor for it
 *     (W, KW, MW; absent: KW).
 *   - SIMPLE: a level, mapped through levels[n_levels] (level 0 without a row: no event).
 *   - CHARGE_STATE_SETPOINT and every other type: ignored.
 * An interval with both IMPORT_CAPACITY_LIMIT and SIMPLE takes the limit. What is ignored
 * (types, a level without a row, SIMPLE without a table, unknown units) is said in *notes
 * (may be NULL; owned, pfi_free; one line each, NULL when nothing was ignored) and never
 * silently. *out (owned, pfi_free; NULL when *n is 0) of *n intervals, in the answer's order.
 * Errors: PFI_ERR_PARSE (not JSON, or an event, interval or field of the wrong shape: diag
 * names the event, interval and field), PFI_ERR_LIMIT (more than PFI_OADR_MAX_INTERVALS),
 * PFI_ERR_NOMEM. No event, or none with a target, is PFI_OK with *n 0.
 */
pfi_error pfi_oadr_events_parse(const char *json, size_t len, const pfi_oadr_level *levels,
                                size_t n_levels, pfi_oadr_interval **out, size_t *n, char **notes,
                                pfi_diag *diag);

/*
 * pfi_oadr_timeline — intervals iv[n] as the schedule pfi control runs, in seconds since
 * epoch_unix_s (the controller's --epoch): intervals that ended before now_unix_s are
 * dropped, a start before the epoch is clipped to 0. Where intervals overlap, the event of
 * higher priority (lower number) wins; between equals, the lower budget or the larger
 * reduction, and a budget over a reduction (they cannot be compared without the reference
 * power). Adjacent pieces with the same target merge. A piece that does not continue another
 * ramps in over ramp_s (>= 0; shortened to its length); a continuing one steps. *out (owned,
 * pfi_free; NULL when *n_out is 0) of *n_out events, sorted, not overlapping. Errors:
 * PFI_ERR_INVALID_ARGUMENT (epoch, now or ramp not finite, ramp < 0), PFI_ERR_LIMIT (more
 * than PFI_CTL_MAX_EVENTS pieces), PFI_ERR_NOMEM.
 */
pfi_error pfi_oadr_timeline(const pfi_oadr_interval *iv, size_t n, double epoch_unix_s,
                            double now_unix_s, double ramp_s, pfi_ctl_event **out, size_t *n_out,
                            pfi_diag *diag);

/*
 * pfi_oadr_schedule_write — ev[n] as the JSON timeline pfi control --schedule reads
 * ({"events": [{"start_s", "end_s", "ramp_s", "budget_w" | "reduction_pct"}]}, pfi/grid.h),
 * written to path atomically (temporary + rename: a reader sees the old file or the new one).
 * Errors: PFI_ERR_IO (diag names path), PFI_ERR_NOMEM.
 */
pfi_error pfi_oadr_schedule_write(const pfi_ctl_event *ev, size_t n, const char *path,
                                  pfi_diag *diag);

/*
 * pfi_oadr_report_json — the report (POST /reports body) of one event's intervals iv[n]
 * (all with the same event_id and program_id) with measured_w[n] (W, the mean measured power
 * over each interval; NaN: not measured, left out): objectType REPORT, programID, eventID,
 * clientName client_name, reportName "pfi measured power", a payloadDescriptor DEMAND in KW
 * (readingType AVERAGE), and one resource AGGREGATED_REPORT whose intervals carry each
 * interval's id, intervalPeriod (start, duration in seconds) and DEMAND value. Returns the
 * text (owned, pfi_free), or NULL when n is 0, nothing was measured or memory ran out.
 */
char *pfi_oadr_report_json(const pfi_oadr_interval *iv, size_t n, const double *measured_w,
                           const char *client_name);

/* ---- the client ------------------------------------------------------------------------- */

typedef struct pfi_oadr_client_config {
    const char *vtn_url;       /* base URL, e.g. https://vtn.example/openadr3/3.0.1 */
    const char *token_url;     /* NULL: vtn_url + "/auth/token" */
    const char *client_id;     /* OAuth2 client credentials */
    const char *client_secret; /* (kept in the client's memory, never in a diagnostic) */
    const char *scope;         /* NULL: none sent */
    double timeout_s;          /* per request (10) */
} pfi_oadr_client_config;

typedef struct pfi_oadr_client pfi_oadr_client;

/* pfi_oadr_client_create — a client (no request made yet). Errors: PFI_ERR_INVALID_ARGUMENT
 * (no URL, id or secret; timeout not > 0), PFI_ERR_UNAVAILABLE (libcurl cannot load),
 * PFI_ERR_NOMEM. */
pfi_error pfi_oadr_client_create(const pfi_oadr_client_config *cfg, pfi_oadr_client **out,
                                 pfi_diag *diag);
void pfi_oadr_client_destroy(pfi_oadr_client *c);

/*
 * pfi_oadr_request — one request to the VTN with the Bearer token: GET (body NULL) or POST
 * of a JSON body to vtn_url + path ("/events?programID=..."). The token is fetched (POST of
 * grant_type=client_credentials, form-encoded, to the token URL) when there is none or it
 * expires within 10 s (expires_in), and fetched again once when the VTN answers 401. On 2xx
 * *answer (may be NULL; owned, pfi_free) gets the body and *alen its length. Errors:
 * PFI_ERR_NO_PERMISSION (the token URL refused the credentials, or the VTN answered 401
 * after a fresh token, or 403: diag says which), PFI_ERR_IO (the VTN or token URL could not
 * be reached, or answered another non-2xx status: diag names the URL and status),
 * PFI_ERR_LIMIT (an answer larger than 16 MiB), PFI_ERR_PARSE (the token answer is not JSON
 * with access_token), PFI_ERR_NOMEM.
 */
pfi_error pfi_oadr_request(pfi_oadr_client *c, const char *path, const char *body, char **answer,
                           size_t *alen, pfi_diag *diag);

/*
 * pfi_oadr_program_id — the id of the program named program_name (GET /programs, the one
 * whose programName matches; an answer of programs without one: PFI_ERR_EMPTY) into
 * id[PFI_OADR_ID_LEN]. Errors: those of pfi_oadr_request, PFI_ERR_PARSE, PFI_ERR_EMPTY.
 */
pfi_error pfi_oadr_program_id(pfi_oadr_client *c, const char *program_name, char *id,
                              pfi_diag *diag);

/* pfi_oadr_events_get — GET /events?programID=program_id (URL-escaped), page by page (skip,
 * limit 50: the spec's largest) until a short page; *json (owned, pfi_free) of *len bytes, one
 * JSON array of every page's events. Errors: those of pfi_oadr_request, PFI_ERR_PARSE (a page
 * is not a JSON array), PFI_ERR_LIMIT (more than PFI_OADR_MAX_INTERVALS events). */
pfi_error pfi_oadr_events_get(pfi_oadr_client *c, const char *program_id, char **json, size_t *len,
                              pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
