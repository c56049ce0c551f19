#!/usr/bin/env bash
# Prompt lookup (n-gram drafting) on the real model: SmolLM2-135M-Instruct (build/real_pair),
# float32 on the CPU, one thread per engine, K 4, n-grams of 1 to NGRAM_MAX (default 3), NEW_TOKENS
# (default 128) new tokens, 8 first turns of each Spec-Bench subtask, smollm2 template. Writes into
# OUT (default reports/benchmarks/ngram):
#   bench_<subtask>.json  `conformance bench` per subtask: nonspec-batch and EQSPEC with --drafter
#                         ngram at batch 1 and 8, REPEAT (default 2) interleaved runs
#   speed.json            specgate against transformers on 2 questions per subtask, interleaved:
#                         EQSPEC + ngram at batch 1 against transformers' prompt lookup, nonspec
#                         against greedy, EQSPEC and EXSPEC + ngram at batch 8 against nonspec
#                         (peers/transformers/speed.py --drafter ngram)
#   identical.json        EQSPEC + ngram's answers scored against transformers' prompt-lookup and
#                         greedy answers (exact match expected up to float32 rounding)
#   ngram.md              the tables: per subtask and overall
# The two run side by side, one thread each: about 25 minutes on 2 cores otherwise idle.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/benchmarks/ngram}"
repeat="${REPEAT:-2}" ngram_max="${NGRAM_MAX:-3}" new_tokens="${NEW_TOKENS:-128}"
source "$root/ci/setup.sh"
python=build/venv/bin/python B=build/bin/conformance pair=build/real_pair peers=peers/transformers
specbench=../shared/specbench/question.jsonl work=build/ngram-work
mkdir -p "$out" "$work"
say() { echo "== $*"; }

declare -A first=([mt_bench]=81 [translation]=161 [summarization]=241 [qa]=321 [math_reasoning]=401 [rag]=481)
subtasks=(mt_bench translation summarization qa math_reasoning rag)
speed_ids=()
for subtask in "${subtasks[@]}"; do
  ids=$(seq -s, "${first[$subtask]}" 10 $((first[$subtask] + 70)))
  speed_ids+=("${first[$subtask]},$((first[$subtask] + 40))")
  "$python" "$peers/prompts.py" --model "$pair/target" --bench "$specbench" --question-ids "$ids" \
    --out "$work/$subtask.jsonl"
done
"$python" "$peers/prompts.py" --model "$pair/target" --bench "$specbench" --question-ids "$(IFS=,; echo "${speed_ids[*]}")" \
  --out "$work/speed.jsonl"

say "specgate against transformers, interleaved (in the background)"
"$python" "$peers/speed.py" --conformance "$B" --python "$python" --target "$pair/target" --drafter ngram \
  --ngram-max "$ngram_max" --bench "$work/speed.jsonl" --work "$work/speed" --out "$out/speed.json" --repeat "$repeat" \
  --max-new-tokens "$new_tokens" --draft-tokens 4 >"$work/speed.log" 2>&1 &
speed=$!
for subtask in "${subtasks[@]}"; do
  say "bench, $subtask"
  OMP_NUM_THREADS=1 "$B" bench --engines nonspec-batch,eqspec --drafter ngram --ngram-max "$ngram_max" \
    --batch-sizes 1,8 --draft-tokens 4 --max-new-tokens "$new_tokens" --target "$pair/target" --bench "$work/$subtask.jsonl" \
    --repeat "$repeat" --json "$out/bench_$subtask.json"
done
wait $speed || { cat "$work/speed.log"; exit 1; }
cat "$work/speed.log"

say "answers: EQSPEC + ngram against transformers' prompt lookup and greedy"
"$B" score --reference "$work/speed/transformers_prompt-lookup_b1.jsonl" --candidate "$work/speed/specgate_eqspec_b1.jsonl" \
  --tokenizer "$pair/target" --rescore-with "$pair/target" --json "$work/identical_lookup.json" || true
"$B" score --reference "$work/speed/transformers_greedy_b1.jsonl" --candidate "$work/speed/specgate_eqspec_b1.jsonl" \
  --tokenizer "$pair/target" --rescore-with "$pair/target" --json "$work/identical_greedy.json" || true
"$python" ci/ngram_report.py --out "$out" --work "$work" --subtasks "${subtasks[@]}"
echo "figures in $out"
