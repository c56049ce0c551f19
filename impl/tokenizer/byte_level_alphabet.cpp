#include "impl/tokenizer/byte_level_alphabet.h"

#include <array>
#include <vector>

#include "impl/common/utf8.h"

namespace specgate {
namespace {

struct Alphabet {
  std::array<std::string, 256> char_of_byte;
  std::array<int, 512> byte_of_char;  // -1 where the code point is not in the alphabet

  Alphabet() {
    byte_of_char.fill(-1);
    int shifted = 0;
    for (int byte = 0; byte < 256; ++byte) {
      const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
      const int code_point = printable ? byte : 256 + shifted++;
      append_utf8(code_point, char_of_byte[byte]);
      byte_of_char[code_point] = byte;
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet instance;
  return instance;
}

}  // namespace

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string text;
  text.reserve(bytes.size() * 2);
  for (unsigned char byte : bytes) text += alphabet().char_of_byte[byte];
  return text;
}

std::optional<std::string> byte_level_to_bytes(std::string_view text) {
  std::vector<int64_t> code_points;
  if (decode_utf8(text, code_points)) return std::nullopt;
  std::string bytes;
  for (int64_t code_point : code_points) {
    if (code_point >= 512 || alphabet().byte_of_char[code_point] < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(alphabet().byte_of_char[code_point]));
  }
  return bytes;
}

}  // namespace specgate
