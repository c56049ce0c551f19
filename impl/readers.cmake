# The readers and writers of users' files (answers, questions, config.json, safetensors headers) and what they need, relative to
# impl/: shared by impl/CMakeLists.txt and fuzz/CMakeLists.txt.
set(SPECGATE_READER_SOURCES
  bench/answer.cpp
  bench/question.cpp
  checkpoint/safetensors_header.cpp
  common/ignored_field.cpp
  common/json_value.cpp
  common/line_reader.cpp
  common/sha256.cpp
  common/utf8.cpp
  model/config.cpp
  scoring/answer_reader.cpp
  scoring/json_scan.cpp
)
list(TRANSFORM SPECGATE_READER_SOURCES PREPEND ${CMAKE_CURRENT_LIST_DIR}/)
