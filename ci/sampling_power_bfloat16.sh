#!/usr/bin/env bash
# The one-sample verdict of `conformance sampling` on bfloat16 engines: its power against warper
# bugs and sampling faults, and its false alarms on a correct engine. The fixture pair in
# bfloat16 (EQSPEC, K 3, batch 6, the 30 questions of fixtures/bench/short_prompts.jsonl, 64 new
# tokens a file), judged by the float64 re-scorer with the bfloat16 support margin and boundary
# rate at alpha 0.05 at T 0.8, top-k 12, top-p 0.9 (min-p 0.1 for the min-p bug).
#
# A warper bug is an engine sampling with other warpers than it states: top-p ignored (sampled at
# top-p 1), top-k off by one (top-k 13), min-p on the distribution before the temperature (min-p
# 0.1 there is 0.1^(1/0.8) = 0.056 after it), and warpers before the temperature (seeded:
# --inject-fault warpers-before-temperature, top-k and top-p cut the untempered distribution). A
# sampling fault is one of the catalogue seeded with --inject-fault. Each of DRAWS draws (default 10) takes fresh seeds and PIT seed, and is judged
# at the first file (1,920 tokens) and at FILES files (default 5: 9,600 tokens).
#
# CORRECT_RUNS (default 200) runs of the correct engine at 1,920 tokens measure the false-alarm
# rate: the verdict holds alpha when the one-sided 95% Clopper-Pearson upper bound of the rate is
# at most TOLERANCE (default 0.1, twice alpha); the pooled group's p-values are kept and tested
# for uniformity (Kolmogorov-Smirnov). CASES restricts the cases (default: all). JOBS runs side
# by side (default: the cores), draw by draw across the cases and the correct runs, so that a run
# stopped early leaves every case with as many draws; REPORT_ONLY=1 then writes the report from
# the verdicts already in build/sampling-power-bfloat16. Writes OUT/bfloat16_power.json and .md
# (default reports/sampling).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/sampling}"
draws="${DRAWS:-10}" files="${FILES:-5}" correct_runs="${CORRECT_RUNS:-200}" tolerance="${TOLERANCE:-0.1}"
jobs="${JOBS:-$(nproc)}" gate="${GATE:-}" correct_files="${CORRECT_FILES:-1}"
# Draw i's files take seeds (16 i + 1 ... 16 i + FILES) x 1000: more than 16 would be the next draw's.
for count in "$files" "$correct_files"; do
  [ "$count" -ge 1 ] && [ "$count" -le 16 ] || { echo "FILES, CORRECT_FILES: 1 to 16, got $count" >&2; exit 2; }
done
cases="${CASES:-top-p-ignored top-k-off-by-one min-p-before-temperature always-accept residual-not-normalised raw-draft-distribution bonus-from-draft greedy-verification draft-filter-skipped stale-draft-distribution warpers-before-temperature}"
work=build/sampling-power-bfloat16${gate:+-gate}
name=bfloat16${gate:+_gate}_power
python=build/venv/bin/python
if [ -z "${REPORT_ONLY:-}" ]; then
  build_targets="conformance fixture_pair"
  source "$root/ci/setup.sh"
  rm -rf "$work"
  mkdir -p "$work"
  # Its own copy of the CLI: a rebuild while it runs changes nothing under it.
  cp build/bin/conformance "$work/conformance"
fi
mkdir -p "$out"

