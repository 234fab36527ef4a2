/*
 * Reading one telemetry file: the table of the formats pfi reads (the name --format takes,
 * the reader), and pfi_telemetry_read_stream / pfi_telemetry_read_file — read the first block,
 * detect (detect.c), pick the reader, run it, and when --format named a reader the file is not for,
 * say what the file looks like instead.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/memory.h"
#include "telemetry/internal.h"

/* A reader: reads r (its first block already buffered) into tm; name is the file's name
 * for the notes, diag (may be NULL) gets a fatal error. */
typedef pfi_error (*tm_reader)(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag);

/* Every format, at its pfi_telemetry_format number: its name and its reader (none for auto). */
static const struct tm_format {
    const char *name;
    tm_reader read;
} formats[] = {
    [PFI_TELEMETRY_AUTO] = {"auto", NULL},
    [PFI_TELEMETRY_SMI_CSV] = {"nvidia-smi-csv", tm_read_smi_csv},
    [PFI_TELEMETRY_SMI_DMON] = {"dmon", tm_read_dmon},
    [PFI_TELEMETRY_SMI_QUERY] = {"nvidia-smi-q", tm_read_smi_query},
    [PFI_TELEMETRY_DCGMI_DMON] = {"dcgmi-dmon", tm_read_dcgmi},
    [PFI_TELEMETRY_PROM] = {"prometheus", tm_read_prom},
    [PFI_TELEMETRY_SMI_XML] = {"nvidia-smi-xml", tm_read_smi_xml},
    [PFI_TELEMETRY_PROM_API] = {"prometheus-api", tm_read_prom_api},
};
#define N_FORMATS (int)(sizeof formats / sizeof formats[0])
_Static_assert(N_FORMATS == PFI_TELEMETRY_FORMAT_COUNT,
               "one row of formats[] per pfi_telemetry_format (pfi/telemetry.h)");

const char *pfi_telemetry_format_name(pfi_telemetry_format f)
{
    return (int)f >= 0 && (int)f < N_FORMATS ? formats[f].name : "unknown";
}

bool pfi_telemetry_format_parse(const char *name, pfi_telemetry_format *out)
{
    for (int i = 0; i < N_FORMATS; i++) {
        if (strcmp(name, formats[i].name) == 0) {
            *out = (pfi_telemetry_format)i;
            return true;
        }
    }
    return false;
}

