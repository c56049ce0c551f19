"""The smallest reproduction of vLLM's CPU build sampling speculative tokens outside the target's
nucleus: no server, no model, a 16-token vocabulary. Run it with the vLLM under test's Python:

    python peers/vllm/reproduce_expand.py            # exit 1 while the defect is there
    SPECGATE_VLLM=expand-fix python peers/vllm/reproduce_expand.py   # with the plugin's correction

1. expand_batch_to_tokens, which spreads each request's temperature, top-k and top-p over its
   draft positions, returns uninitialised memory for float32 and int32 inputs on the CPU.
2. So the rejection sampler verifies drafts and draws recovered tokens under garbage warpers:
   with top-p 0.5 only tokens 0 and 1 may ever be emitted, yet the first token of a round is
   often token 15, the least likely of all.
"""
import collections
import sys

import torch


def main() -> int:
    from vllm.platforms import current_platform

    if "SPECGATE_VLLM" in __import__("os").environ:
        import specgate_vllm

        specgate_vllm.register()
    current_platform.register_triton_kernel_overrides()
    from vllm.v1.sample import rejection_sampler as rs
    from vllm.v1.sample.logits_processor import LogitsProcessors
    from vllm.v1.sample.metadata import SamplingMetadata

    torch.manual_seed(0)
    cu = torch.tensor([2, 5, 6], dtype=torch.int32)
    wrong = False
    for name, values in [("temperature (float32)", torch.tensor([0.8, 0.7, 1.3])),
                         ("top_p (float32)", torch.tensor([0.95, 0.9, 0.5])),
                         ("top_k (int32)", torch.tensor([50, 12, 3], dtype=torch.int32))]:
        got = rs.expand_batch_to_tokens(values, cu, 6)
        want = torch.repeat_interleave(values, torch.tensor([2, 3, 1]))
        ok = torch.equal(got, want)
        wrong |= not ok
        print(f"expand_batch_to_tokens {name}: {got.tolist()} ({'right' if ok else 'WRONG, expected ' + str(want.tolist())})")

    vocab, rows, rounds, draft = 16, 64, 50, 0
    logits = torch.linspace(3, -3, vocab)  # token 0 likeliest, 15 least likely
    probs = torch.softmax(logits, 0)
    support = int(((torch.cumsum(probs, 0) - probs) < 0.5).sum())
    shaped = probs[:support] / probs[:support].sum()
    metadata = SamplingMetadata(
        temperature=torch.ones(rows), all_greedy=False, all_random=True, top_p=torch.full((rows,), 0.5), top_k=None,
        generators={}, max_num_logprobs=None, no_penalties=True, prompt_token_ids=None,
        frequency_penalties=torch.zeros(rows), presence_penalties=torch.zeros(rows), repetition_penalties=torch.ones(rows),
        output_token_ids=[[] for _ in range(rows)], allowed_token_ids_mask=None, bad_words_token_ids={},
        logitsprocs=LogitsProcessors())
    cu = torch.arange(1, rows + 1, dtype=torch.int32)
    first = collections.Counter()
    for _ in range(rounds):
        target = rs.apply_sampling_constraints(logits.repeat(rows, 1), cu, metadata)
        out = rs.rejection_sample(torch.full((rows,), draft, dtype=torch.int32), [1] * rows, 1, cu, None, target,
                                  torch.full((rows, 1), 1, dtype=torch.int32), metadata)
        first.update(out[:, 0].tolist())
    n = rows * rounds
    outside = sum(count for token, count in first.items() if token >= support)
    print(f"top-p 0.5 keeps tokens 0..{support - 1} with probabilities {[round(p, 3) for p in shaped.tolist()]}; "
          f"the draft proposes token {draft}")
    print(f"first token of {n} rounds: " + ", ".join(f"{t}: {c}" for t, c in sorted(first.items())))
    kept = first[draft] / n
    print(f"draft kept {kept:.3f} (a correct sampler keeps it with probability {shaped[draft]:.3f}); "
          f"{outside} of {n} tokens outside the nucleus (a correct sampler: 0)")
    wrong |= outside > 0
    print("defect present" if wrong else "no defect")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
