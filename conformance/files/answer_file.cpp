#include "conformance/files/answer_file.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"
#include "impl/common/line_reader.h"

namespace specgate::cli {

uint64_t resumable_bytes(const std::string& flag, const std::filesystem::path& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) return 0;
  if (error) throw InputError(flag + ": " + path.string() + ": " + error.message());
  if (status.type() == std::filesystem::file_type::directory) throw InputError(flag + ": " + path.string() + " is a folder");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(flag + ": " + path.string() + ": cannot be read");
  const auto size = static_cast<uint64_t>(in.tellg());
  constexpr uint64_t kBlock = 64 * 1024;
  std::vector<char> block(kBlock);
  for (uint64_t end = size; end > 0;) {
    const uint64_t start = end > kBlock ? end - kBlock : 0;
    in.seekg(static_cast<std::streamoff>(start));
    in.read(block.data(), static_cast<std::streamsize>(end - start));
    if (!in) throw InputError(flag + ": " + path.string() + ": cannot be read");
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
  std::ifstream in(path, std::ios::binary);
  std::vector<char> block(1 << 20);
  while (left > 0) {
    const auto chunk = static_cast<std::streamsize>(std::min<uint64_t>(left, block.size()));
    if (!in.read(block.data(), chunk)) throw InputError(flag + ": " + path.string() + ": cannot be read");
    out_.stream().write(block.data(), chunk);
    left -= static_cast<uint64_t>(chunk);
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

namespace {

std::optional<uint64_t> recorded_seed(const nlohmann::json& object) {
  const nlohmann::json* seed = &object;
  for (const char* key : {"run", "sampling", "seed"}) {
    if (!seed->is_object() || !seed->contains(key)) return std::nullopt;
    seed = &(*seed)[key];
  }
  return seed->is_number_unsigned() ? std::optional(seed->get<uint64_t>()) : std::nullopt;
}

}  // namespace

std::set<Answered> answered_in(const std::string& flag, const std::filesystem::path& path, bool by_seed) {
  std::set<Answered> ids;
  const uint64_t complete = resumable_bytes(flag, path);
  if (complete == 0) return ids;
  LineReader lines(path);
  std::string line;
  while (lines.next(line) && lines.line_offset() < complete) {
    const int64_t number = lines.line_number();
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json object = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    const auto id = object.is_object() ? object.find("question_id") : object.end();
    if (!object.is_object() || id == object.end() || !id->is_number_integer())
      throw InputError(path.string() + ":" + std::to_string(number) + ": field 'question_id': --resume needs an answer line with one");
    ids.insert({id->get<int64_t>(), by_seed ? recorded_seed(object) : std::nullopt});
  }
  return ids;
}

}  // namespace specgate::cli
