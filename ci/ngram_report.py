#!/usr/bin/env python3
"""Writes ngram.md from ci/ngram-bench.sh's figures: specgate's prompt lookup per subtask and overall.

Per subtask (`conformance bench`, interleaved repeats): each engine's speedup over nonspec-batch
at the same batch (median and range over the repeats), its acceptance (drafts kept over drafts
proposed), mean draft length (tokens proposed per row per round, 0 to K), tokens per round, and
the Leviathan-style ideal (1 - a^(g+1)) / (1 - a) for acceptance a and draft length g: the
speedup if drafting were free and verifying g + 1 positions cost one decode step. Overall:
peers/transformers/speed.py over all questions, and the answers scored against transformers'.
"""
import argparse
import json
from pathlib import Path


def ideal(acceptance, draft_length):
    if draft_length <= 0:
        return 1.0
    if acceptance >= 1.0:
        return draft_length + 1
    return (1 - acceptance ** (draft_length + 1)) / (1 - acceptance)


def spread(result, key):
    value = result[key]
    s = result.get(key + "_spread") or {}
    if value is None:
        return "-"
    if s.get("min") is None:
        return f"{value:.2f}x"
    return f"{value:.2f}x [{s['min']:.2f}-{s['max']:.2f}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--subtasks", nargs="+", required=True)
    args = parser.parse_args()
    out = Path(args.out)
    lines = ["# Prompt lookup on the real model", "",
             "SmolLM2-135M-Instruct, float32, CPU, one thread per engine, K 4, `--drafter ngram`; 8 first turns per",
             "Spec-Bench subtask, smollm2 template, 128 new tokens. Produced by `./ci/ngram-bench.sh` (the per-subtask",
             "bench and the transformers comparison run side by side, one thread each, on 2 cores); speedups are",
             "medians over interleaved repeats, [least-greatest] in brackets; the ideal is (1 - a^(g+1)) / (1 - a) for",
             "acceptance a and mean draft length g, the speedup if drafting were free and a verification pass cost one",
             "decode step.", "",
             "| subtask | batch | engine | tokens/s | speedup vs nonspec (same batch) | acceptance | draft length | tokens/round | ideal |",
             "|---|---|---|---|---|---|---|---|---|"]
    totals = {}
    for subtask in args.subtasks:
        report = json.loads((out / f"bench_{subtask}.json").read_text())
        for r in report["results"]:
            key = (r["engine"], r["batch_size"])
            tokens, seconds = totals.get(key, (0, 0.0))
            totals[key] = (tokens + r["tokens"], seconds + r["seconds"])
            speculative = r["engine"] != "nonspec-batch"
            lines.append(
                f"| {subtask} | {r['batch_size']} | {r['engine']} | {r['tokens_per_s']:.1f} | "
                f"{spread(r, 'speedup_vs_nonspec_same_batch') if speculative else '1'} | "
                + (f"{r['acceptance_rate']:.3f} | {r['draft_length']:.2f} | {r['tokens_per_round']:.2f} | "
                   f"{ideal(r['acceptance_rate'], r['draft_length']):.2f} |" if speculative else "- | - | 1 | - |"))
    lines += ["", "## Overall (all subtasks, tokens over seconds of the median runs)", "",
              "| batch | engine | tokens/s | speedup vs nonspec (same batch) |", "|---|---|---|---|"]
    for (engine, batch), (tokens, seconds) in sorted(totals.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        base_tokens, base_seconds = totals[("nonspec-batch", batch)]
        rate = tokens / seconds
        lines.append(f"| {batch} | {engine} | {rate:.1f} | {rate / (base_tokens / base_seconds):.2f}x |")

    speed = json.loads((out / "speed.json").read_text())
    lines += ["", "## Against transformers, 2 questions per subtask, interleaved (`peers/transformers/speed.py --drafter ngram`)", "",
              "| pairing | specgate tokens/s | transformers tokens/s | ratio [least-greatest] |", "|---|---|---|---|"]
    for s in speed["summary"]:
        lines.append(f"| {s['pairing']} | {s['specgate_tokens_per_second_median']:.1f} | "
                     f"{s['transformers_tokens_per_second_median']:.1f} | {s['ratio_median']:.2f} "
                     f"[{s['ratio_min']:.2f}-{s['ratio_max']:.2f}] |")
    lines += ["", "| specgate speedup | median [least-greatest] |", "|---|---|"]
    for s in speed["specgate_speedups"]:
        lines.append(f"| {s['speedup']} | {s['median']:.2f}x [{s['min']:.2f}-{s['max']:.2f}] |")

    identical = {}
    lines += ["", "## Answers (EQSPEC + ngram at batch 1, scored against transformers)", ""]
    for name in ("lookup", "greedy"):
        path = Path(args.work) / f"identical_{name}.json"
        summary = json.loads(path.read_text())["summary"]
        identical[name] = summary
        reference = "prompt lookup" if name == "lookup" else "greedy"
        lines.append(f"- against transformers' {reference}: {summary['exact']} of {summary['compared']} answers identical "
                     f"(exact match {summary['exact_match']:.3f}, partial match {summary['partial_match']:.3f})")
    (out / "identical.json").write_text(json.dumps(identical, indent=2) + "\n")
    (out / "ngram.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
