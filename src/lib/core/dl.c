/*
 * dl_open_symbols (see dl.h): dlopen a library by soname and resolve a table of its
 * functions into the caller's struct, with one wording for the failures.
 */
#include "core/dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

void *dl_open_symbols(const char *soname, const char *hint, const dl_symbol *symbols,
                      size_t n_symbols, void *table, size_t table_size, char *why, size_t why_size)
{
    memset(table, 0, table_size);
    if (why_size > 0)
        why[0] = '\0';
    dlerror(); /* clear a stale error */
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *e = dlerror();
        /* dlerror's text names the file; make sure the message does too */
        if (e != NULL && strstr(e, soname) != NULL)
            snprintf(why, why_size, "%s", e);
        else
            snprintf(why, why_size, "%s: %s", soname, e != NULL ? e : "cannot be opened");
        return NULL;
    }
    for (size_t k = 0; k < n_symbols; k++) {
        void *p = dlsym(lib, symbols[k].name);
        if (p == NULL) {
            if (hint != NULL)
                snprintf(why, why_size, "%s lacks %s (%s)", soname, symbols[k].name, hint);
            else
                snprintf(why, why_size, "%s lacks %s", soname, symbols[k].name);
            dlclose(lib);
            memset(table, 0, table_size);
            return NULL;
        }
        /* POSIX: a function's address from dlsym is stored as the function pointer it is */
        memcpy((char *)table + symbols[k].offset, &p, sizeof p);
    }
    return lib;
}
