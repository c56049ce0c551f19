#!/usr/bin/env bash
# Re-scoring through the reference engine (--rescore-endpoint) against serve on the fixture pair
# in float64: every verdict that re-scores (score's attribution, sampling, acceptance, and
# differential's log-probability checks) gives what re-scoring with the checkpoint gives; a
# token whose PIT lies past the returned top k is counted and left out, never guessed; a rerun
# reads the replies back from --rescore-cache; and a reply without prompt log-probabilities,
# with fewer than asked, or about other ids is one line naming the request, exit 2.
set -uo pipefail
conformance=$1 fixtures=$2 bench=$3
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/cli_checks.sh"
python=/usr/bin/python3
[ -x "$python" ] || python=python3
bench="$(dirname "$bench")/short_prompts.jsonl"
vocab=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["vocab_size"])' "$fixtures/target/config.json")
read -ra eos_ids <<<"$("$python" -c 'import json, sys; e = json.load(open(sys.argv[1]))["eos_token_id"]
print(" ".join(f"--rescore-eos-id {i}" for i in (e if isinstance(e, list) else [e])))' "$fixtures/target/config.json")"

pids=()
trap 'for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done; rm -rf "$work"' EXIT
# start NAME COMMAND...: runs a server whose log names its port, and sets $port.
start() {
  local name=$1
  shift
  "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  port=""
  for _ in $(seq 600); do
    port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/$name.log")
    [ -n "$port" ] && return
    sleep 0.1
  done
  fail "$name did not start: $(cat "$work/$name.log")"
}
serve() { start "$1" "$conformance" serve --target "$2" --engine nonspec-batch --dtype float64 --port 0 --model fixture; }
serve target "$fixtures/target"
target_url="http://127.0.0.1:$port"
serve draft "$fixtures/draft"
draft_url="http://127.0.0.1:$port"
endpoint=(--rescore-endpoint "$target_url" --rescore-vocab-size "$vocab")
remote=("${endpoint[@]}" --rescore-dtype float64)

# same NAME A.json B.json PATHS...: the two reports agree on each dotted path.
same() {
  "$python" - "$@" <<'PY' || fail "$1: the reports differ"
import json, sys
name, a, b = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
def at(report, path):
    for key in path.split("."):
        report = report[int(key)] if isinstance(report, list) else report[key]
    return report
def close(x, y):
    if isinstance(x, float) or isinstance(y, float):
        return abs(x - y) <= 1e-4 * max(1.0, abs(x))
    if isinstance(x, list):
        return len(x) == len(y) and all(close(p, q) for p, q in zip(x, y))
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(close(x[k], y[k]) for k in x)
    return x == y
bad = [f"{p}: {at(a, p)} != {at(b, p)}" for p in sys.argv[4:] if not close(at(a, p), at(b, p))]
if bad:
    print(name, *bad, sep="\n  ")
    sys.exit(1)
PY
}

# Sampling, top-k 12 inside the 20 returned: every token exact, the verdict the checkpoint's.
"$conformance" generate --engine eqspec --target "$fixtures/target" --draft "$fixtures/draft" --draft-tokens 3 \
  --bench "$bench" --dtype float64 --max-new-tokens 24 --batch-size 6 --temperature 0.8 --top-k 12 --top-p 0.9 \
  --seed 3 --limit 8 --out "$work/sampled.jsonl" >/dev/null || fail "generate sampled"
"$conformance" sampling --target "$fixtures/target" --answers "$work/sampled.jsonl" --json "$work/local.json" >/dev/null ||
  fail "sampling --target"
"$conformance" sampling "${remote[@]}" --answers "$work/sampled.jsonl" --engine-dtype float64 --json "$work/remote.json" \
  --rescore-cache "$work/cache" >"$work/remote.out" 2>&1 || fail "sampling --rescore-endpoint: $(cat "$work/remote.out")"
same sampling "$work/local.json" "$work/remote.json" verdict answers.tokens answers.outside_support answers.boundary \
  answers.pit_histogram answers.uniformity groups
