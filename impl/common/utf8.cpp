#include "impl/common/utf8.h"

#include <algorithm>

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

// The length of the sequence `lead` announces (0 for a byte no valid sequence starts with), and
// the bytes of it at `at` that are right so far, as far as `bytes` goes.
struct Sequence {
  size_t length = 0;
  size_t valid = 1;
};

Sequence sequence_at(std::string_view bytes, size_t at) {
  const auto lead = static_cast<unsigned char>(bytes[at]);
  Sequence sequence;
  unsigned char low = 0x80, high = 0xBF;  // the range of its second byte
  if (lead >= 0xC2 && lead <= 0xDF) sequence.length = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) sequence.length = 3, low = lead == 0xE0 ? 0xA0 : 0x80, high = lead == 0xED ? 0x9F : 0xBF;
  else if (lead >= 0xF0 && lead <= 0xF4) sequence.length = 4, low = lead == 0xF0 ? 0x90 : 0x80, high = lead == 0xF4 ? 0x8F : 0xBF;
  while (sequence.length > 0 && sequence.valid < sequence.length && at + sequence.valid < bytes.size()) {
    const auto byte = static_cast<unsigned char>(bytes[at + sequence.valid]);
    if (byte < (sequence.valid == 1 ? low : 0x80) || byte > (sequence.valid == 1 ? high : 0xBF)) break;
    ++sequence.valid;
  }
  return sequence;
}

}  // namespace

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t at = 0; at < bytes.size();) {
    if (static_cast<unsigned char>(bytes[at]) < 0x80) {
      out.push_back(bytes[at++]);
      continue;
    }
    const Sequence sequence = sequence_at(bytes, at);
    if (sequence.valid == sequence.length) out.append(bytes.substr(at, sequence.length));
    else out.append(kReplacementCharacter);
    at += sequence.valid;
  }
  return out;
}

size_t utf8_unfinished_tail(std::string_view bytes) {
  for (size_t back = 1; back <= std::min<size_t>(3, bytes.size()); ++back) {
    const size_t at = bytes.size() - back;
    if ((static_cast<unsigned char>(bytes[at]) & 0xC0) == 0x80) continue;  // a continuation byte
    const Sequence sequence = sequence_at(bytes, at);
    return sequence.length > back && sequence.valid == back ? back : 0;
  }
  return 0;
}

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
