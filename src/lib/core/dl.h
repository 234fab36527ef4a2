/*
 * Opening a shared library on first use: what the lazy loaders of libxml2
 * (telemetry/xml_lazy.c), libcurl (control/curl_lazy.c), PLplot (plot/plplot_lazy.c) and
 * libmicrohttpd (http/mhd_lazy.c) share. Each loader keeps a struct of function pointers with
 * the installed headers' types and a `void *lib` for the handle, and a table naming each
 * symbol and the field it goes to (DL_SYMBOL). dl_open_symbols fills such a struct, with one
 * wording for every failure; DL_OPENER and DL_ONCE_LOADER write a loader's two entry points,
 * the stateless open (which tests call with other sonames) and the process-wide load.
 * Not part of the public API (nothing here is exported).
 */
#ifndef PFI_CORE_DL_H
#define PFI_CORE_DL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* One function a loader resolves: the library's symbol, and the byte offset of the function
 * pointer that receives it in the loader's struct. */
typedef struct dl_symbol {
    const char *name;
    size_t offset;
} dl_symbol;

/*
 * 0, or a compile-time error when the field of struct `type` is not a pointer to the installed
 * headers' declaration of sym. _Generic does not evaluate its operand, so this names the real
 * symbol without making libpfi reference (link against) it.
 */
#define DL_TYPE_CHECK(type, field, sym)                                                            \
    (0 * sizeof(struct {                                                                           \
         _Static_assert(_Generic(&sym, __typeof__(((type *)0)->field) : 1, default : 0),           \
                        #sym " does not match " #type "." #field);                                 \
         char unused;                                                                              \
     }))

/*
 * The dl_symbol of sym, named symbol_name (a string), stored in field of struct `type`, whose type
 * is checked against sym's declaration. A loader names its functions once, in a list macro, and
 * builds its table with a wrapper that passes #sym as symbol_name, so that a symbol the headers
 * also define as a macro keeps its own name:
 *
 *     #define FOO_FUNCTIONS(X) X(init, foo_init) X(free, foo_free)
 *     #define SYMBOL(field, sym) DL_SYMBOL(foo_fns, field, #sym, sym),
 *     static const dl_symbol foo_symbols[] = {FOO_FUNCTIONS(SYMBOL)};
 */
#define DL_SYMBOL(type, field, symbol_name, sym)                                                   \
    {                                                                                              \
        .name = (symbol_name), .offset = offsetof(type, field) + DL_TYPE_CHECK(type, field, sym)   \
    }

/*
 * dl_open_symbols — dlopen(soname, RTLD_NOW | RTLD_LOCAL) and store the address of each of
 * symbols[0 .. n_symbols-1] into table at its offset; no global state.
 *
 * table: the caller's struct of function pointers, table_size bytes; zeroed first, and zeroed
 * again on failure. Each offset + sizeof(void *) must lie within it (DL_SYMBOL's do).
 * hint: what a missing symbol suggests, e.g. "not libxml2 2.9 or later?" (NULL: none).
 *
 * Returns the library's handle (the caller owns it; dlclose releases it). On failure returns
 * NULL, leaves nothing open, and why (why_size bytes, may be 0) holds the reason, always
 * naming soname: dlerror's text (prefixed "SONAME: " when it does not name the file), or
 * "SONAME lacks SYMBOL (HINT)" for the first symbol missing. On success why is "".
 */
void *dl_open_symbols(const char *soname, const char *hint, const dl_symbol *symbols,
                      size_t n_symbols, void *table, size_t table_size, char *why, size_t why_size);

/*
 * DL_OPENER(open, fns_type, hint, symbols) defines a loader's stateless entry point
 *
 *     int open(const char *soname, fns_type *fns, char *why, size_t why_size)
 *
 * which resolves the table symbols (a dl_symbol array) from soname into *fns, the handle in
 * fns->lib. Returns 0; or -1, *fns zeroed, nothing left open, and why as dl_open_symbols
 * gives it ("" on success).
 */
#define DL_OPENER(open, fns_type, hint, symbols)                                                   \
    int open(const char *soname, fns_type *fns, char *why, size_t why_size)                        \
    {                                                                                              \
        fns->lib = dl_open_symbols(soname, hint, symbols, sizeof symbols / sizeof symbols[0], fns, \
                                   sizeof *fns, why, why_size);                                    \
        return fns->lib != NULL ? 0 : -1;                                                          \
    }

/* A process-wide load, done once: the state behind DL_ONCE_LOADER's function. */
typedef struct dl_once {
    pthread_once_t once;
    bool loaded;   /* the load succeeded */
    char why[512]; /* why it did not */
} dl_once;

/*
 * DL_ONCE_LOADER(load, open, fns_type, fn, soname) defines the process-wide library of a
 * loader, `static fns_type fn` (filled by the first load, never closed), and
 *
 *     int load(const char **why)
 *
 * which calls open(soname, &fn, reason, size) once for the process (thread-safe,
 * pthread_once; later calls give the first call's result). open has DL_OPENER's signature.
 * Returns 0 when loaded; otherwise -1 and, in *why (may be NULL), a static message: open's
 * reason. On success *why is NULL. soname must be a string literal (it is pasted into the
 * message of a library not yet loaded).
 */
#define DL_ONCE_LOADER(load, open, fns_type, fn, soname)                                           \
    static fns_type fn;                                                                            \
    static dl_once load##_state = {.once = PTHREAD_ONCE_INIT, .why = soname " not loaded"};        \
    static void load##_once(void)                                                                  \
    {                                                                                              \
        load##_state.loaded = open(soname, &fn, load##_state.why, sizeof load##_state.why) == 0;   \
    }                                                                                              \
    int load(const char **why)                                                                     \
    {                                                                                              \
        pthread_once(&load##_state.once, load##_once);                                             \
        if (why != NULL)                                                                           \
            *why = load##_state.loaded ? NULL : load##_state.why;                                  \
        return load##_state.loaded ? 0 : -1;                                                       \
    }

#endif
