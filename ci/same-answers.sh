#!/usr/bin/env bash
# Whether a change to the decoders kept their outputs: runs `generate` with two builds of
# conformance (BEFORE and AFTER, e.g. one built from the commit before the change) on the
# fixture pair and compares the answer files without their times. Every engine in float64 and
# float32, greedy and sampled (T 0.8, top-k 12, top-p 0.9, min-p 0.05), then every seeded fault
# on eqspec and exspec in float64; a run that exits 2 must give the same error. Prints each
# difference and exits 1 when there is one. About 5 minutes on 2 cores.
#   ci/same-answers.sh BEFORE AFTER [PAIR]   (PAIR: a folder with target/ and draft/, default build/fixture_pair)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -ge 2 ] || { echo "usage: ci/same-answers.sh BEFORE AFTER [PAIR]" >&2; exit 2; }
before=$(realpath "$1") after=$(realpath "$2") pair=$(realpath "${3:-$root/build/fixture_pair}")
cd "$root"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--target "$pair/target" --bench fixtures/bench/short_prompts.jsonl --max-new-tokens 40 --batch-size 5)
sampled=(--temperature 0.8 --top-k 12 --top-p 0.9 --min-p 0.05 --seed 3)
faults=$(grep -o '"[a-z-]*"' impl/decoding/faults.cpp | tr -d '"' | tr '\n' ' ')

# run NAME OPTIONS...: both builds, each into its own folder.
run() {
  local name=$1
  shift
  for side in before after; do
    local binary=$before
    [ "$side" = after ] && binary=$after
    mkdir -p "$work/$side"
    OMP_NUM_THREADS=1 "$binary" generate "${common[@]}" "$@" --out "$work/$side/$name.jsonl" >/dev/null 2>"$work/$side/$name.err"
    echo $? >"$work/$side/$name.rc"
  done
}

for dtype in float64 float32; do
  for mode in greedy sampled; do
    warpers=()
    [ "$mode" = sampled ] && warpers=("${sampled[@]}")
    for engine in oracle nonspec-batch eqspec exspec rollback; do
      draft=(--draft "$pair/draft" --draft-tokens 3)
      [ "$engine" = oracle ] || [ "$engine" = nonspec-batch ] && draft=()
      run "$dtype-$mode-$engine" --engine "$engine" "${draft[@]}" "${warpers[@]}" --dtype "$dtype"
    done
  done
done
for fault in $faults; do
  for engine in eqspec exspec; do
    for mode in greedy sampled; do
      warpers=()
      [ "$mode" = sampled ] && warpers=("${sampled[@]}")
      run "fault-$fault-$engine-$mode" --engine "$engine" --draft "$pair/draft" --draft-tokens 3 "${warpers[@]}" \
        --dtype float64 --inject-fault "$fault"
    done
  done
done

python3 - "$work/before" "$work/after" <<'PY'
import glob, json, os, sys
before, after = sys.argv[1:3]

def answers(path):
    out = []
    for line in open(path):
        answer = json.loads(line)
        answer.pop("tstamp", None)
        answer.get("run", {}).pop("started_at", None)
        for choice in answer.get("choices", []):
            choice.pop("wall_time", None)
        out.append(answer)
    return out

runs = differ = 0
for rc_file in sorted(glob.glob(os.path.join(before, "*.rc"))):
    name = os.path.basename(rc_file)[:-3]
    runs += 1
    read = lambda side, ext: open(os.path.join(side, name + ext)).read()
    if read(before, ".rc") != read(after, ".rc"):
        print(f"{name}: exit {read(before, '.rc').strip()} before, {read(after, '.rc').strip()} after")
        differ += 1
    elif read(before, ".rc").strip() != "0":
        if read(before, ".err") != read(after, ".err"):
            print(f"{name}: another error message")
            differ += 1
    elif answers(os.path.join(before, name + ".jsonl")) != answers(os.path.join(after, name + ".jsonl")):
        print(f"{name}: answers differ")
        differ += 1
print(f"{runs - differ} of {runs} runs give the same answers")
sys.exit(1 if differ else 0)
PY
