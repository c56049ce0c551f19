#!/usr/bin/env bash
# Coverage-guided fuzzing of the readers of users' files (answers, questions, config.json, safetensors,
# tokenizer.json with tokenizer_config.json, --tree files, the answers --resume reads back) and of what serve does with a request before decoding
# it (the HTTP framing and the completion and chat bodies) with libFuzzer; TARGET names some of them. Builds fuzz/ with clang-15 and -fsanitize=fuzzer,address,undefined
# into build-fuzz/ (installing clang-15 and libfuzzer-15-dev when missing), then runs the targets
# one after another until each has spent MINUTES of CPU time (default 10; a loaded machine gives
# a run less CPU than wall time, so it runs again for what is left), starting from
# fixtures/fuzz/<target>/. Inputs
# that add coverage collect in build-fuzz/corpus/<target>/; a crash is saved as
# fixtures/fuzz/<target>/crash-<sha1>, which ctest replays from then on. Prints each target's
# executions, coverage and CPU seconds; exits 1 when a target crashed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
minutes="${1:-10}"
[[ "$minutes" =~ ^[0-9]+$ && "$minutes" -gt 0 ]] || { echo "usage: ci/fuzz-parsers.sh [MINUTES] [TARGET...]" >&2; exit 2; }
targets=("${@:2}")
[ ${#targets[@]} -gt 0 ] || targets=(tokenizer_json_fuzzer answer_reader_fuzzer question_reader_fuzzer model_config_fuzzer
                                    safetensors_header_fuzzer serve_request_fuzzer tree_file_fuzzer resume_reader_fuzzer)
build="$root/build-fuzz"

if ! command -v clang++-15 >/dev/null || ! dpkg-query -W -f='${Status}' libfuzzer-15-dev 2>/dev/null | grep -q "install ok installed"; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang-15 libfuzzer-15-dev >/dev/null
fi
cmake -S "$root/fuzz" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-15 >/dev/null
cmake --build "$build" -j "$(nproc)"

crashed=0
for target in "${targets[@]}"; do
  corpus="$build/corpus/$target"
  mkdir -p "$corpus"
  log="$build/$target.log"
  : >"$log"
  budget=$((minutes * 60)) cpu=0 executions=0 status=0
  while [ "$cpu" -lt "$budget" ] && [ "$status" -eq 0 ]; do
    /usr/bin/time -f "%U %S" -o "$build/$target.cpu" "$build/bin/$target" -max_total_time=$((budget - cpu)) \
      -print_final_stats=1 -artifact_prefix="$root/fixtures/fuzz/$target/" "$corpus" "$root/fixtures/fuzz/$target" \
      >>"$log" 2>&1 || status=$?
    read -r user system < <(tail -1 "$build/$target.cpu")
    cpu=$((cpu + $(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.0f", u + s }')))
    run_executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    executions=$((executions + ${run_executions:-0}))
  done
  done_line=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  echo "$target: $executions executions, $cpu CPU seconds; last: $done_line"
  if [ "$status" -ne 0 ]; then
    crashed=$((crashed + 1))
    echo "$target: exit $status, see $log; the input is in fixtures/fuzz/$target/"
  fi
done
[ "$crashed" -eq 0 ]
