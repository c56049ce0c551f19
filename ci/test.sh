#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test but those labelled long (the mutation
# run: ci/mutants.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/ci/setup.sh"
"$root/ci/install-tokenizer-reference.sh"
cd "$root/build"
ctest --output-on-failure -j "$(nproc)" --label-exclude long
