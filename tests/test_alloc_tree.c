/*
 * Tests of the power tree (pfi/topology.h, issue 18): the topology file's reader and its
 * errors, and pfi_allocate_tree against HiGHS linprog (tests/golden/alloc_tree_lp.py) on
 * random trees of depth 1-4 with 2-2000 jobs, limits of one kind and of both, and three
 * priority bands; every strategy keeps every level's limit.
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
#include <unistd.h>

#include <cmocka.h>

#include "pfi/allocate.h"
#include "pfi/rng.h"
#include "pfi/topology.h"
#include "power/alloc_internal.h"

static pfi_error read_text(const char *text, pfi_topology **t, pfi_diag *d)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(f);
    pfi_error e = pfi_topology_read_stream(f, "topo", t, d);
    fclose(f);
    return e;
}

static void test_topology_file(void **state)
{
    (void)state;
    pfi_topology *t = NULL;
    pfi_diag d;
    /* a parent after its child, a level without a limit, a measured level with a source */
    const char *good = "# a site\n"
                       "rack r1 pdu-a 6000 ramp=100  # reserve by default\n"
                       "feed site - 20000 measured source=sum(DCGM_FI_DEV_POWER_USAGE)\n"
                       "\n"
                       "pdu pdu-a site 12000 reserve\n"
                       "node n1 r1 -\n";
    assert_int_equal(read_text(good, &t, &d), PFI_OK);
    assert_int_equal(t->n, 4);
    size_t r1, site, pdu, n1;
    assert_int_equal(pfi_topology_find(t, "r1", &r1), PFI_OK);
    assert_int_equal(pfi_topology_find(t, "site", &site), PFI_OK);
    assert_int_equal(pfi_topology_find(t, "pdu-a", &pdu), PFI_OK);
    assert_int_equal(pfi_topology_find(t, "n1", &n1), PFI_OK);
    assert_int_equal(pfi_topology_find(t, "nope", &n1), PFI_ERR_INVALID_ARGUMENT);
    assert_int_equal(t->parent[r1], pdu);
    assert_int_equal(t->parent[pdu], site);
    assert_int_equal(t->parent[site], PFI_TOPO_NONE);
    assert_int_equal(t->parent[n1], r1);
    assert_int_equal(t->depth[n1], 3);
    assert_int_equal(t->max_depth, 4);
    assert_int_equal(t->kind[r1], PFI_LIMIT_RESERVE);
    assert_int_equal(t->kind[site], PFI_LIMIT_MEASURED);
    assert_true(isinf(t->limit_w[n1]));
    assert_string_equal(t->source[site], "sum(DCGM_FI_DEV_POWER_USAGE)");
    assert_null(t->source[r1]);
    assert_int_equal(t->line[r1], 2);
    assert_string_equal(t->level[pdu], "pdu");
    /* ramps: ramp= sets both ways; none: INFINITY */
    assert_true(t->ramp_up_w_per_s[r1] == 100 && t->ramp_down_w_per_s[r1] == 100);
    assert_true(isinf(t->ramp_up_w_per_s[site]) && isinf(t->ramp_down_w_per_s[pdu]));
    pfi_topology_destroy(t);

    static const struct {
        const char *text;
        pfi_error e;
        long line;
        const char *msg;
    } bad[] = {
        {"feed site - 100\nrack r1 site 50\nrack r1 pdu 40\npdu pdu site 60\n", PFI_ERR_VALUE, 3,
         "rack 'r1' is given twice (line 2 and here, under 'site' and 'pdu')"},
        {"rack a b 10\nrack b c 10\nrack c a 10\n", PFI_ERR_VALUE, 1, "form a cycle"},
        {"rack a a 10\n", PFI_ERR_VALUE, 1, "its own parent"},
        {"feed site - 100\nrack r1 nowhere 10\n", PFI_ERR_VALUE, 2,
         "parent 'nowhere' is not a level"},
        {"feed site - 100\nrack r1 site -5\n", PFI_ERR_VALUE, 2, "rack 'r1': limit '-5'"},
        {"feed site - 0\n", PFI_ERR_VALUE, 1, "is not watts in (0, 1e+12]"},
        {"feed site - 100x\n", PFI_ERR_VALUE, 1, "is not watts in (0, 1e+12]"},
        /* out of range: nan, inf and overflowing values are refused, with the range */
        {"feed site - nan\n", PFI_ERR_VALUE, 1, "limit 'nan' is not watts in (0, 1e+12]"},
        {"feed site - inf\n", PFI_ERR_VALUE, 1, "limit 'inf' is not watts in (0, 1e+12]"},
        {"feed site - 1e308\n", PFI_ERR_VALUE, 1, "limit '1e308' is not watts in (0, 1e+12]"},
        {"feed site - 10\nrack r1 site 2e12\n", PFI_ERR_VALUE, 2, "limit '2e12' is not watts"},
        {"feed site - 10 ramp=1e308\n", PFI_ERR_VALUE, 1, "a ramp rate is W/s in (0, 1e+12]"},
        {"feed site -\n", PFI_ERR_PARSE, 1, "expected 'LEVEL NAME PARENT LIMIT_W"},
        {"feed site - 10 measured source=a ramp=1 ramp_up=2 ramp_down=3 x\n", PFI_ERR_PARSE, 1,
         "got 10 fields"},
        {"feed site - 10 measured source=a extra\n", PFI_ERR_PARSE, 1, "'extra' is not a kind"},
        {"feed site - 10 ramp=0\n", PFI_ERR_VALUE, 1, "a ramp rate is W/s in (0, 1e+12]"},
        {"feed site - 10 ramp_down=fast\n", PFI_ERR_VALUE, 1, "'ramp_down=fast'"},
        {"feed site - 10 metered\n", PFI_ERR_PARSE, 1, "'metered' is not a kind"},
        /* a kind in other case: the KIND column, said lowercase (was no column named) */
        {"feed site - 10 Reserve\n", PFI_ERR_PARSE, 1,
         "'Reserve' is not a kind (reserve, measured: lowercase)"},
        /* a setting given twice (the last one silently won) */
        {"feed site - 10\nrack r1 site 4 measured reserve\n", PFI_ERR_VALUE, 2,
         "rack 'r1': 'measured' and 'reserve': the limit's kind given twice"},
        {"feed site - 10 ramp_up=10 ramp_down=20 ramp=5\n", PFI_ERR_VALUE, 1,
         "'ramp_up=10' and 'ramp=5' both set the upward ramp"},
        {"feed site - 10 ramp_down=50 ramp=100\n", PFI_ERR_VALUE, 1,
         "'ramp_down=50' and 'ramp=100' both set the downward ramp"},
        {"feed site - 10 source=a measured source=b\n", PFI_ERR_VALUE, 1,
         "'source=a' and 'source=b': the source given twice"},
        {"# nothing\n\n", PFI_ERR_EMPTY, 0, "no levels"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        t = NULL;
        pfi_error e = read_text(bad[i].text, &t, &d);
        if (e != bad[i].e || d.line != bad[i].line || strstr(d.message, bad[i].msg) == NULL)
            fail_msg("case %zu: error %d line %ld '%s'", i, (int)e, d.line, d.message);
        assert_null(t);
    }
    /* a line over 4096 bytes, a NUL byte */
    char *longl = malloc(5000);
    memset(longl, 'x', 4999);
    longl[4999] = '\0';
    assert_int_equal(read_text(longl, &t, &d), PFI_ERR_LINE_TOO_LONG);
    free(longl);
    FILE *f = fmemopen((void *)"feed a\0b - 10\n", 14, "r");
    assert_int_equal(pfi_topology_read_stream(f, "nul", &t, &d), PFI_ERR_PARSE);
    fclose(f);
    assert_int_equal(pfi_topology_read("/nonexistent/topo", &t, &d), PFI_ERR_IO);
    /* the reason and the path (review of --topology, item 4) */
    assert_string_equal(d.file, "/nonexistent/topo");
    assert_non_null(strstr(d.message, "cannot open: No such file or directory"));
    assert_int_equal(pfi_topology_read("/tmp", &t, &d), PFI_ERR_IO);
    assert_null(t);
    assert_string_equal(d.file, "/tmp");
    assert_non_null(strstr(d.message, "is a directory"));
}

/* ---- random trees against linprog ------------------------------------------------------ */

#define K 6 /* curve points per job */

typedef struct tree_case {
    size_t n, m;
    size_t *off, *node, *parent;
    double *cap, *pw, *tp, *gpus, *band, *limit;
    double *wt; /* objective weights; NULL: none */
    pfi_limit_kind *kind;
    pfi_limit_kind budget_kind;
    double budget;
} tree_case;

static void case_free(tree_case *c)
{
    free(c->off);
    free(c->node);
    free(c->parent);
    free(c->cap);
    free(c->pw);
    free(c->tp);
    free(c->gpus);
    free(c->band);
    free(c->limit);
    free(c->kind);
    free(c->wt);
}

/* kinds: 0 all reserve, 1 all measured, 2 mixed. Curves concave in cap and in power; with
   straight > 0 that fraction of the jobs have straight curves (equal steps of power and
   tokens/s: collinear points, whose weighted slopes differ only by rounding); weighted: every
   job a weight in [0.5, 2.5] (drawn after the rest, so the instance is otherwise the same). */
