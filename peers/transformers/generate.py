"""Runs Hugging Face transformers as a peer engine and writes its answers for specgate to score.

Modes: `greedy` (generate with do_sample=False; a batch of several questions is left-padded with
an attention mask), `assisted` (assisted generation with --draft as the assistant model, K draft
tokens a round, batch 1, as transformers allows), `prompt-lookup` (prompt lookup decoding:
PromptLookupCandidateGenerator with K tokens and --ngram-max, batch 1), `sample` (do_sample=True with the given
warpers, one seeded generator a question) and `assisted-sample` (both: transformers' speculative
sampling, batch 1). The bench must carry `prompt_token_ids`
(prompts.py); its first turns are answered. Answers follow specgate's extension of Spec-Bench's
answer format: token ids (with the EOS that stopped a row, nothing after it), prompt ids, decoded
text, new tokens, wall time, decoding_steps at batch 1 (the target's forward passes, the
prefill included), and with --top-logprobs the log-probabilities of the target's
raw logits; prompt-lookup answers carry per-pass accept_lengths and a `run` naming the drafter,
for `conformance acceptance --drafter ngram`. Model loading is not timed; in a batch every answer
carries the batch's wall time.
"""
import argparse
import json
import sys
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig
from transformers.utils import logging as hf_logging


def fail(message):
    print(f"generate.py: {message}", file=sys.stderr)
    sys.exit(2)


def read_bench(path, limit):
    questions = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                question = json.loads(line)
                question["prompt"] = list(question["prompt_token_ids"][0])
            except (ValueError, KeyError, IndexError, TypeError) as error:
                fail(f"{path}:{number}: needs prompt_token_ids ({error!r})")
            questions.append(question)
    return questions[:limit] if limit is not None else questions


def kept_tokens(row, eos_ids, max_new_tokens):
    """The generated ids up to and including the first EOS."""
    row = row[:max_new_tokens]
    for i, token in enumerate(row):
        if token in eos_ids:
            return row[:i + 1]
    return row


def top_logprobs(scores, row, count, k):
    """Per generated token of `row`, the k most likely tokens under the raw logits."""
    result = []
    for step in range(count):
        logprobs = torch.log_softmax(scores[step][row].double(), dim=-1)
        values, ids = logprobs.topk(k)
        result.append([{"token_id": int(i), "logprob": float(v)} for v, i in zip(values, ids)])
    return result


