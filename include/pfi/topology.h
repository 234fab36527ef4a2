/*
 * pfi/topology.h — the power tree of a site (DESIGN §12; issue 18): a utility feed, PDUs,
 * racks, nodes — any depth — each with a power limit, and the allocation of per-job caps that
 * honours every level's limit.
 *
 * The topology file is text, one level per line, '#' starts a comment, blank lines skipped:
 *
 *     LEVEL NAME PARENT LIMIT_W [reserve|measured] [source=TEXT] [ramp=W] [ramp_up=W]
 *           [ramp_down=W]
 *
 *   LEVEL    the kind of gear, a word chosen by the site (feed, pdu, rack, node, ...);
 *   NAME     unique in the file; jobs name it in the jobs file's `node` column;
 *   PARENT   the NAME of the level it hangs from, or '-' for a top level (several are allowed:
 *            the site budget is above them all); a parent may be defined on a later line;
 *   LIMIT_W  its limit in watts (> 0), or '-' for none (a grouping only);
 *   kind     `reserve` (the default for topology levels): the sum of the caps under the level
 *            (GPUs × per-GPU cap) stays within the limit, so no burst can trip the gear;
 *            `measured`: the predicted drawn power under it stays within the limit (what a
 *            meter sees; keeps more throughput, as GPUs rarely draw their cap);
 *   source   optional: where the level's measured power can be read (a PromQL expression, a
 *            meter's URL), kept for the controller; the allocator does not read it;
 *   ramp     optional: the most the power under the level may move, W/s (ramp= both ways,
 *            ramp_up= / ramp_down= one way; > 0); `pfi control` spreads changes to honour
 *            it, the allocator does not read it.
 *
 * Errors name the file, line and level: a line that does not parse, a bad limit, a name given
 * twice (a node in two racks: both lines named), an unknown parent, a cycle.
 */
#ifndef PFI_TOPOLOGY_H
#define PFI_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pfi/allocate.h"
#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The parent of a top level. */
#define PFI_TOPO_NONE ((size_t)-1)

/* Most levels in one topology file (more is PFI_ERR_LIMIT). */
#define PFI_TOPO_MAX_NODES 1000000

typedef enum pfi_limit_kind {
    PFI_LIMIT_RESERVE = 0, /* Σ GPUs × cap under the level <= limit */
    PFI_LIMIT_MEASURED = 1 /* Σ predicted drawn power under the level <= limit */
} pfi_limit_kind;

/* pfi_limit_kind_name — "reserve" or "measured" ("unknown" otherwise). Static. */
const char *pfi_limit_kind_name(pfi_limit_kind k);

/* pfi_topology — owned (pfi_topology_destroy); every array has n entries, in file order. */
typedef struct pfi_topology {
    size_t n;
    char **level;              /* the LEVEL word */
    char **name;               /* the NAME */
    size_t *parent;            /* index of the parent, PFI_TOPO_NONE for a top level */
    double *limit_w;           /* W; INFINITY when '-' */
    double *ramp_up_w_per_s;   /* W/s the level's power may rise; INFINITY: no limit */
    double *ramp_down_w_per_s; /* W/s it may fall; INFINITY: no limit */
    pfi_limit_kind *kind;      /* reserve unless the line says measured */
    char **source;             /* NULL when the line has none */
    long *line;                /* the line in the file */
    size_t *depth;             /* 0 for a top level */
    size_t max_depth;          /* the deepest level's depth + 1 */
} pfi_topology;

/* The largest limit (W) and ramp rate (W/s) a level may give: 1e12, as pfi allocate's
   --budget-w (above: a typo or an overflow, not a power). */
#define PFI_TOPO_MAX_W 1e12

/*
 * pfi_topology_read_stream — parse a topology file from stream (borrowed), named name in
 * diagnostics, into *out (owned). Errors: PFI_ERR_PARSE (a line with too few or too many
 * fields, an unknown kind or option; diag names line and level), PFI_ERR_VALUE (a limit or
 * ramp rate that is not a number in (0, PFI_TOPO_MAX_W]: nan, inf, 1e308 refused), a name given
 * twice, an unknown parent, a cycle), PFI_ERR_EMPTY (no levels), PFI_ERR_LIMIT,
 * PFI_ERR_LINE_TOO_LONG (a line over 4096 bytes), PFI_ERR_IO, PFI_ERR_NOMEM.
 */
