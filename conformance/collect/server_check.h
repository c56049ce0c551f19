#pragma once

#include <optional>
#include <string>
#include <vector>

#include "conformance/collect/dialect.h"
#include "conformance/collect/http_client.h"

namespace specgate::cli {

// What a server says of itself on GET /v1/models.
struct ServerListing {
  std::vector<std::string> models;    // the ids listed; none when the server lists none
  std::optional<std::string> server;  // the owned_by of --model's entry (else the first): vllm, sglang, llamacpp, specgate
};

// Asks the server what it serves before a question is sent, within the request timeout of
// `http` but at most 10 s: GET
// /v1/models (vLLM, SGLang, llama.cpp, TGI's Messages API and serve list their models there),
// else GET /health. Throws InputError in one line naming the endpoint when nothing answers, or
// when the dialect's servers route by model name and /v1/models lists others than `model`.
ServerListing check_server(const Endpoint& endpoint, const Dialect& dialect, const std::string& model,
                                      const HttpLimits& http);

}  // namespace specgate::cli
