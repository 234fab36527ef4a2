/*
 * The replay backend: a recorded telemetry CSV played back on a virtual clock that starts
 * at the first record. A sample of GPU i at time t is the latest record of GPU i at or
 * before t (before its first record every field is missing). Read-only.
 */
#include "hw/replay.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "pfi/csv.h"
#include "pfi/value.h"

enum {
    C_T,
    C_GPU,
    C_POWER,
    C_SM,
    C_MEM,
    C_GUTIL,
    C_MUTIL,
    C_TEMP,
    C_DRAM,
    C_TENSOR,
    C_ENERGY,
    C_LIMIT,
    C_N
};
static const char *const col_names[C_N] = {
    "t_s",      "gpu",    "power_w",     "sm_clock_mhz",  "mem_clock_mhz", "gpu_util",
    "mem_util", "temp_c", "dram_active", "tensor_active", "energy_j",      "enforced_limit_w"};
static const unsigned col_flag[C_N] = {0,
                                       0,
                                       PFI_SAMPLE_POWER,
                                       PFI_SAMPLE_SM_CLOCK,
                                       PFI_SAMPLE_MEM_CLOCK,
                                       PFI_SAMPLE_GPU_UTIL,
                                       PFI_SAMPLE_MEM_UTIL,
                                       PFI_SAMPLE_TEMP,
                                       PFI_SAMPLE_DRAM_ACTIVE,
                                       PFI_SAMPLE_TENSOR_ACTIVE,
                                       PFI_SAMPLE_ENERGY,
                                       0};

typedef struct rec {
    double t_s;
    unsigned gpu;
    double v[C_N];
} rec;

typedef struct replay_ctx {
    rec *r;
    size_t n, cap;
    unsigned n_gpus;
    bool has_col[C_N];
    double now_s;
    size_t *scan; /* per GPU: index of the next record to look at */
    size_t *best; /* per GPU: 1 + index of its latest record at or before now; 0 none */
} replay_ctx;

static void replay_close(void *vctx)
{
    replay_ctx *c = vctx;
    if (c == NULL)
        return;
    pfi_free(c->r);
    pfi_free(c->scan);
    pfi_free(c->best);
    pfi_free(c);
}

static pfi_error replay_count(void *vctx, unsigned *n, pfi_diag *diag)
{
    (void)diag;
    *n = ((replay_ctx *)vctx)->n_gpus;
    return PFI_OK;
}

static pfi_error replay_info(void *vctx, unsigned i, pfi_gpu_info *out, pfi_diag *diag)
{
    replay_ctx *c = vctx;
    if (i >= c->n_gpus)
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "GPU %u: not in the replay file", i);
    snprintf(out->name, sizeof out->name, "Replayed GPU %u", i);
    return PFI_OK;
}

/* The latest record of GPU i at or before now, or NULL. Records are sorted by time. */
static const rec *latest(replay_ctx *c, unsigned i)
{
    const rec *best = NULL;
    for (size_t k = 0; k < c->n && c->r[k].t_s <= c->now_s; k++)
        if (c->r[k].gpu == i)
            best = &c->r[k];
    return best;
}

static pfi_error replay_sample(void *vctx, unsigned i, pfi_gpu_sample *out, pfi_diag *diag)
{
    replay_ctx *c = vctx;
    if (i >= c->n_gpus)
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "GPU %u: not in the replay file", i);
    /* scan[i]: the next record to examine; best[i]: GPU i's latest record so far */
    size_t k = c->scan[i];
    while (k < c->n && c->r[k].t_s <= c->now_s) {
        if (c->r[k].gpu == i)
            c->best[i] = k + 1;
        k++;
    }
    c->scan[i] = k;
    const rec *best = c->best[i] ? &c->r[c->best[i] - 1] : NULL;
    if (best == NULL)
        return PFI_OK;
    double *dst[C_N] = {NULL,
                        NULL,
                        &out->power_w,
                        &out->sm_clock_mhz,
                        &out->mem_clock_mhz,
                        &out->gpu_util,
                        &out->mem_util,
                        &out->temp_c,
                        &out->dram_active,
                        &out->tensor_active,
                        &out->energy_j,
                        NULL};
    for (int col = C_POWER; col < C_N; col++)
        if (dst[col] != NULL && c->has_col[col] && !isnan(best->v[col])) {
            *dst[col] = best->v[col];
            out->valid |= col_flag[col];
        }
    return PFI_OK;
}

