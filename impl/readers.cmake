# The readers and writers of users' files (answers, questions, config.json, safetensors headers, tree files) and what they need, relative to
# impl/: shared by impl/CMakeLists.txt and fuzz/CMakeLists.txt. The tokenizer.json loader needs them, PCRE2 and utf8proc.
set(SPECGATE_READER_SOURCES
  bench/answer.cpp
  bench/question.cpp
  checkpoint/safetensors_header.cpp
  common/ignored_field.cpp
  common/json_scan.cpp
  common/json_value.cpp
  common/line_reader.cpp
  common/regular_file.cpp
  common/sha256.cpp
  common/utf8.cpp
  decoding/tree_file.cpp
  model/config.cpp
  scoring/answer_reader.cpp
)
list(TRANSFORM SPECGATE_READER_SOURCES PREPEND ${CMAKE_CURRENT_LIST_DIR}/)
set(SPECGATE_TOKENIZER_SOURCES
  tokenizer/added_tokens.cpp
  tokenizer/bpe_model.cpp
  tokenizer/byte_level_alphabet.cpp
  tokenizer/byte_tokenizer.cpp
  tokenizer/decoder.cpp
  tokenizer/hf_tokenizer.cpp
  tokenizer/json_node.cpp
  tokenizer/normalizer.cpp
  tokenizer/post_processor.cpp
  tokenizer/pre_tokenizer.cpp
  tokenizer/regex.cpp
  tokenizer/string_or_regex.cpp
  tokenizer/text_piece.cpp
  tokenizer/tokenizer_config.cpp
)
list(TRANSFORM SPECGATE_TOKENIZER_SOURCES PREPEND ${CMAKE_CURRENT_LIST_DIR}/)
