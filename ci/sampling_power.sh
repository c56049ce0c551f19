#!/usr/bin/env bash
# The power and the false-alarm rate of `conformance sampling`, measured end to end: `serve` on
# the fixture pair in float64 (EQSPEC, K = 3, batch 6), with each sampling fault of the
# catalogue seeded and without any, answers taken by `collect --samples` at two sampling
# settings, and the verdicts of the one-sample test and of the two-sample test against the same
# server with speculation off (nonspec-batch). Calibration: RUNS (default 100) small samples of
# the correct server, each its own seeds. Writes OUT/power.json and OUT/power.md (default
# reports/sampling); 43 minutes on 2 cores shared with other work.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/sampling}"
runs="${RUNS:-100}"
source "$root/ci/setup.sh"
B=build/bin/conformance fixtures=build/fixture_pair bench=fixtures/bench/short_prompts.jsonl work=build/sampling-power
python=build/venv/bin/python
rm -rf "$work"
mkdir -p "$out" "$work"
pids=()
trap 'for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT

# serve NAME ENGINE [options]: starts a server and sets port_NAME.
serve() {
  local name=$1 engine=$2
  shift 2
  local options=()
  [ "$engine" = nonspec-batch ] || options=(--draft "$fixtures/draft" --draft-tokens 3)
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
  local options=(--answers "$answers" --json "$work/report.json")
  [ -z "$baseline" ] || options+=(--baseline "$baseline")
  "$B" sampling --target "$fixtures/target" "${options[@]}" >/dev/null && status=0 || status=$?
  [ $status -le 1 ] || { echo "sampling failed on $answers" >&2; exit 1; }
  "$python" -c 'import json, sys
r = json.load(open(sys.argv[1])); g = r["groups"][0]["test"] if r["groups"] else {}
print(json.dumps({"label": sys.argv[2], "test": r["test"], "verdict": r["verdict"], "tokens": r["answers"]["tokens"],
  "outside_support": len(r["answers"]["outside_support"]), "distance": g.get("distance"), "p_value": g.get("p_value"),
  "detectable_distance": g.get("detectable_distance"), "groups": len(r["groups"])}))' "$work/report.json" "$label" \
    >>"$work/results.jsonl"
}

faults=(always-accept residual-not-normalised raw-draft-distribution bonus-from-draft greedy-verification
        draft-filter-skipped stale-draft-distribution)
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

# Calibration: RUNS small samples (10 questions x 32 tokens) of the correct servers.
echo "== calibration: $runs runs"
serve on eqspec
serve off nonspec-batch
for run in $(seq "$runs"); do
  collect "$port_on" "$work/cal-on.jsonl" $((100000 + 1000 * run)) 1 10 32 0.8 12 0.9
  collect "$port_off" "$work/cal-off.jsonl" $((500000 + 1000 * run)) 1 10 32 0.8 12 0.9
  verdict "calibration|one-sample" "$work/cal-on.jsonl"
  verdict "calibration|two-sample" "$work/cal-on.jsonl" "$work/cal-off.jsonl"
done

"$python" - "$work/results.jsonl" "$out" "$runs" <<'PY'
import json, math, pathlib, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
out, runs = pathlib.Path(sys.argv[2]), int(sys.argv[3])
power = [r for r in rows if r["label"].startswith("power|")]
calibration = {}
for r in rows:
    if r["label"].startswith("calibration|"):
        c = calibration.setdefault(r["test"], {"runs": 0, "rejected": 0, "tokens": []})
        c["runs"] += 1
        c["rejected"] += r["verdict"] == "rejected"
        c["tokens"].append(r["tokens"])
lines = ["# Power and false-alarm rate of `conformance sampling`", "",
         "`./ci/sampling_power.sh`: `serve` on the fixture pair in float64 (EQSPEC, K = 3, batch 6), each sampling "
         "fault seeded in turn; answers taken by `collect --api vllm --samples 8` (the 30 sample-bench questions with "
         "their first 23 bytes as prompts, 48 new tokens, every request its own seed); `conformance sampling` at "
         "alpha 0.05. Two-sample: against the same server with speculation off (nonspec-batch), collected once per "
         "setting.", "",
         "| setting | fault | test | tokens | outside support | D | p | detectable d | verdict |",
         "|---|---|---|---:|---:|---:|---:|---:|---|"]
def number(value, digits=3):
    return "-" if value is None else f"{value:.{digits}g}"
for r in power:
    _, setting, fault, test = r["label"].split("|")
    lines.append(f"| {setting} | {fault} | {test} | {r['tokens']} | {r['outside_support']} | {number(r['distance'])} "
                 f"| {number(r['p_value'])} | {number(r['detectable_distance'])} | {r['verdict']} |")
lines += ["", f"## False alarms of correct servers over {runs} runs", "",
          "Each run: 10 questions x 32 tokens at T = 0.8, top-k 12, top-p 0.9, seeds of its own; the two-sample test "
          "against nonspec-batch answers of seeds of their own. At alpha 0.05 a calibrated test rejects about 5 in 100 "
          "(95% binomial interval for the rate shown).", "",
          "| test | runs | rejected | rate | 95% interval | tokens per run |", "|---|---:|---:|---:|---|---|"]
for test, c in calibration.items():
    n, k = c["runs"], c["rejected"]
    # Wilson score interval.
    z, phat = 1.96, k / n
    centre = (phat + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    c["rate"], c["interval"] = phat, [max(0.0, centre - half), min(1.0, centre + half)]
    lines.append(f"| {test} | {n} | {k} | {phat:.3f} | [{c['interval'][0]:.3f}, {c['interval'][1]:.3f}] "
                 f"| {min(c['tokens'])}-{max(c['tokens'])} |")
(out / "power.md").write_text("\n".join(lines) + "\n")
(out / "power.json").write_text(json.dumps({"power": power, "calibration": calibration}, indent=2) + "\n")
print("\n".join(lines))
PY
