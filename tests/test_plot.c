/*
 * The statistics figures (pfi/plot.h): files are produced in both formats (PNG magic, an
 * <svg element), atomically (no temporary left), and bad paths or inputs give the documented
 * errors without leaving a file.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "pfi/plot.h"

static const double pfi[] = {1.1, 1.3, 1.25, 1.4, 1.5, 1.45, 2.0, 2.3, NAN};
static const size_t cls[] = {0, 0, 0, 1, 1, 1, 2, 2, 2};
static const double feat[] = {0.01, 0.02, 0.015, 0.05, 0.06, 0.04, 0.15, 0.2, 0.1};
static const char *const names[] = {"dense", "moe-pt", "moe-ft"};
enum { N = 9 };

static char dir[] = "/tmp/pfi-test-plot-XXXXXX";

/* The number of entries in dir (no temporary may be left beside a figure). */
static size_t entries(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void assert_figure(const char *path, bool png)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char head[512] = {0};
    size_t got = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    assert_true(got > 8);
    if (png)
        assert_memory_equal(head, "\x89PNG\r\n\x1a\n", 8);
    else
        assert_non_null(strstr(head, "<svg"));
}

static void test_figures(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(dir));
    char path[256];
    pfi_diag d;
    for (int png = 0; png <= 1; png++) {
        snprintf(path, sizeof path, "%s/class.%s", dir, png ? "png" : "svg");
        assert_int_equal(pfi_plot_pfi_by_class(path, pfi, cls, N, names, 3, &d), PFI_OK);
        assert_figure(path, png);
        snprintf(path, sizeof path, "%s/feature.%s", dir, png ? "PNG" : "svg");
        assert_int_equal(
            pfi_plot_pfi_feature(path, feat, pfi, cls, N, names, 3, "dram*copy", 0.95, &d), PFI_OK);
        assert_figure(path, png);
    }
    assert_int_equal(entries(), 4);
    /* no classes; a constant feature (fit undefined: points only) */
    static const double flat[] = {0.1, 0.1, 0.1};
    snprintf(path, sizeof path, "%s/flat.png", dir);
    assert_int_equal(pfi_plot_pfi_feature(path, flat, pfi, NULL, 3, NULL, 0, NULL, 0.9, &d),
                     PFI_OK);
    assert_figure(path, true);
    unlink(path);
}

static void test_errors(void **state)
{
    (void)state;
    char path[256];
    pfi_diag d;
    size_t before = entries();
    snprintf(path, sizeof path, "%s/class.pdf", dir);
    assert_int_equal(pfi_plot_pfi_by_class(path, pfi, cls, N, names, 3, &d),
                     PFI_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(d.message, ".png"));
    assert_int_equal(pfi_plot_pfi_feature(path, feat, pfi, cls, N, names, 3, "x", 0.95, &d),
                     PFI_ERR_INVALID_ARGUMENT);
    snprintf(path, sizeof path, "%s/no-such-dir/class.png", dir);
    assert_int_equal(pfi_plot_pfi_by_class(path, pfi, cls, N, names, 3, &d), PFI_ERR_IO);
    assert_string_equal(d.file, path);
    assert_int_equal(pfi_plot_pfi_feature(path, feat, pfi, cls, N, names, 3, "x", 0.95, &d),
                     PFI_ERR_IO);
    /* a directory in the way of the rename */
    snprintf(path, sizeof path, "%s/taken.png", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(pfi_plot_pfi_by_class(path, pfi, cls, N, names, 3, &d), PFI_ERR_IO);
    rmdir(path);
    snprintf(path, sizeof path, "%s/bad.png", dir);
    static const size_t bad_cls[] = {0, 0, 5};
    assert_int_equal(pfi_plot_pfi_by_class(path, pfi, bad_cls, 3, names, 3, &d),
                     PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_plot_pfi_by_class(path, pfi, cls, N, names, 0, &d),
                     PFI_ERR_INVALID_ARGUMENT);
    static const double none[] = {NAN, NAN};
    assert_int_equal(pfi_plot_pfi_by_class(path, none, cls, 2, names, 3, &d),
                     PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_plot_pfi_feature(path, none, pfi, NULL, 2, NULL, 0, "x", 0.95, &d),
                     PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(pfi_plot_pfi_feature(path, feat, pfi, NULL, N, NULL, 0, "x", 1.5, &d),
                     PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(entries(), before); /* nothing left behind */
}

static int cleanup(void **state)
{
    (void)state;
    static const char *const files[] = {"class.png", "class.svg", "feature.PNG", "feature.svg"};
    char path[256];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_figures),
                                       cmocka_unit_test(test_errors)};
    return cmocka_run_group_tests(tests, NULL, cleanup);
}
