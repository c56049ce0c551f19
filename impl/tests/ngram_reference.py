#!/usr/bin/env python3
"""Writes the drafts transformers' prompt lookup proposes, for specgate's n-gram drafter to match.

usage: ngram_reference.py QUESTIONS.jsonl OUT.json

Contexts: the words of real Spec-Bench questions (each distinct word one id, so their n-grams
recur as the text's do), and random sequences over small vocabularies. Each case holds the
proposal of transformers' PromptLookupCandidateGenerator.get_candidates for one context, one
max_matching_ngram_size and num_output_tokens, with and without an EOS id.
"""
import json
import random
import sys

import torch
import transformers
from transformers.generation.candidate_generator import PromptLookupCandidateGenerator


def word_contexts(path, count):
    ids = {}
    contexts = []
    with open(path, encoding="utf-8") as questions:
        for line in questions:
            text = " ".join(json.loads(line)["turns"])
            words = [ids.setdefault(word, len(ids)) for word in text.split()]
            for end in range(8, len(words) + 1, max(1, len(words) // 4)):
                contexts.append(words[:end])
            if len(contexts) >= count:
                break
    return contexts[:count]


def random_contexts(count):
    generator = random.Random(20261126)
    contexts = []
    for _ in range(count):
        vocab = generator.randint(2, 6)
        contexts.append([generator.randrange(vocab) for _ in range(generator.randint(1, 60))])
    return contexts


def proposal(context, max_n, k, eos):
    lookup = PromptLookupCandidateGenerator(
        eos_token_id=None if eos is None else torch.tensor([eos]),
        num_output_tokens=k,
        max_matching_ngram_size=max_n,
        max_length=1 << 20,
    )
    input_ids = torch.tensor([context], dtype=torch.long)
    candidates, _ = lookup.get_candidates(input_ids)
    return candidates[0, len(context):].tolist()


def main():
    questions, out = sys.argv[1], sys.argv[2]
    cases = []
    for index, context in enumerate(word_contexts(questions, 120) + random_contexts(120)):
        for max_n, k in ((1, 3), (2, 4), (3, 5), (4, 8)):
            cases.append({"context": context, "max_n": max_n, "k": k, "eos": None,
                          "proposal": proposal(context, max_n, k, None)})
        eos = context[index % len(context)]
        cases.append({"context": context, "max_n": 3, "k": 5, "eos": eos, "proposal": proposal(context, 3, 5, eos)})
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"transformers": transformers.__version__, "cases": cases}, f)
    print(f"{len(cases)} cases from transformers {transformers.__version__}, "
          f"{sum(1 for c in cases if c['proposal'])} with a proposal")


if __name__ == "__main__":
    main()