pfi_error pfi_topology_read_stream(FILE *stream, const char *name, pfi_topology **out,
                                   pfi_diag *diag);

/* pfi_topology_read — as pfi_topology_read_stream from the file at path. */
pfi_error pfi_topology_read(const char *path, pfi_topology **out, pfi_diag *diag);

/* pfi_topology_find — the index of the level called name in *idx. Errors:
 * PFI_ERR_INVALID_ARGUMENT (no such level). O(n). */
pfi_error pfi_topology_find(const pfi_topology *t, const char *name, size_t *idx);

/* pfi_topology_find_host — the index of the level a machine with hostname host sits under
 * (a node named as the host) in *idx: the level called host exactly, else the first in the
 * file whose name equals host but for ASCII case (hostnames are case-insensitive, RFC 4343:
 * a node "NODE1" is the agent reporting "node1"). Errors: PFI_ERR_INVALID_ARGUMENT (no such
 * level, host NULL). O(n). */
pfi_error pfi_topology_find_host(const pfi_topology *t, const char *host, size_t *idx);

/* pfi_topology_destroy — free t. NULL is a no-op. */
void pfi_topology_destroy(pfi_topology *t);

/*
 * pfi_alloc_tree — the tree an allocation honours, borrowed arrays: n_nodes levels with their
 * parent (PFI_TOPO_NONE at the top; parents form a forest), limit (W, INFINITY: none) and
 * kind; each job's level (job_node[j], PFI_TOPO_NONE: directly under the site budget) and
 * optional band (band[j], NULL or NaN: 0; a higher band is kept longer: a reduction is taken
 * from the lowest band first, within a band by the strategy). The site budget (the options'
 * budget_w or reduction) is the root, of kind budget_kind. name and line (may be NULL) only
 * name levels in diagnostics.
 */
typedef struct pfi_alloc_tree {
    size_t n_nodes;
    const size_t *parent;
    const double *limit_w;
    const pfi_limit_kind *kind;
    const size_t *job_node; /* [jobs n] */
    const double *band;     /* [jobs n] or NULL */
    pfi_limit_kind budget_kind;
    const char *const *name; /* [n_nodes] or NULL */
    const long *line;        /* [n_nodes] or NULL */
} pfi_alloc_tree;

/*
 * A priority band (higher: cut last, restored first) is a finite number in [-PFI_BAND_MAX,
 * PFI_BAND_MAX], one rule wherever a band is given: `pfi allocate`'s jobs file (its band
 * column, pfi/jobs.h), `pfi control`'s --policy band=, --qos-band QOS=BAND and
 * PUT /v1/jobs/ID {"band": B}; a band's text is read by pfi_band_parse wherever one is given.
 * Each refusal says the band as given (its text; a JSON number by pfi_band_format), then
 * PFI_BAND_RULE, or PFI_BAND_NAN_RULE where the text is no decimal number.
 */
#define PFI_BAND_MAX 1e6
#define PFI_BAND_RULE "must be a number in [-1e6, 1e6] (higher: cut last)"
/* The words after a band's text that pfi_band_parse finds no decimal number (as the jobs
   file's number cells say it). */
#define PFI_BAND_NAN_RULE "is not a number (expected a number in [-1e6, 1e6])"

/* pfi_band_valid — whether b is a priority band: finite and |b| <= PFI_BAND_MAX (NaN, an
 * infinity, a value past the bound: false). Pure; thread-safe. */
bool pfi_band_valid(double b);

/* What pfi_band_parse made of a band's text. */
typedef enum pfi_band_status {
    PFI_BAND_OK = 0,          /* *out holds the band */
    PFI_BAND_NOT_NUMBER = 1,  /* not a decimal number (hex, inf, nan, a word, empty); *out NaN */
    PFI_BAND_OUT_OF_RANGE = 2 /* a decimal number outside [-1e6, 1e6] (one too large for a
                                 double too); *out the value (an infinity for those) */
} pfi_band_status;

