// Streamed answers: the event-stream splitter, putting an answer together from each API's chunks
// (as its server's source writes them), and collect --stream against an in-process server, well
// behaved or hostile.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "conformance/collect/collector.h"
#include "conformance/collect/sse_events.h"
#include "conformance/collect/stream_assembly.h"
#include "conformance/tests/local_http_server.h"
#include "impl/tests/temp_folder.h"

namespace specgate::cli {
namespace {

using nlohmann::json;

std::vector<std::string> feed_bytewise(SseEvents& events, std::string_view stream) {
  std::vector<std::string> all;
  for (const char byte : stream)
    for (std::string& data : events.feed(std::string_view(&byte, 1))) all.push_back(std::move(data));
  return all;
}

TEST(SseEvents, SplitsEventsFedInAnyPiecesWhateverTheLineEnds) {
  const std::string stream =
      ": ping\n\ndata: {\"a\": 1}\n\nevent: message\r\nid: 7\r\ndata:two\r\ndata:  lines\r\n\r\n"
      "retry: 10\n\ndata\rdata: [DONE]\r\r";
  const std::vector<std::string> expected = {"{\"a\": 1}", "two\n lines", "\n[DONE]"};
  SseEvents whole;
  EXPECT_EQ(whole.feed(stream), expected);
  EXPECT_FALSE(whole.pending());
  SseEvents bytewise;
  EXPECT_EQ(feed_bytewise(bytewise, stream), expected);
  SseEvents cut;
  EXPECT_EQ(cut.feed("data: {\"a\": 1}\n\ndata: {\"b\""), std::vector<std::string>{"{\"a\": 1}"});
  EXPECT_TRUE(cut.pending()) << "an event begun and not ended";
  EXPECT_EQ(cut.feed(": 2}\n\n"), std::vector<std::string>{"{\"b\": 2}"});
}

// completion/serving.py's completion_stream_generator with return_token_ids: prompt_token_ids
// in the first chunk, the tokens of one engine step per chunk, finish_reason with the last, usage
// in a chunk of its own (stream_options.include_usage), then [DONE].
std::vector<std::string> vllm_completion_chunks() {
  return {
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" world","logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":[9707],"token_ids":[1879]}]})",
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":", how are","logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":[11,1246,525]}]})",
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" you","logprobs":null,"finish_reason":"length","stop_reason":null,"prompt_token_ids":null,"token_ids":[498]}]})",
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"total_tokens":6,"completion_tokens":5}})",
      "[DONE]"};
}

Completion assembled(const Dialect& dialect, const std::vector<std::string>& chunks) {
  StreamAssembly assembly(dialect);
  for (size_t i = 0; i < chunks.size(); ++i) assembly.add(chunks[i], 0.1 * static_cast<double>(i + 1));
  return assembly.finish();
}

std::string assembly_error(const Dialect& dialect, const std::vector<std::string>& chunks) {
  try {
    assembled(dialect, chunks);
    return "no error";
  } catch (const MalformedResponse& e) {
    return e.what();
  }
}

TEST(StreamAssembly, PutsVllmsCompletionChunksTogetherAndRecordsEachChunksTokens) {
  const std::unique_ptr<Dialect> vllm = dialect_from_name("vllm");
  const Completion completion = assembled(*vllm, vllm_completion_chunks());
  EXPECT_EQ(completion.text, " world, how are you");
  EXPECT_EQ(completion.token_ids, (std::vector<int64_t>{1879, 11, 1246, 525, 498}));
  EXPECT_EQ(completion.prompt_token_ids, std::vector<int64_t>{9707});
  EXPECT_EQ(completion.finish_reason, "length");
  EXPECT_EQ(completion.new_tokens, 5);
  ASSERT_TRUE(completion.stream.has_value());
  EXPECT_EQ(completion.stream->chunk_tokens, (std::vector<int64_t>{1, 3, 1}));
  EXPECT_EQ(completion.stream->chunk_seconds.size(), 3u);
  EXPECT_DOUBLE_EQ(completion.stream->chunk_seconds[1], 0.2);

  const std::unique_ptr<Dialect> openai = dialect_from_name("openai");
  const Completion text_only = assembled(*openai, vllm_completion_chunks());
  EXPECT_EQ(text_only.text, " world, how are you");
  EXPECT_FALSE(text_only.token_ids.has_value());
  EXPECT_TRUE(text_only.stream->chunk_tokens.empty()) << "no ids, no counts";
}

