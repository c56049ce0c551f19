#!/usr/bin/env bash
# The mutation run: the property suite against every fault of impl/decoding/faults.h, each of
# which must be killed at the default case count (ctest label long, about 4 minutes on 2 cores).
# Installs and builds what is missing as ci/test.sh does; writes build/mutants.json.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/ci/setup.sh"
cd "$root/build"
ctest --output-on-failure --label-regex long
