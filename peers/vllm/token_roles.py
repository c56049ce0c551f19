"""Where the tokens a sampling report found outside the target's support sit in vLLM's rounds.

Reads a `conformance sampling --json` report and the answers it judged, which carry vLLM's
listed rounds (accept_lengths, round_drafts), from a draft-model server, which lists every pass
after the prefill (an n-gram server leaves out its passes without drafts), and counts each outside token as the prefill's, an accepted draft, a recovered token
(drawn after a rejection) or a bonus token (after a round that kept all its drafts).

    python peers/vllm/token_roles.py sampling.json answers.jsonl
"""
import collections
import json
import sys


def roles(choice):
    """The role of every generated token of the answer's first turn, by position."""
    lengths = choice["accept_lengths"][0] if isinstance(choice["accept_lengths"][0], list) else choice["accept_lengths"]
    drafts = choice["round_drafts"][0]
    n = len(choice["token_ids"][0])
    role = ["prefill"]
    for appended, drafted in zip(lengths, drafts):
        role += ["accepted draft"] * (appended - 1)
        role.append("bonus" if appended - 1 == drafted else "recovered")
    return role[:n] if len(role) >= n else None


def main():
    report, answers = json.load(open(sys.argv[1])), [json.loads(line) for line in open(sys.argv[2]) if line.strip()]
    by_line = {i + 1: a for i, a in enumerate(answers)}
    every, outside, unplaced = collections.Counter(), collections.Counter(), 0
    for answer in answers:
        placed = roles(answer["choices"][0])
        if placed is None:
            unplaced += 1
            continue
        every.update(placed)
    for token in report["answers"]["outside_support"]:
        placed = roles(by_line[token["line"]]["choices"][0])
        if placed is None:
            continue
        outside[placed[token["position"]]] += 1
    print("| role | tokens | outside the support |\n|---|---:|---:|")
    for role in ("prefill", "accepted draft", "recovered", "bonus"):
        print(f"| {role} | {every[role]} | {outside[role]} |")
    if unplaced:
        print(f"\n{unplaced} answers whose listed rounds do not cover their tokens (steps without drafts) are left out.")


if __name__ == "__main__":
    main()
