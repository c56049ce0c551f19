#pragma once

#include <string>
#include <string_view>
#include <vector>

// The SentencePiece library bundles its own Protocol Buffers runtime (3.14), which clashes with
// the one libtorch loads (3.21) when both sit in one process's global symbol scope. So it is
// reached only through this table, exported by the module specgate_sentencepiece, which
// SentencePieceTokenizer loads with local, deep binding.
namespace specgate {

struct SentencePieceApi {
  // A processor for `model_file`, or null with the reason in `error`.
  void* (*load)(const char* model_file, std::string* error);
  void (*free)(void* processor);
  bool (*encode)(const void* processor, std::string_view text, std::vector<int>* ids, std::string* error);
  bool (*decode)(const void* processor, const std::vector<int>& ids, std::string* text, std::string* error);
  int (*piece_size)(const void* processor);
  int (*piece_to_id)(const void* processor, std::string_view piece);  // unk id when absent
  std::string (*id_to_piece)(const void* processor, int id);
  int (*bos_id)(const void* processor);  // -1 where the model has none
  int (*eos_id)(const void* processor);
  int (*pad_id)(const void* processor);
};

}  // namespace specgate

extern "C" const specgate::SentencePieceApi* specgate_sentencepiece_api();
