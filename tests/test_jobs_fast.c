/*
 * The speed-ups of `pfi allocate` held to what they replace (issue 18 item 8):
 *  - fmt_g10 (src/cli/fmt_num.h) against snprintf "%.10g", byte for byte, on 3 million
 *    values (random bit patterns, decimals of the jobs files' kind, every decade, ties, whole
 *    numbers of every length) and edge cases;
 *  - the reader's number fast path (jobs_fast_number) against strtod, bit for bit, on 4
 *    million random decimals (signs, leading zeros, 1 to 24 digits, any point position,
 *    printf's decimals of random doubles) and edge cases;
 *  - the jobs reader's fast path (in order, and the restart without order) against pfi/csv.h
 *    alone (jobs_read_buffer with general) on generated files of up to 30 000 rows, clean and
 *    damaged (rows shuffled, blanks, CRs, empty and missing cells, bad numbers, negative
 *    values, duplicate caps, a node that changes, a late quote): the same jobs, or the same
 *    error with the same line, column and message; the largest files also through
 *    pfi_jobs_read from a file (mapped, not read, from 1 MiB), one of a whole number of
 *    pages.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/fmt_num.h"
#include "pfi/jobs.h"
#include "power/jobs_internal.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (failures++ < 20) {                                                                 \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void check_g10(double v)
{
    char a[64], b[64];
    int n = fmt_g10(a, v);
    snprintf(b, sizeof b, "%.10g", v);
    CHECK(strcmp(a, b) == 0 && n == (int)strlen(b), "%.17g: fmt_g10 '%s', printf '%s'", v, a, b);
}

static void test_fmt(void)
{
    const double edge[] = {0.0,
                           -0.0,
                           1e-4,
                           9.9999999995e-5,
                           1e-4 * (1 - 1e-16),
                           1e10,
                           9999999999.4,
                           9999999999.5,
                           9999999999.6,
                           0.5,
                           1.5,
                           2.5,
                           1234567890.5,
                           123456789.05,
                           0.00012345678905,
                           1,
                           10,
                           100,
                           1e9,
                           9999999999.0,
                           123456789.0,
                           8,
                           999999999.95,
                           99.99999999995,
                           1360.000,
                           2 / 3.0,
                           1e300,
                           5e-324,
                           INFINITY,
                           -INFINITY,
                           NAN};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        check_g10(edge[i]);
        check_g10(-edge[i]);
    }
    for (long i = 0; i < 3000000; i++) {
        uint64_t s = next();
        double v;
        switch (i % 6) {
        case 0:
            memcpy(&v, &s, sizeof v);
            break;
        case 5: /* whole numbers (gpus, caps): every length up to 10 digits and 1e10 */
            v = (double)(s % 10000000001ull) / (double)(1ull << ((s >> 40) % 34));
            v = floor(v);
            break;
        case 1:
            v = (double)(s % 100000000000ull) / 1000.0; /* %.3f-like decimals */
            break;
        case 2:
            v = ldexp((double)(s >> 11), -53) * pow(10, (double)((int)(s % 30) - 12));
            break;
        case 3: /* ties at the tenth digit */
            v = ((double)(s % 10000000000ull) + 0.5) * pow(10, (double)((int)(s % 16) - 12));
            break;
        default:
            v = (double)(s % 2000000) / (double)(1 + (s >> 40) % 1000);
        }
        check_g10(i % 7 == 0 ? -v : v);
    }
}

/* s: jobs_fast_number either declines it or gives strtod's double, bit for bit; returns
   whether it took it */
static bool check_number(const char *s)
{
    double v = 12345.0;
    size_t n = strlen(s);
    if (!jobs_fast_number(s, n, &v)) {
        CHECK(v == 12345.0, "'%s': declined but *v written", s);
        return false;
    }
    char *end = NULL;
    double r = strtod(s, &end);
    CHECK(n > 0 && end == s + n, "'%s': taken, strtod stops at %td", s, end - s);
    CHECK(memcmp(&v, &r, sizeof v) == 0, "'%s': fast %.17g, strtod %.17g", s, v, r);
    return true;
}

