#!/usr/bin/env bash
# `conformance sampling` on bfloat16 engines of the fixture target: tokens on the support's
# boundary pass within bfloat16's margin and reject at float64's, and a bfloat16 engine that
# ignores top-p is rejected all the same. Which draws land on the boundary depends on the CPU's
# bfloat16 kernels (label numerics: ci/test.sh runs it again on another kernel family).
set -uo pipefail
conformance=$1 fixtures=$2 bench=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"
schema="$(dirname "${BASH_SOURCE[0]}")/../../reports/schema/sampling_report.schema.json"
python=/usr/bin/python3
[ -x "$python" ] || python=python3

# The sample bench with short prompts (BOS and each turn's first 23 bytes), so that re-scoring
# costs little beside the answers.
bench="$(dirname "$bench")/short_prompts.jsonl"
# At alpha 0.01 and PIT seed 0, as sampling_cli_test.sh checks.
check() { "$conformance" sampling --target "$fixtures/target" --alpha 0.01 --pit-seed 0 "$@"; }

# A bfloat16 engine: over 11,520 tokens at top-k 50, top-p 0.95 some sit on the support's
# boundary, outside it by a hair under float64 re-scoring. With the bfloat16 margin (the answers
# record their dtype) they are reported and pass; held to float64's margin they reject. Which
# draws land there depends on the CPU's bfloat16 rounding, so more seeds are drawn (up to 12 runs)
# until one does, and the check fails saying so when none does.
bf16=()
for seed in $(seq 12); do
  "$conformance" generate --engine nonspec-batch --target "$fixtures/target" --bench "$bench" --dtype bfloat16 \
    --max-new-tokens 64 --temperature 0.8 --top-k 50 --top-p 0.95 --seed $((seed * 1000)) \
    --out "$work/bf16-$seed.jsonl" >/dev/null || fail "generate bfloat16"
  bf16+=(--answers "$work/bf16-$seed.jsonl")
  [ "$seed" -lt 6 ] && continue
  check "${bf16[@]}" --json "$work/bf16.json" >"$work/out" || fail "a correct bfloat16 engine rejected: $(cat "$work/out")"
  "$python" -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["answers"]["boundary"] else 1)' \
    "$work/bf16.json" && break
done
"$python" - "$work/bf16.json" <<'PY' || fail "bfloat16 boundary: no draw on the support's boundary in $((${#bf16[@]} / 2)) runs"
import json, sys
report = json.load(open(sys.argv[1]))
assert report["support_margin"]["engine_dtype"] == "bfloat16" and report["support_margin"]["source"] == "answers"
assert report["answers"]["boundary"] and not report["answers"]["outside_support"], report["answers"]["boundary"]
PY
# The one-sample test grants a bfloat16 engine the shift the checkpoint in bfloat16 puts on the
# PIT's law, twice over, in every group; the report follows its schema.
"$python" - "$schema" "$work/bf16.json" <<'PY' || fail "bfloat16 rounding allowance"
import json, sys
import jsonschema
schema, report = (json.load(open(p)) for p in sys.argv[1:3])
jsonschema.Draft202012Validator(schema).validate(report)
for group in report["groups"]:
    rounding = group["rounding"]
    assert 0 < rounding["shift"] < 0.05 and rounding["allowance"] == 2 * rounding["shift"], (group["name"], rounding)
PY
check "${bf16[@]}" --engine-dtype float64 >"$work/out"
[ $? -eq 1 ] || fail "bfloat16 boundary tokens held to float64's margin passed"
grep -q "outside the shaped target distribution's support beyond the margin of 1e-06 logits and 1e-09 in mass (float64)" \
  "$work/out" || fail "bfloat16 at float64's margin: $(cat "$work/out")"
# Warper bugs widen the support and keep the proportions inside it, so their only trace is the
# tokens past the cut. A bfloat16 engine that ignores top-p (sampling at top-p 1, judged at 0.95)
# is rejected: the margin on the mass ahead of a token takes in the tokens by the cut, never the
# whole tail, and the tokens it does take in come far more often than a correct bfloat16 engine's.
"$conformance" generate --engine nonspec-batch --target "$fixtures/target" --bench "$bench" --dtype bfloat16 \
  --max-new-tokens 48 --temperature 0.8 --top-k 50 --top-p 1 --seed 777 --out "$work/top-p-ignored.jsonl" >/dev/null ||
  fail "generate bfloat16 at top-p 1"
check --answers "$work/top-p-ignored.jsonl" --temperature 0.8 --top-k 50 --top-p 0.95 >"$work/out"
[ $? -eq 1 ] || fail "a bfloat16 engine that ignores top-p passed: $(cat "$work/out")"
finish "sampling bfloat16"
