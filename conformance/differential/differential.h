#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "conformance/collect/collector.h"
#include "conformance/collect/server_counters.h"
#include "conformance/differential/schedule.h"
#include "conformance/differential/side_channels.h"
#include "impl/scoring/score_report.h"

namespace specgate {
class Rescorer;
}

namespace specgate::cli {

struct DifferentialJob {
  // The server and what to ask it: endpoint, dialect, request settings, questions, prompts and
  // HTTP limits. Its out, concurrency, fillers and stagger are set per schedule.
  CollectJob collect;
  std::optional<Endpoint> spec_off;  // the same model served with speculation off
  std::vector<Schedule> schedules;   // schedules[0] sends one request at a time: the reference
  int64_t filler_chars = 2000;       // each filler prompt is at least this long
  std::filesystem::path out_dir;     // <schedule>.jsonl for each schedule's answers
  ScoreSettings score;               // near-tie threshold and re-scoring
  std::filesystem::path bench;       // the questions' file, for the report and re-scored prompts
  const Rescorer* rescorer = nullptr;
  bool near_ties_fail = false;
  double logprob_tolerance = 0.05;  // nats, between the log-probabilities of one token
};

// A question answered differently than it was alone.
struct ScheduleDifference {
  int64_t question_id = 0;
  // hard, near_tie, unattributed or length (an attributed divergence); missing (not answered in
  // this schedule) or prompt_mismatch (the server was fed another prompt).
  std::string kind;
  int64_t turn = 0, index = 0;  // the first differing token of that turn
  AttributionResult attribution;
  std::string note;  // why it is unattributed or missing
  Crowding crowding;
};

struct ScheduleOutcome {
  Schedule schedule;
  std::string endpoint;             // as given
  std::filesystem::path answers;
  int64_t questions = 0, identical = 0, missing = 0;  // missing: not answered in this schedule
  DivergenceCounts divergences;
  std::vector<ScheduleDifference> differences;  // by question id
  // What the server reported besides tokens that cannot be right, in this schedule's answers.
  std::vector<SideChannelFinding> side_channels;
  int64_t checked_turns = 0, rescored_turns = 0;  // of side channels; re-scored: log-probabilities against the target's
  std::map<int64_t, int64_t> chunk_sizes;         // streamed: how many chunks carried each number of tokens
  double seconds = 0.0;                           // to collect this schedule's answers
};

// Answers compared under one feature of how they were served, and how many differed.
struct FeatureTally {
  std::string feature;
  int64_t answers = 0, differing = 0, hard = 0;
};

struct DifferentialReport {
  std::string generated_at;
  std::string endpoint, api, model;
  std::optional<std::string> server;  // what the server calls itself (/v1/models' owned_by)
  std::optional<std::string> spec_off_endpoint;
  InputFile bench;
  int64_t max_new_tokens = 0;
  CrowdSettings crowd;
  double near_tie_threshold = 0.0;
  int64_t top_logprobs = 0, prompt_logprobs = 0;
  double logprob_tolerance = 0.0;
  bool rescored = false, near_ties_fail = false;
  std::vector<ScheduleOutcome> schedules;  // schedules[0] is the reference, compared with nothing
  std::vector<FeatureTally> features;
  // What the server's GET /metrics counted over every schedule, where it has speculation counters.
  std::optional<SpeculationCounters> counters;
  GateResult gate;
};

// Collects every schedule's answers from the server, then compares each with the first
// schedule's, attributing each first difference as `score` does, and checks what each answer
// reported besides its tokens (check_side_channels; finish reasons against the first
// schedule's, and the spec-off schedule's log-probabilities too: compare_reports), and each
// streamed answer against the first schedule's whole one (compare_streams). The gate fails on a hard, unattributed or length
// difference, a missing answer or a side-channel finding in any schedule (on near-ties too with
// near_ties_fail). Throws InputError when a schedule cannot be collected, Interrupted when a
// signal stopped it.
DifferentialReport run_differential(const DifferentialJob& job, const CrowdSettings& crowd);

// Why the run could not have caught a layout fault, from the server's counters: too few
// realignments, or none counted; none when it could, or when the server pages its cache.
std::optional<std::string> coverage_warning_of(const DifferentialReport& report);

// The long prompts sent as fillers: the questions' first turns, cycled from a different one for
// each filler until at least `chars` long.
std::vector<Question> filler_questions(const std::vector<Question>& questions, int64_t fillers, int64_t chars);

}  // namespace specgate::cli
