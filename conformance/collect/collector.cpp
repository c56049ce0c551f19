#include "conformance/collect/collector.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>


#include <nlohmann/json.hpp>

#include "conformance/collect/sse_events.h"
#include "conformance/collect/stream_assembly.h"
#include "conformance/files/answer_file.h"
#include "conformance/terminal/progress_bar.h"
#include "conformance/terminal/stop_signals.h"
#include "impl/bench/answer.h"
#include "impl/bench/conversation.h"
#include "impl/common/error.h"

namespace specgate::cli {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr double kLongestWaitSeconds = 60.0;
// The chat_template of answers from a chat endpoint, which renders prompts with its own.
constexpr const char* kServerTemplate = "server";

// A question that cannot be answered; the message names the question and the reason.
struct QuestionFailed {
  std::string message;
};

// A question whose request was given up on because a stop came.
struct QuestionAbandoned {};

// One request of a run: a question, and which of its samples.
struct Ask {
  const Question* question;
  std::optional<uint64_t> seed;  // sent, and recorded in the answer
  int64_t sample = 0;
  bool filler = false;  // asked to crowd the server; its answer is not written
};

class Collector {
 public:
  explicit Collector(const CollectJob& job) : job_(job) {}

  CollectResult run() {
    const CompletionRequest& asked = job_.defaults;
    run_ = RunInfo{.engine = std::string(job_.dialect->name()), .server = job_.server, .batch_size = job_.concurrency,
                   .started_at = unix_seconds(), .max_new_tokens = asked.max_new_tokens, .dtype = job_.dtype,
                   .sampling = {.temperature = asked.temperature, .top_k = asked.top_k, .top_p = asked.top_p, .min_p = asked.min_p,
                                .seed = asked.seed}};
    const std::set<Answered> done =
        job_.resume ? answered_in("--out", job_.out, job_.samples > 1, [this](const json& line) { return same_run_line(line); })
                    : std::set<Answered>{};
    for (int64_t sample = 0; sample < job_.samples; ++sample) {
      for (size_t q = 0; q < job_.questions.size(); ++q) {
        const Ask ask{&job_.questions[q], seed_of(q, sample), sample};
        if (done.count({ask.question->question_id, job_.samples > 1 ? ask.seed : std::nullopt}) > 0)
          ++result_.skipped;
        else
          pending_.push_back(ask);
      }
    }
    spread_fillers();
    AnswerFile out("--out", job_.out, job_.inputs, job_.resume);
    out_ = &out;

    StopSignals signals("\ncollect: finishing the requests in flight; interrupt again to abandon them\n");
    ProgressBar progress("collect", static_cast<int64_t>(pending_.size() - job_.fillers.size()));
    progress_ = &progress;
    std::vector<std::thread> workers;
    const int64_t threads = std::min<int64_t>(job_.concurrency, static_cast<int64_t>(pending_.size()));
    for (int64_t i = 0; i < threads; ++i) workers.emplace_back([this] { work(); });
    for (std::thread& worker : workers) worker.join();
    out.commit();  // whatever stopped the run, the complete answers stand
    result_.interrupted = StopSignals::stop_requested().load() && !result_.error;
    return result_;
  }

 private:
  bool stopping() const { return StopSignals::stop_requested().load() || failed_.load(); }

  // The seed sent with sample `sample` of the q-th question. One seed for every question would
  // make many servers draw every answer from one stream.
  std::optional<uint64_t> seed_of(size_t q, int64_t sample) const {
    if (!job_.defaults.seed) return std::nullopt;
    return *job_.defaults.seed + q * static_cast<uint64_t>(job_.samples) + static_cast<uint64_t>(sample);
  }

