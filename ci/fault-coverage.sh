#!/usr/bin/env bash
# How many realignments the seeded layout faults need before they show in the answers: the
# figure behind score's coverage warning (impl/scoring/coverage.h, kLayoutFaultRealignments).
# Two measurements, side by side: every greedy fault on tiny float64 models (`conformance
# mutants --fault-coverage`, RUNS per fault, decoder and ragged-round count), and
# stale-position-ids and kv-not-shifted on the real pair (16 Spec-Bench first turns, 64 tokens,
# EQSPEC at batch 8 with its layer-skip draft and with prompt lookup). Installs and builds what
# is missing as ci/test.sh does; writes reports/property_tests/fault_coverage.{md,json}. About
# 15 minutes on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/ci/setup.sh"
runs="${1:-30}"
B="$root/build/bin/conformance" pair="$root/build/real_pair" Q="$root/../shared/specbench/question.jsonl"
out="$root/reports/property_tests" work="$root/build/fault-coverage"
mkdir -p "$work"

"$B" mutants --fault-coverage "$runs" --seed 1 --json "$out/fault_coverage.json" --markdown "$work/tiny.md" \
  > "$work/tiny.log" 2>&1 &
tiny=$!

ids=$(seq 81 30 531)  # one Spec-Bench question in 30, every subtask
common=(--target "$pair/target" --bench "$Q" --question-ids $ids --max-new-tokens 64 --chat-template smollm2)
"$B" generate --engine oracle "${common[@]}" --out "$work/oracle.jsonl"
runs_real=()
for fault in stale-position-ids kv-not-shifted; do
  for drafter in model ngram; do
    draft=(); [ "$drafter" = model ] && draft=(--draft "$pair/draft")
    "$B" generate --engine eqspec --drafter "$drafter" "${draft[@]}" "${common[@]}" --batch-size 8 \
      --inject-fault "$fault" --out "$work/${fault}_$drafter.jsonl"
    runs_real+=("$work/${fault}_$drafter.jsonl")
  done
done
wait "$tiny" || { cat "$work/tiny.log"; exit 1; }

{
  echo "# Realignments a run needs before a layout fault shows"
  echo
  echo "Command: \`./ci/fault-coverage.sh $runs\`. An answer realigns when its K/V move to other slots of the"
  echo "batch caches (a ragged round re-pads the rows that fell behind; a row that leaves moves the others when it"
  echo "was the longest). score warns when the candidate's answers sum to fewer realignments than the larger of"
  echo "the two thresholds below (\`kLayoutFaultRealignments\` in impl/scoring/coverage.h). Faults of the draft"
  echo "cache, of EXSPEC's refills and of ragged drafts cannot show in these runs (greedy outputs do not depend on"
  echo "the draft; 8 rows fill the window at once; every row drafts K): other checks catch them (\`conformance"
  echo "mutants\`, \`conformance acceptance\`)."
  echo
  echo "## Tiny models, every greedy fault"
  echo
  cat "$work/tiny.md"
  echo
  echo "## The real pair: SmolLM2-135M-Instruct, float32, EQSPEC at batch 8, K 4"
  echo
  echo "16 Spec-Bench first turns (ids 81, 111, ..., 531), 64 new tokens, scored per answer against the oracle."
  echo
  "$root/build/venv/bin/python" "$root/ci/fault_coverage_real.py" "$work/oracle.jsonl" "${runs_real[@]}"
} > "$out/fault_coverage.md"
echo "wrote $out/fault_coverage.md and fault_coverage.json"
