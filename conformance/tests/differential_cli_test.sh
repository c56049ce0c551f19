#!/usr/bin/env bash
# End-to-end checks of `conformance differential` against `conformance serve` on the fixture pair
# in float64: a correct server (drafting with the draft model or by prompt lookup) passes with
# several seeds and with a speculation-off endpoint; each
# seeded fault that only a crowd shows answers alone exactly as a correct server does and is
# caught; each seeded fault of what the server reports besides tokens is caught; the report
# matches its schema; bad input exits 2 with one line.
set -uo pipefail
conformance=$1 fixtures=$2 bench=$3 schema=$4
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"
python=/usr/bin/python3
[ -x "$python" ] || python=python3

servers=()
trap 'for pid in "${servers[@]}"; do kill -9 "$pid" 2>/dev/null; done; rm -rf "$work"' EXIT

# serve NAME ARGS...: starts serve on a free port; its URL is left in $url.
serve() {
  local name=$1
  shift
  "$conformance" serve --target "$fixtures/target" --port 0 --dtype float64 --model fixture "$@" \
    >"$work/$name.serve.out" 2>"$work/$name.serve.err" &
  servers+=($!)
  disown
  url=""
  for _ in $(seq 600); do
    local port
    port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/$name.serve.out")
    [ -n "$port" ] && url="http://127.0.0.1:$port" && return 0
    sleep 0.1
  done
  fail "serve $name did not start: $(cat "$work/$name.serve.err")"
  return 1
}
# Stops the server started last: each fault's server holds a model and is done with after its checks.
stop_server() {
  kill -9 "${servers[-1]}" 2>/dev/null
  unset 'servers[-1]'
}

exspec=(--draft "$fixtures/draft" --batch-size 4)
# crowds ENDPOINT ARGS...: the answers alone and in crowds, tokens only, each within
# $crowd_timeout seconds (8 unless set).
crowds() {
  "$conformance" differential --endpoint "$1" --api vllm --model fixture --bench "$bench" --target "$fixtures/target" \
    --limit 12 --max-new-tokens 24 --max-in-flight 6 --fillers 2 --filler-chars 300 --timeout "${crowd_timeout:-8}" \
    --retries 0 "${@:2}"
}
# differential ENDPOINT ARGS...: crowds, and what the server reports besides tokens re-scored.
differential() {
  crowds "$@" --top-logprobs 3 --prompt-logprobs 2 --rescore-with "$fixtures/target" --dtype float64
}

# A correct server: every crowd answers as alone, whatever the seed; the reports are well formed.
# Seed 2 goes to a server drafting by prompt lookup, whose rows draft 0 to K tokens a round.
serve correct "${exspec[@]}" || exit 1
correct=$url
serve ngram --drafter ngram --batch-size 4 || exit 1
ngram=$url
for seed in 0 1 2; do
  endpoint=$correct crowds=4
  [ $seed -eq 2 ] && endpoint=$ngram
  [ $seed -gt 0 ] && crowds=2
  differential "$endpoint" --seed $seed --crowds $crowds --out-dir "$work/correct-$seed" --json "$work/correct-$seed.json" \
    --markdown "$work/correct-$seed.md" --html "$work/correct-$seed.html" --junit "$work/correct-$seed.xml" \
    >"$work/correct-$seed.out" 2>&1 ||
    fail "a correct server failed with seed $seed: $(cat "$work/correct-$seed.out")"
done
"$python" - "$schema" "$work/correct-0.json" "$work/correct-0.xml" <<'PY' || fail "reports of a correct server"
import json, sys, xml.etree.ElementTree as ET
import jsonschema
schema, report = (json.load(open(p)) for p in sys.argv[1:3])
jsonschema.validate(report, schema)
names = [s["schedule"]["name"] for s in report["schedules"]]
assert names == ["alone", "crowd-1", "crowd-2", "crowd-3", "crowd-4"], names
assert report["gate"] == {"passed": True, "reasons": []}, report["gate"]
for s in report["schedules"]:
    assert s["questions"] == 12 and s["identical"] == 12 and not s["differences"], s
    assert s["side_channels"] == {"checked_turns": 12, "rescored_turns": 12, "findings": []}, s["side_channels"]
