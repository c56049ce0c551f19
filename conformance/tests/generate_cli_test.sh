#!/usr/bin/env bash
# End-to-end checks of `conformance generate` and `conformance tokenize` on the fixture pair:
# every batch engine gives the oracle's token ids on the sample bench, with chat templates and
# with prompt ids given in the bench, injected faults break that, and bad input exits 2 with one
# line naming what is wrong. generate_float64_test.sh holds the runs in float64.
set -uo pipefail
conformance=$1 fixtures=$2 bench=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"

token_ids() { grep -o '"token_ids":\[\(\[[0-9,]*\],\?\)*\]' "$1"; }
generate() { "$conformance" generate --target "$fixtures/target" --bench "$bench" --max-new-tokens 24 --limit 12 "$@"; }

generate --engine oracle --out "$work/oracle.jsonl" >/dev/null || fail "oracle run"
for engine in nonspec-batch eqspec exspec rollback; do
  options=()
  [ "$engine" = nonspec-batch ] || options=(--draft "$fixtures/draft")
  [ "$engine" = exspec ] && options+=(--window 7 --max-wait 2)
  generate --engine "$engine" "${options[@]}" --batch-size 5 --draft-tokens 3 --check-invariants \
    --out "$work/$engine.jsonl" >"$work/$engine.out" || fail "$engine run"
  [ "$(token_ids "$work/$engine.jsonl")" = "$(token_ids "$work/oracle.jsonl")" ] || fail "$engine differs from the oracle"
done
# The acceptance generate prints is the one score reads from the answers' drafted and accepted
# counts; the oracle and nonspec-batch draft nothing and record no counts.
for engine in eqspec exspec rollback; do
  printed=$(sed -n 's/.*accepted\/drafted \([0-9.]*%\),.*/\1/p' "$work/$engine.out")
  "$conformance" score --reference "$work/oracle.jsonl" --candidate "$work/$engine.jsonl" >"$work/score.out"
  scored=$(sed -n 's/.*accepted\/drafted \([0-9.]*%\);.*/\1/p' "$work/score.out")
  [ -n "$printed" ] && [ "$printed" = "$scored" ] ||
    fail "$engine: generate printed accepted/drafted '$printed', score read '$scored'"
done
grep -q '"drafted_tokens"' "$work/nonspec-batch.jsonl" && fail "nonspec-batch answers record drafted tokens"
# Every answer records the settings of its run.
python3 - "$work/exspec.jsonl" "$work/nonspec-batch.jsonl" <<'PY' || fail "answers do not record their run's settings"
import json, sys
exspec, nonspec = ([json.loads(line)["run"] for line in open(path)] for path in sys.argv[1:3])
# The same run, each answer its own random stream of the run's seed: its question's position.
for position, run in enumerate(exspec):
    assert run["sampling"].pop("stream") == position, (position, run)
assert all(run == exspec[0] for run in exspec), exspec
run = dict(exspec[0]); del run["started_at"]
assert run == {"engine": "exspec", "batch_size": 5, "max_new_tokens": 24, "draft_tokens": 3, "drafter": "model",
               "window": 7, "dtype": "float32", "draft": "draft",
               "sampling": {"temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": 0}}, run
assert not {"draft_tokens", "drafter", "window", "draft", "tree"} & set(nonspec[0]), nonspec[0]
PY
# score's run throughput is the tokens/s generate printed for the same run (the run's wall time
# from its start to its last answer's tstamp), whatever the batch size; per request is another figure.
for engine in oracle eqspec; do
  options=()
  [ "$engine" = eqspec ] && options=(--draft "$fixtures/draft" --batch-size 4)
  generate --engine "$engine" "${options[@]}" --out "$work/run_$engine.jsonl" >"$work/run_$engine.out" || fail "$engine run"
done
"$conformance" score --reference "$work/run_oracle.jsonl" --candidate "$work/run_eqspec.jsonl" >"$work/score.out"
python3 - "$work/run_oracle.out" "$work/run_eqspec.out" "$work/score.out" <<'PY' || fail "score's run throughput is not generate's"
import re, sys
printed = [float(re.search(r"\(([0-9.]+) tokens/s\)", open(path).read()).group(1)) for path in sys.argv[1:3]]
line = re.search(r"run throughput: reference ([0-9.]+) tokens/s \(oracle, batch 1\), candidate ([0-9.]+) tokens/s "
                 r"\(eqspec, batch 4\)", open(sys.argv[3]).read())
