/*
 * Unit tests of pfi/featmap.h: the table agrees with the readers (names, kinds, DCGM ids) and
 * the library (every library feature is reachable), the percent -> fraction conversion
 * happens once, and pfi_featmap_apply fills a groups row as documented.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "checks.h"

#include "pfi/featmap.h"
#include "pfi/groups.h"
#include "pfi/library.h"
#include "pfi/reduce.h"
#include "pfi/telemetry.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A source name of each base row (dcgmi dmon short names, nvidia-smi query names): the
 * reader must map it to the row's reduced name, with the row's DCGM id and a kind that
 * matches the row's unit. */
static const struct {
    const char *source, *reduced;
} sources[] = {
    {"SMCLK", "sm_clock_mhz"},
    {"MMCLK", "mem_clock_mhz"},
    {"POWER", "power_w"},
    {"power.draw.average", "power_avg_w"},
    {"GPUTL", "gpu_util_pct"},
    {"MCUTL", "mem_copy_util_pct"},
    {"utilization.memory", "mem_copy_util_pct"},
    {"mem", "mem_copy_util_pct"},
    {"FBUSD", "fb_used_mib"},
    {"GRACT", "gr_active"},
    {"SMACT", "sm_active"},
    {"SMOCC", "sm_occupancy"},
    {"TENSO", "tensor_active"},
    {"DRAMA", "dram_active"},
};

static void test_table_matches_readers(void **state)
{
    (void)state;
    size_t n;
    const pfi_featmap_entry *t = pfi_featmap_table(&n);
    CHECK(n >= 13, "table has %zu rows\n", n);
    for (size_t i = 0; i < ARRAY_LEN(sources); i++) {
        const char *canonical;
        pfi_telemetry_kind kind;
        int id;
        pfi_telemetry_field_info(sources[i].source, &canonical, &kind, &id);
        CHECK(strcmp(canonical, sources[i].reduced) == 0, "%s -> %s\n", sources[i].source,
              canonical);
        const pfi_featmap_entry *e = pfi_featmap_by_reduced(canonical);
        CHECK(e != NULL, "no row for %s\n", canonical);
        if (e == NULL)
            continue;
        CHECK(e->dcgm_id == id, "%s: id %d, reader %d\n", canonical, e->dcgm_id, id);
        bool percent = kind == PFI_KIND_PERCENT;
        CHECK(percent == (strcmp(e->reduced_unit, "%") == 0), "%s: unit %s\n", canonical,
              e->reduced_unit);
        /* Percent rows become fractions with the one conversion factor; others keep units. */
        CHECK(e->scale == pfi_featmap_fraction_scale(kind), "%s: scale %g\n", canonical, e->scale);
        if (percent || kind == PFI_KIND_RATIO)
            CHECK(strcmp(e->predictor_unit, "fraction") == 0, "%s -> %s\n", canonical,
                  e->predictor_unit);
    }
    for (size_t i = 0; i < n; i++) {
        CHECK(t[i].reduced && t[i].predictor && t[i].reduced_unit && t[i].predictor_unit &&
                  t[i].note,
              "row %zu has a NULL string\n", i);
        CHECK(t[i].scale > 0, "row %zu scale\n", i);
        CHECK(strncmp(t[i].predictor, "dcgm_", 5) == 0, "row %zu: %s\n", i, t[i].predictor);
    }
    END_CHECKS();
}

/* Every feature of the synthetic library (what `pfi fit` models are trained on) is fed by
 * some telemetry field, and the library's DRAM copy product is the reducer's. */
static void test_library_reachable(void **state)
{
    (void)state;
    for (size_t i = 0; i < PFI_LIBRARY_N_FEATURES; i++)
        CHECK(pfi_featmap_by_predictor(pfi_library_feature_names[i]) != NULL,
              "library feature %s has no telemetry source\n", pfi_library_feature_names[i]);
    const pfi_featmap_entry *p = pfi_featmap_by_predictor(PFI_DRAM_COPY_PRODUCT);
    CHECK(p != NULL && strcmp(p->reduced, "dram_copy_product") == 0, "product row\n");
    CHECK(strncmp(PFI_DEFAULT_PRODUCTS, "dram_copy_product=", 18) == 0, "reduce's product\n");
    CHECK(pfi_featmap_by_reduced("nope") == NULL && pfi_featmap_by_predictor(NULL) == NULL,
          "unknown names\n");
    CHECK(pfi_featmap_fraction_scale(PFI_KIND_PERCENT) == 0.01, "percent\n");
    CHECK(pfi_featmap_fraction_scale(PFI_KIND_RATIO) == 1, "ratio\n");
    CHECK(pfi_featmap_fraction_scale(PFI_KIND_POWER_W) == 1, "power\n");
    END_CHECKS();
}

