#!/usr/bin/env bash
# End-to-end checks of `conformance sampling` on the fixture pair in float64: sampled answers of
# the correct engines pass, every sampling fault of the catalogue is rejected at the sample size
# the README recommends, the two-sample test against speculation off passes a correct engine and
# rejects a faulty one, a token outside the support beyond the margin rejects on its own while
# answers that share a random stream are refused, the reports follow their schema, and bad input exits 2 with one line naming the
# file, line and field.
set -uo pipefail
conformance=$1 fixtures=$2 bench=$3 schema=$4
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"
python=/usr/bin/python3
[ -x "$python" ] || python=python3

# The sample bench with short prompts (fixtures/bench/short_prompts.jsonl: BOS and each turn's
# first 23 bytes, the fixture's byte-level ids), so that re-scoring costs little beside the 48
# tokens of each answer.
bench="$(dirname "$bench")/short_prompts.jsonl"

# sample OUT ENGINE SEED [generate options]: 30 questions, 48 tokens, T 0.8 (or $temperature),
# top-k 12, top-p 0.9.
sample() {
  local out=$1 engine=$2 seed=$3
  shift 3
  local options=()
  [ "$engine" = nonspec-batch ] || options=(--draft "$fixtures/draft" --draft-tokens 3)
  "$conformance" generate --engine "$engine" --target "$fixtures/target" --bench "$bench" --dtype float64 \
    --max-new-tokens 48 --batch-size 6 --temperature "${temperature:-0.8}" --top-k 12 --top-p 0.9 --seed "$seed" \
    "${options[@]}" --out "$out" "$@" >/dev/null || fail "generate $engine $*"
}
# At alpha 0.01: a correct engine's fixed draws pass, which a false alarm at 0.05 (measured by
# ci/sampling_power.sh) would otherwise make a matter of the seeds.
# The PIT seed fixed, so that these checks do not rest on the seed the answers' tokens derive.
check() { "$conformance" sampling --target "$fixtures/target" --alpha 0.01 --pit-seed 0 "$@"; }

# A correct engine passes the one-sample test, and the reports say so.
for seed in 1 2; do sample "$work/eqspec-$seed.jsonl" eqspec "$seed"; done
check --answers "$work/eqspec-1.jsonl" --answers "$work/eqspec-2.jsonl" --json "$work/report.json" \
  --markdown "$work/report.md" --html "$work/report.html" --junit "$work/report.xml" >"$work/pass.out" ||
  fail "correct eqspec rejected: $(cat "$work/pass.out")"
"$python" - "$schema" "$work/report.json" "$work/eqspec-1.jsonl" "$work/eqspec-2.jsonl" <<'PY' || fail "JSON report"
import json, sys
import jsonschema
schema, report = (json.load(open(p)) for p in sys.argv[1:3])
jsonschema.Draft202012Validator(schema).validate(report)
tokens = sum(len(turn) for path in sys.argv[3:] for line in open(path)
             for turn in json.loads(line)["choices"][0]["token_ids"])
assert report["verdict"] == "passed" and report["test"] == "one-sample", report["verdict"]
assert report["answers"]["tokens"] == tokens == report["groups"][0]["test"]["n"], (report["answers"]["tokens"], tokens)
assert sum(report["answers"]["pit_histogram"]) == tokens
assert report["sampling"] == {"temperature": 0.8, "top_k": 12, "top_p": 0.9, "min_p": 0.0, "source": "answers",
                              "warper_order": "temperature, top-k, top-p, min-p"}, report["sampling"]
assert report["groups"][0]["name"] == "all" and len(report["groups"]) > 2, [g["name"] for g in report["groups"]]
assert report["support_margin"] == {"logits": 1e-6, "mass": 1e-9, "engine_dtype": "float64",
                                   "rescorer_dtype": "float64", "source": "answers"}, \
    report["support_margin"]
assert report["family_size"] == len(report["groups"]) and report["support_rates"] == []
assert report["boundary_rate"] is None, report["boundary_rate"]
low, high = report["answers"]["pit_histogram_band"]
assert all(low <= count <= high for count in report["answers"]["pit_histogram"]), (low, high)
PY
grep -q "^# specgate sampling: passed" "$work/report.md" || fail "Markdown report"
grep -q "<svg" "$work/report.html" || fail "HTML report has no histogram"
grep -q 'failures="0"' "$work/report.xml" || fail "JUnit report"

