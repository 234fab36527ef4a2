/*
 * libxml2 through dlopen (see xml_lazy.h). The library is opened the first time the XML
 * telemetry reader runs; when it cannot be loaded, the reader fails with PFI_ERR_UNAVAILABLE
 * and a message naming the library and dlerror's reason, instead of every process failing
 * to start (or paying for ICU and libstdc++) when it is there.
 */
#define _GNU_SOURCE
#define PFI_XML_LAZY_IMPL
#include "telemetry/xml_lazy.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "core/dl.h"

/* Every function used: the field of xml_lazy_fns and libxml2's symbol. */
#define XML_LAZY_FUNCTIONS(X)                                                                      \
    X(init_parser, xmlInitParser)                                                                  \
    X(new_parser_ctxt, xmlNewParserCtxt)                                                           \
    X(free_parser_ctxt, xmlFreeParserCtxt)                                                         \
    X(ctxt_read_memory, xmlCtxtReadMemory)                                                         \
    X(free_doc, xmlFreeDoc)                                                                        \
    X(doc_get_root_element, xmlDocGetRootElement)                                                  \
    X(node_get_content, xmlNodeGetContent)                                                         \
    X(get_prop, xmlGetProp)                                                                        \
    X(free, xmlFree)

/* Where each function goes; each pointer's type must be the installed headers' declaration of
 * the function it holds (checked at compile time). */
#define SYMBOL(field, sym) DL_SYMBOL(xml_lazy_fns, field, #sym, sym),
static const dl_symbol xml_symbols[] = {XML_LAZY_FUNCTIONS(SYMBOL)};
#undef SYMBOL

int xml_lazy_open(const char *soname, xml_lazy_fns *fns, char *why, size_t why_size)
{
    void *lib = dl_open_symbols(soname, "not libxml2 2.9 or later?", xml_symbols,
                                sizeof xml_symbols / sizeof xml_symbols[0], fns, sizeof *fns, why,
                                why_size);
    if (lib == NULL)
        return -1;
    if (*fns->free == NULL) { /* the variable is set by the library's own initialisation */
        snprintf(why, why_size, "%s: xmlFree is not set", soname);
        dlclose(lib);
        memset(fns, 0, sizeof *fns);
        return -1;
    }
    fns->lib = lib;
    return 0;
}

/* libxml2's documented rule for threaded programs: initialise once, before parsing. */
static int open_and_init(const char *soname, xml_lazy_fns *fns, char *why, size_t why_size)
{
    if (xml_lazy_open(soname, fns, why, why_size) != 0)
        return -1;
    fns->init_parser();
    return 0;
}

/* The process's library: opened once, never closed. */
DL_ONCE_LOADER(xml_lazy_load, open_and_init, xml_lazy_fns, fn, PFI_XML_SONAME)

void xml_lazy_init_parser(void)
{
    (void)xml_lazy_load(NULL); /* loading initialises the parser */
}

xmlParserCtxtPtr xml_lazy_new_parser_ctxt(void)
{
    return xml_lazy_load(NULL) == 0 ? fn.new_parser_ctxt() : NULL;
}

void xml_lazy_free_parser_ctxt(xmlParserCtxtPtr ctxt)
{
    if (xml_lazy_load(NULL) == 0)
        fn.free_parser_ctxt(ctxt);
}

xmlDocPtr xml_lazy_ctxt_read_memory(xmlParserCtxtPtr ctxt, const char *buffer, int size,
                                    const char *url, const char *encoding, int options)
{
    return xml_lazy_load(NULL) == 0
               ? fn.ctxt_read_memory(ctxt, buffer, size, url, encoding, options)
               : NULL;
}

void xml_lazy_free_doc(xmlDocPtr doc)
{
    if (xml_lazy_load(NULL) == 0)
        fn.free_doc(doc);
}

xmlNodePtr xml_lazy_doc_get_root_element(const xmlDoc *doc)
{
    return xml_lazy_load(NULL) == 0 ? fn.doc_get_root_element(doc) : NULL;
}

xmlChar *xml_lazy_node_get_content(const xmlNode *node)
{
    return xml_lazy_load(NULL) == 0 ? fn.node_get_content(node) : NULL;
}

xmlChar *xml_lazy_get_prop(const xmlNode *node, const xmlChar *name)
{
    return xml_lazy_load(NULL) == 0 ? fn.get_prop(node, name) : NULL;
}

void xml_lazy_free(void *p)
{
    if (p != NULL && xml_lazy_load(NULL) == 0)
        (*fn.free)(p);
}
