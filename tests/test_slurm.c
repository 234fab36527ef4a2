/*
 * pfi on Slurm: squeue --json answers (a real Slurm 22.05.8 answer, trimmed, in
 * tests/data/slurm), the pfi options in a job's comments, the tiers and request builder of
 * src/slurm/proto.c, and pfid's registration handler (src/agent/slurm.c): the mapping, the
 * refusals and the accounting, energy checked against hand-computed sums.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "checks.h"
#include "pfi/grid.h"
#include "pfi/memory.h"
#include "pfi/slurm.h"

#include "agent.h"
#include "slurm.h"
#include "slurm/proto.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *buf = malloc(1 << 20);
    *len = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf)
        buf[*len] = '\0';
    return buf;
}

static void test_squeue_real(void **state)
{
    (void)state;
    size_t len = 0;
    char *text = slurp(PFI_TEST_DATA "/slurm/squeue-22.05.json", &len);
    assert_non_null(text);
    pfi_slurm_job *j;
    size_t n;
    pfi_diag d;
    CHECK(pfi_slurm_jobs_parse(text, len, &j, &n, &d) == PFI_OK, "parse: %s", d.message);
    CHECK(n == 1, "one job, got %zu", n);
    if (n == 1) {
        CHECK(strcmp(j[0].id, "1") == 0, "job_id 1: %s", j[0].id);
        CHECK(strcmp(j[0].state, "RUNNING") == 0, "state");
        CHECK(strcmp(j[0].nodes, "vm") == 0, "nodes");
        CHECK(strcmp(j[0].user, "root") == 0, "user");
        CHECK(j[0].gpus == 2, "gres/gpu=2 from tres_alloc_str: %u", j[0].gpus);
        CHECK(j[0].priority == 4294901759.0, "priority %.0f", j[0].priority);
        CHECK(strcmp(j[0].flex, "high") == 0, "tier from AdminComment: '%s'", j[0].flex);
        CHECK(j[0].job_class[0] == '\0' && isnan(j[0].min_tput) && isnan(j[0].pfi),
              "options not given are missing");
    }
    pfi_free(j);
    free(text);
    END_CHECKS();
}

static void test_squeue_shapes(void **state)
{
    (void)state;
    /* pending job asking gres:gpu:a100:4 on 2 nodes: 8 GPUs; 23.x shapes: state list,
     * {"set","number"} priority; a job id as a string */
    const char *t = "{\"jobs\":[{\"job_id\":\"42\",\"job_state\":[\"PENDING\"],\"node_count\":"
                    "{\"set\":true,\"number\":2},\"tres_per_node\":\"gres:gpu:a100:4\","
                    "\"priority\":{\"set\":true,\"number\":7},\"comment\":\"pfi-flex=low "
                    "pfi-class=moe-pt,pfi-min-throughput=0.8\"},"
                    "{\"job_id\":43,\"priority\":{\"set\":false,\"number\":0},"
                    "\"admin_comment\":\"pfi:{\\\"flex\\\":\\\"a\\\\\\\"b\\\",\\\"pfi\\\":-2}\","
                    "\"comment\":\"pfi-flex=rigid\"}]}";
    pfi_slurm_job *j;
    size_t n;
    pfi_diag d;
    CHECK(pfi_slurm_jobs_parse(t, strlen(t), &j, &n, &d) == PFI_OK, "parse: %s", d.message);
    CHECK(n == 2, "two jobs");
    if (n == 2) {
        CHECK(strcmp(j[0].id, "42") == 0 && strcmp(j[0].state, "PENDING") == 0, "id, state");
        CHECK(j[0].gpus == 8, "4 per node x 2 nodes: %u", j[0].gpus);
        CHECK(j[0].priority == 7, "priority number");
        CHECK(strcmp(j[0].flex, "low") == 0 && strcmp(j[0].job_class, "moe-pt") == 0 &&
                  fabs(j[0].min_tput - 0.8) < 1e-12,
              "options from the Comment words");
        CHECK(isnan(j[1].priority), "priority not set: missing");
        /* AdminComment's flex has a quote and pfi is negative: both refused, and the
         * Comment is then read */
        CHECK(strcmp(j[1].flex, "rigid") == 0, "bad AdminComment falls back: '%s'", j[1].flex);
        CHECK(isnan(j[1].pfi), "pfi -2 refused");
    }
    pfi_free(j);
    const char *bad[] = {"",
                         "[]",
                         "{\"jobs\":{}}",
                         "{\"jobs\":[1]}",
                         "{\"jobs\":[{}]}",
                         "{\"jobs\":[{\"job_id\":\"12a\"}]}",
                         "{\"jobs\":[{\"job_id\":-3}]}"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        pfi_diag_clear(&d);
        pfi_error e = pfi_slurm_jobs_parse(bad[k], strlen(bad[k]), &j, &n, &d);
        CHECK(e == PFI_ERR_PARSE && j == NULL && d.message[0] != '\0', "bad[%zu] refused: %d %s", k,
              e, d.message);
    }
    /* start_time: Unix seconds, read exactly (2024-02-29T00:00:00Z is 1709164800, the 22.05
     * number and the 23.x {"set","number"} shapes), unset missing, outside 1970..9999 refused */
    const char *st = "{\"jobs\":[{\"job_id\":1,\"start_time\":1709164800},{\"job_id\":2,"
                     "\"start_time\":{\"set\":true,\"number\":1709164800.5}},{\"job_id\":3,"
                     "\"start_time\":{\"set\":false,\"number\":0}}]}";
    CHECK(pfi_slurm_jobs_parse(st, strlen(st), &j, &n, &d) == PFI_OK, "start_time: %s", d.message);
    CHECK(n == 3, "three jobs: %zu", n);
    if (n == 3)
        CHECK(j[0].start_time_s == 1709164800.0 && j[1].start_time_s == 1709164800.5 &&
                  isnan(j[2].start_time_s),
              "start times %.17g %.17g %.17g", j[0].start_time_s, j[1].start_time_s,
              j[2].start_time_s);
    pfi_free(j);
    const char *bad_t[] = {"{\"jobs\":[{\"job_id\":1,\"start_time\":-5}]}",
                           "{\"jobs\":[{\"job_id\":1,\"start_time\":1e300}]}"};
    for (size_t k = 0; k < 2; k++) {
        pfi_error e = pfi_slurm_jobs_parse(bad_t[k], strlen(bad_t[k]), &j, &n, &d);
        CHECK(e == PFI_ERR_PARSE && j == NULL && strstr(d.message, "jobs[0]: start_time") != NULL &&
                  strstr(d.message, "is not a valid time") != NULL,
              "bad start_time %zu refused: %d %s", k, e, d.message);
    }
    END_CHECKS();
}

