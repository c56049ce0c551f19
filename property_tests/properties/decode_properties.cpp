#include "property_tests/properties/decode_properties.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>

#include <c10/util/Exception.h>
#include <rapidcheck.h>

#include "impl/common/error.h"
#include "impl/decoding/invariant_checker.h"
#include "property_tests/properties/case_context.h"

namespace specgate::props {
namespace {

std::string ids(const std::vector<int64_t>& tokens) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < tokens.size(); ++i) out << (i ? " " : "") << tokens[i];
  out << "]";
  return out.str();
}

std::string_view reason_name(FinishReason reason) { return reason == FinishReason::kEos ? "eos" : "length"; }

// Where two token lists part, or empty when they are equal.
CaseFailure compare_tokens(const std::string& what, const std::vector<int64_t>& expected,
                       const std::vector<int64_t>& actual) {
  if (expected == actual) return std::nullopt;
  const size_t common = std::mismatch(expected.begin(), expected.end(), actual.begin(), actual.end()).first - expected.begin();
  return what + ": first difference at token " + std::to_string(common) + ": expected " + ids(expected) + ", got " +
         ids(actual);
}

// The same row in two runs: tokens, finish reason and acceptance per round.
CaseFailure compare_results(const std::string& what, const SequenceResult& expected, const SequenceResult& actual) {
  if (CaseFailure v = compare_tokens(what + " (tokens)", expected.tokens, actual.tokens)) return v;
  if (expected.finish_reason != actual.finish_reason)
    return what + ": finish reason " + std::string(reason_name(actual.finish_reason)) + " instead of " +
           std::string(reason_name(expected.finish_reason));
  if (expected.rounds != actual.rounds) return what + ": rounds " + std::to_string(actual.rounds) + " instead of " + std::to_string(expected.rounds);
  return compare_tokens(what + " (tokens per round)", expected.accept_lengths, actual.accept_lengths);
}

// One result per request, in request order.
CaseFailure check_result_order(const std::vector<SequenceResult>& results, size_t requests) {
  if (results.size() != requests)
    return "the decoder returned " + std::to_string(results.size()) + " results for " + std::to_string(requests) + " sequences";
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].sequence_index != static_cast<int64_t>(i))
      return "result " + std::to_string(i) + " belongs to sequence " + std::to_string(results[i].sequence_index);
  }
  return std::nullopt;
}

template <typename Check>
CaseFailure guarded(Check check) {
  try {
    return check();
  } catch (const InvariantViolation& e) {
    return std::string("invariant violated: ") + e.what();
  } catch (const c10::Error& e) {
    return std::string("the decoder failed: ") + e.what_without_backtrace();
  } catch (const std::exception& e) {
    return std::string("the decoder failed: ") + e.what();
  }
}

CaseFailure oracle_equivalence(const DecodeCase& c, const FaultSet& faults) {
  return guarded([&]() -> CaseFailure {
    CaseContext context(c);
    const std::vector<SequenceRequest> requests = requests_for(c.prompts);
    const DecodeRun run = context.run(requests, faults);
    if (CaseFailure v = check_result_order(run.results, requests.size())) return v;
    for (size_t i = 0; i < requests.size(); ++i) {
      const std::vector<int64_t> expected = context.oracle_output(c.prompts[i]);
      const SequenceResult& result = run.results[i];
      if (CaseFailure v = compare_tokens("sequence " + std::to_string(i) + " differs from the oracle", expected, result.tokens))
        return v;
      const FinishReason reason = context.is_eos(expected.back()) ? FinishReason::kEos : FinishReason::kLength;
      if (result.finish_reason != reason)
        return "sequence " + std::to_string(i) + ": finish reason " + std::string(reason_name(result.finish_reason)) +
               ", the oracle's is " + std::string(reason_name(reason));
    }
    return std::nullopt;
  });
}

CaseFailure invariants(const DecodeCase& c, const FaultSet& faults) {
  return guarded([&]() -> CaseFailure {
    CaseContext context(c);
    context.run(requests_for(c.prompts), faults, /*check_invariants=*/true);
    return std::nullopt;
  });
}

