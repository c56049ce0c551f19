#!/usr/bin/env bash
# `conformance serve` under hostile clients, on the fixture pair: a request that fails fails
# alone and the server serves on; idle and slow connections cannot starve it (at the connection
# limit the longest idle is shed); bodies, headers and busy connections past their limits get
# 413, 431 and 503; a connection whose request does not
# arrive whole in time is closed; the work of clients that have gone is cancelled, streams
# included; a burst of 64 connections is all answered.
set -uo pipefail
conformance=$1 fixtures=$2
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"
python=/usr/bin/python3
[ -x "$python" ] || python=python3

# Starts serve on the fixture target with the flags given, on a free port: sets serve_pid and port.
start_serve() {
  "$conformance" serve --target "$fixtures/target" --engine nonspec-batch --port 0 --model fixture "$@" \
    >"$work/serve.out" 2>"$work/serve.err" &
  serve_pid=$!
  port=""
  for _ in $(seq 600); do
    port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/serve.out")
    [ -n "$port" ] && break
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$port" ] || { fail "serve did not start: $(cat "$work/serve.err")"; finish serve_limits; }
}

# Stops serve; nothing abandoned is still decoding, so SIGTERM ends it at once (within 20 s
# here, generously), and no request failed inside it.
stop_serve() {
  kill -TERM "$serve_pid"
  for _ in $(seq 200); do kill -0 "$serve_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$serve_pid" 2>/dev/null && fail "serve still runs 20 s after SIGTERM"
  wait "$serve_pid" || fail "serve exited $? after SIGTERM"
  grep -q "failed" "$work/serve.err" && fail "a request failed inside serve: $(head -1 "$work/serve.err")"
}

trap 'kill -TERM $serve_pid 2>/dev/null; wait $serve_pid 2>/dev/null; rm -rf "$work"' EXIT
start_serve --max-connections 400 --max-body-bytes 4096 --max-header-bytes 2048 --request-timeout 2
"$python" - "$port" <<'PY' || fail "see above"
import json, re, socket, sys, threading, time, http.client
port = int(sys.argv[1])
failed = []

def check(condition, what):
    if not condition:
        failed.append(what)
        print("FAIL:", what)

def request(method, path, body=None, headers=None, timeout=30):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    connection.request(method, path, body=body, headers=headers or {"Content-Type": "application/json"})
    response = connection.getresponse()
    status, text = response.status, response.read().decode()
    connection.close()
    return status, text

def complete(body, **kw):
    return request("POST", "/v1/completions", json.dumps(body), **kw)

# A bad request fails alone, with one line and no internals, and the server serves on.
status, text = complete({"prompt": [1, 2, 3], "max_tokens": 0})
check(status == 400 and "field 'max_tokens': 0 is outside [1, 4096]" in text, f"max_tokens 0: {status} {text}")
status, text = complete({"prompt": [1, 2, 3], "max_tokens": 3})
check(status == 200 and json.loads(text)["usage"]["completion_tokens"] == 3, f"after a bad request: {status} {text}")
status, text = complete({"prompt": [1, 2, 3], "max_tokens": 3, "temperature": 0.8, "min_p": 1.5})
check(status == 400 and "field 'min_p': must be in [0, 1]" in text, f"min_p 1.5: {status} {text}")
status, text = complete({"prompt": [1, 2, 3], "max_tokens": 3, "temperature": 0.8, "min_p": 0.1, "seed": 3})
check(status == 200 and json.loads(text)["usage"]["completion_tokens"] == 3, f"min_p 0.1: {status} {text}")

# Limits: body, headers, method, route.
status, text = complete({"prompt": "a" * 5000})
check(status == 413 and "--max-body-bytes" in text, f"5000-byte body: {status} {text}")
# A client that sends all of a 16 MB body before it reads (no Expect: 100-continue) still gets the 413.
s = socket.create_connection(("127.0.0.1", port), timeout=10)
big = 16 << 20
try:
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % big + b"x" * big)
    reply = s.recv(65536)
except OSError as e:
    reply = repr(e).encode()
