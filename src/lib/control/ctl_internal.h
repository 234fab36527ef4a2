/*
 * Internals shared by the controller's files (src/lib/control). Not part of the public API.
 */
#ifndef PFI_CTL_INTERNAL_H
#define PFI_CTL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/agent_api.h"
#include "pfi/control.h"
#include "pfi/error.h"

/* ctl_fail — fill d (may be NULL) with line and message; return e. */
pfi_error ctl_fail(pfi_diag *d, long line, pfi_error e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ctl_audit_period_time — whether a ctl_periods row of the audit log at path (its id) has
 * times pfi reads: t_s (controller seconds since create) finite, 0 or more and not before prev_t_s
 * (the row before's, NaN for the first); wall_s (Unix s) NULL (NaN) or 0 to 253402300799.
 * PFI_OK, or PFI_ERR_PARSE with d naming the file, the row and the field: never a period of a
 * negative length nor one dated outside the calendar. */
pfi_error ctl_audit_period_time(pfi_diag *d, const char *path, long long id, double t_s,
                                double wall_s, double prev_t_s);

/* ctl_audit_not_a_file — a directory named as the audit log, or (must_exist) a path that
 * does not exist: PFI_ERR_IO with "audit log: PATH: is a directory, not an audit log" or the
 * stat's error (SQLite would say "disk I/O error" or "unable to open database file"); else
 * PFI_OK. */
pfi_error ctl_audit_not_a_file(const char *path, bool must_exist, pfi_diag *d);

/* ctl_parse_num — a whole-string finite number. */
bool ctl_parse_num(const char *s, double *out);

/* ctl_window_median — push v into the window h[CTL_REF_WINDOW] (*n values pushed so far) and
 * return the median of the values it holds. */
#define CTL_REF_WINDOW 5
double ctl_window_median(double *h, size_t *n, double v);

/* ctl_objective_factor — a job's factor on its policy weight in the allocation's objective
 * (pfi_ctl_objective, pfi/control.h): 1 for tokens/s (or without a finite ref_tput > 0, or
 * without the means); else its share of the score (gpus ÷ g_mean for weighted, 1 for mean,
 * the two's average for balanced) × t_mean ÷ ref_tput. gpus: the job's GPUs; ref_tput: its
 * reference tokens/s (the whole job's); g_mean, t_mean: the means of both over the jobs. */
double ctl_objective_factor(pfi_ctl_objective o, double gpus, double ref_tput, double g_mean,
                            double t_mean);

/* ctl_copy — copy src into dst[n]; false (dst untouched) when it does not fit. */
bool ctl_copy(char *dst, size_t n, const char *src);

/* ---- the agent's answers (agentapi.c, agentapi_fast.c) ---- */
/* ctl_state_parse_fast, ctl_caps_parse_fast — pfi_agent_state_parse's and
 * pfi_agent_caps_parse's fast path: true with the result exactly the jansson parser's (below),
 * or false (out partly written) for anything it does not take — every malformed body, and
 * strings with escapes or non-ASCII bytes — which the jansson parser then reads. */
bool ctl_state_parse_fast(const char *text, size_t len, pfi_agent_state *out);
bool ctl_caps_parse_fast(const char *text, size_t len, pfi_agent_cap_reply *out, size_t max,
                         size_t *n, bool *applied);
/* The same parses through jansson (the reference, and the one that names errors). */
pfi_error ctl_state_parse_json(const char *text, size_t len, pfi_agent_state *out, pfi_diag *diag);
pfi_error ctl_caps_parse_json(const char *text, size_t len, pfi_agent_cap_reply *out, size_t max,
                              size_t *n, bool *applied, pfi_diag *diag);

/* ---- HTTP (built-in for http://, libcurl multi otherwise): many requests at once,
 * bounded answers ---- */
#define CTL_HTTP_MAX_BODY (8u << 20) /* longest answer kept, bytes */
/* connections open at once, kept between periods (fewer when the file limit is lower) */
#define CTL_HTTP_MAX_CONNECTIONS 4096
#define PFI_CTL_AUTH_LEN 320

typedef struct ctl_http_req {
    const char *method; /* "GET", "PUT", "DELETE", "POST" */
    char url[640];
    const char *token;  /* bearer token or NULL */
    const char *body;   /* request body or NULL (borrowed) */
    const char *header; /* one more request header "Name: value" or NULL (borrowed) */
    /* results */
    long status; /* HTTP status, 0 when no answer */
    char *resp;  /* answer body (owned: pfi_free), NUL-terminated, or NULL */
    size_t resp_len;
    char err[160]; /* transport error when status == 0 */
} ctl_http_req;

typedef struct ctl_http ctl_http;
pfi_error ctl_http_create(ctl_http **out, pfi_diag *d);
void ctl_http_destroy(ctl_http *h);
/* ctl_http_run — perform r[n] concurrently, each within timeout_s. Frees earlier resp. */
pfi_error ctl_http_run(ctl_http *h, ctl_http_req *r, size_t n, double timeout_s);
void ctl_http_req_clear(ctl_http_req *r);
/* ctl_http_set_builtin — whether plain http:// requests to numeric addresses go through pfi's
 * own HTTP/1.1 client (http_wire.c; the default) or, off, through libcurl like the rest. */
void ctl_http_set_builtin(ctl_http *h, bool on);
/* ctl_http_counts — the built-in client's connections opened and requests sent again on a
 * new connection after a kept one was found closed (0 without it). */
void ctl_http_counts(const ctl_http *h, unsigned long *opened, unsigned long *resent);

/* ---- audit (SQLite) ---- */
typedef struct ctl_audit ctl_audit;
pfi_error ctl_audit_open(const char *path, const char *config_json, ctl_audit **out, pfi_diag *d);
void ctl_audit_close(ctl_audit *a);
long ctl_audit_run_id(const ctl_audit *a);
pfi_error ctl_audit_begin(ctl_audit *a);
pfi_error ctl_audit_commit(ctl_audit *a, pfi_diag *d);
/* period row stamped wall_s (Unix s: the controller's clock); returns its id in *id */
struct pfi_ctl_report;
pfi_error ctl_audit_period(ctl_audit *a, const struct pfi_ctl_report *r, const char *strategy,
                           double wall_s, long *id);
pfi_error ctl_audit_job(ctl_audit *a, long period, const char *job, const char *cls, size_t gpus,
                        double pfi, const char *source, double cap_w, double ref_power_w,
                        double ref_tput, double power_w, double pred_power_w, double tput,
                        const char *cap_state, double band);
pfi_error ctl_audit_cap(ctl_audit *a, long period, int phase, const char *agent, const char *uuid,
                        double requested_w, double enforced_w, const char *what);
pfi_error ctl_audit_original(ctl_audit *a, const char *agent, const char *uuid, double w);
/* restore: latest reference values of a job from any earlier run; false when none */
bool ctl_audit_job_ref(ctl_audit *a, const char *job, double *ref_power_w, double *ref_tput);
/* restore: the latest PFI a model gave job in any earlier run; false (*pfi untouched) when none */
bool ctl_audit_job_model_pfi(ctl_audit *a, const char *job, double *pfi);
bool ctl_audit_original_get(ctl_audit *a, const char *uuid, double *w);
pfi_error ctl_audit_fix_caps(ctl_audit *a, long period);
/* ctl_audit_agent_gpus — the GPUs an earlier run saw on agent, with their last confirmed
 * cap (else their original): for a restarted controller whose agent does not answer. */
size_t ctl_audit_agent_gpus(ctl_audit *a, const char *agent, char (*uuid)[128], double *cap_w,
                            size_t max);
bool ctl_audit_last_correction(ctl_audit *a, double *corr_w);

#endif
