// collect against an in-process server that injects faults: 500, 429, a reply slower than the
// timeout, a connection dropped mid-body, malformed JSON; and interruptions.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "conformance/collect/collector.h"
#include "conformance/tests/local_http_server.h"
#include "impl/common/error.h"
#include "impl/tests/temp_folder.h"

namespace specgate::cli {
namespace {

using nlohmann::json;

enum class Fault {
  kNone, kError500Once, kTooManyOnce, kSlowOnce, kDropOnce, kMalformed, kAlways500, kSlowAlways,
  kTrickle,         // a byte every 50 ms, 3 s in all
  kHuge,            // a 2 MB body
  kNumberOverflow,  // 1e309 in a field nobody reads
  kHang,            // nothing for 5 s
};

// A vLLM-shaped server whose reply to a question (its prompt is the question's text, "q<id>")
// follows a scripted fault; it answers token ids {id, id + 1}.
class FaultServer {
 public:
  explicit FaultServer(std::map<int64_t, Fault> faults) : faults_(std::move(faults)) {
    http_.routes().Post("/v1/completions", [this](const httplib::Request& request, httplib::Response& response) {
      reply(json::parse(request.body), response);
    });
    http_.start();
  }
  Endpoint endpoint() const { return http_.endpoint(); }
  int64_t attempts(int64_t id) {
    const std::lock_guard lock(mutex_);
    return attempts_[id];
  }
  void set_fault(int64_t id, Fault fault) {
    const std::lock_guard lock(mutex_);
    faults_[id] = fault;
  }

 private:
  void reply(const json& body, httplib::Response& response) {
    const int64_t id = std::stoll(body["prompt"].get<std::string>().substr(1));
    Fault fault;
    int64_t attempt;
    {
      const std::lock_guard lock(mutex_);
      fault = faults_[id];
      attempt = attempts_[id]++;
    }
    const bool first = attempt == 0;
    const json good = {{"choices", {{{"index", 0}, {"text", std::string("a").append(std::to_string(id))}, {"token_ids", {id, id + 1}}}}}};
    if ((fault == Fault::kError500Once && first) || fault == Fault::kAlways500) {
      response.status = 500;
      response.set_content(R"({"error": "engine overloaded"})", "application/json");
    } else if (fault == Fault::kTooManyOnce && first) {
      response.status = 429;
      response.set_header("Retry-After", "0");
    } else if ((fault == Fault::kSlowOnce && first) || fault == Fault::kSlowAlways) {
      std::this_thread::sleep_for(std::chrono::milliseconds(700));
      response.set_content(good.dump(), "application/json");
    } else if (fault == Fault::kDropOnce && first) {
      const std::string text = good.dump();
      response.set_content_provider(text.size(), "application/json",
                                    [text](size_t, size_t, httplib::DataSink& sink) {
                                      sink.write(text.data(), text.size() / 2);
                                      return false;  // the connection closes mid-body
                                    });
    } else if (fault == Fault::kTrickle) {
      response.set_chunked_content_provider("application/json", [](size_t offset, httplib::DataSink& sink) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (offset < 60) return sink.write(" ", 1);
        sink.done();
        return true;
      });
    } else if (fault == Fault::kHuge) {
      json huge = good;
      huge["padding"] = std::string(2 << 20, 'x');
      response.set_content(huge.dump(), "application/json");
    } else if (fault == Fault::kNumberOverflow) {
      response.set_content(R"({"unused": 1e309, "choices": [{"index": 0, "text": "a", "token_ids": [1, 2]}]})",
                           "application/json");
    } else if (fault == Fault::kHang) {
      std::this_thread::sleep_for(std::chrono::seconds(5));
      response.set_content(good.dump(), "application/json");
    } else if (fault == Fault::kMalformed) {
      response.set_content(R"({"choices": [{"index": 0, "text": )", "application/json");
    } else {
      response.set_content(good.dump(), "application/json");
    }
  }

