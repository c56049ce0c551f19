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

std::string html_report_start(std::string_view tool, std::string_view verdict, bool passed) {
  const std::string title = escape_markup(tool) + ": " + escape_markup(verdict);
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + title + "</title><style>"
         "body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1000px;color:#222}"
         "table{border-collapse:collapse;font-size:13px}th,td{padding:5px 8px;border-bottom:1px solid #ddd;text-align:right}"
         "th:first-child,td:first-child{text-align:left}.pass{color:#1a7f37}.fail{color:#cf222e}"
         ".muted{color:#666;font-size:13px}</style></head><body>\n<h1>" + escape_markup(tool) + ": <span class=\"" +
         (passed ? "pass" : "fail") + "\">" + escape_markup(verdict) + "</span></h1>\n";
}

}  // namespace specgate
