"""How far an engine's logits in a lower precision lie from the float64 logits of the same weights.

transformers runs the model in float64 and again in each lower dtype over the same token
sequences (a prompt and the model's own greedy continuation), and measures at every position
how much the relative logits of the most likely tokens moved: with d = logits(dtype) -
logits(float64) over the `--top` tokens most likely in float64, spread = max(d) - min(d), the
largest change of any difference l_x - l_y among them, which is what moves a token across a
top-k or min-p cut. For top-p, which cuts on the mass ahead of a token, it measures at each
`--temperatures` the largest change of the cumulative mass of the softmax at that temperature,
the tokens in float64's order, over the ranks where float64's cumulative mass is below 0.999
(where a top-p cut can lie). Writes the quantiles of both over all positions as JSON.
"""
import argparse
import json
import sys

import torch
from transformers import AutoModelForCausalLM


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="Hugging Face folder")
    parser.add_argument("--bench", required=True, help="JSONL with prompt_token_ids (prompts.py's output)")
    parser.add_argument("--limit", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--top", type=int, default=100)
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16", "float16"])
    parser.add_argument("--temperatures", type=float, nargs="+", default=[0.8, 1.0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    reference = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float64).eval()
    models = {name: AutoModelForCausalLM.from_pretrained(args.model, dtype=getattr(torch, name)).eval()
              for name in args.dtypes}
    spreads = {name: [] for name in args.dtypes}
    mass_spreads = {(name, t): [] for name in args.dtypes for t in args.temperatures}
    with open(args.bench) as lines:
        questions = [json.loads(line) for line in lines if line.strip()][:args.limit]
    for question in questions:
        prompt = torch.tensor([question["prompt_token_ids"][0]])
        with torch.no_grad():
            sequence = reference.generate(prompt, max_new_tokens=args.new_tokens, do_sample=False)
            exact = reference(sequence).logits[0, prompt.shape[1] - 1:-1]
            top = exact.topk(args.top, dim=-1).indices
            order = exact.argsort(dim=-1, descending=True)
            for name, model in models.items():
                rounded = model(sequence).logits[0, prompt.shape[1] - 1:-1].double()
                moved = (rounded - exact).gather(1, top)
                spreads[name] += (moved.max(1).values - moved.min(1).values).tolist()
                for t in args.temperatures:
                    cumulative = (exact / t).softmax(-1).gather(1, order).cumsum(-1)
                    rounded_cumulative = (rounded / t).softmax(-1).gather(1, order).cumsum(-1)
                    moved_mass = (rounded_cumulative - cumulative).abs() * (cumulative < 0.999)
                    mass_spreads[(name, t)] += moved_mass.max(1).values.tolist()
        print(f"question {question['question_id']}: {sequence.shape[1] - prompt.shape[1]} positions", file=sys.stderr)
    summary = {name: quantiles(values) for name, values in spreads.items()}
    mass_summary = {f"{name} T {t}": quantiles(values) for (name, t), values in mass_spreads.items()}
    json.dump({"model": args.model, "questions": len(questions), "new_tokens": args.new_tokens, "top": args.top,
               "spread": summary, "mass_spread": mass_summary}, open(args.out, "w"), indent=2)
    print(json.dumps({"spread": summary, "mass_spread": mass_summary}, indent=2))


def quantiles(values):
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]
    return {"positions": len(ordered), "median": pick(0.5), "p99": pick(0.99), "p999": pick(0.999), "max": ordered[-1]}


if __name__ == "__main__":
    main()