// chat_completion/serving.py: a role chunk (prompt_token_ids beside choices), content chunks
// with token_ids, the last with finish_reason, a usage chunk.
TEST(StreamAssembly, PutsVllmsChatChunksTogether) {
  const std::unique_ptr<Dialect> chat = dialect_from_name("vllm-chat");
  const Completion completion = assembled(
      *chat,
      {R"({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"prompt_token_ids":[1,2,3],"prompt_text":null})",
       R"({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hello, how"},"logprobs":null,"finish_reason":null,"token_ids":[9707,11,1246]}],"kv_transfer_params":null})",
       R"({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"!"},"logprobs":null,"finish_reason":"stop","stop_reason":null,"token_ids":[0,2]}],"kv_transfer_params":null})",
       R"({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"total_tokens":8,"completion_tokens":5}})",
       "[DONE]"});
  EXPECT_EQ(completion.text, "Hello, how!");
  EXPECT_EQ(completion.token_ids, (std::vector<int64_t>{9707, 11, 1246, 0, 2}));
  EXPECT_EQ(completion.prompt_token_ids, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(completion.finish_reason, "stop");
  EXPECT_EQ(completion.stream->chunk_tokens, (std::vector<int64_t>{3, 2}));
}

// llama.cpp's /completion (server-context.cpp's send_partial_response and send_final_response):
// a chunk per token, speculative ones too; the last stops, with stop_type and the draft counts,
// and no [DONE] follows.
TEST(StreamAssembly, PutsLlamacppsChunksTogetherAndTakesTheDraftCountsOfTheLast) {
  const std::unique_ptr<Dialect> llamacpp = dialect_from_name("llamacpp");
  const std::vector<std::string> chunks = {
      R"({"index":0,"content":" world","tokens":[1879],"stop":false,"id_slot":0,"tokens_predicted":1,"tokens_evaluated":5})",
      R"({"index":0,"content":",","tokens":[11],"stop":false,"id_slot":0,"tokens_predicted":2,"tokens_evaluated":5})",
      R"({"index":0,"content":"","tokens":[],"id_slot":0,"stop":true,"model":"m","tokens_predicted":2,"stop_type":"limit","timings":{"draft_n":4,"draft_n_accepted":1}})"};
  const Completion completion = assembled(*llamacpp, chunks);
  EXPECT_EQ(completion.text, " world,");
  EXPECT_EQ(completion.token_ids, (std::vector<int64_t>{1879, 11}));
  EXPECT_EQ(completion.finish_reason, "length");
  EXPECT_EQ(completion.drafted_tokens, 4);
  EXPECT_EQ(completion.accepted_drafts, 1);
  EXPECT_EQ(completion.target_passes, 1) << "as from a whole answer: its tokens less the accepted drafts";
  EXPECT_EQ(completion.stream->chunk_tokens, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(assembly_error(*llamacpp, {chunks[0], chunks[2], chunks[1]}),
            "chunk 3: field '(data)': came after the chunk that gave the finish_reason");
  EXPECT_EQ(assembly_error(*llamacpp, {chunks[0], chunks[1]}), "field 'stream': no chunk gave a finish_reason");
}

// Four bytes: a tokenizer can give them in two tokens, the first three and the last.
const std::string kCrab = "\xF0\x9F\xA6\x80";

// SGLang's /generate by default (tokenizer_manager.py's _handle_batch_output): each chunk the
// answer so far, meta_info.completion_tokens its count; the first token from the prefill, then
// each verification's accepted drafts and its own token in one chunk; the text held back while a
// character lacks bytes; the last chunk with finish_reason and the speculative counts; [DONE].
std::vector<std::string> sglang_answer_so_far_chunks() {
  return {
      R"({"text":"Hello","output_ids":[9707],"meta_info":{"id":"5e0c","finish_reason":null,"prompt_tokens":5,"weight_version":"default","num_retractions":0,"reasoning_tokens":0,"completion_tokens":1,"cached_tokens":0}})",
      R"({"text":"Hello, how are","output_ids":[9707,11,1246,525],"meta_info":{"id":"5e0c","finish_reason":null,"prompt_tokens":5,"weight_version":"default","num_retractions":0,"reasoning_tokens":0,"completion_tokens":4,"cached_tokens":0}})",
      R"({"text":"Hello, how are you? ","output_ids":[9707,11,1246,525,498,30,11162],"meta_info":{"id":"5e0c","finish_reason":null,"prompt_tokens":5,"weight_version":"default","num_retractions":0,"reasoning_tokens":0,"completion_tokens":7,"cached_tokens":0}})",
      R"({"text":"Hello, how are you? )" + kCrab +
          R"(","output_ids":[9707,11,1246,525,498,30,11162,222,151645],"meta_info":{"id":"5e0c","finish_reason":{"type":"stop","matched":151645},"prompt_tokens":5,"weight_version":"default","num_retractions":0,"reasoning_tokens":0,"completion_tokens":9,"cached_tokens":0,"e2e_latency":0.41,"spec_accept_rate":0.5556,"spec_accept_length":3.0,"spec_num_correct_drafts":5,"spec_num_proposed_drafts":9,"spec_verify_ct":3}})",
      "[DONE]"};
}