# On a terminal (script gives it one), a progress bar over the answers while they are re-scored.
script -qec "$conformance sampling --target $fixtures/target --answers $work/eqspec-1.jsonl \
  --answers $work/eqspec-2.jsonl" /dev/null >"$work/terminal.out" 2>&1
grep -q "sampling \[.*\] 60/60" "$work/terminal.out" ||
  fail "no progress bar on a terminal: $(tr '\r' '\n' <"$work/terminal.out" | head -3)"

# The derived PIT seed follows the answers' tokens, not the files' timestamps.
"$python" -c '
import json, sys
for line in open(sys.argv[1]):
    answer = json.loads(line)
    answer["tstamp"] += 1000
    print(json.dumps(answer))' "$work/eqspec-1.jsonl" >"$work/eqspec-1-later.jsonl"
for answers in eqspec-1 eqspec-1-later; do
  "$conformance" sampling --target "$fixtures/target" --answers "$work/$answers.jsonl" --json "$work/$answers-seed.json" \
    >/dev/null 2>&1
done
seeds=$("$python" -c 'import json, sys; print(*(json.load(open(p))["pit_seed"] for p in sys.argv[1:]))' \
  "$work/eqspec-1-seed.json" "$work/eqspec-1-later-seed.json")
[ "$(echo "$seeds" | wc -w)" = 2 ] && [ "${seeds% *}" = "${seeds#* }" ] ||
  fail "the derived PIT seed follows the files' timestamps: $seeds"

# Speculation off passes too, alone and as the baseline of the two-sample test.
sample "$work/nonspec-1.jsonl" nonspec-batch 11
sample "$work/nonspec-2.jsonl" nonspec-batch 12
check --answers "$work/nonspec-1.jsonl" --answers "$work/nonspec-2.jsonl" >"$work/out" || fail "nonspec-batch rejected"
check --answers "$work/eqspec-1.jsonl" --answers "$work/eqspec-2.jsonl" --baseline "$work/nonspec-1.jsonl" \
  --baseline "$work/nonspec-2.jsonl" --json "$work/two.json" >"$work/two.out" ||
  fail "two-sample rejected a correct engine: $(cat "$work/two.out")"
grep -q "two-sample" "$work/two.out" || fail "two-sample test not named"
"$python" - "$schema" "$work/two.json" <<'PY' || fail "two-sample JSON report"
import json, sys
import jsonschema
schema, report = (json.load(open(p)) for p in sys.argv[1:3])
jsonschema.Draft202012Validator(schema).validate(report)
for group in report["groups"]:
    permutation = group["permutation"]
    assert group["p_value"] == permutation["p_value"], group
    # A subtask of few questions has fewer relabellings than the permutations asked for (4
    # questions, 2 answers a side: 6^4 = 1296): each is drawn once.
    if permutation["exact"]:
        assert permutation["permutations"] < 1999, group
        assert abs(permutation["smallest_p_value"] - 1 / permutation["permutations"]) < 1e-15, group
    else:
        assert permutation["permutations"] == 1999, group
    # 2 answers a question on each side: every answer can be exchanged within its question.
    assert permutation["exchangeable_units"] == sum(permutation["units"]), permutation
assert report["groups"][0]["permutation"]["units"] == [60, 60], report["groups"][0]["permutation"]
PY

# Nor do the answers' order in their files (collect writes them as they finish) and the files'
# order on each side change any figure: seed, PIT values, permutations.
for answers in eqspec-1 nonspec-2; do tac "$work/$answers.jsonl" >"$work/$answers-reversed.jsonl"; done
for order in "eqspec-1 eqspec-2 nonspec-1 nonspec-2" "eqspec-2 eqspec-1-reversed nonspec-2-reversed nonspec-1"; do
  read -r first second third fourth <<<"$order"
  "$conformance" sampling --target "$fixtures/target" --answers "$work/$first.jsonl" --answers "$work/$second.jsonl" \
    --baseline "$work/$third.jsonl" --baseline "$work/$fourth.jsonl" --json "$work/order-$first.json" >/dev/null 2>&1
done
"$python" - "$work/order-eqspec-1.json" "$work/order-eqspec-2.json" <<'PY' || fail "the verdict follows the answers' order"
import json, sys
first, second = (json.load(open(p)) for p in sys.argv[1:])
figures = lambda r: (r["pit_seed"], r["answers"]["pit_histogram"], [(g["test"], g["permutation"]) for g in r["groups"]])
assert figures(first) == figures(second), (figures(first), figures(second))
PY

