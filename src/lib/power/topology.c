/*
 * The topology file of a site's power tree (pfi/topology.h): its reader, the lookup of a
 * level by name, and the result arrays of the tree allocator.
 */
#include "pfi/topology.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/memory.h"
#include "pfi/value.h"

/* The longest line read (longer: PFI_ERR_LINE_TOO_LONG). */
#define TOPO_MAX_LINE 4096
#define TOPO_MAX_FIELDS 9 /* LEVEL NAME PARENT LIMIT_W and up to 5 options */

const char *pfi_limit_kind_name(pfi_limit_kind k)
{
    return k == PFI_LIMIT_RESERVE ? "reserve" : k == PFI_LIMIT_MEASURED ? "measured" : "unknown";
}

bool pfi_band_valid(double b)
{
    return isfinite(b) && fabs(b) <= PFI_BAND_MAX;
}

/* Whether t[0..n) is a decimal number: [+-] digits [. digits] or [+-] . digits, then an
   optional [eE] [+-] digits (what strtod reads as decimal, no hex, no words). */
static bool decimal_text(const char *t, size_t n)
{
    size_t i = 0, d = 0;
    if (i < n && (t[i] == '+' || t[i] == '-'))
        i++;
    for (; i < n && t[i] >= '0' && t[i] <= '9'; i++)
        d++;
    if (i < n && t[i] == '.')
        for (i++; i < n && t[i] >= '0' && t[i] <= '9'; i++)
            d++;
    if (d == 0)
        return false;
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-'))
            i++;
        size_t e = 0;
        for (; i < n && t[i] >= '0' && t[i] <= '9'; i++)
            e++;
        if (e == 0)
            return false;
    }
    return i == n;
}

pfi_band_status pfi_band_parse(const char *text, size_t len, double *out)
{
    *out = NAN;
    if (text == NULL)
        return PFI_BAND_NOT_NUMBER;
    while (len > 0 && (*text == ' ' || *text == '\t')) {
        text++;
        len--;
    }
    while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
        len--;
    if (!decimal_text(text, len))
        return PFI_BAND_NOT_NUMBER;
    double v;
    /* decimal: pfi_value_parse's value (C locale, an underflow 0 or subnormal); refused only
       when it does not fit a double */
    if (pfi_value_parse(text, len, &v) != PFI_VALUE_OK) {
        *out = text[0] == '-' ? -INFINITY : INFINITY;
        return PFI_BAND_OUT_OF_RANGE;
    }
    *out = v;
    return pfi_band_valid(v) ? PFI_BAND_OK : PFI_BAND_OUT_OF_RANGE;
}

char *pfi_band_format(double b, char buf[PFI_BAND_TEXT])
{
    if (isnan(b) || isinf(b)) {
        snprintf(buf, PFI_BAND_TEXT, "%s", isnan(b) ? "-" : b < 0 ? "-inf" : "inf");
        return buf;
    }
    double a = fabs(b), back;
    bool plain = a == 0 || (a >= 1e-15 && a < 1e17);
    for (int p = 15; p <= 17; p++) {
        char e[PFI_BAND_TEXT];
        snprintf(e, sizeof e, "%.*e", p - 1, b);
        if (p < 17 && (pfi_value_parse(e, strlen(e), &back) != PFI_VALUE_OK || back != b))
            continue;
        if (!plain) { /* the %g form of those digits: trailing zeros dropped */
            snprintf(buf, PFI_BAND_TEXT, "%.*g", p, b);
            return buf;
        }
        /* the same digits in plain form: as many decimals as the digits below the point */
        int x = a == 0 ? 0 : (int)strtol(strchr(e, 'e') + 1, NULL, 10); /* "%e": one exponent */
        int dec = p - 1 - x > 0 ? p - 1 - x : 0;
        snprintf(buf, PFI_BAND_TEXT, "%.*f", dec, b);
        char *dot = strchr(buf, '.');
        if (dot != NULL) {
            char *z = buf + strlen(buf);
            while (z > dot + 1 && z[-1] == '0')
                z--;
            if (z == dot + 1)
                z = dot;
            *z = '\0';
        }
        if (p == 17 || (pfi_value_parse(buf, strlen(buf), &back) == PFI_VALUE_OK && back == b))
            return buf;
    }
    return buf;
}

