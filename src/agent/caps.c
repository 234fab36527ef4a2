/*
 * The cap API's engine: journal repair at start, PUT / DELETE /v1/caps, the lease and its
 * expiry policy, idempotent request ids, restore at shutdown.
 *
 * Safety rules (docs/agent-api.md, docs/pfid.md): every request is checked whole — types,
 * GPUs and jobs, each cap against its device's range — before any GPU is touched; the
 * originals are journalled (pfi/capctl.h) before the first change; if a set fails midway the
 * GPUs already changed are put back, so a request is applied whole or not at all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "pfi/atomic_file.h"
#include "request.h"

#define GPU_LOCK_WAIT_S 5
#define RESTORE_RETRY_S 10

char *pfid_error_json(const char *msg)
{
    json_t *s = json_string(msg);
    json_t *o = json_object();
    if (o == NULL) {
        json_decref(s);
        return NULL;
    }
    json_object_set_new(o, "error", s ? s : json_string("error (message not UTF-8)"));
    char *out = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return out;
}

static void reply_error(int code, const char *msg, int *status, char **body)
{
    *status = code;
    *body = pfid_error_json(msg);
}

/* gpu_lock with a deadline: a hung driver must not hang the HTTP threads too. */
static bool gpu_lock_wait(pfid_agent *a, double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)seconds;
    return pthread_mutex_timedlock(&a->gpu_lock, &ts) == 0;
}

static uint32_t orig_mw(pfid_agent *a, unsigned k)
{
    return pfi_capctl_original(a->capctl, k)->current_mw;
}

/* Restore a journal left by a pfid that was killed (kill -9, power loss). */
static bool repair_journal(pfid_agent *a)
{
    const char *path = a->cfg.journal;
    if (path[0] == '\0' || access(path, F_OK) != 0)
        return true;
    pfi_journal j = {0};
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = pfi_journal_read(path, &j, &d);
    if (e != PFI_OK) {
        snprintf(a->caps_why, sizeof a->caps_why, "journal %s unreadable (%s): run pfi restore",
                 path, d.message);
        return false;
    }
    if (strcmp(j.backend, pfi_gpu_backend_name(a->gpu)) != 0) {
        snprintf(a->caps_why, sizeof a->caps_why,
                 "journal %s was written by the %s backend, pfid runs %s: run pfi restore", path,
                 j.backend, pfi_gpu_backend_name(a->gpu));
        pfi_journal_clear(&j);
        return false;
    }
    LOG_WARN("journal %s left by pid %ld: restoring %zu original limit(s)", path, j.pid, j.n);
    pfi_cap_result *r = calloc(j.n ? j.n : 1, sizeof *r);
    if (r == NULL) {
        pfi_journal_clear(&j);
        snprintf(a->caps_why, sizeof a->caps_why, "out of memory");
        return false;
    }
    pthread_mutex_lock(&a->gpu_lock);
    e = pfi_journal_restore(a->gpu, &j, r, &d);
    pthread_mutex_unlock(&a->gpu_lock);
    for (size_t k = 0; k < j.n; k++)
        if (r[k].error == PFI_OK)
            LOG_INFO("GPU %s: %s %.0f W", j.entries[k].uuid[0] ? j.entries[k].uuid : "-",
                     r[k].skipped ? "already at its original" : "restored to",
                     j.entries[k].original_mw / 1000.0);
    free(r);
    pfi_journal_clear(&j);
    if (e != PFI_OK) {
        snprintf(a->caps_why, sizeof a->caps_why, "journal %s not fully restored (%s): %s", path,
                 pfi_strerror(e), d.message);
        return false;
    }
    if (unlink(path) != 0) {
        snprintf(a->caps_why, sizeof a->caps_why, "%s: cannot remove: %s", path, strerror(errno));
        return false;
    }
    LOG_INFO("journal %s restored and removed", path);
    return true;
}

/* One owner per GPU (DESIGN §10): the GPUs' locks under run_dir ($PFI_RUN_DIR, else
 * /run/pfi for GPUs whose limits outlive pfid; none for emulated ones unless named), taken
 * before the journal is repaired or an original read. A GPU another tool owns (a sweep)
 * leaves cap control off, saying who owns it. A lock a crashed holder left without a journal
 * is an alarm: the limit read now may be that holder's cap, not the original. */
