/*
 * Fuzz harness: bearer-token files and the Authorization header check (pfi/http.h). The
 * first byte splits the input: that many bytes (mod the size) are the token file, the rest
 * the header value, matched with its true length (NUL bytes included).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pfi/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t cut = size > 1 ? data[0] % size : 0;
    const char *file = (const char *)data + 1;
    size_t nf = cut > 0 ? cut - 1 : 0;
    static pfi_http_tokens t;
    pfi_diag d;
    if (pfi_http_tokens_parse(file, nf, &t, &d) != PFI_OK)
        return 0;
    size_t nh = size - 1 - nf;
    char *h = malloc(nh + 1);
    if (h == NULL)
        return 0;
    for (size_t i = 0; i < nh; i++)
        h[i] = (char)data[1 + nf + i];
    h[nh] = '\0';
    const pfi_http_token *m = pfi_http_tokens_match(&t, h, nh);
    if (m != NULL && (m < t.t || m >= t.t + t.n))
        abort();
    free(h);
    return 0;
}
