#!/usr/bin/env bash
# End-to-end checks of `conformance acceptance` on the fixture pair: a correct engine's greedy
# rounds each accept exactly what the draft checkpoint proposes and its sampled acceptance is
# what the two models imply; every round counts up to the answer's final token, and a first
# entry that may be the prefill's pass is left out; a round built on a near-tie, and an outcome
# built within the support margin, stand, and reject without the tolerance; faults of the draft
# cache and of verification are rejected, with every greedy round that differs named; the
# reports agree with the answers; bad input exits 2 with one line naming the file, line and
# field.
set -uo pipefail
conformance=$1 fixtures=$2 bench=$3
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/cli_checks.sh"
python=/usr/bin/python3
[ -x "$python" ] || python=python3
pair=(--target "$fixtures/target" --draft "$fixtures/draft")
# The sample bench with short prompts (BOS and each turn's first 23 bytes), so that re-scoring
# costs little beside the answers.
bench="$(dirname "$bench")/short_prompts.jsonl"

# decode OUT ENGINE [generate options]: 30 questions, 64 tokens, K 4, batch 8.
decode() {
  local out=$1 engine=$2
  shift 2
  "$conformance" generate --engine "$engine" "${pair[@]}" --bench "$bench" --max-new-tokens 64 --draft-tokens 4 \
    --batch-size 8 --out "$out" "$@" >/dev/null || fail "generate $engine $*"
}
# check NAME EXPECTED_STATUS ANSWERS [options]
check() {
  local name=$1 expected=$2 answers=$3
  shift 3
  "$conformance" acceptance "${models[@]}" --answers "$answers" "$@" >"$work/$name.out" 2>&1
  local status=$?
  [ $status -eq "$expected" ] || fail "$name: exit $status, expected $expected: $(cat "$work/$name.out")"
}
models=("${pair[@]}")  # what check() re-scores with

# Greedy: float32 engines, float64 re-scoring; every round is predicted exactly.
decode "$work/eqspec.jsonl" eqspec
decode "$work/exspec.jsonl" exspec --window 16
decode "$work/draft-cache-short.jsonl" eqspec --inject-fault draft-cache-short
check eqspec 0 "$work/eqspec.jsonl" --json "$work/eqspec.json" --markdown "$work/eqspec.md" --junit "$work/eqspec.xml"
check exspec 0 "$work/exspec.jsonl"
check draft-cache-short 1 "$work/draft-cache-short.jsonl" --json "$work/draft-cache-short.json" --markdown "$work/short.md" \
  --html "$work/short.html"
grep -q "accepted, the draft's proposals match" "$work/draft-cache-short.out" || fail "draft-cache-short: no round named"
grep -q '<h1>specgate acceptance: <span class="fail">REJECTED</span></h1>' "$work/short.html" || fail "acceptance --html: no verdict"
[ "$(grep -c "^<tr><td>.*draft-cache-short.jsonl:" "$work/short.html")" -eq "$(grep -c "draft-cache-short.jsonl:" "$work/short.md")" ] ||
  fail "acceptance --html: not the rounds the Markdown report lists"
"$python" - "$work/eqspec.jsonl" "$work/eqspec.json" "$work/draft-cache-short.json" "$fixtures/target/config.json" <<'PY' || fail "greedy reports"
import json, sys
answers = [json.loads(line)["choices"][0] for line in open(sys.argv[1])]
ok, bad = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
eos = json.load(open(sys.argv[4]))["eos_token_id"]
eos = eos if isinstance(eos, list) else [eos]
problems = []
# Every round is compared, the last up to the answer's final token: a round's accepted drafts
# are its accept_lengths less one, and in the last round every token before the final one was
# an accepted draft. The final token's own trial is left out: the answers do not list the drafts
# each round verified, and a round cut by max_new_tokens may have drafted fewer than K.
rounds = sum(len(a["accept_lengths"]) for a in answers)
accepted = sum(n - 1 for a in answers for n in a["accept_lengths"])
if ok["final_trials"] != 0:
    problems.append(f'correct: {ok["final_trials"]} final trials, from answers that list no round_drafts')
