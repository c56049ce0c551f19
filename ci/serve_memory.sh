#!/usr/bin/env bash
# Measures what connections and requests cost `conformance serve` in memory against its caps.
# Each step runs against a fresh serve on the fixture target (nonspec-batch, --max-body-bytes
# 1 MiB, --max-header-bytes 16 KiB, --max-connections 600), since the allocator keeps what one
# step freed for the next: 256 connections at once that are idle, that send all but the last
# byte of a 16,000-byte header, or that send a whole header and all but the last byte of a 1 MiB
# body; and 64 whole 1 MiB requests at once (each refused by the context after parsing and
# encoding). Reads serve's resident memory (VmRSS) from /proc, sampled every 5 ms, and writes the
# growth per connection or request next to the cap that bounds it, as Markdown to OUT (default
# reports/benchmarks/serve_memory.md). Needs ./ci/test.sh's build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/reports/benchmarks/serve_memory.md}"
python3 - "$root/build/bin/conformance" "$root/build/fixture_pair/target" "$out" <<'PY'
import datetime, http.client, json, os, platform, re, socket, subprocess, sys, tempfile, threading, time
conformance, target, out = sys.argv[1:4]
count = 256

def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024

def measure(load):
    """Runs `load(port)` against a fresh serve; returns resident memory before, at the peak and after."""
    log = tempfile.NamedTemporaryFile("w+", delete=False)
    serve = subprocess.Popen([conformance, "serve", "--target", target, "--engine", "nonspec-batch", "--port", "0",
                              "--model", "fixture", "--max-connections", "600", "--max-body-bytes", "1048576",
                              "--max-header-bytes", "16384", "--request-timeout", "120"],
                             stdout=log, stderr=subprocess.DEVNULL)
    try:
        port = None
        for _ in range(600):
            found = re.search(r"http://127\.0\.0\.1:(\d+)/", open(log.name).read())
            if found:
                port = int(found.group(1))
                break
            time.sleep(0.1)
        assert port, "serve did not start"
        complete(port, json.dumps({"prompt": [1, 2, 3], "max_tokens": 4}))  # warm
        time.sleep(1.0)
        before = rss(serve.pid)
        peak, sampling = [before], [True]
        def sample():
            while sampling[0]:
                peak[0] = max(peak[0], rss(serve.pid))
                time.sleep(0.005)
        sampler = threading.Thread(target=sample)
        sampler.start()
        held = load(port)
        time.sleep(3.0)  # for serve to read what the kernel still holds
        sampling[0] = False
        sampler.join()
        for s in held:
            s.close()
        return before, peak[0]
    finally:
        serve.terminate()
        serve.wait()
        os.unlink(log.name)

def complete(port, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    c.close()
    return r.status

def connections(send):
    def load(port):
        held = []
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", port))
            if send:
                s.sendall(send)
            held.append(s)
        return held
    return load

body = json.dumps({"prompt": "a" * (1048576 - 40), "max_tokens": 1}).encode()[:1048576]
steps = [
    ("idle (no byte sent)", "no request: the connection's buffers", connections(b"")),
    ("the header but its last byte", "--max-header-bytes 16,384, and the read buffer's growth past it",
     connections(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"p" * 15950)),
    ("a header and the body but its last byte", "--max-body-bytes 1,048,576 and the header",
     connections(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                 + str(len(body)).encode() + b"\r\n\r\n" + body[:-1])),
]
statuses = []
def requests(port):
    whole = json.dumps({"prompt": "a" * 1000000, "max_tokens": 1})
    threads = [threading.Thread(target=lambda: statuses.append(complete(port, whole))) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return []

lines = [
    "# serve's memory per connection and per request, against its caps",
    "",
    f"Measured {datetime.date.today()} on {platform.machine()} ({os.cpu_count()} CPUs) by `ci/serve_memory.sh`: each",
    "step against a fresh serve on the fixture target (nonspec-batch, `--max-body-bytes 1048576 --max-header-bytes 16384",
    "--max-connections 600`), resident memory (VmRSS) sampled every 5 ms from /proc.",
    "",
    f"| {count} connections at once, each sending | resident before | at the peak | per connection | bounded by |",
    "|---|---:|---:|---:|---|",
]
for name, cap, load in steps:
    before, peak = measure(load)
    lines.append(f"| {name} | {before/2**20:.1f} MiB | {peak/2**20:.1f} MiB | {(peak - before)/count/1024:.1f} KiB | {cap} |")
before, peak = measure(requests)
lines += [
    "",
    f"64 whole 1 MiB requests at once (a 1,000,000-character prompt each, refused 400 by the context after parsing and",
    f"encoding; statuses {sorted(set(statuses))}): {before/2**20:.1f} MiB resident before, {peak/2**20:.1f} MiB at the peak,",
    f"{(peak - before)/64/2**20:.2f} MiB per request (the body, its JSON and its million token ids).",
]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