  // An answer of this run to sample `sample` of `question`, before its turns.
  Answer unanswered(const Question& question, std::optional<uint64_t> seed, int64_t sample) const {
    std::string answer_id = job_.defaults.model + "-" + std::to_string(question.question_id);
    if (job_.samples > 1) answer_id += "-sample-" + std::to_string(sample);
    const bool has_token_ids = job_.defaults.stream ? job_.dialect->gives_stream_token_ids() : job_.dialect->gives_token_ids();
    Answer answer{.question_id = question.question_id, .category = question.category, .answer_id = answer_id,
                  .model_id = job_.defaults.model, .has_token_ids = has_token_ids, .run = run_};
    answer.run->sampling.seed = seed;
    if (job_.dialect->takes_messages()) {
      answer.chat_template = kServerTemplate;
    } else if (!bench_ids(question)) {
      answer.chat_template = chat_template_name(job_.prompt_format.chat_template);
    }
    return answer;
  }

  bool bench_ids(const Question& question) const {
    return job_.dialect->takes_token_ids() && !question.prompt_token_ids.empty();
  }

  // The line this run writes in place of `recorded`, an answer line --out already holds: that of
  // the same question and, where each question is asked several times, of the sample its seed
  // names (the first sample when it names none). A question this run does not ask is compared
  // with the seed it records, which nothing here derives.
  json same_run_line(const json& recorded) const {
    const int64_t id = recorded.at("question_id").get<int64_t>();
    const std::optional<uint64_t> seed = recorded_seed(recorded);
    const auto question = std::find_if(job_.questions.begin(), job_.questions.end(),
                                       [id](const Question& asked) { return asked.question_id == id; });
    if (question == job_.questions.end())
      return answer_json(unanswered(Question{.question_id = id}, seed && job_.defaults.seed ? seed : job_.defaults.seed, 0));
    const auto q = static_cast<size_t>(question - job_.questions.begin());
    const std::optional<uint64_t> first = seed_of(q, 0);
    int64_t sample = 0;
    if (seed && first && *seed - *first < static_cast<uint64_t>(job_.samples)) sample = static_cast<int64_t>(*seed - *first);
    return answer_json(unanswered(*question, seed_of(q, sample), sample));
  }

  // Places filler f after (f + 1) / (fillers + 1) of the questions.
  void spread_fillers() {
    const size_t fillers = job_.fillers.size();
    std::vector<Ask> asks;
    asks.reserve(pending_.size() + fillers);
    size_t next_filler = 0;
    for (size_t i = 0; i <= pending_.size(); ++i) {
      while (next_filler < fillers && (next_filler + 1) * pending_.size() <= i * (fillers + 1))
        asks.push_back(Ask{.question = &job_.fillers[next_filler++], .seed = job_.defaults.seed, .filler = true});
      if (i < pending_.size()) asks.push_back(pending_[i]);
    }
    pending_ = std::move(asks);
  }

  // Sleeps the request's stagger; false when a stop came meanwhile.
  bool stagger(size_t index) const {
    if (job_.stagger_seconds <= 0.0) return true;
    std::mt19937_64 random(job_.stagger_seed + 0x9E3779B97F4A7C15ULL * (index + 1));
    const double seconds = std::uniform_real_distribution<double>(0.0, job_.stagger_seconds)(random);
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until) {
      if (stopping()) return false;
      std::this_thread::sleep_for(std::min(std::chrono::duration<double>(until - Clock::now()), std::chrono::duration<double>(0.02)));
    }
    return true;
  }

