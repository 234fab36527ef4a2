/*
 * Format detection (pfi_telemetry_detect, tm_detect): which reader a file's first bytes are for,
 * by its first line that says so, with the reason when it is none. Every format's rule is
 * here, in tm_detect's order.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "telemetry/internal.h"

/*
 * Detection is conservative: a file that is not telemetry must end in "format not
 * recognised" with what was seen, never in a reader that turns every line into a note and
 * then gives advice about a tool the file never came from. `why` (may be NULL) gets the
 * reason when the result is PFI_TELEMETRY_AUTO and there was something to read.
 */

/* Bytes that text output of nvidia-smi / dcgmi / an exporter never holds: NUL, C0 controls
 * other than tab, newline, CR, FF, VT and ESC (terminal colours are still text), and DEL.
 * Bytes >= 0x80 count only when they do not form valid UTF-8. */
static size_t non_text_bytes(const unsigned char *s, size_t n, size_t *first_nul)
{
    size_t bad = 0;
    *first_nul = (size_t)-1;
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c < 0x80) {
            if (c == 0 && *first_nul == (size_t)-1)
                *first_nul = i;
            if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' &&
                 c != 0x1B) ||
                c == 0x7F)
                bad++;
            i++;
            continue;
        }
        size_t len = c >= 0xC2 && c <= 0xDF   ? 2
                     : c >= 0xE0 && c <= 0xEF ? 3
                     : c >= 0xF0 && c <= 0xF4 ? 4
                                              : 0;
        size_t k = 1;
        while (len > 0 && k < len && i + k < n && (s[i + k] & 0xC0) == 0x80)
            k++;
        if (len == 0 || (k < len && i + k < n)) {
            bad++; /* a stray or truncated sequence (one cut by the end of head is fine) */
            i++;
        } else {
            i += k;
        }
    }
    return bad;
}

static bool prom_name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

/* 2: "# HELP" / "# TYPE"; 1: a sample line, name{labels} value [timestamp]; 0: other. */
static int prom_line_kind(const char *l, size_t len)
{
    if (len >= 7 && (memcmp(l, "# HELP ", 7) == 0 || memcmp(l, "# TYPE ", 7) == 0))
        return 2;
    size_t i = 0;
    if (len == 0 || !prom_name_char(l[0], true))
        return 0;
    while (i < len && prom_name_char(l[i], false))
        i++;
    if (i < len && l[i] == '{') {
        bool quoted = false;
        for (i++; i < len; i++) {
            if (quoted && l[i] == '\\')
                i++;
            else if (l[i] == '"')
                quoted = !quoted;
            else if (!quoted && l[i] == '}')
                break;
        }
        if (i >= len)
            return 0;
        i++;
    }
    if (i >= len || (l[i] != ' ' && l[i] != '\t'))
        return 0;
    while (i < len && (l[i] == ' ' || l[i] == '\t'))
        i++;
    if (i >= len)
        return 0;
    char c = l[i];
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'N' || c == 'I';
}

/* Whether the text w occurs in head[0..n). */
static bool has_text(const char *head, size_t n, const char *w)
{
    size_t m = strlen(w);
    for (size_t i = 0; i + m <= n; i++)
        if (head[i] == w[0] && memcmp(head + i, w, m) == 0)
            return true;
    return false;
}

/* A CSV header cell as nvidia-smi prints it: lower-case dotted names, an optional [unit]. */
static bool smi_header_cell(const char *s, size_t n, size_t *name_len)
{
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    const char *br = memchr(s, '[', n);
    size_t m = br ? (size_t)(br - s) : n;
    while (m > 0 && s[m - 1] == ' ')
        m--;
    if (m == 0)
        return false;
    for (size_t j = 0; j < m; j++) {
        char c = s[j];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ' '))
            return false;
    }
    *name_len = m;
    return true;
}

/* Whether name is an nvidia-smi --query-gpu field (--help-query-gpu): the groups of dotted
 * names, and the undotted ones that no other table uses. "timestamp", "index" and "name"
 * alone do not make a table nvidia-smi output. */
