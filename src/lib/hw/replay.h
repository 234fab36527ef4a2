/*
 * The replay backend's reader, exposed for the fuzz harness and tests.
 */
#ifndef PFI_HW_REPLAY_H
#define PFI_HW_REPLAY_H

#include <stdio.h>

#include "hw/backend.h"

/* Most records and GPUs in one replay file. */
#define HW_REPLAY_MAX_RECORDS 10000000
#define HW_REPLAY_MAX_GPUS 1024

/*
 * hw_replay_open_stream — read a replay CSV from stream (borrowed) named name; on success
 * ops and ctx describe an open replay backend. Errors as pfi_gpu_open's replay errors.
 */
pfi_error hw_replay_open_stream(FILE *stream, const char *name, const pfi_gpu_ops **ops, void **ctx,
                                pfi_diag *diag);

#endif
