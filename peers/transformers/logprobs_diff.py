"""Compares the log-probabilities in specgate's answers with transformers' forward on the same ids.

For every answer written with `conformance generate --engine oracle --top-logprobs K`, runs
transformers' model teacher-forced over prompt + generated ids and, at every generated position,
compares each recorded {token_id, logprob} with transformers' log-softmax of that token. Writes
the positions compared, the largest and mean absolute difference, where the largest is, and how
often transformers' argmax is the answer's token. Exits 1 when the largest difference exceeds
--tolerance, 2 on bad input.
"""
import argparse
import json
import sys

import torch
from transformers import AutoModelForCausalLM
from transformers.utils import logging as hf_logging


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--answers", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--tolerance", type=float, default=1e-3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    hf_logging.disable_progress_bar()
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=getattr(torch, args.dtype)).eval()
    positions = compared = argmax_agrees = 0
    total = largest = 0.0
    worst = None
    with open(args.answers, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                answer = json.loads(line)
                choice = answer["choices"][0]
                prompt, tokens, alternatives = (choice[key][0] for key in ("prompt_token_ids", "token_ids", "top_logprobs"))
            except (ValueError, KeyError, IndexError, TypeError) as error:
                print(f"logprobs_diff.py: {args.answers}:{number}: needs prompt_token_ids, token_ids and "
                      f"top_logprobs ({error!r})", file=sys.stderr)
                sys.exit(2)
            with torch.no_grad():
                logits = model(torch.tensor([prompt + tokens])).logits[0, len(prompt) - 1:-1]
            logprobs = torch.log_softmax(logits.double(), dim=-1)
            for position, (token, recorded) in enumerate(zip(tokens, alternatives)):
                positions += 1
                argmax_agrees += int(logprobs[position].argmax()) == token
                for alternative in recorded:
                    difference = abs(float(logprobs[position, alternative["token_id"]]) - alternative["logprob"])
                    compared += 1
                    total += difference
                    if difference > largest:
                        largest = difference
                        worst = {"question_id": answer["question_id"], "position": position,
                                 "token_id": alternative["token_id"]}
    report = {"model": args.model, "dtype": args.dtype, "positions": positions, "logprobs_compared": compared,
              "max_abs_difference": largest, "mean_abs_difference": total / max(compared, 1), "worst": worst,
              "argmax_equals_answer_token": argmax_agrees / max(positions, 1), "tolerance": args.tolerance}
    with open(args.out, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=2)
        out.write("\n")
    print(f"{positions} positions, {compared} log-probabilities: max |difference| {largest:.3g}, "
          f"mean {report['mean_abs_difference']:.3g}; transformers' argmax is the answer's token at "
          f"{report['argmax_equals_answer_token']:.4f} of positions")
    sys.exit(1 if largest > args.tolerance else 0)


if __name__ == "__main__":
    main()
