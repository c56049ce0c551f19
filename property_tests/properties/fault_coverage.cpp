#include "property_tests/properties/fault_coverage.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <random>

#include "impl/common/short_number.h"
#include "property_tests/properties/case_context.h"

namespace specgate::props {
namespace {

constexpr int64_t kDrafts = 4, kNewTokens = 32;

// Realignment counts grouped as reports show them.
std::vector<CoverageBucket> buckets(std::initializer_list<std::pair<int64_t, int64_t>> ranges) {
  std::vector<CoverageBucket> out;
  for (const auto& [low, high] : ranges) out.push_back({.low = low, .high = high});
  return out;
}

void add(std::vector<CoverageBucket>& into, int64_t realignments, bool caught) {
  for (CoverageBucket& bucket : into) {
    if (realignments < bucket.low || realignments > bucket.high) continue;
    ++bucket.count;
    bucket.caught += caught ? 1 : 0;
  }
}

// One trial's case: a fresh target, random prompts, every draft rejected but in
// `ragged_rounds` rounds, each of which one row keeps 1 to K drafts.
DecodeCase trial_case(DecoderKind decoder, int64_t ragged_rounds, std::mt19937_64& random) {
  const auto uniform = [&](int64_t low, int64_t high) { return std::uniform_int_distribution<int64_t>(low, high)(random); };
  DecodeCase c;
  c.target = {.layers = 2, .heads = 2, .kv_heads = 1, .head_dim = 4, .hidden = 16, .vocab = 64, .seed = random()};
  c.draft = DraftKind::kScriptedModel;
  c.draft_seed = random();
  c.decoder = decoder;
  const int64_t rows = decoder == DecoderKind::kExspec ? 8 : 4;
  c.exspec = {.batch_size = 4, .window = rows};
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<int64_t> prompt(static_cast<size_t>(uniform(2, 20)));
    for (int64_t& token : prompt) token = uniform(0, c.target.vocab - 1);
    c.prompts.push_back(std::move(prompt));
  }
  c.k = kDrafts;
  c.max_new_tokens = kNewTokens;
  c.script_kind = "ragged-rounds";
  const int64_t rounds = kNewTokens;  // a row that rejects every draft takes this many rounds at most
  c.script.assign(static_cast<size_t>(rows), std::vector<int64_t>(static_cast<size_t>(rounds), 0));
  std::vector<int64_t> chosen(static_cast<size_t>(rounds - 8));
  for (size_t r = 0; r < chosen.size(); ++r) chosen[r] = static_cast<int64_t>(r);
  std::shuffle(chosen.begin(), chosen.end(), random);
  for (int64_t n = 0; n < ragged_rounds; ++n)
    c.script[static_cast<size_t>(uniform(0, rows - 1))][static_cast<size_t>(chosen[n])] = uniform(1, kDrafts);
  return c;
}

// The rate q at which one realignment shows the fault, most likely given rows that stayed
// exact with probability (1 - q)^m after m realignments.
double per_realignment_rate(const std::vector<std::pair<int64_t, bool>>& rows) {
  const auto log_likelihood = [&](double q) {
    double sum = 0.0;
    for (const auto& [m, caught] : rows) {
      const double exact = std::pow(1.0 - q, static_cast<double>(m));
      sum += caught ? std::log(std::max(1.0 - exact, 1e-300)) : std::log(std::max(exact, 1e-300));
    }
    return sum;
  };
  double low = 0.0, high = 1.0;
  for (int i = 0; i < 200; ++i) {
    const double a = low + (high - low) / 3.0, b = high - (high - low) / 3.0;
    if (log_likelihood(a) < log_likelihood(b)) {
      low = a;
    } else {
      high = b;
    }
  }
  return (low + high) / 2.0;
}

std::vector<Fault> default_faults() {
  std::vector<Fault> faults;
  for (Fault fault : all_faults()) {
    if (!is_sampling_only(fault) && !is_tree_only(fault) && fault != Fault::kCancelShiftsRows) faults.push_back(fault);
  }
  return faults;
}

FaultCoverage measure(Fault fault, DecoderKind decoder, const FaultCoverageOptions& options) {
  FaultCoverage out{.fault = fault,
                    .decoder = decoder,
                    .rows = buckets({{0, 0}, {1, 1}, {2, 2}, {3, 4}, {5, 1 << 30}}),
                    .runs = buckets({{0, 0}, {1, 2}, {3, 4}, {5, 8}, {9, 16}, {17, 1 << 30}})};
  std::mt19937_64 random(options.seed * 1000003 + static_cast<uint64_t>(fault) * 131 + static_cast<uint64_t>(decoder));
  std::vector<std::pair<int64_t, bool>> realigned_rows;
  FaultSet faults;
  faults.add(fault);
  for (int64_t ragged : options.ragged_rounds) {
    for (int64_t trial = 0; trial < options.trials; ++trial) {
      const DecodeCase c = trial_case(decoder, ragged, random);
      CaseContext context(c);
      const std::vector<SequenceRequest> requests = requests_for(c.prompts);
      DecodeRun run;
      try {
        run = context.run(requests, faults);
      } catch (const std::exception&) {
        ++out.errors;
        add(out.runs, 0, true);
        continue;
      }
      int64_t realignments = 0;
      bool caught = run.results.size() != requests.size();
      for (const SequenceResult& result : run.results) {
        const bool differs = result.tokens != context.oracle_output(c.prompts.at(result.sequence_index));
        add(out.rows, result.realignments, differs);
        if (result.realignments > 0) realigned_rows.emplace_back(result.realignments, differs);
        realignments += result.realignments;
        caught = caught || differs;
      }
      add(out.runs, realignments, caught);
    }
  }
  out.shows_without_realignment = out.rows.front().caught > 0;
  if (!realigned_rows.empty()) out.per_realignment = per_realignment_rate(realigned_rows);
  if (out.per_realignment < 1e-9) out.per_realignment = 0.0;
  if (out.per_realignment > 0.0) {
    out.realignments_for_95 =
        out.per_realignment >= 1.0 - 1e-9
            ? 1
            : static_cast<int64_t>(std::ceil(std::log(0.05) / std::log(1.0 - out.per_realignment)));
  }
  return out;
}

std::string rate(const CoverageBucket& bucket) {
  if (bucket.count == 0) return "–";
  return std::to_string(bucket.caught) + "/" + std::to_string(bucket.count);
}

std::string range(const CoverageBucket& bucket) {
  if (bucket.high >= (1 << 30)) return std::to_string(bucket.low) + "+";
  if (bucket.low == bucket.high) return std::to_string(bucket.low);
  return std::to_string(bucket.low) + "-" + std::to_string(bucket.high);
}

nlohmann::json to_json(const std::vector<CoverageBucket>& buckets) {
  nlohmann::json out = nlohmann::json::array();
  for (const CoverageBucket& b : buckets)
    out.push_back({{"realignments", range(b)}, {"count", b.count}, {"caught", b.caught}});
  return out;
}

}  // namespace

