/*
 * Whole-or-nothing output files: regular files replaced by rename with their mode kept,
 * symlinks followed, devices and FIFOs written in place, failures leave nothing behind; the
 * durable variant's new-file mode, its content after commit and its errno on failure.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "pfi/atomic_file.h"

static char dir[] = "/tmp/pfi-atomic-XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    return rmdir(dir);
}

static void path_of(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void expect_text(const char *path, const char *text)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_string_equal(buf, text);
}

/* Only the expected names are in the directory: no temporary left behind. */
static void expect_entries(size_t want)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        assert_null(strstr(e->d_name, ".tmp"));
        n++;
    }
    closedir(d);
    assert_int_equal(n, want);
}

static void test_new_and_replaced_file_keeps_mode(void **state)
{
    (void)state;
    char p[512];
    path_of(p, sizeof p, "out.txt");
    pfi_atomic_file a;
    assert_int_equal(pfi_atomic_open(&a, p, NULL), PFI_OK);
    assert_false(a.in_place);
    fputs("one", a.f);
    /* until the commit the old content (here: none) is what readers see */
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(pfi_atomic_commit(&a, NULL), PFI_OK);
    expect_text(p, "one");
    chmod(p, 0600);
    assert_int_equal(pfi_atomic_open(&a, p, NULL), PFI_OK);
    fputs("two", a.f);
    expect_text(p, "one");
    assert_int_equal(pfi_atomic_commit(&a, NULL), PFI_OK);
    expect_text(p, "two");
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    expect_entries(1);
    unlink(p);
}

static void test_abort_leaves_old_file(void **state)
{
    (void)state;
    char p[512];
    path_of(p, sizeof p, "keep.txt");
    write_text(p, "old");
    pfi_atomic_file a;
    assert_int_equal(pfi_atomic_open(&a, p, NULL), PFI_OK);
    fputs("half", a.f);
    pfi_atomic_abort(&a);
    expect_text(p, "old");
    unlink(p);
}

static void test_symlink_is_followed(void **state)
{
    (void)state;
    char target[512], link[512];
    path_of(target, sizeof target, "target.txt");
    path_of(link, sizeof link, "link.txt");
    write_text(target, "orig");
    assert_int_equal(symlink(target, link), 0);
    pfi_atomic_file a;
    assert_int_equal(pfi_atomic_open(&a, link, NULL), PFI_OK);
    fputs("new", a.f);
    assert_int_equal(pfi_atomic_commit(&a, NULL), PFI_OK);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode)); /* still a link */
    expect_text(target, "new");
    unlink(link);
    unlink(target);
}

static void *drain(void *arg)
{
    static char got[64];
    int fd = open(arg, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, got, sizeof got - 1) : -1;
    got[n > 0 ? n : 0] = '\0';
    if (fd >= 0)
        close(fd);
    return got;
}

