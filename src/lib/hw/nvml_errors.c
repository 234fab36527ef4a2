/*
 * NVML return code names and their mapping onto pfi_error.
 */
#include "hw/nvml_errors.h"

#include <stddef.h>

static const char *const names[] = {
    [0] = "NVML_SUCCESS",
    [1] = "NVML_ERROR_UNINITIALIZED",
    [2] = "NVML_ERROR_INVALID_ARGUMENT",
    [3] = "NVML_ERROR_NOT_SUPPORTED",
    [4] = "NVML_ERROR_NO_PERMISSION",
    [5] = "NVML_ERROR_ALREADY_INITIALIZED",
    [6] = "NVML_ERROR_NOT_FOUND",
    [7] = "NVML_ERROR_INSUFFICIENT_SIZE",
    [8] = "NVML_ERROR_INSUFFICIENT_POWER",
    [9] = "NVML_ERROR_DRIVER_NOT_LOADED",
    [10] = "NVML_ERROR_TIMEOUT",
    [11] = "NVML_ERROR_IRQ_ISSUE",
    [12] = "NVML_ERROR_LIBRARY_NOT_FOUND",
    [13] = "NVML_ERROR_FUNCTION_NOT_FOUND",
    [14] = "NVML_ERROR_CORRUPTED_INFOROM",
    [15] = "NVML_ERROR_GPU_IS_LOST",
    [16] = "NVML_ERROR_RESET_REQUIRED",
    [17] = "NVML_ERROR_OPERATING_SYSTEM",
    [18] = "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
    [19] = "NVML_ERROR_IN_USE",
    [20] = "NVML_ERROR_MEMORY",
    [21] = "NVML_ERROR_NO_DATA",
    [22] = "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED",
    [23] = "NVML_ERROR_INSUFFICIENT_RESOURCES",
    [24] = "NVML_ERROR_FREQ_NOT_SUPPORTED",
    [25] = "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
    [26] = "NVML_ERROR_DEPRECATED",
    [27] = "NVML_ERROR_NOT_READY",
    [28] = "NVML_ERROR_GPU_NOT_FOUND",
    [29] = "NVML_ERROR_INVALID_STATE",
};

const char *hw_nvml_return_name(int rc)
{
    if (rc == 999)
        return "NVML_ERROR_UNKNOWN";
    if (rc < 0 || (size_t)rc >= sizeof names / sizeof names[0])
        return "NVML_ERROR_UNRECOGNISED";
    return names[rc];
}

pfi_error hw_nvml_map(int rc)
{
    switch (rc) {
    case 0:
        return PFI_OK;
    case 2: /* INVALID_ARGUMENT: e.g. a limit outside [min, max] */
    case 6: /* NOT_FOUND: no such device */
        return PFI_ERR_INVALID_ARGUMENT;
    case 3:  /* NOT_SUPPORTED */
    case 22: /* VGPU_ECC_NOT_SUPPORTED */
    case 24: /* FREQ_NOT_SUPPORTED */
    case 26: /* DEPRECATED */
        return PFI_ERR_NOT_SUPPORTED;
    case 4:
        return PFI_ERR_NO_PERMISSION;
    case 15: /* GPU_IS_LOST */
    case 16: /* RESET_REQUIRED */
    case 28: /* GPU_NOT_FOUND */
        return PFI_ERR_GPU_LOST;
    case 9:  /* DRIVER_NOT_LOADED */
    case 12: /* LIBRARY_NOT_FOUND */
    case 13: /* FUNCTION_NOT_FOUND */
    case 18: /* LIB_RM_VERSION_MISMATCH */
        return PFI_ERR_UNAVAILABLE;
    case 20: /* MEMORY */
        return PFI_ERR_NOMEM;
    default:
        return PFI_ERR_DEVICE;
    }
}