assert line, open(sys.argv[3]).read()
scored = [float(line.group(1)), float(line.group(2))]
for p, s in zip(printed, scored):
    assert abs(s - p) <= 0.1 * p, f"generate printed {printed}, score read {scored}"
PY

# Every turn of the multi-turn questions: later prompts hold the earlier answers.
generate --engine oracle --turns all --question-ids 1,2,3,4 --out "$work/oracle_turns.jsonl" >/dev/null || fail "oracle --turns all"
generate --engine exspec --draft "$fixtures/draft" --batch-size 2 --turns all --question-ids 1,2,3,4 \
  --out "$work/exspec_turns.jsonl" >/dev/null || fail "exspec --turns all"
grep -q '"token_ids":\[\[[0-9,]*\],\[' "$work/oracle_turns.jsonl" || fail "--turns all answered one turn only"
[ "$(token_ids "$work/exspec_turns.jsonl")" = "$(token_ids "$work/oracle_turns.jsonl")" ] || fail "exspec --turns all differs"

# Chat templates: every engine still gives the oracle's ids on vicuna prompts (multi-turn
# included), and the answers record the template and the prompt ids they started from.
generate --engine oracle --chat-template vicuna --turns all --question-ids 1,2,3,4 --out "$work/oracle_vicuna.jsonl" >/dev/null ||
  fail "oracle --chat-template vicuna"
generate --engine eqspec --draft "$fixtures/draft" --batch-size 3 --chat-template vicuna --turns all --question-ids 1,2,3,4 \
  --out "$work/eqspec_vicuna.jsonl" >/dev/null || fail "eqspec --chat-template vicuna"
[ "$(token_ids "$work/eqspec_vicuna.jsonl")" = "$(token_ids "$work/oracle_vicuna.jsonl")" ] || fail "eqspec differs on vicuna prompts"
python3 - "$work/oracle_vicuna.jsonl" "$work/oracle_turns.jsonl" <<'EOF' || fail "vicuna answers do not record their prompts"
import json, sys
vicuna = [json.loads(line) for line in open(sys.argv[1])]
raw = [json.loads(line) for line in open(sys.argv[2])]
system = ("A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, "
          "detailed, and polite answers to the user's questions.")
for answer, plain in zip(vicuna, raw):
    assert answer["chat_template"] == "vicuna" and plain["chat_template"] == "raw"
    choice = answer["choices"][0]
    assert len(choice["prompt_token_ids"]) == len(choice["turns"]) == 2
    first = choice["prompt_token_ids"][0]
    assert first[0] == 256 and bytes(first[1:]).decode().startswith(system + " USER: "), first[:8]
    assert bytes(first[1:]).decode().endswith(" ASSISTANT:")
    second = bytes(choice["prompt_token_ids"][1][1:]).decode()
    assert choice["turns"][0].strip() + "</s>USER: " in second, second[-200:]
EOF

# prompt_token_ids in the bench are fed verbatim: the raw prompts given as ids, to a target
# folder without a tokenizer, give the same answers, with no text.
python3 - "$work/oracle_turns.jsonl" "$bench" "$work/bench_ids.jsonl" <<'EOF' || fail "cannot write the bench with prompt ids"
import json, sys
answers = {a["question_id"]: a for a in map(json.loads, open(sys.argv[1]))}
with open(sys.argv[3], "w") as out:
    for line in open(sys.argv[2]):
        question = json.loads(line)
        if question["question_id"] in answers:
            question["prompt_token_ids"] = answers[question["question_id"]]["choices"][0]["prompt_token_ids"]
            out.write(json.dumps(question) + "\n")
EOF
mkdir -p "$work/no_tokenizer"
cp "$fixtures/target/config.json" "$fixtures/target/model.safetensors" "$work/no_tokenizer/"
"$conformance" generate --engine exspec --target "$work/no_tokenizer" --draft "$fixtures/draft" --bench "$work/bench_ids.jsonl" \
  --batch-size 2 --turns all --max-new-tokens 24 --out "$work/exspec_ids.jsonl" >/dev/null 2>"$work/stderr" ||
  fail "exspec on bench prompt_token_ids without a tokenizer"
