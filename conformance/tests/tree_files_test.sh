#!/usr/bin/env bash
# Hostile --tree files on the fixture pair (a 259-token vocabulary): each is refused at once
# with exit 2 and one line naming the file, and where it is known the line and the field, and
# the limit it breaks (--tree-nodes' 512 nodes, --tree-depth's 32 levels, --tree-topk's 64
# children of a node, a rank below the draft's vocabulary, 64 MiB, 512 levels of JSON nesting),
# by generate, bench and serve alike; no file makes them crash, hang or run out of memory.
set -uo pipefail
conformance_program=$1 fixtures=$2 bench=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"
# Every run is bounded: one that hangs exits 124 and fails the check; one that would allocate
# without bound is stopped by a 4 GB address-space cap and exits 3, which fails it too (not under
# AddressSanitizer, whose shadow memory takes more address space than that).
conformance="$work/conformance"
cap="ulimit -v 4000000"
ldd "$conformance_program" 2>/dev/null | grep -q libasan && cap=":"
printf '#!/bin/sh\n%s\nexec timeout 60 "%s" "$@"\n' "$cap" "$conformance_program" >"$conformance"
chmod +x "$conformance"

out="$work/out.jsonl"
pair=(--target "$fixtures/target" --draft "$fixtures/draft")
generate=(generate --engine eqspec "${pair[@]}" --bench "$bench" --limit 1 --max-new-tokens 4 --out "$out")
tree() { printf '%s\n' "$2" >"$work/$1.json"; }
refused() {  # FILE FRAGMENT: generate refuses --tree FILE with FRAGMENT, leaving no output
  expect_input_error "$out" "--tree $work/$1$2" "${generate[@]}" --tree "$work/$1"
}

# 100,000 levels of nested lists: refused before parsing, not a stack overflow.
python3 -c 'print("[" * 100000 + "]" * 100000)' >"$work/nested.json"
refused nested.json ": not valid JSON at line 1, column 513: lists and objects nested deeper than 512 levels"
# Not a regular file: a folder, and a FIFO no one writes to (which must not be waited on).
mkdir "$work/folder.json"
refused folder.json ": not a regular file (a folder)"
mkfifo "$work/fifo.json"
refused fifo.json ": not a regular file (a FIFO)"
# Larger than any JSON file may be.
python3 -c 'import sys; sys.stdout.write("[[0]" + ", [0]" * (70 * 2**20 // 5) + "]")' >"$work/huge.json"
refused huge.json ": $(stat -c %s "$work/huge.json") bytes, more than the 64 MiB a JSON file may be"
# No node: a round would draft nothing.
tree empty '[]'
refused empty.json ": the tree has no node"
tree empty-parents '{"parents": []}'
refused empty-parents.json ": the tree has no node"

# The flags' limits: 512 nodes, 32 levels, 64 children of a node.
tree nodes "{\"parents\": [$(python3 -c 'print(", ".join(["-1"] * 9 + [str(j // 64) for j in range(504)]))')]}"
refused nodes.json ": 513 nodes, more than the 512 a tree may have (as --tree-nodes)"
tree chain "{\"parents\": [$(python3 -c 'print(", ".join(str(i - 1) for i in range(100000)))')]}"
refused chain.json ": 100000 nodes, more than the 512 a tree may have"
tree deep "{\"parents\": [$(python3 -c 'print(", ".join(str(i - 1) for i in range(33)))')]}"
refused deep.json ":1: field 'parents[32]': node 32 at depth 33, deeper than the 32 levels a tree may have (as --tree-depth)"
tree deep-choices "[$(python3 -c 'print(", ".join(str([0] * d) for d in range(1, 34)))')]"
refused deep-choices.json ":1: field '[32]': a path of 33 ranks, deeper than the 32 levels a tree may have"
tree wide "{\"parents\": [$(python3 -c 'print(", ".join(["-1"] * 65))')]}"
refused wide.json ":1: field 'parents[64]': node 64 is child 65 of its parent, more than the 64 children a node may have (as --tree-topk)"
# Ranks name the draft's choices: one at or past its vocabulary of 259 tokens.
tree rank '[[300]]'
refused rank.json ":1: field '[0][0]': expected a rank in [0, 258] (the draft's vocabulary has 259 tokens), got number 300"
tree rank-edge '[[0], [259]]'
refused rank-edge.json ":1: field '[1][0]': expected a rank in [0, 258]"
tree ranks '{"parents": [-1, 0], "ranks": [0, 259]}'
refused ranks.json ":1: field 'ranks[1]': expected a rank in [0, 258]"
# Still a tree's own errors, with the line of the field.
printf '[[0],\n [1, 1]]\n' >"$work/orphan.json"
refused orphan.json ":2: field '[1]': its parent's path is not an earlier choice"
tree twins '{"parents": [-1, -1], "ranks": [3, 3]}'
refused twins.json ":1: field 'ranks[1]': node 1's rank 3 is a sibling's"

# bench and serve read the same file the same way, serve before it listens.
expect_input_error "$work/bench.json" "--tree $work/rank.json:1: field '[0][0]': expected a rank in [0, 258]" \
  bench "${pair[@]}" --bench "$bench" --tree "$work/rank.json" --batch-sizes 1 --json "$work/bench.json"
expect_usage_error "--tree $work/fifo.json: not a regular file (a FIFO)" \
  bench "${pair[@]}" --bench "$bench" --tree "$work/fifo.json" --batch-sizes 1 --json "$work/bench.json"
for file in rank.json nested.json fifo.json deep.json; do
  expect_usage_error "--tree $work/$file" serve --engine eqspec "${pair[@]}" --tree "$work/$file" --port 0
done

# The largest tree the limits allow decodes, within the address-space cap, the oracle's tokens.
"$conformance" generate --engine oracle "${pair[@]:0:2}" --bench "$bench" --limit 1 --max-new-tokens 4 \
  --out "$work/oracle.jsonl" >/dev/null || fail "oracle run"
tree largest "{\"parents\": [$(python3 -c 'print(", ".join(["-1"] * 64 + [str(j // 64) for j in range(448)]))')]}"
"$conformance" "${generate[@]}" --tree "$work/largest.json" >/dev/null 2>"$work/largest.err" ||
  fail "the largest tree allowed: $(tail -1 "$work/largest.err")"
token_ids() { grep -o '"token_ids":\[\(\[[0-9,]*\],\?\)*\]' "$1"; }
[ "$(token_ids "$out")" = "$(token_ids "$work/oracle.jsonl")" ] || fail "the largest tree allowed differs from the oracle"

finish "tree files"
