#!/usr/bin/env bash
# End-to-end checks of `conformance bench` on the fixture pair: every engine and batch size is
# measured over every request, with operators and host syncs counted per round; runs are
# interleaved round-robin; every speedup has its spread over the repeats; the thread
# configuration and the math library are recorded; peak memory says where it was read; the
# SVG charts every point with its figure and its spread, on axes of round ticks; --tree adds
# the engine tree, measured as eqspec is, whose trees are generate --tree's; bad input exits 2.
set -uo pipefail
conformance=$1 fixtures=$2 bench=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"

"$conformance" bench --target "$fixtures/target" --draft "$fixtures/draft" --bench "$bench" --limit 3 \
  --max-new-tokens 8 --batch-sizes 1,2 --repeat 2 --engines eqspec,exspec --json "$work/bench.json" \
  --svg "$work/bench.svg" --markdown "$work/bench.md" >"$work/bench.out" ||
  fail "bench run"
# The Markdown report holds the table the terminal shows, row for row.
grep -q "^| engine | batch | tok/s |" "$work/bench.md" || fail "bench --markdown: no table header in $(head -5 "$work/bench.md")"
[ "$(grep -c '^| \(nonspec-batch\|eqspec\|exspec\) |' "$work/bench.md")" -eq 6 ] || fail "bench --markdown: not 6 rows"
for row in "nonspec-batch 2" "eqspec 1" "exspec 2"; do
  read -r engine batch <<<"$row"
  grep -q "^$engine *$batch " "$work/bench.out" || fail "bench's table lacks $row"
  grep -q "^| $engine | $batch |" "$work/bench.md" || fail "bench --markdown lacks $row"
done
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
python3 - "$work/bench.json" "$work/bench.svg" <<'PY' || fail "bench SVG"
import json, math, re, sys, xml.etree.ElementTree as ET
results = json.load(open(sys.argv[1]))["results"]
svg = ET.parse(sys.argv[2]).getroot()
ns = "{http://www.w3.org/2000/svg}"
def hover(r, figure, spread, decimals, unit):
    text = f'{r["engine"]}, batch size {r["batch_size"]}: {figure:.{decimals}f}{unit}'
    return text + (f' ({spread[0]:.{decimals}f}-{spread[1]:.{decimals}f} over 2 repeats)' if spread else "")
rates = lambda r: [r["tokens"] / s for s in r["run_seconds"]]
same = lambda r: (r["speedup_vs_nonspec_same_batch_spread"]["min"], r["speedup_vs_nonspec_same_batch_spread"]["max"])
expected = sorted([hover(r, r["tokens_per_s"], (min(rates(r)), max(rates(r))), 1, " tokens/s") for r in results] +
                  [hover(r, r["speedup_vs_nonspec_same_batch"], same(r), 2, "x")
                   for r in results if r["engine"] != "nonspec-batch"] +
                  [hover(r, 100 * r["phase_fraction"]["realign"], None, 1, "%") for r in results])
problems = []
if "speedup vs nonspec-batch, same batch size" not in [t.text for t in svg.iter(ns + "text")]:
    problems.append("no speedup chart")
titles = sorted(c.findtext(ns + "title", "") for c in svg.iter(ns + "circle"))
if titles != expected: problems.append(f"circles titled {titles}, expected {expected}")
lines = list(svg.iter(ns + "line"))
# A whisker at every tokens/s and every speedup (nonspec-batch has no speedup point), none on realign share.
whiskers = sum(line.get("class") == "spread" for line in lines)
expected_whiskers = sum(1 + (r["engine"] != "nonspec-batch") for r in results)
if whiskers != expected_whiskers: problems.append(f"{whiskers} whiskers, expected {expected_whiskers}")
dashed = sum(bool(line.get("stroke-dasharray")) for line in lines)
if dashed != 1: problems.append(f"{dashed} dashed lines, expected the one at 1x")
# The y tick labels are the texts anchored at their end; each chart's start at 0.
charts = []
for label in (t.text for t in svg.iter(ns + "text") if t.get("text-anchor") == "end"):
    if float(label) == 0: charts.append([])
    charts[-1].append(label)
for labels in charts:
    ticks = [float(label) for label in labels]
    step = ticks[1] if len(ticks) > 1 else 0
    mantissa = step / 10 ** math.floor(math.log10(step) + 1e-9) if step > 0 else 0
    if (not all(re.fullmatch(r"(0|[1-9][0-9]*)(\.[0-9]*[1-9])?", label) for label in labels) or
            min(abs(mantissa - m) for m in (1, 2, 5)) > 1e-9 or
            any(abs(tick - i * step) > 1e-9 * step for i, tick in enumerate(ticks))):
        problems.append(f"y ticks {labels} are not 0, s, 2s, ... with s 1, 2 or 5 times a power of ten")