bool is_layout_fault(Fault fault) {
  switch (fault) {
    case Fault::kPaddingNeverRemoved:
    case Fault::kStalePositionIds:
    case Fault::kKvNotShifted:
    case Fault::kMaskLetsPaddingThrough:
    case Fault::kCancelShiftsRows:
    case Fault::kGroupMixedLengths:
    case Fault::kWrongSequenceKv:
      return true;
    default:
      return false;
  }
}

FaultCoverageTable measure_fault_coverage(const FaultCoverageOptions& options) {
  FaultCoverageTable table{.options = options};
  const std::vector<Fault> faults = options.faults.empty() ? default_faults() : options.faults;
  for (DecoderKind decoder : {DecoderKind::kEqspec, DecoderKind::kExspec}) {
    for (Fault fault : faults) {
      if (is_exspec_only(fault) && decoder != DecoderKind::kExspec) continue;
      table.faults.push_back(measure(fault, decoder, options));
      const FaultCoverage& done = table.faults.back();
      if (options.progress)
        options.progress(std::string(fault_name(fault)) + " on " + std::string(decoder_name(decoder)) +
                         ": per realignment " + short_number(done.per_realignment));
      if (is_layout_fault(fault) && !done.shows_without_realignment && done.realignments_for_95)
        table.threshold = std::max(table.threshold.value_or(0), *done.realignments_for_95);
    }
  }
  return table;
}

