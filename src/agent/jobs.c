/*
 * Which job owns which GPU, and how fast each job goes.
 *
 * Mapping: the static file (reloaded on SIGHUP), Slurm (each GPU's compute processes →
 * SLURM_JOB_ID in /proc/PID/environ, every jobs_refresh), or the emulated backend's jobs.
 * Throughput: the tail of each configured training log (read with the trainlog readers when
 * it grew), the emulated jobs' reports (each to the job that owns its GPUs), or
 * POST /v1/jobs/{id}/throughput (api.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "pfi/trainlog.h"
#include "slurm.h"

#define TAIL_BYTES (64 * 1024)
#define ENVIRON_MAX (256 * 1024)
#define LOG_POLL_S 2.0

int pfid_jobs_load_mapping(pfid_agent *a)
{
    pfid_mapping m;
    pfi_diag d;
    pfi_diag_clear(&d);
    pfi_error e = pfid_mapping_load(a->cfg.jobs_file, &m, &d);
    if (e != PFI_OK) {
        char buf[1200];
        LOG_ERROR("jobs file: %s", pfi_diag_format(&d, buf, sizeof buf));
        return -1;
    }
    pthread_mutex_lock(&a->snap_lock);
    pfid_mapping old = a->mapping;
    a->mapping = m;
    pthread_mutex_unlock(&a->snap_lock);
    pfid_mapping_clear(&old);
    LOG_INFO("jobs file %s: %zu GPU(s) mapped", a->cfg.jobs_file, m.n);
    return 0;
}

/* The Slurm job of a process, from /proc/PID/environ; false when none or unreadable. */
static bool slurm_job_of(unsigned pid, char *job)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/environ", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char *buf = malloc(ENVIRON_MAX);
    if (buf == NULL) {
        close(fd);
        return false;
    }
    size_t len = 0;
    while (len < ENVIRON_MAX) {
        ssize_t r = read(fd, buf + len, ENVIRON_MAX - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    bool found = pfid_environ_job(buf, len, job);
    free(buf);
    return found;
}

static void refresh_slurm(pfid_agent *a)
{
    for (unsigned i = 0; i < a->n_gpus; i++) {
        unsigned pids[64];
        size_t n = 0;
        pfi_diag d;
        pthread_mutex_lock(&a->gpu_lock);
        pfi_error e = pfi_gpu_processes(a->gpu, i, pids, 64, &n, &d);
        pthread_mutex_unlock(&a->gpu_lock);
        char job[PFID_ID_MAX] = "";
        if (e != PFI_OK && e != PFI_ERR_GPU_LOST)
            LOG_DEBUG("GPU %u: cannot list processes: %s", i, d.message);
        if (e == PFI_ERR_GPU_LOST || pfid_slurm_claimed(a, i))
            continue; /* keep the last known owner while the GPU is away; a registered job */
        for (size_t k = 0; k < n && job[0] == '\0'; k++)
            if (!slurm_job_of(pids[k], job))
                job[0] = '\0';
        pthread_mutex_lock(&a->snap_lock);
        if (strcmp(a->gpus[i].job, job) != 0)
            LOG_INFO("GPU %u: job %s", i, job[0] ? job : "(none)");
        snprintf(a->gpus[i].job, sizeof a->gpus[i].job, "%s", job);
        a->gpus[i].cls[0] = '\0';
        pthread_mutex_unlock(&a->snap_lock);
    }
}

void pfid_jobs_refresh(pfid_agent *a)
{
    double now = pfid_mono_s();
    switch (a->cfg.jobs) {
    case PFID_JOBS_STATIC:
        pthread_mutex_lock(&a->snap_lock);
        for (unsigned i = 0; i < a->n_gpus; i++) {
            pfid_gpu_state *g = &a->gpus[i];
            const pfid_mapping_entry *m = pfid_mapping_find(&a->mapping, g->info.uuid, i);
            snprintf(g->job, sizeof g->job, "%s", m ? m->job : "");
            snprintf(g->cls, sizeof g->cls, "%s", m ? m->cls : "");
        }
        pthread_mutex_unlock(&a->snap_lock);
        break;
    case PFID_JOBS_EMULATED: {
        /* one emulated job: emulated_job; several (';' in emulate): emulated_job-K */
        unsigned nj = 1, first, cnt;
        pthread_mutex_lock(&a->gpu_lock);
        if (pfi_gpu_job_count(a->gpu, &nj) != PFI_OK || nj == 0)
            nj = 1;
        pthread_mutex_lock(&a->snap_lock);
        for (unsigned k = 0; k < nj; k++) {
            if (pfi_gpu_job_gpus(a->gpu, k, &first, &cnt) != PFI_OK) {
                first = 0;
                cnt = a->n_gpus;
            }
            for (unsigned i = first; i < first + cnt && i < a->n_gpus; i++) {
                if (nj == 1)
                    snprintf(a->gpus[i].job, sizeof a->gpus[i].job, "%s", a->cfg.emulated_job);
                else
                    snprintf(a->gpus[i].job, sizeof a->gpus[i].job, "%.100s-%u",
                             a->cfg.emulated_job, k);
            }
        }
        pthread_mutex_unlock(&a->snap_lock);
        pthread_mutex_unlock(&a->gpu_lock);
        break;
    }
    case PFID_JOBS_SLURM:
        if (now >= a->next_jobs_refresh_mono) {
            refresh_slurm(a);
            a->next_jobs_refresh_mono = now + a->cfg.jobs_refresh_s;
        }
        break;
    default:
        break;
    }
}

/* The rate of the last usable interval in the tail of a training log (the ingest rule:
 * pfi_trainlog_last_rate), times the log's scale; NAN when none. */
double pfid_jobs_tail_rate(const pfid_tlog *t, long long size)
{
    FILE *f = fopen(t->path, "rb");
    if (f == NULL)
        return NAN;
    long long off = size > TAIL_BYTES ? size - TAIL_BYTES : 0;
    char *buf = malloc(TAIL_BYTES + 1);
    double rate = NAN;
    if (buf != NULL && fseeko(f, (off_t)off, SEEK_SET) == 0) {
        size_t n = fread(buf, 1, TAIL_BYTES, f);
        size_t skip = 0;
        if (off > 0) { /* start at a line boundary */
            char *nl = memchr(buf, '\n', n);
            skip = nl ? (size_t)(nl - buf) + 1 : n;
        }
        FILE *m = n > skip ? fmemopen(buf + skip, n - skip, "r") : NULL;
        pfi_trainlog *log = NULL;
        if (m != NULL &&
            pfi_trainlog_read_stream(m, t->path, t->format, NULL, &log, NULL) == PFI_OK)
            rate = pfi_trainlog_last_rate(log) * t->scale;
        pfi_trainlog_destroy(log);
        if (m != NULL)
            fclose(m);
    }
    free(buf);
    fclose(f);
    return rate;
}

static void set_tput(pfid_agent *a, const char *job, double tok_s, double mono)
{
    pthread_mutex_lock(&a->snap_lock);
    pfid_job_tput *t = pfid_tput_slot(a, job, true);
    if (t != NULL) {
        t->tok_s = tok_s;
        t->mono_s = mono;
    }
    pthread_mutex_unlock(&a->snap_lock);
}

void pfid_jobs_poll_throughput(pfid_agent *a)
{
    double now = pfid_mono_s();
    if (pfi_gpu_caps(a->gpu) & PFI_GPU_CAP_JOBS) { /* reads no backend state: no lock */
        /* each emulated job's last report goes to the job owning its first GPU (the mapping
         * in force: jobs = emulated, or a static file naming the jobs) */
        unsigned nj = 0;
        pthread_mutex_lock(&a->gpu_lock);
        pfi_gpu_job_count(a->gpu, &nj);
        pthread_mutex_unlock(&a->gpu_lock);
        for (unsigned k = 0; k < nj; k++) {
            double t[64], v[64];
            size_t n = 0;
            unsigned first = 0, cnt = 0;
            pthread_mutex_lock(&a->gpu_lock);
            pfi_gpu_job_gpus(a->gpu, k, &first, &cnt);
            pfi_gpu_job_poll_at(a->gpu, k, t, v, 64, &n);
            pthread_mutex_unlock(&a->gpu_lock);
            if (n == 0 || first >= a->n_gpus)
                continue;
            char job[PFID_ID_MAX];
            pthread_mutex_lock(&a->snap_lock);
            snprintf(job, sizeof job, "%s", a->gpus[first].job);
            pthread_mutex_unlock(&a->snap_lock);
            if (job[0] != '\0')
                set_tput(a, job, v[n - 1], now);
        }
    }
    if (a->cfg.n_tlogs == 0 || now < a->next_log_poll_mono)
        return;
    a->next_log_poll_mono = now + LOG_POLL_S;
    for (size_t k = 0; k < a->cfg.n_tlogs; k++) {
        const pfid_tlog *t = &a->cfg.tlogs[k];
        struct stat st;
        if (stat(t->path, &st) != 0 || (long long)st.st_size == a->log_size[k])
            continue;
        a->log_size[k] = (long long)st.st_size;
        double r = pfid_jobs_tail_rate(t, (long long)st.st_size);
        if (isfinite(r)) {
            set_tput(a, t->job, r, now);
            LOG_DEBUG("job %s: %.1f tokens/s from %s", t->job, r, t->path);
        }
    }
}
