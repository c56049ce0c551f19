#!/usr/bin/env bash
# Token trees against chains on the fixture pair (float32, CPU): what each keeps per round and
# what it costs. generate runs chains of K = 2, 4, 8, trees of four shapes and EAGLE-2's
# dynamic trees of 8 nodes over QUESTIONS
# (default 30) sample questions, NEW_TOKENS (default 64) tokens, batch 8, REPEAT (default 3)
# times interleaved; forward_benchmark times a tree's target pass against a chain pass of as
# many positions; bench times each phase of a K=4 chain's round and of the 8-node tree's, at
# batch 1 and 8 (16 questions, 32 tokens, REPEAT times interleaved). Writes OUT (default
# reports/benchmarks/trees.md).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/benchmarks/trees.md}"
questions="${QUESTIONS:-30}" new_tokens="${NEW_TOKENS:-64}" repeat="${REPEAT:-3}"
build_targets="conformance forward_benchmark fixture_pair"
source "$root/ci/setup.sh"
B=build/bin/conformance pair=build/fixture_pair work=build/tree-bench
mkdir -p "$work"
printf '{"parents": [-1, 0, 1, 2]}\n' >"$work/chain4.json"
printf '{"parents": [-1, -1, -1, -1]}\n' >"$work/star4.json"
printf '[[0], [1], [0, 0], [0, 1], [1, 0], [0, 0, 0], [0, 0, 1], [0, 0, 0, 0]]\n' >"$work/eagle8.json"
printf '{"parents": [-1, -1, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]}\n' >"$work/binary14.json"
configs=("chain-k2:--draft-tokens 2" "chain-k4:--draft-tokens 4" "chain-k8:--draft-tokens 8"
         "tree-chain4:--tree $work/chain4.json" "tree-star4:--tree $work/star4.json"
         "tree-eagle8:--tree $work/eagle8.json" "tree-binary14:--tree $work/binary14.json"
         "tree-topk3-8:--tree-topk 3 --tree-depth 4 --tree-nodes 8")
: >"$work/runs.txt"
for r in $(seq "$repeat"); do
  for config in "${configs[@]}"; do
    name=${config%%:*}
    # shellcheck disable=SC2086
    line=$("$B" generate --engine eqspec --target "$pair/target" --draft "$pair/draft" --bench fixtures/bench/sample.jsonl \
      --limit "$questions" --max-new-tokens "$new_tokens" --batch-size 8 ${config#*:} --out "$work/$name.jsonl")
    echo "$name $r $line" | tee -a "$work/runs.txt"
  done
done
build/bin/forward_benchmark --benchmark_filter='BM_(Tree|Target)Pass/batch:(1|8)/tokens:(5|9|13)/' --benchmark_min_time=0.2 \
  --benchmark_repetitions="$repeat" --benchmark_report_aggregates_only=true --benchmark_format=json >"$work/passes.json"
anatomy=(bench --engines eqspec --tree "$work/eagle8.json" --draft-tokens 4 --batch-sizes 1,8 --limit 16 --max-new-tokens 32
         --repeat "$repeat")
"$B" "${anatomy[@]}" --target "$pair/target" --draft "$pair/draft" --bench fixtures/bench/sample.jsonl \
  --json "$work/anatomy.json"
build/venv/bin/python - "$work/runs.txt" "$work/passes.json" "$work/anatomy.json" "$out" "$questions" "$new_tokens" \
  "$repeat" "${anatomy[*]/$work\//}" <<'PY'
import json, re, statistics, sys
runs, passes, anatomy, out, questions, new_tokens, repeat, anatomy_command = sys.argv[1:9]
rows = {}
for line in open(runs):
    name, _, text = line.split(" ", 2)
    m = re.search(r"(\d+) tokens in ([\d.]+) s .*accepted/drafted ([\d.]+)%, ([\d.]+) tokens per round", text)
    rows.setdefault(name, []).append((int(m[1]), float(m[2]), float(m[3]), float(m[4])))
lines = [
    "# Token trees against chains on the fixture pair",
    "",
    "`./ci/tree-bench.sh` (QUESTIONS=%s NEW_TOKENS=%s REPEAT=%s): `generate --engine eqspec` on the fixture pair, float32, "
    "CPU (2 cores), %s sample questions, %s tokens each, batch 8, each configuration run %s times interleaved with the "
    "others; the tree drafter keeps each sequence's draft K/V of its content and runs one draft pass per depth over the "
    "tree; `tree-topk3-8` grows EAGLE-2's dynamic trees (`--tree-topk 3 --tree-depth 4 --tree-nodes 8`)."
    % (questions, new_tokens, repeat, questions, new_tokens, repeat),
    "",
    "| configuration | drafted per round | accepted/drafted | tokens per round | tokens/s (median) | spread (min-max) |",
    "|---|---|---|---|---|---|",
]
drafted = {"chain-k2": 2, "chain-k4": 4, "chain-k8": 8, "tree-chain4": 4, "tree-star4": 4, "tree-eagle8": 8, "tree-binary14": 14,
           "tree-topk3-8": 8}
for name, values in rows.items():
    speeds = [tokens / seconds for tokens, seconds, _, _ in values]
    lines.append("| %s | %d | %.1f%% | %.2f | %.0f | %.0f-%.0f |" % (
        name, drafted[name], values[0][2], values[0][3], statistics.median(speeds), min(speeds), max(speeds)))
lines += ["", "A target pass over a tree (a root and a star of children, its per-query mask) against a chain pass of as many "
          "positions, 200 tokens of context, float32 (`forward_benchmark`, median of %s):" % repeat, "",
          "| batch | positions | chain pass (us) | tree pass (us) | tree / chain |", "|---|---|---|---|---|"]
medians = {}
for b in json.load(open(passes))["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    m = re.match(r"BM_(Tree|Target)Pass/batch:(\d+)/tokens:(\d+)/", b["name"])
    medians[(m[1], int(m[2]), int(m[3]))] = b["real_time"]
for batch in (1, 8):
    for tokens in (5, 9, 13):
        chain, tree = medians[("Target", batch, tokens)], medians[("Tree", batch, tokens)]
        lines.append("| %d | %d | %.0f | %.0f | %.2f |" % (batch, tokens, chain, tree, tree / chain))
lines += ["", "A round's anatomy: `conformance %s` on the same pair measures the K=4 chain (`eqspec`) and the 8-node "
          "tree above (`tree`) in one run, interleaved. Each phase's time a round (a round of the batch, in the median run) "
          "and its share of the round; tokens per round are a row's:" % anatomy_command, "",
          "| engine | batch | draft | verify | realign | other | a round | tokens per round | tokens/s |",
          "|---|---|---|---|---|---|---|---|---|"]
for r in json.load(open(anatomy))["results"]:
    if r["engine"] == "nonspec-batch":
        continue
    phases = r["phase_seconds"]
    round_ms = 1000 * sum(phases.values()) / r["rounds"]
    cells = ["%.2f ms (%.0f%%)" % (1000 * phases[p] / r["rounds"], 100 * r["phase_fraction"][p])
             for p in ("draft", "verify", "realign", "other")]
    lines.append("| %s | %d | %s | %.2f ms | %.2f | %.0f |" % (
        r["engine"], r["batch_size"], " | ".join(cells), round_ms, r["tokens_per_round"], r["tokens_per_s"]))
open(out, "w").write("\n".join(lines) + "\n")
print("wrote", out)
PY
