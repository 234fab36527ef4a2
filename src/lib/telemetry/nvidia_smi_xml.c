/*
 * nvidia-smi -q -x (XML) reader, the fallback of case-21: power readings under
 * <power_readings> (old drivers) or <gpu_power_readings> (535+), with the 570+ split of
 * <power_draw> into <average_power_draw> and <instant_power_draw>. <module_power_readings>
 * and <gpu_memory_power_readings> are other quantities and are skipped. Parsed with libxml2
 * (Debian libxml2), opened with dlopen the first time this reader runs (xml_lazy.h: no other
 * run loads it, nor ICU behind it; without it the reader fails with PFI_ERR_UNAVAILABLE), DOM
 * per document: one `nvidia-smi -q -x` output is small, and a capture of `-l` loops holds one
 * document per sample, each starting with "<?xml", each parsed and freed in turn (bounded by
 * PFI_TELEMETRY_MAX_XML_DOC). No network, no DTD loading, no entity substitution, libxml2's own
 * error printing off (the library never prints).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "telemetry/internal.h"
#include "telemetry/scan.h"
#include "telemetry/xml_lazy.h" /* libxml2's xml* calls, through dlopen */

#define PFI_TELEMETRY_MAX_XML_DOC (16u << 20) /* bytes of one XML document */

static bool name_is(const xmlNode *n, const char *w)
{
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, w) == 0;
}

/* One <*power_readings> block of entity e at time t. */
static pfi_error put_readings(pfi_telemetry *tm, size_t e, double t, const xmlNode *block)
{
    for (const xmlNode *c = block->children; c != NULL; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        const char *tag = (const char *)c->name;
        const char *canon;
        pfi_telemetry_kind kind;
        int id;
        pfi_telemetry_field_info(tag, &canon, &kind, &id);
        if (kind != PFI_KIND_POWER_W && kind != PFI_KIND_LIMIT_W)
            continue; /* power_state, power_management, clamp values, ... */
        size_t fid;
        pfi_error err = tm_field(tm, tag, strlen(tag), &fid);
        if (err == PFI_ERR_LIMIT)
            continue; /* past the field limit (noted): not read */
        if (err != PFI_OK)
            return err;
        xmlChar *txt = xmlNodeGetContent(c);
        const char *s = txt ? (const char *)txt : "";
        size_t n = strlen(s);
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\t'))
            n--;
        while (n > 0 && (*s == ' ' || *s == '\n' || *s == '\t')) {
            s++;
            n--;
        }
        if (n > 2 && s[n - 1] == 'W' && s[n - 2] == ' ')
            n -= 2;
        double v = NAN;
        pfi_value_status st = tm_parse_number(s, n, &v);
        if (st != PFI_VALUE_OK)
            st = PFI_VALUE_MISSING; /* "N/A", "Unknown Error", ...: missing, never 0 W */
        xmlFree(txt);
        if ((err = tm_put(tm, e, fid, t, st, v, -1, false)) != PFI_OK)
            return err;
    }
    return PFI_OK;
}

/* Walk below node for power blocks of entity e (skipping module / memory power). */
static pfi_error walk(pfi_telemetry *tm, size_t e, double t, const xmlNode *node, int depth)
{
    if (depth > 64)
        return PFI_OK;
    for (const xmlNode *c = node; c != NULL; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        if (name_is(c, "power_readings") || name_is(c, "gpu_power_readings")) {
            pfi_error err = put_readings(tm, e, t, c);
            if (err != PFI_OK)
                return err;
        } else if (!name_is(c, "module_power_readings") &&
                   !name_is(c, "gpu_memory_power_readings") && !name_is(c, "gpu")) {
            pfi_error err = walk(tm, e, t, c->children, depth + 1);
            if (err != PFI_OK)
                return err;
        }
    }
    return PFI_OK;
}

/* Collect <gpu> elements (document order) below node. */
static size_t find_gpus(const xmlNode *node, const xmlNode **out, size_t max, size_t k, int depth)
{
    for (const xmlNode *c = node; c != NULL && k < max && depth <= 64; c = c->next) {
        if (name_is(c, "gpu"))
            out[k++] = c;
        else if (c->type == XML_ELEMENT_NODE)
            k = find_gpus(c->children, out, max, k, depth + 1);
    }
    return k;
}