static bool take_ownership(pfid_agent *a)
{
    const char *rd = a->cfg.run_dir[0] ? a->cfg.run_dir : getenv("PFI_RUN_DIR");
    if (rd == NULL && (pfi_gpu_caps(a->gpu) & PFI_GPU_CAP_PERSISTENT_LIMITS))
        rd = PFI_RUN_DIR_DEFAULT;
    if (rd == NULL)
        return true;
    static char name[PFID_MAX_GPUS][96];
    const char *ids[PFID_MAX_GPUS];
    for (unsigned k = 0; k < a->n_gpus; k++) {
        pfi_gpu_info info;
        if (pfi_gpu_get_info(a->gpu, k, &info, NULL) == PFI_OK && info.uuid[0] != '\0')
            snprintf(name[k], sizeof name[k], "%s", info.uuid);
        else
            snprintf(name[k], sizeof name[k], "index-%u", k);
        ids[k] = name[k];
    }
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = pfi_gpu_lock_acquire(rd, ids, a->n_gpus, "pfid", &a->owner_lock, &d);
    if (e != PFI_OK) {
        snprintf(a->caps_why, sizeof a->caps_why, "%s", d.message);
        LOG_ERROR("cap control off: %s", d.message);
        return false;
    }
    bool journal = a->cfg.journal[0] != '\0' && access(a->cfg.journal, F_OK) == 0;
    for (unsigned k = 0; k < a->n_gpus; k++) {
        const char *prev = pfi_gpu_lock_previous(a->owner_lock, k);
        if (prev != NULL && !journal)
            LOG_ERROR("ALARM: GPU %s was owned by '%s', which ended without releasing it and "
                      "left no journal (%s): its limit now may be that owner's cap, not the "
                      "original; check it and set it back by hand",
                      ids[k], prev, a->cfg.journal);
    }
    return true;
}

static int resume_held(pfid_agent *a); /* below, with the held caps */