# The sampling faults that skew the distribution most are rejected at this size (2,880
# tokens) by the one-sample test and by the two-sample test, which compares with 2,880 tokens of
# its own; ci/sampling_power.sh measures the others at the size the README recommends.
# residual-not-normalised is not among them: at this size it sits at the one-sample test's reach
# (p from 0.0014 to 0.035 with the PIT's draws), so fixed draws would pass or fail by chance.
for fault in always-accept bonus-from-draft greedy-verification; do
  for seed in 1 2; do sample "$work/fault-$seed.jsonl" eqspec "$seed" --inject-fault "$fault"; done
  check --answers "$work/fault-1.jsonl" --answers "$work/fault-2.jsonl" >"$work/fault.out"
  status=$?
  [ $status -eq 1 ] || fail "$fault: exit $status, not 1 ($(grep -m1 ' all:' "$work/fault.out"))"
  echo "$fault: $(grep -m1 ' all:' "$work/fault.out")"
  check --answers "$work/fault-1.jsonl" --answers "$work/fault-2.jsonl" --baseline "$work/nonspec-1.jsonl" \
    --baseline "$work/nonspec-2.jsonl" >"$work/fault.out"
  status=$?
  [ $status -eq 1 ] || fail "$fault: two-sample exit $status, not 1"
done

# Through serve and collect: --samples asks each question several times, each request with a
# seed of its own that its answer records; --resume tells the samples apart; serve's seeded
# fault is rejected.
serve_pid=""
trap '[ -z "$serve_pid" ] || kill "$serve_pid" 2>/dev/null; rm -rf "$work"' EXIT
serve_collect() {
  local out=$1
  shift
  : >"$work/serve.out"
  "$conformance" serve --target "$fixtures/target" --draft "$fixtures/draft" --engine eqspec --dtype float64 --port 0 \
    --model fixture --batch-size 6 --draft-tokens 3 "$@" >"$work/serve.out" 2>&1 &
  serve_pid=$!
  local port=""
  for _ in $(seq 600); do
    port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/serve.out")
    [ -n "$port" ] && break
    sleep 0.1
  done
  for limit in 10 12; do  # the second run resumes the first
    "$conformance" collect --endpoint "http://127.0.0.1:$port" --api vllm --model fixture --bench "$bench" --out "$out" \
      --seed 40 --samples 4 --limit $limit --max-new-tokens 48 --temperature 0.8 --top-k 12 --top-p 0.9 \
      --concurrency 6 --resume >"$work/collect.out" 2>&1 || fail "collect $*: $(cat "$work/collect.out")"
  done
  grep -q "8 answers written, 40 already" "$work/collect.out" || fail "collect --resume: $(cat "$work/collect.out")"
  kill "$serve_pid"
  wait "$serve_pid"
  serve_pid=""
}
serve_collect "$work/served.jsonl"
"$python" - "$work/served.jsonl" <<'PY' || fail "collect --samples: seeds"
import json, sys
answers = [json.loads(line) for line in open(sys.argv[1])]
seeds = sorted((a["question_id"], a["run"]["sampling"]["seed"]) for a in answers)
questions = sorted({q for q, _ in seeds})
assert len(answers) == 48 and len(questions) == 12, (len(answers), questions)
assert seeds == sorted((q, 40 + i * 4 + j) for i, q in enumerate(questions) for j in range(4)), seeds
PY
# A server's answers do not say what dtype it decoded in: the margin needs --engine-dtype.
expect_usage_error "--engine-dtype: $work/served.jsonl:1 records no run.dtype" sampling --target "$fixtures/target" \
  --answers "$work/served.jsonl"
check --answers "$work/served.jsonl" --engine-dtype float64 >"$work/out" ||
  fail "served correct engine rejected: $(cat "$work/out")"
serve_collect "$work/served-fault.jsonl" --inject-fault greedy-verification
check --answers "$work/served-fault.jsonl" --engine-dtype float64 >"$work/out"
[ $? -eq 1 ] || fail "serve --inject-fault greedy-verification was not rejected"

# A token outside the top-k support rejects on its own.
"$python" - "$work/eqspec-1.jsonl" "$work/outside.jsonl" <<'PY'
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
lines[3]["choices"][0]["token_ids"][0][5] = 0 if lines[3]["choices"][0]["token_ids"][0][5] != 0 else 1
open(sys.argv[2], "w").write("".join(json.dumps(line) + "\n" for line in lines))
PY
check --answers "$work/outside.jsonl" --top-k 1 --temperature 0.8 >"$work/out"
[ $? -eq 1 ] || fail "a token outside the support passed"
grep -q "answers: [0-9]* tokens\? outside the shaped target distribution's support beyond the margin of 1e-06 logits and 1e-09 in mass (float64) (first: question" \
  "$work/out" || fail "outside: $(cat "$work/out")"