crowd = {s["schedule"]["name"]: s["schedule"] for s in report["schedules"]}
assert crowd["crowd-1"]["in_flight"] == 6 and crowd["crowd-1"]["shuffled"] and crowd["crowd-1"]["fillers"] == 0
assert crowd["crowd-2"]["fillers"] == 2 and crowd["crowd-3"]["stagger_seconds"] > 0
features = {f["feature"]: f for f in report["features"]}
assert features["beside a long-prompt filler"]["answers"] >= 12, features
assert all(f["differing"] == 0 for f in features.values()), features
suites = ET.parse(sys.argv[3]).getroot().findall("testsuite")
assert [s.get("name") for s in suites] == names and all(s.get("failures") == "0" for s in suites)
# serve's /metrics counted what the schedules made it do, its rows realigned enough to show a layout fault.
counters = report["server_counters"]
assert counters and counters["draft_tokens"] > 0 and counters["realignments"] >= 12, counters
assert report["coverage_warning"] is None, report["coverage_warning"]
PY
grep -q "^server counters (GET /metrics): .* realignments" "$work/correct-0.out" || fail "no server counters: $(cat "$work/correct-0.out")"
grep -q "Gate: \*\*passed\*\*" "$work/correct-0.md" || fail "Markdown lacks the gate"
grep -q '<h1>specgate differential: <span class="pass">passed</span></h1>' "$work/correct-0.html" || fail "HTML lacks the gate"
grep -q '<p>server counters (GET /metrics): ' "$work/correct-0.html" || fail "HTML lacks the server counters"
[ "$(grep -c '<tr>' "$work/correct-0.html")" -ge 11 ] || fail "HTML lacks the tables"
# Other dialects: text prompts (openai) and the chat endpoint, which renders the conversation.
for api in openai vllm-chat; do
  logprobs=()
  [ $api = vllm-chat ] && logprobs=(--top-logprobs 3)
  "$conformance" differential --endpoint "$correct" --api $api --model fixture --bench "$bench" --limit 8 \
    --max-new-tokens 16 --crowds 1 --max-in-flight 4 "${logprobs[@]}" --out-dir "$work/$api" >"$work/$api.out" 2>&1 ||
    fail "differential --api $api against a correct server: $(tail -3 "$work/$api.out")"
  grep -q "crowd-1 .*8 identical" "$work/$api.out" || fail "--api $api: $(cat "$work/$api.out")"
done
# Seeds draw the crowds (that one seed draws the same ones is schedule_test's).
"$python" - "$work/correct-1.json" "$work/correct-2.json" <<'PY' || fail "seeds draw the crowds"
import json, sys
a, b = (json.load(open(p))["schedules"] for p in sys.argv[1:3])
assert [s["schedule"] for s in a] != [s["schedule"] for s in b], "seeds 1 and 2 sent the same schedules"
PY

# Speculation off is one more schedule, answered alone by the second endpoint.
serve nonspec --engine nonspec-batch --batch-size 4 || exit 1
differential "$correct" --crowds 1 --spec-off-endpoint "$url" --out-dir "$work/spec-off" --json "$work/spec-off.json" \
  >"$work/spec-off.out" 2>&1 || fail "speculation off differs: $(cat "$work/spec-off.out")"
grep -q '"name": "spec-off"' "$work/spec-off.json" || fail "no spec-off schedule in the report"