  std::mutex mutex_;
  std::map<int64_t, Fault> faults_;
  LocalHttpServer http_;
  std::map<int64_t, int64_t> attempts_;
};

class CollectorTest : public TempFolderTest {
 protected:
  void SetUp() override {
    TempFolderTest::SetUp();
    dialect_ = dialect_from_name("vllm");
  }

  CollectJob job(const FaultServer& server, int64_t questions) {
    CollectJob job;
    job.endpoint = server.endpoint();
    job.dialect = dialect_.get();
    job.defaults = {.model = "m", .max_new_tokens = 2};
    for (int64_t id = 1; id <= questions; ++id) job.questions.push_back({id, "qa", {std::string("q").append(std::to_string(id))}, {}});
    job.concurrency = 3;
    job.http.timeout_seconds = 0.3;
    job.retries = 3;
    job.backoff_seconds = 0.01;
    job.out = dir_ / "answers.jsonl";
    return job;
  }

  // Question id -> token ids of every line of the answer file; a duplicate fails the test.
  std::map<int64_t, json> lines() {
    std::map<int64_t, json> by_id;
    std::ifstream in(dir_ / "answers.jsonl");
    std::string line;
    while (std::getline(in, line)) {
      const json answer = json::parse(line);
      const int64_t id = answer["question_id"];
      EXPECT_TRUE(by_id.emplace(id, answer["choices"][0]["token_ids"]).second) << "question " << id << " twice";
    }
    return by_id;
  }

  std::unique_ptr<Dialect> dialect_;
};

TEST_F(CollectorTest, RetriesTransientFaultsAndReportsAMalformedResponseThenResumes) {
  FaultServer server({{1, Fault::kError500Once}, {2, Fault::kTooManyOnce}, {3, Fault::kSlowOnce},
                      {4, Fault::kDropOnce}, {5, Fault::kMalformed}});
  CollectJob first = job(server, 8);
  const CollectResult failed = collect_answers(first);
  ASSERT_TRUE(failed.error.has_value());
  EXPECT_EQ(failed.error->substr(0, 90),
            "question 5 turn 0: malformed vllm response: field '(body)': invalid JSON at line 1, column");
  EXPECT_EQ(server.attempts(5), 1) << "a malformed response is not retried";
  const std::map<int64_t, json> partial = lines();
  EXPECT_EQ(static_cast<int64_t>(partial.size()), failed.written);
  EXPECT_EQ(partial.count(5), 0u);

  server.set_fault(5, Fault::kNone);
  first.resume = true;
  const CollectResult resumed = collect_answers(first);
  EXPECT_FALSE(resumed.error.has_value()) << *resumed.error;
  EXPECT_EQ(resumed.skipped, failed.written);
  EXPECT_EQ(resumed.written + resumed.skipped, 8);
  const std::map<int64_t, json> all = lines();
  ASSERT_EQ(all.size(), 8u);
  for (const auto& [id, ids] : all) EXPECT_EQ(ids, json::array({json::array({id, id + 1})})) << "question " << id;
  for (int64_t id : {1, 2, 3, 4}) EXPECT_EQ(server.attempts(id), 2) << "question " << id << ": one retry";
}

// What --resume refuses or drops, the file read from its end and a line at a time.
std::string resume_error(CollectJob job) {
  job.resume = true;
  try {
    const CollectResult result = collect_answers(job);
    return result.error.value_or("no error");
  } catch (const InputError& e) {
    return e.what();
  }
}

TEST_F(CollectorTest, ResumeDropsALineCutShortAndRefusesWhatNoCutCanLeave) {
  FaultServer server({});
  CollectJob two = job(server, 2);
  ASSERT_FALSE(collect_answers(two).error.has_value());
  {
    std::ofstream cut(two.out, std::ios::app);
    cut << R"({"question_id": 3, "choi)";
  }
  CollectJob three = job(server, 3);
  three.resume = true;
  const CollectResult resumed = collect_answers(three);
  ASSERT_FALSE(resumed.error.has_value()) << *resumed.error;
  EXPECT_EQ(resumed.skipped, 2);
  EXPECT_EQ(resumed.written, 1) << "the line cut short is answered again";
  EXPECT_EQ(lines().size(), 3u);