void pfi_topology_destroy(pfi_topology *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n; i++) {
        pfi_free(t->level[i]);
        pfi_free(t->name[i]);
        pfi_free(t->source[i]);
    }
    pfi_free(t->level);
    pfi_free(t->name);
    pfi_free(t->source);
    pfi_free(t->parent);
    pfi_free(t->limit_w);
    pfi_free(t->ramp_up_w_per_s);
    pfi_free(t->ramp_down_w_per_s);
    pfi_free(t->kind);
    pfi_free(t->line);
    pfi_free(t->depth);
    pfi_free(t);
}

pfi_error pfi_topology_find(const pfi_topology *t, const char *name, size_t *idx)
{
    for (size_t i = 0; t != NULL && i < t->n; i++)
        if (strcmp(t->name[i], name) == 0) {
            *idx = i;
            return PFI_OK;
        }
    return PFI_ERR_INVALID_ARGUMENT;
}

/* a and b equal but for ASCII case (no locale: "I" is "i" in every one) */
static bool ascii_case_equal(const char *a, const char *b)
{
    for (; *a != '\0' && *b != '\0'; a++, b++) {
        unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
        if (x >= 'A' && x <= 'Z')
            x = (unsigned char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z')
            y = (unsigned char)(y - 'A' + 'a');
        if (x != y)
            return false;
    }
    return *a == *b;
}

pfi_error pfi_topology_find_host(const pfi_topology *t, const char *host, size_t *idx)
{
    if (host == NULL)
        return PFI_ERR_INVALID_ARGUMENT;
    if (pfi_topology_find(t, host, idx) == PFI_OK)
        return PFI_OK;
    for (size_t i = 0; t != NULL && i < t->n; i++)
        if (ascii_case_equal(t->name[i], host)) {
            *idx = i;
            return PFI_OK;
        }
    return PFI_ERR_INVALID_ARGUMENT;
}

/* Room for one more level in every array. */
static bool topo_grow(pfi_topology *t, size_t *cap, char ***parent_name)
{
    if (t->n < *cap)
        return true;
    size_t n = *cap ? 2 * *cap : 16;
    void **arrays[] = {(void **)&t->level,
                       (void **)&t->name,
                       (void **)&t->source,
                       (void **)&t->parent,
                       (void **)&t->limit_w,
                       (void **)&t->kind,
                       (void **)&t->line,
                       (void **)&t->depth,
                       (void **)parent_name,
                       (void **)&t->ramp_up_w_per_s,
                       (void **)&t->ramp_down_w_per_s};
    size_t sizes[] = {sizeof(char *), sizeof(char *),         sizeof(char *), sizeof(size_t),
                      sizeof(double), sizeof(pfi_limit_kind), sizeof(long),   sizeof(size_t),
                      sizeof(char *), sizeof(double),         sizeof(double)};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        void *q = pfi_realloc(*arrays[k], n * sizes[k]);
        if (q == NULL)
            return false;
        *arrays[k] = q;
    }
    *cap = n;
    return true;
}

/* The fields of one line: its blank-separated words, NUL-terminated in place, the first
 * max + 1 of them in w (one past max: the first field too many, for the message); returns how
 * many words the line has. A '#' that starts a word starts a comment; inside a word it is
 * part of the name (`r#1`, as the jobs file's node column takes it). */
static size_t split(char *s, char **w, size_t max)
{
    size_t n = 0;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
            s++;
        if (*s == '\0' || *s == '#')
            return n;
        if (n <= max)
            w[n] = s;
        n++;
        while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
            s++;
        if (*s)
            *s++ = '\0';
    }
}

/* A simple hash table from name to index (open addressing, index + 1; 0 empty). */
typedef struct name_table {
    size_t *slot;
    size_t size;
} name_table;

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The index of name among t's first n names, or PFI_TOPO_NONE. */
static size_t table_find(const name_table *nt, char *const *names, const char *name)
{
    size_t h = name_hash(name) & (nt->size - 1);
    while (nt->slot[h]) {
        if (strcmp(names[nt->slot[h] - 1], name) == 0)
            return nt->slot[h] - 1;
        h = (h + 1) & (nt->size - 1);
    }
    return PFI_TOPO_NONE;
}

static void table_put(name_table *nt, const char *name, size_t idx)
{
    size_t h = name_hash(name) & (nt->size - 1);
    while (nt->slot[h])
        h = (h + 1) & (nt->size - 1);
    nt->slot[h] = idx + 1;
}

