/*
 * pfi allocate — per-job power caps under a cluster power budget.
 */
#include <getopt.h>
#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "fmt_num.h"
#include "pfi/allocate.h"
#include "pfi/csv.h"
#include "pfi/curve.h"
#include "pfi/jobs.h"
#include "pfi/topology.h"
#include "pfi/value.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pfi allocate [OPTIONS] JOBS.csv|-\n"
            "\n"
            "Choose every job's per-GPU power cap so the cluster draws at most a budget and keeps\n"
            "the most tokens/s (paper section 6). JOBS.csv has one row per curve point:\n"
            "  job,cap_w,power_w,tput_tok_s  (required: per-GPU cap W, whole-job power W and\n"
            "                                 tokens/s measured at that cap)\n"
            "  class,gpus,weight,floor,pfi,feature,cap_min_w,cap_max_w,band,node  (optional,\n"
            "                                 per job; band: priority, a number in\n"
            "                                 [-1e6, 1e6], higher kept longer; node: its\n"
            "                                 level in --topology)\n"
            "A curve whose power or throughput falls as the cap rises is reported and repaired\n"
            "by isotonic regression (pool adjacent violators) unless --no-repair.\n"
            "\n"
            "budget (one of):\n"
            "  --budget-w W           cluster budget in watts (0 to 1e12)\n"
            "  --budget-kind K        measured (default): predicted drawn power <= budget;\n"
            "                         reserve: the sum of the caps (GPUs x cap) <= budget\n"
            "  --reduction R          shed R of the jobs' uncapped power: a fraction (0.3) or a\n"
            "                         percentage (30%%), the same; a bare number > 1 is refused\n"
            "                         (default 30%%)\n"
            "\n"
            "allocation:\n");
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    cli_names names;
    cli_strategy_names(&names);
    cli_usage_list(f, "  --strategy S           ", 25, 80, &names,
                   &(cli_list_style){.sep = ", ", .first = pfi_strategy_name(o.strategy)},
                   " (man pfi-allocate)");
    fprintf(f,
            "  --cap-step W           caps on multiples of W watts (0: continuous); a W larger\n"
            "                         than every job's cap range is refused (exit 2)\n"
            "  --deep-class NAME      class-weighted: the class cut deeper (moe-ft)\n"
            "  --class-factor F       class-weighted: how much deeper (2)\n"
            "  --no-repair            a non-monotone curve is an error\n"
            "  --topology FILE        the power tree: every level's limit holds too (lines\n"
            "                         'LEVEL NAME PARENT LIMIT_W [reserve|measured]');\n"
            "                         a job with no node runs under the top level\n"
            "\n"
            "output:\n"
            "  --format table|csv|json  (table)\n"
            "  -o, --output FILE      write there instead of stdout (atomically)\n"
            "  --explain              table: each job's marginal tokens/s per W below and above\n"
            "                         its cap, and why it got that cap\n"
            "  -h, --help             this help\n"
            "\n"
            "Exit codes: 0 success (also when the budget cannot be met: the output says by how\n"
            "much), 1 bad or missing input, 2 bad command line, 3 output not written,\n"
            "4 internal error.\n");
}

enum {
    OPT_BUDGET = 256,
    OPT_REDUCTION,
    OPT_STRATEGY,
    OPT_CAP_STEP,
    OPT_DEEP,
    OPT_FACTOR,
    OPT_NO_REPAIR,
    OPT_FORMAT,
    OPT_EXPLAIN,
    OPT_TOPOLOGY,
    OPT_BUDGET_KIND
};

static const struct option long_options[] = {
    {"budget-w", required_argument, NULL, OPT_BUDGET},
    {"reduction", required_argument, NULL, OPT_REDUCTION},
    {"strategy", required_argument, NULL, OPT_STRATEGY},
    {"cap-step", required_argument, NULL, OPT_CAP_STEP},
    {"deep-class", required_argument, NULL, OPT_DEEP},
    {"class-factor", required_argument, NULL, OPT_FACTOR},
    {"no-repair", no_argument, NULL, OPT_NO_REPAIR},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"output", required_argument, NULL, 'o'},
    {"explain", no_argument, NULL, OPT_EXPLAIN},
    {"topology", required_argument, NULL, OPT_TOPOLOGY},
    {"budget-kind", required_argument, NULL, OPT_BUDGET_KIND},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void json_num(FILE *f, double v)
{
    char b[32];
    if (isnan(v) || isinf(v))
        fputs("null", f);
    else
        fwrite(b, 1, (size_t)fmt_g10(b, v), f);
}

/* A JSON string (a job or level name from a file: invalid UTF-8 as U+FFFD). Printable ASCII
   without '"' or '\\' (the usual name) is written as it is, in one write; anything else by
   cli_put_json_text (the same bytes for such a name). */
/* The length of s when it is such a name of at most 256 bytes, else SIZE_MAX. */
static size_t json_plain(const char *s)
{
    size_t n = 0;
    if (s == NULL)
        return SIZE_MAX;
    while (n < 256 && s[n] >= 0x20 && s[n] < 0x7f && s[n] != '"' && s[n] != '\\')
        n++;
    return s[n] == '\0' ? n : SIZE_MAX;
}

static void json_str(FILE *f, const char *s)
{
    size_t n = json_plain(s);
    if (n == SIZE_MAX) {
        cli_put_json_text(f, s);
        return;
    }
    char b[256 + 2];
    b[0] = '"';
    memcpy(b + 1, s, n);
    b[n + 1] = '"';
    fwrite(b, 1, n + 2, f);
}

/* The power tree of --topology (or a reserve budget alone): the levels, each job's level,
 * and what the allocation left at each level. on: the tree allocator ran and the output shows
 * the tree's figures; bands: the tree allocator ran on the site budget alone only because the
 * jobs are in more than one priority band (the flat allocator has no bands), the output is
 * the flat one's. */
typedef struct tree_ctx {
    bool on, bands;
    bool multi_band; /* the jobs are in more than one band (with --topology too) */
    pfi_topology *topo;
    size_t *job_node;
    pfi_alloc_tree t;
    pfi_alloc_tree_result tr;
} tree_ctx;

/* What job j's bound_level says for the site budget: a space never occurs in a level's NAME
 * (a topology line's fields are split at white space), so it is never a level's. */
#define BOUND_BUDGET "site budget"

/* The limit that holds job j on a tree (--topology): the nearest level above the job's node
 * whose limit binds, its NAME returned (borrowed from tc) and its kind in *kind; else the site
 * budget when it binds (BOUND_BUDGET, *kind = budget_kind); else NULL (nothing binds above
 * the job). The same limit as --explain's "why". */
static const char *job_bound(const tree_ctx *tc, pfi_limit_kind budget_kind, size_t j,
                             pfi_limit_kind *kind)
{
    for (size_t a = tc->job_node[j]; tc->topo != NULL && a != PFI_TOPO_NONE;
         a = tc->topo->parent[a])
        if (tc->tr.binding[a]) {
            *kind = tc->topo->kind[a];
            return tc->topo->name[a];
        }
    *kind = budget_kind;
    return tc->tr.budget_binding ? BOUND_BUDGET : NULL;
}

/* The solver's relative tolerance on sums of tokens/s: the objective and the envelope's bound
 * are sums of the same terms in other orders, so they can differ by rounding alone. */
#define GAP_TOL 1e-9

