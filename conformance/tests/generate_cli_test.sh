#!/usr/bin/env bash
# End-to-end checks of `conformance generate` on the fixture pair: every batch engine gives
# the oracle's token ids on the sample bench, injected faults break that, and bad input
# exits 2 with one line naming what is wrong.
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
    --out "$work/$engine.jsonl" >/dev/null || fail "$engine run"
  [ "$(token_ids "$work/$engine.jsonl")" = "$(token_ids "$work/oracle.jsonl")" ] || fail "$engine differs from the oracle"
done

# Every turn of the multi-turn questions: later prompts hold the earlier answers.
generate --engine oracle --turns all --question-ids 1,2,3,4 --out "$work/oracle_turns.jsonl" >/dev/null || fail "oracle --turns all"
generate --engine exspec --draft "$fixtures/draft" --batch-size 2 --turns all --question-ids 1,2,3,4 \
  --out "$work/exspec_turns.jsonl" >/dev/null || fail "exspec --turns all"
grep -q '"token_ids":\[\[[0-9,]*\],\[' "$work/oracle_turns.jsonl" || fail "--turns all answered one turn only"
[ "$(token_ids "$work/exspec_turns.jsonl")" = "$(token_ids "$work/oracle_turns.jsonl")" ] || fail "exspec --turns all differs"

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
expect_usage_error "nowhere/config.json: " generate --engine oracle --target "$work/nowhere" --bench "$bench" "${out[@]}"
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