if (ok["rounds"], ok["test"]["observed"], ok["last_rounds_cut"]) != (rounds, accepted, len(answers)):
    problems.append(f'correct: {ok["rounds"]} rounds, {ok["test"]["observed"]} accepted; the answers have {rounds}, {accepted}')
if ok["test"]["expected"] != accepted or ok["mismatches"] or ok["rejected"]:
    problems.append(f'correct: expected {ok["test"]["expected"]}, {len(ok["mismatches"])} mismatches')
if not bad["mismatches"] or not bad["rejected"]:
    problems.append("draft-cache-short: no mismatch")
for m in bad["mismatches"]:
    if m["predicted"] == m["observed"] or not m["file"].endswith("draft-cache-short.jsonl") or m["line"] < 1:
        problems.append(f"mismatch {m}")
for p in problems: print("  " + p)
sys.exit(1 if problems else 0)
PY
grep -q "failures=\"0\"" "$work/eqspec.xml" || fail "JUnit of the correct engine"

# An engine that drafts only what max_new_tokens lets it keep: where the last round's final token
# was an accepted draft, such an engine drafted one token fewer, accepted them all and appended the
# same final token as its bonus, counting one accepted draft fewer. It has no trial at the final
# token, and is not charged a failed one.
"$python" - "$work/eqspec.jsonl" "$work/clamped.jsonl" "$fixtures/target/config.json" <<'PY' || fail "no clamped round"
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
eos = json.load(open(sys.argv[3]))["eos_token_id"]
eos = eos if isinstance(eos, list) else [eos]
clamped = 0
for line in lines:
    a = line["choices"][0]
    lengths = a["accept_lengths"]
    last_accepted = a["accepted_drafts"][0] - sum(n - 1 for n in lengths[:-1])
    if a["token_ids"][0][-1] not in eos and lengths[-1] - 1 < 4 and last_accepted == lengths[-1]:
        a["accepted_drafts"][0] -= 1
        clamped += 1
open(sys.argv[2], "w").write("".join(json.dumps(line) + "\n" for line in lines))
sys.exit(0 if clamped else 1)
PY
check clamped 0 "$work/clamped.jsonl"
# An answer that ended at its first token (the prefill drew an end-of-sequence) ran no round and
# lists none: it adds no trial and is no bad input.
"$python" - "$work/eqspec.jsonl" "$work/first-token-eos.jsonl" "$fixtures/target/config.json" <<'PY'
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
eos = json.load(open(sys.argv[3]))["eos_token_id"]
a = lines[0]["choices"][0]
a.update(token_ids=[[eos if isinstance(eos, int) else eos[0]]], accept_lengths=[], accepted_drafts=[0], drafted_tokens=[0],
         decoding_steps=[1], new_tokens=[1], turns=[""])
open(sys.argv[2], "w").write("".join(json.dumps(line) + "\n" for line in lines))
PY
check first-token-eos 0 "$work/first-token-eos.jsonl"
# On a terminal (script gives it one), a progress bar over the answers while they are re-scored.
script -qec "$conformance acceptance ${pair[*]} --answers $work/eqspec.jsonl" /dev/null >"$work/terminal.out" 2>&1
grep -q "acceptance \[.*\] 30/30" "$work/terminal.out" ||
  fail "no progress bar on a terminal: $(tr '\r' '\n' <"$work/terminal.out" | head -3)"

