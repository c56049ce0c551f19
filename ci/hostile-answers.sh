#!/usr/bin/env bash
# sampling, acceptance and score on hostile answer files, built from sampled and greedy EQSPEC
# runs and an oracle run on the fixture pair: tiny answers (one prompt token, one generated
# token; TINY of them, default 10^6, for score, which reads them, and a tenth as many for sampling
# and acceptance, which re-score every one), one answer of 10^7 tokens (past the longest line
# any reader takes) and one of 5 * 10^6 (within it), log-probabilities that are not finite
# numbers or lie above 0, and files mixing the settings of two runs. Prints a Markdown table: each run's exit
# status, seconds, peak memory and the first line it wrote to stderr; a run still going after
# LIMIT seconds (default 900) is stopped (exit 124).
# Needs build/ (ci/setup.sh) and its fixture pair.
#   ci/hostile-answers.sh [TINY] [LIMIT]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
conformance="$root/build/bin/conformance"
target="$root/build/fixture_pair/target" draft="$root/build/fixture_pair/draft"
bench="$root/fixtures/bench/sample.jsonl"
tiny=${1:-1000000} limit=${2:-900}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$conformance" generate --engine eqspec --target "$target" --draft "$draft" --bench "$bench" --dtype float64 \
  --temperature 0.7 --seed 3 --max-new-tokens 8 --limit 2 --out "$work/sampled.jsonl" >/dev/null
"$conformance" generate --engine eqspec --target "$target" --draft "$draft" --bench "$bench" --dtype float64 \
  --max-new-tokens 8 --limit 2 --out "$work/greedy.jsonl" >/dev/null
"$conformance" generate --engine oracle --target "$target" --bench "$bench" --dtype float64 --top-logprobs 3 \
  --max-new-tokens 8 --limit 2 --out "$work/oracle.jsonl" >/dev/null

python3 - "$work" "$tiny" <<'PY'
import copy, json, os, re, sys
work, tiny_count = sys.argv[1], int(sys.argv[2])
sampled = [json.loads(line) for line in open(f"{work}/sampled.jsonl")]
greedy = [json.loads(line) for line in open(f"{work}/greedy.jsonl")]
oracle = [json.loads(line) for line in open(f"{work}/oracle.jsonl")]

def write(name, answers):
    with open(f"{work}/{name}.jsonl", "w") as out:
        for answer in answers:
            out.write(json.dumps(answer, separators=(",", ":")) + "\n")

def tiny(base, count, name):
    """`count` answers of one prompt token and one generated token, each its own question and stream."""
    template = copy.deepcopy(base)
    choice = template["choices"][0]
    prompt, token = choice["prompt_token_ids"][0][:1], choice["token_ids"][0][:1]
    for key in ("top_logprobs",):
        choice.pop(key, None)
    choice.update({"turns": [""], "token_ids": [token], "prompt_token_ids": [prompt], "new_tokens": [1]})
    if "accept_lengths" in choice:
        choice["accept_lengths"] = [[1]]
    for key in ("decoding_steps", "drafted_tokens", "accepted_drafts"):
        if key in choice:
            choice[key] = [1 if key == "decoding_steps" else 0]
    line = json.dumps(template, separators=(",", ":"))
    head, tail = line.split('"question_id":', 1)
    tail = tail.split(",", 1)[1]
    stream = template["run"]["sampling"].get("stream")
    with open(f"{work}/{name}.jsonl", "w") as out:
        for q in range(count):
            text = head + f'"question_id":{q},' + tail
            if stream is not None:
                text = text.replace(f'"stream":{stream}', f'"stream":{q}')
            out.write(text + "\n")