void pfid_caps_start(pfid_agent *a)
{
    a->caps_available = false;
    a->caps_why[0] = '\0';
    if (!(pfi_gpu_caps(a->gpu) & PFI_GPU_CAP_SET_LIMITS)) {
        snprintf(a->caps_why, sizeof a->caps_why, "the %s backend is read-only",
                 pfi_gpu_backend_name(a->gpu));
        return;
    }
    if (a->n_gpus == 0) {
        snprintf(a->caps_why, sizeof a->caps_why, "no GPU");
        return;
    }
    if (a->cfg.journal[0] == '\0') {
        snprintf(a->caps_why, sizeof a->caps_why, "no journal configured");
        return;
    }
    char dir[PFID_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", a->cfg.journal);
    if (access(dirname(dir), W_OK) != 0) {
        snprintf(a->caps_why, sizeof a->caps_why, "journal directory of %s not writable: %s",
                 a->cfg.journal, strerror(errno));
        return;
    }
    if (!take_ownership(a))
        return;
    int held = resume_held(a);
    if (held > 0)
        return; /* cap control runs, the held caps in force */
    if (held < 0 || !repair_journal(a))
        return;
    unsigned idx[PFID_MAX_GPUS];
    for (unsigned k = 0; k < a->n_gpus; k++)
        idx[k] = k;
    pfi_diag d;
    pfi_diag_clear(&d);
    pthread_mutex_lock(&a->gpu_lock);
    pfi_error e = pfi_capctl_create(a->gpu, idx, a->n_gpus, a->cfg.journal, a->cfg.nvml_library,
                                    &a->capctl, &d);
    if (e == PFI_OK)
        pfi_capctl_set_owner(a->capctl, "pfid");
    pthread_mutex_unlock(&a->gpu_lock);
    if (e != PFI_OK) {
        snprintf(a->caps_why, sizeof a->caps_why, "%s: %s", pfi_strerror(e), d.message);
        return;
    }
    pthread_mutex_lock(&a->snap_lock);
    for (unsigned k = 0; k < a->n_gpus; k++) {
        a->cur_mw[k] = orig_mw(a, k);
        a->gpus[k].original_mw = a->cur_mw[k];
        a->gpus[k].original_valid = true;
    }
    a->caps_available = true;
    pthread_mutex_unlock(&a->snap_lock);
}

/* Read-your-writes: the limits read back after a set go into the snapshot at once, so a
 * /v1/state right after a PUT or DELETE shows them (the sampler refreshes them anyway). */
static void publish_limits(pfid_agent *a, const pfi_cap_result *res)
{
    pthread_mutex_lock(&a->snap_lock);
    for (unsigned k = 0; k < a->n_gpus; k++) {
        if (!res[k].changed)
            continue;
        pfi_gpu_limits *l = &a->gpus[k].limits;
        if (res[k].readback & PFI_LIMIT_CURRENT) {
            l->current_mw = res[k].requested_mw;
            l->valid |= PFI_LIMIT_CURRENT;
        }
        if (res[k].readback & PFI_LIMIT_ENFORCED) {
            l->enforced_mw = res[k].enforced_mw;
            l->valid |= PFI_LIMIT_ENFORCED;
        }
    }
    pthread_mutex_unlock(&a->snap_lock);
}

/* ---- held caps across a restart (lease_policy = hold; DESIGN §10) -------------------------
 * JOURNAL.held, written after every PUT: the lease's end and revert time (Unix s), holder,
 * epoch, and the caps in force. A pfid restarted before the revert time adopts the journal's
 * originals and re-applies these caps instead of lifting the node to full power; the file
 * goes when the caps are restored. Format, one item a line:
 *   pfid-held 1 / expires_wall T / revert_wall T / request_id ID / controller ID|- /
 *   epoch N|- / cap INDEX MW / end */
static void held_path(const pfid_agent *a, char *buf, size_t n)
{
    snprintf(buf, n, "%s.held", a->cfg.journal);
}

static void held_remove(pfid_agent *a)
{
    char p[PFID_PATH_MAX + 8];
    held_path(a, p, sizeof p);
    if (unlink(p) != 0 && errno != ENOENT)
        LOG_WARN("%s: cannot remove: %s", p, strerror(errno));
}

/* Write JOURNAL.held from the lease and cur_mw (caller holds caps_lock). */
static void held_save(pfid_agent *a)
{
    if (a->cfg.lease_policy != PFID_POLICY_HOLD || a->cfg.journal[0] == '\0')
        return;
    char p[PFID_PATH_MAX + 8];
    held_path(a, p, sizeof p);
    pfi_atomic_file f;
    pfi_diag d;
    if (pfi_atomic_open_durable(&f, p, 0600, &d) != PFI_OK) {
        LOG_WARN("held caps not saved: %s", d.message);
        return;
    }
    double wall = pfid_wall_s(), mono = pfid_mono_s();
    pthread_mutex_lock(&a->snap_lock);
    pfid_lease_view l = a->lease;
    pthread_mutex_unlock(&a->snap_lock);
    fprintf(f.f, "pfid-held 1\nexpires_wall %.3f\nrevert_wall %.3f\nrequest_id %s\n",
            wall + (l.expires_mono - mono), wall + (l.revert_mono - mono),
            l.request_id[0] ? l.request_id : "-");
    fprintf(f.f, "controller %s\n", l.controller[0] ? l.controller : "-");
    if (isfinite(l.epoch))
        fprintf(f.f, "epoch %.0f\n", l.epoch);
    else
        fprintf(f.f, "epoch -\n");
    for (unsigned k = 0; k < a->n_gpus; k++)
        fprintf(f.f, "cap %u %u\n", k, (unsigned)a->cur_mw[k]);
    fprintf(f.f, "end\n");
    if (pfi_atomic_commit(&f, &d) != PFI_OK)
        LOG_WARN("held caps not saved: %s", d.message);
}

typedef struct held_caps {
    double expires_wall, revert_wall, epoch;
    char request_id[PFID_ID_MAX], controller[PFID_ID_MAX];
    uint32_t mw[PFID_MAX_GPUS];
    bool have[PFID_MAX_GPUS];
} held_caps;

/* JOURNAL.held into *h; false when there is none or it is not whole. */
static bool held_load(const pfid_agent *a, held_caps *h)
{
    char p[PFID_PATH_MAX + 8];
    held_path(a, p, sizeof p);
    FILE *f = fopen(p, "r");
    if (f == NULL)
        return false;
    memset(h, 0, sizeof *h);
    h->expires_wall = h->revert_wall = h->epoch = NAN;
    char line[300], word[300];
    bool head = false, end = false;
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned idx, mw;
        double v;
        if (strcmp(line, "pfid-held 1\n") == 0)
            head = true;
        else if (strcmp(line, "end\n") == 0)
            end = true;
        else if (sscanf(line, "expires_wall %lf", &v) == 1)
            h->expires_wall = v;
        else if (sscanf(line, "revert_wall %lf", &v) == 1)
            h->revert_wall = v;
        else if (sscanf(line, "epoch %lf", &v) == 1)
            h->epoch = v;
        else if (sscanf(line, "request_id %127s", word) == 1)
            snprintf(h->request_id, sizeof h->request_id, "%s", strcmp(word, "-") ? word : "");
        else if (sscanf(line, "controller %127s", word) == 1)
            snprintf(h->controller, sizeof h->controller, "%s", strcmp(word, "-") ? word : "");
        else if (sscanf(line, "cap %u %u", &idx, &mw) == 2 && idx < PFID_MAX_GPUS) {
            h->mw[idx] = mw;
            h->have[idx] = true;
        }
    }
    fclose(f);
    return head && end && isfinite(h->revert_wall);
}

static void clear_lease(pfid_agent *a)
{
    pthread_mutex_lock(&a->snap_lock);
    memset(&a->lease, 0, sizeof a->lease);
    pthread_mutex_unlock(&a->snap_lock);
    held_remove(a);
}

/*
 * A restart under lease_policy = hold before the held caps' revert time: the journal's
 * originals adopted and the held caps re-applied, the lease resumed (holding once its end is
 * past) — the node is never lifted to full power by the restart itself. Returns 1 when cap
 * control runs so, 0 when there is nothing to resume (the journal is then repaired as
 * usual), −1 when cap control cannot start (caps_why says why).
 */