# Rounds that append every token of a turn, the first included: here the prefill's token as an
# entry of its own. That entry may be the prefill's pass, not a round of drafts, and is left out;
# counted as a round that accepted nothing it would shift every later round by one token.
"$python" - "$work/eqspec.jsonl" "$work/prefill-entry.jsonl" <<'PY'
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
for line in lines: line["choices"][0]["accept_lengths"].insert(0, 1)
open(sys.argv[2], "w").write("".join(json.dumps(line) + "\n" for line in lines))
PY
check prefill-entry 0 "$work/prefill-entry.jsonl" --json "$work/prefill-entry.json"
"$python" - "$work/eqspec.json" "$work/prefill-entry.json" <<'PY' || fail "prefill entry: $(cat "$work/prefill-entry.out")"
import json, sys
ok, shifted = (json.load(open(p)) for p in sys.argv[1:3])
assert shifted["first_rounds_skipped"] == 30 and shifted["rounds"] == ok["rounds"], shifted
assert shifted["test"]["observed"] == ok["test"]["observed"] and not shifted["mismatches"], shifted["test"]
PY

# A near-tie, greedy: where the draft's two likeliest tokens lie within 0.1 nats, an engine whose
# rounding differs from the float64 re-scorer's (bfloat16, another CPU's kernels) may propose the
# other one, so that the target rejects it and adds the re-scorer's choice. Whether a real
# bfloat16 run holds such a round depends on the CPU's rounding, so the round is built: float64
# answers with one round ended at a drafted position that is a near-tie (boundary_round.py
# finds one and fails when there is none). It agrees only through the near-tie and passes; held
# to exact equality it rejects, naming the round.
decode "$work/greedy64.jsonl" eqspec --dtype float64
if "$python" "$here/boundary_round.py" "$work/greedy64.jsonl" "$work/near-tie.jsonl" near_tie_rounds -- \
  "$conformance" acceptance "${pair[@]}" >"$work/near-tie.found" 2>&1; then
  check near-tie 0 "$work/near-tie.jsonl"
  grep -q "; 1 rounds agree only through a near-tie (within 0.1 nats)" "$work/near-tie.out" ||
    fail "near-tie: $(cat "$work/near-tie.out")"
  check near-tie-exact 1 "$work/near-tie.jsonl" --near-tie-threshold 0
  grep -q "near-tie.jsonl:[0-9]*: question .*: 0 accepted, the draft's proposals match [1-9]" "$work/near-tie-exact.out" ||
    fail "near-tie held to exact equality: $(cat "$work/near-tie-exact.out")"
else
  fail "no near-tie case: $(cat "$work/near-tie.found")"
fi
grep -q "^| .*draft-cache-short.jsonl:[0-9]* |" "$work/short.md" || fail "Markdown lists no differing round"

# Sampled, float64: T 0.8, top-k 12, top-p 0.9. Faults that change acceptance are rejected, and
# so is one that changes only the tokens drawn after rejected drafts (residual-not-normalised),
# by the test of those tokens against the residual; the correct engine's fixed draws pass.
sampled=(--temperature 0.8 --top-k 12 --top-p 0.9 --seed 5 --dtype float64)
decode "$work/sampled.jsonl" eqspec "${sampled[@]}"
check sampled 0 "$work/sampled.jsonl" --json "$work/sampled.json"
for fault in always-accept stale-draft-distribution cache-advanced-by-drafted raw-draft-distribution \
  residual-not-normalised; do
  decode "$work/$fault.jsonl" eqspec "${sampled[@]}" --inject-fault "$fault"
  check "$fault" 1 "$work/$fault.jsonl"
done
grep -q "drawn after rejected drafts do not follow the residual max(p - q, 0)" "$work/residual-not-normalised.out" ||
  fail "residual-not-normalised: $(cat "$work/residual-not-normalised.out")"
"$python" - "$work/sampled.json" <<'PY' || fail "sampled report"
import json, sys
report = json.load(open(sys.argv[1]))
t, r = report["test"], report["residual"]
low, high = t["ratio_interval"]
if not (low <= t["ratio"] <= high and 0 < t["expected"] < t["trials"] and t["p_value"] > 0.05 and t["ruled_out"] == 0):
    print(f"  {t}")
    sys.exit(1)
