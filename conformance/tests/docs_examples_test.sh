#!/usr/bin/env bash
# The manual cannot rot: every command block of README.md and docs/*.md fenced as ```sh runnable
# runs, each in a folder of its own, with B the program, T and D the fixture pair's target and
# draft, Q the sample bench and PORT a free port, and must exit 0. A block that fails is named
# by its file and line, with the end of its output.
set -uo pipefail
conformance=$(realpath "$1") fixtures=$(realpath "$2") bench=$(realpath "$3") root=$(realpath "$4")
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"
python=/usr/bin/python3
[ -x "$python" ] || python=python3

"$python" - "$root" "$work/blocks" <<'PY' || fail "extracting the runnable blocks"
import glob, os, sys
root, out = sys.argv[1:3]
os.makedirs(out)
pages = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
count = 0
for page in pages:
    block, start = None, 0
    for number, line in enumerate(open(page, encoding="utf-8"), 1):
        if block is None and line.strip() == "```sh runnable":
            block, start = [], number
        elif block is not None and line.strip() == "```":
            count += 1
            name = f"{count:03d}"
            open(f"{out}/{name}.sh", "w").write("".join(block))
            open(f"{out}/{name}.where", "w").write(f"{os.path.relpath(page, root)}:{start}")
            block = None
        elif block is not None:
            block.append(line)
    if block is not None:
        sys.exit(f"{page}:{start}: a runnable block is never closed")
print(count)
PY
blocks=$(ls "$work/blocks"/*.sh 2>/dev/null | wc -l)
[ "$blocks" -ge 1 ] || fail "no runnable block in README.md or docs/"

free_port() { "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
for script in "$work/blocks"/*.sh; do
  name=$(basename "$script" .sh)
  where=$(cat "$work/blocks/$name.where")
  mkdir -p "$work/run-$name"
  # Each block in a process group of its own (job control), so that a server it leaves behind
  # is stopped with it.
  set -m
  (cd "$work/run-$name" && B="$conformance" T="$fixtures/target" D="$fixtures/draft" Q="$bench" PORT=$(free_port) \
    timeout --foreground 120 bash -eo pipefail "$script") >"$work/$name.log" 2>&1 &
  pid=$!
  wait $pid
  status=$?
  kill -- -$pid 2>/dev/null
  set +m
  [ $status -eq 0 ] || fail "$where: the block exited $status: $(tail -5 "$work/$name.log")"
done
echo "$blocks runnable blocks run"

finish "docs examples"
