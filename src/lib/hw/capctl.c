/*
 * Cap control: range checks, the journal, ordered application with read-back, restore.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/memory.h"
#include "hw/backend.h"
#include "pfi/capctl.h"

/* Copy src into dst[cap] (truncating, always terminated). */
static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

struct pfi_capctl {
    pfi_gpu *g;
    size_t n;
    unsigned *gpus;
    pfi_gpu_limits *orig;
    pfi_gpu_info *info;
    bool *changed;
    char *journal_path;
    char library[512];
    bool journaled;
    char owner[64]; /* recorded in the journal ("" none) */
    /* scratch of apply_targets, allocated with the controller: putting the original limits
     * back must not need memory (it runs on error paths, out-of-memory ones included) */
    uint32_t *target, *present;
    size_t *order;
    bool *known;
    pfi_cap_result *res;
};

pfi_error pfi_cap_resolve_mw(const pfi_gpu_limits *l, double request_w, bool clamp,
                             uint32_t *out_mw, bool *clamped, pfi_diag *diag)
{
    *clamped = false;
    /* a huge finite cap (1e9 W) is above the device's maximum, as 900 W is: the range check
       below says so (and --clamp takes the maximum); no milliwatt count overflows there */
    if (!isfinite(request_w) || !(request_w > 0))
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "power cap %g W is not a positive number",
                       request_w);
    if ((l->valid & (PFI_LIMIT_MIN | PFI_LIMIT_MAX)) != (PFI_LIMIT_MIN | PFI_LIMIT_MAX))
        return hw_fail(diag, PFI_ERR_NOT_SUPPORTED,
                       "the device does not report its power limit range");
    double mw = request_w * 1000.0;
    if (mw < l->min_mw - 0.5 || mw > l->max_mw + 0.5) {
        if (!clamp)
            return hw_fail(diag, PFI_ERR_OUT_OF_RANGE,
                           "power cap %.2f W is outside the device's range %.2f-%.2f W "
                           "(use --clamp to set the nearest valid limit)",
                           request_w, l->min_mw / 1000.0, l->max_mw / 1000.0);
        *out_mw = mw < l->min_mw ? l->min_mw : l->max_mw; /* ceil at min, floor at max */
        *clamped = true;
        return PFI_OK;
    }
    double r = floor(mw + 0.5);
    if (r < l->min_mw)
        r = l->min_mw;
    if (r > l->max_mw)
        r = l->max_mw;
    *out_mw = (uint32_t)r;
    return PFI_OK;
}

pfi_error pfi_cap_split_budget(const pfi_gpu_limits *l, size_t n, uint64_t budget_mw,
                               uint32_t *out_mw, uint64_t *unallocated_mw, pfi_diag *diag)
{
    uint64_t sum_min = 0;
    for (size_t k = 0; k < n; k++) {
        if ((l[k].valid & (PFI_LIMIT_MIN | PFI_LIMIT_MAX)) != (PFI_LIMIT_MIN | PFI_LIMIT_MAX))
            return hw_fail(diag, PFI_ERR_NOT_SUPPORTED, "GPU %zu: no power limit range", k);
        sum_min += l[k].min_mw;
    }
    if (budget_mw < sum_min)
        return hw_fail(diag, PFI_ERR_OUT_OF_RANGE,
                       "budget %.0f W below sum of minimum limits %.0f W", budget_mw / 1000.0,
                       sum_min / 1000.0);
    /* water-filling: raise every unsaturated GPU by the same amount, in integer mW */
    uint64_t left = budget_mw - sum_min;
    uint32_t *cur = out_mw;
    for (size_t k = 0; k < n; k++)
        cur[k] = l[k].min_mw;
    for (;;) {
        size_t open = 0;
        for (size_t k = 0; k < n; k++)
            open += cur[k] < l[k].max_mw;
        if (open == 0 || left == 0)
            break;
        uint64_t share = left / open;
        if (share == 0)
            break; /* fewer mW left than GPUs: keep them, never exceed the budget */
        for (size_t k = 0; k < n; k++) {
            if (cur[k] >= l[k].max_mw)
                continue;
            uint64_t room = l[k].max_mw - cur[k];
            uint64_t give = share < room ? share : room;
            cur[k] += (uint32_t)give;
            left -= give;
        }
    }
    *unallocated_mw = left;
    return PFI_OK;
}