static int resume_held(pfid_agent *a)
{
    held_caps h;
    double now_wall = pfid_wall_s();
    bool have_journal = access(a->cfg.journal, F_OK) == 0;
    if (!have_journal || a->cfg.lease_policy != PFID_POLICY_HOLD || !held_load(a, &h) ||
        !(h.revert_wall > now_wall)) {
        held_remove(a);
        return 0;
    }
    /* Times no lease of this node can have (a revert past now + lease_max + hold_max, an end
     * after the revert or none): never caps held on them; the originals come back instead. */
    double latest = now_wall + a->cfg.lease_max_s + a->cfg.hold_max_s;
    if (!(h.revert_wall <= latest) || !(h.expires_wall <= h.revert_wall)) {
        char p[PFID_PATH_MAX + 8], ex[32] = "-"; /* (a missing end said as '-') */
        held_path(a, p, sizeof p);
        if (isfinite(h.expires_wall))
            snprintf(ex, sizeof ex, "%.3f", h.expires_wall);
        LOG_WARN("%s: expires_wall %s / revert_wall %.3f is not a valid time (Unix s, the "
                 "end not after the revert, the revert within lease_max + hold_max = %.0f s of "
                 "now): the held caps are not resumed, the originals restored",
                 p, ex, h.revert_wall, a->cfg.lease_max_s + a->cfg.hold_max_s);
        held_remove(a);
        return 0;
    }
    pfi_journal j = {0};
    pfi_diag d;
    pfi_diag_clear(&d);
    if (pfi_journal_read(a->cfg.journal, &j, &d) != PFI_OK ||
        strcmp(j.backend, pfi_gpu_backend_name(a->gpu)) != 0) {
        pfi_journal_clear(&j);
        return 0;
    }
    unsigned idx[PFID_MAX_GPUS];
    uint32_t target[PFID_MAX_GPUS];
    for (unsigned k = 0; k < a->n_gpus; k++)
        idx[k] = k;
    pthread_mutex_lock(&a->gpu_lock);
    pfi_error e = pfi_capctl_adopt(a->gpu, idx, a->n_gpus, a->cfg.journal, a->cfg.nvml_library, &j,
                                   &a->capctl, &d);
    pfi_journal_clear(&j);
    pfi_cap_result res[PFID_MAX_GPUS];
    if (e == PFI_OK) {
        for (unsigned k = 0; k < a->n_gpus; k++)
            target[k] = h.have[k] ? h.mw[k] : pfi_capctl_original(a->capctl, k)->current_mw;
        e = pfi_capctl_apply(a->capctl, target, res, &d);
    }
    pthread_mutex_unlock(&a->gpu_lock);
    if (e != PFI_OK && e != PFI_ERR_NOT_EFFECTIVE) {
        LOG_ERROR("held caps not re-applied after the restart (%s): restoring the originals",
                  d.message);
        pfi_capctl_destroy(a->capctl);
        a->capctl = NULL;
        return 0;
    }
    double mono = pfid_mono_s();
    pthread_mutex_lock(&a->snap_lock);
    for (unsigned k = 0; k < a->n_gpus; k++) {
        a->cur_mw[k] = target[k];
        a->gpus[k].original_mw = pfi_capctl_original(a->capctl, k)->current_mw;
        a->gpus[k].original_valid = true;
    }
    a->lease.active = true;
    a->lease.holding = now_wall >= h.expires_wall;
    snprintf(a->lease.request_id, sizeof a->lease.request_id, "%s", h.request_id);
    snprintf(a->lease.controller, sizeof a->lease.controller, "%s", h.controller);
    a->lease.epoch = h.epoch;
    a->lease.expires_mono = mono + (h.expires_wall - now_wall);
    a->lease.revert_mono = mono + (h.revert_wall - now_wall);
    a->caps_available = true;
    pthread_mutex_unlock(&a->snap_lock);
    publish_limits(a, res);
    LOG_WARN("restarted under lease_policy=hold: the held caps of lease %s re-applied until "
             "%.0f s from now (the journal's originals kept)",
             h.request_id[0] ? h.request_id : "-", h.revert_wall - now_wall);
    return 1;
}

