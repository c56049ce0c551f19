#!/usr/bin/env bash
# End-to-end checks of `conformance score`: golden reports for the checked-in answers in
# score_golden/, the JSON report validated against its schema, scoring answers generated on the
# fixture pair and on the real Spec-Bench questions, divergence attribution from recorded
# log-probabilities and from re-scoring, and bad input exiting 2 with one line naming what is
# wrong. SPECGATE_UPDATE_GOLDEN=1 rewrites the golden reports instead of comparing them.
set -uo pipefail
conformance=$1 fixtures=$2 bench=$3 specbench=$4 schema=$5 golden=$6
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"

python=""
for candidate in /usr/bin/python3 python3; do
  if "$candidate" -c 'import jsonschema' 2>/dev/null; then python=$candidate; break; fi
done
if [ -z "$python" ]; then
  echo "FAIL: no python3 with jsonschema (Debian package python3-jsonschema, installed by ci/setup.sh)"
  exit 1
fi

# Fails unless the JSON report $1 follows the schema.
validate() {
  "$python" - "$schema" "$1" <<'EOF' || fail "$1 does not follow the schema"
import json, sys
import jsonschema
schema, report = (json.load(open(path, encoding="utf-8")) for path in sys.argv[1:3])
jsonschema.Draft202012Validator.check_schema(schema)
errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(report), key=lambda e: list(e.path))
for error in errors[:5]:
    print("  schema:", "/".join(map(str, error.path)) or "(root)", error.message[:200])
sys.exit(1 if errors else 0)
EOF
}

# Prints the value at a dotted path of a JSON file: query FILE 'summary.exact_match'.
query() {
  "$python" -c 'import json, sys
value = json.load(open(sys.argv[1], encoding="utf-8"))
for key in sys.argv[2].split("."):
    value = value[int(key)] if isinstance(value, list) else value[key]
print(json.dumps(value))' "$1" "$2"
}

expect_value() {  # file, path, expected JSON text
  local got
  got=$(query "$1" "$2")
  [ "$got" = "$3" ] || fail "$2 is $got, expected $3 ($1)"
}

score() { "$conformance" score "$@"; }

# --- golden reports: fixed input, timestamps normalised, paths relative to score_golden/ ---
(cd "$golden" && "$conformance" score --reference reference.jsonl --candidate candidate.jsonl --bench bench.jsonl \
  --max-hard-divergences 0 --json "$work/golden.json" --markdown "$work/golden.md" --junit "$work/golden.xml" \
  --html "$work/golden.html" >"$work/golden.stdout")