"$python" - "$work/remote.json" <<'PY' || fail "sampling: tokens past the top k"
import json, sys
assert json.load(open(sys.argv[1]))["answers"]["beyond_top_k"] == []
PY
grep -q "re-scored through $target_url: 8 requests" "$work/remote.out" || fail "sampling: cost line $(cat "$work/remote.out")"
# Top-k 12 with only the top 12 returned: the unseen entries, filled behind the 12th, stay behind
# it once tempered, so every token is still exact.
"$conformance" sampling "${remote[@]}" --rescore-top-k 12 --answers "$work/sampled.jsonl" --engine-dtype float64 \
  --json "$work/top12.json" >/dev/null 2>&1 || fail "sampling --rescore-top-k 12"
same "sampling, the top 12 returned" "$work/local.json" "$work/top12.json" verdict answers.tokens answers.pit_histogram groups
"$python" - "$work/top12.json" <<'PY' || fail "sampling, the top 12 returned: tokens left out"
import json, sys
beyond = json.load(open(sys.argv[1]))["answers"]["beyond_top_k"]
assert beyond == [], f"{len(beyond)} tokens left out"
PY
# A rerun asks the engine nothing.
"$conformance" sampling "${remote[@]}" --answers "$work/sampled.jsonl" --engine-dtype float64 --rescore-cache "$work/cache" \
  >"$work/rerun.out" 2>&1 || fail "sampling rerun"
grep -q ": 0 requests (0 retries, 8 replies from the cache)" "$work/rerun.out" || fail "rerun: $(cat "$work/rerun.out")"

# A re-scorer computing in bfloat16 widens the float64 engine's support margins by its own.
"$conformance" sampling "${endpoint[@]}" --rescore-dtype bfloat16 --answers "$work/sampled.jsonl" --engine-dtype float64 \
  --rescore-cache "$work/cache" --json "$work/rescorer-bf16.json" >/dev/null 2>&1
"$python" - "$work/rescorer-bf16.json" "$work/remote.json" <<'PY' || fail "sampling: the re-scorer's dtype does not widen the margins"
import json, sys
wide, exact = (json.load(open(p))["support_margin"] for p in sys.argv[1:3])
assert wide["rescorer_dtype"] == "bfloat16" and exact["rescorer_dtype"] == "float64", (wide, exact)
assert abs(wide["logits"] - (exact["logits"] + 4)) < 1e-12 and abs(wide["mass"] - (exact["mass"] + 0.12)) < 1e-12, (wide, exact)
PY

# Temperature 1 alone and the top 3 returned: a token among the 3 is tested, and only a token
# ranked past them can be left out (where the mass the 3 leave unseen could hold a token ahead of it).
"$conformance" generate --engine nonspec-batch --target "$fixtures/target" --bench "$bench" --dtype float64 \
  --max-new-tokens 24 --batch-size 6 --temperature 1 --seed 5 --limit 6 --out "$work/plain.jsonl" >/dev/null ||
  fail "generate plain"
"$conformance" sampling "${remote[@]}" --rescore-top-k 3 --answers "$work/plain.jsonl" --json "$work/top3.json" >/dev/null 2>&1
"$python" - "$work/top3.json" "$work/plain.jsonl" "$target_url" <<'PY' || fail "sampling past the top 3"
import json, sys, urllib.request
top3 = json.load(open(sys.argv[1]))
beyond = {(t["line"], t["turn"], t["position"]) for t in top3["answers"]["beyond_top_k"]}
assert 0 < len(beyond) < top3["answers"]["tokens"], len(beyond)
assert top3["groups"][0]["test"]["n"] == top3["answers"]["tokens"] - len(beyond)
ranked_past = set()
for line, answer in enumerate(open(sys.argv[2]), 1):
    choice = json.loads(answer)["choices"][0]
    prompt, tokens = choice["prompt_token_ids"][0], choice["token_ids"][0]
    body = json.dumps({"model": "fixture", "prompt": prompt + tokens, "max_tokens": 1, "prompt_logprobs": 20}).encode()
    request = urllib.request.Request(sys.argv[3] + "/v1/completions", body, {"Content-Type": "application/json"})
    rows = json.load(urllib.request.urlopen(request))["choices"][0]["prompt_logprobs"][len(prompt):]
    for i, (row, token) in enumerate(zip(rows, tokens)):
        ranked = [-k for _, k in sorted(((v["logprob"], -int(k)) for k, v in row.items()), reverse=True)]
        if token not in ranked[:3]:
            ranked_past.add((line, 0, i))
assert beyond <= ranked_past, sorted(beyond - ranked_past)[:5]
PY