// The same answer from a server started with --incremental-streaming-output: each chunk its own
// text and ids.
std::vector<std::string> sglang_incremental_chunks() {
  return {
      R"({"text":"Hello","output_ids":[9707],"meta_info":{"id":"7a31","finish_reason":null,"prompt_tokens":5,"weight_version":"default","num_retractions":0,"reasoning_tokens":0,"completion_tokens":1,"cached_tokens":0}})",
      R"({"text":", how are","output_ids":[11,1246,525],"meta_info":{"id":"7a31","finish_reason":null,"prompt_tokens":5,"weight_version":"default","num_retractions":0,"reasoning_tokens":0,"completion_tokens":4,"cached_tokens":0}})",
      R"({"text":" you? ","output_ids":[498,30,11162],"meta_info":{"id":"7a31","finish_reason":null,"prompt_tokens":5,"weight_version":"default","num_retractions":0,"reasoning_tokens":0,"completion_tokens":7,"cached_tokens":0}})",
      R"({"text":")" + kCrab +
          R"(","output_ids":[222,151645],"meta_info":{"id":"7a31","finish_reason":{"type":"stop","matched":151645},"prompt_tokens":5,"weight_version":"default","num_retractions":0,"reasoning_tokens":0,"completion_tokens":9,"cached_tokens":0,"e2e_latency":0.41,"spec_accept_rate":0.5556,"spec_accept_length":3.0,"spec_num_correct_drafts":5,"spec_num_proposed_drafts":9,"spec_verify_ct":3}})",
      "[DONE]"};
}