if len(charts) != 3: problems.append(f"{len(charts)} charts, expected 3")
for p in problems: print("  " + p)
sys.exit(1 if problems else 0)
PY

# bench decodes the prompts generate does: a bench line's prompt_token_ids verbatim, else the
# question in --chat-template. The same decoding gives the same acceptance and token count.
pair=(--target "$fixtures/target" --draft "$fixtures/draft" --max-new-tokens 16 --draft-tokens 4)
"$conformance" generate --engine eqspec "${pair[@]}" --bench "$bench" --limit 3 --batch-size 2 --chat-template vicuna \
  --out "$work/vicuna.jsonl" >/dev/null || fail "generate --chat-template vicuna"
python3 - "$bench" "$work/vicuna.jsonl" "$work/with_ids.jsonl" <<'PY' || fail "bench file with prompt_token_ids"
import json, sys
answers = [json.loads(line) for line in open(sys.argv[2])]
ids = {a["question_id"]: a["choices"][0]["prompt_token_ids"] for a in answers}
with open(sys.argv[3], "w") as out:
    for line in open(sys.argv[1]):
        question = json.loads(line)
        if question["question_id"] in ids:
            question["turns"], question["prompt_token_ids"] = question["turns"][:1], ids[question["question_id"]]
            out.write(json.dumps(question) + "\n")
PY
"$conformance" bench "${pair[@]}" --bench "$bench" --limit 3 --chat-template vicuna --engines eqspec --batch-sizes 2 \
  --repeat 1 --json "$work/vicuna.json" >/dev/null || fail "bench --chat-template vicuna"
"$conformance" bench "${pair[@]}" --bench "$work/with_ids.jsonl" --engines eqspec --batch-sizes 2 --repeat 1 \
  --json "$work/with_ids.json" >/dev/null || fail "bench on prompt_token_ids"
"$conformance" bench "${pair[@]}" --bench "$bench" --limit 3 --engines eqspec --batch-sizes 2 --repeat 1 \
  --json "$work/raw.json" >/dev/null || fail "bench --chat-template raw"
python3 - "$work/vicuna.jsonl" "$work/vicuna.json" "$work/with_ids.json" "$work/raw.json" <<'PY' || fail "bench's prompts"
import json, sys
choices = [json.loads(line)["choices"][0] for line in open(sys.argv[1])]
generated = (sum(sum(c["accepted_drafts"]) for c in choices) / sum(sum(c["drafted_tokens"]) for c in choices),
             sum(sum(c["new_tokens"]) for c in choices))
def measured(path):
    row = next(r for r in json.load(open(path))["results"] if r["engine"] == "eqspec" and r["batch_size"] == 2)
    return row["acceptance_rate"], row["tokens"]
problems = [f"{path}: acceptance and tokens {measured(path)}, generate's {generated}"
            for path in sys.argv[2:4] if abs(measured(path)[0] - generated[0]) > 1e-12 or measured(path)[1] != generated[1]]
settings = json.load(open(sys.argv[3]))["settings"]
cases = sorted((r["engine"], r["batch_size"]) for r in json.load(open(sys.argv[4]))["results"])
if cases != [("eqspec", 2), ("nonspec-batch", 1), ("nonspec-batch", 2)]: problems.append(f"--batch-sizes 2 measured {cases}")
if settings["questions_with_prompt_token_ids"] != 3: problems.append(f"settings {settings}")
if measured(sys.argv[4]) == generated: problems.append(f"raw prompts decode as vicuna's: {generated}; the check cannot fail")
for p in problems: print("  " + p)
sys.exit(1 if problems else 0)
PY

# --tree measures the engine tree next to the others, its phases timed as theirs are; its
# acceptance and tokens are those of generate --tree, which drafts the same trees.
printf '[[0], [1], [0, 0]]\n' >"$work/tree.json"
"$conformance" bench "${pair[@]}" --bench "$bench" --limit 3 --batch-sizes 1,2 --repeat 1 --engines eqspec \
  --tree "$work/tree.json" --json "$work/tree-bench.json" --markdown "$work/tree-bench.md" >"$work/tree-bench.out" ||
  fail "bench --tree"
"$conformance" generate --engine eqspec --target "$fixtures/target" --draft "$fixtures/draft" --max-new-tokens 16 \
  --tree "$work/tree.json" --bench "$bench" --limit 3 --batch-size 2 --out "$work/tree.jsonl" >/dev/null ||
  fail "generate --tree"
for batch in 1 2; do
  grep -q "^tree *$batch " "$work/tree-bench.out" || fail "bench --tree's table lacks tree $batch"
  grep -q "^| tree | $batch |" "$work/tree-bench.md" || fail "bench --tree --markdown lacks tree $batch"
