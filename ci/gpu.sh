#!/usr/bin/env bash
# ./ci/gpu.sh OUT [STEP...]: on a machine with an NVIDIA GPU, PyTorch 2.x and transformers but no
# package registry, with gpu-carry/ (made beforehand by ci/gpu-carry.sh) in the checkout. Runs the
# steps named, by default all in this order, each writing its log NAME.log and its results in OUT:
#   build    configures and builds build-gpu/ against that PyTorch's libtorch and the carried packages
#   ctest    ctest.log: every test (they run on the CPU) but the comparisons with tokenizers.js,
#            which comes from npm
#   fixture  cuda_<dtype>_<engine>.*: the fixture pair on CUDA in float64 and float32: oracle,
#            nonspec-batch, EQSPEC and EXSPEC on the sample bench, each engine scored against the
#            oracle of its dtype with --min-exact 1.0
#   pair     the real pair (SmolLM2-135M-Instruct and its layer-skip draft) made there from the
#            carried GGUF by make_real_pair.py, its weights checked against the digest of the pair
#            made here (pair_digest.txt)
#   real     real_bf16_*: the real pair in bfloat16 on every 6th of Spec-Bench's 480 first turns (80,
#            from every category), 128 new tokens: oracle, EQSPEC and EXSPEC at batch 16, scored
#            against the oracle with every divergence attributed by re-scoring with the target (no
#            gate: bfloat16 at another batch shape may break near-ties; the report says which)
#   bench    bench.json, bench.svg: nonspec-batch, EQSPEC and EXSPEC on the real pair in bfloat16
#            at batch 1-32, 32 Spec-Bench questions spread through the file, 64 new tokens
# summary.txt gets a line per step with its exit code and seconds; the exit code is 0 when every
# step in it exited 0. The sizes fit the 15 minutes of device time a session is lent.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mkdir -p "${1:?usage: ci/gpu.sh OUT [STEP...]}" && cd "$1" && pwd)"
shift
[ $# -gt 0 ] || set -- build ctest fixture pair real bench
carry="$root/gpu-carry" build="$root/build-gpu"
summary="$out/summary.txt"
step() {  # step NAME SECONDS COMMAND...: runs it for at most SECONDS, logs to OUT/NAME.log, records its exit code
  local name=$1 limit=$2 started=$SECONDS
  shift 2
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local status=$?
  echo "$name: exit $status, $((SECONDS - started)) s" | tee -a "$summary"
}

prefix="$build/prefix"
mkdir -p "$prefix"
if [ ! -d "$prefix/usr" ]; then
  for deb in "$carry"/debs/*.deb; do dpkg -x "$deb" "$prefix"; done
fi
export PKG_CONFIG_SYSROOT_DIR="$prefix" PKG_CONFIG_PATH="$prefix/usr/lib/x86_64-linux-gnu/pkgconfig:$prefix/usr/share/pkgconfig"
export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
B="$build/bin/conformance"
pair="$build/real_pair"
questions="$carry/specbench_prompts.jsonl"  # Spec-Bench's first turns with SmolLM2's own prompt ids

for name in "$@"; do
  case "$name" in
  build)
    torch_prefix="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
    step configure 300 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$torch_prefix;$prefix/usr" -DSPECGATE_SHARED_DIR="$carry/shared"
    step build 900 cmake --build "$build" -j "$(nproc)" ;;
  ctest)
    step ctest 900 ctest --test-dir "$build" --output-on-failure -j "$(nproc)" \
      -E "tokenizer_reference|ReferenceTokenizer|chat_template_jinja|chat_prompt_ids|tokenizer_benchmark" ;;
  fixture)
    sample="$root/fixtures/bench/sample.jsonl" fixtures="$build/fixture_pair"
    for dtype in float64 float32; do
      step "cuda_${dtype}_oracle" 300 "$B" generate --engine oracle --target "$fixtures/target" --bench "$sample" \
        --turns all --dtype "$dtype" --device cuda --max-new-tokens 64 --out "$out/cuda_${dtype}_oracle.jsonl"
      for engine in nonspec-batch eqspec exspec; do
        draft=(--draft "$fixtures/draft")
        [ "$engine" = nonspec-batch ] && draft=()
        step "cuda_${dtype}_${engine}" 300 "$B" generate --engine "$engine" --target "$fixtures/target" "${draft[@]}" \
          --bench "$sample" --turns all --dtype "$dtype" --device cuda --batch-size 8 --max-new-tokens 64 \
          --out "$out/cuda_${dtype}_${engine}.jsonl"
        step "cuda_${dtype}_${engine}_score" 120 "$B" score --reference "$out/cuda_${dtype}_oracle.jsonl" \
          --candidate "$out/cuda_${dtype}_${engine}.jsonl" --min-exact 1.0 --json "$out/cuda_${dtype}_${engine}_score.json"
      done
    done ;;
  pair)
    step pair_join 60 sh -c 'cat "$0"/part0[01]/model.gguf.* >"$1"' "$carry" "$build/smollm2.gguf"
    step pair_gguf 60 python3 -m pip install -q --no-index --no-deps --target "$build/pylib" "$carry"/wheels/gguf-*.whl
    step pair_make 300 env PYTHONPATH="$build/pylib" python3 "$root/fixtures/real_model/make_real_pair.py" "$pair" \
      --gguf "$build/smollm2.gguf"
    python3 "$root/fixtures/real_model/pair_digest.py" "$pair" >"$out/pair_digest.txt"
    step pair_digest 10 cmp "$out/pair_digest.txt" "$carry/pair_digest.txt" ;;
  real)
    every6="$build/specbench_every6.jsonl"
    awk 'NR % 6 == 1' "$questions" >"$every6"
    step real_bf16_oracle 400 "$B" generate --engine oracle --target "$pair/target" --bench "$every6" \
      --dtype bfloat16 --device cuda --max-new-tokens 128 --out "$out/real_bf16_oracle.jsonl"
    for engine in eqspec exspec; do
      step "real_bf16_$engine" 300 "$B" generate --engine "$engine" --target "$pair/target" --draft "$pair/draft" \
        --bench "$every6" --dtype bfloat16 --device cuda --batch-size 16 --max-new-tokens 128 \
        --out "$out/real_bf16_$engine.jsonl"
      step "real_bf16_${engine}_score" 300 "$B" score --reference "$out/real_bf16_oracle.jsonl" \
        --candidate "$out/real_bf16_$engine.jsonl" --bench "$every6" --rescore-with "$pair/target" \
        --rescore-device cuda --rescore-dtype bfloat16 --tokenizer "$pair/target" --min-exact 0 \
        --json "$out/real_bf16_${engine}_score.json" --markdown "$out/real_bf16_${engine}_score.md"
    done ;;
  bench)
    step bench 600 "$B" bench --target "$pair/target" --draft "$pair/draft" --bench "$questions" --sample 32 \
      --engines nonspec-batch,eqspec,exspec --dtype bfloat16 --device cuda --batch-sizes 1,4,8,16,32 \
      --max-new-tokens 64 --repeat 3 --json "$out/bench.json" --svg "$out/bench.svg" ;;
  *) echo "gpu.sh: unknown step '$name' (build, ctest, fixture, pair, real or bench)" >&2; exit 2 ;;
  esac
done
cat "$summary"
! grep -qv ": exit 0," "$summary"