static void test_number(void)
{
    static const char *const taken[] = {"0",
                                        "-0",
                                        "+0",
                                        "00",
                                        "0.",
                                        ".5",
                                        "-.5",
                                        "1.",
                                        "000000000000000000000000000001.5",
                                        "9007199254740992",
                                        "900719925474099.2",
                                        "0.9007199254740992",
                                        "1234567890123456789",
                                        "0.0000000000000000000001",
                                        "1510.023",
                                        "80038.954",
                                        "8",
                                        "700",
                                        "0.1",
                                        "0.3",
                                        "123456789012345678",
                                        "4.35",
                                        "2.675",
                                        "1.0000000000000002"};
    static const char *const declined[] = {"",
                                           "-",
                                           "+",
                                           ".",
                                           "-.",
                                           "1.2.3",
                                           " 1",
                                           "1 ",
                                           "1e5",
                                           "1E5",
                                           "0x10",
                                           "inf",
                                           "nan",
                                           "--1",
                                           "+-1",
                                           "1-",
                                           "9007199254740993",
                                           "12345678901234567890",
                                           "1.00000000000000000000001",
                                           "0.00000000000000000000001",
                                           "1,5",
                                           "\xd9\xa1"};
    size_t n_taken = 0;
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++)
        n_taken += check_number(taken[i]);
    for (size_t i = 0; i < sizeof declined / sizeof declined[0]; i++) {
        double v = 12345.0;
        CHECK(!jobs_fast_number(declined[i], strlen(declined[i]), &v), "'%s': taken", declined[i]);
    }
    CHECK(n_taken >= 20, "only %zu of the plain decimals taken", n_taken);
    /* -0 keeps its sign */
    double z = 1;
    CHECK(jobs_fast_number("-0.0", 4, &z) && signbit(z) && z == 0, "'-0.0': %g", z);
    size_t took = 0, tries = 4000000;
    char b[64];
    for (size_t i = 0; i < tries; i++) {
        uint64_t r = next();
        if (i % 2 == 0) { /* digits and a point, anywhere */
            int k = 0;
            if (r % 5 == 0)
                b[k++] = r % 3 ? '-' : '+';
            int zeros = (r >> 8) % 7 == 0 ? (int)((r >> 11) % 25) : 0;
            for (int j = 0; j < zeros; j++)
                b[k++] = '0';
            int nd = 1 + (int)((r >> 16) % 24), dot = (int)((r >> 24) % (unsigned)(nd + 2)) - 1;
            uint64_t q = next();
            for (int j = 0; j < nd; j++) {
                if (j == dot)
                    b[k++] = '.';
                b[k++] = (char)('0' + (j > 0 && (r >> 40) % 4 == 0 ? 9 : q % 10));
                q = q / 10 ? q / 10 : next();
            }
            if (dot == nd)
                b[k++] = '.';
            b[k] = '\0';
        } else { /* printf's decimals of a random double, as generators write them */
            double x;
            uint64_t bits = next();
            switch (r % 3) {
            case 0:
                memcpy(&x, &bits, sizeof x);
                if (!isfinite(x) || fabs(x) >= 1e20 || fabs(x) < 1e-10)
                    x = (double)(bits % 100000000) / 1000.0;
                break;
            case 1:
                x = (double)(bits % 1000000000000ull) / pow(10, (double)((r >> 8) % 16));
                break;
            default:
                x = (double)(bits % 10000000) * 0.001;
            }
            snprintf(b, sizeof b, "%.*f", (int)((r >> 16) % 18), x);
        }
        took += check_number(b);
    }
    CHECK(took > tries / 2, "the fast path took only %zu of %zu", took, tries);
}

static bool same_doubles(const double *a, const double *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(a[i] == b[i] || (isnan(a[i]) && isnan(b[i]))))
            return false;
    return true;
}

