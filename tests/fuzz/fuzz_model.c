/* Fuzz the model JSON reader (pfi_fit_model_load_buffer). */
#include <stdint.h>

#include "pfi/fit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pfi_fit_model *m = NULL;
    pfi_diag d;
    if (pfi_fit_model_load_buffer((const char *)data, size, &m, &d) == PFI_OK) {
        double x0[PFI_FIT_MAX_FEATURES] = {0}, y, lo, hi;
        bool out;
        pfi_fit_model_predict(m, x0, 0.95, &y, &lo, &hi, &out);
    }
    pfi_fit_model_destroy(m);
    return 0;
}
