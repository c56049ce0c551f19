#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "conformance/collect/dialect.h"
#include "conformance/collect/http_client.h"
#include "impl/common/token_logprob.h"
#include "impl/scoring/logits_source.h"

namespace specgate::cli {

struct EngineLogitsOptions {
  Endpoint endpoint;
  std::unique_ptr<Dialect> dialect;  // one that gives prompt log-probabilities
  std::string model;                 // the name requests carry
  int64_t top_k = 20;                // alternatives asked per position, beside the token itself
  int64_t vocab_size = 0;
  std::vector<int64_t> eos_token_ids;
  int64_t concurrency = 4;  // requests in flight at once
  HttpLimits http;
  int64_t retries = 5;           // after the first attempt, on connection errors, 429 and 5xx
  double backoff_seconds = 1.0;  // doubled after every retry
  // Where replies are kept by the hash of what was asked, so that a rerun asks nothing again.
  std::optional<std::filesystem::path> cache;
};

// What re-scoring through the engine cost.
struct EngineLogitsCost {
  int64_t requests = 0;        // sent and answered, retries not counted
  int64_t retries = 0;
  int64_t cached = 0;          // sequences read back from the cache folder
  int64_t scored_tokens = 0;   // positions the replies scored
  int64_t reply_bytes = 0;
  double seconds = 0.0;        // wall time spent waiting on the engine
};

// The target's log-probabilities from the reference engine (the same engine, speculation off):
// each token sequence is sent as a prompt with max_tokens 1 and prompt log-probabilities of the
// top k (vLLM's prompt_logprobs, SGLang's input_top_logprobs), and what the k leaves unseen is
// filled at its two extremes (KnownLogits). Replies are kept in memory, and in the cache folder
// when given, by the SHA-256 of model, dialect, k and ids. A reply without prompt
// log-probabilities, with fewer alternatives than asked, with ids other than those sent, or with
// a log-probability that is not one, is an InputError naming the endpoint and the request.
class EngineLogits final : public LogitsSource {
 public:
  explicit EngineLogits(EngineLogitsOptions options);
  ~EngineLogits() override;

  int64_t vocab_size() const override { return options_.vocab_size; }
  const std::vector<int64_t>& eos_token_ids() const override { return options_.eos_token_ids; }
  std::optional<KnownLogits> logits_before(std::span<const int64_t> prompt, std::span<const int64_t> generated,
                                           std::string& why_not) const override;
  // Fetches the sequences not yet known, `concurrency` requests at a time.
  void prepare(std::span<const std::vector<int64_t>> sequences) const override;

  EngineLogitsCost cost() const;

 private:
  // Per position after the first: the alternatives the engine returned, the token itself among them.
  using Rows = std::vector<std::vector<TokenLogprob>>;
  const Rows& rows_of(const std::vector<int64_t>& sequence) const;
  Rows fetch(HttpClient& client, const std::vector<int64_t>& sequence, const std::string& key) const;
  Rows checked_rows(const std::string& body, const std::vector<int64_t>& sequence, const std::string& request) const;
  std::string key_of(const std::vector<int64_t>& sequence) const;

  EngineLogitsOptions options_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, Rows> known_;
  mutable EngineLogitsCost cost_;
};

}  // namespace specgate::cli
