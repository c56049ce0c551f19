#include "impl/tokenizer/pre_tokenizer.h"

#include "impl/tokenizer/byte_level_alphabet.h"
#include "impl/tokenizer/component_sequence.h"
#include "impl/tokenizer/string_or_regex.h"

namespace specgate {
namespace {

// The split GPT-2 makes before byte-level BPE, used by ByteLevel with "use_regex": true.
const Regex& gpt2_words() {
  static const Regex regex(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
                           "the GPT-2 split of the ByteLevel pre-tokenizer");
  return regex;
}

SplitBehavior behavior_from_json(const JsonNode& json) {
  const std::string name = json.string();
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  json.fail("unknown behavior '" + name + "'");
}

std::string replace_spaces(const std::string& text, const std::string& replacement) {
  std::string out;
  for (char c : text) {
    if (c == ' ') out += replacement;
    else out.push_back(c);
  }
  return out;
}

}  // namespace

PreTokenizer PreTokenizer::from_json(const JsonNode& json) { return PreTokenizer(component_steps(json, "pretokenizers", step_from_json)); }

PreTokenizer::Step PreTokenizer::step_from_json(const JsonNode& json, const std::string& type) {
  if (type == "Split")
    return Split{string_or_regex(json["pattern"]), behavior_from_json(json["behavior"]), json.boolean_or("invert", false)};
  if (type == "ByteLevel") return ByteLevel{json.boolean_or("add_prefix_space", true), json.boolean_or("use_regex", true)};
  if (type == "Metaspace") {
    // Files older than "prepend_scheme" say "add_prefix_space" instead.
    PrependScheme scheme = json.boolean_or("add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
    if (const std::optional<JsonNode> field = json.find("prepend_scheme")) {
      const std::string name = field->string();
      if (name == "always") scheme = PrependScheme::kAlways;
      else if (name == "first") scheme = PrependScheme::kFirst;
      else if (name == "never") scheme = PrependScheme::kNever;
      else field->fail("unknown prepend_scheme '" + name + "'");
      if (!json.boolean_or("add_prefix_space", true) && scheme != PrependScheme::kNever)
        field->fail("contradicts add_prefix_space false");
    }
    const JsonNode replacement_json = json["replacement"];
    const std::string replacement = replacement_json.character();
    return Metaspace{replacement, std::make_shared<const Regex>(Regex::escape(replacement), replacement_json.field_name()),
                     scheme, json.boolean_or("split", true)};
  }
  json.unsupported(type);
}

void PreTokenizer::apply(const Step& step, const TextPiece& piece, std::vector<TextPiece>& out) {
  if (const auto* split = std::get_if<Split>(&step)) {
    split_piece(piece, split->pattern->find_all(piece.text), split->behavior, split->invert, out);
  } else if (const auto* byte_level = std::get_if<ByteLevel>(&step)) {
    TextPiece prefixed = piece;
    if (byte_level->add_prefix_space && prefixed.text.front() != ' ') prefixed.text = " " + prefixed.text;
    const size_t first = out.size();
    if (byte_level->use_regex)
      split_piece(prefixed, gpt2_words().find_all(prefixed.text), SplitBehavior::kIsolated, false, out);
    else
      out.push_back(std::move(prefixed));
    for (size_t i = first; i < out.size(); ++i) out[i].text = bytes_to_byte_level(out[i].text);
  } else {
    const auto& metaspace = std::get<Metaspace>(step);
    TextPiece replaced = piece;
    replaced.text = replace_spaces(piece.text, metaspace.replacement);
    const bool starts_with_replacement = replaced.text.starts_with(metaspace.replacement);
    if (!starts_with_replacement && (metaspace.prepend_scheme == PrependScheme::kAlways ||
                                     (metaspace.prepend_scheme == PrependScheme::kFirst && piece.at_text_start)))
      replaced.text = metaspace.replacement + replaced.text;
    if (!metaspace.split) {
      out.push_back(std::move(replaced));
      return;
    }
    split_piece(replaced, metaspace.replacement_pattern->find_all(replaced.text),
                SplitBehavior::kMergedWithNext, false, out);
  }
}

void PreTokenizer::apply(std::vector<TextPiece>& pieces) const {
  for (const Step& step : steps_) {
    std::vector<TextPiece> next;
    next.reserve(pieces.size());
    for (const TextPiece& piece : pieces) {
      if (piece.added_token) next.push_back(piece);
      else apply(step, piece, next);
    }
    pieces = std::move(next);
  }
}

}  // namespace specgate