# Two samples: tokens outside the support reject on their own too, on either side; a warper bug
# that both sides share would otherwise pass. Each is an answer's last token, so that no other
# token's context changes.
"$python" - "$work/eqspec-1.jsonl" "$work/outside-ten.jsonl" <<'PY'
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
for line in lines[:10]:
    tokens = line["choices"][0]["token_ids"][0]
    tokens[-1] = 0 if tokens[-1] != 0 else 1
open(sys.argv[2], "w").write("".join(json.dumps(line) + "\n" for line in lines))
PY
check --answers "$work/outside-ten.jsonl" --baseline "$work/nonspec-1.jsonl" >"$work/out"
[ $? -eq 1 ] || fail "ten tokens outside the support, none in the baseline, passed: $(cat "$work/out")"
grep -q "answers: 10 tokens outside the shaped target distribution's support" "$work/out" ||
  fail "outside-ten: $(cat "$work/out")"
check --answers "$work/nonspec-1.jsonl" --baseline "$work/outside-ten.jsonl" >"$work/out"
[ $? -eq 1 ] || fail "ten tokens outside the support in the baseline passed: $(cat "$work/out")"
grep -q "baseline: 10 tokens outside the shaped target distribution's support" "$work/out" ||
  fail "outside-ten in the baseline: $(cat "$work/out")"

# min-p: answers sampled with it record it and pass; answers sampled without it hold tokens that
# min-p 0.3 cuts, which reject on their own.
sample "$work/min-p.jsonl" eqspec 3 --min-p 0.1
grep -q '"min_p":0.1' "$work/min-p.jsonl" || fail "run.sampling.min_p not recorded"
check --answers "$work/min-p.jsonl" --markdown "$work/min-p.md" >"$work/out" || fail "eqspec at min-p 0.1 rejected: $(cat "$work/out")"
grep -q "min-p 0.1" "$work/min-p.md" || fail "min-p not in the report"
check --answers "$work/eqspec-1.jsonl" --temperature 0.8 --top-k 12 --top-p 0.9 --min-p 0.3 >"$work/out"
[ $? -eq 1 ] || fail "min-p 0.3 passed answers sampled without it"
grep -q "outside the shaped target distribution's support" "$work/out" || fail "min-p outside: $(cat "$work/out")"

# Bad input: one line naming the file, line and field; exit 2, no report left behind.
temperature=0 sample "$work/greedy.jsonl" eqspec 1
expect_input_error "$work/r.json" "greedy.jsonl:1: field 'run.sampling.temperature'" sampling --target "$fixtures/target" \
  --answers "$work/greedy.jsonl" --json "$work/r.json"
sed 's/"prompt_token_ids":\[\[[0-9,]*\]\],//' "$work/eqspec-1.jsonl" >"$work/no-prompt.jsonl"
expect_input_error "$work/r.json" "no-prompt.jsonl:1: field 'prompt_token_ids'" sampling --target "$fixtures/target" \
  --answers "$work/no-prompt.jsonl" --json "$work/r.json"
expect_input_error "$work/r.json" "field 'run.sampling.seed'" sampling --target "$fixtures/target" \
  --answers "$work/eqspec-1.jsonl" --answers "$work/eqspec-1.jsonl" --json "$work/r.json"
# Ids no model can re-score and temperatures no engine samples at.
"$python" - "$work/eqspec-1.jsonl" "$work" <<'PY'
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
def write(name, change):
    with open(f"{sys.argv[2]}/{name}.jsonl", "w") as out:
        for line in lines:
            line = json.loads(json.dumps(line))
            change(line)
            out.write(json.dumps(line) + "\n")
write("empty-prompt", lambda line: line["choices"][0].update(prompt_token_ids=[[]]))
write("prompt-beyond", lambda line: line["choices"][0]["prompt_token_ids"][0].__setitem__(1, 2**31 - 1))
write("subnormal", lambda line: line["run"]["sampling"].update(temperature=5e-324))
PY
for bad in "empty-prompt:field 'prompt_token_ids': the prompt is empty" \
           "prompt-beyond:field 'prompt_token_ids': token 2147483647 is outside the target's vocabulary of 259" \
           "subnormal:field 'run.sampling.temperature': 4.941e-324 is below 1e-05, where engines decode greedily"; do
  for command in sampling acceptance; do
    expect_input_error "$work/r.json" "${bad%%:*}.jsonl:1: ${bad#*:}" $command --target "$fixtures/target" \
      $([ $command = acceptance ] && echo --draft "$fixtures/draft") --answers "$work/${bad%%:*}.jsonl" --json "$work/r.json"
  done
