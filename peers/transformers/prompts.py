"""Adds the checkpoint's own prompt ids to a Spec-Bench question file.

Each question's first turn goes through the tokenizer's apply_chat_template with
add_generation_prompt=True, as transformers renders it (the model's Jinja template, default
system prompt included); the line is written back with its first turn alone and
`prompt_token_ids` holding those ids (later turns would need the engine's own earlier answers).
"""
import argparse
import json
import sys

from transformers import AutoTokenizer


def fail(message):
    print(f"prompts.py: {message}", file=sys.stderr)
    sys.exit(2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="Hugging Face folder with the tokenizer")
    parser.add_argument("--bench", required=True, help="Spec-Bench question.jsonl")
    parser.add_argument("--out", required=True)
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--question-ids", help="only these questions, comma-separated, in this order")
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    questions = []
    with open(args.bench, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                question = json.loads(line)
                questions.append((question, question["turns"][0]))
            except (ValueError, KeyError, IndexError, TypeError) as error:
                fail(f"{args.bench}:{number}: {error!r}")
    if args.question_ids:
        by_id = {question["question_id"]: (question, turn) for question, turn in questions}
        try:
            wanted = [int(i) for i in args.question_ids.split(",")]
        except ValueError:
            fail(f"--question-ids: expected comma-separated integers, got {args.question_ids!r}")
        missing = [i for i in wanted if i not in by_id]
        if missing:
            fail(f"--question-ids: {args.bench} has no question {missing[0]}")
        questions = [by_id[i] for i in wanted]
    if args.limit is not None:
        questions = questions[:args.limit]
    with open(args.out, "w", encoding="utf-8") as out:
        for question, turn in questions:
            ids = tokenizer.apply_chat_template([{"role": "user", "content": turn}], add_generation_prompt=True,
                                                tokenize=True, return_dict=True)["input_ids"]
            line = {"question_id": question["question_id"], "category": question["category"], "turns": [turn]}
            line["prompt_token_ids"] = [list(ids)]
            out.write(json.dumps(line, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
