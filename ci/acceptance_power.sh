#!/usr/bin/env bash
# What `conformance acceptance` catches, and how often it rejects a correct engine: EQSPEC on
# the fixture pair in float64 (K = 4, batch 8, the 30 questions of
# fixtures/bench/short_prompts.jsonl, 64 new tokens), greedy and sampled (T 0.8, top-k 12,
# top-p 0.9), with each fault of the catalogue seeded and without any, at alpha 0.05. The
# false-alarm rates are ci/calibration.sh's. Writes OUT/acceptance.json and OUT/acceptance.md
# (default reports/sampling); about 8 minutes on 2 cores. DRAFTER=ngram drafts by prompt lookup
# instead (n-grams of 1-3; the faults of a draft model's distribution and cache left out) and
# writes OUT/acceptance_ngram.json and .md. DTYPE=bfloat16 (or float32, float16) runs the engine
# in that dtype, still re-scored in float64, so that its support margin and near-tie threshold
# are those of its run.dtype, and writes OUT/acceptance[_ngram]_DTYPE.json and .md.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/sampling}"
drafter="${DRAFTER:-model}" dtype="${DTYPE:-float64}"
source "$root/ci/setup.sh"
fixtures=build/fixture_pair work=build/acceptance-power
python=build/venv/bin/python
rm -rf "$work"
mkdir -p "$out" "$work"
# Its own copy of the CLI: a rebuild while it runs changes nothing under it.
cp build/bin/conformance "$work/conformance"
B="$work/conformance"
pair=(--target "$fixtures/target" --draft "$fixtures/draft")
[ "$drafter" = ngram ] && pair=(--target "$fixtures/target" --drafter ngram)
sampled=(--temperature 0.8 --top-k 12 --top-p 0.9)

# run NAME [generate options]: decodes, then writes NAME.json (the acceptance report) and NAME.status.
run() {
  local name=$1
  shift
  "$B" generate --engine eqspec "${pair[@]}" --bench fixtures/bench/short_prompts.jsonl --dtype "$dtype" \
    --max-new-tokens 64 --draft-tokens 4 --batch-size 8 --out "$work/$name.jsonl" "$@" >/dev/null
  local status=0
  "$B" acceptance "${pair[@]}" --answers "$work/$name.jsonl" --json "$work/$name.json" >"$work/$name.out" || status=$?
  echo "$status" >"$work/$name.status"
}

faults=(none bonus-from-draft padding-never-removed stale-position-ids kv-not-shifted rejected-kv-visible bonus-not-fed
        draft-cache-short mask-lets-padding-through bonus-logit-off-by-one count-after-mismatch tokens-after-eos-kept
        bonus-kv-wrong-position cache-advanced-by-drafted always-accept residual-not-normalised raw-draft-distribution
        shared-random-stream greedy-verification draft-filter-skipped stale-draft-distribution warpers-before-temperature)
# A lookup has no draft model: nothing to fill a draft cache, no draft distribution to filter or keep.
[ "$drafter" = ngram ] && faults=($(printf '%s\n' "${faults[@]}" |
  grep -vxE 'draft-cache-short|raw-draft-distribution|draft-filter-skipped|stale-draft-distribution'))
for fault in "${faults[@]}"; do
  options=()
  [ "$fault" = none ] || options=(--inject-fault "$fault")
  echo "== $fault"
  case "$fault" in
    always-accept | residual-not-normalised | raw-draft-distribution | shared-random-stream | greedy-verification | \
      draft-filter-skipped | stale-draft-distribution | warpers-before-temperature) ;;
    *) run "greedy-$fault" "${options[@]}" ;;
  esac
  run "sampled-$fault" "${sampled[@]}" --seed 1 "${options[@]}"
done

"$python" - "$work" "$out" "$drafter" "$dtype" "${faults[@]}" <<'PY'
import json, pathlib, sys
work, out, drafter, dtype, faults = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
def result(name):
    path = work / f"{name}.json"
    if not path.exists(): return None
    report = json.loads(path.read_text())
    t = report["test"]
    return {"rejected": report["rejected"], "status": int((work / f"{name}.status").read_text()), "rounds": report["rounds"],
            "trials": t["trials"], "observed": t["observed"], "expected": t["expected"], "ratio": t["ratio"],
            "p_value": t["p_value"], "ruled_out": t["ruled_out"], "mismatches": len(report["mismatches"])}
table = {f: {mode: result(f"{mode}-{f}") for mode in ("greedy", "sampled")} for f in faults}
def cell(r, mode):
    if r is None: return "-"
    verdict = "**rejected**" if r["rejected"] else "passed"
    if mode == "greedy": return f'{verdict} ({r["mismatches"]} of {r["rounds"]} rounds differ)'
    extra = f', {r["ruled_out"]} ruled out' if r["ruled_out"] else ""
    return f'{verdict} ({r["observed"]} accepted, {r["expected"]:.0f} implied, ratio {r["ratio"]:.3f}, p {r["p_value"]:.2g}{extra})'
settings = ("DRAFTER=ngram " if drafter == "ngram" else "") + (f"DTYPE={dtype} " if dtype != "float64" else "")
if drafter == "ngram":
    engine, expected = (f"`{settings}./ci/acceptance_power.sh`: EQSPEC drafting by prompt lookup (n-grams of 1-3) on "
                        "the fixture target", "p(x) of each proposed token x")
else:
    engine, expected = f"`{settings}./ci/acceptance_power.sh`: EQSPEC on the fixture pair", "min(p, q)"
near_tie = ("0.1 nats" if dtype == "float64" else
            "0.1 nats, widened by the answers' run.dtype; the support margin that of the run.dtype")
lines = ["# What `conformance acceptance` catches" + (" in n-gram engines" if drafter == "ngram" else "")
         + ("" if dtype == "float64" else f" in {dtype}"), "",
         f"{engine} in {dtype}, re-scored in float64, K = 4, batch 8, the 30 questions of "
         "`fixtures/bench/short_prompts.jsonl`, 64 new tokens; sampled at T 0.8, top-k 12, top-p 0.9, seed 1; alpha 0.05. "
         f"Greedy rounds are predicted exactly (up to near-ties of {near_tie}); sampled acceptance is tested against the "
         f"sum of {expected} over the drafted positions the rounds reached before each answer's final token.", "",
         "| fault | greedy | sampled |", "|---|---|---|"]
lines += [f'| {"none (correct)" if f == "none" else "`" + f + "`"} | {cell(table[f]["greedy"], "greedy")} | '
          f'{cell(table[f]["sampled"], "sampled")} |' for f in faults]
lines += ["", "False-alarm rates of correct engines: " + ("`calibration_ngram.md` (`DRAFTER=ngram ./ci/calibration.sh`)."
                                                      if drafter == "ngram" else "`calibration.md` (`./ci/calibration.sh`).")]
name = ("acceptance_ngram" if drafter == "ngram" else "acceptance") + ("" if dtype == "float64" else f"_{dtype}")
(out / f"{name}.md").write_text("\n".join(lines) + "\n")
(out / f"{name}.json").write_text(json.dumps({"drafter": drafter, "faults": table}, indent=2) + "\n")
print("\n".join(lines))
PY
