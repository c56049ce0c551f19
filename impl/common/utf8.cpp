#include "impl/common/utf8.h"

namespace specgate {
namespace {

// The sequence length a lead byte announces and the smallest code point it may encode
// (anything smaller is an overlong form); 0 for bytes that cannot start a sequence.
struct Lead {
  int length;
  int64_t minimum;
  int64_t bits;
};

Lead lead_of(unsigned char byte) {
  if (byte < 0x80) return {1, 0, byte};
  if ((byte & 0xE0) == 0xC0) return {2, 0x80, byte & 0x1F};
  if ((byte & 0xF0) == 0xE0) return {3, 0x800, byte & 0x0F};
  if ((byte & 0xF8) == 0xF0) return {4, 0x10000, byte & 0x07};
  return {0, 0, 0};
}

// Calls `emit` with each code point of `text`; returns the offset of the first invalid sequence.
template <typename Emit>
std::optional<size_t> walk_utf8(std::string_view text, Emit emit) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      emit(byte);
      ++i;
      continue;
    }
    const Lead lead = lead_of(byte);
    if (lead.length == 0 || i + lead.length > text.size()) return i;
    int64_t code_point = lead.bits;
    for (int k = 1; k < lead.length; ++k) {
      const auto continuation = static_cast<unsigned char>(text[i + k]);
      if ((continuation & 0xC0) != 0x80) return i;
      code_point = (code_point << 6) | (continuation & 0x3F);
    }
    const bool surrogate = code_point >= 0xD800 && code_point <= 0xDFFF;
    if (code_point < lead.minimum || code_point > 0x10FFFF || surrogate) return i;
    emit(code_point);
    i += lead.length;
  }
  return std::nullopt;
}

}  // namespace

std::optional<size_t> decode_utf8(std::string_view text, std::vector<int64_t>& out) {
  return walk_utf8(text, [&out](int64_t code_point) { out.push_back(code_point); });
}

std::optional<size_t> find_invalid_utf8(std::string_view text) {
  return walk_utf8(text, [](int64_t) {});
}

void append_utf8(int64_t code_point, std::string& out) {
  const auto put = [&out](int64_t bits) { out.push_back(static_cast<char>(bits)); };
  if (code_point < 0x80) {
    put(code_point);
  } else if (code_point < 0x800) {
    put(0xC0 | (code_point >> 6));
    put(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    put(0xE0 | (code_point >> 12));
    put(0x80 | ((code_point >> 6) & 0x3F));
    put(0x80 | (code_point & 0x3F));
  } else {
    put(0xF0 | (code_point >> 18));
    put(0x80 | ((code_point >> 12) & 0x3F));
    put(0x80 | ((code_point >> 6) & 0x3F));
    put(0x80 | (code_point & 0x3F));
  }
}

}  // namespace specgate
