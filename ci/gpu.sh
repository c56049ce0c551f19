#!/usr/bin/env bash
# ./ci/gpu.sh OUT [STEP...]: on a machine with an NVIDIA GPU, PyTorch 2.x and transformers but no
# package registry, with gpu-carry/ (made beforehand by ci/gpu-carry.sh) in the checkout. Runs the
# steps named, by default all in this order, each writing its log NAME.log and its results in OUT:
#   build    configures and builds build-gpu/ against that PyTorch's libtorch and the carried packages
#   ctest    ctest.log: every test (they run on the CPU) but the comparisons with tokenizers.js, which
#            comes from npm. It runs in the background, 12 tests at a time on one thread each, so that
#            the GPU steps keep cores to launch kernels from; bench and the end of the script wait for
#            it. Where a test crashed, crash.log holds its stack (cuda-gdb, which debugs CPU programs)
#   fixture  cuda_<dtype>_<engine>.*: the fixture pair on CUDA in float64 and float32: oracle,
#            nonspec-batch, EQSPEC and EXSPEC on the sample bench, each engine scored against the
#            oracle of its dtype with --min-exact 1.0
#   pair     the real pair (SmolLM2-135M-Instruct and its layer-skip draft) made there from the
#            carried GGUF by make_real_pair.py, its weights checked against the digest of the pair
#            made here (pair_digest.txt)
#   real     real_bf16_*: the real pair in bfloat16 on every 10th of Spec-Bench's 480 first turns (48,
#            from every category), 128 new tokens: oracle, EQSPEC and EXSPEC at batch 16, scored
#            against the oracle with every divergence attributed by re-scoring with the target (no
#            gate: bfloat16 at another batch shape may break near-ties; the report says which)
#   bench    bench.json, bench.svg: nonspec-batch, EQSPEC and EXSPEC on the real pair in bfloat16
#            at batch 1, 4 and 16, 16 Spec-Bench questions spread through the file, 48 new tokens
# summary.txt gets a line per step with its exit code and seconds; the exit code is 0 when every
# step run exited 0. The sizes are meant to fit the 15 minutes of device time a session is lent,
# in two calls: "build ctest fixture" with the packages and the GGUF's first part, then
# "pair real bench" with its second (README, "On a GPU").
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mkdir -p "${1:?usage: ci/gpu.sh OUT [STEP...]}" && cd "$1" && pwd)"
shift
[ $# -gt 0 ] || set -- build ctest fixture pair real bench
carry="$root/gpu-carry" build="$root/build-gpu"
summary="$out/summary.txt" failed=0 ctest_pid=""
step() {  # step NAME SECONDS COMMAND...: runs it for at most SECONDS, logs to OUT/NAME.log, records its exit code
  local name=$1 limit=$2 started=$SECONDS
  shift 2
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local status=$?
  [ $status -eq 0 ] || failed=1
  echo "$name: exit $status, $((SECONDS - started)) s" | tee -a "$summary"
  return $status
}
wait_for_ctest() {
  [ -n "$ctest_pid" ] || return 0
  wait "$ctest_pid" || failed=1
  ctest_pid=""
}

prefix="$build/prefix" pylib="$build/pylib"
mkdir -p "$prefix"
if [ ! -d "$prefix/usr" ]; then
  for deb in "$carry"/debs/*.deb; do dpkg -x "$deb" "$prefix"; done
fi
[ -d "$pylib" ] || python3 -m pip install -q --no-index --no-deps --target "$pylib" "$carry"/wheels/*.whl
export PKG_CONFIG_SYSROOT_DIR="$prefix" PKG_CONFIG_PATH="$prefix/usr/lib/x86_64-linux-gnu/pkgconfig:$prefix/usr/share/pkgconfig"
export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$pylib${PYTHONPATH:+:$PYTHONPATH}"
B="$build/bin/conformance"
pair="$build/real_pair"
questions="$carry/specbench_prompts.jsonl"  # Spec-Bench's first turns with SmolLM2's own prompt ids

run_ctest() {
  step ctest 900 env OMP_NUM_THREADS=1 ctest --test-dir "$build" --output-on-failure -j 12 \
    -E "tokenizer_reference|ReferenceTokenizer|chat_template_jinja|chat_prompt_ids|tokenizer_benchmark" && return 0
  local crashed command
  crashed="$(grep -m1 -oP 'Test +#[0-9]+: \K\S+(?= \.+\*\*\*Exception)' "$out/ctest.log")" || return 1
  command="$(ctest --test-dir "$build" -N -V -R "^${crashed}\$" | sed -n 's/^[0-9]*: Test command: //p')"
  command -v cuda-gdb >/dev/null && [ -n "$command" ] &&
    eval "timeout 120 cuda-gdb -batch -ex run -ex bt --args $command" >"$out/crash.log" 2>&1
  return 1
}

for name in "$@"; do
  case "$name" in
  build)
    torch_prefix="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
    step configure 300 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$torch_prefix;$prefix/usr" -DSPECGATE_SHARED_DIR="$carry/shared"
    step build 900 cmake --build "$build" -j "$(nproc)" -- -k 0 ;;  # every error in one go
  ctest)
    run_ctest &
    ctest_pid=$! ;;
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
    step pair_make 300 python3 "$root/fixtures/real_model/make_real_pair.py" "$pair" --gguf "$build/smollm2.gguf"
    python3 "$root/fixtures/real_model/pair_digest.py" "$pair" >"$out/pair_digest.txt"
    step pair_digest 10 cmp "$out/pair_digest.txt" "$carry/pair_digest.txt" ;;
  real)
    every10="$build/specbench_every10.jsonl"
    awk 'NR % 10 == 1' "$questions" >"$every10"
    step real_bf16_oracle 300 "$B" generate --engine oracle --target "$pair/target" --bench "$every10" \
      --dtype bfloat16 --device cuda --max-new-tokens 128 --out "$out/real_bf16_oracle.jsonl"
    for engine in eqspec exspec; do
      step "real_bf16_$engine" 300 "$B" generate --engine "$engine" --target "$pair/target" --draft "$pair/draft" \
        --bench "$every10" --dtype bfloat16 --device cuda --batch-size 16 --max-new-tokens 128 \
        --out "$out/real_bf16_$engine.jsonl"
      step "real_bf16_${engine}_score" 300 "$B" score --reference "$out/real_bf16_oracle.jsonl" \
        --candidate "$out/real_bf16_$engine.jsonl" --bench "$every10" --rescore-with "$pair/target" \
        --device cuda --dtype bfloat16 --tokenizer "$pair/target" --min-exact 0 \
        --json "$out/real_bf16_${engine}_score.json" --markdown "$out/real_bf16_${engine}_score.md"
    done ;;
  bench)
    wait_for_ctest  # timings on a quiet machine
    step bench 400 "$B" bench --target "$pair/target" --draft "$pair/draft" --bench "$questions" --sample 16 \
      --engines nonspec-batch,eqspec,exspec --dtype bfloat16 --device cuda --batch-sizes 1,4,16 \
      --max-new-tokens 48 --repeat 3 --json "$out/bench.json" --svg "$out/bench.svg" ;;
  *) echo "gpu.sh: unknown step '$name' (build, ctest, fixture, pair, real or bench)" >&2; exit 2 ;;
  esac
done
wait_for_ctest
exit $failed
