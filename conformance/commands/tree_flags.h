#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include <CLI/CLI.hpp>

#include "conformance/engines/drafting.h"
#include "conformance/engines/engine.h"
#include "impl/decoding/tree_drafter.h"

namespace specgate::cli {

// --tree FILE, or --tree-topk K with --tree-depth and --tree-nodes: the token trees an eqspec or
// exspec engine with a draft model drafts and verifies (generate, serve, bench).
struct TreeFlags {
  std::filesystem::path file;
  TopkTree topk{.topk = 0, .depth = 4, .nodes = 8};
};

void add_tree_flags(CLI::App& command, TreeFlags& flags);

// The trees the flags name, if any. InputError when --tree-depth or --tree-nodes comes without
// --tree-topk, or --tree with it; when they are given without --draft or with --drafter ngram;
// when --tree-nodes exceeds what topk x depth grows; or when FILE is not a tree within the limits
// of the flags (impl/decoding/tree_file.h) whose ranks are tokens of the `draft` model's
// vocabulary (naming the file and the field).
std::optional<TreePolicy> tree_policy(const TreeFlags& flags, const CLI::App& command, const Drafting& drafting,
                                      const std::filesystem::path& draft);

// InputError when the trees are given to an engine other than eqspec, exspec and exspec-aging,
// or with --draft-tokens, which a tree's shape says.
void check_tree_engine(const CLI::App& command, Engine engine);

}  // namespace specgate::cli
