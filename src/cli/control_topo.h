/*
 * pfi control --topology: which levels the agents sit under, said (issue 18 item 1). A GPU
 * sits under the level named as the hostname its agent reports; a hostname that names no
 * level puts its GPUs directly under the site budget, and a level with a limit that no agent
 * sits under holds nothing — both were silent (a rack limited to 1 000 W with its node's name
 * mistyped drew 2 636 W). Kept out of control.c.
 */
#ifndef PFI_CLI_CONTROL_TOPO_H
#define PFI_CLI_CONTROL_TOPO_H

#include <stdbool.h>
#include <stddef.h>

#include "pfi/control.h"
#include "pfi/control_files.h"
#include "pfi/topology.h"

/* The levels of t with a finite limit under which none of host[0 .. n) sits (host matches
 * the level named exactly as it; NULL or "" entries match none), written "rack 'r2' (1000 W,
 * line 3), ..." into buf[cap] (cut with "..." when long). Returns their count. */
size_t cli_topo_unmatched(const pfi_topology *t, const char *const *host, size_t n, char *buf,
                          size_t cap);

/* --check: the agents' URL hosts against t (their reported hostnames are known only at the
 * first period; a URL host with a domain also matches by its first label). Says on stderr
 * each agent whose URL host names no level (its GPUs under the site budget alone) and the
 * limited levels that no agent's URL host names. Returns the number of such levels when
 * every agent's URL host is a name; 0 (and a note) when some agent is addressed by an IP
 * address or localhost (--check cannot tell its hostname). */
size_t cli_topo_check(const pfi_topology *t, const pfi_ctl_agent_spec *agents, size_t na);

/* After a period: once per agent, when its reported hostname is first known, a warning when
 * it names no level of t (its GPUs sit directly under the site budget); at the first period
 * an agent answered, a warning listing the limited levels no answering agent sits under
 * (also the next period's audit note). said[na + 1] (zeroed by the caller, owned by it)
 * keeps what was said. */
void cli_topo_period(const pfi_topology *t, pfi_ctl *ctl, size_t na, unsigned char *said);

#endif