/* The names of every format but auto, "nvidia-smi-csv, dmon, ...", into buf[size]. */
static void format_list(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 1; i < N_FORMATS && used < size; i++) {
        int w = snprintf(buf + used, size - used, "%s%s", i > 1 ? ", " : "", formats[i].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* The first non-blank line of head, quoted for a message. */
static void first_line(const char *head, size_t n, char out[TM_QUOTE_LEN])
{
    size_t i = 0;
    while (i < n && (head[i] == '\n' || head[i] == '\r' || head[i] == ' ' || head[i] == '\t'))
        i++;
    size_t j = i;
    while (j < n && head[j] != '\n' && head[j] != '\r')
        j++;
    tm_quote(out, head + i, j - i, 60);
}

/* What the first block looks like: detection's verdict, its reason when that is none, and
 * the first line quoted. A forced format is detected too: when its reader finds almost
 * nothing, what the file looks like is the better explanation. */
typedef struct tm_sniff {
    pfi_telemetry_format seen;
    char why[400];
    char first[TM_QUOTE_LEN];
} tm_sniff;

static void sniff(const tm_lines *r, tm_sniff *sn)
{
    sn->seen = tm_detect(r->buf, r->len, !r->eof, sn->why, sizeof sn->why);
    first_line(r->buf + r->pos, r->len - r->pos, sn->first);
}

/* The file's name kept (entities name the file they came from) and the file counted. */
static pfi_error add_file_name(pfi_telemetry *tm, const char *name)
{
    char **nf = pfi_realloc(tm->file_names, (tm->n_files + 1) * sizeof *nf);
    if (nf == NULL)
        return PFI_ERR_NOMEM;
    tm->file_names = nf;
    if ((nf[tm->n_files] = pfi_strdup(name)) == NULL)
        return PFI_ERR_NOMEM;
    tm->n_files++;
    return PFI_OK;
}

/* The reader for a file given as auto: detection's, and an empty file after a Prometheus
 * scrape is an empty scrape: it takes its time slot and leaves a hole (case-15), instead
 * of pulling later scrapes earlier. PFI_TELEMETRY_AUTO when there is none. */
static pfi_telemetry_format auto_format(const pfi_telemetry *tm, const tm_lines *r,
                                        const tm_sniff *sn)
{
    if (sn->seen == PFI_TELEMETRY_AUTO && r->len == 0 && tm->last_format == PFI_TELEMETRY_PROM)
        return PFI_TELEMETRY_PROM;
    return sn->seen;
}

/* A file no reader is for: an empty one (nothing, or a byte order mark alone) is counted
 * and noted, PFI_OK; anything else is PFI_ERR_PARSE, diag saying what detection saw. */
static pfi_error not_recognised(pfi_telemetry *tm, const tm_lines *r, const tm_sniff *sn,
                                const char *name, pfi_diag *diag)
{
    if (r->len == r->pos) {
        pfi_error e = add_file_name(tm, name);
        if (e != PFI_OK)
            return e;
        tm_note(tm, "%s: empty file: no samples", name);
        return PFI_OK;
    }
    if (diag != NULL && sn->why[0] != '\0') {
        snprintf(diag->message, sizeof diag->message, "telemetry format not recognised: %s",
                 sn->why);
    } else if (diag != NULL) {
        char names[200];
        format_list(names, sizeof names);
        snprintf(diag->message, sizeof diag->message,
                 "telemetry format not recognised (first line: '%s'); pass --format (%s)",
                 sn->first, names);
    }
    return PFI_ERR_PARSE;
}

/* The collector's counters before a file, to tell what the file added. */
typedef struct tm_file_mark {
    size_t rows, skipped, tool_errors, notes, notes_dropped;
    bool had_tool_error;
} tm_file_mark;

/* Whether --format (forced) named a reader the file is not for: detection saw something
 * else, and of the lines the reader took, at least 4 and over 10 times the samples' rows
 * were bad (the readers count a tool line as skipped too). *rows, *bad: the file's. */
static bool forced_mismatch(const pfi_telemetry *tm, const tm_file_mark *m, pfi_error e,
                            pfi_telemetry_format forced, pfi_telemetry_format seen, size_t *rows,
                            size_t *bad)
{
    *rows = tm->n_rows - m->rows;
    *bad = tm->n_skipped - m->skipped;
    if (tm->n_tool_errors - m->tool_errors > *bad)
        *bad = tm->n_tool_errors - m->tool_errors;
    return (e == PFI_OK || e == PFI_ERR_LIMIT || e == PFI_ERR_LINE_TOO_LONG ||
            e == PFI_ERR_PARSE) &&
           forced != PFI_TELEMETRY_AUTO && seen != forced && *bad >= 4 && *rows * 10 < *bad;
}

/* The file's notes dropped (each line quoted as tool text or a bad row says nothing the
 * mismatch error does not), and its first tool sentence if it set it. */
static void drop_file_notes(pfi_telemetry *tm, const tm_file_mark *m)
{
    for (size_t k = m->notes; k < tm->n_notes; k++)
        pfi_free(tm->notes[k]);
    tm->n_notes = m->notes;
    tm->n_notes_dropped = m->notes_dropped;
    if (!m->had_tool_error)
        tm->tool_error[0] = '\0';
    tm->file_tool_errors = 0;
}

/* The mismatch error: what --format expected, how little of the file it read, and what
 * the file looks like instead (or why it looks like nothing pfi reads). */
static void mismatch_diag(pfi_diag *diag, pfi_telemetry_format forced, const tm_sniff *sn,
                          size_t rows, size_t bad)
{
    if (diag == NULL)
        return;
    diag->column[0] = '\0';
    bool binary = strncmp(sn->why, "not a text file", 15) == 0;
    int w = snprintf(diag->message, sizeof diag->message,
                     "does not look like %s output: %zu of %zu lines read as samples"
                     "%s%.80s%s; ",
                     pfi_telemetry_format_name(forced), rows, rows + bad,
                     binary ? "" : " (line 1: '", binary ? "" : sn->first, binary ? "" : "')");
    size_t used = w > 0 && (size_t)w < sizeof diag->message ? (size_t)w : sizeof diag->message;
    char *rest = diag->message + used;
    size_t room = sizeof diag->message - used;
    if (room > 0 && sn->seen != PFI_TELEMETRY_AUTO)
        snprintf(rest, room, "it looks like %s: pass --format %s, or leave --format out",
                 pfi_telemetry_format_name(sn->seen), pfi_telemetry_format_name(sn->seen));
    else if (room > 0 && sn->why[0] != '\0')
        snprintf(rest, room, "%s", sn->why);
    else if (room > 0)
        snprintf(rest, room,
                 "nor like any format pfi reads: check the file and "
                 "--format");
}

/* The end of a file: the line an error is about (none for a mismatch: it is about the
 * file), the messages of the line reader's failures, the count of tool lines not shown. */
static void finish_file(pfi_telemetry *tm, const tm_lines *r, pfi_error e, bool mismatch,
                        const char *name, pfi_diag *diag)
{
    if (e != PFI_OK && !mismatch && diag != NULL && diag->line == 0)
        diag->line = r->line;
    if (mismatch && diag != NULL)
        diag->line = 0;
    if (e == PFI_ERR_LINE_TOO_LONG)
        tm_line_too_long_diag(diag);
    /* A limit: which one, and how to raise it (README "Limits"). The entity and field limits
     * drop the one GPU or field with a note (tm_entity, tm_field): the stored samples' is the
     * one left that refuses. */
    if (e == PFI_ERR_LIMIT && diag != NULL && diag->message[0] == '\0') {
        if (tm->n_stored >= PFI_TELEMETRY_MAX_SAMPLES)
            snprintf(diag->message, sizeof diag->message,
                     "more than %d stored samples (PFI_TELEMETRY_MAX_SAMPLES in "
                     "pfi/telemetry.h): ingest fewer files per run, or a coarser capture",
                     PFI_TELEMETRY_MAX_SAMPLES);
        else if (tm->n_entities >= PFI_TELEMETRY_MAX_ENTITIES)
            snprintf(diag->message, sizeof diag->message,
                     "more than %d GPUs and other entities in one run "
                     "(PFI_TELEMETRY_MAX_ENTITIES in pfi/telemetry.h: raise it and rebuild, "
                     "or ingest the nodes' files as separate runs)",
                     PFI_TELEMETRY_MAX_ENTITIES);
        else if (tm->n_fields >= PFI_TELEMETRY_MAX_FIELDS - 1)
            snprintf(diag->message, sizeof diag->message,
                     "more than %d distinct fields (PFI_TELEMETRY_MAX_FIELDS in "
                     "pfi/telemetry.h): query fewer fields, or raise it and rebuild",
                     PFI_TELEMETRY_MAX_FIELDS - 1);
    }
    if (e == PFI_ERR_IO)
        tm_lines_io_diag(r, diag);
    if (tm->file_tool_errors > TM_TOOL_NOTES)
        tm_note(tm, "%s: ... and %zu more lines the tool reported (not shown)", name,
                tm->file_tool_errors - TM_TOOL_NOTES);
}

pfi_error pfi_telemetry_read_stream(pfi_telemetry *tm, FILE *f, const char *name,
                                    pfi_telemetry_format fmt, pfi_diag *diag)
{
    if (diag != NULL) {
        pfi_diag_clear(diag);
        snprintf(diag->file, sizeof diag->file, "%s", name);
    }
    tm->conflict[0] = '\0';
    tm->zone_last_utc = NAN;
    tm_lines r;
    pfi_error e = tm_lines_init(&r, f);
    if (e != PFI_OK)
        return e;
    if (tm->opt.map_files)
        tm_lines_map(&r);
    /* Fill the first block, detect, then parse from the start of the buffer. */
    if ((e = tm_lines_head(&r)) != PFI_OK) {
        tm_lines_io_diag(&r, diag);
        tm_lines_free(&r);
        return e;
    }
    tm_sniff sn;
    sniff(&r, &sn);
    pfi_telemetry_format forced = fmt;
    if (fmt == PFI_TELEMETRY_AUTO && (fmt = auto_format(tm, &r, &sn)) == PFI_TELEMETRY_AUTO) {
        e = not_recognised(tm, &r, &sn, name, diag);
        tm_lines_free(&r);
        return e;
    }
    tm_file_mark m = {.rows = tm->n_rows,
                      .skipped = tm->n_skipped,
                      .tool_errors = tm->n_tool_errors,
                      .notes = tm->n_notes,
                      .notes_dropped = tm->n_notes_dropped,
                      .had_tool_error = tm->tool_error[0] != '\0'};
    tm->last_format = fmt;
    if ((e = add_file_name(tm, name)) != PFI_OK) {
        tm_lines_free(&r);
        return e;
    }
    tm->file_tool_errors = 0;
    if ((int)fmt > 0 && (int)fmt < N_FORMATS && formats[fmt].read != NULL)
        e = formats[fmt].read(tm, &r, name, diag);
    else
        e = PFI_ERR_INVALID_ARGUMENT;
    if (e == PFI_OK && tm->conflict[0] != '\0') {
        if (diag != NULL) {
            diag->line = tm->conflict_line;
            snprintf(diag->message, sizeof diag->message, "%s", tm->conflict);
        }
        tm->conflict[0] = '\0';
        e = PFI_ERR_PARSE;
    }
    size_t rows, bad;
    bool mismatch = forced_mismatch(tm, &m, e, forced, sn.seen, &rows, &bad);
    if (mismatch) {
        drop_file_notes(tm, &m);
        mismatch_diag(diag, forced, &sn, rows, bad);
        e = PFI_ERR_PARSE;
    }
    finish_file(tm, &r, e, mismatch, name, diag);
    tm_lines_free(&r);
    return e;
}

pfi_error pfi_telemetry_read_file(pfi_telemetry *tm, const char *path, pfi_telemetry_format fmt,
                                  pfi_diag *diag)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        if (diag != NULL) {
            pfi_diag_clear(diag);
            snprintf(diag->file, sizeof diag->file, "%s", path);
            snprintf(diag->message, sizeof diag->message, "cannot open: %s", strerror(errno));
        }
        return PFI_ERR_IO;
    }
    pfi_error e = pfi_telemetry_read_stream(tm, f, path, fmt, diag);
    fclose(f);
    return e;
}