/* Parse one level's line (words w[0..nw)) into level t->n. */
static pfi_error parse_level(pfi_topology *t, char **w, size_t nw, char **parent_name,
                             const char *file, long line, pfi_diag *d)
{
    size_t i = t->n;
    const char *lvl = nw > 0 ? w[0] : "";
    /* a short line names the first field it lacks (the column), a long one its first field
     * too many: a ragged line is refused, never read shifted */
    static const char *const field[] = {"LEVEL", "NAME", "PARENT", "LIMIT_W"};
    if (nw < 4 || nw > TOPO_MAX_FIELDS) {
        char what[160];
        if (nw < 4)
            snprintf(what, sizeof what, "%s is missing", field[nw]);
        else
            snprintf(what, sizeof what, "field %d '%.60s' is one too many", TOPO_MAX_FIELDS + 1,
                     w[TOPO_MAX_FIELDS]);
        pfi_diag_set(d, file, line, nw < 4 ? field[nw] : NULL,
                     "level '%.60s': expected 'LEVEL NAME PARENT LIMIT_W [reserve|measured] "
                     "[source=TEXT] [ramp=W_PER_S] [ramp_up=W_PER_S] [ramp_down=W_PER_S]', got "
                     "%zu fields: %s",
                     lvl, nw, what);
        return PFI_ERR_PARSE;
    }
    double lim = INFINITY;
    if (strcmp(w[3], "-") != 0 && (pfi_value_parse(w[3], strlen(w[3]), &lim) != PFI_VALUE_OK ||
                                   !(lim > 0) || lim > PFI_TOPO_MAX_W)) {
        pfi_diag_set(d, file, line, "LIMIT_W",
                     "%.60s '%.100s': limit '%.60s' is not watts in (0, %g] (or '-' for none)", lvl,
                     w[1], w[3], PFI_TOPO_MAX_W);
        return PFI_ERR_VALUE;
    }
    pfi_limit_kind kind = PFI_LIMIT_RESERVE;
    const char *source = NULL;
    double up = INFINITY, down = INFINITY;
    /* the word that set each setting: a second one is refused (the last one silently won) */
    const char *kind_by = NULL, *source_by = NULL, *up_by = NULL, *down_by = NULL;
    for (size_t k = 4; k < nw; k++) {
        int rk = strncmp(w[k], "ramp=", 5) == 0         ? 5
                 : strncmp(w[k], "ramp_up=", 8) == 0    ? 8
                 : strncmp(w[k], "ramp_down=", 10) == 0 ? 10
                                                        : 0;
        if (rk > 0) {
            double x;
            const char *v = w[k] + rk;
            if (pfi_value_parse(v, strlen(v), &x) != PFI_VALUE_OK || !(x > 0) ||
                x > PFI_TOPO_MAX_W) {
                pfi_diag_set(d, file, line, "ramp",
                             "%.60s '%.100s': '%.60s': a ramp rate is W/s in (0, %g]", lvl, w[1],
                             w[k], PFI_TOPO_MAX_W);
                return PFI_ERR_VALUE;
            }
            const char *twice = rk != 10 && up_by != NULL    ? up_by
                                : rk != 8 && down_by != NULL ? down_by
                                                             : NULL;
            if (twice != NULL) {
                pfi_diag_set(d, file, line, "ramp",
                             "%.60s '%.100s': '%.60s' and '%.60s' both set the %s ramp: give "
                             "each rate once (ramp=, or ramp_up= and ramp_down=)",
                             lvl, w[1], twice, w[k], twice == up_by ? "upward" : "downward");
                return PFI_ERR_VALUE;
            }
            if (rk != 10) {
                up = x;
                up_by = w[k];
            }
            if (rk != 8) {
                down = x;
                down_by = w[k];
            }
            continue;
        }
        bool is_kind = strcmp(w[k], "reserve") == 0 || strcmp(w[k], "measured") == 0;
        bool is_source = strncmp(w[k], "source=", 7) == 0 && w[k][7] != '\0';
        const char *prev = is_kind ? kind_by : is_source ? source_by : NULL;
        if (prev != NULL) {
            pfi_diag_set(d, file, line, is_kind ? "KIND" : "source",
                         "%.60s '%.100s': '%.60s' and '%.60s': %s given twice (a level has one)",
                         lvl, w[1], prev, w[k], is_kind ? "the limit's kind" : "the source");
            return PFI_ERR_VALUE;
        }
        if (strcmp(w[k], "reserve") == 0)
            kind = PFI_LIMIT_RESERVE;
        else if (strcmp(w[k], "measured") == 0)
            kind = PFI_LIMIT_MEASURED;
        else if (is_source)
            source = w[k] + 7;
        if (is_kind)
            kind_by = w[k];
        else if (is_source)
            source_by = w[k];
        else {
            /* a kind in other case ("Reserve") is named as the KIND column, said lowercase */
            bool kind_case = strcasecmp(w[k], "reserve") == 0 || strcasecmp(w[k], "measured") == 0;
            pfi_diag_set(d, file, line, kind_case ? "KIND" : NULL,
                         "%.60s '%.100s': '%.60s' is not a kind (reserve, measured%s), "
                         "source=TEXT or ramp[_up|_down]=W_PER_S",
                         lvl, w[1], w[k], kind_case ? ": lowercase" : "");
            return PFI_ERR_PARSE;
        }
    }
    t->level[i] = pfi_strdup(w[0]);
    t->name[i] = pfi_strdup(w[1]);
    t->source[i] = source ? pfi_strdup(source) : NULL;
    parent_name[i] = strcmp(w[2], "-") == 0 ? NULL : pfi_strdup(w[2]);
    t->n++; /* owned from here: freed with t even when a copy failed */
    if (!t->level[i] || !t->name[i] || (source && !t->source[i]) ||
        (strcmp(w[2], "-") != 0 && !parent_name[i]))
        return PFI_ERR_NOMEM;
    t->limit_w[i] = lim;
    t->kind[i] = kind;
    t->ramp_up_w_per_s[i] = up;
    t->ramp_down_w_per_s[i] = down;
    t->line[i] = line;
    t->parent[i] = PFI_TOPO_NONE;
    t->depth[i] = 0;
    return PFI_OK;
}