# Faults only a crowd shows: alone, the same answers as a correct server; in a crowd, hard
# differences (or questions never answered), and exit 1. Tokens only, each difference
# attributed by re-scoring: no log-probabilities asked.
for fault in wrong-sequence-kv kv-not-shifted stale-position-ids mask-lets-padding-through group-mixed-lengths \
             refill-loses-sequence refill-duplicates-sequence; do
  serve "$fault" "${exspec[@]}" --inject-fault "$fault" || continue
  # A request whose sequence the server lost is never answered: a shorter wait tells it.
  crowd_timeout=8
  [ "$fault" = refill-loses-sequence ] && crowd_timeout=3
  crowds "$url" --crowds 2 --rescore-with "$fixtures/target" --dtype float64 --out-dir "$work/$fault" \
    --json "$work/$fault.json" >"$work/$fault.out" 2>&1
  status=$?
  [ $status -eq 1 ] || fail "$fault: exit $status, not 1: $(tail -3 "$work/$fault.out")"
  "$conformance" score --reference "$work/correct-0/alone.jsonl" --candidate "$work/$fault/alone.jsonl" >/dev/null ||
    fail "$fault changes answers alone: it is not a crowd fault"
  "$python" - "$work/$fault.json" "$fault" <<'PY' || fail "$fault: report"
import json, sys
report = json.load(open(sys.argv[1]))
kinds = [d["kind"] for s in report["schedules"][1:] for d in s["differences"]]
expected = "missing" if sys.argv[2].startswith("refill") else "hard"
assert expected in kinds, kinds
assert not report["gate"]["passed"]
PY
  stop_server
done

# Faults of what a speculative server reports besides tokens: the tokens are right, the reports
# cannot be. Each as NAME:KIND:API, KIND a finding it must give.
for fault in zeroed-logprobs:logprobs_zero:vllm stale-logprobs:logprob_not_chosen:vllm usage-counts-drafted:usage:vllm \
             shifted-prompt-logprobs:prompt_logprob_mismatch:vllm zeroed-drafted-logprobs:logprob_chosen_mismatch:vllm \
             zeroed-drafted-logprobs:logprob_zero_chosen:vllm-chat unsorted-logprobs:logprob_order:vllm-chat \
             unnormalized-logprobs:logprob_positive:vllm; do
  IFS=: read -r name kind api <<<"$fault"
  asks=(--api "$api" --model fixture --bench "$bench" --max-new-tokens 24 --top-logprobs 3)
  [ "$api" = vllm ] && asks+=(--target "$fixtures/target" --prompt-logprobs 2)
  serve "$name" "${exspec[@]}" --inject-fault "$name" || continue
  "$conformance" differential --endpoint "$url" "${asks[@]}" --limit 8 --max-in-flight 6 \
    --timeout 8 --retries 0 --rescore-with "$fixtures/target" --dtype float64 --crowds 1 --out-dir "$work/$name-$api" \
    --json "$work/$name-$api.json" >"$work/$name-$api.out" 2>&1
  status=$?
  [ $status -eq 1 ] || fail "$name: exit $status, not 1: $(tail -3 "$work/$name-$api.out")"
  "$python" - "$work/$name-$api.json" "$kind" <<'PY' || fail "$name --api $api: report"
import json, sys
report = json.load(open(sys.argv[1]))
for s in report["schedules"]:
    assert s["identical"] == 8 and not s["differences"], s
    kinds = {f["kind"] for f in s["side_channels"]["findings"]}
    assert sys.argv[2] in kinds, kinds
    assert len({f["question_id"] for f in s["side_channels"]["findings"]}) == 8, s["side_channels"]["findings"]
PY
  # Without re-scoring, the server's own figures give it away.
  "$conformance" differential --endpoint "$url" "${asks[@]}" --limit 4 --crowds 1 --out-dir "$work/$name-$api-alone" \
    >"$work/$name-$api-alone.out" 2>&1
  status=$?
  [ $status -eq 1 ] || fail "$name --api $api without --rescore-with: exit $status, not 1"
  grep -q "$kind" "$work/$name-$api-alone.out" || fail "$name --api $api without --rescore-with: no $kind in $(cat "$work/$name-$api-alone.out")"
  stop_server
