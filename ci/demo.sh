#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on the embedded default.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/ci/setup.sh"
cd "$root"
build/bin/conformance demo --out reports/demo --fixtures build/fixture_pair "$@"
