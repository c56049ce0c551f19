#pragma once

#include <cstdint>
#include <memory>

#include "impl/decoding/decode_types.h"
#include "impl/decoding/decoder.h"
#include "impl/decoding/decoder_kind.h"
#include "impl/decoding/drafter.h"
#include "impl/decoding/exspec.h"
#include "impl/decoding/tree_drafter.h"
#include "impl/model/transformer.h"

namespace specgate {

struct DecoderSettings {
  DecodeOptions decode;           // its rollback and naive_realign follow the kind
  int64_t batch_size = 8;
  ExspecOptions exspec;           // EXSPEC: window, ordering, aging (its batch_size is batch_size)
  int64_t sequence_capacity = 0;  // EXSPEC: slots of a pool slot, at least cache_capacity() of its requests
};

// The decoder `kind` names, drafting with `drafter` (unused by nonspec-batch, which may pass
// none), which must outlive it. Throws InputError for settings the decoder cannot run.
std::unique_ptr<Decoder> make_decoder(DecoderKind kind, const Transformer& target, Drafter* drafter,
                                      const DecoderSettings& settings);

// The decoder `kind` names verifying the token trees `drafter` proposes, which must outlive it:
// on EQSPEC's layout or EXSPEC's. settings.decode.draft_tokens and
// settings.sequence_capacity count the drafter's largest tree as K drafts. Throws InputError for
// another kind.
std::unique_ptr<Decoder> make_tree_decoder(DecoderKind kind, const Transformer& target, TreeDrafter& drafter,
                                           const DecoderSettings& settings);

// EXSPEC's counters of `decoder`; none for the other decoders.
ExspecStats exspec_stats_of(const Decoder& decoder);

// Whether `kind` admits the shortest prompts first (EXSPEC with sort_by_prompt_length).
bool admits_shortest_first(DecoderKind kind, const DecoderSettings& settings);

}  // namespace specgate
