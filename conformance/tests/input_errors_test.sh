#!/usr/bin/env bash
# Every kind of file a user hands the CLI (bench, answers, config.json, generation_config.json,
# safetensors and its index, the tokenizer files, the demo's fixture pair, output paths) and flag combinations, made
# wrong in the ways that used to abort: each must exit 2 with one line on stderr naming the file,
# the line or field, and leave no output file behind.
set -uo pipefail
conformance=$1 fixtures=$2 bench=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"

out="$work/out.jsonl"
report="$work/report.json"
generate=(generate --engine oracle --limit 1 --max-new-tokens 2 --out "$out")
score=(score --json "$report")
# A copy of the fixture target whose file $1 is replaced by stdin.
target_with() {
  rm -rf "$work/t" && cp -r "$fixtures/target" "$work/t" && cat >"$work/t/$1"
}
# A safetensors file: the 8-byte little-endian length, header $1, $2 zero bytes of data.
safetensors_bytes() {
  python3 -c 'import struct, sys
header = sys.argv[1].encode()
sys.stdout.buffer.write(struct.pack("<Q", len(header)) + header + bytes(int(sys.argv[2])))' "$1" "$2"
}

# --- bench files ---
printf '{"question_id": 1e400, "category": "qa", "turns": ["a"]}\n' >"$work/b1.jsonl"
expect_input_error "$out" "b1.jsonl:1: invalid JSON at column 17: number overflow parsing '1e400'" "${generate[@]}" --target "$fixtures/target" --bench "$work/b1.jsonl"
printf '{"question_id": 1, "category": "qa", "turns": ["a"]}\n{"question_id": 9223372036854775808, "category": "qa", "turns": ["a"]}\n' >"$work/b2.jsonl"
expect_input_error "$out" "b2.jsonl:2: field 'question_id': 9223372036854775808 is out of range" "${generate[@]}" --target "$fixtures/target" --bench "$work/b2.jsonl"
printf '{"question_id": 1, "category": "qa", "turns": [1e5]}\n' >"$work/b3.jsonl"
expect_input_error "$out" "b3.jsonl:1: field 'turns[0]': expected a string, got number 100000.0" "${generate[@]}" --target "$fixtures/target" --bench "$work/b3.jsonl"
expect_input_error "$report" "b1.jsonl:1: invalid JSON at column 17: number overflow" "${score[@]}" --reference "$work/b2.jsonl" --candidate "$work/b2.jsonl" --bench "$work/b1.jsonl"

# --- answer files ---
printf '{"question_id": 1, "token_ids": [4, 5]}\n' >"$work/good.jsonl"
printf '{"question_id": 1e400, "token_ids": [4, 5]}\n' >"$work/a1.jsonl"
expect_input_error "$report" "a1.jsonl:1: invalid JSON at column 17: number overflow parsing '1e400'" "${score[@]}" --reference "$work/good.jsonl" --candidate "$work/a1.jsonl"
printf '{"question_id": 1, "token_ids": [4, 1e30]}\n' >"$work/a2.jsonl"
expect_input_error "$report" "a2.jsonl:1: field 'token_ids[1]': expected a token id (a non-negative integer), got number 1e+30" \
  "${score[@]}" --reference "$work/a2.jsonl" --candidate "$work/good.jsonl"
printf '{"question_id": 1, "token_ids": [4, 6], "top_logprobs": [[{"token_id": 4, "logprob": 0}], [{"token_id": 6, "logprob": -1e400}]]}\n' >"$work/a3.jsonl"
expect_input_error "$report" "a3.jsonl:1: invalid JSON at column 119: number overflow parsing '-1e400'" "${score[@]}" --reference "$work/a3.jsonl" --candidate "$work/good.jsonl"
printf '{"question_id": 1, "choices": [{"turns": ["a"], "token_ids": [[-1]]}]}\n' >"$work/a4.jsonl"
expect_input_error "$report" "a4.jsonl:1: field 'choices[0].token_ids[0][0]': expected a token id (a non-negative integer), got number -1" \
  "${score[@]}" --reference "$work/good.jsonl" --candidate "$work/a4.jsonl"

