/*
 * A controller of controllers (pfi/control.h; issue 18 items 4 and 6): the site budget split
 * among child controllers over their feasible ranges by priority band (the lowest band cut
 * first across the site), through their GET /v1/status and
 * PUT /v1/budget; a silent child's accepted budget held as spent.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "control/ctl_internal.h"
#include "core/memory.h"
#include "pfi/control.h"

pfi_error pfi_ctl_split(double budget_w, const double *min_w, const double *max_w,
                        const double *fixed_w, size_t n, double *share_w, bool *feasible)
{
    if (isnan(budget_w))
        return PFI_ERR_INVALID_ARGUMENT;
    double rest = budget_w, lo = 0, room = 0, top = 0;
    for (size_t i = 0; i < n; i++) {
        if (isfinite(fixed_w[i])) {
            rest -= fixed_w[i];
            continue;
        }
        if (!(min_w[i] >= 0) || !(max_w[i] >= min_w[i]))
            return PFI_ERR_INVALID_ARGUMENT;
        lo += min_w[i];
        room += max_w[i] - min_w[i];
        top += max_w[i];
    }
    *feasible = rest >= lo;
    double f = !*feasible ? 0 : room > 0 ? fmin(1, (rest - lo) / room) : 1;
    double surplus = *feasible ? rest - lo - f * room : 0;
    for (size_t i = 0; i < n; i++) {
        if (isfinite(fixed_w[i])) {
            share_w[i] = fixed_w[i];
            continue;
        }
        share_w[i] = min_w[i] + f * (max_w[i] - min_w[i]);
        if (surplus > 0 && top > 0)
            share_w[i] += surplus * max_w[i] / top;
    }
    return PFI_OK;
}

/* A child's headroom in its band k (k < n_bands; with no bands, k 0: the whole range),
 * fitted to its range: the bands' headroom beyond max_w − min_w taken from the lowest bands
 * up (a top limit cuts the range of the bands a reduction reaches first), a shortfall added
 * to the lowest band. */
static double band_room(const pfi_ctl_split_child *c, size_t k)
{
    double h = c->max_w - c->min_w;
    if (c->n_bands == 0)
        return h;
    double sum = 0, below = 0;
    for (size_t j = 0; j < c->n_bands; j++) {
        double r = c->bands[j].max_w - c->bands[j].min_w;
        sum += r;
        if (j < k)
            below += r;
    }
    double r = c->bands[k].max_w - c->bands[k].min_w, excess = sum - h;
    if (excess > 0)
        return r - fmin(r, fmax(0, excess - below));
    return k == 0 ? r - excess : r;
}

/* Child c's band k's number (a child without bands: band 0). */
static double band_of(const pfi_ctl_split_child *c, size_t k)
{
    return c->n_bands == 0 ? 0 : c->bands[k].band;
}

