#!/usr/bin/env bash
# The tests labelled numerics (their outcome rests on rounding below float64: float32 engines
# equal to the oracle token for token, bfloat16 runs, the near-tie and support-margin boundaries)
# under every CPU kernel family of libtorch this CPU can run (ATEN_CPU_CAPABILITY: default, avx2,
# avx512), each a full pass. ./ci/test.sh runs one other family; this runs them all. About
# 2 minutes a family on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/ci/setup.sh"
cd "$root/build"
capabilities=(default)
grep -qw avx2 /proc/cpuinfo 2>/dev/null && capabilities+=(avx2)
grep -qw avx512f /proc/cpuinfo 2>/dev/null && capabilities+=(avx512)
failed=()
for capability in "${capabilities[@]}"; do
  echo "tests labelled numerics, ATEN_CPU_CAPABILITY=$capability"
  ATEN_CPU_CAPABILITY=$capability OMP_NUM_THREADS=1 ctest --output-on-failure -j "$(nproc)" --label-regex numerics ||
    failed+=("$capability")
done
[ ${#failed[@]} -eq 0 ] || { echo "numerics tests failed under ATEN_CPU_CAPABILITY=${failed[*]}" >&2; exit 1; }
echo "numerics tests passed under ATEN_CPU_CAPABILITY=${capabilities[*]}"
