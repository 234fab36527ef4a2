/*
 * The shipped datasets against an independent implementation: tests/golden/pfi_reference.py
 * (NumPy/SciPy) computed every group's ratio, area and CE PFI from the raw files; pfi must
 * agree to 1e-9 relative, define exactly the same PFIs, and count the same points. The Monte
 * Carlo CIs (the whole estimator resampled, 20000 draws, 2 % noise) come from the same script
 * with NumPy's generator: they agree statistically (each quantile within 5 combined Monte Carlo
 * standard errors, the undefined share within 5 binomial standard errors of the difference).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pfi/csv.h"
#include "pfi/index.h"
#include "pfi/manifest.h"
#include "pfi/runs.h"
#include "pfi/value.h"

static pfi_runs_table *load(const char *const *dirs, size_t n_dirs)
{
    pfi_runs_table *t;
    assert_int_equal(pfi_runs_table_create(&t), PFI_OK);
    for (size_t d = 0; d < n_dirs; d++) {
        pfi_manifest m;
        pfi_diag diag;
        pfi_error e = pfi_dataset_read(dirs[d], t, &m, &diag);
        if (e != PFI_OK) {
            char line[1400];
            print_error("%s\n", pfi_diag_format(&diag, line, sizeof line));
            fail();
        }
        pfi_manifest_clear(&m);
    }
    return t;
}

/* "file|group" as the reference script names a group: key values joined by '|', no @file. */
static void group_name(const pfi_runs_table *t, const pfi_group *g, char *buf, size_t len)
{
    const char *file = strrchr(t->files[g->file_index], '/');
    file = file ? file + 1 : t->files[g->file_index];
    int used = snprintf(buf, len, "%s|", file);
    bool first = true;
    for (size_t k = 0; k < g->n_key; k++) {
        if (strcmp(g->key_names[k], PFI_FILE_COLUMN) == 0)
            continue;
        used +=
            snprintf(buf + used, len - (size_t)used, "%s%s", first ? "" : "|", g->key_values[k]);
        first = false;
    }
}

static void expect_close(const char *what, const char *name, double got, const char *want_text)
{
    double want;
    pfi_value_status s = pfi_value_parse(want_text, strlen(want_text), &want);
    if (s == PFI_VALUE_MISSING) {
        if (!isnan(got)) {
            print_error("%s %s: got %.17g, reference undefined\n", name, what, got);
            fail();
        }
        return;
    }
    assert_int_equal(s, PFI_VALUE_OK);
    if (isnan(got) || fabs(got - want) > 1e-9 * fabs(want)) {
        print_error("%s %s: got %.17g, reference %.17g\n", name, what, got, want);
        fail();
    }
}

static void test_shipped_datasets_match_reference(void **state)
{
    (void)state;
    const char *dirs[] = {PFI_REPO_DATA "/zeus_jit_profile", PFI_REPO_DATA "/zeus_nsdi23_power"};
    pfi_runs_table *t = load(dirs, 2);
    pfi_options o;
    pfi_options_init(&o);
    o.draws = 0;
    pfi_result *res = calloc(t->n_groups, sizeof *res);
    assert_int_equal(pfi_analyze(t, &o, res), PFI_OK);

    pfi_csv_reader *csv;
    pfi_diag diag;
    assert_int_equal(pfi_csv_open(PFI_GOLDEN "/analyze_expected.csv", NULL, &csv, &diag), PFI_OK);
    const char *const *f;
    const size_t *len;
    size_t nf;
    long line;
    bool eof;
    assert_int_equal(pfi_csv_next(csv, &f, &len, &nf, &line, &eof, &diag), PFI_OK);
    assert_int_equal(nf, 11);
    assert_string_equal(f[5], "pfi_ratio");
    bool *seen = calloc(t->n_groups, sizeof *seen);
    size_t rows = 0, defined = 0;
    for (;;) {
        assert_int_equal(pfi_csv_next(csv, &f, &len, &nf, &line, &eof, &diag), PFI_OK);
        if (eof)
            break;
        assert_int_equal(nf, 11);
        char want_name[1024];
        snprintf(want_name, sizeof want_name, "%s|%s", f[0], f[1]);
        /* the reference writes "file|" for groups keyed by the file alone */
        size_t g;
        for (g = 0; g < t->n_groups; g++) {
            char name[1024];
            group_name(t, &t->groups[g], name, sizeof name);
            if (strcmp(name, want_name) == 0)
                break;
        }
        if (g == t->n_groups) {
            print_error("reference group %s not found\n", want_name);
            fail();
        }
        assert_false(seen[g]);
        seen[g] = true;
        rows++;
        const pfi_result *r = &res[g];
        expect_close("pfi_ratio", want_name, r->ratio, f[5]);
        expect_close("pfi_area", want_name, r->area, f[6]);
        expect_close("pfi_ce", want_name, r->ce, f[7]);
        expect_close("power_ref_w", want_name, r->reference.power_w, f[3]);
        expect_close("throughput_ref", want_name, r->reference.throughput, f[4]);
        size_t excluded = 0;
        for (size_t i = 0; i < r->n_points; i++)
            excluded += r->points[i].exclusion != PFI_EXCL_NONE &&
                        r->points[i].exclusion != PFI_EXCL_NO_THROUGHPUT_LOSS;
        assert_int_equal(r->n_used, strtoul(f[8], NULL, 10));
        assert_int_equal(r->n_ratio, strtoul(f[9], NULL, 10));
        assert_int_equal(excluded, strtoul(f[10], NULL, 10));
        defined += !isnan(r->ratio);
    }
    /* every group pfi found is in the reference, and the counts the provenance notes give */
    assert_int_equal(rows, t->n_groups);
    assert_int_equal(rows, 230);
    assert_int_equal(defined, 174);
    pfi_csv_close(csv);
    free(seen);
    for (size_t g = 0; g < t->n_groups; g++)
        pfi_result_clear(&res[g]);
    free(res);
    pfi_runs_table_destroy(t);
}

