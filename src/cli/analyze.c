/*
 * pfi analyze — the Power Flexibility Index of every sweep group in the given datasets.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyze.h"
#include "cli.h"
#include "pfi/manifest.h"
#include "pfi/plot.h"

#ifndef PFI_DEFAULT_DATA_DIR
#define PFI_DEFAULT_DATA_DIR "data"
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pfi analyze [OPTIONS] [DIR|FILE|- ...]\n"
            "\n"
            "Compute the Power Flexibility Index (PFI) of every sweep group: how much relative\n"
            "power a job gives up per unit of relative throughput it loses under power caps.\n"
            "A DIR holds a dataset manifest (" PFI_MANIFEST_NAME ") that maps its CSV columns;\n"
            "a FILE uses the manifest beside it, or the mapping options below; '-' reads stdin.\n"
            "Without inputs, the embedded datasets are analysed.\n"
            "\n"
            "column mapping (override the manifest):\n"
            "  --group COL[,COL...]   columns identifying a sweep group ('@file' = the file name)\n"
            "  --cap COL              power cap, W\n"
            "  --cap-regex RE         take the cap from RE's first group, e.g. '_([0-9]+)$'\n"
            "  --power COL            power, W (a glob sums columns: 'gpu*_power')\n"
            "  --energy COL           energy, J, divided by --duration (glob: summed)\n"
            "  --duration COL         seconds the energy was measured over\n"
            "  --throughput COL       work per second (tokens/s, samples/s...)\n"
            "  --time COL             seconds per fixed unit of work (throughput = 1/time)\n"
            "  --power-se COL         standard error of power, W\n"
            "  --throughput-se COL    standard error of throughput\n"
            "  --time-se COL          standard error of time, s\n"
            "  --gpus COL             GPU count of the job\n"
            "  --class COL            job class (dense, moe-pt, ...)\n"
            "  --manifest FILE        read the mapping from FILE\n"
            "  --db FILE              also analyse the sweep groups of a run store (pfi ingest)\n"
            "\n"
            "analysis:\n"
            "  --x-min X              smallest relative power decrease that binds (0.02)\n"
            "  --noise-rel R          relative standard error for runs without one (e.g. 0.01);\n"
            "                         without standard errors there is no confidence interval\n"
            "  --draws N              Monte Carlo draws per group (10000; 0: no CI); a group\n"
            "                         whose PFI is undefined in over 10 %% of the draws gets a\n"
            "                         note, over 50 %%: no CI and the label 'undefined'\n"
            "  --seed N               random seed (1); same seed, same CI\n"
            "  --ci-level L           confidence level (0.95)\n"
            "  --linear-band B        without a CI, |PFI-1| <= B is 'linear' (0.05)\n"
            "  --threads N            worker threads (0: one per CPU)\n"
            "\n"
            "output:\n"
            "  --format table|csv|json  (table)\n"
            "  -o, --output FILE      write there instead of stdout (atomically)\n"
            "  --points               table: list every point and why it was excluded\n"
            "  --plot FILE.png|.svg   draw normalised throughput against normalised power\n"
            "  --timing               print load/compute/output seconds on stderr\n"
            "  -h, --help             this help\n"
            "\n"
            "Exit codes: 0 success, 1 bad or missing input, 2 bad command line,\n"
            "3 output not written, 4 internal error.\n");
}

enum {
    OPT_GROUP = 256,
    OPT_CAP,
    OPT_CAP_REGEX,
    OPT_POWER,
    OPT_ENERGY,
    OPT_DURATION,
    OPT_THROUGHPUT,
    OPT_TIME,
    OPT_POWER_SE,
    OPT_THROUGHPUT_SE,
    OPT_TIME_SE,
    OPT_GPUS,
    OPT_CLASS,
    OPT_MANIFEST,
    OPT_X_MIN,
    OPT_NOISE_REL,
    OPT_DRAWS,
    OPT_SEED,
    OPT_CI_LEVEL,
    OPT_LINEAR_BAND,
    OPT_THREADS,
    OPT_FORMAT,
    OPT_POINTS,
    OPT_PLOT,
    OPT_TIMING,
    OPT_DB
};

static const struct option long_options[] = {
    {"group", required_argument, NULL, OPT_GROUP},
    {"cap", required_argument, NULL, OPT_CAP},
    {"cap-regex", required_argument, NULL, OPT_CAP_REGEX},
    {"power", required_argument, NULL, OPT_POWER},
    {"energy", required_argument, NULL, OPT_ENERGY},
    {"duration", required_argument, NULL, OPT_DURATION},
    {"throughput", required_argument, NULL, OPT_THROUGHPUT},
    {"time", required_argument, NULL, OPT_TIME},
    {"power-se", required_argument, NULL, OPT_POWER_SE},
    {"throughput-se", required_argument, NULL, OPT_THROUGHPUT_SE},
    {"time-se", required_argument, NULL, OPT_TIME_SE},
    {"gpus", required_argument, NULL, OPT_GPUS},
    {"class", required_argument, NULL, OPT_CLASS},
    {"manifest", required_argument, NULL, OPT_MANIFEST},
    {"x-min", required_argument, NULL, OPT_X_MIN},
    {"noise-rel", required_argument, NULL, OPT_NOISE_REL},
    {"draws", required_argument, NULL, OPT_DRAWS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"ci-level", required_argument, NULL, OPT_CI_LEVEL},
    {"linear-band", required_argument, NULL, OPT_LINEAR_BAND},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"output", required_argument, NULL, 'o'},
    {"points", no_argument, NULL, OPT_POINTS},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"timing", no_argument, NULL, OPT_TIMING},
    {"db", required_argument, NULL, OPT_DB},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The mapping fields the flags set, in flag order (OPT_GROUP .. OPT_CLASS). */
