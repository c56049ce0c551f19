#include "impl/reports/markup.h"

#include <vector>

#include "impl/common/utf8.h"

namespace specgate {
namespace {

constexpr int64_t kReplacement = 0xFFFD;

void append_escaped(int64_t code_point, std::string& out) {
  switch (code_point) {
    case '&': out += "&amp;"; return;
    case '<': out += "&lt;"; return;
    case '>': out += "&gt;"; return;
    case '"': out += "&quot;"; return;
    case '\'': out += "&#39;"; return;
    default: break;
  }
  const bool forbidden = (code_point < 0x20 && code_point != '\t' && code_point != '\n' && code_point != '\r') ||
                         code_point == 0xFFFE || code_point == 0xFFFF;
  append_utf8(forbidden ? kReplacement : code_point, out);
}

}  // namespace

std::string escape_markup(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::vector<int64_t> code_points;
  while (!text.empty()) {
    code_points.clear();
    const std::optional<size_t> bad = decode_utf8(text, code_points);
    for (int64_t code_point : code_points) append_escaped(code_point, out);
    if (!bad) break;
    append_utf8(kReplacement, out);
    text.remove_prefix(*bad + 1);
  }
  return out;
}

}  // namespace specgate
