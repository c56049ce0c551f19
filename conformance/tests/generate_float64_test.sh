#!/usr/bin/env bash
# End-to-end checks of `conformance generate` on the fixture pair in float64, where no kernel
# family's rounding can move a token (so ci/test.sh's numerics pass leaves them out): an
# interrupted sampled run keeps what it finished and --resume completes it, and token trees of
# every shape give the oracle's token ids.
set -uo pipefail
conformance=$1 fixtures=$2 bench=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"

token_ids() { grep -o '"token_ids":\[\(\[[0-9,]*\],\?\)*\]' "$1"; }
generate() { "$conformance" generate --target "$fixtures/target" --bench "$bench" --max-new-tokens 24 --limit 12 "$@"; }
out=(--out "$work/x.jsonl")

# SIGINT (or SIGTERM) keeps the answers finished so far and exits 130; --resume answers the
# rest, each sampled from the stream it has in the whole run: the same answers as one run. In
# float64, so that the other batches the resumed answers are decoded in cannot move a draw.
sampled=(--engine exspec --draft "$fixtures/draft" --temperature 0.8 --seed 5 --max-new-tokens 48 --limit 20
         --dtype float64)
"$conformance" generate --target "$fixtures/target" --bench "$bench" "${sampled[@]}" --out "$work/whole.jsonl" >/dev/null ||
  fail "sampled run"
"$conformance" generate --target "$fixtures/target" --bench "$bench" "${sampled[@]}" --out "$work/parts.jsonl" \
  >/dev/null 2>"$work/parts.err" &
pid=$!
# Interrupted once its first answer reaches the file it writes through, while the rest decode.
for _ in $(seq 600); do
  [ -n "$(find "$work" -maxdepth 1 -name '.parts.jsonl.*' -size +0)" ] && break
  sleep 0.02
done
kill -INT $pid
wait $pid
status=$?
[ $status -eq 130 ] || fail "generate after SIGINT: exit $status, not 130"
grep -q "generate: interrupted; .* written to $work/parts.jsonl, .* left; --resume continues" "$work/parts.err" ||
  fail "generate after SIGINT: $(tail -1 "$work/parts.err")"
[ -f "$work/parts.jsonl" ] || fail "SIGINT left no --out"
"$conformance" generate --target "$fixtures/target" --bench "$bench" "${sampled[@]}" --out "$work/parts.jsonl" --resume \
  >/dev/null || fail "generate --resume"
python3 - "$work/whole.jsonl" "$work/parts.jsonl" <<'PY' || fail "a resumed run differs from one run"
import json, sys
def answers(path):
    return {a["question_id"]: (a["choices"][0]["token_ids"], a["run"]["sampling"]["stream"]) for a in map(json.loads, open(path))}
whole, parts = answers(sys.argv[1]), answers(sys.argv[2])
assert len(whole) == 20 and whole == parts, (len(whole), len(parts))
PY

# Token trees (EAGLE's and Medusa's tree choices, or parents), drafted by the draft model: in
# float64, the oracle's tokens whatever the shape, the invariants checked every round; a shape
# file that is not a tree, or a tree under another engine, exits 2 with one line.
generate --engine oracle --dtype float64 --out "$work/oracle64.jsonl" >/dev/null || fail "float64 oracle run"
printf '[[0], [1], [0, 0], [0, 2], [1, 0], [0, 0, 0]]\n' >"$work/choices.json"
printf '{"parents": [-1, 0, 1, 2]}\n' >"$work/chain.json"
printf '{"parents": [-1, -1, -1, -1]}\n' >"$work/star.json"
for shape in choices chain star; do
  generate --engine eqspec --draft "$fixtures/draft" --tree "$work/$shape.json" --dtype float64 --batch-size 5 \
    --check-invariants --out "$work/tree-$shape.jsonl" >"$work/tree-$shape.out" 2>&1 || fail "tree $shape: $(tail -1 "$work/tree-$shape.out")"
  [ "$(token_ids "$work/tree-$shape.jsonl")" = "$(token_ids "$work/oracle64.jsonl")" ] || fail "tree $shape differs from the oracle"