/* Put every GPU back on its original limit; caller holds caps_lock. */
static pfi_error restore_all(pfid_agent *a, const char *why, pfi_cap_result *res, bool wait,
                             char *msg, size_t msg_len)
{
    pfi_diag d;
    pfi_diag_clear(&d);
    if (!(wait ? (pthread_mutex_lock(&a->gpu_lock), true) : gpu_lock_wait(a, GPU_LOCK_WAIT_S))) {
        snprintf(msg, msg_len, "the GPU driver is not responding; restore retried in %d s",
                 RESTORE_RETRY_S);
        a->restore_pending = true;
        a->restore_retry_mono = pfid_mono_s() + RESTORE_RETRY_S;
        return PFI_ERR_DEVICE;
    }
    if (pfi_gpu_is_virtual_clock(a->gpu))
        pfi_gpu_sleep_until_s(a->gpu, pfid_mono_s() + a->clock_offset_s);
    pfi_error e = pfi_capctl_restore(a->capctl, res, &d);
    pthread_mutex_unlock(&a->gpu_lock);
    publish_limits(a, res);
    for (unsigned k = 0; k < a->n_gpus; k++)
        if (res[k].error == PFI_OK)
            a->cur_mw[k] = orig_mw(a, k);
    clear_lease(a);
    if (e == PFI_OK) {
        a->restore_pending = false;
        LOG_INFO("original power limits restored (%s)", why);
        msg[0] = '\0';
        return PFI_OK;
    }
    a->restore_pending = true;
    a->restore_retry_mono = pfid_mono_s() + RESTORE_RETRY_S;
    snprintf(msg, msg_len, "restore incomplete (%s): %s; journal %s kept, retried in %d s",
             pfi_strerror(e), d.message, a->cfg.journal, RESTORE_RETRY_S);
    LOG_ERROR("%s: %s", why, msg);
    return e;
}

void pfid_caps_tick(pfid_agent *a, double now)
{
    pthread_mutex_lock(&a->caps_lock);
    if (a->capctl != NULL) {
        pfi_cap_result res[PFID_MAX_GPUS];
        char msg[768];
        pfid_lease_view l;
        pthread_mutex_lock(&a->snap_lock);
        l = a->lease;
        pthread_mutex_unlock(&a->snap_lock);
        if (l.active && !l.holding && now >= l.expires_mono) {
            if (now >= l.revert_mono) {
                char why[200];
                snprintf(why, sizeof why, "lease %s expired, policy restore", l.request_id);
                restore_all(a, why, res, false, msg, sizeof msg);
            } else {
                LOG_WARN("lease %s expired: holding the caps for up to %.0f s (policy hold)",
                         l.request_id, l.revert_mono - now);
                pthread_mutex_lock(&a->snap_lock);
                a->lease.holding = true;
                pthread_mutex_unlock(&a->snap_lock);
            }
        } else if (l.active && l.holding && now >= l.revert_mono) {
            char why[200];
            snprintf(why, sizeof why, "lease %s expired and hold_max ended", l.request_id);
            restore_all(a, why, res, false, msg, sizeof msg);
        } else if (a->restore_pending && now >= a->restore_retry_mono) {
            restore_all(a, "retry", res, false, msg, sizeof msg);
        }
    }
    pthread_mutex_unlock(&a->caps_lock);
}

double pfid_caps_next_s(pfid_agent *a, double now, double max_wait)
{
    double t = max_wait;
    pthread_mutex_lock(&a->snap_lock);
    pfid_lease_view l = a->lease;
    pthread_mutex_unlock(&a->snap_lock);
    if (l.active) {
        double due = l.holding ? l.revert_mono : l.expires_mono;
        if (due - now < t)
            t = due - now;
    }
    return t < 0.001 ? 0.001 : t;
}

void pfid_caps_stop(pfid_agent *a)
{
    pthread_mutex_lock(&a->caps_lock);
    if (a->capctl != NULL) {
        bool changed = a->restore_pending;
        for (unsigned k = 0; k < a->n_gpus; k++)
            changed = changed || a->cur_mw[k] != orig_mw(a, k);
        if (changed && a->cfg.shutdown_policy == PFID_POLICY_HOLD) {
            LOG_WARN("shutdown = hold: caps left in place; journal %s kept (the next start or "
                     "'pfi restore' puts the originals back)",
                     a->cfg.journal);
        } else if (changed) {
            pfi_cap_result res[PFID_MAX_GPUS];
            char msg[768];
            if (restore_all(a, "shutdown", res, true, msg, sizeof msg) != PFI_OK)
                LOG_ERROR("run 'pfi restore --journal %s' once the GPU is back", a->cfg.journal);
        }
        pfi_capctl_destroy(a->capctl);
        a->capctl = NULL;
    }
    pfi_gpu_lock_release(a->owner_lock);
    a->owner_lock = NULL;
    for (unsigned k = 0; k < PFID_IDEM_SLOTS; k++) {
        free(a->idem[k].response);
        a->idem[k].response = NULL;
        a->idem[k].id[0] = '\0';
    }
    pthread_mutex_unlock(&a->caps_lock);
}

static json_t *gpu_result(const pfid_agent *a, unsigned k, uint32_t requested_mw,
                          const pfi_cap_result *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "uuid", json_string(a->gpus[k].info.uuid));
    json_object_set_new(o, "requested_cap_w", json_real(requested_mw / 1000.0));
    json_object_set_new(o, "enforced_cap_w",
                        r != NULL && (r->readback & PFI_LIMIT_ENFORCED)
                            ? json_real(r->enforced_mw / 1000.0)
                            : json_null());
    return o;
}

