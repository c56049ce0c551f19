// Fuzz target: a Spec-Bench question file, read as generate, bench and score read it.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "impl/bench/question.h"
#include "impl/common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    for (const specgate::Question& question : specgate::read_questions(in, "fuzz.jsonl")) {
      specgate::subtask_of(question.category);
    }
  } catch (const specgate::InputError&) {
  }
  return 0;
}
