/*
 * NVML return codes: their names and the pfi_error each maps to. The numbers are NVML's
 * (nvml.h, nvmlReturn_t), declared here so the build needs no NVIDIA header.
 */
#ifndef PFI_HW_NVML_ERRORS_H
#define PFI_HW_NVML_ERRORS_H

#include "pfi/error.h"

/* hw_nvml_return_name — "NVML_SUCCESS", "NVML_ERROR_NO_PERMISSION", ...; unknown codes give
 * "NVML_ERROR_UNRECOGNISED". Static. */
const char *hw_nvml_return_name(int rc);

/* hw_nvml_map — the pfi_error for an NVML return code (NVML_SUCCESS -> PFI_OK). */
pfi_error hw_nvml_map(int rc);

#endif