  // 20 MiB of NULs, as a sparse file reads: no newline where any answer line would end.
  std::filesystem::resize_file(three.out, std::filesystem::file_size(three.out) + (size_t{20} << 20));
  const std::string no_cut = "--out: " + three.out.string() + ": more than 16777216 bytes follow its last newline";
  EXPECT_EQ(resume_error(three).substr(0, no_cut.size()), no_cut);
  std::filesystem::remove(three.out);
  std::filesystem::create_directory(three.out);
  EXPECT_EQ(resume_error(three), "--out: " + three.out.string() + ": not a regular file (a folder)");
}

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST_F(CollectorTest, ResumeRefusesAnswersMadeWithOtherRunSettings) {
  FaultServer server({});
  const auto sampled = [&](int64_t questions) {
    CollectJob sampled = job(server, questions);
    sampled.defaults.temperature = 0.7;
    sampled.defaults.seed = 3;
    sampled.resume = true;
    return sampled;
  };
  ASSERT_FALSE(collect_answers(sampled(2)).error.has_value());
  const std::string two = file_text(dir_ / "answers.jsonl");
  const std::unique_ptr<Dialect> openai = dialect_from_name("openai");
  const std::vector<std::pair<std::string, std::function<void(CollectJob&)>>> changes = {
      {"run.engine", [&](CollectJob& j) { j.dialect = openai.get(); }},
      {"run.server", [](CollectJob& j) { j.server = "sglang"; }},
      {"model_id", [](CollectJob& j) { j.defaults.model = "other"; }},
      {"run.dtype", [](CollectJob& j) { j.dtype = "bfloat16"; }},
      {"run.sampling.temperature", [](CollectJob& j) { j.defaults.temperature = 0.8; }},
      {"run.sampling.top_p", [](CollectJob& j) { j.defaults.top_p = 0.9; }},
      {"run.sampling.seed", [](CollectJob& j) { j.defaults.seed = 4; }},
      {"run.sampling.seed", [](CollectJob& j) { j.defaults.seed.reset(); }},
      // Each question's seed follows from its place among the questions and the samples.
      {"run.sampling.seed", [](CollectJob& j) { std::reverse(j.questions.begin(), j.questions.end()); }},
      {"run.sampling.seed", [](CollectJob& j) { j.samples = 2; }},
      {"chat_template", [](CollectJob& j) { j.prompt_format.chat_template = ChatTemplate::kVicuna; }},
      {"run.max_new_tokens", [](CollectJob& j) { j.defaults.max_new_tokens = 3; }},
      {"run.batch_size", [](CollectJob& j) { j.concurrency = 2; }},
  };
  for (const auto& [field, change] : changes) {
    CollectJob other = sampled(3);
    change(other);
    const std::string error = resume_error(other);
    EXPECT_NE(error.find(": field '" + field + "': "), std::string::npos) << field << ": " << error;
    EXPECT_NE(error.find("--resume continues a run with the settings it began with"), std::string::npos) << error;
    EXPECT_EQ(file_text(dir_ / "answers.jsonl"), two) << field << ": a refused --resume changed --out";
  }
  EXPECT_EQ(server.attempts(3), 0) << "a refused --resume asked a question";

  // The same settings, over fewer or more questions: resumed.
  const CollectResult fewer = collect_answers(sampled(1));
  ASSERT_FALSE(fewer.error.has_value()) << *fewer.error;
  EXPECT_EQ(fewer.skipped, 1);
  const CollectResult more = collect_answers(sampled(3));
  ASSERT_FALSE(more.error.has_value()) << *more.error;
  EXPECT_EQ(more.skipped, 2);
  EXPECT_EQ(more.written, 1);
  EXPECT_EQ(lines().size(), 3u);
}

