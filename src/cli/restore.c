/*
 * pfi restore — put back the power limits a crashed or killed sweep left behind, from its
 * journal.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "hwutil.h"
#include "pfi/capctl.h"

static void usage(FILE *f)
{
    fprintf(
        f, "usage: pfi restore [--journal FILE | DIR] [OPTIONS]\n"
           "\n"
           "Set every GPU named in a cap journal back to the power limit it had before a sweep\n"
           "changed it, read the limits back, and remove the journal when all hold. Use it after\n"
           "'pfi sweep --backend nvml' was killed (kill -9, a crash, a reboot-free power loss of\n"
           "the host process). DIR is a sweep directory: its journal is DIR/cap-journal. GPUs are\n"
           "matched by UUID; a GPU already at its original limit is left alone.\n"
           "\n"
           "options:\n"
           "  --journal FILE          the journal (DIR/cap-journal)\n"
           "  --nvml-library PATH     NVML library (the one recorded in the journal)\n"
           "  --run-dir DIR           the GPUs' ownership locks ($PFI_RUN_DIR, /run/pfi): a GPU\n"
           "                          a live pfid or sweep owns is refused, naming it (exit 5)\n"
           "  --dry-run               show what would be set, change nothing\n"
           "  -h, --help              this help\n"
           "\n"
           "Exit codes: 0 every limit restored, or nothing to do (no journal), 1 unreadable\n"
           "or malformed journal (a directory, ...), 2 bad command line, 5 a GPU could not be\n"
           "restored (the journal is kept).\n");
}

int cmd_restore(int argc, char **argv)
{
    static const struct option opts[] = {
        {"journal", required_argument, NULL, 'j'}, {"nvml-library", required_argument, NULL, 'l'},
        {"dry-run", no_argument, NULL, 'n'},       {"run-dir", required_argument, NULL, 'U'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    const char *journal = NULL, *library = NULL, *run_dir = getenv("PFI_RUN_DIR");
    bool dry = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            journal = optarg;
            break;
        case 'l':
            library = optarg;
            break;
        case 'n':
            dry = true;
            break;
        case 'U':
            run_dir = optarg;
            break;
        case 'h':
            usage(stdout);
            return PFI_EXIT_OK;
        default:
            return cli_usage_getopt(opts, "h", c, argv);
        }
    }
    char path[4096];
    if (optind < argc && journal == NULL && optind + 1 == argc) {
        snprintf(path, sizeof path, "%s/cap-journal", argv[optind]);
        journal = path;
    } else if (optind < argc || journal == NULL) {
        cli_error("give a sweep directory or --journal FILE (see 'pfi restore --help')");
        return PFI_EXIT_USAGE;
    }
    /* no journal: the sweep ended cleanly (it removes it) or never changed a limit */
    struct stat jst;
    if (stat(journal, &jst) != 0 && errno == ENOENT) {
        printf("%s: no journal: nothing to restore\n", journal);
        return PFI_EXIT_OK;
    }
    pfi_journal j;
    pfi_diag d;
    pfi_error e = pfi_journal_read(journal, &j, &d);
    if (e != PFI_OK) {
        int rc = cli_report(e, &d);
        pfi_journal_clear(&j);
        return rc;
    }
    pfi_gpu_config gc = {0};
    /* only limits that outlive their process can be left behind by a crash */
    if (!pfi_gpu_kind_parse(j.backend, &gc.kind) ||
        !(pfi_gpu_backend_caps(gc.kind) & PFI_GPU_CAP_PERSISTENT_LIMITS)) {
        cli_error("%s: backend '%s' has no limits to restore", journal, j.backend);
        pfi_journal_clear(&j);
        return PFI_EXIT_DATA;
    }
    gc.library = library ? library : (j.library[0] ? j.library : NULL);
    if (dry) {
        for (size_t k = 0; k < j.n; k++)
            printf("GPU %u %s: would restore %.3f W\n", j.entries[k].index,
                   j.entries[k].uuid[0] ? j.entries[k].uuid : "-",
                   j.entries[k].original_mw / 1000.0);
        pfi_journal_clear(&j);
        return PFI_EXIT_OK;
    }
    /* one owner per GPU: a GPU a live pfid or sweep owns is its to restore (the lock of a
     * crashed one is free) */
    pfi_gpu_lock *lock = NULL;
    {
        const char **ids = calloc(j.n ? j.n : 1, sizeof *ids);
        char(*name)[96] = calloc(j.n ? j.n : 1, sizeof *name);
        if (ids == NULL || name == NULL) {
            free(ids);
            free(name);
            pfi_journal_clear(&j);
            return PFI_EXIT_INTERNAL;
        }
        for (size_t k = 0; k < j.n; k++) {
            if (j.entries[k].uuid[0])
                snprintf(name[k], sizeof name[k], "%s", j.entries[k].uuid);
            else
                snprintf(name[k], sizeof name[k], "index-%u", j.entries[k].index);
            ids[k] = name[k];
        }
        e = pfi_gpu_lock_acquire(run_dir ? run_dir : PFI_RUN_DIR_DEFAULT, ids, j.n, "pfi restore",
                                 &lock, &d);
        free(ids);
        free(name);
        if (e != PFI_OK) {
            cli_error("%s", d.message);
            pfi_journal_clear(&j);
            return hw_exit_code(e);
        }
    }
    pfi_gpu *g;
    e = hw_gpu_open(&gc, &g, &d);
    if (e != PFI_OK) {
        cli_error("%s backend: %s", pfi_gpu_kind_name(gc.kind),
                  d.message[0] ? d.message : pfi_strerror(e));
        pfi_journal_clear(&j);
        pfi_gpu_lock_release(lock);
        return hw_exit_code(e);
    }
    pfi_cap_result *res = calloc(j.n ? j.n : 1, sizeof *res);
    if (res == NULL) {
        pfi_gpu_close(g);
        pfi_journal_clear(&j);
        cli_error("out of memory");
        pfi_gpu_lock_release(lock);
        return PFI_EXIT_INTERNAL;
    }
    e = pfi_journal_restore(g, &j, res, &d);
    printf("%-5s %-40s %12s %12s  %s\n", "gpu", "uuid", "original_w", "enforced_w", "result");
    for (size_t k = 0; k < j.n; k++) {
        char enf[32] = "n/a";
        if (res[k].readback & PFI_LIMIT_ENFORCED)
            snprintf(enf, sizeof enf, "%.3f", res[k].enforced_mw / 1000.0);
        printf("%-5u %-40s %12.3f %12s  %s\n", res[k].gpu,
               j.entries[k].uuid[0] ? j.entries[k].uuid : "-", j.entries[k].original_mw / 1000.0,
               enf,
               res[k].error != PFI_OK ? res[k].message
               : res[k].skipped       ? "already at original"
                                      : "restored");
    }
    int rc = PFI_EXIT_OK;
    if (e == PFI_OK) {
        if (unlink(journal) != 0) {
            cli_error("%s: restored, but the journal could not be removed", journal);
            rc = PFI_EXIT_OUTPUT;
        }
    } else {
        cli_error("not every limit was restored; the journal %s is kept", journal);
        rc = hw_exit_code(e) == PFI_EXIT_USAGE ? PFI_EXIT_DEVICE : hw_exit_code(e);
        if (rc == PFI_EXIT_DATA)
            rc = PFI_EXIT_DEVICE;
    }
    free(res);
    pfi_gpu_close(g);
    pfi_gpu_lock_release(lock);
    pfi_journal_clear(&j);
    return rc;
}
