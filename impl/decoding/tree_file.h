#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "impl/common/json_value.h"

namespace specgate {

// The largest tree a round verifies, as --tree-nodes, --tree-depth and --tree-topk bound the
// trees they grow: at most kMaxTreeNodes nodes, kMaxTreeDepth levels below the root and
// kMaxTreeWidth children of one node. A round of B rows then adds at most B x (kMaxTreeNodes + 1)
// positions to one target pass and kMaxTreeNodes slots to each row's cache.
inline constexpr int64_t kMaxTreeNodes = 512;
inline constexpr int64_t kMaxTreeDepth = 32;
inline constexpr int64_t kMaxTreeWidth = 64;

// A tree read from a user's file: node i's parent (-1: the root) and its rank among the draft's
// choices after its parent, as TreeShape takes them.
struct TreeNodes {
  std::vector<int64_t> parents, ranks;
};

// A tree shape file: EAGLE's and Medusa's tree choices, a JSON list of paths of ranks
// ([[0], [1], [0, 0], ...]), or {"parents": [-1, 0, ...]} with optional "ranks" (by default a
// node's place among its siblings). Read through read_json_file (a regular file of at most 64
// MiB, nested at most kMaxJsonNesting levels); throws InputError naming `name` (the flag and the
// file), the line and the field for anything else: no node, a parent that is not an earlier node,
// a choice whose parent's path is no earlier choice, two siblings of one rank, a rank outside a
// vocabulary of `vocabulary` tokens, or a tree beyond kMaxTreeNodes, kMaxTreeDepth or
// kMaxTreeWidth.
TreeNodes read_tree_file(const std::filesystem::path& path, const std::string& name, int64_t vocabulary);
// The same for a file already read.
TreeNodes parse_tree_file(const JsonFile& file, int64_t vocabulary);

}  // namespace specgate
