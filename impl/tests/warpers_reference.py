#!/usr/bin/env python3
"""Writes the distributions transformers samples from, for specgate's warpers to match.

usage: warpers_reference.py OUT.json

Each case holds float64 logits and a setting of temperature, top_k (0: off), top_p (1: off) and
min_p (0: off); its probs are the softmax of the logits after the warpers that transformers'
GenerationMixin._get_logits_processor builds for do_sample=True with that setting, in the order
it builds them, on a one-layer Llama.
"""
import itertools
import json
import sys

import torch
import transformers
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

VOCAB = 16


def logits_rows():
    generator = torch.Generator().manual_seed(20261125)
    rows = [torch.randn(VOCAB, generator=generator, dtype=torch.float64) * scale for scale in (0.5, 2.0, 4.0)]
    peaked = torch.full((VOCAB,), -3.0, dtype=torch.float64)
    peaked[:4] = torch.tensor([5.0, 4.0, 2.5, 1.0], dtype=torch.float64)
    rows.append(peaked)
    return rows


def main():
    model = LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=2))
    input_ids = torch.zeros((1, 1), dtype=torch.long)
    cases = []
    settings = itertools.product((0.7, 1.0, 1.6), (0, 5), (1.0, 0.9, 0.6), (0.0, 0.05, 0.3, 1.0))
    for (temperature, top_k, top_p, min_p), logits in itertools.product(settings, logits_rows()):
        config = GenerationConfig(do_sample=True, temperature=temperature, top_k=top_k, top_p=top_p,
                                  min_p=min_p or None)
        processors = model._get_logits_processor(generation_config=config, input_ids_seq_length=1,
                                                 encoder_input_ids=input_ids, logits_processor=None)
        warped = processors(input_ids, logits.clone().unsqueeze(0))[0]
        cases.append({"temperature": temperature, "top_k": top_k, "top_p": top_p, "min_p": min_p,
                      "warpers": [type(p).__name__ for p in processors],
                      "logits": logits.tolist(), "probs": torch.softmax(warped, dim=-1).tolist()})
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        json.dump({"transformers": transformers.__version__, "cases": cases}, out)


if __name__ == "__main__":
    main()