/* The upper bound shown: the bound, or the objective when the two differ by less than
 * GAP_TOL of it (a rounding residue, 2.91e-11 at 224 000 tokens/s). The gap shown is then an
 * exact 0, never a tiny negative number: the bound is never below the objective. */
static double shown_bound(const pfi_alloc_result *r)
{
    double ub = r->upper_bound, obj = r->objective;
    if (isfinite(ub) && isfinite(obj) && fabs(ub - obj) <= GAP_TOL * (1 + fabs(obj)))
        return obj;
    return ub;
}

/* What bound: the site budget and every level whose limit binds, with its kind. */
static void write_bound(FILE *f, const pfi_alloc_result *r, const tree_ctx *tc,
                        pfi_limit_kind budget_kind)
{
    /* The flat budget binds when it is met with equality, or when a job was cut below its
     * reference although the budget is not spent to the watt: --cap-step rounding leaves
     * less than one step unspent (each job moves in whole steps of its GPUs). */
    bool shed = false;
    for (size_t j = 0; j < r->n && !shed; j++)
        shed = r->shed_w[j] > 1e-9;
    bool full = r->total_power_w >= r->budget_w * (1 - 1e-9) - 1e-9;
    bool site = tc->on ? tc->tr.budget_binding : r->feasible && (full || shed);
    fprintf(f, "bound by:");
    size_t k = 0;
    if (site) {
        fprintf(f, " the site budget (%s)", pfi_limit_kind_name(budget_kind));
        if (!tc->on && !full)
            fprintf(f, "; %.1f W of it unspent: no job's next cap step fits",
                    r->budget_w - r->total_power_w);
        k++;
    }
    for (size_t a = 0; tc->on && tc->topo != NULL && a < tc->topo->n; a++)
        if (tc->tr.binding[a]) {
            if (k++ == 8) {
                fprintf(f, ", ... (%zu levels in all)", tc->tr.n_binding);
                break;
            }
            char sl[CLI_SAFE_CELL], sn[CLI_SAFE_CELL]; /* names from the file, escaped */
            const char *lv = tc->topo->level[a], *nm = tc->topo->name[a];
            fprintf(f, "%s %s '%s' (%s)", k > 1 ? "," : "", cli_safe(sl, sizeof sl, lv, strlen(lv)),
                    cli_safe(sn, sizeof sn, nm, strlen(nm)),
                    pfi_limit_kind_name(tc->topo->kind[a]));
        }
    if (k == 0)
        fprintf(f, r->feasible ? " nothing (every job at its upper bound)"
                               : " nothing: infeasible (every job at its lower bound)");
    fputc('\n', f);
}

/* The levels' table: limit, kind, the caps' sum and the drawn power under each, binding. */
static void write_levels(FILE *f, const tree_ctx *tc)
{
    if (!tc->on || tc->topo == NULL)
        return;
    const pfi_topology *T = tc->topo;
    /* the level and name columns as wide as their longest value (names are not cut) */
    int wl = 8, wn = 20;
    for (size_t a = 0; a < T->n; a++) {
        wl = cli_safe_width(T->level[a], wl, 64);
        wn = cli_safe_width(T->name[a], wn, 256);
    }
    fprintf(f, "\n%-*s %-*s %-*s %-8s %11s %11s %11s  %s\n", wl, "level", wn, "name", wn, "parent",
            "kind", "limit_w", "caps_sum_w", "drawn_w", "binds");
    for (size_t a = 0; a < T->n; a++) {
        /* names from the file escaped (cli_safe): no raw control character */
        char sl[CLI_SAFE_CELL], sn[CLI_SAFE_CELL], sp[CLI_SAFE_CELL];
        const char *lv = T->level[a], *nm = T->name[a];
        const char *par = T->parent[a] == PFI_TOPO_NONE ? "-" : T->name[T->parent[a]];
        fprintf(f, "%-*s %-*s %-*s %-8s %11s %11.1f %11.1f  %s\n", wl,
                cli_safe(sl, sizeof sl, lv, strlen(lv)), wn,
                cli_safe(sn, sizeof sn, nm, strlen(nm)), wn,
                cli_safe(sp, sizeof sp, par, strlen(par)), pfi_limit_kind_name(T->kind[a]),
                cli_num(T->limit_w[a], 'f', 1, "-").s, tc->tr.reserve_w[a], tc->tr.drawn_w[a],
                tc->tr.binding[a] ? "yes" : "no");
    }
}

/* Infeasible at a level of the tree while the site budget holds (the shortfall is then the
 * most a level's limit is over, and the library's warning names it). */
static bool level_short(const pfi_alloc_result *r, const tree_ctx *tc, pfi_limit_kind kind)
{
    double site = kind == PFI_LIMIT_RESERVE ? tc->tr.site_reserve_w : tc->tr.site_drawn_w;
    return !r->feasible && (tc->on || tc->bands) && site <= r->budget_w * (1 + 1e-9) + 1e-9;
}

static const char *fmt_tput(char *b, double v);

static void write_summary(FILE *f, const pfi_alloc_result *r, pfi_strategy st, const tree_ctx *tc,
                          pfi_limit_kind kind)
{
    fprintf(f, "strategy %s: %s\n", pfi_strategy_name(st), r->method);
    fprintf(f, "budget kind: %s (%s)\n", pfi_limit_kind_name(kind),
            kind == PFI_LIMIT_RESERVE ? "the sum of the caps, GPUs x cap, stays within it"
                                      : "the predicted drawn power stays within it");
    /* the reduction in words: never "undefined%", never a negative percentage */
    double red = 100 * (1 - r->budget_w / r->ref_power_w);
    char red_text[64];
    if (!isfinite(red))
        snprintf(red_text, sizeof red_text, "reduction undefined: no uncapped power");
    else if (red < 0)
        snprintf(red_text, sizeof red_text, "no reduction: the budget is above it");
    else
        snprintf(red_text, sizeof red_text, "%.1f%% reduction", red);
    fprintf(f, "budget %.1f W of %.1f W uncapped (%s); lowest possible %.1f W\n", r->budget_w,
            r->ref_power_w, red_text, r->min_power_w);
    if (level_short(r, tc, kind))
        fprintf(f,
                "INFEASIBLE: a level's limit is below the least its jobs can take, by %.1f W "
                "at the most (see the warning); the jobs under it stay at their lowest caps\n",
                r->shortfall_w);
    else if (!r->feasible)
        fprintf(f,
                "INFEASIBLE: the jobs draw at least %.1f W at their lowest caps, %.1f W over "
                "the budget; every job is at its lowest cap\n",
                r->min_power_w, r->shortfall_w);
    double kept = 100 * r->total_tput_tok_s / r->ref_tput_tok_s;
    char kept_text[48] = "share kept undefined: no uncapped throughput";
    if (isfinite(kept))
        snprintf(kept_text, sizeof kept_text, "%.1f%% kept", kept);
    char tb[2][32]; /* four significant digits at least (fmt_tput): relative units too */
    fprintf(f, "drawn %.1f W; throughput %s tokens/s of %s uncapped (%s)\n", r->total_power_w,
            fmt_tput(tb[0], r->total_tput_tok_s), fmt_tput(tb[1], r->ref_tput_tok_s), kept_text);
    if (isfinite(r->upper_bound) && isfinite(r->objective)) {
        /* below 1 (relative units) four significant digits, as the throughputs */
        char ob[2][32];
        if (fabs(r->objective) < 1 && fabs(shown_bound(r)) < 1) {
            fmt_tput(ob[0], r->objective);
            fmt_tput(ob[1], shown_bound(r));
        } else {
            snprintf(ob[0], sizeof ob[0], "%.3f", r->objective);
            snprintf(ob[1], sizeof ob[1], "%.3f", shown_bound(r));
        }
        fprintf(f, "objective %s, upper bound %s (gap %.3g)\n", ob[0], ob[1],
                shown_bound(r) - r->objective);
    }
    if (tc->on)
        fprintf(f, "caps sum %.1f W; drawn %.1f W\n", tc->tr.site_reserve_w, tc->tr.site_drawn_w);
    write_bound(f, r, tc, kind);
    if (r->floors_unmet > 0)
        fprintf(f, "warning: %zu floors exceed the job's throughput at its top cap: held there\n",
                r->floors_unmet);
}

