#!/usr/bin/env python3
"""Request memory against --memory-limit, seen from outside (/proc/PID/status VmHWM, VmRSS).

Starts `keel serve` on a model with a memory limit, then sends request bodies of the shapes that expand most
when parsed, rendered and tokenized, all on loopback:
  string    one user message holding one long string
  messages  many short messages
  values    a small request plus an ignored field holding many tiny JSON values
  tools     many tools with small schemas
Two modes:
  factor  one request of each shape at a time, --size bytes each; prints the VmHWM growth per body byte
          (what RequestMemory::kBytesPerBodyByte must bound);
  hwm     --concurrent requests at once per shape, --size bytes each (a body larger than the server's request
          budget allows gets 413, one that must wait too long 503: both are fine); asserts every status is in
          {200, 400 (a prompt longer than the context), 413, 503}, the process lives, and VmHWM <= limit + --overhead MiB. Exit 1 otherwise.
Usage: tools/request_memory_probe.py KEEL MODEL --mode hwm --limit-mib 256 --size 700000 --concurrent 16
"""
import argparse
import json
import os
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


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def post(port, path, body, timeout=120):
    """Returns the HTTP status (0: no answer) of a POST with a Content-Length body."""
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(head)
            try:
                s.sendall(body)
            except OSError:
                pass  # refused early: the status is still in the socket
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            while True:  # read to the end so the server finishes the response
                chunk = s.recv(65536)
                if not chunk:
                    break
        line = data.split(b"\r\n", 1)[0].split()
        return int(line[1]) if len(line) > 1 else 0
    except OSError:
        return 0


def body_of(shape, size):
    base = {"model": "", "max_tokens": 1, "temperature": 0}
    if shape == "string":
        n = size - 100
        base["messages"] = [{"role": "user", "content": "a " * (n // 2)}]
    elif shape == "messages":
        one = {"role": "user", "content": "hi"}
        n = size // (len(json.dumps(one, separators=(",", ":"))) + 1)
        base["messages"] = [one] * n
    elif shape == "values":
        base["messages"] = [{"role": "user", "content": "hi"}]
        base["metadata"] = [0] * (size // 2)
    elif shape == "tools":
        tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object",
                                                                            "properties": {"a": {"type": "string"}}}}}
        n = size // (len(json.dumps(tool, separators=(",", ":"))) + 1)
        base["messages"] = [{"role": "user", "content": "hi"}]
        base["tools"] = [tool] * n
    return json.dumps(base, separators=(",", ":")).encode()


def wait_ready(port, proc, seconds=60):
    t0 = time.time()
    while time.time() - t0 < seconds:
        if proc.poll() is not None:
            raise RuntimeError("keel serve exited during start-up")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                if b" 200 " in s.recv(4096):
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("keel serve not ready")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("keel")
    ap.add_argument("model")
    ap.add_argument("--mode", choices=["factor", "hwm"], required=True)
    ap.add_argument("--limit-mib", type=int, default=256)
    ap.add_argument("--size", type=int, default=1 << 20)
    ap.add_argument("--concurrent", type=int, default=16)
    ap.add_argument("--overhead-mib", type=int, default=96)
    ap.add_argument("--shapes", default="string,messages,values,tools")
    ap.add_argument("--forbid", type=int, action="append", default=[],
                    help="a status that must not occur (413 for a body within the server's largest)")
    a = ap.parse_args()
    ok = True
    shapes = a.shapes.split(",")
    # factor: a fresh server per shape (VmHWM only grows); hwm: one server takes every shape in turn.
    groups = [[s] for s in shapes] if a.mode == "factor" else [shapes]
    for group in groups:
        ok = run_server(a, group) and ok
    return 0 if ok else 1


def run_server(a, shapes):
    port = free_port()
    log = open(f"/tmp/request_memory_probe_{os.getpid()}.log", "w")
    proc = subprocess.Popen([a.keel, "serve", "-m", a.model, "--port", str(port), "--parallel", "4",
                             "--memory-limit", f"{a.limit_mib}MiB"], stdout=log, stderr=subprocess.STDOUT)
    ok = True
    try:
        wait_ready(port, proc)
        idle = status_kib(proc.pid, "VmHWM")
        print(f"idle: VmHWM {idle / 1024:.1f} MiB, VmRSS {status_kib(proc.pid, 'VmRSS') / 1024:.1f} MiB")
        for shape in shapes:
            body = body_of(shape, a.size)
            before = status_kib(proc.pid, "VmHWM")
            if a.mode == "factor":
                st = post(port, "/v1/chat/completions", body)
                after = status_kib(proc.pid, "VmHWM")
                per = (after - before) * 1024 / len(body)
                print(f"{shape:9s} body {len(body)} bytes: status {st}, VmHWM +{(after - before) / 1024:.1f} MiB "
                      f"= {per:.1f} bytes per body byte (VmRSS after {status_kib(proc.pid, 'VmRSS') / 1024:.1f} MiB)")
            else:
                statuses = []
                threads = [threading.Thread(target=lambda: statuses.append(post(port, "/v1/chat/completions", body)))
                           for _ in range(a.concurrent)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                hwm = status_kib(proc.pid, "VmHWM")
                counts = {s: statuses.count(s) for s in sorted(set(statuses))}
                bad = [s for s in statuses if s not in (200, 400, 413, 503) or s in a.forbid]
                print(f"{shape:9s} {a.concurrent} x {len(body)} bytes: statuses {counts}, VmHWM {hwm / 1024:.1f} MiB "
                      f"(limit {a.limit_mib} MiB + overhead {a.overhead_mib} MiB), VmRSS after "
                      f"{status_kib(proc.pid, 'VmRSS') / 1024:.1f} MiB")
                if bad or proc.poll() is not None:
                    print(f"FAIL: statuses {bad}, process {'dead' if proc.poll() is not None else 'alive'}")
                    ok = False
                if hwm > (a.limit_mib + a.overhead_mib) * 1024:
                    print("FAIL: VmHWM above the limit plus the overhead")
                    ok = False
        if proc.poll() is not None:
            ok = False
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return ok


if __name__ == "__main__":
    sys.exit(main())
