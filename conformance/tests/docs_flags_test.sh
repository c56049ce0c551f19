#!/usr/bin/env bash
# The manual and the program agree: every command `conformance --help` lists has its page,
# docs/COMMAND.md, and every flag `conformance COMMAND --help` prints appears on that page in
# backticks. And every relative link of README.md and docs/*.md names a file that exists; a link
# into ../shared, beside the checkout, is looked for in SHARED (the build's SPECGATE_SHARED_DIR).
set -uo pipefail
conformance=$1 docs=$2 shared=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"

commands=$("$conformance" --help | sed -n '/^Subcommands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
[ "$(echo "$commands" | wc -w)" -ge 12 ] || fail "conformance --help lists only: $commands"
for command in $commands; do
  page="$docs/$command.md"
  if [ ! -f "$page" ]; then
    fail "$command: no page $page"
    continue
  fi
  flags=$("$conformance" "$command" --help | sed -n 's/^  \(-[a-zA-Z],\)\{0,1\}\(--[a-z0-9-]*\).*/\2/p' | grep -vx -- --help)
  [ -n "$flags" ] || fail "$command --help prints no flag"
  for flag in $flags; do
    grep -qF -- "\`$flag\`" "$page" || fail "$command: $flag is printed by --help but not documented in $page"
  done
done

"${PYTHON:-python3}" - "$docs" "$shared" <<'PY' || fail "links to missing files"
import glob, os, re, sys
docs, shared = sys.argv[1:3]
beside = os.path.normpath(os.path.join(docs, "..", "..", "shared"))
pages = [os.path.join(docs, "..", "README.md")] + sorted(glob.glob(os.path.join(docs, "*.md")))
missing = []
for page in pages:
    for number, line in enumerate(open(page, encoding="utf-8"), 1):
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = os.path.normpath(os.path.join(os.path.dirname(page), target.split("#")[0]))
            if os.path.commonpath([path, beside]) == beside:
                path = os.path.join(shared, os.path.relpath(path, beside))
            if not os.path.exists(path):
                missing.append(f"{os.path.relpath(page, os.path.join(docs, '..'))}:{number}: {target}")
for m in missing:
    print("  " + m)
sys.exit(1 if missing else 0)
PY

finish "docs flags and links"