/* The first error libxml2 raises (later ones, e.g. "premature end", follow from it). */
typedef struct first_err {
    bool set;
    int line, col;
    char msg[256];
} first_err;

static void keep_first_error(void *data, xmlErrorPtr err)
{
    xmlParserCtxtPtr c = data;
    first_err *fe = c != NULL ? c->_private : NULL;
    if (fe == NULL || fe->set || err == NULL)
        return;
    fe->set = true;
    fe->line = err->line;
    fe->col = err->int2;
    snprintf(fe->msg, sizeof fe->msg, "%s", err->message ? err->message : "not well-formed");
    size_t m = strlen(fe->msg);
    if (m > 0 && fe->msg[m - 1] == '\n')
        fe->msg[m - 1] = '\0';
}

static pfi_error parse_doc(pfi_telemetry *tm, const char *buf, size_t len, const char *name,
                           long first_line, pfi_diag *diag)
{
    xmlParserCtxtPtr ctx = xmlNewParserCtxt();
    if (ctx == NULL)
        return PFI_ERR_NOMEM;
    first_err fe = {.set = false};
    ctx->_private = &fe;
    ctx->sax->serror = keep_first_error;
    xmlDocPtr doc = xmlCtxtReadMemory(ctx, buf, (int)len, name, NULL,
                                      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                                          XML_PARSE_NOBLANKS);
    if (doc == NULL) {
        if (diag != NULL) {
            diag->line = first_line + (fe.set && fe.line > 0 ? fe.line - 1 : 0);
            snprintf(diag->message, sizeof diag->message, "XML, column %d: %s", fe.set ? fe.col : 0,
                     fe.set ? fe.msg : "not well-formed");
        }
        xmlFreeParserCtxt(ctx);
        return PFI_ERR_PARSE;
    }
    pfi_error err = PFI_OK;
    const xmlNode *root = xmlDocGetRootElement(doc);
    const xmlNode *gpus[256];
    size_t ng = find_gpus(root, gpus, 256, 0, 0);
    size_t ent = (size_t)-1;
    char ename[32];
    /* The document's own time (<timestamp>, host-local), in the collector's zone. */
    double stamp = 0;
    bool have_stamp = false;
    for (const xmlNode *c = root ? root->children : NULL; c != NULL && !have_stamp; c = c->next)
        if (name_is(c, "timestamp")) {
            xmlChar *txt = xmlNodeGetContent(c);
            have_stamp =
                txt != NULL && tm_smi_stamp((const char *)txt, strlen((const char *)txt), &stamp);
            if (!have_stamp && txt != NULL) { /* "Sat Feb 29 ...": said, never nominal times */
                if (diag != NULL) {
                    char q[TM_QUOTE_LEN];
                    diag->line = first_line + (c->line > 0 ? c->line - 1 : 0);
                    snprintf(diag->message, sizeof diag->message,
                             "<timestamp>: '%s' is not a valid time (a day of the month's "
                             "calendar, 00:00:00 to 23:59:60)",
                             tm_quote(q, (const char *)txt, strlen((const char *)txt), 40));
                }
                xmlFree(txt);
                xmlFreeDoc(doc);
                xmlFreeParserCtxt(ctx);
                return PFI_ERR_PARSE;
            }
            xmlFree(txt);
        }
    if (have_stamp)
        stamp = tm_local_time(tm, stamp);
    if (ng == 0) {
        /* A fragment (e.g. only <gpu_power_readings>): one GPU. */
        if ((err = tm_entity(tm, "gpu0", 4, &ent)) == PFI_OK) {
            double t = tm_row_time(tm, ent, false, 0, false, first_line, name);
            err = walk(tm, ent, t, root, 0);
            tm->n_rows++;
        } else if (err == PFI_ERR_LIMIT)
            err = PFI_OK; /* past the entity limit (noted): not read */
    }
    for (size_t g = 0; g < ng && err == PFI_OK; g++) {
        snprintf(ename, sizeof ename, "gpu%zu", g);
        if ((err = tm_entity(tm, ename, strlen(ename), &ent)) == PFI_ERR_LIMIT) {
            err = PFI_OK; /* past the entity limit (noted): this GPU is not read */
            continue;
        }
        if (err != PFI_OK)
            break;
        xmlChar *bus = xmlGetProp(gpus[g], (const xmlChar *)"id");
        if (bus != NULL && tm->entities[ent].bus == NULL) {
            /* "00000000:3D:00.0" -> "0000:3d:00.0", as the text readers store it. */
            const char *b = (const char *)bus;
            size_t bl = strlen(b);
            const char *colon = strchr(b, ':');
            if (colon != NULL && colon - b > 4) {
                b = colon - 4;
                bl = strlen(b);
            }
            char *nb = tm_strndup(b, bl);
            for (char *p = nb; p != NULL && *p; p++)
                if (*p >= 'A' && *p <= 'F')
                    *p = (char)(*p + 32);
            tm->entities[ent].bus = nb;
        }
        xmlFree(bus);
        for (const xmlNode *c = gpus[g]->children; c != NULL; c = c->next)
            if (name_is(c, "uuid") && tm->entities[ent].uuid == NULL) {
                xmlChar *u = xmlNodeGetContent(c);
                if (u != NULL && u[0] != '\0')
                    tm->entities[ent].uuid = tm_strndup((const char *)u, strlen((const char *)u));
                xmlFree(u);
            }
        double t = tm_row_time(tm, ent, have_stamp, stamp, false, first_line, name);
        err = walk(tm, ent, t, gpus[g]->children, 0);
        tm->n_rows++;
    }
    xmlFreeDoc(doc);
    xmlFreeParserCtxt(ctx);
    return err;
}