static const char *gpu_name(const pfid_agent *a, unsigned k, char *buf, size_t n)
{
    if (a->gpus[k].info.uuid[0] != '\0')
        snprintf(buf, n, "%s", a->gpus[k].info.uuid);
    else
        snprintf(buf, n, "%u", k);
    return buf;
}

/* Resolve the request's items to GPU targets. 0, or an HTTP status with msg. */
static int resolve(pfid_agent *a, const pfid_caps_request *rq, bool *which, double *want_w,
                   char *msg, size_t msg_len)
{
    int status = 0;
    pthread_mutex_lock(&a->snap_lock);
    for (size_t i = 0; i < rq->n && status == 0; i++) {
        const pfid_cap_item *it = &rq->items[i];
        bool found = false;
        for (unsigned k = 0; k < a->n_gpus && status == 0; k++) {
            bool match = it->by_job ? strcmp(a->gpus[k].job, it->id) == 0
                                    : strcmp(a->gpus[k].info.uuid, it->id) == 0;
            if (!match)
                continue;
            found = true;
            if (which[k]) {
                snprintf(msg, msg_len, "caps[%zu]: GPU %s is named twice in the request", i,
                         a->gpus[k].info.uuid);
                status = 400;
            }
            which[k] = true;
            want_w[k] = it->cap_w;
        }
        if (!found && status == 0) {
            snprintf(msg, msg_len,
                     it->by_job ? "caps[%zu]: no GPU of job %s on this node"
                                : "caps[%zu]: no GPU %s on this node",
                     i, it->id);
            status = 404;
        }
    }
    pthread_mutex_unlock(&a->snap_lock);
    return status;
}

/* Check every target against its device's range, then apply with rollback. Caller holds
 * caps_lock. 0 or an HTTP status with msg. */
static int check_and_apply(pfid_agent *a, const bool *which, const double *want_w, uint32_t *target,
                           pfi_cap_result *res, char *msg, size_t msg_len)
{
    char name[96];
    if (!gpu_lock_wait(a, GPU_LOCK_WAIT_S)) {
        snprintf(msg, msg_len, "the GPU driver is not responding; nothing changed");
        return 503;
    }
    for (unsigned k = 0; k < a->n_gpus; k++) {
        target[k] = a->cur_mw[k];
        if (!which[k])
            continue;
        pfi_gpu_limits l;
        pfi_diag d;
        pfi_diag_clear(&d);
        pfi_error e = pfi_gpu_read_limits(a->gpu, k, &l, &d);
        if (e != PFI_OK) {
            pthread_mutex_unlock(&a->gpu_lock);
            snprintf(msg, msg_len, "GPU %s: %s (%s); nothing changed",
                     gpu_name(a, k, name, sizeof name), pfi_strerror(e), d.message);
            return 503;
        }
        bool clamped;
        e = pfi_cap_resolve_mw(&l, want_w[k], false, &target[k], &clamped, &d);
        if (e != PFI_OK) {
            pthread_mutex_unlock(&a->gpu_lock);
            if ((l.valid & (PFI_LIMIT_MIN | PFI_LIMIT_MAX)) == (PFI_LIMIT_MIN | PFI_LIMIT_MAX))
                snprintf(msg, msg_len,
                         "GPU %s: cap %.2f W is outside the device's range [%.2f, %.2f] W "
                         "(min_cap_w, max_cap_w); nothing changed",
                         gpu_name(a, k, name, sizeof name), want_w[k], l.min_mw / 1000.0,
                         l.max_mw / 1000.0);
            else
                snprintf(msg, msg_len, "GPU %s: %s; nothing changed",
                         gpu_name(a, k, name, sizeof name), d.message);
            return 422;
        }
    }
    pfi_diag d;
    pfi_diag_clear(&d);
    if (pfi_gpu_is_virtual_clock(a->gpu)) /* emulated: the new caps start now, not at the
                                              last sample */
        pfi_gpu_sleep_until_s(a->gpu, pfid_mono_s() + a->clock_offset_s);
    pfi_error e = pfi_capctl_apply_subset(a->capctl, target, which, res, &d);
    if (e == PFI_OK) {
        pthread_mutex_unlock(&a->gpu_lock);
        return 0;
    }
    /* all or nothing: put back what this request changed */
    bool back[PFID_MAX_GPUS] = {false};
    bool any = false;
    for (unsigned k = 0; k < a->n_gpus; k++) {
        back[k] = which[k] && res[k].changed;
        any = any || back[k];
    }
    pfi_error e2 = PFI_OK;
    pfi_diag d2;
    pfi_diag_clear(&d2);
    if (any) {
        pfi_cap_result res2[PFID_MAX_GPUS];
        e2 = pfi_capctl_apply_subset(a->capctl, a->cur_mw, back, res2, &d2);
    }
    pthread_mutex_unlock(&a->gpu_lock);
    if (e2 == PFI_OK)
        snprintf(msg, msg_len, "%s (%s); the request was not applied%s", d.message, pfi_strerror(e),
                 any ? " (GPUs already changed were put back)" : "");
    else
        snprintf(msg, msg_len, "%s (%s); putting back the GPUs already changed failed too: %s",
                 d.message, pfi_strerror(e), d2.message);
    LOG_ERROR("PUT /v1/caps: %s", msg);
    return 500;
}