status=$?
[ $status -eq 1 ] || fail "golden: exit $status, expected 1 (the gate fails)"
sed -E 's/"generated_at": "[^"]*"/"generated_at": "<timestamp>"/' "$work/golden.json" >"$work/report.json"
cp "$work/golden.md" "$work/report.md"
sed -E 's/ timestamp="[^"]*"/ timestamp="<timestamp>"/' "$work/golden.xml" >"$work/report.junit.xml"
for name in report.json report.md report.junit.xml; do
  if [ "${SPECGATE_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$work/$name" "$golden/expected/$name"
  else
    diff -u "$golden/expected/$name" "$work/$name" || fail "golden $name differs (SPECGATE_UPDATE_GOLDEN=1 rewrites it)"
  fi
done
validate "$work/golden.json"
"$python" -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$work/golden.xml" || fail "JUnit report is not XML"
grep -q '<svg ' "$work/golden.html" || fail "HTML report has no chart"
grep -q '<h2>Speed per subtask</h2>' "$work/golden.html" || fail "HTML report has no speed table"
grep -q 'gate FAILED:' "$work/golden.stdout" || fail "golden: stdout lacks the verdict"
expect_value "$work/golden.json" summary.speed.tokens_per_pass 1.5
expect_value "$work/golden.json" by_subtask.mt_bench.speed.acceptance 0.3333333333333333
expect_value "$work/golden.json" by_subtask.translation.speed.speedup null
(cd "$golden" && "$conformance" score --reference reference.jsonl --candidate candidate.jsonl --min-exact 0 \
  --min-tokens-per-pass 1.6 --min-speedup 1.34 >"$work/speed_gate.stdout")
[ $? -eq 1 ] || fail "the speed gates did not fail"
grep -qF -- "tokens per target pass 1.5 is below --min-tokens-per-pass 1.6" "$work/speed_gate.stdout" ||
  fail "no tokens-per-pass gate reason: $(cat "$work/speed_gate.stdout")"
grep -qF -- "speedup 1.333x over the reference is below --min-speedup 1.34" "$work/speed_gate.stdout" ||
  fail "no speedup gate reason: $(cat "$work/speed_gate.stdout")"
expect_usage_error "--min-speedup: must be a finite number > 0" score --reference "$golden/reference.jsonl" \
  --candidate "$golden/candidate.jsonl" --min-speedup -1

# The schema is strict enough to catch a broken report.
"$python" -c 'import json, sys
report = json.load(open(sys.argv[1]))
report["summary"]["exact_match"] = 1.5
del report["items"][0]["lcp"]
json.dump(report, open(sys.argv[2], "w"))' "$work/golden.json" "$work/broken.json"
"$python" - "$schema" "$work/broken.json" <<'EOF' && fail "the schema accepts a broken report"
import json, sys, jsonschema
schema, report = (json.load(open(path)) for path in sys.argv[1:3])
sys.exit(0 if jsonschema.Draft202012Validator(schema).is_valid(report) else 1)
EOF

# --- answers generated on the fixture pair ---
generate() { "$conformance" generate --target "$fixtures/target" --bench "$bench" --max-new-tokens 24 --limit 12 "$@" >/dev/null; }
generate --engine oracle --out "$work/oracle.jsonl" || fail "oracle run"
generate --engine oracle --top-logprobs 0 --out "$work/oracle_plain.jsonl" || fail "oracle run without log-probabilities"
generate --engine eqspec --draft "$fixtures/draft" --batch-size 5 --out "$work/eqspec.jsonl" || fail "eqspec run"
generate --engine eqspec --draft "$fixtures/draft" --batch-size 5 --inject-fault mask-lets-padding-through \
  --out "$work/faulty.jsonl" || fail "faulty run"

score --reference "$work/oracle.jsonl" --candidate "$work/eqspec.jsonl" --json "$work/exact.json" \
  --markdown "$work/exact.md" --junit "$work/exact.xml" --html "$work/exact.html" >/dev/null
status=$?
[ $status -eq 0 ] || fail "eqspec against the oracle: exit $status, expected 0"
validate "$work/exact.json"
expect_value "$work/exact.json" summary.questions 12
expect_value "$work/exact.json" summary.exact_match 1.0
expect_value "$work/exact.json" summary.partial_match 1.0
expect_value "$work/exact.json" summary.unit '"token_ids"'
expect_value "$work/exact.json" gate.passed true
grep -q '✅ specgate score: PASSED' "$work/exact.md" || fail "Markdown lacks the passing verdict"
# On a terminal (script gives it one), a progress bar over the candidate's answers.
script -qec "$conformance score --reference $work/oracle.jsonl --candidate $work/eqspec.jsonl" /dev/null \
  >"$work/terminal.out" 2>&1
grep -q "score \[.*\] 12/12" "$work/terminal.out" ||
  fail "no progress bar on a terminal: $(tr '\r' '\n' <"$work/terminal.out" | head -3)"
# Coverage: the fixture pair's EQSPEC realigns its rows often enough to have caught a layout fault.
expect_value "$work/exact.json" summary.coverage.warning null
"$python" - "$work/exact.json" <<'EOF' || fail "the fixture pair's coverage"
import json, sys
coverage = json.load(open(sys.argv[1]))["summary"]["coverage"]
assert coverage["reporting"] == coverage["answers"] == 12, coverage
assert coverage["realignments"] >= coverage["layout_fault_realignments"], coverage
EOF
score --reference "$work/oracle.jsonl" --candidate "$work/eqspec.jsonl" --min-coverage 100000 >"$work/coverage.out"
[ $? -eq 1 ] || fail "--min-coverage above the run's realignments passed"
grep -q -- "realignments in the candidate's run, fewer than --min-coverage 100000" "$work/coverage.out" ||
  fail "--min-coverage: $(cat "$work/coverage.out")"
score --reference "$work/oracle.jsonl" --candidate "$work/oracle_plain.jsonl" --min-coverage 1 >"$work/coverage.out"
[ $? -eq 1 ] && grep -q "coverage cannot be computed" "$work/coverage.out" ||
  fail "--min-coverage on answers that do not count realignments: $(cat "$work/coverage.out")"
[ "$(grep -c '<failure' "$work/exact.xml")" -eq 0 ] || fail "JUnit reports failures for exact answers"

score --reference "$work/oracle.jsonl" --candidate "$work/faulty.jsonl" --min-exact 0 --json "$work/faulty.json" >/dev/null
status=$?
[ $status -eq 0 ] || fail "faulty with --min-exact 0: exit $status, expected 0"
validate "$work/faulty.json"
"$python" - "$work/faulty.json" <<'EOF' || fail "faulty answers are not attributed from the reference's top_logprobs"
import json, sys
report = json.load(open(sys.argv[1]))
divergences = [item["first_divergence"] for item in report["items"] if item["first_divergence"]]
assert divergences, "no divergence"
attributed = [d for d in divergences if d["margin_source"] in ("top_logprobs", "top_logprobs_bound")]
assert attributed, [d["note"] for d in divergences]
counts = report["summary"]["divergences"]
assert counts["hard"] + counts["near_tie"] + counts["unattributed"] + counts["length"] == len(divergences), counts
assert report["summary"]["exact_match"] < 1
EOF
hard=$(query "$work/faulty.json" summary.divergences.hard)
if [ "$hard" -gt 0 ]; then
  score --reference "$work/oracle.jsonl" --candidate "$work/faulty.jsonl" --min-exact 0 --max-hard-divergences 0 \
    --junit "$work/faulty.xml" >"$work/stdout"
  status=$?
  [ $status -eq 1 ] || fail "hard divergences with --max-hard-divergences 0: exit $status, expected 1"
  grep -q 'more than --max-hard-divergences 0' "$work/stdout" || fail "the gate's reason is not printed"
  grep -q '<failure' "$work/faulty.xml" || fail "JUnit has no failure for diverging answers"
fi

# Re-scoring with the target attributes answers without recorded log-probabilities, and
# agrees with the margins the oracle recorded.
score --reference "$work/oracle_plain.jsonl" --candidate "$work/faulty.jsonl" --min-exact 0 --bench "$bench" \
  --rescore-with "$fixtures/target" --json "$work/rescored.json" >/dev/null || fail "score --rescore-with"
validate "$work/rescored.json"
"$python" - "$work/faulty.json" "$work/rescored.json" <<'EOF' || fail "re-scored margins disagree with recorded ones"
import json, sys
recorded, rescored = (json.load(open(path)) for path in sys.argv[1:3])
by_id = {item["question_id"]: item["first_divergence"] for item in rescored["items"]}
compared = 0
for item in recorded["items"]:
    d = item["first_divergence"]
    r = by_id[item["question_id"]]
    if d is None or d["attribution"] == "length":
        continue
    assert r["margin_source"] == "rescore", r
    if d["margin_source"] == "top_logprobs":
        assert abs(d["margin"] - r["margin"]) < 1e-3, (item["question_id"], d["margin"], r["margin"])
        assert d["attribution"] == r["attribution"]
        compared += 1
    elif d["margin_source"] == "top_logprobs_bound":
        assert r["margin"] >= d["margin"] - 1e-3, (d["margin"], r["margin"])
assert any(d and d["margin_source"] == "rescore" for d in by_id.values()), "nothing was re-scored"
EOF

# The re-scored prompts come from the reference answers' prompt_token_ids (the engine's own
# prompts) when they have them, else from the bench through the tokenizer and template; both
# give the same prompts here, so the same margins.
grep -q '"prompt_token_ids":\[\[256,' "$work/oracle_plain.jsonl" || fail "generate wrote no prompt_token_ids"
expect_value "$work/rescored.json" summary.rescored_prompts.from_chat_template 0
"$python" -c 'import json, sys
with open(sys.argv[1]) as src, open(sys.argv[2], "w") as out:
    for line in src:
        answer = json.loads(line)
        del answer["choices"][0]["prompt_token_ids"]
        out.write(json.dumps(answer) + "\n")' "$work/oracle_plain.jsonl" "$work/oracle_no_prompts.jsonl"
score --reference "$work/oracle_no_prompts.jsonl" --candidate "$work/faulty.jsonl" --min-exact 0 --bench "$bench" \
  --rescore-with "$fixtures/target" --json "$work/rescored_template.json" >/dev/null 2>"$work/stderr" ||
  fail "score --rescore-with from the bench"
validate "$work/rescored_template.json"
expect_value "$work/rescored_template.json" summary.rescored_prompts.from_answer_prompt_token_ids 0
expect_value "$work/rescored_template.json" settings.rescore_with.chat_template '"raw"'
grep -q "re-scored prompts: [1-9][0-9]* built from the bench" "$work/stderr" ||
  fail "stderr does not say where re-scored prompts came from ($(cat "$work/stderr"))"
grep -q "prompt_token_ids" "$work/stderr" && fail "stderr names a source no prompt came from ($(cat "$work/stderr"))"
# Nothing to re-score (no divergence): no line about re-scored prompts.
score --reference "$work/oracle_no_prompts.jsonl" --candidate "$work/oracle_no_prompts.jsonl" --bench "$bench" \
  --rescore-with "$fixtures/target" >/dev/null 2>"$work/stderr" || fail "score --rescore-with of identical answers"
grep -q "re-scored prompts" "$work/stderr" && fail "a re-scored-prompts line with nothing re-scored: $(cat "$work/stderr")"
"$python" - "$work/rescored.json" "$work/rescored_template.json" <<'EOF' || fail "prompts from answers and from the bench disagree"
import json, sys
a, b = (json.load(open(path)) for path in sys.argv[1:3])
assert a["summary"]["rescored_prompts"]["from_answer_prompt_token_ids"] > 0
assert a["summary"]["rescored_prompts"]["from_answer_prompt_token_ids"] == b["summary"]["rescored_prompts"]["from_chat_template"]
for x, y in zip(a["items"], b["items"]):
    assert (x["first_divergence"] or {}).get("margin") == (y["first_divergence"] or {}).get("margin"), x["question_id"]
EOF
# With a template the rescorer's prompts differ from the raw prompts the answers were made with.
score --reference "$work/oracle_no_prompts.jsonl" --candidate "$work/faulty.jsonl" --min-exact 0 --bench "$bench" \
  --rescore-with "$fixtures/target" --chat-template vicuna --json "$work/rescored_vicuna.json" >/dev/null 2>&1 ||
  fail "score --rescore-with --chat-template vicuna"
[ "$(query "$work/rescored_vicuna.json" items)" != "$(query "$work/rescored_template.json" items)" ] ||
  fail "--chat-template vicuna re-scored the same prompts as raw"

# EOS as the checkpoint defines it: every id of generation_config.json's eos_token_id stops
# every engine (a space, 32, stops these answers early). An engine that drops the EOS id that
# stopped it (or keeps it, as llama.cpp does) does not diverge when the EOS ids are known, and
# the report counts the answers that end with one.
mkdir -p "$work/space_eos"
cp "$fixtures/target/"* "$work/space_eos/"
printf '{"eos_token_id": [257, 32]}\n' >"$work/space_eos/generation_config.json"
"$conformance" generate --engine oracle --target "$work/space_eos" --bench "$bench" --max-new-tokens 24 --limit 12 \
  --out "$work/eos_oracle.jsonl" >/dev/null || fail "oracle with generation_config.json"
"$conformance" generate --engine exspec --target "$work/space_eos" --draft "$fixtures/draft" --bench "$bench" \
  --max-new-tokens 24 --limit 12 --batch-size 4 --out "$work/eos_exspec.jsonl" >/dev/null || fail "exspec with generation_config.json"
"$python" - "$work/eos_oracle.jsonl" "$work/eos_exspec.jsonl" "$work/no_eos.jsonl" <<'EOF' || fail "EOS ids of generation_config.json not honoured"
import json, sys
answers = [json.loads(line) for line in open(sys.argv[1])]
oracle = [a["choices"][0]["token_ids"][0] for a in answers]
exspec = [json.loads(line)["choices"][0]["token_ids"][0] for line in open(sys.argv[2])]
assert oracle == exspec
assert all(32 not in ids[:-1] and 257 not in ids[:-1] for ids in oracle), oracle
assert sum(ids[-1] in (32, 257) for ids in oracle) >= 6, oracle
with open(sys.argv[3], "w") as out:
    for answer, ids in zip(answers, oracle):
        kept = ids[:-1] if ids[-1] in (32, 257) else ids
        out.write(json.dumps({"question_id": answer["question_id"], "token_ids": kept}) + "\n")
EOF
ended=$("$python" -c 'import json, sys
print(sum(json.loads(line)["choices"][0]["token_ids"][0][-1] in (32, 257) for line in open(sys.argv[1])))' "$work/eos_oracle.jsonl")
score --reference "$work/eos_oracle.jsonl" --candidate "$work/no_eos.jsonl" >/dev/null && fail "a dropped EOS passed without EOS ids"
score --reference "$work/eos_oracle.jsonl" --candidate "$work/no_eos.jsonl" --eos-id 32 --eos-id 257 --json "$work/eos.json" \
  --markdown "$work/eos.md" --junit "$work/eos.xml" --html "$work/eos.html" >/dev/null || fail "a dropped EOS with --eos-id"
validate "$work/eos.json"
expect_value "$work/eos.json" summary.ended_with_eos.reference "$ended"
expect_value "$work/eos.json" summary.ended_with_eos.candidate 0
expect_value "$work/eos.json" settings.eos_ids '[32, 257]'
grep -q "answers ending with an EOS id (32, 257): reference $ended, candidate 0" "$work/eos.md" || fail "Markdown lacks the EOS counts"
grep -q "answers ending with an EOS id (32, 257): reference $ended, candidate 0" "$work/eos.html" || fail "HTML lacks the EOS counts"
grep -q "name=\"reference_ended_with_eos\" value=\"$ended\"" "$work/eos.xml" || fail "JUnit lacks the EOS counts"
score --reference "$work/no_eos.jsonl" --candidate "$work/eos_oracle.jsonl" --tokenizer "$work/space_eos" \
  --json "$work/eos_rev.json" >/dev/null || fail "a kept EOS with --tokenizer"
expect_value "$work/eos_rev.json" summary.ended_with_eos.candidate "$ended"
expect_value "$work/eos_rev.json" settings.eos_ids '[32, 257]'

# With --tokenizer the reports show the decoded text around each first divergence.
score --reference "$work/oracle.jsonl" --candidate "$work/faulty.jsonl" --min-exact 0 --tokenizer "$fixtures/target" \
  --json "$work/decoded.json" --markdown "$work/decoded.md" --html "$work/decoded.html" >/dev/null || fail "score --tokenizer"
validate "$work/decoded.json"
"$python" - "$work/decoded.json" "$work/decoded.md" "$work/decoded.html" <<'EOF' || fail "decoded context is wrong or missing"
import html, json, sys
report = json.load(open(sys.argv[1]))
markdown, page = open(sys.argv[2]).read(), open(sys.argv[3]).read()
checked = 0
for item in report["items"]:
    d = item["first_divergence"]
    if d is None or d["reference_token"] is None:
        continue
    text = d["decoded_context"]
    ids = d["context"]["before"] + d["context"]["reference"]
    assert bytes(i for i in ids if i < 256).decode("utf-8", "replace") == text["before"] + text["reference"], item["question_id"]
    visible = text["reference"].replace("\n", "\\n")
    assert html.escape(visible, quote=False) in page, visible
    checked += 1
assert checked > 0
assert "ref: " in markdown and "<br>cand: " in markdown
EOF

# The plain form: token ids only, then text only.
"$python" -c 'import json, sys
with open(sys.argv[1]) as src, open(sys.argv[2], "w") as ids, open(sys.argv[3], "w") as text:
    for line in src:
        answer = json.loads(line)
        choice = answer["choices"][0]
        ids.write(json.dumps({"question_id": answer["question_id"], "token_ids": choice["token_ids"][0]}) + "\n")
        text.write(json.dumps({"question_id": answer["question_id"], "text": choice["turns"][0]}) + "\n")' \
  "$work/eqspec.jsonl" "$work/plain_ids.jsonl" "$work/plain_text.jsonl"
score --reference "$work/oracle.jsonl" --candidate "$work/plain_ids.jsonl" --json "$work/plain_ids.json" >/dev/null ||
  fail "plain token ids against the oracle"
expect_value "$work/plain_ids.json" summary.unit '"token_ids"'
score --reference "$work/oracle.jsonl" --candidate "$work/plain_text.jsonl" --json "$work/plain_text.json" >/dev/null ||
  fail "plain text against the oracle"
expect_value "$work/plain_text.json" summary.unit '"code_points"'
expect_value "$work/plain_text.json" summary.exact_match 1.0

# --- the real Spec-Bench questions ---
"$conformance" generate --engine oracle --target "$fixtures/target" --bench "$specbench" --limit 3 --max-new-tokens 8 \
  --out "$work/specbench_oracle.jsonl" >/dev/null || fail "oracle on Spec-Bench"
"$conformance" generate --engine eqspec --draft "$fixtures/draft" --target "$fixtures/target" --bench "$specbench" \
  --limit 3 --max-new-tokens 8 --batch-size 3 --out "$work/specbench_eqspec.jsonl" >/dev/null || fail "eqspec on Spec-Bench"
score --reference "$work/specbench_oracle.jsonl" --candidate "$work/specbench_eqspec.jsonl" --bench "$specbench" \
  --json "$work/specbench.json" >/dev/null || fail "score on Spec-Bench"
validate "$work/specbench.json"
expect_value "$work/specbench.json" inputs.bench.questions 480
expect_value "$work/specbench.json" summary.questions 3
expect_value "$work/specbench.json" by_subtask.mt_bench.questions 3
expect_value "$work/specbench.json" by_subtask.mt_bench.exact_match 1.0
expect_value "$work/specbench.json" by_category.writing.subtask '"mt_bench"'
expect_value "$work/specbench.json" items.0.question_id 81

# --- bad input: exit 2 and one line naming file, line and field ---
ref=(--reference "$work/oracle.jsonl")
cand=(--candidate "$work/eqspec.jsonl")
bad() { printf '%s\n' "$@" >"$work/bad.jsonl"; }

bad '{"question_id": 1, "token_ids": [1, 2]'
expect_usage_error "bad.jsonl:1: invalid JSON at column 39: expected '}', got the end of the line" score "${ref[@]}" --candidate "$work/bad.jsonl"
bad '{"question_id": 1, "token_ids": [1]}' '{"question_id": 2, "token_ids": [1, "two"]}'
expect_usage_error "bad.jsonl:2: field 'token_ids[1]': expected a token id (a non-negative integer), got string" score "${ref[@]}" --candidate "$work/bad.jsonl"
bad '{"question_id": 1, "choices": [{"turns": "text"}]}'
expect_usage_error "bad.jsonl:1: field 'choices[0].turns': expected a list of strings, got string" score --reference "$work/bad.jsonl" "${cand[@]}"
bad '{"token_ids": [1]}'
expect_usage_error "bad.jsonl:1: field 'question_id': missing" score "${ref[@]}" --candidate "$work/bad.jsonl"
bad '{"question_id": 1}'
expect_usage_error "bad.jsonl:1: field 'token_ids': missing" score "${ref[@]}" --candidate "$work/bad.jsonl"
bad '{"question_id": 1, "token_ids": [1]}' '' '{"question_id": 1, "token_ids": [2]}'
expect_usage_error "bad.jsonl:3: field 'question_id': 1 is already used on line 1" score "${ref[@]}" --candidate "$work/bad.jsonl"
bad '{"question_id": 1, "text": "only text"}'
expect_usage_error "nothing to compare" score --reference "$work/bad.jsonl" --candidate "$work/plain_ids.jsonl"
bad '{"question_id": 4242, "token_ids": [1]}'
expect_usage_error "bad.jsonl:1: field 'question_id': question 4242 is not in" score --reference "$work/bad.jsonl" \
  --candidate "$work/bad.jsonl" --bench "$bench"
: >"$work/empty.jsonl"
expect_usage_error "empty.jsonl: no answers" score --reference "$work/empty.jsonl" "${cand[@]}"
expect_usage_error "missing.jsonl: no such file" score "${ref[@]}" --candidate "$work/missing.jsonl"
expect_usage_error "missing.jsonl: no such file" score --reference "$work/missing.jsonl" "${cand[@]}"
expect_usage_error "not a regular file (a folder)" score "${ref[@]}" --candidate "$work"
expect_usage_error "missing.jsonl" score "${ref[@]}" "${cand[@]}" --bench "$work/missing.jsonl"
expect_usage_error "--min-exact: must be a fraction in [0, 1], got 1.5" score "${ref[@]}" "${cand[@]}" --min-exact 1.5
expect_usage_error "--min-partial: must be a fraction in [0, 1], got -0.1" score "${ref[@]}" "${cand[@]}" --min-partial -0.1
expect_usage_error "--min-exact" score "${ref[@]}" "${cand[@]}" --min-exact lots
expect_usage_error "--max-hard-divergences: must be >= 0, got -1" score "${ref[@]}" "${cand[@]}" --max-hard-divergences -1
expect_usage_error "--near-tie-threshold: must be a finite number of nats >= 0, got -0.5" score "${ref[@]}" "${cand[@]}" \
  --near-tie-threshold -0.5
expect_usage_error "--turns: expected all or first, got 'some'" score "${ref[@]}" "${cand[@]}" --turns some
expect_usage_error "--candidate is required" score "${ref[@]}"
expect_usage_error "--chat-template: only used with --rescore-with DIR" score "${ref[@]}" "${cand[@]}" --chat-template vicuna
expect_usage_error "--chat-template: unknown chat template 'alpaca'" score "${ref[@]}" "${cand[@]}" --bench "$bench" \
  --rescore-with "$fixtures/target" --chat-template alpaca
expect_usage_error "--eos-id: expected a token id (a non-negative integer), got -3" score "${ref[@]}" "${cand[@]}" --eos-id -3
expect_usage_error "nowhere: no tokenizer" score "${ref[@]}" "${cand[@]}" --tokenizer "$work/nowhere"
expect_usage_error "--device: only used with --rescore-with DIR" score "${ref[@]}" "${cand[@]}" --device cpu
expect_usage_error "--device: unknown device 'tpu'" score "${ref[@]}" "${cand[@]}" --bench "$bench" \
  --rescore-with "$fixtures/target" --device tpu
expect_usage_error "unknown dtype 'float8'" score "${ref[@]}" "${cand[@]}" --bench "$bench" \
  --rescore-with "$fixtures/target" --dtype float8
expect_usage_error "nowhere: no such checkpoint folder" score "${ref[@]}" "${cand[@]}" --bench "$bench" --rescore-with "$work/nowhere"
"$python" -c 'import json, sys
answer = json.loads(open(sys.argv[1]).readline())
print(json.dumps({"question_id": answer["question_id"], "token_ids": answer["token_ids"][:1] + [99999999]}))' \
  "$work/plain_ids.jsonl" >"$work/bad.jsonl"
expect_usage_error "bad.jsonl:1: field 'token_ids[1]': token 99999999 is outside the vocabulary" score \
  --reference "$work/plain_ids.jsonl" --candidate "$work/bad.jsonl" --min-exact 0 --bench "$bench" --rescore-with "$fixtures/target"
touch "$work/file"
expect_usage_error "is not a folder" score "${ref[@]}" "${cand[@]}" --json "$work/file/report.json"

# Answers made from different prompts (another chat template) are their own finding, per
# question, before any comparison: not divergences at index 0.
"$conformance" generate --engine oracle --target "$fixtures/target" --bench "$bench" --limit 3 --max-new-tokens 8 \
  --out "$work/raw.jsonl" >/dev/null || fail "generate raw"
"$conformance" generate --engine oracle --target "$fixtures/target" --bench "$bench" --limit 3 --max-new-tokens 8 \
  --chat-template vicuna --out "$work/vicuna.jsonl" >/dev/null || fail "generate vicuna"
"$conformance" score --reference "$work/raw.jsonl" --candidate "$work/vicuna.jsonl" --json "$work/prompts.json" \
  --markdown "$work/prompts.md" --junit "$work/prompts.xml" --html "$work/prompts.html" >"$work/prompts.out"
[ $? -eq 1 ] || fail "score of answers from different prompts did not exit 1"
grep -q "^prompts: 3 questions answered from different prompts" "$work/prompts.out" || fail "no prompt finding: $(cat "$work/prompts.out")"
grep -q "divergences: 0 hard, 0 near-tie, 0 unattributed, 0 length" "$work/prompts.out" || fail "prompt mismatches counted as divergences"
validate "$work/prompts.json"
grep -qF "answered from a different prompt (chat templates: reference 'raw', candidate 'vicuna'; prompt\_token\_ids differ at turn 0, token 1)" \
  "$work/prompts.md" || fail "the Markdown report lacks the prompt finding with both templates"
expect_value "$work/prompts.json" summary.exact_match null
expect_value "$work/prompts.json" items.0.prompt_mismatch.candidate_chat_template '"vicuna"'
grep -q "exact match [0-9.e+-]* is below" "$work/prompts.out" && fail "questions not compared were gated as a 0% exact match"
grep -q 'type="prompt_mismatch"' "$work/prompts.xml" || fail "the JUnit report lacks the prompt finding"

# Runs with different max_new_tokens: compared up to the smaller, named, no length divergences.
"$conformance" generate --engine oracle --target "$fixtures/target" --bench "$bench" --limit 3 --max-new-tokens 12 \
  --out "$work/long.jsonl" >/dev/null || fail "generate 12 tokens"
score --reference "$work/long.jsonl" --candidate "$work/raw.jsonl" --json "$work/lengths.json" >"$work/lengths.out" ||
  fail "score of runs with 12 and 8 new tokens: exit $?, expected 0: $(cat "$work/lengths.out")"
grep -q "^run lengths differ: 3 answers ran with max_new_tokens 12 in the reference and 8 in the candidate" "$work/lengths.out" ||
  fail "no run-length finding: $(cat "$work/lengths.out")"
expect_value "$work/lengths.json" summary.divergences.length 0
expect_value "$work/lengths.json" items.0.compared_tokens_per_turn 8
validate "$work/lengths.json"

# A bfloat16 candidate: each divergence's near-tie threshold is widened to bfloat16's rounding,
# unless --near-tie-threshold fixes it. Where a real bfloat16 run diverges depends on the CPU's
# rounding, so the candidate is built: the float32 oracle's answers, recorded as bfloat16, each
# turned at its middle token to the runner-up the oracle recorded there and cut after it. Every
# question diverges there, within the oracle's recorded alternatives.
"$conformance" generate --engine oracle --target "$fixtures/target" --bench "$bench" --limit 12 --max-new-tokens 24 \
  --top-logprobs 5 --out "$work/f32.jsonl" >/dev/null || fail "generate float32 oracle"
"$python" - "$work/f32.jsonl" "$work/bf16.jsonl" <<'PY' || fail "building the bfloat16 candidate"
import json, sys
with open(sys.argv[1]) as src, open(sys.argv[2], "w") as out:
    for line in src:
        answer = json.loads(line)
        choice = answer["choices"][0]
        tokens, alternatives = choice["token_ids"][0], choice["top_logprobs"][0]
        at = len(tokens) // 2
        runner_up = max((a for a in alternatives[at] if a["token_id"] != tokens[at]), key=lambda a: a["logprob"])
        out.write(json.dumps({"question_id": answer["question_id"], "token_ids": tokens[:at] + [runner_up["token_id"]],
                              "run": dict(answer["run"], dtype="bfloat16")}) + "\n")
PY
score --reference "$work/f32.jsonl" --candidate "$work/bf16.jsonl" --min-exact 0 --json "$work/widened.json" >"$work/widened.out"
expect_value "$work/widened.json" settings.near_tie_by_dtype true
"$python" - "$work/widened.json" <<'PY' || fail "a bfloat16 divergence was not attributed against the widened threshold"
import json, sys
report = json.load(open(sys.argv[1]))
divergences = [item["first_divergence"] for item in report["items"] if item["first_divergence"]]
assert len(divergences) == 12, f"{len(divergences)} of 12 built divergences"
assert all(d["margin_source"] == "top_logprobs" for d in divergences), [d["margin_source"] for d in divergences]
assert all(d["near_tie_threshold"] > 0.1 for d in divergences), [d["near_tie_threshold"] for d in divergences]
PY
grep -q "^near-tie threshold 0.1 nats, widened to [0-9.]* for 12 divergences" "$work/widened.out" ||
  fail "no widened-threshold line: $(cat "$work/widened.out")"
score --reference "$work/f32.jsonl" --candidate "$work/bf16.jsonl" --min-exact 0 --near-tie-threshold 0.1 \
  --json "$work/fixed.json" >/dev/null
expect_value "$work/fixed.json" settings.near_tie_by_dtype false
expect_value "$work/fixed.json" items.0.first_divergence.near_tie_threshold 0.1
validate "$work/widened.json"

finish "score CLI"