alpha = report["settings"]["alpha"]
if not (t["alpha"] == r["alpha"] == alpha / 2 and r["draws"] > 100 and r["outside"] == 0 and r["p_value"] > 0.05
        and r["allowance"] == 0 and not r["rejected"]):
    print(f"  {r}")
    sys.exit(1)
PY

# T 1.0, min-p 0.1: both shaped distributions are often a single token, and the float64
# re-scorer calls an acceptance certain. A bfloat16 engine's support may hold a token the
# re-scorer's lacks by less than bfloat16's margin (4 logits), and then the other outcome can
# happen. Whether a real bfloat16 run holds one depends on the CPU's rounding, so it is built:
# float64 answers with one round rejected where the re-scorer is certain of acceptance but the
# support may grow within the margin (boundary_round.py finds one and fails when there is none).
# Within the bfloat16 margin it stands; at no margin it rejects a correct engine.
decode "$work/min-p-1.jsonl" eqspec --temperature 1.0 --min-p 0.1 --seed 138 --dtype float64
if "$python" "$here/boundary_round.py" "$work/min-p-1.jsonl" "$work/min-p-boundary.jsonl" boundary_trials -- \
  "$conformance" acceptance "${pair[@]}" --engine-dtype bfloat16 >"$work/min-p-boundary.found" 2>&1; then
  check min-p-boundary 0 "$work/min-p-boundary.jsonl" --engine-dtype bfloat16 --json "$work/rounded.json"
  grep -q "; 1 outcomes the models rule out stand within the support margin of 4 logits (bfloat16)" \
    "$work/min-p-boundary.out" || fail "min-p boundary: $(cat "$work/min-p-boundary.out")"
  check min-p-no-margin 1 "$work/min-p-boundary.jsonl" --support-margin 0 --json "$work/unrounded.json"
  grep -q "1 outcomes they rule out" "$work/min-p-no-margin.out" || fail "no margin: $(cat "$work/min-p-no-margin.out")"
  # An engine of another dtype: the checkpoints re-scored in it say how far rounding moves the
  # accepted drafts expected, and the test allows twice that shift in its direction.
  "$python" - "$work/rounded.json" "$work/unrounded.json" <<'PY' || fail "rounding shift"
import json, sys
rounded, unrounded = (json.load(open(path)) for path in sys.argv[1:3])
shift = rounded["rounding_shift"]
assert shift is not None and shift != 0 and rounded["test"]["allowed_shift"] == 2 * shift, rounded["test"]
assert unrounded["rounding_shift"] is None and unrounded["test"]["allowed_shift"] == 0, unrounded["test"]
PY
else
  fail "no min-p boundary case: $(cat "$work/min-p-boundary.found")"
fi

# T 1.5, top-k 3, min-p 0.4: warpers that cut most of each distribution. The correct engine
# passes (p 0.56); a theory that left the draft's q unshaped would imply 879 accepted drafts
# where 1,087 were (z 11.7).
decode "$work/min-p.jsonl" eqspec --temperature 1.5 --top-k 3 --min-p 0.4 --seed 7 --dtype float64
check min-p 0 "$work/min-p.jsonl"
grep -q "top-k 3, top-p off, min-p 0.4 (from the answers)" "$work/min-p.out" || fail "warpers: $(head -1 "$work/min-p.out")"

# Prompt lookup: no draft checkpoint. The proposals are the answer's own lookups, so every greedy
# round is predicted exactly and a sampled draft is kept with probability p of it; answers
# checked against another lookup than the engine's (n-grams of 1 only) are rejected, and so is
# an engine that verifies its rows' padding.
ngram=(--target "$fixtures/target" --drafter ngram)
"$conformance" generate --engine eqspec "${ngram[@]}" --bench "$bench" --max-new-tokens 64 --draft-tokens 4 \
  --batch-size 8 --out "$work/ngram.jsonl" >/dev/null || fail "generate eqspec ngram"
