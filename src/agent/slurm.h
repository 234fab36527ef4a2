/*
 * pfid's side of pfi on Slurm (DESIGN §11): the root-only registration socket (slurm_socket)
 * through which the SPANK plugin or `pfi slurm prolog/epilog` says which job owns which GPUs,
 * the job mapping it imposes (a GPU allocated to a job is the job's, process or not), the
 * per-job accounting (energy in J from the job's start, time under caps, caps applied,
 * estimated tokens lost), the restore of a job's GPUs at its end, and the hpc_job metrics.
 *
 * Locks: the registry has its own mutex, always taken last (after caps_lock, gpu_lock,
 * snap_lock).
 */
#ifndef PFID_SLURM_H
#define PFID_SLURM_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

struct pfid_agent;

/* Open cfg.slurm_socket (when set) and start its thread; 0, or -1 (logged). */
int pfid_slurm_start(struct pfid_agent *a);
/* Stop the thread, remove the socket. Safe when never started. */
void pfid_slurm_stop(struct pfid_agent *a);
/* After each round's job refresh: impose the registered mapping on the snapshot and
 * advance every job's accounting. Takes snap_lock itself. */
void pfid_slurm_round(struct pfid_agent *a);
/* Is GPU k owned by a registered job? (the process scan leaves it alone) */
bool pfid_slurm_claimed(struct pfid_agent *a, unsigned k);
/* Append the hpc_job families to b. Caller holds snap_lock. */
void pfid_slurm_metrics(struct pfid_agent *a, pfid_buf *b);
/*
 * pfid_slurm_handle — one request (text[0..len), from a peer with uid) → its answer JSON
 * (malloc'ed; NULL when out of memory). The socket thread calls it; tests call it directly.
 */
char *pfid_slurm_handle(struct pfid_agent *a, const char *text, size_t len, unsigned uid);

#endif