# draw CASE DRAW FILES: generates FILES files of the case with seeds of this draw, judges the
# first and all of them; appends one JSON line per verdict to $work/CASE-DRAW.jsonl.
draw() {
  local name=$1 index=$2 count=$3
  local B="$work/conformance" F=build/fixture_pair dir="$work/$name-$index"
  local stated=(--temperature 0.8 --top-k 12 --top-p 0.9) sampled=(--temperature 0.8 --top-k 12 --top-p 0.9) fault=()
  case "$name" in
    correct) ;;
    top-p-ignored) sampled=(--temperature 0.8 --top-k 12 --top-p 1) ;;
    top-k-off-by-one) sampled=(--temperature 0.8 --top-k 13 --top-p 0.9) ;;
    min-p-before-temperature)
      stated=(--temperature 0.8 --min-p 0.1)
      sampled=(--temperature 0.8 --min-p 0.056234) ;;
    *) fault=(--inject-fault "$name") ;;
  esac
  mkdir -p "$dir"
  local answers=() baseline=() file
  for file in $(seq "$count"); do
    OMP_NUM_THREADS=1 "$B" generate --engine eqspec --target "$F/target" --draft "$F/draft" --draft-tokens 3 \
      --batch-size 6 --bench fixtures/bench/short_prompts.jsonl --max-new-tokens 64 --dtype bfloat16 "${sampled[@]}" \
      "${fault[@]}" --seed $(((index * 16 + file) * 1000)) --out "$dir/$file.jsonl" >/dev/null
    answers+=(--answers "$dir/$file.jsonl")
    [ -n "$gate" ] || continue
    OMP_NUM_THREADS=1 "$B" generate --engine nonspec-batch --target "$F/target" --batch-size 6 \
      --bench fixtures/bench/short_prompts.jsonl --max-new-tokens 64 --dtype bfloat16 "${sampled[@]}" "${fault[@]}" \
      --seed $(((index * 16 + file) * 1000 + 500)) --out "$dir/off-$file.jsonl" >/dev/null
    baseline+=(--baseline "$dir/off-$file.jsonl")
  done
  local sizes=(1)
  [ "$count" -gt 1 ] && sizes+=("$count")
  local size verdicts=(one-sample) alpha=0.05
  [ -z "$gate" ] || { verdicts=(one-sample two-sample acceptance); alpha=0.016667; }
  for size in "${sizes[@]}"; do
    local verdict line="{\"case\": \"$name\", \"draw\": $index, \"files\": $size"
    for verdict in "${verdicts[@]}"; do
      local command=(sampling --target "$F/target" "${answers[@]:0:$((size * 2))}" "${stated[@]}")
      case "$verdict" in
        one-sample) command+=(--pit-seed $((index * 16 + size))) ;;
        two-sample) command+=("${baseline[@]:0:$((size * 2))}" --pit-seed $((index * 16 + size + 100000))) ;;
        acceptance) command=(acceptance --target "$F/target" --draft "$F/draft" "${answers[@]:0:$((size * 2))}") ;;
      esac
      local status=0 report="$dir/$size-$verdict"
      OMP_NUM_THREADS=1 "$B" "${command[@]}" --alpha $alpha --json "$report.json" >"$report.out" 2>&1 || status=$?
      [ $status -le 1 ] || { echo "$verdict $name $index failed: $(cat "$report.out")" >&2; exit 1; }
      line+=", \"$verdict\": $(tr -d '\n' <"$report.json")"
    done
    echo "$line}" >>"$work/$name-$index.jsonl"
  done
  rm -f "$dir"/*.jsonl
}
export -f draw
export work gate

if [ -z "${REPORT_ONLY:-}" ]; then
  for index in $(seq "$(( draws > correct_runs ? draws : correct_runs ))"); do
    [ "$index" -gt "$draws" ] || for name in $cases; do echo "$name $index $files"; done
    [ "$index" -gt "$correct_runs" ] || echo "correct $((index + 1000)) $correct_files"
  done | nice xargs -P "$jobs" -L 1 bash -c 'draw "$@"' _
fi

cat "$work"/*-*.jsonl >"$work/results.jsonl"
"$python" - "$work/results.jsonl" "$out/$name" "$tolerance" "$draws $files $correct_runs $correct_files" "$cases" <<'PY'
import json, pathlib, sys
from scipy import stats
rows = [json.loads(line) for line in open(sys.argv[1])]
out, tolerance, (draws, files, runs, correct_files), cases = (pathlib.Path(sys.argv[2]), float(sys.argv[3]),
                                                              map(int, sys.argv[4].split()), sys.argv[5].split())
verdicts = [v for v in ("one-sample", "two-sample", "acceptance") if v in rows[0]]
gate = len(verdicts) > 1

def summary(row):
    r = row["one-sample"]
    rate = r["boundary_rate"] or {}
    result = {"case": row["case"], "draw": row["draw"], "files": row["files"], "tokens": r["answers"]["tokens"],
              "p_all": r["groups"][0]["p_value"] if r["groups"] else None,
              "outside_support": len(r["answers"]["outside_support"]), "boundary": len(r["answers"]["boundary"]),
              "boundary_expected": rate.get("expected"), "boundary_p": rate.get("p_value")}
    rejected = {v: (row[v]["verdict"] if v != "acceptance" else "rejected" if row[v]["rejected"] else "passed")
                for v in verdicts}
    reasons = [f"{v}: {reason}" if gate else reason for v in verdicts for reason in row[v]["reasons"]]
    if gate:
        result["verdicts"] = rejected
        result["acceptance_ratio"] = row["acceptance"]["test"]["ratio"]
        result["acceptance_p"] = row["acceptance"]["test"]["p_value"]
    result["verdict"] = "rejected" if "rejected" in rejected.values() else "passed"
    result["reasons"] = reasons
    return result

results = [summary(row) for row in rows]
command = (f"`{'GATE=1 ' if gate else ''}DRAWS={draws} FILES={files} CORRECT_RUNS={runs} "
           + (f"CORRECT_FILES={correct_files} " if correct_files != 1 else "")
           + f"CASES=\"{' '.join(cases)}\" ./ci/sampling_power_bfloat16.sh`")
design = ("EQSPEC on the fixture pair in bfloat16 (K 3, batch 6, the 30 short-prompt questions, 64 new tokens a file) "
          "at T 0.8, top-k 12, top-p 0.9 (T 0.8, min-p 0.1 for the min-p bug), float64 re-scorer. Each draw its own "
          "seeds and PIT seeds.")
if gate:
    lines = ["# The bfloat16 gate: power and false alarms", "",
             f"{command}: {design} Judged by the README's bfloat16 gate, each verdict at alpha 0.05 / 3: one-sample "
             "`sampling` (rounding allowance, support margin and boundary rate), two-sample `sampling` against the "
             "same engine with speculation off (nonspec-batch in bfloat16, as many files, the same warpers and fault) "
             "and `acceptance` with the draft checkpoint; the gate rejects when any of them does.", "",
             "## Power", "", "| case | tokens | one-sample | two-sample | acceptance | gate | draws |",
             "|---|---:|---:|---:|---:|---:|---:|"]
else:
    lines = ["# The one-sample verdict on bfloat16 engines: power and false alarms", "",
             f"{command}: {design} Judged by `conformance sampling` (bfloat16 support margin and boundary rate, "
             "alpha 0.05).", "",
             "## Power", "", "| case | tokens | rejected | draws | median outside | median boundary (expected) |",
             "|---|---:|---:|---:|---:|---:|"]
def median(values):
    values = sorted(v for v in values if v is not None)
    return values[len(values) // 2] if values else None
def count(chosen, verdict=None):
    return sum((r["verdicts"][verdict] if verdict else r["verdict"]) == "rejected" for r in chosen)
for case in cases:
    for size in sorted({r["files"] for r in results if r["case"] == case}):
        chosen = [r for r in results if r["case"] == case and r["files"] == size]
        tokens = median(r["tokens"] for r in chosen)
        if gate:
            lines.append(f"| {case} | {tokens} | " + " | ".join(str(count(chosen, v)) for v in verdicts)
                         + f" | **{count(chosen)}** | {len(chosen)} |")
            continue
        expected = median(r["boundary_expected"] for r in chosen)
        lines.append(f"| {case} | {tokens} | {count(chosen)} | {len(chosen)} | "
                     f"{median(r['outside_support'] for r in chosen)} | {median(r['boundary'] for r in chosen)} "
                     f"({'-' if expected is None else f'{expected:.2f}'}) |")
largest = max((r["files"] for r in results if r["case"] != "correct"), default=None)
if largest is not None:
    def caught(case):
        chosen = [r for r in results if r["case"] == case and r["files"] == largest]
        return count(chosen), len(chosen)
    met = [case for case in cases if caught(case)[1] and caught(case)[0] >= 0.9 * caught(case)[1]]
    lines += ["", f"Rejected in at least 90% of the draws (9 of 10) at {largest} files: {len(met)} of {len(cases)} cases"
              + ("" if len(met) == len(cases) else " (not: " + ", ".join(c for c in cases if c not in met) + ")") + "."]
for size in sorted({r["files"] for r in results if r["case"] == "correct"}):
    correct = [r for r in results if r["case"] == "correct" and r["files"] == size]
    rejected = count(correct)
    upper = stats.beta.ppf(0.95, rejected + 1, len(correct) - rejected) if rejected < len(correct) else 1.0
    p_values = [r["p_all"] for r in correct if r["p_all"] is not None]
    uniform = stats.kstest(p_values, "uniform")
    boundary_p = [r["boundary_p"] for r in correct if r["boundary_p"] is not None]
    lines += ["", f"## False alarms of a correct bfloat16 engine, {median(r['tokens'] for r in correct)} tokens", "",
              f"{rejected} of {len(correct)} runs rejected (rate {rejected / len(correct):.3f}); one-sided 95% "
              f"Clopper-Pearson upper bound {upper:.3f}, against the tolerance {tolerance}: "
              f"{'holds' if upper <= tolerance else 'FAILS'}."
              + ("".join(f" {v}: {count(correct, v)}." for v in verdicts) if gate else "")
              + f" The one-sample pooled group's p-values against Uniform(0, 1): Kolmogorov-Smirnov "
              f"D = {uniform.statistic:.3f}, p = {uniform.pvalue:.3g} ({len(p_values)} runs). "
              f"Boundary rate p-values: median {median(boundary_p):.3g}, below 0.05 in "
              f"{sum(p <= 0.05 for p in boundary_p)} of {len(boundary_p)} runs."]
    if gate:
        ratios = [r["acceptance_ratio"] for r in correct]
        lines[-1] += (f" Acceptance's observed / implied ratio: median {median(ratios):.4f}, "
                      f"mean {sum(ratios) / len(ratios):.4f}.")
    for r in correct:
        if r["verdict"] == "rejected": lines.append(f"- run {r['draw']}: " + "; ".join(r["reasons"]))
out.with_suffix(".md").write_text("\n".join(lines) + "\n")
out.with_suffix(".json").write_text(json.dumps({"results": results}, indent=2) + "\n")
print("\n".join(lines))
PY