check(reply.startswith(b"HTTP/1.1 413"), f"a 16 MB body sent whole: {reply[:80]!r}")
s.close()
status, text = request("GET", "/health", headers={"X-Padding": "p" * 3000})
check(status == 431 and "--max-header-bytes" in text, f"3000-byte header: {status} {text}")
status, text = request("GET", "/v1/completions")
check(status == 405, f"GET /v1/completions: {status} {text}")
# HEAD gets what GET would, without the body, and the connection serves on.
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
for path in ("/health", "/v1/models"):
    connection.request("HEAD", path)
    response = connection.getresponse()
    length = response.getheader("Content-Length")
    check(response.status == 200 and response.read() == b"", f"HEAD {path}: {response.status}")
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    check(response.status == 200 and length == str(len(body)), f"HEAD {path}: Content-Length {length}, GET's body {len(body)}")
connection.close()
status, text = request("GET", "/nowhere")
check(status == 404, f"GET /nowhere: {status} {text}")

# "Expect: 100-continue" (curl's way for bodies over 1 KiB) gets its 100 before the body is sent.
body = json.dumps({"prompt": [1, 2, 3], "max_tokens": 2}).encode()
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
          b"Content-Length: %d\r\n\r\n" % len(body))
interim = s.recv(4096)
check(interim.startswith(b"HTTP/1.1 100"), f"Expect: 100-continue got {interim[:40]!r}")
s.sendall(body)
final = s.recv(65536)
check(final.startswith(b"HTTP/1.1 200"), f"the body after 100 Continue got {final[:40]!r}")
s.close()

# Chunked bodies, whose trailers no limit bounds (a 70,000-byte trailer field once ended the
# server), get 411 before a byte of the body is read; the server serves on.
for encoding in (b"chunked", b"gzip, chunked"):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: " + encoding + b"\r\n\r\n%x\r\n" % len(body) + body + b"\r\n0\r\n")
    try:
        s.sendall(b"X-Trailer: " + b"t" * 70000 + b"\r\n\r\n")
    except OSError:
        pass  # answered and closed before the trailer was sent
    reply = s.recv(65536)
    check(reply.startswith(b"HTTP/1.1 411") and b"Content-Length" in reply, f"Transfer-Encoding {encoding!r}: {reply[:120]!r}")
    s.close()
status, text = complete({"prompt": [1, 2, 3], "max_tokens": 2})
check(status == 200, f"after chunked bodies: {status} {text}")

# 300 idle connections and 20 slowloris ones trickling a header byte at a time: /health and a
# completion are still answered at once.
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(300)]
slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
for s in slow:
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
def trickle():
    for _ in range(8):
        for s in slow:
            try:
                s.sendall(b"X")
            except OSError:
                pass
        time.sleep(0.5)
trickler = threading.Thread(target=trickle)
trickler.start()
status, _ = request("GET", "/health", timeout=5)
check(status == 200, f"/health amid 320 idle and slow connections: {status}")
status, text = complete({"prompt": [1, 2], "max_tokens": 2}, timeout=10)
check(status == 200, f"a completion amid 320 idle and slow connections: {status} {text}")
# The slowloris connections are closed at --request-timeout (2 s), however they trickle.
trickler.join()
for s in slow:
    s.settimeout(5)
    try:
        reply = s.recv(4096)
    except OSError as e:
        reply = repr(e).encode()
    check(reply == b"", f"a slowloris connection still open after 4 s: {reply[:60]!r}")
for s in idle + slow:
    s.close()

# At --max-connections (400), a new connection sheds the one that has waited longest for a
# request: 400 idle sockets cannot lock a working client out.
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(400)]
time.sleep(0.3)
status, _ = request("GET", "/health", timeout=5)
check(status == 200, f"/health beside 400 idle connections: {status}")
# Closed by the shedding, well before the 2 s request timeout would close it.
held[0].settimeout(0.5)
try:
    shed = held[0].recv(1) == b""
except socket.timeout:
    shed = False
except OSError:
    shed = True
check(shed, "the connection idle longest was not closed")
for s in held:
    s.close()
time.sleep(0.3)
# 400 connections each with a request under way (its body still to come) leave none to shed:
# one more is answered 503 at once.
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(400)]
for s in held:
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
time.sleep(0.3)
try:
    status, text = request("GET", "/health", timeout=5)