# --- config.json ---
sed 's/"vocab_size": [0-9]*/"vocab_size": 1e400/' "$fixtures/target/config.json" | target_with config.json
expect_input_error "$out" "t/config.json: not valid JSON at line 25, column 17: number overflow parsing '1e400'" "${generate[@]}" --target "$work/t" --bench "$bench"
sed 's/"hidden_size": [0-9]*/"hidden_size": 4294967296/' "$fixtures/target/config.json" | target_with config.json
expect_input_error "$out" "t/config.json:10: field 'hidden_size': expected an integer in [1, 2147483647], got number 4294967296" "${generate[@]}" --target "$work/t" --bench "$bench"
printf '{\n  "model_type": "llama",\n  "vocab_size": 259,,\n}\n' | target_with config.json
expect_input_error "$out" "t/config.json: not valid JSON at line 3, column 21: syntax error" "${generate[@]}" --target "$work/t" --bench "$bench"

# --- safetensors and the index of a sharded checkpoint ---
safetensors_bytes '{"w":{"dtype":"F32","shape":[1e400],"data_offsets":[0,4]}}' 4 | target_with model.safetensors
expect_input_error "$out" "t/model.safetensors: header is not valid JSON at line 1, column 30: number overflow parsing '1e400'" "${generate[@]}" --target "$work/t" --bench "$bench"
safetensors_bytes '{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551616]}}' 8 | target_with model.safetensors
expect_input_error "$out" "t/model.safetensors: tensor 'w': field 'data_offsets': expected [begin, end]" "${generate[@]}" --target "$work/t" --bench "$bench"
head -c 100 "$fixtures/target/model.safetensors" | target_with model.safetensors
expect_input_error "$out" "t/model.safetensors: header length" "${generate[@]}" --target "$work/t" --bench "$bench"
printf '{"metadata": {"total_size": 1e400}, "weight_map": {}}' | target_with model.safetensors.index.json
rm "$work/t/model.safetensors"
expect_input_error "$out" "t/model.safetensors.index.json: not valid JSON at line 1, column 29: number overflow parsing '1e400'" "${generate[@]}" --target "$work/t" --bench "$bench"

# --- generation_config.json ---
printf '{\n  "eos_token_id": 1e400\n}' | target_with generation_config.json
expect_input_error "$out" "t/generation_config.json: not valid JSON at line 2, column 19: number overflow parsing '1e400'" "${generate[@]}" --target "$work/t" --bench "$bench"
printf '{\n  "do_sample": false,\n  "eos_token_id": [257, 9999]\n}' | target_with generation_config.json
expect_input_error "$out" "t/generation_config.json:3: field 'eos_token_id': 9999 is outside the vocabulary (259 tokens)" "${generate[@]}" --target "$work/t" --bench "$bench"

# --- the tokenizer files ---
printf '{"type": "bpe"}' | target_with specgate_tokenizer.json
expect_input_error "$out" "t/specgate_tokenizer.json:1: field 'type': only \"byte\" is supported" "${generate[@]}" --target "$work/t" --bench "$bench"
printf '{"type": "byte",\n "bos_token_id": 1e400}' | target_with specgate_tokenizer.json
expect_input_error "$out" "t/specgate_tokenizer.json: not valid JSON at line 2, column 18: number overflow parsing '1e400'" "${generate[@]}" --target "$work/t" --bench "$bench"
printf '{"model": {"type": "BPE",\n  "vocab": {"a": 0, "b": -1}, "merges": []}}' | target_with tokenizer.json
rm "$work/t/specgate_tokenizer.json"
expect_input_error "$out" "t/tokenizer.json:2: field 'model.vocab.b': out of range" "${generate[@]}" --target "$work/t" --bench "$bench"
printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}' | target_with tokenizer.json
printf '{"bos_token": null,\n "eos_token": {"content": 7}}' >"$work/t/tokenizer_config.json"
rm "$work/t/specgate_tokenizer.json"
expect_input_error "$out" "t/tokenizer_config.json:2: field 'eos_token.content': expected a string" "${generate[@]}" --target "$work/t" --bench "$bench"
printf '{"model": {"type": "BPE", "vocab": {"a": 500, "b": 1}, "merges": []}}' | target_with tokenizer.json
rm "$work/t/specgate_tokenizer.json"
printf '{"question_id": 1, "category": "qa", "turns": ["ab"]}\n' >"$work/ab.jsonl"
expect_input_error "$out" "ab.jsonl: question 1: the tokenizer encodes it with token 500, outside the target's vocabulary (259 tokens)" \
  "${generate[@]}" --target "$work/t" --bench "$work/ab.jsonl"

