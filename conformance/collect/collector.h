#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "conformance/collect/dialect.h"
#include "conformance/collect/http_client.h"
#include "conformance/files/output_file.h"
#include "impl/bench/conversation.h"
#include "impl/bench/question.h"

namespace specgate::cli {

struct CollectJob {
  Endpoint endpoint;
  const Dialect* dialect = nullptr;
  CompletionRequest defaults;  // everything but the prompt
  std::vector<Question> questions;
  bool all_turns = false;  // later turns carry the earlier answers, as generate's do
  // Prompts as generate builds them: where the dialect takes ids, the bench's prompt_token_ids
  // or the tokenizer's encoding of the template's text; the template's text otherwise.
  PromptFormat prompt_format;
  std::optional<int64_t> vocabulary;  // the model's, when known: no answer holds an id past it
  int64_t concurrency = 1;
  std::optional<std::string> server;  // what the server says it is, recorded in every answer's run
  std::optional<std::string> dtype;   // the server's floating-point type, where the user gives it; likewise
  HttpLimits http;                 // per request
  int64_t retries = 5;             // after the first attempt, on connection errors, 429 and 5xx
  double backoff_seconds = 1.0;    // doubled after every retry
  std::filesystem::path out;
  std::vector<NamedInput> inputs;  // what `out` must not be: the bench, the tokenizer's folder
  bool resume = false;             // skip the questions --out already answers, and append
  // Each question is asked this many times. Above 1 defaults.seed is required: sample j of the
  // q-th question is sent seed + q * samples + j, so that no two requests share a random stream
  // and --resume tells the samples apart by the seed their answers record.
  int64_t samples = 1;
  // A crowd around the questions, for differential runs: requests sent like the questions' and
  // spread evenly among them, whose answers are not written.
  std::vector<Question> fillers;
  // Each request waits a time drawn uniformly from [0, stagger_seconds) before it is sent, the
  // same for a given stagger_seed and place in the order.
  double stagger_seconds = 0.0;
  uint64_t stagger_seed = 0;
  // A question that fails is recorded in CollectResult::failures and the others go on, instead
  // of ending the run.
  bool keep_going = false;
  // false: a usage count that disagrees with the token ids, or a log-probability above 0, is kept
  // for the caller to judge, not refused as a malformed response.
  bool reports_checked = true;
  // Every turn must come back with the server's prompt_token_ids and token_ids: no local tokenizer
  // knows them.
  bool ids_from_server = false;
  // Called with each turn a question (not a filler) was answered, from the request's thread.
  std::function<void(const Question&, size_t turn, const CompletionRequest&, const Completion&)> on_completion;
};

// What was in flight at the server when a question's turns were sent.
struct Crowding {
  int64_t in_flight = 1;           // most requests in flight at once, the question's own included
  bool beside_filler = false;      // a filler was among them
};

struct CollectResult {
  int64_t written = 0, skipped = 0;
  bool answers_report_drafts = false;  // some answer written carries the server's drafted_tokens
  bool interrupted = false;           // SIGINT or SIGTERM: no new question was started
  std::optional<std::string> error;   // the first question that failed, and why (not with keep_going)
  std::map<int64_t, std::string> failures;  // with keep_going: each question that failed, and why
  std::map<int64_t, Crowding> crowding;  // by question id, for the answers written
};

// Asks the server every turn of every question (`concurrency` questions at a time) and
// appends each answer to `out` as one complete line as soon as all its turns are in. On
// SIGINT/SIGTERM or the first question that fails, no new question is started and those in
// flight finish; a second SIGINT/SIGTERM abandons them. `out` always holds whole lines that
// --resume continues from. A line cut short by a killed run is dropped when resuming.
CollectResult collect_answers(const CollectJob& job);

}  // namespace specgate::cli
