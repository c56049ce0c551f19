// Fuzz target: the --out file `generate --resume` reads back, as a file on disk: what it keeps
// (the complete lines), the answers it holds and their settings, checked against a sampled
// eqspec run's.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "conformance/files/answer_file.h"
#include "impl/bench/answer.h"
#include "impl/common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specgate;
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("resume_reader_fuzzer." + std::to_string(::getpid()) + ".jsonl");
  static const nlohmann::json same_run = answer_json(
      {.model_id = "target", .chat_template = "raw",
       .run = RunInfo{.engine = "eqspec", .batch_size = 8, .max_new_tokens = 128, .draft_tokens = 4, .drafter = "model",
                      .dtype = "float32", .draft = "draft",
                      .sampling = {.temperature = 0.7, .top_k = 5, .seed = 3}}});
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  for (const bool by_seed : {false, true}) {
    for (const cli::SameRunLine& settings :
         {cli::SameRunLine(), cli::SameRunLine([](const nlohmann::json&) { return same_run; })}) {
      try {
        cli::resumable_bytes("--out", path);
        cli::answered_in("--out", path, by_seed, settings);
      } catch (const InputError&) {
      }
    }
  }
  return 0;
}