static bool smi_query_field(const char *s, size_t n)
{
    static const char *const plain[] = {
        "uuid",         "serial",           "driver_version", "pstate",         "vbios_version",
        "compute_mode", "persistence_mode", "display_mode",   "display_active", "compute_cap"};
    static const char *const groups[] = {"power",
                                         "enforced",
                                         "clocks",
                                         "clocks_throttle_reasons",
                                         "clocks_event_reasons",
                                         "utilization",
                                         "temperature",
                                         "memory",
                                         "fan",
                                         "pci",
                                         "pcie",
                                         "ecc",
                                         "retired_pages",
                                         "remapped_rows",
                                         "encoder",
                                         "driver_model",
                                         "gom",
                                         "inforom",
                                         "mig",
                                         "accounting",
                                         "protected_memory",
                                         "reset_status",
                                         "module",
                                         "gpu_recovery_action",
                                         "platform",
                                         "fabric",
                                         "vgpu_driver_capability",
                                         "vgpu_device_capability",
                                         "addressing_mode"};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (strlen(plain[i]) == n && memcmp(plain[i], s, n) == 0)
            return true;
    const char *dot = memchr(s, '.', n);
    if (dot == NULL)
        return false;
    size_t g = (size_t)(dot - s);
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (strlen(groups[i]) == g && memcmp(groups[i], s, g) == 0)
            return true;
    return false;
}

/* An nvidia-smi dmon header: '#', blanks, then "gpu", "Date" or "Time" (# gpu pwr ...,
 * #Date Time gpu ..., #Time gpu ..., any case). Else false, and why says what was seen. */
static bool dmon_header(const char *l, size_t len, char *why, size_t wlen)
{
    size_t a = 1;
    while (a < len && (l[a] == ' ' || l[a] == '\t'))
        a++;
    size_t b = a;
    while (b < len && l[b] != ' ' && l[b] != '\t')
        b++;
    static const char *const words[] = {"gpu", "date", "time"};
    for (size_t k = 0; k < 3; k++)
        if (b - a == strlen(words[k]) && strncasecmp(l + a, words[k], b - a) == 0)
            return true;
    if (why != NULL && wlen > 0) {
        char q[TM_QUOTE_LEN];
        snprintf(why, wlen,
                 "a first line '%s' that starts with '#' but is not an nvidia-smi "
                 "dmon header (# gpu ..., #Date Time gpu ..., #Time gpu ...)",
                 tm_quote(q, l, len, 60));
    }
    return false;
}

/* A first line that is a CSV header naming no nvidia-smi query field: true, with the names
 * seen in why. A first line of data (a headerless CSV), or a header naming one: false. */
static bool csv_foreign_header(const char *l, size_t len, char *why, size_t wlen)
{
    char seen[200] = "";
    size_t used = 0, cells = 0;
    bool known = false, data = false;
    for (size_t i = 0; i <= len;) {
        size_t j = i;
        while (j < len && l[j] != ',')
            j++;
        size_t a = i;
        while (a < j && (l[a] == ' ' || l[a] == '\t'))
            a++;
        size_t m;
        if (!smi_header_cell(l + a, j - a, &m)) {
            /* Not a header cell of nvidia-smi's: a first line of data (a headerless CSV
             * has numbers, times, [N/A]) when it starts like one, else a foreign name. */
            char c = a < j ? l[a] : ' ';
            data |= (c >= '0' && c <= '9') || c == '-' || c == '[' || c == '.';
            m = j - a;
            while (m > 0 && (l[a + m - 1] == ' ' || l[a + m - 1] == '\t'))
                m--;
        } else {
            known |= smi_query_field(l + a, m);
        }
        if (used + m + 3 < sizeof seen)
            used += (size_t)snprintf(seen + used, sizeof seen - used, "%s%.*s", cells ? ", " : "",
                                     (int)m, l + a);
        else if (used == 0) /* a first cell too long for seen: its start, marked as cut */
            used += (size_t)snprintf(seen, sizeof seen, "%.*s...", (int)(sizeof seen - 4), l + a);
        else if (used + 5 < sizeof seen && seen[used - 1] != '.')
            used += (size_t)snprintf(seen + used, sizeof seen - used, ", ...");
        cells++;
        i = j + 1;
    }
    if (known || data)
        return false;
    if (why != NULL)
        snprintf(why, wlen,
                 "a CSV whose header (%s) names no nvidia-smi query field: not nvidia-smi "
                 "--query-gpu output; pass --format if it is telemetry in another layout, or "
                 "--format nvidia-smi-csv --fields for a headerless nvidia-smi CSV",
                 seen);
    return true;
}

