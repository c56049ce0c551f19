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

// U+FFFD, which stands for bytes that are not UTF-8.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// `bytes` as valid UTF-8, each maximal invalid sequence replaced by U+FFFD, as the Rust
// library's from_utf8_lossy and the WHATWG decoder do.
std::string utf8_lossy(std::string_view bytes);

// How many bytes at the end of `bytes` begin a character that more bytes could complete: 0
// when it ends on a whole character or on bytes no continuation makes valid.
size_t utf8_unfinished_tail(std::string_view bytes);

// Appends the UTF-8 encoding of `code_point` (at most U+10FFFF, not a surrogate) to `out`.
void append_utf8(int64_t code_point, std::string& out);

}  // namespace specgate
