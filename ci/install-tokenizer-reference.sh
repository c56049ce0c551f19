#!/usr/bin/env bash
# Installs the tokenizer tests' reference (tokenizers.js and real tokenizer files, pinned by
# ci/tokenizer-reference/package-lock.json) into build/tokenizer-reference; quiet, and only
# when missing or when the lock file changed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/build/tokenizer-reference}"
lock="$root/ci/tokenizer-reference/package-lock.json"
if [ -f "$dest/package-lock.json" ] && cmp -s "$lock" "$dest/package-lock.json" && [ -d "$dest/node_modules/@huggingface/tokenizers" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "install-tokenizer-reference: npm is missing (ci/setup.sh installs it)" >&2; exit 1; }
mkdir -p "$dest"
cp "$root/ci/tokenizer-reference/package.json" "$lock" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
