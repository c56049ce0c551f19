#!/usr/bin/env bash
# End-to-end checks of `conformance serve` and `conformance collect` on the fixture pair in
# float64: serve on a free loopback port, collect from it in every dialect serve speaks, and
# the answers equal generate's for the same engine exactly; bad requests get 400 with one line,
# a full queue 503, SIGTERM lets the request in flight finish; collect's bad input exits 2.
set -uo pipefail
conformance=$1 fixtures=$2 bench=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"
python=/usr/bin/python3
[ -x "$python" ] || python=python3

serve_pid=""
port=""
stop_serve() {
  [ -n "$serve_pid" ] || return 0
  kill -TERM "$serve_pid" 2>/dev/null
  wait "$serve_pid"
  local status=$?
  serve_pid=""
  [ $status -eq 0 ] || fail "serve exited $status after SIGTERM"
}
trap 'stop_serve; rm -rf "$work"' EXIT

# Starts serve with the given arguments on a free port and waits (at most 60 s) until it listens.
start_serve() {
  # Emptied here: the background job's own redirection may come after the first read below,
  # which would find the last server's port.
  : >"$work/serve.out"
  "$conformance" serve --target "$fixtures/target" --port 0 --dtype float64 --model fixture "$@" \
    >"$work/serve.out" 2>"$work/serve.err" &
  serve_pid=$!
  for _ in $(seq 600); do
    port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/serve.out")
    [ -n "$port" ] && return 0
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
  done
  fail "serve did not start: $(cat "$work/serve.err")"
  serve_pid=""
  return 1
}

# http METHOD PATH [BODY]: prints the status, a space, and the body on one line.
http() {
  "$python" - "$1" "http://127.0.0.1:$port$2" "${3:-}" <<'PY'
import sys, urllib.request, urllib.error
method, url, body = sys.argv[1:4]
request = urllib.request.Request(url, data=body.encode() if body else None, method=method,
                                 headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, timeout=120) as response:
        status, text, retry = response.status, response.read().decode(), response.headers.get("Retry-After")
except urllib.error.HTTPError as e:
    status, text, retry = e.code, e.read().decode(), e.headers.get("Retry-After")
print(status, text.replace("\n", " "), "retry-after=%s" % retry if retry else "")
PY
}

generate() { "$conformance" generate --target "$fixtures/target" --bench "$bench" --dtype float64 --max-new-tokens 24 "$@"; }
collect() {
  "$conformance" collect --endpoint "http://127.0.0.1:$port" --model fixture --bench "$bench" --max-new-tokens 24 "$@"
}
exact() {  # reference candidate: every answer equal
  "$conformance" score --reference "$1" --candidate "$2" --min-exact 1.0 >"$work/score.out" ||
    fail "$2 differs from $1: $(grep -A3 gate "$work/score.out")"
}

for engine in exspec oracle; do
  options=()
  [ "$engine" = exspec ] && options=(--draft "$fixtures/draft" --batch-size 3)
  generate --engine "$engine" "${options[@]}" --limit 12 --out "$work/$engine.generate.jsonl" >/dev/null || fail "generate $engine"
  generate --engine "$engine" "${options[@]}" --turns all --question-ids 1,2,3,4 --out "$work/$engine.turns.jsonl" \
    >/dev/null || fail "generate $engine --turns all"
  start_serve --engine "$engine" "${options[@]}" || continue
  # Prompts as ids (vllm + --target), staggered: a request starts whenever another ends.
  collect --api vllm --target "$fixtures/target" --limit 12 --concurrency 4 --out "$work/$engine.vllm.jsonl" \
    >"$work/$engine.collect.out" || fail "collect vllm from $engine (serve: $(tail -3 "$work/serve.err"))"
  exact "$work/$engine.generate.jsonl" "$work/$engine.vllm.jsonl"
  grep -q '"prompt_token_ids":\[\[' "$work/$engine.vllm.jsonl" || fail "vllm answers lack prompt_token_ids"
  # /metrics counts what those 12 answers took, as vLLM names its counters: the same drafts,
  # draft tokens and accepted tokens generate records, batching aside.
  http GET /metrics >"$work/$engine.metrics"
  "$python" - "$work/$engine.metrics" "$work/$engine.generate.jsonl" <<'PY' || fail "/metrics of $engine: $(head -c 600 "$work/$engine.metrics")"