/* caps_lock within CAPS_LOCK_WAIT_S: a request behind one stuck in the driver is answered
 * 503 instead of holding a server thread (so /metrics and /healthz keep their threads). */
#define CAPS_LOCK_WAIT_S 2
static bool caps_lock_bounded(pfid_agent *a)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += CAPS_LOCK_WAIT_S;
    return pthread_mutex_timedlock(&a->caps_lock, &ts) == 0;
}

void pfid_caps_put(pfid_agent *a, const char *req, size_t len, int *status, char **body)
{
    pfid_caps_request rq;
    char msg[900];
    if (!pfid_caps_request_parse(req, len, &rq, msg, sizeof msg)) {
        reply_error(400, msg, status, body);
        return;
    }
    if (!caps_lock_bounded(a)) {
        reply_error(503, "another cap request is in progress (the GPU driver may be stuck); retry",
                    status, body);
        pfid_caps_request_clear(&rq);
        return;
    }
    if (a->capctl == NULL) {
        snprintf(msg, sizeof msg, "cap control unavailable on this node: %s", a->caps_why);
        reply_error(503, msg, status, body);
        goto out;
    }
    if (rq.lease_s > a->cfg.lease_max_s) {
        snprintf(msg, sizeof msg, "lease_s %.0f s is above this node's lease_max %.0f s",
                 rq.lease_s, a->cfg.lease_max_s);
        reply_error(422, msg, status, body);
        goto out;
    }
    /* fencing: while a lease is live (or held), a write from another controller, or from
     * the same one at an older epoch, is refused; a higher epoch takes the lease over */
    if (rq.controller[0] != '\0' && a->lease.active && a->lease.controller[0] != '\0' &&
        pfid_mono_s() < a->lease.revert_mono &&
        (strcmp(rq.controller, a->lease.controller) != 0 ||
         (isfinite(a->lease.epoch) && isfinite(rq.epoch) && rq.epoch < a->lease.epoch))) {
        snprintf(msg, sizeof msg,
                 "lease held by controller %s epoch %.0f for %.0f s more; %s epoch %.0f refused",
                 a->lease.controller, a->lease.epoch, a->lease.revert_mono - pfid_mono_s(),
                 rq.controller, rq.epoch);
        LOG_WARN("PUT %s: 409: %s", rq.request_id, msg);
        reply_error(409, msg, status, body);
        goto out;
    }
    for (unsigned k = 0; k < PFID_IDEM_SLOTS; k++)
        if (a->idem[k].response != NULL && strcmp(a->idem[k].id, rq.request_id) == 0) {
            *status = 200;
            *body = strdup(a->idem[k].response);
            LOG_DEBUG("PUT %s: duplicate request id, nothing redone", rq.request_id);
            goto out;
        }
    bool which[PFID_MAX_GPUS] = {false};
    double want_w[PFID_MAX_GPUS] = {0};
    int code = resolve(a, &rq, which, want_w, msg, sizeof msg);
    uint32_t target[PFID_MAX_GPUS];
    pfi_cap_result res[PFID_MAX_GPUS];
    if (code == 0)
        code = check_and_apply(a, which, want_w, target, res, msg, sizeof msg);
    if (code == 500) {
        /* rolled back: when every GPU is on its original again, the journal goes too */
        bool all_orig = true;
        for (unsigned k = 0; k < a->n_gpus; k++)
            all_orig = all_orig && a->cur_mw[k] == orig_mw(a, k);
        char m2[768];
        if (all_orig)
            restore_all(a, "failed request rolled back", res, false, m2, sizeof m2);
    }
    if (code != 0) {
        reply_error(code, msg, status, body);
        goto out;
    }
    publish_limits(a, res);
    json_t *gpus = json_array();
    char line[600];
    size_t used = 0;
    line[0] = '\0';
    for (unsigned k = 0; k < a->n_gpus; k++) {
        if (!which[k])
            continue;
        a->cur_mw[k] = target[k];
        json_array_append_new(gpus, gpu_result(a, k, target[k], &res[k]));
        if (used < sizeof line)
            used += (size_t)snprintf(line + used, sizeof line - used, " %u:%.0fW", k,
                                     target[k] / 1000.0);
    }
    double now = pfid_mono_s();
    pthread_mutex_lock(&a->snap_lock);
    a->lease.active = true;
    a->lease.holding = false;
    snprintf(a->lease.request_id, sizeof a->lease.request_id, "%s", rq.request_id);
    snprintf(a->lease.controller, sizeof a->lease.controller, "%s", rq.controller);
    a->lease.epoch = rq.epoch;
    a->lease.expires_mono = now + rq.lease_s;
    a->lease.revert_mono =
        now + rq.lease_s + (a->cfg.lease_policy == PFID_POLICY_HOLD ? a->cfg.hold_max_s : 0);
    pthread_mutex_unlock(&a->snap_lock);
    LOG_INFO("PUT %s: caps%s, lease %.0f s", rq.request_id, line, rq.lease_s);
    held_save(a);
    json_t *o = json_object();
    json_object_set_new(o, "request_id", json_string(rq.request_id));
    json_object_set_new(o, "applied", json_false());
    json_object_set(o, "gpus", gpus);
    char *dup = json_dumps(o, JSON_COMPACT);
    json_object_set_new(o, "applied", json_true());
    *body = json_dumps(o, JSON_COMPACT);
    *status = 200;
    json_decref(o);
    json_decref(gpus);
    unsigned slot = a->idem_next++ % PFID_IDEM_SLOTS;
    free(a->idem[slot].response);
    a->idem[slot].response = dup;
    snprintf(a->idem[slot].id, sizeof a->idem[slot].id, "%s", rq.request_id);
out:
    pthread_mutex_unlock(&a->caps_lock);
    pfid_caps_request_clear(&rq);
}