static void make_case_w(pfi_rng *rng, size_t n, size_t depth, int kinds, bool bands,
                        double straight, bool weighted, tree_case *c)
{
    memset(c, 0, sizeof *c);
    c->n = n;
    /* levels: depth layers, 1-2 tops, 1-4 children each */
    size_t cap_m = 1;
    size_t width = 2;
    for (size_t l = 0; l < depth; l++) {
        cap_m += width;
        width *= 4;
    }
    c->parent = malloc(cap_m * sizeof *c->parent);
    c->limit = malloc(cap_m * sizeof *c->limit);
    c->kind = malloc(cap_m * sizeof *c->kind);
    size_t layer_lo = 0, layer_hi = 0, m = 0;
    size_t tops = 1 + pfi_rng_next(rng) % 2;
    for (size_t i = 0; i < tops; i++)
        c->parent[m++] = PFI_TOPO_NONE;
    layer_hi = m;
    for (size_t l = 1; l < depth; l++) {
        size_t next_lo = m;
        for (size_t a = layer_lo; a < layer_hi; a++) {
            size_t kids = 1 + pfi_rng_next(rng) % 4;
            for (size_t k = 0; k < kids; k++)
                c->parent[m++] = a;
        }
        layer_lo = next_lo;
        layer_hi = m;
    }
    c->m = m;
    c->off = malloc((n + 1) * sizeof *c->off);
    c->node = malloc(n * sizeof *c->node);
    c->cap = malloc(n * K * sizeof(double));
    c->pw = malloc(n * K * sizeof(double));
    c->tp = malloc(n * K * sizeof(double));
    c->gpus = malloc(n * sizeof(double));
    c->band = malloc(n * sizeof(double));
    for (size_t j = 0; j < n; j++) {
        c->off[j] = j * K;
        /* mostly on the deepest layer, some higher, a few under the site alone */
        uint64_t u = pfi_rng_next(rng) % 10;
        c->node[j] = u == 0   ? PFI_TOPO_NONE
                     : u == 1 ? pfi_rng_next(rng) % m
                              : layer_lo + pfi_rng_next(rng) % (layer_hi - layer_lo);
        c->gpus[j] = (double)(1 + pfi_rng_next(rng) % 8);
        c->band[j] = bands ? (double)(pfi_rng_next(rng) % 3) : 0;
        double p = 100 + 500 * pfi_rng_uniform(rng), dp = 40 + 60 * pfi_rng_uniform(rng);
        double t = 1000 * pfi_rng_uniform(rng), dt = 500 + 1500 * pfi_rng_uniform(rng);
        bool str = straight > 0 && pfi_rng_uniform(rng) < straight;
        for (size_t i = 0; i < K; i++) {
            size_t q = j * K + i;
            c->cap[q] = 200 + 100 * (double)i;
            c->pw[q] = c->gpus[j] * p;
            c->tp[q] = t;
            p += dp;
            t += dt;
            if (!str) {
                dp *= 1 + 0.3 * pfi_rng_uniform(rng);
                dt *= 0.3 + 0.7 * pfi_rng_uniform(rng);
            }
        }
    }
    c->off[n] = n * K;
    c->budget_kind = kinds == 0 ? PFI_LIMIT_RESERVE : PFI_LIMIT_MEASURED;
    for (size_t a = 0; a < m; a++)
        c->kind[a] = kinds == 0 ? PFI_LIMIT_RESERVE
                     : kinds == 1
                         ? PFI_LIMIT_MEASURED
                         : (pfi_rng_next(rng) % 2 ? PFI_LIMIT_RESERVE : PFI_LIMIT_MEASURED);
    /* limits between each level's least and most (some above: not binding; some none) */
    for (size_t a = 0; a < m; a++) {
        double lo = 0, hi = 0;
        for (size_t j = 0; j < n; j++) {
            bool in = false;
            for (size_t b = c->node[j]; b != PFI_TOPO_NONE; b = c->parent[b])
                in |= b == a;
            if (!in)
                continue;
            bool res = c->kind[a] == PFI_LIMIT_RESERVE;
            lo += res ? c->gpus[j] * c->cap[j * K] : c->pw[j * K];
            hi += res ? c->gpus[j] * c->cap[j * K + K - 1] : c->pw[j * K + K - 1];
        }
        double u = pfi_rng_uniform(rng);
        c->limit[a] = u < 0.1 || hi == 0 ? INFINITY : lo + (0.2 + 0.9 * u) * (hi - lo) + 1;
    }
    double lo = 0, hi = 0;
    for (size_t j = 0; j < n; j++) {
        bool res = c->budget_kind == PFI_LIMIT_RESERVE;
        lo += res ? c->gpus[j] * c->cap[j * K] : c->pw[j * K];
        hi += res ? c->gpus[j] * c->cap[j * K + K - 1] : c->pw[j * K + K - 1];
    }
    c->budget = lo + (0.3 + 0.6 * pfi_rng_uniform(rng)) * (hi - lo);
    if (weighted) {
        c->wt = malloc(n * sizeof *c->wt);
        for (size_t j = 0; j < n; j++)
            c->wt[j] = 0.5 + 2 * pfi_rng_uniform(rng);
    }
}

static void make_case(pfi_rng *rng, size_t n, size_t depth, int kinds, bool bands, tree_case *c)
{
    make_case_w(rng, n, depth, kinds, bands, 0, false, c);
}

/* Strategy st on case c (the budget c->budget, or by_reduction a 25 % reduction), with
   workspace ws (NULL: pfi_allocate_tree's own): r and tr initialised and filled. */
static void run_case_with(const tree_case *c, pfi_strategy st, pfi_alloc_tree_workspace *ws,
                          bool by_reduction, pfi_alloc_result *r, pfi_alloc_tree_result *tr)
{
    pfi_alloc_jobs J = {.n = c->n,
                        .offset = c->off,
                        .cap_w = c->cap,
                        .power_w = c->pw,
                        .tput_tok_s = c->tp,
                        .gpus = c->gpus,
                        .weight = c->wt};
    pfi_alloc_tree t = {.n_nodes = c->m,
                        .parent = c->parent,
                        .limit_w = c->limit,
                        .kind = c->kind,
                        .job_node = c->node,
                        .band = c->band,
                        .budget_kind = c->budget_kind};
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    o.strategy = st;
    if (by_reduction)
        o.reduction = 0.25;
    else
        o.budget_w = c->budget;
    assert_int_equal(pfi_alloc_result_init(r, c->n), PFI_OK);
    assert_int_equal(pfi_alloc_tree_result_init(tr, c->m), PFI_OK);
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = ws != NULL ? pfi_allocate_tree_ws(&J, &o, &t, ws, r, tr, &d)
                             : pfi_allocate_tree(&J, &o, &t, r, tr, &d);
    if (e != PFI_OK)
        fail_msg("pfi_allocate_tree: %s", d.message);
}

static void run_case(const tree_case *c, pfi_strategy st, pfi_alloc_result *r,
                     pfi_alloc_tree_result *tr)
{
    run_case_with(c, st, NULL, false, r, tr);
}

/* Every level's limit and the budget hold, from the caps and powers themselves. */
static void check_limits(const tree_case *c, const pfi_alloc_result *r)
{
    double *res = calloc(c->m + 1, sizeof(double)), *drw = calloc(c->m + 1, sizeof(double));
    for (size_t j = 0; j < c->n; j++) {
        double k = c->gpus[j] * r->cap_w[j];
        for (size_t b = c->node[j]; b != PFI_TOPO_NONE; b = c->parent[b]) {
            res[b] += k;
            drw[b] += r->power_w[j];
        }
        res[c->m] += k;
        drw[c->m] += r->power_w[j];
    }
    for (size_t a = 0; a <= c->m; a++) {
        pfi_limit_kind kd = a < c->m ? c->kind[a] : c->budget_kind;
        double lim = a < c->m ? c->limit[a] : c->budget;
        double used = kd == PFI_LIMIT_RESERVE ? res[a] : drw[a];
        if (!(used <= lim * (1 + 1e-9) + 1e-9))
            fail_msg("level %zu (%s): %.6f W over its limit %.6f W", a, pfi_limit_kind_name(kd),
                     used, lim);
    }
    free(res);
    free(drw);
}

/*
 * cases random trees from (seed, stream) (sizes 2-2000 jobs, depth 1-4, the limit kinds and
 * bands in turn; straight and weighted as make_case_w) through the oracle, every limit
 * checked, and the (weighted) tokens/s of each band against HiGHS linprog
 * (tests/golden/alloc_tree_lp.py): equal to 1e-7 relative with limits of one kind, never
 * above the LP with mixed kinds (feasible, not proven optimal). Cases printed as what.
 * Skipped without SciPy.
 */