done

# Streams, on questions whose answers run in Cyrillic, Greek, CJK and accented Latin, whose
# characters rounds split: EXSPEC and EQSPEC servers, correct, stream alone and in crowds what
# they answer whole (through the completions and the chat endpoint), and so does a server
# verifying EAGLE-2's dynamic token trees; each seeded stream fault
# fails differential --stream with exit 1, naming the chunk, and passes without --stream.
multibyte=$(dirname "$bench")/multibyte.jsonl
streamed() {
  "$conformance" differential --endpoint "$1" --model fixture --bench "$multibyte" \
    --max-new-tokens 24 --max-in-flight 4 --fillers 1 --filler-chars 200 --timeout 8 --retries 0 "${@:2}"
}
serve stream-eqspec --engine eqspec --draft "$fixtures/draft" --batch-size 3 || exit 1
eqspec_url=$url
serve stream-tree --engine eqspec --draft "$fixtures/draft" --batch-size 3 --tree-topk 2 --tree-depth 3 --tree-nodes 5 ||
  exit 1
streamed "$url" --api vllm --target "$fixtures/target" --stream --crowds 1 --out-dir "$work/stream-tree" \
  >"$work/stream-tree.out" 2>&1 || fail "differential --stream against serve --tree: $(tail -3 "$work/stream-tree.out")"
for endpoint in "$correct" "$eqspec_url"; do
  for api in "vllm --target $fixtures/target" vllm-chat; do
    name=${api%% *}
    streamed "$endpoint" --api $api --stream --crowds 2 --out-dir "$work/stream-$name" --json "$work/stream-$name.json" \
      >"$work/stream-$name.out" 2>&1 || fail "differential --stream --api $api against a correct server: $(tail -3 "$work/stream-$name.out")"
  done
done
"$python" - "$work/stream-vllm.json" "$schema" <<'PY' || fail "the report of a streamed run"
import json, sys
report, schema = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
import jsonschema
jsonschema.validate(report, schema)
assert report["settings"]["stream"] and [s["schedule"]["streamed"] for s in report["schedules"]] == [False, True, True, True]
sizes = {c["tokens"] for c in report["schedules"][1]["chunk_sizes"]}
assert max(sizes) > 1, sizes  # a round's accepted tokens arrive together
PY
# Each as NAME:KIND:WHERE, WHERE what the first finding's detail must name.
for fault in "stream-last-token-only:stream_usage:its chunks give" "stream-cut-utf8:stream_text:chunk [0-9]*, byte" \
             "stream-usage-counts-drafted:stream_usage:usage counts" "stream-chunk-after-finish:missing:chunk [0-9]*:"; do
  IFS=: read -r name kind where <<<"$fault"
  serve "$name" "${exspec[@]}" --inject-fault "$name" || continue
  streamed "$url" --api vllm --target "$fixtures/target" --stream --crowds 1 --out-dir "$work/$name" >"$work/$name.out" 2>&1
  status=$?
  [ $status -eq 1 ] || fail "$name: differential --stream exit $status, not 1: $(tail -3 "$work/$name.out")"
  grep -q "stream-alone: [0-9]* $kind (question .*; first: .*$where" "$work/$name.out" ||
    fail "$name: no $kind naming $where in $(cat "$work/$name.out")"
  streamed "$url" --api vllm --target "$fixtures/target" --crowds 1 --out-dir "$work/$name-whole" >"$work/$name-whole.out" 2>&1 ||
    fail "$name: the whole answers fail: $(tail -3 "$work/$name-whole.out")"
  stop_server
done

# SIGTERM (a background job ignores SIGINT) while the first schedule runs: the requests in flight
# finish, and it exits 130 as collect does.
"$conformance" differential --endpoint "$correct" --api vllm --model fixture --bench "$bench" --limit 12 \
  --max-new-tokens 24 --crowds 1 --out-dir "$work/interrupted" >"$work/interrupted.out" 2>&1 &