TEST(StreamAssembly, PutsSglangsChunksTogetherWhetherEachHoldsTheAnswerSoFarOrItsOwnPart) {
  const std::unique_ptr<Dialect> sglang = dialect_from_name("sglang");
  const std::vector<std::string> so_far = sglang_answer_so_far_chunks();
  const std::vector<std::string> own = sglang_incremental_chunks();
  // One dialect reads many streams at once: interleaved here.
  StreamAssembly so_far_assembly(*sglang);
  StreamAssembly own_assembly(*sglang);
  for (size_t i = 0; i < so_far.size(); ++i) {
    so_far_assembly.add(so_far[i], 0.1 * static_cast<double>(i + 1));
    own_assembly.add(own[i], 0.1 * static_cast<double>(i + 1));
  }
  for (const Completion& completion : {so_far_assembly.finish(), own_assembly.finish()}) {
    EXPECT_EQ(completion.text, "Hello, how are you? " + kCrab);
    EXPECT_EQ(completion.token_ids, (std::vector<int64_t>{9707, 11, 1246, 525, 498, 30, 11162, 222, 151645}));
    EXPECT_EQ(completion.finish_reason, "stop");
    EXPECT_EQ(completion.new_tokens, 9);
    EXPECT_EQ(completion.drafted_tokens, 9);
    EXPECT_EQ(completion.accepted_drafts, 5);
    EXPECT_EQ(completion.stream->chunk_tokens, (std::vector<int64_t>{1, 3, 3, 2}));
    EXPECT_EQ(completion.stream->chunk_seconds.size(), 4u);
  }
}

TEST(StreamAssembly, NamesTheSglangChunkThatIsNotTheAnswerSoFar) {
  const auto error = [](const std::vector<std::string>& chunks) { return assembly_error(*dialect_from_name("sglang"), chunks); };
  std::vector<std::string> other_ids = sglang_answer_so_far_chunks();
  other_ids[2].replace(other_ids[2].find("1246"), 4, "1247");
  EXPECT_EQ(error(other_ids), "chunk 3: field 'token_ids': the answer so far, yet not the ids of the chunks before");
  std::vector<std::string> other_text = sglang_answer_so_far_chunks();
  other_text[2].replace(other_text[2].find("Hello"), 5, "Hallo");
  EXPECT_EQ(error(other_text), "chunk 3: field 'text': the answer so far, yet not the text of the chunks before");
  std::vector<std::string> no_count = sglang_answer_so_far_chunks();
  const std::string completion_tokens = ",\"completion_tokens\":1";
  no_count[0].replace(no_count[0].find(completion_tokens), completion_tokens.size(), "");
  EXPECT_EQ(error(no_count), "chunk 1: field 'meta_info.completion_tokens': missing");
  std::vector<std::string> no_done = sglang_answer_so_far_chunks();
  no_done.pop_back();
  EXPECT_EQ(error(no_done), "field 'stream': ended after 4 chunks without data: [DONE]");
}

// SGLang's chat (serving_chat.py's _generate_chat_stream): a role chunk, a chunk per output with
// its text (a character whole, as the tokenizer manager's text holds back its bytes until all
// came), finish_reason and matched_stop in a chunk of their own, the usage chunk; no token ids,
// which SGLang refuses to stream.
std::vector<std::string> sglang_chat_chunks() {
  return {
      R"({"id":"5e0c","object":"chat.completion.chunk","created":1767225600,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":null,"role":"assistant","content":""},"logprobs":null,"finish_reason":null,"matched_stop":null}]})",
      R"({"id":"5e0c","object":"chat.completion.chunk","created":1767225600,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":null,"content":"Hello, how"},"logprobs":null,"finish_reason":null,"matched_stop":null}]})",
      R"({"id":"5e0c","object":"chat.completion.chunk","created":1767225600,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":null,"content":" are you? "},"logprobs":null,"finish_reason":null,"matched_stop":null}]})",
      R"({"id":"5e0c","object":"chat.completion.chunk","created":1767225600,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":null,"content":")" + kCrab +
          R"("},"logprobs":null,"finish_reason":null,"matched_stop":null}]})",
      R"({"id":"5e0c","object":"chat.completion.chunk","created":1767225600,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":null},"logprobs":null,"finish_reason":"stop","matched_stop":151645}]})",
      R"({"id":"5e0c","object":"chat.completion.chunk","created":1767225600,"model":"m","choices":[],"usage":{"prompt_tokens":12,"total_tokens":21,"completion_tokens":9,"prompt_tokens_details":null,"reasoning_tokens":0,"completion_tokens_details":null}})",
      "[DONE]"};
}

