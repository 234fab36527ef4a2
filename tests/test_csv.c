/*
 * Unit tests of pfi/csv.h: the bounded CSV record reader and the CSV field writer.
 */
#include <errno.h>
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

#include "checks.h"

#include "pfi/csv.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- helpers ---------------------------------------------------------------------------- */

/* Everything read from one input: the records (fields copied), the final status. */
typedef struct record {
    long line;
    size_t n;
    char **fields;
    size_t *lens;
} record;

typedef struct result {
    pfi_error err;
    pfi_diag diag;
    record *recs;
    size_t n_recs;
} result;

static void result_free(result *r)
{
    for (size_t i = 0; i < r->n_recs; i++) {
        for (size_t j = 0; j < r->recs[i].n; j++)
            free(r->recs[i].fields[j]);
        free(r->recs[i].fields);
        free(r->recs[i].lens);
    }
    free(r->recs);
    memset(r, 0, sizeof *r);
}

/* Read every record from an open reader until EOF or an error. */
static void read_all(pfi_csv_reader *rd, result *res)
{
    for (;;) {
        const char *const *f = NULL;
        const size_t *lens = NULL;
        size_t n = 12345;
        long line = -1;
        bool eof = true;
        res->err = pfi_csv_next(rd, &f, &lens, &n, &line, &eof, &res->diag);
        if (res->err != PFI_OK || eof)
            return;
        record *p = realloc(res->recs, (res->n_recs + 1) * sizeof *p);
        assert_non_null(p);
        res->recs = p;
        record *rec = &res->recs[res->n_recs++];
        rec->line = line;
        rec->n = n;
        rec->fields = calloc(n ? n : 1, sizeof *rec->fields);
        rec->lens = calloc(n ? n : 1, sizeof *rec->lens);
        assert_non_null(rec->fields);
        assert_non_null(rec->lens);
        for (size_t i = 0; i < n; i++) {
            /* fields are NUL-terminated and lens match */
            assert_int_equal(strlen(f[i]), lens[i]);
            rec->fields[i] = malloc(lens[i] + 1);
            assert_non_null(rec->fields[i]);
            memcpy(rec->fields[i], f[i], lens[i] + 1);
            rec->lens[i] = lens[i];
        }
    }
}

/* Read len bytes of text (may hold NULs) through fmemopen. */
static void read_mem(const char *text, size_t len, result *res)
{
    memset(res, 0, sizeof *res);
    /* fmemopen needs a non-zero size; an empty input is an empty file */
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, text, len);
    FILE *f = len ? fmemopen(copy, len, "r") : fopen("/dev/null", "r");
    assert_non_null(f);
    pfi_csv_reader *rd = NULL;
    assert_int_equal(pfi_csv_open_stream(f, "mem.csv", &rd, &res->diag), PFI_OK);
    assert_non_null(rd);
    read_all(rd, res);
    pfi_csv_close(rd);
    /* the stream is borrowed: still open after pfi_csv_close */
    assert_int_equal(fclose(f), 0);
    free(copy);
}

static void read_str(const char *text, result *res)
{
    read_mem(text, strlen(text), res);
}

/* Name of the table case being checked, for messages. */
static const char *g_case = "";

/* Compare a record with expected fields (NULL-terminated list). */
static void expect_record(const result *res, size_t i, long line, const char *const *want)
{
    if (i >= res->n_recs) {
        CHECK(false, "%s: record %zu missing (only %zu read, err %d '%s')\n", g_case, i,
              res->n_recs, (int)res->err, res->diag.message);
        return;
    }
    const record *r = &res->recs[i];
    size_t n = 0;
    while (want[n] != NULL)
        n++;
    CHECK(r->line == line, "%s: record %zu: line %ld, want %ld\n", g_case, i, r->line, line);
    CHECK(r->n == n, "%s: record %zu: %zu fields, want %zu\n", g_case, i, r->n, n);
    for (size_t j = 0; j < n && j < r->n; j++)
        CHECK(r->lens[j] == strlen(want[j]) && memcmp(r->fields[j], want[j], r->lens[j]) == 0,
              "%s: record %zu field %zu: '%s' (len %zu), want '%s'\n", g_case, i, j, r->fields[j],
              r->lens[j], want[j]);
}