/* v as printf's "%.1f" (a value the job lacks: "-"), without printf for the usual case:
 * |v| < 1e15 and v x 10 not within 1e-6 of a tie is rounded exactly by nearbyint, so the
 * digits are printf's; anything else goes to snprintf. b has room for 32 bytes. */
static const char *fmt1(char *b, double v)
{
    if (!isfinite(v))
        return "-";
    /* |x| rounded by adding and taking away 2^52 (below 2^52; above, |x| is whole already),
       its fraction by truncation: nearbyint and trunc without their calls */
    double x = v * 10, ax = fabs(x), t = ax < 0x1p52 ? (ax + 0x1p52) - 0x1p52 : ax;
    if (!(fabs(v) < 1e15) || fabs(fabs(ax - (double)(int64_t)ax) - 0.5) < 1e-6) {
        snprintf(b, 32, "%.1f", v);
        return b;
    }
    unsigned long long u = (unsigned long long)t;
    size_t k = 0;
    if (signbit(v)) /* "-0.0" too, as printf writes a negative that rounds to zero */
        b[k++] = '-';
    if (u < 100000000) { /* the digits of u by SWAR (fmt_digits8), at least two of them */
        uint64_t d = fmt_digits8((uint32_t)u);
        int lead = d != 0 ? __builtin_ctzll(d) >> 3 : 8;
        lead = lead < 6 ? lead : 6;
        int nint = 7 - lead; /* the digits before the point */
        uint64_t w = (d | UINT64_C(0x3030303030303030)) >> (8 * lead);
        memcpy(b + k, &w, sizeof w);
        b[k + (size_t)nint] = '.';
        b[k + (size_t)nint + 1] = (char)('0' + (d >> 56));
        b[k + (size_t)nint + 2] = '\0';
        return b;
    }
    char tmp[32];
    size_t n = 0;
    tmp[n++] = (char)('0' + u % 10);
    tmp[n++] = '.';
    u /= 10;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u > 0);
    while (n > 0)
        b[k++] = tmp[--n];
    b[k] = '\0';
    return b;
}

/* A throughput v (tokens/s, or the relative units of a normalised curve such as the Phoenix
 * demonstration's, 0.0475) for the table and its summary, to four significant digits at
 * least: from 100 up as "%.1f" (fmt1, as before), below with as many decimals as four
 * significant digits need (0.04750, 1.500, 52.34), below 1e-9 as "%.4g"; 0 as "0.0"; a value
 * the job lacks "-". b has room for 32 bytes. */
static const char *fmt_tput(char *b, double v)
{
    double a = fabs(v);
    if (!isfinite(v) || a >= 100 || a == 0)
        return fmt1(b, v);
    int dec = 3 - (int)floor(log10(a));
    if (dec > 12)
        snprintf(b, 32, "%.4g", v);
    else
        snprintf(b, 32, "%.*f", dec < 1 ? 1 : dec, v);
    return b;
}

/* --explain on a tree: where job j stands on its curve, and the limit that holds it there
 * (the lowest binding level above it, else the site budget when it binds). */
static void write_tree_why(FILE *f, const pfi_jobs *J, const pfi_alloc_result *r, pfi_strategy st,
                           const tree_ctx *tc, pfi_limit_kind kind, size_t j, bool at_top,
                           bool at_bottom)
{
    char by[800] = "";
    for (size_t a = tc->job_node[j]; tc->topo != NULL && a != PFI_TOPO_NONE;
         a = tc->topo->parent[a])
        if (tc->tr.binding[a]) {
            char sl[4 * 40 + 4], sn[4 * 120 + 4]; /* names from the file, escaped */
            const char *lv = tc->topo->level[a], *nm = tc->topo->name[a];
            double lim = tc->topo->limit_w[a];
            double used =
                tc->topo->kind[a] == PFI_LIMIT_RESERVE ? tc->tr.reserve_w[a] : tc->tr.drawn_w[a];
            /* over its limit with its jobs at their lowest caps: short, not merely binding */
            snprintf(by, sizeof by, "%s '%s' (%s limit %.1f W) %s",
                     pfi_escape(sl, sizeof sl, lv, strlen(lv), 40),
                     pfi_escape(sn, sizeof sn, nm, strlen(nm), 120),
                     pfi_limit_kind_name(tc->topo->kind[a]), lim,
                     used > lim * (1 + 1e-9) + 1e-9
                         ? "is below what its jobs take at their lowest caps"
                         : "binds");
            break;
        }
    if (by[0] == '\0' && tc->tr.budget_binding)
        snprintf(by, sizeof by, "the site budget (%s, %.1f W) binds", pfi_limit_kind_name(kind),
                 r->budget_w);
    if (at_top) {
        fputs("at its top cap", f);
    } else if (at_bottom) {
        fprintf(f, "at its lowest allowed cap%s%s", by[0] ? ": " : "", by);
    } else if (st == PFI_STRATEGY_ORACLE) {
        fprintf(f, "a W above earns %.4g <= %.4g a W below%s%s", r->marginal_up[j],
                r->marginal_down[j], by[0] ? "; " : "", by);
    } else {
        size_t last = J->offset[j + 1] - 1;
        fprintf(f, "sheds %.1f%% of its power (its share under %s)%s%s",
                100 * r->shed_w[j] / J->power_w[last], pfi_strategy_name(st), by[0] ? "; " : "",
                by);
    }
    if (tc->multi_band && !at_top) { /* a cut taken from the lower bands first */
        char bt[PFI_BAND_TEXT];
        fprintf(f, "; band %s (the lower bands are cut first)",
                pfi_band_format(isfinite(J->band[j]) ? J->band[j] : 0, bt));
    }
}

/* The length of s when it is printable ASCII alone (what cli_safe leaves as it is), else
   SIZE_MAX. */
static size_t plain_len(const char *s)
{
    size_t n = 0;
    while (s[n] >= 0x20 && s[n] < 0x7f)
        n++;
    return s[n] == '\0' && n + 4 <= CLI_SAFE_CELL ? n : SIZE_MAX;
}

/* cli_safe(buf, CLI_SAFE_CELL, s, strlen(s)) without the copy for a plain s (s itself). */
static const char *safe_cell(char *buf, const char *s)
{
    return plain_len(s) != SIZE_MAX ? s : cli_safe(buf, CLI_SAFE_CELL, s, strlen(s));
}

/* cli_safe_width(s, lo, hi), as safe_cell. */
static int safe_width(const char *s, int lo, int hi)
{
    size_t n = s != NULL ? plain_len(s) : SIZE_MAX;
    if (n == SIZE_MAX)
        return cli_safe_width(s, lo, hi);
    return n < (size_t)lo ? lo : n > (size_t)hi ? hi : (int)n;
}

