#!/usr/bin/env bash
# How often `conformance sampling` and `conformance acceptance` reject a correct engine: RUNS
# (default 400: at 200 a test exactly at alpha fails the criterion below 20% of the time, at 400
# 2%) independent runs at each of two settings (T 0.8, top-k 50, top-p 0.95; T 1.0,
# min-p 0.1), every run with seeds of its own for the engines and for the test (--pit-seed). One
# run: EQSPEC in float64 (K 4, batch 8, the 30 questions of fixtures/bench/short_prompts.jsonl,
# 64 new tokens) tested by the one-sample test and by the acceptance test; EQSPEC in bfloat16
# tested by the acceptance test and, against nonspec-batch in bfloat16, by the two-sample test.
# The fixture pair, re-scored in float64. A row holds alpha when the one-sided 95%
# Clopper-Pearson upper bound of its rate is at most TOLERANCE (default 0.1, twice alpha): a
# criterion that fails where the rate is too high or the runs too few. Every run's p-value is kept
# in the JSON and the row's p-values are tested for uniformity (Kolmogorov-Smirnov). Writes
# OUT/calibration.json and OUT/calibration.md (default reports/sampling); JOBS runs side by side
# (default: the cores). About 70 minutes on 2 cores at 400 runs. DRAFTER=ngram: EQSPEC drafting by prompt lookup (n-grams of 1-3) in float64, float32
# and bfloat16, each tested by `acceptance --drafter ngram`; writes OUT/calibration_ngram.json
# and .md. A re-measurement with fresh seeds: FIRST_RUN (default 1) numbers the runs from there,
# whose seeds follow from the number; SETTINGS (default: topk50-topp095 minp01) and, with
# DRAFTER=ngram, DTYPES (default: float64 float32 bfloat16) restrict the rows. EOS=ID: a design
# whose answers end early and at every length, the pair's end-of-sequence token made ID (117,
# the letter u, ends about three answers in four before 64 tokens); writes
# OUT/calibration_eos.json and .md. SAMPLES=N: the two-sample test alone, in the design the README
# advises, N answers a question a side (N files of their own seeds each), over the first
# QUESTIONS questions (default 30); writes OUT/calibration_samplesN.json and .md.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/sampling}"
runs="${RUNS:-400}" tolerance="${TOLERANCE:-0.1}" first_run="${FIRST_RUN:-1}"
settings="${SETTINGS:-topk50-topp095 minp01}" dtypes="${DTYPES:-float64 float32 bfloat16}" eos="${EOS:-}"
samples="${SAMPLES:-1}" questions="${QUESTIONS:-30}"
jobs="${JOBS:-$(nproc)}"
drafter="${DRAFTER:-model}"
source "$root/ci/setup.sh"
work=build/calibration
rm -rf "$work"
mkdir -p "$out" "$work"
# Its own copy of the CLI: a rebuild while the runs go on changes nothing under them.
cp build/bin/conformance "$work/conformance"
pair=build/fixture_pair
if [ -n "$eos" ]; then
  pair="$work/pair"
  for model in target draft; do
    mkdir -p "$pair/$model"
    cp build/fixture_pair/$model/* "$pair/$model/"
    build/venv/bin/python - "$pair/$model/config.json" "$eos" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["eos_token_id"] = int(sys.argv[2])
json.dump(config, open(sys.argv[1], "w"), indent=2)
PY
  done
fi

# run_one SETTING RUN: one independent run at one setting; appends its verdicts to
# $work/SETTING-RUN.jsonl.
run_one() {
  local setting=$1 run=$2
  local B="$work/conformance" F="$pair" dir="$work/$setting-$run"
  local warpers
  case "$setting" in
    topk50-topp095) warpers=(--temperature 0.8 --top-k 50 --top-p 0.95) ;;
    minp01) warpers=(--temperature 1.0 --min-p 0.1) ;;
  esac
  mkdir -p "$dir"
  # Seeds: each run, setting and engine its own; the PIT's too.
  local base=$((run * 16))
  [ "$setting" = topk50-topp095 ] || base=$((base + 8))
  gen() {
    local name=$1 engine=$2 dtype=$3 seed=$4
    local draft=()
    [ "$engine" = nonspec-batch ] || draft=(--draft "$F/draft" --draft-tokens 4)
    [ "$drafter" = ngram ] && draft=(--drafter ngram --draft-tokens 4)
    OMP_NUM_THREADS=1 "$B" generate --engine "$engine" --target "$F/target" "${draft[@]}" --batch-size 8 \
      --bench fixtures/bench/short_prompts.jsonl --limit "$questions" --max-new-tokens 64 --dtype "$dtype" \
      "${warpers[@]}" --seed "$seed" --out "$dir/$name.jsonl" >/dev/null
  }
  verdict() {
    local label=$1 tool=$2
    shift 2
    local status=0
    OMP_NUM_THREADS=1 "$B" "$tool" --json "$dir/$label.json" "$@" >"$dir/$label.out" 2>&1 || status=$?
    [ $status -le 1 ] || { echo "$tool $label failed: $(cat "$dir/$label.out")" >&2; exit 1; }
    echo "{\"setting\": \"$setting\", \"run\": $run, \"test\": \"$label\", \"report\": $(tr -d '\n' <"$dir/$label.json")}" \
      >>"$work/$setting-$run.jsonl"
  }
  if [ "$drafter" = ngram ]; then
    local seed=$base dtype
    for dtype in float64 float32 bfloat16; do
      seed=$((seed + 1))
      [[ " $dtypes " == *" $dtype "* ]] || continue
      gen "eqspec-$dtype" eqspec $dtype $seed
      verdict "acceptance-$dtype" acceptance --target "$F/target" --drafter ngram --answers "$dir/eqspec-$dtype.jsonl"
    done
    rm -f "$dir"/*.jsonl
    return
  fi
  if [ "$samples" -gt 1 ]; then
    local sides=() sample
    for sample in $(seq "$samples"); do
      gen "eqspec-bf16-$sample" eqspec bfloat16 $((base * 100 + sample))
      gen "nonspec-bf16-$sample" nonspec-batch bfloat16 $((base * 100 + 50 + sample))
      sides+=(--answers "$dir/eqspec-bf16-$sample.jsonl" --baseline "$dir/nonspec-bf16-$sample.jsonl")
    done
    verdict two-sample-bfloat16 sampling --target "$F/target" "${sides[@]}" --pit-seed $((base + 5))
    rm -f "$dir"/*.jsonl
    return
  fi
  gen eqspec-f64 eqspec float64 $((base + 1))
  gen eqspec-bf16 eqspec bfloat16 $((base + 2))
  gen nonspec-bf16 nonspec-batch bfloat16 $((base + 3))
  verdict one-sample-float64 sampling --target "$F/target" --answers "$dir/eqspec-f64.jsonl" --pit-seed $((base + 4))
  verdict two-sample-bfloat16 sampling --target "$F/target" --answers "$dir/eqspec-bf16.jsonl" \
    --baseline "$dir/nonspec-bf16.jsonl" --pit-seed $((base + 5))
  verdict acceptance-float64 acceptance --target "$F/target" --draft "$F/draft" --answers "$dir/eqspec-f64.jsonl"
  verdict acceptance-bfloat16 acceptance --target "$F/target" --draft "$F/draft" --answers "$dir/eqspec-bf16.jsonl"
  rm -f "$dir"/*.jsonl
}
export -f run_one
export work drafter dtypes pair samples questions

for run in $(seq "$first_run" $((first_run + runs - 1))); do
  for setting in $settings; do echo "$setting $run"; done
done | xargs -P "$jobs" -n 2 bash -c 'run_one "$0" "$1"'

variables=""
[ "$first_run" = 1 ] || variables+="FIRST_RUN=$first_run "
[ -z "${SETTINGS:-}" ] || variables+="SETTINGS='$settings' "
[ -z "${DTYPES:-}" ] || variables+="DTYPES='$dtypes' "
[ -z "$eos" ] || variables+="EOS=$eos "
[ "$samples" = 1 ] || variables+="SAMPLES=$samples "
[ "$questions" = 30 ] || variables+="QUESTIONS=$questions "
build/venv/bin/python - "$work" "$out" "$runs" "$drafter" "$tolerance" "$variables" <<'PY'
import json, pathlib, sys
from scipy import stats
work, out, runs, drafter = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
tolerance, variables = float(sys.argv[5]), sys.argv[6]
setting_of = lambda name, default: variables.split(f"{name}=")[1].split()[0] if f"{name}=" in variables else default
questions = "first " + setting_of("QUESTIONS", "") if "QUESTIONS=" in variables else "30"
samples, eos = int(setting_of("SAMPLES", "1")), setting_of("EOS", "")
rows = [json.loads(line) for path in sorted(work.glob("*.jsonl")) for line in open(path)]
def clopper_pearson(k, n):
    low = stats.beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    high = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(low), float(high), float(stats.beta.ppf(0.95, k + 1, n - k)) if k < n else 1.0
def p_value(report):
    if "test" in report and "p_value" in report["test"]: return report["test"]["p_value"]
    return report["groups"][0]["p_value"] if report.get("groups") else None
settings = {"topk50-topp095": "T 0.8, top-k 50, top-p 0.95", "minp01": "T 1.0, min-p 0.1"}
tests = {"one-sample-float64": "sampling, one-sample: EQSPEC float64",
         "two-sample-bfloat16": "sampling, two-sample: EQSPEC bfloat16 against nonspec-batch bfloat16",
         "acceptance-float64": "acceptance: EQSPEC float64", "acceptance-bfloat16": "acceptance: EQSPEC bfloat16"}
if drafter == "ngram":
    tests = {f"acceptance-{dtype}": f"acceptance --drafter ngram: EQSPEC + prompt lookup {dtype}"
             for dtype in ("float64", "float32", "bfloat16")}
table = []
for setting, setting_name in settings.items():
    for test, test_name in tests.items():
        reports = [r["report"] for r in rows if r["setting"] == setting and r["test"] == test]
        if not reports: continue
        rejected = sum(r["rejected"] if "rejected" in r else r["verdict"] == "rejected" for r in reports)
        low, high, upper = clopper_pearson(rejected, len(reports))
        p_values = [p for p in map(p_value, reports) if p is not None]
        uniform = stats.kstest(p_values, "uniform") if p_values else None
        size = (sum(r["answers"]["tokens"] for r in reports) // len(reports)) if test.startswith(("one", "two")) \
            else sum(r["test"]["trials"] for r in reports) // len(reports)
        extra = {}
        if test.startswith(("one", "two")):
            extra["boundary_tokens"] = sum(len(r["answers"]["boundary"]) for r in reports)
            extra["outside_tokens"] = sum(len(r["answers"]["outside_support"]) for r in reports)
        else:
            extra["mean_z"] = sum(r["test"]["z"] for r in reports) / len(reports)
            extra["near_tie_rounds"] = sum(r.get("near_tie_rounds", 0) for r in reports)
        table.append({"setting": setting_name, "test": test_name, "runs": len(reports), "rejected": rejected,
                      "rate": rejected / len(reports), "interval": [low, high], "upper_bound": upper,
                      "holds_alpha": upper <= tolerance, "per_run": size, "p_values": p_values,
                      "uniformity": {"ks_d": float(uniform.statistic), "p_value": float(uniform.pvalue)} if uniform else None,
                      **extra})
title = "`conformance acceptance` on correct n-gram engines" if drafter == "ngram" else \
    "`conformance sampling` and `conformance acceptance` on correct engines"
if drafter == "ngram":
    command, seeds = f"`{variables}DRAFTER=ngram RUNS={runs} ./ci/calibration.sh`", "every run its own engine seeds (the test draws nothing)"
else:
    command, seeds = f"`{variables}RUNS={runs} ./ci/calibration.sh`", "every run its own engine seeds and PIT seed"
lines = [f"# False alarms of {title}", "",
         f"{command}: the fixture pair, the {questions} questions of `fixtures/bench/short_prompts.jsonl`"
         f"{f' ({samples} answers a question a side)' if samples > 1 else ''}"
         f"{f', the end-of-sequence token made {eos}' if eos else ''}, "
         f"64 new tokens, K 4, batch 8, re-scored in float64 at alpha 0.05; {seeds}. "
         "Per run: tokens tested (sampling) or drafted positions (acceptance). Interval: Clopper-Pearson's 95%; "
         f"a row holds alpha when the one-sided 95% upper bound is at most {tolerance}. Uniformity: the "
         "Kolmogorov-Smirnov test of the runs' p-values (the pooled group's for sampling) against Uniform(0, 1); "
         "acceptance's p-values are of a discrete count, so a low uniformity p there can be the lattice's.", "",
         "| setting | test | runs | rejected | rate | 95% interval | upper bound | holds | p-values uniform | per run | notes |",
         "|---|---|---:|---:|---:|---|---:|---|---|---:|---|"]
for t in table:
    notes = (f'{t["boundary_tokens"]} boundary, {t["outside_tokens"]} outside tokens in all runs' if "boundary_tokens" in t
             else f'mean z {t["mean_z"]:+.3f}' + (f', {t["near_tie_rounds"]} near-tie rounds' if t["near_tie_rounds"] else ""))
    uniformity = "-" if t["uniformity"] is None else f'D {t["uniformity"]["ks_d"]:.3f}, p {t["uniformity"]["p_value"]:.3g}'
    lines.append(f'| {t["setting"]} | {t["test"]} | {t["runs"]} | {t["rejected"]} | {t["rate"]:.3f} | '
                 f'[{t["interval"][0]:.3f}, {t["interval"][1]:.3f}] | {t["upper_bound"]:.3f} | '
                 f'{"yes" if t["holds_alpha"] else "**no**"} | {uniformity} | {t["per_run"]} | {notes} |')
name = "calibration_ngram" if drafter == "ngram" else "calibration"
if eos: name += "_eos"
if samples > 1: name += f"_samples{samples}"
(out / f"{name}.md").write_text("\n".join(lines) + "\n")
(out / f"{name}.json").write_text(json.dumps({"command": command.strip("`"), "runs": runs, "drafter": drafter, "rows": table}, indent=2) + "\n")
print("\n".join(lines))
PY
