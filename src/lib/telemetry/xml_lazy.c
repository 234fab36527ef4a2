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
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/*
 * Each pointer's type must be the installed headers' declaration of the function it holds:
 * checked at compile time. _Generic does not evaluate its operand, so these name the real
 * libxml2 symbols without making libpfi reference (link against) them.
 */
#define SAME_TYPE(field, sym)                                                                  \
    _Static_assert(_Generic(&sym, __typeof__(((xml_lazy_fns *)0)->field): 1, default: 0),    \
                   #sym " does not match xml_lazy_fns." #field)
SAME_TYPE(init_parser, xmlInitParser);
SAME_TYPE(new_parser_ctxt, xmlNewParserCtxt);
SAME_TYPE(free_parser_ctxt, xmlFreeParserCtxt);
SAME_TYPE(ctxt_read_memory, xmlCtxtReadMemory);
SAME_TYPE(free_doc, xmlFreeDoc);
SAME_TYPE(doc_get_root_element, xmlDocGetRootElement);
SAME_TYPE(node_get_content, xmlNodeGetContent);
SAME_TYPE(get_prop, xmlGetProp);
SAME_TYPE(free, xmlFree);
#undef SAME_TYPE

int xml_lazy_open(const char *soname, xml_lazy_fns *fns, char *why, size_t why_size)
{
    memset(fns, 0, sizeof *fns);
    if (why_size > 0)
        why[0] = '\0';
    dlerror(); /* clear a stale error */
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *e = dlerror();
        if (why_size > 0)
            snprintf(why, why_size, "%s", e != NULL ? e : "cannot be opened");
        /* dlerror's text names the file; make sure the message does too */
        if (why_size > 0 && strstr(why, soname) == NULL)
            snprintf(why, why_size, "%s: %s", soname, e != NULL ? e : "cannot be opened");
        return -1;
    }
    /* POSIX: a void * from dlsym converts to a function pointer through this cast */
#define RESOLVE(field, sym)                                                                    \
    do {                                                                                       \
        *(void **)(&fns->field) = dlsym(lib, #sym);                                            \
        if (fns->field == NULL) {                                                              \
            if (why_size > 0)                                                                  \
                snprintf(why, why_size, "%s lacks %s (not libxml2 2.9 or later?)", soname,     \
                         #sym);                                                                \
            dlclose(lib);                                                                      \
            memset(fns, 0, sizeof *fns);                                                       \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)
    RESOLVE(init_parser, xmlInitParser);
    RESOLVE(new_parser_ctxt, xmlNewParserCtxt);
    RESOLVE(free_parser_ctxt, xmlFreeParserCtxt);
    RESOLVE(ctxt_read_memory, xmlCtxtReadMemory);
    RESOLVE(free_doc, xmlFreeDoc);
    RESOLVE(doc_get_root_element, xmlDocGetRootElement);
    RESOLVE(node_get_content, xmlNodeGetContent);
    RESOLVE(get_prop, xmlGetProp);
    RESOLVE(free, xmlFree);
#undef RESOLVE
    if (*fns->free == NULL) { /* the variable is set by the library's own initialisation */
        if (why_size > 0)
            snprintf(why, why_size, "%s: xmlFree is not set", soname);
        dlclose(lib);
        memset(fns, 0, sizeof *fns);
        return -1;
    }
    fns->lib = lib;
    return 0;
}

/* The process's library: opened once, never closed. */
static xml_lazy_fns fn;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_error[512] = PFI_XML_SONAME " not loaded";

static void load(void)
{
    if (xml_lazy_open(PFI_XML_SONAME, &fn, load_error, sizeof load_error) != 0)
        return;
    /* libxml2's documented rule for threaded programs: initialise once, before parsing */
    fn.init_parser();
    loaded = true;
}

int xml_lazy_load(const char **why)
{
    pthread_once(&once, load);
    if (why != NULL)
        *why = loaded ? NULL : load_error;
    return loaded ? 0 : -1;
}

void pfi_xml_init_parser(void)
{
    (void)xml_lazy_load(NULL); /* loading initialises the parser */
}

xmlParserCtxtPtr pfi_xml_new_parser_ctxt(void)
{
    return xml_lazy_load(NULL) == 0 ? fn.new_parser_ctxt() : NULL;
}

void pfi_xml_free_parser_ctxt(xmlParserCtxtPtr ctxt)
{
    if (xml_lazy_load(NULL) == 0)
        fn.free_parser_ctxt(ctxt);
}

xmlDocPtr pfi_xml_ctxt_read_memory(xmlParserCtxtPtr ctxt, const char *buffer, int size,
                                   const char *url, const char *encoding, int options)
{
    return xml_lazy_load(NULL) == 0
               ? fn.ctxt_read_memory(ctxt, buffer, size, url, encoding, options)
               : NULL;
}

void pfi_xml_free_doc(xmlDocPtr doc)
{
    if (xml_lazy_load(NULL) == 0)
        fn.free_doc(doc);
}

xmlNodePtr pfi_xml_doc_get_root_element(const xmlDoc *doc)
{
    return xml_lazy_load(NULL) == 0 ? fn.doc_get_root_element(doc) : NULL;
}

xmlChar *pfi_xml_node_get_content(const xmlNode *node)
{
    return xml_lazy_load(NULL) == 0 ? fn.node_get_content(node) : NULL;
}

xmlChar *pfi_xml_get_prop(const xmlNode *node, const xmlChar *name)
{
    return xml_lazy_load(NULL) == 0 ? fn.get_prop(node, name) : NULL;
}

void pfi_xml_free(void *p)
{
    if (p != NULL && xml_lazy_load(NULL) == 0)
        (*fn.free)(p);
}
