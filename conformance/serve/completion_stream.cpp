#include "conformance/serve/completion_stream.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "impl/common/utf8.h"

namespace specgate::cli {
namespace {

using nlohmann::ordered_json;

const std::string kDone = "data: [DONE]\n\n";

std::string dumped(const ordered_json& value) { return value.dump(-1, ' ', false, ordered_json::error_handler_t::replace); }

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// `text` cut before its last character of more than one byte, which is never sent: the
// stream-cut-utf8 fault.
std::string cut_inside_last_character(std::string text) {
  for (size_t at = text.size(); at > 0; --at) {
    if (static_cast<unsigned char>(text[at - 1]) >= 0xC0) return text.substr(0, at - 1);
  }
  return text;
}

}  // namespace

CompletionStream::CompletionStream(const ServeRequest& request, const Tokenizer& tokenizer, std::string model, int64_t id,
                                   ResponseFaults faults)
    : request_(request),
      tokenizer_(tokenizer),
      model_(std::move(model)),
      id_(id),
      created_(now_seconds()),
      faults_(faults),
      choices_(static_cast<size_t>(request.n)) {}

std::vector<std::string> CompletionStream::advance(int64_t index, std::span<const int64_t> generated) {
  std::vector<std::string> events;
  if (static_cast<int64_t>(generated.size()) > choices_.at(index).sent_tokens) send_delta(index, generated, nullptr, events);
  return events;
}

std::vector<std::string> CompletionStream::finish(int64_t index, const Generated& generated) {
  const std::vector<int64_t>& tokens = generated.sequence.tokens;
  std::vector<std::string> events;
  send_delta(index, tokens, &generated, events);
  Choice& choice = choices_.at(index);
  choice.finished = true;
  choice.completion_tokens = generated.completion_tokens;
  if (faults_.has(ResponseFault::kStreamUsageCountsDrafted))
    choice.completion_tokens += generated.sequence.drafted - generated.sequence.accepted;
  if (faults_.has(ResponseFault::kStreamChunkAfterFinish) && !tokens.empty()) {
    const std::span<const int64_t> last(&tokens.back(), 1);
    events.push_back(content_chunk(index, last, utf8_lossy(tokenizer_.decode(last)), nullptr));
  }
  for (const Choice& other : choices_) {
    if (!other.finished) return events;
  }
  if (request_.include_usage) {
    int64_t completion_tokens = 0;
    for (const Choice& other : choices_) completion_tokens += other.completion_tokens;
    const auto prompt_tokens = static_cast<int64_t>(request_.prompt.size());
    ordered_json usage = head();
    usage["choices"] = ordered_json::array();
    usage["usage"] = {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens + completion_tokens},
                      {"completion_tokens", completion_tokens}};
    events.push_back(event(dumped(usage)));
  }
  events.push_back(kDone);
  return events;
}

std::vector<std::string> CompletionStream::fail(int status, const std::string& message) {
  return {event(error_response(status, message)), kDone};
}

void CompletionStream::send_delta(int64_t index, std::span<const int64_t> generated, const Generated* finished,
                                  std::vector<std::string>& events) {
  Choice& choice = choices_.at(index);
  const std::string decoded = tokenizer_.decode(generated);
  size_t end = decoded.size();
  if (finished == nullptr) {
    // Bytes a later token may complete wait for it, and so does the U+FFFD a tokenizer put
    // where it saw them.
    const size_t unfinished = utf8_unfinished_tail(decoded);
    end -= unfinished > 0 ? unfinished : decoded.ends_with(kReplacementCharacter) ? kReplacementCharacter.size() : 0;
  }
  std::span<const int64_t> ids = generated.subspan(static_cast<size_t>(choice.sent_tokens));
  std::string text = end > choice.sent_bytes ? utf8_lossy(std::string_view(decoded).substr(choice.sent_bytes, end - choice.sent_bytes)) : "";
  choice.sent_tokens = static_cast<int64_t>(generated.size());
  choice.sent_bytes = std::max(choice.sent_bytes, end);
  if (faults_.has(ResponseFault::kStreamLastTokenOnly) && ids.size() > 1) {
    ids = ids.last(1);
    text = utf8_lossy(tokenizer_.decode(ids));
  }
  if (faults_.has(ResponseFault::kStreamCutUtf8)) text = cut_inside_last_character(std::move(text));
  if (!choice.started) {
    choice.started = true;
    if (request_.api == ServeApi::kChat) {
      ordered_json role = head();
      role["choices"] = ordered_json::array({{{"index", index}, {"delta", {{"role", "assistant"}, {"content", ""}}},
                                              {"logprobs", nullptr}, {"finish_reason", nullptr}}});
      role["prompt_token_ids"] = request_.return_token_ids ? ordered_json(request_.prompt) : nullptr;
      events.push_back(event(dumped(role)));
    } else {
      events.push_back(content_chunk(index, ids, text, finished, /*first=*/true));
      return;
    }
  }
  events.push_back(content_chunk(index, ids, text, finished));
}

nlohmann::ordered_json CompletionStream::head() const {
  const bool chat = request_.api == ServeApi::kChat;
  return {{"id", (chat ? "chatcmpl-" : "cmpl-") + std::to_string(id_)},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created_},
          {"model", model_}};
}

std::string CompletionStream::content_chunk(int64_t index, std::span<const int64_t> ids, const std::string& text,
                                            const Generated* finished, bool first) const {
  const bool chat = request_.api == ServeApi::kChat;
  ordered_json choice = {{"index", index}};
  if (chat) {
    choice["delta"] = {{"content", text}};
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finished == nullptr                                        ? ordered_json(nullptr)
                            : finished->sequence.finish_reason == FinishReason::kEos ? "stop"
                                                                                      : "length";
  choice["stop_reason"] = nullptr;
  if (!chat) choice["prompt_token_ids"] = request_.return_token_ids && first ? ordered_json(request_.prompt) : nullptr;
  choice["token_ids"] = request_.return_token_ids ? ordered_json(std::vector<int64_t>(ids.begin(), ids.end())) : nullptr;
  ordered_json out = head();
  out["choices"] = ordered_json::array({choice});
  return event(dumped(out));
}

}  // namespace specgate::cli