except Exception as e:
    status, text = 0, str(e)
check(status == 503 and "--max-connections" in text, f"connection 401 beside 400 requests under way: {status} {text}")
for s in held:
    s.close()
time.sleep(0.3)
status, _ = request("GET", "/health", timeout=5)
check(status == 200, f"/health once they closed: {status}")

# 256 requests for 4,000 tokens each, every socket closed right after sending (the default
# --max-queue is 256): their work is cancelled, and a working client is answered, not refused.
body = json.dumps({"prompt": [1, 2, 3, 4], "max_tokens": 4000}).encode()
head = f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
for _ in range(256):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(head.encode() + body)
    s.close()
time.sleep(0.5)
started = time.time()
status, text = complete({"prompt": [5, 6, 7], "max_tokens": 4}, timeout=30)
print(f"after 256 abandoned requests: {status} in {time.time() - started:.3f} s")
check(status == 200, f"a completion after 256 abandoned requests: {status} {text[:200]}")

# n choices, each decoded as a request of its own: sampled ones differ, and usage sums them;
# /metrics counts the request once, as vLLM does.
def successes():
    status, text = request("GET", "/metrics")
    found = re.search(r'vllm:request_success_total\{[^}]*\} (\d+)', text)
    return int(found.group(1)) if status == 200 and found else None
before = successes()
status, text = complete({"prompt": [1, 2, 3], "max_tokens": 6, "n": 3, "temperature": 1.0, "seed": 5})
after = successes()
check(before is not None and after == before + 1, f"vllm:request_success_total went from {before} to {after} for one request of n 3")
answer = json.loads(text) if status == 200 else {}
choices = answer.get("choices", [])
check([c["index"] for c in choices] == [0, 1, 2] and len({c["text"] for c in choices}) > 1
      and answer["usage"]["completion_tokens"] == 18, f"n 3: {status} {text[:300]}")

# Streams under attack. A client that reads its stream's first event and closes, and one that
# never reads its 16 choices of 4,000 tokens (more events than socket buffers hold: the server's
# writes stall past --request-timeout, or pile up past what it keeps unsent): the
# server drops both, closing the second's connection before the end of its answer, and meanwhile
# streams another client's answer whole, ending in data: [DONE], as that answer comes unstreamed.
def stream_socket(body, receive_buffer=None):
    data = json.dumps(dict(body, stream=True)).encode()
    s = socket.socket()
    if receive_buffer:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    s.connect(("127.0.0.1", port))
    s.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return s
closing = stream_socket({"prompt": [1, 2, 3], "max_tokens": 4000})
first = closing.recv(4096)
check(b"200 OK" in first and b"text/event-stream" in first, f"a stream's first bytes: {first[:200]!r}")
closing.close()
stalled = stream_socket({"prompt": [1, 2, 4], "max_tokens": 4000, "n": 16}, receive_buffer=2048)
streamed = request("POST", "/v1/completions", json.dumps({"prompt": [5, 6, 7], "max_tokens": 12, "stream": True,
                                                           "return_token_ids": True}))
events = [line[6:] for line in streamed[1].split("\n") if line.startswith("data: ")]
ids = [i for e in events[:-1] for i in json.loads(e)["choices"][0]["token_ids"]]
_, whole = complete({"prompt": [5, 6, 7], "max_tokens": 12, "return_token_ids": True})
check(streamed[0] == 200 and events[-1] == "[DONE]" and ids == json.loads(whole)["choices"][0]["token_ids"],
      f"a stream beside them: {streamed[0]} {events[-2:]}")
time.sleep(3)
# Reads what a dropped stream's socket still holds: the server closed it before the answer's end.
def check_dropped(s, what, timeout):
    s.settimeout(timeout)
    received = b""
    try:
        while chunk := s.recv(1 << 16):
            received += chunk
    except (ConnectionResetError, socket.timeout) as e:
        check(isinstance(e, ConnectionResetError), f"{what} was never closed")
    check(b"data: [DONE]" not in received, f"{what} was written to its end")
    s.close()
check_dropped(stalled, "the stalled stream", 20)