/* Parents resolved by name, then every level's depth; a cycle or an unknown parent is an
 * error naming the line. */
static pfi_error resolve(pfi_topology *t, char **parent_name, const char *file, pfi_diag *d)
{
    name_table nt = {NULL, 16};
    while (nt.size < 2 * t->n + 2)
        nt.size *= 2;
    nt.slot = pfi_calloc(nt.size, sizeof *nt.slot);
    if (nt.slot == NULL)
        return PFI_ERR_NOMEM;
    pfi_error e = PFI_OK;
    for (size_t i = 0; i < t->n && e == PFI_OK; i++) {
        size_t k = table_find(&nt, t->name, t->name[i]);
        if (k != PFI_TOPO_NONE) {
            pfi_diag_set(d, file, t->line[i], "NAME",
                         "%.60s '%.100s' is given twice (line %ld and here, under '%.100s' and "
                         "'%.100s'): a level hangs from one parent",
                         t->level[i], t->name[i], t->line[k], parent_name[k] ? parent_name[k] : "-",
                         parent_name[i] ? parent_name[i] : "-");
            e = PFI_ERR_VALUE;
        } else {
            table_put(&nt, t->name[i], i);
        }
    }
    for (size_t i = 0; i < t->n && e == PFI_OK; i++) {
        if (parent_name[i] == NULL)
            continue;
        size_t p = table_find(&nt, t->name, parent_name[i]);
        if (p == PFI_TOPO_NONE) {
            pfi_diag_set(d, file, t->line[i], "PARENT",
                         "%.60s '%.100s': parent '%.100s' is not a level of the file", t->level[i],
                         t->name[i], parent_name[i]);
            e = PFI_ERR_VALUE;
        } else if (p == i) {
            pfi_diag_set(d, file, t->line[i], "PARENT", "%.60s '%.100s' is its own parent",
                         t->level[i], t->name[i]);
            e = PFI_ERR_VALUE;
        } else {
            t->parent[i] = p;
        }
    }
    /* depths, and cycles: a walk up longer than n levels never reaches a top */
    for (size_t i = 0; i < t->n && e == PFI_OK; i++) {
        size_t steps = 0, a = i;
        while (t->parent[a] != PFI_TOPO_NONE && steps <= t->n) {
            a = t->parent[a];
            steps++;
        }
        if (steps > t->n) {
            pfi_diag_set(d, file, t->line[i], "PARENT",
                         "%.60s '%.100s': its parents form a cycle (no top level above it)",
                         t->level[i], t->name[i]);
            e = PFI_ERR_VALUE;
        } else {
            t->depth[i] = steps;
            if (steps + 1 > t->max_depth)
                t->max_depth = steps + 1;
        }
    }
    pfi_free(nt.slot);
    return e;
}