#define REC(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- table-driven well-formed inputs ---------------------------------------------------- */

typedef struct want_rec {
    long line;
    const char *const *fields;
} want_rec;

static const struct {
    const char *name;
    const char *text;
    size_t n;
    want_rec recs[4];
} good[] = {
    {"simple", "a,b,c\n1,2,3\n", 2, {{1, REC("a", "b", "c")}, {2, REC("1", "2", "3")}}},
    {"embedded comma", "x,\"a,b\",y\n", 1, {{1, REC("x", "a,b", "y")}}},
    {"doubled quotes",
     "\"say \"\"hi\"\"\",2\n\"\"\"\",\"\"\n",
     2,
     {{1, REC("say \"hi\"", "2")}, {2, REC("\"", "")}}},
    {"quoted newline spans lines",
     "h1,h2\n\"line1\nline2\",z\nnext,1\n",
     3,
     {{1, REC("h1", "h2")}, {2, REC("line1\nline2", "z")}, {4, REC("next", "1")}}},
    {"quoted field over three lines",
     "a\n\"x\n\ny\n\",2\nb\n",
     3,
     {{1, REC("a")}, {2, REC("x\n\ny\n", "2")}, {6, REC("b")}}},
    {"CRLF",
     "a,b\r\n1,2\r\n3,4\r\n",
     3,
     {{1, REC("a", "b")}, {2, REC("1", "2")}, {3, REC("3", "4")}}},
    {"CRLF quoted", "\"a\",\"b\"\r\n\"1\",\"2\"\r\n", 2, {{1, REC("a", "b")}, {2, REC("1", "2")}}},
    {"CRLF quoted newline",
     "h\r\n\"p\r\nq\",r\r\ns\r\n",
     3,
     {{1, REC("h")}, {2, REC("p\r\nq", "r")}, {4, REC("s")}}},
    {"BOM", "\xEF\xBB\xBFname,val\n1,2\n", 2, {{1, REC("name", "val")}, {2, REC("1", "2")}}},
    {"BOM quoted header", "\xEF\xBB\xBF\"name\",val\n", 1, {{1, REC("name", "val")}}},
    {"blank lines skipped",
     "a\n\n\n  \n\t\nb\n\r\n\nc",
     3,
     {{1, REC("a")}, {6, REC("b")}, {9, REC("c")}}},
    {"leading blank lines", "\n\n\r\nh,i\n", 1, {{4, REC("h", "i")}}},
    {"trimming",
     "  a  ,\tb\t, c \r\n1 , 2,3 \n",
     2,
     {{1, REC("a", "b", "c")}, {2, REC("1", "2", "3")}}},
    {"blanks around quoted fields dropped", " \"a\" ,\t\"b\"\t\n", 1, {{1, REC("a", "b")}}},
    {"inner blanks kept", "a b , c\td\n", 1, {{1, REC("a b", "c\td")}}},
    {"last line without newline", "a,b\n1,2", 2, {{1, REC("a", "b")}, {2, REC("1", "2")}}},
    {"last quoted field without newline", "a\n\"x,y\"", 2, {{1, REC("a")}, {2, REC("x,y")}}},
    {"empty fields",
     "a,,c\n,\n,,\n",
     3,
     {{1, REC("a", "", "c")}, {2, REC("", "")}, {3, REC("", "", "")}}},
    {"quoted empty", "\"\",x\n", 1, {{1, REC("", "x")}}},
    {"N/A cells are text", "N/A,[N/A],-\n", 1, {{1, REC("N/A", "[N/A]", "-")}}},
    {"only blank lines", "\n\n   \n\r\n", 0, {{0, NULL}}},
    {"empty input", "", 0, {{0, NULL}}},
};

static void test_good_inputs(void **state)
{
    (void)state;
    for (size_t c = 0; c < ARRAY_LEN(good); c++) {
        result res;
        read_mem(good[c].text, strlen(good[c].text), &res);
        g_case = good[c].name;
        CHECK(res.err == PFI_OK, "%s: error %d (%s) at line %ld\n", good[c].name, (int)res.err,
              res.diag.message, res.diag.line);
        CHECK(res.n_recs == good[c].n, "%s: %zu records, want %zu\n", good[c].name, res.n_recs,
              good[c].n);
        for (size_t i = 0; i < good[c].n; i++)
            expect_record(&res, i, good[c].recs[i].line, good[c].recs[i].fields);
        result_free(&res);
    }
    g_case = "";
    END_CHECKS();
}