# A client that never reads its n=64 stream of 3,000 tokens, with the default socket buffers
# (which take megabytes of its events before a write stalls): it has read nothing for
# --request-timeout (2 s), so it is dropped and its choices leave the decoder; another client's
# 4-token completion is answered (how soon: ci/serve-unread-stream.sh).
unread = stream_socket({"prompt": [1, 2, 5], "max_tokens": 3000, "n": 64})
time.sleep(0.5)
started = time.time()
try:
    status, text = complete({"prompt": [5, 6, 7], "max_tokens": 4}, timeout=120)
except OSError as e:
    status, text = 0, repr(e)
took = time.time() - started
print(f"a completion beside an unread n=64 stream: {status} in {took:.1f} s")
check(status == 200, f"a completion beside an unread n=64 stream: {status} {text[:200]} in {took:.1f} s")
check_dropped(unread, "the unread stream", 10)

# A burst of 64 completions at once: every one answered, none reset.
results = []
def one(i):
    try:
        results.append(complete({"prompt": [1, 2 + i % 5], "max_tokens": 4}, timeout=120)[0])
    except Exception as e:
        results.append(repr(e))
threads = [threading.Thread(target=one, args=(i,)) for i in range(64)]
for t in threads:
    t.start()
for t in threads:
    t.join()
check(results.count(200) == 64, f"64-client burst: {sorted(map(str, results))[:5]}... {results.count(200)} of 64 answered")
sys.exit(1 if failed else 0)
PY

stop_serve

# Log-probabilities are reported beside decoding, not on its thread: eight requests for the
# prompt log-probabilities of 1,900-token prompts, 20 alternatives each (1,899 x 21 entries,
# --max-logprob-entries), do not hold up another client's completion, which is answered before
# most of their replies are built (built on the decode thread, it would come after all eight);
# one more prompt token than the limit allows is refused, naming the field.
start_serve --max-logprob-entries 39879
"$python" - "$port" <<'PY' || fail "see above"
import json, random, sys, threading, time, http.client
port = int(sys.argv[1])
def complete(body, timeout):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    connection.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, response.read().decode(), time.time()
rng = random.Random(7)
prompts = [[rng.randrange(3, 250) for _ in range(1900)] for _ in range(8)]
heavy = []
threads = [threading.Thread(target=lambda p=p: heavy.append(complete({"prompt": p, "max_tokens": 1, "prompt_logprobs": 20}, 120)))
           for p in prompts]
for t in threads:
    t.start()
time.sleep(0.5)  # their batch decoded, their reports under way
started = time.time()
status, text, light_done = complete({"prompt": [5, 6, 7], "max_tokens": 4}, 60)
for t in threads:
    t.join()
heavy_done = sorted(done for _, _, done in heavy)
print(f"a 4-token completion beside 8 prompt_logprobs requests: {status} in {light_done - started:.3f} s, "
      f"before {sum(done > light_done for done in heavy_done)} of their 8 replies")
failed = []
if status != 200 or light_done > heavy_done[5]:
    failed.append(f"the completion beside heavy requests: {status}, after {sum(done < light_done for done in heavy_done)} of their 8 replies")
if sorted(s for s, _, _ in heavy) != [200] * 8 or any(len(json.loads(t)["choices"][0]["prompt_logprobs"]) != 1900 for _, t, _ in heavy):
    failed.append(f"the heavy requests: {[(s, t[:100]) for s, t, _ in heavy]}")
status, text, _ = complete({"prompt": prompts[0] + [5], "max_tokens": 1, "prompt_logprobs": 20}, 30)
if status != 400 or "field 'prompt_logprobs': asks 39900 log-probabilities" not in text or "--max-logprob-entries" not in text:
    failed.append(f"past --max-logprob-entries: {status} {text[:300]}")
for f in failed:
    print("FAIL:", f)
sys.exit(1 if failed else 0)
PY
stop_serve

# Headers past the largest field the parser holds could only end the server.
expect_usage_error "--max-header-bytes: Value 1000000 not in range 256 to 65533" serve --target "$fixtures/target" \
  --port 0 --max-header-bytes 1000000
finish serve_limits
