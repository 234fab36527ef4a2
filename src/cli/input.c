/*
 * Every input file of every verb read under the same two rules (cli.h): what is not a regular
 * file (a pipe, a FIFO, /dev/stdin, a device) is read at most PFI_MAX_INPUT_BYTES, and such
 * an input whose first line (within its first 64 KiB) holds a NUL byte is refused at once as
 * binary, never copied or parsed to its end (/dev/zero has no end). A regular file has an
 * end: its reader's own checks say where it is not text, with the line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* The most bytes read from one pipe: PFI_MAX_INPUT_BYTES, else 64 GiB. */
#define INPUT_DEFAULT_LIMIT (64ULL << 30)

bool cli_max_input_bytes(unsigned long long *out)
{
    *out = INPUT_DEFAULT_LIMIT;
    const char *v = getenv("PFI_MAX_INPUT_BYTES");
    if (v == NULL || v[0] == '\0')
        return true;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    unsigned shift = 0;
    if (end != v && *end != '\0' && end[1] == '\0') {
        const char *u = strchr("KMGT", *end);
        if (u != NULL) {
            shift = 10 * (unsigned)(u - "KMGT" + 1);
            end++;
        }
    }
    if (v[0] < '0' || v[0] > '9' || end == v || *end != '\0' || errno != 0 || n == 0 ||
        (shift > 0 && n > (~0ULL >> shift))) {
        cli_error("PFI_MAX_INPUT_BYTES: bad value '%s': want a positive number of bytes "
                  "(a K, M, G or T suffix allowed)",
                  v);
        return false;
    }
    *out = n << shift;
    return true;
}

/* The limit, or exit 2 with the message: a bad PFI_MAX_INPUT_BYTES is a usage error, said
 * before anything is read. */
static unsigned long long input_limit(void)
{
    unsigned long long lim;
    if (!cli_max_input_bytes(&lim))
        exit(PFI_EXIT_USAGE);
    return lim;
}

long long cli_first_line_nul(const unsigned char *b, size_t n)
{
    for (size_t k = 0; k < n && b[k] != '\n'; k++)
        if (b[k] == '\0')
            return (long long)k;
    return -1;
}

void cli_input_message(char *buf, size_t size, int err, unsigned long long nul,
                       unsigned long long limit)
{
    if (err == CLI_INPUT_BINARY)
        snprintf(buf, size, "not text (a NUL byte at offset %llu)", nul);
    else if (err == CLI_INPUT_LIMIT)
        snprintf(buf, size,
                 "more than %llu bytes (the limit on a pipe's input): raise it with "
                 "PFI_MAX_INPUT_BYTES, e.g. PFI_MAX_INPUT_BYTES=256G",
                 limit);
    else
        snprintf(buf, size, "%s", strerror(err));
}

int cli_spool_copy(FILE *in, FILE *out, unsigned long long limit, unsigned long long *nul)
{
    static unsigned char buf[1 << 20];
    const size_t sniff = (size_t)64 << 10;
    size_t head = 0, got;
    /* The first block before anything is written: a binary input (/dev/zero, an archive)
       is refused at once, not copied to its end (or without end). */
    while (head < sniff && (got = fread(buf + head, 1, sniff - head, in)) > 0)
        head += got;
    long long z = cli_first_line_nul(buf, head);
    if (z >= 0) {
        *nul = (unsigned long long)z;
        return CLI_INPUT_BINARY;
    }
    unsigned long long total = head;
    if (total > limit)
        return CLI_INPUT_LIMIT;
    if (head > 0 && fwrite(buf, 1, head, out) != head)
        return errno ? errno : EIO;
    while (!ferror(in) && !feof(in) && (got = fread(buf, 1, sizeof buf, in)) > 0) {
        total += got;
        if (total > limit)
            return CLI_INPUT_LIMIT;
        if (fwrite(buf, 1, got, out) != got)
            return errno ? errno : EIO;
    }
    if (ferror(in))
        return errno ? errno : EIO;
    if (fflush(out) != 0)
        return errno ? errno : EIO;
    return 0;
}

FILE *cli_spool_file(void)
{
    const char *dir = getenv("TMPDIR");
    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp";
    char tmpl[4096];
    int fd = -1;
    if (snprintf(tmpl, sizeof tmpl, "%s/pfi-spool-XXXXXX", dir) < (int)sizeof tmpl)
        fd = mkstemp(tmpl);
    FILE *out = fd >= 0 ? fdopen(fd, "w+b") : NULL;
    if (fd >= 0)
        unlink(tmpl); /* gone when closed, whatever happens */
    if (out == NULL && fd >= 0)
        close(fd);
    return out;
}

/* "WHAT PATH: " or "PATH: " for a message. */
static void said(const char *what, const char *path, const char *why)
{
    char safe[4 * 1024 + 4];
    cli_safe(safe, sizeof safe, path, strlen(path));
    if (what != NULL)
        cli_error("%s %s: %s", what, safe, why);
    else
        cli_error("%s: %s", safe, why);
}

