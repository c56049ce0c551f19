"""What one attention call of the real target's decode step costs on CUDA, per SDPA backend and dtype.

specgate's transformer calls scaled_dot_product_attention once a layer with an additive mask, the
query heads of each key head folded into the query axis: q [1, 3, 3 * T, 64], k and v [1, 3, S, 64],
mask [1, 1, 3 * T, S] (SmolLM2-135M: 9 heads, 3 key heads, head dim 64). A decode step adds a key,
so every step is a shape the backend has not seen; a pass over a cache of fixed capacity repeats
one shape. This times both, per backend PyTorch offers for the inputs, in float32 and bfloat16,
with CUDA events. Prints one JSON object a line.

    python3 ci/gpu_attention.py [--steps 64] [--context 200] [--positions 1]
"""
import argparse
import contextlib
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

KEY_HEADS, GROUP, HEAD_DIM = 3, 3, 64


def inputs(keys, positions, dtype):
    q = torch.randn(1, KEY_HEADS, GROUP * positions, HEAD_DIM, device="cuda", dtype=dtype)
    k = torch.randn(1, KEY_HEADS, keys, HEAD_DIM, device="cuda", dtype=dtype)
    v = torch.randn_like(k)
    mask = torch.zeros(1, 1, GROUP * positions, keys, device="cuda", dtype=dtype)
    return q, k, v, mask


def time_calls(calls):
    """Milliseconds a call, each call timed alone between two events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for call in calls:
        torch.cuda.synchronize()
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--context", type=int, default=200)
    parser.add_argument("--positions", type=int, default=1)
    args = parser.parse_args()
    backends = {"default": None, "cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(),
                      "cudnn": torch.backends.cudnn.version()}), flush=True)
    for dtype in (torch.float32, torch.bfloat16):
        for name, backend in backends.items():
            growing = [inputs(args.context + i, args.positions, dtype) for i in range(args.steps)]
            fixed = inputs(args.context + args.steps, args.positions, dtype)
            row = {"dtype": str(dtype).removeprefix("torch."), "backend": name}
            try:
                with sdpa_kernel(backend) if backend is not None else contextlib.nullcontext():
                    F.scaled_dot_product_attention(*fixed[:3], attn_mask=fixed[3])  # warm-up of the backend
                    new_shapes = time_calls([lambda t=t: F.scaled_dot_product_attention(*t[:3], attn_mask=t[3])
                                             for t in growing])
                    repeated = time_calls([lambda: F.scaled_dot_product_attention(*fixed[:3], attn_mask=fixed[3])]
                                          * args.steps)
            except RuntimeError as error:
                row["unavailable"] = str(error).splitlines()[0][:200]
                print(json.dumps(row), flush=True)
                continue
            median = lambda xs: sorted(xs)[len(xs) // 2]
            row.update({"new_shape_ms_median": median(new_shapes), "new_shape_ms_max": max(new_shapes),
                        "same_shape_ms_median": median(repeated), "same_shape_ms_max": max(repeated)})
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