/* ---- controller ---- */

size_t pfi_capctl_count(const pfi_capctl *c)
{
    return c->n;
}

const pfi_gpu_limits *pfi_capctl_original(const pfi_capctl *c, size_t k)
{
    return &c->orig[k];
}

void pfi_capctl_destroy(pfi_capctl *c)
{
    if (c == NULL)
        return;
    pfi_free(c->gpus);
    pfi_free(c->orig);
    pfi_free(c->info);
    pfi_free(c->changed);
    pfi_free(c->journal_path);
    pfi_free(c->target);
    pfi_free(c->present);
    pfi_free(c->order);
    pfi_free(c->known);
    pfi_free(c->res);
    pfi_free(c);
}

pfi_error pfi_capctl_create(pfi_gpu *g, const unsigned *gpus, size_t n, const char *journal_path,
                            const char *library, pfi_capctl **out, pfi_diag *diag)
{
    *out = NULL;
    if (n == 0)
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "no GPU to control");
    if (journal_path != NULL && access(journal_path, F_OK) == 0)
        return hw_fail(diag, PFI_ERR_EXISTS,
                       "%s exists: an earlier run did not restore its power limits; run "
                       "'pfi restore --journal %s' first",
                       journal_path, journal_path);
    pfi_capctl *c = pfi_calloc(1, sizeof *c);
    if (c == NULL)
        return PFI_ERR_NOMEM;
    c->g = g;
    c->n = n;
    c->gpus = pfi_calloc(n, sizeof *c->gpus);
    c->orig = pfi_calloc(n, sizeof *c->orig);
    c->info = pfi_calloc(n, sizeof *c->info);
    c->changed = pfi_calloc(n, sizeof *c->changed);
    c->journal_path = journal_path ? pfi_strdup(journal_path) : NULL;
    c->target = pfi_calloc(n, sizeof *c->target);
    c->present = pfi_calloc(n, sizeof *c->present);
    c->order = pfi_calloc(n, sizeof *c->order);
    c->known = pfi_calloc(n, sizeof *c->known);
    c->res = pfi_calloc(n, sizeof *c->res);
    snprintf(c->library, sizeof c->library, "%s", library ? library : "");
    if (!c->gpus || !c->orig || !c->info || !c->changed || (journal_path && !c->journal_path) ||
        !c->target || !c->present || !c->order || !c->known || !c->res) {
        pfi_capctl_destroy(c);
        return PFI_ERR_NOMEM;
    }
    for (size_t k = 0; k < n; k++) {
        c->gpus[k] = gpus[k];
        pfi_error e = pfi_gpu_get_info(g, gpus[k], &c->info[k], diag);
        if (e == PFI_OK)
            e = pfi_gpu_read_limits(g, gpus[k], &c->orig[k], diag);
        if (e == PFI_OK && !(c->orig[k].valid & PFI_LIMIT_CURRENT))
            e = hw_fail(diag, c->orig[k].err[0] ? c->orig[k].err[0] : PFI_ERR_NOT_SUPPORTED,
                        "GPU %u: cannot read its current power limit (%s): it cannot be "
                        "restored, so it is not changed",
                        gpus[k], pfi_strerror(c->orig[k].err[0]));
        if (e == PFI_OK &&
            (c->orig[k].valid & (PFI_LIMIT_MIN | PFI_LIMIT_MAX)) != (PFI_LIMIT_MIN | PFI_LIMIT_MAX))
            e = hw_fail(diag, PFI_ERR_NOT_SUPPORTED,
                        "GPU %u: the driver does not report its power limit range", gpus[k]);
        if (e != PFI_OK) {
            pfi_capctl_destroy(c);
            return e;
        }
    }
    *out = c;
    return PFI_OK;
}