# Score: a faulty engine's greedy divergences attributed as the checkpoint attributes them, with
# the top 1 (the candidate asked on its own where it is not the most likely).
"$conformance" generate --engine nonspec-batch --target "$fixtures/target" --bench "$bench" --dtype float64 \
  --max-new-tokens 24 --batch-size 6 --limit 8 --out "$work/reference.jsonl" >/dev/null || fail "generate reference"
"$conformance" generate --engine eqspec --target "$fixtures/target" --draft "$fixtures/draft" --draft-tokens 3 \
  --bench "$bench" --dtype float64 --max-new-tokens 24 --batch-size 6 --limit 8 --inject-fault bonus-from-draft \
  --out "$work/candidate.jsonl" >/dev/null || fail "generate candidate"
"$conformance" score --reference "$work/reference.jsonl" --candidate "$work/candidate.jsonl" --rescore-with "$fixtures/target" \
  --dtype float64 --json "$work/score-local.json" >/dev/null
"$conformance" score --reference "$work/reference.jsonl" --candidate "$work/candidate.jsonl" "${remote[@]}" --rescore-top-k 1 \
  --json "$work/score-remote.json" >"$work/score.out" 2>&1
[ $? -ne 2 ] || fail "score --rescore-endpoint: $(cat "$work/score.out")"
"$python" - "$work/score-local.json" "$work/score-remote.json" <<'PY' || fail "score: attributions differ"
import json, sys
local, remote = (json.load(open(p)) for p in sys.argv[1:3])
def divergences(report):
    return [q["first_divergence"] for q in report["items"] if q["first_divergence"]]
a, b = divergences(local), divergences(remote)
rescored = [d for d in a if d.get("margin_source") == "rescore"]
assert len(a) == len(b) and rescored, (len(a), len(b), len(rescored))
for x, y in zip(a, b):
    assert x["attribution"] == y["attribution"] and x.get("margin_source") == y.get("margin_source"), (x, y)
    for key in ("margin", "reference_logprob", "candidate_logprob"):
        assert (x.get(key) is None) == (y.get(key) is None) and abs((x.get(key) or 0) - (y.get(key) or 0)) <= 1e-4, (key, x, y)
assert remote["settings"]["rescore_with"]["endpoint"].startswith("http://"), remote["settings"]["rescore_with"]
PY
# Through a re-scorer in bfloat16, every divergence's near-tie threshold takes in its rounding.
"$conformance" score --reference "$work/reference.jsonl" --candidate "$work/candidate.jsonl" "${endpoint[@]}" --rescore-top-k 1 \
  --rescore-dtype bfloat16 --json "$work/score-bf16.json" >/dev/null 2>&1
"$python" - "$work/score-bf16.json" <<'PY' || fail "score: the re-scorer's dtype does not widen the near-tie threshold"
import json, sys
report = json.load(open(sys.argv[1]))
thresholds = [q["first_divergence"]["near_tie_threshold"] for q in report["items"] if q["first_divergence"]]
assert thresholds and min(thresholds) >= 0.9 and report["settings"]["rescore_with"]["dtype"] == "bfloat16", thresholds
PY

# Acceptance, greedy and sampled, with the draft served alone beside the target.
accept() {
  local name=$1
  shift
  "$conformance" acceptance --target "$fixtures/target" --draft "$fixtures/draft" "$@" --json "$work/$name-local.json" >/dev/null
  "$conformance" acceptance "${remote[@]}" "${eos_ids[@]}" --draft-endpoint "$draft_url" "$@" --json "$work/$name-remote.json" \
    >"$work/$name.out" 2>&1
  [ $? -ne 2 ] || fail "acceptance $name --rescore-endpoint: $(cat "$work/$name.out")"
  same "acceptance $name" "$work/$name-local.json" "$work/$name-remote.json" rejected rounds test mismatches
}
"$conformance" generate --engine eqspec --target "$fixtures/target" --draft "$fixtures/draft" --draft-tokens 3 \
  --bench "$bench" --dtype float64 --max-new-tokens 24 --batch-size 6 --limit 8 --out "$work/greedy.jsonl" >/dev/null ||
  fail "generate greedy"
accept greedy --answers "$work/greedy.jsonl"
"$conformance" acceptance "${endpoint[@]}" "${eos_ids[@]}" --rescore-dtype bfloat16 --draft-endpoint "$draft_url" \
  --answers "$work/greedy.jsonl" --json "$work/greedy-bf16.json" >/dev/null 2>&1
