"""vLLM's rejection sampler spreads each request's temperature, top-k and top-p over its draft
positions with expand_batch_to_tokens. On the CPU, vllm/utils/cpu_triton_utils.py's
_expand_kernel_impl hands the C++ kernel int64 copies of the output and the input
(_ensure_int64), so for a float32 temperature or top-p, or an int32 top-k, the kernel fills a
temporary and the caller's tensor keeps whatever torch.empty left in it; a float input is also
truncated to an integer first. This is the same expansion done in place, for any dtype."""
import torch


def expand(output: torch.Tensor, input_val: torch.Tensor, cu_num_tokens: torch.Tensor,
           replace_from, replace_to, MAX_NUM_TOKENS=None) -> None:
    values = torch.where(input_val == replace_from, torch.as_tensor(replace_to, dtype=input_val.dtype), input_val)
    ends = cu_num_tokens.to(torch.int64)
    counts = torch.diff(ends, prepend=ends.new_zeros(1))
    output[: int(ends[-1])] = torch.repeat_interleave(values, counts).to(output.dtype)


def install() -> None:
    from vllm.utils import cpu_triton_utils

    cpu_triton_utils._expand_kernel_impl = expand