TEST(StreamAssembly, PutsSglangsChatChunksTogetherWithoutTokenIds) {
  const std::unique_ptr<Dialect> chat = dialect_from_name("sglang-chat");
  const Completion completion = assembled(*chat, sglang_chat_chunks());
  EXPECT_EQ(completion.text, "Hello, how are you? " + kCrab);
  EXPECT_FALSE(completion.token_ids.has_value());
  EXPECT_EQ(completion.finish_reason, "stop");
  EXPECT_EQ(completion.new_tokens, 9) << "usage.completion_tokens";
  EXPECT_TRUE(completion.stream->chunk_tokens.empty()) << "no ids, no counts";
  EXPECT_EQ(completion.stream->chunk_seconds.size(), 3u) << "the chunks that carried text";
  std::vector<std::string> no_index = sglang_chat_chunks();
  no_index[2].replace(no_index[2].find("\"index\":0,"), 10, "");
  EXPECT_EQ(assembly_error(*chat, no_index), "chunk 3: field 'choices[0].index': missing");
  std::vector<std::string> not_text = sglang_chat_chunks();
  not_text[1].replace(not_text[1].find("\"Hello, how\""), 12, "7");
  EXPECT_EQ(assembly_error(*chat, not_text), "chunk 2: field 'choices[0].delta.content': expected a string, got number 7");
}

// TGI's /generate_stream (router/src/server.rs's generate_stream_internal): an event per token,
// each token of a speculative step its own (backend.rs's send_responses); byte-fallback tokens
// that end inside a character with text "" and the character with the token that completes it
// (decode_token); the EOS token special, and the last event with generated_text and details. No
// [DONE].
std::vector<std::string> tgi_stream_chunks() {
  return {
      R"({"index":1,"token":{"id":3681,"text":" Paris","logprob":-0.12,"special":false},"generated_text":null,"details":null})",
      R"({"index":2,"token":{"id":29892,"text":",","logprob":-0.5,"special":false},"generated_text":null,"details":null})",
      R"({"index":3,"token":{"id":29871,"text":" ","logprob":-0.8,"special":false},"generated_text":null,"details":null})",
      R"({"index":4,"token":{"id":243,"text":"","logprob":-1.1,"special":false},"generated_text":null,"details":null})",
      R"({"index":5,"token":{"id":162,"text":"","logprob":-0.2,"special":false},"generated_text":null,"details":null})",
      R"({"index":6,"token":{"id":169,"text":"","logprob":-0.1,"special":false},"generated_text":null,"details":null})",
      R"({"index":7,"token":{"id":131,"text":")" + kCrab + R"(","logprob":-0.1,"special":false},"generated_text":null,"details":null})",
      R"({"index":8,"token":{"id":2,"text":"</s>","logprob":-0.01,"special":true},"generated_text":" Paris, )" + kCrab +
          R"(","details":{"finish_reason":"eos_token","generated_tokens":8,"seed":null,"input_length":9}})"};
}

TEST(StreamAssembly, PutsTgisTokensTogetherLeavingOutTheSpecialTokensText) {
  const std::unique_ptr<Dialect> tgi = dialect_from_name("tgi");
  const Completion completion = assembled(*tgi, tgi_stream_chunks());
  EXPECT_EQ(completion.text, " Paris, " + kCrab) << "as generated_text";
  EXPECT_EQ(completion.token_ids, (std::vector<int64_t>{3681, 29892, 29871, 243, 162, 169, 131, 2}));
  EXPECT_EQ(completion.finish_reason, "stop");
  EXPECT_EQ(completion.new_tokens, 8);
  EXPECT_EQ(completion.stream->chunk_tokens, std::vector<int64_t>(8, 1)) << "a token per event, speculative or not";
  EXPECT_EQ(completion.stream->chunk_seconds.size(), 8u);
}