def long_answer(base, tokens):
    answer = copy.deepcopy(base)
    choice = answer["choices"][0]
    choice.pop("top_logprobs", None)
    choice["token_ids"] = [[5] * tokens]
    choice["turns"] = [""]
    choice["new_tokens"] = [tokens]
    if "accept_lengths" in choice:  # rounds of 5 tokens: 5 * 10^6 tokens stay within one line's cap
        choice["accept_lengths"] = [[5] * (tokens // 5)]
    for key in ("decoding_steps", "drafted_tokens", "accepted_drafts"):
        choice.pop(key, None)
    answer["run"]["max_new_tokens"] = tokens
    return answer

for count, size in ((tiny_count, "many"), (tiny_count // 10, "tenth")):
    tiny(sampled[0], count, f"tiny-{size}-sampled")
    tiny(greedy[0], count, f"tiny-{size}-greedy")
for tokens, name in ((10**7, "ten-million"), (5 * 10**6, "five-million")):
    write(f"{name}-sampled", [long_answer(sampled[0], tokens)])
    write(f"{name}-greedy", [long_answer(greedy[0], tokens)])

# Log-probabilities that are not finite numbers (NaN, Infinity, a number past a double's range)
# or not log-probabilities (above 0), every one of the first answer's.
for name, value in (("nan", "NaN"), ("inf", "-Infinity"), ("overflow", "-1e999"), ("above-zero", "5.0")):
    lines = [json.dumps(answer, separators=(",", ":")) for answer in oracle]
    lines[0] = re.sub(r'"logprob":-?[0-9.eE+-]+', '"logprob":' + value, lines[0])
    with open(f"{work}/{name}-oracle.jsonl", "w") as out:
        out.write("\n".join(lines) + "\n")

# One file, two runs: the second answer's temperature, dtype or K differs from the first's.
for field, path, value in (("temperature", ("run", "sampling", "temperature"), 0.8), ("dtype", ("run", "dtype"), "bfloat16"),
                           ("draft_tokens", ("run", "draft_tokens"), 2), ("engine", ("run", "engine"), "exspec")):
    mixed = copy.deepcopy(sampled)
    node = mixed[1]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    write(f"mixed-{field}-sampled", mixed)
PY

run() {  # NAME COMMAND ARGS...
  local name=$1
  shift
  local start status seconds peak
  /usr/bin/time -f "%e %M" -o "$work/time" timeout "$limit" "$conformance" "$@" >"$work/out" 2>"$work/err"
  status=$?
  read -r seconds peak <"$work/time" || true
  [ "$(head -c 7 "$work/time")" = "Command" ] && read -r seconds peak < <(tail -1 "$work/time")
  printf '| %s | `%s` | %s | %s | %s MB | %s |\n' "$name" "$1" "$status" "$seconds" "$((peak / 1024))" \
    "$(head -1 "$work/err" | cut -c1-160 | sed 's/|/\\|/g')"
}

echo "| file | command | exit | seconds | peak memory | first line of stderr |"
echo "|---|---|---|---|---|---|"
for kind in sampled greedy; do
  run "$tiny tiny, $kind" score --reference "$work/tiny-many-$kind.jsonl" --candidate "$work/tiny-many-$kind.jsonl"
done
for file in tiny-tenth ten-million five-million mixed-temperature mixed-dtype mixed-draft_tokens mixed-engine; do
  for kind in sampled greedy; do
    answers="$work/$file-$kind.jsonl"
    [ -f "$answers" ] || continue
    name="$file, $kind"
    [ $file = tiny-tenth ] && name="$((tiny / 10)) tiny, $kind"
    [ $kind = sampled ] && run "$name" sampling --answers "$answers" --target "$target" --engine-dtype float64
    run "$name" acceptance --answers "$answers" --target "$target" --draft "$draft" --engine-dtype float64
    [ $file = tiny-tenth ] || run "$name" score --reference "$answers" --candidate "$answers"
  done
done
# A reference's log-probabilities are read where the candidate departs from it: the sampled
# answers depart from the oracle's.
for file in nan inf overflow above-zero; do
  run "$file-oracle" score --reference "$work/$file-oracle.jsonl" --candidate "$work/sampled.jsonl"
  run "$file-oracle" score --reference "$work/$file-oracle.jsonl" --candidate "$work/sampled.jsonl" --rescore-with "$target"
done
