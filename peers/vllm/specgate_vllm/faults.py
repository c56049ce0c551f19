"""Classic speculative-decoding faults, each switched on by name (see __init__.py). Each replaces
one function of vLLM 0.32's in the process that runs it; nothing is written to vLLM's files."""
import inspect
from dataclasses import replace

import torch


def greedy_verify() -> None:
    from vllm.v1.sample import rejection_sampler

    original = rejection_sampler.rejection_sample
    signature = inspect.signature(original)

    def verify_greedily(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        metadata = bound.arguments["sampling_metadata"]
        bound.arguments["sampling_metadata"] = replace(metadata, all_greedy=True, all_random=False)
        return original(*bound.args, **bound.kwargs)

    rejection_sampler.rejection_sample = verify_greedily


def target_not_residual() -> None:
    from vllm.utils import cpu_triton_utils

    original = cpu_triton_utils._sample_recovered_tokens_kernel_impl
    signature = inspect.signature(original)

    def recover_from_target(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        if bound.arguments["NO_DRAFT_PROBS"]:
            bound.arguments["draft_token_ids"] = torch.full_like(bound.arguments["draft_token_ids"], -1)
        else:
            bound.arguments["draft_probs"] = torch.zeros_like(bound.arguments["draft_probs"])
        return original(*bound.args, **bound.kwargs)

    cpu_triton_utils._sample_recovered_tokens_kernel_impl = recover_from_target


def accepted_logprobs_zero() -> None:
    from vllm.v1.sample.rejection_sampler import PLACEHOLDER_TOKEN_ID, RejectionSampler

    original = RejectionSampler._get_logprobs_tensors

    def zero_for_accepted(self, max_num_logprobs, metadata, logits, target_logits, bonus_logits, sampled_token_ids):
        tensors = original(self, max_num_logprobs, metadata, logits, target_logits, bonus_logits, sampled_token_ids)
        kept = sampled_token_ids != PLACEHOLDER_TOKEN_ID
        last = kept.sum(dim=1, keepdim=True) - 1
        accepted = kept & (torch.arange(kept.shape[1]).unsqueeze(0) < last)
        # The token's own column and any top-k column holding it: the response takes the token's
        # log-probability from whichever column vLLM reads last, the top-k one where it is there.
        ids = tensors.logprob_token_ids
        tensors.logprobs[(ids == ids[:, :1]) & accepted.flatten().unsqueeze(1)] = 0.0
        return tensors

    RejectionSampler._get_logprobs_tensors = zero_for_accepted


def stream_drops_multi_token() -> None:
    from vllm.entrypoints.openai.completion.serving import OpenAIServingCompletion

    original = OpenAIServingCompletion.completion_stream_generator

    def first_token_of_each_step(self, request, engine_inputs, result_generator, *args, **kwargs):
        tokenizer = kwargs.get("tokenizer")

        async def steps():
            async for index, result in result_generator:
                for output in result.outputs:
                    if len(output.token_ids) > 1:
                        output.token_ids = list(output.token_ids[:1])
                        output.text = tokenizer.decode(output.token_ids) if tokenizer is not None else ""
                yield index, result

        return original(self, request, engine_inputs, steps(), *args, **kwargs)

    OpenAIServingCompletion.completion_stream_generator = first_token_of_each_step


def usage_counts_drafts() -> None:
    from vllm.entrypoints.openai.completion.serving import OpenAIServingCompletion

    original = OpenAIServingCompletion.request_output_to_completion_response

    def count_rejected_drafts_too(self, final_res_batch, *args, **kwargs):
        response = original(self, final_res_batch, *args, **kwargs)
        for result in final_res_batch:
            for output in result.outputs:
                steps = output.spec_decode_metrics
                if steps is not None:
                    rejected = steps.num_draft_tokens - sum(j * count for j, count in enumerate(steps.histogram))
                    response.usage.completion_tokens += rejected
                    response.usage.total_tokens += rejected
        return response

    OpenAIServingCompletion.request_output_to_completion_response = count_rejected_drafts_too


INSTALLERS = {
    "greedy-verify": greedy_verify,
    "target-not-residual": target_not_residual,
    "accepted-logprobs-zero": accepted_logprobs_zero,
    "stream-drops-multi-token": stream_drops_multi_token,
    "usage-counts-drafts": usage_counts_drafts,
}
