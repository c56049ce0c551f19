#include "impl/decoding/tree_file.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"

namespace specgate {
namespace {

using nlohmann::json;

// Errors about one tree file, naming the line of the field where the text gives it.
class TreeErrors {
 public:
  explicit TreeErrors(const JsonFile& file) : file_(file) {}

  // `path`: the keys and indices down to the value, as field_message() takes them.
  [[noreturn]] void fail(const std::vector<std::string>& path, const std::string& what) const {
    std::string name;
    for (const std::string& step : path) {
      const bool index = !step.empty() && step.front() >= '0' && step.front() <= '9';
      name += index ? "[" + step + "]" : step;
    }
    throw InputError(field_message(file_.name, file_.text, path, name, what));
  }
  [[noreturn]] void fail(const std::string& what) const { throw InputError(file_.name + ": " + what); }

 private:
  const JsonFile& file_;
};

std::string vocabulary_range(int64_t vocabulary) {
  return "a rank in [0, " + std::to_string(vocabulary - 1) + "] (the draft's vocabulary has " + std::to_string(vocabulary) +
         " tokens)";
}

// The integers of `value`, a list, each in [low, high] (`expected` says what that is).
std::vector<int64_t> integers(const json& value, std::vector<std::string> path, int64_t low, int64_t high,
                              const std::string& expected, const TreeErrors& errors) {
  if (!value.is_array()) errors.fail(path, "expected a list of integers, got " + describe_json(value));
  std::vector<int64_t> out;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::optional<int64_t> integer = json_integer(value[i], low, high);
    if (!integer) {
      path.push_back(std::to_string(i));
      errors.fail(path, integer_problem(value[i], low, high, expected));
    }
    out.push_back(*integer);
  }
  return out;
}

void check_node_count(size_t nodes, const TreeErrors& errors) {
  if (nodes == 0) errors.fail("the tree has no node: a round would draft nothing (give at least one node)");
  if (static_cast<int64_t>(nodes) > kMaxTreeNodes)
    errors.fail(std::to_string(nodes) + " nodes, more than the " + std::to_string(kMaxTreeNodes) +
                " a tree may have (as --tree-nodes)");
}

// EAGLE's and Medusa's choices: each node's path of ranks, after its parent's.
TreeNodes from_choices(const json& choices, int64_t vocabulary, const TreeErrors& errors) {
  check_node_count(choices.size(), errors);
  TreeNodes tree;
  std::map<std::vector<int64_t>, int64_t> node_of;  // by path
  for (size_t node = 0; node < choices.size(); ++node) {
    const std::string index = std::to_string(node);
    const json& choice = choices[node];
    if (choice.is_array() && static_cast<int64_t>(choice.size()) > kMaxTreeDepth)
      errors.fail({index}, "a path of " + std::to_string(choice.size()) + " ranks, deeper than the " +
                                   std::to_string(kMaxTreeDepth) + " levels a tree may have (as --tree-depth)");
    const std::vector<int64_t> path = integers(choice, {index}, 0, vocabulary - 1, vocabulary_range(vocabulary), errors);
    if (path.empty()) errors.fail({index}, "an empty path: the root is not a choice");
    int64_t parent = -1;
    if (path.size() > 1) {
      const auto found = node_of.find(std::vector<int64_t>(path.begin(), path.end() - 1));
      if (found == node_of.end()) errors.fail({index}, "its parent's path is not an earlier choice");
      parent = found->second;
    }
    if (!node_of.emplace(path, static_cast<int64_t>(node)).second) errors.fail({index}, "the path of an earlier choice");
    tree.parents.push_back(parent);
    tree.ranks.push_back(path.back());
  }
  return tree;
}

// {"parents": [...], "ranks": [...]}.
TreeNodes from_parents(const json& file, int64_t vocabulary, const TreeErrors& errors) {
  for (const auto& [key, value] : file.items()) {
    if (key != "parents" && key != "ranks") errors.fail(std::vector<std::string>{key}, "not a field of a tree");
  }
  const json& parents = file["parents"];
  if (parents.is_array()) check_node_count(parents.size(), errors);
  TreeNodes tree;
  tree.parents = integers(parents, {"parents"}, -1, kMaxTreeNodes - 1, "-1 (the root) or an earlier node", errors);
  for (size_t node = 0; node < tree.parents.size(); ++node) {
    if (tree.parents[node] >= static_cast<int64_t>(node))
      errors.fail(std::vector<std::string>{"parents", std::to_string(node)},
                  "node " + std::to_string(node) + "'s parent " + std::to_string(tree.parents[node]) +
                      " is neither -1 (the root) nor an earlier node");
  }
  if (file.contains("ranks")) {
    tree.ranks = integers(file["ranks"], {"ranks"}, 0, vocabulary - 1, vocabulary_range(vocabulary), errors);
    if (tree.ranks.size() != tree.parents.size())
      errors.fail(std::vector<std::string>{"ranks"},
                  std::to_string(tree.ranks.size()) + " ranks for " + std::to_string(tree.parents.size()) + " nodes");
  } else {
    std::vector<int64_t> children(tree.parents.size() + 1, 0);
    for (const int64_t parent : tree.parents) {
      const int64_t rank = children[parent + 1]++;
      if (rank >= vocabulary)
        errors.fail(std::vector<std::string>{"parents"},
                    "a node of rank " + std::to_string(rank) + ", not " + vocabulary_range(vocabulary));
      tree.ranks.push_back(rank);
    }
  }
  return tree;
}

// Depth, width and ranks: each within the limits, no two siblings of one rank.
void check_shape(const TreeNodes& tree, bool choices, const TreeErrors& errors) {
  std::vector<int64_t> depth;
  std::vector<std::vector<int64_t>> children(tree.parents.size() + 1);  // [0]: the root's
  for (size_t node = 0; node < tree.parents.size(); ++node) {
    const int64_t parent = tree.parents[node];
    const std::vector<std::string> field =
        choices ? std::vector<std::string>{std::to_string(node)} : std::vector<std::string>{"parents", std::to_string(node)};
    depth.push_back(parent < 0 ? 1 : depth[parent] + 1);
    if (depth.back() > kMaxTreeDepth)
      errors.fail(field, "node " + std::to_string(node) + " at depth " + std::to_string(depth.back()) + ", deeper than the " +
                             std::to_string(kMaxTreeDepth) + " levels a tree may have (as --tree-depth)");
    std::vector<int64_t>& siblings = children[parent + 1];
    if (static_cast<int64_t>(siblings.size()) == kMaxTreeWidth)
      errors.fail(field, "node " + std::to_string(node) + " is child " + std::to_string(kMaxTreeWidth + 1) +
                             " of its parent, more than the " + std::to_string(kMaxTreeWidth) +
                             " children a node may have (as --tree-topk)");
    const int64_t rank = tree.ranks[node];
    if (std::any_of(siblings.begin(), siblings.end(), [&](int64_t sibling) { return tree.ranks[sibling] == rank; }))
      errors.fail(choices ? field : std::vector<std::string>{"ranks", std::to_string(node)},
                  "node " + std::to_string(node) + "'s rank " + std::to_string(rank) + " is a sibling's");
    siblings.push_back(static_cast<int64_t>(node));
  }
}

}  // namespace

TreeNodes parse_tree_file(const JsonFile& file, int64_t vocabulary) {
  const TreeErrors errors(file);
  const json& value = file.value;
  if (value.is_array()) {
    TreeNodes tree = from_choices(value, vocabulary, errors);
    check_shape(tree, /*choices=*/true, errors);
    return tree;
  }
  if (!value.is_object() || !value.contains("parents"))
    errors.fail("expected a list of tree choices or an object with 'parents', got " + describe_json(value));
  TreeNodes tree = from_parents(value, vocabulary, errors);
  check_shape(tree, /*choices=*/false, errors);
  return tree;
}

TreeNodes read_tree_file(const std::filesystem::path& path, const std::string& name, int64_t vocabulary) {
  return parse_tree_file(read_json_file(path, name), vocabulary);
}

}  // namespace specgate
