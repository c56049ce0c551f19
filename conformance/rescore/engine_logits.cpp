#include "conformance/rescore/engine_logits.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <ATen/ATen.h>

#include "impl/common/error.h"
#include "impl/common/sha256.h"

namespace specgate::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kLongestWaitSeconds = 60.0;
// A log-probability above 0 by more than an engine's float32 rounding is not one.
constexpr double kMostLogprob = 1e-4;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Writes beside and renames, so that a killed run leaves no partial reply behind.
void write_file(const std::filesystem::path& path, const std::string& body) {
  const std::filesystem::path partial = path.string() + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << body;
    if (!out) throw InputError("--rescore-cache: cannot write " + partial.string());
  }
  std::filesystem::rename(partial, path);
}

// The unseen entries of one position filled at the two extremes their mass allows (KnownLogits);
// true where `token` is ranked past the k and the unseen mass could hold a token ahead of it.
bool fill_position(const std::vector<TokenLogprob>& row, int64_t token, int64_t top_k, int64_t vocab, double* heavy,
                   double* spread, bool* unseen) {
  std::vector<double> returned;
  double seen_mass = 0.0;
  for (const TokenLogprob& entry : row) {
    const double logprob = std::min(entry.logprob, 0.0);
    heavy[entry.token_id] = spread[entry.token_id] = logprob;
    unseen[entry.token_id] = false;
    returned.push_back(logprob);
    seen_mass += std::exp(logprob);
  }
  const auto unseen_count = vocab - static_cast<int64_t>(row.size());
  const double mass = std::max(0.0, 1.0 - seen_mass);
  if (unseen_count == 0 || mass == 0.0) return false;
  // Every unseen entry is at most as likely as the k-th most likely returned; at a tie, behind it,
  // and far enough behind that a temperature's division cannot round the two together (one step
  // of a double below would, and top-k would then take the filled entries in).
  std::sort(returned.begin(), returned.end(), std::greater<>());
  const double kth = returned[static_cast<size_t>(std::min<int64_t>(top_k, static_cast<int64_t>(returned.size())) - 1)];
  const double floor = kth - std::max(std::abs(kth), 1.0) * 0x1p-40;
  const double each = std::exp(floor);
  const double own = std::min(heavy[token], 0.0);
  const auto at_floor = static_cast<int64_t>(std::min(static_cast<double>(unseen_count), std::floor(mass / each)));
  const double remainder = mass - static_cast<double>(at_floor) * each;
  const double spread_logprob = std::log(mass / static_cast<double>(unseen_count));
  int64_t filled = 0;
  for (int64_t id = vocab - 1; id >= 0; --id) {
    if (!unseen[id]) continue;
    spread[id] = spread_logprob;
    if (filled < at_floor) heavy[id] = floor;
    else if (filled == at_floor && remainder > 0.0) heavy[id] = std::log(remainder);
    ++filled;
  }
  return own < kth && mass >= std::exp(own);
}

}  // namespace

EngineLogits::EngineLogits(EngineLogitsOptions options) : options_(std::move(options)) {
  if (options_.cache) std::filesystem::create_directories(*options_.cache);
}

EngineLogits::~EngineLogits() = default;

std::string EngineLogits::key_of(const std::vector<int64_t>& sequence) const {
  Sha256 hash;
  hash.update(options_.model + "\n" + std::string(options_.dialect->name()) + "\n" + std::to_string(options_.top_k) + "\n");
  for (const int64_t id : sequence) hash.update(std::to_string(id) + ",");
  return hash.hex_digest();
}