static const char *const flag_field[] = {
    "group", "cap",      "cap_regex",     "power",   "energy", "duration", "throughput",
    "time",  "power_se", "throughput_se", "time_se", "gpus",   "job_class"};

typedef struct settings {
    pfi_mapping flags; /* only the fields given on the command line */
    bool flag_set[sizeof flag_field / sizeof flag_field[0]];
    const char *manifest;
    pfi_options options;
    bool noise_given;
    const char *format;
    const char *output;
    const char *plot;
    bool points;
    bool timing;
    const char *db;
} settings;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The options that are not in parse_args' table, each by its own rule: an exit code, -1
 * after --help. */
static int take_option(int c, char **argv, settings *s)
{
    if (c >= OPT_GROUP && c <= OPT_CLASS) { /* a column of the mapping */
        size_t k = (size_t)(c - OPT_GROUP);
        if (pfi_mapping_set(&s->flags, flag_field[k], optarg) != PFI_OK) {
            cli_error("--%s: too many columns (at most %d)", long_options[k].name,
                      PFI_MAX_GROUP_COLUMNS);
            return PFI_EXIT_USAGE;
        }
        s->flag_set[k] = true;
        return PFI_EXIT_OK;
    }
    switch (c) {
    case 'h':
        usage(stdout);
        return fflush(stdout) == 0 && !ferror(stdout) ? -1 : PFI_EXIT_OUTPUT;
    case OPT_FORMAT:
        if (strcmp(optarg, "table") && strcmp(optarg, "csv") && strcmp(optarg, "json")) {
            return cli_usage_bad_value("format", optarg, "table, csv or json");
        }
        s->format = optarg;
        return PFI_EXIT_OK;
    default: /* '?' or ':' */
        return cli_usage_getopt(long_options, ":ho:", c, argv);
    }
}

/* The options into s (its defaults already set), then the checks across options. An exit
 * code, -1 after --help. */
