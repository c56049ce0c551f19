// The module behind SentencePieceApi: the only code that links libsentencepiece.
#include <sentencepiece_processor.h>

#include "impl/tokenizer/sentencepiece_api.h"

namespace {

using sentencepiece::SentencePieceProcessor;

const SentencePieceProcessor& processor(const void* handle) { return *static_cast<const SentencePieceProcessor*>(handle); }

void* load(const char* model_file, std::string* error) {
  auto* processor = new SentencePieceProcessor();
  const auto status = processor->Load(model_file);
  if (status.ok()) return processor;
  *error = status.ToString();
  delete processor;
  return nullptr;
}

void free_processor(void* handle) { delete static_cast<SentencePieceProcessor*>(handle); }

bool encode(const void* handle, std::string_view text, std::vector<int>* ids, std::string* error) {
  const auto status = processor(handle).Encode(text, ids);
  if (!status.ok()) *error = status.ToString();
  return status.ok();
}

bool decode(const void* handle, const std::vector<int>& ids, std::string* text, std::string* error) {
  const auto status = processor(handle).Decode(ids, text);
  if (!status.ok()) *error = status.ToString();
  return status.ok();
}

constexpr specgate::SentencePieceApi kApi = {
    load,
    free_processor,
    encode,
    decode,
    [](const void* handle) { return processor(handle).GetPieceSize(); },
    [](const void* handle, std::string_view piece) { return processor(handle).PieceToId(piece); },
    [](const void* handle, int id) { return processor(handle).IdToPiece(id); },
    [](const void* handle) { return processor(handle).bos_id(); },
    [](const void* handle) { return processor(handle).eos_id(); },
    [](const void* handle) { return processor(handle).pad_id(); },
};

}  // namespace

extern "C" const specgate::SentencePieceApi* specgate_sentencepiece_api() { return &kApi; }
