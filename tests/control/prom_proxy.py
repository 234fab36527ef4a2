#!/usr/bin/python3
"""A fault-injecting proxy in front of Prometheus for the controller's tests (issue 16).
usage: prom_proxy.py UPSTREAM_URL PORT_FILE MODE_FILE
Every GET is forwarded to UPSTREAM. MODE_FILE holds the mode, read at every request:
  pass    forward (and remember each answer by its URL)
  freeze  answer every query with the last answer remembered for its URL: frozen samples,
          their timestamps as old as the freeze
  glitch  forward, but multiply the first energy counter of the next 4 energy answers by
          1000 (a counter glitch: impossible rates), then go back to pass
The chosen port is written to PORT_FILE."""
import http.server
import json
import sys
import urllib.request

UP, PORT_FILE, MODE_FILE = sys.argv[1], sys.argv[2], sys.argv[3]
cache = {}
glitches = [0]


def mode():
    try:
        with open(MODE_FILE) as f:
            return f.read().strip() or "pass"
    except OSError:
        return "pass"


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        m = mode()
        if m == "freeze" and self.path in cache:
            body = cache[self.path]
        else:
            try:
                with urllib.request.urlopen(UP + self.path, timeout=5) as r:
                    body = r.read()
            except Exception as e:  # upstream down: say so as Prometheus would not
                self.send_response(502)
                self.end_headers()
                self.wfile.write(str(e).encode())
                return
            if m == "glitch" and b"energy_joules_total" in body:
                try:
                    j = json.loads(body)
                    for s in j["data"]["result"]:
                        if s["metric"].get("__name__") == "pfi_gpu_energy_joules_total":
                            s["value"][1] = repr(float(s["value"][1]) * 1000)
                            break
                    body = json.dumps(j).encode()
                    glitches[0] += 1
                    if glitches[0] >= 4:
                        glitches[0] = 0
                        with open(MODE_FILE, "w") as f:
                            f.write("pass\n")
                except (ValueError, KeyError):
                    pass
            elif m == "pass":
                cache[self.path] = body
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(PORT_FILE + ".tmp", PORT_FILE)
srv.serve_forever()