nlohmann::json to_json(const FaultCoverageTable& table) {
  nlohmann::json faults = nlohmann::json::array();
  for (const FaultCoverage& f : table.faults) {
    faults.push_back({{"fault", fault_name(f.fault)},
                      {"decoder", decoder_name(f.decoder)},
                      {"layout", is_layout_fault(f.fault)},
                      {"shows_without_realignment", f.shows_without_realignment},
                      {"per_realignment", f.per_realignment},
                      {"realignments_for_95", f.realignments_for_95 ? nlohmann::json(*f.realignments_for_95) : nlohmann::json()},
                      {"errors", f.errors},
                      {"rows", to_json(f.rows)},
                      {"runs", to_json(f.runs)}});
  }
  nlohmann::json ragged = table.options.ragged_rounds;
  return {{"trials", table.options.trials},
          {"seed", table.options.seed},
          {"ragged_rounds", ragged},
          {"draft_tokens", kDrafts},
          {"max_new_tokens", kNewTokens},
          {"threshold", table.threshold ? nlohmann::json(*table.threshold) : nlohmann::json()},
          {"faults", faults}};
}

std::string to_markdown(const FaultCoverageTable& table) {
  std::string out =
      "Each fault, each decoder: " + std::to_string(table.options.trials) + " runs per ragged-round count " +
      nlohmann::json(table.options.ragged_rounds).dump() +
      " (fresh 2-layer float64 target, random prompts of 2-20 tokens, EQSPEC 4 rows in one batch, EXSPEC 8 rows in a "
      "window of 8 at batch 4, K " + std::to_string(kDrafts) + ", " + std::to_string(kNewTokens) +
      " new tokens, every draft rejected but in the ragged rounds). A run is caught when some answer differs from the "
      "oracle's, as `score` would see it. Layout faults move or address rows' K/V wrongly; the threshold is "
      "taken over those that show only in realigned rows.\n\n"
      "| fault | layout | decoder | runs caught, by the run's realignments: 0 | 1-2 | 3-4 | 5-8 | 9-16 | 17+ | rows caught, by "
      "the row's: 0 | 1 | 2 | 3-4 | 5+ | per realignment | realignments for 95% |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const FaultCoverage& f : table.faults) {
    out += "| `" + std::string(fault_name(f.fault)) + "` | " + (is_layout_fault(f.fault) ? "yes" : "") + " | " +
           std::string(decoder_name(f.decoder)) + " |";
    for (const CoverageBucket& b : f.runs) out.append(" ").append(rate(b)).append(" |");
    for (const CoverageBucket& b : f.rows) out.append(" ").append(rate(b)).append(" |");
    out += " " + (f.shows_without_realignment ? std::string("shows without")
                  : f.per_realignment > 0.0     ? short_number(f.per_realignment, 3)
                                                : std::string("never shows here")) +
           " |";
    out += " " + (f.shows_without_realignment || !f.realignments_for_95 ? std::string("–")
                                                                          : std::to_string(*f.realignments_for_95)) +
           " |\n";
  }
  out += "\nThreshold: " + (table.threshold ? std::to_string(*table.threshold) : std::string("none")) +
         " realignments (the most any layout fault that shows only in realigned rows asks for 95%).\n";
  return out;
}

}  // namespace specgate::props