EngineLogits::Rows EngineLogits::checked_rows(const std::string& body, const std::vector<int64_t>& sequence,
                                              const std::string& request) const {
  const auto bad = [&](const std::string& problem) { return InputError(request + ": " + problem); };
  Completion completion;
  try {
    completion = options_.dialect->parse_response(body);
  } catch (const MalformedResponse& e) {
    throw bad(e.what());
  }
  if (!completion.prompt_token_ids.empty() && completion.prompt_token_ids != sequence) {
    const auto [sent, got] = std::mismatch(sequence.begin(), sequence.end(), completion.prompt_token_ids.begin(),
                                           completion.prompt_token_ids.end());
    throw bad("prompt_token_ids differ from the ids sent at position " + std::to_string(sent - sequence.begin()));
  }
  Rows rows = std::move(completion.prompt_logprobs);
  if (rows.empty()) throw bad("no prompt log-probabilities in the reply (asked for the top " + std::to_string(options_.top_k) + ")");
  if (rows.size() + 1 != sequence.size())
    throw bad(std::to_string(rows.size()) + " prompt log-probabilities for a prompt of " + std::to_string(sequence.size()) +
              " tokens");
  const auto wanted = static_cast<size_t>(std::min(options_.top_k, options_.vocab_size));
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string where = "prompt position " + std::to_string(i + 1);
    std::set<int64_t> ids;
    for (const TokenLogprob& entry : rows[i]) {
      if (entry.token_id >= options_.vocab_size)
        throw bad(where + ": token " + std::to_string(entry.token_id) + " is outside the vocabulary of " +
                  std::to_string(options_.vocab_size) + " (--rescore-vocab-size)");
      if (std::isnan(entry.logprob) || entry.logprob > kMostLogprob)
        throw bad(where + ": token " + std::to_string(entry.token_id) + " has log-probability " + std::to_string(entry.logprob));
      if (!ids.insert(entry.token_id).second) throw bad(where + ": token " + std::to_string(entry.token_id) + " is listed twice");
    }
    if (!ids.contains(sequence[i + 1]))
      throw bad(where + ": the token sent there, " + std::to_string(sequence[i + 1]) + ", is not among the " +
                std::to_string(ids.size()) + " returned");
    if (ids.size() < wanted)
      throw bad(where + ": " + std::to_string(ids.size()) + " log-probabilities returned, the top " + std::to_string(wanted) +
                " asked");
  }
  return rows;
}

EngineLogits::Rows EngineLogits::fetch(HttpClient& client, const std::vector<int64_t>& sequence, const std::string& key) const {
  const std::string request = "--rescore-endpoint " + endpoint_url(options_.endpoint) + ": request " + key.substr(0, 12) +
                              " (" + std::to_string(sequence.size()) + " tokens)";
  const std::filesystem::path cached = options_.cache ? *options_.cache / (key + ".json") : std::filesystem::path();
  if (options_.cache) {
    if (const std::optional<std::string> body = read_file(cached)) {
      Rows rows = checked_rows(*body, sequence, request + " in " + cached.string());
      const std::lock_guard lock(mutex_);
      ++cost_.cached;
      return rows;
    }
  }
  CompletionRequest asked{.model = options_.model, .prompt_ids = sequence, .max_new_tokens = 1,
                          .prompt_logprobs = options_.top_k};
  const std::string body = options_.dialect->request_body(asked);
  std::string last_error;
  std::optional<double> retry_after;
  for (int64_t attempt = 0; attempt <= options_.retries; ++attempt) {
    if (attempt > 0) {
      double wait = options_.backoff_seconds * std::pow(2.0, static_cast<double>(attempt - 1));
      if (retry_after) wait = std::max(wait, *retry_after);
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(wait, kLongestWaitSeconds)));
      const std::lock_guard lock(mutex_);
      ++cost_.retries;
    }
    const Clock::time_point start = Clock::now();
    const HttpResponse response = client.post_json(options_.dialect->path(), body);
    retry_after = response.retry_after;
    if (response.status >= 200 && response.status < 300) {
      Rows rows = checked_rows(response.body, sequence, request);
      if (options_.cache) write_file(cached, response.body);
      const std::lock_guard lock(mutex_);
      ++cost_.requests;
      cost_.scored_tokens += static_cast<int64_t>(rows.size());
      cost_.reply_bytes += static_cast<int64_t>(response.body.size());
      cost_.seconds += seconds_since(start);
      return rows;
    }
    last_error = response.status == 0 ? response.error
                                      : "HTTP " + std::to_string(response.status) + ": " + quoted_body(response.body);
    const bool retryable = response.status == 0 || response.status == 429 || response.status >= 500;
    if (!retryable) throw InputError(request + ": " + last_error);
    if (attempt < options_.retries)
      std::fprintf(stderr, "rescore: %s: %s; retry %lld of %lld\n", request.c_str(), last_error.c_str(),
                   static_cast<long long>(attempt + 1), static_cast<long long>(options_.retries));
  }
  throw InputError(request + ": gave up after " + std::to_string(options_.retries + 1) + " attempts; last error " + last_error);
}

