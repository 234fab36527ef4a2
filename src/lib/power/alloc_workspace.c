/*
 * The allocator's workspace (pfi_alloc_workspace, power/alloc_internal.h): creation,
 * destruction and growth. It grows to the largest instance and is then reused, so that a
 * caller allocating repeatedly allocates nothing.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/memory.h"
#include "pfi/allocate.h"
#include "power/alloc_internal.h"

pfi_error pfi_alloc_workspace_create(pfi_alloc_workspace **out)
{
    *out = pfi_calloc(1, sizeof **out);
    return *out == NULL ? PFI_ERR_NOMEM : PFI_OK;
}

void pfi_alloc_workspace_destroy(pfi_alloc_workspace *w)
{
    if (w == NULL)
        return;
    void *p[] = {w->kind, w->c0,    w->ec0,     w->eo,   w->eeo,  w->nc,  w->ne, w->nee,
                 w->pick, w->share, w->maxshed, w->shed, w->flag, w->cc,  w->cd, w->ct,
                 w->ed,   w->et,    w->cs,      w->env,  w->eenv, w->bs,  w->bw, w->idx,
                 w->y,    w->list,  w->at,      w->lval, w->lmv,  w->lseg};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        pfi_free(p[i]);
    pfi_free(w);
}

static bool regrow(void *pp, size_t n, size_t size)
{
    void **p = pp;
    void *q = pfi_realloc(*p, (n > 0 ? n : 1) * size);
    if (q == NULL)
        return false;
    *p = q;
    return true;
}

/* New capacity for need elements above cap: at least double. */
static size_t next_cap(size_t cap, size_t need)
{
    size_t n = cap < 64 ? 64 : 2 * cap;
    return n < need ? need : n;
}

bool alloc_ws_jobs(pfi_alloc_workspace *w, size_t n)
{
    if (n <= w->cap_jobs)
        return true;
    bool ok = regrow(&w->kind, n, 1) && regrow(&w->c0, n, sizeof(size_t)) &&
              regrow(&w->ec0, n, sizeof(size_t)) && regrow(&w->eo, n, sizeof(size_t)) &&
              regrow(&w->eeo, n, sizeof(size_t)) && regrow(&w->nc, n, sizeof(uint32_t)) &&
              regrow(&w->ne, n, sizeof(uint32_t)) && regrow(&w->nee, n, sizeof(uint32_t)) &&
              regrow(&w->pick, n, sizeof(double)) && regrow(&w->share, n, sizeof(double)) &&
              regrow(&w->maxshed, n, sizeof(double)) && regrow(&w->shed, n, sizeof(double)) &&
              regrow(&w->flag, n, 1) && regrow(&w->list, n, sizeof(size_t)) &&
              regrow(&w->at, n, sizeof(uint32_t)) && regrow(&w->lval, n, sizeof(double)) &&
              regrow(&w->lmv, n, sizeof(size_t)) && regrow(&w->lseg, n, sizeof(uint32_t));
    if (ok)
        w->cap_jobs = n;
    return ok;
}

bool alloc_ws_cand_grow(pfi_alloc_workspace *w, size_t more)
{
    size_t need = w->n_c + more;
    if (need <= w->cap_c)
        return true;
    size_t n = next_cap(w->cap_c, need);
    if (!(regrow(&w->cc, n, sizeof(double)) && regrow(&w->cd, n, sizeof(double)) &&
          regrow(&w->ct, n, sizeof(double)) && regrow(&w->cs, n, sizeof(double))))
        return false;
    w->cap_c = n;
    return true;
}

bool alloc_ws_est_grow(pfi_alloc_workspace *w, size_t more)
{
    size_t need = w->n_e + more;
    if (need <= w->cap_e)
        return true;
    size_t n = next_cap(w->cap_e, need);
    if (!(regrow(&w->ed, n, sizeof(double)) && regrow(&w->et, n, sizeof(double))))
        return false;
    w->cap_e = n;
    return true;
}

bool alloc_ws_env_grow(uint32_t **env, size_t *cap, size_t used, size_t more)
{
    if (used + more <= *cap)
        return true;
    size_t n = next_cap(*cap, used + more);
    if (!regrow(env, n, sizeof(uint32_t)))
        return false;
    *cap = n;
    return true;
}

bool alloc_ws_buf_grow(pfi_alloc_workspace *w, size_t more)
{
    size_t need = w->n_b + more;
    if (need <= w->cap_b)
        return true;
    size_t n = next_cap(w->cap_b, need);
    if (!(regrow(&w->bs, n, sizeof(double)) && regrow(&w->bw, n, sizeof(double))))
        return false;
    w->cap_b = n;
    return true;
}

bool alloc_ws_scratch_grow(pfi_alloc_workspace *w, size_t m)
{
    if (m <= w->cap_s)
        return true;
    size_t n = next_cap(w->cap_s, m);
    if (!(regrow(&w->idx, n, sizeof(size_t)) && regrow(&w->y, n, sizeof(double))))
        return false;
    w->cap_s = n;
    return true;
}
