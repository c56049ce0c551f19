#include "conformance/commands/tree_flags.h"

#include <string>

#include "impl/common/error.h"
#include "impl/decoding/tree_file.h"
#include "impl/model/config.h"

namespace specgate::cli {

void add_tree_flags(CLI::App& command, TreeFlags& flags) {
  command.add_option("--tree", flags.file,
                     "Draft (with --draft) and verify token trees of this shape: EAGLE's and Medusa's tree choices, "
                     "[[0], [1], [0, 0], ...], or {\"parents\": [-1, 0, ...]}");
  command.add_option("--tree-topk", flags.topk.topk,
                     "Draft EAGLE-2's dynamic trees instead, each level's K likeliest children (SGLang's "
                     "--speculative-eagle-topk)")
      ->check(CLI::Range(int64_t{1}, kMaxTreeWidth));
  command.add_option("--tree-depth", flags.topk.depth, "--tree-topk: levels grown (SGLang's --speculative-num-steps)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, kMaxTreeDepth));
  command.add_option("--tree-nodes", flags.topk.nodes,
                     "--tree-topk: nodes kept, the likeliest paths (SGLang's --speculative-num-draft-tokens less the root)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, kMaxTreeNodes));
}

namespace {

const char* given_flag(const CLI::App& command) { return command.count("--tree") > 0 ? "--tree" : "--tree-topk"; }

}  // namespace

std::optional<TreePolicy> tree_policy(const TreeFlags& flags, const CLI::App& command, const Drafting& drafting,
                                      const std::filesystem::path& draft) {
  const bool draft_given = !draft.empty();
  const bool file = command.count("--tree") > 0, topk = command.count("--tree-topk") > 0;
  if (!topk && command.count("--tree-depth") + command.count("--tree-nodes") > 0)
    throw InputError("--tree-depth and --tree-nodes shape --tree-topk's trees; give --tree-topk");
  if (!file && !topk) return std::nullopt;
  const std::string flag = given_flag(command);
  if (file && topk) throw InputError("--tree-topk: give a tree's shape (--tree) or grow it (--tree-topk), not both");
  if (drafting.ngram) throw InputError(flag + ": trees are drafted by a --draft model, not by --drafter ngram");
  if (!draft_given) throw InputError(flag + ": trees are drafted by a --draft model; give --draft DIR");
  if (file) {
    // Ranks name the draft's choices: read its vocabulary before the models are loaded.
    const int64_t vocabulary = read_model_config(draft / "config.json").vocab_size;
    TreeNodes nodes = read_tree_file(flags.file, "--tree " + flags.file.string(), vocabulary);
    return TreeShape(std::move(nodes.parents), std::move(nodes.ranks));
  }
  const TopkTree& t = flags.topk;
  if (t.nodes > t.topk * t.depth)
    throw InputError("--tree-nodes: " + std::to_string(t.nodes) + " nodes, but --tree-topk " + std::to_string(t.topk) +
                     " over --tree-depth " + std::to_string(t.depth) + " grows " + std::to_string(t.topk * t.depth));
  return t;
}

void check_tree_engine(const CLI::App& command, Engine engine) {
  if (engine != Engine::kEqspec && engine != Engine::kExspec && engine != Engine::kExspecAging)
    throw InputError(std::string(given_flag(command)) + ": trees are verified under --engine eqspec, exspec or exspec-aging");
  if (command.count("--draft-tokens") > 0) throw InputError("--draft-tokens: a tree's shape says what it drafts");
}

}  // namespace specgate::cli
