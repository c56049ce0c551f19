# The answer files the commands write and read back (--resume), relative to the repository: none
# of it needs libtorch. Built into the commands, and by fuzz/ with libFuzzer.
set(SPECGATE_ANSWER_FILE_SOURCES
  conformance/files/answer_file.cpp
  conformance/files/output_file.cpp
  conformance/files/same_run.cpp
)
list(TRANSFORM SPECGATE_ANSWER_FILE_SOURCES PREPEND ${CMAKE_CURRENT_LIST_DIR}/../../)
