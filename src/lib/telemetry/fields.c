/*
 * The field names table: every source name the readers meet (nvidia-smi query fields, dmon
 * and dcgmi dmon short names, DCGM_FI_* metrics, nvidia-smi -q labels and -q -x elements)
 * mapped to its canonical field, kind and DCGM field id (pfi_telemetry_field_info). A new source
 * name is one row here.
 */
#include <string.h>

#include "pfi/telemetry.h"

/*
 * Source names -> canonical field. Names from nvidia-smi --help-query-gpu, nvidia-smi dmon
 * headers, dcgmi dmon -l short names and dcgm-exporter DCGM_FI_* metrics; DCGM ids from
 * dcgm_fields.h. The canonical name carries the unit.
 */
static const struct field_alias {
    const char *source, *canonical;
    pfi_telemetry_kind kind;
    int dcgm_id;
} aliases[] = {
    {"power.draw", "power_w", PFI_KIND_POWER_W, 155},
    {"power.draw.average", "power_avg_w", PFI_KIND_POWER_W, 155},
    {"power.draw.instant", "power_instant_w", PFI_KIND_POWER_W, 157},
    {"power.limit", "power_limit_w", PFI_KIND_LIMIT_W, 160},
    {"enforced.power.limit", "enforced_limit_w", PFI_KIND_LIMIT_W, 164},
    {"power.default_limit", "default_limit_w", PFI_KIND_LIMIT_W, 163},
    {"power.min_limit", "min_limit_w", PFI_KIND_LIMIT_W, 161},
    {"power.max_limit", "max_limit_w", PFI_KIND_LIMIT_W, 162},
    {"utilization.gpu", "gpu_util_pct", PFI_KIND_PERCENT, 203},
    {"utilization.memory", "mem_copy_util_pct", PFI_KIND_PERCENT, 204},
    {"temperature.gpu", "temp_c", PFI_KIND_OTHER, 150},
    {"temperature.memory", "mem_temp_c", PFI_KIND_OTHER, 140},
    {"clocks.current.sm", "sm_clock_mhz", PFI_KIND_OTHER, 100},
    {"clocks.sm", "sm_clock_mhz", PFI_KIND_OTHER, 100},
    {"clocks.current.memory", "mem_clock_mhz", PFI_KIND_OTHER, 101},
    {"clocks.mem", "mem_clock_mhz", PFI_KIND_OTHER, 101},
    {"memory.used", "fb_used_mib", PFI_KIND_OTHER, 252},
    {"fan.speed", "fan_pct", PFI_KIND_PERCENT, 0},
    {"clocks_event_reasons.active", "clock_event_reasons", PFI_KIND_OTHER, 112},
    {"clocks_throttle_reasons.active", "clock_event_reasons", PFI_KIND_OTHER, 112},
    /* dmon */
    {"pwr", "power_w", PFI_KIND_POWER_W, 155},
    {"gtemp", "temp_c", PFI_KIND_OTHER, 150},
    {"temp", "temp_c", PFI_KIND_OTHER, 150},
    {"mtemp", "mem_temp_c", PFI_KIND_OTHER, 140},
    {"sm", "gpu_util_pct", PFI_KIND_PERCENT, 203},
    {"mem", "mem_copy_util_pct", PFI_KIND_PERCENT, 204},
    {"enc", "enc_util_pct", PFI_KIND_PERCENT, 206},
    {"dec", "dec_util_pct", PFI_KIND_PERCENT, 207},
    {"jpg", "jpg_util_pct", PFI_KIND_PERCENT, 0},
    {"ofa", "ofa_util_pct", PFI_KIND_PERCENT, 0},
    {"mclk", "mem_clock_mhz", PFI_KIND_OTHER, 101},
    {"pclk", "sm_clock_mhz", PFI_KIND_OTHER, 100},
    {"pviol", "power_violation_pct", PFI_KIND_PERCENT, 240},
    {"fb", "fb_used_mib", PFI_KIND_OTHER, 252},
    /* dcgmi dmon short names */
    {"POWER", "power_w", PFI_KIND_POWER_W, 155},
    {"TOTEC", "energy_mj", PFI_KIND_ENERGY_MJ, 156},
    {"POWINST", "power_instant_w", PFI_KIND_POWER_W, 157},
    {"PMLMT", "power_limit_w", PFI_KIND_LIMIT_W, 160},
    {"PMMAX", "max_limit_w", PFI_KIND_LIMIT_W, 162},
    {"EPLMT", "enforced_limit_w", PFI_KIND_LIMIT_W, 164},
    {"TMPTR", "temp_c", PFI_KIND_OTHER, 150},
    {"MMTMP", "mem_temp_c", PFI_KIND_OTHER, 140},
    {"GPUTL", "gpu_util_pct", PFI_KIND_PERCENT, 203},
    {"MCUTL", "mem_copy_util_pct", PFI_KIND_PERCENT, 204},
    {"FBUSD", "fb_used_mib", PFI_KIND_OTHER, 252},
    {"SMCLK", "sm_clock_mhz", PFI_KIND_OTHER, 100},
    {"MMCLK", "mem_clock_mhz", PFI_KIND_OTHER, 101},
    {"GRACT", "gr_active", PFI_KIND_RATIO, 1001},
    {"SMACT", "sm_active", PFI_KIND_RATIO, 1002},
    {"SMOCC", "sm_occupancy", PFI_KIND_RATIO, 1003},
    {"TENSO", "tensor_active", PFI_KIND_RATIO, 1004},
    {"DRAMA", "dram_active", PFI_KIND_RATIO, 1005},
    {"FP64A", "fp64_active", PFI_KIND_RATIO, 1006},
    {"FP32A", "fp32_active", PFI_KIND_RATIO, 1007},
    {"FP16A", "fp16_active", PFI_KIND_RATIO, 1008},
    /* dcgm-exporter */
    {"DCGM_FI_DEV_POWER_USAGE", "power_w", PFI_KIND_POWER_W, 155},
    {"DCGM_FI_DEV_POWER_USAGE_INSTANT", "power_instant_w", PFI_KIND_POWER_W, 157},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "energy_mj", PFI_KIND_ENERGY_MJ, 156},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT", "power_limit_w", PFI_KIND_LIMIT_W, 160},
    {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "enforced_limit_w", PFI_KIND_LIMIT_W, 164},
    {"DCGM_FI_DEV_GPU_UTIL", "gpu_util_pct", PFI_KIND_PERCENT, 203},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "mem_copy_util_pct", PFI_KIND_PERCENT, 204},
    {"DCGM_FI_DEV_GPU_TEMP", "temp_c", PFI_KIND_OTHER, 150},
    {"DCGM_FI_DEV_MEMORY_TEMP", "mem_temp_c", PFI_KIND_OTHER, 140},
    {"DCGM_FI_DEV_SM_CLOCK", "sm_clock_mhz", PFI_KIND_OTHER, 100},
    {"DCGM_FI_DEV_MEM_CLOCK", "mem_clock_mhz", PFI_KIND_OTHER, 101},
    {"DCGM_FI_DEV_FB_USED", "fb_used_mib", PFI_KIND_OTHER, 252},
    {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "clock_event_reasons", PFI_KIND_OTHER, 112},
    {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "clock_event_reasons", PFI_KIND_OTHER, 112},
    {"DVCCTR", "clock_event_reasons", PFI_KIND_OTHER, 112},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gr_active", PFI_KIND_RATIO, 1001},
    {"DCGM_FI_PROF_SM_ACTIVE", "sm_active", PFI_KIND_RATIO, 1002},
    {"DCGM_FI_PROF_SM_OCCUPANCY", "sm_occupancy", PFI_KIND_RATIO, 1003},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "tensor_active", PFI_KIND_RATIO, 1004},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "dram_active", PFI_KIND_RATIO, 1005},
    {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", "fp64_active", PFI_KIND_RATIO, 1006},
    {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", "fp32_active", PFI_KIND_RATIO, 1007},
    {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", "fp16_active", PFI_KIND_RATIO, 1008},
    /* nvidia-smi -q */
    {"Power Draw", "power_w", PFI_KIND_POWER_W, 155},
    {"Average Power Draw", "power_avg_w", PFI_KIND_POWER_W, 155},
    {"Instantaneous Power Draw", "power_instant_w", PFI_KIND_POWER_W, 157},
    {"Power Limit", "power_limit_w", PFI_KIND_LIMIT_W, 160},
    {"Current Power Limit", "enforced_limit_w", PFI_KIND_LIMIT_W, 164},
    {"Enforced Power Limit", "enforced_limit_w", PFI_KIND_LIMIT_W, 164},
    {"Requested Power Limit", "requested_limit_w", PFI_KIND_LIMIT_W, 160},
    {"Default Power Limit", "default_limit_w", PFI_KIND_LIMIT_W, 163},
    {"Min Power Limit", "min_limit_w", PFI_KIND_LIMIT_W, 161},
    {"Max Power Limit", "max_limit_w", PFI_KIND_LIMIT_W, 162},
    /* nvidia-smi -q -x element names (case-21: renamed and split across drivers) */
    {"power_draw", "power_w", PFI_KIND_POWER_W, 155},
    {"average_power_draw", "power_avg_w", PFI_KIND_POWER_W, 155},
    {"instant_power_draw", "power_instant_w", PFI_KIND_POWER_W, 157},
    {"power_limit", "power_limit_w", PFI_KIND_LIMIT_W, 160},
    {"current_power_limit", "enforced_limit_w", PFI_KIND_LIMIT_W, 164},
    {"enforced_power_limit", "enforced_limit_w", PFI_KIND_LIMIT_W, 164},
    {"requested_power_limit", "requested_limit_w", PFI_KIND_LIMIT_W, 160},
    {"default_power_limit", "default_limit_w", PFI_KIND_LIMIT_W, 163},
    {"min_power_limit", "min_limit_w", PFI_KIND_LIMIT_W, 161},
    {"max_power_limit", "max_limit_w", PFI_KIND_LIMIT_W, 162},
};

void pfi_telemetry_field_info(const char *name, const char **canonical, pfi_telemetry_kind *kind,
                              int *dcgm_id)
{
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        if (strcmp(aliases[i].source, name) == 0) {
            *canonical = aliases[i].canonical;
            *kind = aliases[i].kind;
            *dcgm_id = aliases[i].dcgm_id;
            return;
        }
    }
    *canonical = name;
    *kind = PFI_KIND_OTHER;
    *dcgm_id = 0;
}