static int parse_args(int argc, char **argv, settings *s)
{
    pfi_options *o = &s->options;
    const cli_opt table[] = {
        {.c = 'o', .kind = CLI_OPT_TEXT, .dst = &s->output},
        {.c = OPT_MANIFEST, .kind = CLI_OPT_TEXT, .dst = &s->manifest},
        {.c = OPT_POINTS, .kind = CLI_OPT_FLAG, .dst = &s->points},
        {.c = OPT_PLOT, .kind = CLI_OPT_TEXT, .dst = &s->plot},
        {.c = OPT_DB, .kind = CLI_OPT_TEXT, .dst = &s->db},
        {.c = OPT_TIMING, .kind = CLI_OPT_FLAG, .dst = &s->timing},
        {.c = OPT_X_MIN,
         .kind = CLI_OPT_DOUBLE,
         .dst = &o->x_min,
         .lo = 0,
         .hi = 1,
         .hi_open = true,
         .error = "a number in [0, 1)"},
        {.c = OPT_NOISE_REL,
         .kind = CLI_OPT_DOUBLE,
         .dst = &o->noise_rel,
         .lo = 0,
         .lo_open = true,
         .hi = 1,
         .hi_open = true,
         .given = &s->noise_given,
         .error = "a relative noise in (0, 1), e.g. 0.01"},
        {.c = OPT_DRAWS,
         .kind = CLI_OPT_SIZE,
         .dst = &o->draws,
         .max = 100000000,
         .error = "an integer from 0 to 100000000"},
        {.c = OPT_SEED,
         .kind = CLI_OPT_UINT64,
         .dst = &o->seed,
         .max = (size_t)INT64_MAX,
         .error = "an integer from 0 to 9223372036854775807"},
        {.c = OPT_CI_LEVEL,
         .kind = CLI_OPT_DOUBLE,
         .dst = &o->ci_level,
         .lo = 0,
         .lo_open = true,
         .hi = 1,
         .hi_open = true,
         .error = "a number in (0, 1), e.g. 0.95"},
        {.c = OPT_LINEAR_BAND,
         .kind = CLI_OPT_DOUBLE,
         .dst = &o->linear_band,
         .lo = 0,
         .hi = HUGE_VAL,
         .error = "a number >= 0"},
        {.c = OPT_THREADS,
         .kind = CLI_OPT_UNSIGNED,
         .dst = &o->threads,
         .max = 256,
         .error = "an integer from 0 to 256"},
    };
    int c;
    optind = 1;
    opterr = 0; /* our own messages, naming the command */
    while ((c = getopt_long(argc, argv, ":ho:", long_options, NULL)) != -1) {
        const cli_opt *t = cli_opt_find(table, sizeof table / sizeof table[0], c);
        if (t == NULL) {
            int rc = take_option(c, argv, s);
            if (rc != PFI_EXIT_OK)
                return rc;
        } else if (!cli_opt_take(t, optarg)) {
            cli_opt_complain(long_options, t, optarg);
            return PFI_EXIT_USAGE;
        }
    }
    if (s->points && strcmp(s->format, "table") != 0) {
        cli_error("--points applies to the table format (JSON always lists every point; CSV has "
                  "one row per group)");
        return PFI_EXIT_USAGE;
    }
    if (s->plot != NULL) {
        const char *dot = strrchr(s->plot, '.');
        if (dot == NULL || (strcmp(dot, ".png") && strcmp(dot, ".svg"))) {
            return cli_usage_bad_value("plot", s->plot, "a file name ending in .png or .svg");
        }
    }
    return PFI_EXIT_OK;
}

/* The index of a mapping field in flag_field. */
static size_t field_index(const char *field)
{
    for (size_t k = 0; k < sizeof flag_field / sizeof flag_field[0]; k++)
        if (strcmp(flag_field[k], field) == 0)
            return k;
    return 0;
}

/*
 * The manifest mapping with the command-line flags laid over it. A flag for one side of a
 * pair (power/energy, throughput/time) unmaps the manifest's other side.
 */
