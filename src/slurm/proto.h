/*
 * pfi on Slurm: what the SPANK plugin (pfi_spank.so), `pfi slurm prolog/epilog` and pfid
 * share — the flexibility tiers, the checks on every value a user can pass (job id, user,
 * class, tier, fractions), and the client side of pfid's registration socket.
 *
 * Plain libc only: this file is compiled into the SPANK plugin, which slurmd and slurmstepd
 * load, and must pull in no library of pfi's.
 *
 * Socket protocol (docs in README "pfi on Slurm"): the client connects to pfid's unix socket
 * (`slurm_socket`), writes one JSON object of at most PFI_SLURM_REQ_MAX bytes, shuts down its
 * write side and reads one JSON object back. pfid checks the peer with SO_PEERCRED: only
 * uid 0 may register. Requests:
 *   {"op":"start","job":"123","user":"alice","gpus":["0","GPU-..."],"class":"dense",
 *    "flex":"high","min_throughput":0.5,"pfi":1.2}
 *   {"op":"end","job":"123"}
 *   {"op":"report","job":"123"}   (a running job's accounting so far, or a recently ended one's)
 * Answers: {"ok":true,...} or {"ok":false,"error":"why"}; an end's answer carries the job's
 * accounting ("accounting": {...}).
 */
#ifndef PFI_SLURM_PROTO_H
#define PFI_SLURM_PROTO_H

#include <stdbool.h>
#include <stddef.h>

#define PFI_SLURM_REQ_MAX 16384
#define PFI_SLURM_REPLY_MAX 16384
#define PFI_SLURM_ID_MAX 128 /* job id, class: 1..127 bytes */
#define PFI_SLURM_USER_MAX 64
#define PFI_SLURM_GPUS_MAX 64

/* A flexibility tier: the share of average throughput the job may lose over its life (DESIGN
 * §12, the 2025 Phoenix field demonstration's tiers) and whether it may be paused. */
typedef struct pfi_slurm_tier {
    const char *name;
    double allowance; /* fraction of average tokens/s the job may lose, [0, 1] */
    bool may_suspend; /* the job-level actuator may pause it */
    int rank;         /* 0 least flexible; the most flexible is cut first */
} pfi_slurm_tier;

/* The tier named name (rigid, low, medium, high, pausable; or as the grid event's tiers
 * (pfi/grid.h): 1, 2, 3, flex1..flex3, Flex1..Flex3, flex-1..flex-3 for low, medium, high,
 * whose allowances are Flex 1's, 2's and 3's); NULL when unknown. */
const pfi_slurm_tier *pfi_slurm_tier_find(const char *name);
/* The grid event's Flex tier number of t (1, 2, 3 for low, medium, high); 0 for the others
 * (rigid, pausable: an allowance without a Flex number) and NULL. */
int pfi_slurm_tier_flex(const pfi_slurm_tier *t);
/* The tier names, comma-separated, for messages. */
const char *pfi_slurm_tier_names(void);

/* Is s a Slurm job id (1..15 decimal digits, not 0)? */
bool pfi_slurm_valid_job(const char *s);
/* Is s a class (1..127 of [A-Za-z0-9._:@+=-], pfid's id alphabet)? */
bool pfi_slurm_valid_class(const char *s);
/* Is s a user name (1..63 of [A-Za-z0-9._-], not starting with '-')? */
bool pfi_slurm_valid_user(const char *s);
/* A fraction in [0, 1] (min_throughput) from s, whole string; false otherwise. */
bool pfi_slurm_parse_fraction(const char *s, double *out);
/* A PFI value in (0, 100] from s, whole string; false otherwise. */
bool pfi_slurm_parse_pfi(const char *s, double *out);

/* Append s JSON-escaped (with its quotes) to buf[*len..cap); false when it does not fit. */
bool pfi_slurm_json_str(char *buf, size_t cap, size_t *len, const char *s);

/*
 * pfi_slurm_call — send req (NUL-terminated JSON) to the unix socket at path and read the
 * answer into reply[reply_cap] (NUL-terminated). Every step is bounded by timeout_s. 0 on an
 * answer (which may itself say "ok":false); -1 with err[err_cap] saying why otherwise.
 */
int pfi_slurm_call(const char *path, const char *req, double timeout_s, char *reply,
                   size_t reply_cap, char *err, size_t err_cap);

/*
 * pfi_slurm_start_request — build a start request from the job's values into buf[cap]. gpus
 * is the Slurm list "0,1,3" (SLURM_JOB_GPUS; ranges "0-2" expanded) or NULL; cls, flex, minimum
 * throughput and pfi may be NULL (not given). Every value is checked first; false with
 * err[err_cap] naming the value at fault and what was expected.
 */
bool pfi_slurm_start_request(char *buf, size_t cap, const char *job, const char *user,
                             const char *gpus, const char *cls, const char *flex,
                             const char *min_tput, const char *pfi, char *err, size_t err_cap);

/* pfi_slurm_end_request — {"op":"end","job":ID} into buf[cap]; false (err) on a bad id. */
bool pfi_slurm_end_request(char *buf, size_t cap, const char *job, char *err, size_t err_cap);
/* pfi_slurm_job_request — {"op":OP,"job":ID} (OP: end, report) into buf[cap], as above. */
bool pfi_slurm_job_request(char *buf, size_t cap, const char *op, const char *job, char *err,
                           size_t err_cap);

/*
 * pfi_slurm_options_comment — "pfi:{"flex":...,"class":...,"min_throughput":...,"pfi":...}"
 * (the options given; each already checked) into buf[cap], for the job's AdminComment, where
 * `pfi control --slurm` reads them from squeue. false when none is given or it does not fit.
 */
bool pfi_slurm_options_comment(char *buf, size_t cap, const char *cls, const char *flex,
                               const char *min_tput, const char *pfi);

/*
 * pfi_slurm_admin_comment — run `SCONTROL update JobId=JOB AdminComment=TEXT` (fork and exec,
 * no shell: TEXT reaches scontrol as one argument whatever it holds), waiting at most
 * timeout_s. 0 when scontrol exits 0; -1 with err[err_cap] otherwise.
 */
int pfi_slurm_admin_comment(const char *scontrol, const char *job, const char *text,
                            double timeout_s, char *err, size_t err_cap);

#endif
