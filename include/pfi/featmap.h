/*
 * pfi/featmap.h — the one table that maps reduced telemetry features (what the readers and
 * pfi_reduce_power produce and `pfi ingest` stores) to the predictor's feature names (what the
 * synthetic library, groups tables, `pfi fit` and saved models use), with the unit
 * conversion between them (DESIGN §4).
 *
 * The two naming schemes exist because each side names what it holds: the readers keep the
 * unit of the source in the name (mem_copy_util_pct is a percent, 0..100, as nvidia-smi and
 * DCGM print it), while the predictor works in DCGM's fractions (dcgm_mem_copy_util, 0..1)
 * so that the DRAM copy product is DRAM active (1005) × copy utilisation (204), both
 * fractions. Every crossing from telemetry or the store to fit/predict goes through this
 * table; a percent becomes a fraction here and nowhere else (pfi_featmap_fraction_scale is
 * the same conversion for reduce's products).
 *
 * The table (pfi_featmap_table, README "Feature names"):
 *
 *   DCGM  reduced name          unit      predictor name                        unit      ×
 *    100  sm_clock_mhz          MHz       dcgm_sm_clock_mhz                     MHz       1
 *    101  mem_clock_mhz         MHz       dcgm_mem_clock_mhz                    MHz       1
 *    155  power_w               W         dcgm_power_w                          W         1
 *    155  power_avg_w           W         dcgm_power_w (when power_w is absent) W         1
 *    203  gpu_util_pct          %         dcgm_gpu_util                         fraction  0.01
 *    204  mem_copy_util_pct     %         dcgm_mem_copy_util                    fraction  0.01
 *    252  fb_used_mib           MiB       dcgm_fb_used_mib                      MiB       1
 *   1001  gr_active             fraction  dcgm_gr_active                        fraction  1
 *   1002  sm_active             fraction  dcgm_sm_active                        fraction  1
 *   1003  sm_occupancy          fraction  dcgm_sm_occupancy                     fraction  1
 *   1004  tensor_active         fraction  dcgm_tensor_active                    fraction  1
 *   1005  dram_active           fraction  dcgm_dram_active                      fraction  1
 *   1005×204 dram_copy_product  fraction  dcgm_dram_active*dcgm_mem_copy_util   fraction  1
 *
 * Reduced values are per-GPU means over the job's GPUs (pfi/reduce.h); so are the library's.
 * The table is static, read-only data: every function here is pure and thread-safe.
 */
#ifndef PFI_FEATMAP_H
#define PFI_FEATMAP_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/error.h"
#include "pfi/groups.h"
#include "pfi/telemetry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One row of the table. All strings static. */
typedef struct pfi_featmap_entry {
    int dcgm_id;                /* DCGM field id; 0 for a product (ids in note) */
    const char *reduced;        /* canonical reader / reduce / store name */
    const char *reduced_unit;   /* "%", "fraction", "MHz", "W", "MiB" */
    const char *predictor;      /* name in the library, groups tables and models */
    const char *predictor_unit; /* unit of the predictor's value */
    double scale;               /* predictor value = reduced value × scale */
    const char *note;           /* one line for the docs ("" when none) */
} pfi_featmap_entry;

/* pfi_featmap_table — the table (static, *n rows). An earlier row for the same predictor
 * name wins when both reduced names are present (power_w before power_avg_w). */
const pfi_featmap_entry *pfi_featmap_table(size_t *n);

/* pfi_featmap_by_reduced / pfi_featmap_by_predictor — the first row with that name, or NULL. */
const pfi_featmap_entry *pfi_featmap_by_reduced(const char *reduced);
const pfi_featmap_entry *pfi_featmap_by_predictor(const char *predictor);

/* The physical ranges of pfi_featmap_range beyond the units' own (a fraction 0..1, a percent
 * 0..100): no GPU draws more, clocks faster or holds more memory. */
#define PFI_FEATMAP_MAX_GPU_POWER_W 5000.0
#define PFI_FEATMAP_MAX_CLOCK_MHZ 10000.0
#define PFI_FEATMAP_MAX_MEMORY_MIB 16777216.0

/*
 * pfi_featmap_range — the physically possible values [*lo, *hi] of a feature named by its
 * predictor or reduced name (or a product of the table): a fraction 0..1, a percent 0..100,
 * power 0..PFI_FEATMAP_MAX_GPU_POWER_W W per GPU, a clock 0..PFI_FEATMAP_MAX_CLOCK_MHZ MHz,
 * memory 0..PFI_FEATMAP_MAX_MEMORY_MIB MiB. false when the name is not in the table (an
 * unknown feature: *lo, *hi untouched). Pure, thread-safe.
 */
bool pfi_featmap_range(const char *name, double *lo, double *hi);

/*
 * pfi_featmap_fraction_scale — the factor that turns a value of kind into a fraction when it
 * is a percent (PFI_KIND_PERCENT: 0.01), else 1. The same constant as the table's percent
 * rows: reduce's products (dram_copy_product) use it, so the conversion lives here only.
 */
double pfi_featmap_fraction_scale(pfi_telemetry_kind kind);

/*
 * pfi_featmap_apply — put one run's reduced features (names[n], values[n], as in pfi_reduced
 * or the store) into row of g: every mapped name under its predictor name, converted, and
 * every name (mapped or not) also under its own name, so a model fitted on reduced names
 * still resolves. A NaN value stays missing; a predictor name already set in that row is
 * kept (the table's order decides). Errors: PFI_ERR_INVALID_ARGUMENT (row >= g->n),
 * PFI_ERR_LIMIT (more than PFI_GROUPS_MAX_FEATURES columns), PFI_ERR_NOMEM.
 */
pfi_error pfi_featmap_apply(pfi_groups *g, size_t row, const char (*names)[64],
                            const double *values, size_t n);

#ifdef __cplusplus
}
#endif

#endif