  // Marks a request in flight while it lives, and records in every request in flight the
  // crowd it has seen.
  class InFlight {
   public:
    InFlight(Collector& collector, size_t index) : collector_(collector), index_(index) {
      const std::lock_guard lock(collector_.flight_mutex_);
      collector_.in_flight_.emplace(index_, Crowding{});
      const bool filler_in_flight = std::any_of(collector_.in_flight_.begin(), collector_.in_flight_.end(),
                                                [&](const auto& entry) { return collector_.pending_[entry.first].filler; });
      for (auto& [other, crowding] : collector_.in_flight_) {
        crowding.in_flight = std::max<int64_t>(crowding.in_flight, static_cast<int64_t>(collector_.in_flight_.size()));
        crowding.beside_filler = crowding.beside_filler || filler_in_flight;
      }
    }
    ~InFlight() {
      const std::lock_guard lock(collector_.flight_mutex_);
      const auto entry = collector_.in_flight_.find(index_);
      Crowding& seen = collector_.crowding_[index_];
      seen.in_flight = std::max(seen.in_flight, entry->second.in_flight);
      seen.beside_filler = seen.beside_filler || entry->second.beside_filler;
      collector_.in_flight_.erase(entry);
    }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;

   private:
    Collector& collector_;
    size_t index_;
  };

  void work() {
    HttpClient client(job_.endpoint, job_.http, &StopSignals::abandon_requested());
    while (!stopping()) {
      const size_t index = next_.fetch_add(1);
      if (index >= pending_.size()) return;
      if (!stagger(index)) return;
      try {
        std::optional<Answer> answer = ask(client, index);
        if (answer && !pending_[index].filler) write(*answer, index);
      } catch (const QuestionAbandoned&) {
        return;
      } catch (const QuestionFailed& failure) {
        fail(pending_[index], failure.message);
      } catch (const std::exception& e) {
        fail(pending_[index], "question " + std::to_string(pending_[index].question->question_id) + ": " + e.what());
      }
    }
  }

  // Every turn of one question; nullopt when a stop came between turns.
  std::optional<Answer> ask(HttpClient& client, size_t index) {
    const Ask& asked = pending_[index];
    const Question& question = *asked.question;
    Answer answer = unanswered(question, asked.seed, asked.sample);
    const size_t turns = job_.all_turns ? question.turns.size() : 1;
    for (size_t turn = 0; turn < turns; ++turn) {
      if (turn > 0 && StopSignals::stop_requested().load()) return std::nullopt;
      CompletionRequest request = job_.defaults;
      request.seed = asked.seed;
      if (job_.dialect->takes_messages()) {
        request.messages = messages(question, turn, answer);
      } else if (bench_ids(question) || (job_.dialect->takes_token_ids() && job_.prompt_format.tokenizer != nullptr)) {
        request.prompt_ids = turn_prompt(job_.prompt_format, question, turn, answer_ids(answer));
      } else {
        request.prompt_text = prompt_text(question, turn, answer);
      }
      const std::string where = "question " + std::to_string(question.question_id) + " turn " + std::to_string(turn);
      std::pair<Completion, double> reply;
      {
        const InFlight flight(*this, index);
        reply = send(client, request, where);
      }
      if (job_.on_completion && !asked.filler) job_.on_completion(question, turn, request, reply.first);
      answer.turns.push_back(turn_of(std::move(reply), request));
    }
    answer.tstamp = unix_seconds();
    return answer;
  }

  // The ids of the answers so far; an answer the server gave as text only is encoded. None
  // without a tokenizer: the prompts are then the bench's, which turn_prompt() takes verbatim.
  std::vector<std::vector<int64_t>> answer_ids(const Answer& answer) const {
    std::vector<std::vector<int64_t>> ids;
    if (job_.prompt_format.tokenizer == nullptr) return ids;
    for (const AnswerTurn& previous : answer.turns)
      ids.push_back(answer.has_token_ids ? previous.token_ids : job_.prompt_format.tokenizer->encode(previous.text));
    return ids;
  }

  // The text turn_prompt_text() renders, from the server's answer texts instead of decoded ids.
  std::string prompt_text(const Question& question, size_t turn, const Answer& answer) const {
    std::vector<std::string> answer_texts;
    for (const AnswerTurn& previous : answer.turns) answer_texts.emplace_back(strip_whitespace(previous.text));
    return render_chat(job_.prompt_format.chat_template, std::span(question.turns).first(turn + 1), answer_texts);
  }

