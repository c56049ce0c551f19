# What serve runs on a request before decoding it (the HTTP framing checks and the completion and
# chat body parsers) and what they need beside the readers and the tokenizer, relative to the
# repository: none of it needs libtorch. Built into serve, and by fuzz/ with libFuzzer.
set(SPECGATE_SERVE_PARSER_SOURCES
  conformance/serve/completion_request.cpp
  conformance/serve/http_framing.cpp
  impl/bench/chat_template.cpp
  impl/bench/conversation.cpp
  impl/common/short_number.cpp
  impl/sampling/sampling_params.cpp
)
list(TRANSFORM SPECGATE_SERVE_PARSER_SOURCES PREPEND ${CMAKE_CURRENT_LIST_DIR}/../../)
