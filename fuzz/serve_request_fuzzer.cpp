// Fuzz target: bytes a client sends `conformance serve`, handled as serve handles them before
// decoding: Beast's parser under serve's limits and its refusals, then a completion or chat body
// parsed as serve parses it, and the reply serve would write for a sequence of the prompt's own
// tokens, with every log-probability the request asks.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string_view>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

#include "conformance/serve/completion_request.h"
#include "conformance/serve/http_framing.h"
#include "impl/tokenizer/byte_tokenizer.h"

namespace {

using namespace specgate;
using namespace specgate::cli;
namespace http = boost::beast::http;

// The request's body once read whole, as serve reads it; nothing when serve refuses it first.
bool read_request(std::string_view input, RequestParser& parser, const ConnectionLimits& limits) {
  bound(parser, limits);
  boost::beast::error_code error;
  bool header_checked = false;
  while (!parser.is_done()) {
    size_t used = 0;
    if (!input.empty()) {
      used = parser.put(boost::asio::buffer(input.data(), input.size()), error);
      input.remove_prefix(used);
      if (error == http::error::need_more) error = {};
    }
    if (!error && used == 0) {
      parser.put_eof(error);  // the client sent no more
      if (!error && !parser.is_done()) return false;
    }
    if (error) {
      refusal_after_error(error, limits);
      return false;
    }
    if (parser.is_header_done() && !header_checked) {
      header_checked = true;
      expects_continue(parser);
      if (refusal_after_header(parser)) return false;
    }
  }
  return true;
}

// Log-probabilities for `tokens`, `alternatives` each, themselves first.
std::vector<std::vector<TokenLogprob>> listed(std::span<const int64_t> tokens, int64_t alternatives) {
  std::vector<std::vector<TokenLogprob>> lists;
  for (const int64_t token : tokens) {
    std::vector<TokenLogprob> list = {{token, -1.5}};
    for (int64_t a = 0; a < alternatives; ++a) list.push_back({(token + a + 1) % ByteTokenizer::kVocabSize, -2.0 - a});
    lists.push_back(std::move(list));
  }
  return lists;
}

void answer(const ServeRequest& request, const Tokenizer& tokenizer, const ServeLimits& limits) {
  Generated generated;
  SequenceResult& sequence = generated.sequence;
  sequence.tokens.assign(request.prompt.begin(),
                         request.prompt.begin() + std::min<int64_t>(request.max_new_tokens, request.prompt.size()));
  generated.completion_tokens = static_cast<int64_t>(sequence.tokens.size());
  if (request.top_logprobs > 0) {
    sequence.top_logprobs = listed(sequence.tokens, request.top_logprobs);
    generated.chosen_logprobs.assign(sequence.tokens.size(), -1.5);
  }
  if (request.prompt_logprobs > 0)
    generated.prompt_logprobs = listed(std::span(request.prompt).subspan(1), request.prompt_logprobs);
  response_body(request, std::span(&generated, 1), tokenizer, limits.model, 7);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ByteTokenizer tokenizer;
  static const ServeLimits serve_limits{.model = "fuzz", .vocab_size = ByteTokenizer::kVocabSize, .context = 4096,
                                        .max_logprob_entries = 4096, .chat_template = ChatTemplate::kChatml};
  static const ConnectionLimits connection_limits{.max_body_bytes = 64 << 10, .max_header_bytes = 8 << 10};
  RequestParser parser;
  if (!read_request(std::string_view(reinterpret_cast<const char*>(data), size), parser, connection_limits)) return 0;
  const std::string_view target(parser.get().target().data(), parser.get().target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  if (path != "/v1/completions" && path != "/v1/chat/completions") return 0;
  try {
    const ServeRequest request = path == "/v1/chat/completions"
                                     ? parse_chat_request(parser.get().body(), tokenizer, serve_limits)
                                     : parse_completion_request(parser.get().body(), tokenizer, serve_limits);
    answer(request, tokenizer, serve_limits);
  } catch (const std::exception&) {  // serve answers 400 or 500 with its message
  }
  return 0;
}