# --- files that are folders or devices, too large, or lines too long: refused before they are read ---
for file in config.json generation_config.json tokenizer.json; do
  rm -rf "$work/t" && cp -r "$fixtures/target" "$work/t" && rm -f "$work/t/$file" && mkdir "$work/t/$file"
  [ "$file" = tokenizer.json ] && rm "$work/t/specgate_tokenizer.json"
  expect_input_error "$out" "t/$file: not a regular file (a folder)" "${generate[@]}" --target "$work/t" --bench "$bench"
done
rm -rf "$work/t" && cp -r "$fixtures/target" "$work/t" && ln -sf /dev/zero "$work/t/config.json"
expect_input_error "$out" "t/config.json: not a regular file" "${generate[@]}" --target "$work/t" --bench "$bench"
rm -rf "$work/t" && cp -r "$fixtures/target" "$work/t" && truncate -s 300M "$work/t/config.json"
expect_input_error "$out" "t/config.json: 314572800 bytes, more than the 64 MiB a JSON file may be" "${generate[@]}" --target "$work/t" --bench "$bench"
sed 's/"num_hidden_layers": [0-9]*/"num_hidden_layers": 10000000/' "$fixtures/target/config.json" | target_with config.json
expect_input_error "$out" "t/config.json: field 'num_hidden_layers': 10000000 layers, but the checkpoint has no tensor 'model.layers.9999999.input_layernorm.weight'" \
  "${generate[@]}" --target "$work/t" --bench "$bench"
sed 's/"hidden_act": "silu"/"hidden_act": "gelu_pytorch_tanh"/' "$fixtures/target/config.json" | target_with config.json
expect_input_error "$out" "field 'hidden_act': unsupported activation 'gelu_pytorch_tanh' (supported: silu)" "${generate[@]}" --target "$work/t" --bench "$bench"
python3 -c 'print("{\"question_id\": 1, \"category\": \"qa\", \"turns\": [\"" + "a" * (17 << 20) + "\"]}")' >"$work/long.jsonl"
expect_input_error "$out" "long.jsonl:1: the line is longer than 16 MiB" "${generate[@]}" --target "$fixtures/target" --bench "$work/long.jsonl"

# --- the fixture pair handed to the demo ---
demo=(demo --out "$work/demo" --max-new-tokens 2 --fixtures "$work/pair")
expect_input_error "$work/demo" "pair/fixture_report.json: no fixture pair there" "${demo[@]}"
mkdir -p "$work/pair"
printf '{\n  "seed": 3,\n  "draft_agreement": {"sample_bench": {"positions": 10, "agreed": 4}}\n}\n' >"$work/pair/fixture_report.json"
expect_input_error "$work/demo" "pair/fixture_report.json:2: field 'seed': the pair was built with seed 3, not 0" "${demo[@]}"
printf '{\n  "seed": 0,\n  "draft_agreement": {\n    "sample_bench": {"positions": 10, "agreed": 11}\n  }\n}\n' >"$work/pair/fixture_report.json"
expect_input_error "$work/demo" "pair/fixture_report.json:4: field 'agreed': expected a count of at most the positions" "${demo[@]}"
printf '{"seed": 0, "draft_agreement": {}}\n' >"$work/pair/fixture_report.json"
expect_input_error "$work/demo" "pair/fixture_report.json:1: field 'sample_bench': missing" "${demo[@]}"
# Refused before the pair is even read.
expect_input_error "$work/demo" "exspec: --window (2) must be at least --batch-size (8)" "${demo[@]}" --window 2

