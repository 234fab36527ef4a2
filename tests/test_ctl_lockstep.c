/*
 * The controller's lockstep with the caps (src/lib/control/controller.c, pfi_ctl_step), counted
 * at the agents: fake agents (pfid's own HTTP server, pfi/http.h) answer GET /v1/state with a
 * sampled_at_s the test controls and count the GETs of each period, and take PUT /v1/caps.
 * The controller runs on the system's clock (the emulated clock has no lockstep), so what is
 * asserted is what a period read, never how long it took:
 *   (1) outside the tree, the period whose budget changed right after a cap change reads each
 *       agent once (no wait for readings newer than the change) and sends its caps;
 *   (2) the period after a cap change re-reads only the agents whose caps moved: an agent
 *       whose GPU is unmanaged (no job: never capped), with a reading older than the change,
 *       is read once; an agent sent no cap but running a GPU of a job whose caps moved is
 *       read again;
 *   (3) an agent whose caps moved and whose next sample is not due yet is read once, when
 *       that sample is due (not also at the period's start);
 *   (4) with a topology (tree mode) the budget change still waits: the agent whose caps moved
 *       and whose sample predates the change is read again.
 * Agent "a" has one GPU of job "ja" (capped); agent "b" one GPU without a job; agent "c" (the
 * job case only) one GPU of job "ja" with a single possible cap. Every case fails on the build
 * before 8fe624d (the reads per agent printed show by how much); (3) also on 8fe624d alone.
 * Exit 77 (skipped) where libmicrohttpd or libcurl cannot be loaded.
 */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "pfi/control.h"
#include "pfi/control_files.h"
#include "pfi/http.h"
#include "pfi/topology.h"

#include "checks_plain.h"

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* How a fake agent stamps its samples. */
enum { SAMPLE_FROZEN, SAMPLE_GRID };

typedef struct fake {
    pthread_mutex_t mu;
    pfi_http_server *srv;
    const char *host, *uuid, *job; /* job NULL: an unmanaged GPU */
    int mode;
    double frozen_s;         /* SAMPLE_FROZEN: every answer's sampled_at_s */
    double grid0_s, iv_s;    /* SAMPLE_GRID: samples at grid0_s + k iv_s (the newest past one) */
    double fixed_w;          /* NaN: caps 200-700 W (700 until a PUT); else the GPU's only cap */
    double cap_w;            /* in force */
    int gets, puts;          /* this period's (fake_reset) */
    double last_put_s;       /* wall s of the last PUT answered (NaN none) */
    double first_get_s;      /* wall s of this period's first GET (NaN none) */
    double last_sample_s[8]; /* this period's answers' sampled_at_s, in order */
} fake;

static double sample_now(const fake *f)
{
    if (f->mode == SAMPLE_FROZEN)
        return f->frozen_s;
    return f->grid0_s + floor((wall() - f->grid0_s) / f->iv_s) * f->iv_s;
}