TEST(StreamAssembly, NamesTheTgiEventThatLacksAField) {
  const std::unique_ptr<Dialect> tgi = dialect_from_name("tgi");
  std::vector<std::string> chunks = tgi_stream_chunks();
  std::vector<std::string> no_details = chunks;
  no_details.back().replace(no_details.back().find("\"details\":{"), 11, "\"details\":null,\"ignored\":{");
  EXPECT_EQ(assembly_error(*tgi, no_details), "chunk 8: field 'details': null in the last chunk (the server ignored parameters.details)");
  std::vector<std::string> no_id = chunks;
  no_id[1].replace(no_id[1].find("\"id\":29892,"), 11, "");
  EXPECT_EQ(assembly_error(*tgi, no_id), "chunk 2: field 'token.id': missing");
  std::vector<std::string> after_last = chunks;
  after_last.push_back(chunks[0]);
  EXPECT_EQ(assembly_error(*tgi, after_last), "chunk 9: field '(data)': came after the chunk that gave the finish_reason");
  chunks.pop_back();
  EXPECT_EQ(assembly_error(*tgi, chunks), "field 'stream': no chunk gave a finish_reason");
}

TEST(StreamAssembly, NamesTheChunkThatBreaksTheProtocol) {
  const std::unique_ptr<Dialect> vllm = dialect_from_name("vllm");
  std::vector<std::string> chunks = vllm_completion_chunks();
  std::vector<std::string> after_finish = chunks;
  after_finish.insert(after_finish.begin() + 3, chunks[1]);
  EXPECT_EQ(assembly_error(*vllm, after_finish),
            "chunk 4: field 'choices[0]': text or tokens after the chunk that gave the finish_reason");
  std::vector<std::string> after_done = chunks;
  after_done.push_back(chunks[3]);
  EXPECT_EQ(assembly_error(*vllm, after_done), "chunk 6: field '(data)': came after data: [DONE]");
  EXPECT_EQ(assembly_error(*vllm, std::vector<std::string>(chunks.begin(), chunks.end() - 1)),
            "field 'stream': ended after 4 chunks without data: [DONE]");
  EXPECT_EQ(assembly_error(*vllm, {chunks[0], chunks[1], "[DONE]"}), "field 'stream': no chunk gave a finish_reason");
  std::vector<std::string> second_choice = chunks;
  second_choice[1].replace(second_choice[1].find("\"index\":0"), 9, "\"index\":1");
  EXPECT_EQ(assembly_error(*vllm, second_choice), "chunk 2: field 'choices[0].index': choice 1 of an answer asked once (n = 1)");
  std::vector<std::string> no_ids = chunks;
  no_ids[1].replace(no_ids[1].find(",\"token_ids\":[11,1246,525]"), 26, "");
  EXPECT_EQ(assembly_error(*vllm, no_ids),
            "chunk 2: field 'choices[0].token_ids': missing (the server ignored return_token_ids)");
  EXPECT_EQ(assembly_error(*vllm, {chunks[0], "{\"choices\": [{\"index\": 0, \"text\": "}).substr(0, 37),
            "chunk 2: field '(body)': invalid JSON");
}

enum class StreamFault {
  kNone,
  kEndless,     // a comment every millisecond, for ever
  kMalformed,   // a data line that is not JSON
  kHugeEvent,   // one event of 2 MB
  kCutInEvent,  // the response ends in the middle of an event
};

std::string event_stream(const std::vector<std::string>& chunks) {
  std::string stream;
  for (const std::string& chunk : chunks) stream += "data: " + chunk + "\n\n";
  return stream;
}

