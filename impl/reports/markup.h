#pragma once

#include <string>
#include <string_view>

namespace specgate {

// Text made safe inside XML or HTML elements and attribute values: &, <, >, " and ' are
// escaped; control characters XML 1.0 forbids and invalid UTF-8 become U+FFFD.
std::string escape_markup(std::string_view text);

// The start of a self-contained HTML report up to its first heading, "TOOL: VERDICT", the
// verdict green when it passed and red when not; the report closes with "</body></html>".
std::string html_report_start(std::string_view tool, std::string_view verdict, bool passed);

}  // namespace specgate
