#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/files/output_file.h"
#include "impl/bench/answer.h"

namespace specgate::cli {

// The bytes of `path` up to and including its last newline: what --resume keeps, a last line
// without its newline having been cut short by a killed run; 0 when the path does not exist.
// Reads at most one line's worth from the end. InputError naming `flag` when the path is not a
// regular file (a folder, a FIFO: never waited on), or when more follows the last newline than
// any answer line holds (kMaxLineBytes).
uint64_t resumable_bytes(const std::string& flag, const std::filesystem::path& path);

// The seed an answer line records in run.sampling.seed; nullopt when it records none.
std::optional<uint64_t> recorded_seed(const nlohmann::json& line);

// An answer already written: its question and, where it records one, its seed.
using Answered = std::pair<int64_t, std::optional<uint64_t>>;

// The line this run writes in place of `recorded`, an answer line of --out with a question_id,
// as answer_json() makes it: what check_same_run() compares `recorded` with.
using SameRunLine = std::function<nlohmann::json(const nlohmann::json& recorded)>;

// The answers `path` already holds, with their seeds when `by_seed`, read a line at a time; a
// last line without its newline was cut short by a killed run and does not count. InputError
// naming the line for one that is not JSON or has no question_id, for one whose settings differ
// from `same_run`'s line for it (check_same_run()), and as resumable_bytes() does.
std::set<Answered> answered_in(const std::string& flag, const std::filesystem::path& path, bool by_seed,
                               const SameRunLine& same_run = {});

// An answer JSONL written one whole line at a time through an OutputFile: commit() puts the
// complete lines written so far in place of the path; without it the path is left as it was.
class AnswerFile {
 public:
  // `resume`: the complete lines the path already holds are kept, and new ones follow them; a
  // last line without its newline, cut short by a killed run, is dropped.
  AnswerFile(const std::string& flag, const std::filesystem::path& path, const std::vector<NamedInput>& inputs,
             bool resume = false);
  // InputError when the line does not reach the file.
  void write(const Answer& answer);
  size_t lines() const { return lines_; }
  void commit() { out_.commit(); }

 private:
  OutputFile out_;
  size_t lines_ = 0;
};

}  // namespace specgate::cli