CaseFailure scripted_acceptance(const DecodeCase& c, const FaultSet& faults) {
  return guarded([&]() -> CaseFailure {
    CaseContext context(c);
    const std::vector<SequenceRequest> requests = requests_for(c.prompts);
    const DecodeRun run = context.run(requests, faults);
    if (CaseFailure v = check_result_order(run.results, requests.size())) return v;
    int64_t scripted = 0, drafted = 0, rounds = 0, generated = 0, round_tokens = 0;
    for (size_t i = 0; i < run.results.size(); ++i) {
      const SequenceResult& r = run.results[i];
      const std::string where = "sequence " + std::to_string(i) + ": ";
      const std::vector<int64_t>& lengths = r.accept_lengths;
      const int64_t count = static_cast<int64_t>(lengths.size());
      if (r.rounds != count)
        return where + std::to_string(r.rounds) + " rounds but " + std::to_string(count) + " acceptance lengths";
      const int64_t appended = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
      if (1 + appended != static_cast<int64_t>(r.tokens.size()))
        return where + "the prompt pass and the rounds appended 1 + " + std::to_string(appended) + " tokens, the result holds " +
               std::to_string(r.tokens.size());
      for (int64_t round = 0; round < count; ++round) {
        const int64_t expected = c.scripted_accepts(static_cast<int64_t>(i), round) + 1;
        const bool last = round + 1 == count;
        // The last round may end early, at EOS or max_new_tokens, and only there.
        const bool cut = last && lengths[round] < expected &&
                         (context.is_eos(r.tokens.back()) || static_cast<int64_t>(r.tokens.size()) == c.max_new_tokens);
        if (lengths[round] != expected && !(cut && lengths[round] >= 1))
          return where + "round " + std::to_string(round) + " appended " + std::to_string(lengths[round]) +
                 " tokens, the script gives " + std::to_string(expected - 1) + " accepted drafts plus one";
        scripted += expected - 1;
        drafted += c.draft_length(static_cast<int64_t>(i), round);
      }
      rounds += count;
      generated += static_cast<int64_t>(r.tokens.size());
      round_tokens += appended;
    }
    const DecodeStats& s = run.stats;
    const std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> counters = {
        {"accepted", {s.accepted, scripted}},           {"drafted", {s.drafted, drafted}},
        {"row_rounds", {s.row_rounds, rounds}},         {"generated", {s.generated, generated}},
        {"round_tokens", {s.round_tokens, round_tokens}}};
    for (const auto& [name, values] : counters) {
      if (values.first != values.second)
        return "DecodeStats." + name + " is " + std::to_string(values.first) + ", the rows give " + std::to_string(values.second);
    }
    return std::nullopt;
  });
}

CaseFailure row_isolation(const DecodeCase& c, const FaultSet& faults) {
  return guarded([&]() -> CaseFailure {
    CaseContext context(c);
    const size_t watched = static_cast<size_t>(c.watched_row);
    const std::vector<SequenceRequest> requests = requests_for(c.prompts);
    const DecodeRun original = context.run(requests, faults);
    if (CaseFailure v = check_result_order(original.results, requests.size())) return v;

    std::vector<std::vector<int64_t>> replaced = c.replacements;
    replaced[watched] = c.prompts[watched];
    const DecodeRun other_rows = context.run(requests_for(replaced), faults);
    if (CaseFailure v = check_result_order(other_rows.results, requests.size())) return v;
    const std::string name = "sequence " + std::to_string(watched);
    if (CaseFailure v = compare_results(name + " changed when the other rows' prompts were replaced",
                                    original.results[watched], other_rows.results[watched]))
      return v;

    const std::vector<SequenceRequest> alone = {requests[watched]};
    const DecodeRun single = context.run(alone, faults);
    if (single.results.size() != 1) return name + " alone: the decoder returned " + std::to_string(single.results.size()) + " results";
    return compare_results(name + " changed when it ran alone", original.results[watched], single.results[0]);
  });
}

