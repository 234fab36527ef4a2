/*
 * pfid's time (agent.h): CLOCK_MONOTONIC and CLOCK_REALTIME, or, under `clock = emulated`, a
 * virtual clock that only a controller moves (POST /v1/clock, docs/agent-api.md).
 *
 * Emulated, the sampler thread does not run: an advance to time t takes the sampling rounds
 * due on the way (every `interval` of virtual time, and one at t itself), each after the
 * lease checks of its time, before it answers. Samples, freshness, throughput ages, leases
 * and the journal's times all read this clock, so what the agent reads, caps and reports is a
 * function of the requests it gets and their order alone: a replay on emulated GPUs gives the
 * same numbers on a loaded host as on an idle one (tests/control/grid_replay_det.sh). The
 * HTTP server's own timeouts stay on the real clock.
 *
 * The clock is the process's (one agent a process, as the monotonic clock it replaces):
 * switched on once at start, before any thread, and read under a mutex after.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "log.h"
#include "request.h"

/* An advance takes at most this many rounds (a mistaken Unix time as t_s is refused, not
 * sampled for days) */
#define CLOCK_MAX_ROUNDS 100000
/* Times closer than this are the same (a round due at t is the round at t) */
#define CLOCK_EPS_S 1e-9

static bool g_emulated; /* written once before any thread starts */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static double g_mono;     /* virtual s (0 at start) */
static double g_wall_off; /* Unix time = g_mono + g_wall_off */
static bool g_anchored;   /* a POST /v1/clock has set the time */
static pthread_mutex_t g_advance = PTHREAD_MUTEX_INITIALIZER; /* one advance at a time */

static double real_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double pfid_mono_s(void)
{
    if (!g_emulated)
        return real_s(CLOCK_MONOTONIC);
    pthread_mutex_lock(&g_mu);
    double v = g_mono;
    pthread_mutex_unlock(&g_mu);
    return v;
}

double pfid_wall_s(void)
{
    if (!g_emulated)
        return real_s(CLOCK_REALTIME);
    pthread_mutex_lock(&g_mu);
    double v = g_mono + g_wall_off;
    pthread_mutex_unlock(&g_mu);
    return v;
}

void pfid_clock_emulate(void)
{
    g_emulated = true;
    g_mono = 0;
    g_wall_off = real_s(CLOCK_REALTIME); /* until the first POST /v1/clock says otherwise */
}

bool pfid_clock_emulated(void)
{
    return g_emulated;
}

static void clock_set(double mono, double wall_off)
{
    pthread_mutex_lock(&g_mu);
    g_mono = mono;
    g_wall_off = wall_off;
    pthread_mutex_unlock(&g_mu);
}

/* The clock at t: the leases' checks of that time, then a sampling round. */
static void round_at(pfid_agent *a, double t, double wall_off)
{
    clock_set(t, wall_off);
    pfid_caps_tick(a, t);
    pfid_sample_round(a);
}

void pfid_clock_post(pfid_agent *a, const char *req, size_t len, int *status, char **body)
{
    char msg[600];
    double t, unix_s;
    if (!g_emulated) {
        *status = 409;
        *body = pfid_error_json("clock = wall here: POST /v1/clock needs clock = emulated");
        return;
    }
    if (!pfid_clock_parse(req, len, &t, &unix_s, msg, sizeof msg)) {
        *status = 400;
        *body = pfid_error_json(msg);
        return;
    }
    pthread_mutex_lock(&g_advance);
    pthread_mutex_lock(&g_mu);
    double v = g_mono, off = isfinite(unix_s) ? unix_s - t : g_wall_off;
    bool anchored = g_anchored;
    pthread_mutex_unlock(&g_mu);
    double iv = a->cfg.interval_s;
    if (t < v - CLOCK_EPS_S) {
        pthread_mutex_unlock(&g_advance);
        snprintf(msg, sizeof msg, "the clock does not go back: it is at %.6f s, t_s %.6f s", v, t);
        *status = 409;
        *body = pfid_error_json(msg);
        return;
    }
    if ((t - v) / iv > CLOCK_MAX_ROUNDS) {
        pthread_mutex_unlock(&g_advance);
        snprintf(msg, sizeof msg,
                 "an advance of %.6g s is over %d sampling intervals of %g s (t_s is the "
                 "emulated clock's seconds, not a Unix time)",
                 t - v, CLOCK_MAX_ROUNDS, iv);
        *status = 422;
        *body = pfid_error_json(msg);
        return;
    }
    /* the rounds due on the way, on the interval's grid, then one at t (none when t is the
     * time already sampled: a repeated request adds no sample) */
    unsigned n = 0;
    for (double k = floor(v / iv + CLOCK_EPS_S) + 1; k * iv < t - CLOCK_EPS_S; k++, n++)
        round_at(a, k * iv, off);
    if (n > 0 || t > v + CLOCK_EPS_S || !anchored) {
        round_at(a, t, off);
        n++;
    } else {
        clock_set(v, off);
    }
    pthread_mutex_lock(&g_mu);
    g_anchored = true;
    pthread_mutex_unlock(&g_mu);
    pthread_mutex_unlock(&g_advance);
    snprintf(msg, sizeof msg, "{\"t_s\":%.17g,\"unix_s\":%.17g,\"rounds\":%u}", t, t + off, n);
    *status = 200;
    *body = strdup(msg);
}
