#include "impl/tokenizer/sentencepiece_tokenizer.h"

#include <dlfcn.h>

#include <stdexcept>

#include "impl/common/error.h"
#include "impl/common/utf8.h"
#include "impl/tokenizer/sentencepiece_api.h"

namespace specgate {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerBuild = true;
#elif defined(__has_feature)
constexpr bool kSanitizerBuild = __has_feature(address_sanitizer) || __has_feature(thread_sanitizer);
#else
constexpr bool kSanitizerBuild = false;
#endif

// The module that wraps libsentencepiece, loaded once; see sentencepiece_api.h for why.
const SentencePieceApi& sentencepiece() {
  static const SentencePieceApi* api = [] {
    if (kSanitizerBuild)  // the sanitizers' runtime aborts on RTLD_DEEPBIND
      throw std::runtime_error("SentencePiece cannot be loaded in a sanitizer build (it needs RTLD_DEEPBIND)");
    void* module = dlopen(SPECGATE_SENTENCEPIECE_MODULE, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (module == nullptr) throw std::runtime_error(std::string("cannot load SentencePiece: ") + dlerror());
    const auto entry = reinterpret_cast<const SentencePieceApi* (*)()>(dlsym(module, "specgate_sentencepiece_api"));
    if (entry == nullptr) throw std::runtime_error(std::string("cannot load SentencePiece: ") + dlerror());
    return entry();
  }();
  return *api;
}

std::optional<int64_t> enabled(int id) { return id >= 0 ? std::optional<int64_t>(id) : std::nullopt; }

}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer(const std::filesystem::path& model_file) : api_(&sentencepiece()) {
  std::string error;
  processor_ = api_->load(model_file.string().c_str(), &error);
  if (processor_ == nullptr) throw InputError(model_file.string() + ": not a SentencePiece model (" + error + ")");
  special_ = {enabled(api_->bos_id(processor_)), enabled(api_->eos_id(processor_)), enabled(api_->pad_id(processor_))};
}

SentencePieceTokenizer::~SentencePieceTokenizer() { api_->free(processor_); }

std::vector<int64_t> SentencePieceTokenizer::encode(std::string_view text) const {
  if (const std::optional<size_t> invalid = find_invalid_utf8(text))
    throw InputError("text to encode is not valid UTF-8 at byte " + std::to_string(*invalid));
  std::vector<int> ids;
  std::string error;
  if (!api_->encode(processor_, text, &ids, &error)) throw std::runtime_error("SentencePiece encode: " + error);
  return {ids.begin(), ids.end()};
}

std::string SentencePieceTokenizer::decode(std::span<const int64_t> ids) const {
  std::vector<int> known;
  for (int64_t id : ids)
    if (id >= 0 && id < vocab_size()) known.push_back(static_cast<int>(id));
  std::string text, error;
  if (!api_->decode(processor_, known, &text, &error)) throw std::runtime_error("SentencePiece decode: " + error);
  return text;
}

int64_t SentencePieceTokenizer::vocab_size() const { return api_->piece_size(processor_); }

std::optional<int64_t> SentencePieceTokenizer::token_id(std::string_view token) const {
  const int id = api_->piece_to_id(processor_, token);
  if (api_->id_to_piece(processor_, id) != token) return std::nullopt;
  return id;
}

}  // namespace specgate
