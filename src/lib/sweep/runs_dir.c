/*
 * The runs-table sink of a sweep: OUTDIR/runs.csv plus OUTDIR/pfi-dataset.json, so that
 * `pfi analyze OUTDIR` reads a sweep with no flags. The table is rewritten whole after every
 * run (temporary, fsync, rename: pfi/atomic_file.h): a crash leaves the previous complete
 * table, and the rows present are the runs a restarted sweep skips.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/memory.h"
#include "pfi/atomic_file.h"
#include "pfi/csv.h"
#include "pfi/manifest.h"
#include "pfi/sweep.h"
#include "pfi/value.h"

static const char *const header[] = {
    "group",    "cap_w",        "power_w",     "power_se_w",      "throughput", "throughput_se",
    "gpus",     "samples",      "flags",       "requested_cap_w", "mode",       "tput_reports",
    "window_s", "sm_clock_mhz", "dram_active", "tensor_active",   "energy_j",   "started_utc"};
#define N_COLS (sizeof header / sizeof header[0])

static const char manifest_text[] =
    "{\n"
    "  \"pfi_manifest\": 1,\n"
    "  \"description\": \"pfi sweep: one row per run (one power cap), steady-state power summed "
    "over the job's GPUs, throughput in tokens/s\",\n"
    "  \"files\": \"" PFI_RUNS_FILE "\",\n"
    "  \"mapping\": {\n"
    "    \"group\": [\"group\"],\n"
    "    \"cap\": \"cap_w\",\n"
    "    \"power\": \"power_w\",\n"
    "    \"power_se\": \"power_se_w\",\n"
    "    \"throughput\": \"throughput\",\n"
    "    \"throughput_se\": \"throughput_se\",\n"
    "    \"gpus\": \"gpus\"\n"
    "  },\n"
    "  \"noise_rel\": null\n"
    "}\n";

typedef struct row {
    char *line; /* serialised, no newline */
    char *group;
    double requested_w;
} row;

struct pfi_runs_dir {
    char *dir, *path;
    row *rows;
    size_t n, cap;
};

static pfi_error dfail(pfi_diag *diag, pfi_error e, const char *file, long line, const char *msg)
{
    if (diag != NULL) {
        pfi_diag_clear(diag);
        snprintf(diag->file, sizeof diag->file, "%s", file);
        diag->line = line;
        snprintf(diag->message, sizeof diag->message, "%s", msg);
    }
    return e;
}

/* Append s as one CSV field (pfi/csv.h quoting), after a comma unless first, to buf. */
static bool put_field(char **buf, size_t *len, size_t *cap, const char *s, bool comma)
{
    size_t field = pfi_csv_format_field(NULL, 0, s);
    size_t need = field + 2; /* the comma and the NUL */
    if (*len + need >= *cap) {
        size_t nc = (*cap + need) * 2;
        char *p = pfi_realloc(*buf, nc);
        if (p == NULL)
            return false;
        *buf = p;
        *cap = nc;
    }
    if (comma)
        (*buf)[(*len)++] = ',';
    *len += pfi_csv_format_field(*buf + *len, *cap - *len, s);
    return true;
}

static char *join(const char *const *fields, size_t n)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (size_t i = 0; i < n; i++)
        if (!put_field(&buf, &len, &cap, fields[i], i > 0)) {
            pfi_free(buf);
            return NULL;
        }
    return buf;
}

static pfi_error add_row(pfi_runs_dir *d, char *line, const char *group, double req)
{
    if (d->n == d->cap) {
        size_t nc = d->cap ? 2 * d->cap : 16;
        row *p = pfi_realloc(d->rows, nc * sizeof *p);
        if (p == NULL)
            return PFI_ERR_NOMEM;
        d->rows = p;
        d->cap = nc;
    }
    char *g = pfi_strdup(group);
    if (g == NULL)
        return PFI_ERR_NOMEM;
    d->rows[d->n++] = (row){.line = line, .group = g, .requested_w = req};
    return PFI_OK;
}