/* Whether a first line is a log line, not telemetry: a dmesg one ("[ 8123.441915] ..."), a
 * syslog / journalctl one ("Dec  6 22:17:42 host kernel: ...") or one naming the kernel's
 * NVIDIA driver ("NVRM:", "kernel:"). */
static bool log_line(const char *l, size_t len)
{
    size_t a = 0;
    if (len > 0 && l[0] == '[') { /* dmesg: [ seconds.fraction] */
        a = 1;
        while (a < len && l[a] == ' ')
            a++;
        size_t d = a;
        while (a < len && l[a] >= '0' && l[a] <= '9')
            a++;
        if (a > d && a < len && l[a] == '.') {
            size_t f = ++a;
            while (a < len && l[a] >= '0' && l[a] <= '9')
                a++;
            if (a > f && a < len && l[a] == ']')
                return true;
        }
    }
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    if (len >= 16 && l[3] == ' ' && l[9] == ':' && l[12] == ':') /* syslog: Mmm dd hh:mm:ss */
        for (size_t k = 0; k < 12; k++)
            if (memcmp(l, months[k], 3) == 0)
                return true;
    for (size_t i = 0; i + 6 <= len; i++)
        if (memcmp(l + i, "NVRM: ", 6) == 0 || (i + 8 <= len && memcmp(l + i, "kernel: ", 8) == 0))
            return true;
    return false;
}

/* Prometheus only when at least half of the lines that say anything (comments other than
 * HELP / TYPE say nothing) are exposition lines; a last line cut by the end of head is left
 * out. */
static bool prom_enough(const char *head, size_t n, bool cut, char *why, size_t wlen)
{
    size_t good = 0, total = 0, i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && head[j] != '\n')
            j++;
        if (j == n && cut && i > 0)
            break;
        size_t k = i, e = j;
        while (k < e && (head[k] == ' ' || head[k] == '\t'))
            k++;
        while (e > k && (head[e - 1] == '\r' || head[e - 1] == ' ' || head[e - 1] == '\t'))
            e--;
        if (e > k && !(head[k] == '#' && prom_line_kind(head + k, e - k) == 0)) {
            total++;
            good += prom_line_kind(head + k, e - k) > 0;
        }
        i = j + 1;
    }
    if (good > 0 && 2 * good >= total)
        return true;
    if (why != NULL)
        snprintf(why, wlen,
                 "%zu of the first %zu lines look like Prometheus exposition lines "
                 "(# HELP / # TYPE, or name{labels} value)",
                 good, total);
    return false;
}

