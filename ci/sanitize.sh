#!/usr/bin/env bash
# AddressSanitizer and UndefinedBehaviorSanitizer over the code that reads a user's files and
# arguments and a client's requests: configures build-sanitize/ with SPECGATE_SANITIZE (readers,
# tree files, checkpoint files, scoring, reports, tokenizers, the commands, the answer files
# --resume reads back, and serve's HTTP and request handling instrumented; the model, the
# decoders and libtorch not), builds the CLI and the test programs, and runs the tests of that
# code: the readers, safetensors, the tokenizers, the scorer and reports, the input-error
# battery, hostile tree files (conformance.tree_files), --resume of other runs' answers
# (conformance.resume), the score checks, serve under hostile clients (conformance.serve_limits),
# and replays the fuzz corpora (fixtures/fuzz/) through the instrumented readers and request
# handling.
# Needs ci/setup.sh's packages and Python environment.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-sanitize"

# Only the instrumented files differ from build/: with ccache the rest come from its cache.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
torch_prefix="$("$("$root/ci/python-env.sh")" -c 'import torch; print(torch.utils.cmake_prefix_path)')"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPECGATE_SANITIZE=ON "${launcher[@]}" \
  -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$build" -j "$(nproc)" --target conformance reader_tests impl_tests answer_reader_fuzzer_replay \
  question_reader_fuzzer_replay model_config_fuzzer_replay safetensors_header_fuzzer_replay tokenizer_json_fuzzer_replay \
  serve_request_fuzzer_replay tree_file_fuzzer_replay resume_reader_fuzzer_replay

# libtorch keeps allocations alive until exit on purpose; the readers' tests check for leaks.
export ASAN_OPTIONS="detect_leaks=0:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1"
cd "$build"
# The fixture pair is the same for every build: reuse build/'s when it is there rather than
# train it again under the sanitizers (minutes).
if [ -f "$root/build/fixture_pair/fixture_report.json" ]; then
  rm -rf fixture_pair && cp -r "$root/build/fixture_pair" fixture_pair
else
  cmake --build "$build" --target fixture_pair
fi
# SentencePieceModel's tests are left out: libsentencepiece is loaded with RTLD_DEEPBIND (see
# impl/tokenizer/sentencepiece_tokenizer.cpp), which the sanitizers' runtime refuses.
ctest --output-on-failure -j "$(nproc)" -R "^(AnswerLine$|AnswerFile|BenchQuestion|ModelConfig|Safetensors|CheckpointFiles|TokenizerFolder|ByteTokenizer|TokenizerJsonErrors|AddedTokens|BpeModel|ByteLevelPreTokenizer|MetaspacePreTokenizer|SplitPreTokenizer|Decoders|CleanUpTokenization|ScorerTest|ScoreReportsTest|CompareAnswers|Attribution|Markup|SvgCharts|Utf8|conformance\.(score_cli|input_errors|tree_files|resume|serve_limits)|fuzz\.)"