/* After the end, the reader keeps answering end of input. */
static void test_eof_repeats(void **state)
{
    (void)state;
    char text[] = "a,b\n";
    FILE *f = fmemopen(text, strlen(text), "r");
    assert_non_null(f);
    pfi_csv_reader *rd;
    assert_int_equal(pfi_csv_open_stream(f, NULL, &rd, NULL), PFI_OK);
    const char *const *fields;
    const size_t *lens;
    size_t n;
    long line;
    bool eof;
    assert_int_equal(pfi_csv_next(rd, &fields, &lens, &n, &line, &eof, NULL), PFI_OK);
    assert_false(eof);
    assert_int_equal(n, 2);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pfi_csv_next(rd, &fields, &lens, &n, &line, &eof, NULL), PFI_OK);
        assert_true(eof);
    }
    pfi_csv_close(rd);
    fclose(f);
}

/* A BOM is only dropped at the very start, not on later lines. */
static void test_bom_only_at_start(void **state)
{
    (void)state;
    result res;
    read_str("a\n\xEF\xBB\xBF"
             "b\n",
             &res);
    assert_int_equal(res.err, PFI_OK);
    assert_int_equal(res.n_recs, 2);
    expect_record(&res, 1, 2,
                  REC("\xEF\xBB\xBF"
                      "b"));
    result_free(&res);
}

/* ---- line length limit ------------------------------------------------------------------ */

/* A buffer of: "h\n" + "x\n" + one line of `content` bytes of 'a' + terminator + "z\n". */
static char *long_line_input(size_t content, const char *term, size_t *len)
{
    size_t tl = strlen(term);
    *len = 4 + content + tl + 2;
    char *buf = malloc(*len);
    assert_non_null(buf);
    memcpy(buf, "h\nx\n", 4);
    memset(buf + 4, 'a', content);
    memcpy(buf + 4 + content, term, tl);
    memcpy(buf + 4 + content + tl, "z\n", 2);
    return buf;
}

static void test_line_exactly_at_limit(void **state)
{
    (void)state;
    static const char *const terms[] = {"\n", "\r\n"};
    for (size_t t = 0; t < ARRAY_LEN(terms); t++) {
        size_t content = PFI_CSV_MAX_LINE - strlen(terms[t]); /* terminator included */
        size_t len;
        char *buf = long_line_input(content, terms[t], &len);
        result res;
        read_mem(buf, len, &res);
        if (res.err != PFI_OK)
            fail_msg("line of %d bytes (terminator %zu bytes) rejected: %d %s", PFI_CSV_MAX_LINE,
                     strlen(terms[t]), (int)res.err, res.diag.message);
        assert_int_equal(res.n_recs, 4);
        assert_int_equal(res.recs[2].line, 3);
        assert_int_equal(res.recs[2].n, 1);
        assert_int_equal(res.recs[2].lens[0], content);
        expect_record(&res, 3, 4, REC("z"));
        result_free(&res);
        free(buf);
    }
}

static void test_line_one_byte_over(void **state)
{
    (void)state;
    static const char *const terms[] = {"\n", "\r\n"};
    for (size_t t = 0; t < ARRAY_LEN(terms); t++) {
        size_t content = PFI_CSV_MAX_LINE - strlen(terms[t]) + 1;
        size_t len;
        char *buf = long_line_input(content, terms[t], &len);
        result res;
        read_mem(buf, len, &res);
        assert_int_equal(res.err, PFI_ERR_LINE_TOO_LONG);
        assert_int_equal(res.n_recs, 2); /* "h" and "x" came before */
        assert_int_equal(res.diag.line, 3);
        assert_string_equal(res.diag.file, "mem.csv");
        assert_non_null(strstr(res.diag.message, "65536"));
        result_free(&res);
        free(buf);
    }
}

