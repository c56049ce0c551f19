#!/usr/bin/env bash
# Here, on a machine with the registries: fills gpu-carry/ (ignored by git) with what ci/gpu.sh
# needs on a GPU machine that has PyTorch but no registry: the Debian packages the build uses
# (as .deb files, unpacked there into a folder of their own) and the real model pair
# (fixtures/real_model/make_real_pair.py) with Spec-Bench's first turns as its own chat template
# renders them (peers/transformers/prompts.py). Copy or carry the whole folder with the checkout.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
carry="${1:-$root/gpu-carry}"
mkdir -p "$carry/debs"
packages=(librapidcheck-dev libgtest-dev libgmock-dev googletest libbenchmark-dev libbenchmark1debian nlohmann-json3-dev
          libcli11-dev libpcre2-dev libpcre2-8-0 libutf8proc-dev libutf8proc2 libsentencepiece-dev libsentencepiece0
          libcpp-httplib-dev libcpp-httplib0.11 libssl-dev libssl3 libbrotli1 zlib1g)
(cd "$carry/debs" && apt-get download -q "${packages[@]}" >/dev/null)
python="$("$root/ci/python-env.sh")"
[ -f "$carry/real_pair/real_pair_report.json" ] || "$python" "$root/fixtures/real_model/make_real_pair.py" "$carry/real_pair"
"$python" "$root/peers/transformers/prompts.py" --model "$carry/real_pair/target" \
  --bench "$root/../shared/specbench/question.jsonl" --out "$carry/specbench_prompts.jsonl"
echo "gpu-carry: $(ls "$carry/debs" | wc -l) packages and the real pair in $carry"