static void test_proto(void **state)
{
    (void)state;
    const pfi_slurm_tier *p = pfi_slurm_tier_find("pausable"), *m = pfi_slurm_tier_find("medium");
    CHECK(p && p->may_suspend && p->allowance == 1.0, "pausable");
    CHECK(m && !m->may_suspend && m->allowance == 0.25, "medium");
    CHECK(pfi_slurm_tier_find("High") == NULL && pfi_slurm_tier_find("") == NULL, "exact names");
    /* the grid event's tiers (pfi/grid.h): Flex N is low, medium, high, with Flex N's
     * allowance (pfi_grid_tier_allowance: 0.10, 0.25, 0.50) */
    static const struct {
        const char *name;
        const char *is; /* NULL: unknown */
    } alias[] = {{"1", "low"},        {"2", "medium"},    {"3", "high"}, {"flex1", "low"},
                 {"Flex2", "medium"}, {"flex-3", "high"}, {"4", NULL},   {"0", NULL},
                 {"flex", NULL},      {"flex12", NULL},   {"22", NULL},  {"Flex 2", NULL},
                 {"fle2", NULL},      {"f", NULL}};
    for (size_t k = 0; k < sizeof alias / sizeof alias[0]; k++) {
        const pfi_slurm_tier *t = pfi_slurm_tier_find(alias[k].name);
        CHECK(alias[k].is == NULL ? t == NULL : t != NULL && strcmp(t->name, alias[k].is) == 0,
              "tier '%s': %s", alias[k].name, t ? t->name : "unknown");
    }
    for (int f = 1; f <= 3; f++) {
        char nm[4] = {(char)('0' + f), '\0'};
        const pfi_slurm_tier *t = pfi_slurm_tier_find(nm);
        CHECK(t && pfi_slurm_tier_flex(t) == f && t->allowance == pfi_grid_tier_allowance(f),
              "Flex %d: the grid tier's number and allowance", f);
    }
    CHECK(pfi_slurm_tier_flex(p) == 0 && pfi_slurm_tier_flex(pfi_slurm_tier_find("rigid")) == 0 &&
              pfi_slurm_tier_flex(NULL) == 0,
          "rigid and pausable have no Flex number");
    char buf[512], err[256];
    CHECK(pfi_slurm_start_request(buf, sizeof buf, "77", "alice", "0-2,5", "dense", "low", "0.5",
                                  "1.25", err, sizeof err),
          "built: %s", err);
    CHECK(strcmp(buf, "{\"op\":\"start\",\"job\":\"77\",\"user\":\"alice\",\"gpus\":[\"0\",\"1\","
                      "\"2\",\"5\"],\"class\":\"dense\",\"flex\":\"low\",\"min_throughput\":0.5,"
                      "\"pfi\":1.25}") == 0,
          "request: %s", buf);
    CHECK(!pfi_slurm_start_request(buf, 40, "77", NULL, "0-63", NULL, NULL, NULL, NULL, err,
                                   sizeof err) &&
              strstr(err, "larger than") != NULL,
          "a request that does not fit is refused: %s", err);
    CHECK(!pfi_slurm_start_request(buf, sizeof buf, "7", NULL, "0-64", NULL, NULL, NULL, NULL, err,
                                   sizeof err),
          "65 GPUs refused");
    size_t len = 0;
    CHECK(pfi_slurm_json_str(buf, sizeof buf, &len, "a\"b\\\n") &&
              strcmp(buf, "\"a\\\"b\\\\\\u000a\"") == 0,
          "escaping: %s", buf);
    CHECK(pfi_slurm_options_comment(buf, sizeof buf, "x", NULL, "0.3", NULL) &&
              strcmp(buf, "pfi:{\"class\":\"x\",\"min_throughput\":0.29999999999999999}") == 0,
          "comment: %s", buf);
    CHECK(!pfi_slurm_options_comment(buf, sizeof buf, NULL, NULL, NULL, NULL), "nothing given");
    END_CHECKS();
}