static pfi_error load_existing(pfi_runs_dir *d, pfi_diag *diag)
{
    if (access(d->path, F_OK) != 0)
        return PFI_OK;
    pfi_csv_reader *r;
    pfi_error e = pfi_csv_open(d->path, NULL, &r, diag);
    if (e != PFI_OK)
        return e;
    const char *const *f;
    const size_t *lens;
    size_t nf;
    long line;
    bool eof;
    e = pfi_csv_next(r, &f, &lens, &nf, &line, &eof, diag);
    if (e == PFI_OK && !eof) {
        bool same = nf == N_COLS;
        for (size_t i = 0; same && i < nf; i++)
            same = strcmp(f[i], header[i]) == 0;
        if (!same)
            e = dfail(diag, PFI_ERR_PARSE, d->path, line,
                      "not a pfi sweep runs table (header differs): choose another output "
                      "directory");
    }
    while (e == PFI_OK && !eof) {
        e = pfi_csv_next(r, &f, &lens, &nf, &line, &eof, diag);
        if (e != PFI_OK || eof)
            break;
        if (nf != N_COLS) {
            e = dfail(diag, PFI_ERR_PARSE, d->path, line, "expected 18 fields");
            break;
        }
        double req;
        if (pfi_value_parse(f[9], lens[9], &req) != PFI_VALUE_OK) {
            e = dfail(diag, PFI_ERR_PARSE, d->path, line, "requested_cap_w is not a number");
            break;
        }
        char *joined = join(f, nf);
        if (joined == NULL || (e = add_row(d, joined, f[0], req)) != PFI_OK) {
            pfi_free(joined);
            e = PFI_ERR_NOMEM;
        }
    }
    pfi_csv_close(r);
    return e;
}

/*
 * Write text1 (when not NULL) and, when d is not NULL, the runs table to path, whole or not
 * at all and synced to disk (pfi_atomic_open_durable). The messages are the runs table's
 * own: the errno's text, naming the temporary when it cannot be created, else path.
 */
static pfi_error write_file(const char *path, const char *text1, const pfi_runs_dir *d,
                            pfi_diag *diag)
{
    pfi_atomic_file a;
    pfi_diag ad;
    pfi_error e = pfi_atomic_open_durable(&a, path, 0666, &ad);
    if (e == PFI_ERR_NOMEM)
        return e;
    if (e != PFI_OK)
        return dfail(diag, PFI_ERR_IO, ad.file, 0, strerror(a.error));
    FILE *f = a.f;
    if (text1 != NULL)
        fputs(text1, f);
    if (d != NULL) {
        char *h = join(header, N_COLS);
        if (h == NULL) {
            pfi_atomic_abort(&a);
            return PFI_ERR_NOMEM;
        }
        fprintf(f, "%s\n", h);
        pfi_free(h);
        for (size_t i = 0; i < d->n; i++)
            fprintf(f, "%s\n", d->rows[i].line);
    }
    if (pfi_atomic_commit(&a, NULL) != PFI_OK)
        return dfail(diag, PFI_ERR_IO, path, 0, strerror(a.error));
    return PFI_OK;
}

void pfi_runs_dir_close(pfi_runs_dir *d)
{
    if (d == NULL)
        return;
    for (size_t i = 0; i < d->n; i++) {
        pfi_free(d->rows[i].line);
        pfi_free(d->rows[i].group);
    }
    pfi_free(d->rows);
    pfi_free(d->dir);
    pfi_free(d->path);
    pfi_free(d);
}

const char *pfi_runs_dir_path(const pfi_runs_dir *d)
{
    return d->path;
}

