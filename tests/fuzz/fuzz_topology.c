/*
 * libFuzzer harness: the topology file reader (pfi_topology_read_stream, pfi/topology.h) on
 * arbitrary bytes, then, when it reads, a tree allocation of one small job under every level.
 * Invariants (abort() when one fails): a refusal leaves no topology and a NUL-terminated
 * message with a line number within the input; a topology has n >= 1 levels, every parent
 * in range and no cycle (depth[i] = depth[parent] + 1 < n), limits > 0 or infinite, names
 * unique, lines ascending; the allocation succeeds or is infeasible, never an error, and
 * every limit holds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "pfi/topology.h"

static void check(bool ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fuzz_stream(data, size);
    if (f == NULL)
        return 0;
    pfi_topology *t = NULL;
    pfi_diag d;
    pfi_error e = pfi_topology_read_stream(f, "fuzz", &t, &d);
    fclose(f);
    long lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    if (e != PFI_OK) {
        check(t == NULL);
        check(memchr(d.message, '\0', sizeof d.message) != NULL);
        check(d.line >= 0 && d.line <= lines);
        return 0;
    }
    check(t != NULL && t->n >= 1);
    for (size_t i = 0; i < t->n; i++) {
        check(t->parent[i] == PFI_TOPO_NONE || t->parent[i] < t->n);
        check(t->parent[i] == PFI_TOPO_NONE ? t->depth[i] == 0
                                            : t->depth[i] == t->depth[t->parent[i]] + 1);
        check(t->depth[i] < t->n);
        check(t->limit_w[i] > 0);
        check(i == 0 || t->line[i] > t->line[i - 1]);
        size_t k;
        check(pfi_topology_find(t, t->name[i], &k) == PFI_OK && k == i);
    }
    /* one job (two points) under each level, the last level's; budget 1e6 W */
    size_t n = t->n < 64 ? t->n : 64;
    size_t *off = malloc((n + 1) * sizeof *off), *node = malloc(n * sizeof *node);
    double *cap = malloc(2 * n * sizeof *cap), *pw = malloc(2 * n * sizeof *pw),
           *tp = malloc(2 * n * sizeof *tp);
    if (off && node && cap && pw && tp) {
        for (size_t j = 0; j < n; j++) {
            off[j] = 2 * j;
            node[j] = j;
            cap[2 * j] = 100;
            cap[2 * j + 1] = 700;
            pw[2 * j] = 90;
            pw[2 * j + 1] = 650;
            tp[2 * j] = 10;
            tp[2 * j + 1] = 40 + (double)j;
        }
        off[n] = 2 * n;
        pfi_alloc_jobs J = {.n = n, .offset = off, .cap_w = cap, .power_w = pw, .tput_tok_s = tp};
        pfi_alloc_tree tree;
        pfi_alloc_tree_from(t, node, &tree);
        pfi_alloc_options o;
        pfi_alloc_options_init(&o);
        o.budget_w = 1e6;
        pfi_alloc_result r;
        pfi_alloc_tree_result tr;
        if (pfi_alloc_result_init(&r, n) == PFI_OK) {
            if (pfi_alloc_tree_result_init(&tr, t->n) == PFI_OK) {
                pfi_error ae = pfi_allocate_tree(&J, &o, &tree, &r, &tr, &d);
                check(ae == PFI_OK);
                for (size_t a = 0; r.feasible && a < t->n; a++) {
                    double used = t->kind[a] == PFI_LIMIT_RESERVE ? tr.reserve_w[a] : tr.drawn_w[a];
                    check(used <= t->limit_w[a] * (1 + 1e-9) + 1e-9);
                }
                pfi_alloc_tree_result_clear(&tr);
            }
            pfi_alloc_result_clear(&r);
        }
    }
    free(off);
    free(node);
    free(cap);
    free(pw);
    free(tp);
    pfi_topology_destroy(t);
    return 0;
}
