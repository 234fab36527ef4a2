/*
 * pfi/slurm.h — Slurm's jobs as data for the controller (DESIGN §11): the answer of
 * `squeue --json` (Slurm 22.05's data_parser: {"jobs": [{"job_id", "job_state", "nodes",
 * "priority", "qos", "admin_comment", "comment", "tres_alloc_str", "tres_per_node", ...}]})
 * read into one record a job, with the pfi options the SPANK plugin (or `pfi slurm prolog`)
 * left in the job's AdminComment ("pfi:{...}") or the user gave in its Comment
 * ("pfi-flex=high pfi-class=dense").
 *
 * Parsers take (text, len) so they can be fuzzed; nothing here runs a program, prints or
 * exits. Results are owned arrays (pfi_free). Thread-safety: pure functions.
 */
#ifndef PFI_SLURM_H
#define PFI_SLURM_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFI_SLURM_MAX_JOBS 100000 /* jobs in one squeue answer */
#define PFI_SLURM_MAX_BYTES (256u << 20)

typedef struct pfi_slurm_job {
    char id[32];         /* "123" (job_id; an array task has its own) */
    char state[32];      /* RUNNING, SUSPENDED, PENDING, ... as Slurm spells it */
    char nodes[1024];    /* the node list as Slurm gives it ("vm", "gpu[01-04]"); "" none */
    char user[64];       /* user_name */
    char qos[64];        /* "" when none */
    char partition[64];  /* "" when none */
    double priority;     /* Slurm's job priority; NaN missing */
    unsigned gpus;       /* GPUs allocated (tres_alloc_str gres/gpu=N), else asked per node
                            × node_count (tres_per_node gres:gpu:N); 0 none */
    double start_time_s; /* Unix s; NaN missing */
    char flex[32];       /* the job's --pfi-flex tier; "" none */
    char job_class[128]; /* --pfi-class; "" none */
    double min_tput;     /* --pfi-min-throughput, fraction; NaN none */
    double pfi;          /* --pfi-pfi; NaN none */
    bool pfi_held;       /* its AdminComment starts "pfi:held:" (held by `pfi slurm admit`) */
} pfi_slurm_job;

/*
 * pfi_slurm_jobs_parse — parse squeue --json text[0..len) into *out (owned, pfi_free()) of
 * *n jobs (every state; the caller filters). A job without a job_id is an error; a pfi
 * option that does not parse is left out (missing), never guessed; strings longer than
 * their field are cut at a byte boundary that keeps UTF-8 whole. Errors: PFI_ERR_PARSE (not
 * JSON, no "jobs" array, a job not an object: diag says which), PFI_ERR_LIMIT (more than
 * PFI_SLURM_MAX_JOBS jobs or PFI_SLURM_MAX_BYTES), PFI_ERR_NOMEM.
 */
pfi_error pfi_slurm_jobs_parse(const char *text, size_t len, pfi_slurm_job **out, size_t *n,
                               pfi_diag *diag);

/*
 * pfi_slurm_options_parse — the pfi options of a job from its AdminComment ("pfi:" then a
 * JSON object with flex, class, min_throughput, pfi) or else its Comment (blank-separated
 * pfi-flex=, pfi-class=, pfi-min-throughput=, pfi-pfi= words) into j's flex, job_class,
 * min_tput and pfi (each missing when absent or malformed). NULL strings are empty. Returns
 * true when any option was found.
 */
bool pfi_slurm_options_parse(const char *admin_comment, const char *comment, pfi_slurm_job *j);

#ifdef __cplusplus
}
#endif

#endif