grep -q "prompts come from the bench's prompt_token_ids" "$work/stderr" || fail "no word that the tokenizer is missing"
[ "$(token_ids "$work/exspec_ids.jsonl")" = "$(token_ids "$work/oracle_turns.jsonl")" ] || fail "bench prompt ids changed the answers"
grep -q '"turns":\["",""\]' "$work/exspec_ids.jsonl" || fail "answers without a tokenizer carry text"
grep -q '"chat_template"' "$work/exspec_ids.jsonl" && fail "answers from bench prompt ids name a template"
printf '{"question_id": 1, "category": "qa", "turns": ["a"], "prompt_token_ids": [[1, 999]]}\n' >"$work/bad_ids.jsonl"
expect_usage_error "bad_ids.jsonl: question 1: field 'prompt_token_ids[0][1]': token 999 is outside the target's vocabulary" \
  generate --engine oracle --target "$fixtures/target" --bench "$work/bad_ids.jsonl" --out "$work/x.jsonl"
expect_usage_error "no_tokenizer: no tokenizer" generate --engine oracle \
  --target "$work/no_tokenizer" --bench "$bench" --out "$work/x.jsonl"
expect_usage_error "--chat-template: unknown chat template 'alpaca'" generate --engine oracle --target "$fixtures/target" \
  --bench "$bench" --chat-template alpaca --out "$work/x.jsonl"

# conformance tokenize: the prompt text and its ids.
"$conformance" tokenize --target "$fixtures/target" --text "hi" --chat-template vicuna >"$work/tokens.jsonl" || fail "tokenize --text"
python3 - "$work/tokens.jsonl" <<'EOF' || fail "tokenize --text wrote the wrong prompt"
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
text = ("A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, "
        "detailed, and polite answers to the user's questions. USER: hi ASSISTANT:")
assert lines == [{"chat_template": "vicuna", "prompt": text, "token_ids": [256] + list(text.encode())}], lines
EOF
"$conformance" tokenize --target "$fixtures/target" --bench "$work/bench_ids.jsonl" --out "$work/tokens_bench.jsonl" ||
  fail "tokenize --bench"
[ "$(grep -c '"equals_bench_prompt_token_ids":true' "$work/tokens_bench.jsonl")" -eq 4 ] || fail "tokenize --bench disagrees with raw prompts"
"$conformance" tokenize --target "$fixtures/target" --bench "$work/bench_ids.jsonl" --chat-template vicuna \
  --out "$work/tokens_vicuna.jsonl" || fail "tokenize --bench --chat-template vicuna"
[ "$(grep -c '"equals_bench_prompt_token_ids":false' "$work/tokens_vicuna.jsonl")" -eq 4 ] || fail "vicuna prompts equal raw ones"
# A template whose special tokens the tokenizer lacks (the fixture's is byte-level) is refused.
for template in chatml smollm2 llama3 llama2; do
  expect_usage_error "--chat-template $template: the tokenizer has no token '<" tokenize --target "$fixtures/target" --text hi \
    --chat-template "$template"
done
expect_usage_error "--chat-template llama3: the tokenizer has no token '<|begin_of_text|>'" generate --engine oracle \
  --target "$fixtures/target" --bench "$bench" --chat-template llama3 --out "$work/x.jsonl"
expect_usage_error "give --text TEXT or --bench FILE" tokenize --target "$fixtures/target"
expect_usage_error "excludes" tokenize --target "$fixtures/target" --text a --bench "$bench"
expect_usage_error "nowhere: no tokenizer" tokenize --target "$work/nowhere" --text a

generate --engine eqspec --draft "$fixtures/draft" --batch-size 5 --inject-fault mask-lets-padding-through \
  --out "$work/faulty.jsonl" >/dev/null || fail "faulty run"
[ "$(token_ids "$work/faulty.jsonl")" != "$(token_ids "$work/oracle.jsonl")" ] || fail "an injected fault went unnoticed"

# A violated invariant is a verdict: exit 1, one line naming the invariant, question, round,
# row and layer, and --out keeps the answers finished before it, each on a whole line. The
# first batch holds one question twice (its rows never move), so it finishes; the second fails.
generate --engine eqspec --draft "$fixtures/draft" --batch-size 2 --question-ids 1,1,2,3 --check-invariants \
  --inject-fault kv-not-shifted --out "$work/violated.jsonl" >/dev/null 2>"$work/stderr"