TEST_F(CollectorTest, FillersAreSentAmongTheQuestionsButNotWrittenAndEachQuestionsCrowdIsRecorded) {
  FaultServer server({});
  for (int64_t id : {1, 2, 3, 4, 5, 6, 101, 102}) server.set_fault(id, Fault::kSlowAlways);
  CollectJob crowd = job(server, 6);
  crowd.http.timeout_seconds = 5.0;
  crowd.fillers = {{-1, "filler", {"q101"}, {}}, {-2, "filler", {"q102"}, {}}};
  const CollectResult result = collect_answers(crowd);
  ASSERT_FALSE(result.error.has_value()) << *result.error;
  EXPECT_EQ(result.written, 6);
  EXPECT_EQ(server.attempts(101), 1);
  EXPECT_EQ(server.attempts(102), 1);
  const std::map<int64_t, json> written = lines();
  ASSERT_EQ(written.size(), 6u);
  EXPECT_EQ(written.begin()->first, 1) << "a filler's answer was written";
  ASSERT_EQ(result.crowding.size(), 6u);
  int64_t beside_filler = 0;
  for (const auto& [id, crowding] : result.crowding) {
    EXPECT_GE(id, 1);
    EXPECT_GE(crowding.in_flight, 2) << "question " << id << " was served alone among 8 slow requests, 3 at a time";
    EXPECT_LE(crowding.in_flight, 3) << "question " << id;
    beside_filler += crowding.beside_filler ? 1 : 0;
  }
  EXPECT_GE(beside_filler, 2);

  // One at a time, a filler is never beside a question.
  for (int64_t id : {1, 2, 101}) server.set_fault(id, Fault::kNone);
  CollectJob alone = job(server, 2);
  alone.concurrency = 1;
  alone.fillers = {{-1, "filler", {"q101"}, {}}};
  const CollectResult one_at_a_time = collect_answers(alone);
  EXPECT_EQ(server.attempts(101), 2);
  ASSERT_EQ(one_at_a_time.crowding.size(), 2u);
  for (const auto& [id, crowding] : one_at_a_time.crowding) {
    EXPECT_EQ(crowding.in_flight, 1) << "question " << id;
    EXPECT_FALSE(crowding.beside_filler) << "question " << id;
  }
}

TEST_F(CollectorTest, KeepGoingRecordsEachFailedQuestionAndAnswersTheOthers) {
  FaultServer server({{2, Fault::kAlways500}, {4, Fault::kMalformed}});
  CollectJob all = job(server, 5);
  all.retries = 0;
  all.keep_going = true;
  const CollectResult result = collect_answers(all);
  EXPECT_FALSE(result.error.has_value()) << *result.error;
  EXPECT_EQ(result.written, 3);
  ASSERT_EQ(result.failures.size(), 2u);
  EXPECT_EQ(result.failures.at(2).substr(0, 46), "question 2 turn 0: gave up after 1 attempts; l");
  EXPECT_EQ(result.failures.at(4).substr(0, 40), "question 4 turn 0: malformed vllm respon");
  EXPECT_EQ(lines().size(), 3u);
}

TEST_F(CollectorTest, GivesUpAfterTheBoundedRetriesAndReportsTheLastError) {
  FaultServer server({{2, Fault::kAlways500}});
  CollectJob one = job(server, 2);
  one.concurrency = 1;
  const CollectResult result = collect_answers(one);
  ASSERT_TRUE(result.error.has_value());
  EXPECT_EQ(*result.error, "question 2 turn 0: gave up after 4 attempts; last error HTTP 500 from http://127.0.0.1:" +
                               std::to_string(server.endpoint().port) +
                               R"(/v1/completions: {"error": "engine overloaded"})");
  EXPECT_EQ(server.attempts(2), 4);
  EXPECT_EQ(lines().size(), 1u);
}

