#!/usr/bin/env bash
# `generate --resume` on the fixture pair continues only answers of the same run: an --out whose
# answers were made with other settings (engine, models, dtype, sampling, seed, chat template,
# max_new_tokens, draft tokens, trees) is refused with exit 2, naming the line and the first field
# that differs, and left as it was; answers written before the draft model was recorded still
# resume; an --out that is a FIFO or a folder is refused at once, never waited on.
set -uo pipefail
conformance_program=$1 fixtures=$2 bench=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"
# A run that hangs exits 124 and fails the check. Generously: on a loaded machine one of these
# runs has taken 45 s.
conformance="$work/conformance"
printf '#!/bin/sh\nexec timeout 300 "%s" "$@"\n' "$conformance_program" >"$conformance"
chmod +x "$conformance"

out="$work/answers.jsonl"
# Sets `flags` to generate's flags of a sampled eqspec run, changed by each --FLAG=VALUE given
# (an empty VALUE leaves the flag out; --FLAG alone adds it). In float64: a resumed run batches
# its questions otherwise than one run does, and float32 would let that rounding decide a draw.
set_flags() {
  local -A value=([--engine]=eqspec [--target]="$fixtures/target" [--draft]="$fixtures/draft" [--bench]="$bench"
                  [--max-new-tokens]=8 [--temperature]=0.7 [--seed]=3 [--out]="$out" [--limit]=4 [--dtype]=float64)
  local change
  for change in "$@"; do value[${change%%=*}]=${change#*=}; done
  flags=()
  for flag in "${!value[@]}"; do [ -n "${value[$flag]}" ] && flags+=("$flag" "${value[$flag]}"); done
}
set_flags --limit=2
"$conformance" generate "${flags[@]}" >/dev/null || fail "sampled run"
cp "$out" "$work/two.jsonl"
# Resumed with other settings: refused, the file left as it was.
refused() {  # FIELD, then the changes to the flags
  local field=$1
  shift
  set_flags "$@"
  expect_usage_error "$out:1: field '$field': " generate "${flags[@]}" --resume
  cmp -s "$out" "$work/two.jsonl" || fail "a refused --resume changed --out ($field)"
}
refused run.sampling.temperature --temperature= --seed=
refused run.engine --engine=exspec
refused run.sampling.seed --seed=4
refused run.sampling.top_k --top-k=5
refused run.max_new_tokens --max-new-tokens=9
refused run.dtype --dtype=float32
refused chat_template --chat-template=vicuna
refused run.draft_tokens --draft-tokens=3
printf '{"parents": [-1, 0]}\n' >"$work/tree.json"
refused run.tree --tree="$work/tree.json"
cp -r "$fixtures/target" "$work/other-target"
refused model_id --target="$work/other-target"
cp -r "$fixtures/draft" "$work/other-draft"
refused run.draft --draft="$work/other-draft"
set_flags --max-new-tokens=9
"$conformance" generate "${flags[@]}" --resume 2>"$work/stderr"
grep -q "field 'run.max_new_tokens': 8 here, 9 in this run" "$work/stderr" || fail "the message does not give both values"

# The same settings: resumed, and the file is the one run's.
set_flags
"$conformance" generate "${flags[@]}" --resume >/dev/null || fail "resume with the same settings"
set_flags --out="$work/whole.jsonl"
"$conformance" generate "${flags[@]}" >/dev/null || fail "whole run"
python3 - "$work/whole.jsonl" "$out" <<'PY' || fail "a resumed run differs from one run"
import json, sys
def answers(path):
    return [(a["question_id"], a["choices"][0]["token_ids"]) for a in map(json.loads, open(path))]
whole, parts = answers(sys.argv[1]), answers(sys.argv[2])
assert len(whole) == 4 and whole == parts, (whole, parts)
PY
# Answers written before the draft model's name was recorded resume as before.
python3 - "$work/two.jsonl" "$work/older.jsonl" <<'PY' || fail "answers do not record the draft model"
import json, sys
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        answer = json.loads(line)
        del answer["run"]["draft"]
        out.write(json.dumps(answer) + "\n")
PY
set_flags --out="$work/older.jsonl"
"$conformance" generate "${flags[@]}" --resume >/dev/null || fail "resume of older answers"
[ "$(wc -l <"$work/older.jsonl")" -eq 4 ] || fail "resume of older answers did not complete them"
# A line that is no answer of a generate run.
printf '{"question_id": 1, "token_ids": [4]}\n' >"$work/plain.jsonl"
set_flags --out="$work/plain.jsonl"
expect_usage_error "plain.jsonl:1: field 'run': this line records no run settings" generate "${flags[@]}" --resume

# Not a regular file: a FIFO no one writes to, and a folder.
mkfifo "$work/fifo.jsonl"
set_flags --out="$work/fifo.jsonl"
expect_usage_error "--out: $work/fifo.jsonl: not a regular file (a FIFO)" generate "${flags[@]}" --resume
mkdir "$work/folder.jsonl"
set_flags --out="$work/folder.jsonl"
expect_usage_error "--out: $work/folder.jsonl: not a regular file (a folder)" generate "${flags[@]}" --resume

finish "generate --resume"