pfi_error pfi_runs_dir_open(const char *dir, pfi_runs_dir **out, pfi_diag *diag)
{
    *out = NULL;
    pfi_diag_clear(diag);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return dfail(diag, PFI_ERR_IO, dir, 0, strerror(errno));
    pfi_runs_dir *d = pfi_calloc(1, sizeof *d);
    if (d == NULL)
        return PFI_ERR_NOMEM;
    size_t len = strlen(dir) + 64;
    d->dir = pfi_strdup(dir);
    d->path = pfi_malloc(len);
    if (d->dir == NULL || d->path == NULL) {
        pfi_runs_dir_close(d);
        return PFI_ERR_NOMEM;
    }
    snprintf(d->path, len, "%s/%s", dir, PFI_RUNS_FILE);
    pfi_error e = load_existing(d, diag);
    if (e == PFI_OK) {
        char mpath[4096];
        snprintf(mpath, sizeof mpath, "%s/%s", dir, PFI_MANIFEST_NAME);
        if (access(mpath, F_OK) != 0)
            e = write_file(mpath, manifest_text, NULL, diag);
    }
    if (e != PFI_OK) {
        pfi_runs_dir_close(d);
        return e;
    }
    *out = d;
    return PFI_OK;
}

/* v with prec digits ('f': after the point, 'g': significant); "" when missing. */
static void fmt_num(char *buf, size_t len, double v, int prec, char kind)
{
    if (isnan(v) || !isfinite(v))
        buf[0] = '\0';
    else if (kind == 'f')
        snprintf(buf, len, "%.*f", prec, v);
    else
        snprintf(buf, len, "%.*g", prec, v);
}

static pfi_error sink_put(void *ctx, const pfi_sweep_row *r, pfi_diag *diag)
{
    pfi_runs_dir *d = ctx;
    char v[N_COLS][64];
    fmt_num(v[1], 64, r->cap_w, 3, 'f');
    fmt_num(v[2], 64, r->power_w, 4, 'f');
    fmt_num(v[3], 64, r->power_se_w, 5, 'g');
    fmt_num(v[4], 64, r->throughput, 6, 'g');
    fmt_num(v[5], 64, r->throughput_se, 5, 'g');
    snprintf(v[6], 64, "%u", r->gpus);
    snprintf(v[7], 64, "%zu", r->samples);
    fmt_num(v[9], 64, r->requested_cap_w, 3, 'f');
    snprintf(v[11], 64, "%zu", r->tput_reports);
    fmt_num(v[12], 64, r->window_s, 3, 'f');
    fmt_num(v[13], 64, r->sm_clock_mhz, 1, 'f');
    fmt_num(v[14], 64, r->dram_active, 4, 'f');
    fmt_num(v[15], 64, r->tensor_active, 4, 'f');
    fmt_num(v[16], 64, r->energy_j, 1, 'f');
    const char *f[N_COLS];
    for (size_t i = 0; i < N_COLS; i++)
        f[i] = v[i];
    f[0] = r->group;
    f[8] = r->flags ? r->flags : "";
    f[10] = r->mode ? r->mode : "";
    f[17] = r->started_utc ? r->started_utc : "";
    char *line = join(f, N_COLS);
    if (line == NULL)
        return PFI_ERR_NOMEM;
    /* a run measured again (another sink lacked it) replaces its row: one row per cap */
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->rows[i].group, r->group) == 0 &&
            fabs(d->rows[i].requested_w - r->requested_cap_w) < 0.0005) {
            char *old = d->rows[i].line;
            d->rows[i].line = line;
            pfi_error e = write_file(d->path, NULL, d, diag);
            if (e != PFI_OK) { /* not on disk: keep the old row */
                d->rows[i].line = old;
                pfi_free(line);
            } else {
                pfi_free(old);
            }
            return e;
        }
    pfi_error e = add_row(d, line, r->group, r->requested_cap_w);
    if (e != PFI_OK) {
        pfi_free(line);
        return e;
    }
    e = write_file(d->path, NULL, d, diag);
    if (e != PFI_OK) { /* not on disk: not done */
        d->n--;
        pfi_free(d->rows[d->n].line);
        pfi_free(d->rows[d->n].group);
    }
    return e;
}

static bool sink_done(void *ctx, const char *group, double req)
{
    pfi_runs_dir *d = ctx;
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->rows[i].group, group) == 0 && fabs(d->rows[i].requested_w - req) < 0.0005)
            return true;
    return false;
}

pfi_run_sink pfi_runs_dir_sink(pfi_runs_dir *d)
{
    return (pfi_run_sink){.put = sink_put, .done = sink_done, .ctx = d};
}