import json, re, sys
text = open(sys.argv[1]).read()
assert text.startswith("200 "), text[:200]
def counter(name):
    found = re.search(re.escape(name) + r'_total\{model_name="fixture"\} (\d+)', text)
    assert found, name
    return int(found.group(1))
answers = [json.loads(line)["choices"][0] for line in open(sys.argv[2])]
def total(field):
    return sum(a.get(field, [0])[0] for a in answers)
assert counter("vllm:request_success") == 12
assert counter("vllm:generation_tokens") == total("new_tokens"), (counter("vllm:generation_tokens"), total("new_tokens"))
assert counter("vllm:spec_decode_num_draft_tokens") == total("drafted_tokens")
assert counter("vllm:spec_decode_num_accepted_tokens") == total("accepted_drafts")
speculative = total("drafted_tokens") > 0
assert counter("vllm:spec_decode_num_drafts") == (total("decoding_steps") - len(answers) if speculative else 0)
assert counter("specgate:realignments") >= 0 and counter("specgate:ragged_rounds") >= 0
PY
  # collect reads those counters before and after its run, and labels the answers with the
  # server that says it served them.
  "$python" - "$work/$engine.metrics" "$work/$engine.collect.out" "$work/$engine.vllm.jsonl" <<'PY' ||
import json, re, sys
text, printed = open(sys.argv[1]).read(), open(sys.argv[2]).read()
def counter(name):
    return int(re.search(re.escape(name) + r'_total\{model_name="fixture"\} (\d+)', text).group(1))
line = (f"server counters (GET /metrics): {counter('vllm:spec_decode_num_drafts')} draft"
        f"{'' if counter('vllm:spec_decode_num_drafts') == 1 else 's'}, {counter('vllm:spec_decode_num_accepted_tokens')} of "
        f"{counter('vllm:spec_decode_num_draft_tokens')} draft token")
assert line in printed, (line, printed)
assert f"{counter('specgate:realignments')} realignment" in printed, printed
assert all(json.loads(l)["run"]["server"] == "specgate" for l in open(sys.argv[3])), "answers not labelled by their server"
PY
    fail "collect's counters or labels from $engine: $(cat "$work/$engine.collect.out")"
  # Its answers list no rounds, but /metrics counts the drafts accepted at each draft position:
  # collect --counters keeps them over its run, and acceptance holds the rounds the answers'
  # tokens imply to them (a greedy draft model proposes with certainty). Counters that lose one
  # accepted draft disagree with the answers.
  if [ "$engine" = exspec ]; then
    collect --api vllm --target "$fixtures/target" --limit 12 --concurrency 4 --counters "$work/counters.json" \
      --out "$work/exspec.counted.jsonl" >"$work/counted.out" || fail "collect --counters: $(cat "$work/counted.out")"
    "$python" - "$work/counters.json" "$work/exspec.generate.jsonl" <<'PY' || fail "collect --counters: $(cat "$work/counters.json")"
import json, sys
counters = json.load(open(sys.argv[1]))
answers = [json.loads(line)["choices"][0] for line in open(sys.argv[2])]
per_position = [0] * 4
for answer in answers:
    for length in answer["accept_lengths"]:
        for j in range(length - 1):
            per_position[j] += 1
assert counters["accepted_per_position"] == per_position, (counters, per_position)
assert counters["accepted_tokens"] == sum(a["accepted_drafts"][0] for a in answers), counters
json.dump(dict(counters, accepted_per_position=[per_position[0] - 1] + per_position[1:]),
          open(sys.argv[1].replace(".json", ".lowered.json"), "w"))