# --- output paths and flags ---
touch "$work/file"
expect_input_error "$work/file/out.jsonl" "--out: $work/file/out.jsonl: $work/file is not a folder" generate --engine oracle --limit 1 --max-new-tokens 2 \
  --target "$fixtures/target" --bench "$bench" --out "$work/file/out.jsonl"
expect_input_error "$work/file/r.json" "$work/file" score --reference "$work/good.jsonl" --candidate "$work/good.jsonl" --json "$work/file/r.json"
oracle=(generate --engine oracle --limit 1 --max-new-tokens 2 --target "$fixtures/target")
expect_input_error "$work/no/such/out.jsonl" "the folder $work/no/such does not exist" "${oracle[@]}" --bench "$bench" \
  --out "$work/no/such/out.jsonl"
[ ! -e "$work/no" ] || fail "a missing --out folder was created"
expect_usage_error "--out: the path is empty" "${oracle[@]}" --bench "$bench" --out ""
# An output that is one of the inputs is refused, and the input is left as it was.
cp "$work/good.jsonl" "$work/kept.jsonl"
expect_usage_error "--json: $work/kept.jsonl: is also --reference" score --reference "$work/kept.jsonl" --candidate "$work/good.jsonl" --json "$work/kept.jsonl"
cmp -s "$work/good.jsonl" "$work/kept.jsonl" || fail "score --json over --reference changed it"
cp "$bench" "$work/bench-copy.jsonl"
expect_usage_error "is also --bench" "${oracle[@]}" --bench "$work/bench-copy.jsonl" --out "$work/bench-copy.jsonl"
cmp -s "$bench" "$work/bench-copy.jsonl" || fail "generate --out over --bench changed it"
rm -rf "$work/t" && cp -r "$fixtures/target" "$work/t"
expect_usage_error "lies inside --target's folder" generate --engine oracle --limit 1 --max-new-tokens 2 --target "$work/t" \
  --bench "$bench" --out "$work/t/config.json"
cmp -s "$fixtures/target/config.json" "$work/t/config.json" || fail "generate --out into --target changed config.json"
expect_usage_error "is also --bench" collect --endpoint http://127.0.0.1:9 --api vllm --model m --bench "$work/bench-copy.jsonl" \
  --out "$work/bench-copy.jsonl" --retries 0
cmp -s "$bench" "$work/bench-copy.jsonl" || fail "collect --out over --bench changed it"
expect_usage_error "--min-p: the tgi API has no min_p" collect --endpoint http://127.0.0.1:9 --api tgi --model m \
  --bench "$bench" --out "$work/tgi.jsonl" --temperature 0.8 --min-p 0.1 --retries 0
[ ! -e "$work/tgi.jsonl" ] || fail "collect --api tgi --min-p left an answer file"
expect_usage_error "--stream: log-probabilities are not read from streams; leave out --top-logprobs" collect \
  --endpoint http://127.0.0.1:9 --api vllm --model m --bench "$bench" --out "$work/stream.jsonl" --stream --top-logprobs 2 \
  --retries 0
expect_usage_error "--temperature: 1e-300 is below 1e-05, where engines decode greedily" generate --engine oracle \
  --target "$fixtures/target" --bench "$bench" --temperature 1e-300 --out "$work/never.jsonl"
expect_usage_error "--min-p: must be in [0, 1]" generate --engine oracle --target "$fixtures/target" --bench "$bench" \
  --limit 1 --temperature 1 --min-p 1.5 --out "$work/min-p.jsonl"
