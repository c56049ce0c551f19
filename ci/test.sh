#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test but those labelled long (the mutation
# run: ci/mutants.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/ci/setup.sh"
"$root/ci/install-tokenizer-reference.sh"
cd "$root/build"
# One intra-op thread per test: as many tests as cores run side by side, and OpenMP teams of
# several threads each would contend for the same cores.
OMP_NUM_THREADS=1 ctest --output-on-failure -j "$(nproc)" --label-exclude long