/* The last line without a terminator: PFI_CSV_MAX_LINE bytes fit, one more does not. */
static void test_last_line_limit_without_newline(void **state)
{
    (void)state;
    size_t len = 2 + PFI_CSV_MAX_LINE + 1;
    char *buf = malloc(len);
    assert_non_null(buf);
    memcpy(buf, "h\n", 2);
    memset(buf + 2, 'b', PFI_CSV_MAX_LINE + 1);
    result res;
    read_mem(buf, len - 1, &res);
    assert_int_equal(res.err, PFI_OK);
    assert_int_equal(res.n_recs, 2);
    assert_int_equal(res.recs[1].lens[0], PFI_CSV_MAX_LINE);
    result_free(&res);
    read_mem(buf, len, &res);
    assert_int_equal(res.err, PFI_ERR_LINE_TOO_LONG);
    assert_int_equal(res.diag.line, 2);
    result_free(&res);
    free(buf);
}

/* A very long line (far over the limit) is rejected, in bounded memory. */
static void test_endless_line(void **state)
{
    (void)state;
    size_t len = 8u << 20;
    char *buf = malloc(len);
    assert_non_null(buf);
    memset(buf, 'q', len);
    result res;
    read_mem(buf, len, &res);
    assert_int_equal(res.err, PFI_ERR_LINE_TOO_LONG);
    assert_int_equal(res.diag.line, 1);
    assert_int_equal(res.n_recs, 0);
    result_free(&res);
    free(buf);
}

/* ---- field and record limits ------------------------------------------------------------ */

/* One line of n fields "1,1,...,1\n", after a header "h\n". */
static char *many_fields(size_t n, size_t *len)
{
    *len = 2 + 2 * n;
    char *buf = malloc(*len);
    assert_non_null(buf);
    memcpy(buf, "h\n", 2);
    for (size_t i = 0; i < n; i++) {
        buf[2 + 2 * i] = '1';
        buf[2 + 2 * i + 1] = i + 1 < n ? ',' : '\n';
    }
    return buf;
}

static void test_field_count_limit(void **state)
{
    (void)state;
    size_t len;
    char *buf = many_fields(PFI_CSV_MAX_FIELDS, &len);
    result res;
    read_mem(buf, len, &res);
    assert_int_equal(res.err, PFI_OK);
    assert_int_equal(res.n_recs, 2);
    assert_int_equal(res.recs[1].n, PFI_CSV_MAX_FIELDS);
    assert_int_equal(res.recs[1].line, 2);
    result_free(&res);
    free(buf);

    buf = many_fields(PFI_CSV_MAX_FIELDS + 1, &len);
    read_mem(buf, len, &res);
    assert_int_equal(res.err, PFI_ERR_LIMIT);
    assert_int_equal(res.diag.line, 2);
    assert_string_equal(res.diag.file, "mem.csv");
    assert_int_equal(res.n_recs, 1);
    result_free(&res);
    free(buf);

    /* the same limit without a final newline */
    buf = many_fields(PFI_CSV_MAX_FIELDS + 1, &len);
    read_mem(buf, len - 1, &res);
    assert_int_equal(res.err, PFI_ERR_LIMIT);
    assert_int_equal(res.diag.line, 2);
    result_free(&res);
    free(buf);
}

/*
 * After a header line "h": one record of n_fields quoted fields of `chunk` bytes each (the last
 * byte of each a newline), so the record spans n_fields + 1 physical lines, each under the line
 * limit: line 2 is '"rrr...\n', the next ones '","rrr...\n', the last '"\n'.
 */
static char *big_record(size_t n_fields, size_t chunk, size_t *len)
{
    *len = 2 + n_fields * (chunk + 3) + 1;
    char *buf = malloc(*len);
    assert_non_null(buf);
    char *p = buf;
    memcpy(p, "h\n", 2);
    p += 2;
    for (size_t i = 0; i < n_fields; i++) {
        *p++ = '"';
        memset(p, 'r', chunk - 1);
        p[chunk - 1] = '\n';
        p += chunk;
        *p++ = '"';
        *p++ = i + 1 < n_fields ? ',' : '\n';
    }
    *len = (size_t)(p - buf);
    return buf;
}