void pfid_caps_delete(pfid_agent *a, const char *fence, int *status, char **body)
{
    char msg[900];
    char fid[PFID_ID_MAX] = "";
    double fep = NAN;
    if (!caps_lock_bounded(a)) {
        reply_error(503, "another cap request is in progress (the GPU driver may be stuck); retry",
                    status, body);
        return;
    }
    /* fencing: "X-Pfi-Lease: ID EPOCH" from a controller that is not the live lease's holder
     * (or an older epoch of it) is refused; a DELETE without it (an operator) is not fenced */
    if (fence != NULL && sscanf(fence, "%127s %lf", fid, &fep) >= 1 && a->lease.active &&
        a->lease.controller[0] != '\0' && pfid_mono_s() < a->lease.revert_mono &&
        (strcmp(fid, a->lease.controller) != 0 ||
         (isfinite(fep) && isfinite(a->lease.epoch) && fep < a->lease.epoch))) {
        snprintf(msg, sizeof msg,
                 "lease held by controller %s epoch %.0f for %.0f s more; DELETE by %s epoch "
                 "%.0f refused",
                 a->lease.controller, a->lease.epoch, a->lease.revert_mono - pfid_mono_s(), fid,
                 fep);
        LOG_WARN("DELETE /v1/caps: 409: %s", msg);
        reply_error(409, msg, status, body);
        pthread_mutex_unlock(&a->caps_lock);
        return;
    }
    if (a->capctl == NULL) {
        snprintf(msg, sizeof msg, "cap control unavailable on this node: %s", a->caps_why);
        reply_error(503, msg, status, body);
        pthread_mutex_unlock(&a->caps_lock);
        return;
    }
    pfi_cap_result res[PFID_MAX_GPUS];
    pfi_error e = restore_all(a, "DELETE /v1/caps", res, false, msg, sizeof msg);
    if (e != PFI_OK) {
        reply_error(e == PFI_ERR_DEVICE ? 503 : 500, msg, status, body);
        pthread_mutex_unlock(&a->caps_lock);
        return;
    }
    json_t *gpus = json_array();
    for (unsigned k = 0; k < a->n_gpus; k++) {
        pfi_cap_result r = res[k];
        if (!(r.readback & PFI_LIMIT_ENFORCED)) { /* skipped: read what it holds */
            pfi_gpu_limits l;
            if (gpu_lock_wait(a, GPU_LOCK_WAIT_S)) {
                if (pfi_gpu_read_limits(a->gpu, k, &l, NULL) == PFI_OK &&
                    (l.valid & PFI_LIMIT_ENFORCED)) {
                    r.readback |= PFI_LIMIT_ENFORCED;
                    r.enforced_mw = l.enforced_mw;
                }
                pthread_mutex_unlock(&a->gpu_lock);
            }
        }
        json_array_append_new(gpus, gpu_result(a, k, orig_mw(a, k), &r));
    }
    json_t *o = json_object();
    json_object_set_new(o, "gpus", gpus);
    *body = json_dumps(o, JSON_COMPACT);
    *status = 200;
    json_decref(o);
    pthread_mutex_unlock(&a->caps_lock);
}