static pfi_error replay_limits(void *vctx, unsigned i, pfi_gpu_limits *out, pfi_diag *diag)
{
    replay_ctx *c = vctx;
    if (i >= c->n_gpus)
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "GPU %u: not in the replay file", i);
    for (int k = 0; k < 5; k++)
        out->err[k] = PFI_ERR_NOT_SUPPORTED;
    const rec *r = latest(c, i);
    if (r != NULL && c->has_col[C_LIMIT] && !isnan(r->v[C_LIMIT])) {
        out->enforced_mw = (uint32_t)llround(r->v[C_LIMIT] * 1000);
        out->valid |= PFI_LIMIT_ENFORCED;
        out->err[1] = PFI_OK;
    }
    return PFI_OK;
}

static pfi_error replay_set(void *vctx, unsigned i, uint32_t mw, pfi_diag *diag)
{
    (void)vctx;
    return hw_fail(diag, PFI_ERR_NOT_SUPPORTED, "GPU %u: replay is read-only (asked %u mW)", i,
                   (unsigned)mw);
}

static double replay_now(void *vctx)
{
    return ((replay_ctx *)vctx)->now_s;
}

static pfi_error replay_sleep(void *vctx, double t)
{
    replay_ctx *c = vctx;
    if (t > c->now_s)
        c->now_s = t;
    return PFI_OK;
}

static const pfi_gpu_ops replay_ops = {
    .close = replay_close,
    .count = replay_count,
    .info = replay_info,
    .sample = replay_sample,
    .limits = replay_limits,
    .set_limit_mw = replay_set,
    .now_s = replay_now,
    .sleep_until_s = replay_sleep,
};

static int cmp_rec(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    if (x->t_s != y->t_s)
        return x->t_s < y->t_s ? -1 : 1;
    return x->gpu < y->gpu ? -1 : x->gpu > y->gpu;
}