/*
 * pfi_band_parse — text[0..len) (need not be NUL-terminated; blanks around it ignored) as a
 * priority band: the one reading of a band's text wherever one is given (the jobs file's band
 * column, --policy's band=, --qos-band QOS=BAND). Decimal numbers only ("2", "-0.5",
 * "1.5e3"; no hex, no inf or nan words), in the C locale; a value too small for a double
 * (1e-400) is 0, one too large (1e400) is out of range, as is any past PFI_BAND_MAX. text is
 * borrowed; *out (not NULL) is written in every case (see pfi_band_status). A refusal says the
 * text, then PFI_BAND_NAN_RULE (PFI_BAND_NOT_NUMBER) or PFI_BAND_RULE (PFI_BAND_OUT_OF_RANGE).
 * Pure; thread-safe.
 */
pfi_band_status pfi_band_parse(const char *text, size_t len, double *out);

/* The most bytes pfi_band_format writes, its NUL included. */
#define PFI_BAND_TEXT 40

/*
 * pfi_band_format — b as text into buf[PFI_BAND_TEXT] (returned): the shortest decimal that
 * reads back as b ("%.15g", else "%.17g"), in plain digits whenever it fits in them
 * ("1000000", never "1e+06"; "0.00001", not "1e-05"), with an exponent only for magnitudes
 * below 1e-15 or at least 1e17; NaN: "-". buf is the caller's, PFI_BAND_TEXT bytes; no
 * error. For messages that name a band given as a number (JSON) and for printing one; where a
 * band came as text, messages quote the text. Pure; thread-safe.
 */
char *pfi_band_format(double b, char buf[PFI_BAND_TEXT]);

/* pfi_alloc_tree_from — *t from topology topo (borrowed) and the jobs' levels; budget_kind
 * measured, no bands. */
void pfi_alloc_tree_from(const pfi_topology *topo, const size_t *job_node, pfi_alloc_tree *t);

/*
 * pfi_alloc_tree_result — what each level carries after an allocation (n_nodes entries,
 * pfi_alloc_tree_result_init allocates; pfi_alloc_tree_result_clear frees): the sum of the
 * caps under it (GPUs × per-GPU cap, W), the predicted drawn power under it (W), and whether
 * its limit bound (its kind's sum within 1e-9 relative of the limit). The site budget too.
 */
typedef struct pfi_alloc_tree_result {
    size_t n_nodes;
    double *reserve_w; /* Σ GPUs × cap under each level */
    double *drawn_w;   /* Σ predicted drawn power under each level */
    bool *binding;     /* the level's limit is what stopped more power going there */
    size_t n_binding;  /* levels that bind */
    double site_reserve_w, site_drawn_w;
    bool budget_binding; /* the site budget binds */
    pfi_limit_kind budget_kind;
} pfi_alloc_tree_result;

/* pfi_alloc_tree_result_init — zero tr and allocate it for n_nodes levels. PFI_ERR_NOMEM. */
pfi_error pfi_alloc_tree_result_init(pfi_alloc_tree_result *tr, size_t n_nodes);

/* pfi_alloc_tree_result_clear — free tr's arrays and zero it. NULL is a no-op. */
void pfi_alloc_tree_result_clear(pfi_alloc_tree_result *tr);

