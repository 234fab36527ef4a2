/*
 * The statistics figures (pfi/plot.h): files are produced in both formats (PNG magic, an
 * <svg element), atomically (no temporary left), and bad paths or inputs give the documented
 * errors without leaving a file. The pure layout helpers of every figure (plot/plot_layout.h):
 * shortened titles keep the GPU model, missing values break a line into runs, power axes
 * switch to kW at cluster size, budgets are drawn as steps or ramps.
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
#include "plot/plot_layout.h"

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

static void test_short_title(void **state)
{
    (void)state;
    char buf[64];
    /* cut from the front alone, A40 and V100 panels read alike ("...ert-base-uncased+gpu0") */
    plot_short_title("A40+bert-base-uncased+gpu0.csv", 24, buf, sizeof buf);
    assert_string_equal(buf, "A40...e-uncased+gpu0.csv");
    assert_int_equal(strlen(buf), 24); /* keep characters, "..." counted */
    plot_short_title("V100+bert-base-uncased+gpu0.csv", 24, buf, sizeof buf);
    assert_string_equal(buf, "V100...-uncased+gpu0.csv");
    plot_short_title("A40+bert-base-uncased+gpu0.csv: PFI 1.43", 38, buf, sizeof buf);
    assert_string_equal(buf, "A40...-base-uncased+gpu0.csv: PFI 1.43");
    /* a library key: the model before the first '/' */
    plot_short_title("H100-SXM/llama-70b/tp8/batch-64/seq-4096", 24, buf, sizeof buf);
    assert_int_equal(strncmp(buf, "H100-SXM...", 11), 0);
    assert_string_equal(buf + strlen(buf) - 8, "seq-4096");
    assert_int_equal(strlen(buf), 24);
    /* short titles are kept whole */
    plot_short_title("A40+resnet18.csv", 24, buf, sizeof buf);
    assert_string_equal(buf, "A40+resnet18.csv");
    /* no separator: the start and the end */
    plot_short_title("abcdefghijklmnopqrstuvwxyz0123456789", 24, buf, sizeof buf);
    assert_int_equal(strncmp(buf, "abcdefgh...", 11), 0);
    assert_int_equal(strlen(buf), 24);
    /* the buffer bounds the result */
    char tiny[8];
    plot_short_title("A40+bert-base-uncased+gpu0.csv", 24, tiny, sizeof tiny);
    assert_int_equal(strlen(tiny), 7);
}

static void test_runs(void **state)
{
    (void)state;
    /* NaN is missing: drawn as separate runs, never as 0 nor bridged */
    const double v[] = {NAN, 1, 2, NAN, NAN, 3, INFINITY, 4, 5, 6, NAN};
    size_t from = 0, b, e;
    size_t want[][2] = {{1, 3}, {5, 6}, {7, 10}};
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(plot_next_run(v, 11, &from, &b, &e), 1);
        assert_int_equal(b, want[k][0]);
        assert_int_equal(e, want[k][1]);
    }
    assert_int_equal(plot_next_run(v, 11, &from, &b, &e), 0);
    from = 0;
    const double all[] = {7, 8};
    assert_int_equal(plot_next_run(all, 2, &from, &b, &e), 1);
    assert_true(b == 0 && e == 2);
    assert_int_equal(plot_next_run(all, 2, &from, &b, &e), 0);
    from = 0;
    const double none[] = {NAN, NAN};
    assert_int_equal(plot_next_run(none, 2, &from, &b, &e), 0);
    assert_int_equal(plot_next_run(none, 0, &from, &b, &e), 0);
}

static void test_power_unit(void **state)
{
    (void)state;
    double s = 0;
    assert_string_equal(plot_power_unit(700, &s), "W"); /* one GPU */
    assert_true(s == 1);
    assert_string_equal(plot_power_unit(9999, &s), "W"); /* a node */
    assert_true(s == 1);
    assert_string_equal(plot_power_unit(10000, &s), "kW"); /* a cluster */
    assert_true(s == 1e3);
    assert_string_equal(plot_power_unit(113162, &s), "kW"); /* the grid-event demo */
    assert_true(s == 1e3);
    assert_string_equal(plot_power_unit(2.5e7, &s), "MW");
    assert_true(s == 1e6);
    assert_string_equal(plot_power_unit(NAN, &s), "W");
    assert_true(s == 1);
}

static void test_budget_path(void **state)
{
    (void)state;
    double x[16], y[16];
    /* a constant budget: one horizontal line to the last period's end */
    const double t1[] = {2, 2.5, 3}, b1[] = {100, 100, 100};
    assert_int_equal(plot_budget_path(t1, b1, 3, 3.5, x, y), 2);
    assert_true(x[0] == 2 && y[0] == 100 && x[1] == 3.5 && y[1] == 100);
    /* one jump: a step (vertical at 3) */
    const double b2[] = {100, 100, 80};
    assert_int_equal(plot_budget_path(t1, b2, 3, 3.5, x, y), 4);
    const double sx[] = {2, 3, 3, 3.5}, sy[] = {100, 100, 80, 80};
    for (int i = 0; i < 4; i++)
        assert_true(x[i] == sx[i] && y[i] == sy[i]);
    /* the grid-event schedule: a linear ramp 100 → 60 over 20..24 s, then held: straight from
       the ramp's first period to its last (no stair), then to the end */
    const double t3[] = {20, 21, 22, 23, 24, 25, 26}, b3[] = {100, 90, 80, 70, 60, 60, 60};
    size_t m = plot_budget_path(t3, b3, 7, 27, x, y);
    assert_int_equal(m, 6);
    const double rx[] = {20, 21, 22, 23, 24, 27}, ry[] = {100, 90, 80, 70, 60, 60};
    for (size_t i = 0; i < m; i++) {
        assert_true(x[i] == rx[i]);
        assert_true(y[i] == ry[i]);
    }
    /* no two x the same on a ramp: nothing vertical */
    for (size_t i = 1; i + 1 < m; i++)
        assert_true(x[i] > x[i - 1]);
    /* a ramp down then a jump back up: ramp, then a step */
    const double t4[] = {0, 1, 2, 3}, b4[] = {100, 90, 80, 120};
    m = plot_budget_path(t4, b4, 4, 4, x, y);
    const double qx[] = {0, 1, 2, 3, 3, 4}, qy[] = {100, 90, 80, 80, 120, 120};
    assert_int_equal(m, 6);
    for (size_t i = 0; i < m; i++)
        assert_true(x[i] == qx[i] && y[i] == qy[i]);
    /* one period */
    assert_int_equal(plot_budget_path(t4, b4, 1, 0.5, x, y), 2);
    assert_true(x[1] == 0.5 && y[1] == 100);
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
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_figures),     cmocka_unit_test(test_errors),
        cmocka_unit_test(test_short_title), cmocka_unit_test(test_runs),
        cmocka_unit_test(test_power_unit),  cmocka_unit_test(test_budget_path)};
    return cmocka_run_group_tests(tests, NULL, cleanup);
}
