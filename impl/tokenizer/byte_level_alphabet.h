#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace specgate {

// GPT-2's byte-level alphabet: every byte written as one printable character (space is 'Ġ',
// newline 'Ċ'), so that byte-level BPE vocabularies hold only printable strings.

// `bytes` with each byte replaced by its character, as UTF-8.
std::string bytes_to_byte_level(std::string_view bytes);

// The bytes that `text` spells in that alphabet, or nullopt when it holds another character.
std::optional<std::string> byte_level_to_bytes(std::string_view text);

}  // namespace specgate