static pfi_http_next on_body(void *cls, pfi_http_request *rq, const char *body, size_t len,
                             bool too_big)
{
    (void)len;
    (void)too_big;
    fake *f = cls;
    const char *m = pfi_http_request_method(rq), *u = pfi_http_request_url(rq);
    char out[2048];
    pthread_mutex_lock(&f->mu);
    if (strcmp(m, "GET") == 0 && strcmp(u, "/v1/state") == 0) {
        double s = sample_now(f);
        if (f->gets == 0)
            f->first_get_s = wall();
        if (f->gets < 8)
            f->last_sample_s[f->gets] = s;
        f->gets++;
        char job[64] = "null", jobs[256] = "[]";
        if (f->job != NULL) {
            snprintf(job, sizeof job, "\"%s\"", f->job);
            snprintf(jobs, sizeof jobs,
                     "[{\"id\":\"%s\",\"gpus\":[\"%s\"],\"power_w\":%.1f,"
                     "\"throughput_tok_s\":%.1f,\"class\":null}]",
                     f->job, f->uuid, fmin(400, f->cap_w), 1000 * fmin(400, f->cap_w));
        }
        double lo = isnan(f->fixed_w) ? 200 : f->fixed_w, hi = isnan(f->fixed_w) ? 700 : f->fixed_w;
        snprintf(out, sizeof out,
                 "{\"hostname\":\"%s\",\"sampled_at_s\":%.6f,\"sampling_interval_s\":%g,"
                 "\"node\":null,\"gpus\":[{\"index\":0,\"uuid\":\"%s\",\"name\":\"fake\","
                 "\"power_w\":%.1f,\"energy_j\":null,\"cap_w\":%.0f,\"enforced_cap_w\":%.0f,"
                 "\"min_cap_w\":%.0f,\"max_cap_w\":%.0f,\"default_cap_w\":%.0f,"
                 "\"original_cap_w\":%.0f,\"job\":%s}],\"jobs\":%s,"
                 "\"lease\":{\"request_id\":null,\"expires_in_s\":null,\"policy\":\"hold\"}}",
                 f->host, s, f->iv_s, f->uuid, fmin(400, f->cap_w), f->cap_w, f->cap_w, lo, hi, hi,
                 hi, job, jobs);
    } else if (strcmp(m, "PUT") == 0 && strcmp(u, "/v1/caps") == 0) {
        const char *c = strstr(body, "\"cap_w\":");
        if (c != NULL)
            f->cap_w = atof(c + 8);
        const char *r = strstr(body, "\"request_id\":\"");
        char id[128] = "";
        if (r != NULL)
            sscanf(r + 14, "%127[^\"]", id);
        f->puts++;
        f->last_put_s = wall();
        snprintf(out, sizeof out,
                 "{\"request_id\":\"%s\",\"applied\":true,\"gpus\":[{\"uuid\":\"%s\","
                 "\"requested_cap_w\":%.0f,\"enforced_cap_w\":%.0f}]}",
                 id, f->uuid, f->cap_w, f->cap_w);
    } else if (strcmp(m, "DELETE") == 0 && strcmp(u, "/v1/caps") == 0) {
        f->cap_w = isnan(f->fixed_w) ? 700 : f->fixed_w;
        snprintf(out, sizeof out,
                 "{\"gpus\":[{\"uuid\":\"%s\",\"requested_cap_w\":null,\"enforced_cap_w\":%.0f}]}",
                 f->uuid, f->cap_w);
    } else {
        pthread_mutex_unlock(&f->mu);
        return pfi_http_reply(rq, 404, "{\"error\":\"no such path\"}", NULL);
    }
    pthread_mutex_unlock(&f->mu);
    static const pfi_http_header h[] = {{"Content-Type", "application/json"}, {NULL, NULL}};
    return pfi_http_reply(rq, 200, out, h);
}

static bool fake_start(fake *f, const char *host, const char *uuid, const char *job, double fixed_w,
                       pfi_ctl_agent_spec *spec)
{
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    f->host = host;
    f->uuid = uuid;
    f->job = job;
    f->fixed_w = fixed_w;
    f->cap_w = isnan(fixed_w) ? 700 : fixed_w;
    f->iv_s = 1;
    f->last_put_s = f->first_get_s = NAN;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    pfi_http_server_config cfg = {.addr = (const struct sockaddr *)&sa,
                                  .threads = 1,
                                  .idle_timeout_s = 30,
                                  .max_body = 1 << 16,
                                  .on_body = on_body,
                                  .cls = f};
    pfi_diag d;
    pfi_error e = pfi_http_server_start(&cfg, &f->srv, &d);
    if (e != PFI_OK) {
        fprintf(stderr, "server: %s\n", d.message);
        if (e == PFI_ERR_UNAVAILABLE) /* no libmicrohttpd here */
            exit(77);
        return false;
    }
    memset(spec, 0, sizeof *spec);
    snprintf(spec->url, sizeof spec->url, "http://127.0.0.1:%u", pfi_http_server_port(f->srv));
    snprintf(spec->token, sizeof spec->token, "t");
    return true;
}

static void fake_reset(fake *f)
{
    pthread_mutex_lock(&f->mu);
    f->gets = f->puts = 0;
    f->first_get_s = NAN;
    pthread_mutex_unlock(&f->mu);
}

static void fake_stop(fake *f)
{
    pfi_http_server_stop(f->srv);
    pthread_mutex_destroy(&f->mu);
}

typedef struct rig {
    fake a, b, c; /* c: only with a third agent (rig_start) */
    size_t n;
    pfi_ctl_agent_spec spec[3];
    pfi_topology *topo;
    pfi_ctl *ctl;
    double t;
} rig;

/* Agents a and b; with_c also agent c, whose one GPU runs job ja with a's and has a single
 * possible cap (200 W): capping ja never sends it one. */
