"""Builds a case for `conformance acceptance` that no CPU's rounding decides: a correct engine's
answers with one round ended early, at a drafted position the float64 re-scorer calls certain to
be accepted yet within reach of another outcome (a greedy near-tie of the draft's two likeliest
tokens, or a sampled support that grows within the margin). Splitting a round that ended in a
rejection, [a] into [j + 1, a - j - 1], changes exactly one trial, the draft at position j, from
accepted to rejected, and leaves every other trial as it was (each trial is decided by the
answer's prefix alone). The position is searched for, not assumed: every candidate is split at
once, then halves are kept while COUNTER (a field of the JSON report) stays above zero, so the
search takes about log2(candidates) runs.

usage: boundary_round.py ANSWERS OUT COUNTER -- CONFORMANCE acceptance [options]

Writes OUT with that one round split and prints where it is. Exits 1 with a reason when the
answers already count something, or when no position has the property (nothing can be built).
"""
import json
import os
import subprocess
import sys
import tempfile


def turns_of(choice):
    lengths = choice["accept_lengths"]
    flat = lengths and not isinstance(lengths[0], list)
    return [lengths] if flat else lengths, flat


def candidates(answers):
    found = []
    for line, answer in enumerate(answers):
        choice = answer["choices"][0]
        k = answer["run"]["draft_tokens"]
        rounds, _ = turns_of(choice)
        for turn, lengths in enumerate(rounds):
            # Rounds that add up to the whole turn may count the prefill's pass first: left out.
            first = 1 if sum(lengths) == len(choice["token_ids"][turn]) else 0
            for r in range(first, len(lengths) - 1):
                if lengths[r] - 1 < k:  # ended in a rejection: splitting adds no trial
                    found += [(line, turn, r, j) for j in range(lengths[r] - 1)]
    return found


def split(answers, chosen):
    out = json.loads(json.dumps(answers))
    by_turn = {}
    for line, turn, r, j in chosen:
        by_turn.setdefault((line, turn), {}).setdefault(r, []).append(j)
    for (line, turn), rounds in by_turn.items():
        choice = out[line]["choices"][0]
        all_turns, flat = turns_of(choice)
        lengths, new = all_turns[turn], []
        for r, a in enumerate(lengths):
            start = 0
            for j in sorted(rounds.get(r, [])):
                new.append(j + 1 - start)
                start = j + 1
            new.append(a - start)
        if "accepted_drafts" in choice:
            choice["accepted_drafts"][turn] -= sum(len(js) for js in rounds.values())
        if flat:
            choice["accept_lengths"] = new
        else:
            choice["accept_lengths"][turn] = new
    return out


def main():
    answers_path, out_path, counter = sys.argv[1:4]
    command = sys.argv[sys.argv.index("--") + 1:]
    answers = [json.loads(line) for line in open(answers_path)]
    scratch = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(out_path)))
    runs = 0

    def count(chosen):
        nonlocal runs
        runs += 1
        path, report = f"{scratch}/split.jsonl", f"{scratch}/split.json"
        with open(path, "w") as f:
            f.writelines(json.dumps(a) + "\n" for a in split(answers, chosen))
        result = subprocess.run(command + ["--answers", path, "--json", report], capture_output=True, text=True)
        if result.returncode not in (0, 1):
            sys.exit(f"boundary_round: {' '.join(command)} exited {result.returncode}: {result.stderr.strip()}")
        return json.load(open(report))[counter]

    if count([]) != 0:
        sys.exit(f"boundary_round: {answers_path} already counts {counter}; the case needs answers that count none")
    chosen = candidates(answers)
    if count(chosen) == 0:
        sys.exit(f"boundary_round: none of the {len(chosen)} accepted drafts of {answers_path} counts as {counter} "
                 "when rejected: the case cannot be built from these answers")
    while len(chosen) > 1:
        half = chosen[:len(chosen) // 2]
        chosen = half if count(half) > 0 else chosen[len(chosen) // 2:]
    if count(chosen) != 1:
        sys.exit(f"boundary_round: the search ended on {chosen}, which does not count once as {counter}")
    with open(out_path, "w") as f:
        f.writelines(json.dumps(a) + "\n" for a in split(answers, chosen))
    line, turn, r, j = chosen[0]
    print(f"question {answers[line]['question_id']} (line {line + 1}), turn {turn}, round {r}: rejected at its "
          f"drafted position {j}, found in {runs} runs")


if __name__ == "__main__":
    main()