TEST_F(CollectorTest, ANotFoundNamesTheUrlAndTheApiAndIsNotRetried) {
  FaultServer server({});
  const std::unique_ptr<Dialect> sglang = dialect_from_name("sglang");
  CollectJob one = job(server, 1);
  one.dialect = sglang.get();
  const CollectResult result = collect_answers(one);
  ASSERT_TRUE(result.error.has_value());
  const std::string url = "http://127.0.0.1:" + std::to_string(server.endpoint().port) + "/generate";
  EXPECT_TRUE(result.error->starts_with("question 1 turn 0: HTTP 404 from " + url)) << *result.error;
  EXPECT_NE(result.error->find("(is --api sglang the server's?"), std::string::npos) << *result.error;
}

TEST_F(CollectorTest, AnInterruptLeavesCompleteLinesAndAKilledRunsCutLineIsDropped) {
  FaultServer server({{3, Fault::kSlowAlways}, {4, Fault::kSlowAlways}});
  CollectJob interrupted = job(server, 6);
  interrupted.concurrency = 1;
  interrupted.http.timeout_seconds = 2.0;
  std::thread interrupter([&server] {
    while (server.attempts(3) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::raise(SIGINT);  // while question 3 is in flight
  });
  const CollectResult result = collect_answers(interrupted);
  interrupter.join();
  EXPECT_TRUE(result.interrupted);
  EXPECT_FALSE(result.error.has_value());
  EXPECT_EQ(lines().size(), 3u) << "questions 1 and 2, and 3 which was in flight";

  std::ofstream(dir_ / "answers.jsonl", std::ios::app) << R"({"question_id": 4, "choi)";
  server.set_fault(3, Fault::kNone);
  server.set_fault(4, Fault::kNone);
  interrupted.resume = true;
  const CollectResult resumed = collect_answers(interrupted);
  EXPECT_FALSE(resumed.error.has_value());
  EXPECT_EQ(resumed.skipped, 3);
  EXPECT_EQ(lines().size(), 6u);
}

TEST_F(CollectorTest, TheTimeoutBoundsAWholeRequestNotEachRead) {
  FaultServer server({{1, Fault::kTrickle}});
  CollectJob one = job(server, 1);
  one.http.timeout_seconds = 0.5;
  one.retries = 0;
  const CollectResult result = collect_answers(one);
  ASSERT_TRUE(result.error.has_value()) << "a reply trickled over 3 s passed a 0.5 s timeout";
  EXPECT_NE(result.error->find("no complete response within 0.5"), std::string::npos) << *result.error;
  EXPECT_EQ(lines().size(), 0u);
}

TEST_F(CollectorTest, AResponseLargerThanTheCapFailsItsQuestion) {
  FaultServer server({{1, Fault::kHuge}});
  CollectJob one = job(server, 1);
  one.http.max_response_bytes = 1 << 20;
  one.retries = 0;
  const CollectResult result = collect_answers(one);
  ASSERT_TRUE(result.error.has_value()) << "answered " << result.written << " with a reply past the cap";
  EXPECT_NE(result.error->find("the response is larger than 1048576 bytes"), std::string::npos) << *result.error;
}

TEST_F(CollectorTest, ANumberBeyondDoubleInAReplyIsAMalformedResponse) {
  FaultServer server({{1, Fault::kNumberOverflow}});
  CollectJob one = job(server, 1);
  const CollectResult result = collect_answers(one);
  ASSERT_TRUE(result.error.has_value());
  EXPECT_NE(result.error->find("question 1 turn 0: malformed vllm response"), std::string::npos) << *result.error;
}

TEST_F(CollectorTest, ASecondInterruptAbandonsTheRequestsInFlight) {
  FaultServer server({{3, Fault::kHang}});
  CollectJob interrupted = job(server, 6);
  interrupted.concurrency = 1;
  interrupted.http.timeout_seconds = 60.0;
  std::thread interrupter([&server] {
    while (server.attempts(3) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::raise(SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::raise(SIGINT);
  });
  const CollectResult result = collect_answers(interrupted);
  interrupter.join();
  EXPECT_TRUE(result.interrupted);
  EXPECT_EQ(lines().size(), 2u) << "question 3, abandoned, has no line";
}

}  // namespace
}  // namespace specgate::cli