static void test_record_size_limit(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        size_t n_fields, chunk;
        bool ok;
    } cases[] = {
        {"15 fields of 60 kB (900 kB)", 15, 60000, true},
        {"22 fields of 60 kB (1.32 MB)", 22, 60000, false},
        {"1 field of 1.1 MB", 1, PFI_CSV_MAX_RECORD + 65536, false},
    };
    for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
        size_t len;
        char *buf;
        if (cases[c].n_fields == 1) {
            /* one quoted field over many lines: '"' then lines of 60000 bytes */
            size_t chunk = 60000, lines = (cases[c].chunk + chunk - 1) / chunk;
            len = 2 + 1 + lines * chunk + 2;
            buf = malloc(len);
            assert_non_null(buf);
            memcpy(buf, "h\n\"", 3);
            for (size_t i = 0; i < lines; i++) {
                memset(buf + 3 + i * chunk, 'r', chunk - 1);
                buf[3 + i * chunk + chunk - 1] = '\n';
            }
            memcpy(buf + 3 + lines * chunk, "\"\n", 2);
        } else {
            buf = big_record(cases[c].n_fields, cases[c].chunk, &len);
        }
        result res;
        read_mem(buf, len, &res);
        const char *nm = cases[c].name;
        if (cases[c].ok) {
            CHECK(res.err == PFI_OK, "%s: rejected: %d %s\n", nm, (int)res.err, res.diag.message);
            CHECK(res.n_recs == 2, "%s: %zu records, want 2\n", nm, res.n_recs);
            if (res.n_recs == 2) {
                CHECK(res.recs[1].line == 2, "%s: record from line 2 reported on line %ld\n", nm,
                      res.recs[1].line);
                CHECK(res.recs[1].n == cases[c].n_fields, "%s: %zu fields\n", nm, res.recs[1].n);
                CHECK(res.recs[1].lens[0] == cases[c].chunk, "%s: field 0 of %zu bytes\n", nm,
                      res.recs[1].lens[0]);
            }
        } else {
            CHECK(res.err == PFI_ERR_LIMIT, "%s: error %d, want PFI_ERR_LIMIT\n", nm, (int)res.err);
            CHECK(res.diag.line == 2, "%s: record from line 2: diag line %ld (%s)\n", nm,
                  res.diag.line, res.diag.message);
            CHECK(res.n_recs == 1, "%s: %zu records before the error, want 1\n", nm, res.n_recs);
        }
        result_free(&res);
        free(buf);
    }
    END_CHECKS();
}

/* ---- malformed input -------------------------------------------------------------------- */

static const struct {
    const char *name;
    const char *text;
    size_t len;    /* 0: strlen */
    pfi_error err; /* 0: any error */
    long line;
    size_t n_before; /* records read before the error */
} bad[] = {
    {"quote inside unquoted field", "a,b\nx,y\"z,w\n", 0, PFI_ERR_PARSE, 2, 1},
    {"text after closing quote", "a\n\"abc\"x,1\n", 0, PFI_ERR_PARSE, 2, 1},
    {"quote after text", "a\nb\nab\"\n", 0, PFI_ERR_PARSE, 3, 2},
    {"unterminated quote at end", "a\nb\n\"abc\n", 0, PFI_ERR_PARSE, 3, 2},
    {"unterminated quote spanning lines", "a\n\"abc\nd,e\nf\n", 0, PFI_ERR_PARSE, 2, 1},
    {"NUL byte", "a,b\n1,\0,2\n", 10, 0, 2, 1},
    {"NUL byte in quotes", "a\n\"x\0y\"\n", 8, 0, 2, 1},
    {"NUL byte on first line", "\0a\n", 3, 0, 1, 0},
};

static void test_bad_inputs(void **state)
{
    (void)state;
    for (size_t c = 0; c < ARRAY_LEN(bad); c++) {
        result res;
        size_t len = bad[c].len ? bad[c].len : strlen(bad[c].text);
        read_mem(bad[c].text, len, &res);
        const char *nm = bad[c].name;
        CHECK(res.err != PFI_OK, "%s: accepted (%zu records)\n", nm, res.n_recs);
        CHECK(bad[c].err == PFI_OK || res.err == bad[c].err, "%s: error %d, want %d\n", nm,
              (int)res.err, (int)bad[c].err);
        CHECK(res.diag.line == bad[c].line, "%s: diag line %ld, want %ld (%s)\n", nm, res.diag.line,
              bad[c].line, res.diag.message);
        CHECK(strcmp(res.diag.file, "mem.csv") == 0 && res.diag.message[0] != '\0',
              "%s: diag file '%s' message '%s'\n", nm, res.diag.file, res.diag.message);
        CHECK(res.n_recs == bad[c].n_before, "%s: %zu records before the error, want %zu\n", nm,
              res.n_recs, bad[c].n_before);
        result_free(&res);
    }
    END_CHECKS();
}

