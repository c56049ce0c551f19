#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace specgate {

// An optional field that the command does not use holds a value it cannot read. Rather than
// refuse the file, this says so on stderr ("warning: FILE:LINE: field 'F': PROBLEM; ignored")
// the first time the process meets that field in that file, and returns: reading goes on.
void warn_ignored_field(const std::string& source, std::optional<int64_t> line, const std::string& field,
                        const std::string& problem);

}  // namespace specgate
