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
          libcpp-httplib-dev libcpp-httplib0.11 libssl-dev libssl3 libbrotli1 zlib1g libboost1.74-dev libboost-dev)
(cd "$carry/debs" && apt-get download -q "${packages[@]}" >/dev/null)
python="$("$root/ci/python-env.sh")"
[ -f "$carry/real_pair/real_pair_report.json" ] || "$python" "$root/fixtures/real_model/make_real_pair.py" "$carry/real_pair"
"$python" "$root/peers/transformers/prompts.py" --model "$carry/real_pair/target" \
  --bench "$root/../shared/specbench/question.jsonl" --out "$carry/specbench_prompts.jsonl"
# A call of the device tool carries at most 64 MiB and the real pair is about 680 MB: it goes as
# a tar file cut into 60 MiB parts, one folder a part (partNN/), which ci/gpu.sh joins. Carry
# debs/ with the first part, then one part a call until every part is there.
rm -rf "$carry"/part[0-9]*
tar -C "$carry" -cf - real_pair specbench_prompts.jsonl | split -b 60M -d -a 2 - "$carry/real_pair.tar."
for piece in "$carry"/real_pair.tar.*; do
  mkdir -p "$carry/part${piece##*.}" && mv "$piece" "$carry/part${piece##*.}/"
done
echo "gpu-carry: $(ls "$carry/debs" | wc -l) packages ($(du -sh "$carry/debs" | cut -f1)) and the real pair in" \
  "$(ls -d "$carry"/part[0-9]* | wc -l) parts of 60 MiB in $carry"
