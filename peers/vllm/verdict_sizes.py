"""The fewest tokens at which each sampled verdict rejects a server's answers in 9 of 10 draws.

Each draw is a disjoint set of the server's answers (answers are independent: every request has
its own seed), so the ten draws of one size are independent; the PIT seed differs per draw too.
One sample and acceptance draw answers; two samples draws whole questions, each with all its
answers on both sides (the speculation-off baseline's included), as the permutation test needs.

    python peers/vllm/verdict_sizes.py --conformance build/bin/conformance --target T --draft D \
        --work DIR --markdown sizes.md --baseline off.jsonl ngram=ngram.jsonl draft=draft.jsonl
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys

DRAWS, NEEDED = 10, 9


def read_answers(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def tokens(answers):
    return sum(len(turn) for a in answers for turn in a["choices"][0]["token_ids"])


def write(path, answers):
    with open(path, "w") as f:
        for a in answers:
            f.write(json.dumps(a) + "\n")


def rejects(command):
    status = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if status.returncode == 2 and "no drafted position" in status.stderr:
        return False  # a draw whose answers drafted nothing holds no evidence either way
    if status.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)}: exit {status.returncode}: {status.stderr.strip()}")
    return status.returncode == 1


def drafter(name, draft):
    if name == "ngram":
        return ["--drafter", "ngram", "--ngram-min", "2", "--ngram-max", "4", "--ngram-through-eos"]
    return ["--draft", draft, "--draft-sampling", "greedy"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conformance", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--markdown", required=True)
    parser.add_argument("--baseline", required=True, help="the speculation-off server's sampled answers")
    parser.add_argument("servers", nargs="+", help="NAME=ANSWERS: ngram or draft, and its sampled answers")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    baseline = read_answers(args.baseline)
    rows = []
    for spec in args.servers:
        name, path = spec.split("=", 1)
        answers = read_answers(path)
        verdicts = {
            "one sample": lambda file, seed: [args.conformance, "sampling", "--target", args.target, "--answers", file,
                                              "--engine-dtype", "float32", "--pit-seed", str(seed)],
            "acceptance": lambda file, seed: [args.conformance, "acceptance", "--answers", file, "--target", args.target,
                                              "--draft-tokens", "4", "--engine-dtype", "float32", *drafter(name, args.draft)],
        }
        for verdict, command in verdicts.items():
            for size in (1, 2, 4, 6):
                if DRAWS * size > len(answers):
                    break
                rejected, sizes = 0, []
                for draw in range(DRAWS):
                    part = answers[draw * size:(draw + 1) * size]
                    file = os.path.join(args.work, f"{name}-{size}-{draw}.jsonl")
                    write(file, part)
                    sizes.append(tokens(part))
                    rejected += rejects(command(file, 1000 * size + draw))
                rows.append((name, verdict, size, "answer", statistics.median(sizes), rejected))
                print(f"{name} {verdict}: {size} answer{'s' if size > 1 else ''} a draw (median {statistics.median(sizes)} tokens): "
                      f"{rejected} of {DRAWS} rejected", flush=True)
                if rejected >= NEEDED:
                    break
        by_question = collections.defaultdict(list)
        for a in answers:
            by_question[a["question_id"]].append(a)
        base_by_question = collections.defaultdict(list)
        for a in baseline:
            base_by_question[a["question_id"]].append(a)
        questions = [q for q in by_question if q in base_by_question]
        if len(questions) >= DRAWS:
            rejected, sizes = 0, []
            for draw in range(DRAWS):
                q = questions[draw]
                file = os.path.join(args.work, f"{name}-q{q}.jsonl")
                base_file = os.path.join(args.work, f"off-q{q}.jsonl")
                write(file, by_question[q])
                write(base_file, base_by_question[q])
                sizes.append(tokens(by_question[q]))
                rejected += rejects([args.conformance, "sampling", "--target", args.target, "--answers", file, "--baseline",
                                     base_file, "--engine-dtype", "float32", "--pit-seed", str(draw)])
            rows.append((name, "two samples", 1, "question", statistics.median(sizes), rejected))
            print(f"{name} two samples: 1 question a draw (median {statistics.median(sizes)} tokens a side): "
                  f"{rejected} of {DRAWS} rejected", flush=True)
    with open(args.markdown, "w") as out:
        out.write("# The fewest tokens at which each verdict rejects vLLM's CPU speculative sampling\n\n"
                  f"{DRAWS} disjoint draws of each server's sampled answers at each size, the smallest size first; a row "
                  f"reaching {NEEDED} of {DRAWS} ends its search. Written by peers/vllm/verdict_sizes.py "
                  "(ci/vllm-check.sh, phase sizes).\n\n"
                  "| server | verdict | draw | median tokens a draw | rejected of 10 |\n|---|---|---|---:|---:|\n")
        for name, verdict, size, unit, median, rejected in rows:
            out.write(f"| {name} | {verdict} | {size} {unit}{'s' if size > 1 else ''} | {median:g} | {rejected} |\n")


if __name__ == "__main__":
    main()