static void tree_vs_linprog(uint64_t seed, uint64_t stream, int cases, double straight,
                            bool weighted, const char *what)
{
    if (system("/usr/bin/python3 -c 'import scipy.optimize' >/dev/null 2>&1") != 0) {
        skip();
        return;
    }
    char path[] = "/tmp/pfi-tree-lp-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    pfi_rng rng;
    pfi_rng_seed(&rng, seed, stream);
    static const size_t sizes[] = {2, 3, 5, 10, 40, 200, 2000};
    double(*ours)[3] = calloc((size_t)cases, sizeof *ours);
    int *kinds_of = calloc((size_t)cases, sizeof *kinds_of);
    assert_true(ours != NULL && kinds_of != NULL);
    for (int k = 0; k < cases; k++) {
        size_t n = sizes[k % 7], depth = 1 + (size_t)(k / 7) % 4;
        int kinds = k % 3;
        bool bands = (k / 3) % 2 == 1;
        tree_case c;
        make_case_w(&rng, n, depth, kinds, bands, straight, weighted, &c);
        pfi_alloc_result r;
        pfi_alloc_tree_result tr;
        run_case(&c, PFI_STRATEGY_ORACLE, &r, &tr);
        if (!r.feasible)
            fail_msg("%s case %d (n %zu, depth %zu, kinds %d): infeasible: budget %g min %g", what,
                     k, n, depth, kinds, c.budget, r.min_power_w);
        check_limits(&c, &r);
        for (size_t j = 0; j < n; j++)
            ours[k][2 - (int)c.band[j]] += (c.wt != NULL ? c.wt[j] : 1.0) * r.tput_tok_s[j];
        kinds_of[k] = kinds;
        fprintf(f, "case %d %zu %zu %.17g %d %d\n", k, n, c.m, c.budget, (int)c.budget_kind,
                weighted ? 1 : 0);
        for (size_t a = 0; a < c.m; a++)
            fprintf(f, "%ld %.17g %d\n", c.parent[a] == PFI_TOPO_NONE ? -1L : (long)c.parent[a],
                    c.limit[a], (int)c.kind[a]);
        for (size_t j = 0; j < n; j++) {
            fprintf(f, "%ld %.17g %.17g", c.node[j] == PFI_TOPO_NONE ? -1L : (long)c.node[j],
                    c.gpus[j], c.band[j]);
            if (weighted)
                fprintf(f, " %.17g", c.wt[j]);
            for (size_t i = 0; i < K; i++)
                fprintf(f, " %.17g %.17g %.17g", c.cap[j * K + i], c.pw[j * K + i],
                        c.tp[j * K + i]);
            fputc('\n', f);
        }
        pfi_alloc_result_clear(&r);
        pfi_alloc_tree_result_clear(&tr);
        case_free(&c);
    }
    fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/alloc_tree_lp.py %s", PFI_GOLDEN, path);
    if (getenv("PFI_TREE_LP_KEEP") != NULL)
        print_message("%s cases in %s\n", what, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[4096];
    int got = 0, exact_mixed = 0, mixed = 0;
    while (fgets(line, sizeof line, p) != NULL) {
        int idx, used = 0;
        assert_int_equal(sscanf(line, "%d%n", &idx, &used), 1);
        assert_true(idx >= 0 && idx < cases);
        double lp[3] = {0, 0, 0}, v;
        int nb = 0, u2;
        char *s = line + used;
        while (nb < 3 && sscanf(s, "%lf%n", &v, &u2) == 1) {
            lp[nb++] = v;
            s += u2;
        }
        /* the LP's bands are those present, highest first; ours by band 2, 1, 0 */
        double mine[3];
        int q = 0;
        for (int b = 0; b < 3; b++)
            if (ours[idx][b] > 0)
                mine[q++] = ours[idx][b];
        assert_int_equal(q, nb);
        bool all_close = true;
        for (int b = 0; b < nb; b++) {
            double tol = 1e-7 * fabs(lp[b]) + 1e-7;
            if (kinds_of[idx] < 2 && fabs(mine[b] - lp[b]) > tol)
                fail_msg("%s case %d band %d: %.12g, linprog %.12g", what, idx, b, mine[b], lp[b]);
            all_close &= fabs(mine[b] - lp[b]) <= tol;
        }
        if (kinds_of[idx] == 2) { /* mixed kinds: feasible, never above the LP in total */
            double a = 0, bsum = 0;
            for (int b = 0; b < nb; b++) {
                a += mine[b];
                bsum += lp[b];
            }
            if (nb == 1)
                assert_true(a <= bsum * (1 + 1e-9) + 1e-9);
            mixed++;
            exact_mixed += all_close;
        }
        got++;
    }
    assert_int_equal(pclose(p), 0);
    unlink(path);
    assert_int_equal(got, cases);
    free(ours);
    free(kinds_of);
    print_message("%s vs linprog: %d cases exact to 1e-7; mixed kinds %d of %d at the LP\n", what,
                  cases - mixed, exact_mixed, mixed);
}

static void test_tree_linprog(void **state)
{
    (void)state;
    tree_vs_linprog(18, 3, 48, 0, false, "tree");
}

/*
 * Weighted jobs, a third of them with straight curves (issue 18 item 3's defect: the weighted
 * slopes of collinear points differ in their last bits, so the envelope kept a point whose
 * segment above it had a higher rounded slope than the one below; the greedy met the upper
 * segment first, skipped it, and left the job there: 8 of 9 000 weighted instances below the
 * optimum, e.g. 286 656.8 for 286 925.6 tokens/s; and a job left part way along a segment
 * over collinear points was snapped down to the point below). PFI_TREE_LP_CASES and
 * PFI_TREE_LP_SEED run more cases, or others (the default: 96 cases of seed 18);
 * PFI_TREE_LP_KEEP prints the cases file's path (left in place when a case fails).
 */
static void test_tree_weighted(void **state)
{
    (void)state;
    const char *nc = getenv("PFI_TREE_LP_CASES"), *sd = getenv("PFI_TREE_LP_SEED");
    int cases = nc != NULL ? atoi(nc) : 96;
    uint64_t seed = sd != NULL ? strtoull(sd, NULL, 10) : 18;
    tree_vs_linprog(seed, 9, cases > 0 ? cases : 96, 1.0 / 3, true, "weighted tree");
}

/*
 * The envelope's rounding (issue 18 item 3), by hand. Job A, weight 1.11, is straight: caps
 * and drawn power 200, 230, 260, 290 W for 50, 70, 90, 110 tokens/s (slope 1.11 × 20/30 =
 * 0.74 tokens/s per W all along); its weighted values 55.5, 77.7, 99.9, 122.1 round so that
 * the envelope used to keep 0, 2, 3 with the computed slope of 2 -> 3 one bit above that of
 * 0 -> 2. Job B: 200 -> 300 W for 0 -> 50 tokens/s (slope 0.5).
 * Tree: both under level L (measured, 530 W: the lowest 400 W, A's 90 W and 40 W of B), the
 * site 1000 W (the flat optimum, everyone at the top, is over L: the greedy runs). The
 * optimum: A at its top (122.1 weighted tokens/s), B at 240 W (20): 142.1. The greedy used
 * to meet A's upper segment first, skip it (A not there yet), take the lower one and leave A
 * at 260 W, B at 270 W: 99.9 + 35 = 134.9.
 * Flat (no tree), budget 420 W (20 W above the lowest): the optimum gives the 20 W to A (at
 * 220 W, 50 + 20 × 20/30 tokens/s: 70.3 weighted). The selection used to put the threshold at
 * the upper segment's slope, which A, stopped by its lower one, never reached: the 20 W
 * unspent, 55.5.
 */
static void test_tree_envelope_rounding(void **state)
{
    (void)state;
    const size_t off[] = {0, 4, 6}, node[] = {0, 0}, parent[] = {PFI_TOPO_NONE};
    const double cap[] = {200, 230, 260, 290, 200, 300}, tp[] = {50, 70, 90, 110, 0, 50},
                 wt[] = {1.11, 1}, limit[] = {530};
    const pfi_limit_kind kind[] = {PFI_LIMIT_MEASURED};
    pfi_alloc_jobs J = {
        .n = 2, .offset = off, .cap_w = cap, .power_w = cap, .tput_tok_s = tp, .weight = wt};
    pfi_alloc_tree t = {.n_nodes = 1,
                        .parent = parent,
                        .limit_w = limit,
                        .kind = kind,
                        .job_node = node,
                        .budget_kind = PFI_LIMIT_MEASURED};
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    o.budget_w = 1000;
    pfi_alloc_result r;
    pfi_alloc_tree_result tr;
    assert_int_equal(pfi_alloc_result_init(&r, 2), PFI_OK);
    assert_int_equal(pfi_alloc_tree_result_init(&tr, 1), PFI_OK);
    pfi_diag d;
    pfi_diag_clear(&d);
    assert_int_equal(pfi_allocate_tree(&J, &o, &t, &r, &tr, &d), PFI_OK);
    assert_true(r.feasible && tr.binding[0]);
    if (!(r.cap_w[0] == 290 && fabs(r.cap_w[1] - 240) < 1e-9 && fabs(r.objective - 142.1) < 1e-9))
        fail_msg("tree: A at %.12g W, B at %.12g W, %.12g weighted tokens/s; expected 290, 240, "
                 "142.1",
                 r.cap_w[0], r.cap_w[1], r.objective);
    assert_true(fabs(r.tput_tok_s[1] - 20) < 1e-9);
    /* the flat oracle */
    o.budget_w = 420;
    assert_int_equal(pfi_allocate(&J, &o, &r, &d), PFI_OK);
    assert_true(r.feasible);
    double want_t = 50 + 20 * 20.0 / 30;
    if (!(fabs(r.cap_w[0] - 220) < 1e-9 && r.cap_w[1] == 200 &&
          fabs(r.objective - 1.11 * want_t) < 1e-9))
        fail_msg("flat: A at %.12g W, B at %.12g W, %.12g weighted tokens/s; expected 220, 200, "
                 "%.12g",
                 r.cap_w[0], r.cap_w[1], r.objective, 1.11 * want_t);
    assert_true(fabs(r.tput_tok_s[0] - want_t) < 1e-9);
    pfi_alloc_result_clear(&r);
    pfi_alloc_tree_result_clear(&tr);
}

/*
 * Equal slopes at a level's threshold, by hand: the greedy by thresholds takes the segments
 * at a threshold in the sorted greedy's order (job order). Three jobs, each 100 -> 200 W
 * (cap = drawn) for 0 -> 100 tokens/s (slope 1): jobs 0 and 1 under L1 (measured, 350 W: the
 * lowest 200 W and 1.5 segments), L1 and job 2 under L0 (500 W: the lowest 300 W and 2
 * segments), the site 10 000 W. Job 0 takes its segment (L1 50 W left, L0 100 W), job 1 half
 * of its (L1 full, L0 50 W left), job 2 half of its (L0 full): caps 200, 150, 150 W, 200
 * tokens/s.
 */
static void test_tree_threshold_ties(void **state)
{
    (void)state;
    const size_t off[] = {0, 2, 4, 6}, node[] = {1, 1, 0}, parent[] = {PFI_TOPO_NONE, 0};
    const double cap[] = {100, 200, 100, 200, 100, 200}, tp[] = {0, 100, 0, 100, 0, 100},
                 limit[] = {500, 350};
    const pfi_limit_kind kind[] = {PFI_LIMIT_MEASURED, PFI_LIMIT_MEASURED};
    pfi_alloc_jobs J = {.n = 3, .offset = off, .cap_w = cap, .power_w = cap, .tput_tok_s = tp};
    pfi_alloc_tree t = {.n_nodes = 2,
                        .parent = parent,
                        .limit_w = limit,
                        .kind = kind,
                        .job_node = node,
                        .budget_kind = PFI_LIMIT_MEASURED};
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    o.budget_w = 10000;
    pfi_alloc_result r;
    pfi_alloc_tree_result tr;
    assert_int_equal(pfi_alloc_result_init(&r, 3), PFI_OK);
    assert_int_equal(pfi_alloc_tree_result_init(&tr, 2), PFI_OK);
    pfi_diag d;
    pfi_diag_clear(&d);
    assert_int_equal(pfi_allocate_tree(&J, &o, &t, &r, &tr, &d), PFI_OK);
    assert_true(r.feasible && tr.binding[0] && tr.binding[1] && !tr.budget_binding);
    if (!(r.cap_w[0] == 200 && fabs(r.cap_w[1] - 150) < 1e-9 && fabs(r.cap_w[2] - 150) < 1e-9))
        fail_msg("caps %.12g, %.12g, %.12g W; expected 200, 150, 150", r.cap_w[0], r.cap_w[1],
                 r.cap_w[2]);
    assert_true(fabs(r.objective - 200) < 1e-9 && fabs(r.upper_bound - 200) < 1e-9);
    pfi_alloc_result_clear(&r);
    pfi_alloc_tree_result_clear(&tr);
}

/* Three bands on a tree: a lower band gives power first, whatever the strategy (without the
   band passes the other strategies put 344 174 pairs out of order here); every strategy
   keeps every limit. */
static void test_tree_bands_and_strategies(void **state)
{
    (void)state;
    pfi_rng rng;
    pfi_rng_seed(&rng, 18, 4);
    size_t bands_checked = 0;
    for (int k = 0; k < 60; k++) {
        tree_case c;
        make_case(&rng, 5 + (size_t)k * 7, 1 + (size_t)k % 4, k % 3, true, &c);
        for (int st = 0; st < PFI_STRATEGY_COUNT; st++) {
            if (st == PFI_STRATEGY_PFI_WEIGHTED || st == PFI_STRATEGY_PFI_MODEL ||
                st == PFI_STRATEGY_RAW_TELEMETRY)
                continue; /* need pfi / feature inputs: below */
            pfi_alloc_result r;
            pfi_alloc_tree_result tr;
            run_case(&c, (pfi_strategy)st, &r, &tr);
            check_limits(&c, &r);
            /* a job of a lower band above its lowest cap while a higher-band job sharing
               every level with it (same level) is below its top: never, whatever the
               strategy (the oracle's greedy takes the bands in order; the others allocate
               each band in turn, the lower ones at their lowest caps) */
            for (size_t i = 0; i < c.n; i++)
                for (size_t j = 0; j < c.n; j++) {
                    if (c.node[i] != c.node[j] || !(c.band[j] > c.band[i]))
                        continue;
                    bool i_up = r.cap_w[i] > c.cap[i * K] + 1e-9;
                    bool j_low = r.cap_w[j] < c.cap[j * K + K - 1] * (1 - 1e-9);
                    if (i_up && j_low)
                        fail_msg("case %d, %s: job %zu (band %g) above its lowest cap while job "
                                 "%zu (band %g, same level) is below its top",
                                 k, pfi_strategy_name((pfi_strategy)st), i, c.band[i], j,
                                 c.band[j]);
                    bands_checked += i_up || j_low;
                }
            pfi_alloc_result_clear(&r);
            pfi_alloc_tree_result_clear(&tr);
        }
        case_free(&c);
    }
    print_message("bands: %zu pairs of jobs in one level, one of them off its end, checked\n",
                  bands_checked);
    assert_true(bands_checked > 1000);
}

/* An infeasible level: its jobs at their lowest caps, the level named with how much it is
   short; a job under another level allocated as usual (by hand: r1 holds 3000 W of reserve
   and its two jobs take 2 x 8 x 200 W = 3200 W at their lowest caps, 200 W short; job 2 under
   r2, whose limit is ample, goes to its top cap, 700 W: the site budget, 100 000 W measured,
   holds 1600 + 1600 + 5200 W). Two levels short: the one short by the most is named. Reserve
   racks (the general path), measured ones (tree_fast; power = GPUs x cap here, the same
   numbers) and measured ones on the general path. */
static void test_tree_infeasible(void **state)
{
    (void)state;
    const size_t off[] = {0, 2, 4, 6}, node[] = {1, 1, 2}, parent[] = {PFI_TOPO_NONE, 0, 0};
    const double cap[] = {200, 700, 200, 700, 200, 700},
                 pw[] = {1600, 5200, 1600, 5200, 1600, 5200}, tp[] = {10, 20, 10, 20, 10, 20},
                 gpus[] = {8, 8, 8};
    double limit[] = {100000, 3000, 50000};
    pfi_limit_kind kind[] = {PFI_LIMIT_MEASURED, PFI_LIMIT_RESERVE, PFI_LIMIT_RESERVE};
    const char *const names[] = {"site", "r1", "r2"};
    const long lines[] = {1, 2, 3};
    pfi_alloc_jobs J = {
        .n = 3, .offset = off, .cap_w = cap, .power_w = pw, .tput_tok_s = tp, .gpus = gpus};
    pfi_alloc_tree t = {.n_nodes = 3,
                        .parent = parent,
                        .limit_w = limit,
                        .kind = kind,
                        .job_node = node,
                        .name = names,
                        .line = lines,
                        .budget_kind = PFI_LIMIT_MEASURED};
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    o.budget_w = 100000;
    for (int v = 0; v < 3; v++) { /* reserve racks; measured (tree_fast); measured, general */
        pfi_alloc_tree_workspace *ws = NULL;
        assert_int_equal(pfi_alloc_tree_workspace_create(&ws), PFI_OK);
        alloc_tree_ws_paths(ws, v == 2, false);
        kind[1] = kind[2] = v == 0 ? PFI_LIMIT_RESERVE : PFI_LIMIT_MEASURED;
        char w1[256], w2[256];
        snprintf(w1, sizeof w1,
                 "level 'r1' (line 2): its %s limit 3000.0 W is below the least its jobs can take "
                 "at their lowest caps (3200.0 W, 200.0 W short): its jobs stay there",
                 v == 0 ? "reserve" : "measured");
        snprintf(w2, sizeof w2,
                 "level 'r2' (line 3): its %s limit 1000.0 W is below the least its jobs can take "
                 "at their lowest caps (1600.0 W, 600.0 W short, the most of 2 levels short)",
                 v == 0 ? "reserve" : "measured");
        pfi_alloc_result r;
        pfi_alloc_tree_result tr;
        assert_int_equal(pfi_alloc_result_init(&r, 3), PFI_OK);
        assert_int_equal(pfi_alloc_tree_result_init(&tr, 3), PFI_OK);
        pfi_diag d;
        pfi_diag_clear(&d);
        limit[2] = 50000;
        assert_int_equal(pfi_allocate_tree_ws(&J, &o, &t, ws, &r, &tr, &d), PFI_OK);
        assert_false(r.feasible);
        if (strstr(d.message, w1) == NULL)
            fail_msg("variant %d: %s", v, d.message);
        assert_int_equal(alloc_tree_ws_took_fast(ws), v == 1);
        assert_true(r.cap_w[0] == 200 && r.cap_w[1] == 200 && r.cap_w[2] == 700);
        assert_true(fabs(r.shortfall_w - 200) < 1e-9);
        limit[2] = 1000; /* r2 600 W short, more than r1 */
        pfi_diag_clear(&d);
        assert_int_equal(pfi_allocate_tree_ws(&J, &o, &t, ws, &r, &tr, &d), PFI_OK);
        if (strstr(d.message, w2) == NULL)
            fail_msg("variant %d: %s", v, d.message);
        assert_true(r.cap_w[0] == 200 && r.cap_w[1] == 200 && r.cap_w[2] == 200);
        assert_true(fabs(r.shortfall_w - 600) < 1e-9);
        pfi_alloc_result_clear(&r);
        pfi_alloc_tree_result_clear(&tr);
        pfi_alloc_tree_workspace_destroy(ws);
    }
}

/* The marginals on a tree (review item 2): each job's curve slope (tokens/s per drawn W) on
 * both sides of its cap, NaN only at its top or lowest cap. By hand: under r1 (reserve 10400 W
 * = 8 x (700 + 400 + 200)) the greedy takes A's slopes 15 and 14, B's 10, then stops: A at
 * its top (down 28000/2000 = 14), B at 400 W (down 16000/1600 = 10, up 6000/1800), C at its
 * lowest (up 1000/3600). */
static void test_tree_marginals(void **state)
{
    (void)state;
    const size_t off[] = {0, 3, 6, 8}, node[] = {1, 1, 1}, parent[] = {PFI_TOPO_NONE, 0};
    const double cap[] = {200, 400, 700, 200, 400, 700, 200, 700},
                 pw[] = {1600, 3200, 5200, 1600, 3200, 5000, 1600, 5200},
                 tp[] = {28000, 52000, 80000, 50000, 66000, 72000, 10000, 11000},
                 gpus[] = {8, 8, 8}, limit[] = {1e6, 10400};
    const pfi_limit_kind kind[] = {PFI_LIMIT_MEASURED, PFI_LIMIT_RESERVE};
    pfi_alloc_jobs J = {
        .n = 3, .offset = off, .cap_w = cap, .power_w = pw, .tput_tok_s = tp, .gpus = gpus};
    pfi_alloc_tree t = {.n_nodes = 2,
                        .parent = parent,
                        .limit_w = limit,
                        .kind = kind,
                        .job_node = node,
                        .budget_kind = PFI_LIMIT_MEASURED};
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    o.budget_w = 1e6;
    pfi_alloc_result r;
    pfi_alloc_tree_result tr;
    assert_int_equal(pfi_alloc_result_init(&r, 3), PFI_OK);
    assert_int_equal(pfi_alloc_tree_result_init(&tr, 2), PFI_OK);
    pfi_diag d;
    pfi_diag_clear(&d);
    assert_int_equal(pfi_allocate_tree(&J, &o, &t, &r, &tr, &d), PFI_OK);
    assert_true(r.feasible);
    assert_true(tr.binding[1]);
    assert_true(r.cap_w[0] == 700 && r.cap_w[1] == 400 && r.cap_w[2] == 200);
    assert_true(fabs(r.marginal_down[0] - (14.0)) < 1e-12);
    assert_true(isnan(r.marginal_up[0]));
    assert_true(fabs(r.marginal_down[1] - (10.0)) < 1e-12);
    assert_true(fabs(r.marginal_up[1] - (6000.0 / 1800.0)) < 1e-12);
    assert_true(isnan(r.marginal_down[2]));
    assert_true(fabs(r.marginal_up[2] - (1000.0 / 3600.0)) < 1e-12);
    /* a heuristic strategy's reallocated jobs get theirs too */
    o.strategy = PFI_STRATEGY_EQUAL;
    assert_int_equal(pfi_allocate_tree(&J, &o, &t, &r, &tr, &d), PFI_OK);
    for (size_t j = 0; j < 3; j++)
        assert_false(isnan(r.marginal_down[j]) && isnan(r.marginal_up[j]));
    pfi_alloc_result_clear(&r);
    pfi_alloc_tree_result_clear(&tr);
}

/*
 * Slopes equal in their first 20 mantissa bits (1 + k·1e-9, k a permutation of 0..n-1: the
 * greedy's sort finds them equal in the high halves of their keys): at n = 40 they are put in
 * order by insertion, at n = 200 (more than 64 equal) by the full radix sort. Each job: one
 * segment, 1000 -> 2000 W drawn at 200 -> 700 W cap; the budget holds n/4 + 1/2 increments,
 * so (by hand) the n/4 jobs of highest k reach 700 W, the next one 450 W, the rest stay at 200.
 */
static void test_tree_near_equal_slopes(void **state)
{
    (void)state;
    for (size_t n = 40; n <= 200; n += 160) {
        size_t *off = calloc(n + 1, sizeof *off), *node = calloc(n, sizeof *node);
        double *cap = calloc(2 * n, sizeof *cap), *pw = calloc(2 * n, sizeof *pw),
               *tp = calloc(2 * n, sizeof *tp);
        assert_true(off && node && cap && pw && tp);
        for (size_t j = 0; j < n; j++) {
            size_t k = (j * 37) % n; /* 37 is prime to 40 and 200: a permutation */
            off[j] = 2 * j;
            cap[2 * j] = 200;
            cap[2 * j + 1] = 700;
            pw[2 * j] = 1000;
            pw[2 * j + 1] = 2000;
            tp[2 * j] = 1000;
            tp[2 * j + 1] = 2000 + (double)k * 1e-6;
        }
        off[n] = 2 * n;
        const size_t parent[] = {PFI_TOPO_NONE};
        const double limit[] = {1e9};
        const pfi_limit_kind kind[] = {PFI_LIMIT_MEASURED};
        pfi_alloc_jobs J = {.n = n, .offset = off, .cap_w = cap, .power_w = pw, .tput_tok_s = tp};
        pfi_alloc_tree t = {.n_nodes = 1,
                            .parent = parent,
                            .limit_w = limit,
                            .kind = kind,
                            .job_node = node,
                            .budget_kind = PFI_LIMIT_MEASURED};
        pfi_alloc_options o;
        pfi_alloc_options_init(&o);
        size_t full = n / 4;
        o.budget_w = 1000.0 * (double)n + 1000.0 * ((double)full + 0.5);
        pfi_alloc_result r;
        pfi_alloc_tree_result tr;
        assert_int_equal(pfi_alloc_result_init(&r, n), PFI_OK);
        assert_int_equal(pfi_alloc_tree_result_init(&tr, 1), PFI_OK);
        pfi_diag d;
        pfi_diag_clear(&d);
        assert_int_equal(pfi_allocate_tree(&J, &o, &t, &r, &tr, &d), PFI_OK);
        assert_true(r.feasible);
        for (size_t j = 0; j < n; j++) {
            size_t rank = n - 1 - (j * 37) % n; /* 0: the highest slope */
            double want = rank < full ? 700 : rank == full ? 450 : 200;
            if (fabs(r.cap_w[j] - want) > 1e-9)
                fail_msg("n %zu, job %zu (rank %zu): cap %.12g W, expected %.12g W", n, j, rank,
                         r.cap_w[j], want);
        }
        pfi_alloc_result_clear(&r);
        pfi_alloc_tree_result_clear(&tr);
        free(off);
        free(node);
        free(cap);
        free(pw);
        free(tp);
    }
}

/*
 * The oracle's flat-first path (the flat optimum kept when every level holds it) against the
 * greedy, by hand. X (under level A, measured) has a straight curve: 100 -> 200 -> 300 W
 * drawn at caps 100, 200, 300 W for 0, 100, 200 tokens/s (slope 1, one envelope segment over
 * three candidates); Y (the site alone) 100 -> 200 W for 0 -> 50 tokens/s (slope 0.5).
 * Case 1, A 220 W, budget 350 W: the greedy takes X's segment to 0.6 (A's 120 W left) and
 * places X on its curve at the 220 W drawn it charged (cap 220 W, 120 tokens/s: the skipped
 * candidate lies on the segment), then gives the site's 30 W left to Y (cap 130 W, 15
 * tokens/s): 135 tokens/s, the optimum (120 W at slope 1, 30 W at 0.5; it used to snap X down
 * to the candidate below, 200 W, and leave 20 W of A unspent: 115). The flat optimum would
 * put X at 250 W, over A: A's check must see it.
 * Case 2, X's curve 0, 100, 150 tokens/s (slopes 1, 0.5), Y 0 -> 80 (0.8), A 1000 W, budget
 * 420 W: X's first segment (100 W), Y's (100 W), then 20 of X's second: X at 220 W (110
 * tokens/s), Y at 200 W (80): 190 tokens/s; A (220 W) does not bind, the budget does.
 */
static void test_tree_flat_first(void **state)
{
    (void)state;
    const size_t off[] = {0, 3, 5}, node[] = {0, PFI_TOPO_NONE}, parent[] = {PFI_TOPO_NONE};
    const double cap[] = {100, 200, 300, 100, 200}, pw[] = {100, 200, 300, 100, 200};
    double tp[] = {0, 100, 200, 0, 50}, limit[] = {220};
    const pfi_limit_kind kind[] = {PFI_LIMIT_MEASURED};
    pfi_alloc_jobs J = {.n = 2, .offset = off, .cap_w = cap, .power_w = pw, .tput_tok_s = tp};
    pfi_alloc_tree t = {.n_nodes = 1,
                        .parent = parent,
                        .limit_w = limit,
                        .kind = kind,
                        .job_node = node,
                        .budget_kind = PFI_LIMIT_MEASURED};
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    o.budget_w = 350;
    pfi_alloc_result r;
    pfi_alloc_tree_result tr;
    assert_int_equal(pfi_alloc_result_init(&r, 2), PFI_OK);
    assert_int_equal(pfi_alloc_tree_result_init(&tr, 1), PFI_OK);
    pfi_diag d;
    pfi_diag_clear(&d);
    assert_int_equal(pfi_allocate_tree(&J, &o, &t, &r, &tr, &d), PFI_OK);
    assert_true(r.feasible);
    assert_true(fabs(r.cap_w[0] - 220) < 1e-9 && fabs(r.power_w[0] - 220) < 1e-9);
    assert_true(fabs(r.tput_tok_s[0] - 120) < 1e-9);
    assert_true(fabs(r.cap_w[1] - 130) < 1e-9 && fabs(r.power_w[1] - 130) < 1e-9);
    assert_true(fabs(r.tput_tok_s[1] - 15) < 1e-9);
    assert_true(fabs(r.objective - 135) < 1e-9);
    assert_true(fabs(tr.drawn_w[0] - 220) < 1e-9 && tr.binding[0]);
    /* case 2 */
    tp[2] = 150;
    tp[4] = 80;
    limit[0] = 1000;
    o.budget_w = 420;
    assert_int_equal(pfi_allocate_tree(&J, &o, &t, &r, &tr, &d), PFI_OK);
    assert_true(r.feasible);
    assert_true(fabs(r.cap_w[0] - 220) < 1e-9 && fabs(r.power_w[0] - 220) < 1e-9);
    assert_true(fabs(r.tput_tok_s[0] - 110) < 1e-9);
    assert_true(r.cap_w[1] == 200 && r.tput_tok_s[1] == 80);
    assert_true(fabs(r.objective - 190) < 1e-9 && fabs(r.upper_bound - 190) < 1e-9);
    assert_true(fabs(tr.drawn_w[0] - 220) < 1e-9 && !tr.binding[0] && tr.budget_binding);
    assert_true(fabs(r.marginal_down[0] - 0.5) < 1e-12 && fabs(r.marginal_up[0] - 0.5) < 1e-12);
    assert_true(isnan(r.lambda));
    pfi_alloc_result_clear(&r);
    pfi_alloc_tree_result_clear(&tr);
}

/* The hint that skips the flat attempt (alloc_tree.c tree_ref_hint) may be wrong; the result
   is the optimum either way. Level 0 (in the hint's sample of levels) holds job 0, a concave
   curve of slopes 2, 1, 0.25 over 30, 30 and 40 W from 100 W; job 1 (level 1, no limit)
   rises 100 → 200 W at slope 10. Budget 280 W: the hint's threshold from job 0 alone (half the
   budget, less 3 % of its 100 W width: 37 W above its lowest) is slope 1, where job 0 would draw
   130 W, over level 0's 120 W: the hint says a level binds. It does not: job 1 takes the 80 W
   (slope 10), job 0 stays at 100 W (objective 800), the flat optimum, which the tree then
   takes after all. Budget 400 W and a 105 W limit: the hint is right (flat: job 0 at 200 W);
   job 1 at 200 W (1000), job 0 at 105 W (60 × 5 / 30 = 10 tokens/s): 1010, level 0 binding. */
static void test_tree_flat_hint(void **state)
{
    (void)state;
    const size_t off[] = {0, 4, 6}, node[] = {0, 1}, parent[] = {PFI_TOPO_NONE, PFI_TOPO_NONE};
    const double pw[] = {100, 130, 160, 200, 100, 200}, tp[] = {0, 60, 90, 100, 0, 1000};
    double limit[] = {120, INFINITY};
    const pfi_limit_kind kind[] = {PFI_LIMIT_MEASURED, PFI_LIMIT_MEASURED};
    pfi_alloc_jobs J = {.n = 2, .offset = off, .cap_w = pw, .power_w = pw, .tput_tok_s = tp};
    pfi_alloc_tree t = {.n_nodes = 2,
                        .parent = parent,
                        .limit_w = limit,
                        .kind = kind,
                        .job_node = node,
                        .budget_kind = PFI_LIMIT_MEASURED};
    pfi_alloc_options o;
    pfi_alloc_options_init(&o);
    o.budget_w = 280;
    pfi_alloc_result r;
    pfi_alloc_tree_result tr;
    assert_int_equal(pfi_alloc_result_init(&r, 2), PFI_OK);
    assert_int_equal(pfi_alloc_tree_result_init(&tr, 2), PFI_OK);
    pfi_diag d;
    pfi_diag_clear(&d);
    assert_int_equal(pfi_allocate_tree(&J, &o, &t, &r, &tr, &d), PFI_OK);
    assert_true(r.feasible);
    assert_true(r.power_w[0] == 100 && r.tput_tok_s[0] == 0);
    assert_true(fabs(r.power_w[1] - 180) < 1e-9 && fabs(r.tput_tok_s[1] - 800) < 1e-9);
    assert_true(fabs(r.objective - 800) < 1e-9);
    assert_true(!tr.binding[0] && tr.budget_binding && tr.drawn_w[0] == 100);
    limit[0] = 105;
    o.budget_w = 400;
    assert_int_equal(pfi_allocate_tree(&J, &o, &t, &r, &tr, &d), PFI_OK);
    assert_true(r.feasible);
    assert_true(fabs(r.power_w[0] - 105) < 1e-9 && fabs(r.tput_tok_s[0] - 10) < 1e-9);
    assert_true(r.power_w[1] == 200 && r.tput_tok_s[1] == 1000);
    assert_true(fabs(r.objective - 1010) < 1e-9);
    assert_true(tr.binding[0] && fabs(tr.drawn_w[0] - 105) < 1e-9);
    pfi_alloc_result_clear(&r);
    pfi_alloc_tree_result_clear(&tr);
}

/* ---- tree_fast against the general path ------------------------------------------------ */

/*
 * A random tree for tree_fast (every limit measured, one band, continuous caps) of n jobs and
 * the given depth, in one of eight variants: 0 six-point concave curves; 1 curves of 1-9
 * points (a single point has no segment); 2 every job a copy of one of five (equal slopes
 * across jobs: segments at a threshold); 3 weights in [0.5, 2.5], one in five NaN; 4 every
 * limit in the lowest 30 % of its range, one in eight at its least exactly (nothing left
 * above the lowest points); 5 one level below its least (infeasible); 6 a fifth of the curves
 * straight (not their own envelope: the general path); 7 a wide tree, 2 000-5 000 leaves.
 */
static void make_fast_case(pfi_rng *rng, size_t n, size_t depth, int variant, tree_case *c)
{
    memset(c, 0, sizeof *c);
    c->n = n;
    size_t width = variant == 7 ? 2000 + pfi_rng_next(rng) % 3000 : 2, cap_m = 1;
    for (size_t l = 0, w = width; l < depth; l++, w *= 4)
        cap_m += w;
    c->parent = malloc(cap_m * sizeof *c->parent);
    c->limit = malloc(cap_m * sizeof *c->limit);
    c->kind = malloc(cap_m * sizeof *c->kind);
    size_t m = 0, lo_l = 0, hi_l;
    size_t tops = variant == 7 ? width : 1 + pfi_rng_next(rng) % 2;
    for (size_t a = 0; a < tops; a++)
        c->parent[m++] = PFI_TOPO_NONE;
    hi_l = m;
    for (size_t l = 1; l < depth; l++) {
        size_t next = m;
        for (size_t a = lo_l; a < hi_l; a++)
            for (size_t k = 1 + pfi_rng_next(rng) % 4; k > 0; k--)
                c->parent[m++] = a;
        lo_l = next;
        hi_l = m;
    }
    c->m = m;
    c->off = malloc((n + 1) * sizeof *c->off);
    c->node = malloc(n * sizeof *c->node);
    c->gpus = malloc(n * sizeof(double));
    c->band = calloc(n, sizeof(double));
    size_t *pts = malloc(n * sizeof *pts), total = 0;
    for (size_t j = 0; j < n; j++) {
        pts[j] = variant == 1 ? 1 + pfi_rng_next(rng) % 9 : K;
        c->off[j] = total;
        total += pts[j];
    }
    c->off[n] = total;
    c->cap = malloc(total * sizeof(double));
    c->pw = malloc(total * sizeof(double));
    c->tp = malloc(total * sizeof(double));
    for (size_t j = 0; j < n; j++) {
        uint64_t u = pfi_rng_next(rng) % 10;
        c->node[j] = u == 0   ? PFI_TOPO_NONE
                     : u == 1 ? pfi_rng_next(rng) % m
                              : lo_l + pfi_rng_next(rng) % (hi_l - lo_l);
        c->gpus[j] = (double)(1 + pfi_rng_next(rng) % 8);
        size_t proto = j % 5;
        if (variant == 2 && j >= 5) { /* a copy of job proto's curve and GPUs */
            c->gpus[j] = c->gpus[proto];
            for (size_t i = 0; i < K; i++) {
                c->cap[c->off[j] + i] = c->cap[c->off[proto] + i];
                c->pw[c->off[j] + i] = c->pw[c->off[proto] + i];
                c->tp[c->off[j] + i] = c->tp[c->off[proto] + i];
            }
            continue;
        }
        double p = 100 + 500 * pfi_rng_uniform(rng), dp = 40 + 60 * pfi_rng_uniform(rng);
        double t = 1000 * pfi_rng_uniform(rng), dt = 500 + 1500 * pfi_rng_uniform(rng);
        bool str = variant == 6 && pfi_rng_uniform(rng) < 0.2;
        for (size_t i = 0; i < pts[j]; i++) {
            size_t q = c->off[j] + i;
            c->cap[q] = 200 + 100 * (double)i;
            c->pw[q] = c->gpus[j] * p;
            c->tp[q] = t;
            p += dp;
            t += dt;
            if (!str) {
                dp *= 1 + 0.3 * pfi_rng_uniform(rng);
                dt *= 0.3 + 0.7 * pfi_rng_uniform(rng);
            }
        }
    }
    free(pts);
    c->budget_kind = PFI_LIMIT_MEASURED;
    for (size_t a = 0; a < m; a++)
        c->kind[a] = PFI_LIMIT_MEASURED;
    double *lo = calloc(m + 1, sizeof(double)), *hi = calloc(m + 1, sizeof(double));
    for (size_t j = 0; j < n; j++) {
        size_t k = c->off[j + 1] - c->off[j];
        for (size_t b = c->node[j];; b = c->parent[b]) {
            size_t x = b == PFI_TOPO_NONE ? m : b;
            lo[x] += c->pw[c->off[j]];
            hi[x] += c->pw[c->off[j] + k - 1];
            if (b == PFI_TOPO_NONE)
                break;
        }
    }
    for (size_t a = 0; a < m; a++) {
        double u = pfi_rng_uniform(rng);
        double span = variant == 4 ? 0.3 * u : 0.2 + 0.9 * u;
        c->limit[a] = u < 0.1 || hi[a] == 0 ? INFINITY : lo[a] + span * (hi[a] - lo[a]) + 1;
        if (variant == 4 && pfi_rng_next(rng) % 8 == 0)
            c->limit[a] = lo[a];
    }
    if (variant == 5)
        c->limit[pfi_rng_next(rng) % m] = -1; /* below anything: replaced below */
    for (size_t a = 0; a < m; a++)
        if (c->limit[a] < 0)
            c->limit[a] = lo[a] > 10 ? 0.5 * lo[a] : 0;
    c->budget = lo[m] + (0.3 + 0.6 * pfi_rng_uniform(rng)) * (hi[m] - lo[m]);
    if (variant == 3) {
        c->wt = malloc(n * sizeof *c->wt);
        for (size_t j = 0; j < n; j++)
            c->wt[j] = pfi_rng_next(rng) % 5 == 0 ? NAN : 0.5 + 2 * pfi_rng_uniform(rng);
    }
    free(lo);
    free(hi);
}

/* The oracle on case c with workspace ws (run_case_with). */
static void run_fast_case(const tree_case *c, pfi_alloc_tree_workspace *ws, bool by_reduction,
                          pfi_alloc_result *r, pfi_alloc_tree_result *tr)
{
    run_case_with(c, PFI_STRATEGY_ORACLE, ws, by_reduction, r, tr);
}

/* Whether a and b are within rel of each other (both NaN: equal). */
static bool near(double a, double b, double rel)
{
    return (isnan(a) && isnan(b)) || fabs(a - b) <= rel * (1 + fabs(a) + fabs(b));
}

/* r and tr bit for bit the same as r2 and tr2 (what: the comparison, for the message). */
static void assert_same_bits(const pfi_alloc_result *r, const pfi_alloc_tree_result *tr,
                             const pfi_alloc_result *r2, const pfi_alloc_tree_result *tr2, size_t n,
                             size_t m, const char *what)
{
    const double *x[] = {r->cap_w,         r->power_w,     r->tput_tok_s, r->shed_w,
                         r->marginal_down, r->marginal_up, tr->drawn_w,   tr->reserve_w};
    const double *y[] = {r2->cap_w,         r2->power_w,     r2->tput_tok_s, r2->shed_w,
                         r2->marginal_down, r2->marginal_up, tr2->drawn_w,   tr2->reserve_w};
    static const char *names[] = {"cap",           "power",       "tokens/s", "shed",
                                  "marginal down", "marginal up", "drawn",    "reserve"};
    for (int u = 0; u < 8; u++)
        for (size_t i = 0; i < (u < 6 ? n : m); i++)
            if (memcmp(&x[u][i], &y[u][i], sizeof(double)) != 0)
                fail_msg("%s: %s[%zu] %.17g, %.17g", what, names[u], i, x[u][i], y[u][i]);
    double sx[] = {r->objective, r->total_power_w, r->budget_w};
    double sy[] = {r2->objective, r2->total_power_w, r2->budget_w};
    if (memcmp(sx, sy, sizeof sx) != 0)
        fail_msg("%s: objective %.17g, %.17g", what, sx[0], sy[0]);
    assert_int_equal(r->feasible, r2->feasible);
    assert_int_equal(tr->n_binding, tr2->n_binding);
}

/*
 * r and tr within rounding of r2 and tr2 on case c: feasibility, the budget and the levels
 * that bind the same; the objective and each level's sums within 1e-9 relative; every job's
 * cap, power and tokens/s within 1e-12 of the instance's top power and tokens/s (a job at a
 * threshold takes what is left, a difference of sums over every job whose order may differ),
 * its marginals within 1e-9 relative (unless its cap is within 1e-8 of a curve end, where
 * tree_marginals' tolerance may decide either way). what: the comparison, for the message.
 */
static void assert_close(const tree_case *c, const pfi_alloc_result *r,
                         const pfi_alloc_tree_result *tr, const pfi_alloc_result *r2,
                         const pfi_alloc_tree_result *tr2, const char *what)
{
    assert_int_equal(r->feasible, r2->feasible);
    if (!near(r->objective, r2->objective, 1e-9) || !near(r->budget_w, r2->budget_w, 1e-15))
        fail_msg("%s: objective %.17g, %.17g", what, r->objective, r2->objective);
    double top_p = 0, top_t = 0;
    for (size_t j = 0; j < c->n; j++) {
        top_p += c->pw[c->off[j + 1] - 1];
        top_t += c->tp[c->off[j + 1] - 1];
    }
    for (size_t j = 0; j < c->n; j++) {
        /* a marginal is NaN at a curve's end, within tree_marginals' tolerance of it: where
           the cap is that near an end, the two may differ by rounding */
        const double *cc = c->cap + c->off[j];
        double cap = r->cap_w[j], lo = cc[0], hi = cc[c->off[j + 1] - c->off[j] - 1];
        bool at_end = fabs(cap - lo) < 1e-8 * (1 + cap) || fabs(cap - hi) < 1e-8 * (1 + cap);
        if (fabs(r->cap_w[j] - r2->cap_w[j]) > 1e-12 * top_p ||
            fabs(r->power_w[j] - r2->power_w[j]) > 1e-12 * top_p ||
            fabs(r->tput_tok_s[j] - r2->tput_tok_s[j]) > 1e-12 * top_t ||
            (!at_end && (!near(r->marginal_down[j], r2->marginal_down[j], 1e-9) ||
                         !near(r->marginal_up[j], r2->marginal_up[j], 1e-9))))
            fail_msg("%s: job %zu: cap %.17g power %.17g, %.17g %.17g", what, j, r->cap_w[j],
                     r->power_w[j], r2->cap_w[j], r2->power_w[j]);
    }
    for (size_t a = 0; a < c->m; a++)
        if (!near(tr->drawn_w[a], tr2->drawn_w[a], 1e-9))
            fail_msg("%s: level %zu drawn %.17g, %.17g", what, a, tr->drawn_w[a], tr2->drawn_w[a]);
    assert_int_equal(tr->n_binding, tr2->n_binding);
}

/*
 * tree_fast (the greedy by histogram thresholds, issue 18 item 3) against the general path
 * (the greedy by thresholds, tree_thresholds, held to HiGHS by test_tree_linprog) on 400 random
 * trees of make_fast_case's variants, depth 1-4, 2-20 000 jobs: within rounding (assert_close);
 * the fast path without its AVX-512 copy, and the same workspace called again (the greedy at
 * once where an inner level bound, the reference power summed in its first pass), bit for bit
 * the same; a workspace last used on another instance within rounding (where a level fills at
 * exactly its parent's slope, the flat optimum or the greedy's may be taken); every limit
 * kept. tree_fast must have run in most cases (all but
 * variants 6 and 7, which it leaves to the general path where a curve is straight or the
 * levels too many for its histograms).
 */
static void test_tree_fast_paths(void **state)
{
    (void)state;
    pfi_rng rng;
    pfi_rng_seed(&rng, 18, 11);
    static const size_t sizes[] = {2, 7, 64, 300, 2500, 20000, 40};
    const char *env = getenv("PFI_TREE_FAST_CASES");
    int cases = env != NULL ? atoi(env) : 400, fast = 0, general = 0;
    pfi_alloc_tree_workspace *ws = NULL, *wg = NULL;
    assert_int_equal(pfi_alloc_tree_workspace_create(&ws), PFI_OK);
    assert_int_equal(pfi_alloc_tree_workspace_create(&wg), PFI_OK);
    for (int k = 0; k < cases; k++) {
        int variant = k % 8;
        size_t n = sizes[(k / 8) % 7], depth = 1 + (size_t)(k / 56) % 4;
        bool by_reduction = (k / 3) % 2 == 1;
        tree_case c;
        make_fast_case(&rng, n, depth, variant, &c);
        pfi_alloc_result r, rg, rp, ra;
        pfi_alloc_tree_result tr, trg, trp, tra;
        pfi_alloc_tree_workspace *wf = NULL, *wp = NULL;
        char what[128];
        assert_int_equal(pfi_alloc_tree_workspace_create(&wf), PFI_OK);
        assert_int_equal(pfi_alloc_tree_workspace_create(&wp), PFI_OK);
        run_fast_case(&c, wf, by_reduction, &r, &tr);
        bool took = alloc_tree_ws_took_fast(wf);
        fast += took;
        run_fast_case(&c, wf, by_reduction, &ra, &tra); /* again: the workspace's memory */
        snprintf(what, sizeof what, "case %d (variant %d, n %zu, depth %zu) again", k, variant, n,
                 depth);
        assert_same_bits(&r, &tr, &ra, &tra, c.n, c.m, what);
        pfi_alloc_result_clear(&ra);
        pfi_alloc_tree_result_clear(&tra);
        run_fast_case(&c, ws, by_reduction, &ra, &tra); /* after the last case's call */
        snprintf(what, sizeof what, "case %d (variant %d, n %zu, depth %zu) after another", k,
                 variant, n, depth);
        assert_close(&c, &r, &tr, &ra, &tra, what);
        alloc_tree_ws_paths(wg, true, false);
        run_fast_case(&c, wg, by_reduction, &rg, &trg);
        general += !alloc_tree_ws_took_fast(wg);
        assert_false(alloc_tree_ws_took_fast(wg));
        alloc_tree_ws_paths(wp, false, true);
        run_fast_case(&c, wp, by_reduction, &rp, &trp);
        if (alloc_tree_ws_took_fast(wp) != took)
            fail_msg("case %d (variant %d, n %zu, depth %zu): tree_fast %d, without AVX-512 %d", k,
                     variant, n, depth, (int)took, (int)alloc_tree_ws_took_fast(wp));
        snprintf(what, sizeof what, "case %d (variant %d, n %zu, depth %zu) without AVX-512", k,
                 variant, n, depth);
        assert_same_bits(&r, &tr, &rp, &trp, c.n, c.m, what);
        pfi_alloc_tree_workspace_destroy(wf);
        pfi_alloc_tree_workspace_destroy(wp);
        snprintf(what, sizeof what, "case %d (variant %d, n %zu, depth %zu): general path", k,
                 variant, n, depth);
        assert_close(&c, &r, &tr, &rg, &trg, what);
        if (getenv("PFI_TREE_FAST_DEBUG") != NULL)
            print_message("case %d (variant %d, n %zu, depth %zu, m %zu): fast %d feasible %d\n", k,
                          variant, n, depth, c.m, (int)took, (int)r.feasible);
        c.budget = r.budget_w; /* by reduction: the budget the call derived */
        if (r.feasible)
            check_limits(&c, &r);
        pfi_alloc_result_clear(&r);
        pfi_alloc_result_clear(&rg);
        pfi_alloc_result_clear(&rp);
        pfi_alloc_result_clear(&ra);
        pfi_alloc_tree_result_clear(&tr);
        pfi_alloc_tree_result_clear(&trg);
        pfi_alloc_tree_result_clear(&trp);
        pfi_alloc_tree_result_clear(&tra);
        case_free(&c);
    }
    pfi_alloc_tree_workspace_destroy(ws);
    pfi_alloc_tree_workspace_destroy(wg);
    print_message("tree_fast: %d of %d cases (the others the flat optimum or the general path); "
                  "the general path %d\n",
                  fast, cases, general);
    assert_true(fast >= cases / 2);
}

/* pfi_allocate_tree_ws with one workspace reused over instances that grow, shrink and grow
   again (kinds, bands, depths varied) gives pfi_allocate_tree's results bit for bit; a NULL
   workspace is refused. */
static void test_tree_workspace(void **state)
{
    (void)state;
    pfi_rng rng;
    pfi_rng_seed(&rng, 18, 7);
    pfi_alloc_tree_workspace *ws = NULL;
    assert_int_equal(pfi_alloc_tree_workspace_create(&ws), PFI_OK);
    static const size_t sizes[] = {2000, 5, 200, 40, 3000, 2};
    for (int k = 0; k < 12; k++) {
        tree_case c;
        make_case(&rng, sizes[k % 6], 1 + (size_t)k % 4, k % 3, k % 2 == 1, &c);
        pfi_alloc_result r;
        pfi_alloc_tree_result tr;
        run_case(&c, PFI_STRATEGY_ORACLE, &r, &tr);
        pfi_alloc_jobs J = {.n = c.n,
                            .offset = c.off,
                            .cap_w = c.cap,
                            .power_w = c.pw,
                            .tput_tok_s = c.tp,
                            .gpus = c.gpus};
        pfi_alloc_tree t = {.n_nodes = c.m,
                            .parent = c.parent,
                            .limit_w = c.limit,
                            .kind = c.kind,
                            .job_node = c.node,
                            .band = c.band,
                            .budget_kind = c.budget_kind};
        pfi_alloc_options o;
        pfi_alloc_options_init(&o);
        o.budget_w = c.budget;
        pfi_alloc_result r2;
        pfi_alloc_tree_result tr2;
        assert_int_equal(pfi_alloc_result_init(&r2, c.n), PFI_OK);
        assert_int_equal(pfi_alloc_tree_result_init(&tr2, c.m), PFI_OK);
        pfi_diag d;
        pfi_diag_clear(&d);
        assert_int_equal(pfi_allocate_tree_ws(&J, &o, &t, NULL, &r2, &tr2, &d),
                         PFI_ERR_INVALID_ARGUMENT);
        assert_int_equal(pfi_allocate_tree_ws(&J, &o, &t, ws, &r2, &tr2, &d), PFI_OK);
        assert_memory_equal(r.cap_w, r2.cap_w, c.n * sizeof(double));
        assert_memory_equal(r.power_w, r2.power_w, c.n * sizeof(double));
        assert_memory_equal(r.tput_tok_s, r2.tput_tok_s, c.n * sizeof(double));
        assert_memory_equal(&r.objective, &r2.objective, sizeof(double));
        assert_int_equal(r.feasible, r2.feasible);
        assert_memory_equal(tr.drawn_w, tr2.drawn_w, c.m * sizeof(double));
        assert_memory_equal(tr.reserve_w, tr2.reserve_w, c.m * sizeof(double));
        assert_int_equal(tr.n_binding, tr2.n_binding);
        pfi_alloc_result_clear(&r);
        pfi_alloc_result_clear(&r2);
        pfi_alloc_tree_result_clear(&tr);
        pfi_alloc_tree_result_clear(&tr2);
        case_free(&c);
    }
    pfi_alloc_tree_workspace_destroy(ws);
    pfi_alloc_tree_workspace_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topology_file),
        cmocka_unit_test(test_tree_linprog),
        cmocka_unit_test(test_tree_weighted),
        cmocka_unit_test(test_tree_envelope_rounding),
        cmocka_unit_test(test_tree_threshold_ties),
        cmocka_unit_test(test_tree_bands_and_strategies),
        cmocka_unit_test(test_tree_infeasible),
        cmocka_unit_test(test_tree_marginals),
        cmocka_unit_test(test_tree_near_equal_slopes),
        cmocka_unit_test(test_tree_workspace),
        cmocka_unit_test(test_tree_fast_paths),
        cmocka_unit_test(test_tree_flat_first),
        cmocka_unit_test(test_tree_flat_hint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