void EngineLogits::prepare(std::span<const std::vector<int64_t>> sequences) const {
  std::vector<std::pair<std::string, const std::vector<int64_t>*>> missing;
  {
    const std::lock_guard lock(mutex_);
    std::set<std::string> asked;
    for (const std::vector<int64_t>& sequence : sequences) {
      std::string key = key_of(sequence);
      if (known_.contains(key) || !asked.insert(key).second) continue;
      missing.emplace_back(std::move(key), &sequence);
    }
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::optional<InputError> first_error;
  const auto work = [&] {
    HttpClient client(options_.endpoint, options_.http);
    while (!failed.load()) {
      const size_t index = next.fetch_add(1);
      if (index >= missing.size()) return;
      const auto& [key, sequence] = missing[index];
      try {
        Rows rows = fetch(client, *sequence, key);
        const std::lock_guard lock(mutex_);
        known_.emplace(key, std::move(rows));
      } catch (const InputError& e) {
        const std::lock_guard lock(mutex_);
        if (!failed.exchange(true)) first_error.emplace(e);
      }
    }
  };
  std::vector<std::thread> workers;
  const auto threads = std::min<size_t>(static_cast<size_t>(std::max<int64_t>(1, options_.concurrency)), missing.size());
  for (size_t i = 0; i < threads; ++i) workers.emplace_back(work);
  for (std::thread& worker : workers) worker.join();
  if (first_error) throw *first_error;
}

const EngineLogits::Rows& EngineLogits::rows_of(const std::vector<int64_t>& sequence) const {
  const std::string key = key_of(sequence);
  {
    const std::lock_guard lock(mutex_);
    if (const auto found = known_.find(key); found != known_.end()) return found->second;
  }
  HttpClient client(options_.endpoint, options_.http);
  Rows rows = fetch(client, sequence, key);
  const std::lock_guard lock(mutex_);
  return known_.emplace(key, std::move(rows)).first->second;
}

std::optional<KnownLogits> EngineLogits::logits_before(std::span<const int64_t> prompt, std::span<const int64_t> generated,
                                                       std::string& why_not) const {
  if (prompt.empty() || generated.empty()) {
    why_not = prompt.empty() ? "the prompt is empty" : "the answer is empty";
    return std::nullopt;
  }
  std::vector<int64_t> sequence(prompt.begin(), prompt.end());
  sequence.insert(sequence.end(), generated.begin(), generated.end());
  const Rows& rows = rows_of(sequence);
  const int64_t n = static_cast<int64_t>(generated.size()), vocab = options_.vocab_size;
  const auto options = at::TensorOptions().dtype(at::kDouble);
  at::Tensor heavy = at::full({n, vocab}, -INFINITY, options), spread = at::full({n, vocab}, -INFINITY, options);
  at::Tensor unseen = at::ones({n, vocab}, options.dtype(at::kBool));
  at::Tensor ranked_past = at::zeros({n}, options.dtype(at::kBool));
  for (int64_t i = 0; i < n; ++i) {
    ranked_past[i] = fill_position(rows[prompt.size() - 1 + static_cast<size_t>(i)], generated[static_cast<size_t>(i)],
                                   options_.top_k, vocab, heavy[i].data_ptr<double>(), spread[i].data_ptr<double>(),
                                   unseen[i].data_ptr<bool>());
  }
  if (!unseen.any().item<bool>()) return KnownLogits{{heavy}, {}, {}};
  return KnownLogits{{heavy, spread}, unseen, ranked_past};
}

EngineLogitsCost EngineLogits::cost() const {
  const std::lock_guard lock(mutex_);
  return cost_;
}

}  // namespace specgate::cli
