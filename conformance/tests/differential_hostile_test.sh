#!/usr/bin/env bash
# `conformance differential` against hostile servers (hostile_server.py): every answer wrong, whole
# and streamed, gives exit 1 with findings bounded by the questions and schedules; SGLang streams
# whose cumulative chunks shrink, TGI events that break the protocol and vLLM streams that never
# end fail their questions, named, within --timeout. Nothing exits 3, crashes or hangs.
set -uo pipefail
conformance_program=$1 bench=$2
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"
conformance="$work/conformance"  # a run that hangs exits 124 and fails the check
printf '#!/bin/sh\nexec timeout 120 "%s" "$@"\n' "$conformance_program" >"$conformance"
chmod +x "$conformance"
python=/usr/bin/python3
[ -x "$python" ] || python=python3

servers=()
trap 'for pid in "${servers[@]}"; do kill -9 "$pid" 2>/dev/null; done; rm -rf "$work"' EXIT

# hostile MODE: starts hostile_server.py in MODE; its URL is left in $url.
hostile() {
  "$python" "$(dirname "${BASH_SOURCE[0]}")/hostile_server.py" "$1" "$work/$1.port" 2>"$work/$1.server.err" &
  servers+=($!)
  disown
  url=""
  for _ in $(seq 300); do
    [ -s "$work/$1.port" ] && url="http://127.0.0.1:$(cat "$work/$1.port")" && return 0
    sleep 0.1
  done
  fail "hostile server $1 did not start: $(cat "$work/$1.server.err")"
  return 1
}

# differential NAME API QUESTIONS ARGS...: against $url, 2 crowds; its exit status in $status.
differential() {
  local name=$1 api=$2 questions=$3
  shift 3
  "$conformance" differential --endpoint "$url" --api "$api" --model fixture --bench "$bench" --limit "$questions" \
    --max-new-tokens 6 --crowds 2 --max-in-flight 4 --fillers 1 --filler-chars 40 --stagger 0 --timeout 3 \
    --retries 0 --out-dir "$work/$name" --json "$work/$name.json" "$@" >"$work/$name.out" 2>"$work/$name.err"
  status=$?
}

# Every answer wrong, whole and streamed: every question differs in every schedule after the one
# alone, and the gate names at most five questions of each kind.
hostile wrong || exit 1
for stream in "" --stream; do
  name=wrong${stream:+-stream}
  differential "$name" vllm 8 $stream
  [ $status -eq 1 ] || fail "$name: exit $status, not 1: $(cat "$work/$name.err")"
  "$python" - "$work/$name.json" "$stream" <<'PY' || fail "$name: the report"
import json, sys
report = json.load(open(sys.argv[1]))
streamed = sys.argv[2] == "--stream"
schedules = report["schedules"]
assert len(schedules) == (4 if streamed else 3), [s["schedule"]["name"] for s in schedules]
for s in schedules[1:]:
    assert s["questions"] == 8 and s["identical"] == 0, (s["schedule"]["name"], s["identical"])
    assert len(s["differences"]) <= 8, len(s["differences"])
    assert len(s["side_channels"]["findings"]) <= 8 * 4, len(s["side_channels"]["findings"])
reasons = report["gate"]["reasons"]
assert not report["gate"]["passed"] and 0 < len(reasons) <= 16, reasons
assert all(len(reason) < 1000 for reason in reasons), max(map(len, reasons))
PY
done

# Streams that break their protocols: each of the 4 questions fails in every streamed schedule,
# named.
check_broken_streams() {  # NAME API MESSAGE
  local name=$1 api=$2 message=$3
  differential "$name" "$api" 4 --stream
  [ $status -eq 1 ] || fail "$name: exit $status, not 1: $(cat "$work/$name.err")"
  "$python" - "$work/$name.json" "$message" <<'PY' || fail "$name: the report"
import json, sys
report, message = json.load(open(sys.argv[1])), sys.argv[2]
by_name = {s["schedule"]["name"]: s for s in report["schedules"]}
assert list(by_name) == ["alone", "stream-alone", "crowd-1", "crowd-2"], list(by_name)
assert by_name["alone"]["missing"] == 0, "answers whole are right"
for name, s in by_name.items():
    if name == "alone":
        continue
    assert s["missing"] == 4 and s["identical"] == 0, (name, s["missing"], s["identical"])
    notes = [d["note"] for d in s["differences"] if d["kind"] == "missing"]
    assert len(notes) == 4 and all(message in note for note in notes), (name, notes[:2])
PY
}
hostile shrinking || exit 1
check_broken_streams shrinking sglang "the answer so far, yet not the ids of the chunks before"
hostile malformed || exit 1
check_broken_streams malformed tgi "malformed tgi response: chunk 2: field '"
hostile endless || exit 1
start=$(date +%s)
check_broken_streams endless vllm "no complete response within 3 s (--timeout)"
elapsed=$(($(date +%s) - start))
# Three streamed schedules of 4 questions, 1 then 4 in flight, the last beside a filler that the
# server streams for ever too, each stream cut at 3 s: about 21 s.
[ $elapsed -lt 60 ] || fail "endless streams took $elapsed s"

finish "differential against hostile servers"
