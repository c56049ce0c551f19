#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "impl/tokenizer/json_node.h"
#include "impl/tokenizer/regex.h"
#include "impl/tokenizer/text_piece.h"

namespace specgate {

// tokenizer.json's "pre_tokenizer": Split, ByteLevel, Metaspace, or a Sequence of them. It
// cuts the text into the words the model encodes one at a time.
class PreTokenizer {
 public:
  // Throws InputError naming the file and field for any other type or a malformed field.
  static PreTokenizer from_json(const JsonNode& json);

  // Replaces `pieces` by their pre-tokenized pieces; pieces holding an added token stay whole.
  void apply(std::vector<TextPiece>& pieces) const;

 private:
  struct Split {
    std::shared_ptr<const Regex> pattern;
    SplitBehavior behavior;
    bool invert;
  };
  struct ByteLevel {
    bool add_prefix_space;
    bool use_regex;
  };
  enum class PrependScheme { kAlways, kFirst, kNever };
  struct Metaspace {
    std::string replacement;
    std::shared_ptr<const Regex> replacement_pattern;
    PrependScheme prepend_scheme;
    bool split;
  };
  using Step = std::variant<Split, ByteLevel, Metaspace>;

  explicit PreTokenizer(std::vector<Step> steps) : steps_(std::move(steps)) {}
  static Step step_from_json(const JsonNode& json, const std::string& type);
  static void apply(const Step& step, const TextPiece& piece, std::vector<TextPiece>& out);

  std::vector<Step> steps_;
};

}  // namespace specgate