static int merge_mapping(const settings *s, const pfi_manifest *man, pfi_mapping *out)
{
    static const char *const pairs[][2] = {{"power", "energy"}, {"throughput", "time"}};
    pfi_error e = PFI_OK;
    for (size_t k = 0; e == PFI_OK && k < sizeof flag_field / sizeof flag_field[0]; k++) {
        const pfi_mapping *src = s->flag_set[k] ? &s->flags : man ? &man->mapping : NULL;
        if (src == NULL)
            continue;
        if (k == 0) {
            char joined[PFI_MAX_GROUP_COLUMNS * 130] = "";
            for (size_t i = 0; i < src->n_group; i++) {
                strncat(joined, i ? "," : "", sizeof joined - strlen(joined) - 1);
                strncat(joined, src->group[i], sizeof joined - strlen(joined) - 1);
            }
            e = pfi_mapping_set(out, "group", src->n_group ? joined : NULL);
        } else {
            e = pfi_mapping_set(out, flag_field[k], pfi_mapping_get(src, flag_field[k]));
        }
    }
    for (size_t p = 0; e == PFI_OK && p < 2; p++)
        for (int side = 0; side < 2; side++)
            if (s->flag_set[field_index(pairs[p][side])] &&
                !s->flag_set[field_index(pairs[p][1 - side])])
                e = pfi_mapping_set(out, pairs[p][1 - side], NULL);
    if (e != PFI_OK) {
        cli_error("out of memory");
        return PFI_EXIT_INTERNAL;
    }
    return PFI_EXIT_OK;
}

