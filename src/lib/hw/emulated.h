/*
 * Internals of the emulated backend that tests use to compare a sweep with the model.
 */
#ifndef PFI_HW_EMULATED_H
#define PFI_HW_EMULATED_H

#include "pfi/error.h"

/*
 * hw_emulated_expected — the noiseless steady state of the emulated job described by spec
 * (pfi_gpu_config.emulate syntax) with every GPU capped at cap_w: *power_w summed over the
 * GPUs, *tput the job's tokens/s. Errors: PFI_ERR_INVALID_ARGUMENT (bad spec).
 */
pfi_error hw_emulated_expected(const char *spec, double cap_w, double *power_w, double *tput);

#endif