"$conformance" generate --engine exspec "${ngram[@]}" --bench "$bench" --max-new-tokens 64 --draft-tokens 4 \
  --batch-size 4 --temperature 1.0 --top-k 8 --seed 11 --dtype float64 --out "$work/ngram-sampled.jsonl" >/dev/null ||
  fail "generate exspec ngram sampled"
"$conformance" generate --engine eqspec "${ngram[@]}" --bench "$bench" --max-new-tokens 64 --draft-tokens 4 \
  --batch-size 8 --inject-fault ragged-padding-verified --out "$work/ngram-padding.jsonl" >/dev/null ||
  fail "generate eqspec ngram padding fault"
models=("${ngram[@]}")
check ngram 0 "$work/ngram.jsonl" --json "$work/ngram.json"
grep -q "(ngram 1-3 drafts)" "$work/ngram.out" || fail "ngram: $(head -1 "$work/ngram.out")"
check ngram-sampled 0 "$work/ngram-sampled.jsonl"
# A lookup proposes its tokens with certainty, so the token drawn after a rejected one comes from
# a residual without it: an engine that draws it again (from the target's distribution, say)
# shows that draft where its round stopped. Built from the correct answers: a round that kept
# a >= 1 drafts is listed as keeping a - 1 and stopping at the a-th, its last token a round of its own.
python3 - "$work/ngram-sampled.jsonl" "$work/ngram-recovered-draft.jsonl" <<'PY' || fail "building a recovered draft"
import json, sys
answers = [json.loads(line) for line in open(sys.argv[1])]
def split_one(answers):
    for answer in answers:
        lengths = answer["choices"][0]["accept_lengths"]
        lengths = lengths[0] if isinstance(lengths[0], list) else lengths
        for r in range(1, len(lengths) - 1):
            if lengths[r] >= 2:
                lengths[r:r + 1] = [lengths[r] - 1, 1]
                return answer["question_id"]
    raise SystemExit("no round kept a draft")
print(split_one(answers))
open(sys.argv[2], "w").write("".join(json.dumps(a) + "\n" for a in answers))
PY
check ngram-recovered-draft 1 "$work/ngram-recovered-draft.jsonl"
grep -q "1 token drawn after a rejected draft is that draft, which the residual excludes where the drafter proposes with certainty" \
  "$work/ngram-recovered-draft.out" || fail "ngram-recovered-draft: $(cat "$work/ngram-recovered-draft.out")"
# A server that reports no rounds (vLLM without --per-request-spec-decode-metrics) but counts the
# drafts it accepted at each draft position (/metrics, written by collect --counters): the
# answers' tokens imply their rounds, whose accepted counts must be the server's. Built from the
# answers with rounds: the counters they imply, then the rounds removed. The engine that draws
# a rejected draft again shows it in its tokens as an accepted draft, which its counters lack.
python3 - "$work" <<'PY' || fail "building server counters"
import json, sys
work = sys.argv[1]
def turn_lengths(answer):
    lengths = answer["choices"][0]["accept_lengths"]
    return lengths[0] if isinstance(lengths[0], list) else lengths
for name in ("ngram", "ngram-sampled", "ngram-recovered-draft"):
    answers = [json.loads(line) for line in open(f"{work}/{name}.jsonl")]
    per_position, drafts = [0] * 4, 0
    for answer in answers:
        lengths = turn_lengths(answer)
        if sum(lengths) == len(answer["choices"][0]["token_ids"][0]):
            lengths = lengths[1:]  # the prefill's pass
        for length in lengths:
            for j in range(length - 1):
                per_position[j] += 1
        drafts += len(lengths)
    counters = {"drafts": drafts, "draft_tokens": 4 * drafts, "accepted_tokens": sum(per_position),
                "accepted_per_position": per_position}
    json.dump(counters, open(f"{work}/{name}.counters.json", "w"))
    lowered = dict(counters, accepted_per_position=[per_position[0] - 1] + per_position[1:])
    json.dump(lowered, open(f"{work}/{name}.lowered.json", "w"))
    with open(f"{work}/{name}-no-rounds.jsonl", "w") as out:
        for answer in answers:
            for field in ("accept_lengths", "round_drafts", "accepted_drafts", "drafted_tokens"):
                answer["choices"][0].pop(field, None)
            out.write(json.dumps(answer) + "\n")
