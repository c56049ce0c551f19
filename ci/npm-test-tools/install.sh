#!/usr/bin/env bash
# Installs the npm packages of ci/npm-test-tools/package.json into DIR (default build/npm-test-tools)
# unless DIR already holds them for this package.json.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:-$here/../../build/npm-test-tools}"
mkdir -p "$dir"
if cmp -s "$here/package.json" "$dir/package.json" && [ -d "$dir/node_modules" ]; then exit 0; fi
command -v npm >/dev/null || { echo "npm is needed to install the test tools (apt-get install npm)" >&2; exit 1; }
cp "$here/package.json" "$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error