/* Errors with diag == NULL are reported the same way, without a crash. */
static void test_errors_without_diag(void **state)
{
    (void)state;
    char text[] = "a\n\"abc\"x\n";
    FILE *f = fmemopen(text, strlen(text), "r");
    assert_non_null(f);
    pfi_csv_reader *rd;
    assert_int_equal(pfi_csv_open_stream(f, "x", &rd, NULL), PFI_OK);
    const char *const *fields;
    const size_t *lens;
    size_t n;
    long line;
    bool eof;
    assert_int_equal(pfi_csv_next(rd, &fields, &lens, &n, &line, &eof, NULL), PFI_OK);
    assert_int_equal(pfi_csv_next(rd, &fields, &lens, &n, &line, &eof, NULL), PFI_ERR_PARSE);
    pfi_csv_close(rd);
    fclose(f);
    assert_int_equal(pfi_csv_open("/nonexistent-pfi-dir/x.csv", NULL, &rd, NULL), PFI_ERR_IO);
    assert_null(rd);
}

/* ---- files ------------------------------------------------------------------------------ */

static void test_missing_file(void **state)
{
    (void)state;
    pfi_csv_reader *rd = (pfi_csv_reader *)&rd; /* must be reset to NULL */
    pfi_diag d;
    memset(&d, 0x55, sizeof d);
    const char *path = "/nonexistent-pfi-dir/runs.csv";
    assert_int_equal(pfi_csv_open(path, NULL, &rd, &d), PFI_ERR_IO);
    assert_null(rd);
    assert_string_equal(d.file, path);
    assert_int_equal(d.line, 0);
    assert_string_equal(d.column, "");
    assert_non_null(strstr(d.message, strerror(ENOENT)));

    /* the name given is the one reported */
    assert_int_equal(pfi_csv_open(path, "shown.csv", &rd, &d), PFI_ERR_IO);
    assert_string_equal(d.file, "shown.csv");

    /* a directory cannot be read as CSV either */
    pfi_error e = pfi_csv_open("/", NULL, &rd, &d);
    if (e == PFI_OK) {
        result res = {0};
        read_all(rd, &res);
        assert_int_equal(res.err, PFI_ERR_IO);
        result_free(&res);
        pfi_csv_close(rd);
    } else {
        assert_int_equal(e, PFI_ERR_IO);
    }
}

static void test_real_file(void **state)
{
    (void)state;
    char path[] = "/tmp/pfi-test-csv-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "\xEF\xBB\xBFname, watts\r\n\"gpu, 0\",250\r\n\r\ngpu1,\"1\"\"2\"";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);

    pfi_csv_reader *rd;
    pfi_diag d;
    assert_int_equal(pfi_csv_open(path, NULL, &rd, &d), PFI_OK);
    result res = {0};
    read_all(rd, &res);
    pfi_csv_close(rd);
    assert_int_equal(res.err, PFI_OK);
    assert_int_equal(res.n_recs, 3);
    expect_record(&res, 0, 1, REC("name", "watts"));
    expect_record(&res, 1, 2, REC("gpu, 0", "250"));
    expect_record(&res, 2, 4, REC("gpu1", "1\"2"));
    result_free(&res);

    /* an error from a file names the file (the path, or the name given) */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("a\nb\"c\n", f);
    fclose(f);
    assert_int_equal(pfi_csv_open(path, "given.csv", &rd, &d), PFI_OK);
    read_all(rd, &res);
    pfi_csv_close(rd);
    assert_int_equal(res.err, PFI_ERR_PARSE);
    assert_string_equal(res.diag.file, "given.csv");
    assert_int_equal(res.diag.line, 2);
    result_free(&res);
    assert_int_equal(pfi_csv_open(path, NULL, &rd, &d), PFI_OK);
    read_all(rd, &res);
    pfi_csv_close(rd);
    assert_string_equal(res.diag.file, path);
    result_free(&res);
    unlink(path);
}