PY
    for counters in counters:0 counters.lowered:1; do
      "$conformance" acceptance --target "$fixtures/target" --draft "$fixtures/draft" --draft-tokens 4 \
        --answers "$work/exspec.counted.jsonl" --server-counters "$work/${counters%:*}.json" >"$work/counted.out" 2>&1
      [ $? -eq "${counters#*:}" ] || fail "acceptance --server-counters ${counters%:*}: $(cat "$work/counted.out")"
    done
    expect_usage_error "--counters: the server's counters cover one run, and --resume keeps earlier runs' answers" \
      collect --endpoint "http://127.0.0.1:$port" --model fixture --bench "$bench" --api vllm --target "$fixtures/target" \
      --resume --counters "$work/resumed.json" --out "$work/exspec.counted.jsonl"
  fi
  # --question-ids chooses and orders the questions, as generate's does.
  collect --api vllm --target "$fixtures/target" --question-ids 5,2 --out "$work/$engine.ids.jsonl" >/dev/null ||
    fail "collect --question-ids from $engine"
  [ "$(sed -n 's/.*"question_id":\([0-9]*\).*/\1/p' "$work/$engine.ids.jsonl" | tr '\n' ' ')" = "5 2 " ] ||
    fail "collect --question-ids 5,2 answered $(sed -n 's/.*"question_id":\([0-9]*\).*/\1/p' "$work/$engine.ids.jsonl")"
  # Text prompts (openai): serve tokenizes; compared in code points.
  collect --api openai --limit 12 --concurrency 2 --out "$work/$engine.openai.jsonl" >/dev/null || fail "collect openai from $engine"
  grep -q '"token_ids"' "$work/$engine.openai.jsonl" && fail "openai answers claim token ids"
  exact "$work/$engine.generate.jsonl" "$work/$engine.openai.jsonl"
  # Every turn: later prompts carry the earlier answers.
  head -4 "$bench" >"$work/four.jsonl"
  "$conformance" collect --endpoint "http://127.0.0.1:$port" --model fixture --bench "$work/four.jsonl" --max-new-tokens 24 \
    --api vllm --target "$fixtures/target" --turns all --concurrency 2 --out "$work/$engine.vllm_turns.jsonl" >/dev/null ||
    fail "collect --turns all from $engine"
  exact "$work/$engine.turns.jsonl" "$work/$engine.vllm_turns.jsonl"
  # The chat endpoint renders the same prompts from messages (serve's template, raw here).
  # --target, which builds prompt ids for the completion APIs, is taken here too: it bounds the ids.
  for api in vllm-chat sglang-chat openai-chat; do
    "$conformance" collect --endpoint "http://127.0.0.1:$port" --model fixture --bench "$work/four.jsonl" --max-new-tokens 24 \
      --api $api --target "$fixtures/target" --turns all --concurrency 2 --out "$work/$engine.$api.jsonl" >/dev/null ||
      fail "collect --api $api from $engine"
    exact "$work/$engine.turns.jsonl" "$work/$engine.$api.jsonl"
    [ "$(grep -c '"chat_template":"server"' "$work/$engine.$api.jsonl")" = 4 ] || fail "$api answers do not say the server rendered them"
  done
  for api in vllm-chat sglang-chat; do
    grep -q '"prompt_token_ids":\[\[' "$work/$engine.$api.jsonl" || fail "$api answers lack prompt_token_ids"
  done
  grep -q '"token_ids"' "$work/$engine.openai-chat.jsonl" && fail "openai-chat answers claim token ids"
  grep -q '"run":{"batch_size":2,"engine":"vllm-chat","max_new_tokens":24,"sampling":{"temperature":0.0},"server":"specgate","started_at":' \
    "$work/$engine.vllm-chat.jsonl" || fail "collected answers do not record what was asked: $(head -c 300 "$work/$engine.vllm-chat.jsonl")"
  if [ "$engine" = oracle ]; then
    # A chat template builds the same prompts as generate's, and the answers say which.
    generate --engine oracle --chat-template vicuna --turns all --question-ids 1,2 --out "$work/vicuna.generate.jsonl" \
      >/dev/null || fail "generate --chat-template vicuna"
    head -2 "$bench" >"$work/two.jsonl"
    "$conformance" collect --endpoint "http://127.0.0.1:$port" --model fixture --bench "$work/two.jsonl" --max-new-tokens 24 \
      --api vllm --target "$fixtures/target" --chat-template vicuna --turns all --out "$work/vicuna.vllm.jsonl" >/dev/null ||
      fail "collect --chat-template vicuna"
    exact "$work/vicuna.generate.jsonl" "$work/vicuna.vllm.jsonl"
    [ "$(grep -c '"chat_template":"vicuna"' "$work/vicuna.vllm.jsonl")" = 2 ] || fail "vicuna answers do not record their template"
    # A bench line's prompt_token_ids are sent verbatim, no tokenizer needed, and no template is recorded.
    "$python" - "$work/two.jsonl" "$work/vicuna.vllm.jsonl" >"$work/two_ids.jsonl" <<'PY'
