#include "conformance/bench/bench_workload.h"

#include <cstdio>

#include "impl/common/error.h"

namespace specgate::cli {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::string AcceptanceMode::name() const {
  if (!scripted_alpha) return "model";
  char text[32];
  std::snprintf(text, sizeof text, "scripted:%g", *scripted_alpha);
  return text;
}

AcceptanceMode acceptance_from_name(const std::string& name) {
  if (name == "model") return {};
  constexpr std::string_view kPrefix = "scripted:";
  if (name.starts_with(kPrefix)) {
    const std::string number = name.substr(kPrefix.size());
    try {
      size_t used = 0;
      const double alpha = std::stod(number, &used);
      if (used == number.size() && alpha >= 0.0 && alpha <= 1.0) return {alpha};
    } catch (const std::exception&) {
    }
  }
  throw InputError("--acceptance: '" + name + "' is neither model nor scripted:ALPHA with 0 <= ALPHA <= 1");
}

AcceptanceScript bernoulli_script(double alpha, int64_t k, uint64_t seed) {
  return [alpha, k, seed](int64_t sequence, int64_t round) {
    uint64_t state = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(sequence) * 0x100000001b3ULL +
                                                  static_cast<uint64_t>(round)));
    int64_t right = 0;
    while (right < k) {
      state = splitmix64(state);
      const double draw = static_cast<double>(state >> 11) * 0x1.0p-53;
      if (draw >= alpha) break;
      ++right;
    }
    return right;
  };
}

std::vector<SequenceRequest> cycle_prompts(const std::vector<std::vector<int64_t>>& prompts, int64_t count) {
  std::vector<SequenceRequest> requests;
  for (int64_t i = 0; i < count; ++i) requests.push_back({i, prompts[i % prompts.size()]});
  return requests;
}

}  // namespace specgate::cli