static pfid_agent *agent(void)
{
    pfid_agent *a = calloc(1, sizeof *a);
    pfid_config_defaults(&a->cfg);
    a->n_gpus = 4;
    a->gpus = calloc(4, sizeof *a->gpus);
    for (unsigned k = 0; k < 4; k++) {
        snprintf(a->gpus[k].info.uuid, sizeof a->gpus[k].info.uuid, "GPU-%u", k);
        a->gpus[k].ever = true;
        a->gpus[k].last.valid = PFI_SAMPLE_ENERGY;
        a->gpus[k].last.energy_j = 1000.0 * k;
    }
    pthread_mutex_init(&a->snap_lock, NULL);
    pthread_mutex_init(&a->gpu_lock, NULL);
    pthread_mutex_init(&a->caps_lock, NULL);
    return a;
}

static void test_agent_registration(void **state)
{
    (void)state;
    pfid_agent *a = agent();
    const char *start = "{\"op\":\"start\",\"job\":\"5\",\"user\":\"bob\",\"gpus\":[\"1\","
                        "\"GPU-2\"],\"flex\":\"high\",\"class\":\"dense\"}";
    char *r = pfid_slurm_handle(a, start, strlen(start), 0);
    CHECK(r && strstr(r, "\"ok\":true") && strstr(r, "[\"GPU-1\",\"GPU-2\"]"), "start: %s",
          r ? r : "(null)");
    free(r);
    r = pfid_slurm_handle(a, start, strlen(start), 1000);
    CHECK(r && strstr(r, "only root may register jobs (peer uid 1000)"), "uid 1000: %s",
          r ? r : "(null)");
    free(r);
    pfid_slurm_round(a);
    CHECK(strcmp(a->gpus[1].job, "5") == 0 && strcmp(a->gpus[2].job, "5") == 0 &&
              a->gpus[0].job[0] == '\0' && strcmp(a->gpus[2].cls, "dense") == 0,
          "GPUs 1, 2 mapped to job 5 with no process on them");
    CHECK(pfid_slurm_claimed(a, 1) && !pfid_slurm_claimed(a, 3), "claimed");
    /* energy: GPU 1 1000 -> 1500 J, GPU 2 2000 -> 2600 J: 1100 J (by hand) */
    a->gpus[1].last.energy_j = 1500;
    a->gpus[2].last.energy_j = 2600;
    const char *end = "{\"op\":\"end\",\"job\":\"5\"}";
    r = pfid_slurm_handle(a, end, strlen(end), 0);
    CHECK(r && strstr(r, "\"energy_j\":1100") && strstr(r, "\"gpus\":2") &&
              strstr(r, "\"capped_s\":0") && strstr(r, "\"caps_w\":[]"),
          "end: %s", r ? r : "(null)");
    CHECK(r && strstr(r, "tokens_lost") == NULL, "no throughput: tokens lost missing, not 0");
    free(r);
    CHECK(a->gpus[1].job[0] == '\0' && !pfid_slurm_claimed(a, 1), "mapping dropped at the end");
    const char *rep = "{\"op\":\"report\",\"job\":\"5\"}";
    r = pfid_slurm_handle(a, rep, strlen(rep), 0);
    CHECK(r && strstr(r, "\"running\":false") && strstr(r, "\"energy_j\":1100"),
          "report of the ended job: %s", r ? r : "(null)");
    free(r);
    /* an unreadable counter at the end: energy missing */
    r = pfid_slurm_handle(a, start, strlen(start), 0);
    free(r);
    a->gpus[2].last.valid = 0;
    r = pfid_slurm_handle(a, end, strlen(end), 0);
    CHECK(r && strstr(r, "energy_j") == NULL, "energy missing when a counter is: %s",
          r ? r : "(null)");
    free(r);
    pfid_slurm_stop(a);
    free(a->gpus);
    free(a);
    END_CHECKS();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_squeue_real),
        cmocka_unit_test(test_squeue_shapes),
        cmocka_unit_test(test_proto),
        cmocka_unit_test(test_agent_registration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