pfi_error pfi_ctl_split_bands(double budget_w, const pfi_ctl_split_child *c, size_t n,
                              double *share_w, bool *feasible)
{
    if (isnan(budget_w))
        return PFI_ERR_INVALID_ARGUMENT;
    double rest = budget_w, lo = 0, top = 0;
    for (size_t i = 0; i < n; i++) {
        if (isfinite(c[i].fixed_w)) {
            rest -= c[i].fixed_w;
            continue;
        }
        if (!(c[i].min_w >= 0) || !(c[i].max_w >= c[i].min_w) || !isfinite(c[i].max_w) ||
            (c[i].n_bands > 0 && c[i].bands == NULL))
            return PFI_ERR_INVALID_ARGUMENT;
        for (size_t k = 0; k < c[i].n_bands; k++) {
            const pfi_ctl_band_range *b = &c[i].bands[k];
            if (!isfinite(b->band) || !(b->min_w >= 0) || !(b->max_w >= b->min_w) ||
                !isfinite(b->max_w) || (k > 0 && !(b->band > c[i].bands[k - 1].band)))
                return PFI_ERR_INVALID_ARGUMENT;
        }
        lo += c[i].min_w;
        top += c[i].max_w;
    }
    *feasible = rest >= lo;
    for (size_t i = 0; i < n; i++)
        share_w[i] = isfinite(c[i].fixed_w) ? c[i].fixed_w : c[i].min_w;
    if (!*feasible)
        return PFI_OK;
    /* the bands from the highest down: each band's headroom across the children in full
     * while the rest lasts, else the same fraction of it to each */
    double avail = rest - lo, cur = INFINITY;
    for (;;) {
        double b = -INFINITY;
        bool any = false;
        for (size_t i = 0; i < n; i++) {
            if (isfinite(c[i].fixed_w))
                continue;
            for (size_t k = 0; k < (c[i].n_bands ? c[i].n_bands : 1); k++) {
                double bk = band_of(&c[i], k);
                if (bk < cur && (!any || bk > b)) {
                    b = bk;
                    any = true;
                }
            }
        }
        if (!any)
            break;
        double room = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; !isfinite(c[i].fixed_w) && k < (c[i].n_bands ? c[i].n_bands : 1);
                 k++)
                if (band_of(&c[i], k) == b)
                    room += band_room(&c[i], k);
        double f = room > 0 ? fmin(1, avail / room) : 1;
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; !isfinite(c[i].fixed_w) && k < (c[i].n_bands ? c[i].n_bands : 1);
                 k++)
                if (band_of(&c[i], k) == b)
                    share_w[i] += f * band_room(&c[i], k);
        avail = fmax(0, avail - f * room);
        cur = b;
    }
    if (avail > 0 && top > 0)
        for (size_t i = 0; i < n; i++)
            if (!isfinite(c[i].fixed_w))
                share_w[i] += avail * c[i].max_w / top;
    return PFI_OK;
}

typedef struct child {
    char url[PFI_CTL_URL_LEN];
    char token[PFI_CTL_TOKEN_LEN];
    bool up;
    bool answered; /* its status was read at least once */
    double measured_w, min_w, max_w, share_w, accepted_w;
    bool has_bands; /* its last answer had "bands" */
    size_t n_bands;
    pfi_ctl_band_range bands[PFI_CTL_MAX_BANDS]; /* its last answer's */
    unsigned long silent;
    char fault[160];
} child;

struct pfi_ctl_parent {
    ctl_http *http;
    child *c;
    size_t n;
    double timeout_s;
    ctl_http_req *req;
    char (*body)[128];
    char (*auth)[PFI_CTL_TOKEN_LEN + 32];
};

pfi_error pfi_ctl_parent_create(const pfi_ctl_agent_spec *children, size_t n, double http_timeout_s,
                                pfi_ctl_parent **out, pfi_diag *d)
{
    *out = NULL;
    if (n == 0 || children == NULL || !(http_timeout_s > 0))
        return ctl_fail(d, 0, PFI_ERR_INVALID_ARGUMENT,
                        "parent controller: children and a timeout > 0 are needed");
    pfi_ctl_parent *p = pfi_calloc(1, sizeof *p);
    if (p == NULL)
        return PFI_ERR_NOMEM;
    p->n = n;
    p->timeout_s = http_timeout_s;
    p->c = pfi_calloc(n, sizeof *p->c);
    p->req = pfi_calloc(n, sizeof *p->req);
    p->body = pfi_calloc(n, sizeof *p->body);
    p->auth = pfi_calloc(n, sizeof *p->auth);
    if (!p->c || !p->req || !p->body || !p->auth) {
        pfi_ctl_parent_destroy(p);
        return PFI_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        child *c = &p->c[i];
        ctl_copy(c->url, sizeof c->url, children[i].url);
        size_t l = strlen(c->url);
        while (l > 0 && c->url[l - 1] == '/')
            c->url[--l] = '\0';
        ctl_copy(c->token, sizeof c->token, children[i].token);
        c->measured_w = c->min_w = c->max_w = c->share_w = c->accepted_w = NAN;
    }
    pfi_error e = ctl_http_create(&p->http, d);
    if (e != PFI_OK) {
        pfi_ctl_parent_destroy(p);
        return e;
    }
    *out = p;
    return PFI_OK;
}

void pfi_ctl_parent_destroy(pfi_ctl_parent *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; p->req != NULL && i < p->n; i++)
        ctl_http_req_clear(&p->req[i]);
    ctl_http_destroy(p->http);
    pfi_free(p->c);
    pfi_free(p->req);
    pfi_free(p->body);
    pfi_free(p->auth);
    pfi_free(p);
}

