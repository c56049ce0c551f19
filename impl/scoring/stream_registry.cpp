#include "impl/scoring/stream_registry.h"

#include "impl/common/error.h"

namespace specgate {

void StreamRegistry::add(const AnswerRecord& record, const std::string& at) {
  if (!record.speed.run || !record.speed.run->sampling.seed) return;
  const SamplingSettings& s = record.speed.run->sampling;
  const auto key = std::make_tuple(*s.seed, s.stream.value_or(kNoStream));
  const auto [found, added] = first_.try_emplace(key, std::make_pair(record.question_id, at));
  if (added) return;
  const std::string stream = s.stream ? " stream " + std::to_string(*s.stream) : "";
  const std::string what = found->second.first == record.question_id
                               ? "question " + std::to_string(record.question_id) + " drawn twice"
                               : "questions " + std::to_string(found->second.first) + " and " +
                                     std::to_string(record.question_id) + " drew from it";
  throw InputError(at + ": field 'run.sampling.seed': seed " + std::to_string(*s.seed) + stream + " also at " +
                   found->second.second + " (" + what +
                   "); answers sharing a random stream are not independent samples: give each request a seed of its own, "
                   "and each file (collect --seed S sends S + q N + j) a --seed far from the others'");
}

}  // namespace specgate