import json, sys
questions = [json.loads(line) for line in open(sys.argv[1])]
answers = {a["question_id"]: a for a in map(json.loads, open(sys.argv[2]))}
for q in questions:
    q["prompt_token_ids"] = answers[q["question_id"]]["choices"][0]["prompt_token_ids"]
    print(json.dumps(q))
PY
    "$conformance" collect --endpoint "http://127.0.0.1:$port" --model fixture --bench "$work/two_ids.jsonl" \
      --max-new-tokens 24 --api vllm --turns all --out "$work/ids.vllm.jsonl" >/dev/null || fail "collect from prompt_token_ids"
    exact "$work/vicuna.generate.jsonl" "$work/ids.vllm.jsonl"
    grep -q '"chat_template"' "$work/ids.vllm.jsonl" && fail "answers to prompt_token_ids claim a chat template"
    # serve --chat-template vicuna renders chat messages as generate --chat-template vicuna does,
    # with the oracle's top log-probabilities keyed by token id, equal to float64's rounding.
    stop_serve
    start_serve --engine oracle --chat-template vicuna || continue
    "$conformance" collect --endpoint "http://127.0.0.1:$port" --model fixture --bench "$work/two.jsonl" --max-new-tokens 24 \
      --api vllm-chat --turns all --top-logprobs 3 --out "$work/vicuna.chat.jsonl" >/dev/null || fail "collect --api vllm-chat from vicuna"
    exact "$work/vicuna.generate.jsonl" "$work/vicuna.chat.jsonl"
    "$python" - "$work/vicuna.generate.jsonl" "$work/vicuna.chat.jsonl" <<'PY' || fail "vllm-chat top_logprobs differ from generate's"
import json, sys
generated, served = ({a["question_id"]: a["choices"][0]["top_logprobs"] for a in map(json.loads, open(path))} for path in sys.argv[1:3])
assert generated.keys() == served.keys() and served, (generated.keys(), served.keys())
for question, turns in served.items():
    for turn, expected_turn in zip(turns, generated[question], strict=True):
        for got, expected in zip(turn, expected_turn, strict=True):
            # serve reports them from one pass over the tokens, generate as it decodes
            assert [a["token_id"] for a in got] == [a["token_id"] for a in expected[:3]], (question, got, expected[:3])
            assert all(abs(a["logprob"] - b["logprob"]) < 1e-12 for a, b in zip(got, expected)), (question, got, expected[:3])
PY
  fi
  stop_serve
done

# Requests serve refuses, each with one line.
start_serve --engine nonspec-batch --max-queue 1 || finish serve_collect
expect_http() {  # status, fragment, method, path, body
  local got
  got=$(http "$3" "$4" "${5:-}")
  [ "${got%% *}" = "$1" ] || fail "$3 $4 ${5:-}: status ${got%% *}, expected $1 ($got)"
  [[ "$got" == *"$2"* ]] || fail "$3 $4 ${5:-}: '$2' not in: $got"
}
expect_http 200 "" GET /health
expect_http 200 '"id":"fixture"' GET /v1/models
expect_http 200 '"finish_reason"' POST /v1/completions '{"prompt": [1, 70, 71], "max_tokens": 3}'
expect_http 400 "field 'max_tokens': expected an integer, got string" POST /v1/completions '{"prompt": "a", "max_tokens": "3"}'
expect_http 400 "token 99999 is outside the vocabulary" POST /v1/completions '{"prompt": [1, 99999]}'
expect_http 400 "need 4098 positions, the model has 4096" POST /v1/completions '{"prompt": "a", "max_tokens": 4096}'
expect_http 400 "field 'temperature': expected a number, got string" POST /v1/completions '{"prompt": "a", "temperature": "hot"}'
expect_http 400 "field 'temperature': below 1e-05, where engines decode greedily" POST /v1/completions '{"prompt": "a", "temperature": 5e-324}'
expect_http 200 '"token_logprobs":[' POST /v1/completions '{"prompt": "a", "max_tokens": 2, "logprobs": 2}'
expect_http 400 "field 'logprobs': 21 is outside [0, 20]" POST /v1/completions '{"prompt": "a", "logprobs": 21}'
expect_http 400 "not valid JSON" POST /v1/completions '{"prompt": '
expect_http 400 "field 'stop': not supported by this server" POST /v1/completions '{"prompt": "a", "stop": ["b"]}'
expect_http 400 "field 'echo': not supported" POST /v1/completions '{"prompt": "a", "echo": true}'
expect_http 400 "field 'best_of': not supported" POST /v1/completions '{"prompt": "a", "best_of": 2}'
expect_http 400 "field 'frobnicate': not supported" POST /v1/completions '{"prompt": "a", "frobnicate": 1}'
expect_http 200 '"finish_reason"' POST /v1/completions '{"prompt": "a", "max_tokens": 2, "stop": [], "echo": false, "best_of": 1, "user": "u"}'
# Nesting past what writing a value out can recurse through, and values too long to quote whole.
deep=$(printf '[%.0s' $(seq 60000))$(printf ']%.0s' $(seq 60000))
expect_http 400 "the body nests deeper than 64 levels" POST /v1/completions "{\"prompt\": \"a\", \"x\": $deep}"
expect_http 400 "the body nests deeper than 64 levels" POST /v1/chat/completions "{\"messages\": $deep}"
expect_http 400 "field 'x': not supported by this server ([[[[" POST /v1/completions \
  "{\"prompt\": \"a\", \"x\": $(printf '[%.0s' $(seq 63))$(printf ']%.0s' $(seq 63))}"
