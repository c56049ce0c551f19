#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>

#include "conformance/commands/commands.h"
#include "conformance/commands/decoder_flags.h"
#include "conformance/commands/model_flags.h"
#include "conformance/commands/tree_flags.h"
#include "conformance/engines/model_pair.h"
#include "conformance/serve/completion_server.h"
#include "impl/bench/chat_template.h"
#include "impl/bench/conversation.h"
#include "impl/common/error.h"
#include "impl/decoding/faults.h"

namespace specgate::cli {
namespace {

struct ServeOptions {
  std::filesystem::path target, draft;
  std::string engine = "exspec";
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string model;
  std::string chat_template = "raw";
  DecoderFlags decoder;
  int64_t max_queue = 256;
  int64_t max_model_len = 4096;
  int64_t max_logprob_entries = ServeLimits{}.max_logprob_entries;
  ModelFlags loading{.dtype = "float32"};
  std::vector<std::string> faults;
  ConnectionLimits connections;
  TreeFlags tree;
};

// The seeded faults of the decoder, which a sampled request can commit whether or not they need
// sampling, and of what a speculative engine reports besides its tokens.
std::pair<FaultSet, ResponseFaults> serve_faults(const ServeOptions& o, Engine engine, bool trees) {
  if (engine == Engine::kOracle && !o.faults.empty())
    throw InputError("--inject-fault: the oracle is the reference and takes no faults");
  FaultSet faults;
  ResponseFaults response_faults;
  for (const std::string& name : o.faults) {
    if (const std::optional<ResponseFault> fault = response_fault_from_name(name)) {
      if (!speculates(engine))
        throw InputError("--inject-fault: " + name + " is a fault of speculative decoding; engine " + o.engine + " does not speculate");
      response_faults.add(*fault);
    } else {
      faults.add(fault_from_name(name));
    }
  }
  require_committable(faults, o.engine, engine == Engine::kExspec, /*greedy=*/false, trees);
  return {faults, response_faults};
}

std::atomic<bool> stop_serving{false};

extern "C" void on_serve_signal(int) { stop_serving.store(true); }

void run_serve(const ServeOptions& o, const CLI::App& command) {
  constexpr Engine kServed[] = {Engine::kExspec, Engine::kEqspec, Engine::kRollback, Engine::kNonspecBatch, Engine::kOracle};
  const Engine engine = engine_from_name(o.engine, kServed, "--engine");
  const Drafting drafting = o.decoder.drafting.drafting();
  check_draft_flag(engine, drafting, !o.draft.empty());
  const int64_t window = o.decoder.exspec_window();
  const std::optional<TreePolicy> tree = tree_policy(o.tree, command, drafting, o.draft);
  if (tree) check_tree_engine(command, engine);
  const auto [faults, response_faults] = serve_faults(o, engine, tree.has_value());

  // On one thread here, so that the decode loop's thread alone keeps a pool of libtorch's threads.
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const ModelPair models = load_model_pair(o.target, o.draft, o.loading.scalar_type(), o.loading.torch_device());
  at::set_num_threads(threads);
  const ModelConfig& config = models.target.config();
  const ServeLimits limits{.model = o.model.empty() ? o.target.filename().string() : o.model,
                           .vocab_size = config.vocab_size,
                           .context = std::min(o.max_model_len, config.max_position_embeddings),
                           .max_logprob_entries = o.max_logprob_entries,
                           .chat_template = chat_template_from_name(o.chat_template, "--chat-template")};
  check_template_tokens({models.tokenizer.get(), limits.chat_template}, "--chat-template");
  DecodeOptions decode;
  decode.draft_tokens = tree ? max_tree_nodes(*tree) : o.decoder.draft_tokens;
  decode.eos_ids = config.eos_token_ids;
  decode.faults = faults;
  const ServeEngineSettings settings{
      .engine = engine, .target = &models.target, .drafting = drafting, .draft = models.draft_or_null(),
      .decoder = {.decode = decode, .batch_size = o.decoder.batch_size, .exspec = {.window = window},
                  .sequence_capacity = cache_capacity(limits.context, decode.draft_tokens)},
      .tree = tree ? &*tree : nullptr};
  DecodeLoop loop([&settings] { return make_serve_engine(settings); }, o.max_queue);
  const ServeReporter reporter(models.target, response_faults);

  struct sigaction action {};
  action.sa_handler = on_serve_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  serve_completions(loop, reporter, *models.tokenizer, limits, {o.host, o.port}, o.connections, stop_serving, [&](int port) {
    std::printf("serve: %s on http://%s:%d/v1/completions and /v1/chat/completions (template %s), model %s\n",
                o.engine.c_str(), o.host.c_str(), port, o.chat_template.c_str(), limits.model.c_str());
    std::fflush(stdout);
  });
  std::printf("serve: stopped\n");
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* c = app.add_subcommand(
      "serve", "Serve one of our decoders over an OpenAI-compatible HTTP API (POST /v1/completions, POST "
               "/v1/chat/completions, GET /health, GET /v1/models, GET /metrics) until SIGTERM or SIGINT");
  c->add_option("--target", o->target, "Target checkpoint folder")->required();
  c->add_option("--draft", o->draft, "Draft checkpoint folder (eqspec, exspec)");
  c->add_option("--engine", o->engine, "exspec, eqspec, rollback, nonspec-batch or oracle, as generate takes them")->capture_default_str();
  c->add_option("--host", o->host, "Address to listen on")->capture_default_str();
  c->add_option("--port", o->port, "Port to listen on (0: any free one, printed)")->capture_default_str()->check(CLI::Range(0, 65535));
  c->add_option("--model", o->model, "The model name requests must use (default: the target folder's name)");
  add_tree_flags(*c, o->tree);
  c->add_option("--chat-template", o->chat_template,
                "raw, vicuna, chatml, smollm2, llama3 or llama2: renders /v1/chat/completions' messages, as generate's")
      ->capture_default_str();
  add_decoder_flags(*c, o->decoder);
  c->add_option("--max-model-len", o->max_model_len,
                "Positions a request may take, prompt plus max_tokens (at most the model's); bounds what EXSPEC's pool grows to")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  c->add_option("--max-logprob-entries", o->max_logprob_entries,
                "Log-probabilities one request may ask reported, prompt and completion, each position's own and its "
                "alternatives (prompt_logprobs k over P prompt tokens: (P - 1)(k + 1)); more are answered 400")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 32));
  c->add_option("--max-queue", o->max_queue, "Requests admitted and unfinished at once; more get 503")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  c->add_option("--max-connections", o->connections.max_connections, "Connections open at once; one more is answered 503")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  c->add_option("--max-body-bytes", o->connections.max_body_bytes, "Largest request body; a larger one is answered 413")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  c->add_option("--max-header-bytes", o->connections.max_header_bytes,
                "Largest request headers, at most 65533 (the largest field the HTTP parser holds); larger are answered 431")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{256}, int64_t{65533}));
  c->add_option("--request-timeout", o->connections.request_timeout_seconds,
                "Seconds to receive one whole request (or to wait idle for the next) before the connection closes")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  c->add_option("--backlog", o->connections.backlog, "Connections the kernel queues before they are accepted")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  c->add_option("--inject-fault", o->faults,
                "Seed a named fault (repeatable): a decoder's (a sampling fault acts on requests with a temperature > 0) "
                "or one of what eqspec and exspec report besides tokens: zeroed-logprobs, stale-logprobs, "
                "usage-counts-drafted, shifted-prompt-logprobs, zeroed-drafted-logprobs, unsorted-logprobs, "
                "unnormalized-logprobs");
  add_model_flags(*c, o->loading, "dtype of target and draft");
  c->callback([o, c] { run_serve(*o, *c); });
}

}  // namespace specgate::cli
