#!/usr/bin/env bash
# Installs what is missing, builds what the demo runs (the CLI and the fixture pair), and runs the
# main job on the embedded default.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_targets="conformance fixture_pair"
source "$root/ci/setup.sh"
cd "$root"
build/bin/conformance demo --out reports/demo --fixtures build/fixture_pair "$@"
