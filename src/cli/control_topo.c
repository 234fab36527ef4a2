/*
 * pfi control --topology: which levels the agents sit under, said (control_topo.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "control_topo.h"

/* Append "what" to buf[cap] at *len, ", " between items; "..." once it is full. */
static void add_item(char *buf, size_t cap, size_t *len, const char *what)
{
    if (*len + 4 >= cap)
        return;
    int w = snprintf(buf + *len, cap - *len, "%s%s", *len ? ", " : "", what);
    if (w < 0 || (size_t)w >= cap - *len) {
        snprintf(buf + cap - 4, 4, "...");
        *len = cap - 1;
        return;
    }
    *len += (size_t)w;
}

size_t cli_topo_unmatched(const pfi_topology *t, const char *const *host, size_t n, char *buf,
                          size_t cap)
{
    if (cap > 0)
        buf[0] = '\0';
    if (t == NULL || t->n == 0)
        return 0;
    unsigned char *under = calloc(t->n, 1); /* 1: some host sits under the level */
    if (under == NULL)
        return 0;
    for (size_t k = 0; k < n; k++) {
        size_t ix;
        if (host[k] == NULL || host[k][0] == '\0' ||
            pfi_topology_find_host(t, host[k], &ix) != PFI_OK)
            continue;
        for (size_t a = ix; a != PFI_TOPO_NONE && !under[a]; a = t->parent[a])
            under[a] = 1;
    }
    size_t count = 0, len = 0;
    for (size_t a = 0; a < t->n; a++) {
        if (under[a] || !isfinite(t->limit_w[a]))
            continue;
        char item[4 * PFI_CTL_ID_LEN + 96], sl[CLI_SAFE_CELL], sn[CLI_SAFE_CELL];
        snprintf(item, sizeof item, "%s '%s' (%.0f W, line %ld)",
                 cli_safe(sl, sizeof sl, t->level[a], strlen(t->level[a])),
                 cli_safe(sn, sizeof sn, t->name[a], strlen(t->name[a])), t->limit_w[a],
                 t->line[a]);
        if (cap > 0)
            add_item(buf, cap, &len, item);
        count++;
    }
    free(under);
    return count;
}

/* The host of an http(s):// URL into out[n]; true when it is a name (not an IPv4 or IPv6
 * literal, not localhost). */
static bool url_host(const char *url, char *out, size_t n)
{
    out[0] = '\0';
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    const char *at = strpbrk(p, "@/"); /* user info */
    if (at != NULL && *at == '@')
        p = at + 1;
    if (*p == '[')
        return false; /* [IPv6] */
    size_t len = strcspn(p, ":/?#");
    snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), p);
    if (out[0] == '\0' || strcmp(out, "localhost") == 0)
        return false;
    return strspn(out, "0123456789.") != strlen(out); /* all digits and dots: IPv4 */
}

size_t cli_topo_check(const pfi_topology *t, const pfi_ctl_agent_spec *agents, size_t na)
{
    if (t == NULL || na == 0)
        return 0;
    char(*h)[PFI_CTL_ID_LEN] = calloc(2 * na, sizeof *h);
    const char **hp = calloc(2 * na, sizeof *hp);
    if (h == NULL || hp == NULL) {
        free(h);
        free(hp);
        return 0;
    }
    size_t by_address = 0;
    for (size_t a = 0; a < na; a++) {
        if (!url_host(agents[a].url, h[2 * a], sizeof h[0])) {
            by_address++;
            continue;
        }
        /* a domain name: its first label too (a node named as the short hostname) */
        size_t dot = strcspn(h[2 * a], ".");
        memcpy(h[2 * a + 1], h[2 * a], dot); /* dot < strlen(h[2 * a]) + 1 <= sizeof h[0] */
        h[2 * a + 1][dot] = '\0';
        hp[2 * a] = h[2 * a];
        hp[2 * a + 1] = h[2 * a + 1];
        size_t ix;
        if (pfi_topology_find_host(t, h[2 * a], &ix) != PFI_OK &&
            pfi_topology_find_host(t, h[2 * a + 1], &ix) != PFI_OK) {
            char su[CLI_SAFE_CELL];
            fprintf(stderr,
                    "pfi control: --check: note: agent %s: its host names no --topology level: "
                    "its GPUs would sit under the site budget alone\n",
                    cli_safe(su, sizeof su, agents[a].url, strlen(agents[a].url)));
        }
    }
    char list[1024];
    size_t nu = cli_topo_unmatched(t, hp, 2 * na, list, sizeof list);
    free(h);
    free(hp);
    if (by_address > 0) {
        fprintf(stderr,
                "pfi control: --check: note: %zu agent(s) addressed by an IP address or "
                "localhost: their hostnames, and so the --topology levels they sit under, are "
                "known only at the first period (which says any level with a limit no agent "
                "sits under)\n",
                by_address);
        return 0;
    }
    if (nu > 0)
        cli_error("--topology: %zu level(s) with a limit that no agent sits under (no agent's "
                  "host names them or a level below them; a node is named as its agent's "
                  "hostname): %s",
                  nu, list);
    return nu;
}

void cli_topo_period(const pfi_topology *t, pfi_ctl *ctl, size_t na, unsigned char *said)
{
    if (t == NULL || na == 0)
        return;
    const char **hp = calloc(na, sizeof *hp);
    if (hp == NULL)
        return;
    size_t up = 0, astray = 0;
    for (size_t a = 0; a < na; a++) {
        pfi_ctl_agent_view v;
        pfi_ctl_agent_get(ctl, a, &v);
        if (v.host == NULL || v.host[0] == '\0')
            continue;
        up++;
        hp[a] = v.host;
        size_t ix;
        if (said[a] || pfi_topology_find_host(t, v.host, &ix) == PFI_OK)
            continue;
        said[a] = 1;
        astray++;
        char sh[CLI_SAFE_CELL], su[CLI_SAFE_CELL];
        fprintf(stderr,
                "pfi control: warning: agent %s reports hostname '%s', which names no "
                "--topology level: its GPUs sit under the site budget alone, under no level's "
                "limit\n",
                cli_safe(su, sizeof su, v.url, strlen(v.url)),
                cli_safe(sh, sizeof sh, v.host, strlen(v.host)));
    }
    if (up > 0 && !said[na]) {
        said[na] = 1;
        char list[1024];
        size_t nu = cli_topo_unmatched(t, hp, na, list, sizeof list);
        if (nu > 0) {
            fprintf(stderr,
                    "pfi control: warning: --topology: %zu level(s) with a limit that no "
                    "agent sits under (%zu of %zu agent(s) answered): %s\n",
                    nu, up, na, list);
            char note[1200]; /* pfi_ctl_note keeps 159 bytes */
            snprintf(note, sizeof note, "topology: %zu limited level(s) no agent sits under: %s",
                     nu, list);
            pfi_ctl_note(ctl, note);
        } else if (astray > 0) {
            char note[160];
            snprintf(note, sizeof note, "topology: %zu agent(s) whose hostname names no level",
                     astray);
            pfi_ctl_note(ctl, note);
        }
    }
    free(hp);
}