/* s appended to row[0..n) padded with spaces to w bytes: after it (left), or before it (as
   printf's "%-*s" and "%*s"); returns the row's new length. */
static size_t put_cell(char *row, size_t n, const char *s, int w, bool left)
{
    size_t len = strlen(s), pad = w > 0 && (size_t)w > len ? (size_t)w - len : 0;
    if (!left) {
        memset(row + n, ' ', pad);
        n += pad;
    }
    memcpy(row + n, s, len);
    n += len;
    if (left) {
        memset(row + n, ' ', pad);
        n += pad;
    }
    return n;
}

/* g as printf's "%.0f" (b: 48 bytes): a whole number below 10^15 by its digits. */
static const char *fmt0(char *b, double g)
{
    if (!(g >= 0 && g < 1e15 && g == floor(g))) {
        snprintf(b, 48, "%.0f", g);
        return b;
    }
    unsigned long long u = (unsigned long long)g;
    char *p = b + 47;
    *p = '\0';
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u > 0);
    return p;
}

static void write_table(FILE *f, const pfi_jobs *J, const pfi_alloc_result *r, pfi_strategy st,
                        bool explain, const tree_ctx *tc, pfi_limit_kind kind)
{
    write_summary(f, r, st, tc, kind);
    write_levels(f, tc);
    /* the job and class columns as wide as their longest value (names are not cut: two jobs
       alike in their first 24 characters stay apart) */
    int wj = 24, wc = 8;
    for (size_t j = 0; j < J->n; j++) {
        wj = safe_width(J->name[j], wj, 256);
        wc = safe_width(J->job_class[j], wc, 64);
    }
    /* with --topology: the job's node and band, and the limit that holds it (job_bound) */
    bool topo = tc->on && tc->topo != NULL;
    int wnode = 4, wby = 11;
    for (size_t j = 0; topo && j < J->n; j++) {
        pfi_limit_kind k;
        const char *by = job_bound(tc, kind, j, &k);
        wnode = safe_width(J->node[j] != NULL ? J->node[j] : "-", wnode, 256);
        wby = safe_width(by != NULL ? by : "-", wby, 256);
    }
    fprintf(f, "\n%-*s %-*s %5s %9s %11s %10s %13s %6s", wj, "job", wc, "class", "gpus", "cap_w",
            "power_w", "shed_w", "tput_tok_s", "kept");
    if (topo)
        fprintf(f, " %-*s %4s %-*s %-10s", wnode, "node", "band", wby, "bound_level", "bound_kind");
    if (explain)
        fprintf(f, " %11s %11s  why", "tok/s/W-dn", "tok/s/W-up");
    fputc('\n', f);
    for (size_t j = 0; j < J->n; j++) {
        size_t last = J->offset[j + 1] - 1;
        /* a value the job lacks (no marginal at an end of its curve) is "-" */
        char b[5][32], kept[40]; /* missing: "-", never "-%" */
        kept[0] = '-';
        kept[1] = '\0';
        double kp = 100 * r->tput_tok_s[j] / J->tput_tok_s[last];
        if (isfinite(kp)) {
            const char *k = fmt1(b[4], kp);
            size_t kl = strlen(k);
            memcpy(kept, k, kl);
            memcpy(kept + kl, "%", 2);
        }
        char sn[CLI_SAFE_CELL], sc[CLI_SAFE_CELL]; /* names escaped (cli_safe) */
        const char *cls = J->job_class[j] ? J->job_class[j] : "-";
        /* the row as "%-*s %-*s %5.0f %9s %11s %10s %13s %6s" writes it, in one write */
        static char row[4 * CLI_SAFE_CELL + 640];
        char gb[48];
        size_t n = put_cell(row, 0, safe_cell(sn, J->name[j]), wj, true);
        row[n++] = ' ';
        n = put_cell(row, n, safe_cell(sc, cls), wc, true);
        row[n++] = ' ';
        n = put_cell(row, n, fmt0(gb, isnan(J->gpus[j]) ? 1 : J->gpus[j]), 5, false);
        const char *cells[] = {fmt1(b[0], r->cap_w[j]), fmt1(b[1], r->power_w[j]),
                               fmt1(b[2], r->shed_w[j]), fmt_tput(b[3], r->tput_tok_s[j]), kept};
        const int widths[] = {9, 11, 10, 13, 6};
        for (size_t k = 0; k < 5; k++) {
            row[n++] = ' ';
            n = put_cell(row, n, cells[k], widths[k], false);
        }
        if (topo) {
            char snode[CLI_SAFE_CELL], sby[CLI_SAFE_CELL], bb[32] = "-";
            pfi_limit_kind bk;
            const char *by = job_bound(tc, kind, j, &bk);
            if (isfinite(J->band[j]))
                fmt_g10(bb, J->band[j]);
            row[n++] = ' ';
            n = put_cell(row, n, safe_cell(snode, J->node[j] != NULL ? J->node[j] : "-"), wnode,
                         true);
            row[n++] = ' ';
            n = put_cell(row, n, bb, 4, false);
            row[n++] = ' ';
            n = put_cell(row, n, by != NULL ? safe_cell(sby, by) : "-", wby, true);
            row[n++] = ' ';
            n = put_cell(row, n, by != NULL ? pfi_limit_kind_name(bk) : "-", explain ? 10 : 0,
                         true);
        }
        if (!explain)
            row[n++] = '\n';
        fwrite(row, 1, n, f);
        if (!explain)
            continue;
        { /* --explain: the marginals and why, after the row */
            fprintf(f, " %11s %11s  ", cli_num(r->marginal_down[j], 'g', 4, "-").s,
                    cli_num(r->marginal_up[j], 'g', 4, "-").s);
            bool at_top = isnan(r->marginal_up[j]), at_bottom = isnan(r->marginal_down[j]);
            if (tc->on || tc->bands) { /* bands alone: the tree allocator on the site budget */
                write_tree_why(f, J, r, st, tc, kind, j, at_top, at_bottom);
            } else if (st == PFI_STRATEGY_ORACLE && !isnan(r->lambda)) {
                if (at_top)
                    fprintf(f,
                            "at its top cap: every W earns more here than the threshold "
                            "%.4g",
                            r->lambda);
                else if (at_bottom)
                    fprintf(f, "at its lowest cap: a W here earns less than the threshold %.4g",
                            r->lambda);
                else
                    fprintf(f, "a W above earns %.4g <= threshold %.4g <= %.4g a W below",
                            r->marginal_up[j], r->lambda, r->marginal_down[j]);
            } else if (at_top) {
                fputs("at its top cap", f);
            } else if (at_bottom) {
                fputs("at its lowest allowed cap", f);
            } else {
                fprintf(f, "sheds %.1f%% of its power (its share under %s)",
                        100 * r->shed_w[j] / J->power_w[last], pfi_strategy_name(st));
            }
        }
        fputc('\n', f);
    }
}

/* The text s appended to the rows row[0..n) as a CSV field: copied when it needs no quotes and
   is short (the common case), else the rows so far written and s through pfi_csv_write_field;
   returns the rows' new length. NULL: nothing. */
