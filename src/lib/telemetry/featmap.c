/*
 * The reduced-telemetry → predictor feature table (pfi/featmap.h). Data, not code: add a row
 * here to make one more telemetry field usable by `pfi fit` / `pfi predict`.
 */
#include "pfi/featmap.h"

#include <math.h>
#include <string.h>

/* The single percent → fraction conversion of the code base. */
#define PERCENT_TO_FRACTION 0.01

/* Rows for the same predictor name: the earlier wins (see pfi_featmap_apply). Reduced names
 * are the readers' canonical names (src/lib/telemetry/fields.c aliases) and reduce's products
 * (PFI_DEFAULT_PRODUCTS); predictor names are the library's (src/lib/stats/library.c). */
static const pfi_featmap_entry table[] = {
    {100, "sm_clock_mhz", "MHz", "dcgm_sm_clock_mhz", "MHz", 1, ""},
    {101, "mem_clock_mhz", "MHz", "dcgm_mem_clock_mhz", "MHz", 1, ""},
    {155, "power_w", "W", "dcgm_power_w", "W", 1, "per-GPU mean power"},
    {155, "power_avg_w", "W", "dcgm_power_w", "W", 1,
     "nvidia-smi power.draw.average, when power_w is absent"},
    {203, "gpu_util_pct", "%", "dcgm_gpu_util", "fraction", PERCENT_TO_FRACTION, ""},
    {204, "mem_copy_util_pct", "%", "dcgm_mem_copy_util", "fraction", PERCENT_TO_FRACTION,
     "nvidia-smi utilization.memory, dmon mem, dcgmi MCUTL"},
    {252, "fb_used_mib", "MiB", "dcgm_fb_used_mib", "MiB", 1, ""},
    {1001, "gr_active", "fraction", "dcgm_gr_active", "fraction", 1, ""},
    {1002, "sm_active", "fraction", "dcgm_sm_active", "fraction", 1, ""},
    {1003, "sm_occupancy", "fraction", "dcgm_sm_occupancy", "fraction", 1, ""},
    {1004, "tensor_active", "fraction", "dcgm_tensor_active", "fraction", 1, ""},
    {1005, "dram_active", "fraction", "dcgm_dram_active", "fraction", 1, ""},
    {0, "dram_copy_product", "fraction", "dcgm_dram_active*dcgm_mem_copy_util", "fraction", 1,
     "DCGM 1005 x 204, both fractions (DESIGN 4); reduce converts the percent"},
};

const pfi_featmap_entry *pfi_featmap_table(size_t *n)
{
    if (n != NULL)
        *n = sizeof table / sizeof table[0];
    return table;
}

const pfi_featmap_entry *pfi_featmap_by_reduced(const char *reduced)
{
    for (size_t i = 0; reduced != NULL && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].reduced, reduced) == 0)
            return &table[i];
    return NULL;
}

const pfi_featmap_entry *pfi_featmap_by_predictor(const char *predictor)
{
    for (size_t i = 0; predictor != NULL && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].predictor, predictor) == 0)
            return &table[i];
    return NULL;
}

bool pfi_featmap_range(const char *name, double *lo, double *hi)
{
    const pfi_featmap_entry *m = pfi_featmap_by_predictor(name);
    const char *unit = m ? m->predictor_unit : NULL;
    if (m == NULL && (m = pfi_featmap_by_reduced(name)) != NULL)
        unit = m->reduced_unit;
    if (unit == NULL)
        return false;
    *lo = 0;
    if (strcmp(unit, "fraction") == 0)
        *hi = 1;
    else if (strcmp(unit, "%") == 0)
        *hi = 100;
    else if (strcmp(unit, "W") == 0)
        *hi = PFI_FEATMAP_MAX_GPU_POWER_W;
    else if (strcmp(unit, "MHz") == 0)
        *hi = PFI_FEATMAP_MAX_CLOCK_MHZ;
    else
        *hi = PFI_FEATMAP_MAX_MEMORY_MIB;
    return true;
}

double pfi_featmap_fraction_scale(pfi_telemetry_kind kind)
{
    return kind == PFI_KIND_PERCENT ? PERCENT_TO_FRACTION : 1.0;
}

pfi_error pfi_featmap_apply(pfi_groups *g, size_t row, const char (*names)[64],
                            const double *values, size_t n)
{
    if (g == NULL || row >= g->n || (n > 0 && (names == NULL || values == NULL)))
        return PFI_ERR_INVALID_ARGUMENT;
    pfi_error e = PFI_OK;
    /* Own names first (unconverted), then the table in order: the first row that finds its
     * reduced name sets its predictor name. */
    for (size_t k = 0; k < n && e == PFI_OK; k++)
        if (!isnan(values[k]))
            e = pfi_groups_set_feature(g, row, names[k], values[k]);
    for (size_t i = 0; i < sizeof table / sizeof table[0] && e == PFI_OK; i++) {
        if (!isnan(pfi_groups_feature(g, row, table[i].predictor)))
            continue;
        for (size_t k = 0; k < n; k++) {
            if (strcmp(names[k], table[i].reduced) != 0 || isnan(values[k]))
                continue;
            e = pfi_groups_set_feature(g, row, table[i].predictor, values[k] * table[i].scale);
            break;
        }
    }
    return e;
}
