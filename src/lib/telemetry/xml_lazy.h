/*
 * libxml2, loaded on first use. Only the `nvidia-smi -q -x` reader (nvidia_smi_xml.c) parses XML,
 * and linking libxml2 into libpfi made every process — the `pfi` command and the `pfid`
 * daemon — load it and, through it, ICU (libicuuc, libicudata) and libstdc++ at start-up
 * (≈ 1.7 MB resident, ≈ 2.5 ms per process). So, as for libcurl (src/lib/control/curl_lazy.h) and
 * NVML, the library is opened with dlopen("libxml2.so.2") when the reader first needs it; the
 * types and constants still come from the <libxml/...> headers. Include this header instead
 * of <libxml/parser.h> and <libxml/tree.h>: the xml* names below then call the loader's
 * forwarding functions.
 */
#ifndef PFI_LIB_XML_LAZY_H
#define PFI_LIB_XML_LAZY_H

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stddef.h>

#define PFI_XML_SONAME "libxml2.so.2"

/* The libxml2 functions the reader calls, as resolved from one opened library. */
typedef struct xml_lazy_fns {
    void *lib; /* dlopen handle */
    void (*init_parser)(void);
    xmlParserCtxtPtr (*new_parser_ctxt)(void);
    void (*free_parser_ctxt)(xmlParserCtxtPtr);
    xmlDocPtr (*ctxt_read_memory)(xmlParserCtxtPtr, const char *, int, const char *, const char *,
                                  int);
    void (*free_doc)(xmlDocPtr);
    xmlNodePtr (*doc_get_root_element)(const xmlDoc *);
    xmlChar *(*node_get_content)(const xmlNode *);
    xmlChar *(*get_prop)(const xmlNode *, const xmlChar *);
    xmlFreeFunc *free; /* libxml2's xmlFree is a variable holding the deallocator */
} xml_lazy_fns;

/*
 * xml_lazy_open — dlopen soname and resolve every function above into *fns; no global state
 * (the process-wide loader below calls it with PFI_XML_SONAME; tests pass other names).
 * Returns 0 on success; otherwise -1, *fns zeroed, nothing left open, and why (why_size
 * bytes, may be 0) holds the reason: dlerror's text, or which symbol the library lacks.
 */
int xml_lazy_open(const char *soname, xml_lazy_fns *fns, char *why, size_t why_size);

/*
 * xml_lazy_load — open libxml2 (PFI_XML_SONAME) for the process and initialise its parser,
 * once (thread-safe, pthread_once). Returns 0 on success; otherwise -1 and a static message in
 * *why (may be NULL). Later calls give the first call's result.
 */
int xml_lazy_load(const char **why);

/* Forwarders: each loads the library if need be; when it cannot be loaded, they return NULL
 * (or do nothing), so callers check xml_lazy_load first to report why. */
void xml_lazy_init_parser(void);
xmlParserCtxtPtr xml_lazy_new_parser_ctxt(void);
void xml_lazy_free_parser_ctxt(xmlParserCtxtPtr ctxt);
xmlDocPtr xml_lazy_ctxt_read_memory(xmlParserCtxtPtr ctxt, const char *buffer, int size,
                                    const char *url, const char *encoding, int options);
void xml_lazy_free_doc(xmlDocPtr doc);
xmlNodePtr xml_lazy_doc_get_root_element(const xmlDoc *doc);
xmlChar *xml_lazy_node_get_content(const xmlNode *node);
xmlChar *xml_lazy_get_prop(const xmlNode *node, const xmlChar *name);
void xml_lazy_free(void *p);

/* xml_lazy.c itself needs the real declarations (to check the types above against them). */
#ifndef PFI_XML_LAZY_IMPL
#define xmlInitParser xml_lazy_init_parser
#define xmlNewParserCtxt xml_lazy_new_parser_ctxt
#define xmlFreeParserCtxt xml_lazy_free_parser_ctxt
#define xmlCtxtReadMemory xml_lazy_ctxt_read_memory
#define xmlFreeDoc xml_lazy_free_doc
#define xmlDocGetRootElement xml_lazy_doc_get_root_element
#define xmlNodeGetContent xml_lazy_node_get_content
#define xmlGetProp xml_lazy_get_prop
#undef xmlFree
#define xmlFree xml_lazy_free
#endif

#endif