/* ---- writing ---------------------------------------------------------------------------- */

/* The field writer against hand-written fields: the quoting rule of pfi/csv.h, in the three
 * forms (needs_quotes, format into a buffer, write to a stream), then read back. */
static void test_write_field(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"", ""},
        {"gpu0", "gpu0"},
        {"a b", "a b"}, /* a blank inside is kept unquoted */
        {"dcgm_*", "dcgm_*"},
        {"x'y", "x'y"},
        {"a,b", "\"a,b\""},
        {",", "\",\""},
        {"say \"hi\"", "\"say \"\"hi\"\"\""},
        {"\"", "\"\"\"\""},
        {"two\nlines", "\"two\nlines\""},
        {"cr\r", "\"cr\r\""},
        {" lead", "\" lead\""},
        {"trail ", "\"trail \""},
        {"\tlead", "\"\tlead\""},
        {"trail\t", "\"trail\t\""},
        {" ", "\" \""},
        {"a\tb", "a\tb"}, /* a tab inside is kept unquoted */
    };
    for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
        const char *in = cases[c].in, *want = cases[c].out;
        size_t want_len = strlen(want);
        CHECK(pfi_csv_field_needs_quotes(in) == (want[0] == '"'), "needs_quotes('%s')\n", in);
        char buf[64];
        size_t n = pfi_csv_format_field(buf, sizeof buf, in);
        CHECK(n == want_len && strcmp(buf, want) == 0, "format('%s') = '%s' (%zu), want '%s'\n", in,
              buf, n, want);
        CHECK(pfi_csv_format_field(NULL, 0, in) == want_len, "format('%s') length only\n", in);
        /* cut to fit: NUL-terminated, the prefix of the field, the full length returned */
        char small[4];
        n = pfi_csv_format_field(small, sizeof small, in);
        CHECK(n == want_len && strlen(small) == (want_len < 3 ? want_len : 3) &&
                  strncmp(small, want, strlen(small)) == 0,
              "format('%s') into 4 bytes = '%s' (%zu)\n", in, small, n);
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        assert_non_null(f);
        CHECK(pfi_csv_write_field(f, in), "write('%s') failed\n", in);
        fclose(f);
        CHECK(len == want_len && memcmp(text, want, len) == 0, "write('%s') = '%s'\n", in, text);
        free(text);
        /* read back as the only field after a header: the reader gives the text back */
        char rec[80];
        snprintf(rec, sizeof rec, "h\n%s\n", want);
        result res;
        read_str(rec, &res);
        if (in[0] != '\0') /* the empty field alone is a blank line: skipped */
            CHECK(res.err == PFI_OK && res.n_recs == 2 && res.recs[1].n == 1 &&
                      strcmp(res.recs[1].fields[0], in) == 0,
                  "read back '%s': %d, %zu records\n", in, (int)res.err, res.n_recs);
        result_free(&res);
    }
    /* NULL is the empty field */
    char buf[8] = "x";
    CHECK(pfi_csv_format_field(buf, sizeof buf, NULL) == 0 && buf[0] == '\0', "format(NULL)\n");
    CHECK(pfi_csv_format_field(buf, 1, "abc") == 3 && buf[0] == '\0', "format into 1 byte\n");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    CHECK(pfi_csv_write_field(f, NULL), "write(NULL) failed\n");
    fclose(f);
    CHECK(len == 0, "write(NULL) wrote %zu bytes\n", len);
    free(text);
    END_CHECKS();
}

static void test_close_null(void **state)
{
    (void)state;
    pfi_csv_close(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_inputs),
        cmocka_unit_test(test_eof_repeats),
        cmocka_unit_test(test_bom_only_at_start),
        cmocka_unit_test(test_line_exactly_at_limit),
        cmocka_unit_test(test_line_one_byte_over),
        cmocka_unit_test(test_last_line_limit_without_newline),
        cmocka_unit_test(test_endless_line),
        cmocka_unit_test(test_field_count_limit),
        cmocka_unit_test(test_record_size_limit),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_errors_without_diag),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_real_file),
        cmocka_unit_test(test_close_null),
        cmocka_unit_test(test_write_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
