#!/usr/bin/env bash
# End-to-end checks of `conformance bench` on the fixture pair: every engine and batch size is
# measured over every request, with operators and host syncs counted per round; runs are
# interleaved round-robin; every speedup has its spread over the repeats; the thread
# configuration and the math library are recorded; peak memory says where it was read; bad
# input exits 2.
set -uo pipefail
conformance=$1 fixtures=$2 bench=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"

"$conformance" bench --target "$fixtures/target" --draft "$fixtures/draft" --bench "$bench" --limit 3 \
  --max-new-tokens 8 --batch-sizes 1,2 --repeat 2 --engines eqspec,exspec --json "$work/bench.json" >/dev/null ||
  fail "bench run"
python3 - "$work/bench.json" <<'PY' || fail "bench results"
import json, sys
report = json.load(open(sys.argv[1]))
results = report["results"]
cases = [(r["engine"], r["batch_size"]) for r in results]
expected = [(e, b) for b in (1, 2) for e in ("nonspec-batch", "eqspec", "exspec")]
problems = [f"cases {cases}, expected {expected}"] if cases != expected else []
order = [(r["engine"], r["batch_size"], r["repeat"]) for r in report["run_order"]]
expected_order = [(e, b, repeat) for repeat in (0, 1) for (e, b) in expected]
if order != expected_order: problems.append(f"run order {order}, expected {expected_order}")
machine = report["machine"]
if machine["torch_threads"] != 1 or not machine["math_library"]:
    problems.append(f'threads: torch {machine["torch_threads"]}, math library {machine["math_library"]!r}')
for r in results:
    where = f'{r["engine"]} B={r["batch_size"]}'
    if len(r["run_seconds"]) != 2: problems.append(f'{where}: {len(r["run_seconds"])} runs, expected 2')
    elif abs(r["seconds"] - sum(r["run_seconds"]) / 2) > 1e-9 * r["seconds"]:
        problems.append(f'{where}: seconds {r["seconds"]} is not the median (mean) of the two runs {r["run_seconds"]}')
    for name in ("speedup_vs_nonspec_same_batch", "speedup_vs_nonspec_batch1"):
        spread = r[name + "_spread"]
        if not (spread["min"] <= r[name] <= spread["max"]): problems.append(f'{where}: {name} {r[name]} outside {spread}')
    if r["tokens"] != 3 * 8: problems.append(f'{where}: {r["tokens"]} tokens, expected 24')
    if r["peak_memory_source"] != "vmhwm" or r["peak_memory_bytes"] <= 0:
        problems.append(f'{where}: peak memory {r["peak_memory_bytes"]} from {r["peak_memory_source"]!r}')
    if not r["operators_per_round"] > r["host_syncs_per_round"] > 0:
        problems.append(f'{where}: {r["operators_per_round"]} operators and {r["host_syncs_per_round"]} host syncs per round')
for p in problems: print("  " + p)
sys.exit(1 if problems else 0)
PY

out=(--json "$work/x.json")
expect_usage_error "--engines: unknown engine 'oracle'" bench --target "$fixtures/target" --draft "$fixtures/draft" \
  --bench "$bench" --engines oracle "${out[@]}"
expect_usage_error "--draft: the speculative engines need a draft checkpoint" bench --target "$fixtures/target" \
  --bench "$bench" --engines eqspec "${out[@]}"
[ ! -e "$work/x.json" ] || fail "a refused bench left $work/x.json"

finish "bench CLI"