static bool same_text(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* the same jobs in a and b */
static bool same_jobs(const pfi_jobs *a, const pfi_jobs *b)
{
    bool same = a->n == b->n && memcmp(a->offset, b->offset, (a->n + 1) * sizeof *a->offset) == 0;
    size_t np = same ? a->offset[a->n] : 0;
    same = same && same_doubles(a->cap_w, b->cap_w, np) &&
           same_doubles(a->power_w, b->power_w, np) &&
           same_doubles(a->tput_tok_s, b->tput_tok_s, np) && same_doubles(a->gpus, b->gpus, a->n) &&
           same_doubles(a->weight, b->weight, a->n) && same_doubles(a->band, b->band, a->n) &&
           same_doubles(a->cap_hi_w, b->cap_hi_w, a->n);
    for (size_t i = 0; same && i < a->n; i++)
        same = same_text(a->name[i], b->name[i]) && same_text(a->job_class[i], b->job_class[i]) &&
               same_text(a->node[i], b->node[i]) && a->node_line[i] == b->node_line[i];
    return same;
}

/* The fast path and pfi/csv.h on text[0..n); with file, also pfi_jobs_read of the text
   written to a file (mapped when it is 1 MiB or more, read otherwise). Returns the fast
   path's error. */
static pfi_error compare(const char *text, size_t n, const char *what, bool file)
{
    pfi_jobs *J[3] = {NULL, NULL, NULL};
    pfi_diag d[3];
    pfi_error e[3];
    int readers = file ? 3 : 2;
    for (int g = 0; g < readers; g++) {
        pfi_diag_clear(&d[g]);
        if (g == 2) {
            const char *dir = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
            char path[512];
            snprintf(path, sizeof path, "%s/test_jobs_fast.XXXXXX", dir);
            int fd = mkstemp(path);
            FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
            if (f == NULL || fwrite(text, 1, n, f) != n || fclose(f) != 0)
                abort();
            e[g] = pfi_jobs_read(path, &J[g], &d[g]);
            remove(path);
            continue;
        }
        char *buf = malloc(n + JOBS_BUFFER_PAD);
        if (buf == NULL)
            abort();
        memcpy(buf, text, n);
        e[g] = jobs_read_buffer(buf, n, "gen.csv", g == 1, &J[g], &d[g]);
        CHECK(memcmp(buf, text, n) == 0, "%s: the input was written", what);
        free(buf);
    }
    for (int g = 0; g < readers; g++) {
        const char *who = g == 0 ? "fast" : "file";
        if (g == 1)
            continue;
        CHECK(e[g] == e[1], "%s: %s %d, general %d (%s / %s)", what, who, e[g], e[1], d[g].message,
              d[1].message);
        if (e[g] == e[1] && e[g] != PFI_OK)
            CHECK(d[g].line == d[1].line && strcmp(d[g].column, d[1].column) == 0 &&
                      strcmp(d[g].message, d[1].message) == 0,
                  "%s: %s: line %ld/%ld column %s/%s: '%s' / '%s'", what, who, d[g].line, d[1].line,
                  d[g].column, d[1].column, d[g].message, d[1].message);
        if (e[g] == PFI_OK && e[1] == PFI_OK)
            CHECK(same_jobs(J[g], J[1]), "%s: %s: the jobs differ", what, who);
    }
    for (int g = 0; g < readers; g++)
        pfi_jobs_destroy(J[g]);
    return e[0];
}

/* a jobs file of n_jobs jobs x 6 points; damage: 0 none, else one kind of damage */
static size_t gen(char *out, size_t cap, size_t n_jobs, int damage, bool shuffle)
{
    size_t k = 0, rows = n_jobs * 6;
    char(*line)[128] = malloc(rows * sizeof *line);
    if (line == NULL)
        abort();
    k += (size_t)snprintf(out + k, cap - k, "%sjob,class,gpus,cap_w,power_w,tput_tok_s,band,node\n",
                          damage == 9 ? "\xef\xbb\xbf" : "");
    for (size_t j = 0; j < n_jobs; j++) {
        double rho = 0.85 + 0.15 * (double)(next() % 1000) / 1000, e = 0.2 + 0.7 * 0.5;
        for (int i = 0; i < 6; i++) {
            double c = 200 + 100 * i, p = 8 * c * rho, t = 50000 * pow(p / (8 * 700 * rho), e);
            snprintf(line[j * 6 + i], sizeof line[0], "job%zu,%s,%s,%.0f,%.3f,%.3f,%s,%s", j,
                     j % 3 ? "dense" : "moe-ft", i == 0 || j % 2 ? "8" : "", c, p, t,
                     i == 1 ? "2" : "", j % 5 ? "n1" : "");
        }
    }
    for (size_t r = 0; shuffle && r + 1 < rows; r++) { /* a few swaps: rows out of order */
        if (next() % 50 != 0)
            continue;
        size_t q = r + 1 + next() % (rows - r - 1);
        char t[128];
        memcpy(t, line[r], sizeof t);
        memcpy(line[r], line[q], sizeof t);
        memcpy(line[q], t, sizeof t);
    }
    size_t at = rows / 2 + next() % (rows / 2);
    for (size_t r = 0; r < rows; r++) {
        const char *l = line[r];
        char tmp[160];
        if (r == at) {
            switch (damage) {
            case 1:
                snprintf(tmp, sizeof tmp, "%s,extra", l), l = tmp;
                break;
            case 2:
                l = "job1,dense,8,200,-5,10,,n1";
                break;
            case 3:
                l = "job1,dense,8,2x0,5,10,,n1";
                break;
            case 4:
                l = "   \t ";
                break;
            case 5:
                snprintf(tmp, sizeof tmp, "\"%s\"", l), l = tmp;
                break;
            case 6:
                l = "job0,dense,8,200,1500,10,,n2";
                break;
            case 7:
                l = ",dense,8,200,1500,10,,";
                break;
            case 8:
                snprintf(tmp, sizeof tmp, " %s \r", l), l = tmp;
                break;
            default:
                break;
            }
        }
        k += (size_t)snprintf(out + k, cap - k, "%s%s\n", l, r % 97 == 5 ? "\n" : "");
    }
    free(line);
    return k;
}

static void test_reader(void)
{
    size_t cap = 8 << 20;
    char *text = malloc(cap);
    if (text == NULL)
        abort();
    const size_t sizes[] = {1, 3, 40, 700, 5000};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
        for (int damage = 0; damage <= 9; damage++)
            for (int sh = 0; sh < 2; sh++) {
                char what[64];
                snprintf(what, sizeof what, "%zu jobs, damage %d, shuffled %d", sizes[z], damage,
                         sh);
                size_t n = gen(text, cap, sizes[z], damage, sh);
                /* the largest (over 1 MiB) also from a file, mapped: once as generated,
                   once with blank lines to a multiple of 4 KiB (the pad on a page of its
                   own) */
                bool file = sizes[z] >= 5000 && sh == 0;
                pfi_error e = compare(text, n, what, file);
                if (file && damage == 0) {
                    while (n % 4096 != 0)
                        text[n++] = '\n';
                    CHECK(compare(text, n, what, true) == PFI_OK, "%s: page-sized: refused", what);
                }
                if (damage == 0 && sh == 0)
                    CHECK(e == PFI_OK, "%s: refused", what);
                if (damage == 2 || damage == 3 || damage == 6 || damage == 7)
                    CHECK(e == PFI_ERR_VALUE, "%s: accepted", what);
            }
    free(text);
}

/* One cell of column c (a name of the table below) for gen_wide: the usual value, or now and
   then one of the odd ones (blanks, signs, exponents, long digit strings, words, a quote). */
static const char *const oddities[] = {"",
                                       " 5",
                                       "5 ",
                                       "+5",
                                       "-0",
                                       "-3",
                                       "1e3",
                                       "abc",
                                       "007",
                                       "0",
                                       ".5",
                                       "5.",
                                       ".",
                                       "1.2.3",
                                       "99999999999999999999",
                                       "12345678.123456789",
                                       "1000001",
                                       "0.5",
                                       "\t7",
                                       "8\"",
                                       "123456789012345678",
                                       "00000000000000000000001.5",
                                       "1.5",
                                       "2",
                                       "100.5",
                                       "100001",
                                       "1000000000000001",
                                       "9999999",
                                       "1000000",
                                       "100000",
                                       "1e15",
                                       "1000000000000000",
                                       "1e16",
                                       "9007199254740993",
                                       "0.0000000001",
                                       "65390517.",
                                       "8\r",
                                       "\"8\"",
                                       "n 1"};
#define N_ODD (sizeof oddities / sizeof oddities[0])

/* The forced odd cell of gen_wide: column force_col (a name), point force_point of job
   force_job, value oddities[force_odd]. */
static const char *force_col;
static size_t force_job, force_odd;
static int force_point;

static int wide_cell(char *b, size_t cap, const char *c, size_t j, int i, bool odd)
{
    if (odd)
        return snprintf(b, cap, "%s", oddities[next() % N_ODD]);
    if (strcmp(c, "job") == 0)
        return j % 23 == 7   ? snprintf(b, cap, "job %zu with a space", j)
               : j % 31 == 3 ? snprintf(b, cap,
                                        "a-long-job-name-of-more-than-sixty-four-bytes-"
                                        "to-cross-a-block-%zu",
                                        j)
                             : snprintf(b, cap, "job%zu", j);
    if (strcmp(c, "cap_w") == 0)
        return snprintf(b, cap, "%d", 100 * (i + 1) + (j % 5 == 0 ? 50 : 0));
    if (strcmp(c, "power_w") == 0)
        return snprintf(b, cap, "%.3f", (double)(100 * (i + 1)) * (1 + (double)(j % 7) / 10));
    if (strcmp(c, "tput_tok_s") == 0)
        return j % 11 == 4 ? snprintf(b, cap, "%.10g", 0.001 * (i + 1) / 3)
                           : snprintf(b, cap, "%.3f", 1000.0 * (i + 1) + (double)(j % 97));
    if (strcmp(c, "class") == 0)
        return snprintf(b, cap, "%s", j % 4 == 0 ? "" : j % 3 ? "dense" : "moe-ft");
    if (strcmp(c, "gpus") == 0)
        return i > 0 && j % 3 == 0 ? snprintf(b, cap, "%s", "")
                                   : snprintf(b, cap, "%zu", 1 + j % 16);
    if (strcmp(c, "node") == 0)
        return snprintf(b, cap, "%s", j % 5 == 0 ? "" : j % 2 ? "n1" : "rack-b-node-17");
    if (strcmp(c, "band") == 0) /* whole, negative or fractional, in one row or in all */
        return j % 7 == 3   ? snprintf(b, cap, "%s", "-2.5")
               : j % 5 == 1 ? snprintf(b, cap, "%zu", j % 4)
               : i == 1     ? snprintf(b, cap, "%zu", j % 3)
                            : snprintf(b, cap, "%s", "");
    if (strcmp(c, "floor") == 0)
        return snprintf(b, cap, "%.2f", (double)(j % 10) / 10);
    if (strcmp(c, "pfi") == 0)
        return snprintf(b, cap, "%.4g", 0.5 + (double)(j % 9));
    if (strcmp(c, "note") == 0)
        return snprintf(b, cap, "%s", j % 2 ? "x" : "");
    return snprintf(b, cap, "%zu", 1 + (j * 7 + (size_t)i) % 400); /* weight, feature, caps */
}

/* A jobs file of n_jobs jobs of 1 to 6 points under a random header: the required columns and
   a random half of the optional ones (and sometimes an unknown one) in a random order, CRLF or
   LF, and one cell in about odd_in odd (wide_cell); now and then a job's later row with other
   gpus, band, class or node, a cap that does not rise, or a job that comes back after another's
   rows. What the fast path takes at once and what it leaves to take_row. */
static size_t gen_wide(char *out, size_t cap, size_t n_jobs, unsigned odd_in)
{
    const char *cols[] = {"job",       "cap_w",     "power_w", "tput_tok_s", "class",
                          "gpus",      "weight",    "floor",   "pfi",        "feature",
                          "cap_min_w", "cap_max_w", "band",    "node",       "note"};
    const char *use[15];
    size_t nu = 0;
    for (size_t c = 0; c < 15; c++)
        if (c < 4 || next() % 2 == 0 || (force_col != NULL && strcmp(cols[c], force_col) == 0))
            use[nu++] = cols[c];
    for (size_t c = nu - 1; c > 0; c--) { /* shuffled */
        size_t q = next() % (c + 1);
        const char *t = use[c];
        use[c] = use[q];
        use[q] = t;
    }
    const char *eol = next() % 4 == 0 ? "\r\n" : "\n";
    size_t k = 0;
    for (size_t c = 0; c < nu; c++)
        k += (size_t)snprintf(out + k, cap - k, "%s%s", c ? "," : "", use[c]);
    k += (size_t)snprintf(out + k, cap - k, "%s", eol);
    for (size_t j = 0; j < n_jobs && k + 4096 < cap; j++) {
        size_t jj = next() % 400 == 0 && j > 2 ? j - 2 : j; /* a job that comes back */
        int np = 1 + (int)(next() % 6);
        if (force_col != NULL && j == force_job && np <= force_point)
            np = force_point + 1;
        for (int i = 0; i < np; i++) {
            for (size_t c = 0; c < nu; c++) {
                char cell[128];
                bool odd = next() % odd_in == 0;
                wide_cell(cell, sizeof cell, use[c], jj, i, odd);
                if (force_col != NULL && j == force_job && i == force_point &&
                    strcmp(use[c], force_col) == 0) {
                    snprintf(cell, sizeof cell, "%s", oddities[force_odd]);
                    odd = true;
                }
                if (!odd && i > 0 && next() % 300 == 0) /* a later row disagrees */
                    snprintf(cell, sizeof cell, "%s",
                             strcmp(use[c], "gpus") == 0    ? "3"
                             : strcmp(use[c], "class") == 0 ? "other"
                             : strcmp(use[c], "node") == 0  ? "n9"
                             : strcmp(use[c], "band") == 0  ? "7"
                             : strcmp(use[c], "cap_w") == 0 ? "100"
                                                            : cell);
                k += (size_t)snprintf(out + k, cap - k, "%s%s", c ? "," : "", cell);
            }
            k += (size_t)snprintf(out + k, cap - k, "%s", eol);
        }
    }
    return k;
}

static void test_reader_wide(void)
{
    size_t cap = 4 << 20;
    char *text = malloc(cap);
    if (text == NULL)
        abort();
    size_t ok = 0, refused = 0;
    for (int f = 0; f < 600; f++) {
        char what[64];
        size_t jobs = f % 3 == 0 ? 5 : f % 3 == 1 ? 60 : 700;
        unsigned odd_in = f % 4 == 0 ? 1000000 : f % 4 == 1 ? 20000 : f % 4 == 2 ? 3000 : 300;
        snprintf(what, sizeof what, "wide file %d (%zu jobs, odd 1 in %u)", f, jobs, odd_in);
        size_t n = gen_wide(text, cap, jobs, odd_in);
        if (compare(text, n, what, false) == PFI_OK)
            ok++;
        else
            refused++;
    }
    /* both outcomes seen often: the comparison covers taken files and every kind of error */
    CHECK(ok > 100 && refused > 100, "wide files: %zu read, %zu refused", ok, refused);
    /* every odd value in every column, in a job's first row and in a later one */
    const char *cols[] = {"job",       "cap_w",     "power_w", "tput_tok_s", "class",
                          "gpus",      "weight",    "floor",   "pfi",        "feature",
                          "cap_min_w", "cap_max_w", "band",    "node",       "note"};
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
        for (size_t o = 0; o < N_ODD; o++)
            for (int pt = 0; pt < 2; pt++) {
                char what[96];
                snprintf(what, sizeof what, "column %s, point %d: '%s'", cols[c], pt, oddities[o]);
                force_col = cols[c];
                force_job = 5; /* "job5": a name the fast path takes */
                force_point = pt;
                force_odd = o;
                /* the other columns drawn at random, twice */
                for (int t = 0; t < 2; t++)
                    compare(text, gen_wide(text, cap, 20, 1000000), what, false);
            }
    force_col = NULL;
    free(text);
}

int main(void)
{
    test_fmt();
    test_number();
    test_reader();
    test_reader_wide();
    if (failures > 0) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
