/*
 * The run reduction as it was before issue 14 (commit 72dbab4: src/lib/telemetry/reduce.c
 * and energy.c, verbatim), kept only as the reference of the fuzz_reduce harness: every
 * public name renamed with a _reference suffix, so both versions link into one program.
 */
#ifndef PFI_REDUCE_REFERENCE_H
#define PFI_REDUCE_REFERENCE_H
#define pfi_telemetry_gaps pfi_telemetry_gaps_reference
#define pfi_telemetry_integrate pfi_telemetry_integrate_reference
#define pfi_telemetry_counter_delta pfi_telemetry_counter_delta_reference
#define pfi_telemetry_derive_power_from_energy pfi_telemetry_derive_power_from_energy_reference
#define pfi_reduce_options_init pfi_reduce_options_init_reference
#define pfi_reduce_power pfi_reduce_power_reference
#define tm_note_gaps tm_note_gaps_reference
#endif