def accept_lengths(cached, prompt_length, final_length):
    """Tokens each target pass appended at batch 1, from the cache length as each pass began: a
    pass after the first began with the cache holding all but the pending token, and assisted
    generation crops the cache to what a pass kept."""
    begun = [prompt_length] + [length + 1 for length in cached[1:]]
    return [after - before for before, after in zip(begun, begun[1:] + [final_length])]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft")
    parser.add_argument("--bench", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--mode", choices=("greedy", "assisted", "prompt-lookup", "sample", "assisted-sample"),
                        default="greedy")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--draft-tokens", type=int, default=4)
    parser.add_argument("--ngram-max", type=int, default=3, help="prompt-lookup: max_matching_ngram_size")
    parser.add_argument("--top-logprobs", type=int, default=0)
    parser.add_argument("--dtype", choices=("float32", "float64", "bfloat16"), default="float32")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-k", type=int, default=0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--min-p", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()
    assisted = args.mode.startswith("assisted")
    sampled = args.mode.endswith("sample")
    if assisted and (not args.draft or args.batch_size != 1):
        fail(f"--mode {args.mode} needs --draft and --batch-size 1")
    if args.mode == "prompt-lookup" and args.batch_size != 1:
        fail("--mode prompt-lookup needs --batch-size 1")
    if args.batch_size < 1 or args.max_new_tokens < 1 or args.draft_tokens < 1 or args.threads < 1:
        fail("--batch-size, --max-new-tokens, --draft-tokens and --threads must be at least 1")
    hf_logging.disable_progress_bar()
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    questions = read_bench(args.bench, args.limit)
    tokenizer = AutoTokenizer.from_pretrained(args.target)
    model = AutoModelForCausalLM.from_pretrained(args.target, dtype=dtype).eval()
    assistant = AutoModelForCausalLM.from_pretrained(args.draft, dtype=dtype).eval() if assisted else None
    eos = GenerationConfig.from_pretrained(args.target).eos_token_id
    eos_ids = set(eos if isinstance(eos, list) else [eos])
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(eos_ids)

    settings = dict(max_new_tokens=args.max_new_tokens, pad_token_id=pad, eos_token_id=sorted(eos_ids),
                    return_dict_in_generate=True, output_logits=args.top_logprobs > 0)
    if sampled:
        settings.update(do_sample=True, temperature=args.temperature, top_k=args.top_k or None, top_p=args.top_p,
                        min_p=args.min_p or None)
    else:
        settings.update(do_sample=False, temperature=None, top_k=None, top_p=None, min_p=None)
    if assistant is not None:
        settings.update(assistant_model=assistant, num_assistant_tokens=args.draft_tokens,
                        num_assistant_tokens_schedule="constant", assistant_confidence_threshold=0.0)
    if args.mode == "prompt-lookup":
        settings.update(prompt_lookup_num_tokens=args.draft_tokens, max_matching_ngram_size=args.ngram_max)

    passes = [0]  # the target's forward passes, prefill included: decoding_steps at batch 1
    cached = []  # at batch 1, the target's cache length as each pass begins
    def count_pass(module, inputs, kwargs):
        passes[0] += 1
        past = kwargs.get("past_key_values")
        cached.append(past.get_seq_length() if past is not None else 0)
    model.register_forward_pre_hook(count_pass, with_kwargs=True)
    total_tokens = total_seconds = 0
    with open(args.out, "w", encoding="utf-8") as out:
        for start in range(0, len(questions), args.batch_size):
            batch = questions[start:start + args.batch_size]
            width = max(len(q["prompt"]) for q in batch)
            input_ids = torch.tensor([[pad] * (width - len(q["prompt"])) + q["prompt"] for q in batch])
            mask = torch.tensor([[0] * (width - len(q["prompt"])) + [1] * len(q["prompt"]) for q in batch])
            if sampled:
                torch.manual_seed(args.seed * 1000003 + batch[0]["question_id"])
            passes[0] = 0
            cached.clear()
            began = time.perf_counter()
            with torch.no_grad():
                output = model.generate(input_ids=input_ids, attention_mask=mask, **settings)
            seconds = time.perf_counter() - began
            total_seconds += seconds
            for row, question in enumerate(batch):
                tokens = kept_tokens(output.sequences[row, width:].tolist(), eos_ids, args.max_new_tokens)
                total_tokens += len(tokens)
                choice = {"index": 0, "turns": [tokenizer.decode(tokens, skip_special_tokens=True)],
                          "token_ids": [tokens], "prompt_token_ids": [question["prompt"]],
                          "new_tokens": [len(tokens)], "wall_time": [seconds]}
                if len(batch) == 1:
                    choice["decoding_steps"] = [passes[0]]
                if len(batch) == 1 and args.mode == "prompt-lookup":
                    choice["accept_lengths"] = [accept_lengths(cached, width, width + len(tokens))]
                if args.batch_size > 1:
                    choice.update(batch_size=len(batch), batch_index=start // args.batch_size, batch_wall_time=seconds)
                if args.top_logprobs > 0:
                    choice["top_logprobs"] = [top_logprobs(output.logits, row, len(tokens), args.top_logprobs)]
                if sampled:
                    choice["sampling"] = {"temperature": args.temperature, "top_k": args.top_k, "top_p": args.top_p,
                                          "seed": args.seed}
                    if args.min_p > 0:
                        choice["sampling"]["min_p"] = args.min_p
                answer = {"question_id": question["question_id"], "category": question.get("category", ""),
                          "answer_id": f"transformers-{args.mode}-{question['question_id']}",
                          "model_id": f"transformers-{args.mode}", "choices": [choice]}
                if assisted or args.mode == "prompt-lookup":
                    answer["run"] = {"engine": f"transformers-{args.mode}", "batch_size": 1, "started_at": time.time(),
                                     "max_new_tokens": args.max_new_tokens, "draft_tokens": args.draft_tokens,
                                     "drafter": "ngram" if args.mode == "prompt-lookup" else "model"}
                    if args.mode == "prompt-lookup":
                        answer["run"]["ngram"] = {"min": 1, "max": args.ngram_max}
                out.write(json.dumps(answer, ensure_ascii=False) + "\n")
    print(f"transformers {args.mode}: {len(questions)} questions, {total_tokens} tokens in {total_seconds:.2f} s "
          f"({total_tokens / max(total_seconds, 1e-9):.1f} tokens/s); wrote {args.out}")


if __name__ == "__main__":
    main()
