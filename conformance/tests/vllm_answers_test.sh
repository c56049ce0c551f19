#!/usr/bin/env bash
# acceptance on answers made from vLLM 0.32's own recorded responses (fixtures/vllm): its n-gram
# server lists only the passes that verified drafts, drafts K past max_tokens and proposes
# through EOS; its draft-model server proposes the draft's most likely token. Usage:
# vllm_answers_test.sh CONFORMANCE PYTHON SOURCE_DIR REAL_PAIR
set -uo pipefail
conformance=$1 python=$2 source=$3 pair=$4
source "$source/conformance/tests/cli_checks.sh"

# One answer line per recorded response, as collect writes it from one (put_rounds).
"$python" - "$source/fixtures/vllm" "$work" <<'PY'
import json, sys
fixtures, work = sys.argv[1:3]
def answer(name, sampling, drafter):
    body = json.load(open(f"{fixtures}/{name}.json"))
    choice, steps = body["choices"][0], body["metrics"]["speculative_decoding"]
    return {"question_id": 1, "category": "writing", "answer_id": name, "model_id": "smollm2", "tstamp": 1.0,
            "choices": [{"index": 0, "turns": [choice["text"]], "token_ids": [choice["token_ids"]],
                         "prompt_token_ids": [choice["prompt_token_ids"]],
                         "accept_lengths": [a + 1 for a in steps["per_step_accepted"]],
                         "round_drafts": [steps["per_step_drafted"]],
                         "drafted_tokens": [steps["num_draft_tokens"]], "accepted_drafts": [steps["num_accepted_draft_tokens"]]}],
            "run": {"engine": "vllm", "server": "vllm", "batch_size": 1, "started_at": 0.0, "max_new_tokens": 16,
                    "draft_tokens": 4, "drafter": drafter, "sampling": sampling}}
def write(name, line):
    with open(f"{work}/{name}.jsonl", "w") as out:
        out.write(json.dumps(line) + "\n")
ngram = answer("completions", {"temperature": 0.0}, "ngram")
write("ngram", ngram)
ngram["choices"][0]["round_drafts"] = [[4, 5]]
write("ngram_other_drafts", ngram)
ngram["choices"][0]["round_drafts"] = [[4, 4, 4]]
ngram["choices"][0]["accept_lengths"] = [5, 5, 1]
write("ngram_extra_round", ngram)
sampled = answer("completions_sampled_draft", {"temperature": 0.8, "top_p": 0.95, "seed": 7}, "model")
sampled["choices"][0]["drafted_tokens"] = [40]
sampled["choices"][0]["accepted_drafts"] = [0]
write("draft", sampled)
PY

ngram=(acceptance --target "$pair/target" --drafter ngram --ngram-min 2 --ngram-max 4)
# Two rounds listed, of 4 drafts each; the two passes before them found nothing to look up.
"$conformance" "${ngram[@]}" --ngram-through-eos --answers "$work/ngram.jsonl" >"$work/ngram.out" 2>&1 ||
  fail "vLLM's n-gram rounds: $(cat "$work/ngram.out")"
grep -q "^  4 rounds compared" "$work/ngram.out" || fail "the passes without drafts are not put back: $(cat "$work/ngram.out")"
# Cut before EOS, the lookup of the second round proposes fewer than vLLM verified.
expect_usage_error "where the n-gram lookup proposes" "${ngram[@]}" --answers "$work/ngram.jsonl"
expect_usage_error "ngram_other_drafts.jsonl:1: field 'choices[0].accept_lengths': round 1 verified 5 drafts at token 8 where the n-gram lookup proposes 4" \
  "${ngram[@]}" --ngram-through-eos --answers "$work/ngram_other_drafts.jsonl"
expect_usage_error "1 rounds listed after the turn's last token" "${ngram[@]}" --ngram-through-eos \
  --answers "$work/ngram_extra_round.jsonl"
# The draft model's greedy drafts, accepted with the target's probability of each.
"$conformance" acceptance --target "$pair/target" --draft "$pair/draft" --draft-sampling greedy --engine-dtype float32 \
  --answers "$work/draft.jsonl" >"$work/draft.out" 2>&1
status=$?
[ $status -le 1 ] || fail "the draft model's greedy drafts: exit $status: $(cat "$work/draft.out")"
grep -q "model (greedy drafts)" "$work/draft.out" || fail "not judged as greedy drafts: $(cat "$work/draft.out")"
grep -q "^  10 rounds compared" "$work/draft.out" || fail "not every pass a round: $(cat "$work/draft.out")"
expect_usage_error "--draft-sampling: --drafter ngram proposes looked-up tokens" "${ngram[@]}" --draft-sampling greedy \
  --answers "$work/ngram.jsonl"
finish "vLLM's answers"
