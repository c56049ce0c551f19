#!/usr/bin/env bash
# What `conformance sampling` says about a correct bfloat16 engine on the real model: specgate's
# nonspec-batch in bfloat16 on the CPU, batch 8, sampling at T 0.8, top-k 50, top-p 0.95, 104 new
# tokens, on all 480 Spec-Bench first turns (SmolLM2's chat template, as prompt ids; seed 1) and
# again on the first 100 (seed 3), about 50,000 tokens; and EQSPEC (K 4, the layer-skip draft)
# on the first 128 (seed 2). Then the one-sample test of nonspec-batch's answers on the first
# 10,000 tokens and on all of them, and the two-sample test of EQSPEC against nonspec-batch on
# the first 128 questions, re-scored in float32 (RESCORE_DTYPE). Writes OUT/real_bfloat16.json
# and .md (default reports/sampling); about an hour on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/sampling}"
rescore_dtype="${RESCORE_DTYPE:-float32}"
source "$root/ci/setup.sh"
python=build/venv/bin/python B=build/bin/conformance pair=build/real_pair work=build/bf16-real
mkdir -p "$out" "$work"
[ -s "$work/prompts.jsonl" ] ||
  "$python" peers/transformers/prompts.py --model "$pair/target" --bench ../shared/specbench/question.jsonl \
    --out "$work/prompts.jsonl"
warpers=(--temperature 0.8 --top-k 50 --top-p 0.95)
decode=(--dtype bfloat16 --max-new-tokens 104 --batch-size 8 --bench "$work/prompts.jsonl" "${warpers[@]}")
[ -s "$work/off.jsonl" ] ||
  OMP_NUM_THREADS=1 "$B" generate --engine nonspec-batch --target "$pair/target" "${decode[@]}" --seed 1 --out "$work/off.jsonl"
[ -s "$work/off-more.jsonl" ] ||
  OMP_NUM_THREADS=1 "$B" generate --engine nonspec-batch --target "$pair/target" "${decode[@]}" --seed 3 --limit 100 \
    --out "$work/off-more.jsonl"
[ -s "$work/on.jsonl" ] ||
  OMP_NUM_THREADS=1 "$B" generate --engine eqspec --target "$pair/target" --draft "$pair/draft" --draft-tokens 4 \
    "${decode[@]}" --seed 2 --limit 128 --out "$work/on.jsonl"
head -128 "$work/off.jsonl" >"$work/off-128.jsonl"

# The answers of nonspec-batch whose tokens first reach 10,000.
"$python" - "$work/off.jsonl" "$work/off-10k.jsonl" <<'PY'
import json, sys
total, kept = 0, []
for line in open(sys.argv[1]):
    if total >= 10000: break
    kept.append(line)
    total += sum(len(turn) for turn in json.loads(line)["choices"][0]["token_ids"])
open(sys.argv[2], "w").writelines(kept)
PY
check() {
  local name=$1
  shift
  local status=0
  OMP_NUM_THREADS=1 "$B" sampling --target "$pair/target" --dtype "$rescore_dtype" --json "$work/$name.json" "$@" \
    >"$work/$name.out" || status=$?
  [ $status -le 1 ] || { cat "$work/$name.out" >&2; exit 1; }
  cat "$work/$name.out"
}
check one-sample-10k --answers "$work/off-10k.jsonl"
check one-sample-all --answers "$work/off.jsonl" --answers "$work/off-more.jsonl"
check two-sample-128 --answers "$work/on.jsonl" --baseline "$work/off-128.jsonl"

"$python" - "$work" "$out" "$rescore_dtype" <<'PY'
import json, pathlib, sys
work, out, dtype = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
rows = []
for name, what in [("one-sample-10k", "one-sample, nonspec-batch, first 10,000 tokens"),
                   ("one-sample-all", "one-sample, nonspec-batch, every token"),
                   ("two-sample-128", "two-sample, EQSPEC against nonspec-batch, first 128 questions")]:
    r = json.loads((work / f"{name}.json").read_text())
    g = r["groups"][0]
    rows.append({"name": name, "what": what, "verdict": r["verdict"], "answers": r["answers"]["answers"],
                 "tokens": r["answers"]["tokens"], "baseline_tokens": r["baseline"]["tokens"] if "baseline" in r else None,
                 "distance": g["test"]["distance"], "p_value": g["p_value"], "holm_p_value": g["holm_p_value"],
                 "rejected_groups": [x["name"] for x in r["groups"] if x["rejected"]],
                 "boundary": len(r["answers"]["boundary"]), "outside": len(r["answers"]["outside_support"]),
                 "reasons": r["reasons"]})
lines = ["# A correct bfloat16 engine on the real model, judged by `conformance sampling`", "",
         "`./ci/sampling-bfloat16.sh`: specgate's nonspec-batch and EQSPEC (K 4, the layer-skip draft) in bfloat16 on the "
         "CPU, batch 8, T 0.8, top-k 50, top-p 0.95, 104 new tokens on the 480 Spec-Bench first turns (SmolLM2's "
         f"template), re-scored in {dtype}, alpha 0.05, support margin 4 logits (bfloat16's).", "",
         "| test | answers | tokens | pooled D | pooled p | Holm p | groups rejected | boundary | outside | verdict |",
         "|---|---:|---:|---:|---:|---:|---|---:|---:|---|"]
for r in rows:
    tokens = f'{r["tokens"]}' + (f' vs {r["baseline_tokens"]}' if r["baseline_tokens"] else "")
    lines.append(f'| {r["what"]} | {r["answers"]} | {tokens} | {r["distance"]:.4f} | {r["p_value"]:.3g} | '
                 f'{r["holm_p_value"]:.3g} | {", ".join(r["rejected_groups"]) or "none"} | {r["boundary"]} | '
                 f'{r["outside"]} | {r["verdict"]} |')
(out / "real_bfloat16.md").write_text("\n".join(lines) + "\n")
(out / "real_bfloat16.json").write_text(json.dumps(rows, indent=2) + "\n")
print("\n".join(lines))
PY
