#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test but those labelled long (the mutation
# run: ci/mutants.sh), then those labelled numerics again on another of libtorch's CPU kernel families.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/ci/setup.sh"
"$root/ci/install-tokenizer-reference.sh"
cd "$root/build"
# One intra-op thread per test: as many tests as cores run side by side, and OpenMP teams of
# several threads each would contend for the same cores.
OMP_NUM_THREADS=1 ctest --output-on-failure -j "$(nproc)" --label-exclude long
# The tests whose outcome rests on rounding below float64, once more with libtorch forced onto
# another kernel family than this CPU's best (ATEN_CPU_CAPABILITY), so that an assumption about
# where one CPU's kernels round fails here rather than on the next machine: avx2, what most x86
# CPUs without AVX-512 run, where this CPU has AVX-512; else default. ci/numerics.sh runs them
# under every family the CPU offers.
capability=default
grep -qw avx512f /proc/cpuinfo 2>/dev/null && capability=avx2
echo "tests labelled numerics, ATEN_CPU_CAPABILITY=$capability"
ATEN_CPU_CAPABILITY=$capability OMP_NUM_THREADS=1 ctest --output-on-failure -j "$(nproc)" --label-regex numerics
