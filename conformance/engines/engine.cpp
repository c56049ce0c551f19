#include "conformance/engines/engine.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "impl/common/error.h"

namespace specgate::cli {
namespace {

constexpr std::pair<const char*, Engine> kNames[] = {
    {"oracle", Engine::kOracle},        {"nonspec-batch", Engine::kNonspecBatch}, {"eqspec", Engine::kEqspec},
    {"naive-realign", Engine::kNaiveRealign}, {"exspec", Engine::kExspec},        {"exspec-aging", Engine::kExspecAging},
    {"rollback", Engine::kRollback}, {"tree", Engine::kTree}};

}  // namespace

Engine engine_from_name(std::string_view name, std::span<const Engine> choices, std::string_view flag) {
  for (Engine engine : choices) {
    if (name == engine_name(engine)) return engine;
  }
  std::string expected;
  for (size_t i = 0; i < choices.size(); ++i)
    expected += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + engine_name(choices[i]);
  throw InputError(std::string(flag) + ": unknown engine '" + std::string(name) + "' (expected " + expected + ")");
}

std::string engine_name(Engine engine) {
  return std::find_if(std::begin(kNames), std::end(kNames), [engine](const auto& n) { return n.second == engine; })->first;
}

bool speculates(Engine engine) { return engine != Engine::kOracle && engine != Engine::kNonspecBatch; }

bool is_exspec(Engine engine) { return engine == Engine::kExspec || engine == Engine::kExspecAging; }

DecoderKind decoder_kind(Engine engine) {
  switch (engine) {
    case Engine::kNonspecBatch: return DecoderKind::kNonspecBatch;
    case Engine::kEqspec:
    case Engine::kTree: return DecoderKind::kEqspec;
    case Engine::kNaiveRealign: return DecoderKind::kNaiveRealign;
    case Engine::kRollback: return DecoderKind::kRollback;
    case Engine::kExspec: return DecoderKind::kExspec;
    case Engine::kExspecAging: return DecoderKind::kExspecAging;
    case Engine::kOracle: break;
  }
  throw std::logic_error("decoder_kind: the oracle is not a batch decoder");
}

}  // namespace specgate::cli