PY
for name in ngram ngram-sampled; do
  check "$name-counters" 0 "$work/$name-no-rounds.jsonl" --server-counters "$work/$name.counters.json" --json "$work/$name-counters.json"
  grep -q "the rounds of 30 turns implied by their tokens" "$work/$name-counters.out" || fail "$name-counters: $(cat "$work/$name-counters.out")"
  check "$name-counters-with-rounds" 0 "$work/$name.jsonl" --server-counters "$work/$name.counters.json"
  check "$name-counters-lowered" 1 "$work/$name-no-rounds.jsonl" --server-counters "$work/$name.lowered.json"
  grep -q "the server's counters disagree with its answers on the drafts accepted at 1 draft position (position 1: counted" \
    "$work/$name-counters-lowered.out" || fail "$name-counters-lowered: $(cat "$work/$name-counters-lowered.out")"
done
"$python" - "$work/ngram-sampled-counters.json" "$work/ngram-sampled.counters.json" <<'PY' || fail "counters report"
import json, sys
report, counters = (json.load(open(p)) for p in sys.argv[1:3])
positions = report["positions"]
assert [p["counted"] for p in positions] == counters["accepted_per_position"], positions
assert all(p["shown"] <= p["counted"] <= p["shown"] + p["open"] for p in positions), positions
assert report["implied_turns"] == 30 and report["server_counters"] == counters, report["implied_turns"]
assert sum(p["reached"] for p in positions) == report["test"]["trials"], positions
PY
check ngram-recovered-draft-counters 1 "$work/ngram-recovered-draft-no-rounds.jsonl" \
  --server-counters "$work/ngram-recovered-draft.counters.json"
grep -q "the server's counters disagree with its answers on the drafts accepted at" "$work/ngram-recovered-draft-counters.out" ||
  fail "ngram-recovered-draft-counters: $(cat "$work/ngram-recovered-draft-counters.out")"
check ngram-other-lookup 1 "$work/ngram.jsonl" --ngram-max 1
check ngram-padding 1 "$work/ngram-padding.jsonl"
expect_usage_error "--draft: --drafter ngram uses no draft model" acceptance "${ngram[@]}" --draft "$fixtures/draft" \
  --answers "$work/ngram.jsonl"
models=("${pair[@]}")

# Bad input.
"$conformance" generate --engine oracle --target "$fixtures/target" --bench "$bench" --limit 2 --max-new-tokens 8 \
  --out "$work/oracle.jsonl" >/dev/null || fail "generate oracle"
expect_usage_error "oracle.jsonl:1: field 'choices[0].accept_lengths': missing or empty" \
  acceptance "${pair[@]}" --answers "$work/oracle.jsonl" --draft-tokens 4
# A sampled draft model's proposals are draws: its tokens do not fix its rounds.
sed 's/"accept_lengths"/"x"/' "$work/sampled.jsonl" > "$work/sampled-no-rounds.jsonl"
expect_usage_error "sampled-no-rounds.jsonl:1: field 'choices[0].accept_lengths': missing or empty" \
  acceptance "${pair[@]}" --answers "$work/sampled-no-rounds.jsonl" --server-counters "$work/ngram.counters.json"
echo '{"drafts": 3, "draft_tokens": 12, "accepted_per_position": [1]}' > "$work/bad.counters.json"
expect_usage_error "bad.counters.json:1: field 'accepted_tokens': missing" \
  acceptance "${ngram[@]}" --answers "$work/ngram.jsonl" --server-counters "$work/bad.counters.json"
