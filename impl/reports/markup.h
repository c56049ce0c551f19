#pragma once

#include <string>
#include <string_view>

namespace specgate {

// Text made safe inside XML or HTML elements and attribute values: &, <, >, " and ' are
// escaped; control characters XML 1.0 forbids and invalid UTF-8 become U+FFFD.
std::string escape_markup(std::string_view text);

}  // namespace specgate