done
python3 - "$work/tree-bench.json" "$work/tree.jsonl" <<'PY' || fail "bench --tree results"
import json, sys
report = json.load(open(sys.argv[1]))
choices = [json.loads(line)["choices"][0] for line in open(sys.argv[2])]
generated = (sum(sum(c["accepted_drafts"]) for c in choices) / sum(sum(c["drafted_tokens"]) for c in choices),
             sum(sum(c["new_tokens"]) for c in choices))
cases = [(r["engine"], r["batch_size"]) for r in report["results"]]
expected = [(e, b) for b in (1, 2) for e in ("nonspec-batch", "eqspec", "tree")]
problems = [f"cases {cases}, expected {expected}"] if cases != expected else []
if report["settings"]["tree"] != {"file": sys.argv[1].replace("tree-bench.json", "tree.json"), "nodes": 3, "depth": 2}:
    problems.append(f'settings: tree {report["settings"]["tree"]}')
for r in report["results"]:
    where = f'{r["engine"]} B={r["batch_size"]}'
    phases = r["phase_seconds"]
    if sorted(phases) != ["draft", "other", "realign", "verify"] or min(phases.values()) < 0:
        problems.append(f"{where}: phase seconds {phases}")
    elif r["engine"] != "nonspec-batch" and not phases["draft"] > 0 < phases["verify"]:
        problems.append(f"{where}: drafts or verifies in no time: {phases}")
    elif abs(r["phase_fraction"]["draft"] - phases["draft"] / sum(phases.values())) > 1e-9:
        problems.append(f'{where}: phase fractions {r["phase_fraction"]} are not shares of {phases}')
    if r["engine"] != "tree": continue
    if r["draft_length"] != 3: problems.append(f'{where}: {r["draft_length"]} drafts per round, expected the 3 nodes')
    if not r["operators_per_round"] > 0 < r["host_syncs_per_round"]: problems.append(f"{where}: dispatches not counted")
    if (r["acceptance_rate"], r["tokens"]) != generated:
        problems.append(f'{where}: acceptance and tokens {r["acceptance_rate"], r["tokens"]}, generate --tree\'s {generated}')
for p in problems: print("  " + p)
sys.exit(1 if problems else 0)
PY
"$conformance" bench "${pair[@]}" --bench "$bench" --limit 3 --batch-sizes 2 --repeat 1 --engines tree --tree-topk 2 \
  --tree-depth 2 --tree-nodes 3 --json "$work/topk-bench.json" >"$work/topk-bench.out" || fail "bench --tree-topk"
python3 - "$work/topk-bench.json" <<'PY' || fail "bench --tree-topk results"
import json, sys
report = json.load(open(sys.argv[1]))
assert report["settings"]["tree"] == {"topk": 2, "depth": 2, "nodes": 3}, report["settings"]["tree"]
tree = [r for r in report["results"] if r["engine"] == "tree"]
assert len(tree) == 1 and tree[0]["draft_length"] == 3 and tree[0]["tokens"] > 0, tree
PY

# --threads sets libtorch's intra-op threads, which the report records.
"$conformance" bench --target "$fixtures/target" --draft "$fixtures/draft" --bench "$bench" --limit 1 \
  --max-new-tokens 2 --batch-sizes 1 --repeat 1 --engines eqspec --threads 2 --json "$work/threads.json" >/dev/null || fail "bench --threads 2"
python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["machine"]["torch_threads"]; sys.exit(t != 2)' \
  "$work/threads.json" || fail "bench --threads 2: the report does not record 2 threads"

out=(--json "$work/x.json")
expect_usage_error "--engines: engine tree needs --tree FILE" bench "${pair[@]}" --bench "$bench" --engines tree "${out[@]}"
expect_usage_error "--tree: trees are drafted by a --draft model; give --draft DIR" bench --target "$fixtures/target" \
  --bench "$bench" --tree "$work/tree.json" "${out[@]}"
expect_usage_error "--tree: trees are drafted by a --draft model, not by --drafter ngram" bench --target "$fixtures/target" \
  --drafter ngram --bench "$bench" --tree "$work/tree.json" "${out[@]}"
expect_usage_error "--tree: trees are measured with --acceptance model" bench "${pair[@]}" --bench "$bench" \
  --tree "$work/tree.json" --acceptance scripted:0.7 "${out[@]}"
expect_usage_error "--threads: Value 0 not in range 1 to 1024" bench "${pair[@]}" --bench "$bench" --threads 0 "${out[@]}"
expect_usage_error "--engines: unknown engine 'oracle'" bench --target "$fixtures/target" --draft "$fixtures/draft" \
  --bench "$bench" --engines oracle "${out[@]}"
expect_usage_error "--draft: the speculative engines need a draft checkpoint" bench --target "$fixtures/target" \
  --bench "$bench" --engines eqspec "${out[@]}"
[ ! -e "$work/x.json" ] || fail "a refused bench left $work/x.json"

finish "bench CLI"