"$python" - "$work/greedy-bf16.json" <<'PY' || fail "acceptance: the re-scorer's dtype does not widen the near-tie threshold"
import json, sys
assert json.load(open(sys.argv[1]))["near_tie_threshold"] == 0.9
PY
# Without the EOS ids a checkpoint would give, acceptance through an engine is refused.
"$conformance" acceptance "${remote[@]}" --draft-endpoint "$draft_url" --answers "$work/greedy.jsonl" \
  >"$work/no-eos.out" 2>&1
[ $? -eq 2 ] && grep -q "^conformance: error: --rescore-eos-id: " "$work/no-eos.out" ||
  fail "acceptance without --rescore-eos-id: $(cat "$work/no-eos.out")"
accept sampled --answers "$work/sampled.jsonl" --engine-dtype float64

# Differential: the server's log-probabilities checked against the engine's own re-scoring.
"$conformance" differential --endpoint "$target_url" --api vllm --model fixture --bench "$bench" --limit 4 \
  --max-new-tokens 16 --top-logprobs 2 --crowds 1 --out-dir "$work/differential" "${remote[@]}" \
  --json "$work/differential.json" >"$work/differential.out" 2>&1 || fail "differential: $(cat "$work/differential.out")"
"$python" - "$work/differential.json" <<'PY' || fail "differential: turns not re-scored"
import json, sys
for schedule in json.load(open(sys.argv[1]))["schedules"]:
    side = schedule["side_channels"]
    assert side["rescored_turns"] == side["checked_turns"] > 0 and side["findings"] == [], side
PY

# No local model anywhere: collect reads the ids back from the server, and sampling re-scores
# through it.
"$conformance" collect --endpoint "$target_url" --api vllm --model fixture --bench "$bench" --limit 6 --max-new-tokens 16 \
  --temperature 0.8 --top-k 12 --seed 9 --concurrency 4 --tokenizer-from-server --engine-dtype float64 \
  --out "$work/served.jsonl" >"$work/collect.out" 2>&1 || fail "collect --tokenizer-from-server: $(cat "$work/collect.out")"
"$conformance" sampling "${remote[@]}" --answers "$work/served.jsonl" >"$work/served.out" 2>&1 ||
  fail "sampling with no checkpoint: $(cat "$work/served.out")"
grep -q "^verdict passed" "$work/served.out" || fail "no verdict: $(cat "$work/served.out")"
expect_usage_error "--tokenizer-from-server: the openai API does not give back" collect --endpoint "$target_url" \
  --api openai --model fixture --bench "$bench" --tokenizer-from-server --out "$work/text.jsonl"

# Bad replies: a server that leaves out prompt log-probabilities, returns fewer than asked, or
# scores other ids than those sent.
for mode in missing short ids; do
  start "fake-$mode" "$python" "$here/fake_rescore_server.py" "$mode"
  expect_usage_error "--rescore-endpoint http://127.0.0.1:$port: request " sampling --rescore-endpoint "http://127.0.0.1:$port" \
    --rescore-vocab-size "$vocab" --rescore-dtype float64 --answers "$work/sampled.jsonl" --engine-dtype float64 \
    --rescore-retries 0
  case $mode in
    missing) grep -q "no prompt log-probabilities in the reply" "$work/stderr" || fail "missing: $(cat "$work/stderr")" ;;
    short) grep -q "log-probabilities returned, the top 20 asked" "$work/stderr" || fail "short: $(cat "$work/stderr")" ;;
    ids) grep -q "prompt_token_ids differ from the ids sent" "$work/stderr" || fail "ids: $(cat "$work/stderr")" ;;
  esac
done
expect_usage_error "--rescore-api openai: " sampling --rescore-endpoint "$target_url" --rescore-api openai \
  --rescore-vocab-size "$vocab" --rescore-dtype float64 --answers "$work/sampled.jsonl"
expect_usage_error "--target or --rescore-endpoint" sampling --answers "$work/sampled.jsonl"
expect_usage_error "needs --rescore-vocab-size" sampling --rescore-endpoint "$target_url" --answers "$work/sampled.jsonl"
expect_usage_error "needs --rescore-dtype" sampling "${endpoint[@]}" --answers "$work/sampled.jsonl"

finish "rescore endpoint"
