"""Counts the prompts whose ids specgate and transformers agree on.

Reads `conformance tokenize --bench B --out P` where B carries transformers' prompt_token_ids
(prompts.py): every line of P says whether specgate's ids equal the bench's. Prints the count and
the first difference; exits 1 unless all agree, 2 on bad input.
"""
import argparse
import json
import sys


def first_difference(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tokenized", help="tokenize's output over a bench with prompt_token_ids")
    parser.add_argument("bench", help="that bench (prompts.py's output)")
    parser.add_argument("--json", help="write the counts here")
    args = parser.parse_args()
    try:
        ours = [json.loads(line) for line in open(args.tokenized, encoding="utf-8")]
        theirs = {q["question_id"]: q["prompt_token_ids"][0] for q in map(json.loads, open(args.bench, encoding="utf-8"))}
    except (OSError, ValueError, KeyError) as error:
        print(f"compare_prompts.py: {error}", file=sys.stderr)
        sys.exit(2)
    differing = [line for line in ours if theirs.get(line["question_id"]) != line["token_ids"]]
    report = {"prompts": len(ours), "equal": len(ours) - len(differing),
              "differing_question_ids": [line["question_id"] for line in differing]}
    print(f"{report['equal']} of {report['prompts']} prompts have the same ids in specgate and transformers")
    if differing:
        line = differing[0]
        expected = theirs.get(line["question_id"], [])
        at = first_difference(line["token_ids"], expected)
        print(f"question {line['question_id']}: first difference at id {at}: specgate {line['token_ids'][at:at + 5]}, "
              f"transformers {expected[at:at + 5]}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=2)
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
