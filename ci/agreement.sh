#!/usr/bin/env bash
# A new user's first hour, checked for consistency: the same engines at the same settings through
# `demo`, `generate`, `bench` and `score`, on the demo's fixture pair and on the real pair
# (build/real_pair), and whether the figures they print agree. Acceptance and tokens per round
# are counts of the same decoding and must be equal; tokens/s are timings of separate runs and
# may differ by the machine's noise. Writes OUT/agreement.md (default
# reports/benchmarks/agreement) and OUT/agreement.json; about 2 hours on 2 cores, most of it the
# real pair's bench (3 timed repeats of six cases).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/benchmarks/agreement}"
source "$root/ci/setup.sh"
python=build/venv/bin/python B=build/bin/conformance work=build/agreement-work
specbench=../shared/specbench/question.jsonl
rm -rf "$work"
mkdir -p "$out" "$work"
say() { echo "== $*"; }

# pair NAME TARGET DRAFT BENCH TOKENS BATCH K: generate, bench and score for eqspec and exspec.
pair() {
  local name=$1 target=$2 draft=$3 bench=$4 tokens=$5 batch=$6 k=$7 dir="$work/$1"
  mkdir -p "$dir"
  local common=(--target "$target" --bench "$bench" --dtype float32 --max-new-tokens "$tokens")
  say "$name: generate oracle, nonspec-batch, eqspec, exspec (batch $batch, K $k, $tokens tokens)"
  "$B" generate --engine oracle "${common[@]}" --out "$dir/oracle.jsonl" >"$dir/oracle.out"
  for engine in nonspec-batch eqspec exspec; do
    local options=()
    [ "$engine" = nonspec-batch ] || options=(--draft "$draft" --draft-tokens "$k")
    [ "$engine" = exspec ] && options+=(--window $((2 * batch)))
    "$B" generate --engine "$engine" "${common[@]}" "${options[@]}" --batch-size "$batch" \
      --out "$dir/$engine.jsonl" >"$dir/$engine.out"
    "$B" score --reference "$dir/oracle.jsonl" --candidate "$dir/$engine.jsonl" --json "$dir/$engine.score.json" >/dev/null
  done
  say "$name: bench nonspec-batch, eqspec, exspec"
  "$B" bench "${common[@]}" --draft "$draft" --engines nonspec-batch,eqspec,exspec --batch-sizes "$batch" \
    --draft-tokens "$k" --window-batches 2 --json "$dir/bench.json" >"$dir/bench.out"
}

say "demo"
"$B" demo --out "$work/demo" >"$work/demo.out"
pair fixture "$work/demo/fixtures/target" "$work/demo/fixtures/draft" "$work/demo/question.jsonl" 256 8 4

spread() { "$python" -c "import sys; n = int(sys.argv[1]); print(','.join(str(81 + 480 * i // n) for i in range(n)))" "$1"; }
"$python" peers/transformers/prompts.py --model build/real_pair/target --bench "$specbench" --question-ids "$(spread 16)" \
  --out "$work/real_bench.jsonl"
pair real build/real_pair/target build/real_pair/draft "$work/real_bench.jsonl" 64 8 4

"$python" - "$work" "$out" <<'PY'
import json, pathlib, re, sys
work, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
engines = ["nonspec-batch", "eqspec", "exspec"]

def demo_rows():
    table = (work / "demo" / "summary.md").read_text()
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 8 and cells[0] in engines:
            rows[cells[0]] = {"tokens_per_s": float(cells[3]), "speedup": float(cells[4].rstrip("x")),
                              "tokens_per_round": float(cells[5]),
                              "acceptance": None if cells[6] == "-" else float(cells[6].rstrip("%")) / 100}
    return rows