static void test_apply(void **state)
{
    (void)state;
    pfi_groups *g = NULL;
    assert_int_equal(pfi_groups_create(2, &g), PFI_OK);
    /* power_avg_w listed before power_w: the table's order (power_w first) still decides. */
    static const char names[][64] = {"power_avg_w",       "power_w", "dram_active",
                                     "mem_copy_util_pct", "temp_c",  "tensor_active"};
    double values[] = {400, 410, 0.5, 30, 60, NAN};
    assert_int_equal(pfi_featmap_apply(g, 1, names, values, ARRAY_LEN(values)), PFI_OK);
    CHECK(pfi_groups_feature(g, 1, "dcgm_power_w") == 410, "power_w wins\n");
    CHECK(pfi_groups_feature(g, 1, "dcgm_dram_active") == 0.5, "dram\n");
    CHECK(fabs(pfi_groups_feature(g, 1, "dcgm_mem_copy_util") - 0.30) < 1e-15, "copy %g\n",
          pfi_groups_feature(g, 1, "dcgm_mem_copy_util"));
    CHECK(pfi_groups_feature(g, 1, "mem_copy_util_pct") == 30, "own name kept unconverted\n");
    CHECK(pfi_groups_feature(g, 1, "temp_c") == 60, "unmapped name kept\n");
    CHECK(isnan(pfi_groups_feature(g, 1, "dcgm_tensor_active")), "NaN stays missing\n");
    CHECK(isnan(pfi_groups_feature(g, 0, "dcgm_dram_active")), "other row untouched\n");
    /* The product resolves from the mapped fractions. */
    size_t k;
    assert_int_equal(pfi_groups_resolve(g, PFI_DRAM_COPY_PRODUCT, &k), PFI_OK);
    CHECK(fabs(g->features[1 * g->n_features + k] - 0.15) < 1e-15, "product %g\n",
          g->features[1 * g->n_features + k]);
    /* power_avg_w alone feeds dcgm_power_w. */
    static const char only_avg[][64] = {"power_avg_w"};
    double avg = 395;
    assert_int_equal(pfi_featmap_apply(g, 0, only_avg, &avg, 1), PFI_OK);
    CHECK(pfi_groups_feature(g, 0, "dcgm_power_w") == 395, "power_avg_w fallback\n");
    assert_int_equal(pfi_featmap_apply(g, 2, only_avg, &avg, 1), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_featmap_apply(NULL, 0, only_avg, &avg, 1), PFI_ERR_INVALID_ARGUMENT);
    pfi_groups_destroy(g);
    END_CHECKS();
}

/* Telemetry -> reduce -> table: the reducer's dram_copy_product (converted in reduce) and the
 * product of the mapped fields (converted by the table) are the same number, so the percent
 * is divided by 100 exactly once on either path. */
static void test_reduce_then_map(void **state)
{
    (void)state;
    static const char dmon[] = "#Entity   POWER        MCUTL        DRAMA\nID\n"
                               "GPU 0     500.0        20           0.400\n"
                               "GPU 1     500.0        40           0.600\n"
                               "GPU 0     501.0        20           0.400\n"
                               "GPU 1     501.0        40           0.600\n";
    pfi_telemetry_options o = {.keep_series = true, .interval_s = 5};
    pfi_telemetry *tm = NULL;
    assert_int_equal(pfi_telemetry_create(&o, &tm), PFI_OK);
    FILE *f = fmemopen((void *)dmon, sizeof dmon - 1, "r");
    assert_non_null(f);
    pfi_diag d;
    assert_int_equal(pfi_telemetry_read_stream(tm, f, "dmon", PFI_TELEMETRY_AUTO, &d), PFI_OK);
    fclose(f);
    pfi_reduce_options ro;
    pfi_reduce_options_init(&ro);
    pfi_reduced *red = calloc(1, sizeof *red);
    assert_non_null(red);
    assert_int_equal(pfi_reduce_power(tm, &ro, red), PFI_OK);
    pfi_groups *g = NULL;
    assert_int_equal(pfi_groups_create(1, &g), PFI_OK);
    assert_int_equal(pfi_featmap_apply(g, 0, (const char(*)[64])red->feature_name,
                                       red->feature_value, red->n_features),
                     PFI_OK);
    double dram = pfi_groups_feature(g, 0, "dcgm_dram_active");
    double copy = pfi_groups_feature(g, 0, "dcgm_mem_copy_util");
    double prod = pfi_groups_feature(g, 0, PFI_DRAM_COPY_PRODUCT); /* from dram_copy_product */
    CHECK(fabs(dram - 0.5) < 1e-15, "dram %.17g\n", dram);
    CHECK(fabs(copy - 0.3) < 1e-15, "copy %.17g\n", copy);
    CHECK(fabs(prod - dram * copy) < 1e-15, "product %.17g vs %.17g\n", prod, dram * copy);
    CHECK(fabs(prod - 0.15) < 1e-15, "product %.17g\n", prod);
    CHECK(fabs(pfi_groups_feature(g, 0, "dcgm_power_w") - 500.5) < 1e-12, "power\n");
    pfi_groups_destroy(g);
    free(red);
    pfi_telemetry_destroy(tm);
    END_CHECKS();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_matches_readers),
        cmocka_unit_test(test_library_reachable),
        cmocka_unit_test(test_apply),
        cmocka_unit_test(test_reduce_then_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