int cli_input_spool(const char *what, const char *path, FILE **out)
{
    *out = NULL;
    bool std_in = strcmp(path, "-") == 0;
    struct stat st;
    if (!std_in && (stat(path, &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
        return PFI_EXIT_OK; /* the reader opens it and says what it is */
    unsigned long long limit = input_limit();
    FILE *in = std_in ? stdin : fopen(path, "rb");
    if (in == NULL)
        return PFI_EXIT_OK; /* not readable: the reader says so */
    FILE *copy = cli_spool_file();
    if (copy == NULL) {
        int e = errno;
        if (!std_in)
            fclose(in);
        char why[512];
        snprintf(why, sizeof why, "cannot copy the pipe's input to $TMPDIR: %s", strerror(e));
        said(what, path, why);
        return PFI_EXIT_DATA;
    }
    unsigned long long nul = 0;
    int err = cli_spool_copy(in, copy, limit, &nul);
    if (!std_in)
        fclose(in);
    if (err != 0) {
        fclose(copy);
        char why[512];
        cli_input_message(why, sizeof why, err, nul, limit);
        said(what, path, why);
        return PFI_EXIT_DATA;
    }
    rewind(copy);
    *out = copy;
    return PFI_EXIT_OK;
}

void cli_note_cut_line(const char *path, FILE *spool)
{
    bool std_in = strcmp(path, "-") == 0;
    FILE *f = spool;
    if (f == NULL) {
        struct stat st;
        if (std_in || stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
            return;
        f = fopen(path, "rb");
        if (f == NULL)
            return;
    }
    /* the last byte first: a newline there (nearly every file) needs no count of the lines,
       which would read the whole input once more (24 MB at 100 000 jobs) */
    int end = EOF;
    if (fseeko(f, -1, SEEK_END) == 0)
        end = fgetc(f);
    if (end == '\n') {
        if (spool != NULL)
            rewind(spool);
        else
            fclose(f);
        return;
    }
    rewind(f);
    long line = 1;
    int last = '\n';
    char buf[65536];
    size_t n;
    bool any = false, nul = false;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        any = true;
        nul = nul || memchr(buf, '\0', n) != NULL;
        for (size_t i = 0; i < n; i++)
            line += buf[i] == '\n';
        last = (unsigned char)buf[n - 1];
    }
    if (spool != NULL)
        rewind(spool);
    else
        fclose(f);
    if (!any || last == '\n' || nul) /* binary data: its reader refuses it, no note first */
        return;
    char safe[4 * 1024 + 4];
    cli_safe(safe, sizeof safe, std_in ? "(stdin)" : path, strlen(std_in ? "(stdin)" : path));
    cli_error("note: %s:%ld: the last line has no newline (a capture cut short?): its last "
              "value may be cut",
              safe, line);
}

/* The reason for cli_read_text's last NULL (cli_input_why). */
static char last_why[512];

const char *cli_input_why(void)
{
    return last_why;
}

/* The whole of f (or its first max_bytes when head), NUL-terminated, under the rules above;
 * NULL with last_why (and errno) set. */
static char *read_all(FILE *f, bool pipe, size_t max_bytes, bool head, size_t *len)
{
    unsigned long long limit = pipe ? input_limit() : ~0ULL;
    size_t cap = 65536, n = 0;
    char *b = malloc(cap + 1);
    bool sniffed = !pipe; /* a regular file's parser says where its bytes are not text */
    int err = b == NULL ? ENOMEM : 0;
    while (err == 0) {
        size_t end = head && max_bytes < cap ? max_bytes : cap;
        if (n == end) {
            if (head && n >= max_bytes)
                break;
            if (cap >= max_bytes) {
                snprintf(last_why, sizeof last_why, "larger than %zu bytes", max_bytes);
                err = EFBIG;
                break;
            }
            char *q = realloc(b, cap * 2 + 1);
            if (q == NULL) {
                err = ENOMEM;
                break;
            }
            b = q;
            cap *= 2;
            continue;
        }
        size_t r = fread(b + n, 1, end - n, f);
        if (r == 0) {
            if (ferror(f))
                err = errno ? errno : EIO;
            break;
        }
        n += r;
        if (!sniffed && (n >= ((size_t)64 << 10) || memchr(b, '\n', n) != NULL)) {
            sniffed = true;
            long long z = cli_first_line_nul((const unsigned char *)b, n);
            if (z >= 0) {
                cli_input_message(last_why, sizeof last_why, CLI_INPUT_BINARY,
                                  (unsigned long long)z, 0);
                err = EINVAL;
            }
        }
        if (err == 0 && pipe && n > limit) {
            cli_input_message(last_why, sizeof last_why, CLI_INPUT_LIMIT, 0, limit);
            err = EFBIG;
        }
    }
    if (err == 0 && !sniffed) {
        long long z = cli_first_line_nul((const unsigned char *)b, n);
        if (z >= 0) {
            cli_input_message(last_why, sizeof last_why, CLI_INPUT_BINARY, (unsigned long long)z,
                              0);
            err = EINVAL;
        }
    }
    if (err != 0) {
        if (last_why[0] == '\0')
            snprintf(last_why, sizeof last_why, "%s", strerror(err));
        free(b);
        errno = err;
        return NULL;
    }
    b[n] = '\0';
    *len = n;
    return b;
}

/* cli_read_text and cli_read_head: open path ("-": the standard input) and read_all. */
static char *read_path(const char *path, size_t max_bytes, bool head, size_t *len)
{
    last_why[0] = '\0';
    bool std_in = strcmp(path, "-") == 0;
    FILE *f = std_in ? stdin : fopen(path, "rb");
    if (f == NULL) {
        int e = errno;
        snprintf(last_why, sizeof last_why, "%s", strerror(e));
        errno = e;
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        if (!std_in)
            fclose(f);
        snprintf(last_why, sizeof last_why, "is a directory, not a file");
        errno = EISDIR;
        return NULL;
    }
    bool pipe = std_in || (fstat(fileno(f), &st) == 0 && !S_ISREG(st.st_mode));
    char *b = read_all(f, pipe, max_bytes, head, len);
    int e = errno;
    if (!std_in)
        fclose(f);
    errno = b == NULL ? e : 0;
    return b;
}

char *cli_read_text(const char *path, size_t max_bytes, size_t *len)
{
    return read_path(path, max_bytes, false, len);
}

char *cli_read_head(const char *path, size_t max_bytes, size_t *len)
{
    return read_path(path, max_bytes, true, len);
}
