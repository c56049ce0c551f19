"""Tokens per second of specgate's decoders against transformers' on the same weights, interleaved.

Every repeat runs each pairing's two sides back to back, specgate first, each in its own
process on one thread: specgate's nonspec at batch 1 against transformers' greedy at batch 1,
EQSPEC at batch 1 against assisted generation (with --drafter ngram: specgate's prompt lookup
against transformers' prompt lookup), and nonspec, EQSPEC and EXSPEC at batch 8 against
transformers' batched greedy at batch 8; and specgate's speculative engines against its own
nonspec at the same batch within each repeat. A side's speed is its generated tokens over its decoding
seconds (model loading excluded on both sides: specgate's `generate` line, transformers'
`generate.py` summary). Writes the per-repeat figures and each pairing's ratio (median, least
and greatest over the repeats) as JSON.
"""
import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (name, specgate engine, specgate batch, transformers mode, transformers batch); EQSPEC at batch
# 1 meets transformers' speculation with the same drafter: assisted generation, or prompt lookup.
def pairings_of(drafter):
    speculative = "assisted" if drafter == "model" else "prompt-lookup"
    return [
        ("nonspec b1 / greedy b1", "nonspec-batch", 1, "greedy", 1),
        (f"eqspec b1 / {speculative} b1", "eqspec", 1, speculative, 1),
        ("nonspec b8 / greedy b8", "nonspec-batch", 8, "greedy", 8),
        ("eqspec b8 / greedy b8", "eqspec", 8, "greedy", 8),
        ("exspec b8 / greedy b8", "exspec", 8, "greedy", 8),
    ]


# specgate's speculative engines against its own nonspec at the same batch, within each repeat
SPEEDUPS = [("eqspec b1 / nonspec b1", "eqspec b1", "nonspec b1"), ("eqspec b8 / nonspec b8", "eqspec b8", "nonspec b8"),
            ("exspec b8 / nonspec b8", "exspec b8", "nonspec b8")]


def run(command):
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"speed.py: {' '.join(map(str, command))} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return done.stdout, time.monotonic() - started


def specgate_side(args, engine, batch, out):
    command = [args.conformance, "generate", "--engine", engine, "--target", args.target, "--bench", args.bench,
               "--out", out, "--batch-size", str(batch), "--max-new-tokens", str(args.max_new_tokens),
               "--draft-tokens", str(args.draft_tokens), "--dtype", "float32"]
    if engine != "nonspec-batch" and args.drafter == "ngram":
        command += ["--drafter", "ngram", "--ngram-max", str(args.ngram_max)]
    elif engine != "nonspec-batch":
        command += ["--draft", args.draft]
    stdout, _ = run(command)
    match = re.search(r"(\d+) tokens in ([0-9.]+) s", stdout)
    if not match:
        sys.exit(f"speed.py: no timing in specgate's output: {stdout.strip()}")
    return int(match.group(1)), float(match.group(2))


def transformers_side(args, mode, batch, out):
    command = [args.python, str(HERE / "generate.py"), "--target", args.target, "--bench", args.bench, "--out", out,
               "--mode", mode, "--batch-size", str(batch), "--max-new-tokens", str(args.max_new_tokens),
               "--draft-tokens", str(args.draft_tokens), "--threads", "1", "--dtype", "float32"]
    if mode == "assisted":
        command += ["--draft", args.draft]
    if mode == "prompt-lookup":
        command += ["--ngram-max", str(args.ngram_max)]
    run(command)
    tokens = seconds = 0
    batches = set()
    for line in open(out):
        choice = json.loads(line)["choices"][0]
        tokens += sum(len(ids) for ids in choice["token_ids"])
        if "batch_wall_time" in choice:  # one wall time per batch, recorded on each of its answers
            batches.add((choice.get("batch_index"), choice["batch_wall_time"]))
        else:
            seconds += sum(choice["wall_time"])
    seconds += sum(wall for _, wall in batches)
    return tokens, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conformance", required=True)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft", help="the draft model (--drafter model)")
    parser.add_argument("--drafter", choices=("model", "ngram"), default="model",
                        help="ngram: specgate's prompt lookup, against transformers' prompt lookup at batch 1")
    parser.add_argument("--ngram-max", type=int, default=3)
    parser.add_argument("--bench", required=True, help="questions with prompt_token_ids (prompts.py)")
    parser.add_argument("--work", required=True, help="folder for the answer files")
    parser.add_argument("--out", required=True, help="JSON report")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--draft-tokens", type=int, default=4)
    args = parser.parse_args()
    if args.drafter == "model" and not args.draft:
        sys.exit("speed.py: --drafter model needs --draft")
    pairings = pairings_of(args.drafter)
    Path(args.work).mkdir(parents=True, exist_ok=True)

    runs = []
    for repeat in range(args.repeat):
        for name, engine, batch, mode, hf_batch in pairings:
            ours = specgate_side(args, engine, batch, f"{args.work}/specgate_{engine}_b{batch}.jsonl")
            theirs = transformers_side(args, mode, hf_batch, f"{args.work}/transformers_{mode}_b{hf_batch}.jsonl")
            record = {"pairing": name, "repeat": repeat,
                      "specgate": {"tokens": ours[0], "seconds": ours[1], "tokens_per_second": ours[0] / ours[1]},
                      "transformers": {"tokens": theirs[0], "seconds": theirs[1],
                                       "tokens_per_second": theirs[0] / theirs[1]}}
            record["ratio"] = record["specgate"]["tokens_per_second"] / record["transformers"]["tokens_per_second"]
            runs.append(record)
            print(f"repeat {repeat} {name}: specgate {record['specgate']['tokens_per_second']:.1f} tokens/s, "
                  f"transformers {record['transformers']['tokens_per_second']:.1f} tokens/s, ratio {record['ratio']:.2f}",
                  flush=True)

    summary = []
    for name, *_ in pairings:
        ratios = [r["ratio"] for r in runs if r["pairing"] == name]
        ours = [r["specgate"]["tokens_per_second"] for r in runs if r["pairing"] == name]
        theirs = [r["transformers"]["tokens_per_second"] for r in runs if r["pairing"] == name]
        summary.append({"pairing": name, "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
                        "ratio_max": max(ratios), "specgate_tokens_per_second_median": statistics.median(ours),
                        "transformers_tokens_per_second_median": statistics.median(theirs)})
    speedups = []
    for name, faster, baseline in SPEEDUPS:
        ratios = []
        for repeat in range(args.repeat):
            side = {r["pairing"].split(" / ")[0]: r["specgate"]["tokens_per_second"] for r in runs if r["repeat"] == repeat}
            ratios.append(side[faster] / side[baseline])
        speedups.append({"speedup": name, "median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)})
        print(f"specgate {name}: {statistics.median(ratios):.2f}x [{min(ratios):.2f}-{max(ratios):.2f}]")
    report = {"command": " ".join(sys.argv), "drafter": args.drafter, "max_new_tokens": args.max_new_tokens,
              "draft_tokens": args.draft_tokens, "dtype": "float32", "threads": 1, "summary": summary,
              "specgate_speedups": speedups, "runs": runs}
    if args.drafter == "ngram":
        report["ngram_max"] = args.ngram_max
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