static size_t row_text(FILE *f, char *row, size_t n, const char *s)
{
    if (s == NULL)
        return n;
    /* the usual name (at most 256 bytes, no byte that needs quotes, no blank at either end)
       copied while it is checked; anything else quoted by pfi_csv_write_field */
    size_t len = 0;
    for (; len <= 256 && s[len] != '\0'; len++) {
        char c = s[len];
        if (c == ',' || c == '"' || c == '\r' || c == '\n')
            break;
        row[n + len] = c;
    }
    if (s[len] == '\0' && len <= 256 &&
        (len == 0 || (s[0] != ' ' && s[0] != '\t' && s[len - 1] != ' ' && s[len - 1] != '\t')))
        return n + len;
    /* the row so far, then the field in one write (f may be unbuffered: not a byte a write) */
    fwrite(row, 1, n, f);
    size_t need = pfi_csv_format_field(NULL, 0, s);
    char *q = malloc(need + 1);
    if (q != NULL) {
        pfi_csv_format_field(q, need + 1, s);
        fwrite(q, 1, need, f);
        free(q);
    } else {
        pfi_csv_write_field(f, s);
    }
    return 0;
}

/* CSV: one row per job; on a tree the job's node and band, and with --topology the limit
 * that holds it (bound_level, bound_kind: job_bound; empty when nothing binds above it). */
static void write_csv(FILE *f, const pfi_jobs *J, const pfi_alloc_result *r, const tree_ctx *tc,
                      pfi_limit_kind budget_kind)
{
    fputs("job,class,gpus,cap_w,power_w,shed_w,tput_tok_s,tput_ref_tok_s,marginal_down,"
          "marginal_up",
          f);
    bool topo = tc->on && tc->topo != NULL;
    fputs(topo ? ",node,band,bound_level,bound_kind\n" : tc->on ? ",node,band\n" : "\n", f);
    /* the rows gathered, one write per MiB (f is unbuffered: no copy into its buffer), from
       the heap (where the allocator's freed workspace lies), else 64 KiB on the stack: a row
       adds names, class, node and bound level up to 256 bytes, 10 numbers of at most 32 and
       a kind */
    enum { SMALL = 1 << 16, LARGE = 1 << 20, ROOM = 4 * 257 + 10 * 33 + 16 };
    char small[SMALL + ROOM];
    char *heap = malloc(LARGE + ROOM), *row = heap != NULL ? heap : small;
    size_t chunk = heap != NULL ? LARGE : SMALL;
    size_t n = 0;
    for (size_t j = 0; j < J->n; j++) {
        n = row_text(f, row, n, J->name[j]);
        row[n++] = ',';
        n = row_text(f, row, n, J->job_class[j]);
        double v[] = {J->gpus[j],          r->cap_w[j],      r->power_w[j],
                      r->shed_w[j],        r->tput_tok_s[j], J->tput_tok_s[J->offset[j + 1] - 1],
                      r->marginal_down[j], r->marginal_up[j]};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
            row[n++] = ',';
            if (isfinite(v[k]))
                n += (size_t)fmt_g10(row + n, v[k]);
        }
        if (tc->on) {
            row[n++] = ',';
            n = row_text(f, row, n, J->node[j]);
            row[n++] = ',';
            if (isfinite(J->band[j]))
                n += (size_t)fmt_g10(row + n, J->band[j]);
        }
        if (topo) {
            pfi_limit_kind k;
            const char *by = job_bound(tc, budget_kind, j, &k);
            row[n++] = ',';
            n = row_text(f, row, n, by);
            row[n++] = ',';
            if (by != NULL)
                n = row_text(f, row, n, pfi_limit_kind_name(k));
        }
        row[n++] = '\n';
        if (n >= chunk) {
            fwrite(row, 1, n, f);
            n = 0;
        }
    }
    fwrite(row, 1, n, f);
    free(heap);
}

static void write_json(FILE *f, const pfi_jobs *J, const pfi_alloc_result *r, pfi_strategy st,
                       const tree_ctx *tc, pfi_limit_kind kind)
{
    fprintf(f, "{\n  \"strategy\": \"%s\", \"method\": ", pfi_strategy_name(st));
    json_str(f, r->method);
    bool site = tc->on ? tc->tr.budget_binding
                       : r->feasible && r->total_power_w >= r->budget_w * (1 - 1e-9) - 1e-9;
    fprintf(f, ",\n  \"budget_kind\": \"%s\", \"budget_binding\": %s", pfi_limit_kind_name(kind),
            site ? "true" : "false");
    if (tc->on) {
        fputs(", \"caps_sum_w\": ", f);
        json_num(f, tc->tr.site_reserve_w);
    }
    fprintf(f, ",\n  \"feasible\": %s, \"shortfall_w\": ", r->feasible ? "true" : "false");
    json_num(f, r->shortfall_w);
    const char *keys[] = {"budget_w",      "ref_power_w",      "min_power_w",
                          "total_power_w", "total_tput_tok_s", "ref_tput_tok_s",
                          "objective",     "upper_bound",      "lambda"};
    double vals[] = {r->budget_w,      r->ref_power_w,      r->min_power_w,
                     r->total_power_w, r->total_tput_tok_s, r->ref_tput_tok_s,
                     r->objective,     shown_bound(r),      r->lambda};
    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
        fprintf(f, ", \"%s\": ", keys[k]);
        json_num(f, vals[k]);
    }
    fputs(",\n  \"jobs\": [", f);
    const char *k2[] = {", \"cap_w\": ",      ", \"power_w\": ",       ", \"shed_w\": ",
                        ", \"tput_tok_s\": ", ", \"marginal_down\": ", ", \"marginal_up\": "};
    size_t k2len[6];
    for (size_t k = 0; k < 6; k++)
        k2len[k] = strlen(k2[k]);
    for (size_t j = 0; j < J->n; j++) { /* a job in one write (a name to escape: two) */
        char row[16 + 258 + 6 * (20 + 32) + 4];
        const char *pre = j ? ",\n    {\"job\": " : "\n    {\"job\": ";
        size_t n = strlen(pre), nl = json_plain(J->name[j]);
        memcpy(row, pre, n);
        if (nl == SIZE_MAX) {
            fwrite(row, 1, n, f);
            json_str(f, J->name[j]);
            n = 0;
        } else {
            row[n++] = '"';
            memcpy(row + n, J->name[j], nl);
            n += nl;
            row[n++] = '"';
        }
        double v2[] = {r->cap_w[j],      r->power_w[j],       r->shed_w[j],
                       r->tput_tok_s[j], r->marginal_down[j], r->marginal_up[j]};
        for (size_t k = 0; k < 6; k++) {
            memcpy(row + n, k2[k], k2len[k]);
            n += k2len[k];
            if (isnan(v2[k]) || isinf(v2[k])) {
                memcpy(row + n, "null", 4);
                n += 4;
            } else {
                n += (size_t)fmt_g10(row + n, v2[k]);
            }
        }
        if (tc->on && tc->topo != NULL) { /* the job's place in the tree and what holds it */
            fwrite(row, 1, n, f);
            n = 0;
            fputs(", \"node\": ", f);
            if (J->node[j] != NULL)
                json_str(f, J->node[j]);
            else
                fputs("null", f);
            fputs(", \"band\": ", f);
            json_num(f, J->band[j]);
            pfi_limit_kind bk;
            const char *by = job_bound(tc, kind, j, &bk);
            fputs(", \"bound_level\": ", f);
            if (by != NULL) {
                json_str(f, by);
                fprintf(f, ", \"bound_kind\": \"%s\"", pfi_limit_kind_name(bk));
            } else {
                fputs("null, \"bound_kind\": null", f);
            }
        }
        row[n++] = '}';
        fwrite(row, 1, n, f);
    }
    fputs("\n  ]", f);
    if (tc->on && tc->topo != NULL) {
        const pfi_topology *T = tc->topo;
        fputs(",\n  \"levels\": [", f);
        for (size_t a = 0; a < T->n; a++) {
            fputs(a ? ",\n    {\"level\": " : "\n    {\"level\": ", f);
            json_str(f, T->level[a]);
            fputs(", \"name\": ", f);
            json_str(f, T->name[a]);
            fputs(", \"parent\": ", f);
            if (T->parent[a] == PFI_TOPO_NONE)
                fputs("null", f);
            else
                json_str(f, T->name[T->parent[a]]);
            fprintf(f, ", \"kind\": \"%s\", \"limit_w\": ", pfi_limit_kind_name(T->kind[a]));
            json_num(f, T->limit_w[a]);
            fputs(", \"caps_sum_w\": ", f);
            json_num(f, tc->tr.reserve_w[a]);
            fputs(", \"drawn_w\": ", f);
            json_num(f, tc->tr.drawn_w[a]);
            fprintf(f, ", \"binding\": %s}", tc->tr.binding[a] ? "true" : "false");
        }
        fputs("\n  ]", f);
    }
    fputs("\n}\n", f);
}

