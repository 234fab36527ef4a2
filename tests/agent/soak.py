#!/usr/bin/env python3
"""Soak test of pfid: an idle agent with 8 emulated GPUs (resident set, CPU per sample per
GPU), then 10 000 mixed requests from 8 client threads on loopback (metrics, state, healthz,
valid and duplicate PUTs, malformed and unauthenticated PUTs, oversized bodies, DELETEs,
throughput POSTs) against one agent; its resident set must stay flat, every answer must have
the expected status, and it must stop cleanly on SIGTERM (under ASan/LSan: no leak, or the
exit status says so).
Usage: soak.py PFID SANITIZED(0|1) [REQUESTS]"""
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

PFID = sys.argv[1]
SANITIZED = sys.argv[2] in ("1", "ON", "TRUE", "true")
TOTAL = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
THREADS = 8
CLK = os.sysconf("SC_CLK_TCK")


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def cpu_s(pid):
    """CPU time of every thread of pid, s (schedstat: nanoseconds, not clock ticks)."""
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total / 1e9


def round_cpu_s(port):
    """The agent's own pfi_agent_round_cpu_seconds (thread CPU clock of one round)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    for line in text.splitlines():
        if line.startswith("pfi_agent_round_cpu_seconds "):
            return float(line.split()[1])
    return float("nan")


def samples_total(port):
    """The agent's pfi_agent_samples_total (0 while it does not answer)."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("pfi_agent_samples_total "):
            return int(line.split()[1])
    return 0


def start(tmp, name, interval, extra=()):
    port_file = os.path.join(tmp, name + ".port")
    log = open(os.path.join(tmp, name + ".log"), "w")
    cmd = [PFID, "-b", "emulated", "--emulate", "gpus=8,startup=0,report=1", "-s", "jobs=emulated",
           "-l", "127.0.0.1:0", "-s", "port_file=" + port_file, "-t", os.path.join(tmp, "token"),
           "-j", os.path.join(tmp, name + ".journal"), "-i", interval, "-q"] + list(extra)
    p = subprocess.Popen(cmd, stderr=log)
    for _ in range(200):
        if os.path.exists(port_file) and open(port_file).read().strip():
            return p, int(open(port_file).read())
        if p.poll() is not None:
            break
        time.sleep(0.05)
    p.kill()
    sys.exit("pfid did not start: " + open(os.path.join(tmp, name + ".log")).read())


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        return -9