  // The conversation up to turn `turn`, each earlier answer stripped as prompt_text() enters it.
  static std::vector<ChatMessage> messages(const Question& question, size_t turn, const Answer& answer) {
    std::vector<ChatMessage> conversation;
    for (size_t t = 0; t <= turn; ++t) {
      conversation.push_back({"user", question.turns[t]});
      if (t < turn) conversation.push_back({"assistant", std::string(strip_whitespace(answer.turns[t].text))});
    }
    return conversation;
  }

  // A server's verify steps as rounds, each appending its accepted drafts and one token of the
  // target's, as the server counts them: EOS or max_tokens may have cut the last one short, and
  // steps without drafts are not among them (acceptance puts both right).
  static void put_rounds(const SpeculationSteps& steps, AnswerTurn& turn) {
    turn.round_drafts = steps.drafted;
    for (const int64_t accepted : steps.accepted) turn.accept_lengths.push_back(accepted + 1);
  }

  AnswerTurn turn_of(std::pair<Completion, double> reply, const CompletionRequest& request) const {
    Completion& completion = reply.first;
    AnswerTurn turn{.text = std::move(completion.text), .token_ids = completion.token_ids.value_or(std::vector<int64_t>{}),
                    .prompt_token_ids = std::move(completion.prompt_token_ids), .new_tokens = completion.new_tokens,
                    .decoding_steps = completion.target_passes, .wall_time = reply.second,
                    .drafted_tokens = completion.drafted_tokens, .accepted_drafts = completion.accepted_drafts,
                    .top_logprobs = std::move(completion.top_logprobs), .stream = std::move(completion.stream)};
    if (turn.prompt_token_ids.empty() && request.prompt_ids) turn.prompt_token_ids = *request.prompt_ids;
    if (job_.ids_from_server && (turn.prompt_token_ids.empty() || !completion.token_ids))
      throw MalformedResponse(turn.prompt_token_ids.empty() ? "prompt_token_ids" : "token_ids",
                              "missing; --tokenizer-from-server reads the ids back from the server");
    if (completion.steps) put_rounds(*completion.steps, turn);
    return turn;
  }

  // One request with retries; the completion and the seconds its answered attempt took.
  std::pair<Completion, double> send(HttpClient& client, const CompletionRequest& request, const std::string& where) {
    const std::string body = job_.dialect->request_body(request);
    const std::string path = request.stream ? job_.dialect->stream_path() : job_.dialect->path();
    std::string last_error;
    std::optional<double> retry_after;
    for (int64_t attempt = 0; attempt <= job_.retries; ++attempt) {
      if (attempt > 0 && !wait_before_retry(attempt, retry_after)) break;
      const auto start = Clock::now();
      const auto since_start = [&start] { return std::chrono::duration<double>(Clock::now() - start).count(); };
      std::optional<StreamAssembly> assembly;
      std::optional<MalformedResponse> broken;  // the stream, as far as it came
      HttpResponse response;
      if (request.stream) {
        assembly.emplace(*job_.dialect);
        SseEvents events;
        response = client.post_stream(path, body, [&](std::string_view bytes) {
          try {
            const double arrived = since_start();
            for (const std::string& data : events.feed(bytes)) assembly->add(data, arrived);
            return true;
          } catch (const MalformedResponse& e) {
            broken = e;
            return false;
          }
        });
        if (response.status == 200 && !broken && events.pending())
          broken = MalformedResponse("stream", "ended inside an event");
      } else {
        response = client.post_json(path, body);
      }
      const double seconds = since_start();
      retry_after = response.retry_after;
      if (response.status == 200) {
        try {
          if (broken) throw *broken;
          Completion completion = assembly ? assembly->finish() : job_.dialect->parse_response(response.body);
          check_completion(completion, request, {.reports = job_.reports_checked, .vocabulary = job_.vocabulary});
          return {std::move(completion), seconds};
        } catch (const MalformedResponse& e) {
          throw QuestionFailed{where + ": malformed " + std::string(job_.dialect->name()) + " response: " + e.what()};
        }
      }
      last_error = response.status == 0 ? "no response from " + url(path) + " (" + response.error + ")"
                                         : "HTTP " + std::to_string(response.status) + " from " + url(path) + ": " +
                                               quoted_body(response.body);
      if (response.status == 404 || response.status == 405) throw QuestionFailed{where + ": " + last_error + api_hint()};
      const bool retryable = response.status == 0 || response.status == 429 || response.status >= 500;
      if (!retryable) throw QuestionFailed{where + ": " + last_error};
      if (attempt < job_.retries && !stopping()) {
        const std::lock_guard lock(mutex_);
        std::fprintf(stderr, "collect: %s: %s; retry %lld of %lld\n", where.c_str(), last_error.c_str(),
                     static_cast<long long>(attempt + 1), static_cast<long long>(job_.retries));
      }
    }
    if (StopSignals::stop_requested().load()) throw QuestionAbandoned{};
    throw QuestionFailed{where + ": gave up after " + std::to_string(job_.retries + 1) + " attempts; last error " + last_error};
  }