/* pfi allocate's command line, parsed. */
typedef struct allocate_args {
    pfi_alloc_options o;
    const char *format, *output, *deep_class;
    const char *input;    /* the jobs file, "-": stdin */
    const char *topology; /* --topology, or NULL */
    pfi_limit_kind budget_kind;
    bool explain, no_repair, have_budget, have_reduction, have_kind, have_deep;
} allocate_args;

/* The complaint about a value an option does not take; returns the exit code. */
static int bad_value(int c, const char *value)
{
    return cli_usage_bad_value(cli_option_name(long_options, c), value, NULL);
}

/* Phase 1, the options. An exit code, -1 after --help. */
static int parse_allocate_args(int argc, char **argv, allocate_args *a)
{
    memset(a, 0, sizeof *a);
    pfi_alloc_options_init(&a->o);
    a->format = "table";
    a->deep_class = "moe-ft";
    a->budget_kind = PFI_LIMIT_MEASURED;
    const cli_opt table[] = {
        {.c = 'o', .kind = CLI_OPT_TEXT, .dst = &a->output},
        {.c = OPT_BUDGET,
         .kind = CLI_OPT_DOUBLE,
         .dst = &a->o.budget_w,
         .lo = 0,
         .hi = PFI_TOPO_MAX_W, /* a terawatt: no site draws more; above, a typo or overflow */
         .given = &a->have_budget,
         .error = "watts, 0 to 1e12 (a terawatt: no site draws more)"},
        {.c = OPT_CAP_STEP,
         .kind = CLI_OPT_DOUBLE,
         .dst = &a->o.cap_step_w,
         .lo = 0,
         .hi = HUGE_VAL},
        {.c = OPT_DEEP, .kind = CLI_OPT_TEXT, .dst = &a->deep_class, .given = &a->have_deep},
        {.c = OPT_FACTOR,
         .kind = CLI_OPT_DOUBLE,
         .dst = &a->o.class_factor,
         .lo = 0,
         .lo_open = true,
         .hi = HUGE_VAL},
        {.c = OPT_NO_REPAIR, .kind = CLI_OPT_FLAG, .dst = &a->no_repair},
        {.c = OPT_EXPLAIN, .kind = CLI_OPT_FLAG, .dst = &a->explain},
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":ho:", long_options, NULL)) != -1) {
        const cli_opt *o = cli_opt_find(table, sizeof table / sizeof table[0], c);
        if (o != NULL) {
            if (!cli_opt_take(o, optarg)) { /* what it takes said (o->error; NULL: see --help) */
                cli_opt_complain(long_options, o, optarg);
                return PFI_EXIT_USAGE;
            }
            continue;
        }
        char why[256];
        switch (c) {
        case OPT_REDUCTION: /* "30%" or "0.3": the one parser of every command */
            if (pfi_reduction_parse(optarg, &a->o.reduction, why, sizeof why) != PFI_VALUE_OK) {
                return cli_usage_error("--reduction: %s", why);
            }
            a->have_reduction = true;
            break;
        case 'h':
            usage(stdout);
            return -1;
        case OPT_STRATEGY:
            if (pfi_strategy_parse(optarg, &a->o.strategy) != PFI_OK)
                return bad_value(c, optarg);
            break;
        case OPT_TOPOLOGY:
            a->topology = optarg;
            break;
        case OPT_BUDGET_KIND:
            if (strcmp(optarg, "measured") == 0)
                a->budget_kind = PFI_LIMIT_MEASURED;
            else if (strcmp(optarg, "reserve") == 0)
                a->budget_kind = PFI_LIMIT_RESERVE;
            else
                return bad_value(c, optarg);
            a->have_kind = true;
            break;
        case OPT_FORMAT:
            if (strcmp(optarg, "table") && strcmp(optarg, "csv") && strcmp(optarg, "json"))
                return bad_value(c, optarg);
            a->format = optarg;
            break;
        default: /* '?' or ':' */
            return cli_usage_getopt(long_options, ":ho:", c, argv);
        }
    }
    if (a->have_budget && a->have_reduction) {
        cli_error("give --budget-w or --reduction, not both");
        return PFI_EXIT_USAGE;
    }
    if (optind + 1 != argc) {
        cli_error("give one jobs file (see 'pfi allocate --help')");
        return PFI_EXIT_USAGE;
    }
    a->input = argv[optind];
    return PFI_EXIT_OK;
}

/* Phase 2, the curves: each job's checked for points that fall as the cap rises, and repaired
 * as documented (or refused with --no-repair); deep[j] marks the jobs of --deep-class. An exit
 * code; *deep_out (J->n flags, or NULL after running out of memory) owned by the caller. */