pfi_error pfi_capctl_adopt(pfi_gpu *g, const unsigned *gpus, size_t n, const char *journal_path,
                           const char *library, const pfi_journal *j, pfi_capctl **out,
                           pfi_diag *diag)
{
    *out = NULL;
    if (journal_path == NULL || j == NULL)
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "adopt: a journal is needed");
    /* create refuses an existing journal; the originals are then taken from it instead */
    char *tmp = NULL;
    pfi_error e = pfi_capctl_create(g, gpus, n, NULL, library, out, diag);
    if (e != PFI_OK)
        return e;
    pfi_capctl *c = *out;
    c->journal_path = tmp = pfi_strdup(journal_path);
    if (tmp == NULL) {
        pfi_capctl_destroy(c);
        *out = NULL;
        return PFI_ERR_NOMEM;
    }
    for (size_t k = 0; k < n; k++) {
        const pfi_journal_entry *en = NULL;
        for (size_t q = 0; q < j->n && en == NULL; q++)
            if (c->info[k].uuid[0] ? strcmp(j->entries[q].uuid, c->info[k].uuid) == 0
                                   : j->entries[q].index == gpus[k])
                en = &j->entries[q];
        if (en == NULL) {
            e = hw_fail(diag, PFI_ERR_INVALID_ARGUMENT,
                        "adopt: GPU %u (%s) is not in the journal %s", gpus[k],
                        c->info[k].uuid[0] ? c->info[k].uuid : "-", journal_path);
            pfi_capctl_destroy(c);
            *out = NULL;
            return e;
        }
        c->changed[k] = c->orig[k].current_mw != en->original_mw;
        c->orig[k].current_mw = en->original_mw;
    }
    c->journaled = true;
    return PFI_OK;
}

void pfi_capctl_set_owner(pfi_capctl *c, const char *owner)
{
    size_t k = 0;
    for (const char *q = owner ? owner : ""; *q && k + 1 < sizeof c->owner; q++)
        if ((unsigned char)*q >= 0x20 && *q != 0x7f)
            c->owner[k++] = *q;
    c->owner[k] = '\0';
}

static pfi_error write_journal(pfi_capctl *c, pfi_diag *diag)
{
    if (c->journaled || c->journal_path == NULL)
        return PFI_OK;
    pfi_journal j = {0};
    snprintf(j.backend, sizeof j.backend, "%s", pfi_gpu_backend_name(c->g));
    snprintf(j.library, sizeof j.library, "%s", c->library);
    j.pid = (long)getpid();
    snprintf(j.owner, sizeof j.owner, "%s", c->owner);
    j.n = c->n;
    j.entries = pfi_calloc(c->n, sizeof *j.entries);
    if (j.entries == NULL)
        return PFI_ERR_NOMEM;
    for (size_t k = 0; k < c->n; k++) {
        j.entries[k].index = c->gpus[k];
        snprintf(j.entries[k].uuid, sizeof j.entries[k].uuid, "%s", c->info[k].uuid);
        j.entries[k].original_mw = c->orig[k].current_mw;
    }
    pfi_error e = pfi_journal_write(c->journal_path, &j, diag);
    pfi_free(j.entries);
    if (e == PFI_OK)
        c->journaled = true;
    return e;
}

/*
 * Set gpu to target and read back. Success: requested == target and enforced <= target.
 */
