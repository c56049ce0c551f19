#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test but those labelled long (the mutation
# run: ci/mutants.sh), then those labelled numerics again on libtorch's other CPU kernel families.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/ci/setup.sh"
"$root/ci/install-tokenizer-reference.sh"
cd "$root/build"
# One intra-op thread per test: as many tests as cores run side by side, and OpenMP teams of
# several threads each would contend for the same cores.
OMP_NUM_THREADS=1 ctest --output-on-failure -j "$(nproc)" --label-exclude long
# The tests whose outcome rests on rounding below float64, again with libtorch forced onto other
# kernel families than this CPU's best (ATEN_CPU_CAPABILITY), so that an assumption about where
# one CPU's kernels round fails here rather than on the next machine. avx2 only where the CPU
# has it.
capabilities=(default)
grep -qw avx2 /proc/cpuinfo 2>/dev/null && capabilities=(avx2 default)
for capability in "${capabilities[@]}"; do
  echo "tests labelled numerics, ATEN_CPU_CAPABILITY=$capability"
  ATEN_CPU_CAPABILITY=$capability OMP_NUM_THREADS=1 ctest --output-on-failure -j "$(nproc)" --label-regex numerics
done