static double cell(const char *text)
{
    double v;
    return pfi_value_parse(text, strlen(text), &v) == PFI_VALUE_OK ? v : NAN;
}

static void test_ci_match_reference(void **state)
{
    (void)state;
    const char *dirs[] = {PFI_REPO_DATA "/zeus_jit_profile", PFI_REPO_DATA "/zeus_nsdi23_power"};
    pfi_runs_table *t = load(dirs, 2);
    pfi_options o;
    pfi_options_init(&o);
    o.draws = 20000;
    o.noise_rel = 0.02;
    o.seed = 1;
    pfi_result *res = calloc(t->n_groups, sizeof *res);
    assert_int_equal(pfi_analyze(t, &o, res), PFI_OK);
    pfi_csv_reader *csv;
    pfi_diag diag;
    assert_int_equal(pfi_csv_open(PFI_GOLDEN "/ci_expected.csv", NULL, &csv, &diag), PFI_OK);
    const char *const *f;
    const size_t *len;
    size_t nf, rows = 0, with_undefined = 0, withheld = 0;
    long line;
    bool eof;
    assert_int_equal(pfi_csv_next(csv, &f, &len, &nf, &line, &eof, &diag), PFI_OK);
    assert_int_equal(nf, 10);
    for (;;) {
        assert_int_equal(pfi_csv_next(csv, &f, &len, &nf, &line, &eof, &diag), PFI_OK);
        if (eof)
            break;
        char want_name[1024];
        snprintf(want_name, sizeof want_name, "%s|%s", f[0], f[1]);
        size_t g;
        for (g = 0; g < t->n_groups; g++) {
            char name[1024];
            group_name(t, &t->groups[g], name, sizeof name);
            if (strcmp(name, want_name) == 0)
                break;
        }
        assert_true(g < t->n_groups);
        const pfi_result *r = &res[g];
        rows++;
        double n = cell(f[2]), und = cell(f[3]);
        assert_int_equal(r->ci_draws, (size_t)n);
        double p_py = und / n, p_c = (double)r->ci_undefined / n, pbar = (p_py + p_c) / 2;
        double tol_p = 5 * sqrt(2 * pbar * (1 - pbar) / n) + 1.0 / n;
        if (fabs(p_py - p_c) > tol_p) {
            print_error("%s: undefined share %g, reference %g\n", want_name, p_c, p_py);
            fail();
        }
        with_undefined += und > 0;
        if (p_c > PFI_CI_UNDEFINED_WITHHOLD) { /* mostly undefined: the CI is withheld */
            assert_false(r->ci_available);
            assert_true((r->notes & PFI_NOTE_CI_WITHHELD) && r->label == PFI_LABEL_UNDEFINED);
            withheld++;
            continue;
        }
        assert_int_equal((r->notes & PFI_NOTE_MANY_UNDEFINED) != 0, p_c > PFI_CI_UNDEFINED_NOTE);
        assert_true(r->ci_available);
        const double got[3] = {r->ci_lo, r->ci_median, r->ci_hi};
        for (int q = 0; q < 3; q++) {
            double want = cell(f[4 + q]), se = cell(f[7 + q]);
            double tol = 5 * sqrt(2.0) * se + 1e-9 * fabs(want);
            if (!(fabs(got[q] - want) <= tol)) {
                print_error("%s: CI quantile %d = %.6g, reference %.6g (tolerance %.3g)\n",
                            want_name, q, got[q], want, tol);
                fail();
            }
        }
    }
    assert_int_equal(rows, 174);     /* every group with a defined ratio */
    assert_true(with_undefined > 0); /* the share is exercised */
    assert_true(withheld > 0);       /* and the rule that withholds the CI */
    pfi_csv_close(csv);
    for (size_t g = 0; g < t->n_groups; g++)
        pfi_result_clear(&res[g]);
    free(res);
    pfi_runs_table_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_datasets_match_reference),
        cmocka_unit_test(test_ci_match_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
