#!/usr/bin/env bash
# The full comparison of specgate with Hugging Face transformers on the real model, identical
# weights, float32 on the CPU unless said: SmolLM2-135M-Instruct and its layer-skip draft
# (build/real_pair). Writes into OUT (default reports/benchmarks/real_model):
#   prompts.json     specgate's smollm2 prompt ids against apply_chat_template, 480 first turns
#   logprobs.json    teacher-forced log-probabilities, specgate's oracle against transformers
#   greedy.json      the oracle scored against transformers' greedy generate, every divergence
#                    attributed with transformers' own log-probabilities
#   spec_float64_*.json, spec_float32_*.json   EQSPEC and EXSPEC scored against the oracle
#   assisted.json    transformers' assisted generation scored against its greedy answers (8
#                    questions: it runs at a few tokens/s with this draft)
#   speed.json       tokens/s of both on 8 questions, interleaved repeats (peers/transformers/speed.py)
# QUESTIONS (default 32, spread evenly over Spec-Bench's 480), NEW_TOKENS (default 96),
# SPEED_TOKENS (default 64) and REPEAT (default 3) size it; about 40 minutes on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/benchmarks/real_model}"
questions="${QUESTIONS:-32}" new_tokens="${NEW_TOKENS:-96}"
source "$root/ci/setup.sh"
# Relative paths, so that the reports name files as anyone's checkout has them.
python=build/venv/bin/python B=build/bin/conformance pair=build/real_pair peers=peers/transformers
specbench=../shared/specbench/question.jsonl work=build/real-model-work
mkdir -p "$out" "$work"
say() { echo "== $*"; }

say "prompt ids on all 480 first turns"
"$python" "$peers/prompts.py" --model "$pair/target" --bench "$specbench" --out "$work/all_prompts.jsonl"
"$B" tokenize --target "$pair/target" --bench "$work/all_prompts.jsonl" --chat-template smollm2 --out "$work/tokenized.jsonl"
"$python" "$peers/compare_prompts.py" "$work/tokenized.jsonl" "$work/all_prompts.jsonl" --json "$out/prompts.json"

spread() { "$python" -c "import sys; n = int(sys.argv[1]); print(','.join(str(81 + 480 * i // n) for i in range(n)))" "$1"; }
"$python" "$peers/prompts.py" --model "$pair/target" --bench "$specbench" --question-ids "$(spread "$questions")" \
  --out "$work/bench.jsonl"
"$python" "$peers/prompts.py" --model "$pair/target" --bench "$specbench" --question-ids "$(spread 8)" --out "$work/bench8.jsonl"

say "oracle and transformers' greedy generate, $questions questions, $new_tokens new tokens"
"$B" generate --engine oracle --target "$pair/target" --bench "$work/bench.jsonl" --dtype float32 \
  --max-new-tokens "$new_tokens" --top-logprobs 5 --out "$work/oracle32.jsonl"
"$python" "$peers/logprobs_diff.py" --model "$pair/target" --answers "$work/oracle32.jsonl" --out "$out/logprobs.json" || true
"$python" "$peers/generate.py" --target "$pair/target" --bench "$work/bench.jsonl" --mode greedy --batch-size 1 \
  --max-new-tokens "$new_tokens" --top-logprobs 5 --out "$work/hf_greedy.jsonl"
"$B" score --reference "$work/hf_greedy.jsonl" --candidate "$work/oracle32.jsonl" --tokenizer "$pair/target" \
  --json "$out/greedy.json" --markdown "$out/greedy.md" || true

say "EQSPEC and EXSPEC against the oracle: float64 on 8 questions, float32 on $questions"
"$B" generate --engine oracle --target "$pair/target" --bench "$work/bench8.jsonl" --dtype float64 \
  --max-new-tokens 64 --out "$work/oracle64.jsonl"
for engine in eqspec exspec; do
  "$B" generate --engine $engine --target "$pair/target" --draft "$pair/draft" --bench "$work/bench8.jsonl" \
    --dtype float64 --batch-size 8 --max-new-tokens 64 --out "$work/${engine}64.jsonl"
  "$B" score --reference "$work/oracle64.jsonl" --candidate "$work/${engine}64.jsonl" --min-exact 1.0 \
    --json "$out/spec_float64_$engine.json"
  "$B" generate --engine $engine --target "$pair/target" --draft "$pair/draft" --bench "$work/bench.jsonl" \
    --dtype float32 --batch-size 8 --max-new-tokens "$new_tokens" --out "$work/${engine}32.jsonl"
  "$B" score --reference "$work/oracle32.jsonl" --candidate "$work/${engine}32.jsonl" --tokenizer "$pair/target" \
    --rescore-with "$pair/target" --json "$out/spec_float32_$engine.json" --markdown "$out/spec_float32_$engine.md" || true
done

say "transformers' assisted generation scored from its answers alone"
"$python" "$peers/generate.py" --target "$pair/target" --draft "$pair/draft" --bench "$work/bench8.jsonl" --mode assisted \
  --batch-size 1 --draft-tokens 4 --max-new-tokens "$new_tokens" --top-logprobs 5 --out "$work/hf_assisted.jsonl"
"$python" "$peers/generate.py" --target "$pair/target" --bench "$work/bench8.jsonl" --mode greedy --batch-size 1 \
  --max-new-tokens "$new_tokens" --top-logprobs 5 --out "$work/hf_greedy8.jsonl"
"$B" score --reference "$work/hf_greedy8.jsonl" --candidate "$work/hf_assisted.jsonl" --tokenizer "$pair/target" \
  --rescore-with "$pair/target" --json "$out/assisted.json" --markdown "$out/assisted.md" || true

say "speed, interleaved"
"$python" "$peers/speed.py" --conformance "$B" --python "$python" --target "$pair/target" --draft "$pair/draft" \
  --bench "$work/bench8.jsonl" --work "$work/speed" --out "$out/speed.json" --repeat "${REPEAT:-3}" \
  --max-new-tokens "${SPEED_TOKENS:-64}"
cp "$pair/real_pair_report.json" "$out/real_pair_report.json"
echo "figures in $out"