status=$?
[ $status -eq 1 ] || fail "a violated invariant exits $status, not 1"
[ "$(wc -l <"$work/stderr")" -eq 1 ] || fail "a violated invariant is not one line: $(cat "$work/stderr")"
grep -qE '^conformance: invariant violated in question (2|3), round [1-9][0-9]*: I3: target cache, row [01] \(sequence (2|3)\), layer [0-9]+, ' \
  "$work/stderr" || fail "the verdict does not name invariant, question, round, row and layer: $(cat "$work/stderr")"
grep -qF "the 2 answers finished before it are in $work/violated.jsonl" "$work/stderr" || fail "the verdict does not say what was kept"
[ "$(grep -c '^{"answer_id":"eqspec-1",.*,"question_id":1,.*}$' "$work/violated.jsonl")" -eq 2 ] && [ "$(wc -l <"$work/violated.jsonl")" -eq 2 ] &&
  [ -z "$(tail -c 1 "$work/violated.jsonl")" ] || fail "--out does not hold exactly the 2 finished answers as whole lines"
[ "$(token_ids "$work/violated.jsonl" | head -1)" = "$(token_ids "$work/oracle.jsonl" | head -1)" ] ||
  fail "a kept answer differs from the oracle's"

out=(--out "$work/x.jsonl")
expect_usage_error "group-mixed-lengths: an EXSPEC fault, which engine eqspec cannot commit" generate --engine eqspec --draft "$fixtures/draft" \
  --target "$fixtures/target" --bench "$bench" --inject-fault group-mixed-lengths "${out[@]}"
expect_usage_error "always-accept: a sampling fault, which greedy decoding cannot commit" generate --engine exspec --draft "$fixtures/draft" \
  --target "$fixtures/target" --bench "$bench" --inject-fault always-accept "${out[@]}"
expect_usage_error "needs --draft" generate --engine eqspec --target "$fixtures/target" --bench "$bench" "${out[@]}"
expect_usage_error "unknown engine 'exspecc'" generate --engine exspecc --target "$fixtures/target" --bench "$bench" "${out[@]}"
expect_usage_error "unknown fault 'nope'" generate --engine eqspec --draft "$fixtures/draft" --target "$fixtures/target" \
  --bench "$bench" --inject-fault nope "${out[@]}"
expect_usage_error "takes no faults" generate --engine oracle --target "$fixtures/target" --bench "$bench" \
  --inject-fault bonus-from-draft "${out[@]}"
expect_usage_error "unknown dtype 'float8'" generate --engine oracle --target "$fixtures/target" --bench "$bench" --dtype float8 "${out[@]}"
expect_usage_error "--top-p: must be in (0, 1]" generate --engine oracle --target "$fixtures/target" --bench "$bench" \
  --temperature 1 --top-p 2 "${out[@]}"
expect_usage_error "question 9999 is not in" generate --engine oracle --target "$fixtures/target" --bench "$bench" \
  --question-ids 1,9999 "${out[@]}"
expect_usage_error "missing.jsonl: " generate --engine oracle --target "$fixtures/target" \
  --bench "$work/missing.jsonl" "${out[@]}"
expect_usage_error "nowhere: no such checkpoint folder" generate --engine oracle --target "$work/nowhere" --bench "$bench" "${out[@]}"
expect_usage_error "positions, the target has" generate --engine oracle --target "$fixtures/target" --bench "$bench" \
  --max-new-tokens 9000 "${out[@]}"
printf '{"question_id": 1, "category": "qa", "turns": "oops"}\n' >"$work/bad.jsonl"
expect_usage_error "bad.jsonl:1: field 'turns'" generate --engine oracle --target "$fixtures/target" --bench "$work/bad.jsonl" "${out[@]}"
expect_usage_error "apply to --engine exspec only" generate --engine eqspec --draft "$fixtures/draft" \
  --target "$fixtures/target" --bench "$bench" --window 4 "${out[@]}"
expect_usage_error "must be at least --batch-size" generate --engine exspec --draft "$fixtures/draft" \
  --target "$fixtures/target" --bench "$bench" --batch-size 8 --window 4 "${out[@]}"
expect_usage_error "cannot be honoured" generate --engine exspec --draft "$fixtures/draft" \
  --target "$fixtures/target" --bench "$bench" --batch-size 2 --window 8 --max-wait 1 "${out[@]}"
expect_usage_error "--turns: " generate --engine oracle --target "$fixtures/target" --bench "$bench" --turns some "${out[@]}"
expect_usage_error "--engine is required" generate --target "$fixtures/target" --bench "$bench" "${out[@]}"

finish "generate CLI"
