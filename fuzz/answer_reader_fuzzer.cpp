// Fuzz target: one line of an answer file, read as `conformance score` reads it, with every
// recorded alternative read back as attribution does at a divergence.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "impl/common/error.h"
#include "impl/scoring/answer_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specgate;
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  for (const TurnScope scope : {TurnScope::kAll, TurnScope::kFirst}) {
    AnswerRecord record;
    try {
      record = parse_answer_line(line, "fuzz.jsonl", 1, scope);
    } catch (const InputError&) {
      continue;
    }
    if (!record.has_top_logprobs || !record.token_ids) continue;
    for (size_t turn = 0; turn < record.token_ids->size(); ++turn) {
      for (size_t index = 0; index <= (*record.token_ids)[turn].size(); ++index) {  // one past the end too
        try {
          recorded_alternatives(line, "fuzz.jsonl", 1, static_cast<int64_t>(turn), static_cast<int64_t>(index));
        } catch (const InputError&) {
        }
      }
    }
  }
  return 0;
}