def generate_row(pair, engine):
    text = (work / pair / f"{engine}.out").read_text()
    row = {"tokens_per_s": float(re.search(r"\(([0-9.]+) tokens/s\)", text).group(1)), "acceptance": None,
           "tokens_per_round": 1.0}
    if m := re.search(r"acceptance ([0-9.]+), ([0-9.]+) tokens per round", text):
        row["acceptance"], row["tokens_per_round"] = float(m.group(1)), float(m.group(2))
    return row

def score_row(pair, engine):
    report = json.loads((work / pair / f"{engine}.score.json").read_text())
    speed = report["summary"]["speed"]
    return {"tokens_per_s": speed["candidate_run_tokens_per_second"], "acceptance": speed["acceptance"],
            "tokens_per_round": speed["tokens_per_pass"] or 1.0, "exact": report["summary"]["exact_match"]}

def bench_rows(pair):
    results = json.loads((work / pair / "bench.json").read_text())["results"]
    return {r["engine"]: {"tokens_per_s": r["tokens_per_s"], "acceptance": r["acceptance_rate"] if r["engine"] != "nonspec-batch" else None,
                          "tokens_per_round": r["tokens_per_round"], "speedup": r["speedup_vs_nonspec_same_batch"]}
            for r in results}

figures = {}
for pair in ["fixture", "real"]:
    bench = bench_rows(pair)
    figures[pair] = {e: {"generate": generate_row(pair, e), "score": score_row(pair, e), "bench": bench[e]} for e in engines}
    if pair == "fixture":
        for e, row in demo_rows().items():
            figures[pair][e]["demo"] = row
    base = {source: figures[pair]["nonspec-batch"][source]["tokens_per_s"] for source in figures[pair]["nonspec-batch"]}
    for e in engines:
        for source, row in figures[pair][e].items():
            if row.get("tokens_per_s") and base.get(source):
                row["speedup"] = row["tokens_per_s"] / base[source]

problems = []
for pair, by_engine in figures.items():
    for e, sources in by_engine.items():
        for key, tolerance in [("acceptance", 5e-4), ("tokens_per_round", 5e-3)]:
            values = {s: r[key] for s, r in sources.items() if r.get(key) is not None}
            if values and max(values.values()) - min(values.values()) > tolerance:
                problems.append(f"{pair} {e}: {key} differs: {values}")

def cell(value, digits=2, percent=False):
    if value is None: return "-"
    return f"{100 * value:.1f}%" if percent else f"{value:.{digits}f}"

lines = ["# The same runs through demo, generate, bench and score", "",
         "`./ci/agreement.sh`: eqspec, exspec and nonspec-batch at batch 8, K = 4, float32 on the CPU, on the demo's "
         "fixture pair (its 30 sample questions, 256 new tokens) and on the real pair (SmolLM2-135M-Instruct and its "
         "layer-skip draft, 16 Spec-Bench first turns spread over all subtasks, 64 new tokens). `generate` and `demo` "
         "time one run each; `score` divides the generate run's tokens by its wall time, read from the answers; "
         "`bench` times its own run. Acceptance and tokens per round count the same decoding and must be equal; "
         "tokens/s are separate runs and move with the machine.", ""]
for pair, by_engine in figures.items():
    lines += [f"## {pair} pair", "", "| engine | source | acceptance | tokens/round | tokens/s | x nonspec-batch |",
              "|---|---|---:|---:|---:|---:|"]
    for e, sources in by_engine.items():
        for source, row in sources.items():
            lines.append(f"| {e} | {source} | {cell(row.get('acceptance'), percent=True)} | {cell(row.get('tokens_per_round'))} "
                         f"| {cell(row.get('tokens_per_s'), 1)} | {cell(row.get('speedup'))} |")
    lines.append("")
lines.append("Counts agree across every source." if not problems else "Disagreements:\n\n" + "\n".join(f"- {p}" for p in problems))
(out / "agreement.md").write_text("\n".join(lines) + "\n")
(out / "agreement.json").write_text(json.dumps({"figures": figures, "problems": problems}, indent=2) + "\n")
print("\n".join(lines))
sys.exit(1 if problems else 0)
PY
