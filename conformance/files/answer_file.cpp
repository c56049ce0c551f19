#include "conformance/files/answer_file.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/files/same_run.h"
#include "impl/common/error.h"
#include "impl/common/json_line_context.h"
#include "impl/common/line_reader.h"
#include "impl/common/regular_file.h"

namespace specgate::cli {
namespace {

// The path as a file to read back: InputError naming `flag` when it is not a regular file.
RegularFile read_back(const std::string& flag, const std::filesystem::path& path) {
  return RegularFile(path, flag + ": " + path.string());
}

}  // namespace

uint64_t resumable_bytes(const std::string& flag, const std::filesystem::path& path) {
  std::error_code error;
  if (std::filesystem::status(path, error).type() == std::filesystem::file_type::not_found) return 0;
  const RegularFile in = read_back(flag, path);
  const uint64_t size = in.size();
  constexpr uint64_t kBlock = 64 * 1024;
  std::vector<char> block(kBlock);
  for (uint64_t end = size; end > 0;) {
    const uint64_t start = end > kBlock ? end - kBlock : 0;
    if (in.read_at(start, {block.data(), end - start}) != end - start)
      throw InputError(flag + ": " + path.string() + ": cannot be read");
    uint64_t newline_end = 0;
    for (uint64_t i = end; i > start && newline_end == 0; --i) {
      if (block[i - 1 - start] == '\n') newline_end = i;
    }
    end = newline_end != 0 ? newline_end : start;
    if (size - end > kMaxLineBytes)
      throw InputError(flag + ": " + path.string() + ": more than " + std::to_string(kMaxLineBytes) +
                       " bytes follow its last newline, more than any answer line holds; it is no answer file cut short");
    if (newline_end != 0) return newline_end;
  }
  return 0;
}

AnswerFile::AnswerFile(const std::string& flag, const std::filesystem::path& path, const std::vector<NamedInput>& inputs,
                       bool resume)
    : out_(flag, path, inputs) {
  if (!resume) return;
  uint64_t left = resumable_bytes(flag, path);
  if (left == 0) return;
  RegularFile in = read_back(flag, path);
  std::vector<char> block(1 << 20);
  while (left > 0) {
    const size_t got = in.read({block.data(), static_cast<size_t>(std::min<uint64_t>(left, block.size()))});
    if (got == 0) throw InputError(flag + ": " + path.string() + ": cannot be read");
    out_.stream().write(block.data(), static_cast<std::streamsize>(got));
    left -= got;
  }
  out_.flush();
}

void AnswerFile::write(const Answer& answer) {
  std::ostringstream line;
  write_answer_line(line, answer);
  out_.stream() << line.view();
  out_.flush();
  ++lines_;
}

std::optional<uint64_t> recorded_seed(const nlohmann::json& line) {
  const nlohmann::json* seed = &line;
  for (const char* key : {"run", "sampling", "seed"}) {
    if (!seed->is_object() || !seed->contains(key)) return std::nullopt;
    seed = &(*seed)[key];
  }
  return seed->is_number_unsigned() ? std::optional(seed->get<uint64_t>()) : std::nullopt;
}

std::set<Answered> answered_in(const std::string& flag, const std::filesystem::path& path, bool by_seed,
                               const SameRunLine& same_run) {
  std::set<Answered> ids;
  const uint64_t complete = resumable_bytes(flag, path);
  if (complete == 0) return ids;
  LineReader lines(path);
  std::string line;
  while (lines.next(line) && lines.line_offset() < complete) {
    const int64_t number = lines.line_number();
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const LineContext context(path.string(), number);
    const nlohmann::json object = context.parse(line);
    const auto id = object.is_object() ? object.find("question_id") : object.end();
    if (!object.is_object() || id == object.end() || !id->is_number_integer())
      context.fail_field("question_id", "--resume needs an answer line with one");
    if (same_run) check_same_run(object, same_run(object), context);
    Answered answered{id->get<int64_t>(), std::nullopt};
    if (by_seed) answered.second = recorded_seed(object);
    ids.insert(answered);
  }
  return ids;
}

}  // namespace specgate::cli