static pfi_error set_one(pfi_gpu *g, unsigned gpu, uint32_t target, pfi_cap_result *r)
{
    pfi_diag d;
    pfi_diag_clear(&d);
    memset(r, 0, sizeof *r);
    r->gpu = gpu;
    r->target_mw = target;
    pfi_error e = pfi_gpu_set_limit_mw(g, gpu, target, &d);
    pfi_gpu_limits l;
    pfi_diag d2;
    pfi_error e2 = pfi_gpu_read_limits(g, gpu, &l, &d2);
    if (e2 == PFI_OK) {
        r->readback = l.valid & (PFI_LIMIT_CURRENT | PFI_LIMIT_ENFORCED);
        r->requested_mw = l.current_mw;
        r->enforced_mw = l.enforced_mw;
    }
    if (e != PFI_OK) {
        r->error = e;
        copy_str(r->message, sizeof r->message, d.message);
        if (e == PFI_ERR_INVALID_ARGUMENT && e2 == PFI_OK &&
            (l.valid & (PFI_LIMIT_MIN | PFI_LIMIT_MAX)) == (PFI_LIMIT_MIN | PFI_LIMIT_MAX)) {
            /* the range may have changed underneath (case-17 §6): say what it is now; the
             * caller does not retry */
            char tail[96];
            snprintf(tail, sizeof tail, "; the device's range is now %.2f-%.2f W",
                     l.min_mw / 1000.0, l.max_mw / 1000.0);
            size_t used = strlen(r->message);
            copy_str(r->message + used, sizeof r->message - used, tail);
        }
        if (r->readback & PFI_LIMIT_ENFORCED) {
            char tail[64];
            snprintf(tail, sizeof tail, " (enforced limit %.0f W)", r->enforced_mw / 1000.0);
            size_t used = strlen(r->message);
            copy_str(r->message + used, sizeof r->message - used, tail);
        }
        return e;
    }
    r->changed = true;
    if (e2 != PFI_OK) {
        r->error = e2;
        copy_str(r->message, sizeof r->message, d2.message);
        return e2;
    }
    if (!(r->readback & PFI_LIMIT_CURRENT) || !(r->readback & PFI_LIMIT_ENFORCED) ||
        r->requested_mw != target || r->enforced_mw > target) {
        r->error = PFI_ERR_NOT_EFFECTIVE;
        if (!(r->readback & PFI_LIMIT_ENFORCED))
            snprintf(r->message, sizeof r->message,
                     "GPU %u: cap not verifiable: enforced limit unreadable", gpu);
        else if (r->enforced_mw > target)
            snprintf(r->message, sizeof r->message,
                     "GPU %u: cap not effective: enforced %.3g W > requested %.3g W", gpu,
                     r->enforced_mw / 1000.0, target / 1000.0);
        else
            snprintf(r->message, sizeof r->message,
                     "GPU %u: cap not effective: requested limit reads %.3g W, asked %.3g W", gpu,
                     r->requested_mw / 1000.0, target / 1000.0);
        return PFI_ERR_NOT_EFFECTIVE;
    }
    if (r->enforced_mw < target)
        snprintf(r->message, sizeof r->message,
                 "GPU %u: enforced limit %.3g W is below the requested %.3g W (another limiter)",
                 gpu, r->enforced_mw / 1000.0, target / 1000.0);
    return PFI_OK;
}

/* order[n]: indices sorted so that decreases (target below the present limit) come first. */
static void lower_first(const uint32_t *target, const uint32_t *present, size_t n, size_t *order)
{
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (target[k] < present[k])
            order[m++] = k;
    for (size_t k = 0; k < n; k++)
        if (!(target[k] < present[k]))
            order[m++] = k;
}

static pfi_error apply_targets(pfi_capctl *c, const uint32_t *target, const bool *which,
                               bool only_changed, pfi_cap_result *results, pfi_diag *diag,
                               bool stop_on_error)
{
    /* no allocation here: the controller's scratch (see struct pfi_capctl) */
    uint32_t *present = c->present;
    size_t *order = c->order;
    bool *known = c->known;
    pfi_cap_result *res = results ? results : c->res;
    for (size_t k = 0; k < c->n; k++) {
        pfi_gpu_limits l;
        /* unknown (unreadable, lost) counts as "not at the target": it is set, not skipped */
        known[k] = pfi_gpu_read_limits(c->g, c->gpus[k], &l, NULL) == PFI_OK &&
                   (l.valid & PFI_LIMIT_CURRENT);
        present[k] = known[k] ? l.current_mw : target[k];
        memset(&res[k], 0, sizeof res[k]);
        res[k].gpu = c->gpus[k];
        res[k].target_mw = target[k];
    }
    lower_first(target, present, c->n, order);
    pfi_error first = PFI_OK;
    for (size_t i = 0; i < c->n; i++) {
        size_t k = order[i];
        if (which != NULL && !which[k]) {
            res[k].skipped = true;
            continue;
        }
        /* restore: leave a GPU alone that was never changed or already holds its original */
        if (only_changed && (!c->changed[k] || (known[k] && present[k] == target[k]))) {
            res[k].skipped = true;
            continue;
        }
        pfi_error e = set_one(c->g, c->gpus[k], target[k], &res[k]);
        if (res[k].changed)
            c->changed[k] = true;
        if (e != PFI_OK && first == PFI_OK) {
            first = e;
            if (diag != NULL) {
                pfi_diag_clear(diag);
                copy_str(diag->message, sizeof diag->message, res[k].message);
            }
        }
        if (e != PFI_OK && e != PFI_ERR_NOT_EFFECTIVE && stop_on_error)
            break;
    }
    return first;
}

