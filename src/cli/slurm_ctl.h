/*
 * pfi control --slurm: the jobs read from Slurm every period (squeue --json), their tiers
 * turned into the controller's per-job policy, and the job-level actuator (--slurm-suspend:
 * scontrol suspend / resume of the most flexible jobs when caps alone cannot meet the
 * budget, one job at a time, reversed when the event ends, each action audited).
 */
#ifndef PFI_CLI_SLURM_CTL_H
#define PFI_CLI_SLURM_CTL_H

#include <stdbool.h>
#include <stddef.h>

#include "grid_cli.h"
#include "pfi/control.h"
#include "pfi/control_files.h"
#include "pfi/slurm.h"

#define CLI_SLURM_SUSPENDED_MAX 256
#define CLI_SLURM_QOS_MAX 64 /* --qos-band's NAME=BAND pairs */

typedef struct cli_slurm {
    bool on;      /* --slurm */
    bool suspend; /* --slurm-suspend */
    const char *squeue, *scontrol, *db;
    pfi_ctl_rule *rules; /* owned: the policy file's rules then the tiers' */
    size_t nr;
    pfi_slurm_job *jobs; /* owned: the last squeue answer */
    size_t nj;
    char (*known)[32]; /* owned: running jobs of the last period (join/leave lines) */
    size_t nknown;
    char suspended[CLI_SLURM_SUSPENDED_MAX][32]; /* jobs this controller suspended, in order */
    size_t ns;
    char released[CLI_SLURM_SUSPENDED_MAX][32]; /* held jobs released (each once) */
    size_t nreleased;
    char warned[CLI_SLURM_SUSPENDED_MAX][32]; /* running jobs no agent reported (said once) */
    size_t nwarned;
    unsigned unseen_periods;
    unsigned quiet_periods; /* periods since the last suspend or resume */
    bool squeue_failed;
    bool tiers_full;                    /* a job's tier could not join the accounting (said once) */
    char qos[CLI_SLURM_QOS_MAX][64];    /* --qos-band NAME=BAND,...: a running job whose QOS is */
    double qos_band[CLI_SLURM_QOS_MAX]; /* NAME gets BAND unless its --policy line has band= */
    size_t nqos;
} cli_slurm;

/* The option names and their getopt values start at base (5 options). */
#define CLI_SLURM_OPTIONS(base)                                                                    \
    {"slurm", no_argument, NULL, (base)}, {"slurm-suspend", no_argument, NULL, (base) + 1},        \
        {"squeue", required_argument, NULL, (base) + 2},                                           \
        {"scontrol", required_argument, NULL, (base) + 3},                                         \
    {                                                                                              \
        "qos-band", required_argument, NULL, (base) + 4                                            \
    }
/* Usage lines of those options. */
#define CLI_SLURM_USAGE                                                                            \
    "  --slurm              read running jobs, tiers, priorities from squeue --json\n"             \
    "  --slurm-suspend      when caps alone cannot meet the budget, suspend the most\n"            \
    "                       flexible job (tier high/pausable), one at a time; resume\n"            \
    "                       after the event (implies --slurm)\n"                                   \
    "  --squeue PATH, --scontrol PATH  the Slurm commands (/usr/bin/...)\n"                        \
    "  --qos-band QOS=BAND,...  a running job's priority band from its Slurm QOS\n"                \
    "                       (BAND a number in [-1e6, 1e6], higher cut last); its\n"                \
    "                       --policy line's band= wins, PUT /v1/jobs/ID over both\n"               \
    "                       (implies --slurm)\n"

void cli_slurm_init(cli_slurm *s);
/* Option k (0..4) of CLI_SLURM_OPTIONS with its argument; false when invalid (--qos-band:
 * a malformed pair, a band outside [-1e6, 1e6], a QOS named twice, over CLI_SLURM_QOS_MAX). */
bool cli_slurm_option(cli_slurm *s, int k, const char *arg);
/* Before a period: read the jobs; each running job's tier (--pfi-flex) joins tiers' job-
 * average accounting (grid_cli.h; the jobs that left, leave it); give the controller the
 * policy: tiers' rules (the policy file's and the tier jobs'), the jobs with only a floor,
 * the jobs it suspended cut first. */
void cli_slurm_before(cli_slurm *s, pfi_ctl *ctl, grid_tiers *tiers, double t_s);
/*
 * cli_rules_set_bands — base[nb] (borrowed) with job[k]'s band set to band[k] for k < n: its
 * exact rule's band replaced, else a new exact rule, a copy of the "*" rule (weight NaN, no
 * floor, no class without one) with that band. *out: owned (free), NULL on out of memory
 * (then the return is 0). Returns the rules in *out.
 */
size_t cli_rules_set_bands(const pfi_ctl_rule *base, size_t nb, const char (*job)[PFI_CTL_ID_LEN],
                           const double *band, size_t n, pfi_ctl_rule **out);
/* After a period: jobs no agent reports (said once each), the job-level actuator. */
void cli_slurm_after(cli_slurm *s, const pfi_ctl *ctl, const pfi_ctl_report *r, double t_s);
/* On exit: resume every job this controller suspended; free. */
void cli_slurm_finish(cli_slurm *s);
/* pfi report --job ID ...: the job's accounting. */
int cli_slurm_report(int argc, char **argv);

#endif