pfi_error tm_read_smi_xml(pfi_telemetry *tm, tm_lines *r, const char *name, pfi_diag *diag)
{
    const char *why;
    if (xml_lazy_load(&why) != 0) {
        if (diag != NULL)
            snprintf(diag->message, sizeof diag->message,
                     "the nvidia-smi XML reader needs libxml2 (%s), which cannot be loaded: "
                     "%s; install the libxml2 package, or capture telemetry as CSV "
                     "(nvidia-smi --query-gpu=... --format=csv)",
                     PFI_XML_SONAME, why);
        return PFI_ERR_UNAVAILABLE;
    }
    size_t cap = 1u << 16, len = 0;
    char *doc = pfi_malloc(cap);
    if (doc == NULL)
        return PFI_ERR_NOMEM;
    long doc_line = 1;
    pfi_error err = PFI_OK;
    bool too_long = false; /* the document being read is past PFI_TELEMETRY_MAX_XML_DOC */
    for (;;) {
        const char *s;
        size_t n;
        bool eof;
        if ((err = tm_lines_next(r, &s, &n, &eof)) != PFI_OK)
            break;
        size_t b = eof ? 0 : tm_skip_blanks(s, 0, n);
        bool starts = !eof && n - b >= 5 && memcmp(s + b, "<?xml", 5) == 0;
        if ((eof || starts) && len > 0) {
            size_t k = 0;
            while (k < len && (doc[k] == ' ' || doc[k] == '\t' || doc[k] == '\n'))
                k++;
            if (!too_long && k < len &&
                (err = parse_doc(tm, doc, len, name, doc_line, diag)) != PFI_OK)
                break;
            len = 0;
            too_long = false;
        }
        if (eof)
            break;
        if (len == 0)
            doc_line = r->line;
        if (too_long)
            continue;
        if (len + n + 1 > PFI_TELEMETRY_MAX_XML_DOC) {
            /* that document (one sample of a -l capture) is not read, the rest is */
            tm_note(tm,
                    "%s:%ld: XML document longer than %u bytes: not read, the rest is "
                    "(PFI_TELEMETRY_MAX_XML_DOC in src/lib/telemetry/nvidia_smi_xml.c: raise it "
                    "and rebuild)",
                    name, doc_line, PFI_TELEMETRY_MAX_XML_DOC);
            tm->n_skipped++;
            too_long = true;
            continue;
        }
        if (len + n + 1 > cap) {
            while (len + n + 1 > cap)
                cap *= 2;
            char *nd = pfi_realloc(doc, cap);
            if (nd == NULL) {
                err = PFI_ERR_NOMEM;
                break;
            }
            doc = nd;
        }
        memcpy(doc + len, s, n);
        len += n;
        doc[len++] = '\n';
    }
    pfi_free(doc);
    return err;
}
