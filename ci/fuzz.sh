#!/usr/bin/env bash
# Fuzzing session: runs the decode properties with fresh RapidCheck seeds for MINUTES (default
# 10). Each failure's shrunk counterexample is written under fixtures/regressions/, where
# ctest replays it. Extra RapidCheck settings come from RC_PARAMS (e.g. max_success=500);
# FUZZ_BUILD_DIR names the build folder (default build/, built by ci/setup.sh when missing).
# Exits 1 when any property failed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
minutes="${1:-10}"
[[ "$minutes" =~ ^[0-9]+$ && "$minutes" -gt 0 ]] || { echo "usage: ci/fuzz.sh [MINUTES]" >&2; exit 2; }
build="${FUZZ_BUILD_DIR:-$root/build}"
[ -x "$build/bin/property_tests" ] || source "$root/ci/setup.sh"

deadline=$((SECONDS + minutes * 60))
sessions=0
failures=0
while [ "$SECONDS" -lt "$deadline" ]; do
  seed="$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"
  echo "fuzz: seed=$seed ($(( (deadline - SECONDS + 59) / 60 )) min left)"
  status=0
  RC_PARAMS="max_success=200 ${RC_PARAMS:-} seed=$seed" SPECGATE_REGRESSION_DIR="$root/fixtures/regressions" \
    timeout --foreground $((deadline - SECONDS + 1)) "$build/bin/property_tests" \
    --gtest_filter='DecodeProperties.*-DecodeProperties.EachPropertyCatchesTheFaultItTargets' --gtest_brief=1 || status=$?
  sessions=$((sessions + 1))
  case "$status" in
    0 | 124) ;;
    *) failures=$((failures + 1)) ;;
  esac
done
echo "fuzz: $sessions sessions, $failures with failures"
[ "$failures" -eq 0 ]
