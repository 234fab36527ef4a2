/*
 * The static GPU→job mapping file and the Slurm environment scan.
 */
#include "mapping.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pfi_error fail(pfi_diag *diag, long line, pfi_error e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static pfi_error fail(pfi_diag *diag, long line, pfi_error e, const char *fmt, ...)
{
    if (diag != NULL) {
        diag->line = line;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(diag->message, sizeof diag->message, fmt, ap);
        va_end(ap);
    }
    return e;
}

void pfid_mapping_clear(pfid_mapping *m)
{
    if (m == NULL)
        return;
    free(m->e);
    m->e = NULL;
    m->n = 0;
}

static bool valid_uuid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= 96)
        return false;
    for (size_t k = 0; k < n; k++)
        if (!(isalnum((unsigned char)s[k]) || s[k] == '-' || s[k] == '_' || s[k] == '.' ||
              s[k] == ':') ||
            (unsigned char)s[k] >= 0x80)
            return false;
    return true;
}

pfi_error pfid_mapping_parse(const char *text, size_t len, pfid_mapping *out, pfi_diag *diag)
{
    memset(out, 0, sizeof *out);
    if (len > PFID_MAPPING_MAX_BYTES)
        return fail(diag, 0, PFI_ERR_LIMIT, "mapping larger than %d bytes", PFID_MAPPING_MAX_BYTES);
    size_t cap = 0, pos = 0;
    long lineno = 0;
    pfi_error e = PFI_OK;
    while (pos < len && e == PFI_OK) {
        lineno++;
        const char *start = text + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - start) : len - pos;
        pos += n + (nl ? 1 : 0);
        char line[1024];
        if (n >= sizeof line) {
            e = fail(diag, lineno, PFI_ERR_PARSE, "line longer than %zu bytes", sizeof line - 1);
            break;
        }
        if (memchr(start, '\0', n) != NULL) {
            e = fail(diag, lineno, PFI_ERR_PARSE, "NUL byte in line");
            break;
        }
        memcpy(line, start, n);
        line[n] = '\0';
        char *save = NULL, *f[4] = {0};
        int nf = 0;
        for (char *t = strtok_r(line, " \t\r", &save); t != NULL;
             t = strtok_r(NULL, " \t\r", &save)) {
            if (nf == 0 && t[0] == '#')
                break;
            if (nf == 4)
                break;
            f[nf++] = t;
        }
        if (nf == 0)
            continue;
        if (nf < 2 || nf > 3) {
            e = fail(diag, lineno, PFI_ERR_PARSE, "want 'GPU JOB [CLASS]', got %d field(s)", nf);
            break;
        }
        pfid_mapping_entry en;
        memset(&en, 0, sizeof en);
        en.index = -1;
        if (isdigit((unsigned char)f[0][0])) {
            char *end;
            errno = 0;
            long ix = strtol(f[0], &end, 10);
            if (*end != '\0' || errno != 0 || ix < 0 || ix > 65535) {
                e = fail(diag, lineno, PFI_ERR_PARSE, "GPU '%.64s' is not an index or a UUID",
                         f[0]);
                break;
            }
            en.index = ix;
        } else if (valid_uuid(f[0])) {
            snprintf(en.gpu, sizeof en.gpu, "%s", f[0]);
        } else {
            e = fail(diag, lineno, PFI_ERR_PARSE, "GPU '%.64s' is not an index or a UUID", f[0]);
            break;
        }
        if (!pfid_valid_id(f[1]) || (nf == 3 && !pfid_valid_id(f[2]))) {
            e = fail(diag, lineno, PFI_ERR_PARSE,
                     "job and class must be 1-127 characters of [A-Za-z0-9._:@+=-]");
            break;
        }
        snprintf(en.job, sizeof en.job, "%s", f[1]);
        if (nf == 3)
            snprintf(en.cls, sizeof en.cls, "%s", f[2]);
        for (size_t k = 0; k < out->n; k++)
            if ((en.index >= 0 && out->e[k].index == en.index) ||
                (en.index < 0 && strcmp(out->e[k].gpu, en.gpu) == 0)) {
                e = fail(diag, lineno, PFI_ERR_PARSE, "GPU '%.64s' mapped twice", f[0]);
                break;
            }
        if (e != PFI_OK)
            break;
        if (out->n == PFID_MAPPING_MAX) {
            e = fail(diag, lineno, PFI_ERR_LIMIT, "more than %d GPUs", PFID_MAPPING_MAX);
            break;
        }
        if (out->n == cap) {
            size_t nc = cap ? 2 * cap : 16;
            pfid_mapping_entry *ne = realloc(out->e, nc * sizeof *ne);
            if (ne == NULL) {
                e = PFI_ERR_NOMEM;
                break;
            }
            out->e = ne;
            cap = nc;
        }
        out->e[out->n++] = en;
    }
    if (e != PFI_OK)
        pfid_mapping_clear(out);
    return e;
}

pfi_error pfid_mapping_load(const char *path, pfid_mapping *out, pfi_diag *diag)
{
    memset(out, 0, sizeof *out);
    if (diag != NULL) {
        pfi_diag_clear(diag);
        snprintf(diag->file, sizeof diag->file, "%s", path);
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return fail(diag, 0, PFI_ERR_IO, "cannot open: %s", strerror(errno));
    char *buf = malloc(PFID_MAPPING_MAX_BYTES + 1);
    if (buf == NULL) {
        fclose(f);
        return PFI_ERR_NOMEM;
    }
    errno = 0;
    size_t n = fread(buf, 1, PFID_MAPPING_MAX_BYTES + 1, f);
    int err = ferror(f) != 0 ? (errno != 0 ? errno : EIO) : 0;
    fclose(f);
    pfi_error e = err != 0 ? fail(diag, 0, PFI_ERR_IO, "cannot read: %s",
                                  err == EISDIR ? "is a directory" : strerror(err))
                           : pfid_mapping_parse(buf, n, out, diag);
    free(buf);
    return e;
}

const pfid_mapping_entry *pfid_mapping_find(const pfid_mapping *m, const char *uuid, unsigned index)
{
    for (size_t k = 0; k < m->n; k++)
        if (m->e[k].index < 0 && uuid[0] != '\0' && strcmp(m->e[k].gpu, uuid) == 0)
            return &m->e[k];
    for (size_t k = 0; k < m->n; k++)
        if (m->e[k].index >= 0 && (unsigned long)m->e[k].index == index)
            return &m->e[k];
    return NULL;
}

bool pfid_environ_job(const char *env, size_t len, char *out)
{
    static const char *const names[] = {"SLURM_JOB_ID=", "SLURM_JOBID="};
    for (int k = 0; k < 2; k++) {
        size_t kl = strlen(names[k]);
        size_t pos = 0;
        while (pos < len) {
            const char *s = env + pos;
            const char *z = memchr(s, '\0', len - pos);
            size_t n = z ? (size_t)(z - s) : len - pos;
            if (n > kl && n - kl < PFID_ID_MAX && memcmp(s, names[k], kl) == 0) {
                char id[PFID_ID_MAX];
                memcpy(id, s + kl, n - kl);
                id[n - kl] = '\0';
                if (pfid_valid_id(id)) {
                    memcpy(out, id, n - kl + 1);
                    return true;
                }
            }
            pos += n + 1;
        }
    }
    return false;
}