static bool any_flag(const settings *s)
{
    for (size_t k = 0; k < sizeof flag_field / sizeof flag_field[0]; k++)
        if (s->flag_set[k])
            return true;
    return false;
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Read one input (directory, file or "-") into t. */
static int load_input(const settings *s, const char *input, pfi_runs_table *t, double *noise_rel,
                      bool *noise_from_manifest)
{
    pfi_diag d;
    pfi_diag_clear(&d);
    struct stat st;
    bool is_stdin = strcmp(input, "-") == 0;
    bool is_dir = !is_stdin && stat(input, &st) == 0 && S_ISDIR(st.st_mode);
    if (!is_stdin && !is_dir && stat(input, &st) != 0) {
        cli_error("%s: no such file or directory", input);
        return PFI_EXIT_DATA;
    }
    /* find the manifest: --manifest, else the one in the directory or beside the file */
    char man_path[4096] = "";
    if (s->manifest != NULL) {
        snprintf(man_path, sizeof man_path, "%s", s->manifest);
    } else if (!is_stdin) {
        if (is_dir) {
            snprintf(man_path, sizeof man_path, "%s/%s", input, PFI_MANIFEST_NAME);
        } else {
            const char *slash = strrchr(input, '/');
            int dir_len = slash ? (int)(slash - input) : 1;
            snprintf(man_path, sizeof man_path, "%.*s/%s", dir_len, slash ? input : ".",
                     PFI_MANIFEST_NAME);
        }
        if (!file_exists(man_path))
            man_path[0] = '\0';
    }
    pfi_manifest man;
    memset(&man, 0, sizeof man);
    bool have_manifest = man_path[0] != '\0';
    int rc = PFI_EXIT_OK;
    struct stat mst; /* a pipe is no manifest: it is read from a file (its folder's files) */
    if (have_manifest && stat(man_path, &mst) == 0 && !S_ISREG(mst.st_mode)) {
        cli_error("%s: %s: a manifest (pfi-dataset.json) is read from a file", man_path,
                  S_ISDIR(mst.st_mode) ? "is a directory" : "not a regular file");
        return PFI_EXIT_DATA;
    }
    if (have_manifest) {
        pfi_error e = pfi_manifest_load(man_path, &man, &d);
        if (e != PFI_OK) {
            pfi_manifest_clear(&man);
            return cli_report(e, &d);
        }
        if (man.has_noise_rel && !s->noise_given) {
            if (*noise_from_manifest && *noise_rel != man.noise_rel)
                cli_error("warning: %s: noise_rel %g differs from another manifest's %g; using "
                          "%g (give --noise-rel to choose)",
                          man_path, man.noise_rel, *noise_rel, *noise_rel);
            else
                *noise_rel = man.noise_rel;
            *noise_from_manifest = true;
        }
    } else if (is_stdin && !any_flag(s)) {
        cli_error("-: reading standard input needs the column mapping options (--group, --cap, "
                  "--power, --throughput...) or --manifest");
        return PFI_EXIT_USAGE;
    } else if (!any_flag(s)) {
        cli_error("%s: no %s%s and no column mapping options (--group, --cap, --power, "
                  "--throughput...); see 'pfi analyze --help'",
                  input, PFI_MANIFEST_NAME, is_dir ? " in this directory" : " beside this file");
        return PFI_EXIT_USAGE;
    }
    pfi_mapping mapping;
    memset(&mapping, 0, sizeof mapping);
    rc = merge_mapping(s, have_manifest ? &man : NULL, &mapping);
    char why[256];
    /* a mapping that is the manifest's alone is bad input; one the flags touched, bad usage */
    const bool from_manifest = have_manifest && !any_flag(s);
    if (rc == PFI_EXIT_OK && pfi_mapping_check(&mapping, why, sizeof why) != PFI_OK) {
        cli_error("%s: incomplete column mapping: %s", from_manifest ? man_path : input, why);
        rc = from_manifest ? PFI_EXIT_DATA : PFI_EXIT_USAGE;
    }
    if (rc == PFI_EXIT_OK) {
        pfi_error e = PFI_OK;
        FILE *sp = NULL; /* a pipe or "-": bounded by PFI_MAX_INPUT_BYTES (cli.h) */
        if (!is_dir && (rc = cli_input_spool(NULL, input, &sp)) != PFI_EXIT_OK) {
            pfi_mapping_clear(&mapping);
            pfi_manifest_clear(&man);
            return rc;
        }
        if (!is_dir)
            cli_note_cut_line(input, sp);
        if (sp != NULL) {
            e = pfi_runs_read_stream(t, sp, is_stdin ? "(stdin)" : input, &mapping, &d);
            fclose(sp);
        } else if (is_stdin) {
            e = pfi_runs_read_stream(t, stdin, "(stdin)", &mapping, &d);
        } else if (is_dir) {
            char **paths = NULL;
            size_t n = 0;
            e = pfi_manifest_files(input, &man, &paths, &n, &d);
            for (size_t i = 0; e == PFI_OK && i < n; i++)
                e = pfi_runs_read_csv(t, paths[i], NULL, &mapping, &d);
            for (size_t i = 0; i < n; i++)
                pfi_free(paths[i]);
            pfi_free(paths);
        } else {
            e = pfi_runs_read_csv(t, input, NULL, &mapping, &d);
        }
        if (e != PFI_OK) {
            rc = cli_report(e, &d);
            if (e == PFI_ERR_INVALID_ARGUMENT && from_manifest)
                rc = PFI_EXIT_DATA; /* e.g. the manifest's cap_regex or file pattern */
        }
    }
    pfi_mapping_clear(&mapping);
    pfi_manifest_clear(&man);
    return rc;
}

/* Up to this many groups get a panel each; more are overlaid one panel per file. */
enum { PANELS_PER_GROUP_MAX = 36 };

/*
 * The figure: a panel per group while that stays readable; beyond PANELS_PER_GROUP_MAX
 * groups, one panel per file with its groups overlaid (a file is usually one GPU model).
 */
static int plot_outputs(const char *path, const analyze_report *rep)
{
    const pfi_runs_table *t = rep->table;
    const size_t n = t->n_groups;
    const bool by_file = n > PANELS_PER_GROUP_MAX;
    const size_t n_titles = by_file ? t->n_files : n;
    char **titles = calloc(n_titles ? n_titles : 1, sizeof *titles);
    size_t *panel_of = by_file ? calloc(n ? n : 1, sizeof *panel_of) : NULL;
    int rc = titles && (panel_of || !by_file) ? PFI_EXIT_OK : PFI_EXIT_INTERNAL;
    for (size_t i = 0; rc == PFI_EXIT_OK && i < n_titles; i++) {
        if ((titles[i] = malloc(160)) == NULL) {
            rc = PFI_EXIT_INTERNAL;
        } else if (!by_file) {
            analyze_group_title(t, i, titles[i], 160);
        } else {
            size_t groups = 0, last = 0;
            for (size_t g = 0; g < n; g++)
                if (t->groups[g].file_index == i) {
                    groups++;
                    last = g;
                }
            const char *base = strrchr(t->files[i], '/');
            base = base ? base + 1 : t->files[i];
            double pfi = groups == 1 ? rep->results[last].ratio : NAN;
            if (groups == 1 && !isnan(pfi))
                snprintf(titles[i], 160, "%s: PFI %.2f", base, pfi);
            else
                snprintf(titles[i], 160, "%s (%zu group%s)", base, groups, groups == 1 ? "" : "s");
        }
    }
    for (size_t g = 0; rc == PFI_EXIT_OK && by_file && g < n; g++)
        panel_of[g] = t->groups[g].file_index;
    if (rc == PFI_EXIT_OK) {
        pfi_diag d;
        pfi_diag_clear(&d);
        pfi_error e = by_file
                          ? pfi_plot_curves_by_panel(path, rep->results, n, panel_of,
                                                     (const char *const *)titles, n_titles, &d)
                          : pfi_plot_curves(path, rep->results, (const char *const *)titles, n, &d);
        if (e != PFI_OK) {
            cli_report(e, &d);
            rc = e == PFI_ERR_NOMEM ? PFI_EXIT_INTERNAL : PFI_EXIT_OUTPUT;
        }
    } else {
        cli_error("out of memory");
    }
    for (size_t i = 0; titles && i < n_titles; i++)
        free(titles[i]);
    free(titles);
    free(panel_of);
    return rc;
}

static int write_outputs(const settings *s, const analyze_report *rep)
{
    cli_output out;
    if (!cli_output_open(&out, s->output))
        return PFI_EXIT_OUTPUT;
    bool ok;
    if (strcmp(s->format, "json") == 0)
        ok = analyze_write_json(out.f, rep);
    else if (strcmp(s->format, "csv") == 0)
        ok = analyze_write_csv(out.f, rep);
    else
        ok = analyze_write_table(out.f, rep);
    if (!ok) {
        cli_write_error(s->output, errno);
        cli_output_abort(&out);
        return PFI_EXIT_OUTPUT;
    }
    if (!cli_output_commit(&out))
        return PFI_EXIT_OUTPUT;
    if (s->plot == NULL)
        return PFI_EXIT_OK;
    return plot_outputs(s->plot, rep);
}

/*
 * Where the embedded datasets are: $PFI_DATA_DIR; else data/ beside the build directory or
 * share/pfi/data beside the bin/ directory of this executable (found through
 * /proc/self/exe); else the source tree the binary was built from.
 */
static const char *embedded_data_dir(void)
{
    static char dir[4096];
    const char *env = getenv("PFI_DATA_DIR");
    if (env != NULL && env[0] != '\0')
        return env;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash != NULL) {
            *slash = '\0';
            static const char *const rel[] = {"../data", "../share/pfi/data"};
            for (size_t i = 0; i < 2; i++) {
                char manifest[4200];
                snprintf(dir, sizeof dir, "%.2000s/%s", exe, rel[i]);
                snprintf(manifest, sizeof manifest, "%s/zeus_jit_profile/%s", dir,
                         PFI_MANIFEST_NAME);
                char *real = file_exists(manifest) ? realpath(dir, NULL) : NULL;
                if (real != NULL) {
                    snprintf(dir, sizeof dir, "%s", real);
                    free(real);
                    return dir;
                }
            }
        }
    }
    return PFI_DEFAULT_DATA_DIR;
}

