/*
 * pfid's configuration: defaults, the config file, command-line overrides.
 *
 * File format (docs/pfid.md, examples/pfid.conf; read by pfi_conf_parse, pfi/conf.h): one
 * `key = value` a line; blank lines and lines starting with '#' are ignored; the value is the
 * rest of the line, trimmed, up to a '#' that follows a blank (a trailing comment). A key
 * given twice: the later wins, except `throughput_log`, which adds one log each time.
 * Durations take a unit (ms, s, m, h; none: seconds), sizes k/M (1024-based).
 */
#ifndef PFID_CONFIG_H
#define PFID_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/conf.h"
#include "pfi/error.h"
#include "pfi/gpu.h"
#include "pfi/trainlog.h"

#define PFID_PATH_MAX 512
#define PFID_ID_MAX 128
#define PFID_MAX_TLOGS 16
#define PFID_CONFIG_MAX_BYTES PFI_CONF_MAX_BYTES
#define PFID_RING_MAX_CFG 600

typedef enum { PFID_POLICY_HOLD = 0, PFID_POLICY_RESTORE = 1 } pfid_policy;
/* what a node-power file holds: watts, or an energy counter in microjoules */
typedef enum { PFID_NODE_WATTS = 0, PFID_NODE_ENERGY_UJ = 1 } pfid_node_kind;
typedef enum {
    PFID_JOBS_NONE = 0,
    PFID_JOBS_STATIC = 1,
    PFID_JOBS_SLURM = 2,
    PFID_JOBS_EMULATED = 3
} pfid_jobs_source;

/* throughput_log = JOB FORMAT PATH [TOKENS_PER_UNIT] */
typedef struct pfid_tlog {
    char job[PFID_ID_MAX];
    pfi_trainlog_format format;
    char path[PFID_PATH_MAX];
    double scale; /* tokens per logged unit (1 for token logs; sequence length for samples) */
} pfid_tlog;

typedef struct pfid_config {
    char listen[128];              /* "127.0.0.1:9400", "[::1]:9400"; port 0: any free port */
    char port_file[PFID_PATH_MAX]; /* where the bound port is written ("" none) */
    char hostname[256];            /* "" : gethostname() */
    pfi_gpu_kind backend;
    char emulate[512];
    char nvml_library[PFID_PATH_MAX];
    char replay[PFID_PATH_MAX];
    double interval_s; /* sampling interval (1 s) */
    double stale_s;    /* a value older than this has no sample; 0: 3 x interval */
    unsigned ring;     /* samples kept per GPU (60) */
    char token_file[PFID_PATH_MAX];
    bool auth_reads; /* /metrics and /v1/state need the token too */
    char journal[PFID_PATH_MAX];
    unsigned max_per_client;     /* connections one client address may hold (8) */
    char run_dir[PFID_PATH_MAX]; /* GPU ownership locks ("": $PFI_RUN_DIR, else /run/pfi for
                                    GPUs whose limits outlive pfid) */
    double lease_max_s;          /* largest lease_s a PUT may ask (3600 s) */
    pfid_policy lease_policy;    /* at lease expiry (hold) */
    double hold_max_s;           /* policy hold: caps kept this long after expiry (600 s) */
    pfid_policy shutdown_policy; /* SIGTERM / SIGINT (restore) */
    pfid_jobs_source jobs;
    char jobs_file[PFID_PATH_MAX];
    char emulated_job[PFID_ID_MAX];
    double jobs_refresh_s; /* slurm: how often processes are listed (10 s) */
    double tput_stale_s;   /* a throughput older than this has no sample (120 s) */
    pfid_tlog tlogs[PFID_MAX_TLOGS];
    size_t n_tlogs;
    unsigned max_connections; /* 64 */
    unsigned threads;         /* HTTP worker threads (2) */
    double conn_timeout_s;    /* idle connection timeout (10 s) */
    size_t max_body;          /* request body cap, bytes (64 KiB) */
    int log_level;            /* PFID_LOG_* */

    /* metrics: dcgm-exporter's names too (DCGM_FI_DEV_...), the `pfi fit` model behind
     * pfi_job_pfi_estimate ("" none) */
    bool dcgm_names;
    char pfi_model[PFID_PATH_MAX];
    /* the Slurm registration socket (src/agent/slurm.h); "" off */
    char slurm_socket[PFID_PATH_MAX];
    /* the node's power (src/agent/nodepower.c): a file read every round ("" none) holding
     * watts (a PDU or IPMI reading another tool writes) or a cumulative energy counter in
     * microjoules (RAPL's energy_uj), and whether the reading includes the GPUs (a
     * whole-node meter: yes; RAPL: no) */
    char node_power_file[PFID_PATH_MAX];
    pfid_node_kind node_power_kind;
    bool node_power_includes_gpus;
    /* clock = emulated: the time is a virtual clock the controller moves (POST /v1/clock,
     * src/agent/clock.c); no sampler thread. Needs a backend with a virtual clock. */
    bool clock_emulated;
    /* a node_power_file whose value and mtime have not moved for this long (s; and two
       rounds or more) is frozen: its reading is missing, not a stale number (30; 0 never) */
    double node_power_frozen_s;
} pfid_config;

/* pfid_config_defaults — fill c with the defaults above. */
void pfid_config_defaults(pfid_config *c);

/*
 * pfid_config_set — set one key from its text value (the file's and --set's syntax).
 * Errors: PFI_ERR_INVALID_ARGUMENT (unknown key), PFI_ERR_VALUE (bad value), PFI_ERR_LIMIT
 * (too many throughput logs, value too long); diag->message says which and why.
 */
pfi_error pfid_config_set(pfid_config *c, const char *key, const char *value, pfi_diag *diag);

/*
 * pfid_config_parse — apply the config text[0..len) (need not be NUL-terminated) to c.
 * Errors as pfid_config_set, PFI_ERR_PARSE (a line without '='), PFI_ERR_LINE_TOO_LONG,
 * PFI_ERR_LIMIT (text over PFID_CONFIG_MAX_BYTES); diag->line is the line at fault.
 */
pfi_error pfid_config_parse(pfid_config *c, const char *text, size_t len, pfi_diag *diag);

/* pfid_config_load — pfid_config_parse of the file at path (diag->file set). PFI_ERR_IO. */
pfi_error pfid_config_load(pfid_config *c, const char *path, pfi_diag *diag);

/* pfid_config_check — cross-field checks after everything is set (jobs = static needs
 * jobs_file, ...). */
pfi_error pfid_config_check(const pfid_config *c, pfi_diag *diag);

/* pfid_listen_check — listen is HOST:PORT with a numeric port 0-65535 (":99999" refused, not
 * wrapped), and a listener beyond loopback has a token (have_token): an open node agent on the
 * network is a configuration error, not a warning. PFI_ERR_INVALID_ARGUMENT with diag. */
pfi_error pfid_listen_check(const pfid_config *c, bool have_token, pfi_diag *diag);

/* Parsers shared with the request bodies: a duration ("1.5s", "200ms", "2m"; bare = s) and
 * an identifier (job id, request id: 1..127 of [A-Za-z0-9._:@+=-]). */
bool pfid_parse_duration(const char *s, double *out_s);
bool pfid_valid_id(const char *s);

#endif
