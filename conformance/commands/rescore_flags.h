#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "conformance/rescore/engine_logits.h"
#include "impl/scoring/rescorer.h"

namespace specgate::cli {

// --rescore-endpoint and how to ask it: the reference engine (speculation off) that gives the
// target's log-probabilities in place of a local checkpoint.
struct RescoreEndpointFlags {
  std::string endpoint;
  std::string api = "vllm";
  std::string model;  // empty: the first model the server lists
  int64_t top_k = 20;
  int64_t vocab_size = 0;
  std::vector<int64_t> eos_ids;
  int64_t concurrency = 8;
  std::filesystem::path cache;
  HttpLimits http;
  int64_t retries = 5;
  std::string dtype;  // what the engine computes in, as the user states it (needed)

  bool given() const { return !endpoint.empty(); }
};

// Adds --rescore-endpoint, --rescore-api, --rescore-model, --rescore-top-k, --rescore-vocab-size,
// --rescore-eos-id, --rescore-concurrency, --rescore-cache, --rescore-timeout, --rescore-retries
// and --rescore-dtype; `needs` says which top k the command's verdicts need.
void add_rescore_endpoint_flags(CLI::App& command, RescoreEndpointFlags& flags, const std::string& needs);

// The reference engine at `endpoint` as a re-scorer, and its cost counters. InputError naming the
// flag for an API without prompt log-probabilities, a missing --rescore-vocab-size or --rescore-dtype, or a server
// that does not answer or serve the model.
struct EngineRescorer {
  std::unique_ptr<Rescorer> rescorer;
  const EngineLogits* logits = nullptr;
};
EngineRescorer engine_rescorer(const RescoreEndpointFlags& flags, const std::string& endpoint, const std::string& flag);

// One line on stderr: requests, cached replies, retries, positions scored, bytes and seconds.
void print_rescore_cost(const EngineRescorer& engine, const std::string& what);

}  // namespace specgate::cli