static pfi_error read_all(pfi_csv_reader *rd, const char *name, replay_ctx *c, pfi_diag *diag)
{
    const char *const *f;
    const size_t *lens;
    size_t nf;
    long line;
    bool eof;
    pfi_error e = pfi_csv_next(rd, &f, &lens, &nf, &line, &eof, diag);
    if (e != PFI_OK)
        return e;
    if (eof)
        return hw_fail(diag, PFI_ERR_EMPTY, "%s: empty replay file", name);
    size_t idx[C_N];
    size_t n_header = nf; /* every record has as many fields */
    long header_line = line;
    for (int k = 0; k < C_N; k++) {
        c->has_col[k] = false;
        for (size_t j = 0; j < nf; j++)
            if (strcmp(f[j], col_names[k]) == 0) {
                /* a name twice: which one is meant is ambiguous (the first won silently) */
                if (c->has_col[k]) {
                    pfi_diag_set(diag, name, header_line, col_names[k],
                                 "column name appears twice in the header");
                    return PFI_ERR_PARSE;
                }
                idx[k] = j;
                c->has_col[k] = true;
            }
    }
    for (int k = C_T; k <= C_GPU; k++)
        if (!c->has_col[k]) {
            pfi_error r =
                hw_fail(diag, PFI_ERR_MISSING_COLUMN, "replay file needs columns t_s and gpu");
            if (diag) {
                snprintf(diag->file, sizeof diag->file, "%s", name);
                snprintf(diag->column, sizeof diag->column, "%s", col_names[k]);
            }
            return r;
        }
    for (;;) {
        e = pfi_csv_next(rd, &f, &lens, &nf, &line, &eof, diag);
        if (e != PFI_OK)
            return e;
        if (eof)
            break;
        /* a ragged record is refused: its cells would be read under other columns */
        if (nf != n_header) {
            pfi_diag_set(diag, name, line, NULL, "expected %zu fields as in the header, found %zu",
                         n_header, nf);
            return PFI_ERR_PARSE;
        }
        if (c->n == c->cap) {
            if (c->n >= HW_REPLAY_MAX_RECORDS)
                return hw_fail(diag, PFI_ERR_LIMIT, "%s: more than %d records", name,
                               HW_REPLAY_MAX_RECORDS);
            size_t nc = c->cap ? 2 * c->cap : 256;
            rec *p = pfi_realloc(c->r, nc * sizeof *p);
            if (p == NULL)
                return PFI_ERR_NOMEM;
            c->r = p;
            c->cap = nc;
        }
        rec *r = &c->r[c->n];
        for (int k = 0; k < C_N; k++) {
            r->v[k] = NAN;
            if (!c->has_col[k])
                continue;
            bool required = k == C_T || k == C_GPU;
            double v;
            pfi_value_status st = pfi_value_parse(f[idx[k]], lens[idx[k]], &v);
            if (st == PFI_VALUE_INVALID || (st == PFI_VALUE_MISSING && required) ||
                (st == PFI_VALUE_OK && v < 0) ||
                (k == C_T && st == PFI_VALUE_OK && !(v < 253402300800.0)) ||
                (k == C_GPU && st == PFI_VALUE_OK && (v != floor(v) || v >= HW_REPLAY_MAX_GPUS))) {
                char q[96];
                pfi_escape(q, sizeof q, idx[k] < nf ? f[idx[k]] : "",
                           idx[k] < nf ? lens[idx[k]] : 0, 40);
                /* a time that is none (a word, NaN, negative, infinite) is never replayed at */
                pfi_error r2 =
                    k == C_T ? hw_fail(diag, PFI_ERR_VALUE,
                                       "'%s' is not a valid time (seconds from the recording's "
                                       "start, a number 0 to 253402300799)",
                                       q)
                             : hw_fail(diag, PFI_ERR_VALUE, "expected a non-negative number%s",
                                       k == C_GPU ? " (GPU index below 1024)" : "");
                if (diag) {
                    snprintf(diag->file, sizeof diag->file, "%s", name);
                    diag->line = line;
                    snprintf(diag->column, sizeof diag->column, "%s", col_names[k]);
                }
                return r2;
            }
            r->v[k] = v;
        }
        r->t_s = r->v[C_T];
        r->gpu = (unsigned)r->v[C_GPU];
        if (r->gpu + 1 > c->n_gpus)
            c->n_gpus = r->gpu + 1;
        c->n++;
    }
    if (c->n == 0)
        return hw_fail(diag, PFI_ERR_EMPTY, "%s: no records", name);
    qsort(c->r, c->n, sizeof *c->r, cmp_rec);
    c->now_s = c->r[0].t_s;
    c->scan = pfi_calloc(c->n_gpus, sizeof *c->scan);
    c->best = pfi_calloc(c->n_gpus, sizeof *c->best);
    return c->scan && c->best ? PFI_OK : PFI_ERR_NOMEM;
}

pfi_error hw_replay_open_stream(FILE *stream, const char *name, const pfi_gpu_ops **ops, void **out,
                                pfi_diag *diag)
{
    replay_ctx *c = pfi_calloc(1, sizeof *c);
    if (c == NULL)
        return PFI_ERR_NOMEM;
    pfi_csv_reader *rd;
    pfi_error e = pfi_csv_open_stream(stream, name, &rd, diag);
    if (e == PFI_OK) {
        e = read_all(rd, name, c, diag);
        pfi_csv_close(rd);
    }
    if (e != PFI_OK) {
        replay_close(c);
        return e;
    }
    *ops = &replay_ops;
    *out = c;
    return PFI_OK;
}

/* Open: read the whole file named by cfg->replay_path. */
static pfi_error replay_open(const pfi_gpu_config *cfg, const pfi_gpu_ops **ops, void **out,
                             pfi_diag *diag)
{
    if (cfg->replay_path == NULL)
        return hw_fail(diag, PFI_ERR_INVALID_ARGUMENT, "replay: no file given");
    FILE *f = fopen(cfg->replay_path, "r");
    if (f == NULL)
        return hw_fail(diag, PFI_ERR_IO, "%s: cannot open replay file: %s", cfg->replay_path,
                       strerror(errno));
    pfi_error e = hw_replay_open_stream(f, cfg->replay_path, ops, out, diag);
    fclose(f);
    return e;
}

/* Read-only, on a virtual clock, from a file. */
const hw_backend hw_replay_backend = {
    .kind = PFI_GPU_REPLAY,
    .name = "replay",
    .caps = PFI_GPU_CAP_VIRTUAL_CLOCK | PFI_GPU_CAP_REPLAY_FILE,
    .open = replay_open,
};