done
expect_usage_error "--temperature: 1e-310 is below 1e-05" sampling --target "$fixtures/target" --answers "$work/eqspec-1.jsonl" \
  --temperature 1e-310
# One seed on two questions, as a server sent one seed with every request: their draws share a stream.
"$python" - "$work/eqspec-1.jsonl" "$work/one-seed.jsonl" <<'PY'
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
for line in lines: del line["run"]["sampling"]["stream"]
open(sys.argv[2], "w").write("".join(json.dumps(line) + "\n" for line in lines))
PY
expect_input_error "$work/r.json" "one-seed.jsonl:2: field 'run.sampling.seed': seed 1 also at" sampling \
  --target "$fixtures/target" --answers "$work/one-seed.jsonl" --json "$work/r.json"
# The same seeds on both sides: the baseline's draws would share the answers' streams.
expect_input_error "$work/r.json" "field 'run.sampling.seed': seed 1 stream 0 also at" sampling \
  --target "$fixtures/target" --answers "$work/eqspec-1.jsonl" --baseline "$work/eqspec-1.jsonl" --json "$work/r.json"
# Answers of one question exchange between the sides only when drawn alike: a baseline with a
# shorter max_new_tokens, or another prompt, is refused.
"$python" - "$work/nonspec-1.jsonl" "$work" <<'PY'
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
for name, change in [("shorter", lambda line: line["run"].update(max_new_tokens=16)),
                     ("other-prompt", lambda line: line["choices"][0]["prompt_token_ids"][0].append(65))]:
    changed = json.loads(json.dumps(lines))
    change(changed[2])
    open(f"{sys.argv[2]}/{name}.jsonl", "w").write("".join(json.dumps(line) + "\n" for line in changed))
PY
for bad in "shorter:run.max_new_tokens" "other-prompt:prompt_token_ids"; do
  expect_input_error "$work/r.json" "${bad%%:*}.jsonl:3: field '${bad#*:}': question" sampling --target "$fixtures/target" \
    --answers "$work/eqspec-1.jsonl" --baseline "$work/${bad%%:*}.jsonl" --json "$work/r.json"
done
# A baseline of other questions leaves nothing to exchange.
head -5 "$work/nonspec-1.jsonl" >"$work/first-five.jsonl"
tail -5 "$work/eqspec-2.jsonl" >"$work/last-five.jsonl"
expect_input_error "$work/r.json" "--baseline: its answers are to none of the questions" sampling --target "$fixtures/target" \
  --answers "$work/last-five.jsonl" --baseline "$work/first-five.jsonl" --json "$work/r.json"
expect_usage_error "--engine-dtype: expected float64, float32, bfloat16 or float16, got 'int8'" sampling \
  --target "$fixtures/target" --answers "$work/eqspec-1.jsonl" --engine-dtype int8
# Seven groups at alpha 0.05: a permutation p-value must reach 0.05 / 7, which 99 permutations cannot.
expect_usage_error "--permutations: 99 cannot reach Holm's strictest level 0.007143 (alpha over 7 hypotheses); give at least 139" \
  sampling --target "$fixtures/target" --answers "$work/eqspec-1.jsonl" --baseline "$work/nonspec-1.jsonl" --permutations 99
expect_usage_error "--markdown: $work/same.out is also --json's path" sampling --target "$fixtures/target" \
  --answers "$work/eqspec-1.jsonl" --json "$work/same.out" --markdown "$work/same.out"
temperature=1.3 sample "$work/hot.jsonl" eqspec 3
expect_input_error "$work/r.json" "hot.jsonl:1: field 'run.sampling': temperature 1.3" sampling --target "$fixtures/target" \
  --answers "$work/eqspec-1.jsonl" --answers "$work/hot.jsonl" --json "$work/r.json"
expect_usage_error "--alpha" sampling --target "$fixtures/target" --answers "$work/eqspec-1.jsonl" --alpha 1.5
expect_usage_error "--temperature" sampling --target "$fixtures/target" --answers "$work/eqspec-1.jsonl" --top-k 3

finish "sampling CLI"