CaseFailure exspec_pool(const DecodeCase& c, const FaultSet& faults) {
  return guarded([&]() -> CaseFailure {
    CaseContext context(c);
    const std::vector<SequenceRequest> requests = requests_for(c.prompts);
    const DecodeRun run = context.run(requests, faults);
    if (CaseFailure v = check_result_order(run.results, requests.size())) return v;
    std::map<int64_t, int64_t> finished;
    for (const SequenceLatency& latency : run.stats.latencies) ++finished[latency.sequence_index];
    for (size_t i = 0; i < requests.size(); ++i) {
      const std::string where = "sequence " + std::to_string(i) + " ";
      const int64_t times = finished.contains(i) ? finished.at(i) : 0;
      if (times != 1) return where + "finished " + std::to_string(times) + " times";
      const std::vector<int64_t>& tokens = run.results[i].tokens;
      const int64_t length = static_cast<int64_t>(tokens.size());
      if (length < 1 || length > c.max_new_tokens) return where + "holds " + std::to_string(length) + " tokens";
      const auto first_eos = std::find_if(tokens.begin(), tokens.end(), [&](int64_t t) { return context.is_eos(t); });
      const bool ends_at_eos = first_eos != tokens.end();
      if (ends_at_eos && first_eos + 1 != tokens.end()) return where + "runs on past its EOS: " + ids(tokens);
      const FinishReason reason = ends_at_eos ? FinishReason::kEos : FinishReason::kLength;
      if (!ends_at_eos && length != c.max_new_tokens) return where + "stopped after " + std::to_string(length) + " tokens without EOS";
      if (run.results[i].finish_reason != reason) return where + "has the wrong finish reason";
    }
    if (finished.size() != requests.size())
      return "DecodeStats.latencies names " + std::to_string(finished.size()) + " sequences, not " + std::to_string(requests.size());
    const ExspecStats& e = run.exspec_stats;
    if (e.grouped_steps + e.fallback_steps != e.steps)
      return "ExspecStats: " + std::to_string(e.grouped_steps) + " grouped + " + std::to_string(e.fallback_steps) +
             " fallback steps != " + std::to_string(e.steps) + " steps";
    return std::nullopt;
  });
}

CaseFailure determinism(const DecodeCase& c, const FaultSet& faults) {
  return guarded([&]() -> CaseFailure {
    CaseContext context(c);
    const std::vector<SequenceRequest> requests = requests_for(c.prompts);
    const DecodeRun first = context.run(requests, faults);
    const DecodeRun second = context.run(requests, faults);
    if (first.results.size() != second.results.size()) return "the two runs returned different numbers of results";
    for (size_t i = 0; i < first.results.size(); ++i) {
      if (CaseFailure v = compare_results("result " + std::to_string(i) + " differs between two runs", first.results[i], second.results[i]))
        return v;
    }
    const DecodeStats &a = first.stats, &b = second.stats;
    if (a.rounds != b.rounds || a.drafted != b.drafted || a.accepted != b.accepted || a.generated != b.generated ||
        a.row_rounds != b.row_rounds || a.round_tokens != b.round_tokens)
      return "DecodeStats counters differ between two runs";
    const ExspecStats &x = first.exspec_stats, &y = second.exspec_stats;
    if (x.steps != y.steps || x.grouped_steps != y.grouped_steps || x.fallback_steps != y.fallback_steps ||
        x.longest_wait != y.longest_wait)
      return "ExspecStats differ between two runs";

    // Another batch composition: the same sequences (names, streams) in reverse order.
    const std::vector<SequenceRequest> reversed(requests.rbegin(), requests.rend());
    const DecodeRun third = context.run(reversed, faults);
    if (third.results.size() != requests.size()) return "the reversed batch returned a different number of results";
    for (size_t j = 0; j < reversed.size(); ++j) {
      const size_t i = static_cast<size_t>(reversed[j].sequence_index);
      if (CaseFailure v = compare_results("sequence " + std::to_string(i) + " changed when the batch was reversed",
                                      first.results[i], third.results[j]))
        return v;
    }
    return std::nullopt;
  });
}

CaseFailure cancellation(const DecodeCase& c, const FaultSet& faults) {
  return guarded([&]() -> CaseFailure {
    CaseContext context(c);
    const std::vector<SequenceRequest> requests = requests_for(c.prompts);
    const DecodeRun whole = context.run(requests, faults);
    if (CaseFailure v = check_result_order(whole.results, requests.size())) return v;
    // Every other sequence, from one the case's seed picks, before a step from 0 (waiting) to 3.
    std::map<int64_t, int64_t> cancel_at;
    for (int64_t i = 0; i < c.batch_size(); ++i) {
      if ((i + static_cast<int64_t>(c.target.seed)) % 2 == 0) cancel_at[i] = (i / 2) % 4;
    }
    std::map<int64_t, int64_t> finished_at;
    for (auto& [step, result] : context.run_cancelling(requests, faults, cancel_at)) {
      const int64_t i = result.sequence_index;
      const std::string name = "sequence " + std::to_string(i);
      if (i < 0 || i >= c.batch_size()) return "the decoder returned unknown sequence " + std::to_string(i);
      if (!finished_at.emplace(i, step).second) return name + " finished twice";
      if (cancel_at.contains(i) && step >= cancel_at.at(i))
        return name + ", cancelled before step " + std::to_string(cancel_at.at(i)) + ", finished in step " + std::to_string(step);
      if (CaseFailure v = compare_results(name + " changed when others were cancelled", whole.results[i], result)) return v;
    }
    for (int64_t i = 0; i < c.batch_size(); ++i) {
      if (!cancel_at.contains(i) && !finished_at.contains(i)) return "sequence " + std::to_string(i) + " never finished";
    }
    return std::nullopt;
  });
}