long_value=$(printf 'v%.0s' $(seq 5000))
got=$(http POST /v1/completions "{\"prompt\": \"a\", \"x\": \"$long_value\"}")
[[ "$got" == *'... (5002 bytes))'* && ${#got} -lt 600 ]] || fail "a 5000-byte value quoted in full: ${#got} bytes: ${got:0:300}"
expect_http 200 '"finish_reason"' POST /v1/completions '{"prompt": [1, 70, 71], "max_tokens": 3}'
expect_http 404 "does not exist" POST /v1/completions '{"prompt": "a", "model": "other"}'
expect_http 404 'The model \"a\\u0000b\" does not exist' POST /v1/completions '{"prompt": "a", "model": "a\u0000b"}'
chat() { expect_http "$1" "$2" POST /v1/chat/completions "$3"; }
chat 200 '"message":{"role":"assistant","content":' '{"messages": [{"role": "user", "content": "a"}], "max_tokens": 2}'
chat 200 '"prompt_token_ids":[' '{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
  {"role": "user", "content": "c"}], "max_completion_tokens": 2, "return_token_ids": true, "add_generation_prompt": true}'
chat 400 "field 'messages[0].role': expected 'user'" '{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "a"}]}'
chat 400 "field 'messages': the last message must be the user's" '{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}'
chat 400 "field 'messages[0].content': expected text, got list" '{"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}]}'
chat 400 "field 'messages[0].name': not supported" '{"messages": [{"role": "user", "content": "a", "name": "n"}]}'
chat 400 "field 'messages': missing" '{"max_tokens": 2}'
chat 400 "field 'prompt': not supported" '{"messages": [{"role": "user", "content": "a"}], "prompt": "a"}'
chat 400 "field 'top_logprobs': needs logprobs: true" '{"messages": [{"role": "user", "content": "a"}], "top_logprobs": 2}'
chat 200 '"top_logprobs":[{"token"' '{"messages": [{"role": "user", "content": "a"}], "max_tokens": 2, "logprobs": true, "top_logprobs": 2}'
chat 400 "field 'tools': not supported" '{"messages": [{"role": "user", "content": "a"}], "tools": []}'
chat 200 'data: [DONE]' '{"messages": [{"role": "user", "content": "a"}], "max_tokens": 2, "stream": true}'
chat 400 "field 'logprobs': not supported with stream: true" '{"messages": [{"role": "user", "content": "a"}], "stream": true,
  "logprobs": true, "top_logprobs": 2}'
chat 400 "field 'stream_options': only with stream: true" '{"messages": [{"role": "user", "content": "a"}],
  "stream_options": {"include_usage": true}}'
chat 400 "field 'stream_options.continuous_usage_stats': not supported" '{"messages": [{"role": "user", "content": "a"}],
  "stream": true, "stream_options": {"continuous_usage_stats": true}}'
chat 400 "field 'n': 2 choices, more than the 1 requests this server decodes at once (--max-queue)" \
  '{"messages": [{"role": "user", "content": "a"}], "max_tokens": 2, "n": 2}'