done
tree=(generate --engine eqspec --draft "$fixtures/draft" --target "$fixtures/target" --bench "$bench")
printf '[[0], [1, 1]]\n' >"$work/orphan.json"
expect_usage_error "--tree $work/orphan.json:1: field '[1]': its parent's path is not an earlier choice" "${tree[@]}" \
  --tree "$work/orphan.json" "${out[@]}"
printf '{"parents": [-1, "x"]}\n' >"$work/typo.json"
expect_usage_error "--tree $work/typo.json:1: field 'parents[1]': expected -1 (the root) or an earlier node, got string" "${tree[@]}" --tree "$work/typo.json" "${out[@]}"
expect_usage_error "--tree: trees are verified under --engine eqspec, exspec or exspec-aging" \
  generate --engine rollback --draft "$fixtures/draft" --target "$fixtures/target" --bench "$bench" --tree "$work/chain.json" \
  "${out[@]}"
# Under EXSPEC's pool and grouping, a window of twice the batch: the oracle's tokens too.
generate --engine exspec --draft "$fixtures/draft" --tree "$work/choices.json" --dtype float64 --batch-size 3 \
  --window 6 --check-invariants --out "$work/tree-exspec.jsonl" >"$work/tree-exspec.out" 2>&1 ||
  fail "exspec tree: $(tail -1 "$work/tree-exspec.out")"
[ "$(token_ids "$work/tree-exspec.jsonl")" = "$(token_ids "$work/oracle64.jsonl")" ] || fail "exspec tree differs from the oracle"
# EXSPEC's pool faults reach trees too: K/V written back into another sequence's slot is a
# verdict of the tree run's invariant checks.
generate --engine exspec --draft "$fixtures/draft" --tree "$work/choices.json" --dtype float64 --batch-size 3 \
  --window 6 --check-invariants --inject-fault wrong-sequence-kv --out "$work/tree-exspec-faulty.jsonl" >/dev/null \
  2>"$work/tree-exspec-faulty.err"
status=$?
[ $status -eq 1 ] && grep -q "invariant violated" "$work/tree-exspec-faulty.err" ||
  fail "wrong-sequence-kv under exspec trees: exit $status, $(cat "$work/tree-exspec-faulty.err")"
# EAGLE-2's dynamic trees, each row's own: the oracle's tokens too.
generate --engine eqspec --draft "$fixtures/draft" --tree-topk 3 --tree-depth 3 --tree-nodes 6 --dtype float64 \
  --batch-size 5 --check-invariants --out "$work/tree-topk.jsonl" >"$work/tree-topk.out" 2>&1 ||
  fail "tree-topk: $(tail -1 "$work/tree-topk.out")"
[ "$(token_ids "$work/tree-topk.jsonl")" = "$(token_ids "$work/oracle64.jsonl")" ] || fail "tree-topk differs from the oracle"
expect_usage_error "--tree-nodes: 7 nodes, but --tree-topk 2 over --tree-depth 3 grows 6" "${tree[@]}" --tree-topk 2 \
  --tree-depth 3 --tree-nodes 7 "${out[@]}"
expect_usage_error "--tree-depth and --tree-nodes shape --tree-topk's trees; give --tree-topk" "${tree[@]}" --tree-depth 3 "${out[@]}"
expect_usage_error "--tree-topk: give a tree's shape (--tree) or grow it (--tree-topk), not both" "${tree[@]}" \
  --tree "$work/chain.json" --tree-topk 2 "${out[@]}"

# Sampled trees: recursive rejection over siblings, the invariants checked every round; a
# sampling fault of trees needs a temperature.
generate --engine eqspec --draft "$fixtures/draft" --tree "$work/choices.json" --dtype float64 --batch-size 5 \
  --temperature 0.8 --top-k 5 --seed 7 --check-invariants --out "$work/tree-sampled.jsonl" >"$work/tree-sampled.out" 2>&1 ||
  fail "sampled tree: $(tail -1 "$work/tree-sampled.out")"
[ "$(token_ids "$work/tree-sampled.jsonl")" != "$(token_ids "$work/oracle64.jsonl")" ] || fail "a sampled tree run decoded greedily"
expect_usage_error "--inject-fault tree-rejected-sibling-kept: a sampling fault" "${tree[@]}" --tree "$work/chain.json" \
  --inject-fault tree-rejected-sibling-kept "${out[@]}"

finish "generate in float64"
