#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "conformance/serve/completion_request.h"
#include "impl/common/sequence_result.h"

namespace specgate::cli {

// What the server decoded, as vLLM's Prometheus counters name it (vllm/v1/metrics/loggers.py):
// requests answered (a request of n choices once, when its last choice is decoded), prompt and generated tokens, and of speculation the drafts (a row's
// proposal in one round), the draft tokens and those accepted; and what the batch layout went
// through, summed over sequences (SequenceResult's coverage), under specgate's own names. Like
// vLLM, the drafts accepted at each draft position, from the rounds' accept_lengths.
class DecodedCounters {
 public:
  // One choice of `request` decoded; `last`: the request's last one.
  void count(const ServeRequest& request, const SequenceResult& sequence, bool last) {
    requests_ += last ? 1 : 0;
    prompt_tokens_ += static_cast<int64_t>(request.prompt.size());
    generation_tokens_ += static_cast<int64_t>(sequence.tokens.size());
    ragged_rounds_ += sequence.ragged_rounds;
    realignments_ += sequence.realignments;
    if (sequence.drafted == 0) return;
    drafts_ += sequence.rounds;
    draft_tokens_ += sequence.drafted;
    accepted_tokens_ += sequence.accepted;
    for (const int64_t appended : sequence.accept_lengths)
      for (int64_t j = 0; j < std::min<int64_t>(appended - 1, kPositions); ++j) ++accepted_at_[static_cast<size_t>(j)];
  }

  std::string prometheus_text(const std::string& model) const {
    std::string text;
    const std::string labels = "{model_name=" + nlohmann::json(model).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "}";
    const auto counter = [&](const char* name, const char* help, const std::atomic<int64_t>& value) {
      text += std::string("# HELP ") + name + "_total " + help + "\n# TYPE " + name + "_total counter\n" + name + "_total" + labels +
              " " + std::to_string(value.load()) + "\n";
    };
    counter("vllm:request_success", "Count of successfully processed requests.", requests_);
    counter("vllm:prompt_tokens", "Number of prefill tokens processed.", prompt_tokens_);
    counter("vllm:generation_tokens", "Number of generation tokens processed.", generation_tokens_);
    counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", drafts_);
    counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", draft_tokens_);
    counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", accepted_tokens_);
    if (drafts_.load() > 0) {
      const char* name = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
      text += std::string("# HELP ") + name + " Accepted draft tokens, by draft position.\n# TYPE " + name + " counter\n";
      // Up to the last position with an accepted draft, and position 0 always, so that a server
      // that drafted shows it counts by position.
      int64_t positions = 1;
      for (int64_t j = 0; j < kPositions; ++j)
        if (accepted_at_[static_cast<size_t>(j)].load() > 0) positions = j + 1;
      for (int64_t j = 0; j < positions; ++j)
        text += std::string(name) + labels.substr(0, labels.size() - 1) + ",position=\"" + std::to_string(j) + "\"} " +
                std::to_string(accepted_at_[static_cast<size_t>(j)].load()) + "\n";
    }
    counter("specgate:ragged_rounds", "Rounds in which rows of a sequence's batch kept different numbers of drafts, "
            "summed over sequences.", ragged_rounds_);
    counter("specgate:realignments", "Moves of a sequence's K/V within the batch caches, summed over sequences.",
            realignments_);
    return text;
  }

 private:
  static constexpr int64_t kPositions = 64;  // the most drafts a round may take (--draft-tokens)
  std::array<std::atomic<int64_t>, kPositions> accepted_at_{};
  std::atomic<int64_t> requests_{0}, prompt_tokens_{0}, generation_tokens_{0}, drafts_{0}, draft_tokens_{0}, accepted_tokens_{0},
      ragged_rounds_{0}, realignments_{0};
};

}  // namespace specgate::cli
