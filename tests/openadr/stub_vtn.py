#!/usr/bin/env python3
"""A stub OpenADR 3 VTN on loopback for the pfi openadr tests (stdlib only).

Serves POST /auth/token (client credentials, form-encoded), GET /programs, GET /events
(?programID=&skip=&limit=) and POST /reports, checking the Bearer token. Driven by files in
its directory DIR: events.json (the events served, re-read on every request), and writes
port (the port it listens on), reports.jsonl (each report body posted, one a line) and
requests.log (method, path, status). Optional integer files: expires_in (the tokens'
expires_in, 3600) and rotate_after (after that many accepted requests the token is revoked:
the next request with it gets 401). Usage: stub_vtn.py DIR CLIENT_ID SECRET
"""
import json
import os
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

DIR, CLIENT_ID, SECRET = sys.argv[1], sys.argv[2], sys.argv[3]
STATE = {"token": 0, "authed": 0}  # tokens issued; requests accepted with the current one


def token():
    return "tok-%s-%d" % (SECRET[::-1], STATE["token"])


def setting(name, default):
    """An integer from DIR/NAME (absent: default): expires_in, rotate_after."""
    try:
        with open(os.path.join(DIR, name)) as f:
            return int(f.read())
    except FileNotFoundError:
        return default


def log(line):
    with open(os.path.join(DIR, "requests.log"), "a") as f:
        f.write(line + "\n")


class H(BaseHTTPRequestHandler):
    def reply(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        log("%s %s %d" % (self.command, self.path, status))

    def authed(self):
        if self.headers.get("Authorization") != "Bearer " + token():
            self.reply(401, {"title": "Unauthorized", "status": 401})
            return False
        STATE["authed"] += 1
        if STATE["authed"] == setting("rotate_after", 0):  # revoke: the next request gets 401
            STATE["token"] += 1
        return True

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n).decode()

    def do_POST(self):
        path = urllib.parse.urlparse(self.path).path
        if path == "/auth/token":
            ctype = self.headers.get("Content-Type", "")
            form = urllib.parse.parse_qs(self.body())
            ok = (ctype.startswith("application/x-www-form-urlencoded")
                  and form.get("grant_type") == ["client_credentials"]
                  and form.get("client_id") == [CLIENT_ID]
                  and form.get("client_secret") == [SECRET])
            if not ok:
                return self.reply(401, {"error": "invalid_client"})
            STATE["token"] += 1
            STATE["authed"] = 0
            return self.reply(200, {"access_token": token(), "token_type": "Bearer",
                                    "expires_in": setting("expires_in", 3600)})
        if path == "/reports":
            if not self.authed():
                return
            r = json.loads(self.body())
            with open(os.path.join(DIR, "reports.jsonl"), "a") as f:
                f.write(json.dumps(r) + "\n")
            r["id"] = "report-1"
            return self.reply(201, r)
        self.reply(404, {"status": 404})

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        if not self.authed():
            return
        if u.path == "/programs":
            return self.reply(200, [{"id": "prog-7", "programName": "dc-flex"},
                                    {"id": "prog-8", "programName": "other"},
                                    {"id": "prog-9", "programName": "big"}])
        if u.path == "/events":
            with open(os.path.join(DIR, "events.json")) as f:
                evs = json.load(f)
            evs = [e for e in evs if e.get("programID") == q.get("programID", [""])[0]]
            skip = int(q.get("skip", ["0"])[0])
            limit = int(q.get("limit", ["50"])[0])
            return self.reply(200, evs[skip:skip + limit])
        self.reply(404, {"status": 404})

    def log_message(self, *a):
        pass


srv = HTTPServer(("127.0.0.1", 0), H)
with open(os.path.join(DIR, "port.tmp"), "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(os.path.join(DIR, "port.tmp"), os.path.join(DIR, "port"))
srv.serve_forever()
