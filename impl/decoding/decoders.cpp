#include "impl/decoding/decoders.h"

#include <c10/util/Exception.h>

#include "impl/common/error.h"
#include "impl/decoding/eqspec.h"

namespace specgate {

std::unique_ptr<Decoder> make_decoder(DecoderKind kind, const Transformer& target, Drafter* drafter,
                                      const DecoderSettings& settings) {
  DecodeOptions decode = settings.decode;
  decode.rollback = kind == DecoderKind::kRollback;
  decode.naive_realign = kind == DecoderKind::kNaiveRealign;
  if (kind == DecoderKind::kNonspecBatch) return make_nonspec_batch_decoder(target, decode, settings.batch_size);
  TORCH_CHECK(drafter != nullptr, "make_decoder: a speculative decoder needs a drafter");
  if (!is_exspec(kind)) return std::make_unique<EqspecDecoder>(target, *drafter, decode, settings.batch_size);
  ExspecOptions exspec = settings.exspec;
  exspec.batch_size = settings.batch_size;
  return std::make_unique<ExspecDecoder>(target, *drafter, decode, exspec, settings.sequence_capacity);
}

std::unique_ptr<Decoder> make_tree_decoder(DecoderKind kind, const Transformer& target, TreeDrafter& drafter,
                                           const DecoderSettings& settings) {
  if (kind == DecoderKind::kEqspec) return std::make_unique<EqspecDecoder>(target, drafter, settings.decode, settings.batch_size);
  if (!is_exspec(kind)) throw InputError("trees are verified by eqspec, exspec and exspec-aging only");
  ExspecOptions exspec = settings.exspec;
  exspec.batch_size = settings.batch_size;
  return std::make_unique<ExspecDecoder>(target, drafter, settings.decode, exspec, settings.sequence_capacity);
}

ExspecStats exspec_stats_of(const Decoder& decoder) {
  const auto* exspec = dynamic_cast<const ExspecDecoder*>(&decoder);
  return exspec != nullptr ? exspec->exspec_stats() : ExspecStats();
}

bool admits_shortest_first(DecoderKind kind, const DecoderSettings& settings) {
  return is_exspec(kind) && settings.exspec.sort_by_prompt_length;
}

}  // namespace specgate
