#include "impl/common/ignored_field.h"

#include <iostream>
#include <mutex>
#include <set>
#include <utility>

namespace specgate {

void warn_ignored_field(const std::string& source, std::optional<int64_t> line, const std::string& field,
                        const std::string& problem) {
  static std::mutex mutex;
  static std::set<std::pair<std::string, std::string>> warned;
  const std::lock_guard lock(mutex);
  if (!warned.emplace(source, field).second) return;
  std::cerr << "warning: " << source;
  if (line) std::cerr << ":" << *line;
  std::cerr << ": field '" << field << "': " << problem << "; ignored (not reported again for this file)\n";
}

}  // namespace specgate