pfi_error pfi_topology_read_stream(FILE *stream, const char *name, pfi_topology **out, pfi_diag *d)
{
    *out = NULL;
    pfi_diag_clear(d);
    pfi_topology *t = pfi_calloc(1, sizeof *t);
    if (t == NULL)
        return PFI_ERR_NOMEM;
    char **parent_name = NULL;
    size_t cap = 0;
    char buf[TOPO_MAX_LINE + 1];
    long line = 0;
    pfi_error e = PFI_OK;
    for (int c = 0; e == PFI_OK && c != EOF;) {
        size_t len = 0;
        bool nul = false, more = false;
        while ((c = getc(stream)) != EOF && c != '\n') {
            if (len == TOPO_MAX_LINE) {
                more = true;
                continue;
            }
            nul |= c == '\0';
            buf[len++] = (char)c;
        }
        if (c == EOF && len == 0 && !more)
            break;
        buf[len] = '\0';
        line++;
        if (more) {
            pfi_diag_set(d, name, line, NULL, "line longer than %d bytes", TOPO_MAX_LINE);
            e = PFI_ERR_LINE_TOO_LONG;
            break;
        }
        if (nul) {
            pfi_diag_set(d, name, line, NULL, "a NUL byte: not a text file");
            e = PFI_ERR_PARSE;
            break;
        }
        char *w[TOPO_MAX_FIELDS + 1];
        size_t nw = split(buf, w, TOPO_MAX_FIELDS);
        if (nw == 0)
            continue;
        if (t->n >= PFI_TOPO_MAX_NODES) {
            pfi_diag_set(d, name, line, NULL, "more than %d levels", PFI_TOPO_MAX_NODES);
            e = PFI_ERR_LIMIT;
            break;
        }
        if (!topo_grow(t, &cap, &parent_name)) {
            e = PFI_ERR_NOMEM;
            break;
        }
        parent_name[t->n] = NULL;
        e = parse_level(t, w, nw, parent_name, name, line, d);
    }
    if (e == PFI_OK && ferror(stream)) {
        int err = errno != 0 ? errno : EIO; /* a directory: EISDIR */
        pfi_diag_set(d, name, err == EISDIR ? 0 : line, NULL, "%s",
                     err == EISDIR ? "is a directory, not a topology file" : strerror(err));
        e = PFI_ERR_IO;
    }
    if (e == PFI_OK && t->n == 0) {
        pfi_diag_set(d, name, 0, NULL, "no levels (expected 'LEVEL NAME PARENT LIMIT_W' lines)");
        e = PFI_ERR_EMPTY;
    }
    if (e == PFI_OK)
        e = resolve(t, parent_name, name, d);
    for (size_t i = 0; i < t->n; i++)
        pfi_free(parent_name[i]);
    pfi_free(parent_name);
    if (e != PFI_OK) {
        pfi_topology_destroy(t);
        return e;
    }
    *out = t;
    return PFI_OK;
}

pfi_error pfi_topology_read(const char *path, pfi_topology **out, pfi_diag *d)
{
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        pfi_diag_set(d, path, 0, NULL, "cannot open: %s", strerror(errno));
        return PFI_ERR_IO;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        pfi_diag_set(d, path, 0, NULL, "cannot open: is a directory, expected a topology file");
        return PFI_ERR_IO;
    }
    pfi_error e = pfi_topology_read_stream(f, path, out, d);
    fclose(f);
    return e;
}

void pfi_alloc_tree_from(const pfi_topology *topo, const size_t *job_node, pfi_alloc_tree *t)
{
    memset(t, 0, sizeof *t);
    t->n_nodes = topo->n;
    t->parent = topo->parent;
    t->limit_w = topo->limit_w;
    t->kind = topo->kind;
    t->job_node = job_node;
    t->band = NULL;
    t->budget_kind = PFI_LIMIT_MEASURED;
    t->name = (const char *const *)topo->name;
    t->line = topo->line;
}

pfi_error pfi_alloc_tree_result_init(pfi_alloc_tree_result *tr, size_t n_nodes)
{
    memset(tr, 0, sizeof *tr);
    size_t m = n_nodes ? n_nodes : 1;
    tr->reserve_w = pfi_calloc(m, sizeof *tr->reserve_w);
    tr->drawn_w = pfi_calloc(m, sizeof *tr->drawn_w);
    tr->binding = pfi_calloc(m, sizeof *tr->binding);
    if (!tr->reserve_w || !tr->drawn_w || !tr->binding) {
        pfi_alloc_tree_result_clear(tr);
        return PFI_ERR_NOMEM;
    }
    tr->n_nodes = n_nodes;
    return PFI_OK;
}

void pfi_alloc_tree_result_clear(pfi_alloc_tree_result *tr)
{
    if (tr == NULL)
        return;
    pfi_free(tr->reserve_w);
    pfi_free(tr->drawn_w);
    pfi_free(tr->binding);
    memset(tr, 0, sizeof *tr);
}
