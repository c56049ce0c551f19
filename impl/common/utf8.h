#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specgate {

// Appends the Unicode code points of UTF-8 `text` to `out`. Returns the byte offset of the
// first invalid sequence (truncated, overlong, a surrogate or above U+10FFFF), having
// appended the code points before it, or nullopt when all of `text` is valid.
std::optional<size_t> decode_utf8(std::string_view text, std::vector<int64_t>& out);

// The byte offset of the first invalid sequence of `text`, or nullopt when it is valid UTF-8.
std::optional<size_t> find_invalid_utf8(std::string_view text);

// Appends the UTF-8 encoding of `code_point` (at most U+10FFFF, not a surrogate) to `out`.
void append_utf8(int64_t code_point, std::string& out);

}  // namespace specgate