interrupted=$!
for _ in $(seq 300); do [ -d "$work/interrupted" ] && break; sleep 0.05; done
sleep 0.3
kill -TERM $interrupted
wait $interrupted
status=$?
[ $status -eq 130 ] || fail "SIGTERM: exit $status, not 130: $(tail -2 "$work/interrupted.out")"
grep -q "differential: interrupted in schedule alone" "$work/interrupted.out" || fail "SIGTERM: $(tail -2 "$work/interrupted.out")"

# A server that answers a token id past the re-scoring target's vocabulary (2^31 - 1) fails the
# gate, each turn named, rather than passing.
"$python" - "$work/impossible.port" <<'PY' &
import json, sys, http.server
class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"choices": [{"index": 0, "text": "a", "token_ids": [1, 2147483647], "finish_reason": "length"}],
                           "usage": {"completion_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
open(sys.argv[1] + ".tmp", "w").write(str(server.server_address[1]))
__import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
server.serve_forever()
PY
servers+=($!)
for _ in $(seq 100); do [ -s "$work/impossible.port" ] && break; sleep 0.1; done
"$conformance" differential --endpoint "http://127.0.0.1:$(cat "$work/impossible.port")" --api vllm --model fixture \
  --bench "$bench" --limit 2 --max-new-tokens 2 --crowds 1 --fillers 0 --retries 0 --timeout 8 \
  --rescore-with "$fixtures/target" --dtype float64 --out-dir "$work/impossible" --json "$work/impossible.json" \
  >"$work/impossible.out" 2>&1
status=$?
[ $status -eq 1 ] || fail "an id past the vocabulary: exit $status, not 1: $(tail -3 "$work/impossible.out")"
"$python" - "$work/impossible.json" <<'PY' || fail "an id past the vocabulary is not named: $(tail -3 "$work/impossible.out")"
import json, sys
report = json.load(open(sys.argv[1]))
found = [f for s in report["schedules"] for f in s["side_channels"]["findings"] if f["kind"] == "token_beyond_vocabulary"]
assert len(found) == 4 and "token 2147483647 is beyond the model's vocabulary of 259" in found[0]["detail"], found
PY

# Bad input: exit 2, one line.
args=(differential --api vllm --model fixture --bench "$bench" --out-dir "$work/bad")
expect_usage_error "expected http://HOST[:PORT][/PREFIX]" "${args[@]}" --endpoint "$correct" --spec-off-endpoint ftp://x
expect_usage_error "--dtype: only used with --rescore-with DIR" "${args[@]}" --endpoint "$correct" --dtype float64
expect_usage_error "--endpoint http://127.0.0.1:1: no server answers (Connection refused)" "${args[@]}" --endpoint http://127.0.0.1:1
expect_usage_error "--model 'other': the server at $correct serves 'fixture' (GET /v1/models)" differential --api vllm \
  --model other --bench "$bench" --out-dir "$work/bad" --endpoint "$correct"
expect_usage_error "--endpoint http://127.0.0.1:1: no server answers" "${args[@]}" --endpoint "$correct" \
  --spec-off-endpoint http://127.0.0.1:1
expect_usage_error "--crowds" "${args[@]}" --endpoint "$correct" --crowds 0
expect_usage_error "--logprob-tolerance: must be a finite number of nats >= 0" "${args[@]}" --endpoint "$correct" --logprob-tolerance -1
expect_usage_error "--stream: log-probabilities are not read from streams" "${args[@]}" --endpoint "$correct" --stream \
  --top-logprobs 2
expect_usage_error "--prompt-logprobs: the tgi API does not report prompt log-probabilities" differential --api tgi \
  --model fixture --bench "$bench" --out-dir "$work/bad" --endpoint "$correct" --prompt-logprobs 2
finish differential_cli