static int check_curves(const allocate_args *a, pfi_jobs *J, unsigned char **deep_out)
{
    *deep_out = NULL;
    size_t maxk = 0;
    for (size_t j = 0; j < J->n; j++)
        if (J->offset[j + 1] - J->offset[j] > maxk)
            maxk = J->offset[j + 1] - J->offset[j];
    double *work = malloc(2 * maxk * sizeof *work);
    unsigned char *deep = calloc(J->n, 1);
    if (work == NULL || deep == NULL) {
        free(work);
        free(deep);
        cli_error("out of memory");
        return PFI_EXIT_INTERNAL;
    }
    int rc = PFI_EXIT_OK;
    bool repair = !a->no_repair, have = false, cls_deep = false;
    const char *last_cls = NULL;
    for (size_t j = 0; j < J->n && rc == PFI_EXIT_OK; j++) {
        size_t first = J->offset[j], k = J->offset[j + 1] - first;
        pfi_curve_report rep;
        if (pfi_curve_check(k, J->cap_w + first, J->power_w + first, J->tput_tok_s + first, &rep) !=
            PFI_OK)
            continue; /* pfi_allocate says what is wrong */
        if (rep.power_violations + rep.tput_violations > 0) {
            cli_error("%s: job '%s': %zu power and %zu throughput points fall as the cap rises "
                      "(largest drops %.4g W, %.4g tokens/s)%s",
                      a->input, J->name[j], rep.power_violations, rep.tput_violations,
                      rep.max_power_drop_w, rep.max_tput_drop,
                      repair ? "; repaired by isotonic regression" : "");
            if (!repair)
                rc = PFI_EXIT_DATA;
            else
                pfi_curve_repair(k, J->power_w + first, J->tput_tok_s + first, work);
        }
        /* a class shared with the job before (the reader keeps one copy of a run of equal
           classes) is compared once */
        if (!have || J->job_class[j] != last_cls) {
            last_cls = J->job_class[j];
            cls_deep = last_cls != NULL && strcmp(last_cls, a->deep_class) == 0;
            have = true;
        }
        deep[j] = cls_deep;
    }
    /* a --deep-class no job has (a typo, another file's class) would cut none deeper unsaid:
       noted, with the file's classes, when given or when class-weighted reads it */
    size_t n_deep = 0;
    for (size_t j = 0; j < J->n; j++)
        n_deep += deep[j];
    if (n_deep == 0 && J->n > 0 && (a->have_deep || a->o.strategy == PFI_STRATEGY_CLASS_WEIGHTED)) {
        char cls[400] = "";
        const char *named[8]; /* each class once, the first 8 (8 compares a job at most) */
        size_t at = 0, shown = 0;
        for (size_t j = 0; j < J->n && shown < 8; j++) {
            if (J->job_class[j] == NULL)
                continue;
            bool seen = false;
            for (size_t i = 0; i < shown && !seen; i++)
                seen = strcmp(named[i], J->job_class[j]) == 0;
            if (seen)
                continue;
            named[shown] = J->job_class[j];
            at += (size_t)snprintf(cls + at, sizeof cls - at, "%s'%.40s'", at ? ", " : "",
                                   J->job_class[j]);
            shown++;
        }
        cli_error("note: --deep-class '%s': no job of %s has that class (%s%s): no job is cut "
                  "deeper",
                  a->deep_class, strcmp(a->input, "-") == 0 ? "(stdin)" : a->input,
                  at ? "its classes: " : "it gives no class", cls);
    }
    free(work);
    *deep_out = deep;
    return rc;
}

/* Phase 3, the tree of --topology (or of a reserve budget): each job's level from its node
 * column. An exit code; tc owned by the caller (tree_ctx_clear). */
static int load_tree(const allocate_args *a, const pfi_jobs *J, tree_ctx *tc, pfi_diag *d)
{
    memset(tc, 0, sizeof *tc);
    double b0 = J->n > 0 && isfinite(J->band[0]) ? J->band[0] : 0; /* absent: band 0 */
    for (size_t j = 1; j < J->n && !tc->multi_band; j++)
        tc->multi_band = (isfinite(J->band[j]) ? J->band[j] : 0) != b0;
    if (a->topology == NULL && a->budget_kind == PFI_LIMIT_MEASURED) {
        /* jobs in more than one band: a one-level tree, the site budget as its only level,
           so that every strategy cuts the lowest band first */
        tc->bands = tc->multi_band;
        if (!tc->bands)
            return PFI_EXIT_OK;
    } else {
        tc->on = true;
    }
    if (a->topology != NULL) {
        FILE *sp; /* a pipe: bounded by PFI_MAX_INPUT_BYTES (cli.h) */
        int src = cli_input_spool("--topology", a->topology, &sp);
        if (src != PFI_EXIT_OK)
            return src;
        cli_note_cut_line(a->topology, sp);
        pfi_error e = sp != NULL ? pfi_topology_read_stream(sp, a->topology, &tc->topo, d)
                                 : pfi_topology_read(a->topology, &tc->topo, d);
        if (sp != NULL)
            fclose(sp);
        if (e != PFI_OK) {
            cli_report(e, d);
            return e == PFI_ERR_NOMEM ? PFI_EXIT_INTERNAL : PFI_EXIT_DATA;
        }
    }
    tc->job_node = malloc((J->n ? J->n : 1) * sizeof *tc->job_node);
    if (tc->job_node == NULL) {
        cli_error("out of memory");
        return PFI_EXIT_INTERNAL;
    }
    /* a job without a node runs under the top level when there is one (so every limit
       counts it), else directly under the site budget (which is above every top level) */
    size_t root = PFI_TOPO_NONE, n_top = 0, n_free = 0;
    for (size_t l = 0; tc->topo != NULL && l < tc->topo->n; l++)
        if (tc->topo->parent[l] == PFI_TOPO_NONE && n_top++ == 0)
            root = l;
    if (n_top != 1)
        root = PFI_TOPO_NONE;
    for (size_t j = 0; j < J->n; j++) {
        tc->job_node[j] = PFI_TOPO_NONE;
        if (tc->topo == NULL)
            continue; /* without --topology every job is under the site budget alone */
        if (J->node[j] == NULL) {
            tc->job_node[j] = root;
            n_free++;
            continue;
        }
        if (pfi_topology_find(tc->topo, J->node[j], &tc->job_node[j]) != PFI_OK) {
            cli_error("%s:%ld: job '%s': node '%s' is not a level of %s", a->input,
                      J->node_line != NULL ? J->node_line[j] : 0L, J->name[j], J->node[j],
                      a->topology);
            return PFI_EXIT_DATA;
        }
    }
    if (n_free > 0 && root != PFI_TOPO_NONE)
        cli_error("note: %zu of %zu jobs name no node: placed under the top level %s '%s'", n_free,
                  J->n, tc->topo->level[root], tc->topo->name[root]);
    else if (n_free > 0)
        cli_error("note: %zu of %zu jobs name no node: placed under the site budget alone (the "
                  "topology has %zu top levels)",
                  n_free, J->n, n_top);
    if (tc->topo != NULL)
        pfi_alloc_tree_from(tc->topo, tc->job_node, &tc->t);
    else
        memset(&tc->t, 0, sizeof tc->t);
    tc->t.job_node = tc->job_node;
    tc->t.band = J->band;
    tc->t.budget_kind = a->budget_kind;
    if (pfi_alloc_tree_result_init(&tc->tr, tc->t.n_nodes) != PFI_OK) {
        cli_error("out of memory");
        return PFI_EXIT_INTERNAL;
    }
    return PFI_EXIT_OK;
}

static void tree_ctx_clear(tree_ctx *tc)
{
    pfi_topology_destroy(tc->topo);
    free(tc->job_node);
    pfi_alloc_tree_result_clear(&tc->tr);
}

/* Phase 4, the allocation itself into r (initialised here; pfi_alloc_result_clear it); d is
 * the diagnostic reported on failure. */
static int run_allocation(const allocate_args *a, const pfi_jobs *J, const unsigned char *deep,
                          tree_ctx *tc, pfi_alloc_result *r, pfi_diag *d)
{
    pfi_alloc_jobs v;
    pfi_jobs_view(J, &v);
    v.deep_cut = deep;
    pfi_error e = pfi_alloc_result_init(r, J->n);
    pfi_diag_clear(d);
    if (e == PFI_OK)
        e = tc->on || tc->bands ? pfi_allocate_tree(&v, &a->o, &tc->t, r, &tc->tr, d)
                                : pfi_allocate(&v, &a->o, r, d);
    if (e == PFI_OK) {
        if ((tc->on || tc->bands) && !r->feasible && d->message[0] != '\0')
            cli_error("warning: %s", d->message);
        return PFI_EXIT_OK;
    }
    int rc = cli_report(e, d);
    return e == PFI_ERR_INVALID_ARGUMENT ? PFI_EXIT_DATA /* the jobs file, not the command line */
                                         : rc;
}

