/*
 * Fuzz harness: the OpenADR 3 parsers (pfi/openadr.h): the input as a GET /events answer
 * (with a level table), turned into the timeline and reports, and as a level table.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pfi/memory.h"
#include "pfi/openadr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const pfi_oadr_level levels[] = {{1, 0.1, NAN}, {2, 0.25, NAN}, {3, NAN, 6000}};
    pfi_oadr_interval *iv;
    size_t n;
    char *notes;
    pfi_diag d;
    if (pfi_oadr_events_parse((const char *)data, size, levels, 3, &iv, &n, &notes, &d) == PFI_OK) {
        pfi_ctl_event *ev;
        size_t ne;
        if (pfi_oadr_timeline(iv, n, 1.7e9, 1.7e9 + 100, 30, &ev, &ne, &d) == PFI_OK)
            pfi_free(ev);
        double *mw = malloc((n ? n : 1) * sizeof *mw);
        if (mw != NULL) {
            for (size_t i = 0; i < n; i++)
                mw[i] = i % 3 == 2 ? NAN : 1000.0 * (double)i;
            pfi_free(pfi_oadr_report_json(iv, n, mw, "ven"));
            free(mw);
        }
        pfi_free(iv);
        pfi_free(notes);
    }
    pfi_oadr_level *lv;
    if (pfi_oadr_levels_parse((const char *)data, size, &lv, &n, &d) == PFI_OK)
        pfi_free(lv);
    return 0;
}
