/*
 * Fuzz the dataset manifest loader (pfi/manifest.h): the bytes are written to a temporary
 * file (mkstemp under /tmp, unlinked afterwards) and loaded with pfi_manifest_load.
 *
 * When the manifest loads, its mapping and file pattern are also used the way `pfi analyze`
 * uses them: pfi_mapping_check; pfi_manifest_files in a private directory holding two CSV
 * files; and, when the mapping is complete, pfi_runs_read_stream of a small fixed CSV (so the
 * fuzzed column names, globs and cap_regex reach the runs reader).
 *
 * Invariants checked (abort on violation):
 *   - an error is one pfi_manifest_load documents; a parse or I/O error's diag names the file;
 *   - on success: n_group <= PFI_MAX_GROUP_COLUMNS with every name non-NULL, noise_rel in
 *     (0, 1) when present, and pfi_manifest_clear leaves the manifest zeroed;
 *   - pfi_manifest_files returns sorted paths inside the directory, or an error with none.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/manifest.h"
#include "pfi/runs.h"

static const char fixed_csv[] =
    "job,dataset,network,batch_size,optimizer,power_limit,cap,window_name,elapsed_time,"
    "gpu0_energy,gpu1_energy,average_power,power,throughput,time,time_per_epoch\n"
    "a,cifar100,resnet,128,adam,300,300,__GlobalPowerLimitOptimizer_300,10.5,2924.4,2900,"
    "280,280,100,0.5,20.1\n"
    "a,cifar100,resnet,128,adam,250,250,__GlobalPowerLimitOptimizer_250,11.2,2780.3,2700,"
    "240,240,90,0.6,22.4\n"
    "a,cifar100,resnet,128,adam,200,200,__GlobalPowerLimitOptimizer_200,[N/A],2599.2,N/A,"
    "190,190,70,0.7,\n";

static char dir_path[64];

static void remove_dir(void)
{
    char p[128];
    snprintf(p, sizeof p, "%s/a.csv", dir_path);
    unlink(p);
    snprintf(p, sizeof p, "%s/b.csv", dir_path);
    unlink(p);
    rmdir(dir_path);
}

/* A private directory with two CSV files, made once per process. */
static const char *data_dir(void)
{
    static int state; /* 0 not tried, 1 ready, -1 failed */
    if (state == 0) {
        state = -1;
        snprintf(dir_path, sizeof dir_path, "/tmp/pfi-fuzz-manifest-XXXXXX");
        if (mkdtemp(dir_path) != NULL) {
            const char *names[] = {"b.csv", "a.csv"};
            for (size_t i = 0; i < 2; i++) {
                char p[128];
                snprintf(p, sizeof p, "%s/%s", dir_path, names[i]);
                FILE *f = fopen(p, "wb");
                if (f != NULL) {
                    fputs(fixed_csv, f);
                    fclose(f);
                }
            }
            atexit(remove_dir);
            state = 1;
        }
    }
    return state == 1 ? dir_path : NULL;
}

static void exercise(const pfi_manifest *m)
{
    if (m->mapping.n_group > PFI_MAX_GROUP_COLUMNS)
        abort();
    for (size_t i = 0; i < m->mapping.n_group; i++)
        if (m->mapping.group[i] == NULL)
            abort();
    if (m->has_noise_rel && !(m->noise_rel > 0 && m->noise_rel < 1))
        abort();

    const char *dir = data_dir();
    if (dir != NULL) {
        char **paths = NULL;
        size_t n = 0;
        pfi_diag diag;
        pfi_error e = pfi_manifest_files(dir, m, &paths, &n, &diag);
        if (e != PFI_OK && (paths != NULL || n != 0))
            abort();
        size_t dlen = strlen(dir);
        for (size_t i = 0; i < n; i++) {
            if (paths[i] == NULL || strncmp(paths[i], dir, dlen) != 0 || paths[i][dlen] != '/')
                abort();
            if (i > 0 && strcmp(paths[i - 1], paths[i]) > 0)
                abort();
        }
        for (size_t i = 0; i < n; i++)
            pfi_free(paths[i]);
        pfi_free(paths);
    }

    char msg[256];
    if (pfi_mapping_check(&m->mapping, msg, sizeof msg) != PFI_OK)
        return;
    FILE *f = fmemopen((void *)fixed_csv, sizeof fixed_csv - 1, "rb");
    if (f == NULL)
        return;
    pfi_runs_table *t = NULL;
    if (pfi_runs_table_create(&t) == PFI_OK) {
        pfi_diag diag;
        pfi_error e = pfi_runs_read_stream(t, f, "dataset/fixed.csv", &m->mapping, &diag);
        if (e == PFI_OK && (t->n_files != 1 || t->n_groups == 0 || t->n_runs != 3))
            abort();
        if (e != PFI_OK && (t->n_files != 0 || t->n_groups != 0))
            abort();
        pfi_runs_table_destroy(t);
    }
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/pfi-fuzz-manifest-XXXXXX.json";
    int fd = mkstemps(path, 5);
    if (fd < 0)
        return 0;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    close(fd);
    if (done != size) {
        unlink(path);
        return 0;
    }

    pfi_manifest m;
    pfi_diag diag;
    pfi_error e = pfi_manifest_load(path, &m, &diag);
    if (e == PFI_OK) {
        exercise(&m);
    } else {
        if (e != PFI_ERR_PARSE && e != PFI_ERR_NOMEM && e != PFI_ERR_IO)
            abort();
        /* NOMEM may come without a diag; a parse or I/O error always names the file */
        if (e != PFI_ERR_NOMEM && (strcmp(diag.file, path) != 0 || diag.message[0] == '\0'))
            abort();
    }
    pfi_manifest_clear(&m);
    static const pfi_manifest zero;
    if (memcmp(&m, &zero, sizeof m) != 0)
        abort();
    unlink(path);
    return 0;
}
