#!/usr/bin/env python3
"""Per-answer realignments against whether a seeded fault showed, on the real pair.

Usage: fault_coverage_real.py ORACLE.jsonl RUN.jsonl [RUN.jsonl ...] > section.md

Each RUN is a generate run with one seeded fault; an answer shows the fault when its tokens
differ from the oracle's. The per-realignment rate q is the most likely one given that an
answer realigned m times stays exact with probability (1 - q)^m, as
`conformance mutants --fault-coverage` estimates it on tiny models.
"""
import json
import math
import sys


def first_turns(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                answer = json.loads(line)
                out[answer["question_id"]] = answer
    return out


def per_realignment(rows):
    def log_likelihood(q):
        total = 0.0
        for m, caught in rows:
            exact = (1.0 - q) ** m
            total += math.log(max(1.0 - exact, 1e-300)) if caught else math.log(max(exact, 1e-300))
        return total
    low, high = 0.0, 1.0
    for _ in range(200):
        a, b = low + (high - low) / 3, high - (high - low) / 3
        if log_likelihood(a) < log_likelihood(b):
            low = a
        else:
            high = b
    return (low + high) / 2


def main():
    oracle = first_turns(sys.argv[1])
    print("| run | answers | accepted/drafted | realignments | answers differing | realigned 0-4: differing | 5-9 | 10+ "
          "| per realignment | realignments for 95% |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    threshold = 0
    for path in sys.argv[2:]:
        run = first_turns(path)
        rows, drafted, accepted, differing = [], 0, 0, 0
        bins = {(0, 4): [0, 0], (5, 9): [0, 0], (10, 10**9): [0, 0]}
        for qid, answer in run.items():
            choice = answer["choices"][0]
            m = sum(choice["realignments"])
            caught = choice["token_ids"] != oracle[qid]["choices"][0]["token_ids"]
            drafted += sum(choice["drafted_tokens"])
            accepted += sum(choice["accepted_drafts"])
            differing += caught
            if m > 0:
                rows.append((m, caught))
            for (lo, hi), counts in bins.items():
                if lo <= m <= hi:
                    counts[0] += 1
                    counts[1] += caught
        q = per_realignment(rows) if rows else 0.0
        need = "–" if q < 1e-9 else str(1 if q > 1 - 1e-9 else math.ceil(math.log(0.05) / math.log(1 - q)))
        threshold = max(threshold, int(need)) if need != "–" else threshold
        name = path.rsplit("/", 1)[-1].removesuffix(".jsonl")
        cells = " | ".join(f"{c[1]}/{c[0]}" if c[0] else "–" for c in bins.values())
        print(f"| `{name}` | {len(run)} | {accepted}/{drafted} | {sum(m for m, _ in rows)} | "
              f"{differing} | {cells} | {q:.3g} | {need} |")
    print(f"\nThreshold: {threshold} realignments (the most any run asks for 95%). Each run has 16 answers, so "
          "the rates rest on few answers that realigned little: rough figures, which is why the warning takes the "
          "larger of the two thresholds.")


if __name__ == "__main__":
    main()
