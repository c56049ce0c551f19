#!/usr/bin/env bash
# ./ci/gpu.sh OUT [CARRY]: on a machine with an NVIDIA GPU and a PyTorch 2.x install, and no
# package registry. Builds against that PyTorch's libtorch with the Debian packages carried in
# CARRY (default gpu-carry/, made beforehand by ci/gpu-carry.sh), then writes under OUT:
#   ctest.log               every test but the tokenizers' comparisons with tokenizers.js, which
#                           comes from npm (they compute on the CPU in float64)
#   cuda_<dtype>_<engine>.* the fixture pair on CUDA in float64 and float32: oracle, EQSPEC,
#                           EXSPEC and nonspec-batch on the sample bench, each engine scored against
#                           the oracle of its dtype with --min-exact 1.0
#   real_bf16_*             the real pair (SmolLM2-135M-Instruct and its layer-skip draft) in
#                           bfloat16 on Spec-Bench's 480 first turns (prompt ids from the model's
#                           own chat template, carried): oracle, EQSPEC and EXSPEC, scored against
#                           the oracle with every divergence attributed by re-scoring with the target
#   bench.json, bench.svg   the bench of every engine at batch sizes 1-32 on the real pair
#   summary.txt             one line per step with its exit code
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "${1:?usage: ci/gpu.sh OUT [CARRY]}"
out="$(cd "$1" && pwd)" carry="$(cd "${2:-$root/gpu-carry}" && pwd)"
summary="$out/summary.txt"
: >"$summary"
step() {  # step NAME COMMAND...: runs it, logs its output to OUT/NAME.log, records its exit code
  local name=$1
  shift
  "$@" >"$out/$name.log" 2>&1
  local status=$?
  echo "$name: exit $status" | tee -a "$summary"
  return 0
}

if [ ! -d "$carry/real_pair" ]; then  # carried in parts (ci/gpu-carry.sh)
  cat "$carry"/part[0-9]*/real_pair.tar.* | tar -C "$carry" -xf - || { echo "gpu.sh: a part of the real pair is missing in $carry"; exit 2; }
fi
prefix="$carry/prefix"
if [ ! -d "$prefix/usr" ]; then
  for deb in "$carry"/debs/*.deb; do dpkg -x "$deb" "$prefix"; done
fi
export PKG_CONFIG_SYSROOT_DIR="$prefix" PKG_CONFIG_PATH="$prefix/usr/lib/x86_64-linux-gnu/pkgconfig:$prefix/usr/share/pkgconfig"
export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

torch_prefix="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
build="$root/build-gpu"
step configure cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$torch_prefix;$prefix/usr"
step build cmake --build "$build" -j "$(nproc)"
B="$build/bin/conformance"
# Without a registry there is no tokenizers.js (npm) to compare tokenizers with.
(cd "$build" && step ctest ctest --output-on-failure -j "$(nproc)" \
  -E "tokenizer_reference|ReferenceTokenizer|chat_template_jinja|chat_prompt_ids|tokenizer_benchmark")

sample="$root/fixtures/bench/sample.jsonl"
fixtures="$build/fixture_pair"
for dtype in float64 float32; do
  step "cuda_${dtype}_oracle" "$B" generate --engine oracle --target "$fixtures/target" --bench "$sample" --turns all \
    --dtype "$dtype" --device cuda --max-new-tokens 64 --out "$out/cuda_${dtype}_oracle.jsonl"
  for engine in nonspec-batch eqspec exspec; do
    draft=(--draft "$fixtures/draft")
    [ "$engine" = nonspec-batch ] && draft=()
    step "cuda_${dtype}_${engine}" "$B" generate --engine "$engine" --target "$fixtures/target" "${draft[@]}" \
      --bench "$sample" --turns all --dtype "$dtype" --device cuda --batch-size 8 --max-new-tokens 64 \
      --out "$out/cuda_${dtype}_${engine}.jsonl"
    step "cuda_${dtype}_${engine}_score" "$B" score --reference "$out/cuda_${dtype}_oracle.jsonl" \
      --candidate "$out/cuda_${dtype}_${engine}.jsonl" --min-exact 1.0 --json "$out/cuda_${dtype}_${engine}_score.json"
  done
done

pair="$carry/real_pair"
questions="$carry/specbench_prompts.jsonl"  # Spec-Bench's first turns with SmolLM2's own prompt ids
step real_bf16_oracle "$B" generate --engine oracle --target "$pair/target" --bench "$questions" \
  --dtype bfloat16 --device cuda --max-new-tokens 256 --out "$out/real_bf16_oracle.jsonl"
for engine in eqspec exspec; do
  step "real_bf16_$engine" "$B" generate --engine "$engine" --target "$pair/target" --draft "$pair/draft" \
    --bench "$questions" --dtype bfloat16 --device cuda --batch-size 16 --max-new-tokens 256 \
    --out "$out/real_bf16_$engine.jsonl"
  step "real_bf16_${engine}_score" "$B" score --reference "$out/real_bf16_oracle.jsonl" \
    --candidate "$out/real_bf16_$engine.jsonl" --bench "$questions" --rescore-with "$pair/target" \
    --rescore-device cuda --rescore-dtype bfloat16 --tokenizer "$pair/target" \
    --json "$out/real_bf16_${engine}_score.json" --markdown "$out/real_bf16_${engine}_score.md"
done
step bench "$B" bench --target "$pair/target" --draft "$pair/draft" --bench "$questions" \
  --dtype bfloat16 --device cuda --batch-sizes 1,2,4,8,16,32 --sample 64 --max-new-tokens 256 --repeat 3 \
  --json "$out/bench.json" --svg "$out/bench.svg"
cat "$summary"
! grep -qv ": exit 0$" "$summary"