# The sampling flags are checked alike wherever they are declared (conformance/commands/sampling_flags.h).
expect_usage_error "--top-p: must be in (0, 1]" collect --endpoint http://127.0.0.1:9 --api vllm --model m \
  --bench "$bench" --out "$work/top-p.jsonl" --temperature 0.8 --top-p 0 --retries 0
expect_usage_error "--top-k: must be >= 0" collect --endpoint http://127.0.0.1:9 --api vllm --model m \
  --bench "$bench" --out "$work/top-k.jsonl" --temperature 0.8 --top-k -2 --retries 0
expect_usage_error "--temperature: must be a finite number >= 0" collect --endpoint http://127.0.0.1:9 --api vllm \
  --model m --bench "$bench" --out "$work/temperature.jsonl" --temperature -1 --retries 0
# A run that fails leaves an existing --out as it was, and leaves no file of its own.
printf 'kept\n' >"$work/existing.jsonl"
expect_usage_error "positions" generate --engine oracle --target "$fixtures/target" --bench "$bench" --limit 1 \
  --max-new-tokens 999999 --out "$work/existing.jsonl"
[ "$(cat "$work/existing.jsonl")" = kept ] || fail "a failed generate changed its existing --out"
[ -z "$(find "$work" -maxdepth 1 -name '.existing.jsonl.*')" ] || fail "a failed generate left its temporary file"
# A device as --out is written in place and never removed: /dev/full fails with exit 2.
if [ -c /dev/full ]; then
  expect_usage_error "--out: /dev/full: cannot write" "${oracle[@]}" --bench "$bench" --out /dev/full
  [ -c /dev/full ] || fail "generate --out /dev/full removed /dev/full"
  expect_usage_error "--json: /dev/full: cannot write" score --reference "$work/good.jsonl" --candidate "$work/good.jsonl" --json /dev/full
fi
expect_input_error "$out" "--max-new-tokens" generate --engine oracle --target "$fixtures/target" --bench "$bench" --out "$out" \
  --max-new-tokens 99999999999999999999
expect_input_error "$out" "--seed" "${generate[@]}" --target "$fixtures/target" --bench "$bench" --seed -1
# One past the largest seed, which CLI11 alone would read as the largest.
expect_input_error "$out" "--seed: must be an integer in [0, 18446744073709551615], got 18446744073709551616" \
  "${generate[@]}" --target "$fixtures/target" --bench "$bench" --seed 18446744073709551616
expect_input_error "$report" "--pit-seed: must be an integer in [0, 18446744073709551615], got 18446744073709551616" \
  sampling --target "$fixtures/target" --answers "$work/good.jsonl" --json "$report" --pit-seed 18446744073709551616
expect_input_error "$report" "--min-exact" "${score[@]}" --reference "$work/good.jsonl" --candidate "$work/good.jsonl" --min-exact 1e400
expect_usage_error "generate has no option --batch; did you mean --batch-size?" "${generate[@]}" --target "$fixtures/target" --bench "$bench" --batch 8
expect_usage_error "score has no option --refrence; did you mean --reference?" score --refrence "$work/good.jsonl"
touch "$work/model.gguf"
expect_input_error "$out" "model.gguf: a GGUF file; a checkpoint is a Hugging Face folder" "${generate[@]}" --target "$work/model.gguf" --bench "$bench"
expect_input_error "$out" "nowhere: no such checkpoint folder" "${generate[@]}" --target "$work/nowhere" --bench "$bench"
expect_usage_error "subcommand" nosuch
# Into a file first: grep -q would stop reading at the line, and the writer's SIGPIPE fail the pipe.
for command in generate score bench; do
  "$conformance" "$command" --help >"$work/help" || fail "$command --help: exit $?"
  grep -q "^Exit codes: 0 done or gate passed; 1 a verdict" "$work/help" || fail "$command --help lacks the exit codes"
done

finish "input-error"
