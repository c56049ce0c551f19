#!/usr/bin/env bash
# ./ci/gpu.sh OUT [STEP...]: on a machine with an NVIDIA GPU, PyTorch 2.x and transformers but no
# package registry, with gpu-carry/ (made beforehand by ci/gpu-carry.sh) in the checkout. Runs the
# steps named, by default all in this order, each writing its log NAME.log and its results in OUT:
#   build    configures and builds build-gpu/ against that PyTorch's libtorch and the carried packages
#   pair     the real pair (SmolLM2-135M-Instruct and its layer-skip draft) made there from the
#            carried GGUF by make_real_pair.py, its weights checked against the digest of the pair
#            made here (pair_digest.txt); on the CPU, so it can run beside the build
#   ctest    ctest.log: every test but the long ones and the comparisons with tokenizers.js, which
#            needs node and the npm registry. In the background, 8 tests at a time on one thread
#            each, so that the GPU steps keep cores to launch kernels from; bench and the end of the
#            script wait for it. Where a test crashed, crash.log holds its stack (cuda-gdb, which
#            debugs CPU programs)
#   fixture  fixture_<dtype>_<engine>.*: the fixture pair on CUDA in float64, float32 and bfloat16
#            (one process per dtype at a time, the three dtypes side by side): oracle,
#            nonspec-batch, EQSPEC and EXSPEC on the sample bench's 30 questions, every turn,
#            batch 8, scored against the oracle of their dtype: float64 and float32 with
#            --min-exact 1.0, bfloat16 with every divergence's margin measured by re-scoring in
#            float32 and --max-hard-divergences 0
#   sampling sampling_*: the fixture pair in bfloat16 on CUDA at T 0.8, top-k 12, top-p 0.9:
#            nonspec-batch, EQSPEC and EQSPEC with the fault greedy-verification seeded, every turn
#            of the sample bench, independent seeds; EQSPEC against nonspec-batch (two-sample) must
#            pass, the seeded fault must be rejected
#   real     real_*: the real pair on every 10th of Spec-Bench's 480 first turns (48, from every
#            category), 128 new tokens: the float32 oracle is the reference; the bfloat16 oracle,
#            nonspec-batch, EQSPEC and EXSPEC (batch 16) are scored against it with every
#            divergence attributed by re-scoring with the target in float32
#   anatomy  anatomy_real.json: the real target's decode step and K+1 = 5 verification pass on CUDA in
#            float32 and bfloat16 (impl/benchmarks/decode_anatomy.cpp), host operators and device
#            kernels apart; anatomy_attention.jsonl: one attention call at the target's shapes per
#            SDPA backend and dtype, new shapes against a repeated one (ci/gpu_attention.py)
#   bench    bench_fixture.*, bench_real.*: nonspec-batch, EQSPEC and EXSPEC at batch 1, 8 and 16
#            on 8 questions, 32 new tokens, 3 repeats: the fixture pair in float32 on the sample
#            bench, the real pair in bfloat16 on Spec-Bench
# summary.txt gets a line per step with its exit code and seconds; the exit code is 0 when every
# step run exited 0. GPU_END (seconds since the epoch) bounds every step, so that what is done is
# on disk before a device call's limit: a step cut by it exits 124, and one that would start with
# under 20 s left is recorded as skipped. GPU_DEVICE (default cuda) and GPU_BUILD (default
# build-gpu) let the steps after build run elsewhere, for a rehearsal.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mkdir -p "${1:?usage: ci/gpu.sh OUT [STEP...]}" && cd "$1" && pwd)"
shift
[ $# -gt 0 ] || set -- build pair ctest fixture sampling real anatomy bench
carry="$root/gpu-carry" build="${GPU_BUILD:-$root/build-gpu}" device="${GPU_DEVICE:-cuda}"
end="${GPU_END:-$(($(date +%s) + 86400))}"
summary="$out/summary.txt" failed=0 ctest_pid=""
step() {  # step NAME SECONDS COMMAND...: runs it for at most SECONDS, logs to OUT/NAME.log, records its exit code
  local name=$1 limit=$2 started=$SECONDS left=$((end - $(date +%s)))
  shift 2
  if [ $left -lt 20 ]; then
    echo "$name: skipped, ${left} s left before GPU_END" | tee -a "$summary"
    failed=1
    return 124
  fi
  [ $limit -le $left ] || limit=$left
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
wait_all() {  # waits for the background jobs given, failing the run if any failed
  local pid
  for pid in "$@"; do wait "$pid" || failed=1; done
}

prefix="$build/prefix" pylib="$build/pylib"
if [ -d "$carry/debs" ]; then
  mkdir -p "$prefix"
  if [ ! -d "$prefix/usr" ]; then
    for deb in "$carry"/debs/*.deb; do dpkg -x "$deb" "$prefix"; done
  fi
  [ -d "$pylib" ] || python3 -m pip install -q --no-index --no-deps --target "$pylib" "$carry"/wheels/*.whl
  export PKG_CONFIG_SYSROOT_DIR="$prefix" PKG_CONFIG_PATH="$prefix/usr/lib/x86_64-linux-gnu/pkgconfig:$prefix/usr/share/pkgconfig"
  export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$prefix/usr/bin:$PATH"
  export PYTHONPATH="$pylib${PYTHONPATH:+:$PYTHONPATH}"
fi
B="$build/bin/conformance"
pair="$build/real_pair" fixtures="$build/fixture_pair" sample="$root/fixtures/bench/sample.jsonl"
questions="$carry/specbench_prompts.jsonl"  # Spec-Bench's first turns with SmolLM2's own prompt ids

run_ctest() {
  step ctest 900 env OMP_NUM_THREADS=1 ctest --test-dir "$build" --output-on-failure -j 8 --label-exclude long \
    -E "tokenizer_reference|ReferenceTokenizer|chat_template_jinja|chat_prompt_ids|tokenizer_benchmark" && return 0
  local crashed command
  {  # which copy of std::filesystem the tests call, and why (LibstdcxxBinding)
    ninja -C "$build" -t commands bin/impl_tests | tail -1
    g++ -dumpspecs | grep -A1 '^\*link:'
    readelf -d "$build/bin/impl_tests" | grep NEEDED
    echo "LD_PRELOAD=${LD_PRELOAD:-}"
    cat /etc/ld.so.preload
    LD_DEBUG=bindings "$build/bin/impl_tests" --gtest_filter='LibstdcxxBinding.*' 2>&1 | grep -m4 'remove_all\|create_directories'
  } >"$out/binding.log" 2>&1
  crashed="$(grep -m1 -oP 'Test +#[0-9]+: \K\S+(?= \.+\*\*\*Exception)' "$out/ctest.log")" || return 1
  command="$(ctest --test-dir "$build" -N -V -R "^${crashed}\$" | sed -n 's/^[0-9]*: Test command: //p')"
  command -v cuda-gdb >/dev/null && [ -n "$command" ] &&
    eval "timeout 120 cuda-gdb -batch -ex run -ex bt --args $command" >"$out/crash.log" 2>&1
  return 1
}

fixture_dtype() {  # fixture_dtype DTYPE: the four engines in DTYPE, each scored against that dtype's oracle
  local dtype=$1 engine
  local gate=(--min-exact 1.0) recorded=()
  if [ "$dtype" = bfloat16 ]; then  # margins measured in float32, not read off the oracle's bfloat16 top_logprobs
    gate=(--min-exact 0 --max-hard-divergences 0 --rescore-with "$fixtures/target" --dtype float32 --device "$device")
    recorded=(--top-logprobs 0)
  fi
  step "fixture_${dtype}_oracle" 300 "$B" generate --engine oracle --target "$fixtures/target" --bench "$sample" \
    --turns all --dtype "$dtype" --device "$device" --max-new-tokens 64 "${recorded[@]}" \
    --out "$out/fixture_${dtype}_oracle.jsonl" || return 1
  for engine in nonspec-batch eqspec exspec; do
    local draft=(--draft "$fixtures/draft")
    [ "$engine" = nonspec-batch ] && draft=()
    step "fixture_${dtype}_${engine}" 300 "$B" generate --engine "$engine" --target "$fixtures/target" "${draft[@]}" \
      --bench "$sample" --turns all --dtype "$dtype" --device "$device" --batch-size 8 --max-new-tokens 64 \
      --out "$out/fixture_${dtype}_${engine}.jsonl" &&
      step "fixture_${dtype}_${engine}_score" 120 "$B" score --reference "$out/fixture_${dtype}_oracle.jsonl" \
        --candidate "$out/fixture_${dtype}_${engine}.jsonl" "${gate[@]}" --json "$out/fixture_${dtype}_${engine}_score.json" \
        --markdown "$out/fixture_${dtype}_${engine}_score.md"
  done
  return $failed
}

sampled() {  # sampled NAME ENGINE SEED [OPTION...]: the fixture pair sampled in bfloat16
  local name=$1 engine=$2 seed=$3
  shift 3
  local draft=(--draft "$fixtures/draft")
  [ "$engine" = nonspec-batch ] && draft=()
  step "sampling_$name" 300 "$B" generate --engine "$engine" --target "$fixtures/target" "${draft[@]}" --bench "$sample" \
    --turns all --dtype bfloat16 --device "$device" --batch-size 8 --max-new-tokens 96 --temperature 0.8 --top-k 12 \
    --top-p 0.9 --seed "$seed" "$@" --out "$out/sampling_$name.jsonl"
}
verdict() {  # verdict NAME EXPECTED ANSWERS BASELINE: the two-sample test, whose exit code must be EXPECTED
  local name=$1 expected=$2
  step "sampling_${name}_verdict" 300 sh -c '"$@"; status=$?; echo "exit $status"; [ $status -eq '"$expected"' ]' sh \
    "$B" sampling --answers "$out/sampling_$3.jsonl" --baseline "$out/sampling_$4.jsonl" --target "$fixtures/target" \
    --engine-dtype bfloat16 --dtype float32 --device "$device" --pit-seed 11 --json "$out/sampling_$name.json" \
    --markdown "$out/sampling_$name.md"
}

real_engine() {  # real_engine DTYPE ENGINE: the real pair on every 10th first turn
  local dtype=$1 engine=$2
  local draft=(--draft "$pair/draft") batch=(--batch-size 16)
  [ "$engine" = eqspec ] || [ "$engine" = exspec ] || draft=()
  [ "$engine" = oracle ] && batch=()
  step "real_${dtype}_$engine" 400 "$B" generate --engine "$engine" --target "$pair/target" "${draft[@]}" \
    --bench "$build/specbench_every10.jsonl" --dtype "$dtype" --device "$device" "${batch[@]}" --max-new-tokens 128 \
    --out "$out/real_${dtype}_$engine.jsonl"
}
real_score() {  # real_score ENGINE: the bfloat16 run of ENGINE against the float32 oracle
  step "real_bfloat16_${1}_score" 300 "$B" score --reference "$out/real_float32_oracle.jsonl" \
    --candidate "$out/real_bfloat16_$1.jsonl" --bench "$build/specbench_every10.jsonl" --rescore-with "$pair/target" \
    --device "$device" --dtype float32 --tokenizer "$pair/target" --min-exact 0 \
    --json "$out/real_bfloat16_${1}_score.json" --markdown "$out/real_bfloat16_${1}_score.md"
}

for name in "$@"; do
  case "$name" in
  build)
    {
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
      python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)'
      g++ --version | head -1
      cmake --version | head -1
      nproc
    } >"$out/machine.txt" 2>&1
    torch_prefix="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
    step configure 300 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$torch_prefix;$prefix/usr" -DSPECGATE_SHARED_DIR="$carry/shared"
    step build 900 cmake --build "$build" -j "$(nproc)" -- -k 0 ;;  # every error in one go
  pair)
    step pair_join 60 sh -c 'cat "$0"/part0[0-9]/model.gguf.* >"$1"' "$carry" "$build/smollm2.gguf"
    step pair_make 300 python3 "$root/fixtures/real_model/make_real_pair.py" "$pair" --gguf "$build/smollm2.gguf"
    python3 "$root/fixtures/real_model/pair_digest.py" "$pair" >"$out/pair_digest.txt"
    step pair_digest 10 cmp "$out/pair_digest.txt" "$carry/pair_digest.txt" ;;
  ctest)
    run_ctest &
    ctest_pid=$! ;;
  fixture)
    pids=()
    for dtype in float64 float32 bfloat16; do
      fixture_dtype "$dtype" &
      pids+=($!)
    done
    wait_all "${pids[@]}" ;;
  sampling)
    sampled off nonspec-batch 1 & off=$!
    sampled on eqspec 2 & on=$!
    sampled fault eqspec 3 --inject-fault greedy-verification & fault=$!
    wait_all $off $on $fault
    verdict two-sample 0 on off & pass=$!
    verdict fault-two-sample 1 fault off & reject=$!
    wait_all $pass $reject ;;
  real)
    awk 'NR % 10 == 1' "$questions" >"$build/specbench_every10.jsonl"
    real_engine float32 oracle & reference=$!
    pids=()
    for engine in oracle nonspec-batch eqspec exspec; do
      real_engine bfloat16 "$engine" &
      pids+=($!)
    done
    wait_all $reference
    scores=()
    for engine in oracle nonspec-batch eqspec exspec; do
      wait "${pids[0]}" || failed=1
      pids=("${pids[@]:1}")
      real_score "$engine" &
      scores+=($!)
    done
    wait_all "${scores[@]}" ;;
  anatomy)
    step anatomy_real 240 sh -c '"$0" "$1" --device "$2" --context 200 --positions 5 --repeats 5 >"$3"' \
      "$build/bin/decode_anatomy" "$pair/target" "$device" "$out/anatomy_real.json"
    step anatomy_attention 120 sh -c 'python3 "$0" >"$1"' "$root/ci/gpu_attention.py" "$out/anatomy_attention.jsonl" ;;
  bench)
    wait_for_ctest  # timings on a quiet machine
    step bench_fixture 200 "$B" bench --target "$fixtures/target" --draft "$fixtures/draft" --bench "$sample" --sample 8 \
      --engines nonspec-batch,eqspec,exspec --dtype float32 --device "$device" --batch-sizes 1,8,16 \
      --max-new-tokens 32 --repeat 3 --json "$out/bench_fixture.json" --svg "$out/bench_fixture.svg"
    step bench_real 400 "$B" bench --target "$pair/target" --draft "$pair/draft" --bench "$questions" --sample 8 \
      --engines nonspec-batch,eqspec,exspec --dtype bfloat16 --device "$device" --batch-sizes 1,8,16 \
      --max-new-tokens 32 --repeat 3 --json "$out/bench_real.json" --svg "$out/bench_real.svg" ;;
  *) echo "gpu.sh: unknown step '$name' (build, pair, ctest, fixture, sampling, real, anatomy or bench)" >&2; exit 2 ;;
  esac
done
wait_for_ctest
exit $failed