// A vLLM-shaped server that streams each answer (token ids {id, id + 1, id + 2}) in two chunks,
// sent in pieces, a few milliseconds apart; and TGI's stream route and SGLang's chat, each
// streaming its one answer whole.
class StreamServer {
 public:
  explicit StreamServer(StreamFault fault) : fault_(fault) {
    http_.routes().Post("/v1/completions", [this](const httplib::Request& request, httplib::Response& response) {
      const json body = json::parse(request.body);
      EXPECT_EQ(body["stream"], true);
      EXPECT_EQ(body["stream_options"]["include_usage"], true);
      reply(std::stoll(body["prompt"].get<std::string>().substr(1)), response);
    });
    http_.routes().Post("/generate_stream", [](const httplib::Request& request, httplib::Response& response) {
      EXPECT_EQ(json::parse(request.body)["parameters"]["decoder_input_details"], false);
      response.set_content(event_stream(tgi_stream_chunks()), "text/event-stream");
    });
    http_.routes().Post("/v1/chat/completions", [](const httplib::Request& request, httplib::Response& response) {
      EXPECT_FALSE(json::parse(request.body).contains("return_token_ids"));
      response.set_content(event_stream(sglang_chat_chunks()), "text/event-stream");
    });
    http_.start();
  }
  Endpoint endpoint() const { return http_.endpoint(); }

 private:
  void reply(int64_t id, httplib::Response& response) const {
    const auto chunk = [id](const std::string& text, const json& ids, const json& finish) {
      return "data: " + json{{"choices", {{{"index", 0}, {"text", text}, {"token_ids", ids}, {"finish_reason", finish}}}}}.dump() +
             "\n\n";
    };
    std::vector<std::string> pieces = {chunk("a", {id}, nullptr), chunk("bc", {id + 1, id + 2}, "length"),
                                       "data: {\"choices\": [], \"usage\": {\"completion_tokens\": 3}}\n\n", "data: [DONE]\n\n"};
    if (fault_ == StreamFault::kMalformed) pieces[1] = "data: {\"choices\": [{\"index\": 0, \"text\": \n\n";
    if (fault_ == StreamFault::kHugeEvent) pieces[1] = "data: \"" + std::string(2 << 20, 'x') + "\"\n\n";
    if (fault_ == StreamFault::kCutInEvent) {
      const std::string cut = pieces[0] + pieces[1].substr(0, pieces[1].size() / 2);
      response.set_content(cut, "text/event-stream");
      return;
    }
    const StreamFault fault = fault_;
    response.set_chunked_content_provider("text/event-stream", [pieces, fault](size_t, httplib::DataSink& sink) {
      if (fault == StreamFault::kEndless) {
        while (sink.is_writable()) {
          if (!sink.write(": ping\n\n", 8)) return false;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return false;
      }
      for (const std::string& piece : pieces) {
        // In two writes, so that events arrive split.
        const size_t half = piece.size() / 2;
        if (!sink.write(piece.data(), half)) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (!sink.write(piece.data() + half, piece.size() - half)) return false;
      }
      sink.done();
      return true;
    });
  }

  StreamFault fault_;
  LocalHttpServer http_;
};

class CollectStreamTest : public TempFolderTest {
 protected:
  CollectResult collect(const StreamServer& server, int64_t questions, const std::string& api = "vllm") {
    dialect_ = dialect_from_name(api);
    CollectJob job;
    job.endpoint = server.endpoint();
    job.dialect = dialect_.get();
    job.defaults = {.model = "m", .max_new_tokens = 16, .stream = true};
    for (int64_t id = 1; id <= questions; ++id) job.questions.push_back({id, "qa", {std::string("q").append(std::to_string(id))}, {}});
    job.concurrency = 2;
    job.http = {.timeout_seconds = 1.0, .max_response_bytes = 1 << 20};
    job.retries = 0;
    job.keep_going = true;
    job.out = dir_ / "answers.jsonl";
    return collect_answers(job);
  }

  std::vector<json> answers() const {
    std::vector<json> lines;
    std::ifstream in(dir_ / "answers.jsonl");
    for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
    return lines;
  }