echo '{"drafts": 3, "draft_tokens": 12, "accepted_tokens": 1}' > "$work/bad.counters.json"
expect_usage_error "bad.counters.json: field 'accepted_per_position': missing or empty" \
  acceptance "${ngram[@]}" --answers "$work/ngram.jsonl" --server-counters "$work/bad.counters.json"
echo '{"drafts": 3, "draft_tokens": 12, "accepted_tokens": 1, "accepted_per_position": [1.5]}' > "$work/bad.counters.json"
expect_usage_error "bad.counters.json:1: field 'accepted_per_position[0]': expected a non-negative integer, got" \
  acceptance "${ngram[@]}" --answers "$work/ngram.jsonl" --server-counters "$work/bad.counters.json"
"$python" - "$work/eqspec.jsonl" "$work" <<'PY' || fail "writing bad answers"
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
def write(name, edit):
    first = json.loads(json.dumps(lines[0]))
    edit(first)
    with open(f"{sys.argv[2]}/{name}.jsonl", "w") as out:
        out.write(json.dumps(lines[1]) + "\n" + json.dumps(first) + "\n")
write("short", lambda a: a["choices"][0]["accept_lengths"].pop())
write("long_round", lambda a: a["choices"][0]["accept_lengths"].__setitem__(0, 6))
write("no_k", lambda a: a["run"].pop("draft_tokens"))
write("accepted_drafts", lambda a: a["choices"][0]["accepted_drafts"].__setitem__(0, a["choices"][0]["accepted_drafts"][0] + 10))
PY
expect_usage_error "short.jsonl:2: field 'choices[0].accept_lengths': the rounds append" \
  acceptance "${pair[@]}" --answers "$work/short.jsonl"
expect_usage_error "long_round.jsonl:2: field 'choices[0].accept_lengths': entry 0 appends 6 tokens" \
  acceptance "${pair[@]}" --answers "$work/long_round.jsonl"
expect_usage_error "no_k.jsonl:2: field 'run.draft_tokens': missing" acceptance "${pair[@]}" --answers "$work/no_k.jsonl"
expect_usage_error "accepted_drafts.jsonl:2: field 'choices[0].accepted_drafts[0]': leaves" \
  acceptance "${pair[@]}" --answers "$work/accepted_drafts.jsonl"
expect_usage_error "--top-k, --top-p, --min-p: give --temperature with them" \
  acceptance "${pair[@]}" --answers "$work/eqspec.jsonl" --top-k 5
expect_usage_error "--top-p: must be in (0, 1]" acceptance "${pair[@]}" --answers "$work/eqspec.jsonl" --temperature 1 --top-p 2
expect_usage_error "--near-tie-threshold: must be a finite number of nats >= 0" acceptance "${pair[@]}" \
  --answers "$work/eqspec.jsonl" --near-tie-threshold -1
expect_input_error "$work/x.json" "field 'run.sampling':" acceptance "${pair[@]}" --json "$work/x.json" \
  --answers "$work/eqspec.jsonl" --answers "$work/sampled.jsonl"
# The same sampled answers twice would count their draws twice: refused as sampling refuses
# them. Greedy answers draw nothing, whatever seed they record.
expect_input_error "$work/x.json" "sampled.jsonl:1: field 'run.sampling.seed': seed" acceptance "${pair[@]}" --json "$work/x.json" \
  --answers "$work/sampled.jsonl" --answers "$work/sampled.jsonl"
"$conformance" acceptance "${pair[@]}" --answers "$work/eqspec.jsonl" --answers "$work/eqspec.jsonl" >"$work/twice.out" 2>&1
[ $? -ne 2 ] || fail "greedy answers given twice refused: $(cat "$work/twice.out")"

finish "acceptance CLI"
