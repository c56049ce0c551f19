# Shared by the CLI test scripts, which source it after setting $conformance: a scratch folder
# $work removed on exit, failure counting, the bad-input check, and the final verdict.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Runs the CLI with the arguments after the first; fails unless it exits 2 with one line on
# stderr that contains the first argument.
expect_usage_error() {
  local fragment=$1
  shift
  "$conformance" "$@" >"$work/stdout" 2>"$work/stderr"
  local status=$?
  [ $status -eq 2 ] || fail "exit $status, not 2, for: $*"
  [ "$(wc -l <"$work/stderr")" -eq 1 ] || fail "not one line on stderr for: $*"
  grep -qF -- "$fragment" "$work/stderr" || fail "stderr lacks '$fragment' for: $* ($(cat "$work/stderr"))"
}

# expect_usage_error with the arguments after the first, which also fails when the output file
# $1 exists afterwards (bad input leaves no partial output).
expect_input_error() {
  local output=$1
  shift
  rm -f "$output"
  expect_usage_error "$@"
  [ ! -e "$output" ] || fail "$output was left behind by: ${*:2}"
}

# Exits 1 when a check failed; $1 names the checks.
finish() {
  if [ $failures -gt 0 ]; then
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "all $1 checks passed"
}
