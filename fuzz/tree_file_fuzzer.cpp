// Fuzz target: a --tree file, read as generate, bench and serve read it, for a draft of 259 tokens
// (the fixture pair's) and of 3 (where ranks and widths run out first).
#include <cstddef>
#include <cstdint>
#include <string>

#include "impl/common/error.h"
#include "impl/common/json_value.h"
#include "impl/decoding/tree_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specgate;
  JsonFile file{"--tree fuzz.json", std::string(reinterpret_cast<const char*>(data), size), nullptr};
  JsonError error;
  std::optional<nlohmann::json> parsed = parse_json(file.text, error);
  if (!parsed) return 0;
  file.value = std::move(*parsed);
  for (const int64_t vocabulary : {259, 3}) {
    try {
      const TreeNodes tree = parse_tree_file(file, vocabulary);
      if (tree.parents.empty() || tree.parents.size() != tree.ranks.size() || static_cast<int64_t>(tree.parents.size()) > kMaxTreeNodes)
        __builtin_trap();
    } catch (const InputError&) {
    }
  }
  return 0;
}