static bool rig_start(rig *r, bool tree, bool with_c)
{
    memset(r, 0, sizeof *r);
    r->n = with_c ? 3 : 2;
    if (!fake_start(&r->a, "na", "GPU-a", "ja", NAN, &r->spec[0]) ||
        !fake_start(&r->b, "nb", "GPU-b", NULL, NAN, &r->spec[1]) ||
        (with_c && !fake_start(&r->c, "nc", "GPU-c", "ja", 200, &r->spec[2])))
        return false;
    pfi_ctl_config cfg;
    pfi_ctl_config_init(&cfg);
    cfg.agents = r->spec;
    cfg.n_agents = r->n;
    cfg.period_s = 4; /* the lockstep waits at most 2 s */
    cfg.stale_after_s = 600;
    cfg.http_timeout_s = 10;
    if (tree) {
        const char *text = "feed feed - 1e9 reserve\nrack r0 feed 1e9\nnode na r0 -\n"
                           "node nb r0 -\n";
        FILE *fp = fmemopen((void *)text, strlen(text), "r");
        pfi_diag d;
        pfi_error e = pfi_topology_read_stream(fp, "lockstep", &r->topo, &d);
        fclose(fp);
        if (e != PFI_OK) {
            fprintf(stderr, "topology: %s\n", d.message);
            return false;
        }
        cfg.topology = r->topo;
    }
    pfi_diag d;
    pfi_error e = pfi_ctl_create(&cfg, &r->ctl, &d);
    if (e != PFI_OK) {
        fprintf(stderr, "controller: %s\n", d.message);
        if (e == PFI_ERR_UNAVAILABLE) /* no libcurl here */
            exit(77);
        return false;
    }
    return true;
}

static void rig_stop(rig *r)
{
    if (r->ctl != NULL) {
        bool all_ok;
        pfi_diag d;
        pfi_ctl_release(r->ctl, &all_ok, &d);
        pfi_ctl_destroy(r->ctl);
    }
    fake_stop(&r->a);
    fake_stop(&r->b);
    if (r->n == 3)
        fake_stop(&r->c);
    pfi_topology_destroy(r->topo);
}

/* One period (controller time advancing a period each), the fakes' counts cleared first. */
static bool step(rig *r, bool event, double budget_w, pfi_ctl_report *rep)
{
    fake_reset(&r->a);
    fake_reset(&r->b);
    if (r->n == 3)
        fake_reset(&r->c);
    pfi_diag d;
    pfi_error e = pfi_ctl_step(r->ctl, r->t, event, budget_w, NAN, rep, &d);
    r->t += 4;
    CHECK(e == PFI_OK, "step at %g: %s", r->t - 4, d.message);
    return e == PFI_OK;
}

/* Uncapped periods (the reference is learnt), then an event whose budget caps agent a's job
 * (each GPU draws 400 W; under a 700 W budget, less the 3 % margin and agent b's unmanaged
 * 400 W, job ja has at most 279 W, within its 200-700 W caps). Returns
 * whether a's cap moved in the event's first period. */
static bool warm_then_cap(rig *r, double budget_w)
{
    pfi_ctl_report rep;
    for (int k = 0; k < 4; k++) {
        if (!step(r, false, NAN, &rep))
            return false;
        CHECK(r->a.gets == 1 && r->b.gets == 1, "uncapped period %d: %d, %d reads", k, r->a.gets,
              r->b.gets);
    }
    if (!step(r, true, budget_w, &rep))
        return false;
    CHECK(rep.decreases > 0 && r->a.puts == 1 && r->a.cap_w < 400,
          "the event's first period caps job ja: %zu decreases, %d PUTs, cap %g W (%s)",
          rep.decreases, r->a.puts, r->a.cap_w, rep.note);
    CHECK(r->b.puts == 0, "agent b's GPU has no job: no cap (%d PUTs)", r->b.puts);
    return r->a.puts == 1;
}

/* (1) and (4): the period right after a cap change changes the budget again. Agent a's
 * samples are frozen before the change (stale for its lockstep however late the period
 * starts). Returns a's reads in that period. */
static int budget_change_after_cap(bool tree, int *puts, size_t *moves)
{
    rig r;
    int n = -1;
    if (!rig_start(&r, tree, false))
        goto out;
    r.a.mode = r.b.mode = SAMPLE_FROZEN;
    r.a.frozen_s = r.b.frozen_s = wall() - 0.5;
    if (!warm_then_cap(&r, 700))
        goto out;
    pfi_ctl_report rep;
    if (!step(&r, true, 650, &rep))
        goto out;
    n = r.a.gets;
    *puts = r.a.puts;
    *moves = rep.decreases + rep.increases;
    CHECK(r.b.gets == 1, "agent b (nothing moved) read once: %d", r.b.gets);
out:
    rig_stop(&r);
    return n;
}

static void test_budget_change_flat(void)
{
    int puts = 0;
    size_t moves = 0;
    int n = budget_change_after_cap(false, &puts, &moves);
    printf("flat budget change: agent a read %d time(s), %d PUT(s), %zu cap moves\n", n, puts,
           moves);
    CHECK(n == 1, "(1) flat: the budget change reads agent a once, no wait: %d reads", n);
    CHECK(puts == 1 && moves > 0, "(1) flat: the new budget's caps go out in that period: %d PUTs",
          puts);
}