int cmd_analyze(int argc, char **argv)
{
    settings s;
    memset(&s, 0, sizeof s);
    pfi_options_init(&s.options);
    s.format = "table";
    int rc = parse_args(argc, argv, &s);
    if (rc != PFI_EXIT_OK) {
        pfi_mapping_clear(&s.flags);
        return rc < 0 ? PFI_EXIT_OK : rc;
    }
    double t_start = now_s();
    pfi_runs_table *t = NULL;
    if (pfi_runs_table_create(&t) != PFI_OK) {
        cli_error("out of memory");
        pfi_mapping_clear(&s.flags);
        return PFI_EXIT_INTERNAL;
    }
    char default_dirs[2][4200];
    char *defaults[2] = {default_dirs[0], default_dirs[1]};
    char *const *inputs = argv + optind;
    int n_inputs = argc - optind;
    /* -o naming an input would replace what was read (a directory input is not a file) */
    rc = cli_output_not_input(s.output, s.db);
    if (rc == PFI_EXIT_OK)
        rc = cli_output_not_input(s.output, s.manifest);
    for (int i = 0; rc == PFI_EXIT_OK && i < n_inputs; i++)
        rc = cli_output_not_input(s.output, inputs[i]);
    if (rc == PFI_EXIT_OK && s.db != NULL)
        rc = cli_load_db(s.db, t);
    if (n_inputs == 0 && s.db == NULL) {
        const char *data = embedded_data_dir();
        snprintf(default_dirs[0], sizeof default_dirs[0], "%s/zeus_nsdi23_power", data);
        snprintf(default_dirs[1], sizeof default_dirs[1], "%s/zeus_jit_profile", data);
        inputs = defaults;
        n_inputs = 2;
    }
    int stdin_inputs = 0;
    for (int i = 0; i < n_inputs; i++)
        stdin_inputs += strcmp(inputs[i], "-") == 0;
    if (stdin_inputs > 1) {
        cli_error("standard input ('-') can be read only once");
        rc = PFI_EXIT_USAGE;
    }
    double noise_rel = s.options.noise_rel;
    bool noise_from_manifest = false;
    for (int i = 0; rc == PFI_EXIT_OK && i < n_inputs; i++)
        rc = load_input(&s, inputs[i], t, &noise_rel, &noise_from_manifest);
    s.options.noise_rel = noise_rel;
    if (rc == PFI_EXIT_OK && t->n_groups == 0) {
        cli_error("no sweep group found in the inputs");
        rc = PFI_EXIT_DATA;
    }
    pfi_result *results = NULL;
    double t_loaded = now_s(), t_computed = t_loaded;
    if (rc == PFI_EXIT_OK) {
        results = calloc(t->n_groups, sizeof *results);
        pfi_error e = results ? pfi_analyze(t, &s.options, results) : PFI_ERR_NOMEM;
        t_computed = now_s();
        if (e != PFI_OK) {
            cli_error("analysis failed: %s", pfi_strerror(e));
            rc = cli_exit_code(e) == PFI_EXIT_USAGE ? PFI_EXIT_USAGE : PFI_EXIT_INTERNAL;
        }
    }
    if (rc == PFI_EXIT_OK) {
        analyze_report rep = {
            .table = t, .results = results, .options = &s.options, .show_points = s.points};
        rc = write_outputs(&s, &rep);
    }
    double t_end = now_s();
    if (s.timing && results != NULL)
        fprintf(stderr, "pfi: timing: load_s=%.6f compute_s=%.6f output_s=%.6f\n",
                t_loaded - t_start, t_computed - t_loaded, t_end - t_computed);
    for (size_t g = 0; results && g < t->n_groups; g++)
        pfi_result_clear(&results[g]);
    free(results);
    pfi_runs_table_destroy(t);
    pfi_mapping_clear(&s.flags);
    return rc;
}
