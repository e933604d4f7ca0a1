#!/usr/bin/env python3
"""Soak: mixed load against `keel serve` on loopback for a bounded time; stops by itself.

Starts `keel serve -m MODEL --parallel P --memory-limit L` and runs --clients threads that loop over request
kinds at random until --seconds have passed, plus --idle keep-alive clients that only poll /health:
  chat        POST /v1/chat/completions, JSON          -> 200 with one choice and usage
  chat_stream the same, stream                        -> 200, SSE ending in "data: [DONE]"
  tools       chat with two tools, tool_choice auto   -> 200 (tool_calls or text)
  completion  POST /v1/completions                     -> 200
  messages    POST /v1/messages, stream (Anthropic)    -> 200, SSE ending in event message_stop
  too_long    a prompt longer than the context         -> 400 context_length_exceeded
  malformed   a body that is not JSON                  -> 400
  disconnect  a stream request dropped after its first bytes (the server must cancel it and go on)
A valid request may also get 503 with Retry-After (memory or queue full): counted, not an error. Anything else
is a wrong status. VmRSS is sampled every second; after the warm-up (the first third) it must stay flat: the
last third's maximum <= the middle third's maximum * 1.10 + 16 MiB. Exit 0 when the process lived, no status
was wrong, every stream ended properly and RSS stayed flat; 1 otherwise, with the reasons.
Usage: tools/soak.py KEEL MODEL --seconds 1800 [--parallel 4 --limit-mib 512 --clients 8 --idle 16]
                     [--device cuda:0]
"""
import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Soak:
    def __init__(self, a, port, proc):
        self.a, self.port, self.proc = a, port, proc
        self.lock = threading.Lock()
        self.counts = {}
        self.errors = []
        self.stop = threading.Event()

    def record(self, kind, outcome, error=None):
        with self.lock:
            self.counts[(kind, outcome)] = self.counts.get((kind, outcome), 0) + 1
            if error and len(self.errors) < 50:
                self.errors.append(f"{kind}: {error}")

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)

    def post(self, path, body, headers=None):
        c = self.conn()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request("POST", path, body=body if isinstance(body, bytes) else json.dumps(body).encode(), headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, r.getheader("Retry-After"), data

    def check(self, kind, status, retry_after, data, want_status, ok_body):
        if status == 503 and retry_after and want_status == 200:
            self.record(kind, "503")
            return
        if status != want_status:
            self.record(kind, "wrong", f"status {status} (want {want_status}): {data[:200]!r}")
            return
        if not ok_body(data):
            self.record(kind, "wrong", f"bad body: {data[-300:]!r}")
            return
        self.record(kind, str(status))

    def words(self, n):
        r = random.Random()
        return " ".join(r.choice(["the", "river", "bank", "of", "a", "town", "said", "he", "was"]) for _ in range(n))

    def one(self, kind):
        user = [{"role": "user", "content": self.words(random.randint(3, 60))}]
        if kind == "chat":
            s, ra, d = self.post("/v1/chat/completions", {"messages": user, "max_tokens": random.randint(1, 24)})
            self.check(kind, s, ra, d, 200, lambda b: len(json.loads(b)["choices"]) == 1 and "usage" in json.loads(b))
        elif kind == "chat_stream":
            s, ra, d = self.post("/v1/chat/completions",
                                 {"messages": user, "max_tokens": random.randint(1, 24), "stream": True})
            self.check(kind, s, ra, d, 200, lambda b: b.rstrip().endswith(b"data: [DONE]"))
        elif kind == "tools":
            tools = [{"type": "function", "function": {"name": n, "description": "look up " + n, "parameters": {
                "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}
                for n in ("weather", "search")]
            s, ra, d = self.post("/v1/chat/completions", {"messages": user, "tools": tools, "max_tokens": 16})
            self.check(kind, s, ra, d, 200, lambda b: json.loads(b)["choices"][0]["finish_reason"] in
                       ("stop", "length", "tool_calls"))
        elif kind == "completion":
            s, ra, d = self.post("/v1/completions", {"prompt": self.words(20), "max_tokens": 8})
            self.check(kind, s, ra, d, 200, lambda b: "text" in json.loads(b)["choices"][0])
        elif kind == "messages":
            s, ra, d = self.post("/v1/messages", {"model": "x", "max_tokens": 12, "stream": True, "messages": user})
            self.check(kind, s, ra, d, 200, lambda b: b"event: message_stop" in b)
        elif kind == "too_long":
            s, ra, d = self.post("/v1/completions", {"prompt": self.words(self.a.ctx + 200), "max_tokens": 4})
            self.check(kind, s, ra, d, 400, lambda b: json.loads(b)["error"]["code"] == "context_length_exceeded")
        elif kind == "malformed":
            s, ra, d = self.post("/v1/chat/completions", b'{"messages": [')
            self.check(kind, s, ra, d, 400, lambda b: "error" in json.loads(b))
        elif kind == "disconnect":
            body = json.dumps({"messages": user, "max_tokens": 64, "stream": True}).encode()
            with socket.create_connection(("127.0.0.1", self.port), timeout=60) as sk:
                sk.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           b"Content-Length: %d\r\n\r\n" % len(body) + body)
                sk.recv(64)
            self.record(kind, "dropped")

    def client(self, seed):
        r = random.Random(seed)
        kinds = ["chat", "chat_stream", "tools", "completion", "messages", "too_long", "malformed", "disconnect"]
        weights = [4, 4, 2, 2, 3, 1, 1, 1]
        while not self.stop.is_set():
            kind = r.choices(kinds, weights)[0]
            try:
                self.one(kind)
            except Exception as e:  # a dropped connection or a timeout is a failure of the server
                self.record(kind, "wrong", f"{type(e).__name__}: {e}")

    def idle_client(self):
        c = None
        while not self.stop.is_set():
            try:
                if c is None:
                    c = self.conn()
                c.request("GET", "/health")
                r = c.getresponse()
                r.read()
                if r.status != 200:
                    self.record("idle_health", "wrong", f"status {r.status}")
            except Exception:
                c = None  # the server may close an idle keep-alive connection: reconnect
            self.stop.wait(4)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("keel")
    ap.add_argument("model")
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--limit-mib", type=int, default=512)
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--idle", type=int, default=16)
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:N] (--limit-mib is then device memory)")
    a = ap.parse_args()
    port = free_port()
    log_path = f"/tmp/keel_soak_{os.getpid()}.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([a.keel, "serve", "-m", a.model, "--port", str(port), "--parallel", str(a.parallel),
                                 "--ctx-size", str(a.ctx), "--memory-limit", f"{a.limit_mib}MiB",
                                 "--device", a.device],
                                stdout=log, stderr=subprocess.STDOUT)
    t0 = time.time()
    while True:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                break
        except OSError:
            pass
        if proc.poll() is not None or time.time() - t0 > 60:
            print(f"soak: keel serve did not start (log {log_path})")
            return 1
        time.sleep(0.1)
    s = Soak(a, port, proc)
    threads = [threading.Thread(target=s.client, args=(i,)) for i in range(a.clients)]
    threads += [threading.Thread(target=s.idle_client) for _ in range(a.idle)]
    for t in threads:
        t.start()
    rss = []
    start = time.time()
    while time.time() - start < a.seconds and proc.poll() is None:
        rss.append(rss_kib(proc.pid))
        time.sleep(1)
    s.stop.set()
    for t in threads:
        t.join()
    alive = proc.poll() is None
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
    ok = alive
    total = sum(s.counts.values())
    print(f"soak: {a.seconds} s, {total} requests, process {'alive' if alive else 'DIED'} (log {log_path})")
    for (kind, outcome), n in sorted(s.counts.items()):
        print(f"  {kind:12s} {outcome:8s} {n}")
    wrong = sum(n for (k, o), n in s.counts.items() if o == "wrong")
    if wrong:
        ok = False
        print(f"soak: {wrong} wrong answers; first ones:")
        for e in s.errors[:20]:
            print("   ", e)
    if len(rss) >= 9:
        third = len(rss) // 3
        mid, last = max(rss[third:2 * third]), max(rss[2 * third:])
        flat = last <= mid * 1.10 + 16 * 1024
        print(f"soak: VmRSS max {mid / 1024:.1f} MiB in the middle third, {last / 1024:.1f} MiB in the last "
              f"({'flat' if flat else 'GROWING'})")
        ok = ok and flat
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