pfi_error pfi_capctl_apply(pfi_capctl *c, const uint32_t *target_mw, pfi_cap_result *results,
                           pfi_diag *diag)
{
    pfi_error e = write_journal(c, diag);
    if (e != PFI_OK)
        return e;
    return apply_targets(c, target_mw, NULL, false, results, diag, true);
}

pfi_error pfi_capctl_apply_subset(pfi_capctl *c, const uint32_t *target_mw, const bool *which,
                                  pfi_cap_result *results, pfi_diag *diag)
{
    pfi_error e = write_journal(c, diag);
    if (e != PFI_OK)
        return e;
    return apply_targets(c, target_mw, which, false, results, diag, true);
}

pfi_error pfi_capctl_restore(pfi_capctl *c, pfi_cap_result *results, pfi_diag *diag)
{
    uint32_t *t = c->target; /* allocated with c: a restore never runs out of memory */
    for (size_t k = 0; k < c->n; k++)
        t[k] = c->orig[k].current_mw;
    pfi_error e = apply_targets(c, t, NULL, true, results, diag, false);
    /* a restore to the original reads back enforced == original unless another limiter
     * holds it lower; that is the original state too */
    if (e == PFI_ERR_NOT_EFFECTIVE) {
        e = PFI_OK;
    }
    if (e == PFI_OK) {
        for (size_t k = 0; k < c->n; k++)
            c->changed[k] = false;
        if (c->journal_path != NULL && c->journaled) {
            if (unlink(c->journal_path) != 0 && errno != ENOENT)
                return hw_fail(diag, PFI_ERR_IO, "%s: cannot remove: %s", c->journal_path,
                               strerror(errno));
            c->journaled = false;
        }
    }
    return e;
}

pfi_error pfi_journal_restore(pfi_gpu *g, const pfi_journal *j, pfi_cap_result *results,
                              pfi_diag *diag)
{
    unsigned count = 0;
    pfi_error e = pfi_gpu_count(g, &count, diag);
    if (e != PFI_OK)
        return e;
    pfi_error first = PFI_OK;
    for (size_t k = 0; k < j->n; k++) {
        const pfi_journal_entry *en = &j->entries[k];
        pfi_cap_result *r = &results[k];
        memset(r, 0, sizeof *r);
        r->target_mw = en->original_mw;
        /* find the GPU: by UUID when journaled with one, else by index */
        unsigned gpu = count;
        if (en->uuid[0] != '\0') {
            for (unsigned i = 0; i < count && gpu == count; i++) {
                pfi_gpu_info info;
                if (pfi_gpu_get_info(g, i, &info, NULL) == PFI_OK &&
                    strcmp(info.uuid, en->uuid) == 0)
                    gpu = i;
            }
        } else if (en->index < count) {
            gpu = en->index;
        }
        r->gpu = gpu < count ? gpu : en->index;
        if (gpu == count) {
            r->error = PFI_ERR_GPU_LOST;
            snprintf(r->message, sizeof r->message, "GPU %s (index %u when journaled) not found",
                     en->uuid[0] ? en->uuid : "-", en->index);
        } else {
            pfi_gpu_limits l;
            pfi_diag d;
            e = pfi_gpu_read_limits(g, gpu, &l, &d);
            if (e == PFI_OK && (l.valid & PFI_LIMIT_CURRENT) && l.current_mw == en->original_mw) {
                r->skipped = true;
                r->requested_mw = l.current_mw;
                r->enforced_mw = l.enforced_mw;
                r->readback = l.valid & (PFI_LIMIT_CURRENT | PFI_LIMIT_ENFORCED);
            } else if (e != PFI_OK) {
                r->error = e;
                copy_str(r->message, sizeof r->message, d.message);
            } else {
                e = set_one(g, gpu, en->original_mw, r);
                if (e == PFI_ERR_NOT_EFFECTIVE && r->requested_mw == en->original_mw)
                    r->error = e = PFI_OK; /* enforced held lower by another limiter */
            }
        }
        if (r->error != PFI_OK && first == PFI_OK) {
            first = r->error;
            if (diag != NULL) {
                pfi_diag_clear(diag);
                copy_str(diag->message, sizeof diag->message, r->message);
            }
        }
    }
    return first;
}