  std::unique_ptr<Dialect> dialect_;
};

TEST_F(CollectStreamTest, EachTurnRecordsItsChunksTokensAndArrivalTimes) {
  const StreamServer server(StreamFault::kNone);
  const CollectResult result = collect(server, 3);
  ASSERT_TRUE(result.failures.empty()) << result.failures.begin()->second;
  const std::vector<json> lines = answers();
  ASSERT_EQ(lines.size(), 3u);
  for (const json& answer : lines) {
    const int64_t id = answer["question_id"];
    const json& choice = answer["choices"][0];
    EXPECT_EQ(choice["token_ids"], json::array({json::array({id, id + 1, id + 2})}));
    EXPECT_EQ(choice["turns"], json::array({"abc"}));
    EXPECT_EQ(choice["new_tokens"], json::array({3}));
    EXPECT_EQ(choice["chunk_tokens"], json::array({json::array({1, 2})}));
    const json& seconds = choice["chunk_seconds"][0];
    ASSERT_EQ(seconds.size(), 2u);
    EXPECT_GT(seconds[0].get<double>(), 0.0);
    EXPECT_GE(seconds[1].get<double>(), seconds[0].get<double>()) << "in the order they came";
    EXPECT_LE(seconds[1].get<double>(), choice["wall_time"][0].get<double>());
  }
}

TEST_F(CollectStreamTest, ReadsTgiFromItsStreamRouteAndSglangsChatWithoutTokenIds) {
  const StreamServer server(StreamFault::kNone);
  CollectResult result = collect(server, 1, "tgi");
  ASSERT_TRUE(result.failures.empty()) << result.failures.begin()->second;
  json choice = answers().at(0)["choices"][0];
  EXPECT_EQ(choice["token_ids"], json::array({json::array({3681, 29892, 29871, 243, 162, 169, 131, 2})}));
  EXPECT_EQ(choice["chunk_tokens"], json::array({std::vector<int64_t>(8, 1)}));
  std::filesystem::remove(dir_ / "answers.jsonl");
  result = collect(server, 1, "sglang-chat");
  ASSERT_TRUE(result.failures.empty()) << result.failures.begin()->second;
  choice = answers().at(0)["choices"][0];
  EXPECT_EQ(choice["turns"], json::array({"Hello, how are you? " + kCrab}));
  EXPECT_FALSE(choice.contains("token_ids")) << "SGLang streams its chat without them";
  EXPECT_FALSE(choice.contains("chunk_tokens"));
  EXPECT_EQ(choice["new_tokens"], json::array({9}));
}

TEST_F(CollectStreamTest, AHostileStreamFailsItsQuestionWithinTheLimits) {
  const struct {
    StreamFault fault;
    std::string failure;
  } cases[] = {
      {StreamFault::kEndless, "no response from http://127.0.0.1:PORT/v1/completions (no complete response within 1 s (--timeout))"},
      {StreamFault::kMalformed, "malformed vllm response: chunk 2: field '(body)': invalid JSON"},
      {StreamFault::kHugeEvent, "no response from http://127.0.0.1:PORT/v1/completions (the response is larger than 1048576 bytes)"},
      {StreamFault::kCutInEvent, "malformed vllm response: field 'stream': ended inside an event"},
  };
  for (const auto& c : cases) {
    const StreamServer server(c.fault);
    std::filesystem::remove(dir_ / "answers.jsonl");
    const auto start = std::chrono::steady_clock::now();
    const CollectResult result = collect(server, 2);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2)) << "a 1 s --timeout";
    ASSERT_EQ(result.failures.size(), 2u) << c.failure;
    std::string expected = c.failure;
    if (const size_t port = expected.find("PORT"); port != std::string::npos)
      expected.replace(port, 4, std::to_string(server.endpoint().port));
    for (const auto& [id, failure] : result.failures)
      EXPECT_NE(failure.find(expected), std::string::npos) << "question " << id << ": " << failure;
    EXPECT_TRUE(answers().empty());
  }
}

}  // namespace
}  // namespace specgate::cli