  std::string url(const std::string& path) const {
    return endpoint_url(job_.endpoint) + path;
  }

  // Where a server answers 404 or 405, the dialect is the likely mistake.
  std::string api_hint() const {
    return " (is --api " + std::string(job_.dialect->name()) +
           " the server's? openai and vllm post to /v1/completions, sglang and tgi to /generate, llamacpp to /completion, "
           "openai-chat, vllm-chat and sglang-chat to /v1/chat/completions)";
  }

  // Sleeps backoff * 2^(attempt - 1), or what Retry-After asks if longer (at most a minute);
  // false when a stop came meanwhile.
  bool wait_before_retry(int64_t attempt, std::optional<double> retry_after) const {
    double seconds = job_.backoff_seconds * std::pow(2.0, static_cast<double>(attempt - 1));
    if (retry_after) seconds = std::max(seconds, *retry_after);
    const auto until = Clock::now() + std::chrono::duration<double>(std::min(seconds, kLongestWaitSeconds));
    while (Clock::now() < until) {
      if (stopping()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return !stopping();
  }

  void write(const Answer& answer, size_t index) {
    Crowding crowding;
    {
      const std::lock_guard lock(flight_mutex_);
      crowding = crowding_[index];
    }
    const std::lock_guard lock(mutex_);
    out_->write(answer);
    ++result_.written;
    result_.answers_report_drafts = result_.answers_report_drafts ||
                                    std::any_of(answer.turns.begin(), answer.turns.end(),
                                                [](const AnswerTurn& turn) { return turn.drafted_tokens.has_value(); });
    result_.crowding[answer.question_id] = crowding;
    progress_->update(result_.written, "question " + std::to_string(answer.question_id));
  }

  void fail(const Ask& asked, const std::string& message) {
    const std::lock_guard lock(mutex_);
    if (job_.keep_going) {
      if (!asked.filler) result_.failures.emplace(asked.question->question_id, message);
      return;
    }
    if (!result_.error) result_.error = message;
    failed_.store(true);
  }

  const CollectJob& job_;
  std::vector<Ask> pending_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> failed_{false};
  std::mutex mutex_;  // guards out_, result_ and the progress bar
  std::mutex flight_mutex_;  // guards in_flight_ and crowding_
  std::map<size_t, Crowding> in_flight_;  // by place in pending_: the requests in flight now
  std::map<size_t, Crowding> crowding_;   // by place in pending_: what each request saw
  AnswerFile* out_ = nullptr;
  RunInfo run_;
  CollectResult result_;
  ProgressBar* progress_ = nullptr;
};

}  // namespace

CollectResult collect_answers(const CollectJob& job) { return Collector(job).run(); }

}  // namespace specgate::cli
