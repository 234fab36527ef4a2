/*
 * pfi library generate — write the calibrated synthetic job library as a dataset directory.
 */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/library.h"
#include "pfi/manifest.h"
#include "pfi/stats.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: pfi library generate [OPTIONS] [DIR]\n"
        "\n"
        "Write the calibrated SYNTHETIC job library (25 sweep groups, 131 runs; classes dense,\n"
        "moe-pt, moe-ft; 8 GPUs on caps 700..200 W, 16/32 GPUs on {700,600,500,200} W) to DIR\n"
        "(default: pfi-library): runs.csv (one row per run, with DCGM-like telemetry columns),\n"
        "groups.csv (each group's true model parameters and noise-free PFI) and\n" PFI_MANIFEST_NAME
        ", so 'pfi analyze DIR', 'pfi stats DIR' and 'pfi fit DIR' read it\n"
        "as it is. Every row and the manifest are labelled synthetic: these are not\n"
        "measurements.\n"
        "\n"
        "options:\n"
        "  --seed N               random seed (1): which group gets which PFI target, job\n"
        "                         scales, measurement noise; same seed, same files\n"
        "  --power-noise R        relative SD of measured power per run (0.001)\n"
        "  --throughput-noise R   relative SD of measured throughput per run (0.001)\n"
        "  --power-static F       static share of uncapped GPU power, P_s/P_u (0.30)\n"
        "  --gamma G              exponent of the power-clock curve (2)\n"
        "  --quiet                print nothing on success\n"
        "  -h, --help             this help\n"
        "\n"
        "Exit codes: 0 success, 2 bad command line, 3 output not written, 4 internal error.\n");
}

enum { OPT_SEED = 256, OPT_PNOISE, OPT_TNOISE, OPT_PSTATIC, OPT_GAMMA, OPT_QUIET };

static const struct option long_options[] = {
    {"seed", required_argument, NULL, OPT_SEED},
    {"power-noise", required_argument, NULL, OPT_PNOISE},
    {"throughput-noise", required_argument, NULL, OPT_TNOISE},
    {"power-static", required_argument, NULL, OPT_PSTATIC},
    {"gamma", required_argument, NULL, OPT_GAMMA},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static bool parse_range(const char *flag, const char *arg, double lo, double hi, double *out)
{
    double v;
    if (!cli_parse_double(arg, &v) || v < lo || v >= hi) {
        char want[64];
        snprintf(want, sizeof want, "a number in [%g, %g)", lo, hi);
        cli_usage_bad_value(flag, arg, want);
        return false;
    }
    *out = v;
    return true;
}

static int generate(int argc, char **argv)
{
    pfi_library_options o;
    pfi_library_options_init(&o);
    bool quiet = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", long_options, NULL)) != -1) {
        size_t n;
        switch (c) {
        case 'h':
            usage(stdout);
            return PFI_EXIT_OK;
        case OPT_SEED:
            if (!cli_parse_size(optarg, &n)) {
                return cli_usage_bad_value("seed", optarg, "a non-negative integer");
            }
            o.seed = (uint64_t)n;
            break;
        case OPT_PNOISE:
            if (!parse_range("power-noise", optarg, 0, 0.1, &o.power_noise_rel))
                return PFI_EXIT_USAGE;
            break;
        case OPT_TNOISE:
            if (!parse_range("throughput-noise", optarg, 0, 0.1, &o.throughput_noise_rel))
                return PFI_EXIT_USAGE;
            break;
        case OPT_PSTATIC:
            if (!parse_range("power-static", optarg, 0, 0.9, &o.power_static_frac))
                return PFI_EXIT_USAGE;
            break;
        case OPT_GAMMA:
            if (!parse_range("gamma", optarg, 0.5, 10, &o.gamma))
                return PFI_EXIT_USAGE;
            break;
        case OPT_QUIET:
            quiet = true;
            break;
        default:
            return cli_usage_getopt(long_options, "h", c, argv);
        }
    }
    if (argc - optind > 1) {
        cli_error("expected at most one directory");
        return PFI_EXIT_USAGE;
    }
    const char *dir = optind < argc ? argv[optind] : "pfi-library";
    pfi_library *lib = NULL;
    pfi_error e = pfi_library_generate(&o, &lib);
    if (e != PFI_OK) {
        cli_error("cannot generate the library: %s", pfi_strerror(e));
        return e == PFI_ERR_NOMEM ? PFI_EXIT_INTERNAL : PFI_EXIT_USAGE;
    }
    pfi_diag d;
    pfi_diag_clear(&d);
    e = pfi_library_write(lib, dir, &d);
    if (e != PFI_OK) {
        cli_report(e, &d);
        pfi_library_destroy(lib);
        return PFI_EXIT_OUTPUT;
    }
    if (!quiet) {
        printf("wrote %s: %zu sweep groups, %zu runs (SYNTHETIC, seed %llu)\n", dir, lib->n_groups,
               lib->n_runs, (unsigned long long)o.seed);
        static const char *const classes[] = {"dense", "moe-pt", "moe-ft"};
        for (size_t k = 0; k < 3; k++) {
            double v[64], w[64];
            size_t n = 0;
            for (size_t g = 0; g < lib->n_groups; g++)
                if (strcmp(lib->groups[g].job_class, classes[k]) == 0)
                    v[n++] = lib->groups[g].pfi_true;
            printf("  class %-7s %2zu groups, noise-free PFI median %s\n", classes[k], n,
                   cli_num(pfi_stats_median(v, n, w), 'f', 3, "undefined").s);
        }
        printf("next: pfi analyze %s; pfi stats %s; pfi fit %s\n", dir, dir, dir);
    }
    pfi_library_destroy(lib);
    return PFI_EXIT_OK;
}

int cmd_library(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? PFI_EXIT_USAGE : PFI_EXIT_OK;
    }
    if (strcmp(argv[1], "generate") == 0) {
        cli_set_command("library generate");
        return generate(argc - 1, argv + 1);
    }
    if (argv[1][0] == '-')
        return cli_usage_unknown(argv[1]);
    return cli_usage_error(
        "unknown subcommand '%s' (expected 'generate'; see 'pfi library --help')", argv[1]);
}