pfi_telemetry_format tm_detect(const char *head, size_t n, bool cut, char *why, size_t wlen)
{
    if (why != NULL && wlen > 0)
        why[0] = '\0';
    if (n >= 2 && ((unsigned char)head[0] == 0xFF && (unsigned char)head[1] == 0xFE)) {
        if (why != NULL)
            snprintf(why, wlen,
                     "UTF-16 text (a PowerShell redirect?): convert it to UTF-8, "
                     "e.g. iconv -f UTF-16 -t UTF-8");
        return PFI_TELEMETRY_AUTO;
    }
    size_t i = n >= 3 && memcmp(head, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    size_t nul, bad = non_text_bytes((const unsigned char *)head + i, n - i, &nul);
    /* A NUL on the first line (ELF, UTF-16 without a mark, archives), or 30 % not text. A
     * NUL further on alone is not enough: a log cut by a crash can end in zero blocks. */
    const char *nl = memchr(head + i, '\n', n - i);
    size_t line1 = nl ? (size_t)(nl - head) : n;
    if ((nul != (size_t)-1 && nul + i < line1) || bad * 10 > (n - i) * 3) {
        if (why != NULL) {
            char q[TM_QUOTE_LEN];
            size_t show = n - i < 16 ? n - i : 16;
            int w = snprintf(why, wlen, "not a text file: starts with '%s'",
                             tm_quote(q, head + i, show, 64));
            if (w > 0 && (size_t)w < wlen && nul != (size_t)-1)
                w += snprintf(why + w, wlen - (size_t)w, ", a NUL byte at offset %zu", nul + i);
            if (w > 0 && (size_t)w < wlen)
                snprintf(why + w, wlen - (size_t)w, ", %zu of the first %zu bytes are not text",
                         bad, n - i);
        }
        return PFI_TELEMETRY_AUTO;
    }
    /* The first non-blank line that says which format it is. */
    while (i < n) {
        size_t j = i;
        while (j < n && head[j] != '\n')
            j++;
        size_t k = i;
        while (k < j && (head[k] == ' ' || head[k] == '\t' || head[k] == '\r'))
            k++;
        if (k < j) {
            const char *l = head + k;
            size_t len = j - k;
            while (len > 0 && l[len - 1] == '\r')
                len--;
            if (len >= 7 &&
                (memcmp(l, "#Entity", 7) == 0 || (len >= 8 && memcmp(l, "# Entity", 8) == 0)))
                return PFI_TELEMETRY_DCGMI_DMON;
            /* A Prometheus HTTP API answer (/api/v1/query, query_range) is telemetry. */
            if (l[0] == '{' &&
                (has_text(head, n, "\"resultType\"") || has_text(head, n, "\"status\":\"error\"")))
                return PFI_TELEMETRY_PROM_API;
            /* Other JSON (an object, or an array of objects or strings) is no telemetry
             * format pfi reads. */
            size_t b = 1;
            while (b < len && (l[b] == ' ' || l[b] == '\t'))
                b++;
            if (l[0] == '{' || (l[0] == '[' && (b == len || l[b] == '{' || l[b] == '"'))) {
                if (why != NULL && wlen > 0) {
                    char q[TM_QUOTE_LEN];
                    snprintf(why, wlen,
                             "JSON (first line '%s'), not a telemetry format pfi "
                             "reads",
                             tm_quote(q, l, len, 60));
                }
                return PFI_TELEMETRY_AUTO;
            }
            bool prom =
                (len >= 6 && (memcmp(l, "# HELP", 6) == 0 || memcmp(l, "# TYPE", 6) == 0)) ||
                (len >= 7 && memcmp(l, "DCGM_FI", 7) == 0) ||
                (prom_line_kind(l, len) == 1 && memchr(l, '{', len) != NULL) ||
                (l[0] != '#' && l[0] != '<' && memchr(l, ',', len) == NULL &&
                 memchr(l, '{', len) != NULL);
            if (prom)
                return prom_enough(head + i, n - i, cut, why, wlen) ? PFI_TELEMETRY_PROM
                                                                    : PFI_TELEMETRY_AUTO;
            if (l[0] == '#')
                return dmon_header(l, len, why, wlen) ? PFI_TELEMETRY_SMI_DMON : PFI_TELEMETRY_AUTO;
            if (l[0] == '<')
                return PFI_TELEMETRY_SMI_XML;
            if (len >= 6 && memcmp(l, "======", 6) == 0)
                return PFI_TELEMETRY_SMI_QUERY;
            if (len >= 8 && memcmp(l, "t_s,gpu,", 8) == 0)
                return PFI_TELEMETRY_SMI_CSV; /* pfi's own replay CSV (sweep/probe --record) */
            if (log_line(l, len)) {
                if (why != NULL && wlen > 0) {
                    char q[TM_QUOTE_LEN];
                    snprintf(why, wlen,
                             "a log (first line '%s'), not telemetry: expected nvidia-smi "
                             "--query-gpu CSV, nvidia-smi dmon, nvidia-smi -q (text or XML), "
                             "dcgmi dmon, a Prometheus scrape or a Prometheus API answer (a "
                             "kernel log goes to --kernel-log)",
                             tm_quote(q, l, len, 60));
                }
                return PFI_TELEMETRY_AUTO;
            }
            if (memchr(l, ',', len) != NULL)
                return csv_foreign_header(l, len, why, wlen) ? PFI_TELEMETRY_AUTO
                                                             : PFI_TELEMETRY_SMI_CSV;
            /* no comma, no format's mark: not telemetry (the caller names the formats) */
            return PFI_TELEMETRY_AUTO;
        }
        i = j + 1;
    }
    return PFI_TELEMETRY_AUTO;
}

pfi_telemetry_format pfi_telemetry_detect(const char *head, size_t n)
{
    return tm_detect(head, n, false, NULL, 0);
}