/* A number of the object o, NaN when absent or null. */
static double jget(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The status' "bands" array a into o (has_bands, n_bands, bands). Errors: PFI_ERR_VALUE. */
static pfi_error parse_bands(json_t *a, pfi_ctl_child_status *o, pfi_diag *d)
{
    if (!json_is_array(a))
        return ctl_fail(d, 0, PFI_ERR_VALUE, "child status: bands: expected an array");
    if (json_array_size(a) > PFI_CTL_MAX_BANDS)
        return ctl_fail(d, 0, PFI_ERR_VALUE, "child status: bands: %zu bands, at most %d",
                        json_array_size(a), PFI_CTL_MAX_BANDS);
    for (size_t k = 0; k < json_array_size(a); k++) {
        json_t *b = json_array_get(a, k);
        pfi_ctl_band_range r = {
            .band = jget(b, "band"), .min_w = jget(b, "min_w"), .max_w = jget(b, "max_w")};
        if (!json_is_object(b) || !isfinite(r.band) || !(r.min_w >= 0) || !(r.max_w >= r.min_w) ||
            !isfinite(r.max_w))
            return ctl_fail(d, 0, PFI_ERR_VALUE,
                            "child status: bands[%zu]: expected {\"band\": B, \"min_w\": W, "
                            "\"max_w\": W} with 0 <= min_w <= max_w",
                            k);
        if (k > 0 && !(r.band > o->bands[k - 1].band))
            return ctl_fail(d, 0, PFI_ERR_VALUE,
                            "child status: bands[%zu]: band %g not above the one before (%g)", k,
                            r.band, o->bands[k - 1].band);
        o->bands[k] = r;
    }
    o->n_bands = json_array_size(a);
    o->has_bands = true;
    return PFI_OK;
}

pfi_error pfi_ctl_child_status_parse(const char *text, size_t len, pfi_ctl_child_status *o,
                                     pfi_diag *d)
{
    memset(o, 0, sizeof *o);
    json_error_t je;
    json_t *j = json_loadb(text, len, 0, &je);
    if (!json_is_object(j)) {
        json_decref(j);
        return ctl_fail(d, 0, PFI_ERR_PARSE, "child status: not a JSON object (%.100s)", je.text);
    }
    o->t_s = jget(j, "t_s");
    o->budget_w = jget(j, "budget_w");
    o->measured_w = jget(j, "measured_w");
    o->reserved_w = jget(j, "reserved_w");
    o->min_w = jget(j, "min_w");
    o->max_w = jget(j, "max_w");
    o->event = json_is_true(json_object_get(j, "event"));
    o->ramp_limited = json_is_true(json_object_get(j, "ramp_limited"));
    json_t *bands = json_object_get(j, "bands");
    pfi_error e = bands != NULL ? parse_bands(bands, o, d) : PFI_OK;
    json_decref(j);
    if (e != PFI_OK)
        return e;
    if (!(o->min_w >= 0) || !(o->max_w >= o->min_w) || !isfinite(o->max_w))
        return ctl_fail(d, 0, PFI_ERR_VALUE,
                        "child status: no feasible range (min_w %g, max_w %g: expected 0 <= "
                        "min_w <= max_w)",
                        o->min_w, o->max_w);
    return PFI_OK;
}

/* Read every child's GET /v1/status. Errors: PFI_ERR_NOMEM. */
static pfi_error read_children(pfi_ctl_parent *p)
{
    for (size_t i = 0; i < p->n; i++) {
        ctl_http_req *r = &p->req[i];
        ctl_http_req_clear(r);
        memset(r, 0, sizeof *r);
        r->method = "GET";
        snprintf(r->url, sizeof r->url, "%s/v1/status", p->c[i].url);
    }
    pfi_error e = ctl_http_run(p->http, p->req, p->n, p->timeout_s);
    if (e != PFI_OK)
        return e;
    for (size_t i = 0; i < p->n; i++) {
        child *c = &p->c[i];
        ctl_http_req *r = &p->req[i];
        c->fault[0] = '\0';
        c->up = false;
        if (r->status != 200 || r->resp == NULL) {
            snprintf(c->fault, sizeof c->fault, "status: %.140s",
                     r->status == 0 ? r->err : "HTTP error");
            if (r->status != 0)
                snprintf(c->fault, sizeof c->fault, "status: HTTP %ld", r->status);
            continue;
        }
        pfi_ctl_child_status st;
        pfi_diag sd;
        if (pfi_ctl_child_status_parse(r->resp, r->resp_len, &st, &sd) != PFI_OK) {
            snprintf(c->fault, sizeof c->fault, "%.150s", sd.message);
            continue;
        }
        c->measured_w = st.measured_w + (isfinite(st.reserved_w) ? st.reserved_w : 0);
        c->min_w = st.min_w;
        c->max_w = st.max_w;
        c->has_bands = st.has_bands;
        c->n_bands = st.n_bands;
        memcpy(c->bands, st.bands, sizeof c->bands);
        c->up = true;
        c->answered = true;
    }
    return PFI_OK;
}

/* PUT the budgets of the children picked by want[i] (share_w, or {"event": false} when
 * event is false); those that do not accept it are marked silent. Errors: NOMEM. */
static pfi_error put_children(pfi_ctl_parent *p, const bool *want, bool event)
{
    size_t m = 0;
    size_t *ix = pfi_malloc((p->n + 1) * sizeof *ix);
    if (ix == NULL)
        return PFI_ERR_NOMEM;
    for (size_t i = 0; i < p->n; i++) {
        if (!want[i])
            continue;
        child *c = &p->c[i];
        ctl_http_req *r = &p->req[m];
        ctl_http_req_clear(r);
        memset(r, 0, sizeof *r);
        r->method = "PUT";
        snprintf(r->url, sizeof r->url, "%s/v1/budget", c->url);
        if (event)
            snprintf(p->body[m], sizeof p->body[m], "{\"budget_w\": %.3f}", c->share_w);
        else
            snprintf(p->body[m], sizeof p->body[m], "{\"event\": false}");
        r->body = p->body[m];
        r->token = c->token[0] ? c->token : NULL;
        ix[m++] = i;
    }
    pfi_error e = m > 0 ? ctl_http_run(p->http, p->req, m, p->timeout_s) : PFI_OK;
    for (size_t k = 0; e == PFI_OK && k < m; k++) {
        child *c = &p->c[ix[k]];
        if (p->req[k].status == 200) {
            c->accepted_w = event ? c->share_w : NAN;
            continue;
        }
        c->up = false;
        snprintf(c->fault, sizeof c->fault, "budget: %.140s",
                 p->req[k].status == 0 ? p->req[k].err : "refused");
        if (p->req[k].status != 0)
            snprintf(c->fault, sizeof c->fault, "budget: HTTP %ld", p->req[k].status);
    }
    pfi_free(ix);
    return e;
}

pfi_error pfi_ctl_parent_step(pfi_ctl_parent *p, double t_s, bool event, double budget_w,
                              pfi_ctl_parent_report *rep, pfi_diag *d)
{
    (void)d;
    memset(rep, 0, sizeof *rep);
    rep->t_s = t_s;
    rep->event = event;
    rep->budget_w = event ? budget_w : NAN;
    rep->children = p->n;
    rep->feasible = true;
    pfi_error e = read_children(p);
    if (e != PFI_OK)
        return e;
    size_t n = p->n;
    double *buf = pfi_malloc((4 * n + 1) * sizeof *buf);
    bool *want = pfi_calloc(n + 1, sizeof *want);
    pfi_ctl_split_child *sc = pfi_calloc(n + 1, sizeof *sc);
    if (buf == NULL || want == NULL || sc == NULL) {
        pfi_free(buf);
        pfi_free(want);
        pfi_free(sc);
        return PFI_ERR_NOMEM;
    }
    double *mn = buf, *mx = mn + n, *fx = mx + n, *sh = fx + n;
    size_t never = 0;    /* silent children that never answered: nothing known to hold */
    size_t measured = 0; /* children with a measurement (their last answer) */
    for (size_t i = 0; i < n; i++) {
        child *c = &p->c[i];
        c->silent = c->up ? 0 : c->silent + 1;
        /* a silent child holds the budget it last accepted; one never given any holds the
         * most it can draw (its last maximum), else nothing is known: its last measure */
        fx[i] = c->up                     ? NAN
                : isfinite(c->accepted_w) ? c->accepted_w
                : isfinite(c->max_w)      ? c->max_w
                                          : c->measured_w;
        if (!c->up && isnan(fx[i]))
            fx[i] = 0;
        mn[i] = c->up ? c->min_w : 0;
        mx[i] = c->up ? c->max_w : 0;
        sc[i] = (pfi_ctl_split_child){.min_w = mn[i],
                                      .max_w = mx[i],
                                      .fixed_w = fx[i],
                                      .bands = c->up ? c->bands : NULL,
                                      .n_bands = c->up ? c->n_bands : 0};
        if (c->up) {
            rep->up++;
            rep->min_w += c->min_w;
            rep->max_w += c->max_w;
        } else if (c->answered || isfinite(c->accepted_w)) {
            rep->held_w += fx[i];
        } else {
            never++;
        }
        if (isfinite(c->measured_w)) {
            rep->measured_w += c->measured_w;
            measured++;
        }
        c->share_w = NAN;
    }
    if (event) {
        bool feasible;
        e = pfi_ctl_split_bands(budget_w, sc, n, sh, &feasible);
        if (e != PFI_OK) {
            snprintf(rep->note, sizeof rep->note, "split failed: a NaN budget");
            e = PFI_OK;
            goto out;
        }
        rep->feasible = feasible;
        if (!feasible)
            snprintf(rep->note, sizeof rep->note,
                     "infeasible: %.0f W held by silent children and %.0f W of minima exceed "
                     "the budget %.0f W",
                     rep->held_w, rep->min_w, budget_w);
        /* decreases first, then increases: the sum of the budgets in force never exceeds
         * the larger of the old and new sums */
        for (int phase = 0; phase < 2 && e == PFI_OK; phase++) {
            for (size_t i = 0; i < n; i++) {
                child *c = &p->c[i];
                want[i] = false;
                if (!c->up)
                    continue;
                bool dec = !(sh[i] >= c->accepted_w); /* NaN accepted: first budget, a cut */
                if ((phase == 0) == dec) {
                    c->share_w = sh[i];
                    want[i] = true;
                }
            }
            e = put_children(p, want, true);
        }
    } else {
        for (size_t i = 0; i < n; i++)
            want[i] = p->c[i].up;
        e = put_children(p, want, false);
    }
    for (size_t i = 0; i < n; i++) {
        if (p->c[i].up || rep->note[0] != '\0')
            continue;
        if (p->c[i].answered || isfinite(p->c[i].accepted_w))
            snprintf(rep->note, sizeof rep->note,
                     "child %.80s silent (%.80s): its %.0f W held, the others share the rest",
                     p->c[i].url, p->c[i].fault, fx[i]);
        else
            snprintf(rep->note, sizeof rep->note,
                     "child %.80s never answered (%.80s): nothing known to hold, the others "
                     "share the budget",
                     p->c[i].url, p->c[i].fault);
    }
    /* an older child (no "bands" in its status) with room to cut: one band, 0 */
    for (size_t i = 0; i < n && event && rep->note[0] == '\0'; i++)
        if (p->c[i].up && !p->c[i].has_bands && p->c[i].max_w > p->c[i].min_w)
            snprintf(rep->note, sizeof rep->note,
                     "child %.80s reports no bands: its range split as one band (0)", p->c[i].url);
    if (measured == 0)
        rep->measured_w = NAN; /* no child ever measured: missing, not 0 W */
    if (never > 0 && never == n - rep->up)
        rep->held_w = NAN; /* every silent child never answered: no hold is known, not 0 W */
out:
    pfi_free(buf);
    pfi_free(want);
    pfi_free(sc);
    return e;
}

void pfi_ctl_parent_child_get(const pfi_ctl_parent *p, size_t i, pfi_ctl_child_view *o)
{
    const child *c = &p->c[i];
    *o = (pfi_ctl_child_view){.url = c->url,
                              .up = c->up,
                              .answered = c->answered,
                              .measured_w = c->measured_w,
                              .min_w = c->min_w,
                              .max_w = c->max_w,
                              .n_bands = c->n_bands,
                              .has_bands = c->has_bands,
                              .share_w = c->share_w,
                              .accepted_w = c->accepted_w,
                              .silent = c->silent,
                              .fault = c->fault};
}
