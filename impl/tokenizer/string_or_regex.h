#pragma once

#include <memory>

#include "impl/tokenizer/json_node.h"
#include "impl/tokenizer/regex.h"

namespace specgate {

// A tokenizer.json "pattern": {"String": s} (matched literally) or {"Regex": r}. Throws
// InputError naming the field when it is neither or the regex does not compile.
std::shared_ptr<const Regex> string_or_regex(const JsonNode& pattern);

}  // namespace specgate
