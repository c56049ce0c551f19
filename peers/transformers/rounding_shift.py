"""How far a lower-precision engine moves the one-sample test's PIT law, in transformers' own kernels.

transformers samples each prompt's continuation in float64 with the warpers, then runs the same
token sequences in float64 and in bfloat16 with each `--attention` implementation. At every
position both logits are shaped alike (specgate's order: temperature, top-k, top-p, min-p, in
float64 arithmetic), and two figures are taken: the total variation between the two shaped
distributions, and the law G of the randomised PIT against the float64 distribution of a token
drawn from the bfloat16 one, conditioned on the float64 support, at 1,024 points of [0, 1]
(as specgate's pit_law_shift). The shift is the largest |mean G(u) - u| over the positions:
what `conformance sampling` grants a rounding engine (times its tolerance) is this figure with
specgate's own bfloat16 kernels. Writes the figures per setting and attention as JSON.
"""
import argparse
import json

import torch
import transformers
from transformers import AutoModelForCausalLM

SETTINGS = {
    "T0.8-topk50-topp0.95": {"temperature": 0.8, "top_k": 50, "top_p": 0.95, "min_p": 0.0},
    "T1-minp0.1": {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.1},
}
POINTS = 1024


def shaped(logits, temperature, top_k, top_p, min_p):
    logits = logits.double() / temperature
    if top_k > 0:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        p = logits.softmax(-1)
        sorted_p, order = p.sort(dim=-1, descending=True, stable=True)
        ahead = sorted_p.cumsum(-1) - sorted_p
        cut = torch.zeros_like(p, dtype=torch.bool).scatter(1, order, ahead >= top_p)
        logits = logits.masked_fill(cut, float("-inf"))
    if min_p > 0.0:
        p = logits.softmax(-1)
        logits = logits.masked_fill(p < min_p * p.max(-1, keepdim=True).values, float("-inf"))
    return logits.softmax(-1)


def pit_law_shift(reference, engine):
    """G(u) - u at POINTS points per row: the PIT against `reference` of a token drawn from `engine`."""
    p_sorted, order = reference.sort(dim=-1, descending=True, stable=True)
    e = engine.gather(1, order) * (p_sorted > 0)
    e_mass = e.sum(1, keepdim=True)
    e = e / e_mass.clamp_min(1e-300)
    through = p_sorted.cumsum(1)
    e_before = e.cumsum(1) - e
    u = ((torch.arange(POINTS, dtype=torch.float64) + 0.5) / POINTS).expand(reference.shape[0], POINTS).contiguous()
    at = torch.searchsorted(through, u, right=True).clamp_max(reference.shape[1] - 1)
    own = p_sorted.gather(1, at)
    within = ((u - (through.gather(1, at) - own)) / own.clamp_min(1e-300)).clamp(0.0, 1.0)
    return torch.where(e_mass > 0, e_before.gather(1, at) + e.gather(1, at) * within - u, torch.zeros_like(u))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="Hugging Face folder")
    parser.add_argument("--bench", required=True, help="JSONL with prompt_token_ids (prompts.py's output)")
    parser.add_argument("--limit", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--attention", nargs="+", default=["sdpa", "eager"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    reference = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float64).eval()
    engines = {name: AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.bfloat16,
                                                          attn_implementation=name).eval()
               for name in args.attention}
    with open(args.bench) as lines:
        questions = [json.loads(line) for line in lines if line.strip()][:args.limit]
    figures = {}
    for setting, warpers in SETTINGS.items():
        torch.manual_seed(args.seed)
        shifts = {name: [] for name in engines}
        variations = {name: [] for name in engines}
        for question in questions:
            prompt = torch.tensor([question["prompt_token_ids"][0]])
            with torch.no_grad():
                sequence = reference.generate(prompt, max_new_tokens=args.new_tokens, do_sample=True,
                                              temperature=warpers["temperature"], top_k=warpers["top_k"],
                                              top_p=warpers["top_p"], min_p=warpers["min_p"] or None)
                positions = slice(prompt.shape[1] - 1, sequence.shape[1] - 1)
                exact = shaped(reference(sequence).logits[0, positions], **warpers)
                for name, model in engines.items():
                    rounded = shaped(model(sequence).logits[0, positions], **warpers)
                    shifts[name].append(pit_law_shift(exact, rounded))
                    variations[name] += (0.5 * (rounded - exact).abs().sum(-1)).tolist()
        figures[setting] = {
            name: {"positions": len(variations[name]),
                   "mean_total_variation": sum(variations[name]) / len(variations[name]),
                   "largest_total_variation": max(variations[name]),
                   "pit_law_shift": torch.cat(shifts[name]).mean(0).abs().max().item()}
            for name in engines}
    result = {"question_ids": [q.get("question_id") for q in questions], "new_tokens": args.new_tokens,
              "seed": args.seed, "reference": "float64", "engine": "bfloat16", "torch": torch.__version__,
              "transformers": transformers.__version__,
              "settings": figures}
    with open(args.out, "w") as out:
        json.dump(result, out, indent=2)
        out.write("\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
