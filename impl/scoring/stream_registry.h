#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "impl/scoring/answer_reader.h"

namespace specgate {

// The random streams answers drew from: a stream on two answers makes their draws dependent.
class StreamRegistry {
 public:
  // Throws InputError naming `at` and the answer that drew from the same stream first.
  void add(const AnswerRecord& record, const std::string& at);

 private:
  static constexpr uint64_t kNoStream = ~uint64_t{0};
  std::map<std::tuple<uint64_t, uint64_t>, std::pair<int64_t, std::string>> first_;
};

}  // namespace specgate