static void test_budget_change_tree(void)
{
    int puts = 0;
    size_t moves = 0;
    int n = budget_change_after_cap(true, &puts, &moves);
    printf("tree budget change: agent a read %d time(s), %d PUT(s), %zu cap moves\n", n, puts,
           moves);
    CHECK(n >= 2, "(4) tree: the budget change waits for agent a's newer reading: %d reads", n);
}

/* (2) and (3): the period after a cap change, same budget. Agent a samples on a 1 s grid (its
 * first sample after the change is due 0.25-1.25 s later), agent b's samples are frozen
 * before the change. Returns false when the period began too late after the change to be
 * conclusive (a loaded host): agent a's sample was then due at once. */
static bool after_cap_change(int *a_reads, int *b_reads, double *a_sample, double *change_s)
{
    rig r;
    bool ok = false;
    if (!rig_start(&r, false, false))
        goto out;
    r.a.mode = SAMPLE_GRID;
    r.a.grid0_s = wall() - 0.5;
    r.a.iv_s = 1;
    r.b.mode = SAMPLE_FROZEN;
    r.b.frozen_s = wall() - 0.5;
    if (!warm_then_cap(&r, 700))
        goto out;
    double put_s = r.a.last_put_s;
    pfi_ctl_report rep;
    if (!step(&r, true, 700, &rep))
        goto out;
    /* the period's reads began before b's first answer; the change after a's PUT came */
    ok = r.b.first_get_s - put_s < 0.2;
    *a_reads = r.a.gets;
    *b_reads = r.b.gets;
    *a_sample = r.a.gets > 0 ? r.a.last_sample_s[0] : NAN;
    *change_s = put_s;
out:
    rig_stop(&r);
    return ok;
}

static void test_after_cap_change(void)
{
    for (int tries = 0; tries < 5; tries++) {
        int ar = -1, br = -1, before = failures;
        double as = NAN, cs = NAN;
        bool conclusive = after_cap_change(&ar, &br, &as, &cs);
        if (failures != before)
            return;
        if (!conclusive) {
            fprintf(stderr, "try %d: the period began late after the change; again\n", tries);
            continue;
        }
        printf("after a cap change: agent a read %d time(s) (sample %.3f s after its PUT), "
               "agent b %d\n",
               ar, as - cs, br);
        CHECK(br == 1,
              "(2) agent b (its caps unmoved, reading older than the change) read once: "
              "%d reads",
              br);
        CHECK(ar == 1, "(3) agent a read once, when its next sample was due: %d reads", ar);
        CHECK(as >= cs + 0.25,
              "(3) agent a's one reading is after the change and its settling: "
              "sampled %.3f s after the PUT",
              as - cs);
        return;
    }
    /* a host this loaded cannot tell (3) apart; the other cases still judge the lockstep
       (a failure here would be the host's, not the controller's) */
    printf("after a cap change: 5 tries, none conclusive (the host too loaded): not judged\n");
}

/* (2), the job's part: agent c's GPU runs job ja (with a's) at its only cap, so capping ja
 * sends c nothing; its samples, frozen before the change, are older than ja's last cap move:
 * the period after the change reads c again (a job over several nodes slows as one), and
 * still b only once. */
static void test_job_moved(void)
{
    rig r;
    if (!rig_start(&r, false, true))
        goto out;
    r.a.mode = r.b.mode = r.c.mode = SAMPLE_FROZEN;
    r.a.frozen_s = r.b.frozen_s = r.c.frozen_s = wall() - 0.5;
    if (!warm_then_cap(&r, 900))
        goto out;
    CHECK(r.c.puts == 0, "agent c's GPU has a single cap: no PUT (%d)", r.c.puts);
    pfi_ctl_report rep;
    if (!step(&r, true, 900, &rep))
        goto out;
    printf("after capping a job over two agents: agent c read %d time(s), agent b %d\n", r.c.gets,
           r.b.gets);
    CHECK(r.c.gets >= 2, "(2) agent c (its job's caps moved) read again: %d reads", r.c.gets);
    CHECK(r.b.gets == 1, "(2) agent b (nothing of it moved) read once: %d reads", r.b.gets);
out:
    rig_stop(&r);
}

/* test_ctl_lockstep [flat|tree|after|job]: one of them (none: all) */
int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : "";
    if (!*only || strcmp(only, "flat") == 0)
        test_budget_change_flat();
    if (!*only || strcmp(only, "tree") == 0)
        test_budget_change_tree();
    if (!*only || strcmp(only, "after") == 0)
        test_after_cap_change();
    if (!*only || strcmp(only, "job") == 0)
        test_job_moved();
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