/* A FIFO is written in place (a rename would replace the pipe with a plain file). */
static void test_fifo_and_device_in_place(void **state)
{
    (void)state;
    char p[512];
    path_of(p, sizeof p, "fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, drain, p), 0);
    pfi_atomic_file a;
    assert_int_equal(pfi_atomic_open(&a, p, NULL), PFI_OK);
    assert_true(a.in_place);
    fputs("piped", a.f);
    assert_int_equal(pfi_atomic_commit(&a, NULL), PFI_OK);
    void *got;
    pthread_join(t, &got);
    assert_string_equal(got, "piped");
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    unlink(p);
    assert_int_equal(pfi_atomic_open(&a, "/dev/null", NULL), PFI_OK);
    assert_true(a.in_place);
    fputs("x", a.f);
    assert_int_equal(pfi_atomic_commit(&a, NULL), PFI_OK);
    assert_int_equal(stat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
}

static void test_errors(void **state)
{
    (void)state;
    pfi_atomic_file a;
    pfi_diag d;
    char p[512];
    path_of(p, sizeof p, "missing-dir/out.txt");
    assert_int_equal(pfi_atomic_open(&a, p, &d), PFI_ERR_IO);
    assert_non_null(strstr(d.message, "cannot write"));
    assert_int_equal(pfi_atomic_open(&a, dir, &d), PFI_ERR_IO);
    assert_non_null(strstr(d.message, "directory"));
    path_of(p, sizeof p, "dangling");
    assert_int_equal(symlink("/nonexistent/x", p), 0);
    assert_int_equal(pfi_atomic_open(&a, p, &d), PFI_ERR_IO);
    unlink(p);
    /* a write error on the stream fails the commit and leaves no temporary */
    assert_int_equal(pfi_atomic_open(&a, "/dev/full", &d), PFI_OK);
    for (int i = 0; i < 10000; i++)
        fputs("0123456789", a.f);
    assert_int_equal(pfi_atomic_commit(&a, &d), PFI_ERR_IO);
    expect_entries(0);
}

static void test_open_path_for_named_writers(void **state)
{
    (void)state;
    char p[512];
    path_of(p, sizeof p, "fig.png");
    pfi_atomic_file a;
    assert_int_equal(pfi_atomic_open_path(&a, p, NULL), PFI_OK);
    assert_null(a.f);
    assert_string_not_equal(a.write_path, p);
    write_text(a.write_path, "png");
    assert_int_equal(pfi_atomic_commit(&a, NULL), PFI_OK);
    expect_text(p, "png");
    unlink(p);
}

/* A new durable file gets mode_new less the umask; an existing one keeps its mode. */
static void test_durable_mode_and_content(void **state)
{
    (void)state;
    char p[512];
    path_of(p, sizeof p, "journal");
    mode_t old_mask = umask(022);
    pfi_atomic_file a;
    assert_int_equal(pfi_atomic_open_durable(&a, p, 0600, NULL), PFI_OK);
    assert_false(a.in_place);
    assert_true(a.durable);
    assert_non_null(strstr(a.write_path, ".tmp"));
    fputs("pfi-cap-journal 1\nend\n", a.f);
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(pfi_atomic_commit(&a, NULL), PFI_OK);
    assert_int_equal(a.error, 0);
    expect_text(p, "pfi-cap-journal 1\nend\n");
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    /* replacing: the existing file's mode stays, mode_new is for new files only */
    chmod(p, 0640);
    assert_int_equal(pfi_atomic_open_durable(&a, p, 0600, NULL), PFI_OK);
    fputs("two", a.f);
    assert_int_equal(pfi_atomic_commit(&a, NULL), PFI_OK);
    expect_text(p, "two");
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    expect_entries(1);
    unlink(p);
    /* the umask applies to mode_new, as for open(2) */
    umask(027);
    assert_int_equal(pfi_atomic_open_durable(&a, p, 0666, NULL), PFI_OK);
    assert_int_equal(pfi_atomic_commit(&a, NULL), PFI_OK);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    umask(old_mask);
    unlink(p);
}

/* Abort and a failed rename leave the old state and no temporary. */
static void test_durable_abort_and_failed_rename(void **state)
{
    (void)state;
    char p[512];
    path_of(p, sizeof p, "runs.csv");
    pfi_atomic_file a;
    assert_int_equal(pfi_atomic_open_durable(&a, p, 0666, NULL), PFI_OK);
    fputs("half", a.f);
    pfi_atomic_abort(&a);
    assert_int_equal(access(p, F_OK), -1);
    expect_entries(0);
    write_text(p, "old");
    assert_int_equal(pfi_atomic_open_durable(&a, p, 0666, NULL), PFI_OK);
    fputs("half", a.f);
    pfi_atomic_abort(&a);
    expect_text(p, "old");
    expect_entries(1);
    unlink(p);
    /* a directory appears at the path before the commit: the rename fails (EISDIR), the
     * temporary goes, the errno is kept for the caller's message */
    assert_int_equal(pfi_atomic_open_durable(&a, p, 0666, NULL), PFI_OK);
    fputs("data", a.f);
    assert_int_equal(mkdir(p, 0700), 0);
    pfi_diag d;
    assert_int_equal(pfi_atomic_commit(&a, &d), PFI_ERR_IO);
    assert_int_equal(a.error, EISDIR);
    assert_null(a.f);
    assert_null(a.write_path);
    assert_string_equal(d.file, p);
    expect_entries(1); /* the directory alone */
    assert_int_equal(rmdir(p), 0);
}

static void test_durable_errors_and_devices(void **state)
{
    (void)state;
    pfi_atomic_file a;
    pfi_diag d;
    char p[512];
    /* the temporary cannot be created: diag names it, a->error is the errno */
    path_of(p, sizeof p, "missing-dir/cap-journal");
    assert_int_equal(pfi_atomic_open_durable(&a, p, 0600, &d), PFI_ERR_IO);
    assert_int_equal(a.error, ENOENT);
    assert_null(a.path);
    assert_int_equal(strncmp(d.file, p, strlen(p)), 0);
    assert_non_null(strstr(d.file + strlen(p), ".tmp"));
    assert_int_equal(pfi_atomic_open_durable(&a, dir, 0600, &d), PFI_ERR_IO);
    assert_int_equal(a.error, EISDIR);
    assert_string_equal(d.file, dir);
    /* a device is written in place; one that cannot be synced is not an error */
    assert_int_equal(pfi_atomic_open_durable(&a, "/dev/null", 0600, NULL), PFI_OK);
    assert_true(a.in_place);
    fputs("x", a.f);
    assert_int_equal(pfi_atomic_commit(&a, NULL), PFI_OK);
    assert_int_equal(a.error, 0);
    /* a write error fails the commit with its errno */
    assert_int_equal(pfi_atomic_open_durable(&a, "/dev/full", 0600, &d), PFI_OK);
    for (int i = 0; i < 10000; i++)
        fputs("0123456789", a.f);
    assert_int_equal(pfi_atomic_commit(&a, &d), PFI_ERR_IO);
    assert_int_equal(a.error, ENOSPC);
    expect_entries(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_and_replaced_file_keeps_mode),
        cmocka_unit_test(test_abort_leaves_old_file),
        cmocka_unit_test(test_symlink_is_followed),
        cmocka_unit_test(test_fifo_and_device_in_place),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_open_path_for_named_writers),
        cmocka_unit_test(test_durable_mode_and_content),
        cmocka_unit_test(test_durable_abort_and_failed_rename),
        cmocka_unit_test(test_durable_errors_and_devices),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