// The ways the rows of a mixed batch choose their tokens: greedy, and each warper alone and
// together. Row i takes setting (i + case seed) % 5, so that the row that starts the pattern moves
// from case to case.
std::vector<SamplingParams> mixed_sampling(const DecodeCase& c) {
  const uint64_t seed = c.sampling.seed;
  const std::vector<SamplingParams> settings = {
      {},
      {.temperature = 0.7, .seed = seed},
      {.temperature = 1.3, .top_k = 4, .seed = seed},
      {.temperature = 1.0, .top_p = 0.8, .seed = seed},
      {.temperature = 0.9, .top_k = 6, .top_p = 0.9, .min_p = 0.2, .seed = seed},
  };
  std::vector<SamplingParams> rows;
  for (int64_t i = 0; i < c.batch_size(); ++i) rows.push_back(settings[(i + seed) % settings.size()]);
  return rows;
}

CaseFailure mixed_sampling(const DecodeCase& c, const FaultSet& faults) {
  return guarded([&]() -> CaseFailure {
    CaseContext context(c);
    const std::vector<SamplingParams> settings = mixed_sampling(c);
    std::vector<SequenceRequest> requests = requests_for(c.prompts);
    for (size_t i = 0; i < requests.size(); ++i) requests[i].sampling = settings[i];
    const DecodeRun mixed = context.run(requests, faults);
    if (CaseFailure v = check_result_order(mixed.results, requests.size())) return v;
    for (size_t i = 0; i < requests.size(); ++i) {
      // The same batch with every row sampled as row i is.
      std::vector<SequenceRequest> alike = requests;
      for (SequenceRequest& request : alike) request.sampling = settings[i];
      const DecodeRun uniform = context.run(alike, faults);
      if (CaseFailure v = compare_results("sequence " + std::to_string(i) + " (" + describe(settings[i]) +
                                          ") changed beside rows sampled otherwise",
                                      uniform.results[i], mixed.results[i]))
        return v;
    }
    return std::nullopt;
  });
}

}  // namespace

const std::vector<DecodeProperty>& decode_properties() {
  static const std::vector<DecodeProperty> properties = {
      {"oracle-equivalence", "greedy: every row's output equals the oracle's, token for token", {.greedy_only = true},
       oracle_equivalence},
      {"invariants", "I1-I4 hold after every round, for both caches", {}, invariants},
      {"scripted-acceptance", "each round keeps exactly the scripted drafts plus one; DecodeStats agree",
       {.greedy_only = true, .scripted_only = true}, scripted_acceptance},
      {"row-isolation", "a row's output never depends on the other rows' prompts or on running alone",
       {.isolation = true}, row_isolation},
      {"exspec-pool", "EXSPEC: every sequence finishes exactly once, results in request order", {.exspec_only = true},
       exspec_pool},
      {"determinism", "the same case twice gives the same results and counters; reversing the batch changes no sequence",
       {}, determinism},
      {"cancellation", "sequences cancelled while waiting or mid-decode leave, I1-I4 hold, and the others' outputs do not change",
       {}, cancellation},
      {"mixed-sampling", "rows sampled differently in one batch (greedy, temperature, top-k, top-p, min-p) each give what a batch of their own setting gives",
       {.free_drafts = true}, mixed_sampling},
      {"tree-equivalence", "greedy token trees: every row's output equals the oracle's, whatever the tree and the branch the target takes",
       {.greedy_only = true, .scripted_only = true, .tree = true}, oracle_equivalence},
  };
  return properties;
}

const DecodeProperty& decode_property(std::string_view name) {
  std::string known;
  for (const DecodeProperty& property : decode_properties()) {
    if (property.name == name) return property;
    known += (known.empty() ? "" : ", ") + std::string(property.name);
  }
  throw InputError("property: unknown property '" + std::string(name) + "' (known: " + known + ")");
}

void check_generated_case(const DecodeProperty& property, const FaultSet& faults, const FailureSink& on_failure) {
  const DecodeCase c = *gen::decode_case(property.shape);
  if (const CaseFailure failure = property.check(c, faults)) {
    if (on_failure) on_failure(c, *failure);
    RC_FAIL(*failure);
  }
}

}  // namespace specgate::props
