#!/usr/bin/env bash
# How long another client's 4-token completion takes while a client holds open an n=64 stream of
# 3,000 tokens and reads none of it, on serve with the fixture pair: for each engine and
# --request-timeout below, TRIALS times (default 5) on a fresh stream, the seconds from sending
# the completion to its whole answer, and whether the unread stream's connection was closed
# before its end. Prints a Markdown table. Needs build/ (ci/setup.sh) and its fixture pair.
#   ci/serve-unread-stream.sh [TRIALS]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
conformance="$root/build/bin/conformance"
fixtures="$root/build/fixture_pair"
trials=${1:-5}
work=$(mktemp -d)
serve_pid=""
trap '[ -n "$serve_pid" ] && kill -TERM "$serve_pid" 2>/dev/null; rm -rf "$work"' EXIT

echo "| engine | --request-timeout | trial | completion | seconds | unread stream |"
echo "|---|---|---|---|---|---|"
for setup in "nonspec-batch 2" "exspec 2" "exspec 30"; do
  read -r engine timeout <<<"$setup"
  draft=()
  [ "$engine" = nonspec-batch ] || draft=(--draft "$fixtures/draft")
  : >"$work/serve.out"  # before the server starts, so that the port read below is never the last server's
  "$conformance" serve --target "$fixtures/target" "${draft[@]}" --engine "$engine" --port 0 --model fixture \
    --request-timeout "$timeout" >"$work/serve.out" 2>"$work/serve.err" &
  serve_pid=$!
  port=""
  for _ in $(seq 600); do
    port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/serve.out")
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "serve did not start: $(cat "$work/serve.err")" >&2; exit 1; }
  python3 - "$port" "$engine" "$timeout" "$trials" <<'PY'
import http.client, json, socket, sys, time
port, engine, timeout, trials = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
for trial in range(1, trials + 1):
    body = json.dumps({"prompt": [1, 2, 5 + trial], "max_tokens": 3000, "n": 64, "stream": True}).encode()
    unread = socket.create_connection(("127.0.0.1", port))
    unread.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(body) + body)
    time.sleep(0.5)
    started = time.time()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        connection.request("POST", "/v1/completions", json.dumps({"prompt": [5, 6, 7], "max_tokens": 4}),
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        status = response.status
    except OSError as e:
        status = repr(e)
    took = time.time() - started
    # Whatever the socket still holds, then its end: closed before data: [DONE], or never.
    unread.settimeout(60)
    received, closed = b"", "closed before its end"
    try:
        while chunk := unread.recv(1 << 16):
            received += chunk
    except ConnectionResetError:
        pass
    except socket.timeout:
        closed = "still open after 60 s"
    if b"data: [DONE]" in received:
        closed = "written to its end"
    unread.close()
    print(f"| {engine} | {timeout} | {trial} | {status} | {took:.1f} | {closed} |", flush=True)
PY
  kill -TERM "$serve_pid"
  wait "$serve_pid"
  serve_pid=""
done
