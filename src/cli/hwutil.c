/*
 * Option parsing and backend opening shared by the GPU verbs.
 */
#include "hwutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/value.h"

bool hw_parse_duration(const char *s, double *out_s)
{
    if (s == NULL || *s == '\0')
        return false;
    size_t len = strlen(s);
    double unit = 1.0;
    size_t num = len;
    if (len > 2 && strcmp(s + len - 2, "ms") == 0) {
        unit = 1e-3;
        num = len - 2;
    } else if (s[len - 1] == 's') {
        num = len - 1;
    } else if (s[len - 1] == 'm') {
        unit = 60;
        num = len - 1;
    } else if (s[len - 1] == 'h') {
        unit = 3600;
        num = len - 1;
    }
    double v;
    if (num == 0 || pfi_value_parse(s, num, &v) != PFI_VALUE_OK || v < 0 || v > 1e7)
        return false;
    *out_s = v * unit;
    return true;
}

bool hw_parse_list(const char *s, double *out, size_t max, size_t *n)
{
    *n = 0;
    if (s == NULL || *s == '\0')
        return false;
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        double v;
        if (*n == max || pfi_value_parse(p, len, &v) != PFI_VALUE_OK)
            return false;
        out[(*n)++] = v;
        if (comma == NULL)
            return true;
        p = comma + 1;
    }
}

static bool parse_uint(const char *p, size_t len, unsigned long *out)
{
    char buf[16];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, p, len);
    buf[len] = '\0';
    for (size_t i = 0; i < len; i++)
        if (buf[i] < '0' || buf[i] > '9')
            return false;
    errno = 0;
    *out = strtoul(buf, NULL, 10);
    return errno == 0 && *out < 100000;
}

bool hw_parse_gpus(const char *s, unsigned *out, size_t max, size_t *n)
{
    *n = 0;
    if (s == NULL || *s == '\0')
        return false;
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *dash = memchr(p, '-', len);
        unsigned long a, b;
        if (dash != NULL) {
            if (!parse_uint(p, (size_t)(dash - p), &a) ||
                !parse_uint(dash + 1, len - (size_t)(dash - p) - 1, &b) || b < a)
                return false;
        } else {
            if (!parse_uint(p, len, &a))
                return false;
            b = a;
        }
        for (unsigned long g = a; g <= b; g++) {
            for (size_t k = 0; k < *n; k++)
                if (out[k] == g)
                    return false;
            if (*n == max)
                return false;
            out[(*n)++] = (unsigned)g;
        }
        if (comma == NULL)
            return true;
        p = comma + 1;
    }
}

const char *hw_gpu_library(pfi_gpu_kind kind, const char *option)
{
    if (option != NULL && *option != '\0')
        return option;
    const char *env = pfi_gpu_library_env(kind);
    const char *v = env != NULL ? getenv(env) : NULL;
    return v != NULL && *v != '\0' ? v : NULL;
}

pfi_error hw_gpu_open(const pfi_gpu_config *c, pfi_gpu **out, pfi_diag *diag)
{
    pfi_gpu_config open = *c;
    open.library = hw_gpu_library(c->kind, c->library);
    pfi_error e = pfi_gpu_open(&open, out, diag);
    if (e != PFI_OK && diag != NULL && diag->file[0] != '\0') {
        char full[sizeof diag->message];
        pfi_diag_format(diag, full, sizeof full);
        snprintf(diag->message, sizeof diag->message, "%s", full);
        diag->file[0] = diag->column[0] = '\0';
        diag->line = 0;
    }
    return e;
}

int hw_exit_code(pfi_error e)
{
    switch (e) {
    case PFI_ERR_NO_PERMISSION:
    case PFI_ERR_NOT_SUPPORTED:
    case PFI_ERR_GPU_LOST:
    case PFI_ERR_DEVICE:
    case PFI_ERR_UNAVAILABLE:
    case PFI_ERR_NOT_EFFECTIVE:
    case PFI_ERR_EXISTS:
        return PFI_EXIT_DEVICE;
    case PFI_ERR_OUT_OF_RANGE:
        return PFI_EXIT_USAGE;
    default:
        return cli_exit_code(e);
    }
}

const char *hw_format_duration(double s, char *buf, size_t len)
{
    if (!(s >= 0) || !isfinite(s))
        s = 0;
    long t = (long)llround(s);
    if (t >= 3600)
        snprintf(buf, len, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60)
        snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, len, "%lds", t);
    return buf;
}

static void cell(FILE *f, bool valid, double v, int prec)
{
    if (valid)
        fprintf(f, ",%.*f", prec, v);
    else
        fputc(',', f);
}

void hw_record_header(FILE *f)
{
    fputs("t_s,gpu,power_w,energy_j,sm_clock_mhz,mem_clock_mhz,gpu_util,mem_util,temp_c,"
          "dram_active,tensor_active,enforced_limit_w,clock_event_reasons\n",
          f);
}

void hw_record_row(FILE *f, double t_s, unsigned gpu, const pfi_gpu_sample *s, bool limit_valid,
                   double limit_w)
{
    fprintf(f, "%.3f,%u", t_s, gpu);
    cell(f, s->valid & PFI_SAMPLE_POWER, s->power_w, 3);
    cell(f, s->valid & PFI_SAMPLE_ENERGY, s->energy_j, 3);
    cell(f, s->valid & PFI_SAMPLE_SM_CLOCK, s->sm_clock_mhz, 0);
    cell(f, s->valid & PFI_SAMPLE_MEM_CLOCK, s->mem_clock_mhz, 0);
    cell(f, s->valid & PFI_SAMPLE_GPU_UTIL, s->gpu_util, 3);
    cell(f, s->valid & PFI_SAMPLE_MEM_UTIL, s->mem_util, 3);
    cell(f, s->valid & PFI_SAMPLE_TEMP, s->temp_c, 0);
    cell(f, s->valid & PFI_SAMPLE_DRAM_ACTIVE, s->dram_active, 4);
    cell(f, s->valid & PFI_SAMPLE_TENSOR_ACTIVE, s->tensor_active, 4);
    cell(f, limit_valid, limit_w, 3);
    cell(f, s->valid & PFI_SAMPLE_REASONS, (double)s->reasons, 0);
    fputc('\n', f);
}