/* Phase 4, the output in --format, then a warning when the budget is out of reach. */
static int write_allocation(const allocate_args *a, const pfi_jobs *J, const pfi_alloc_result *r,
                            const tree_ctx *tc)
{
    int rc = PFI_EXIT_OK;
    cli_output out;
    /* one write per MiB, not per line (a terminal: per line); for a file (-o), from the heap,
       where the allocator's freed workspace lies, rather than fresh pages; standard output
       keeps its buffer to the end: the static one (untouched, it costs nothing) */
    static char sbuf[1 << 20];
    char *obuf = NULL;
    if (!cli_output_open(&out, a->output)) {
        rc = PFI_EXIT_OUTPUT;
    } else {
        bool csv = strcmp(a->format, "csv") == 0;
        if (csv && !isatty(fileno(out.f))) {
            setvbuf(out.f, NULL, _IONBF, 0); /* write_csv gathers a MiB a write itself */
        } else if (!isatty(fileno(out.f))) {
            obuf = out.f != stdout ? malloc(sizeof sbuf) : NULL;
            setvbuf(out.f, obuf != NULL ? obuf : sbuf, _IOFBF, sizeof sbuf);
        }
        if (csv)
            write_csv(out.f, J, r, tc, a->budget_kind);
        else if (strcmp(a->format, "json") == 0)
            write_json(out.f, J, r, a->o.strategy, tc, a->budget_kind);
        else
            write_table(out.f, J, r, a->o.strategy, a->explain, tc, a->budget_kind);
        if (!cli_output_commit(&out))
            rc = PFI_EXIT_OUTPUT;
    }
    free(obuf); /* the file's stream is closed (cli_output_commit) */
    if (!r->feasible && isfinite(r->shortfall_w) && r->shortfall_w > 0 &&
        !level_short(r, tc, a->budget_kind))
        cli_error("warning: the budget cannot be met: %.1f W short", r->shortfall_w);
    return rc;
}

/* --cap-step larger than every job's cap range would leave every job only its lowest and
 * top caps (no multiple of the step between them): refused, naming the largest step that still
 * moves the widest job (with a step no larger than a range, a multiple of it lies inside). An exit
 * code. */
static int check_cap_step(const allocate_args *a, const pfi_jobs *J)
{
    double step = a->o.cap_step_w, widest = 0;
    size_t wj = 0;
    for (size_t j = 0; j < J->n; j++) {
        double lo = J->cap_w[J->offset[j]], hi = J->cap_w[J->offset[j + 1] - 1];
        if (J->cap_lo_w != NULL && J->cap_lo_w[j] > lo)
            lo = J->cap_lo_w[j];
        if (J->cap_hi_w != NULL && J->cap_hi_w[j] < hi)
            hi = J->cap_hi_w[j];
        if (hi - lo > widest) {
            widest = hi - lo;
            wj = j;
        }
    }
    if (!(step > 0) || widest <= 0 || step <= widest)
        return PFI_EXIT_OK;
    return cli_usage_error(
        "--cap-step %g W is larger than every job's cap range: it would hold every job at "
        "its lowest or its top cap; give at most %g W (job '%s' spans that) or 0 (continuous)",
        step, widest, J->name[wj]);
}

/* The per-job values the strategy needs (raw-telemetry: a feature >= 0; pfi-weighted and
 * pfi-model: a PFI estimate > 0), refused naming the file, the job's first line, the column and
 * the job, before the library's check (which knows only the job's index). An exit code. */
static int check_needs(const allocate_args *a, const pfi_jobs *J)
{
    pfi_strategy st = a->o.strategy;
    bool feature = st == PFI_STRATEGY_RAW_TELEMETRY;
    bool pfi = st == PFI_STRATEGY_PFI_WEIGHTED || st == PFI_STRATEGY_PFI_MODEL;
    for (size_t j = 0; j < J->n && (feature || pfi); j++) {
        double v = feature ? J->feature[j] : J->pfi[j];
        if (feature ? v >= 0 && isfinite(v) : v > 0 && isfinite(v))
            continue;
        cli_error("%s:%ld: %s: job '%s': strategy %s needs a %s (%s)",
                  strcmp(a->input, "-") == 0 ? "(stdin)" : a->input, J->line[j],
                  feature ? "feature" : "pfi", J->name[j], pfi_strategy_name(st),
                  feature ? "feature value >= 0" : "PFI estimate > 0",
                  isnan(v) ? "none in the job's rows" : "it is 0");
        return PFI_EXIT_DATA;
    }
    return PFI_EXIT_OK;
}

/* pfi allocate: the options, the jobs file, its curves checked, the caps, the output. */
int cmd_allocate(int argc, char **argv)
{
    allocate_args a;
    /* large blocks from the heap, kept when freed: the jobs file's buffer, once read, is
       reused for the allocation and the output instead of new pages faulted in one by one
       (at 100 000 jobs the page faults were half of the command's time) */
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    int rc = parse_allocate_args(argc, argv, &a);
    if (rc != PFI_EXIT_OK)
        return rc < 0 ? PFI_EXIT_OK : rc;
    if ((rc = cli_output_not_input(a.output, a.input)) != PFI_EXIT_OK ||
        (rc = cli_output_not_input(a.output, a.topology)) != PFI_EXIT_OK)
        return rc;
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_jobs *J = NULL;
    FILE *sp; /* a pipe or "-": bounded by PFI_MAX_INPUT_BYTES, binary refused (cli.h) */
    if ((rc = cli_input_spool(NULL, a.input, &sp)) != PFI_EXIT_OK)
        return rc;
    cli_note_cut_line(a.input, sp);
    pfi_error e =
        sp != NULL
            ? pfi_jobs_read_stream(sp, strcmp(a.input, "-") == 0 ? "(stdin)" : a.input, &J, &d)
            : pfi_jobs_read(a.input, &J, &d);
    if (sp != NULL)
        fclose(sp);
    if (e != PFI_OK)
        return cli_report(e, &d);
    if (J->unknown_columns != NULL) /* a misspelt column drops its values: said, not fatal */
        cli_error("note: %s: column(s) %s not read: not a jobs file column (known: job, cap_w, "
                  "power_w, tput_tok_s, class, gpus, weight, floor, pfi, feature, cap_min_w, "
                  "cap_max_w, band, node; names are matched exactly, lowercase)",
                  strcmp(a.input, "-") == 0 ? "(stdin)" : a.input, J->unknown_columns);
    unsigned char *deep = NULL;
    if ((rc = check_cap_step(&a, J)) != PFI_EXIT_OK || (rc = check_needs(&a, J)) != PFI_EXIT_OK) {
        pfi_jobs_destroy(J);
        return rc;
    }
    rc = check_curves(&a, J, &deep);
    pfi_alloc_result r;
    memset(&r, 0, sizeof r);
    tree_ctx tc;
    memset(&tc, 0, sizeof tc);
    if (rc == PFI_EXIT_OK)
        rc = load_tree(&a, J, &tc, &d);
    if (rc == PFI_EXIT_OK)
        rc = run_allocation(&a, J, deep, &tc, &r, &d);
    if (rc == PFI_EXIT_OK)
        rc = write_allocation(&a, J, &r, &tc);
    pfi_alloc_result_clear(&r);
    tree_ctx_clear(&tc);
    free(deep);
    pfi_jobs_destroy(J);
    return rc;
}