/*
 * pfi_allocate_tree — per-job caps (r, initialised for jobs->n) that honour every level of
 * tree t and the site budget, with per-level figures in tr (initialised for t->n_nodes).
 *
 * The oracle: every job starts at its lowest allowed power; the segments of every job's upper
 * concave envelope are taken in descending band, then descending marginal weighted tokens/s
 * per W, each as far as every ancestor's remaining capacity allows (a reserve level counts a
 * segment's cap watts, GPUs × Δcap; a measured level its drawn watts). With concave curves and
 * nested (laminar) limits of one kind this greedy is the optimum — the constraints form a
 * polymatroid, on which the greedy is exact for separable concave objectives (Edmonds 1970;
 * Fujishige, "Submodular Functions and Optimization", §3) — so the envelope is taken in that
 * kind's space (cap watts when every limit is reserve); tests check it against HiGHS linprog
 * (tests/golden/alloc_tree_lp.py), weighted jobs and straight curves included. A job left
 * part way along an envelope segment that bridges curve points (collinear ones, or a dip) is
 * placed at the highest cap on its curve within the watts the greedy charged it (with a cap
 * step: the grid point below). With both kinds on one tree it is a feasible greedy (every
 * limit holds) but not proven optimal. Without bands, cap bounds or floors, with a drawn
 * (measured) budget and continuous caps, the flat oracle's optimum under the budget comes first
 * (pfi_allocate's threshold by selection, no sort) and is kept when every level holds it (checked
 * with the envelope's powers and caps): the tree's limits only shrink the flat problem, so it is
 * then the tree's optimum (whatever the kinds) and the greedy's allocation up to rounding (the
 * partial job's fraction: within 1e-10 relative in bench/alloc_diff.sh); otherwise the greedy
 * runs. Other strategies: their flat allocation under the
 * budget, then every level over its limit, deepest first, reallocated by the same strategy
 * among its jobs with the level's limit as their budget (caps only ever lowered); with bands,
 * once per band, highest first, the higher bands held at their caps and the lower ones at
 * their lowest (so are a band's jobs at a level where a higher band's job is below its
 * top). A cap step rounds each job down to its grid (every limit still holds).
 *
 * Infeasible: when a level's limit (or the budget) is below the least its jobs can take at
 * their lowest caps, every job stays at its lowest cap, r->feasible is false, and diag says
 * which level (name, line); r->shortfall_w (W) is the budget's shortfall, or, when the budget
 * holds, the most any level's limit is below what its jobs take (in its kind). Errors:
 * PFI_ERR_INVALID_ARGUMENT (as pfi_allocate; a parent or job level out of range; tr or r sized
 * differently; a limit < 0 or NaN), PFI_ERR_NOMEM. Cost: about one pfi_allocate when the flat
 * optimum holds; otherwise that plus, for S envelope segments: with every limit of one kind
 * and no bands, the greedy by thresholds — each level's filling slope by selection over the
 * segments its subtree can still move, bottom up, then each job up to the highest threshold
 * above it: O(S × depth), no sort (the same allocation up to rounding); otherwise the sorted
 * greedy, O(S) (a radix sort) times the tree's depth for the walk.
 */
pfi_error pfi_allocate_tree(const pfi_alloc_jobs *jobs, const pfi_alloc_options *o,
                            const pfi_alloc_tree *t, pfi_alloc_result *r, pfi_alloc_tree_result *tr,
                            pfi_diag *diag);

/*
 * pfi_alloc_tree_workspace — scratch memory of pfi_allocate_tree_ws (the oracle's segments,
 * sort keys and order, per-job positions; about 90 bytes per envelope segment), kept between
 * calls so that a caller that allocates repeatedly (a control loop, a benchmark) allocates
 * and page-faults nothing once the workspace has grown to its largest instance. Opaque; one
 * per thread (not shareable between concurrent calls).
 */
typedef struct pfi_alloc_tree_workspace pfi_alloc_tree_workspace;

/* pfi_alloc_tree_workspace_create — an empty workspace in *out (owned;
 * pfi_alloc_tree_workspace_destroy). Errors: PFI_ERR_INVALID_ARGUMENT (out NULL),
 * PFI_ERR_NOMEM. */
pfi_error pfi_alloc_tree_workspace_create(pfi_alloc_tree_workspace **out);

/* pfi_alloc_tree_workspace_destroy — free ws and its buffers. NULL is a no-op. */
void pfi_alloc_tree_workspace_destroy(pfi_alloc_tree_workspace *ws);

/*
 * pfi_allocate_tree_ws — pfi_allocate_tree with the caller's workspace ws (borrowed, grown
 * as needed, never shrunk; its contents on entry do not matter). pfi_allocate_tree is this
 * with a workspace of its own; the results are the same bit for bit. Only the oracle uses
 * ws (the other strategies allocate as pfi_allocate does). Errors: as pfi_allocate_tree, and
 * PFI_ERR_INVALID_ARGUMENT for a NULL ws; r's and tr's contents are unspecified after an
 * error, and ws stays usable (and must still be destroyed).
 */
pfi_error pfi_allocate_tree_ws(const pfi_alloc_jobs *jobs, const pfi_alloc_options *o,
                               const pfi_alloc_tree *t, pfi_alloc_tree_workspace *ws,
                               pfi_alloc_result *r, pfi_alloc_tree_result *tr, pfi_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