chat 400 "field 'n': 65 is outside [1, 64]" '{"messages": [{"role": "user", "content": "a"}], "n": 65}'
chat 400 "need 4098 positions" '{"messages": [{"role": "user", "content": "a"}], "max_tokens": 4096}'
# collect asks the server what it serves first: another model's name fails at once, in one
# line naming what the server serves, and leaves no --out.
expect_input_error "$work/other.jsonl" "--model 'other': the server at http://127.0.0.1:$port serves 'fixture' (GET /v1/models)" \
  collect --endpoint "http://127.0.0.1:$port" --api vllm --model other --bench "$bench" --out "$work/other.jsonl"
# A full queue (--max-queue 1): a second request while a long one decodes gets 503.
http POST /v1/completions '{"prompt": "a", "max_tokens": 1000}' >"$work/long.out" &
long=$!
sleep 0.3
expect_http 503 "retry-after=1" POST /v1/completions '{"prompt": "b", "max_tokens": 2}'
# SIGTERM: new requests get 503, the request in flight still finishes, then serve exits 0.
kill -TERM "$serve_pid"
sleep 0.2
expect_http 503 "the server is shutting down" POST /v1/completions '{"prompt": "c", "max_tokens": 2}'
expect_http 503 "shutting down" GET /health
wait "$long"
grep -q '^200 ' "$work/long.out" || fail "the request in flight at SIGTERM did not finish: $(cat "$work/long.out")"
wait "$serve_pid" || fail "serve exited $? after SIGTERM"
serve_pid=""

# collect's unusable input or endpoint: exit 2, one line.
asks=(collect --model fixture --bench "$bench" --out "$work/x.jsonl")
expect_usage_error "unknown API 'grpc'" "${asks[@]}" --endpoint "http://127.0.0.1:$port" --api grpc
expect_usage_error "expected http://HOST[:PORT][/PREFIX]" "${asks[@]}" --endpoint "https://x" --api vllm
# No server: one line within seconds (not after the retries' backoff), and no --out.
started=$SECONDS
expect_input_error "$work/x.jsonl" "--endpoint http://127.0.0.1:$port: no server answers (Connection refused)" "${asks[@]}" \
  --endpoint "http://127.0.0.1:$port" --api vllm
[ $((SECONDS - started)) -le 10 ] || fail "collect took $((SECONDS - started)) s to find no server"
expect_usage_error "--question-ids: question 999 is not in $bench" "${asks[@]}" --endpoint "http://127.0.0.1:$port" \
  --api vllm --question-ids 3,999
expect_usage_error "the vllm-chat API renders the conversation with the server's own template" "${asks[@]}" \
  --endpoint "http://127.0.0.1:$port" --api vllm-chat --chat-template vicuna
expect_usage_error "--top-logprobs: the openai API names alternatives by text, not token id" "${asks[@]}" \
  --endpoint "http://127.0.0.1:$port" --api openai --top-logprobs 2

# A server that sends interim replies (100 Continue, 103 Early Hints) before its answer.
"$python" - "$work/interim.port" <<'PY' &
import json, socket, sys
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(4)
open(sys.argv[1] + ".tmp", "w").write(str(listener.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
body = json.dumps({"choices": [{"index": 0, "text": "ab", "token_ids": [97, 98], "finish_reason": "length"}]}).encode()
while True:  # collect's GETs of what the server serves get 404, then its one completion
    connection, _ = listener.accept()
    received = b""
    while b"\r\n\r\n" not in received:
        received += connection.recv(65536)
    head, rest = received.split(b"\r\n\r\n", 1)
    if head.startswith(b"GET "):
        connection.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        connection.close()
        continue
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    while len(rest) < length:
        rest += connection.recv(65536)
    connection.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
                       b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    connection.close()
    break
PY
interim=$!
for _ in $(seq 100); do [ -s "$work/interim.port" ] && break; sleep 0.1; done
"$conformance" collect --endpoint "http://127.0.0.1:$(cat "$work/interim.port")" --api vllm --model m --bench "$bench" \
  --limit 1 --max-new-tokens 2 --retries 0 --timeout 10 --out "$work/interim.jsonl" >"$work/interim.out" 2>&1 ||
  fail "collect after interim replies: $(cat "$work/interim.out")"
grep -q '"token_ids":\[\[97,98\]\]' "$work/interim.jsonl" || fail "interim replies: $(cat "$work/interim.jsonl")"
wait $interim
finish serve_collect
