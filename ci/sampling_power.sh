#!/usr/bin/env bash
# The power of `conformance sampling`, measured end to end: `serve` on the fixture pair in
# float64 (EQSPEC, K = 3, batch 6), with each sampling fault of the catalogue seeded and without
# any, answers taken by `collect --samples` at two sampling settings, and the verdicts of the
# one-sample test and of the two-sample test against the same server with speculation off
# (nonspec-batch), each with a PIT seed of its own. The false-alarm rates are ci/calibration.sh's.
# Writes OUT/power.json and OUT/power.md (default reports/sampling); about 30 minutes on 2 cores.
# With TREES (serve's tree flags, e.g. "--tree-topk 3 --tree-depth 3 --tree-nodes 6") the
# speculative server verifies those token trees instead of K = 3 chains, and the faults seeded
# are the two sampling faults of trees.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/sampling}"
source "$root/ci/setup.sh"
fixtures=build/fixture_pair bench=fixtures/bench/short_prompts.jsonl work=build/sampling-power
python=build/venv/bin/python
rm -rf "$work"
mkdir -p "$out" "$work"
# Its own copy of the CLI: a rebuild while it runs changes nothing under it.
cp build/bin/conformance "$work/conformance"
B="$work/conformance"
pit_seed=0
pids=()
trap 'for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT

# serve NAME ENGINE [options]: starts a server and sets port_NAME.
serve() {
  local name=$1 engine=$2
  shift 2
  local options=()
  # shellcheck disable=SC2206
  [ "$engine" = nonspec-batch ] || options=(--draft "$fixtures/draft" ${TREES:---draft-tokens 3})
  "$B" serve --target "$fixtures/target" --engine "$engine" --dtype float64 --port 0 --model fixture --batch-size 6 \
    "${options[@]}" "$@" >"$work/$name.serve" 2>&1 &
  pids+=($!)
  for _ in $(seq 600); do
    local port
    port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/$name.serve")
    if [ -n "$port" ]; then printf -v "port_$name" %s "$port"; return; fi
    sleep 0.1
  done
  echo "serve $name did not start: $(cat "$work/$name.serve")" >&2
  exit 1
}
stop() { kill "${pids[-1]}"; wait "${pids[-1]}" || true; unset 'pids[-1]'; }

# collect PORT OUT SEED SAMPLES QUESTIONS TOKENS T K P
collect() {
  "$B" collect --endpoint "http://127.0.0.1:$1" --api vllm --model fixture --bench "$bench" --out "$2" --seed "$3" \
    --samples "$4" --limit "$5" --max-new-tokens "$6" --temperature "$7" --top-k "$8" --top-p "$9" --concurrency 6 \
    >/dev/null 2>"$2.err"
}

# verdict LABEL ANSWERS [BASELINE]: one JSON line of results.
verdict() {
  local label=$1 answers=$2 baseline=${3:-}
  # The servers decode in float64: the support margin is float64's. Each verdict its own PIT seed.
  pit_seed=$((pit_seed + 1))
  local options=(--answers "$answers" --json "$work/report.json" --engine-dtype float64 --pit-seed "$pit_seed")
  [ -z "$baseline" ] || options+=(--baseline "$baseline")
  "$B" sampling --target "$fixtures/target" "${options[@]}" >/dev/null && status=0 || status=$?
  [ $status -le 1 ] || { echo "sampling failed on $answers" >&2; exit 1; }
  "$python" -c 'import json, sys
r = json.load(open(sys.argv[1])); g = r["groups"][0]["test"] if r["groups"] else {}
print(json.dumps({"label": sys.argv[2], "test": r["test"], "verdict": r["verdict"], "tokens": r["answers"]["tokens"],
  "outside_support": len(r["answers"]["outside_support"]), "distance": g.get("distance"), "p_value": r["groups"][0]["p_value"] if r["groups"] else None,
  "detectable_distance": r["groups"][0]["detectable_distance"] if r["groups"] else None, "groups": len(r["groups"]),
  "family_size": r["family_size"], "support_rates": r["support_rates"]}))' "$work/report.json" "$label" \
    >>"$work/results.jsonl"
}

faults=(always-accept residual-not-normalised raw-draft-distribution bonus-from-draft greedy-verification
        draft-filter-skipped stale-draft-distribution warpers-before-temperature)
speculation="EQSPEC, K = 3"
if [ -n "${TREES:-}" ]; then
  faults=(tree-sibling-not-renormalised tree-rejected-sibling-kept)
  speculation="EQSPEC verifying token trees, $TREES"
fi
settings=("0.8 12 0.9" "1.3 40 0.95")

# Power: the recommended sample, 30 questions x 8 samples x 48 tokens, at each setting.
for setting in "${settings[@]}"; do
  read -r t k p <<<"$setting"
  tag="T=$t top-k=$k top-p=$p"
  echo "== power at $tag"
  serve off nonspec-batch
  collect "$port_off" "$work/off.jsonl" 500 8 30 48 "$t" "$k" "$p"
  stop
  for fault in none "${faults[@]}"; do
    fault_options=()
    [ "$fault" = none ] || fault_options=(--inject-fault "$fault")
    serve on eqspec "${fault_options[@]}"
    collect "$port_on" "$work/on.jsonl" 100 8 30 48 "$t" "$k" "$p"
    stop
    verdict "power|$tag|$fault|one-sample" "$work/on.jsonl"
    verdict "power|$tag|$fault|two-sample" "$work/on.jsonl" "$work/off.jsonl"
    tail -2 "$work/results.jsonl"
  done
done

"$python" - "$work/results.jsonl" "$out" "$speculation" <<'PY'
import json, pathlib, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
out, speculation = pathlib.Path(sys.argv[2]), sys.argv[3]
power = [r for r in rows if r["label"].startswith("power|")]
lines = ["# Power of `conformance sampling`", "",
         "`./ci/sampling_power.sh`: `serve` on the fixture pair in float64 (" + speculation + ", batch 6), each sampling "
         "fault seeded in turn; answers taken by `collect --api vllm --samples 8` (the 30 sample-bench questions with "
         "their first 23 bytes as prompts, 48 new tokens, every request its own seed); `conformance sampling "
         "--engine-dtype float64` at alpha 0.05, each verdict its own PIT seed. Two-sample: against the same server with "
         "speculation off (nonspec-batch), collected once per setting; its p is the permutation test's over answers. "
         "p is the pooled group's before Holm; detectable d is what that group is guaranteed to reject with power 0.9 "
         "at Holm's strictest level (alpha over the family, `family`). False-alarm rates: `calibration.md`.", "",
         "| setting | fault | test | tokens | outside support | D | p | family | detectable d | verdict |",
         "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
def number(value, digits=3):
    return "-" if value is None else f"{value:.{digits}g}"
for r in power:
    _, setting, fault, test = r["label"].split("|")
    lines.append(f"| {setting} | {fault} | {test} | {r['tokens']} | {r['outside_support']} | {number(r['distance'])} "
                 f"| {number(r['p_value'])} | {r['family_size']} | {number(r['detectable_distance'])} | {r['verdict']} |")
(out / "power.md").write_text("\n".join(lines) + "\n")
(out / "power.json").write_text(json.dumps({"power": power}, indent=2) + "\n")
print("\n".join(lines))
PY