def main():
    tmp = tempfile.mkdtemp(prefix="pfid-soak.")
    token = os.urandom(24).hex()
    with open(os.path.join(tmp, "token"), "w") as f:
        f.write(token + "\n")
    os.chmod(os.path.join(tmp, "token"), 0o600)
    procs = []
    fail = []
    try:
        # --- idle agent: 8 emulated GPUs sampled every second
        idle, iport = start(tmp, "idle", "1s")
        procs.append(idle)
        # start-up over: a bounded poll until the first sampling round (8 GPUs) is done
        end = time.monotonic() + 20
        while samples_total(iport) < 8 and time.monotonic() < end:
            time.sleep(0.05)
        c0, t0 = cpu_s(idle.pid), time.monotonic()
        secs = 4.0
        time.sleep(secs)
        c1, t1 = cpu_s(idle.pid), time.monotonic()
        rss = rss_kb(idle.pid)
        core = (c1 - c0) / (t1 - t0)
        per = (c1 - c0) / ((t1 - t0) * 8)
        rnd = round_cpu_s(iport)
        print("idle agent, 8 emulated GPUs, 1 s sampling: RSS %.1f MB, CPU %.4f %% of a core "
              "(all threads: %.1f us per sample per GPU; sampling round alone: %.1f us per "
              "sample per GPU)" % (rss / 1024, 100 * core, 1e6 * per, 1e6 * rnd / 8))
        if not SANITIZED:
            if rss > 8 * 1024:
                fail.append("idle RSS %.1f MB >= 8 MB" % (rss / 1024))
            # libxml2 (and ICU, libstdc++ behind it) is for the XML telemetry reader only,
            # opened on first use (src/lib/telemetry/xml_lazy.c): never in an agent's resident set
            with open("/proc/%d/maps" % idle.pid) as f:
                heavy = sorted({ln.split()[-1].rsplit("/", 1)[-1] for ln in f
                                if any(k in ln for k in ("libxml2", "libicu", "libstdc++"))})
            if heavy:
                fail.append("idle agent maps %s (should be loaded lazily)" % ", ".join(heavy))
            if core > 0.002:
                fail.append("idle CPU %.3f %% >= 0.2 %% of a core" % (100 * core))
        rc = stop(idle)
        procs.remove(idle)
        if rc != 0:
            fail.append("idle agent exit %d" % rc)

        # --- soak
        agent, port = start(tmp, "soak", "200ms", ["-s", "lease_max=1h", "-s", "max_connections=64"])
        procs.append(agent)
        uuids = ["EMU-00000001-%04d" % i for i in range(8)]
        counter = [0]
        lock = threading.Lock()
        rss_marks = {}
        statuses = {}
        errors = []

        def request(conn, i, rnd):
            kind = rnd.randrange(12)
            auth = {"Authorization": "Bearer " + token}
            if kind <= 2:
                return "GET", "/metrics", None, {}, 200
            if kind == 3:
                return "GET", "/v1/state", None, {}, 200
            if kind == 4:
                return "GET", "/healthz", None, {}, 200
            if kind == 5:
                caps = [{"uuid": u, "cap_w": rnd.randrange(200, 701)} for u in rnd.sample(uuids, 3)]
                body = {"request_id": "r-%d" % i, "lease_s": 600, "caps": caps}
                return "PUT", "/v1/caps", json.dumps(body), auth, 200
            if kind == 6:
                body = {"request_id": "dup", "lease_s": 600, "caps": [{"job": "emulated-job", "cap_w": 500}]}
                return "PUT", "/v1/caps", json.dumps(body), auth, 200
            if kind == 7:
                return "PUT", "/v1/caps", '{"request_id": "x", "lease_s": 1, "caps": [', auth, 400
            if kind == 8:
                return "PUT", "/v1/caps", '{"request_id": "x", "lease_s": 1, "caps": []}', {}, 401
            if kind == 9:
                return "PUT", "/v1/caps", " " * 70000, auth, 413
            if kind == 10:
                return "DELETE", "/v1/caps", None, auth, 200
            return "POST", "/v1/jobs/emulated-job/throughput", '{"throughput_tok_s": %d}' % i, auth, 200

        def worker(seed):
            rnd = random.Random(seed)
            conn = None
            while True:
                with lock:
                    i = counter[0]
                    if i >= TOTAL:
                        break
                    counter[0] += 1
                    if i in (TOTAL // 5, TOTAL - 1):
                        rss_marks[i] = rss_kb(agent.pid)
                method, path, body, headers, want = request(conn, i, rnd)
                try:
                    if conn is None or rnd.random() < 0.3:  # a mix of new and kept-alive connections
                        if conn is not None:
                            conn.close()
                        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                    conn.request(method, path, body=body, headers=headers)
                    resp = conn.getresponse()
                    resp.read()
                    if resp.status != want:
                        errors.append("%s %s: %d, want %d" % (method, path, resp.status, want))
                    with lock:
                        statuses[resp.status] = statuses.get(resp.status, 0) + 1
                    if resp.getheader("Connection", "").lower() == "close" or want == 413:
                        conn.close()
                        conn = None
                except (OSError, http.client.HTTPException) as e:
                    if want == 413:  # the server may close before the whole body is sent
                        with lock:
                            statuses[413] = statuses.get(413, 0) + 1
                    else:
                        errors.append("%s %s: %s" % (method, path, e))
                    if conn is not None:
                        conn.close()
                    conn = None
            if conn is not None:
                conn.close()

        t0 = time.monotonic()
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        dt = time.monotonic() - t0
        marks = [rss_marks[k] for k in sorted(rss_marks)]
        print("soak: %d requests from %d threads in %.1f s (%.0f/s); statuses %s; RSS %s kB"
              % (TOTAL, THREADS, dt, TOTAL / dt, dict(sorted(statuses.items())),
                 " -> ".join(str(m) for m in marks)))
        if errors:
            fail.append("%d unexpected answers, first: %s" % (len(errors), errors[0]))
        if not SANITIZED and len(marks) == 2 and marks[1] - marks[0] > 2048:
            fail.append("RSS grew %d kB during the soak" % (marks[1] - marks[0]))
        rc = stop(agent)
        procs.remove(agent)
        if rc != 0:
            fail.append("soak agent exit %d (LeakSanitizer reports leaks with a non-zero exit)" % rc)
            sys.stderr.write(open(os.path.join(tmp, "soak.log")).read()[-4000:])
        if os.path.exists(os.path.join(tmp, "soak.journal")):
            fail.append("journal left after SIGTERM")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        subprocess.call(["rm", "-rf", tmp])
    for f in fail:
        print("FAIL " + f)
    if not fail:
        print("ok   soak")
    sys.exit(1 if fail else 0)


if __name__ == "__main__":
    main()
