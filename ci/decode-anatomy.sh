#!/usr/bin/env bash
# The real model's decode step and K+1 = 5 verification pass against this machine's limit, one
# thread, float32 and bfloat16, 200 cached tokens: weight bytes / read bandwidth, each pass's time
# as a fraction of it, and each pass operator by operator (impl/benchmarks/decode_anatomy.cpp).
# BATCH (default 1) rows a pass; the thread's multiply-add rate gives each pass a second limit,
# its products' arithmetic. Writes OUT (default reports/benchmarks/anatomy/real_model.json) and
# prints the summary. About two minutes on a machine otherwise idle (BATCH=8: about six).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-reports/benchmarks/anatomy/real_model.json}"
build_targets="decode_anatomy real_pair" source "$root/ci/setup.sh"
mkdir -p "$(dirname "$out")"
build/bin/decode_anatomy build/real_pair/target --batch "${BATCH:-1}" --context 200 --positions 5 \
  --repeats "${REPEATS:-15}" >"$out"
build/venv/bin/python - "$out" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for d in report["dtypes"]:
    print(f'{d["dtype"]}: {d["weight_bytes"] / 1e6:.0f} MB of weights, read {d["read_gb_per_s"]["median"]:.1f} GB/s '
          f'-> limit {d["limit_ms"]:.1f} ms a step; step {d["step_ms"]["median"]:.1f} ms '
          f'({d["step_of_limit"]["median"]:.2f} of the limit), verification of {report["positions"]} '
          f'{d["verification_ms"]["median"]:.1f} ms = {d["verification_in_steps"]["median"]:.2f} steps')
    print(f'  batch {report["batch"]}: multiply-adds at {d["multiply_add_gflop_per_s"]["median"]:.0f} GFLOP/s -> '
          f'arithmetic limit {d["step_compute_limit_ms"]:.1f} ms a step, {d["verification_compute_limit_ms"]:.1f} ms a '
          f'pass; the pass can cost no less than {d["verification_limit_in_steps"]:.2f} steps')
    for name in ("step_anatomy", "verification_anatomy"):
        top = ", ".join(f'{o["operator"]} {o["share"]:.0%}' for o in d[name]["operators"][:5])
        print(f'  {name}: {d[name]["operator_calls_per_pass"]:.0f} operator calls a pass; {top}')
PY
